/* tu_s2s.h: the `done` reports of a translation, checked. */
#include "tu_s2s.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct reports {
    const cg_s2s_result *res;
    int n, calls;
    int *count, *order; /* [n]: reports of each source, the rank of its first */
    int *best_n, *tok0; /* [n]: the best hypothesis's tokens when reported */
} reports;

static void on_done(int i, const cg_s2s_result *r, void *user) {
    reports *p = user;
    ck_assert_int_ge(i, 0);
    ck_assert_int_lt(i, p->n);
    ck_assert_ptr_eq(r, &p->res[i]); /* the caller's own slot */
    if (p->count[i]++ == 0) p->order[i] = p->calls;
    p->calls++;
    p->best_n[i] = r->n_hyps ? r->hyps[0].n_tokens : -1;
    p->tok0[i] = r->n_hyps && r->hyps[0].n_tokens ? r->hyps[0].tokens[0] : -1;
}

cg_status tu_s2s_translate(cg_s2s *m, const cg_s2s_options *opt, int n, const int32_t *const *src, const int *len,
                           cg_s2s_result *res) {
    cg_s2s_options o = {.struct_size = sizeof o};
    if (opt) memcpy(&o, opt, opt->struct_size < sizeof o ? opt->struct_size : sizeof o);
    o.struct_size = sizeof o;
    ck_assert_msg(!o.done, "tu_s2s_translate sets its own done");
    reports p = {.res = res, .n = n};
    const size_t sz = sizeof(int) * (size_t)(n + 1);
    p.count = calloc(1, sz), p.order = calloc(1, sz), p.best_n = calloc(1, sz), p.tok0 = calloc(1, sz);
    ck_assert(p.count && p.order && p.best_n && p.tok0);
    o.done = on_done;
    o.user = &p;
    cg_status st = cg_s2s_translate(m, &o, n, src, len, res, NULL, NULL);
    if (!st) {
        for (int i = 0; i < n; i++) {
            ck_assert_msg(p.count[i] == 1, "source %d reported %d times", i, p.count[i]);
            const int bn = res[i].n_hyps ? res[i].hyps[0].n_tokens : -1;
            const int t0 = res[i].n_hyps && res[i].hyps[0].n_tokens ? res[i].hyps[0].tokens[0] : -1;
            ck_assert_msg(p.best_n[i] == bn && p.tok0[i] == t0, "source %d: its report is not its result", i);
        }
        /* greedy, one batch: a sentence of fewer steps is reported first */
        const int batch = o.batch ? o.batch : 32;
        for (int i = 0; o.beam <= 1 && batch >= n && i < n; i++)
            for (int j = 0; j < n; j++) {
                if (!res[i].n_hyps || !res[j].n_hyps) continue;
                if (res[i].hyps[0].n_steps < res[j].hyps[0].n_steps)
                    ck_assert_msg(p.order[i] < p.order[j],
                                  "source %d (%d steps) was reported after source %d (%d steps): it waited for the "
                                  "batch",
                                  i, res[i].hyps[0].n_steps, j, res[j].hyps[0].n_steps);
            }
    }
    free(p.count);
    free(p.order);
    free(p.best_n);
    free(p.tok0);
    return st;
}

typedef struct drops {
    int *asked, *reported;
} drops;

static int keep_even(int i, void *user) {
    drops *d = user;
    return i % 2 == 0 || ++d->asked[i] < 2;
}

static void count_done(int i, const cg_s2s_result *r, void *user) {
    (void)r;
    ((drops *)user)->reported[i]++;
}

void tu_s2s_check_drop(cg_s2s *m, const cg_s2s_options *opt, int n, const int32_t *const *src, const int *len) {
    cg_s2s_options o = {.struct_size = sizeof o};
    if (opt) memcpy(&o, opt, opt->struct_size < sizeof o ? opt->struct_size : sizeof o);
    o.struct_size = sizeof o;
    cg_s2s_result *ref = calloc((size_t)n + 1, sizeof *ref), *got = calloc((size_t)n + 1, sizeof *got);
    drops d = {calloc((size_t)n + 1, sizeof(int)), calloc((size_t)n + 1, sizeof(int))};
    ck_assert(ref && got && d.asked && d.reported);
    ck_assert_msg(cg_s2s_translate(m, &o, n, src, len, ref, NULL, NULL) == CG_OK, "%s", cg_last_error());
    o.keep = keep_even;
    o.done = count_done;
    o.user = &d;
    ck_assert_msg(cg_s2s_translate(m, &o, n, src, len, got, NULL, NULL) == CG_OK, "%s", cg_last_error());
    for (int i = 0; i < n; i++) {
        /* one whose best hypothesis took 3 steps or more was still decoding
         * after 2: it must have been dropped */
        const int must = i % 2 && ref[i].n_hyps && ref[i].hyps[0].n_steps >= 3;
        ck_assert_msg(!must || d.asked[i] >= 2, "source %d was not dropped (asked %d times)", i, d.asked[i]);
        if (i % 2 && d.asked[i] >= 2) { /* dropped */
            ck_assert_msg(got[i].n_hyps == 0 && d.reported[i] == 0, "dropped source %d: %d hypotheses, %d reports", i,
                          got[i].n_hyps, d.reported[i]);
            continue;
        }
        ck_assert_int_eq(d.reported[i], 1);
        tu_s2s_same_hyps("with its neighbours dropped", i, &ref[i], &got[i]);
    }
    for (int i = 0; i < n; i++) {
        cg_s2s_result_clear(&ref[i]);
        cg_s2s_result_clear(&got[i]);
    }
    free(ref);
    free(got);
    free(d.asked);
    free(d.reported);
}

void tu_s2s_same_hyps(const char *what, int i, const cg_s2s_result *ref, const cg_s2s_result *got) {
    ck_assert_msg(got->n_hyps == ref->n_hyps, "%s: source %d: %d hypotheses, %d", what, i, got->n_hyps, ref->n_hyps);
    for (int h = 0; h < ref->n_hyps; h++) {
        const cg_s2s_hyp *a = &got->hyps[h], *b = &ref->hyps[h];
        ck_assert_msg(a->n_tokens == b->n_tokens &&
                          !memcmp(a->tokens, b->tokens, sizeof(int32_t) * (size_t)b->n_tokens),
                      "%s: source %d hypothesis %d: other tokens", what, i, h);
        ck_assert_msg(fabs(a->score - b->score) <= 1e-5 * (1 + fabs(b->score)),
                      "%s: source %d hypothesis %d: score %.9g, %.9g", what, i, h, a->score, b->score);
    }
}

typedef struct stream_got {
    cg_s2s_result *res;
    int *count;
} stream_got;

static void stream_copy(int tag, const cg_s2s_result *r, void *user) {
    stream_got *g = user;
    g->count[tag]++;
    ck_assert_msg(cg_s2s_result_copy(&g->res[tag], r) == CG_OK, "%s", cg_last_error());
}

int tu_s2s_stream(cg_s2s *m, const cg_s2s_options *opt, int room, int every, int n, const int32_t *const *src,
                  const int *len, cg_s2s_result *res, cg_s2s_stream **out) {
    stream_got got = {res, calloc((size_t)n + 1, sizeof(int))};
    ck_assert_ptr_nonnull(got.count);
    cg_s2s_options o = {.struct_size = sizeof o};
    if (opt) memcpy(&o, opt, opt->struct_size < sizeof o ? opt->struct_size : sizeof o);
    o.struct_size = sizeof o;
    o.done = stream_copy;
    o.user = &got;
    cg_s2s_stream *st;
    ck_assert_msg(cg_s2s_stream_open(m, &o, room, &st) == CG_OK, "%s", cg_last_error());
    int next = 0, steps = 0;
    while (next < n || cg_s2s_stream_pending(st)) {
        if (next < n && cg_s2s_stream_room(st) > 0 && steps % every == 0) {
            ck_assert_int_eq(cg_s2s_stream_add(st, 1, &src[next], &len[next], &next), CG_OK);
            next++;
        }
        ck_assert_msg(cg_s2s_stream_step(st) == CG_OK, "a stream of room %d: %s", room, cg_last_error());
        ck_assert_int_lt(++steps, 100000);
    }
    for (int i = 0; i < n; i++) ck_assert_msg(got.count[i] == 1, "source %d reported %d times", i, got.count[i]);
    free(got.count);
    if (out) *out = st;
    else cg_s2s_stream_free(st);
    return steps;
}
