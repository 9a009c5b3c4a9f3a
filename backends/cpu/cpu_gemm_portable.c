/* Portable dot-form kernel (see cpu_gemm_kernels.h): plain C for CPUs
 * without AVX2, and the reference the tests hold the SIMD paths to. Each
 * element keeps 8 partial sums along k (independent additions the compiler
 * can overlap or vectorise) and adds them pairwise at the end, the same way
 * for every element. B may be f32, bf16 or f16 (widened as it is read). */
#include "cpu_gemm_kernels.h"

#include <string.h>

#include "dtype.h"

#define CG_LANES 8
/* Rows of B per tile: one pass over a row of A feeds NR dot products. */
#define NR 4

/* Element k of B row `row` as f32 (bt a constant after inlining). */
static inline __attribute__((always_inline)) float cg_b_elem(const void *row, int64_t k, int bt) {
    if (bt == CG_GEMM_B_F32) return ((const float *)row)[k];
    const uint16_t h = ((const uint16_t *)row)[k];
    uint32_t u = bt == CG_GEMM_B_BF16 ? (uint32_t)h << 16 : cg_f16_to_f32_bits(h);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* C[i, j0 : j0+nr] for nr <= NR (rows past nr repeat row j0; not stored). */
static inline __attribute__((always_inline)) void cg_portable_tile_bt(const cg_gemm_args *g, int64_t i, int64_t j0,
                                                                      int nr, const int bt) {
    const int64_t k = g->k;
    const float *a = g->a + i * g->lda;
    const void *br[NR];
    for (int j = 0; j < NR; j++) br[j] = cg_gemm_b_row(g, j0 + (j < nr ? j : 0));
    float acc[NR][CG_LANES] = {{0}};
    int64_t kk = 0;
    for (; kk + CG_LANES <= k; kk += CG_LANES)
        for (int j = 0; j < NR; j++)
            for (int l = 0; l < CG_LANES; l++) acc[j][l] += a[kk + l] * cg_b_elem(br[j], kk + l, bt);
    for (int l = 0; kk + l < k; l++)
        for (int j = 0; j < NR; j++) acc[j][l] += a[kk + l] * cg_b_elem(br[j], kk + l, bt);
    for (int j = 0; j < nr; j++) {
        float *s = acc[j];
        for (int w = CG_LANES / 2; w > 0; w /= 2)
            for (int l = 0; l < w; l++) s[l] += s[l + w];
        float *c = g->c + i * g->ldc + j0 + j;
        float r = g->alpha * s[0];
        *c = g->beta == 0.0f ? r : r + g->beta * *c;
    }
}

static void cg_portable_tile(const cg_gemm_args *g, int64_t i, int64_t j0, int nr) {
    switch (g->bt) {
    case CG_GEMM_B_BF16: cg_portable_tile_bt(g, i, j0, nr, CG_GEMM_B_BF16); return;
    case CG_GEMM_B_F16: cg_portable_tile_bt(g, i, j0, nr, CG_GEMM_B_F16); return;
    default: cg_portable_tile_bt(g, i, j0, nr, CG_GEMM_B_F32); return;
    }
}

/* The register tile has one row of A: mr is always 1. */
static void cg_portable_tile_rows(const cg_gemm_args *g, int64_t i0, int64_t j0, int mr, int nr) {
    (void)mr;
    cg_portable_tile(g, i0, j0, nr);
}

/* Panel kernel: 4 rows of A by the panel's 16 columns, plain products and
 * sums (no fused multiply-add: the compiler may not contract them in C11). */
#define MP 4

static void cg_portable_panel(int64_t m, int nr, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                              const float *init, float *c, int64_t ldc) {
    for (int64_t i0 = 0; i0 < m; i0 += MP) {
        const int mr = m - i0 < MP ? (int)(m - i0) : MP;
        float acc[MP][CG_GEMM_PANEL];
        for (int i = 0; i < MP; i++)
            for (int l = 0; l < CG_GEMM_PANEL; l++) acc[i][l] = init && i < mr ? init[i0 + i] : 0.0f;
        for (int64_t kk = 0; kk < k; kk++)
            for (int i = 0; i < mr; i++) {
                const float av = a[(i0 + i) * lda + kk];
                for (int l = 0; l < CG_GEMM_PANEL; l++) acc[i][l] += av * b[kk * ldb + l];
            }
        for (int i = 0; i < mr; i++) memcpy(c + (i0 + i) * ldc, acc[i], (size_t)nr * sizeof(float));
    }
}

const cg_gemm_kernels cg_gemm_portable = {
    "portable", 1, NR, NR, cg_portable_tile_rows, cg_portable_tile, NULL, NULL, cg_portable_panel};
