/* Tests of the trigonometric and hyperbolic math ops (ops/math.c: tan,
 * asin, acos, atan, sinh, cosh, asinh, acosh, atanh): the CPU kernel
 * against the double-precision libm function at points across each domain,
 * its edges and outside it (NaN), within a few float ULPs; and of cumprod
 * (ops/cumsum.c) against running products written here; pow with the
 * scalar exponents that have their own loop (2, 3) against double-precision
 * pow. The OpenCL
 * kernels are compared with the CPU ones by `clgraph conform`. */
#include <check.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h"
#include "op_harness.h"
#include "ops_common.h"
#include "test_util.h"

/* Runs def on x[0..n) and checks each element against ref(x) in double:
 * NaN where ref is NaN, the same infinity, else within 4 float ULPs of the
 * reference's magnitude (and 1e-37 absolute for values near 0); a value
 * far past float's range is the infinity of its sign. */
static void check_fn(const cg_op_def *def, double (*ref)(double), const float *x, int n) {
    char err[512];
    const int64_t d[1] = {n};
    th_tensor in = th_f32((float *)x, 1, d), out;
    ck_assert_msg(th_run(def, 1, &in, NULL, 1, &out, err, sizeof err) == CG_OP_OK, "%s: %s", def->name, err);
    const float *y = out.data;
    for (int i = 0; i < n; i++) {
        double r = ref((double)x[i]);
        if (fabs(r) > 2 * (double)FLT_MAX) r = copysign(INFINITY, r); /* past float's range */
        if (isnan(r)) {
            ck_assert_msg(isnan(y[i]), "%s(%.9g) = %.9g, expected NaN", def->name, x[i], y[i]);
        } else if (isinf(r)) {
            ck_assert_msg(y[i] == (float)r, "%s(%.9g) = %.9g, expected %g", def->name, x[i], y[i], r);
        } else {
            const double tol = 4 * ldexp(1.0, -23) * fabs(r) + 1e-37;
            ck_assert_msg(fabs(y[i] - r) <= tol, "%s(%.9g) = %.9g, expected %.17g", def->name, x[i], y[i], r);
        }
    }
    th_free_outputs(1, &out);
}

START_TEST(test_trig) {
    const float any[] = {0.0f, -0.0f, 1e-6f, -1e-6f, 0.5f, -0.75f, 1.25f, -1.5f, 3.0f, -7.5f, NAN};
    const float unit[] = {0.0f, -0.0f, 1e-6f, 0.25f, -0.5f, 0.999f, -0.999f, 1.0f, -1.0f, 1.5f, -2.0f, NAN};
    const float big[] = {1.0f, 1.0001f, 1.5f, 2.0f, 10.0f, 1e6f, 0.5f, -1.0f, INFINITY, NAN};
    const int na = (int)(sizeof any / sizeof any[0]), nu = (int)(sizeof unit / sizeof unit[0]),
              nb = (int)(sizeof big / sizeof big[0]);
    check_fn(&cg_op_tan, tan, any, na);
    check_fn(&cg_op_atan, atan, any, na);
    check_fn(&cg_op_sinh, sinh, any, na);
    check_fn(&cg_op_cosh, cosh, any, na);
    check_fn(&cg_op_asinh, asinh, any, na);
    check_fn(&cg_op_asin, asin, unit, nu);
    check_fn(&cg_op_acos, acos, unit, nu);
    check_fn(&cg_op_atanh, atanh, unit, nu);
    check_fn(&cg_op_acosh, acosh, big, nb);
}
END_TEST

/* pow by a scalar 2 or 3 (a loop of its own) and by 2.5 (powf), against
 * pow in double rounded to float: within 1 ULP, the special values exact. */
START_TEST(test_pow_scalar) {
    enum { N = 1000 };
    static float x[N];
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e13f, -1e13f, 1e-15f, -3e-16f, 1.0f, -1.0f};
    const int ns = (int)(sizeof special / sizeof special[0]);
    uint64_t s = 5;
    for (int i = 0; i < N; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = i < ns ? special[i] : (float)(((double)(s >> 11) / 9007199254740992.0 - 0.5) * 2000.0);
    }
    const float exps[] = {2.0f, 3.0f, 2.5f};
    for (int k = 0; k < 3; k++) {
        char err[512];
        const int64_t d[1] = {N};
        float e = exps[k];
        th_tensor in[2] = {th_f32(x, 1, d), th_f32(&e, 0, d)}, out;
        ck_assert_msg(th_run(&cg_op_pow, 2, in, NULL, 1, &out, err, sizeof err) == CG_OP_OK, "%s", err);
        const float *y = out.data;
        for (int i = 0; i < N; i++) {
            const float want = (float)pow((double)x[i], (double)e);
            if (isnan(want)) ck_assert_msg(isnan(y[i]), "pow(%a, %g) = %a", (double)x[i], (double)e, (double)y[i]);
            else if (i < ns || isinf(want))
                ck_assert_msg(y[i] == want && signbit(y[i]) == signbit(want), "pow(%a, %g) = %a, want %a", (double)x[i],
                              (double)e, (double)y[i], (double)want);
            else
                ck_assert_msg(fabs((double)y[i] - want) <= ldexp(fabs((double)want), -23), "pow(%a, %g) = %a, want %a",
                              (double)x[i], (double)e, (double)y[i], (double)want);
        }
        th_free_outputs(1, &out);
    }
}
END_TEST

/* Values that overflow f32: sinh and cosh of 100 are inf. */
START_TEST(test_trig_overflow) {
    const float x[] = {100.0f, -100.0f, INFINITY, -INFINITY};
    check_fn(&cg_op_sinh, sinh, x, 4);
    check_fn(&cg_op_cosh, cosh, x, 4);
}
END_TEST

/* cumprod of f32 [3, 4, 5] along axis 1, every exclusive / reverse pair,
 * against products in double (the kernel's are in float, in order). */
START_TEST(test_cumprod_f32) {
    float x[60];
    th_seed(7);
    th_fill(x, 60, -1.5f, 1.5f);
    const int64_t d[3] = {3, 4, 5};
    for (int mode = 0; mode < 4; mode++) {
        const int excl = mode & 1, rev = mode >> 1;
        th_attrs at;
        th_attrs_init(&at, &cg_op_cumprod);
        th_set_int(&at, &cg_op_cumprod, "axis", 1);
        th_set_int(&at, &cg_op_cumprod, "exclusive", excl);
        th_set_int(&at, &cg_op_cumprod, "reverse", rev);
        th_tensor in = th_f32(x, 3, d), out;
        char err[512];
        ck_assert_msg(th_run(&cg_op_cumprod, 1, &in, &at, 1, &out, err, sizeof err) == CG_OP_OK, "%s", err);
        for (int o = 0; o < 3; o++)
            for (int i = 0; i < 5; i++) {
                double acc = 1;
                for (int k = 0; k < 4; k++) {
                    const int j = rev ? 3 - k : k, at_j = (o * 4 + j) * 5 + i;
                    if (excl) ck_assert(fabs(((float *)out.data)[at_j] - acc) <= 1e-6 * fabs(acc) + 1e-30);
                    acc *= x[at_j];
                    if (!excl) ck_assert(fabs(((float *)out.data)[at_j] - acc) <= 1e-6 * fabs(acc) + 1e-30);
                }
            }
        th_free_outputs(1, &out);
    }
}
END_TEST

/* cumprod of i64 wraps around as unsigned 64-bit arithmetic does. */
START_TEST(test_cumprod_i64_wraps) {
    int64_t x[4] = {(int64_t)1 << 40, (int64_t)1 << 30, 3, -5};
    const int64_t d[1] = {4};
    th_tensor in = th_f32(NULL, 1, d), out;
    in.desc.dtype = CG_I64;
    in.data = x;
    char err[512];
    ck_assert_msg(th_run(&cg_op_cumprod, 1, &in, NULL, 1, &out, err, sizeof err) == CG_OP_OK, "%s", err);
    uint64_t acc = 1;
    for (int i = 0; i < 4; i++) {
        acc *= (uint64_t)x[i];
        ck_assert_msg(((int64_t *)out.data)[i] == (int64_t)acc, "element %d", i);
    }
    th_free_outputs(1, &out);
}
END_TEST

/* y = op(x) (`node` the line of the graph) on device dev for x[n]. */
static float *run_on(const char *dev, const char *node, const float *x, int64_t n) {
    char text[512];
    snprintf(text, sizeof text, "graph g {\n  input x: f32[%lld]\n  %s\n  output y\n}\n", (long long)n, node);
    cg_context *ctx = NULL;
    cg_model *m = NULL;
    cg_plan *p = NULL;
    cg_tensor *in = NULL, *y = NULL;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    ck_assert_msg(cg_model_parse(ctx, text, strlen(text), "erf.cg", &m) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_model_verify(m) == CG_OK, "%s", cg_last_error());
    cg_plan_options po = {.struct_size = sizeof po, .device = dev};
    ck_assert_msg(cg_plan_create(m, "g", &po, &p) == CG_OK, "%s: %s", dev, cg_last_error());
    ck_assert_int_eq(cg_tensor_create(CG_F32, 1, &n, &in), CG_OK);
    memcpy(cg_tensor_data(in), x, sizeof(float) * (size_t)n);
    const char *names[] = {"x"};
    ck_assert_msg(cg_plan_run(p, 1, names, &in, 1, &y) == CG_OK, "%s: %s", dev, cg_last_error());
    float *r = malloc(sizeof(float) * (size_t)n);
    memcpy(r, cg_tensor_data_const(y), sizeof(float) * (size_t)n);
    cg_tensor_free(in), cg_tensor_free(y);
    cg_plan_free(p), cg_model_free(m), cg_context_free(ctx);
    return r;
}

/* erf on every device, as the op and inside ew_fused: within 1 ulp of
 * double-precision erf on the CPU, 3 on OpenCL (its f32 evaluation of the
 * same fits), over a dense sweep of [-6, 6], tiny values and powers of two
 * up to 2^40, infinities and NaN. */
START_TEST(test_erf_every_device) {
    enum { N = 120000 };
    float *x = malloc(sizeof(float) * N);
    int n = 0;
    for (int i = 0; i <= 100000; i++) x[n++] = -6.0f + 12.0f * (float)i / 100000.0f;
    for (int e = -140; e <= 40; e++) x[n++] = ldexpf(1.0f, e), x[n++] = -ldexpf(1.5f, e);
    x[n++] = INFINITY, x[n++] = -INFINITY, x[n++] = NAN, x[n++] = 0.0f, x[n++] = -0.0f;
    static const char *const nodes[] = {"y = erf(x)", "y = ew_fused(x) {program: \"0 erf\"}"};
    for (int d = 0; d < cg_device_count(); d++)
        for (int k = 0; k < 2; k++) {
            char dev[32];
            snprintf(dev, sizeof dev, d ? "opencl:%d" : "cpu", d - 1);
            float *y = run_on(dev, nodes[k], x, n);
            const double ulps = d ? 3 : 1;
            for (int i = 0; i < n; i++) {
                const double r = erf((double)x[i]);
                if (isnan(r)) {
                    ck_assert_msg(isnan(y[i]), "%s %s: erf(%g) = %g", dev, nodes[k], (double)x[i], (double)y[i]);
                    continue;
                }
                const double ulp = fabs(r) < FLT_MIN ? ldexp(1.0, -149) : ldexp(1.0, ilogb((float)r) - 23);
                ck_assert_msg(fabs(y[i] - r) <= ulps * ulp, "%s %s: erf(%.9g) = %.9g, expected %.17g", dev, nodes[k],
                              (double)x[i], (double)y[i], r);
            }
            free(y);
        }
    free(x);
}
END_TEST

static Suite *math_suite(void) {
    Suite *s = suite_create("ops_math");
    TCase *tc = tcase_create("trig");
    tcase_add_test(tc, test_trig);
    tcase_add_test(tc, test_trig_overflow);
    tcase_add_test(tc, test_pow_scalar);
    tcase_add_test(tc, test_erf_every_device);
    suite_add_tcase(s, tc);
    tc = tcase_create("cumprod");
    tcase_add_test(tc, test_cumprod_f32);
    tcase_add_test(tc, test_cumprod_i64_wraps);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(math_suite(), 0); }
