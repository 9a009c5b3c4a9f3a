# Files a user hands over, wrong in every way we could think of: weights
# (safetensors), .npy inputs, graph texts, and run-time inputs that do not
# fit the graph. Each must be refused in one line naming the file (and
# line:column, tensor, input or node), exit 1, on the CPU and on PoCL.
X="$SRC/models/example"
G="$X/model.cg"
WT="$X/weights.safetensors"
IN=(--input "src=$X/src.npy" --input "src_len=$X/src_len.npy")

# ---- weights: a header length, a header, or data that lies ----
st() { # st NAME HEADER_LEN_HEX HEADER_TEXT [DATA_BYTES]: a handmade file
    local f="$W/st-$1.safetensors"
    { printf "$2"; printf '%s' "$3"; head -c "${4:-0}" /dev/zero; } > "$f"
    echo "$f"
}
hdr='{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
len=$(printf '\\x%02x\\x00\\x00\\x00\\x00\\x00\\x00\\x00' ${#hdr})
weights_bad() { # the example graph with weights file $2
    bad "st-$1" --match "$2" -- run "$G" --weights "$2" "${IN[@]}"
    bad "st-$1-check" --match "$2" -- check "$G" --weights "$2"
}
weights_bad empty "$(st empty '' '')"
weights_bad short-len "$(st short-len '\x10\x00\x00' '')"
weights_bad len-past-end "$(st len-past-end '\x00\x10\x00\x00\x00\x00\x00\x00' '{}')"
weights_bad len-huge "$(st len-huge '\xff\xff\xff\xff\xff\xff\xff\x7f' '{}')"
weights_bad not-json "$(st not-json '\x08\x00\x00\x00\x00\x00\x00\x00' 'notjson!')"
weights_bad json-array "$(st json-array '\x08\x00\x00\x00\x00\x00\x00\x00' '[1,2,3]')"
weights_bad bad-dtype "$(st bad-dtype "$len" "${hdr/F32/Q99}" 8)"
weights_bad short-data "$(st short-data "$len" "$hdr" 4)"
weights_bad offsets-reversed "$(st offsets-reversed "$len" "${hdr/\[0,8\]/[8,0]}" 8)"
weights_bad offsets-wrong-size "$(st offsets-wrong-size "$len" "${hdr/\[0,8\]/[0,12]}" 12)"
weights_bad shape-negative "$(st shape-negative "$len" "${hdr/\[2\]/[-2]}" 8)"
weights_bad shape-huge "$(st shape-huge "$len" "${hdr/\[2\]/[4611686018427387904,4]}" 8)"
weights_bad no-offsets "$(st no-offsets "$len" "${hdr/,\"data_offsets\":\[0,8\]/}" 8)"
weights_bad nul-in-header "$(st nul-in-header '\x09\x00\x00\x00\x00\x00\x00\x00' '{"a\000":1}')"
# a real file cut anywhere: header, data
for cut in 4 9 100 1000 1576 3000; do
    head -c "$cut" "$WT" > "$W/st-cut-$cut.safetensors"
    weights_bad "cut-$cut" "$W/st-cut-$cut.safetensors"
done
# the right file for another model: the param and the weight named
bad st-other-model --match "src_embed.weight" -- run "$G" --weights "$SRC/models/dates/weights.safetensors" "${IN[@]}"
bad st-missing-file --match "$W/nope.safetensors" -- run "$G" --weights "$W/nope.safetensors" "${IN[@]}"

# ---- .npy inputs ----
npy() { # npy NAME HEADER_DICT [DATA_BYTES] [MAGIC]
    local f="$W/npy-$1.npy" h="$2"
    local pad=$(( (64 - (10 + ${#h} + 1) % 64) % 64 ))
    { printf "${4:-\x93NUMPY\x01\x00}"; printf "\\x$(printf %02x $(( (${#h} + pad + 1) % 256 )))\\x$(printf %02x $(( (${#h} + pad + 1) / 256 )))";
      printf '%s' "$h"; printf "%${pad}s\n" ''; head -c "${3:-0}" /dev/zero; } > "$f"
    echo "$f"
}
input_bad() { # the example graph with src=$2
    bad "npy-$1" --match "$2" -- run "$G" --weights "$WT" --input "src=$2" --input "src_len=$X/src_len.npy"
}
input_bad empty "$(npy empty '' 0 '')"
input_bad bad-magic "$(npy bad-magic "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 5), }" 40 'NUMPY\x01\x00')"
input_bad version-9 "$(npy version-9 "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 5), }" 40 '\x93NUMPY\x09\x00')"
input_bad descr-unknown "$(npy descr-unknown "{'descr': '<q9', 'fortran_order': False, 'shape': (2, 5), }" 40)"
input_bad descr-object "$(npy descr-object "{'descr': '|O', 'fortran_order': False, 'shape': (2, 5), }" 80)"
input_bad fortran "$(npy fortran "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 5), }" 40)"
input_bad short-data "$(npy short-data "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 5), }" 12)"
input_bad shape-negative "$(npy shape-negative "{'descr': '<i4', 'fortran_order': False, 'shape': (-2, 5), }" 40)"
input_bad shape-huge "$(npy shape-huge "{'descr': '<i4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }" 40)"
input_bad shape-text "$(npy shape-text "{'descr': '<i4', 'fortran_order': False, 'shape': (two, 5), }" 40)"
input_bad no-shape "$(npy no-shape "{'descr': '<i4', 'fortran_order': False, }" 40)"
input_bad header-garbage "$(npy header-garbage "this is not a dict" 40)"
# a well-formed file of the wrong dtype or rank: the input and both types named
bad npy-wrong-dtype --match "input 'src' is f32[2, 5]" -- run "$G" --weights "$WT" \
    --input "src=$(npy wrong-dtype "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 5), }" 40)" --input "src_len=$X/src_len.npy"
bad npy-wrong-rank --match "input 'src' is i32[10]" -- run "$G" --weights "$WT" \
    --input "src=$(npy wrong-rank "{'descr': '<i4', 'fortran_order': False, 'shape': (10,), }" 40)" --input "src_len=$X/src_len.npy"
input_bad too-many-dims "$(npy too-many-dims "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1, 2), }" 8)"
for cut in 5 9 30 70; do
    head -c "$cut" "$X/src.npy" > "$W/npy-cut-$cut.npy"
    input_bad "cut-$cut" "$W/npy-cut-$cut.npy"
done

# ---- run-time inputs that do not fit ----
for dev in cpu opencl:0; do
    bad "run-$dev-missing-input" --match "src_len" -- run "$G" --weights "$WT" --input "src=$X/src.npy" --device "$dev"
    bad "run-$dev-unknown-input" --match "bogus" -- run "$G" --weights "$WT" "${IN[@]}" --input "bogus=$X/src.npy" --device "$dev"
    bad "run-$dev-input-twice" --match "src" -- run "$G" --weights "$WT" "${IN[@]}" --input "src=$X/src.npy" --device "$dev"
    bad "run-$dev-swapped" -- run "$G" --weights "$WT" --input "src=$X/src_len.npy" --input "src_len=$X/src.npy" --device "$dev"
    bad "run-$dev-unknown-graph" --match "nograph" -- run "$G" --weights "$WT" "${IN[@]}" --graph nograph --device "$dev"
    bad "run-$dev-place-bad" --exit 2 -- run "$G" --weights "$WT" "${IN[@]}" --device "$dev" --place 'enc_rnn'
done
bad run-unknown-device --match "opencl:9" -- run "$G" --weights "$WT" "${IN[@]}" --device opencl:9
bad run-no-weights --match "weights" -- run "$G" "${IN[@]}"
# token ids past the embedding: named at run time (node, input, value)
ids=$(npy ids-big "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 7), }" 0)
for i in $(seq 21); do printf '\x63\x00\x00\x00'; done >> "$ids"
for dev in cpu opencl:0; do
    bad "run-$dev-id-past-vocab" --match "holds 99" -- run "$G" --weights "$WT" --input "src=$ids" --input "src_len=$X/src_len.npy" --device "$dev"
done

# ---- graph texts ----
graph_bad() { # graph_bad NAME TEXT [syntax]: `check` (and `fmt` for a syntax error) must name FILE:LINE:COL
    local f="$W/g-$1.cg"
    printf '%b' "$2" > "$f"
    bad "graph-$1-check" --match "$f:" -- check "$f"
    [ "${3:-}" = syntax ] && bad "graph-$1-fmt" --match "$f:" -- fmt "$f"
    return 0
}
HEAD='graph g {\n  input x: f32[B, 4]\n'
graph_bad empty '' syntax
graph_bad no-brace 'graph g\n' syntax
graph_bad unclosed "${HEAD}  y = tanh(x)\n  output y\n" syntax
graph_bad unknown-op "${HEAD}  y = frobnicate(x)\n  output y\n}\n"
graph_bad undefined-value "${HEAD}  y = tanh(z)\n  output y\n}\n"
graph_bad undefined-output "${HEAD}  y = tanh(x)\n  output z\n}\n"
graph_bad defined-twice "${HEAD}  y = tanh(x)\n  y = neg(x)\n  output y\n}\n"
graph_bad wrong-arity "${HEAD}  y = add(x)\n  output y\n}\n"
graph_bad bad-dtype 'graph g {\n  input x: q7[B, 4]\n  y = tanh(x)\n  output y\n}\n' syntax
graph_bad bad-dim 'graph g {\n  input x: f32[B, -4]\n  y = tanh(x)\n  output y\n}\n' syntax
graph_bad too-many-dims 'graph g {\n  input x: f32[1,1,1,1,1,1,1,1,1]\n  y = tanh(x)\n  output y\n}\n'
graph_bad huge-dims 'graph g {\n  input x: f32[1099511627776, 1099511627776]\n  y = tanh(x)\n  output y\n}\n'
graph_bad shape-mismatch "${HEAD}  input w: f32[5, 3]\n  y = matmul(x, w)\n  output y\n}\n"
graph_bad attr-unknown "${HEAD}  y = softmax(x) {bogus: 1}\n  output y\n}\n"
graph_bad attr-wrong-type "${HEAD}  y = softmax(x) {axis: \"last\"}\n  output y\n}\n"
graph_bad attr-out-of-range "${HEAD}  y = softmax(x) {axis: 7}\n  output y\n}\n"
graph_bad attr-unclosed "${HEAD}  y = softmax(x) {axis: 1\n  output y\n}\n" syntax
graph_bad transpose-perm "${HEAD}  y = transpose(x) {perm: [0, 0]}\n  output y\n}\n"
graph_bad concat-axis "${HEAD}  y = concat(x, x) {axis: 5}\n  output y\n}\n"
graph_bad cast-to "${HEAD}  y = cast(x) {to: \"f99\"}\n  output y\n}\n"
graph_bad no-output "${HEAD}  y = tanh(x)\n}\n"
graph_bad nul-byte "${HEAD}  y = tanh(x)\0\n  output y\n}\n" syntax
graph_bad control-bytes "${HEAD}  y\x1b[31m = tanh(x)\n  output y\n}\n" syntax
graph_bad unterminated-string "${HEAD}  param w: f32[4] = \"w\n  output x\n}\n" syntax
graph_bad cycle "${HEAD}  a = add(x, b)\n  b = tanh(a)\n  output b\n}\n"
# shapes that only a binding shows: named when the plan is made for it
printf 'graph g {\n  input x: f32[B, 4]\n  y = reshape(x) {shape: [3, 3]}\n  output y\n}\n' > "$W/g-reshape.cg"
x24=$(npy x24 "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }" 32)
for dev in cpu opencl:0; do
    bad "graph-reshape-run-$dev" --match "g-reshape.cg:3:" -- run "$W/g-reshape.cg" --input "x=$x24" --device "$dev"
    bad "graph-reshape-plan-$dev" --match "g-reshape.cg:3:" -- plan "$W/g-reshape.cg" --bind B=5 --device "$dev"
    bad "graph-param-unbound-$dev" --match "w" -- run "$SRC/models/example/model.cg" "${IN[@]}" --device "$dev"
done
