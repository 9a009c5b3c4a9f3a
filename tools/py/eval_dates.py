#!/usr/bin/python3
"""Evaluates the date normaliser (models/dates) on held-out dates.

    # the reference implementation on the committed held-out file
    /usr/bin/python3 tools/py/eval_dates.py --model models/dates
    # any translator's output, one line per line of the tsv (e.g. clgraph):
    cut -f1 tests/data/dates_heldout.tsv | clgraph translate models/dates > /tmp/hyp.txt
    /usr/bin/python3 tools/py/eval_dates.py --hyp /tmp/hyp.txt
    # or let the script run the command (sources on its stdin):
    /usr/bin/python3 tools/py/eval_dates.py --cmd "build/tools/clgraph/clgraph translate models/dates"
    # a larger fresh held-out sample with the reference (per-format report)
    /usr/bin/python3 tools/py/eval_dates.py --model models/dates --fresh 3300
    # beam against greedy on 20,000 fresh dates (issue 15: beam 4 >= greedy)
    /usr/bin/python3 tools/py/eval_dates.py --fresh 20000 --cmd "clgraph translate models/dates --beam 4"
    # rewrite tests/data/dates_heldout.tsv (deterministic)
    /usr/bin/python3 tools/py/eval_dates.py --write-tsv

The tsv is "source<TAB>target" per line, UTF-8, sources drawn only from dates
that training never saw (train_dates.is_heldout), 45 per format with title,
lower and upper case in turn for the formats that have letters.  Exit status
1 when the accuracy is below --min (default 0.99).
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_dates as T  # noqa: E402

TSV = "tests/data/dates_heldout.tsv"
TSV_PER_FORMAT = 45
TSV_SEED = 20261122

PATTERNS = [
    ("YYYY-MM-DD", r"\d{4}-\d\d-\d\d"),
    ("YYYY.MM.DD", r"\d{4}\.\d\d\.\d\d"),
    ("DD/MM/YYYY", r"\d{1,2}/\d{1,2}/\d{4}"),
    ("the Dth of Month YYYY", r"the \d+(st|nd|rd|th) of [a-z]+ \d{4}"),
    ("Weekday, Month D, YYYY", r"[a-z]+, [a-z]+ \d+, \d{4}"),
    ("Month D, YYYY", r"[a-z]+ \d+, \d{4}"),
    ("wd D mon YYYY", r"[a-z]{3} \d+ [a-z]{3} \d{4}"),
    ("Mon D YYYY", r"[a-z]{3} \d+ \d{4}"),
    ("D mon. YYYY", r"\d+ [a-z]{3}\. \d{4}"),
    ("D MON YYYY", r"\d+ [a-z]{3} \d{4}"),  # "22 May 2026" lands here too
    ("D Month YYYY", r"\d+ [a-z]+ \d{4}"),
]


def classify(src):
    s = src.lower()
    for name, pat in PATTERNS:
        if re.fullmatch(pat, s):
            return name
    return "other"


def read_tsv(path):
    rows = []
    with open(path, encoding="utf-8", newline="") as f:
        for ln in f.read().split("\n"):
            if ln:
                s, t = ln.split("\t")
                rows.append((s, t))
    return rows


def write_tsv(path):
    data = T.heldout_set(TSV_PER_FORMAT * len(T.FORMAT_NAMES), TSV_SEED)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        for s, t, _f, _c in data:
            f.write("%s\t%s\n" % (s, t))
    print("wrote %s (%d lines)" % (path, len(data)))


def reference_outputs(model_dir, sources):
    import s2s_ref
    ld = s2s_ref.load_model_dir(model_dir)
    srcs = [ld.tokenize(s) for s in sources]
    out = []
    for i in range(0, len(srcs), 500):
        for r in s2s_ref.greedy_batch(ld.model, srcs[i:i + 500]):
            out.append(ld.detokenize(r["tokens"]) if r["ended"] else ld.detokenize(r["tokens"]) + "<no eos>")
    return out


def report(rows, hyps, show=20):
    if len(hyps) != len(rows):
        sys.exit("%d outputs for %d sources" % (len(hyps), len(rows)))
    per = {}
    wrong = []
    for (s, t), h in zip(rows, hyps):
        f = classify(s)
        a, n = per.get(f, (0, 0))
        per[f] = (a + (h == t), n + 1)
        if h != t:
            wrong.append((s, t, h))
    ok = sum(a for a, n in per.values())
    for f in [n for n, _ in PATTERNS] + ["other"]:
        if f in per:
            a, n = per[f]
            print("  %-24s %4d/%-4d %.4f" % (f, a, n, a / n))
    for s, t, h in wrong[:show]:
        print("  wrong: %r -> %r (want %r)" % (s, h, t))
    acc = ok / len(rows)
    print("exact match %d/%d = %.4f" % (ok, len(rows), acc))
    return acc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tsv", default=TSV)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--model", help="model directory, decoded greedily with tools/py/s2s_ref.py")
    g.add_argument("--hyp", help="file with one output line per tsv line")
    g.add_argument("--cmd", help="command that reads the sources on stdin and writes one line each")
    g.add_argument("--write-tsv", action="store_true", help="(re)write the held-out tsv")
    ap.add_argument("--fresh", type=int, default=0,
                    help="evaluate N fresh held-out examples (seeded, the same N every time) instead of the tsv")
    ap.add_argument("--min", type=float, default=0.99)
    args = ap.parse_args()
    if args.write_tsv:
        write_tsv(args.tsv)
        return
    if args.fresh:
        rows = [(s, t) for s, t, _f, _c in T.heldout_set(args.fresh, 12345)]
    else:
        rows = read_tsv(args.tsv)
    sources = [s for s, _ in rows]
    if args.model:
        import torch
        torch.set_num_threads(1)
        hyps = reference_outputs(args.model, sources)
    elif args.hyp:
        with open(args.hyp, encoding="utf-8", newline="") as f:
            hyps = [h[:-1] if h.endswith("\r") else h for h in f.read().split("\n")]
        if hyps and hyps[-1] == "":
            hyps.pop()
    elif args.cmd:
        p = subprocess.run(shlex.split(args.cmd), input="".join(s + "\n" for s in sources).encode(),
                           stdout=subprocess.PIPE, check=True)
        hyps = p.stdout.decode("utf-8").split("\n")
        if hyps and hyps[-1] == "":
            hyps.pop()
    else:
        sys.exit("give --model, --hyp, --cmd or --write-tsv")
    acc = report(rows, hyps)
    sys.exit(0 if acc >= args.min else 1)


if __name__ == "__main__":
    main()
