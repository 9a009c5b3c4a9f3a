/* scatter_nd: a copy of x with slices replaced by (or combined with)
 * updates at the positions index tuples give (ONNX ScatterND). */
#include "scatter_reduce.h"

#include "dtype.h"

#include <stdint.h>
#include <string.h>

#include "index.cl.h"

enum { SN_REDUCTION };

static const cg_attr_def sn_attrs[] = {CG_SCATTER_ATTR_REDUCTION};

static int reduction_of(const cg_op_call *call) { return cg_scatter_reduction(call->attrs[SN_REDUCTION].s); }

static cg_op_status sn_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *ix = &call->inputs[1], *up = &call->inputs[2];
    char sx[128], si[128], su[128];
    cg_ops_format_dims(sx, sizeof sx, x);
    cg_ops_format_dims(si, sizeof si, ix);
    cg_ops_format_dims(su, sizeof su, up);
    if (cg_scatter_check(call, call->attrs[SN_REDUCTION].s, x->dtype)) return CG_OP_ERROR;
    if (ix->dtype != CG_I64)
        return cg_op_fail(call, "input 1 (indices) must be i64, got %s (cast it)", cg_ops_dtype_name(ix->dtype));
    if (up->dtype != x->dtype)
        return cg_op_fail(call, "input 2 (updates) must have x's dtype %s, got %s", cg_ops_dtype_name(x->dtype),
                          cg_ops_dtype_name(up->dtype));
    if (ix->ndim < 1 || x->ndim < 1) return cg_op_fail(call, "x %s and indices %s need at least 1 dim", sx, si);
    const int64_t k = ix->dims[ix->ndim - 1];
    if (k < 1 || k > x->ndim)
        return cg_op_fail(call, "the last dim of indices %s must be a size from 1 to the rank of x %s", si, sx);
    /* updates: indices' dims but the last, then x's past the first k */
    int ok = up->ndim == ix->ndim - 1 + x->ndim - (int)k;
    for (int i = 0; ok && i < ix->ndim - 1; i++) ok = cg_dim_compatible(up->dims[i], ix->dims[i]);
    for (int i = (int)k; ok && i < x->ndim; i++)
        ok = cg_dim_compatible(up->dims[ix->ndim - 1 + i - (int)k], x->dims[i]);
    if (!ok)
        return cg_op_fail(call, "updates %s must be indices %s without its last dim, then x %s past its first %lld", su,
                          si, sx, (long long)k);
    call->outputs[0] = *x;
    return CG_OP_OK;
}

/* Tuples of k values, each addressing a slice of `inner` elements; dims
 * and strides of the k indexed axes. */
typedef struct sn_layout {
    int k;
    int64_t tuples, inner, xd[CG_MAX_DIMS], xs[CG_MAX_DIMS];
} sn_layout;

static sn_layout layout_of(const cg_tensor_desc *x, const cg_tensor_desc *ix) {
    sn_layout l;
    l.k = (int)ix->dims[ix->ndim - 1];
    l.tuples = cg_desc_numel(ix) / l.k;
    l.inner = 1;
    for (int i = l.k; i < x->ndim; i++) l.inner *= x->dims[i];
    int64_t s = l.inner;
    for (int j = l.k - 1; j >= 0; j--) l.xd[j] = x->dims[j], l.xs[j] = s, s *= x->dims[j];
    return l;
}

static cg_op_status sn_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0];
    const sn_layout l = layout_of(x, &call->inputs[1]);
    const int red = reduction_of(call);
    const size_t b = cg_dtype_size((cg_dtype)x->dtype);
    const int64_t *idx = a->in[1];
    char *out = a->out[0];
    if (out != a->in[0]) memcpy(out, a->in[0], (size_t)cg_desc_numel(x) * b);
    for (int64_t t = 0; t < l.tuples; t++) {
        int64_t off = 0;
        for (int j = 0; j < l.k; j++) {
            const int64_t v = idx[t * l.k + j], n = l.xd[j];
            if (v < -n || v >= n) return cg_op_fail_range(call, 1, "indices", v, t * l.k + j, -n, n - 1);
            off += (v < 0 ? v + n : v) * l.xs[j];
        }
        cg_scatter_combine(x->dtype, red, b, l.inner, out + (size_t)off * b,
                           (const char *)a->in[2] + (size_t)(t * l.inner) * b);
    }
    return CG_OP_OK;
}

/* OpenCL: x copied, then one work-item per element of the slices walking
 * every tuple in order: each output element gets its updates in the CPU's
 * order, with no atomics (the parallelism is the slice length). */
static cg_op_status sn_cl(const cg_kernel_args *a) {
    static const char name[] = "scatter_nd";
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0];
    const sn_layout l = layout_of(x, &call->inputs[1]);
    const int red = reduction_of(call),
              wide = cg_desc_numel(x) > INT32_MAX || cg_desc_numel(&call->inputs[2]) > INT32_MAX;
    const char *topt = cg_ops_cl_elem_type_option(cg_dtype_size((cg_dtype)x->dtype));
    if (cg_scatter_cl_copy_x(a, wide, topt)) return CG_OP_ERROR;
    if (l.tuples == 0 || l.inner == 0) return CG_OP_OK;
    char opts[96];
    cg_scatter_cl_options(opts, sizeof opts, topt, x->dtype, red);
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_index, name, wide, 0, opts);
    if (!k) return CG_OP_ERROR;
    cl_long8 xd, xs;
    for (int j = 0; j < 8; j++) xd.s[j] = j < l.k ? l.xd[j] : 1, xs.s[j] = j < l.k ? l.xs[j] : 0;
    cl_mem idx = (cl_mem)a->in[1], up = (cl_mem)a->in[2], dst = (cl_mem)a->out[0];
    cl_long tuples = l.tuples, inner = l.inner;
    cl_int ck = l.k;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(idx),   CG_OPS_CL_ARG(up), CG_OPS_CL_ARG(dst), CG_OPS_CL_ARG(tuples),
                                     CG_OPS_CL_ARG(inner), CG_OPS_CL_ARG(ck), CG_OPS_CL_ARG(xd),  CG_OPS_CL_ARG(xs)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v) || cg_ops_cl_check_args(a, k, name, 8))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, l.inner, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

#define D(...) \
    { __VA_ARGS__ }
/* Index values span [-len, len - 1] of the smallest indexed axis
 * (repeated tuples frequent: the reductions combine them in order); every
 * case once more with values past every axis (an error on every device). */
static const struct {
    cg_op_dtype x;
    int nx, ni, nu;
    int64_t xd[4], id[4], ud[4];
    const char *attrs;
    double len;
} sn_cases[] = {
    {CG_F32, 1, 2, 1, D(5), D(3, 1), D(3), NULL, 5},
    {CG_F32, 2, 2, 2, D(3, 4), D(6, 1), D(6, 4), "reduction: \"add\"", 3},
    {CG_I64, 3, 3, 3, D(2, 3, 5), D(2, 4, 2), D(2, 4, 5), "reduction: \"mul\"", 2},
    {CG_I32, 3, 2, 1, D(2, 3, 5), D(9, 3), D(9), "reduction: \"max\"", 2},
    {CG_F32, 4, 2, 3, D(2, 3, 4, 5), D(7, 2), D(7, 4, 5), "reduction: \"min\"", 2},
    {CG_F16, 4, 3, 4, D(2, 3, 4, 5), D(2, 2, 2), D(2, 2, 4, 5), NULL, 2},
    {CG_BOOL, 2, 2, 2, D(3, 4), D(2, 1), D(2, 4), NULL, 3},
    {CG_F32, 2, 2, 2, D(300, 257), D(100, 1), D(100, 257), "reduction: \"add\"", 300},
    {CG_U8, 2, 3, 3, D(3, 4), D(0, 2, 1), D(0, 2, 4), NULL, 3}, /* last: no error twin */
};
#define N_SN ((int32_t)(sizeof sn_cases / sizeof sn_cases[0]))

static int32_t sn_conform(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= 2 * N_SN - 1) return 0;
    const int err = index >= N_SN, i = index % N_SN;
    const double len = sn_cases[i].len;
    double lo = -2, hi = 2;
    if (sn_cases[i].x == CG_U8 || sn_cases[i].x == CG_BOOL) lo = 0, hi = 255;
    if (sn_cases[i].x == CG_I64 || sn_cases[i].x == CG_I32) lo = -9, hi = 9;
    cg_ops_case t = {3,
                     {{sn_cases[i].x, sn_cases[i].nx, {0}, lo, hi},
                      {CG_I64, sn_cases[i].ni, {0}, -len, len - 1},
                      {sn_cases[i].x, sn_cases[i].nu, {0}, lo, hi}},
                     sn_cases[i].attrs};
    memcpy(t.in[0].d, sn_cases[i].xd, sizeof t.in[0].d);
    memcpy(t.in[1].d, sn_cases[i].id, sizeof t.in[1].d);
    memcpy(t.in[2].d, sn_cases[i].ud, sizeof t.in[2].d);
    cg_ops_fill_case(&t, 1, c);
    return err ? cg_ops_error_case(c, 1, 300, 305) : 1;
}

static const char *const sn_inputs[] = {"x", "indices", "updates", NULL};
static const cg_kernel_def sn_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = sn_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = sn_cl, .flags = CG_KERNEL_FLAG_CHECKS),
};
const cg_op_def cg_op_scatter_nd =
    CG_OP(.name = "scatter_nd",
          .doc = "A copy of x (any dtype) where the slice each tuple in the last dim of indices (i64, k values) "
                 "addresses is replaced by the matching slice of updates (indices' dims but the last, then x's "
                 "past the first k; x's dtype), or with reduction add, mul, max or min combined with it (f32, "
                 "i32, i64), tuples applied in index order (ONNX ScatterND; with none a repeated tuple's last "
                 "update wins). Values in [-len, len) of their axis (negative count from the end); one outside is "
                 "a run-time error on every device.",
          .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .input_names = sn_inputs,
          CG_ATTRS(sn_attrs), .infer = sn_infer, CG_KERNELS(sn_kernels), .conform_case = sn_conform);
