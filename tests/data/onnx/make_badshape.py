"""Writes badshape/NAME.onnx: one-node models of the compositions issue 31
added (Attention, the normalizations, activations, losses, position ops,
RotaryEmbedding, windows, AffineGrid, TensorScatter, SwiGLU, LRN) with
inputs or attribute values those ops cannot take (wrong ranks, heads that do not divide, an
unknown mode, a size only known at run time). Each must fail to import with
one line naming the node, never crash: tests/graph/onnx/test_onnx.c
(bad_shapes_refused). The models are not run through onnx.checker.
Needs numpy and onnx: python3 make_badshape.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def save(name, op, inputs, outputs, inits=(), opset=23, domain="", **attrs):
    """inputs/outputs: (name, type, shape); inits: (name, array)."""
    node = helper.make_node(op, [n for n, _, _ in inputs] + [n for n, _ in inits], [n for n, _, _ in outputs],
                            name="bad_" + name, domain=domain, **attrs)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs if n],
                          [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
                          initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    os.makedirs("badshape", exist_ok=True)
    onnx.save(m, os.path.join("badshape", name + ".onnx"))


def t(name, shape, kind=F):
    return (name, kind, shape)


Y = [t("y", None)]
q4, k4, v4 = t("q", [1, 3, 4, 8]), t("k", [1, 2, 4, 8]), t("v", [1, 2, 4, 8])
save("attention_rank2", "Attention", [t("q", [4, 8]), t("k", [4, 8]), t("v", [4, 8])], Y)
save("attention_3d_no_heads", "Attention", [t("q", [1, 4, 8]), t("k", [1, 4, 8]), t("v", [1, 4, 8])], Y)
save("attention_heads_not_multiple", "Attention", [q4, k4, v4], Y)
save("attention_mode5", "Attention", [t("q", [1, 2, 4, 8]), k4, v4], Y, qk_matmul_output_mode=5)
save("attention_past_key_only", "Attention", [t("q", [1, 2, 4, 8]), k4, v4, t("", None), t("pk", [1, 2, 3, 8])], Y)
save("attention_mask_int", "Attention", [t("q", [1, 2, 4, 8]), k4, v4, t("m", [4, 4], I64)], Y)
save("attention_window_below_minus_one", "Attention", [t("q", [1, 2, 4, 8]), k4, v4], Y, opset=25,
     left_window_size=-3)
save("rms_axis_out_of_range", "RMSNormalization", [t("x", [2, 3])], Y, inits=[("s", np.ones(3, np.float32))],
     axis=5)
save("groupnorm_groups_do_not_divide", "GroupNormalization", [t("x", [1, 6, 2])], Y,
     inits=[("s", np.ones(6, np.float32)), ("b", np.zeros(6, np.float32))], opset=21, num_groups=4)
save("batchnorm_training_mode", "BatchNormalization", [t("x", [2, 3, 4])], Y,
     inits=[(n, np.ones(3, np.float32)) for n in ("s", "b", "m", "var")], opset=15, training_mode=1)
save("lpnorm_p3", "LpNormalization", [t("x", [2, 3])], Y, p=3)
save("nll_rank_mismatch", "NegativeLogLikelihoodLoss", [t("x", [2, 3]), t("tg", [2, 3], I64)], Y)
save("nll_reduction_max", "NegativeLogLikelihoodLoss", [t("x", [2, 3]), t("tg", [2], I64)], Y, reduction="max")
save("sce_float_target", "SoftmaxCrossEntropyLoss", [t("x", [2, 3]), t("tg", [2])], Y)
save("rotary_odd_dim", "RotaryEmbedding", [t("x", [1, 2, 3, 8]), t("c", [1, 3, 2]), t("s", [1, 3, 2])], Y,
     rotary_embedding_dim=3)
save("rotary_3d_no_heads", "RotaryEmbedding", [t("x", [1, 3, 8]), t("c", [1, 3, 4]), t("s", [1, 3, 4])], Y)
save("gelu_approximate_fast", "Gelu", [t("x", [2, 3])], Y, opset=20, approximate="fast")
save("eyelike_3d", "EyeLike", [t("x", [2, 2, 2])], Y)
save("reversesequence_same_axes", "ReverseSequence", [t("x", [3, 2]), t("l", [2], I64)], Y, batch_axis=0,
     time_axis=0)
save("compress_runtime_condition", "Compress", [t("x", [3, 2]), t("c", [3], B)], Y, axis=0)
save("tensorscatter_mode_ring", "TensorScatter", [t("p", [1, 4, 2]), t("u", [1, 1, 2])], Y, opset=24,
     axis=1, mode="ring")
save("hannwindow_runtime_size", "HannWindow", [t("n", [], I64)], Y, opset=17)
save("affinegrid_size_too_short", "AffineGrid", [t("th", [1, 2, 3])], Y,
     inits=[("sz", np.array([1, 3, 4], np.int64))], opset=20)
save("hardmax_axis_out_of_range", "Hardmax", [t("x", [2, 3])], Y, axis=4)
save("lrn_size_0", "LRN", [t("x", [1, 3, 2, 2])], Y, size=0)
save("swiglu_shapes_differ", "SwiGLU", [t("a", [2, 3]), t("b", [2, 1])], Y, opset=28)
save("cumprod_float_axis", "CumProd", [t("x", [2, 3])], Y, inits=[("ax", np.array(1.0, np.float32))], opset=26)
