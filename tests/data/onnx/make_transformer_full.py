"""Writes models/transformer_full_ts and models/transformer_full_dynamo in
ONNX's backend-test layout: one whole nn.Transformer step (shared
Embedding(100, 64), d_model 64, 4 heads, 2 + 2 layers, causal tgt_mask,
Linear(64, 100), log_softmax) taking src [B, S] and tgt [B, T] int64 and
giving logp [B, T, 100], exported by the TorchScript exporter
(dynamo=False) and by the dynamo exporter (torch.export.Dim), opset 17,
batch and lengths dynamic, random weights (seed 0). Each has two data
sets, ONNX Runtime's outputs as the expected values (different batch only:
the TorchScript export fixes the lengths it was traced with in its
attention reshapes). These are the models of issue 29: the TorchScript
export gave a different answer on a plan's second run (a folded weight overwritten), the
dynamo export a different one on some cold-cache runs on PoCL (a weight
folded on the device read back by the host before the read finished).
`clgraph onnx-test` runs them with the other models (tests/graph/onnx), and
test_portability runs them cold on every OpenCL implementation.
Needs torch, onnx, onnxscript and onnxruntime:
    python3 make_transformer_full.py [--out DIR]"""
import os
import sys

import numpy as np
import onnx
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_models  # noqa: E402


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 64)
        self.tr = nn.Transformer(d_model=64, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                                 dim_feedforward=128, dropout=0.0, batch_first=True)
        self.out = nn.Linear(64, 100)

    def forward(self, src, tgt):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        h = self.tr(self.emb(src), self.emb(tgt), tgt_mask=mask, tgt_is_causal=True)
        return torch.log_softmax(self.out(h), -1)


def main():
    if "--out" in sys.argv:
        make_models.OUT = sys.argv[sys.argv.index("--out") + 1]
    torch.manual_seed(0)
    m = Model().eval()
    g = np.random.default_rng(29)
    sets = [{"src": g.integers(0, 100, (B, S)).astype(np.int64), "tgt": g.integers(0, 100, (B, T)).astype(np.int64)}
            for B, S, T in ((2, 12, 4), (3, 12, 4))]
    src, tgt = torch.from_numpy(sets[0]["src"]), torch.from_numpy(sets[0]["tgt"])
    tmp = os.path.join(make_models.OUT, "models", ".full.onnx")
    os.makedirs(os.path.dirname(tmp), exist_ok=True)
    torch.onnx.export(m, (src, tgt), tmp, input_names=["src", "tgt"], output_names=["logp"], dynamo=False,
                      opset_version=17, dynamic_axes={"src": {0: "B", 1: "S"}, "tgt": {0: "B", 1: "T"},
                                                      "logp": {0: "B", 1: "T"}})
    make_models.write_sets("transformer_full_ts", tmp, sets)
    B, S, T = torch.export.Dim("B"), torch.export.Dim("S"), torch.export.Dim("T")
    torch.onnx.export(m, (src, tgt), tmp, input_names=["src", "tgt"], output_names=["logp"], dynamo=True,
                      opset_version=17, dynamic_shapes={"src": {0: B, 1: S}, "tgt": {0: B, 1: T}})
    # one file: the weights inline, not in an external .data file
    onnx.save(onnx.load(tmp), tmp, save_as_external_data=False)
    make_models.write_sets("transformer_full_dynamo", tmp, sets)
    for f in (tmp, tmp + ".data"):
        if os.path.exists(f):
            os.remove(f)


if __name__ == "__main__":
    main()
