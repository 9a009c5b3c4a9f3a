#!/usr/bin/env python3
"""Writes the node test cases of the installed `onnx` release in ONNX's
backend-test layout, for `clgraph onnx-test` (issue 31):

    OUT_DIR/test_NAME/model.onnx
    OUT_DIR/test_NAME/test_data_set_N/input_K.pb, output_K.pb

The cases come from the wheel itself (onnx.backend.test.case.node
.collect_testcases), not from a download: Debian's libonnx-testdata is the
1.12 set, and this is the set of whatever onnx PyPI gives now. A case whose
inputs or outputs are not all tensors (sequences, optionals) cannot be
written as .pb tensors and is counted, not written.

    python3 tools/py/onnx_node_tests.py OUT_DIR [--filter REGEX]

Prints what it wrote and skipped; exits 1 if nothing was written."""
import argparse
import os
import re
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case.node import collect_testcases


def tensors(values):
    """The values as numpy arrays or TensorProtos (the cases give types numpy
    lacks, float8 and int4, as TensorProtos), or None when one is not a
    tensor."""
    out = []
    for v in values:
        if isinstance(v, onnx.TensorProto):
            out.append(v)
        elif isinstance(v, np.ndarray) or np.isscalar(v):
            out.append(np.asarray(v))
        else:
            return None
    return out


def to_proto(v, name):
    if isinstance(v, onnx.TensorProto):
        t = onnx.TensorProto()
        t.CopyFrom(v)
        t.name = name
        return t
    return numpy_helper.from_array(v, name)


def write_case(case, out_dir):
    """Writes one case; returns the reason it could not be written, or None."""
    graph = case.model.graph
    sets = []
    for inputs, outputs in case.data_sets:
        ins, outs = tensors(inputs), tensors(outputs)
        if ins is None or outs is None:
            return "a non-tensor input or output"
        sets.append((ins, outs))
    d = os.path.join(out_dir, case.name)
    os.makedirs(d, exist_ok=True)
    onnx.save(case.model, os.path.join(d, "model.onnx"))
    for n, (ins, outs) in enumerate(sets):
        sd = os.path.join(d, "test_data_set_%d" % n)
        os.makedirs(sd, exist_ok=True)
        for kind, values, decl in (("input", ins, graph.input), ("output", outs, graph.output)):
            for k, v in enumerate(values):
                name = decl[k].name if k < len(decl) else ""
                with open(os.path.join(sd, "%s_%d.pb" % (kind, k)), "wb") as f:
                    f.write(to_proto(v, name).SerializeToString())
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--filter", default="", help="only cases whose name matches this regular expression")
    a = ap.parse_args()
    warnings.simplefilter("ignore")  # the cases' own numpy warnings (1 / 0 ...)
    cases = [c for c in collect_testcases(None) if c.kind == "node" and re.search(a.filter, c.name)]
    written, skipped = 0, {}
    for c in cases:
        why = write_case(c, a.out_dir)
        if why:
            skipped[why] = skipped.get(why, 0) + 1
        else:
            written += 1
    print("onnx %s: %d node cases, %d written to %s" % (onnx.__version__, len(cases), written, a.out_dir))
    for why, n in sorted(skipped.items()):
        print("  %d not written: %s" % (n, why))
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
