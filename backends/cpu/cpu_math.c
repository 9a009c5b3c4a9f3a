#include "cpu_math.h"
#include "settings.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Vector helpers are always inlined: the arguments of a call that stays a
 * call may be passed through memory. */
#define INL inline __attribute__((always_inline))

/* Each ISA works on vectors of its own register width, W floats (defined
 * around each instantiation of MATH_BODY below): 16-float vectors on AVX2 or
 * SSE2 are kept in memory between operations, about ten times slower. The
 * element-wise functions give the same results at any width. The sums run in
 * SUM_LANES partial sums on every ISA, SUM_LANES / W vectors of them, and are
 * added in one fixed order at the end, so they agree too. The loops over
 * those vectors are unrolled so that they stay in registers rather than an
 * array in memory. */
#define SUM_LANES 16
#define SUM_CHUNKS(k) _Pragma("GCC unroll 4") for (int k = 0; k < SUM_LANES / W; k++)

#define CAT(a, b) CAT_(a, b)
#define CAT_(a, b) a##b
#define VECTOR_TYPES(N)                                         \
    typedef float vf_##N __attribute__((vector_size(N * 4)));   \
    typedef int32_t vi_##N __attribute__((vector_size(N * 4))); \
    typedef double vd_##N __attribute__((vector_size(N * 4)));  \
    typedef double vdd_##N __attribute__((vector_size(N * 8))); \
    typedef int64_t vl_##N __attribute__((vector_size(N * 4)));
VECTOR_TYPES(16)
VECTOR_TYPES(8)
VECTOR_TYPES(4)
/* W floats, W ints, W / 2 doubles (a register) and W doubles (two), W / 2
 * 64-bit ints (the doubles' comparison masks). */
#define vf CAT(vf_, W)
#define vi CAT(vi_, W)
#define vd CAT(vd_, W)
#define vdd CAT(vdd_, W)
#define vl CAT(vl_, W)
/* Shuffle indices of the low and high halves of W lanes (together, the two
 * halves joined). */
#define LO_HALF CAT(LO_HALF_, W)
#define HI_HALF CAT(HI_HALF_, W)
#define LO_HALF_16 0, 1, 2, 3, 4, 5, 6, 7
#define HI_HALF_16 8, 9, 10, 11, 12, 13, 14, 15
#define LO_HALF_8 0, 1, 2, 3
#define HI_HALF_8 4, 5, 6, 7
#define LO_HALF_4 0, 1
#define HI_HALF_4 2, 3

/* exp's vector code covers [EXP_LO, EXP_HI]: below, exp(x) rounds to +0
 * (it is under half the smallest subnormal); above, y * 2^n could overflow,
 * and libm takes over. */
#define EXP_LO (-104.0f)
#define EXP_HI 88.0f
#define TANH_SMALL 0.625f

/* erf in double precision, rounded to float once: within 1 ulp of the
 * correctly rounded result and of libm's erff over every float
 * (tests/backends/test_cpu_math.c samples it). |x| < ERF_SPLIT: x A(t), t
 * = (x^2 - centre) * scale in [-1, 1]; above, erf(|x|) = B(t), t = (|x| -
 * centre) * scale, |x| capped at 4, where erf is 1 - 1.5e-8 and rounds to
 * 1 as it does for every larger x. A and B are Chebyshev fits of degree 12
 * (erf(x) / x over x^2 in [0, 2.25^2] within 6.4e-11 relatively, erf over
 * [2.25, 4] within 1.2e-11) written in powers of t; each array holds the
 * coefficients, then the centre and scale of its t. */
#define ERF_SPLIT 2.25
#define ERF_HI 4.0
#define ERF_DEG 12
static const double erf_a[] = {0x1.39f1b61df8079p-1,  -0x1.0bfaf24341f02p-2,
                               0x1.1d9fcbb618791p-3,  -0x1.17b4c909c38c8p-4,
                               0x1.e2002b6af4adbp-6,  -0x1.6c6a47f976094p-7,
                               0x1.e713302c32a22p-9,  -0x1.228e080945bcbp-10,
                               0x1.38241c511e712p-12, -0x1.2e8108c9c2f53p-14,
                               0x1.0e71c4a87e2bcp-16, -0x1.f3c50c0471b83p-19,
                               0x1.7a9a7f51ee630p-21, 0x1.44p+1,
                               0x1.948b0fcd6e9e0p-2};
static const double erf_b[] = {0x1.fffeb3eba8a4bp-1,   0x1.db54cfea9b9b8p-15,
                               -0x1.44eea89da5626p-13, 0x1.18ff65c8478e2p-12,
                               -0x1.56b930e180f3ap-12, 0x1.3651eedb4af10p-12,
                               -0x1.a9a11ec5a6398p-13, 0x1.b6a9884888567p-14,
                               -0x1.41ad69c520a60p-15, 0x1.04dc422e8a4fep-17,
                               0x1.3e17c6f744dd4p-20,  -0x1.acc51926a7c71p-20,
                               0x1.d2f069ae4ae02p-22,  0x1.9p+1,
                               0x1.2492492492492p+0};
_Static_assert(sizeof erf_a == (ERF_DEG + 3) * sizeof(double) && sizeof erf_b == sizeof erf_a,
               "erf: ERF_DEG + 1 coefficients, then centre and scale");

/* libm for the lanes the vector exp does not cover (x > EXP_HI, NaN): out of
 * line, so that the hot loop keeps its vectors in registers. */
static __attribute__((noinline)) void exp_fix(const float *x, float *r, int n) {
    for (int j = 0; j < n; j++)
        if (!(x[j] <= EXP_HI)) r[j] = expf(x[j]);
}

/* The partial sums added pairwise (lane j + lane j + 8, ...), the same order
 * on every ISA. */
static float fold_f(float *s) {
    for (int w = SUM_LANES / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++) s[j] += s[j + w];
    return s[0];
}

/* The element functions, instantiated once per target below: inline so that
 * each copy is compiled for its caller's ISA. */
#define MATH_BODY(SUF)                                                                                            \
    static INL vf splat_##SUF(float c) { return (vf){0} + c; }                                                    \
    static INL vf select_##SUF(vi m, vf a, vf b) { return (vf)((m & (vi)a) | (~m & (vi)b)); }                     \
    static INL vf load_##SUF(const float *p) {                                                                    \
        vf v;                                                                                                     \
        memcpy(&v, p, sizeof v);                                                                                  \
        return v;                                                                                                 \
    }                                                                                                             \
    static INL void store_##SUF(float *p, vf v) { memcpy(p, &v, sizeof v); }                                      \
    static INL void store_d_##SUF(double *p, vd v) { memcpy(p, &v, sizeof v); }                                   \
    /* float <-> double a whole vector at a time, split or joined after:   */                                     \
    /* GCC makes one conversion per register of this, while converting    */                                      \
    /* halves may go a lane or two at a time.                             */                                      \
    static INL void widen_##SUF(vf v, vd *lo, vd *hi) {                                                           \
        vdd d = __builtin_convertvector(v, vdd);                                                                  \
        *lo = __builtin_shufflevector(d, d, LO_HALF);                                                             \
        *hi = __builtin_shufflevector(d, d, HI_HALF);                                                             \
    }                                                                                                             \
    static INL vf narrow_##SUF(vd lo, vd hi) {                                                                    \
        vdd d = __builtin_shufflevector(lo, hi, LO_HALF, HI_HALF);                                                \
        return __builtin_convertvector(d, vf);                                                                    \
    }                                                                                                             \
    /* Any lane of a comparison mask set? At register width GCC reduces  */                                       \
    /* the lanes with shuffles, in registers.                            */                                       \
    static INL int any_##SUF(vi m) {                                                                              \
        int32_t r = 0;                                                                                            \
        for (int j = 0; j < W; j++) r |= m[j];                                                                    \
        return r != 0;                                                                                            \
    }                                                                                                             \
    /* exp for x in [EXP_LO, EXP_HI]: Cody-Waite reduction by ln 2 (the high part    */                           \
    /* has 9 significant bits, so n * C1 is exact) and Cephes' degree-6 polynomial.  */                           \
    static INL vf exp_core_##SUF(vf x) {                                                                          \
        const vf magic = splat_##SUF(12582912.0f); /* 1.5 * 2^23: rounds to integer */                            \
        vf t = x * splat_##SUF(1.44269504088896341f) + magic;                                                     \
        vf n = t - magic;                                                                                         \
        vi ni = (vi)t - (vi)magic;                                                                                \
        vf r = x - n * splat_##SUF(0.693359375f);                                                                 \
        r = r - n * splat_##SUF(-2.12194440e-4f);                                                                 \
        vf z = r * r;                                                                                             \
        vf p = splat_##SUF(1.9875691500e-4f);                                                                     \
        p = p * r + splat_##SUF(1.3981999507e-3f);                                                                \
        p = p * r + splat_##SUF(8.3334519073e-3f);                                                                \
        p = p * r + splat_##SUF(4.1665795894e-2f);                                                                \
        p = p * r + splat_##SUF(1.6666665459e-1f);                                                                \
        p = p * r + splat_##SUF(5.0000001201e-1f);                                                                \
        vf y = p * z + r + splat_##SUF(1.0f);                                                                     \
        /* 2^n is a normal float for n >= -126; a result below 2^-62 is scaled   */                               \
        /* in two steps so that only the last one rounds (into subnormals).      */                               \
        vi low = ni < -62;                                                                                        \
        vf scale = (vf)((ni + 127 + (low & 64)) << 23);                                                           \
        vf post = select_##SUF(low, splat_##SUF(0x1p-64f), splat_##SUF(1.0f));                                    \
        return y * scale * post;                                                                                  \
    }                                                                                                             \
    /* exp of any x: libm's answer where the vector code does not reach     */                                    \
    /* (x > EXP_HI, NaN), +0 below EXP_LO.                                    */                                  \
    static INL vf exp_any_##SUF(vf x) {                                                                           \
        vi bad = ~(x <= splat_##SUF(EXP_HI)); /* also NaN */                                                      \
        vi zero = x < splat_##SUF(EXP_LO);                                                                        \
        vf r = exp_core_##SUF(select_##SUF(bad | zero, splat_##SUF(0.0f), x));                                    \
        r = select_##SUF(zero, splat_##SUF(0.0f), r);                                                             \
        if (any_##SUF(bad)) {                                                                                     \
            float xa[W], ra[W];                                                                                   \
            store_##SUF(xa, x);                                                                                   \
            store_##SUF(ra, r);                                                                                   \
            exp_fix(xa, ra, W);                                                                                   \
            r = load_##SUF(ra);                                                                                   \
        }                                                                                                         \
        return r;                                                                                                 \
    }                                                                                                             \
    static INL vf tanh_core_##SUF(vf x) {                                                                         \
        vi sign = (vi)x & ((vi){0} + INT32_MIN);                                                                  \
        vf ax = (vf)((vi)x & ((vi){0} + 0x7fffffff));                                                             \
        /* |x| < 0.625: Cephes' odd polynomial x + x^3 P(x^2). */                                                 \
        vf z = x * x;                                                                                             \
        vf p = splat_##SUF(-5.70498872745e-3f);                                                                   \
        p = p * z + splat_##SUF(2.06390887954e-2f);                                                               \
        p = p * z + splat_##SUF(-5.37397155531e-2f);                                                              \
        p = p * z + splat_##SUF(1.33314422036e-1f);                                                               \
        p = p * z + splat_##SUF(-3.33332819422e-1f);                                                              \
        vf small = p * z * x + x;                                                                                 \
        /* Otherwise 1 - 2 / (exp(2|x|) + 1), exp's argument capped where the      */                             \
        /* quotient is below half an ulp of 1.                                     */                             \
        vf a2 = ax + ax;                                                                                          \
        vf e = exp_core_##SUF(select_##SUF(a2 < splat_##SUF(EXP_HI), a2, splat_##SUF(EXP_HI)));                   \
        vf big = splat_##SUF(1.0f) - splat_##SUF(2.0f) / (e + splat_##SUF(1.0f));                                 \
        vf y = select_##SUF(ax < splat_##SUF(TANH_SMALL), small, big);                                            \
        y = (vf)((vi)y | sign);            /* tanh(-0) = -0 */                                                    \
        return select_##SUF(x == x, y, x); /* NaN in, NaN out */                                                  \
    }                                                                                                             \
    /* Loads c <= W floats, the rest of the vector set to fill; full vectors */                                   \
    /* go straight to memory.                                             */                                      \
    /* Element loops rather than memcpy, whose variable length makes it a */                                      \
    /* library call (a third of a short softmax row's scaling).           */                                      \
    static INL vf load_part_##SUF(const float *p, size_t c, float fill) {                                         \
        if (c == W) return load_##SUF(p);                                                                         \
        float buf[W];                                                                                             \
        for (size_t j = 0; j < W; j++) buf[j] = j < c ? p[j] : fill;                                              \
        return load_##SUF(buf);                                                                                   \
    }                                                                                                             \
    static INL void store_part_##SUF(float *p, vf v, size_t c) {                                                  \
        if (c == W) {                                                                                             \
            store_##SUF(p, v);                                                                                    \
            return;                                                                                               \
        }                                                                                                         \
        float buf[W];                                                                                             \
        store_##SUF(buf, v);                                                                                      \
        for (size_t j = 0; j < W; j++)                                                                            \
            if (j < c) p[j] = buf[j];                                                                             \
    }                                                                                                             \
    /* Applies F to n < W elements through a padded vector, so tails get the    */                                \
    /* same arithmetic as the rest.                                             */                                \
    static void vexp_##SUF(const float *x, float *y, size_t n) {                                                  \
        for (size_t i = 0; i < n; i += W) {                                                                       \
            size_t c = n - i < W ? n - i : W;                                                                     \
            store_part_##SUF(y + i, exp_any_##SUF(load_part_##SUF(x + i, c, 0.0f)), c);                           \
        }                                                                                                         \
    }                                                                                                             \
    static void vtanh_##SUF(const float *x, float *y, size_t n) {                                                 \
        for (size_t i = 0; i < n; i += W) {                                                                       \
            size_t c = n - i < W ? n - i : W;                                                                     \
            store_part_##SUF(y + i, tanh_core_##SUF(load_part_##SUF(x + i, c, 0.0f)), c);                         \
        }                                                                                                         \
    }                                                                                                             \
    static INL vd splat_d_##SUF(double c) { return (vd){0} + c; }                                                 \
    static INL vd select_d_##SUF(vl m, vd a, vd b) { return (vd)((m & (vl)a) | (~m & (vl)b)); }                   \
    /* Coefficient k of each lane's polynomial: A's or B's by `small`, or   */                                    \
    /* A's everywhere when no lane is mixed in (constants, no blends).       */                                   \
    static INL vd erf_coef_##SUF(int k, vl small, int mixed) {                                                    \
        return mixed ? select_d_##SUF(small, splat_d_##SUF(erf_a[k]), splat_d_##SUF(erf_b[k]))                    \
                     : splat_d_##SUF(erf_a[k]);                                                                   \
    }                                                                                                             \
    /* erf of doubles (see ERF_SPLIT); NaN stays NaN, erf(+-inf) = +-1.     */                                    \
    /* Without `mixed` every lane must be under ERF_SPLIT. The polynomial   */                                    \
    /* runs in Estrin's scheme: four dependent steps instead of Horner's    */                                    \
    /* twelve, whose latency bound the loop.                                */                                    \
    static INL vd erf_d_##SUF(vd x, int mixed) {                                                                  \
        const vd ax = (vd)((vl)x & ((vl){0} + INT64_MAX));                                                        \
        const vd a = select_d_##SUF(ax > splat_d_##SUF(ERF_HI), splat_d_##SUF(ERF_HI), ax);                       \
        const vl small = a < splat_d_##SUF(ERF_SPLIT);                                                            \
        const vd u = mixed ? select_d_##SUF(small, x * x, a) : x * x;                                             \
        const vd t = (u - erf_coef_##SUF(ERF_DEG + 1, small, mixed)) * erf_coef_##SUF(ERF_DEG + 2, small, mixed); \
        const vd t2 = t * t, t4 = t2 * t2, t8 = t4 * t4;                                                          \
        vd q[ERF_DEG / 2 + 1];                                                                                    \
        _Pragma("GCC unroll 8") for (int k = 0; k < ERF_DEG / 2; k++) q[k] =                                      \
            erf_coef_##SUF(2 * k, small, mixed) + erf_coef_##SUF(2 * k + 1, small, mixed) * t;                    \
        q[ERF_DEG / 2] = erf_coef_##SUF(ERF_DEG, small, mixed);                                                   \
        const vd r0 = q[0] + q[1] * t2, r1 = q[2] + q[3] * t2, r2 = q[4] + q[5] * t2;                             \
        const vd p = (r0 + r1 * t4) + (r2 + q[6] * t4) * t8;                                                      \
        if (!mixed) return x * p;                                                                                 \
        const vd big = (vd)((vl)p | ((vl)x & ((vl){0} + INT64_MIN)));                                             \
        return select_d_##SUF(small, x * p, big);                                                                 \
    }                                                                                                             \
    static void verf_##SUF(const float *x, float *y, size_t n) {                                                  \
        for (size_t i = 0; i < n; i += W) {                                                                       \
            size_t c = n - i < W ? n - i : W;                                                                     \
            vf v = load_part_##SUF(x + i, c, 0.0f);                                                               \
            vi far = ~((vf)((vi)v & ((vi){0} + 0x7fffffff)) < splat_##SUF((float)ERF_SPLIT)); /* also NaN */      \
            vd lo, hi;                                                                                            \
            widen_##SUF(v, &lo, &hi);                                                                             \
            if (any_##SUF(far)) {                                                                                 \
                lo = erf_d_##SUF(lo, 1);                                                                          \
                hi = erf_d_##SUF(hi, 1);                                                                          \
            } else {                                                                                              \
                lo = erf_d_##SUF(lo, 0);                                                                          \
                hi = erf_d_##SUF(hi, 0);                                                                          \
            }                                                                                                     \
            store_part_##SUF(y + i, narrow_##SUF(lo, hi), c);                                                     \
        }                                                                                                         \
    }                                                                                                             \
    /* e = exp(-|x|) (never overflows); x >= 0: 1 / (1 + e), else e / (1 + e). */                                 \
    static void vsigmoid_##SUF(const float *x, float *y, size_t n) {                                              \
        for (size_t i = 0; i < n; i += W) {                                                                       \
            size_t c = n - i < W ? n - i : W;                                                                     \
            vf v = load_part_##SUF(x + i, c, 0.0f);                                                               \
            vf e = exp_any_##SUF((vf)((vi)v | ((vi){0} + INT32_MIN)));                                            \
            vf r = select_##SUF(v >= splat_##SUF(0.0f), splat_##SUF(1.0f), e) / (e + splat_##SUF(1.0f));          \
            store_part_##SUF(y + i, select_##SUF(v == v, r, v), c);                                               \
        }                                                                                                         \
    }                                                                                                             \
    /* exp(a + b), a + b = x - shift split exactly into d + err (TwoSum),  */                                     \
    /* so the result is exp of the exact difference to first order. `cut`  */                                     \
    /* drops terms under 2^-125: they cannot change a double sum that is   */                                     \
    /* at least 1, and dropping them avoids subnormal arithmetic, which    */                                     \
    /* costs a microcode assist per lane.                                  */                                     \
    static INL vf exp_diff_##SUF(vf a, vf b, int cut) {                                                           \
        vf d = a + b, bb = d - a;                                                                                 \
        vf err = (a - (d - bb)) + (b - bb);                                                                       \
        if (cut) d = select_##SUF(d < splat_##SUF(-87.0f), splat_##SUF(-INFINITY), d);                            \
        vf e = exp_any_##SUF(d);                                                                                  \
        /* e + e * err without subnormal intermediates (a third of a       */                                     \
        /* batch-64 step's exp pass): an err under 2^-25 cannot move e's   */                                     \
        /* rounding, so it is dropped, and an e under 2^-60 is scaled by   */                                     \
        /* 2^64 around the correction (exact: powers of two). err is NaN   */                                     \
        /* where d is infinite; exp is exact (0, inf) there.               */                                     \
        vi tiny = e < splat_##SUF(0x1p-60f);                                                                      \
        vf es = e * select_##SUF(tiny, splat_##SUF(0x1p64f), splat_##SUF(1.0f));                                  \
        vf errs =                                                                                                 \
            select_##SUF((vf)((vi)err & ((vi){0} + 0x7fffffff)) < splat_##SUF(0x1p-25f), splat_##SUF(0.0f), err); \
        vf ec = (es + es * errs) * select_##SUF(tiny, splat_##SUF(0x1p-64f), splat_##SUF(1.0f));                  \
        return select_##SUF(err == err, ec, e);                                                                   \
    }                                                                                                             \
    /* exp(x - shift) for one group of SUM_LANES elements, added into acc, */                                     \
    /* the SUM_LANES partial sums in double (cut without y).               */                                     \
    static INL void esum_group_##SUF(const float *x, vf b, float *y, vd *acc) {                                   \
        SUM_CHUNKS(k) {                                                                                           \
            vf e = exp_diff_##SUF(load_##SUF(x + k * W), b, !y);                                                  \
            if (y) store_##SUF(y + k * W, e);                                                                     \
            vd lo, hi;                                                                                            \
            widen_##SUF(e, &lo, &hi);                                                                             \
            acc[2 * k] += lo;                                                                                     \
            acc[2 * k + 1] += hi;                                                                                 \
        }                                                                                                         \
    }                                                                                                             \
    /* Softmax of W rows of n <= SUM_LANES floats at a time, transposed so */                                     \
    /* that each lane is a row. Every lane does what the row path does     */                                     \
    /* (cg_cpu_max, exp_shift_sum, mul_round): the same max, the same exp  */                                     \
    /* of each element, element j as partial sum j with the others 0,      */                                     \
    /* folded in the same pairwise order, the same scaling; so the same    */                                     \
    /* bits, without the row path's calls and its lanes of padding.        */                                     \
    static void softmax_short_##SUF(const float *x, float *y, size_t rows, size_t n) {                            \
        for (size_t r0 = 0; r0 < rows; r0 += W) {                                                                 \
            const size_t c = rows - r0 < W ? rows - r0 : W;                                                       \
            float t[SUM_LANES][W];                                                                                \
            for (size_t j = 0; j < n; j++)                                                                        \
                for (size_t r = 0; r < W; r++) t[j][r] = r < c ? x[(r0 + r) * n + j] : 0.0f;                      \
            vf mx = splat_##SUF(-INFINITY);                                                                       \
            vi nan = (vi){0};                                                                                     \
            for (size_t j = 0; j < n; j++) {                                                                      \
                vf v = load_##SUF(t[j]);                                                                          \
                mx = select_##SUF(v > mx, v, mx);                                                                 \
                nan |= v != v;                                                                                    \
            }                                                                                                     \
            mx = select_##SUF(nan, splat_##SUF(NAN), mx);                                                         \
            const vf b = -mx;                                                                                     \
            vd s_lo[SUM_LANES], s_hi[SUM_LANES];                                                                  \
            for (size_t j = 0; j < SUM_LANES; j++) {                                                              \
                vf e = j < n ? exp_diff_##SUF(load_##SUF(t[j]), b, 0) : splat_##SUF(0.0f);                        \
                if (j < n) store_##SUF(t[j], e);                                                                  \
                widen_##SUF(e, &s_lo[j], &s_hi[j]);                                                               \
            }                                                                                                     \
            for (int w = SUM_LANES / 2; w > 0; w /= 2)                                                            \
                for (int j = 0; j < w; j++) {                                                                     \
                    s_lo[j] += s_lo[j + w];                                                                       \
                    s_hi[j] += s_hi[j + w];                                                                       \
                }                                                                                                 \
            const vd one = (vd){0} + 1.0, inv_lo = one / s_lo[0], inv_hi = one / s_hi[0];                         \
            const vi empty = mx == splat_##SUF(-INFINITY); /* all -inf: zeros */                                  \
            for (size_t j = 0; j < n; j++) {                                                                      \
                vd lo, hi;                                                                                        \
                widen_##SUF(load_##SUF(t[j]), &lo, &hi);                                                          \
                store_##SUF(t[j], select_##SUF(empty, splat_##SUF(0.0f), narrow_##SUF(lo *inv_lo, hi *inv_hi)));  \
            }                                                                                                     \
            for (size_t j = 0; j < n; j++)                                                                        \
                for (size_t r = 0; r < c; r++) y[(r0 + r) * n + j] = t[j][r];                                     \
        }                                                                                                         \
    }                                                                                                             \
    static double exp_shift_sum_##SUF(const float *x, float shift, float *y, size_t n) {                          \
        vd acc[SUM_LANES / W * 2];                                                                                \
        SUM_CHUNKS(k) acc[2 * k] = acc[2 * k + 1] = (vd){0};                                                      \
        const vf b = splat_##SUF(-shift);                                                                         \
        size_t i = 0;                                                                                             \
        for (; i + SUM_LANES <= n; i += SUM_LANES) esum_group_##SUF(x + i, b, y ? y + i : NULL, acc);             \
        if (i < n) {                                                                                              \
            /* The tail padded with -inf, whose terms (+0) add nothing (a   */                                    \
            /* loop: memcpy would cost a library call per short row).      */                                     \
            float xb[SUM_LANES], yb[SUM_LANES];                                                                   \
            for (size_t j = 0; j < SUM_LANES; j++) xb[j] = i + j < n ? x[i + j] : -INFINITY;                      \
            esum_group_##SUF(xb, b, y ? yb : NULL, acc);                                                          \
            if (y)                                                                                                \
                for (size_t j = 0; i + j < n; j++) y[i + j] = yb[j];                                              \
        }                                                                                                         \
        /* The partial sums added pairwise (lane j + lane j + 8, ...), the  */                                    \
        /* same order on every ISA: whole vectors in registers, then the    */                                    \
        /* lanes of the last one.                                           */                                    \
        for (int w = SUM_LANES / 2; w >= W / 2; w /= 2)                                                           \
            for (int m = 0; m < w / (W / 2); m++) acc[m] += acc[m + w / (W / 2)];                                 \
        double t[W / 2];                                                                                          \
        store_d_##SUF(t, acc[0]);                                                                                 \
        for (int w = W / 4; w > 0; w /= 2)                                                                        \
            for (int j = 0; j < w; j++) t[j] += t[j + w];                                                         \
        return t[0];                                                                                              \
    }                                                                                                             \
    /* y = (float)((double)x + c) or (float)((double)x * c). */                                                   \
    static void add_round_##SUF(const float *x, double c, float *y, size_t n, int mul) {                          \
        const vd cv = (vd){0} + c;                                                                                \
        for (size_t i = 0; i < n; i += W) {                                                                       \
            size_t m = n - i < W ? n - i : W;                                                                     \
            vf v = load_part_##SUF(x + i, m, 0.0f);                                                               \
            vd lo, hi;                                                                                            \
            widen_##SUF(v, &lo, &hi);                                                                             \
            lo = mul ? lo * cv : lo + cv;                                                                         \
            hi = mul ? hi * cv : hi + cv;                                                                         \
            store_part_##SUF(y + i, narrow_##SUF(lo, hi), m);                                                     \
        }                                                                                                         \
    }                                                                                                             \
    /* out[k] = sum over r < rows of w[r] * m[r * ld + k], rows in order; two  */                                 \
    /* column chunks at a time so that two add chains overlap.              */                                    \
    static void wsum_##SUF(const float *w, const float *m, size_t ld, size_t rows, size_t len, float *out) {      \
        size_t k = 0;                                                                                             \
        for (; k + 2 * W <= len; k += 2 * W) {                                                                    \
            vf a0 = splat_##SUF(0.0f), a1 = splat_##SUF(0.0f);                                                    \
            for (size_t r = 0; r < rows; r++) {                                                                   \
                const vf wr = splat_##SUF(w[r]);                                                                  \
                a0 += wr * load_##SUF(m + r * ld + k);                                                            \
                a1 += wr * load_##SUF(m + r * ld + k + W);                                                        \
            }                                                                                                     \
            store_##SUF(out + k, a0);                                                                             \
            store_##SUF(out + k + W, a1);                                                                         \
        }                                                                                                         \
        for (; k < len; k += W) {                                                                                 \
            const size_t c = len - k < W ? len - k : W;                                                           \
            vf a0 = splat_##SUF(0.0f);                                                                            \
            for (size_t r = 0; r < rows; r++) a0 += splat_##SUF(w[r]) * load_part_##SUF(m + r * ld + k, c, 0.0f); \
            store_part_##SUF(out + k, a0, c);                                                                     \
        }                                                                                                         \
    }                                                                                                             \
    /* One group of SUM_LANES terms v * tanh(a + b) added into acc. */                                            \
    static INL void tdot_group_##SUF(const float *a, const float *b, const float *v, vf *acc) {                   \
        SUM_CHUNKS(k) {                                                                                           \
            acc[k] += load_##SUF(v + k * W) * tanh_core_##SUF(load_##SUF(a + k * W) + load_##SUF(b + k * W));     \
        }                                                                                                         \
    }                                                                                                             \
    static float tanh_dot_##SUF(const float *a, const float *b, const float *v, size_t n) {                       \
        vf acc[SUM_LANES / W];                                                                                    \
        SUM_CHUNKS(k) acc[k] = splat_##SUF(0.0f);                                                                 \
        size_t i = 0;                                                                                             \
        for (; i + SUM_LANES <= n; i += SUM_LANES) tdot_group_##SUF(a + i, b + i, v + i, acc);                    \
        if (i < n) {                                                                                              \
            /* Zero padding adds +0, which leaves the (never -0) sums as they are. */                             \
            float ba[SUM_LANES] = {0}, bb[SUM_LANES] = {0}, bv[SUM_LANES] = {0};                                  \
            memcpy(ba, a + i, (n - i) * sizeof(float));                                                           \
            memcpy(bb, b + i, (n - i) * sizeof(float));                                                           \
            memcpy(bv, v + i, (n - i) * sizeof(float));                                                           \
            tdot_group_##SUF(ba, bb, bv, acc);                                                                    \
        }                                                                                                         \
        float s[SUM_LANES];                                                                                       \
        SUM_CHUNKS(k) store_##SUF(s + k * W, acc[k]);                                                             \
        return fold_f(s);                                                                                         \
    }

/* Every function taking or returning a vector is static: GCC's notes about
 * the ABI of vector arguments on an ISA without such registers (32-bit x86
 * without SSE) concern external calls only. GCC reports them at the end of
 * the file, so the warning is off for the whole file. */
#pragma GCC diagnostic ignored "-Wpsabi"
#if defined(__x86_64__) || defined(__i386__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq")
#define W 16
MATH_BODY(avx512)
#undef W
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2")
#define W 8
MATH_BODY(avx2)
#undef W
#pragma GCC pop_options
#define HAVE_X86 1
#endif
#define W 4
MATH_BODY(base)
#undef W

typedef struct math_impl {
    const char *name;
    void (*vexp)(const float *, float *, size_t);
    void (*vtanh)(const float *, float *, size_t);
    void (*vsigmoid)(const float *, float *, size_t);
    void (*verf)(const float *, float *, size_t);
    float (*tanh_dot)(const float *, const float *, const float *, size_t);
    double (*exp_shift_sum)(const float *, float, float *, size_t);
    void (*softmax_short)(const float *, float *, size_t, size_t);
    void (*add_round)(const float *, double, float *, size_t, int);
    void (*wsum)(const float *, const float *, size_t, size_t, size_t, float *);
} math_impl;

#define IMPL(SUF, NAME)                                                                                 \
    {                                                                                                   \
        NAME, vexp_##SUF, vtanh_##SUF, vsigmoid_##SUF, verf_##SUF, tanh_dot_##SUF, exp_shift_sum_##SUF, \
            softmax_short_##SUF, add_round_##SUF, wsum_##SUF                                            \
    }
static const math_impl impls[] = {
#ifdef HAVE_X86
    IMPL(avx512, "avx512"),
    IMPL(avx2, "avx2"),
#endif
    IMPL(base, "baseline"),
};
#define N_IMPLS (sizeof impls / sizeof impls[0])

static int supported(const char *name) {
#ifdef HAVE_X86
    __builtin_cpu_init();
    if (strcmp(name, "avx512") == 0) return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    if (strcmp(name, "avx2") == 0) return __builtin_cpu_supports("avx2");
#endif
    return strcmp(name, "baseline") == 0;
}

static const math_impl *_Atomic chosen;

/* The best supported implementation at or below CLGRAPH_CPU_MATH. Racing
 * first calls compute the same answer. */
static const math_impl *impl(void) {
    const math_impl *m = chosen;
    if (m) return m;
    const char *force = cg_setting(CG_SET_CPU_MATH);
    size_t first = 0;
    if (force && *force)
        for (size_t i = 0; i < N_IMPLS; i++)
            if (strcmp(impls[i].name, force) == 0) first = i;
    m = &impls[N_IMPLS - 1];
    for (size_t i = first; i < N_IMPLS; i++)
        if (supported(impls[i].name)) {
            m = &impls[i];
            break;
        }
    chosen = m;
    return m;
}

void cg_cpu_vexp(const float *x, float *y, size_t n) { impl()->vexp(x, y, n); }
void cg_cpu_vtanh(const float *x, float *y, size_t n) { impl()->vtanh(x, y, n); }
void cg_cpu_vsigmoid(const float *x, float *y, size_t n) { impl()->vsigmoid(x, y, n); }
void cg_cpu_verf(const float *x, float *y, size_t n) { impl()->verf(x, y, n); }
float cg_cpu_tanh_dot(const float *a, const float *b, const float *v, size_t n) { return impl()->tanh_dot(a, b, v, n); }
double cg_cpu_exp_shift_sum(const float *x, float shift, float *y, size_t n) {
    return impl()->exp_shift_sum(x, shift, y, n);
}
void cg_cpu_softmax_short(const float *x, float *y, size_t rows, size_t n) { impl()->softmax_short(x, y, rows, n); }
void cg_cpu_add_round(const float *x, double c, float *y, size_t n) { impl()->add_round(x, c, y, n, 0); }
void cg_cpu_mul_round(const float *x, double c, float *y, size_t n) { impl()->add_round(x, c, y, n, 1); }
void cg_cpu_weighted_rows(const float *w, const float *m, size_t ld, size_t rows, size_t len, float *out) {
    impl()->wsum(w, m, ld, rows, len, out);
}
const char *cg_cpu_math_isa(void) { return impl()->name; }

int cg_cpu_math_force(const char *isa) {
    for (size_t i = 0; i < N_IMPLS; i++)
        if (strcmp(impls[i].name, isa) == 0 && supported(isa)) {
            chosen = &impls[i];
            return 1;
        }
    return 0;
}
