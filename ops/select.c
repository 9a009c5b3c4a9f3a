/* log_softmax_topk: the k best entries of log_softmax(x) along the last
 * axis without writing the whole distribution. A decoder only needs the
 * token ids and log-probabilities it keeps (greedy: 1, beam k: 2k per live
 * hypothesis); writing, reading back and scanning V log-probabilities per
 * row costs more than computing them. */
#include "ops_cl.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cpu/cpu_math.h"
#include "cpu/cpu_pool.h"
#include "cpu/cpu_scan.h"

#include "select.cl.h"

enum { LST_K };

static const cg_attr_def lst_attrs[] = {
    CG_ATTR(.name = "k", .type = CG_ATTR_INT, .required = 1, .doc = "entries to keep per row (0 <= k <= N)"),
};

/* k is attrs[0], as topk's: the same inference. */
static cg_op_status lst_infer(cg_op_call *call) { return cg_ops_topk_infer(call, "log_softmax_topk"); }

/* ---- CPU ----
 *
 * Per row: the maximum, the sum of exponentials (as log_softmax computes
 * them, so the kept values are bit-identical to log_softmax's), then one
 * selection pass. Selection keeps a heap of the k best (value, index) by
 * topk's order (larger value first, then lower index), the root ranking
 * last. Elements come in index order, so a newcomer ties-loses to the root;
 * and since v = fl(x + c) is monotone in x, an element with x <= x[root]
 * cannot beat the root: the scan only stops at x > x[root], which a vector
 * compare finds 16 elements at a time. */

typedef struct lst_ent {
    float v;
    int32_t i;
} lst_ent;

/* a ranks before b: larger value first, then lower index (values here are
 * never NaN). */
static inline int lst_before(lst_ent a, lst_ent b) { return a.v > b.v || (a.v == b.v && a.i < b.i); }

static void lst_sift(lst_ent *h, int64_t size, int64_t i) {
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < size && lst_before(h[w], h[l])) w = l;
        if (r < size && lst_before(h[w], h[r])) w = r;
        if (w == i) return;
        lst_ent t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

/* One row; `h` has room for k entries. */
static void lst_row(const float *x, int64_t n, int64_t k, lst_ent *h, float *vals, int32_t *idx) {
    const float mx = cg_cpu_max(x, (size_t)n);
    if (!(mx > -INFINITY && mx < INFINITY)) {
        /* log_softmax gives -inf everywhere when every entry is -inf, NaN
         * everywhere for a NaN or +inf; ties go to the lower index. */
        const float fill = mx == -INFINITY ? -INFINITY : NAN;
        for (int64_t j = 0; j < k; j++) {
            vals[j] = fill;
            idx[j] = (int32_t)j;
        }
        return;
    }
    const double sum = cg_cpu_exp_shift_sum(x, mx, NULL, (size_t)n);
    const double c = -((double)mx + log(sum)); /* log_softmax(x) = fl(x + c) */
    for (int64_t j = 0; j < k; j++) h[j] = (lst_ent){(float)((double)x[j] + c), (int32_t)j};
    for (int64_t j = k / 2; j-- > 0;) lst_sift(h, k, j);
    for (int64_t j = k; j < n;) {
        j += (int64_t)cg_cpu_first_above(x + j, (size_t)(n - j), x[h[0].i]);
        if (j >= n) break;
        lst_ent e = {(float)((double)x[j] + c), (int32_t)j};
        if (e.v > h[0].v) {
            h[0] = e;
            lst_sift(h, k, 0);
        }
        j++;
    }
    /* Heap sort into ranking order. */
    for (int64_t s = k - 1; s > 0; s--) {
        lst_ent t = h[0];
        h[0] = h[s];
        h[s] = t;
        lst_sift(h, s, 0);
    }
    for (int64_t j = 0; j < k; j++) {
        vals[j] = h[j].v;
        idx[j] = h[j].i;
    }
}

typedef struct lst_job {
    const float *x;
    float *vals;
    int32_t *idx;
    lst_ent *heap; /* k per row, in the workspace */
    int64_t n, k;
} lst_job;

static void lst_rows(void *p, size_t begin, size_t end) {
    const lst_job *j = p;
    for (size_t r = begin; r < end; r++)
        lst_row(j->x + (int64_t)r * j->n, j->n, j->k, j->heap + (int64_t)r * j->k, j->vals + (int64_t)r * j->k,
                j->idx + (int64_t)r * j->k);
}

static void lst_shape(const cg_op_call *call, int64_t *rows, int64_t *n, int64_t *k) {
    const cg_tensor_desc *x = &call->inputs[0];
    *n = x->dims[x->ndim - 1];
    *k = call->attrs[LST_K].i;
    *rows = 1;
    for (int i = 0; i < x->ndim - 1; i++) *rows *= x->dims[i];
}

static size_t lst_cpu_workspace(const cg_op_call *call) {
    int64_t rows, n, k;
    lst_shape(call, &rows, &n, &k);
    return (size_t)(rows * k) * sizeof(lst_ent);
}

static cg_op_status lst_cpu(const cg_kernel_args *args) {
    const cg_op_call *call = args->call;
    int64_t rows, n, k;
    lst_shape(call, &rows, &n, &k);
    if (k > n) return cg_op_fail(call, "k=%lld is larger than the last dim %lld", (long long)k, (long long)n);
    if (k == 0 || rows == 0) return CG_OP_OK;
    lst_job j = {args->in[0], args->out[0], args->out[1], args->workspace, n, k};
    /* Rows of a few thousand elements are worth handing to another thread. */
    const size_t grain = (size_t)(n >= 4096 ? 1 : 4096 / n + 1);
    cg_cpu_parallel_for((size_t)rows, grain, lst_rows, &j);
    return CG_OP_OK;
}

/* ---- OpenCL: lsm_topk_wg, one work-group per row (see select.cl) ---- */

static cg_op_status lst_cl(const cg_kernel_args *args) {
    static const char name[] = "lsm_topk_wg";
    const cg_op_call *call = args->call;
    int64_t rows, n, k;
    lst_shape(call, &rows, &n, &k);
    if (k > n) return cg_op_fail(call, "k=%lld is larger than the last dim %lld", (long long)k, (long long)n);
    if (k == 0 || rows == 0) return CG_OP_OK;
    cl_kernel kn = cg_ops_cl_kernel(args, cg_cl_select, name, rows * n > INT32_MAX, 0, NULL);
    if (!kn) return CG_OP_ERROR;
    cl_mem px = (cl_mem)args->in[0], pv = (cl_mem)args->out[0], pi = (cl_mem)args->out[1];
    cl_long lr = rows, ln = n, lk = k;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(px), CG_OPS_CL_ARG(pv), CG_OPS_CL_ARG(pi),
                                     CG_OPS_CL_ARG(lr), CG_OPS_CL_ARG(ln), CG_OPS_CL_ARG(lk)};
    if (cg_ops_cl_args(args, kn, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    /* Each of the k rounds reduces over the group in log2(local) barrier
     * steps; on a CPU device each step is a pass over all the group's items
     * (at 256 items, 16 rounds took half the kernel's time on PoCL), while
     * 8 items still keep 64 candidates between rescans. */
    const int cpu = cg_ops_cl_is_cpu(args);
    size_t local = cg_ops_cl_work_group(args, kn, cpu ? 8 : CG_OPS_CL_MAX_WORK_GROUP, 1);
    local = cg_ops_cl_fit_work_group(local, n, cpu ? 1 : 32);
    if (cg_ops_cl_arg(args, kn, name, 6, local * sizeof(cl_float), NULL) ||
        cg_ops_cl_arg(args, kn, name, 7, local * sizeof(cl_int), NULL))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(args, kn, NULL, rows * (int64_t)local, local);
}

/* The reference meaning: topk(log_softmax(x)). */
static cg_op_status lst_decompose(cg_decomp *d, const cg_op_call *call) {
    cg_ops_emitter e = {d, call, CG_OP_OK};
    int32_t x = cg_ops_emit_input(&e, 0);
    int32_t lp = cg_ops_emit(&e, "log_softmax", "axis: -1", x, -1, -1);
    if (e.st != CG_OP_OK) return e.st;
    char attrs[48];
    snprintf(attrs, sizeof attrs, "k: %lld", (long long)call->attrs[LST_K].i);
    int32_t out[2];
    e.st = call->host->decomp_node(d, "topk", 1, &lp, 2, out, attrs);
    cg_ops_emit_output(&e, 0, out[0]);
    cg_ops_emit_output(&e, 1, out[1]);
    return e.st;
}

/* Conformance: k from 1 to N over rows short and long (one work-item per
 * element, many elements per work-item), values in [-2, 2] and, for every
 * other case, integers in [-3, 3] where many entries tie. */
#define D(...) \
    { __VA_ARGS__ }
#define LST_CASE(nd, d, attrs, lo, hi) \
    { 1, {{CG_OP_F32, nd, d, lo, hi}}, attrs }
static const cg_ops_case lst_cases[] = {
    LST_CASE(1, D(1), "k: 1", -2, 2),        LST_CASE(1, D(17), "k: 5", -2, 2),
    LST_CASE(2, D(4, 17), "k: 17", -2, 2),   LST_CASE(3, D(2, 3, 40), "k: 1", -2, 2),
    LST_CASE(2, D(3, 257), "k: 10", -2, 2),  LST_CASE(2, D(5, 1000), "k: 1", -2, 2),
    LST_CASE(2, D(5, 1000), "k: 40", -2, 2), LST_CASE(2, D(2, 300), "k: 300", -2, 2),
};
#define N_LST_CASES ((int32_t)(sizeof lst_cases / sizeof lst_cases[0]))

static int32_t lst_conform(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= 2 * N_LST_CASES) return 0;
    cg_ops_case t = lst_cases[index / 2];
    if (index % 2) {
        /* Integer values: ties, broken by the lower index on every device. */
        t.in[0].lo = -3;
        t.in[0].hi = 3;
    }
    cg_ops_fill_case(&t, 2, c);
    return 1;
}

static const cg_kernel_def lst_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = lst_cpu_workspace, .run = lst_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = lst_cl),
};
static const char *const lst_inputs[] = {"x", NULL};

const cg_op_def cg_op_log_softmax_topk =
    CG_OP(.name = "log_softmax_topk",
          .doc = "The k largest entries of log_softmax(x) along the last axis of f32 x "
                 "[..., N], i.e. topk(log_softmax(x, axis -1), k) without writing the "
                 "whole log_softmax: output 0 values f32 [..., k] sorted descending "
                 "(equal to log_softmax's values), output 1 indices i32 [..., k]. Equal "
                 "values are ordered by lower index first; a row with a NaN or +inf "
                 "gives NaN values (indices 0..k-1), a row of -inf gives -inf. "
                 "Attribute k (int, required) must satisfy 0 <= k <= N.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 2, .max_outputs = 2, .input_names = lst_inputs,
          CG_ATTRS(lst_attrs), .infer = lst_infer, .decompose = lst_decompose, CG_KERNELS(lst_kernels),
          .conform_case = lst_conform);
