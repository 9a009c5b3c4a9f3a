#!/usr/bin/env python3
"""The Python package's costs, side by side and interleaved (docs/python.md):

1. per-call overhead of clgraph.Session.run (and run_into) against
   onnxruntime.InferenceSession.run on the same small .onnx (a 16-wide
   MatMul + Add + Relu on one row: the run is almost all overhead), the same
   thread count, median microseconds per call over --calls calls, --rounds
   rounds alternating the two;
2. clgraph.Translator.translate_batch against `clgraph translate` (a fresh
   process: load included, so its load is also timed separately in Python)
   on the same --lines generated dates (models/dates), median of --rounds.

    PYTHONPATH=build/python python3 tools/py/bench/python_overhead.py [--build build]

Prints a Markdown table and the machine's load average.
"""
import argparse
import datetime
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def small_onnx(path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    g = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], [w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def per_call_us(fn, calls):
    for _ in range(50):
        fn()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def overhead(args):
    import onnxruntime as ort
    import clgraph
    path = os.path.join(tempfile.mkdtemp(), "small.onnx")
    small_onnx(path)
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    s = clgraph.Session(path, threads=args.threads)
    x = np.random.default_rng(1).standard_normal((1, 16)).astype(np.float32)
    y = np.empty((1, 16), np.float32)
    np.testing.assert_allclose(s.run(None, {"x": x})[0], ref.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)
    cases = {"onnxruntime InferenceSession.run": lambda: ref.run(None, {"x": x}),
             "clgraph Session.run": lambda: s.run(None, {"x": x}),
             "clgraph Session.run_into": lambda: s.run_into({"y": y}, {"x": x})}
    times = {k: [] for k in cases}
    for _ in range(args.rounds):
        for k, fn in cases.items():
            times[k].append(per_call_us(fn, args.calls))
    return {k: (statistics.median(v), min(v), max(v)) for k, v in times.items()}


def date_lines(n, seed=5):
    r = random.Random(seed)
    forms = ["%B %d, %Y", "%d %b %Y", "%Y-%m-%d", "%d/%m/%Y", "%A, %B %d %Y", "%b. %d %Y", "the %dth of %B %Y"]
    return [(datetime.date(1950, 1, 1) + datetime.timedelta(days=r.randrange(40000))).strftime(r.choice(forms))
            for _ in range(n)]


def translation(args):
    import clgraph
    model = os.path.join(ROOT, "models", "dates")
    cli = os.path.join(ROOT, args.build, "tools", "clgraph")
    lines = date_lines(args.lines)
    text = "\n".join(lines) + "\n"
    env = dict(os.environ, CLGRAPH_THREADS=str(args.threads))
    rows = {"clgraph translate (process, load included)": [], "Translator load": [],
            "Translator.translate_batch": []}
    outputs = None
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        out = subprocess.run([cli, "translate", model], input=text, capture_output=True, text=True, env=env,
                             check=True).stdout.splitlines()
        rows["clgraph translate (process, load included)"].append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        tr = clgraph.Translator(model, intra_threads=args.threads)
        rows["Translator load"].append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        res = tr.translate_batch(lines)
        rows["Translator.translate_batch"].append((time.perf_counter() - t0) * 1e3)
        outputs = ([r.hypotheses[0] for r in res], out)
    if outputs[0] != outputs[1]:
        sys.exit("translations differ between the CLI and Translator")
    return {k: (statistics.median(v), min(v), max(v)) for k, v in rows.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lines", type=int, default=2000)
    args = ap.parse_args()
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}; {args.threads} threads")
    print("\n| per call, 1x16 MatMul+Add+Relu | median us | min-max |\n|---|---|---|")
    for k, (med, lo, hi) in overhead(args).items():
        print(f"| {k} | {med:.1f} | {lo:.1f}-{hi:.1f} |")
    print(f"\n| dates model, {args.lines} lines | median ms | min-max |\n|---|---|---|")
    for k, (med, lo, hi) in translation(args).items():
        print(f"| {k} | {med:.1f} | {lo:.1f}-{hi:.1f} |")
    print(f"\nload average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
