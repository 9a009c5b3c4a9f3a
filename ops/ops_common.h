/* Helpers shared by the built-in operators: error messages, shape helpers,
 * conformance cases, and the declarations of every built-in op definition.
 * The OpenCL host-side helpers are in ops_cl.h. */
#ifndef CG_OPS_COMMON_H
#define CG_OPS_COMMON_H

#include "clgraph/plugin.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if defined(__GNUC__)
#define CG_OPS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CG_OPS_PRINTF(a, b)
#endif

/* Writes a message into call->err and returns CG_OP_ERROR. The host adds the
 * node's name and position in front of it. */
static inline cg_op_status CG_OPS_PRINTF(2, 3) cg_op_fail(const cg_op_call *call, const char *fmt, ...) {
    if (call->err && call->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(call->err, call->err_size, fmt, ap);
        va_end(ap);
    }
    return CG_OP_ERROR;
}

/* x^3 as pow by a constant 3 computes it on the CPU (the elementwise op,
 * ew_fused's pow and cube): exact in double but for its last rounding, then
 * rounded to float once more (rare double-rounding slips, as powf's own
 * last-bit ones); x^2 is plain x * x. */
static inline float cg_ops_cube(float x) {
    const double v = x;
    return (float)(v * v * v);
}

/* v clamped into the int32 range: how a bound or value lands in an i32
 * kernel argument or check word. */
static inline int32_t cg_ops_clamp_i32(int64_t v) {
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

/* An invalid value in input `input` (`name`): `value` at element `pos`,
 * outside [lo, hi]. The wording is the one the host gives an OpenCL
 * kernel's check words (base/check_msg.h), so every device says the same. */
cg_op_status cg_op_fail_range(const cg_op_call *call, int input, const char *name, int64_t value, int64_t pos,
                              int64_t lo, int64_t hi);

/* The CPU kernels' check of n i32 row indices (input `input`, `name`): each
 * in [0, rows), else cg_op_fail_range on the first that is not. */
cg_op_status cg_ops_check_rows(const cg_op_call *call, int input, const char *name, const int32_t *ids, int64_t n,
                               int64_t rows);

/* Number of elements of a (concrete) descriptor. */
static inline int64_t cg_desc_numel(const cg_tensor_desc *d) {
    int64_t n = 1;
    for (int i = 0; i < d->ndim; i++) n *= d->dims[i];
    return n;
}

/* Splits a concrete descriptor around `axis`: *outer is the product of the
 * dims before it and *inner of the dims after it (1 when there are none),
 * so the tensor is [outer, dims[axis], inner]. */
static inline void cg_desc_split(const cg_tensor_desc *d, int axis, int64_t *outer, int64_t *inner) {
    *outer = *inner = 1;
    for (int i = 0; i < axis; i++) *outer *= d->dims[i];
    for (int i = axis + 1; i < d->ndim; i++) *inner *= d->dims[i];
}

/* Formats a dims list "[2, B, ?]" for messages (symbols shown as s<k>). */
void cg_ops_format_dims(char *buf, size_t size, const cg_tensor_desc *d);

/* Name of a dtype for messages: "f32", "i64", ... or "unknown dtype". */
static inline const char *cg_ops_dtype_name(cg_op_dtype t) {
    static const char *const names[] = {
        "unknown dtype", "f32",    "i32",    "f16", "bf16", "i8",       "u8",         "i64",
        "bool",          "i16",    "u16",    "u32", "u64",  "f8e4m3fn", "f8e4m3fnuz", "f8e5m2",
        "f8e5m2fnuz",    "f8e8m0", "f4e2m1", "i4",  "u4",   "i2",       "u2"};
    return (int)t >= 0 && (int)t < (int)(sizeof names / sizeof names[0]) ? names[t] : "unknown dtype";
}

/* Logistic function 1 / (1 + exp(-x)) that never evaluates exp of a large
 * positive number, so large |x| saturates to 0 or 1 without inf / inf = NaN
 * (as cg_sigmoid in ops/cl/elementwise.cl and ops/cl/rnn.cl). */
static inline float cg_ops_sigmoid(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

/* Normalises a possibly negative axis against ndim; -1 if out of range. */
static inline int cg_norm_axis(int64_t axis, int ndim) {
    if (axis < 0) axis += ndim;
    return (axis >= 0 && axis < ndim) ? (int)axis : -1;
}

/* Checks input i has dtype `dt` and (if ndim >= 0) exactly `ndim` dims. */
cg_op_status cg_expect_input(const cg_op_call *call, int i, cg_op_dtype dt, int ndim);

/* NumPy broadcasting of a and b into out (dims only); fails on mismatch. */
cg_op_status cg_broadcast_shapes(const cg_op_call *call, const cg_tensor_desc *a, const cg_tensor_desc *b,
                                 cg_tensor_desc *out);

/* Name of input i for messages, from the op's input_names if given. */
const char *cg_input_name(const cg_op_def *def, int i);

/* Checks that a tensor is f32 with `ndim` dims compatible with `dims`
 * (entries may be symbolic or CG_DIM_UNKNOWN). `label` names it in messages,
 * e.g. "input 'w_hh'" or "weight_hh_l1_reverse". */
cg_op_status cg_ops_expect_f32(const cg_op_call *call, const char *label, const cg_tensor_desc *d, int ndim,
                               const int64_t *dims);

/* C[m, n] = A[m, k] . W[n, k]^T (W row-major like a PyTorch weight); a GEMV
 * when m == 1. Every element of C is written, also when k == 0. */
void cg_ops_project(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *w, int64_t ldw, float *c,
                    int64_t ldc);

/* cg_ops_project with W of dtype wt: f32, bf16 / f16 weights widened in
 * registers (half the bytes read; products and sums in f32), or int8 with
 * one f32 scale per row in w_scale and optionally its row sums w_sums (a
 * quarter of the bytes; A quantized per row on the fly, exact integer sums:
 * cg_cpu_gemm_nt_q8), which needs
 * cg_ops_project_scratch(wt, m, n, k) bytes of scratch (else unused, NULL ok).
 * bias: NULL, or [n] added to each row of C (one f32 addition, as a pass
 * after the product would; int8 and f32 products of several rows add it
 * as each tile is stored). */
void cg_ops_project_w(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const void *w, cg_op_dtype wt,
                      int64_t ldw, const float *w_scale, const int32_t *w_sums, const float *bias, void *scratch,
                      float *c, int64_t ldc);
size_t cg_ops_project_scratch(cg_op_dtype wt, int64_t m, int64_t n, int64_t k);

/* Per-node state of a CPU kernel with int8 weights (ABI 1.1 create): each
 * int8 weight input that is a parameter gets its row sums made once
 * (cg_cpu_q8_row_sums), so no product makes them again. w: the weight
 * inputs (n_w <= 2). The sums of weight slot i (NULL: none, e.g. a weight
 * computed at run time) come from cg_ops_q8_sums(args, i). */
cg_op_status cg_ops_q8_state_create(const cg_kernel_args *a, const int *w, int n_w, void **state, size_t *bytes);
void cg_ops_q8_state_destroy(void *state);
const int32_t *cg_ops_q8_sums(const cg_kernel_args *a, int i);

/* A weight matrix may be stored f32, bf16 or f16 (the 16-bit ones read by
 * the CPU kernels as they are, elsewhere cast to f32 by a decomposition). */
static inline int cg_ops_weight_dtype(cg_op_dtype t) {
    return t == CG_OP_F32 || t == (cg_op_dtype)CG_BF16 || t == (cg_op_dtype)CG_F16;
}

/* cg_ops_expect_f32 for a weight matrix: f32, bf16 or f16. */
cg_op_status cg_ops_expect_weight(const cg_op_call *call, const char *label, const cg_tensor_desc *d, int ndim,
                                  const int64_t *dims);

/* int8 weight matrices (linear, gru_cell, lstm_cell, gru, lstm): an int8
 * weight's f32 scales, one per row, come after the op's other inputs, in
 * the order of their weights. cg_ops_expect_qweight checks a weight that
 * may also be int8 and, for int8, its scales `s` ([rows], f32; NULL: not
 * given). */
cg_op_status cg_ops_expect_qweight(const cg_op_call *call, const char *label, const cg_tensor_desc *d,
                                   const int64_t *dims, const cg_tensor_desc *s, const char *s_label);

/* Conformance: input w of case c becomes an int8 matrix (q in [-127, 127])
 * and its f32 scales, one per row in [0.001, 0.004] (so that w stays
 * within +-0.5), the case's next input. */
void cg_ops_case_q8_weight(cg_conform_case *c, int w);

/* One GRU row (rnn_cell.c): gi = W_ih x, gh = W_hh h without biases, gates
 * r, z, n. h_out may be h. */
void cg_rnn_gru_row(int64_t hidden, const float *gi, const float *gh, const float *b_ih, const float *b_hh,
                    const float *h, float *h_out);
/* One LSTM row (rnn_cell.c): gates i, f, g, o. c_out may be c. */
void cg_rnn_lstm_row(int64_t hidden, const float *gi, const float *gh, const float *b_ih, const float *b_hh,
                     const float *c, float *h_out, float *c_out);

/* A compact conformance case: up to 4 inputs of up to 4 dims, each with
 * its dtype and value range [lo, hi], and the attributes (or NULL). */
typedef struct cg_ops_case_input {
    cg_op_dtype dt;
    int nd;
    int64_t d[4];
    double lo, hi;
} cg_ops_case_input;

typedef struct cg_ops_case {
    int n_in;
    cg_ops_case_input in[4];
    const char *attrs;
} cg_ops_case;

/* Fills *c from t with n_out outputs; everything else in *c is zeroed but
 * its struct_size. */
void cg_ops_fill_case(const cg_ops_case *t, int n_out, cg_conform_case *c);

/* Makes the valid case in *c an error case (expect_error): input `input`'s
 * values in [lo, hi], outside the op's domain. Returns 1. */
int32_t cg_ops_error_case(cg_conform_case *c, int input, double lo, double hi);

/* Inference of topk-like ops (ops/reduce.c): f32 x [..., N], attribute k
 * (attrs[0], required, 0 <= k <= N); outputs f32 and i32 [..., k]. `op`
 * names the op in messages. */
cg_op_status cg_ops_topk_infer(cg_op_call *call, const char *op);

/* Decomposition emitter: once a call fails, later ones do nothing and st
 * keeps the failure, so a decomposition is written straight through and
 * checks st once at the end. */
typedef struct cg_ops_emitter {
    cg_decomp *d;
    const cg_op_call *call;
    cg_op_status st;
} cg_ops_emitter;
int32_t cg_ops_emit_input(cg_ops_emitter *e, int32_t i);
/* Adds node `op` on the non-negative ids among a, b, c, with one output. */
int32_t cg_ops_emit(cg_ops_emitter *e, const char *op, const char *attrs, int32_t a, int32_t b, int32_t c);
void cg_ops_emit_output(cg_ops_emitter *e, int32_t i, int32_t v);

/* The decomposition of an op (linear, gru_cell, lstm_cell) whose weights
 * are narrow (bf16, f16, int8) on a device without a kernel for them: the
 * weights widened to f32 (scale[i] the input of weight w[i]'s scales, -1
 * for none), then the same op on f32 weights without the scale inputs. The
 * scheduler runs the widening once per plan (it reads only parameters), so
 * the op's f32 kernel runs each step; with no f32 kernel either (conform's
 * reference) that node decomposes in turn. n_w <= 2. */
cg_op_status cg_ops_decompose_widened(cg_decomp *d, const cg_op_call *call, const char *op, const int *w,
                                      const int *scale, int n_w, int n_keep);

/* ---- every built-in op definition (one or more per file in ops/) ---- */
/* (a table, one source file per line: clang-format would reflow it) */
// clang-format off
#define CG_BUILTIN_OPS(X)                                                    \
    /* elementwise.c */                                                     \
    X(add) X(sub) X(mul) X(div) X(pow) X(maximum) X(minimum)               \
    X(neg) X(tanh) X(sigmoid) X(exp) X(log) X(sqrt) X(relu) X(affine)       \
    X(cast)                                                                 \
    /* compare.c */                                                         \
    X(equal) X(less) X(less_equal) X(greater) X(greater_equal)              \
    X(logical_and) X(logical_or) X(logical_xor) X(logical_not) X(where)     \
    /* math.c */                                                            \
    X(abs) X(reciprocal) X(floor) X(ceil) X(round) X(sign) X(sin) X(cos)    \
    X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(asinh) X(acosh)       \
    X(atanh) X(erf) X(softplus) X(softsign) X(elu) X(leaky_relu)           \
    X(hard_sigmoid) X(clip)                                                 \
    /* mod.c, bitwise.c */                                                  \
    X(mod) X(bit_shift) X(bitwise_and) X(bitwise_or) X(bitwise_xor)         \
    X(bitwise_not)                                                          \
    /* matmul.c */                                                          \
    X(matmul) X(linear)                                                     \
    /* softmax.c */                                                         \
    X(softmax) X(log_softmax) X(length_mask)                                \
    /* layer_norm.c */                                                      \
    X(layer_norm)                                                           \
    /* reduce.c */                                                          \
    X(reduce_sum) X(reduce_mean) X(reduce_max) X(reduce_prod) X(argmax)     \
    X(topk)                                                                 \
    /* select.c */                                                          \
    X(log_softmax_topk)                                                     \
    /* shape.c */                                                           \
    X(concat) X(slice) X(reshape) X(transpose)                              \
    /* trilu.c, expand.c, arange.c, cumsum.c, matmul_integer.c */            \
    X(trilu) X(expand) X(arange) X(cumsum) X(cumprod) X(matmul_integer) X(dynamic_quantize) X(rms_norm)     \
    /* dim_values.c */                                                      \
    X(dim_values)                                                           \
    /* gather.c, gather_concat.c */                                         \
    X(embedding) X(gather_rows) X(gather_concat) X(gather_elements) X(scatter_elements)      \
    /* gather_nd.c, scatter_nd.c, pad.c, resize.c */                        \
    X(gather_nd) X(scatter_nd) X(pad) X(resize)                             \
    /* rnn_cell.c */                                                        \
    X(gru_cell) X(lstm_cell)                                                \
    /* rnn_seq.c */                                                         \
    X(gru) X(lstm)                                                          \
    /* attention.c */                                                       \
    X(attn_score) X(attn_context)                                           \
    /* local_attn.c */                                                      \
    X(window_mask) X(local_gaussian)                                        \
    /* grid_sample.c, det.c, roi_align.c */                                 \
    X(grid_sample) X(det) X(roi_align)                                      \
    /* conv.c, conv_transpose.c, pool.c */                                  \
    X(conv) X(conv_transpose) X(max_pool) X(avg_pool) X(lp_pool)          \
    /* bitcast.c, linear_attention.c, deform_conv.c */                      \
    X(bitcast) X(linear_attention) X(deform_conv)                           \
    /* ew_fused.c, sdpa.c */                                                \
    X(ew_fused) X(sdpa)
// clang-format on

#define CG_DECLARE_OP(n) extern const cg_op_def cg_op_##n;
CG_BUILTIN_OPS(CG_DECLARE_OP)
#undef CG_DECLARE_OP

#endif
