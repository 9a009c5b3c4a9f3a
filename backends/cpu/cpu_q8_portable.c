/* Portable int8 kernels (see cpu_gemm_kernels.h, CG_GEMM_B_I8): exact int32
 * dot products of a quantized row of A with int8 rows of B, in plain C the
 * compiler may vectorise. Any CPU; the reference the SIMD sets match bit for
 * bit (the sums are exact integers, so order does not matter). */
#include "cpu_gemm_kernels.h"

#include "dtype.h"

/* Rows of B per tile: one pass over a row of A feeds NR dot products. */
#define NR 4

static void cg_q8_portable_row(const cg_gemm_args *g, int64_t i, int64_t j0, int nr) {
    const int64_t k = g->k;
    const int8_t *a = g->aq + i * g->ldaq;
    const int8_t *br[NR];
    for (int j = 0; j < NR; j++) br[j] = g->bq + (j0 + (j < nr ? j : 0)) * g->ldb;
    int32_t acc[NR] = {0};
    for (int64_t kk = 0; kk < k; kk++)
        for (int j = 0; j < NR; j++) acc[j] += (int32_t)a[kk] * br[j][kk];
    for (int j = 0; j < nr; j++) g->c[i * g->ldc + j0 + j] = cg_q8_out(g, i, j0 + j, acc[j]);
}

/* The register tile has one row of A: mr is always 1. */
static void cg_q8_portable_tile(const cg_gemm_args *g, int64_t i0, int64_t j0, int mr, int nr) {
    (void)mr;
    cg_q8_portable_row(g, i0, j0, nr);
}

const cg_gemm_kernels cg_q8_portable = {"portable",         1,         NR,   NR,  cg_q8_portable_tile,
                                        cg_q8_portable_row, cg_q8_row, NULL, NULL};
