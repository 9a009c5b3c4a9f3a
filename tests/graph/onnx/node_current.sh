#!/bin/sh
# The node tests of the onnx release installed from PyPI (its test cases
# are code: tools/py/onnx_node_tests.py writes them in the backend-test
# layout), run by `clgraph onnx-test` on the CPU and opencl:0 as Debian's
# ONNX 1.12 set is run by test_onnx. At least MIN pass on each device and
# none fails. The tests whose expected values are less exact than the
# result (docs/onnx.md, "ONNX's backend tests") would fail against them, so
# tools/py/onnx_exact_check.py checks those against float64 references
# instead, on the same devices. Exits 77 (meson's SKIP) when the Python
# (CG_PYTHON) lacks onnx.
# Environment (tests/meson.build): CG_SOURCE_DIR, CG_CLGRAPH; CG_PYTHON.
set -u
PY=${CG_PYTHON:-/usr/bin/python3}
SRC=${CG_SOURCE_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
CLGRAPH=${CG_CLGRAPH:?CG_CLGRAPH is not set}
# onnx 1.23.2: 1807 of 1884 pass on cpu (the 3 below are checked apart, the
# rest are refused)
MIN=1807
LESS_EXACT="test_dft_inverse test_dft_inverse_opset19 test_attention_4d_causal_fp16_expanded"
DEVICES="cpu opencl:0"

# (from /: a folder named onnx in the working directory would import as an
# empty namespace package)
if ! (cd / && "$PY" -c 'import numpy, onnx.backend.test.case.node') >/dev/null 2>&1; then
    echo "SKIP: $PY cannot import numpy and onnx's backend test cases"
    exit 77
fi
"$PY" -c 'import onnx; print("onnx", onnx.__version__)'
tmp=$(mktemp -d /tmp/cg_node_current_XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
if ! "$PY" "$SRC/tools/py/onnx_node_tests.py" "$tmp/node" >"$tmp/write.log" 2>&1; then
    tail -n 20 "$tmp/write.log"
    echo "FAIL: onnx_node_tests.py did not write the node tests"
    exit 1
fi
rc=0
dev_args=
for dev in $DEVICES; do dev_args="$dev_args --device $dev"; done
# shellcheck disable=SC2086 # word splitting of the lists intended
if ! "$PY" "$SRC/tools/py/onnx_exact_check.py" "$tmp/node" "$CLGRAPH" $LESS_EXACT $dev_args; then
    echo "FAIL: clgraph is not within tolerance of the float64 references, or ONNX's expected values are not further"
    rc=1
fi
for t in $LESS_EXACT; do rm -rf "$tmp/node/$t"; done
for dev in $DEVICES; do
    "$CLGRAPH" onnx-test "$tmp/node" --device "$dev" >"$tmp/out.txt" 2>"$tmp/err.txt"
    r=$?
    line=$(grep "clgraph onnx-test: $dev:" "$tmp/err.txt")
    echo "$line"
    pass=$(echo "$line" | sed -n 's/.*: \([0-9]*\) passed.*/\1/p')
    grep -E " (FAIL|ERROR) " "$tmp/out.txt"
    if [ "$r" -ne 0 ] || [ -z "$pass" ] || [ "$pass" -lt "$MIN" ]; then
        echo "FAIL: $dev: exit $r, ${pass:-no} passed (at least $MIN wanted, none failing)"
        rc=1
    fi
done
exit $rc
