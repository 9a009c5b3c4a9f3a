/* AVX2 + FMA dot-form kernels (see cpu_gemm_kernels.h); the same design as
 * cpu_gemm_avx512.c with 8-lane accumulators and 16 registers. The lanes of
 * an accumulator are summed by the additions (i, i+4), (i, i+2), (i, i+1),
 * for 8 accumulators together by a transposing reduction with the same
 * additions lane by lane, so a tail tile, a full tile and the GEMV tile give
 * every element of C the same arithmetic. */
#include "cpu_gemm_kernels.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>
#include <string.h>

/* F16C widens f16 weights (every AVX2 CPU has it; the driver checks). */
#define CG_AVX2 __attribute__((target("avx2,fma,f16c")))
#define CG_INLINE static inline __attribute__((always_inline))

/* Register tile: 3x4 holds 12 accumulators, 3 of the 4 B vectors and the A
 * vector in the 16 registers (the fourth B vector is a memory operand, an L1
 * hit); measured 10-30% faster than 2x4 and 3x3, and than 2x6. */
#define MR 3
#define NR 4
/* GEMV tile: rows of B per pass over x (8 load streams, one reduction). */
#define NV 8
/* Cache blocks (bytes): rows of A that stay in L1 while a strip of NR rows
 * of B passes over all of them, and rows of B that stay in L2 meanwhile. */

/* Lane q of the result is the sum of the 8 lanes of x[q]. */
CG_INLINE CG_AVX2 __m256 cg_reduce8(const __m256 *x) {
    /* Inputs paired so the result comes out in order: the three levels below
     * leave lane 0..3 = pairs' first elements, lane 4..7 = second elements. */
    __m256 p0 = _mm256_add_ps(_mm256_permute2f128_ps(x[0], x[4], 0x20), _mm256_permute2f128_ps(x[0], x[4], 0x31));
    __m256 p1 = _mm256_add_ps(_mm256_permute2f128_ps(x[1], x[5], 0x20), _mm256_permute2f128_ps(x[1], x[5], 0x31));
    __m256 p2 = _mm256_add_ps(_mm256_permute2f128_ps(x[2], x[6], 0x20), _mm256_permute2f128_ps(x[2], x[6], 0x31));
    __m256 p3 = _mm256_add_ps(_mm256_permute2f128_ps(x[3], x[7], 0x20), _mm256_permute2f128_ps(x[3], x[7], 0x31));
    __m256 q0 = _mm256_add_ps(_mm256_shuffle_ps(p0, p1, 0x44), _mm256_shuffle_ps(p0, p1, 0xEE));
    __m256 q1 = _mm256_add_ps(_mm256_shuffle_ps(p2, p3, 0x44), _mm256_shuffle_ps(p2, p3, 0xEE));
    return _mm256_add_ps(_mm256_shuffle_ps(q0, q1, 0x88), _mm256_shuffle_ps(q0, q1, 0xDD));
}

/* Lane mask for _mm256_maskload/maskstore: the first n of 8 lanes. */
CG_INLINE CG_AVX2 __m256i cg_mask8(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* c[0..] = alpha * s + beta * c on the lanes of mask (beta == 0: c is not
 * read). */
CG_INLINE CG_AVX2 void cg_store8(float *c, __m256i mask, __m256 s, float alpha, float beta) {
    __m256 r = _mm256_mul_ps(_mm256_set1_ps(alpha), s);
    if (beta != 0.0f) r = _mm256_add_ps(r, _mm256_mul_ps(_mm256_set1_ps(beta), _mm256_maskload_ps(c, mask)));
    _mm256_maskstore_ps(c, mask, r);
}

CG_INLINE CG_AVX2 void cg_store4(float *c, __m128i mask, __m128 s, float alpha, float beta) {
    __m128 r = _mm_mul_ps(_mm_set1_ps(alpha), s);
    if (beta != 0.0f) r = _mm_add_ps(r, _mm_mul_ps(_mm_set1_ps(beta), _mm_maskload_ps(c, mask)));
    _mm_maskstore_ps(c, mask, r);
}

/* 8 elements of a B row from element kk as f32 (bt a constant after
 * inlining): bf16 is the top half of an f32, f16 widens with vcvtph2ps. */
CG_INLINE CG_AVX2 __m256 cg_load_b(const void *row, int64_t kk, const int bt) {
    if (bt == CG_GEMM_B_F32) return _mm256_loadu_ps((const float *)row + kk);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)row + kk));
    if (bt == CG_GEMM_B_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

/* The first n < 8 elements from kk, zeros after. */
CG_INLINE CG_AVX2 __m256 cg_load_b_tail(const void *row, int64_t kk, int n, __m256i km, const int bt) {
    if (bt == CG_GEMM_B_F32) return _mm256_maskload_ps((const float *)row + kk, km);
    uint16_t t[8] = {0};
    memcpy(t, (const uint16_t *)row + kk, (size_t)n * sizeof *t);
    return cg_load_b(t, 0, bt);
}

/* C[i0:i0+mr, j0:j0+nr], mr <= MR a constant, nr <= NR: B rows past nr
 * repeat row j0 and only the store is masked. */
CG_INLINE CG_AVX2 void cg_tile(const cg_gemm_args *g, int64_t i0, int64_t j0, const int mr, int nr, const int bt) {
    const int64_t k = g->k;
    const float *ar[MR];
    const void *br[NR];
    for (int i = 0; i < MR; i++) ar[i] = g->a + (i0 + (i < mr ? i : 0)) * g->lda;
    for (int j = 0; j < NR; j++) br[j] = cg_gemm_b_row(g, j0 + (j < nr ? j : 0));

    __m256 acc[MR][NR];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
        for (int j = 0; j < NR; j++) acc[i][j] = _mm256_setzero_ps();
    int64_t kk = 0;
    for (; kk + 8 <= k; kk += 8) {
        __m256 bv[NR];
#pragma GCC unroll 8
        for (int j = 0; j < NR; j++) bv[j] = cg_load_b(br[j], kk, bt);
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            __m256 av = _mm256_loadu_ps(ar[i] + kk);
#pragma GCC unroll 8
            for (int j = 0; j < NR; j++) acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);
        }
    }
    if (kk < k) { /* zero lanes past k add exact zeros */
        __m256i km = cg_mask8((int)(k - kk));
        __m256 bv[NR];
#pragma GCC unroll 8
        for (int j = 0; j < NR; j++) bv[j] = cg_load_b_tail(br[j], kk, (int)(k - kk), km, bt);
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            __m256 av = _mm256_maskload_ps(ar[i] + kk, km);
#pragma GCC unroll 8
            for (int j = 0; j < NR; j++) acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);
        }
    }

    /* Groups of 2x4 accumulators: lane 4*i + j of the reduction is C[i][j]. */
#pragma GCC unroll 4
    for (int ig = 0; ig < mr; ig += 2)
#pragma GCC unroll 4
        for (int jg = 0; jg < NR; jg += 4) {
            __m256 x[8];
#pragma GCC unroll 2
            for (int i = 0; i < 2; i++)
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++)
                    x[4 * i + j] = ig + i < mr && jg + j < NR ? acc[ig + i < MR ? ig + i : 0][jg + j < NR ? jg + j : 0]
                                                              : _mm256_setzero_ps();
            __m256 s = cg_reduce8(x);
            int cols = nr - jg < 4 ? nr - jg : 4;
            if (cols <= 0) continue;
            __m128i cm = _mm256_castsi256_si128(cg_mask8(cols));
            float *c = g->c + (i0 + ig) * g->ldc + j0 + jg;
            cg_store4(c, cm, _mm256_castps256_ps128(s), g->alpha, g->beta);
            if (ig + 1 < mr) cg_store4(c + g->ldc, cm, _mm256_extractf128_ps(s, 1), g->alpha, g->beta);
        }
}

/* One tile row: mr dispatched to a constant (registers, not memory). */
CG_INLINE CG_AVX2 void cg_tile_rows_bt(const cg_gemm_args *g, int64_t i0, int64_t j0, int mr, int nr, const int bt) {
    switch (mr) {
#if MR > 1
    case 1: cg_tile(g, i0, j0, 1, nr, bt); return;
#endif
#if MR > 2
    case 2: cg_tile(g, i0, j0, 2, nr, bt); return;
#endif
#if MR > 3
#error "add the tile rows of the larger MR"
#endif
    default: cg_tile(g, i0, j0, MR, nr, bt); return;
    }
}

/* B's type dispatched to a constant too: one specialised kernel each. */
static CG_AVX2 void cg_tile_rows(const cg_gemm_args *g, int64_t i0, int64_t j0, int mr, int nr) {
    switch (g->bt) {
    case CG_GEMM_B_BF16: cg_tile_rows_bt(g, i0, j0, mr, nr, CG_GEMM_B_BF16); return;
    case CG_GEMM_B_F16: cg_tile_rows_bt(g, i0, j0, mr, nr, CG_GEMM_B_F16); return;
    default: cg_tile_rows_bt(g, i0, j0, mr, nr, CG_GEMM_B_F32); return;
    }
}

/* y[j0 : j0+nr] for one row of A against nr <= NV rows of B. */
CG_INLINE CG_AVX2 void cg_gemv_tile_bt(const cg_gemm_args *g, int64_t i0, int64_t j0, int nr, const int bt) {
    const int64_t k = g->k;
    const float *x = g->a + i0 * g->lda;
    const void *br[NV];
    for (int j = 0; j < NV; j++) br[j] = cg_gemm_b_row(g, j0 + (j < nr ? j : 0));
    __m256 acc[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; j++) acc[j] = _mm256_setzero_ps();
    int64_t kk = 0;
    for (; kk + 8 <= k; kk += 8) {
        __m256 xv = _mm256_loadu_ps(x + kk);
#pragma GCC unroll 8
        for (int j = 0; j < NV; j++) acc[j] = _mm256_fmadd_ps(xv, cg_load_b(br[j], kk, bt), acc[j]);
    }
    if (kk < k) {
        __m256i km = cg_mask8((int)(k - kk));
        __m256 xv = _mm256_maskload_ps(x + kk, km);
#pragma GCC unroll 8
        for (int j = 0; j < NV; j++)
            acc[j] = _mm256_fmadd_ps(xv, cg_load_b_tail(br[j], kk, (int)(k - kk), km, bt), acc[j]);
    }
    cg_store8(g->c + i0 * g->ldc + j0, cg_mask8(nr), cg_reduce8(acc), g->alpha, g->beta);
}

static CG_AVX2 void cg_gemv_tile(const cg_gemm_args *g, int64_t i0, int64_t j0, int nr) {
    switch (g->bt) {
    case CG_GEMM_B_BF16: cg_gemv_tile_bt(g, i0, j0, nr, CG_GEMM_B_BF16); return;
    case CG_GEMM_B_F16: cg_gemv_tile_bt(g, i0, j0, nr, CG_GEMM_B_F16); return;
    default: cg_gemv_tile_bt(g, i0, j0, nr, CG_GEMM_B_F32); return;
    }
}

/* Panel tile: MP rows of A by one or two vectors of the panel's columns,
 * 12 accumulators, the 2 B vectors and a broadcast of A in 15 registers. */
#define MP 6

/* C[0:mr, 0:nr] of one panel, mr <= MP and nv (vectors: 1 when nr <= 8)
 * constants after inlining. */
CG_INLINE CG_AVX2 void cg_panel_tile(int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                                     const float *init, float *c, int64_t ldc, const int mr, const int nv, int nr) {
    const float *ar[MP];
    for (int i = 0; i < MP; i++) ar[i] = a + (i < mr ? i : 0) * lda;
    __m256 acc[MP][2];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) acc[i][0] = acc[i][1] = init ? _mm256_set1_ps(init[i]) : _mm256_setzero_ps();
    for (int64_t kk = 0; kk < k; kk++) {
        const __m256 b0 = _mm256_loadu_ps(b + kk * ldb), b1 = nv > 1 ? _mm256_loadu_ps(b + kk * ldb + 8) : b0;
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            const __m256 av = _mm256_broadcast_ss(ar[i] + kk);
            acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
            if (nv > 1) acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
        }
    }
    const __m256i m0 = cg_mask8(nr < 8 ? nr : 8), m1 = cg_mask8(nr - 8);
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) {
        if (nr == CG_GEMM_PANEL) {
            _mm256_storeu_ps(c + i * ldc, acc[i][0]);
            _mm256_storeu_ps(c + i * ldc + 8, acc[i][1]);
            continue;
        }
        _mm256_maskstore_ps(c + i * ldc, m0, acc[i][0]);
        if (nv > 1) _mm256_maskstore_ps(c + i * ldc + 8, m1, acc[i][1]);
    }
}

/* mr and nv dispatched to constants. */
CG_INLINE CG_AVX2 void cg_panel_rows(int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                                     const float *init, float *c, int64_t ldc, int mr, const int nv, int nr) {
    switch (mr) {
    case 1: cg_panel_tile(k, a, lda, b, ldb, init, c, ldc, 1, nv, nr); return;
    case 2: cg_panel_tile(k, a, lda, b, ldb, init, c, ldc, 2, nv, nr); return;
    case 3: cg_panel_tile(k, a, lda, b, ldb, init, c, ldc, 3, nv, nr); return;
    case 4: cg_panel_tile(k, a, lda, b, ldb, init, c, ldc, 4, nv, nr); return;
    case 5: cg_panel_tile(k, a, lda, b, ldb, init, c, ldc, 5, nv, nr); return;
    default: cg_panel_tile(k, a, lda, b, ldb, init, c, ldc, MP, nv, nr); return;
    }
}

CG_AVX2 void cg_gemm_avx2_panel(int64_t m, int nr, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                                const float *init, float *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i += MP) {
        const int mr = m - i < MP ? (int)(m - i) : MP;
        const float *in = init ? init + i : NULL;
        if (nr > 8) cg_panel_rows(k, a + i * lda, lda, b, ldb, in, c + i * ldc, ldc, mr, 2, nr);
        else cg_panel_rows(k, a + i * lda, lda, b, ldb, in, c + i * ldc, ldc, mr, 1, nr);
    }
}

const cg_gemm_kernels cg_gemm_avx2 = {"avx2", MR, NR, NV, cg_tile_rows, cg_gemv_tile, NULL, NULL, cg_gemm_avx2_panel};

#else
typedef int cg_gemm_avx2_not_x86;
#endif
