/* The search bookkeeping on its own (seq2seq/s2s_search.c), no model, no
 * plan: hand-made scores and hypotheses against hand-worked expectations
 * for the length penalty, the candidates' order and ties, greedy's choice,
 * a beam step (EOS into the finished set, the stop rule with and without a
 * length penalty, max_len), the k-best finished set, n-best results, a
 * batch of two sentences, and min_len's masking of EOS (greedy and beam,
 * from the whole logp and from top_logp / top_id). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "s2s.h"
#include "s2s_search.h"

static s2s_search S;

static void search_init(int k, int beam, int eos, double alpha) {
    memset(&S, 0, sizeof S);
    S.k = k;
    S.beam = beam;
    S.eos = eos;
    S.alpha = alpha;
    S.pool.cap = 64;
    S.pool.tok_cap = 16;
    S.pool.free_h = calloc(64, sizeof *S.pool.free_h);
    S.top = calloc((size_t)2 * (size_t)k + 1, sizeof *S.top);
    S.fin_tmp = calloc((size_t)k + 1, sizeof *S.fin_tmp);
    S.next = calloc(16, sizeof *S.next);
    S.parent = calloc(16, sizeof *S.parent);
    ck_assert(S.pool.free_h && S.top && S.fin_tmp && S.next && S.parent);
}

static void sent_init(s2s_sent *sb, int src, int max_len) {
    memset(sb, 0, sizeof *sb);
    sb->src = src;
    sb->len = 3;
    sb->max_len = max_len;
    sb->fins = calloc((size_t)S.k + 1, sizeof *sb->fins);
    ck_assert_ptr_nonnull(sb->fins);
}

/* A live row of sentence `sent` with `n` tokens and raw score `raw`. */
static void row_init(s2s_row *r, int sent, double raw, int n, const int32_t *toks) {
    r->sent = sent;
    ck_assert_int_eq(s2s_hyp_new(&S.pool, &r->h), 0);
    for (int i = 0; i < n; i++) r->h.toks[i] = toks[i];
    r->h.n = n;
    r->h.raw = raw;
}

/* A finished hypothesis with one token and a score, for the set. */
static s2s_hyp fin_hyp(int32_t tok) {
    s2s_hyp h;
    ck_assert_int_eq(s2s_hyp_new(&S.pool, &h), 0);
    h.toks[h.n++] = tok;
    h.ended = 1;
    return h;
}

static void sent_free(s2s_sent *sb) {
    for (int i = 0; i < sb->n_fins; i++) s2s_hyp_free(&sb->fins[i].h);
    free(sb->fins);
}

static void search_free(void) {
    for (int q = 0; q < S.NR; q++) s2s_hyp_free(&S.next[q].h);
    s2s_pool_free(&S.pool);
    free(S.top);
    free(S.fin_tmp);
    free(S.next);
    free(S.parent);
}

START_TEST(length_penalty) {
    ck_assert(s2s_lp(0, 3) == 1.0);
    ck_assert(s2s_lp(1, 1) == 1.0); /* (5 + 1) / 6 */
    ck_assert(s2s_lp(1, 7) == 2.0); /* 12 / 6 */
    ck_assert(s2s_lp(2, 7) == 4.0);
    ck_assert(fabs(s2s_lp(0.5, 19) - 2.0) < 1e-15); /* sqrt(24 / 6) */
}
END_TEST

/* Two rows (raw 0 and -1) over three tokens: row 0 logp {-1, -1, -3},
 * row 1 {0, -2, -0.5}, so the scores are {-1, -1, -3} and {-1, -3, -1.5}.
 * The best four: the three -1 in (row, token) order, then -1.5. */
START_TEST(candidates_order_and_ties) {
    search_init(2, 1, 9, 0);
    s2s_row rows[2];
    row_init(&rows[0], 0, 0.0, 0, NULL);
    row_init(&rows[1], 0, -1.0, 0, NULL);
    const float logp[6] = {-1, -1, -3, 0, -2, -0.5f};
    s2s_scores so = {.V = 3, .S = 3, .logp = logp};
    ck_assert_int_eq(s2s_candidates(&S, rows, &so, 0, 2), 4);
    const int want[4][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 2}};
    const double score[4] = {-1, -1, -1, -1.5};
    for (int j = 0; j < 4; j++) {
        ck_assert_int_eq(S.top[j].row, want[j][0]);
        ck_assert_int_eq(S.top[j].tok, want[j][1]);
        ck_assert(S.top[j].score == score[j]);
    }
    /* The same pairs given as top_logp / top_id (TK 4 per row, best first):
     * only the first 2k of a row are read. */
    const float tv[8] = {-1, -1, -3, -9, 0, -0.5f, -2, -9};
    const int32_t ti[8] = {0, 1, 2, 7, 0, 2, 1, 7};
    s2s_scores st = {.TK = 4, .V = 3, .S = 3, .top_v = tv, .top_i = ti};
    ck_assert_int_eq(s2s_candidates(&S, rows, &st, 0, 2), 4);
    for (int j = 0; j < 4; j++) {
        ck_assert_int_eq(S.top[j].row, want[j][0]);
        ck_assert_int_eq(S.top[j].tok, want[j][1]);
    }
    s2s_hyp_free(&rows[0].h);
    s2s_hyp_free(&rows[1].h);
    search_free();
}
END_TEST

/* Greedy: the first maximum wins (token 1 over token 2 at -0.5), the row
 * lives on; then EOS finishes it with the raw sum; a second sentence stops
 * at max_len without EOS. */
START_TEST(greedy_ties_and_stops) {
    search_init(1, 0, 3, 0);
    s2s_sent ss[2];
    sent_init(&ss[0], 5, 10);
    sent_init(&ss[1], 6, 1);
    s2s_row rows[2];
    row_init(&rows[0], 0, 0.0, 0, NULL);
    row_init(&rows[1], 1, 0.0, 0, NULL);
    const float lp0[8] = {-2, -0.5f, -0.5f, -3, -1, -1, -0.25f, -4};
    s2s_scores so = {.V = 4, .S = 3, .logp = lp0};
    ck_assert_int_eq(s2s_select(&S, ss, rows, 2, 0, &so), CG_OK);
    ck_assert_int_eq(S.NR, 1); /* sentence 1 reached max_len 1 */
    ck_assert_int_eq(S.parent[0], 0);
    ck_assert_int_eq(S.next[0].h.n, 1);
    ck_assert_int_eq(S.next[0].h.toks[0], 1);
    ck_assert(S.next[0].h.raw == -0.5);
    ck_assert_int_eq(ss[1].n_fins, 1);
    ck_assert_int_eq(ss[1].fins[0].h.ended, 0);
    ck_assert_int_eq(ss[1].fins[0].h.toks[0], 2);
    ck_assert(ss[1].fins[0].score == -0.25);
    rows[0] = S.next[0];
    S.NR = 0;
    /* step 1: EOS (token 3) is the best, -0.5 - 0.125 */
    const float lp1[4] = {-5, -2, -3, -0.125f};
    so.logp = lp1;
    ck_assert_int_eq(s2s_select(&S, ss, rows, 1, 1, &so), CG_OK);
    ck_assert_int_eq(S.NR, 0);
    ck_assert_int_eq(ss[0].n_fins, 1);
    ck_assert_int_eq(ss[0].fins[0].h.ended, 1);
    ck_assert_int_eq(ss[0].fins[0].h.n, 1); /* EOS not appended */
    ck_assert_int_eq(ss[0].fins[0].h.att_rows, 2);
    ck_assert(ss[0].fins[0].score == -0.625);
    search_free();
    sent_free(&ss[0]);
    sent_free(&ss[1]);
}
END_TEST

/* Beam k = 2, EOS = 0, with the rows and scores of candidates_order_and_ties:
 * (row 0, EOS) finishes at -1, (row 0, 1) lives, (row 1, EOS) finishes at
 * -1, (row 1, 2) lives at -1.5. Without a length penalty the best live -1
 * cannot beat the worst finished -1: the sentence stops. With alpha 1 and
 * max_len 10 it can (-1 / lp(10) = -0.4): two rows live on. */
static void beam_step(double alpha, int max_len, int t) {
    search_init(2, 1, 0, alpha);
    s2s_sent sb;
    sent_init(&sb, 0, max_len);
    s2s_row rows[2];
    const int32_t prev[2] = {4, 5};
    row_init(&rows[0], 0, 0.0, 2, prev);
    row_init(&rows[1], 0, -1.0, 1, prev + 1);
    const float logp[6] = {-1, -1, -3, 0, -2, -0.5f};
    s2s_scores so = {.V = 3, .S = 3, .logp = logp};
    ck_assert_int_eq(s2s_select(&S, &sb, rows, 2, t, &so), CG_OK);
    ck_assert_ptr_null(rows[0].h.toks); /* taken */
    const double lp_fin = s2s_lp(alpha, t + 1);
    if (t + 1 >= max_len) {
        /* max_len: the two EOS ones and the live ones compete for k = 2;
         * all score -1 / lp or worse, the first finished stay. */
        ck_assert_int_eq(S.NR, 0);
        ck_assert_int_eq(sb.n_fins, 2);
        ck_assert_int_eq(sb.fins[0].h.n, 2);
        ck_assert_int_eq(sb.fins[1].h.n, 1);
        ck_assert_int_eq(sb.fins[1].h.toks[0], 5);
    } else if (alpha == 0) {
        ck_assert_int_eq(S.NR, 0);
        ck_assert_int_eq(sb.n_fins, 2);
        ck_assert(sb.fins[0].score == -1 && sb.fins[1].score == -1);
        ck_assert_int_eq(sb.fins[0].h.n, 2); /* EOS not appended */
        ck_assert_int_eq(sb.fins[0].h.ended, 1);
        ck_assert_int_eq(sb.fins[1].h.n, 1);
    } else {
        ck_assert_int_eq(S.NR, 2);
        ck_assert_int_eq(S.parent[0], 0);
        ck_assert_int_eq(S.parent[1], 1);
        ck_assert_int_eq(S.next[0].h.n, 3);
        ck_assert_int_eq(S.next[0].h.toks[2], 1);
        ck_assert(S.next[0].h.raw == -1);
        ck_assert_int_eq(S.next[1].h.n, 2);
        ck_assert_int_eq(S.next[1].h.toks[0], 5);
        ck_assert_int_eq(S.next[1].h.toks[1], 2);
        ck_assert(S.next[1].h.raw == -1.5);
        ck_assert_int_eq(sb.n_fins, 2);
        ck_assert(sb.fins[0].score == -1 / lp_fin);
    }
    search_free();
    sent_free(&sb);
}

START_TEST(beam_stop_rule) {
    beam_step(0, 10, 0);
    beam_step(1, 10, 0);
    /* one step from max_len, alpha 0: as settled */
    beam_step(0, 1, 0);
}
END_TEST

/* alpha 1 at max_len (t = 4, max_len 5): the finished score -1 / lp(5) =
 * -0.6; the live ones finish as they stand, -1 / lp(5) = -0.6 (does not
 * beat a tie) and -1.5 / lp(5): the two EOS ones stay. */
START_TEST(beam_max_len) { beam_step(1, 5, 4); }
END_TEST

/* The k-best finished set keeps finishing order and drops the worst (the
 * last finished among equals); results sort best first, ties in finishing
 * order, n-best cut. */
START_TEST(finished_set_and_nbest) {
    search_init(3, 1, 0, 0);
    s2s_sent sb;
    sent_init(&sb, 0, 10);
    const double scores[] = {-2, -1, -2, -1.5, -1, -0.5};
    /* k 3: A -2, B -1, C -2 fill the set; D -1.5 drops C (the later -2);
     * E -1 drops A; F -0.5 drops D. */
    for (int i = 0; i < 6; i++) {
        s2s_hyp h = fin_hyp(100 + i);
        s2s_keep_best(&S, &sb, &h, scores[i]);
    }
    ck_assert_int_eq(sb.n_fins, 3);
    const int order[3] = {101, 104, 105}; /* B, E, F in finishing order */
    for (int i = 0; i < 3; i++) ck_assert_int_eq(sb.fins[i].h.toks[0], order[i]);
    /* a tie with the worst does not enter */
    s2s_hyp g = fin_hyp(200);
    s2s_keep_best(&S, &sb, &g, -1);
    ck_assert_int_eq(sb.n_fins, 3);
    ck_assert_int_eq(sb.fins[2].h.toks[0], 105);
    /* stop rule: worst -1; a live -0.9 over lp(10) = 1 (alpha 0) may still
     * enter, -1 may not */
    ck_assert_int_eq(s2s_settled(&S, &sb, -0.9, 1), 0);
    ck_assert_int_eq(s2s_settled(&S, &sb, -1.0, 1), 1);
    S.alpha = 1; /* lp(10) = 2.5: -2.5 / 2.5 = -1 settles, -2.4 does not */
    ck_assert_int_eq(s2s_settled(&S, &sb, -2.5, 1), 1);
    ck_assert_int_eq(s2s_settled(&S, &sb, -2.4, 1), 0);
    cg_s2s_result res;
    ck_assert_int_eq(s2s_result(&S, &sb, 2, 0, &res), CG_OK);
    ck_assert_int_eq(res.n_hyps, 2);
    ck_assert_int_eq(res.src_len, 3);
    ck_assert_int_eq(res.hyps[0].tokens[0], 105); /* -0.5 */
    ck_assert_int_eq(res.hyps[1].tokens[0], 101); /* -1, finished before E */
    ck_assert(res.hyps[0].score == -0.5 && res.hyps[1].score == -1);
    ck_assert_ptr_null(res.hyps[0].attention);
    cg_s2s_result_clear(&res);
    search_free();
    sent_free(&sb);
}
END_TEST

/* Two sentences in one batch: the next rows stay grouped by sentence, their
 * parents are rows of the whole batch, and each sentence's EOS goes to its
 * own set. k = 1 beam (EOS 2), sentence 0 on row 0, sentence 1 on row 1. */
START_TEST(batch_of_two) {
    search_init(1, 1, 2, 0);
    s2s_sent ss[2];
    sent_init(&ss[0], 7, 10);
    sent_init(&ss[1], 8, 10);
    s2s_row rows[2];
    row_init(&rows[0], 0, -1.0, 0, NULL);
    row_init(&rows[1], 1, -2.0, 0, NULL);
    /* row 0: token 1 (-1.25) live; row 1: EOS (-2.5) then token 0 (-3) */
    const float logp[6] = {-3, -0.25f, -4, -1, -3, -0.5f};
    s2s_scores so = {.V = 3, .S = 3, .logp = logp};
    ck_assert_int_eq(s2s_select(&S, ss, rows, 2, 0, &so), CG_OK);
    /* sentence 1: EOS finishes at -2.5; its live token 0 at -3 cannot beat
     * it (settled), so only sentence 0 lives on */
    ck_assert_int_eq(S.NR, 1);
    ck_assert_int_eq(S.next[0].sent, 0);
    ck_assert_int_eq(S.parent[0], 0);
    ck_assert_int_eq(S.next[0].h.toks[0], 1);
    ck_assert(S.next[0].h.raw == -1.25);
    ck_assert_int_eq(ss[0].n_fins, 0);
    ck_assert_int_eq(ss[1].n_fins, 1);
    ck_assert(ss[1].fins[0].score == -2.5);
    search_free();
    sent_free(&ss[0]);
    sent_free(&ss[1]);
}
END_TEST

/* Greedy with min_len 3 (EOS = 3), from the whole logp: at steps 0 and 1
 * EOS is the best token but masked (t + 1 < 3), so the second best is
 * taken: token 1 at -1, then token 2 at -0.5 (over token 0 at -2); at step
 * 2 (the third token) EOS may end it: raw -1 - 0.5 - 0.125 = -1.625, two
 * tokens, three attention rows. */
START_TEST(min_len_masks_eos_greedy) {
    search_init(1, 0, 3, 0);
    S.min_len = 3;
    s2s_sent sb;
    sent_init(&sb, 0, 10);
    s2s_row rows[1];
    row_init(&rows[0], 0, 0.0, 0, NULL);
    const float lp0[4] = {-2, -1, -1.5f, -0.25f}, lp1[4] = {-2, -3, -0.5f, -0.125f};
    s2s_scores so = {.V = 4, .S = 3, .logp = lp0};
    ck_assert_int_eq(s2s_select(&S, &sb, rows, 1, 0, &so), CG_OK);
    ck_assert_int_eq(S.mask_eos, 1);
    ck_assert_int_eq(S.NR, 1);
    ck_assert_int_eq(S.next[0].h.n, 1);
    ck_assert_int_eq(S.next[0].h.toks[0], 1);
    ck_assert(S.next[0].h.raw == -1);
    rows[0] = S.next[0];
    S.NR = 0;
    so.logp = lp1;
    ck_assert_int_eq(s2s_select(&S, &sb, rows, 1, 1, &so), CG_OK);
    ck_assert_int_eq(S.NR, 1);
    ck_assert_int_eq(S.next[0].h.n, 2);
    ck_assert_int_eq(S.next[0].h.toks[1], 2);
    ck_assert(S.next[0].h.raw == -1.5);
    rows[0] = S.next[0];
    S.NR = 0;
    ck_assert_int_eq(s2s_select(&S, &sb, rows, 1, 2, &so), CG_OK);
    ck_assert_int_eq(S.mask_eos, 0);
    ck_assert_int_eq(S.NR, 0);
    ck_assert_int_eq(sb.n_fins, 1);
    ck_assert_int_eq(sb.fins[0].h.ended, 1);
    ck_assert_int_eq(sb.fins[0].h.n, 2);
    ck_assert_int_eq(sb.fins[0].h.att_rows, 3);
    ck_assert(sb.fins[0].score == -1.625);
    search_free();
    sent_free(&sb);
}
END_TEST

/* The same first step from top_logp / top_id (TK 2, best first: EOS, then
 * token 1): the second entry is taken; min_len 0 and 1 take EOS (the
 * sentence ends at step 0). A top_id listing EOS alone under the mask is an
 * error, not an EOS. */
START_TEST(min_len_masks_eos_top_k) {
    const float tv[2] = {-0.25f, -1};
    const int32_t ti[2] = {3, 1}, only_eos[2] = {3, 3};
    for (int min_len = 0; min_len <= 2; min_len++) {
        search_init(1, 0, 3, 0);
        S.min_len = min_len;
        s2s_sent sb;
        sent_init(&sb, 0, 10);
        s2s_row rows[1];
        row_init(&rows[0], 0, 0.0, 0, NULL);
        s2s_scores so = {.TK = 2, .V = 4, .S = 3, .top_v = tv, .top_i = ti};
        ck_assert_int_eq(s2s_select(&S, &sb, rows, 1, 0, &so), CG_OK);
        if (min_len < 2) {
            ck_assert_int_eq(S.NR, 0);
            ck_assert_int_eq(sb.n_fins, 1);
            ck_assert_int_eq(sb.fins[0].h.ended, 1);
            ck_assert(sb.fins[0].score == -0.25);
        } else {
            ck_assert_int_eq(S.NR, 1);
            ck_assert_int_eq(S.next[0].h.toks[0], 1);
            ck_assert(S.next[0].h.raw == -1);
            rows[0] = S.next[0];
            S.NR = 0;
            so.top_i = only_eos;
            ck_assert_int_eq(s2s_select(&S, &sb, rows, 1, 0, &so), CG_ERR_VERIFY);
            s2s_hyp_free(&rows[0].h);
        }
        search_free();
        sent_free(&sb);
    }
}
END_TEST

/* Beam k = 2 (EOS = 0) with min_len 5 over the rows and scores of
 * candidates_order_and_ties: without EOS the best four are (row 0, 1) -1,
 * (row 1, 2) -1.5, (row 0, 2) -3, (row 1, 1) -3 (the tie: lower row), from
 * the whole logp and from top_logp / top_id alike; the step keeps the first
 * two alive and finishes nothing (unmasked, beam_step finishes two). */
START_TEST(min_len_masks_eos_beam) {
    search_init(2, 1, 0, 0);
    s2s_row rows[2];
    row_init(&rows[0], 0, 0.0, 0, NULL);
    row_init(&rows[1], 0, -1.0, 0, NULL);
    const float logp[6] = {-1, -1, -3, 0, -2, -0.5f};
    const float tv[6] = {-1, -1, -3, 0, -0.5f, -2};
    const int32_t ti[6] = {0, 1, 2, 0, 2, 1};
    s2s_scores so = {.V = 3, .S = 3, .logp = logp}, st = {.TK = 3, .V = 3, .S = 3, .top_v = tv, .top_i = ti};
    const int want[4][2] = {{0, 1}, {1, 2}, {0, 2}, {1, 1}};
    const double score[4] = {-1, -1.5, -3, -3};
    S.mask_eos = 1;
    for (int pass = 0; pass < 2; pass++) {
        ck_assert_int_eq(s2s_candidates(&S, rows, pass ? &st : &so, 0, 2), 4);
        for (int j = 0; j < 4; j++) {
            ck_assert_int_eq(S.top[j].row, want[j][0]);
            ck_assert_int_eq(S.top[j].tok, want[j][1]);
            ck_assert(S.top[j].score == score[j]);
        }
    }
    S.min_len = 5;
    s2s_sent sb;
    sent_init(&sb, 0, 10);
    ck_assert_int_eq(s2s_select(&S, &sb, rows, 2, 0, &so), CG_OK);
    ck_assert_int_eq(sb.n_fins, 0);
    ck_assert_int_eq(S.NR, 2);
    ck_assert_int_eq(S.parent[0], 0);
    ck_assert_int_eq(S.next[0].h.toks[0], 1);
    ck_assert(S.next[0].h.raw == -1);
    ck_assert_int_eq(S.parent[1], 1);
    ck_assert_int_eq(S.next[1].h.toks[0], 2);
    ck_assert(S.next[1].h.raw == -1.5);
    search_free();
    sent_free(&sb);
}
END_TEST

/* cg_s2s_result_copy: every hypothesis, token and attention weight, in
 * memory of its own (the copy outlives a cleared source); NULL refused. */
START_TEST(result_copy_is_deep) {
    cg_s2s_result src = {.src_len = 3, .n_hyps = 2};
    src.hyps = calloc(2, sizeof *src.hyps);
    ck_assert_ptr_nonnull(src.hyps);
    for (int h = 0; h < 2; h++) {
        cg_s2s_hyp *x = &src.hyps[h];
        x->n_tokens = 4 - h;
        x->n_steps = x->n_tokens + 1;
        x->score = -1.5 * (h + 1);
        x->tokens = malloc(sizeof(int32_t) * (size_t)x->n_tokens);
        x->attention = h ? NULL : malloc(sizeof(float) * (size_t)(x->n_steps * src.src_len));
        ck_assert_ptr_nonnull(x->tokens);
        for (int t = 0; t < x->n_tokens; t++) x->tokens[t] = 10 * h + t;
        for (int k = 0; x->attention && k < x->n_steps * src.src_len; k++) x->attention[k] = 0.125f * (float)k;
    }
    cg_s2s_result dst;
    ck_assert_int_eq(cg_s2s_result_copy(&dst, &src), CG_OK);
    ck_assert_ptr_ne(dst.hyps, src.hyps);
    cg_s2s_result_clear(&src);
    ck_assert_int_eq(dst.n_hyps, 2);
    ck_assert_int_eq(dst.src_len, 3);
    for (int h = 0; h < 2; h++) {
        const cg_s2s_hyp *y = &dst.hyps[h];
        ck_assert_int_eq(y->n_tokens, 4 - h);
        ck_assert_int_eq(y->n_steps, 5 - h);
        ck_assert(y->score == -1.5 * (h + 1));
        for (int t = 0; t < y->n_tokens; t++) ck_assert_int_eq(y->tokens[t], 10 * h + t);
        ck_assert(!y->attention == (h == 1));
        for (int k = 0; y->attention && k < y->n_steps * 3; k++) ck_assert(y->attention[k] == 0.125f * (float)k);
    }
    cg_s2s_result_clear(&dst);
    cg_s2s_result empty = {0};
    ck_assert_int_eq(cg_s2s_result_copy(&dst, &empty), CG_OK);
    ck_assert_int_eq(dst.n_hyps, 0);
    cg_s2s_result_clear(&dst);
    ck_assert_int_eq(cg_s2s_result_copy(NULL, &empty), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_s2s_result_copy(&dst, NULL), CG_ERR_INVALID_ARGUMENT);
}
END_TEST

int main(void) {
    Suite *s = suite_create("s2s_search");
    TCase *tc = tcase_create("search");
    tcase_add_test(tc, length_penalty);
    tcase_add_test(tc, candidates_order_and_ties);
    tcase_add_test(tc, min_len_masks_eos_greedy);
    tcase_add_test(tc, min_len_masks_eos_top_k);
    tcase_add_test(tc, min_len_masks_eos_beam);
    tcase_add_test(tc, greedy_ties_and_stops);
    tcase_add_test(tc, beam_stop_rule);
    tcase_add_test(tc, beam_max_len);
    tcase_add_test(tc, finished_set_and_nbest);
    tcase_add_test(tc, batch_of_two);
    tcase_add_test(tc, result_copy_is_deep);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
