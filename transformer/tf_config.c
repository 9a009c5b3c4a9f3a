/* config.json of a Transformer translation model (tf_config.h). */
#include "tf_config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config_json.h"
#include "error.h"
#include "strbuf.h"

#define MAXI (1 << 24)

/* The sizes and ids: required sizes have def -1. */
static cg_status read_sizes(const char *path, const cJSON *r, tf_config *c) {
    struct {
        const char *key;
        int def, min, *out;
    } k[] = {
        {"d_model", -1, 1, &c->d_model},
        {"encoder_layers", -1, 1, &c->enc_layers},
        {"decoder_layers", -1, 1, &c->dec_layers},
        {"encoder_attention_heads", -1, 1, &c->enc_heads},
        {"decoder_attention_heads", -1, 1, &c->dec_heads},
        {"encoder_ffn_dim", -1, 1, &c->enc_ffn},
        {"decoder_ffn_dim", -1, 1, &c->dec_ffn},
        {"vocab_size", -1, 1, &c->vocab},
        {"max_position_embeddings", -1, 1, &c->max_pos},
        {"pad_token_id", -1, 0, &c->pad_id},
        {"eos_token_id", -1, 0, &c->eos_id},
    };
    cg_status s = CG_OK;
    for (size_t i = 0; !s && i < sizeof k / sizeof k[0]; i++)
        s = cg_cfg_int(path, r, k[i].key, NULL, k[i].def, k[i].min, MAXI, k[i].out);
    if (!s) s = cg_cfg_int(path, r, "decoder_vocab_size", NULL, c->vocab, 1, MAXI, &c->dec_vocab);
    if (!s) s = cg_cfg_int(path, r, "decoder_start_token_id", NULL, c->pad_id, 0, MAXI, &c->start_id);
    for (int i = 0; !s && i < 2; i++) {
        int h = i ? c->dec_heads : c->enc_heads;
        if (c->d_model % h)
            s = cg_error(CG_ERR_FORMAT, "%s: d_model (%d) is not a multiple of %s_attention_heads (%d)", path,
                         c->d_model, i ? "decoder" : "encoder", h);
    }
    if (!s && c->dec_vocab != c->vocab)
        s = cg_error(CG_ERR_UNSUPPORTED,
                     "%s: decoder_vocab_size (%d) differs from vocab_size (%d): separate "
                     "vocabularies are not supported yet",
                     path, c->dec_vocab, c->vocab);
    return s;
}

cg_status tf_config_read(const char *dir, tf_config *c) {
    memset(c, 0, sizeof *c);
    cg_strbuf b = {0};
    cg_strbuf_cat(&b, dir, "/config.json", (const char *)NULL);
    char *path = cg_strbuf_take(&b);
    if (!path) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    cJSON *r;
    cg_status s = cg_cfg_read(path, &r);
    if (s) {
        free(path);
        return s;
    }
    static const char *const types[] = {"marian", "bart", "mbart", NULL};
    static const char *const acts[] = {"gelu", "relu", "swish", "gelu_new", NULL};
    int type = 0;
    s = cg_cfg_enum(path, r, "model_type", NULL, types, -1, &type);
    if (!s) s = read_sizes(path, r, c);
    if (!s) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(r, "activation_function");
        /* "silu" is "swish" under its other name */
        if (cJSON_IsString(a) && !strcmp(a->valuestring, "silu")) c->act = TF_ACT_SWISH;
        else s = cg_cfg_enum(path, r, "activation_function", NULL, acts, TF_ACT_GELU, &c->act);
    }
    if (!s) s = cg_cfg_bool(path, r, "scale_embedding", 0, &c->scale_embed);
    int pre_norm = 0;
    if (!s && type == 0) s = cg_cfg_bool(path, r, "normalize_before", 0, &pre_norm);
    /* transformers' MarianMTModel ignores normalize_before: a config that
     * sets it describes a model transformers runs post-LN, refused rather
     * than guessed at */
    if (!s && pre_norm)
        s = cg_error(CG_ERR_UNSUPPORTED, "%s: normalize_before true (pre-LN blocks) is not supported for marian", path);
    c->learned_pos = c->embed_norm = type != 0;
    c->pre_norm = c->final_norm = type == 2;
    cJSON_Delete(r);
    free(path);
    return s;
}

/* bad_words_ids: [[id], ...]; a longer sequence is refused. */
static cg_status read_banned(const char *path, const cJSON *r, const tf_config *c, tf_generation *g) {
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(r, "bad_words_ids");
    if (!b || cJSON_IsNull(b)) return CG_OK;
    char got[64];
    if (!cJSON_IsArray(b))
        return cg_error(CG_ERR_FORMAT, "%s: bad_words_ids must be a list of id lists, got %s", path,
                        cg_cfg_got(b, got, sizeof got));
    const cJSON *e;
    cJSON_ArrayForEach(e, b) {
        const cJSON *id = cJSON_IsArray(e) && cJSON_GetArraySize(e) == 1 ? cJSON_GetArrayItem(e, 0) : NULL;
        if (!id && cJSON_IsArray(e))
            return cg_error(CG_ERR_UNSUPPORTED, "%s: bad_words_ids: only single-token entries are supported, got %s",
                            path, cg_cfg_got(e, got, sizeof got));
        if (!cJSON_IsNumber(id) || id->valuedouble != (double)(int)id->valuedouble || id->valueint < 0 ||
            id->valueint >= c->dec_vocab)
            return cg_error(CG_ERR_FORMAT, "%s: bad_words_ids: %s is not a list of one target id (0..%d)", path,
                            cg_cfg_got(e, got, sizeof got), c->dec_vocab - 1);
        if (g->n_banned == TF_MAX_BANNED)
            return cg_error(CG_ERR_UNSUPPORTED, "%s: bad_words_ids: more than %d entries", path, TF_MAX_BANNED);
        g->banned[g->n_banned++] = id->valueint;
    }
    return CG_OK;
}

/* early_stopping: false, true or "never", as transformers takes it. */
static cg_status read_early(const char *path, const cJSON *r, tf_generation *g) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "early_stopping");
    if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v)) return CG_OK;
    if (cJSON_IsTrue(v)) g->early = 1;
    else if (cJSON_IsString(v) && !strcmp(v->valuestring, "never")) g->early = 2;
    else {
        char got[64];
        return cg_error(CG_ERR_FORMAT, "%s: early_stopping %s must be true, false or \"never\"", path,
                        cg_cfg_got(v, got, sizeof got));
    }
    return CG_OK;
}

/* Keys whose non-default values change the search beyond what it does. */
static cg_status refuse_unsupported(const char *path, const cJSON *r) {
    static const struct {
        const char *key;
        double neutral;
    } keys[] = {{"repetition_penalty", 1}, {"no_repeat_ngram_size", 0},         {"do_sample", 0},
                {"num_beam_groups", 1},    {"encoder_no_repeat_ngram_size", 0}, {"diversity_penalty", 0}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, keys[i].key);
        if (!v || cJSON_IsNull(v)) continue;
        double x = cJSON_IsBool(v) ? (cJSON_IsTrue(v) ? 1 : 0) : cJSON_IsNumber(v) ? v->valuedouble : -1;
        if (x != keys[i].neutral) {
            char got[64];
            return cg_error(CG_ERR_UNSUPPORTED, "%s: %s %s is not supported (only %g)", path, keys[i].key,
                            cg_cfg_got(v, got, sizeof got), keys[i].neutral);
        }
    }
    return CG_OK;
}

cg_status tf_generation_read(const char *dir, const tf_config *c, tf_generation *g) {
    memset(g, 0, sizeof *g);
    g->num_beams = 1, g->max_length = 20, g->forced_eos = -1, g->forced_bos = -1, g->length_penalty = 1.0;
    cg_strbuf b = {0};
    cg_strbuf_cat(&b, dir, "/generation_config.json", (const char *)NULL);
    char *path = cg_strbuf_take(&b);
    if (!path) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    struct stat sb;
    if (stat(path, &sb) != 0) { /* absent: transformers' defaults */
        free(path);
        return CG_OK;
    }
    cJSON *r = NULL;
    cg_status s = cg_cfg_read(path, &r);
    if (!s) s = cg_cfg_int(path, r, "num_beams", NULL, 1, 1, 1024, &g->num_beams);
    if (!s) s = cg_cfg_int(path, r, "max_length", NULL, 20, 1, MAXI, &g->max_length);
    if (!s) s = cg_cfg_int(path, r, "forced_eos_token_id", NULL, -1, -1, c->dec_vocab - 1, &g->forced_eos);
    if (!s) s = cg_cfg_int(path, r, "forced_bos_token_id", NULL, -1, -1, c->dec_vocab - 1, &g->forced_bos);
    if (!s) s = cg_cfg_int(path, r, "min_length", NULL, 0, 0, MAXI, &g->min_length);
    if (!s) s = cg_cfg_int(path, r, "max_new_tokens", NULL, 0, 0, MAXI, &g->max_new_tokens);
    if (!s) {
        const cJSON *lp = cJSON_GetObjectItemCaseSensitive(r, "length_penalty");
        if (cJSON_IsNumber(lp)) g->length_penalty = lp->valuedouble;
        else if (lp && !cJSON_IsNull(lp)) s = cg_error(CG_ERR_FORMAT, "%s: length_penalty must be a number", path);
    }
    if (!s) s = read_banned(path, r, c, g);
    if (!s) s = read_early(path, r, g);
    if (!s && g->forced_eos >= 0 && g->forced_eos != c->eos_id)
        s = cg_error(CG_ERR_UNSUPPORTED, "%s: forced_eos_token_id %d is not eos_token_id %d (only EOS is forced)", path,
                     g->forced_eos, c->eos_id);
    if (!s) s = refuse_unsupported(path, r);
    cJSON_Delete(r);
    free(path);
    return s;
}
