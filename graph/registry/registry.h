/* Operator registry of a context: every operator from the built-in plugin
 * and from loaded plugins, with its kernel per backend kind. */
#ifndef CG_GRAPH_REGISTRY_H
#define CG_GRAPH_REGISTRY_H

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h"

typedef struct cg_plugin_rec {
    char *name;         /* plugin name from its descriptor */
    char *path;         /* library path, or "<built-in>" */
    void *dl;           /* dlopen handle, NULL for built-ins */
    uint32_t abi_minor; /* effective minor: min(plugin's, host's) */
} cg_plugin_rec;

typedef struct cg_op_entry {
    const cg_op_def *def;
    const cg_plugin_rec *plugin;
    const cg_kernel_def *cpu;    /* NULL if the op has no CPU kernel */
    const cg_kernel_def *opencl; /* NULL if the op has no OpenCL kernel */
} cg_op_entry;

struct cg_context {
    cg_host_api host;
    int n_ops, cap_ops;
    cg_op_entry *ops;
    int n_plugins, cap_plugins;
    cg_plugin_rec **plugins;
};

/* Registers every op of a plugin descriptor, after checking the ABI version,
 * struct sizes and that no op name is taken. On failure nothing of the
 * plugin stays registered. `path` is used in messages. Takes ownership of
 * `dl` on success only. */
cg_status cg_registry_add_plugin(cg_context *ctx, const cg_plugin_desc *desc,
                                 const char *path, void *dl);

/* The entry for an op name, or NULL. */
const cg_op_entry *cg_registry_find(const cg_context *ctx, const char *name);

/* The host API table handed to plugins (graph/context.c). */
const cg_host_api *cg_host_api_get(void);

#endif
