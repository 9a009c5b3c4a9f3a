"""Writes seq/<test>/ in ONNX's backend-test layout (model.onnx,
test_data_set_N/{input,output}_K.pb: TensorProto, SequenceProto or
OptionalProto as the model declares each) for the importer's sequences and
optionals (graph/onnx/onnx_seq.c, onnx_seq_map.c), the expected outputs
from ONNX Runtime (and checked against NumPy or PyTorch):

- torch_lists: torch.jit.script of a list built in a for loop over
  x.size(0) then torch.stack, and torch.split into a list, each part
  summed, torch.cat (TorchScript exporter: SequenceEmpty, Loop carrying a
  sequence, SequenceInsert, SequenceAt, SplitToSequence, SequenceLength,
  ConcatFromSequence with and without new_axis); N dynamic, two data sets.
- seq_ops: positions negative and left out (SequenceErase's last,
  SequenceInsert's end), SequenceAt, SequenceLength, SplitToSequence by a
  list of sizes and into parts of one without keepdims, ConcatFromSequence
  of 70 elements (more than one concat takes) and of a stack on the last
  axis; a sequence input of three and a sequence output.
- if_seq_runtime: an If on ReduceMax(x) > 0 (known only at run time) whose
  branches give sequences of two and optionals: a where per element; the
  two data sets take different branches.
- optional_ops: Optional of a tensor and of a sequence, OptionalHasElement
  and OptionalGetElement, an empty Optional; an optional input given with
  a value, then empty.

And models the importer refuses with one line naming node or input:
seq_input_unknown.onnx (a sequence input whose length is not given),
seq_split_dynamic.onnx (SplitToSequence of a dynamic dim into parts of
one), seq_if_lengths.onnx (an If known only at run time whose branches
give sequences of other lengths).

`clgraph onnx-test tests/data/onnx/seq` runs them (tests/graph/onnx/
test_onnx.c, every device). Needs numpy, onnx, onnxruntime and torch:
    python3 make_seq.py"""
import os
import warnings
from typing import List

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(31)
f32 = np.float32
FLOAT = TensorProto.FLOAT


def info(n, dt, shape):
    return helper.make_tensor_value_info(n, dt, shape)


def seq_info(n, dt, shape):
    return helper.make_tensor_sequence_value_info(n, dt, shape)


def opt_info(n, elem):
    return helper.make_value_info(n, helper.make_optional_type_proto(elem))


def const(name, a):
    return helper.make_node("Constant", [], [name], name=name, value=numpy_helper.from_array(np.asarray(a), name))


def proto(v, name, tp):
    """v as the proto its declared type asks for (as onnx.backend.test's
    cmd_tools writes test data)."""
    kind = tp.WhichOneof("value")
    if kind == "sequence_type":
        return numpy_helper.from_list([np.asarray(x) for x in v], name)
    if kind == "optional_type":
        return numpy_helper.from_optional(v if v is None or isinstance(v, list) else np.asarray(v), name)
    return numpy_helper.from_array(np.asarray(v), name)


def same(got, want):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    elif want is None:
        assert got is None, got
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def write(name, model, sets, want=None):
    """sets: lists of input values (arrays, lists of arrays, None) in graph
    order; want: the expected outputs per set, checked against ONNX
    Runtime's."""
    d = os.path.join(HERE, "seq", name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    o = ort.SessionOptions()
    o.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])
    g = model.graph
    for k, values in enumerate(sets):
        got = sess.run(None, {i.name: v for i, v in zip(g.input, values)})
        for j, x in enumerate(got):
            if want is not None:
                same(x, want[k][j])
        sd = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(sd, exist_ok=True)
        for kind, decl, vals in (("input", g.input, values), ("output", g.output, got)):
            for j, (vi, v) in enumerate(zip(decl, vals)):
                with open(os.path.join(sd, f"{kind}_{j}.pb"), "wb") as f:
                    f.write(proto(v, vi.name, vi.type).SerializeToString())


def model(graph, opset):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m, full_check=True)
    return m


# ---- torch.jit.script: lists ----


class Lists(torch.nn.Module):
    def forward(self, x):
        outs: List[torch.Tensor] = []
        for i in range(x.size(0)):
            outs.append(torch.relu(x[i]) * float(i))
        parts = torch.split(x, 2, dim=1)
        return torch.stack(outs, 0), torch.cat([p.sum(1, keepdim=True) for p in parts], 1)


def torch_lists():
    m = Lists().eval()
    d = os.path.join(HERE, "seq", "torch_lists")
    os.makedirs(d, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(torch.jit.script(m), (torch.randn(3, 5),), os.path.join(d, "model.onnx"),
                          input_names=["x"], output_names=["y", "z"], dynamic_axes={"x": {0: "N"}},
                          opset_version=17, dynamo=False)
    sets, want = [], []
    for n in (3, 6):
        x = rng.standard_normal((n, 5)).astype(f32)
        with torch.no_grad():
            y, z = m(torch.from_numpy(x))
        sets.append([x])
        want.append([y.numpy(), z.numpy()])
    write("torch_lists", onnx.load(os.path.join(d, "model.onnx")), sets, want)


# ---- the sequence operators, positions negative and left out ----


def seq_ops():
    nodes = [
        helper.make_node("SequenceErase", ["s"], ["s2"], name="/erase_last"),  # [a, b]
        const("minus1", np.int64(-1)),
        helper.make_node("SequenceInsert", ["s2", "x", "minus1"], ["s3"], name="/insert"),  # [a, x, b]
        helper.make_node("SequenceInsert", ["s3", "x"], ["s4"], name="/append"),  # [a, x, b, x]
        helper.make_node("SequenceAt", ["s4", "minus1"], ["last"], name="/at"),
        helper.make_node("SequenceLength", ["s4"], ["len"], name="/len"),
        helper.make_node("ConcatFromSequence", ["s4"], ["stacked"], name="/stack", axis=-1, new_axis=1),
        const("sizes", np.array([1, 2], np.int64)),
        helper.make_node("SplitToSequence", ["x", "sizes"], ["parts"], name="/split", axis=1),
        helper.make_node("SplitToSequence", ["long"], ["rows"], name="/rows", axis=0, keepdims=0),
        helper.make_node("Neg", ["x"], ["negx"], name="/neg"),
        helper.make_node("SequenceConstruct", ["negx", "x"], ["pair"], name="/pair"),
        helper.make_node("SequenceErase", ["pair", "minus1"], ["one"], name="/erase"),
        const("zero", np.int64(0)),
        helper.make_node("SequenceInsert", ["one", "x", "zero"], ["made"], name="/front"),  # [x, -x]
        helper.make_node("ConcatFromSequence", ["rows"], ["joined"], name="/join", axis=0),
    ]
    g = helper.make_graph(
        nodes, "seq_ops",
        [seq_info("s", FLOAT, [2, 3]), info("x", FLOAT, [2, 3]), info("long", FLOAT, [70, 3])],
        [info("last", FLOAT, [2, 3]), info("len", TensorProto.INT64, []), info("stacked", FLOAT, [2, 3, 4]),
         seq_info("parts", FLOAT, [2, None]), info("joined", FLOAT, [210]), seq_info("made", FLOAT, [2, 3])])
    s = [rng.standard_normal((2, 3)).astype(f32) for _ in range(3)]
    x = rng.standard_normal((2, 3)).astype(f32)
    long = rng.standard_normal((70, 3)).astype(f32)
    s4 = [s[0], x, s[1], x]
    want = [[x, np.int64(4), np.stack(s4, -1), [x[:, :1], x[:, 1:]], long.reshape(-1), [x, -x]]]
    write("seq_ops", model(g, 17), [[s, x, long]], want)


# ---- an If at run time with sequences and optionals ----


def if_seq_runtime():
    then_g = helper.make_graph(
        [helper.make_node("Mul", ["x", "x"], ["sq"], name="/then/sq"),
         helper.make_node("SequenceConstruct", ["sq", "x"], ["then_seq"], name="/then/seq"),
         helper.make_node("Optional", ["sq"], ["then_opt"], name="/then/opt")],
        "then", [], [seq_info("then_seq", FLOAT, [2, 3]), opt_info("then_opt", helper.make_tensor_type_proto(FLOAT, [2, 3]))])
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["neg"], name="/else/neg"),
         helper.make_node("SequenceConstruct", ["x", "neg"], ["else_seq"], name="/else/seq"),
         helper.make_node("Optional", ["neg"], ["else_opt"], name="/else/opt")],
        "else", [], [seq_info("else_seq", FLOAT, [2, 3]), opt_info("else_opt", helper.make_tensor_type_proto(FLOAT, [2, 3]))])
    nodes = [helper.make_node("ReduceMax", ["x"], ["m"], name="/max", keepdims=0), const("zero", f32(0)),
             helper.make_node("Greater", ["m", "zero"], ["c"], name="/gt"),
             helper.make_node("If", ["c"], ["s", "o"], name="/If", then_branch=then_g, else_branch=else_g),
             helper.make_node("OptionalGetElement", ["o"], ["got"], name="/get"),
             helper.make_node("ConcatFromSequence", ["s"], ["cat"], name="/cat", axis=0)]
    g = helper.make_graph(nodes, "if_seq_runtime", [info("x", FLOAT, [2, 3])],
                          [seq_info("s", FLOAT, [2, 3]), info("got", FLOAT, [2, 3]), info("cat", FLOAT, [4, 3])])
    pos = rng.uniform(-1, 1, (2, 3)).astype(f32)
    pos[0, 0] = 0.5
    neg = rng.uniform(-1, -0.1, (2, 3)).astype(f32)
    want = [[[pos * pos, pos], pos * pos, np.concatenate([pos * pos, pos])],
            [[neg, -neg], -neg, np.concatenate([neg, -neg])]]
    write("if_seq_runtime", model(g, 18), [[pos], [neg]], want)


# ---- optionals ----


def optional_ops():
    tt = helper.make_tensor_type_proto(FLOAT, [3])
    nodes = [helper.make_node("Optional", ["x"], ["ox"], name="/opt_x"),
             helper.make_node("OptionalGetElement", ["ox"], ["x_back"], name="/get_x"),
             helper.make_node("OptionalHasElement", ["maybe"], ["has_maybe"], name="/has_maybe"),
             helper.make_node("Optional", [], ["empty"], name="/empty", type=tt),
             helper.make_node("OptionalHasElement", ["empty"], ["has_empty"], name="/has_empty"),
             helper.make_node("SequenceConstruct", ["x", "x_back"], ["sx"], name="/seq"),
             helper.make_node("Optional", ["sx"], ["osx"], name="/opt_seq"),
             helper.make_node("OptionalGetElement", ["osx"], ["sx_back"], name="/get_seq"),
             helper.make_node("ConcatFromSequence", ["sx_back"], ["twice"], name="/cat", axis=0),
             helper.make_node("Add", ["twice", "twice"], ["y"], name="/add")]
    g = helper.make_graph(nodes, "optional_ops", [info("x", FLOAT, [3]), opt_info("maybe", tt)],
                          [info("y", FLOAT, [6]), info("has_maybe", TensorProto.BOOL, []),
                           info("has_empty", TensorProto.BOOL, [])])
    x = rng.standard_normal(3).astype(f32)
    want = [[np.concatenate([x, x]) * 2, np.bool_(True), np.bool_(False)],
            [np.concatenate([x, x]) * 2, np.bool_(False), np.bool_(False)]]
    write("optional_ops", model(g, 18), [[x, x], [x, None]], want)


# ---- refusals ----


def refusals():
    g = helper.make_graph([helper.make_node("SequenceLength", ["s"], ["n"], name="/len")], "seq_input_unknown",
                          [seq_info("s", FLOAT, [2])], [info("n", TensorProto.INT64, [])])
    onnx.save(model(g, 17), os.path.join(HERE, "seq_input_unknown.onnx"))
    g = helper.make_graph(
        [helper.make_node("SplitToSequence", ["x"], ["parts"], name="/split", axis=0, keepdims=0),
         helper.make_node("SequenceLength", ["parts"], ["n"], name="/len")], "seq_split_dynamic",
        [info("x", FLOAT, ["N", 3])], [info("n", TensorProto.INT64, [])])
    onnx.save(model(g, 17), os.path.join(HERE, "seq_split_dynamic.onnx"))
    then_g = helper.make_graph([helper.make_node("SequenceConstruct", ["x", "x"], ["two"], name="/then/seq")], "then",
                               [], [seq_info("two", FLOAT, [3])])
    else_g = helper.make_graph([helper.make_node("SequenceConstruct", ["x"], ["one"], name="/else/seq")], "else", [],
                               [seq_info("one", FLOAT, [3])])
    g = helper.make_graph(
        [helper.make_node("ReduceMax", ["x"], ["m"], name="/max", keepdims=0), const("zero", f32(0)),
         helper.make_node("Greater", ["m", "zero"], ["c"], name="/gt"),
         helper.make_node("If", ["c"], ["s"], name="/If", then_branch=then_g, else_branch=else_g),
         helper.make_node("ConcatFromSequence", ["s"], ["y"], name="/cat", axis=0)], "seq_if_lengths",
        [info("x", FLOAT, [3])], [info("y", FLOAT, [None])])
    onnx.save(model(g, 17), os.path.join(HERE, "seq_if_lengths.onnx"))


if __name__ == "__main__":
    torch_lists()
    seq_ops()
    if_seq_runtime()
    optional_ops()
    refusals()
