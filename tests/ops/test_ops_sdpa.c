/* Tests of the fused attention op sdpa (ops/sdpa.c): the CPU kernel through
 * the op harness against a naive double-precision reference written here
 * (both layouts, grouped heads, D != Dv, decoder steps, the causal cut
 * with L < S and L > S, masks of every rank with -inf entries and rows
 * masked everywhere, more keys than a tile); the CPU and every OpenCL
 * device through plans against PyTorch's scaled_dot_product_attention
 * (tests/data/sdpa, written by make_sdpa.py); NaN propagation; the same
 * bits for any thread count; inference with symbolic dims and its errors. */
#include <check.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h"
#include "op_harness.h"
#include "ops_common.h"
#include "test_util.h"

static char g_err[512];

static void setup_dir(void) { tu_setup_dir("sdpa"); }

/* ------------------------------------------------------------------ */
/* The reference                                                       */

typedef struct geom {
    int64_t B, Hq, Hk, L, S, D, Dv;
    int bshd, causal;
    double scale; /* 0: 1 / sqrt(D) (1 for D = 0) */
    int mask_nd;  /* 0: no mask */
    int64_t mask[4];
} geom;

/* Element (b, h, n, x) of a [B, H, N, X] tensor in the layout. */
static int64_t at(const geom *g, int64_t H, int64_t N, int64_t X, int64_t b, int64_t h, int64_t n, int64_t x) {
    return g->bshd ? ((b * N + n) * H + h) * X + x : ((b * H + h) * N + n) * X + x;
}

/* The mask's value for scores element (b, h, i, j): its index taken
 * modulo each of its dims (1 broadcasts), right-aligned. */
static double mask_at(const geom *g, const float *m, int64_t b, int64_t h, int64_t i, int64_t j) {
    const int64_t idx[4] = {b, h, i, j};
    int64_t off = 0;
    for (int k = 0; k < g->mask_nd; k++) off = off * g->mask[k] + idx[4 - g->mask_nd + k] % g->mask[k];
    return m[off];
}

/* y in double: every score, the causal cut and the mask, softmax with the
 * max subtracted, the weighted values of the keys before the cut (a NaN
 * value there reaches the row even where its weight is 0); rows with no
 * key left are 0. */
static void reference(const geom *g, const float *q, const float *k, const float *v, const float *m, double *y) {
    const double scale = g->scale != 0.0 ? g->scale : g->D > 0 ? 1.0 / sqrt((double)g->D) : 1.0;
    double *p = malloc(sizeof(double) * (size_t)(g->S ? g->S : 1));
    ck_assert_ptr_nonnull(p);
    for (int64_t b = 0; b < g->B; b++)
        for (int64_t h = 0; h < g->Hq; h++)
            for (int64_t i = 0; i < g->L; i++) {
                const int64_t kh = h / (g->Hq / g->Hk);
                double mx = -INFINITY, sum = 0.0;
                for (int64_t j = 0; j < g->S; j++) {
                    double s = 0.0;
                    for (int64_t d = 0; d < g->D; d++)
                        s += (double)q[at(g, g->Hq, g->L, g->D, b, h, i, d)] *
                             (double)k[at(g, g->Hk, g->S, g->D, b, kh, j, d)];
                    s *= scale;
                    if (m) s += mask_at(g, m, b, h, i, j);
                    if (g->causal && j > i + g->S - g->L) s = -INFINITY;
                    p[j] = s;
                    if (s > mx || isnan(s)) mx = isnan(mx) ? mx : s;
                }
                const int64_t seen = g->causal ? i + g->S - g->L + 1 : g->S;
                for (int64_t j = 0; j < g->S; j++) sum += p[j] = mx == -INFINITY ? 0.0 : exp(p[j] - mx);
                for (int64_t c = 0; c < g->Dv; c++) {
                    double acc = 0.0;
                    for (int64_t j = 0; j < seen && mx != -INFINITY; j++)
                        acc += p[j] * v[at(g, g->Hk, g->S, g->Dv, b, kh, j, c)];
                    y[at(g, g->Hq, g->L, g->Dv, b, h, i, c)] = mx == -INFINITY ? 0.0 : acc / sum;
                }
            }
    free(p);
}

/* ------------------------------------------------------------------ */
/* The CPU kernel through the harness                                  */

static int64_t heads_numel(int64_t B, int64_t H, int64_t N, int64_t X) { return B * H * N * X; }

static th_tensor heads_tensor(const geom *g, float *data, int64_t H, int64_t N, int64_t X) {
    const int64_t dims[4] = {g->B, g->bshd ? N : H, g->bshd ? H : N, X};
    return th_f32(data, 4, dims);
}

static th_attrs attrs_of(const geom *g) {
    th_attrs a;
    th_attrs_init(&a, &cg_op_sdpa);
    th_set_string(&a, &cg_op_sdpa, "layout", g->bshd ? "bshd" : "bhsd");
    th_set_int(&a, &cg_op_sdpa, "causal", g->causal);
    th_set_float(&a, &cg_op_sdpa, "scale", g->scale);
    return a;
}

/* Runs the CPU kernel on q, k, v, m (NULL: no mask) into a new y. */
static float *run_cpu(const geom *g, float *q, float *k, float *v, float *m) {
    th_tensor in[4] = {heads_tensor(g, q, g->Hq, g->L, g->D), heads_tensor(g, k, g->Hk, g->S, g->D),
                       heads_tensor(g, v, g->Hk, g->S, g->Dv), th_f32(m, g->mask_nd, g->mask)};
    th_attrs at = attrs_of(g);
    th_tensor out[1];
    memset(out, 0, sizeof out);
    cg_op_status st = th_run(&cg_op_sdpa, m ? 4 : 3, in, &at, 1, out, g_err, sizeof g_err);
    ck_assert_msg(st == CG_OP_OK, "sdpa failed: %s", g_err);
    return out[0].data;
}

/* |got - want| <= 2e-5 + 2e-5 |want| everywhere; NaN only where want is. */
static void expect_close(const char *what, const float *got, const double *want, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (isnan(want[i]) || isnan(got[i])) {
            ck_assert_msg(isnan(want[i]) && isnan(got[i]), "%s: element %lld is %g, expected %g", what, (long long)i,
                          (double)got[i], want[i]);
            continue;
        }
        ck_assert_msg(fabs(got[i] - want[i]) <= 2e-5 + 2e-5 * fabs(want[i]), "%s: element %lld is %.9g, expected %.9g",
                      what, (long long)i, (double)got[i], want[i]);
    }
}

/* Random q, k, v in [-2, 2] and a mask in [-3, 0] with a share `holes` of
 * -inf entries (and, with `dead_row`, one mask row all -inf). */
static void random_case(const geom *g, double holes, int dead_row, const char *what) {
    const int64_t nq = heads_numel(g->B, g->Hq, g->L, g->D), nk = heads_numel(g->B, g->Hk, g->S, g->D);
    const int64_t nv = heads_numel(g->B, g->Hk, g->S, g->Dv), ny = heads_numel(g->B, g->Hq, g->L, g->Dv);
    int64_t nm = 1;
    for (int i = 0; i < g->mask_nd; i++) nm *= g->mask[i];
    float *q = malloc(sizeof(float) * (size_t)(nq + 1)), *k = malloc(sizeof(float) * (size_t)(nk + 1));
    float *v = malloc(sizeof(float) * (size_t)(nv + 1)), *m = malloc(sizeof(float) * (size_t)nm);
    double *want = malloc(sizeof(double) * (size_t)(ny + 1));
    th_fill(q, nq, -2, 2), th_fill(k, nk, -2, 2), th_fill(v, nv, -2, 2), th_fill(m, nm, -3, 0);
    for (int64_t i = 0; i < nm; i++)
        if (th_uniform(0, 1) < holes) m[i] = -INFINITY;
    const int64_t row = g->mask_nd ? g->mask[g->mask_nd - 1] : 1;
    if (dead_row && g->mask_nd)
        for (int64_t j = 0; j < row; j++) m[(nm / row / 2) * row + j] = -INFINITY;
    reference(g, q, k, v, g->mask_nd ? m : NULL, want);
    float *y = run_cpu(g, q, k, v, g->mask_nd ? m : NULL);
    expect_close(what, y, want, ny);
    free(q), free(k), free(v), free(m), free(want), free(y);
}

START_TEST(cpu_matches_reference) {
    /* B, Hq, Hk, L, S, D, Dv, bshd, causal, scale, mask rank, mask dims */
    static const geom cases[] = {
        {1, 1, 1, 1, 1, 1, 1, 0, 0, 0.0, 0, {0}},
        {2, 3, 3, 5, 7, 8, 8, 0, 0, 0.0, 0, {0}},
        {2, 3, 3, 5, 7, 8, 8, 1, 0, 0.0, 0, {0}},
        {2, 6, 2, 5, 9, 8, 5, 1, 0, 0.3, 2, {5, 9}},
        {2, 4, 1, 1, 17, 16, 16, 1, 1, 0.0, 4, {2, 1, 1, 17}},
        {1, 2, 2, 4, 11, 8, 6, 0, 1, 0.0, 4, {1, 2, 4, 11}},
        {1, 2, 1, 6, 4, 4, 4, 0, 1, 0.0, 0, {0}},
        {3, 2, 2, 5, 19, 8, 8, 1, 0, -0.7, 1, {19}},
        {2, 4, 4, 3, 5, 8, 8, 0, 0, 0.0, 3, {4, 1, 1}},
        {2, 4, 2, 3, 5, 8, 8, 0, 0, 0.0, 4, {2, 1, 3, 1}},
        {1, 2, 1, 7, 300, 16, 24, 1, 1, 0.0, 2, {7, 300}},
        {2, 4, 2, 37, 70, 24, 40, 1, 1, 0.0, 4, {2, 4, 37, 70}},
        {1, 8, 8, 64, 64, 64, 64, 0, 1, 0.0, 0, {0}},
        {1, 2, 2, 70, 3, 5, 3, 0, 0, 0.0, 2, {70, 3}},
        {1, 2, 2, 3, 4, 0, 5, 0, 0, 0.0, 0, {0}},
    };
    th_seed(32);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char what[64];
        snprintf(what, sizeof what, "case %zu", c);
        random_case(&cases[c], 0.0, 0, what);
        snprintf(what, sizeof what, "case %zu with -inf holes", c);
        random_case(&cases[c], 0.2, 1, what);
    }
}
END_TEST

/* kv_rows: B query rows over N rows of k and v picked by an index, against
 * the reference on k and v copied row by row; the same case without the
 * index on those copies gives the same bits; an index outside [0, N) and
 * a wrong index shape fail naming the input. */
START_TEST(kv_rows_read_their_rows) {
    /* B, Hq, Hk, L, S, D, Dv, bshd, causal, scale, mask rank, mask dims */
    static const geom cases[] = {
        {6, 4, 4, 1, 9, 8, 8, 1, 0, 0.0, 4, {6, 1, 1, 9}},
        {5, 4, 2, 3, 7, 8, 6, 0, 1, 0.0, 2, {3, 7}},
        {4, 2, 2, 2, 70, 16, 40, 1, 0, 0.5, 0, {0}},
    };
    static const int64_t N[] = {2, 3, 1};
    th_seed(33);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const geom *g = &cases[c];
        geom gn = *g;
        gn.B = N[c];
        const int64_t nq = heads_numel(g->B, g->Hq, g->L, g->D), rk = g->Hk * g->S * g->D, rv = g->Hk * g->S * g->Dv;
        const int64_t ny = heads_numel(g->B, g->Hq, g->L, g->Dv);
        int64_t nm = 1;
        for (int i = 0; i < g->mask_nd; i++) nm *= g->mask[i];
        float *q = malloc(sizeof(float) * (size_t)nq), *k = malloc(sizeof(float) * (size_t)(N[c] * rk));
        float *v = malloc(sizeof(float) * (size_t)(N[c] * rv)), *m = malloc(sizeof(float) * (size_t)nm);
        float *kg = malloc(sizeof(float) * (size_t)(g->B * rk)), *vg = malloc(sizeof(float) * (size_t)(g->B * rv));
        double *want = malloc(sizeof(double) * (size_t)ny);
        int32_t idx[8];
        th_fill(q, nq, -2, 2), th_fill(k, N[c] * rk, -2, 2), th_fill(v, N[c] * rv, -2, 2), th_fill(m, nm, -3, 0);
        for (int64_t b = 0; b < g->B; b++) { /* a row's k and v: its sentence's, as gather_rows copies them */
            idx[b] = (int32_t)((b * 5 + 1) % N[c]);
            memcpy(kg + b * rk, k + idx[b] * rk, sizeof(float) * (size_t)rk);
            memcpy(vg + b * rv, v + idx[b] * rv, sizeof(float) * (size_t)rv);
        }
        reference(g, q, kg, vg, g->mask_nd ? m : NULL, want);
        const int64_t nb[1] = {g->B};
        th_tensor in[5] = {heads_tensor(g, q, g->Hq, g->L, g->D), heads_tensor(&gn, k, g->Hk, g->S, g->D),
                           heads_tensor(&gn, v, g->Hk, g->S, g->Dv), th_f32(m, g->mask_nd, g->mask)};
        const int n_in = g->mask_nd ? 5 : 4;
        in[n_in - 1] = th_i32(idx, 1, nb);
        th_attrs at = attrs_of(g);
        th_set_int(&at, &cg_op_sdpa, "kv_rows", 1);
        th_tensor out[1];
        memset(out, 0, sizeof out);
        ck_assert_msg(th_run(&cg_op_sdpa, n_in, in, &at, 1, out, g_err, sizeof g_err) == CG_OP_OK, "case %zu: %s", c,
                      g_err);
        char what[64];
        snprintf(what, sizeof what, "kv_rows case %zu", c);
        expect_close(what, out[0].data, want, ny);
        float *y = run_cpu(g, q, kg, vg, g->mask_nd ? m : NULL);
        ck_assert_msg(memcmp(y, out[0].data, sizeof(float) * (size_t)ny) == 0, "case %zu: bits differ from the copy",
                      c);
        free(y), free(out[0].data);
        idx[g->B - 1] = (int32_t)N[c]; /* one past the end */
        memset(out, 0, sizeof out);
        ck_assert_int_eq(th_run(&cg_op_sdpa, n_in, in, &at, 1, out, g_err, sizeof g_err), CG_OP_ERROR);
        ck_assert_msg(strstr(g_err, "index") != NULL, "case %zu: %s", c, g_err);
        free(out[0].data);
        free(q), free(k), free(v), free(m), free(kg), free(vg), free(want);
    }
}
END_TEST

/* A NaN in a q row makes that row NaN only; one in the mask its row; one
 * in v every row reading its key, not a row before the causal cut. */
START_TEST(nan_propagates_to_its_rows) {
    const geom g = {1, 1, 1, 4, 4, 3, 2, 0, 1, 0.0, 2, {4, 4}};
    float q[12], k[12], v[8], m[16];
    th_seed(7);
    th_fill(q, 12, -1, 1), th_fill(k, 12, -1, 1), th_fill(v, 8, -1, 1), th_fill(m, 16, -1, 0);
    q[1 * 3 + 2] = NAN; /* query 1 */
    m[2 * 4 + 0] = NAN; /* query 2, key 0 */
    v[3 * 2 + 1] = NAN; /* key 3: only query 3 sees it */
    float *y = run_cpu(&g, q, k, v, m);
    ck_assert(!isnan(y[0]) && !isnan(y[1]));
    ck_assert(isnan(y[2]) && isnan(y[3]));
    ck_assert(isnan(y[4]) && isnan(y[5]));
    ck_assert(!isnan(y[6]) && isnan(y[7]));
    free(y);
}
END_TEST

/* ------------------------------------------------------------------ */
/* PyTorch's outputs on every device                                   */

static cg_tensor *load_npy(const char *dir, const char *name) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    cg_tensor *t = NULL;
    ck_assert_msg(cg_tensor_load_npy(path, &t) == CG_OK, "%s: %s", path, cg_last_error());
    return t;
}

/* "[2, 5, 6, 8]" */
static void dims_text(const cg_tensor *t, char *buf, size_t n) {
    size_t u = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < cg_tensor_ndim(t) && u < n; i++)
        u += (size_t)snprintf(buf + u, n - u, "%s%lld", i ? ", " : "", (long long)cg_tensor_dim(t, i));
    if (u < n) snprintf(buf + u, n - u, "]");
}

/* y of sdpa(in[0..n)) {attrs} on device dev, as a plan runs it. */
static cg_tensor *run_plan(const char *dev, cg_tensor *const *in, int n, const char *attrs) {
    static const char *const names[] = {"q", "k", "v", "mask"};
    char text[1024], sh[96];
    size_t u = (size_t)snprintf(text, sizeof text, "graph g {\n");
    for (int i = 0; i < n; i++) {
        dims_text(in[i], sh, sizeof sh);
        u += (size_t)snprintf(text + u, sizeof text - u, "  input %s: f32%s\n", names[i], sh);
    }
    snprintf(text + u, sizeof text - u, "  y = sdpa(q, k, v%s) {%s}\n  output y\n}\n", n > 3 ? ", mask" : "", attrs);
    cg_context *ctx = NULL;
    cg_model *m = NULL;
    cg_plan *p = NULL;
    cg_tensor *y = NULL;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    ck_assert_msg(cg_model_parse(ctx, text, strlen(text), "sdpa.cg", &m) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_model_verify(m) == CG_OK, "%s", cg_last_error());
    cg_plan_options po = {.struct_size = sizeof po, .device = dev};
    ck_assert_msg(cg_plan_create(m, "g", &po, &p) == CG_OK, "%s: %s", dev, cg_last_error());
    ck_assert_msg(cg_plan_run(p, n, names, in, 1, &y) == CG_OK, "%s: %s", dev, cg_last_error());
    cg_plan_free(p);
    cg_model_free(m);
    cg_context_free(ctx);
    return y;
}

/* Devices to run on: the CPU and each OpenCL device ("opencl:N"). */
static int device_name(int i, char *buf, size_t n) {
    if (i == 0) snprintf(buf, n, "cpu");
    else snprintf(buf, n, "opencl:%d", i - 1);
    return i < cg_device_count();
}

/* One case of tests/data/sdpa on every device. */
static void torch_case(const char *name, const char *layout, int causal, double scale, int has_mask) {
    char dir[4200], attrs[128], dev[32];
    snprintf(dir, sizeof dir, "%s/tests/data/sdpa/%s", tu_src_dir(), name);
    snprintf(attrs, sizeof attrs, "layout: \"%s\", causal: %d, scale: %.17g", layout, causal, scale);
    cg_tensor *in[4] = {load_npy(dir, "q"), load_npy(dir, "k"), load_npy(dir, "v"),
                        has_mask ? load_npy(dir, "mask") : 0};
    cg_tensor *want = load_npy(dir, "y");
    const int64_t n = cg_tensor_numel(want);
    double *w = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) w[i] = ((const float *)cg_tensor_data_const(want))[i];
    for (int d = 0; device_name(d, dev, sizeof dev); d++) {
        cg_tensor *y = run_plan(dev, in, 3 + has_mask, attrs);
        char what[4300];
        snprintf(what, sizeof what, "%s on %s", name, dev);
        ck_assert_int_eq(cg_tensor_numel(y), n);
        expect_close(what, cg_tensor_data_const(y), w, n);
        cg_tensor_free(y);
    }
    free(w);
    for (int i = 0; i < 4; i++) cg_tensor_free(in[i]);
    cg_tensor_free(want);
}

START_TEST(every_device_matches_torch) {
    char path[4200], line[256];
    snprintf(path, sizeof path, "%s/tests/data/sdpa/cases.txt", tu_src_dir());
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    int cases = 0;
    while (fgets(line, sizeof line, f)) {
        char name[128], layout[8];
        int causal, has_mask;
        double scale;
        if (line[0] == '#') continue;
        ck_assert_int_eq(sscanf(line, "%127s %7s %d %lf %d", name, layout, &causal, &scale, &has_mask), 5);
        torch_case(name, layout, causal, scale, has_mask);
        cases++;
    }
    fclose(f);
    ck_assert_int_ge(cases, 8);
}
END_TEST

/* A NaN reaches the same rows on every device. */
START_TEST(nan_rows_on_every_device) {
    const int64_t dq[4] = {1, 1, 4, 3}, dv[4] = {1, 1, 4, 2}, dm[2] = {4, 4};
    cg_tensor *in[4];
    ck_assert_int_eq(cg_tensor_create(CG_F32, 4, dq, &in[0]), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_F32, 4, dq, &in[1]), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_F32, 4, dv, &in[2]), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, dm, &in[3]), CG_OK);
    th_seed(9);
    for (int i = 0; i < 4; i++) th_fill(cg_tensor_data(in[i]), cg_tensor_numel(in[i]), -1, 0);
    ((float *)cg_tensor_data(in[0]))[1 * 3 + 2] = NAN;
    ((float *)cg_tensor_data(in[3]))[2 * 4 + 0] = NAN;
    ((float *)cg_tensor_data(in[2]))[3 * 2 + 1] = NAN;
    char dev[32];
    for (int d = 0; device_name(d, dev, sizeof dev); d++) {
        cg_tensor *y = run_plan(dev, in, 4, "causal: 1");
        const float *p = cg_tensor_data_const(y);
        const int want[8] = {0, 0, 1, 1, 1, 1, 0, 1};
        for (int i = 0; i < 8; i++) ck_assert_msg((isnan(p[i]) != 0) == want[i], "%s: element %d is %g", dev, i, p[i]);
        cg_tensor_free(y);
    }
    for (int i = 0; i < 4; i++) cg_tensor_free(in[i]);
}
END_TEST

/* The same bits with 1 and 3 threads (the CLI, each its own process). */
START_TEST(same_bits_for_any_thread_count) {
    char dir[4200], q[4300], k[4300], v[4300], m[4300], out[2][300];
    snprintf(dir, sizeof dir, "%s/tests/data/sdpa/bshd_gqa_long_causal", tu_src_dir());
    snprintf(q, sizeof q, "q=%s/q.npy", dir), snprintf(k, sizeof k, "k=%s/k.npy", dir);
    snprintf(v, sizeof v, "v=%s/v.npy", dir), snprintf(m, sizeof m, "mask=%s/mask.npy", dir);
    static const char text[] = "graph g {\n  input q: f32[B, L, 4, 24]\n  input k: f32[B, S, 2, 24]\n"
                               "  input v: f32[B, S, 2, 40]\n  input mask: f32[L, S]\n"
                               "  y = sdpa(q, k, v, mask) {layout: \"bshd\", causal: 1}\n  output y\n}\n";
    const char *model = tu_write_file("g.cg", text, strlen(text));
    for (int t = 0; t < 2; t++) {
        char env[32];
        snprintf(env, sizeof env, "CLGRAPH_THREADS=%d", t ? 3 : 1);
        snprintf(out[t], sizeof out[t], "%s", tu_path(t ? "out3" : "out1"));
        const char *args[] = {"run", model,     "--input", q,          "--input", k,   "--input",
                              v,     "--input", m,         "--output", out[t],    NULL},
                   *extra[] = {env, NULL};
        ck_assert_msg(tu_run_cli(args, extra, NULL) == 0, "%s", tu_err);
    }
    size_t n1 = 0, n3 = 0;
    char p1[400], p3[400];
    snprintf(p1, sizeof p1, "%s/y.npy", out[0]), snprintf(p3, sizeof p3, "%s/y.npy", out[1]);
    char *a = tu_read_text(p1, &n1), *b = tu_read_text(p3, &n3);
    ck_assert(a && b && n1 == n3 && n1 > 1000);
    ck_assert_msg(!memcmp(a, b, n1), "1 and 3 threads give different bits");
    free(a), free(b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Inference                                                           */

static cg_op_status infer(const char *layout, int n_in, const cg_tensor_desc *d, int64_t causal, cg_tensor_desc *y) {
    th_tensor in[4], out[1];
    for (int i = 0; i < n_in; i++) in[i] = th_f32(NULL, d[i].ndim, d[i].dims), in[i].desc.dtype = d[i].dtype;
    th_attrs at;
    th_attrs_init(&at, &cg_op_sdpa);
    th_set_string(&at, &cg_op_sdpa, "layout", layout);
    th_set_int(&at, &cg_op_sdpa, "causal", causal);
    cg_op_status st = th_infer(&cg_op_sdpa, n_in, in, &at, 1, out, g_err, sizeof g_err);
    if (y) *y = out[0].desc;
    return st;
}

#define F4(a, b, c, d)            \
    {                             \
        CG_F32, 4, { a, b, c, d } \
    }

START_TEST(infer_symbolic_dims) {
    const int64_t B = CG_DIM_SYM(0), L = CG_DIM_SYM(1), S = CG_DIM_SYM(2), U = CG_DIM_UNKNOWN;
    cg_tensor_desc y;
    const cg_tensor_desc bhsd[4] = {F4(B, 8, L, 64), F4(B, 2, S, 64), F4(B, 2, S, 32), {CG_F32, 2, {L, S}}};
    ck_assert_msg(infer("bhsd", 4, bhsd, 1, &y) == CG_OP_OK, "%s", g_err);
    ck_assert(y.dtype == CG_F32 && y.ndim == 4 && y.dims[0] == B && y.dims[1] == 8 && y.dims[2] == L &&
              y.dims[3] == 32);
    const cg_tensor_desc bshd[4] = {F4(U, L, 12, 64), F4(B, S, 4, 64), F4(B, S, 4, 16), {CG_F32, 4, {B, 1, 1, S}}};
    ck_assert_msg(infer("bshd", 4, bshd, 0, &y) == CG_OP_OK, "%s", g_err);
    ck_assert(y.ndim == 4 && y.dims[0] == B && y.dims[1] == L && y.dims[2] == 12 && y.dims[3] == 16);
}
END_TEST

/* Inference fails with a message holding every needle. */
static void expect_fail(const char *layout, int n_in, const cg_tensor_desc *d, int64_t causal,
                        const char *const *needles) {
    ck_assert_msg(infer(layout, n_in, d, causal, NULL) == CG_OP_ERROR, "accepted; expected '%s'", needles[0]);
    for (int i = 0; needles[i]; i++) ck_assert_msg(strstr(g_err, needles[i]), "'%s' lacks '%s'", g_err, needles[i]);
    ck_assert_msg(!strchr(g_err, '\n'), "'%s' is more than one line", g_err);
}

START_TEST(infer_errors_name_the_input) {
    const cg_tensor_desc ok[4] = {F4(2, 8, 5, 16), F4(2, 4, 7, 16), F4(2, 4, 7, 8), {CG_F32, 2, {5, 7}}};
    cg_tensor_desc d[4];
    expect_fail("bhds", 3, ok, 0, (const char *const[]){"layout \"bhds\"", NULL});
    expect_fail("bhsd", 3, ok, 2, (const char *const[]){"causal must be 0 or 1", NULL});
    memcpy(d, ok, sizeof d), d[1].ndim = 3;
    expect_fail("bhsd", 3, d, 0, (const char *const[]){"input 1 (k)", "[B, Hk, S, D]", "[2, 4, 7]", NULL});
    memcpy(d, ok, sizeof d), d[2].dtype = CG_I32;
    expect_fail("bshd", 3, d, 0, (const char *const[]){"input 2 (v)", "[B, S, Hk, Dv]", "i32", NULL});
    memcpy(d, ok, sizeof d), d[0].dims[1] = 6;
    expect_fail("bhsd", 3, d, 0, (const char *const[]){"multiple", "q [2, 6, 5, 16]", "k [2, 4, 7, 16]", NULL});
    memcpy(d, ok, sizeof d), d[1].dims[3] = 12;
    expect_fail("bhsd", 3, d, 0, (const char *const[]){"head size D", "k [2, 4, 7, 12]", NULL});
    memcpy(d, ok, sizeof d), d[2].dims[2] = 6;
    expect_fail("bhsd", 3, d, 0, (const char *const[]){"keys S", "v [2, 4, 6, 8]", NULL});
    memcpy(d, ok, sizeof d), d[2].dims[1] = 2;
    expect_fail("bhsd", 3, d, 0, (const char *const[]){"as many heads", NULL});
    memcpy(d, ok, sizeof d), d[0].dims[0] = 3;
    expect_fail("bhsd", 3, d, 0, (const char *const[]){"batch size B", NULL});
    memcpy(d, ok, sizeof d), d[3].dims[1] = 6;
    expect_fail("bhsd", 4, d, 0, (const char *const[]){"input 3 (mask)", "[2, 8, 5, 7]", "[5, 6]", NULL});
    memcpy(d, ok, sizeof d), d[3] = (cg_tensor_desc){CG_F32, 5, {1, 2, 8, 5, 7}};
    expect_fail("bhsd", 4, d, 0, (const char *const[]){"input 3 (mask)", NULL});
    memcpy(d, ok, sizeof d), d[3].dtype = CG_BOOL;
    expect_fail("bhsd", 4, d, 0, (const char *const[]){"input 3 (mask)", "bool", NULL});
    /* bshd reads heads from dim 2: these are bhsd's shapes, wrong there */
    expect_fail("bshd", 3, ok, 0, (const char *const[]){"(layout bshd)", NULL});
}
END_TEST

/* Packed q | k | v ([B, L, 3 * heads * D] given three times): the output's
 * shape, and what is refused. */
static cg_op_status packed_infer_of(const char *layout, int64_t heads, const cg_tensor_desc *d, cg_tensor_desc *y) {
    th_tensor in[3], out[1];
    for (int i = 0; i < 3; i++) in[i] = th_f32(NULL, d[i].ndim, d[i].dims), in[i].desc.dtype = d[i].dtype;
    th_attrs at;
    th_attrs_init(&at, &cg_op_sdpa);
    th_set_string(&at, &cg_op_sdpa, "layout", layout);
    th_set_int(&at, &cg_op_sdpa, "packed", 1);
    th_set_int(&at, &cg_op_sdpa, "heads", heads);
    cg_op_status st = th_infer(&cg_op_sdpa, 3, in, &at, 1, out, g_err, sizeof g_err);
    if (y) *y = out[0].desc;
    return st;
}

START_TEST(infer_packed) {
    const int64_t B = CG_DIM_SYM(0), L = CG_DIM_SYM(1);
    const cg_tensor_desc x = {CG_F32, 3, {B, L, 96}}, d[3] = {x, x, x};
    cg_tensor_desc y;
    ck_assert_msg(packed_infer_of("bshd", 4, d, &y) == CG_OP_OK, "%s", g_err);
    ck_assert(y.ndim == 4 && y.dims[0] == B && y.dims[1] == L && y.dims[2] == 4 && y.dims[3] == 8);
    ck_assert_int_eq(packed_infer_of("bhsd", 4, d, NULL), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, "packed q, k and v need layout \"bshd\""), "%s", g_err);
    ck_assert_int_eq(packed_infer_of("bshd", 0, d, NULL), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, "heads >= 1"), "%s", g_err);
    ck_assert_int_eq(packed_infer_of("bshd", 5, d, NULL), CG_OP_ERROR); /* 96 is no multiple of 15 */
    ck_assert_msg(strstr(g_err, "a multiple of 3 * heads"), "%s", g_err);
    cg_tensor_desc e[3] = {x, x, x};
    e[2].dims[2] = 48;
    ck_assert_int_eq(packed_infer_of("bshd", 4, e, NULL), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, "of one shape") && strstr(g_err, "v [") && !strchr(g_err, '\n'), "%s", g_err);
}
END_TEST

int main(void) {
    Suite *s = suite_create("ops_sdpa");
    TCase *tc = tcase_create("sdpa");
    tcase_add_checked_fixture(tc, NULL, NULL);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, cpu_matches_reference);
    tcase_add_test(tc, nan_propagates_to_its_rows);
    tcase_add_test(tc, kv_rows_read_their_rows);
    tcase_add_test(tc, infer_symbolic_dims);
    tcase_add_test(tc, infer_errors_name_the_input);
    tcase_add_test(tc, infer_packed);
    suite_add_tcase(s, tc);
    TCase *dev = tcase_create("devices");
    tcase_add_checked_fixture(dev, NULL, NULL);
    tcase_set_timeout(dev, 300);
    tcase_add_test(dev, every_device_matches_torch);
    tcase_add_test(dev, nan_rows_on_every_device);
    suite_add_tcase(s, dev);
    TCase *cli = tcase_create("cli");
    tcase_add_checked_fixture(cli, setup_dir, tu_teardown_dir);
    tcase_set_timeout(cli, 300);
    tcase_add_test(cli, same_bits_for_any_thread_count);
    suite_add_tcase(s, cli);
    return tu_run_suite(s, 1);
}
