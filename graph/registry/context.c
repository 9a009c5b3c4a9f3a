/* Contexts: the built-in operators and the plugins of CLGRAPH_PLUGINS,
 * every one admitted through cg_registry_add_plugin (admit.c). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "error.h"
#include "registry.h"
#include "settings.h"

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

/* The process settings opt asks for (settings.h): each one given must be
 * the one in effect or still open. */
static cg_status apply_settings(const cg_context_options *opt) {
    char threads[24];
    snprintf(threads, sizeof threads, "%d", opt->threads);
    const struct {
        cg_setting_id id;
        const char *value; /* NULL: leave it */
    } want[] = {
        {CG_SET_THREADS, opt->threads > 0 ? threads : NULL},
        {CG_SET_CPU_GEMM, opt->cpu_gemm},
        {CG_SET_CPU_MATH, opt->cpu_math},
        {CG_SET_GEMM, opt->gemm},
        {CG_SET_CL_PATHS, opt->cl_paths},
        {CG_SET_CACHE_DIR, opt->cache_dir},
        {CG_SET_CL_WARNINGS, opt->cl_warnings > 0   ? "1"
                             : opt->cl_warnings < 0 ? "0"
                                                    : NULL},
    };
    if (opt->threads < 0)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_context_options.threads is %d; give 1 or more (0: default)",
                        opt->threads);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!want[i].value) continue;
        cg_status st = cg_setting_set(want[i].id, want[i].value);
        if (st) {
            cg_error_prefix("cg_context_options: ");
            return st;
        }
    }
    return CG_OK;
}

/* The options' plugins after those of CLGRAPH_PLUGINS. */
static cg_status load_plugins(cg_context *ctx, const cg_context_options *opt) {
    const char *env = opt && opt->no_env_plugins ? NULL : cg_setting(CG_SET_PLUGINS);
    cg_status st = env && *env ? load_list(ctx, env) : CG_OK;
    for (int i = 0; !st && opt && i < opt->n_plugins; i++) {
        if (!opt->plugins || !opt->plugins[i])
            return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_context_options.plugins[%d] is NULL", i);
        st = cg_plugin_load_path(ctx, opt->plugins[i]);
    }
    return st;
}

cg_status cg_context_create(const cg_context_options *opt, cg_context **out) {
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_context_create: out is NULL");
    *out = NULL;
    if (opt && opt->struct_size < offsetof(cg_context_options, no_env_plugins) + sizeof opt->no_env_plugins)
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "cg_context_options.struct_size is %zu; set it to sizeof(cg_context_options)",
                        opt->struct_size);
    if (opt && (opt->n_plugins < 0 || (opt->n_plugins > 0 && !opt->plugins)))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_context_options: %d plugins and a NULL list", opt->n_plugins);
    cg_status st = opt ? apply_settings(opt) : CG_OK;
    if (st) return st;
    cg_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return cg_error(CG_ERR_NO_MEMORY, "out of memory creating a context");
    st = cg_registry_add_plugin(ctx, cg_builtin_plugin(), "<built-in>", NULL);
    if (!st) st = load_plugins(ctx, opt);
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

int cg_context_op_count(const cg_context *ctx) { return ctx ? ctx->n_ops : 0; }

const char *cg_context_op_name(const cg_context *ctx, int i) {
    if (!ctx || i < 0 || i >= ctx->n_ops) return NULL;
    return ctx->ops[i]->def->name;
}

const cg_op_def *cg_context_op_def(const cg_context *ctx, int i) {
    if (!ctx || i < 0 || i >= ctx->n_ops) return NULL;
    return ctx->ops[i]->def;
}
