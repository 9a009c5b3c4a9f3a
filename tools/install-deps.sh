#!/bin/sh
# Installs the Debian 12 packages clgraph needs to build and test, skipping
# those already present (so it is quick to re-run). Uses sudo when not root.
# `tools/install-deps.sh fuzz` adds clang and libFuzzer (tests/fuzz);
# `tools/install-deps.sh dev` the checkers of .ci/run (universal-ctags for
# tools/long-functions.sh, clang-format for tools/format.sh);
# `tools/install-deps.sh browser` headless Chromium and its WebDriver for the
# test of `clgraph serve`'s page (tests/serve/test_page.py), and wrk for its
# load benchmark (tools/bench/serve_load.sh);
# `tools/install-deps.sh python` Python's venv and pip, for the references
# (PyTorch, ONNX Runtime) of the live tests, installed from PyPI into a
# virtual environment (.ci/run shows how).
set -eu
pkgs="build-essential meson ninja-build pkg-config check libopenblas-dev
ocl-icd-opencl-dev opencl-c-headers libclblast-dev pocl-opencl-icd mesa-opencl-icd oclgrind clinfo
libcjson-dev libpng-dev libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata python3-dev
libsentencepiece-dev libmicrohttpd-dev curl"
[ "${1:-}" = fuzz ] && pkgs="clang libclang-rt-14-dev"
[ "${1:-}" = python ] && pkgs="python3 python3-venv python3-pip"
[ "${1:-}" = dev ] && pkgs="universal-ctags clang-format"
[ "${1:-}" = browser ] && pkgs="chromium chromium-driver wrk"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing:$missing" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
