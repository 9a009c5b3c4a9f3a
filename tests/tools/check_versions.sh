#!/bin/sh
# The versions are written in one place each: the library's in meson.build
# (passed here as $1; version.h is generated from it), the plugin ABI's in
# plugin.h. `clgraph --version` and every document that states the current
# ABI version must agree with them.
# usage: check_versions.sh PROJECT_VERSION   (CG_SOURCE_DIR, CG_CLGRAPH set)
set -u
src=${CG_SOURCE_DIR:?}
fail=0
bad() { echo "check_versions: $*" >&2; fail=1; }

project=$1
major=$(sed -n 's/^#define CG_PLUGIN_ABI_MAJOR \([0-9]*\)$/\1/p' "$src/include/clgraph/plugin.h")
minor=$(sed -n 's/^#define CG_PLUGIN_ABI_MINOR \([0-9]*\)$/\1/p' "$src/include/clgraph/plugin.h")
[ -n "$major" ] && [ -n "$minor" ] || { echo "check_versions: no ABI version in plugin.h" >&2; exit 1; }
abi="$major.$minor"

echo "$project" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+$' || bad "project version '$project' is not MAJOR.MINOR.PATCH"
got=$("$CG_CLGRAPH" --version | head -1) || bad "clgraph --version failed"
[ "$got" = "clgraph $project (plugin ABI $abi)" ] ||
    bad "clgraph --version prints '$got', expected 'clgraph $project (plugin ABI $abi)'"

# every statement of the current ABI version, in the phrases the documents use
check() { # FILE REGEX (one capture group: the version)
    found=$(sed -nE "s/.*$2.*/\\1/p" "$src/$1")
    [ -n "$found" ] || bad "$1: states no ABI version (expected a line matching '$2')"
    for v in $found; do
        [ "$v" = "$abi" ] || bad "$1: says ABI $v, plugin.h has $abi"
    done
}
check include/clgraph/plugin.h 'plugin ABI, version ([0-9]+\.[0-9]+)'
check README.md 'plugin ABI version ([0-9]+\.[0-9]+)'
check include/README.md 'plugin ABI version ([0-9]+\.[0-9]+)'
check docs/plugins.md 'ABI \*\*([0-9]+\.[0-9]+)\*\*'
grep -q '^## Unreleased$\|^## '"$project"'\b' "$src/CHANGELOG.md" ||
    bad "CHANGELOG.md has neither '## Unreleased' nor '## $project'"
exit $fail
