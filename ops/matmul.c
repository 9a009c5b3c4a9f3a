/* Matrix products: matmul (batched, broadcasting) and linear (x W^T + b). */
#include "ops_cl.h"

#include "cpu/cpu_blas.h"

#include <stdint.h>
#include <string.h>

#include "matmul.cl.h"
#include "shape.cl.h"

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

/* ---- OpenCL: fills around cg_host_cl_sgemm ---- */

/* y[total] = 0, or y[rows, n] = b[n] on every row when b is not NULL. The
 * bias rows are shape.cl's copy_rows of b with a source row stride of 0:
 * a seq2seq plan runs that kernel anyway (concat), so its biases cost no
 * kernel of their own to compile (each is a program, cl_backend.h). */
static cg_op_status fill_cl(const cg_kernel_args *a, cl_mem y, cl_mem b, int64_t total, int64_t n) {
    const char *kn = b ? "copy_rows" : "fill_zero";
    if (total <= 0) return CG_OP_OK;
    const int wide = total >= INT32_MAX;
    cl_kernel k = cg_ops_cl_kernel(a, b ? cg_cl_shape : cg_cl_matmul, kn, wide, 1, NULL);
    if (!k) return CG_OP_ERROR;
    if (b) {
        if (cg_ops_cl_arg(a, k, kn, 0, sizeof b, &b) || cg_ops_cl_idx(a, k, kn, 1, wide, 0) ||
            cg_ops_cl_idx(a, k, kn, 2, wide, 0) || cg_ops_cl_arg(a, k, kn, 3, sizeof y, &y) ||
            cg_ops_cl_idx(a, k, kn, 4, wide, 0) || cg_ops_cl_idx(a, k, kn, 5, wide, n) ||
            cg_ops_cl_idx(a, k, kn, 6, wide, total / n) || cg_ops_cl_idx(a, k, kn, 7, wide, n))
            return CG_OP_ERROR;
    } else if (cg_ops_cl_arg(a, k, kn, 0, sizeof y, &y) || cg_ops_cl_idx(a, k, kn, 1, wide, total)) {
        return CG_OP_ERROR;
    }
    return cg_ops_cl_launch_1d(a, k, NULL, total, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* ---- matmul(a [..., M, K], b [..., K, N]) -> [..., M, N] ---- */

enum { MATMUL_TRANSPOSE_A, MATMUL_TRANSPOSE_B };

static const cg_attr_def matmul_attrs[] = {
    CG_ATTR(.name = "transpose_a", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "1: a's last two dims are [K, M] (use a^T)"),
    CG_ATTR(.name = "transpose_b", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "1: b's last two dims are [N, K] (use b^T)"),
};

static cg_op_status matmul_infer(cg_op_call *call) {
    const cg_tensor_desc *a = &call->inputs[0], *b = &call->inputs[1];
    int64_t ta = call->attrs[MATMUL_TRANSPOSE_A].i, tb = call->attrs[MATMUL_TRANSPOSE_B].i;
    char sa[128], sb[128], sk[32];
    if (cg_expect_input(call, 0, CG_OP_F32, -1) || cg_expect_input(call, 1, CG_OP_F32, -1)) return CG_OP_ERROR;
    if (ta != 0 && ta != 1) return cg_op_fail(call, "attribute transpose_a must be 0 or 1, got %lld", (long long)ta);
    if (tb != 0 && tb != 1) return cg_op_fail(call, "attribute transpose_b must be 0 or 1, got %lld", (long long)tb);
    cg_ops_format_dims(sa, sizeof sa, a);
    cg_ops_format_dims(sb, sizeof sb, b);
    if (a->ndim < 2) return cg_op_fail(call, "input 0 (a) must have at least 2 dims for matmul, got %s", sa);
    if (b->ndim < 2) return cg_op_fail(call, "input 1 (b) must have at least 2 dims for matmul, got %s", sb);
    int64_t m = ta ? a->dims[a->ndim - 1] : a->dims[a->ndim - 2];
    int64_t ka = ta ? a->dims[a->ndim - 2] : a->dims[a->ndim - 1];
    int64_t kb = tb ? b->dims[b->ndim - 1] : b->dims[b->ndim - 2];
    int64_t n = tb ? b->dims[b->ndim - 2] : b->dims[b->ndim - 1];
    if (!cg_dim_compatible(ka, kb)) {
        fmt_dim(sk, sizeof sk, ka);
        return cg_op_fail(call,
                          "input 1 (b) has shape %s, expected [%s%s%s%s] for matmul "
                          "with a %s%s",
                          sb, b->ndim > 2 ? "..., " : "", tb ? "N, K=" : "K=", sk, tb ? "" : ", N", sa,
                          ta ? " (transpose_a: 1)" : "");
    }
    cg_tensor_desc ba = *a, bb = *b, bo;
    ba.ndim = a->ndim - 2;
    bb.ndim = b->ndim - 2;
    if (cg_broadcast_shapes(call, &ba, &bb, &bo) != CG_OP_OK)
        return cg_op_fail(call, "batch dims of a %s and b %s do not broadcast for matmul", sa, sb);
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
static void batch_strides(const cg_tensor_desc *t, int nb, const int64_t *ob, int64_t mat, int64_t *st) {
    int tb = t->ndim - 2;
    int64_t s = mat;
    for (int i = nb - 1; i >= 0; i--) {
        int k = tb - nb + i;
        int64_t d = k >= 0 ? t->dims[k] : 1;
        st[i] = (d == 1 && ob[i] != 1) ? 0 : s;
        s *= d;
    }
}

/* Steps the batch index idx (row-major over the `nb` batch dims `dims`) to
 * the next batch, moving the operands' element offsets *oa and *ob along by
 * their batch strides sa and sb. */
static void batch_next(int nb, const int64_t *dims, const int64_t *sa, const int64_t *sb, int64_t *idx, int64_t *oa,
                       int64_t *ob) {
    for (int d = nb - 1; d >= 0; d--) {
        *oa += sa[d];
        *ob += sb[d];
        if (++idx[d] < dims[d]) return;
        *oa -= sa[d] * dims[d];
        *ob -= sb[d] * dims[d];
        idx[d] = 0;
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
        batch_next(nb, o->dims, sa, sb, idx, &oa, &ob);
    }
    return CG_OP_OK;
}

/* Per batch matrix product (M N K) from which the batches go to
 * cg_host_cl_sgemm one by one instead of the bmm kernel. */
#define MATMUL_CL_SGEMM_WORK ((int64_t)1 << 21)

/* At most this many rows per batch go to bmm_rows (no tiles). */
#define MATMUL_CL_FEW_ROWS 4

/* bmm_rows: one work-item per output element walking K (few rows). */
static cg_op_status bmm_rows(const cg_kernel_args *args, int ta, int tb, int wide, int64_t m, int64_t n, int64_t k,
                             int nb, const int64_t *sa, const int64_t *sb, int64_t batch) {
    static const char kn[] = "bmm_rows";
    const cg_op_call *call = args->call;
    char extra[48];
    snprintf(extra, sizeof extra, "-DTA=%d -DTB=%d", ta, tb);
    cl_kernel kern = cg_ops_cl_kernel(args, cg_cl_matmul, kn, wide, 1, extra);
    if (!kern) return CG_OP_ERROR;
    cl_mem ma = (cl_mem)args->in[0], mb = (cl_mem)args->in[1], mc = (cl_mem)args->out[0];
    const cg_ops_cl_arg_value mem[] = {CG_OPS_CL_ARG(ma), CG_OPS_CL_ARG(mb), CG_OPS_CL_ARG(mc)};
    cl_int cnb = nb;
    if (cg_ops_cl_args(args, kern, kn, 0, CG_OPS_CL_N_ARGS(mem), mem) || cg_ops_cl_idx(args, kern, kn, 3, wide, m) ||
        cg_ops_cl_idx(args, kern, kn, 4, wide, n) || cg_ops_cl_idx(args, kern, kn, 5, wide, k) ||
        cg_ops_cl_arg(args, kern, kn, 6, sizeof cnb, &cnb) ||
        cg_ops_cl_idx8(args, kern, kn, 7, wide, call->outputs[0].dims, nb) ||
        cg_ops_cl_idx8(args, kern, kn, 8, wide, sa, nb) || cg_ops_cl_idx8(args, kern, kn, 9, wide, sb, nb))
        return CG_OP_ERROR;
    /* a row of columns per work-group, within the kernel's limit */
    size_t wg = cg_ops_cl_work_group(args, kern, CG_OPS_CL_MAX_WORK_GROUP, 0);
    while (wg > 1 && wg / 2 >= (size_t)n) wg /= 2;
    size_t global[3] = {((size_t)n + wg - 1) / wg * wg, (size_t)m, (size_t)batch}, local[3] = {wg, 1, 1};
    return cg_ops_cl_launch(args, kern, NULL, 3, global, local);
}

/* One cg_host_cl_sgemm when the batches fold into M (b shared, a not
 * transposed) or there is one batch; else bmm, the batched tiled kernel,
 * for small matrices, and one cg_host_cl_sgemm per batch for large ones. */
static cg_op_status matmul_cl(const cg_kernel_args *args) {
    const cg_op_call *call = args->call;
    const cg_host_api *h = call->host;
    const cg_tensor_desc *a = &call->inputs[0], *b = &call->inputs[1], *o = &call->outputs[0];
    cl_mem ma = (cl_mem)args->in[0], mb = (cl_mem)args->in[1], mc = (cl_mem)args->out[0];
    int ta = call->attrs[MATMUL_TRANSPOSE_A].i != 0, tb = call->attrs[MATMUL_TRANSPOSE_B].i != 0;
    int nb = o->ndim - 2;
    int64_t m = o->dims[nb], n = o->dims[nb + 1];
    int64_t k = ta ? a->dims[a->ndim - 2] : a->dims[a->ndim - 1];
    int64_t lda = ta ? m : k, ldb = tb ? k : n;
    int64_t batch = prod_dims(o->dims, nb);
    if (batch == 0 || m == 0 || n == 0) return CG_OP_OK;
    if (k == 0) return fill_cl(args, mc, NULL, batch * m * n, n);
    int64_t b_batch = prod_dims(b->dims, b->ndim - 2);
    if ((!ta && b_batch == 1) || batch == 1)
        return h->cl_sgemm(args, ta, tb, batch * m, n, k, 1.0f, ma, 0, lda, mb, 0, ldb, 0.0f, mc, 0, n);
    int64_t sa[CG_MAX_DIMS], sb[CG_MAX_DIMS];
    batch_strides(a, nb, o->dims, m * k, sa);
    batch_strides(b, nb, o->dims, k * n, sb);
    if (m * n * k >= MATMUL_CL_SGEMM_WORK) {
        int64_t idx[CG_MAX_DIMS] = {0}, oa = 0, ob = 0;
        for (int64_t t = 0; t < batch; t++) {
            if (h->cl_sgemm(args, ta, tb, m, n, k, 1.0f, ma, (size_t)oa, lda, mb, (size_t)ob, ldb, 0.0f, mc,
                            (size_t)(t * m * n), n))
                return CG_OP_ERROR;
            batch_next(nb, o->dims, sa, sb, idx, &oa, &ob);
        }
        return CG_OP_OK;
    }
    int64_t biggest = cg_desc_numel(o);
    if (cg_desc_numel(a) > biggest) biggest = cg_desc_numel(a);
    if (cg_desc_numel(b) > biggest) biggest = cg_desc_numel(b);
    const int wide = biggest >= INT32_MAX;
    if (m <= MATMUL_CL_FEW_ROWS) return bmm_rows(args, ta, tb, wide, m, n, k, nb, sa, sb, batch);
    static const char kn[] = "bmm";
    /* Built for TS x TS tiles: from 16 down until the kernel's own limits
     * (group size, its local tiles) hold on this device. */
    cl_kernel kern = NULL;
    int ts = 16;
    for (; ts >= 1; ts /= 2) {
        char extra[64];
        snprintf(extra, sizeof extra, "-DTS=%d -DTA=%d -DTB=%d", ts, ta, tb);
        kern = cg_ops_cl_kernel(args, cg_cl_matmul, kn, wide, 1, extra);
        if (!kern) return CG_OP_ERROR;
        const size_t local[3] = {(size_t)ts, (size_t)ts, 1};
        if (cg_ops_cl_group_fits(args, kern, 3, local, 0)) break;
    }
    if (ts < 1) return cg_op_fail(args->call, "the device runs no work-group of bmm's tiles");
    const cg_ops_cl_arg_value mem[] = {CG_OPS_CL_ARG(ma), CG_OPS_CL_ARG(mb), CG_OPS_CL_ARG(mc)};
    cl_int cnb = nb;
    if (cg_ops_cl_args(args, kern, kn, 0, CG_OPS_CL_N_ARGS(mem), mem) || cg_ops_cl_idx(args, kern, kn, 3, wide, m) ||
        cg_ops_cl_idx(args, kern, kn, 4, wide, n) || cg_ops_cl_idx(args, kern, kn, 5, wide, k) ||
        cg_ops_cl_arg(args, kern, kn, 6, sizeof cnb, &cnb) || cg_ops_cl_idx8(args, kern, kn, 7, wide, o->dims, nb) ||
        cg_ops_cl_idx8(args, kern, kn, 8, wide, sa, nb) || cg_ops_cl_idx8(args, kern, kn, 9, wide, sb, nb))
        return CG_OP_ERROR;
    size_t global[3] = {(size_t)((n + ts - 1) / ts * ts), (size_t)((m + ts - 1) / ts * ts), (size_t)batch};
    size_t local[3] = {(size_t)ts, (size_t)ts, 1};
    return cg_ops_cl_launch(args, kern, NULL, 3, global, local);
}

static int32_t matmul_conform(int32_t index, cg_conform_case *c);

static const cg_kernel_def matmul_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = matmul_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = matmul_cl),
};
static const char *const matmul_inputs[] = {"a", "b", NULL};

const cg_op_def cg_op_matmul =
    CG_OP(.name = "matmul",
          .doc = "Batched matrix product of f32 tensors. a is [..., M, K] ([..., K, M] "
                 "with transpose_a: 1), b is [..., K, N] ([..., N, K] with transpose_b: "
                 "1); both need at least 2 dims. The leading (batch) dims of a and b "
                 "broadcast with NumPy rules, so a 2-D b is one matrix shared by every "
                 "batch of a. Output [batch..., M, N] with out = op(a) @ op(b); K = 0 "
                 "gives zeros. Attributes transpose_a, transpose_b: 0 or 1 (default 0).",
          .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .input_names = matmul_inputs,
          CG_ATTRS(matmul_attrs), .infer = matmul_infer, CG_KERNELS(matmul_kernels), .conform_case = matmul_conform);

/* ---- linear(x [..., IN], w [OUT, IN], b [OUT]?, w_scale [OUT] if w is i8) -> [..., OUT] ---- */

static int linear_q8(const cg_op_call *call) { return call->inputs[1].dtype == (cg_op_dtype)CG_I8; }

/* Index of the bias among the inputs, -1 without one. */
static int linear_bias(const cg_op_call *call) { return call->n_inputs > 2 + linear_q8(call) ? 2 : -1; }

static cg_op_status linear_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *w = &call->inputs[1];
    char sx[128], sw[128], sb[128], s1[32], s2[32];
    if (cg_expect_input(call, 0, CG_OP_F32, -1)) return CG_OP_ERROR;
    if (!cg_ops_weight_dtype(w->dtype) && !linear_q8(call))
        return cg_op_fail(call, "input 1 (w) must be f32, bf16, f16 or i8, got %s", cg_ops_dtype_name(w->dtype));
    if (!linear_q8(call) && call->n_inputs > 3)
        return cg_op_fail(call, "linear takes a 4th input (w_scale) only for an i8 w, got w %s",
                          cg_ops_dtype_name(w->dtype));
    cg_ops_format_dims(sx, sizeof sx, x);
    cg_ops_format_dims(sw, sizeof sw, w);
    if (x->ndim < 1) return cg_op_fail(call, "input 0 (x) must have at least 1 dim for linear, got %s", sx);
    if (cg_expect_input(call, 1, w->dtype, 2)) return CG_OP_ERROR;
    int64_t in = x->dims[x->ndim - 1];
    if (!cg_dim_compatible(w->dims[1], in))
        return cg_op_fail(call,
                          "input 1 (w) has shape %s, expected [OUT, IN=%s] for linear "
                          "with x %s",
                          sw, fmt_dim(s1, sizeof s1, in), sx);
    int64_t out = w->dims[0];
    if (linear_q8(call)) {
        const int64_t want[2] = {out, CG_DIM_UNKNOWN};
        const cg_tensor_desc *sc = call->n_inputs > 2 ? &call->inputs[call->n_inputs - 1] : NULL;
        if (cg_ops_expect_qweight(call, "input 1 (w)", w, want, sc, "the last input (w_scale)")) return CG_OP_ERROR;
    }
    const int ib = linear_bias(call);
    if (ib >= 0) {
        const cg_tensor_desc *b = &call->inputs[ib];
        if (cg_expect_input(call, ib, CG_OP_F32, 1)) return CG_OP_ERROR;
        if (!cg_dim_compatible(b->dims[0], out)) {
            cg_ops_format_dims(sb, sizeof sb, b);
            return cg_op_fail(call,
                              "input 2 (b) has shape %s, expected [OUT=%s] for linear "
                              "with w %s",
                              sb, fmt_dim(s2, sizeof s2, out), sw);
        }
        out = cg_dim_unify(out, b->dims[0]);
    }
    cg_tensor_desc *o = &call->outputs[0];
    *o = *x;
    o->dims[x->ndim - 1] = out;
    return CG_OP_OK;
}

/* Scratch of the int8 product: x quantized row by row. */
static size_t linear_workspace(const cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    if (!linear_q8(call) || x->ndim < 1) return 0;
    return cg_ops_project_scratch(call->inputs[1].dtype, prod_dims(x->dims, x->ndim - 1), call->inputs[1].dims[0],
                                  x->dims[x->ndim - 1]);
}

static cg_op_status linear_cpu(const cg_kernel_args *args) {
    const cg_op_call *call = args->call;
    const cg_tensor_desc *x = &call->inputs[0], *w = &call->inputs[1];
    const float *px = args->in[0];
    const float *pb = linear_bias(call) >= 0 ? args->in[2] : NULL;
    const float *ps = linear_q8(call) ? args->in[call->n_inputs - 1] : NULL;
    float *py = args->out[0];
    int64_t rows = prod_dims(x->dims, x->ndim - 1);
    int64_t in = x->dims[x->ndim - 1], out = w->dims[0];
    if (rows == 0 || out == 0) return CG_OP_OK;
    /* y = x w^T + b over every leading row at once (one row through GEMV:
     * cg_ops_project says why). */
    cg_ops_project_w(rows, out, in, px, in, args->in[1], w->dtype, in, ps, cg_ops_q8_sums(args, 0), pb, args->workspace,
                     py, out);
    return CG_OP_OK;
}

/* linear = matmul(x, w; transpose_b: 1) [+ b]; a 1-D x is viewed as one row
 * through reshape (matmul needs 2 dims). */
static cg_op_status linear_decompose(cg_decomp *d, const cg_op_call *call) {
    const cg_host_api *h = call->host;
    if (!h || !h->decomp_input || !h->decomp_node || !h->decomp_output)
        return cg_op_fail(call, "the host offers no decomposition services");
    if (call->inputs[1].dtype != CG_OP_F32) { /* widened once, then linear's f32 kernel */
        const int w = 1, s = call->n_inputs - 1;
        return cg_ops_decompose_widened(d, call, "linear", &w, &s, 1, linear_bias(call) >= 0 ? 3 : 2);
    }
    int one_d = call->inputs[0].ndim == 1;
    int32_t x = h->decomp_input(d, 0), w = h->decomp_input(d, 1), v, t;
    if (x < 0 || w < 0) return cg_op_fail(call, "cannot read the inputs of linear");
    if (one_d) {
        if (h->decomp_node(d, "reshape", 1, &x, 1, &t, "shape: [1, -1]")) return CG_OP_ERROR;
        x = t;
    }
    int32_t mm_in[2] = {x, w};
    if (h->decomp_node(d, "matmul", 2, mm_in, 1, &v, "transpose_b: 1")) return CG_OP_ERROR;
    if (linear_bias(call) >= 0) {
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

/* On CPU devices the own GEMM adds the bias in its one launch; elsewhere
 * the bias is broadcast into y first, then y += x w^T by cg_host_cl_sgemm
 * (beta = 1, the same sum); without a bias beta = 0. IN = 0 leaves the
 * bias or zeros. */
static cg_op_status linear_cl(const cg_kernel_args *args) {
    const cg_op_call *call = args->call;
    const cg_tensor_desc *x = &call->inputs[0], *w = &call->inputs[1];
    cl_mem mx = (cl_mem)args->in[0], mw = (cl_mem)args->in[1], my = (cl_mem)args->out[0];
    cl_mem mb = call->n_inputs > 2 ? (cl_mem)args->in[2] : NULL;
    int64_t rows = prod_dims(x->dims, x->ndim - 1);
    int64_t in = x->dims[x->ndim - 1], out = w->dims[0];
    if (rows == 0 || out == 0) return CG_OP_OK;
    if (mb && in > 0) { /* one launch where the device's own GEMM takes the bias */
        int done = 0;
        if (cg_host_cl_linear_bias(args, rows, out, in, mx, mw, mb, my, &done)) return CG_OP_ERROR;
        if (done) return CG_OP_OK;
    }
    if (mb || in == 0)
        if (fill_cl(args, my, mb, rows * out, out)) return CG_OP_ERROR;
    if (in == 0) return CG_OP_OK;
    return cg_host_cl_sgemm(args, 0, 1, rows, out, in, 1.0f, mx, 0, in, mw, 0, in, mb ? 1.0f : 0.0f, my, 0, out);
}

static int32_t linear_conform(int32_t index, cg_conform_case *c);

/* The row sums of an int8 weight, made once. */
static cg_op_status linear_create(const cg_kernel_args *a, void **state, size_t *bytes) {
    const int w = 1;
    return cg_ops_q8_state_create(a, &w, 1, state, bytes);
}

/* f32 weights only (CLBlast's SGEMM); narrow ones go to the decomposition. */
static int linear_cl_supports(const cg_kernel_args *a) { return a->call->inputs[1].dtype == CG_OP_F32; }

static const cg_kernel_def linear_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = linear_workspace, .run = linear_cpu, .create = linear_create,
              .destroy = cg_ops_q8_state_destroy),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = linear_cl, .supports = linear_cl_supports),
};
static const char *const linear_inputs[] = {"x", "w", "b", "w_scale", NULL};

const cg_op_def cg_op_linear =
    CG_OP(.name = "linear",
          .doc = "Affine layer like torch.nn.functional.linear: y = x w^T + b for f32 "
                 "x [..., IN] (at least 1 dim), weight w [OUT, IN] (f32, or bf16 / f16: "
                 "half the bytes, widened to f32 as read, on the CPU) and optional f32 bias "
                 "b [OUT]; output [..., OUT]. w may also be i8 with f32 scales w_scale [OUT], "
                 "one per row, as the last input (w = w_scale[o] * w_i8[o, :]: "
                 "linear(x, w, w_scale) or linear(x, w, b, w_scale)); the CPU then rounds each "
                 "row of x to 8 bits (its own scale, max|x| / 127) and sums integer products. "
                 "Every leading row of x is computed in one matrix product. Decomposes into "
                 "matmul (transpose_b: 1) and add; a 16-bit or i8 w into its f32 values (cast, "
                 "dequantized: once per plan, as they read only the weight) and linear on them.",
          .min_inputs = 2, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1, .input_names = linear_inputs,
          .infer = linear_infer, .decompose = linear_decompose, CG_KERNELS(linear_kernels),
          .conform_case = linear_conform);

/* ---- conformance cases ---- */

/* Up to 3 f32 inputs with values in [-2, 2]. */
typedef struct mm_case {
    const char *attrs;
    int n_in;
    int nd[3];
    int64_t d[3][CG_MAX_DIMS];
    double atol;
} mm_case;

static int32_t mm_fill(const mm_case *cases, int32_t n, int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= n) return 0;
    const mm_case *t = &cases[index];
    c->n_inputs = t->n_in;
    c->n_outputs = 1;
    c->attrs = t->attrs;
    c->atol = t->atol;
    for (int i = 0; i < t->n_in; i++) {
        c->inputs[i].dtype = CG_OP_F32;
        c->inputs[i].ndim = t->nd[i];
        memcpy(c->inputs[i].dims, t->d[i], sizeof t->d[i]);
        c->lo[i] = -2;
        c->hi[i] = 2;
    }
    return 1;
}

/* Sums of K products of values in [-2, 2] reach |y| ~ 1.2 sqrt(K) * 4/3;
 * the device and the CPU BLAS add them in different orders (tiles, FMA),
 * so the absolute error grows about like sqrt(K) ulps of the partial sums:
 * K = 128 gets atol 1e-3 and K = 1000 2e-3 (rtol stays 1e-4). */
#define MM_ATOL_K128 1e-3
#define MM_ATOL_K1000 2e-3

/* Paths of matmul_cl: one sgemm (batch 1, or b shared without
 * transpose_a), per-batch sgemm (M N K >= 2^21), bmm_rows (M <= 4) or the
 * bmm kernel. */
static const mm_case matmul_cases[] = {
    {NULL, 2, {2, 2}, {{1, 1}, {1, 1}}, 0},
    {NULL, 2, {2, 2}, {{3, 1}, {1, 3}}, 0},
    {NULL, 2, {2, 2}, {{1, 3}, {3, 1}}, 0},
    {NULL, 2, {2, 2}, {{3, 0}, {0, 4}}, 0}, /* K = 0: zeros */
    {NULL, 2, {2, 2}, {{3, 3}, {3, 3}}, 0},
    {"transpose_a: 1", 2, {3, 3}, {{2, 0, 3}, {1, 0, 5}}, 0}, /* K = 0, batched */
    {"transpose_a: 1", 2, {2, 2}, {{5, 3}, {5, 17}}, 0},
    {"transpose_b: 1", 2, {2, 2}, {{17, 5}, {3, 5}}, 0},
    {"transpose_a: 1, transpose_b: 1", 2, {2, 2}, {{5, 17}, {3, 5}}, 0},
    {NULL, 2, {3, 3}, {{3, 1, 1}, {3, 1, 1}}, 0},              /* bmm, 1 x 1 */
    {NULL, 2, {2, 3}, {{17, 5}, {2, 5, 3}}, 0},                /* a broadcast: bmm */
    {NULL, 2, {4, 4}, {{1, 4, 3, 5}, {2, 1, 5, 3}}, 0},        /* both broadcast */
    {"transpose_a: 1", 2, {3, 2}, {{4, 5, 3}, {5, 17}}, 0},    /* bmm, shared b */
    {NULL, 2, {4, 2}, {{2, 3, 17, 5}, {5, 7}}, 0},             /* folded into M */
    {"transpose_b: 1", 2, {4, 2}, {{2, 3, 17, 5}, {7, 5}}, 0}, /* folded, b^T */
    {"transpose_a: 1, transpose_b: 1", 2, {4, 3}, {{2, 3, 17, 5}, {3, 19, 17}}, 0},
    {"transpose_b: 1", 2, {4, 4}, {{2, 1, 33, 20}, {1, 3, 17, 20}}, 0},
    {NULL, 2, {3, 3}, {{8, 257, 17}, {8, 17, 33}}, 0},               /* bmm, 257 rows */
    {NULL, 2, {2, 2}, {{3, 1000}, {1000, 17}}, MM_ATOL_K1000},       /* K = 1000 */
    {NULL, 2, {2, 2}, {{1000, 17}, {17, 65}}, 0},                    /* M = 1000 */
    {NULL, 2, {3, 3}, {{2, 128, 128}, {2, 128, 128}}, MM_ATOL_K128}, /* per-batch sgemm */
    {"transpose_a: 1", 2, {3, 3}, {{2, 128, 128}, {1, 128, 128}}, MM_ATOL_K128},
    {"transpose_b: 1", 2, {3, 3}, {{2, 20, 1000}, {2, 30, 1000}}, MM_ATOL_K1000}, /* bmm */
    /* bmm_rows (M <= 4): an attention context, and its transposed forms */
    {NULL, 2, {3, 3}, {{8, 1, 20}, {8, 20, 300}}, 0},
    {"transpose_a: 1", 2, {3, 3}, {{8, 20, 1}, {8, 20, 300}}, 0},
    {"transpose_b: 1", 2, {3, 3}, {{8, 1, 20}, {8, 300, 20}}, 0},
    {"transpose_a: 1, transpose_b: 1", 2, {4, 4}, {{2, 3, 33, 4}, {1, 3, 70, 33}}, 0},
};

static int32_t matmul_conform(int32_t index, cg_conform_case *c) {
    return mm_fill(matmul_cases, (int32_t)(sizeof matmul_cases / sizeof matmul_cases[0]), index, c);
}

static const mm_case linear_cases[] = {
    {NULL, 3, {1, 2, 1}, {{1}, {1, 1}, {1}}, 0},
    {NULL, 2, {1, 2}, {{3}, {3, 3}}, 0}, /* 1-D x, no bias */
    {NULL, 3, {2, 2, 1}, {{1, 3}, {1, 3}, {1}}, 0},
    {NULL, 3, {2, 2, 1}, {{3, 0}, {5, 0}, {5}}, 0}, /* IN = 0: y = b */
    {NULL, 2, {2, 2}, {{3, 0}, {5, 0}}, 0},         /* IN = 0: zeros */
    {NULL, 3, {2, 2, 1}, {{3, 3}, {3, 3}, {3}}, 0},
    {NULL, 3, {2, 2, 1}, {{17, 5}, {7, 5}, {7}}, 0},
    {NULL, 3, {3, 2, 1}, {{2, 3, 17}, {257, 17}, {257}}, 0},
    {NULL, 2, {3, 2}, {{2, 3, 17}, {257, 17}}, 0},
    {NULL, 3, {2, 2, 1}, {{1000, 32}, {17, 32}, {17}}, 0},
    {NULL, 3, {2, 2, 1}, {{1, 1000}, {100, 1000}, {100}}, MM_ATOL_K1000}, /* GEMV */
    {NULL, 3, {2, 2, 1}, {{3, 1000}, {64, 1000}, {64}}, MM_ATOL_K1000},
};

/* 16-bit weights: the CPU widens them in registers, OpenCL casts them (the
 * decomposition); K with a tail past the vector width. */
static const struct {
    mm_case c;
    cg_dtype wdt;
} linear_w16_cases[] = {
    {{NULL, 3, {2, 2, 1}, {{1, 37}, {40, 37}, {40}}, 0}, CG_BF16},
    {{NULL, 3, {2, 2, 1}, {{5, 64}, {33, 64}, {33}}, 0}, CG_BF16},
    {{NULL, 2, {3, 2}, {{2, 3, 37}, {19, 37}}, 0}, CG_F16},
    {{NULL, 3, {2, 2, 1}, {{1, 1000}, {100, 1000}, {100}}, MM_ATOL_K1000}, CG_F16},
};

/* int8 weights with scales in [0.001, 0.004] (w within +-0.5), x in
 * [-1, 1]: the CPU rounds x to 8 bits, the decomposition (OpenCL, and the
 * reference) multiplies the dequantized weights in f32, so they differ by
 * the rounding of x: per product at most |w| / 254, summed over K with
 * random signs; atol is about 8 standard deviations of that sum. */
static const mm_case linear_q8_cases[] = {
    {NULL, 3, {2, 2, 1}, {{1, 37}, {40, 37}, {40}}, 0.02},
    {NULL, 2, {2, 2}, {{5, 64}, {33, 64}}, 0.02}, /* no bias: linear(x, w, w_scale) */
    {NULL, 3, {3, 2, 1}, {{2, 3, 129}, {19, 129}, {19}}, 0.03},
    {NULL, 3, {2, 2, 1}, {{1, 1000}, {100, 1000}, {100}}, 0.08}, /* GEMV */
    {NULL, 3, {2, 2, 1}, {{3, 0}, {5, 0}, {5}}, 0},              /* IN = 0: y = b */
};

static int32_t linear_conform(int32_t index, cg_conform_case *c) {
    const int32_t n = (int32_t)(sizeof linear_cases / sizeof linear_cases[0]);
    const int32_t n16 = (int32_t)(sizeof linear_w16_cases / sizeof linear_w16_cases[0]);
    const int32_t n8 = (int32_t)(sizeof linear_q8_cases / sizeof linear_q8_cases[0]);
    if (index < n) return mm_fill(linear_cases, n, index, c);
    index -= n;
    if (index < n16) {
        mm_fill(&linear_w16_cases[index].c, 1, 0, c);
        c->inputs[1].dtype = (cg_op_dtype)linear_w16_cases[index].wdt;
        return 1;
    }
    index -= n16;
    if (index >= n8) return 0;
    mm_fill(&linear_q8_cases[index], 1, 0, c);
    for (int i = 0; i < c->n_inputs; i++) c->lo[i] = -1, c->hi[i] = 1;
    cg_ops_case_q8_weight(c, 1);
    return 1;
}
