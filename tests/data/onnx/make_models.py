"""Writes models/<test>/ in ONNX's backend-test layout (model.onnx,
test_data_set_N/{input,output}_K.pb) for real exports: the seq2seq spec's
encoder and one decoder step (tools/py/s2s_export_onnx.py on models/dates,
batch and source length dynamic), and the encoder and decoder of a small
nn.Transformer trained to reverse sequences (tools/py/transformer_ref.py),
with ONNX Runtime's outputs as the expected values; each model gets two
data sets of different batch and lengths, so the dynamic dims are bound
twice; both decoders also as ONNX Runtime's quantize_dynamic makes them
(int8 weights, DynamicQuantizeLinear, MatMulInteger) against its own int8
results; a small CNN (convolutions, pooling, a transposed convolution;
batch, height and width dynamic). transformer_greedy.txt: sources and
PyTorch's greedy outputs. `clgraph onnx-test
tests/data/onnx/models --rtol 1e-4 --atol 1e-4` runs them
(tests/graph/onnx/test_onnx.c, every device).
Needs torch, onnx, onnxscript and onnxruntime (a virtual environment):
    python3 make_models.py [--out DIR] [--train-steps N] [--only NAME]
(tests/graph/onnx/live_onnx.sh runs it into a fresh folder with whatever
torch and ONNX Runtime are installed, and checks clgraph against them.)"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
OUT = HERE  # --out DIR writes DIR/models and DIR/transformer_greedy.txt instead
sys.path.insert(0, os.path.join(ROOT, "tools", "py"))
import s2s_export_onnx  # noqa: E402
import transformer_ref  # noqa: E402

rng = np.random.default_rng(18)
# --train-steps N: the live check (tests/graph/onnx/live_onnx.sh) compares
# clgraph with ONNX Runtime on the same export, which any weights exercise;
# it trains briefly instead of to the committed copy's accuracy.
TRAIN_STEPS = 1500


def session(path):
    o = ort.SessionOptions()
    o.intra_op_num_threads = 1
    return ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])


def quantized(name, fp32_name):
    """ONNX Runtime's quantize_dynamic of a written model (int8 weights,
    DynamicQuantizeLinear and MatMulInteger), on the fp32 model's inputs."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    d = os.path.join(OUT, "models", fp32_name)
    tmp = os.path.join(OUT, "models", ".q.onnx")
    # reduce_range: 7-bit weights, as ONNX Runtime advises for u8 x s8 on
    # x86 without VNNI: its MatMulInteger kernel sums pairs of u8 x s8
    # products in saturating 16 bits there (1.32 on the CI's EPYC VM was off
    # by thousands in some elements, 0.54 in a log-probability), while the
    # spec's product is exact; with 7-bit weights a pair cannot saturate.
    quantize_dynamic(os.path.join(d, "model.onnx"), tmp, weight_type=QuantType.QInt8, reduce_range=True)
    sets = []
    k = 0
    while os.path.isdir(os.path.join(d, f"test_data_set_{k}")):
        feed, i = {}, 0
        while os.path.exists(os.path.join(d, f"test_data_set_{k}", f"input_{i}.pb")):
            t = onnx.TensorProto()
            with open(os.path.join(d, f"test_data_set_{k}", f"input_{i}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            feed[t.name] = numpy_helper.to_array(t)
            i += 1
        sets.append(feed)
        k += 1
    write_sets(name, tmp, sets)
    os.remove(tmp)


def write_sets(name, model_path, sets):
    """sets: list of {input name: array}; ONNX Runtime gives the outputs."""
    d = os.path.join(OUT, "models", name)
    os.makedirs(d, exist_ok=True)
    m = onnx.load(model_path)
    onnx.save(m, os.path.join(d, "model.onnx"))
    sess = session(os.path.join(d, "model.onnx"))
    outs = [o.name for o in sess.get_outputs()]
    for k, feed in enumerate(sets):
        got = sess.run(outs, feed)
        sd = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(sd, exist_ok=True)
        for kind, names, vals in (("input", list(feed), list(feed.values())), ("output", outs, got)):
            for i, (n, a) in enumerate(zip(names, vals)):
                with open(os.path.join(sd, f"{kind}_{i}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(np.ascontiguousarray(a), n).SerializeToString())
    return sess


def s2s():
    tmp = os.path.join(OUT, "models", ".s2s_export")
    torch.manual_seed(0)
    m, _ = s2s_export_onnx.export(os.path.join(ROOT, "models", "dates"), tmp)
    enc_sets = []
    for B, S, lens in ((3, 6, [6, 2, 4]), (5, 9, [9, 1, 3, 9, 5])):
        src = rng.integers(4, m.v_src, size=(B, S)).astype(np.int64)
        enc_sets.append({"src": src, "src_len": np.array(lens, dtype=np.int64)})
    enc = write_sets("s2s_encoder", os.path.join(tmp, "encoder.onnx"), enc_sets)
    dec_sets = []
    for feed in enc_sets:
        keys, kproj, s0 = enc.run(["keys", "keys_proj", "s0"], feed)
        B = keys.shape[0]
        dec_sets.append({"y_prev": rng.integers(0, m.v_tgt, size=(B,)).astype(np.int64), "h": s0, "keys": keys,
                         "keys_proj": kproj, "src_len": feed["src_len"]})
    write_sets("s2s_decoder", os.path.join(tmp, "decoder.onnx"), dec_sets)
    for f in os.listdir(tmp):
        os.remove(os.path.join(tmp, f))
    os.rmdir(tmp)


def transformer():
    tmp = os.path.join(OUT, "models", ".tf_export")
    torch.set_num_threads(2)
    m, loss = transformer_ref.train(TRAIN_STEPS)
    print("transformer: final training loss %.4f" % loss)
    transformer_ref.export(m, tmp)
    g = torch.Generator().manual_seed(3)
    enc_sets = []
    for B, S in ((3, 5), (4, 8)):
        src, pad, _ = transformer_ref.batch(g, B, S)
        enc_sets.append({"src": src.numpy(), "src_pad": pad.numpy()})
    enc = write_sets("transformer_encoder", os.path.join(tmp, "encoder.onnx"), enc_sets)
    dec_sets = []
    for feed, T in zip(enc_sets, (1, 4)):
        (memory,) = enc.run(["memory"], feed)
        B = memory.shape[0]
        tgt = np.concatenate([np.full((B, 1), transformer_ref.BOS), rng.integers(3, transformer_ref.V, (B, T - 1))], 1)
        dec_sets.append({"tgt": tgt.astype(np.int64), "memory": memory, "src_pad": feed["src_pad"]})
    write_sets("transformer_decoder", os.path.join(tmp, "decoder.onnx"), dec_sets)
    for f in os.listdir(tmp):
        os.remove(os.path.join(tmp, f))
    os.rmdir(tmp)
    # greedy decoding of a few sources, PyTorch's: one line per source,
    # "source ids | output ids" (EOS included)
    src, pad, _ = transformer_ref.batch(g, 6, 8)
    out = transformer_ref.greedy(m, src, pad, 12)
    with open(os.path.join(OUT, "transformer_greedy.txt"), "w") as f:
        for s, p, o in zip(src.tolist(), pad.tolist(), out):
            f.write(" ".join(str(t) for t, q in zip(s, p) if not q) + " | " + " ".join(map(str, o)) + "\n")


def layernorm_opset13():
    """nn.Linear then nn.LayerNorm as the TorchScript exporter writes them
    before opset 17 (MatMul, Add; ReduceMean, Sub, Pow, ReduceMean, Add,
    Sqrt, Div, Mul, Add): clgraph imports them as linear and layer_norm."""
    torch.manual_seed(5)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.ReLU()).eval()
    tmp = os.path.join(OUT, "models", ".ln13.onnx")
    torch.onnx.export(m, (torch.randn(3, 5, 8),), tmp, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "B", 1: "T"}, "y": {0: "B", 1: "T"}}, opset_version=13, dynamo=False)
    sets = [{"x": (rng.standard_normal((B, T, 8)) * 3).astype(np.float32)} for B, T in ((3, 5), (1, 9))]
    write_sets("mlp_layernorm_opset13", tmp, sets)
    os.remove(tmp)


class SymArith(torch.nn.Module):
    """Shape arithmetic over dynamic dims as the TorchScript exporter writes
    it (Shape, Gather, Mul, Add, Sub, Div, Concat into Reshape, Expand,
    ConstantOfShape, Range, Slice, Tile; sizes read as data): products of dims
    (B * S rows, B * heads), a length computed from two inputs (P + S), a
    position range from a past length, zeros of a derived shape, and dims
    cast to float and used in arithmetic."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x, past):
        B, S, D = x.shape
        P = past.shape[1]
        rows = self.proj(x.reshape(B * S, D)).reshape(B, S, D)
        heads = rows.reshape(B, S, 2, D // 2).transpose(1, 2).reshape(B * 2, S, D // 2)
        both = torch.cat([past, x], dim=1)  # [B, P + S, D]
        pos = torch.arange(P, P + S, dtype=torch.int64).unsqueeze(0).expand(B, S)
        scale = rows * (S * 1.0) / (P + S)  # dims read as data
        pad = torch.zeros(B, 2 * S, D)  # ConstantOfShape of a derived shape
        tail = both[:, 1:, :]  # a slice of a derived dim
        tiled = rows[:1, :, :1].repeat(B, 2, 1)  # Tile by repeats computed from B
        recent = both[:, P:, :] - rows[:, : S - 1].sum(dim=1, keepdim=True)  # slices bounded by dims
        return heads, both.sum(dim=1), pos, scale, torch.cat([pad, rows], dim=1), tail.mean(dim=1), tiled, recent


def sym_arith():
    torch.manual_seed(7)
    m = SymArith().eval()
    tmp = os.path.join(OUT, "models", ".sym_arith.onnx")
    names = ["heads", "both_sum", "pos", "scale", "padded", "tail_mean", "tiled", "recent"]
    dyn = {"x": {0: "B", 1: "S"}, "past": {0: "B", 1: "P"}}
    dyn.update({n: {0: "d0", 1: "d1"} for n in names if n not in ("both_sum", "tail_mean")})
    torch.onnx.export(m, (torch.randn(2, 5, 8), torch.randn(2, 3, 8)), tmp, input_names=["x", "past"],
                      output_names=names, dynamic_axes=dyn, opset_version=17, dynamo=False)
    sets = [{"x": rng.standard_normal((B, S, 8)).astype(np.float32),
             "past": rng.standard_normal((B, P, 8)).astype(np.float32)} for B, S, P in ((2, 5, 3), (3, 4, 6))]
    write_sets("sym_arith", tmp, sets)
    os.remove(tmp)


def rnn_layers():
    """nn.LSTM and nn.GRU of 2 bidirectional layers (batch_first), by both
    exporters with batch and length dynamic: the zero initial state made
    once (ConstantOfShape, or Expand in the dynamo export) and sliced per
    layer, each layer an RNN op over the symbolic length."""
    for kind in ("LSTM", "GRU"):
        torch.manual_seed(11)
        m = getattr(torch.nn, kind)(8, 16, num_layers=2, bidirectional=True, batch_first=True).eval()
        x = torch.randn(3, 5, 8)
        sets = [{"x": rng.standard_normal((B, S, 8)).astype(np.float32)} for B, S in ((3, 5), (2, 9))]
        tmp = os.path.join(OUT, "models", f".{kind}.onnx")
        torch.onnx.export(m, (x,), tmp, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "B", 1: "S"}, "y": {0: "B", 1: "S"}}, opset_version=17, dynamo=False)
        write_sets(f"{kind.lower()}2_bidir_ts", tmp, sets)
        B, S = torch.export.Dim("B", min=1, max=64), torch.export.Dim("S", min=2, max=512)
        torch.onnx.export(m, (x,), tmp, input_names=["x"], output_names=["y"],
                          dynamic_shapes={"input": {0: B, 1: S}}, dynamo=True)
        write_sets(f"{kind.lower()}2_bidir_dynamo", tmp, sets)
        os.remove(tmp)


class RNNFromState(torch.nn.Module):
    """An nn.LSTM or nn.GRU called with its initial state: forward(x, h0[,
    c0]) gives the output and the final states."""
    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, h0, c0=None):
        if c0 is None:
            y, hn = self.rnn(x, h0)
            return y, hn
        y, (hn, cn) = self.rnn(x, (h0, c0))
        return y, hn, cn


def rnn_initial():
    """nn.LSTM and nn.GRU of 2 bidirectional layers (batch_first) called
    with (x, h0[, c0]) as graph inputs, by both exporters with batch and
    length dynamic: each layer's slice of the given state is its
    initial_h (initial_c), each layer one RNN op over the symbolic length."""
    for kind in ("LSTM", "GRU"):
        torch.manual_seed(12)
        lstm = kind == "LSTM"
        m = RNNFromState(getattr(torch.nn, kind)(8, 16, num_layers=2, bidirectional=True, batch_first=True)).eval()
        names = ["x", "h0", "c0"] if lstm else ["x", "h0"]
        outs = ["y", "hn", "cn"] if lstm else ["y", "hn"]
        args = (torch.randn(3, 5, 8),) + tuple(torch.randn(4, 3, 16) for _ in names[1:])
        sets = []
        for B, S in ((3, 5), (2, 9)):
            feed = {"x": rng.standard_normal((B, S, 8)).astype(np.float32)}
            for n in names[1:]:
                feed[n] = rng.standard_normal((4, B, 16)).astype(np.float32)
            sets.append(feed)
        tmp = os.path.join(OUT, "models", f".{kind}_h0.onnx")
        dyn = {"x": {0: "B", 1: "S"}, "y": {0: "B", 1: "S"}}
        dyn.update({n: {1: "B"} for n in names[1:] + outs[1:]})
        torch.onnx.export(m, args, tmp, input_names=names, output_names=outs, dynamic_axes=dyn, opset_version=17,
                          dynamo=False)
        write_sets(f"{kind.lower()}2_bidir_h0_ts", tmp, sets)
        B, S = torch.export.Dim("B", min=1, max=64), torch.export.Dim("S", min=2, max=512)
        shapes = {"x": {0: B, 1: S}, "h0": {1: B}}
        if lstm:
            shapes["c0"] = {1: B}
        torch.onnx.export(m, args, tmp, input_names=names, output_names=outs, dynamic_shapes=shapes, dynamo=True)
        write_sets(f"{kind.lower()}2_bidir_h0_dynamo", tmp, sets)
        for f in (tmp, tmp + ".data"):  # the dynamo exporter's weights may sit beside the model
            if os.path.exists(f):
                os.remove(f)


def rnn_node_initial():
    """Single ONNX LSTM and GRU nodes from run-time initial states with
    sequence_lens (rows shorter than S, one of length 0 in the second data
    set), batch and length dynamic: a bidirectional LSTM and a forward GRU
    with linear_before_reset 1 (layout 0: ONNX Runtime has no layout 1)."""
    from onnx import TensorProto, helper
    I, H = 5, 6
    for name, op, nd, layout in (("lstm_node_h0_seqlens", "LSTM", 2, 0), ("gru_node_h0_seqlens", "GRU", 1, 0)):
        ng = 4 if op == "LSTM" else 3
        w = rng.uniform(-0.5, 0.5, (nd, ng * H, I)).astype(np.float32)
        r = rng.uniform(-0.5, 0.5, (nd, ng * H, H)).astype(np.float32)
        b = rng.uniform(-0.5, 0.5, (nd, 2 * ng * H)).astype(np.float32)
        x_dims, st_dims = (["B", "S", I], ["B", nd, H]) if layout else (["S", "B", I], [nd, "B", H])
        states = ["initial_h", "initial_c"] if op == "LSTM" else ["initial_h"]
        outs = ["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"]
        attrs = {"hidden_size": H, "layout": layout, "direction": "bidirectional" if nd == 2 else "forward"}
        if op == "GRU":
            attrs["linear_before_reset"] = 1
        node = helper.make_node(op, ["X", "W", "R", "B", "sequence_lens"] + states, outs, **attrs)
        ins = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_dims),
               helper.make_tensor_value_info("sequence_lens", TensorProto.INT32, ["B"])]
        ins += [helper.make_tensor_value_info(n, TensorProto.FLOAT, st_dims) for n in states]
        g = helper.make_graph([node], name, ins, [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outs],
                              initializer=[numpy_helper.from_array(a, n) for n, a in (("W", w), ("R", r), ("B", b))])
        tmp = os.path.join(OUT, "models", f".{name}.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), tmp)
        sets = []
        for B, S, lens in ((3, 4, [4, 2, 3]), (4, 7, [5, 7, 0, 1])):
            xs = rng.standard_normal((B, S, I) if layout else (S, B, I)).astype(np.float32)
            feed = {"X": xs, "sequence_lens": np.array(lens, dtype=np.int32)}
            for n in states:
                feed[n] = rng.standard_normal((B, nd, H) if layout else (nd, B, H)).astype(np.float32)
            sets.append(feed)
        write_sets(name, tmp, sets)
        os.remove(tmp)


class SmallCNN(torch.nn.Module):
    """Convolutions and pooling as image models use them: a 3x3 conv, max
    pooling, a strided grouped conv, a depthwise conv with dilation,
    average pooling with ceil_mode, a transposed conv back up, 1x1 conv,
    and a global average pool head."""
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.pool1 = torch.nn.MaxPool2d(2)
        self.c2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=(1, 0), groups=2)
        self.dw = torch.nn.Conv2d(16, 16, 3, padding=2, dilation=2, groups=16)
        self.pool2 = torch.nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        self.up = torch.nn.ConvTranspose2d(16, 6, 3, stride=2, padding=1, output_padding=1)
        self.pw = torch.nn.Conv2d(6, 4, 1)
        self.c1d = torch.nn.Conv1d(4, 5, 3, padding=1)

    def forward(self, x):
        y = self.pool1(torch.relu(self.c1(x)))
        y = torch.relu(self.dw(torch.relu(self.c2(y))))
        y = self.pw(torch.relu(self.up(self.pool2(y))))
        g = torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)
        return y, g, torch.nn.functional.max_pool1d(self.c1d(y.mean(dim=3)), 2, ceil_mode=True)


def cnn():
    """SmallCNN exported by the TorchScript exporter at opset 17, batch,
    height and width dynamic; two data sets of different sizes."""
    torch.manual_seed(7)
    m = SmallCNN().eval()
    tmp = os.path.join(OUT, "models", ".cnn.onnx")
    dyn = {0: "N", 2: "H", 3: "W"}
    torch.onnx.export(m, (torch.randn(2, 3, 16, 16),), tmp, input_names=["x"], output_names=["y", "g", "z"],
                      dynamic_axes={"x": dyn, "y": dyn, "g": {0: "N"}, "z": {0: "N", 2: "H"}}, opset_version=17,
                      dynamo=False)
    sets = [{"x": rng.standard_normal((N, 3, H, W)).astype(np.float32)} for N, H, W in ((2, 16, 16), (1, 21, 13))]
    write_sets("cnn_conv_pool", tmp, sets)
    os.remove(tmp)


if __name__ == "__main__":
    # --only NAME: one of the functions below (a new model without
    # exporting the others again)
    args = sys.argv[1:]
    only = None
    while args:
        if len(args) >= 2 and args[0] == "--out":
            OUT, args = args[1], args[2:]
        elif len(args) >= 2 and args[0] == "--only":
            only, args = args[1], args[2:]
        elif len(args) >= 2 and args[0] == "--train-steps":
            TRAIN_STEPS, args = int(args[1]), args[2:]
        else:
            sys.exit("usage: make_models.py [--out DIR] [--train-steps N] [--only s2s|transformer|quantized|layernorm_opset13|sym_arith|rnn_layers|rnn_initial|cnn]")
    if only in (None, "s2s"):
        s2s()
    if only in (None, "transformer"):
        transformer()
    if only in (None, "quantized"):
        quantized("s2s_decoder_int8", "s2s_decoder")
        quantized("transformer_decoder_int8", "transformer_decoder")
    if only in (None, "layernorm_opset13"):
        layernorm_opset13()
    if only in (None, "sym_arith"):
        sym_arith()
    if only in (None, "cnn"):
        cnn()
    if only in (None, "rnn_layers"):
        rnn_layers()
    if only in (None, "rnn_initial"):
        rnn_initial()
        rnn_node_initial()
