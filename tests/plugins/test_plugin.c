/* A plugin written as an outside author would, built in several variants
 * (selected by -D flags) to exercise the loader:
 *   default          : op "square_plus" (y = x*x + offset), a good plugin
 *   WRONG_ABI        : claims ABI major 99
 *   NEWER_MINOR      : claims a newer minor than the host (must load)
 *   DUPLICATE_OP     : registers "add", which is built in
 *   FAILING_INIT     : init refuses with a message
 *   NO_ENTRY         : exports no entry symbol (not a plugin) */
#include <clgraph/plugin.h>
#include <stdio.h>

#ifndef NO_ENTRY

static cg_op_status sq_infer(cg_op_call *call) {
    if (call->inputs[0].dtype != CG_OP_F32) {
        snprintf(call->err, call->err_size, "input must be f32");
        return CG_OP_ERROR;
    }
    call->outputs[0] = call->inputs[0];
    return CG_OP_OK;
}

static cg_op_status sq_cpu(const cg_kernel_args *a) {
    const cg_tensor_desc *d = &a->call->inputs[0];
    int64_t n = 1;
    for (int i = 0; i < d->ndim; i++) n *= d->dims[i];
    const float *x = a->in[0];
    float *y = a->out[0];
    float off = (float)a->call->attrs[0].f;
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * x[i] + off;
    return CG_OP_OK;
}

static const cg_attr_def sq_attrs[] = {
    {sizeof(cg_attr_def), "offset", CG_ATTR_FLOAT, 0, 0, 0.0, NULL, "added to every square"},
};
static const cg_kernel_def sq_kernels[] = {{sizeof(cg_kernel_def), CG_BACKEND_CPU, NULL, sq_cpu}};
static const char *const sq_inputs[] = {"x", NULL};

static const cg_op_def sq_op = {
    .struct_size = sizeof(cg_op_def),
#ifdef DUPLICATE_OP
    .name = "add",
#else
    .name = "square_plus",
#endif
    .doc = "y = x * x + offset",
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .input_names = sq_inputs,
    .attrs = sq_attrs, .n_attrs = 1,
    .infer = sq_infer,
    .kernels = sq_kernels, .n_kernels = 1,
};

#ifdef FAILING_INIT
static cg_op_status refuse(const cg_host_api *host, char *err, size_t n) {
    (void)host;
    snprintf(err, n, "this plugin needs a license file");
    return CG_OP_ERROR;
}
#endif

static const cg_op_def *const ops[] = {&sq_op};

static const cg_plugin_desc desc = {
    .struct_size = sizeof(cg_plugin_desc),
#ifdef WRONG_ABI
    .abi_major = 99,
#else
    .abi_major = CG_PLUGIN_ABI_MAJOR,
#endif
#ifdef NEWER_MINOR
    .abi_minor = CG_PLUGIN_ABI_MINOR + 3,
#else
    .abi_minor = CG_PLUGIN_ABI_MINOR,
#endif
    .name = PLUGIN_NAME,
    .version = "1.0",
#ifdef FAILING_INIT
    .init = refuse,
#endif
    .ops = ops,
    .n_ops = 1,
};

CG_PLUGIN_EXPORT const cg_plugin_desc *cg_plugin_entry(void);
CG_PLUGIN_EXPORT const cg_plugin_desc *cg_plugin_entry(void) { return &desc; }

#else
CG_PLUGIN_EXPORT int not_a_plugin(void);
CG_PLUGIN_EXPORT int not_a_plugin(void) { return 42; }
#endif
