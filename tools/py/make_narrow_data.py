#!/usr/bin/env python3
"""Writes tests/data/dtypes/narrow_*.npy, the expected values of clgraph's
narrow dtypes (base/narrow.c) from ml_dtypes and ONNX's reference helpers,
which tests/base/test_narrow.c compares against:

  narrow_x.npy      f32 inputs: specials, every value of each narrow float
                    type, the midpoints between neighbours (ties), a step
                    either side of them, random f16 values and f32 bits
  narrow_cases.npy  i32 [V, 3]: cg_dtype, saturate, f8e8m0 rounding
                    (0 up, 1 down, 2 nearest) of each variant
  narrow_want.npy   u8 [V, len(x)]: each input converted by each variant
                    (ONNX Cast: onnx.numpy_helper.saturate_cast for the
                    saturating float8, to_float8e8m0, astype otherwise); the
                    4- and 2-bit integers as clgraph holds them (sign-extended)
  narrow_codes.npy  f32 [10, 256]: each type's byte codes as f32 (NaN for
                    NaN codes; codes past a 4- or 2-bit type's range 0)
  float8.safetensors  PyTorch's float8 tensors (codes 0, 0x38, 0x7E, 0x80,
                    0xFE), by safetensors.torch, under its dtype names

    python3 tools/py/make_narrow_data.py tests/data/dtypes"""
import os
import sys

import ml_dtypes as md
import numpy as np
from onnx import numpy_helper as nh

# cg_dtype values (include/clgraph/dtype.h) and their ml_dtypes types
TYPES = [(13, md.float8_e4m3fn), (14, md.float8_e4m3fnuz), (15, md.float8_e5m2), (16, md.float8_e5m2fnuz),
         (17, md.float8_e8m0fnu), (18, md.float4_e2m1fn), (19, md.int4), (20, md.uint4), (21, md.int2),
         (22, md.uint2)]
FLOAT8 = {13, 14, 15, 16}
ROUNDS = ["up", "down", "nearest"]


def inputs():
    rng = np.random.default_rng(31)
    xs = [np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 1e-45, -1e-45, 1e-40, 2.0**-127,
                    2.0**127, 2.0**127 * 1.75, 1e6, -1e6], np.float32),
          np.array([0xFFC00000, 0x7FA00000], np.uint32).view(np.float32)]
    for code, t in TYPES[:6]:
        v = np.arange(256, dtype=np.uint8)[: 16 if code == 18 else 256].view(t).astype(np.float32)
        v = np.unique(v[np.isfinite(v)])
        mid = (v[:-1].astype(np.float64) + v[1:]) / 2
        xs += [v, mid.astype(np.float32), np.nextafter(mid.astype(np.float32), np.float32(np.inf)),
               np.nextafter(mid.astype(np.float32), np.float32(-np.inf))]
    xs.append(np.arange(-20, 21, dtype=np.float32) / 2)
    xs.append(rng.integers(0, 65536, 1000).astype(np.uint16).view(np.float16).astype(np.float32))
    xs.append(rng.integers(0, 2**32, 500, dtype=np.uint64).astype(np.uint32).view(np.float32))
    return np.concatenate(xs).astype(np.float32)


def convert(x, code, t, sat, rnd):
    with np.errstate(all="ignore"):
        if code == 17:
            return nh.to_float8e8m0(x, bool(sat), ROUNDS[rnd]).view(np.uint8)
        if code in FLOAT8 and sat:
            return nh.saturate_cast(x, t).view(np.uint8)
        if code in (19, 20, 21, 22):
            # past int32 the reference's astype is the platform's: clgraph
            # gives 0 there (and for NaN and infinities)
            ok = np.isfinite(x) & (np.abs(x) < 2.0**31)
            y = np.where(ok, x, 0).astype(t).astype(np.int8 if code in (19, 21) else np.uint8)
            return y.view(np.uint8)
        return x.astype(t).view(np.uint8)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/dtypes"
    x = inputs()
    cases, want = [], []
    for code, t in TYPES:
        for sat in (1, 0):
            for rnd in range(3 if code == 17 else 1):
                cases.append([code, sat, rnd])
                want.append(convert(x, code, t, sat, rnd))
    codes = np.zeros((len(TYPES), 256), np.float32)
    for k, (code, t) in enumerate(TYPES):
        n = {18: 16, 19: 16, 20: 16, 21: 4, 22: 4}.get(code, 256)
        b = np.arange(n, dtype=np.uint8)
        if code in (19, 21):  # held sign-extended: the codes of -8..7 / -2..1
            b = np.arange(-n // 2, n // 2).astype(np.int8).view(np.uint8)
        codes[k, b] = b.view(t).astype(np.float32)
    np.save(os.path.join(out, "narrow_x.npy"), x)
    np.save(os.path.join(out, "narrow_cases.npy"), np.array(cases, np.int32))
    np.save(os.path.join(out, "narrow_want.npy"), np.stack(want))
    np.save(os.path.join(out, "narrow_codes.npy"), codes)
    write_float8_safetensors(os.path.join(out, "float8.safetensors"))
    print("%d inputs, %d variants" % (len(x), len(cases)))


def write_float8_safetensors(path):
    import torch
    from safetensors.torch import save_file
    codes = torch.tensor([0, 0x38, 0x7E, 0x80, 0xFE], dtype=torch.uint8)
    names = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"]
    save_file({n: codes.clone().view(getattr(torch, n)) for n in names}, path)


if __name__ == "__main__":
    main()
