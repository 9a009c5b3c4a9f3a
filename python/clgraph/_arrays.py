"""numpy arrays to and from clgraph tensors.

Arrays cross into the C extension through the buffer protocol: an array of a
dtype Python's buffer formats know (float32, int64, bool, ...) goes as it is;
one of ml_dtypes' types (bfloat16, the float8 and 4-bit types) goes as a view
of its raw bits with the clgraph dtype named beside it. Nothing is copied
for a C-contiguous array.
"""
from __future__ import annotations

import numpy as np

from . import _clgraph

try:  # bfloat16 and the narrow floats and ints, when installed
    import ml_dtypes
except ImportError:  # pragma: no cover - exercised where ml_dtypes is absent
    ml_dtypes = None

_CODES = {name: code for name, (code, _size) in _clgraph.dtypes().items()}

# clgraph dtype name -> numpy dtype, for the types numpy itself has
_NUMPY = {
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "i8": np.dtype(np.int8),
    "u8": np.dtype(np.uint8),
    "i16": np.dtype(np.int16),
    "u16": np.dtype(np.uint16),
    "i32": np.dtype(np.int32),
    "u32": np.dtype(np.uint32),
    "i64": np.dtype(np.int64),
    "u64": np.dtype(np.uint64),
    "bool": np.dtype(np.bool_),
}
# clgraph dtype name -> ml_dtypes type name, and the integer dtype of its bits
_ML = {
    "bf16": ("bfloat16", np.uint16),
    "f8e4m3fn": ("float8_e4m3fn", np.uint8),
    "f8e4m3fnuz": ("float8_e4m3fnuz", np.uint8),
    "f8e5m2": ("float8_e5m2", np.uint8),
    "f8e5m2fnuz": ("float8_e5m2fnuz", np.uint8),
    "f8e8m0": ("float8_e8m0fnu", np.uint8),
    "f4e2m1": ("float4_e2m1fn", np.uint8),
    "i4": ("int4", np.int8),
    "u4": ("uint4", np.uint8),
    "i2": ("int2", np.int8),
    "u2": ("uint2", np.uint8),
}
_FROM_ML = {}
if ml_dtypes is not None:
    for _name, (_ml, _bits) in _ML.items():
        if hasattr(ml_dtypes, _ml):
            _FROM_ML[np.dtype(getattr(ml_dtypes, _ml))] = (_CODES[_name], _bits)
            _NUMPY[_name] = np.dtype(getattr(ml_dtypes, _ml))


def numpy_dtype(name: str):
    """The numpy dtype of clgraph dtype `name` (ml_dtypes' for bf16 and the
    narrow types; their raw bits' integer dtype without ml_dtypes)."""
    dt = _NUMPY.get(name)
    if dt is not None:
        return dt
    if name in _ML:
        return np.dtype(_ML[name][1])
    raise KeyError(name)


def to_feed(value):
    """(buffer object, dtype code or 0) of an input value: the array itself
    when it is C-contiguous (no copy), else a C-contiguous copy."""
    arr = value if type(value) is np.ndarray else np.asarray(value)
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    ml = _FROM_ML.get(arr.dtype)
    if ml is not None:
        return arr.view(ml[1]), ml[0]
    return arr, 0


def to_output(value):
    """(buffer object, dtype code or 0) of an output array for run_into."""
    if type(value) is not np.ndarray:
        raise TypeError(f"outputs must be numpy arrays, not {type(value).__name__}")
    ml = _FROM_ML.get(value.dtype)
    if ml is not None:
        return value.view(ml[1]), ml[0]
    return value, 0


def from_tensor(t):
    """An ndarray over a Tensor's memory (it lives as long as the array)."""
    arr = np.asarray(t)
    name = t.dtype
    if name in _ML and name in _NUMPY:
        arr = arr.view(_NUMPY[name])
    return arr
