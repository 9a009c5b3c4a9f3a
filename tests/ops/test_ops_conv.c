/* Tests of conv, conv_transpose, max_pool, avg_pool and lp_pool (CPU
 * kernels through the op harness) against naive references written here
 * from the definitions (ONNX Conv, ConvTranspose, MaxPool, AveragePool,
 * LpPool): a direct sum per output element, a scatter of each input
 * element for the transposed convolution, a scan of each window for the
 * pools; a few cases worked by hand. The OpenCL kernels are compared with
 * the CPU kernels by `clgraph conform`. */
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

/* One convolution case: nsp spatial axes, x [n, c, in...], w of the op's
 * layout, attributes as explicit lists (pads begin..., end...). */
typedef struct cv {
    int nsp;
    int64_t n, c, m, group, in[3], k[3], s[3], d[3], pb[3], pe[3], op[3];
    int bias;
} cv;

static void set_lists(th_attrs *at, const cg_op_def *def, const cv *t, int transpose) {
    int64_t pads[6];
    for (int i = 0; i < t->nsp; i++) pads[i] = t->pb[i], pads[t->nsp + i] = t->pe[i];
    th_set_ints(at, def, "strides", t->nsp, t->s);
    th_set_ints(at, def, "dilations", t->nsp, t->d);
    th_set_ints(at, def, "pads", 2 * t->nsp, pads);
    th_set_int(at, def, "group", t->group);
    if (transpose) th_set_ints(at, def, "output_padding", t->nsp, t->op);
}

/* Row-major offset of a 3-axis position p in dims d (nsp axes used). */
static int64_t off3(int nsp, const int64_t *d, const int64_t *p) {
    int64_t o = 0;
    for (int a = 0; a < nsp; a++) o = o * d[a] + p[a];
    return o;
}

/* Steps p through the dims d (nsp axes); 0 when it wraps around. */
static int next3(int nsp, const int64_t *d, int64_t *p) {
    for (int a = nsp - 1; a >= 0; a--) {
        if (++p[a] < d[a]) return 1;
        p[a] = 0;
    }
    return 0;
}

static int64_t prod(int n, const int64_t *d) {
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= d[i];
    return p;
}

/* y = conv(x, w, b) by its definition. */
static void ref_conv(const cv *t, const int64_t *out, const float *x, const float *w, const float *b, float *y) {
    const int64_t cg = t->c / t->group, mg = t->m / t->group, isz = prod(t->nsp, t->in), ksz = prod(t->nsp, t->k);
    const int64_t osz = prod(t->nsp, out);
    for (int64_t n = 0; n < t->n; n++)
        for (int64_t m = 0; m < t->m; m++) {
            int64_t o[3] = {0};
            do {
                double acc = b ? b[m] : 0.0;
                for (int64_t c = 0; c < cg; c++) {
                    int64_t k[3] = {0};
                    do {
                        int64_t p[3], inside = 1;
                        for (int a = 0; a < t->nsp; a++) {
                            p[a] = o[a] * t->s[a] - t->pb[a] + k[a] * t->d[a];
                            inside &= p[a] >= 0 && p[a] < t->in[a];
                        }
                        if (inside)
                            acc += (double)x[(n * t->c + m / mg * cg + c) * isz + off3(t->nsp, t->in, p)] *
                                   w[(m * cg + c) * ksz + off3(t->nsp, t->k, k)];
                    } while (next3(t->nsp, t->k, k));
                }
                y[(n * t->m + m) * osz + off3(t->nsp, out, o)] = (float)acc;
            } while (next3(t->nsp, out, o));
        }
}

/* y = conv_transpose(x, w, b): each x element scattered through w. */
static void ref_conv_transpose(const cv *t, const int64_t *out, const float *x, const float *w, const float *b,
                               float *y) {
    const int64_t cg = t->c / t->group, mg = t->m / t->group, isz = prod(t->nsp, t->in), ksz = prod(t->nsp, t->k);
    const int64_t osz = prod(t->nsp, out);
    double *acc = calloc((size_t)(t->n * t->m * osz), sizeof *acc);
    for (int64_t n = 0; n < t->n; n++)
        for (int64_t c = 0; c < t->c; c++) {
            int64_t i[3] = {0};
            do {
                const double xv = x[(n * t->c + c) * isz + off3(t->nsp, t->in, i)];
                for (int64_t ml = 0; ml < mg; ml++) {
                    int64_t k[3] = {0};
                    do {
                        int64_t p[3], inside = 1;
                        for (int a = 0; a < t->nsp; a++) {
                            p[a] = i[a] * t->s[a] - t->pb[a] + k[a] * t->d[a];
                            inside &= p[a] >= 0 && p[a] < out[a];
                        }
                        if (inside)
                            acc[(n * t->m + c / cg * mg + ml) * osz + off3(t->nsp, out, p)] +=
                                xv * w[(c * mg + ml) * ksz + off3(t->nsp, t->k, k)];
                    } while (next3(t->nsp, t->k, k));
                }
            } while (next3(t->nsp, t->in, i));
        }
    for (int64_t i = 0; i < t->n * t->m * osz; i++) y[i] = (float)(acc[i] + (b ? b[i / osz % t->m] : 0.0));
    free(acc);
}

static float *rand_buf(int64_t n) {
    float *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    th_fill(p, n, -1.0f, 1.0f);
    return p;
}

/* Runs conv or conv_transpose on case t and compares with the reference. */
static void check_conv(const cv *t, int transpose) {
    const cg_op_def *def = transpose ? &cg_op_conv_transpose : &cg_op_conv;
    int64_t xd[5] = {t->n, t->c}, wd[5] = {transpose ? t->c : t->m, transpose ? t->m / t->group : t->c / t->group};
    int64_t out[3];
    for (int a = 0; a < t->nsp; a++) {
        xd[2 + a] = t->in[a], wd[2 + a] = t->k[a];
        const int64_t ext = (t->k[a] - 1) * t->d[a] + 1;
        out[a] = transpose ? t->s[a] * (t->in[a] - 1) + t->op[a] + ext - t->pb[a] - t->pe[a]
                           : (t->in[a] + t->pb[a] + t->pe[a] - ext) / t->s[a] + 1;
    }
    const int64_t xn = prod(2 + t->nsp, xd), wn = prod(2 + t->nsp, wd), yn = t->n * t->m * prod(t->nsp, out);
    float *x = rand_buf(xn), *w = rand_buf(wn), *b = rand_buf(t->m), *want = malloc((size_t)yn * sizeof *want);
    th_tensor in[3] = {th_f32(x, 2 + t->nsp, xd), th_f32(w, 2 + t->nsp, wd), th_f32(b, 1, &t->m)}, y;
    th_attrs at;
    th_attrs_init(&at, def);
    set_lists(&at, def, t, transpose);
    ck_assert_msg(th_run(def, 2 + t->bias, in, &at, 1, &y, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    for (int a = 0; a < t->nsp; a++) ck_assert_int_eq(y.desc.dims[2 + a], out[a]);
    if (transpose) ref_conv_transpose(t, out, x, w, t->bias ? b : NULL, want);
    else ref_conv(t, out, x, w, t->bias ? b : NULL, want);
    const double err = th_max_abs_diff(y.data, want, yn);
    ck_assert_msg(err < 1e-4, "%s case %dd c %lld m %lld group %lld: max error %g", def->name, t->nsp, (long long)t->c,
                  (long long)t->m, (long long)t->group, err);
    th_free_outputs(1, &y);
    free(x), free(w), free(b), free(want);
}

#define A3(a, b, c) \
    { a, b, c }
static const cv conv_cases[] = {
    {1, 2, 3, 4, 1, A3(9, 1, 1), A3(3, 1, 1), A3(1, 1, 1), A3(1, 1, 1), A3(0, 0, 0), A3(0, 0, 0), A3(0, 0, 0), 1},
    {1, 1, 4, 6, 2, A3(11, 1, 1), A3(3, 1, 1), A3(2, 1, 1), A3(2, 1, 1), A3(1, 0, 0), A3(2, 0, 0), A3(0, 0, 0), 0},
    {2, 2, 3, 5, 1, A3(7, 6, 1), A3(3, 3, 1), A3(1, 1, 1), A3(1, 1, 1), A3(1, 1, 0), A3(1, 1, 0), A3(0, 0, 0), 1},
    {2, 1, 4, 4, 1, A3(8, 9, 1), A3(3, 2, 1), A3(2, 3, 1), A3(1, 1, 1), A3(0, 1, 0), A3(2, 0, 0), A3(0, 0, 0), 1},
    /* depthwise, and a channel multiplier of 2 */
    {2, 1, 6, 6, 6, A3(9, 9, 1), A3(3, 3, 1), A3(2, 2, 1), A3(1, 1, 1), A3(1, 1, 0), A3(1, 1, 0), A3(0, 0, 0), 1},
    {2, 2, 4, 8, 4, A3(6, 5, 1), A3(3, 3, 1), A3(1, 1, 1), A3(2, 1, 1), A3(2, 1, 0), A3(2, 1, 0), A3(0, 0, 0), 0},
    /* pointwise; 3-D; a window block of several GEMMs (40 x 40 outputs) */
    {2, 2, 8, 4, 1, A3(5, 5, 1), A3(1, 1, 1), A3(1, 1, 1), A3(1, 1, 1), A3(0, 0, 0), A3(0, 0, 0), A3(0, 0, 0), 1},
    {3, 1, 2, 3, 1, A3(5, 6, 4), A3(3, 2, 3), A3(1, 2, 1), A3(1, 1, 2), A3(1, 0, 1), A3(1, 1, 0), A3(0, 0, 0), 1},
    {2, 1, 64, 8, 1, A3(40, 40, 1), A3(3, 3, 1), A3(1, 1, 1), A3(1, 1, 1), A3(1, 1, 0), A3(1, 1, 0), A3(0, 0, 0), 1},
};

static const cv ct_cases[] = {
    {1, 2, 3, 2, 1, A3(5, 1, 1), A3(3, 1, 1), A3(1, 1, 1), A3(1, 1, 1), A3(0, 0, 0), A3(0, 0, 0), A3(0, 0, 0), 1},
    {1, 1, 4, 6, 2, A3(6, 1, 1), A3(3, 1, 1), A3(3, 1, 1), A3(1, 1, 1), A3(1, 0, 0), A3(2, 0, 0), A3(1, 0, 0), 0},
    {2, 1, 3, 2, 1, A3(4, 5, 1), A3(3, 3, 1), A3(2, 2, 1), A3(1, 1, 1), A3(1, 1, 0), A3(1, 1, 0), A3(1, 1, 0), 1},
    {2, 2, 4, 4, 4, A3(3, 4, 1), A3(2, 3, 1), A3(2, 1, 1), A3(2, 2, 1), A3(0, 0, 0), A3(0, 0, 0), A3(1, 0, 0), 1},
    /* negative end pads: positions past the natural output */
    {2, 1, 2, 3, 1, A3(3, 3, 1), A3(3, 3, 1), A3(3, 2, 1), A3(1, 1, 1), A3(0, 0, 0), A3(-1, -2, 0), A3(0, 0, 0), 1},
    {3, 1, 2, 2, 1, A3(3, 4, 3), A3(2, 3, 2), A3(2, 1, 2), A3(1, 1, 1), A3(0, 1, 1), A3(1, 0, 0), A3(0, 0, 0), 1},
    {2, 1, 16, 8, 1, A3(30, 30, 1), A3(4, 4, 1), A3(2, 2, 1), A3(1, 1, 1), A3(1, 1, 0), A3(1, 1, 0), A3(0, 0, 0), 1},
};

START_TEST(test_conv_reference) {
    th_seed(31);
    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) check_conv(&conv_cases[i], 0);
}
END_TEST

START_TEST(test_conv_transpose_reference) {
    th_seed(32);
    for (size_t i = 0; i < sizeof ct_cases / sizeof ct_cases[0]; i++) check_conv(&ct_cases[i], 1);
}
END_TEST

/* By hand: [1, 2, 3, 4] * [1, 0, -1] with a zero on each side is
 * [0 - 2, 1 - 3, 2 - 4, 3 - 0]; transposed with stride 2, [1, 2] through
 * [1, 10] is [1, 10, 2, 20]. */
START_TEST(test_conv_by_hand) {
    float x[4] = {1, 2, 3, 4}, w[3] = {1, 0, -1}, x2[2] = {1, 2}, w2[2] = {1, 10};
    const int64_t xd[3] = {1, 1, 4}, wd[3] = {1, 1, 3}, x2d[3] = {1, 1, 2}, w2d[3] = {1, 1, 2};
    th_tensor in[2] = {th_f32(x, 3, xd), th_f32(w, 3, wd)}, y;
    th_attrs at;
    th_attrs_init(&at, &cg_op_conv);
    th_set_ints(&at, &cg_op_conv, "pads", 2, (const int64_t[]){1, 1});
    ck_assert_msg(th_run(&cg_op_conv, 2, in, &at, 1, &y, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    const float want[4] = {-2, -2, -2, 3};
    ck_assert_int_eq(y.desc.dims[2], 4);
    ck_assert(!memcmp(y.data, want, sizeof want));
    th_free_outputs(1, &y);
    th_tensor in2[2] = {th_f32(x2, 3, x2d), th_f32(w2, 3, w2d)};
    th_attrs_init(&at, &cg_op_conv_transpose);
    th_set_ints(&at, &cg_op_conv_transpose, "strides", 1, (const int64_t[]){2});
    ck_assert_msg(th_run(&cg_op_conv_transpose, 2, in2, &at, 1, &y, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    const float want2[4] = {1, 10, 2, 20};
    ck_assert_int_eq(y.desc.dims[2], 4);
    ck_assert(!memcmp(y.data, want2, sizeof want2));
    th_free_outputs(1, &y);
}
END_TEST

/* ---- pooling ---- */

typedef struct pl {
    int nsp;
    int64_t n, c, in[3], k[3], s[3], d[3], pb[3], pe[3];
    int ceil_mode;
} pl;

/* Output size with ONNX's rule (ceil_mode: a last window only where it
 * starts inside the input or the start pad). */
static int64_t pool_out(const pl *t, int a) {
    const int64_t span = t->in[a] + t->pb[a] + t->pe[a] - ((t->k[a] - 1) * t->d[a] + 1);
    int64_t o = span / t->s[a] + 1;
    if (t->ceil_mode && span % t->s[a] && o * t->s[a] < t->in[a] + t->pb[a]) o++;
    return o;
}

/* kind 0 max (and indices), 1 avg, 2 avg counting pads, 3 Lp with p 3. */
static void ref_pool(const pl *t, int kind, const int64_t *out, const float *x, float *y, int64_t *idx) {
    const int64_t isz = prod(t->nsp, t->in), osz = prod(t->nsp, out);
    for (int64_t pi = 0; pi < t->n * t->c; pi++) {
        int64_t o[3] = {0};
        do {
            double acc = 0.0, best = -INFINITY;
            int64_t cnt = 0, at = -1, k[3] = {0};
            do {
                int64_t p[3], inside = 1, padded = 1;
                for (int a = 0; a < t->nsp; a++) {
                    p[a] = o[a] * t->s[a] - t->pb[a] + k[a] * t->d[a];
                    inside &= p[a] >= 0 && p[a] < t->in[a];
                    padded &= p[a] < t->in[a] + t->pe[a];
                }
                cnt += kind == 2 ? padded : inside;
                if (!inside) continue;
                const float v = x[pi * isz + off3(t->nsp, t->in, p)];
                if (v > best) best = v, at = pi * isz + off3(t->nsp, t->in, p);
                acc += kind == 3 ? pow(fabs(v), 3.0) : v;
            } while (next3(t->nsp, t->k, k));
            const int64_t yi = pi * osz + off3(t->nsp, out, o);
            y[yi] = (float)(kind == 0 ? best : kind == 3 ? cbrt(acc) : acc / (double)cnt);
            if (idx) idx[yi] = at;
        } while (next3(t->nsp, out, o));
    }
}

static const pl pool_cases[] = {
    {1, 2, 3, A3(9, 1, 1), A3(3, 1, 1), A3(2, 1, 1), A3(1, 1, 1), A3(0, 0, 0), A3(0, 0, 0), 0},
    {2, 1, 3, A3(7, 8, 1), A3(3, 3, 1), A3(2, 2, 1), A3(1, 1, 1), A3(1, 1, 0), A3(1, 1, 0), 0},
    {2, 2, 2, A3(8, 7, 1), A3(2, 3, 1), A3(2, 2, 1), A3(1, 1, 1), A3(0, 0, 0), A3(0, 0, 0), 1},
    {2, 1, 2, A3(9, 9, 1), A3(3, 2, 1), A3(1, 1, 1), A3(2, 3, 1), A3(2, 0, 0), A3(1, 2, 0), 0},
    {2, 1, 1, A3(5, 5, 1), A3(3, 3, 1), A3(3, 3, 1), A3(1, 1, 1), A3(1, 0, 0), A3(1, 0, 0), 1},
    {3, 1, 2, A3(5, 4, 6), A3(2, 2, 3), A3(2, 1, 2), A3(1, 1, 1), A3(1, 0, 1), A3(0, 1, 1), 1},
};

static void check_pool(const pl *t, int kind) {
    const cg_op_def *def = kind == 0 ? &cg_op_max_pool : kind == 3 ? &cg_op_lp_pool : &cg_op_avg_pool;
    int64_t xd[5] = {t->n, t->c}, out[3], pads[6];
    for (int a = 0; a < t->nsp; a++)
        xd[2 + a] = t->in[a], out[a] = pool_out(t, a), pads[a] = t->pb[a], pads[t->nsp + a] = t->pe[a];
    const int64_t xn = prod(2 + t->nsp, xd), yn = t->n * t->c * prod(t->nsp, out);
    float *x = rand_buf(xn), *want = malloc((size_t)yn * sizeof *want);
    int64_t *widx = malloc((size_t)yn * sizeof *widx);
    th_tensor in = th_f32(x, 2 + t->nsp, xd), y[2];
    th_attrs at;
    th_attrs_init(&at, def);
    th_set_ints(&at, def, "kernel", t->nsp, t->k);
    th_set_ints(&at, def, "strides", t->nsp, t->s);
    th_set_ints(&at, def, "dilations", t->nsp, t->d);
    th_set_ints(&at, def, "pads", 2 * t->nsp, pads);
    th_set_int(&at, def, "ceil_mode", t->ceil_mode);
    if (kind == 2) th_set_int(&at, def, "count_include_pad", 1);
    if (kind == 3) th_set_float(&at, def, "p", 3.0);
    const int n_out = kind == 0 ? 2 : 1;
    ck_assert_msg(th_run(def, 1, &in, &at, n_out, y, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    for (int a = 0; a < t->nsp; a++) ck_assert_int_eq(y[0].desc.dims[2 + a], out[a]);
    ref_pool(t, kind, out, x, want, widx);
    const double err = th_max_abs_diff(y[0].data, want, yn);
    ck_assert_msg(err < 1e-5, "%s %dd: max error %g", def->name, t->nsp, err);
    if (kind == 0) ck_assert(!memcmp(y[1].data, widx, (size_t)yn * sizeof *widx));
    th_free_outputs(n_out, y);
    free(x), free(want), free(widx);
}

START_TEST(test_pool_reference) {
    th_seed(33);
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++)
        for (int kind = 0; kind < 4; kind++) check_pool(&pool_cases[i], kind);
}
END_TEST

/* By hand: max_pool 2x2 stride 2 of a 3x3 image with ceil_mode (the last
 * windows partial), storage_order 1 (column-major indices); avg_pool 3
 * wide with one pad each side, count_include_pad 0 and 1. */
START_TEST(test_pool_by_hand) {
    float x[9] = {1, 5, 2, 7, 3, 9, 4, 8, 6};
    const int64_t xd[4] = {1, 1, 3, 3};
    th_tensor in = th_f32(x, 4, xd), y[2];
    th_attrs at;
    th_attrs_init(&at, &cg_op_max_pool);
    th_set_ints(&at, &cg_op_max_pool, "kernel", 2, (const int64_t[]){2, 2});
    th_set_ints(&at, &cg_op_max_pool, "strides", 2, (const int64_t[]){2, 2});
    th_set_int(&at, &cg_op_max_pool, "ceil_mode", 1);
    th_set_int(&at, &cg_op_max_pool, "storage_order", 1);
    ck_assert_msg(th_run(&cg_op_max_pool, 1, &in, &at, 2, y, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    const float want[4] = {7, 9, 8, 6};
    const int64_t widx[4] = {1, 7, 5, 8}; /* (1, 0), (1, 2), (2, 1), (2, 2) column-major: h + 3 w */
    ck_assert(!memcmp(y[0].data, want, sizeof want));
    ck_assert(!memcmp(y[1].data, widx, sizeof widx));
    th_free_outputs(2, y);
    float r[4] = {1, 2, 3, 4};
    const int64_t rd[3] = {1, 1, 4};
    th_tensor rin = th_f32(r, 3, rd);
    for (int inc = 0; inc < 2; inc++) {
        th_attrs_init(&at, &cg_op_avg_pool);
        th_set_ints(&at, &cg_op_avg_pool, "kernel", 1, (const int64_t[]){3});
        th_set_ints(&at, &cg_op_avg_pool, "pads", 2, (const int64_t[]){1, 1});
        th_set_int(&at, &cg_op_avg_pool, "count_include_pad", inc);
        ck_assert_msg(th_run(&cg_op_avg_pool, 1, &rin, &at, 1, y, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
        const float w0[4] = {1.5f, 2, 3, 3.5f}, w1[4] = {1, 2, 3, 7.0f / 3.0f};
        const float *w = inc ? w1 : w0;
        for (int i = 0; i < 4; i++) ck_assert_float_eq_tol(((float *)y[0].data)[i], w[i], 1e-6f);
        th_free_outputs(1, y);
    }
}
END_TEST

/* Spatial dims may be symbolic: a size-keeping window keeps the symbol,
 * another gives an unknown dim. */
START_TEST(test_symbolic_dims) {
    float dummy[1] = {0};
    const int64_t xd[4] = {2, 3, CG_DIM_SYM(0), CG_DIM_SYM(1)}, wd[4] = {4, 3, 3, 3};
    th_tensor in[2] = {th_f32(dummy, 4, xd), th_f32(dummy, 4, wd)}, y;
    th_attrs at;
    th_attrs_init(&at, &cg_op_conv);
    th_set_ints(&at, &cg_op_conv, "pads", 4, (const int64_t[]){1, 1, 1, 1});
    ck_assert_msg(th_infer(&cg_op_conv, 2, in, &at, 1, &y, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    ck_assert(y.desc.dims[1] == 4 && y.desc.dims[2] == CG_DIM_SYM(0) && y.desc.dims[3] == CG_DIM_SYM(1));
    th_set_ints(&at, &cg_op_conv, "strides", 2, (const int64_t[]){2, 1});
    ck_assert_msg(th_infer(&cg_op_conv, 2, in, &at, 1, &y, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    ck_assert(y.desc.dims[2] == CG_DIM_UNKNOWN && y.desc.dims[3] == CG_DIM_SYM(1));
    th_attrs_init(&at, &cg_op_max_pool);
    th_set_ints(&at, &cg_op_max_pool, "kernel", 2, (const int64_t[]){3, 3});
    th_set_string(&at, &cg_op_max_pool, "auto_pad", "same_upper");
    ck_assert_msg(th_infer(&cg_op_max_pool, 1, in, &at, 1, &y, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    ck_assert(y.desc.dims[2] == CG_DIM_SYM(0) && y.desc.dims[3] == CG_DIM_SYM(1));
}
END_TEST

/* Bad shapes and attributes: one message naming the problem. */
static void expect_fail(const cg_op_def *def, int n_in, const th_tensor *in, const char *key, int n, const int64_t *v,
                        const char *str_key, const char *str, const char *want) {
    th_attrs at;
    th_tensor y[2];
    th_attrs_init(&at, def);
    if (key) th_set_ints(&at, def, key, n, v);
    if (str_key) th_set_string(&at, def, str_key, str);
    ck_assert_int_eq(th_infer(def, n_in, in, &at, 1, y, g_err, sizeof g_err), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, want), "'%s' lacks '%s'", g_err, want);
}

START_TEST(test_errors) {
    float d[1] = {0};
    const int64_t xd[3] = {1, 4, 6}, wd[3] = {2, 3, 3}, w2d[3] = {3, 2, 3}, bd[1] = {5}, x2d[2] = {1, 4};
    const th_tensor cw[2] = {th_f32(d, 3, xd), th_f32(d, 3, wd)}, cg2[2] = {th_f32(d, 3, xd), th_f32(d, 3, w2d)};
    const th_tensor cb[3] = {th_f32(d, 3, xd), th_f32(d, 3, (const int64_t[]){2, 4, 3}), th_f32(d, 1, bd)};
    const th_tensor flat[2] = {th_f32(d, 2, x2d), th_f32(d, 3, wd)};
    expect_fail(&cg_op_conv, 2, cw, NULL, 0, NULL, NULL, NULL, "takes 3 channels per group");
    expect_fail(&cg_op_conv, 2, cg2, NULL, 0, NULL, NULL, NULL, "takes 2 channels per group");
    expect_fail(&cg_op_conv, 3, cb, NULL, 0, NULL, NULL, NULL, "input 2 (bias) [5]");
    expect_fail(&cg_op_conv, 2, flat, NULL, 0, NULL, NULL, NULL, "with 1 to 3 spatial axes");
    const th_tensor ok[2] = {th_f32(d, 3, xd), th_f32(d, 3, (const int64_t[]){2, 4, 3})};
    expect_fail(&cg_op_conv, 2, ok, "dilations", 1, (const int64_t[]){4}, NULL, NULL, "the window spans 9 elements");
    expect_fail(&cg_op_conv, 2, ok, "strides", 2, (const int64_t[]){1, 1}, NULL, NULL,
                "attribute strides must hold 1 values");
    expect_fail(&cg_op_conv, 2, ok, "pads", 2, (const int64_t[]){-1, 0}, NULL, NULL, "attribute pads");
    expect_fail(&cg_op_conv, 2, ok, NULL, 0, NULL, "auto_pad", "same", "attribute auto_pad must be");
    const th_tensor tr[2] = {th_f32(d, 3, xd), th_f32(d, 3, (const int64_t[]){4, 2, 3})};
    expect_fail(&cg_op_conv_transpose, 2, tr, "output_padding", 1, (const int64_t[]){1}, NULL, NULL,
                "must be smaller than its stride or dilation");
    expect_fail(&cg_op_conv_transpose, 2, tr, "pads", 2, (const int64_t[]){4, 4}, NULL, NULL, "leave no output");
    expect_fail(&cg_op_max_pool, 1, cw, "kernel", 2, (const int64_t[]){2, 2}, NULL, NULL, "must hold 1 sizes");
    expect_fail(&cg_op_avg_pool, 1, cw, "kernel", 1, (const int64_t[]){7}, NULL, NULL, "the window spans 7");
    th_attrs at;
    th_tensor y;
    th_attrs_init(&at, &cg_op_lp_pool);
    th_set_ints(&at, &cg_op_lp_pool, "kernel", 1, (const int64_t[]){2});
    th_set_float(&at, &cg_op_lp_pool, "p", 0.0);
    ck_assert_int_eq(th_infer(&cg_op_lp_pool, 1, cw, &at, 1, &y, g_err, sizeof g_err), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, "attribute p must be positive"), "%s", g_err);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("ops_conv");
    TCase *tc = tcase_create("conv");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_conv_reference);
    tcase_add_test(tc, test_conv_transpose_reference);
    tcase_add_test(tc, test_conv_by_hand);
    tcase_add_test(tc, test_pool_reference);
    tcase_add_test(tc, test_pool_by_hand);
    tcase_add_test(tc, test_symbolic_dims);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(suite(), 0); }
