#!/usr/bin/python3
"""A small PyTorch nn.Transformer encoder-decoder (d_model 64, 4 heads, 2 + 2
layers, causal mask) that learns to reverse a sequence of tokens, and its
export to ONNX as an encoder graph and a decoder graph, batch and lengths
dynamic. clgraph imports both (tests/data/onnx/make_models.py writes them
with ONNX Runtime's outputs; tests/graph/onnx/ decodes greedily with them).

    python3 tools/py/transformer_ref.py OUT_DIR [--steps 1500]

OUT_DIR/encoder.onnx: src [B, S] int64, src_pad [B, S] bool (True: padding)
                      -> memory [B, S, 64]
OUT_DIR/decoder.onnx: tgt [B, T] int64 (BOS then the tokens so far),
                      memory [B, S, 64], src_pad [B, S] bool
                      -> logp [B, V] (log_softmax of the last position)

Tokens: 0 pad, 1 BOS, 2 EOS, 3.. the alphabet. Needs torch, and onnx and
onnxscript for the export."""
import argparse
import math
import os

import torch
from torch import nn

V, D, PAD, BOS, EOS = 16, 64, 0, 1, 2


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_embed = nn.Embedding(V, D)
        self.tgt_embed = nn.Embedding(V, D)
        self.pos = nn.Parameter(torch.randn(32, D) * 0.1)
        self.transformer = nn.Transformer(d_model=D, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                                          dim_feedforward=128, dropout=0.0, batch_first=True)
        self.out = nn.Linear(D, V)

    def encode(self, src, src_pad):
        x = self.src_embed(src) * math.sqrt(D) + self.pos[: src.shape[1]]
        return self.transformer.encoder(x, src_key_padding_mask=src_pad)

    def decode(self, tgt, memory, src_pad):
        """logits of every position [B, T, V]."""
        T = tgt.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(T)
        y = self.tgt_embed(tgt) * math.sqrt(D) + self.pos[:T]
        # tgt_is_causal given: PyTorch would otherwise compare the mask with a
        # causal one, a data-dependent branch torch.export cannot trace
        h = self.transformer.decoder(y, memory, tgt_mask=mask, memory_key_padding_mask=src_pad, tgt_is_causal=True)
        return self.out(h)


class Encoder(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, src, src_pad):
        return self.m.encode(src, src_pad)


class Decoder(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, tgt, memory, src_pad):
        return torch.log_softmax(self.m.decode(tgt, memory, src_pad)[:, -1], dim=-1)


def batch(g, B, S_max):
    """Random sources of 1..S_max tokens, padded; their reversals as targets."""
    lens = torch.randint(1, S_max + 1, (B,), generator=g)
    S = int(lens.max())
    src = torch.full((B, S), PAD, dtype=torch.long)
    tgt = torch.full((B, S + 2), PAD, dtype=torch.long)
    for b in range(B):
        n = int(lens[b])
        x = torch.randint(3, V, (n,), generator=g)
        src[b, :n] = x
        tgt[b, 0] = BOS
        tgt[b, 1 : n + 1] = x.flip(0)
        tgt[b, n + 1] = EOS
    return src, src == PAD, tgt


def train(steps=1500, seed=0):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    m = Model()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)
    m.train()
    for _ in range(steps):
        src, pad, tgt = batch(g, 64, 8)
        logits = m.decode(tgt[:, :-1], m.encode(src, pad), pad)
        loss = loss_fn(logits.reshape(-1, V), tgt[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    m.eval()
    return m, float(loss.detach())


@torch.no_grad()
def greedy(m, src, pad, max_len):
    """Token ids after BOS, EOS included when made, per source."""
    memory = m.encode(src, pad)
    B = src.shape[0]
    tgt = torch.full((B, 1), BOS, dtype=torch.long)
    done = torch.zeros(B, dtype=torch.bool)
    for _ in range(max_len):
        logp = Decoder(m)(tgt, memory, pad)
        nxt = logp.argmax(-1)
        nxt = torch.where(done, torch.full_like(nxt, PAD), nxt)
        tgt = torch.cat([tgt, nxt[:, None]], 1)
        done |= nxt == EOS
        if bool(done.all()):
            break
    return [[int(t) for t in row[1:] if t != PAD] for row in tgt]


def export(m, out_dir, opset=17):
    """torch.onnx.export with dynamo=True: the TorchScript exporter
    (dynamo=False) writes nn.MultiheadAttention's key length into the graph
    as a constant, so its export fails at any other source length (in ONNX
    Runtime too)."""
    os.makedirs(out_dir, exist_ok=True)
    g = torch.Generator().manual_seed(1)
    src, pad, tgt = batch(g, 2, 6)
    with torch.no_grad():
        memory = m.encode(src, pad)
    Bd, Sd, Td = torch.export.Dim("B"), torch.export.Dim("S"), torch.export.Dim("T", max=31)
    torch.onnx.export(Encoder(m), (src, pad), os.path.join(out_dir, "encoder.onnx"),
                      input_names=["src", "src_pad"], output_names=["memory"],
                      dynamic_shapes={"src": {0: Bd, 1: Sd}, "src_pad": {0: Bd, 1: Sd}},
                      opset_version=opset, dynamo=True, verbose=False)
    torch.onnx.export(Decoder(m), (tgt[:, :3], memory, pad), os.path.join(out_dir, "decoder.onnx"),
                      input_names=["tgt", "memory", "src_pad"], output_names=["logp"],
                      dynamic_shapes={"tgt": {0: Bd, 1: Td}, "memory": {0: Bd, 1: Sd}, "src_pad": {0: Bd, 1: Sd}},
                      opset_version=opset, dynamo=True, verbose=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--steps", type=int, default=1500)
    a = ap.parse_args()
    torch.set_num_threads(2)
    m, loss = train(a.steps)
    print("final training loss %.4f" % loss)
    export(m, a.out_dir)


if __name__ == "__main__":
    main()
