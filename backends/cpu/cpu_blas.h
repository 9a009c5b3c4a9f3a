/* CBLAS glue of the CPU backend: the only place that includes cblas.h. */
#ifndef CG_BACKEND_CPU_BLAS_H
#define CG_BACKEND_CPU_BLAS_H

#include <stddef.h>
#include <stdint.h>

/* Row-major C = alpha * op(A) op(B) + beta * C (see cg_host_api.sgemm). */
void cg_cpu_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* Row-major y = alpha * op(A) x + beta * y, A is [m, n]. */
void cg_cpu_sgemv(int trans_a, int64_t m, int64_t n, float alpha, const float *a, int64_t lda, const float *x,
                  float beta, float *y);

#endif
