/* `clgraph bench` end to end (its JSON parses with every key and sane
 * values; no allocation or OpenCL object per decoder step on the CPU), and
 * cg_s2s_options.force_len: exactly that many tokens, EOS an ordinary token,
 * and no allocation per step in the decoder (counted by wrapping malloc). */
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
    ck_assert_msg(num(o, "device_objects_per_step") == 0, "device objects per step: %g", num(o, "device_objects_per_step"));
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
    ck_assert_msg(cg_s2s_load(ctx, model, NULL, &m) == CG_OK, "%s", cg_last_error());
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
    const char *a[] = {"bench", model, "--batch", "3", "--beam", "4", "--steps", "6", "--runs", "3", "--warmup",
                       "1", "--json", NULL};
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
    ck_assert_msg(num(fl, "batch1_ms_per_step") > f1 * 0.999 && num(fl, "batch1_ms_per_step") < f1 * 1.001,
                  "%g vs %g", num(fl, "batch1_ms_per_step"), f1);
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

/* ---- force_len through the library ---- */

static cg_s2s *load_model(const char *variant, cg_context **ctx) {
    char dir[512];
    model_dir(variant, dir, sizeof dir);
    cg_s2s *m;
    ck_assert_int_eq(cg_context_create(NULL, ctx), CG_OK);
    ck_assert_msg(cg_s2s_load(*ctx, dir, NULL, &m) == CG_OK, "%s", cg_last_error());
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

static void check_force(const char *variant, int beam) {
    cg_context *ctx;
    cg_s2s *m = load_model(variant, &ctx);
    int32_t src[8][64];
    int len[8];
    int n = read_sources(variant, src, len, 8);
    const int32_t *srcp[8];
    for (int i = 0; i < n; i++) srcp[i] = src[i];
    cg_s2s_result free_res[8], forced[8];
    int eos = config_eos(variant);
    /* Longer than any free decode (2 x src_len + 10), so EOS comes up. */
    int T = 0;
    for (int i = 0; i < n; i++)
        if (2 * len[i] + 10 > T) T = 2 * len[i] + 10;
    T += 3;
    cg_s2s_options fo = {.beam = beam, .nbest = beam > 1 ? 2 : 0, .attention = 1};
    ck_assert_msg(cg_s2s_translate(m, &fo, n, srcp, len, free_res, NULL, NULL) == CG_OK, "%s", cg_last_error());
    cg_s2s_options o = fo;
    o.force_len = T;
    o.max_len = 3; /* ignored under force_len */
    ck_assert_msg(cg_s2s_translate(m, &o, n, srcp, len, forced, NULL, NULL) == CG_OK, "%s", cg_last_error());
    int saw_eos_inside = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(forced[i].n_hyps, beam > 1 ? 2 : 1);
        for (int h = 0; h < forced[i].n_hyps; h++) {
            const cg_s2s_hyp *y = &forced[i].hyps[h];
            ck_assert_int_eq(y->n_tokens, T);
            ck_assert_int_eq(y->n_steps, T);
            ck_assert(len[i] == 0 || y->attention != NULL);
            for (int t = 0; t < T; t++) saw_eos_inside |= y->tokens[t] == eos;
        }
        if (beam <= 1) {
            /* Greedy: the free decode is a prefix; where it stopped with EOS,
             * the forced one generated EOS and went on. */
            const cg_s2s_hyp *a = &free_res[i].hyps[0], *b = &forced[i].hyps[0];
            for (int t = 0; t < a->n_tokens; t++) ck_assert_int_eq(a->tokens[t], b->tokens[t]);
            if (a->n_steps > a->n_tokens) ck_assert_int_eq(b->tokens[a->n_tokens], eos);
            if (len[i] > 0)
                for (int t = 0; t < a->n_steps * len[i]; t++)
                    ck_assert_msg(fabsf(a->attention[t] - b->attention[t]) <= 1e-5f, "attention %d: %g vs %g", t,
                                  a->attention[t], b->attention[t]);
        }
    }
    if (beam <= 1) ck_assert_msg(saw_eos_inside, "no source of %s generated EOS", variant);
    for (int i = 0; i < n; i++) {
        cg_s2s_result_clear(&free_res[i]);
        cg_s2s_result_clear(&forced[i]);
    }
    o.force_len = -1;
    ck_assert_int_eq(cg_s2s_translate(m, &o, n, srcp, len, forced, NULL, NULL), CG_ERR_INVALID_ARGUMENT);
    cg_s2s_free(m);
    cg_context_free(ctx);
}

START_TEST(force_len_greedy) {
    check_force("gru_additive_bahdanau_words", 1);
    check_force("lstm_none_luong_bi_dec2_chars", 1);
}
END_TEST

START_TEST(force_len_beam) {
    check_force("gru_additive_bahdanau_words", 4);
    check_force("lstm_local_monotonic_additive_bi_luong_chars", 3);
}
END_TEST

/* Allocations of one translation of `n` copies of a source into T tokens. */
static long allocs_for(cg_s2s *m, int beam, int n, int T) {
    int32_t src[12] = {4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const int32_t *srcp[8];
    int len[8];
    cg_s2s_result res[8];
    for (int i = 0; i < n; i++) srcp[i] = src, len[i] = 12 - i;
    cg_s2s_options o = {.beam = beam, .force_len = T};
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
        ck_assert_int_eq(res[i].hyps[0].n_tokens, T);
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
            long a = allocs_for(m, beam, 5, 6), b = allocs_for(m, beam, 5, 30);
            ck_assert_msg(a == b, "%s beam %d: %ld allocations for 6 steps, %ld for 30", variants[v], beam, a, b);
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
    tcase_add_test(tc, force_len_greedy);
    tcase_add_test(tc, force_len_beam);
    tcase_add_test(tc, decoder_steps_do_not_allocate);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
