/* Beam and greedy search bookkeeping, apart from any device or plan: the
 * hypothesis pool, the choice of each sentence's next tokens from a step's
 * scores (the spec's ties), the finished set with its length penalty, the
 * stop rule, and the n-best results. The batch driver (s2s_decode.c) feeds
 * it the decoder's outputs; tests feed it hand-made scores. */
#ifndef CG_SEQ2SEQ_S2S_SEARCH_H
#define CG_SEQ2SEQ_S2S_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "clgraph/seq2seq.h"

typedef struct s2s_hyp {
    int32_t *toks;
    int n, cap;
    float *att;     /* rows of src_len weights, one per generated token (NULL: not kept) */
    int att_rows;   /* counted even when the weights are not kept */
    size_t att_cap; /* floats of room in att */
    double raw;     /* sum of logp */
    int ended;      /* finished with EOS */
} s2s_hyp;

/* Hypothesis buffers, recycled: each has room for the batch's longest
 * decode (and its attention rows when they are kept), so once a batch has
 * its working set, a step allocates nothing. Buffers that leave as results
 * are ordinary malloc blocks the caller frees. */
typedef struct s2s_hpool {
    s2s_hyp *free_h;
    int n, cap;
    int tok_cap;    /* tokens of room in a new buffer */
    size_t att_cap; /* floats of room in a new buffer; 0: attention not kept */
} s2s_hpool;

/* An empty hypothesis with the pool's room; -1 out of memory. */
int s2s_hyp_new(s2s_hpool *p, s2s_hyp *h);
/* Gives a hypothesis's buffers back to the pool (or frees them). */
void s2s_hyp_release(s2s_hpool *p, s2s_hyp *h);
void s2s_hyp_free(s2s_hyp *h);
void s2s_pool_free(s2s_hpool *p);

/* A decoder row: a live hypothesis of a sentence of the batch. */
typedef struct s2s_row {
    int sent; /* index in the batch */
    s2s_hyp h;
} s2s_row;

typedef struct s2s_fin {
    s2s_hyp h;
    double score; /* normalised */
} s2s_fin;

/* A sentence of the batch: its finished hypotheses (room for k). */
typedef struct s2s_sent {
    int src; /* index of the source */
    int len, max_len;
    int t0; /* the batch step it joined at (0 but in a stream): its own step is t - t0 */
    s2s_fin *fins;
    int n_fins;
    int live; /* s2s_finish's mark: a row of this step continues it */
    int done; /* its result is out (s2s_finish), or it was dropped (s2s_drop) */
} s2s_sent;

typedef struct s2s_cand {
    double score;
    int row, tok; /* row: within the sentence's rows */
} s2s_cand;

/* A step's outputs as the selection reads them: either every row's whole
 * logp [rows, V], or its best TK (log-probability, token) pairs in the
 * order of the spec's ties (a row's best 2k candidates are among them, as
 * the sentence's are among its rows'); att: [rows, S] weights or NULL. */
typedef struct s2s_scores {
    int TK, V, S;
    const float *logp, *top_v, *att;
    const int32_t *top_i;
} s2s_scores;

/* The rules a beam search follows: the RNN family's (docs/seq2seq.md:
 * GNMT's length penalty, EOS finishes wherever it comes before the k-th
 * live candidate, stop when no live hypothesis can beat the finished ones
 * even at max_len) or transformers' generate() (docs/transformer.md:
 * score / len^alpha, EOS finishes only among the best k candidates, stop
 * by its early_stopping heuristic, the best k candidates finish at
 * max_len). */
typedef enum { S2S_RULES_GNMT, S2S_RULES_HF } s2s_rules;

/* transformers' early_stopping: False (its heuristic), True (stop once k
 * have finished), "never" (the heuristic at max_len when alpha > 0). */
typedef enum { S2S_EARLY_HEURISTIC, S2S_EARLY_TRUE, S2S_EARLY_NEVER } s2s_early;

/* One search over a batch: its settings, the pool, and the rows the step
 * being chosen makes (next, with the row each continues in parent). */
typedef struct s2s_search {
    int k;        /* hypotheses per sentence (1: greedy) */
    int beam;     /* beam search (else greedy) */
    int eos;      /* EOS's id */
    int min_len;  /* cg_s2s_options.min_len: EOS is masked at steps t with t + 1 < min_len */
    int mask_eos; /* this step's: EOS may not be chosen (s2s_select sets it) */
    double alpha; /* length-penalty exponent */
    s2s_rules rules;
    s2s_early early;  /* S2S_RULES_HF only */
    int forced_eos;   /* the last step (t + 1 == max_len) takes EOS with log-probability 0 */
    int forced_first; /* the first step takes first_id with log-probability 0 (transformers' forced BOS) */
    int first_id;
    const int *banned; /* ids never chosen (their logp taken as -inf) */
    int n_banned;
    s2s_hpool pool;
    s2s_cand *top;    /* [2k]: a sentence's best candidates */
    s2s_fin *fin_tmp; /* [k]: the sort's room */
    s2s_row *next;    /* [rows]: the next step's rows */
    int *parent;      /* [rows]: the row each next row continues */
    int NR;
} s2s_search;

/* The length penalty ((5 + len) / 6)^alpha (1 for alpha 0). */
double s2s_lp(double alpha, int len);

/* The divisor of a hypothesis of len tokens (EOS included) under s's
 * rules: s2s_lp, or len^alpha for S2S_RULES_HF. */
double s2s_penalty(const s2s_search *s, int len);

/* The best 2k candidates (row, token) of the rows r0..r1-1 into s->top, by
 * score (row's raw + logp), then lower row, then lower token; returns how
 * many. With s->mask_eos, EOS is no candidate (its logp taken as -inf), nor
 * is a banned id. */
int s2s_candidates(s2s_search *s, const s2s_row *rows, const s2s_scores *so, int r0, int r1);

/* Adds a finished hypothesis to sb's k best by normalised score (ties: the
 * one finished first stays); one that does not make it goes to the pool. */
void s2s_keep_best(s2s_search *s, s2s_sent *sb, s2s_hyp *h, double score);

/* The stop rule: sb's finished set is full and the best live raw score
 * over the largest length penalty it can still get, lp(max_len), is no
 * better than the worst finished score (raw scores only fall). Under
 * S2S_RULES_HF, transformers' early_stopping instead: the penalty of the
 * live rows' own length live_len (tokens so far), or stop as soon as the
 * set is full (S2S_EARLY_TRUE). */
int s2s_settled(const s2s_search *s, const s2s_sent *sb, double best_live_raw, int live_len);

/* The arrays of a search over nb sentences in at most max_rows rows: the
 * sentences (each with room for k finished), the rows, next, parent, top,
 * fin_tmp, and the pool (hypotheses of tok_cap tokens and att_cap
 * attention floats). Free them with s2s_search_free, also after a failure. */
cg_status s2s_search_alloc(s2s_search *s, int nb, int max_rows, int tok_cap, size_t att_cap, s2s_sent **ss,
                           s2s_row **rows);

/* Frees what s2s_search_alloc made and every hypothesis still held: the
 * sentences' finished ones, the R live rows', the next step's. */
void s2s_search_free(s2s_search *s, s2s_sent *ss, int nb, s2s_row *rows, int R);

/* Chooses the next tokens of every sentence from step t's scores over the
 * R live rows (grouped by sentence): rows that live on go to s->next (in
 * live order, s->NR of them); finished ones into their sentence's set. The
 * live rows' buffers are taken (moved on or back to the pool). EOS is
 * masked (never chosen) while t + 1 < s->min_len. */
cg_status s2s_select(s2s_search *s, s2s_sent *ss, s2s_row *rows, int R, int t, const s2s_scores *so);

/* A sentence's result: its finished hypotheses best first (stable: ties in
 * finishing order), the best `nbest` (greedy: 1) moving into res; with
 * `attention` 0 the weights are freed. */
cg_status s2s_result(s2s_search *s, s2s_sent *sb, int nbest, int attention, cg_s2s_result *res);

/* Every sentence of ss[0..nb) that no live row (rows[0..R)) continues and
 * whose result is not out yet: its result into results[src] (s2s_result
 * with o's nbest and attention), its other finished hypotheses back to
 * the pool, and o->done told at once, so that a caller can use a short
 * sentence's result while the long ones of its batch still decode. */
/* Sentences the R rows continue (rows are grouped by sentence). */
int s2s_live_sentences(const s2s_row *rows, int R);

/* A stream's join of n sentences (either family): live[0..cap) flags the
 * slots the R rows hold, slot[0..n) gets the lowest free ones (so the
 * per-slot tensors stay small); returns the slots in use after (one past
 * the highest). */
int s2s_take_slots(const s2s_row *rows, int R, int cap, int n, int *live, int *slot);

/* The sentences o->keep gives up (asked once for each sentence that a live
 * row continues): their finished hypotheses and their rows (compacted in
 * rows[0..*R) with s->parent) back to the pool; they count as done with an
 * empty result. Nothing when o->keep is NULL. */
void s2s_drop(s2s_search *s, s2s_sent *ss, s2s_row *rows, int *R, const cg_s2s_options *o);

cg_status s2s_finish(s2s_search *s, s2s_sent *ss, int nb, const s2s_row *rows, int R, const cg_s2s_options *o,
                     cg_s2s_result *results);

#endif
