/* Internal interface between the GEMM driver (cpu_gemm.c) and its per-ISA
 * kernels (cpu_gemm_portable.c, cpu_gemm_avx2.c, cpu_gemm_avx512.c).
 *
 * Every kernel computes the "dot form" C = alpha * A B^T + beta * C where A is
 * [m, k] and B is [n, k], both row-major: each element of C is one dot product
 * of two contiguous rows. Within one ISA each element is computed with the same
 * sequence of operations wherever it falls in a tile, a thread's range or a
 * GEMV, so results depend neither on the thread count nor on M. */
#ifndef CG_BACKEND_CPU_GEMM_KERNELS_H
#define CG_BACKEND_CPU_GEMM_KERNELS_H

#include <stdint.h>

#include "cpu_gemm.h"

/* How B is stored: f32, or 16-bit floats the kernels widen in registers
 * (a weight matrix kept in half the bytes: bf16 is f32's top half, f16
 * IEEE half precision). Products and sums are f32 either way. */
enum { CG_GEMM_B_F32 = 0, CG_GEMM_B_BF16 = 1, CG_GEMM_B_F16 = 2 };

/* int8 products (the q8 kernel sets, CG_GEMM_B_I8): A arrives quantized per
 * row by cg_q8_row (aq, rows of ldaq bytes, ldaq a multiple of 64 with
 * padding the kernels may read but never count, scales as[]) and B is int8
 * with one scale per row (bq, bs[]). Each element of C is the exact int32 sum
 * of products, then (float)sum * as[i] * bs[j]: every q8 set gives the same
 * bits. alpha and beta are not used (C is overwritten). */
enum { CG_GEMM_B_I8 = 3, CG_Q8_PAD = 64 };

typedef struct cg_gemm_args {
    int64_t m, n, k;   /* k >= 1 */
    float alpha, beta; /* alpha != 0; beta == 0 overwrites C */
    const float *a;
    int64_t lda;    /* 0 is allowed when m == 1 (a GEMV's vector) */
    const float *b; /* CG_GEMM_B_F32 */
    int64_t ldb;    /* in elements of B's type */
    float *c;
    int64_t ldc;
    const uint16_t *bh; /* CG_GEMM_B_BF16 / _F16 */
    int bt;             /* CG_GEMM_B_* */
    const int8_t *bq;   /* CG_GEMM_B_I8 (see above) */
    const float *bs;
    const int8_t *aq;
    const float *as;
    int64_t ldaq;
    const int32_t *bsum; /* 128 x each B row's sum (kernels' bsum), or NULL: a set
                            that wants them computes them in each tile */
    const float *bias;   /* [n] added to each row of C after the product (the driver adds it per tile, the
                            packed int8 tile as it stores), or NULL */
    int64_t pf;          /* elements from each B row of a tile to the one the tile prefetches as it
                            goes along k (the next strip's row), 0: none; kernels may ignore it */
} cg_gemm_args;

/* Row r of B, element 0, whatever its type (not int8). */
static inline const void *cg_gemm_b_row(const cg_gemm_args *g, int64_t r) {
    return g->bt == CG_GEMM_B_F32 ? (const void *)(g->b + r * g->ldb) : (const void *)(g->bh + r * g->ldb);
}

/* C[i0 : i0+mr, j0 : j0+nr] of g for mr <= the kernels' mr, nr <= their nr.
 * Tiles of one call may run concurrently: they write disjoint parts of C. */
typedef void (*cg_gemm_tile_fn)(const cg_gemm_args *g, int64_t i0, int64_t j0, int mr, int nr);

/* C[i0, j0 : j0+nr] of g for nr <= the kernels' nv: one row of A (a GEMV). */
typedef void (*cg_gemv_tile_fn)(const cg_gemm_args *g, int64_t i0, int64_t j0, int nr);

/* Quantizes one row of A for the int8 sets: exactly cg_q8_row (base/dtype.h),
 * the same bits, in that ISA's vectors. */
typedef float (*cg_q8_row_fn)(const float *x, int64_t n, int8_t *q);

/* 128 times the sum of k int8 values: the term a set whose products take
 * a + 128 subtracts (NULL in sets that do not). */
typedef int32_t (*cg_q8_sum_fn)(const int8_t *b, int64_t k);

/* C[0:m, 0:nr] = init[i] + A[i, :] B[:, 0:nr] for A [m, k] (lda) and one
 * column panel B [k, CG_GEMM_PANEL] (row stride ldb; only its first nr <=
 * CG_GEMM_PANEL columns are stored, the others may hold anything finite),
 * init NULL for zeros: the outer-product form, each element its init then
 * the k products added in order, whatever m, nr or the tile it falls in. */
typedef void (*cg_gemm_panel_fn)(int64_t m, int nr, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                                 const float *init, float *c, int64_t ldc);

/* The kernels of one ISA. mr/nr are the register tile (rows of A by rows of
 * B) and nv the GEMV tile (rows of B against one row of A, used when a block
 * has one row): the driver (cpu_gemm.c) blocks for the caches, splits over
 * threads in whole tiles and calls these per tile. */
typedef struct cg_gemm_kernels {
    const char *name;
    int mr, nr, nv;
    cg_gemm_tile_fn tile;
    cg_gemv_tile_fn gemv;
    cg_q8_row_fn qrow; /* int8 sets only */
    cg_q8_sum_fn bsum;
    cg_gemm_panel_fn panel; /* f32 sets; NULL: the best own set's */
} cg_gemm_kernels;

/* Plain C, any CPU. */
extern const cg_gemm_kernels cg_gemm_portable;
extern const cg_gemm_kernels cg_q8_portable;
#if defined(__x86_64__) || defined(__i386__)
/* Need AVX2 and FMA, resp. AVX-512F and FMA, at run time: the driver
 * checks with __builtin_cpu_supports before using them. */
extern const cg_gemm_kernels cg_gemm_avx2;
extern const cg_gemm_kernels cg_gemm_avx512;
/* The int8 sets: AVX2 (vpmaddubsw on |a| and sign-adjusted b), and AVX-512
 * BW + VNNI (vpdpbusd on a + 128, less 128 times the row sums of b). */
extern const cg_gemm_kernels cg_q8_avx2;
extern const cg_gemm_kernels cg_q8_avx512;
/* The AVX2 panel kernel, which the AVX-512 set shares. */
void cg_gemm_avx2_panel(int64_t m, int nr, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                        const float *init, float *c, int64_t ldc);
#endif

/* The int8 outer-product form (cpu_q8_packed_avx512.c), for products with
 * at least CG_Q8_PACK_ROWS rows of A: `pack` copies B rows j0 .. j0 + nr
 * (nr <= CG_Q8_NP) into a 64-byte aligned panel of k4 groups of four k
 * (k4 = ldaq / 4), each group the panel's rows side by side as unsigned
 * b + 128; `tile` computes C rows i0 .. i0 + mr (mr <= CG_Q8_MP) of those
 * columns, asum[i] being 128 times A row i's sum (the term b + 128 adds).
 * The same bits as the dot form. */
enum { CG_Q8_NP = 48, CG_Q8_MP = 8, CG_Q8_PACK_ROWS = 8 };
typedef struct cg_q8_packed_kernels {
    void (*pack)(const cg_gemm_args *g, int64_t j0, int nr, int64_t k4, uint8_t *panel);
    void (*tile)(const cg_gemm_args *g, const uint8_t *panel, int64_t k4, const int32_t *asum, int64_t i0, int mr,
                 int64_t j0, int nr);
} cg_q8_packed_kernels;
#if defined(__x86_64__) || defined(__i386__)
extern const cg_q8_packed_kernels cg_q8_packed_avx512; /* with cg_q8_avx512 */
#endif

/* C[i][j] of an int8 product from its exact sum (every q8 set). */
static inline float cg_q8_out(const cg_gemm_args *g, int64_t i, int64_t j, int32_t sum) {
    return (float)sum * g->as[i] * g->bs[j];
}

#endif
