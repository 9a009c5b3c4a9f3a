/* config.json of a forecasting model directory, checked key by key: a
 * mistake names the key, what it must be and what it was. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_json.h"
#include "error.h"
#include "fc.h"

static const char *const known[] = {"task",          "columns", "cell", "hidden", "layers", "attention",
                                    "attention_dim", "window",  "mean", "std",    NULL};

/* The builder's products (4 x hidden gates, channels + hidden inputs, the
 * window's rows of a batch) must stay far below INT_MAX. */
#define FC_CONFIG_INT_MAX 1000000
#define FC_MAX_COLUMNS 100000

static const char *const kinds[] = {"dot", "scaled_dot", "general", "additive", "none", NULL};

const char *cg_fc_attention_name(fc_attention a) { return a <= FC_NONE ? kinds[a] : "?"; }

void cg_fc_config_free(fc_config *c) {
    if (!c) return;
    for (int i = 0; c->columns && i < c->C; i++) free(c->columns[i]);
    free(c->columns);
    free(c->mean);
    free(c->std);
    memset(c, 0, sizeof *c);
}

static cg_status read_task(const char *path, const cJSON *root) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "task");
    char g[64];
    if (!v) return cg_error(CG_ERR_FORMAT, "%s: key 'task' is required (\"forecast\")", path);
    if (!cJSON_IsString(v) || strcmp(v->valuestring, "forecast"))
        return cg_error(CG_ERR_FORMAT, "%s: key 'task' must be \"forecast\", got %s", path, cg_cfg_got(v, g, sizeof g));
    return CG_OK;
}

static cg_status read_columns(const char *path, const cJSON *root, fc_config *c) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "columns");
    char g[64], s[128];
    if (!v) return cg_error(CG_ERR_FORMAT, "%s: key 'columns' is required (the channel names)", path);
    int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
    if (n < 1 || n > FC_MAX_COLUMNS)
        return cg_error(CG_ERR_FORMAT, "%s: key 'columns' must be a list of 1 to %d names, got %s", path,
                        FC_MAX_COLUMNS, cg_cfg_got(v, g, sizeof g));
    c->columns = calloc((size_t)n, sizeof *c->columns);
    if (!c->columns) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    int i = 0;
    for (const cJSON *it = v->child; it; it = it->next, i++) {
        if (!cJSON_IsString(it) || !it->valuestring[0])
            return cg_error(CG_ERR_FORMAT, "%s: key 'columns': entry %d must be a non-empty name, got %s", path, i,
                            cg_cfg_got(it, g, sizeof g));
        const char *name = it->valuestring;
        if (!strcmp(name, "time") || !strcmp(name, "series"))
            return cg_error(CG_ERR_FORMAT, "%s: key 'columns': \"%s\" is reserved for the CSV's own column", path,
                            name);
        if (strpbrk(name, ",\"\r\n"))
            return cg_error(CG_ERR_FORMAT, "%s: key 'columns': \"%s\" holds a comma, quote or line break", path,
                            cg_cfg_shown(name, s, sizeof s));
        for (int j = 0; j < i; j++)
            if (!strcmp(c->columns[j], name))
                return cg_error(CG_ERR_FORMAT, "%s: key 'columns': \"%s\" appears twice (entries %d and %d)", path,
                                cg_cfg_shown(name, s, sizeof s), j, i);
        if (!(c->columns[i] = cg_strdup(name))) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        c->C = i + 1;
    }
    return CG_OK;
}

/* mean / std: C finite numbers (> 0 when `positive`), default all `def`. */
static cg_status read_stats(const char *path, const cJSON *root, const char *key, double def, int positive,
                            double **out, int C) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    char g[64];
    *out = malloc(sizeof **out * (size_t)C);
    if (!*out) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < C; i++) (*out)[i] = def;
    if (!v || cJSON_IsNull(v)) return CG_OK;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != C)
        return cg_error(CG_ERR_FORMAT, "%s: key '%s' must be a list of %d numbers (one per column), got %s", path, key,
                        C, cg_cfg_got(v, g, sizeof g));
    int i = 0;
    for (const cJSON *it = v->child; it; it = it->next, i++) {
        double d = cJSON_IsNumber(it) ? it->valuedouble : NAN;
        if (!isfinite(d) || (positive && !(d > 0)))
            return cg_error(CG_ERR_FORMAT, "%s: key '%s': entry %d must be a finite number%s, got %s", path, key, i,
                            positive ? " > 0" : "", cg_cfg_got(it, g, sizeof g));
        (*out)[i] = d;
    }
    return CG_OK;
}

cg_status cg_fc_config_read(const char *path, fc_config *c) {
    memset(c, 0, sizeof *c);
    static const char *const cells[] = {"rnn", "gru", "lstm", NULL};
    cJSON *root;
    cg_status st = cg_cfg_read(path, &root);
    int v = 0;
    if (!st) st = cg_cfg_known_keys(path, root, known, "");
    if (!st) st = read_task(path, root);
    if (!st) st = read_columns(path, root, c);
    if (!st) st = cg_cfg_enum(path, root, "cell", NULL, cells, FC_LSTM, &v), c->cell = (fc_cell)v;
    if (!st) st = cg_cfg_int(path, root, "hidden", NULL, -1, 1, FC_CONFIG_INT_MAX, &c->hidden);
    if (!st) st = cg_cfg_int(path, root, "layers", NULL, 1, 1, FC_CONFIG_INT_MAX, &c->layers);
    if (!st) st = cg_cfg_enum(path, root, "attention", NULL, kinds, FC_DOT, &v), c->attention = (fc_attention)v;
    if (!st) st = cg_cfg_int(path, root, "attention_dim", NULL, c->hidden, 1, FC_CONFIG_INT_MAX, &c->attention_dim);
    if (!st) st = cg_cfg_int(path, root, "window", NULL, 64, 1, FC_CONFIG_INT_MAX, &c->window);
    if (!st) st = read_stats(path, root, "mean", 0.0, 0, &c->mean, c->C);
    if (!st) st = read_stats(path, root, "std", 1.0, 1, &c->std, c->C);
    cJSON_Delete(root);
    if (!st && (long long)c->C + c->hidden > FC_CONFIG_INT_MAX)
        st = cg_error(CG_ERR_FORMAT, "%s: keys 'columns' and 'hidden': the RNN's input (%d + %d) is over %d", path,
                      c->C, c->hidden, FC_CONFIG_INT_MAX);
    if (st) cg_fc_config_free(c);
    return st;
}
