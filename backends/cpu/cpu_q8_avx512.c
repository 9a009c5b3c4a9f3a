/* AVX-512 VNNI int8 kernels (see cpu_gemm_kernels.h, CG_GEMM_B_I8).
 *
 * vpdpbusd adds the products of 4 unsigned by 4 signed bytes into each int32
 * lane, without saturation. A's bytes become unsigned by adding 128
 * (a xor 0x80), so each sum gains 128 * sum(b): the same instruction on the
 * constant 128 and the B vector gives that term, once per B row for the whole
 * tile, and it is subtracted at the end. Sums are exact. */
#include "cpu_gemm_kernels.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define CG_AVX512 __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define CG_INLINE static inline __attribute__((always_inline))

/* 4x4 accumulators + 4 row-sum terms + 4 B vectors + A fit 32 registers. */
#define MR 4
#define NR 4
#define NV 12

/* 64 bytes of a B row from kk; past k zeros. */
CG_INLINE CG_AVX512 __m512i cg_load_bq(const int8_t *row, int64_t kk, int64_t k) {
    if (kk + 64 <= k) return _mm512_loadu_si512((const void *)(row + kk));
    return _mm512_maskz_loadu_epi8(_cvtu64_mask64(~0ull >> (64 - (k - kk))), row + kk);
}

CG_INLINE CG_AVX512 void cg_tile(const cg_gemm_args *g, int64_t i0, int64_t j0, const int mr, int nr) {
    const int64_t k = g->k;
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const int8_t *ar[MR], *br[NR];
    for (int i = 0; i < MR; i++) ar[i] = g->aq + (i0 + (i < mr ? i : 0)) * g->ldaq;
    for (int j = 0; j < NR; j++) br[j] = g->bq + (j0 + (j < nr ? j : 0)) * g->ldb;
    __m512i acc[MR][NR], off[NR];
#pragma GCC unroll 8
    for (int j = 0; j < NR; j++) {
        off[j] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) acc[i][j] = _mm512_setzero_si512();
    }
    for (int64_t kk = 0; kk < k; kk += 64) {
        __m512i bv[NR];
#pragma GCC unroll 8
        for (int j = 0; j < NR; j++) {
            bv[j] = cg_load_bq(br[j], kk, k);
            off[j] = _mm512_dpbusd_epi32(off[j], flip, bv[j]);
        }
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) { /* A is padded: past k it meets zeros of B */
            __m512i au = _mm512_xor_si512(_mm512_loadu_si512((const void *)(ar[i] + kk)), flip);
#pragma GCC unroll 8
            for (int j = 0; j < NR; j++) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], au, bv[j]);
        }
    }
    for (int j = 0; j < nr; j++) {
        int32_t o = _mm512_reduce_add_epi32(off[j]);
        for (int i = 0; i < mr; i++)
            g->c[(i0 + i) * g->ldc + j0 + j] =
                cg_q8_out(g, i0 + i, j0 + j, _mm512_reduce_add_epi32(acc[i][j]) - o);
    }
}

static CG_AVX512 void cg_tile_rows(const cg_gemm_args *g, int64_t i0, int64_t j0, int mr, int nr) {
    switch (mr) {
    case 1: cg_tile(g, i0, j0, 1, nr); return;
    case 2: cg_tile(g, i0, j0, 2, nr); return;
    case 3: cg_tile(g, i0, j0, 3, nr); return;
    default: cg_tile(g, i0, j0, MR, nr); return;
    }
}

/* One row of A against nr <= NV rows of B. */
static CG_AVX512 void cg_gemv_tile(const cg_gemm_args *g, int64_t i0, int64_t j0, int nr) {
    const int64_t k = g->k;
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const int8_t *a = g->aq + i0 * g->ldaq, *br[NV];
    for (int j = 0; j < NV; j++) br[j] = g->bq + (j0 + (j < nr ? j : 0)) * g->ldb;
    __m512i acc[NV], off[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; j++) acc[j] = off[j] = _mm512_setzero_si512();
    for (int64_t kk = 0; kk < k; kk += 64) {
        __m512i au = _mm512_xor_si512(_mm512_loadu_si512((const void *)(a + kk)), flip);
#pragma GCC unroll 16
        for (int j = 0; j < NV; j++) {
            __m512i bv = cg_load_bq(br[j], kk, k);
            acc[j] = _mm512_dpbusd_epi32(acc[j], au, bv);
            off[j] = _mm512_dpbusd_epi32(off[j], flip, bv);
        }
    }
    for (int j = 0; j < nr; j++)
        g->c[i0 * g->ldc + j0 + j] =
            cg_q8_out(g, i0, j0 + j, _mm512_reduce_add_epi32(acc[j]) - _mm512_reduce_add_epi32(off[j]));
}

const cg_gemm_kernels cg_q8_avx512 = {"avx512", MR, NR, NV, cg_tile_rows, cg_gemv_tile};

#else
typedef int cg_q8_avx512_not_x86;
#endif
