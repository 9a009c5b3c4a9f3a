/* trilu: the upper or lower triangle of the last two dims of a tensor of
 * any dtype, the rest zero (ONNX Trilu, torch.triu / torch.tril). */
#include "bcast.h"

#include <stdint.h>
#include <string.h>

#include "shape.cl.h"

enum { TRILU_UPPER, TRILU_K };

static const cg_attr_def trilu_attrs[] = {
    CG_ATTR(.name = "upper", .type = CG_ATTR_INT, .default_int = 1,
            .doc = "1: keep the upper triangle (column - row >= k); 0: the lower (column - row <= k)"),
    CG_ATTR(.name = "k", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "the diagonal: 0 the main one, positive above it, negative below"),
};

static cg_op_status trilu_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    if (x->ndim < 2) return cg_op_fail(call, "input 0 (x) needs at least 2 dims, got %d", x->ndim);
    if (!cg_dtype_size((cg_dtype)x->dtype))
        return cg_op_fail(call, "input 0 (x) has unsupported dtype %s", cg_ops_dtype_name(x->dtype));
    const int64_t u = call->attrs[TRILU_UPPER].i;
    if (u != 0 && u != 1) return cg_op_fail(call, "attribute upper must be 0 or 1, got %lld", (long long)u);
    call->outputs[0] = *x;
    return CG_OP_OK;
}

/* Columns [lo, hi) of row r are kept (clamped to [0, cols]). */
static void kept_cols(int upper, int64_t k, int64_t r, int64_t cols, int64_t *lo, int64_t *hi) {
    k = k < -r - 1 ? -r - 1 : k > cols ? cols : k; /* the same result, no overflow */
    int64_t a = upper ? r + k : 0, b = upper ? cols : r + k + 1;
    *lo = a < 0 ? 0 : a > cols ? cols : a;
    *hi = b < *lo ? *lo : b > cols ? cols : b;
}

static cg_op_status trilu_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0];
    const size_t b = cg_dtype_size((cg_dtype)x->dtype);
    const int64_t rows = x->dims[x->ndim - 2], cols = x->dims[x->ndim - 1];
    const int64_t mats = rows > 0 && cols > 0 ? cg_desc_numel(x) / (rows * cols) : 0;
    const int upper = call->attrs[TRILU_UPPER].i != 0;
    const int64_t k = call->attrs[TRILU_K].i;
    const char *in = a->in[0];
    char *out = a->out[0];
    for (int64_t m = 0; m < mats; m++)
        for (int64_t r = 0; r < rows; r++) {
            const size_t off = (size_t)((m * rows + r) * cols) * b;
            int64_t lo, hi;
            kept_cols(upper, k, r, cols, &lo, &hi);
            /* in place when out == in: the kept part is already there */
            memset(out + off, 0, (size_t)lo * b);
            if (out != in) memcpy(out + off + (size_t)lo * b, in + off + (size_t)lo * b, (size_t)(hi - lo) * b);
            memset(out + off + (size_t)hi * b, 0, (size_t)(cols - hi) * b);
        }
    return CG_OP_OK;
}

static cg_op_status trilu_cl(const cg_kernel_args *a) {
    static const char name[] = "trilu";
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0];
    const int64_t n = cg_desc_numel(x);
    if (n == 0) return CG_OP_OK;
    const int wide = n > INT32_MAX;
    cl_kernel k =
        cg_ops_cl_kernel(a, cg_cl_shape, name, wide, 0, cg_ops_cl_elem_type_option(cg_dtype_size((cg_dtype)x->dtype)));
    if (!k) return CG_OP_ERROR;
    cl_mem in = (cl_mem)a->in[0], out = (cl_mem)a->out[0];
    const cl_long rows = x->dims[x->ndim - 2], cols = x->dims[x->ndim - 1], diag = call->attrs[TRILU_K].i;
    const cl_int upper = call->attrs[TRILU_UPPER].i != 0;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(in),   CG_OPS_CL_ARG(out),  CG_OPS_CL_ARG(rows),
                                     CG_OPS_CL_ARG(cols), CG_OPS_CL_ARG(diag), CG_OPS_CL_ARG(upper)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v) || cg_ops_cl_idx(a, k, name, 6, wide, n))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

#define D(...) \
    { __VA_ARGS__ }
static const cg_ops_case trilu_cases[] = {
    {1, {{CG_F32, 2, D(1, 1), -2, 2}}, NULL},
    {1, {{CG_F32, 2, D(4, 5), -2, 2}}, NULL},
    {1, {{CG_F32, 2, D(4, 5), -2, 2}}, "upper: 0"},
    {1, {{CG_I64, 3, D(2, 3, 5), -9e15, 9e15}}, "k: 2"},
    {1, {{CG_I64, 3, D(2, 5, 3), -9e15, 9e15}}, "upper: 0, k: -1"},
    {1, {{CG_BOOL, 2, D(17, 17), 0, 1}}, "k: -20"},
    {1, {{CG_F16, 2, D(17, 17), -2, 2}}, "upper: 0, k: 20"},
    {1, {{CG_U8, 4, D(2, 3, 1, 7), 0, 255}}, "k: 3"},
    {1, {{CG_F32, 3, D(3, 100, 257), -2, 2}}, "upper: 0, k: 7"},
    {1, {{CG_I32, 2, D(0, 3), -5, 5}}, NULL},
    {1, {{CG_I16, 3, D(2, 9, 7), -32768, 32767}}, "k: 1"},
};

static int32_t trilu_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= (int32_t)(sizeof trilu_cases / sizeof trilu_cases[0])) return 0;
    cg_ops_fill_case(&trilu_cases[i], 1, c);
    return 1;
}

static const char *const trilu_inputs[] = {"x", NULL};
static const cg_kernel_def trilu_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = trilu_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = trilu_cl),
};
const cg_op_def cg_op_trilu =
    CG_OP(.name = "trilu",
          .doc = "The upper (upper: 1, the default) or lower triangle of the last two dims of x (any "
                 "dtype, at least 2 dims), everything else zero: element [..., i, j] is kept where "
                 "j - i >= k (upper) or j - i <= k (lower). The output has x's shape and dtype.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = trilu_inputs,
          CG_ATTRS(trilu_attrs), .infer = trilu_infer, CG_KERNELS(trilu_kernels), .conform_case = trilu_conform);
