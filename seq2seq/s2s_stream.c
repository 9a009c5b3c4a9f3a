/* A continuous decode of the RNN family (cg_s2s_stream): one running
 * s2s_batch whose sentences are slots. At a step where sources wait, the
 * slots still decoding are compacted, the waiting sources are encoded on
 * their own, the per-sentence encoder outputs (keys, keys_proj, src_len)
 * are rebuilt for all of them padded to the longest source, and the step
 * gives the decoder its state: the last step's state outputs (read back
 * every step) for the rows going on, the encoder's initial state for the
 * joining rows; `parent` picks each row's. Between joins the plan carries
 * the state as in a batch. Each row depends only on its own inputs and
 * sentence (the keys' padding is masked by src_len), so a sentence's
 * result is the one cg_s2s_translate gives. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "s2s_batch.h"
#include "tensor.h"

struct cg_s2s_stream {
    s2s_batch bt;     /* slots 0 .. bt.nb - 1; bt.o is &run */
    cg_s2s_options o; /* the caller's (done, keep and user are theirs) */
    cg_s2s_options run;
    int cap;
    int *tag;           /* [cap] */
    cg_s2s_result *res; /* [cap] */
    int *map;           /* [cap]: compaction's room */
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

/* Sentences a live row continues (rows are grouped by sentence). */
static int live_sentences(const s2s_batch *bt) {
    int n = 0;
    for (int r = 0; r < bt->R; r++) n += !r || bt->rows[r].sent != bt->rows[r - 1].sent;
    return n;
}

int cg_s2s_stream_pending(const cg_s2s_stream *s) { return s ? live_sentences(&s->bt) + s->n_wait : 0; }

int cg_s2s_stream_room(const cg_s2s_stream *s) { return s ? s->cap - cg_s2s_stream_pending(s) : 0; }

void cg_s2s_stream_free(cg_s2s_stream *s) {
    if (!s) return;
    s2s_batch *bt = &s->bt;
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

cg_status cg_s2s_stream_open(cg_s2s *m, const cg_s2s_options *opt, int max_sentences, cg_s2s_stream **out) {
    if (!m || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_stream_open: NULL argument");
    *out = NULL;
    if (m->tf)
        return cg_error(CG_ERR_UNSUPPORTED, "a Transformer model decodes in batches (cg_s2s_translate), not as a "
                                            "stream: its self-attention caches have one length for all rows");
    if (max_sentences < 1 || max_sentences > 1000000)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_stream_open: max_sentences %d is not in [1, 1000000]",
                        max_sentences);
    const s2s_dec_iface *f = &m->shared->iface.dec;
    if (f->sent < 0 && (f->keys >= 0 || f->kproj >= 0 || f->len >= 0))
        return cg_error(CG_ERR_UNSUPPORTED, "%s: the decoder reads the keys per row, not per sentence", m->shared->dir);
    cg_s2s_stream *s = calloc(1, sizeof *s);
    if (!s) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    cg_status st = s2s_check_options(m, opt, 0, NULL, NULL, &s->o);
    s->o.struct_size = sizeof s->o; /* checked again by cg_s2s_stream_add */
    s->run = s->o;
    s->run.done = stream_done;
    s->run.keep = stream_keep;
    s->run.user = s;
    s->cap = max_sentences;
    s2s_batch *bt = &s->bt;
    bt->m = m;
    bt->o = &s->run;
    bt->stream = 1;
    bt->results = s->res = calloc((size_t)s->cap, sizeof *s->res);
    bt->s.k = s->o.beam > 1 ? s->o.beam : 1;
    bt->s.beam = s->o.beam > 1;
    bt->s.min_len = s->o.min_len;
    bt->s.eos = m->shared->cfg.eos_id;
    bt->s.alpha = s->o.alpha;
    bt->max_rows = s->cap * bt->s.k;
    bt->S = 1;
    s->tag = calloc((size_t)s->cap, sizeof *s->tag);
    s->map = calloc((size_t)s->cap, sizeof *s->map);
    s->wsrc = calloc((size_t)s->cap, sizeof *s->wsrc);
    s->wlen = calloc((size_t)s->cap, sizeof *s->wlen);
    s->wtag = calloc((size_t)s->cap, sizeof *s->wtag);
    if (!st && (!s->res || !s->tag || !s->map || !s->wsrc || !s->wlen || !s->wtag))
        st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    /* hypotheses grow past this as they need (tokens and attention rows) */
    if (!st) st = s2s_search_alloc(&bt->s, s->cap, bt->max_rows, 64, s->o.attention ? 64 * 64 : 0, &bt->ss, &bt->rows);
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

/* Moves the slots live rows continue to the front, in order (rows are
 * grouped by slot in increasing order, so each move goes down), with
 * their tags; map[b] is slot b's new index (-1: ended), and map[j] for
 * the new slot j its old one is put in inv. Returns the live count. */
static int compact(cg_s2s_stream *s, int *inv) {
    s2s_batch *bt = &s->bt;
    int live = 0;
    for (int b = 0; b < bt->nb; b++) s->map[b] = -1;
    for (int r = 0; r < bt->R; r++) {
        const int b = bt->rows[r].sent;
        if (s->map[b] >= 0) continue;
        const int j = live++;
        s->map[b] = j;
        inv[j] = b;
        if (j != b) {
            s2s_sent tmp = bt->ss[j];
            bt->ss[j] = bt->ss[b];
            bt->ss[b] = tmp;
            s->tag[j] = s->tag[b];
        }
        bt->ss[j].src = j;
    }
    for (int r = 0; r < bt->R; r++) bt->rows[r].sent = s->map[bt->rows[r].sent];
    return live;
}

/* Rows [0, live) of old (by inv) and [0, n_add) of add, each [S_x, D]
 * (S_x 1 for a 1-D tensor), into a new zeroed [live + n_add, S, D]. */
static cg_status merge_rows(const cg_tensor *old, const int *inv, int live, const cg_tensor *add, int n_add, int S,
                            cg_tensor **out) {
    const int nd = cg_tensor_ndim(add);
    const int64_t D = nd == 3 ? cg_tensor_dim(add, 2) : 1, Sn = nd == 3 ? S : 1;
    int64_t dims[3] = {live + n_add, S, D};
    cg_status st = cg_tensor_create(cg_tensor_dtype(add), nd, dims, out);
    if (st) return st;
    const size_t es = cg_dtype_size(cg_tensor_dtype(add));
    char *dst = cg_tensor_data(*out);
    for (int j = 0; j < live + n_add; j++) {
        const cg_tensor *from = j < live ? old : add;
        const int row = j < live ? inv[j] : j - live;
        const int64_t Sf = nd == 3 ? cg_tensor_dim(from, 1) : 1;
        const size_t bytes = (size_t)(Sf * D) * es;
        memcpy(dst + (size_t)j * (size_t)(Sn * D) * es, (const char *)cg_tensor_data_const(from) + (size_t)row * bytes,
               bytes);
    }
    return CG_OK;
}

/* The joining sources' encoder outputs merged behind the live slots'. */
static cg_status merge_encoder(cg_s2s_stream *s, s2s_batch *eb, const int *inv, int live) {
    s2s_batch *bt = &s->bt;
    const int S = live && bt->S > eb->S ? bt->S : eb->S;
    cg_tensor *keys = NULL, *kproj = NULL, *len = NULL;
    cg_status st = eb->keys_t ? merge_rows(bt->keys_t, inv, live, eb->keys_t, eb->nb, S, &keys) : CG_OK;
    if (!st && eb->kproj_t) st = merge_rows(bt->kproj_t, inv, live, eb->kproj_t, eb->nb, S, &kproj);
    if (!st) st = merge_rows(bt->elen, inv, live, eb->elen, eb->nb, S, &len);
    if (st) {
        cg_tensor_free(keys);
        cg_tensor_free(kproj);
        cg_tensor_free(len);
        return st;
    }
    cg_tensor_free(bt->keys_t);
    cg_tensor_free(bt->kproj_t);
    cg_tensor_free(bt->elen);
    bt->keys_t = keys;
    bt->kproj_t = kproj;
    bt->elen = len;
    bt->S = S;
    return CG_OK;
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

/* The waiting sources join: the live slots compacted, the newcomers
 * encoded, the per-sentence tensors rebuilt, the state of the step given,
 * and one row per new sentence appended (parent: its initial state). */
static cg_status join(cg_s2s_stream *s) {
    s2s_batch *bt = &s->bt;
    int *inv = malloc(sizeof *inv * (size_t)s->cap), *ids = malloc(sizeof *ids * (size_t)s->n_wait);
    if (!inv || !ids) {
        free(inv);
        free(ids);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    /* the last step's rows: the state outputs it left (bucketed) */
    const int prev = bt->io_ok && bt->R ? (int)cg_tensor_dim(bt->x.out[bt->x.f->h_new[0]], 0) : 0;
    const int live = compact(s, inv);
    s2s_batch eb = {.m = bt->m, .o = bt->o, .nb = s->n_wait, .S = 1};
    for (int j = 0; j < s->n_wait; j++) {
        ids[j] = j;
        if (s->wlen[j] > eb.S) eb.S = s->wlen[j];
    }
    cg_status st = s2s_encode(&eb, ids, (const int32_t *const *)s->wsrc, s->wlen);
    if (!st) st = merge_encoder(s, &eb, inv, live);
    if (!st) st = bt->io_ok ? s2s_io_rebind(bt) : s2s_open_decoder(bt);
    if (!st) join_state(s, &eb, prev);
    for (int j = 0; !st && j < s->n_wait; j++) {
        const int b = live + j;
        s2s_sent *sb = &bt->ss[b];
        sb->src = b;
        sb->len = s->wlen[j];
        sb->max_len = s2s_max_len_of(&s->o, s->wlen[j]);
        sb->n_fins = sb->done = sb->live = 0;
        sb->t0 = bt->t;
        s->tag[b] = s->wtag[j];
        s2s_row *w = &bt->rows[bt->R];
        if (s2s_hyp_new(&bt->s.pool, &w->h)) st = cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
        w->sent = b;
        bt->s.parent[bt->R++] = prev + j;
    }
    if (!st) bt->nb = live + s->n_wait;
    s2s_encode_free(&eb);
    for (int j = 0; j < s->n_wait; j++) free(s->wsrc[j]), s->wsrc[j] = NULL;
    s->n_wait = 0;
    free(inv);
    free(ids);
    return st;
}

cg_status cg_s2s_stream_step(cg_s2s_stream *s) {
    if (!s) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_stream_step: NULL stream");
    s2s_batch *bt = &s->bt;
    cg_status st = s->n_wait ? join(s) : CG_OK;
    if (!st && bt->R) st = s2s_step(bt);
    bt->state_given = 0;
    return st;
}
