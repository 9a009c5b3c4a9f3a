"""Writes ops/<test>/ in ONNX's backend-test layout (model.onnx,
test_data_set_0/{input,output}_K.pb) for importer mappings that ONNX 1.12's
node tests leave thin; expected outputs come from NumPy. `clgraph onnx-test
tests/data/onnx/ops` runs them (tests/graph/onnx/test_onnx.c, every device).
Needs numpy and onnx: python3 make_ops.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnx_case import save, write_data_set

rng = np.random.default_rng(18)


def i64(*v):
    return np.array(v, dtype=np.int64)


# Slice with steps other than 1, ONNX's clamping of start and end
x = rng.standard_normal((5, 7)).astype(np.float32)
cases = [  # starts, ends, axes, steps, NumPy's slice
    ((4, 1), (-10, 6), (0, 1), (-2, 2), x[4::-2, 1:6:2]),
    ((-1,), (-100,), (1,), (-3,), x[:, -1::-3]),
    ((9,), (0,), (0,), (-1,), x[9:0:-1]),
    ((1,), (100,), (0,), (3,), x[1:100:3]),
    ((6,), (2,), (1,), (2,), x[:, 6:2:2]),
]
nodes, outs, inits = [], [], []
for k, (s, e, a, st, want) in enumerate(cases):
    names = [f"s{k}", f"e{k}", f"a{k}", f"st{k}"]
    inits += list(zip(names, (i64(*s), i64(*e), i64(*a), i64(*st))))
    nodes.append(helper.make_node("Slice", ["x"] + names, [f"y{k}"], name=f"slice{k}"))
    outs.append((f"y{k}", np.ascontiguousarray(want)))
save("slice_steps", nodes, [("x", x)], outs, inits)

# Gather with indices known only at run time, negative ones included
table = rng.standard_normal((6, 4)).astype(np.float32)
ids = np.array([[0, 5, -1], [-6, 2, 2]], dtype=np.int64)
cube = rng.standard_normal((3, 4, 5)).astype(np.float32)
cols = np.array([4, -5, 1], dtype=np.int64)
save("gather_runtime", [helper.make_node("Gather", ["table", "ids"], ["emb"], name="emb", axis=0),
                        helper.make_node("Gather", ["cube", "cols"], ["picked"], name="pick", axis=2)],
     [("table", table), ("ids", ids), ("cube", cube), ("cols", cols)],
     [("emb", np.take(table, ids, axis=0)), ("picked", np.take(cube, cols, axis=2))])

# Comparisons, logic and Where on int64 with broadcasting (a masking idiom)
a = rng.integers(-3, 4, (2, 3, 4)).astype(np.int64)
b = rng.integers(-3, 4, (3, 1)).astype(np.int64)
lt, eq = a < b, a == b
save("mask_where", [helper.make_node("Less", ["a", "b"], ["lt"], name="lt"),
                    helper.make_node("Equal", ["a", "b"], ["eq"], name="eq"),
                    helper.make_node("Or", ["lt", "eq"], ["le"], name="le"),
                    helper.make_node("Not", ["le"], ["gt"], name="gt"),
                    helper.make_node("Where", ["gt", "a", "b"], ["mx"], name="mx"),
                    helper.make_node("Div", ["a", "b"], ["q"], name="q")],
     [("a", a), ("b", b)],
     [("gt", ~(lt | eq)), ("mx", np.where(~(lt | eq), a, b)),
      ("q", np.where(b == 0, 0, np.trunc(a / np.where(b == 0, 1, b))).astype(np.int64))])

# PyTorch's nn.GRU, nn.LSTM and nn.RNN as torch.onnx.export writes them
# (GRU with linear_before_reset 1), bidirectional, expected values from
# PyTorch
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    torch.manual_seed(18)
    for kind in ("GRU", "LSTM", "RNN"):
        net = getattr(torch.nn, kind)(5, 4, batch_first=True, bidirectional=True).eval()
        xs = torch.randn(3, 6, 5)
        with torch.no_grad():
            y, hn = net(xs)
        if kind == "LSTM":
            hn = hn[0]
        d = os.path.join("ops", "torch_" + kind.lower())
        os.makedirs(d, exist_ok=True)
        torch.onnx.export(net, (xs,), os.path.join(d, "model.onnx"), input_names=["x"],
                          output_names=["y", "h_n"] + (["c_n"] if kind == "LSTM" else []), opset_version=13,
                          dynamo=False)
        m = onnx.load(os.path.join(d, "model.onnx"))
        outs = [("y", y.numpy()), ("h_n", hn.numpy())]
        if kind == "LSTM":
            m.graph.output.pop()  # c_n: checked through h_n
            onnx.save(m, os.path.join(d, "model.onnx"))
        write_data_set(d, [("x", xs.numpy())], outs)

# A graph input that is both a Reshape's shape and data: with its value
# given for the import it would be fixed there, so the importer refuses it
# (tests/graph/onnx/test_onnx.c, import_refuses_fixed_data)
g = helper.make_graph([helper.make_node("Reshape", ["data", "shape"], ["y"], name="reshape"),
                       helper.make_node("Cast", ["shape"], ["z"], name="as_float", to=TensorProto.FLOAT)],
                      "fixed_and_data",
                      [helper.make_tensor_value_info("data", TensorProto.FLOAT, [2, 3, 4]),
                       helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 12]),
                       helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, "fixed_and_data.onnx")

# nn.GRU from a given initial state (an input of the graph): the importer
# maps it onto clgraph's gru with that state (initial: 1); linear_before_reset 1
if torch is not None:
    net = torch.nn.GRU(5, 4).eval()
    xs, h0 = torch.randn(6, 3, 5), torch.randn(1, 3, 4)
    with torch.no_grad():
        y, hn = net(xs, h0)
    d = os.path.join("ops", "torch_gru_h0")
    os.makedirs(d, exist_ok=True)
    torch.onnx.export(net, (xs, h0), os.path.join(d, "model.onnx"), input_names=["x", "h0"],
                      output_names=["y", "h_n"], opset_version=13, dynamo=False)
    write_data_set(d, [("x", xs.numpy()), ("h0", h0.numpy())], [("y", y.numpy()), ("h_n", hn.numpy())])

# LSTM with peepholes, initial states and sequence_lens shorter than S
# (unrolled by the importer), expected values from ONNX Runtime
try:
    import onnxruntime as ort
except ImportError:
    ort = None
if ort is not None:
    S, B, I, H = 5, 3, 4, 3
    inits = [("W", rng.standard_normal((1, 4 * H, I)).astype(np.float32) * 0.5),
             ("R", rng.standard_normal((1, 4 * H, H)).astype(np.float32) * 0.5),
             ("B", rng.standard_normal((1, 8 * H)).astype(np.float32) * 0.2),
             ("P", rng.standard_normal((1, 3 * H)).astype(np.float32) * 0.5)]
    ins = [("X", rng.standard_normal((S, B, I)).astype(np.float32)),
           ("sequence_lens", np.array([5, 2, 3], dtype=np.int32)),
           ("initial_h", rng.standard_normal((1, B, H)).astype(np.float32)),
           ("initial_c", rng.standard_normal((1, B, H)).astype(np.float32))]
    node = helper.make_node("LSTM", ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"],
                            ["Y", "Y_h", "Y_c"], name="lstm", hidden_size=H)
    g = helper.make_graph([node], "lstm_peep", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                                                              list(a.shape)) for n, a in ins],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("Y", "Y_h", "Y_c")],
                          initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = sess.run(None, dict(ins))
    save("ort_lstm_peepholes", [node], ins, list(zip(("Y", "Y_h", "Y_c"), outs)), inits, opset=14)

# Einsum: the two-operand forms exporters and attention code use, a
# diagonal, an outer product, a full contraction, and ellipsis broadcasting
# (NumPy's einsum as the reference)
forms = [("bhqd,bhkd->bhqk", (2, 3, 4, 5), (2, 3, 6, 5)),
         ("...ij,...jk->...ik", (2, 1, 3, 4), (5, 4, 2)),
         ("ij,jk", (3, 4), (4, 5)),
         ("bij,bkj->bik", (2, 3, 4), (2, 5, 4)),
         ("i,j->ij", (3,), (4,)),
         ("ij,ij->", (3, 4), (3, 4)),
         ("bnd,nd->bn", (2, 3, 4), (3, 4)),
         ("iji->ij", (3, 4, 3), None),
         ("ijk->kj", (2, 3, 4), None)]
nodes, ins, outs = [], [], []
for k, (eq, sa, sb) in enumerate(forms):
    ops_ = [rng.standard_normal(sa).astype(np.float32)] + ([rng.standard_normal(sb).astype(np.float32)] if sb else [])
    names = [f"a{k}"] + ([f"b{k}"] if sb else [])
    ins += list(zip(names, ops_))
    nodes.append(helper.make_node("Einsum", names, [f"y{k}"], name=f"einsum{k}", equation=eq))
    outs.append((f"y{k}", np.asarray(np.einsum(eq, *ops_), dtype=np.float32)))
save("einsum_forms", nodes, ins, outs, opset=12)

# Quantization: per-axis int8 QuantizeLinear, DequantizeLinear of int32
# without a zero point and of int8 per axis, DynamicQuantizeLinear of an
# all-zero tensor and of a negative-only one (ONNX Runtime as the reference)
if ort is not None:
    x = (rng.standard_normal((3, 4)) * 50).astype(np.float32)
    ins = [("x", x), ("zeros", np.zeros((2, 3), np.float32)), ("neg", -np.abs(x)),
           ("q32", rng.integers(-10**6, 10**6, (5,)).astype(np.int32)), ("q8", rng.integers(-128, 128, (3, 4)).astype(np.int8))]
    inits = [("s_axis0", np.array([0.5, 2.0, 0.3], np.float32)), ("zp_axis0", np.array([-3, 0, 100], np.int8)),
             ("s1", np.array(0.25, np.float32)), ("s_axis1", np.array([1.5, 0.5, 2.0, 0.125], np.float32)),
             ("zp_axis1", np.array([0, -5, 5, 127], np.int8))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s_axis0", "zp_axis0"], ["xq"], name="q", axis=0),
             helper.make_node("DequantizeLinear", ["q32", "s1"], ["d32"], name="d32"),
             helper.make_node("DequantizeLinear", ["q8", "s_axis1", "zp_axis1"], ["d8"], name="d8", axis=1),
             helper.make_node("DynamicQuantizeLinear", ["zeros"], ["zq", "zs", "zz"], name="dz"),
             helper.make_node("DynamicQuantizeLinear", ["neg"], ["nq", "ns", "nz"], name="dn")]
    names = ["xq", "d32", "d8", "zq", "zs", "zz", "nq", "ns", "nz"]
    g = helper.make_graph(nodes, "quant", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                                                         list(a.shape)) for n, a in ins],
                          [helper.make_tensor_value_info(n, t, None) for n, t in
                           zip(names, [TensorProto.INT8] + [TensorProto.FLOAT] * 2 +
                               [TensorProto.UINT8, TensorProto.FLOAT, TensorProto.UINT8] * 2)],
                          initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    res = sess.run(None, dict(ins))
    save("ort_quant_forms", nodes, ins, list(zip(names, res)), inits)

# A two-layer MLP quantized by ONNX Runtime's quantize_dynamic (int8
# weights; DynamicQuantizeLinear, MatMulInteger, Cast, Mul, Add as ORT
# writes them), expected outputs from ONNX Runtime on the quantized model
if ort is not None:
    import tempfile
    from onnxruntime.quantization import QuantType, quantize_dynamic
    w1 = (rng.standard_normal((64, 300)) * 0.2).astype(np.float32)
    w2 = (rng.standard_normal((300, 10)) * 0.2).astype(np.float32)
    inits = [("w1", w1), ("b1", (rng.standard_normal(300) * 0.1).astype(np.float32)), ("w2", w2),
             ("b2", (rng.standard_normal(10) * 0.1).astype(np.float32))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
             helper.make_node("Add", ["h0", "b1"], ["h1"], name="fc1_bias"),
             helper.make_node("Relu", ["h1"], ["h"], name="relu"),
             helper.make_node("MatMul", ["h", "w2"], ["y0"], name="fc2"),
             helper.make_node("Add", ["y0", "b2"], ["y"], name="fc2_bias")]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 10])],
                          initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    with tempfile.TemporaryDirectory() as tmp:
        onnx.save(m, os.path.join(tmp, "f.onnx"))
        quantize_dynamic(os.path.join(tmp, "f.onnx"), os.path.join(tmp, "q.onnx"), weight_type=QuantType.QInt8)
        q = onnx.load(os.path.join(tmp, "q.onnx"))
    x = rng.standard_normal((3, 64)).astype(np.float32)
    y = ort.InferenceSession(q.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    d = os.path.join("ops", "ort_quantized_mlp")
    os.makedirs(d, exist_ok=True)
    onnx.save(q, os.path.join(d, "model.onnx"))
    write_data_set(d, [("x", x)], [("y", y)])

# Shape arithmetic over symbolic dims (graph/onnx/onnx_sym.c), two bindings of
# B and S: Range to S (arange), ConstantOfShape of Shape(x) read by Where (filled
# against x's dims), a Reshape to B * S (one unknown dim) and one that moves B and
# S ([S, B, 4]: dims named), TopK with K = B (a sort), Gather of index -1 along S
# (a slice), Slice of a table to S rows, an exact int64 ReduceSum; NumPy's results
def symbolic_shapes():
    def i64(*v):
        return numpy_helper.from_array(np.array(v, dtype=np.int64))

    def const(name, *v):
        return helper.make_node("Constant", [], [name], value=i64(*v))

    def scalar(name, v):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(v, dtype=np.int64)))

    r = np.random.default_rng(1812)  # its own: the same data whatever ran before
    table = r.standard_normal((10, 4)).astype(np.float32)
    N = helper.make_node
    nodes = [
        N("Shape", ["x"], ["sh"]), scalar("c0", 0), scalar("c1", 1), scalar("cm1", -1),
        N("Gather", ["sh", "c0"], ["b"], axis=0), N("Gather", ["sh", "c1"], ["s"], axis=0),
        N("Range", ["c0", "s", "c1"], ["r"]), const("ax0", 0), const("ax1", 1), const("ax2", 2),
        N("Unsqueeze", ["r", "ax0"], ["ru"]), N("Unsqueeze", ["lens", "ax1"], ["lu"]),
        N("Less", ["ru", "lu"], ["valid"]),
        N("ConstantOfShape", ["sh"], ["zeros"], value=numpy_helper.from_array(np.zeros(1, np.float32))),
        N("Unsqueeze", ["valid", "ax2"], ["vu"]), N("Where", ["vu", "x", "zeros"], ["masked"]),
        N("Mul", ["b", "s"], ["bs"]), N("Unsqueeze", ["bs", "ax0"], ["bs1"]), const("four", 4),
        N("Concat", ["bs1", "four"], ["flat_shape"], axis=0), N("Reshape", ["masked", "flat_shape"], ["flat"]),
        N("Unsqueeze", ["s", "ax0"], ["s1"]), N("Unsqueeze", ["b", "ax0"], ["b1"]),
        N("Concat", ["s1", "b1", "four"], ["sb_shape"], axis=0), N("Reshape", ["flat", "sb_shape"], ["back"]),
        N("TopK", ["lens", "b1"], ["sorted", "order"], axis=0),
        N("Gather", ["x", "cm1"], ["last"], axis=1),
        N("Slice", ["table", "ax0", "s1", "ax0"], ["firsts"]),
        N("Cast", ["valid"], ["vi"], to=TensorProto.INT64),
        N("ReduceSum", ["vi", "ax1"], ["count"], keepdims=0),
    ]
    outs = ["masked", "back", "sorted", "order", "last", "firsts", "count"]
    otypes = [TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT64, TensorProto.FLOAT,
              TensorProto.FLOAT, TensorProto.INT64]
    oshapes = [["B", "S", 4], ["S", "B", 4], ["B"], ["B"], ["B", 4], ["S", 4], ["B"]]
    g = helper.make_graph(nodes, "symbolic_shapes",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", 4]),
                           helper.make_tensor_value_info("lens", TensorProto.INT64, ["B"])],
                          [helper.make_tensor_value_info(o, t, sh) for o, t, sh in zip(outs, otypes, oshapes)],
                          initializer=[numpy_helper.from_array(table, "table")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    d = os.path.join("ops", "symbolic_shapes")
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for k, (B, S, lens) in enumerate(((3, 5, [5, 2, 2]), (2, 7, [1, 7]))):
        x = r.standard_normal((B, S, 4)).astype(np.float32)
        lens = np.array(lens, dtype=np.int64)
        valid = np.arange(S)[None, :] < lens[:, None]
        masked = np.where(valid[:, :, None], x, 0).astype(np.float32)
        order = np.argsort(-lens, kind="stable").astype(np.int64)
        want = [masked, masked.reshape(S, B, 4), lens[order], order, x[:, -1], table[:S], valid.sum(1).astype(np.int64)]
        write_data_set(d, [("x", x), ("lens", lens)], list(zip(outs, want)), k)


symbolic_shapes()


def const_weights():
    """MatMul and Gemm by constant weights, which the importer makes linear
    on the weight transposed once: GPT-2's Conv1D (Gemm transB 0 with a
    bias), a MatMul of 3-D x without a bias, and one weight two products
    share (tied: one transposed copy). Expected values from NumPy."""
    r = np.random.default_rng(32)
    x = r.standard_normal((4, 6)).astype(np.float32)
    x3 = r.standard_normal((2, 3, 6)).astype(np.float32)
    w = r.standard_normal((6, 5)).astype(np.float32)
    b = r.standard_normal(5).astype(np.float32)
    N = helper.make_node
    save("gemm_const_transb0", [N("Gemm", ["x", "w", "b"], ["y"])], [("x", x)], [("y", x @ w + b)],
         [("w", w), ("b", b)])
    save("matmul_const_tied", [N("MatMul", ["x3", "w"], ["y"]), N("Gemm", ["x", "w"], ["z"], alpha=1.0)],
         [("x3", x3), ("x", x)], [("y", x3 @ w), ("z", x @ w)], [("w", w)])


const_weights()
