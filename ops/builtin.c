/* The built-in operators, registered through the same plugin ABI as any
 * third-party plugin (the context calls cg_builtin_plugin()). */
#include "builtin.h"
#include "clgraph/version.h"
#include "ops_common.h"

#define CG_OP_PTR(n) &cg_op_##n,
static const cg_op_def *const builtin_ops[] = {CG_BUILTIN_OPS(CG_OP_PTR)};
#undef CG_OP_PTR

static const cg_plugin_desc builtin_desc = {
    .struct_size = sizeof(cg_plugin_desc),
    .abi_major = CG_PLUGIN_ABI_MAJOR,
    .abi_minor = CG_PLUGIN_ABI_MINOR,
    .name = "builtin",
    .version = CG_VERSION_STRING,
    .init = NULL,
    .ops = builtin_ops,
    .n_ops = (int32_t)(sizeof builtin_ops / sizeof builtin_ops[0]),
};

const cg_plugin_desc *cg_builtin_plugin(void) { return &builtin_desc; }
