/* Seq2seq models end to end (docs/seq2seq.md):
 * - golden parity with the PyTorch reference (tools/py/s2s_ref.py, data made by
 *   tools/py/gen_golden_s2s.py) for every variant under tests/golden/s2s, greedy
 *   (tokens, scores, attention) and every beam setting of golden.json, on the
 *   CPU and on an OpenCL device, and batch invariance (one batch, one by one,
 *   batches of 2 and 3, pairs of different lengths);
 * - `clgraph translate` text, n-best, --scores and --ids output against the
 *   golden files;
 * - every config.json, weights and vocabulary mistake with its message;
 * - a model deeper than the golden ones (66 decoder layers: more decoder
 *   inputs and outputs than 80, encoder outputs than 40) against the
 *   equations computed here in double, on the CPU and on an OpenCL device;
 * - the demo date normaliser (models/dates): held-out accuracy and the
 *   attention heat map files.
 * The OpenCL cases (tcase "opencl") run on CG_TEST_OPENCL_DEVICE (default
 * opencl:0); tests/meson.build runs that tcase alone (CK_RUN_CASE) once per
 * OpenCL implementation and kernel path set.
 * Never forks (srunner_set_fork_status CK_NOFORK): PoCL hangs after fork. */
#include <check.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clgraph/clgraph.h"
#include "clgraph/seq2seq.h"
#include "tu_s2s.h"
#include "test_util.h"
#include "s2s.h"     /* S2S_TOP_K: candidates the generated decoder keeps */
#include "heatmap.h" /* the heat map layout macros (tools/clgraph) */

#define MAX_VARIANTS 64
#define TOL_GOLDEN 1e-4 /* scores and attention against the reference */
#define TOL_BATCH 1e-5  /* between batchings of the same sources */

static char variants[MAX_VARIANTS][256];
static int n_variants;
static cg_context *ctx;
static int have_opencl;
static const char *cl_dev = "opencl:0"; /* CG_TEST_OPENCL_DEVICE */

static void golden_path(char *buf, size_t size, const char *variant, const char *file) {
    snprintf(buf, size, "%s/tests/golden/s2s/%s%s%s", tu_src_dir(), variant, file ? "/" : "", file ? file : "");
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ */
/* Files                                                               */

static char *must_read(const char *path) {
    char *s = tu_read_text(path, NULL);
    ck_assert_msg(s != NULL, "cannot read %s", path);
    return s;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert_int_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    ck_assert_int_eq(fclose(f), 0);
}

static cJSON *read_json(const char *path) {
    char *s = must_read(path);
    cJSON *j = cJSON_Parse(s);
    ck_assert_msg(j != NULL, "%s does not parse as JSON", path);
    free(s);
    return j;
}

/* Splits text into lines in place ("\n"; a final newline makes no extra
 * line). Returns the count; *lines is malloc'ed. */
static int split_lines(char *text, char ***lines) {
    int n = 0, cap = 64;
    char **v = malloc(sizeof *v * (size_t)cap);
    ck_assert_ptr_nonnull(v);
    char *p = text;
    while (*p) {
        char *e = strchr(p, '\n');
        if (n == cap) {
            cap *= 2;
            v = realloc(v, sizeof *v * (size_t)cap);
            ck_assert_ptr_nonnull(v);
        }
        v[n++] = p;
        if (!e) break;
        *e = 0;
        p = e + 1;
    }
    *lines = v;
    return n;
}

static void copy_file(const char *from, const char *to) {
    size_t n;
    char *s = tu_read_text(from, &n);
    ck_assert_msg(s != NULL, "cannot read %s", from);
    FILE *f = fopen(to, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", to);
    ck_assert_int_eq(fwrite(s, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
    free(s);
}

/* ------------------------------------------------------------------ */
/* Fixtures                                                            */

static void setup(void) { tu_setup_dir("s2s"); }

static int by_name(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* Every directory under tests/golden/s2s with a golden.json. */
static void scan_variants(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/tests/golden/s2s", tu_src_dir());
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) && n_variants < MAX_VARIANTS) {
        if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof variants[0]) continue;
        char p[1000];
        struct stat sb;
        golden_path(p, sizeof p, e->d_name, "golden.json");
        if (stat(p, &sb) == 0) snprintf(variants[n_variants++], sizeof variants[0], "%s", e->d_name);
    }
    closedir(d);
    qsort(variants, (size_t)n_variants, sizeof variants[0], by_name);
}

/* ------------------------------------------------------------------ */
/* Golden data                                                         */

typedef struct golden {
    const char *name;
    cJSON *json;
    int n; /* sources */
    int32_t **src;
    int *len;
    int att_none; /* attention "none": no weights */
} golden;

static void golden_load(golden *g, const char *name) {
    memset(g, 0, sizeof *g);
    g->name = name;
    char p[1000];
    golden_path(p, sizeof p, name, "golden.json");
    g->json = read_json(p);
    cJSON *srcs = cJSON_GetObjectItemCaseSensitive(g->json, "sources");
    ck_assert_msg(cJSON_IsArray(srcs), "%s: no sources", name);
    g->n = cJSON_GetArraySize(srcs);
    ck_assert_int_gt(g->n, 1);
    g->src = calloc((size_t)g->n, sizeof *g->src);
    g->len = calloc((size_t)g->n, sizeof *g->len);
    ck_assert(g->src && g->len);
    for (int i = 0; i < g->n; i++) {
        cJSON *s = cJSON_GetArrayItem(srcs, i);
        g->len[i] = cJSON_GetArraySize(s);
        g->src[i] = calloc((size_t)g->len[i] + 1, sizeof(int32_t));
        for (int j = 0; j < g->len[i]; j++) g->src[i][j] = cJSON_GetArrayItem(s, j)->valueint;
    }
    cJSON *cfg = cJSON_GetObjectItemCaseSensitive(g->json, "config");
    cJSON *att = cJSON_GetObjectItemCaseSensitive(cfg, "attention");
    ck_assert(cJSON_IsString(att));
    g->att_none = !strcmp(att->valuestring, "none");
}

static void golden_free(golden *g) {
    for (int i = 0; i < g->n; i++) free(g->src[i]);
    free(g->src);
    free(g->len);
    cJSON_Delete(g->json);
}

/* The dtype the next load_model reads the decoder's weights in (0: as stored). */
static cg_dtype g_weights_dtype;

static cg_s2s *load_model(const char *dir, const char *device) {
    cg_plan_options po = {.struct_size = sizeof(cg_plan_options), .device = device};
    cg_s2s_load_options lo = {.struct_size = sizeof lo, .weights_dtype = g_weights_dtype};
    cg_s2s *m = NULL;
    ck_assert_msg(cg_s2s_load(ctx, dir, &po, &lo, &m) == CG_OK, "loading %s on %s: %s", dir, device, cg_last_error());
    return m;
}

static void translate(cg_s2s *m, const cg_s2s_options *o, int n, int32_t *const *src, const int *len,
                      cg_s2s_result *res) {
    ck_assert_msg(tu_s2s_translate(m, o, n, (const int32_t *const *)src, len, res) == CG_OK, "%s", cg_last_error());
}

static void clear_all(cg_s2s_result *res, int n) {
    for (int i = 0; i < n; i++) cg_s2s_result_clear(&res[i]);
}

/* One hypothesis against a golden one: tokens, ended, score. */
static void check_hyp(const char *what, int i, int h, const cg_s2s_hyp *y, const cJSON *gold) {
    const cJSON *toks = cJSON_GetObjectItemCaseSensitive(gold, "tokens");
    int n = cJSON_GetArraySize(toks);
    int ended = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(gold, "ended"));
    double score = cJSON_GetObjectItemCaseSensitive(gold, "score")->valuedouble;
    int same = y->n_tokens == n;
    for (int t = 0; same && t < n; t++) same = y->tokens[t] == cJSON_GetArrayItem(toks, t)->valueint;
    if (!same) {
        char a[2048] = "", b[2048] = "";
        size_t u = 0, v = 0;
        for (int t = 0; t < y->n_tokens && u < sizeof a - 16; t++)
            u += (size_t)snprintf(a + u, sizeof a - u, " %d", y->tokens[t]);
        for (int t = 0; t < n && v < sizeof b - 16; t++)
            v += (size_t)snprintf(b + v, sizeof b - v, " %d", cJSON_GetArrayItem(toks, t)->valueint);
        ck_abort_msg("%s: source %d hypothesis %d: tokens [%s ] but the reference has [%s ]", what, i, h, a, b);
    }
    ck_assert_msg(y->n_steps == n + ended, "%s: source %d hypothesis %d: %d steps, expected %d (ended %d)", what, i, h,
                  y->n_steps, n + ended, ended);
    ck_assert_msg(fabs(y->score - score) <= TOL_GOLDEN, "%s: source %d hypothesis %d: score %.8f, reference %.8f", what,
                  i, h, y->score, score);
}

/* Greedy results (with attention) against golden "greedy". */
static void check_greedy(const golden *g, const char *what, const cg_s2s_result *res) {
    const cJSON *gr = cJSON_GetObjectItemCaseSensitive(g->json, "greedy");
    ck_assert_int_eq(cJSON_GetArraySize(gr), g->n);
    for (int i = 0; i < g->n; i++) {
        const cJSON *gi = cJSON_GetArrayItem(gr, i);
        ck_assert_msg(res[i].n_hyps == 1, "%s: source %d: %d hypotheses", what, i, res[i].n_hyps);
        ck_assert_int_eq(res[i].src_len, g->len[i]);
        const cg_s2s_hyp *y = &res[i].hyps[0];
        check_hyp(what, i, 0, y, gi);
        const cJSON *att = cJSON_GetObjectItemCaseSensitive(gi, "attention");
        ck_assert_int_eq(cJSON_GetArraySize(att), y->n_steps);
        for (int t = 0; t < y->n_steps; t++) {
            const cJSON *row = cJSON_GetArrayItem(att, t);
            int cols = cJSON_GetArraySize(row);
            if (cols == 0) {
                /* no weights: attention "none" or an empty source */
                ck_assert_msg(g->att_none || g->len[i] == 0, "%s: source %d: empty golden attention row", what, i);
                if (y->attention)
                    for (int j = 0; j < g->len[i]; j++)
                        ck_assert_msg(y->attention[(size_t)t * (size_t)g->len[i] + (size_t)j] == 0.0f,
                                      "%s: source %d: attention without an attention module", what, i);
                continue;
            }
            ck_assert_int_eq(cols, g->len[i]);
            ck_assert_msg(y->attention != NULL, "%s: source %d: no attention returned", what, i);
            for (int j = 0; j < cols; j++) {
                double want = cJSON_GetArrayItem(row, j)->valuedouble;
                double have = y->attention[(size_t)t * (size_t)cols + (size_t)j];
                ck_assert_msg(fabs(have - want) <= TOL_GOLDEN,
                              "%s: source %d: attention[%d][%d] = %.7f, reference %.7f", what, i, t, j, have, want);
            }
        }
    }
}

/* n-best lists against golden results[i] (arrays of hypotheses). */
static void check_nbest(const golden *g, const char *what, const cJSON *results, const cg_s2s_result *res) {
    ck_assert_int_eq(cJSON_GetArraySize(results), g->n);
    for (int i = 0; i < g->n; i++) {
        const cJSON *hs = cJSON_GetArrayItem(results, i);
        int nh = cJSON_IsArray(hs) ? cJSON_GetArraySize(hs) : 1;
        ck_assert_msg(res[i].n_hyps == nh, "%s: source %d: %d hypotheses, reference %d", what, i, res[i].n_hyps, nh);
        for (int h = 0; h < nh; h++)
            check_hyp(what, i, h, &res[i].hyps[h], cJSON_IsArray(hs) ? cJSON_GetArrayItem(hs, h) : hs);
    }
}

/* Two decodings of the same sources agree: tokens exactly, steps, scores and
 * attention within TOL_BATCH. */
static void check_same(const char *what, int n, const cg_s2s_result *a, const cg_s2s_result *b) {
    for (int i = 0; i < n; i++) {
        ck_assert_msg(a[i].n_hyps == b[i].n_hyps, "%s: source %d: %d vs %d hypotheses", what, i, a[i].n_hyps,
                      b[i].n_hyps);
        ck_assert_int_eq(a[i].src_len, b[i].src_len);
        for (int h = 0; h < a[i].n_hyps; h++) {
            const cg_s2s_hyp *x = &a[i].hyps[h], *y = &b[i].hyps[h];
            int same = x->n_tokens == y->n_tokens && x->n_steps == y->n_steps;
            for (int t = 0; same && t < x->n_tokens; t++) same = x->tokens[t] == y->tokens[t];
            ck_assert_msg(same, "%s: source %d hypothesis %d: different tokens", what, i, h);
            ck_assert_msg(fabs(x->score - y->score) <= TOL_BATCH, "%s: source %d hypothesis %d: score %.8f vs %.8f",
                          what, i, h, x->score, y->score);
            ck_assert_msg(!x->attention == !y->attention, "%s: source %d: attention in one run only", what, i);
            if (x->attention)
                for (int k = 0; k < x->n_steps * a[i].src_len; k++)
                    ck_assert_msg(fabs(x->attention[k] - y->attention[k]) <= TOL_BATCH,
                                  "%s: source %d hypothesis %d: attention element %d: %.8f vs %.8f", what, i, h, k,
                                  x->attention[k], y->attention[k]);
        }
    }
}

/* The same options in other batchings: one by one (n = 1 calls and
 * batch 1), batches of 2 and 3 (the sources are sorted by length, so these
 * mix lengths), and pairs of source i with source i + n/2. */
static void check_batchings(const golden *g, cg_s2s *m, const cg_s2s_options *base, const char *what,
                            const cg_s2s_result *ref) {
    cg_s2s_result *res = calloc((size_t)g->n, sizeof *res);
    ck_assert_ptr_nonnull(res);
    char tag[512];
    for (int i = 0; i < g->n; i++) translate(m, base, 1, &g->src[i], &g->len[i], &res[i]);
    snprintf(tag, sizeof tag, "%s, alone", what);
    check_same(tag, g->n, ref, res);
    clear_all(res, g->n);
    static const int batches[] = {1, 2, 3};
    for (size_t k = 0; k < sizeof batches / sizeof batches[0]; k++) {
        cg_s2s_options o = *base;
        o.batch = batches[k];
        translate(m, &o, g->n, g->src, g->len, res);
        snprintf(tag, sizeof tag, "%s, batch %d", what, o.batch);
        check_same(tag, g->n, ref, res);
        clear_all(res, g->n);
    }
    for (int i = 0; i < g->n; i++) {
        int j = (i + g->n / 2) % g->n;
        int32_t *ps[2] = {g->src[i], g->src[j]};
        int pl[2] = {g->len[i], g->len[j]};
        cg_s2s_result pr[2];
        translate(m, base, 2, ps, pl, pr);
        snprintf(tag, sizeof tag, "%s, source %d (length %d) with source %d (length %d)", what, i, pl[0], j, pl[1]);
        check_same(tag, 1, &ref[i], &pr[0]);
        check_same(tag, 1, &ref[j], &pr[1]);
        clear_all(pr, 2);
    }
    free(res);
}

/* The sources through a stream of room 3 (and of room 1 when `full`: on
 * the CPU; each width and row count a stream meets is a plan binding, slow
 * to compile on some OpenCL implementations), one joining every other
 * step while there is room (so sentences join mid-decode beside
 * others of other lengths and steps, into compacted slots): each result
 * is the batch's. */
static void check_stream(const golden *g, cg_s2s *m, const cg_s2s_options *base, const char *what,
                         const cg_s2s_result *ref, int full) {
    static const int rooms[] = {3, 1};
    for (size_t k = 0; k < (full ? 2u : 1u); k++) {
        cg_s2s_result *got = calloc((size_t)g->n, sizeof *got);
        ck_assert_ptr_nonnull(got);
        tu_s2s_stream(m, base, rooms[k], 2, g->n, (const int32_t *const *)g->src, g->len, got, NULL);
        char tag[600];
        snprintf(tag, sizeof tag, "%s, a stream of room %d", what, rooms[k]);
        check_same(tag, g->n, ref, got);
        clear_all(got, g->n);
        free(got);
    }
}

/* Everything golden.json holds, on one device. `full`: every beam setting
 * and batch invariance for beam too. */
static void golden_parity(const char *variant, const char *device, int full) {
    double t0 = now();
    golden g;
    golden_load(&g, variant);
    char dir[1000], what[512];
    golden_path(dir, sizeof dir, variant, NULL);
    cg_s2s *m = load_model(dir, device);
    cg_s2s_result *res = calloc((size_t)g.n, sizeof *res);
    ck_assert_ptr_nonnull(res);

    /* greedy, all sources in one batch, with attention */
    cg_s2s_options o = {.struct_size = sizeof(cg_s2s_options), .attention = 1};
    snprintf(what, sizeof what, "%s on %s, greedy", variant, device);
    translate(m, &o, g.n, g.src, g.len, res);
    check_greedy(&g, what, res);
    check_batchings(&g, m, &o, what, res);
    /* streams and drops: every setting on the CPU; greedy only, and one
     * stream, on an OpenCL device (each width and row count a stream meets
     * is a plan binding, slow to compile on some implementations) */
    const int on_cpu = !strcmp(device, "cpu");
    check_stream(&g, m, &o, what, res, on_cpu);
    clear_all(res, g.n);
    tu_s2s_check_drop(m, &o, g.n, (const int32_t *const *)g.src, g.len);

    /* greedy with an explicit max_len */
    const cJSON *gm = cJSON_GetObjectItemCaseSensitive(g.json, "greedy_max_len");
    o.max_len = cJSON_GetObjectItemCaseSensitive(gm, "max_len")->valueint;
    snprintf(what, sizeof what, "%s on %s, greedy max_len %d", variant, device, o.max_len);
    translate(m, &o, g.n, g.src, g.len, res);
    check_nbest(&g, what, cJSON_GetObjectItemCaseSensitive(gm, "results"), res);
    clear_all(res, g.n);

    /* beam settings: k 4 n-best 2; k 4 n-best 2 alpha 0.6; k 3 n-best 3 max_len 3 */
    const cJSON *beams = cJSON_GetObjectItemCaseSensitive(g.json, "beam");
    ck_assert_int_ge(cJSON_GetArraySize(beams), 1);
    const cJSON *b;
    int first = 1;
    cJSON_ArrayForEach(b, beams) {
        const cJSON *ml = cJSON_GetObjectItemCaseSensitive(b, "max_len");
        cg_s2s_options bo = {.struct_size = sizeof(cg_s2s_options),
                             .beam = cJSON_GetObjectItemCaseSensitive(b, "k")->valueint,
                             .nbest = cJSON_GetObjectItemCaseSensitive(b, "nbest")->valueint,
                             .alpha = cJSON_GetObjectItemCaseSensitive(b, "alpha")->valuedouble,
                             .max_len = cJSON_IsNumber(ml) ? ml->valueint : 0};
        if (first) ck_assert(bo.beam == 4 && bo.nbest == 2 && bo.alpha == 0.0 && bo.max_len == 0);
        if (!first && !full) break;
        snprintf(what, sizeof what, "%s on %s, beam %d n-best %d alpha %g max_len %d", variant, device, bo.beam,
                 bo.nbest, bo.alpha, bo.max_len);
        translate(m, &bo, g.n, g.src, g.len, res);
        check_nbest(&g, what, cJSON_GetObjectItemCaseSensitive(b, "results"), res);
        if (first) check_batchings(&g, m, &bo, what, res);
        if (first && on_cpu) check_stream(&g, m, &bo, what, res, 1);
        if (first && on_cpu) tu_s2s_check_drop(m, &bo, g.n, (const int32_t *const *)g.src, g.len);
        clear_all(res, g.n);
        first = 0;
    }
    free(res);
    cg_s2s_free(m);
    golden_free(&g);
    printf("%s on %s: golden parity ok (%.2f s)\n", variant, device, now() - t0);
    fflush(stdout);
}

START_TEST(golden_variants_present) {
    /* index.txt names every variant the generator made; each is a directory. */
    char p[1000];
    snprintf(p, sizeof p, "%s/tests/golden/s2s/index.txt", tu_src_dir());
    char *text = must_read(p);
    char **lines;
    int n = split_lines(text, &lines), listed = 0;
    for (int i = 0; i < n; i++) {
        if (!lines[i][0]) continue;
        listed++;
        int found = 0;
        for (int k = 0; k < n_variants; k++) found |= !strcmp(variants[k], lines[i]);
        ck_assert_msg(found, "index.txt lists %s, which has no golden.json", lines[i]);
    }
    ck_assert_int_ge(n_variants, 15);
    ck_assert_int_ge(n_variants, listed);
    printf("%d golden seq2seq variants\n", n_variants);
    free(lines);
    free(text);
}
END_TEST

START_TEST(golden_cpu) {
    ck_assert_int_lt(_i, n_variants);
    golden_parity(variants[_i], "cpu", 1);
}
END_TEST

START_TEST(golden_opencl) {
    if (!have_opencl) {
        if (_i == 0)
            printf("note: no OpenCL device (%s): golden parity on %s skipped\n",
                   cg_device_note() ? cg_device_note() : "?", cl_dev);
        return;
    }
    golden_parity(variants[_i], cl_dev, 1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* clgraph translate against the golden output files                   */

/* Splits "TEXT\tSCORE" at the last tab; checks SCORE is "%.6f". */
static double take_score(char *line, const char *what) {
    char *tab = strrchr(line, '\t');
    ck_assert_msg(tab != NULL, "%s: no score in '%s'", what, line);
    *tab = 0;
    const char *s = tab + 1, *dot = strchr(s, '.');
    ck_assert_msg(dot && strlen(dot + 1) == 6 && strspn(dot + 1, "0123456789") == 6, "%s: score '%s' is not %%.6f",
                  what, s);
    char *end;
    double v = strtod(s, &end);
    ck_assert_msg(*end == 0, "%s: bad score '%s'", what, s);
    return v;
}

START_TEST(cli_text_output) {
    const char *v = variants[_i];
    golden g;
    golden_load(&g, v);
    char dir[1000], txt[1000], ids[1000], p[1000];
    golden_path(dir, sizeof dir, v, NULL);
    golden_path(txt, sizeof txt, v, "sources.txt");
    golden_path(ids, sizeof ids, v, "sources.ids");

    /* greedy text */
    const char *a1[] = {"translate", dir, NULL};
    ck_assert_msg(tu_run_cli(a1, NULL, txt) == 0, "%s: %s", v, tu_err);
    golden_path(p, sizeof p, v, "greedy.out");
    char *want = must_read(p);
    ck_assert_msg(!strcmp(tu_out, want), "%s: translate printed\n%s\nexpected\n%s", v, tu_out, want);
    free(want);

    /* greedy --scores */
    const char *a2[] = {"translate", dir, "--scores", NULL};
    ck_assert_msg(tu_run_cli(a2, NULL, txt) == 0, "%s: %s", v, tu_err);
    want = must_read(p);
    char **ol, **wl;
    int on = split_lines(tu_out, &ol), wn = split_lines(want, &wl);
    ck_assert_int_eq(on, wn);
    ck_assert_int_eq(on, g.n);
    const cJSON *gr = cJSON_GetObjectItemCaseSensitive(g.json, "greedy");
    for (int i = 0; i < on; i++) {
        double s = take_score(ol[i], v);
        ck_assert_msg(!strcmp(ol[i], wl[i]), "%s --scores: line %d '%s', expected '%s'", v, i, ol[i], wl[i]);
        double gs = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(gr, i), "score")->valuedouble;
        ck_assert_msg(fabs(s - gs) <= TOL_GOLDEN, "%s --scores: source %d: %.6f, reference %.8f", v, i, s, gs);
    }
    free(ol);
    free(wl);
    free(want);

    /* beam 4, n-best 2: exactly the golden file, then with scores */
    const char *a3[] = {"translate", dir, "--beam", "4", "--nbest", "2", NULL};
    ck_assert_msg(tu_run_cli(a3, NULL, txt) == 0, "%s: %s", v, tu_err);
    golden_path(p, sizeof p, v, "beam4_nbest2.out");
    want = must_read(p);
    ck_assert_msg(!strcmp(tu_out, want), "%s: translate --beam 4 --nbest 2 printed\n%s\nexpected\n%s", v, tu_out, want);
    const char *a4[] = {"translate", dir, "--beam", "4", "--nbest", "2", "--scores", NULL};
    ck_assert_msg(tu_run_cli(a4, NULL, txt) == 0, "%s: %s", v, tu_err);
    on = split_lines(tu_out, &ol);
    wn = split_lines(want, &wl);
    ck_assert_int_eq(on, wn);
    const cJSON *b0 = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(g.json, "beam"), 0), "results");
    int line = 0;
    for (int i = 0; i < g.n; i++) {
        const cJSON *hs = cJSON_GetArrayItem(b0, i);
        for (int h = 0; h < cJSON_GetArraySize(hs); h++, line++) {
            ck_assert_int_lt(line, on);
            double s = take_score(ol[line], v);
            ck_assert_msg(!strcmp(ol[line], wl[line]), "%s beam --scores: line %d '%s', expected '%s'", v, line,
                          ol[line], wl[line]);
            double gs = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(hs, h), "score")->valuedouble;
            ck_assert_msg(fabs(s - gs) <= TOL_GOLDEN, "%s beam --scores: source %d hypothesis %d: %.6f, reference %.8f",
                          v, i, h, s, gs);
        }
    }
    ck_assert_int_eq(line, on);
    free(ol);
    free(wl);
    free(want);

    /* ids in, ids out */
    const char *a5[] = {"translate", dir, "--ids", NULL};
    ck_assert_msg(tu_run_cli(a5, NULL, ids) == 0, "%s: %s", v, tu_err);
    golden_path(p, sizeof p, v, "greedy_ids.out");
    want = must_read(p);
    ck_assert_msg(!strcmp(tu_out, want), "%s: translate --ids printed\n%s\nexpected\n%s", v, tu_out, want);
    free(want);
    golden_free(&g);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Mistakes in a model directory                                       */

#define BASE_VARIANT "gru_general_bi_luong_words" /* bidirectional: K = 16, H = 8; V 30/30, E 10 */

static char mdir[400];

/* Copies a golden variant's model files (not its golden.json) into the
 * new directory `dir`. */
static void copy_model_files(const char *variant, const char *dir) {
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    static const char *const files[] = {"config.json", "weights.safetensors", "src.vocab", "tgt.vocab"};
    for (int i = 0; i < 4; i++) {
        char a[1000], b[1000];
        golden_path(a, sizeof a, variant, files[i]);
        snprintf(b, sizeof b, "%s/%s", dir, files[i]);
        copy_file(a, b);
    }
}

/* A fresh copy of the base variant's model files in tu_dir/m. */
static void fresh_model(void) {
    char cmd[600];
    snprintf(mdir, sizeof mdir, "%s/m", tu_dir);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", mdir);
    ck_assert_int_eq(system(cmd), 0);
    copy_model_files(BASE_VARIANT, mdir);
}

static void model_file(char *buf, size_t size, const char *file) { snprintf(buf, size, "%s/%s", mdir, file); }

/* Edits config.json: sets `key` to the JSON `value` (NULL: removes it). */
static void set_config(const char *key, const char *value) {
    char p[600];
    model_file(p, sizeof p, "config.json");
    cJSON *c = read_json(p);
    cJSON_DeleteItemFromObjectCaseSensitive(c, key);
    if (value) {
        cJSON *v = cJSON_Parse(value);
        ck_assert_msg(v != NULL, "bad test value %s", value);
        cJSON_AddItemToObject(c, key, v);
    }
    char *s = cJSON_Print(c);
    write_text(p, s);
    free(s);
    cJSON_Delete(c);
}

/* Loading fails with `status` and a message containing every needle. */
static void expect_load_error(const char *what, cg_status status, const char *const *needles) {
    cg_s2s *m = NULL;
    cg_status st = cg_s2s_load(ctx, mdir, NULL, NULL, &m);
    ck_assert_msg(st != CG_OK, "%s: the model loaded", what);
    ck_assert_ptr_null(m);
    const char *msg = cg_last_error();
    ck_assert_msg(st == status, "%s: status %d, expected %d (%s)", what, (int)st, (int)status, msg);
    for (int i = 0; needles[i]; i++)
        ck_assert_msg(strstr(msg, needles[i]) != NULL, "%s: '%s' not in the message: %s", what, needles[i], msg);
    ck_assert_msg(!strchr(msg, '\n'), "%s: the message has several lines: %s", what, msg);
    printf("  %-22s %s\n", what, msg);
}

#define EXPECT(what, status, ...)                           \
    do {                                                    \
        const char *const needles_[] = {__VA_ARGS__, NULL}; \
        expect_load_error(what, status, needles_);          \
    } while (0)

START_TEST(config_mistakes) {
    fresh_model();
    cg_s2s *m = NULL;
    ck_assert_msg(cg_s2s_load(ctx, mdir, NULL, NULL, &m) == CG_OK, "the unchanged copy does not load: %s",
                  cg_last_error());
    cg_s2s_free(m);

    set_config("colour", "\"blue\"");
    EXPECT("unknown key", CG_ERR_FORMAT, "config.json: unknown key 'colour'");
    fresh_model();
    set_config("hidden", "\"big\"");
    EXPECT("wrong type", CG_ERR_FORMAT, "config.json: key 'hidden' must be an integer >= 1", "\"big\"");
    fresh_model();
    set_config("decoder_layers", "0");
    EXPECT("out of range", CG_ERR_FORMAT, "config.json: key 'decoder_layers' must be an integer >= 1");
    fresh_model();
    set_config("decoder_layers", "200000000");
    EXPECT("too large", CG_ERR_FORMAT, "config.json: key 'decoder_layers' must be an integer >= 1 and <= 100000000",
           "200000000");
    /* Layers the weights do not hold: named from the last layer at once,
     * before a graph of a million layers is built (30 s and 3 GB before). */
    fresh_model();
    set_config("encoder_layers", "1000000");
    EXPECT("encoder layers", CG_ERR_NOT_FOUND, "weights.safetensors: tensor 'encoder.weight_ih_l999999' is missing",
           "config.json says encoder_layers 1000000");
    fresh_model();
    set_config("decoder_layers", "1000000");
    EXPECT("decoder layers", CG_ERR_NOT_FOUND, "tensor 'decoder.weight_ih_l999999' is missing",
           "config.json says decoder_layers 1000000");
    fresh_model();
    set_config("decoder_layers", "100000");
    set_config("hidden", "100000");
    EXPECT("bridge overflow", CG_ERR_FORMAT, "keys 'decoder_layers' x 'hidden' must be at most 2147483647",
           "100000 x 100000");
    fresh_model();
    set_config("emb_dim", "8.5");
    EXPECT("not an integer", CG_ERR_FORMAT, "key 'emb_dim' must be an integer", "8.5");
    fresh_model();
    set_config("emb_dim", NULL);
    EXPECT("missing key", CG_ERR_FORMAT, "config.json: key 'emb_dim' is required");
    fresh_model();
    set_config("bidirectional", "\"yes\"");
    EXPECT("wrong bool", CG_ERR_FORMAT, "key 'bidirectional' must be true or false");
    fresh_model();
    set_config("attention", "\"multihead\"");
    EXPECT("bad enum", CG_ERR_FORMAT, "config.json: key 'attention' is \"multihead\"; it must be one of",
           "\"additive\"", "\"cosine\"", "\"none\"");
    fresh_model();
    set_config("cell", "\"rnn\"");
    EXPECT("bad cell", CG_ERR_FORMAT, "key 'cell' is \"rnn\"; it must be one of \"gru\", \"lstm\"");
    fresh_model();
    set_config("tokenizer", "3");
    EXPECT("enum not a string", CG_ERR_FORMAT, "key 'tokenizer' must be one of");
    fresh_model();
    set_config("attention", "\"dot\"");
    EXPECT("dot with K != H", CG_ERR_FORMAT, "config.json: key 'attention'", "\"dot\"", "K == H", "K = 16", "H = 8");
    fresh_model();
    set_config("attention", "\"cosine\"");
    EXPECT("cosine with K != H", CG_ERR_FORMAT, "key 'attention'", "\"cosine\"", "K == H");
    fresh_model();
    set_config("attention", "\"none\"");
    set_config("local", "{\"mode\": \"monotonic\", \"D\": 2}");
    EXPECT("local without attention", CG_ERR_FORMAT, "config.json: key 'local' needs an attention");
    fresh_model();
    set_config("local", "{\"mode\": \"sideways\", \"D\": 2}");
    EXPECT("bad local.mode", CG_ERR_FORMAT, "key 'local.mode' is \"sideways\"");
    fresh_model();
    set_config("local", "{\"mode\": \"predictive\", \"D\": 0}");
    EXPECT("predictive D 0", CG_ERR_FORMAT, "key 'local.D' must be >= 1");
    fresh_model();
    set_config("local", "{\"mode\": \"monotonic\", \"D\": -1}");
    EXPECT("negative local.D", CG_ERR_FORMAT, "key 'local.D' must be an integer >= 0");
    fresh_model();
    set_config("local", "{\"mode\": \"monotonic\", \"D\": 1, \"width\": 3}");
    EXPECT("unknown local key", CG_ERR_FORMAT, "unknown key 'local.width'");
    fresh_model();
    set_config("unk_id", "0");
    EXPECT("equal special ids", CG_ERR_FORMAT, "'pad_id', 'bos_id', 'eos_id' and 'unk_id' must differ");
    fresh_model();
    set_config("eos_id", "40");
    EXPECT("eos_id outside", CG_ERR_VERIFY, "config.json: key 'eos_id' is 40, outside a vocabulary of 30 tokens");

    /* invalid JSON: the message has line:col */
    fresh_model();
    char p[600];
    model_file(p, sizeof p, "config.json");
    write_text(p, "{\n  \"cell\": \"gru\",\n  \"hidden\": 8 x\n}\n");
    EXPECT("invalid JSON", CG_ERR_FORMAT, "config.json:3:15: invalid JSON");
    write_text(p, "\n  [1, 2]\n");
    EXPECT("not an object", CG_ERR_FORMAT, "config.json:2:3: the configuration must be a JSON object");

    /* missing files */
    ck_assert_int_eq(unlink(p), 0);
    EXPECT("missing config.json", CG_ERR_IO, "config.json: cannot open: No such file or directory");
    fresh_model();
    model_file(p, sizeof p, "weights.safetensors");
    ck_assert_int_eq(unlink(p), 0);
    EXPECT("missing weights", CG_ERR_IO, "weights.safetensors: cannot open: No such file or directory");
    fresh_model();
    model_file(p, sizeof p, "tgt.vocab");
    ck_assert_int_eq(unlink(p), 0);
    EXPECT("missing tgt.vocab", CG_ERR_IO, "tgt.vocab: cannot open");
    snprintf(mdir, sizeof mdir, "%s/no_such_model", tu_dir);
    EXPECT("missing directory", CG_ERR_IO, "no_such_model: no such model directory");
}
END_TEST

/* Writes the model's vocabulary `file`: lines[0..n) of the base variant's
 * (extra > 0: plus that many new tokens). */
static void write_vocab_lines(const char *file, char *const *lines, int n, int extra) {
    char p[600];
    model_file(p, sizeof p, file);
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < n; i++) fprintf(f, "%s\n", lines[i]);
    for (int i = 0; i < extra; i++) fprintf(f, "extra_token_%d\n", i);
    fclose(f);
}

/* The base variant's vocabulary `file` as lines (free both). */
static int base_vocab(const char *file, char **text, char ***lines) {
    char a[1000];
    golden_path(a, sizeof a, BASE_VARIANT, file);
    *text = must_read(a);
    return split_lines(*text, lines);
}

/* A vocabulary file with the first n lines of the original (extra > 0:
 * plus that many new tokens). */
static void write_vocab(const char *file, int n, int extra) {
    char *text, **lines;
    int total = base_vocab(file, &text, &lines);
    ck_assert_int_ge(total, n);
    write_vocab_lines(file, lines, n, extra);
    free(lines);
    free(text);
}

/* The base variant's vocabulary `file` with line `at` (0-based) holding
 * the token of line `from`, and, when swap, line `from` holding line
 * `at`'s. */
static void write_vocab_moved(const char *file, int at, int from, int swap) {
    char *text, **lines;
    int total = base_vocab(file, &text, &lines);
    ck_assert_int_gt(total, at);
    ck_assert_int_gt(total, from);
    char *was_at = lines[at];
    lines[at] = lines[from];
    if (swap) lines[from] = was_at;
    write_vocab_lines(file, lines, total, 0);
    free(lines);
    free(text);
}

START_TEST(vocab_mistakes) {
    fresh_model();
    write_vocab("src.vocab", 5, 0);
    EXPECT("short src.vocab", CG_ERR_VERIFY, "src.vocab: 5 tokens, but src_embed.weight has 30 rows");
    fresh_model();
    write_vocab("tgt.vocab", 30, 1);
    EXPECT("long tgt.vocab", CG_ERR_VERIFY, "tgt.vocab: 31 tokens, but tgt_embed.weight has 30 rows");
    fresh_model();
    char p[600];
    model_file(p, sizeof p, "src.vocab");
    write_text(p, "");
    EXPECT("empty src.vocab", CG_ERR_FORMAT, "src.vocab: the vocabulary is empty");
    /* Not a regular file: refused at once, neither read without end
     * (/dev/zero) nor waited on (a FIFO nobody writes to). */
    unlink(p);
    ck_assert_int_eq(symlink("/dev/zero", p), 0);
    EXPECT("src.vocab is /dev/zero", CG_ERR_IO, "src.vocab: not a regular file (a character device)");
    fresh_model();
    model_file(p, sizeof p, "tgt.vocab");
    unlink(p);
    ck_assert_int_eq(mkfifo(p, 0644), 0);
    EXPECT("tgt.vocab a FIFO", CG_ERR_IO, "tgt.vocab: not a regular file (a FIFO)");
    unlink(p);
    /* Line 11 repeats line 6's token ("cat" in the base variant). */
    fresh_model();
    write_vocab_moved("tgt.vocab", 10, 5, 0);
    EXPECT("duplicate token", CG_ERR_FORMAT, "tgt.vocab:11: token 'cat' is already on line 6");
    /* "</s>" swapped onto line 8, away from eos_id 2. */
    fresh_model();
    write_vocab_moved("src.vocab", 7, 2, 1);
    EXPECT("special token moved", CG_ERR_VERIFY,
           "src.vocab:8: '</s>' is token 7, but config.json's eos_id is 2 (line 3)");
}
END_TEST

/* ---- safetensors written here: 8-byte little-endian header length, JSON
 * header, then the data ---- */

typedef struct st_entry {
    char name[128];
    int ndim;
    int64_t dims[4];
    const float *data; /* NULL: zeros */
} st_entry;

static void write_safetensors(const char *path, const st_entry *e, int n) {
    cJSON *h = cJSON_CreateObject();
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "dtype", "F32");
        cJSON *shape = cJSON_AddArrayToObject(t, "shape");
        size_t numel = 1;
        for (int d = 0; d < e[i].ndim; d++) {
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)e[i].dims[d]));
            numel *= (size_t)e[i].dims[d];
        }
        cJSON *offs = cJSON_AddArrayToObject(t, "data_offsets");
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        off += numel * 4;
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        cJSON_AddItemToObject(h, e[i].name, t);
    }
    char *hs = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    size_t hl = strlen(hs), padded = (hl + 7) / 8 * 8;
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)(((uint64_t)padded >> (8 * i)) & 0xFF);
    fwrite(len8, 1, 8, f);
    fwrite(hs, 1, hl, f);
    for (size_t i = hl; i < padded; i++) fputc(' ', f);
    free(hs);
    for (int i = 0; i < n; i++) {
        size_t numel = 1;
        for (int d = 0; d < e[i].ndim; d++) numel *= (size_t)e[i].dims[d];
        for (size_t k = 0; k < numel; k++) {
            float x = e[i].data ? e[i].data[k] : 0.0f; /* little-endian host */
            fwrite(&x, 4, 1, f);
        }
    }
    ck_assert_int_eq(fclose(f), 0);
}

/* The base variant's tensors, to copy with changes. */
typedef struct st_copy {
    cg_weights *w;
    cg_tensor *t[64];
    st_entry e[64];
    int n;
} st_copy;

static void st_copy_load(st_copy *c) {
    char p[1000];
    memset(c, 0, sizeof *c);
    golden_path(p, sizeof p, BASE_VARIANT, "weights.safetensors");
    ck_assert_msg(cg_weights_open(p, &c->w) == CG_OK, "%s", cg_last_error());
    c->n = cg_weights_count(c->w);
    ck_assert_int_le(c->n, 64);
    for (int i = 0; i < c->n; i++) {
        const char *name = cg_weights_name(c->w, i);
        ck_assert_int_eq(cg_weights_get(c->w, name, &c->t[i]), CG_OK);
        snprintf(c->e[i].name, sizeof c->e[i].name, "%s", name);
        c->e[i].ndim = cg_tensor_ndim(c->t[i]);
        for (int d = 0; d < c->e[i].ndim; d++) c->e[i].dims[d] = cg_tensor_dim(c->t[i], d);
        c->e[i].data = cg_tensor_data_const(c->t[i]);
    }
}

static void st_copy_free(st_copy *c) {
    for (int i = 0; i < c->n; i++) cg_tensor_free(c->t[i]);
    cg_weights_free(c->w);
}

static int st_find(const st_copy *c, const char *name) {
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->e[i].name, name)) return i;
    ck_abort_msg("no tensor %s in %s", name, BASE_VARIANT);
    return -1;
}

/* Writes the copy without tensor `drop` (NULL: none) and with `extra`. */
static void st_write(const st_copy *c, const char *drop, const st_entry *extra) {
    st_entry e[65];
    int n = 0;
    for (int i = 0; i < c->n; i++)
        if (!drop || strcmp(c->e[i].name, drop)) e[n++] = c->e[i];
    if (extra) e[n++] = *extra;
    char p[600];
    model_file(p, sizeof p, "weights.safetensors");
    write_safetensors(p, e, n);
}

START_TEST(weights_mistakes) {
    st_copy c;
    st_copy_load(&c);
    fresh_model();

    /* the writer itself: an exact copy loads and translates as the original */
    st_write(&c, NULL, NULL);
    cg_s2s *m = NULL;
    ck_assert_msg(cg_s2s_load(ctx, mdir, NULL, NULL, &m) == CG_OK, "a rewritten copy: %s", cg_last_error());
    cg_s2s_free(m);

    st_write(&c, "decoder.weight_hh_l0", NULL);
    EXPECT("missing tensor", CG_ERR_NOT_FOUND, "weights.safetensors: tensor 'decoder.weight_hh_l0' is missing",
           "f32[24, 8]");
    st_write(&c, "attention.W.weight", NULL);
    EXPECT("missing attention", CG_ERR_NOT_FOUND, "tensor 'attention.W.weight' is missing (expected f32[16, 8])");
    st_write(&c, "tgt_embed.weight", NULL);
    EXPECT("missing embedding", CG_ERR_NOT_FOUND, "tensor 'tgt_embed.weight' is missing", "f32[V, 10]");

    /* a tiny file with just the embeddings */
    st_entry emb[2] = {c.e[st_find(&c, "src_embed.weight")], c.e[st_find(&c, "tgt_embed.weight")]};
    char p[600];
    model_file(p, sizeof p, "weights.safetensors");
    write_safetensors(p, emb, 2);
    EXPECT("embeddings only", CG_ERR_NOT_FOUND, "tensor 'encoder.weight_ih_l0' is missing (expected f32[24, 10])");

    /* wrong shapes: the message names the tensor and the expected shape */
    st_entry bad = c.e[st_find(&c, "attention.W.weight")];
    bad.dims[0] = 8;
    st_write(&c, "attention.W.weight", &bad);
    EXPECT("wrong shape", CG_ERR_VERIFY, "tensor 'attention.W.weight' is f32[8, 8], expected f32[16, 8]");
    bad = c.e[st_find(&c, "combine.weight")];
    bad.ndim = 3;
    bad.dims[2] = 1;
    st_write(&c, "combine.weight", &bad);
    EXPECT("wrong rank", CG_ERR_VERIFY, "tensor 'combine.weight' is f32[8, 24, 1], expected f32[8, 24]");
    bad = c.e[st_find(&c, "src_embed.weight")];
    bad.dims[1] = 9;
    st_write(&c, "src_embed.weight", &bad);
    EXPECT("wrong embedding", CG_ERR_VERIFY, "tensor 'src_embed.weight' is f32[30, 9], expected f32[V, 10]");

    /* a tensor the configuration has no use for */
    st_entry extra = {.name = "encoder.weight_ih_l1", .ndim = 2, .dims = {24, 16}};
    st_write(&c, NULL, &extra);
    EXPECT("extra tensor", CG_ERR_VERIFY, "tensor 'encoder.weight_ih_l1' is not a parameter");

    /* garbage */
    write_text(p, "not a safetensors file");
    cg_s2s *m2 = NULL;
    ck_assert_int_ne(cg_s2s_load(ctx, mdir, NULL, NULL, &m2), CG_OK);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "weights.safetensors"));
    st_copy_free(&c);
}
END_TEST

/* The options structs: NULL is every default; a struct_size below the
 * struct's is refused with a message naming it (load, graph text,
 * translate). */
/* A stream's mistakes: room, sizes and ids checked, nothing added then;
 * a NULL stream refused. */
START_TEST(stream_mistakes) {
    char dir[1000];
    golden_path(dir, sizeof dir, BASE_VARIANT, NULL);
    cg_s2s *m = load_model(dir, "cpu");
    cg_s2s_stream *st = NULL;
    ck_assert_int_eq(cg_s2s_stream_open(m, NULL, 0, &st), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(st);
    cg_s2s_options bad = {.struct_size = sizeof bad, .beam = 2, .nbest = 3};
    ck_assert_int_eq(cg_s2s_stream_open(m, &bad, 2, &st), CG_ERR_INVALID_ARGUMENT);
    cg_s2s_options wide = {.struct_size = sizeof wide, .beam = 64};
    ck_assert_int_eq(cg_s2s_stream_open(m, &wide, 1000000, &st), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "decoder rows"));
    cg_s2s_options five = {.struct_size = sizeof five, .min_len = 5}; /* no source ends at the first step */
    ck_assert_int_eq(cg_s2s_stream_open(m, &five, 2, &st), CG_OK);
    int32_t a[2] = {4, 5}, wrong[1] = {1 << 20};
    const int32_t *two[2] = {a, a}, *three[3] = {a, a, a}, *w[1] = {wrong};
    int len[3] = {2, 2, 2}, tags[3] = {0, 1, 2};
    ck_assert_int_eq(cg_s2s_stream_add(st, 3, three, len, tags), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "room for 2"));
    ck_assert_int_eq(cg_s2s_stream_add(st, 1, w, len, tags), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "outside the source vocabulary") != NULL, "%s", cg_last_error());
    ck_assert_int_eq(cg_s2s_stream_pending(st), 0);
    ck_assert_int_eq(cg_s2s_stream_add(st, 2, two, len, tags), CG_OK);
    ck_assert_int_eq(cg_s2s_stream_room(st), 0);
    ck_assert_int_eq(cg_s2s_stream_step(st), CG_OK);
    ck_assert_int_eq(cg_s2s_stream_pending(st), 2);
    cg_s2s_stream_free(st); /* with sentences still decoding */
    ck_assert_int_eq(cg_s2s_stream_step(NULL), CG_ERR_INVALID_ARGUMENT);
    cg_s2s_free(m);
}
END_TEST

START_TEST(options_checked) {
    char dir[1000];
    golden_path(dir, sizeof dir, BASE_VARIANT, NULL);
    cg_s2s *m = NULL;
    cg_s2s_load_options lo = {0};
    ck_assert_int_eq(cg_s2s_load(ctx, dir, NULL, &lo, &m), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_s2s_load_options.struct_size is 0; set it to sizeof(cg_s2s_load_options)");
    ck_assert_ptr_null(m);
    char *text = NULL, *plain = NULL;
    ck_assert_int_eq(cg_s2s_graph_text(dir, &lo, &text), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_s2s_load_options.struct_size is 0; set it to sizeof(cg_s2s_load_options)");
    ck_assert_ptr_null(text);
    lo.struct_size = sizeof lo;
    ck_assert_int_eq(cg_s2s_graph_text(dir, &lo, &text), CG_OK);
    ck_assert_int_eq(cg_s2s_graph_text(dir, NULL, &plain), CG_OK);
    ck_assert_str_eq(text, plain);
    free(text);
    free(plain);

    golden g;
    golden_load(&g, BASE_VARIANT);
    m = load_model(dir, "cpu");
    cg_s2s_result *a = calloc((size_t)g.n, sizeof *a), *b = calloc((size_t)g.n, sizeof *b);
    ck_assert(a && b);
    const int32_t *const *src = (const int32_t *const *)g.src;
    cg_s2s_options o = {0};
    ck_assert_int_eq(cg_s2s_translate(m, &o, g.n, src, g.len, a, NULL, NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_s2s_options.struct_size is 0; set it to sizeof(cg_s2s_options)");
    o.struct_size = offsetof(cg_s2s_options, attention); /* one field short */
    ck_assert_int_eq(cg_s2s_translate(m, &o, g.n, src, g.len, a, NULL, NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "cg_s2s_options.struct_size is "));
    /* NULL: greedy with the defaults, as zeroed options */
    o.struct_size = sizeof o;
    translate(m, NULL, g.n, g.src, g.len, a);
    translate(m, &o, g.n, g.src, g.len, b);
    check_same("NULL options", g.n, a, b);
    clear_all(a, g.n);
    clear_all(b, g.n);
    free(a);
    free(b);
    cg_s2s_free(m);
    golden_free(&g);
}
END_TEST

/* translate --min-len is the library's min_len (ids in, ids out: a
 * minimum past several of the free decodes' EOS), and its mistakes. */
START_TEST(cli_min_len) {
    const char *v = "gru_additive_bahdanau_words";
    char dir[1000], ids[1000], p[1000];
    golden_path(dir, sizeof dir, v, NULL);
    golden_path(ids, sizeof ids, v, "sources.ids");
    golden_path(p, sizeof p, v, "greedy_ids.out");
    golden g;
    golden_load(&g, v);
    cg_s2s *m = load_model(dir, "cpu");
    cg_s2s_result *res = calloc((size_t)g.n, sizeof *res);
    ck_assert_ptr_nonnull(res);
    const cg_s2s_options o = {.struct_size = sizeof o, .min_len = 12};
    translate(m, &o, g.n, g.src, g.len, res);
    size_t cap = 16;
    for (int i = 0; i < g.n; i++) cap += 12 * (size_t)res[i].hyps[0].n_tokens + 2;
    char *want = calloc(cap, 1);
    ck_assert_ptr_nonnull(want);
    for (int i = 0; i < g.n; i++) {
        const cg_s2s_hyp *y = &res[i].hyps[0];
        ck_assert_int_ge(y->n_steps, 12);
        for (int t = 0; t < y->n_tokens; t++)
            snprintf(want + strlen(want), cap - strlen(want), "%s%d", t ? " " : "", y->tokens[t]);
        strcat(want, "\n");
    }
    const char *a[] = {"translate", dir, "--ids", "--min-len", "12", NULL};
    ck_assert_msg(tu_run_cli(a, NULL, ids) == 0, "%s", tu_err);
    ck_assert_str_eq(tu_out, want);
    char *free_out = must_read(p);
    ck_assert_msg(strcmp(free_out, want) != 0, "--min-len 12 changed nothing in %s", v);
    free(free_out);
    free(want);
    clear_all(res, g.n);
    free(res);
    cg_s2s_free(m);
    golden_free(&g);

    const char *over[] = {"translate", dir, "--min-len", "5", "--max-len", "3", NULL};
    ck_assert_int_eq(tu_run_cli(over, NULL, ids), 2);
    ck_assert_str_eq(tu_err, "clgraph translate: --min-len 5 is larger than --max-len 3\n");
    const char *neg[] = {"translate", dir, "--min-len", "-1", NULL};
    ck_assert_int_eq(tu_run_cli(neg, NULL, ids), 2);
    ck_assert_ptr_nonnull(strstr(tu_err, "--min-len"));
    const char *help[] = {"translate", "--help", NULL};
    ck_assert_int_eq(tu_run_cli(help, NULL, NULL), 0);
    ck_assert_ptr_nonnull(strstr(tu_out, "--min-len N"));
}
END_TEST

START_TEST(cli_load_error) {
    fresh_model();
    set_config("attention", "\"scaled_dot\"");
    char in[600];
    snprintf(in, sizeof in, "%s/in.txt", tu_dir);
    write_text(in, "the cat\n");
    const char *args[] = {"translate", mdir, NULL};
    ck_assert_int_eq(tu_run_cli(args, NULL, in), 1);
    tu_assert_one_line(NULL);
    ck_assert_msg(!strncmp(tu_err, "clgraph: ", 9), "%s", tu_err);
    ck_assert_ptr_nonnull(strstr(tu_err, "config.json: key 'attention'"));
    ck_assert_ptr_nonnull(strstr(tu_err, "K == H"));
    ck_assert_str_eq(tu_out, "");
}
END_TEST

/* ------------------------------------------------------------------ */
/* The demo date normaliser                                            */

/* Exact-match accuracy of the model in dir on the held-out file, on device. */
static double dates_eval(const char *dir, const char *device, const char *what) {
    char p[600];
    snprintf(p, sizeof p, "%s/tests/data/dates_heldout.tsv", tu_src_dir());
    char *text = must_read(p);
    char **lines;
    int nl = split_lines(text, &lines), n = 0;
    int32_t **src = calloc((size_t)nl + 1, sizeof *src);
    int *len = calloc((size_t)nl + 1, sizeof *len);
    const char **want = calloc((size_t)nl + 1, sizeof *want);
    cg_s2s_result *res = calloc((size_t)nl + 1, sizeof *res);
    ck_assert(src && len && want && res);
    double t0 = now();
    cg_s2s *m = load_model(dir, device);
    for (int i = 0; i < nl; i++) {
        char *l = lines[i];
        size_t ll = strlen(l);
        if (ll && l[ll - 1] == '\r') l[--ll] = 0;
        if (!ll) continue;
        char *tab = strchr(l, '\t');
        ck_assert_msg(tab != NULL, "dates_heldout.tsv:%d: no tab", i + 1);
        *tab = 0;
        want[n] = tab + 1;
        ck_assert_int_eq(cg_s2s_tokenize(m, l, &src[n], &len[n]), CG_OK);
        n++;
    }
    ck_assert_int_ge(n, 100);
    cg_s2s_options o = {.struct_size = sizeof(cg_s2s_options), .batch = 64};
    translate(m, &o, n, src, len, res);
    int right = 0;
    for (int i = 0; i < n; i++) {
        char *out;
        ck_assert_int_eq(cg_s2s_detokenize(m, res[i].hyps[0].tokens, res[i].hyps[0].n_tokens, &out), CG_OK);
        if (!strcmp(out, want[i])) right++;
        else if (n - right <= 10) printf("  dates: wrong: '%s' -> '%s', expected '%s'\n", lines[i], out, want[i]);
        free(out);
        free(src[i]);
        cg_s2s_result_clear(&res[i]);
    }
    double acc = (double)right / (double)n;
    printf("dates held-out exact-match accuracy, %s: %d/%d = %.2f%% (%s, batch 64, %.2f s)\n", what, right, n,
           100.0 * acc, device, now() - t0);
    fflush(stdout);
    cg_s2s_free(m);
    free(src);
    free(len);
    free(want);
    free(res);
    free(lines);
    free(text);
    return acc;
}

START_TEST(dates_accuracy) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/models/dates", tu_src_dir());
    double acc = dates_eval(dir, "cpu", "f32");
    ck_assert_msg(acc >= 0.99, "held-out accuracy %.4f < 0.99", acc);
}
END_TEST

/* The dates model through `clgraph quantize --to bf16`, `--to f16` and
 * `--to int8`: the matrix products read 16-bit or int8 weights (CPU kernels
 * as stored; OpenCL through the decomposition's cast or dequantization, the
 * encoder's layer op widening them once per run) and the held-out accuracy
 * stays within 0.2 points of f32's (issue 19); so does each taken so at
 * load (--weights-dtype). */
START_TEST(dates_accuracy_quantized) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/models/dates", tu_src_dir());
    const double ref = dates_eval(dir, "cpu", "f32");
    static const char *const types[] = {"bf16", "f16", "int8"};
    static const cg_dtype dts[] = {CG_BF16, CG_F16, CG_I8};
    for (int t = 0; t < 3; t++) {
        char out[700];
        snprintf(out, sizeof out, "%s", tu_path(types[t]));
        const char *args[] = {"quantize", dir, "--to", types[t], "-o", out, NULL};
        ck_assert_msg(tu_run_cli(args, NULL, NULL) == 0, "%s", tu_err);
        ck_assert_msg(strstr(tu_err, "11 of 23 tensors to ") != NULL, "%s", tu_err);
        /* the products read the weights as stored, not widened to f32 at
         * bind: every matrix-product param is declared in the narrow type */
        char *text = NULL, want[96];
        ck_assert_int_eq(cg_s2s_graph_text(out, NULL, &text), CG_OK);
        static const char *const mm[] = {"encoder.weight_ih_l0", "encoder.weight_hh_l0", "decoder.weight_hh_l0",
                                         "out.weight"};
        for (int k = 0; k < 4; k++) {
            snprintf(want, sizeof want, "param %s: %s[", mm[k], cg_dtype_name(dts[t]));
            ck_assert_msg(strstr(text, want) != NULL, "%s: no '%s' in\n%s", types[t], want, text);
        }
        free(text);
        for (int d = 0; d < 2 && d < cg_device_count(); d++) {
            const double acc = dates_eval(out, d ? "opencl:0" : "cpu", types[t]);
            ck_assert_msg(fabs(acc - ref) <= 0.002, "%s on %s: accuracy %.4f, f32 %.4f", types[t],
                          d ? "opencl:0" : "cpu", acc, ref);
        }
    }
    const char *bad[] = {"quantize", dir, "--to", "int4", "-o", tu_path("x"), NULL};
    ck_assert_int_eq(tu_run_cli(bad, NULL, NULL), 2);
    ck_assert_ptr_nonnull(strstr(tu_err, "--to takes bf16, f16 or int8"));
    /* a model that already has a tensor where a matrix's scales would go:
     * refused, as translate refuses it (quantize loads the model first) */
    {
        char dup[700], from[700], to[800];
        snprintf(dup, sizeof dup, "%s", tu_path("dup"));
        ck_assert_int_eq(mkdir(dup, 0777), 0);
        static const char *const files[] = {"config.json", "src.vocab", "tgt.vocab"};
        for (int f = 0; f < 3; f++) {
            snprintf(from, sizeof from, "%s/%s", dir, files[f]);
            snprintf(to, sizeof to, "%s/%s", dup, files[f]);
            copy_file(from, to);
        }
        snprintf(from, sizeof from, "%s/weights.safetensors", dir);
        cg_weights *w;
        ck_assert_int_eq(cg_weights_open(from, &w), CG_OK);
        const int n = cg_weights_count(w);
        const char *names[64];
        cg_tensor *ts[64];
        ck_assert_int_lt(n, 63);
        for (int i = 0; i < n; i++) {
            names[i] = cg_weights_name(w, i);
            ck_assert_int_eq(cg_weights_get_as(w, names[i], cg_weights_dtype(w, i), &ts[i]), CG_OK);
        }
        const int64_t one = 1;
        ck_assert_int_eq(cg_tensor_create(CG_F32, 1, &one, &ts[n]), CG_OK);
        names[n] = "out.weight_scale";
        snprintf(to, sizeof to, "%s/weights.safetensors", dup);
        ck_assert_int_eq(cg_weights_save(to, n + 1, names, (const cg_tensor *const *)ts), CG_OK);
        for (int i = 0; i <= n; i++) cg_tensor_free(ts[i]);
        cg_weights_free(w);
        const char *clash[] = {"quantize", dup, "--to", "int8", "-o", tu_path("dup8"), NULL};
        ck_assert_int_eq(tu_run_cli(clash, NULL, NULL), 1);
        ck_assert_msg(strstr(tu_err, "tensor 'out.weight_scale' is not a parameter of the model") != NULL, "%s",
                      tu_err);
        ck_assert_int_ne(access(tu_path("dup8"), F_OK), 0);
    }
    /* quantizing a quantized model again changes nothing */
    const char *again[] = {"quantize", tu_path("int8"), "--to", "int8", "-o", tu_path("y"), NULL};
    ck_assert_msg(tu_run_cli(again, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_err, "0 of 34 tensors to int8") != NULL, "%s", tu_err);
    /* the f32 model taken in 16 or 8 bits at load (--weights-dtype): the same */
    for (int t = 0; t < 3; t++) {
        g_weights_dtype = dts[t];
        char what[32];
        snprintf(what, sizeof what, "%s at load", types[t]);
        const double acc = dates_eval(dir, "cpu", what);
        g_weights_dtype = 0;
        ck_assert_msg(fabs(acc - ref) <= 0.002, "%s at load: accuracy %.4f, f32 %.4f", types[t], acc, ref);
    }
    /* the int8 model taken as f32 (dequantized at load) translates too */
    g_weights_dtype = CG_F32;
    snprintf(dir, sizeof dir, "%s", tu_path("int8"));
    const double deq = dates_eval(dir, "cpu", "int8 as f32");
    g_weights_dtype = 0;
    ck_assert_msg(fabs(deq - ref) <= 0.002, "int8 dequantized: accuracy %.4f, f32 %.4f", deq, ref);
    cg_s2s *m = NULL;
    cg_s2s_load_options lo = {.struct_size = sizeof lo, .weights_dtype = CG_U8};
    ck_assert_int_eq(cg_s2s_load(ctx, dir, NULL, &lo, &m), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "weights_dtype must be f32, bf16, f16 or i8, got u8"));
    ck_assert_ptr_null(m);
}
END_TEST

/* The generated decoders' state without `parent`: inputs [B, H] the host
 * reorders, as a model.cg written for that interface has them. */
/* Replaces every `from` in text by `to` (not longer than from), in place. */
static void replace_all(char *text, const char *from, const char *to) {
    size_t nf = strlen(from), nt = strlen(to);
    ck_assert(nt <= nf);
    for (char *q = text; (q = strstr(q, from));) {
        memcpy(q, to, nt);
        memmove(q + nt, q + nf, strlen(q + nf) + 1);
        q += nt;
    }
}

/* The decoder interface before carried state and per-sentence keys: state
 * inputs [B, H] given by the host (no parent, no gathers), and keys,
 * keys_proj, src_len one row per decoder row (no sentence). */
static void strip_parent(char *text) {
    char *w = text;
    for (char *r = text; *r;) {
        char *nl = strchr(r, '\n');
        size_t n = nl ? (size_t)(nl - r + 1) : strlen(r);
        const char *g = strstr(r, " = gather_rows(");
        int drop = (n >= 15 && !strncmp(r, "  input parent:", 15)) ||
                   (n >= 17 && !strncmp(r, "  input sentence:", 17)) || (g && g < r + n);
        if (!drop) {
            memmove(w, r, n);
            w += n;
        }
        r += n;
    }
    *w = 0;
    replace_all(text, "_sel", "");
    replace_all(text, ": f32[P, ", ": f32[B, ");
    replace_all(text, ": f32[N, ", ": f32[B, ");
    replace_all(text, ": i32[N]", ": i32[B]");
    replace_all(text, ", sentence)", ")");
    replace_all(text, "row_len", "src_len");
}

/* Writes dst/model.cg: the graphs generated for model directory src
 * without the selecting decoder, whose decoder_logp becomes 'decoder', with
 * the host's interface (strip_parent). */
static void write_host_selection(const char *src, const char *dst) {
    char *text = NULL;
    ck_assert_int_eq(cg_s2s_graph_text(src, NULL, &text), CG_OK);
    char *top = strstr(text, "graph decoder {"), *logp = strstr(text, "graph decoder_logp {");
    ck_assert(top && logp && top < logp && strstr(top, "log_softmax_topk") < logp);
    char *end = strstr(top, "\n}\n");
    ck_assert(end && end < logp);
    memmove(top, end + 3, strlen(end + 3) + 1);
    logp = strstr(text, "graph decoder_logp {");
    memmove(logp + strlen("graph decoder"), logp + strlen("graph decoder_logp"),
            strlen(logp + strlen("graph decoder_logp")) + 1);
    ck_assert(strstr(text, "input parent: i32[B]") && strstr(text, "h0_sel = gather_rows(h0, parent)"));
    ck_assert(!strstr(text, "attn_score") ||
              (strstr(text, "input sentence: i32[B]") && strstr(text, "input keys: f32[N, S, ")));
    strip_parent(text);
    ck_assert(!strstr(text, "parent") && !strstr(text, "_sel") && strstr(text, "input h0: f32[B, "));
    ck_assert(!strstr(text, "input sentence") && !strstr(text, ", sentence") && !strstr(text, "[N") &&
              !strstr(text, "gather_rows") &&
              (!strstr(text, "input keys:") ||
               (strstr(text, "input keys: f32[B, S, ") && strstr(text, "input src_len: i32[B]"))));
    char mc[700];
    snprintf(mc, sizeof mc, "%s/model.cg", dst);
    FILE *f = fopen(mc, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
    free(text);
}

/* The generated graph 'decoder' selects each row's best candidates on the
 * device (log_softmax_topk) and reorders its carried state itself; a
 * model.cg whose decoder outputs the whole logp and takes the state rows
 * from the host (no `parent`) makes the host do both. Both must decode
 * identically: greedy, beams up to the selection's width, and a beam wider
 * than it (which runs the generated 'decoder_logp'). On the CPU for every
 * variant, on the OpenCL device for the first. */
static void paths_agree(const char *variant, const char *device) {
    char gdir[1000], pdir[600], what[512];
    golden_path(gdir, sizeof gdir, variant, NULL);
    snprintf(pdir, sizeof pdir, "%s/logp", tu_dir);
    copy_model_files(variant, pdir);
    write_host_selection(gdir, pdir);
    /* s2s-graph prints the converted decoder, the one that runs */
    char *conv = NULL;
    ck_assert_int_eq(cg_s2s_graph_text(pdir, NULL, &conv), CG_OK);
    ck_assert_msg(strstr(conv, "input parent: i32[B]") && strstr(conv, "h0_sel = gather_rows(h0, parent)"), "%s", conv);
    ck_assert_msg(!strstr(conv, "attn_score") || strstr(conv, "input sentence: i32[B]"), "%s", conv);
    free(conv);
    golden g;
    golden_load(&g, variant);
    const int on_cpu = !strcmp(device, "cpu");
    cg_s2s *sel = load_model(gdir, device), *host = load_model(pdir, device);
    const cg_s2s_options opts[] = {
        {.struct_size = sizeof(cg_s2s_options), .attention = 1},
        {.struct_size = sizeof(cg_s2s_options), .beam = 4, .nbest = 2, .attention = 1},
        {.struct_size = sizeof(cg_s2s_options), .beam = S2S_TOP_K / 2, .nbest = 3, .alpha = 0.6},
        {.struct_size = sizeof(cg_s2s_options), .beam = S2S_TOP_K / 2 + 1, .nbest = 2},
    };
    cg_s2s_result *a = calloc((size_t)g.n, sizeof *a), *b = calloc((size_t)g.n, sizeof *b);
    ck_assert(a && b);
    for (size_t o = 0; o < sizeof opts / sizeof opts[0]; o++) {
        snprintf(what, sizeof what, "%s on %s, beam %d: device selection vs host selection", variant, device,
                 opts[o].beam);
        translate(sel, &opts[o], g.n, g.src, g.len, a);
        translate(host, &opts[o], g.n, g.src, g.len, b);
        check_same(what, g.n, a, b);
        /* On the CPU both read the same log_softmax values: bit-identical
         * scores. An OpenCL compiler may build exp differently in the two
         * kernels (within check_same's tolerance). */
        for (int i = 0; on_cpu && i < g.n; i++)
            for (int h = 0; h < a[i].n_hyps; h++)
                ck_assert_msg(a[i].hyps[h].score == b[i].hyps[h].score,
                              "%s: source %d hypothesis %d: score %.17g vs %.17g", what, i, h, a[i].hyps[h].score,
                              b[i].hyps[h].score);
        clear_all(a, g.n);
        clear_all(b, g.n);
    }
    free(a);
    free(b);
    cg_s2s_free(sel);
    cg_s2s_free(host);
    golden_free(&g);
}

START_TEST(decoder_paths_agree) { paths_agree(variants[_i], "cpu"); }
END_TEST

START_TEST(decoder_paths_agree_opencl) {
    if (have_opencl) paths_agree(variants[0], cl_dev);
}
END_TEST

/* ------------------------------------------------------------------ */
/* A deep model: nothing in the decoders bounds layers or graph inputs */

/* LSTM, a bidirectional encoder, a decoder of DEEP_LD layers, general
 * attention, Luong (so the output sees the keys whatever the depth), dense
 * bridge. Its decoder graph has 2 x DEEP_LD + 6 inputs and 2 x DEEP_LD + 4
 * outputs, its encoder DEEP_LD + 1 outputs: more than the fixed arrays
 * seq2seq/ once had (80 decoder inputs or outputs, 40 encoder outputs, 32
 * decoder layers, and 64 in the builder). Tiny widths keep it fast. */
#define DEEP_E 3
#define DEEP_H 3
#define DEEP_K (2 * DEEP_H)
#define DEEP_LE 33 /* an encoder node of 2 + 8 x 33 inputs: past the 256 verify once allowed */
#define DEEP_LD 66
#define DEEP_V 12
#define DEEP_S 6                                               /* the longest source */
#define DEEP_T (2 * DEEP_S + 10)                               /* the longest decode (default max_len) */
#define DEEP_N (2 + 8 * DEEP_LE + 2 + 4 * DEEP_LD + 1 + 2 + 2) /* tensors, at most */

typedef struct deep_model {
    st_entry e[DEEP_N];
    float *data[DEEP_N];
    int n, le; /* tensors, encoder layers */
    uint32_t rng;
    const float *src_emb, *tgt_emb, *enc[DEEP_LE][2][4], *bridge_w, *bridge_b, *dec[DEEP_LD][4], *att_w, *comb_w,
        *comb_b, *out_w, *out_b;
} deep_model;

/* A new tensor of uniform values in [-scale, scale) from a fixed LCG. */
static const float *deep_add(deep_model *dm, const char *name, int ndim, int d0, int d1, float scale) {
    ck_assert_int_lt(dm->n, DEEP_N);
    st_entry *e = &dm->e[dm->n];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->ndim = ndim;
    e->dims[0] = d0;
    e->dims[1] = d1;
    size_t numel = (size_t)d0 * (size_t)(ndim == 2 ? d1 : 1);
    float *d = malloc(sizeof *d * numel);
    ck_assert_ptr_nonnull(d);
    for (size_t i = 0; i < numel; i++) {
        dm->rng = dm->rng * 1664525u + 1013904223u;
        d[i] = scale * ((float)(dm->rng >> 8) / 8388608.0f - 1.0f);
    }
    e->data = dm->data[dm->n++] = d;
    return d;
}

/* The four parameters of layer l (direction sfx) of RNN `mod`. */
static void deep_rnn_layer(deep_model *dm, const char *mod, int l, const char *sfx, int in, const float *w[4]) {
    static const char *const kinds[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int k = 0; k < 4; k++) {
        char name[128];
        snprintf(name, sizeof name, "%s.%s_l%d%s", mod, kinds[k], l, sfx);
        w[k] = deep_add(dm, name, k < 2 ? 2 : 1, 4 * DEEP_H, k == 0 ? in : DEEP_H, 0.6f);
    }
}

/* A deep model with `le` encoder layers, its weights from `seed`. */
static deep_model *deep_make(uint32_t seed, int le) {
    deep_model *dm = calloc(1, sizeof *dm);
    ck_assert_ptr_nonnull(dm);
    ck_assert_int_le(le, DEEP_LE);
    dm->rng = seed;
    dm->le = le;
    dm->src_emb = deep_add(dm, "src_embed.weight", 2, DEEP_V, DEEP_E, 1.5f);
    dm->tgt_emb = deep_add(dm, "tgt_embed.weight", 2, DEEP_V, DEEP_E, 1.5f);
    for (int l = 0; l < le; l++)
        for (int d = 0; d < 2; d++)
            deep_rnn_layer(dm, "encoder", l, d ? "_reverse" : "", l ? DEEP_K : DEEP_E, dm->enc[l][d]);
    dm->bridge_w = deep_add(dm, "bridge.weight", 2, DEEP_LD * DEEP_H, DEEP_K, 1.0f);
    dm->bridge_b = deep_add(dm, "bridge.bias", 1, DEEP_LD * DEEP_H, 0, 0.5f);
    for (int l = 0; l < DEEP_LD; l++) deep_rnn_layer(dm, "decoder", l, "", l ? DEEP_H : DEEP_E + DEEP_H, dm->dec[l]);
    dm->att_w = deep_add(dm, "attention.W.weight", 2, DEEP_K, DEEP_H, 2.0f);
    dm->comb_w = deep_add(dm, "combine.weight", 2, DEEP_H, DEEP_K + DEEP_H, 2.0f);
    dm->comb_b = deep_add(dm, "combine.bias", 1, DEEP_H, 0, 0.5f);
    dm->out_w = deep_add(dm, "out.weight", 2, DEEP_V, DEEP_H, 6.0f);
    dm->out_b = deep_add(dm, "out.bias", 1, DEEP_V, 0, 1.0f);
    dm->data[dm->n - 1][2] += 1.0f; /* EOS: some sources end before max_len */
    ck_assert_int_eq(dm->n, DEEP_N - 8 * (DEEP_LE - le));
    return dm;
}

static void deep_free(deep_model *dm) {
    for (int i = 0; i < dm->n; i++) free(dm->data[i]);
    free(dm);
}

/* The model directory `dir` (created). */
static void deep_write(const deep_model *dm, const char *dir) {
    char p[700];
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    snprintf(p, sizeof p, "%s/config.json", dir);
    char cfg[512];
    snprintf(cfg, sizeof cfg,
             "{\"cell\": \"lstm\", \"emb_dim\": %d, \"hidden\": %d, \"encoder_layers\": %d, \"bidirectional\": true, "
             "\"decoder_layers\": %d, \"attention\": \"general\", \"decoder_style\": \"luong\"}\n",
             DEEP_E, DEEP_H, dm->le, DEEP_LD);
    write_text(p, cfg);
    snprintf(p, sizeof p, "%s/weights.safetensors", dir);
    write_safetensors(p, dm->e, dm->n);
    char vocab[512] = "<pad>\n<s>\n</s>\n<unk>\n";
    for (int i = 4; i < DEEP_V; i++) snprintf(vocab + strlen(vocab), sizeof vocab - strlen(vocab), "w%d\n", i);
    snprintf(p, sizeof p, "%s/src.vocab", dir);
    write_text(p, vocab);
    snprintf(p, sizeof p, "%s/tgt.vocab", dir);
    write_text(p, vocab);
}

static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }

/* torch.nn.LSTM's cell, in double: gates i, f, g, o; h and c in place. */
static void ref_lstm(const float *const w[4], int in_dim, const double *x, double *h, double *c) {
    double g[4 * DEEP_H];
    for (int r = 0; r < 4 * DEEP_H; r++) {
        double s = (double)w[2][r] + (double)w[3][r];
        for (int j = 0; j < in_dim; j++) s += (double)w[0][r * in_dim + j] * x[j];
        for (int j = 0; j < DEEP_H; j++) s += (double)w[1][r * DEEP_H + j] * h[j];
        g[r] = s;
    }
    for (int j = 0; j < DEEP_H; j++) {
        c[j] = sigm(g[DEEP_H + j]) * c[j] + sigm(g[j]) * tanh(g[2 * DEEP_H + j]);
        h[j] = sigm(g[3 * DEEP_H + j]) * tanh(c[j]);
    }
}

/* The spec's encoder: keys (the top layer's outputs, forward then backward)
 * and h_last (both directions' final states). */
static void ref_encode(const deep_model *dm, const int32_t *src, int n, double keys[DEEP_S][DEEP_K],
                       double h_last[DEEP_K]) {
    double in[DEEP_S][DEEP_K] = {{0}}, out[DEEP_S][DEEP_K];
    for (int t = 0; t < n; t++)
        for (int j = 0; j < DEEP_E; j++) in[t][j] = dm->src_emb[src[t] * DEEP_E + j];
    for (int l = 0; l < dm->le; l++) {
        for (int d = 0; d < 2; d++) {
            double h[DEEP_H] = {0}, c[DEEP_H] = {0};
            for (int s = 0; s < n; s++) {
                int t = d ? n - 1 - s : s;
                ref_lstm(dm->enc[l][d], l ? DEEP_K : DEEP_E, in[t], h, c);
                for (int j = 0; j < DEEP_H; j++) out[t][d * DEEP_H + j] = h[j];
            }
            for (int j = 0; j < DEEP_H; j++) h_last[d * DEEP_H + j] = h[j];
        }
        memcpy(in, out, sizeof in);
    }
    memcpy(keys, in, sizeof in);
}

typedef struct ref_result {
    int32_t toks[DEEP_T];
    int n, steps;
    double score, min_gap; /* min_gap: the smallest logp margin of a choice */
    double att[DEEP_T][DEEP_S];
} ref_result;

/* General attention of query q over the first n keys: weights a, context. */
static void ref_attend(const deep_model *dm, double keys[DEEP_S][DEEP_K], int n, const double *q, double *a,
                       double *ctx) {
    double wq[DEEP_K], mx = -INFINITY, sum = 0;
    for (int k = 0; k < DEEP_K; k++) {
        wq[k] = 0;
        for (int j = 0; j < DEEP_H; j++) wq[k] += (double)dm->att_w[k * DEEP_H + j] * q[j];
    }
    for (int i = 0; i < n; i++) {
        a[i] = 0;
        for (int k = 0; k < DEEP_K; k++) a[i] += keys[i][k] * wq[k];
        if (a[i] > mx) mx = a[i];
    }
    for (int i = 0; i < n; i++) sum += a[i] = exp(a[i] - mx);
    for (int k = 0; k < DEEP_K; k++) ctx[k] = 0;
    for (int i = 0; i < n; i++) {
        a[i] /= sum;
        for (int k = 0; k < DEEP_K; k++) ctx[k] += a[i] * keys[i][k];
    }
}

/* h~ = tanh(combine([c; s])), then log_softmax(out(h~)) into lp. */
static void ref_output(const deep_model *dm, const double *ctx, const double *s, double *ht, double *lp) {
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < DEEP_H; j++) {
        double v = dm->comb_b[j];
        for (int k = 0; k < DEEP_K + DEEP_H; k++)
            v += (double)dm->comb_w[j * (DEEP_K + DEEP_H) + k] * (k < DEEP_K ? ctx[k] : s[k - DEEP_K]);
        ht[j] = tanh(v);
    }
    for (int v = 0; v < DEEP_V; v++) {
        lp[v] = dm->out_b[v];
        for (int j = 0; j < DEEP_H; j++) lp[v] += (double)dm->out_w[v * DEEP_H + j] * ht[j];
        if (lp[v] > mx) mx = lp[v];
    }
    for (int v = 0; v < DEEP_V; v++) sum += exp(lp[v] - mx);
    for (int v = 0; v < DEEP_V; v++) lp[v] -= mx + log(sum);
}

/* Greedy decoding by the spec's equations (Luong: the RNN stack on
 * [y; h~], then attend with the top layer's new state), in double, with
 * cg_s2s_options.min_len as Hugging Face's min_length reads it: EOS's
 * log-probability is -inf at a step t with t + 1 < min_len, and the default
 * max_len (2 x n + 10) is at least min_len. */
static void ref_greedy(const deep_model *dm, const int32_t *src, int n, int min_len, ref_result *r) {
    double h[DEEP_LD][DEEP_H], c[DEEP_LD][DEEP_H], keys[DEEP_S][DEEP_K], h_last[DEEP_K];
    double x[DEEP_E + DEEP_H] = {0}, ctx[DEEP_K], lp[DEEP_V];
    ref_encode(dm, src, n, keys, h_last);
    for (int l = 0; l < DEEP_LD; l++)
        for (int j = 0; j < DEEP_H; j++) {
            double s = dm->bridge_b[l * DEEP_H + j];
            for (int k = 0; k < DEEP_K; k++) s += (double)dm->bridge_w[(l * DEEP_H + j) * DEEP_K + k] * h_last[k];
            h[l][j] = tanh(s);
            c[l][j] = 0;
        }
    memset(r, 0, sizeof *r);
    r->min_gap = INFINITY;
    const int max_len = 2 * n + 10 > min_len ? 2 * n + 10 : min_len;
    ck_assert_int_le(max_len, DEEP_T);
    for (int t = 0, prev = 1 /* BOS */; t < max_len; t++) {
        for (int j = 0; j < DEEP_E; j++) x[j] = dm->tgt_emb[prev * DEEP_E + j];
        ref_lstm(dm->dec[0], DEEP_E + DEEP_H, x, h[0], c[0]);
        for (int l = 1; l < DEEP_LD; l++) ref_lstm(dm->dec[l], DEEP_H, h[l - 1], h[l], c[l]);
        ref_attend(dm, keys, n, h[DEEP_LD - 1], r->att[t], ctx);
        ref_output(dm, ctx, h[DEEP_LD - 1], x + DEEP_E, lp); /* h~ feeds the next step */
        if (t + 1 < min_len) lp[2 /* EOS */] = -INFINITY;
        int best = 0, second = -1;
        for (int v = 1; v < DEEP_V; v++) {
            if (lp[v] > lp[best]) second = best, best = v;
            else if (second < 0 || lp[v] > lp[second]) second = v;
        }
        if (lp[best] - lp[second] < r->min_gap) r->min_gap = lp[best] - lp[second];
        r->score += lp[best];
        r->steps++;
        if (best == 2 /* EOS */) break;
        r->toks[r->n++] = prev = best;
    }
}

/* Greedy results of the deep model against ref_greedy with `min_len`:
 * tokens, steps, scores and attention. Returns the reference's EOS stops. */
static int deep_check_greedy(const deep_model *dm, const char *device, int min_len, int n, int32_t *const *src,
                             const int *len, const cg_s2s_result *res) {
    int eos_stops = 0;
    for (int i = 0; i < n; i++) {
        ref_result r;
        ref_greedy(dm, src[i], len[i], min_len, &r);
        ck_assert_msg(r.min_gap > 1e-3, "source %d: the reference's margin %g is too small to compare", i, r.min_gap);
        const cg_s2s_hyp *y = &res[i].hyps[0];
        int same = y->n_tokens == r.n && y->n_steps == r.steps;
        for (int t = 0; same && t < r.n; t++) same = y->tokens[t] == r.toks[t];
        ck_assert_msg(same,
                      "deep model on %s, min_len %d: source %d: %d tokens in %d steps, the reference %d in %d "
                      "(or other tokens)",
                      device, min_len, i, y->n_tokens, y->n_steps, r.n, r.steps);
        ck_assert_msg(fabs(y->score - r.score) <= TOL_GOLDEN,
                      "deep model on %s, min_len %d: source %d: score %.8f, "
                      "reference %.8f",
                      device, min_len, i, y->score, r.score);
        for (int t = 0; t < r.steps; t++)
            for (int j = 0; j < len[i]; j++)
                ck_assert_msg(fabs(y->attention[t * len[i] + j] - r.att[t][j]) <= TOL_GOLDEN,
                              "deep model on %s: source %d: attention[%d][%d] = %.7f, reference %.7f", device, i, t, j,
                              y->attention[t * len[i] + j], r.att[t][j]);
        char toks[256] = "";
        for (int t = 0; t < r.n && strlen(toks) < sizeof toks - 8; t++)
            snprintf(toks + strlen(toks), sizeof toks - strlen(toks), " %d", r.toks[t]);
        printf("  deep model, encoder x%d, on %s, min_len %d: source %d (length %d): %s after %d tokens:%s\n", dm->le,
               device, min_len, i, len[i], r.steps > r.n ? "EOS" : "max_len", r.n, toks);
        eos_stops += r.steps > r.n;
    }
    return eos_stops;
}

/* The deep model (dir) and its host-interface copy (hdir) on `device`:
 * greedy as the equations say (with min_len too), in any batching, and
 * both interfaces alike, greedy and beam. Returns the free greedy decodes
 * that stop at EOS (what min_len can move). */
static int deep_decode(const deep_model *dm, const char *dir, const char *hdir, const char *device) {
    cg_s2s *m = load_model(dir, device), *hm = load_model(hdir, device);
    const cg_graph *dec = cg_model_graph(cg_s2s_model(m), "decoder"), *enc = cg_model_graph(cg_s2s_model(m), "encoder"),
                   *hdec = cg_model_graph(cg_s2s_model(hm), "decoder");
    /* y_prev, keys, src_len, sentence, parent, h<l>, c<l>, htilde; top_logp,
     * top_id, h<l>_new, c<l>_new, a, htilde_new; the host's model.cg has no
     * sentence and no parent, and gets both when it is converted at load */
    ck_assert_int_eq(cg_graph_input_count(dec), 2 * DEEP_LD + 6);
    ck_assert_int_eq(cg_graph_output_count(dec), 2 * DEEP_LD + 4);
    ck_assert_int_eq(cg_graph_input_count(hdec), 2 * DEEP_LD + 6);
    ck_assert_str_eq(cg_graph_input_name(hdec, 2 * DEEP_LD + 4), "parent");
    ck_assert_str_eq(cg_graph_input_name(hdec, 2 * DEEP_LD + 5), "sentence");
    ck_assert_int_eq(cg_graph_output_count(enc), DEEP_LD + 1);
    ck_assert(cg_graph_input_count(dec) > 80 && cg_graph_output_count(enc) > 40 && DEEP_LD > 64);
    enum { NS = 5 };
    int32_t srcs[NS][DEEP_S], *src[NS];
    int len[NS] = {4, 1, 6, 3, 5};
    for (int i = 0; i < NS; i++) {
        src[i] = srcs[i];
        for (int j = 0; j < len[i]; j++) srcs[i][j] = 4 + (i * 5 + j * 3) % (DEEP_V - 4);
    }
    cg_s2s_result res[NS], alt[NS];
    char what[128];
    cg_s2s_options o = {.struct_size = sizeof o, .attention = 1},
                   one = {.struct_size = sizeof one, .attention = 1, .batch = 1},
                   beam = {.struct_size = sizeof beam, .beam = 3, .nbest = 2};
    translate(m, &o, NS, src, len, res);
    const int eos_stops = deep_check_greedy(dm, device, 0, NS, src, len, res);
    translate(m, &one, NS, src, len, alt);
    snprintf(what, sizeof what, "deep model on %s, batch 1", device);
    check_same(what, NS, res, alt);
    clear_all(alt, NS);
    translate(hm, &o, NS, src, len, alt);
    snprintf(what, sizeof what, "deep model on %s, host selection", device);
    check_same(what, NS, res, alt);
    clear_all(res, NS);
    clear_all(alt, NS);
    /* min_len on both interfaces (top_logp, the whole logp) against the
     * reference that masks EOS: 1 changes nothing, 8 and DEEP_T move EOS
     * stops later (DEEP_T: every source runs to DEEP_T steps, past the
     * default max_len of the shorter ones) */
    static const int min_lens[] = {1, 8, DEEP_T};
    for (size_t k = 0; k < sizeof min_lens / sizeof min_lens[0]; k++) {
        cg_s2s_options mo = o;
        mo.min_len = min_lens[k];
        translate(m, &mo, NS, src, len, res);
        translate(hm, &mo, NS, src, len, alt);
        deep_check_greedy(dm, device, mo.min_len, NS, src, len, res);
        deep_check_greedy(dm, device, mo.min_len, NS, src, len, alt);
        for (int i = 0; mo.min_len == DEEP_T && i < NS; i++) ck_assert_int_ge(res[i].hyps[0].n_steps, DEEP_T);
        clear_all(res, NS);
        clear_all(alt, NS);
    }
    translate(m, &beam, NS, src, len, res);
    translate(hm, &beam, NS, src, len, alt);
    snprintf(what, sizeof what, "deep model on %s, beam 3: device selection vs host selection", device);
    check_same(what, NS, res, alt);
    clear_all(res, NS);
    clear_all(alt, NS);
    cg_s2s_free(m);
    cg_s2s_free(hm);
    return eos_stops;
}

/* A model deeper, and with more graph inputs and outputs, than seq2seq/
 * once had room for loads and decodes by the spec (deep_model above): with
 * 2 encoder layers on the CPU and on the OpenCL device (its tokens depend on the
 * source), and with DEEP_LE encoder layers (one encoder node of more
 * inputs than a graph node once could take) on the CPU. */
static int deep_case(int encoder_layers, const char *device) {
    double t0 = now();
    deep_model *dm = deep_make(1, encoder_layers);
    char dir[600], hdir[600];
    snprintf(dir, sizeof dir, "%s/deep%d", tu_dir, encoder_layers);
    snprintf(hdir, sizeof hdir, "%s/deep%d_host", tu_dir, encoder_layers);
    deep_write(dm, dir);
    deep_write(dm, hdir);
    write_host_selection(dir, hdir);
    const int eos_stops = deep_decode(dm, dir, hdir, device);
    deep_free(dm);
    printf("deep model (decoder %d layers, encoder %d) on %s: ok (%.2f s)\n", DEEP_LD, encoder_layers, device,
           now() - t0);
    fflush(stdout);
    return eos_stops;
}

/* (Sources of the 2-layer encoder stop at EOS: min_len masks something.) */
START_TEST(deep_model_decodes) {
    ck_assert_msg(deep_case(2, "cpu") > 0, "deep model: no source stops at EOS, so min_len would mask nothing");
    deep_case(DEEP_LE, "cpu");
}
END_TEST

START_TEST(deep_model_decodes_opencl) {
    if (have_opencl) ck_assert_int_gt(deep_case(2, cl_dev), 0);
}
END_TEST

/* The number after `prefix` in text (-1 if absent). */
static int text_int(const char *text, const char *prefix) {
    const char *q = strstr(text, prefix);
    return q ? atoi(q + strlen(prefix)) : -1;
}

/* A beam's rows share their sentence's keys: on an OpenCL device the decoder moves
 * the keys (and src_len) of each sentence once per batch, plus per step only
 * ids, indices and the selected candidates (and the state on the first
 * step). With keys per row the 4 sentences x (1 + beam 4) rows of keys would
 * be 5x the keys' bytes. Sizes from the generated graph. */
START_TEST(keys_cross_once_per_sentence) {
    if (!have_opencl) return;
    /* the check's run of a grown binding uploads its own copy of the keys */
    tu_check_runs_pause();
    const char *variant = variants[0];
    char gdir[1000];
    golden_path(gdir, sizeof gdir, variant, NULL);
    char *text = NULL;
    ck_assert_int_eq(cg_s2s_graph_text(gdir, NULL, &text), CG_OK);
    const char *dec = strstr(text, "graph decoder {");
    ck_assert_ptr_nonnull(dec);
    const int K = text_int(dec, "input keys: f32[N, S, "), A = text_int(dec, "input keys_proj: f32[N, S, ");
    const int H = text_int(dec, "input h0: f32[P, "), TK = text_int(dec, "log_softmax_topk(logits) {k: ");
    const int V = text_int(text, "param src_embed.weight: f32[");
    ck_assert_msg(K > 0 && A > 0 && H > 0 && TK > 0 && V > 3 && !strstr(dec, "input c0:") && !strstr(dec, "htilde"),
                  "%s: K %d A %d H %d TK %d V %d", variant, K, A, H, TK, V);
    int L = 0;
    while (L < 8) {
        char nm[32];
        snprintf(nm, sizeof nm, "input h%d: f32[P, ", L);
        if (!strstr(dec, nm)) break;
        L++;
    }
    free(text);
    enum { N = 4, S = 40, BEAM = 4, STEPS = 3 };
    int32_t *src[N], len[N];
    for (int i = 0; i < N; i++) {
        len[i] = S;
        src[i] = malloc(sizeof(int32_t) * S);
        ck_assert_ptr_nonnull(src[i]);
        for (int j = 0; j < S; j++) src[i][j] = 3 + (7 * i + 5 * j) % (V - 3);
    }
    cg_s2s *m = load_model(gdir, cl_dev);
    cg_plan_stats before, after;
    ck_assert_int_eq(cg_s2s_stats(m, NULL, &before), CG_OK);
    cg_s2s_result res[N];
    /* min_len = max_len: EOS masked until the last step, every row lives */
    const cg_s2s_options o = {.struct_size = sizeof o, .beam = BEAM, .max_len = STEPS, .min_len = STEPS};
    translate(m, &o, N, src, len, res);
    ck_assert_int_eq(cg_s2s_stats(m, NULL, &after), CG_OK);
    const uint64_t runs = after.runs - before.runs, bytes = after.bytes_copied - before.bytes_copied;
    ck_assert_uint_eq(runs, STEPS);
    /* rows: N at the first step, N x BEAM after (a power of two: no padding) */
    const uint64_t keys_once = (uint64_t)N * S * (uint64_t)(K + A) * 4 + N * 4;
    const uint64_t per_row = 3 * 4 + (uint64_t)TK * 8; /* y_prev, sentence, parent in; top_logp, top_id out */
    const uint64_t want =
        keys_once + (uint64_t)N * (per_row + (uint64_t)L * H * 4) + (uint64_t)(STEPS - 1) * N * BEAM * per_row;
    ck_assert_msg(bytes == want, "%llu bytes crossed in %llu steps, expected %llu (keys once: %llu)",
                  (unsigned long long)bytes, (unsigned long long)runs, (unsigned long long)want,
                  (unsigned long long)keys_once);
    clear_all(res, N);
    cg_s2s_free(m);
    for (int i = 0; i < N; i++) free(src[i]);
    tu_check_runs_resume();
}
END_TEST

/* Code points drawn for a label (heatmap.h: label(s)). */
static int label_len(const char *s) {
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) n += (*p & 0xC0) != 0x80;
    return n < HEATMAP_MAX_LABEL ? n : HEATMAP_MAX_LABEL;
}

static uint32_t be32(const unsigned char *b) {
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

START_TEST(dates_attention_files) {
    char dir[600], p[600], in[600], json[600], png[600];
    snprintf(dir, sizeof dir, "%s/models/dates", tu_src_dir());
    snprintf(p, sizeof p, "%s/tests/data/dates_heldout.tsv", tu_src_dir());
    char *text = must_read(p);
    char *tab = strchr(text, '\t'), *nl = tab ? strchr(tab, '\n') : NULL;
    ck_assert(tab && nl);
    *tab = 0;
    *nl = 0;
    if (nl > tab + 1 && nl[-1] == '\r') nl[-1] = 0;
    const char *source = text, *target = tab + 1;
    snprintf(in, sizeof in, "%s/in.txt", tu_dir);
    char line[512];
    snprintf(line, sizeof line, "%s\n", source);
    write_text(in, line);

    /* JSON: rows = output tokens + the EOS step, columns = source length */
    snprintf(json, sizeof json, "%s/att.json", tu_dir);
    const char *a1[] = {"translate", dir, "--attention", json, NULL};
    ck_assert_msg(tu_run_cli(a1, NULL, in) == 0, "%s", tu_err);
    snprintf(line, sizeof line, "%s\n", target);
    ck_assert_str_eq(tu_out, line);
    cJSON *j = read_json(json);
    cJSON *srcs = cJSON_GetObjectItemCaseSensitive(j, "sources");
    ck_assert_int_eq(cJSON_GetArraySize(srcs), 1);
    cJSON *s0 = cJSON_GetArrayItem(srcs, 0);
    cJSON *stoks = cJSON_GetObjectItemCaseSensitive(s0, "source");
    int S = cJSON_GetArraySize(stoks);
    int cps = 0; /* chars: one token per code point */
    for (const unsigned char *q = (const unsigned char *)source; *q; q++) cps += (*q & 0xC0) != 0x80;
    ck_assert_int_eq(S, cps);
    cJSON *h0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(s0, "hypotheses"), 0);
    cJSON *otoks = cJSON_GetObjectItemCaseSensitive(h0, "output");
    int T = cJSON_GetArraySize(otoks);
    ck_assert_int_eq(T, (int)strlen(target));
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h0, "eos")));
    cJSON *att = cJSON_GetObjectItemCaseSensitive(h0, "attention");
    ck_assert_int_eq(cJSON_GetArraySize(att), T + 1);
    cJSON *row;
    cJSON_ArrayForEach(row, att) {
        ck_assert_int_eq(cJSON_GetArraySize(row), S);
        double sum = 0;
        cJSON *x;
        cJSON_ArrayForEach(x, row) {
            ck_assert(cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble <= 1);
            sum += x->valuedouble;
        }
        ck_assert_msg(fabs(sum - 1) < 1e-3, "an attention row sums to %g", sum);
    }

    /* PNG: the size the layout in heatmap.h gives */
    snprintf(png, sizeof png, "%s/att.png", tu_dir);
    const char *a2[] = {"translate", dir, "--attention", png, NULL};
    if (!tu_have_feature("png")) { /* -Dpng=disabled: one line saying so */
        ck_assert_int_eq(tu_run_cli(a2, NULL, in), 1);
        ck_assert_msg(strstr(tu_err, "has no PNG output"), "%s", tu_err);
        printf("no PNG output in this build: the heat map's size not checked\n");
        cJSON_Delete(j);
        free(text);
        return;
    }
    ck_assert_msg(tu_run_cli(a2, NULL, in) == 0, "%s", tu_err);
    size_t n;
    unsigned char *b = (unsigned char *)tu_read_text(png, &n);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_ge(n, 33);
    ck_assert_msg(!memcmp(b, "\x89PNG\r\n\x1a\n", 8) && !memcmp(b + 12, "IHDR", 4), "not a PNG");
    uint32_t w = be32(b + 16), h = be32(b + 20);
    free(b);
    int rows = T + 1, row_w = label_len(HEATMAP_EOS) * FONT_ADV, col_h = 0;
    cJSON *x;
    cJSON_ArrayForEach(x, otoks) {
        int lw = label_len(x->valuestring) * FONT_ADV;
        if (lw > row_w) row_w = lw;
    }
    cJSON_ArrayForEach(x, stoks) {
        int l = label_len(x->valuestring), ch = l == 1 ? FONT_H : l * FONT_ADV;
        if (ch > col_h) col_h = ch;
    }
    int left = 2 * HEATMAP_PAD + row_w, min_left = HEATMAP_MIN_WIDTH - S * HEATMAP_CELL;
    if (left < min_left) left = min_left;
    int top = 3 * HEATMAP_PAD + FONT_H + col_h;
    int ew = left + S * HEATMAP_CELL, eh = top + rows * HEATMAP_CELL, k = cg_png_scale(ew, eh);
    ck_assert_int_eq(k, HEATMAP_PNG_SCALE); /* a small map is written at the scale */
    ew *= k, eh *= k;
    ck_assert_msg((int)w == ew && (int)h == eh, "the PNG is %ux%u, the layout gives %dx%d (%d x %d cells)", w, h, ew,
                  eh, S, rows);
    printf("dates heat map for '%s': %d x %d cells, %ux%u pixels\n", source, S, rows, w, h);
    cJSON_Delete(j);
    free(text);
}
END_TEST

int main(void) {
    scan_variants();
    if (cg_context_create(NULL, &ctx) != CG_OK) {
        fprintf(stderr, "cg_context_create: %s\n", cg_last_error());
        return 1;
    }
    have_opencl = cg_device_count() > 1;
    const char *dev_env = getenv("CG_TEST_OPENCL_DEVICE");
    if (dev_env && *dev_env) cl_dev = dev_env;
    if (!have_opencl)
        printf("note: no OpenCL device (%s): the %s parity tests only print this note\n",
               cg_device_note() ? cg_device_note() : "?", cl_dev);
    int nv = n_variants > 0 ? n_variants : 1;
    Suite *s = suite_create("s2s");
    TCase *tg = tcase_create("golden");
    tcase_add_checked_fixture(tg, setup, tu_teardown_dir);
    tcase_set_timeout(tg, 900);
    tcase_add_test(tg, golden_variants_present);
    tcase_add_loop_test(tg, golden_cpu, 0, nv);
    tcase_add_loop_test(tg, decoder_paths_agree, 0, nv);
    tcase_add_test(tg, deep_model_decodes);
    suite_add_tcase(s, tg);
    TCase *to = tcase_create("opencl");
    tcase_add_checked_fixture(to, setup, tu_teardown_dir);
    tcase_set_timeout(to, 900);
    tcase_add_loop_test(to, golden_opencl, 0, nv);
    tcase_add_test(to, decoder_paths_agree_opencl);
    tcase_add_test(to, deep_model_decodes_opencl);
    tcase_add_test(to, keys_cross_once_per_sentence);
    suite_add_tcase(s, to);
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, tu_teardown_dir);
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, cli_text_output, 0, nv);
    tcase_add_test(tc, cli_load_error);
    tcase_add_test(tc, cli_min_len);
    suite_add_tcase(s, tc);
    TCase *te = tcase_create("errors");
    tcase_add_checked_fixture(te, setup, tu_teardown_dir);
    tcase_add_test(te, config_mistakes);
    tcase_add_test(te, vocab_mistakes);
    tcase_add_test(te, weights_mistakes);
    tcase_add_test(te, options_checked);
    tcase_add_test(te, stream_mistakes);
    suite_add_tcase(s, te);
    TCase *td = tcase_create("dates");
    tcase_add_checked_fixture(td, setup, tu_teardown_dir);
    tcase_set_timeout(td, 900);
    tcase_add_test(td, dates_accuracy);
    tcase_add_test(td, dates_accuracy_quantized);
    tcase_add_test(td, dates_attention_files);
    suite_add_tcase(s, td);
    /* PoCL initialised before fork() hangs the child: never fork. */
    int rc = tu_run_suite(s, 1);
    cg_context_free(ctx);
    free(tu_out);
    free(tu_err);
    return rc;
}
