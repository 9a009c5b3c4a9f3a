#!/usr/bin/env python3
"""PyTorch reference implementation of the attention-RNN forecaster.

Contract: docs/forecast.md (model directory,
config keys, parameter names, equations, forecasting, CSV).  This file is the
executable reading of it that clgraph's golden data and shipped forecasting
models come from.  It needs torch and numpy; the library and the `clgraph`
CLI never need Python.

    # a random model directory (for tests)
    python3 tools/py/forecast_ref.py random --config '{"cell":"gru","hidden":8,"columns":["a","b"]}' \\
        --out /tmp/m --seed 1
    # forecast: CSV in on stdin, CSV out on stdout, as `clgraph forecast`
    python3 tools/py/forecast_ref.py forecast DIR --horizon N [--history N] [--double] \\
        [--attention OUT.json] < history.csv
    # self-test (the per-step loop against torch's whole-sequence RNN, ...)
    python3 tools/py/forecast_ref.py selftest

Decisions where the spec leaves room (clgraph must do the same):

* Config: unknown keys, wrong types and impossible values raise ConfigError
  naming the key (`hidden` >= 1, `layers` >= 1, `window` >= 1,
  `attention_dim` >= 1, `columns` non-empty and distinct, `mean`/`std` of C
  numbers, std > 0 and finite).  `attention_dim` is accepted (and ignored)
  for the kinds other than additive.
* Weights: every parameter of the config must be present with its exact
  shape; a missing, extra or mis-shaped tensor is an error naming it.
* The attention at step t reads the top layer's states h_i for
  max(1, t-1-w) <= i <= t-2 (lookup u = h_{t-1}); with none, c_t = 0 and the
  heat-map row is empty.
* --history N keeps the last N rows of each series (all when absent).
* CSV: the header must name every model column exactly once; besides them
  only `time` (first column) and `series` (anywhere) are allowed; columns may
  come in any order and the output keeps the input's header order.  Rows of
  one series need not be adjacent: a series is its rows in file order, and
  series are written in order of first appearance.  Empty lines are skipped;
  a row with a different number of fields than the header is an error.
* Numbers: [+-]? (digits [. digits] | . digits) ([eE] [+-]? digits)?, finite
  (no inf, nan, hex or underscores); values are written with %.7g.
* Time continuation: when the last two times of a series are both integers,
  the step is their difference; both decimal numbers: the same with as many
  decimals as the longer of the two (rounded, so 0.1 + 0.2 prints 0.3); both
  ISO dates (YYYY-MM-DD) or dates with a time (YYYY-MM-DDTHH:MM[:SS], a
  space for the T kept): a step of whole months when the time agrees and
  the day of month agrees or both are month ends (monthly data stays on its
  day, month-end data on month ends), else the exact difference in seconds,
  written in the input's form; a zero or negative step, a day missing from a
  target month, a year past 9999 or an integer past int64, or any other
  text, gives `+1`, `+2`, ...  A series of one row has `+1`, ...
"""
import argparse
import csv
import datetime as dt
import decimal
import io
import json
import math
import os
import re
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402

CELLS = ("rnn", "gru", "lstm")
KINDS = ("dot", "scaled_dot", "general", "additive", "none")
KEYS = {"task", "columns", "cell", "hidden", "layers", "attention", "attention_dim", "window", "mean", "std"}


class ConfigError(ValueError):
    pass


class CsvError(ValueError):
    pass


def _int(cfg, key, default, lo):
    v = cfg.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ConfigError("config key %r: expected an integer >= %d, got %r" % (key, lo, v))
    return v


def parse_config(cfg):
    """The config with defaults filled in; raises ConfigError naming a key."""
    if not isinstance(cfg, dict):
        raise ConfigError("config: expected a JSON object")
    for k in cfg:
        if k not in KEYS:
            raise ConfigError("config key %r: unknown" % k)
    if cfg.get("task") != "forecast":
        raise ConfigError("config key 'task': expected \"forecast\", got %r" % cfg.get("task"))
    cols = cfg.get("columns")
    if (not isinstance(cols, list) or not cols or not all(isinstance(c, str) and c for c in cols)
            or len(set(cols)) != len(cols)):
        raise ConfigError("config key 'columns': expected a non-empty list of distinct names")
    if "time" in cols or "series" in cols:
        raise ConfigError("config key 'columns': 'time' and 'series' are reserved")
    c = {"columns": list(cols)}
    c["cell"] = cfg.get("cell", "lstm")
    if c["cell"] not in CELLS:
        raise ConfigError("config key 'cell': expected one of %s, got %r" % (", ".join(CELLS), c["cell"]))
    if "hidden" not in cfg:
        raise ConfigError("config key 'hidden': required")
    c["hidden"] = _int(cfg, "hidden", None, 1)
    c["layers"] = _int(cfg, "layers", 1, 1)
    c["attention"] = cfg.get("attention", "dot")
    if c["attention"] not in KINDS:
        raise ConfigError("config key 'attention': expected one of %s, got %r" % (", ".join(KINDS), c["attention"]))
    c["attention_dim"] = _int(cfg, "attention_dim", c["hidden"], 1)
    c["window"] = _int(cfg, "window", 64, 1)
    C = len(cols)
    for key, default in (("mean", 0.0), ("std", 1.0)):
        v = cfg.get(key, [default] * C)
        if (not isinstance(v, list) or len(v) != C
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)):
            raise ConfigError("config key %r: expected %d finite numbers" % (key, C))
        if key == "std" and any(x <= 0 for x in v):
            raise ConfigError("config key 'std': every entry must be > 0")
        c[key] = [float(x) for x in v]
    return c


class Forecaster(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        C, H, kind = len(c["columns"]), c["hidden"], c["attention"]
        cls = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}[c["cell"]]
        extra = {"nonlinearity": "tanh"} if c["cell"] == "rnn" else {}
        self.rnn = cls(C + (0 if kind == "none" else H), H, c["layers"], batch_first=True, **extra)
        if kind == "additive":
            A = c["attention_dim"]
            self.attention = nn.Module()
            self.attention.W_q = nn.Linear(H, A)
            self.attention.W_k = nn.Linear(H, A)
            self.attention.v = nn.Linear(A, 1, bias=False)
        elif kind == "general":
            self.attention = nn.Module()
            self.attention.W = nn.Linear(H, H, bias=False)
        self.out = nn.Linear(H if kind == "none" else 2 * H, C)

    def zero_state(self):
        L, H = self.c["layers"], self.c["hidden"]
        z = torch.zeros(L, 1, H, dtype=self.out.weight.dtype)
        return (z, z.clone()) if self.c["cell"] == "lstm" else z

    def attend(self, u, values):
        """Weights p [n] and context c [H] of lookup u [H] over values [n, H]."""
        kind, H = self.c["attention"], self.c["hidden"]
        if values.shape[0] == 0:
            return u.new_zeros(0), torch.zeros_like(u)
        if kind == "dot":
            e = values @ u
        elif kind == "scaled_dot":
            e = values @ u / math.sqrt(H)
        elif kind == "general":
            e = values @ self.attention.W(u)
        else:
            a = self.attention
            e = torch.tanh(a.W_q(u)[None, :] + a.W_k(values)) @ a.v.weight[0]
        p = torch.softmax(e, dim=0)
        return p, p @ values

    def step(self, x, state, hs):
        """One step t: x [C], state of step t-1, hs the top states h_1..h_{t-1}.
        Returns (y_{t+1} [C], new state, h_t [H], p)."""
        kind, w = self.c["attention"], self.c["window"]
        t = len(hs) + 1
        if kind == "none":
            inp, p, c = x, None, None
        else:
            u = hs[-1] if hs else x.new_zeros(self.c["hidden"])
            lo = max(1, t - 1 - w)
            vals = torch.stack(hs[lo - 1:t - 2]) if t - 2 >= lo else x.new_zeros(0, self.c["hidden"])
            p, c = self.attend(u, vals)
            inp = torch.cat([x, c])
        o, state = self.rnn(inp[None, None, :], state)
        h = o[0, 0]
        y = self.out(h if kind == "none" else torch.cat([h, c]))
        return y, state, h, p

    @torch.no_grad()
    def forecast(self, raw, horizon):
        """raw [T, C] (numpy) -> (forecast [horizon, C] numpy, heat rows: list of numpy,
        firsts: the step index i of each row's first weight, as in h_i)."""
        dtype = self.out.weight.dtype
        mean = torch.tensor(self.c["mean"], dtype=dtype)
        std = torch.tensor(self.c["std"], dtype=dtype)
        xs = (torch.tensor(np.asarray(raw), dtype=dtype) - mean) / std
        state, hs, heat, preds, firsts = self.zero_state(), [], [], [], []
        y = None
        for t in range(xs.shape[0] + horizon - 1):
            x = xs[t] if t < xs.shape[0] else y
            y, state, h, p = self.step(x, state, hs)
            hs.append(h)
            if t >= xs.shape[0] - 1:
                preds.append(y * std + mean)
                heat.append(np.zeros(0) if p is None else p.double().numpy())
                firsts.append(max(1, t - self.c["window"]) if p is not None and len(p) else 0)
        return torch.stack(preds).double().numpy(), heat, firsts


def param_shapes(c):
    C, H, L, kind = len(c["columns"]), c["hidden"], c["layers"], c["attention"]
    m = Forecaster(c)
    return {k: tuple(v.shape) for k, v in m.state_dict().items()}, m


def load(d, double=False):
    with open(os.path.join(d, "config.json")) as f:
        c = parse_config(json.load(f))
    want, m = param_shapes(c)
    tensors = st_io.load_safetensors(os.path.join(d, "weights.safetensors"))
    for k in tensors:
        if k not in want:
            raise ConfigError("weights: unexpected tensor %r" % k)
    sd = {}
    for k, shape in want.items():
        if k not in tensors:
            raise ConfigError("weights: missing tensor %r" % k)
        a = np.asarray(tensors[k], dtype=np.float32)
        if tuple(a.shape) != shape:
            raise ConfigError("weights: %r has shape %s, expected %s" % (k, list(a.shape), list(shape)))
        sd[k] = torch.from_numpy(a.copy())
    m.load_state_dict(sd)
    if double:
        m = m.double()
    m.eval()
    return m


def save(d, c_in, m):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c_in, f, indent=1)
        f.write("\n")
    st_io.save_safetensors(os.path.join(d, "weights.safetensors"),
                {k: v.detach().float().numpy() for k, v in m.state_dict().items()})


def random_model(cfg, seed, scale=1.0):
    c = parse_config(cfg)
    torch.manual_seed(seed)
    m = Forecaster(c)
    with torch.no_grad():
        for p in m.parameters():
            p.uniform_(-scale, scale).mul_(1.0 / math.sqrt(c["hidden"]))
    return c, m


def run_steps(m, X, teach):
    """The spec's steps for a batch of series of one length, vectorised (for
    training and benchmarks; Forecaster.forecast is the plain reading):
    X [B, S, C] normalised; the first `teach` inputs are the data, later ones
    the model's own previous predictions. Returns the predictions [B, S, C]
    (prediction t is of step t + 1)."""
    c = m.c
    B, S, C = X.shape
    H, W, kind = c["hidden"], c["window"], c["attention"]
    L = c["layers"]
    z = X.new_zeros(L, B, H)
    state = (z, z.clone()) if c["cell"] == "lstm" else z
    hs, ys, y = [], [], None
    for t in range(1, S + 1):
        x = X[:, t - 1] if t <= teach else y
        if kind == "none":
            inp, ctx = x, None
        else:
            u = hs[-1] if hs else X.new_zeros(B, H)
            lo = max(1, t - 1 - W)
            if t - 2 >= lo:
                V = torch.stack(hs[lo - 1:t - 2], 1)  # [B, n, H]
                if kind == "dot":
                    e = torch.einsum("bnh,bh->bn", V, u)
                elif kind == "scaled_dot":
                    e = torch.einsum("bnh,bh->bn", V, u) / math.sqrt(H)
                elif kind == "general":
                    e = torch.einsum("bnh,bh->bn", V, m.attention.W(u))
                else:
                    a = m.attention
                    e = torch.tanh(a.W_q(u)[:, None, :] + a.W_k(V)) @ a.v.weight[0]
                p = torch.softmax(e, 1)
                ctx = torch.einsum("bn,bnh->bh", p, V)
            else:
                ctx = X.new_zeros(B, H)
            inp = torch.cat([x, ctx], 1)
        o, state = m.rnn(inp[:, None, :], state)
        h = o[:, 0]
        y = m.out(h if kind == "none" else torch.cat([h, ctx], 1))
        hs.append(h)
        ys.append(y)
    return torch.stack(ys, 1)


# ---- CSV ----------------------------------------------------------------

_NUM = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _num(s, line, col, name):
    v = float(s) if _NUM.match(s) else None
    if v is None or not math.isfinite(v):
        raise CsvError("stdin:%d:%d: column %r: expected a number, got %r" % (line, col, name, s))
    return v


def read_csv(text, columns):
    """-> (header, series list [(name or None, times list, values [T, C])])."""
    rows = list(csv.reader(io.StringIO(text)))
    lines = [i + 1 for i in range(len(rows))]
    body = [(n, r) for n, r in zip(lines, rows) if r and any(f.strip() for f in r)]
    if not body:
        raise CsvError("stdin:1:1: no header line")
    hline, header = body[0]
    seen = {}
    for i, h in enumerate(header):
        if h in seen:
            raise CsvError("stdin:%d:%d: column %r appears twice" % (hline, i + 1, h))
        seen[h] = i
        if h == "time" and i != 0:
            raise CsvError("stdin:%d:%d: column 'time' must come first" % (hline, i + 1))
        if h not in columns and h not in ("time", "series"):
            raise CsvError("stdin:%d:%d: column %r is not one of the model's (%s)" % (hline, i + 1, h, ", ".join(columns)))
    for c in columns:
        if c not in seen:
            raise CsvError("stdin:%d:1: column %r of the model is missing" % (hline, c))
    idx = [seen[c] for c in columns]
    order, groups = [], {}
    for n, r in body[1:]:
        if len(r) != len(header):
            raise CsvError("stdin:%d:1: %d fields, the header has %d" % (n, len(r), len(header)))
        s = r[seen["series"]] if "series" in seen else None
        if s not in groups:
            groups[s] = ([], [])
            order.append(s)
        groups[s][0].append(r[0] if "time" in seen else None)
        groups[s][1].append([_num(r[j], n, j + 1, header[j]) for j in idx])
    if not order:
        raise CsvError("stdin:%d:1: no rows after the header" % hline)
    return header, [(s, groups[s][0], np.array(groups[s][1], dtype=np.float64)) for s in order]


_DEC = re.compile(r"^[+-]?\d+(\.\d+)?$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:([T ])(\d{2}):(\d{2})(?::(\d{2}))?)?$")


def _parse_date(s):
    m = _DATE.match(s)
    if not m:
        return None
    y, mo, d, sep, hh, mi, ss = m.groups()
    try:
        t = dt.datetime(int(y), int(mo), int(d), int(hh or 0), int(mi or 0), int(ss or 0))
    except ValueError:
        return None
    form = "date" if sep is None else ("sec" if ss is not None else "min")
    return t, form, sep


def _fmt_date(t, form, sep):
    d = "%04d-%02d-%02d" % (t.year, t.month, t.day)
    if form == "date":
        return d
    return d + sep + ("%02d:%02d:%02d" % (t.hour, t.minute, t.second) if form == "sec" else "%02d:%02d" % (t.hour, t.minute))


def _month_days(y, m):
    return [31, 29 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]


def next_times(times, n):
    """The n times after a series' times (spec: CSV; decisions in the docstring)."""
    plus = ["+%d" % (k + 1) for k in range(n)]
    if len(times) < 2 or times[-1] is None:
        return plus
    a, b = times[-2], times[-1]
    if _DEC.match(a) and _DEC.match(b):
        dec = max(len(x.split(".")[1]) if "." in x else 0 for x in (a, b))
        if dec > 18:
            return plus
        sa, sb = (int(decimal.Decimal(x).scaleb(dec)) for x in (a, b))
        step = sb - sa
        if step <= 0 or abs(sa) >= 2 ** 63 or abs(sb) >= 2 ** 63 or sb + step * n >= 2 ** 63:
            return plus
        out = []
        for k in range(n):
            v = sb + step * (k + 1)
            if dec == 0:
                out.append(str(v))
            else:
                q, r = divmod(abs(v), 10 ** dec)
                out.append("%s%d.%0*d" % ("-" if v < 0 else "", q, dec, r))
        return out
    pa, pb = _parse_date(a), _parse_date(b)
    if not pa or not pb or pa[1] != pb[1] or pa[2] != pb[2]:
        return plus
    ta, tb = pa[0], pb[0]
    ends = ta.day == _month_days(ta.year, ta.month) and tb.day == _month_days(tb.year, tb.month)
    months = (tb.year - ta.year) * 12 + tb.month - ta.month
    if ta.time() == tb.time() and (ta.day == tb.day or ends) and months > 0:
        out = []
        for k in range(n):
            m0 = tb.year * 12 + (tb.month - 1) + months * (k + 1)
            y, mo = divmod(m0, 12)
            if y > 9999:
                return plus
            d = _month_days(y, mo + 1) if ends else tb.day
            if d > _month_days(y, mo + 1):
                return plus
            out.append(_fmt_date(tb.replace(year=y, month=mo + 1, day=d), pb[1], pb[2]))
        return out
    step = tb - ta
    if step.total_seconds() <= 0:
        return plus
    out = []
    for k in range(n):
        try:
            out.append(_fmt_date(tb + step * (k + 1), pb[1], pb[2]))
        except OverflowError:
            return plus
    return out


def write_csv(f, header, columns, results):
    """results: [(series name, times, forecast [N, C])]."""
    w = csv.writer(f, lineterminator="\n")
    w.writerow(header)
    col = {c: i for i, c in enumerate(columns)}
    for name, times, fc in results:
        for k in range(fc.shape[0]):
            row = []
            for h in header:
                if h == "time":
                    row.append(times[k])
                elif h == "series":
                    row.append(name)
                else:
                    row.append("%.7g" % fc[k, col[h]])
            w.writerow(row)


def cmd_forecast(a):
    m = load(a.dir, a.double)
    text = sys.stdin.read()
    header, series = read_csv(text, m.c["columns"])
    results, heat = [], []
    for name, times, raw in series:
        if a.history:
            raw, times = raw[-a.history:], times[-a.history:]
        fc, rows, firsts = m.forecast(raw, a.horizon)
        results.append((name, next_times(times, a.horizon), fc))
        heat.append({"series": name, "history": int(raw.shape[0]), "first": firsts, "rows": [r.tolist() for r in rows]})
    write_csv(sys.stdout, header, m.c["columns"], results)
    if a.attention:
        with open(a.attention, "w") as f:
            json.dump(heat, f)


# ---- self-test ------------------------------------------------------------

def selftest():
    rng = np.random.default_rng(0)
    n = 0
    for cell in CELLS:
        for kind in KINDS:
            cfg = {"task": "forecast", "columns": ["a", "b", "c"], "cell": cell, "hidden": 5, "layers": 2,
                   "attention": kind, "attention_dim": 4, "window": 3, "mean": [1, -2, 0.5], "std": [2, 0.5, 1]}
            c, m = random_model(cfg, 7)
            m = m.double().eval()
            raw = rng.normal(size=(9, 3))
            fc, heat, firsts = m.forecast(raw, 4)
            # With attention none the loop must equal torch's whole-sequence run.
            if kind == "none":
                with torch.no_grad():
                    xs = (torch.tensor(raw) - torch.tensor(c["mean"])) / torch.tensor(c["std"])
                    o, _ = m.rnn(xs[None])
                    y = m.out(o[0, -1]) * torch.tensor(c["std"]) + torch.tensor(c["mean"])
                assert np.allclose(y.numpy(), fc[0], atol=1e-12), (cell, kind)
            # the vectorised steps agree with the plain loop
            with torch.no_grad():
                X = ((torch.tensor(raw) - torch.tensor(c["mean"])) / torch.tensor(c["std"]))[None]
                X = torch.cat([X, X.new_zeros(1, 3, 3)], 1)
                pv = run_steps(m, X, 9)
                yv = pv[0, 8:] * torch.tensor(c["std"]) + torch.tensor(c["mean"])
            assert np.allclose(yv.numpy(), fc, atol=1e-10), (cell, kind)
            # the window: step t attends over min(w, t-2) states
            assert len(heat) == 4
            for j, p in enumerate(heat):
                t = 9 + j
                want = 0 if kind == "none" else min(3, max(0, t - 2))
                assert p.shape == (want,), (cell, kind, j, p.shape)
                if want:
                    assert abs(p.sum() - 1) < 1e-12
                    assert firsts[j] == t - 1 - want, (firsts[j], t, want)
            # float32 agrees with float64 to about 1e-5 relative
            m32 = m.float()
            fc32, _, _ = m32.forecast(raw, 4)
            assert np.allclose(fc32, fc, rtol=1e-4, atol=1e-5), (cell, kind, np.abs(fc32 - fc).max())
            n += 1
    assert next_times(["1", "3"], 2) == ["5", "7"]
    assert next_times(["0.1", "0.2"], 2) == ["0.3", "0.4"]
    assert next_times(["-0.25", "-0.125"], 2) == ["0.000", "0.125"]
    assert next_times(["1958-03-01", "1958-04-01"], 2) == ["1958-05-01", "1958-06-01"]
    assert next_times(["2020-01-31", "2020-02-29"], 2) == ["2020-03-31", "2020-04-30"]
    assert next_times(["2020-01-15", "2020-02-14"], 1) == ["2020-03-15"]
    assert next_times(["2019-12-30", "2020-01-30"], 2) == ["+1", "+2"]
    assert next_times(["2020-01-30", "2020-03-30"], 2) == ["2020-05-30", "2020-07-30"]
    assert next_times(["2020-01-01T00:00", "2020-01-01T06:00"], 2) == ["2020-01-01T12:00", "2020-01-01T18:00"]
    assert next_times(["x", "y"], 2) == ["+1", "+2"]
    assert next_times(["5", "5"], 1) == ["+1"]
    hdr, ser = read_csv("time,b,a,series\n1,2,3,s\n2,4,5,t\n3,6,7,s\n", ["a", "b"])
    assert [s[0] for s in ser] == ["s", "t"] and ser[0][2].tolist() == [[3, 2], [7, 6]]
    for bad, msg in (("a\n1\n", "column 'b' of the model is missing"), ("a,b\n1,x\n", "stdin:2:2"),
                     ("a,b\n1\n", "stdin:2:1"), ("a,b\n", "no rows"), ("a,b,z\n1,2,3\n", "'z' is not")):
        try:
            read_csv(bad, ["a", "b"])
            raise AssertionError("accepted %r" % bad)
        except CsvError as e:
            assert msg in str(e), (bad, str(e))
    print("selftest ok: %d variants" % n)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("random")
    r.add_argument("--config", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--scale", type=float, default=1.0)
    f = sub.add_parser("forecast")
    f.add_argument("dir")
    f.add_argument("--horizon", type=int, required=True)
    f.add_argument("--history", type=int, default=0)
    f.add_argument("--double", action="store_true")
    f.add_argument("--attention")
    sub.add_parser("selftest")
    a = ap.parse_args()
    try:
        if a.cmd == "random":
            cfg = json.loads(a.config)
            cfg.setdefault("task", "forecast")
            c, m = random_model(cfg, a.seed, a.scale)
            save(a.out, cfg, m)
        elif a.cmd == "forecast":
            if a.horizon < 1 or a.history < 0:
                ap.error("--horizon must be >= 1 and --history >= 0")
            cmd_forecast(a)
        else:
            selftest()
    except (ConfigError, CsvError) as e:
        print("forecast_ref: %s" % e, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
