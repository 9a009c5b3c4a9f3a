# Nothing silently lost or misread, and one line with the right exit code
# (issue 29, sections 3 and 4): bytes in a forecast CSV that are not part
# of a number, wrong-typed ONNX attributes, bad `translate --ids` lines,
# model directories `quantize` must refuse before writing, full disks and
# closed pipes, a --horizon past year 9999, plugin messages over several
# lines. Every case must fail with exactly one line; where output is
# written, nothing partial may be left behind.
D="$SRC/models/dates"
E="$SRC/models/elnino"
CSV="$E/example.csv"

# ---- forecast CSV: a value with a byte that is not part of a number ----
# csv_bad NAME FIELD: example.csv with row 5's value replaced by FIELD
# (printf escapes: \000 is a NUL byte), which must be refused naming
# stdin:6:COL; nothing is written to stdout.
csv_bad() {
    local name=$1 field=$2
    { head -n 5 "$CSV"; printf "2006-05-01,$field\n"; tail -n +7 "$CSV"; } > "$W/csv-$name.csv"
    bad "csv-$name" --stdin "$W/csv-$name.csv" --match "stdin:6:" --out-lines 0 -- forecast "$E" --horizon 2
}
csv_bad nul-inside '24\00076'
csv_bad nul-first '\00024.76'
csv_bad nul-last '24.76\000'
csv_bad nul-only '\000'
csv_bad soh-inside '24\00176'
csv_bad tab-inside '24\t76'
csv_bad vt-inside '24\01376'
csv_bad ff-last '24.76\014'
csv_bad esc-inside '24\033[0m76'
csv_bad del-inside '24\17776'
csv_bad letters abc
csv_bad suffix 24.76x
csv_bad prefix x24.76
csv_bad space-inside '24 76'
csv_bad space-before ' 24.76'
csv_bad space-after '24.76 '
csv_bad two-dots 24.7.6
csv_bad two-signs +-24
csv_bad exp-empty 24e
csv_bad exp-sign 24e+
csv_bad hex 0x18
csv_bad nan nan
csv_bad inf inf
csv_bad overflow 1e400
csv_bad dot-only .
csv_bad sign-only -
csv_bad empty ''
csv_bad comma-decimal '"24,76"'
csv_bad fullwidth '２４'
csv_bad latin1 '24\37176'
csv_bad utf8-minus '\342\210\22224'
csv_bad quote-open '"24.76'
csv_bad text-after-quote '"24"76'
# a lone CR ends a line (as in old Mac files): "24" on line 6, "76" alone on line 7
{ head -n 5 "$CSV"; printf '2006-05-01,24\r76\n'; tail -n +7 "$CSV"; } > "$W/csv-cr-inside.csv"
bad csv-cr-inside --stdin "$W/csv-cr-inside.csv" --match "stdin:7:1: 1 fields" --out-lines 0 -- forecast "$E" --horizon 2
# a NUL outside a value: in the time column, in the header
{ head -n 5 "$CSV"; printf '2006-05\000-01,24.76\n'; tail -n +7 "$CSV"; } > "$W/csv-nul-time.csv"
bad csv-nul-time --stdin "$W/csv-nul-time.csv" --match "stdin:6:8: a NUL byte" --out-lines 0 -- forecast "$E" --horizon 2
{ printf 'time,s\000st\n'; tail -n +2 "$CSV"; } > "$W/csv-nul-header.csv"
bad csv-nul-header --stdin "$W/csv-nul-header.csv" --match "stdin:1:7: a NUL byte" --out-lines 0 -- forecast "$E" --horizon 2

# ---- forecast: a horizon past what the time column can hold ----
bad horizon-year-9999 --stdin "$CSV" --match "would pass 9999-12-31; at most 95880 steps fit" --out-lines 0 \
    -- forecast "$E" --horizon 96000
bad horizon-million --stdin "$CSV" --match "--horizon 1000000" --out-lines 0 -- forecast "$E" --horizon 1000000
{ echo time,sst; for d in 20 21 22 23 24 25 26 27 28 29 30; do echo "9999-11-$d,24.1"; done; } > "$W/days.csv"
bad horizon-days --stdin "$W/days.csv" --match "at most 31 steps fit" --out-lines 0 -- forecast "$E" --horizon 32
{ echo time,sst; for i in 1 2 3 4 5 6 7 8; do echo "${i}000000000000000000,24.1"; done; } > "$W/ints.csv"
bad horizon-int64 --stdin "$W/ints.csv" --match "the largest time it can hold" --out-lines 0 -- forecast "$E" --horizon 20

# ---- translate --ids: one bad line among good ones ----
# ids_bad NAME LINE: LINE between two good lines; the good ones are
# translated, the bad one is an empty line (3 lines out), exit 1.
ids_bad() {
    printf '3 4 5\n%s\n6 7 8\n' "$2" > "$W/ids-$1.txt"
    bad "ids-$1" --stdin "$W/ids-$1.txt" --match "stdin:2:" --out-lines 3 -- translate "$D" --ids
}
ids_bad letters abc
ids_bad negative -5
ids_bad past-vocab 63
ids_bad far-past-vocab 99999
ids_bad two-to-31 2147483648
ids_bad two-to-32 4294967296
ids_bad huge 99999999999999999999999
ids_bad exponent 1e3
ids_bad decimal 3.5
ids_bad hex 0x10
ids_bad comma 3,4
ids_bad plus +3
ids_bad dash 3-4
ids_bad last-bad '3 4 x'
ids_bad middle-bad '3 x 4'
ids_bad control "$(printf '3\0014')"
ids_bad arabic-digit '٣'
ids_bad power '2^31'
printf '3 4 99\n' > "$W/ids-attention.txt"
bad ids-attention --stdin "$W/ids-attention.txt" --match "no heat map is written" --absent "$W/ids-att.json" \
    -- translate "$D" --ids --attention "$W/ids-att.json"
printf '22 November 2026\nthe 22nd of November 2026 and a lot more words\n' > "$W/long.txt"
bad attention-long-line --stdin "$W/long.txt" --match "no heat map is written" --absent "$W/long-att.json" \
    --out-lines 2 -- translate "$D" --max-input-len 20 --attention "$W/long-att.json"

# ---- ONNX: an attribute of the wrong type, on every op that reads one ----
for f in "$SRC"/tests/data/onnx/badattr/*.onnx; do
    n=$(basename "$f" .onnx)
    bad "onnx-attr-$n" --match "node 'bad_$n' (" --out-lines 0 -- import "$f"
done
for n in softmax_axis_float cast_to_string gemm_transb_float; do
    bad "onnx-attr-check-$n" --match "expected" -- check "$SRC/tests/data/onnx/badattr/$n.onnx"
done

# ---- model directories refused before anything is written ----
# model_bad NAME SRC_DIR FILE CONTENT: a copy of SRC_DIR with FILE replaced
model_bad() {
    local name=$1 from=$2 file=$3
    mkdir -p "$W/m-$name"
    cp "$from"/* "$W/m-$name/"
    printf "$4" > "$W/m-$name/$file"
}
model_bad s2s-brace "$D" config.json '{'
model_bad s2s-empty "$D" config.json ''
model_bad s2s-array "$D" config.json '[]'
model_bad s2s-null "$D" config.json 'null'
model_bad s2s-nul "$D" config.json '{"cell": "gru"\000}'
model_bad s2s-cell "$D" config.json '{"cell": "xyz", "emb_dim": 32, "hidden": 128}'
model_bad s2s-hidden "$D" config.json '{"cell": "gru", "emb_dim": 32, "hidden": -1}'
model_bad s2s-weights "$D" weights.safetensors 'not safetensors'
model_bad s2s-vocab "$D" src.vocab ''
model_bad fc-brace "$E" config.json '{'
model_bad fc-columns "$E" config.json '{"task": "forecast", "columns": 5}'
model_bad fc-weights "$E" weights.safetensors '\000\000\000\000\000\000\000\000'
for m in s2s-brace s2s-empty s2s-array s2s-null s2s-nul s2s-cell s2s-hidden s2s-weights s2s-vocab \
         fc-brace fc-columns fc-weights; do
    bad "quantize-$m" --absent "$W/q-$m" -- quantize "$W/m-$m" --to int8 -o "$W/q-$m"
done
mkdir -p "$W/q-existing"
bad quantize-existing-dir --empty "$W/q-existing" -- quantize "$W/m-s2s-brace" --to bf16 -o "$W/q-existing"
for m in s2s-brace s2s-nul s2s-cell s2s-weights; do
    bad "translate-$m" --stdin "$D/samples.txt" --out-lines 0 -- translate "$W/m-$m"
done
for m in fc-brace fc-columns fc-weights; do
    bad "forecast-$m" --stdin "$CSV" --out-lines 0 -- forecast "$W/m-$m" --horizon 2
done

# ---- a full disk: nothing empty or cut left behind ----
# each case its own directory: the cases run at once, and one case's
# temporary file is not another's leftover
mkdir -p "$W/full-q" "$W/full-fc-png" "$W/full-fc-svg" "$W/full-fc-json" "$W/full-tr-png" "$W/full-tr-svg" "$W/full-tr-json"
for ext in png svg json; do
    bad "full-translate-attention-$ext" --fsize 1 --stdin "$D/samples.txt" --empty "$W/full-tr-$ext" \
        -- translate "$D" --attention "$W/full-tr-$ext/a.$ext"
done
bad full-forecast-plot-png --fsize 1 --stdin "$CSV" --empty "$W/full-fc-png" -- forecast "$E" --horizon 12 --plot "$W/full-fc-png/p.png"
bad full-forecast-plot-svg --fsize 1 --stdin "$CSV" --empty "$W/full-fc-svg" -- forecast "$E" --horizon 12 --plot "$W/full-fc-svg/p.svg"
bad full-forecast-attention-json --fsize 1 --stdin "$CSV" --empty "$W/full-fc-json" \
    -- forecast "$E" --horizon 12 --attention "$W/full-fc-json/a.json"
bad full-quantize --fsize 64 --absent "$W/full-q/out" -- quantize "$D" --to int8 -o "$W/full-q/out"
bad full-stdout-translate --stdout /dev/full --stdin "$D/samples.txt" --match "line" -- translate "$D"
bad full-stdout-forecast --stdout /dev/full --stdin "$CSV" -- forecast "$E" --horizon 3
bad full-stdout-import --stdout /dev/full --match "stdout" -- import "$SRC/tests/data/onnx/fold_cast.onnx"
bad full-stdout-s2s-graph --stdout /dev/full -- s2s-graph "$D"
bad full-stdout-ops --stdout /dev/full -- ops
bad full-stdout-devices --stdout /dev/full -- devices

# ---- a closed pipe: the write error, exit 1, not death by SIGPIPE ----
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do cat "$D/samples.txt"; done > "$W/many.txt"
for i in 1 2 3 4 5 6 7 8 9 10; do cat "$W/many.txt"; done > "$W/many10.txt"
bad pipe-translate --pipe --stdin "$W/many10.txt" --match "Broken pipe" -- translate "$D"
bad pipe-translate-ids --pipe --stdin "$W/ids-letters.txt" -- translate "$D" --ids --nbest 1
bad pipe-forecast --pipe --stdin "$CSV" --match "Broken pipe" -- forecast "$E" --horizon 50000

# ---- plugins: a corrupt descriptor, messages over several lines ----
if [ -n "${CG_TEST_PLUGIN_DIR:-}" ] && [ -e "$CG_TEST_PLUGIN_DIR/libcgtest_kernel_newline.so" ]; then
    P=$CG_TEST_PLUGIN_DIR
    printf 'graph g {\n  input x: f32[A, N]\n  y = square_plus(x) {offset: 0.5}\n  output y\n}\n' > "$W/sq.cg"
    bad plugin-huge-struct --match "struct_size 4294967295" -- ops --plugin "$P/libcgtest_huge_struct.so"
    bad plugin-name-newline --match "control character" -- ops --plugin "$P/libcgtest_name_newline.so"
    bad plugin-init-newline --match 'license file\x0aat' -- ops --plugin "$P/libcgtest_init_newline.so"
    bad plugin-infer-newline --match 'wrong\x0asee' -- check "$W/sq.cg" --plugin "$P/libcgtest_infer_newline.so"
    bad plugin-infer-full --match "square_plus 'y'" -- check "$W/sq.cg" --plugin "$P/libcgtest_infer_full.so"
    bad plugin-kernel-newline --match 'failed\x0d\x0asecond' \
        -- run "$W/sq.cg" --input "x=$SRC/tests/data/dtypes/f32.npy" --plugin "$P/libcgtest_kernel_newline.so"
fi
