/* config.json of a seq2seq model directory, checked key by key: a mistake
 * names the key, what it must be and what it was. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_json.h"
#include "error.h"
#include "strbuf.h"
#include "s2s.h"

static const char *const known[] = {"cell",          "emb_dim",   "hidden",        "encoder_layers", "decoder_layers",
                                    "bidirectional", "attention", "attention_dim", "local",          "decoder_style",
                                    "bridge",        "tokenizer", "pad_id",        "bos_id",         "eos_id",
                                    "unk_id",        NULL};

/* The largest integer a key may hold. The graph's dims are ints, so the
 * builder's products (4 x hidden gates, emb_dim + 2 x hidden inputs) must
 * stay far below INT_MAX; decoder_layers x hidden, which can exceed it, has
 * its own check below. No key is otherwise limited: layers, vocabularies and
 * graph inputs are sized from the model. */
#define S2S_CONFIG_INT_MAX 100000000

static cg_status get_int(const char *path, const cJSON *root, const char *key, int def, int min, int *out) {
    return cg_cfg_int(path, root, key, NULL, def, min, S2S_CONFIG_INT_MAX, out);
}

static cg_status get_enum(const char *path, const cJSON *root, const char *key, const char *const *names, int def,
                          int *out) {
    return cg_cfg_enum(path, root, key, NULL, names, def, out);
}

cg_status cg_s2s_config_read(const char *path, s2s_config *c) {
    memset(c, 0, sizeof *c);
    cJSON *root;
    cg_status st = cg_cfg_read(path, &root);
    if (!st) st = cg_cfg_known_keys(path, root, known, "");
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
    if (!st) st = cg_cfg_bool(path, root, "bidirectional", 0, &c->bidirectional);
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
            char g[64];
            static const char *const local_keys[] = {"mode", "D", NULL};
            if (!cJSON_IsObject(l))
                st = cg_error(CG_ERR_FORMAT, "%s: key 'local' must be null or {\"mode\": ..., \"D\": ...}, got %s",
                              path, cg_cfg_got(l, g, sizeof g));
            if (!st) st = cg_cfg_known_keys(path, l, local_keys, "local.");
            int mode = 0;
            if (!st) st = cg_cfg_enum(path, l, "mode", "local.mode", modes, -1, &mode);
            if (!st) {
                const cJSON *dv = cJSON_GetObjectItemCaseSensitive(l, "D");
                if (!dv || cJSON_IsNull(dv)) st = cg_error(CG_ERR_FORMAT, "%s: key 'local.D' is required", path);
                else if (get_int(path, l, "D", -1, 0, &c->local_D))
                    st = cg_error(CG_ERR_FORMAT, "%s: key 'local.D' must be an integer >= 0, got %s", path,
                                  cg_cfg_got(dv, g, sizeof g));
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
