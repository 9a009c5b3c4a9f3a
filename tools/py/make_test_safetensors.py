#!/usr/bin/env python3
"""Writes tests/data/small.safetensors without the safetensors package.

The layout follows the reference writer (safetensors.serialize):
  - 8-byte little-endian u64 header length N;
  - N bytes of compact JSON: "__metadata__" first, then the tensors in data
    order; padded with spaces so that N is a multiple of 8;
  - the data section, tensors sorted by dtype (I64, F32, I32, BF16, F16, as
    the reference sorts by descending dtype) then by name, with no gaps.

The expected values are repeated in tests/test_safetensors.c
(test_python_file); keep both in sync.

Usage: tools/py/make_test_safetensors.py [OUT]   (default tests/data/small.safetensors)
"""
import json
import os
import struct
import sys


def f32(values):
    return struct.pack("<%df" % len(values), *values)


def f16(values):
    return struct.pack("<%de" % len(values), *values)


def bf16(values):
    # The values below are exact in bfloat16, so keeping the high half of
    # the float32 bits is exact (no rounding needed).
    out = b""
    for v in values:
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        assert bits & 0xFFFF == 0, "not exact in bfloat16: %r" % v
        out += struct.pack("<H", bits >> 16)
    return out


def i32(values):
    return struct.pack("<%di" % len(values), *values)


def i64(values):
    return struct.pack("<%dq" % len(values), *values)


# name -> (dtype, shape, bytes)
TENSORS = {
    "dense.weight": ("F32", [2, 3], f32([1.0, -2.5, 3.25, 0.0, 65504.0, -0.125])),
    "dense.bias": ("F32", [3], f32([0.1, 0.2, 0.3])),
    "empty": ("F32", [0, 4], b""),
    "emb.f16": ("F16", [2, 2], f16([1.0, -2.0, 0.5, 65504.0])),
    "emb.bf16": ("BF16", [4], bf16([1.0, -3.0, 0.15625, 256.0])),
    "ids": ("I64", [3], i64([0, -7, 2147483647])),
    "count": ("I32", [], i32([42])),
}

# The reference's Dtype enum order (sorting is by descending order).
DTYPE_ORDER = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16",
               "BF16", "I32", "U32", "F32", "F64", "I64", "U64"]


def build():
    names = sorted(TENSORS, key=lambda n: (-DTYPE_ORDER.index(TENSORS[n][0]), n))
    header = {"__metadata__": {"format": "pt", "source": "make_test_safetensors.py"}}
    data = b""
    for name in names:
        dtype, shape, raw = TENSORS[name]
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.normpath(os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data",
        "small.safetensors"))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "wb") as f:
        f.write(build())
    print(out)


if __name__ == "__main__":
    main()
