/* Tests of integer arithmetic on every integer type (i8, u8, i16, u16, i32,
 * u32, i64, u64): add, sub, mul, div, pow, maximum, minimum, mod,
 * bit_shift, the bitwise ops, neg, abs, sign, the comparisons and cast.
 * Each op runs through the op harness (inference + CPU kernel) and is
 * compared with a reference computed here on exact 128-bit values from the
 * ops' mathematical definitions (floor division for mod, multiplication by
 * 2^k for shifts, -x - 1 for not), reduced modulo 2^bits into the type's
 * range; corner cases are computed by hand. The OpenCL kernels are compared
 * with the CPU's by `clgraph conform`. */
#include <check.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/plugin.h"
#include "dtype.h"
#include "op_harness.h"
#include "ops_common.h"
#include "test_util.h"

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

static const struct itype {
    cg_op_dtype dt;
    int bits, is_signed;
} TYPES[] = {{CG_I8, 8, 1},   {CG_U8, 8, 0},   {CG_I16, 16, 1}, {CG_U16, 16, 0},
             {CG_I32, 32, 1}, {CG_U32, 32, 0}, {CG_I64, 64, 1}, {CG_U64, 64, 0}};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

static char g_err[512];
static uint64_t g_rng = 0x2545f4914f6cdd1du;

static uint64_t rnd64(void) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return g_rng;
}

static i128 tmin(const struct itype *t) { return t->is_signed ? -((i128)1 << (t->bits - 1)) : 0; }
static i128 tmax(const struct itype *t) {
    return t->is_signed ? ((i128)1 << (t->bits - 1)) - 1 : ((i128)1 << t->bits) - 1;
}

/* v modulo 2^bits, into the type's range. */
static i128 wrap(const struct itype *t, u128 v) {
    const u128 m = (u128)1 << t->bits;
    i128 r = (i128)(v % m);
    return r > tmax(t) ? r - (i128)m : r;
}

/* Element i of a buffer of type t, exactly. */
static i128 get(const struct itype *t, const void *p, int64_t i) {
    switch (t->dt) {
    case CG_I8: return ((const int8_t *)p)[i];
    case CG_U8: return ((const uint8_t *)p)[i];
    case CG_I16: return ((const int16_t *)p)[i];
    case CG_U16: return ((const uint16_t *)p)[i];
    case CG_I32: return ((const int32_t *)p)[i];
    case CG_U32: return ((const uint32_t *)p)[i];
    case CG_I64: return ((const int64_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
    }
}

/* Stores v (in the type's range) little end first. */
static void set(const struct itype *t, void *p, int64_t i, i128 v) {
    const size_t es = (size_t)t->bits / 8;
    u128 u = (u128)v;
    for (size_t k = 0; k < es; k++) ((unsigned char *)p)[(size_t)i * es + k] = (unsigned char)(u >> (8 * k));
}

static th_tensor make(const struct itype *t, int nd, const int64_t *d) {
    th_tensor x;
    memset(&x, 0, sizeof x);
    x.desc.dtype = t->dt;
    x.desc.ndim = nd;
    int64_t n = 1;
    for (int i = 0; i < nd; i++) x.desc.dims[i] = d[i], n *= d[i];
    x.data = malloc((size_t)(n ? n : 1) * 8);
    ck_assert_ptr_nonnull(x.data);
    return x;
}

/* n values: the extremes, 0, 1, -1 (wrapped), then random ones of the
 * whole range and small ones in [-small, small]. */
static void fill(const struct itype *t, th_tensor *x, int64_t n, int small) {
    const i128 special[] = {tmin(t), tmax(t), 0, 1, wrap(t, (u128)-1), 2, tmax(t) - 1};
    for (int64_t i = 0; i < n; i++) {
        i128 v;
        if (i < 7) v = special[i];
        else if (i % 2 || !small) v = wrap(t, rnd64());
        else v = wrap(t, (u128)(i128)((int64_t)(rnd64() % (uint64_t)(2 * small + 1)) - small));
        set(t, x->data, i, v);
    }
}

/* ---- the references ---- */

typedef enum { R_ADD, R_SUB, R_MUL, R_DIV, R_POW, R_MAX, R_MIN, R_MOD, R_FMOD, R_SHL, R_SHR, R_AND, R_OR, R_XOR } rop;

static i128 floor_div(i128 x, i128 y) {
    i128 q = x / y;
    return (x % y != 0 && (x < 0) != (y < 0)) ? q - 1 : q;
}

static i128 ref_pow(const struct itype *t, i128 x, i128 e) {
    if (e < 0) return x == 1 ? 1 : x == -1 ? (e % 2 ? -1 : 1) : 0;
    u128 r = 1;
    for (i128 i = 0; i < e; i++) r *= (u128)x;
    return wrap(t, r);
}

/* The bits of x as an unsigned number of t's width. */
static u128 bits_of(const struct itype *t, i128 x) { return (u128)x & (((u128)1 << t->bits) - 1); }

static i128 ref(rop op, const struct itype *t, i128 x, i128 y) {
    switch (op) {
    case R_ADD: return wrap(t, (u128)x + (u128)y);
    case R_SUB: return wrap(t, (u128)x - (u128)y);
    case R_MUL: return wrap(t, (u128)x * (u128)y);
    case R_DIV: return y == 0 ? 0 : wrap(t, (u128)(x / y)); /* truncating; MIN / -1 wraps */
    case R_POW: return ref_pow(t, x, y);
    case R_MAX: return x > y ? x : y;
    case R_MIN: return x < y ? x : y;
    case R_MOD: return y == 0 ? 0 : x - floor_div(x, y) * y; /* x mod 0 is 0, as numpy */
    case R_FMOD: return y == 0 ? 0 : x - (x / y) * y;
    case R_SHL: return y < 0 || y >= t->bits ? 0 : wrap(t, (u128)x * ((u128)1 << y));
    case R_SHR:
        if (y < 0 || y >= t->bits) return x < 0 ? -1 : 0;
        return floor_div(x, (i128)1 << y);
    case R_AND: return wrap(t, bits_of(t, x) & bits_of(t, y));
    case R_OR: return wrap(t, bits_of(t, x) | bits_of(t, y));
    default: return wrap(t, bits_of(t, x) ^ bits_of(t, y));
    }
}

static void print128(char *b, size_t n, i128 v) {
    snprintf(b, n, "%s%llu%019llu", v < 0 ? "-" : "", (unsigned long long)((v < 0 ? -(u128)v : (u128)v) / (u128)1e19),
             (unsigned long long)((v < 0 ? -(u128)v : (u128)v) % (u128)1e19));
}

/* op over a [17] and b [3, 1] broadcast to [3, 17] (and the other way
 * round), checked element by element. */
static void check_binary(const cg_op_def *def, const th_attrs *at, rop op, const struct itype *t, int small) {
    static const int64_t da[2][2] = {{17, 0}, {3, 1}}, db[2][2] = {{3, 1}, {17, 0}};
    static const int na[2] = {1, 2}, nb[2] = {2, 1};
    for (int k = 0; k < 2; k++) {
        th_tensor in[2] = {make(t, na[k], da[k]), make(t, nb[k], db[k])}, out;
        fill(t, &in[0], k ? 3 : 17, 0);
        fill(t, &in[1], k ? 17 : 3, small);
        ck_assert_msg(th_run(def, 2, in, at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s: %s", def->name, g_err);
        ck_assert_int_eq(out.desc.dtype, t->dt);
        ck_assert_int_eq(out.desc.ndim, 2);
        for (int64_t r = 0; r < 3; r++)
            for (int64_t c = 0; c < 17; c++) {
                i128 x = get(t, in[0].data, k ? r : c), y = get(t, in[1].data, k ? c : r);
                i128 want = ref(op, t, x, y), got = get(t, out.data, r * 17 + c);
                char sx[48], sy[48], sg[48], sw[48];
                print128(sx, sizeof sx, x), print128(sy, sizeof sy, y), print128(sg, sizeof sg, got);
                print128(sw, sizeof sw, want);
                ck_assert_msg(got == want, "%s %s: %s, %s gave %s, expected %s", def->name, cg_dtype_name(t->dt), sx,
                              sy, sg, sw);
            }
        th_free_outputs(1, &out);
        free(in[0].data);
        free(in[1].data);
    }
}

START_TEST(test_arith) {
    const struct {
        const cg_op_def *def;
        rop op;
        int small; /* divisors and exponents small */
    } ops[] = {{&cg_op_add, R_ADD, 0},        {&cg_op_sub, R_SUB, 0},         {&cg_op_mul, R_MUL, 0},
               {&cg_op_div, R_DIV, 5},        {&cg_op_pow, R_POW, 0},         {&cg_op_maximum, R_MAX, 0},
               {&cg_op_minimum, R_MIN, 0},    {&cg_op_bitwise_and, R_AND, 0}, {&cg_op_bitwise_or, R_OR, 0},
               {&cg_op_bitwise_xor, R_XOR, 0}};
    for (size_t i = 0; i < N_TYPES; i++)
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
            if (ops[k].op == R_POW) continue; /* below: exponents must stay small */
            check_binary(ops[k].def, NULL, ops[k].op, &TYPES[i], ops[k].small);
            if (ops[k].op == R_DIV) check_binary(ops[k].def, NULL, ops[k].op, &TYPES[i], 0);
        }
}
END_TEST

/* pow with exponents in [-3, 40] (bases anything, small ones included). */
START_TEST(test_pow) {
    for (size_t i = 0; i < N_TYPES; i++) {
        const struct itype *t = &TYPES[i];
        const int64_t d17 = 17;
        th_tensor in[2] = {make(t, 1, &d17), make(t, 1, &d17)}, out;
        fill(t, &in[0], 17, 4);
        for (int64_t e = 0; e < 17; e++) set(t, in[1].data, e, t->is_signed ? e * 43 % 44 - 3 : e * 7 % 41);
        ck_assert_msg(th_run(&cg_op_pow, 2, in, NULL, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
        for (int64_t e = 0; e < 17; e++) {
            i128 want = ref(R_POW, t, get(t, in[0].data, e), get(t, in[1].data, e));
            ck_assert_msg(get(t, out.data, e) == want, "pow %s element %lld", cg_dtype_name(t->dt), (long long)e);
        }
        th_free_outputs(1, &out);
        free(in[0].data);
        free(in[1].data);
    }
}
END_TEST

START_TEST(test_mod) {
    th_attrs at;
    for (int f = 0; f < 2; f++) {
        th_attrs_init(&at, &cg_op_mod);
        th_set_int(&at, &cg_op_mod, "fmod", f);
        for (size_t i = 0; i < N_TYPES; i++) {
            check_binary(&cg_op_mod, &at, f ? R_FMOD : R_MOD, &TYPES[i], 7);
            check_binary(&cg_op_mod, &at, f ? R_FMOD : R_MOD, &TYPES[i], 0);
        }
    }
}
END_TEST

START_TEST(test_shift) {
    th_attrs at;
    for (int r = 0; r < 2; r++) {
        th_attrs_init(&at, &cg_op_bit_shift);
        th_set_string(&at, &cg_op_bit_shift, "direction", r ? "right" : "left");
        for (size_t i = 0; i < N_TYPES; i++) {
            /* amounts from -bits to 2 bits: every rule of the range */
            check_binary(&cg_op_bit_shift, &at, r ? R_SHR : R_SHL, &TYPES[i], TYPES[i].bits * 2);
        }
    }
}
END_TEST

/* neg, abs, sign and bitwise_not over every type. */
START_TEST(test_unary) {
    const cg_op_def *defs[] = {&cg_op_neg, &cg_op_abs, &cg_op_sign, &cg_op_bitwise_not};
    for (size_t i = 0; i < N_TYPES; i++)
        for (int k = 0; k < 4; k++) {
            const struct itype *t = &TYPES[i];
            const int64_t n = 40;
            th_tensor in = make(t, 1, &n), out;
            fill(t, &in, n, 3);
            ck_assert_msg(th_run(defs[k], 1, &in, NULL, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
            for (int64_t e = 0; e < n; e++) {
                i128 x = get(t, in.data, e), want;
                if (k == 0) want = wrap(t, (u128)-x);
                else if (k == 1) want = wrap(t, (u128)(x < 0 ? -x : x));
                else if (k == 2) want = (x > 0) - (x < 0);
                else want = wrap(t, (u128)(-x - 1));
                ck_assert_msg(get(t, out.data, e) == want, "%s %s element %lld", defs[k]->name, cg_dtype_name(t->dt),
                              (long long)e);
            }
            th_free_outputs(1, &out);
            free(in.data);
        }
}
END_TEST

/* Hand-computed values: Python's % and C's fmod on signs, shifts past the
 * width, the extremes. */
START_TEST(test_corners) {
    const struct itype *i8 = &TYPES[0], *u64 = &TYPES[7];
    const int64_t d6 = 6;
    th_tensor in[2] = {make(i8, 1, &d6), make(i8, 1, &d6)}, out;
    const int8_t x[6] = {7, -7, 7, -7, -128, 5}, y[6] = {3, 3, -3, -3, -1, 0};
    const int8_t m0[6] = {1, 2, -2, -1, 0, 0}, m1[6] = {1, -1, 1, -1, 0, 0};
    memcpy(in[0].data, x, 6), memcpy(in[1].data, y, 6);
    th_attrs at;
    th_attrs_init(&at, &cg_op_mod);
    ck_assert_int_eq(th_run(&cg_op_mod, 2, in, &at, 1, &out, g_err, sizeof g_err), CG_OP_OK);
    ck_assert_mem_eq(out.data, m0, 6);
    th_free_outputs(1, &out);
    th_set_int(&at, &cg_op_mod, "fmod", 1);
    ck_assert_int_eq(th_run(&cg_op_mod, 2, in, &at, 1, &out, g_err, sizeof g_err), CG_OP_OK);
    ck_assert_mem_eq(out.data, m1, 6);
    th_free_outputs(1, &out);
    /* -128 >> 9, -128 >> -1, 64 << 1, -1 >> 7, 1 << 7, 3 >> 8 */
    const int8_t sx[6] = {-128, -128, 64, -1, 1, 3}, sy[6] = {9, -1, 1, 7, 7, 8};
    const int8_t shr[6] = {-1, -1, 32, -1, 0, 0}, shl[6] = {0, 0, -128, -128, -128, 0};
    memcpy(in[0].data, sx, 6), memcpy(in[1].data, sy, 6);
    th_attrs_init(&at, &cg_op_bit_shift);
    th_set_string(&at, &cg_op_bit_shift, "direction", "right");
    ck_assert_int_eq(th_run(&cg_op_bit_shift, 2, in, &at, 1, &out, g_err, sizeof g_err), CG_OP_OK);
    ck_assert_mem_eq(out.data, shr, 6);
    th_free_outputs(1, &out);
    th_set_string(&at, &cg_op_bit_shift, "direction", "left");
    ck_assert_int_eq(th_run(&cg_op_bit_shift, 2, in, &at, 1, &out, g_err, sizeof g_err), CG_OP_OK);
    ck_assert_mem_eq(out.data, shl, 6);
    th_free_outputs(1, &out);
    free(in[0].data), free(in[1].data);
    /* u64: 2^64 - 1 / 2, (2^63) mod 10, 2^63 > 1 */
    const int64_t d3 = 3;
    th_tensor u[2] = {make(u64, 1, &d3), make(u64, 1, &d3)};
    const uint64_t ux[3] = {UINT64_MAX, UINT64_C(1) << 63, 5}, uy[3] = {2, 10, 0};
    const uint64_t q[3] = {UINT64_C(9223372036854775807), UINT64_C(922337203685477580), 0}, r[3] = {1, 8, 0};
    memcpy(u[0].data, ux, 24), memcpy(u[1].data, uy, 24);
    ck_assert_int_eq(th_run(&cg_op_div, 2, u, NULL, 1, &out, g_err, sizeof g_err), CG_OP_OK);
    ck_assert_mem_eq(out.data, q, 24);
    th_free_outputs(1, &out);
    ck_assert_int_eq(th_run(&cg_op_mod, 2, u, NULL, 1, &out, g_err, sizeof g_err), CG_OP_OK);
    ck_assert_mem_eq(out.data, r, 24);
    th_free_outputs(1, &out);
    ck_assert_int_eq(th_run(&cg_op_greater, 2, u, NULL, 1, &out, g_err, sizeof g_err), CG_OP_OK);
    ck_assert_mem_eq(out.data, "\1\1\1", 3);
    th_free_outputs(1, &out);
    free(u[0].data), free(u[1].data);
}
END_TEST

/* The comparisons order values as numbers (u64's top half above int64's). */
START_TEST(test_compare) {
    const cg_op_def *defs[] = {&cg_op_equal, &cg_op_less, &cg_op_less_equal, &cg_op_greater, &cg_op_greater_equal};
    for (size_t i = 0; i < N_TYPES; i++)
        for (int k = 0; k < 5; k++) {
            const struct itype *t = &TYPES[i];
            const int64_t n = 30;
            th_tensor in[2] = {make(t, 1, &n), make(t, 1, &n)}, out;
            fill(t, &in[0], n, 2);
            fill(t, &in[1], n, 2);
            ck_assert_msg(th_run(defs[k], 2, in, NULL, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
            ck_assert_int_eq(out.desc.dtype, CG_BOOL);
            for (int64_t e = 0; e < n; e++) {
                i128 x = get(t, in[0].data, e), y = get(t, in[1].data, e);
                int want = k == 0 ? x == y : k == 1 ? x < y : k == 2 ? x <= y : k == 3 ? x > y : x >= y;
                ck_assert_msg(((uint8_t *)out.data)[e] == want, "%s %s element %lld", defs[k]->name,
                              cg_dtype_name(t->dt), (long long)e);
            }
            th_free_outputs(1, &out);
            free(in[0].data), free(in[1].data);
        }
}
END_TEST

/* cast between every pair of integer types (the low bits), to and from f32
 * (one rounding of the exact value; truncation and saturation). */
START_TEST(test_cast) {
    th_attrs at;
    const int64_t n = 24;
    for (size_t i = 0; i < N_TYPES; i++) {
        const struct itype *f = &TYPES[i];
        th_tensor in = make(f, 1, &n), out;
        fill(f, &in, n, 300);
        for (size_t j = 0; j <= N_TYPES; j++) {
            const cg_op_dtype to = j < N_TYPES ? TYPES[j].dt : CG_F32;
            th_attrs_init(&at, &cg_op_cast);
            th_set_string(&at, &cg_op_cast, "to", cg_dtype_name((cg_dtype)to));
            ck_assert_msg(th_run(&cg_op_cast, 1, &in, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
            for (int64_t e = 0; e < n; e++) {
                i128 x = get(f, in.data, e);
                if (j == N_TYPES)
                    ck_assert_msg(((float *)out.data)[e] == (float)x, "cast %s to f32 element %lld",
                                  cg_dtype_name(f->dt), (long long)e);
                else
                    ck_assert_msg(get(&TYPES[j], out.data, e) == wrap(&TYPES[j], (u128)x), "cast %s to %s element %lld",
                                  cg_dtype_name(f->dt), cg_dtype_name(to), (long long)e);
            }
            th_free_outputs(1, &out);
        }
        free(in.data);
    }
    /* f32 to each type: NaN 0, truncation, saturation past both ends */
    const float v[8] = {NAN, -2.75f, 2.75f, 1e30f, -1e30f, 300.5f, -40000.0f, 1.8446743e19f};
    th_tensor fin = {{CG_F32, 1, {8}}, (void *)v}, out;
    for (size_t j = 0; j < N_TYPES; j++) {
        const struct itype *t = &TYPES[j];
        th_attrs_init(&at, &cg_op_cast);
        th_set_string(&at, &cg_op_cast, "to", cg_dtype_name((cg_dtype)t->dt));
        ck_assert_int_eq(th_run(&cg_op_cast, 1, &fin, &at, 1, &out, g_err, sizeof g_err), CG_OP_OK);
        for (int e = 0; e < 8; e++) {
            i128 want = 0;
            if (!isnan(v[e])) {
                double tr = trunc((double)v[e]);
                want = tr >= (double)tmax(t) ? tmax(t) : tr <= (double)tmin(t) ? tmin(t) : (i128)tr;
            }
            ck_assert_msg(get(t, out.data, e) == want, "cast f32 to %s element %d", cg_dtype_name(t->dt), e);
        }
        th_free_outputs(1, &out);
    }
}
END_TEST

static void expect_fail(const cg_op_def *def, int n, th_tensor *in, const th_attrs *at, const char *needle) {
    th_tensor out[1];
    ck_assert_int_eq(th_infer(def, n, in, at, 1, out, g_err, sizeof g_err), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, needle), "%s: '%s' lacks '%s'", def->name, g_err, needle);
}

START_TEST(test_errors) {
    const int64_t d3 = 3;
    th_tensor u = make(&TYPES[3], 1, &d3), i = make(&TYPES[2], 1, &d3);
    th_tensor f = {{CG_F32, 1, {3}}, u.data}, b = {{CG_BOOL, 1, {3}}, u.data};
    th_tensor ui[2] = {u, i}, ff[2] = {f, f}, bb[2] = {b, b};
    expect_fail(&cg_op_add, 2, ui, NULL, "mixed dtypes u16 and i16");
    expect_fail(&cg_op_bitwise_and, 2, ff, NULL, "unsupported dtype f32 for bitwise_and");
    expect_fail(&cg_op_mod, 2, bb, NULL, "unsupported dtype bool for mod");
    expect_fail(&cg_op_bitwise_not, 1, &f, NULL, "must be i8, u8, i16, u16, i32, u32, i64 or u64, got f32");
    th_attrs at;
    th_attrs_init(&at, &cg_op_mod);
    th_set_int(&at, &cg_op_mod, "fmod", 2);
    th_tensor uu[2] = {u, u};
    expect_fail(&cg_op_mod, 2, uu, &at, "attribute 'fmod' must be 0 or 1, got 2");
    th_attrs_init(&at, &cg_op_bit_shift);
    th_set_string(&at, &cg_op_bit_shift, "direction", "LEFT");
    expect_fail(&cg_op_bit_shift, 2, uu, &at, "attribute 'direction' must be \"left\" or \"right\", got \"LEFT\"");
    free(u.data), free(i.data);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("ops_int");
    TCase *tc = tcase_create("int");
    tcase_add_test(tc, test_arith);
    tcase_add_test(tc, test_pow);
    tcase_add_test(tc, test_mod);
    tcase_add_test(tc, test_shift);
    tcase_add_test(tc, test_unary);
    tcase_add_test(tc, test_corners);
    tcase_add_test(tc, test_compare);
    tcase_add_test(tc, test_cast);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(suite(), 0); }
