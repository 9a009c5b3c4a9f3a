# Bounded memory and no hang on any input (issue 29, section 2): a FIFO,
# a directory or a device (/dev/zero) where a file is expected is refused
# at once naming it (it used to block the open, or be read until memory
# ran out); files read whole have a size cap (sparse files here: nothing
# is written); a line of stdin is held up to its cap whatever its length;
# a configuration's layers are looked for in the weights before a graph
# of that size is built; ONNX messages nested past the limit are refused
# before protobuf-c recurses into them. Every case must fail fast (the
# --timeout is a hang) with one line naming the file, option or line.
D="$SRC/models/dates"
E="$SRC/models/elnino"
CSV="$E/example.csv"
ONNX_NODE=/usr/share/libonnx-testdata/data/node
B="$W/bounded"
mkdir -p "$B"

mkfifo "$B/fifo.cg" "$B/fifo.onnx" "$B/fifo.npy" "$B/fifo.safetensors" "$B/fifo.so"
ln -s /dev/zero "$B/zero.cg"
ln -s /dev/zero "$B/zero.onnx"
ln -s /dev/zero "$B/zero.npy"
ln -s /dev/zero "$B/zero.safetensors"
mkdir "$B/dir.cg" "$B/dir.onnx" "$B/dir.npy" "$B/dir.safetensors"
# over the 1 GiB cap of a graph text; sparse, so nothing is written
truncate -s 1100M "$B/huge.cg"
"$CLGRAPH" s2s-graph "$D" > "$B/dates.cg"
printf 'graph g {\n  input x: f32[2]\n  y = relu(x)\n  output y\n}\n' > "$B/tiny.cg"

# ---- graph files: check, fmt, run, plan ----
for k in fifo zero dir; do
    bad "bounded-check-$k" --timeout 10 --match "$k.cg: not a regular file" -- check "$B/$k.cg"
    bad "bounded-fmt-$k" --timeout 10 --match "$k.cg: not a regular file" -- fmt "$B/$k.cg"
    bad "bounded-check-weights-$k" --timeout 10 --match "$k.safetensors: not a regular file" -- \
        check "$B/dates.cg" --weights "$B/$k.safetensors"
    bad "bounded-run-input-$k" --timeout 10 --match "$k.npy: not a regular file" -- \
        run "$B/tiny.cg" --input "x=$B/$k.npy"
    bad "bounded-plan-input-$k" --timeout 10 --match "$k.npy: not a regular file" -- \
        plan "$B/tiny.cg" --input "x=$B/$k.npy"
done
bad bounded-run-fifo-model --timeout 10 --match "fifo.cg: not a regular file (a FIFO)" -- \
    run "$B/fifo.cg" --input "x=$B/fifo.npy"
bad bounded-run-weights-fifo --timeout 10 --match "fifo.safetensors: not a regular file (a FIFO)" -- \
    run "$B/dates.cg" --weights "$B/fifo.safetensors"
bad bounded-run-weights-fifo-opencl --timeout 20 --match "fifo.safetensors: not a regular file (a FIFO)" -- \
    run "$B/dates.cg" --weights "$B/fifo.safetensors" --device opencl:0
bad bounded-run-input-fifo-opencl --timeout 20 --match "fifo.npy: not a regular file (a FIFO)" -- \
    run "$B/tiny.cg" --input "x=$B/fifo.npy" --device opencl:0
bad bounded-check-huge --timeout 10 --mem 512 --match "huge.cg: larger than 1073741824 bytes" -- check "$B/huge.cg"
bad bounded-fmt-huge --timeout 10 --mem 512 --match "huge.cg: larger than 1073741824 bytes" -- fmt "$B/huge.cg"

# ---- ONNX: import, check, onnx-test ----
for k in fifo zero dir; do
    bad "bounded-import-$k" --timeout 10 --match "$k.onnx: not a regular file" -- import "$B/$k.onnx"
done
bad bounded-check-onnx-fifo --timeout 10 --match "fifo.onnx: not a regular file (a FIFO)" -- check "$B/fifo.onnx"
if [ -d "$ONNX_NODE/test_relu" ]; then
    bad bounded-import-input-fifo --timeout 10 --match "fifo.npy: not a regular file (a FIFO)" -- \
        import "$ONNX_NODE/test_relu/model.onnx" --input "x=$B/fifo.npy"
    bad bounded-import-input-zero --timeout 10 --match "zero.npy: not a regular file (a character device)" -- \
        import "$ONNX_NODE/test_relu/model.onnx" --input "x=$B/zero.npy"
    # onnx-test folders whose model or test data is a FIFO: an ERROR row
    # naming it, not a wait
    mkdir -p "$B/ot-model/relu" "$B/ot-data/relu/test_data_set_0"
    mkfifo "$B/ot-model/relu/model.onnx" "$B/ot-data/relu/test_data_set_0/input_0.pb"
    cp -r "$ONNX_NODE/test_relu/test_data_set_0" "$B/ot-model/relu/"
    cp "$ONNX_NODE/test_relu/model.onnx" "$B/ot-data/relu/"
    cp "$ONNX_NODE/test_relu/test_data_set_0/output_0.pb" "$B/ot-data/relu/test_data_set_0/"
    bad bounded-onnx-test-model-fifo --timeout 10 --match "1 errors (of 1)" -- onnx-test "$B/ot-model/relu" --device cpu
    bad bounded-onnx-test-data-fifo --timeout 10 --match "1 errors (of 1)" -- onnx-test "$B/ot-data/relu" --device cpu
    bad bounded-onnx-test-data-fifo-opencl --timeout 30 --match "1 errors (of 1)" -- \
        onnx-test "$B/ot-data/relu" --device opencl:0
fi
# 3,000 graphs nested in node attributes (30 KB) overflowed protobuf-c's
# stack in unpack; written here by hand: ModelProto.graph (tag 0x3a), then
# GraphProto.node (0x0a), NodeProto.attribute (0x2a), AttributeProto.g
# (0x32) over and over, each a tag byte and a varint length
deep_onnx() {
    LC_ALL=C awk -v g="$2" 'BEGIN {
        n = 0
        t[++n] = 58
        for (k = 1; k < g; k++) { t[++n] = 10; t[++n] = 42; t[++n] = 50 }
        len[n] = 0
        for (i = n - 1; i >= 1; i--) len[i] = 1 + vlen(len[i + 1]) + len[i + 1]
        for (i = 1; i <= n; i++) { printf "%c", t[i]; varint(len[i]) }
    }
    function vlen(v,  c) { c = 1; while (v >= 128) { v = int(v / 128); c++ } return c }
    function varint(v) { while (v >= 128) { printf "%c", 128 + v % 128; v = int(v / 128) } printf "%c", v }' > "$1"
}
deep_onnx "$B/deep.onnx" 3000
deep_onnx "$B/deep35.onnx" 35
bad bounded-import-deep --timeout 10 --match "deep.onnx: messages nested more than 100 deep" -- import "$B/deep.onnx"
bad bounded-check-deep --timeout 10 --match "deep.onnx: messages nested more than 100 deep" -- check "$B/deep.onnx"
bad bounded-run-deep-opencl --timeout 20 --match "deep.onnx: messages nested more than 100 deep" -- \
    run "$B/deep.onnx" --device opencl:0
bad bounded-import-deep35 --timeout 10 --match "deep35.onnx: messages nested more than 100 deep" -- import "$B/deep35.onnx"

# ---- --plugin and CLGRAPH_PLUGINS: dlopen waited on a FIFO ----
bad bounded-plugin-fifo --timeout 10 --match "fifo.so: cannot load plugin: not a regular file (a FIFO)" -- \
    check "$B/tiny.cg" --plugin "$B/fifo.so"
bad bounded-plugin-zero --timeout 10 --match "cannot load plugin: not a regular file (a character device)" -- \
    check "$B/tiny.cg" --plugin /dev/zero
bad bounded-plugins-env-fifo --timeout 10 --env "CLGRAPH_PLUGINS=$B/fifo.so" --match "not a regular file (a FIFO)" -- \
    check "$B/tiny.cg"

# ---- model directories: each file a FIFO, /dev/zero or a directory ----
# model_with DIR SRC FILE KIND: a copy of model SRC in DIR with FILE replaced
model_with() {
    local dir=$1 src=$2 file=$3 kind=$4
    mkdir -p "$dir"
    cp "$src"/config.json "$src"/weights.safetensors "$dir"/
    [ -e "$src/src.vocab" ] && cp "$src"/src.vocab "$src"/tgt.vocab "$dir"/
    rm -f "$dir/$file"
    case $kind in
        fifo) mkfifo "$dir/$file" ;;
        zero) ln -s /dev/zero "$dir/$file" ;;
        dir) mkdir "$dir/$file" ;;
    esac
}
for f in config.json weights.safetensors src.vocab tgt.vocab model.cg; do
    for k in fifo zero dir; do
        m="$B/dates-$f-$k"
        model_with "$m" "$D" "$f" "$k"
        bad "bounded-translate-$f-$k" --timeout 10 --stdin "$D/samples.txt" --match "$f: not a regular file" -- \
            translate "$m"
    done
    bad "bounded-translate-$f-fifo-opencl" --timeout 20 --stdin "$D/samples.txt" --match "$f: not a regular file" -- \
        translate "$B/dates-$f-fifo" --device opencl:0
    case $f in *.vocab) ;; *) # s2s-graph reads no vocabulary
        bad "bounded-s2s-graph-$f-fifo" --timeout 10 --match "$f: not a regular file" -- s2s-graph "$B/dates-$f-fifo" ;;
    esac
    bad "bounded-bench-$f-zero" --timeout 10 --match "$f: not a regular file" -- bench "$B/dates-$f-zero" --runs 1
done
bad bounded-quantize-vocab-fifo --timeout 10 --absent "$B/q-out" --match "not a regular file (a FIFO)" -- \
    quantize "$B/dates-tgt.vocab-fifo" --to bf16 -o "$B/q-out"
for f in config.json weights.safetensors model.cg; do
    for k in fifo zero dir; do
        m="$B/elnino-$f-$k"
        model_with "$m" "$E" "$f" "$k"
        bad "bounded-forecast-$f-$k" --timeout 10 --stdin "$CSV" --match "$f: not a regular file" -- \
            forecast "$m" --horizon 2
    done
    bad "bounded-forecast-$f-fifo-opencl" --timeout 20 --stdin "$CSV" --match "$f: not a regular file" -- \
        forecast "$B/elnino-$f-fifo" --horizon 2 --device opencl:0
    bad "bounded-forecast-graph-$f-fifo" --timeout 10 --match "$f: not a regular file" -- \
        forecast-graph "$B/elnino-$f-fifo"
done
# over the caps: a vocabulary or model.cg over 1 GiB, a config.json over
# 16 MiB (sparse files)
model_with "$B/dates-huge-vocab" "$D" src.vocab none
truncate -s 1100M "$B/dates-huge-vocab/src.vocab"
bad bounded-translate-vocab-huge --timeout 10 --mem 1024 --stdin "$D/samples.txt" \
    --match "src.vocab: larger than 1073741824 bytes" -- translate "$B/dates-huge-vocab"
model_with "$B/dates-huge-cg" "$D" model.cg none
truncate -s 1100M "$B/dates-huge-cg/model.cg"
bad bounded-translate-cg-huge --timeout 10 --mem 1024 --stdin "$D/samples.txt" \
    --match "model.cg: larger than 1073741824 bytes" -- translate "$B/dates-huge-cg"
model_with "$B/elnino-huge-config" "$E" config.json none
truncate -s 20M "$B/elnino-huge-config/config.json"
bad bounded-forecast-config-huge --timeout 10 --mem 1024 --stdin "$CSV" \
    --match "config.json: larger than 16777216 bytes" -- forecast "$B/elnino-huge-config" --horizon 2

# ---- layers the weights do not hold: named at once (30 s and 3 GB before) ----
# with_config DIR SRC SED: a copy of model SRC whose config.json is edited by SED
with_config() {
    model_with "$1" "$2" none none
    sed -i "$3" "$1/config.json"
}
with_config "$B/dates-enc-layers" "$D" 's/"cell": "gru",/"cell": "gru", "encoder_layers": 1000000,/'
with_config "$B/dates-dec-layers" "$D" 's/"cell": "gru",/"cell": "gru", "decoder_layers": 1000000,/'
with_config "$B/elnino-layers" "$E" 's/"cell": "lstm",/"cell": "lstm", "layers": 1000000,/'
with_config "$B/elnino-layers-cg" "$E" 's/"cell": "lstm",/"cell": "lstm", "layers": 1000000,/'
"$CLGRAPH" forecast-graph "$E" > "$B/elnino-layers-cg/model.cg"
bad bounded-translate-encoder-layers --timeout 10 --mem 1024 --stdin "$D/samples.txt" \
    --match "tensor 'encoder.weight_ih_l999999' is missing" -- translate "$B/dates-enc-layers"
bad bounded-translate-decoder-layers --timeout 10 --mem 1024 --stdin "$D/samples.txt" \
    --match "tensor 'decoder.weight_ih_l999999' is missing" -- translate "$B/dates-dec-layers"
bad bounded-translate-encoder-layers-opencl --timeout 20 --stdin "$D/samples.txt" \
    --match "tensor 'encoder.weight_ih_l999999' is missing" -- translate "$B/dates-enc-layers" --device opencl:0
bad bounded-s2s-graph-layers --timeout 10 --mem 1024 --match "tensor 'encoder.weight_ih_l999999' is missing" -- \
    s2s-graph "$B/dates-enc-layers"
bad bounded-bench-layers --timeout 10 --mem 1024 --match "tensor 'decoder.weight_ih_l999999' is missing" -- \
    bench "$B/dates-dec-layers" --runs 1
bad bounded-forecast-layers --timeout 10 --mem 1024 --stdin "$CSV" \
    --match "tensor 'rnn.weight_ih_l999999' is missing" -- forecast "$B/elnino-layers" --horizon 2
bad bounded-forecast-layers-opencl --timeout 20 --stdin "$CSV" \
    --match "tensor 'rnn.weight_ih_l999999' is missing" -- forecast "$B/elnino-layers" --horizon 2 --device opencl:0
bad bounded-forecast-graph-layers --timeout 10 --mem 1024 --match "tensor 'rnn.weight_ih_l999999' is missing" -- \
    forecast-graph "$B/elnino-layers"
bad bounded-forecast-layers-model-cg --timeout 10 --mem 1024 --stdin "$CSV" \
    --match "model.cg: graph 'step' needs an input named 'h999999'" -- forecast "$B/elnino-layers-cg" --horizon 2

# ---- stdin: /dev/zero, one endless line ----
# a 64 MiB line between two good ones: held up to 16 bytes a token, so
# the memory cap (what translating takes anyway) holds; the long line
# prints an empty line in its place (it peaked at 5.9 GB for 1 GB before)
{ echo "the 1st of May 2020"; head -c 67108864 /dev/zero | tr '\0' x; echo; echo "the 2nd of June 2021"; } > "$B/long-line.txt"
{ echo "May 2020"; head -c 67108864 /dev/zero | tr '\0' x; echo; echo "June 2021"; } > "$B/long-line-short.txt"
{ echo "5 6 7"; head -c 67108864 /dev/zero | tr '\0' 7; echo; echo "8 9"; } > "$B/long-line-ids.txt"
bad bounded-translate-dev-zero --timeout 10 --mem 512 --stdin /dev/zero --match "stdin:1:1: a NUL byte" -- \
    translate "$D"
bad bounded-translate-ids-dev-zero --timeout 10 --mem 512 --stdin /dev/zero --match "stdin:1:1: a NUL byte" -- \
    translate "$D" --ids
bad bounded-translate-attention-dev-zero --timeout 10 --mem 512 --stdin /dev/zero --absent "$B/att.json" \
    --match "stdin:1:1: a NUL byte" -- translate "$D" --attention "$B/att.json"
bad bounded-translate-dev-zero-opencl --timeout 20 --stdin /dev/zero --match "stdin:1:1: a NUL byte" -- \
    translate "$D" --device opencl:0
bad bounded-translate-long-line --timeout 10 --mem 300 --stdin "$B/long-line.txt" --out-lines 3 \
    --match "stdin:2: more than 16384 bytes" -- translate "$D"
bad bounded-translate-long-line-ids --timeout 10 --mem 300 --stdin "$B/long-line-ids.txt" --out-lines 3 \
    --match "stdin:2: more than 16384 bytes" -- translate "$D" --ids
bad bounded-translate-long-line-small-max --timeout 10 --mem 300 --stdin "$B/long-line-short.txt" --out-lines 3 \
    --match "stdin:2: more than 4096 bytes" -- translate "$D" --max-input-len 10
bad bounded-translate-long-line-opencl --timeout 20 --stdin "$B/long-line.txt" --out-lines 3 \
    --match "stdin:2: more than 16384 bytes" -- translate "$D" --device opencl:0
# --crop translates its first tokens: exit 0 with one warning line
bad bounded-translate-long-line-crop --exit 0 --timeout 10 --mem 300 --stdin "$B/long-line.txt" --out-lines 3 \
    --match "stdin:2: warning: more than 16384 bytes, cropped to its first 1024 tokens" -- translate "$D" --crop
bad bounded-forecast-dev-zero --timeout 10 --mem 512 --stdin /dev/zero --match "stdin:1:1: a NUL byte" -- \
    forecast "$E" --horizon 2
bad bounded-forecast-dev-zero-opencl --timeout 20 --stdin /dev/zero --match "stdin:1:1: a NUL byte" -- \
    forecast "$E" --horizon 2 --device opencl:0
{ echo "time,sst"; printf "2000-01-01,"; head -c 2000000 /dev/zero | tr '\0' 1; echo; } > "$B/long-csv.csv"
bad bounded-forecast-long-line --timeout 10 --mem 512 --stdin "$B/long-csv.csv" \
    --match "stdin:2: a line of more than 1048576 bytes" -- forecast "$E" --horizon 2

# ---- cache files that are a FIFO or /dev/zero: ignored (a cache is
# optional), never waited on or read without end. The run goes on to
# refuse the long line (exit 1, its two good lines translated). ----
for k in fifo zero; do
    c="$B/cache-$k"
    mkdir -p "$c"
    for f in costs.txt gemm-choices.txt; do
        if [ $k = fifo ]; then mkfifo "$c/$f"; else ln -s /dev/zero "$c/$f"; fi
    done
    bad "bounded-cache-$k-auto" --timeout 30 --env "CLGRAPH_CACHE_DIR=$c" --stdin "$B/long-line.txt" --out-lines 3 \
        --match "stdin:2: more than 16384 bytes" -- translate "$D" --device auto
    bad "bounded-cache-$k-opencl" --timeout 30 --env "CLGRAPH_CACHE_DIR=$c" --stdin "$B/long-line.txt" --out-lines 3 \
        --match "stdin:2: more than 16384 bytes" -- translate "$D" --device opencl:0
done
