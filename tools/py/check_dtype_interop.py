#!/usr/bin/env python3
"""Checks that clgraph's .npy and safetensors files interoperate with numpy,
ml_dtypes and the safetensors package, for every dtype, both ways:

  - clgraph writes (cg_tensor_save_npy, cg_weights_save, called through
    ctypes on the built shared library) and numpy.load / safetensors'
    load_file read the same values (bf16 .npy: np.load(...).view(bfloat16));
  - numpy.save / safetensors' save_file write and clgraph reads
    (cg_tensor_load_npy, cg_weights_get_as) the same values.

It is a manual check (the C tests need no Python: they compare against the
files tools/py/make_dtype_data.py committed under tests/data/dtypes). Needs
numpy, ml_dtypes and safetensors (`pip install numpy ml_dtypes safetensors`).

Usage: tools/py/check_dtype_interop.py BUILD_DIR/libclgraph.so
Exit status 0 when every check passes.
"""
import ctypes
import os
import sys
import tempfile

import ml_dtypes
import numpy as np
from safetensors.numpy import load_file, save_file

# cg_dtype values (include/clgraph/dtype.h) and the numpy dtype of each.
DTYPES = {
    1: np.dtype(np.float32), 2: np.dtype(np.int32), 3: np.dtype(np.float16),
    4: np.dtype(ml_dtypes.bfloat16), 5: np.dtype(np.int8), 6: np.dtype(np.uint8),
    7: np.dtype(np.int64), 8: np.dtype(np.bool_),
}


def sample(code, shape):
    """A deterministic array of every dtype, with extremes where they exist."""
    n = int(np.prod(shape)) if shape else 1
    dt = DTYPES[code]
    if dt == np.bool_:
        a = (np.arange(n) % 3 == 1)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        a = (np.arange(n, dtype=np.int64) * 37 - 50).clip(info.min, info.max).astype(dt)
        if n >= 2:
            a[0], a[-1] = info.min, info.max
    else:
        a = (np.arange(n, dtype=np.float32) * 0.37 - 1.5).astype(dt)
        if n >= 3:
            a[0], a[1] = np.inf, -0.0
    return a.reshape(shape)


class Lib:
    def __init__(self, path):
        L = ctypes.CDLL(path)
        vp, i64p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)
        for name, res, args in [
            ("cg_last_error", ctypes.c_char_p, []),
            ("cg_tensor_create", ctypes.c_int, [ctypes.c_int, ctypes.c_int, i64p, ctypes.POINTER(vp)]),
            ("cg_tensor_free", None, [vp]),
            ("cg_tensor_data", vp, [vp]),
            ("cg_tensor_dtype", ctypes.c_int, [vp]),
            ("cg_tensor_ndim", ctypes.c_int, [vp]),
            ("cg_tensor_dim", ctypes.c_int64, [vp, ctypes.c_int]),
            ("cg_tensor_save_npy", ctypes.c_int, [vp, ctypes.c_char_p]),
            ("cg_tensor_load_npy", ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(vp)]),
            ("cg_weights_save", ctypes.c_int,
             [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(vp)]),
            ("cg_weights_open", ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(vp)]),
            ("cg_weights_free", None, [vp]),
            ("cg_weights_get_as", ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(vp)]),
        ]:
            f = getattr(L, name)
            f.restype, f.argtypes = res, args
        self.L = L

    def check(self, status, what):
        if status != 0:
            raise RuntimeError("%s: %s" % (what, self.L.cg_last_error().decode()))

    def tensor(self, a, code):
        dims = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
        t = ctypes.c_void_p()
        self.check(self.L.cg_tensor_create(code, a.ndim, dims, ctypes.byref(t)), "cg_tensor_create")
        b = np.ascontiguousarray(a).view(np.uint8).tobytes()
        ctypes.memmove(self.L.cg_tensor_data(t), b, len(b))
        return t

    def array(self, t):
        code = self.L.cg_tensor_dtype(t)
        shape = tuple(self.L.cg_tensor_dim(t, i) for i in range(self.L.cg_tensor_ndim(t)))
        n = int(np.prod(shape)) if shape else 1
        size = n * DTYPES[code].itemsize
        raw = ctypes.string_at(self.L.cg_tensor_data(t), size) if size else b""
        return code, np.frombuffer(raw, dtype=DTYPES[code]).reshape(shape)


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    lib = Lib(os.path.abspath(sys.argv[1]))
    failures = 0
    shapes = [(), (0,), (5,), (2, 3), (1, 2, 1, 3)]
    with tempfile.TemporaryDirectory() as d:
        arrays = {}
        for code in DTYPES:
            for k, shape in enumerate(shapes):
                name = "%s_%d" % (DTYPES[code].name, k)
                a = sample(code, shape)
                arrays[name] = (code, a)
                # clgraph writes .npy, numpy reads
                p = os.path.join(d, name + ".npy").encode()
                t = lib.tensor(a, code)
                lib.check(lib.L.cg_tensor_save_npy(t, p), "cg_tensor_save_npy")
                back = np.load(p)
                if DTYPES[code] == np.dtype(ml_dtypes.bfloat16):
                    back = back.view(ml_dtypes.bfloat16)
                if not same(back, a):
                    print("FAIL npy C->numpy", name)
                    failures += 1
                # numpy writes .npy, clgraph reads
                p2 = os.path.join(d, name + "_np.npy")
                np.save(p2, a)
                u = ctypes.c_void_p()
                lib.check(lib.L.cg_tensor_load_npy(p2.encode(), ctypes.byref(u)), "cg_tensor_load_npy")
                got_code, got = lib.array(u)
                if got_code != code or not same(got, a):
                    print("FAIL npy numpy->C", name)
                    failures += 1
                lib.L.cg_tensor_free(t)
                lib.L.cg_tensor_free(u)
        # clgraph writes safetensors, the package reads
        names = list(arrays)
        ts = [lib.tensor(a, c) for c, a in arrays.values()]
        st = os.path.join(d, "c.safetensors").encode()
        lib.check(lib.L.cg_weights_save(st, len(names), (ctypes.c_char_p * len(names))(
            *[n.encode() for n in names]), (ctypes.c_void_p * len(ts))(*ts)), "cg_weights_save")
        loaded = load_file(st.decode())
        for n, (c, a) in arrays.items():
            if n not in loaded or not same(loaded[n], a):
                print("FAIL safetensors C->package", n)
                failures += 1
        for t in ts:
            lib.L.cg_tensor_free(t)
        # the package writes safetensors, clgraph reads
        st2 = os.path.join(d, "py.safetensors")
        save_file({n: a for n, (c, a) in arrays.items()}, st2)
        w = ctypes.c_void_p()
        lib.check(lib.L.cg_weights_open(st2.encode(), ctypes.byref(w)), "cg_weights_open")
        for n, (c, a) in arrays.items():
            t = ctypes.c_void_p()
            lib.check(lib.L.cg_weights_get_as(w, n.encode(), c, ctypes.byref(t)), "cg_weights_get_as")
            got_code, got = lib.array(t)
            if got_code != c or not same(got, a):
                print("FAIL safetensors package->C", n)
                failures += 1
            lib.L.cg_tensor_free(t)
        lib.L.cg_weights_free(w)
    total = len(arrays) * 4
    print("%d of %d checks passed" % (total - failures, total))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
