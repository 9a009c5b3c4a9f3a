"""Writes fold_cast.onnx: Constant float32 [1.9, -1.9, 300, -300, NaN, 3e9]
-> Cast to INT8 (output i8) and to INT32 (output i32), both computed from a
constant, so clgraph folds them at import. tests/graph/onnx/test_onnx.c checks
the folded values against the rules of clgraph's cast op (worked out by hand
there). Needs the onnx package: python3 make_fold_cast.py"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

x = np.array([1.9, -1.9, 300, -300, np.nan, 3e9], dtype=np.float32)
nodes = [
    helper.make_node("Constant", [], ["x"], name="c", value=numpy_helper.from_array(x, "x")),
    helper.make_node("Cast", ["x"], ["i8"], name="to_i8", to=TensorProto.INT8),
    helper.make_node("Cast", ["x"], ["i32"], name="to_i32", to=TensorProto.INT32),
]
graph = helper.make_graph(nodes, "fold_cast", [],
                          [helper.make_tensor_value_info("i8", TensorProto.INT8, [6]),
                           helper.make_tensor_value_info("i32", TensorProto.INT32, [6])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, "fold_cast.onnx")
