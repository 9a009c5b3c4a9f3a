#!/usr/bin/env python3
"""Imported ONNX graphs against their peers, interleaved in one run (the
rows of docs/performance.md, "Imported ONNX models"):

  1. the seq2seq spec's decoder step exported by tools/py/s2s_export_onnx.py
     from the medium benchmark model, imported by clgraph, against the
     native builder's step (graph decoder_logp of `clgraph s2s-graph`) on
     the same device, batch 1 and 64, source length 20;
  2. the nn.Transformer encoder and decoder of tests/data/onnx/models
     (tools/py/transformer_ref.py) in clgraph and in ONNX Runtime (fp32,
     2 intra-op threads, spinning off) on the same file, batch 1 and 16,
     source length 16, target prefix 8.

clgraph's times are `clgraph run --repeat N` medians (warm runs, outputs
written in place); ONNX Runtime's are medians of N session.run calls. Each
round runs every contender once, in turn, so noise falls on all alike; the
table gives the median over rounds. Needs numpy, torch and onnxruntime.

    python3 tools/py/bench/onnx_bench.py [--build build] [--rounds 5] [--runs 100]
        [--devices cpu,opencl:0] [--workdir DIR] [--write-doc]"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
DOC = os.path.join(ROOT, "docs", "performance.md")
BEGIN, END = "<!-- onnx_bench begin -->", "<!-- onnx_bench end -->"


def clgraph_median(clgraph, model, inputs, device, runs, graph=None, weights=None):
    args = [clgraph, "run", model, "--device", device, "--repeat", str(runs)]
    if graph:
        args += ["--graph", graph]
    if weights:
        args += ["--weights", weights]
    for k, path in inputs.items():
        args += ["--input", f"{k}={path}"]
    r = subprocess.run(args, capture_output=True, text=True)
    m = re.search(r"median ([0-9.]+) ms", r.stderr)
    if r.returncode or not m:
        sys.exit("clgraph run failed: %s\n%s" % (" ".join(args), r.stderr[-2000:]))
    return float(m.group(1))


class Ort:
    def __init__(self, path, feed):
        import onnxruntime as ort
        o = ort.SessionOptions()
        o.intra_op_num_threads = 2
        o.inter_op_num_threads = 1
        o.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.s = ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])
        self.feed = feed
        for _ in range(5):
            self.s.run(None, feed)

    def median(self, runs):
        t = []
        for _ in range(runs):
            a = time.perf_counter()
            self.s.run(None, self.feed)
            t.append(time.perf_counter() - a)
        return float(np.median(t)) * 1e3


def save_inputs(d, feed):
    os.makedirs(d, exist_ok=True)
    paths = {}
    for k, v in feed.items():
        paths[k] = os.path.join(d, k + ".npy")
        np.save(paths[k], v)
    return paths


def s2s_setup(work, clgraph, py):
    model = os.path.join(work, "medium")
    if not os.path.exists(os.path.join(model, "weights.safetensors")):
        subprocess.run([py, os.path.join(HERE, "make_bench_model.py"), "medium", model], check=True,
                       stdout=subprocess.DEVNULL)
    onnx_dir = os.path.join(work, "medium_onnx")
    if not os.path.exists(os.path.join(onnx_dir, "decoder.onnx")):
        subprocess.run([py, os.path.join(ROOT, "tools", "py", "s2s_export_onnx.py"), model, onnx_dir], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cg = os.path.join(work, "medium.cg")
    with open(cg, "w") as f:
        subprocess.run([clgraph, "s2s-graph", model], check=True, stdout=f)
    cfg = json.load(open(os.path.join(model, "config.json")))
    H, A, K = cfg["hidden"], cfg["attention_dim"], cfg["hidden"] * 2
    rng = np.random.default_rng(0)
    cases = {}
    for B in (1, 64):
        S = 20
        keys = (rng.standard_normal((B, S, K)) * 0.5).astype(np.float32)
        kp = (rng.standard_normal((B, S, A)) * 0.5).astype(np.float32)
        h = (rng.standard_normal((1, B, H)) * 0.5).astype(np.float32)
        y = rng.integers(4, 8000, B)
        sl = rng.integers(S // 2, S + 1, B)
        iota = np.arange(B, dtype=np.int32)
        native = save_inputs(os.path.join(work, f"s2s_native_{B}"),
                             {"y_prev": y.astype(np.int32), "keys": keys, "keys_proj": kp,
                              "src_len": sl.astype(np.int32), "sentence": iota, "parent": iota, "h0": h[0]})
        onnx = save_inputs(os.path.join(work, f"s2s_onnx_{B}"),
                           {"y_prev": y.astype(np.int64), "h": h, "keys": keys, "keys_proj": kp,
                            "src_len": sl.astype(np.int64)})
        cases[B] = (native, onnx)
    return cg, os.path.join(model, "weights.safetensors"), os.path.join(onnx_dir, "decoder.onnx"), cases


def tf_setup(work):
    rng = np.random.default_rng(1)
    models = os.path.join(ROOT, "tests", "data", "onnx", "models")
    cases = {}
    for B in (1, 16):
        S, T = 16, 8
        pad = np.zeros((B, S), bool)
        pad[B // 2:, S - 4:] = True
        enc = {"src": rng.integers(3, 16, (B, S)), "src_pad": pad}
        dec = {"tgt": rng.integers(3, 16, (B, T)), "memory": rng.standard_normal((B, S, 64)).astype(np.float32),
               "src_pad": pad}
        for name, feed in (("encoder", enc), ("decoder", dec)):
            path = os.path.join(models, f"transformer_{name}", "model.onnx")
            cases[(name, B)] = (path, feed, save_inputs(os.path.join(work, f"tf_{name}_{B}"), feed))
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--devices", default=None, help="default: cpu and opencl:0 where there is one")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "clgraph-onnx-bench"))
    ap.add_argument("--write-doc", action="store_true")
    a = ap.parse_args()
    clgraph = os.path.join(a.build, "tools", "clgraph")
    os.makedirs(a.workdir, exist_ok=True)
    devs = a.devices.split(",") if a.devices else ["cpu"] + (
        ["opencl:0"] if "opencl:0" in subprocess.run([clgraph, "devices"], capture_output=True, text=True).stdout
        else [])
    load0 = os.getloadavg()
    cg, weights, dec_onnx, s2s = s2s_setup(a.workdir, clgraph, sys.executable)
    tf = tf_setup(a.workdir)
    orts = {k: Ort(path, feed) for k, (path, feed, _) in tf.items()}
    res = {}
    for r in range(a.rounds):
        for dev in devs:
            for B, (native, onnx) in s2s.items():
                res.setdefault(("s2s native", dev, B), []).append(
                    clgraph_median(clgraph, cg, native, dev, a.runs, graph="decoder_logp", weights=weights))
                res.setdefault(("s2s onnx", dev, B), []).append(clgraph_median(clgraph, dec_onnx, onnx, dev, a.runs))
            for (name, B), (path, _, files) in tf.items():
                res.setdefault((name, dev, B), []).append(clgraph_median(clgraph, path, files, dev, a.runs))
        for k, o in orts.items():
            res.setdefault((k[0], "ort", k[1]), []).append(o.median(a.runs))
        print("round %d of %d done" % (r + 1, a.rounds), file=sys.stderr)
    load1 = os.getloadavg()
    med = {k: float(np.median(v)) for k, v in res.items()}
    import onnxruntime
    lines = ["Imported seq2seq decoder step (medium model, source length 20) against the native "
             "builder's step, ms per step:", "",
             "| device | batch | native | imported ONNX | imported / native |", "| --- | ---: | ---: | ---: | ---: |"]
    for dev in devs:
        for B in (1, 64):
            n, o = med[("s2s native", dev, B)], med[("s2s onnx", dev, B)]
            lines.append(f"| {dev} | {B} | {n:.3f} | {o:.3f} | {o / n:.2f} |")
    lines += ["", "The nn.Transformer of tests/data/onnx/models (d_model 64, 4 heads, 2 + 2 layers; source "
              "16, target prefix 8) against ONNX Runtime %s (fp32, 2 intra-op threads, spinning off) on the "
              "same files, ms per run:" % onnxruntime.__version__, "",
              "| graph | batch | ONNX Runtime | " + " | ".join("clgraph " + d for d in devs) + " |",
              "| --- | ---: | ---: | " + " | ".join("---:" for _ in devs) + " |"]
    for name in ("encoder", "decoder"):
        for B in (1, 16):
            cells = " | ".join(f"{med[(name, d, B)]:.3f}" for d in devs)
            lines.append(f"| {name} | {B} | {med[(name, 'ort', B)]:.3f} | {cells} |")
    lines += ["", "Medians of %d interleaved rounds of %d runs each; load average %.2f before, %.2f after "
              "(`tools/py/bench/onnx_bench.py`)." % (a.rounds, a.runs, load0[0], load1[0])]
    text = "\n".join(lines)
    print(text)
    if a.write_doc:
        doc = open(DOC, encoding="utf-8").read()
        if BEGIN in doc and END in doc:
            doc = doc[:doc.index(BEGIN) + len(BEGIN)] + "\n" + text + "\n" + doc[doc.index(END):]
        else:
            doc += "\n## Imported ONNX models\n\n" + BEGIN + "\n" + text + "\n" + END + "\n"
        open(DOC, "w", encoding="utf-8").write(doc)
        print("wrote " + DOC, file=sys.stderr)


if __name__ == "__main__":
    main()
