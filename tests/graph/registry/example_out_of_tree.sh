#!/bin/sh
# The example plugin built as an outside author builds it: install clgraph
# into a temporary DESTDIR, build ops/examples/layernorm with its own
# Makefile against the installed headers (found with pkg-config's
# clgraph-plugin), check that the result exports only cg_plugin_entry and
# does not link libclgraph, then, with the installed clgraph in a clean
# environment (no LD_LIBRARY_PATH: its rpath finds the installed library),
# document it with `clgraph ops`, test it with `clgraph conform
# --plugin-only`, check a graph that uses it and run a graph.
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
[ -f "$(dirname "$PC")/clgraph-plugin.pc" ] || fail "no clgraph-plugin.pc next to $PC"
# pkg-config resolves Requires.private even for --cflags: clgraph.pc must not
# make users install openblas', clblast's and cjson's .pc files.
if grep -q '^Requires' "$PC"; then
    fail "$PC has Requires lines: $(grep '^Requires' "$PC")"
fi
INSTALLED=$(find "$ROOT" -path '*/bin/clgraph' | head -n 1)
[ -x "$INSTALLED" ] || fail "no bin/clgraph under $ROOT"
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
run pkg-config --cflags clgraph-plugin
case "$(pkg-config --cflags clgraph-plugin)" in
    *"$ROOT"*) ;;
    *) fail "pkg-config --cflags clgraph-plugin does not point into $ROOT" ;;
esac
[ -z "$(pkg-config --libs clgraph-plugin)" ] || fail "clgraph-plugin.pc has libraries to link"
run pkg-config --cflags --libs clgraph
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
# As docs/plugins.md says it: the variables on make's command line (the
# Makefile once read pkg-config's flags in $(shell), which GNU make 4.3 runs
# without command-line variables: the build failed on clgraph/plugin.h).
run "$MAKE" -C "$PLUGIN_DIR" CFLAGS="-O2 -g -Werror" PKG_CONFIG_PATH="$(dirname "$PC")" PKG_CONFIG_SYSROOT_DIR="$ROOT"
SO="$PLUGIN_DIR/liblayernorm.so"
[ -f "$SO" ] || fail "make did not produce $SO"

# 3. Only the entry symbol is exported; libclgraph is not linked.
EXPORTS=$(nm -D --defined-only "$SO" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }')
[ "$EXPORTS" = "cg_plugin_entry" ] || fail "$SO exports '$EXPORTS', expected only cg_plugin_entry"
if readelf -d "$SO" | grep NEEDED | grep -q libclgraph; then
    fail "$SO links libclgraph; a plugin gets everything through the host API"
fi

# 4. The installed clgraph, in a clean environment (the sanitizers' and the
# ICD loader's settings pass through), uses the plugin.
clean() {
    echo "+ (clean environment) $*"
    env -i PATH=/usr/bin:/bin HOME="$TMP" CLGRAPH_CACHE_DIR="$CLGRAPH_CACHE_DIR" \
        ${ASAN_OPTIONS+"ASAN_OPTIONS=$ASAN_OPTIONS"} ${LSAN_OPTIONS+"LSAN_OPTIONS=$LSAN_OPTIONS"} \
        ${UBSAN_OPTIONS+"UBSAN_OPTIONS=$UBSAN_OPTIONS"} ${OCL_ICD_VENDORS+"OCL_ICD_VENDORS=$OCL_ICD_VENDORS"} \
        ${POCL_DEVICES+"POCL_DEVICES=$POCL_DEVICES"} ${RUSTICL_ENABLE+"RUSTICL_ENABLE=$RUSTICL_ENABLE"} "$@"
}
clean "$INSTALLED" ops example.layer_norm --plugin "$SO" >"$TMP/ops.txt"
cat "$TMP/ops.txt"
grep -q "example.layer_norm" "$TMP/ops.txt" || fail "clgraph ops example.layer_norm does not name the op"
grep -q "eps" "$TMP/ops.txt" || fail "clgraph ops example.layer_norm does not list the eps attribute"
clean "$INSTALLED" conform --plugin "$SO" --plugin-only --quick >"$TMP/conform.txt"
cat "$TMP/conform.txt"
grep -q "^example.layer_norm .* pass" "$TMP/conform.txt" || fail "conform --plugin-only did not pass example.layer_norm"
if grep -q "^add " "$TMP/conform.txt"; then fail "conform --plugin-only ran built-in ops"; fi
cat >"$TMP/ln.cg" <<'GRAPH'
graph g {
  input x: f32[B, 8]
  input gamma: f32[8]
  y = example.layer_norm(x, gamma) {eps: 0.001}
  output y
}
GRAPH
clean "$INSTALLED" check "$TMP/ln.cg" --plugin "$SO" >"$TMP/check.txt"
cat "$TMP/check.txt"
grep -q "f32\[B, 8\]" "$TMP/check.txt" || fail "clgraph check does not show y's shape"
EX="$SRC/models/example"
clean "$INSTALLED" run "$EX/model.cg" --weights "$EX/weights.safetensors" --input "src=$EX/src.npy" \
    --input "src_len=$EX/src_len.npy" --output "$TMP/out" >/dev/null
[ -s "$TMP/out/s0.npy" ] && [ -s "$TMP/out/keys.npy" ] || fail "the installed clgraph run wrote no outputs"

# 5. Under Oclgrind, when installed (Debian ships its ICD library without an
# .icd file: write one and point the ICD loader at it).
OCLGRIND_ICD=/usr/lib/oclgrind/liboclgrind-rt-icd.so
if [ -f "$OCLGRIND_ICD" ]; then
    mkdir "$TMP/icd"
    echo "$OCLGRIND_ICD" >"$TMP/icd/oclgrind.icd"
    echo "+ OCL_ICD_VENDORS=$TMP/icd $CLGRAPH conform --plugin $SO --op example.layer_norm --quick"
    if ! OCL_ICD_VENDORS="$TMP/icd" CLGRAPH_GEMM=own \
        "$CLGRAPH" conform --plugin "$SO" --op example.layer_norm --quick >"$TMP/ocg.out" 2>"$TMP/ocg.err"; then
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
