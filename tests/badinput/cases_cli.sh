# Command lines: a bad option or value is exit 2 with one line.
D="$SRC/models/dates"
bad cli-unknown-command --exit 2 -- frobnicate
bad cli-plan-bind-garbage --exit 2 -- plan "$D" --bind 'B==,'
bad cli-plan-bind-noeq --exit 2 -- plan "$D" --bind 'B'
bad cli-translate-beam-0 --exit 2 -- translate "$D" --beam 0
bad cli-translate-beam-huge --exit 2 -- translate "$D" --beam 1025
bad cli-quantize-to-foo --exit 2 --absent "$W/q-foo" -- quantize "$D" --to foo -o "$W/q-foo"
# A malformed --bind is a command-line mistake (exit 2), on a model
# directory and on a graph file alike; it used to be exit 1.
for b in '=3' 'B=-1' 'B=3x' 'B=99999999999' 'B 3' ',,=' 'B=1,S' 'B=1;S=2' 'B=' 'B=0x3'; do
    bad "cli-plan-bind-$(printf '%s' "$b" | od -An -tx1 | tr -d ' \n')" --exit 2 --match "--bind" -- plan "$D" --bind "$b"
done
bad cli-plan-bind-graph-file --exit 2 --match "--bind" \
    -- plan "$SRC/tests/data/onnx/fold_cast.onnx" --bind 'N==2'
# A usage error is one line: the mistake and where the help is.
bad cli-no-command --exit 2 --match "see clgraph --help"
bad cli-quantize-no-o --exit 2 --match "see clgraph quantize --help" -- quantize "$D" --to int8
bad cli-quantize-unknown --exit 2 --match "see clgraph quantize --help" -- quantize "$D" --to int8 -o "$W/q-u" --bogus
bad cli-quantize-two-dirs --exit 2 --absent "$W/q-two" -- quantize "$D" "$D" --to int8 -o "$W/q-two"
bad cli-quantize-to-f32 --exit 2 --absent "$W/q-f32" -- quantize "$D" --to f32 -o "$W/q-f32"
