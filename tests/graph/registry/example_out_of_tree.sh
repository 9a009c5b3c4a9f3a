#!/bin/sh
# The example plugin built as an outside author builds it: install clgraph
# into a temporary DESTDIR, build ops/examples/layernorm with its own
# Makefile against the installed headers (found with pkg-config), check
# that the result exports only cg_plugin_entry and does not link libclgraph,
# then document it with `clgraph ops` and test it with `clgraph conform`.
# With Oclgrind installed, conform runs once more on it and any report
# Oclgrind writes fails the test (it exits 0 even when it finds errors).
#
# usage: example_out_of_tree.sh BUILD_DIR SOURCE_DIR
set -eu

if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
CLGRAPH="$BUILD/tools/clgraph"
MESON=${MESON:-meson}
MAKE=${MAKE:-make}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/clgraph-oot.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
# Compiled OpenCL programs go to a private cache unless the caller chose one.
CLGRAPH_CACHE_DIR=${CLGRAPH_CACHE_DIR:-$TMP/cache}
export CLGRAPH_CACHE_DIR

fail() {
    echo "example_out_of_tree: $*" >&2
    exit 1
}

# Runs a command, showing what it is; its output goes to the test log.
run() {
    echo "+ $*"
    "$@"
}

command -v "$MESON" >/dev/null 2>&1 || fail "meson not found (set MESON to its path)"
command -v "$MAKE" >/dev/null 2>&1 || fail "make not found (set MAKE to its path)"
command -v pkg-config >/dev/null 2>&1 || fail "pkg-config not found"

# 1. Install into a DESTDIR (what `meson install` would put under the prefix).
ROOT="$TMP/root"
echo "+ $MESON install -C $BUILD --destdir $ROOT --no-rebuild"
if ! "$MESON" install -C "$BUILD" --destdir "$ROOT" --no-rebuild >"$TMP/install.log" 2>&1; then
    cat "$TMP/install.log" >&2
    fail "meson install failed"
fi
PC=$(find "$ROOT" -name clgraph.pc | head -n 1)
[ -n "$PC" ] || fail "no clgraph.pc under $ROOT"
HDR=$(find "$ROOT" -path '*/clgraph/plugin.h' | head -n 1)
[ -n "$HDR" ] || fail "no clgraph/plugin.h under $ROOT"

# 2. Build the plugin in a copy of its folder (an outside author's tree; the
# source tree stays clean). pkg-config reports the installed prefix; the
# sysroot variable puts the DESTDIR in front of its -I paths.
PLUGIN_DIR="$TMP/layernorm"
mkdir "$PLUGIN_DIR"
cp "$SRC/ops/examples/layernorm/layernorm.c" "$SRC/ops/examples/layernorm/Makefile" "$PLUGIN_DIR/"
PKG_CONFIG_PATH=$(dirname "$PC")
PKG_CONFIG_SYSROOT_DIR=$ROOT
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
run pkg-config --cflags clgraph
case "$(pkg-config --cflags clgraph)" in
    *"$ROOT"*) ;;
    *) fail "pkg-config --cflags clgraph does not point into $ROOT" ;;
esac
run "$MAKE" -C "$PLUGIN_DIR" CFLAGS="-O2 -g -Werror"
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
SO="$PLUGIN_DIR/liblayernorm.so"
[ -f "$SO" ] || fail "make did not produce $SO"

# 3. Only the entry symbol is exported; libclgraph is not linked.
EXPORTS=$(nm -D --defined-only "$SO" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }')
[ "$EXPORTS" = "cg_plugin_entry" ] || fail "$SO exports '$EXPORTS', expected only cg_plugin_entry"
if readelf -d "$SO" | grep NEEDED | grep -q libclgraph; then
    fail "$SO links libclgraph; a plugin gets everything through the host API"
fi

# 4. The installed plugin is usable by the clgraph tool.
run "$CLGRAPH" ops layer_norm --plugin "$SO" >"$TMP/ops.txt"
cat "$TMP/ops.txt"
grep -q "layer_norm" "$TMP/ops.txt" || fail "clgraph ops layer_norm does not name the op"
grep -q "eps" "$TMP/ops.txt" || fail "clgraph ops layer_norm does not list the eps attribute"
run "$CLGRAPH" conform --plugin "$SO" --op layer_norm --quick

# 5. Under Oclgrind, when installed (Debian ships its ICD library without an
# .icd file: write one and point the ICD loader at it).
OCLGRIND_ICD=/usr/lib/oclgrind/liboclgrind-rt-icd.so
if [ -f "$OCLGRIND_ICD" ]; then
    mkdir "$TMP/icd"
    echo "$OCLGRIND_ICD" >"$TMP/icd/oclgrind.icd"
    echo "+ OCL_ICD_VENDORS=$TMP/icd $CLGRAPH conform --plugin $SO --op layer_norm --quick"
    if ! OCL_ICD_VENDORS="$TMP/icd" CLGRAPH_GEMM=own \
        "$CLGRAPH" conform --plugin "$SO" --op layer_norm --quick >"$TMP/ocg.out" 2>"$TMP/ocg.err"; then
        cat "$TMP/ocg.out" "$TMP/ocg.err"
        fail "conform under Oclgrind failed"
    fi
    cat "$TMP/ocg.out"
    if [ -s "$TMP/ocg.err" ]; then
        cat "$TMP/ocg.err" >&2
        fail "Oclgrind reported errors (above)"
    fi
else
    echo "Oclgrind not installed ($OCLGRIND_ICD): skipping the Oclgrind run"
fi
echo "example_out_of_tree: ok"
