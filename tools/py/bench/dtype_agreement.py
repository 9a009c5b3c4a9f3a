#!/usr/bin/env python3
"""Greedy token agreement of low-precision weights with fp32 (issue 19, item 3).

For each seq2seq model directory, translates the same random sources with
`clgraph translate --ids` once with fp32 weights and once per --weights-dtype,
and reports per dtype:
  sentences: the share of sources whose whole output equals fp32's;
  tokens:    the share of fp32's output positions where the dtype's output has
             the same token (position by position, over the longer of the two,
             so a diverging or longer/shorter output counts against it).

Only the standard library: the numbers come from clgraph alone (fp32 vs
bf16/f16 of the same binary); the reference's own agreement with fp32 is the
golden tests' business.

Usage (from the repository root):
  python3 tools/py/bench/dtype_agreement.py [--clgraph build/tools/clgraph]
      [--sources 256] [--max-src-len 20] [--seed 1] [--device cpu]
      [--dtypes bf16,f16[,f32@opencl:0]] [MODEL_DIR ...]
A column DTYPE@DEVICE runs on DEVICE instead: f32@opencl:0 is the agreement of
fp32 with itself under another summation order, the floor that near-ties in a
random model's logits set for every other column.
Without MODEL_DIR: every variant in tests/golden/s2s/index.txt (the spec's random
models). Prints a Markdown table; exits non-zero when a translate run fails."""
import argparse
import json
import os
import random
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def special_ids(model_dir):
    """pad/bos/eos/unk of the model: golden.json's filled-in config where there
    is one, else config.json with the spec's defaults."""
    cfg = {"pad_id": 0, "bos_id": 1, "eos_id": 2, "unk_id": 3}
    golden = os.path.join(model_dir, "golden.json")
    path = golden if os.path.exists(golden) else os.path.join(model_dir, "config.json")
    with open(path) as f:
        c = json.load(f)
    c = c.get("config", c) if path == golden else c
    return {k: c.get(k, v) for k, v in cfg.items()}


def make_sources(model_dir, n, max_len, seed):
    with open(os.path.join(model_dir, "src.vocab")) as f:
        v = sum(1 for _ in f)
    sp = special_ids(model_dir)
    ids = [i for i in range(v) if i not in (sp["pad_id"], sp["bos_id"], sp["eos_id"])]
    rng = random.Random(seed)
    return [[rng.choice(ids) for _ in range(rng.randint(1, max_len))] for _ in range(n)]


def translate(args, model_dir, sources, dtype):
    """dtype is DTYPE or DTYPE@DEVICE (another device than --device)."""
    dtype, _, device = dtype.partition("@")
    cmd = [args.clgraph, "translate", model_dir, "--ids", "--device", device or args.device, "--batch", "64"]
    if dtype != "f32":
        cmd += ["--weights-dtype", dtype]
    text = "".join(" ".join(map(str, s)) + "\n" for s in sources)
    r = subprocess.run(cmd, input=text, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    lines = r.stdout.split("\n")[:-1]
    if len(lines) != len(sources):
        sys.exit(f"{' '.join(cmd)}: {len(lines)} output lines for {len(sources)} sources")
    return [ln.split() for ln in lines]


def agreement(ref, got):
    same = sum(a == b for a, b in zip(ref, got))
    tok_same = tok_all = 0
    for a, b in zip(ref, got):
        n = max(len(a), len(b), 1)  # an empty output is one position (EOS at once)
        tok_all += n
        tok_same += n if a == b else sum(x == y for x, y in zip(a, b))
    return same / len(ref), tok_same / tok_all


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clgraph", default=os.path.join(ROOT, "build", "tools", "clgraph"))
    ap.add_argument("--sources", type=int, default=256)
    ap.add_argument("--max-src-len", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtypes", default="bf16,f16")
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    models = args.models
    if not models:
        gdir = os.path.join(ROOT, "tests", "golden", "s2s")
        with open(os.path.join(gdir, "index.txt")) as f:
            models = [os.path.join(gdir, ln.split()[0]) for ln in f if ln.strip()]
    dtypes = [d for d in args.dtypes.split(",") if d]
    print(f"{args.sources} random sources of 1..{args.max_src_len} ids (seed {args.seed}), greedy, "
          f"--device {args.device}; sentences identical / tokens agreeing with fp32, %\n")
    print("| model | " + " | ".join(dtypes) + " |")
    print("| --- |" + " ---: |" * len(dtypes))
    totals = {d: [0.0, 0.0] for d in dtypes}
    for m in models:
        src = make_sources(m, args.sources, args.max_src_len, args.seed)
        ref = translate(args, m, src, "f32")
        cells = []
        for d in dtypes:
            s, t = agreement(ref, translate(args, m, src, d))
            totals[d][0] += s
            totals[d][1] += t
            cells.append(f"{100 * s:.1f} / {100 * t:.1f}")
        print(f"| {os.path.basename(os.path.normpath(m))} | " + " | ".join(cells) + " |", flush=True)
    if len(models) > 1:
        print("| **mean** | " + " | ".join(f"**{100 * totals[d][0] / len(models):.1f} / "
                                         f"{100 * totals[d][1] / len(models):.1f}**" for d in dtypes) + " |")


if __name__ == "__main__":
    main()
