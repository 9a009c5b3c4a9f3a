/* Context and operator registry: every op, built-in or from a plugin, is
 * admitted through cg_registry_add_plugin with the same checks. */
#include "registry.h"

#include <ctype.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "builtin.h"
#include "decomp.h"
#include "error.h"

cg_status cg_plugin_load_path(cg_context *ctx, const char *path); /* plugin_load.c */

/* ---- the host API table handed to plugins ---- */

static int32_t decomp_input(cg_decomp *d, int32_t i) { return d && d->iface ? d->iface->input(d, i) : -1; }

static cg_op_status decomp_node(cg_decomp *d, const char *op, int32_t n_in, const int32_t *in, int32_t n_out,
                                int32_t *out, const char *attrs) {
    return d && d->iface ? d->iface->node(d, op, n_in, in, n_out, out, attrs) : CG_OP_ERROR;
}

static cg_op_status decomp_output(cg_decomp *d, int32_t i, int32_t v) {
    return d && d->iface ? d->iface->output(d, i, v) : CG_OP_ERROR;
}

static cg_host_api host_api;
static pthread_once_t host_api_once = PTHREAD_ONCE_INIT;

static void host_api_init(void) {
    host_api.struct_size = sizeof(cg_host_api);
    host_api.abi_major = CG_PLUGIN_ABI_MAJOR;
    host_api.abi_minor = CG_PLUGIN_ABI_MINOR;
    host_api.decomp_input = decomp_input;
    host_api.decomp_node = decomp_node;
    host_api.decomp_output = decomp_output;
    cg_backend_host_services(&host_api);
}

const cg_host_api *cg_host_api_get(void) {
    pthread_once(&host_api_once, host_api_init);
    return &host_api;
}

/* Smallest struct sizes the host accepts: the v1.0 layouts. A plugin built
 * against a later minor has larger structs, of which the host reads this
 * prefix only. */
#define V1_PLUGIN_SIZE sizeof(cg_plugin_desc)
#define V1_OP_SIZE sizeof(cg_op_def)
#define V1_KERNEL_SIZE sizeof(cg_kernel_def)
#define V1_ATTR_SIZE sizeof(cg_attr_def)

static int valid_ident(const char *s) {
    if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return 0;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '.')) return 0;
    return 1;
}

const cg_op_entry *cg_registry_find(const cg_context *ctx, const char *name) {
    for (int i = 0; i < ctx->n_ops; i++)
        if (strcmp(ctx->ops[i].def->name, name) == 0) return &ctx->ops[i];
    return NULL;
}

/* Checks one op definition of a plugin; `tag` names the plugin in messages. */
static cg_status check_op(const cg_op_def *op, const char *tag, int idx) {
    if (!op) return cg_error(CG_ERR_PLUGIN, "%s: op #%d is NULL", tag, idx);
    if (op->struct_size < V1_OP_SIZE)
        return cg_error(CG_ERR_PLUGIN, "%s: op #%d: struct_size %u is smaller than ABI 1.0's %zu",
                        tag, idx, op->struct_size, V1_OP_SIZE);
    if (!valid_ident(op->name))
        return cg_error(CG_ERR_PLUGIN, "%s: op #%d has an invalid name", tag, idx);
    if (!op->infer)
        return cg_error(CG_ERR_PLUGIN, "%s: op '%s' has no infer function", tag, op->name);
    if (op->min_inputs < 0 || (op->max_inputs >= 0 && op->max_inputs < op->min_inputs) ||
        op->min_outputs < 1 || op->max_outputs < op->min_outputs || op->max_outputs > 64)
        return cg_error(CG_ERR_PLUGIN, "%s: op '%s' declares an invalid arity", tag, op->name);
    if (op->n_attrs < 0 || (op->n_attrs > 0 && !op->attrs))
        return cg_error(CG_ERR_PLUGIN, "%s: op '%s' declares invalid attributes", tag, op->name);
    for (int a = 0; a < op->n_attrs; a++) {
        const cg_attr_def *ad = &op->attrs[a];
        if (ad->struct_size < V1_ATTR_SIZE || !valid_ident(ad->name) ||
            ad->type < CG_ATTR_INT || ad->type > CG_ATTR_INTS)
            return cg_error(CG_ERR_PLUGIN, "%s: op '%s': attribute #%d is invalid", tag, op->name, a);
        for (int b = 0; b < a; b++)
            if (strcmp(op->attrs[b].name, ad->name) == 0)
                return cg_error(CG_ERR_PLUGIN, "%s: op '%s': attribute '%s' declared twice", tag,
                                op->name, ad->name);
    }
    if (op->n_kernels < 0 || (op->n_kernels > 0 && !op->kernels))
        return cg_error(CG_ERR_PLUGIN, "%s: op '%s' declares invalid kernels", tag, op->name);
    for (int k = 0; k < op->n_kernels; k++) {
        /* Kernels sit in an array, so their stride is the host's struct size:
         * a plugin whose kernel struct differs cannot be indexed safely. */
        const cg_kernel_def *kd = &op->kernels[k];
        if (kd->struct_size != V1_KERNEL_SIZE || !kd->run ||
            (kd->backend != CG_BACKEND_CPU && kd->backend != CG_BACKEND_OPENCL))
            return cg_error(CG_ERR_PLUGIN, "%s: op '%s': kernel #%d is invalid", tag, op->name, k);
    }
    return CG_OK;
}

cg_status cg_registry_add_plugin(cg_context *ctx, const cg_plugin_desc *desc,
                                 const char *path, void *dl) {
    if (!desc)
        return cg_error(CG_ERR_PLUGIN, "%s: init failed: entry returned no descriptor", path);
    if (desc->struct_size < V1_PLUGIN_SIZE)
        return cg_error(CG_ERR_PLUGIN, "%s: descriptor struct_size %u is smaller than ABI 1.0's %zu",
                        path, desc->struct_size, V1_PLUGIN_SIZE);
    if (desc->abi_major != CG_PLUGIN_ABI_MAJOR)
        return cg_error(CG_ERR_PLUGIN,
                        "%s: plugin '%s' was built for ABI %u.%u, this clgraph has ABI %u.%u "
                        "(major versions must match)",
                        path, desc->name ? desc->name : "?", desc->abi_major, desc->abi_minor,
                        CG_PLUGIN_ABI_MAJOR, CG_PLUGIN_ABI_MINOR);
    const char *pname = desc->name ? desc->name : "?";
    char tag[600];
    snprintf(tag, sizeof tag, "%s: plugin '%s'", path, pname);
    for (int i = 0; i < ctx->n_plugins; i++)
        if (strcmp(ctx->plugins[i]->name, pname) == 0)
            return cg_error(CG_ERR_PLUGIN, "%s is already loaded from %s", tag, ctx->plugins[i]->path);
    if (desc->n_ops < 0 || (desc->n_ops > 0 && !desc->ops))
        return cg_error(CG_ERR_PLUGIN, "%s: invalid op list", tag);
    for (int i = 0; i < desc->n_ops; i++) {
        cg_status st = check_op(desc->ops[i], tag, i);
        if (st) return st;
        const cg_op_entry *prev = cg_registry_find(ctx, desc->ops[i]->name);
        if (prev)
            return cg_error(CG_ERR_PLUGIN, "%s: duplicate op '%s' (already registered by plugin '%s' from %s)",
                            tag, desc->ops[i]->name, prev->plugin->name, prev->plugin->path);
        for (int j = 0; j < i; j++)
            if (strcmp(desc->ops[j]->name, desc->ops[i]->name) == 0)
                return cg_error(CG_ERR_PLUGIN, "%s: duplicate op '%s' within the plugin", tag,
                                desc->ops[i]->name);
    }
    if (desc->init) {
        char err[512] = "";
        if (desc->init(cg_host_api_get(), err, sizeof err) != CG_OP_OK) {
            err[sizeof err - 1] = 0;
            return cg_error(CG_ERR_PLUGIN, "%s: init failed: %s", tag, err[0] ? err : "(no message)");
        }
    }
    cg_plugin_rec *rec = calloc(1, sizeof *rec);
    char *nm = rec ? cg_strdup(pname) : NULL;
    char *pa = nm ? cg_strdup(path) : NULL;
    int need = ctx->n_ops + desc->n_ops;
    if (pa && need > ctx->cap_ops) {
        int cap = need * 2 + 16;
        cg_op_entry *ops = realloc(ctx->ops, sizeof *ops * (size_t)cap);
        if (ops) {
            ctx->ops = ops;
            ctx->cap_ops = cap;
        } else {
            free(pa);
            pa = NULL;
        }
    }
    if (pa && ctx->n_plugins == ctx->cap_plugins) {
        int cap = ctx->cap_plugins * 2 + 4;
        cg_plugin_rec **pl = realloc(ctx->plugins, sizeof *pl * (size_t)cap);
        if (pl) {
            ctx->plugins = pl;
            ctx->cap_plugins = cap;
        } else {
            free(pa);
            pa = NULL;
        }
    }
    if (!pa) {
        free(nm);
        free(rec);
        return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", tag);
    }
    rec->name = nm;
    rec->path = pa;
    rec->dl = dl;
    /* A newer minor is accepted; the host uses only what its own minor knows. */
    uint32_t host_minor = CG_PLUGIN_ABI_MINOR;
    rec->abi_minor = desc->abi_minor < host_minor ? desc->abi_minor : host_minor;
    ctx->plugins[ctx->n_plugins++] = rec;
    for (int i = 0; i < desc->n_ops; i++) {
        const cg_op_def *op = desc->ops[i];
        cg_op_entry *e = &ctx->ops[ctx->n_ops++];
        memset(e, 0, sizeof *e);
        e->def = op;
        e->plugin = rec;
        for (int k = 0; k < op->n_kernels; k++) {
            if (op->kernels[k].backend == CG_BACKEND_CPU) e->cpu = &op->kernels[k];
            if (op->kernels[k].backend == CG_BACKEND_OPENCL) e->opencl = &op->kernels[k];
        }
    }
    return CG_OK;
}

cg_status cg_context_create(cg_context **out) {
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_context_create: out is NULL");
    *out = NULL;
    cg_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return cg_error(CG_ERR_NO_MEMORY, "out of memory creating a context");
    ctx->host = *cg_host_api_get();
    cg_status st = cg_registry_add_plugin(ctx, cg_builtin_plugin(), "<built-in>", NULL);
    const char *env = getenv("CLGRAPH_PLUGINS");
    if (!st && env && *env) {
        char *list = cg_strdup(env);
        if (!list) st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
        for (char *save = NULL, *p = list ? strtok_r(list, ":", &save) : NULL; !st && p;
             p = strtok_r(NULL, ":", &save)) {
            st = cg_plugin_load_path(ctx, p);
            if (st) cg_error_prefix("CLGRAPH_PLUGINS: ");
        }
        free(list);
    }
    if (st) {
        cg_context_free(ctx);
        return st;
    }
    *out = ctx;
    return CG_OK;
}

void cg_plugin_unload(void *dl); /* plugin_load.c */

void cg_context_free(cg_context *ctx) {
    if (!ctx) return;
    for (int i = 0; i < ctx->n_plugins; i++) {
        if (ctx->plugins[i]->dl) cg_plugin_unload(ctx->plugins[i]->dl);
        free(ctx->plugins[i]->name);
        free(ctx->plugins[i]->path);
        free(ctx->plugins[i]);
    }
    free(ctx->plugins);
    free(ctx->ops);
    free(ctx);
}

cg_status cg_context_load_plugin(cg_context *ctx, const char *path) {
    if (!ctx || !path) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_context_load_plugin: NULL argument");
    return cg_plugin_load_path(ctx, path);
}

size_t cg_context_op_count(const cg_context *ctx) { return ctx ? (size_t)ctx->n_ops : 0; }

const char *cg_context_op_name(const cg_context *ctx, size_t i) {
    if (!ctx || i >= (size_t)ctx->n_ops) return NULL;
    return ctx->ops[i].def->name;
}

const cg_op_def *cg_context_op_def(const cg_context *ctx, size_t i) {
    if (!ctx || i >= (size_t)ctx->n_ops) return NULL;
    return ctx->ops[i].def;
}
