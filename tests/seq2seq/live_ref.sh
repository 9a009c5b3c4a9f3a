#!/bin/sh
# Live check against the PyTorch reference: fresh random models of several
# variants (tools/py/s2s_ref.py random, fixed seeds), random id sources, decoded
# by `tools/py/s2s_ref.py translate` and by `clgraph translate`, greedy and
# beam 3 / n-best 2, --ids --scores: tokens must be identical, scores within
# 1e-4. Exits 77 (meson's SKIP) when the Python (CG_PYTHON, default
# /usr/bin/python3) cannot import torch.
# Environment (tests/meson.build): CG_SOURCE_DIR, CG_CLGRAPH; CG_PYTHON.
set -u
PY=${CG_PYTHON:-/usr/bin/python3}
SRC=${CG_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CLGRAPH=${CG_CLGRAPH:?CG_CLGRAPH is not set}
REF="$SRC/tools/py/s2s_ref.py"

if ! "$PY" -c 'import torch' >/dev/null 2>&1; then
    echo "SKIP: $PY cannot import torch"
    exit 77
fi

tmp=$(mktemp -d /tmp/cg_live_ref_XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

fail=0

# name seed v_src v_tgt config. Fixed seeds, chosen (among 1001..1012) so
# that each model ends some sources with EOS and runs others to max_len, in
# greedy and in beam decoding (random models tend to do only one of the two).
cat > "$tmp/variants" <<'V'
gru_additive_bi 1001 24 22 {"cell":"gru","emb_dim":8,"hidden":12,"bidirectional":true,"attention":"additive","attention_dim":10}
lstm_general_luong_dec2 1008 26 24 {"cell":"lstm","emb_dim":10,"hidden":12,"attention":"general","decoder_style":"luong","decoder_layers":2}
gru_local_predictive_dot_zeros 1002 22 26 {"cell":"gru","emb_dim":8,"hidden":10,"attention":"scaled_dot","local":{"mode":"predictive","D":2},"bridge":"zeros","tokenizer":"chars"}
lstm_cosine_enc2_local_monotonic 1012 24 24 {"cell":"lstm","emb_dim":8,"hidden":10,"attention":"cosine","encoder_layers":2,"local":{"mode":"monotonic","D":1},"decoder_style":"luong"}
V

# compare REF OUT: same line count, same text before the last tab, scores
# within 1e-4.
compare() {
    "$PY" - "$1" "$2" <<'P'
import sys
a = open(sys.argv[1], encoding="utf-8").read().split("\n")
b = open(sys.argv[2], encoding="utf-8").read().split("\n")
if len(a) != len(b):
    print("line counts differ: reference %d, clgraph %d" % (len(a), len(b)))
    sys.exit(1)
bad = 0
for i, (x, y) in enumerate(zip(a, b)):
    if x == y:
        continue
    xt, _, xs = x.rpartition("\t")
    yt, _, ys = y.rpartition("\t")
    try:
        close = abs(float(xs) - float(ys)) <= 1e-4
    except ValueError:
        close = False
    if xt != yt or not close:
        print("line %d: reference [%s] clgraph [%s]" % (i + 1, x, y))
        bad += 1
sys.exit(1 if bad else 0)
P
}

while read -r name seed vs vt cfg; do
    d="$tmp/$name"
    if ! "$PY" "$REF" random --config "$cfg" --out "$d" --seed "$seed" --v-src "$vs" --v-tgt "$vt" >/dev/null; then
        echo "FAIL $name: tools/py/s2s_ref.py random failed"
        fail=1
        continue
    fi
    # sources: deterministic per seed, lengths 0..9, ids 4..v_src-1 (no specials)
    "$PY" -c '
import random, sys
seed, v = int(sys.argv[1]), int(sys.argv[2])
r = random.Random(seed)
for n in [3, 7, 1, 9, 5, 0, 4, 8]:
    print(" ".join(str(r.randrange(4, v)) for _ in range(n)))
' "$seed" "$vs" > "$d/sources.ids"
    for mode in greedy beam; do
        if [ "$mode" = greedy ]; then opts=""; else opts="--beam 3 --nbest 2"; fi
        # shellcheck disable=SC2086
        "$PY" "$REF" translate "$d" --ids --scores $opts < "$d/sources.ids" > "$d/ref.$mode" 2> "$d/ref.$mode.err" || {
            echo "FAIL $name $mode: the reference failed:"; cat "$d/ref.$mode.err"; fail=1; continue; }
        # shellcheck disable=SC2086
        "$CLGRAPH" translate "$d" --ids --scores $opts < "$d/sources.ids" > "$d/cg.$mode" 2> "$d/cg.$mode.err" || {
            echo "FAIL $name $mode: clgraph failed:"; cat "$d/cg.$mode.err"; fail=1; continue; }
        if compare "$d/ref.$mode" "$d/cg.$mode"; then
            echo "ok   $name (seed $seed) $mode: $(wc -l < "$d/cg.$mode") lines agree"
        else
            echo "FAIL $name (seed $seed) $mode; config $cfg"
            echo "--- reference:"; cat "$d/ref.$mode"
            echo "--- clgraph:"; cat "$d/cg.$mode"
            fail=1
        fi
    done
done < "$tmp/variants"

exit $fail
