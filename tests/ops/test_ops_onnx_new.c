/* Tests of the ops made for ONNX opsets 18 to 28 (CPU kernels through the
 * op harness) against references written here from ONNX's definitions:
 * linear_attention as whole-matrix updates of each head's state in double
 * (not the kernels' column walk), deform_conv with bilinear sampling as a
 * sum of tent weights over the whole plane, bitcast as a byte copy; a case
 * worked by hand each, inference over symbolic dims and the errors. The
 * OpenCL kernels are compared with the CPU kernels by `clgraph conform`. */
#include <check.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/plugin.h"
#include "ops_common.h"
#include "op_harness.h"
#include "test_util.h"

static char g_err[512];

/* ---- linear_attention ---- */

typedef struct la_case {
    int64_t b, t, hq, hkv, dk, dv;
    int gated, delta, per_key, beta_one;
    double scale; /* 0: 1 / sqrt(dk) */
} la_case;

/* The recurrence of ONNX's LinearAttention in double: per (b, kv head) the
 * state matrix updated whole at each step. */
static void ref_linear_attention(const la_case *c, const float *q, const float *k, const float *v, const float *s0,
                                 const float *dec, const float *beta, double *out, double *st) {
    const int64_t dk = c->dk, dv = c->dv, g = c->hq / c->hkv, dl = c->per_key ? c->hkv * dk : c->hkv;
    const int64_t bl = c->beta_one ? 1 : c->hkv;
    const double scale = c->scale == 0 ? 1.0 / sqrt((double)dk) : c->scale;
    double *r = malloc(sizeof *r * (size_t)dv);
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t h = 0; h < c->hkv; h++) {
            double *S = st + (b * c->hkv + h) * dk * dv;
            for (int64_t i = 0; i < dk * dv; i++) S[i] = s0[(b * c->hkv + h) * dk * dv + i];
            for (int64_t t = 0; t < c->t; t++) {
                const int64_t row = b * c->t + t;
                const float *kt = k + row * c->hkv * dk + h * dk, *vt = v + row * c->hkv * dv + h * dv;
                for (int64_t i = 0; c->gated && i < dk; i++)
                    for (int64_t j = 0; j < dv; j++)
                        S[i * dv + j] *= exp((double)dec[row * dl + (c->per_key ? h * dk + i : h)]);
                for (int64_t j = 0; j < dv; j++) {
                    double kv = 0;
                    for (int64_t i = 0; c->delta && i < dk; i++) kv += S[i * dv + j] * kt[i];
                    r[j] = c->delta ? beta[row * bl + (c->beta_one ? 0 : h)] * (vt[j] - kv) : vt[j];
                }
                for (int64_t i = 0; i < dk; i++)
                    for (int64_t j = 0; j < dv; j++) S[i * dv + j] += kt[i] * r[j];
                for (int64_t qh = h * g; qh < (h + 1) * g; qh++)
                    for (int64_t j = 0; j < dv; j++) {
                        double o = 0;
                        for (int64_t i = 0; i < dk; i++) o += q[row * c->hq * dk + qh * dk + i] * S[i * dv + j];
                        out[row * c->hq * dv + qh * dv + j] = scale * o;
                    }
            }
        }
    free(r);
}

static void run_la_case(const la_case *c) {
    const int64_t qd[3] = {c->b, c->t, c->hq * c->dk}, kd[3] = {c->b, c->t, c->hkv * c->dk};
    const int64_t vd[3] = {c->b, c->t, c->hkv * c->dv}, sd[4] = {c->b, c->hkv, c->dk, c->dv};
    const int64_t dd[3] = {c->b, c->t, c->per_key ? c->hkv * c->dk : c->hkv};
    const int64_t bd[3] = {c->b, c->t, c->beta_one ? 1 : c->hkv};
    const int64_t *dims[6] = {qd, kd, vd, sd, dd, bd};
    float *data[6];
    th_tensor in[6];
    int n = 0;
    for (int i = 0; i < 6; i++) {
        const int nd = i == 3 ? 4 : 3;
        int64_t cnt = 1;
        for (int d = 0; d < nd; d++) cnt *= dims[i][d];
        data[i] = malloc(sizeof(float) * (size_t)(cnt ? cnt : 1));
        th_fill(data[i], cnt, i == 4 ? -1.0f : i == 5 ? 0.0f : -1.0f, i == 4 ? 0.0f : 1.0f);
        if ((i == 4 && !c->gated) || (i == 5 && !c->delta)) continue;
        in[n++] = th_f32(data[i], nd, dims[i]);
    }
    static const char *const rules[4] = {"linear", "gated", "delta", "gated_delta"};
    th_attrs at;
    th_attrs_init(&at, &cg_op_linear_attention);
    th_set_int(&at, &cg_op_linear_attention, "q_num_heads", c->hq);
    th_set_int(&at, &cg_op_linear_attention, "kv_num_heads", c->hkv);
    th_set_float(&at, &cg_op_linear_attention, "scale", c->scale);
    th_set_string(&at, &cg_op_linear_attention, "update_rule", rules[c->gated + 2 * c->delta]);
    th_tensor out[2];
    ck_assert_msg(th_run(&cg_op_linear_attention, n, in, &at, 2, out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    const int64_t no = c->b * c->t * c->hq * c->dv, ns = c->b * c->hkv * c->dk * c->dv;
    double *ro = malloc(sizeof(double) * (size_t)(no + 1)), *rs = malloc(sizeof(double) * (size_t)(ns + 1));
    ref_linear_attention(c, data[0], data[1], data[2], data[3], data[4], data[5], ro, rs);
    for (int64_t i = 0; i < no; i++)
        ck_assert_msg(fabs(((float *)out[0].data)[i] - ro[i]) <= 1e-4 + 1e-4 * fabs(ro[i]), "out %lld: %g vs %g",
                      (long long)i, ((float *)out[0].data)[i], ro[i]);
    for (int64_t i = 0; i < ns; i++)
        ck_assert_msg(fabs(((float *)out[1].data)[i] - rs[i]) <= 1e-4 + 1e-4 * fabs(rs[i]), "state %lld: %g vs %g",
                      (long long)i, ((float *)out[1].data)[i], rs[i]);
    th_free_outputs(2, out);
    for (int i = 0; i < 6; i++) free(data[i]);
    free(ro);
    free(rs);
}

START_TEST(test_linear_attention_reference) {
    static const la_case cases[] = {
        {1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0},  {2, 5, 2, 2, 3, 4, 0, 0, 0, 0, 0.5},  {2, 4, 4, 2, 8, 5, 1, 0, 0, 0, 0},
        {1, 6, 2, 2, 4, 4, 1, 0, 1, 0, 0},  {2, 3, 3, 3, 4, 6, 0, 1, 0, 0, 0},    {2, 7, 8, 4, 8, 8, 1, 1, 1, 0, 0},
        {3, 5, 4, 1, 16, 9, 1, 1, 0, 1, 0}, {1, 30, 2, 2, 32, 17, 1, 1, 1, 0, 0}, {2, 0, 2, 2, 4, 4, 1, 1, 0, 0, 0},
    };
    th_seed(31);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_la_case(&cases[i]);
}
END_TEST

/* One head, dk = dv = 1, linear rule: S = 1, 2, 3 after each step of
 * k = v = 1, so outputs q * S with q = 1, 2, 3 and scale 1 are 1, 4, 9. */
START_TEST(test_linear_attention_by_hand) {
    float q[3] = {1, 2, 3}, k[3] = {1, 1, 1}, v[3] = {1, 1, 1}, s[1] = {0};
    const int64_t d3[3] = {1, 3, 1}, d4[4] = {1, 1, 1, 1};
    const th_tensor in[4] = {th_f32(q, 3, d3), th_f32(k, 3, d3), th_f32(v, 3, d3), th_f32(s, 4, d4)};
    th_attrs at;
    th_attrs_init(&at, &cg_op_linear_attention);
    th_set_int(&at, &cg_op_linear_attention, "q_num_heads", 1);
    th_set_int(&at, &cg_op_linear_attention, "kv_num_heads", 1);
    th_set_string(&at, &cg_op_linear_attention, "update_rule", "linear");
    th_tensor out[2];
    ck_assert_msg(th_run(&cg_op_linear_attention, 4, in, &at, 2, out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    const float *o = out[0].data;
    ck_assert(o[0] == 1.0f && o[1] == 4.0f && o[2] == 9.0f);
    ck_assert(((float *)out[1].data)[0] == 3.0f);
    th_free_outputs(2, out);
}
END_TEST

/* ---- deform_conv ---- */

typedef struct dc_case {
    int64_t n, c, h, w, m, kh, kw, group, og, s[2], d[2], p[4];
    int n_in;
} dc_case;

/* x's plane at (ph, pw): the bilinear value as the sum over every pixel
 * of its tent weight max(0, 1 - |ph - y|) * max(0, 1 - |pw - z|). */
static double tent_sample(const float *x, int64_t h, int64_t w, double ph, double pw) {
    double v = 0;
    for (int64_t y = 0; y < h; y++)
        for (int64_t z = 0; z < w; z++) {
            const double a = 1 - fabs(ph - (double)y), b = 1 - fabs(pw - (double)z);
            if (a > 0 && b > 0) v += a * b * x[y * w + z];
        }
    return v;
}

static void ref_deform_conv(const dc_case *c, int64_t oh, int64_t ow, const float *x, const float *w, const float *off,
                            const float *bias, const float *mask, double *y) {
    const int64_t cg = c->c / c->group, mg = c->m / c->group, taps = c->kh * c->kw, co = c->c / c->og;
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t m = 0; m < c->m; m++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    double acc = bias ? bias[m] : 0;
                    for (int64_t cc = 0; cc < cg; cc++) {
                        const int64_t ch = (m / mg) * cg + cc, og = ch / co;
                        for (int64_t ki = 0; ki < c->kh; ki++)
                            for (int64_t kj = 0; kj < c->kw; kj++) {
                                const int64_t t = (n * c->og + og) * taps + ki * c->kw + kj;
                                const double ph =
                                    (double)(i * c->s[0] - c->p[0] + ki * c->d[0]) + off[((2 * t) * oh + i) * ow + j];
                                const double pw = (double)(j * c->s[1] - c->p[1] + kj * c->d[1]) +
                                                  off[((2 * t + 1) * oh + i) * ow + j];
                                double v = tent_sample(x + (n * c->c + ch) * c->h * c->w, c->h, c->w, ph, pw);
                                if (mask) v *= mask[(t * oh + i) * ow + j];
                                acc += w[((m * cg + cc) * c->kh + ki) * c->kw + kj] * v;
                            }
                    }
                    y[((n * c->m + m) * oh + i) * ow + j] = acc;
                }
}

static void run_dc_case(const dc_case *c) {
    const int64_t oh = (c->h + c->p[0] + c->p[2] - c->d[0] * (c->kh - 1) - 1) / c->s[0] + 1;
    const int64_t ow = (c->w + c->p[1] + c->p[3] - c->d[1] * (c->kw - 1) - 1) / c->s[1] + 1;
    const int64_t taps = c->og * c->kh * c->kw;
    const int64_t dims[5][4] = {{c->n, c->c, c->h, c->w},
                                {c->m, c->c / c->group, c->kh, c->kw},
                                {c->n, 2 * taps, oh, ow},
                                {c->m},
                                {c->n, taps, oh, ow}};
    float *data[5] = {NULL};
    th_tensor in[5];
    for (int i = 0; i < c->n_in; i++) {
        const int nd = i == 3 ? 1 : 4;
        int64_t cnt = 1;
        for (int d = 0; d < nd; d++) cnt *= dims[i][d];
        data[i] = malloc(sizeof(float) * (size_t)cnt);
        th_fill(data[i], cnt, i == 2 ? -2.5f : i == 4 ? 0.0f : -1.0f, i == 2 ? 2.5f : 1.0f);
        in[i] = th_f32(data[i], nd, dims[i]);
    }
    th_attrs at;
    th_attrs_init(&at, &cg_op_deform_conv);
    th_set_ints(&at, &cg_op_deform_conv, "strides", 2, c->s);
    th_set_ints(&at, &cg_op_deform_conv, "dilations", 2, c->d);
    th_set_ints(&at, &cg_op_deform_conv, "pads", 4, c->p);
    th_set_int(&at, &cg_op_deform_conv, "group", c->group);
    th_set_int(&at, &cg_op_deform_conv, "offset_group", c->og);
    th_tensor out;
    ck_assert_msg(th_run(&cg_op_deform_conv, c->n_in, in, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    ck_assert(out.desc.dims[2] == oh && out.desc.dims[3] == ow);
    const int64_t ny = c->n * c->m * oh * ow;
    double *ry = malloc(sizeof(double) * (size_t)ny);
    ref_deform_conv(c, oh, ow, data[0], data[1], data[2], data[3], data[4], ry);
    for (int64_t i = 0; i < ny; i++)
        ck_assert_msg(fabs(((float *)out.data)[i] - ry[i]) <= 1e-4 + 1e-4 * fabs(ry[i]), "y %lld: %g vs %g",
                      (long long)i, ((float *)out.data)[i], ry[i]);
    th_free_outputs(1, &out);
    for (int i = 0; i < 5; i++) free(data[i]);
    free(ry);
}

START_TEST(test_deform_conv_reference) {
    static const dc_case cases[] = {
        {1, 1, 3, 3, 1, 2, 2, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, 3},
        {2, 3, 7, 6, 4, 3, 3, 1, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}, 4},
        {1, 4, 9, 8, 6, 3, 2, 2, 2, {2, 1}, {1, 2}, {1, 0, 2, 1}, 5},
        {2, 6, 5, 5, 3, 1, 1, 3, 3, {1, 1}, {1, 1}, {0, 0, 0, 0}, 5},
        {1, 4, 6, 7, 4, 2, 3, 1, 4, {2, 3}, {2, 1}, {0, 2, 1, 0}, 5},
    };
    th_seed(22);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_dc_case(&cases[i]);
}
END_TEST

/* A 1x1 kernel of weight 1 on a 2x2 image: offset (0.5, 0.5) samples the
 * mean of the four pixels at (0, 0); (-1, 0) at (1, 1) samples pixel
 * (0, 1); offset (0, 1) at (0, 1) falls off the right edge: 0. */
START_TEST(test_deform_conv_by_hand) {
    float x[4] = {1, 2, 3, 4}, w[1] = {1};
    float off[8] = {0.5f, 0, 0, -1, /* dy per position */ 0.5f, 1, 0, 0 /* dx */};
    const int64_t xd[4] = {1, 1, 2, 2}, wd[4] = {1, 1, 1, 1}, od[4] = {1, 2, 2, 2};
    const th_tensor in[3] = {th_f32(x, 4, xd), th_f32(w, 4, wd), th_f32(off, 4, od)};
    th_tensor out;
    ck_assert_msg(th_run(&cg_op_deform_conv, 3, in, NULL, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    const float *y = out.data;
    ck_assert_msg(y[0] == 2.5f && y[1] == 0.0f && y[2] == 3.0f && y[3] == 2.0f, "%g %g %g %g", y[0], y[1], y[2], y[3]);
    th_free_outputs(1, &out);
}
END_TEST

/* ---- bitcast ---- */

START_TEST(test_bitcast) {
    float x[5] = {1.0f, -0.0f, 3.5f, INFINITY, NAN};
    const int64_t d[1] = {5};
    const th_tensor in[1] = {th_f32(x, 1, d)};
    th_attrs at;
    th_attrs_init(&at, &cg_op_bitcast);
    th_set_string(&at, &cg_op_bitcast, "to", "i32");
    th_tensor out;
    ck_assert_msg(th_run(&cg_op_bitcast, 1, in, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    ck_assert_int_eq(out.desc.dtype, CG_OP_I32);
    const int32_t *y = out.data;
    ck_assert(y[0] == 0x3f800000 && y[1] == INT32_MIN && y[2] == 0x40600000 && y[3] == 0x7f800000);
    ck_assert(!memcmp(y, x, sizeof x));
    th_free_outputs(1, &out);
    th_set_string(&at, &cg_op_bitcast, "to", "i64");
    ck_assert_int_eq(th_infer(&cg_op_bitcast, 1, in, &at, 1, &out, g_err, sizeof g_err), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, "the sizes must match"), "%s", g_err);
    th_set_string(&at, &cg_op_bitcast, "to", "bool");
    th_tensor u8 = in[0];
    u8.desc.dtype = CG_U8;
    ck_assert_int_eq(th_infer(&cg_op_bitcast, 1, &u8, &at, 1, &out, g_err, sizeof g_err), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, "a bool holds only 0 or 1"), "%s", g_err);
}
END_TEST

/* Symbolic batch and length carry through; bad shapes fail by name. */
START_TEST(test_infer_and_errors) {
    float d[1] = {0};
    const int64_t B = CG_DIM_SYM(0), T = CG_DIM_SYM(1);
    const th_tensor la[4] = {th_f32(d, 3, (const int64_t[]){B, T, 8}), th_f32(d, 3, (const int64_t[]){B, T, 4}),
                             th_f32(d, 3, (const int64_t[]){B, T, 6}), th_f32(d, 4, (const int64_t[]){B, 2, 2, 3})};
    th_attrs at;
    th_attrs_init(&at, &cg_op_linear_attention);
    th_set_int(&at, &cg_op_linear_attention, "q_num_heads", 4);
    th_set_int(&at, &cg_op_linear_attention, "kv_num_heads", 2);
    th_set_string(&at, &cg_op_linear_attention, "update_rule", "linear");
    th_tensor out[2];
    ck_assert_msg(th_infer(&cg_op_linear_attention, 4, la, &at, 2, out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    ck_assert(out[0].desc.dims[0] == B && out[0].desc.dims[1] == T && out[0].desc.dims[2] == 12);
    ck_assert(out[1].desc.dims[0] == B && out[1].desc.dims[3] == 3);
    th_set_string(&at, &cg_op_linear_attention, "update_rule", "gated");
    ck_assert_int_eq(th_infer(&cg_op_linear_attention, 4, la, &at, 2, out, g_err, sizeof g_err), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, "takes 5 inputs"), "%s", g_err);
    th_set_int(&at, &cg_op_linear_attention, "kv_num_heads", 3);
    ck_assert_int_eq(th_infer(&cg_op_linear_attention, 4, la, &at, 2, out, g_err, sizeof g_err), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, "positive multiple"), "%s", g_err);

    const th_tensor dc[3] = {th_f32(d, 4, (const int64_t[]){B, 2, T, T}), th_f32(d, 4, (const int64_t[]){3, 2, 3, 3}),
                             th_f32(d, 4, (const int64_t[]){B, 18, T, T})};
    ck_assert_msg(th_infer(&cg_op_deform_conv, 3, dc, NULL, 1, out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    ck_assert(out[0].desc.dims[0] == B && out[0].desc.dims[1] == 3 && out[0].desc.dims[2] == T);
    const th_tensor bad[3] = {dc[0], dc[1], th_f32(d, 4, (const int64_t[]){B, 9, T, T})};
    ck_assert_int_eq(th_infer(&cg_op_deform_conv, 3, bad, NULL, 1, out, g_err, sizeof g_err), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, "offset must be"), "%s", g_err);
    const th_tensor small[3] = {th_f32(d, 4, (const int64_t[]){1, 2, 2, 2}), dc[1], dc[2]};
    ck_assert_int_eq(th_infer(&cg_op_deform_conv, 3, small, NULL, 1, out, g_err, sizeof g_err), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, "does not fit"), "%s", g_err);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("ops_onnx_new");
    TCase *tc = tcase_create("onnx_new");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_linear_attention_reference);
    tcase_add_test(tc, test_linear_attention_by_hand);
    tcase_add_test(tc, test_deform_conv_reference);
    tcase_add_test(tc, test_deform_conv_by_hand);
    tcase_add_test(tc, test_bitcast);
    tcase_add_test(tc, test_infer_and_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(suite(), 0); }
