"""Minimal safetensors and .npy writers/readers for clgraph's scripts.

The `safetensors` package is not in Debian 12, so the scripts write the
format directly: an 8-byte little-endian header length, a JSON header padded
with spaces to a multiple of 8 bytes, then the tensors' bytes in header order.
"""
import json
import struct

import numpy as np

_DT = {np.dtype("float32"): "F32", np.dtype("float16"): "F16", np.dtype("int32"): "I32",
       np.dtype("int64"): "I64"}


def save_safetensors(path, tensors, metadata=None):
    """Writes a dict name -> numpy array (or torch tensor) as safetensors."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name in sorted(tensors):
        t = tensors[name]
        a = np.ascontiguousarray(t.detach().cpu().numpy() if hasattr(t, "detach") else t)
        if a.dtype not in _DT:
            a = a.astype(np.float32)
        b = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": _DT[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def load_safetensors(path):
    """Reads a safetensors file into a dict name -> numpy array."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    base = 8 + n
    inv = {v: k for k, v in _DT.items()}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data[base + b:base + e], dtype=inv[info["dtype"]]).reshape(info["shape"])
    return out
