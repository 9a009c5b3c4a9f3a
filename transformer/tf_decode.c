/* Decoding a batch with the Transformer family: the encoder and the
 * cross-attention keys and values once per batch, then decoder_step per
 * step over the live rows, its self-attention caches carried on the device
 * and reordered there by `parent`; the choices are the seq2seq family's
 * search under transformers' rules (s2s_search.h, S2S_RULES_HF). Rows are
 * padded to a power of two as the RNN family pads them (a padding row
 * repeats the last real row and is ignored). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "mem.h"
#include "s2s.h"
#include "s2s_search.h"
#include "tensor.h"
#include "tf_batch.h"
#include "tf_build.h"

/* Each source with EOS appended, unless it ends with one already (ids
 * from transformers' tokenizer do). */
cg_status tf_batch_sources(tf_batch *bt, const int *ids, const int32_t *const *src, const int *src_len) {
    const int eos = bt->h->sh->cfg.eos_id;
    bt->src = calloc((size_t)bt->nb, sizeof *bt->src);
    bt->len = calloc((size_t)bt->nb, sizeof *bt->len);
    bt->given = calloc((size_t)bt->nb, sizeof *bt->given);
    if (!bt->src || !bt->len || !bt->given) return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    bt->S = 1;
    for (int b = 0; b < bt->nb; b++) {
        const int n = src_len[ids[b]], ends = n > 0 && src[ids[b]][n - 1] == eos;
        bt->len[b] = n + !ends;
        bt->given[b] = n;
        if (!(bt->src[b] = malloc(sizeof(int32_t) * (size_t)bt->len[b])))
            return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
        if (n) memcpy(bt->src[b], src[ids[b]], sizeof(int32_t) * (size_t)n);
        bt->src[b][bt->len[b] - 1] = eos;
        if (bt->len[b] > bt->S) bt->S = bt->len[b];
    }
    /* The decoder sees the sources padded (the padding masked): batches of
     * nearby lengths bind the same shapes, so its plan instances (one per
     * source and cache length) serve them again instead of being rebuilt.
     * To a multiple of 8 for small batches, which are many and short-lived
     * (8 sentences at batch 1: 13% slower with multiples of 4); of 4 from
     * 16 rows on, whose padded keys cost every row memory and attention
     * (OPUS-base int8 batch 32: 3 MB of cross-attention keys and values).
     * The encoder runs on the longest source as it is. */
    bt->S_enc = bt->S;
    const int pad = bt->nb * bt->s.k >= 16 ? 4 : 8;
    bt->S = (bt->S + pad - 1) / pad * pad;
    return CG_OK;
}

/* The encoder's output widened to the decoder's S source positions (zero
 * rows where the mask hides them), in place of bt->enc. */
static cg_status widen(tf_batch *bt) {
    const int nb = bt->nb, S = bt->S_enc, D = bt->h->sh->cfg.d_model;
    if (S == bt->S) return CG_OK;
    int64_t dims[3] = {nb, bt->S, D};
    cg_tensor *w;
    cg_status st = cg_tensor_create(CG_F32, 3, dims, &w); /* zeroed */
    if (st) return st;
    const float *from = cg_tensor_data_const(bt->enc);
    float *to = cg_tensor_data(w);
    for (int b = 0; b < nb; b++)
        memcpy(to + (size_t)b * bt->S * D, from + (size_t)b * S * D, sizeof(float) * (size_t)S * D);
    cg_tensor_free(bt->enc);
    bt->enc = w;
    return CG_OK;
}

/* The cross-attention keys and values' tensors, over the handle's buffer
 * for them: kept from batch to batch (grown when a batch needs more), so a
 * batch does not fault in fresh pages for them (the copy out of cross_kv's
 * arena into new tensors was 16 ms of a batch of 32). */
static cg_status ckv_tensors(tf_batch *bt) {
    tf_handle *h = bt->h;
    const tf_config *c = &h->sh->cfg;
    const int L = c->dec_layers, H = c->dec_heads;
    const int64_t dims[4] = {bt->nb, bt->S, H, c->d_model / H};
    const size_t one = (size_t)(dims[0] * dims[1] * dims[2] * dims[3]) * sizeof(float);
    const size_t each = (one + 63) / 64 * 64, need = each * (size_t)(2 * L);
    if (need > h->ckv_cap) {
        cg_aligned_free(h->ckv_mem);
        h->ckv_cap = 0;
        if (!(h->ckv_mem = cg_aligned_alloc(need))) return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
        h->ckv_cap = need;
    }
    cg_status st = CG_OK;
    for (int i = 0; !st && i < 2 * L; i++)
        st = cg_tensor_wrap(CG_F32, 4, dims, (char *)h->ckv_mem + (size_t)i * each, &bt->ckv[i]);
    return st;
}

/* The encoder over the sources padded to the longest, then every layer's
 * cross-attention keys and values over its output widened to S. */
cg_status tf_batch_encode(tf_batch *bt) {
    const tf_config *c = &bt->h->sh->cfg;
    const int nb = bt->nb, S = bt->S_enc, L = c->dec_layers;
    cg_tensor *esrc = NULL, *pos = NULL;
    int64_t d2[2] = {nb, S}, d1 = nb, dp[2] = {S, c->d_model};
    cg_status st = cg_tensor_create(CG_I32, 2, d2, &esrc);
    if (!st) st = cg_tensor_create(CG_I32, 1, &d1, &bt->elen);
    if (!st) st = cg_tensor_create(CG_F32, 2, dp, &pos);
    if (!st) {
        int32_t *sd = cg_tensor_data(esrc), *ld = cg_tensor_data(bt->elen);
        for (int b = 0; b < nb; b++) {
            ld[b] = bt->len[b];
            for (int s = 0; s < S; s++) sd[b * S + s] = s < bt->len[b] ? bt->src[b][s] : c->pad_id;
        }
        st = tf_position_rows(c, bt->h->sh->weights, 0, 0, S, cg_tensor_data(pos));
        const char *names[3] = {"src", "src_len", "pos"};
        cg_tensor *ins[3] = {esrc, bt->elen, pos};
        if (!st) st = cg_plan_run(bt->h->enc, 3, names, ins, 1, &bt->enc);
    }
    cg_tensor_free(esrc);
    cg_tensor_free(pos);
    bt->ckv = calloc((size_t)(2 * L), sizeof *bt->ckv);
    if (!st && !bt->ckv) st = cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    const char *en[1] = {"enc"};
    if (!st) st = widen(bt);
    if (!st) st = ckv_tensors(bt);
    if (!st) st = cg_plan_run_into(bt->h->ckv, 1, en, &bt->enc, 2 * L, bt->ckv);
    cg_tensor_free(bt->enc); /* read by cross_kv only */
    bt->enc = NULL;
    /* The encoder's and cross_kv's temporaries are not needed again until
     * the next batch: the decoder's caches grow into that memory instead. */
    if (!st && !bt->keep_arenas) st = cg_plan_release(bt->h->enc, CG_RELEASE_ARENA);
    if (!st && !bt->keep_arenas) st = cg_plan_release(bt->h->ckv, CG_RELEASE_ARENA);
    return st;
}

/* The index lists of a run: every input (a step that gives the caches)
 * and all but the carried caches. */
void tf_batch_bind(tf_batch *bt) {
    const tf_step_io *x = &bt->h->sh->io;
    const int n_in = x->n_in + bt->stream; /* a stream's graph has rstart last */
    bt->n_first = bt->n_c = 0;
    for (int k = 0; k < n_in; k++) {
        bt->idx[bt->n_first++] = k;
        int carried = 0;
        for (int l = 0; l < bt->h->sh->cfg.dec_layers; l++) carried |= k == x->pk[l] || k == x->pv[l];
        if (!carried) bt->idx_c[bt->n_c] = k, bt->in_c[bt->n_c++] = bt->in[k];
    }
}

/* decoder_step's tensors for the most rows (their leading dim is set per
 * step) and the two index lists. */
cg_status tf_batch_open_step(tf_batch *bt) {
    const tf_config *c = &bt->h->sh->cfg;
    const tf_step_io *x = &bt->h->sh->io;
    const int L = c->dec_layers, Dh = c->d_model / c->dec_heads, n_in = x->n_in + bt->stream;
    const int64_t rows = bt->max_rows, D = c->d_model, cache[4] = {rows, 0, c->dec_heads, Dh};
    const int64_t tk[2] = {rows, TF_TOP_K}, lg[2] = {rows, bt->V}, pd[2] = {rows, D};
    cg_status st = tf_step_plan(bt->h, bt->o->attention, bt->stream, &bt->step);
    if (st) return st;
    bt->in = calloc((size_t)n_in, sizeof *bt->in);
    bt->out = calloc((size_t)x->n_out, sizeof *bt->out);
    bt->idx = calloc((size_t)n_in, sizeof *bt->idx);
    bt->idx_c = calloc((size_t)n_in, sizeof *bt->idx_c);
    bt->in_c = calloc((size_t)n_in, sizeof *bt->in_c);
    if (!bt->in || !bt->out || !bt->idx || !bt->idx_c || !bt->in_c)
        return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    st = cg_tensor_create(CG_I32, 1, &rows, &bt->in[x->y]);
    /* a stream's rows each have their position: one row each */
    if (!st)
        st = bt->stream ? cg_tensor_create(CG_F32, 2, pd, &bt->in[x->ypos])
                        : cg_tensor_create(CG_F32, 1, &D, &bt->in[x->ypos]);
    if (!st && bt->stream) st = cg_tensor_create(CG_I32, 1, &rows, &bt->in[x->rstart]);
    if (!st) st = cg_tensor_create(CG_I32, 1, &rows, &bt->in[x->sent]);
    if (!st) st = cg_tensor_create(CG_I32, 1, &rows, &bt->in[x->parent]);
    for (int l = 0; !st && l < L; l++) {
        st = cg_tensor_create(CG_F32, 4, cache, &bt->in[x->pk[l]]);
        if (!st) st = cg_tensor_create(CG_F32, 4, cache, &bt->in[x->pv[l]]);
    }
    if (!st)
        st = bt->wide ? cg_tensor_create(CG_F32, 2, lg, &bt->out[x->logits])
                      : cg_tensor_create(CG_F32, 2, tk, &bt->out[x->top_v]);
    if (!st && !bt->wide) st = cg_tensor_create(CG_I32, 2, tk, &bt->out[x->top_i]);
    if (!st && bt->wide && !(bt->logp = malloc(sizeof(float) * (size_t)rows * (size_t)bt->V)))
        st = cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    const int64_t ad[3] = {rows, c->dec_heads, bt->S};
    if (!st && bt->o->attention) st = cg_tensor_create(CG_F32, 3, ad, &bt->out[x->a]);
    if (!st && bt->o->attention && !(bt->att = malloc(sizeof(float) * (size_t)rows * (size_t)bt->S)))
        st = cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    if (st) return st;
    /* borrowed, once per batch: the lengths and the cross keys and values */
    bt->in[x->len] = bt->elen;
    for (int l = 0; l < L; l++) bt->in[x->ck[l]] = bt->ckv[2 * l], bt->in[x->cv[l]] = bt->ckv[2 * l + 1];
    tf_batch_bind(bt);
    return CG_OK;
}

/* The search's settings: transformers' rules and generation_config.json. */
void tf_batch_search_init(tf_batch *bt) {
    const tf_shared *sh = bt->h->sh;
    s2s_search *s = &bt->s;
    s->k = bt->o->beam > 1 ? bt->o->beam : 1;
    s->beam = bt->o->beam > 1;
    s->eos = sh->cfg.eos_id;
    s->min_len = bt->o->min_len;
    s->alpha = bt->o->alpha;
    s->rules = S2S_RULES_HF;
    s->early = (s2s_early)sh->gen.early;
    s->forced_eos = sh->gen.forced_eos >= 0;
    s->forced_first = sh->gen.forced_bos >= 0;
    s->first_id = sh->gen.forced_bos;
    s->banned = sh->gen.banned;
    s->n_banned = sh->gen.n_banned;
    const int need = (s->beam ? 2 * s->k : s->min_len > 1 ? 2 : 1) + s->n_banned;
    bt->wide = need > TF_TOP_K;
}

/* The sentences, one row each holding the decoder start; the pool. */
static cg_status start(tf_batch *bt, const int *ids) {
    s2s_search *s = &bt->s;
    const size_t att_cap = bt->o->attention ? (size_t)(bt->o->max_len + 1) * (size_t)bt->S : 0;
    cg_status st = s2s_search_alloc(s, bt->nb, bt->max_rows, bt->o->max_len, att_cap, &bt->ss, &bt->rows);
    if (st) return st;
    for (int b = 0; b < bt->nb; b++) {
        s2s_sent *sb = &bt->ss[b];
        sb->src = ids[b];
        sb->len = bt->given[b]; /* the maps' columns: the EOS appended here is left out */
        sb->max_len = bt->o->max_len;
        if (s2s_hyp_new(&s->pool, &bt->rows[bt->R].h)) return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
        bt->rows[bt->R++].sent = b;
    }
    return CG_OK;
}

static int bucket(int r, int max) {
    int b = 1;
    while (b < r) b *= 2;
    return b < max ? b : max;
}

/* Rows of every log-probability, as transformers' log_softmax in f32. */
static void log_softmax_rows(const float *x, int rows, int V, float *out) {
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * V;
        float *o = out + (size_t)r * V, m = xr[0];
        for (int v = 1; v < V; v++) m = xr[v] > m ? xr[v] : m;
        double sum = 0;
        for (int v = 0; v < V; v++) sum += exp((double)xr[v] - m);
        const float lse = (float)log(sum);
        for (int v = 0; v < V; v++) o[v] = (xr[v] - m) - lse;
    }
}

/* Each row's attention map from the last layer's heads [R, H, S]: their
 * mean, or head `head` (1-based). */
static void attention_rows(const float *p, int R, int H, int S, int head, float *out) {
    for (int r = 0; r < R; r++)
        for (int j = 0; j < S; j++) {
            const float *pj = p + (size_t)r * H * S + j;
            if (head) {
                out[(size_t)r * S + j] = pj[(size_t)(head - 1) * S];
                continue;
            }
            double sum = 0;
            for (int h = 0; h < H; h++) sum += pj[(size_t)h * S];
            out[(size_t)r * S + j] = (float)(sum / H);
        }
}

/* A stream's rows: each one's position row (its own step count) and
 * rstart, the leading positions of its cache that are not its own: a
 * joining row's (parent < 0) are all the caches had, a row going on has
 * its parent's. */
static cg_status stream_rows(tf_batch *bt, int Rb) {
    const tf_shared *sh = bt->h->sh;
    const tf_step_io *x = &sh->io;
    const int D = sh->cfg.d_model;
    const int32_t *sent = cg_tensor_data_const(bt->in[x->sent]);
    int32_t *rs = cg_tensor_data(bt->in[x->rstart]);
    float *pos = cg_tensor_data(bt->in[x->ypos]);
    bt->in[x->ypos]->dims[0] = bt->in[x->rstart]->dims[0] = Rb;
    for (int r = 0; r < Rb; r++) {
        const int rr = r < bt->R ? r : bt->R - 1, p = bt->P ? bt->s.parent[rr] : -1;
        rs[r] = bt->rs[r] = p < 0 ? bt->P : bt->rs_prev[p];
        /* the rows made at the stream's start (a sinusoidal row is D sines or
         * cosines in double); one past them (none: max_len bounds them) here */
        const int at = bt->t - bt->ss[sent[r]].t0;
        if (at < bt->n_pos) {
            memcpy(pos + (size_t)r * D, bt->pos + (size_t)at * D, sizeof(float) * (size_t)D);
            continue;
        }
        cg_status st = tf_position_rows(&sh->cfg, sh->weights, 1, at, 1, pos + (size_t)r * D);
        if (st) return st;
    }
    return CG_OK;
}

/* Before a stream's step: when every row's first TF_TRIM_MIN or more
 * positions, and half the caches, are not its own, this step reads its
 * caches back (bt->trim) to give them shorter at the next. */
#define TF_TRIM_MIN 16
static cg_status trim_begin(tf_batch *bt, int Rb) {
    const tf_config *c = &bt->h->sh->cfg;
    const tf_step_io *x = &bt->h->sh->io;
    int m = bt->P;
    for (int r = 0; r < bt->R; r++) m = bt->rs[r] < m ? bt->rs[r] : m;
    bt->trim = m >= TF_TRIM_MIN && 2 * m >= bt->P + 1 ? m : 0;
    const int64_t dims[4] = {Rb, bt->P + 1, c->dec_heads, c->d_model / c->dec_heads};
    cg_status st = CG_OK;
    for (int l = 0; bt->trim && !st && l < c->dec_layers; l++) {
        st = cg_tensor_create(CG_F32, 4, dims, &bt->out[x->nk[l]]);
        if (!st) st = cg_tensor_create(CG_F32, 4, dims, &bt->out[x->nv[l]]);
    }
    return st;
}

/* A trim's caches, once a step has taken them: the plan carries its own
 * from there, so their memory goes (empty tensors stand in). */
static cg_status drop_given(tf_batch *bt) {
    const tf_config *c = &bt->h->sh->cfg;
    const tf_step_io *x = &bt->h->sh->io;
    const int64_t empty[4] = {bt->max_rows, 0, c->dec_heads, c->d_model / c->dec_heads};
    cg_status st = CG_OK;
    for (int q = 0; !st && q < 2 * c->dec_layers; q++) {
        cg_tensor **t = &bt->in[q % 2 ? x->pv[q / 2] : x->pk[q / 2]];
        if (cg_tensor_dim(*t, 1) == 0) continue;
        cg_tensor_free(*t);
        *t = NULL;
        st = cg_tensor_create(CG_F32, 4, empty, t);
    }
    return st;
}

/* After it: the caches read back without their first bt->trim positions
 * become the next step's pk / pv, which it gives; the rows' rstart move
 * down by as much. Else the carried caches grew by one. */
static cg_status trim_end(tf_batch *bt, int Rb) {
    const tf_config *c = &bt->h->sh->cfg;
    const tf_step_io *x = &bt->h->sh->io;
    const int m = bt->trim, P2 = bt->P + 1 - m;
    cg_status st = bt->give && bt->P ? drop_given(bt) : CG_OK;
    for (int r = 0; r < Rb; r++) bt->rs_prev[r] = bt->rs[r] - m;
    for (int q = 0; m && !st && q < 2 * c->dec_layers; q++) {
        const int l = q / 2, in = q % 2 ? x->pv[l] : x->pk[l], out = q % 2 ? x->nv[l] : x->nk[l];
        const int64_t dims[4] = {Rb, P2, c->dec_heads, c->d_model / c->dec_heads};
        cg_tensor *t = NULL;
        st = cg_tensor_create(CG_F32, 4, dims, &t);
        const size_t row = (size_t)(dims[2] * dims[3]), from = (size_t)(bt->P + 1) * row, to = (size_t)P2 * row;
        const float *src = st ? NULL : cg_tensor_data_const(bt->out[out]);
        for (int r = 0; !st && r < Rb; r++)
            memcpy((float *)cg_tensor_data(t) + r * to, src + r * from + (size_t)m * row, sizeof(float) * to);
        cg_tensor_free(bt->out[out]);
        bt->out[out] = NULL;
        if (st) break;
        cg_tensor_free(bt->in[in]);
        bt->in[in] = t;
    }
    if (st) return st;
    bt->give = m > 0;
    bt->trims += m > 0;
    bt->P = P2;
    bt->trim = 0;
    return CG_OK;
}

/* The step's inputs for Rb rows (the live ones padded): the previous
 * tokens, sentences, parents, positions. */
static cg_status step_inputs(tf_batch *bt, int Rb, int give) {
    const tf_shared *sh = bt->h->sh;
    const tf_step_io *x = &sh->io;
    int32_t *y = cg_tensor_data(bt->in[x->y]), *sent = cg_tensor_data(bt->in[x->sent]),
            *par = cg_tensor_data(bt->in[x->parent]);
    const int fresh = give && bt->P == 0; /* the caches start empty */
    for (int r = 0; r < Rb; r++) {
        const int rr = r < bt->R ? r : bt->R - 1;
        const s2s_hyp *hy = &bt->rows[rr].h;
        y[r] = hy->n ? hy->toks[hy->n - 1] : sh->cfg.start_id;
        sent[r] = bt->rows[rr].sent;
        /* a stream's joining row (parent < 0) takes any row's caches: masked */
        par[r] = fresh ? rr : bt->s.parent[rr] < 0 ? 0 : bt->s.parent[rr];
    }
    bt->in[x->y]->dims[0] = bt->in[x->sent]->dims[0] = bt->in[x->parent]->dims[0] = Rb;
    for (int l = 0; fresh && l < sh->cfg.dec_layers; l++) /* (a stream's may hold a trim's) */
        for (int i = 0; i < 2; i++) {
            cg_tensor *c = bt->in[i ? x->pv[l] : x->pk[l]];
            c->dims[0] = Rb;
            c->dims[1] = 0;
        }
    if (bt->stream) {
        cg_status st = stream_rows(bt, Rb);
        return st ? st : trim_begin(bt, Rb);
    }
    return tf_position_rows(&sh->cfg, sh->weights, 1, bt->t, 1, cg_tensor_data(bt->in[x->ypos]));
}

/* One step: decoder_step over the live rows (padded), the search's choice. */
cg_status tf_batch_step(tf_batch *bt) {
    const tf_shared *sh = bt->h->sh;
    const tf_step_io *x = &sh->io;
    const int Rb = bucket(bt->R, bt->max_rows), give = bt->stream ? bt->give : bt->t == 0;
    cg_status st = step_inputs(bt, Rb, give);
    if (st) return st;
    for (int q = 0; q < x->n_out; q++)
        if (bt->out[q]) bt->out[q]->dims[0] = Rb;
    cg_plan_binding b = {.struct_size = sizeof b,
                         .n_inputs = give ? bt->n_first : bt->n_c,
                         .input_index = give ? bt->idx : bt->idx_c,
                         .inputs = give ? bt->in : bt->in_c,
                         .n_outputs = bt->o->attention ? x->n_out : x->n_out - 1, /* a is the last */
                         .outputs = bt->out};
    st = cg_plan_run_indexed(bt->step, &b);
    if (!st && bt->stream) st = trim_end(bt, Rb);
    if (st) return st;
    s2s_scores so = {.V = bt->V, .S = bt->S};
    if (bt->wide) {
        log_softmax_rows(cg_tensor_data_const(bt->out[x->logits]), bt->R, bt->V, bt->logp);
        so.logp = bt->logp;
    } else {
        so.TK = TF_TOP_K;
        so.top_v = cg_tensor_data_const(bt->out[x->top_v]);
        so.top_i = cg_tensor_data_const(bt->out[x->top_i]);
    }
    if (bt->att) {
        attention_rows(cg_tensor_data_const(bt->out[x->a]), bt->R, sh->cfg.dec_heads, bt->S, bt->o->attention_head,
                       bt->att);
        so.att = bt->att;
    }
    st = s2s_select(&bt->s, bt->ss, bt->rows, bt->R, bt->t, &so);
    if (st) return st;
    for (int q = 0; q < bt->s.NR; q++) bt->rows[q] = bt->s.next[q];
    bt->R = bt->s.NR;
    bt->s.NR = 0;
    bt->t++;
    s2s_drop(&bt->s, bt->ss, bt->rows, &bt->R, bt->o);
    return s2s_finish(&bt->s, bt->ss, bt->nb, bt->rows, bt->R, bt->o, bt->results);
}

void tf_batch_free(tf_batch *bt) {
    const tf_shared *sh = bt->h->sh;
    const tf_step_io *x = &sh->io;
    s2s_search_free(&bt->s, bt->ss, bt->nb, bt->rows, bt->R);
    /* ours; the lengths and the cross keys and values are freed below */
    if (bt->in) {
        cg_tensor_free(bt->in[x->y]);
        cg_tensor_free(bt->in[x->ypos]);
        cg_tensor_free(bt->in[x->sent]);
        cg_tensor_free(bt->in[x->parent]);
        if (bt->stream) cg_tensor_free(bt->in[x->rstart]);
        for (int l = 0; l < sh->cfg.dec_layers; l++) {
            cg_tensor_free(bt->in[x->pk[l]]);
            cg_tensor_free(bt->in[x->pv[l]]);
        }
    }
    for (int q = 0; bt->out && q < x->n_out; q++) cg_tensor_free(bt->out[q]);
    free(bt->in);
    free(bt->out);
    free(bt->idx);
    free(bt->idx_c);
    free(bt->in_c);
    free(bt->logp);
    free(bt->att);
    free(bt->given);
    free(bt->rs);
    free(bt->rs_prev);
    free(bt->pos);
    for (int i = 0; bt->ckv && i < 2 * sh->cfg.dec_layers; i++) cg_tensor_free(bt->ckv[i]);
    free(bt->ckv);
    cg_tensor_free(bt->enc);
    cg_tensor_free(bt->elen);
    for (int b = 0; bt->src && b < bt->nb; b++) free(bt->src[b]);
    free(bt->src);
    free(bt->len);
}

cg_status tf_decode_batch(tf_handle *h, const cg_s2s_options *o, int nb, const int *ids, const int32_t *const *src,
                          const int *src_len, cg_s2s_result *results) {
    tf_batch bt;
    memset(&bt, 0, sizeof bt);
    bt.h = h;
    bt.o = o;
    bt.nb = nb;
    bt.results = results;
    bt.V = h->sh->cfg.dec_vocab;
    tf_batch_search_init(&bt);
    bt.max_rows = nb * bt.s.k;
    cg_status st = tf_batch_sources(&bt, ids, src, src_len);
    if (!st) st = tf_batch_encode(&bt);
    if (!st) st = tf_batch_open_step(&bt);
    if (!st) st = start(&bt, ids);
    while (!st && bt.R > 0) st = tf_batch_step(&bt);
    tf_batch_free(&bt);
    /* The last step's caches and arena, dead once the batch is done: the
     * next batch's encoder would otherwise peak on top of them. With the
     * encoder's and cross_kv's arenas (above) this is 35 MB of an int8 batch
     * of 32 (180 -> 146 MB) for 17,000 more page faults a batch, about 3% of
     * its time; the instances stay (host memory), so nothing is lowered
     * again and a batch of one is no slower. */
    if (bt.step) cg_plan_release(bt.step, CG_RELEASE_ALL);
    return st;
}

cg_status tf_resolve_options(const tf_handle *h, cg_s2s_options *o, int n, const int32_t *const *src,
                             const int *src_len) {
    const tf_config *c = &h->sh->cfg;
    const tf_generation *g = &h->sh->gen;
    if (o->attention_head < 0 || o->attention_head > c->dec_heads)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "translate: attention_head %d: the model's decoder has %d heads",
                        o->attention_head, c->dec_heads);
    if (o->beam == 0) o->beam = g->num_beams;
    if (!(o->flags & CG_S2S_ALPHA_SET) && o->alpha == 0) o->alpha = g->length_penalty;
    if (o->max_len == 0) o->max_len = g->max_new_tokens ? g->max_new_tokens : g->max_length > 1 ? g->max_length - 1 : 1;
    if (o->min_len == 0) o->min_len = g->min_length;
    if (o->max_len > c->max_pos)
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "translate: max_len %d is more tokens than the model has positions for (%d, "
                        "max_position_embeddings in %s/config.json)",
                        o->max_len, c->max_pos, h->sh->dir);
    if (o->min_len > o->max_len)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "translate: min_len %d is larger than max_len %d", o->min_len,
                        o->max_len);
    for (int i = 0; i < n; i++) {
        const int ends = src_len[i] > 0 && src[i][src_len[i] - 1] == c->eos_id;
        if (src_len[i] + !ends > c->max_pos)
            return cg_error(CG_ERR_INVALID_ARGUMENT,
                            "translate: source %d has %d tokens with its EOS, more than the model's %d positions", i,
                            src_len[i] + !ends, c->max_pos);
        for (int j = 0; j < src_len[i]; j++)
            if (src[i][j] < 0 || src[i][j] >= c->vocab)
                return cg_error(CG_ERR_INVALID_ARGUMENT,
                                "translate: source %d: token id %d at position %d is outside the vocabulary (%d "
                                "tokens)",
                                i, src[i][j], j, c->vocab);
    }
    return CG_OK;
}
