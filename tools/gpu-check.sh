#!/bin/sh
# The checks to run on a machine with a GPU, in one go and well under 10
# minutes: what the machine has, the build, `clgraph devices`, the full
# conform on every OpenCL device, the dates samples on each device (the RNN
# and the Transformer demo), `clgraph bench` (the CPU against every OpenCL
# device: the dates model, the Transformer demo, and a medium random model
# when Python with numpy and torch is there to make it), `clgraph serve`
# under load, and then the test suites, with the OpenCL implementation's
# own portability tests.
#   tools/gpu-check.sh [OUT_DIR]
# GPU_CHECK_SECONDS (default 480) bounds the whole; each step gets what is
# left. Results: OUT_DIR (default $OUT, else ./gpu-check) gets summary.txt
# and logs.tar.gz (each step's output), packed again after each step so a
# run cut short still returns what it did.
# The build: a bundle from tools/gpu-bundle.sh (.gpu/bundle.tar.xz: for a
# machine without the Debian packages, as the lent ones are), else a meson
# build made here. Nothing is installed and nothing outside the machine is
# reached: what a missing program needs is skipped, and said so.
set -u
cd "$(dirname "$0")/.." || exit 2
out=${1:-${OUT:-gpu-check}}
budget=${GPU_CHECK_SECONDS:-480}
t0=$(date +%s)
mkdir -p "$out"
logs=$(mktemp -d)/logs
mkdir -p "$logs"
left() { echo $((budget - ($(date +%s) - t0))); }
log() { echo "== $*" | tee -a "$out/summary.txt"; }
pack() { tar -C "$(dirname "$logs")" -czf "$out/logs.tar.gz" logs 2> /dev/null; }
run() { # run NAME SECONDS CMD...: output in logs/NAME.txt, status in the summary
    name=$1 secs=$2
    shift 2
    l=$(left)
    [ "$secs" -gt $((l - 10)) ] && secs=$((l - 10))
    if [ "$secs" -lt 5 ]; then
        log "$name: not run (time is up)"
        return 1
    fi
    start=$(date +%s)
    timeout -k 5 "$secs" "$@" > "$logs/$name.txt" 2>&1
    rc=$?
    log "$name: exit $rc in $(($(date +%s) - start)) s"
    return $rc
}

log "machine: $(uname -srm), $(nproc) cores, $(date -u +%FT%TZ)"
{
    command -v nvidia-smi > /dev/null && nvidia-smi
    grep -m1 'model name' /proc/cpuinfo
    ls -l /etc/OpenCL/vendors
    cat /etc/os-release
} > "$logs/machine.txt" 2>&1
for p in python3 clinfo wrk; do
    command -v "$p" > /dev/null || log "missing: $p"
done

# The bundle: its build's absolute paths (/work/main/...) must lead here,
# and of its libraries only those the machine lacks go on the path, but the
# ICD loader (one that honours OCL_ICD_VENDORS).
if [ -f .gpu/bundle.tar.xz ]; then
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        .gpu/bundle.tar.xz .gpu/x || exit 2
    here=$(pwd -P)
    if [ "$here" != /work/main ]; then
        if [ -e /work/main ] && [ ! -L /work/main ]; then
            log "/work/main is taken: the bundle's paths cannot lead here"
            exit 2
        fi
        mkdir -p /work && ln -sfn "$here" /work/main || exit 2
    fi
    rm -rf build-gpu && ln -s .gpu/x/build-gpu build-gpu
    mkdir -p .gpu/x/path
    for l in .gpu/x/lib/*; do
        n=$(basename "$l")
        if [ "$n" = libOpenCL.so.1 ] || ! ldconfig -p 2> /dev/null | grep -q "^[[:space:]]*$n "; then
            ln -sf "$here/$l" .gpu/x/path/
        fi
    done
    export LD_LIBRARY_PATH="$here/.gpu/x/path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PATH="$here/.gpu/x/bin:$PATH"
    log "bundle: libraries from it: $(ls .gpu/x/path | tr '\n' ' ')"
else
    for p in meson ninja cc pkg-config; do
        command -v "$p" > /dev/null || log "missing: $p"
    done
    [ -d build-gpu ] || run setup 120 meson setup build-gpu -Ddebug=false -Doptimization=2 || exit 1
    run build 300 ninja -C build-gpu || exit 1
fi

# NVIDIA's ICD when no vendors file names one (a container's driver mount
# has the library but not /etc/OpenCL/vendors/nvidia.icd)
if [ -z "${OCL_ICD_VENDORS:-}" ] && ! ls /etc/OpenCL/vendors/*.icd > /dev/null 2>&1; then
    lib=""
    for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do
        [ -e "$d/libnvidia-opencl.so.1" ] && lib=$d/libnvidia-opencl.so.1 && break
    done
    [ -n "$lib" ] || lib=$(timeout 30 find / -name 'libnvidia-opencl.so*' -not -path '/proc/*' 2> /dev/null | head -1)
    if [ -n "$lib" ]; then
        mkdir -p .gpu/vendors && echo "$lib" > .gpu/vendors/nvidia.icd
        export OCL_ICD_VENDORS="$PWD/.gpu/vendors"
        log "ICD: $lib (OCL_ICD_VENDORS=$OCL_ICD_VENDORS)"
    else
        log "no OpenCL ICD found: only the CPU device"
    fi
fi
pack

cli=build-gpu/tools/clgraph
run version 10 "$cli" --version
run devices 60 "$cli" devices
command -v clinfo > /dev/null && run clinfo 60 clinfo
n=$("$cli" devices 2> /dev/null | grep -c '^opencl:')
log "OpenCL devices: $n"
pack

# Every device's conformance and the dates samples on each device.
i=0
while [ "$i" -lt "$n" ]; do
    run "conform_opencl$i" 120 "$cli" conform --device "opencl:$i"
    run "dates_opencl$i" 60 sh -c "$cli translate models/dates --device opencl:$i < models/dates/samples.txt \
        | diff - models/dates/samples.expected"
    # the Transformer demo (needs the build's SentencePiece)
    run "marian_opencl$i" 60 sh -c "$cli translate models/marian_dates --device opencl:$i \
        < models/dates/samples.txt | diff - models/dates/samples.expected"
    i=$((i + 1))
    pack
done

# The test suites, for GPU_CHECK_TEST_SECONDS (150) at most, leaving the
# benchmarks 150 s: every quick test (their OpenCL
# cases run on the machine's devices), and the portability tests pointed at
# the GPU's implementation. Without the bundle's test list (a build made
# here), meson runs them.
tsecs=$(($(left) - 150))
[ "$tsecs" -gt "${GPU_CHECK_TEST_SECONDS:-150}" ] && tsecs=${GPU_CHECK_TEST_SECONDS:-150}
if [ -f .gpu/x/tests.json ] && [ "$tsecs" -gt 30 ]; then
    v=${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}
    derive="--derive portability_nvidia_gpu=portability_pocl_gpu:CG_TEST_IMPL=nvidia"
    derive="$derive --derive portability_nvidia_cpu=portability_pocl_cpu:CG_TEST_IMPL=nvidia"
    derive="$derive --derive random_graphs_nvidia_gpu_cold=random_graphs_pocl_gpu_cold:CG_TEST_IMPL=nvidia"
    start=$(date +%s)
    # shellcheck disable=SC2086
    python3 tools/py/gpu_tests.py .gpu/x/tests.json "$logs/tests" --jobs "$(nproc)" --seconds "$tsecs" \
        --skip-suite portability --skip-suite fault --skip-suite serve --skip-suite python \
        --set "OCL_ICD_VENDORS=$v" --set CG_PYTHON=python3 $derive > "$logs/tests.txt" 2>&1
    log "tests: exit $? in $(($(date +%s) - start)) s: $(tail -1 "$logs/tests.txt")"
    grep -E ': (FAIL|TIMEOUT|NOT RUN)' "$logs/tests.txt" | tee -a "$out/summary.txt"
elif [ "$tsecs" -gt 30 ]; then
    run tests "$tsecs" meson test -C build-gpu --print-errorlogs
fi
pack

# Speed: the CPU and each OpenCL device, batch 1 and 64 greedy, batch 16 beam 5.
bench() { # bench TAG, on $model
    tag=$1
    for dev in cpu $(i=0; while [ "$i" -lt "$n" ]; do echo "opencl:$i"; i=$((i + 1)); done); do
        for w in "1 1" "64 1" "16 5"; do
            set -- $w
            run "bench_${tag}_$(echo "$dev" | tr : _)_b$1_k$2" 40 \
                "$cli" bench "$model" --device "$dev" --batch "$1" --beam "$2" --src-len 30 --steps 30 --runs 5 --json
        done
    done
    pack
}
model=models/dates
bench dates
model=models/marian_dates
bench marian_dates
if python3 -c 'import numpy, torch' 2> /dev/null; then
    run make_medium 60 python3 tools/py/bench/make_bench_model.py medium .gpu/medium-model &&
        { model=.gpu/medium-model; bench medium; }
    # the peer on the GPU: PyTorch on CUDA, the same weights and loops as
    # docs/performance.md's side by side
    if [ -d .gpu/medium-model ] && python3 -c 'import torch; assert torch.cuda.is_available()' 2> /dev/null; then
        for w in "1 1" "64 1" "16 5"; do
            set -- $w
            run "torch_cuda_medium_b$1_k$2" 60 python3 tools/py/bench/side_by_side.py --torch-worker \
                --model .gpu/medium-model --batch "$1" --beam "$2" --src-len 30 --steps 30 --warmup 1 --runs 5 \
                --torch-device cuda
        done
        pack
    fi
else
    log "no numpy and torch: the medium benchmark model is not made"
fi
# `clgraph serve` under load (docs/serving.md: --max-batch 64 against 1, 64
# connections) on the first OpenCL device, when the build has it and wrk is
# there.
if command -v wrk > /dev/null && [ "$n" -gt 0 ] && ! "$cli" serve --help 2>&1 | grep -q "built without"; then
    run serve_load_opencl0 90 tools/bench/serve_load.sh build-gpu 8 64 opencl:0
else
    log "no wrk or no serve: the serving load is not measured"
fi
pack

pack
log "done in $(($(date +%s) - t0)) s; results in $out"
