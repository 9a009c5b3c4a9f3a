#!/usr/bin/env python3
"""Makes models/example: a GRU encoder (embedding, 2-layer bidirectional GRU
over per-sequence lengths, dense bridge with tanh) written in the clgraph IR,
random weights with PyTorch state_dict names, sample inputs, and the outputs
PyTorch computes for them (the reference that tests compare clgraph with).

Run from the repository root:  /usr/bin/python3 tools/py/make_example.py
Deterministic: the same torch version gives the same files.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from st_io import save_safetensors  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "example")
V, E, H, L = 23, 8, 16, 2

GRAPH = """# A GRU encoder as in docs/seq2seq.md:
# embedding -> 2-layer bidirectional GRU over each sequence's own length ->
# the top layer's final states -> dense bridge with tanh (decoder state s_0).
graph encoder {
  input src: i32[B, S]
  input src_len: i32[B]
  param emb: f32[23, 8] = "src_embed.weight"
  param w_ih0: f32[48, 8] = "encoder.weight_ih_l0"
  param w_hh0: f32[48, 16] = "encoder.weight_hh_l0"
  param b_ih0: f32[48] = "encoder.bias_ih_l0"
  param b_hh0: f32[48] = "encoder.bias_hh_l0"
  param w_ih0r: f32[48, 8] = "encoder.weight_ih_l0_reverse"
  param w_hh0r: f32[48, 16] = "encoder.weight_hh_l0_reverse"
  param b_ih0r: f32[48] = "encoder.bias_ih_l0_reverse"
  param b_hh0r: f32[48] = "encoder.bias_hh_l0_reverse"
  param w_ih1: f32[48, 32] = "encoder.weight_ih_l1"
  param w_hh1: f32[48, 16] = "encoder.weight_hh_l1"
  param b_ih1: f32[48] = "encoder.bias_ih_l1"
  param b_hh1: f32[48] = "encoder.bias_hh_l1"
  param w_ih1r: f32[48, 32] = "encoder.weight_ih_l1_reverse"
  param w_hh1r: f32[48, 16] = "encoder.weight_hh_l1_reverse"
  param b_ih1r: f32[48] = "encoder.bias_ih_l1_reverse"
  param b_hh1r: f32[48] = "encoder.bias_hh_l1_reverse"
  param bridge_w: f32[16, 32] = "bridge.weight"
  param bridge_b: f32[16] = "bridge.bias"
  x = embedding(emb, src)
  enc_rnn: keys, h_n = gru(x, src_len, w_ih0, w_hh0, b_ih0, b_hh0, w_ih0r, w_hh0r, b_ih0r, b_hh0r, w_ih1, w_hh1, b_ih1, b_hh1, w_ih1r, w_hh1r, b_ih1r, b_hh1r) {hidden: 16, layers: 2, bidirectional: 1}
  h_fwd = slice(h_n) {axis: 0, start: 2, end: 3}
  h_bwd = slice(h_n) {axis: 0, start: 3, end: 4}
  h_cat = concat(h_fwd, h_bwd) {axis: 2}
  h_last = reshape(h_cat) {shape: [-1, 32]}
  bridge: pre = linear(h_last, bridge_w, bridge_b)
  s0 = tanh(pre)
  output keys, s0
}
"""


def main():
    torch.manual_seed(1234)
    emb = torch.nn.Embedding(V, E)
    enc = torch.nn.GRU(E, H, L, batch_first=True, bidirectional=True)
    bridge = torch.nn.Linear(2 * H, H)
    sd = {"src_embed.weight": emb.weight}
    sd.update({"encoder." + k: v for k, v in enc.state_dict().items()})
    sd.update({"bridge." + k: v for k, v in bridge.state_dict().items()})

    lengths = torch.tensor([5, 2, 7], dtype=torch.int64)
    B, S = 3, 7
    src = torch.randint(4, V, (B, S))
    for b in range(B):
        src[b, lengths[b]:] = 0  # pad_id; must not change the result
    with torch.no_grad():
        x = emb(src)
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True,
                                                         enforce_sorted=False)
        out, h_n = enc(packed)
        keys, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=S)
        h_last = torch.cat([h_n[-2], h_n[-1]], dim=1)
        s0 = torch.tanh(bridge(h_last))

    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "model.cg"), "w") as f:
        f.write(GRAPH)
    save_safetensors(os.path.join(OUT, "weights.safetensors"), sd)
    np.save(os.path.join(OUT, "src.npy"), src.numpy().astype(np.int32))
    np.save(os.path.join(OUT, "src_len.npy"), lengths.numpy().astype(np.int32))
    np.save(os.path.join(OUT, "expected_keys.npy"), keys.numpy().astype(np.float32))
    np.save(os.path.join(OUT, "expected_s0.npy"), s0.numpy().astype(np.float32))
    print("wrote", os.path.normpath(OUT))


if __name__ == "__main__":
    main()
