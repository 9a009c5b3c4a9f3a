#!/bin/sh
# Short and long translations at once on `clgraph serve` (docs/serving.md):
# wrk keeps SHORT connections sending one dates sentence each (about 11
# decoding steps) while another wrk keeps LONG connections sending
# sentences decoded to exactly 300 steps (min_len = max_len = 300), for S
# seconds, against --workers 1 and --workers 2. Prints the short requests'
# p50 / p99 and rate beside a lone short request's p50. Then the same with
# short and long requests that share their options, so they meet in one
# batch: a random-weight RNN model of tests/golden that ends a one-token
# source after 11 steps and never ends a 145-token one (300 steps, its
# default max_len), token ids in.
#   tools/bench/serve_mixed.sh [BUILD_DIR] [SECONDS] [SHORT] [LONG]
set -eu
build=${1:-build}
secs=${2:-10}
short=${3:-16}
long=${4:-4}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'kill $(cat "$work"/pid 2>/dev/null) 2>/dev/null; rm -rf "$work"' EXIT
. "$src/tools/bench/serve_common.sh"
lua_done() { # wrk's done(): rate, p50, p99 and errors on one RESULT line
    cat <<'LUA'
done = function(summary, latency, requests)
    io.write(string.format("RESULT %.1f %.2f %.2f %d\n", summary.requests / (summary.duration / 1e6),
        latency:percentile(50) / 1e3, latency:percentile(99) / 1e3,
        summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write
        + summary.errors.timeout))
end
LUA
}
lua() { # lua EXTRA_JSON
    serve_bodies "$1"
    lua_done
}
lua "" > "$work/short.lua"
lua ', "min_len": 300, "max_len": 300' > "$work/long.lua"
ids_lua() { # ids_lua TOKENS: a request of one source of TOKENS ids
    printf 'local ids = {}\nfor k = 1, %d do ids[k] = 4 + (k - 1) %% 10 end\n' "$1"
    cat <<'LUA'
wrk.method = "POST"
wrk.body = '{"ids": [[' .. table.concat(ids, ",") .. ']]}'
LUA
    lua_done
}
run() { # run WORKERS [MODEL_DIR]: $work/short.lua and long.lua against MODEL_DIR (default: the dates demo)
    model=${2:-$src/models/dates}
    serve_start "m=$model" --max-batch 64 --max-delay-us 1000 --workers "$1"
    url=http://127.0.0.1:$port/v2/models/m/translate
    lone=$(wrk -t1 -c1 -d3s -s "$work/short.lua" "$url" | sed -n 's/^RESULT //p')
    wrk -t1 -c"$long" -d"$secs"s --timeout 60s -s "$work/long.lua" "$url" > "$work/long" &
    lp=$!
    s=$(wrk -t1 -c"$short" -d"$secs"s --timeout 60s -s "$work/short.lua" "$url" | sed -n 's/^RESULT //p')
    wait $lp
    l=$(sed -n 's/^RESULT //p' "$work/long")
    kill -TERM "$(cat "$work/pid")"
    wait "$(cat "$work/pid")"
    set -- $lone
    lone50=$2
    set -- $s
    printf '| %s | %s | %s | %s | %s | %s |' "$W" "$lone50" "$1" "$2" "$3" "$4"
    set -- $l
    printf ' %s | %s | %s |\n' "$1" "$2" "$4"
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| --workers | lone short p50 ms | short/s | short p50 ms | short p99 ms | short errors | long/s | long p50 ms | long errors |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for W in 1 2; do run "$W"; done
echo
echo "Short and long requests in the same batches (one option set):"
echo "| --workers | lone short p50 ms | short/s | short p50 ms | short p99 ms | short errors | long/s | long p50 ms | long errors |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
ids_lua 1 > "$work/short.lua"
ids_lua 145 > "$work/long.lua"
for W in 1 2; do run "$W" "$src/tests/golden/s2s/lstm_dot_bahdanau_zeros_words"; done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
