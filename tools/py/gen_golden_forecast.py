#!/usr/bin/env python3
"""Golden data for the attention-RNN forecaster (contract: docs/forecast.md).

Regenerate (from the repository root; needs torch and numpy):

    python3 tools/py/gen_golden_forecast.py [OUT_DIR]

OUT_DIR defaults to tests/golden/forecast. For every variant in VARIANTS it
writes a random model directory (tools/py/forecast_ref.py random_model), a
few series of different lengths and the reference's forecasts, computed in
float64 (the spec: a float32 implementation agrees to about 1e-5 relative):

    VARIANT/config.json, VARIANT/weights.safetensors   the model
    VARIANT/golden.json     {"horizon": N, "window": w (0: none),
                             "series": [{"length": T, "first": [N ints]}]}
    VARIANT/history_<i>.npy  float32 [T, C], series i, raw values (float32
                             exactly: the reference read them as float64)
    VARIANT/forecast_<i>.npy float32 [N, C], its forecast (rounded from float64)
    VARIANT/attention_<i>.npy float32 [N, w], row j: the weights of forecast
                             step j, oldest state first, zero past the row's
                             count (first[j] is the step index i of column 0,
                             0 for an empty row)
    VARIANT/history.csv, VARIANT/expected.csv   the same as `clgraph forecast`
                             reads and writes it (every series, a `series`
                             column and dates in `time`)

Deterministic: each variant has its own seed.
"""
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import forecast_ref as R  # noqa: E402

HORIZON = 6
# name, config (task and columns added), weight scale, series lengths
VARIANTS = [
    ("rnn_dot_w4", {"cell": "rnn", "hidden": 6, "attention": "dot", "window": 4}, 1.5, [9, 1, 2, 5]),
    ("rnn_none_l2", {"cell": "rnn", "hidden": 5, "layers": 2, "attention": "none"}, 1.5, [7, 3, 1]),
    ("rnn_additive_w3_l2", {"cell": "rnn", "hidden": 6, "layers": 2, "attention": "additive", "attention_dim": 5,
                            "window": 3}, 1.5, [8, 4, 2]),
    ("gru_dot_w8", {"cell": "gru", "hidden": 8, "attention": "dot", "window": 8}, 2.0, [12, 3, 20, 1]),
    ("gru_scaled_dot_w2", {"cell": "gru", "hidden": 8, "attention": "scaled_dot", "window": 2}, 2.0, [6, 9, 2]),
    ("gru_general_w5_l2", {"cell": "gru", "hidden": 7, "layers": 2, "attention": "general", "window": 5}, 2.0,
     [10, 5, 1, 14]),
    ("gru_additive_w1", {"cell": "gru", "hidden": 6, "attention": "additive", "attention_dim": 9, "window": 1}, 2.0,
     [5, 2, 8]),
    ("gru_none", {"cell": "gru", "hidden": 9, "attention": "none"}, 2.0, [11, 4]),
    ("lstm_dot_w64", {"cell": "lstm", "hidden": 8, "attention": "dot"}, 2.0, [30, 7, 2]),
    ("lstm_scaled_dot_w3_l3", {"cell": "lstm", "hidden": 6, "layers": 3, "attention": "scaled_dot", "window": 3},
     2.0, [9, 1, 6]),
    ("lstm_general_w6", {"cell": "lstm", "hidden": 10, "attention": "general", "window": 6}, 2.0, [13, 3, 8]),
    ("lstm_additive_w4_l2", {"cell": "lstm", "hidden": 8, "layers": 2, "attention": "additive", "attention_dim": 6,
                             "window": 4}, 2.0, [10, 2, 15, 6]),
    ("lstm_none_l2", {"cell": "lstm", "hidden": 7, "layers": 2, "attention": "none"}, 2.0, [8, 5]),
    ("lstm_dot_w1_c1", {"cell": "lstm", "hidden": 5, "attention": "dot", "window": 1}, 2.0, [6, 3]),
]
COLUMNS = {"lstm_dot_w1_c1": ["y"]}


def gen(out_dir, idx, name, cfg, scale, lengths):
    rng = np.random.default_rng(1000 + idx)
    cols = COLUMNS.get(name, ["temp", "load", "price"])
    C = len(cols)
    mean = [round(float(x), 3) for x in rng.normal(0, 5, size=C)]
    std = [round(float(x), 3) for x in rng.uniform(0.5, 3, size=C)]
    full = dict(task="forecast", columns=cols, mean=mean, std=std, **cfg)
    c, m = R.random_model(full, 17 + idx, scale)
    d = os.path.join(out_dir, name)
    R.save(d, full, m)
    m64 = R.load(d, double=True)
    gold = {"horizon": HORIZON, "window": 0 if c["attention"] == "none" else c["window"], "series": []}
    rows_in, rows_out = [], []
    for i, T in enumerate(lengths):
        t = np.arange(T)[:, None]
        raw = np.array(mean) + np.array(std) * (np.sin(0.7 * t + rng.uniform(0, 6, size=C)) + 0.3 * rng.normal(size=(T, C)))
        raw = raw.astype(np.float32).astype(np.float64)  # exact in the float32 .npy and in %.9g
        fc, heat, firsts = m64.forecast(raw, HORIZON)
        assert np.all(np.isfinite(fc)) and np.abs(fc).max() < 1e3, name
        np.save(os.path.join(d, "history_%d.npy" % i), raw.astype(np.float32))
        np.save(os.path.join(d, "forecast_%d.npy" % i), fc.astype(np.float32))
        W = gold["window"]
        att = np.zeros((HORIZON, max(W, 1)))
        for j, p in enumerate(heat):
            att[j, :len(p)] = p
        np.save(os.path.join(d, "attention_%d.npy" % i), (att[:, :W] if W else np.zeros((HORIZON, 0))).astype(np.float32))
        gold["series"].append({"length": T, "first": [int(f) for f in firsts]})
        times_in = ["%d" % (10 * k) for k in range(T)]
        for k in range(T):
            rows_in.append(["s%d" % i, times_in[k]] + ["%.9g" % v for v in raw[k]])
        nxt = R.next_times(times_in, HORIZON)
        for j in range(HORIZON):
            rows_out.append(["s%d" % i, nxt[j]] + ["%.7g" % v for v in fc[j]])
    with open(os.path.join(d, "golden.json"), "w") as f:
        json.dump(gold, f, indent=1)
        f.write("\n")
    for fn, rows in (("history.csv", rows_in), ("expected.csv", rows_out)):
        with open(os.path.join(d, fn), "w") as f:
            f.write(",".join(["time", "series"] + cols) + "\n")
            for r in rows:
                f.write(",".join([r[1], r[0]] + r[2:]) + "\n")


def main():
    root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests", "golden", "forecast")
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    for i, (name, cfg, scale, lengths) in enumerate(VARIANTS):
        gen(out, i, name, cfg, scale, lengths)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("Golden data of the attention-RNN forecaster: written by tools/py/gen_golden_forecast.py\n"
                "(its docstring describes the files); do not edit by hand.\n\n")
        f.write("| variant | config | series lengths |\n| --- | --- | --- |\n")
        for name, cfg, scale, lengths in VARIANTS:
            f.write("| %s | `%s` | %s |\n" % (name, json.dumps(cfg), lengths))
    print("wrote %d variants to %s" % (len(VARIANTS), out))


if __name__ == "__main__":
    main()
