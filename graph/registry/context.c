/* Contexts: the built-in operators and the plugins of CLGRAPH_PLUGINS,
 * every one admitted through cg_registry_add_plugin (admit.c). */
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "error.h"
#include "registry.h"

const cg_op_entry *cg_registry_find(const cg_context *ctx, const char *name) {
    for (int i = 0; i < ctx->n_ops; i++)
        if (strcmp(ctx->ops[i]->def->name, name) == 0) return ctx->ops[i];
    return NULL;
}

/* Loads every plugin of a ':'-separated list. */
static cg_status load_list(cg_context *ctx, const char *env) {
    char *list = cg_strdup(env);
    if (!list) return CG_ERR_NO_MEMORY;
    cg_status st = CG_OK;
    for (char *save = NULL, *p = strtok_r(list, ":", &save); !st && p; p = strtok_r(NULL, ":", &save)) {
        st = cg_plugin_load_path(ctx, p);
        if (st) cg_error_prefix("CLGRAPH_PLUGINS: ");
    }
    free(list);
    return st;
}

cg_status cg_context_create(cg_context **out) {
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_context_create: out is NULL");
    *out = NULL;
    cg_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return cg_error(CG_ERR_NO_MEMORY, "out of memory creating a context");
    cg_status st = cg_registry_add_plugin(ctx, cg_builtin_plugin(), "<built-in>", NULL);
    const char *env = getenv("CLGRAPH_PLUGINS");
    if (!st && env && *env) st = load_list(ctx, env);
    if (st) {
        cg_context_free(ctx);
        return st;
    }
    *out = ctx;
    return CG_OK;
}

void cg_context_free(cg_context *ctx) {
    if (!ctx) return;
    for (int i = 0; i < ctx->n_plugins; i++) cg_registry_free_plugin(ctx->plugins[i]);
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
    return ctx->ops[i]->def->name;
}

const cg_op_def *cg_context_op_def(const cg_context *ctx, size_t i) {
    if (!ctx || i >= (size_t)ctx->n_ops) return NULL;
    return ctx->ops[i]->def;
}
