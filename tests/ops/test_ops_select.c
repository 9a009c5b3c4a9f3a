/* Tests of log_softmax_topk (ops/select.c) and the CPU scans it stands on
 * (backends/cpu/cpu_scan.c). The op's CPU kernel must give exactly what
 * its meaning gives: the log_softmax kernel's values, ranked as the topk
 * kernel ranks them (checked bit for bit against those two ops, themselves
 * tested against naive references), and its values must be close to a
 * log-softmax computed here in long double. Rows with ties, near-ties that
 * only the rounding of the log-probability makes equal, NaN, +inf and -inf
 * rows, k from 1 to N, and the inference errors. */
#include <check.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_scan.h"
#include "clgraph/plugin.h"
#include "ops_common.h"
#include "op_harness.h"
#include "test_util.h"

static char g_err[512];

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* ------------------------------------------------------------------ */
/* cpu_scan                                                            */

START_TEST(test_scan_max) {
    float x[300];
    th_seed(5);
    for (int n = 0; n <= 70; n++) {
        for (int off = 0; off < 3; off++) {
            th_fill(x, 300, -100, 100);
            float want = -INFINITY;
            for (int i = 0; i < n; i++)
                if (x[off + i] > want) want = x[off + i];
            float got = cg_cpu_max(x + off, (size_t)n);
            if (got != want) ck_abort_msg("max n=%d off=%d: %g, expected %g", n, off, got, want);
            if (n > 0) {
                /* A NaN anywhere makes the maximum NaN. */
                int at = (n * 7 + off) % n;
                x[off + at] = NAN;
                if (!isnan(cg_cpu_max(x + off, (size_t)n))) ck_abort_msg("max n=%d with a NaN at %d is not NaN", n, at);
                /* Infinities are ordinary values. */
                x[off + at] = INFINITY;
                if (cg_cpu_max(x + off, (size_t)n) != INFINITY) ck_abort_msg("max n=%d with +inf", n);
                for (int i = 0; i < n; i++) x[off + i] = -INFINITY;
                if (cg_cpu_max(x + off, (size_t)n) != -INFINITY) ck_abort_msg("max n=%d of -inf", n);
            }
        }
    }
}
END_TEST

START_TEST(test_scan_first_above) {
    float x[200];
    th_seed(6);
    for (int n = 0; n <= 70; n++) {
        for (int trial = 0; trial < 20; trial++) {
            th_fill(x, 200, -1, 1);
            if (trial % 3 == 0)
                for (int i = 0; i < n; i += 5) x[i] = NAN; /* never above anything */
            float t = th_uniform(0.5f, 1.2f);
            size_t want = (size_t)n;
            for (int i = 0; i < n; i++)
                if (x[i] > t) {
                    want = (size_t)i;
                    break;
                }
            size_t got = cg_cpu_first_above(x, (size_t)n, t);
            if (got != want) ck_abort_msg("first_above n=%d t=%g: %zu, expected %zu", n, t, got, want);
        }
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* log_softmax_topk against log_softmax + topk                         */

static void run_k(const cg_op_def *def, const char *key, int64_t k, th_tensor *in, int n_out, th_tensor *out) {
    th_attrs at;
    th_attrs_init(&at, def);
    if (key) th_set_int(&at, def, key, k);
    cg_op_status st = th_run(def, 1, in, &at, n_out, out, g_err, sizeof g_err);
    ck_assert_msg(st == CG_OP_OK, "%s failed: %s", def->name, g_err);
}

static int same_float(float a, float b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, 4) == 0; }

/* Compares the fused op with the composition on x [rows, n] and with a long
 * double log-softmax. */
static void check_rows(const char *what, float *x, int64_t rows, int64_t n, int64_t k) {
    int64_t dims[2] = {rows, n};
    th_tensor in = th_f32(x, 2, dims), lsm[1], top[2], fused[2];
    run_k(&cg_op_log_softmax, NULL, 0, &in, 1, lsm);
    th_tensor lin = th_f32(lsm[0].data, 2, dims);
    run_k(&cg_op_topk, "k", k, &lin, 2, top);
    run_k(&cg_op_log_softmax_topk, "k", k, &in, 2, fused);
    ck_assert_int_eq(fused[0].desc.ndim, 2);
    ck_assert_int_eq(fused[0].desc.dims[1], k);
    ck_assert_int_eq(fused[1].desc.dtype, CG_OP_I32);
    const float *fv = fused[0].data, *tv = top[0].data;
    const int32_t *fi = fused[1].data, *ti = top[1].data;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        long double mx = -INFINITY, s = 0;
        int finite = 1;
        for (int64_t j = 0; j < n; j++) {
            if (!isfinite(xr[j]) && !(xr[j] == -INFINITY)) finite = 0;
            if (xr[j] > mx) mx = xr[j];
        }
        for (int64_t j = 0; finite && j < n; j++) s += expl((long double)xr[j] - mx);
        for (int64_t j = 0; j < k; j++) {
            int64_t e = r * k + j;
            if (fi[e] != ti[e] || !same_float(fv[e], tv[e]))
                ck_abort_msg("%s: row %lld pos %lld is (%.9g, %d), log_softmax+topk give (%.9g, %d)", what,
                             (long long)r, (long long)j, fv[e], fi[e], tv[e], ti[e]);
            if (finite && mx > -INFINITY) {
                long double want = (long double)xr[fi[e]] - mx - logl(s);
                if (fabsl(fv[e] - want) > 2e-6L * (1 + fabsl(want)))
                    ck_abort_msg("%s: row %lld pos %lld value %.9g, long double %.9Lg", what, (long long)r,
                                 (long long)j, fv[e], want);
            }
        }
    }
    th_free_outputs(1, lsm);
    th_free_outputs(2, top);
    th_free_outputs(2, fused);
}

START_TEST(test_lst_random) {
    static const int64_t shapes[][3] = {
        /* rows, n, k */
        {1, 1, 1},    {3, 17, 1},   {3, 17, 5},    {3, 17, 17},   {2, 16, 16},   {4, 33, 0},
        {5, 100, 10}, {2, 1000, 1}, {2, 1000, 40}, {64, 8000, 1}, {8, 8000, 10}, {1, 257, 257},
    };
    char what[128];
    th_seed(21);
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        int64_t rows = shapes[c][0], n = shapes[c][1], k = shapes[c][2];
        float *x = xmalloc(sizeof(float) * (size_t)(rows * n));
        for (int variant = 0; variant < 4; variant++) {
            if (variant == 0) th_fill(x, rows * n, -8, 8);
            if (variant == 1) /* integers: many exact ties */
                for (int64_t i = 0; i < rows * n; i++) x[i] = floorf(th_uniform(-3, 4));
            if (variant == 2) /* ascending rows a few ulps apart: the threshold moves at every element */
                for (int64_t i = 0; i < rows * n; i++) x[i] = 0.1f + (float)(i % n) * 0x1p-21f;
            if (variant == 3) { /* a few ulps around 1e-3: distinct, but equal once x - lse rounds */
                for (int64_t i = 0; i < rows * n; i++) {
                    float v = 1e-3f;
                    for (int64_t u = (i * 7) % 5; u > 0; u--) v = nextafterf(v, i % 2 ? 1.0f : 0.0f);
                    x[i] = v;
                }
            }
            snprintf(what, sizeof what, "[%lld, %lld] k=%lld variant %d", (long long)rows, (long long)n, (long long)k,
                     variant);
            check_rows(what, x, rows, n, k);
        }
        free(x);
    }
}
END_TEST

START_TEST(test_lst_special_rows) {
    /* Rows: a NaN, +inf, all -inf, some -inf, a single finite among -inf. */
    enum { N = 40 };
    float x[5 * N];
    th_seed(22);
    th_fill(x, 5 * N, -2, 2);
    x[0 * N + 17] = NAN;
    x[1 * N + 3] = INFINITY;
    for (int j = 0; j < N; j++) x[2 * N + j] = -INFINITY;
    for (int j = 0; j < N; j += 2) x[3 * N + j] = -INFINITY;
    for (int j = 0; j < N; j++) x[4 * N + j] = j == 29 ? 0.5f : -INFINITY;
    for (int64_t k = 1; k <= N; k += 13) {
        char what[64];
        snprintf(what, sizeof what, "special rows k=%lld", (long long)k);
        check_rows(what, x, 5, N, k);
    }
}
END_TEST

START_TEST(test_lst_decompose_and_infer) {
    ck_assert_ptr_nonnull(cg_op_log_softmax_topk.decompose);
    ck_assert_ptr_nonnull(cg_op_log_softmax_topk.conform_case);
    float f[64] = {0};
    int64_t d2[2] = {3, 5}, d0[1] = {0};
    th_tensor in = th_f32(f, 2, d2), out[2];
    th_attrs at;
    th_attrs_init(&at, &cg_op_log_softmax_topk);
    const struct {
        int64_t k; /* -100: unset */
        const char *msg;
    } bad[] = {
        {-100, "attribute k is required"},
        {6, "k=6 is larger than the last dim 5 of x [3, 5]"},
        {-1, "k must be >= 0, got -1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        th_attrs_init(&at, &cg_op_log_softmax_topk);
        if (bad[i].k != -100) th_set_int(&at, &cg_op_log_softmax_topk, "k", bad[i].k);
        cg_op_status st = th_infer(&cg_op_log_softmax_topk, 1, &in, &at, 2, out, g_err, sizeof g_err);
        ck_assert_msg(st == CG_OP_ERROR && strstr(g_err, bad[i].msg), "k=%lld: '%s'", (long long)bad[i].k, g_err);
    }
    th_set_int(&at, &cg_op_log_softmax_topk, "k", 1);
    th_tensor scalar = th_f32(f, 0, d0);
    ck_assert_int_eq(th_infer(&cg_op_log_softmax_topk, 1, &scalar, &at, 2, out, g_err, sizeof g_err), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, "at least 1 dim") != NULL, "%s", g_err);
    int64_t di[2] = {3, 5};
    th_tensor ints = th_i32((int32_t *)f, 2, di);
    ck_assert_int_eq(th_infer(&cg_op_log_softmax_topk, 1, &ints, &at, 2, out, g_err, sizeof g_err), CG_OP_ERROR);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("ops_select");
    TCase *tc = tcase_create("scan");
    tcase_add_test(tc, test_scan_max);
    tcase_add_test(tc, test_scan_first_above);
    suite_add_tcase(s, tc);
    tc = tcase_create("log_softmax_topk");
    tcase_add_test(tc, test_lst_random);
    tcase_add_test(tc, test_lst_special_rows);
    tcase_add_test(tc, test_lst_decompose_and_infer);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(suite(), 0); }
