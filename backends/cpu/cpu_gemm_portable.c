/* Portable dot-form kernel (see cpu_gemm_kernels.h): plain C for CPUs
 * without AVX2, and the reference the tests hold the SIMD paths to. Each
 * element keeps 8 partial sums along k (independent additions the compiler
 * can overlap or vectorise) and adds them pairwise at the end, the same way
 * for every element. */
#include "cpu_gemm_kernels.h"

#define CG_LANES 8
/* Rows of B per tile: one pass over a row of A feeds NR dot products. */
#define NR 4

/* C[i, j0 : j0+nr] for nr <= NR (rows past nr repeat row j0; not stored). */
static void cg_portable_tile(const cg_gemm_args *g, int64_t i, int64_t j0, int nr) {
    const int64_t k = g->k;
    const float *a = g->a + i * g->lda;
    const float *br[NR];
    for (int j = 0; j < NR; j++) br[j] = g->b + (j0 + (j < nr ? j : 0)) * g->ldb;
    float acc[NR][CG_LANES] = {{0}};
    int64_t kk = 0;
    for (; kk + CG_LANES <= k; kk += CG_LANES)
        for (int j = 0; j < NR; j++)
            for (int l = 0; l < CG_LANES; l++) acc[j][l] += a[kk + l] * br[j][kk + l];
    for (int l = 0; kk + l < k; l++)
        for (int j = 0; j < NR; j++) acc[j][l] += a[kk + l] * br[j][kk + l];
    for (int j = 0; j < nr; j++) {
        float *s = acc[j];
        for (int w = CG_LANES / 2; w > 0; w /= 2)
            for (int l = 0; l < w; l++) s[l] += s[l + w];
        float *c = g->c + i * g->ldc + j0 + j;
        float r = g->alpha * s[0];
        *c = g->beta == 0.0f ? r : r + g->beta * *c;
    }
}

/* The register tile has one row of A: mr is always 1. */
static void cg_portable_tile_rows(const cg_gemm_args *g, int64_t i0, int64_t j0, int mr, int nr) {
    (void)mr;
    cg_portable_tile(g, i0, j0, nr);
}

const cg_gemm_kernels cg_gemm_portable = {"portable", 1, NR, NR, cg_portable_tile_rows,
                                           cg_portable_tile};
