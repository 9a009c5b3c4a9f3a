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
    fin *fins;
    int n_fins;
} sent_state;

/* Decoder inputs and outputs by name, with buffers for the most rows. Every
 * array is sized from the graph (n_in, n_out) or the configuration
 * (decoder_layers) once per batch, so a model may have any number of each. */
typedef struct io {
    int n_in, n_out;
    const char **in_names;      /* [n_in] */
    cg_tensor **in, **out;      /* [n_in], [n_out] */
    /* positions */
    int y, keys, kproj, len, pos, htilde;
    int *h, *c;                 /* [decoder_layers]: h<l>, c<l> (-1: none) */
    int parent; /* the graph reorders its carried state rows itself (else -1) */
    int sent;   /* the graph takes keys, keys_proj and src_len per sentence, and
                   each row's sentence (else -1: one copy per row) */
    unsigned char *borrowed;    /* [n_in]: in[k] is the encoder's tensor, not ours */
    int n_in_c; /* the inputs a carried step gives: all but the state */
    const char **in_names_c;    /* [n_in] */
    cg_tensor **in_c;           /* [n_in] */
    int logp, a, htilde_new;
    int *h_new, *c_new;         /* [decoder_layers] */
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
    for (int i = 0; x->in && i < x->n_in; i++)
        if (!x->borrowed[i]) cg_tensor_free(x->in[i]);
    for (int i = 0; x->out && i < x->n_out; i++) cg_tensor_free(x->out[i]);
    free(x->in_names);
    free(x->in);
    free(x->out);
    free(x->borrowed);
    free(x->in_names_c);
    free(x->in_c);
    free(x->h);
    free(x->c);
    free(x->h_new);
    free(x->c_new);
    memset(x, 0, sizeof *x);
}

/* The arrays of io for n_in inputs, n_out outputs and L layers (each at
 * least one long: calloc(0) may be NULL). */
static cg_status io_alloc(io *x, int n_in, int n_out, int L) {
    size_t ni = (size_t)n_in + 1, no = (size_t)n_out + 1, nl = (size_t)L + 1;
    x->n_in = n_in;
    x->n_out = n_out;
    x->in_names = calloc(ni, sizeof *x->in_names);
    x->in = calloc(ni, sizeof *x->in);
    x->out = calloc(no, sizeof *x->out);
    x->borrowed = calloc(ni, sizeof *x->borrowed);
    x->in_names_c = calloc(ni, sizeof *x->in_names_c);
    x->in_c = calloc(ni, sizeof *x->in_c);
    x->h = malloc(nl * sizeof *x->h);
    x->c = malloc(nl * sizeof *x->c);
    x->h_new = malloc(nl * sizeof *x->h_new);
    x->c_new = malloc(nl * sizeof *x->c_new);
    if (!x->in_names || !x->in || !x->out || !x->borrowed || !x->in_names_c || !x->in_c || !x->h || !x->c ||
        !x->h_new || !x->c_new) {
        io_free(x);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    }
    return CG_OK;
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
    cg_status st = io_alloc(x, cg_graph_input_count(g), cg_graph_output_count(g), c->decoder_layers);
    if (st) return st;
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

/* Best normalised score first; a tie is 0, and the stable sort then keeps
 * the one finished first ahead (the spec's tie rule). */
static int fin_cmp(const void *a, const void *b, void *ctx) {
    (void)ctx;
    const fin *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    return 0;
}

typedef struct cand {
    double score;
    int row, tok;
} cand;

static int cand_cmp(const cand *x, const cand *y) {
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    if (x->row != y->row) return x->row - y->row;
    return x->tok - y->tok;
}

/* One batch of sentences being decoded, shared by the phases below. */
typedef struct batch {
    cg_s2s *m;
    const cg_s2s_options *o;
    int nb;         /* sentences */
    int k, beam;    /* hypotheses per sentence (1: greedy) */
    int force;      /* EOS is an ordinary token; exactly force_len steps */
    int S;          /* the longest source */
    int max_rows;   /* nb x k */
    /* The encoder's outputs, one row per sentence: eout[n_eout] as the
     * graph has them, s0[decoder_layers] (NULL: that layer starts at 0). */
    int n_eout;
    cg_tensor *elen, **eout, *keys_t, *kproj_t;
    const float *keys, *kproj, **s0;
    /* The decoder step's plan and buffers. */
    cg_plan *dec;
    io x;
    int io_ok;
    int carry;      /* the plan carries the state (input `parent`) */
    cg_tensor **out_run; /* [x.n_out]: the outputs the plan gives back (NULL: stays on its device) */
    /* Live rows (R), the next step's (NR), and the row each continues. */
    sent_state *ss;
    row *rows, *next;
    int R, NR;
    int *parent;
    int *keys_of;   /* the sentence whose keys a buffer row holds */
    cand *top;      /* a sentence's best 2k candidates */
    fin *fin_tmp;   /* the sort's room */
    /* The rows' recurrent state, and the next step's (swapped each step). */
    float *state, *state_next;
    hpool pool;
    int t;          /* the step */
} batch;

/* The tokens a sentence of `len` tokens may generate. */
static int max_len_of(const cg_s2s_options *o, int len) {
    return o->force_len > 0 ? o->force_len : o->max_len > 0 ? o->max_len : 2 * len + 10;
}

/* Floats of one row's state: h[L], c[L], htilde. */
static size_t state_row(const batch *bt) {
    return (size_t)(2 * bt->m->cfg.decoder_layers + 1) * (size_t)bt->m->cfg.hidden;
}

/* The layer of an encoder output named s0_<l>, l < L in decimal digits
 * only; else -1. */
static int s0_layer(const char *nm, int L) {
    if (strncmp(nm, "s0_", 3) || !nm[3]) return -1;
    long long l = 0;
    for (const char *q = nm + 3; *q; q++) {
        if (*q < '0' || *q > '9') return -1;
        l = l * 10 + (*q - '0');
        if (l >= L) return -1; /* also stops before l could overflow */
    }
    return (int)l;
}

/* Runs the encoder over the batch's sources padded to the longest, and
 * finds its outputs: keys, keys_proj and the initial states s0_<l>. */
static cg_status encode(batch *bt, const int *ids, const int32_t *const *src, const int *src_len) {
    const s2s_config *c = &bt->m->cfg;
    const int nb = bt->nb, S = bt->S;
    cg_graph *eg = cg_model_graph(bt->m->model, "encoder");
    int n_eout = cg_graph_output_count(eg);
    bt->eout = calloc((size_t)n_eout + 1, sizeof *bt->eout);
    bt->s0 = calloc((size_t)c->decoder_layers + 1, sizeof *bt->s0);
    if (!bt->eout || !bt->s0) return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    bt->n_eout = n_eout;
    cg_tensor *esrc = NULL;
    cg_status st = tensor(CG_I32, 2, nb, S, 0, &esrc);
    if (!st) st = tensor(CG_I32, 1, nb, 0, 0, &bt->elen);
    if (!st) {
        int32_t *sd = cg_tensor_data(esrc), *ld = cg_tensor_data(bt->elen);
        for (int b = 0; b < nb; b++) {
            int n = src_len[ids[b]];
            ld[b] = n;
            for (int s = 0; s < S; s++) sd[b * S + s] = s < n ? src[ids[b]][s] : c->pad_id;
        }
        const char *names[2] = {"src", "src_len"};
        cg_tensor *ins[2] = {esrc, bt->elen};
        st = cg_plan_run(bt->m->enc, 2, names, ins, n_eout, bt->eout);
    }
    cg_tensor_free(esrc);
    for (int i = 0, l; !st && i < n_eout; i++) {
        const char *nm = cg_graph_output_name(eg, i);
        if (!strcmp(nm, "keys")) bt->keys = cg_tensor_data_const(bt->keys_t = bt->eout[i]);
        else if (!strcmp(nm, "keys_proj")) bt->kproj = cg_tensor_data_const(bt->kproj_t = bt->eout[i]);
        else if ((l = s0_layer(nm, c->decoder_layers)) >= 0) bt->s0[l] = cg_tensor_data_const(bt->eout[i]);
    }
    return st;
}

/* The decoder plan for this search and its buffers for the most rows. A
 * decoder with input `parent` carries its state (cg_plan_carry): after the
 * first step only `parent` says which row each row continues. The outputs
 * nobody reads stay on their device. */
static cg_status open_decoder(batch *bt) {
    const char *graph = NULL;
    cg_status st = cg_s2s_decoder_plan(bt->m, bt->beam ? 2 * bt->k : 1, &bt->dec, &graph);
    if (st) return st;
    bt->m->last_dec = bt->dec;
    io *x = &bt->x;
    st = io_init(bt->m, graph, x, bt->max_rows, bt->S, bt->keys_t, bt->kproj_t, bt->elen);
    if (st) return st;
    bt->io_ok = 1;
    bt->carry = x->parent >= 0;
    bt->out_run = calloc((size_t)x->n_out + 1, sizeof *bt->out_run);
    if (!bt->out_run) return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    for (int q = 0; q < x->n_out; q++) {
        int state_out = q == x->htilde_new;
        for (int l = 0; l < bt->m->cfg.decoder_layers; l++) state_out |= q == x->h_new[l] || q == x->c_new[l];
        bt->out_run[q] = (bt->carry && state_out) || (q == x->a && !bt->o->attention) ? NULL : x->out[q];
    }
    return CG_OK;
}

/* Everything the steps work in, allocated once per batch. */
static cg_status alloc_rows(batch *bt, const int *ids, const int *src_len) {
    const int max_rows = bt->max_rows, k = bt->k, nb = bt->nb;
    bt->ss = calloc((size_t)nb, sizeof *bt->ss);
    bt->rows = calloc((size_t)max_rows, sizeof *bt->rows);
    bt->next = calloc((size_t)max_rows, sizeof *bt->next);
    bt->parent = calloc((size_t)max_rows, sizeof *bt->parent);
    bt->keys_of = malloc(sizeof(int) * (size_t)max_rows);
    bt->top = calloc((size_t)2 * (size_t)k + 1, sizeof *bt->top);
    bt->fin_tmp = calloc((size_t)k, sizeof *bt->fin_tmp);
    size_t state_floats = (size_t)max_rows * state_row(bt) + 1;
    bt->state = calloc(state_floats, sizeof *bt->state);
    bt->state_next = calloc(state_floats, sizeof *bt->state_next);
    /* Live rows and next rows, plus finished ones: at most 2k per sentence. */
    hpool *pool = &bt->pool;
    pool->cap = 2 * max_rows + nb * (2 * k + 1) + 2;
    pool->free_h = calloc((size_t)pool->cap, sizeof *pool->free_h);
    for (int b = 0; b < nb; b++) {
        int ml = max_len_of(bt->o, src_len[ids[b]]);
        if (ml > pool->tok_cap) pool->tok_cap = ml;
    }
    pool->att_cap = bt->o->attention ? (size_t)(pool->tok_cap + 1) * (size_t)bt->S : 0;
    if (!bt->ss || !bt->rows || !bt->next || !bt->parent || !bt->keys_of || !bt->top || !bt->fin_tmp || !bt->state ||
        !bt->state_next || !pool->free_h)
        return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    for (int r = 0; r < max_rows; r++) bt->keys_of[r] = -1;
    return CG_OK;
}

/* One row per sentence, holding BOS. Initial state: s0 from the bridge (or
 * zeros), LSTM cells and Luong's h~_0 zero. */
static cg_status start_rows(batch *bt, const int *ids, const int *src_len) {
    const int H = bt->m->cfg.hidden, L = bt->m->cfg.decoder_layers;
    for (int b = 0; b < bt->nb; b++) {
        sent_state *sb = &bt->ss[b];
        sb->src = ids[b];
        sb->len = src_len[ids[b]];
        sb->max_len = max_len_of(bt->o, sb->len);
        sb->fins = calloc((size_t)bt->k, sizeof *sb->fins); /* the k best finished */
        if (!sb->fins || hyp_new(&bt->pool, &bt->rows[bt->R].h))
            return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
        bt->rows[bt->R].sent = b;
        float *rs = bt->state + (size_t)bt->R * state_row(bt);
        bt->R++;
        for (int l = 0; l < L; l++)
            if (bt->s0[l])
                memcpy(rs + (size_t)l * (size_t)H, bt->s0[l] + (size_t)b * (size_t)H, sizeof(float) * (size_t)H);
    }
    return CG_OK;
}

/* Fills buffer row r of the decoder's inputs from live row rr; returns
 * whether it copied keys. */
static int gather_row(batch *bt, int r, int rr, int give_state) {
    const s2s_config *c = &bt->m->cfg;
    const int H = c->hidden, L = c->decoder_layers, S = bt->S, K = s2s_keys_dim(c), A = c->attention_dim;
    io *x = &bt->x;
    const row *w = &bt->rows[rr];
    const float *rs = bt->state + (size_t)rr * state_row(bt);
    int b = w->sent, keys_moved = 0;
    ((int32_t *)x->in[x->y]->data)[r] = w->h.n ? w->h.toks[w->h.n - 1] : c->bos_id;
    /* Keys stay in their buffer row while the row keeps its sentence (per
     * sentence: they stay, and the row names its sentence). */
    if (x->sent >= 0) {
        ((int32_t *)x->in[x->sent]->data)[r] = b;
    } else if (bt->keys_of[r] != b) {
        if (x->keys >= 0)
            memcpy((float *)x->in[x->keys]->data + (size_t)r * S * K, bt->keys + (size_t)b * S * K,
                   sizeof(float) * (size_t)S * (size_t)K);
        if (x->kproj >= 0)
            memcpy((float *)x->in[x->kproj]->data + (size_t)r * S * A, bt->kproj + (size_t)b * S * A,
                   sizeof(float) * (size_t)S * (size_t)A);
        bt->keys_of[r] = b;
        keys_moved = 1;
    }
    if (x->len >= 0 && x->sent < 0) ((int32_t *)x->in[x->len]->data)[r] = bt->ss[b].len;
    if (x->pos >= 0) ((float *)x->in[x->pos]->data)[r] = (float)bt->t;
    if (bt->carry) ((int32_t *)x->in[x->parent]->data)[r] = bt->t == 0 ? rr : bt->parent[rr];
    if (!give_state) return keys_moved;
    for (int l = 0; l < L; l++) {
        memcpy((float *)x->in[x->h[l]]->data + (size_t)r * H, rs + (size_t)l * H, sizeof(float) * (size_t)H);
        if (x->c[l] >= 0)
            memcpy((float *)x->in[x->c[l]]->data + (size_t)r * H, rs + (size_t)(L + l) * H, sizeof(float) * (size_t)H);
    }
    if (x->htilde >= 0)
        memcpy((float *)x->in[x->htilde]->data + (size_t)r * H, rs + (size_t)(2 * L) * H, sizeof(float) * (size_t)H);
    return keys_moved;
}

/* One decoder step over the live rows, padded to a power of two by
 * repeating the last real row. */
static cg_status run_step(batch *bt) {
    io *x = &bt->x;
    int Rb = bucket(bt->R, bt->max_rows);
    int keys_moved = 0, give_state = !bt->carry || bt->t == 0;
    io_rows(x, Rb);
    for (int r = 0; r < Rb; r++) keys_moved |= gather_row(bt, r, r < bt->R ? r : bt->R - 1, give_state);
    /* The plan keeps the keys on its devices until they change. */
    if (keys_moved) {
        if (x->keys >= 0) cg_tensor_touch(x->in[x->keys]);
        if (x->kproj >= 0) cg_tensor_touch(x->in[x->kproj]);
    }
    return give_state ? cg_plan_run_into(bt->dec, x->n_in, x->in_names, x->in, x->n_out, bt->out_run)
                      : cg_plan_run_into(bt->dec, x->n_in_c, x->in_names_c, x->in_c, x->n_out, bt->out_run);
}

/* A step's outputs as the selection reads them: either every row's whole
 * logp, or its best TK (log-probability, token) pairs in the order of the
 * spec's ties: a row's best 2k candidates are among them, as the
 * sentence's are among its rows'. */
typedef struct step_out {
    int TK;
    const float *logp, *top_v, *att;
    const int32_t *top_i;
} step_out;

/* Greedy: the sentence's one row takes its best token (the first maximum:
 * the lowest id wins ties); the sentence finishes on EOS or at max_len,
 * else the row lives on. */
static cg_status select_greedy(batch *bt, const step_out *so, int r0) {
    const s2s_config *c = &bt->m->cfg;
    sent_state *sb = &bt->ss[bt->rows[r0].sent];
    int best = 0;
    float best_lp;
    if (so->TK) {
        best = so->top_i[(size_t)r0 * so->TK];
        best_lp = so->top_v[(size_t)r0 * so->TK];
    } else {
        const float *lr = so->logp + (size_t)r0 * c->v_tgt;
        for (int v = 1; v < c->v_tgt; v++)
            if (lr[v] > lr[best]) best = v;
        best_lp = lr[best];
    }
    hyp *h = &bt->rows[r0].h;
    h->raw += (double)best_lp;
    int eos = !bt->force && best == c->eos_id;
    if (hyp_push(h, best, eos, so->att ? so->att + (size_t)r0 * bt->S : NULL, sb->len))
        return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    if (eos || bt->t + 1 >= sb->max_len) {
        h->ended = eos;
        sb->fins[0].h = *h;
        sb->fins[0].score = h->raw;
        sb->n_fins = 1;
        memset(h, 0, sizeof *h);
    } else {
        bt->next[bt->NR] = bt->rows[r0];
        memset(&bt->rows[r0].h, 0, sizeof bt->rows[r0].h);
        bt->parent[bt->NR++] = r0;
    }
    return CG_OK;
}

/* Beam: the best 2k candidates (live hypothesis, token) of the sentence
 * whose rows are r0..r1-1 into bt->top, by score, then lower hypothesis,
 * then lower token (a total order, so one running top-2k over the
 * sentence's rows is exact). Returns how many there are. */
static int beam_candidates(batch *bt, const step_out *so, int r0, int r1) {
    const int want = 2 * bt->k, V = bt->m->cfg.v_tgt, TK = so->TK;
    cand *top = bt->top;
    int nt = 0;
    for (int r = r0; r < r1; r++) {
        const float *lr = TK ? so->top_v + (size_t)r * TK : so->logp + (size_t)r * V;
        const int32_t *ir = TK ? so->top_i + (size_t)r * TK : NULL;
        const int nv = TK ? (want < TK ? want : TK) : V;
        for (int q = 0; q < nv; q++) {
            cand cv = {bt->rows[r].h.raw + (double)lr[q], r - r0, ir ? ir[q] : q};
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
    return nt;
}

/* Adds a finished hypothesis to the sentence's finished set, which keeps the
 * k best by normalised score (ties: the one finished first stays), in
 * finishing order; one that does not make it goes back to the pool. */
static void keep_best(batch *bt, sent_state *sb, hyp *h, double score) {
    if (sb->n_fins < bt->k) {
        sb->fins[sb->n_fins].h = *h;
        sb->fins[sb->n_fins++].score = score;
        return;
    }
    int w = 0; /* the worst; among equal scores the last finished */
    for (int i = 1; i < sb->n_fins; i++)
        if (sb->fins[i].score <= sb->fins[w].score) w = i;
    if (!(score > sb->fins[w].score)) {
        hyp_release(&bt->pool, h);
        return;
    }
    hyp_release(&bt->pool, &sb->fins[w].h);
    memmove(&sb->fins[w], &sb->fins[w + 1], sizeof *sb->fins * (size_t)(sb->n_fins - 1 - w));
    sb->fins[sb->n_fins - 1].h = *h;
    sb->fins[sb->n_fins - 1].score = score;
}

/* Walks the sentence's nt candidates in order until the next live set holds
 * k: EOS finishes a hypothesis (into the k-best finished set), any other
 * token makes a row of the next step. Returns how many rows it made. */
static cg_status beam_walk(batch *bt, const step_out *so, int r0, int nt, int *n_live) {
    const s2s_config *c = &bt->m->cfg;
    sent_state *sb = &bt->ss[bt->rows[r0].sent];
    *n_live = 0;
    for (int j = 0; j < nt && *n_live < bt->k; j++) {
        int r = r0 + bt->top[j].row, tok = bt->top[j].tok;
        int is_eos = !bt->force && tok == c->eos_id;
        hyp nh;
        if (hyp_copy(&bt->pool, &nh, &bt->rows[r].h, sb->len) ||
            hyp_push(&nh, tok, is_eos, so->att ? so->att + (size_t)r * bt->S : NULL, sb->len)) {
            hyp_free(&nh);
            return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
        }
        nh.raw = bt->top[j].score;
        if (is_eos) {
            nh.ended = 1;
            keep_best(bt, sb, &nh, nh.raw / lp(bt->o->alpha, bt->t + 1));
        } else {
            bt->next[bt->NR].sent = bt->rows[r0].sent;
            bt->next[bt->NR].h = nh;
            bt->parent[bt->NR++] = r;
            ++*n_live;
        }
    }
    return CG_OK;
}

/* Whether no live hypothesis can still enter the full finished set: the best
 * live raw score (the first row: rows are made in score order) over the
 * largest length penalty it can still get, lp(max_len), is no better than
 * the worst finished score (raw scores only fall). */
static int beam_settled(const batch *bt, const sent_state *sb, double best_live_raw) {
    if (sb->n_fins < bt->k) return 0;
    double worst = sb->fins[0].score;
    for (int i = 1; i < sb->n_fins; i++)
        if (sb->fins[i].score < worst) worst = sb->fins[i].score;
    return best_live_raw / lp(bt->o->alpha, sb->max_len) <= worst;
}

/* One beam step of the sentence whose rows are r0..r1-1. The sentence is
 * done when nothing lives on, at max_len (the live ones finish as they
 * stand, in live order) or when the finished set is settled; a done sentence
 * drops its new rows. The old rows' buffers go back to the pool. */
static cg_status select_beam(batch *bt, const step_out *so, int r0, int r1) {
    sent_state *sb = &bt->ss[bt->rows[r0].sent];
    const int base = bt->NR;
    int n_live;
    cg_status st = beam_walk(bt, so, r0, beam_candidates(bt, so, r0, r1), &n_live);
    if (st) return st;
    if (n_live && bt->t + 1 >= sb->max_len) {
        for (int q = base; q < bt->NR; q++) {
            keep_best(bt, sb, &bt->next[q].h, bt->next[q].h.raw / lp(bt->o->alpha, bt->t + 1));
            memset(&bt->next[q].h, 0, sizeof bt->next[q].h);
        }
        bt->NR = base;
    } else if (n_live && beam_settled(bt, sb, bt->next[base].h.raw)) {
        for (int q = base; q < bt->NR; q++) hyp_release(&bt->pool, &bt->next[q].h);
        bt->NR = base;
    }
    for (int r = r0; r < r1; r++) hyp_release(&bt->pool, &bt->rows[r].h);
    return CG_OK;
}

/* Chooses the next tokens of every sentence from the step's outputs; the
 * rows that live on go to bt->next (rows are grouped by sentence, in live
 * order). */
static cg_status select_tokens(batch *bt) {
    const io *x = &bt->x;
    step_out so = {.TK = x->top_k};
    if (so.TK) {
        so.top_v = cg_tensor_data_const(x->out[x->top_v]);
        so.top_i = cg_tensor_data_const(x->out[x->top_i]);
    } else {
        so.logp = cg_tensor_data_const(x->out[x->logp]);
    }
    so.att = x->a >= 0 && bt->o->attention ? cg_tensor_data_const(x->out[x->a]) : NULL;
    bt->NR = 0;
    cg_status st = CG_OK;
    for (int r0 = 0; !st && r0 < bt->R;) {
        int b = bt->rows[r0].sent, r1 = r0;
        while (r1 < bt->R && bt->rows[r1].sent == b) r1++;
        st = bt->beam ? select_beam(bt, &so, r0, r1) : select_greedy(bt, &so, r0);
        r0 = r1;
    }
    return st;
}

/* The next step's rows become the live ones, each with its parent's new
 * state (a carried state: the next step's gather does that). */
static void next_step(batch *bt) {
    const io *x = &bt->x;
    const int H = bt->m->cfg.hidden, L = bt->m->cfg.decoder_layers;
    float *ns = bt->state_next;
    for (int q = 0; !bt->carry && q < bt->NR; q++) {
        float *rs = ns + (size_t)q * state_row(bt);
        int p = bt->parent[q];
        for (int l = 0; l < L; l++) {
            memcpy(rs + (size_t)l * H, (const float *)x->out[x->h_new[l]]->data + (size_t)p * H, sizeof(float) * (size_t)H);
            if (x->c_new[l] >= 0)
                memcpy(rs + (size_t)(L + l) * H, (const float *)x->out[x->c_new[l]]->data + (size_t)p * H,
                       sizeof(float) * (size_t)H);
        }
        if (x->htilde_new >= 0)
            memcpy(rs + (size_t)(2 * L) * H, (const float *)x->out[x->htilde_new]->data + (size_t)p * H,
                   sizeof(float) * (size_t)H);
    }
    bt->state_next = bt->state;
    bt->state = ns;
    for (int q = 0; q < bt->NR; q++) bt->rows[q] = bt->next[q];
    bt->R = bt->NR;
    bt->NR = 0; /* the rows own the hypotheses now */
    bt->t++;
}

/* Results: each sentence's finished hypotheses by normalised score, best
 * first; the kept ones' buffers move into the results. */
static cg_status collect_results(batch *bt, cg_s2s_result *results) {
    const cg_s2s_options *o = bt->o;
    for (int b = 0; b < bt->nb; b++) {
        sent_state *sb = &bt->ss[b];
        cg_s2s_sort(sb->fins, (size_t)sb->n_fins, sizeof *sb->fins, fin_cmp, NULL, bt->fin_tmp);
        int keep = bt->beam ? (o->nbest > 0 ? o->nbest : 1) : 1;
        if (keep > sb->n_fins) keep = sb->n_fins;
        cg_s2s_result *res = &results[sb->src];
        res->src_len = sb->len;
        res->n_hyps = keep;
        res->hyps = calloc((size_t)keep + 1, sizeof *res->hyps);
        if (!res->hyps) return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
        for (int i = 0; i < keep; i++) {
            hyp *h = &sb->fins[i].h;
            cg_s2s_hyp *y = &res->hyps[i];
            y->tokens = h->toks;
            y->n_tokens = h->n;
            y->score = sb->fins[i].score;
            y->n_steps = h->att_rows;
            y->attention = o->attention && sb->len > 0 ? h->att : NULL;
            if (!y->attention) free(h->att);
            memset(h, 0, sizeof *h);
        }
    }
    return CG_OK;
}

/* Frees what a batch holds, at whatever point it stopped. */
static void batch_free(batch *bt) {
    for (int b = 0; bt->ss && b < bt->nb; b++) {
        for (int i = 0; i < bt->ss[b].n_fins; i++) hyp_free(&bt->ss[b].fins[i].h);
        free(bt->ss[b].fins);
    }
    for (int r = 0; bt->rows && r < bt->R; r++) hyp_free(&bt->rows[r].h);
    for (int r = 0; bt->next && r < bt->NR; r++) hyp_free(&bt->next[r].h);
    pool_free(&bt->pool);
    free(bt->ss);
    free(bt->rows);
    free(bt->next);
    free(bt->parent);
    free(bt->keys_of);
    free(bt->top);
    free(bt->fin_tmp);
    free(bt->state);
    free(bt->state_next);
    if (bt->io_ok) io_free(&bt->x);
    free(bt->out_run);
    for (int i = 0; i < bt->n_eout; i++) cg_tensor_free(bt->eout[i]);
    free(bt->eout);
    free(bt->s0);
    cg_tensor_free(bt->elen);
}

/* Decodes one batch of sentences (sorted by length). */
static cg_status decode_batch(cg_s2s *m, const cg_s2s_options *o, int nb, const int *ids, const int32_t *const *src,
                              const int *src_len, cg_s2s_result *results) {
    batch bt;
    memset(&bt, 0, sizeof bt);
    bt.m = m;
    bt.o = o;
    bt.nb = nb;
    bt.k = o->beam > 1 ? o->beam : 1;
    bt.beam = o->beam > 1;
    bt.force = o->force_len > 0;
    bt.max_rows = nb * bt.k;
    bt.S = 1;
    for (int i = 0; i < nb; i++)
        if (src_len[ids[i]] > bt.S) bt.S = src_len[ids[i]];
    cg_status st = encode(&bt, ids, src, src_len);
    if (!st) st = open_decoder(&bt);
    if (!st) st = alloc_rows(&bt, ids, src_len);
    if (!st) st = start_rows(&bt, ids, src_len);
    while (!st && bt.R > 0) {
        st = run_step(&bt);
        if (!st) st = select_tokens(&bt);
        if (!st) next_step(&bt);
    }
    if (!st) st = collect_results(&bt, results);
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

/* Longest first, then input order; `ctx` is the lengths. */
static int by_length_desc(const void *a, const void *b, void *ctx) {
    const int *len = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (len[x] != len[y]) return len[y] - len[x];
    return x - y;
}

cg_status cg_s2s_translate(cg_s2s *m, const cg_s2s_options *opt, int n, const int32_t *const *src,
                           const int *src_len, cg_s2s_result *results, cg_s2s_progress_fn progress, void *user) {
    if (!m || n < 0 || (n && (!src || !src_len || !results)))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_s2s_translate: NULL argument");
    cg_s2s_options o;
    memset(&o, 0, sizeof o);
    if (opt) o = *opt;
    if (o.beam < 0 || o.nbest < 0 || o.max_len < 0 || o.batch < 0 || o.force_len < 0)
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "translate: beam, nbest, max_len, batch and force_len must not be negative");
    if (!isfinite(o.alpha) || o.alpha < 0)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "translate: alpha must be a finite number >= 0, got %g", o.alpha);
    if (o.beam > CG_S2S_MAX_BEAM)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "translate: beam %d is wider than the limit of %d", o.beam,
                        CG_S2S_MAX_BEAM);
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
    /* The order, then the sort's room. */
    int *order = malloc(sizeof(int) * (2 * (size_t)n + 1));
    if (!order) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < n; i++) order[i] = i;
    cg_s2s_sort(order, (size_t)n, sizeof(int), by_length_desc, (void *)src_len, order + n);
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
