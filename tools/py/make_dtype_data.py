#!/usr/bin/env python3
"""Writes tests/data/dtypes/: one small array per clgraph dtype, saved by
numpy (.npy) and by the safetensors package (.safetensors), so that the C
tests (tests/graph/io/test_npy.c, test_safetensors.c) check clgraph's readers
and writers against files that the reference implementations wrote.

Needs numpy, ml_dtypes and safetensors (not in Debian 12; from PyPI:
`pip install numpy ml_dtypes safetensors`). The library never needs them.

Files:
  <dtype>.npy                numpy.save of VALUES[dtype] (bf16: an
                             ml_dtypes.bfloat16 array, which numpy saves as
                             '<V2'); f64.npy is float64, which clgraph rounds
                             to f32.
  <dtype>.safetensors        safetensors.numpy.save_file of {"a": VALUES[dtype],
                             "b": VALUES[dtype][::-1]} (one dtype per file, so
                             the reference's layout is the one clgraph writes:
                             tensors in name order).
  mixed.safetensors          every dtype in one file, as the reference lays it
                             out (by dtype, then name).

The values are repeated, as bit patterns, in the C tests; keep both in sync.

Usage: tools/py/make_dtype_data.py [OUT_DIR]   (default tests/data/dtypes)
"""
import os
import sys

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file

INF = float("inf")

VALUES = {
    "f32": np.array([[1.0, -2.5, 0.1], [INF, -0.0, 3.4028235e38]], dtype=np.float32),
    "i32": np.array([7, -1, -2**31, 2**31 - 1], dtype=np.int32),
    "f16": np.array([[1.0, -2.0, 65504.0], [2.0**-24, INF, -0.0]], dtype=np.float16),
    "bf16": np.array([[1.0, -3.0, 0.15625], [256.0, INF, -0.0]], dtype=ml_dtypes.bfloat16),
    "i8": np.array([-128, 127, 0, -1], dtype=np.int8),
    "u8": np.array([0, 255, 1, 128], dtype=np.uint8),
    "i64": np.array([0, -1, 2**40, -2**63, 2**63 - 1], dtype=np.int64),
    "bool": np.array([True, False, True], dtype=np.bool_),
    "i16": np.array([-32768, 32767, 0, -1, 256], dtype=np.int16),
    "u16": np.array([0, 65535, 1, 32768], dtype=np.uint16),
    "u32": np.array([[0, 4294967295, 1], [2**31, 65536, 7]], dtype=np.uint32),
    "u64": np.array([0, 2**64 - 1, 2**63, 2**40, 1], dtype=np.uint64),
}
F64 = np.array([0.1, 1e300, -2.5], dtype=np.float64)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "dtypes")
    os.makedirs(out, exist_ok=True)
    for name, a in VALUES.items():
        np.save(os.path.join(out, name + ".npy"), a)
        save_file({"a": a, "b": np.ascontiguousarray(a.reshape(-1)[::-1].reshape(a.shape))},
                  os.path.join(out, name + ".safetensors"))
    np.save(os.path.join(out, "f64.npy"), F64)
    save_file({name: a for name, a in VALUES.items()}, os.path.join(out, "mixed.safetensors"))
    # numpy.save of bfloat16 must stay '<V2' (what clgraph reads as bf16).
    with open(os.path.join(out, "bf16.npy"), "rb") as f:
        assert b"'descr': '<V2'" in f.read(128)


if __name__ == "__main__":
    main()
