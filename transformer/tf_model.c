/* Loading a MarianMT-layout directory (docs/transformer.md): config.json,
 * generation_config.json, the tokenizer files when present, the weights
 * by transformers' names, the built graphs and their plans. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_json.h"
#include "error.h"
#include "mem.h"
#include "ir.h"
#include "model_dir.h"
#include "plan_stats.h"
#include "s2s_iface.h"
#include "tf_build.h"
#include "tf_internal.h"
#include "weights.h"

int tf_dir_is_transformer(const char *dir) {
    char *path = cg_path_join(dir, "config.json");
    cJSON *r = NULL;
    int yes = 0;
    if (path && cg_path_exists(path) && cg_cfg_read(path, &r) == CG_OK)
        yes = cJSON_GetObjectItemCaseSensitive(r, "model_type") != NULL;
    cJSON_Delete(r);
    free(path);
    cg_error_clear();
    return yes;
}

static int has_weight(const char *name, void *user) { return cg_weights_find((cg_weights *)user, name) >= 0; }

/* A weight of a matrix product: the attention projections, fc1, fc2,
 * lm_head (what `clgraph quantize` narrows, with the tied embedding). */
static int is_mm(const char *name) {
    static const char *const ends[] = {"_proj.weight", ".fc1.weight", ".fc2.weight", NULL};
    const size_t n = strlen(name);
    for (int i = 0; ends[i]; i++) {
        const size_t e = strlen(ends[i]);
        if (n > e && !strcmp(name + n - e, ends[i])) return 1;
    }
    return !strcmp(name, "lm_head.weight");
}

/* The tensor the output projection reads (tf_build.c head_params). */
static const char *head_name(cg_weights *w) {
    if (cg_weights_find(w, "lm_head.weight") >= 0) return "lm_head.weight";
    if (cg_weights_find(w, "model.decoder.embed_tokens.weight") >= 0) return "model.decoder.embed_tokens.weight";
    return "model.shared.weight";
}

/* The dtype the products read their weights in: bf16, f16 or int8 where
 * every one of them is stored so, else f32 (others are widened at load). */
/* Whether every token table present is stored in int8 with its scales. */
static int tables_q8(cg_weights *w) {
    static const char *const names[] = {"model.shared.weight", "model.encoder.embed_tokens.weight",
                                        "model.decoder.embed_tokens.weight"};
    int any = 0;
    for (int i = 0; i < 3; i++) {
        const int k = cg_weights_find(w, names[i]);
        if (k < 0) continue;
        char sc[64];
        snprintf(sc, sizeof sc, "%s_scale", names[i]);
        if (cg_weights_dtype(w, k) != CG_I8 || cg_weights_find(w, sc) < 0) return 0;
        any = 1;
    }
    return any;
}

static void matmul_dtype(cg_weights *w, tf_config *c) {
    const int idx = cg_weights_find(w, "model.decoder.layers.0.fc1.weight");
    const cg_dtype dt = idx >= 0 ? cg_weights_dtype(w, idx) : CG_F32;
    c->emb_q8 = tables_q8(w);
    c->mm_dtype = c->head_mm = 0;
    if (dt != CG_BF16 && dt != CG_F16 && dt != CG_I8) return;
    for (int i = 0; i < cg_weights_count(w); i++)
        if (is_mm(cg_weights_name(w, i)) && cg_weights_dtype(w, i) != dt) return;
    c->mm_dtype = dt;
    const int h = cg_weights_find(w, head_name(w));
    c->head_mm = h >= 0 && cg_weights_dtype(w, h) == dt;
}

/* The weights as the load option says (cg_s2s_load_options.weights_dtype):
 * 0 as stored; f32 widened at load; bf16, f16 or int8 narrowed at load
 * (as `clgraph quantize` would, the tied embedding included) unless stored
 * so. *w may be replaced. */
static cg_status weights_as(cg_weights **w, tf_config *c, cg_dtype wdt) {
    matmul_dtype(*w, c);
    if (wdt == CG_F32) c->mm_dtype = c->head_mm = c->emb_q8 = 0;
    if (!wdt || wdt == CG_F32 || (c->mm_dtype == (int)wdt && c->head_mm)) return CG_OK;
    cg_weights *q = NULL;
    cg_status st = cg_weights_narrow(*w, wdt, cg_weights_pick_products, NULL, &q);
    if (st) return st;
    cg_weights_free(*w);
    *w = q;
    matmul_dtype(*w, c);
    return CG_OK;
}

/* The graphs' text for configuration c over the weights file w. */
static cg_status build(const tf_config *c, cg_weights *w, char **text) { return tf_build_text(c, has_weight, w, text); }

cg_status tf_graph_text(const char *dir, cg_dtype wdt, char **out) {
    tf_config c;
    cg_weights *w = NULL;
    char *wp = cg_path_join(dir, "model.safetensors");
    cg_status st = wp ? tf_config_read(dir, &c) : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if (!st) st = cg_weights_open(wp, &w);
    if (!st) st = weights_as(&w, &c, wdt);
    if (!st) st = build(&c, w, out);
    cg_weights_free(w);
    free(wp);
    return st;
}

static void shared_release(tf_shared *sh) {
    if (!sh || atomic_fetch_sub(&sh->refs, 1) != 1) return;
    free(sh->io.ck);
    free(sh->io.cv);
    free(sh->io.pk);
    free(sh->io.pv);
    free(sh->io.nk);
    free(sh->io.nv);
    cg_model_free(sh->model);
    cg_weights_free(sh->weights);
    if (sh->has_vocab) tf_vocab_free(&sh->vocab);
    free(sh->dir);
    free(sh);
}

void tf_free(tf_handle *h) {
    if (!h) return;
    cg_plan_free(h->enc);
    cg_plan_free(h->ckv);
    cg_plan_free(h->step);
    cg_plan_free(h->step_maps);
    cg_plan_free(h->step_stream[0]);
    cg_plan_free(h->step_stream[1]);
    cg_aligned_free(h->ckv_mem);
    free(h->device);
    free(h->place);
    shared_release(h->sh);
    free(h);
}

/* decoder_step_maps' positions (the builder's graph has every one of them;
 * decoder_step's are the same without the last output). */
static cg_status resolve_step(tf_shared *sh) {
    const cg_graph *g = cg_model_graph(sh->model, "decoder_step_maps");
    const int L = sh->cfg.dec_layers;
    tf_step_io *x = &sh->io;
    x->ck = malloc(sizeof(int) * (size_t)L);
    x->cv = malloc(sizeof(int) * (size_t)L);
    x->pk = malloc(sizeof(int) * (size_t)L);
    x->pv = malloc(sizeof(int) * (size_t)L);
    x->nk = malloc(sizeof(int) * (size_t)L);
    x->nv = malloc(sizeof(int) * (size_t)L);
    if (!x->ck || !x->cv || !x->pk || !x->pv || !x->nk || !x->nv) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    x->n_in = cg_graph_input_count(g);
    x->n_out = cg_graph_output_count(g);
    x->y = cg_s2s_input_pos(g, "y"), x->ypos = cg_s2s_input_pos(g, "ypos"), x->sent = cg_s2s_input_pos(g, "sentence");
    x->len = cg_s2s_input_pos(g, "src_len"), x->parent = cg_s2s_input_pos(g, "parent");
    x->logits = cg_s2s_output_pos(g, "logits"), x->top_v = cg_s2s_output_pos(g, "top_logp"),
    x->top_i = cg_s2s_output_pos(g, "top_id");
    x->a = cg_s2s_output_pos(g, "a");
    char nm[32];
    for (int l = 0; l < L; l++) {
        snprintf(nm, sizeof nm, "ck%d", l), x->ck[l] = cg_s2s_input_pos(g, nm);
        snprintf(nm, sizeof nm, "cv%d", l), x->cv[l] = cg_s2s_input_pos(g, nm);
        snprintf(nm, sizeof nm, "pk%d", l), x->pk[l] = cg_s2s_input_pos(g, nm);
        snprintf(nm, sizeof nm, "pv%d", l), x->pv[l] = cg_s2s_input_pos(g, nm);
        snprintf(nm, sizeof nm, "nk%d", l), x->nk[l] = cg_s2s_output_pos(g, nm);
        snprintf(nm, sizeof nm, "nv%d", l), x->nv[l] = cg_s2s_output_pos(g, nm);
    }
    /* the stream graphs: the same inputs, then rstart */
    x->rstart = cg_s2s_input_pos(cg_model_graph(sh->model, "decoder_step_stream_maps"), "rstart");
    if (x->rstart != x->n_in)
        return cg_error(CG_ERR_VERIFY, "%s: decoder_step_stream_maps' input rstart is not last", sh->dir);
    return CG_OK;
}

/* The handle's plans. The cross-attention keys and values and the source
 * lengths change once per batch: kept on the device between steps. The
 * self-attention caches are carried from nk<l> / nv<l>, so after the first
 * step they never leave the device. */
static cg_status step_plan(tf_handle *h, const char *graph, const cg_plan_options *placement, cg_plan **out_plan) {
    cg_status st = cg_plan_create(h->sh->model, graph, placement, out_plan);
    cg_plan *p = *out_plan;
    if (!st) st = cg_plan_keep_input(p, "src_len", 1);
    char in[32], out[32];
    for (int l = 0; !st && l < h->sh->cfg.dec_layers; l++)
        for (int i = 0; !st && i < 2; i++) {
            const char *kv = i ? "v" : "k";
            snprintf(in, sizeof in, "c%s%d", kv, l);
            st = cg_plan_keep_input(p, in, 1);
            snprintf(in, sizeof in, "p%s%d", kv, l);
            snprintf(out, sizeof out, "n%s%d", kv, l);
            if (!st) st = cg_plan_carry(p, in, out);
        }
    return st;
}

cg_status tf_step_plan(tf_handle *h, int maps, int stream, cg_plan **plan) {
    static const char *const names[2][2] = {{"decoder_step", "decoder_step_maps"},
                                            {"decoder_step_stream", "decoder_step_stream_maps"}};
    cg_plan **p = stream ? &h->step_stream[!!maps] : maps ? &h->step_maps : &h->step;
    cg_status st = CG_OK;
    if (!*p) {
        cg_plan_options same = {.struct_size = sizeof(cg_plan_options), .device = h->device, .place = h->place};
        st = step_plan(h, names[!!stream][!!maps], &same, p);
        if (st) {
            cg_plan_free(*p);
            *p = NULL;
        }
    }
    *plan = *p;
    return st;
}

static cg_status make_plans(tf_handle *h, const cg_plan_options *placement) {
    cg_model *m = h->sh->model;
    cg_status st = cg_plan_create(m, "encoder", placement, &h->enc);
    if (!st) st = cg_plan_create(m, "cross_kv", placement, &h->ckv);
    if (!st) st = step_plan(h, "decoder_step", placement, &h->step);
    if (!st && placement &&
        ((placement->device && !(h->device = cg_strdup(placement->device))) ||
         (placement->place && !(h->place = cg_strdup(placement->place)))))
        st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    return st;
}

cg_status tf_clone(const tf_handle *h, const cg_plan_options *placement, tf_handle **out) {
    *out = NULL;
    tf_handle *c = calloc(1, sizeof *c);
    if (!c) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    atomic_fetch_add(&h->sh->refs, 1);
    c->sh = h->sh;
    cg_plan_options same = {.struct_size = sizeof(cg_plan_options), .device = h->device, .place = h->place};
    cg_status st = make_plans(c, placement ? placement : &same);
    if (st) {
        tf_free(c);
        return st;
    }
    *out = c;
    return CG_OK;
}

/* The tokenizer files are optional: without them the model translates
 * ids. MarianTokenizer's are vocab.json with source.spm (a BART
 * directory's vocab.json, GPT-2's BPE with merges.txt, is not read). */
static cg_status load_vocab(tf_shared *sh) {
    char *vp = cg_path_join(sh->dir, "vocab.json"), *sp = cg_path_join(sh->dir, "source.spm");
    if (!vp || !sp) {
        free(vp);
        free(sp);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    int present = cg_path_exists(vp) && (sh->cfg.learned_pos ? cg_path_exists(sp) : 1);
    free(vp);
    free(sp);
    if (!present) return CG_OK;
    cg_status st = tf_vocab_load(sh->dir, sh->cfg.pad_id, sh->cfg.eos_id, &sh->vocab);
    if (st) return st;
    sh->has_vocab = 1;
    if (sh->vocab.n > sh->cfg.vocab) {
        return cg_error(CG_ERR_VERIFY, "%s/vocab.json: ids up to %d, but config.json's vocab_size is %d", sh->dir,
                        sh->vocab.n - 1, sh->cfg.vocab);
    }
    return CG_OK;
}

static cg_status load_shared(cg_context *ctx, tf_shared *sh, cg_dtype wdt) {
    char *wp = cg_path_join(sh->dir, "model.safetensors"), *cfg = cg_path_join(sh->dir, "config.json");
    char *text = NULL;
    cg_status st = wp && cfg ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if (!st) st = tf_config_read(sh->dir, &sh->cfg);
    if (!st) st = tf_generation_read(sh->dir, &sh->cfg, &sh->gen);
    if (!st) st = load_vocab(sh);
    if (!st) st = cg_weights_open(wp, &sh->weights);
    if (!st) st = weights_as(&sh->weights, &sh->cfg, wdt);
    if (!st) st = build(&sh->cfg, sh->weights, &text);
    if (!st) {
        char label[4200];
        snprintf(label, sizeof label, "%s (generated from config.json)", cfg);
        st = cg_model_parse(ctx, text, strlen(text), label, &sh->model);
    }
    if (!st) st = cg_model_bind_weights(sh->model, sh->weights);
    if (!st) st = cg_model_verify(sh->model);
    if (!st) st = resolve_step(sh);
    free(text);
    free(wp);
    free(cfg);
    return st;
}

cg_status tf_load(cg_context *ctx, const char *dir, const cg_plan_options *placement, cg_dtype wdt, tf_handle **out) {
    *out = NULL;
    cg_status st = CG_OK;
    tf_handle *h = calloc(1, sizeof *h);
    if (h && !(h->sh = calloc(1, sizeof *h->sh))) {
        free(h);
        h = NULL;
    }
    if (!h) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    atomic_init(&h->sh->refs, 1);
    h->sh->dir = cg_strdup(dir);
    st = h->sh->dir ? load_shared(ctx, h->sh, wdt) : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if (!st) st = make_plans(h, placement);
    if (st) {
        tf_free(h);
        return st;
    }
    *out = h;
    return CG_OK;
}

static cg_status no_vocab(const tf_handle *h) {
    return cg_error(CG_ERR_UNSUPPORTED,
                    "%s: no vocab.json (with source.spm and target.spm): this model translates token ids only (--ids)",
                    h->sh->dir);
}

cg_status tf_tokenize(const tf_handle *h, const char *text, int32_t **ids, int *n) {
    if (!h->sh->has_vocab) return no_vocab(h);
    cg_status st = tf_vocab_encode(&h->sh->vocab, text, ids, n);
    if (!st && *n > 0) --*n; /* without the EOS tf_vocab_encode appends: the search adds it */
    return st;
}

cg_status tf_detokenize(const tf_handle *h, const int32_t *ids, int n, char **text) {
    if (!h->sh->has_vocab) return no_vocab(h);
    return tf_vocab_decode(&h->sh->vocab, ids, n, text);
}

void tf_info(const tf_handle *h, cg_s2s_info *out) {
    out->family = CG_S2S_FAMILY_TRANSFORMER;
    out->tokenizer = h->sh->has_vocab ? CG_S2S_TOKENS_SENTENCEPIECE : CG_S2S_TOKENS_IDS;
    out->unk_id = h->sh->has_vocab ? h->sh->vocab.unk : -1;
    out->src_vocab = h->sh->cfg.vocab;
    out->tgt_vocab = h->sh->cfg.dec_vocab;
}

const char *tf_token(const tf_handle *h, int32_t id) {
    if (id < 0 || id >= h->sh->cfg.vocab) return NULL;
    if (!h->sh->has_vocab) return "";
    return id < h->sh->vocab.n ? h->sh->vocab.piece[id] : NULL;
}

cg_status tf_stats(const tf_handle *h, cg_plan_stats *encoder_total, cg_plan_stats *decoder_total) {
    cg_status st = CG_OK;
    if (encoder_total) st = cg_plan_stats_get(h->enc, NULL, encoder_total);
    if (!st && decoder_total) st = cg_plan_stats_get(h->step, NULL, decoder_total);
    cg_plan_stats m;
    if (!st && decoder_total && h->step_maps && !(st = cg_plan_stats_get(h->step_maps, NULL, &m)))
        cg_plan_stats_add(decoder_total, &m);
    return st;
}

cg_status tf_plan(tf_handle *h, const char *graph, cg_plan **plan) {
    *plan = NULL;
    if (!strcmp(graph, "decoder_logp")) return CG_OK; /* the step's logits serve the widest beams */
    if (!strcmp(graph, "encoder")) *plan = h->enc;
    else if (!strcmp(graph, "cross_kv")) *plan = h->ckv;
    else if (!strcmp(graph, "decoder_step") || !strcmp(graph, "decoder")) *plan = h->step;
    else if (!strcmp(graph, "decoder_step_maps")) return tf_step_plan(h, 1, 0, plan);
    if (*plan) return CG_OK;
    return cg_error(CG_ERR_INVALID_ARGUMENT,
                    "%s: a Transformer model has no plan for graph '%s' (encoder, cross_kv, decoder_step or its "
                    "name decoder, decoder_step_maps)",
                    h->sh->dir, graph);
}

const cg_model *tf_model(const tf_handle *h) { return h->sh->model; }

size_t tf_decoder_weight_bytes(const tf_handle *h) {
    const cg_graph *g = cg_model_graph(h->sh->model, "decoder_step");
    size_t total = 0;
    for (int i = 0; g && i < g->n_values; i++) {
        const cg_value *v = &g->values[i];
        if (v->kind != CG_VAL_PARAM) continue;
        size_t n = cg_dtype_size(v->dtype);
        for (int d = 0; d < v->ndim; d++) n *= v->dims[d] > 0 ? (size_t)v->dims[d] : 0;
        total += n;
    }
    return total;
}
