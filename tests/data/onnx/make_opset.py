"""Writes opset/<test>/ in ONNX's backend-test layout (model.onnx,
test_data_set_N/{input,output}_K.pb) for the newer and the older forms of the
operators the importer maps (issue 31): opset 18's axes as inputs and
noop_with_empty_axes, num_outputs, opset 20's boolean ReduceMax, 21's Cast
saturate and GroupNormalization, 23's Attention (grouped-query heads, a
causal mask over a past cache, symbolic batch and lengths), RMSNormalization
and RotaryEmbedding, and opsets 1 to 9's attribute forms. Expected outputs
come from ONNX Runtime (opset 7 and later) or NumPy (the older forms, which
ONNX Runtime no longer loads). `clgraph onnx-test tests/data/onnx/opset`
runs them (tests/graph/onnx/test_onnx.c, every device).
Needs numpy, onnx and onnxruntime: python3 make_opset.py"""
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

rng = np.random.default_rng(31)
OUT = "opset"


def info(n, a, dims=None):
    return helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                         dims if dims is not None else list(a.shape))


def write(name, model, sets):
    """sets: list of (inputs, outputs), each a list of (name, array)."""
    onnx.checker.check_model(model)
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (ins, outs) in enumerate(sets):
        sd = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(sd, exist_ok=True)
        for kind, lst in (("input", ins), ("output", outs)):
            for i, (n, a) in enumerate(lst):
                with open(os.path.join(sd, f"{kind}_{i}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(np.asarray(a), n).SerializeToString())


def model(nodes, inputs, outputs, opset, inits=(), in_dims=None):
    """inputs: (name, example array); outputs: names with their types given by
    ONNX Runtime later (left untyped here)."""
    in_dims = in_dims or {}
    g = helper.make_graph(nodes, "g", [info(n, a, in_dims.get(n)) for n, a in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in outputs],
                          initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10 if opset >= 21 else 8
    return m


def with_ort(name, nodes, input_sets, outputs, opset, inits=(), in_dims=None):
    """Expected outputs from ONNX Runtime, for each set of inputs; the
    graph's outputs typed from its results."""
    m = model(nodes, input_sets[0], outputs, opset, inits, in_dims)
    # the outputs' types from ONNX's reference evaluator, which needs none
    ref = ReferenceEvaluator(m).run(None, dict(input_sets[0]))
    del m.graph.output[:]
    m.graph.output.extend(info(n, a, [None] * a.ndim) for n, a in zip(outputs, ref))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    sets = []
    for ins in input_sets:
        res = sess.run(None, dict(ins))
        sets.append((ins, list(zip(outputs, res))))
    del m.graph.output[:]
    m.graph.output.extend(info(n, a, [None] * a.ndim if in_dims else None) for n, a in sets[0][1])
    write(name, m, sets)


def with_numpy(name, nodes, ins, outs, opset, inits=()):
    m = model(nodes, ins, [n for n, _ in outs], opset, inits)
    del m.graph.output[:]
    m.graph.output.extend(info(n, a) for n, a in outs)
    write(name, m, [(ins, outs)])


def f32(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def i64(*v):
    return np.array(v, dtype=np.int64)


shutil.rmtree(OUT, ignore_errors=True)

# opset 18: reduction axes as an input, keepdims 0, noop_with_empty_axes
x = f32(3, 4, 5)
with_ort("reduce_axes_input_18", [
    helper.make_node("ReduceMean", ["x", "ax"], ["mean"], keepdims=0),
    helper.make_node("ReduceMax", ["x", "ax_neg"], ["max"]),
    helper.make_node("ReduceL2", ["x", "ax"], ["l2"]),
    helper.make_node("ReduceLogSumExp", ["x", "ax_neg"], ["lse"], keepdims=0),
    helper.make_node("ReduceSumSquare", ["x"], ["ssq_all"], keepdims=0),
    helper.make_node("ReduceProd", ["x", "empty"], ["noop"], noop_with_empty_axes=1),
    helper.make_node("ReduceMin", ["x", "empty"], ["min_all"], noop_with_empty_axes=0, keepdims=0),
], [[("x", x)]], ["mean", "max", "l2", "lse", "ssq_all", "noop", "min_all"], 18,
    inits=[("ax", i64(0, 2)), ("ax_neg", i64(-1)), ("empty", np.zeros(0, np.int64))])

# opset 18: Split into num_outputs parts (the last one shorter), and by sizes
x = f32(7, 3)
with_ort("split_num_outputs_18", [
    helper.make_node("Split", ["x"], ["a", "b", "c"], axis=0, num_outputs=3),
    helper.make_node("Split", ["x", "sizes"], ["d", "e"], axis=1),
], [[("x", x)]], ["a", "b", "c", "d", "e"], 18, inits=[("sizes", i64(1, 2))])

# opset 20: ReduceMax / ReduceMin of bool (any, all); opset 18's ScatterElements max
b = rng.uniform(size=(3, 4)) > 0.6
data = f32(3, 4)
idx = np.array([[1, 0, 2, 1], [0, 0, 1, 2]], dtype=np.int64)
upd = f32(2, 4)
with_ort("bool_reduce_scatter_max_20", [
    helper.make_node("ReduceMax", ["b", "ax"], ["any"], keepdims=0),
    helper.make_node("ReduceMin", ["b", "ax"], ["all"], keepdims=0),
    helper.make_node("ScatterElements", ["data", "idx", "upd"], ["smax"], axis=0, reduction="max"),
], [[("b", b), ("data", data), ("idx", idx), ("upd", upd)]], ["any", "all", "smax"], 20,
    inits=[("ax", i64(1))])

# opset 21: Cast with saturate (no effect outside float8), CastLike, Shape
# with start and end, Clip with only a lower bound
x = f32(2, 3, 4, lo=-300, hi=300)
with_ort("cast_shape_clip_21", [
    helper.make_node("Cast", ["x"], ["as_int"], to=TensorProto.INT32, saturate=1),
    helper.make_node("CastLike", ["as_int", "x"], ["back"]),
    helper.make_node("Shape", ["x"], ["mid"], start=1, end=-1),
    helper.make_node("Clip", ["x", "lo"], ["clipped"]),
], [[("x", x)]], ["as_int", "back", "mid", "clipped"], 21, inits=[("lo", np.array(-50, np.float32))])

# opset 21: GroupNormalization with per-channel scale and bias
x = f32(2, 6, 3, 3)
with_ort("group_norm_21", [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3,
                                            epsilon=1e-3)],
         [[("x", x)]], ["y"], 21, inits=[("s", f32(6)), ("b", f32(6))])

# opset 23: Attention, 8 query heads over 2 key/value heads, causal over a
# past cache, present_key / present_value out; batch and lengths symbolic,
# two bindings
def attn_inputs(bsz, sq, past):
    return [("q", f32(bsz, 8, sq, 16)), ("k", f32(bsz, 2, sq, 16)), ("v", f32(bsz, 2, sq, 16)),
            ("pk", f32(bsz, 2, past, 16)), ("pv", f32(bsz, 2, past, 16))]


with_ort("attention_gqa_past_23",
         [helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "present_k", "present_v"],
                           is_causal=1)],
         [attn_inputs(2, 3, 4), attn_inputs(1, 5, 2)], ["y", "present_k", "present_v"], 23,
         in_dims={"q": ["B", 8, "S", 16], "k": ["B", 2, "S", 16], "v": ["B", 2, "S", 16],
                  "pk": ["B", 2, "P", 16], "pv": ["B", 2, "P", 16]})

# opset 23: 3-D Attention with a float mask and softcap; RMSNormalization;
# RotaryEmbedding (interleaved, position ids, half the head rotated)
q3, k3, v3 = f32(2, 4, 24), f32(2, 6, 12), f32(2, 6, 12)
mask = f32(4, 6)
with_ort("attention3d_rms_rotary_23", [
    helper.make_node("Attention", ["q3", "k3", "v3", "mask"], ["y3"], q_num_heads=4, kv_num_heads=2, softcap=2.5),
    helper.make_node("RMSNormalization", ["y3", "gamma"], ["n3"], epsilon=1e-4),
    helper.make_node("RotaryEmbedding", ["q4", "cos", "sin", "pos"], ["r4"], interleaved=1,
                     rotary_embedding_dim=4),
], [[("q3", q3), ("k3", k3), ("v3", v3), ("mask", mask), ("q4", f32(2, 3, 5, 8)),
     ("pos", np.array([[0, 3, 5, 1, 2], [4, 4, 0, 1, 5]], np.int64))]], ["y3", "n3", "r4"], 23,
    inits=[("gamma", f32(24)), ("cos", f32(6, 2, lo=-1, hi=1)), ("sin", f32(6, 2, lo=-1, hi=1))])

# opset 3: the attribute forms before the current ones, against NumPy: Add
# with broadcast along axis 1, Mul with broadcast of the last dims, Relu's
# consumed_inputs, Tile's tiles and axis inputs, Concat's default axis 1,
# Clip's bounds as attributes (max absent: no upper bound)
a, bias, x2 = f32(2, 3, 4), f32(3), f32(2, 3)


def legacy():
    ins = [("a", a), ("bias", bias), ("row", f32(4)), ("x2", x2)]
    row = ins[2][1]
    outs = [("abias", a + bias[None, :, None]), ("arow", a * row), ("r", np.maximum(a + bias[None, :, None], 0)),
            ("tiled", np.tile(x2, (1, 3))), ("cat", np.concatenate([x2, x2], axis=1)),
            ("clip", np.maximum(a, np.float32(-0.5)))]
    nodes = [helper.make_node("Constant", [], ["tiles"], value=numpy_helper.from_array(i64(3))),
             helper.make_node("Constant", [], ["axis"], value=numpy_helper.from_array(i64(1))),
             helper.make_node("Add", ["a", "bias"], ["abias"], broadcast=1, axis=1),
             helper.make_node("Mul", ["a", "row"], ["arow"], broadcast=1),
             helper.make_node("Relu", ["abias"], ["r"], consumed_inputs=[0]),
             helper.make_node("Tile", ["x2", "tiles", "axis"], ["tiled"]),
             helper.make_node("Concat", ["x2", "x2"], ["cat"]),
             helper.make_node("Clip", ["a"], ["clip"], min=-0.5)]
    m = model(nodes, ins, [n for n, _ in outs], 3)
    m.ir_version = 3
    del m.graph.output[:]
    m.graph.output.extend(info(n, v) for n, v in outs)
    write("legacy_forms_3", m, [(ins, outs)])


legacy()

# opset 9: Dropout's mask has the input's type (bool from opset 10)
x = f32(2, 5)
with_numpy("dropout_mask_9", [helper.make_node("Dropout", ["x"], ["y", "mask"], ratio=0.3)], [("x", x)],
           [("y", x), ("mask", np.ones_like(x))], 9)
