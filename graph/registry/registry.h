/* Operator registry of a context: every operator from the built-in plugin
 * and from loaded plugins. The registry keeps a host-layout copy of each
 * plugin's op definitions, attributes and kernels (read at the plugin's own
 * struct sizes), so everything above reads every field of this ABI, for
 * plugins built against 1.0 as for 1.1 or later. */
#ifndef CG_GRAPH_REGISTRY_H
#define CG_GRAPH_REGISTRY_H

#include <stddef.h>

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h"

/* One past the largest cg_backend_kind: kernels are indexed by kind. */
#define CG_BACKEND_KINDS 3

/* The ABI 1.0 layouts, frozen: each struct ended after the field named
 * here, and fields are only ever appended, so these sizes never change.
 * A plugin's struct must be at least this large. */
#define CG_END_OF(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))
#define CG_V1_0_PLUGIN_SIZE CG_END_OF(cg_plugin_desc, n_ops)
#define CG_V1_0_OP_SIZE CG_END_OF(cg_op_def, conform_case)
#define CG_V1_0_KERNEL_SIZE CG_END_OF(cg_kernel_def, run)
#define CG_V1_0_ATTR_SIZE CG_END_OF(cg_attr_def, doc)

typedef struct cg_op_entry cg_op_entry;

typedef struct cg_plugin_rec {
    char *name;         /* plugin name from its descriptor */
    char *path;         /* library path, or "<built-in>" */
    char *version;      /* its version string ("" if none) */
    void *dl;           /* dlopen handle, NULL for built-ins */
    uint32_t abi_minor; /* effective minor: min(plugin's, host's) */
    int n_ops;
    cg_op_entry *entries;   /* one per op */
    cg_op_def *defs;        /* host-layout copies of the op definitions */
    cg_attr_def *attrs;     /* every op's attributes, host layout */
    cg_kernel_def *kernels; /* every op's kernels, host layout */
} cg_plugin_rec;

struct cg_op_entry {
    const cg_op_def *def; /* host-layout copy */
    const cg_plugin_rec *plugin;
    /* The op's kernel for each backend kind, NULL where it has none. */
    const cg_kernel_def *kernel[CG_BACKEND_KINDS];
};

struct cg_context {
    int n_ops, cap_ops;
    const cg_op_entry **ops; /* entries owned by the plugins' records */
    int n_plugins, cap_plugins;
    cg_plugin_rec **plugins;
};

/* Registers every op of a plugin descriptor, after checking the ABI version,
 * struct sizes and that no op name is taken. On failure nothing of the
 * plugin stays registered. `path` is used in messages. Takes ownership of
 * `dl` on success only. */
cg_status cg_registry_add_plugin(cg_context *ctx, const cg_plugin_desc *desc, const char *path, void *dl);

/* Unloads a plugin's library and frees its records (context free). */
void cg_registry_free_plugin(cg_plugin_rec *rec);

/* The entry for an op name, or NULL. */
const cg_op_entry *cg_registry_find(const cg_context *ctx, const char *name);

/* The op's kernel for a backend kind (NULL if none). */
static inline const cg_kernel_def *cg_op_kernel(const cg_op_entry *op, cg_backend_kind kind) {
    return kind > 0 && kind < CG_BACKEND_KINDS ? op->kernel[kind] : NULL;
}

/* The host API table handed to plugins (graph/registry/host_api.c). */
const cg_host_api *cg_host_api_get(void);

/* A call the host makes to an op's callbacks: the host's struct and
 * element sizes and its services filled in, so every call site says only
 * what differs. */
static inline cg_op_call cg_host_call(const char *node_name, int n_in, const cg_tensor_desc *in, int n_out,
                                      cg_tensor_desc *out, const cg_attr_value *attrs, char *err, size_t err_size) {
    cg_op_call call = {.struct_size = sizeof call,
                       .attr_size = sizeof(cg_attr_value),
                       .desc_size = sizeof(cg_tensor_desc),
                       .node_name = node_name,
                       .n_inputs = n_in,
                       .n_outputs = n_out,
                       .inputs = in,
                       .outputs = out,
                       .attrs = attrs,
                       .err = err,
                       .err_size = err_size,
                       .host = cg_host_api_get()};
    return call;
}

/* Loads a plugin library and registers it (plugin_load.c). */
cg_status cg_plugin_load_path(cg_context *ctx, const char *path);
void cg_plugin_unload(void *dl);

#endif
