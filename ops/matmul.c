/* Matrix products: matmul (batched, broadcasting) and linear (x W^T + b). */
#include "ops_common.h"

#include "backends/cpu/cpu_blas.h"

#include <string.h>

/* Formats one dim ("5", "s0" or "?") for messages. */
static const char *fmt_dim(char *buf, size_t size, int64_t v) {
    if (v >= 0) snprintf(buf, size, "%lld", (long long)v);
    else if (v == CG_DIM_UNKNOWN) snprintf(buf, size, "?");
    else snprintf(buf, size, "s%lld", (long long)(-2 - v));
    return buf;
}

static int64_t prod_dims(const int64_t *d, int n) {
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= d[i];
    return p;
}

/* ---- matmul(a [..., M, K], b [..., K, N]) -> [..., M, N] ---- */

enum { MATMUL_TRANSPOSE_A, MATMUL_TRANSPOSE_B };

static const cg_attr_def matmul_attrs[] = {
    {.struct_size = sizeof(cg_attr_def), .name = "transpose_a", .type = CG_ATTR_INT,
     .default_int = 0, .doc = "1: a's last two dims are [K, M] (use a^T)"},
    {.struct_size = sizeof(cg_attr_def), .name = "transpose_b", .type = CG_ATTR_INT,
     .default_int = 0, .doc = "1: b's last two dims are [N, K] (use b^T)"},
};

static cg_op_status matmul_infer(cg_op_call *call) {
    const cg_tensor_desc *a = &call->inputs[0], *b = &call->inputs[1];
    int64_t ta = call->attrs[MATMUL_TRANSPOSE_A].i, tb = call->attrs[MATMUL_TRANSPOSE_B].i;
    char sa[128], sb[128], sk[32];
    if (cg_expect_input(call, 0, CG_OP_F32, -1) || cg_expect_input(call, 1, CG_OP_F32, -1))
        return CG_OP_ERROR;
    if (ta != 0 && ta != 1)
        return cg_op_fail(call, "attribute transpose_a must be 0 or 1, got %lld", (long long)ta);
    if (tb != 0 && tb != 1)
        return cg_op_fail(call, "attribute transpose_b must be 0 or 1, got %lld", (long long)tb);
    cg_ops_format_dims(sa, sizeof sa, a);
    cg_ops_format_dims(sb, sizeof sb, b);
    if (a->ndim < 2)
        return cg_op_fail(call, "input 0 (a) must have at least 2 dims for matmul, got %s", sa);
    if (b->ndim < 2)
        return cg_op_fail(call, "input 1 (b) must have at least 2 dims for matmul, got %s", sb);
    int64_t m = ta ? a->dims[a->ndim - 1] : a->dims[a->ndim - 2];
    int64_t ka = ta ? a->dims[a->ndim - 2] : a->dims[a->ndim - 1];
    int64_t kb = tb ? b->dims[b->ndim - 1] : b->dims[b->ndim - 2];
    int64_t n = tb ? b->dims[b->ndim - 2] : b->dims[b->ndim - 1];
    if (!cg_dim_compatible(ka, kb)) {
        fmt_dim(sk, sizeof sk, ka);
        return cg_op_fail(call, "input 1 (b) has shape %s, expected [%s%s%s%s] for matmul "
                          "with a %s%s", sb, b->ndim > 2 ? "..., " : "", tb ? "N, K=" : "K=",
                          sk, tb ? "" : ", N", sa, ta ? " (transpose_a: 1)" : "");
    }
    cg_tensor_desc ba = *a, bb = *b, bo;
    ba.ndim = a->ndim - 2;
    bb.ndim = b->ndim - 2;
    if (cg_broadcast_shapes(call, &ba, &bb, &bo) != CG_OP_OK)
        return cg_op_fail(call, "batch dims of a %s and b %s do not broadcast for matmul",
                          sa, sb);
    cg_tensor_desc *o = &call->outputs[0];
    o->dtype = CG_OP_F32;
    o->ndim = bo.ndim + 2;
    memcpy(o->dims, bo.dims, sizeof(int64_t) * (size_t)bo.ndim);
    o->dims[bo.ndim] = m;
    o->dims[bo.ndim + 1] = n;
    return CG_OP_OK;
}

/* Element strides of an operand's batch dims padded to the output's `nb`
 * batch dims (0 where the operand broadcasts). */
static void batch_strides(const cg_tensor_desc *t, int nb, const int64_t *ob, int64_t mat,
                          int64_t *st) {
    int tb = t->ndim - 2;
    int64_t s = mat;
    for (int i = nb - 1; i >= 0; i--) {
        int k = tb - nb + i;
        int64_t d = k >= 0 ? t->dims[k] : 1;
        st[i] = (d == 1 && ob[i] != 1) ? 0 : s;
        s *= d;
    }
}

static cg_op_status matmul_cpu(const cg_kernel_args *args) {
    const cg_op_call *call = args->call;
    const cg_tensor_desc *a = &call->inputs[0], *b = &call->inputs[1], *o = &call->outputs[0];
    const float *pa = args->in[0], *pb = args->in[1];
    float *pc = args->out[0];
    int ta = call->attrs[MATMUL_TRANSPOSE_A].i != 0, tb = call->attrs[MATMUL_TRANSPOSE_B].i != 0;
    int nb = o->ndim - 2;
    int64_t m = o->dims[nb], n = o->dims[nb + 1];
    int64_t k = ta ? a->dims[a->ndim - 2] : a->dims[a->ndim - 1];
    int64_t lda = ta ? m : k, ldb = tb ? k : n;
    int64_t batch = prod_dims(o->dims, nb);
    if (batch == 0 || m == 0 || n == 0) return CG_OP_OK;
    int64_t b_batch = prod_dims(b->dims, b->ndim - 2);
    if (!ta && b_batch == 1) {
        /* b is shared by every batch, a's rows are contiguous: one GEMM with
         * the batch folded into M. */
        cg_cpu_sgemm(0, tb, batch * m, n, k, 1.0f, pa, lda, pb, ldb, 0.0f, pc, n);
        return CG_OP_OK;
    }
    int64_t sa[CG_MAX_DIMS], sb[CG_MAX_DIMS], idx[CG_MAX_DIMS] = {0};
    batch_strides(a, nb, o->dims, m * k, sa);
    batch_strides(b, nb, o->dims, k * n, sb);
    int64_t oa = 0, ob = 0;
    for (int64_t t = 0; t < batch; t++) {
        cg_cpu_sgemm(ta, tb, m, n, k, 1.0f, pa + oa, lda, pb + ob, ldb, 0.0f, pc + t * m * n, n);
        for (int d = nb - 1; d >= 0; d--) {
            oa += sa[d];
            ob += sb[d];
            if (++idx[d] < o->dims[d]) break;
            oa -= sa[d] * o->dims[d];
            ob -= sb[d] * o->dims[d];
            idx[d] = 0;
        }
    }
    return CG_OP_OK;
}

static const cg_kernel_def matmul_kernels[] = {
    {sizeof(cg_kernel_def), CG_BACKEND_CPU, NULL, matmul_cpu},
};
static const char *const matmul_inputs[] = {"a", "b", NULL};

const cg_op_def cg_op_matmul = {
    .struct_size = sizeof(cg_op_def),
    .name = "matmul",
    .doc = "Batched matrix product of f32 tensors. a is [..., M, K] ([..., K, M] "
           "with transpose_a: 1), b is [..., K, N] ([..., N, K] with transpose_b: "
           "1); both need at least 2 dims. The leading (batch) dims of a and b "
           "broadcast with NumPy rules, so a 2-D b is one matrix shared by every "
           "batch of a. Output [batch..., M, N] with out = op(a) @ op(b); K = 0 "
           "gives zeros. Attributes transpose_a, transpose_b: 0 or 1 (default 0).",
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .input_names = matmul_inputs,
    .attrs = matmul_attrs, .n_attrs = 2,
    .infer = matmul_infer,
    .kernels = matmul_kernels, .n_kernels = 1,
};

/* ---- linear(x [..., IN], w [OUT, IN], b [OUT]?) -> [..., OUT] ---- */

static cg_op_status linear_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *w = &call->inputs[1];
    char sx[128], sw[128], sb[128], s1[32], s2[32];
    if (cg_expect_input(call, 0, CG_OP_F32, -1) || cg_expect_input(call, 1, CG_OP_F32, 2))
        return CG_OP_ERROR;
    cg_ops_format_dims(sx, sizeof sx, x);
    cg_ops_format_dims(sw, sizeof sw, w);
    if (x->ndim < 1)
        return cg_op_fail(call, "input 0 (x) must have at least 1 dim for linear, got %s", sx);
    int64_t in = x->dims[x->ndim - 1];
    if (!cg_dim_compatible(w->dims[1], in))
        return cg_op_fail(call, "input 1 (w) has shape %s, expected [OUT, IN=%s] for linear "
                          "with x %s", sw, fmt_dim(s1, sizeof s1, in), sx);
    int64_t out = w->dims[0];
    if (call->n_inputs > 2) {
        const cg_tensor_desc *b = &call->inputs[2];
        if (cg_expect_input(call, 2, CG_OP_F32, 1)) return CG_OP_ERROR;
        if (!cg_dim_compatible(b->dims[0], out)) {
            cg_ops_format_dims(sb, sizeof sb, b);
            return cg_op_fail(call, "input 2 (b) has shape %s, expected [OUT=%s] for linear "
                              "with w %s", sb, fmt_dim(s2, sizeof s2, out), sw);
        }
        out = cg_dim_unify(out, b->dims[0]);
    }
    cg_tensor_desc *o = &call->outputs[0];
    *o = *x;
    o->dims[x->ndim - 1] = out;
    return CG_OP_OK;
}

static cg_op_status linear_cpu(const cg_kernel_args *args) {
    const cg_op_call *call = args->call;
    const cg_tensor_desc *x = &call->inputs[0], *w = &call->inputs[1];
    const float *px = args->in[0], *pw = args->in[1];
    const float *pb = call->n_inputs > 2 ? args->in[2] : NULL;
    float *py = args->out[0];
    int64_t rows = prod_dims(x->dims, x->ndim - 1);
    int64_t in = x->dims[x->ndim - 1], out = w->dims[0];
    if (rows == 0 || out == 0) return CG_OP_OK;
    /* y = x w^T over every leading row at once. */
    cg_cpu_sgemm(0, 1, rows, out, in, 1.0f, px, in, pw, in, 0.0f, py, out);
    if (pb) {
        for (int64_t r = 0; r < rows; r++) {
            float *yr = py + r * out;
            for (int64_t j = 0; j < out; j++) yr[j] += pb[j];
        }
    }
    return CG_OP_OK;
}

/* linear = matmul(x, w; transpose_b: 1) [+ b]; a 1-D x is viewed as one row
 * through reshape (matmul needs 2 dims). */
static cg_op_status linear_decompose(cg_decomp *d, const cg_op_call *call) {
    const cg_host_api *h = call->host;
    if (!h || !h->decomp_input || !h->decomp_node || !h->decomp_output)
        return cg_op_fail(call, "the host offers no decomposition services");
    int one_d = call->inputs[0].ndim == 1;
    int32_t x = h->decomp_input(d, 0), w = h->decomp_input(d, 1), v, t;
    if (x < 0 || w < 0) return cg_op_fail(call, "cannot read the inputs of linear");
    if (one_d) {
        if (h->decomp_node(d, "reshape", 1, &x, 1, &t, "shape: [1, -1]")) return CG_OP_ERROR;
        x = t;
    }
    int32_t mm_in[2] = {x, w};
    if (h->decomp_node(d, "matmul", 2, mm_in, 1, &v, "transpose_b: 1")) return CG_OP_ERROR;
    if (call->n_inputs > 2) {
        int32_t add_in[2] = {v, h->decomp_input(d, 2)};
        if (add_in[1] < 0) return cg_op_fail(call, "cannot read input 2 (b) of linear");
        if (h->decomp_node(d, "add", 2, add_in, 1, &t, NULL)) return CG_OP_ERROR;
        v = t;
    }
    if (one_d) {
        if (h->decomp_node(d, "reshape", 1, &v, 1, &t, "shape: [-1]")) return CG_OP_ERROR;
        v = t;
    }
    return h->decomp_output(d, 0, v);
}

static const cg_kernel_def linear_kernels[] = {
    {sizeof(cg_kernel_def), CG_BACKEND_CPU, NULL, linear_cpu},
};
static const char *const linear_inputs[] = {"x", "w", "b", NULL};

const cg_op_def cg_op_linear = {
    .struct_size = sizeof(cg_op_def),
    .name = "linear",
    .doc = "Affine layer like torch.nn.functional.linear: y = x w^T + b for f32 "
           "x [..., IN] (at least 1 dim), weight w [OUT, IN] and optional bias b "
           "[OUT]; output [..., OUT]. Every leading row of x is computed in one "
           "matrix product. Decomposes into matmul (transpose_b: 1) and add.",
    .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .input_names = linear_inputs,
    .infer = linear_infer,
    .decompose = linear_decompose,
    .kernels = linear_kernels, .n_kernels = 1,
};
