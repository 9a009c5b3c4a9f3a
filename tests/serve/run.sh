#!/bin/sh
# `clgraph serve` tests (tests/serve, pytest): servers started on free
# loopback ports, talked to with tritonclient.http, curl and http.client.
# Exits 77 (meson's SKIP) when CG_PYTHON lacks numpy or pytest; the
# tritonclient tests skip themselves without tritonclient[http].
# Environment (tests/meson.build): CG_SOURCE_DIR, CG_CLGRAPH; CG_PYTHON.
set -u
PY=${CG_PYTHON:-python3}
SRC=${CG_SOURCE_DIR:?CG_SOURCE_DIR is not set}
if ! "$PY" -c 'import numpy, pytest' >/dev/null 2>&1; then
    echo "SKIP: $PY cannot import numpy and pytest"
    exit 77
fi
tmp=$(mktemp -d /tmp/cg_serve_XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
cd "$tmp" || exit 1
exec "$PY" -m pytest -q -p no:cacheprovider --basetemp "$tmp/t" "$SRC/tests/serve" "$@"
