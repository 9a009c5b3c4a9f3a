# Shared by serve_load.sh, serve_mixed.sh and serve_soak.sh (sourced; they
# set src, build and work).

# serve_bodies EXTRA: wrk's Lua for one translate request per sample
# sentence of the dates demo, round robin, EXTRA appended to each JSON body
# (the script adds its own `done`).
serve_bodies() {
    echo 'local bodies = {}'
    while IFS= read -r line; do
        [ -n "$line" ] && printf 'bodies[#bodies + 1] = [[{"sources": ["%s"]%s}]]\n' "$line" "$1"
    done < "$src/models/dates/samples.txt"
    cat <<'LUA'
local i = 0
wrk.method = "POST"
request = function()
    i = i + 1
    return wrk.format(nil, nil, nil, bodies[i % #bodies + 1])
end
LUA
}

# serve_start ARGS...: `clgraph serve ARGS` on a free loopback port, its pid
# in $work/pid; sets port once it listens.
serve_start() {
    "$src/$build/tools/clgraph" serve --port 0 --access-log none "$@" > "$work/out" 2> "$work/err" &
    echo $! > "$work/pid"
    for _ in $(seq 600); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
    port=$(sed -n 's/.*:\([0-9]*\) (.*/\1/p' "$work/out")
}
