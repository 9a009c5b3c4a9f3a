#!/bin/sh
# Live check against PyTorch and ONNX Runtime as installed: exports the
# seq2seq spec's encoder and decoder step, a briefly trained nn.Transformer
# and the quantize_dynamic decoders again (tests/data/onnx/make_models.py
# --out), with ONNX Runtime's outputs, and runs `clgraph onnx-test` on them
# on every device within 1e-4. The committed copies of these models are
# checked by test_onnx without Python; this one catches a new exporter or
# ONNX Runtime. Exits 77 (meson's SKIP) when the Python (CG_PYTHON, default
# /usr/bin/python3) lacks torch, onnx, onnxscript or onnxruntime.
# Environment (tests/meson.build): CG_SOURCE_DIR, CG_CLGRAPH; CG_PYTHON.
set -u
PY=${CG_PYTHON:-/usr/bin/python3}
SRC=${CG_SOURCE_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
CLGRAPH=${CG_CLGRAPH:?CG_CLGRAPH is not set}

if ! "$PY" -c 'import torch, onnx, onnxscript, onnxruntime' >/dev/null 2>&1; then
    echo "SKIP: $PY cannot import torch, onnx, onnxscript and onnxruntime"
    exit 77
fi
"$PY" -c 'import torch, onnxruntime; print("torch", torch.__version__, "onnxruntime", onnxruntime.__version__)'

tmp=$(mktemp -d /tmp/cg_live_onnx_XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

if ! "$PY" "$SRC/tests/data/onnx/make_models.py" --out "$tmp" --train-steps 100 >"$tmp/make.log" 2>&1; then
    tail -n 30 "$tmp/make.log"
    echo "FAIL: make_models.py did not export the models"
    exit 1
fi
"$CLGRAPH" onnx-test "$tmp/models" --rtol 1e-4 --atol 1e-4
rc=$?
[ $rc -eq 0 ] || echo "FAIL: clgraph onnx-test on the fresh exports (exit $rc)"
exit $rc
