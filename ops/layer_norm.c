/* layer_norm: y = (x - mean) / sqrt(var + epsilon) * gamma + beta over the
 * trailing dims from `axis` (torch.nn.LayerNorm, ONNX LayerNormalization):
 * one op where the formula would be nine. */
#include "ops_cl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_clones.h"
#include "norm.cl.h"

enum { LN_AXIS, LN_EPSILON };

static const cg_attr_def layer_norm_attrs[] = {
    CG_ATTR(.name = "axis", .type = CG_ATTR_INT, .default_int = -1,
            .doc = "the first normalized dim: dims axis.. form each row (negative counts from the end)"),
    CG_ATTR(.name = "epsilon", .type = CG_ATTR_FLOAT, .default_float = 1e-5,
            .doc = "added to the variance before the square root (>= 0)"),
};

/* Rows and their length N for x split at axis. */
static void ln_rows(const cg_op_call *call, int64_t *rows, int64_t *n) {
    const cg_tensor_desc *x = &call->inputs[0];
    const int axis = cg_norm_axis(call->attrs[LN_AXIS].i, x->ndim);
    *rows = *n = 1;
    for (int i = 0; i < x->ndim; i++) *(i < axis ? rows : n) *= x->dims[i];
}

static cg_op_status layer_norm_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    if (cg_expect_input(call, 0, CG_OP_F32, -1)) return CG_OP_ERROR;
    const int axis = cg_norm_axis(call->attrs[LN_AXIS].i, x->ndim);
    if (axis < 0)
        return cg_op_fail(call, "axis %lld is out of range for x with %d dims", (long long)call->attrs[LN_AXIS].i,
                          x->ndim);
    const double eps = call->attrs[LN_EPSILON].f;
    if (!(eps >= 0) || isinf(eps)) return cg_op_fail(call, "epsilon must be finite and >= 0, got %g", eps);
    /* gamma and beta: [N] over the normalized dims (or their exact shape) */
    int64_t n = 1;
    int known = 1;
    for (int i = axis; i < x->ndim; i++) {
        known &= cg_dim_known(x->dims[i]);
        n *= x->dims[i];
    }
    if (call->n_inputs > 3) {
        const cg_tensor_desc *r = &call->inputs[3];
        if (cg_expect_input(call, 3, CG_OP_F32, x->ndim)) return CG_OP_ERROR;
        for (int d = 0; d < x->ndim; d++)
            if (cg_dim_known(x->dims[d]) && cg_dim_known(r->dims[d]) && r->dims[d] != x->dims[d])
                return cg_op_fail(call, "input 3 (residual) must have x's shape: dim %d is %lld, x's %lld", d,
                                  (long long)r->dims[d], (long long)x->dims[d]);
    }
    for (int i = 1; i < call->n_inputs && i < 3; i++) {
        const cg_tensor_desc *p = &call->inputs[i];
        if (cg_expect_input(call, i, CG_OP_F32, -1)) return CG_OP_ERROR;
        int64_t pn = 1;
        int pk = 1;
        for (int d = 0; d < p->ndim; d++) pk &= cg_dim_known(p->dims[d]), pn *= p->dims[d];
        if (known && pk && pn != n)
            return cg_op_fail(call, "input %d (%s) has %lld elements, the normalized dims %lld", i,
                              i == 1 ? "gamma" : "beta", (long long)pn, (long long)n);
    }
    if (call->n_outputs > 1 && call->n_inputs < 4)
        return cg_op_fail(call, "output 1 (sum) is x + residual: it needs input 3 (residual)");
    for (int k = 0; k < call->n_outputs; k++) call->outputs[k] = *x;
    return CG_OP_OK;
}

/* Sums of a row in double, in LN_LANES interleaved partial sums (a fixed
 * order, so the result is the same every run; independent chains, so the
 * adds overlap and vectorise). */
#define LN_LANES 8

#define ROW_SUM(NAME, TERM)                                          \
    static inline double NAME(const float *x, int64_t n, double c) { \
        double p[LN_LANES] = {0}, s = 0;                             \
        int64_t j = 0;                                               \
        for (; j + LN_LANES <= n; j += LN_LANES)                     \
            for (int l = 0; l < LN_LANES; l++) {                     \
                const double v = x[j + l];                           \
                p[l] += TERM;                                        \
            }                                                        \
        for (int l = 0; l < LN_LANES; l++) s += p[l];                \
        for (; j < n; j++) {                                         \
            const double v = x[j];                                   \
            s += TERM;                                               \
        }                                                            \
        return s;                                                    \
    }
ROW_SUM(row_sum, v + 0 * c)
ROW_SUM(row_sq_dev, (v - c) * (v - c))

/* Mean and variance in double (two passes: no cancellation in rows of
 * large values), rounded to f32 once; the row itself is then computed in
 * f32, as ONNX Runtime and the OpenCL kernel do. */
static CG_CPU_CLONES cg_op_status layer_norm_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    int64_t rows, n;
    ln_rows(call, &rows, &n);
    const float *x = a->in[0], *g = call->n_inputs > 1 ? a->in[1] : NULL, *b = call->n_inputs > 2 ? a->in[2] : NULL;
    const float *res = call->n_inputs > 3 ? a->in[3] : NULL;
    float *y = a->out[0], *sum = call->n_outputs > 1 ? a->out[1] : NULL;
    const double eps = call->attrs[LN_EPSILON].f;
    for (int64_t r = 0; r < rows && n > 0; r++) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        if (res) { /* x + residual, rounded as the add it replaces (kept in y or the sum output) */
            float *sr = sum ? sum + r * n : yr;
            for (int64_t j = 0; j < n; j++) sr[j] = xr[j] + res[r * n + j];
            xr = sr;
        }
        const double mean = row_sum(xr, n, 0) / (double)n;
        const float mf = (float)mean, rs = (float)(1.0 / sqrt(row_sq_dev(xr, n, mean) / (double)n + eps));
        if (g && b)
            for (int64_t j = 0; j < n; j++) yr[j] = (xr[j] - mf) * rs * g[j] + b[j];
        else if (g)
            for (int64_t j = 0; j < n; j++) yr[j] = (xr[j] - mf) * rs * g[j];
        else
            for (int64_t j = 0; j < n; j++) yr[j] = (xr[j] - mf) * rs;
    }
    return CG_OP_OK;
}

/* Rows of up to LN_ITEM_ROW elements on a CPU device, or few of them:
 * layer_norm_rows, one work-item per row (on PoCL a [27, 32] LayerNorm
 * took 22 us of device time as one barrier-synchronised work-group per
 * row); else one work-group per row, its size a power of two no wider
 * than the row needs. */
#define LN_ITEM_ROW 256
#define LN_ITEM_ROWS_ANY 1024
static cg_op_status layer_norm_cl(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    int64_t rows, n;
    ln_rows(call, &rows, &n);
    if (rows == 0 || n == 0) return CG_OP_OK;
    const int by_item = n <= LN_ITEM_ROW && (rows <= LN_ITEM_ROWS_ANY || cg_ops_cl_is_cpu(a));
    const char *name = by_item ? "layer_norm_rows" : "layer_norm";
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_norm, name, rows * n > INT32_MAX, 0, NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem x = (cl_mem)a->in[0], y = (cl_mem)a->out[0];
    cl_mem g = call->n_inputs > 1 ? (cl_mem)a->in[1] : x, b = call->n_inputs > 2 ? (cl_mem)a->in[2] : x;
    const cl_int has_g = call->n_inputs > 1, has_b = call->n_inputs > 2;
    const cl_long ln = n;
    const cl_float eps = (cl_float)call->attrs[LN_EPSILON].f;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(x),     CG_OPS_CL_ARG(g), CG_OPS_CL_ARG(b),  CG_OPS_CL_ARG(has_g),
                                     CG_OPS_CL_ARG(has_b), CG_OPS_CL_ARG(y), CG_OPS_CL_ARG(ln), CG_OPS_CL_ARG(eps)};
    /* the row kernel takes the number of rows before eps */
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v) - by_item, v)) return CG_OP_ERROR;
    const cl_int has_res = call->n_inputs > 3, has_sum = call->n_outputs > 1;
    const cl_mem res = has_res ? (cl_mem)a->in[3] : x, sum = has_sum ? (cl_mem)a->out[1] : y;
    const cg_ops_cl_arg_value rv[] = {CG_OPS_CL_ARG(res), CG_OPS_CL_ARG(has_res), CG_OPS_CL_ARG(sum),
                                      CG_OPS_CL_ARG(has_sum)};
    if (cg_ops_cl_args(a, k, name, 9, CG_OPS_CL_N_ARGS(rv), rv)) return CG_OP_ERROR;
    if (by_item) {
        const cl_long lr = rows;
        if (cg_ops_cl_arg(a, k, name, 7, sizeof lr, &lr) || cg_ops_cl_arg(a, k, name, 8, sizeof eps, &eps))
            return CG_OP_ERROR;
        return cg_ops_cl_launch_1d(a, k, NULL, rows, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
    }
    size_t local = cg_ops_cl_fit_work_group(cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 1), n, 1);
    if (cg_ops_cl_arg(a, k, name, 8, local * sizeof(cl_float), NULL)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, (int64_t)((size_t)rows * local), local);
}

#define D(...) \
    { __VA_ARGS__ }
static const cg_ops_case layer_norm_cases[] = {
    {3, {{CG_F32, 2, D(4, 64), -2, 2}, {CG_F32, 1, D(64), -2, 2}, {CG_F32, 1, D(64), -2, 2}}, NULL},
    {1, {{CG_F32, 1, D(1), -2, 2}}, NULL},
    {2, {{CG_F32, 3, D(2, 3, 5), -2, 2}, {CG_F32, 2, D(3, 5), -2, 2}}, "axis: 1, epsilon: 0.001"},
    {3,
     {{CG_F32, 3, D(3, 7, 1000), 100, 101}, {CG_F32, 1, D(1000), -2, 2}, {CG_F32, 1, D(1000), -2, 2}},
     "epsilon: 1e-12"},
    {3, {{CG_F32, 2, D(0, 8), -2, 2}, {CG_F32, 1, D(8), -2, 2}, {CG_F32, 1, D(8), -2, 2}}, NULL},
    {3, {{CG_F32, 2, D(257, 33), -30, 30}, {CG_F32, 1, D(33), -2, 2}, {CG_F32, 1, D(33), -2, 2}}, "axis: -1"},
    /* short rows far from 0 (one work-item per row), and many of them */
    {3, {{CG_F32, 3, D(3, 9, 32), 100, 101}, {CG_F32, 1, D(32), -2, 2}, {CG_F32, 1, D(32), -2, 2}}, "epsilon: 1e-12"},
    {1, {{CG_F32, 2, D(1500, 7), -3, 3}}, NULL},
    {3, {{CG_F32, 2, D(5, 256), -3, 3}, {CG_F32, 1, D(256), -2, 2}, {CG_F32, 1, D(256), -2, 2}}, NULL},
    /* with a residual: short rows (one work-item each) and long ones (a group each) */
    {4,
     {{CG_F32, 3, D(3, 9, 32), -3, 3},
      {CG_F32, 1, D(32), -2, 2},
      {CG_F32, 1, D(32), -2, 2},
      {CG_F32, 3, D(3, 9, 32), -3, 3}},
     NULL},
    {4,
     {{CG_F32, 2, D(3, 700), -3, 3},
      {CG_F32, 1, D(700), -2, 2},
      {CG_F32, 1, D(700), -2, 2},
      {CG_F32, 2, D(3, 700), -3, 3}},
     NULL},
};

/* The cases, then the residual ones (the last LN_SUM_CASES) again with the
 * sum as a second output. */
#define LN_CASES ((int32_t)(sizeof layer_norm_cases / sizeof layer_norm_cases[0]))
#define LN_SUM_CASES 2
static int32_t layer_norm_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= LN_CASES + LN_SUM_CASES) return 0;
    if (i >= LN_CASES) {
        cg_ops_fill_case(&layer_norm_cases[i - LN_SUM_CASES], 2, c);
        return 1;
    }
    cg_ops_fill_case(&layer_norm_cases[i], 1, c);
    /* rows of 100 + [0, 1): the device's f32 mean keeps ~1e-5 of them */
    if (i == 3) c->atol = 2e-3;
    return 1;
}

static const char *const layer_norm_inputs[] = {"x", "gamma", "beta", "residual", NULL};
static const cg_kernel_def layer_norm_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = layer_norm_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = layer_norm_cl),
};
const cg_op_def cg_op_layer_norm =
    CG_OP(.name = "layer_norm",
          .doc = "Layer normalization of f32 x over its dims from `axis` on (each row of N elements): "
                 "y = (x - mean) / sqrt(var + epsilon) * gamma + beta with the biased variance, "
                 "gamma and beta (optional, each of N elements) as in torch.nn.LayerNorm and ONNX "
                 "LayerNormalization. With a fourth input `residual` (x's shape; gamma and beta given), of x + "
                 "residual, rounded as that add: the residual add before a Transformer's post-LN LayerNorm (the "
                 "rewrite \"norm\" makes it); a second output then gives that sum (pre-LN: the next residual "
                 "add reads it). The outputs have x's shape.",
          .min_inputs = 1, .max_inputs = 4, .min_outputs = 1, .max_outputs = 2, .input_names = layer_norm_inputs,
          CG_ATTRS(layer_norm_attrs), .infer = layer_norm_infer, CG_KERNELS(layer_norm_kernels),
          .conform_case = layer_norm_conform);
