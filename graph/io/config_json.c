/* JSON configuration files, every mistake naming its key (config_json.h). */
#include "config_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "read_file.h"
#include "strbuf.h"

cg_status cg_cfg_read(const char *path, cJSON **root) {
    *root = NULL;
    size_t len;
    char *text;
    cg_status st = cg_read_file(path, CG_MAX_CONFIG_FILE, &text, &len);
    if (st) return st;
    const char *end = NULL;
    cJSON *r = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!r || !cJSON_IsObject(r)) {
        size_t off = end && end >= text ? (size_t)(end - text) : 0;
        if (r) /* valid JSON of another kind: point at the value, not past it */
            for (off = 0;
                 off < len && (text[off] == ' ' || text[off] == '\t' || text[off] == '\r' || text[off] == '\n');)
                off++;
        int line = 1, col = 1;
        for (size_t i = 0; i < off && i < len; i++) {
            if (text[i] == '\n') line++, col = 1;
            else col++;
        }
        int was = r != NULL;
        cJSON_Delete(r);
        free(text);
        return cg_error(CG_ERR_FORMAT, "%s:%d:%d: %s", path, line, col,
                        was ? "the configuration must be a JSON object" : "invalid JSON");
    }
    free(text);
    *root = r;
    return CG_OK;
}

const char *cg_cfg_shown(const char *str, char *buf, size_t size) {
    cg_quote_text(buf, size, str, strlen(str));
    return buf;
}

const char *cg_cfg_got(const cJSON *v, char *buf, size_t size) {
    char *t = cJSON_PrintUnformatted(v);
    snprintf(buf, size, "%s", t ? t : "?");
    if (t && strlen(t) >= size && size > 4) memcpy(buf + size - 4, "...", 4);
    free(t);
    return buf;
}

cg_status cg_cfg_known_keys(const char *path, const cJSON *obj, const char *const *known, const char *prefix) {
    for (const cJSON *it = obj->child; it; it = it->next) {
        int ok = 0;
        for (int i = 0; known[i]; i++) ok |= !strcmp(it->string, known[i]);
        char sk[128];
        if (!ok)
            return cg_error(CG_ERR_FORMAT, "%s: unknown key '%s%s'", path, prefix,
                            cg_cfg_shown(it->string, sk, sizeof sk));
    }
    return CG_OK;
}

cg_status cg_cfg_int(const char *path, const cJSON *obj, const char *key, const char *label, int def, int min, int max,
                     int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!label) label = key;
    if (!v || cJSON_IsNull(v)) {
        if (def < min) return cg_error(CG_ERR_FORMAT, "%s: key '%s' is required", path, label);
        *out = def;
        return CG_OK;
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1e300;
    char b[64];
    if (cJSON_IsNumber(v) && d > max)
        return cg_error(CG_ERR_FORMAT, "%s: key '%s' must be an integer >= %d and <= %d, got %s", path, label, min, max,
                        cg_cfg_got(v, b, sizeof b));
    if (!cJSON_IsNumber(v) || d < min || d != (double)(int)d) /* range first: (int)d of a huge d is undefined */
        return cg_error(CG_ERR_FORMAT, "%s: key '%s' must be an integer >= %d, got %s", path, label, min,
                        cg_cfg_got(v, b, sizeof b));
    *out = (int)d;
    return CG_OK;
}

cg_status cg_cfg_enum(const char *path, const cJSON *obj, const char *key, const char *label, const char *const *names,
                      int def, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!label) label = key;
    if (!v || cJSON_IsNull(v)) {
        if (def < 0) return cg_error(CG_ERR_FORMAT, "%s: key '%s' is required", path, label);
        *out = def;
        return CG_OK;
    }
    char list[256] = "";
    size_t u = 0;
    for (int i = 0; names[i] && u < sizeof list; i++)
        u += (size_t)snprintf(list + u, sizeof list - u, "%s\"%s\"", i ? ", " : "", names[i]);
    char b[64];
    if (!cJSON_IsString(v))
        return cg_error(CG_ERR_FORMAT, "%s: key '%s' must be one of %s, got %s", path, label, list,
                        cg_cfg_got(v, b, sizeof b));
    for (int i = 0; names[i]; i++)
        if (!strcmp(v->valuestring, names[i])) {
            *out = i;
            return CG_OK;
        }
    char sv[128];
    return cg_error(CG_ERR_FORMAT, "%s: key '%s' is \"%s\"; it must be one of %s", path, label,
                    cg_cfg_shown(v->valuestring, sv, sizeof sv), list);
}

cg_status cg_cfg_bool(const char *path, const cJSON *obj, const char *key, int def, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) {
        *out = def;
        return CG_OK;
    }
    char g[64];
    if (!cJSON_IsBool(v))
        return cg_error(CG_ERR_FORMAT, "%s: key '%s' must be true or false, got %s", path, key,
                        cg_cfg_got(v, g, sizeof g));
    *out = cJSON_IsTrue(v);
    return CG_OK;
}
