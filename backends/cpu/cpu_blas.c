#include "cpu_blas.h"

#include "cpu_gemm.h"

#include <cblas.h>
#include <stdlib.h>

void cg_cpu_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0 || alpha == 0.0f) {
        /* BLAS leaves C untouched for k == 0 only when beta == 1, and
         * OpenBLAS's small-matrix kernels (Zen 4) read A and B even when
         * alpha == 0, so a NaN there leaks into C: make C = beta * C
         * explicit for both. */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return;
    }
    /* Linear layers (A W^T): the own kernels, unless OpenBLAS is selected. */
    if (!trans_a && trans_b && cg_cpu_gemm_nt(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, (blasint)m,
                (blasint)n, (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
}

void cg_cpu_sgemv(int trans_a, int64_t m, int64_t n, float alpha, const float *a, int64_t lda, const float *x,
                  float beta, float *y) {
    if (m <= 0 || n <= 0) return;
    if (alpha == 0.0f) { /* as in cg_cpu_sgemm: x and A are not read */
        int64_t len = trans_a ? n : m;
        for (int64_t i = 0; i < len; i++) y[i] = beta == 0.0f ? 0.0f : beta * y[i];
        return;
    }
    if (!trans_a && cg_cpu_gemv_n(m, n, alpha, a, lda, x, beta, y)) return;
    cblas_sgemv(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n, alpha, a, (blasint)lda, x,
                1, beta, y, 1);
}
