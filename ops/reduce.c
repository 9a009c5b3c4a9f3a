/* Reductions: reduce_sum / reduce_mean / reduce_max over a set of axes,
 * argmax along one axis, and topk along the last axis. */
#include "ops_cl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "reduce.cl.h"

/* ---- conformance cases ---- */

/* A compact conformance case: one input of up to 4 dims. */
typedef struct rd_case {
    int nd;
    int64_t d[4];
    const char *attrs;
} rd_case;

static void rd_fill_case(const rd_case *t, double lo, double hi, int n_out, cg_conform_case *c) {
    uint32_t ss = c->struct_size;
    memset(c, 0, sizeof *c);
    c->struct_size = ss;
    c->n_inputs = 1;
    c->n_outputs = n_out;
    c->attrs = t->attrs;
    c->inputs[0].dtype = CG_OP_F32;
    c->inputs[0].ndim = t->nd;
    for (int j = 0; j < t->nd; j++) c->inputs[0].dims[j] = t->d[j];
    c->lo[0] = lo;
    c->hi[0] = hi;
}

#define D(...) \
    { __VA_ARGS__ }

/* ---- reduce_sum / reduce_mean / reduce_max (x f32) ---- */

enum { REDUCE_AXES, REDUCE_KEEPDIMS };

static const cg_attr_def reduce_attrs[] = {
    CG_ATTR(.name = "axes", .type = CG_ATTR_INTS,
            .doc = "axes to reduce (negative count from the end); empty = all axes"),
    CG_ATTR(.name = "keepdims", .type = CG_ATTR_INT, .default_int = 0, .doc = "1: keep reduced axes as size 1"),
};

/* The kernels' `kind` argument (reduce.cl) in this order. */
typedef enum { RED_SUM, RED_MEAN, RED_MAX, RED_PROD } red_kind;

static const char *red_name(red_kind k) {
    return k == RED_SUM ? "reduce_sum" : k == RED_MEAN ? "reduce_mean" : k == RED_MAX ? "reduce_max" : "reduce_prod";
}

/* Marks the reduced axes of x in red[]; fails on a bad axes list. */
static cg_op_status reduce_axes(const cg_op_call *call, const cg_tensor_desc *x, int *red) {
    const cg_attr_value *ax = &call->attrs[REDUCE_AXES];
    char sx[128];
    cg_ops_format_dims(sx, sizeof sx, x);
    memset(red, 0, sizeof(int) * CG_MAX_DIMS);
    if (ax->n_ints == 0) {
        for (int i = 0; i < x->ndim; i++) red[i] = 1;
        return CG_OP_OK;
    }
    for (int i = 0; i < ax->n_ints; i++) {
        int a = cg_norm_axis(ax->ints[i], x->ndim);
        if (a < 0)
            return cg_op_fail(call, "axis %lld in axes is out of range for x %s (%d dims)", (long long)ax->ints[i], sx,
                              x->ndim);
        if (red[a]) return cg_op_fail(call, "axis %lld in axes repeats axis %d", (long long)ax->ints[i], a);
        red[a] = 1;
    }
    return CG_OP_OK;
}

static cg_op_status reduce_infer(cg_op_call *call, red_kind kind) {
    const cg_tensor_desc *x = &call->inputs[0];
    int red[CG_MAX_DIMS];
    int64_t keep = call->attrs[REDUCE_KEEPDIMS].i;
    if (cg_expect_input(call, 0, CG_OP_F32, -1)) return CG_OP_ERROR;
    if (keep != 0 && keep != 1) return cg_op_fail(call, "attribute keepdims must be 0 or 1, got %lld", (long long)keep);
    if (reduce_axes(call, x, red)) return CG_OP_ERROR;
    cg_tensor_desc *o = &call->outputs[0];
    o->dtype = CG_OP_F32;
    o->ndim = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (red[i] && kind == RED_MAX && x->dims[i] == 0) {
            char sx[128];
            cg_ops_format_dims(sx, sizeof sx, x);
            return cg_op_fail(call, "reduce_max over axis %d of size 0 (x %s) has no identity", i, sx);
        }
        if (!red[i]) o->dims[o->ndim++] = x->dims[i];
        else if (keep) o->dims[o->ndim++] = 1;
    }
    return CG_OP_OK;
}

/*
 * Iteration plan: x's dims with size-1 dims dropped and neighbours merged
 * when both are reduced or both kept. ostr is the output element stride of
 * each plan dim (0 for reduced dims).
 */
typedef struct red_plan {
    int nd;
    int64_t n[CG_MAX_DIMS];
    int64_t ostr[CG_MAX_DIMS];
    int red[CG_MAX_DIMS];
} red_plan;

static void red_plan_make(red_plan *p, const cg_tensor_desc *x, const int *red) {
    p->nd = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (x->dims[i] == 1) continue;
        if (p->nd > 0 && p->red[p->nd - 1] == red[i]) {
            p->n[p->nd - 1] *= x->dims[i];
        } else {
            p->n[p->nd] = x->dims[i];
            p->red[p->nd] = red[i];
            p->nd++;
        }
    }
    if (p->nd == 0) {
        p->nd = 1;
        p->n[0] = 1;
        p->red[0] = 1;
    }
    int64_t s = 1;
    for (int i = p->nd - 1; i >= 0; i--) {
        p->ostr[i] = p->red[i] ? 0 : s;
        if (!p->red[i]) s *= p->n[i];
    }
}

/* Walks x in row-major order; `acc` holds one accumulator per output. */
#define RED_WALK(T, ACC_RED, ACC_KEEP)                                     \
    do {                                                                   \
        int last = p.nd - 1;                                               \
        int64_t inner = p.n[last], idx[CG_MAX_DIMS] = {0}, oo = 0, xo = 0; \
        for (;;) {                                                         \
            const float *xr = px + xo;                                     \
            T *ar = acc + oo;                                              \
            if (p.red[last]) {                                             \
                ACC_RED;                                                   \
            } else {                                                       \
                ACC_KEEP;                                                  \
            }                                                              \
            xo += inner;                                                   \
            int d = last - 1;                                              \
            for (; d >= 0; d--) {                                          \
                oo += p.ostr[d];                                           \
                if (++idx[d] < p.n[d]) break;                              \
                oo -= p.ostr[d] * p.n[d];                                  \
                idx[d] = 0;                                                \
            }                                                              \
            if (d < 0) break;                                              \
        }                                                                  \
    } while (0)

/* The sum of x[0..n) in double: eight interleaved partial sums (independent
 * chains, which overlap and vectorise, where one chain waits on each add),
 * added pairwise, then the tail of n % 8 in order. A fixed order: the same
 * bits every run and on every ISA. */
static double sum_row(const float *x, int64_t n) {
    double p0 = 0, p1 = 0, p2 = 0, p3 = 0, p4 = 0, p5 = 0, p6 = 0, p7 = 0, t = 0;
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        p0 += x[j], p1 += x[j + 1], p2 += x[j + 2], p3 += x[j + 3];
        p4 += x[j + 4], p5 += x[j + 5], p6 += x[j + 6], p7 += x[j + 7];
    }
    for (; j < n; j++) t += x[j];
    return (((p0 + p4) + (p2 + p6)) + ((p1 + p5) + (p3 + p7))) + t;
}

/* Sums or means of contiguous rows (plan [kept, reduced] or one reduced
 * dim: squeeze-excite's mean over H and W), straight into y; the general
 * walk would compute the same values through its accumulators. */
static int reduce_rows(const red_plan *p, const float *x, float *y, double scale) {
    const int rows_red = p->nd == 2 && !p->red[0] && p->red[1], all = p->nd == 1 && p->red[0];
    if (!rows_red && !all) return 0;
    const int64_t rows = all ? 1 : p->n[0], n = p->n[p->nd - 1];
    for (int64_t r = 0; r < rows; r++) y[r] = (float)(sum_row(x + r * n, n) * scale);
    return 1;
}

static size_t reduce_ws_sum(const cg_op_call *call) {
    return (size_t)cg_desc_numel(&call->outputs[0]) * sizeof(double);
}

static cg_op_status reduce_cpu(const cg_kernel_args *args, red_kind kind) {
    const cg_op_call *call = args->call;
    const cg_tensor_desc *x = &call->inputs[0];
    const float *px = args->in[0];
    float *py = args->out[0];
    int red[CG_MAX_DIMS];
    if (reduce_axes(call, x, red)) return CG_OP_ERROR;
    int64_t on = cg_desc_numel(&call->outputs[0]), xn = cg_desc_numel(x), count = 1;
    for (int i = 0; i < x->ndim; i++)
        if (red[i]) count *= x->dims[i];
    if (on == 0) return CG_OP_OK;
    red_plan p;
    red_plan_make(&p, x, red);
    if (kind == RED_MAX) {
        if (count == 0) return cg_op_fail(call, "reduce_max over an empty axis");
        float *acc = py;
        for (int64_t i = 0; i < on; i++) acc[i] = -INFINITY;
        /* NaN propagates: once an accumulator is NaN it stays NaN. */
        RED_WALK(
            float,
            {
                float m = ar[0];
                for (int64_t j = 0; j < inner; j++)
                    if (xr[j] > m || xr[j] != xr[j]) m = xr[j];
                ar[0] = m;
            },
            {
                for (int64_t j = 0; j < inner; j++)
                    if (xr[j] > ar[j] || xr[j] != xr[j]) ar[j] = xr[j];
            });
        return CG_OP_OK;
    }
    /* The mean of nothing is 0 / 0 = NaN, as in NumPy. */
    const double scale = kind == RED_MEAN ? 1.0 / (double)count : 1.0;
    if (kind != RED_PROD && count > 0 && reduce_rows(&p, px, py, scale)) return CG_OP_OK;
    double *acc = args->workspace;
    if (!acc || args->workspace_size < (size_t)on * sizeof(double))
        return cg_op_fail(call, "%s: workspace too small", red_name(kind));
    for (int64_t i = 0; i < on; i++) acc[i] = kind == RED_PROD ? 1.0 : 0.0;
    if (xn > 0 && kind == RED_PROD) {
        RED_WALK(
            double,
            {
                double q = 1.0;
                for (int64_t j = 0; j < inner; j++) q *= xr[j];
                ar[0] *= q;
            },
            {
                for (int64_t j = 0; j < inner; j++) ar[j] *= xr[j];
            });
    } else if (xn > 0) {
        RED_WALK(
            double, { ar[0] += sum_row(xr, inner); },
            {
                for (int64_t j = 0; j < inner; j++) ar[j] += xr[j];
            });
    }
    if (kind == RED_MEAN && count == 0)
        for (int64_t i = 0; i < on; i++) py[i] = NAN;
    else
        for (int64_t i = 0; i < on; i++) py[i] = (float)(acc[i] * scale);
    return CG_OP_OK;
}

/*
 * OpenCL: the CPU's collapsed plan, split into kept and reduced dims (at
 * most 4 of each since they alternate). Short groups, and the case of many
 * outputs whose innermost dim is kept, run reduce_item (one work-item per
 * output); otherwise reduce_group runs one work-group per output.
 */
static cg_op_status reduce_cl(const cg_kernel_args *args, red_kind kind) {
    const cg_op_call *call = args->call;
    const cg_tensor_desc *x = &call->inputs[0];
    int red[CG_MAX_DIMS];
    if (reduce_axes(call, x, red)) return CG_OP_ERROR;
    int64_t on = cg_desc_numel(&call->outputs[0]), xn = cg_desc_numel(x), count = 1;
    for (int i = 0; i < x->ndim; i++)
        if (red[i]) count *= x->dims[i];
    if (on == 0) return CG_OP_OK;
    if (kind == RED_MAX && count == 0) return cg_op_fail(call, "reduce_max over an empty axis");
    red_plan p;
    red_plan_make(&p, x, red);
    cl_long4 kd, ks, rdim, rst;
    cl_int nk = 0, nr = 0;
    for (int i = 0; i < 4; i++) {
        kd.s[i] = rdim.s[i] = 1;
        ks.s[i] = rst.s[i] = 0;
    }
    int64_t st = 1;
    for (int i = p.nd - 1; i >= 0; i--) {
        if (p.red[i] ? nr >= 4 : nk >= 4)
            return cg_op_fail(call, "%s: more than 4 alternating axis groups", red_name(kind));
        if (p.red[i]) {
            rdim.s[nr] = p.n[i];
            rst.s[nr++] = st;
        } else {
            kd.s[nk] = p.n[i];
            ks.s[nk++] = st;
        }
        st *= p.n[i];
    }
    cl_int kk = (cl_int)kind;
    cl_float scale = kind == RED_MEAN ? (count ? (float)(1.0 / (double)count) : NAN) : 1.0f;
    cl_long lon = on, lcount = count;
    const int use_item = count <= 32 || (!p.red[p.nd - 1] && on >= 4096);
    const char *name = use_item ? "reduce_item" : "reduce_group";
    cl_kernel k = cg_ops_cl_kernel(args, cg_cl_reduce, name, xn > INT32_MAX, 0, NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem px = (cl_mem)args->in[0], py = (cl_mem)args->out[0];
    size_t local = cg_ops_cl_work_group(args, k, CG_OPS_CL_MAX_WORK_GROUP, 1), global;
    if (use_item) {
        const cg_ops_cl_arg_value v[] = {
            CG_OPS_CL_ARG(px), CG_OPS_CL_ARG(py),   CG_OPS_CL_ARG(lon), CG_OPS_CL_ARG(nk), CG_OPS_CL_ARG(kd),
            CG_OPS_CL_ARG(ks), CG_OPS_CL_ARG(rdim), CG_OPS_CL_ARG(rst), CG_OPS_CL_ARG(kk), CG_OPS_CL_ARG(scale)};
        if (cg_ops_cl_args(args, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
        global = (size_t)on;
    } else {
        local = cg_ops_cl_fit_work_group(local, count, 32);
        const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(px),
                                         CG_OPS_CL_ARG(py),
                                         CG_OPS_CL_ARG(lon),
                                         CG_OPS_CL_ARG(lcount),
                                         CG_OPS_CL_ARG(nk),
                                         CG_OPS_CL_ARG(kd),
                                         CG_OPS_CL_ARG(ks),
                                         CG_OPS_CL_ARG(nr),
                                         CG_OPS_CL_ARG(rdim),
                                         CG_OPS_CL_ARG(rst),
                                         CG_OPS_CL_ARG(kk),
                                         CG_OPS_CL_ARG(scale),
                                         CG_OPS_CL_LOCAL(local * sizeof(cl_float))};
        if (cg_ops_cl_args(args, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
        global = (size_t)on * local;
    }
    return cg_ops_cl_launch(args, k, NULL, 1, &global, &local);
}

/*
 * Reduction cases, smallest first: every axis (default), one or several
 * axes, negative axes, keepdims, size-1 dims among the reduced ones, the
 * innermost dim reduced (a group per output) or kept (an item per output
 * when there are many outputs), sizes that do not divide work-group sizes.
 */
static const rd_case red_cases[] = {
    {1, D(1), NULL},
    {0, D(0), NULL},
    {1, D(3), NULL},
    {1, D(17), "keepdims: 1"},
    {2, D(17, 3), "axes: [0]"},
    {3, D(2, 3, 5), "axes: [1]"},
    {3, D(2, 3, 5), "axes: [0, 2]"},
    {3, D(2, 3, 5), "axes: [-1], keepdims: 1"},
    {3, D(2, 3, 5), "axes: [0]"},
    {4, D(4, 1, 5, 3), "axes: [1, 3]"},
    {4, D(2, 3, 4, 5), "axes: [0, 2], keepdims: 1"},
    {4, D(2, 3, 4, 5), "axes: [3, 1]"},
    {4, D(3, 1, 4, 1), "axes: [1]"},
    {1, D(257), NULL},
    {2, D(17, 257), "axes: [1]"},
    {2, D(17, 257), "axes: [0]"},
    {2, D(3, 1000), "axes: [1]"},
    {2, D(3, 1000), "axes: [0]"},
    {2, D(1000, 3), "axes: [0]"},
    {3, D(10, 1000, 3), "axes: [0, 2]"},
    {2, D(100, 1000), NULL},
    {2, D(100, 1000), "axes: [0]"},
    {2, D(100, 1000), "axes: [1], keepdims: 1"},
    {2, D(20, 5000), "axes: [0]"},
    {4, D(4, 25, 10, 100), "axes: [0, 2]"},
};
#define N_RED_CASES ((int32_t)(sizeof red_cases / sizeof red_cases[0]))

static int32_t reduce_max_conform(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= N_RED_CASES) return 0;
    rd_fill_case(&red_cases[index], -2, 2, 1, c);
    return 1;
}

/* Sums and means: first an empty reduced axis (sum 0, mean NaN), then the
 * same cases as reduce_max. */
static int32_t reduce_sum_conform(int32_t index, cg_conform_case *c) {
    static const rd_case empty = {2, D(3, 0), "axes: [1]"};
    if (index == 0) {
        rd_fill_case(&empty, -2, 2, 1, c);
        return 1;
    }
    return reduce_max_conform(index - 1, c);
}
#define reduce_mean_conform reduce_sum_conform

/* Products: the same cases with values in [0.9, 1.1], so that products of
 * thousands of them stay in range; an empty axis gives 1. The OpenCL
 * kernels multiply in float, the CPU in double: the relative error grows
 * with the count (about 6e-8 per factor), hence rtol 1e-3. */
static int32_t reduce_prod_conform(int32_t index, cg_conform_case *c) {
    if (!reduce_sum_conform(index, c)) return 0;
    c->lo[0] = 0.9;
    c->hi[0] = 1.1;
    c->rtol = 1e-3;
    return 1;
}

static const char *const reduce_inputs[] = {"x", NULL};

#define REDUCE_OP(NAME, KIND, WS, DOC)                                                                                 \
    static cg_op_status NAME##_infer(cg_op_call *call) { return reduce_infer(call, KIND); }                            \
    static cg_op_status NAME##_cpu(const cg_kernel_args *a) { return reduce_cpu(a, KIND); }                            \
    static cg_op_status NAME##_cl(const cg_kernel_args *a) { return reduce_cl(a, KIND); }                              \
    static const cg_kernel_def NAME##_kernels[] = {                                                                    \
        CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = WS, .run = NAME##_cpu),                                      \
        CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = NAME##_cl),                                  \
    };                                                                                                                 \
    const cg_op_def cg_op_##NAME =                                                                                     \
        CG_OP(.name = #NAME, .doc = DOC, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,         \
              .input_names = reduce_inputs, CG_ATTRS(reduce_attrs), .infer = NAME##_infer, CG_KERNELS(NAME##_kernels), \
              .conform_case = NAME##_conform);

#define REDUCE_DOC                                                              \
    " Attribute axes (ints, default empty = every axis; negative values count " \
    "from the end; no repeats) selects the reduced axes; keepdims (0 or 1, "    \
    "default 0) keeps them as size-1 dims instead of removing them. Reducing "  \
    "every axis of x without keepdims gives a 0-d scalar."

REDUCE_OP(reduce_sum, RED_SUM, reduce_ws_sum,
          "Sum of f32 x over the given axes, accumulated in double precision (on "
          "OpenCL devices in single precision with Kahan compensation); the sum "
          "over an empty axis is 0." REDUCE_DOC)
REDUCE_OP(reduce_mean, RED_MEAN, reduce_ws_sum,
          "Arithmetic mean of f32 x over the given axes, accumulated in double "
          "precision (on OpenCL devices in single precision with Kahan "
          "compensation); the mean over an empty axis is NaN (0 / 0)." REDUCE_DOC)
REDUCE_OP(reduce_prod, RED_PROD, reduce_ws_sum,
          "Product of f32 x over the given axes, accumulated in double precision (on "
          "OpenCL devices in single precision); the product over an empty axis is 1." REDUCE_DOC)
REDUCE_OP(reduce_max, RED_MAX, NULL,
          "Maximum of f32 x over the given axes; a NaN in a reduced group gives "
          "NaN. Reducing over an axis of size 0 is an error (no identity)." REDUCE_DOC)

/* ---- argmax(x f32; axis, keepdims) -> i32 ---- */

enum { ARGMAX_AXIS, ARGMAX_KEEPDIMS, ARGMAX_LAST };

static const cg_attr_def argmax_attrs[] = {
    CG_ATTR(.name = "axis", .type = CG_ATTR_INT, .default_int = -1,
            .doc = "axis to search; negative counts from the end"),
    CG_ATTR(.name = "keepdims", .type = CG_ATTR_INT, .default_int = 0, .doc = "1: keep the axis as size 1"),
    CG_ATTR(.name = "last", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "1: ties pick the highest index (ONNX's select_last_index)"),
};

static cg_op_status argmax_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    int64_t keep = call->attrs[ARGMAX_KEEPDIMS].i, axis_attr = call->attrs[ARGMAX_AXIS].i;
    char sx[128];
    if (cg_expect_input(call, 0, CG_OP_F32, -1)) return CG_OP_ERROR;
    cg_ops_format_dims(sx, sizeof sx, x);
    if (keep != 0 && keep != 1) return cg_op_fail(call, "attribute keepdims must be 0 or 1, got %lld", (long long)keep);
    if (call->attrs[ARGMAX_LAST].i != 0 && call->attrs[ARGMAX_LAST].i != 1)
        return cg_op_fail(call, "attribute last must be 0 or 1, got %lld", (long long)call->attrs[ARGMAX_LAST].i);
    int axis = cg_norm_axis(axis_attr, x->ndim);
    if (axis < 0)
        return cg_op_fail(call, "axis %lld is out of range for x %s (%d dims)", (long long)axis_attr, sx, x->ndim);
    if (x->dims[axis] == 0) return cg_op_fail(call, "argmax over axis %d of size 0 (x %s)", axis, sx);
    if (x->dims[axis] > INT32_MAX)
        return cg_op_fail(call, "argmax axis %d of x %s is too long for i32 indices", axis, sx);
    cg_tensor_desc *o = &call->outputs[0];
    o->dtype = CG_OP_I32;
    o->ndim = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i != axis) o->dims[o->ndim++] = x->dims[i];
        else if (keep) o->dims[o->ndim++] = 1;
    }
    return CG_OP_OK;
}

/* Order used by argmax and topk: NaN above everything, then by value. */
static inline int f32_greater(float a, float b) { return (a != a) ? (b == b) : (a > b); }

static cg_op_status argmax_cpu(const cg_kernel_args *args) {
    const cg_op_call *call = args->call;
    const cg_tensor_desc *x = &call->inputs[0];
    const float *px = args->in[0];
    int32_t *out = args->out[0];
    int axis = cg_norm_axis(call->attrs[ARGMAX_AXIS].i, x->ndim);
    int64_t outer, n = x->dims[axis], inner;
    cg_desc_split(x, axis, &outer, &inner);
    if (outer * inner == 0) return CG_OP_OK;
    if (n == 0) return cg_op_fail(call, "argmax over an empty axis");
    /* The output row doubles as the running best index of each column, so
     * the scan over the axis reads x contiguously. Only a strictly greater
     * value replaces the best: ties keep the lowest index, and the first
     * NaN is never replaced; with `last` an equal one does too. */
    const int last = call->attrs[ARGMAX_LAST].i != 0;
    for (int64_t o = 0; o < outer; o++) {
        const float *xo = px + o * n * inner;
        int32_t *bo = out + o * inner;
        for (int64_t i = 0; i < inner; i++) bo[i] = 0;
        for (int64_t j = 1; j < n; j++) {
            const float *xj = xo + j * inner;
            for (int64_t i = 0; i < inner; i++)
                if (last ? !f32_greater(xo[(int64_t)bo[i] * inner + i], xj[i])
                         : f32_greater(xj[i], xo[(int64_t)bo[i] * inner + i]))
                    bo[i] = (int32_t)j;
        }
    }
    return CG_OP_OK;
}

/* OpenCL: one work-group per slice for long slices along the last axis (or
 * few slices), else one work-item per slice. */
static cg_op_status argmax_cl(const cg_kernel_args *args) {
    const cg_op_call *call = args->call;
    const cg_tensor_desc *x = &call->inputs[0];
    int axis = cg_norm_axis(call->attrs[ARGMAX_AXIS].i, x->ndim);
    int64_t outer, n = x->dims[axis], inner;
    cg_desc_split(x, axis, &outer, &inner);
    int64_t slices = outer * inner;
    if (slices == 0) return CG_OP_OK;
    if (n == 0) return cg_op_fail(call, "argmax over an empty axis");
    const int use_group = n > 32 && (inner == 1 || slices < 256);
    const char *name = use_group ? "argmax_group" : "argmax_item";
    cl_kernel k = cg_ops_cl_kernel(args, cg_cl_reduce, name, slices * n > INT32_MAX, 0, NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem px = (cl_mem)args->in[0], py = (cl_mem)args->out[0];
    cl_long ls = slices, ln = n, li = inner;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(px), CG_OPS_CL_ARG(py), CG_OPS_CL_ARG(ls), CG_OPS_CL_ARG(ln),
                                     CG_OPS_CL_ARG(li)};
    const cl_int last = call->attrs[ARGMAX_LAST].i != 0;
    if (cg_ops_cl_args(args, k, name, 0, CG_OPS_CL_N_ARGS(v), v) ||
        cg_ops_cl_arg(args, k, name, use_group ? 7 : 5, sizeof last, &last))
        return CG_OP_ERROR;
    size_t local = cg_ops_cl_work_group(args, k, CG_OPS_CL_MAX_WORK_GROUP, 1);
    size_t global = (size_t)slices;
    if (use_group) {
        local = cg_ops_cl_fit_work_group(local, n, 32);
        const cg_ops_cl_arg_value lv[] = {CG_OPS_CL_LOCAL(local * sizeof(cl_float)),
                                          CG_OPS_CL_LOCAL(local * sizeof(cl_int))};
        if (cg_ops_cl_args(args, k, name, 5, CG_OPS_CL_N_ARGS(lv), lv)) return CG_OP_ERROR;
        global = (size_t)slices * local;
    }
    return cg_ops_cl_launch(args, k, NULL, 1, &global, &local);
}

/* Argmax cases: values in [-2, 2], and values in [2^24, 2^24 + 6] where
 * floats are 2 apart, so that many elements tie (the lowest index wins). */
static const rd_case argmax_cases[] = {
    {1, D(1), NULL},
    {1, D(3), NULL},
    {1, D(17), "keepdims: 1"},
    {2, D(17, 3), "axis: 0"},
    {3, D(2, 3, 5), "axis: 1"},
    {3, D(2, 3, 5), "axis: 0, keepdims: 1"},
    {3, D(2, 3, 5), "axis: -3"},
    {2, D(17, 257), NULL},
    {2, D(257, 17), "axis: 0"},
    {2, D(4, 1000), NULL},
    {2, D(1000, 3), "axis: 0"},
    {2, D(3, 1000), "axis: 0"},
    {2, D(100, 1000), NULL},
    {2, D(100, 1000), "axis: 0"},
    {1, D(17), "last: 1"},
    {3, D(2, 3, 5), "axis: 1, last: 1"},
    {2, D(17, 257), "last: 1"},
    {2, D(1000, 3), "axis: 0, last: 1"},
    {2, D(100, 1000), "last: 1"},
};
#define N_ARGMAX_CASES ((int32_t)(sizeof argmax_cases / sizeof argmax_cases[0]))
#define TIE_LO 16777216.0
#define TIE_HI 16777222.0

static int32_t argmax_conform(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= 2 * N_ARGMAX_CASES) return 0;
    const int ties = index % 2;
    rd_fill_case(&argmax_cases[index / 2], ties ? TIE_LO : -2, ties ? TIE_HI : 2, 1, c);
    return 1;
}

static const cg_kernel_def argmax_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = argmax_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = argmax_cl),
};

const cg_op_def cg_op_argmax =
    CG_OP(.name = "argmax",
          .doc = "Index (i32) of the largest element of f32 x along axis (default -1), "
                 "removing that axis (or keeping it as size 1 with keepdims: 1). Ties "
                 "pick the lowest index, or the highest with last: 1. NaN counts as greater than "
                 "every number, so the first (last) NaN along the axis wins. The axis must not be empty.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = reduce_inputs,
          CG_ATTRS(argmax_attrs), .infer = argmax_infer, CG_KERNELS(argmax_kernels), .conform_case = argmax_conform);

/* ---- topk(x f32[..., N]; k) -> values f32[..., k], indices i32[..., k] ---- */

enum { TOPK_K };

static const cg_attr_def topk_attrs[] = {
    CG_ATTR(.name = "k", .type = CG_ATTR_INT, .required = 1,
            .doc = "number of largest elements to keep per row (0 <= k <= N; -1: all N, a sort)"),
};

cg_op_status cg_ops_topk_infer(cg_op_call *call, const char *op) {
    const cg_tensor_desc *x = &call->inputs[0];
    const cg_attr_value *ka = &call->attrs[TOPK_K];
    char sx[128];
    if (cg_expect_input(call, 0, CG_OP_F32, -1)) return CG_OP_ERROR;
    cg_ops_format_dims(sx, sizeof sx, x);
    if (x->ndim < 1) return cg_op_fail(call, "input 0 (x) must have at least 1 dim, got %s", sx);
    if (!ka->present) return cg_op_fail(call, "attribute k is required for %s", op);
    int64_t k = ka->i, n = x->dims[x->ndim - 1];
    if (k == -1 && !strcmp(op, "topk")) k = n; /* the whole last dim: a sort */
    else if (k < 0)
        return cg_op_fail(call, "attribute k must be >= 0%s, got %lld", strcmp(op, "topk") ? "" : " (or -1: all)",
                          (long long)k);
    if (cg_dim_known(n) && k > n)
        return cg_op_fail(call, "k=%lld is larger than the last dim %lld of x %s", (long long)k, (long long)n, sx);
    if (n > INT32_MAX || k > INT32_MAX) return cg_op_fail(call, "last dim of x %s is too long for i32 indices", sx);
    for (int i = 0; i < call->n_outputs; i++) {
        cg_tensor_desc *o = &call->outputs[i];
        *o = *x;
        o->dtype = i == 0 ? CG_OP_F32 : CG_OP_I32;
        o->dims[x->ndim - 1] = k;
    }
    return CG_OP_OK;
}

static cg_op_status topk_infer(cg_op_call *call) { return cg_ops_topk_infer(call, "topk"); }

/* Strict total order "element i ranks before element j": larger value
 * first (NaN largest), then lower index. */
static inline int topk_before(const float *x, int32_t i, int32_t j) {
    float a = x[i], b = x[j];
    if (f32_greater(a, b)) return 1;
    if (f32_greater(b, a)) return 0;
    return i < j;
}

/* Sift down in a heap whose root is the element ranking last. */
static void topk_sift(const float *x, int32_t *h, int64_t size, int64_t i) {
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < size && topk_before(x, h[w], h[l])) w = l;
        if (r < size && topk_before(x, h[w], h[r])) w = r;
        if (w == i) return;
        int32_t t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

static cg_op_status topk_cpu(const cg_kernel_args *args) {
    const cg_op_call *call = args->call;
    const cg_tensor_desc *x = &call->inputs[0];
    const float *px = args->in[0];
    float *pv = args->out[0];
    int32_t *pi = args->out[1];
    int64_t n = x->dims[x->ndim - 1], k = call->outputs[0].dims[x->ndim - 1], rows = 1;
    for (int i = 0; i < x->ndim - 1; i++) rows *= x->dims[i];
    if (k > n) return cg_op_fail(call, "k=%lld is larger than the last dim %lld", (long long)k, (long long)n);
    if (k == 0 || rows == 0) return CG_OP_OK;
    /* The indices output row is the heap: O(N log k) per row, no scratch. */
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = px + r * n;
        int32_t *h = pi + r * k;
        float *v = pv + r * k;
        for (int64_t j = 0; j < k; j++) h[j] = (int32_t)j;
        for (int64_t j = k / 2; j-- > 0;) topk_sift(xr, h, k, j);
        for (int64_t j = k; j < n; j++) {
            if (topk_before(xr, (int32_t)j, h[0])) {
                h[0] = (int32_t)j;
                topk_sift(xr, h, k, 0);
            }
        }
        /* Heap sort: move the last-ranking element to the end each time,
         * leaving the row in ranking order. */
        for (int64_t s = k - 1; s > 0; s--) {
            int32_t t = h[0];
            h[0] = h[s];
            h[s] = t;
            topk_sift(xr, h, s, 0);
        }
        for (int64_t j = 0; j < k; j++) v[j] = xr[h[j]];
    }
    return CG_OP_OK;
}

/* OpenCL: topk_rank, one work-item per element of x computing its rank in
 * its row (stopping at k) and writing it to that position when below k. */
static cg_op_status topk_cl(const cg_kernel_args *args) {
    static const char name[] = "topk_rank";
    const cg_op_call *call = args->call;
    const cg_tensor_desc *x = &call->inputs[0];
    int64_t n = x->dims[x->ndim - 1], k = call->outputs[0].dims[x->ndim - 1], rows = 1;
    for (int i = 0; i < x->ndim - 1; i++) rows *= x->dims[i];
    if (k > n) return cg_op_fail(call, "k=%lld is larger than the last dim %lld", (long long)k, (long long)n);
    if (k == 0 || rows == 0) return CG_OP_OK;
    int64_t total = rows * n;
    cl_kernel kn = cg_ops_cl_kernel(args, cg_cl_reduce, name, total > INT32_MAX, 0, NULL);
    if (!kn) return CG_OP_ERROR;
    cl_mem px = (cl_mem)args->in[0], pv = (cl_mem)args->out[0], pi = (cl_mem)args->out[1];
    cl_long lt = total, ln = n, lk = k;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(px), CG_OPS_CL_ARG(pv), CG_OPS_CL_ARG(pi),
                                     CG_OPS_CL_ARG(lt), CG_OPS_CL_ARG(ln), CG_OPS_CL_ARG(lk)};
    if (cg_ops_cl_args(args, kn, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(args, kn, NULL, total, cg_ops_cl_work_group(args, kn, CG_OPS_CL_MAX_WORK_GROUP, 1));
}

/* Topk cases: k from 1 to N, values in [-2, 2] and, for every other case,
 * in [2^24, 2^24 + 6] where many elements tie (lower index first). */
static const rd_case topk_cases[] = {
    {1, D(1), "k: 1"},          {1, D(3), "k: 3"},        {1, D(17), "k: 5"},         {2, D(4, 17), "k: 17"},
    {3, D(2, 3, 17), "k: 1"},   {2, D(8, 17), "k: 8"},    {1, D(257), "k: 100"},      {2, D(3, 257), "k: 257"},
    {2, D(3, 29), "k: -1"},     {2, D(4, 1000), "k: 10"}, {2, D(4, 1000), "k: 1000"}, {2, D(100, 1000), "k: 5"},
    {2, D(20, 1000), "k: 999"},
};
#define N_TOPK_CASES ((int32_t)(sizeof topk_cases / sizeof topk_cases[0]))

static int32_t topk_conform(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= 2 * N_TOPK_CASES) return 0;
    const int ties = index % 2;
    rd_fill_case(&topk_cases[index / 2], ties ? TIE_LO : -2, ties ? TIE_HI : 2, 2, c);
    return 1;
}

static const cg_kernel_def topk_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = topk_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = topk_cl),
};

const cg_op_def cg_op_topk =
    CG_OP(.name = "topk",
          .doc = "The k largest elements along the last axis of f32 x [..., N]: "
                 "output 0 values f32 [..., k] sorted descending, output 1 indices i32 "
                 "[..., k] of those elements in x. Equal values are ordered by lower "
                 "index first; NaN counts as greater than every number. Attribute k "
                 "(int, required) must satisfy 0 <= k <= N.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 2, .max_outputs = 2, .input_names = reduce_inputs,
          CG_ATTRS(topk_attrs), .infer = topk_infer, CG_KERNELS(topk_kernels), .conform_case = topk_conform);
