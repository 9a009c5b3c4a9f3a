/* arange: the sequence start, start + delta, ... as long as one dim of a
 * reference tensor (ONNX Range whose limit is a dynamic dim, torch.arange
 * of a size). Only like's dims are read, so the length is bound with the
 * plan's dims and the op never needs its data. */
#include "ops_cl.h"

#include <stdint.h>
#include <string.h>

#include "dtype.h"
#include "shape.cl.h"

enum { AR_AXIS, AR_START, AR_DELTA, AR_TO };

static const cg_attr_def arange_attrs[] = {
    CG_ATTR(.name = "axis", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "the dim of like whose size is the length; negative counts from the end"),
    CG_ATTR(.name = "start", .type = CG_ATTR_FLOAT, .default_float = 0,
            .doc = "the first element (an integer for integer dtypes)"),
    CG_ATTR(.name = "delta", .type = CG_ATTR_FLOAT, .default_float = 1,
            .doc = "the step (an integer for integer dtypes)"),
    CG_ATTR(.name = "to", .type = CG_ATTR_STRING, .default_string = "i64",
            .doc = "the output dtype: \"i64\", \"i32\" or \"f32\""),
};

static cg_op_status arange_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    const cg_attr_value *to = &call->attrs[AR_TO];
    const char *s = to->present && to->s ? to->s : "i64";
    const cg_dtype dt = cg_dtype_parse(s, strlen(s));
    if (dt != CG_I64 && dt != CG_I32 && dt != CG_F32)
        return cg_op_fail(call, "attribute 'to' must be \"i64\", \"i32\" or \"f32\", got \"%s\"", s);
    int64_t axis = call->attrs[AR_AXIS].i;
    axis += axis < 0 ? x->ndim : 0;
    if (axis < 0 || axis >= x->ndim)
        return cg_op_fail(call, "axis %lld is out of range for like with %d dims", (long long)call->attrs[AR_AXIS].i,
                          x->ndim);
    if (dt != CG_F32)
        for (int k = AR_START; k <= AR_DELTA; k++) {
            const double v = call->attrs[k].f;
            if (v != (double)(int64_t)v || v < -9007199254740992.0 || v > 9007199254740992.0)
                return cg_op_fail(call, "attribute %s must be an integer for %s, got %.17g",
                                  k == AR_START ? "start" : "delta", s, v);
        }
    cg_tensor_desc *o = &call->outputs[0];
    memset(o, 0, sizeof *o);
    o->dtype = (cg_op_dtype)dt;
    o->ndim = 1;
    o->dims[0] = x->dims[axis];
    return CG_OP_OK;
}

static cg_op_status arange_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *o = &call->outputs[0];
    const int64_t n = o->dims[0];
    const double st = call->attrs[AR_START].f, de = call->attrs[AR_DELTA].f;
    if (o->dtype == CG_OP_F32) {
        /* in f32, as ONNX Runtime and the OpenCL kernel compute it */
        float *y = a->out[0];
        const float s = (float)st, d = (float)de;
        for (int64_t i = 0; i < n; i++) y[i] = s + (float)i * d;
    } else if (o->dtype == CG_OP_I32) {
        int32_t *y = a->out[0];
        const uint32_t s = (uint32_t)(int64_t)st, d = (uint32_t)(int64_t)de;
        for (int64_t i = 0; i < n; i++) y[i] = (int32_t)(s + (uint32_t)i * d); /* wraps as int32 does */
    } else {
        int64_t *y = a->out[0];
        const uint64_t s = (uint64_t)(int64_t)st, d = (uint64_t)(int64_t)de;
        for (int64_t i = 0; i < n; i++) y[i] = (int64_t)(s + (uint64_t)i * d);
    }
    return CG_OP_OK;
}

static cg_op_status arange_cl(const cg_kernel_args *a) {
    static const char name[] = "arange";
    const cg_op_call *call = a->call;
    const cg_op_dtype dt = call->outputs[0].dtype;
    const cl_long n = call->outputs[0].dims[0];
    if (n == 0) return CG_OP_OK;
    const char *opts = dt == CG_OP_F32   ? "-DAR_T=float -DAR_U=float"
                       : dt == CG_OP_I32 ? "-DAR_T=int -DAR_U=uint"
                                         : "-DAR_T=long -DAR_U=ulong";
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_shape, name, 0, 0, opts);
    if (!k) return CG_OP_ERROR;
    cl_mem y = (cl_mem)a->out[0];
    const double st = call->attrs[AR_START].f, de = call->attrs[AR_DELTA].f;
    cl_float fs = (cl_float)st, fd = (cl_float)de;
    cl_uint is = (cl_uint)(int64_t)st, id = (cl_uint)(int64_t)de;
    cl_ulong ls = (cl_ulong)(int64_t)st, ld = (cl_ulong)(int64_t)de;
    cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(y), CG_OPS_CL_ARG(fs), CG_OPS_CL_ARG(fd), CG_OPS_CL_ARG(n)};
    if (dt == CG_OP_I32) v[1] = (cg_ops_cl_arg_value)CG_OPS_CL_ARG(is), v[2] = (cg_ops_cl_arg_value)CG_OPS_CL_ARG(id);
    if (dt == (cg_op_dtype)CG_I64)
        v[1] = (cg_ops_cl_arg_value)CG_OPS_CL_ARG(ls), v[2] = (cg_ops_cl_arg_value)CG_OPS_CL_ARG(ld);
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

#define D(...) \
    { __VA_ARGS__ }
static const cg_ops_case arange_cases[] = {
    {1, {{CG_F32, 2, D(3, 7), -2, 2}}, "axis: 1"},
    {1, {{CG_I32, 1, D(0), -2, 2}}, NULL},
    {1, {{CG_BOOL, 3, D(2, 5, 3), 0, 1}}, "axis: -2, start: 3, delta: -2, to: \"i32\""},
    {1, {{CG_I64, 1, D(1000), -5, 5}}, "start: -9000000000, delta: 7"},
    {1, {{CG_F16, 2, D(300, 1), -2, 2}}, "start: 0.5, delta: 0.25, to: \"f32\""},
};

static int32_t arange_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= (int32_t)(sizeof arange_cases / sizeof arange_cases[0])) return 0;
    cg_ops_fill_case(&arange_cases[i], 1, c);
    return 1;
}

static const char *const arange_inputs[] = {"like", NULL};
static const cg_kernel_def arange_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = arange_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = arange_cl),
};
const cg_op_def cg_op_arange =
    CG_OP(.name = "arange",
          .doc = "A 1-D tensor of like.dims[axis] elements: y[i] = start + i * delta, in dtype `to` (i64 "
                 "by default; integers wrap, f32 is computed in f32). Only like's dims are read (any "
                 "dtype), so the length follows a dynamic dim.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = arange_inputs,
          CG_ATTRS(arange_attrs), .infer = arange_infer, CG_KERNELS(arange_kernels), .conform_case = arange_conform);
