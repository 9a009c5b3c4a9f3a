#!/usr/bin/env python3
"""Forecasting speed: clgraph against the PyTorch reference on the same weights
(issue 16; docs/performance.md).

    python3 tools/py/bench/forecast_bench.py [--build BUILD_DIR] [--series 1000]
        [--history 512] [--horizon 24] [--device cpu] [--runs 3] [--json OUT]

A random model (LSTM, hidden 64, general attention over 64 states, 4
channels; --config to change it) forecasts S series of T history steps, N
steps ahead: `clgraph forecast` with the CSV on stdin (wall time of the
whole command, CSV parsing and writing included, and the forecast alone as
the command's own --batch run reports it is not separable: the whole is
what a user waits for), and PyTorch running the spec's steps vectorised over
the batch (torch_steps below: the window as one tensor pushed each step,
as clgraph's graph does; torch.inference_mode; as many threads as
clgraph's pool, one per online CPU), both in float32. Runs alternate
(clgraph, torch, clgraph, ...) and the median of each is reported, with the
machine's load before and after. The two forecasts are compared too.
"""
import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import forecast_ref as R  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def torch_steps(m, X, teach):
    """The spec's steps as a PyTorch user would write them for speed: the
    window is a [B, W, H] tensor, newest first, pushed each step (as
    clgraph's graph does); checked against forecast_ref.run_steps."""
    c = m.c
    B, S, C = X.shape
    H, W, kind, L = c["hidden"], c["window"], c["attention"], c["layers"]
    z = X.new_zeros(L, B, H)
    state = (z, z.clone()) if c["cell"] == "lstm" else z
    ring = X.new_zeros(B, W, H)
    u = X.new_zeros(B, H)
    ys, y = [], None
    Wg = m.attention.W if kind == "general" else None
    for t in range(1, S + 1):
        x = X[:, t - 1] if t <= teach else y
        ctx = None
        if kind != "none":
            n = min(W, max(0, t - 2))
            if n:
                V = ring[:, :n]
                q = Wg(u) if kind == "general" else u
                if kind == "additive":
                    a = m.attention
                    e = torch.tanh(a.W_q(u)[:, None, :] + a.W_k(V)) @ a.v.weight[0]
                else:
                    e = torch.bmm(V, q[:, :, None])[:, :, 0]
                    if kind == "scaled_dot":
                        e = e / H ** 0.5
                ctx = torch.bmm(torch.softmax(e, 1)[:, None, :], V)[:, 0]
            else:
                ctx = X.new_zeros(B, H)
            x = torch.cat([x, ctx], 1)
        o, state = m.rnn(x[:, None, :], state)
        h = o[:, 0]
        y = m.out(h if kind == "none" else torch.cat([h, ctx], 1))
        ys.append(y)
        if kind != "none":
            ring = torch.cat([u[:, None], ring[:, :W - 1]], 1)
        u = h
    return torch.stack(ys, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--series", type=int, default=1000)
    ap.add_argument("--history", type=int, default=512)
    ap.add_argument("--horizon", type=int, default=24)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch", type=int, default=0, help="clgraph --batch (0: all series in one batch)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--config", default='{"cell": "lstm", "hidden": 64, "attention": "general", "window": 64}')
    ap.add_argument("--json")
    a = ap.parse_args()
    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)
    cfg = dict(task="forecast", columns=["a", "b", "c", "d"], **json.loads(a.config))
    c, m = R.random_model(cfg, 7, 1.0)
    m.eval()
    rng = np.random.default_rng(3)
    S, T, N, C = a.series, a.history, a.horizon, len(cfg["columns"])
    t = np.arange(T)[None, :, None]
    raw = (np.sin(0.1 * t + rng.uniform(0, 6, size=(S, 1, C))) + 0.2 * rng.normal(size=(S, T, C))).astype(np.float32)
    exe = os.path.join(a.build, "tools", "clgraph")
    batch = a.batch or S
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        R.save(tmp, cfg, m)
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["series"] + cfg["columns"])
        for s in range(S):
            for k in range(T):
                w.writerow(["s%d" % s] + ["%.9g" % v for v in raw[s, k]])
        path = os.path.join(tmp, "in.csv")
        with open(path, "w") as f:
            f.write(buf.getvalue())
        X = torch.tensor(raw)
        X = torch.cat([X, X.new_zeros(S, N - 1, C)], 1)
        times_cg, times_pt, out_cg, out_pt = [], [], None, None
        for r in range(a.runs):
            t0 = time.perf_counter()
            with open(path) as f:
                p = subprocess.run([exe, "forecast", tmp, "--horizon", str(N), "--device", a.device, "--batch",
                                    str(batch)], stdin=f, capture_output=True, text=True)
            times_cg.append(time.perf_counter() - t0)
            if p.returncode:
                sys.exit("clgraph forecast failed: " + p.stderr)
            out_cg = p.stdout
            t0 = time.perf_counter()
            with torch.inference_mode():
                pred = torch_steps(m, X, T)
            times_pt.append(time.perf_counter() - t0)
            out_pt = pred[:, T - 1:].numpy() * np.array(c["std"], dtype=np.float32) + np.array(c["mean"], dtype=np.float32)
    load1 = os.getloadavg()
    with torch.no_grad():  # the fast loop is the reference's steps
        k = min(S, 8)
        ref = R.run_steps(m, X[:k], T)
        assert torch.allclose(ref, pred[:k], rtol=1e-4, atol=1e-5), float((ref - pred[:k]).abs().max())
    got = np.array([[float(v) for v in row[1:]] for row in list(csv.reader(io.StringIO(out_cg)))[1:]]).reshape(S, N, C)
    worst = float(np.max(np.abs(got - out_pt) / (1e-3 + np.abs(out_pt))))
    res = {"series": S, "history": T, "horizon": N, "config": json.loads(a.config), "device": a.device,
           "threads": threads, "clgraph_s": statistics.median(times_cg), "torch_s": statistics.median(times_pt),
           "clgraph_runs": times_cg, "torch_runs": times_pt, "worst_rel_diff": worst,
           "load_before": load0, "load_after": load1, "torch": torch.__version__}
    print("%d series x %d steps, horizon %d, %s; %d threads" % (S, T, N, a.config, threads))
    print("| implementation | median s (of %d) | steps/s x series |" % a.runs)
    print("| --- | ---: | ---: |")
    steps = S * (T + N - 1)
    print("| clgraph forecast --device %s (CSV in and out) | %.2f | %.0f |" % (a.device, res["clgraph_s"],
                                                                             steps / res["clgraph_s"]))
    print("| PyTorch %s (tensors in memory) | %.2f | %.0f |" % (torch.__version__, res["torch_s"],
                                                                          steps / res["torch_s"]))
    print("worst relative difference of the forecasts: %.1e; load average %.2f before, %.2f after"
          % (worst, load0[0], load1[0]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
