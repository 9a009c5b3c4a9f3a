#!/bin/sh
# Lists the library's and the CLI's C functions longer than LIMIT lines
# (default 100), longest first, as "LINES FILE:LINE NAME"; exits 1 when
# there is one. Uses Universal Ctags (Debian: universal-ctags).
# usage: tools/long-functions.sh [LIMIT]
limit=${1:-100}
cd "$(dirname "$0")/.." || exit 2
out=$(git ls-files '*.c' | grep -v '^tests/' |
    xargs ctags --kinds-C=f --fields=+ne -f - 2>/dev/null |
    awk -F'\t' -v lim="$limit" '{
        l = e = 0
        for (i = 4; i <= NF; i++) {
            if ($i ~ /^line:/) l = substr($i, 6)
            if ($i ~ /^end:/) e = substr($i, 5)
        }
        if (e - l + 1 > lim) printf "%d %s:%d %s\n", e - l + 1, $2, l, $1
    }' | sort -rn)
[ -z "$out" ] && exit 0
echo "$out"
exit 1
