#!/usr/bin/python3
"""Exports a seq2seq model directory (docs/seq2seq.md, through
tools/py/s2s_ref.py) to ONNX with torch.onnx.export: an encoder graph and one
decoder step, batch and source length dynamic. The graphs take int64 token
ids, as PyTorch models do; `clgraph run` reads them from .npy files.

    python3 tools/py/s2s_export_onnx.py MODEL_DIR OUT_DIR [--opset 17]

OUT_DIR/encoder.onnx:  src [B, S] int64, src_len [B] int64
                       -> keys [B, S, K], keys_proj [B, S, A] (additive
                          attention only), s0 [L, B, H] (and c0 for LSTM)
OUT_DIR/decoder.onnx:  y_prev [B] int64, h [L, B, H] (c [L, B, H] for LSTM),
                       keys, keys_proj, src_len
                       -> logp [B, V] (log_softmax of the logits), h_new
                          (c_new), a [B, S] (the attention weights)

Needs torch, numpy and onnx (a virtual environment: pip install torch onnx
onnxruntime). Only configs without `local` attention export (the window
position depends on the step number)."""
import argparse
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s2s_ref  # noqa: E402


class Encoder(nn.Module):
    """The spec's encoder without the packing: ONNX's RNN ops take the
    lengths as sequence_lens, which is what pack_padded_sequence means."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, src, src_len):
        m, c = self.m, self.m.config
        S = src.shape[1]
        pos = torch.arange(S, device=src.device)[None, :]
        valid = pos < src_len[:, None]
        x = m.src_embed(torch.where(valid, src, torch.full_like(src, c["pad_id"])))
        packed = nn.utils.rnn.pack_padded_sequence(x, src_len.clamp(min=1), batch_first=True,
                                                   enforce_sorted=False)
        out, hn = m.encoder(packed)
        keys, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=S)
        if m.is_lstm:
            hn = hn[0]
        h_last = torch.cat([hn[-2], hn[-1]], dim=-1) if c["bidirectional"] else hn[-1]
        state = m.init_state(h_last)
        outs = [keys]
        if m.has_attn and m.attention.kind == "additive":
            outs.append(m.attention.project_keys(keys))
        outs += list(state) if m.is_lstm else [state]
        return tuple(outs)


class DecoderStep(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, y_prev, *rest):
        m = self.m
        state = (rest[0], rest[1]) if m.is_lstm else rest[0]
        rest = rest[2:] if m.is_lstm else rest[1:]
        additive = m.has_attn and m.attention.kind == "additive"
        keys = rest[0]
        kproj = rest[1] if additive else None
        src_len = rest[-1]
        logits, state, _, a = m.step(y_prev, state, None, keys, kproj, src_len, 0)
        outs = [torch.log_softmax(logits, dim=-1)]
        outs += list(state) if m.is_lstm else [state]
        if a is not None:
            outs.append(a)
        return tuple(outs)


def export(model_dir, out_dir, opset=17):
    loaded = s2s_ref.load_model_dir(model_dir)
    m = loaded.model
    c = m.config
    if c["local"] is not None:
        raise SystemExit("local attention does not export (its window depends on the step)")
    if c["decoder_style"] != "bahdanau":
        raise SystemExit("only the bahdanau decoder exports here (luong feeds h~ back)")
    os.makedirs(out_dir, exist_ok=True)
    L, H, K = c["decoder_layers"], m.H, m.K
    additive = m.has_attn and m.attention.kind == "additive"
    B, S = 2, 5
    src = torch.randint(4, m.v_src, (B, S))
    src_len = torch.tensor([S, S - 2])
    names = ["keys"] + (["keys_proj"] if additive else []) + (["s0", "c0"] if m.is_lstm else ["s0"])
    dyn = {"src": {0: "B", 1: "S"}, "src_len": {0: "B"}, "keys": {0: "B", 1: "S"}, "keys_proj": {0: "B", 1: "S"},
           "s0": {1: "B"}, "c0": {1: "B"}}
    torch.onnx.export(Encoder(m), (src, src_len), os.path.join(out_dir, "encoder.onnx"),
                      input_names=["src", "src_len"], output_names=names,
                      dynamic_axes={k: v for k, v in dyn.items() if k in ["src", "src_len"] + names},
                      opset_version=opset, dynamo=False)
    with torch.no_grad():
        enc = Encoder(m)(src, src_len)
    st = ["h", "c"] if m.is_lstm else ["h"]
    ins = ["y_prev"] + st + ["keys"] + (["keys_proj"] if additive else []) + ["src_len"]
    args = [torch.randint(4, m.v_tgt, (B,))] + [torch.zeros(L, B, H) for _ in st] + [enc[0]]
    args += ([enc[1]] if additive else []) + [src_len]
    outs = ["logp"] + [s + "_new" for s in st] + (["a"] if m.has_attn else [])
    dyn = {"y_prev": {0: "B"}, "keys": {0: "B", 1: "S"}, "keys_proj": {0: "B", 1: "S"}, "src_len": {0: "B"},
           "logp": {0: "B"}, "a": {0: "B", 1: "S"}}
    for s in st:
        dyn[s] = dyn[s + "_new"] = {1: "B"}
    torch.onnx.export(DecoderStep(m), tuple(args), os.path.join(out_dir, "decoder.onnx"), input_names=ins,
                      output_names=outs, dynamic_axes={k: v for k, v in dyn.items() if k in ins + outs},
                      opset_version=opset, dynamo=False)
    return m, K


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--opset", type=int, default=17)
    a = ap.parse_args()
    torch.manual_seed(0)
    export(a.model_dir, a.out_dir, a.opset)


if __name__ == "__main__":
    main()
