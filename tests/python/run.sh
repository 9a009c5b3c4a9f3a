#!/bin/sh
# The Python package's tests (tests/python, pytest) on the package as built
# in the build tree (build/python/clgraph: the extension and the .py files).
# Exits 77 (meson's SKIP) when the Python (CG_PYTHON, default python3)
# lacks numpy or pytest; tests that need onnxruntime, onnx, torch or
# ml_dtypes skip themselves without them. CI runs them in its venv (.ci/run).
# Environment (tests/meson.build): CG_SOURCE_DIR, CG_BUILD_DIR; CG_PYTHON;
# CG_PY_PRELOAD: libraries to preload into the interpreter (a sanitizer
# build's extension needs the sanitizers' runtimes, which an interpreter
# built without them does not load): .ci/run gives libasan and libubsan,
# and leak checking is then off (CPython does not free everything at exit);
# the Ray test is left out there.
set -u
PY=${CG_PYTHON:-python3}
SRC=${CG_SOURCE_DIR:?CG_SOURCE_DIR is not set}
BUILD=${CG_BUILD_DIR:?CG_BUILD_DIR is not set}
if ! "$PY" -c 'import numpy, pytest' >/dev/null 2>&1; then
    echo "SKIP: $PY cannot import numpy and pytest"
    exit 77
fi
tmp=$(mktemp -d /tmp/cg_pytest_XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
cd "$tmp" || exit 1
if [ -n "${CG_PY_PRELOAD:-}" ]; then
    export LD_PRELOAD="$CG_PY_PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
    # Ray's own servers would start with the runtimes preloaded too: its test
    # checks the documented use, not the library, and runs in the plain build
    set -- -k "not ray" "$@"
fi
PYTHONPATH="$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" exec "$PY" -m pytest -q -p no:cacheprovider \
    --basetemp "$tmp/t" "$SRC/tests/python" "$@"
