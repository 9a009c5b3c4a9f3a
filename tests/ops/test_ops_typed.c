/* Tests of the elementwise ops on dtypes beyond f32 (elementwise.c for
 * integer arithmetic, compare.c for comparisons, logic and where): each op
 * runs through the op harness (inference + CPU kernel) and is compared with
 * a naive reference written here: per-element index arithmetic for the
 * broadcast, integer power by repeated multiplication, the corner cases of
 * division by hand. The OpenCL kernels are compared with these by
 * `clgraph conform` (meson test conform). */
#include <check.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/plugin.h"
#include "dtype.h"
#include "ops_common.h"
#include "op_harness.h"
#include "test_util.h"

typedef struct shp {
    int nd;
    int64_t d[CG_MAX_DIMS];
} shp;

static char g_err[512];
static uint64_t g_rng = 0x9e3779b97f4a7c15u;

static int64_t rnd(int64_t lo, int64_t hi) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return lo + (int64_t)(g_rng % (uint64_t)(hi - lo + 1));
}

static int64_t numel(const shp *s) {
    int64_t n = 1;
    for (int i = 0; i < s->nd; i++) n *= s->d[i];
    return n;
}

/* Element i of a buffer of dtype dt as a double (integers exact up to 2^53;
 * i64 is read with get_i64). */
static double get(cg_op_dtype dt, const void *p, int64_t i) {
    switch (dt) {
    case CG_F32: return ((const float *)p)[i];
    case CG_I32: return ((const int32_t *)p)[i];
    case CG_I64: return (double)((const int64_t *)p)[i];
    case CG_I8: return ((const int8_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

static int64_t get_i64(cg_op_dtype dt, const void *p, int64_t i) {
    return dt == CG_I64 ? ((const int64_t *)p)[i] : dt == CG_I32 ? ((const int32_t *)p)[i] : (int64_t)get(dt, p, i);
}

static void set(cg_op_dtype dt, void *p, int64_t i, int64_t v) {
    switch (dt) {
    case CG_F32: ((float *)p)[i] = (float)v; break;
    case CG_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case CG_I64: ((int64_t *)p)[i] = v; break;
    case CG_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    default: ((uint8_t *)p)[i] = (uint8_t)v; break;
    }
}

/* A tensor of dtype dt and shape s with whole values in [lo, hi]. */
static th_tensor make(cg_op_dtype dt, const shp *s, int64_t lo, int64_t hi) {
    th_tensor t;
    memset(&t, 0, sizeof t);
    t.desc.dtype = dt;
    t.desc.ndim = s->nd;
    memcpy(t.desc.dims, s->d, sizeof s->d);
    int64_t n = numel(s);
    t.data = malloc(n ? (size_t)n * cg_dtype_size(dt) : 1);
    ck_assert_ptr_nonnull(t.data);
    for (int64_t i = 0; i < n; i++) set(dt, t.data, i, rnd(lo, hi));
    return t;
}

/* Offset in input `in` of output index idx (NumPy broadcasting). */
static int64_t off_of(int64_t flat, const shp *o, const cg_tensor_desc *in) {
    int64_t idx[CG_MAX_DIMS], off = 0;
    for (int i = o->nd - 1; i >= 0; i--) idx[i] = flat % o->d[i], flat /= o->d[i];
    for (int i = 0; i < in->ndim; i++) {
        int64_t k = idx[o->nd - in->ndim + i];
        off = off * in->dims[i] + (in->dims[i] == 1 ? 0 : k);
    }
    return off;
}

static shp out_shape(int n, const shp *const *in) {
    shp o = {0, {0}};
    for (int k = 0; k < n; k++) o.nd = in[k]->nd > o.nd ? in[k]->nd : o.nd;
    for (int i = 0; i < o.nd; i++) {
        o.d[i] = 1;
        for (int k = 0; k < n; k++) {
            int j = in[k]->nd - o.nd + i;
            if (j >= 0 && in[k]->d[j] != 1) o.d[i] = in[k]->d[j];
        }
    }
    return o;
}

static void run_ok(const cg_op_def *def, int n_in, const th_tensor *in, th_tensor *out) {
    cg_op_status st = th_run(def, n_in, in, NULL, 1, out, g_err, sizeof g_err);
    ck_assert_msg(st == CG_OP_OK, "%s failed: %s", def->name, g_err);
}

static const shp cases[][2] = {
    {{1, {17}}, {1, {17}}},
    {{2, {3, 17}}, {1, {17}}},
    {{2, {3, 17}}, {2, {3, 1}}},
    {{0, {0}}, {2, {2, 3}}},
    {{3, {3, 1, 5}}, {3, {1, 4, 1}}},
    {{2, {0, 3}}, {1, {3}}},
    {{4, {2, 1, 3, 1}}, {3, {5, 1, 4}}},
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* ---- integer arithmetic ---- */

typedef enum { A_ADD, A_SUB, A_MUL, A_DIV, A_POW, A_MAX, A_MIN } arith;

static const cg_op_def *arith_def(arith a) {
    const cg_op_def *d[] = {&cg_op_add, &cg_op_sub, &cg_op_mul, &cg_op_div, &cg_op_pow, &cg_op_maximum, &cg_op_minimum};
    return d[a];
}

/* The reference: exact in __int128 / repeated multiplication, then the low
 * bits (two's complement). */
static int64_t ref_arith(arith a, int64_t x, int64_t y, int bits) {
    const uint64_t mask = bits == 32 ? 0xffffffffu : UINT64_MAX;
    uint64_t r;
    switch (a) {
    case A_ADD: r = (uint64_t)x + (uint64_t)y; break;
    case A_SUB: r = (uint64_t)x - (uint64_t)y; break;
    case A_MUL: r = (uint64_t)x * (uint64_t)y; break;
    case A_DIV:
        if (y == 0) return 0;
        if (y == -1) r = 0 - (uint64_t)x; /* MIN / -1 wraps */
        else return x / y;                /* C truncates, as ONNX Runtime */
        break;
    case A_POW:
        if (y < 0) return x == 1 ? 1 : x == -1 ? (y % 2 ? -1 : 1) : 0;
        r = 1;
        for (int64_t i = 0; i < y; i++) r *= (uint64_t)x;
        break;
    case A_MAX: return x > y ? x : y;
    default: return x < y ? x : y;
    }
    r &= mask;
    if (bits == 32) return (int64_t)(int32_t)(uint32_t)r;
    return (int64_t)r;
}

static void check_arith(arith a, cg_op_dtype dt, const shp *sa, const shp *sb, int64_t lo, int64_t hi, int64_t blo,
                        int64_t bhi) {
    th_tensor in[2] = {make(dt, sa, lo, hi), make(dt, sb, blo, bhi)}, out;
    const int bits = dt == CG_I64 ? 64 : 32;
    /* the extremes, where they fit */
    if (numel(sa) > 1) set(dt, in[0].data, 0, bits == 64 ? INT64_MIN : INT32_MIN);
    if (numel(sa) > 2) set(dt, in[0].data, 1, bits == 64 ? INT64_MAX : INT32_MAX);
    run_ok(arith_def(a), 2, in, &out);
    const shp *ss[2] = {sa, sb};
    shp so = out_shape(2, ss);
    ck_assert_int_eq(out.desc.dtype, dt);
    ck_assert_int_eq(out.desc.ndim, so.nd);
    for (int64_t i = 0; i < numel(&so); i++) {
        int64_t x = get_i64(dt, in[0].data, off_of(i, &so, &in[0].desc));
        int64_t y = get_i64(dt, in[1].data, off_of(i, &so, &in[1].desc));
        int64_t want = ref_arith(a, x, y, bits), got = get_i64(dt, out.data, i);
        ck_assert_msg(got == want, "%s %s: element %lld: %lld op %lld gave %lld, expected %lld", arith_def(a)->name,
                      dt == CG_I64 ? "i64" : "i32", (long long)i, (long long)x, (long long)y, (long long)got,
                      (long long)want);
    }
    th_free_outputs(1, &out);
    free(in[0].data);
    free(in[1].data);
}

START_TEST(test_int_arith) {
    const cg_op_dtype dts[] = {CG_I32, CG_I64};
    for (size_t d = 0; d < 2; d++)
        for (size_t c = 0; c < N_CASES; c++) {
            const int64_t big = dts[d] == CG_I64 ? (int64_t)4e18 : 2000000000;
            for (arith a = A_ADD; a <= A_MIN; a++) {
                if (a == A_DIV) { /* small divisors: 0, -1 and exact quotients */
                    check_arith(a, dts[d], &cases[c][0], &cases[c][1], -big, big, -3, 3);
                    check_arith(a, dts[d], &cases[c][0], &cases[c][1], -1000, 1000, -1000, 1000);
                } else if (a == A_POW) {
                    check_arith(a, dts[d], &cases[c][0], &cases[c][1], -7, 7, -3, 40);
                } else {
                    check_arith(a, dts[d], &cases[c][0], &cases[c][1], -big, big, -big, big);
                }
            }
        }
}
END_TEST

/* Hand-computed corner cases of division and power. */
START_TEST(test_int_corners) {
    const shp s6 = {1, {6}};
    int64_t x[6] = {7, -7, 7, INT64_MIN, 5, -9}, y[6] = {2, 2, 0, -1, -5, 4};
    int64_t q[6] = {3, -3, 0, INT64_MIN, -1, -2};
    th_tensor in[2] = {make(CG_I64, &s6, 0, 0), make(CG_I64, &s6, 0, 0)}, out;
    memcpy(in[0].data, x, sizeof x);
    memcpy(in[1].data, y, sizeof y);
    run_ok(&cg_op_div, 2, in, &out);
    ck_assert_mem_eq(out.data, q, sizeof q);
    th_free_outputs(1, &out);
    int64_t b[6] = {2, -2, 3, 1, -1, -1}, e[6] = {10, 3, -1, -5, -3, -4}, p[6] = {1024, -8, 0, 1, -1, 1};
    memcpy(in[0].data, b, sizeof b);
    memcpy(in[1].data, e, sizeof e);
    run_ok(&cg_op_pow, 2, in, &out);
    ck_assert_mem_eq(out.data, p, sizeof p);
    th_free_outputs(1, &out);
    free(in[0].data);
    free(in[1].data);
}
END_TEST

/* ---- comparisons and logic ---- */

static int ref_cmp(int k, double x, double y) {
    switch (k) {
    case 0: return x == y;
    case 1: return x < y;
    case 2: return x <= y;
    case 3: return x > y;
    default: return x >= y;
    }
}

START_TEST(test_compare) {
    const cg_op_def *defs[] = {&cg_op_equal, &cg_op_less, &cg_op_less_equal, &cg_op_greater, &cg_op_greater_equal};
    const cg_op_dtype dts[] = {CG_F32, CG_I32, CG_I64, CG_BOOL, CG_U8, CG_I8};
    for (int k = 0; k < 5; k++)
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
            for (size_t c = 0; c < N_CASES; c++) {
                const int64_t hi = dts[d] == CG_BOOL ? 1 : dts[d] == CG_U8 ? 255 : 3;
                const int64_t lo = dts[d] == CG_BOOL || dts[d] == CG_U8 ? 0 : -3;
                th_tensor in[2] = {make(dts[d], &cases[c][0], lo, hi), make(dts[d], &cases[c][1], lo, hi)}, out;
                if (dts[d] == CG_F32 && numel(&cases[c][0]) > 1) ((float *)in[0].data)[1] = NAN;
                run_ok(defs[k], 2, in, &out);
                ck_assert_int_eq(out.desc.dtype, CG_BOOL);
                const shp *ss[2] = {&cases[c][0], &cases[c][1]};
                shp so = out_shape(2, ss);
                for (int64_t i = 0; i < numel(&so); i++) {
                    double x = get(dts[d], in[0].data, off_of(i, &so, &in[0].desc));
                    double y = get(dts[d], in[1].data, off_of(i, &so, &in[1].desc));
                    ck_assert_msg(((uint8_t *)out.data)[i] == ref_cmp(k, x, y), "%s case %zu dtype %d element %lld",
                                  defs[k]->name, c, dts[d], (long long)i);
                }
                th_free_outputs(1, &out);
                free(in[0].data);
                free(in[1].data);
            }
}
END_TEST

START_TEST(test_logic) {
    const cg_op_def *defs[] = {&cg_op_logical_and, &cg_op_logical_or, &cg_op_logical_xor};
    for (int k = 0; k < 3; k++)
        for (size_t c = 0; c < N_CASES; c++) {
            th_tensor in[2] = {make(CG_BOOL, &cases[c][0], 0, 1), make(CG_BOOL, &cases[c][1], 0, 1)}, out;
            run_ok(defs[k], 2, in, &out);
            const shp *ss[2] = {&cases[c][0], &cases[c][1]};
            shp so = out_shape(2, ss);
            for (int64_t i = 0; i < numel(&so); i++) {
                int x = ((uint8_t *)in[0].data)[off_of(i, &so, &in[0].desc)];
                int y = ((uint8_t *)in[1].data)[off_of(i, &so, &in[1].desc)];
                int want = k == 0 ? x & y : k == 1 ? x | y : x ^ y;
                ck_assert_int_eq(((uint8_t *)out.data)[i], want);
            }
            th_free_outputs(1, &out);
            free(in[0].data);
            free(in[1].data);
        }
    const shp s4 = {1, {4}};
    uint8_t v[4] = {0, 1, 1, 0}, nv[4] = {1, 0, 0, 1};
    th_tensor x = make(CG_BOOL, &s4, 0, 0), out;
    memcpy(x.data, v, 4);
    run_ok(&cg_op_logical_not, 1, &x, &out);
    ck_assert_mem_eq(out.data, nv, 4);
    th_free_outputs(1, &out);
    free(x.data);
}
END_TEST

START_TEST(test_where) {
    static const shp wc[][3] = {
        {{1, {17}}, {1, {17}}, {1, {17}}},    {{2, {3, 1}}, {3, {4, 1, 5}}, {1, {5}}},
        {{0, {0}}, {2, {2, 3}}, {2, {2, 1}}}, {{4, {2, 1, 3, 1}}, {2, {1, 7}}, {1, {1}}},
        {{2, {0, 3}}, {1, {3}}, {1, {1}}},
    };
    const cg_op_dtype dts[] = {CG_F32, CG_I64, CG_BOOL, CG_I8, CG_F16};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (size_t c = 0; c < sizeof wc / sizeof wc[0]; c++) {
            th_tensor in[3] = {make(CG_BOOL, &wc[c][0], 0, 1), make(dts[d], &wc[c][1], 0, 100),
                               make(dts[d], &wc[c][2], 0, 100)},
                      out;
            run_ok(&cg_op_where, 3, in, &out);
            ck_assert_int_eq(out.desc.dtype, dts[d]);
            const shp *ss[3] = {&wc[c][0], &wc[c][1], &wc[c][2]};
            shp so = out_shape(3, ss);
            const size_t b = cg_dtype_size(dts[d]);
            for (int64_t i = 0; i < numel(&so); i++) {
                int cond = ((uint8_t *)in[0].data)[off_of(i, &so, &in[0].desc)];
                const th_tensor *src = cond ? &in[1] : &in[2];
                const char *want = (const char *)src->data + off_of(i, &so, &src->desc) * (int64_t)b;
                ck_assert_msg(!memcmp((char *)out.data + i * (int64_t)b, want, b), "where case %zu element %lld", c,
                              (long long)i);
            }
            th_free_outputs(1, &out);
            for (int k = 0; k < 3; k++) free(in[k].data);
        }
}
END_TEST

/* trilu against its definition, element by element. */
START_TEST(test_trilu) {
    static const shp ts[] = {{2, {4, 5}}, {2, {5, 4}}, {3, {2, 3, 7}}, {2, {1, 1}}, {2, {0, 3}}};
    const int64_t ks[] = {0, 1, -1, 3, -4, 100, -100, INT64_MAX, INT64_MIN};
    for (size_t t = 0; t < sizeof ts / sizeof ts[0]; t++)
        for (int upper = 0; upper < 2; upper++)
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                th_tensor x = make(CG_I64, &ts[t], -100, 100), out;
                th_attrs at;
                th_attrs_init(&at, &cg_op_trilu);
                th_set_int(&at, &cg_op_trilu, "upper", upper);
                th_set_int(&at, &cg_op_trilu, "k", ks[ki]);
                ck_assert_msg(th_run(&cg_op_trilu, 1, &x, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
                const int64_t rows = ts[t].d[ts[t].nd - 2], cols = ts[t].d[ts[t].nd - 1];
                for (int64_t i = 0; i < numel(&ts[t]); i++) {
                    const int64_t c = i % cols, r = (i / cols) % rows;
                    const int keep = upper ? c - r >= ks[ki] : c - r <= ks[ki];
                    const int64_t want = keep ? ((int64_t *)x.data)[i] : 0;
                    ck_assert_msg(((int64_t *)out.data)[i] == want, "trilu upper %d k %lld shape %zu element %lld",
                                  upper, (long long)ks[ki], t, (long long)i);
                }
                th_free_outputs(1, &out);
                free(x.data);
            }
}
END_TEST

/* cumsum against its definition: each element the sum of the ones before
 * it (and itself unless exclusive) along the axis, counted from the end
 * when reverse; i64 values large enough that the sums wrap around. */
START_TEST(test_cumsum) {
    static const struct {
        shp x;
        int axis;
    } cc[] = {{{1, {6}}, 0}, {{2, {3, 4}}, 1}, {{2, {3, 4}}, -2}, {{3, {2, 3, 5}}, 1}, {{2, {0, 3}}, 1}};
    for (size_t c = 0; c < sizeof cc / sizeof cc[0]; c++)
        for (int mode = 0; mode < 4; mode++) {
            const int excl = mode & 1, rev = mode >> 1;
            th_tensor x = make(CG_I64, &cc[c].x, -4e18, 4e18), out;
            th_attrs at;
            th_attrs_init(&at, &cg_op_cumsum);
            th_set_int(&at, &cg_op_cumsum, "axis", cc[c].axis);
            th_set_int(&at, &cg_op_cumsum, "exclusive", excl);
            th_set_int(&at, &cg_op_cumsum, "reverse", rev);
            ck_assert_msg(th_run(&cg_op_cumsum, 1, &x, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
            const shp *sh = &cc[c].x;
            const int ax = cc[c].axis < 0 ? cc[c].axis + sh->nd : cc[c].axis;
            int64_t inner = 1;
            for (int d = ax + 1; d < sh->nd; d++) inner *= sh->d[d];
            const int64_t len = sh->d[ax];
            const int64_t *xv = x.data, *yv = out.data;
            for (int64_t i = 0; i < numel(sh); i++) {
                const int64_t j = (i / inner) % len, start = i - j * inner;
                uint64_t want = 0;
                for (int64_t k = 0; k < len; k++) {
                    const int take = rev ? (excl ? k > j : k >= j) : (excl ? k < j : k <= j);
                    if (take) want += (uint64_t)xv[start + k * inner];
                }
                ck_assert_msg(yv[i] == (int64_t)want, "cumsum case %zu mode %d element %lld", c, mode, (long long)i);
            }
            th_free_outputs(1, &out);
            free(x.data);
        }
}
END_TEST

/* matmul_integer against the definition summed in int64: every dtype
 * pair, zero points absent, single and per row / column, a batch, rows
 * long enough for packed b's padding, and past the packed path's 33025
 * (the row loops); b packed per run and, as a plan's weight, once. */
START_TEST(test_matmul_integer) {
    static const shp as[] = {{2, {4, 3}}, {3, {2, 3, 7}}, {2, {5, 0}}, {3, {3, 9, 37}}, {2, {1, 33026}}};
    static const int64_t ns[] = {2, 5, 4, 19, 2};
    for (int params = 0; params < 2; params++)
        for (size_t c = 0; c < sizeof as / sizeof as[0]; c++)
            for (int mode = 0; mode < 8; mode++) {
                th_as_params = params;
                const cg_op_dtype ta = mode & 1 ? CG_I8 : CG_U8, tb = mode & 2 ? CG_I8 : CG_U8;
                const int nz = mode >> 2 ? 4 : 2, per = mode == 4 || mode == 7;
                const shp *sa = &as[c];
                const int64_t m = sa->d[sa->nd - 2], k = sa->d[sa->nd - 1], n = ns[c];
                const shp sb = {2, {k, n}}, sza = {per ? 1 : 0, {m}}, szb = {per ? 1 : 0, {n}};
                const int64_t alo = ta == CG_U8 ? 0 : -128, ahi = ta == CG_U8 ? 255 : 127;
                const int64_t blo = tb == CG_U8 ? 0 : -128, bhi = tb == CG_U8 ? 255 : 127;
                th_tensor in[4] = {make(ta, sa, alo, ahi), make(tb, &sb, blo, bhi), make(ta, &sza, alo, ahi),
                                   make(tb, &szb, blo, bhi)},
                          out;
                th_attrs at;
                th_attrs_init(&at, &cg_op_matmul_integer);
                ck_assert_msg(th_run(&cg_op_matmul_integer, nz, in, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK,
                              "%s", g_err);
                int64_t nrows = 1;
                for (int d = 0; d + 1 < sa->nd; d++) nrows *= sa->d[d];
                for (int64_t r = 0; r < nrows; r++)
                    for (int64_t j = 0; j < n; j++) {
                        int64_t want = 0;
                        const int64_t za = nz > 2 ? (int64_t)get(ta, in[2].data, per ? r % m : 0) : 0;
                        const int64_t zb = nz > 2 ? (int64_t)get(tb, in[3].data, per ? j : 0) : 0;
                        for (int64_t q = 0; q < k; q++)
                            want += ((int64_t)get(ta, in[0].data, r * k + q) - za) *
                                    ((int64_t)get(tb, in[1].data, q * n + j) - zb);
                        ck_assert_msg(((int32_t *)out.data)[r * n + j] == want,
                                      "matmul_integer case %zu mode %d [%lld, %lld]", c, mode, (long long)r,
                                      (long long)j);
                    }
                th_free_outputs(1, &out);
                for (int i = 0; i < 4; i++) free(in[i].data);
                th_as_params = 0;
            }
}
END_TEST

START_TEST(test_expand) {
    static const struct {
        shp x, to;
    } ec[] = {{{1, {3}}, {2, {4, 1}}},
              {{2, {3, 1}}, {3, {2, 1, 6}}},
              {{0, {0}}, {1, {5}}},
              {{2, {2, 3}}, {1, {1}}},
              {{3, {1, 2, 1}}, {3, {3, 2, 4}}}};
    for (size_t c = 0; c < sizeof ec / sizeof ec[0]; c++) {
        th_tensor x = make(CG_I64, &ec[c].x, -1000, 1000), out;
        th_attrs at;
        th_attrs_init(&at, &cg_op_expand);
        th_set_ints(&at, &cg_op_expand, "shape", ec[c].to.nd, ec[c].to.d);
        ck_assert_msg(th_run(&cg_op_expand, 1, &x, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
        const shp *ss[2] = {&ec[c].x, &ec[c].to};
        shp so = out_shape(2, ss);
        ck_assert_int_eq(out.desc.ndim, so.nd);
        for (int64_t i = 0; i < numel(&so); i++)
            ck_assert(((int64_t *)out.data)[i] == ((int64_t *)x.data)[off_of(i, &so, &x.desc)]);
        th_free_outputs(1, &out);
        free(x.data);
    }
}
END_TEST

/* gather_elements against its definition (torch.gather's formula). */
START_TEST(test_gather_elements) {
    static const struct {
        shp x, ix;
        int axis;
    } gc[] = {{{1, {5}}, {1, {3}}, 0},
              {{2, {3, 4}}, {2, {3, 6}}, 1},
              {{2, {3, 4}}, {2, {2, 4}}, 0},
              {{3, {2, 3, 5}}, {3, {1, 7, 2}}, 1},
              {{2, {3, 4}}, {2, {0, 4}}, 0}};
    for (size_t c = 0; c < sizeof gc / sizeof gc[0]; c++) {
        const int64_t len = gc[c].x.d[gc[c].axis];
        th_tensor in[2] = {make(CG_F32, &gc[c].x, -1000, 1000), make(CG_I64, &gc[c].ix, -len, len - 1)}, out;
        th_attrs at;
        th_attrs_init(&at, &cg_op_gather_elements);
        th_set_int(&at, &cg_op_gather_elements, "axis", gc[c].axis);
        ck_assert_msg(th_run(&cg_op_gather_elements, 2, in, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s",
                      g_err);
        const shp *is = &gc[c].ix, *xs = &gc[c].x;
        for (int64_t i = 0; i < numel(is); i++) {
            int64_t idx[CG_MAX_DIMS], f = i, off = 0;
            for (int d = is->nd - 1; d >= 0; d--) idx[d] = f % is->d[d], f /= is->d[d];
            int64_t k = ((int64_t *)in[1].data)[i];
            idx[gc[c].axis] = k < 0 ? k + len : k;
            for (int d = 0; d < xs->nd; d++) off = off * xs->d[d] + idx[d];
            ck_assert(((float *)out.data)[i] == ((float *)in[0].data)[off]);
        }
        th_free_outputs(1, &out);
        /* one index past the end: an error naming it */
        if (numel(is) > 0) {
            ((int64_t *)in[1].data)[numel(is) - 1] = len;
            ck_assert_int_eq(th_run(&cg_op_gather_elements, 2, in, &at, 1, &out, g_err, sizeof g_err), CG_OP_ERROR);
            ck_assert_msg(strstr(g_err, "index"), "%s", g_err);
            th_free_outputs(1, &out);
        }
        free(in[0].data);
        free(in[1].data);
    }
}
END_TEST

/* scatter_elements against torch.Tensor.scatter's formula, applied in index
 * order (so repeated positions: the last wins, or all are summed). */
START_TEST(test_scatter_elements) {
    static const struct {
        shp x, ix;
        int axis;
    } sc[] = {{{1, {5}}, {1, {7}}, 0},
              {{2, {3, 4}}, {2, {3, 6}}, 1},
              {{2, {3, 4}}, {2, {5, 4}}, 0},
              {{3, {2, 3, 5}}, {3, {1, 7, 2}}, 1},
              {{2, {3, 4}}, {2, {0, 4}}, 0}};
    for (size_t c = 0; c < sizeof sc / sizeof sc[0]; c++)
        for (int add = 0; add < 2; add++) {
            const int64_t len = sc[c].x.d[sc[c].axis];
            th_tensor in[3] = {make(CG_I64, &sc[c].x, -1000, 1000), make(CG_I64, &sc[c].ix, -len, len - 1),
                               make(CG_I64, &sc[c].ix, -1000, 1000)},
                      out;
            th_attrs at;
            th_attrs_init(&at, &cg_op_scatter_elements);
            th_set_int(&at, &cg_op_scatter_elements, "axis", sc[c].axis);
            if (add) th_set_string(&at, &cg_op_scatter_elements, "reduction", "add");
            ck_assert_msg(th_run(&cg_op_scatter_elements, 3, in, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s",
                          g_err);
            const shp *is = &sc[c].ix, *xs = &sc[c].x;
            int64_t *ref = malloc((size_t)(numel(xs) + 1) * sizeof *ref);
            memcpy(ref, in[0].data, (size_t)numel(xs) * sizeof *ref);
            for (int64_t i = 0; i < numel(is); i++) {
                int64_t idx[CG_MAX_DIMS], f = i, off = 0;
                for (int d = is->nd - 1; d >= 0; d--) idx[d] = f % is->d[d], f /= is->d[d];
                const int64_t k = ((int64_t *)in[1].data)[i], u = ((int64_t *)in[2].data)[i];
                idx[sc[c].axis] = k < 0 ? k + len : k;
                for (int d = 0; d < xs->nd; d++) off = off * xs->d[d] + idx[d];
                ref[off] = add ? ref[off] + u : u;
            }
            ck_assert_mem_eq(out.data, ref, (size_t)numel(xs) * sizeof *ref);
            free(ref);
            th_free_outputs(1, &out);
            if (numel(is) > 0) { /* one index past the end: an error naming it */
                ((int64_t *)in[1].data)[0] = -len - 1;
                ck_assert_int_eq(th_run(&cg_op_scatter_elements, 3, in, &at, 1, &out, g_err, sizeof g_err),
                                 CG_OP_ERROR);
                ck_assert_msg(strstr(g_err, "index"), "%s", g_err);
                th_free_outputs(1, &out);
            }
            for (int k = 0; k < 3; k++) free(in[k].data);
        }
}
END_TEST

static void expect_fail(const cg_op_def *def, int n, th_tensor *in, const char *needle) {
    th_tensor out[1];
    ck_assert_int_eq(th_infer(def, n, in, NULL, 1, out, g_err, sizeof g_err), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, needle), "%s: '%s' lacks '%s'", def->name, g_err, needle);
}

START_TEST(test_errors) {
    const shp s3 = {1, {3}}, s4 = {1, {4}};
    th_tensor f = make(CG_F32, &s3, 0, 1), l = make(CG_I64, &s3, 0, 1), b = make(CG_BOOL, &s3, 0, 1),
              b4 = make(CG_BOOL, &s4, 0, 1), h = make(CG_F16, &s3, 0, 1);
    th_tensor fl[2] = {f, l}, bb[2] = {b, b}, bf[2] = {b, f}, hh[2] = {h, h}, b34[2] = {b, b4};
    expect_fail(&cg_op_add, 2, fl, "mixed dtypes f32 and i64");
    expect_fail(&cg_op_add, 2, bb, "unsupported dtype bool for add");
    expect_fail(&cg_op_less, 2, fl, "mixed dtypes f32 and i64");
    expect_fail(&cg_op_less, 2, hh, "unsupported dtype f16 for less");
    expect_fail(&cg_op_logical_and, 2, bf, "input 1 (b) must be bool, got f32");
    expect_fail(&cg_op_logical_or, 2, b34, "do not broadcast");
    th_tensor w1[3] = {f, f, f}, w2[3] = {b, f, l}, w3[3] = {b4, f, f};
    expect_fail(&cg_op_where, 3, w1, "input 0 (cond) must be bool, got f32");
    expect_fail(&cg_op_where, 3, w2, "mixed dtypes f32 and i64");
    expect_fail(&cg_op_where, 3, w3, "do not broadcast");
    free(f.data), free(l.data), free(b.data), free(b4.data), free(h.data);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("ops_typed");
    TCase *tc = tcase_create("typed");
    tcase_add_test(tc, test_int_arith);
    tcase_add_test(tc, test_int_corners);
    tcase_add_test(tc, test_compare);
    tcase_add_test(tc, test_logic);
    tcase_add_test(tc, test_where);
    tcase_add_test(tc, test_trilu);
    tcase_add_test(tc, test_expand);
    tcase_add_test(tc, test_cumsum);
    tcase_add_test(tc, test_matmul_integer);
    tcase_add_test(tc, test_gather_elements);
    tcase_add_test(tc, test_scatter_elements);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(suite(), 0); }
