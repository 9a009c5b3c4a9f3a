/* A continuous decode of the Transformer family (cg_s2s_stream over
 * tf_family.h): one running tf_batch whose sentences are slots, on the
 * decoder_step_stream graphs. Sources that join are encoded on their own
 * and take the lowest free slots; their cross-attention keys and values
 * and lengths go into those rows of the per-slot tensors (rebuilt only
 * when too small or too narrow). A joining row has no self-attention
 * cache yet: it takes any row's (parent < 0 in the search, row 0 of the
 * caches in the step), with all the positions the caches had masked as
 * not its own (rstart), and its own position row. Each row then attends
 * to exactly its own keys, so a sentence's result is cg_s2s_translate's
 * up to the order of the sums over the masked positions. The caches grow
 * by one position a step for every row; when every row's first half (and
 * TF_TRIM_MIN or more) positions are another's, one step reads the caches
 * back and the next gives them without those (tf_decode.c, trim_end). */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "s2s.h"
#include "s2s_search.h"
#include "tensor.h"
#include "tf_batch.h"
#include "tf_build.h"

struct tf_stream {
    tf_batch bt; /* bt.nb: the slots used so far */
    int cap;
    int *live; /* [cap]: a join's flags of the slots live rows hold */
};

void tf_stream_free(tf_stream *ts) {
    if (!ts) return;
    ts->bt.nb = ts->cap; /* every slot's finished list */
    tf_batch_free(&ts->bt);
    free(ts->live);
    free(ts);
}

cg_status tf_stream_open(tf_handle *h, const cg_s2s_options *run, int cap, cg_s2s_result *results, tf_stream **out) {
    *out = NULL;
    tf_stream *ts = calloc(1, sizeof *ts);
    if (!ts) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    tf_batch *bt = &ts->bt;
    bt->h = h;
    bt->o = run;
    bt->results = results;
    bt->V = h->sh->cfg.dec_vocab;
    bt->stream = bt->keep_arenas = 1;
    bt->S = 8;
    tf_batch_search_init(bt);
    ts->cap = cap;
    bt->max_rows = cap * bt->s.k;
    bt->ckv = calloc((size_t)(2 * h->sh->cfg.dec_layers), sizeof *bt->ckv);
    bt->rs = calloc((size_t)bt->max_rows, sizeof *bt->rs);
    bt->rs_prev = calloc((size_t)bt->max_rows, sizeof *bt->rs_prev);
    ts->live = calloc((size_t)cap, sizeof *ts->live);
    /* every position a row can be at: a sentence ends by max_len tokens */
    bt->n_pos = run->max_len > 0 ? run->max_len : 1;
    bt->pos = malloc(sizeof(float) * (size_t)bt->n_pos * (size_t)h->sh->cfg.d_model);
    cg_status st =
        bt->ckv && bt->rs && bt->rs_prev && ts->live && bt->pos ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if (!st) st = tf_position_rows(&h->sh->cfg, h->sh->weights, 1, 0, bt->n_pos, bt->pos);
    /* hypotheses grow past this as they need (tokens and attention rows) */
    if (!st) st = s2s_search_alloc(&bt->s, cap, bt->max_rows, 64, run->attention ? 64 * 64 : 0, &bt->ss, &bt->rows);
    for (int b = 0; !st && b < cap; b++) bt->ss[b].done = 1; /* free */
    if (st) {
        tf_stream_free(ts);
        return st;
    }
    *out = ts;
    return CG_OK;
}

int tf_stream_live(const tf_stream *ts) { return s2s_live_sentences(ts->bt.rows, ts->bt.R); }

/* The attention maps' tensors for the stream's width (it changed). */
static cg_status maps_width(tf_batch *bt) {
    const tf_step_io *x = &bt->h->sh->io;
    const int64_t ad[3] = {bt->max_rows, bt->h->sh->cfg.dec_heads, bt->S};
    cg_tensor_free(bt->out[x->a]);
    bt->out[x->a] = NULL;
    free(bt->att);
    if (!(bt->att = malloc(sizeof(float) * (size_t)bt->max_rows * (size_t)bt->S)))
        return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    return cg_tensor_create(CG_F32, 3, ad, &bt->out[x->a]);
}

/* The newcomers' keys, values and lengths (eb's) into their slots, and
 * the step's tensors bound to them. The per-slot tensors are rebuilt
 * (live slots' rows kept) when a slot is past their rows or a newcomer is
 * longer than their width, and when nothing is live (the width may shrink
 * then); else written in place, so a join copies only its own sentences. */
static cg_status place(tf_stream *ts, const tf_batch *eb, const int *slot, int top) {
    tf_batch *bt = &ts->bt;
    const int L = bt->h->sh->cfg.dec_layers, S0 = bt->S;
    int N2, S2;
    const int rebuild = s2s_slot_shape(bt->elen, bt->S, eb->S, top, bt->R > 0, ts->cap, &N2, &S2);
    cg_status st = CG_OK;
    for (int q = 0; !st && q < 2 * L; q++)
        st = s2s_put_rows(&bt->ckv[q], eb->ckv[q], ts->live, rebuild, N2, S2, slot, eb->nb);
    if (!st) st = s2s_put_rows(&bt->elen, eb->elen, ts->live, rebuild, N2, S2, slot, eb->nb);
    if (st) return st;
    bt->S = S2;
    if (!bt->in) return tf_batch_open_step(bt);
    const tf_step_io *x = &bt->h->sh->io;
    bt->in[x->len] = bt->elen;
    for (int l = 0; l < L; l++) bt->in[x->ck[l]] = bt->ckv[2 * l], bt->in[x->cv[l]] = bt->ckv[2 * l + 1];
    tf_batch_bind(bt);
    return bt->o->attention && S2 != S0 ? maps_width(bt) : CG_OK;
}

cg_status tf_stream_join(tf_stream *ts, int n, const int32_t *const *src, const int *len, int *slot) {
    tf_batch *bt = &ts->bt;
    int *ids = malloc(sizeof *ids * (size_t)n);
    if (!ids) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    const int top = s2s_take_slots(bt->rows, bt->R, ts->cap, n, ts->live, slot);
    tf_batch eb = {.h = bt->h, .o = bt->o, .nb = n, .keep_arenas = 1};
    eb.s.k = bt->s.k; /* the decoder's width is padded by rows */
    for (int j = 0; j < n; j++) ids[j] = j;
    cg_status st = tf_batch_sources(&eb, ids, src, len);
    if (!st) st = tf_batch_encode(&eb);
    if (!st) st = place(ts, &eb, slot, top);
    if (!st && bt->R == 0) bt->P = 0, bt->give = 1; /* nothing live: the caches start again */
    for (int j = 0; !st && j < n; j++) {
        s2s_sent *sb = &bt->ss[slot[j]];
        sb->src = slot[j];
        sb->len = eb.given[j];
        sb->max_len = bt->o->max_len;
        sb->n_fins = sb->done = sb->live = 0;
        sb->t0 = bt->t;
        s2s_row *w = &bt->rows[bt->R];
        if (s2s_hyp_new(&bt->s.pool, &w->h)) st = cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
        w->sent = slot[j];
        bt->s.parent[bt->R++] = -1; /* no cache of its own yet */
    }
    if (!st && top > bt->nb) bt->nb = top;
    tf_batch_free(&eb);
    free(ids);
    return st;
}

cg_status tf_stream_run(tf_stream *ts) { return ts->bt.R ? tf_batch_step(&ts->bt) : CG_OK; }

long tf_stream_trims(const tf_stream *ts) { return ts ? ts->bt.trims : 0; }
