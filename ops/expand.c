/* expand: a tensor of any dtype broadcast to a shape (NumPy rules in both
 * directions, as ONNX Expand and torch.Tensor.expand with 1s), a copy. */
#include "bcast.h"

#include <stdint.h>
#include <string.h>

#include "broadcast.cl.h"

enum { EXPAND_SHAPE };

static const cg_attr_def expand_attrs[] = {
    CG_ATTR(.name = "shape", .type = CG_ATTR_DIMS, .required = 1,
            .doc = "the dims x is broadcast against (sizes or dim names; a 1 keeps x's dim); the output has "
                   "the broadcast shape"),
};

static cg_op_status expand_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    const cg_attr_value *sh = &call->attrs[EXPAND_SHAPE];
    if (!cg_dtype_size((cg_dtype)x->dtype))
        return cg_op_fail(call, "input 0 (x) has unsupported dtype %s", cg_ops_dtype_name(x->dtype));
    if (sh->n_ints > CG_MAX_DIMS)
        return cg_op_fail(call, "attribute shape has %d dims, at most %d", (int)sh->n_ints, CG_MAX_DIMS);
    cg_tensor_desc t = *x;
    t.ndim = sh->n_ints;
    for (int i = 0; i < sh->n_ints; i++) {
        if (sh->ints[i] == CG_DIM_UNKNOWN || sh->ints[i] < CG_DIM_SYM(INT32_MAX))
            return cg_op_fail(call, "attribute shape has a negative dim %lld", (long long)sh->ints[i]);
        t.dims[i] = sh->ints[i];
    }
    call->outputs[0].dtype = x->dtype;
    if (cg_broadcast_shapes(call, x, &t, &call->outputs[0]) != CG_OP_OK) return CG_OP_ERROR;
    /* further inputs lend their dims only (a dynamic shape to fill) */
    for (int i = 1; i < call->n_inputs; i++) {
        t = call->outputs[0];
        if (cg_broadcast_shapes(call, &t, &call->inputs[i], &call->outputs[0]) != CG_OP_OK) return CG_OP_ERROR;
        call->outputs[0].dtype = x->dtype;
    }
    return CG_OP_OK;
}

#define COPY_LOOP(NAME, T)                                                                                            \
    static void NAME(const void *const *in, const int64_t *s, const int64_t *rs, void *o_, int64_t n, int64_t rows) { \
        T *o = o_;                                                                                                    \
        for (int64_t r = 0; r < rows; r++, o += n) {                                                                  \
            const T *x = (const T *)in[0] + r * rs[0];                                                                \
            if (s[0]) memcpy(o, x, (size_t)n * sizeof(T));                                                            \
            else                                                                                                      \
                for (int64_t i = 0; i < n; i++) o[i] = x[0];                                                          \
        }                                                                                                             \
    }
COPY_LOOP(copy_1, uint8_t)
COPY_LOOP(copy_2, uint16_t)
COPY_LOOP(copy_4, uint32_t)
COPY_LOOP(copy_8, uint64_t)

static cg_op_status expand_cpu(const cg_kernel_args *a) {
    const cg_tensor_desc *o = &a->call->outputs[0];
    if (cg_desc_numel(o) == 0) return CG_OP_OK;
    const size_t b = cg_dtype_size((cg_dtype)o->dtype);
    cg_bcast p;
    cg_bcast_make(&p, 1, a->call->inputs, o);
    const void *in[1] = {a->in[0]};
    cg_bcast_run(&p, b == 1 ? copy_1 : b == 2 ? copy_2 : b == 8 ? copy_8 : copy_4, in, &b, a->out[0], b);
    return CG_OP_OK;
}

static cg_op_status expand_cl(const cg_kernel_args *a) {
    static const char name[] = "expand_nd";
    const cg_tensor_desc *o = &a->call->outputs[0];
    const int64_t n = cg_desc_numel(o);
    if (n == 0) return CG_OP_OK;
    cg_bcast p;
    cg_bcast_make(&p, 1, a->call->inputs, o);
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_broadcast, name, n > INT32_MAX, 0,
                                   cg_ops_cl_elem_type_option(cg_dtype_size((cg_dtype)o->dtype)));
    if (!k) return CG_OP_ERROR;
    cl_mem x = (cl_mem)a->in[0], out = (cl_mem)a->out[0];
    cl_long ln = n;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(x), CG_OPS_CL_ARG(out), CG_OPS_CL_ARG(ln)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v) || cg_bcast_cl_args(a, k, name, 3, &p))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

#define D(...) \
    { __VA_ARGS__ }
static const cg_ops_case expand_cases[] = {
    {1, {{CG_F32, 0, D(0), -2, 2}}, "shape: [3]"},
    {1, {{CG_F32, 1, D(3), -2, 2}}, "shape: [4, 1]"},
    {1, {{CG_I64, 2, D(3, 1), -9e15, 9e15}}, "shape: [2, 1, 6]"},
    {1, {{CG_BOOL, 2, D(1, 17), 0, 1}}, "shape: [5, 1]"},
    {1, {{CG_F16, 3, D(2, 1, 3), -2, 2}}, "shape: [2, 7, 1]"},
    {1, {{CG_U8, 1, D(1), 0, 255}}, "shape: [3, 1, 1, 257]"},
    {1, {{CG_F32, 2, D(1000, 1), -2, 2}}, "shape: [1000, 100]"},
    {1, {{CG_I32, 2, D(3, 5), -9, 9}}, "shape: [1, 1]"},
    {1, {{CG_U32, 2, D(3, 1), 0, 4.2e9}}, "shape: [2, 3, 17]"},
    {2, {{CG_F32, 0, D(0), -2, 2}, {CG_I64, 2, D(4, 3), -9, 9}}, "shape: []"},
    {3, {{CG_I64, 2, D(1, 5), -9, 9}, {CG_BOOL, 3, D(3, 4, 1), 0, 1}, {CG_F32, 1, D(5), -1, 1}}, "shape: [3, 1, 1]"},
};

static int32_t expand_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= (int32_t)(sizeof expand_cases / sizeof expand_cases[0])) return 0;
    cg_ops_fill_case(&expand_cases[i], 1, c);
    return 1;
}

static const char *const expand_inputs[] = {"x", "like", NULL};
static const cg_kernel_def expand_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = expand_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = expand_cl),
};
const cg_op_def cg_op_expand =
    CG_OP(.name = "expand",
          .doc = "x (any dtype) broadcast against the dims of attribute shape, and of each further "
                 "input (like, any dtype: only its dims are read), with NumPy rules: the output has the "
                 "broadcast shape, each element a copy of the x element it maps to.",
          .min_inputs = 1, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1, .input_names = expand_inputs,
          CG_ATTRS(expand_attrs), .infer = expand_infer, CG_KERNELS(expand_kernels), .conform_case = expand_conform);
