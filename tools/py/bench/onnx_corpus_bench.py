#!/usr/bin/env python3
"""The ONNX corpus of tools/py/onnx_corpus.py timed side by side (issue 32):
clgraph on each device against ONNX Runtime on the same files, the same
inputs and the same thread count, interleaved in one run, with the
machine's load printed; the table of docs/performance.md, "Imported ONNX
models against ONNX Runtime".

    python3 tools/py/bench/onnx_corpus_bench.py OUT_DIR [--filter RE]
        [--devices cpu,opencl:0] [--threads N] [--rounds R] [--repeat K]
        [--table docs/performance.md] [--json FILE] [--exe build/tools/clgraph]

OUT_DIR is a corpus that `tools/py/onnx_corpus.py OUT_DIR` has built and
run (its NAME/corpus.json says on which devices clgraph passes); nothing
is exported or written there. --filter RE times only the models whose
folder name matches.

Per model, on its last data set (test_data_set_1, the larger binding):

- clgraph on each device of --devices where the corpus says it passes:
  `clgraph run NAME/model.onnx --input N=F.npy ... --device D --repeat K`,
  a fresh process (import, plan, one untimed run, K timed warm runs); its
  "fastest" time.
- ONNX Runtime (CPUExecutionProvider, graph optimisations at their default
  ORT_ENABLE_ALL, intra_op_num_threads N, inter_op_num_threads 1) twice:
  `session.intra_op.allow_spinning` "0" and "1". A fresh session each
  round, one untimed run, K timed `run_with_iobinding` calls (inputs and
  outputs bound once, as clgraph's warm runs reuse theirs); the fastest.
  The table's ONNX Runtime column is the better of the two.

N is the clgraph CPU's thread count as `clgraph devices` prints it, or
--threads N (then CLGRAPH_THREADS and OPENBLAS_NUM_THREADS are set to N
for clgraph too). Each of R rounds runs every model in turn, and for each
model clgraph cpu, ONNX Runtime spinning off, spinning on, then the other
devices, so that a change of the machine's load falls on all of them;
a configuration's time is the median over the rounds of its fastest of K.
The load average is printed before and after.

int8: each model's int8 form is ONNX Runtime's
`onnxruntime.quantization.quantize_dynamic(model.onnx, op_types_to_quantize
=["MatMul"], weight_type=QInt8)` (written to a temporary folder, not to
OUT_DIR): DynamicQuantizeLinear, MatMulInteger, Cast and Mul, ONNX's own
ops (the other op types it quantizes become com.microsoft ops, which only
ONNX Runtime runs). Three more configurations, timed as the others:
clgraph cpu on that file ("cpu int8"), and ONNX Runtime on it with
spinning off and on ("ORT int8", the better). A model without a MatMul
has no int8 form (its cells say so).

A model clgraph refuses or fails on keeps its row, with the one-line
reason in its cell; the run goes on. Exit status 0 unless a tool breaks
(no clgraph, a device it does not have, no corpus in OUT_DIR).

Needs numpy, onnx and onnxruntime (the versions of onnx_corpus.py), and a
built clgraph (--exe; build/tools/clgraph by default)."""
import argparse
import datetime
import glob
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import onnx_corpus as C  # noqa: E402
from portability import cpu_name  # noqa: E402

MARK = ("<!-- onnx-corpus-bench -->", "<!-- /onnx-corpus-bench -->")
# the bars: cpu/ORT at most 1.1 on every model, PoCL within 3x of
# clgraph cpu on the Transformer models
SLOW, POCL_BOUND = 1.1, 3.0
TRANSFORMER = re.compile(r"^(marian|bart|t5|bert|gpt2|whisper|transformer)_")
NO_INT8 = "n/a (no int8 form)"
ORT = {"ort spin off": False, "ort spin on": True}
ORT8 = {"ort int8 spin off": False, "ort int8 spin on": True}
INT8 = ["cpu int8"] + list(ORT8)


class Model:
    def __init__(self, d, info, devices):
        self.dir, self.info, self.name = d, info, info["name"]
        self.times = {}  # configuration: [fastest ms of each round]
        self.why = {}  # configuration: why it has no time
        self.feed = None
        if not info.get("sets"):
            self.skip = info.get("export") or info.get("ort") or "no data sets"
            return
        self.skip = None
        res = info.get("result", {}).get("devices", {})
        for dev in devices:
            r = res.get(dev)
            if not r:
                self.why[dev] = "not run by onnx_corpus.py"
            elif r["result"] != "pass":
                self.why[dev] = "%s: %s" % (r["result"], r.get("reason") or "-")

    def configs(self, devices):
        """This model's configurations in a round's order."""
        first = ["cpu"] if "cpu" in devices else []
        return first + list(ORT) + [d for d in devices if d != "cpu"] + (INT8 if "cpu" in devices else [])

    def median(self, cfg):
        t = self.times.get(cfg)
        return statistics.median(t) if t and cfg not in self.why else None


def int8_form(m, tmp):
    """m's int8 form in tmp (quantize_dynamic of its MatMuls), or the reason
    it has none, into every int8 configuration's cell."""
    src = os.path.join(m.dir, "model.onnx")
    if not any(n.op_type == "MatMul" for n in C.onnx.load(src, load_external_data=False).graph.node):
        for c in INT8:
            m.why[c] = NO_INT8 + ": no MatMul"
        return None
    path = os.path.join(tmp, m.name, "model_int8.onnx")
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
        quantize_dynamic(src, path, op_types_to_quantize=["MatMul"], weight_type=QuantType.QInt8)
        domains = {n.domain for n in C.onnx.load(path).graph.node} - {"", "ai.onnx"}
        if domains:
            raise RuntimeError("quantize_dynamic made ops of %s" % ", ".join(sorted(domains)))
    except Exception as e:  # noqa: BLE001 (a model it cannot quantize is a cell)
        for c in INT8:
            m.why[c] = NO_INT8 + ": " + (C.one_line(str(e)) or type(e).__name__)
        return None
    return path


def time_ort(m, spinning, threads, repeat, path=None):
    """Fastest ms of repeat runs of a fresh session: a pool left from an
    earlier session (spinning or not) cannot take cycles from the next
    configuration, and each round pays its session's start as clgraph's
    fresh process does. Inputs and outputs are bound once (IOBinding, the
    outputs of the untimed run as the destination), so a timed run neither
    converts NumPy arrays nor allocates its outputs, as clgraph's warm runs
    write into the outputs of the first: session.run would add about 20 us
    per call here, as much as a tenth of the small models' time."""
    sess = C.ort_session(path or os.path.join(m.dir, "model.onnx"), threads=threads, spinning=spinning)
    outs = sess.run(None, m.feed)
    bind = sess.io_binding()
    # the OrtValues share the arrays' memory: kept until the timing is done
    vals = {n: C.ort.OrtValue.ortvalue_from_numpy(x) for n, x in m.feed.items()}
    outv = {o.name: C.ort.OrtValue.ortvalue_from_numpy(x) for o, x in zip(sess.get_outputs(), outs)}
    for n, v in vals.items():
        bind.bind_ortvalue_input(n, v)
    for n, v in outv.items():
        bind.bind_ortvalue_output(n, v)
    sess.run_with_iobinding(bind)
    best = min(C.ort_ms(lambda: sess.run_with_iobinding(bind), repeat))
    del bind, sess, vals, outv
    return best


def run_round(models, devices, a, threads, env, tmp, r):
    for m in models:
        if m.skip:
            continue
        if m.feed is None:
            m.feed = C.read_sets(m.dir)[-1]
            os.makedirs(os.path.join(tmp, m.name))
            m.args = C.run_args(m.dir, m.feed, os.path.join(tmp, m.name))
            m.int8 = int8_form(m, tmp) if "cpu" in devices else None
            m.args8 = [m.int8 if x == m.args[1] else x for x in m.args] if m.int8 else None
        for cfg in m.configs(devices):
            if cfg in m.why:
                continue
            if cfg in ORT or cfg in ORT8:
                try:
                    ms = time_ort(m, ORT.get(cfg, ORT8.get(cfg)), threads, a.repeat, m.int8 if cfg in ORT8 else None)
                except Exception as e:  # noqa: BLE001 (ONNX Runtime's failure is a cell, not the end)
                    m.why[cfg] = C.one_line(str(e)) or type(e).__name__
                    continue
            else:
                _, ms, why = C.run_repeat(m.args8 if cfg == "cpu int8" else m.args, a.exe, a.repeat,
                                          cfg.replace(" int8", ""), env=env)
                if why:
                    m.why[cfg] = C.short_reason(why)
                    continue
            m.times.setdefault(cfg, []).append(ms)
        print("round %d/%d %-28s %s" % (r + 1, a.rounds, m.name, "  ".join(
            "%s %s" % (c, "%.3g" % m.times[c][-1] if c not in m.why else "-") for c in m.configs(devices))),
            file=sys.stderr, flush=True)


def ratio(x, y):
    return x / y if x is not None and y else None


def best_ort(m, cfgs=ORT):
    """(ms, which) of the better ONNX Runtime configuration."""
    got = [(m.median(c), c) for c in cfgs if m.median(c) is not None]
    return min(got) if got else (None, None)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(x, spec="%.3g"):
    return "-" if x is None else "%.0f" % x if x >= 1000 else spec % x


def cell(m, cfg):
    if cfg in m.why:
        return C.cell(m.why[cfg][:120])
    return fmt(m.median(cfg))


def table(models, devices, meta):
    others = [d for d in devices if d != "cpu"]
    head = ["model", "exporter"] + ["%s ms" % d for d in devices] + ["ORT ms (best of spin off / on)"]
    head += ["cpu / ORT"] if "cpu" in devices else []
    head += ["cpu int8 ms", "ORT int8 ms", "cpu int8 / ORT int8"] if "cpu" in devices else []
    head += ["%s / cpu" % d for d in others if "cpu" in devices]
    rows = ["| " + " | ".join(head) + " |", "| --- | --- |" + " ---: |" * (len(head) - 2)]
    for m in models:
        if m.skip:
            continue
        ort_ms, which = best_ort(m)
        ort_cell = "%s (%s)" % (fmt(ort_ms), which[4:]) if which else C.cell(
            (m.why.get("ort spin off") or m.why.get("ort spin on") or "-")[:120])
        row = [re.sub(r"_(ts|dynamo)$", "", m.name), C.EXPORTER.get(m.info["exporter"], m.info["exporter"])]
        row += [cell(m, d) for d in devices] + [ort_cell]
        if "cpu" in devices:
            row.append(fmt(ratio(m.median("cpu"), ort_ms), "%.2f"))
            o8, w8 = best_ort(m, ORT8)
            o8_cell = "%s (%s)" % (fmt(o8), w8[9:]) if w8 else C.cell(
                (m.why.get("ort int8 spin off") or m.why.get("ort int8 spin on") or "-")[:120])
            row += [cell(m, "cpu int8"), o8_cell, fmt(ratio(m.median("cpu int8"), o8), "%.2f")]
        if "cpu" in devices:
            row += [fmt(ratio(m.median(d), m.median("cpu")), "%.2f") for d in others]
        rows.append("| " + " | ".join(row) + " |")
    return "\n".join(rows + [""] + summary(models, devices, meta))


def ratio_line(what, pairs, bound):
    """A summary line of [(ratio or None, model)]: the geometric mean, the
    worst, and those over bound."""
    pairs = [p for p in pairs if p[0] is not None]
    if not pairs:
        return []
    over = [n for x, n in pairs if x > bound]
    names = " (all)" if over and len(over) == len(pairs) else " (%s)" % ", ".join(over) if over else ""
    worst = max(pairs)
    return ["- %s (%d models): geometric mean %.2f, worst %.2f (%s), %d over %gx%s." % (
        what, len(pairs), geomean([x for x, _ in pairs]), worst[0], worst[1], len(over), bound, names)]


def summary(models, devices, meta):
    timed = [m for m in models if not m.skip]
    lines = ["- %s on %s, %d cores; clgraph %s; ONNX Runtime %s, CPU execution provider, %d intra-op threads "
             "(inter-op 1), graph optimisations at ORT_ENABLE_ALL; clgraph cpu: %d threads. %s." % (
                 meta["date"], meta["cpu"], meta["cores"], meta["clgraph"], meta["onnxruntime"], meta["threads"],
                 meta["threads"], "; ".join("%s: %s" % kv for kv in meta["devices"].items())),
             "- Load average (1, 5, 15 min) %s before, %s after; %d rounds of %d warm runs, interleaved, the "
             "median over rounds of each configuration's fastest run; %.0f s in all." % (
                 meta["load_before"], meta["load_after"], meta["rounds"], meta["repeat"], meta["seconds"])]
    if "cpu" in devices:
        lines += ratio_line("cpu / ORT", [(ratio(m.median("cpu"), best_ort(m)[0]), m.name) for m in timed], SLOW)
        for d in devices:
            if d != "cpu":
                lines += ratio_line("%s / cpu on the Transformer models" % d, [
                    (ratio(m.median(d), m.median("cpu")), m.name) for m in timed if TRANSFORMER.match(m.name)],
                    POCL_BOUND)
    spins = [best_ort(m)[1] for m in timed if best_ort(m)[1]]
    if spins:
        lines.append("- ONNX Runtime's better setting: spinning off on %d models, on on %d." % (
            spins.count("ort spin off"), spins.count("ort spin on")))
    if "cpu" in devices:
        lines += ratio_line("cpu int8 / ORT int8", [(ratio(m.median("cpu int8"), best_ort(m, ORT8)[0]), m.name)
                                                     for m in timed], SLOW)
    lines.append("- int8: each model's MatMuls through ONNX Runtime's `quantize_dynamic` (QInt8 weights; "
                 "DynamicQuantizeLinear, MatMulInteger), one file for both. Their results differ: clgraph's "
                 "MatMulInteger is exact, as ONNX defines it; ONNX Runtime's u8 x s8 kernels here saturate "
                 "pairs of products to int16 (docs/performance.md, below the table).")
    skipped = ["%s (%s)" % (m.name, C.cell(re.split(r":| \(", m.skip)[0])) for m in models if m.skip]
    if skipped:
        lines.append("- Not timed, no data sets in the corpus: %s." % ", ".join(skipped))
    return lines


def device_name(lines):
    """An OpenCL device's name and its platform's (PoCL's device name is the
    CPU's: the platform says which driver it is)."""
    plat = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("platform:")), "")
    return lines[0] + (" (%s)" % re.sub(r"\s*\(.*", "", plat) if plat else "")


def clgraph_version(exe):
    rc, out, err = C.clgraph(["--version"], exe)
    ver = (out.strip().splitlines() or ["?"])[0].replace("clgraph ", "")
    try:
        commit = subprocess.run(["git", "-C", C.ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = ""
    return ver + (", commit %s" % commit if commit else "")


def load_models(out_dir, flt, devices):
    models = []
    for j in glob.glob(os.path.join(out_dir, "*", "corpus.json")):
        d = os.path.dirname(j)
        if flt and not re.search(flt, os.path.basename(d)):
            continue
        with open(j) as f:
            info = json.load(f)
        models.append(Model(d, info, devices))
    models.sort(key=lambda m: C.corpus_order(m.info))
    return models


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", help="a corpus built and run by tools/py/onnx_corpus.py")
    ap.add_argument("--filter", metavar="RE", help="time only the models whose folder name matches")
    ap.add_argument("--devices", default="cpu,opencl:0", help="comma-separated clgraph devices (cpu,opencl:0)")
    ap.add_argument("--threads", type=int, help="threads of clgraph's CPU and of ONNX Runtime (default: the "
                    "clgraph CPU's, from `clgraph devices`)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (3)")
    ap.add_argument("--repeat", type=int, default=10, help="warm runs per configuration and round (10)")
    ap.add_argument("--table", metavar="FILE", help="write the table into FILE between %s and %s" % MARK)
    ap.add_argument("--json", metavar="FILE", help="write the raw times")
    ap.add_argument("--exe", "--clgraph", default=os.path.join(C.ROOT, "build", "tools", "clgraph"),
                    help="the clgraph binary (build/tools/clgraph)")
    a = ap.parse_args()
    devices = [d for d in a.devices.split(",") if d]
    if a.rounds < 1 or a.repeat < 1:
        sys.exit("onnx_corpus_bench.py: --rounds and --repeat must be at least 1")
    if not os.access(a.exe, os.X_OK):
        sys.exit("onnx_corpus_bench.py: %s is not an executable (build first, or give --exe)" % a.exe)
    env = None
    if a.threads:
        env = dict(os.environ, CLGRAPH_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads))
    have = C.check_devices(a.exe, devices, env=env, who="onnx_corpus_bench.py")
    m = re.search(r"(\d+) threads", have["cpu"][0] if "cpu" in have else "")
    threads = a.threads or (int(m.group(1)) if m else os.cpu_count())
    models = load_models(a.out_dir, a.filter, devices)
    if not models:
        sys.exit("onnx_corpus_bench.py: no corpus.json under %s%s" % (
            a.out_dir, " matching %s" % a.filter if a.filter else ""))
    meta = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "cpu": cpu_name(), "cores": os.cpu_count(),
            "threads": threads, "clgraph": clgraph_version(a.exe), "onnxruntime": C.ort.__version__,
            "devices": {d: device_name(have[d]) for d in devices if d != "cpu"}, "rounds": a.rounds,
            "repeat": a.repeat, "load_before": "%.2f %.2f %.2f" % os.getloadavg()}
    print("%s, %d cores; clgraph cpu and ONNX Runtime: %d threads; load average %s" % (
        meta["cpu"], meta["cores"], threads, meta["load_before"]), file=sys.stderr, flush=True)
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            run_round(models, devices, a, threads, env, tmp, r)
    meta["seconds"] = time.time() - t0
    meta["load_after"] = "%.2f %.2f %.2f" % os.getloadavg()
    print("load average after: %s" % meta["load_after"], file=sys.stderr)
    text = table(models, devices, meta)
    print(text)
    if a.table:
        C.write_table(a.table, text, *MARK, who="onnx_corpus_bench.py")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "models": [
                {"name": m.name, "family": m.info["family"], "exporter": m.info["exporter"], "skip": m.skip,
                 "fastest_ms_per_round": m.times, "median_ms": {c: m.median(c) for c in m.times}, "why": m.why}
                for m in models]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
