/* A continuous decode (cg_s2s_stream): the waiting sources, tags and
 * results of either family; the Transformer family decodes in
 * transformer/tf_stream.c. The RNN family's: one running
 * s2s_batch whose sentences are slots. At a step where sources wait, they
 * are encoded on their own and take the lowest free slots; their encoder
 * outputs (keys, keys_proj, src_len) go into those rows of the per-slot
 * tensors (rebuilt only when they are too small or too narrow), and the
 * step gives the decoder its state: the last step's state outputs (read
 * back every step) for the rows going on, the encoder's initial state for
 * the joining rows; `parent` picks each row's. Between joins the plan
 * carries the state as in a batch. Each row depends only on its own
 * inputs and sentence (the keys' padding is masked by src_len), so a
 * sentence's result is the one cg_s2s_translate gives. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "s2s_batch.h"
#include "tensor.h"

struct cg_s2s_stream {
    s2s_batch bt;     /* slots 0 .. bt.nb - 1; bt.o is &run */
    tf_stream *tf;    /* a Transformer's (bt unused) */
    cg_s2s_options o; /* the caller's (done, keep and user are theirs) */
    cg_s2s_options run;
    int cap;
    int *tag;           /* [cap] */
    cg_s2s_result *res; /* [cap] */
    int *map;           /* [cap]: a join's flags of the slots in use */
    int n_wait;
    int32_t **wsrc; /* [cap] */
    int *wlen, *wtag;
};

static void stream_done(int slot, const cg_s2s_result *r, void *user) {
    cg_s2s_stream *s = user;
    if (s->o.done) s->o.done(s->tag[slot], r, s->o.user);
    cg_s2s_result_clear(&s->res[slot]);
}

static int stream_keep(int slot, void *user) {
    cg_s2s_stream *s = user;
    return !s->o.keep || s->o.keep(s->tag[slot], s->o.user);
}

int cg_s2s_stream_pending(const cg_s2s_stream *s) {
    return s ? (s->tf ? tf_stream_live(s->tf) : s2s_live_sentences(s->bt.rows, s->bt.R)) + s->n_wait : 0;
}

int cg_s2s_stream_room(const cg_s2s_stream *s) { return s ? s->cap - cg_s2s_stream_pending(s) : 0; }

void cg_s2s_stream_free(cg_s2s_stream *s) {
    if (!s) return;
    s2s_batch *bt = &s->bt;
    tf_stream_free(s->tf);
    s2s_search_free(&bt->s, bt->ss, s->cap, bt->rows, bt->R);
    if (bt->io_ok) s2s_io_free(&bt->x);
    cg_tensor_free(bt->keys_t);
    cg_tensor_free(bt->kproj_t);
    cg_tensor_free(bt->elen);
    for (int i = 0; i < s->cap; i++) cg_s2s_result_clear(&s->res[i]);
    for (int i = 0; i < s->n_wait; i++) free(s->wsrc[i]);
    free(s->tag);
    free(s->res);
    free(s->map);
    free(s->wsrc);
    free(s->wlen);
    free(s->wtag);
    free(s);
}

/* The RNN family's running batch, empty. */
static cg_status open_rnn(cg_s2s_stream *s) {
    s2s_batch *bt = &s->bt;
    const cg_s2s *m = bt->m;
    bt->o = &s->run;
    bt->stream = 1;
    bt->results = s->res;
    bt->s.k = s->o.beam > 1 ? s->o.beam : 1;
    bt->s.beam = s->o.beam > 1;
    bt->s.min_len = s->o.min_len;
    bt->s.eos = m->shared->cfg.eos_id;
    bt->s.alpha = s->o.alpha;
    bt->max_rows = s->cap * bt->s.k;
    bt->S = 1;
    /* hypotheses grow past this as they need (tokens and attention rows) */
    cg_status st = s2s_search_alloc(&bt->s, s->cap, bt->max_rows, 64, s->o.attention ? 64 * 64 : 0, &bt->ss, &bt->rows);
    for (int b = 0; !st && b < s->cap; b++) bt->ss[b].done = 1; /* free */
    return st;
}

cg_status cg_s2s_stream_open(cg_s2s *m, const cg_s2s_options *opt, int max_sentences, cg_s2s_stream **out) {
    if (!m || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_stream_open: NULL argument");
    *out = NULL;
    if (max_sentences < 1 || max_sentences > 1000000)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_stream_open: max_sentences %d is not in [1, 1000000]",
                        max_sentences);
    const s2s_dec_iface *f = m->tf ? NULL : &m->shared->iface.dec;
    if (f && f->sent < 0 && (f->keys >= 0 || f->kproj >= 0 || f->len >= 0))
        return cg_error(CG_ERR_UNSUPPORTED, "%s: the decoder reads the keys per row, not per sentence", m->shared->dir);
    cg_s2s_stream *s = calloc(1, sizeof *s);
    if (!s) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    cg_status st = s2s_check_options(m, opt, 0, NULL, NULL, &s->o);
    const int64_t rows = (int64_t)max_sentences * (s->o.beam > 1 ? s->o.beam : 1);
    if (!st && rows > (1 << 24))
        st = cg_error(CG_ERR_INVALID_ARGUMENT,
                      "cg_s2s_stream_open: %d sentences of a beam of %d are %lld decoder rows, more than %d",
                      max_sentences, s->o.beam, (long long)rows, 1 << 24);
    s->o.struct_size = sizeof s->o; /* checked again by cg_s2s_stream_add */
    s->run = s->o;
    s->run.done = stream_done;
    s->run.keep = stream_keep;
    s->run.user = s;
    s->cap = max_sentences;
    s->bt.m = m;
    s->res = calloc((size_t)s->cap, sizeof *s->res);
    s->tag = calloc((size_t)s->cap, sizeof *s->tag);
    s->map = calloc((size_t)s->cap, sizeof *s->map);
    s->wsrc = calloc((size_t)s->cap, sizeof *s->wsrc);
    s->wlen = calloc((size_t)s->cap, sizeof *s->wlen);
    s->wtag = calloc((size_t)s->cap, sizeof *s->wtag);
    if (!st && (!s->res || !s->tag || !s->map || !s->wsrc || !s->wlen || !s->wtag))
        st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if (!st) st = m->tf ? tf_stream_open(m->tf, &s->run, s->cap, s->res, &s->tf) : open_rnn(s);
    if (st) {
        cg_s2s_stream_free(s);
        return st;
    }
    *out = s;
    return CG_OK;
}

cg_status cg_s2s_stream_add(cg_s2s_stream *s, int n, const int32_t *const *src, const int *src_len, const int *tags) {
    if (!s || n < 0 || (n && (!src || !src_len || !tags)))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_stream_add: NULL argument");
    if (n > cg_s2s_stream_room(s))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_stream_add: %d sources, room for %d", n,
                        cg_s2s_stream_room(s));
    cg_s2s_options o;
    cg_status st = s2s_check_options(s->bt.m, &s->o, n, src, src_len, &o);
    for (int i = 0; !st && i < n; i++) {
        const int w = s->n_wait + i;
        s->wsrc[w] = malloc(sizeof(int32_t) * (size_t)(src_len[i] ? src_len[i] : 1));
        if (!s->wsrc[w]) {
            st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
            break;
        }
        if (src_len[i]) memcpy(s->wsrc[w], src[i], sizeof(int32_t) * (size_t)src_len[i]);
        s->wlen[w] = src_len[i];
        s->wtag[w] = tags[i];
    }
    if (st) {
        for (int i = s->n_wait; i < s->n_wait + n; i++) free(s->wsrc[i]), s->wsrc[i] = NULL;
        return st;
    }
    s->n_wait += n;
    return CG_OK;
}

int s2s_slot_shape(const cg_tensor *lens, int S, int S_new, int top, int any_live, int cap, int *N2, int *S2) {
    const int N = lens ? (int)cg_tensor_dim(lens, 0) : 0;
    const int rebuild = !lens || !any_live || top > N || S_new > S;
    *N2 = N, *S2 = S;
    if (rebuild) {
        *N2 = any_live && 2 * N > top ? 2 * N : top;
        if (*N2 > cap) *N2 = cap;
        *S2 = any_live && S > S_new ? S : S_new;
        *S2 = (*S2 + 7) / 8 * 8; /* fewer widths, fewer plan bindings (the padding is masked) */
    }
    return rebuild;
}

cg_status s2s_put_rows(cg_tensor **t, const cg_tensor *add, const int *live, int rebuild, int N2, int S2,
                       const int *slot, int n) {
    const int nd = cg_tensor_ndim(add);
    const size_t es = cg_dtype_size(cg_tensor_dtype(add));
    int64_t rest = 1, dims[4] = {N2, S2, 0, 0};
    for (int d = 2; d < nd; d++) rest *= dims[d] = cg_tensor_dim(add, d);
    if (rebuild) {
        cg_tensor *nt = NULL;
        cg_status st = cg_tensor_create(cg_tensor_dtype(add), nd, dims, &nt);
        if (st) return st;
        const int64_t N = *t ? cg_tensor_dim(*t, 0) : 0, S = *t && nd > 1 ? cg_tensor_dim(*t, 1) : 1;
        const size_t old_row = (size_t)(S * rest) * es, new_row = (size_t)((nd > 1 ? S2 : 1) * rest) * es;
        for (int64_t b = 0; b < N && b < N2; b++)
            if (live[b])
                memcpy((char *)cg_tensor_data(nt) + (size_t)b * new_row,
                       (const char *)cg_tensor_data_const(*t) + (size_t)b * old_row, old_row);
        cg_tensor_free(*t);
        *t = nt;
    }
    const int64_t S = nd > 1 ? cg_tensor_dim(*t, 1) : 1, Sa = nd > 1 ? cg_tensor_dim(add, 1) : 1;
    const size_t row = (size_t)(S * rest) * es, arow = (size_t)(Sa * rest) * es;
    char *dst = cg_tensor_data(*t); /* marks it changed for the plan that keeps it */
    for (int j = 0; j < n; j++) {
        memset(dst + (size_t)slot[j] * row, 0, row);
        memcpy(dst + (size_t)slot[j] * row, (const char *)cg_tensor_data_const(add) + (size_t)j * arow, arow);
    }
    return CG_OK;
}

/* The newcomers' encoder outputs (keys, keys_proj, src_len) into their
 * slots. The per-slot tensors are rebuilt (live slots' rows kept) when a
 * slot is past their rows or a newcomer is longer than their width, and
 * when nothing is live (the width may shrink then); else written in
 * place, so a join copies only its own sentences. */
static cg_status place_encoder(cg_s2s_stream *s, const s2s_batch *eb, const int *slot, int top, int any_live) {
    s2s_batch *bt = &s->bt;
    int N2, S2;
    const int rebuild = s2s_slot_shape(bt->elen, bt->S, eb->S, top, any_live, s->cap, &N2, &S2);
    cg_status st = eb->keys_t ? s2s_put_rows(&bt->keys_t, eb->keys_t, s->map, rebuild, N2, S2, slot, eb->nb) : CG_OK;
    if (!st && eb->kproj_t) st = s2s_put_rows(&bt->kproj_t, eb->kproj_t, s->map, rebuild, N2, S2, slot, eb->nb);
    if (!st) st = s2s_put_rows(&bt->elen, eb->elen, s->map, rebuild, N2, S2, slot, eb->nb);
    if (!st) bt->S = S2;
    return st;
}

/* The state the join step gives: the last step's state outputs (prev
 * rows), then each joining sentence's initial state (s0 from the bridge,
 * or zeros; cells and h~ zeros), as the first step of a batch starts. */
static void join_state(cg_s2s_stream *s, const s2s_batch *eb, int prev) {
    s2s_batch *bt = &s->bt;
    const s2s_dec_iface *f = bt->x.f;
    const int H = bt->m->shared->cfg.hidden, L = bt->m->shared->cfg.decoder_layers;
    for (int k = 0; k < f->n_in; k++) {
        if (!f->state[k]) continue;
        int q = f->htilde == k ? f->htilde_new : -1, layer = -1;
        for (int l = 0; l < L; l++) {
            if (f->h[l] == k) q = f->h_new[l], layer = l;
            if (f->c[l] == k) q = f->c_new[l];
        }
        float *in = cg_tensor_data(bt->x.in[k]);
        if (prev) memcpy(in, cg_tensor_data_const(bt->x.out[q]), sizeof(float) * (size_t)prev * (size_t)H);
        for (int j = 0; j < eb->nb; j++) {
            float *row = in + (size_t)(prev + j) * (size_t)H;
            if (layer >= 0 && eb->s0[layer])
                memcpy(row, eb->s0[layer] + (size_t)j * (size_t)H, sizeof(float) * (size_t)H);
            else memset(row, 0, sizeof(float) * (size_t)H);
        }
    }
    bt->state_given = prev + eb->nb;
}

/* The waiting sources join: encoded, put in free slots, the state of
 * the step given, and one row per new sentence appended (parent: its
 * initial state). */
static cg_status join(cg_s2s_stream *s) {
    s2s_batch *bt = &s->bt;
    int *slot = malloc(sizeof *slot * (size_t)s->n_wait), *ids = malloc(sizeof *ids * (size_t)s->n_wait);
    if (!slot || !ids) {
        free(slot);
        free(ids);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    /* the last step's rows: the state outputs it left (bucketed) */
    const int prev = bt->io_ok && bt->R ? (int)cg_tensor_dim(bt->x.out[bt->x.f->h_new[0]], 0) : 0;
    /* the slots live rows hold (s->map as flags); the newcomers' */
    const int top = s2s_take_slots(bt->rows, bt->R, s->cap, s->n_wait, s->map, slot);
    s2s_batch eb = {.m = bt->m, .o = bt->o, .nb = s->n_wait, .S = 1};
    for (int j = 0; j < s->n_wait; j++) {
        ids[j] = j;
        if (s->wlen[j] > eb.S) eb.S = s->wlen[j];
    }
    cg_status st = s2s_encode(&eb, ids, (const int32_t *const *)s->wsrc, s->wlen);
    if (!st) st = place_encoder(s, &eb, slot, top, bt->R > 0);
    if (!st) st = bt->io_ok ? s2s_io_rebind(bt) : s2s_open_decoder(bt);
    if (!st) join_state(s, &eb, prev);
    for (int j = 0; !st && j < s->n_wait; j++) {
        s2s_sent *sb = &bt->ss[slot[j]];
        sb->src = slot[j];
        sb->len = s->wlen[j];
        sb->max_len = s2s_max_len_of(&s->o, s->wlen[j]);
        sb->n_fins = sb->done = sb->live = 0;
        sb->t0 = bt->t;
        s->tag[slot[j]] = s->wtag[j];
        s2s_row *w = &bt->rows[bt->R];
        if (s2s_hyp_new(&bt->s.pool, &w->h)) st = cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
        w->sent = slot[j];
        bt->s.parent[bt->R++] = prev + j;
    }
    if (!st && top > bt->nb) bt->nb = top;
    s2s_encode_free(&eb);
    for (int j = 0; j < s->n_wait; j++) free(s->wsrc[j]), s->wsrc[j] = NULL;
    s->n_wait = 0;
    free(slot);
    free(ids);
    return st;
}

/* A Transformer's step: the waiting sources join (tagged by slot before
 * the step, which may finish them), then one step. */
static cg_status step_tf(cg_s2s_stream *s) {
    cg_status st = CG_OK;
    if (s->n_wait) {
        st = tf_stream_join(s->tf, s->n_wait, (const int32_t *const *)s->wsrc, s->wlen, s->map);
        for (int j = 0; j < s->n_wait; j++) {
            if (!st) s->tag[s->map[j]] = s->wtag[j];
            free(s->wsrc[j]);
            s->wsrc[j] = NULL;
        }
        s->n_wait = 0;
    }
    return st ? st : tf_stream_run(s->tf);
}

cg_status cg_s2s_stream_step(cg_s2s_stream *s) {
    if (!s) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_stream_step: NULL stream");
    if (s->tf) return step_tf(s);
    s2s_batch *bt = &s->bt;
    cg_status st = s->n_wait ? join(s) : CG_OK;
    if (!st && bt->R) st = s2s_step(bt);
    bt->state_given = 0;
    return st;
}

long s2s_stream_trims(const cg_s2s_stream *s) { return s && s->tf ? tf_stream_trims(s->tf) : 0; }
