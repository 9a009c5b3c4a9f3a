/* The CPU backend's vectorised exp, tanh, logistic and erf functions
 * (backends/cpu/cpu_math.c) against double-precision libm rounded to float,
 * on millions of floats spread over the whole range, on every instruction
 * set this CPU runs; special values; tails; and bit-identical results
 * across instruction sets. */
#include <check.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_math.h"
#include "cpu/cpu_scan.h"
#include "test_util.h"

static const char *isas[] = {"avx512", "avx2", "baseline"};

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Distance in units in the last place: the floats are mapped onto a line of
 * integers where neighbours differ by one. */
static int64_t ulp_dist(float a, float b) {
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    int64_t la = ia < 0 ? (int64_t)INT32_MIN - ia : ia;
    int64_t lb = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return la > lb ? la - lb : lb - la;
}

static double ref_exp(double x) { return exp(x); }
static double ref_tanh(double x) { return tanh(x); }
static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double ref_erf(double x) { return erf(x); }
static double ref_erff(double x) { return erff((float)x); }

typedef void (*vfun)(const float *, float *, size_t);

/* Max ulp error of f over every `stride`-th float bit pattern (both signs),
 * NaN results compared as NaN. Returns the worst error; *worst_x the argument. */
static int64_t sweep(vfun f, double (*ref)(double), uint32_t stride, float *worst_x) {
    enum { CHUNK = 4096 };
    static float xs[CHUNK], ys[CHUNK];
    int64_t worst = 0;
    size_t n = 0;
    for (uint64_t u = 0; u <= 0xffffffffu; u += stride) {
        xs[n++] = from_bits((uint32_t)u);
        if (n == CHUNK || u + stride > 0xffffffffu) {
            f(xs, ys, n);
            for (size_t i = 0; i < n; i++) {
                float want = (float)ref((double)xs[i]);
                if (isnan(want) || isnan(ys[i])) {
                    /* Check logs every assertion it evaluates: test first. */
                    if (!(isnan(want) && isnan(ys[i])))
                        ck_abort_msg("x=%a: got %a, want %a", (double)xs[i], (double)ys[i], (double)want);
                    continue;
                }
                int64_t d = ulp_dist(ys[i], want);
                if (d > worst) {
                    worst = d;
                    *worst_x = xs[i];
                }
            }
            n = 0;
        }
    }
    return worst;
}

/* Every ISA this CPU has: exp within 1 ulp, tanh and logistic within 2,
 * erf within 1 of double-precision erf and of libm's erff, over 4.2
 * million floats (all exponents, all signs). */
START_TEST(test_accuracy) {
    int ran = 0;
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (!cg_cpu_math_force(isas[i])) continue;
        ran++;
        float wx = 0;
        int64_t e = sweep(cg_cpu_vexp, ref_exp, 1021, &wx);
        ck_assert_msg(e <= 1, "%s exp: %lld ulp at %a", isas[i], (long long)e, (double)wx);
        e = sweep(cg_cpu_vtanh, ref_tanh, 1021, &wx);
        ck_assert_msg(e <= 2, "%s tanh: %lld ulp at %a", isas[i], (long long)e, (double)wx);
        e = sweep(cg_cpu_vsigmoid, ref_sigmoid, 1021, &wx);
        ck_assert_msg(e <= 2, "%s sigmoid: %lld ulp at %a", isas[i], (long long)e, (double)wx);
        e = sweep(cg_cpu_verf, ref_erf, 1021, &wx);
        ck_assert_msg(e <= 1, "%s erf: %lld ulp at %a", isas[i], (long long)e, (double)wx);
        e = sweep(cg_cpu_verf, ref_erff, 1021, &wx);
        ck_assert_msg(e <= 1, "%s erf against erff: %lld ulp at %a", isas[i], (long long)e, (double)wx);
    }
    ck_assert_int_ge(ran, 1);
}
END_TEST

/* Every float where the methods change: tanh's two formulas meet at 0.625,
 * exp's reduction switches n at (k + 1/2) ln 2 (0.3466 is the first), erf's
 * two polynomials at 2.25 and its cap at 4; erf near 0. Both signs. */
START_TEST(test_dense_core) {
    enum { CHUNK = 4096 };
    static float xs[CHUNK], ys[CHUNK];
    struct {
        vfun f;
        double (*ref)(double);
        float lo, hi;
        int64_t tol;
        const char *name;
    } cases[] = {{cg_cpu_vtanh, ref_tanh, 0.5f, 0.75f, 2, "tanh"},
                 {cg_cpu_vexp, ref_exp, 0.3f, 0.4f, 1, "exp"},
                 {cg_cpu_vsigmoid, ref_sigmoid, 0.3f, 0.4f, 2, "sigmoid"},
                 {cg_cpu_verf, ref_erf, 2.2f, 2.3f, 1, "erf"},
                 {cg_cpu_verf, ref_erf, 3.8f, 4.2f, 1, "erf"},
                 {cg_cpu_verf, ref_erf, 0x1p-20f, 0x1p-17f, 1, "erf"}};
    ck_assert(cg_cpu_math_force("baseline"));
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint32_t lo, hi;
        memcpy(&lo, &cases[c].lo, 4);
        memcpy(&hi, &cases[c].hi, 4);
        for (int sign = 0; sign < 2; sign++) {
            size_t n = 0;
            for (uint32_t u = lo; u <= hi; u++) {
                float x = from_bits(u);
                xs[n++] = sign ? -x : x;
                if (n == CHUNK || u == hi) {
                    cases[c].f(xs, ys, n);
                    for (size_t i = 0; i < n; i++) {
                        float want = (float)cases[c].ref((double)xs[i]);
                        int64_t d = ulp_dist(ys[i], want);
                        if (d > cases[c].tol)
                            ck_abort_msg("%s(%a) = %a, want %a (%lld ulp)", cases[c].name, (double)xs[i], (double)ys[i],
                                         (double)want, (long long)d);
                    }
                    n = 0;
                }
            }
        }
    }
}
END_TEST

/* Special values are libm's: infinities, NaN, overflow, subnormal results,
 * saturation, signed zero. */
START_TEST(test_special_values) {
    const float xs[] = {0.0f,    -0.0f,   INFINITY, -INFINITY, NAN,    88.5f, 89.0f,  -87.5f, -100.0f,
                        -104.0f, -200.0f, 1e-30f,   -1e-30f,   1e-45f, 20.0f, -20.0f, 100.0f, -100.0f};
    const size_t n = sizeof xs / sizeof xs[0];
    float y[sizeof xs / sizeof xs[0]];
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (!cg_cpu_math_force(isas[i])) continue;
        cg_cpu_vexp(xs, y, n);
        for (size_t j = 0; j < n; j++) {
            float want = expf(xs[j]);
            if (isnan(want)) ck_assert(isnan(y[j]));
            else
                ck_assert_msg(ulp_dist(y[j], want) <= 1, "%s exp(%a) = %a, want %a", isas[i], (double)xs[j],
                              (double)y[j], (double)want);
        }
        cg_cpu_vtanh(xs, y, n);
        for (size_t j = 0; j < n; j++) {
            float want = tanhf(xs[j]);
            if (isnan(want)) ck_assert(isnan(y[j]));
            else ck_assert_msg(ulp_dist(y[j], want) <= 2, "%s tanh(%a) = %a", isas[i], (double)xs[j], (double)y[j]);
        }
        /* Signed zeros survive tanh. */
        ck_assert(signbit(y[1]) && !signbit(y[0]));
        cg_cpu_vsigmoid(xs, y, n);
        for (size_t j = 0; j < n; j++) {
            float want = (float)ref_sigmoid((double)xs[j]);
            if (isnan(xs[j])) ck_assert(isnan(y[j]));
            else
                ck_assert_msg(ulp_dist(y[j], want) <= 2, "%s sigmoid(%a) = %a, want %a", isas[i], (double)xs[j],
                              (double)y[j], (double)want);
        }
        ck_assert(y[2] == 1.0f && y[3] == 0.0f);
        cg_cpu_verf(xs, y, n);
        for (size_t j = 0; j < n; j++) {
            float want = erff(xs[j]);
            if (isnan(want)) ck_assert(isnan(y[j]));
            else
                ck_assert_msg(ulp_dist(y[j], want) <= 1, "%s erf(%a) = %a, want %a", isas[i], (double)xs[j],
                              (double)y[j], (double)want);
        }
        ck_assert(y[2] == 1.0f && y[3] == -1.0f && signbit(y[1]) && !signbit(y[0]));
    }
}
END_TEST

/* A value's result does not depend on its position (tails of every length)
 * or on the instruction set. */
START_TEST(test_tails_and_isas_agree) {
    enum { N = 77 };
    float x[N], a[N], b[N], v[N], ref[4][N], got[N];
    uint64_t s = 42;
    for (int i = 0; i < N; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 12.0 - 6.0);
        a[i] = x[i] * 0.5f;
        b[i] = (float)(i % 7) * 0.25f - 0.75f;
        v[i] = (float)(i % 5) * 0.1f - 0.2f;
    }
    ck_assert(cg_cpu_math_force("baseline"));
    cg_cpu_vexp(x, ref[0], N);
    cg_cpu_vtanh(x, ref[1], N);
    cg_cpu_vsigmoid(x, ref[2], N);
    cg_cpu_verf(x, ref[3], N);
    const float dot_ref = cg_cpu_tanh_dot(a, b, v, N);
    double dot_exact = 0;
    for (int i = 0; i < N; i++) dot_exact += (double)v[i] * tanh((double)a[i] + (double)b[i]);
    ck_assert_msg(fabs(dot_ref - dot_exact) < 1e-5, "tanh_dot %g vs %g", (double)dot_ref, dot_exact);
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
        if (!cg_cpu_math_force(isas[k])) continue;
        for (int start = 0; start < 20; start++)
            for (int len = 0; start + len <= N; len += 1 + len / 3) {
                vfun fs[4] = {cg_cpu_vexp, cg_cpu_vtanh, cg_cpu_vsigmoid, cg_cpu_verf};
                for (int f = 0; f < 4; f++) {
                    fs[f](x + start, got, (size_t)len);
                    ck_assert_msg(memcmp(got, ref[f] + start, sizeof(float) * (size_t)len) == 0,
                                  "%s function %d differs at start %d len %d", isas[k], f, start, len);
                }
            }
        /* In place. */
        memcpy(got, x, sizeof x);
        cg_cpu_vtanh(got, got, N);
        ck_assert(memcmp(got, ref[1], sizeof got) == 0);
        ck_assert(cg_cpu_tanh_dot(a, b, v, N) == dot_ref);
        ck_assert(cg_cpu_tanh_dot(a, b, v, 0) == 0.0f);
    }
    ck_assert_int_eq(cg_cpu_math_force("no-such-isa"), 0);
}
END_TEST

/* The softmax primitives against double precision: exp of the exact
 * difference within 1 ulp (+ the first-order term), the sum within a few
 * double ulps of the float terms' sum, exact double rounding of + and *. */
START_TEST(test_softmax_primitives) {
    enum { N = 1000 };
    static float x[N], y[N], z[N];
    uint64_t s = 7;
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
        if (!cg_cpu_math_force(isas[k])) continue;
        for (int len = 0; len <= N; len += len < 40 ? 1 : 97) {
            float mx = -INFINITY;
            for (int i = 0; i < len; i++) {
                s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                /* Logits spread over 120 so that some differences underflow. */
                x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 120.0 - 60.0);
                if (i % 17 == 3) x[i] = -INFINITY;
                if (x[i] > mx) mx = x[i];
            }
            double want_sum = 0;
            for (int i = 0; i < len; i++) want_sum += exp((double)x[i] - (double)mx);
            const double got = cg_cpu_exp_shift_sum(x, mx, y, (size_t)len);
            const double got2 = cg_cpu_exp_shift_sum(x, mx, NULL, (size_t)len);
            if (got != got2) ck_abort_msg("%s len %d: %.17g vs %.17g", isas[k], len, got, got2);
            if (fabs(got - want_sum) > 2e-7 * want_sum)
                ck_abort_msg("%s len %d: sum %.17g, want %.17g", isas[k], len, got, want_sum);
            for (int i = 0; i < len; i++) {
                const float want = (float)exp((double)x[i] - (double)mx);
                if (ulp_dist(y[i], want) > 1)
                    ck_abort_msg("%s: exp(%a - %a) = %a, want %a", isas[k], (double)x[i], (double)mx, (double)y[i],
                                 (double)want);
            }
            const double c = -((double)mx + log(want_sum));
            cg_cpu_add_round(x, c, z, (size_t)len);
            for (int i = 0; i < len; i++)
                if (memcmp(&z[i], &(float){(float)((double)x[i] + c)}, 4) != 0)
                    ck_abort_msg("%s: add_round at %d", isas[k], i);
            memcpy(z, y, sizeof(float) * (size_t)len);
            cg_cpu_mul_round(y, 1.0 / want_sum, y, (size_t)len);
            for (int i = 0; i < len; i++) {
                if (memcmp(&y[i], &(float){(float)((double)z[i] * (1.0 / want_sum))}, 4) != 0)
                    ck_abort_msg("%s: mul_round at %d", isas[k], i);
                /* The softmax value itself: exp's ulp plus one rounding. */
                const float p = (float)(exp((double)x[i] - (double)mx) / want_sum);
                if (ulp_dist(y[i], p) > 2)
                    ck_abort_msg("%s: softmax at %d: %a, want %a", isas[k], i, (double)y[i], (double)p);
            }
        }
        /* +inf in the slice (max +inf): NaN where x is +inf, 0 elsewhere. */
        const float xi[3] = {1.0f, INFINITY, -INFINITY};
        float yi[3];
        ck_assert(isnan(cg_cpu_exp_shift_sum(xi, INFINITY, yi, 3)));
        ck_assert(yi[0] == 0.0f && isnan(yi[1]) && yi[2] == 0.0f);
    }
}
END_TEST

/* Short rows several at a time: bit for bit what the row primitives give
 * each row (max, exp_shift_sum, mul_round; all 0 where the max is -inf)
 * on every ISA, every row count and length up to 16, in place too; rows
 * with -inf, +inf and NaN among them; and within 2 ulp of the softmax in
 * double. */
START_TEST(test_softmax_short) {
    enum { R = 37, N = 16 };
    static float x[R * N], want[R * N], got[R * N];
    uint64_t s = 11;
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
        if (!cg_cpu_math_force(isas[k])) continue;
        for (int n = 1; n <= N; n++)
            for (int rows = 1; rows <= R; rows += rows < 10 ? 1 : 9) {
                for (int i = 0; i < rows * n; i++) {
                    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                    x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 60.0 - 30.0);
                    if (i % 13 == 5) x[i] = -INFINITY;
                }
                if (rows > 3) { /* a row of -inf, one with +inf, one with NaN */
                    for (int j = 0; j < n; j++) x[n + j] = -INFINITY;
                    x[2 * n + n / 2] = INFINITY;
                    x[3 * n] = NAN;
                }
                for (int r = 0; r < rows; r++) {
                    const float *xr = x + r * n;
                    float *wr = want + r * n;
                    const float mx = cg_cpu_max(xr, (size_t)n);
                    if (mx == -INFINITY) {
                        for (int j = 0; j < n; j++) wr[j] = 0.0f;
                        continue;
                    }
                    const double sum = cg_cpu_exp_shift_sum(xr, mx, wr, (size_t)n);
                    cg_cpu_mul_round(wr, 1.0 / sum, wr, (size_t)n);
                    for (int j = 0; j < n && mx == mx && mx != INFINITY; j++) {
                        double ref = 0;
                        for (int i = 0; i < n; i++) ref += exp((double)xr[i] - (double)mx);
                        ref = exp((double)xr[j] - (double)mx) / ref;
                        if (ulp_dist(wr[j], (float)ref) > 2)
                            ck_abort_msg("%s n %d row %d: %a, want %a", isas[k], n, r, (double)wr[j], ref);
                    }
                }
                cg_cpu_softmax_short(x, got, (size_t)rows, (size_t)n);
                if (memcmp(got, want, sizeof(float) * (size_t)(rows * n)) != 0)
                    ck_abort_msg("%s: n %d rows %d differ from the row path", isas[k], n, rows);
                cg_cpu_softmax_short(x, x, (size_t)rows, (size_t)n);
                if (memcmp(x, want, sizeof(float) * (size_t)(rows * n)) != 0)
                    ck_abort_msg("%s: n %d rows %d in place differ", isas[k], n, rows);
            }
    }
}
END_TEST

/* Weighted sums of rows against double precision, every length around the
 * vector widths, a leading dimension wider than the row; ISAs agree bit for
 * bit (the rows are added in order on every one). */
START_TEST(test_weighted_rows) {
    enum { R = 31, LD = 75 };
    static float m[R * LD], w[R], out[LD], ref[LD];
    uint64_t s = 99;
    for (int i = 0; i < R * LD; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        m[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    for (int r = 0; r < R; r++) w[r] = (float)(r + 1) / (float)(R * 2);
    for (int len = 0; len <= 70; len++) {
        ck_assert(cg_cpu_math_force("baseline"));
        cg_cpu_weighted_rows(w, m, LD, R, (size_t)len, ref);
        for (int k = 0; k < len; k++) {
            double want = 0, mag = 0;
            for (int r = 0; r < R; r++) {
                want += (double)w[r] * (double)m[r * LD + k];
                mag += fabs((double)w[r] * (double)m[r * LD + k]);
            }
            if (fabs(ref[k] - want) > 1e-6 * mag + 1e-30)
                ck_abort_msg("len %d k %d: %g, want %g", len, k, (double)ref[k], want);
        }
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
            if (!cg_cpu_math_force(isas[i])) continue;
            out[len] = 12345.0f; /* must stay */
            cg_cpu_weighted_rows(w, m, LD, R, (size_t)len, out);
            ck_assert_msg(memcmp(out, ref, sizeof(float) * (size_t)len) == 0, "%s len %d", isas[i], len);
            ck_assert(out[len] == 12345.0f);
        }
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("cpu_math");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_accuracy);
    tcase_add_test(tc, test_dense_core);
    tcase_add_test(tc, test_special_values);
    tcase_add_test(tc, test_tails_and_isas_agree);
    tcase_add_test(tc, test_softmax_primitives);
    tcase_add_test(tc, test_softmax_short);
    tcase_add_test(tc, test_weighted_rows);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
