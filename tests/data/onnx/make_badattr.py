"""Writes badattr/NAME.onnx: one-node models whose one attribute has the
wrong type for its op (Softmax's axis as a FLOAT, Cast's `to` as a STRING,
...). Each must fail to import with one line naming the node, the attribute
and both types; the importer used to read such an attribute as absent and
use the op's default. tests/graph/onnx/test_onnx.c (bad_attribute_types)
and tests/badinput/cases_misread.sh import every file here. The models are
not run through onnx.checker, which would refuse them.
Needs numpy and onnx: python3 make_badattr.py"""
import os

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def attr(name, kind, value):
    """An attribute of the given (wrong) kind, made by hand."""
    a = AttributeProto()
    a.name = name
    a.type = kind
    if kind == AttributeProto.FLOAT:
        a.f = value
    elif kind == AttributeProto.INT:
        a.i = value
    elif kind == AttributeProto.STRING:
        a.s = value.encode()
    elif kind == AttributeProto.FLOATS:
        a.floats.extend(value)
    elif kind == AttributeProto.INTS:
        a.ints.extend(value)
    elif kind == AttributeProto.STRINGS:
        a.strings.extend(v.encode() for v in value)
    elif kind == AttributeProto.TENSOR:
        a.t.CopyFrom(numpy_helper.from_array(np.asarray(value, dtype=np.float32), "v"))
    return a


def save(name, op, inputs, outputs, bad, inits=(), opset=13, extra=()):
    """inputs/outputs: (name, shape) of f32 values; bad: the wrong attribute."""
    node = helper.make_node(op, [n for n, _ in inputs] + [n for n, _ in inits], [n for n, _ in outputs],
                            name="bad_" + name)
    node.attribute.extend(list(extra) + [bad])
    g = helper.make_graph([node], name, [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, F, s) for n, s in outputs],
                          initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    os.makedirs("badattr", exist_ok=True)
    onnx.save(m, os.path.join("badattr", name + ".onnx"))


A = AttributeProto
x23 = [("x", [2, 3])]
y23 = [("y", [2, 3])]
w = np.ones((3, 3), dtype=np.float32)
save("softmax_axis_float", "Softmax", x23, y23, attr("axis", A.FLOAT, 0.0))
save("softmax_axis_string", "Softmax", x23, y23, attr("axis", A.STRING, "1"))
save("logsoftmax_axis_floats", "LogSoftmax", x23, y23, attr("axis", A.FLOATS, [1.0]))
save("concat_axis_float", "Concat", [("x", [2, 3]), ("z", [2, 3])], [("y", [4, 3])], attr("axis", A.FLOAT, 0.0))
save("gather_axis_string", "Gather", x23, [("y", [2, 3])], attr("axis", A.STRING, "0"),
     inits=[("i", np.array([0, 1], dtype=np.int64))])
save("flatten_axis_float", "Flatten", x23, [("y", [2, 3])], attr("axis", A.FLOAT, 1.0))
save("transpose_perm_int", "Transpose", x23, [("y", [3, 2])], attr("perm", A.INT, 1))
save("transpose_perm_floats", "Transpose", x23, [("y", [3, 2])], attr("perm", A.FLOATS, [1.0, 0.0]))
save("leakyrelu_alpha_int", "LeakyRelu", x23, y23, attr("alpha", A.INT, 1))
save("leakyrelu_alpha_string", "LeakyRelu", x23, y23, attr("alpha", A.STRING, "0.1"))
save("elu_alpha_ints", "Elu", x23, y23, attr("alpha", A.INTS, [1]))
save("hardsigmoid_beta_int", "HardSigmoid", x23, y23, attr("beta", A.INT, 0))
save("gemm_alpha_int", "Gemm", x23, [("y", [2, 3])], attr("alpha", A.INT, 2), inits=[("w", w)])
save("gemm_transb_float", "Gemm", x23, [("y", [2, 3])], attr("transB", A.FLOAT, 1.0), inits=[("w", w)])
save("cast_to_float", "Cast", x23, y23, attr("to", A.FLOAT, 1.0))
save("cast_to_string", "Cast", x23, y23, attr("to", A.STRING, "FLOAT"))
save("reducemean_axes_int", "ReduceMean", x23, [("y", [2, 1])], attr("axes", A.INT, 1))
save("reducemean_keepdims_float", "ReduceMean", x23, [("y", [2, 1])], attr("keepdims", A.FLOAT, 1.0),
     extra=[attr("axes", A.INTS, [1])])
save("reducesum_keepdims_string", "ReduceSum", x23, [("y", [2, 1])], attr("keepdims", A.STRING, "1"),
     extra=[attr("axes", A.INTS, [1])], opset=11)
save("reducemax_axes_floats", "ReduceMax", x23, [("y", [2])], attr("axes", A.FLOATS, [1.0]))
save("argmax_axis_float", "ArgMax", x23, [("y", [2, 1])], attr("axis", A.FLOAT, 1.0))
save("argmax_keepdims_string", "ArgMax", x23, [("y", [2, 1])], attr("keepdims", A.STRING, "1"))
save("squeeze_axes_int", "Squeeze", [("x", [1, 3])], [("y", [3])], attr("axes", A.INT, 0), opset=11)
save("unsqueeze_axes_float", "Unsqueeze", x23, [("y", [1, 2, 3])], attr("axes", A.FLOAT, 0.0), opset=11)
save("split_axis_float", "Split", [("x", [2, 4])], [("y", [2, 2]), ("z", [2, 2])], attr("axis", A.FLOAT, 1.0))
save("split_split_int", "Split", [("x", [2, 4])], [("y", [2, 2]), ("z", [2, 2])], attr("split", A.INT, 2),
     extra=[attr("axis", A.INT, 1)], opset=11)
save("layernorm_epsilon_int", "LayerNormalization", x23, y23, attr("epsilon", A.INT, 0),
     inits=[("g", np.ones(3, dtype=np.float32))], opset=17)
save("layernorm_axis_float", "LayerNormalization", x23, y23, attr("axis", A.FLOAT, -1.0),
     inits=[("g", np.ones(3, dtype=np.float32))], opset=17)
save("einsum_equation_int", "Einsum", [("x", [2, 3]), ("z", [3, 2])], [("y", [2, 2])], attr("equation", A.INT, 1),
     opset=12)
save("constant_value_float_int", "Constant", [], [("y", [])], attr("value_float", A.INT, 1))
save("constant_value_float", "Constant", [], [("y", [])], attr("value", A.FLOAT, 1.0))
save("constant_value_ints_floats", "Constant", [], [("y", [2])], attr("value_ints", A.FLOATS, [1.0, 2.0]))
save("constantofshape_value_float", "ConstantOfShape", [], [("y", [2, 3])], attr("value", A.FLOAT, 1.0),
     inits=[("s", np.array([2, 3], dtype=np.int64))])
save("clip_min_int", "Clip", x23, y23, attr("min", A.INT, 0), opset=6)
save("clip_max_string", "Clip", x23, y23, attr("max", A.STRING, "1"), opset=6)
save("cumsum_reverse_float", "CumSum", x23, y23, attr("reverse", A.FLOAT, 1.0),
     inits=[("a", np.array(1, dtype=np.int64))])
save("topk_axis_float", "TopK", x23, [("y", [2, 1]), ("i", [2, 1])], attr("axis", A.FLOAT, 1.0),
     inits=[("k", np.array([1], dtype=np.int64))])
save("topk_largest_string", "TopK", x23, [("y", [2, 1]), ("i", [2, 1])], attr("largest", A.STRING, "1"),
     inits=[("k", np.array([1], dtype=np.int64))])
save("trilu_upper_float", "Trilu", [("x", [3, 3])], [("y", [3, 3])], attr("upper", A.FLOAT, 1.0), opset=14)
gw = np.ones((1, 3 * 4, 3), dtype=np.float32)
gr = np.ones((1, 3 * 4, 4), dtype=np.float32)
lw = np.ones((1, 4 * 4, 3), dtype=np.float32)
lr = np.ones((1, 4 * 4, 4), dtype=np.float32)
seq = [("x", [5, 1, 3])]
gru_out = [("y", [5, 1, 1, 4])]
save("gru_direction_int", "GRU", seq, gru_out, attr("direction", A.INT, 0), inits=[("w", gw), ("r", gr)],
     extra=[attr("hidden_size", A.INT, 4)])
save("gru_hidden_size_float", "GRU", seq, gru_out, attr("hidden_size", A.FLOAT, 4.0), inits=[("w", gw), ("r", gr)])
save("gru_linear_before_reset_float", "GRU", seq, gru_out, attr("linear_before_reset", A.FLOAT, 1.0),
     inits=[("w", gw), ("r", gr)], extra=[attr("hidden_size", A.INT, 4)])
save("lstm_activations_string", "LSTM", seq, gru_out, attr("activations", A.STRING, "Sigmoid"),
     inits=[("w", lw), ("r", lr)], extra=[attr("hidden_size", A.INT, 4)])
save("lstm_direction_strings", "LSTM", seq, gru_out, attr("direction", A.STRINGS, ["forward"]),
     inits=[("w", lw), ("r", lr)], extra=[attr("hidden_size", A.INT, 4)])
save("reshape_allowzero_float", "Reshape", x23, [("y", [3, 2])], attr("allowzero", A.FLOAT, 0.0),
     inits=[("s", np.array([3, 2], dtype=np.int64))], opset=14)
save("onehot_axis_float", "OneHot", [("x", [2])], [("y", [2, 3])], attr("axis", A.FLOAT, -1.0),
     inits=[("d", np.array(3, dtype=np.int64)), ("v", np.array([0, 1], dtype=np.float32))], opset=11)
save("gatherelements_axis_string", "GatherElements", x23, y23, attr("axis", A.STRING, "1"),
     inits=[("i", np.zeros((2, 3), dtype=np.int64))])
save("scatterelements_reduction_int", "ScatterElements", x23, y23, attr("reduction", A.INT, 1),
     inits=[("i", np.zeros((2, 3), dtype=np.int64)), ("u", np.ones((2, 3), dtype=np.float32))], opset=16)
save("mod_fmod_float", "Mod", [], y23, attr("fmod", A.FLOAT, 1.0),
     inits=[("a", np.full((2, 3), 5, dtype=np.float32)), ("b", np.full((2, 3), 3, dtype=np.float32))])
save("dropout_ratio_int", "Dropout", x23, y23, attr("ratio", A.INT, 0), opset=10)
