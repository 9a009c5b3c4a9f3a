/* A plugin written as an outside author would, built in several variants
 * (selected by -D flags) to exercise the loader:
 *   default          : op "square_plus" (y = x*x + offset), a good plugin
 *   WRONG_ABI        : claims ABI major 99
 *   NEWER_MINOR      : claims a newer minor than the host (must load)
 *   DUPLICATE_OP     : registers "add", which is built in
 *   FAILING_INIT     : init refuses with a message
 *   NO_ENTRY         : exports no entry symbol (not a plugin)
 *   WITH_CL          : adds an OpenCL kernel (square_plus)
 *   BAD_CL           : an OpenCL kernel that forgets the offset, which
 *                      `clgraph conform` must catch
 *   DIMS_OLD_ABI     : claims ABI 1.2 but declares a dim list attribute
 *                      (a 1.3 feature): must be refused
 *   HUGE_STRUCT      : a descriptor struct_size of 0xffffffff: refused
 *   NAME_NEWLINE     : a plugin name with a newline in it: refused
 *   INIT_NEWLINE     : init refuses with a message of two lines
 *   INFER_NEWLINE    : infer fails with a message of two lines
 *   INFER_FULL       : infer fills the whole error buffer, no NUL, with a
 *                      newline in it
 *   KERNEL_NEWLINE   : the CPU kernel fails with a message of two lines
 * Each message must reach the user as one line. */
#include <clgraph/plugin.h>
#include <stdio.h>

#ifndef NO_ENTRY

static cg_op_status sq_infer(cg_op_call *call) {
#if defined(INFER_NEWLINE)
    snprintf(call->err, call->err_size, "input x is wrong\nsee the second line");
    return CG_OP_ERROR;
#elif defined(INFER_FULL)
    for (size_t i = 0; i < call->err_size; i++) call->err[i] = i % 64 == 63 ? '\n' : 'x';
    return CG_OP_ERROR;
#endif
    if (call->inputs[0].dtype != CG_OP_F32) {
        snprintf(call->err, call->err_size, "input must be f32");
        return CG_OP_ERROR;
    }
    call->outputs[0] = call->inputs[0];
    return CG_OP_OK;
}

static cg_op_status sq_cpu(const cg_kernel_args *a) {
#ifdef KERNEL_NEWLINE
    snprintf(a->call->err, a->call->err_size, "the kernel failed\r\nsecond line\x1b[31m");
    return CG_OP_ERROR;
#endif
    const cg_tensor_desc *d = &a->call->inputs[0];
    int64_t n = 1;
    for (int i = 0; i < d->ndim; i++) n *= d->dims[i];
    const float *x = a->in[0];
    float *y = a->out[0];
    float off = (float)a->call->attrs[0].f;
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * x[i] + off;
    return CG_OP_OK;
}

#if defined(WITH_CL) || defined(BAD_CL)
#include <CL/cl.h>

static const char sq_src[] =
    "__kernel void square_plus(__global const float *x, __global float *y, int n, float off) {\n"
    "  int i = get_global_id(0);\n"
    "  if (i < n) y[i] = x[i] * x[i] + off;\n"
    "}\n";

static cg_op_status sq_cl(const cg_kernel_args *a) {
    const cg_op_call *c = a->call;
    const cg_host_api *h = c->host;
    cl_kernel k = h->cl_kernel(a, sq_src, "", "square_plus");
    if (!k) return CG_OP_ERROR;
    int64_t n64 = 1;
    for (int i = 0; i < c->inputs[0].ndim; i++) n64 *= c->inputs[0].dims[i];
    cl_int n = (cl_int)n64;
#ifdef BAD_CL
    cl_float off = 0.0f;
#else
    cl_float off = (cl_float)c->attrs[0].f;
#endif
    cl_mem x = (cl_mem)a->in[0], y = (cl_mem)a->out[0];
    cl_int e = clSetKernelArg(k, 0, sizeof x, &x);
    e |= clSetKernelArg(k, 1, sizeof y, &y);
    e |= clSetKernelArg(k, 2, sizeof n, &n);
    e |= clSetKernelArg(k, 3, sizeof off, &off);
    if (e != CL_SUCCESS) {
        snprintf(c->err, c->err_size, "clSetKernelArg failed");
        return CG_OP_ERROR;
    }
    if (n == 0) return CG_OP_OK;
    size_t g = (size_t)n, l = 64;
    return h->cl_launch(a, k, 1, &g, &l);
}

static int32_t sq_case(int32_t i, cg_conform_case *c) {
    static const int64_t sizes[] = {1, 3, 17, 1000};
    if (i >= 4) return 0;
    c->n_inputs = 1;
    c->inputs[0].dtype = CG_OP_F32;
    c->inputs[0].ndim = 1;
    c->inputs[0].dims[0] = sizes[i];
    c->lo[0] = -2;
    c->hi[0] = 2;
    c->n_outputs = 1;
    c->attrs = "offset: 0.5";
    return 1;
}
#endif

#ifdef HUGE_WORKSPACE
/* A workspace size that wraps to 0 when rounded up to any alignment. */
static size_t huge_ws(const cg_op_call *c) {
    (void)c;
    return SIZE_MAX - 3;
}
#define SQ_WORKSPACE huge_ws
#else
#define SQ_WORKSPACE NULL
#endif

static const cg_attr_def sq_attrs[] = {
    {sizeof(cg_attr_def), "offset", CG_ATTR_FLOAT, 0, 0, 0.0, NULL, "added to every square"},
#ifdef DIMS_OLD_ABI
    {sizeof(cg_attr_def), "shape", CG_ATTR_DIMS, 0, 0, 0.0, NULL, "a dim list, new in ABI 1.3"},
#endif
};
static const cg_kernel_def sq_kernels[] = {
    {.struct_size = sizeof(cg_kernel_def), .backend = CG_BACKEND_CPU, .workspace = SQ_WORKSPACE, .run = sq_cpu},
#if defined(WITH_CL) || defined(BAD_CL)
    {.struct_size = sizeof(cg_kernel_def), .backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = sq_cl},
#endif
};
static const char *const sq_inputs[] = {"x", NULL};

static const cg_op_def sq_op = {
    .struct_size = sizeof(cg_op_def),
#ifdef DUPLICATE_OP
    .name = "add",
#else
    .name = "square_plus",
#endif
    .doc = "y = x * x + offset",
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .input_names = sq_inputs,
    .attrs = sq_attrs,
    .n_attrs = (int32_t)(sizeof sq_attrs / sizeof sq_attrs[0]),
    .infer = sq_infer,
    .kernels = sq_kernels,
    .n_kernels = (int32_t)(sizeof sq_kernels / sizeof sq_kernels[0]),
#if defined(WITH_CL) || defined(BAD_CL)
    .conform_case = sq_case,
#endif
};

#if defined(FAILING_INIT) || defined(INIT_NEWLINE)
static cg_op_status refuse(const cg_host_api *host, char *err, size_t n) {
    (void)host;
#ifdef INIT_NEWLINE
    snprintf(err, n, "this plugin needs a license file\nat /etc/license");
#else
    snprintf(err, n, "this plugin needs a license file");
#endif
    return CG_OP_ERROR;
}
#endif

static const cg_op_def *const ops[] = {&sq_op};

static const cg_plugin_desc desc = {
#ifdef HUGE_STRUCT
    .struct_size = 0xffffffffu,
#else
    .struct_size = sizeof(cg_plugin_desc),
#endif
#ifdef WRONG_ABI
    .abi_major = 99,
#else
    .abi_major = CG_PLUGIN_ABI_MAJOR,
#endif
#if defined(NEWER_MINOR)
    .abi_minor = CG_PLUGIN_ABI_MINOR + 3,
#elif defined(DIMS_OLD_ABI)
    .abi_minor = 2,
#else
    .abi_minor = CG_PLUGIN_ABI_MINOR,
#endif
#ifdef NAME_NEWLINE
    .name = "test-name\nsecond line",
#else
    .name = PLUGIN_NAME,
#endif
    .version = "1.0",
#if defined(FAILING_INIT) || defined(INIT_NEWLINE)
    .init = refuse,
#endif
    .ops = ops,
#ifdef TOO_MANY_OPS
    .n_ops = 1 << 20, /* a corrupt count: reading ops[1] is already out of bounds */
#else
    .n_ops = 1,
#endif
};

CG_PLUGIN_EXPORT const cg_plugin_desc *cg_plugin_entry(void);
CG_PLUGIN_EXPORT const cg_plugin_desc *cg_plugin_entry(void) { return &desc; }

#else
CG_PLUGIN_EXPORT int not_a_plugin(void);
CG_PLUGIN_EXPORT int not_a_plugin(void) { return 42; }
#endif
