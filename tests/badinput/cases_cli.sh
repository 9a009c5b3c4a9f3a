# Command lines: a bad option or value is exit 2 with one line.
D="$SRC/models/dates"
bad cli-unknown-command --exit 2 -- frobnicate
bad cli-plan-bind-garbage --exit 2 -- plan "$D" --bind 'B==,'
bad cli-plan-bind-noeq --exit 2 -- plan "$D" --bind 'B'
bad cli-translate-beam-0 --exit 2 -- translate "$D" --beam 0
bad cli-translate-beam-huge --exit 2 -- translate "$D" --beam 1025
bad cli-quantize-to-foo --exit 2 --absent "$W/q-foo" -- quantize "$D" --to foo -o "$W/q-foo"
