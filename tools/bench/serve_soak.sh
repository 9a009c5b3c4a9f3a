#!/bin/sh
# Soak of `clgraph serve` (docs/serving.md): wrk keeps C connections busy
# translating the dates demo for S seconds while the server's resident set
# (VmRSS) is sampled every 10 s. Prints the samples, the requests and
# errors, and whether RSS stayed flat (the last minute's mean within 5% of
# the mean of the minute after warm-up).
#   tools/bench/serve_soak.sh [BUILD_DIR] [SECONDS] [CONNECTIONS]
set -eu
build=${1:-build}
secs=${2:-600}
conns=${3:-32}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'kill $(cat "$work"/pid 2>/dev/null) 2>/dev/null; rm -rf "$work"' EXIT
. "$src/tools/bench/serve_common.sh"
{
    serve_bodies ', "beam": 2, "attention": true'
    cat <<'LUA'
done = function(summary, latency, requests)
    io.write(string.format("RESULT %d requests, %d errors (%d status), p50 %.2f ms, p99 %.2f ms\n",
        summary.requests, summary.errors.status + summary.errors.connect + summary.errors.read
        + summary.errors.write + summary.errors.timeout, summary.errors.status,
        latency:percentile(50) / 1e3, latency:percentile(99) / 1e3))
end
LUA
} > "$work/post.lua"
serve_start "$src/models/dates" --max-batch 32
pid=$(cat "$work/pid")
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
wrk -t1 -c"$conns" -d"$secs"s --timeout 30s -s "$work/post.lua" \
    "http://127.0.0.1:$port/v2/models/dates/translate" > "$work/wrk" &
wrkpid=$!
t=0
while kill -0 $wrkpid 2>/dev/null; do
    rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
    echo "$t $rss" >> "$work/rss"
    echo "t=${t}s rss=${rss} kB"
    sleep 10
    t=$((t + 10))
done
sed -n 's/^RESULT //p' "$work/wrk"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
kill -TERM $pid
wait $pid
awk -v secs="$secs" '
    $1 >= 60 && $1 < 120 { a += $2; na++ }
    $1 >= secs - 60 { b += $2; nb++ }
    { if ($2 > max) max = $2 }
    END { if (!na || !nb) { print "too short to judge (at least 3 minutes)"; exit }
          printf "RSS after warm-up %.0f kB, last minute %.0f kB (%+.1f%%), max %d kB: %s\n", a / na, b / nb,
                 100 * (b / nb - a / na) / (a / na), max, (b / nb <= 1.05 * a / na) ? "flat" : "GROWING" }' "$work/rss"
