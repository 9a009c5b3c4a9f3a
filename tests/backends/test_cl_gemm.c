/* OpenCL SGEMM (backends/opencl/cl_gemm.c): the own kernels (GEMV and tiled
 * GEMM), CLBlast and the measured choice against a double-precision
 * reference, over thin and odd shapes, every transpose combination, alpha,
 * beta (0 with C full of NaN), offsets and padded leading dimensions; the
 * choices file (written, read back, hand-edited); when a shape is measured
 * (at its Nth call, never for GEMV shapes); CLBlast failing (through a test
 * hook) and the fallback to the own kernels; CLGRAPH_GEMM; bad arguments;
 * own kernels built on first use; dropping a device's state; concurrent
 * callers.
 *
 * Shapes are measured at their first call here (cg_cl_gemm_test_set_measure_after(1))
 * unless a test says otherwise.
 *
 * Runs without fork (PoCL initialised before fork() hangs the child), with
 * CLGRAPH_CACHE_DIR in a fresh temporary directory. Exits 77 (skip) when
 * there is no OpenCL device. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <check.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opencl/cl_backend.h"
#include "opencl/cl_gemm_internal.h"
#include "opencl/cl_internal.h"
#include "clgraph/clgraph.h"
#include "test_util.h"

static cg_cl_device *g_dev;
static char g_tmp[256];

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

static float frand(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* Memory layouts of a case: offsets and extra leading-dimension padding. */
typedef struct layout {
    int64_t a_off, b_off, c_off;
    int pad;    /* ld = cols + pad */
    int align4; /* round ld up to a multiple of 4 first */
} layout;

static const layout k_layouts[] = {
    {0, 0, 0, 0, 0},  /* tight: float4 paths with aligned pointers where possible */
    {3, 5, 7, 3, 0},  /* odd offsets and padding: vload4 / scalar paths */
    {4, 8, 12, 4, 1}, /* aligned offsets, padded to multiples of 4 */
};
#define NLAYOUTS 3

static int64_t ld_of(int64_t cols, const layout *l) {
    int64_t ld = cols < 1 ? 1 : cols;
    if (l->align4) ld = (ld + 3) / 4 * 4;
    return ld + l->pad;
}

static const char *mode_name(int mode) {
    return mode == CG_GEMM_OWN ? "own" : mode == CG_GEMM_CLBLAST ? "clblast" : "auto";
}

static cl_mem upload(const float *h, size_t n) {
    cl_mem m;
    cg_status s = cg_cl_alloc(g_dev, n * sizeof(float), &m);
    ck_assert_msg(s == CG_OK, "alloc: %s", cg_last_error());
    s = cg_cl_write(g_dev, m, 0, n * sizeof(float), h, 1);
    ck_assert_msg(s == CG_OK, "write: %s", cg_last_error());
    return m;
}

#define SENTINEL 12345.0f

/* Host copies and device buffers of one case. */
typedef struct gcase {
    int ta, tb;
    int64_t m, n, k, lda, ldb, ldc, a_off, b_off, c_off;
    float alpha, beta;
    size_t na, nb, nc;
    float *a, *b, *c0, *c;
    cl_mem da, db, dc;
} gcase;

/* Fills A and B (padding NaN: reading it would show), C (NaN when beta is
 * 0, else random; padding SENTINEL, which must survive). */
static void case_init(gcase *g, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                      const layout *l, uint32_t seed) {
    memset(g, 0, sizeof *g);
    g->ta = ta, g->tb = tb, g->m = m, g->n = n, g->k = k, g->alpha = alpha, g->beta = beta;
    int64_t ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
    g->lda = ld_of(ca, l), g->ldb = ld_of(cb, l), g->ldc = ld_of(n, l);
    g->a_off = l->a_off, g->b_off = l->b_off, g->c_off = l->c_off;
    g->na = (size_t)(g->a_off + (ra ? ra : 1) * g->lda + 5);
    g->nb = (size_t)(g->b_off + (rb ? rb : 1) * g->ldb + 5);
    g->nc = (size_t)(g->c_off + m * g->ldc + 5);
    g->a = malloc(g->na * sizeof(float));
    g->b = malloc(g->nb * sizeof(float));
    g->c0 = malloc(g->nc * sizeof(float));
    g->c = malloc(g->nc * sizeof(float));
    ck_assert(g->a && g->b && g->c0 && g->c);
    for (size_t i = 0; i < g->na; i++) g->a[i] = NAN;
    for (size_t i = 0; i < g->nb; i++) g->b[i] = NAN;
    for (size_t i = 0; i < g->nc; i++) g->c0[i] = SENTINEL;
    for (int64_t r = 0; r < ra; r++)
        for (int64_t q = 0; q < ca; q++) g->a[g->a_off + r * g->lda + q] = frand(&seed);
    for (int64_t r = 0; r < rb; r++)
        for (int64_t q = 0; q < cb; q++) g->b[g->b_off + r * g->ldb + q] = frand(&seed);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) g->c0[g->c_off + i * g->ldc + j] = beta == 0.0f ? NAN : frand(&seed);
    g->da = upload(g->a, g->na);
    g->db = upload(g->b, g->nb);
    g->dc = upload(g->c0, g->nc);
}

static void case_free(gcase *g) {
    clReleaseMemObject(g->da);
    clReleaseMemObject(g->db);
    clReleaseMemObject(g->dc);
    free(g->a);
    free(g->b);
    free(g->c0);
    free(g->c);
}

static cg_status case_run(gcase *g) {
    return cg_cl_sgemm(g_dev, g->ta, g->tb, g->m, g->n, g->k, g->alpha, g->da, (size_t)g->a_off, g->lda, g->db,
                       (size_t)g->b_off, g->ldb, g->beta, g->dc, (size_t)g->c_off, g->ldc);
}

/* Reads C back and compares with the double reference; 0 when it matches,
 * else writes what differs into why. */
static int case_check(gcase *g, char *why, size_t why_size) {
    cg_status s = cg_cl_read(g_dev, g->dc, 0, g->nc * sizeof(float), g->c);
    if (s != CG_OK) {
        snprintf(why, why_size, "read: %s", cg_last_error());
        return 1;
    }
    for (size_t q = 0; q < g->nc; q++) {
        int64_t e = (int64_t)q - g->c_off;
        int inside = e >= 0 && e / g->ldc < g->m && e % g->ldc < g->n;
        if (!inside && !(g->c[q] == SENTINEL)) {
            snprintf(why, why_size, "C[%zu] outside the matrix changed to %g", q, g->c[q]);
            return 1;
        }
    }
    for (int64_t i = 0; i < g->m; i++)
        for (int64_t j = 0; j < g->n; j++) {
            double acc = 0.0, mag = 0.0;
            for (int64_t p = 0; p < g->k; p++) {
                double av = g->a[g->a_off + (g->ta ? p * g->lda + i : i * g->lda + p)];
                double bv = g->b[g->b_off + (g->tb ? j * g->ldb + p : p * g->ldb + j)];
                acc += av * bv;
                mag += fabs(av * bv);
            }
            double c0 = g->c0[g->c_off + i * g->ldc + j];
            double ref = (double)g->alpha * acc + (g->beta == 0.0f ? 0.0 : (double)g->beta * c0);
            double tol =
                1e-4 * (1.0 + fabs((double)g->alpha) * mag + (g->beta == 0.0f ? 0.0 : fabs((double)g->beta * c0)));
            double got = g->c[g->c_off + i * g->ldc + j];
            if (!(fabs(got - ref) <= tol)) {
                snprintf(why, why_size, "C[%lld,%lld] = %.7g, expected %.7g (tol %.2g)", (long long)i, (long long)j,
                         got, ref, tol);
                return 1;
            }
        }
    return 0;
}

/* One product in one mode; fails the test with the whole case in the message. */
static void check_case(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, float beta, int lay, int mode) {
    gcase g;
    uint32_t seed = (uint32_t)(m * 7919 + n * 104729 + k * 31 + ta * 2 + tb + lay * 1000003u);
    case_init(&g, ta, tb, m, n, k, alpha, beta, &k_layouts[lay], seed);
    cg_cl_gemm_test_set_mode(mode);
    cg_status s = case_run(&g);
    char why[512] = "";
    int bad = s != CG_OK;
    if (bad) snprintf(why, sizeof why, "%s: %s", cg_status_name(s), cg_last_error());
    else bad = case_check(&g, why, sizeof why);
    case_free(&g);
    ck_assert_msg(!bad, "%c%c m=%lld n=%lld k=%lld alpha=%g beta=%g layout %d mode %s: %s", ta ? 'T' : 'N',
                  tb ? 'T' : 'N', (long long)m, (long long)n, (long long)k, alpha, beta, lay, mode_name(mode), why);
}

/* ------------------------------------------------------------------ */
/* Shapes                                                               */

/* {m, n, k}: GEMV both ways (with and without vector tails; 1 x 64 x 48 and
 * 48 x 1 x 64 reach the aligned wide-vector paths in layout 0), tiny and
 * thin GEMMs, one with several partial large tiles, k == 1 and k == 0. */
static const int64_t k_shapes[][3] = {
    {1, 1, 1},    {1, 17, 3},    {3, 1, 17},    {1, 64, 48},  {48, 1, 64},    {2, 2, 2}, {17, 3, 1000},
    {64, 64, 64}, {1, 1000, 17}, {1000, 1, 17}, {1, 1, 1000}, {130, 131, 33}, {5, 3, 1}, {100, 3, 0},
};
#define NSHAPES (int)(sizeof k_shapes / sizeof k_shapes[0])

START_TEST(test_shapes) {
    const int64_t *sh = k_shapes[_i];
    static const float betas[] = {0.0f, 1.0f, 0.5f};
    static const float alphas[] = {1.0f, -0.75f, 1.5f};
    static const int modes[] = {CG_GEMM_OWN, CG_GEMM_CLBLAST, CG_GEMM_AUTO};
    for (int t = 0; t < 4; t++)
        for (int bi = 0; bi < 3; bi++)
            for (int lay = 0; lay < NLAYOUTS; lay++)
                for (int mi = 0; mi < 3; mi++)
                    check_case(t >> 1, t & 1, sh[0], sh[1], sh[2], alphas[(lay + bi) % 3], betas[bi], lay, modes[mi]);
}
END_TEST

/* alpha == 0: C = beta C without reading A and B (which hold NaN here). */
START_TEST(test_alpha_zero) {
    static const int modes[] = {CG_GEMM_OWN, CG_GEMM_CLBLAST, CG_GEMM_AUTO};
    for (int mi = 0; mi < 3; mi++)
        for (int bi = 0; bi < 2; bi++) {
            gcase g;
            float beta = bi ? 0.5f : 0.0f;
            case_init(&g, 0, 1, 7, 9, 5, 0.0f, beta, &k_layouts[1], 99);
            for (size_t i = 0; i < g.na; i++) g.a[i] = NAN;
            ck_assert(cg_cl_write(g_dev, g.da, 0, g.na * sizeof(float), g.a, 1) == CG_OK);
            cg_cl_gemm_test_set_mode(modes[mi]);
            ck_assert_msg(case_run(&g) == CG_OK, "%s", cg_last_error());
            ck_assert(cg_cl_read(g_dev, g.dc, 0, g.nc * sizeof(float), g.c) == CG_OK);
            for (int64_t i = 0; i < g.m; i++)
                for (int64_t j = 0; j < g.n; j++) {
                    size_t q = (size_t)(g.c_off + i * g.ldc + j);
                    float want = beta == 0.0f ? 0.0f : beta * g.c0[q];
                    ck_assert_msg(g.c[q] == want, "mode %s beta %g: C[%lld,%lld] = %g, want %g", mode_name(modes[mi]),
                                  beta, (long long)i, (long long)j, g.c[q], want);
                }
            case_free(&g);
        }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Choices file                                                         */

static void choices_path(char *buf, size_t n) {
    cg_cl_gemm_choices_path(buf, n);
    ck_assert_msg(buf[0] != '\0', "no choices path");
}

/* Finds the last line of the file for "ta tb m n k"; copies it into line. */
static int find_line(const char *shape, char *line, size_t size) {
    char path[4200], buf[2048], pat[128];
    choices_path(path, sizeof path);
    snprintf(pat, sizeof pat, "\t%s\t", shape);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int found = 0;
    while (fgets(buf, sizeof buf, f))
        if (strstr(buf, pat)) {
            snprintf(line, size, "%s", buf);
            found = 1;
        }
    fclose(f);
    return found;
}

static void append_text(const char *text) {
    char path[4200];
    choices_path(path, sizeof path);
    FILE *f = fopen(path, "a");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_choices_written_and_read_back) {
    cg_cl_gemm_stats s0, s1, s2, s3;
    cg_cl_gemm_stats_get(&s0);
    check_case(1, 0, 5, 6, 7, 1.0f, 0.5f, 0, CG_GEMM_AUTO);
    cg_cl_gemm_stats_get(&s1);
    ck_assert_uint_eq(s1.measurements, s0.measurements + 1);
    ck_assert_uint_eq(s1.file_writes, s0.file_writes + 1);

    /* DEVICE\tDRIVER\tta tb m n k\tchoice\town_us\tclblast_us\town=ID */
    char line[2048];
    ck_assert_msg(find_line("1 0 5 6 7", line, sizeof line), "no line for the shape");
    const cg_cl_info *info = cg_cl_info_of(g_dev);
    ck_assert_msg(strncmp(line, info->name, strlen(info->name)) == 0, "line: %s", line);
    char *f[7];
    int nf = 0;
    for (char *p = line; nf < 7; p = NULL) {
        char *t = strtok(p, "\t\n");
        if (!t) break;
        f[nf++] = t;
    }
    ck_assert_int_eq(nf, 7);
    ck_assert_str_eq(f[6], cg_cl_gemm_own_id());
    ck_assert_uint_eq(strlen(f[6]), 20);
    ck_assert_str_eq(f[1], info->driver);
    ck_assert_msg(!strcmp(f[3], "own") || !strcmp(f[3], "clblast"), "choice %s", f[3]);
    ck_assert_msg(atof(f[4]) > 0.0, "own_us %s", f[4]);
    ck_assert_msg(atof(f[5]) > 0.0 || !strncmp(f[5], "failed(", 7), "clblast_us %s", f[5]);
    int want = !strcmp(f[3], "own") ? CG_GEMM_CHOICE_OWN : CG_GEMM_CHOICE_CLBLAST;
    ck_assert_int_eq(cg_cl_gemm_test_choice(g_dev, 1, 0, 5, 6, 7), want);

    /* Second call: remembered in memory. */
    check_case(1, 0, 5, 6, 7, -0.75f, 0.0f, 1, CG_GEMM_AUTO);
    cg_cl_gemm_stats_get(&s2);
    ck_assert_uint_eq(s2.measurements, s1.measurements);
    ck_assert_uint_eq(s2.file_writes, s1.file_writes);

    /* As a new process: read back from the file, not measured again. */
    cg_cl_gemm_test_forget();
    check_case(1, 0, 5, 6, 7, 1.5f, 1.0f, 2, CG_GEMM_AUTO);
    cg_cl_gemm_stats_get(&s3);
    ck_assert_uint_eq(s3.measurements, s2.measurements);
    ck_assert_uint_gt(s3.file_entries, s2.file_entries);
    ck_assert_int_eq(cg_cl_gemm_test_choice(g_dev, 1, 0, 5, 6, 7), want);
}
END_TEST

/* A hand-written (or another process's) line decides; malformed lines and
 * lines measured against other own kernels are skipped. */
START_TEST(test_choices_file_decides) {
    const cg_cl_info *info = cg_cl_info_of(g_dev);
    const char *id = cg_cl_gemm_own_id();
    char text[8192];
    snprintf(text, sizeof text,
             "garbage\n\n%s\t%s\tx y\tclblast\t1\t1\t%s\n%s\t%s\t0 0 9 10 11\tmaybe\t1\t1\t%s\n"
             "%s\t%s\t0 0 9 10 11\tclblast\t100.0\t1.0\t%s\n"
             "%s\t%s\t0 1 1 12 13\tclblast\t100.0\t1.0\t%s\n"
             "%s\t%s\t0 1 1 12 13\town\t1.0\t100.0\t%s\n"
             "other device\t%s\t0 0 14 15 16\tclblast\t100.0\t1.0\t%s\n"
             "%s\t%s\t1 1 18 19 20\tclblast\t100.0\t1.0\n"
             "%s\t%s\t1 1 18 19 20\tclblast\t100.0\t1.0\town=0123456789abcdef\n",
             info->name, info->driver, id, info->name, info->driver, id, info->name, info->driver, id, info->name,
             info->driver, id, info->name, info->driver, id, info->driver, id, info->name, info->driver, info->name,
             info->driver);
    append_text(text);
    cg_cl_gemm_test_forget();
    cg_cl_gemm_stats s0, s1, s2, s3;
    cg_cl_gemm_stats_get(&s0);
    check_case(0, 0, 9, 10, 11, 1.0f, 0.5f, 1, CG_GEMM_AUTO);
    cg_cl_gemm_stats_get(&s1);
    ck_assert_uint_eq(s1.measurements, s0.measurements);
    ck_assert_uint_eq(s1.clblast_calls, s0.clblast_calls + 1);
    ck_assert_uint_eq(s1.own_calls, s0.own_calls);
    ck_assert_int_eq(cg_cl_gemm_test_choice(g_dev, 0, 0, 9, 10, 11), CG_GEMM_CHOICE_CLBLAST);

    /* The later line wins. */
    check_case(0, 1, 1, 12, 13, 1.0f, 0.0f, 0, CG_GEMM_AUTO);
    cg_cl_gemm_stats_get(&s2);
    ck_assert_uint_eq(s2.measurements, s1.measurements);
    ck_assert_uint_eq(s2.own_calls, s1.own_calls + 1);
    ck_assert_uint_eq(s2.clblast_calls, s1.clblast_calls);

    /* Stale lines (no kernel identity, or another one) do not count. */
    ck_assert_int_eq(cg_cl_gemm_test_choice(g_dev, 1, 1, 18, 19, 20), CG_GEMM_CHOICE_NONE);

    /* Another device's line does not apply here. */
    ck_assert_int_eq(cg_cl_gemm_test_choice(g_dev, 0, 0, 14, 15, 16), CG_GEMM_CHOICE_NONE);
    check_case(0, 0, 14, 15, 16, 1.0f, 1.0f, 0, CG_GEMM_AUTO);
    cg_cl_gemm_stats_get(&s3);
    ck_assert_uint_eq(s3.measurements, s2.measurements + 1);
}
END_TEST

/* CLBlast failing: measured as failed (own chosen), or failing after it was
 * chosen (own from then on); both recorded; CLGRAPH_GEMM=clblast reports it. */
START_TEST(test_clblast_failure_falls_back) {
    const cg_cl_info *info = cg_cl_info_of(g_dev);
    char text[1200], line[2048];
    snprintf(text, sizeof text, "%s\t%s\t1 1 15 16 17\tclblast\t100.0\t1.0\t%s\n", info->name, info->driver,
             cg_cl_gemm_own_id());
    append_text(text);
    cg_cl_gemm_test_forget();
    cg_cl_gemm_test_fail_clblast(1);
    cg_cl_gemm_stats s0, s1, s2;
    cg_cl_gemm_stats_get(&s0);

    check_case(1, 0, 11, 12, 13, 1.0f, 0.5f, 1, CG_GEMM_AUTO);
    cg_cl_gemm_stats_get(&s1);
    ck_assert_uint_eq(s1.measurements, s0.measurements + 1);
    ck_assert_uint_gt(s1.clblast_failures, s0.clblast_failures);
    ck_assert_int_eq(cg_cl_gemm_test_choice(g_dev, 1, 0, 11, 12, 13), CG_GEMM_CHOICE_OWN);
    ck_assert(find_line("1 0 11 12 13", line, sizeof line));
    ck_assert_msg(strstr(line, "\town\t") && strstr(line, "\tfailed(CLBlastNotImplemented)"), "%s", line);

    ck_assert_int_eq(cg_cl_gemm_test_choice(g_dev, 1, 1, 15, 16, 17), CG_GEMM_CHOICE_CLBLAST);
    check_case(1, 1, 15, 16, 17, -0.75f, 0.0f, 2, CG_GEMM_AUTO);
    cg_cl_gemm_stats_get(&s2);
    ck_assert_uint_eq(s2.measurements, s1.measurements);
    ck_assert_uint_eq(s2.clblast_failures, s1.clblast_failures + 1);
    ck_assert_int_eq(cg_cl_gemm_test_choice(g_dev, 1, 1, 15, 16, 17), CG_GEMM_CHOICE_OWN);
    ck_assert(find_line("1 1 15 16 17", line, sizeof line));
    ck_assert_msg(strstr(line, "\town\t-1\tfailed(CLBlastNotImplemented)"), "%s", line);

    gcase g;
    case_init(&g, 0, 0, 4, 5, 6, 1.0f, 0.0f, &k_layouts[0], 5);
    cg_cl_gemm_test_set_mode(CG_GEMM_CLBLAST);
    ck_assert_int_eq(case_run(&g), CG_ERR_KERNEL);
    ck_assert_msg(strstr(cg_last_error(), "CLBlastSgemm(NN, m=4 n=5 k=6) failed: "
                                          "CLBlastNotImplemented") != NULL,
                  "%s", cg_last_error());
    cg_cl_gemm_test_fail_clblast(0);
    ck_assert_msg(case_run(&g) == CG_OK, "%s", cg_last_error());
    char why[512];
    ck_assert_msg(case_check(&g, why, sizeof why) == 0, "%s", why);
    case_free(&g);
}
END_TEST

/* An unmeasured tiled-GEMM shape runs the own kernels, without timing,
 * until its Nth call, which measures it; shapes that the GEMV kernels run
 * (m == 1, n == 1, and C = A B^T on CPU devices) are never timed. */
START_TEST(test_measure_after) {
    cg_cl_gemm_test_set_measure_after(3);
    cg_cl_gemm_stats s0, s1, s2, s3;
    cg_cl_gemm_stats_get(&s0);
    char line[2048];
    for (int i = 0; i < 2; i++) check_case(1, 0, 6, 7, 8, 1.0f, 0.5f, i, CG_GEMM_AUTO);
    cg_cl_gemm_stats_get(&s1);
    ck_assert_uint_eq(s1.measurements, s0.measurements);
    ck_assert_uint_eq(s1.own_calls, s0.own_calls + 2);
    ck_assert_uint_eq(s1.clblast_calls, s0.clblast_calls);
    ck_assert_int_eq(cg_cl_gemm_test_choice(g_dev, 1, 0, 6, 7, 8), CG_GEMM_CHOICE_NONE);
    ck_assert(!find_line("1 0 6 7 8", line, sizeof line));

    check_case(1, 0, 6, 7, 8, -0.75f, 0.0f, 2, CG_GEMM_AUTO);
    cg_cl_gemm_stats_get(&s2);
    ck_assert_uint_eq(s2.measurements, s1.measurements + 1);
    ck_assert_uint_gt(s2.clblast_calls, s1.clblast_calls);
    ck_assert_int_ne(cg_cl_gemm_test_choice(g_dev, 1, 0, 6, 7, 8), CG_GEMM_CHOICE_NONE);
    ck_assert(find_line("1 0 6 7 8", line, sizeof line));
    /* whatever the measurement chose, this process keeps the own kernels it
     * ran the shape with (bit-identical runs); a new process obeys the line */
    cg_cl_gemm_stats s4, s5;
    cg_cl_gemm_stats_get(&s4);
    check_case(1, 0, 6, 7, 8, 1.0f, 0.0f, 0, CG_GEMM_AUTO);
    cg_cl_gemm_stats_get(&s5);
    ck_assert_uint_eq(s5.own_calls, s4.own_calls + 1);
    ck_assert_uint_eq(s5.clblast_calls, s4.clblast_calls);
    const int chosen = cg_cl_gemm_test_choice(g_dev, 1, 0, 6, 7, 8);
    cg_cl_gemm_test_forget();
    cg_cl_gemm_stats_get(&s4);
    check_case(1, 0, 6, 7, 8, 1.0f, 0.0f, 0, CG_GEMM_AUTO);
    cg_cl_gemm_stats_get(&s5);
    ck_assert_uint_eq(s5.measurements, s4.measurements);
    ck_assert_uint_eq(s5.clblast_calls, s4.clblast_calls + (chosen == CG_GEMM_CHOICE_CLBLAST));
    ck_assert_uint_eq(s5.own_calls, s4.own_calls + (chosen == CG_GEMM_CHOICE_OWN));
    cg_cl_gemm_stats_get(&s2);

    /* GEMV shapes, both ways, and A B^T: own kernels every time, no line
     * (A B^T is timed on other devices, where the tiled GEMM runs it). */
    int cpu = (cg_cl_info_of(g_dev)->type & CL_DEVICE_TYPE_CPU) != 0;
    for (int i = 0; i < 5; i++) {
        check_case(0, 1, 1, 40, 24, 1.0f, 0.0f, i % NLAYOUTS, CG_GEMM_AUTO);
        check_case(0, 0, 40, 1, 24, 1.0f, 0.5f, i % NLAYOUTS, CG_GEMM_AUTO);
        if (cpu) check_case(0, 1, 9, 40, 24, 1.0f, 0.5f, i % NLAYOUTS, CG_GEMM_AUTO);
    }
    cg_cl_gemm_stats_get(&s3);
    ck_assert_uint_eq(s3.measurements, s2.measurements);
    ck_assert_uint_eq(s3.clblast_calls, s2.clblast_calls);
    ck_assert_uint_eq(s3.own_calls, s2.own_calls + (cpu ? 15 : 10));
    ck_assert_int_eq(cg_cl_gemm_test_choice(g_dev, 0, 1, 1, 40, 24), CG_GEMM_CHOICE_NONE);
    ck_assert(!find_line("0 1 1 40 24", line, sizeof line));
    ck_assert(!find_line("0 0 40 1 24", line, sizeof line));
    ck_assert(!find_line("0 1 9 40 24", line, sizeof line));
    cg_cl_gemm_test_set_measure_after(1);
}
END_TEST

/* The own kernels are built when first needed: GEMV along rows, GEMV along
 * columns, the scale kernel and the small tiled GEMM each alone, the large
 * tiled GEMM only for a product that uses it. On a CPU device C = A B^T
 * with many rows runs cg_gemm_nt_cpu, built on its first use too. */
START_TEST(test_kernels_built_on_use) {
    cg_cl_gemm_device_released(g_dev);
    cg_cl_test_drop_memory_cache(g_dev);
    cg_cl_cache_stats c0, c1, c2, c3, c4, c5;
    cg_cl_cache_stats_get(&c0);
    check_case(0, 1, 1, 40, 24, 1.0f, 0.0f, 0, CG_GEMM_OWN); /* cg_gemv_rows */
    cg_cl_cache_stats_get(&c1);
    ck_assert_uint_eq(c1.kernels_created, c0.kernels_created + 1);
    check_case(0, 1, 1, 41, 24, 1.0f, 0.5f, 1, CG_GEMM_OWN); /* the same kernel */
    check_case(0, 0, 1, 40, 24, 1.0f, 0.0f, 0, CG_GEMM_OWN); /* cg_gemv_cols */
    cg_cl_cache_stats_get(&c2);
    ck_assert_uint_eq(c2.kernels_created, c1.kernels_created + 1);
    check_case(0, 1, 20, 21, 22, 1.0f, 0.5f, 1, CG_GEMM_OWN); /* A B^T */
    int cpu = (cg_cl_info_of(g_dev)->type & CL_DEVICE_TYPE_CPU) != 0;
    cg_cl_cache_stats_get(&c3); /* cg_gemm_nt_cpu on a CPU, the small tiles elsewhere */
    ck_assert_uint_eq(c3.kernels_created, c2.kernels_created + 1);
    check_case(0, 0, 20, 21, 22, 1.0f, 0.5f, 1, CG_GEMM_OWN); /* small tiles */
    cg_cl_cache_stats_get(&c3);
    ck_assert_uint_eq(c3.kernels_created, c2.kernels_created + (cpu ? 2 : 1));
    check_case(0, 0, 7, 9, 0, 1.0f, 0.5f, 1, CG_GEMM_OWN); /* k == 0: cg_gemm_scale */
    cg_cl_cache_stats_get(&c4);
    ck_assert_uint_eq(c4.kernels_created, c3.kernels_created + 1);
    /* Enough full 64 x 64 tiles for every compute unit twice. */
    int64_t side = 64 * 2 * (int64_t)(cg_cl_info_of(g_dev)->compute_units + 1);
    check_case(1, 0, side, 64, 16, 1.0f, 0.0f, 0, CG_GEMM_OWN);
    cg_cl_cache_stats_get(&c5);
    ck_assert_uint_eq(c5.kernels_created, c4.kernels_created + 1);
    /* Each kernel is a program of its own (cl_backend.h). */
    ck_assert_uint_eq((c5.builds_from_source + c5.loads_from_disk) - (c0.builds_from_source + c0.loads_from_disk),
                      cpu ? 6 : 5);
}
END_TEST

/* ------------------------------------------------------------------ */
/* CLGRAPH_GEMM and arguments                                           */

START_TEST(test_env_mode) {
    cg_cl_gemm_stats s0, s1, s2;
    setenv("CLGRAPH_GEMM", "own", 1);
    cg_cl_gemm_test_set_mode(CG_GEMM_FROM_ENV);
    cg_cl_gemm_stats_get(&s0);
    gcase g;
    case_init(&g, 0, 0, 4, 5, 6, 1.0f, 0.0f, &k_layouts[0], 5);
    ck_assert_msg(case_run(&g) == CG_OK, "%s", cg_last_error());
    cg_cl_gemm_stats_get(&s1);
    ck_assert_uint_eq(s1.own_calls, s0.own_calls + 1);
    ck_assert_uint_eq(s1.clblast_calls, s0.clblast_calls);

    setenv("CLGRAPH_GEMM", "clblast", 1);
    cg_cl_gemm_test_set_mode(CG_GEMM_FROM_ENV);
    ck_assert_msg(case_run(&g) == CG_OK, "%s", cg_last_error());
    cg_cl_gemm_stats_get(&s2);
    ck_assert_uint_eq(s2.own_calls, s1.own_calls);
    ck_assert_uint_eq(s2.clblast_calls, s1.clblast_calls + 1);
    char why[512];
    ck_assert_msg(case_check(&g, why, sizeof why) == 0, "%s", why);

    setenv("CLGRAPH_GEMM", "fastest", 1);
    cg_cl_gemm_test_set_mode(CG_GEMM_FROM_ENV);
    ck_assert_int_eq(case_run(&g), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "CLGRAPH_GEMM='fastest'") != NULL, "%s", cg_last_error());

    unsetenv("CLGRAPH_GEMM");
    cg_cl_gemm_test_set_mode(CG_GEMM_FROM_ENV);
    ck_assert_msg(case_run(&g) == CG_OK, "%s", cg_last_error());
    case_free(&g);
}
END_TEST

START_TEST(test_bad_arguments) {
    gcase g;
    case_init(&g, 0, 0, 4, 5, 6, 1.0f, 0.0f, &k_layouts[0], 5);
    cg_cl_gemm_test_set_mode(CG_GEMM_AUTO);
    /* lda < k */
    ck_assert_int_eq(cg_cl_sgemm(g_dev, 0, 0, 4, 5, 6, 1.0f, g.da, 0, 5, g.db, 0, 5, 0.0f, g.dc, 0, 5),
                     CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "lda=5") != NULL, "%s", cg_last_error());
    /* C too small for the offset */
    ck_assert_int_eq(cg_cl_sgemm(g_dev, 0, 0, 4, 5, 6, 1.0f, g.da, 0, 6, g.db, 0, 5, 0.0f, g.dc, g.nc, 5),
                     CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "SGEMM C") != NULL, "%s", cg_last_error());
    /* A too small for transposed reading */
    ck_assert_int_eq(cg_cl_sgemm(g_dev, 1, 0, 4, 5, 60, 1.0f, g.da, 0, 6, g.db, 0, 5, 0.0f, g.dc, 0, 5),
                     CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_cl_sgemm(g_dev, 0, 0, -1, 5, 6, 1.0f, g.da, 0, 6, g.db, 0, 5, 0.0f, g.dc, 0, 5),
                     CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_cl_sgemm(NULL, 0, 0, 4, 5, 6, 1.0f, g.da, 0, 6, g.db, 0, 5, 0.0f, g.dc, 0, 5),
                     CG_ERR_INVALID_ARGUMENT);
    /* Empty products do nothing, whatever the buffers. */
    ck_assert_int_eq(cg_cl_sgemm(g_dev, 0, 0, 0, 5, 6, 1.0f, NULL, 0, 6, NULL, 0, 5, 0.0f, NULL, 0, 5), CG_OK);
    ck_assert_int_eq(cg_cl_sgemm(g_dev, 0, 0, 4, 0, 6, 1.0f, NULL, 0, 6, NULL, 0, 1, 0.0f, NULL, 0, 1), CG_OK);
    char why[512];
    ck_assert(cg_cl_write(g_dev, g.dc, 0, g.nc * sizeof(float), g.c0, 1) == CG_OK);
    ck_assert_msg(case_run(&g) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(case_check(&g, why, sizeof why) == 0, "%s", why);
    case_free(&g);
}
END_TEST

/* Dropping a device's SGEMM state (as its last release does) and using it
 * again rebuilds the state. */
START_TEST(test_device_state_dropped) {
    cg_cl_gemm_device_released(g_dev);
    cg_cl_gemm_device_released(g_dev); /* nothing left: no-op */
    check_case(0, 0, 1, 40, 24, 1.0f, 0.0f, 0, CG_GEMM_OWN);
    check_case(0, 1, 20, 21, 22, 1.0f, 0.5f, 1, CG_GEMM_OWN);
    check_case(0, 1, 20, 21, 22, 1.0f, 0.5f, 1, CG_GEMM_AUTO);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Concurrent callers on one device                                     */

typedef struct worker {
    int id, mode, failed;
    char why[512];
} worker;

static void *work(void *p) {
    worker *w = p;
    static const int64_t shapes[][3] = {{1, 64, 32}, {48, 1, 40}, {8, 9, 10}, {33, 34, 35}};
    for (int it = 0; it < 12 && !w->failed; it++) {
        const int64_t *sh = shapes[(it + w->id) % 4];
        int ta = (it >> 1) & 1, tb = it & 1;
        layout l = k_layouts[(it + w->id) % NLAYOUTS];
        int64_t ra = ta ? sh[2] : sh[0], ca = ta ? sh[0] : sh[2];
        int64_t rb = tb ? sh[1] : sh[2], cb = tb ? sh[2] : sh[1];
        gcase g;
        memset(&g, 0, sizeof g);
        g.ta = ta, g.tb = tb, g.m = sh[0], g.n = sh[1], g.k = sh[2], g.alpha = 1.25f, g.beta = 0.5f;
        g.lda = ld_of(ca, &l), g.ldb = ld_of(cb, &l), g.ldc = ld_of(sh[1], &l);
        g.a_off = l.a_off, g.b_off = l.b_off, g.c_off = l.c_off;
        g.na = (size_t)(g.a_off + ra * g.lda), g.nb = (size_t)(g.b_off + rb * g.ldb);
        g.nc = (size_t)(g.c_off + g.m * g.ldc);
        g.a = calloc(g.na, sizeof(float)), g.b = calloc(g.nb, sizeof(float));
        g.c0 = calloc(g.nc, sizeof(float)), g.c = calloc(g.nc, sizeof(float));
        uint32_t seed = (uint32_t)(w->id * 1000 + it);
        for (size_t i = 0; i < g.na; i++) g.a[i] = frand(&seed);
        for (size_t i = 0; i < g.nb; i++) g.b[i] = frand(&seed);
        for (size_t i = 0; i < g.nc; i++) g.c0[i] = SENTINEL;
        for (int64_t i = 0; i < g.m; i++)
            for (int64_t j = 0; j < g.n; j++) g.c0[g.c_off + i * g.ldc + j] = frand(&seed);
        cg_status s = cg_cl_alloc(g_dev, g.na * 4, &g.da);
        if (s == CG_OK) s = cg_cl_alloc(g_dev, g.nb * 4, &g.db);
        if (s == CG_OK) s = cg_cl_alloc(g_dev, g.nc * 4, &g.dc);
        if (s == CG_OK) s = cg_cl_write(g_dev, g.da, 0, g.na * 4, g.a, 1);
        if (s == CG_OK) s = cg_cl_write(g_dev, g.db, 0, g.nb * 4, g.b, 1);
        if (s == CG_OK) s = cg_cl_write(g_dev, g.dc, 0, g.nc * 4, g.c0, 1);
        if (s == CG_OK) s = case_run(&g);
        if (s != CG_OK) {
            w->failed = 1;
            snprintf(w->why, sizeof w->why, "%s", cg_last_error());
        } else if (case_check(&g, w->why, sizeof w->why)) {
            w->failed = 1;
        }
        if (g.da) clReleaseMemObject(g.da);
        if (g.db) clReleaseMemObject(g.db);
        if (g.dc) clReleaseMemObject(g.dc);
        free(g.a), free(g.b), free(g.c0), free(g.c);
    }
    return NULL;
}

START_TEST(test_concurrent) {
    static const int modes[] = {CG_GEMM_OWN, CG_GEMM_AUTO};
    for (int mi = 0; mi < 2; mi++) {
        cg_cl_gemm_test_set_mode(modes[mi]);
        worker w[4];
        pthread_t th[4];
        for (int i = 0; i < 4; i++) {
            memset(&w[i], 0, sizeof w[i]);
            w[i].id = i + 10 * mi;
            ck_assert_int_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
        }
        for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
        for (int i = 0; i < 4; i++)
            ck_assert_msg(!w[i].failed, "mode %s worker %d: %s", mode_name(modes[mi]), i, w[i].why);
    }
}
END_TEST

/* ------------------------------------------------------------------ */

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static Suite *gemm_suite(void) {
    Suite *s = suite_create("cl_gemm");
    TCase *tc = tcase_create("shapes");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_shapes, 0, NSHAPES);
    tcase_add_test(tc, test_alpha_zero);
    suite_add_tcase(s, tc);
    tc = tcase_create("choices");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_choices_written_and_read_back);
    tcase_add_test(tc, test_choices_file_decides);
    tcase_add_test(tc, test_clblast_failure_falls_back);
    tcase_add_test(tc, test_measure_after);
    tcase_add_test(tc, test_kernels_built_on_use);
    tcase_add_test(tc, test_env_mode);
    tcase_add_test(tc, test_bad_arguments);
    tcase_add_test(tc, test_device_state_dropped);
    tcase_add_test(tc, test_concurrent);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(g_tmp, sizeof g_tmp, "%s/cg_gemm_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("CLGRAPH_CACHE_DIR", g_tmp, 1);
    unsetenv("CLGRAPH_GEMM");
    if (cg_cl_device_count() == 0) {
        printf("skipped: %s\n", cg_cl_unavailable_reason());
        rmdir(g_tmp);
        return 77;
    }
    if (cg_cl_device_open(0, &g_dev) != CG_OK) {
        fprintf(stderr, "opening opencl:0: %s\n", cg_last_error());
        return 1;
    }
    cg_cl_gemm_test_set_measure_after(1);
    /* PoCL initialised before fork() hangs the child: never fork. */
    int rc = tu_run_suite(gemm_suite(), 1);
    cg_cl_gemm_stats st;
    cg_cl_gemm_stats_get(&st);
    printf("# %s: own %llu, CLBlast %llu (%llu failed), shapes measured %llu\n", cg_cl_info_of(g_dev)->name,
           (unsigned long long)st.own_calls, (unsigned long long)st.clblast_calls,
           (unsigned long long)st.clblast_failures, (unsigned long long)st.measurements);
    cg_cl_device_release(g_dev);
    nftw(g_tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}
