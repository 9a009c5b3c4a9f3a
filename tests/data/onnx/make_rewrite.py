#!/usr/bin/env python3
"""Repeated nodes for the graph rewrite "cse" (graph/rewrite/rw_cse.c),
attention in the forms exporters write it for "attention"
(rw_attention.c), RMSNorm for "norm"
(rw_norm.c), and element-wise chains for "elementwise"
(rw_elementwise.c): each case a folder of rewrite/
in ONNX's backend-test layout, its expected outputs computed by ONNX
Runtime. tests/graph/onnx/test_onnx.c runs them with the rewrites on and
off and counts where the rewrite fired.

    cd tests/data/onnx && python3 make_rewrite.py

Needs numpy, onnx and onnxruntime."""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T, helper as h, numpy_helper

from onnx_case import write_data_set

B, L, S, H, D = 2, 5, 7, 3, 4
rng = np.random.default_rng(32)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def const(name, v):
    return h.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(v, np.float32), name))


def split_heads(x, out, n, perm, tag):
    """x [B, n, H*D] -> Reshape [B, n, H, D] -> Transpose(perm)."""
    return [h.make_node("Constant", [], [tag + "_shape"],
                        value=numpy_helper.from_array(np.array([0, 0, H, D], np.int64), tag + "_shape")),
            h.make_node("Reshape", [x, tag + "_shape"], [tag + "_4d"]),
            h.make_node("Transpose", [tag + "_4d"], [out], perm=perm)]


def softmax_nan0(scores, out):
    """Softmax, then Where(IsNaN(p), 0, p): rows masked everywhere give 0."""
    return [h.make_node("Softmax", [scores], ["p"], axis=-1), h.make_node("IsNaN", ["p"], ["p_nan"]),
            const("zero", 0.0), h.make_node("Where", ["p_nan", "zero", "p"], [out])]


def merge_heads(y, out):
    """y [B, H, L, D] -> Transpose(0, 2, 1, 3) -> Reshape [B, L, H*D]."""
    return [h.make_node("Transpose", [y], ["y_t"], perm=[0, 2, 1, 3]),
            h.make_node("Constant", [], ["y_shape"],
                        value=numpy_helper.from_array(np.array([0, 0, H * D], np.int64), "y_shape")),
            h.make_node("Reshape", ["y_t", "y_shape"], [out])]


def exported_form(mask_value=None, probs_out=False):
    """transformers' TorchScript form: q and kT each scaled by sqrt(scale),
    an additive mask, NaN rows to 0, heads split and merged around it."""
    c = float(D) ** -0.25
    nodes = split_heads("q", "qh", L, [0, 2, 1, 3], "q") + split_heads("k", "kt", S, [0, 2, 3, 1], "k")
    nodes += split_heads("v", "vh", S, [0, 2, 1, 3], "v")
    nodes += [const("cq", c), const("ck", c), h.make_node("Mul", ["qh", "cq"], ["qs"]),
              h.make_node("Mul", ["kt", "ck"], ["ks"]), h.make_node("MatMul", ["qs", "ks"], ["s0"]),
              h.make_node("Add", ["s0", "mask"], ["s"])]
    nodes += softmax_nan0("s", "pz") + [h.make_node("MatMul", ["pz", "vh"], ["yh"])] + merge_heads("yh", "y")
    mask = np.where(rng.random((B, 1, 1, S)) < 0.3, -np.inf, 0).astype(np.float32)
    if mask_value is not None:
        mask[...] = mask_value
    ins = [("q", f32(B, L, H * D)), ("k", f32(B, S, H * D)), ("v", f32(B, S, H * D)), ("mask", mask)]
    outs = ["y"] + (["p"] if probs_out else [])
    return nodes, ins, outs


def q_scaled_form():
    """transformers' Marian, BART and Whisper: q scaled by D^-0.5 right
    after its projection, before the head split; k and v not scaled, no
    mask. The rewrite takes the Mul into sdpa's scale too."""
    nodes = [const("cq", float(D) ** -0.5), h.make_node("Mul", ["q", "cq"], ["q_s"])]
    nodes += split_heads("q_s", "qh", L, [0, 2, 1, 3], "q") + split_heads("k", "kt", S, [0, 2, 3, 1], "k")
    nodes += split_heads("v", "vh", S, [0, 2, 1, 3], "v")
    nodes += [h.make_node("MatMul", ["qh", "kt"], ["s"]), h.make_node("Softmax", ["s"], ["p"], axis=-1),
              h.make_node("MatMul", ["p", "vh"], ["yh"])] + merge_heads("yh", "y")
    ins = [("q", f32(B, L, H * D)), ("k", f32(B, S, H * D)), ("v", f32(B, S, H * D))]
    return nodes, ins, ["y"]


def self_attention(scale_op):
    """q, k, v [B, L, H*D] -> head splits, scores scaled by scale_op with
    D^-0.5, the additive mask, softmax, values, merged heads -> y."""
    nodes = split_heads("q", "qh", L, [0, 2, 1, 3], "q") + split_heads("k", "kt", L, [0, 2, 3, 1], "k")
    nodes += split_heads("v", "vh", L, [0, 2, 1, 3], "v")
    nodes += [const("c", float(D) ** -0.5), h.make_node("MatMul", ["qh", "kt"], ["s0"]),
              h.make_node(scale_op, ["s0", "c"], ["s1"]), h.make_node("Add", ["s1", "mask"], ["s"]),
              h.make_node("Softmax", ["s"], ["p"], axis=-1), h.make_node("MatMul", ["p", "vh"], ["yh"])]
    return nodes + merge_heads("yh", "y")


def packed_form():
    """GPT-2's attention: one projection gives q | k | v side by side, a
    Split takes them apart, then the head splits, the scaled scores, an
    additive mask and the merge. sdpa reads the projection three times
    (packed) and the Split goes too."""
    E = H * D
    nodes = [h.make_node("MatMul", ["x", "w"], ["qkv"]),
             h.make_node("Constant", [], ["sizes"], value=numpy_helper.from_array(np.array([E, E, E], np.int64),
                                                                                   "sizes")),
             h.make_node("Split", ["qkv", "sizes"], ["q", "k", "v"], axis=2)]
    nodes += self_attention("Mul")
    mask = np.where(np.triu(np.ones((L, L)), 1) > 0, -np.inf, 0).astype(np.float32)
    ins = [("x", f32(B, L, 8)), ("mask", mask)]
    return nodes, ins, ["y"], [("w", f32(8, 3 * E))]


def qkv_linears_form():
    """BERT's self-attention: q, k and v each a MatMul + bias Add of one x
    (linear at import), then head splits, scaled scores, a mask and the
    merge. The rewrite makes one linear of the concatenated weights, read
    packed by sdpa."""
    C = 8
    nodes = []
    for t in "qkv":
        nodes += [h.make_node("MatMul", ["x", "w" + t], [t + "m"]), h.make_node("Add", [t + "m", "b" + t], [t])]
    nodes += self_attention("Div")
    mask = np.where(rng.random((B, 1, 1, L)) < 0.3, -1e4, 0).astype(np.float32)
    inits = [(n + t, f32(C, H * D) if n == "w" else f32(H * D)) for t in "qkv" for n in "wb"]
    return nodes, [("x", f32(B, L, C)), ("mask", mask)], ["y"], inits


def qkv_k_nobias_form():
    """Whisper's self-attention: q and v a MatMul + bias Add, k a MatMul
    alone. The rewrite still makes one linear, its bias q's | zeros | v's
    (the zeros made from q's bias, once per plan)."""
    C = 8
    nodes = []
    for t in "qkv":
        if t == "k":
            nodes += [h.make_node("MatMul", ["x", "wk"], ["k"])]
        else:
            nodes += [h.make_node("MatMul", ["x", "w" + t], [t + "m"]), h.make_node("Add", [t + "m", "b" + t], [t])]
    nodes += self_attention("Mul")
    mask = np.where(rng.random((B, 1, 1, L)) < 0.3, -1e4, 0).astype(np.float32)
    inits = [("w" + t, f32(C, H * D)) for t in "qkv"] + [("b" + t, f32(H * D)) for t in "qv"]
    return nodes, [("x", f32(B, L, C)), ("mask", mask)], ["y"], inits


def bhsd_div_form():
    """4-D heads given, K transposed by Transpose(0, 1, 3, 2), the scores
    divided by sqrt(D), no mask, the softmax read directly (the result is
    read by one more node: a graph output keeps its producer)."""
    nodes = [h.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), h.make_node("MatMul", ["q", "kt"], ["s0"]),
             const("sd", float(D) ** 0.5), h.make_node("Div", ["s0", "sd"], ["s"]),
             h.make_node("Softmax", ["s"], ["p"], axis=3), h.make_node("MatMul", ["p", "v"], ["a"]),
             h.make_node("Neg", ["a"], ["y"])]
    return nodes, [("q", f32(B, H, L, D)), ("k", f32(B, H, S, D)), ("v", f32(B, H, S, D + 2))], ["y"]


def kt_given_form():
    """K^T is a graph input [B, H, D, S]: sdpa needs K, so the rewrite
    transposes it; a [L, S] mask broadcast over batch and heads."""
    nodes = [h.make_node("MatMul", ["q", "kt"], ["s0"]), h.make_node("Add", ["mask", "s0"], ["s"]),
             h.make_node("Softmax", ["s"], ["p"], axis=-1), h.make_node("MatMul", ["p", "v"], ["a"]),
             h.make_node("Neg", ["a"], ["y"])]
    return nodes, [("q", f32(B, H, L, D)), ("kt", f32(B, H, D, S)), ("v", f32(B, H, S, D)), ("mask", f32(L, S))], ["y"]


def gelu_mlp_form():
    """A Transformer's MLP: MatMul, bias Add, Erf-GELU (Div, Erf, Add, Mul,
    Mul), MatMul, bias Add, the residual Add and a LayerNormalization: the
    GELU one ew_fused node, the two Adds after the second MatMul another."""
    C, F = 6, 10
    nodes = [h.make_node("MatMul", ["x", "w1"], ["m1"]), h.make_node("Add", ["m1", "b1"], ["hb"]),
             const("sqrt2", 2.0 ** 0.5), const("one", 1.0), const("half", 0.5),
             h.make_node("Div", ["hb", "sqrt2"], ["g0"]), h.make_node("Erf", ["g0"], ["g1"]),
             h.make_node("Add", ["g1", "one"], ["g2"]), h.make_node("Mul", ["hb", "g2"], ["g3"]),
             h.make_node("Mul", ["g3", "half"], ["g"]), h.make_node("MatMul", ["g", "w2"], ["m2"]),
             h.make_node("Add", ["m2", "b2"], ["r0"]), h.make_node("Add", ["r0", "x"], ["r"]),
             h.make_node("LayerNormalization", ["r", "ln_g", "ln_b"], ["y"], axis=-1)]
    ins = [("x", f32(B, L, C)), ("w1", f32(C, F)), ("b1", f32(F)), ("w2", f32(F, C)), ("b2", f32(C)),
           ("ln_g", f32(C)), ("ln_b", f32(C))]
    return nodes, ins, ["y"]


def hardswish_form():
    """HardSwish as the op and as HardSigmoid then Mul (MobileNetV3's
    exports), over [B, C, L], each read by a Transpose (a chain whose end
    is a graph output stays: its value is not the rewrite's to replace)."""
    nodes = [h.make_node("HardSwish", ["x0"], ["s0"]),
             h.make_node("HardSigmoid", ["x1"], ["hs"], alpha=1.0 / 6, beta=0.5),
             h.make_node("Mul", ["x1", "hs"], ["s1"]), h.make_node("Transpose", ["s0"], ["y0"], perm=[0, 2, 1]),
             h.make_node("Transpose", ["s1"], ["y1"], perm=[0, 2, 1])]
    return nodes, [("x0", 4 * f32(B, H, L)), ("x1", 4 * f32(B, H, L))], ["y0", "y1"]


def middle_output_form():
    """A chain whose middle value t is also a graph output: the group
    stops there (Mul and Sigmoid fuse; Add and Tanh do not: t is kept),
    and a value read twice (a) is a leaf."""
    nodes = [h.make_node("Add", ["x", "b"], ["a"]), h.make_node("Tanh", ["a"], ["t"]),
             h.make_node("Mul", ["t", "a"], ["u"]), h.make_node("Sigmoid", ["u"], ["v"]),
             h.make_node("Transpose", ["v"], ["y"], perm=[2, 1, 0])]
    return nodes, [("x", f32(B, L, D)), ("b", f32(D))], ["y", "t"]


def rms_t5_form():
    """T5's RMSNorm as its TorchScript export writes it: Pow(x, 2),
    ReduceMean(-1, keepdims), Add(eps), Sqrt, Div(1, .), Mul(x, .),
    Mul(weight, .), the weight an initializer; x also read by the residual
    Add after it."""
    C = 8
    nodes = [const("two", 2.0), const("eps", 1e-6), const("one", 1.0), h.make_node("Pow", ["x", "two"], ["p"]),
             h.make_node("ReduceMean", ["p"], ["r"], axes=[-1], keepdims=1), h.make_node("Add", ["r", "eps"], ["a"]),
             h.make_node("Sqrt", ["a"], ["s"]), h.make_node("Div", ["one", "s"], ["inv"]),
             h.make_node("Mul", ["x", "inv"], ["hn"]), h.make_node("Mul", ["w", "hn"], ["n"]),
             h.make_node("Add", ["n", "x"], ["y"])]
    return nodes, [("x", 3 * f32(B, L, C))], ["y"], [("w", f32(C))]


def rms_onnx_form():
    """ONNX RMSNormalization (opset 23) over the last axis, its scale an
    initializer (the importer's formula, then the rewrite), then a MatMul."""
    C = 12
    nodes = [h.make_node("RMSNormalization", ["x", "scale"], ["n"], axis=-1, epsilon=1e-5),
             h.make_node("MatMul", ["n", "m"], ["y"])]
    return nodes, [("x", f32(B, L, C))], ["y"], [("scale", f32(C)), ("m", f32(C, 5))], 23


def ln_residual_form():
    """A post-LN block: MatMul, bias Add, the residual Add of x, a
    LayerNormalization (taken into one layer_norm with the residual), then
    a MatMul; and a LayerNormalization of an Add that broadcasts (stays)."""
    C = 6
    nodes = [h.make_node("MatMul", ["x", "w"], ["m"]), h.make_node("Add", ["m", "b"], ["mb"]),
             h.make_node("Add", ["mb", "x"], ["r"]),
             h.make_node("LayerNormalization", ["r", "g", "be"], ["n"], axis=-1, epsilon=1e-5),
             h.make_node("MatMul", ["n", "w2"], ["y"]), h.make_node("Add", ["x", "p"], ["q"]),
             h.make_node("LayerNormalization", ["q", "g", "be"], ["n2"], axis=-1),
             h.make_node("MatMul", ["n2", "w2"], ["y2"])]
    return nodes, [("x", f32(B, L, C))], ["y", "y2"], [("w", f32(C, C)), ("b", f32(C)), ("g", f32(C)),
                                                       ("be", f32(C)), ("w2", f32(C, 3)), ("p", f32(1, L, C))]


def ln_prenorm_form():
    """Two pre-LN blocks (GPT-2, Whisper): h = x + MatMul(LN1(x)); the
    LayerNorm of h, whose sum the second residual Add reads too, becomes
    one layer_norm giving both; the last residual sum feeds the final
    LayerNorm only (the post-LN form) and its output is a graph output."""
    C = 6
    ln = lambda i, o: h.make_node("LayerNormalization", [i, "g", "be"], [o], axis=-1, epsilon=1e-5)
    nodes = [ln("x", "n1"), h.make_node("MatMul", ["n1", "w"], ["a1"]), h.make_node("Add", ["x", "a1"], ["h1"]),
             ln("h1", "n2"), h.make_node("MatMul", ["n2", "w"], ["a2"]), h.make_node("Add", ["h1", "a2"], ["h2"]),
             ln("h2", "y")]
    return nodes, [("x", f32(B, L, C))], ["y"], [("w", f32(C, C)), ("g", f32(C)), ("be", f32(C))]


def cse_form():
    """The additive mask built twice from one bool mask with each its own
    Constant nodes (as exporters write it per layer), each added to x: the
    second Where and the second Add repeat the first (2 merged); two
    Transposes of different perms and a Neg that is a graph output stay."""
    nodes = [const("lo1", -1e9), const("lo2", -1e9), const("z1", 0.0), const("z2", 0.0),
             h.make_node("Where", ["mask", "z1", "lo1"], ["a1"]), h.make_node("Where", ["mask", "z2", "lo2"], ["a2"]),
             h.make_node("Add", ["x", "a1"], ["y1"]), h.make_node("Add", ["x", "a2"], ["y2"]),
             h.make_node("Transpose", ["y1"], ["t1"], perm=[0, 2, 1]),
             h.make_node("Transpose", ["y2"], ["t2"], perm=[1, 0, 2]),
             h.make_node("Neg", ["x"], ["n1"]), h.make_node("Neg", ["x"], ["n2"]), h.make_node("Add", ["n1", "n2"], ["s"])]
    mask = rng.random((B, L, D)) < 0.7
    return nodes, [("x", f32(B, L, D)), ("mask", mask)], ["t1", "t2", "s", "n2"]


def save(name, nodes, ins, outs, inits=(), opset=17):
    def info(n, a):
        return h.make_tensor_value_info(n, h.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
    out_info = [h.make_tensor_value_info(n, T.FLOAT, None) for n in outs]
    graph = h.make_graph(nodes, name, [info(n, a) for n, a in ins], out_info,
                         initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model = onnx.shape_inference.infer_shapes(model)
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(outs, dict(ins))
    d = os.path.join("rewrite", name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    write_data_set(d, ins, list(zip(outs, got)))


def main():
    save("exported_bshd", *exported_form())
    # a row masked everywhere: the Where gives 0, and so must sdpa
    nodes, ins, outs = exported_form()
    ins[3][1][0, 0, 0, :] = -np.inf
    save("fully_masked_row", nodes, ins, outs)
    # the probabilities are an output too: nothing to fuse
    save("probs_output", *exported_form(probs_out=True))
    save("bhsd_div", *bhsd_div_form())
    save("kt_given", *kt_given_form())
    save("ew_gelu_mlp", *gelu_mlp_form())
    save("ew_hardswish", *hardswish_form())
    save("ew_middle_output", *middle_output_form())
    save("rms_t5", *rms_t5_form())
    save("rms_onnx", *rms_onnx_form())
    save("cse_mask", *cse_form())
    save("ln_residual", *ln_residual_form())
    save("q_scaled", *q_scaled_form())
    save("ln_prenorm", *ln_prenorm_form())
    save("packed_qkv", *packed_form())
    save("qkv_linears", *qkv_linears_form())
    save("qkv_k_nobias", *qkv_k_nobias_form())


if __name__ == "__main__":
    main()
