/* Translating from four threads at once (models/dates, its sample dates):
 * threads with a context and model of their own, and threads sharing one
 * loaded model through cg_s2s_clone, on the CPU and on opencl:0, greedy and
 * with a beam. Every thread's output must equal what one thread alone
 * produces: the same tokens, and scores equal on the CPU (within 1e-4 on
 * PoCL). Runs under ThreadSanitizer in .ci/run (suite "threads"). Never
 * forks (OpenCL). */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/clgraph.h"
#include "clgraph/seq2seq.h"
#include "test_util.h"

#define THREADS 4
#define MAX_LINES 64

typedef struct sources {
    int n;
    int32_t *ids[MAX_LINES];
    int len[MAX_LINES];
} sources;

typedef struct answer {
    int n_tokens[MAX_LINES];
    int32_t *tokens[MAX_LINES];
    double score[MAX_LINES];
} answer;

static char model_dir[1024];
static sources g_src;
static answer g_want[2][2]; /* [cpu/opencl][greedy/beam] from one thread */
static int g_devices;

static cg_s2s_options opts(int beam) {
    cg_s2s_options o = {.struct_size = sizeof o};
    o.beam = beam ? 4 : 1;
    o.batch = 5; /* several batches per call */
    return o;
}

/* Translates g_src with m into a; 0 on failure (message in err). */
static int translate(cg_s2s *m, int beam, answer *a, char *err, size_t size) {
    cg_s2s_result *res = calloc((size_t)g_src.n, sizeof *res);
    cg_s2s_options o = opts(beam);
    if (!res || cg_s2s_translate(m, &o, g_src.n, (const int32_t *const *)g_src.ids, g_src.len, res, NULL, NULL)) {
        snprintf(err, size, "translate: %s", cg_last_error());
        free(res);
        return 0;
    }
    for (int i = 0; i < g_src.n; i++) {
        a->n_tokens[i] = res[i].hyps[0].n_tokens;
        a->tokens[i] = malloc(sizeof(int32_t) * (size_t)(a->n_tokens[i] + 1));
        memcpy(a->tokens[i], res[i].hyps[0].tokens, sizeof(int32_t) * (size_t)a->n_tokens[i]);
        a->score[i] = res[i].hyps[0].score;
        cg_s2s_result_clear(&res[i]);
    }
    free(res);
    return 1;
}

static void answer_free(answer *a) {
    for (int i = 0; i < MAX_LINES; i++) {
        free(a->tokens[i]);
        a->tokens[i] = NULL;
    }
}

/* "" when a equals want (scores within tol), else what differs. */
static void compare(const answer *a, const answer *want, double tol, char *err, size_t size) {
    for (int i = 0; i < g_src.n; i++) {
        if (a->n_tokens[i] != want->n_tokens[i] ||
            memcmp(a->tokens[i], want->tokens[i], sizeof(int32_t) * (size_t)a->n_tokens[i])) {
            snprintf(err, size, "line %d: other tokens", i);
            return;
        }
        if (!(fabs(a->score[i] - want->score[i]) <= tol)) {
            snprintf(err, size, "line %d: score %.9g, alone %.9g", i, a->score[i], want->score[i]);
            return;
        }
    }
}

typedef struct worker {
    int id;
    cg_s2s *m; /* shared-model case: this thread's handle (a clone) */
    char err[512];
} worker;

static const char *device_of(int id) { return g_devices > 1 && id % 2 ? "opencl:0" : "cpu"; }

/* Both decodings with m, checked against the single-thread answers. */
static void check_thread(cg_s2s *m, int id, char *err, size_t size) {
    int dev = strcmp(device_of(id), "cpu") != 0;
    for (int round = 0; round < 2 && !err[0]; round++)
        for (int beam = 0; beam < 2 && !err[0]; beam++) {
            answer a = {0};
            if (translate(m, beam, &a, err, size)) compare(&a, &g_want[dev][beam], dev ? 1e-4 : 0.0, err, size);
            answer_free(&a);
        }
}

static void *own_model(void *arg) {
    worker *w = arg;
    cg_context *ctx = NULL;
    cg_s2s *m = NULL;
    cg_plan_options po = {.struct_size = sizeof(cg_plan_options), .device = device_of(w->id)};
    if (cg_context_create(NULL, &ctx) || cg_s2s_load(ctx, model_dir, &po, NULL, &m))
        snprintf(w->err, sizeof w->err, "thread %d: load: %s", w->id, cg_last_error());
    else check_thread(m, w->id, w->err, sizeof w->err);
    cg_s2s_free(m);
    cg_context_free(ctx);
    return NULL;
}

static void *shared_model(void *arg) {
    worker *w = arg;
    check_thread(w->m, w->id, w->err, sizeof w->err);
    return NULL;
}

static void run_threads(void *(*fn)(void *), worker *w) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) ck_assert_int_eq(pthread_create(&t[i], NULL, fn, &w[i]), 0);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) ck_assert_msg(!w[i].err[0], "thread %d: %s", i, w[i].err);
}

START_TEST(test_own_models) {
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) w[i] = (worker){.id = i};
    run_threads(own_model, w);
}
END_TEST

START_TEST(test_shared_model) {
    cg_context *ctx;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    cg_s2s *m;
    ck_assert_msg(cg_s2s_load(ctx, model_dir, NULL, NULL, &m) == CG_OK, "%s", cg_last_error());
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.id = i, .m = m};
        cg_plan_options po = {.struct_size = sizeof(cg_plan_options), .device = device_of(i)};
        if (i) ck_assert_msg(cg_s2s_clone(m, &po, &w[i].m) == CG_OK, "%s", cg_last_error());
    }
    run_threads(shared_model, w);
    /* the original goes first: the clones keep the shared model */
    cg_s2s_free(m);
    char err[512] = "";
    check_thread(w[1].m, 1, err, sizeof err);
    ck_assert_msg(!err[0], "after freeing the original: %s", err);
    for (int i = 1; i < THREADS; i++) cg_s2s_free(w[i].m);
    cg_context_free(ctx);
}
END_TEST

/* Set-up outside any test: a failure ends the program with its reason. */
#define REQUIRE(cond, ...)                                   \
    do {                                                     \
        if (!(cond)) {                                       \
            fprintf(stderr, "s2s_threads: set-up failed: "); \
            fprintf(stderr, __VA_ARGS__);                    \
            fprintf(stderr, "\n");                           \
            exit(EXIT_FAILURE);                              \
        }                                                    \
    } while (0)

/* The sources (models/dates/samples.txt) and one thread's answers. */
static void prepare(void) {
    snprintf(model_dir, sizeof model_dir, "%s/models/dates", tu_src_dir());
    g_devices = cg_device_count();
    cg_context *ctx;
    REQUIRE(cg_context_create(NULL, &ctx) == CG_OK, "%s", cg_last_error());
    cg_s2s *m;
    REQUIRE(cg_s2s_load(ctx, model_dir, NULL, NULL, &m) == CG_OK, "%s", cg_last_error());
    char path[1100];
    snprintf(path, sizeof path, "%s/samples.txt", model_dir);
    FILE *f = fopen(path, "r");
    REQUIRE(f, "%s: cannot read", path);
    char line[512];
    while (g_src.n < MAX_LINES && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        REQUIRE(cg_s2s_tokenize(m, line, &g_src.ids[g_src.n], &g_src.len[g_src.n]) == CG_OK, "%s", cg_last_error());
        g_src.n++;
    }
    fclose(f);
    REQUIRE(g_src.n >= 8, "%s: only %d lines", path, g_src.n);
    char err[512] = "";
    for (int dev = 0; dev < 2 && dev < g_devices; dev++) {
        cg_s2s *md = m;
        cg_plan_options po = {.struct_size = sizeof(cg_plan_options), .device = dev ? "opencl:0" : "cpu"};
        if (dev) REQUIRE(cg_s2s_clone(m, &po, &md) == CG_OK, "%s", cg_last_error());
        for (int beam = 0; beam < 2; beam++)
            REQUIRE(translate(md, beam, &g_want[dev][beam], err, sizeof err), "%s", err);
        if (dev) cg_s2s_free(md);
    }
    cg_s2s_free(m);
    cg_context_free(ctx);
}

int main(void) {
    prepare();
    Suite *s = suite_create("s2s_threads");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, test_own_models);
    tcase_add_test(tc, test_shared_model);
    suite_add_tcase(s, tc);
    int rc = tu_run_suite(s, 1);
    for (int i = 0; i < g_src.n; i++) free(g_src.ids[i]);
    for (int d = 0; d < 2; d++)
        for (int b = 0; b < 2; b++) answer_free(&g_want[d][b]);
    return rc;
}
