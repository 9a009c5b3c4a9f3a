#!/bin/sh
# Load on `clgraph serve` translating the dates demo (docs/serving.md): wrk
# (Debian's) keeps C connections busy, each request one sentence from
# models/dates/samples.txt, for S seconds; the same server with
# --max-batch 64 and with --max-batch 1, and a lone client's latency
# (1 connection) on each. Prints sentences per second, p50 and p99 latency,
# errors, and the machine's load. DECODE (stream, the default, or batch)
# is the server's --decode: sentences joining the running decode, or
# batches of requests. MODEL (dates, the default, or marian_dates: the
# Transformer demo, which translates the same sentences) is the model of
# models/ it serves.
#   tools/bench/serve_load.sh [BUILD_DIR] [SECONDS] [CONNECTIONS] [DEVICE] [DECODE] [MODEL]
set -eu
build=${1:-build}
secs=${2:-10}
conns=${3:-64}
device=${4:-cpu}
decode=${5:-stream}
model=${6:-dates}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'kill $(cat "$work"/pid 2>/dev/null) 2>/dev/null; rm -rf "$work"' EXIT
. "$src/tools/bench/serve_common.sh"
{
    serve_bodies ""
    cat <<'LUA'
done = function(summary, latency, requests)
    io.write(string.format("RESULT %d %.1f %.3f %.3f %d %d\n", summary.requests,
        summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1e3,
        latency:percentile(99) / 1e3, summary.errors.status + summary.errors.connect + summary.errors.read
        + summary.errors.write + summary.errors.timeout, summary.errors.status))
end
LUA
} > "$work/post.lua"

run() { # run MAX_BATCH: the server, a lone client, then the load
    serve_start "$src/models/$model" --device "$device" --max-batch "$1" --max-delay-us 1000 --max-queue 4096 \
        --decode "$decode"
    url=http://127.0.0.1:$port/v2/models/$model/translate
    lone=$(wrk -t1 -c1 -d"$secs"s -s "$work/post.lua" "$url" | sed -n 's/^RESULT //p')
    load=$(wrk -t2 -c"$conns" -d"$secs"s --timeout 30s -s "$work/post.lua" "$url" | sed -n 's/^RESULT //p')
    kill -TERM "$(cat "$work/pid")"
    wait "$(cat "$work/pid")" || { echo "server exited non-zero" >&2; exit 1; }
    echo "$1 $lone $load"
}
echo "$model, --decode $decode; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
a=$(run 64)
b=$(run 1)
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| --max-batch | lone p50 ms | %s clients: sentences/s | p50 ms | p99 ms | errors |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n' "$conns"
for r in "$a" "$b"; do
    set -- $r
    printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$4" "${9}" "${10}" "${11}" "${12}"
done
set -- $a
sa=$9
lone_a=$4
p50_a=${10}
set -- $b
# awk, not bc: a bare machine (a lent GPU's) may lack bc
awk -v s="$sa" -v s1="$9" -v p="$p50_a" -v l="$lone_a" \
    'BEGIN { printf "speed-up of batching: %.3fx; p50 under load / lone p50 (--max-batch 64): %.3f\n", s / s1, p / l }'
