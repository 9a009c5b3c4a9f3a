/* An op on the dtypes beyond f32 and i32, for conform's coverage of them
 * (tests/graph/conform/test_conform.c):
 *   scale_where(x: f16[n], k: i64[n], m: bool[n]) -> y: bf16[n], z: i64[n]
 *   y = bf16(m ? x * k : x)   (rounded to nearest even)
 *   z = k * 3000000007 + m    (needs all 64 bits)
 * with a CPU and an OpenCL kernel (the OpenCL one reads half through
 * vload_half, core OpenCL C 1.2, so no extension is needed). Without a -D
 * flag both are right; the mistakes:
 *   TRUNC_I64 : the OpenCL kernel computes z in 32 bits
 *   BF16_CHOP : the OpenCL kernel truncates y to bf16 instead of rounding */
#include <clgraph/plugin.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <CL/cl.h>

static float f16_to_f32(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023; /* the cases hold no inf or NaN */
    float v = e == 0 ? ldexpf((float)m, -24) : ldexpf((float)(m | 1024), e - 25);
    return (h >> 15) ? -v : v;
}

static uint16_t f32_to_bf16(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    b += 0x7FFF + ((b >> 16) & 1);
    return (uint16_t)(b >> 16);
}

static cg_op_status sw_infer(cg_op_call *call) {
    const cg_tensor_desc *in = call->inputs;
    static const cg_op_dtype want[3] = {CG_F16, CG_I64, CG_BOOL};
    for (int i = 0; i < 3; i++)
        if (in[i].dtype != want[i] || in[i].ndim != 1 || in[i].dims[0] != in[0].dims[0]) {
            snprintf(call->err, call->err_size, "inputs must be f16[n], i64[n] and bool[n]");
            return CG_OP_ERROR;
        }
    call->outputs[0] = in[0];
    call->outputs[0].dtype = CG_BF16;
    call->outputs[1] = in[0];
    call->outputs[1].dtype = CG_I64;
    return CG_OP_OK;
}

static cg_op_status sw_cpu(const cg_kernel_args *a) {
    int64_t n = a->call->inputs[0].dims[0];
    const uint16_t *x = a->in[0];
    const int64_t *k = a->in[1];
    const uint8_t *m = a->in[2];
    uint16_t *y = a->out[0];
    int64_t *z = a->out[1];
    for (int64_t i = 0; i < n; i++) {
        float xf = f16_to_f32(x[i]);
        y[i] = f32_to_bf16(m[i] ? xf * (float)k[i] : xf);
        z[i] = k[i] * 3000000007LL + m[i];
    }
    return CG_OP_OK;
}

static const char sw_src[] =
    "__kernel void scale_where(__global const half *x, __global const long *k, __global const uchar *m,\n"
    "                          __global ushort *y, __global long *z, int n) {\n"
    "  int i = get_global_id(0);\n"
    "  if (i >= n) return;\n"
    "  float xf = vload_half(i, x);\n"
    "  float v = m[i] ? xf * (float)k[i] : xf;\n"
    "  uint b = as_uint(v);\n"
#ifdef BF16_CHOP
    "  y[i] = (ushort)(b >> 16);\n"
#else
    "  y[i] = (ushort)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);\n"
#endif
#ifdef TRUNC_I64
    "  z[i] = (int)(k[i] * 3000000007L) + m[i];\n"
#else
    "  z[i] = k[i] * 3000000007L + m[i];\n"
#endif
    "}\n";

static cg_op_status sw_cl(const cg_kernel_args *a) {
    const cg_op_call *c = a->call;
    const cg_host_api *h = c->host;
    cl_kernel k = h->cl_kernel(a, sw_src, "", "scale_where");
    if (!k) return CG_OP_ERROR;
    cl_int n = (cl_int)c->inputs[0].dims[0], e = CL_SUCCESS;
    for (int i = 0; i < 3; i++) e |= clSetKernelArg(k, (cl_uint)i, sizeof(cl_mem), &a->in[i]);
    for (int i = 0; i < 2; i++) e |= clSetKernelArg(k, (cl_uint)(3 + i), sizeof(cl_mem), &a->out[i]);
    e |= clSetKernelArg(k, 5, sizeof n, &n);
    if (e != CL_SUCCESS) {
        snprintf(c->err, c->err_size, "clSetKernelArg failed");
        return CG_OP_ERROR;
    }
    if (n == 0) return CG_OP_OK;
    size_t l = 16, g = ((size_t)n + l - 1) / l * l;
    return h->cl_launch(a, k, 1, &g, &l);
}

static int32_t sw_case(int32_t i, cg_conform_case *c) {
    static const int64_t sizes[] = {1, 5, 33, 1000};
    static const cg_op_dtype types[3] = {CG_F16, CG_I64, CG_BOOL};
    static const double lo[3] = {-4, -5, 0}, hi[3] = {4, 5, 1};
    if (i >= 4) return 0;
    c->n_inputs = 3;
    for (int j = 0; j < 3; j++) {
        c->inputs[j].dtype = types[j];
        c->inputs[j].ndim = 1;
        c->inputs[j].dims[0] = sizes[i];
        c->lo[j] = lo[j];
        c->hi[j] = hi[j];
    }
    c->n_outputs = 2;
    return 1;
}

static const cg_kernel_def sw_kernels[] = {
    {.struct_size = sizeof(cg_kernel_def), .backend = CG_BACKEND_CPU, .run = sw_cpu},
    {.struct_size = sizeof(cg_kernel_def), .backend = CG_BACKEND_OPENCL, .run = sw_cl},
};
static const char *const sw_inputs[] = {"x", "k", "m", NULL};

static const cg_op_def sw_op = {
    .struct_size = sizeof(cg_op_def),
    .name = "scale_where",
    .doc = "y = bf16(m ? x k : x), z = k 3000000007 + m",
    .min_inputs = 3,
    .max_inputs = 3,
    .min_outputs = 2,
    .max_outputs = 2,
    .input_names = sw_inputs,
    .infer = sw_infer,
    .kernels = sw_kernels,
    .n_kernels = 2,
    .conform_case = sw_case,
};

static const cg_op_def *const ops[] = {&sw_op};

static const cg_plugin_desc desc = {
    .struct_size = sizeof(cg_plugin_desc),
    .abi_major = CG_PLUGIN_ABI_MAJOR,
    .abi_minor = CG_PLUGIN_ABI_MINOR,
    .name = "dtypes",
    .version = "1.0",
    .ops = ops,
    .n_ops = 1,
};

CG_PLUGIN_EXPORT const cg_plugin_desc *cg_plugin_entry(void);
CG_PLUGIN_EXPORT const cg_plugin_desc *cg_plugin_entry(void) { return &desc; }
