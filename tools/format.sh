#!/bin/sh
# Formats the tracked C sources and headers with clang-format (the style is
# .clang-format's; Debian 12: clang-format 14).
#   tools/format.sh           formats every tracked .c and .h in place
#   tools/format.sh --check   lists the files that are not formatted; exits 1 if any
#   tools/format.sh FILE...   formats those files
cd "$(dirname "$0")/.." || exit 2
command -v clang-format >/dev/null || { echo "format.sh: clang-format is not installed (apt install clang-format)" >&2; exit 2; }
if [ "${1:-}" = --check ]; then
    bad=0
    for f in $(git ls-files '*.c' '*.h'); do
        if ! clang-format --dry-run -Werror "$f" 2>/dev/null; then
            echo "not formatted: $f (tools/format.sh $f)"
            bad=1
        fi
    done
    exit $bad
fi
[ $# -gt 0 ] || set -- $(git ls-files '*.c' '*.h')
exec clang-format -i "$@"
