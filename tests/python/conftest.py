"""Shared fixtures of the Python package's tests (run by tests/python/run.sh
under meson test, or `pytest tests/python` with build/python on PYTHONPATH)."""
import os

import numpy as np
import pytest

import clgraph

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def opencl_devices():
    return [d.name for d in clgraph.devices() if d.name.startswith("opencl:")]


@pytest.fixture(params=["cpu"] + opencl_devices()[:1])
def device(request):
    """The CPU, and the first OpenCL device where there is one."""
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


MLP_CG = b"""graph mlp {
  input x: f32[B, 4]
  param w1: f32[8, 4] = "w1"
  param b1: f32[8] = "b1"
  param w2: f32[3, 8] = "w2"
  h = linear(x, w1, b1)
  a = tanh(h)
  y = linear(a, w2)
  p = softmax(y) {axis: -1}
  output y, p
}
"""


@pytest.fixture
def mlp(tmp_path, rng):
    """A .cg model with its weights file, and a numpy reference of it."""
    w = {"w1": rng.standard_normal((8, 4)).astype(np.float32),
         "b1": rng.standard_normal(8).astype(np.float32),
         "w2": rng.standard_normal((3, 8)).astype(np.float32)}
    path = tmp_path / "mlp.cg"
    path.write_bytes(MLP_CG)
    weights = tmp_path / "mlp.safetensors"
    write_safetensors(weights, w)

    def reference(x):
        x = x.astype(np.float64)
        y = np.tanh(x @ w["w1"].T.astype(np.float64) + w["b1"]) @ w["w2"].T.astype(np.float64)
        e = np.exp(y - y.max(axis=-1, keepdims=True))
        return y, e / e.sum(axis=-1, keepdims=True)

    return str(path), str(weights), reference


def write_safetensors(path, tensors):
    """A safetensors file (the format is a JSON header and raw bytes), written
    here so the tests need no safetensors package."""
    import json
    import struct
    header, blobs, off = {}, [], 0
    names = {np.dtype(np.float32): "F32", np.dtype(np.int32): "I32", np.dtype(np.int64): "I64"}
    for name, arr in tensors.items():
        data = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": names[arr.dtype], "shape": list(arr.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
