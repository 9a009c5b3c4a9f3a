/* Driver of the own GEMM kernels: path selection, BLAS edge semantics and
 * the split over the thread pool. The kernels themselves live in
 * cpu_gemm_{portable,avx2,avx512}.c. */
#include "settings.h"
#include "cpu_gemm.h"

#include "cpu_gemm_kernels.h"
#include "cpu_pool.h"

#include <pthread.h>
#include <stdlib.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <string.h>

/* Multiply-adds below which a task is not worth handing to another thread
 * (a few microseconds of kernel time against about one of hand-over). */
#define CG_GEMM_TASK_FMAS ((int64_t)1 << 17)

static const cg_gemm_kernels cg_gemm_blas = {"blas", 0, 0, 0, NULL, NULL, NULL, NULL, NULL};

/* NULL until the first product (or cg_cpu_gemm_force) decides. */
static const cg_gemm_kernels *_Atomic g_sel;

#if defined(__x86_64__) || defined(__i386__)
static int cg_has_avx512(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
}

/* F16C through CPUID: clang 14 (Debian 12) rejects "f16c" as a
 * __builtin_cpu_supports feature name. */
static int cg_has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

static int cg_has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cg_has_f16c();
}

static int cg_has_vnni512(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512vnni");
}
#endif

/* The int8 set that goes with a path's kernels: that ISA's when the CPU has
 * it (AVX-512 also needs BW, VL and VNNI, else AVX2's), portable for "portable",
 * the best this CPU runs for "blas" (OpenBLAS has no int8 product). */
static const cg_gemm_kernels *cg_q8_for(const cg_gemm_kernels *k) {
#if defined(__x86_64__) || defined(__i386__)
    if (k == &cg_gemm_portable) return &cg_q8_portable;
    if (k != &cg_gemm_avx2 && cg_has_avx512() && cg_has_vnni512()) return &cg_q8_avx512;
    if (cg_has_avx2()) return &cg_q8_avx2;
#else
    (void)k;
#endif
    return &cg_q8_portable;
}

/* The fastest own kernels this CPU runs, NULL when it has no SIMD path. */
static const cg_gemm_kernels *cg_gemm_best_simd(void) {
#if defined(__x86_64__) || defined(__i386__)
    if (cg_has_avx512()) return &cg_gemm_avx512;
    if (cg_has_avx2()) return &cg_gemm_avx2;
#endif
    return NULL;
}

/* The kernels a path name stands for on this CPU; NULL for an unknown name
 * or kernels the CPU cannot run. */
static const cg_gemm_kernels *cg_gemm_lookup(const char *name) {
    const cg_gemm_kernels *best = cg_gemm_best_simd();
    if (strcmp(name, "auto") == 0) return best ? best : &cg_gemm_blas;
    if (strcmp(name, "own") == 0) return best ? best : &cg_gemm_portable;
    if (strcmp(name, "blas") == 0) return &cg_gemm_blas;
    if (strcmp(name, "portable") == 0) return &cg_gemm_portable;
#if defined(__x86_64__) || defined(__i386__)
    if (strcmp(name, "avx512") == 0) return cg_has_avx512() ? &cg_gemm_avx512 : NULL;
    if (strcmp(name, "avx2") == 0) return cg_has_avx2() ? &cg_gemm_avx2 : NULL;
#endif
    return NULL;
}

/* Racing first calls compute the same answer. */
static const cg_gemm_kernels *cg_gemm_selected(void) {
    const cg_gemm_kernels *k = g_sel;
    if (k) return k;
    const char *env = cg_setting(CG_SET_CPU_GEMM);
    k = env && *env ? cg_gemm_lookup(env) : NULL;
    if (!k) k = cg_gemm_lookup("auto");
    g_sel = k;
    return k;
}

const char *cg_cpu_gemm_path(void) { return cg_gemm_selected()->name; }

int cg_cpu_gemm_force(const char *name) {
    const cg_gemm_kernels *k = name ? cg_gemm_lookup(name) : NULL;
    if (!k) return 0;
    g_sel = k;
    return 1;
}

/* C = beta * C over [m, n]: the empty product (k <= 0, alpha == 0). */
static void cg_gemm_scale(int64_t m, int64_t n, float beta, float *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

typedef struct cg_gemm_job {
    const cg_gemm_kernels *kern;
    const cg_gemm_args *g;
    int along_m;  /* items are rows of C (else columns) */
    int64_t unit; /* rows or columns per item */
} cg_gemm_job;

/* Bytes of A rows kept near the core while a block of B rows (kept in L2)
 * passes: twice a 32 KiB L1, so that a decoder step's 32 rows of 512 make
 * one block and each strip of B comes from memory once for all of them
 * (with the prefetch below, fp32 batch-32 OPUS-MT base translation 5-10%
 * faster; 32 to 512 KiB were level at 128 rows). */
#define CG_L1_A_BYTES (64 * 1024)
#define CG_L2_B_BYTES (1024 * 1024)

/* C[i0 : i0+mr, j0 : j0+nr] += bias[j0 : j0+nr]: after a tile (still in
 * L1), or after an empty product. */
static void cg_gemm_add_bias(float *c, int64_t ldc, const float *bias, int64_t i0, int64_t j0, int64_t mr, int64_t nr) {
    for (int64_t i = i0; i < i0 + mr; i++)
        for (int64_t j = j0; j < j0 + nr; j++) c[i * ldc + j] += bias[j];
}

/* C[m0:m1, n0:n1] of g, reading A rows m0..m1-1 and B rows n0..n1-1 only: a
 * block of A rows stays in L1 while strips of B pass over it, inside a block
 * of B that stays in L2. One row of A goes through the GEMV tiles. On the
 * first block of A, where B comes from memory, the first tile of each strip
 * prefetches the next strip (without it, gemm_bench's 32 x 32000 x 512 read
 * its weights at about half the bandwidth 2 threads get: 9.1 -> 6.5 ms). */
static void cg_gemm_block(const cg_gemm_kernels *kern, const cg_gemm_args *g, int64_t m0, int64_t m1, int64_t n0,
                          int64_t n1) {
    const int64_t MR = kern->mr, NR = kern->nr, NV = kern->nv;
    if (m1 - m0 == 1) {
        for (int64_t j = n0; j < n1; j += NV) {
            const int nr = n1 - j < NV ? (int)(n1 - j) : (int)NV;
            kern->gemv(g, m0, j, nr);
            if (g->bias) cg_gemm_add_bias(g->c, g->ldc, g->bias, m0, j, 1, nr);
        }
        return;
    }
    int64_t row = g->k * (g->bt == CG_GEMM_B_I8 ? 1 : (int64_t)sizeof(float));
    int64_t mb = CG_L1_A_BYTES / row / MR * MR, nb = CG_L2_B_BYTES / row / NR * NR;
    if (mb < MR) mb = MR;
    if (nb < NR) nb = NR;
    cg_gemm_args first = *g; /* the tiles that bring each strip of B in from memory */
    first.pf = NR * g->ldb;
    for (int64_t jb = n0; jb < n1; jb += nb) {
        int64_t je = n1 - jb < nb ? n1 : jb + nb;
        for (int64_t ib = m0; ib < m1; ib += mb) {
            int64_t ie = m1 - ib < mb ? m1 : ib + mb;
            for (int64_t j = jb; j < je; j += NR) {
                int nr = je - j < NR ? (int)(je - j) : (int)NR;
                kern->tile(ib == m0 && j + NR < n1 ? &first : g, ib, j, ie - ib < MR ? (int)(ie - ib) : (int)MR, nr);
                for (int64_t i = ib + MR; i < ie; i += MR)
                    kern->tile(g, i, j, ie - i < MR ? (int)(ie - i) : (int)MR, nr);
                if (g->bias) cg_gemm_add_bias(g->c, g->ldc, g->bias, ib, j, ie - ib, nr);
            }
        }
    }
}

static void cg_gemm_task(void *ctx, size_t begin, size_t end) {
    const cg_gemm_job *job = ctx;
    const cg_gemm_args *g = job->g;
    int64_t lo = (int64_t)begin * job->unit, hi = (int64_t)end * job->unit;
    if (job->along_m) cg_gemm_block(job->kern, g, lo, hi < g->m ? hi : g->m, 0, g->n);
    else cg_gemm_block(job->kern, g, 0, g->m, lo, hi < g->n ? hi : g->n);
}

/* Splits C over the pool in whole register tiles: along N (each thread
 * streams its own share of B, the usually larger weight matrix), or along M
 * when N has too few tiles to go round. */
static void cg_gemm_run(const cg_gemm_kernels *kern, const cg_gemm_args *g) {
    int threads = cg_cpu_threads();
    int64_t work = g->m * g->n * g->k;
    if (threads == 1 || work < 2 * CG_GEMM_TASK_FMAS) {
        cg_gemm_block(kern, g, 0, g->m, 0, g->n);
        return;
    }
    cg_gemm_job job = {kern, g, 0, g->m == 1 ? kern->nv : kern->nr};
    int64_t n_items = (g->n + job.unit - 1) / job.unit;
    int64_t m_items = (g->m + kern->mr - 1) / kern->mr;
    if (g->m > 1 && n_items < 2 * threads && m_items > n_items) {
        job.along_m = 1;
        job.unit = kern->mr;
    }
    int64_t items = job.along_m ? m_items : n_items;
    int64_t item_fmas = work / items + 1;
    int64_t grain = (CG_GEMM_TASK_FMAS + item_fmas - 1) / item_fmas;
    cg_cpu_parallel_for((size_t)items, (size_t)grain, cg_gemm_task, &job);
}

int cg_cpu_gemm_nt(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                   int64_t ldb, float beta, float *c, int64_t ldc) {
    return cg_cpu_gemm_nt_bias(m, n, k, alpha, a, lda, b, ldb, beta, NULL, c, ldc);
}

int cg_cpu_gemm_nt_bias(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                        int64_t ldb, float beta, const float *bias, float *c, int64_t ldc) {
    const cg_gemm_kernels *kern = cg_gemm_selected();
    if (!kern->tile) return 0;
    if (m <= 0 || n <= 0) return 1;
    if (k <= 0 || alpha == 0.0f) {
        cg_gemm_scale(m, n, beta, c, ldc);
        if (bias) cg_gemm_add_bias(c, ldc, bias, 0, 0, m, n);
        return 1;
    }
    cg_gemm_args g = {.m = m,
                      .n = n,
                      .k = k,
                      .alpha = alpha,
                      .beta = beta,
                      .a = a,
                      .lda = lda,
                      .b = b,
                      .ldb = ldb,
                      .c = c,
                      .ldc = ldc,
                      .bt = CG_GEMM_B_F32,
                      .bias = bias};
    cg_gemm_run(kern, &g);
    return 1;
}

void cg_cpu_gemm_panel(int64_t m, int nr, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                       const float *init, float *c, int64_t ldc) {
    const cg_gemm_kernels *kern = cg_gemm_selected();
    if (!kern->panel) kern = cg_gemm_lookup("own"); /* OpenBLAS has no panel product */
    if (m <= 0 || nr <= 0) return;
    if (nr > CG_GEMM_PANEL) nr = CG_GEMM_PANEL;
    kern->panel(m, nr, k, a, lda, b, ldb, init, c, ldc);
}

static int64_t cg_q8_lda(int64_t k) { return (k + CG_Q8_PAD - 1) / CG_Q8_PAD * CG_Q8_PAD; }

/* Rows of A from which the sums of B's rows are made once per call for the
 * tiles (an extra pass over B, like one more row of A) instead of in every
 * tile (one extra vpdpbusd per B vector per MR rows). */
#define CG_Q8_SUM_ROWS 8

/* Bytes of the packed path's panels (one per thread) and A's row sums,
 * counted for every path from CG_Q8_PACK_ROWS rows on (the path may be
 * chosen after the scratch is sized). */
static size_t cg_q8_pack_scratch(int64_t m, int64_t k) {
    if (m < CG_Q8_PACK_ROWS) return 0;
    return (size_t)cg_cpu_threads() * CG_Q8_NP * (size_t)cg_q8_lda(k) + (size_t)m * sizeof(int32_t) + CG_Q8_PAD;
}

size_t cg_cpu_gemm_q8_scratch(int64_t m, int64_t n, int64_t k) {
    if (m <= 0 || k <= 0) return 0;
    const size_t sums = m >= CG_Q8_SUM_ROWS && n > 0 ? (size_t)n * sizeof(int32_t) : 0;
    return (size_t)(m * cg_q8_lda(k)) + (size_t)m * sizeof(float) + sums + CG_Q8_PAD + cg_q8_pack_scratch(m, k);
}

/* The packed int8 path: thread t packs its share of B's panels into its
 * own buffer, one panel at a time, and runs every tile of A's rows over
 * each. */
typedef struct cg_q8_pjob {
    const cg_q8_packed_kernels *pk;
    const cg_gemm_args *g;
    const int32_t *asum;
    uint8_t *panels; /* one of panel_bytes per item */
    size_t panel_bytes;
    int64_t n_panels, items;
} cg_q8_pjob;

static void cg_q8_ptask(void *ctx, size_t begin, size_t end) {
    const cg_q8_pjob *j = ctx;
    const cg_gemm_args *g = j->g;
    const int64_t k4 = g->ldaq / 4;
    for (size_t t = begin; t < end; t++) {
        uint8_t *panel = j->panels + t * j->panel_bytes;
        const int64_t p0 = (int64_t)t * j->n_panels / j->items, p1 = ((int64_t)t + 1) * j->n_panels / j->items;
        for (int64_t p = p0; p < p1; p++) {
            const int64_t j0 = p * CG_Q8_NP;
            const int nr = g->n - j0 < CG_Q8_NP ? (int)(g->n - j0) : CG_Q8_NP;
            j->pk->pack(g, j0, nr, k4, panel);
            for (int64_t i = 0; i < g->m; i += CG_Q8_MP)
                j->pk->tile(g, panel, k4, j->asum, i, g->m - i < CG_Q8_MP ? (int)(g->m - i) : CG_Q8_MP, j0, nr);
        }
    }
}

/* Runs g on the packed kernels; `room` is the scratch cg_q8_pack_scratch
 * counted, 64-byte aligned, starting with A's row sums times 128. */
static void cg_q8_run_packed(const cg_q8_packed_kernels *pk, const cg_gemm_args *g, void *room) {
    const int32_t *asum = room; /* made with the rows' quantization */
    const uintptr_t pp = (uintptr_t)(asum + g->m);
    cg_q8_pjob job = {pk,
                      g,
                      asum,
                      (uint8_t *)((pp + CG_Q8_PAD - 1) / CG_Q8_PAD * CG_Q8_PAD),
                      (size_t)CG_Q8_NP * (size_t)g->ldaq,
                      (g->n + CG_Q8_NP - 1) / CG_Q8_NP,
                      cg_cpu_threads()};
    if (job.items > job.n_panels) job.items = job.n_panels;
    cg_cpu_parallel_for((size_t)job.items, 1, cg_q8_ptask, &job);
}

const char *cg_cpu_gemm_q8_path(void) { return cg_q8_for(cg_gemm_selected())->name; }

void cg_cpu_q8_row_sums(int64_t n, int64_t k, const int8_t *b, int64_t ldb, int32_t *sums) {
    const cg_gemm_kernels *kern = cg_q8_for(cg_gemm_selected());
    for (int64_t j = 0; j < n; j++) {
        if (kern->bsum) {
            sums[j] = kern->bsum(b + j * ldb, k);
            continue;
        }
        int32_t s = 0;
        for (int64_t kk = 0; kk < k; kk++) s += b[j * ldb + kk];
        sums[j] = 128 * s;
    }
}

/* Quantizing rows of A (and, for the packed form, their sums) on the
 * pool: a pass over A that a single thread made a fifth of an encoder's
 * int8 product. */
typedef struct cg_q8_qjob {
    const cg_gemm_kernels *kern;
    const float *a;
    int64_t lda, k, ldaq;
    int8_t *aq;
    float *as;
    int32_t *asum; /* or NULL */
} cg_q8_qjob;

static void cg_q8_qtask(void *ctx, size_t begin, size_t end) {
    const cg_q8_qjob *j = ctx;
    for (size_t r = begin; r < end; r++) {
        const int64_t i = (int64_t)r;
        int8_t *q = j->aq + i * j->ldaq;
        j->as[i] = j->kern->qrow(j->a + i * j->lda, j->k, q);
        memset(q + j->k, 0, (size_t)(j->ldaq - j->k));
        if (j->asum) j->asum[i] = j->kern->bsum(q, j->k); /* the packed form's sets have bsum */
    }
}

void cg_cpu_gemm_nt_q8(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const int8_t *b,
                       const float *b_scale, const int32_t *b_sums, int64_t ldb, const float *bias, float *c,
                       int64_t ldc, void *scratch) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        cg_gemm_scale(m, n, 0.0f, c, ldc);
        if (bias) cg_gemm_add_bias(c, ldc, bias, 0, 0, m, n);
        return;
    }
    /* Scratch: the scales, then the quantized rows on a 64-byte boundary,
     * each zero-padded to a whole vector (the kernels read the padding),
     * then the packed form's room (its A row sums, then its panels). */
    const int64_t ldaq = cg_q8_lda(k);
    float *as = scratch;
    int32_t *bsum = m >= CG_Q8_SUM_ROWS ? (int32_t *)(as + m) : NULL;
    uintptr_t p = (uintptr_t)(as + m + (bsum ? n : 0));
    int8_t *aq = (int8_t *)((p + CG_Q8_PAD - 1) / CG_Q8_PAD * CG_Q8_PAD);
    const cg_gemm_kernels *kern = cg_q8_for(cg_gemm_selected());
    const cg_q8_packed_kernels *pk = NULL;
#if defined(__x86_64__) || defined(__i386__)
    if (kern == &cg_q8_avx512 && m >= CG_Q8_PACK_ROWS) pk = &cg_q8_packed_avx512;
#endif
    void *room = aq + m * ldaq;
    cg_q8_qjob qj = {kern, a, lda, k, ldaq, aq, as, pk ? room : NULL};
    cg_cpu_parallel_for((size_t)m, (size_t)(16384 / k + 1), cg_q8_qtask, &qj);
    cg_gemm_args g = {.m = m,
                      .n = n,
                      .k = k,
                      .alpha = 1.0f,
                      .ldb = ldb,
                      .c = c,
                      .ldc = ldc,
                      .bt = CG_GEMM_B_I8,
                      .bq = b,
                      .bs = b_scale,
                      .aq = aq,
                      .as = as,
                      .ldaq = ldaq,
                      .bias = bias};
    if (pk) { /* no B row sums: the packed form takes A's */
        cg_q8_run_packed(pk, &g, room);
        return;
    }
    /* the row sums: given, made here for enough rows of A, or in the tiles */
    if (kern->bsum && b_sums) {
        g.bsum = b_sums;
    } else if (kern->bsum && bsum) {
        cg_cpu_q8_row_sums(n, k, b, ldb, bsum);
        g.bsum = bsum;
    }
    cg_gemm_run(kern, &g);
}

void cg_cpu_gemm_nt_h(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda, const uint16_t *b,
                      int bf16, int64_t ldb, float beta, float *c, int64_t ldc) {
    const cg_gemm_kernels *kern = cg_gemm_selected();
    if (!kern->tile) kern = cg_gemm_lookup("own"); /* OpenBLAS has no such product */
    if (m <= 0 || n <= 0) return;
    if (k <= 0 || alpha == 0.0f) {
        cg_gemm_scale(m, n, beta, c, ldc);
        return;
    }
    cg_gemm_args g = {.m = m,
                      .n = n,
                      .k = k,
                      .alpha = alpha,
                      .beta = beta,
                      .a = a,
                      .lda = lda,
                      .ldb = ldb,
                      .c = c,
                      .ldc = ldc,
                      .bh = b,
                      .bt = bf16 ? CG_GEMM_B_BF16 : CG_GEMM_B_F16};
    cg_gemm_run(kern, &g);
}

int cg_cpu_gemv_n(int64_t m, int64_t n, float alpha, const float *a, int64_t lda, const float *x, float beta,
                  float *y) {
    const cg_gemm_kernels *kern = cg_gemm_selected();
    if (!kern->tile) return 0;
    if (m <= 0 || n <= 0) return 1;
    if (alpha == 0.0f) {
        cg_gemm_scale(1, m, beta, y, m);
        return 1;
    }
    /* The dot form with one row: x is A, the matrix is B. */
    cg_gemm_args g = {.m = 1,
                      .n = m,
                      .k = n,
                      .alpha = alpha,
                      .beta = beta,
                      .a = x,
                      .b = a,
                      .ldb = lda,
                      .c = y,
                      .ldc = m,
                      .bt = CG_GEMM_B_F32};
    cg_gemm_run(kern, &g);
    return 1;
}
