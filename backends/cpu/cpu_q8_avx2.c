/* AVX2 int8 kernels (see cpu_gemm_kernels.h, CG_GEMM_B_I8).
 *
 * vpmaddubsw multiplies unsigned by signed bytes and adds pairs into int16
 * with saturation. Both operands here are in [-127, 127], so it gets |a| and
 * b with a's sign moved onto it (vpsignb): a pair sums to at most
 * 2 * 127 * 127 = 32258 < 32767, never saturating, and the products are
 * exact. vpmaddwd by ones widens the pairs into int32 accumulators. */
#include "cpu_gemm_kernels.h"

#if defined(__x86_64__) || defined(__i386__)

#include <float.h>
#include <immintrin.h>

#include "dtype.h"
#include <string.h>

#define CG_AVX2 __attribute__((target("avx2")))
#define CG_INLINE static inline __attribute__((always_inline))

/* 2x4 accumulators + 4 B vectors + a, |a| and the ones fit 16 registers. */
#define MR 2
#define NR 4
#define NV 8

CG_INLINE CG_AVX2 int32_t cg_hsum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

/* 32 bytes of a B row from kk; past k (n < 32 left) zeros. */
CG_INLINE CG_AVX2 __m256i cg_load_bq(const int8_t *row, int64_t kk, int64_t k) {
    if (kk + 32 <= k) return _mm256_loadu_si256((const __m256i *)(row + kk));
    int8_t t[32] = {0};
    memcpy(t, row + kk, (size_t)(k - kk));
    return _mm256_loadu_si256((const __m256i *)t);
}

/* acc += sum of the products a * b, 8 int32 lanes; ua = |a|. */
CG_INLINE CG_AVX2 __m256i cg_dot32(__m256i acc, __m256i ua, __m256i a, __m256i b, __m256i ones) {
    __m256i p = _mm256_maddubs_epi16(ua, _mm256_sign_epi8(b, a));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, ones));
}

CG_INLINE CG_AVX2 void cg_tile(const cg_gemm_args *g, int64_t i0, int64_t j0, const int mr, int nr) {
    const int64_t k = g->k;
    const __m256i ones = _mm256_set1_epi16(1);
    const int8_t *ar[MR], *br[NR];
    for (int i = 0; i < MR; i++) ar[i] = g->aq + (i0 + (i < mr ? i : 0)) * g->ldaq;
    for (int j = 0; j < NR; j++) br[j] = g->bq + (j0 + (j < nr ? j : 0)) * g->ldb;
    __m256i acc[MR][NR];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
        for (int j = 0; j < NR; j++) acc[i][j] = _mm256_setzero_si256();
    /* Whole 32-byte steps from B, then one from zero-padded copies of the
     * tails: one loop body (no test per load). */
    const int64_t kfull = k / 32 * 32;
    int8_t tail[NR][32];
    if (kfull < k)
        for (int j = 0; j < NR; j++) {
            memset(tail[j], 0, sizeof tail[j]);
            memcpy(tail[j], br[j] + kfull, (size_t)(k - kfull));
        }
    int64_t kk = 0;
    for (int seg = 0; seg < 2; seg++) {
        const int64_t base = seg ? kfull : 0, end = seg ? (kfull < k ? kfull + 32 : kfull) : kfull;
        const int8_t *q[NR];
#pragma GCC unroll 8
        for (int j = 0; j < NR; j++) q[j] = seg ? tail[j] : br[j];
        for (; kk < end; kk += 32) {
            __m256i bv[NR];
#pragma GCC unroll 8
            for (int j = 0; j < NR; j++) bv[j] = _mm256_loadu_si256((const __m256i *)(q[j] + kk - base));
#pragma GCC unroll 8
            for (int i = 0; i < mr; i++) { /* A is padded: past k it meets zeros of B */
                __m256i av = _mm256_loadu_si256((const __m256i *)(ar[i] + kk));
                __m256i ua = _mm256_sign_epi8(av, av);
#pragma GCC unroll 8
                for (int j = 0; j < NR; j++) acc[i][j] = cg_dot32(acc[i][j], ua, av, bv[j], ones);
            }
        }
    }
    /* every sum at constant indices, then the stores: indexing the
     * accumulators by the run-time nr made GCC keep them on the stack */
    int32_t sums[MR][NR] = {{0}};
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
        for (int j = 0; j < NR; j++) sums[i][j] = cg_hsum(acc[i][j]);
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) g->c[(i0 + i) * g->ldc + j0 + j] = cg_q8_out(g, i0 + i, j0 + j, sums[i][j]);
}

static CG_AVX2 void cg_tile_rows(const cg_gemm_args *g, int64_t i0, int64_t j0, int mr, int nr) {
    if (mr == 1) cg_tile(g, i0, j0, 1, nr);
    else cg_tile(g, i0, j0, MR, nr);
}

/* One row of A against nr <= NV rows of B. */
static CG_AVX2 void cg_gemv_tile(const cg_gemm_args *g, int64_t i0, int64_t j0, int nr) {
    const int64_t k = g->k;
    const __m256i ones = _mm256_set1_epi16(1);
    const int8_t *a = g->aq + i0 * g->ldaq, *br[NV];
    for (int j = 0; j < NV; j++) br[j] = g->bq + (j0 + (j < nr ? j : 0)) * g->ldb;
    __m256i acc[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; j++) acc[j] = _mm256_setzero_si256();
    for (int64_t kk = 0; kk < k; kk += 32) {
        __m256i av = _mm256_loadu_si256((const __m256i *)(a + kk));
        __m256i ua = _mm256_sign_epi8(av, av);
#pragma GCC unroll 8
        for (int j = 0; j < NV; j++) acc[j] = cg_dot32(acc[j], ua, av, cg_load_bq(br[j], kk, k), ones);
    }
    int32_t sums[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; j++) sums[j] = cg_hsum(acc[j]);
    for (int j = 0; j < nr; j++) g->c[i0 * g->ldc + j0 + j] = cg_q8_out(g, i0, j0 + j, sums[j]);
}

/* cg_q8_row in 8-lane vectors: the same max, factor and f32 operations
 * (a multiply, then adding and taking away 1.5 * 2^23, no FMA), so the same
 * bits; rows the scalar code treats specially (non-finite, zero, tiny max)
 * go to it. */
static CG_AVX2 float cg_qrow(const float *x, int64_t n, int8_t *q) {
    const __m256 sign = _mm256_set1_ps(-0.0f), big = _mm256_set1_ps(FLT_MAX);
    __m256 vmax = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i));
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, big, _CMP_NLE_UQ));
        vmax = _mm256_max_ps(vmax, a);
    }
    float m8[8];
    _mm256_storeu_ps(m8, vmax);
    float amax = 0.0f;
    for (int l = 0; l < 8; l++) amax = m8[l] > amax ? m8[l] : amax;
    int finite = _mm256_movemask_ps(bad) == 0;
    for (int64_t t = i; t < n; t++) {
        const float a = x[t] < 0 ? -x[t] : x[t];
        if (!(a <= FLT_MAX)) finite = 0;
        else if (a > amax) amax = a;
    }
    if (!finite || amax == 0.0f || 127.0 / (double)amax > 1e30) return cg_q8_row(x, n, q);
    const float inv_s = (float)(127.0 / (double)amax);
    const __m256 inv = _mm256_set1_ps(inv_s), magic = _mm256_set1_ps(12582912.0f);
    const __m256 hi = _mm256_set1_ps(127.0f), lo = _mm256_set1_ps(-127.0f);
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 r = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), inv), magic), magic);
        r = _mm256_min_ps(_mm256_max_ps(r, lo), hi);
        const __m256i v = _mm256_cvtps_epi32(r);
        const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        _mm_storel_epi64((__m128i *)(q + i), _mm_packs_epi16(w, w));
    }
    for (; i < n; i++) { /* as cg_q8_row */
        float r = (x[i] * inv_s + 12582912.0f) - 12582912.0f;
        r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
        q[i] = (int8_t)(int)r;
    }
    return amax / 127.0f;
}

const cg_gemm_kernels cg_q8_avx2 = {"avx2", MR, NR, NV, cg_tile_rows, cg_gemv_tile, cg_qrow, NULL, NULL};

#else
typedef int cg_q8_avx2_not_x86;
#endif
