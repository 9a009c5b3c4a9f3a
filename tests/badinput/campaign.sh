#!/bin/bash
# The bad-input campaign (issue 29): every kind of input a user can get
# wrong, fed to the `clgraph` command line. Each case must end with a
# non-zero exit (2 for a bad command line, 1 otherwise; any other status,
# a signal included, fails), exactly one line on stderr, no sanitizer
# report, within its time limit and (plain builds) its memory limit, and
# leave no file it was told not to. The cases live in cases_*.sh beside
# this script, one file per area; each calls `bad` (below) per case.
#
#   bad NAME [options] -- clgraph ARGS...
#     --exit N      the exit status wanted (default 1)
#     --stdin FILE  stdin (default /dev/null)
#     --timeout S   seconds before it counts as a hang (default 30; times
#                   CG_BADINPUT_SLACK, default 3)
#     --mem MB      address-space cap in plain builds (default 4096)
#     --absent P    P must not exist afterwards (repeatable)
#     --out-lines N stdout must have exactly N lines (-1 = anything; default -1)
#     --match TEXT  stderr must contain TEXT (case-sensitive, fixed string)
#     --fsize KB    files it writes are cut at KB KiB (ulimit -f, SIGXFSZ
#                   ignored): writes past that fail with EFBIG, a full disk
#     --stdout FILE stdout goes to FILE (e.g. /dev/full) instead of a file
#                   the case reads back
#     --pipe        stdout is a pipe whose reader exits after one byte (a
#                   closed pipe: EPIPE, or death by SIGPIPE)
#     --empty DIR   DIR must be empty or absent afterwards (no temporary
#                   file left behind)
#     --env K=V     sets environment variable K for this case only
#                   (repeatable), e.g. CLGRAPH_CACHE_DIR=DIR
#
# Environment: CG_CLGRAPH (the binary), CG_SOURCE_DIR, CG_BADINPUT_ONLY (a
# glob over case names), CG_BADINPUT_JOBS (parallel cases, default 2).
# Under ASan (ASAN_OPTIONS set) the memory cap is not applied: the
# sanitizer reserves terabytes of address space. Ends with the summary line
# "N passed, M failed".
set -u
CLGRAPH=${CG_CLGRAPH:?CG_CLGRAPH is not set}
SRC=${CG_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
ONLY=${CG_BADINPUT_ONLY:-*}
JOBS=${CG_BADINPUT_JOBS:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export CLGRAPH_CACHE_DIR="$T/cache"
mkdir -p "$T/res" "$T/w"
SANITIZED=0
[ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ] && SANITIZED=1
n_cases=0

# One case in the background (at most JOBS at once); its verdict goes to
# $T/res/NNNN as "ok NAME" or "FAIL NAME: why" plus its stderr.
bad() {
    local name=$1
    shift
    # shellcheck disable=SC2053
    [[ $name == $ONLY ]] || { while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done; return 0; }
    n_cases=$((n_cases + 1))
    local id
    id=$(printf '%05d' "$n_cases")
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n 2>/dev/null || true; done
    run_case "$id" "$name" "$@" &
}

run_case() {
    local id=$1 name=$2
    shift 2
    local want=1 stdin=/dev/null timeout=30 mem=4096 outlines=-1 match="" absent=() fsize="" stdout="" pipe=0 empty=() envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        case $1 in
            --exit) want=$2; shift 2 ;;
            --stdin) stdin=$2; shift 2 ;;
            --timeout) timeout=$2; shift 2 ;;
            --mem) mem=$2; shift 2 ;;
            --absent) absent+=("$2"); shift 2 ;;
            --out-lines) outlines=$2; shift 2 ;;
            --match) match=$2; shift 2 ;;
            --fsize) fsize=$2; shift 2 ;;
            --stdout) stdout=$2; shift 2 ;;
            --pipe) pipe=1; shift ;;
            --empty) empty+=("$2"); shift 2 ;;
            --env) envs+=("$2"); shift 2 ;;
            *) echo "FAIL $name: bad option $1 in the case" > "$T/res/$id"; return ;;
        esac
    done
    shift
    # A hang never answers; a case that answers late on a loaded machine
    # (a CI runner, the sanitizer build, two cores shared with a build) is
    # not one, so the limits stretch by CG_BADINPUT_SLACK (default 3).
    timeout=$((timeout * ${CG_BADINPUT_SLACK:-3}))
    local out="$T/w/$id.out" err="$T/w/$id.err" rc
    [ -n "$stdout" ] || stdout=$out
    if [ $pipe = 1 ]; then
        (
            [ $SANITIZED = 0 ] && ulimit -v $((mem * 1024))
            for e in "${envs[@]}"; do export "$e"; done
            exec timeout -s KILL "$timeout" "$CLGRAPH" "$@" < "$stdin" 2> "$err"
        ) | head -c 1 > "$out"
        rc=${PIPESTATUS[0]}
    else
        (
            [ $SANITIZED = 0 ] && ulimit -v $((mem * 1024))
            for e in "${envs[@]}"; do export "$e"; done
            if [ -n "$fsize" ]; then
                trap '' XFSZ
                ulimit -f "$fsize"
            fi
            exec timeout -s KILL "$timeout" "$CLGRAPH" "$@" < "$stdin" > "$stdout" 2> "$err"
        )
        rc=$?
    fi
    local why=""
    local lines
    lines=$(wc -l < "$err")
    # a last line without a newline counts too
    [ -s "$err" ] && [ "$(tail -c 1 "$err" | od -An -c | tr -d ' ')" != '\n' ] && lines=$((lines + 1))
    if [ $rc = 137 ]; then why="no answer within ${timeout}s (or killed)"
    elif [ $rc -ge 128 ]; then why="killed by signal $((rc - 128))"
    elif grep -q "AddressSanitizer\|LeakSanitizer\|runtime error:\|ThreadSanitizer" "$err"; then why="sanitizer report"
    elif [ $rc != "$want" ]; then why="exit $rc, want $want"
    elif [ "$lines" != 1 ]; then why="$lines lines on stderr, want 1"
    elif [ -n "$match" ] && ! grep -qF -- "$match" "$err"; then why="stderr lacks '$match'"
    elif [ "$outlines" != -1 ] && [ "$(wc -l < "$out")" != "$outlines" ]; then
        why="$(wc -l < "$out") lines on stdout, want $outlines"
    fi
    for p in "${absent[@]}"; do
        [ -z "$why" ] && [ -e "$p" ] && why="left $p behind"
    done
    for d in "${empty[@]}"; do
        [ -z "$why" ] && [ -d "$d" ] && [ -n "$(ls -A "$d")" ] && why="left $(ls -A "$d" | head -3 | tr '\n' ' ')in $d"
    done
    if [ -z "$why" ]; then
        echo "ok $name" > "$T/res/$id"
    else
        { echo "FAIL $name: $why"; echo "  clgraph $*"; head -c 2000 "$err" | sed 's/^/  | /'; } > "$T/res/$id"
    fi
    rm -f "$out" "$err"
}

# Fresh scratch space for the case files: $W. Cases' inputs are written
# there by the cases_*.sh files before they call `bad`.
W="$T/in"
mkdir -p "$W"
export W SRC T
for f in "$HERE"/cases_*.sh; do
    # shellcheck disable=SC1090
    . "$f"
done
wait
passed=0 failed=0
for r in "$T"/res/*; do
    [ -e "$r" ] || continue
    if head -n 1 "$r" | grep -q '^ok '; then passed=$((passed + 1)); else failed=$((failed + 1)); cat "$r"; fi
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
