#!/usr/bin/python3
"""PyTorch reference implementation of the seq2seq-with-attention model family.

Contract: docs/seq2seq.md (model directory, config keys,
parameter names, equations, decoding).  This file is the executable reading
of it that clgraph's golden data and shipped models come from.  It needs
torch and numpy (Debian: /usr/bin/python3 with python3-torch); the library
and the `clgraph` CLI never need Python.

    # a random model directory (for tests)
    /usr/bin/python3 tools/py/s2s_ref.py random --config '{"cell":"lstm","emb_dim":8,"hidden":12}' \\
        --out /tmp/m --seed 1 [--v-src 24 --v-tgt 24]
    # translate stdin, one source per line; same output format as `clgraph translate`
    /usr/bin/python3 tools/py/s2s_ref.py translate DIR [--beam K] [--nbest N] [--alpha A] \\
        [--max-len N] [--ids] [--scores] [--double] < sources
    # self-test (batched greedy == alone greedy, beam 1 == greedy, ...)
    /usr/bin/python3 tools/py/s2s_ref.py selftest
    # ONNX: the encoder and one decoder step, batch and source length dynamic
    # (tools/py/s2s_export_onnx.py; needs onnx too)
    python3 tools/py/s2s_ref.py export-onnx DIR OUT_DIR [--opset 17]

Decisions where the spec leaves room (clgraph must do the same):

* Config: unknown keys, wrong types and impossible combinations raise
  ConfigError naming the key: `dot`/`scaled_dot`/`cosine` need K == H
  (key "attention"); `local` with attention "none" (key "local"); local.D must
  be an integer >= 0, and >= 1 for "predictive" (the Gaussian's sigma is D/2);
  special ids must lie inside both vocabularies ("pad_id", ...).
  `attention_dim` is accepted (and ignored) for the other kinds.
* Weights: every parameter of the config must be present with its exact
  shape; a missing, extra or mis-shaped tensor is an error naming it.
* Sources get no BOS/EOS: the encoder sees exactly the source's tokens.
  An empty source (length 0): keys are all invalid (every window is empty, so
  a = 0 and c = 0), h_last = 0 (the encoder's initial state) and max_len = 10.
* The decoder step index t used by local "monotonic" (p = t) is the number of
  tokens generated before this step: 0 when the input is BOS, for both styles.
* Local windows: key i is valid iff i < src_len and |i - p| <= D (p real for
  predictive, computed in float32 as float(src_len) * sigmoid(...)).
* attention "none": there is no attention module and no context; the decoder
  input is the target embedding alone (I = E) for BOTH styles (luong has no
  input feeding then), and luong's combine is [H, H]: h~_t = tanh(combine(s_t)).
* Greedy: argmax of logp, ties to the lowest id; the score is the float64 sum
  of the float32 logp of every generated token, EOS included; max_len counts
  generated tokens including EOS; a sentence that reaches max_len without EOS
  outputs all max_len tokens.
* Beam (size k): step t expands every live hypothesis (in live order) with
  every token; candidates are ordered by score descending, ties by lower live
  index then lower token id; the first min(2k, n_live * V) are walked in that
  order, and the walk stops as soon as the next live set holds k: an EOS
  candidate is finished (normalised score = score / lp(len), len = generated
  tokens incl. EOS, lp(len) = ((5 + len) / 6) ** alpha); any other candidate is
  appended to the next live set (candidates after the stop are dropped, EOS or
  not).  The finished set keeps the k best by normalised score (ties: the one
  finished first).  After the walk: stop if the live set is empty; else if the
  step made len == max_len, the live hypotheses are finished as they stand (no
  EOS, len = max_len) in live order; else stop if k are finished and the best
  live raw score / lp(max_len) <= the worst finished normalised score (no live
  hypothesis can still win: raw scores only fall).  The output is the finished
  set sorted by normalised score descending (stable: ties keep finishing
  order), truncated to nbest.  beam 1 is the same as greedy.
  Scores accumulate in float64 from float32 logp.
* The attention returned per hypothesis has one row per generated token
  (EOS step included), each of length src_len.
* CLI: input lines are split on "\\n" (one trailing "\\r" is dropped);
  tokenizer "chars" = every code point, "words" = split on runs of ASCII
  whitespace (space, \\t, \\n, \\v, \\f, \\r); a token missing from src.vocab is
  unk_id; with --ids the input lines are space-separated source ids and the
  output is space-separated target ids.  Output text joins target tokens
  (chars: concatenated, words: one space between).  BOS and the final EOS are
  never printed.  nbest > 1: every line is prefixed by the 0-based source
  index and a tab, up to nbest lines per source.  --scores appends a tab and
  the score as "%.6f" (greedy: the raw score; beam: the normalised score).
* Vocab files: the file is split on "\\n"; a final newline does not make an
  extra token; no other stripping (a line " " is the space token).  When a
  token appears twice the lowest id wins for lookups.

Everything runs in float32 (what clgraph computes); --double (or dtype=
torch.float64 in load_model_dir / make_random_model) runs the same model in
float64, useful to see how far float32 rounding is from a near-tie.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from st_io import load_safetensors, save_safetensors  # noqa: E402

ATTENTION_KINDS = ("additive", "dot", "scaled_dot", "general", "cosine", "none")
DEFAULTS = {
    "cell": "gru",
    "encoder_layers": 1,
    "decoder_layers": 1,
    "bidirectional": False,
    "attention": "additive",
    "attention_dim": None,  # H
    "local": None,
    "decoder_style": "bahdanau",
    "bridge": "dense",
    "tokenizer": "words",
    "pad_id": 0,
    "bos_id": 1,
    "eos_id": 2,
    "unk_id": 3,
}
REQUIRED = ("emb_dim", "hidden")
SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>")
ASCII_WS = " \t\n\v\f\r"


class ConfigError(ValueError):
    """A config.json or weights problem; the message names the key/tensor."""


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def normalize_config(cfg, v_src=None, v_tgt=None):
    """Validates a config dict and returns a full copy with the defaults filled in."""
    if not isinstance(cfg, dict):
        raise ConfigError("config: expected a JSON object")
    for k in cfg:
        if k not in DEFAULTS and k not in REQUIRED:
            raise ConfigError("config key '%s': unknown key" % k)
    c = dict(DEFAULTS)
    c.update(cfg)
    for k in REQUIRED:
        if k not in cfg:
            raise ConfigError("config key '%s': required" % k)
    for k in ("emb_dim", "hidden", "encoder_layers", "decoder_layers"):
        if not _is_int(c[k]) or c[k] < 1:
            raise ConfigError("config key '%s': expected an integer >= 1, got %r" % (k, c[k]))
    if c["cell"] not in ("gru", "lstm"):
        raise ConfigError("config key 'cell': expected \"gru\" or \"lstm\", got %r" % (c["cell"],))
    if not isinstance(c["bidirectional"], bool):
        raise ConfigError("config key 'bidirectional': expected true or false, got %r" % (c["bidirectional"],))
    if c["attention"] not in ATTENTION_KINDS:
        raise ConfigError("config key 'attention': expected one of %s, got %r"
                          % (", ".join(ATTENTION_KINDS), c["attention"]))
    if c["attention_dim"] is None:
        c["attention_dim"] = c["hidden"]
    if not _is_int(c["attention_dim"]) or c["attention_dim"] < 1:
        raise ConfigError("config key 'attention_dim': expected an integer >= 1, got %r" % (c["attention_dim"],))
    if c["decoder_style"] not in ("bahdanau", "luong"):
        raise ConfigError("config key 'decoder_style': expected \"bahdanau\" or \"luong\", got %r"
                          % (c["decoder_style"],))
    if c["bridge"] not in ("dense", "zeros"):
        raise ConfigError("config key 'bridge': expected \"dense\" or \"zeros\", got %r" % (c["bridge"],))
    if c["tokenizer"] not in ("chars", "words"):
        raise ConfigError("config key 'tokenizer': expected \"chars\" or \"words\", got %r" % (c["tokenizer"],))
    loc = c["local"]
    if loc is not None:
        if not isinstance(loc, dict) or set(loc) != {"mode", "D"}:
            raise ConfigError("config key 'local': expected null or {\"mode\": ..., \"D\": int}, got %r" % (loc,))
        if loc["mode"] not in ("monotonic", "predictive"):
            raise ConfigError("config key 'local.mode': expected \"monotonic\" or \"predictive\", got %r"
                              % (loc["mode"],))
        lo = 1 if loc["mode"] == "predictive" else 0
        if not _is_int(loc["D"]) or loc["D"] < lo:
            raise ConfigError("config key 'local.D': expected an integer >= %d for mode %s, got %r"
                              % (lo, loc["mode"], loc["D"]))
        if c["attention"] == "none":
            raise ConfigError("config key 'local': a local window needs an attention kind other than \"none\"")
        c["local"] = {"mode": loc["mode"], "D": loc["D"]}
    H = c["hidden"]
    K = H * (2 if c["bidirectional"] else 1)
    if c["attention"] in ("dot", "scaled_dot", "cosine") and K != H:
        raise ConfigError("config key 'attention': \"%s\" needs K == H, but the bidirectional encoder "
                          "gives keys of width K = %d and H = %d" % (c["attention"], K, H))
    for k in ("pad_id", "bos_id", "eos_id", "unk_id"):
        if not _is_int(c[k]) or c[k] < 0:
            raise ConfigError("config key '%s': expected an integer >= 0, got %r" % (k, c[k]))
        for name, v in (("src.vocab", v_src), ("tgt.vocab", v_tgt)):
            if v is not None and c[k] >= v:
                raise ConfigError("config key '%s': id %d is outside %s (%d tokens)" % (k, c[k], name, v))
    return c


def dims(c):
    H = c["hidden"]
    K = H * (2 if c["bidirectional"] else 1)
    E = c["emb_dim"]
    if c["attention"] == "none":
        I = E
    elif c["decoder_style"] == "bahdanau":
        I = E + K
    else:
        I = E + H
    return E, H, K, I


def expected_shapes(c, v_src, v_tgt):
    """name -> shape of every parameter the config has (the spec's table)."""
    E, H, K, I = dims(c)
    shapes = {"src_embed.weight": [v_src, E], "tgt_embed.weight": [v_tgt, E]}
    g = 3 if c["cell"] == "gru" else 4

    def rnn(prefix, inp, layers, ndir):
        for l in range(layers):
            for d in range(ndir):
                sfx = "_l%d%s" % (l, "_reverse" if d else "")
                i = inp if l == 0 else H * ndir
                shapes[prefix + ".weight_ih" + sfx] = [g * H, i]
                shapes[prefix + ".weight_hh" + sfx] = [g * H, H]
                shapes[prefix + ".bias_ih" + sfx] = [g * H]
                shapes[prefix + ".bias_hh" + sfx] = [g * H]

    rnn("encoder", E, c["encoder_layers"], 2 if c["bidirectional"] else 1)
    if c["bridge"] == "dense":
        shapes["bridge.weight"] = [c["decoder_layers"] * H, K]
        shapes["bridge.bias"] = [c["decoder_layers"] * H]
    rnn("decoder", I, c["decoder_layers"], 1)
    A = c["attention_dim"]
    if c["attention"] == "additive":
        shapes.update({"attention.W_q.weight": [A, H], "attention.W_q.bias": [A],
                       "attention.W_k.weight": [A, K], "attention.W_k.bias": [A],
                       "attention.v.weight": [1, A]})
    elif c["attention"] == "general":
        shapes["attention.W.weight"] = [K, H]
    if c["local"] is not None and c["local"]["mode"] == "predictive":
        shapes["attention.W_p.weight"] = [H, H]
        shapes["attention.v_p.weight"] = [1, H]
    if c["decoder_style"] == "luong":
        kc = 0 if c["attention"] == "none" else K
        shapes["combine.weight"] = [H, kc + H]
        shapes["combine.bias"] = [H]
    shapes["out.weight"] = [v_tgt, H]
    shapes["out.bias"] = [v_tgt]
    return shapes


class Attention(nn.Module):
    """Scores, masking, local windows and the context for one query per row."""

    def __init__(self, c):
        super().__init__()
        E, H, K, I = dims(c)
        self.kind = c["attention"]
        self.local = c["local"]
        self.H = H
        A = c["attention_dim"]
        if self.kind == "additive":
            self.W_q = nn.Linear(H, A)
            self.W_k = nn.Linear(K, A)
            self.v = nn.Linear(A, 1, bias=False)
        elif self.kind == "general":
            self.W = nn.Linear(H, K, bias=False)
        if self.local is not None and self.local["mode"] == "predictive":
            self.W_p = nn.Linear(H, H, bias=False)
            self.v_p = nn.Linear(H, 1, bias=False)

    def project_keys(self, keys):
        """The query-independent part (W_k h_i + b_k for additive)."""
        return self.W_k(keys) if self.kind == "additive" else None

    def forward(self, q, keys, kproj, src_len, t):
        """q [B,H], keys [B,S,K], src_len [B] long, t = 0-based decoder step.
        Returns c [B,K], a [B,S]."""
        B, S, K = keys.shape
        if self.kind == "additive":
            e = self.v(torch.tanh(self.W_q(q)[:, None, :] + kproj)).squeeze(-1)
        elif self.kind == "dot":
            e = torch.bmm(keys, q[:, :, None]).squeeze(-1)
        elif self.kind == "scaled_dot":
            e = torch.bmm(keys, q[:, :, None]).squeeze(-1) / math.sqrt(self.H)
        elif self.kind == "general":
            e = torch.bmm(keys, self.W(q)[:, :, None]).squeeze(-1)
        elif self.kind == "cosine":
            dot = torch.bmm(keys, q[:, :, None]).squeeze(-1)
            den = torch.clamp(q.norm(dim=-1)[:, None] * keys.norm(dim=-1), min=1e-8)
            e = dot / den
        else:
            raise AssertionError(self.kind)
        idx = torch.arange(S, device=keys.device)
        valid = idx[None, :] < src_len[:, None]
        p = None
        if self.local is not None:
            D = self.local["D"]
            if self.local["mode"] == "monotonic":
                p = torch.full((B,), float(t), dtype=keys.dtype, device=keys.device)
            else:
                p = src_len.to(keys.dtype) * torch.sigmoid(self.v_p(torch.tanh(self.W_p(q))).squeeze(-1))
            valid = valid & ((idx[None, :].to(keys.dtype) - p[:, None]).abs() <= D)
        anyv = valid.any(dim=1, keepdim=True)
        e = e.masked_fill(~valid, float("-inf"))
        e = torch.where(anyv, e, torch.zeros_like(e))  # rows with no valid key: a = 0 below
        a = torch.softmax(e, dim=1) * valid.to(e.dtype)
        if self.local is not None and self.local["mode"] == "predictive":
            sigma = self.local["D"] / 2.0
            dist = idx[None, :].to(keys.dtype) - p[:, None]
            a = a * torch.exp(-(dist * dist) / (2.0 * sigma * sigma))
        c = torch.bmm(a[:, None, :], keys).squeeze(1)
        self.last_p = p
        return c, a


class Seq2Seq(nn.Module):
    def __init__(self, config, v_src, v_tgt):
        super().__init__()
        c = normalize_config(config, v_src, v_tgt)
        self.config = c
        self.v_src, self.v_tgt = v_src, v_tgt
        E, H, K, I = dims(c)
        self.E, self.H, self.K, self.I = E, H, K, I
        rnn = nn.GRU if c["cell"] == "gru" else nn.LSTM
        self.src_embed = nn.Embedding(v_src, E)
        self.tgt_embed = nn.Embedding(v_tgt, E)
        self.encoder = rnn(E, H, c["encoder_layers"], batch_first=True, bidirectional=c["bidirectional"])
        if c["bridge"] == "dense":
            self.bridge = nn.Linear(K, c["decoder_layers"] * H)
        self.decoder = rnn(I, H, c["decoder_layers"], batch_first=True)
        self.has_attn = c["attention"] != "none"
        if self.has_attn:
            self.attention = Attention(c)
        self.luong = c["decoder_style"] == "luong"
        if self.luong:
            self.combine = nn.Linear((K if self.has_attn else 0) + H, H)
        self.out = nn.Linear(H, v_tgt)
        self.is_lstm = c["cell"] == "lstm"

    # ---- encoder ----
    def encode(self, src, src_len):
        """src [B,S] long (anything at padded positions), src_len [B] long.
        Returns keys [B,S,K] (0 at padded positions), h_last [B,K]."""
        B, S = src.shape
        c = self.config
        dt = self.src_embed.weight.dtype  # (not out.weight: a quantized Linear has no tensor there)
        if S == 0:
            return torch.zeros(B, 0, self.K, dtype=dt), torch.zeros(B, self.K, dtype=dt)
        src = torch.where(torch.arange(S)[None, :] < src_len[:, None], src,
                          torch.full_like(src, c["pad_id"]))
        x = self.src_embed(src)
        lens = torch.clamp(src_len, min=1)
        packed = pack_padded_sequence(x, lens.cpu(), batch_first=True, enforce_sorted=False)
        out, hn = self.encoder(packed)
        keys, _ = pad_packed_sequence(out, batch_first=True, total_length=S)
        if self.is_lstm:
            hn = hn[0]
        if c["bidirectional"]:
            h_last = torch.cat([hn[-2], hn[-1]], dim=-1)
        else:
            h_last = hn[-1]
        empty = (src_len == 0)
        if bool(empty.any()):
            keys = keys.masked_fill(empty[:, None, None], 0.0)
            h_last = h_last.masked_fill(empty[:, None], 0.0)
        return keys, h_last

    def init_state(self, h_last):
        B = h_last.shape[0]
        L, H = self.config["decoder_layers"], self.H
        if self.config["bridge"] == "dense":
            s0 = torch.tanh(self.bridge(h_last)).view(B, L, H).transpose(0, 1).contiguous()
        else:
            s0 = torch.zeros(L, B, H, dtype=h_last.dtype)
        if self.is_lstm:
            return (s0, torch.zeros_like(s0))
        return s0

    def top(self, state):
        return (state[0] if self.is_lstm else state)[-1]

    def init_feed(self, B):
        if self.luong and self.has_attn:
            return torch.zeros(B, self.H, dtype=self.src_embed.weight.dtype)
        return None

    def step(self, y, state, feed, keys, kproj, src_len, t):
        """One decoder step for a batch. y [B] long = previous tokens.
        Returns logits [B,V], new state, new feed (luong h~), a [B,S] or None."""
        emb = self.tgt_embed(y)
        a = None
        if not self.luong:
            if self.has_attn:
                ctx, a = self.attention(self.top(state), keys, kproj, src_len, t)
                inp = torch.cat([emb, ctx], dim=-1)
            else:
                inp = emb
            o, state = self.decoder(inp[:, None, :], state)
            s = o[:, 0]
            logits = self.out(s)
            return logits, state, None, a
        inp = torch.cat([emb, feed], dim=-1) if self.has_attn else emb
        o, state = self.decoder(inp[:, None, :], state)
        s = o[:, 0]
        if self.has_attn:
            ctx, a = self.attention(s, keys, kproj, src_len, t)
            ht = torch.tanh(self.combine(torch.cat([ctx, s], dim=-1)))
        else:
            ht = torch.tanh(self.combine(s))
        return self.out(ht), state, ht, a

    def prepare(self, src, src_len):
        keys, h_last = self.encode(src, src_len)
        kproj = self.attention.project_keys(keys) if self.has_attn else None
        return keys, kproj, self.init_state(h_last)

    # ---- training ----
    def forward(self, src, src_len, tgt_in):
        """Teacher forcing: tgt_in [B,T] (BOS then the target). Returns logits [B,T,V]."""
        keys, kproj, state = self.prepare(src, src_len)
        feed = self.init_feed(src.shape[0])
        outs = []
        for t in range(tgt_in.shape[1]):
            logits, state, feed, _ = self.step(tgt_in[:, t], state, feed, keys, kproj, src_len, t)
            outs.append(logits)
        return torch.stack(outs, dim=1)


# ---------------------------------------------------------------- random models


def make_random_model(config, v_src, v_tgt, seed, dtype=torch.float32, out_std=1.0, eos_bias=1.0):
    """A model with random weights wide enough that attention is peaky and the
    output logits are well separated (out.weight ~ N(0, out_std))."""
    g = torch.Generator().manual_seed(int(seed))
    torch.manual_seed(int(seed))
    m = Seq2Seq(config, v_src, v_tgt)
    c = m.config
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("embed.weight"):
                p.copy_(torch.randn(p.shape, generator=g))
            elif name.startswith(("encoder.", "decoder.")):
                p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) * 0.6)
            elif name == "out.weight":
                p.copy_(torch.randn(p.shape, generator=g) * out_std)
            elif name == "out.bias":
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
            elif name in ("attention.W_p.weight", "attention.v_p.weight"):
                # keep the predicted centre p away from the sigmoid's flat ends
                p.copy_(torch.randn(p.shape, generator=g) * (1.0 / math.sqrt(p.shape[-1])))
            elif name.startswith("attention."):
                fan_in = p.shape[-1]
                p.copy_(torch.randn(p.shape, generator=g) * (2.0 / math.sqrt(fan_in)))
            else:
                fan_in = p.shape[-1] if p.dim() > 1 else p.shape[0]
                p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) * (1.5 / math.sqrt(fan_in)))
        m.out.bias[c["eos_id"]] += eos_bias
    m.eval()
    return m.to(dtype)


# ---------------------------------------------------------------- model directory


def read_vocab(path):
    with open(path, "r", encoding="utf-8", newline="") as f:
        data = f.read()
    toks = data.split("\n")
    if toks and toks[-1] == "":
        toks.pop()
    return toks


def write_vocab(path, toks):
    for t in toks:
        if "\n" in t:
            raise ValueError("a vocabulary token cannot contain a newline: %r" % t)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("".join(t + "\n" for t in toks))


def save_model_dir(model, config, src_vocab, tgt_vocab, path):
    os.makedirs(path, exist_ok=True)
    if len(src_vocab) != model.v_src or len(tgt_vocab) != model.v_tgt:
        raise ValueError("vocabulary sizes do not match the model")
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    sd = {k: v.detach().to(torch.float32).contiguous() for k, v in model.state_dict().items()}
    want = expected_shapes(model.config, model.v_src, model.v_tgt)
    assert set(sd) == set(want), (sorted(set(sd) ^ set(want)))
    for k, v in sd.items():
        assert list(v.shape) == want[k], (k, list(v.shape), want[k])
    save_safetensors(os.path.join(path, "weights.safetensors"), sd)
    write_vocab(os.path.join(path, "src.vocab"), src_vocab)
    write_vocab(os.path.join(path, "tgt.vocab"), tgt_vocab)


class Loaded:
    """A loaded model directory: model, config (as written), vocabularies."""

    def __init__(self, model, config, src_vocab, tgt_vocab):
        self.model, self.config = model, config
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.src_index = {}
        for i, t in enumerate(src_vocab):
            self.src_index.setdefault(t, i)

    def tokenize(self, line):
        return tokenize(self.model.config, self.src_index, line)

    def detokenize(self, ids):
        return detokenize(self.model.config, self.tgt_vocab, ids)


def load_model_dir(path, dtype=torch.float32):
    with open(os.path.join(path, "config.json"), "r", encoding="utf-8") as f:
        config = json.load(f)
    src_vocab = read_vocab(os.path.join(path, "src.vocab"))
    tgt_vocab = read_vocab(os.path.join(path, "tgt.vocab"))
    model = Seq2Seq(config, len(src_vocab), len(tgt_vocab))
    w = load_safetensors(os.path.join(path, "weights.safetensors"))
    want = expected_shapes(model.config, len(src_vocab), len(tgt_vocab))
    for k in want:
        if k not in w:
            raise ConfigError("weights: missing tensor '%s' %s" % (k, want[k]))
    for k in w:
        if k not in want:
            raise ConfigError("weights: unexpected tensor '%s' for this config" % k)
        if list(w[k].shape) != want[k]:
            raise ConfigError("weights: tensor '%s' has shape %s, expected %s" % (k, list(w[k].shape), want[k]))
    sd = {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in w.items()}
    model.load_state_dict(sd, strict=True)
    model.eval()
    return Loaded(model.to(dtype), config, src_vocab, tgt_vocab)


# ---------------------------------------------------------------- tokenizers


def split_words(line):
    out, cur = [], []
    for ch in line:
        if ch in ASCII_WS:
            if cur:
                out.append("".join(cur))
                cur = []
        else:
            cur.append(ch)
    if cur:
        out.append("".join(cur))
    return out


def tokenize(c, index, line):
    toks = list(line) if c["tokenizer"] == "chars" else split_words(line)
    return [index.get(t, c["unk_id"]) for t in toks]


def detokenize(c, vocab, ids):
    toks = [vocab[i] for i in ids]
    return "".join(toks) if c["tokenizer"] == "chars" else " ".join(toks)


# ---------------------------------------------------------------- decoding


def default_max_len(src_len):
    return 2 * src_len + 10


def _single_inputs(model, src):
    s = torch.tensor([list(src)], dtype=torch.long).reshape(1, len(src))
    n = torch.tensor([len(src)], dtype=torch.long)
    return s, n


@torch.no_grad()
def greedy_one(model, src, max_len=None, trace=None):
    """Greedy decoding of one source (list of ids). Returns dict tokens (without
    the final EOS), ended (bool), score, attention (list of rows)."""
    c = model.config
    ml = default_max_len(len(src)) if max_len is None else max_len
    s, n = _single_inputs(model, src)
    keys, kproj, state = model.prepare(s, n)
    feed = model.init_feed(1)
    y = torch.tensor([c["bos_id"]])
    toks, attn, score, ended = [], [], 0.0, False
    for t in range(ml):
        logits, state, feed, a = model.step(y, state, feed, keys, kproj, n, t)
        logp = torch.log_softmax(logits, dim=-1)[0]
        best = int(torch.argmax(logp))  # first maximum = lowest id
        if trace is not None:
            trace.append({"kind": "greedy", "t": t, "logp": logp.clone(), "best": best,
                          "p": _last_p(model), "src_len": len(src)})
        score += float(logp[best])
        attn.append([] if a is None else [float(x) for x in a[0, :len(src)]])
        if best == c["eos_id"]:
            ended = True
            break
        toks.append(best)
        y = torch.tensor([best])
    return {"tokens": toks, "ended": ended, "score": score, "attention": attn}


@torch.no_grad()
def greedy_batch(model, sources, max_len=None):
    """Greedy decoding of a padded batch at once (masks finished rows); gives the
    same result per sentence as greedy_one."""
    c = model.config
    B = len(sources)
    S = max([len(x) for x in sources] + [0])
    src = torch.full((B, S), c["pad_id"], dtype=torch.long)
    for b, x in enumerate(sources):
        src[b, :len(x)] = torch.tensor(x, dtype=torch.long)
    n = torch.tensor([len(x) for x in sources], dtype=torch.long)
    mls = [default_max_len(len(x)) if max_len is None else max_len for x in sources]
    keys, kproj, state = model.prepare(src, n)
    feed = model.init_feed(B)
    y = torch.full((B,), c["bos_id"], dtype=torch.long)
    res = [{"tokens": [], "ended": False, "score": 0.0, "attention": []} for _ in range(B)]
    done = [False] * B
    for t in range(max(mls + [0])):
        logits, state, feed, a = model.step(y, state, feed, keys, kproj, n, t)
        logp = torch.log_softmax(logits, dim=-1)
        best = torch.argmax(logp, dim=-1)
        for b in range(B):
            if done[b]:
                continue
            k = int(best[b])
            r = res[b]
            r["score"] += float(logp[b, k])
            r["attention"].append([] if a is None else [float(v) for v in a[b, :len(sources[b])]])
            if k == c["eos_id"]:
                r["ended"] = True
                done[b] = True
            else:
                r["tokens"].append(k)
                if len(r["attention"]) >= mls[b]:
                    done[b] = True
        if all(done):
            break
        y = torch.where(torch.tensor(done), torch.full_like(best, c["eos_id"]), best)
    return res


def _last_p(model):
    """The window centres of the last attention call (local only), else None."""
    if not model.has_attn or model.attention.local is None:
        return None
    return [float(x) for x in model.attention.last_p]


def _index_state(model, state, idx):
    if model.is_lstm:
        return (state[0][:, idx].contiguous(), state[1][:, idx].contiguous())
    return state[:, idx].contiguous()


def _keep_best(finished, k, h):
    """Adds h to the finished list, which keeps the k best by normalised score
    (ties: the one finished first stays); the list stays in finishing order.
    Returns how far h's score is from the worst kept one's when the list was
    full (the margin of that decision), else None."""
    if len(finished) < k:
        finished.append(h)
        return None
    # the worst; among equal scores the last finished
    w = min(range(len(finished)), key=lambda i: (finished[i]["score"], -i))
    gap = h["score"] - finished[w]["score"]
    if gap > 0:
        del finished[w]
        finished.append(h)
    return gap


@torch.no_grad()
def beam_one(model, src, k, alpha=0.0, max_len=None, trace=None):
    """Beam search of one source as in the spec. Returns the finished list sorted
    best first: dicts tokens (without EOS), ended, score (normalised), raw, attention."""
    c = model.config
    eos = c["eos_id"]
    ml = default_max_len(len(src)) if max_len is None else max_len
    s, n = _single_inputs(model, src)
    keys, kproj, state = model.prepare(s, n)
    feed = model.init_feed(1)
    lp = lambda L: ((5.0 + L) / 6.0) ** alpha  # noqa: E731
    live = [{"tokens": [], "raw": 0.0, "attention": []}]
    finished = []
    y = torch.tensor([c["bos_id"]])
    for t in range(ml):
        nl = len(live)
        kk = keys.expand(nl, -1, -1)
        kp = None if kproj is None else kproj.expand(nl, -1, -1)
        nn_ = n.expand(nl)
        logits, state, feed, a = model.step(y, state, feed, kk, kp, nn_, t)
        logp = torch.log_softmax(logits, dim=-1).to(torch.float64)  # exact float32 values
        base = torch.tensor([h["raw"] for h in live], dtype=torch.float64)
        cand = (base[:, None] + logp).reshape(-1)
        V = logp.shape[1]
        # order: score desc, then hypothesis index asc, then token asc (flat index asc)
        order = sorted(range(cand.numel()), key=lambda j: (-float(cand[j]), j))
        m = min(2 * k, cand.numel())
        new_live, sel = [], []
        L = t + 1
        walked = 0
        gaps = []
        for j in order[:m]:
            walked += 1
            hi, tok = divmod(j, V)
            h = live[hi]
            row = [] if a is None else [float(v) for v in a[hi, :len(src)]]
            if tok == eos:
                raw = float(cand[j])
                gaps.append(_keep_best(finished, k, {"tokens": h["tokens"], "ended": True, "raw": raw,
                                                     "score": raw / lp(L), "attention": h["attention"] + [row]}))
            else:
                new_live.append({"tokens": h["tokens"] + [tok], "raw": float(cand[j]),
                                 "attention": h["attention"] + [row]})
                sel.append(hi)
                if len(new_live) == k:
                    break
        bound = worst = None
        if new_live and len(finished) == k and L < ml:
            bound = new_live[0]["raw"] / lp(ml)
            worst = min(f["score"] for f in finished)
        if trace is not None:
            trace.append({"kind": "beam", "t": t, "cands": [float(cand[j]) for j in order[:m + 1]],
                          "walked": walked, "p": _last_p(model), "src_len": len(src),
                          "stop_gap": None if bound is None else bound - worst, "evict_gaps": gaps})
        if not new_live:
            break
        if L == ml:
            for h in new_live:
                g = _keep_best(finished, k, {"tokens": h["tokens"], "ended": False, "raw": h["raw"],
                                             "score": h["raw"] / lp(L), "attention": h["attention"]})
                if trace is not None:
                    trace[-1]["evict_gaps"].append(g)
            break
        if bound is not None and bound <= worst:
            break
        live = new_live
        idx = torch.tensor(sel, dtype=torch.long)
        state = _index_state(model, state, idx)
        if feed is not None:
            feed = feed[idx]
        y = torch.tensor([h["tokens"][-1] for h in live], dtype=torch.long)
    finished.sort(key=lambda h: -h["score"])  # stable: ties keep finishing order
    return finished


def translate(model, sources, beam=1, nbest=1, alpha=0.0, max_len=None):
    """sources: list of id lists. Returns per source a list (n-best, best first)
    of dicts: tokens (ids, no BOS/EOS), score (greedy: raw sum of logp incl.
    EOS; beam: normalised), attention (one row per generated token)."""
    if beam < 1 or nbest < 1 or nbest > beam:
        raise ValueError("need 1 <= nbest <= beam")
    out = []
    for src in sources:
        if beam == 1:
            r = greedy_one(model, src, max_len)
            out.append([{"tokens": r["tokens"], "score": r["score"], "attention": r["attention"],
                         "ended": r["ended"]}])
        else:
            out.append(beam_one(model, src, beam, alpha, max_len)[:nbest])
    return out


# ---------------------------------------------------------------- CLI


def read_lines(stream):
    data = stream.read()
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def cmd_translate(args):
    dt = torch.float64 if args.double else torch.float32
    ld = load_model_dir(args.model, dt)
    inp = io_text(sys.stdin)
    lines = read_lines(inp)
    if args.ids:
        srcs = [[int(x) for x in split_words(ln)] for ln in lines]
        for s in srcs:
            for i in s:
                if not 0 <= i < ld.model.v_src:
                    sys.exit("source id %d is outside src.vocab" % i)
    else:
        srcs = [ld.tokenize(ln) for ln in lines]
    res = translate(ld.model, srcs, beam=args.beam, nbest=args.nbest, alpha=args.alpha, max_len=args.max_len)
    w = io_text(sys.stdout, write=True)
    for si, hyps in enumerate(res):
        for h in hyps:
            txt = " ".join(str(i) for i in h["tokens"]) if args.ids else ld.detokenize(h["tokens"])
            line = ("%d\t" % si if args.nbest > 1 else "") + txt
            if args.scores:
                line += "\t%.6f" % h["score"]
            w.write(line + "\n")
    w.flush()


def io_text(stream, write=False):
    import io
    if write:
        return io.TextIOWrapper(stream.buffer, encoding="utf-8", newline="")
    return io.TextIOWrapper(stream.buffer, encoding="utf-8", newline="")


def random_vocab(c, v, role):
    toks = [None] * v
    for name, idx in zip(SPECIAL_TOKENS, ("pad_id", "bos_id", "eos_id", "unk_id")):
        if c[idx] < v and toks[c[idx]] is None:
            toks[c[idx]] = name
    if c["tokenizer"] == "chars":
        pool = [chr(x) for x in range(ord("a"), ord("z") + 1)] + [chr(x) for x in range(ord("A"), ord("Z") + 1)] \
            + [str(d) for d in range(10)] + list(".,;:-") + [chr(x) for x in range(0xe0, 0x100)]
    else:
        pool = ["%s%d" % (role, i) for i in range(v)]
    it = iter(pool)
    return [t if t is not None else next(it) for t in toks]


def cmd_random(args):
    cfg = json.loads(args.config)
    m = make_random_model(cfg, args.v_src, args.v_tgt, args.seed)
    c = m.config
    save_model_dir(m, cfg, random_vocab(c, args.v_src, "s"), random_vocab(c, args.v_tgt, "t"), args.out)
    print("wrote %s" % args.out)


def numpy_greedy(w, c, src, max_len=None):
    """An independent float64 numpy reading of the spec (greedy only), used by
    the self-test to cross-check the torch modules above."""
    H = c["hidden"]
    bi = c["bidirectional"]
    K = H * (2 if bi else 1)
    sig = lambda x: 1.0 / (1.0 + np.exp(-x))  # noqa: E731
    w = {k: np.asarray(v, dtype=np.float64) for k, v in w.items()}

    def cell(prefix, sfx, x, h, cc):
        Wi, Wh = w[prefix + ".weight_ih" + sfx], w[prefix + ".weight_hh" + sfx]
        bi_, bh = w[prefix + ".bias_ih" + sfx], w[prefix + ".bias_hh" + sfx]
        gi, gh = Wi @ x + bi_, Wh @ h + bh
        if c["cell"] == "gru":
            r = sig(gi[:H] + gh[:H])
            z = sig(gi[H:2 * H] + gh[H:2 * H])
            n = np.tanh(gi[2 * H:] + r * gh[2 * H:])
            return (1 - z) * n + z * h, None
        g = gi + gh
        i, f, gg, o = sig(g[:H]), sig(g[H:2 * H]), np.tanh(g[2 * H:3 * H]), sig(g[3 * H:])
        cc = f * cc + i * gg
        return o * np.tanh(cc), cc

    S = len(src)
    xs = [w["src_embed.weight"][t] for t in src]
    finals = None
    for l in range(c["encoder_layers"]):
        outs, finals = [], []
        for d in range(2 if bi else 1):
            sfx = "_l%d%s" % (l, "_reverse" if d else "")
            h, cc = np.zeros(H), np.zeros(H)
            seq = [None] * S
            for t in (range(S) if d == 0 else reversed(range(S))):
                h, cc = cell("encoder", sfx, xs[t], h, cc)
                seq[t] = h
            outs.append(seq)
            finals.append(h)
        xs = [np.concatenate([o[t] for o in outs]) for t in range(S)]
    keys = np.array(xs).reshape(S, K)
    h_last = np.concatenate(finals) if S else np.zeros(K)
    L = c["decoder_layers"]
    if c["bridge"] == "dense":
        s0 = np.tanh(w["bridge.weight"] @ h_last + w["bridge.bias"])
        hs = [s0[l * H:(l + 1) * H] for l in range(L)]
    else:
        hs = [np.zeros(H) for _ in range(L)]
    cs = [np.zeros(H) for _ in range(L)]
    kind = c["attention"]
    loc = c["local"]

    def attend(q, t):
        if S == 0:
            return np.zeros(K), np.zeros(0)
        if kind == "additive":
            e = np.array([w["attention.v.weight"][0] @ np.tanh(w["attention.W_q.weight"] @ q + w["attention.W_q.bias"]
                                                               + w["attention.W_k.weight"] @ h + w["attention.W_k.bias"])
                          for h in keys])
        elif kind == "dot":
            e = keys @ q
        elif kind == "scaled_dot":
            e = keys @ q / math.sqrt(H)
        elif kind == "general":
            e = keys @ (w["attention.W.weight"] @ q)
        else:
            e = np.array([(q @ h) / max(np.linalg.norm(q) * np.linalg.norm(h), 1e-8) for h in keys])
        valid = np.ones(S, dtype=bool)
        p = None
        if loc is not None:
            if loc["mode"] == "monotonic":
                p = float(t)
            else:
                p = S * sig(w["attention.v_p.weight"][0] @ np.tanh(w["attention.W_p.weight"] @ q))
            valid = np.abs(np.arange(S) - p) <= loc["D"]
        if not valid.any():
            return np.zeros(K), np.zeros(S)
        a = np.zeros(S)
        ev = e[valid] - e[valid].max()
        a[valid] = np.exp(ev) / np.exp(ev).sum()
        if loc is not None and loc["mode"] == "predictive":
            a = a * np.exp(-(np.arange(S) - p) ** 2 / (2 * (loc["D"] / 2.0) ** 2))
        return a @ keys, a

    def run_decoder(x):
        for l in range(L):
            hs[l], cs[l] = cell("decoder", "_l%d" % l, x, hs[l], cs[l])
            x = hs[l]
        return x

    ml = default_max_len(S) if max_len is None else max_len
    y, feed = c["bos_id"], np.zeros(H)
    toks, score, attn, ended = [], 0.0, [], False
    for t in range(ml):
        emb = w["tgt_embed.weight"][y]
        a = None
        if c["decoder_style"] == "bahdanau":
            if kind != "none":
                ctx, a = attend(hs[-1], t)
                emb = np.concatenate([emb, ctx])
            top = run_decoder(emb)
        else:
            if kind != "none":
                emb = np.concatenate([emb, feed])
            st = run_decoder(emb)
            if kind != "none":
                ctx, a = attend(st, t)
                top = np.tanh(w["combine.weight"] @ np.concatenate([ctx, st]) + w["combine.bias"])
            else:
                top = np.tanh(w["combine.weight"] @ st + w["combine.bias"])
            feed = top
        logits = w["out.weight"] @ top + w["out.bias"]
        m = logits.max()
        logp = logits - m - math.log(np.exp(logits - m).sum())
        best = int(np.argmax(logp))
        score += logp[best]
        attn.append([] if a is None else list(a))
        if best == c["eos_id"]:
            ended = True
            break
        toks.append(best)
        y = best
    return {"tokens": toks, "ended": ended, "score": score, "attention": attn}


def selftest():
    rng = np.random.RandomState(0)
    configs = [
        {"emb_dim": 6, "hidden": 8},
        {"cell": "lstm", "emb_dim": 6, "hidden": 8, "bidirectional": True, "encoder_layers": 2,
         "decoder_layers": 2, "attention": "general", "decoder_style": "luong"},
        {"emb_dim": 6, "hidden": 8, "attention": "dot", "local": {"mode": "monotonic", "D": 1}},
        {"emb_dim": 6, "hidden": 8, "attention": "cosine", "local": {"mode": "predictive", "D": 2},
         "decoder_style": "luong", "bridge": "zeros"},
        {"cell": "lstm", "emb_dim": 6, "hidden": 8, "attention": "none", "decoder_style": "luong"},
        {"cell": "gru", "emb_dim": 6, "hidden": 8, "attention": "additive", "attention_dim": 5,
         "bidirectional": True, "encoder_layers": 2, "local": {"mode": "predictive", "D": 3}},
        {"cell": "lstm", "emb_dim": 6, "hidden": 8, "attention": "scaled_dot", "decoder_layers": 3,
         "local": {"mode": "monotonic", "D": 0}, "decoder_style": "luong", "bridge": "zeros"},
        {"cell": "gru", "emb_dim": 6, "hidden": 8, "attention": "none", "bidirectional": True},
    ]
    for i, cfg in enumerate(configs):
        m = make_random_model(cfg, 17, 19, 100 + i)
        srcs = [list(rng.randint(0, 17, size=L)) for L in (5, 1, 9, 3, 0, 7)]
        alone = [greedy_one(m, s) for s in srcs]
        batch = greedy_batch(m, srcs)
        for a, b in zip(alone, batch):
            assert a["tokens"] == b["tokens"] and a["ended"] == b["ended"], (cfg, a, b)
            assert abs(a["score"] - b["score"]) < 1e-4, (a["score"], b["score"])
            assert len(a["attention"]) == len(b["attention"])
            for r1, r2 in zip(a["attention"], b["attention"]):
                assert np.allclose(r1, r2, atol=1e-5)
        for s, a in zip(srcs, alone):
            b1 = beam_one(m, s, 1)
            assert b1[0]["tokens"] == a["tokens"] and abs(b1[0]["score"] - a["score"]) < 1e-9
            bk = beam_one(m, s, 4)
            assert 1 <= len(bk) <= 4
        # an independent numpy reading of the spec agrees
        w = {k: v.detach().numpy() for k, v in m.state_dict().items()}
        for s_, a in zip(srcs, alone):
            r = numpy_greedy(w, m.config, s_)
            assert r["tokens"] == a["tokens"] and r["ended"] == a["ended"], (cfg, r, a)
            assert abs(r["score"] - a["score"]) < 1e-3, (r["score"], a["score"])
            for r1, r2 in zip(r["attention"], a["attention"]):
                assert np.allclose(r1, r2, atol=1e-4), (cfg, r1, r2)
        # padding never matters: junk at padded positions
        s = srcs[0]
        src = torch.tensor([s + [5, 6, 7]])
        k1, h1 = m.encode(src, torch.tensor([len(s)]))
        k2, h2 = m.encode(torch.tensor([s]), torch.tensor([len(s)]))
        assert torch.allclose(k1[:, :len(s)], k2, atol=1e-6) and torch.allclose(h1, h2, atol=1e-6)
    # config validation
    bad = [({"emb_dim": 4, "hidden": 4, "attention": "dot", "bidirectional": True}, "attention"),
           ({"emb_dim": 4}, "hidden"),
           ({"emb_dim": 4, "hidden": 4, "cell": "rnn"}, "cell"),
           ({"emb_dim": 4, "hidden": 4, "local": {"mode": "predictive", "D": 0}}, "local.D"),
           ({"emb_dim": 4, "hidden": 4, "attention": "none", "local": {"mode": "monotonic", "D": 1}}, "local"),
           ({"emb_dim": 4, "hidden": 4, "eos_id": 40}, "eos_id")]
    for cfg, key in bad:
        try:
            normalize_config(cfg, 30, 30)
        except ConfigError as e:
            assert ("'%s'" % key) in str(e), (key, str(e))
        else:
            raise AssertionError("no error for %r" % cfg)
    print("selftest ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("random", help="write a random model directory")
    r.add_argument("--config", required=True, help="config JSON")
    r.add_argument("--out", required=True)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--v-src", type=int, default=24)
    r.add_argument("--v-tgt", type=int, default=24)
    t = sub.add_parser("translate", help="translate stdin")
    t.add_argument("model")
    t.add_argument("--beam", type=int, default=1)
    t.add_argument("--nbest", type=int, default=1)
    t.add_argument("--alpha", type=float, default=0.0)
    t.add_argument("--max-len", type=int, default=None)
    t.add_argument("--ids", action="store_true")
    t.add_argument("--scores", action="store_true")
    t.add_argument("--double", action="store_true", help="compute in float64")
    sub.add_parser("selftest")
    e = sub.add_parser("export-onnx", help="export the encoder and one decoder step to ONNX (s2s_export_onnx.py)")
    e.add_argument("model")
    e.add_argument("out")
    e.add_argument("--opset", type=int, default=17)
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.cmd == "random":
        cmd_random(args)
    elif args.cmd == "export-onnx":
        import s2s_export_onnx  # needs onnx as well; only this command does
        torch.manual_seed(0)
        s2s_export_onnx.export(args.model, args.out, args.opset)
    elif args.cmd == "translate":
        if args.nbest > args.beam:
            sys.exit("--nbest must not exceed --beam")
        cmd_translate(args)
    else:
        selftest()


if __name__ == "__main__":
    main()
