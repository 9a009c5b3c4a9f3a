#!/bin/bash
# The OpenCL fault sweep (issue 15): `clgraph translate models/dates` on
# PoCL with the fault shim (tests/fault/cl_fault.c) making the Nth call of
# one OpenCL entry point fail, for every entry point the run calls and N
# from 1 to its call count (all of them up to FULL calls; past that the
# first FULL / 2, a log-spaced sample and the last). Every run must end in
# a correct translation (a recovery) or exit 1 with one line on stderr naming
# what failed: no crash, no sanitizer report (in the ASan build, leaks
# included), no partial output with exit 0. After a fault in the program
# and kernel paths (the ones that write the kernel cache), and at the end,
# a run without a fault on the same cache must be correct.
#
# Environment (tests/meson.build): CG_CLGRAPH, CG_SOURCE_DIR, CG_FAULT_SHIM,
# OCL_ICD_VENDORS (PoCL). CG_FAULT_FULL overrides FULL (default 40; `all`:
# every N of every entry point, as .ci/run does in the ASan build);
# CG_FAULT_JOBS the parallel runs (default 2).
set -u
CLGRAPH=${CG_CLGRAPH:?CG_CLGRAPH is not set}
SRC=${CG_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SHIM=${CG_FAULT_SHIM:?CG_FAULT_SHIM is not set}
FULL=${CG_FAULT_FULL:-40}
[ "$FULL" = all ] && FULL=2147483647
case $FULL in ''|*[!0-9]*) echo "FAIL: CG_FAULT_FULL must be a number or 'all', not '$FULL'"; exit 1 ;; esac
JOBS=${CG_FAULT_JOBS:-2}
MODEL="$SRC/models/dates"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CLGRAPH_CACHE_DIR="$tmp/cache"
# the shim comes before the ASan runtime in the library list
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
head -n 3 "$MODEL/samples.txt" > "$tmp/in.txt"
head -n 3 "$MODEL/samples.expected" > "$tmp/want.txt"

# Whether ERR holds only LeakSanitizer's stop-the-world tracer crashing at
# exit ("Tracer caught signal ... LeakSanitizer has encountered a fatal
# error"), which happens now and then while PoCL's worker threads are alive
# (google/sanitizers#1353): not a finding of the run, which is repeated. A
# leak report, an ASan error or a UBSan report is never taken for it.
tracer_crash_only() {
    grep -q "Tracer caught signal" "$1" && grep -q "LeakSanitizer has encountered a fatal error" "$1" &&
        ! grep -q "ERROR: AddressSanitizer\|detected memory leaks\|runtime error" "$1"
}

translate() { # translate OUT ERR [env...]: the run's exit status
    out=$1 err=$2
    shift 2
    for attempt in 1 2 3 4; do
        env "$@" "$CLGRAPH" translate "$MODEL" --device opencl:0 < "$tmp/in.txt" > "$out" 2> "$err"
        rc=$?
        tracer_crash_only "$err" || return $rc
        echo "$*" >> "$tmp/tracer_retries"
    done
    return $rc
}

# a warm cache, the expected output, and the calls a run makes
if ! translate "$tmp/out0" "$tmp/err0" || ! cmp -s "$tmp/out0" "$tmp/want.txt"; then
    echo "FAIL: the run without a fault:"; cat "$tmp/out0" "$tmp/err0"; exit 1
fi
translate "$tmp/out1" "$tmp/err1" LD_PRELOAD="$SHIM" CG_FAULT_COUNTS="$tmp/counts" || {
    echo "FAIL: the counting run:"; cat "$tmp/err1"; exit 1; }
[ -s "$tmp/counts" ] || { echo "FAIL: the shim counted no OpenCL call"; exit 1; }

# the (entry point, N) pairs
while read -r fn count; do
    if [ "$count" -le "$FULL" ]; then
        seq 1 "$count"
    else
        { seq 1 $((FULL / 2)); n=$((FULL / 2))
          while [ "$n" -lt "$count" ]; do n=$((n * 3 / 2 + 1)); [ "$n" -lt "$count" ] && echo "$n"; done
          echo "$count"; } | sort -n | uniq
    fi | sed "s/^/$fn /"
done < "$tmp/counts" > "$tmp/pairs"
echo "$(wc -l < "$tmp/pairs") faulted runs over $(wc -l < "$tmp/counts") entry points:"
cat "$tmp/counts"

# one faulted run: prints "ok ..." or "FAIL ..." (with the evidence)
one() {
    fn=$1 n=$2 o="$tmp/o.$1.$2" e="$tmp/e.$1.$2"
    translate "$o" "$e" LD_PRELOAD="$SHIM" CG_FAULT_FN="$fn" CG_FAULT_N="$n"
    rc=$?
    verdict=ok
    if grep -q "Sanitizer\|runtime error" "$e"; then verdict="FAIL (sanitizer)"
    elif [ $rc -eq 0 ]; then cmp -s "$o" "$tmp/want.txt" || verdict="FAIL (exit 0, wrong output)"
    elif [ $rc -ne 1 ]; then verdict="FAIL (exit $rc)"
    elif [ "$(wc -l < "$e")" -ne 1 ] || ! grep -q "^clgraph" "$e"; then verdict="FAIL (not one line)"
    fi
    case $fn in
    clCreateProgram*|clBuildProgram|clGetProgram*|clCreateKernel|clGetKernelInfo)
        if ! translate "$o.after" "$e.after" || ! cmp -s "$o.after" "$tmp/want.txt"; then
            verdict="FAIL (the next run on the same cache: $(head -c 300 "$e.after"))"
        fi ;;
    esac
    echo "$verdict $fn $n: exit $rc: $(head -c 300 "$e" | tr '\n' ' ')"
    case $verdict in FAIL*) sed 's/^/    /' "$e" | head -40 ;; esac
    rm -f "$o" "$e" "$o.after" "$e.after"
}
export -f one translate tracer_crash_only
export tmp CLGRAPH MODEL SHIM

fail=0
# shellcheck disable=SC2016
xargs -P "$JOBS" -L 1 bash -c 'one "$0" "$1"' < "$tmp/pairs" > "$tmp/log"
grep -c "^ok" "$tmp/log" | sed 's/$/ runs ok/'
if grep -q "^FAIL" "$tmp/log"; then
    grep -A40 "^FAIL" "$tmp/log"
    fail=1
fi
grep "^ok" "$tmp/log" | awk '{print $2, ($5 == "0:" ? "recovered" : "error")}' | sort | uniq -c

if ! translate "$tmp/out2" "$tmp/err2" || ! cmp -s "$tmp/out2" "$tmp/want.txt"; then
    echo "FAIL: the run without a fault after the sweep:"; cat "$tmp/out2" "$tmp/err2"; fail=1
fi
[ -s "$tmp/tracer_retries" ] &&
    echo "$(wc -l < "$tmp/tracer_retries") runs repeated after LeakSanitizer's tracer crashed at exit (google/sanitizers#1353)"
exit $fail
