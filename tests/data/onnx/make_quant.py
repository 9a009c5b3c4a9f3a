"""Writes quant/<test>/ in ONNX's backend-test layout for imported int8
models (the form ONNX Runtime's quantize_dynamic gives a MatMul:
DynamicQuantizeLinear, MatMulInteger, Cast, Mul, Add), the expected
outputs computed with NumPy as ONNX defines each op (f32 arithmetic as
IEEE single, MatMulInteger summed exactly in int64):

- dyn_linear: x f32[2, 3, 64] through DynamicQuantizeLinear and a
  MatMulInteger with an int8 [64, 24] weight (zero point 0), its
  per-tensor scale and a bias. Data set 0: x of mixed signs. Data set 1:
  x mostly near its maximum, so the u8 activations are high and the
  weights are +-127: pairs of products pass int16, which ONNX Runtime's
  u8 x s8 kernels on x86 saturate (vpmaddubsw; its outputs here differ
  from these by up to thousands of quanta), while clgraph's are exact.
  The product before the bias is a second output named as exporters name
  values, "/m/ys" (`clgraph run --output DIR` writes DIR/_m_ys.npy).

Run from tests/data/onnx: python3 make_quant.py (numpy, onnx)."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnx_case import write_data_set

F = np.float32


def dql(x):
    lo = min(F(0), x.min())
    hi = max(F(0), x.max())
    rng = F(hi - lo)
    scale = F(1) if rng == 0 else F(rng / F(255))
    zp = np.rint(np.clip(-(F(lo / scale)), F(0), F(255))).astype(F)
    q = np.clip(np.rint(x / scale) + zp, 0, 255).astype(np.uint8)
    return q, F(scale), np.uint8(zp)


def dyn_linear(x, w, wz, ws, b):
    """y and the product before the bias, ys"""
    q, xs, xz = dql(x)
    yi = ((q.astype(np.int64) - int(xz)) @ (w.astype(np.int64) - int(wz))).astype(np.int32)
    s = F(xs * ws)
    ys = (yi.astype(F) * s).astype(F)
    return (ys + b).astype(F), ys


def main():
    rng = np.random.default_rng(32)
    k, n = 64, 24
    w = rng.choice(np.array([-127, 127, -126, 125], np.int8), size=(k, n))
    w[:, ::3] = rng.integers(-127, 128, size=(k, (n + 2) // 3), dtype=np.int8)
    wz, ws = np.int8(0), F(0.0123)
    b = rng.uniform(-1, 1, n).astype(F)
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["yi"]),
        helper.make_node("Cast", ["yi"], ["yf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["xs", "ws"], ["s"]),
        helper.make_node("Mul", ["yf", "s"], ["/m/ys"]),
        helper.make_node("Add", ["/m/ys", "b"], ["y"]),
    ]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(wz), "wz"),
             numpy_helper.from_array(np.array(ws), "ws"), numpy_helper.from_array(b, "b")]
    graph = helper.make_graph(nodes, "dyn_linear", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, n]),
                               helper.make_tensor_value_info("/m/ys", TensorProto.FLOAT, [2, 3, n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    d = os.path.join("quant", "dyn_linear")
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    x0 = rng.uniform(-3, 5, (2, 3, k)).astype(F)
    x1 = rng.uniform(4.5, 5, (2, 3, k)).astype(F)
    x1[..., :2] = -0.01
    for i, x in enumerate((x0, x1)):
        y, ys = dyn_linear(x, w, wz, ws, b)
        write_data_set(d, [("x", x)], [("y", y), ("/m/ys", ys)], i)


if __name__ == "__main__":
    main()
