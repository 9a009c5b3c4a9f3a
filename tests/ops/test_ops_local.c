/* Tests of the local-attention operators (ops/local_attn.c): window_mask and
 * local_gaussian run through the op harness (inference + CPU kernel) and
 * compared with naive references written here in double precision, on
 * random data over odd sizes, plus boundaries (keys at distance exactly D,
 * the rounding of the double difference), special values, zero sizes,
 * symbolic inference and the error messages. */
#include <check.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/plugin.h"
#include "ops_common.h"
#include "op_harness.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

#define S0 CG_DIM_SYM(0)
#define S1 CG_DIM_SYM(1)
#define UNK CG_DIM_UNKNOWN

static char g_err[512];

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(p);
    return p;
}

static int32_t irand1(int32_t lo, int32_t hi) {
    double r = floor((double)th_uniform(0.0f, 1.0f) * ((double)hi - lo + 1));
    int64_t v = lo + (int64_t)r;
    return (int32_t)(v > hi ? hi : v);
}

static th_attrs attrs_d(const cg_op_def *def, int64_t d) {
    th_attrs a;
    th_attrs_init(&a, def);
    th_set_int(&a, def, "D", d);
    return a;
}

static void run_ok(const cg_op_def *def, int n_in, const th_tensor *in, const th_attrs *at, th_tensor *out) {
    cg_op_status st = th_run(def, n_in, in, at, 1, out, g_err, sizeof g_err);
    ck_assert_msg(st == CG_OP_OK, "%s failed: %s", def->name, g_err);
}

/* Inference must reject the node with a message containing `needle`. */
static void expect_infer_fail(const cg_op_def *def, int n_in, const th_tensor *in, const th_attrs *at,
                              const char *needle) {
    th_tensor out[1];
    cg_op_status st = th_infer(def, n_in, in, at, 1, out, g_err, sizeof g_err);
    ck_assert_msg(st == CG_OP_ERROR, "%s: inference accepted, expected '%s'", def->name, needle);
    ck_assert_msg(strstr(g_err, needle) != NULL, "%s: message '%s' lacks '%s'", def->name, g_err, needle);
}

/* Inference accepts, the CPU kernel fails with a message containing
 * `needle`. */
static void expect_kernel_fail(const cg_op_def *def, int n_in, const th_tensor *in, const th_attrs *at,
                               const char *needle) {
    th_tensor out[1];
    memset(out, 0, sizeof out);
    cg_op_status st = th_infer(def, n_in, in, at, 1, out, g_err, sizeof g_err);
    ck_assert_msg(st == CG_OP_OK, "%s: inference failed: %s", def->name, g_err);
    st = th_run(def, n_in, in, at, 1, out, g_err, sizeof g_err);
    th_free_outputs(1, out);
    ck_assert_msg(st == CG_OP_ERROR, "%s: kernel accepted, expected '%s'", def->name, needle);
    ck_assert_msg(strstr(g_err, needle) != NULL, "%s: message '%s' lacks '%s'", def->name, g_err, needle);
}

/* Checks an output descriptor: dtype and dims (symbolic allowed). */
static void assert_desc(const char *what, const th_tensor *t, cg_op_dtype dt, int nd, const int64_t *dims) {
    int ok = t->desc.dtype == dt && t->desc.ndim == nd;
    for (int i = 0; ok && i < nd; i++) ok = t->desc.dims[i] == dims[i];
    char got[128], want[128];
    cg_tensor_desc w;
    memset(&w, 0, sizeof w);
    w.ndim = nd;
    memcpy(w.dims, dims, sizeof(int64_t) * (size_t)nd);
    cg_ops_format_dims(got, sizeof got, &t->desc);
    cg_ops_format_dims(want, sizeof want, &w);
    ck_assert_msg(ok, "%s: output is dtype %d %s, expected dtype %d %s", what, (int)t->desc.dtype, got, (int)dt, want);
}

/* Inference only; checks the output's dtype and dims. */
static void expect_infer(const cg_op_def *def, int n_in, const th_tensor *in, const th_attrs *at, cg_op_dtype dt,
                         int nd, const int64_t *dims) {
    th_tensor out[1];
    cg_op_status st = th_infer(def, n_in, in, at, 1, out, g_err, sizeof g_err);
    ck_assert_msg(st == CG_OP_OK, "%s: inference failed: %s", def->name, g_err);
    assert_desc(def->name, &out[0], dt, nd, dims);
}

static const cg_kernel_def *kernel_of(const cg_op_def *def, cg_backend_kind kind) {
    for (int i = 0; i < def->n_kernels; i++)
        if (def->kernels[i].backend == kind) return &def->kernels[i];
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Definitions                                                         */

START_TEST(test_defs) {
    const cg_op_def *defs[] = {&cg_op_window_mask, &cg_op_local_gaussian};
    const char *names[] = {"window_mask", "local_gaussian"};
    const int n_in[] = {3, 2};
    for (int i = 0; i < 2; i++) {
        const cg_op_def *d = defs[i];
        ck_assert_uint_eq(d->struct_size, sizeof(cg_op_def));
        ck_assert_str_eq(d->name, names[i]);
        ck_assert_msg(d->doc && strlen(d->doc) > 200, "%s: doc too short", d->name);
        ck_assert_ptr_nonnull(d->infer);
        ck_assert_int_eq(d->min_inputs, n_in[i]);
        ck_assert_int_eq(d->max_inputs, n_in[i]);
        ck_assert_int_eq(d->min_outputs, 1);
        ck_assert_int_eq(d->max_outputs, 1);
        ck_assert_ptr_nonnull(d->input_names);
        ck_assert_int_eq(d->n_kernels, 2);
        ck_assert_ptr_nonnull(kernel_of(d, CG_BACKEND_CPU));
        ck_assert_ptr_nonnull(kernel_of(d, CG_BACKEND_OPENCL));
        for (int k = 0; k < d->n_kernels; k++) ck_assert_uint_eq(d->kernels[k].struct_size, sizeof(cg_kernel_def));
        ck_assert_int_eq(d->n_attrs, 1);
        ck_assert_uint_eq(d->attrs[0].struct_size, sizeof(cg_attr_def));
        ck_assert_str_eq(d->attrs[0].name, "D");
        ck_assert_int_eq(d->attrs[0].type, CG_ATTR_INT);
        ck_assert(d->attrs[0].required);
        ck_assert(d->attrs[0].doc && *d->attrs[0].doc);
        ck_assert_ptr_nonnull(d->conform_case);
        /* Every conformance case infers, with D in its declared range. */
        for (int32_t ci = 0;; ci++) {
            cg_conform_case c;
            memset(&c, 0, sizeof c);
            c.struct_size = sizeof c;
            if (!d->conform_case(ci, &c)) {
                ck_assert_int_gt(ci, 8);
                break;
            }
            ck_assert_int_eq(c.n_inputs, n_in[i]);
            ck_assert_int_eq(c.n_outputs, 1);
            ck_assert_ptr_nonnull(c.attrs);
            long long dv = -1;
            ck_assert_int_eq(sscanf(c.attrs, "D: %lld", &dv), 1);
            th_attrs at = attrs_d(d, dv);
            th_tensor in[3], out[1];
            for (int k = 0; k < c.n_inputs; k++) {
                in[k].desc = c.inputs[k];
                in[k].data = NULL;
            }
            ck_assert_msg(th_infer(d, c.n_inputs, in, &at, 1, out, g_err, sizeof g_err) == CG_OP_OK, "%s case %d: %s",
                          d->name, ci, g_err);
        }
    }
    ck_assert(!(cg_op_window_mask.flags & CG_OP_FLAG_INPLACE0));
    ck_assert(cg_op_local_gaussian.flags & CG_OP_FLAG_INPLACE0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* window_mask                                                         */

/* Naive reference: i < len[b] and |i - c| <= D with the difference taken in
 * double (the spec'd comparison). */
static void wm_ref(int64_t B, int64_t S, const int32_t *len, const float *cen, int64_t D, int32_t *out) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < S; i++) {
            double diff = (double)i - (double)cen[b];
            out[b * S + i] = i < len[b] && fabs(diff) <= (double)D;
        }
}

/* Runs window_mask on lengths / centers over [B, S] (like f32 [B, S]) and
 * compares with wm_ref. */
static void wm_check(const char *what, int64_t B, int64_t S, const int32_t *len, const float *cen, int64_t D) {
    float *like = xmalloc((size_t)(B * S) * sizeof(float));
    memset(like, 0, (size_t)(B * S) * sizeof(float));
    int32_t *want = xmalloc((size_t)(B * S) * sizeof(int32_t));
    const int64_t db[1] = {B}, dl[2] = {B, S};
    th_tensor in[3] = {th_i32((int32_t *)len, 1, db), th_f32((float *)cen, 1, db), th_f32(like, 2, dl)}, out;
    th_attrs at = attrs_d(&cg_op_window_mask, D);
    run_ok(&cg_op_window_mask, 3, in, &at, &out);
    assert_desc(what, &out, CG_OP_I32, 2, dl);
    wm_ref(B, S, len, cen, D, want);
    const int32_t *got = out.data;
    for (int64_t k = 0; k < B * S; k++)
        if (got[k] != want[k])
            ck_abort_msg("%s (B %lld, S %lld, D %lld): element [%lld, %lld] is %d, expected %d "
                         "(length %d, center %.9g)",
                         what, (long long)B, (long long)S, (long long)D, (long long)(k / S), (long long)(k % S), got[k],
                         want[k], len[k / S], (double)cen[k / S]);
    th_free_outputs(1, &out);
    free(like);
    free(want);
}

START_TEST(test_window_mask_random) {
    static const int64_t Bs[] = {1, 3, 17}, Ss[] = {1, 3, 17, 100}, Ds[] = {0, 1, 2, 5, 40};
    th_seed(21);
    for (size_t bi = 0; bi < 3; bi++)
        for (size_t si = 0; si < 4; si++)
            for (size_t di = 0; di < 5; di++) {
                const int64_t B = Bs[bi], S = Ss[si], D = Ds[di];
                int32_t len[17];
                float cen[17];
                for (int64_t b = 0; b < B; b++) {
                    len[b] = irand1(0, (int32_t)S);
                    /* Continuous centers, and integers and half-integers where
                     * keys sit at distance exactly D or D + 1/2. */
                    switch (b % 3) {
                    case 0: cen[b] = th_uniform(-3.0f, (float)S + 3.0f); break;
                    case 1: cen[b] = (float)irand1(-3, (int32_t)S + 3); break;
                    default: cen[b] = (float)irand1(-3, (int32_t)S + 3) + 0.5f; break;
                    }
                }
                wm_check("window_mask random", B, S, len, cen, D);
            }
    /* Long rows. */
    int32_t len[4] = {1000, 0, 517, 999};
    float cen[4] = {500.25f, 3.0f, 516.0f, 1002.0f};
    wm_check("window_mask S=1000", 4, 1000, len, cen, 5);
    wm_check("window_mask S=1000 wide", 4, 1000, len, cen, 300);
}
END_TEST

START_TEST(test_window_mask_boundaries) {
    /* Explicit rows: S = 7, lengths 7. */
    int32_t len[6] = {7, 7, 7, 7, 3, 7};
    float cen[6] = {3.0f, 3.5f, -1.0f, 9.0f, 2.0f, -3.0f};
    const int64_t B = 6, S = 7;
    const int64_t db[1] = {B}, dl[2] = {B, S};
    float like[42] = {0};
    th_tensor in[3] = {th_i32(len, 1, db), th_f32(cen, 1, db), th_f32(like, 2, dl)}, out;
    th_attrs at = attrs_d(&cg_op_window_mask, 2);
    run_ok(&cg_op_window_mask, 3, in, &at, &out);
    static const int32_t want[42] = {
        0, 1, 1, 1, 1, 1, 0, /* center 3: keys 1..5 (distance 2 included) */
        0, 0, 1, 1, 1, 1, 0, /* center 3.5: keys 2..5 */
        1, 1, 0, 0, 0, 0, 0, /* center -1: keys 0, 1 */
        0, 0, 0, 0, 0, 0, 0, /* center 9: key 7 would be the first, beyond S */
        1, 1, 1, 0, 0, 0, 0, /* center 2, length 3: keys 0..2 (3, 4 masked) */
        0, 0, 0, 0, 0, 0, 0, /* center -3: no key within 2 */
    };
    ck_assert_mem_eq(out.data, want, sizeof want);
    th_free_outputs(1, &out);
    /* D = 0: only a key equal to the center. */
    float c0[6] = {3.0f, 3.5f, 0.0f, -0.0f, 6.0f, 2.9999998f};
    th_tensor in0[3] = {th_i32(len, 1, db), th_f32(c0, 1, db), th_f32(like, 2, dl)};
    at = attrs_d(&cg_op_window_mask, 0);
    run_ok(&cg_op_window_mask, 3, in0, &at, &out);
    static const int32_t want0[42] = {
        0, 0, 0, 1, 0, 0, 0, /**/ 0, 0, 0, 0, 0, 0, 0, /**/ 1, 0, 0, 0, 0, 0, 0,
        1, 0, 0, 0, 0, 0, 0, /**/ 0, 0, 0, 0, 0, 0, 0, /**/ 0, 0, 0, 0, 0, 0, 0,
    };
    ck_assert_mem_eq(out.data, want0, sizeof want0);
    th_free_outputs(1, &out);
}
END_TEST

/* The distance is compared after rounding the difference to double: a
 * center a hair below 0 leaves key D inside when D + |c| rounds to D. */
START_TEST(test_window_mask_double_rounding) {
    const float tiny1 = ldexpf(1.0f, -53), tiny2 = ldexpf(1.0f, -52);
    /* Rows: D = 1 with centers -2^-53 (1 + 2^-53 ties to 1: inside), -2^-52
     * (1 + 2^-52 is a double: outside), -1e-30 (inside), +1e-30 (inside,
     * 1 - 1e-30 rounds to 1), and -1 + 2^-24 (key 0 at 1 - 2^-24: inside,
     * key 1 at 2 - 2^-24: outside), and -1e-40 (a denormal: inside). */
    float cen[6] = {-tiny1, -tiny2, -1e-30f, 1e-30f, -1.0f + ldexpf(1.0f, -24), -1e-40f};
    int32_t len[6] = {3, 3, 3, 3, 3, 3};
    const int64_t db[1] = {6}, dl[2] = {6, 3};
    float like[18] = {0};
    th_tensor in[3] = {th_i32(len, 1, db), th_f32(cen, 1, db), th_f32(like, 2, dl)}, out;
    th_attrs at = attrs_d(&cg_op_window_mask, 1);
    run_ok(&cg_op_window_mask, 3, in, &at, &out);
    static const int32_t want[18] = {1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 1, 0, 1, 0, 0, 1, 1, 0};
    ck_assert_mem_eq(out.data, want, sizeof want);
    th_free_outputs(1, &out);
    /* The same against the reference, over D = 0..5 and such centers. */
    th_seed(7);
    for (int64_t D = 0; D <= 5; D++) {
        float c[17];
        int32_t l[17];
        for (int b = 0; b < 17; b++) {
            l[b] = 9;
            c[b] = th_uniform(-4e-16f, 4e-16f) * (float)(D ? D : 1);
        }
        c[0] = -ldexpf(1.0f, -53) * (float)(D ? D : 1);
        c[1] = -ldexpf(1.0f, -52) * (float)(D ? D : 1);
        wm_check("window_mask tiny centers", 17, 9, l, c, D);
    }
}
END_TEST

START_TEST(test_window_mask_special) {
    /* NaN and infinite centers give rows of 0s; any float center works. */
    float cen[5] = {NAN, INFINITY, -INFINITY, 1e30f, -1e30f};
    int32_t len[5] = {4, 4, 4, 4, 4};
    const int64_t db[1] = {5}, dl[2] = {5, 4};
    float like[20] = {0};
    th_tensor in[3] = {th_i32(len, 1, db), th_f32(cen, 1, db), th_f32(like, 2, dl)}, out;
    th_attrs at = attrs_d(&cg_op_window_mask, 2147483647);
    run_ok(&cg_op_window_mask, 3, in, &at, &out);
    int32_t want[20] = {0};
    ck_assert_mem_eq(out.data, want, sizeof want);
    th_free_outputs(1, &out);
    /* A huge window holds every valid key of a finite center. */
    float cf[5] = {0.0f, 3.0f, -1e9f, 1e9f, 2.5f};
    int32_t lf[5] = {4, 0, 4, 2, 3};
    th_tensor inf[3] = {th_i32(lf, 1, db), th_f32(cf, 1, db), th_f32(like, 2, dl)};
    run_ok(&cg_op_window_mask, 3, inf, &at, &out);
    static const int32_t wantf[20] = {1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0};
    ck_assert_mem_eq(out.data, wantf, sizeof wantf);
    th_free_outputs(1, &out);
}
END_TEST

START_TEST(test_window_mask_shapes) {
    /* like i32 of 3 dims: only [B, S] is used. */
    int32_t len[2] = {2, 5};
    float cen[2] = {1.0f, 4.0f};
    int32_t like[2 * 5 * 3] = {0};
    const int64_t db[1] = {2}, dl[3] = {2, 5, 3}, dout[2] = {2, 5};
    th_tensor in[3] = {th_i32(len, 1, db), th_f32(cen, 1, db), th_i32(like, 3, dl)}, out;
    th_attrs at = attrs_d(&cg_op_window_mask, 1);
    run_ok(&cg_op_window_mask, 3, in, &at, &out);
    assert_desc("window_mask 3-D like", &out, CG_OP_I32, 2, dout);
    static const int32_t want[10] = {1, 1, 0, 0, 0, 0, 0, 0, 1, 1};
    ck_assert_mem_eq(out.data, want, sizeof want);
    th_free_outputs(1, &out);
    /* Zero sizes. */
    const int64_t d0[1] = {0}, l0[2] = {0, 4}, ls0[2] = {2, 0};
    float f[1] = {0};
    th_tensor e0[3] = {th_i32(len, 1, d0), th_f32(cen, 1, d0), th_f32(f, 2, l0)};
    run_ok(&cg_op_window_mask, 3, e0, &at, &out);
    assert_desc("window_mask B=0", &out, CG_OP_I32, 2, l0);
    th_free_outputs(1, &out);
    int32_t z[2] = {0, 0};
    th_tensor es[3] = {th_i32(z, 1, db), th_f32(cen, 1, db), th_f32(f, 2, ls0)};
    run_ok(&cg_op_window_mask, 3, es, &at, &out);
    assert_desc("window_mask S=0", &out, CG_OP_I32, 2, ls0);
    th_free_outputs(1, &out);
    /* Symbolic and unknown dims. */
    const int64_t su[1] = {UNK}, ss0[1] = {S0}, sl[3] = {S0, S1, 4}, so[2] = {S0, S1};
    th_tensor y1[3] = {th_i32(len, 1, su), th_f32(cen, 1, su), th_f32(f, 3, sl)};
    expect_infer(&cg_op_window_mask, 3, y1, &at, CG_OP_I32, 2, so);
    const int64_t c3[1] = {3}, lu[2] = {UNK, 7}, o37[2] = {3, 7};
    th_tensor y2[3] = {th_i32(len, 1, su), th_f32(cen, 1, c3), th_f32(f, 2, lu)};
    expect_infer(&cg_op_window_mask, 3, y2, &at, CG_OP_I32, 2, o37);
    const int64_t ls1[2] = {S0, 7}, o07[2] = {S0, 7};
    th_tensor y3[3] = {th_i32(len, 1, ss0), th_f32(cen, 1, su), th_f32(f, 2, ls1)};
    expect_infer(&cg_op_window_mask, 3, y3, &at, CG_OP_I32, 2, o07);
}
END_TEST

START_TEST(test_window_mask_errors) {
    int32_t len[3] = {1, 6, 0};
    float cen[3] = {0.0f, 1.0f, 2.0f}, f[64] = {0};
    const int64_t db[1] = {3}, dl[2] = {3, 5};
    th_attrs at = attrs_d(&cg_op_window_mask, 2);
    /* Lengths outside [0, S] name the batch row. */
    th_tensor e1[3] = {th_i32(len, 1, db), th_f32(cen, 1, db), th_f32(f, 2, dl)};
    expect_kernel_fail(&cg_op_window_mask, 3, e1, &at, "input 0 (lengths) holds 6 at position 1, outside [0, 5]");
    int32_t neg[3] = {0, 0, -1};
    th_tensor e2[3] = {th_i32(neg, 1, db), th_f32(cen, 1, db), th_f32(f, 2, dl)};
    expect_kernel_fail(&cg_op_window_mask, 3, e2, &at, "input 0 (lengths) holds -1 at position 2, outside [0, 5]");
    /* D out of range. */
    int32_t ok[3] = {1, 2, 3};
    th_tensor g[3] = {th_i32(ok, 1, db), th_f32(cen, 1, db), th_f32(f, 2, dl)};
    th_attrs bad = attrs_d(&cg_op_window_mask, -1);
    expect_infer_fail(&cg_op_window_mask, 3, g, &bad, "attribute D must be in [0, 2147483647], got -1");
    bad = attrs_d(&cg_op_window_mask, 2147483648LL);
    expect_infer_fail(&cg_op_window_mask, 3, g, &bad, "got 2147483648");
    /* Dtypes. */
    th_tensor e3[3] = {th_f32(cen, 1, db), th_f32(cen, 1, db), th_f32(f, 2, dl)};
    expect_infer_fail(&cg_op_window_mask, 3, e3, &at, "input 0 (lengths) must be i32, got f32");
    th_tensor e4[3] = {th_i32(ok, 1, db), th_i32(ok, 1, db), th_f32(f, 2, dl)};
    expect_infer_fail(&cg_op_window_mask, 3, e4, &at, "input 1 (center) must be f32, got i32");
    /* Ranks and B. */
    const int64_t d1[1] = {3}, d4[1] = {4}, d22[2] = {3, 1};
    th_tensor e5[3] = {th_i32(ok, 1, db), th_f32(cen, 1, db), th_f32(f, 1, d1)};
    expect_infer_fail(&cg_op_window_mask, 3, e5, &at, "input 2 (like) must have at least 2 dims [B, S, ...], got [3]");
    th_tensor e6[3] = {th_i32(ok, 1, d4), th_f32(cen, 1, db), th_f32(f, 2, dl)};
    expect_infer_fail(&cg_op_window_mask, 3, e6, &at,
                      "input 0 (lengths) has shape [4], expected [B] with B from like [3, 5]");
    th_tensor e7[3] = {th_i32(ok, 1, db), th_f32(cen, 1, d4), th_f32(f, 2, dl)};
    expect_infer_fail(&cg_op_window_mask, 3, e7, &at,
                      "input 1 (center) has shape [4], expected [B] with B from like [3, 5]");
    th_tensor e8[3] = {th_i32(ok, 2, d22), th_f32(cen, 1, db), th_f32(f, 2, dl)};
    expect_infer_fail(&cg_op_window_mask, 3, e8, &at, "input 0 (lengths) has shape [3, 1]");
    const int64_t lu[2] = {UNK, 5};
    th_tensor e9[3] = {th_i32(ok, 1, d4), th_f32(cen, 1, db), th_f32(f, 2, lu)};
    expect_infer_fail(&cg_op_window_mask, 3, e9, &at, "input 0 (lengths) [4] and input 1 (center) [3] disagree on B");
}
END_TEST

/* ------------------------------------------------------------------ */
/* local_gaussian                                                      */

/* Runs local_gaussian and compares with the double reference
 * a * exp(-(i - c)^2 / (2 (D/2)^2)), allowing the float rounding of the
 * distance and the exponent: relative 1e-6 + 5e-7 per unit of exponent. */
static void lg_check(const char *what, int64_t B, int64_t S, const float *a, const float *cen, int64_t D) {
    const int64_t da[2] = {B, S}, dc[1] = {B};
    th_tensor in[2] = {th_f32((float *)a, 2, da), th_f32((float *)cen, 1, dc)}, out;
    th_attrs at = attrs_d(&cg_op_local_gaussian, D);
    run_ok(&cg_op_local_gaussian, 2, in, &at, &out);
    assert_desc(what, &out, CG_OP_F32, 2, da);
    const float *got = out.data;
    const double sigma = (double)D / 2.0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < S; i++) {
            const int64_t k = b * S + i;
            const double x = (double)i - (double)cen[b], arg = x * x / (2.0 * sigma * sigma);
            const double ref = (double)a[k] * exp(-arg);
            const double tol = (1e-6 + 5e-7 * arg) * fabs(ref) + 1e-38;
            if (!(fabs((double)got[k] - ref) <= tol))
                ck_abort_msg("%s (B %lld, S %lld, D %lld): element [%lld, %lld] is %.9g, "
                             "expected %.9g (a %.9g, center %.9g)",
                             what, (long long)B, (long long)S, (long long)D, (long long)b, (long long)i, (double)got[k],
                             ref, (double)a[k], (double)cen[b]);
            /* And bit for bit the single-precision formula both backends use. */
            const float d = (float)i - cen[b], s = (float)D * 0.5f;
            const float want = a[k] * expf(-(d * d) / (2.0f * s * s));
            ck_assert_msg(memcmp(&got[k], &want, sizeof want) == 0,
                          "%s: element [%lld, %lld] is %.9g, the float formula gives %.9g", what, (long long)b,
                          (long long)i, (double)got[k], (double)want);
        }
    th_free_outputs(1, &out);
}

START_TEST(test_local_gaussian_random) {
    static const int64_t Bs[] = {1, 3, 17}, Ss[] = {1, 3, 17, 100}, Ds[] = {1, 2, 5, 40};
    th_seed(33);
    for (size_t bi = 0; bi < 3; bi++)
        for (size_t si = 0; si < 4; si++)
            for (size_t di = 0; di < 4; di++) {
                const int64_t B = Bs[bi], S = Ss[si], D = Ds[di];
                float *a = xmalloc((size_t)(B * S) * sizeof(float));
                float cen[17];
                th_fill(a, B * S, -2.0f, 2.0f);
                for (int64_t b = 0; b < B; b++)
                    cen[b] = (b % 2) ? (float)irand1(-3, (int32_t)S + 3) : th_uniform(-3.0f, (float)S + 3.0f);
                lg_check("local_gaussian random", B, S, a, cen, D);
                free(a);
            }
    float *a = xmalloc(3 * 1000 * sizeof(float));
    th_fill(a, 3000, 0.0f, 1.0f);
    float cen[3] = {0.0f, 499.75f, 1002.5f};
    lg_check("local_gaussian S=1000", 3, 1000, a, cen, 5);
    lg_check("local_gaussian S=1000 wide", 3, 1000, a, cen, 300);
    free(a);
}
END_TEST

START_TEST(test_local_gaussian_values) {
    /* exp(-(i - c)^2 / (2 (D/2)^2)) with D = 2 (sigma 1): at the center 1,
     * one key away exp(-1/2), two away exp(-2); D = 4 (sigma 2): two away
     * exp(-1/2). */
    float a[2 * 5] = {1, 1, 1, 1, 1, 2, 2, 2, 2, 2};
    float cen[2] = {2.0f, 0.0f};
    const int64_t da[2] = {2, 5}, dc[1] = {2};
    th_tensor in[2] = {th_f32(a, 2, da), th_f32(cen, 1, dc)}, out;
    th_attrs at = attrs_d(&cg_op_local_gaussian, 2);
    run_ok(&cg_op_local_gaussian, 2, in, &at, &out);
    const float *g = out.data;
    const double want[10] = {exp(-2.0), exp(-0.5),     1.0,           exp(-0.5),     exp(-2.0),
                             2.0,       2 * exp(-0.5), 2 * exp(-2.0), 2 * exp(-4.5), 2 * exp(-8.0)};
    for (int k = 0; k < 10; k++)
        ck_assert_msg(fabs(g[k] - want[k]) <= 1e-6 * fabs(want[k]), "element %d: %.9g vs %.9g", k, (double)g[k],
                      want[k]);
    th_free_outputs(1, &out);
    at = attrs_d(&cg_op_local_gaussian, 4);
    run_ok(&cg_op_local_gaussian, 2, in, &at, &out);
    g = out.data;
    ck_assert(fabs(g[0] - exp(-0.5)) <= 1e-6);
    ck_assert(fabs(g[2] - 1.0) <= 1e-7);
    ck_assert(fabs(g[7] - 2 * exp(-0.5)) <= 2e-6);
    th_free_outputs(1, &out);
}
END_TEST

START_TEST(test_local_gaussian_special) {
    /* NaN in a or center gives NaN; an infinite center gives a * 0 (0 for
     * finite a); zeros stay zeros; a center far away underflows to 0. */
    float a[4 * 3] = {NAN, 1, 0, 1, 1, 1, 1, -1, 0, 3, 3, 3};
    float cen[4] = {0.0f, NAN, INFINITY, -1e30f};
    const int64_t da[2] = {4, 3}, dc[1] = {4};
    th_tensor in[2] = {th_f32(a, 2, da), th_f32(cen, 1, dc)}, out;
    th_attrs at = attrs_d(&cg_op_local_gaussian, 1);
    run_ok(&cg_op_local_gaussian, 2, in, &at, &out);
    const float *g = out.data;
    ck_assert(isnan(g[0]));
    ck_assert(fabsf(g[1] - expf(-2.0f)) <= 1e-7f);
    ck_assert(g[2] == 0.0f);
    ck_assert(isnan(g[3]) && isnan(g[4]) && isnan(g[5]));
    ck_assert(g[6] == 0.0f && g[7] == 0.0f && g[8] == 0.0f);
    ck_assert(g[9] == 0.0f && g[10] == 0.0f && g[11] == 0.0f);
    th_free_outputs(1, &out);
    /* A huge D leaves a unchanged. */
    at = attrs_d(&cg_op_local_gaussian, INT64_MAX);
    float b[3] = {0.5f, -1.0f, 2.0f}, c1[1] = {1.0f};
    const int64_t db[2] = {1, 3}, d1[1] = {1};
    th_tensor in2[2] = {th_f32(b, 2, db), th_f32(c1, 1, d1)};
    run_ok(&cg_op_local_gaussian, 2, in2, &at, &out);
    ck_assert_mem_eq(out.data, b, sizeof b);
    th_free_outputs(1, &out);
}
END_TEST

/* Output 0 in a's buffer (CG_OP_FLAG_INPLACE0) gives the same result. */
START_TEST(test_local_gaussian_inplace) {
    const int64_t B = 3, S = 17, D = 2;
    float a[3 * 17], buf[3 * 17], cen[3] = {-1.5f, 8.0f, 19.25f};
    th_seed(5);
    th_fill(a, B * S, -1.0f, 1.0f);
    memcpy(buf, a, sizeof a);
    const int64_t da[2] = {B, S}, dc[1] = {B};
    th_tensor in[2] = {th_f32(a, 2, da), th_f32(cen, 1, dc)}, ref;
    th_attrs at = attrs_d(&cg_op_local_gaussian, D);
    run_ok(&cg_op_local_gaussian, 2, in, &at, &ref);
    cg_tensor_desc ind[2] = {in[0].desc, in[1].desc}, outd = ref.desc;
    cg_op_call call;
    memset(&call, 0, sizeof call);
    call.struct_size = sizeof call;
    call.node_name = "local_gaussian";
    call.n_inputs = 2;
    call.n_outputs = 1;
    call.inputs = ind;
    call.outputs = &outd;
    call.attrs = at.v;
    call.err = g_err;
    call.err_size = sizeof g_err;
    const cg_kernel_def *k = kernel_of(&cg_op_local_gaussian, CG_BACKEND_CPU);
    ck_assert(!k->workspace || k->workspace(&call) == 0);
    const void *inp[2] = {buf, cen};
    void *outp[1] = {buf};
    cg_kernel_args args = {.struct_size = sizeof args, .call = &call, .in = inp, .out = outp};
    ck_assert_msg(k->run(&args) == CG_OP_OK, "in place: %s", g_err);
    ck_assert_mem_eq(buf, ref.data, sizeof buf);
    th_free_outputs(1, &ref);
}
END_TEST

START_TEST(test_local_gaussian_shapes) {
    float f[16] = {0};
    int32_t iv[16] = {0};
    th_attrs at = attrs_d(&cg_op_local_gaussian, 2);
    /* Zero sizes. */
    const int64_t a0[2] = {0, 5}, c0[1] = {0}, as0[2] = {2, 0}, c2[1] = {2};
    th_tensor z1[2] = {th_f32(f, 2, a0), th_f32(f, 1, c0)}, out;
    run_ok(&cg_op_local_gaussian, 2, z1, &at, &out);
    assert_desc("local_gaussian B=0", &out, CG_OP_F32, 2, a0);
    th_free_outputs(1, &out);
    th_tensor z2[2] = {th_f32(f, 2, as0), th_f32(f, 1, c2)};
    run_ok(&cg_op_local_gaussian, 2, z2, &at, &out);
    assert_desc("local_gaussian S=0", &out, CG_OP_F32, 2, as0);
    th_free_outputs(1, &out);
    /* Symbolic. */
    const int64_t sa[2] = {S0, S1}, su[1] = {UNK}, ua[2] = {UNK, 5}, sc[1] = {S0}, o[2] = {S0, 5};
    th_tensor y1[2] = {th_f32(f, 2, sa), th_f32(f, 1, su)};
    expect_infer(&cg_op_local_gaussian, 2, y1, &at, CG_OP_F32, 2, sa);
    th_tensor y2[2] = {th_f32(f, 2, ua), th_f32(f, 1, sc)};
    expect_infer(&cg_op_local_gaussian, 2, y2, &at, CG_OP_F32, 2, o);
    /* Errors. */
    const int64_t a35[2] = {3, 5}, c3[1] = {3}, c4[1] = {4}, a3[1] = {3}, a351[3] = {3, 5, 1};
    th_tensor g[2] = {th_f32(f, 2, a35), th_f32(f, 1, c3)};
    th_attrs d0 = attrs_d(&cg_op_local_gaussian, 0);
    expect_infer_fail(&cg_op_local_gaussian, 2, g, &d0, "attribute D must be >= 1 (D = 0 would divide by zero");
    d0 = attrs_d(&cg_op_local_gaussian, -3);
    expect_infer_fail(&cg_op_local_gaussian, 2, g, &d0, "got -3");
    th_tensor e1[2] = {th_i32(iv, 2, a35), th_f32(f, 1, c3)};
    expect_infer_fail(&cg_op_local_gaussian, 2, e1, &at, "input 0 (a) must be f32, got i32");
    th_tensor e2[2] = {th_f32(f, 2, a35), th_i32(iv, 1, c3)};
    expect_infer_fail(&cg_op_local_gaussian, 2, e2, &at, "input 1 (center) must be f32, got i32");
    th_tensor e3[2] = {th_f32(f, 1, a3), th_f32(f, 1, c3)};
    expect_infer_fail(&cg_op_local_gaussian, 2, e3, &at, "input 0 (a) must have 2 dims [B, S], got [3]");
    th_tensor e4[2] = {th_f32(f, 3, a351), th_f32(f, 1, c3)};
    expect_infer_fail(&cg_op_local_gaussian, 2, e4, &at, "got [3, 5, 1]");
    th_tensor e5[2] = {th_f32(f, 2, a35), th_f32(f, 1, c4)};
    expect_infer_fail(&cg_op_local_gaussian, 2, e5, &at,
                      "input 1 (center) has shape [4], expected [B] with B from a [3, 5]");
    th_tensor e6[2] = {th_f32(f, 2, a35), th_f32(f, 2, a35)};
    expect_infer_fail(&cg_op_local_gaussian, 2, e6, &at, "input 1 (center) has shape [3, 5]");
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *local_suite(void) {
    Suite *s = suite_create("ops_local");
    TCase *tc = tcase_create("defs");
    tcase_add_test(tc, test_defs);
    suite_add_tcase(s, tc);
    tc = tcase_create("window_mask");
    tcase_add_test(tc, test_window_mask_random);
    tcase_add_test(tc, test_window_mask_boundaries);
    tcase_add_test(tc, test_window_mask_double_rounding);
    tcase_add_test(tc, test_window_mask_special);
    tcase_add_test(tc, test_window_mask_shapes);
    tcase_add_test(tc, test_window_mask_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("local_gaussian");
    tcase_add_test(tc, test_local_gaussian_random);
    tcase_add_test(tc, test_local_gaussian_values);
    tcase_add_test(tc, test_local_gaussian_special);
    tcase_add_test(tc, test_local_gaussian_inplace);
    tcase_add_test(tc, test_local_gaussian_shapes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(local_suite(), 0); }
