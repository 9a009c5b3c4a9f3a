/* Search bookkeeping (s2s_search.h): the spec's "Decoding" choices, from
 * scores to hypotheses; no device, no plan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "s2s.h"
#include "s2s_search.h"

void s2s_hyp_free(s2s_hyp *h) {
    free(h->toks);
    free(h->att);
    memset(h, 0, sizeof *h);
}

void s2s_pool_free(s2s_hpool *p) {
    for (int i = 0; i < p->n; i++) s2s_hyp_free(&p->free_h[i]);
    free(p->free_h);
    memset(p, 0, sizeof *p);
}

int s2s_hyp_new(s2s_hpool *p, s2s_hyp *h) {
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
            s2s_hyp_free(h);
            return -1;
        }
    }
    h->n = h->att_rows = h->ended = 0;
    h->raw = 0;
    return 0;
}

void s2s_hyp_release(s2s_hpool *p, s2s_hyp *h) {
    if (h->toks && p->n < p->cap) p->free_h[p->n++] = *h;
    else s2s_hyp_free(h);
    memset(h, 0, sizeof *h);
}

/* Room for `ntok` tokens and `natt` attention floats, growing geometrically. */
static int hyp_reserve(s2s_hyp *h, int ntok, size_t natt) {
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

static int hyp_copy(s2s_hpool *p, s2s_hyp *dst, const s2s_hyp *src, int src_len) {
    size_t w = (size_t)(src_len > 0 ? src_len : 0);
    if (s2s_hyp_new(p, dst) || hyp_reserve(dst, src->n + 1, (size_t)(src->att_rows + 1) * w)) {
        s2s_hyp_free(dst);
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
static int hyp_push(s2s_hyp *h, int32_t tok, int is_eos, const float *att, int src_len) {
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

double s2s_lp(double alpha, int len) { return alpha == 0.0 ? 1.0 : pow((5.0 + len) / 6.0, alpha); }

double s2s_penalty(const s2s_search *s, int len) {
    if (s->rules != S2S_RULES_HF) return s2s_lp(s->alpha, len);
    return s->alpha == 0.0 ? 1.0 : pow((double)len, s->alpha);
}

/* A token the step may not choose: EOS while masked, a banned id. */
static int excluded(const s2s_search *s, int tok) {
    if (s->mask_eos && tok == s->eos) return 1;
    for (int i = 0; i < s->n_banned; i++)
        if (s->banned[i] == tok) return 1;
    return 0;
}

/* Best normalised score first; a tie is 0, and the stable sort then keeps
 * the one finished first ahead (the spec's tie rule). */
static int fin_cmp(const void *a, const void *b, void *ctx) {
    (void)ctx;
    const s2s_fin *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    return 0;
}

static int cand_cmp(const s2s_cand *x, const s2s_cand *y) {
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    if (x->row != y->row) return x->row - y->row;
    return x->tok - y->tok;
}

static const float *att_row(const s2s_scores *so, int r) { return so->att ? so->att + (size_t)r * so->S : NULL; }

/* The best token of row r (the first maximum: the lowest id wins ties),
 * EOS left out under s->mask_eos and banned ids always; -1 when there is
 * none (a top_id that lists only those). */
static int greedy_pick(const s2s_search *s, const s2s_scores *so, int r, float *lp) {
    int best = -1;
    if (so->TK) {
        const int32_t *ir = so->top_i + (size_t)r * so->TK;
        const float *vr = so->top_v + (size_t)r * so->TK;
        for (int q = 0; q < so->TK && best < 0; q++)
            if (!excluded(s, ir[q])) best = ir[q], *lp = vr[q];
        return best;
    }
    const float *lr = so->logp + (size_t)r * so->V;
    for (int v = 0; v < so->V; v++)
        if (!excluded(s, v) && (best < 0 || lr[v] > lr[best])) best = v;
    if (best >= 0) *lp = lr[best];
    return best;
}

/* Greedy: the sentence's one row takes its best token; the sentence
 * finishes on EOS or at max_len, else the row lives on. */
static cg_status select_greedy(s2s_search *s, s2s_sent *sb, s2s_row *rows, int r0, int t, const s2s_scores *so) {
    float best_lp = 0;
    /* a forced token's log-probability is 0, as transformers sets it */
    const int best = s->forced_first && t == 0               ? s->first_id
                     : s->forced_eos && t + 1 >= sb->max_len ? s->eos
                                                             : greedy_pick(s, so, r0, &best_lp);
    if (best < 0)
        return cg_error(CG_ERR_VERIFY,
                        "decoding: the decoder's top_id offers only EOS or banned ids at step %d (min_len %d)", t,
                        s->min_len);
    s2s_hyp *h = &rows[r0].h;
    h->raw += (double)best_lp;
    const int eos = best == s->eos;
    if (hyp_push(h, best, eos, att_row(so, r0), sb->len)) return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    if (eos || t + 1 >= sb->max_len) {
        h->ended = eos;
        sb->fins[0].h = *h;
        sb->fins[0].score = h->raw;
        sb->n_fins = 1;
        memset(h, 0, sizeof *h);
    } else {
        s->next[s->NR] = rows[r0];
        memset(&rows[r0].h, 0, sizeof rows[r0].h);
        s->parent[s->NR++] = r0;
    }
    return CG_OK;
}

/* A total order, so one running top-2k over the sentence's rows is exact. */
int s2s_candidates(s2s_search *s, const s2s_row *rows, const s2s_scores *so, int r0, int r1) {
    const int want = 2 * s->k, V = so->V, TK = so->TK;
    s2s_cand *top = s->top;
    int nt = 0;
    for (int r = r0; r < r1; r++) {
        const float *lr = TK ? so->top_v + (size_t)r * TK : so->logp + (size_t)r * V;
        const int32_t *ir = TK ? so->top_i + (size_t)r * TK : NULL;
        const int nv = TK ? (want < TK ? want : TK) : V;
        for (int q = 0; q < nv; q++) {
            if (excluded(s, ir ? ir[q] : q)) continue;
            s2s_cand cv = {rows[r].h.raw + (double)lr[q], r - r0, ir ? ir[q] : q};
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

/* The set stays in finishing order. */
void s2s_keep_best(s2s_search *s, s2s_sent *sb, s2s_hyp *h, double score) {
    if (sb->n_fins < s->k) {
        sb->fins[sb->n_fins].h = *h;
        sb->fins[sb->n_fins++].score = score;
        return;
    }
    int w = 0; /* the worst; among equal scores the last finished */
    for (int i = 1; i < sb->n_fins; i++)
        if (sb->fins[i].score <= sb->fins[w].score) w = i;
    if (!(score > sb->fins[w].score)) {
        s2s_hyp_release(&s->pool, h);
        return;
    }
    s2s_hyp_release(&s->pool, &sb->fins[w].h);
    memmove(&sb->fins[w], &sb->fins[w + 1], sizeof *sb->fins * (size_t)(sb->n_fins - 1 - w));
    sb->fins[sb->n_fins - 1].h = *h;
    sb->fins[sb->n_fins - 1].score = score;
}

/* Candidate j of the sentence whose rows start at r0 as a hypothesis:
 * finished (into the k best, ended when its token is EOS) or a row of the
 * next step. */
static cg_status take(s2s_search *s, s2s_sent *sb, s2s_row *rows, int r0, int j, int t, const s2s_scores *so, int fin,
                      int *n_live) {
    const int r = r0 + s->top[j].row, tok = s->top[j].tok, is_eos = tok == s->eos;
    s2s_hyp nh;
    if (hyp_copy(&s->pool, &nh, &rows[r].h, sb->len) || hyp_push(&nh, tok, is_eos, att_row(so, r), sb->len)) {
        s2s_hyp_free(&nh);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    }
    nh.raw = s->top[j].score;
    if (fin) {
        nh.ended = is_eos;
        s2s_keep_best(s, sb, &nh, nh.raw / s2s_penalty(s, t + 1));
    } else {
        s->next[s->NR].sent = rows[r0].sent;
        s->next[s->NR].h = nh;
        s->parent[s->NR++] = r;
        ++*n_live;
    }
    return CG_OK;
}

/* Walks the sentence's nt candidates in order until the next live set holds
 * k: EOS finishes a hypothesis (into the k-best finished set), any other
 * token makes a row of the next step. */
static cg_status beam_walk(s2s_search *s, s2s_sent *sb, s2s_row *rows, int r0, int nt, int t, const s2s_scores *so,
                           int *n_live) {
    *n_live = 0;
    cg_status st = CG_OK;
    for (int j = 0; !st && j < nt && *n_live < s->k; j++)
        st = take(s, sb, rows, r0, j, t, so, s->top[j].tok == s->eos, n_live);
    return st;
}

int s2s_settled(const s2s_search *s, const s2s_sent *sb, double best_live_raw, int live_len) {
    if (sb->n_fins < s->k) return 0;
    double worst = sb->fins[0].score;
    for (int i = 1; i < sb->n_fins; i++)
        if (sb->fins[i].score < worst) worst = sb->fins[i].score;
    if (s->rules != S2S_RULES_HF) return best_live_raw / s2s_lp(s->alpha, sb->max_len) <= worst;
    if (s->early == S2S_EARLY_TRUE) return 1;
    const int len = s->early == S2S_EARLY_NEVER && s->alpha > 0 ? sb->max_len : live_len;
    return best_live_raw / s2s_penalty(s, len) <= worst;
}

/* transformers' step (S2S_RULES_HF) over the sentence's nt candidates: of
 * the best k, those ending in EOS finish (all of them at max_len); the
 * best k that do not end live on. */
static cg_status hf_walk(s2s_search *s, s2s_sent *sb, s2s_row *rows, int r0, int nt, int t, const s2s_scores *so,
                         int *n_live) {
    const int last = t + 1 >= sb->max_len;
    *n_live = 0;
    cg_status st = CG_OK;
    for (int j = 0; !st && j < nt; j++) {
        const int is_eos = s->top[j].tok == s->eos, fin = j < s->k && (is_eos || last);
        if (fin || !(is_eos || last || *n_live == s->k)) st = take(s, sb, rows, r0, j, t, so, fin, n_live);
    }
    return st;
}

/* A step with a forced token (the first's, or EOS at the last): every
 * row's one candidate is tok with log-probability 0, best raw score first
 * (then lower row). */
static int forced_candidates(s2s_search *s, const s2s_row *rows, int r0, int r1, int tok) {
    int nt = 0;
    for (int r = r0; r < r1; r++) {
        s2s_cand cv = {rows[r].h.raw, r - r0, tok};
        int pos = nt++;
        while (pos > 0 && cand_cmp(&cv, &s->top[pos - 1]) < 0) {
            s->top[pos] = s->top[pos - 1];
            pos--;
        }
        s->top[pos] = cv;
    }
    return nt;
}

/* One beam step of the sentence whose rows are r0..r1-1. The sentence is
 * done when nothing lives on, at max_len (the live ones finish as they
 * stand, in live order) or when the finished set is settled; a done sentence
 * drops its new rows. The old rows' buffers go back to the pool. */
static cg_status select_beam(s2s_search *s, s2s_sent *sb, s2s_row *rows, int r0, int r1, int t, const s2s_scores *so) {
    const int base = s->NR;
    int n_live;
    const int nt = s->forced_first && t == 0               ? forced_candidates(s, rows, r0, r1, s->first_id)
                   : s->forced_eos && t + 1 >= sb->max_len ? forced_candidates(s, rows, r0, r1, s->eos)
                                                           : s2s_candidates(s, rows, so, r0, r1);
    cg_status st = s->rules == S2S_RULES_HF ? hf_walk(s, sb, rows, r0, nt, t, so, &n_live)
                                            : beam_walk(s, sb, rows, r0, nt, t, so, &n_live);
    if (st) return st;
    if (n_live && t + 1 >= sb->max_len) {
        for (int q = base; q < s->NR; q++) {
            s2s_keep_best(s, sb, &s->next[q].h, s->next[q].h.raw / s2s_penalty(s, t + 1));
            memset(&s->next[q].h, 0, sizeof s->next[q].h);
        }
        s->NR = base;
    } else if (n_live && s2s_settled(s, sb, s->next[base].h.raw, t + 1)) {
        for (int q = base; q < s->NR; q++) s2s_hyp_release(&s->pool, &s->next[q].h);
        s->NR = base;
    }
    for (int r = r0; r < r1; r++) s2s_hyp_release(&s->pool, &rows[r].h);
    return CG_OK;
}

cg_status s2s_select(s2s_search *s, s2s_sent *ss, s2s_row *rows, int R, int t, const s2s_scores *so) {
    s->NR = 0;
    cg_status st = CG_OK;
    for (int r0 = 0; !st && r0 < R;) {
        int b = rows[r0].sent, r1 = r0;
        while (r1 < R && rows[r1].sent == b) r1++;
        const int tb = t - ss[b].t0; /* the sentence's own step */
        s->mask_eos = tb + 1 < s->min_len;
        st = s->beam ? select_beam(s, &ss[b], rows, r0, r1, tb, so) : select_greedy(s, &ss[b], rows, r0, tb, so);
        r0 = r1;
    }
    return st;
}

cg_status s2s_search_alloc(s2s_search *s, int nb, int max_rows, int tok_cap, size_t att_cap, s2s_sent **ss,
                           s2s_row **rows) {
    const int k = s->k;
    *ss = calloc((size_t)nb + 1, sizeof **ss);
    *rows = calloc((size_t)max_rows + 1, sizeof **rows);
    s->next = calloc((size_t)max_rows + 1, sizeof *s->next);
    s->parent = calloc((size_t)max_rows + 1, sizeof *s->parent);
    s->top = calloc((size_t)2 * (size_t)k + 1, sizeof *s->top);
    s->fin_tmp = calloc((size_t)k, sizeof *s->fin_tmp);
    /* live rows and next rows, plus finished ones: at most 2k per sentence */
    s->pool.cap = 2 * max_rows + nb * (2 * k + 1) + 2;
    s->pool.free_h = calloc((size_t)s->pool.cap, sizeof *s->pool.free_h);
    s->pool.tok_cap = tok_cap;
    s->pool.att_cap = att_cap;
    int ok = *ss && *rows && s->next && s->parent && s->top && s->fin_tmp && s->pool.free_h;
    for (int b = 0; ok && b < nb; b++) ok = ((*ss)[b].fins = calloc((size_t)k, sizeof *(*ss)[b].fins)) != NULL;
    return ok ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
}

void s2s_search_free(s2s_search *s, s2s_sent *ss, int nb, s2s_row *rows, int R) {
    for (int b = 0; ss && b < nb; b++) {
        for (int i = 0; i < ss[b].n_fins; i++) s2s_hyp_free(&ss[b].fins[i].h);
        free(ss[b].fins);
    }
    for (int r = 0; rows && r < R; r++) s2s_hyp_free(&rows[r].h);
    for (int r = 0; s->next && r < s->NR; r++) s2s_hyp_free(&s->next[r].h);
    s2s_pool_free(&s->pool);
    free(ss);
    free(rows);
    free(s->next);
    free(s->parent);
    free(s->top);
    free(s->fin_tmp);
}

cg_status s2s_result(s2s_search *s, s2s_sent *sb, int nbest, int attention, cg_s2s_result *res) {
    cg_s2s_sort(sb->fins, (size_t)sb->n_fins, sizeof *sb->fins, fin_cmp, NULL, s->fin_tmp);
    int keep = s->beam ? (nbest > 0 ? nbest : 1) : 1;
    if (keep > sb->n_fins) keep = sb->n_fins;
    res->src_len = sb->len;
    res->hyps = calloc((size_t)keep + 1, sizeof *res->hyps);
    if (!res->hyps) return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    res->n_hyps = keep; /* only once there is room: cg_s2s_result_clear reads it */
    for (int i = 0; i < keep; i++) {
        s2s_hyp *h = &sb->fins[i].h;
        cg_s2s_hyp *y = &res->hyps[i];
        y->tokens = h->toks;
        y->n_tokens = h->n;
        y->score = sb->fins[i].score;
        y->n_steps = h->att_rows;
        y->attention = attention && sb->len > 0 ? h->att : NULL;
        if (!y->attention) free(h->att);
        memset(h, 0, sizeof *h);
    }
    return CG_OK;
}

/* A sentence done with: its finished hypotheses not taken by a result
 * back to the pool. */
static void sent_close(s2s_search *s, s2s_sent *sb) {
    for (int i = 0; i < sb->n_fins; i++)
        if (sb->fins[i].h.toks) s2s_hyp_release(&s->pool, &sb->fins[i].h);
    sb->n_fins = 0;
    sb->done = 1;
}

cg_status s2s_finish(s2s_search *s, s2s_sent *ss, int nb, const s2s_row *rows, int R, const cg_s2s_options *o,
                     cg_s2s_result *results) {
    for (int b = 0; b < nb; b++) ss[b].live = 0;
    for (int r = 0; r < R; r++) ss[rows[r].sent].live = 1;
    for (int b = 0; b < nb; b++) {
        s2s_sent *sb = &ss[b];
        if (sb->live || sb->done) continue;
        cg_status st = s2s_result(s, sb, o->nbest, o->attention, &results[sb->src]);
        if (st) return st;
        sent_close(s, sb);
        if (o->done) o->done(sb->src, &results[sb->src], o->user);
    }
    return CG_OK;
}

void s2s_drop(s2s_search *s, s2s_sent *ss, s2s_row *rows, int *R, const cg_s2s_options *o) {
    if (!o->keep) return;
    int dropped = 0;
    for (int r = 0; r < *R; r++) { /* rows are grouped by sentence: ask each once */
        s2s_sent *sb = &ss[rows[r].sent];
        if (sb->done || (r && rows[r - 1].sent == rows[r].sent) || o->keep(sb->src, o->user)) continue;
        sent_close(s, sb);
        dropped = 1;
    }
    if (!dropped) return;
    int w = 0;
    for (int r = 0; r < *R; r++) {
        if (ss[rows[r].sent].done) {
            s2s_hyp_release(&s->pool, &rows[r].h);
            continue;
        }
        s->parent[w] = s->parent[r];
        rows[w++] = rows[r];
    }
    *R = w;
}

int s2s_live_sentences(const s2s_row *rows, int R) {
    int n = 0;
    for (int r = 0; r < R; r++) n += !r || rows[r].sent != rows[r - 1].sent;
    return n;
}

int s2s_take_slots(const s2s_row *rows, int R, int cap, int n, int *live, int *slot) {
    int top = 0;
    memset(live, 0, sizeof *live * (size_t)cap);
    for (int r = 0; r < R; r++) {
        live[rows[r].sent] = 1;
        if (rows[r].sent + 1 > top) top = rows[r].sent + 1;
    }
    for (int j = 0, b = 0; j < n; j++, b++) {
        while (live[b]) b++;
        slot[j] = b;
        if (b + 1 > top) top = b + 1;
    }
    return top;
}
