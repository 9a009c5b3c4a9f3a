"""The writer the make_*ops.py scripts share: a case in ONNX's backend-test
layout (model.onnx, test_data_set_K/{input,output}_I.pb) under ops/<name>/,
so every script writes its cases, and the data sets of the models it
exports, byte for byte alike. Needs numpy and onnx."""
import os

import onnx
from onnx import helper, numpy_helper


def write_data_set(d, inputs, outputs, k=0):
    """test_data_set_<k>/ in folder d; inputs/outputs: lists of (name, array).
    from_array writes an array's elements in C order, contiguous or not."""
    sd = os.path.join(d, f"test_data_set_{k}")
    os.makedirs(sd, exist_ok=True)
    for kind, lst in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(lst):
            with open(os.path.join(sd, f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


def save(name, nodes, inputs, outputs, inits=(), opset=13):
    """inputs/outputs: lists of (name, array); the graph is typed from them."""
    def info(n, a):
        return helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
    graph = helper.make_graph(nodes, name, [info(n, a) for n, a in inputs], [info(n, a) for n, a in outputs],
                              initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    d = os.path.join("ops", name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    write_data_set(d, inputs, outputs)
