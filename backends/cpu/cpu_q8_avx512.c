/* AVX-512 VNNI int8 kernels (see cpu_gemm_kernels.h, CG_GEMM_B_I8).
 *
 * vpdpbusd adds the products of 4 unsigned by 4 signed bytes into each int32
 * lane, without saturation. A's bytes become unsigned by adding 128
 * (a xor 0x80), so each sum gains 128 * sum(b): the same instruction on the
 * constant 128 and the B vector gives that term, once per B row for the whole
 * tile, and it is subtracted at the end. Sums are exact. */
#include "cpu_gemm_kernels.h"

#if defined(__x86_64__) || defined(__i386__)

#include <float.h>
#include <immintrin.h>
#include <string.h>

#include "cpu_avx512_reduce.h"
#include "dtype.h"

#define CG_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define CG_INLINE static inline __attribute__((always_inline))

/* 4x4 accumulators + 4 row-sum terms + 4 B vectors + A fit 32 registers. */
#define MR 4
#define NR 4
/* GEMV: rows of B per pass over x (one 16-way reduction). */
#define NV 16

/* Lane p of cg_reduce16's result is the sum of the 16 lanes of x[p]
 * (integer additions, so any order gives the same sums; the shuffles go
 * through float views, which move bits only). */
#define CG_I32_TO_PS(v) _mm512_castsi512_ps(v)
#define CG_PS_TO_I32(v) _mm512_castps_si512(v)
CG_AVX512_REDUCE16(cg_reduce16, __m512i, _mm512_add_epi32, CG_I32_TO_PS, CG_PS_TO_I32)

/* C[i][j] = (float)sum * as[i] * bs[j] for 16 sums at once, lane p holding
 * row i0 + rows[p], column j0 + cols[p]; the same two products in the same
 * order as cg_q8_out. Stored through `out`. */
CG_INLINE CG_AVX512 void cg_scale16(__m512i sums, __m512 sa, __m512 sb, float *out) {
    _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(sums), sa), sb));
}

/* acc += the products of u8 a and s8 b, four per int32 lane. In asm with the
 * accumulator read and written in place: through the intrinsic GCC 12 copies
 * every accumulator to a scratch register and back, and stores some to the
 * stack, each step (3x slower). */
#define CG_DP(acc, a, b) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b))

/* One step over 64 bytes of k: the four B vectors b0..b3 are given. */
#define CG_ROW(i, a)                                                                      \
    do {                                                                                  \
        const __m512i au = _mm512_xor_si512(_mm512_loadu_si512((const void *)(a)), flip); \
        CG_DP(c##i##0, au, b0);                                                           \
        CG_DP(c##i##1, au, b1);                                                           \
        CG_DP(c##i##2, au, b2);                                                           \
        CG_DP(c##i##3, au, b3);                                                           \
    } while (0)
#define CG_STEP(kk)              \
    do {                         \
        if (with_sums) {         \
            CG_DP(o0, flip, b0); \
            CG_DP(o1, flip, b1); \
            CG_DP(o2, flip, b2); \
            CG_DP(o3, flip, b3); \
        }                        \
        CG_ROW(0, a0 + (kk));    \
        CG_ROW(1, a1 + (kk));    \
        CG_ROW(2, a2 + (kk));    \
        CG_ROW(3, a3 + (kk));    \
    } while (0)

/* C[i0 : i0+mr, j0 : j0+nr]: rows past mr repeat row i0 and columns past
 * nr column j0 (computed, not stored). A is padded: past k it meets zeros
 * of B. with_sums: the tile sums B's rows itself (g->bsum is NULL). */
CG_INLINE CG_AVX512 void cg_tile(const cg_gemm_args *g, int64_t i0, int64_t j0, int mr, int nr, const int with_sums) {
    const int64_t k = g->k;
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const int8_t *a0 = g->aq + i0 * g->ldaq, *a1 = mr > 1 ? a0 + g->ldaq : a0, *a2 = mr > 2 ? a0 + 2 * g->ldaq : a0,
                 *a3 = mr > 3 ? a0 + 3 * g->ldaq : a0;
    const int8_t *r0 = g->bq + j0 * g->ldb, *r1 = nr > 1 ? r0 + g->ldb : r0, *r2 = nr > 2 ? r0 + 2 * g->ldb : r0,
                 *r3 = nr > 3 ? r0 + 3 * g->ldb : r0;
    __m512i c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33, o0, o1, o2, o3;
    c00 = c01 = c02 = c03 = c10 = c11 = c12 = c13 = _mm512_setzero_si512();
    c20 = c21 = c22 = c23 = c30 = c31 = c32 = c33 = o0 = o1 = o2 = o3 = _mm512_setzero_si512();
    /* The whole 64-byte steps from B itself, then (if k has a tail) one
     * more from a zero-padded copy of the tails: one loop body, so the
     * accumulators stay in registers (a second copy of the step made GCC
     * spill them). */
    const int64_t kfull = k / 64 * 64;
    int8_t tail[NR][64];
    if (kfull < k) {
        memset(tail, 0, sizeof tail);
        memcpy(tail[0], r0 + kfull, (size_t)(k - kfull));
        memcpy(tail[1], r1 + kfull, (size_t)(k - kfull));
        memcpy(tail[2], r2 + kfull, (size_t)(k - kfull));
        memcpy(tail[3], r3 + kfull, (size_t)(k - kfull));
    }
    int64_t kk = 0;
    for (int seg = 0; seg < 2; seg++) {
        const int64_t base = seg ? kfull : 0, end = seg ? (kfull < k ? kfull + 64 : kfull) : kfull;
        const int8_t *q0 = seg ? tail[0] : r0, *q1 = seg ? tail[1] : r1, *q2 = seg ? tail[2] : r2,
                     *q3 = seg ? tail[3] : r3;
        for (; kk < end; kk += 64) {
            const __m512i b0 = _mm512_loadu_si512((const void *)(q0 + kk - base));
            const __m512i b1 = _mm512_loadu_si512((const void *)(q1 + kk - base));
            const __m512i b2 = _mm512_loadu_si512((const void *)(q2 + kk - base));
            const __m512i b3 = _mm512_loadu_si512((const void *)(q3 + kk - base));
            CG_STEP(kk);
        }
    }
    /* lane 4 i + j: row i, column j, less 128 times column j's sum */
    const __m512i x[16] = {c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33};
    const __m512i sum16 = cg_reduce16(x);
    if (!with_sums && mr == MR && nr == NR) { /* a whole tile: vector loads and row stores */
        const __m512i o = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(g->bsum + j0)));
        const __m512 sa = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                                                _mm512_castps128_ps512(_mm_loadu_ps(g->as + i0)));
        const __m512 sb = _mm512_broadcast_f32x4(_mm_loadu_ps(g->bs + j0));
        const __m512 r = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sum16, o)), sa), sb);
        float *c = g->c + i0 * g->ldc + j0;
        _mm_storeu_ps(c, _mm512_castps512_ps128(r));
        _mm_storeu_ps(c + g->ldc, _mm512_extractf32x4_ps(r, 1));
        _mm_storeu_ps(c + 2 * g->ldc, _mm512_extractf32x4_ps(r, 2));
        _mm_storeu_ps(c + 3 * g->ldc, _mm512_extractf32x4_ps(r, 3));
        return;
    }
    int32_t s0, s1, s2, s3;
    if (with_sums) {
        s0 = _mm512_reduce_add_epi32(o0), s1 = _mm512_reduce_add_epi32(o1);
        s2 = _mm512_reduce_add_epi32(o2), s3 = _mm512_reduce_add_epi32(o3);
    } else {
        s0 = g->bsum[j0], s1 = g->bsum[j0 + (nr > 1)], s2 = g->bsum[j0 + (nr > 2 ? 2 : 0)];
        s3 = g->bsum[j0 + (nr > 3 ? 3 : 0)];
    }
    const __m512i o = _mm512_setr_epi32(s0, s1, s2, s3, s0, s1, s2, s3, s0, s1, s2, s3, s0, s1, s2, s3);
    const __m512i sums = _mm512_sub_epi32(sum16, o);
    float as[MR], bs[NR], out[16];
    for (int i = 0; i < MR; i++) as[i] = g->as[i0 + (i < mr ? i : 0)];
    for (int j = 0; j < NR; j++) bs[j] = g->bs[j0 + (j < nr ? j : 0)];
    const __m512 sa = _mm512_setr_ps(as[0], as[0], as[0], as[0], as[1], as[1], as[1], as[1], as[2], as[2], as[2], as[2],
                                     as[3], as[3], as[3], as[3]);
    const __m512 sb = _mm512_setr_ps(bs[0], bs[1], bs[2], bs[3], bs[0], bs[1], bs[2], bs[3], bs[0], bs[1], bs[2], bs[3],
                                     bs[0], bs[1], bs[2], bs[3]);
    cg_scale16(sums, sa, sb, out);
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) g->c[(i0 + i) * g->ldc + j0 + j] = out[4 * i + j];
}
#undef CG_STEP
#undef CG_ROW

static CG_AVX512 void cg_tile_rows(const cg_gemm_args *g, int64_t i0, int64_t j0, int mr, int nr) {
    if (g->bsum) cg_tile(g, i0, j0, mr, nr, 0);
    else cg_tile(g, i0, j0, mr, nr, 1);
}

/* 128 times the sum of a B row, as the tiles compute it. */
static CG_AVX512 int32_t cg_bsum(const int8_t *b, int64_t k) {
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    __m512i o = _mm512_setzero_si512();
    for (int64_t kk = 0; kk < k; kk += 64) {
        const __mmask64 km = k - kk >= 64 ? ~(__mmask64)0 : _cvtu64_mask64(~0ull >> (64 - (k - kk)));
        o = _mm512_dpbusd_epi32(o, flip, _mm512_maskz_loadu_epi8(km, b + kk));
    }
    return _mm512_reduce_add_epi32(o);
}

/* One row of A against nr <= NV rows of B. Here a's sign moves onto b
 * (negated where a < 0, exact: b is never -128) and |a| is the unsigned
 * operand: no row-sum term, one vpdpbusd per B vector. */
CG_INLINE CG_AVX512 void cg_gemv_step(__m512i *acc, const __m512i av, const __m512i *bv) {
    const __m512i ua = _mm512_abs_epi8(av), zero = _mm512_setzero_si512();
    const __mmask64 neg = _mm512_movepi8_mask(av);
#pragma GCC unroll 16
    for (int j = 0; j < NV; j++) {
        const __m512i sb = _mm512_mask_sub_epi8(bv[j], neg, zero, bv[j]);
        CG_DP(acc[j], ua, sb);
    }
}

static CG_AVX512 void cg_gemv_tile(const cg_gemm_args *g, int64_t i0, int64_t j0, int nr) {
    const int64_t k = g->k;
    const int8_t *a = g->aq + i0 * g->ldaq, *br[NV];
    for (int j = 0; j < NV; j++) br[j] = g->bq + (j0 + (j < nr ? j : 0)) * g->ldb;
    __m512i acc[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; j++) acc[j] = _mm512_setzero_si512();
    int64_t kk = 0;
    for (; kk + 64 <= k; kk += 64) {
        __m512i bv[NV];
#pragma GCC unroll 16
        for (int j = 0; j < NV; j++) bv[j] = _mm512_loadu_si512((const void *)(br[j] + kk));
        cg_gemv_step(acc, _mm512_loadu_si512((const void *)(a + kk)), bv);
    }
    if (kk < k) {
        const __mmask64 km = _cvtu64_mask64(~0ull >> (64 - (k - kk)));
        __m512i bv[NV];
#pragma GCC unroll 16
        for (int j = 0; j < NV; j++) bv[j] = _mm512_maskz_loadu_epi8(km, br[j] + kk);
        cg_gemv_step(acc, _mm512_loadu_si512((const void *)(a + kk)), bv);
    }
    if (nr == NV) { /* a whole tile: stored as one vector */
        cg_scale16(cg_reduce16(acc), _mm512_set1_ps(g->as[i0]), _mm512_loadu_ps(g->bs + j0), g->c + i0 * g->ldc + j0);
        return;
    }
    float bs[NV], out[NV];
    for (int j = 0; j < NV; j++) bs[j] = g->bs[j0 + (j < nr ? j : 0)];
    cg_scale16(cg_reduce16(acc), _mm512_set1_ps(g->as[i0]), _mm512_loadu_ps(bs), out);
    for (int j = 0; j < nr; j++) g->c[i0 * g->ldc + j0 + j] = out[j];
}

/* cg_q8_row in 16-lane vectors: the same max, factor and f32 operations
 * (a multiply, then adding and taking away 1.5 * 2^23, no FMA), so the same
 * bits; rows the scalar code treats specially (non-finite, zero, tiny max)
 * go to it. */
static CG_AVX512 float cg_qrow(const float *x, int64_t n, int8_t *q) {
    const __m512 big = _mm512_set1_ps(FLT_MAX);
    __m512 vmax = _mm512_setzero_ps();
    __mmask16 bad = 0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 a = _mm512_abs_ps(_mm512_loadu_ps(x + i));
        bad |= _mm512_cmp_ps_mask(a, big, _CMP_NLE_UQ); /* NaN or infinity */
        vmax = _mm512_max_ps(vmax, a);
    }
    if (i < n) {
        const __mmask16 km = (__mmask16)((1u << (n - i)) - 1);
        const __m512 a = _mm512_abs_ps(_mm512_maskz_loadu_ps(km, x + i));
        bad |= _mm512_cmp_ps_mask(a, big, _CMP_NLE_UQ);
        vmax = _mm512_max_ps(vmax, a);
    }
    const float amax = _mm512_reduce_max_ps(vmax);
    if (bad || amax == 0.0f || 127.0 / (double)amax > 1e30) return cg_q8_row(x, n, q);
    const __m512 inv = _mm512_set1_ps((float)(127.0 / (double)amax)), magic = _mm512_set1_ps(12582912.0f);
    const __m512 hi = _mm512_set1_ps(127.0f), lo = _mm512_set1_ps(-127.0f);
    for (i = 0; i < n; i += 16) {
        const __mmask16 km = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 r = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(km, x + i), inv), magic), magic);
        r = _mm512_min_ps(_mm512_max_ps(r, lo), hi);
        _mm_mask_storeu_epi8(q + i, km, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(r)));
    }
    return amax / 127.0f;
}

const cg_gemm_kernels cg_q8_avx512 = {"avx512", MR, NR, NV, cg_tile_rows, cg_gemv_tile, cg_qrow, cg_bsum, NULL};

#else
typedef int cg_q8_avx512_not_x86;
#endif
