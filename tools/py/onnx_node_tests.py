#!/usr/bin/env python3
"""Writes the node test cases of the installed `onnx` release in ONNX's
backend-test layout, for `clgraph onnx-test` (issue 31):

    OUT_DIR/test_NAME/model.onnx
    OUT_DIR/test_NAME/test_data_set_N/input_K.pb, output_K.pb

The cases come from the wheel itself (onnx.backend.test.case.node
.collect_testcases), not from a download: Debian's libonnx-testdata is the
1.12 set, and this is the set of whatever onnx PyPI gives now. Each value
is written as the model declares it, as ONNX's own generator
(onnx.backend.test.cmd_tools) does: a TensorProto, a SequenceProto
(sequences) or an OptionalProto (optionals, None included); maps are
counted, not written.

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


def to_proto(v, name, tp):
    """v as the proto its declared type `tp` (a TypeProto) asks for; None
    for a type this script does not write (maps)."""
    kind = tp.WhichOneof("value")
    if kind == "sequence_type":
        return numpy_helper.from_list([np.asarray(x) for x in v], name)
    if kind == "optional_type":
        if v is not None and not isinstance(v, list):
            v = np.asarray(v)
        return numpy_helper.from_optional(v, name)
    if kind != "tensor_type":
        return None
    if isinstance(v, onnx.TensorProto):  # float8 and int4 come as TensorProtos
        t = onnx.TensorProto()
        t.CopyFrom(v)
        t.name = name
        return t
    return numpy_helper.from_array(np.asarray(v), name)


def write_case(case, out_dir):
    """Writes one case; returns the reason it could not be written, or None."""
    graph = case.model.graph
    sets = []
    for inputs, outputs in case.data_sets:
        protos = []
        for kind, values, decl in (("input", inputs, graph.input), ("output", outputs, graph.output)):
            for k, v in enumerate(values):
                name = decl[k].name if k < len(decl) else ""
                p = to_proto(v, name, decl[k].type) if k < len(decl) else None
                if p is None:
                    return "a value that is not a tensor, sequence or optional"
                protos.append(("%s_%d.pb" % (kind, k), p))
        sets.append(protos)
    d = os.path.join(out_dir, case.name)
    os.makedirs(d, exist_ok=True)
    onnx.save(case.model, os.path.join(d, "model.onnx"))
    for n, protos in enumerate(sets):
        sd = os.path.join(d, "test_data_set_%d" % n)
        os.makedirs(sd, exist_ok=True)
        for fname, p in protos:
            with open(os.path.join(sd, fname), "wb") as f:
                f.write(p.SerializeToString())
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
