"""Writes ops/torch_misc/ in ONNX's backend-test layout: one PyTorch
module of the sampling and math calls issue 31's operators serve
(F.grid_sample bilinear, nearest, bicubic with each padding mode, 4-D and,
for the dynamo exporter, 5-D; torch.linalg.det; the inverse and
hyperbolic trigonometric functions; F.local_response_norm), exported by
torch.onnx.export with the dynamo exporter at opset 20 (the TorchScript
one exports neither 5-D grid_sample nor asinh): GridSample,
Det, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh. Expected
outputs are PyTorch's, checked against ONNX Runtime here. `clgraph
onnx-test tests/data/onnx/ops` runs them (tests/graph/onnx/test_onnx.c).
Needs torch, numpy, onnx, onnxruntime: python3 make_ops_misc.py"""
import os

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn.functional as F
from onnx import numpy_helper


class Misc(torch.nn.Module):
    def __init__(self, volumetric):
        super().__init__()
        self.volumetric = volumetric

    def forward(self, x, g, g3, v, m, s):
        t = torch.tanh(s)
        vol = F.grid_sample(v, g3, mode="bilinear", padding_mode="border", align_corners=True) if self.volumetric else v
        return (F.grid_sample(x, g, mode="bilinear", padding_mode="zeros", align_corners=False),
                F.grid_sample(x, g, mode="nearest", padding_mode="border", align_corners=True),
                F.grid_sample(x, g, mode="bicubic", padding_mode="reflection", align_corners=False),
                vol,
                torch.linalg.det(m),
                torch.atan(s) + torch.asinh(s) + torch.tan(s * 0.3) + torch.cosh(s) - torch.sinh(s * 0.5),
                torch.acos(t) + torch.asin(t) + torch.atanh(t * 0.9) + torch.acosh(1 + s * s),
                F.local_response_norm(x, 3))


def export(name, dynamo):
    torch.manual_seed(31)
    net = Misc(dynamo).eval()
    ins = {"x": torch.randn(2, 3, 5, 7), "g": torch.rand(2, 4, 6, 2) * 2.6 - 1.3,
           "g3": torch.rand(1, 2, 3, 4, 3) * 2.6 - 1.3, "v": torch.randn(1, 2, 3, 4, 5),
           "m": torch.randn(3, 4, 4), "s": torch.randn(5, 6)}
    with torch.no_grad():
        want = [t.numpy() for t in net(*ins.values())]
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops", name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    path = os.path.join(d, "model.onnx")
    outs = [f"y{k}" for k in range(len(want))]
    torch.onnx.export(net, tuple(ins.values()), path, input_names=list(ins), output_names=outs,
                      opset_version=20 if dynamo else 17, dynamo=dynamo,
                      **({"external_data": False} if dynamo else {}))
    feed = {k: t.numpy() for k, t in ins.items()}
    model = onnx.load(path)
    used = [i.name for i in model.graph.input]
    got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {k: feed[k] for k in used})
    for n, w, g in zip(outs, want, got):
        assert np.allclose(w, g, rtol=1e-4, atol=1e-5), (n, np.abs(w - g).max())
    print(name + ":", ", ".join(sorted({n.op_type for n in model.graph.node})))
    for kind, lst in (("input", [(k, feed[k]) for k in used]), ("output", list(zip(outs, want)))):
        for k, (n, a) in enumerate(lst):
            with open(os.path.join(d, "test_data_set_0", f"{kind}_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.ascontiguousarray(a), n).SerializeToString())


if __name__ == "__main__":
    export("torch_misc", True)
