/* The mistakes plugin authors make, one per build (selected by -D), each of
 * which `clgraph conform` must catch and name (tests/graph/conform/
 * test_conform.c). The op is "twice" (y = 2x, f32), with a CPU and an
 * OpenCL kernel; without a -D flag both are right.
 *   SKIP_LAST   : both kernels forget the last element (they agree, so
 *                 comparing them finds nothing; the NaN fill does)
 *   OOB_CL      : the OpenCL kernel has no bounds check and writes past y
 *                 up to the work-group size
 *   OOB_CPU     : the CPU kernel writes y[-1]
 *   WRONG_INFER : infer gives one element fewer than the input has; the
 *                 kernels write what the input has
 *   BIG_INFER   : infer gives one element more; nothing writes it
 *   CRASH_CPU   : the CPU kernel writes to an unmapped address on its
 *                 17-element case
 *   SHARED_BUG  : both kernels add 0.5 (they agree; the decomposition,
 *                 affine {alpha: 2.0, beta: 0.0}, does not)
 *   CPU_BUG     : the CPU kernel alone adds 0.5 (the decomposition sides
 *                 with the OpenCL kernel)
 *   SLOW_CL     : the OpenCL kernel is right but spins 100,000 steps per
 *                 element (conform --verbose flags it)
 *   HANG_CPU    : the CPU kernel never returns on its 17-element case
 *                 (conform --timeout names it)
 *   OOB_READ_CL : the OpenCL kernel reads one element past x (its result
 *                 does not depend on it, but a NaN there spreads) */
#include <clgraph/plugin.h>
#include <stdint.h>
#include <stdio.h>

#include <CL/cl.h>

#ifndef PLUGIN_NAME
#define PLUGIN_NAME "mistakes"
#endif

static int64_t numel(const cg_tensor_desc *d) {
    int64_t n = 1;
    for (int i = 0; i < d->ndim; i++) n *= d->dims[i];
    return n;
}

static cg_op_status twice_infer(cg_op_call *call) {
    if (call->inputs[0].dtype != CG_OP_F32 || call->inputs[0].ndim != 1) {
        snprintf(call->err, call->err_size, "input must be a f32 vector");
        return CG_OP_ERROR;
    }
    call->outputs[0] = call->inputs[0];
#ifdef WRONG_INFER
    call->outputs[0].dims[0] -= 1;
#endif
#ifdef BIG_INFER
    call->outputs[0].dims[0] += 1;
#endif
    return CG_OP_OK;
}

static cg_op_status twice_cpu(const cg_kernel_args *a) {
    int64_t n = numel(&a->call->inputs[0]);
    const float *x = a->in[0];
    float *y = a->out[0];
#ifdef SKIP_LAST
    n -= 1;
#endif
#ifdef CRASH_CPU
    /* an address nothing maps (not NULL, which UBSan would report first) */
    if (n == 17) y = (float *)(uintptr_t)(volatile uintptr_t){64};
#endif
#ifdef HANG_CPU
    for (volatile int spin = 1; n == 17 && spin;) (void)0;
#endif
#if defined(SHARED_BUG) || defined(CPU_BUG)
    for (int64_t i = 0; i < n; i++) y[i] = 2 * x[i] + 0.5f;
#else
    for (int64_t i = 0; i < n; i++) y[i] = 2 * x[i];
#endif
#ifdef OOB_CPU
    y[-1] = 0;
#endif
    return CG_OP_OK;
}

static const char twice_src[] = "__kernel void twice(__global const float *x, __global float *y, int n) {\n"
                                "  int i = get_global_id(0);\n"
#ifdef OOB_CL
                                "  y[i] = 2 * x[i < n ? i : 0];\n"
#elif defined(SKIP_LAST)
                                "  if (i < n - 1) y[i] = 2 * x[i];\n"
#elif defined(OOB_READ_CL)
                                "  if (i < n) y[i] = 2 * x[i] + 0.0f * x[i + 1];\n"
#elif defined(SLOW_CL)
                                "  if (i >= n) return;\n"
                                "  float acc = 0.0f;\n"
                                "  for (int k = 0; k < 100000; k++) acc = acc * 0.5f + x[i];\n"
                                "  y[i] = 2 * x[i] + 0.0f * acc;\n"
#elif defined(SHARED_BUG)
                                "  if (i < n) y[i] = 2 * x[i] + 0.5f;\n"
#else
                                "  if (i < n) y[i] = 2 * x[i];\n"
#endif
                                "}\n";

static cg_op_status twice_cl(const cg_kernel_args *a) {
    const cg_op_call *c = a->call;
    const cg_host_api *h = c->host;
    cl_kernel k = h->cl_kernel(a, twice_src, "", "twice");
    if (!k) return CG_OP_ERROR;
    cl_int n = (cl_int)numel(&c->inputs[0]);
    cl_mem x = (cl_mem)a->in[0], y = (cl_mem)a->out[0];
    cl_int e = clSetKernelArg(k, 0, sizeof x, &x);
    e |= clSetKernelArg(k, 1, sizeof y, &y);
    e |= clSetKernelArg(k, 2, sizeof n, &n);
    if (e != CL_SUCCESS) {
        snprintf(c->err, c->err_size, "clSetKernelArg failed");
        return CG_OP_ERROR;
    }
    if (n == 0) return CG_OP_OK;
    size_t l = 16, g = ((size_t)n + l - 1) / l * l;
    return h->cl_launch(a, k, 1, &g, &l);
}

/* The independent reference conform compares both kernels with. */
static cg_op_status twice_decompose(cg_decomp *d, const cg_op_call *call) {
    const cg_host_api *h = call->host;
    int32_t x = h->decomp_input(d, 0), y = -1;
    cg_op_status st = h->decomp_node(d, "affine", 1, &x, 1, &y, "alpha: 2.0, beta: 0.0");
    return st != CG_OP_OK ? st : h->decomp_output(d, 0, y);
}

static int32_t twice_case(int32_t i, cg_conform_case *c) {
    static const int64_t sizes[] = {1, 3, 17, 1000};
    if (i >= 4) return 0;
    c->n_inputs = 1;
    c->inputs[0].dtype = CG_OP_F32;
    c->inputs[0].ndim = 1;
    c->inputs[0].dims[0] = sizes[i];
    c->lo[0] = -2;
    c->hi[0] = 2;
    c->n_outputs = 1;
    return 1;
}

static const cg_kernel_def twice_kernels[] = {
    {.struct_size = sizeof(cg_kernel_def), .backend = CG_BACKEND_CPU, .run = twice_cpu},
    {.struct_size = sizeof(cg_kernel_def), .backend = CG_BACKEND_OPENCL, .run = twice_cl},
};
static const char *const twice_inputs[] = {"x", NULL};

static const cg_op_def twice_op = {
    .struct_size = sizeof(cg_op_def),
    .name = "twice",
    .doc = "y = 2 x",
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .input_names = twice_inputs,
    .infer = twice_infer,
    .decompose = twice_decompose,
    .kernels = twice_kernels,
    .n_kernels = 2,
    .conform_case = twice_case,
};

static const cg_op_def *const ops[] = {&twice_op};

static const cg_plugin_desc desc = {
    .struct_size = sizeof(cg_plugin_desc),
    .abi_major = CG_PLUGIN_ABI_MAJOR,
    .abi_minor = CG_PLUGIN_ABI_MINOR,
    .name = PLUGIN_NAME,
    .version = "1.0",
    .ops = ops,
    .n_ops = 1,
};

CG_PLUGIN_EXPORT const cg_plugin_desc *cg_plugin_entry(void);
CG_PLUGIN_EXPORT const cg_plugin_desc *cg_plugin_entry(void) { return &desc; }
