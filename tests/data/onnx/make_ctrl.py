"""Writes ctrl/<test>/ in ONNX's backend-test layout (model.onnx,
test_data_set_N/{input,output}_K.pb) for the importer's control flow (If,
Loop, Scan: graph/onnx/onnx_ctrl.c), the expected outputs from ONNX Runtime
(and checked against NumPy or PyTorch where the script can say them):

- torch_loop_if: torch.jit.script of a for loop over x.size(0) and an `if`
  on h.sum() > 0, TorchScript exporter (Loop with an outer input and
  initializers read inside the body; If decided at run time); batch
  dynamic; the two data sets take different branches.
- if_runtime_nested: an If on ReduceMax(x) > 0.5 (known only at run time)
  with two outputs, a nested If (decided at import) in then_branch reading
  the branch's values, an initializer inside else_branch; the two data
  sets take different branches.
- loop_while: a Loop without a trip count whose condition is computed from
  the iteration number (known at import each iteration), scan outputs.
- loop_nested: a Loop in a Loop body reading the outer body's iteration
  number and carried value, an If inside deciding on the inner iteration.
- if_on_dims: an If on Shape(x)[0] == 1 with x's first dim dynamic, its
  branches of other ranks: decided by the dims of the x given for the
  import (one data set per branch).
- if_on_mode: an If on Equal(mode, 1) with `mode` an int64 graph input (a
  mode switch, as silero-vad's sample rate), its branches of other ranks:
  imported once as two variants of the graph (`when mode.value == 1` and
  `!= 1`), each data set taking one.
- scan9_axes: Scan with scan_input_axes, scan_input_directions,
  scan_output_axes (negative too) and scan_output_directions.

And two models the importer refuses with one line naming the node:
ctrl_loop_symbolic.onnx (the torch loop over a dynamic length) and
ctrl_if_shapes.onnx (an If known only at run time whose branches differ in
shape).

`clgraph onnx-test tests/data/onnx/ctrl` runs them (tests/graph/onnx/
test_onnx.c, every device). Needs numpy, onnx, onnxruntime and torch:
    python3 make_ctrl.py"""
import os
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(31)
f32 = np.float32


def info(n, dt, shape):
    return helper.make_tensor_value_info(n, dt, shape)


def const(name, a):
    return helper.make_node("Constant", [], [name], name=name, value=numpy_helper.from_array(np.asarray(a), name))


def write(name, model, sets, want=None):
    """sets: lists of input arrays in graph order; want: the expected
    outputs per set where the script computes them too (checked against
    ONNX Runtime's)."""
    d = os.path.join(HERE, "ctrl", name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    o = ort.SessionOptions()
    o.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])
    ins = [i.name for i in sess.get_inputs()]
    outs = [x.name for x in sess.get_outputs()]
    for k, arrays in enumerate(sets):
        got = sess.run(None, dict(zip(ins, arrays)))
        for j, g in enumerate(got):
            if want is not None:
                np.testing.assert_allclose(g, want[k][j], rtol=1e-5, atol=1e-6)
        sd = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(sd, exist_ok=True)
        for kind, names, vals in (("input", ins, arrays), ("output", outs, got)):
            for j, (n, a) in enumerate(zip(names, vals)):
                with open(os.path.join(sd, f"{kind}_{j}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(np.asarray(a), n).SerializeToString())


def model(graph, opset):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m, full_check=True)
    return m


# ---- torch.jit.script: a for loop and an if ----
class Loopy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, h):
        for i in range(x.size(0)):
            h = torch.tanh(self.lin(x[i]) + h)
        if h.sum() > 0:
            y = h * 2
        else:
            y = -h
        return h, y


def torch_loop_if():
    torch.manual_seed(31)
    m = Loopy().eval()
    d = os.path.join(HERE, "ctrl", "torch_loop_if")
    os.makedirs(d, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(torch.jit.script(m), (torch.randn(5, 3, 4), torch.zeros(3, 4)),
                          os.path.join(d, "model.onnx"), input_names=["x", "h"], output_names=["hn", "y"],
                          dynamic_axes={"x": {1: "B"}, "h": {0: "B"}}, opset_version=17, dynamo=False)
    sets, want, signs = [], [], []
    for batch in (3, 2):  # a data set per branch of the if
        for _ in range(100):
            x = rng.standard_normal((5, batch, 4)).astype(f32)
            h = rng.standard_normal((batch, 4)).astype(f32)
            with torch.no_grad():
                hn, y = m(torch.from_numpy(x), torch.from_numpy(h))
            if (hn.sum() > 0) == (batch == 3) and abs(float(hn.sum())) > 0.1:
                break
        sets.append([x, h])
        want.append([hn.numpy(), y.numpy()])
    write("torch_loop_if", onnx.load(os.path.join(d, "model.onnx")), sets, want)


# ---- If at run time with a nested If decided at import ----
def if_runtime_nested():
    inner = helper.make_node(
        "If", ["k_is_two"], ["inner_out"], name="/then/inner",
        then_branch=helper.make_graph([helper.make_node("Mul", ["sq", "two"], ["twice"], name="/then/inner/twice")],
                                      "inner_then", [], [info("twice", TensorProto.FLOAT, [2, 3])]),
        else_branch=helper.make_graph([helper.make_node("Neg", ["sq"], ["neg"], name="/then/inner/neg")],
                                      "inner_else", [], [info("neg", TensorProto.FLOAT, [2, 3])]))
    then_g = helper.make_graph(
        [helper.make_node("Mul", ["x", "x"], ["sq"], name="/then/sq"), const("two", f32(2)),
         const("k", np.int64(2)), const("kk", np.int64(2)),
         helper.make_node("Equal", ["k", "kk"], ["k_is_two"], name="/then/eq"), inner,
         helper.make_node("ReduceSum", ["x"], ["then_sum"], name="/then/sum", keepdims=0)],
        "then", [], [info("inner_out", TensorProto.FLOAT, [2, 3]), info("then_sum", TensorProto.FLOAT, [])])
    w = rng.standard_normal((2, 3)).astype(f32)
    else_g = helper.make_graph(
        [helper.make_node("Add", ["x", "w_else"], ["shifted"], name="/else/add"),
         helper.make_node("ReduceMax", ["x"], ["else_max"], name="/else/max", keepdims=0)],
        "else", [], [info("shifted", TensorProto.FLOAT, [2, 3]), info("else_max", TensorProto.FLOAT, [])],
        initializer=[numpy_helper.from_array(w, "w_else")])
    nodes = [helper.make_node("ReduceMax", ["x"], ["m"], name="/max", keepdims=0), const("half", f32(0.5)),
             helper.make_node("Greater", ["m", "half"], ["c"], name="/gt"),
             helper.make_node("If", ["c"], ["y", "s"], name="/If", then_branch=then_g, else_branch=else_g)]
    g = helper.make_graph(nodes, "if_runtime_nested", [info("x", TensorProto.FLOAT, [2, 3])],
                          [info("y", TensorProto.FLOAT, [2, 3]), info("s", TensorProto.FLOAT, [])])
    big = rng.uniform(-1, 1, (2, 3)).astype(f32)
    big[1, 2] = 0.9
    small = rng.uniform(-1, 0.4, (2, 3)).astype(f32)
    want = [[big * big * 2, big.sum()], [small + w, small.max()]]
    write("if_runtime_nested", model(g, 13), [[big], [small]], want)


# ---- Loop without a trip count: a while loop on the iteration number ----
def loop_while():
    body = helper.make_graph(
        [const("three", np.int64(3)), helper.make_node("Less", ["i", "three"], ["go_on"], name="/body/less"),
         const("decay", f32(0.5)),
         helper.make_node("Mul", ["y_in", "decay"], ["scaled"], name="/body/mul"),
         helper.make_node("Add", ["scaled", "x"], ["y_out"], name="/body/add"),
         helper.make_node("Cast", ["i"], ["i_f"], name="/body/cast", to=TensorProto.FLOAT),
         helper.make_node("Mul", ["y_out", "i_f"], ["scan"], name="/body/scan")],
        "body", [info("i", TensorProto.INT64, []), info("cond_in", TensorProto.BOOL, []),
                 info("y_in", TensorProto.FLOAT, [3])],
        [info("go_on", TensorProto.BOOL, []), info("y_out", TensorProto.FLOAT, [3]),
         info("scan", TensorProto.FLOAT, [3])])
    nodes = [const("yes", np.bool_(True)),
             helper.make_node("Loop", ["", "yes", "y0"], ["y", "ys"], name="/Loop", body=body)]
    g = helper.make_graph(nodes, "loop_while", [info("x", TensorProto.FLOAT, [3]), info("y0", TensorProto.FLOAT, [3])],
                          [info("y", TensorProto.FLOAT, [3]), info("ys", TensorProto.FLOAT, [None, 3])])
    x, y0 = rng.standard_normal(3).astype(f32), rng.standard_normal(3).astype(f32)
    y, ys = y0, []
    for i in range(4):  # i = 0..3; the condition after i = 3 is false
        y = y * f32(0.5) + x
        ys.append(y * f32(i))
    write("loop_while", model(g, 13), [[x, y0]], [[y, np.stack(ys)]])


# ---- a Loop in a Loop body, an If inside on the inner iteration ----
def loop_nested():
    pick = helper.make_node(
        "If", ["j_is_1"], ["step"], name="/inner/pick",
        then_branch=helper.make_graph([helper.make_node("Mul", ["t_in", "io_f"], ["t_scaled"], name="/pick/mul")],
                                      "pick_then", [], [info("t_scaled", TensorProto.FLOAT, [2])]),
        else_branch=helper.make_graph([helper.make_node("Add", ["t_in", "acc_in"], ["t_plus"], name="/pick/add")],
                                      "pick_else", [], [info("t_plus", TensorProto.FLOAT, [2])]))
    inner = helper.make_graph(
        [const("one", np.int64(1)), helper.make_node("Equal", ["j", "one"], ["j_is_1"], name="/inner/eq"), pick,
         helper.make_node("Add", ["step", "x"], ["t_out"], name="/inner/add"),
         helper.make_node("Identity", ["c_in"], ["c_out"], name="/inner/cond")],
        "inner", [info("j", TensorProto.INT64, []), info("c_in", TensorProto.BOOL, []),
                  info("t_in", TensorProto.FLOAT, [2])],
        [info("c_out", TensorProto.BOOL, []), info("t_out", TensorProto.FLOAT, [2])])
    outer = helper.make_graph(
        [helper.make_node("Cast", ["io"], ["io_f"], name="/outer/cast", to=TensorProto.FLOAT),
         const("two", np.int64(2)), const("t", np.bool_(True)),
         helper.make_node("Loop", ["two", "t", "acc_in"], ["acc_out"], name="/outer/Loop", body=inner),
         helper.make_node("Identity", ["oc_in"], ["oc_out"], name="/outer/cond"),
         helper.make_node("Identity", ["acc_out"], ["acc_seen"], name="/outer/seen")],
        "outer", [info("io", TensorProto.INT64, []), info("oc_in", TensorProto.BOOL, []),
                  info("acc_in", TensorProto.FLOAT, [2])],
        [info("oc_out", TensorProto.BOOL, []), info("acc_out", TensorProto.FLOAT, [2]),
         info("acc_seen", TensorProto.FLOAT, [2])])
    nodes = [const("n", np.int64(3)), const("yes", np.bool_(True)),
             helper.make_node("Loop", ["n", "yes", "a0"], ["acc", "accs"], name="/Loop", body=outer)]
    g = helper.make_graph(nodes, "loop_nested", [info("x", TensorProto.FLOAT, [2]), info("a0", TensorProto.FLOAT, [2])],
                          [info("acc", TensorProto.FLOAT, [2]), info("accs", TensorProto.FLOAT, [3, 2])])
    x, a0 = rng.standard_normal(2).astype(f32), rng.standard_normal(2).astype(f32)
    acc, accs = a0, []
    for io in range(3):
        t = acc
        for j in range(2):
            t = (t * f32(io) if j == 1 else t + acc) + x
        acc = t
        accs.append(acc)
    write("loop_nested", model(g, 13), [[x, a0]], [[acc, np.stack(accs)]])


# ---- Scan with axes and directions ----
def scan9_axes():
    body = helper.make_graph(
        [helper.make_node("Mul", ["a", "b"], ["ab"], name="/body/mul"),
         helper.make_node("Add", ["s_in", "ab"], ["s_out"], name="/body/add"),
         helper.make_node("Sub", ["a", "b"], ["d"], name="/body/sub"),
         helper.make_node("Identity", ["s_out"], ["s_seen"], name="/body/seen")],
        "body", [info("s_in", TensorProto.FLOAT, [2]), info("a", TensorProto.FLOAT, [2]),
                 info("b", TensorProto.FLOAT, [2])],
        [info("s_out", TensorProto.FLOAT, [2]), info("s_seen", TensorProto.FLOAT, [2]),
         info("d", TensorProto.FLOAT, [2])])
    node = helper.make_node("Scan", ["s0", "A", "B"], ["s", "S", "D"], name="/Scan", body=body, num_scan_inputs=2,
                            scan_input_axes=[1, 0], scan_input_directions=[0, 1], scan_output_axes=[1, -1],
                            scan_output_directions=[1, 0])
    g = helper.make_graph([node], "scan9_axes",
                          [info("s0", TensorProto.FLOAT, [2]), info("A", TensorProto.FLOAT, [2, 4]),
                           info("B", TensorProto.FLOAT, [4, 2])],
                          [info("s", TensorProto.FLOAT, [2]), info("S", TensorProto.FLOAT, [2, 4]),
                           info("D", TensorProto.FLOAT, [2, 4])])
    s0 = rng.standard_normal(2).astype(f32)
    A, B = rng.standard_normal((2, 4)).astype(f32), rng.standard_normal((4, 2)).astype(f32)
    s, S, D = s0, [], []
    for t in range(4):
        a, b = A[:, t], B[3 - t]
        s = s + a * b
        S.append(s)
        D.append(a - b)
    write("scan9_axes", model(g, 16), [[s0, A, B]], [[s, np.stack(S[::-1], axis=1), np.stack(D, axis=-1)]])


# ---- an If on a dim of a dynamic input: decided by the given input's dims ----
def if_on_dims():
    then_g = helper.make_graph([const("ax", np.array([0], np.int64)),
                                helper.make_node("Squeeze", ["x", "ax"], ["row"], name="/then/squeeze")],
                               "then", [], [info("row", TensorProto.FLOAT, [3])])
    else_g = helper.make_graph([helper.make_node("Identity", ["x"], ["all"], name="/else/id")], "else", [],
                               [info("all", TensorProto.FLOAT, ["N", 3])])
    nodes = [helper.make_node("Shape", ["x"], ["shape"], name="/shape"), const("zero", np.int64(0)),
             helper.make_node("Gather", ["shape", "zero"], ["n"], name="/n", axis=0), const("one", np.int64(1)),
             helper.make_node("Equal", ["n", "one"], ["c"], name="/eq"),
             helper.make_node("If", ["c"], ["y"], name="/If", then_branch=then_g, else_branch=else_g)]
    g = helper.make_graph(nodes, "if_on_dims", [info("x", TensorProto.FLOAT, ["N", 3])],
                          [info("y", TensorProto.FLOAT, None)])
    one, two = rng.standard_normal((1, 3)).astype(f32), rng.standard_normal((2, 3)).astype(f32)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    write("if_on_dims", m, [[one], [two]], [[one[0]], [two]])


# ---- an If on a mode input's value: two variants of the graph ----
def if_on_mode():
    then_g = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["rows"], name="/then/sum", keepdims=0,
                                                 axes=[1])], "then", [], [info("rows", TensorProto.FLOAT, ["N"])])
    else_g = helper.make_graph([helper.make_node("Identity", ["x"], ["all"], name="/else/id")], "else", [],
                               [info("all", TensorProto.FLOAT, ["N", 3])])
    nodes = [const("one", np.int64(1)), helper.make_node("Equal", ["mode", "one"], ["c"], name="/eq"),
             helper.make_node("If", ["c"], ["y"], name="/If", then_branch=then_g, else_branch=else_g)]
    g = helper.make_graph(nodes, "if_on_mode", [info("x", TensorProto.FLOAT, ["N", 3]),
                                                info("mode", TensorProto.INT64, [])],
                          [info("y", TensorProto.FLOAT, None)])
    x2, x4 = rng.standard_normal((2, 3)).astype(f32), rng.standard_normal((4, 3)).astype(f32)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
    write("if_on_mode", m, [[x2, np.array(1, np.int64)], [x4, np.array(7, np.int64)]], [[x2.sum(axis=1)], [x4]])


# ---- what the importer refuses, naming the node and the reason ----
def refused():
    """ctrl_loop_symbolic.onnx: the torch loop over a dynamic x.size(0);
    ctrl_if_shapes.onnx: an If known only at run time whose branches give
    outputs of other shapes."""
    torch.manual_seed(31)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(torch.jit.script(Loopy().eval()), (torch.randn(5, 3, 4), torch.zeros(3, 4)),
                          os.path.join(HERE, "ctrl_loop_symbolic.onnx"), input_names=["x", "h"],
                          output_names=["hn", "y"], dynamic_axes={"x": {0: "S", 1: "B"}, "h": {0: "B"}},
                          opset_version=17, dynamo=False)
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["same"], name="/then/id")], "then", [],
                               [info("same", TensorProto.FLOAT, [2, 3])])
    else_g = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["rows"], name="/else/sum", keepdims=0,
                                                 axes=[0])], "else", [], [info("rows", TensorProto.FLOAT, [3])])
    nodes = [helper.make_node("ReduceMax", ["x"], ["m"], name="/max", keepdims=0), const("zero", f32(0)),
             helper.make_node("Greater", ["m", "zero"], ["c"], name="/gt"),
             helper.make_node("If", ["c"], ["y"], name="/If", then_branch=then_g, else_branch=else_g)]
    g = helper.make_graph(nodes, "if_shapes", [info("x", TensorProto.FLOAT, [2, 3])],
                          [info("y", TensorProto.FLOAT, [None])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
    onnx.save(m, os.path.join(HERE, "ctrl_if_shapes.onnx"))


if __name__ == "__main__":
    torch_loop_if()
    if_runtime_nested()
    loop_while()
    loop_nested()
    scan9_axes()
    if_on_dims()
    refused()
    if_on_mode()
