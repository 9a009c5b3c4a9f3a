/* gather_nd: slices of x addressed by index tuples (ONNX GatherND with
 * batch_dims): x of any dtype, indices i64 whose last dim k is the tuple
 * length; negative values count from the end. */
#include "bcast.h"

#include <stdint.h>
#include <string.h>

#include "index.cl.h"

enum { GN_BATCH };

static const cg_attr_def gn_attrs[] = {
    CG_ATTR(.name = "batch_dims", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "leading dims x and indices share: each batch's tuples index its own slice of x"),
};

static cg_op_status gn_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *ix = &call->inputs[1];
    char sx[128], si[128];
    cg_ops_format_dims(sx, sizeof sx, x);
    cg_ops_format_dims(si, sizeof si, ix);
    const int64_t b = call->attrs[GN_BATCH].i;
    if (!cg_dtype_size((cg_dtype)x->dtype))
        return cg_op_fail(call, "input 0 (x) has unsupported dtype %s", cg_ops_dtype_name(x->dtype));
    if (ix->dtype != CG_I64)
        return cg_op_fail(call, "input 1 (indices) must be i64, got %s (cast it)", cg_ops_dtype_name(ix->dtype));
    if (ix->ndim < 1 || x->ndim < 1) return cg_op_fail(call, "x %s and indices %s need at least 1 dim", sx, si);
    if (b < 0 || b >= ix->ndim || b >= x->ndim)
        return cg_op_fail(call, "batch_dims %lld must be below the ranks of x %s and indices %s", (long long)b, sx, si);
    const int64_t k = ix->dims[ix->ndim - 1];
    if (k < 1 || k > x->ndim - b)
        return cg_op_fail(call, "the last dim of indices %s must be a size from 1 to %lld (x %s past batch_dims)", si,
                          (long long)(x->ndim - b), sx);
    for (int i = 0; i < b; i++)
        if (!cg_dim_compatible(x->dims[i], ix->dims[i]))
            return cg_op_fail(call, "x %s and indices %s differ in batch dim %d", sx, si, i);
    const int nd = ix->ndim - 1 + x->ndim - (int)b - (int)k;
    if (nd > CG_MAX_DIMS) return cg_op_fail(call, "the output would have %d dims (at most %d)", nd, CG_MAX_DIMS);
    cg_tensor_desc *y = &call->outputs[0];
    y->dtype = x->dtype;
    y->ndim = nd;
    for (int i = 0; i < ix->ndim - 1; i++) y->dims[i] = ix->dims[i];
    for (int i = (int)(b + k); i < x->ndim; i++) y->dims[ix->ndim - 1 + i - (int)(b + k)] = x->dims[i];
    return CG_OP_OK;
}

/* The layout of one call: tuples of k values, each addressing a slice of
 * `inner` elements; batches of per_batch tuples, bstride elements of x
 * apart; dims and strides of the k indexed axes. */
typedef struct gn_layout {
    int k;
    int64_t tuples, inner, per_batch, bstride, xd[CG_MAX_DIMS], xs[CG_MAX_DIMS];
} gn_layout;

static gn_layout layout_of(const cg_tensor_desc *x, const cg_tensor_desc *ix, int b) {
    gn_layout l;
    l.k = (int)ix->dims[ix->ndim - 1];
    l.tuples = cg_desc_numel(ix) / l.k;
    l.inner = 1;
    for (int i = b + l.k; i < x->ndim; i++) l.inner *= x->dims[i];
    int64_t s = l.inner;
    for (int j = l.k - 1; j >= 0; j--) l.xd[j] = x->dims[b + j], l.xs[j] = s, s *= x->dims[b + j];
    l.bstride = s;
    int64_t nb = 1;
    for (int i = 0; i < b; i++) nb *= ix->dims[i];
    l.per_batch = nb ? l.tuples / nb : 1;
    if (!l.per_batch) l.per_batch = 1;
    return l;
}

/* The offset in x's batch of tuple t, or -1 with the message set. */
static int64_t tuple_offset(const cg_op_call *call, const gn_layout *l, const int64_t *idx, int64_t t) {
    int64_t off = 0;
    for (int j = 0; j < l->k; j++) {
        const int64_t v = idx[t * l->k + j], n = l->xd[j];
        if (v < -n || v >= n) return cg_op_fail_range(call, 1, "indices", v, t * l->k + j, -n, n - 1), -1;
        off += (v < 0 ? v + n : v) * l->xs[j];
    }
    return off;
}

static cg_op_status gn_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const gn_layout l = layout_of(&call->inputs[0], &call->inputs[1], (int)call->attrs[GN_BATCH].i);
    const size_t b = cg_dtype_size((cg_dtype)call->inputs[0].dtype), row = (size_t)l.inner * b;
    const char *src = a->in[0];
    char *dst = a->out[0];
    for (int64_t t = 0; t < l.tuples; t++) {
        const int64_t off = tuple_offset(call, &l, a->in[1], t);
        if (off < 0) return CG_OP_ERROR;
        memcpy(dst + (size_t)t * row, src + (size_t)((t / l.per_batch) * l.bstride + off) * b, row);
    }
    return CG_OP_OK;
}

static cg_op_status gn_cl(const cg_kernel_args *a) {
    static const char name[] = "gather_nd";
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0];
    const gn_layout l = layout_of(x, &call->inputs[1], (int)call->attrs[GN_BATCH].i);
    const int64_t n = l.tuples * l.inner;
    if (n == 0) return CG_OP_OK;
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_index, name, cg_desc_numel(x) > INT32_MAX || n > INT32_MAX, 0,
                                   cg_ops_cl_elem_type_option(cg_dtype_size((cg_dtype)x->dtype)));
    if (!k) return CG_OP_ERROR;
    cl_long8 xd, xs;
    for (int j = 0; j < 8; j++) xd.s[j] = j < l.k ? l.xd[j] : 1, xs.s[j] = j < l.k ? l.xs[j] : 0;
    cl_mem src = (cl_mem)a->in[0], idx = (cl_mem)a->in[1], dst = (cl_mem)a->out[0];
    cl_long ln = n, inner = l.inner, per = l.per_batch, bs = l.bstride;
    cl_int ck = l.k;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(src),   CG_OPS_CL_ARG(idx), CG_OPS_CL_ARG(dst), CG_OPS_CL_ARG(ln),
                                     CG_OPS_CL_ARG(inner), CG_OPS_CL_ARG(per), CG_OPS_CL_ARG(bs),  CG_OPS_CL_ARG(ck),
                                     CG_OPS_CL_ARG(xd),    CG_OPS_CL_ARG(xs)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v) || cg_ops_cl_check_args(a, k, name, 10))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

#define D(...) \
    { __VA_ARGS__ }
/* Index values span [-len, len - 1] of the smallest indexed axis; every
 * case once more with values past every axis (an error on every device). */
static const struct {
    cg_op_dtype x;
    int nx, ni;
    int64_t xd[4], id[4];
    const char *attrs;
    double len;
} gn_cases[] = {
    {CG_F32, 1, 2, D(5), D(3, 1), NULL, 5},
    {CG_F32, 2, 2, D(3, 4), D(6, 2), NULL, 3},
    {CG_I64, 3, 3, D(2, 3, 5), D(2, 4, 1), NULL, 2},
    {CG_I32, 3, 2, D(2, 3, 5), D(2, 2), "batch_dims: 1", 3},
    {CG_F16, 4, 3, D(2, 3, 4, 5), D(2, 3, 2), "batch_dims: 1", 3},
    {CG_BOOL, 4, 4, D(2, 3, 4, 5), D(2, 3, 7, 2), "batch_dims: 2", 4},
    {CG_U8, 2, 2, D(300, 257), D(100, 1), NULL, 300},
    {CG_F32, 2, 3, D(3, 4), D(0, 2, 2), NULL, 3}, /* last: no error twin */
};
#define N_GN ((int32_t)(sizeof gn_cases / sizeof gn_cases[0]))

static int32_t gn_conform(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= 2 * N_GN - 1) return 0;
    const int err = index >= N_GN, i = index % N_GN;
    const double len = gn_cases[i].len;
    double lo = -2, hi = 2;
    if (gn_cases[i].x == CG_U8 || gn_cases[i].x == CG_BOOL) lo = 0, hi = 255;
    if (gn_cases[i].x == CG_I64) lo = -9e15, hi = 9e15;
    if (gn_cases[i].x == CG_I32) lo = -9e8, hi = 9e8;
    cg_ops_case t = {2,
                     {{gn_cases[i].x, gn_cases[i].nx, {0}, lo, hi}, {CG_I64, gn_cases[i].ni, {0}, -len, len - 1}},
                     gn_cases[i].attrs};
    memcpy(t.in[0].d, gn_cases[i].xd, sizeof t.in[0].d);
    memcpy(t.in[1].d, gn_cases[i].id, sizeof t.in[1].d);
    cg_ops_fill_case(&t, 1, c);
    return err ? cg_ops_error_case(c, 1, 300, 305) : 1;
}

static const char *const gn_inputs[] = {"x", "indices", NULL};
static const cg_kernel_def gn_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = gn_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = gn_cl, .flags = CG_KERNEL_FLAG_CHECKS),
};
const cg_op_def cg_op_gather_nd =
    CG_OP(.name = "gather_nd",
          .doc = "Slices of x (any dtype) addressed by the tuples in the last dim of indices (i64, k values "
                 "each; ONNX GatherND): the output is indices' shape without its last dim, then x's dims past "
                 "batch_dims + k. With batch_dims b the first b dims of x and indices match and each batch's "
                 "tuples address its own slice of x. Values in [-len, len) of their axis (negative count from "
                 "the end); one outside is a run-time error on every device.",
          .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .input_names = gn_inputs,
          CG_ATTRS(gn_attrs), .infer = gn_infer, CG_KERNELS(gn_kernels), .conform_case = gn_conform);
