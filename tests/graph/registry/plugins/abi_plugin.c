/* One operator built three ways, to show that plugins of every minor ABI
 * version load and run side by side:
 *
 *   ABI_1_0: against the 1.0 header (plugins/abi_1_0/clgraph/plugin.h):
 *            kernel structs without create/destroy/supports;
 *   (none):  against today's header (1.1): a per-node state made once per
 *            plan instance (w * scale pre-computed when w is a parameter),
 *            parallel_for for the CPU rows, and an OpenCL kernel that
 *            supports rows of at most 64 (wider rows run the op's
 *            decomposition there);
 *   ABI_1_2: a pretend 1.2 plugin: every struct it hands over is larger
 *            than 1.1's (extra trailing fields filled with garbage the host
 *            must not read), including the arrays of attributes and
 *            kernels, and it claims minor 2.
 *
 *   y = OP(x, w) {scale: 1.0, bias: 0.0}:  y[r, i] = x[r, i] * w[i] * scale + bias
 *   x f32 [R, N], w f32 [N]. OP is abi10_scale, abi11_scale or abi12_scale.
 *
 * The state's bytes are N floats plus one for the ones that recount on
 * each creation, so a test sees how many were made (cg_plan_memory). */
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif

#include <clgraph/plugin.h>

#include <CL/cl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(ABI_1_0)
#define OP_NAME "abi10_scale"
#define PLUGIN_NAME "test-abi-1.0"
#elif defined(ABI_1_2)
#define OP_NAME "abi12_scale"
#define PLUGIN_NAME "test-abi-1.2"
#else
#define OP_NAME "abi11_scale"
#define PLUGIN_NAME "test-abi-1.1"
#endif

enum { A_SCALE, A_BIAS, N_ATTRS };

static cg_op_status fail(const cg_op_call *call, const char *fmt, ...) {
    if (call->err && call->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(call->err, call->err_size, fmt, ap);
        va_end(ap);
    }
    return CG_OP_ERROR;
}

static cg_op_status infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *w = &call->inputs[1];
    if (x->dtype != CG_OP_F32 || w->dtype != CG_OP_F32 || x->ndim != 2 || w->ndim != 1)
        return fail(call, "x must be f32 [R, N] and w f32 [N]");
    if (!cg_dim_compatible(x->dims[1], w->dims[0])) return fail(call, "w must have x's last dim");
    call->outputs[0] = *x;
    return CG_OP_OK;
}

/* ---- CPU ---- */

typedef struct rows_job {
    const float *x, *w;
    float *y;
    int64_t n;
    float scale, bias;
    int prescaled; /* w already holds w * scale */
} rows_job;

static void rows(void *ctx, int64_t begin, int64_t end) {
    const rows_job *j = ctx;
    for (int64_t r = begin; r < end; r++)
        for (int64_t i = 0; i < j->n; i++) {
            float wi = j->prescaled ? j->w[i] : j->w[i] * j->scale;
            j->y[r * j->n + i] = j->x[r * j->n + i] * wi + j->bias;
        }
}

static cg_op_status run_cpu(const cg_kernel_args *a) {
    const cg_op_call *c = a->call;
    rows_job j = {
        a->in[0], a->in[1], a->out[0], c->inputs[0].dims[1], (float)c->attrs[A_SCALE].f, (float)c->attrs[A_BIAS].f, 0};
    int64_t r = c->inputs[0].dims[0];
#if !defined(ABI_1_0)
    if (a->struct_size >= offsetof(cg_kernel_args, state) + sizeof a->state && a->state) {
        j.w = a->state;
        j.prescaled = 1;
    }
    if (c->host->struct_size >= offsetof(cg_host_api, parallel_for) + sizeof c->host->parallel_for) {
        c->host->parallel_for(r, 1, rows, &j);
        return CG_OP_OK;
    }
#endif
    rows(&j, 0, r);
    return CG_OP_OK;
}

#if !defined(ABI_1_0)
/* w * scale, once per plan instance, when w is a parameter. */
static cg_op_status create_cpu(const cg_kernel_args *a, void **state, size_t *bytes) {
    const cg_op_call *c = a->call;
    const float *w = a->in[1];
    *state = NULL;
    *bytes = 0;
    if (!w) return CG_OP_OK; /* w is computed by the graph: nothing to pre-compute */
    int64_t n = c->inputs[1].dims[0];
    float *s = malloc(sizeof *s * (size_t)(n + 1));
    if (!s) return CG_OP_NO_MEMORY;
    for (int64_t i = 0; i < n; i++) s[i] = w[i] * (float)c->attrs[A_SCALE].f;
    *state = s;
    *bytes = sizeof *s * (size_t)(n + 1);
    return CG_OP_OK;
}

static void destroy_cpu(void *state) { free(state); }

/* The OpenCL kernel below handles rows of up to 64 (pretend: a limit of
 * local memory); wider ones go elsewhere. */
static int supports_cl(const cg_kernel_args *a) { return a->call->inputs[0].dims[1] <= 64; }
#endif

/* ---- OpenCL ---- */

static const char cl_src[] =
    "__kernel void abi_scale(__global const float *x, __global const float *w, __global float *y,\n"
    "                        const int n, const int total, const float scale, const float bias) {\n"
    "    int g = (int)get_global_id(0);\n"
    "    if (g < total) y[g] = x[g] * (w[g % n] * scale) + bias;\n"
    "}\n";

static cg_op_status run_cl(const cg_kernel_args *a) {
    const cg_op_call *c = a->call;
    const cg_host_api *h = c->host;
    cl_kernel k = h->cl_kernel(a, cl_src, "", "abi_scale");
    if (!k) return CG_OP_ERROR;
    cl_mem x = (cl_mem)a->in[0], w = (cl_mem)a->in[1], y = (cl_mem)a->out[0];
    cl_int n = (cl_int)c->inputs[0].dims[1], total = (cl_int)(c->inputs[0].dims[0] * c->inputs[0].dims[1]);
    cl_float scale = (cl_float)c->attrs[A_SCALE].f, bias = (cl_float)c->attrs[A_BIAS].f;
    if (clSetKernelArg(k, 0, sizeof x, &x) || clSetKernelArg(k, 1, sizeof w, &w) ||
        clSetKernelArg(k, 2, sizeof y, &y) || clSetKernelArg(k, 3, sizeof n, &n) ||
        clSetKernelArg(k, 4, sizeof total, &total) || clSetKernelArg(k, 5, sizeof scale, &scale) ||
        clSetKernelArg(k, 6, sizeof bias, &bias))
        return fail(c, "clSetKernelArg failed");
    size_t global = (size_t)total, local = 1;
    return total ? h->cl_launch(a, k, 1, &global, &local) : CG_OP_OK;
}

/* y = affine(mul(x, w)) */
static cg_op_status decompose(cg_decomp *d, const cg_op_call *call) {
    const cg_host_api *h = call->host;
    int32_t in[2] = {h->decomp_input(d, 0), h->decomp_input(d, 1)}, xw, y;
    char attrs[128];
    snprintf(attrs, sizeof attrs, "alpha: %.9g, beta: %.9g", call->attrs[A_SCALE].f, call->attrs[A_BIAS].f);
    if (h->decomp_node(d, "mul", 2, in, 1, &xw, NULL) || h->decomp_node(d, "affine", 1, &xw, 1, &y, attrs))
        return CG_OP_ERROR;
    return h->decomp_output(d, 0, y);
}

/* ---- definitions ---- */

#if defined(ABI_1_2)
/* What a 1.2 header might have appended: the host must not read it. */
#define FUTURE uint64_t future[3]
#define GARBAGE .future = {0xdeadbeefdeadbeefull, 0xdeadbeefdeadbeefull, 0xdeadbeefdeadbeefull}
typedef struct attr12 {
    cg_attr_def base;
    FUTURE;
} attr12;
typedef struct kernel12 {
    cg_kernel_def base;
    FUTURE;
} kernel12;
typedef struct op12 {
    cg_op_def base;
    FUTURE;
} op12;
typedef struct desc12 {
    cg_plugin_desc base;
    FUTURE;
} desc12;
#define ATTR_T attr12
#define KERNEL_T kernel12
#define WRAP(type, ...) \
    { .base = {.struct_size = sizeof(type), __VA_ARGS__}, GARBAGE }
#else
#define ATTR_T cg_attr_def
#define KERNEL_T cg_kernel_def
#define WRAP(type, ...) \
    { .struct_size = sizeof(type), __VA_ARGS__ }
#endif

static const char *const input_names[] = {"x", "w", NULL};

static const ATTR_T attrs[N_ATTRS] = {
    [A_SCALE] = WRAP(ATTR_T, .name = "scale", .type = CG_ATTR_FLOAT, .default_float = 1.0, .doc = "factor"),
    [A_BIAS] = WRAP(ATTR_T, .name = "bias", .type = CG_ATTR_FLOAT, .default_float = 0.0, .doc = "added"),
};

#if defined(ABI_1_0)
static const KERNEL_T kernels[] = {
    WRAP(KERNEL_T, .backend = CG_BACKEND_CPU, .run = run_cpu),
    WRAP(KERNEL_T, .backend = CG_BACKEND_OPENCL, .run = run_cl),
};
#else
static const KERNEL_T kernels[] = {
    WRAP(KERNEL_T, .backend = CG_BACKEND_CPU, .run = run_cpu, .create = create_cpu, .destroy = destroy_cpu),
    WRAP(KERNEL_T, .backend = CG_BACKEND_OPENCL, .run = run_cl, .supports = supports_cl),
};
#endif

#define OP_FIELDS                                                                                           \
    .name = OP_NAME, .doc = "y = x * w * scale + bias (ABI test plugin)", .min_inputs = 2, .max_inputs = 2, \
    .min_outputs = 1, .max_outputs = 1, .input_names = input_names, .attrs = (const cg_attr_def *)attrs,    \
    .n_attrs = N_ATTRS, .infer = infer, .decompose = decompose, .kernels = (const cg_kernel_def *)kernels,  \
    .n_kernels = 2

#if defined(ABI_1_2)
static const op12 op_full = WRAP(op12, OP_FIELDS);
static const cg_op_def *const ops[] = {&op_full.base};
static const desc12 desc = WRAP(desc12, .abi_major = CG_PLUGIN_ABI_MAJOR, .abi_minor = 2, .name = PLUGIN_NAME,
                                .version = "1", .ops = ops, .n_ops = 1);
#else
static const cg_op_def op_full = WRAP(cg_op_def, OP_FIELDS);
static const cg_op_def *const ops[] = {&op_full};
static const cg_plugin_desc desc =
    WRAP(cg_plugin_desc, .abi_major = CG_PLUGIN_ABI_MAJOR, .abi_minor = CG_PLUGIN_ABI_MINOR, .name = PLUGIN_NAME,
         .version = "1", .ops = ops, .n_ops = 1);
#endif

CG_PLUGIN_EXPORT const cg_plugin_desc *cg_plugin_entry(void);
CG_PLUGIN_EXPORT const cg_plugin_desc *cg_plugin_entry(void) { return (const cg_plugin_desc *)&desc; }
