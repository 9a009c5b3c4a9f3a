/* `clgraph bench` end to end (its JSON parses with every key and sane
 * values; no allocation or OpenCL object per decoder step on the CPU), and
 * cg_s2s_options.min_len, which bench sets to max_len to decode exactly T
 * steps: no EOS before min_len, the free decode's results where it makes no
 * difference, greedy's prefix where it does, min_len = max_len = T runs the
 * decoder exactly T times, bad values refused, and no allocation per step
 * in the decoder (counted by wrapping malloc). */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clgraph/clgraph.h"
#include "clgraph/seq2seq.h"
#include "test_util.h"

/* ---- counting allocations (glibc, not under a sanitizer) ---- */
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define COUNT_ALLOCS 1
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
static volatile int counting;
static long n_allocs;

void *malloc(size_t n) {
    if (counting) __atomic_add_fetch(&n_allocs, 1, __ATOMIC_RELAXED);
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size) {
    if (counting) __atomic_add_fetch(&n_allocs, 1, __ATOMIC_RELAXED);
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n) {
    if (counting) __atomic_add_fetch(&n_allocs, 1, __ATOMIC_RELAXED);
    return __libc_realloc(p, n);
}
#else
#define COUNT_ALLOCS 0
#endif

static void model_dir(const char *variant, char *buf, size_t size) {
    snprintf(buf, size, "%s/tests/golden/s2s/%s", tu_src_dir(), variant);
}

static void setup(void) { tu_setup_dir("bench"); }

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsNumber(v), "'%s' is missing or not a number in %s", key, tu_out);
    return v->valuedouble;
}

static const cJSON *obj(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsObject(v), "'%s' is missing or not an object in %s", key, tu_out);
    return v;
}

static void check_stat3(const cJSON *o, const char *key) {
    const cJSON *s = obj(o, key);
    double med = num(s, "median"), mn = num(s, "min"), mx = num(s, "max");
    ck_assert_msg(mn > 0 && mn <= med && med <= mx, "%s: min %g median %g max %g", key, mn, med, mx);
}

/* Parses the bench JSON and checks what every run must satisfy. */
static cJSON *check_bench_json(const char *model, int batch, int beam, int steps, int runs) {
    cJSON *o = cJSON_Parse(tu_out);
    ck_assert_msg(o != NULL && cJSON_IsObject(o), "not a JSON object: %s", tu_out);
    const cJSON *mv = cJSON_GetObjectItemCaseSensitive(o, "model");
    ck_assert(cJSON_IsString(mv) && !strcmp(mv->valuestring, model));
    const cJSON *dv = cJSON_GetObjectItemCaseSensitive(o, "device");
    ck_assert(cJSON_IsString(dv) && !strcmp(dv->valuestring, "cpu"));
    ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(o, "place"));
    ck_assert_int_eq((int)num(o, "batch"), batch);
    ck_assert_int_eq((int)num(o, "beam"), beam);
    ck_assert_int_eq((int)num(o, "src_len"), 30);
    ck_assert_int_eq((int)num(o, "steps"), steps);
    ck_assert_int_eq((int)num(o, "runs"), runs);
    check_stat3(o, "ms_per_step");
    check_stat3(o, "tokens_per_s");
    const cJSON *ms = obj(o, "ms_per_step"), *tps = obj(o, "tokens_per_s");
    /* tokens/s = batch x steps / (steps x ms per step), run by run */
    double expect = batch * 1e3 / num(ms, "max");
    ck_assert_msg(num(tps, "min") > expect * 0.999 && num(tps, "min") < expect * 1.001, "tokens/s %g vs %g",
                  num(tps, "min"), expect);
    const cJSON *ft = obj(o, "first_token_ms");
    ck_assert(num(ft, "cold") > 0 && num(ft, "cold") < 120000);
    ck_assert(num(ft, "warm") > 0 && num(ft, "warm") < 120000);
    ck_assert(num(o, "peak_rss_mb") > 1 && num(o, "peak_rss_mb") < 100000);
    ck_assert_msg(num(o, "allocs_per_step") == 0, "allocations per step: %g", num(o, "allocs_per_step"));
    ck_assert_msg(num(o, "device_objects_per_step") == 0, "device objects per step: %g",
                  num(o, "device_objects_per_step"));
    ck_assert(num(o, "decoder_weight_mb") > 0);
    return o;
}

START_TEST(bench_json) {
    char model[512];
    model_dir("gru_additive_bahdanau_words", model, sizeof model);
    const char *a[] = {"bench", model, "--steps", "4", "--runs", "2", "--json", NULL};
    ck_assert_msg(tu_run_cli(a, NULL, NULL) == 0, "stderr: %s", tu_err);
    cJSON *o = check_bench_json(model, 1, 1, 4, 2);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(o, "machine"));
    /* The decoder's weights: the same number the library reports. */
    cg_context *ctx;
    cg_s2s *m;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    ck_assert_msg(cg_s2s_load(ctx, model, NULL, NULL, &m) == CG_OK, "%s", cg_last_error());
    size_t wb = cg_s2s_decoder_weight_bytes(m);
    ck_assert(wb > 0 && wb % 4 == 0);
    ck_assert_msg(num(o, "decoder_weight_mb") == (double)wb / (1024.0 * 1024.0), "%g vs %zu bytes",
                  num(o, "decoder_weight_mb"), wb);
    cg_s2s_free(m);
    cg_context_free(ctx);
    cJSON_Delete(o);
}
END_TEST

START_TEST(bench_beam_lstm) {
    char model[512];
    model_dir("lstm_additive_bi_luong_chars", model, sizeof model);
    const char *a[] = {"bench", model,    "--batch", "3",        "--beam", "4",      "--steps",
                       "6",     "--runs", "3",       "--warmup", "1",      "--json", NULL};
    ck_assert_msg(tu_run_cli(a, NULL, NULL) == 0, "stderr: %s", tu_err);
    cJSON *o = check_bench_json(model, 3, 4, 6, 3);
    cJSON_Delete(o);
    /* The human table. */
    const char *h[] = {"bench", model, "--steps", "3", "--runs", "1", NULL};
    ck_assert_msg(tu_run_cli(h, NULL, NULL) == 0, "stderr: %s", tu_err);
    ck_assert_ptr_nonnull(strstr(tu_out, "ms per step"));
    ck_assert_ptr_nonnull(strstr(tu_out, "first token, cold"));
    ck_assert_ptr_nonnull(strstr(tu_out, "decoder weights"));
}
END_TEST

START_TEST(bench_machine) {
    char model[512];
    model_dir("gru_dot_luong_dec2_chars", model, sizeof model);
    const char *a[] = {"bench", model, "--steps", "2", "--runs", "1", "--warmup", "1", "--json", "--machine", NULL};
    ck_assert_msg(tu_run_cli(a, NULL, NULL) == 0, "stderr: %s", tu_err);
    cJSON *o = check_bench_json(model, 1, 1, 2, 1);
    const cJSON *mc = obj(o, "machine"), *fl = obj(o, "floors");
    ck_assert(num(mc, "read_gbps") > 0.1 && num(mc, "read_gbps") < 100000);
    ck_assert(num(mc, "sgemm_gflops") > 0.1 && num(mc, "sgemm_gflops") < 1e7);
    ck_assert(num(mc, "threads") >= 1);
    double wb = num(o, "decoder_weight_mb") * 1024.0 * 1024.0;
    double f1 = wb / (num(mc, "read_gbps") * 1e9) * 1e3;
    ck_assert_msg(num(fl, "batch1_ms_per_step") > f1 * 0.999 && num(fl, "batch1_ms_per_step") < f1 * 1.001, "%g vs %g",
                  num(fl, "batch1_ms_per_step"), f1);
    ck_assert(num(fl, "compute_ms_per_step") > 0);
    cJSON_Delete(o);
}
END_TEST

START_TEST(bench_bad_command_lines) {
    char model[512];
    model_dir("gru_additive_bahdanau_words", model, sizeof model);
    const char *a1[] = {"bench", NULL};
    ck_assert_int_eq(tu_run_cli(a1, NULL, NULL), 2);
    const char *a2[] = {"bench", model, "--steps", "0", NULL};
    ck_assert_int_eq(tu_run_cli(a2, NULL, NULL), 2);
    ck_assert_ptr_nonnull(strstr(tu_err, "--steps"));
    const char *a3[] = {"bench", model, "--frobnicate", NULL};
    ck_assert_int_eq(tu_run_cli(a3, NULL, NULL), 2);
    const char *a4[] = {"bench", "/nonexistent/model", NULL};
    ck_assert_int_eq(tu_run_cli(a4, NULL, NULL), 1);
    ck_assert_ptr_nonnull(strstr(tu_err, "/nonexistent/model"));
    const char *h[] = {"--help", NULL};
    ck_assert_int_eq(tu_run_cli(h, NULL, NULL), 0);
    ck_assert_ptr_nonnull(strstr(tu_out, "bench MODEL_DIR"));
}
END_TEST

/* ---- min_len through the library ---- */

static cg_s2s *load_model(const char *variant, cg_context **ctx) {
    char dir[512];
    model_dir(variant, dir, sizeof dir);
    cg_s2s *m;
    ck_assert_int_eq(cg_context_create(NULL, ctx), CG_OK);
    ck_assert_msg(cg_s2s_load(*ctx, dir, NULL, NULL, &m) == CG_OK, "%s", cg_last_error());
    return m;
}

/* Reads sources.ids of a variant: up to `max` sources. */
static int read_sources(const char *variant, int32_t src[][64], int *len, int max) {
    char path[600];
    snprintf(path, sizeof path, "%s/tests/golden/s2s/%s/sources.ids", tu_src_dir(), variant);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[4096];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        len[n] = 0;
        char *p = line, *end;
        for (long v; len[n] < 64 && (v = strtol(p, &end, 10), end != p); p = end) src[n][len[n]++] = (int32_t)v;
        n++;
    }
    fclose(f);
    return n;
}

/* eos_id of a variant's config.json (default 2). */
static int config_eos(const char *variant) {
    char path[600];
    static char text[65536];
    snprintf(path, sizeof path, "%s/tests/golden/s2s/%s/config.json", tu_src_dir(), variant);
    tu_slurp(path, text, sizeof text);
    cJSON *c = cJSON_Parse(text);
    ck_assert_ptr_nonnull(c);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(c, "eos_id");
    int eos = cJSON_IsNumber(e) ? e->valueint : 2;
    cJSON_Delete(c);
    return eos;
}

/* The sources of a variant with the model, and their free decode. */
typedef struct mcase {
    const char *variant;
    cg_context *ctx;
    cg_s2s *m;
    int32_t src[8][64];
    const int32_t *srcp[8];
    int len[8], n, eos, beam;
    cg_s2s_result free_res[8];
    int free_steps; /* the longest free decode, in steps */
} mcase;

static cg_s2s_options mopts(const mcase *c) {
    cg_s2s_options o = {.struct_size = sizeof o, .beam = c->beam, .nbest = c->beam > 1 ? 2 : 0, .attention = 1};
    return o;
}

static void mcase_open(mcase *c, const char *variant, int beam) {
    memset(c, 0, sizeof *c);
    c->variant = variant;
    c->beam = beam;
    c->m = load_model(variant, &c->ctx);
    c->n = read_sources(variant, c->src, c->len, 8);
    for (int i = 0; i < c->n; i++) c->srcp[i] = c->src[i];
    c->eos = config_eos(variant);
    const cg_s2s_options o = mopts(c);
    ck_assert_msg(cg_s2s_translate(c->m, &o, c->n, c->srcp, c->len, c->free_res, NULL, NULL) == CG_OK, "%s",
                  cg_last_error());
    for (int i = 0; i < c->n; i++)
        for (int h = 0; h < c->free_res[i].n_hyps; h++)
            if (c->free_res[i].hyps[h].n_steps > c->free_steps) c->free_steps = c->free_res[i].hyps[h].n_steps;
}

static void mcase_close(mcase *c) {
    for (int i = 0; i < c->n; i++) cg_s2s_result_clear(&c->free_res[i]);
    cg_s2s_free(c->m);
    cg_context_free(c->ctx);
}

#define TOL_BATCH 1e-5 /* scores and attention of one source in other batches (as test_s2s) */

static void same_floats(const char *what, const float *x, const float *y, int n) {
    for (int k = 0; k < n; k++)
        ck_assert_msg(fabsf(x[k] - y[k]) <= TOL_BATCH, "%s: attention element %d: %.8f vs %.8f", what, k, x[k], y[k]);
}

/* a and b: the same hypotheses (tokens and steps exactly, scores and
 * attention within TOL_BATCH). */
static void same_results(const char *what, const mcase *c, int i, const cg_s2s_result *a, const cg_s2s_result *b) {
    ck_assert_int_eq(a->n_hyps, b->n_hyps);
    for (int h = 0; h < a->n_hyps; h++) {
        const cg_s2s_hyp *x = &a->hyps[h], *y = &b->hyps[h];
        ck_assert_msg(x->n_tokens == y->n_tokens && x->n_steps == y->n_steps,
                      "%s: %s source %d hypothesis %d: "
                      "%d tokens in %d steps, not %d in %d",
                      c->variant, what, i, h, y->n_tokens, y->n_steps, x->n_tokens, x->n_steps);
        ck_assert(!memcmp(x->tokens, y->tokens, sizeof(int32_t) * (size_t)x->n_tokens));
        ck_assert_msg(fabs(x->score - y->score) <= TOL_BATCH, "%s: %s source %d: score %.9g, not %.9g", c->variant,
                      what, i, y->score, x->score);
        same_floats(what, x->attention, y->attention, x->n_steps * c->len[i]);
    }
}

/* Greedy result b with min_len against the free decode a of source i
 * (max_len ml): both choose alike until a takes EOS (or ends at its
 * max_len), so they share a's tokens up to there and their attention rows;
 * a's EOS within [min_len, ml] steps is b's too (the same result), one
 * earlier is masked in b (another token follows). */
static void greedy_vs_free(const mcase *c, int i, int min_len, int ml, const cg_s2s_result *res) {
    const cg_s2s_hyp *a = &c->free_res[i].hyps[0], *b = &res->hyps[0];
    const int a_eos = a->n_steps > a->n_tokens;
    if (a_eos && a->n_steps >= min_len && a->n_steps <= ml) {
        same_results("min_len that masks nothing", c, i, &c->free_res[i], res);
        return;
    }
    const int common = a->n_tokens < ml ? a->n_tokens : ml;
    ck_assert_int_ge(b->n_tokens, common);
    for (int t = 0; t < common; t++) ck_assert_int_eq(a->tokens[t], b->tokens[t]);
    const int rows = a->n_steps < b->n_steps ? a->n_steps : b->n_steps;
    same_floats(c->variant, a->attention, b->attention, rows * c->len[i]);
    if (a_eos && a->n_steps < min_len && a->n_steps <= ml)
        ck_assert_msg(b->n_tokens > a->n_tokens, "%s: source %d: EOS at step %d below min_len %d was not masked",
                      c->variant, i, a->n_steps - 1, min_len);
}

/* Decodes with min_len (and max_len; 0: the default) and checks the rule:
 * each hypothesis ends after at least min_len steps (EOS included) and at
 * most max_len, with no EOS among its tokens; greedy against the free
 * decode (greedy_vs_free). Returns the decoder runs. */
static uint64_t check_min_len(const mcase *c, int min_len, int max_len) {
    cg_s2s_options o = mopts(c);
    o.min_len = min_len;
    o.max_len = max_len;
    o.batch = c->n; /* one batch: the decoder runs once per step */
    cg_s2s_result res[8];
    cg_plan_stats before, after;
    const int counted = min_len == max_len; /* the runs are counted without the check's own */
    if (counted) tu_check_runs_pause();
    ck_assert_int_eq(cg_s2s_stats(c->m, NULL, &before), CG_OK);
    ck_assert_msg(cg_s2s_translate(c->m, &o, c->n, c->srcp, c->len, res, NULL, NULL) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_s2s_stats(c->m, NULL, &after), CG_OK);
    if (counted) tu_check_runs_resume();
    for (int i = 0; i < c->n; i++) {
        const int ml = max_len ? max_len : 2 * c->len[i] + 10 > min_len ? 2 * c->len[i] + 10 : min_len;
        ck_assert_int_eq(res[i].n_hyps, c->free_res[i].n_hyps);
        for (int h = 0; h < res[i].n_hyps; h++) {
            const cg_s2s_hyp *y = &res[i].hyps[h];
            ck_assert_msg(y->n_steps >= min_len && y->n_steps <= ml,
                          "%s beam %d min_len %d max_len %d: source %d "
                          "hypothesis %d ended after %d steps",
                          c->variant, c->beam, min_len, ml, i, h, y->n_steps);
            ck_assert(y->n_tokens == y->n_steps || y->n_tokens == y->n_steps - 1);
            for (int t = 0; t < y->n_tokens; t++) ck_assert_int_ne(y->tokens[t], c->eos);
        }
        if (c->beam <= 1) greedy_vs_free(c, i, min_len, ml, &res[i]);
    }
    for (int i = 0; i < c->n; i++) cg_s2s_result_clear(&res[i]);
    return after.runs - before.runs;
}

static void check_min_len_cases(const char *variant, int beam) {
    mcase c;
    mcase_open(&c, variant, beam);
    /* 0 and 1: no minimum, today's results */
    for (int ml = 0; ml <= 1; ml++) {
        cg_s2s_options o = mopts(&c);
        o.min_len = ml;
        cg_s2s_result res[8];
        ck_assert_msg(cg_s2s_translate(c.m, &o, c.n, c.srcp, c.len, res, NULL, NULL) == CG_OK, "%s", cg_last_error());
        for (int i = 0; i < c.n; i++) {
            same_results("min_len 0 or 1", &c, i, &c.free_res[i], &res[i]);
            cg_s2s_result_clear(&res[i]);
        }
    }
    /* past the shortest free decodes, past every one (the default max_len
     * raised), and within an explicit max_len */
    int shortest = c.free_steps;
    for (int i = 0; i < c.n; i++)
        if (c.free_res[i].hyps[0].n_steps < shortest) shortest = c.free_res[i].hyps[0].n_steps;
    check_min_len(&c, shortest + 2, 0);
    check_min_len(&c, c.free_steps + 1, 0);
    check_min_len(&c, shortest + 1, c.free_steps + 4);
    /* min_len = max_len = T, longer than any free decode: every
     * hypothesis T steps, the decoder run T times (bench's decode) */
    const int T = c.free_steps + 3;
    ck_assert_uint_eq(check_min_len(&c, T, T), (uint64_t)T);
    /* refused: min_len over max_len, negative; min_len over the default
     * max_len is not */
    cg_s2s_options o = mopts(&c);
    cg_s2s_result res[8];
    o.max_len = 3;
    o.min_len = 4;
    ck_assert_int_eq(cg_s2s_translate(c.m, &o, c.n, c.srcp, c.len, res, NULL, NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "min_len 4 is larger than max_len 3") != NULL, "%s", cg_last_error());
    o.max_len = 0;
    o.min_len = -1;
    ck_assert_int_eq(cg_s2s_translate(c.m, &o, c.n, c.srcp, c.len, res, NULL, NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "min_len") != NULL, "%s", cg_last_error());
    mcase_close(&c);
}

/* Greedy: a variant of words, one of chars with two decoder layers; beam 4
 * and 3 on others. The free decodes end with EOS at various lengths. */
START_TEST(min_len_greedy) {
    check_min_len_cases("gru_additive_bahdanau_words", 1);
    check_min_len_cases("lstm_none_luong_bi_dec2_chars", 1);
}
END_TEST

START_TEST(min_len_beam) {
    check_min_len_cases("gru_additive_bahdanau_words", 4);
    check_min_len_cases("lstm_local_monotonic_additive_bi_luong_chars", 3);
}
END_TEST

/* Allocations of one translation of `n` copies of a source in T steps
 * (min_len = max_len = T: EOS may come at the last step only). */
static long allocs_for(cg_s2s *m, int beam, int n, int T) {
    int32_t src[12] = {4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const int32_t *srcp[8];
    int len[8];
    cg_s2s_result res[8];
    for (int i = 0; i < n; i++) srcp[i] = src, len[i] = 12 - i;
    cg_s2s_options o = {.struct_size = sizeof o, .beam = beam, .max_len = T, .min_len = T};
    /* Once unmeasured: plan instances for these shapes are built. */
    ck_assert_int_eq(cg_s2s_translate(m, &o, n, srcp, len, res, NULL, NULL), CG_OK);
    for (int i = 0; i < n; i++) cg_s2s_result_clear(&res[i]);
#if COUNT_ALLOCS
    __atomic_store_n(&n_allocs, 0, __ATOMIC_RELAXED);
    counting = 1;
#endif
    cg_status st = cg_s2s_translate(m, &o, n, srcp, len, res, NULL, NULL);
#if COUNT_ALLOCS
    counting = 0;
#endif
    ck_assert_int_eq(st, CG_OK);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(res[i].hyps[0].n_steps, T);
        cg_s2s_result_clear(&res[i]);
    }
#if COUNT_ALLOCS
    return __atomic_load_n(&n_allocs, __ATOMIC_RELAXED);
#else
    return 0;
#endif
}

START_TEST(decoder_steps_do_not_allocate) {
    tu_check_runs_pause(); /* the check's own runs allocate */
    const char *variants[] = {"gru_additive_bahdanau_words", "lstm_general_bi_enc2_bahdanau_chars",
                              "gru_dot_luong_dec2_chars"};
    for (int v = 0; v < 3; v++) {
        cg_context *ctx;
        cg_s2s *m = load_model(variants[v], &ctx);
        for (int beam = 1; beam <= 3; beam += 2) {
            /* Greedy: exactly as many. A beam's last step may also finish
             * up to `beam` hypotheses per sentence with EOS (min_len =
             * max_len allows it there), each a buffer the pool may not
             * hold yet, as many as the model's last choices ask: at most
             * 5 x beam apart, where one allocation per step would be 54. */
            long a = allocs_for(m, beam, 5, 6), b = allocs_for(m, beam, 5, 60);
            const long slack = beam > 1 ? 5L * beam : 0;
            ck_assert_msg(labs(a - b) <= slack, "%s beam %d: %ld allocations for 6 steps, %ld for 60", variants[v],
                          beam, a, b);
        }
        cg_s2s_free(m);
        cg_context_free(ctx);
    }
    tu_check_runs_resume();
}
END_TEST

int main(void) {
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("bench");
    tcase_add_checked_fixture(tc, setup, tu_teardown_dir);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, bench_json);
    tcase_add_test(tc, bench_beam_lstm);
    tcase_add_test(tc, bench_machine);
    tcase_add_test(tc, bench_bad_command_lines);
    tcase_add_test(tc, min_len_greedy);
    tcase_add_test(tc, min_len_beam);
    tcase_add_test(tc, decoder_steps_do_not_allocate);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
