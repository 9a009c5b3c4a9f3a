#!/bin/sh
# The checks to run on a machine with a GPU, in one go and well under 10
# minutes: what the machine has, a build, `clgraph devices`, the full
# conform on every OpenCL device, the dates samples on each device (the RNN
# and the Transformer demo), the Transformer family's tests, and
# `clgraph bench` (CPU against every OpenCL device: the dates model, the
# Transformer demo, and a medium random model when Python with numpy and
# torch is there to make it), and `clgraph serve` under load. Results
# go to OUT_DIR (default: $OUT, else ./gpu-check) as text and JSON, for
# docs/portability.md and the issue's note.
#   tools/gpu-check.sh [OUT_DIR]
# Nothing is installed and nothing outside the machine is reached: a missing
# package is reported, and what needs it is skipped.
set -u
cd "$(dirname "$0")/.." || exit 2
out=${1:-${OUT:-gpu-check}}
mkdir -p "$out"
log() { echo "== $*" | tee -a "$out/summary.txt"; }
run() { # run NAME TIMEOUT CMD...: output in OUT/NAME.txt, status in the summary
    name=$1 secs=$2
    shift 2
    start=$(date +%s)
    timeout "$secs" "$@" > "$out/$name.txt" 2>&1
    rc=$?
    log "$name: exit $rc in $(( $(date +%s) - start )) s"
    return $rc
}

log "machine: $(uname -srm), $(nproc) cores, $(date -u +%FT%TZ)"
{ command -v nvidia-smi >/dev/null && nvidia-smi -L; ls /etc/OpenCL/vendors 2>&1; } > "$out/machine.txt" 2>&1
for p in meson ninja cc pkg-config clinfo python3; do
    command -v "$p" >/dev/null || log "missing: $p"
done
command -v clinfo >/dev/null && run clinfo 60 clinfo

# The build: every optional dependency that is present (meson features auto).
[ -d build-gpu ] || run setup 120 meson setup build-gpu || exit 1
run build 300 ninja -C build-gpu || exit 1
cli=build-gpu/tools/clgraph
run version 10 "$cli" --version
run devices 60 "$cli" devices

# Every device's conformance and the dates samples on each device.
n=$("$cli" devices 2>/dev/null | grep -c '^opencl:')
i=0
while [ "$i" -lt "$n" ]; do
    run "conform_opencl$i" 240 "$cli" conform --device "opencl:$i"
    run "dates_opencl$i" 60 sh -c "$cli translate models/dates --device opencl:$i < models/dates/samples.txt \
        | diff - models/dates/samples.expected"
    # the Transformer demo (needs the build's SentencePiece)
    run "marian_opencl$i" 60 sh -c "$cli translate models/marian_dates --device opencl:$i \
        < models/dates/samples.txt | diff - models/dates/samples.expected"
    i=$((i + 1))
done
# The Transformer family against transformers' generate() and its graphs'
# parity, on every device (the tests iterate over them).
run tf_tests 240 meson test -C build-gpu --print-errorlogs tf_model tf_translate

# Speed: the CPU and each OpenCL device, batch 1 and 64 greedy, batch 16 beam 5.
bench() { # bench TAG, on $model
    tag=$1
    for dev in cpu $(i=0; while [ "$i" -lt "$n" ]; do echo "opencl:$i"; i=$((i + 1)); done); do
        for w in "1 1" "64 1" "16 5"; do
            set -- $w
            run "bench_${tag}_$(echo "$dev" | tr : _)_b$1_k$2" 120 \
                "$cli" bench "$model" --device "$dev" --batch "$1" --beam "$2" --runs 5 --json
        done
    done
}
model=models/dates
bench dates
model=models/marian_dates
bench marian_dates
if python3 -c 'import numpy, torch' 2>/dev/null; then
    python3 tools/py/bench/make_bench_model.py medium "$out/medium-model" > /dev/null 2>&1 &&
        { model="$out/medium-model"; bench medium; rm -rf "$out/medium-model"; }
else
    log "no numpy and torch: the medium benchmark model is not made"
fi
# `clgraph serve` under load (docs/serving.md: --max-batch 64 against 1, 64
# connections) on the first OpenCL device, when the build has it and wrk is
# there.
if command -v wrk >/dev/null && [ "$n" -gt 0 ] && ! "$cli" serve --help 2>&1 | grep -q "built without"; then
    run serve_load_opencl0 120 tools/bench/serve_load.sh build-gpu 8 64 opencl:0
else
    log "no wrk or no serve: the serving load is not measured"
fi
log "done; results in $out"
