/* The CPU backend's own GEMM/GEMV kernels (backends/cpu/cpu_gemm*.c) through
 * cg_cpu_sgemm / cg_cpu_sgemv, on every kernel set this CPU runs and on
 * OpenBLAS, against a double-precision reference: many shapes, padded leading
 * dimensions, alpha/beta including beta = 0 over NaN; bit-identical rows
 * whatever M, the GEMV form and the thread count; CLGRAPH_CPU_GEMM and
 * CLGRAPH_THREADS (in a re-executed copy of this program, since both are read
 * once per process); and the thread pool (backends/cpu/cpu_pool.c): coverage,
 * serial and nested calls, concurrent callers, fork, idle CPU use. */
#include <check.h>

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu_blas.h"
#include "cpu/cpu_gemm.h"
#include "cpu/cpu_pool.h"
#include "test_util.h"

static const char *paths[] = {"avx512", "avx2", "portable", "blas"};
#define N_PATHS (sizeof paths / sizeof paths[0])

static char self_exe[4096];

/* ---- data ---- */

static uint64_t rng_state;

static float rnd(void) { /* uniform in [-1, 1), reproducible */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 40) / (double)(1ull << 23) - 1.0);
}

/* Aborts on failure: also used by the probe, outside any test. */
static float *rnd_buf(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    if (!p) abort();
    for (size_t i = 0; i < n; i++) p[i] = rnd();
    return p;
}

static uint64_t fnv(const void *p, size_t n, uint64_t h) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* ---- the GEMM sweep ---- */

static const int64_t Ms[] = {1, 2, 3, 4, 5, 7, 8, 13, 64, 65};
static const int64_t Ns[] = {1, 3, 16, 17, 100, 513};
static const int64_t Ks[] = {1, 7, 15, 16, 17, 64, 129, 512, 1280};
static const float alphas[] = {1.0f, 1.0f, 0.5f, -1.5f, 1.0f, 0.0f};
static const float betas[] = {0.0f, 1.0f, 0.0f, 0.25f, -2.0f, 0.5f};
#define N_AB (sizeof alphas / sizeof alphas[0])
#define SENTINEL 12345.0f

/* Checks C (m x n in a buffer of m rows of ldc) against alpha * A B^T +
 * beta * C0 in double: the error bound of a sum of k products split into
 * lanes, (k / 8 + 8) roundings of the absolute sum, or 4k for OpenBLAS whose
 * summation order is its own; padding must be untouched. */
static void check_result(const char *path, int64_t m, int64_t n, int64_t k, float alpha, float beta, const float *a,
                         int64_t lda, const float *b, int64_t ldb, const float *c0, const float *c, int64_t ldc) {
    double units = strcmp(path, "blas") == 0 ? 4.0 * (double)k : (double)k / 8.0 + 8.0;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double s = 0, sa = 0;
            if (alpha != 0.0f)
                for (int64_t p = 0; p < k; p++) {
                    double t = (double)a[i * lda + p] * b[j * ldb + p];
                    s += t;
                    sa += fabs(t);
                }
            double prior = beta == 0.0f ? 0.0 : (double)beta * c0[i * ldc + j];
            double want = alpha * s + prior;
            double tol = (units + 3.0) * FLT_EPSILON * (fabs(alpha) * sa + fabs(prior)) + 1e-30;
            float got = c[i * ldc + j];
            /* ck_assert only on failure: each passing one writes to Check's pipe. */
            if (!(isfinite(got) && fabs(got - want) <= tol))
                ck_abort_msg("%s m=%lld n=%lld k=%lld alpha=%g beta=%g: C[%lld,%lld] = %.9g, "
                             "want %.9g (tol %.3g)",
                             path, (long long)m, (long long)n, (long long)k, alpha, beta, (long long)i, (long long)j,
                             got, want, tol);
        }
        for (int64_t j = n; j < ldc; j++)
            if (c[i * ldc + j] != SENTINEL) ck_abort_msg("%s: padding of C row %lld overwritten", path, (long long)i);
    }
}

/* cg_cpu_gemm_nt_bias gives, bit for bit, the product without a bias
 * (c) plus the bias in one f32 addition per element. */
static void check_bias(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                       int64_t ldb, const float *c0, const float *c, int64_t ldc) {
    float *bias = rnd_buf((size_t)n), *cb = malloc((size_t)(m * ldc) * sizeof *cb);
    ck_assert_ptr_nonnull(cb);
    memcpy(cb, c0, (size_t)(m * ldc) * sizeof *cb);
    ck_assert(cg_cpu_gemm_nt_bias(m, n, k, alpha, a, lda, b, ldb, 0.0f, bias, cb, ldc));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < ldc; j++) {
            const float want = j < n ? c[i * ldc + j] + bias[j] : SENTINEL;
            if (memcmp(&cb[i * ldc + j], &want, sizeof want) != 0)
                ck_abort_msg("bias m=%lld n=%lld k=%lld: C[%lld,%lld] = %.9g, want %.9g", (long long)m, (long long)n,
                             (long long)k, (long long)i, (long long)j, cb[i * ldc + j], want);
        }
    free(bias);
    free(cb);
}

/* One shape on one path: GEMM through cg_cpu_sgemm(0, 1), and for m == 1
 * also the GEMV through cg_cpu_sgemv(0) (B as the matrix, A's row as x). */
static void run_shape(const char *path, int64_t m, int64_t n, int64_t k, int variant) {
    float alpha = alphas[variant % N_AB], beta = betas[variant % N_AB];
    int64_t pad = variant % 2 ? 3 : 0;
    int64_t lda = k + pad, ldb = k + 2 * pad, ldc = n + pad;
    float *a = rnd_buf((size_t)(m * lda)), *b = rnd_buf((size_t)(n * ldb));
    float *c0 = rnd_buf((size_t)(m * ldc)), *c = malloc((size_t)(m * ldc) * sizeof *c);
    ck_assert_ptr_nonnull(c);
    for (int64_t i = 0; i < m * ldc; i++) {
        if (i % ldc >= n) c0[i] = SENTINEL;
        else if (beta == 0.0f) c0[i] = NAN; /* must not leak into the result */
    }
    if (alpha == 0.0f) /* A and B must not be read */
        for (int64_t i = 0; i < m * lda; i++) a[i] = NAN;
    memcpy(c, c0, (size_t)(m * ldc) * sizeof *c);
    cg_cpu_sgemm(0, 1, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    check_result(path, m, n, k, alpha, beta, a, lda, b, ldb, c0, c, ldc);
    if (beta == 0.0f && strcmp(path, "blas") != 0) /* a bias in the stores: the product, then one addition */
        check_bias(m, n, k, alpha, a, lda, b, ldb, c0, c, ldc);
    if (m == 1) {
        memcpy(c, c0, (size_t)ldc * sizeof *c);
        cg_cpu_sgemv(0, n, k, alpha, b, ldb, a, beta, c);
        check_result(path, 1, n, k, alpha, beta, a, lda, b, ldb, c0, c, ldc);
    }
    free(a);
    free(b);
    free(c0);
    free(c);
}

START_TEST(test_shapes_every_path) {
    const char *path = paths[_i];
    if (!cg_cpu_gemm_force(path)) return; /* this CPU lacks the ISA */
    ck_assert_str_eq(cg_cpu_gemm_path(), path);
    rng_state = 42;
    int variant = 0;
    for (size_t im = 0; im < sizeof Ms / sizeof Ms[0]; im++)
        for (size_t in = 0; in < sizeof Ns / sizeof Ns[0]; in++)
            for (size_t ik = 0; ik < sizeof Ks / sizeof Ks[0]; ik++) run_shape(path, Ms[im], Ns[in], Ks[ik], variant++);
}
END_TEST

/* B stored as bf16 or f16 (cg_cpu_gemm_nt_h): the same sweep of shapes,
 * against the double-precision product with B's exact 16-bit values (the
 * reference widens them independently: bf16 by placing the bits above 16
 * zero bits, f16 through the half-precision definition); on the blas path
 * the best own kernels run. Rows stay bit-identical whatever M. */
static float from16(uint16_t h, int bf16) {
    if (bf16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (float)((h & 0x8000) ? -v : v);
}

static uint16_t to16(float f, int bf16) { /* truncating: any 16-bit value does */
    if (bf16) {
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        return (uint16_t)(u >> 16);
    }
    /* values in [-1, 1): a normal half from the top 10 fraction bits */
    double a = fabs(f);
    if (a < 6.2e-5) return f < 0 ? 0x8000 : 0;
    int e;
    double fr = frexp(a, &e); /* a = fr 2^e, fr in [0.5, 1) */
    int m = (int)((fr * 2 - 1) * 1024);
    return (uint16_t)((f < 0 ? 0x8000 : 0) | ((e - 1 + 15) << 10) | m);
}

START_TEST(test_16bit_b_every_path) {
    const char *path = paths[_i];
    if (!cg_cpu_gemm_force(path)) return;
    rng_state = 7;
    int variant = 0;
    for (int bf16 = 0; bf16 < 2; bf16++)
        for (size_t im = 0; im < sizeof Ms / sizeof Ms[0]; im += 2)
            for (size_t in = 0; in < sizeof Ns / sizeof Ns[0]; in++)
                for (size_t ik = 0; ik < sizeof Ks / sizeof Ks[0]; ik++) {
                    const int64_t m = Ms[im], n = Ns[in], k = Ks[ik];
                    const float alpha = alphas[variant % N_AB], beta = betas[variant % N_AB];
                    const int64_t pad = variant++ % 2 ? 3 : 0, lda = k + pad, ldb = k + 2 * pad, ldc = n + pad;
                    float *a = rnd_buf((size_t)(m * lda)), *bw = rnd_buf((size_t)(n * ldb));
                    float *c0 = rnd_buf((size_t)(m * ldc)), *c = malloc((size_t)(m * ldc) * sizeof *c);
                    uint16_t *b = malloc((size_t)(n * ldb) * sizeof *b);
                    ck_assert(c && b);
                    for (int64_t i = 0; i < n * ldb; i++) {
                        b[i] = to16(bw[i], bf16);
                        bw[i] = from16(b[i], bf16); /* what the reference multiplies */
                    }
                    for (int64_t i = 0; i < m * ldc; i++) {
                        if (i % ldc >= n) c0[i] = SENTINEL;
                        else if (beta == 0.0f) c0[i] = NAN;
                    }
                    memcpy(c, c0, (size_t)(m * ldc) * sizeof *c);
                    cg_cpu_gemm_nt_h(m, n, k, alpha, a, lda, b, bf16, ldb, beta, c, ldc);
                    /* on the blas path the own kernels run: their error bound */
                    check_result(strcmp(path, "blas") ? path : "own", m, n, k, alpha, beta, a, lda, bw, ldb, c0, c,
                                 ldc);
                    if (m > 1 && alpha != 0.0f) { /* row 1 alone gives the same bits as within the block */
                        float *r = malloc((size_t)n * sizeof *r);
                        ck_assert_ptr_nonnull(r);
                        for (int64_t j = 0; j < n; j++) r[j] = beta == 0.0f ? 0.0f : c0[ldc + j];
                        cg_cpu_gemm_nt_h(1, n, k, alpha, a + lda, 0, b, bf16, ldb, beta, r, n);
                        ck_assert_msg(memcmp(r, c + ldc, (size_t)n * sizeof *r) == 0,
                                      "%s bf16=%d m=%lld n=%lld k=%lld: the GEMV row differs from the block's", path,
                                      bf16, (long long)m, (long long)n, (long long)k);
                        free(r);
                    }
                    free(a);
                    free(bw);
                    free(b);
                    free(c0);
                    free(c);
                }
}
END_TEST

/* int8 B with per-row scales (cg_cpu_gemm_nt_q8). The reference quantizes
 * each row of A itself (s = max|a| / 127, q = round half even of a / s) and
 * sums the integer products: every path must give exactly
 * (float)sum * s_a * s_b, bit for bit, and so stays within the rounding of
 * A to 8 bits of the f32 product with B's exact values. A row with a NaN
 * gives NaNs; padding of C is untouched. */
static float ref_q8_row(const float *x, int64_t k, int32_t *q) {
    double amax = 0;
    for (int64_t p = 0; p < k; p++) amax = fmax(amax, fabs(x[p]));
    float s = (float)amax / 127.0f;
    const float f = (float)(127.0 / amax); /* the factor in f32, the product in f32 */
    for (int64_t p = 0; p < k; p++) {
        volatile float prod = x[p] * f;
        double r = amax == 0 ? 0 : (double)prod;
        double f = floor(r), d = r - f; /* half to even, by hand */
        q[p] = (int32_t)(d > 0.5 || (d == 0.5 && fmod(f, 2) != 0) ? f + 1 : f);
    }
    return s;
}

static void run_q8_shape(const char *path, int64_t m, int64_t n, int64_t k, int variant) {
    const int64_t pad = variant % 2 ? 5 : 0, lda = k + pad, ldb = k + 2 * pad, ldc = n + pad;
    float *a = rnd_buf((size_t)(m * lda)), *bs = rnd_buf((size_t)n), *c = malloc((size_t)(m * ldc) * sizeof *c);
    int8_t *b = malloc((size_t)(n * ldb));
    int32_t *qa = malloc((size_t)k * sizeof *qa);
    void *scratch = malloc(cg_cpu_gemm_q8_scratch(m, n, k));
    ck_assert(c && b && qa && scratch);
    for (int64_t i = 0; i < n * ldb; i++) b[i] = (int8_t)(rnd() * 127.49f);
    for (int64_t j = 0; j < n; j++) bs[j] = fabsf(bs[j]) * 0.01f;
    if (variant % 3 == 1) /* a row of zeros: scale 0, products 0 */
        for (int64_t p = 0; p < k; p++) a[p] = 0.0f;
    if (variant % 5 == 2) a[(m - 1) * lda + k / 2] = NAN;
    for (int64_t i = 0; i < m * ldc; i++) c[i] = SENTINEL;
    /* row sums given (an op's state) on odd variants, made in the call on even ones */
    int32_t *sums = NULL;
    if (variant % 2) {
        sums = malloc((size_t)n * sizeof *sums);
        ck_assert_ptr_nonnull(sums);
        cg_cpu_q8_row_sums(n, k, b, ldb, sums);
    }
    cg_cpu_gemm_nt_q8(m, n, k, a, lda, b, bs, sums, ldb, NULL, c, ldc, scratch);
    /* with a bias: the same, plus the bias in one addition */
    float *bias = rnd_buf((size_t)n), *cb = malloc((size_t)(m * ldc) * sizeof *cb);
    ck_assert_ptr_nonnull(cb);
    for (int64_t i = 0; i < m * ldc; i++) cb[i] = SENTINEL;
    cg_cpu_gemm_nt_q8(m, n, k, a, lda, b, bs, sums, ldb, bias, cb, ldc, scratch);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            const float want = c[i * ldc + j] + bias[j];
            if (memcmp(&cb[i * ldc + j], &want, sizeof want) != 0 && !(isnan(want) && isnan(cb[i * ldc + j])))
                ck_abort_msg("%s q8 bias m=%lld n=%lld k=%lld: C[%lld,%lld] = %.9g, want %.9g", path, (long long)m,
                             (long long)n, (long long)k, (long long)i, (long long)j, cb[i * ldc + j], want);
        }
    free(bias);
    free(cb);
    free(sums);
    for (int64_t i = 0; i < m; i++) {
        const float *ar = a + i * lda;
        int nan_row = 0;
        for (int64_t p = 0; p < k; p++) nan_row |= isnan(ar[p]);
        float sa = nan_row ? 0 : ref_q8_row(ar, k, qa);
        for (int64_t j = 0; j < n; j++) {
            const float got = c[i * ldc + j];
            if (nan_row) {
                if (!isnan(got))
                    ck_abort_msg("%s q8 m=%lld n=%lld k=%lld: C[%lld,%lld] = %g, want NaN", path, (long long)m,
                                 (long long)n, (long long)k, (long long)i, (long long)j, got);
                continue;
            }
            int64_t sum = 0;
            double f32 = 0, wabs = 0;
            for (int64_t p = 0; p < k; p++) {
                sum += qa[p] * b[j * ldb + p];
                f32 += (double)ar[p] * b[j * ldb + p] * bs[j];
                wabs += fabs((double)b[j * ldb + p] * bs[j]);
            }
            const float want = (float)sum * sa * bs[j];
            if (memcmp(&got, &want, sizeof got) != 0)
                ck_abort_msg("%s q8 m=%lld n=%lld k=%lld: C[%lld,%lld] = %.9g, want %.9g", path, (long long)m,
                             (long long)n, (long long)k, (long long)i, (long long)j, got, want);
            if (!(fabs(got - f32) <= sa / 2 * wabs * 1.0001 + 1e-30))
                ck_abort_msg("%s q8: C[%lld,%lld] = %.9g is farther than the rounding of A from %.9g", path,
                             (long long)i, (long long)j, got, f32);
        }
        for (int64_t j = n; j < ldc; j++)
            if (c[i * ldc + j] != SENTINEL)
                ck_abort_msg("%s q8: padding of C row %lld overwritten", path, (long long)i);
    }
    free(a);
    free(bs);
    free(c);
    free(b);
    free(qa);
    free(scratch);
}

START_TEST(test_q8_every_path) {
    const char *path = paths[_i];
    if (!cg_cpu_gemm_force(path)) return;
    rng_state = 11;
    int variant = 0;
    for (size_t im = 0; im < sizeof Ms / sizeof Ms[0]; im++)
        for (size_t in = 0; in < sizeof Ns / sizeof Ns[0]; in++)
            for (size_t ik = 0; ik < sizeof Ks / sizeof Ks[0]; ik++)
                run_q8_shape(path, Ms[im], Ns[in], Ks[ik], variant++);
    /* k = 0: zeros, nothing read */
    float c[3] = {SENTINEL, SENTINEL, SENTINEL};
    cg_cpu_gemm_nt_q8(1, 3, 0, NULL, 0, NULL, NULL, NULL, 0, NULL, c, 3, NULL);
    ck_assert(c[0] == 0.0f && c[1] == 0.0f && c[2] == 0.0f);
}
END_TEST

/* k <= 0 and m, n <= 0 keep cg_cpu_sgemm's meaning on every path. */
START_TEST(test_empty_products) {
    const char *path = paths[_i];
    if (!cg_cpu_gemm_force(path)) return;
    float c[6] = {1, 2, NAN, 4, 5, 6}, y[3] = {7, 8, 9};
    const float dummy[4] = {0};
    cg_cpu_sgemm(0, 1, 2, 3, 0, 1.0f, dummy, 1, dummy, 1, 0.0f, c, 3);
    for (int i = 0; i < 6; i++) ck_assert_float_eq(c[i], 0.0f);
    float d[6] = {1, 2, 3, 4, 5, 6};
    cg_cpu_sgemm(0, 1, 2, 3, 0, 1.0f, dummy, 1, dummy, 1, 2.0f, d, 3);
    for (int i = 0; i < 6; i++) ck_assert_float_eq(d[i], 2.0f * (float)(i + 1));
    cg_cpu_sgemm(0, 1, 0, 3, 2, 1.0f, dummy, 2, dummy, 2, 0.0f, d, 3);
    cg_cpu_sgemv(0, 3, 0, 1.0f, dummy, 1, dummy, 0.0f, y); /* BLAS quick return */
    ck_assert_float_eq(y[0], 7.0f);
    ck_assert_float_eq(d[5], 12.0f);
}
END_TEST

/* The panel product (cg_cpu_gemm_panel) on every path ("blas" takes the
 * best own kernels): against the double-precision sum with the bound of k
 * roundings in order, C's padding untouched, and each element the same
 * bits whatever m and nr, and with B packed or read from a wider matrix. */
START_TEST(test_panel_every_path) {
    const char *path = paths[_i];
    if (!cg_cpu_gemm_force(path)) return;
    rng_state = 11;
    static const int64_t pms[] = {1, 2, 5, 6, 7, 13, 40}, pks[] = {0, 1, 3, 27, 64, 300};
    enum { LDB = 21, LDC = 19 };
    for (size_t im = 0; im < sizeof pms / sizeof pms[0]; im++)
        for (size_t ik = 0; ik < sizeof pks / sizeof pks[0]; ik++) {
            const int64_t m = pms[im], k = pks[ik];
            float *a = rnd_buf((size_t)(m * (k + 1))), *b = rnd_buf((size_t)((k ? k : 1) * LDB));
            float *init = rnd_buf((size_t)m), *packed = malloc((size_t)(k ? k : 1) * CG_GEMM_PANEL * sizeof(float));
            float *c = malloc((size_t)(m * LDC) * sizeof *c), *row = malloc(LDC * sizeof *row);
            ck_assert(packed && c && row);
            for (int64_t p = 0; p < k; p++)
                memcpy(packed + p * CG_GEMM_PANEL, b + p * LDB, CG_GEMM_PANEL * sizeof(float));
            for (int nr = 1; nr <= CG_GEMM_PANEL; nr += nr < 8 ? 3 : 4) {
                const float *in = nr % 2 ? init : NULL;
                for (int64_t i = 0; i < m * LDC; i++) c[i] = SENTINEL;
                cg_cpu_gemm_panel(m, nr, k, a, k + 1, b, LDB, in, c, LDC);
                for (int64_t i = 0; i < m; i++) {
                    for (int j = 0; j < nr; j++) {
                        double s = in ? in[i] : 0.0, sa = fabs(s);
                        for (int64_t p = 0; p < k; p++) {
                            double t = (double)a[i * (k + 1) + p] * b[p * LDB + j];
                            s += t, sa += fabs(t);
                        }
                        const double tol = ((double)k + 2.0) * FLT_EPSILON * sa + 1e-30;
                        if (!(fabs(c[i * LDC + j] - s) <= tol))
                            ck_abort_msg("%s panel m=%lld nr=%d k=%lld: C[%lld,%d] = %.9g, want %.9g", path,
                                         (long long)m, nr, (long long)k, (long long)i, j, c[i * LDC + j], s);
                    }
                    for (int j = nr; j < LDC; j++) ck_assert_float_eq(c[i * LDC + j], SENTINEL);
                    /* one row alone, all 16 columns, B packed: the same bits */
                    cg_cpu_gemm_panel(1, CG_GEMM_PANEL, k, a + i * (k + 1), k + 1, packed, CG_GEMM_PANEL,
                                      in ? in + i : NULL, row, LDC);
                    ck_assert_msg(memcmp(row, c + i * LDC, (size_t)nr * sizeof *row) == 0,
                                  "%s panel m=%lld nr=%d k=%lld: row %lld differs alone", path, (long long)m, nr,
                                  (long long)k, (long long)i);
                }
            }
            free(a);
            free(b);
            free(init);
            free(packed);
            free(c);
            free(row);
        }
}
END_TEST

/* Rows of C come out bit-identical whatever M (full tiles, tail tiles, the
 * GEMV), and unchanged by a second run. */
START_TEST(test_rows_independent_of_m) {
    const char *path = paths[_i];
    if (strcmp(path, "blas") == 0 || !cg_cpu_gemm_force(path)) return;
    rng_state = 7;
    const int64_t m = 67, n = 301, k = 515;
    float *a = rnd_buf((size_t)(m * k)), *b = rnd_buf((size_t)(n * k));
    float *full = malloc((size_t)(m * n) * sizeof *full);
    float *part = malloc((size_t)(m * n) * sizeof *part);
    ck_assert_ptr_nonnull(full);
    ck_assert_ptr_nonnull(part);
    cg_cpu_sgemm(0, 1, m, n, k, 1.0f, a, k, b, k, 0.0f, full, n);
    for (int64_t rows = 1; rows <= 9; rows++) {
        for (int64_t i0 = 0; i0 + rows <= m; i0 += 5 * rows) {
            if (rows == 1) cg_cpu_sgemv(0, n, k, 1.0f, b, k, a + i0 * k, 0.0f, part);
            else cg_cpu_sgemm(0, 1, rows, n, k, 1.0f, a + i0 * k, k, b, k, 0.0f, part, n);
            ck_assert_msg(memcmp(part, full + i0 * n, (size_t)(rows * n) * sizeof *part) == 0,
                          "%s: rows %lld..%lld differ when computed %lld at a time", path, (long long)i0,
                          (long long)(i0 + rows - 1), (long long)rows);
        }
    }
    cg_cpu_sgemm(0, 1, m, n, k, 1.0f, a, k, b, k, 0.0f, part, n);
    ck_assert(memcmp(part, full, (size_t)(m * n) * sizeof *part) == 0);
    free(a);
    free(b);
    free(full);
    free(part);
}
END_TEST

START_TEST(test_force_names) {
    ck_assert_int_eq(cg_cpu_gemm_force("no-such-path"), 0);
    ck_assert_int_eq(cg_cpu_gemm_force(NULL), 0);
    ck_assert_int_eq(cg_cpu_gemm_force("blas"), 1);
    ck_assert_str_eq(cg_cpu_gemm_path(), "blas");
    ck_assert_int_eq(cg_cpu_gemm_force("portable"), 1);
    ck_assert_str_eq(cg_cpu_gemm_path(), "portable");
    ck_assert_int_eq(cg_cpu_gemm_force("own"), 1);
    ck_assert_str_ne(cg_cpu_gemm_path(), "blas");
    ck_assert_int_eq(cg_cpu_gemm_force("auto"), 1);
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) ck_assert_str_eq(cg_cpu_gemm_path(), "avx512");
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        ck_assert_str_eq(cg_cpu_gemm_path(), "avx2");
    else ck_assert_str_eq(cg_cpu_gemm_path(), "blas");
#else
    ck_assert_str_eq(cg_cpu_gemm_path(), "blas");
#endif
}
END_TEST

/* ---- a re-executed copy of this program: environment read at first use ---- */

/* What --probe prints: the thread count, the path and a hash of a few
 * products that split over threads. */
static int probe_main(void) {
    rng_state = 99;
    /* N-split, GEMV, small, and M-split (N too narrow) products. */
    static const int64_t shapes[][3] = {{64, 513, 512}, {13, 1000, 129}, {1, 4000, 1280},
                                        {3, 7, 2000},   {200, 24, 64},   {130, 8, 256}};
    uint64_t h = 14695981039346656037ull;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *a = rnd_buf((size_t)(m * k)), *b = rnd_buf((size_t)(n * k));
        float *c = malloc((size_t)(m * n) * sizeof *c);
        if (!c) return 2;
        if (m == 1) cg_cpu_sgemv(0, n, k, 1.0f, b, k, a, 0.0f, c);
        else cg_cpu_sgemm(0, 1, m, n, k, 1.0f, a, k, b, k, 0.0f, c, n);
        h = fnv(c, (size_t)(m * n) * sizeof *c, h);
        free(a);
        free(b);
        free(c);
    }
    printf("%d %s %016llx\n", cg_cpu_threads(), cg_cpu_gemm_path(), (unsigned long long)h);
    return 0;
}

typedef struct probe {
    int threads;
    char path[32];
    char hash[32];
} probe;

/* Runs this program with --probe under the environment assignments in
 * `env` ("NAME=VALUE NAME=VALUE", passed through the shell). */
static probe run_probe(const char *env) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "env %s '%s' --probe", env, self_exe);
    FILE *f = popen(cmd, "r");
    ck_assert_msg(f != NULL, "popen %s", cmd);
    probe p = {0};
    int got = fscanf(f, "%d %31s %31s", &p.threads, p.path, p.hash);
    int rc = pclose(f);
    ck_assert_msg(got == 3 && rc == 0, "%s: %d fields, status %d", cmd, got, rc);
    return p;
}

START_TEST(test_env_threads_and_determinism) {
    probe one = run_probe("CLGRAPH_THREADS=1 CLGRAPH_CPU_GEMM=auto");
    ck_assert_int_eq(one.threads, 1);
    static const char *counts[] = {"2", "3", "7"};
    for (size_t i = 0; i < 3; i++) {
        char env[128];
        snprintf(env, sizeof env, "CLGRAPH_THREADS=%s CLGRAPH_CPU_GEMM=auto", counts[i]);
        probe p = run_probe(env);
        ck_assert_int_eq(p.threads, atoi(counts[i]));
        ck_assert_str_eq(p.path, one.path);
        ck_assert_msg(strcmp(p.hash, one.hash) == 0, "%s threads: results differ from 1 thread", counts[i]);
    }
    /* Not a positive integer: the online CPUs. */
    probe bad = run_probe("CLGRAPH_THREADS=0x");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    ck_assert_int_eq(bad.threads, cpus < 1 ? 1 : cpus > 1024 ? 1024 : (int)cpus);
    ck_assert_str_eq(run_probe("CLGRAPH_CPU_GEMM=blas").path, "blas");
    ck_assert_str_eq(run_probe("CLGRAPH_CPU_GEMM=portable").path, "portable");
    ck_assert_str_eq(run_probe("CLGRAPH_CPU_GEMM=bogus").path, run_probe("").path);
    /* The portable kernels split over threads deterministically too. */
    ck_assert_str_eq(run_probe("CLGRAPH_THREADS=1 CLGRAPH_CPU_GEMM=portable").hash,
                     run_probe("CLGRAPH_THREADS=3 CLGRAPH_CPU_GEMM=portable").hash);
}
END_TEST

/* ---- the thread pool ---- */

#define MAX_N 200003

typedef struct cover {
    atomic_int hits[MAX_N];
    atomic_int calls;
    atomic_int small_chunks; /* chunks shorter than grain */
    size_t grain;
} cover;

static void cover_fn(void *ctx, size_t begin, size_t end) {
    cover *cv = ctx;
    atomic_fetch_add(&cv->calls, 1);
    if (end - begin < cv->grain) atomic_fetch_add(&cv->small_chunks, 1);
    for (size_t i = begin; i < end; i++) atomic_fetch_add_explicit(&cv->hits[i], 1, memory_order_relaxed);
}

static cover *cover_new(void) {
    cover *cv = calloc(1, sizeof *cv);
    ck_assert_ptr_nonnull(cv);
    return cv;
}

static void cover_run(cover *cv, size_t n, size_t grain) {
    for (size_t i = 0; i < n; i++) atomic_store_explicit(&cv->hits[i], 0, memory_order_relaxed);
    atomic_store(&cv->calls, 0);
    atomic_store(&cv->small_chunks, 0);
    cv->grain = grain;
    cg_cpu_parallel_for(n, grain, cover_fn, cv);
    for (size_t i = 0; i < n; i++)
        if (atomic_load_explicit(&cv->hits[i], memory_order_relaxed) != 1)
            ck_abort_msg("n=%zu grain=%zu: item %zu ran %d times", n, grain, i, atomic_load(&cv->hits[i]));
    if (n > grain && n > 0) /* serial calls cover [0, n) in one go */
        ck_assert_msg(atomic_load(&cv->small_chunks) == 0, "n=%zu grain=%zu: a chunk < grain", n, grain);
    if (n > 0 && n <= (grain ? grain : 1)) ck_assert_int_eq(atomic_load(&cv->calls), 1);
}

START_TEST(test_pool_covers_every_index_once) {
    ck_assert_int_ge(cg_cpu_threads(), 1);
    cover *cv = cover_new();
    static const size_t ns[] = {0, 1, 2, 3, 7, 8, 64, 100, 1000, 4097, MAX_N};
    static const size_t grains[] = {0, 1, 2, 3, 5, 64, 999, 1000, 100000, 1u << 30};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t g = 0; g < sizeof grains / sizeof grains[0]; g++)
            for (int rep = 0; rep < 3; rep++) cover_run(cv, ns[i], grains[g]);
    free(cv);
}
END_TEST

typedef struct nest {
    atomic_int inner_calls, inner_wrong;
    atomic_int outer_items;
} nest;

static void inner_fn(void *ctx, size_t begin, size_t end) {
    nest *ns = ctx;
    atomic_fetch_add(&ns->inner_calls, 1);
    if (begin != 0 || end != 1000) atomic_fetch_add(&ns->inner_wrong, 1);
}

static void outer_fn(void *ctx, size_t begin, size_t end) {
    nest *ns = ctx;
    for (size_t i = begin; i < end; i++) {
        cg_cpu_parallel_for(1000, 1, inner_fn, ns); /* serial: one call */
        atomic_fetch_add(&ns->outer_items, 1);
    }
}

START_TEST(test_pool_nested_runs_serially) {
    nest ns = {0};
    cg_cpu_parallel_for(64, 1, outer_fn, &ns);
    ck_assert_int_eq(atomic_load(&ns.outer_items), 64);
    ck_assert_int_eq(atomic_load(&ns.inner_calls), 64);
    ck_assert_int_eq(atomic_load(&ns.inner_wrong), 0);
}
END_TEST

typedef struct serial_probe {
    pthread_t caller;
    int calls, on_caller;
    size_t begin, end;
} serial_probe;

static void serial_fn(void *ctx, size_t begin, size_t end) {
    serial_probe *sp = ctx;
    sp->calls++;
    sp->on_caller += pthread_equal(sp->caller, pthread_self()) != 0;
    sp->begin = begin;
    sp->end = end;
}

START_TEST(test_pool_serial_when_small) {
    serial_probe sp = {.caller = pthread_self()};
    cg_cpu_parallel_for(10, 10, serial_fn, &sp);
    ck_assert_int_eq(sp.calls, 1);
    ck_assert_int_eq(sp.on_caller, 1);
    ck_assert_uint_eq(sp.begin, 0);
    ck_assert_uint_eq(sp.end, 10);
    cg_cpu_parallel_for(0, 1, serial_fn, &sp); /* nothing to do */
    ck_assert_int_eq(sp.calls, 1);
}
END_TEST

/* With more than one thread the workers take part: the caller's first chunk
 * waits (up to 10 s) until another thread has run a chunk. */
typedef struct helper_probe {
    pthread_t caller;
    atomic_int other_ran;
} helper_probe;

static void helper_fn(void *ctx, size_t begin, size_t end) {
    helper_probe *hp = ctx;
    (void)end;
    if (!pthread_equal(hp->caller, pthread_self())) {
        atomic_store(&hp->other_ran, 1);
        return;
    }
    if (begin != 0) return;
    for (int i = 0; i < 10000 && !atomic_load(&hp->other_ran); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

START_TEST(test_pool_workers_take_part) {
    if (cg_cpu_threads() < 2) return;
    for (int round = 0; round < 3; round++) {
        helper_probe hp = {.caller = pthread_self()};
        cg_cpu_parallel_for(64, 1, helper_fn, &hp);
        ck_assert_msg(atomic_load(&hp.other_ran), "round %d: no worker ran a chunk", round);
        /* Let the workers fall asleep: the next job must wake them. */
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
}
END_TEST

static void *concurrent_caller(void *arg) {
    cover *cv = arg;
    for (int rep = 0; rep < 300; rep++) {
        size_t n = 1000 + (size_t)rep * 37;
        for (size_t i = 0; i < n; i++) atomic_store(&cv->hits[i], 0);
        cv->grain = 7;
        cg_cpu_parallel_for(n, 7, cover_fn, cv);
        for (size_t i = 0; i < n; i++)
            if (atomic_load(&cv->hits[i]) != 1) return (void *)1;
    }
    return NULL;
}

START_TEST(test_pool_concurrent_callers) {
    cover *c1 = cover_new(), *c2 = cover_new();
    pthread_t t1, t2;
    ck_assert_int_eq(pthread_create(&t1, NULL, concurrent_caller, c1), 0);
    ck_assert_int_eq(pthread_create(&t2, NULL, concurrent_caller, c2), 0);
    void *r1, *r2;
    pthread_join(t1, &r1);
    pthread_join(t2, &r2);
    ck_assert_ptr_null(r1);
    ck_assert_ptr_null(r2);
    free(c1);
    free(c2);
}
END_TEST

/* A child forked after the pool started gets a pool of its own. */
START_TEST(test_pool_after_fork) {
    cover *cv = cover_new();
    cover_run(cv, 5000, 10);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        cv->grain = 10;
        cg_cpu_parallel_for(5000, 10, cover_fn, cv);
        for (size_t i = 0; i < 5000; i++)
            if (atomic_load(&cv->hits[i]) != 2) _exit(1);
        _exit(0);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    cover_run(cv, 5000, 10);
    free(cv);
}
END_TEST

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Idle workers sleep: the process uses next to no CPU between jobs. */
START_TEST(test_pool_idle_sleeps) {
    cover *cv = cover_new();
    cover_run(cv, 100000, 100);
    struct timespec settle = {0, 50000000}, idle = {0, 300000000};
    nanosleep(&settle, NULL);
    double t0 = cpu_seconds();
    nanosleep(&idle, NULL);
    double used = cpu_seconds() - t0;
    ck_assert_msg(used < 0.03, "%.3f s of CPU in 0.3 s idle", used);
    free(cv);
}
END_TEST

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--probe") == 0) return probe_main();
    ssize_t len = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    if (len > 0) self_exe[len] = '\0';
    else snprintf(self_exe, sizeof self_exe, "%s", argv[0]);

    Suite *s = suite_create("cpu_gemm");
    TCase *tc = tcase_create("gemm");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_shapes_every_path, 0, N_PATHS);
    tcase_add_loop_test(tc, test_16bit_b_every_path, 0, N_PATHS);
    tcase_add_loop_test(tc, test_q8_every_path, 0, N_PATHS);
    tcase_add_loop_test(tc, test_empty_products, 0, N_PATHS);
    tcase_add_loop_test(tc, test_rows_independent_of_m, 0, N_PATHS);
    tcase_add_loop_test(tc, test_panel_every_path, 0, N_PATHS);
    tcase_add_test(tc, test_force_names);
    tcase_add_test(tc, test_env_threads_and_determinism);
    suite_add_tcase(s, tc);
    TCase *tp = tcase_create("pool");
    tcase_set_timeout(tp, 120);
    tcase_add_test(tp, test_pool_covers_every_index_once);
    tcase_add_test(tp, test_pool_nested_runs_serially);
    tcase_add_test(tp, test_pool_serial_when_small);
    tcase_add_test(tp, test_pool_workers_take_part);
    tcase_add_test(tp, test_pool_concurrent_callers);
    tcase_add_test(tp, test_pool_after_fork);
    tcase_add_test(tp, test_pool_idle_sleeps);
    suite_add_tcase(s, tp);
    return tu_run_suite(s, 0);
}
