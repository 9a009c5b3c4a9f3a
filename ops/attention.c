/* Attention: attn_score (the score of every key for a query, by kind) and
 * attn_context (the weighted sum of the values). The softmax and the masking
 * of padded keys are separate operators (softmax.c). */
#include "ops_cl.h"

#include "attention.cl.h"
#include "cpu/cpu_blas.h"
#include "cpu/cpu_math.h"
#include "cpu/cpu_pool.h"

#include <math.h>
#include <string.h>

/* Floor of the cosine score's denominator. */
#define COSINE_EPS 1e-8f

typedef enum score_kind { ADDITIVE, DOT, SCALED_DOT, GENERAL, COSINE, N_KINDS } score_kind;

static const struct {
    const char *name;
    int n_inputs;
    const char *inputs; /* for messages */
} kinds[N_KINDS] = {
    [ADDITIVE] = {"additive", 5, "q, keys, W_q, b_q, v"},
    [DOT] = {"dot", 2, "q, keys"},
    [SCALED_DOT] = {"scaled_dot", 2, "q, keys"},
    [GENERAL] = {"general", 3, "q, keys, W"},
    [COSINE] = {"cosine", 2, "q, keys"},
};

static score_kind kind_of(const cg_op_call *call) {
    for (int k = 0; k < N_KINDS; k++)
        if (strcmp(call->attrs[0].s, kinds[k].name) == 0) return (score_kind)k;
    return N_KINDS;
}

/* The optional last input `rows` (i32 [B]) names, for each batch row, the
 * row of keys (values) [N, S, K] it attends to: a beam's k rows of one
 * sentence share the sentence's keys instead of holding k copies. Without
 * it row b reads keys[b] (N == B). */

/* The keys row of batch row b. */
static inline int64_t key_row(const int32_t *rows, int64_t b) { return rows ? rows[b] : b; }

/* Checks input i, the optional rows, against q's batch size (input 0). */
static cg_op_status expect_rows(const cg_op_call *call, int i) {
    const cg_tensor_desc *r = &call->inputs[i], *q = &call->inputs[0];
    if (r->dtype == CG_OP_I32 && r->ndim == 1 && cg_dim_compatible(r->dims[0], q->dims[0])) return CG_OP_OK;
    char sr[128], sq[128];
    cg_ops_format_dims(sr, sizeof sr, r);
    cg_ops_format_dims(sq, sizeof sq, q);
    return cg_op_fail(call, "input %d (rows) must be i32 [B] with B from input 0 %s, got %s %s", i, sq,
                      cg_ops_dtype_name(r->dtype), sr);
}

/* Dot products of every key with one vector per batch row:
 * e[b, s] = alpha * keys[row(b), s, :] . vec[b, :]. */
static void dot_keys(int64_t B, int64_t S, int64_t K, float alpha, const float *keys, const int32_t *rows,
                     const float *vec, float *e) {
    if (K == 0) {
        memset(e, 0, sizeof(float) * (size_t)(B * S));
        return;
    }
    for (int64_t b = 0; b < B; b++)
        cg_cpu_sgemv(0, S, K, alpha, keys + key_row(rows, b) * S * K, K, vec + b * K, 0.0f, e + b * S);
}

/* ---- attn_score ---- */

static cg_op_status attn_score_infer(cg_op_call *call) {
    score_kind kind = kind_of(call);
    if (kind == N_KINDS)
        return cg_op_fail(call,
                          "unknown attention kind '%s' (expected additive, dot, "
                          "scaled_dot, general or cosine)",
                          call->attrs[0].s);
    const int n_kind = kinds[kind].n_inputs, has_rows = call->n_inputs == n_kind + 1;
    if (call->n_inputs != n_kind && !has_rows)
        return cg_op_fail(call, "kind '%s' takes %d inputs (%s), or %d with rows, got %d", kinds[kind].name, n_kind,
                          kinds[kind].inputs, n_kind + 1, call->n_inputs);
    const cg_tensor_desc *q = &call->inputs[0], *keys = &call->inputs[1];
    const int64_t any[3] = {CG_DIM_UNKNOWN, CG_DIM_UNKNOWN, CG_DIM_UNKNOWN};
    if (cg_ops_expect_f32(call, "input 'q'", q, 2, any)) return CG_OP_ERROR;
    const int64_t B = q->dims[0], H = q->dims[1];
    const int64_t want_keys[3] = {has_rows ? CG_DIM_UNKNOWN : B, CG_DIM_UNKNOWN, CG_DIM_UNKNOWN};
    if (cg_ops_expect_f32(call, "input 'keys'", keys, 3, want_keys)) return CG_OP_ERROR;
    if (has_rows && expect_rows(call, n_kind)) return CG_OP_ERROR;
    const int64_t K = keys->dims[2]; /* A for additive */
    switch (kind) {
    case ADDITIVE: {
        const int64_t w_q[2] = {K, H}, b_q[1] = {K}, v[2] = {1, K};
        if (cg_ops_expect_f32(call, "input 'W_q'", &call->inputs[2], 2, w_q) ||
            cg_ops_expect_f32(call, "input 'b_q'", &call->inputs[3], 1, b_q) ||
            cg_ops_expect_f32(call, "input 'v'", &call->inputs[4], 2, v))
            return CG_OP_ERROR;
        break;
    }
    case GENERAL: {
        const int64_t w[2] = {K, H};
        if (cg_ops_expect_f32(call, "input 'W'", &call->inputs[2], 2, w)) return CG_OP_ERROR;
        break;
    }
    default:
        if (!cg_dim_compatible(K, H)) {
            char sq[128], sk[128];
            cg_ops_format_dims(sq, sizeof sq, q);
            cg_ops_format_dims(sk, sizeof sk, keys);
            return cg_op_fail(call, "kind '%s' needs keys as wide as q (K == H), got q %s and keys %s",
                              kinds[kind].name, sq, sk);
        }
        break;
    }
    cg_tensor_desc *o = &call->outputs[0];
    memset(o, 0, sizeof *o);
    o->dtype = CG_OP_F32;
    o->ndim = 2;
    o->dims[0] = cg_dim_unify(B, has_rows ? call->inputs[n_kind].dims[0] : keys->dims[0]);
    o->dims[1] = keys->dims[1];
    return CG_OP_OK;
}

/* The rows input of a call (NULL without one). */
static const void *rows_of(const cg_kernel_args *a, int n_plain) {
    return a->call->n_inputs > n_plain ? a->in[n_plain] : NULL;
}

/* additive: the projected query W_q q + b_q [B, A]; general: W q [B, K]. */
static size_t attn_score_workspace(const cg_op_call *call) {
    score_kind kind = kind_of(call);
    if (kind != ADDITIVE && kind != GENERAL) return 0;
    return sizeof(float) * (size_t)(call->inputs[0].dims[0] * call->inputs[1].dims[2]);
}

/* Additive scores of rows [begin, end) of the B * S (query, key) pairs. */
typedef struct additive_rows {
    const float *qp, *keys, *v;
    const int32_t *rows;
    float *e;
    int64_t S, A;
} additive_rows;

static void additive_rows_run(void *p, size_t begin, size_t end) {
    const additive_rows *c = p;
    for (size_t r = begin; r < end; r++) {
        const int64_t b = (int64_t)r / c->S, s = (int64_t)r - b * c->S;
        const float *key = c->keys + (key_row(c->rows, b) * c->S + s) * c->A;
        c->e[r] = cg_cpu_tanh_dot(c->qp + b * c->A, key, c->v, (size_t)c->A);
    }
}

static cg_op_status attn_score_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const int64_t B = call->inputs[0].dims[0], H = call->inputs[0].dims[1];
    const int64_t S = call->inputs[1].dims[1], K = call->inputs[1].dims[2];
    const float *q = a->in[0], *keys = a->in[1];
    float *e = a->out[0];
    const score_kind kind = kind_of(call);
    if (kind == N_KINDS) return cg_op_fail(call, "unknown attention kind '%s'", call->attrs[0].s);
    const int32_t *rows = rows_of(a, kinds[kind].n_inputs);
    if (rows && cg_ops_check_rows(call, kinds[kind].n_inputs, "rows", rows, B, call->inputs[1].dims[0]))
        return CG_OP_ERROR;
    switch (kind) {
    case ADDITIVE: {
        const int64_t A = K;
        const float *b_q = a->in[3], *v = a->in[4];
        float *qp = a->workspace;
        cg_ops_project(B, A, H, q, H, a->in[2], H, qp, A);
        for (int64_t b = 0; b < B; b++)
            for (int64_t i = 0; i < A; i++) qp[b * A + i] += b_q[i];
        additive_rows ctx = {qp, keys, v, rows, e, S, A};
        /* Chunks of at least ~8K tanh keep the hand-off cost small. */
        const size_t grain = (size_t)(A > 0 && A < 8192 ? 8192 / A : 1);
        cg_cpu_parallel_for((size_t)(B * S), grain, additive_rows_run, &ctx);
        break;
    }
    case DOT: dot_keys(B, S, K, 1.0f, keys, rows, q, e); break;
    case SCALED_DOT: dot_keys(B, S, K, (float)(1.0 / sqrt((double)H)), keys, rows, q, e); break;
    case GENERAL: {
        float *wq = a->workspace;
        cg_ops_project(B, K, H, q, H, a->in[2], H, wq, K);
        dot_keys(B, S, K, 1.0f, keys, rows, wq, e);
        break;
    }
    case COSINE:
        dot_keys(B, S, K, 1.0f, keys, rows, q, e);
        for (int64_t b = 0; b < B; b++) {
            float nq = 0.0f;
            for (int64_t i = 0; i < H; i++) nq += q[b * H + i] * q[b * H + i];
            nq = sqrtf(nq);
            for (int64_t s = 0; s < S; s++) {
                const float *h = keys + (key_row(rows, b) * S + s) * K;
                float nk = 0.0f;
                for (int64_t i = 0; i < K; i++) nk += h[i] * h[i];
                float den = nq * sqrtf(nk);
                e[b * S + s] /= den > COSINE_EPS ? den : COSINE_EPS;
            }
        }
        break;
    case N_KINDS: return cg_op_fail(call, "unknown attention kind '%s'", call->attrs[0].s);
    }
    return CG_OP_OK;
}

/* ==== OpenCL (attention.cl) ==== */

/* Work-group size the attention kernels start from: at most 128 work-items
 * (a power of two within the device's limit); attn_kernel shrinks it to
 * what the kernel built for it takes. */
static int64_t attn_wg(const cg_kernel_args *a) { return (int64_t)cg_ops_cl_work_group(a, NULL, 128, 1); }

/* Smallest power of two >= n (1 for n <= 1), at most cap. */
static int64_t pow2_at_least(int64_t n, int64_t cap) {
    int64_t p = 1;
    while (p < n && p < cap) p *= 2;
    return p;
}

/* Kernel `name` built for a TX x TY work-group, TY (then TX) halved until
 * the kernel's own limits on the device (its work-group size, its local
 * arrays) hold; NULL with the message on a build failure or when not even
 * 1 x 1 runs. */
static cl_kernel attn_kernel(const cg_kernel_args *a, const char *name, int64_t *tx, int64_t *ty) {
    for (;;) {
        char opts[64];
        snprintf(opts, sizeof opts, "-DTX=%lld -DTY=%lld", (long long)*tx, (long long)*ty);
        cl_kernel k = cg_host_cl_kernel(a, cg_cl_attention, opts, name);
        if (!k) return NULL;
        const size_t local[2] = {(size_t)*tx, (size_t)*ty};
        if (cg_ops_cl_group_fits(a, k, 2, local, 0)) return k;
        if (*ty > 1) *ty /= 2;
        else if (*tx > 1) *tx /= 2;
        else {
            cg_op_fail(a->call, "the device runs no work-group of %s", name);
            return NULL;
        }
    }
}

/* Sets kernel k's n arguments and launches it over global (rounded up to
 * the TX x TY work-group). */
static cg_op_status attn_launch(const cg_kernel_args *a, cl_kernel k, const char *name, int64_t tx, int64_t ty,
                                const size_t global[2], int n, const cg_ops_cl_arg_value *args) {
    if (cg_ops_cl_args(a, k, name, 0, n, args)) return CG_OP_ERROR;
    const size_t local[2] = {(size_t)tx, (size_t)ty};
    return cg_ops_cl_launch(a, k, name, 2, global, local);
}

/* additive / general: one SGEMM for the query's projection into the
 * workspace; then one kernel over the B*S rows of keys, TX work-items per
 * row reducing over its K columns. */
static cg_op_status attn_score_cl(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const int64_t B = call->inputs[0].dims[0], H = call->inputs[0].dims[1];
    const int64_t S = call->inputs[1].dims[1], K = call->inputs[1].dims[2];
    const score_kind kind = kind_of(call);
    if (kind == N_KINDS) return cg_op_fail(call, "unknown attention kind '%s'", call->attrs[0].s);
    const int ri = kinds[kind].n_inputs; /* rows, when given */
    if (call->n_inputs > ri && cg_ops_cl_check_range(a, ri, B, 0, call->inputs[1].dims[0] - 1)) return CG_OP_ERROR;
    if (B * S == 0) return CG_OP_OK;
    if (B > INT32_MAX || S > INT32_MAX || K > INT32_MAX)
        return cg_op_fail(call,
                          "sizes B = %lld, S = %lld, K = %lld are too large for the "
                          "OpenCL kernel",
                          (long long)B, (long long)S, (long long)K);
    cl_mem vec = (cl_mem)a->in[0]; /* q for dot, scaled_dot, cosine */
    cl_int has_vec = H > 0;
    if (kind == ADDITIVE || kind == GENERAL) {
        vec = a->workspace;
        /* qp [B, K] = q W^T (W is [K, H]); zero (has_vec 0) when H == 0. */
        if (has_vec && K > 0 &&
            cg_host_cl_sgemm(a, 0, 1, B, K, H, 1.0f, (void *)a->in[0], 0, H, (void *)a->in[2], 0, H, 0.0f, a->workspace,
                             0, K))
            return CG_OP_ERROR;
    }
    const int64_t wg = attn_wg(a);
    int64_t tx = pow2_at_least(K, wg > 64 ? 64 : wg), ty = wg / tx;
    cl_kernel kern = attn_kernel(a, "attn_score_rows", &tx, &ty);
    if (!kern) return CG_OP_ERROR;
    const cl_int b32 = (cl_int)B, s32 = (cl_int)S, k32 = (cl_int)K, kind32 = (cl_int)kind;
    const cl_float alpha = kind == SCALED_DOT ? (float)(1.0 / sqrt((double)H)) : 1.0f;
    const cl_long vec_off = 0;
    const cl_mem keys = (cl_mem)a->in[1], e = a->out[0];
    if (!vec) { /* K == 0: no workspace, nothing is read */
        vec = keys;
        has_vec = 0;
    }
    /* b_q and v exist for additive only; other kinds bind keys there (unread),
     * as for rows when there are none. */
    const cl_mem b_q = kind == ADDITIVE ? (cl_mem)a->in[3] : keys;
    const cl_mem v = kind == ADDITIVE ? (cl_mem)a->in[4] : keys;
    const cl_int has_rows = call->n_inputs > kinds[kind].n_inputs;
    const cl_mem rows = has_rows ? (cl_mem)a->in[kinds[kind].n_inputs] : keys;
    const cl_long n_keys = call->inputs[1].dims[0];
    const cg_ops_cl_arg_value args[] = {
        CG_OPS_CL_ARG(b32),   CG_OPS_CL_ARG(s32),  CG_OPS_CL_ARG(k32),  CG_OPS_CL_ARG(kind32),   CG_OPS_CL_ARG(has_vec),
        CG_OPS_CL_ARG(alpha), CG_OPS_CL_ARG(keys), CG_OPS_CL_ARG(vec),  CG_OPS_CL_ARG(vec_off),  CG_OPS_CL_ARG(b_q),
        CG_OPS_CL_ARG(v),     CG_OPS_CL_ARG(e),    CG_OPS_CL_ARG(rows), CG_OPS_CL_ARG(has_rows), CG_OPS_CL_ARG(n_keys)};
    const size_t global[2] = {(size_t)tx, (size_t)(B * S)};
    return attn_launch(a, kern, "attn_score_rows", tx, ty, global, CG_OPS_CL_N_ARGS(args), args);
}

/* Emits reduce_sum(mul(keys, reshape(vec [B, K] -> [B, 1, K])), axis 2): the
 * dot product of every key with vec, [B, S]. */
static int32_t emit_dot_keys(cg_ops_emitter *e, int32_t keys, int32_t vec) {
    int32_t row = cg_ops_emit(e, "reshape", "shape: [0, 1, -1]", vec, -1, -1);
    int32_t prod = cg_ops_emit(e, "mul", NULL, keys, row, -1);
    return cg_ops_emit(e, "reduce_sum", "axes: [2], keepdims: 0", prod, -1, -1);
}

static cg_op_status attn_score_decompose(cg_decomp *d, const cg_op_call *call) {
    score_kind kind = kind_of(call);
    /* The plan may decompose on symbolic shapes: H may be fixed by the keys. */
    const int64_t H = cg_dim_unify(call->inputs[0].dims[1], call->inputs[1].dims[2]);
    if (kind == SCALED_DOT && !cg_dim_known(H))
        return cg_op_fail(call, "scaled_dot decomposition needs a concrete query width");
    cg_ops_emitter e = {d, call, CG_OP_OK};
    int32_t q = cg_ops_emit_input(&e, 0), keys = cg_ops_emit_input(&e, 1), score = -1;
    if (kind != N_KINDS && call->n_inputs > kinds[kind].n_inputs)
        keys = cg_ops_emit(&e, "gather_rows", NULL, keys, cg_ops_emit_input(&e, kinds[kind].n_inputs), -1);
    switch (kind) {
    case ADDITIVE: {
        int32_t w_q = cg_ops_emit_input(&e, 2), b_q = cg_ops_emit_input(&e, 3);
        int32_t v = cg_ops_emit_input(&e, 4);
        int32_t qp = cg_ops_emit(&e, "linear", NULL, q, w_q, b_q);
        qp = cg_ops_emit(&e, "reshape", "shape: [0, 1, -1]", qp, -1, -1);
        int32_t t = cg_ops_emit(&e, "add", NULL, keys, qp, -1);
        t = cg_ops_emit(&e, "tanh", NULL, t, -1, -1);
        t = cg_ops_emit(&e, "mul", NULL, t, v, -1);
        score = cg_ops_emit(&e, "reduce_sum", "axes: [2], keepdims: 0", t, -1, -1);
        break;
    }
    case DOT: score = emit_dot_keys(&e, keys, q); break;
    case SCALED_DOT: {
        char attrs[64];
        snprintf(attrs, sizeof attrs, "alpha: %.15f, beta: 0.0", 1.0 / sqrt((double)H));
        score = emit_dot_keys(&e, keys, q);
        score = cg_ops_emit(&e, "affine", attrs, score, -1, -1);
        break;
    }
    case GENERAL: {
        int32_t w = cg_ops_emit_input(&e, 2);
        int32_t wq = cg_ops_emit(&e, "matmul", "transpose_a: 0, transpose_b: 1", q, w, -1);
        score = emit_dot_keys(&e, keys, wq);
        break;
    }
    case COSINE: {
        int32_t dot = emit_dot_keys(&e, keys, q);
        int32_t qq = cg_ops_emit(&e, "mul", NULL, q, q, -1);
        qq = cg_ops_emit(&e, "reduce_sum", "axes: [1], keepdims: 1", qq, -1, -1);
        int32_t kk = cg_ops_emit(&e, "mul", NULL, keys, keys, -1);
        kk = cg_ops_emit(&e, "reduce_sum", "axes: [2], keepdims: 0", kk, -1, -1);
        int32_t nk = cg_ops_emit(&e, "sqrt", NULL, kk, -1, -1);
        int32_t nq = cg_ops_emit(&e, "sqrt", NULL, qq, -1, -1);
        int32_t den = cg_ops_emit(&e, "mul", NULL, nk, nq, -1);
        int32_t eps = cg_ops_emit(&e, "affine", "alpha: 0.0, beta: 0.00000001", den, -1, -1);
        den = cg_ops_emit(&e, "maximum", NULL, den, eps, -1);
        score = cg_ops_emit(&e, "div", NULL, dot, den, -1);
        break;
    }
    case N_KINDS: return cg_op_fail(call, "unknown attention kind '%s'", call->attrs[0].s);
    }
    cg_ops_emit_output(&e, 0, score);
    return e.st;
}

/* Conformance cases of attn_score, smallest first: every kind over S in
 * {1, 3, 17, 257, 1000 (B = 1)} and widths 1, 3, 17, 257, 1000 (q, keys in
 * [-2, 2]; the additive and general weights in [-0.5, 0.5]). */
static const struct {
    score_kind kind;
    int64_t B, S, H, K; /* K: key width (A for additive); K == H for dot kinds */
    int64_t N;          /* > 0: keys [N, S, K] and rows i32 [B] in [0, N) */
} score_cases[] = {
    {ADDITIVE, 1, 1, 1, 1, 0},
    {DOT, 1, 1, 1, 1, 0},
    {SCALED_DOT, 1, 1, 1, 1, 0},
    {GENERAL, 1, 1, 1, 1, 0},
    {COSINE, 1, 1, 1, 1, 0},
    {ADDITIVE, 3, 3, 5, 3, 0},
    {DOT, 3, 3, 3, 3, 0},
    {SCALED_DOT, 3, 3, 3, 3, 0},
    {GENERAL, 3, 3, 5, 3, 0},
    {COSINE, 3, 3, 3, 3, 0},
    {ADDITIVE, 3, 17, 17, 17, 0},
    {DOT, 3, 17, 17, 17, 0},
    {SCALED_DOT, 3, 17, 17, 17, 0},
    {GENERAL, 3, 17, 3, 17, 0},
    {COSINE, 3, 17, 17, 17, 0},
    {COSINE, 2, 257, 3, 3, 0},
    {ADDITIVE, 1, 1000, 3, 3, 0},
    {COSINE, 1, 1000, 3, 3, 0},
    {DOT, 1, 3, 1000, 1000, 0},
    {GENERAL, 3, 17, 1000, 5, 0},
    {DOT, 2, 257, 17, 17, 0},
    {ADDITIVE, 17, 3, 3, 257, 0},
    {ADDITIVE, 1, 1000, 17, 17, 0},
    {DOT, 1, 1000, 17, 17, 0},
    {SCALED_DOT, 1, 1000, 17, 17, 0},
    {GENERAL, 1, 1000, 17, 17, 0},
    {COSINE, 1, 1000, 17, 17, 0},
    {ADDITIVE, 1, 17, 5, 1000, 0},
    /* with rows: more batch rows than keys rows, and fewer */
    {ADDITIVE, 5, 3, 4, 6, 2},
    {DOT, 7, 17, 17, 17, 3},
    {SCALED_DOT, 5, 3, 17, 17, 2},
    {GENERAL, 3, 17, 5, 3, 5},
    {COSINE, 17, 3, 3, 3, 4},
    {ADDITIVE, 17, 30, 17, 257, 4},
};

static int32_t attn_score_case(int32_t index, cg_conform_case *c);

/* After the valid cases: rows past the keys, then negative rows (errors). */
static int32_t attn_score_conform(int32_t index, cg_conform_case *c) {
    const int32_t n = (int32_t)(sizeof score_cases / sizeof score_cases[0]);
    if (index >= n && index < n + 2) {
        attn_score_case(n - 4, c); /* general, with rows over N = 5 */
        const int ri = c->n_inputs - 1;
        return index == n ? cg_ops_error_case(c, ri, c->hi[ri] + 1, c->hi[ri] + 3) : cg_ops_error_case(c, ri, -2, -1);
    }
    return attn_score_case(index, c);
}

static int32_t attn_score_case(int32_t index, cg_conform_case *c) {
    static const char *const attrs[N_KINDS] = {[ADDITIVE] = "kind: \"additive\"",
                                               [DOT] = "kind: \"dot\"",
                                               [SCALED_DOT] = "kind: \"scaled_dot\"",
                                               [GENERAL] = "kind: \"general\"",
                                               [COSINE] = "kind: \"cosine\""};
    if (index < 0 || index >= (int32_t)(sizeof score_cases / sizeof score_cases[0])) return 0;
    const score_kind kind = score_cases[index].kind;
    const int64_t B = score_cases[index].B, S = score_cases[index].S;
    const int64_t H = score_cases[index].H, K = score_cases[index].K, N = score_cases[index].N;
    const int64_t dims[5][3] = {{B, H}, {N > 0 ? N : B, S, K}, {K, H}, {K}, {1, K}};
    const int ndim[5] = {2, 3, 2, 1, 2};
    memset(c->inputs, 0, sizeof c->inputs);
    c->n_inputs = kinds[kind].n_inputs;
    for (int i = 0; i < c->n_inputs; i++) {
        c->inputs[i].dtype = CG_OP_F32;
        c->inputs[i].ndim = ndim[i];
        memcpy(c->inputs[i].dims, dims[i], sizeof(int64_t) * (size_t)ndim[i]);
        c->lo[i] = i < 2 ? -2.0 : -0.5;
        c->hi[i] = -c->lo[i];
    }
    if (N > 0) {
        cg_tensor_desc *r = &c->inputs[c->n_inputs];
        r->dtype = CG_OP_I32;
        r->ndim = 1;
        r->dims[0] = B;
        c->lo[c->n_inputs] = 0;
        c->hi[c->n_inputs] = (double)(N - 1);
        c->n_inputs++;
    }
    c->n_outputs = 1;
    c->attrs = attrs[kind];
    return 1;
}

static const cg_attr_def attn_score_attrs[] = {
    CG_ATTR(.name = "kind", .type = CG_ATTR_STRING, .required = 1,
            .doc = "additive, dot, scaled_dot, general or cosine"),
};
static const cg_kernel_def attn_score_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = attn_score_workspace, .run = attn_score_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = attn_score_workspace, .run = attn_score_cl,
              .flags = CG_KERNEL_FLAG_CHECKS),
};
static const char *const attn_score_inputs[] = {"q", "keys", "W", "b_q", "v", NULL};

const cg_op_def cg_op_attn_score =
    CG_OP(.name = "attn_score",
          .doc = "Attention scores e [B, S] of S keys for one query per batch row "
                 "(no masking, no softmax). Attribute kind (required) selects the score "
                 "and the inputs (all f32): "
                 "additive: q [B, H], keys [B, S, A] already projected (W_k h_i + b_k), "
                 "W_q [A, H], b_q [A], v [1, A]; e_i = v . tanh(W_q q + b_q + keys_i). "
                 "dot: q [B, H], keys [B, S, H]; e_i = q . h_i. "
                 "scaled_dot: as dot, e_i = q . h_i / sqrt(H). "
                 "general: q [B, H], keys [B, S, K], W [K, H]; e_i = h_i . (W q). "
                 "cosine: q [B, H], keys [B, S, H]; e_i = (q . h_i) / max(|q| |h_i|, 1e-8). "
                 "An optional last input rows i32 [B] makes keys [N, S, .]: batch row b "
                 "scores keys[rows[b]] (a beam's rows share their sentence's keys); a row "
                 "outside [0, N) is a run-time error on every device.",
          .min_inputs = 2, .max_inputs = 6, .min_outputs = 1, .max_outputs = 1, .input_names = attn_score_inputs,
          CG_ATTRS(attn_score_attrs), .infer = attn_score_infer, .decompose = attn_score_decompose,
          CG_KERNELS(attn_score_kernels), .conform_case = attn_score_conform);

/* ---- attn_context(a [B, S], values [B, S, K]) -> c [B, K] ---- */

static cg_op_status attn_context_infer(cg_op_call *call) {
    const cg_tensor_desc *w = &call->inputs[0], *values = &call->inputs[1];
    const int has_rows = call->n_inputs == 3;
    const int64_t any2[2] = {CG_DIM_UNKNOWN, CG_DIM_UNKNOWN};
    if (cg_ops_expect_f32(call, "input 'a'", w, 2, any2)) return CG_OP_ERROR;
    const int64_t want[3] = {has_rows ? CG_DIM_UNKNOWN : w->dims[0], w->dims[1], CG_DIM_UNKNOWN};
    if (cg_ops_expect_f32(call, "input 'values'", values, 3, want)) return CG_OP_ERROR;
    if (has_rows && expect_rows(call, 2)) return CG_OP_ERROR;
    cg_tensor_desc *o = &call->outputs[0];
    memset(o, 0, sizeof *o);
    o->dtype = CG_OP_F32;
    o->ndim = 2;
    o->dims[0] = cg_dim_unify(w->dims[0], has_rows ? call->inputs[2].dims[0] : values->dims[0]);
    o->dims[1] = values->dims[2];
    return CG_OP_OK;
}

/* Context vectors of batch rows [begin, end). */
typedef struct context_rows {
    const float *w, *values;
    const int32_t *rows;
    float *c;
    int64_t S, K;
} context_rows;

static void context_rows_run(void *p, size_t begin, size_t end) {
    const context_rows *x = p;
    for (size_t b = begin; b < end; b++)
        cg_cpu_weighted_rows(x->w + (int64_t)b * x->S, x->values + key_row(x->rows, (int64_t)b) * x->S * x->K,
                             (size_t)x->K, (size_t)x->S, (size_t)x->K, x->c + (int64_t)b * x->K);
}

static cg_op_status attn_context_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const int64_t B = call->inputs[0].dims[0], S = call->inputs[1].dims[1];
    const int64_t K = call->inputs[1].dims[2];
    const float *w = a->in[0], *values = a->in[1];
    const int32_t *rows = rows_of(a, 2);
    float *c = a->out[0];
    if (rows && cg_ops_check_rows(call, 2, "rows", rows, B, call->inputs[1].dims[0])) return CG_OP_ERROR;
    if (S == 0) {
        memset(c, 0, sizeof(float) * (size_t)(B * K));
        return CG_OP_OK;
    }
    context_rows ctx = {w, values, rows, c, S, K};
    cg_cpu_parallel_for((size_t)B, (size_t)(S * K >= 16384 ? 1 : 16384 / (S * K)), context_rows_run, &ctx);
    return CG_OP_OK;
}

/* One work-group per (batch row, TX columns): TX work-items along the
 * columns, TY along S, reduced in local memory. */
static cg_op_status attn_context_cl(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const int64_t B = call->inputs[0].dims[0], S = call->inputs[1].dims[1];
    const int64_t K = call->inputs[1].dims[2];
    if (call->n_inputs > 2 && cg_ops_cl_check_range(a, 2, B, 0, call->inputs[1].dims[0] - 1)) return CG_OP_ERROR;
    if (B * K == 0) return CG_OP_OK;
    if (B > INT32_MAX || S > INT32_MAX || K > INT32_MAX)
        return cg_op_fail(call,
                          "sizes B = %lld, S = %lld, K = %lld are too large for the "
                          "OpenCL kernel",
                          (long long)B, (long long)S, (long long)K);
    const int64_t wg = attn_wg(a);
    int64_t tx = pow2_at_least(K, wg), ty = pow2_at_least(S, wg / tx);
    cl_kernel kern = attn_kernel(a, "attn_context", &tx, &ty);
    if (!kern) return CG_OP_ERROR;
    const cl_int b32 = (cl_int)B, s32 = (cl_int)S, k32 = (cl_int)K;
    const cl_mem w = (cl_mem)a->in[0], values = (cl_mem)a->in[1], c = a->out[0];
    const cl_int has_rows = call->n_inputs > 2;
    const cl_mem rows = has_rows ? (cl_mem)a->in[2] : values; /* unread without rows */
    const cl_long n_values = call->inputs[1].dims[0];
    const cg_ops_cl_arg_value args[] = {CG_OPS_CL_ARG(b32),  CG_OPS_CL_ARG(s32),      CG_OPS_CL_ARG(k32),
                                        CG_OPS_CL_ARG(w),    CG_OPS_CL_ARG(values),   CG_OPS_CL_ARG(c),
                                        CG_OPS_CL_ARG(rows), CG_OPS_CL_ARG(has_rows), CG_OPS_CL_ARG(n_values)};
    const size_t global[2] = {(size_t)K, (size_t)(B * ty)};
    return attn_launch(a, kern, "attn_context", tx, ty, global, CG_OPS_CL_N_ARGS(args), args);
}

/* Conformance cases of attn_context, smallest first: B, S, K (a in [0, 1],
 * values in [-2, 2]). */
static const int64_t context_cases[][4] = {
    {1, 1, 1},
    {1, 3, 3},
    {3, 3, 17},
    {3, 17, 3},
    {1, 3, 257},
    {2, 257, 5},
    {1, 1000, 3},
    {1, 3, 1000},
    {17, 17, 17},
    {1, 1000, 17},
    {17, 1000, 3},
    /* the 4th: N > 0 adds rows i32 [B] in [0, N) over values [N, S, K] */
    {5, 3, 17, 2},
    {17, 30, 257, 4},
    {3, 17, 3, 7},
};

static int32_t attn_context_case(int32_t index, cg_conform_case *c);

/* After the valid cases: rows past the values, then negative rows (errors). */
static int32_t attn_context_conform(int32_t index, cg_conform_case *c) {
    const int32_t n = (int32_t)(sizeof context_cases / sizeof context_cases[0]);
    if (index >= n && index < n + 2) {
        attn_context_case(n - 1, c);
        return index == n ? cg_ops_error_case(c, 2, c->hi[2] + 1, c->hi[2] + 3) : cg_ops_error_case(c, 2, -2, -1);
    }
    return attn_context_case(index, c);
}

static int32_t attn_context_case(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= (int32_t)(sizeof context_cases / sizeof context_cases[0])) return 0;
    const int64_t B = context_cases[index][0], S = context_cases[index][1];
    const int64_t K = context_cases[index][2], N = context_cases[index][3];
    memset(c->inputs, 0, sizeof c->inputs);
    c->n_inputs = N > 0 ? 3 : 2;
    c->inputs[0].dtype = c->inputs[1].dtype = CG_OP_F32;
    c->inputs[0].ndim = 2;
    c->inputs[0].dims[0] = B;
    c->inputs[0].dims[1] = S;
    c->inputs[1].ndim = 3;
    c->inputs[1].dims[0] = N > 0 ? N : B;
    c->inputs[1].dims[1] = S;
    c->inputs[1].dims[2] = K;
    c->lo[0] = 0.0;
    c->hi[0] = 1.0;
    c->lo[1] = -2.0;
    c->hi[1] = 2.0;
    if (N > 0) {
        c->inputs[2].dtype = CG_OP_I32;
        c->inputs[2].ndim = 1;
        c->inputs[2].dims[0] = B;
        c->lo[2] = 0;
        c->hi[2] = (double)(N - 1);
    }
    c->n_outputs = 1;
    c->attrs = NULL;
    return 1;
}

static cg_op_status attn_context_decompose(cg_decomp *d, const cg_op_call *call) {
    cg_ops_emitter e = {d, call, CG_OP_OK};
    int32_t w = cg_ops_emit_input(&e, 0), values = cg_ops_emit_input(&e, 1);
    if (call->n_inputs > 2) values = cg_ops_emit(&e, "gather_rows", NULL, values, cg_ops_emit_input(&e, 2), -1);
    w = cg_ops_emit(&e, "reshape", "shape: [0, 0, 1]", w, -1, -1);
    int32_t prod = cg_ops_emit(&e, "mul", NULL, values, w, -1);
    int32_t c = cg_ops_emit(&e, "reduce_sum", "axes: [1], keepdims: 0", prod, -1, -1);
    cg_ops_emit_output(&e, 0, c);
    return e.st;
}

static const cg_kernel_def attn_context_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = attn_context_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = attn_context_cl, .flags = CG_KERNEL_FLAG_CHECKS),
};
static const char *const attn_context_inputs[] = {"a", "values", "rows", NULL};

const cg_op_def cg_op_attn_context =
    CG_OP(.name = "attn_context",
          .doc = "Attention context: inputs a [B, S] (the attention weights, e.g. a "
                 "masked softmax of attn_score) and values [B, S, K], both f32; output "
                 "c [B, K] with c[b] = sum_i a[b, i] * values[b, i]. An optional third "
                 "input rows i32 [B] makes values [N, S, K]: c[b] = sum_i a[b, i] * "
                 "values[rows[b], i] (a row outside [0, N) is a run-time error on every "
                 "device). No attributes.",
          .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .input_names = attn_context_inputs,
          .infer = attn_context_infer, .decompose = attn_context_decompose, CG_KERNELS(attn_context_kernels),
          .conform_case = attn_context_conform);
