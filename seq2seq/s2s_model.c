/* Loading a seq2seq model directory: configuration, vocabularies, weights,
 * graphs (model.cg or the builder's), and their plans; plus tokenization. */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "analysis.h"
#include "ir.h"
#include "model_dir.h"
#include "s2s_internal.h"
#include "utf8.h"
#include "weights.h"

/* Vocabulary sizes from the embedding tables, which must be [V, E]. */
static cg_status embed_sizes(cg_weights *w, s2s_config *c) {
    const char *names[2] = {"src_embed.weight", "tgt_embed.weight"};
    int *v[2] = {&c->v_src, &c->v_tgt};
    for (int i = 0; i < 2; i++) {
        int idx = cg_weights_find(w, names[i]);
        cg_tensor_desc d;
        if (idx < 0)
            return cg_error(CG_ERR_NOT_FOUND, "%s: tensor '%s' is missing (expected f32[V, %d])", cg_weights_path(w),
                            names[i], c->emb_dim);
        cg_status st = cg_weights_desc(w, (size_t)idx, &d);
        if (st) return st;
        if (d.dtype != CG_OP_F32 || d.ndim != 2 || d.dims[1] != c->emb_dim || d.dims[0] < 1 || d.dims[0] > 1 << 30) {
            char have[128];
            cg_desc_format(have, sizeof have, NULL, &d);
            return cg_error(CG_ERR_VERIFY, "%s: tensor '%s' is %s, expected f32[V, %d] (emb_dim)", cg_weights_path(w),
                            names[i], have, c->emb_dim);
        }
        *v[i] = (int)d.dims[0];
    }
    return CG_OK;
}

/* The last layer's input matrix of the encoder and the decoder, looked for
 * before a graph of the configured layers is built: "encoder_layers":
 * 1000000 took 30 s and 3 GB to build before its missing layer 1 was
 * named (issue 29). Layer 0 is looked for, with its shape, when the graph
 * is matched against the weights. */
static cg_status last_layers_present(cg_weights *w, const s2s_config *c, const char *cfg) {
    const char *mods[2] = {"encoder", "decoder"};
    const int layers[2] = {c->encoder_layers, c->decoder_layers};
    for (int i = 0; i < 2; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s.weight_ih_l%d", mods[i], layers[i] - 1);
        if (layers[i] > 1 && cg_weights_find(w, name) < 0)
            return cg_error(CG_ERR_NOT_FOUND, "%s: tensor '%s' is missing (%s says %s_layers %d)", cg_weights_path(w),
                            name, cfg, mods[i], layers[i]);
    }
    return CG_OK;
}

/* An RNN weight matrix as rnn_param_name (s2s_build.c) names it:
 * MOD.weight_ih_lN or MOD.weight_hh_lN, "_reverse" after it for the
 * backward direction; nothing else under that prefix (the int8 scales,
 * MOD.weight_ih_l0_scale, taken for a matrix once made every int8 model run
 * as f32). */
static int is_rnn_matrix(const char *name) {
    const char *p = !strncmp(name, "encoder.", 8) || !strncmp(name, "decoder.", 8) ? name + 8 : NULL;
    if (!p || (strncmp(p, "weight_ih_l", 11) && strncmp(p, "weight_hh_l", 11))) return 0;
    p += 11;
    if (!isdigit((unsigned char)*p)) return 0;
    while (isdigit((unsigned char)*p)) p++;
    return !*p || !strcmp(p, "_reverse");
}

/* A weight the builder declares with mm_dtype (param2w in s2s_build.c):
 * the RNNs' matrices, W_k, the bridge, combine and the output layer. */
static int is_mm_weight(const char *name) {
    static const char *const whole[] = {"attention.W_k.weight", "bridge.weight", "combine.weight", "out.weight", NULL};
    for (int i = 0; whole[i]; i++)
        if (!strcmp(name, whole[i])) return 1;
    return is_rnn_matrix(name);
}

/* The dtype the kernels read the matrix-product weights in (s2s_config's
 * mm_dtype): bf16, f16 or int8 where every one of them is stored so (a
 * model `clgraph quantize` wrote), else f32 (0). A missing one is left to
 * cg_model_weights_exact to name. */
static void matmul_dtype(cg_weights *w, s2s_config *c) {
    int idx = cg_weights_find(w, "out.weight");
    const cg_dtype dt = idx >= 0 ? cg_weights_dtype(w, idx) : (cg_dtype)0;
    c->mm_dtype = 0;
    if (dt != CG_BF16 && dt != CG_F16 && dt != CG_I8) return;
    for (int i = 0; i < cg_weights_count(w); i++)
        if (is_mm_weight(cg_weights_name(w, i)) && cg_weights_dtype(w, i) != dt) return;
    c->mm_dtype = dt;
}

static int pick_mm(const char *name, cg_dtype stored, int ndim, void *user) {
    (void)stored, (void)ndim, (void)user;
    return is_mm_weight(name);
}

/* weights_dtype int8 on a model stored otherwise: *w replaced by a copy in
 * memory with its matrix-product weights quantized per row (and their
 * NAME_scale tensors), the rest as stored. */
static cg_status quantize_at_load(cg_weights **w) {
    cg_weights *qw = NULL;
    cg_status st = cg_weights_narrow(*w, CG_I8, pick_mm, NULL, &qw);
    if (st) return st;
    cg_weights_free(*w);
    *w = qw;
    return CG_OK;
}

/* The load options' weights_dtype, checked (0 without options). */
static cg_status load_dtype(const cg_s2s_load_options *opt, cg_dtype *wdt) {
    *wdt = 0;
    if (!opt) return CG_OK;
    if (opt->struct_size < offsetof(cg_s2s_load_options, weights_dtype) + sizeof opt->weights_dtype)
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "cg_s2s_load_options.struct_size is %zu; set it to sizeof(cg_s2s_load_options)",
                        opt->struct_size);
    const cg_dtype d = opt->weights_dtype;
    if (d && d != CG_F32 && d != CG_BF16 && d != CG_F16 && d != CG_I8)
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "cg_s2s_load_options: weights_dtype must be f32, bf16, f16 or i8, got %s", cg_dtype_name(d));
    *wdt = d;
    return CG_OK;
}

/* A weights_dtype option decides the builder's mm_dtype (0 keeps the
 * stored one). */
static void apply_dtype(s2s_config *c, cg_dtype wdt) {
    if (wdt) c->mm_dtype = wdt == CG_F32 ? 0 : wdt;
}

/* A model.cg declares its weights' dtypes itself. */
static cg_status no_dtype_for_file(const char *cgp, cg_dtype wdt) {
    if (!wdt) return CG_OK;
    return cg_error(CG_ERR_INVALID_ARGUMENT,
                    "%s: the weights' dtype is set by its own param declarations, not by "
                    "a load option (weights_dtype, --weights-dtype)",
                    cgp);
}

/* A model.cg's text as it runs: the file, or, when loading converts an
 * older decoder (s2s_upgrade.c), the converted graphs printed. */
static cg_status file_text(const char *path, char **out) {
    cg_status st = cg_read_text_file(path, out);
    cg_model *m = NULL;
    int changed = 0;
    if (!st) st = cg_parse_text(NULL, *out, strlen(*out), path, &m);
    if (!st) st = cg_s2s_upgrade(m, &changed);
    if (!st && changed) {
        free(*out);
        *out = NULL;
        st = cg_print_text(m, out);
    }
    cg_model_free(m);
    if (st) {
        free(*out);
        *out = NULL;
    }
    return st;
}

cg_status cg_s2s_graph_text(const char *dir, const cg_s2s_load_options *opt, char **out) {
    if (!dir || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_graph_text: NULL argument");
    *out = NULL;
    cg_dtype wdt;
    cg_status st = load_dtype(opt, &wdt);
    if (st) return st;
    if (tf_dir_is_transformer(dir)) return tf_graph_text(dir, wdt, out);
    char *cg_path = cg_path_join(dir, "model.cg"), *cfg_path = cg_path_join(dir, "config.json"),
         *w_path = cg_path_join(dir, "weights.safetensors");
    st = cg_path && cfg_path && w_path ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if (!st && cg_path_exists(cg_path)) {
        st = no_dtype_for_file(cg_path, wdt);
        if (!st) st = file_text(cg_path, out);
    } else if (!st) {
        s2s_config c;
        cg_weights *w = NULL;
        st = cg_s2s_config_read(cfg_path, &c);
        if (!st) st = cg_weights_open(w_path, &w);
        if (!st) st = embed_sizes(w, &c);
        if (!st) matmul_dtype(w, &c);
        if (!st) apply_dtype(&c, wdt);
        if (!st) st = last_layers_present(w, &c, cfg_path);
        if (!st) st = cg_s2s_build_text(&c, out);
        cg_weights_free(w);
    }
    free(cg_path);
    free(cfg_path);
    free(w_path);
    return st;
}

static void shared_release(s2s_shared *sh) {
    if (!sh || atomic_fetch_sub(&sh->refs, 1) != 1) return;
    cg_s2s_iface_free(&sh->iface);
    cg_model_free(sh->model);
    cg_weights_free(sh->weights);
    cg_s2s_vocab_free(&sh->src);
    cg_s2s_vocab_free(&sh->tgt);
    free(sh->dir);
    free(sh);
}

void cg_s2s_free(cg_s2s *m) {
    if (!m) return;
    tf_free(m->tf);
    /* Plans first: they read the shared model. */
    cg_plan_free(m->enc);
    cg_plan_free(m->dec);
    cg_plan_free(m->dec_logp);
    free(m->device);
    free(m->place);
    shared_release(m->shared);
    free(m);
}

/* The encoder's outputs change once per batch of sentences, not per step:
 * a device keeps them between decoder steps (and src_len too when the
 * decoder takes it per sentence, with an input `sentence`). A decoder with
 * an input `parent` reorders its state rows itself: its state inputs are
 * carried from the state outputs (X from X_new), so they stay where they
 * are made. */
static cg_status prepare_decoder(cg_s2s *m, cg_plan *p, const char *graph, const s2s_dec_iface *io) {
    cg_graph *g = cg_model_graph(m->shared->model, graph);
    for (int k = 0; k < io->n_in; k++) {
        const char *nm = cg_graph_input_name(g, k);
        cg_status st = CG_OK;
        if (k == io->keys || k == io->kproj || (io->sent >= 0 && k == io->len)) st = cg_plan_keep_input(p, nm, 1);
        if (io->parent >= 0 && io->state[k]) {
            /* Sized from the name: a model.cg may number its layers with
             * as many digits as it likes. */
            size_t n = strlen(nm) + sizeof "_new";
            char *out = malloc(n);
            if (!out) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
            snprintf(out, n, "%s_new", nm);
            st = cg_plan_carry(p, nm, out);
            free(out);
        }
        if (st) return st;
    }
    return CG_OK;
}

/* Graph decoder_logp is planned when first needed: most runs never are. */
static cg_status plan_decoder_logp(cg_s2s *m) {
    if (m->dec_logp) return CG_OK;
    cg_plan_options po = {.struct_size = sizeof(cg_plan_options), .device = m->device, .place = m->place};
    cg_status st = cg_plan_create(m->shared->model, "decoder_logp", &po, &m->dec_logp);
    if (!st) st = prepare_decoder(m, m->dec_logp, "decoder_logp", &m->shared->iface.dec_logp);
    if (st) {
        cg_plan_free(m->dec_logp);
        m->dec_logp = NULL;
    }
    return st;
}

cg_status cg_s2s_decoder_plan(cg_s2s *m, int need, cg_plan **plan, const s2s_dec_iface **io) {
    const int top_k = m->shared->iface.dec.top_k;
    if (!top_k || need <= top_k) {
        *plan = m->dec;
        *io = &m->shared->iface.dec;
        return CG_OK;
    }
    if (!cg_model_graph(m->shared->model, "decoder_logp"))
        return cg_error(CG_ERR_UNSUPPORTED,
                        "%s: the search needs %d candidates per hypothesis, graph 'decoder' keeps "
                        "%d (top_logp), and there is no graph 'decoder_logp' with the whole logp",
                        m->shared->dir, need, top_k);
    cg_status st = plan_decoder_logp(m);
    if (st) return st;
    *plan = m->dec_logp;
    *io = &m->shared->iface.dec_logp;
    return CG_OK;
}

cg_status cg_s2s_plan(cg_s2s *m, const char *graph, cg_plan **plan) {
    if (!m || !graph || !plan) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_plan: NULL argument");
    *plan = NULL;
    if (m->tf) return tf_plan(m->tf, graph, plan);
    if (!strcmp(graph, "encoder")) *plan = m->enc;
    else if (!strcmp(graph, "decoder")) *plan = m->dec;
    else if (strcmp(graph, "decoder_logp"))
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "%s: a seq2seq model has no plan for graph '%s' (encoder, decoder "
                        "or decoder_logp)",
                        m->shared->dir, graph);
    else if (cg_model_graph(m->shared->model, "decoder_logp")) {
        cg_status st = plan_decoder_logp(m);
        if (st) return st;
        *plan = m->dec_logp;
    }
    return CG_OK;
}

const cg_model *cg_s2s_model(const cg_s2s *m) { return !m ? NULL : m->tf ? tf_model(m->tf) : m->shared->model; }

/* The handle's own plans (encoder and decoder) for a placement, kept to
 * plan decoder_logp with later. */
static cg_status make_plans(cg_s2s *m, const cg_plan_options *placement) {
    cg_status st = cg_plan_create(m->shared->model, "encoder", placement, &m->enc);
    if (!st) st = cg_plan_create(m->shared->model, "decoder", placement, &m->dec);
    if (!st) st = prepare_decoder(m, m->dec, "decoder", &m->shared->iface.dec);
    if (!st && placement &&
        ((placement->device && !(m->device = cg_strdup(placement->device))) ||
         (placement->place && !(m->place = cg_strdup(placement->place)))))
        st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    return st;
}

cg_status cg_s2s_clone(const cg_s2s *m, const cg_plan_options *placement, cg_s2s **out) {
    if (!m || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_clone: NULL argument");
    *out = NULL;
    cg_s2s *c = calloc(1, sizeof *c);
    if (!c) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if (m->tf) {
        cg_status st = tf_clone(m->tf, placement, &c->tf);
        if (st) free(c);
        else *out = c;
        return st;
    }
    atomic_fetch_add(&m->shared->refs, 1);
    c->shared = m->shared;
    cg_plan_options same = {.struct_size = sizeof(cg_plan_options), .device = m->device, .place = m->place};
    cg_status st = make_plans(c, placement ? placement : &same);
    if (st) {
        cg_s2s_free(c);
        return st;
    }
    *out = c;
    return CG_OK;
}
/* The conventional spellings of the special tokens, when a vocabulary has
 * them, must sit at the ids config.json gives: text containing "</s>" at
 * another id would decode, and stop, differently from what the model
 * learnt. */
static cg_status specials_in_place(const s2s_vocab *v, const char *path, const char *const keys[4], const int ids[4]) {
    static const char *const spelling[4] = {"<pad>", "<s>", "</s>", "<unk>"};
    for (int i = 0; i < 4; i++) {
        int at = cg_s2s_vocab_find(v, spelling[i], strlen(spelling[i]));
        if (at >= 0 && at != ids[i])
            return cg_error(CG_ERR_VERIFY, "%s:%d: '%s' is token %d, but config.json's %s is %d (line %d)", path,
                            at + 1, spelling[i], at, keys[i], ids[i], ids[i] + 1);
    }
    return CG_OK;
}

/* A directory of the Transformer family (tf_family.h). */
static cg_status load_transformer(cg_context *ctx, const char *dir, const cg_plan_options *placement, cg_dtype wdt,
                                  cg_s2s **out) {
    cg_s2s *m = calloc(1, sizeof *m);
    if (!m) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    cg_status st = tf_load(ctx, dir, placement, wdt, &m->tf);
    if (st) free(m);
    else *out = m;
    return st;
}

cg_status cg_s2s_load(cg_context *ctx, const char *dir, const cg_plan_options *placement,
                      const cg_s2s_load_options *opt, cg_s2s **out) {
    if (!ctx || !dir || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_load: NULL argument");
    *out = NULL;
    cg_dtype wdt;
    cg_status dst = load_dtype(opt, &wdt);
    if (dst) return dst;
    if (tf_dir_is_transformer(dir)) return load_transformer(ctx, dir, placement, wdt, out);
    cg_s2s *m = calloc(1, sizeof *m);
    if (m && !(m->shared = calloc(1, sizeof *m->shared))) {
        free(m);
        m = NULL;
    }
    if (!m) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    atomic_init(&m->shared->refs, 1);
    m->shared->dir = cg_strdup(dir);
    char *cfg = cg_path_join(dir, "config.json"), *wp = cg_path_join(dir, "weights.safetensors"),
         *sv = cg_path_join(dir, "src.vocab"), *tv = cg_path_join(dir, "tgt.vocab"),
         *cgp = cg_path_join(dir, "model.cg");
    char *text = NULL;
    cg_status st = m->shared->dir && cfg && wp && sv && tv && cgp ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if (!st && !cg_path_exists(dir)) st = cg_error(CG_ERR_IO, "%s: no such model directory", dir);
    if (!st) st = cg_s2s_config_read(cfg, &m->shared->cfg);
    if (!st) st = cg_weights_open(wp, &m->shared->weights);
    if (!st) st = embed_sizes(m->shared->weights, &m->shared->cfg);
    if (!st) matmul_dtype(m->shared->weights, &m->shared->cfg);
    if (!st && wdt == CG_I8 && m->shared->cfg.mm_dtype != CG_I8 && !cg_path_exists(cgp)) {
        st = quantize_at_load(&m->shared->weights);
    }
    if (!st) apply_dtype(&m->shared->cfg, wdt);
    if (!st) st = cg_s2s_vocab_read(sv, &m->shared->src);
    if (!st) st = cg_s2s_vocab_read(tv, &m->shared->tgt);
    if (!st && m->shared->src.n != m->shared->cfg.v_src)
        st = cg_error(CG_ERR_VERIFY, "%s: %d tokens, but src_embed.weight has %d rows", sv, m->shared->src.n,
                      m->shared->cfg.v_src);
    if (!st && m->shared->tgt.n != m->shared->cfg.v_tgt)
        st = cg_error(CG_ERR_VERIFY, "%s: %d tokens, but tgt_embed.weight has %d rows", tv, m->shared->tgt.n,
                      m->shared->cfg.v_tgt);
    if (!st) {
        const char *keys[4] = {"pad_id", "bos_id", "eos_id", "unk_id"};
        int ids[4] = {m->shared->cfg.pad_id, m->shared->cfg.bos_id, m->shared->cfg.eos_id, m->shared->cfg.unk_id};
        int lim = m->shared->cfg.v_src < m->shared->cfg.v_tgt ? m->shared->cfg.v_src : m->shared->cfg.v_tgt;
        for (int i = 0; i < 4 && !st; i++)
            if (ids[i] >= lim)
                st = cg_error(CG_ERR_VERIFY, "%s: key '%s' is %d, outside a vocabulary of %d tokens", cfg, keys[i],
                              ids[i], lim);
        if (!st) st = specials_in_place(&m->shared->src, sv, keys, ids);
        if (!st) st = specials_in_place(&m->shared->tgt, tv, keys, ids);
    }
    int from_file = !st && cg_path_exists(cgp);
    if (from_file) st = no_dtype_for_file(cgp, wdt);
    if (!st && !from_file) st = last_layers_present(m->shared->weights, &m->shared->cfg, cfg);
    if (!st) st = from_file ? cg_model_load(ctx, cgp, &m->shared->model) : cg_s2s_build_text(&m->shared->cfg, &text);
    if (!st && !from_file) {
        char label[4200];
        snprintf(label, sizeof label, "%s (generated from config.json)", cfg);
        st = cg_model_parse(ctx, text, strlen(text), label, &m->shared->model);
        if (!st) st = cg_model_weights_exact(m->shared->model, m->shared->weights, cfg);
    }
    if (!st && from_file) st = cg_s2s_upgrade(m->shared->model, NULL);
    if (!st) st = cg_model_verify(m->shared->model);
    if (!st) st = cg_model_bind_weights(m->shared->model, m->shared->weights);
    if (!st) st = cg_s2s_iface_resolve(m->shared->model, &m->shared->cfg, from_file ? cgp : cfg, &m->shared->iface);
    /* model.cg: the binder names a missing or mis-shaped weight with its
     * place in the file; a tensor no graph reads is still a mistake. */
    if (!st && from_file) st = cg_model_weights_exact(m->shared->model, m->shared->weights, cgp);
    if (!st) st = make_plans(m, placement);
    free(text);
    free(cfg);
    free(wp);
    free(sv);
    free(tv);
    free(cgp);
    if (st) {
        cg_s2s_free(m);
        return st;
    }
    *out = m;
    return CG_OK;
}

cg_status cg_s2s_get_info(const cg_s2s *m, cg_s2s_info *out) {
    if (!m || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_get_info: NULL argument");
    if (out->struct_size < sizeof *out)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_get_info: struct_size %zu is smaller than cg_s2s_info (%zu)",
                        out->struct_size, sizeof *out);
    if (m->tf) {
        tf_info(m->tf, out);
        return CG_OK;
    }
    const s2s_shared *sh = m->shared;
    out->family = CG_S2S_FAMILY_RNN;
    out->tokenizer = sh->cfg.chars ? CG_S2S_TOKENS_CHARS : CG_S2S_TOKENS_WORDS;
    out->unk_id = sh->cfg.unk_id;
    out->src_vocab = sh->src.n;
    out->tgt_vocab = sh->tgt.n;
    return CG_OK;
}

const char *cg_s2s_token(const cg_s2s *m, int target, int32_t id) {
    if (!m) return NULL;
    if (m->tf) return tf_token(m->tf, id);
    const s2s_vocab *v = target ? &m->shared->tgt : &m->shared->src;
    return id >= 0 && id < v->n ? v->tokens[id] : NULL;
}

cg_status cg_s2s_tokenize(const cg_s2s *m, const char *text, int32_t **ids, int *n) {
    if (!m || !text || !ids || !n) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_tokenize: NULL argument");
    if (m->tf) return tf_tokenize(m->tf, text, ids, n);
    size_t len = strlen(text);
    int32_t *out = malloc(sizeof *out * (len + 1));
    if (!out) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    int k = 0;
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < len) {
        if (m->shared->cfg.chars) {
            /* a malformed byte is a token of its own, so any input tokenizes */
            size_t l = cg_utf8_seq_len(text + i, len - i);
            if (!l) l = 1;
            int id = cg_s2s_vocab_find(&m->shared->src, text + i, l);
            out[k++] = id >= 0 ? id : m->shared->cfg.unk_id;
            i += l;
        } else {
            while (i < len &&
                   (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\v' || s[i] == '\f'))
                i++;
            size_t j = i;
            while (j < len &&
                   !(s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r' || s[j] == '\v' || s[j] == '\f'))
                j++;
            if (j > i) {
                int id = cg_s2s_vocab_find(&m->shared->src, text + i, j - i);
                out[k++] = id >= 0 ? id : m->shared->cfg.unk_id;
            }
            i = j;
        }
    }
    *ids = out;
    *n = k;
    return CG_OK;
}

cg_status cg_s2s_detokenize(const cg_s2s *m, const int32_t *ids, int n, char **text) {
    if (!m || (n && !ids) || !text) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_detokenize: NULL argument");
    if (m->tf) return tf_detokenize(m->tf, ids, n, text);
    size_t cap = 1;
    for (int i = 0; i < n; i++) {
        const char *t = cg_s2s_token(m, 1, ids[i]);
        cap += (t ? strlen(t) : 16) + 1;
    }
    char *s = malloc(cap);
    if (!s) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    size_t u = 0;
    for (int i = 0; i < n; i++) {
        const char *t = cg_s2s_token(m, 1, ids[i]);
        char unknown[16];
        if (!t) {
            snprintf(unknown, sizeof unknown, "<%d>", ids[i]);
            t = unknown;
        }
        if (i && !m->shared->cfg.chars) s[u++] = ' ';
        size_t l = strlen(t);
        memcpy(s + u, t, l);
        u += l;
    }
    s[u] = 0;
    *text = s;
    return CG_OK;
}

cg_status cg_s2s_stats(const cg_s2s *m, cg_plan_stats *encoder_total, cg_plan_stats *decoder_total) {
    if (!m) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_stats: NULL model");
    if (m->tf) return tf_stats(m->tf, encoder_total, decoder_total);
    cg_status st = CG_OK;
    if (encoder_total) st = cg_plan_stats_get(m->enc, NULL, encoder_total);
    if (!st && decoder_total) st = cg_plan_stats_get(m->last_dec ? m->last_dec : m->dec, NULL, decoder_total);
    return st;
}

size_t cg_s2s_decoder_weight_bytes(const cg_s2s *m) {
    if (m && m->tf) return tf_decoder_weight_bytes(m->tf);
    const cg_graph *g = m && m->shared->model ? cg_model_graph(m->shared->model, "decoder") : NULL;
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
