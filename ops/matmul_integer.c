/* matmul_integer: the product of 8-bit integer matrices with int32
 * accumulation (ONNX MatMulInteger, the core of ONNX Runtime's dynamically
 * quantized models): y = (a - a_zero) @ (b - b_zero), exact in int32 for
 * K up to 33025 (|term| <= 255 * 255); past that the sum wraps around as
 * int32 arithmetic does in ONNX Runtime (computed unsigned: no UB). */
#include "bcast.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_clones.h"
#include "cpu/cpu_pool.h"
#include "matmul.cl.h"

static int is8(cg_op_dtype dt) { return dt == CG_U8 || dt == CG_I8; }

/* a [..., M, K], b [K, N]; the zero points one value ([] or [1]) or a
 * [M] row vector for a and an [N] column vector for b. */
static cg_op_status mmi_infer(cg_op_call *call) {
    const cg_tensor_desc *a = &call->inputs[0], *b = &call->inputs[1];
    if (!is8(a->dtype) || !is8(b->dtype))
        return cg_op_fail(call, "inputs a and b must be u8 or i8, got %s and %s", cg_ops_dtype_name(a->dtype),
                          cg_ops_dtype_name(b->dtype));
    if (a->ndim < 2 || b->ndim != 2)
        return cg_op_fail(call, "a must be [..., M, K] and b [K, N], got %d and %d dims", a->ndim, b->ndim);
    const int64_t m = a->dims[a->ndim - 2], k = a->dims[a->ndim - 1], n = b->dims[1];
    if (b->dims[0] != k) return cg_op_fail(call, "a has K = %lld, b %lld rows", (long long)k, (long long)b->dims[0]);
    for (int i = 2; i < call->n_inputs; i++) {
        const cg_tensor_desc *z = &call->inputs[i];
        const int64_t len = i == 2 ? m : n;
        if (z->dtype != call->inputs[i - 2].dtype)
            return cg_op_fail(call, "input %d (%s) must have %s's dtype %s", i, i == 2 ? "a_zero" : "b_zero",
                              i == 2 ? "a" : "b", cg_ops_dtype_name(call->inputs[i - 2].dtype));
        if (!(z->ndim == 0 || (z->ndim == 1 && (z->dims[0] == 1 || z->dims[0] == len))))
            return cg_op_fail(call, "input %d (%s) must be one value or %lld, got %d dims", i,
                              i == 2 ? "a_zero" : "b_zero", (long long)len, z->ndim);
    }
    cg_tensor_desc *y = &call->outputs[0];
    *y = *a;
    y->dtype = CG_I32;
    y->dims[a->ndim - 1] = n;
    return CG_OP_OK;
}

static int32_t at8(const void *p, cg_op_dtype dt, int64_t i) {
    return dt == CG_U8 ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
}

/* The zero point of row or column i (0 without one). */
static int32_t zero_at(const cg_kernel_args *a, int input, int64_t i) {
    if (a->call->n_inputs <= input) return 0;
    const cg_tensor_desc *z = &a->call->inputs[input];
    return at8(a->in[input], z->dtype, z->ndim == 1 && z->dims[0] > 1 ? i : 0);
}

/* One output row y[n] += (a[k] - za) * (b[k, n] - zb[n]) over k, for each
 * dtype pair; the inner loop is contiguous in b and y. */
#define MMI_ROW(NAME, TA, TB)                                                                                      \
    static void NAME(const TA *a, const TB *b, const int32_t *zb, int32_t za, int64_t k, int64_t n, uint32_t *y) { \
        memset(y, 0, (size_t)n * sizeof *y);                                                                       \
        for (int64_t j = 0; j < k; j++) {                                                                          \
            const int32_t av = (int32_t)a[j] - za;                                                                 \
            const TB *br = b + j * n;                                                                              \
            for (int64_t c = 0; c < n; c++) y[c] += (uint32_t)(av * ((int32_t)br[c] - zb[c]));                     \
        }                                                                                                          \
    }
MMI_ROW(row_uu, uint8_t, uint8_t)
MMI_ROW(row_us, uint8_t, int8_t)
MMI_ROW(row_su, int8_t, uint8_t)
MMI_ROW(row_ss, int8_t, int8_t)

/* The packed path: each operand minus its zero point as int16 (|v| <=
 * 255), b transposed to [N][KP] (KP: K rounded up to 16, zeros past K),
 * so that y[r, c] is one dot product of int16 pairs summed in int32, which
 * compilers turn into pmaddwd. Exact, and no sum can overflow while K <=
 * MMI_PACK_MAX_K (33025 * 255 * 255 < 2^31); longer rows take the row
 * loops above, which wrap as ONNX Runtime does. b is packed once per plan
 * when it is a parameter (the weights of a quantized model), else per run
 * into the workspace. */
#define MMI_PACK_MAX_K 33025
static int64_t mmi_kp(int64_t k) { return (k + 15) / 16 * 16; }

static void mmi_pack_b(const cg_kernel_args *a, const void *b, const void *zbuf, int16_t *bp) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *bd = &call->inputs[1];
    const int64_t k = bd->dims[0], n = bd->dims[1], kp = mmi_kp(k);
    const int has_zb = call->n_inputs > 3, per_col = has_zb && call->inputs[3].ndim == 1 && call->inputs[3].dims[0] > 1;
    for (int64_t c = 0; c < n; c++) {
        const int32_t zb = has_zb ? at8(zbuf, call->inputs[3].dtype, per_col ? c : 0) : 0;
        int16_t *col = bp + c * kp;
        for (int64_t j = 0; j < k; j++) col[j] = (int16_t)(at8(b, bd->dtype, j * n + c) - zb);
        for (int64_t j = k; j < kp; j++) col[j] = 0;
    }
}

/* b packed once, when it and its zero point are parameters. */
static cg_op_status mmi_create(const cg_kernel_args *a, void **state, size_t *bytes) {
    const cg_op_call *call = a->call;
    const int64_t k = call->inputs[1].dims[0], n = call->inputs[1].dims[1];
    *state = NULL;
    *bytes = 0;
    if (!a->in[1] || (call->n_inputs > 3 && !a->in[3]) || k > MMI_PACK_MAX_K || k == 0 || n == 0) return CG_OP_OK;
    const size_t size = (size_t)(n * mmi_kp(k)) * sizeof(int16_t);
    int16_t *bp = aligned_alloc(64, (size + 63) / 64 * 64);
    if (!bp) return CG_OP_NO_MEMORY;
    mmi_pack_b(a, a->in[1], call->n_inputs > 3 ? a->in[3] : NULL, bp);
    *state = bp;
    *bytes = size;
    return CG_OP_OK;
}

static void mmi_destroy(void *state) { free(state); }

static CG_CPU_CLONES int32_t mmi_dot(const int16_t *x, const int16_t *w, int64_t kp) {
    int32_t s = 0;
    for (int64_t j = 0; j < kp; j++) s += (int32_t)x[j] * (int32_t)w[j];
    return s;
}

/* Four columns at once: each of x's vectors loaded once for four dot
 * products (Whisper's encoder: its products 2x faster than one at a time). */
static CG_CPU_CLONES void mmi_dot4(const int16_t *x, const int16_t *w, int64_t kp, int32_t *y) {
    const int16_t *w0 = w, *w1 = w + kp, *w2 = w + 2 * kp, *w3 = w + 3 * kp;
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int64_t j = 0; j < kp; j++) {
        const int32_t v = x[j];
        s0 += v * w0[j];
        s1 += v * w1[j];
        s2 += v * w2[j];
        s3 += v * w3[j];
    }
    y[0] = s0, y[1] = s1, y[2] = s2, y[3] = s3;
}

typedef struct mmi_job {
    const cg_kernel_args *a;
    const int16_t *bp;
    int16_t *ap; /* a's rows minus their zero points, [rows][KP] */
    int64_t m, k, n, kp;
} mmi_job;

static void mmi_rows(void *ctx, size_t r0, size_t r1) {
    const mmi_job *j = ctx;
    const cg_op_call *call = j->a->call;
    for (size_t r = r0; r < r1; r++) {
        int16_t *x = j->ap + (int64_t)r * j->kp;
        const int32_t za = zero_at(j->a, 2, (int64_t)r % j->m);
        for (int64_t i = 0; i < j->k; i++)
            x[i] = (int16_t)(at8(j->a->in[0], call->inputs[0].dtype, (int64_t)r * j->k + i) - za);
        for (int64_t i = j->k; i < j->kp; i++) x[i] = 0;
        int32_t *y = (int32_t *)j->a->out[0] + (int64_t)r * j->n;
        int64_t c = 0;
        for (; c + 4 <= j->n; c += 4) mmi_dot4(x, j->bp + c * j->kp, j->kp, y + c);
        for (; c < j->n; c++) y[c] = mmi_dot(x, j->bp + c * j->kp, j->kp);
    }
}

/* b's zero points, one per column (the row loops), or the packed rows of
 * a and, when no plan state holds it, packed b. */
static size_t mmi_workspace(const cg_op_call *call) {
    const cg_tensor_desc *ad = &call->inputs[0];
    const int64_t k = ad->dims[ad->ndim - 1], n = call->inputs[1].dims[1], kp = mmi_kp(k);
    const int64_t rows = k ? cg_desc_numel(ad) / k : 0;
    if (k == 0 || k > MMI_PACK_MAX_K) return (size_t)n * sizeof(int32_t);
    return (size_t)((rows + n) * kp) * sizeof(int16_t) + 64;
}

static cg_op_status mmi_packed(const cg_kernel_args *a, int64_t m, int64_t k, int64_t n, int64_t rows) {
    mmi_job j = {.a = a, .m = m, .k = k, .n = n, .kp = mmi_kp(k)};
    j.ap = (int16_t *)(((uintptr_t)a->workspace + 63) / 64 * 64);
    j.bp = a->state;
    if (!j.bp) {
        int16_t *bp = j.ap + rows * j.kp;
        mmi_pack_b(a, a->in[1], a->call->n_inputs > 3 ? a->in[3] : NULL, bp);
        j.bp = bp;
    }
    const int64_t work = n * j.kp;
    cg_cpu_parallel_for((size_t)rows, (size_t)(work >= 16384 ? 1 : 16384 / (work + 1) + 1), mmi_rows, &j);
    return CG_OP_OK;
}

static cg_op_status mmi_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *ad = &call->inputs[0], *bd = &call->inputs[1];
    const int64_t m = ad->dims[ad->ndim - 2], k = ad->dims[ad->ndim - 1], n = bd->dims[1];
    const int64_t rows = m ? cg_desc_numel(ad) / (k ? k : 1) : 0;
    const int64_t mats = m && k ? rows / m : 0;
    if (k > 0 && k <= MMI_PACK_MAX_K && n > 0 && rows > 0) return mmi_packed(a, m, k, n, rows);
    int32_t *zb = a->workspace;
    for (int64_t c = 0; c < n; c++) zb[c] = zero_at(a, 3, c);
    const int ua = ad->dtype == CG_U8, ub = bd->dtype == CG_U8;
    if (k == 0) {
        memset(a->out[0], 0, (size_t)(cg_desc_numel(&call->outputs[0])) * sizeof(int32_t));
        return CG_OP_OK;
    }
    for (int64_t r = 0; r < mats * m; r++) {
        const int32_t za = zero_at(a, 2, r % m);
        const char *ar = (const char *)a->in[0] + r * k;
        uint32_t *y = (uint32_t *)a->out[0] + r * n;
        if (ua && ub) row_uu((const uint8_t *)ar, a->in[1], zb, za, k, n, y);
        else if (ua) row_us((const uint8_t *)ar, a->in[1], zb, za, k, n, y);
        else if (ub) row_su((const int8_t *)ar, a->in[1], zb, za, k, n, y);
        else row_ss((const int8_t *)ar, a->in[1], zb, za, k, n, y);
    }
    return CG_OP_OK;
}

static cg_op_status mmi_cl(const cg_kernel_args *a) {
    static const char name[] = "matmul_integer";
    const cg_op_call *call = a->call;
    const cg_tensor_desc *ad = &call->inputs[0], *bd = &call->inputs[1];
    const int64_t total = cg_desc_numel(&call->outputs[0]);
    if (total == 0) return CG_OP_OK;
    const int64_t m = ad->dims[ad->ndim - 2], k = ad->dims[ad->ndim - 1], n = bd->dims[1];
    char opts[96];
    snprintf(opts, sizeof opts, "-DMA=%s -DMB=%s", ad->dtype == CG_U8 ? "uchar" : "char",
             bd->dtype == CG_U8 ? "uchar" : "char");
    const int wide = total > INT32_MAX || cg_desc_numel(ad) > INT32_MAX;
    cl_kernel kk = cg_ops_cl_kernel(a, cg_cl_matmul, name, wide, 0, opts);
    if (!kk) return CG_OP_ERROR;
    /* absent zero points: a's and b's own buffers with a zero step and a
     * zero flag, so that the kernel has one signature */
    const int has_za = call->n_inputs > 2, has_zb = call->n_inputs > 3;
    cl_mem x = (cl_mem)a->in[0], w = (cl_mem)a->in[1], y = (cl_mem)a->out[0];
    cl_mem za = has_za ? (cl_mem)a->in[2] : x, zb = has_zb ? (cl_mem)a->in[3] : w;
    const cl_int sza = has_za && call->inputs[2].ndim == 1 && call->inputs[2].dims[0] > 1,
                 szb = has_zb && call->inputs[3].ndim == 1 && call->inputs[3].dims[0] > 1;
    const cl_int uza = has_za, uzb = has_zb;
    const cl_long lm = m, lk = k, ln = n;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(x),   CG_OPS_CL_ARG(w),  CG_OPS_CL_ARG(za),  CG_OPS_CL_ARG(uza),
                                     CG_OPS_CL_ARG(sza), CG_OPS_CL_ARG(zb), CG_OPS_CL_ARG(uzb), CG_OPS_CL_ARG(szb),
                                     CG_OPS_CL_ARG(y),   CG_OPS_CL_ARG(lm), CG_OPS_CL_ARG(lk),  CG_OPS_CL_ARG(ln)};
    if (cg_ops_cl_args(a, kk, name, 0, CG_OPS_CL_N_ARGS(v), v) || cg_ops_cl_idx(a, kk, name, 12, wide, total))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, kk, NULL, total, cg_ops_cl_work_group(a, kk, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

#define D(...) \
    { __VA_ARGS__ }
#define U8(nd, d) \
    { CG_U8, nd, d, 0, 255 }
#define S8(nd, d) \
    { CG_I8, nd, d, -128, 127 }
static const cg_ops_case mmi_cases[] = {
    {2, {U8(2, D(1, 1)), U8(2, D(1, 1))}, NULL},
    {4, {U8(2, D(4, 3)), U8(2, D(3, 2)), U8(0, D(0)), U8(0, D(0))}, NULL},
    {4, {U8(2, D(4, 3)), S8(2, D(3, 5)), U8(1, D(4)), S8(1, D(5))}, NULL},
    {3, {S8(3, D(2, 3, 7)), U8(2, D(7, 4)), S8(1, D(1))}, NULL},
    {2, {S8(2, D(5, 17)), S8(2, D(17, 9))}, NULL},
    {4, {U8(3, D(3, 7, 64)), S8(2, D(64, 33)), U8(0, D(0)), S8(1, D(33))}, NULL},
    {2, {U8(2, D(3, 0)), U8(2, D(0, 4))}, NULL},
    {4, {U8(2, D(16, 300)), S8(2, D(300, 70)), U8(0, D(0)), S8(0, D(0))}, NULL},
};

static int32_t mmi_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= (int32_t)(sizeof mmi_cases / sizeof mmi_cases[0])) return 0;
    cg_ops_fill_case(&mmi_cases[i], 1, c);
    return 1;
}

static const char *const mmi_inputs[] = {"a", "b", "a_zero", "b_zero", NULL};
static const cg_kernel_def mmi_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = mmi_workspace, .run = mmi_cpu, .create = mmi_create,
              .destroy = mmi_destroy),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = mmi_cl),
};
const cg_op_def cg_op_matmul_integer =
    CG_OP(.name = "matmul_integer",
          .doc = "Product of 8-bit integer matrices with int32 accumulation (ONNX MatMulInteger): y = (a - "
                 "a_zero) @ (b - b_zero) for a [..., M, K] and b [K, N], each u8 or i8; the optional zero "
                 "points have their operand's dtype and are one value, or one per row of a ([M]) and per "
                 "column of b ([N]). y is i32 [..., M, N], exact for K up to 33025; longer sums wrap "
                 "around as int32.",
          .min_inputs = 2, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1, .input_names = mmi_inputs,
          .infer = mmi_infer, CG_KERNELS(mmi_kernels), .conform_case = mmi_conform);
