/* scatter_elements: a copy of x with elements replaced by (or combined
 * with) updates at the positions an index gives along `axis` (ONNX
 * ScatterElements, torch.Tensor.scatter / scatter_reduce). */
#include "scatter_reduce.h"

#include "dtype.h"

#include <stdint.h>
#include <string.h>

#include "gather.cl.h"

enum { SE_AXIS, SE_REDUCTION };

static const cg_attr_def se_attrs[] = {
    CG_ATTR(.name = "axis", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "the axis the index addresses; negative counts from the end"),
    CG_SCATTER_ATTR_REDUCTION,
};

static int reduction_of(const cg_op_call *call) { return cg_scatter_reduction(call->attrs[SE_REDUCTION].s); }

static cg_op_status se_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *ix = &call->inputs[1], *up = &call->inputs[2];
    char sx[128], si[128], su[128];
    if (cg_scatter_check(call, call->attrs[SE_REDUCTION].s, x->dtype)) return CG_OP_ERROR;
    if (ix->dtype != CG_I64)
        return cg_op_fail(call, "input 1 (index) must be i64, got %s (cast it)", cg_ops_dtype_name(ix->dtype));
    if (up->dtype != x->dtype)
        return cg_op_fail(call, "input 2 (updates) must have x's dtype %s, got %s", cg_ops_dtype_name(x->dtype),
                          cg_ops_dtype_name(up->dtype));
    cg_ops_format_dims(sx, sizeof sx, x);
    cg_ops_format_dims(si, sizeof si, ix);
    cg_ops_format_dims(su, sizeof su, up);
    if (ix->ndim != x->ndim || x->ndim == 0)
        return cg_op_fail(call, "index %s must have the rank of x %s (at least 1)", si, sx);
    if (up->ndim != ix->ndim) return cg_op_fail(call, "updates %s must have the shape of index %s", su, si);
    for (int i = 0; i < ix->ndim; i++)
        if (up->dims[i] != ix->dims[i]) return cg_op_fail(call, "updates %s must have the shape of index %s", su, si);
    const int axis = cg_norm_axis(call->attrs[SE_AXIS].i, x->ndim);
    if (axis < 0) return cg_op_fail(call, "axis %lld is out of range for x %s", (long long)call->attrs[SE_AXIS].i, sx);
    for (int i = 0; i < x->ndim; i++)
        if (i != axis && ix->dims[i] >= 0 && x->dims[i] >= 0 && ix->dims[i] > x->dims[i])
            return cg_op_fail(call, "index %s is larger than x %s in dim %d", si, sx, i);
    call->outputs[0] = *x;
    return CG_OP_OK;
}

static cg_op_status se_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0], *ix = &call->inputs[1];
    const int nd = x->ndim, axis = cg_norm_axis(call->attrs[SE_AXIS].i, nd), red = reduction_of(call);
    const size_t b = cg_dtype_size((cg_dtype)x->dtype);
    int64_t st[CG_MAX_DIMS], s = 1, idx[CG_MAX_DIMS] = {0};
    for (int i = nd - 1; i >= 0; i--) st[i] = s, s *= x->dims[i];
    const int64_t n = cg_desc_numel(ix), len = x->dims[axis];
    const int64_t *ind = a->in[1];
    const char *up = a->in[2];
    char *out = a->out[0];
    if (out != a->in[0]) memcpy(out, a->in[0], (size_t)cg_desc_numel(x) * b);
    for (int64_t i = 0; i < n; i++) {
        int64_t k = ind[i], off = 0;
        if (k < -len || k >= len) return cg_op_fail_range(call, 1, "index", k, i, -len, len - 1);
        if (k < 0) k += len;
        for (int d = 0; d < nd; d++) off += (d == axis ? k : idx[d]) * st[d];
        cg_scatter_combine(x->dtype, red, b, 1, out + (size_t)off * b, up + (size_t)i * b);
        for (int d = nd - 1; d >= 0 && ++idx[d] == ix->dims[d]; d--) idx[d] = 0;
    }
    return CG_OP_OK;
}

/* OpenCL: x copied to the output, then one work-item per line of index
 * along the axis, applying its updates in index order: lines write
 * disjoint output lines, so the result is the CPU's, with no atomics. */
static cg_op_status se_cl(const cg_kernel_args *a) {
    static const char name[] = "scatter_lines";
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0], *ix = &call->inputs[1];
    const int nd = x->ndim, axis = cg_norm_axis(call->attrs[SE_AXIS].i, nd), red = reduction_of(call);
    const int64_t nx = cg_desc_numel(x), n = cg_desc_numel(ix), len = x->dims[axis], m = ix->dims[axis];
    const int wide = nx > INT32_MAX || n > INT32_MAX;
    const char *topt = cg_ops_cl_elem_type_option(cg_dtype_size((cg_dtype)x->dtype));
    cl_mem idx = (cl_mem)a->in[1], up = (cl_mem)a->in[2], dst = (cl_mem)a->out[0];
    if (cg_scatter_cl_copy_x(a, wide, topt)) return CG_OP_ERROR;
    if (n == 0) return CG_OP_OK;
    char opts[96];
    cg_scatter_cl_options(opts, sizeof opts, topt, x->dtype, red);
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_gather, name, wide, 0, opts);
    if (!k) return CG_OP_ERROR;
    /* the line dims (index's, the axis as 1), innermost first, and the
     * strides of index and x */
    cl_long8 dims, sti, stx;
    int64_t si = 1, sx = 1;
    for (int i = 0; i < 8; i++) {
        const int d = nd - 1 - i;
        dims.s[i] = d < 0 ? 1 : d == axis ? 1 : ix->dims[d];
        sti.s[i] = d >= 0 ? si : 0;
        stx.s[i] = d >= 0 ? sx : 0;
        if (d >= 0) si *= ix->dims[d], sx *= x->dims[d];
    }
    const cl_long lines = n / m, lm = m, llen = len, sia = sti.s[nd - 1 - axis], sxa = stx.s[nd - 1 - axis];
    const cl_int cnd = nd;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(idx), CG_OPS_CL_ARG(up),   CG_OPS_CL_ARG(dst), CG_OPS_CL_ARG(lines),
                                     CG_OPS_CL_ARG(cnd), CG_OPS_CL_ARG(dims), CG_OPS_CL_ARG(sti), CG_OPS_CL_ARG(stx),
                                     CG_OPS_CL_ARG(lm),  CG_OPS_CL_ARG(sia),  CG_OPS_CL_ARG(sxa), CG_OPS_CL_ARG(llen)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v) || cg_ops_cl_check_args(a, k, name, 12))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, lines, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

#define D(...) \
    { __VA_ARGS__ }
/* Index values span [-len, len - 1] (duplicates frequent: the reductions
 * combine them in index order); every case once more with indices past the
 * end (an error on every device). */
static const struct {
    cg_op_dtype x;
    int nd;
    int64_t xd[4], id[4];
    const char *attrs;
    int axis;
} se_cases[] = {
    {CG_F32, 1, D(5), D(3), NULL, 0},
    {CG_F32, 2, D(3, 4), D(3, 6), "axis: 1, reduction: \"add\"", 1},
    {CG_I64, 2, D(3, 4), D(5, 4), "axis: 0, reduction: \"mul\"", 0},
    {CG_I32, 3, D(2, 3, 5), D(2, 7, 5), "axis: -2, reduction: \"max\"", 1},
    {CG_F32, 3, D(2, 3, 5), D(1, 2, 9), "axis: 2, reduction: \"min\"", 2},
    {CG_BOOL, 2, D(3, 4), D(2, 4), "axis: 0", 0},
    {CG_F16, 4, D(2, 3, 4, 5), D(2, 3, 1, 5), "axis: 2", 2},
    {CG_F32, 2, D(100, 257), D(100, 300), "axis: 1, reduction: \"add\"", 1},
    {CG_U16, 2, D(3, 4), D(3, 2), "axis: 1", 1},
    {CG_U8, 2, D(3, 4), D(0, 4), NULL, 0}, /* last: its error twin ends the list */
};
#define N_SE ((int32_t)(sizeof se_cases / sizeof se_cases[0]))

static int32_t se_conform(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= 2 * N_SE) return 0;
    const int err = index >= N_SE, i = index % N_SE;
    const double len = (double)se_cases[i].xd[se_cases[i].axis];
    double lo = -2, hi = 2;
    if (se_cases[i].x == CG_U8 || se_cases[i].x == CG_BOOL) lo = 0, hi = 255;
    if (se_cases[i].x == CG_U16) lo = 0, hi = 65535;
    if (se_cases[i].x == CG_I64 || se_cases[i].x == CG_I32) lo = -9, hi = 9;
    cg_ops_case t = {3,
                     {{se_cases[i].x, se_cases[i].nd, {0}, lo, hi},
                      {CG_I64, se_cases[i].nd, {0}, -len, len - 1},
                      {se_cases[i].x, se_cases[i].nd, {0}, lo, hi}},
                     se_cases[i].attrs};
    memcpy(t.in[0].d, se_cases[i].xd, sizeof t.in[0].d);
    memcpy(t.in[1].d, se_cases[i].id, sizeof t.in[1].d);
    memcpy(t.in[2].d, se_cases[i].id, sizeof t.in[2].d);
    cg_ops_fill_case(&t, 1, c);
    if (err) {
        if (cg_desc_numel(&c->inputs[1]) == 0) return 0; /* nothing to be wrong */
        return cg_ops_error_case(c, 1, len, len + 5);
    }
    return 1;
}

static const char *const se_inputs[] = {"x", "index", "updates", NULL};
static const cg_kernel_def se_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = se_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = se_cl, .flags = CG_KERNEL_FLAG_CHECKS),
};
const cg_op_def cg_op_scatter_elements =
    CG_OP(.name = "scatter_elements",
          .doc = "A copy of x (any dtype) where, for each element of index (i64, x's rank, no larger than x "
                 "in the other dims), the element of x at index's position with the axis coordinate "
                 "index[...] is replaced by updates[...] (updates: index's shape, x's dtype), or with "
                 "reduction add, mul, max or min combined with it (f32, i32, i64), in index order (ONNX "
                 "ScatterElements; with none and repeated positions the last update wins). Indices in "
                 "[-len, len) (negative count from the end); one outside is a run-time error on every device.",
          .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .input_names = se_inputs,
          CG_ATTRS(se_attrs), .infer = se_infer, CG_KERNELS(se_kernels), .conform_case = se_conform);
