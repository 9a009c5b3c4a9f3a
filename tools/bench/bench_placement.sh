#!/bin/sh
# Placement benchmark: the same seq2seq model decoded with every sentence on
# the CPU, on the first OpenCL device, and with `--device auto`; prints the
# median wall time of 3 runs after a warm-up (which also fills the program
# and cost caches). Usage: tools/bench/bench_placement.sh [medium|large] [BUILD_DIR]
set -eu
size=${1:-medium}
build=${2:-build}
here=$(cd "$(dirname "$0")/../.." && pwd)
clgraph="$build/tools/clgraph"
work=${TMPDIR:-/tmp}/clgraph-bench-$size
[ -d "$work/model" ] || /usr/bin/python3 "$here/tools/py/bench/make_bench_model.py" "$size" "$work/model" >/dev/null
/usr/bin/python3 - "$work" <<'PY'
import random, sys
random.seed(1)
with open(sys.argv[1] + "/src16.ids", "w") as f:
    for _ in range(16):
        f.write(" ".join(str(random.randrange(4, 8000)) for _ in range(30)) + "\n")
with open(sys.argv[1] + "/src1.ids", "w") as f:
    f.write(" ".join(str(random.randrange(4, 8000)) for _ in range(30)) + "\n")
PY
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() { # device batch file
  "$clgraph" translate "$work/model" --ids --max-len 30 --device "$1" --batch "$2" < "$3" > /dev/null
}
printf "%-10s %-28s %10s\n" device workload "median s"
for wl in "1 src1.ids" "16 src16.ids"; do
  set -- $wl
  for dev in cpu opencl:0 auto; do
    run "$dev" "$1" "$work/$2"
    t=$(for i in 1 2 3; do
          s=$(date +%s.%N); run "$dev" "$1" "$work/$2"; e=$(date +%s.%N)
          echo "$e - $s" | bc
        done | median)
    printf "%-10s %-28s %10s\n" "$dev" "batch $1, 30 steps, src 30" "$t"
  done
done
