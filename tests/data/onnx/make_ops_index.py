"""Writes ops/torch_resize_pad{,_ts}/ in ONNX's backend-test layout: one PyTorch
module of the resizing, padding and indexing calls vision models make
(F.interpolate nearest, bilinear, bicubic, antialiased; F.pad reflect and
replicate; pixel_shuffle and pixel_unshuffle; advanced indexing and index
assignment), exported by torch.onnx.export at opset 18 by the dynamo
exporter and (without the antialiased call, which it cannot export) the
TorchScript one: Resize, Pad, DepthToSpace, GatherND, ScatterND. Expected
outputs are PyTorch's, checked against ONNX Runtime here. `clgraph
onnx-test tests/data/onnx/ops` runs them (tests/graph/onnx/test_onnx.c).
Needs torch, numpy, onnx, onnxruntime: python3 make_ops_index.py"""
import os

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn.functional as F
from onnx import numpy_helper


class Vision(torch.nn.Module):
    def __init__(self, antialias):
        super().__init__()
        self.antialias = antialias

    def forward(self, x, rows, cols):
        y = x.clone()
        y[:, :, 1, :] = -x[:, :, 2, :]  # ScatterND (TorchScript), ScatterElements (dynamo)
        aa = F.interpolate(x, size=(3, 4), mode="bilinear", antialias=True) if self.antialias else x
        return (F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=False),
                F.interpolate(x, scale_factor=2.0, mode="nearest"),
                F.interpolate(x, size=(3, 4), mode="bicubic", align_corners=True),
                aa,
                F.pad(x, (2, 1, 1, 3), mode="reflect"),
                F.pad(x, (1, 2, 0, 1), mode="replicate"),
                F.pixel_shuffle(x, 2),
                F.pixel_unshuffle(x[:, :, :4, :], 2),
                x[:, :, rows, cols],  # GatherND after a transpose
                y)


def export(name, dynamo):
    torch.manual_seed(31)
    net = Vision(dynamo).eval()
    x = torch.randn(2, 4, 5, 6)
    rows, cols = torch.tensor([0, 4, -1, 2]), torch.tensor([5, 0, 3, -6])
    if not dynamo:  # the TorchScript export's GatherND misreads negative indices (ONNX Runtime disagrees too)
        rows, cols = rows % 5, cols % 6
    with torch.no_grad():
        want = [t.numpy() for t in net(x, rows, cols)]
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops", name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    path = os.path.join(d, "model.onnx")
    outs = [f"y{k}" for k in range(len(want))]
    torch.onnx.export(net, (x, rows, cols), path, input_names=["x", "rows", "cols"], output_names=outs,
                      opset_version=18, dynamo=dynamo,
                      **({"external_data": False} if dynamo else {}))
    ins = [("x", x.numpy()), ("rows", rows.numpy()), ("cols", cols.numpy())]
    got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, dict(ins))
    for n, w, g in zip(outs, want, got):
        assert np.allclose(w, g, rtol=1e-4, atol=1e-5), (n, np.abs(w - g).max())
    ops = sorted({n.op_type for n in onnx.load(path).graph.node})
    print(name + ":", ", ".join(ops))
    for kind, lst in (("input", ins), ("output", list(zip(outs, want)))):
        for k, (n, a) in enumerate(lst):
            with open(os.path.join(d, "test_data_set_0", f"{kind}_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.ascontiguousarray(a), n).SerializeToString())


if __name__ == "__main__":
    export("torch_resize_pad", True)
    export("torch_resize_pad_ts", False)
