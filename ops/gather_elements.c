/* gather_elements: out[i...] = x[i...] with the index along `axis` taken
 * from `index` (ONNX GatherElements, torch.gather): x of any dtype, index
 * i64 of the same rank, negative indices counting from the end. (An i32
 * index variant of the OpenCL kernel read wrong addresses on Mesa's
 * llvmpipe, for reasons not found; i32 indices are cast first.) */
#include "bcast.h"

#include <stdint.h>
#include <string.h>

#include "gather.cl.h"

enum { GE_AXIS };

static const cg_attr_def ge_attrs[] = {
    CG_ATTR(.name = "axis", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "the axis the index selects along; negative counts from the end"),
};

static cg_op_status ge_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *ix = &call->inputs[1];
    char sx[128], si[128];
    if (!cg_dtype_size((cg_dtype)x->dtype))
        return cg_op_fail(call, "input 0 (x) has unsupported dtype %s", cg_ops_dtype_name(x->dtype));
    if (ix->dtype != CG_I64)
        return cg_op_fail(call, "input 1 (index) must be i64, got %s (cast it)", cg_ops_dtype_name(ix->dtype));
    cg_ops_format_dims(sx, sizeof sx, x);
    cg_ops_format_dims(si, sizeof si, ix);
    if (ix->ndim != x->ndim || x->ndim == 0)
        return cg_op_fail(call, "index %s must have the rank of x %s (at least 1)", si, sx);
    const int axis = cg_norm_axis(call->attrs[GE_AXIS].i, x->ndim);
    if (axis < 0) return cg_op_fail(call, "axis %lld is out of range for x %s", (long long)call->attrs[GE_AXIS].i, sx);
    for (int i = 0; i < x->ndim; i++)
        if (i != axis && ix->dims[i] >= 0 && x->dims[i] >= 0 && ix->dims[i] > x->dims[i])
            return cg_op_fail(call, "index %s is larger than x %s in dim %d", si, sx, i);
    if (ix->dims[axis] != 0 && x->dims[axis] == 0)
        return cg_op_fail(call, "x %s is empty along axis %d, which index %s selects from", sx, axis, si);
    call->outputs[0] = *ix;
    call->outputs[0].dtype = x->dtype;
    return CG_OP_OK;
}

static cg_op_status ge_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0], *ix = &call->inputs[1];
    const int nd = x->ndim, axis = cg_norm_axis(call->attrs[GE_AXIS].i, nd);
    const size_t b = cg_dtype_size((cg_dtype)x->dtype);
    int64_t st[CG_MAX_DIMS], s = 1, idx[CG_MAX_DIMS] = {0};
    for (int i = nd - 1; i >= 0; i--) st[i] = s, s *= x->dims[i];
    const int64_t n = cg_desc_numel(ix), len = x->dims[axis];
    const char *src = a->in[0];
    char *dst = a->out[0];
    for (int64_t i = 0; i < n; i++) {
        int64_t k = ((const int64_t *)a->in[1])[i], off = 0;
        if (k < -len || k >= len) return cg_op_fail_range(call, 1, "index", k, i, -len, len - 1);
        if (k < 0) k += len;
        for (int d = 0; d < nd; d++) off += (d == axis ? k : idx[d]) * st[d];
        memcpy(dst + (size_t)i * b, src + (size_t)off * b, b);
        for (int d = nd - 1; d >= 0 && ++idx[d] == ix->dims[d]; d--) idx[d] = 0;
    }
    return CG_OP_OK;
}

static cg_op_status ge_cl(const cg_kernel_args *a) {
    static const char name[] = "gather_elements";
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0], *ix = &call->inputs[1];
    const int nd = x->ndim, axis = cg_norm_axis(call->attrs[GE_AXIS].i, nd);
    const int64_t n = cg_desc_numel(ix);
    if (n == 0) return CG_OP_OK;
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_gather, name, cg_desc_numel(x) > INT32_MAX || n > INT32_MAX, 0,
                                   cg_ops_cl_elem_type_option(cg_dtype_size((cg_dtype)x->dtype)));
    if (!k) return CG_OP_ERROR;
    /* dims of index and strides of x, innermost first */
    cl_long8 dims, st;
    int64_t s = 1;
    for (int i = 0; i < 8; i++) {
        const int d = nd - 1 - i;
        dims.s[i] = d >= 0 ? ix->dims[d] : 1;
        st.s[i] = d >= 0 ? s : 0;
        if (d >= 0) s *= x->dims[d];
    }
    cl_mem src = (cl_mem)a->in[0], idx = (cl_mem)a->in[1], dst = (cl_mem)a->out[0];
    cl_long ln = n, len = x->dims[axis];
    cl_int cnd = nd, cax = nd - 1 - axis;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(src), CG_OPS_CL_ARG(idx), CG_OPS_CL_ARG(dst),
                                     CG_OPS_CL_ARG(ln),  CG_OPS_CL_ARG(cnd), CG_OPS_CL_ARG(dims),
                                     CG_OPS_CL_ARG(st),  CG_OPS_CL_ARG(cax), CG_OPS_CL_ARG(len)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v) || cg_ops_cl_check_args(a, k, name, 9))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

#define D(...) \
    { __VA_ARGS__ }
/* Index values span [-len, len - 1] of the axis; every case once more with
 * indices past both ends (an error on every device). */
static const struct {
    cg_op_dtype x, ix;
    int nd;
    int64_t xd[4], id[4];
    const char *attrs;
    int axis;
} ge_cases[] = {
    {CG_F32, CG_I64, 1, D(5), D(3), NULL, 0},
    {CG_F32, CG_I64, 2, D(3, 4), D(3, 4), "axis: 1", 1},
    {CG_I64, CG_I64, 2, D(3, 4), D(2, 4), "axis: 0", 0},
    {CG_BOOL, CG_I64, 3, D(2, 3, 5), D(2, 7, 5), "axis: -2", 1},
    {CG_F16, CG_I64, 3, D(2, 3, 5), D(1, 2, 4), "axis: 2", 2},
    {CG_F32, CG_I64, 4, D(2, 3, 4, 5), D(2, 3, 1, 5), "axis: 2", 2},
    {CG_F32, CG_I64, 2, D(100, 257), D(100, 300), "axis: 1", 1},
    {CG_U64, CG_I64, 2, D(3, 4), D(3, 2), "axis: 1", 1},
    {CG_U8, CG_I64, 2, D(3, 4), D(0, 4), NULL, 0}, /* last: its error twin ends the list */
};
#define N_GE ((int32_t)(sizeof ge_cases / sizeof ge_cases[0]))

static int32_t ge_conform(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= 2 * N_GE) return 0;
    const int err = index >= N_GE;
    const int i = index % N_GE;
    const double len = (double)ge_cases[i].xd[ge_cases[i].axis];
    cg_ops_case t = {
        2,
        {{ge_cases[i].x, ge_cases[i].nd, {0}, -2, 2}, {ge_cases[i].ix, ge_cases[i].nd, {0}, -len, len - 1}},
        ge_cases[i].attrs};
    memcpy(t.in[0].d, ge_cases[i].xd, sizeof t.in[0].d);
    memcpy(t.in[1].d, ge_cases[i].id, sizeof t.in[1].d);
    if (ge_cases[i].x == CG_U8 || ge_cases[i].x == CG_BOOL) t.in[0].lo = 0, t.in[0].hi = 255;
    if (ge_cases[i].x == CG_I64) t.in[0].lo = -9e15, t.in[0].hi = 9e15;
    if (ge_cases[i].x == CG_U64) t.in[0].lo = 0, t.in[0].hi = 1.8e19;
    cg_ops_fill_case(&t, 1, c);
    if (err) {
        if (cg_desc_numel(&c->inputs[1]) == 0) return 0; /* nothing to be wrong */
        return cg_ops_error_case(c, 1, len, len + 5);
    }
    return 1;
}

static const char *const ge_inputs[] = {"x", "index", NULL};
static const cg_kernel_def ge_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = ge_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = ge_cl, .flags = CG_KERNEL_FLAG_CHECKS),
};
const cg_op_def cg_op_gather_elements =
    CG_OP(.name = "gather_elements",
          .doc = "out[i0, .., ia, ..] = x[i0, .., index[i0, .., ia, ..], ..] along axis (ONNX GatherElements, "
                 "torch.gather): x of any dtype, index i64 of x's rank and no larger in the other dims; "
                 "the output has index's shape and x's dtype. Indices in [-len, len) (negative count from the "
                 "end); one outside is a run-time error on every device.",
          .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .input_names = ge_inputs,
          CG_ATTRS(ge_attrs), .infer = ge_infer, CG_KERNELS(ge_kernels), .conform_case = ge_conform);
