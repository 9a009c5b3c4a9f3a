#!/usr/bin/env python3
"""The model corpus of issue 31 ("bring your own model"): the models users
export from PyTorch, transformers and torchvision, and the ONNX files
silero-vad ships, each written in ONNX's backend-test layout with ONNX
Runtime's outputs as the expected values, then run by `clgraph onnx-test` on
each device, timed against ONNX Runtime, and summed up in one markdown table.

    python3 tools/py/onnx_corpus.py OUT_DIR [--filter RE] [--devices cpu,opencl:0]
        [--table FILE] [--reuse] [--no-timing] [--ci-slice DIR] [--clgraph PATH]

Every model comes from a PyPI package, built from a small hand-written config
with random weights and a fixed seed (derived from the model's name, so
--filter does not change the others); nothing is downloaded at run time:

- transformers MarianMT, BART, T5 and Whisper (2 + 2 layers, d_model 32,
  vocabulary 128) as an encoder and one decoder step (decoder input ids
  [B, T], encoder hidden states [B, S, D] and, but for Whisper, the source's
  attention mask [B, S]; no past key values); BERT (BertModel) and GPT-2
  (GPT2LMHeadModel) as one graph each. Whisper's encoder takes mel features
  of the one length its config fixes (2 x max_source_positions), so only
  its batch is dynamic.
- torchvision resnet18 and mobilenet_v3_small (weights=None, 10 classes;
  mobilenet at width_mult 0.5; batch-norm statistics randomised so that
  they are not the identity, Linear layers at PyTorch's default init),
  [B, 3, 64, 64], batch dynamic. resnet18 is 45 MB: its widths are fixed
  by the architecture; every other export is under 2 MB.
- torch nn.LSTM and nn.GRU (2 layers, bidirectional, batch_first) and
  nn.Transformer (d_model 32, 4 heads, 2 + 2 layers, causal target mask,
  key padding masks).
- silero-vad's ONNX files, as shipped inside its wheel (silero_vad/data/).

Each PyTorch model is exported twice: by the TorchScript exporter
(dynamo=False, opset 17, dynamic_axes) and by the dynamo exporter
(dynamo=True, its default opset, dynamic_shapes), batch and lengths dynamic.
Each gets two input bindings (test_data_set_0 and _1) that differ in batch
and lengths. The dynamo exporter's per-node metadata (stack traces with
local paths, most of its bytes) is dropped. OUT_DIR/NAME/corpus.json records
how the model was made; an export that fails in PyTorch, a binding ONNX
Runtime cannot run, or ONNX Runtime's outputs differing from eager
PyTorch's past the tolerances, is recorded as such (not clgraph's). Each
module runs in eager PyTorch on its example before the export, so a
mistake of this script is not taken for an exporter's failure.

Then, per model: `clgraph check` (does it import as given, no input values),
`clgraph onnx-test --one-plan` on each device (imported once, no input
values given, both bindings through one plan; where that is refused, again
with the inputs given at import, "pass (given)" in the table) with rtol
1e-3, atol 1e-4 and
CLGRAPH_CHECK_RUNS=1 (every plan run is repeated twice, a run of another
binding in between, and must give the same bits: onnx-test itself runs
each plan once), and for each device where it passes, `clgraph run --repeat`
against ONNX Runtime's `InferenceSession.run` on the second binding,
interleaved (a clgraph process, then ONNX Runtime, three rounds), the median
ms per run. The table goes to stdout, and with --table FILE between the
lines <!-- corpus-table --> and <!-- /corpus-table --> of FILE (docs/onnx.md,
"Models users bring"). --filter RE builds and runs only the models whose
name matches; the table keeps the last results of the others OUT_DIR holds.
--reuse skips the exports and runs what OUT_DIR holds; --no-timing skips
the timing; --ci-slice DIR copies the models of CI_SLICE that pass on every
device given into DIR (tests/data/onnx/corpus, which `meson test onnx`
runs).

Needs (a virtual environment; the versions this was written with):
torch 2.15.0, onnx 1.23.2, onnxscript 0.7.2, onnxruntime 1.32.0, numpy
2.4.6, transformers 5.24.0, torchvision 0.29.2 (PyPI's newest; it asks for
torch >= 2.14 and its C++ ops load under 2.15), silero-vad 6.2.3:

    pip install torch torchvision --index-url https://download.pytorch.org/whl/cpu
    pip install onnx onnxscript onnxruntime transformers silero-vad

Exit status 0 unless clgraph gives a wrong answer (a FAIL or ERROR row of
onnx-test) or a tool breaks; refusals ("unsupported") are the table's
content, not an error."""
import argparse
import contextlib
import glob
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

ort.set_default_logger_severity(4)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RTOL, ATOL = 1e-3, 1e-4
# tests/data/onnx/corpus (--ci-slice DIR): the models `meson test onnx` runs on
# every device; --ci-slice copies those that pass on every device given
CI_SLICE = ["transformer_dynamo", "lstm_ts", "lstm_dynamo", "gru_ts", "gru_dynamo", "bert_ts", "bert_dynamo",
            "gpt2_dynamo", "marian_encoder_dynamo", "mobilenet_v3_small_ts", "silero_vad_16k_op15"]
ROUNDS, REPEAT = 3, 5  # timing: rounds of (clgraph --repeat REPEAT, ORT REPEAT runs)

# ---------------------------------------------------------------------------
# the models


class Spec:
    """One exported model: `make()` returns (module, example inputs as a
    tuple of tensors); inputs: [(name, {axis: dim name})]; outputs likewise;
    bindings: two {input name: numpy array}."""

    def __init__(self, name, family, make, inputs, outputs, bindings, exporters=("ts", "dynamo")):
        self.name, self.family, self.make = name, family, make
        self.inputs, self.outputs, self.bindings, self.exporters = inputs, outputs, bindings, exporters


def seed_for(name):
    import torch
    torch.manual_seed(zlib.crc32(name.encode()))
    return np.random.default_rng(zlib.crc32(name.encode()))


def ids(rng, B, T, V=128):
    return rng.integers(3, V, (B, T)).astype(np.int64)


def mask(B, S, lens):
    m = np.zeros((B, S), np.int64)
    for b, n in enumerate(lens):
        m[b, :n] = 1
    return m


class Wrap:
    """An nn.Module whose forward(*inputs) is fn(owner, *inputs)."""

    @staticmethod
    def module(fn, owner):
        import torch

        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = owner

            def forward(self, *a):
                return fn(self.m, *a)

        return M().eval()


V, D = 128, 32
# (B, S, T, source lengths): two bindings, and the export's example
BIND = [(1, 6, 3, [6]), (3, 9, 5, [9, 4, 7])]
EXAMPLE = (2, 5, 4, [5, 3])


def seq2seq_specs(family, build, enc_attn_mask=True, whisper=False):
    """Encoder and decoder step of a transformers encoder-decoder model."""
    import torch
    holder = {}

    def model():
        if "m" not in holder:
            seed_for(family)
            holder["m"] = build().eval()
        return holder["m"]

    rng = seed_for(family + "/data")
    B, S, T, lens = EXAMPLE
    if whisper:
        n = 2 * 16  # 2 x max_source_positions: the one length Whisper's encoder takes
        enc_bind = [{"input_features": rng.standard_normal((b, 8, n)).astype(np.float32)} for b, *_ in BIND]
        enc_ex = (torch.randn(B, 8, n),)
        enc = Spec(family + "_encoder", family,
                   lambda: (Wrap.module(lambda m, x: m.model.encoder(input_features=x).last_hidden_state, model()),
                            enc_ex),
                   [("input_features", {0: "batch"})], [("last_hidden_state", {0: "batch"})], enc_bind)
    else:
        enc_bind = [{"input_ids": ids(rng, b, s), "attention_mask": mask(b, s, ln)} for b, s, t, ln in BIND]
        enc_ex = (torch.from_numpy(ids(rng, B, S)), torch.from_numpy(mask(B, S, lens)))

        def encode(m, i, a):
            return m.get_encoder()(input_ids=i, attention_mask=a).last_hidden_state
        enc = Spec(family + "_encoder", family, lambda: (Wrap.module(encode, model()), enc_ex),
                   [("input_ids", {0: "batch", 1: "src_len"}), ("attention_mask", {0: "batch", 1: "src_len"})],
                   [("last_hidden_state", {0: "batch", 1: "src_len"})], enc_bind)
    dec_bind = []
    for B, S, T, lens in BIND:
        f = {"decoder_input_ids": ids(rng, B, T),
             "encoder_hidden_states": rng.standard_normal((B, S, D)).astype(np.float32)}
        if enc_attn_mask:
            f["attention_mask"] = mask(B, S, lens)
        dec_bind.append(f)
    B, S, T, lens = EXAMPLE
    dec_ex = [torch.from_numpy(ids(rng, B, T)), torch.randn(B, S, D)]
    dec_inputs = [("decoder_input_ids", {0: "batch", 1: "tgt_len"}),
                  ("encoder_hidden_states", {0: "batch", 1: "src_len"})]
    if enc_attn_mask:
        dec_ex.append(torch.from_numpy(mask(B, S, lens)))
        dec_inputs.append(("attention_mask", {0: "batch", 1: "src_len"}))

        def step(m, i, h, a):
            return m(encoder_outputs=(h,), attention_mask=a, decoder_input_ids=i, use_cache=False).logits
    else:
        def step(m, i, h):
            return m(encoder_outputs=(h,), decoder_input_ids=i, use_cache=False).logits
    dec = Spec(family + "_decoder", family, lambda: (Wrap.module(step, model()), tuple(dec_ex)), dec_inputs,
               [("logits", {0: "batch", 1: "tgt_len"})], dec_bind)
    return [enc, dec]


def transformers_specs():
    import torch
    import transformers as tr
    small = dict(d_model=D, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                 encoder_ffn_dim=64, decoder_ffn_dim=64)
    specs = []
    specs += seq2seq_specs("marian", lambda: tr.MarianMTModel(tr.MarianConfig(
        vocab_size=V, decoder_vocab_size=V, max_position_embeddings=64, pad_token_id=0, eos_token_id=1,
        decoder_start_token_id=0, **small)))
    specs += seq2seq_specs("bart", lambda: tr.BartForConditionalGeneration(tr.BartConfig(
        vocab_size=V, max_position_embeddings=64, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        decoder_start_token_id=2, **small)))
    specs += seq2seq_specs("t5", lambda: tr.T5ForConditionalGeneration(tr.T5Config(
        vocab_size=V, d_model=D, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
        relative_attention_num_buckets=8, relative_attention_max_distance=16, pad_token_id=0, eos_token_id=1,
        decoder_start_token_id=0)))
    specs += seq2seq_specs("whisper", lambda: tr.WhisperForConditionalGeneration(tr.WhisperConfig(
        vocab_size=V, num_mel_bins=8, max_source_positions=16, max_target_positions=32, pad_token_id=0,
        bos_token_id=1, eos_token_id=2, decoder_start_token_id=1, suppress_tokens=[], begin_suppress_tokens=[],
        **small)), enc_attn_mask=False, whisper=True)

    rng = seed_for("bert/data")
    bert_bind = [{"input_ids": ids(rng, B, S), "attention_mask": mask(B, S, lens),
                  "token_type_ids": (np.arange(S)[None, :] >= S // 2).repeat(B, 0).astype(np.int64)}
                 for B, S, T, lens in BIND]

    B, S, T, lens = EXAMPLE
    bert_ex = (torch.from_numpy(ids(rng, B, S)), torch.from_numpy(mask(B, S, lens)),
               torch.zeros(B, S, dtype=torch.int64))

    def bert():
        seed_for("bert")
        m = tr.BertModel(tr.BertConfig(vocab_size=V, hidden_size=D, num_hidden_layers=2, num_attention_heads=4,
                                       intermediate_size=64, max_position_embeddings=64, type_vocab_size=2)).eval()

        def fwd(m, i, a, t):
            o = m(input_ids=i, attention_mask=a, token_type_ids=t)
            return o.last_hidden_state, o.pooler_output
        return Wrap.module(fwd, m), bert_ex
    specs.append(Spec("bert", "bert", bert, [(n, {0: "batch", 1: "seq_len"}) for n in
                                             ("input_ids", "attention_mask", "token_type_ids")],
                      [("last_hidden_state", {0: "batch", 1: "seq_len"}), ("pooler_output", {0: "batch"})], bert_bind))

    rng = seed_for("gpt2/data")
    gpt_bind = [{"input_ids": ids(rng, b, s), "attention_mask": mask(b, s, ln)} for b, s, t, ln in BIND]
    gpt_ex = (torch.from_numpy(ids(rng, B, S)), torch.from_numpy(mask(B, S, lens)))

    def gpt2():
        seed_for("gpt2")
        m = tr.GPT2LMHeadModel(tr.GPT2Config(vocab_size=V, n_positions=64, n_embd=D, n_layer=2, n_head=4,
                                             bos_token_id=0, eos_token_id=0)).eval()
        return Wrap.module(lambda m, i, a: m(input_ids=i, attention_mask=a, use_cache=False).logits, m), gpt_ex
    specs.append(Spec("gpt2", "gpt2", gpt2, [(n, {0: "batch", 1: "seq_len"}) for n in ("input_ids", "attention_mask")],
                      [("logits", {0: "batch", 1: "seq_len"})], gpt_bind))
    return specs


def torchvision_specs():
    import torch
    import torchvision
    specs = []
    for name, build in (("resnet18", lambda: torchvision.models.resnet18(weights=None, num_classes=10)),
                        ("mobilenet_v3_small", lambda: torchvision.models.mobilenet_v3_small(
                            weights=None, num_classes=10, width_mult=0.5))):
        rng = seed_for(name + "/data")
        bind = [{"images": rng.standard_normal((B, 3, 64, 64)).astype(np.float32)} for B in (1, 3)]

        def make(name=name, build=build):
            seed_for(name)
            m = build().eval()
            for mod in m.modules():
                # PyTorch's default init for Linear: mobilenet's classifier
                # is drawn from N(0, 0.01), logits of 1e-2, which atol 1e-4
                # hardly tells apart; trained-looking batch-norm statistics
                if isinstance(mod, torch.nn.Linear):
                    mod.reset_parameters()
                if isinstance(mod, torch.nn.BatchNorm2d):
                    mod.running_mean.uniform_(-0.5, 0.5)
                    mod.running_var.uniform_(0.5, 2.0)
                    mod.weight.data.uniform_(0.5, 1.5)
                    mod.bias.data.uniform_(-0.5, 0.5)
            return Wrap.module(lambda m, x: m(x), m), (torch.randn(2, 3, 64, 64),)
        specs.append(Spec(name, "torchvision", make, [("images", {0: "batch"})], [("logits", {0: "batch"})], bind))
    return specs


def torch_specs():
    import torch
    from torch import nn
    specs = []
    for kind in ("lstm", "gru"):
        rng = seed_for(kind + "/data")
        bind = [{"x": rng.standard_normal((B, S, 16)).astype(np.float32)} for B, S, T, lens in BIND]

        def make(kind=kind):
            seed_for(kind)
            cls = nn.LSTM if kind == "lstm" else nn.GRU
            rnn = cls(16, 32, num_layers=2, bidirectional=True, batch_first=True)
            if kind == "lstm":
                fn = lambda m, x: (lambda y, hc: (y, hc[0], hc[1]))(*m(x))  # noqa: E731
            else:
                fn = lambda m, x: m(x)  # noqa: E731
            return Wrap.module(fn, rnn), (torch.randn(EXAMPLE[0], EXAMPLE[1], 16),)
        outs = [("y", {0: "batch", 1: "seq_len"}), ("h", {1: "batch"})]
        if kind == "lstm":
            outs.append(("c", {1: "batch"}))
        specs.append(Spec(kind, "torch", make, [("x", {0: "batch", 1: "seq_len"})], outs, bind))

    rng = seed_for("transformer/data")
    bind = [{"src": rng.standard_normal((B, S, D)).astype(np.float32),
             "tgt": rng.standard_normal((B, T, D)).astype(np.float32),
             "src_pad": mask(B, S, lens) == 0} for B, S, T, lens in BIND]

    def transformer():
        seed_for("transformer")
        t = nn.Transformer(d_model=D, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=64,
                           dropout=0.0, batch_first=True)

        def fwd(m, src, tgt, pad):
            causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
            return m(src, tgt, tgt_mask=causal, src_key_padding_mask=pad, memory_key_padding_mask=pad,
                     tgt_is_causal=True)
        B, S, T, lens = EXAMPLE
        return Wrap.module(fwd, t), (torch.randn(B, S, D), torch.randn(B, T, D),
                                     torch.from_numpy(mask(B, S, lens) == 0))
    specs.append(Spec("transformer", "torch", transformer,
                      [("src", {0: "batch", 1: "src_len"}), ("tgt", {0: "batch", 1: "tgt_len"}),
                       ("src_pad", {0: "batch", 1: "src_len"})], [("out", {0: "batch", 1: "tgt_len"})], bind))
    return specs


def silero_models():
    """(name, path, two bindings) for each ONNX file in silero-vad's wheel:
    16 kHz chunks of 512 samples with the 64 of context the package's
    OnnxWrapper puts before each (576): a state of zeros, then a random one;
    batch 1 and 3 (the sequence model: 2 and 5 chunks; the OpenVINO one
    takes batch 1 only). A model whose `sr` input picks a branch (an Equal
    reads it: silero_vad.onnx's 16 or 8 kHz network) gets 8 kHz chunks the
    second time (256 samples and 32 of context: 288)."""
    import silero_vad
    data = os.path.join(os.path.dirname(silero_vad.__file__), "data")
    out = []
    rng = seed_for("silero/data")
    for path in sorted(glob.glob(os.path.join(data, "*.onnx"))):
        base = os.path.basename(path)[:-5]
        m = onnx.load(path, load_external_data=False)
        names = [i.name for i in m.graph.input]
        fixed_batch = m.graph.input[0].type.tensor_type.shape.dim[0].dim_value
        bind = []
        sr_mode = any(n.op_type == "Equal" and "sr" in n.input for n in m.graph.node)
        for B in ((1, 1) if fixed_batch == 1 else (1, 3) if "sequence" not in base else (2, 5)):
            sr = 8000 if bind and sr_mode else 16000
            n = 576 * sr // 16000
            t = np.arange(n) / float(sr)
            audio = 0.3 * np.sin(2 * np.pi * 220 * t)[None, :] + 0.1 * rng.standard_normal((B, n))
            f = {"input": audio.astype(np.float32)}

            def state(*shape):
                return (0.1 * rng.standard_normal(shape) if bind else np.zeros(shape)).astype(np.float32)
            if "state" in names:
                f["state"] = state(2, B, 128)
            if "h" in names:
                f["h"], f["c"] = state(1, 1, 128), state(1, 1, 128)
            if "sr" in names:
                f["sr"] = np.array(sr, np.int64)
            bind.append(f)
        out.append((base, path, bind))
    return out


# ---------------------------------------------------------------------------
# export and expected values


def first_line(e):
    """The root cause's first line (the dynamo exporter wraps torch.export's
    error in a TorchExportError whose first line says only that)."""
    while e.__cause__ is not None:
        e = e.__cause__
    s = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip()
    lines = [ln.strip() for ln in s.splitlines() if ln.strip()]
    line = lines[0] if lines else ""
    # ONNX Runtime's: the node, then the message without the source location
    m = re.search(r"running (\w+) node\. Name:'([^']*)' Status Message: (?:\S+:\d+ \S+\(.*?\) (?:const )?)?(.*)", line)
    if m:
        line = "node '%s' (%s): %s" % (m.group(2), m.group(1), m.group(3))
    return (type(e).__name__ + ": " + line)[:400]


@contextlib.contextmanager
def quiet():
    """stdout and stderr, of Python and of the C++ below it, into a
    temporary file (the TorchScript exporter prints the whole graph when it
    fails; both exporters print progress)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")
                yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


class ExportError(Exception):
    """torch.onnx.export failed (PyTorch's, not this script's nor clgraph's)."""


def export(spec, exporter, path):
    """The TorchScript (ts) or dynamo export of spec to path (one file).
    Returns PyTorch's eager outputs of a binding (a function of the feed).
    The module runs in eager PyTorch on its example first, outside the
    exporter: a failure there is this script's and is raised as such."""
    import torch
    in_names = [n for n, _ in spec.inputs]
    out_names = [n for n, _ in spec.outputs]
    tmp = path + ".tmp.onnx"
    with quiet():
        module, example = spec.make()
        with torch.no_grad():
            module(*example)
        try:
            if exporter == "ts":
                axes = {n: dict(a) for n, a in spec.inputs + spec.outputs if a}
                torch.onnx.export(module, example, tmp, input_names=in_names, output_names=out_names,
                                  dynamic_axes=axes, opset_version=17, dynamo=False)
            else:
                dims = {}
                shapes = tuple({k: dims.setdefault(v, torch.export.Dim(v)) for k, v in a.items()} or None
                               for n, a in spec.inputs)
                # the wrappers' forward(*a): one argument, the tuple of inputs
                torch.onnx.export(module, example, tmp, input_names=in_names, output_names=out_names,
                                  dynamic_shapes=(shapes,), dynamo=True)
        except Exception as e:  # noqa: BLE001
            raise ExportError(first_line(e)) from e
    m = onnx.load(tmp)  # external data (the dynamo exporter's) read in
    for n in m.graph.node:  # the dynamo exporter's stack traces: local paths, most of the bytes
        del n.metadata_props[:]
    onnx.save(m, path)
    for f in (tmp, tmp + ".data"):
        if os.path.exists(f):
            os.remove(f)

    def reference(feed):
        with torch.no_grad():
            y = module(*[torch.from_numpy(feed[n]) for n in in_names])
        return [t.numpy() for t in (y if isinstance(y, (tuple, list)) else (y,))]
    return reference


def ort_session(path, threads=None, spinning=None):
    """ONNX Runtime's CPU provider, quiet: at its default settings, or with
    `threads` intra-op threads (inter-op 1) and its pool's spinning on or
    off (tools/py/bench/onnx_corpus_bench.py)."""
    o = ort.SessionOptions()
    o.log_severity_level = 4
    if threads:
        o.intra_op_num_threads = threads
        o.inter_op_num_threads = 1
    if spinning is not None:
        o.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    return ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])


def write_data(d, model_path, bindings, info, reference=None):
    """ONNX Runtime's outputs on each binding, as test_data_set_K; a binding
    ONNX Runtime refuses is noted in info and not written. With reference
    (PyTorch's eager outputs), the largest difference from ONNX Runtime's
    is recorded, and noted where it is past the tolerances (an exporter's or
    ONNX Runtime's error: clgraph is compared with ONNX Runtime)."""
    try:
        sess = ort_session(model_path)
    except Exception as e:  # noqa: BLE001
        info["ort"] = "ONNX Runtime cannot load it: " + first_line(e)
        return
    outs = [o.name for o in sess.get_outputs()]
    k = 0
    for j, feed in enumerate(bindings):
        try:
            got = sess.run(outs, feed)
        except Exception as e:  # noqa: BLE001
            info.setdefault("ort", "ONNX Runtime fails on binding %d (%s): %s" % (j, shape_str(feed), first_line(e)))
            continue
        if reference:
            for n, r, g in zip(outs, reference(feed), got):
                err = float(np.max(np.abs(r.astype(np.float64) - g), initial=0.0))
                info["torch_vs_ort"] = max(info.get("torch_vs_ort", 0.0), err)
                if not np.allclose(g, r, rtol=RTOL, atol=ATOL):
                    info.setdefault("ort", "ONNX Runtime differs from PyTorch on binding %d, output %s, by %.2g" % (
                        j, n, err))
        sd = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(sd, exist_ok=True)
        for kind, names, vals in (("input", list(feed), list(feed.values())), ("output", outs, got)):
            for i, (n, a) in enumerate(zip(names, vals)):
                with open(os.path.join(sd, "%s_%d.pb" % (kind, i)), "wb") as f:
                    # np.ascontiguousarray would make a scalar 1-D (silero's sr)
                    f.write(numpy_helper.from_array(np.array(a, order="C", copy=True), n).SerializeToString())
        k += 1
    info["sets"] = k


def shape_str(feed):
    return ", ".join("%s %s" % (n, list(a.shape)) for n, a in feed.items())


def opset_of(path):
    try:
        m = onnx.load(path, load_external_data=False)
        return next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), None)
    except Exception:  # noqa: BLE001
        return None


def build_model(out, name, family, exporter, write_model, bindings):
    d = os.path.join(out, name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    info = {"name": name, "family": family, "exporter": exporter}
    path = os.path.join(d, "model.onnx")
    t0 = time.time()
    reference = None
    try:
        reference = write_model(path)
    except ExportError as e:
        info["export"] = "PyTorch's export fails: " + str(e)
        if os.environ.get("CORPUS_TRACE"):
            traceback.print_exc()
    if "export" not in info:
        info["opset"] = opset_of(path)
        info["bytes"] = os.path.getsize(path)
        write_data(d, path, bindings, info, reference)
    with open(os.path.join(d, "corpus.json"), "w") as f:
        json.dump(info, f, indent=1)
    print("%-34s %-7s %5.1fs %s" % (name, exporter, time.time() - t0,
                                    info.get("export") or info.get("ort") or "%d bytes, opset %s, %d sets" % (
                                        info["bytes"], info["opset"], info["sets"])), flush=True)


def shipped(src, path):
    """A model as its package ships it: copied; no PyTorch reference."""
    shutil.copyfile(src, path)
    return None


def build_all(out, flt):
    import torch
    torch.set_num_threads(2)
    specs = []
    for group in (transformers_specs, torchvision_specs, torch_specs):
        specs += group()
    for spec in specs:
        for exporter in spec.exporters:
            name = "%s_%s" % (spec.name, exporter)
            if flt and not re.search(flt, name):
                continue
            build_model(out, name, spec.family, exporter, lambda p, s=spec, e=exporter: export(s, e, p), spec.bindings)
    for base, src, bind in silero_models():
        if flt and not re.search(flt, base):
            continue
        build_model(out, base, "silero-vad", "shipped", lambda p, s=src: shipped(s, p), bind)


# ---------------------------------------------------------------------------
# clgraph against the expected values and ONNX Runtime


def clgraph(args, exe, env=None, timeout=900):
    try:
        r = subprocess.run([exe] + args, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %d s" % timeout
    return r.returncode, r.stdout, r.stderr


def one_line(s):
    lines = [ln for ln in s.strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


def short_reason(r):
    """The importer's line without the folder of the model."""
    return re.sub(r"^(clgraph: )?\S*model\.onnx: ", "", r.strip())


def read_sets(d):
    sets = []
    for sd in sorted(glob.glob(os.path.join(d, "test_data_set_*")), key=lambda p: int(p.rsplit("_", 1)[1])):
        feed = {}
        for p in sorted(glob.glob(os.path.join(sd, "input_*.pb")), key=lambda p: int(p.rsplit("_", 1)[1][:-3])):
            t = onnx.TensorProto()
            with open(p, "rb") as f:
                t.ParseFromString(f.read())
            feed[t.name] = numpy_helper.to_array(t)
        sets.append(feed)
    return sets


def run_args(d, feed, tmp):
    """`clgraph run` of d/model.onnx on feed, its arrays saved as .npy in tmp."""
    args = ["run", os.path.join(d, "model.onnx")]
    for n, a in feed.items():
        p = os.path.join(tmp, n + ".npy")
        np.save(p, a)
        args += ["--input", "%s=%s" % (n, p)]
    return args


def run_repeat(args, exe, repeat, device, env=None):
    """(median, fastest, None) ms of `clgraph run ... --repeat`'s warm runs,
    or (None, None, clgraph's last line) where it fails."""
    rc, out, err = clgraph(args + ["--device", device, "--repeat", str(repeat)], exe, env=env)
    m = re.search(r"median ([0-9.]+) ms, fastest ([0-9.]+) ms", err)
    if rc or not m:
        return None, None, one_line(err) or "no times (exit %d)" % rc
    return float(m.group(1)), float(m.group(2)), None


def ort_ms(run, n):
    """ms of each of n calls of run() (an ONNX Runtime session's run)."""
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        run()
        ts.append((time.perf_counter() - t0) * 1e3)
    return ts


def time_model(d, device, exe, tmp):
    """Median ms per run of clgraph (warm plan, `run --repeat`) and of ONNX
    Runtime on the model's last binding, interleaved over ROUNDS rounds."""
    feed = read_sets(d)[-1]
    args = run_args(d, feed, tmp)
    sess = ort_session(os.path.join(d, "model.onnx"))
    sess.run(None, feed)  # warm-up
    cg, rt = [], []
    for _ in range(ROUNDS):
        ms, _, why = run_repeat(args, exe, REPEAT, device)
        if why:
            return None, None, why
        cg.append(ms)
        rt.append(statistics.median(ort_ms(lambda: sess.run(None, feed), REPEAT)))
    return statistics.median(cg), statistics.median(rt), None


def run_model(d, devices, exe, timing):
    """clgraph on the model in d: its results into d/corpus.json."""
    with open(os.path.join(d, "corpus.json")) as f:
        info = json.load(f)
    info["result"] = run_clgraph(d, info, devices, exe, timing)
    with open(os.path.join(d, "corpus.json"), "w") as f:
        json.dump(info, f, indent=1)
    return info


def run_clgraph(d, info, devices, exe, timing):
    res = {"devices": {}}
    if info.get("export"):
        return res
    rc, out, err = clgraph(["check", os.path.join(d, "model.onnx")], exe)
    res["imports"] = rc == 0
    if rc:
        res["import_error"] = short_reason(one_line(err))
    if not info.get("sets"):
        return res
    env = dict(os.environ, CLGRAPH_CHECK_RUNS="1")
    # --one-plan first: imported once with no input values, both bindings
    # through one plan (as an application runs it); where that is refused,
    # again with each data set's inputs given at import (the importer then
    # decides what they decide: silero's sample-rate and shape Ifs), marked
    # "given" in the table
    rc, out, err = run_onnx_test(d, devices, exe, env, ["--one-plan"], res)
    retry = [dev for dev in devices if res["devices"].get(dev, {}).get("result") == "unsupported"]
    if retry:
        first = dict(res["devices"])
        rc, out, err = run_onnx_test(d, retry, exe, env, [], res)
        for dev in retry:
            if res["devices"].get(dev, {}).get("result") == "pass":
                res["devices"][dev]["given"] = True
            else:
                res["devices"][dev] = first[dev]
    for dev in devices:
        if dev not in res["devices"]:
            res["devices"][dev] = {"result": "ERROR", "max_error": None,
                                   "reason": one_line(err) or "no result (exit %d)" % rc}
    if timing:
        with tempfile.TemporaryDirectory() as tmp:
            for dev in devices:
                r = res["devices"][dev]
                if r["result"] == "pass":
                    r["ms"], r["ort_ms"], why = time_model(d, dev, exe, tmp)
                    if why:
                        r["time_error"] = why
    return res


def run_onnx_test(d, devices, exe, env, extra, res):
    args = ["onnx-test", d, "--rtol", str(RTOL), "--atol", str(ATOL)] + extra
    for dev in devices:
        args += ["--device", dev]
    rc, out, err = clgraph(args, exe, env=env)
    for line in out.splitlines()[1:]:
        parts = line.split(None, 4)
        if len(parts) >= 4 and parts[1] in devices:
            res["devices"][parts[1]] = {"result": parts[2], "max_error": None if parts[3] == "-" else float(parts[3]),
                                        "reason": short_reason(parts[4]) if len(parts) > 4 else ""}
    return rc, out, err


EXPORTER = {"ts": "TorchScript", "dynamo": "dynamo", "shipped": "as shipped"}


def cell(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def table(infos, devices):
    head = ["model", "exporter", "opset", "imports?"] + devices + ["max error", "ms clgraph vs ORT", "first refusal"]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for i in infos:
        r = i.get("result", {})
        dv = r.get("devices", {})
        name = re.sub(r"_(ts|dynamo)$", "", i["name"])
        imports = "-" if "imports" not in r else "yes" if r["imports"] else "no"
        results = [dv.get(d, {}).get("result", "-") + (" (given)" if dv.get(d, {}).get("given") else "")
                   for d in devices]
        errs = [dv[d]["max_error"] for d in devices if d in dv and dv[d].get("max_error") is not None]
        times = ["%s %.3g" % (d, dv[d]["ms"]) for d in devices if dv.get(d, {}).get("ms") is not None]
        ort_ms = [dv[d]["ort_ms"] for d in devices if dv.get(d, {}).get("ort_ms") is not None]
        ms = ", ".join(times) + (" vs ORT %.3g" % statistics.median(ort_ms) if ort_ms else "") if times else "-"
        why = i.get("export") or ""
        if not why and r.get("import_error"):
            why = r["import_error"]
        if not why:
            why = next((dv[d]["reason"] for d in devices
                        if d in dv and dv[d]["result"] != "pass" and dv[d]["reason"]), "")
        if i.get("ort"):
            why = (why + "; " if why else "") + i["ort"]
        rows.append("| " + " | ".join(cell(c) for c in [
            name, EXPORTER.get(i["exporter"], i["exporter"]), i.get("opset") or "-", imports] + results + [
            "%.1e" % max(errs) if errs else "-", ms, why or "-"]) + " |")
    return "\n".join(rows)


def write_table(path, text, a="<!-- corpus-table -->", b="<!-- /corpus-table -->", who="onnx_corpus.py"):
    """text into the file at path, between its lines a and b."""
    with open(path) as f:
        doc = f.read()
    if a not in doc or b not in doc or doc.index(a) > doc.index(b):
        sys.exit("%s: %s has no %s ... %s lines to replace" % (who, path, a, b))
    doc = doc[: doc.index(a) + len(a)] + "\n" + text + "\n" + doc[doc.index(b):]
    with open(path, "w") as f:
        f.write(doc)


def ci_slice(infos, devices, out_dir, dst):
    """The CI slice's models that pass on every device, model.onnx and the
    data sets, into dst (replacing their earlier copies); the others are
    named."""
    done, left = [], []
    by_name = {i["name"]: i for i in infos}
    for name in CI_SLICE:
        i = by_name.get(name)
        r = i["result"].get("devices", {}) if i else {}
        if not i or any(r.get(d, {}).get("result") != "pass" for d in devices):
            left.append(name)
            continue
        d = os.path.join(dst, name)
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        src = os.path.join(out_dir, name)
        shutil.copyfile(os.path.join(src, "model.onnx"), os.path.join(d, "model.onnx"))
        for sd in glob.glob(os.path.join(src, "test_data_set_*")):
            shutil.copytree(sd, os.path.join(d, os.path.basename(sd)))
        done.append(name)
    print("CI slice in %s: %s; not passing on every device (left out): %s" % (
        dst, ", ".join(done) or "none", ", ".join(left) or "none"), file=sys.stderr)


def check_devices(exe, devices, env=None, who="onnx_corpus.py"):
    """{device: its lines of `clgraph devices`, the name left out}, after
    checking that each of devices is one of them."""
    rc, out, err = clgraph(["devices"], exe, env=env)
    have = {}
    for ln in out.splitlines():
        if ln and not ln[0].isspace():
            name = ln.split()[0]
            have[name] = [ln[len(name):].strip()]
        elif ln.strip() and have:
            have[name].append(ln.strip())
    for dev in devices:
        if dev not in have:
            sys.exit("%s: clgraph has no device %s (it has: %s; OCL_ICD_VENDORS?)" % (who, dev, ", ".join(have)))
    return have


FAMILY_ORDER = {"marian": 0, "bart": 1, "t5": 2, "whisper": 3, "bert": 4, "gpt2": 5, "torchvision": 6, "torch": 7,
                "silero-vad": 8}


def corpus_order(info):
    """The table's order: by family, encoder before decoder, TorchScript
    before dynamo."""
    return (FAMILY_ORDER.get(info["family"], 9), re.sub(r"_(ts|dynamo)$", "", info["name"]).replace(
        "_encoder", "_0").replace("_decoder", "_1"), info["exporter"] != "ts")


def versions():
    import importlib.metadata as md
    out = []
    for p in ("torch", "transformers", "torchvision", "silero-vad", "onnx", "onnxscript", "onnxruntime"):
        try:
            out.append("%s %s" % (p, md.version(p)))
        except md.PackageNotFoundError:
            pass
    return ", ".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--filter", metavar="RE", help="build and run only the models whose name matches (the table "
                    "keeps the last results of the others in OUT_DIR)")
    ap.add_argument("--devices", default="cpu,opencl:0", help="comma-separated clgraph devices (cpu,opencl:0)")
    ap.add_argument("--table", metavar="FILE",
                    help="write the table into FILE between <!-- corpus-table --> and <!-- /corpus-table -->")
    ap.add_argument("--reuse", action="store_true", help="run the models OUT_DIR holds; export nothing")
    ap.add_argument("--no-timing", action="store_true", help="skip the timing against ONNX Runtime")
    ap.add_argument("--ci-slice", metavar="DIR",
                    help="copy the CI slice's models (CI_SLICE) that pass on every device into DIR")
    ap.add_argument("--clgraph", default=os.path.join(ROOT, "build", "tools", "clgraph"), help="the clgraph binary")
    a = ap.parse_args()
    devices = [d for d in a.devices.split(",") if d]
    if not os.access(a.clgraph, os.X_OK):
        sys.exit("onnx_corpus.py: %s is not an executable (build first, or give --clgraph)" % a.clgraph)
    check_devices(a.clgraph, devices)
    os.makedirs(a.out_dir, exist_ok=True)
    if not a.reuse:
        build_all(a.out_dir, a.filter)
    infos = []
    for j in sorted(glob.glob(os.path.join(a.out_dir, "*", "corpus.json"))):
        d = os.path.dirname(j)
        if a.filter and not re.search(a.filter, os.path.basename(d)):
            with open(j) as f:  # not run now: the table keeps its last results
                infos.append(json.load(f))
            infos[-1].setdefault("result", {})
            continue
        t0 = time.time()
        info = run_model(d, devices, a.clgraph, not a.no_timing)
        r = info["result"].get("devices", {})
        print("%-34s %5.1fs %s" % (info["name"], time.time() - t0,
                                   " ".join("%s:%s" % (k, v["result"]) for k, v in r.items()) or "-"), file=sys.stderr,
              flush=True)
        infos.append(info)
    infos.sort(key=corpus_order)
    text = table(infos, devices)
    n_pass = {d: sum(i["result"].get("devices", {}).get(d, {}).get("result") == "pass" for i in infos) for d in devices}
    n_torch = sum(bool(i.get("export")) for i in infos)
    n_ort = sum(bool(i.get("ort")) for i in infos)
    summary = ("%d models (%s); rtol %g, atol %g; %s; PyTorch's export fails for %d, ONNX Runtime for %d" % (
        len(infos), versions(), RTOL, ATOL, ", ".join("%s: %d pass" % (d, n) for d, n in n_pass.items()), n_torch,
        n_ort))
    text += "\n\n" + summary
    print(text)
    if a.table:
        write_table(a.table, text)
    if a.ci_slice:
        ci_slice(infos, devices, a.out_dir, a.ci_slice)
    bad = [i["name"] for i in infos for v in i["result"].get("devices", {}).values()
           if v["result"] in ("FAIL", "ERROR")]
    if bad:
        print("onnx_corpus.py: wrong results or errors: %s" % ", ".join(sorted(set(bad))), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
