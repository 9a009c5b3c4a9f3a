/* AVX-512 dot-form kernels (see cpu_gemm_kernels.h).
 *
 * A register tile of MR rows of A by NR rows of B keeps MR*NR accumulators of
 * 16 lanes along k: every step loads MR + NR vectors for MR*NR FMAs, and
 * neither matrix is packed (B is a weight matrix the caller reuses as it is).
 * The lanes of an accumulator are summed once at the end, for 16
 * accumulators together by a transposing reduction that performs, lane by
 * lane, the same additions (i, i+8), (i, i+4), (i, i+2), (i, i+1) as
 * reducing one accumulator alone: every element of C gets the same
 * arithmetic in a full tile, a tail tile and the GEMV tile.
 *
 * Compiled with target attributes instead of -mavx512f so the rest of the
 * library keeps the baseline ISA; the driver calls in only after checking
 * the CPU. */
#include "cpu_gemm_kernels.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>
#include <string.h>

#include "cpu_avx512_reduce.h"

#define CG_AVX512 __attribute__((target("avx512f,fma")))
#define CG_INLINE static inline __attribute__((always_inline))

/* Register tile, measured on a Xeon (Sapphire Rapids class): 4x4 keeps 16
 * accumulators + 4 B vectors + 1 A vector in 32 registers and reduces in one
 * transposing step; 5x4, 4x5, 6x4 and 4x6 were within 3%. */
#define MR 4
#define NR 4
/* GEMV tile: rows of B (the matrix) per pass over x; 16 independent load
 * streams keep enough cache misses in flight, and one reduction step. */
#define NV 16
/* Cache blocks (bytes): rows of A that stay in L1 while a strip of NR rows
 * of B passes over all of them (so B, not A, is what comes from L2: 4x less
 * L2 traffic than streaming A for each strip; +25-40% at M = 64), and rows
 * of B that stay in L2 meanwhile. */

/* Lane p of cg_reduce16's result is the sum of the 16 lanes of x[p]. */
#define CG_PS_SAME(v) (v)
CG_AVX512_REDUCE16(cg_reduce16, __m512, _mm512_add_ps, CG_PS_SAME, CG_PS_SAME)

/* c[0..] = alpha * s + beta * c on the lanes of mask (beta == 0: c is not
 * read, so NaN in C does not survive). */
CG_INLINE CG_AVX512 void cg_store(float *c, __mmask16 mask, __m512 s, float alpha, float beta) {
    __m512 r = _mm512_mul_ps(_mm512_set1_ps(alpha), s);
    if (beta != 0.0f) r = _mm512_add_ps(r, _mm512_mul_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(mask, c)));
    _mm512_mask_storeu_ps(c, mask, r);
}

/* 128-bit lane q of s moved to lane 0 (q is a constant after inlining). */
CG_INLINE CG_AVX512 __m512 cg_lane(__m512 s, int q) {
    switch (q) {
    case 1: return _mm512_shuffle_f32x4(s, s, 1);
    case 2: return _mm512_shuffle_f32x4(s, s, 2);
    case 3: return _mm512_shuffle_f32x4(s, s, 3);
    default: return s;
    }
}

/* 16 elements of a B row from element kk as f32 (bt a constant after
 * inlining): bf16 is the top half of an f32, f16 widens with vcvtph2ps. */
CG_INLINE CG_AVX512 __m512 cg_load_b(const void *row, int64_t kk, const int bt) {
    if (bt == CG_GEMM_B_F32) return _mm512_loadu_ps((const float *)row + kk);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)row + kk));
    if (bt == CG_GEMM_B_BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

/* The 64-byte line of element kk of each of the NR rows into L1. */
CG_INLINE CG_AVX512 void cg_prefetch_b(const void *const *br, int64_t kk, const int bt) {
    const int64_t off = kk * (bt == CG_GEMM_B_F32 ? 4 : 2);
#pragma GCC unroll 8
    for (int j = 0; j < NR; j++) _mm_prefetch((const char *)br[j] + off, _MM_HINT_T0);
}

/* The first n < 16 elements from kk, zeros after (16-bit types: through a
 * zeroed buffer, since masked 16-bit loads need AVX-512BW). */
CG_INLINE CG_AVX512 __m512 cg_load_b_tail(const void *row, int64_t kk, int n, __mmask16 km, const int bt) {
    if (bt == CG_GEMM_B_F32) return _mm512_maskz_loadu_ps(km, (const float *)row + kk);
    uint16_t t[16] = {0};
    memcpy(t, (const uint16_t *)row + kk, (size_t)n * sizeof *t);
    return cg_load_b(t, 0, bt);
}

/* bf16 B, 32 elements at a time: one 512-bit load holds them as 16 pairs,
 * and a shift and a mask widen the even and the odd ones (two f32 vectors
 * for two integer operations, against a zero-extension and a shift per 16);
 * A's 32 elements are split the same way by two permutes, shared by every B
 * row of the tile. Lane l then adds the products of k = 2l and 2l + 1. */
CG_INLINE CG_AVX512 void cg_bf16_pairs(const void *row, int64_t kk, __m512 *even, __m512 *odd) {
    const __m512i v = _mm512_loadu_si512((const void *)((const uint16_t *)row + kk));
    *even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    *odd = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xFFFF0000u)));
}

CG_INLINE CG_AVX512 void cg_f32_pairs(const float *a, int64_t kk, __m512 *even, __m512 *odd) {
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512 a0 = _mm512_loadu_ps(a + kk), a1 = _mm512_loadu_ps(a + kk + 16);
    *even = _mm512_permutex2var_ps(a0, ie, a1);
    *odd = _mm512_permutex2var_ps(a0, io, a1);
}

/* C[i0:i0+mr, j0:j0+nr] with mr <= MR rows of A (a constant, so the
 * accumulators live in registers) and nr <= NR rows of B: the B rows past nr
 * repeat row j0, so every tile runs the full-width loop and only the store is
 * masked. */
CG_INLINE CG_AVX512 void cg_tile(const cg_gemm_args *g, int64_t i0, int64_t j0, const int mr, int nr, const int bt) {
    const int64_t k = g->k;
    const float *ar[MR];
    const void *br[NR];
    for (int i = 0; i < MR; i++) ar[i] = g->a + (i0 + (i < mr ? i : 0)) * g->lda;
    for (int j = 0; j < NR; j++) br[j] = cg_gemm_b_row(g, j0 + (j < nr ? j : 0));

    __m512 acc[MR][NR];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
        for (int j = 0; j < NR; j++) acc[i][j] = _mm512_setzero_ps();
    int64_t kk = 0;
    if (bt == CG_GEMM_B_BF16)
        for (; kk + 32 <= k; kk += 32) {
            if (g->pf) cg_prefetch_b(br, kk + g->pf, bt);
            __m512 be[NR], bo[NR];
#pragma GCC unroll 8
            for (int j = 0; j < NR; j++) cg_bf16_pairs(br[j], kk, &be[j], &bo[j]);
#pragma GCC unroll 8
            for (int i = 0; i < mr; i++) {
                __m512 ae, ao;
                cg_f32_pairs(ar[i], kk, &ae, &ao);
#pragma GCC unroll 8
                for (int j = 0; j < NR; j++)
                    acc[i][j] = _mm512_fmadd_ps(ao, bo[j], _mm512_fmadd_ps(ae, be[j], acc[i][j]));
            }
        }
    for (; kk + 16 <= k; kk += 16) {
        __m512 bv[NR];
#pragma GCC unroll 8
        for (int j = 0; j < NR; j++) bv[j] = cg_load_b(br[j], kk, bt);
        if (g->pf) cg_prefetch_b(br, kk + g->pf, bt);
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            __m512 av = _mm512_loadu_ps(ar[i] + kk);
#pragma GCC unroll 8
            for (int j = 0; j < NR; j++) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
        }
    }
    if (kk < k) { /* zero lanes past k add exact zeros */
        __mmask16 km = (__mmask16)((1u << (k - kk)) - 1);
        __m512 bv[NR];
#pragma GCC unroll 8
        for (int j = 0; j < NR; j++) bv[j] = cg_load_b_tail(br[j], kk, (int)(k - kk), km, bt);
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            __m512 av = _mm512_maskz_loadu_ps(km, ar[i] + kk);
#pragma GCC unroll 8
            for (int j = 0; j < NR; j++) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
        }
    }

    /* Groups of 4x4 accumulators: lane 4*i + j of the reduction is C[i][j],
     * so 128-bit lane i holds row i. */
#pragma GCC unroll 4
    for (int ig = 0; ig < mr; ig += 4)
#pragma GCC unroll 4
        for (int jg = 0; jg < NR; jg += 4) {
            __m512 x[16];
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++)
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++)
                    x[4 * i + j] = ig + i < mr && jg + j < NR ? acc[ig + i < MR ? ig + i : 0][jg + j < NR ? jg + j : 0]
                                                              : _mm512_setzero_ps();
            __m512 s = cg_reduce16(x);
            int cols = nr - jg < 4 ? nr - jg : 4;
            if (cols <= 0) continue;
            __mmask16 cm = (__mmask16)((1u << cols) - 1);
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                if (ig + i >= mr) break;
                cg_store(g->c + (i0 + ig + i) * g->ldc + j0 + jg, cm, cg_lane(s, i), g->alpha, g->beta);
            }
        }
}

/* One tile row: mr is dispatched to a constant so each variant keeps its
 * accumulators in registers. */
CG_INLINE CG_AVX512 void cg_tile_rows_bt(const cg_gemm_args *g, int64_t i0, int64_t j0, int mr, int nr, const int bt) {
    switch (mr) {
#if MR > 1
    case 1: cg_tile(g, i0, j0, 1, nr, bt); return;
#endif
#if MR > 2
    case 2: cg_tile(g, i0, j0, 2, nr, bt); return;
#endif
#if MR > 3
    case 3: cg_tile(g, i0, j0, 3, nr, bt); return;
#endif
#if MR > 4
#error "add the tile rows of the larger MR"
#endif
    default: cg_tile(g, i0, j0, MR, nr, bt); return;
    }
}

/* B's type dispatched to a constant too: one specialised kernel each. */
static CG_AVX512 void cg_tile_rows(const cg_gemm_args *g, int64_t i0, int64_t j0, int mr, int nr) {
    switch (g->bt) {
    case CG_GEMM_B_BF16: cg_tile_rows_bt(g, i0, j0, mr, nr, CG_GEMM_B_BF16); return;
    case CG_GEMM_B_F16: cg_tile_rows_bt(g, i0, j0, mr, nr, CG_GEMM_B_F16); return;
    default: cg_tile_rows_bt(g, i0, j0, mr, nr, CG_GEMM_B_F32); return;
    }
}

/* y[j0 : j0+nr] for one row of A against nr <= NV rows of B (rows past nr
 * repeat row j0, the store is masked). */
CG_INLINE CG_AVX512 void cg_gemv_tile_bt(const cg_gemm_args *g, int64_t i0, int64_t j0, int nr, const int bt) {
    const int64_t k = g->k;
    const float *x = g->a + i0 * g->lda;
    const void *br[NV];
    for (int j = 0; j < NV; j++) br[j] = cg_gemm_b_row(g, j0 + (j < nr ? j : 0));
    __m512 acc[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; j++) acc[j] = _mm512_setzero_ps();
    int64_t kk = 0;
    if (bt == CG_GEMM_B_BF16) /* as in cg_tile: the same additions for every element */
        for (; kk + 32 <= k; kk += 32) {
            __m512 xe, xo;
            cg_f32_pairs(x, kk, &xe, &xo);
#pragma GCC unroll 16
            for (int j = 0; j < NV; j++) {
                __m512 be, bo;
                cg_bf16_pairs(br[j], kk, &be, &bo);
                acc[j] = _mm512_fmadd_ps(xo, bo, _mm512_fmadd_ps(xe, be, acc[j]));
            }
        }
    for (; kk + 16 <= k; kk += 16) {
        __m512 xv = _mm512_loadu_ps(x + kk);
#pragma GCC unroll 16
        for (int j = 0; j < NV; j++) acc[j] = _mm512_fmadd_ps(xv, cg_load_b(br[j], kk, bt), acc[j]);
    }
    if (kk < k) {
        __mmask16 km = (__mmask16)((1u << (k - kk)) - 1);
        __m512 xv = _mm512_maskz_loadu_ps(km, x + kk);
#pragma GCC unroll 16
        for (int j = 0; j < NV; j++)
            acc[j] = _mm512_fmadd_ps(xv, cg_load_b_tail(br[j], kk, (int)(k - kk), km, bt), acc[j]);
    }
    cg_store(g->c + i0 * g->ldc + j0, (__mmask16)((1u << nr) - 1), cg_reduce16(acc), g->alpha, g->beta);
}

static CG_AVX512 void cg_gemv_tile(const cg_gemm_args *g, int64_t i0, int64_t j0, int nr) {
    switch (g->bt) {
    case CG_GEMM_B_BF16: cg_gemv_tile_bt(g, i0, j0, nr, CG_GEMM_B_BF16); return;
    case CG_GEMM_B_F16: cg_gemv_tile_bt(g, i0, j0, nr, CG_GEMM_B_F16); return;
    default: cg_gemv_tile_bt(g, i0, j0, nr, CG_GEMM_B_F32); return;
    }
}

const cg_gemm_kernels cg_gemm_avx512 = {"avx512",          MR, NR, NV, cg_tile_rows, cg_gemv_tile, NULL, NULL,
                                        cg_gemm_avx2_panel};

#else
typedef int cg_gemm_avx512_not_x86;
#endif
