/* config.json of a seq2seq model directory, checked key by key: a mistake
 * names the key, what it must be and what it was. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "strbuf.h"
#include "s2s.h"

static const char *const known[] = {"cell", "emb_dim", "hidden", "encoder_layers", "decoder_layers",
                                    "bidirectional", "attention", "attention_dim", "local", "decoder_style",
                                    "bridge", "tokenizer", "pad_id", "bos_id", "eos_id", "unk_id", NULL};

/* The largest integer a key may hold. The graph's dims are ints, so the
 * builder's products (4 x hidden gates, emb_dim + 2 x hidden inputs) must
 * stay far below INT_MAX; decoder_layers x hidden, which can exceed it, has
 * its own check below. No key is otherwise limited: layers, vocabularies and
 * graph inputs are sized from the model. */
#define S2S_CONFIG_INT_MAX 100000000

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    while (s) {
        size_t r = fread(s + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0) break;
        if (n + 1 >= cap) {
            if (cap > ((size_t)1 << 24)) break; /* a config is small: stop at 16 MiB */
            char *ns = realloc(s, cap * 2);
            if (!ns) {
                free(s);
                s = NULL;
                break;
            }
            s = ns;
            cap *= 2;
        }
    }
    fclose(f);
    if (s) s[n] = 0;
    *len = n;
    return s;
}

/* A string from the file for a message, on one line (cg_quote_text). */
static const char *shown(const char *str, char *buf, size_t size) {
    cg_quote_text(buf, size, str, strlen(str));
    return buf;
}

/* What a key was, for messages: its JSON text, cut short. */
static const char *got(const cJSON *v, char *buf, size_t size) {
    char *t = cJSON_PrintUnformatted(v);
    snprintf(buf, size, "%s", t ? t : "?");
    if (t && strlen(t) >= size && size > 4) memcpy(buf + size - 4, "...", 4);
    free(t);
    return buf;
}

static cg_status get_int(const char *path, const cJSON *root, const char *key, int def, int min, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) {
        if (def < min) return cg_error(CG_ERR_FORMAT, "%s: key '%s' is required", path, key);
        *out = def;
        return CG_OK;
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1e300;
    char b[64];
    if (cJSON_IsNumber(v) && d > S2S_CONFIG_INT_MAX)
        return cg_error(CG_ERR_FORMAT, "%s: key '%s' must be an integer >= %d and <= %d, got %s", path, key, min,
                        S2S_CONFIG_INT_MAX, got(v, b, sizeof b));
    if (!cJSON_IsNumber(v) || d < min || d != (double)(int)d) /* range first: (int)d of a huge d is undefined */
        return cg_error(CG_ERR_FORMAT, "%s: key '%s' must be an integer >= %d, got %s", path, key, min,
                        got(v, b, sizeof b));
    *out = (int)d;
    return CG_OK;
}

/* `label` is how the key is named in messages ("local.mode"). */
static cg_status get_enum_as(const char *path, const cJSON *root, const char *key, const char *label,
                             const char *const *names, int def, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) {
        *out = def;
        return CG_OK;
    }
    char list[256] = "";
    size_t u = 0;
    for (int i = 0; names[i]; i++) u += (size_t)snprintf(list + u, sizeof list - u, "%s\"%s\"", i ? ", " : "", names[i]);
    char b[64];
    if (!cJSON_IsString(v))
        return cg_error(CG_ERR_FORMAT, "%s: key '%s' must be one of %s, got %s", path, label, list, got(v, b, sizeof b));
    for (int i = 0; names[i]; i++)
        if (!strcmp(v->valuestring, names[i])) {
            *out = i;
            return CG_OK;
        }
    char sv[128];
    return cg_error(CG_ERR_FORMAT, "%s: key '%s' is \"%s\"; it must be one of %s", path, label,
                    shown(v->valuestring, sv, sizeof sv), list);
}

static cg_status get_enum(const char *path, const cJSON *root, const char *key, const char *const *names,
                          int def, int *out) {
    return get_enum_as(path, root, key, key, names, def, out);
}

cg_status cg_s2s_config_read(const char *path, s2s_config *c) {
    memset(c, 0, sizeof *c);
    size_t len;
    char *text = read_all(path, &len);
    if (!text) return cg_error(CG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root || !cJSON_IsObject(root)) {
        size_t off = end && end >= text ? (size_t)(end - text) : 0;
        if (root) /* valid JSON of another kind: point at the value, not past it */
            for (off = 0; off < len && (text[off] == ' ' || text[off] == '\t' || text[off] == '\r' || text[off] == '\n');)
                off++;
        int line = 1, col = 1;
        for (size_t i = 0; i < off && i < len; i++) {
            if (text[i] == '\n') line++, col = 1;
            else col++;
        }
        cJSON_Delete(root);
        free(text);
        return cg_error(CG_ERR_FORMAT, "%s:%d:%d: %s", path, line, col,
                        root ? "the configuration must be a JSON object" : "invalid JSON");
    }
    free(text);
    cg_status st = CG_OK;
    for (const cJSON *it = root->child; it && !st; it = it->next) {
        int ok = 0;
        for (int i = 0; known[i]; i++) ok |= !strcmp(it->string, known[i]);
        char sk[128];
        if (!ok) st = cg_error(CG_ERR_FORMAT, "%s: unknown key '%s'", path, shown(it->string, sk, sizeof sk));
    }
    static const char *const cells[] = {"gru", "lstm", NULL};
    static const char *const atts[] = {"additive", "dot", "scaled_dot", "general", "cosine", "none", NULL};
    static const char *const styles[] = {"bahdanau", "luong", NULL};
    static const char *const bridges[] = {"zeros", "dense", NULL};
    static const char *const toks[] = {"words", "chars", NULL};
    static const char *const modes[] = {"monotonic", "predictive", NULL};
    int v;
    if (!st) st = get_enum(path, root, "cell", cells, 0, &v), c->cell = (s2s_cell)v;
    if (!st) st = get_int(path, root, "emb_dim", -1, 1, &c->emb_dim);
    if (!st) st = get_int(path, root, "hidden", -1, 1, &c->hidden);
    if (!st) st = get_int(path, root, "encoder_layers", 1, 1, &c->encoder_layers);
    if (!st) st = get_int(path, root, "decoder_layers", 1, 1, &c->decoder_layers);
    if (!st) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "bidirectional");
        char g[64];
        if (b && !cJSON_IsNull(b) && !cJSON_IsBool(b))
            st = cg_error(CG_ERR_FORMAT, "%s: key 'bidirectional' must be true or false, got %s", path,
                          got(b, g, sizeof g));
        c->bidirectional = b && cJSON_IsTrue(b);
    }
    if (!st) st = get_enum(path, root, "attention", atts, 0, &v), c->attention = (s2s_attention)v;
    if (!st) st = get_int(path, root, "attention_dim", c->hidden, 1, &c->attention_dim);
    if (!st) st = get_enum(path, root, "decoder_style", styles, 0, &c->luong);
    if (!st) st = get_enum(path, root, "bridge", bridges, 1, &c->bridge_dense);
    if (!st) st = get_enum(path, root, "tokenizer", toks, 0, &c->chars);
    if (!st) st = get_int(path, root, "pad_id", 0, 0, &c->pad_id);
    if (!st) st = get_int(path, root, "bos_id", 1, 0, &c->bos_id);
    if (!st) st = get_int(path, root, "eos_id", 2, 0, &c->eos_id);
    if (!st) st = get_int(path, root, "unk_id", 3, 0, &c->unk_id);
    if (!st) {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(root, "local");
        if (l && !cJSON_IsNull(l)) {
            char g[64], sk[128];
            if (!cJSON_IsObject(l))
                st = cg_error(CG_ERR_FORMAT, "%s: key 'local' must be null or {\"mode\": ..., \"D\": ...}, got %s",
                              path, got(l, g, sizeof g));
            for (const cJSON *it = l->child; !st && it; it = it->next)
                if (strcmp(it->string, "mode") && strcmp(it->string, "D"))
                    st = cg_error(CG_ERR_FORMAT, "%s: unknown key 'local.%s'", path,
                                  shown(it->string, sk, sizeof sk));
            int mode = 0;
            if (!st && !cJSON_GetObjectItemCaseSensitive(l, "mode"))
                st = cg_error(CG_ERR_FORMAT, "%s: key 'local.mode' is required", path);
            if (!st) st = get_enum_as(path, l, "mode", "local.mode", modes, 0, &mode);
            if (!st) {
                const cJSON *dv = cJSON_GetObjectItemCaseSensitive(l, "D");
                if (!dv || cJSON_IsNull(dv)) st = cg_error(CG_ERR_FORMAT, "%s: key 'local.D' is required", path);
                else if (get_int(path, l, "D", -1, 0, &c->local_D))
                    st = cg_error(CG_ERR_FORMAT, "%s: key 'local.D' must be an integer >= 0, got %s", path,
                                  got(dv, g, sizeof g));
            }
            c->local = mode == 0 ? S2S_LOCAL_MONOTONIC : S2S_LOCAL_PREDICTIVE;
        }
    }
    cJSON_Delete(root);
    if (st) return st;
    /* Combinations that cannot work. */
    if ((long long)c->decoder_layers * c->hidden > INT_MAX) /* the bridge's rows, the state's floats per row */
        return cg_error(CG_ERR_FORMAT, "%s: keys 'decoder_layers' x 'hidden' must be at most %d, got %d x %d", path,
                        INT_MAX, c->decoder_layers, c->hidden);
    int K = s2s_keys_dim(c);
    if ((c->attention == S2S_DOT || c->attention == S2S_SCALED_DOT || c->attention == S2S_COSINE) && K != c->hidden)
        return cg_error(CG_ERR_FORMAT,
                        "%s: key 'attention': \"%s\" needs keys as wide as the decoder state (K == H), but the "
                        "bidirectional encoder gives K = %d and hidden H = %d",
                        path, atts[c->attention], K, c->hidden);
    if (c->local != S2S_LOCAL_NONE && c->attention == S2S_NONE)
        return cg_error(CG_ERR_FORMAT, "%s: key 'local' needs an attention (attention is \"none\")", path);
    if (c->local == S2S_LOCAL_PREDICTIVE && c->local_D < 1)
        return cg_error(CG_ERR_FORMAT, "%s: key 'local.D' must be >= 1 for predictive windows", path);
    int ids[4] = {c->pad_id, c->bos_id, c->eos_id, c->unk_id};
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            if (ids[i] == ids[j])
                return cg_error(CG_ERR_FORMAT, "%s: keys 'pad_id', 'bos_id', 'eos_id' and 'unk_id' must differ", path);
    return CG_OK;
}
