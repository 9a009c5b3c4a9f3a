/* rms_norm: y = x / sqrt(mean(x^2) + epsilon) * weight over x's last dim
 * (T5's and Llama's RMSNorm, ONNX RMSNormalization over the last axis):
 * one op where the exported formula is six (pow, reduce_mean, add, sqrt,
 * div, mul, mul; the graph rewrite "norm" finds it). Computed as the
 * formula reads: r = 1 / sqrt(mean + eps) in f32, then (x * r) * weight,
 * the mean of the squares summed in double (a fixed order: the same bits
 * every run and for any thread count). */
#include "ops_cl.h"

#include <math.h>
#include <stdint.h>

#include "cpu/cpu_clones.h"
#include "cpu/cpu_pool.h"
#include "rms_norm.cl.h"

enum { RMS_EPSILON };

static const cg_attr_def rms_attrs[] = {
    CG_ATTR(.name = "epsilon", .type = CG_ATTR_FLOAT, .default_float = 1e-6,
            .doc = "added to the mean of the squares before the square root (>= 0)"),
};

static cg_op_status rms_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *w = &call->inputs[1];
    if (cg_expect_input(call, 0, CG_OP_F32, -1) || cg_expect_input(call, 1, CG_OP_F32, 1)) return CG_OP_ERROR;
    if (x->ndim < 1) return cg_op_fail(call, "x must have at least 1 dim");
    const int64_t n = x->dims[x->ndim - 1];
    if (cg_dim_known(n) && cg_dim_known(w->dims[0]) && w->dims[0] != n)
        return cg_op_fail(call, "weight has %lld elements, x's last dim %lld", (long long)w->dims[0], (long long)n);
    const double eps = call->attrs[RMS_EPSILON].f;
    if (!(eps >= 0) || isinf(eps)) return cg_op_fail(call, "epsilon must be finite and >= 0, got %g", eps);
    call->outputs[0] = *x;
    return CG_OP_OK;
}

typedef struct rms_job {
    const float *x, *w;
    float *y;
    int64_t n;
    float eps;
} rms_job;

/* Rows [r0, r1): the squares summed in 8 interleaved double sums. */
static CG_CPU_CLONES void rms_rows(void *ctx, size_t r0, size_t r1) {
    const rms_job *j = ctx;
    const int64_t n = j->n;
    for (size_t r = r0; r < r1; r++) {
        const float *x = j->x + (int64_t)r * n;
        float *y = j->y + (int64_t)r * n;
        double p[8] = {0}, s = 0;
        int64_t i = 0;
        for (; i + 8 <= n; i += 8)
            for (int l = 0; l < 8; l++) p[l] += (double)x[i + l] * x[i + l];
        for (int l = 0; l < 8; l++) s += p[l];
        for (; i < n; i++) s += (double)x[i] * x[i];
        const float rs = 1.0f / sqrtf((float)(s / (double)n) + j->eps);
        for (i = 0; i < n; i++) y[i] = x[i] * rs * j->w[i];
    }
}

static cg_op_status rms_cpu(const cg_kernel_args *a) {
    const cg_tensor_desc *x = &a->call->inputs[0];
    const int64_t n = x->dims[x->ndim - 1], rows = n ? cg_desc_numel(x) / n : 0;
    if (rows == 0) return CG_OP_OK;
    rms_job j = {a->in[0], a->in[1], a->out[0], n, (float)a->call->attrs[RMS_EPSILON].f};
    cg_cpu_parallel_for((size_t)rows, (size_t)(n >= 4096 ? 1 : 4096 / n + 1), rms_rows, &j);
    return CG_OP_OK;
}

/* Rows of up to RMS_ITEM_ROW elements on a CPU device, or few of them:
 * one work-item per row (no barrier: a CPU device runs it as a plain loop,
 * a GPU's few short rows are launch-bound); else one work-group per row,
 * reduced in local memory. */
#define RMS_ITEM_ROW 256
#define RMS_ITEM_ROWS_ANY 1024
static cg_op_status rms_cl(const cg_kernel_args *a) {
    const cg_tensor_desc *x = &a->call->inputs[0];
    const int64_t n = x->dims[x->ndim - 1], rows = n ? cg_desc_numel(x) / n : 0;
    if (rows == 0) return CG_OP_OK;
    const int by_item = n <= RMS_ITEM_ROW && (rows <= RMS_ITEM_ROWS_ANY || cg_ops_cl_is_cpu(a));
    const char *name = by_item ? "rms_norm_rows" : "rms_norm_group";
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_rms_norm, name, rows * n > INT32_MAX, 0, NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem mx = (cl_mem)a->in[0], mw = (cl_mem)a->in[1], my = (cl_mem)a->out[0];
    const cl_long ln = n, lr = rows;
    const cl_float eps = (cl_float)a->call->attrs[RMS_EPSILON].f;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(mx), CG_OPS_CL_ARG(mw), CG_OPS_CL_ARG(my),
                                     CG_OPS_CL_ARG(ln), CG_OPS_CL_ARG(lr), CG_OPS_CL_ARG(eps)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    if (by_item) return cg_ops_cl_launch_1d(a, k, NULL, rows, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
    const size_t local = cg_ops_cl_fit_work_group(cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 1), n, 1);
    if (cg_ops_cl_arg(a, k, name, 6, local * sizeof(cl_float), NULL)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, (int64_t)((size_t)rows * local), local);
}

#define D(...) \
    { __VA_ARGS__ }
/* rows of T5's width, odd widths, a row at the work-item / work-group
 * boundary and past it, one element, no rows, and large values */
static const cg_ops_case rms_cases[] = {
    {2, {{CG_OP_F32, 3, D(3, 5, 32), -2, 2}, {CG_OP_F32, 1, D(32), -2, 2}}, NULL},
    {2, {{CG_OP_F32, 2, D(7, 33), -3, 3}, {CG_OP_F32, 1, D(33), -2, 2}}, "epsilon: 1e-5"},
    {2, {{CG_OP_F32, 2, D(4, 256), -1, 1}, {CG_OP_F32, 1, D(256), -2, 2}}, NULL},
    {2, {{CG_OP_F32, 2, D(3, 1000), -4, 4}, {CG_OP_F32, 1, D(1000), -2, 2}}, NULL},
    {2, {{CG_OP_F32, 1, D(1), -2, 2}, {CG_OP_F32, 1, D(1), -2, 2}}, "epsilon: 0.25"},
    {2, {{CG_OP_F32, 2, D(0, 8), -2, 2}, {CG_OP_F32, 1, D(8), -2, 2}}, NULL},
    {2, {{CG_OP_F32, 2, D(129, 64), 100, 300}, {CG_OP_F32, 1, D(64), -2, 2}}, NULL},
};

static int32_t rms_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= (int32_t)(sizeof rms_cases / sizeof rms_cases[0])) return 0;
    cg_ops_fill_case(&rms_cases[i], 1, c);
    return 1;
}

static const char *const rms_inputs[] = {"x", "weight", NULL};
static const cg_kernel_def rms_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = rms_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = rms_cl),
};
const cg_op_def cg_op_rms_norm =
    CG_OP(.name = "rms_norm",
          .doc = "RMS normalization of f32 x over its last dim N: y = x * (1 / sqrt(mean(x^2) + epsilon)) * "
                 "weight, weight f32 [N] (T5's and Llama's RMSNorm; the rewrite \"norm\" makes it from the "
                 "exported formula).",
          .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .input_names = rms_inputs,
          CG_ATTRS(rms_attrs), .infer = rms_infer, CG_KERNELS(rms_kernels), .conform_case = rms_conform);
