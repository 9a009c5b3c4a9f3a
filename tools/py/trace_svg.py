#!/usr/bin/env python3
"""Draws a clgraph profile (the Chrome trace / Perfetto JSON that
`clgraph run|translate|bench --profile FILE.json` writes) as an SVG
timeline, for documentation where a Perfetto screenshot would go:

    python3 tools/py/trace_svg.py t.json out.svg [--from-run N] [--runs K]

One row per track (host first, then the devices), a box per event coloured
by op (copies grey, waits light), the op's name written inside every box
wide enough for three letters (cut with an ellipsis where the whole name
does not fit; the full name, node and time also on hover), and a time axis in milliseconds. --from-run/--runs pick the runs shown
(the N-th run event on the host track and the K-1 after it; default: all).
Only the standard library is needed.
"""
import argparse
import hashlib
import json
import math
from xml.sax.saxutils import escape


def colour(name):
    h = int(hashlib.md5(name.encode()).hexdigest()[:6], 16)
    hue = h % 360
    return "hsl(%d,55%%,62%%)" % hue


CHAR_W = 5.6  # px per character of the 10 px sans-serif labels, on average


def fit_label(label, width):
    """The box's name as it fits inside it: whole, or cut with an ellipsis
    (at least 3 characters of it), or None for a box too narrow: every box
    wide enough says what it is without hovering over it."""
    room = int((width - 5) / CHAR_W)
    if room >= len(label):
        return label
    if room >= 4:
        return label[:room - 1] + "\u2026"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("svg")
    ap.add_argument("--from-run", type=int, default=0)
    ap.add_argument("--runs", type=int, default=0)
    ap.add_argument("--width", type=int, default=1100)
    a = ap.parse_args()
    d = json.load(open(a.trace))
    names, sort = {}, {}
    events = []
    for e in d["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[e["tid"]] = e["args"]["name"]
        elif e["ph"] == "M" and e["name"] == "thread_sort_index":
            sort[e["tid"]] = e["args"]["sort_index"]
        elif e["ph"] == "X":
            events.append(e)
    runs = sorted((e for e in events if e["cat"] == "run"), key=lambda e: e["ts"])
    t0, t1 = min(e["ts"] for e in events), max(e["ts"] + e["dur"] for e in events)
    if a.runs and runs:
        first = runs[a.from_run]
        last = runs[min(len(runs) - 1, a.from_run + a.runs - 1)]
        t0, t1 = first["ts"], last["ts"] + last["dur"]
    shown = [e for e in events if e["ts"] + e["dur"] >= t0 and e["ts"] <= t1]
    tids = sorted({e["tid"] for e in shown}, key=lambda t: sort.get(t, t))
    left, row_h, top = 110, 34, 30
    W = a.width
    span = max(t1 - t0, 1e-3)
    x = lambda t: left + (t - t0) / span * (W - left - 10)
    H = top + row_h * len(tids) + 40
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="10">' % (W, H), '<rect width="100%" height="100%" fill="white"/>',
           '<text x="6" y="16" font-size="12">%s: %d events, %.2f ms</text>'
           % (escape(a.trace.split("/")[-1]), len(shown), span / 1e3)]
    for r, tid in enumerate(tids):
        y = top + r * row_h
        out.append('<rect x="0" y="%d" width="%d" height="%d" fill="%s"/>' % (y, W, row_h, "#f6f6f6" if r % 2 else "#fff"))
        out.append('<text x="6" y="%d">%s</text>' % (y + row_h / 2 + 4, escape(names.get(tid, str(tid)))))
        # runs under waits under kernels: longer first so shorter ones draw on top
        for e in sorted((e for e in shown if e["tid"] == tid), key=lambda e: -e["dur"]):
            x0, x1 = x(max(e["ts"], t0)), x(min(e["ts"] + e["dur"], t1))
            w = max(x1 - x0, 0.6)
            cat = e["cat"]
            fill = {"run": "#dde6f0", "wait": "#f3e3b5", "copy": "#9a9a9a"}.get(cat) or colour(e["name"])
            inset = 2 if cat == "run" else 6
            title = "%s %s (%s) %.1f us" % (cat, e["name"], e["args"].get("node", ""), e["dur"])
            if "device_us" in e["args"]:
                title += ", %.1f us on the device" % e["args"]["device_us"]
            out.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"><title>%s</title></rect>'
                       % (x0, y + inset, w, row_h - 2 * inset, fill, escape(title)))
            label = fit_label(e["name"] if cat != "run" else "run " + e["name"], w)
            if label:
                out.append('<text x="%.2f" y="%d">%s</text>' % (x0 + 3, y + row_h / 2 + 4, escape(label)))
    ya = top + row_h * len(tids) + 6
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#555"/>' % (left, ya, W - 10, ya))
    raw = span / 1e3 / 8
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    k = 0.0
    while k <= span / 1e3 + 1e-9:
        xx = x(t0 + k * 1e3)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#555"/><text x="%.1f" y="%d" '
                   'text-anchor="middle">%g ms</text>' % (xx, ya, xx, ya + 4, xx, ya + 16, round(k, 6)))
        k += step
    out.append("</svg>")
    open(a.svg, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
