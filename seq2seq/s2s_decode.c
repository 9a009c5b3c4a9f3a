/* Greedy and beam decoding (the spec's "Decoding"), batched: the batch
 * driver. Sources are sorted by length and decoded in batches; every
 * decoder row is one live hypothesis, rows of finished sentences leave the
 * batch, and the row count is rounded up to a power of two (padding rows
 * repeat a real row and are ignored) so plans see few distinct shapes. Each
 * row depends only on its own inputs, so a sentence's result does not
 * depend on its batch. The choices are the search's (s2s_search.c), the
 * decoder's tensors the I/O binding's (s2s_io.c). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "s2s_batch.h"
#include "tensor.h"

/* The tokens a sentence of `len` tokens may generate: max_len, else the
 * spec's default raised to min_len. */
int s2s_max_len_of(const cg_s2s_options *o, int len) {
    if (o->max_len > 0) return o->max_len;
    return 2 * len + 10 > o->min_len ? 2 * len + 10 : o->min_len;
}

/* Runs the encoder over the batch's sources padded to the longest, and
 * takes its outputs by the positions the interface resolved: keys,
 * keys_proj and the initial states s0_<l>. (Once per batch, by name: the
 * plan makes the outputs, whose shapes a model.cg decides.) */
cg_status s2s_encode(s2s_batch *bt, const int *ids, const int32_t *const *src, const int *src_len) {
    const s2s_config *c = &bt->m->shared->cfg;
    const s2s_enc_iface *e = &bt->m->shared->iface.enc;
    const int nb = bt->nb, S = bt->S;
    bt->eout = calloc((size_t)e->n_out + 1, sizeof *bt->eout);
    bt->s0 = calloc((size_t)c->decoder_layers + 1, sizeof *bt->s0);
    if (!bt->eout || !bt->s0) return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    cg_tensor *esrc = NULL;
    int64_t d2[2] = {nb, S}, d1 = nb;
    cg_status st = cg_tensor_create(CG_I32, 2, d2, &esrc);
    if (!st) st = cg_tensor_create(CG_I32, 1, &d1, &bt->elen);
    if (!st) {
        int32_t *sd = cg_tensor_data(esrc), *ld = cg_tensor_data(bt->elen);
        for (int b = 0; b < nb; b++) {
            int n = src_len[ids[b]];
            ld[b] = n;
            for (int s = 0; s < S; s++) sd[b * S + s] = s < n ? src[ids[b]][s] : c->pad_id;
        }
        const char *names[2] = {"src", "src_len"};
        cg_tensor *ins[2] = {esrc, bt->elen};
        st = cg_plan_run(bt->m->enc, 2, names, ins, e->n_out, bt->eout);
    }
    cg_tensor_free(esrc);
    if (st) return st;
    bt->keys_t = bt->eout[e->keys];
    if (e->kproj >= 0) bt->kproj_t = bt->eout[e->kproj];
    for (int l = 0; l < c->decoder_layers; l++)
        if (e->s0[l] >= 0) bt->s0[l] = cg_tensor_data_const(bt->eout[e->s0[l]]);
    return CG_OK;
}

/* The decoder plan for this search and its tensors for the most rows. A
 * decoder carries its state (cg_plan_carry): after the first step only
 * `parent` says which row each row continues. */
cg_status s2s_open_decoder(s2s_batch *bt) {
    const s2s_dec_iface *f = NULL;
    /* a beam of k reads 2k candidates per row; greedy its best, or its two
     * best when EOS may be masked */
    const int need = bt->s.beam ? 2 * bt->s.k : bt->s.min_len > 1 ? 2 : 1;
    cg_status st = cg_s2s_decoder_plan(bt->m, need, &bt->dec, &f);
    if (st) return st;
    bt->m->last_dec = bt->dec;
    st = s2s_io_init(bt, f);
    if (st) return st;
    bt->io_ok = 1;
    return CG_OK;
}

/* Everything the steps work in, allocated once per batch. */
static cg_status alloc_rows(s2s_batch *bt, const int *ids, const int *src_len) {
    const int nb = bt->nb;
    /* the first step's rows, one per sentence (the plan carries the state
     * from there) */
    size_t state_floats = (size_t)nb * s2s_state_row(bt) + 1;
    bt->state = calloc(state_floats, sizeof *bt->state);
    if (!bt->state) return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    int tok_cap = 0;
    for (int b = 0; b < nb; b++) {
        int ml = s2s_max_len_of(bt->o, src_len[ids[b]]);
        if (ml > tok_cap) tok_cap = ml;
    }
    const size_t att_cap = bt->o->attention ? (size_t)(tok_cap + 1) * (size_t)bt->S : 0;
    return s2s_search_alloc(&bt->s, nb, bt->max_rows, tok_cap, att_cap, &bt->ss, &bt->rows);
}

/* One row per sentence, holding BOS. Initial state: s0 from the bridge (or
 * zeros), LSTM cells and Luong's h~_0 zero. */
static cg_status start_rows(s2s_batch *bt, const int *ids, const int *src_len) {
    const int H = bt->m->shared->cfg.hidden, L = bt->m->shared->cfg.decoder_layers;
    for (int b = 0; b < bt->nb; b++) {
        s2s_sent *sb = &bt->ss[b];
        sb->src = ids[b];
        sb->len = src_len[ids[b]];
        sb->max_len = s2s_max_len_of(bt->o, sb->len);
        if (s2s_hyp_new(&bt->s.pool, &bt->rows[bt->R].h)) return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
        bt->rows[bt->R].sent = b;
        float *rs = bt->state + (size_t)bt->R * s2s_state_row(bt);
        bt->R++;
        for (int l = 0; l < L; l++)
            if (bt->s0[l])
                memcpy(rs + (size_t)l * (size_t)H, bt->s0[l] + (size_t)b * (size_t)H, sizeof(float) * (size_t)H);
    }
    return CG_OK;
}

cg_status s2s_step(s2s_batch *bt) {
    cg_status st = s2s_io_step(bt);
    if (st) return st;
    s2s_scores so;
    s2s_io_scores(bt, &so);
    st = s2s_select(&bt->s, bt->ss, bt->rows, bt->R, bt->t, &so);
    if (st) return st;
    for (int q = 0; q < bt->s.NR; q++) bt->rows[q] = bt->s.next[q];
    bt->R = bt->s.NR;
    bt->s.NR = 0; /* the rows own the hypotheses now */
    bt->t++;
    s2s_drop(&bt->s, bt->ss, bt->rows, &bt->R, bt->o);
    return s2s_finish(&bt->s, bt->ss, bt->nb, bt->rows, bt->R, bt->o, bt->results);
}

/* Frees what a batch holds, at whatever point it stopped. */
static void batch_free(s2s_batch *bt) {
    s2s_search_free(&bt->s, bt->ss, bt->nb, bt->rows, bt->R);
    free(bt->state);
    if (bt->io_ok) s2s_io_free(&bt->x);
    s2s_encode_free(bt);
}

void s2s_encode_free(s2s_batch *bt) {
    for (int i = 0; bt->eout && i < bt->m->shared->iface.enc.n_out; i++) cg_tensor_free(bt->eout[i]);
    free(bt->eout);
    free(bt->s0);
    cg_tensor_free(bt->elen);
    bt->eout = NULL;
    bt->s0 = NULL;
    bt->elen = bt->keys_t = bt->kproj_t = NULL;
}

/* Decodes one batch of sentences (sorted by length). */
static cg_status decode_batch(cg_s2s *m, const cg_s2s_options *o, int nb, const int *ids, const int32_t *const *src,
                              const int *src_len, cg_s2s_result *results) {
    s2s_batch bt;
    memset(&bt, 0, sizeof bt);
    bt.m = m;
    bt.o = o;
    bt.nb = nb;
    bt.results = results;
    bt.s.k = o->beam > 1 ? o->beam : 1;
    bt.s.beam = o->beam > 1;
    bt.s.min_len = o->min_len;
    bt.s.eos = m->shared->cfg.eos_id;
    bt.s.alpha = o->alpha;
    bt.max_rows = nb * bt.s.k;
    bt.S = 1;
    for (int i = 0; i < nb; i++)
        if (src_len[ids[i]] > bt.S) bt.S = src_len[ids[i]];
    cg_status st = s2s_encode(&bt, ids, src, src_len);
    if (!st) st = s2s_open_decoder(&bt);
    if (!st) st = alloc_rows(&bt, ids, src_len);
    if (!st) st = start_rows(&bt, ids, src_len);
    while (!st && bt.R > 0) st = s2s_step(&bt);
    batch_free(&bt);
    return st;
}

void cg_s2s_result_clear(cg_s2s_result *r) {
    if (!r) return;
    for (int i = 0; i < r->n_hyps; i++) {
        free(r->hyps[i].tokens);
        free(r->hyps[i].attention);
    }
    free(r->hyps);
    memset(r, 0, sizeof *r);
}

cg_status cg_s2s_result_copy(cg_s2s_result *dst, const cg_s2s_result *src) {
    if (!dst || !src) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_result_copy: NULL argument");
    *dst = *src;
    dst->hyps = NULL;
    dst->n_hyps = 0;
    cg_s2s_hyp *h = calloc((size_t)src->n_hyps + 1, sizeof *h);
    int ok = h != NULL;
    dst->hyps = h;
    for (int i = 0; ok && i < src->n_hyps; i++) {
        const cg_s2s_hyp *x = &src->hyps[i];
        const size_t nf = x->attention ? (size_t)x->n_steps * (size_t)src->src_len : 0;
        h[i] = *x;
        h[i].attention = NULL;
        h[i].tokens = malloc(sizeof(int32_t) * ((size_t)x->n_tokens + 1));
        if (h[i].tokens) memcpy(h[i].tokens, x->tokens, sizeof(int32_t) * (size_t)x->n_tokens);
        if (x->attention && (h[i].attention = malloc(sizeof(float) * (nf + 1))))
            memcpy(h[i].attention, x->attention, sizeof(float) * nf);
        ok = h[i].tokens && (!x->attention || h[i].attention);
        dst->n_hyps = i + 1; /* what cg_s2s_result_clear frees on failure */
    }
    if (ok) return CG_OK;
    cg_s2s_result_clear(dst);
    return cg_error(CG_ERR_NO_MEMORY, "out of memory copying a translation result");
}

/* Longest first, then input order; `ctx` is the lengths. */
static int by_length_desc(const void *a, const void *b, void *ctx) {
    const int *len = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (len[x] != len[y]) return len[y] - len[x];
    return x - y;
}

/* The caller's options checked and completed into *o (the model's
 * defaults), with the n sources they will decode. */
cg_status s2s_check_options(cg_s2s *m, const cg_s2s_options *opt, int n, const int32_t *const *src, const int *src_len,
                            cg_s2s_options *o) {
    if (opt && opt->struct_size < offsetof(cg_s2s_options, attention) + sizeof opt->attention)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_options.struct_size is %zu; set it to sizeof(cg_s2s_options)",
                        opt->struct_size);
    memset(o, 0, sizeof *o);
    /* an older caller's options end before `flags` */
    if (opt) memcpy(o, opt, opt->struct_size < sizeof *o ? opt->struct_size : sizeof *o);
    if (o->beam < 0 || o->nbest < 0 || o->max_len < 0 || o->min_len < 0 || o->batch < 0)
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "translate: beam, nbest, max_len, min_len and batch must not be negative");
    if (o->max_len > 0 && o->min_len > o->max_len)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "translate: min_len %d is larger than max_len %d", o->min_len,
                        o->max_len);
    if (!isfinite(o->alpha) || o->alpha < 0)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "translate: alpha must be a finite number >= 0, got %g", o->alpha);
    if (!m->tf && (o->attention_head < 0 || o->attention_head > 1))
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "translate: attention_head %d: the RNN family's attention has one head", o->attention_head);
    /* the sources first: a Transformer's defaults and checks read them */
    for (int i = 0; i < n; i++) {
        if (src_len[i] < 0 || (src_len[i] && !src[i]))
            return cg_error(CG_ERR_INVALID_ARGUMENT, "translate: source %d has a bad length", i);
        for (int j = 0; !m->tf && j < src_len[i]; j++)
            if (src[i][j] < 0 || src[i][j] >= m->shared->cfg.v_src)
                return cg_error(CG_ERR_INVALID_ARGUMENT,
                                "translate: source %d: token id %d at position %d is outside the source vocabulary "
                                "(%d tokens)",
                                i, src[i][j], j, m->shared->cfg.v_src);
    }
    if (m->tf) {
        cg_status rs = tf_resolve_options(m->tf, o, n, src, src_len);
        if (rs) return rs;
    }
    if (o->beam > CG_S2S_MAX_BEAM)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "translate: beam %d is wider than the limit of %d", o->beam,
                        CG_S2S_MAX_BEAM);
    if (o->beam <= 1 && o->nbest > 1)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "translate: nbest %d needs a beam of at least %d", o->nbest, o->nbest);
    if (o->beam > 1 && o->nbest > o->beam)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "translate: nbest %d is larger than the beam %d", o->nbest, o->beam);
    return CG_OK;
}

cg_status cg_s2s_translate(cg_s2s *m, const cg_s2s_options *opt, int n, const int32_t *const *src, const int *src_len,
                           cg_s2s_result *results, cg_s2s_progress_fn progress, void *user) {
    if (!m || n < 0 || (n && (!src || !src_len || !results)))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_translate: NULL argument");
    for (int i = 0; i < n; i++) memset(&results[i], 0, sizeof results[i]);
    cg_s2s_options o;
    cg_status cs = s2s_check_options(m, opt, n, src, src_len, &o);
    if (cs) return cs;
    if (o.batch == 0) o.batch = 32;
    /* The order, then the sort's room. */
    int *order = malloc(sizeof(int) * (2 * (size_t)n + 1));
    if (!order) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < n; i++) order[i] = i;
    cg_s2s_sort(order, (size_t)n, sizeof(int), by_length_desc, (void *)src_len, order + n);
    cg_status st = CG_OK;
    for (int i = 0; !st && i < n; i += o.batch) {
        int nb = n - i < o.batch ? n - i : o.batch;
        st = m->tf ? tf_decode_batch(m->tf, &o, nb, order + i, src, src_len, results)
                   : decode_batch(m, &o, nb, order + i, src, src_len, results);
        if (!st && progress) progress(i + nb, n, user);
    }
    free(order);
    if (st)
        for (int i = 0; i < n; i++) cg_s2s_result_clear(&results[i]);
    return st;
}
