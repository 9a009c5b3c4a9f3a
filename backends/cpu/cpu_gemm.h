/* Own single-precision kernels for the products the CPU backend spends its
 * time in: linear layers and GRU gates, C = A W^T with W a row-major weight
 * matrix, and their one-row form, a GEMV. OpenBLAS covers every other case.
 *
 * The path is chosen once per process from CLGRAPH_CPU_GEMM:
 *   auto (default, also when unset, empty or unknown): the AVX-512 or AVX2
 *        kernels when the CPU has AVX-512F, or AVX2 and FMA; else OpenBLAS;
 *   own: the best own kernels, the portable C ones on a CPU without either;
 *   blas: OpenBLAS always;
 *   avx512, avx2, portable: that kernel set when the CPU runs it, else auto.
 * Results do not depend on the thread count: each element of C is computed
 * by one thread with the same operations whatever the split. */
#ifndef CG_BACKEND_CPU_GEMM_H
#define CG_BACKEND_CPU_GEMM_H

#include <stddef.h>
#include <stdint.h>

/* C = alpha * A B^T + beta * C with row-major A [m, k] (lda), B [n, k] (ldb)
 * and C [m, n] (ldc), i.e. cblas_sgemm(RowMajor, NoTrans, Trans, ...), on the
 * own kernels and the CPU thread pool. As in BLAS, beta == 0 overwrites C
 * (NaN included) and alpha == 0 or k <= 0 leaves C = beta * C without reading
 * A or B. Returns 1 when done, 0 without touching anything when the selected
 * path is OpenBLAS (the caller then calls cblas). */
int cg_cpu_gemm_nt(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                   int64_t ldb, float beta, float *c, int64_t ldc);

/* cg_cpu_gemm_nt plus bias [n] (or NULL) added to each row of C as a
 * separate pass would (one f32 addition), while each tile is in cache. */
int cg_cpu_gemm_nt_bias(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                        int64_t ldb, float beta, const float *bias, float *c, int64_t ldc);

/* y = alpha * A x + beta * y with row-major A [m, n] (lda), i.e.
 * cblas_sgemv(RowMajor, NoTrans, ..., incx = 1, incy = 1): dot products of
 * the rows of A with x, computed exactly like the rows of cg_cpu_gemm_nt.
 * m <= 0 or n <= 0 is a no-op (BLAS quick return); beta == 0 overwrites y.
 * Returns 1 when done, 0 without touching anything when the path is
 * OpenBLAS. */
int cg_cpu_gemv_n(int64_t m, int64_t n, float alpha, const float *a, int64_t lda, const float *x, float beta, float *y);

/* cg_cpu_gemm_nt with B stored as 16-bit floats, widened in registers:
 * bf16 (bf16 != 0) or IEEE half. Half the bytes of an f32 weight to read
 * (a decoder step at batch 1 is bound by them); products and sums in f32.
 * Always the own kernels (OpenBLAS has no such product): the selected ones,
 * or the best this CPU runs on the blas path. A GEMV when m == 1 (lda
 * unused then). */
void cg_cpu_gemm_nt_h(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda, const uint16_t *b,
                      int bf16, int64_t ldb, float beta, float *c, int64_t ldc);

/* C = A (diag(b_scale) B)^T for row-major A [m, k] (lda), int8 B [n, k]
 * (ldb) with one f32 scale per row, C [m, n] (ldc) overwritten: each row of
 * A is quantized to int8 on the fly (cg_q8_row: its own scale, max|a| / 127),
 * the products are exact int32 sums (AVX-512 VNNI, AVX2 vpmaddubsw or
 * portable C, chosen with the f32 path: the same bits on each), and
 * C[i][j] = (float)sum * a_scale[i] * b_scale[j]. A quarter of an f32
 * weight's bytes; the error against f32 is that of rounding A and B to 8
 * bits. A row of A holding NaN or an infinity gives a row of NaN. b_sums:
 * cg_cpu_q8_row_sums of B, or NULL (made in the call when it pays); from
 * 8 rows of A on, the AVX-512 VNNI set packs B a panel at a time into the
 * scratch and takes the outer-product form instead (the same bits; 1.5 to
 * 2x the dot form's speed at k = 512, level at 8 rows). `scratch`
 * holds cg_cpu_gemm_q8_scratch(m, n, k) bytes (no allocation per call).
 * bias: NULL, or [n] added to each row of C as a separate pass would
 * (one f32 addition), while the tile is in cache.
 * k <= 0 gives zeros (plus the bias). */
void cg_cpu_gemm_nt_q8(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const int8_t *b,
                       const float *b_scale, const int32_t *b_sums, int64_t ldb, const float *bias, float *c,
                       int64_t ldc, void *scratch);

/* The b_sums cg_cpu_gemm_nt_q8 may take: 128 times the sum of each of the n
 * rows of int8 B [n, k] (ldb), made once for a weight that does not change
 * (an op's per-node state) instead of in every call. */
void cg_cpu_q8_row_sums(int64_t n, int64_t k, const int8_t *b, int64_t ldb, int32_t *sums);

/* Bytes of scratch cg_cpu_gemm_nt_q8 needs for m rows of k against n rows
 * of B (0 if m or k is <= 0). */
size_t cg_cpu_gemm_q8_scratch(int64_t m, int64_t n, int64_t k);

/* The int8 kernels the selected path uses: "avx512" (VNNI), "avx2" or
 * "portable". */
const char *cg_cpu_gemm_q8_path(void);

/* Columns of one panel of cg_cpu_gemm_panel's B. */
#define CG_GEMM_PANEL 16

/* C[0:m, 0:nr] = init[i] + A[i, :] B[:, 0:nr] for row-major A [m, k] (lda),
 * one column panel B [k, CG_GEMM_PANEL] with row stride ldb (a packed panel
 * has ldb = CG_GEMM_PANEL; the columns past nr <= CG_GEMM_PANEL are read
 * but not stored, so they must be readable and should be finite) and C
 * [m, nr] (ldc); init NULL for zeros. The product of an im2col'd panel of a
 * convolution with its weights. Each element is its init, then the k
 * products added in the order of k (fused multiply-adds on the AVX2 and
 * AVX-512 paths), whatever m, nr or ldb: the bits depend on the path only,
 * as with cg_cpu_gemm_nt. Runs on the calling thread (the caller splits
 * the work); m <= 0 or nr <= 0 does nothing, k <= 0 stores init. */
void cg_cpu_gemm_panel(int64_t m, int nr, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                       const float *init, float *c, int64_t ldc);

/* The selected path: "avx512", "avx2", "portable" or "blas". */
const char *cg_cpu_gemm_path(void);

/* Selects a path by name, like CLGRAPH_CPU_GEMM but strict: "auto", "own",
 * "blas", "avx512", "avx2" or "portable". Returns 1, or 0 (selection
 * unchanged) for an unknown name or kernels this CPU cannot run. For tests
 * and benchmarks: no other thread may be multiplying meanwhile. */
int cg_cpu_gemm_force(const char *name);

#endif
