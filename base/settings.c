/* The process-wide settings of settings.h. */
#include "settings.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

enum { VALUE_MAX = 4096 };

typedef struct setting {
    const char *env; /* its environment variable */
    int per_use;     /* read at every use: never fixed */
    int given;       /* cg_setting_set gave a value (or NULL) */
    int fixed;       /* read: a set value may no longer change */
    int has_value;
    char value[VALUE_MAX];
} setting;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static setting g_set[CG_SET_COUNT] = {
    [CG_SET_THREADS] = {.env = "CLGRAPH_THREADS"},
    [CG_SET_CPU_GEMM] = {.env = "CLGRAPH_CPU_GEMM"},
    [CG_SET_CPU_MATH] = {.env = "CLGRAPH_CPU_MATH"},
    [CG_SET_GEMM] = {.env = "CLGRAPH_GEMM"},
    [CG_SET_CL_PATHS] = {.env = "CLGRAPH_CL_PATHS"},
    [CG_SET_CACHE_DIR] = {.env = "CLGRAPH_CACHE_DIR"},
    [CG_SET_CL_WARNINGS] = {.env = "CLGRAPH_CL_WARNINGS", .per_use = 1},
    [CG_SET_PLUGINS] = {.env = "CLGRAPH_PLUGINS", .per_use = 1},
    [CG_SET_REWRITES] = {.env = "CLGRAPH_REWRITES", .per_use = 1},
};

const char *cg_setting_name(cg_setting_id id) { return id >= 0 && id < CG_SET_COUNT ? g_set[id].env : "?"; }

/* Copies v into s (truncation cannot happen for environment values a
 * consumer accepts: every one is far shorter than VALUE_MAX but a path,
 * and a path that long fails where it is used). */
static void store(setting *s, const char *v) {
    s->has_value = v != NULL;
    if (v) {
        strncpy(s->value, v, VALUE_MAX - 1);
        s->value[VALUE_MAX - 1] = '\0';
    }
}

const char *cg_setting(cg_setting_id id) {
    if (id < 0 || id >= CG_SET_COUNT) return NULL;
    setting *s = &g_set[id];
    pthread_mutex_lock(&g_mu);
    s->fixed = 1;
    /* A value set through the API no longer changes once read. Without one
     * the variable is read at each call, as consumers always did (tests
     * change it between calls; the consumers that make something once
     * keep what they made). */
    const char *v = s->given ? (s->has_value ? s->value : NULL) : getenv(s->env);
    pthread_mutex_unlock(&g_mu);
    return v;
}

cg_status cg_setting_set(cg_setting_id id, const char *value) {
    if (id < 0 || id >= CG_SET_COUNT)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_setting_set: no setting %d", (int)id);
    if (value && strlen(value) >= VALUE_MAX)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: value of %zu bytes is too long", g_set[id].env, strlen(value));
    setting *s = &g_set[id];
    cg_status st = CG_OK;
    pthread_mutex_lock(&g_mu);
    if (s->fixed && !s->per_use) {
        const char *cur = s->given ? (s->has_value ? s->value : NULL) : getenv(s->env);
        int same = (cur == NULL) == (value == NULL) && (!value || !strcmp(cur, value));
        if (!same)
            st = cg_error(CG_ERR_INVALID_ARGUMENT,
                          "%s: this process already uses %s%s%s (set it before the first context, or the same)", s->env,
                          cur ? "'" : "", cur ? cur : "the default", cur ? "'" : "");
    } else {
        s->given = 1;
        store(s, value);
    }
    pthread_mutex_unlock(&g_mu);
    return st;
}
