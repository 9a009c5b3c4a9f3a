/* cumsum and cumprod: running sums and products along one axis (ONNX
 * CumSum and CumProd, torch.cumsum and torch.cumprod), with ONNX's
 * exclusive and reverse. Each line along the axis is taken in order on
 * every backend (one OpenCL work-item per line), so the results are the
 * same bits everywhere; integers wrap around. */
#include "bcast.h"

#include <stdint.h>
#include <string.h>

#include "reduce.cl.h"

enum { CS_AXIS, CS_EXCLUSIVE, CS_REVERSE };

static const cg_attr_def cumsum_attrs[] = {
    CG_ATTR(.name = "axis", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "the dim summed along; negative counts from the end"),
    CG_ATTR(.name = "exclusive", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "1: element j holds the sum of the elements before j (the first 0)"),
    CG_ATTR(.name = "reverse", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "1: sum from the end of the axis toward its start"),
};

/* x viewed as [outer, len, inner] around the axis. */
static void lines(const cg_op_call *call, int64_t *outer, int64_t *len, int64_t *inner) {
    const cg_tensor_desc *x = &call->inputs[0];
    int axis = (int)call->attrs[CS_AXIS].i;
    if (axis < 0) axis += x->ndim;
    *outer = *inner = 1;
    for (int i = 0; i < axis; i++) *outer *= x->dims[i];
    for (int i = axis + 1; i < x->ndim; i++) *inner *= x->dims[i];
    *len = x->ndim ? x->dims[axis] : 1;
}

static cg_op_status cumsum_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    if (x->dtype != CG_F32 && x->dtype != CG_I32 && x->dtype != CG_I64)
        return cg_op_fail(call, "input 0 (x) has unsupported dtype %s (f32, i32 or i64)", cg_ops_dtype_name(x->dtype));
    const int64_t axis = call->attrs[CS_AXIS].i, nd = x->ndim ? x->ndim : 1;
    if (axis < -nd || axis >= nd)
        return cg_op_fail(call, "axis %lld is out of range for %d dims", (long long)axis, x->ndim);
    for (int k = CS_EXCLUSIVE; k <= CS_REVERSE; k++)
        if (call->attrs[k].i != 0 && call->attrs[k].i != 1)
            return cg_op_fail(call, "attribute %s must be 0 or 1, got %lld", cumsum_attrs[k].name,
                              (long long)call->attrs[k].i);
    call->outputs[0] = *x;
    return CG_OP_OK;
}

/* One line of n elements, `step` apart, from its first (or last) one;
 * integers in their unsigned type (T2) so that they wrap. In place is
 * fine: each element is read before it is written. */
#define CS_LINE(NAME, T, T2, INIT, OP)                                      \
    static void NAME(const T *x, T *y, int64_t n, int64_t step, int excl) { \
        T2 acc = INIT;                                                      \
        for (int64_t j = 0; j < n; j++, x += step, y += step) {             \
            const T2 v = (T2)*x;                                            \
            if (excl) *y = (T)acc;                                          \
            acc = acc OP v;                                                 \
            if (!excl) *y = (T)acc;                                         \
        }                                                                   \
    }
CS_LINE(sum_f32, float, float, 0, +)
CS_LINE(sum_i32, int32_t, uint32_t, 0, +)
CS_LINE(sum_i64, int64_t, uint64_t, 0, +)
CS_LINE(prod_f32, float, float, 1, *)
CS_LINE(prod_i32, int32_t, uint32_t, 1, *)
CS_LINE(prod_i64, int64_t, uint64_t, 1, *)

static cg_op_status cum_cpu(const cg_kernel_args *a, int prod) {
    const cg_op_call *call = a->call;
    const cg_op_dtype dt = call->inputs[0].dtype;
    const size_t b = cg_dtype_size((cg_dtype)dt);
    int64_t outer, len, inner;
    lines(call, &outer, &len, &inner);
    const int excl = call->attrs[CS_EXCLUSIVE].i != 0, rev = call->attrs[CS_REVERSE].i != 0;
    const int64_t step = rev ? -inner : inner;
    if (len == 0) return CG_OP_OK;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const size_t first = (size_t)((o * len + (rev ? len - 1 : 0)) * inner + i) * b;
            const char *x = (const char *)a->in[0] + first;
            char *y = (char *)a->out[0] + first;
            if (dt == CG_I32) (prod ? prod_i32 : sum_i32)((const int32_t *)x, (int32_t *)y, len, step, excl);
            else if (dt == CG_I64) (prod ? prod_i64 : sum_i64)((const int64_t *)x, (int64_t *)y, len, step, excl);
            else (prod ? prod_f32 : sum_f32)((const float *)x, (float *)y, len, step, excl);
        }
    return CG_OP_OK;
}

static cg_op_status cumsum_cpu(const cg_kernel_args *a) { return cum_cpu(a, 0); }
static cg_op_status cumprod_cpu(const cg_kernel_args *a) { return cum_cpu(a, 1); }

static cg_op_status cum_cl(const cg_kernel_args *a, const char *name) {
    const cg_op_call *call = a->call;
    const cg_op_dtype dt = call->inputs[0].dtype;
    int64_t outer, len, inner;
    lines(call, &outer, &len, &inner);
    const int64_t n = outer * inner;
    if (n == 0 || len == 0) return CG_OP_OK;
    const int wide = cg_desc_numel(&call->inputs[0]) > INT32_MAX;
    const char *opts = dt == CG_I32   ? "-DCS_T=int -DCS_U=uint"
                       : dt == CG_I64 ? "-DCS_T=long -DCS_U=ulong"
                                      : "-DCS_T=float -DCS_U=float";
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_reduce, name, wide, 0, opts);
    if (!k) return CG_OP_ERROR;
    cl_mem x = (cl_mem)a->in[0], y = (cl_mem)a->out[0];
    const cl_long l = len, in = inner;
    const cl_int excl = call->attrs[CS_EXCLUSIVE].i != 0, rev = call->attrs[CS_REVERSE].i != 0;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(x),  CG_OPS_CL_ARG(y),    CG_OPS_CL_ARG(l),
                                     CG_OPS_CL_ARG(in), CG_OPS_CL_ARG(excl), CG_OPS_CL_ARG(rev)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v) || cg_ops_cl_idx(a, k, name, 6, wide, n))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

static cg_op_status cumsum_cl(const cg_kernel_args *a) { return cum_cl(a, "cumsum"); }
static cg_op_status cumprod_cl(const cg_kernel_args *a) { return cum_cl(a, "cumprod"); }

#define D(...) \
    { __VA_ARGS__ }
static const cg_ops_case cumsum_cases[] = {
    {1, {{CG_F32, 1, D(1), -2, 2}}, NULL},
    {1, {{CG_F32, 0, D(0), -2, 2}}, NULL},
    {1, {{CG_F32, 1, D(5), -2, 2}}, "exclusive: 1"},
    {1, {{CG_F32, 2, D(4, 5), -2, 2}}, "axis: 1, reverse: 1"},
    {1, {{CG_F32, 2, D(4, 5), -2, 2}}, "axis: -2, exclusive: 1, reverse: 1"},
    {1, {{CG_I32, 3, D(2, 3, 5), -2147483648.0, 2147483647.0}}, "axis: 1"},
    {1, {{CG_I64, 3, D(2, 5, 3), -9e18, 9e18}}, "axis: 2, exclusive: 1"},
    {1, {{CG_I64, 2, D(17, 0), -5, 5}}, "axis: 0"},
    {1, {{CG_F32, 3, D(3, 1000, 7), -2, 2}}, "axis: 1"},
    {1, {{CG_F32, 2, D(100, 257), -2, 2}}, "axis: 1, reverse: 1"},
};

static const cg_ops_case cumprod_cases[] = {
    {1, {{CG_F32, 1, D(1), -2, 2}}, NULL},
    {1, {{CG_F32, 0, D(0), -2, 2}}, NULL},
    {1, {{CG_F32, 1, D(6), -2, 2}}, "exclusive: 1"},
    {1, {{CG_F32, 2, D(4, 5), -2, 2}}, "axis: 1, reverse: 1"},
    {1, {{CG_F32, 2, D(4, 5), -2, 2}}, "axis: -2, exclusive: 1, reverse: 1"},
    {1, {{CG_I32, 3, D(2, 3, 5), -70000.0, 70000.0}}, "axis: 1"},
    {1, {{CG_I64, 3, D(2, 5, 3), -9e9, 9e9}}, "axis: 1, exclusive: 1"},
    {1, {{CG_I64, 2, D(17, 0), -5, 5}}, "axis: 0"},
    {1, {{CG_F32, 3, D(3, 300, 7), 0.5, 1.5}}, "axis: 1"},
    {1, {{CG_F32, 2, D(100, 257), 0.9, 1.1}}, "axis: 1, reverse: 1"},
};

static int32_t cumprod_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= (int32_t)(sizeof cumprod_cases / sizeof cumprod_cases[0])) return 0;
    cg_ops_fill_case(&cumprod_cases[i], 1, c);
    return 1;
}

static int32_t cumsum_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= (int32_t)(sizeof cumsum_cases / sizeof cumsum_cases[0])) return 0;
    cg_ops_fill_case(&cumsum_cases[i], 1, c);
    return 1;
}

static const char *const cumsum_inputs[] = {"x", NULL};
static const cg_kernel_def cumsum_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = cumsum_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = cumsum_cl),
};
const cg_op_def cg_op_cumsum =
    CG_OP(.name = "cumsum",
          .doc = "Running sums of x (f32, i32 or i64) along `axis`: y[..., j, ...] = x[..., 0, ...] + ... + "
                 "x[..., j, ...]; exclusive: 1 leaves x[..., j, ...] out (y starts at 0), reverse: 1 sums from "
                 "the end. Sums are taken in order along the axis on every device; integers wrap around. y "
                 "has x's shape and dtype.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = cumsum_inputs,
          CG_ATTRS(cumsum_attrs), .infer = cumsum_infer, CG_KERNELS(cumsum_kernels), .conform_case = cumsum_conform);

static const cg_kernel_def cumprod_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = cumprod_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = cumprod_cl),
};
const cg_op_def cg_op_cumprod =
    CG_OP(.name = "cumprod",
          .doc = "Running products of x (f32, i32 or i64) along `axis`: y[..., j, ...] = x[..., 0, ...] * ... * "
                 "x[..., j, ...]; exclusive: 1 leaves x[..., j, ...] out (y starts at 1), reverse: 1 multiplies from "
                 "the end. Products are taken in order along the axis on every device; integers wrap around. y has x's "
                 "shape and dtype.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = cumsum_inputs,
          CG_ATTRS(cumsum_attrs), .infer = cumsum_infer, CG_KERNELS(cumprod_kernels), .conform_case = cumprod_conform);
