/* Greedy and beam decoding (the spec's "Decoding"), batched: sources are
 * sorted by length and decoded in batches; every decoder row is one live
 * hypothesis, rows of finished sentences leave the batch, and the row count
 * is rounded up to a power of two (padding rows repeat a real row and are
 * ignored) so plans see few distinct shapes. Each row depends only on its
 * own inputs, so a sentence's result does not depend on its batch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "s2s_internal.h"
#include "tensor.h"

typedef struct hyp {
    int32_t *toks;
    int n, cap;
    float *att;     /* rows of src_len weights, one per generated token (NULL: not kept) */
    int att_rows;   /* counted even when the weights are not kept */
    size_t att_cap; /* floats of room in att */
    double raw;     /* sum of logp */
    int ended;      /* finished with EOS */
} hyp;

/* A decoder row: a live hypothesis of a sentence of the batch. */
typedef struct row {
    int sent;       /* index in the batch */
    hyp h;
} row;

typedef struct fin {
    hyp h;
    double score;   /* normalised */
} fin;

typedef struct sent_state {
    int src;        /* index of the source */
    int len, max_len;
    int done;
    fin *fins;
    int n_fins;
} sent_state;

/* Decoder inputs and outputs by name, with buffers for the most rows. */
typedef struct io {
    int n_in, n_out;
    const char *in_names[80];
    cg_tensor *in[80], *out[80];
    /* positions */
    int y, keys, kproj, len, pos, htilde, h[32], c[32];
    int parent; /* the graph reorders its carried state rows itself (else -1) */
    int sent;   /* the graph takes keys, keys_proj and src_len per sentence, and
                   each row's sentence (else -1: one copy per row) */
    unsigned char borrowed[80]; /* in[k] is the encoder's tensor, not ours */
    int n_in_c; /* the inputs a carried step gives: all but the state */
    const char *in_names_c[80];
    cg_tensor *in_c[80];
    int logp, a, htilde_new, h_new[32], c_new[32];
    int top_v, top_i, top_k; /* top_logp / top_id [rows, top_k] instead of logp */
} io;

static void hyp_free(hyp *h) {
    free(h->toks);
    free(h->att);
    memset(h, 0, sizeof *h);
}

/* Hypothesis buffers, recycled: each has room for the batch's longest
 * decode (and its attention rows when they are kept), so once a batch has
 * its working set, a step allocates nothing. Buffers that leave as results
 * are ordinary malloc blocks the caller frees. */
typedef struct hpool {
    hyp *free_h;
    int n, cap;
    int tok_cap;    /* tokens of room in a new buffer */
    size_t att_cap; /* floats of room in a new buffer; 0: attention not kept */
} hpool;

static void pool_free(hpool *p) {
    for (int i = 0; i < p->n; i++) hyp_free(&p->free_h[i]);
    free(p->free_h);
    memset(p, 0, sizeof *p);
}

/* An empty hypothesis with the pool's room. */
static int hyp_new(hpool *p, hyp *h) {
    if (p->n) {
        *h = p->free_h[--p->n];
    } else {
        memset(h, 0, sizeof *h);
        h->cap = p->tok_cap > 0 ? p->tok_cap : 8;
        h->toks = malloc(sizeof(int32_t) * (size_t)h->cap);
        if (p->att_cap) {
            h->att_cap = p->att_cap;
            h->att = malloc(sizeof(float) * h->att_cap);
        }
        if (!h->toks || (p->att_cap && !h->att)) {
            hyp_free(h);
            return -1;
        }
    }
    h->n = h->att_rows = h->ended = 0;
    h->raw = 0;
    return 0;
}

/* Gives a hypothesis's buffers back to the pool (or frees them). */
static void hyp_release(hpool *p, hyp *h) {
    if (h->toks && p->n < p->cap) p->free_h[p->n++] = *h;
    else hyp_free(h);
    memset(h, 0, sizeof *h);
}

/* Room for `ntok` tokens and `natt` attention floats, growing geometrically. */
static int hyp_reserve(hyp *h, int ntok, size_t natt) {
    if (ntok > h->cap) {
        int cap = h->cap * 2 + 8;
        if (cap < ntok) cap = ntok;
        int32_t *nt = realloc(h->toks, sizeof *nt * (size_t)cap);
        if (!nt) return -1;
        h->toks = nt;
        h->cap = cap;
    }
    if (h->att && natt > h->att_cap) {
        size_t cap = h->att_cap * 2 + 64;
        if (cap < natt) cap = natt;
        float *na = realloc(h->att, sizeof *na * cap);
        if (!na) return -1;
        h->att = na;
        h->att_cap = cap;
    }
    return 0;
}

static int hyp_copy(hpool *p, hyp *dst, const hyp *src, int src_len) {
    size_t w = (size_t)(src_len > 0 ? src_len : 0);
    if (hyp_new(p, dst) || hyp_reserve(dst, src->n + 1, (size_t)(src->att_rows + 1) * w)) {
        hyp_free(dst);
        return -1;
    }
    dst->raw = src->raw;
    dst->ended = src->ended;
    memcpy(dst->toks, src->toks, sizeof(int32_t) * (size_t)src->n);
    dst->n = src->n;
    if (dst->att && src->att && src->att_rows && w)
        memcpy(dst->att, src->att, sizeof(float) * (size_t)src->att_rows * w);
    dst->att_rows = src->att_rows;
    return 0;
}

/* Appends a token (unless it is the final EOS) and an attention row. */
static int hyp_push(hyp *h, int32_t tok, int is_eos, const float *att, int src_len) {
    size_t w = (size_t)(src_len > 0 ? src_len : 0);
    if (hyp_reserve(h, h->n + 1, (size_t)(h->att_rows + 1) * w)) return -1;
    if (!is_eos) h->toks[h->n++] = tok;
    if (h->att && w) {
        float *dst = h->att + (size_t)h->att_rows * w;
        if (att) memcpy(dst, att, sizeof(float) * w);
        else memset(dst, 0, sizeof(float) * w);
    }
    h->att_rows++;
    return 0;
}

static cg_status tensor(cg_dtype dt, int nd, int64_t d0, int64_t d1, int64_t d2, cg_tensor **out) {
    int64_t dims[3] = {d0, d1, d2};
    return cg_tensor_create(dt, nd, dims, out);
}

static int find_in(cg_graph *g, const char *name) {
    for (int k = 0; k < cg_graph_input_count(g); k++)
        if (!strcmp(cg_graph_input_name(g, k), name)) return k;
    return -1;
}

static int find_out(cg_graph *g, const char *name) {
    for (int k = 0; k < cg_graph_output_count(g); k++)
        if (!strcmp(cg_graph_output_name(g, k), name)) return k;
    return -1;
}

static void io_free(io *x) {
    for (int i = 0; i < 80; i++) {
        if (!x->borrowed[i]) cg_tensor_free(x->in[i]);
        cg_tensor_free(x->out[i]);
    }
}

/* Buffers for up to `rows` decoder rows over S source positions, for the
 * decoder graph `graph`. A graph with input `sentence` reads the encoder's
 * keys, keys_proj and src_len (one row per sentence) as they are. */
static cg_status io_init(cg_s2s *m, const char *graph, io *x, int rows, int S, cg_tensor *enc_keys,
                         cg_tensor *enc_kproj, cg_tensor *enc_len) {
    memset(x, 0, sizeof *x);
    const s2s_config *c = &m->cfg;
    cg_graph *g = cg_model_graph(m->model, graph);
    int K = s2s_keys_dim(c), H = c->hidden;
    cg_status st = CG_OK;
    x->n_in = cg_graph_input_count(g);
    x->n_out = cg_graph_output_count(g);
    if (x->n_in > 80 || x->n_out > 80 || c->decoder_layers > 32)
        return cg_error(CG_ERR_UNSUPPORTED, "the decoder graph has too many inputs or outputs");
    for (int k = 0; k < x->n_in; k++) x->in_names[k] = cg_graph_input_name(g, k);
    x->y = find_in(g, "y_prev");
    x->keys = find_in(g, "keys");
    x->kproj = find_in(g, "keys_proj");
    x->len = find_in(g, "src_len");
    x->pos = find_in(g, "pos");
    x->htilde = find_in(g, "htilde");
    x->parent = find_in(g, "parent");
    x->sent = find_in(g, "sentence");
    x->logp = find_out(g, "logp");
    x->top_v = find_out(g, "top_logp");
    x->top_i = find_out(g, "top_id");
    x->top_k = x->logp < 0 ? m->top_k : 0;
    x->a = find_out(g, "a");
    x->htilde_new = find_out(g, "htilde_new");
    for (int l = 0; l < c->decoder_layers; l++) {
        char nm[32];
        snprintf(nm, sizeof nm, "h%d", l);
        x->h[l] = find_in(g, nm);
        snprintf(nm, sizeof nm, "c%d", l);
        x->c[l] = find_in(g, nm);
        snprintf(nm, sizeof nm, "h%d_new", l);
        x->h_new[l] = find_out(g, nm);
        snprintf(nm, sizeof nm, "c%d_new", l);
        x->c_new[l] = find_out(g, nm);
    }
    for (int k = 0; !st && k < x->n_in; k++) {
        if (x->sent >= 0 && (k == x->keys || k == x->kproj || k == x->len)) {
            x->in[k] = k == x->keys ? enc_keys : k == x->kproj ? enc_kproj : enc_len;
            x->borrowed[k] = 1;
            if (!x->in[k])
                st = cg_error(CG_ERR_VERIFY, "%s: graph '%s' takes '%s' per sentence, which the encoder does not output",
                              m->dir, graph, x->in_names[k]);
            continue;
        }
        if (k == x->y || k == x->len || k == x->parent || k == x->sent) st = tensor(CG_I32, 1, rows, 0, 0, &x->in[k]);
        else if (k == x->pos) st = tensor(CG_F32, 1, rows, 0, 0, &x->in[k]);
        else if (k == x->keys) st = tensor(CG_F32, 3, rows, S, K, &x->in[k]);
        else if (k == x->kproj) st = tensor(CG_F32, 3, rows, S, c->attention_dim, &x->in[k]);
        else st = tensor(CG_F32, 2, rows, H, 0, &x->in[k]); /* states */
    }
    for (int k = 0; !st && k < x->n_out; k++) {
        if (k == x->logp) st = tensor(CG_F32, 2, rows, c->v_tgt, 0, &x->out[k]);
        else if (k == x->top_v) st = tensor(CG_F32, 2, rows, x->top_k, 0, &x->out[k]);
        else if (k == x->top_i) st = tensor(CG_I32, 2, rows, x->top_k, 0, &x->out[k]);
        else if (k == x->a) st = tensor(CG_F32, 2, rows, S, 0, &x->out[k]);
        else st = tensor(CG_F32, 2, rows, H, 0, &x->out[k]);
    }
    for (int k = 0; !st && k < x->n_in; k++)
        if (!s2s_is_state(x->in_names[k])) {
            x->in_names_c[x->n_in_c] = x->in_names[k];
            x->in_c[x->n_in_c++] = x->in[k];
        }
    if (st) io_free(x);
    return st;
}

/* Sets every decoder row tensor's leading dim to `rows` (buffers hold
 * more); the encoder's, per sentence, keep theirs. */
static void io_rows(io *x, int rows) {
    for (int k = 0; k < x->n_in; k++)
        if (!x->borrowed[k]) x->in[k]->dims[0] = rows;
    for (int k = 0; k < x->n_out; k++) x->out[k]->dims[0] = rows;
}

static int bucket(int r, int max) {
    int b = 1;
    while (b < r) b *= 2;
    return b < max ? b : max;
}

static double lp(double alpha, int len) { return alpha == 0.0 ? 1.0 : pow((5.0 + len) / 6.0, alpha); }

static int fin_cmp(const void *a, const void *b) {
    const fin *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    return 0;
}

typedef struct cand {
    double score;
    int row, tok;
} cand;

static int cand_cmp(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    if (x->row != y->row) return x->row - y->row;
    return x->tok - y->tok;
}

/* Decodes one batch of sentences (sorted by length). */
static cg_status decode_batch(cg_s2s *m, const cg_s2s_options *o, int nb, const int *ids, const int32_t *const *src,
                              const int *src_len, cg_s2s_result *results) {
    const s2s_config *c = &m->cfg;
    int k = o->beam > 1 ? o->beam : 1, beam = o->beam > 1;
    int force = o->force_len > 0; /* EOS is an ordinary token; exactly force_len steps */
    int K = s2s_keys_dim(c), H = c->hidden, V = c->v_tgt, A = c->attention_dim, L = c->decoder_layers;
    int S = 1;
    for (int i = 0; i < nb; i++)
        if (src_len[ids[i]] > S) S = src_len[ids[i]];
    cg_status st = CG_OK;
    /* ---- encoder ---- */
    cg_tensor *esrc = NULL, *elen = NULL, *eout[40] = {0};
    cg_graph *eg = cg_model_graph(m->model, "encoder");
    int n_eout = cg_graph_output_count(eg);
    if (n_eout > 40) return cg_error(CG_ERR_UNSUPPORTED, "the encoder graph has too many outputs");
    st = tensor(CG_I32, 2, nb, S, 0, &esrc);
    if (!st) st = tensor(CG_I32, 1, nb, 0, 0, &elen);
    if (!st) {
        int32_t *sd = cg_tensor_data(esrc), *ld = cg_tensor_data(elen);
        for (int b = 0; b < nb; b++) {
            int n = src_len[ids[b]];
            ld[b] = n;
            for (int s = 0; s < S; s++) sd[b * S + s] = s < n ? src[ids[b]][s] : c->pad_id;
        }
        const char *names[2] = {"src", "src_len"};
        cg_tensor *ins[2] = {esrc, elen};
        st = cg_plan_run(m->enc, 2, names, ins, n_eout, eout);
    }
    cg_tensor_free(esrc);
    const float *keys = NULL, *kproj = NULL, *s0[32] = {0};
    cg_tensor *keys_t = NULL, *kproj_t = NULL;
    for (int i = 0; !st && i < n_eout; i++) {
        const char *nm = cg_graph_output_name(eg, i);
        if (!strcmp(nm, "keys")) keys = cg_tensor_data_const(keys_t = eout[i]);
        else if (!strcmp(nm, "keys_proj")) kproj = cg_tensor_data_const(kproj_t = eout[i]);
        else if (!strncmp(nm, "s0_", 3) && atoi(nm + 3) < 32) s0[atoi(nm + 3)] = cg_tensor_data_const(eout[i]);
    }
    /* ---- decoder rows ---- */
    int max_rows = nb * k;
    io x;
    int io_ok = 0;
    cg_plan *dec = NULL;
    const char *dec_graph = NULL;
    if (!st) st = cg_s2s_decoder_plan(m, beam ? 2 * k : 1, &dec, &dec_graph);
    if (!st) {
        m->last_dec = dec;
        st = io_init(m, dec_graph, &x, max_rows, S, keys_t, kproj_t, elen);
        io_ok = !st;
    }
    sent_state *ss = calloc((size_t)nb, sizeof *ss);
    row *rows = calloc((size_t)max_rows, sizeof *rows), *next = calloc((size_t)max_rows, sizeof *next);
    int *parent = calloc((size_t)max_rows, sizeof *parent);
    int *keys_of = malloc(sizeof(int) * (size_t)max_rows); /* the sentence whose keys a buffer row holds */
    cand *top = calloc((size_t)2 * (size_t)k + 1, sizeof *top);
    /* The rows' recurrent state, and the next step's (swapped each step). */
    size_t state_floats = (size_t)max_rows * (size_t)(2 * L + 1) * (size_t)H + 1;
    float *state = calloc(state_floats, sizeof *state), *state_next = calloc(state_floats, sizeof *state_next);
    /* Live rows and next rows, plus finished ones: at most 2k per sentence. */
    hpool pool = {.cap = 2 * max_rows + nb * (2 * k + 1) + 2};
    pool.free_h = calloc((size_t)pool.cap, sizeof *pool.free_h);
    for (int b = 0; b < nb; b++) {
        int ml = force ? o->force_len : o->max_len > 0 ? o->max_len : 2 * src_len[ids[b]] + 10;
        if (ml > pool.tok_cap) pool.tok_cap = ml;
    }
    pool.att_cap = o->attention ? (size_t)(pool.tok_cap + 1) * (size_t)S : 0;
    if (!st && (!ss || !rows || !next || !parent || !keys_of || !top || !state || !state_next || !pool.free_h))
        st = cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    for (int r = 0; keys_of && r < max_rows; r++) keys_of[r] = -1;
    int R = 0;
    for (int b = 0; !st && b < nb; b++) {
        ss[b].src = ids[b];
        ss[b].len = src_len[ids[b]];
        ss[b].max_len = force ? o->force_len : o->max_len > 0 ? o->max_len : 2 * ss[b].len + 10;
        ss[b].fins = calloc((size_t)2 * (size_t)k + 1, sizeof *ss[b].fins); /* < k by EOS, plus k at max_len */
        if (!ss[b].fins || hyp_new(&pool, &rows[R].h)) {
            st = cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
            break;
        }
        rows[R].sent = b;
        R++;
        /* Initial state: s0 from the bridge (or zeros), LSTM cells and
         * Luong's h~_0 zero. Layout per row: h[L], c[L], htilde. */
        float *rs = state + (size_t)(R - 1) * (size_t)(2 * L + 1) * (size_t)H;
        for (int l = 0; l < L; l++)
            if (s0[l]) memcpy(rs + (size_t)l * (size_t)H, s0[l] + (size_t)b * (size_t)H, sizeof(float) * (size_t)H);
    }
    /* A decoder with input `parent` carries its state (cg_plan_carry): after
     * the first step only `parent` says which row each row continues. The
     * outputs nobody reads stay on their device. */
    const int carry = io_ok && x.parent >= 0;
    cg_tensor *out_run[80] = {0};
    for (int q = 0; io_ok && q < x.n_out; q++) {
        int state_out = q == x.htilde_new;
        for (int l = 0; l < L; l++) state_out |= q == x.h_new[l] || q == x.c_new[l];
        out_run[q] = (carry && state_out) || (q == x.a && !o->attention) ? NULL : x.out[q];
    }
    int t = 0;
    while (!st && R > 0) {
        int Rb = bucket(R, max_rows);
        int keys_moved = 0, give_state = !carry || t == 0;
        io_rows(&x, Rb);
        /* Gather the rows' inputs; padding rows repeat the last real row. */
        for (int r = 0; r < Rb; r++) {
            int rr = r < R ? r : R - 1;
            const row *w = &rows[rr];
            const float *rs = state + (size_t)rr * (size_t)(2 * L + 1) * (size_t)H;
            int b = w->sent;
            ((int32_t *)x.in[x.y]->data)[r] = w->h.n ? w->h.toks[w->h.n - 1] : c->bos_id;
            /* Keys stay in their buffer row while the row keeps its sentence
             * (per sentence: they stay, and the row names its sentence). */
            if (x.sent >= 0) {
                ((int32_t *)x.in[x.sent]->data)[r] = b;
            } else if (keys_of[r] != b) {
                if (x.keys >= 0)
                    memcpy((float *)x.in[x.keys]->data + (size_t)r * S * K, keys + (size_t)b * S * K,
                           sizeof(float) * (size_t)S * (size_t)K);
                if (x.kproj >= 0)
                    memcpy((float *)x.in[x.kproj]->data + (size_t)r * S * A, kproj + (size_t)b * S * A,
                           sizeof(float) * (size_t)S * (size_t)A);
                keys_of[r] = b;
                keys_moved = 1;
            }
            if (x.len >= 0 && x.sent < 0) ((int32_t *)x.in[x.len]->data)[r] = ss[b].len;
            if (x.pos >= 0) ((float *)x.in[x.pos]->data)[r] = (float)t;
            if (carry) ((int32_t *)x.in[x.parent]->data)[r] = t == 0 ? rr : parent[rr];
            if (!give_state) continue;
            for (int l = 0; l < L; l++) {
                memcpy((float *)x.in[x.h[l]]->data + (size_t)r * H, rs + (size_t)l * H, sizeof(float) * (size_t)H);
                if (x.c[l] >= 0)
                    memcpy((float *)x.in[x.c[l]]->data + (size_t)r * H, rs + (size_t)(L + l) * H,
                           sizeof(float) * (size_t)H);
            }
            if (x.htilde >= 0)
                memcpy((float *)x.in[x.htilde]->data + (size_t)r * H, rs + (size_t)(2 * L) * H,
                       sizeof(float) * (size_t)H);
        }
        /* The plan keeps the keys on its devices until they change. */
        if (keys_moved) {
            if (x.keys >= 0) cg_tensor_touch(x.in[x.keys]);
            if (x.kproj >= 0) cg_tensor_touch(x.in[x.kproj]);
        }
        st = give_state ? cg_plan_run_into(dec, x.n_in, x.in_names, x.in, x.n_out, out_run)
                        : cg_plan_run_into(dec, x.n_in_c, x.in_names_c, x.in_c, x.n_out, out_run);
        if (st) break;
        /* Either every row's whole logp, or its best TK (log-probability, token)
         * pairs in the order of the spec's ties: a row's best 2k candidates
         * are among them, as the sentence's are among its rows'. */
        const int TK = x.top_k;
        const float *logp = TK ? NULL : cg_tensor_data_const(x.out[x.logp]);
        const float *top_v = TK ? cg_tensor_data_const(x.out[x.top_v]) : NULL;
        const int32_t *top_i = TK ? cg_tensor_data_const(x.out[x.top_i]) : NULL;
        const float *att = x.a >= 0 && o->attention ? cg_tensor_data_const(x.out[x.a]) : NULL;
        int NR = 0;
        /* Rows are grouped by sentence, in live order. */
        for (int r0 = 0; !st && r0 < R;) {
            int b = rows[r0].sent, r1 = r0;
            while (r1 < R && rows[r1].sent == b) r1++;
            sent_state *sb = &ss[b];
            int len_after = t + 1;
            if (!beam) {
                int best = 0;
                float best_lp;
                if (TK) {
                    best = top_i[(size_t)r0 * TK];
                    best_lp = top_v[(size_t)r0 * TK];
                } else {
                    const float *lr = logp + (size_t)r0 * V;
                    for (int v = 1; v < V; v++)
                        if (lr[v] > lr[best]) best = v; /* first maximum: the lowest id wins ties */
                    best_lp = lr[best];
                }
                hyp *h = &rows[r0].h;
                h->raw += (double)best_lp;
                int eos = !force && best == c->eos_id;
                if (hyp_push(h, best, eos, att ? att + (size_t)r0 * S : NULL, sb->len)) {
                    st = cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
                    break;
                }
                if (eos || len_after >= sb->max_len) {
                    h->ended = eos;
                    sb->fins[0].h = *h;
                    sb->fins[0].score = h->raw;
                    sb->n_fins = 1;
                    memset(h, 0, sizeof *h);
                    sb->done = 1;
                } else {
                    next[NR] = rows[r0];
                    memset(&rows[r0].h, 0, sizeof rows[r0].h);
                    parent[NR++] = r0;
                }
                r0 = r1;
                continue;
            }
            /* Beam: the best 2k candidates of (live hypothesis, token), by
             * score, then lower hypothesis, then lower token (a total order,
             * so one running top-2k over the sentence's rows is exact). */
            int want = 2 * k, nt = 0;
            for (int r = r0; r < r1; r++) {
                const float *lr = TK ? top_v + (size_t)r * TK : logp + (size_t)r * V;
                const int32_t *ir = TK ? top_i + (size_t)r * TK : NULL;
                const int nv = TK ? (want < TK ? want : TK) : V;
                for (int q = 0; q < nv; q++) {
                    cand cv = {rows[r].h.raw + (double)lr[q], r - r0, ir ? ir[q] : q};
                    if (nt < want || cand_cmp(&cv, &top[nt - 1]) < 0) {
                        int pos = nt < want ? nt++ : nt - 1;
                        while (pos > 0 && cand_cmp(&cv, &top[pos - 1]) < 0) {
                            top[pos] = top[pos - 1];
                            pos--;
                        }
                        top[pos] = cv;
                    }
                }
            }
            int walk = nt, n_live = 0, stop = 0;
            int base = NR;
            for (int j = 0; j < walk && !st; j++) {
                int r = r0 + top[j].row, tok = top[j].tok;
                int is_eos = !force && tok == c->eos_id;
                hyp nh;
                if (hyp_copy(&pool, &nh, &rows[r].h, sb->len) ||
                    hyp_push(&nh, tok, is_eos, att ? att + (size_t)r * S : NULL, sb->len)) {
                    hyp_free(&nh);
                    st = cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
                    break;
                }
                nh.raw = top[j].score;
                if (is_eos) {
                    nh.ended = 1;
                    sb->fins[sb->n_fins].h = nh;
                    sb->fins[sb->n_fins].score = nh.raw / lp(o->alpha, len_after);
                    if (++sb->n_fins == k) {
                        stop = 1;
                        break;
                    }
                } else {
                    next[NR].sent = b;
                    next[NR].h = nh;
                    parent[NR++] = r;
                    if (++n_live == k) break;
                }
            }
            if (st) break;
            if (stop || n_live == 0) {
                for (int q = base; q < NR; q++) hyp_release(&pool, &next[q].h);
                NR = base;
                sb->done = 1;
            } else if (len_after >= sb->max_len) {
                /* At max_len the live ones finish as they stand, in live order. */
                for (int q = base; q < NR; q++) {
                    fin *f = &sb->fins[sb->n_fins++];
                    f->h = next[q].h;
                    f->score = next[q].h.raw / lp(o->alpha, len_after);
                    memset(&next[q].h, 0, sizeof next[q].h);
                }
                NR = base;
                sb->done = 1;
            }
            for (int r = r0; r < r1; r++) hyp_release(&pool, &rows[r].h);
            r0 = r1;
        }
        if (st) break;
        /* New rows take their parent's new state (a carried state: the next
         * step's gather does that). */
        float *ns = state_next;
        for (int q = 0; !carry && q < NR; q++) {
            float *rs = ns + (size_t)q * (size_t)(2 * L + 1) * (size_t)H;
            int p = parent[q];
            for (int l = 0; l < L; l++) {
                memcpy(rs + (size_t)l * H, (const float *)x.out[x.h_new[l]]->data + (size_t)p * H, sizeof(float) * (size_t)H);
                if (x.c_new[l] >= 0)
                    memcpy(rs + (size_t)(L + l) * H, (const float *)x.out[x.c_new[l]]->data + (size_t)p * H,
                           sizeof(float) * (size_t)H);
            }
            if (x.htilde_new >= 0)
                memcpy(rs + (size_t)(2 * L) * H, (const float *)x.out[x.htilde_new]->data + (size_t)p * H,
                       sizeof(float) * (size_t)H);
        }
        state_next = state;
        state = ns;
        for (int q = 0; q < NR; q++) rows[q] = next[q];
        R = NR;
        t++;
    }
    /* Results: the finished hypotheses by normalised score, best first. */
    for (int b = 0; ss && b < nb; b++) {
        sent_state *sb = &ss[b];
        if (!st) {
            qsort(sb->fins, (size_t)sb->n_fins, sizeof *sb->fins, fin_cmp);
            int keep = beam ? (o->nbest > 0 ? o->nbest : 1) : 1;
            if (keep > sb->n_fins) keep = sb->n_fins;
            cg_s2s_result *res = &results[sb->src];
            res->src_len = sb->len;
            res->n_hyps = keep;
            res->hyps = calloc((size_t)keep + 1, sizeof *res->hyps);
            if (!res->hyps) st = cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
            for (int i = 0; !st && i < keep; i++) {
                hyp *h = &sb->fins[i].h;
                cg_s2s_hyp *o2 = &res->hyps[i];
                o2->tokens = h->toks;
                o2->n_tokens = h->n;
                o2->score = sb->fins[i].score;
                o2->n_steps = h->att_rows;
                o2->attention = o->attention && sb->len > 0 ? h->att : NULL;
                if (!o2->attention) free(h->att);
                memset(h, 0, sizeof *h);
            }
        }
        for (int i = 0; i < sb->n_fins; i++) hyp_free(&sb->fins[i].h);
        free(sb->fins);
    }
    for (int r = 0; rows && r < R; r++) hyp_free(&rows[r].h);
    pool_free(&pool);
    free(ss);
    free(rows);
    free(next);
    free(parent);
    free(keys_of);
    free(top);
    free(state);
    free(state_next);
    if (io_ok) io_free(&x);
    for (int i = 0; i < n_eout; i++) cg_tensor_free(eout[i]);
    cg_tensor_free(elen);
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

static const int *sort_len;

static int by_length_desc(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    if (sort_len[x] != sort_len[y]) return sort_len[y] - sort_len[x];
    return x - y;
}

cg_status cg_s2s_translate(cg_s2s *m, const cg_s2s_options *opt, int n, const int32_t *const *src,
                           const int *src_len, cg_s2s_result *results, cg_s2s_progress_fn progress, void *user) {
    if (!m || n < 0 || (n && (!src || !src_len || !results)))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_translate: NULL argument");
    cg_s2s_options o;
    memset(&o, 0, sizeof o);
    if (opt) o = *opt;
    if (o.beam < 0 || o.nbest < 0 || o.max_len < 0 || o.batch < 0 || o.force_len < 0 || !isfinite(o.alpha))
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "translate: beam, nbest, max_len, batch and force_len must not be negative");
    if (o.beam <= 1 && o.nbest > 1)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "translate: nbest %d needs a beam of at least %d", o.nbest, o.nbest);
    if (o.beam > 1 && o.nbest > o.beam)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "translate: nbest %d is larger than the beam %d", o.nbest, o.beam);
    if (o.batch == 0) o.batch = 32;
    for (int i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        if (src_len[i] < 0 || (src_len[i] && !src[i]))
            return cg_error(CG_ERR_INVALID_ARGUMENT, "translate: source %d has a bad length", i);
        for (int j = 0; j < src_len[i]; j++)
            if (src[i][j] < 0 || src[i][j] >= m->cfg.v_src)
                return cg_error(CG_ERR_INVALID_ARGUMENT,
                                "translate: source %d: token id %d at position %d is outside the source vocabulary "
                                "(%d tokens)", i, src[i][j], j, m->cfg.v_src);
    }
    int *order = malloc(sizeof(int) * ((size_t)n + 1));
    if (!order) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < n; i++) order[i] = i;
    sort_len = src_len;
    qsort(order, (size_t)n, sizeof(int), by_length_desc);
    cg_status st = CG_OK;
    for (int i = 0; !st && i < n; i += o.batch) {
        int nb = n - i < o.batch ? n - i : o.batch;
        st = decode_batch(m, &o, nb, order + i, src, src_len, results);
        if (!st && progress) progress(i + nb, n, user);
    }
    free(order);
    if (st)
        for (int i = 0; i < n; i++) cg_s2s_result_clear(&results[i]);
    return st;
}
