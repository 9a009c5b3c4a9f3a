#!/usr/bin/env python3
"""Expected outputs of the sdpa op (ops/sdpa.c) from PyTorch, for
tests/ops/test_ops_sdpa.c: each case a folder of q.npy, k.npy, v.npy,
optionally mask.npy, and y.npy from torch.nn.functional.
scaled_dot_product_attention computed in double precision (GQA through
enable_gqa, the causal cut as causal_lower_right's bottom-right triangle
added to the mask as -inf), rows with every key excluded set to 0 (torch
gives NaN there; sdpa's contract, like the exporters' Where(IsNaN), is 0).
cases.txt lists them: name, layout, causal, scale (0: 1/sqrt(D)), mask.

usage: make_sdpa.py [OUT_DIR]   (default: this script's folder)
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

# name, layout, B, Hq, Hk, L, S, D, Dv, causal, scale, mask shape or None, mask kind
CASES = [
    ("bhsd_plain", "bhsd", 2, 3, 3, 5, 7, 8, 8, 0, 0.0, None, None),
    ("bshd_gqa_masked_row", "bshd", 2, 6, 2, 5, 9, 8, 5, 0, 0.3, (5, 9), "masked_row"),
    ("bshd_decoder_step", "bshd", 2, 4, 1, 1, 17, 16, 16, 1, 0.0, (2, 1, 1, 17), "padding"),
    ("bhsd_causal_l_lt_s", "bhsd", 1, 2, 2, 4, 11, 8, 6, 1, 0.0, (1, 2, 4, 11), "finite"),
    ("bhsd_causal_l_gt_s", "bhsd", 1, 2, 1, 6, 4, 4, 4, 1, 0.0, None, None),
    ("bshd_long_padded", "bshd", 1, 2, 2, 3, 300, 16, 16, 0, 0.0, (1, 1, 1, 300), "padding"),
    ("bhsd_full_mask_rows", "bhsd", 2, 2, 1, 3, 5, 7, 3, 1, 0.0, (2, 2, 3, 5), "masked_row"),
    ("bshd_gqa_long_causal", "bshd", 2, 4, 2, 37, 70, 24, 40, 1, 0.0, (37, 70), "finite"),
]


def make_mask(rng, shape, kind, S):
    m = rng.uniform(-3.0, 0.0, shape).astype(np.float32)
    if kind == "masked_row":  # some keys out, and one query row with none left
        m[rng.uniform(size=shape) < 0.3] = -np.inf
        flat = m.reshape(-1, S)
        flat[len(flat) // 2] = -np.inf
    elif kind == "padding":  # the last third of the keys are padding
        m[..., (2 * S) // 3:] = -np.inf
    return m


def heads_first(x, layout):
    """[B, L, H, D] -> [B, H, L, D] for bshd."""
    return x.transpose(1, 2) if layout == "bshd" else x


def expected(q, k, v, mask, layout, causal, scale):
    q, k, v = (heads_first(torch.from_numpy(t).double(), layout) for t in (q, k, v))
    L, S = q.shape[2], k.shape[2]
    bias = torch.zeros(L, S, dtype=torch.float64)
    if mask is not None:
        bias = bias + torch.from_numpy(mask).double()
    if causal:  # bottom-right aligned, as torch.nn.attention.bias.causal_lower_right
        keep = torch.ones(L, S, dtype=torch.bool).tril(diagonal=S - L)
        bias = bias.masked_fill(~keep, -math.inf)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=scale if scale else None,
                                       enable_gqa=q.shape[1] != k.shape[1])
    y = torch.nan_to_num(y, nan=0.0)  # rows with no key left (the inputs hold no NaN)
    return heads_first(y, layout).float().contiguous().numpy()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(32)
    lines = []
    for name, layout, B, Hq, Hk, L, S, D, Dv, causal, scale, mshape, kind in CASES:
        def heads(H, N, X):
            shape = (B, N, H, X) if layout == "bshd" else (B, H, N, X)
            return rng.uniform(-2.0, 2.0, shape).astype(np.float32)
        q, k, v = heads(Hq, L, D), heads(Hk, S, D), heads(Hk, S, Dv)
        mask = make_mask(rng, mshape, kind, S) if mshape else None
        y = expected(q, k, v, mask, layout, causal, scale)
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        for n, t in (("q", q), ("k", k), ("v", v), ("mask", mask), ("y", y)):
            if t is not None:
                np.save(os.path.join(d, n + ".npy"), t)
        lines.append(f"{name} {layout} {causal} {scale!r} {int(mask is not None)}")
    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("# name layout causal scale has_mask (written by make_sdpa.py)\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
