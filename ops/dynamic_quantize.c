/* dynamic_quantize: ONNX DynamicQuantizeLinear as one node (it was 17 in
 * an imported int8 model, each a launch or a pass): x's range widened to
 * hold 0, scale = range / 255 (1 where the range is 0, as ONNX Runtime,
 * so that an all-zero x quantizes to zeros, not NaN), zero point =
 * round(clip(-min / scale, 0, 255)), y = clip(round(x / scale) + zero
 * point, 0, 255) as u8. Each step rounds as the ops of that chain do
 * (division, round half to even, saturation), so the bits are the ones
 * the chain gave. A NaN in x makes the scale NaN, the zero point and y 0,
 * as the chain's casts do. */
#include "ops_cl.h"

#include <math.h>
#include <stdint.h>

#include "cpu/cpu_clones.h"
#include "quant.cl.h"

static cg_op_status dq_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    if (x->dtype != CG_OP_F32) return cg_op_fail(call, "input 0 (x) must be f32");
    call->outputs[0] = *x;
    call->outputs[0].dtype = CG_U8;
    call->outputs[1].dtype = CG_OP_F32;
    call->outputs[1].ndim = 0;
    call->outputs[2].dtype = CG_U8;
    call->outputs[2].ndim = 0;
    return CG_OP_OK;
}

/* NaN wins, as the chain's reduce_max and minimum/maximum keep it. */
static inline float dq_min(float a, float b) { return (a < b || a != a) ? a : b; }
static inline float dq_max(float a, float b) { return (a > b || a != a) ? a : b; }

static CG_CPU_CLONES void dq_range(const float *x, int64_t n, float *lo, float *hi) {
    float l = 0.0f, h = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        l = dq_min(l, x[i]);
        h = dq_max(h, x[i]);
    }
    *lo = l;
    *hi = h;
}

/* round(v) + zp clipped to [0, 255]; NaN to 0 (the cast's) */
static inline uint8_t dq_u8(float v, float zp) {
    const float t = rintf(v) + zp;
    return t != t ? 0 : t <= 0.0f ? 0 : t >= 255.0f ? 255 : (uint8_t)t;
}

static CG_CPU_CLONES void dq_apply(const float *x, int64_t n, float scale, float zp, uint8_t *y) {
    for (int64_t i = 0; i < n; i++) y[i] = dq_u8(x[i] / scale, zp);
}

static cg_op_status dq_cpu(const cg_kernel_args *a) {
    const int64_t n = cg_desc_numel(&a->call->inputs[0]);
    float lo, hi;
    dq_range(a->in[0], n, &lo, &hi);
    const float range = hi - lo, scale = range == 0.0f ? 1.0f : range / 255.0f;
    const float zf = -(lo / scale), zc = zf != zf ? zf : zf < 0.0f ? 0.0f : zf > 255.0f ? 255.0f : zf;
    const float zp = rintf(zc);
    dq_apply(a->in[0], n, scale, zp, a->out[0]);
    *(float *)a->out[1] = scale;
    *(uint8_t *)a->out[2] = zp != zp ? 0 : (uint8_t)zp;
    return CG_OP_OK;
}

/* One work-group: the range reduced in local memory, then every element. */
static cg_op_status dq_cl(const cg_kernel_args *a) {
    static const char name[] = "dynamic_quantize";
    const int64_t n = cg_desc_numel(&a->call->inputs[0]);
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_quant, name, n > INT32_MAX, 0, NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem x = (cl_mem)a->in[0], y = (cl_mem)a->out[0], s = (cl_mem)a->out[1], z = (cl_mem)a->out[2];
    const cl_long ln = n;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(x), CG_OPS_CL_ARG(ln), CG_OPS_CL_ARG(y), CG_OPS_CL_ARG(s),
                                     CG_OPS_CL_ARG(z)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    const size_t local =
        cg_ops_cl_fit_work_group(cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 1), n > 0 ? n : 1, 1);
    if (cg_ops_cl_arg(a, k, name, 5, local * sizeof(cl_float), NULL) ||
        cg_ops_cl_arg(a, k, name, 6, local * sizeof(cl_float), NULL))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, (int64_t)local, local);
}

#define D(...) \
    { __VA_ARGS__ }
/* a mixed range, all positive, all negative, one element, zeros (range 0:
 * scale 1), an exactly representable range, and a length over many
 * work-group passes */
static const cg_ops_case dq_cases[] = {
    {1, {{CG_OP_F32, 3, D(3, 5, 32), -3, 5}}, NULL},    {1, {{CG_OP_F32, 2, D(7, 9), 0.5, 40}}, NULL},
    {1, {{CG_OP_F32, 1, D(100), -9, -1}}, NULL},        {1, {{CG_OP_F32, 0, D(0), -2, 2}}, NULL},
    {1, {{CG_OP_F32, 2, D(4, 4), 0, 0}}, NULL},         {1, {{CG_OP_F32, 1, D(64), -1.27, 1.28}}, NULL},
    {1, {{CG_OP_F32, 2, D(33, 1001), -300, 20}}, NULL}, {1, {{CG_OP_F32, 1, D(0), 0, 1}}, NULL},
};

static int32_t dq_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= (int32_t)(sizeof dq_cases / sizeof dq_cases[0])) return 0;
    cg_ops_fill_case(&dq_cases[i], 3, c);
    return 1;
}

static const char *const dq_inputs[] = {"x", NULL};
static const cg_kernel_def dq_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = dq_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = dq_cl),
};
const cg_op_def cg_op_dynamic_quantize =
    CG_OP(.name = "dynamic_quantize",
          .doc = "ONNX DynamicQuantizeLinear: f32 x to u8 y with its scale (f32 []) and zero point (u8 []): the "
                 "range [min(x, 0), max(x, 0)], scale = range / 255 (1 when the range is 0), zero point = "
                 "round(clip(-min / scale, 0, 255)), y = clip(round(x / scale) + zero point, 0, 255); rounding "
                 "half to even. A NaN in x gives a NaN scale and zeros.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 3, .max_outputs = 3, .input_names = dq_inputs,
          .infer = dq_infer, CG_KERNELS(dq_kernels), .conform_case = dq_conform);
