/* What the parts of the OpenCL SGEMM share, for them only (its tests and
 * benchmarks use cl_gemm_internal.h):
 *   cl_gemm.c          the mode (CLGRAPH_GEMM), the counters, the per-device
 *                      state, the CLBlast call, the measurement and the entry
 *                      point cg_cl_sgemm;
 *   cl_gemm_choice.c   the choice table and gemm-choices.txt;
 *   cl_gemm_kernels.c  the own kernels: builds, launches and their identity
 *                      (cg_cl_gemm_own_id).
 * The functions declared here take the locks they need themselves (but
 * for cg_cl_gemm_drop_kernels); the *_locked ones of those files are
 * called with their lock held. */
#ifndef CG_BACKEND_OPENCL_GEMM_IMPL_H
#define CG_BACKEND_OPENCL_GEMM_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "opencl/cl_gemm_internal.h"
#include "opencl/cl_internal.h"

/* Values of the choice table besides CG_GEMM_CHOICE_*; never in the file. */
#define CG_GEMM_CHOICE_MEASURING 3 /* in the table while one thread times a shape */
#define CG_GEMM_CHOICE_PENDING 4   /* returned for an unmeasured shape: own kernels this time */

/* The counters of cg_cl_gemm_stats_get (defined in cl_gemm.c). */
extern _Atomic uint64_t cg_cl_gemm_st_measure, cg_cl_gemm_st_file_entries, cg_cl_gemm_st_file_writes, cg_cl_gemm_st_own,
    cg_cl_gemm_st_clblast, cg_cl_gemm_st_clblast_fail;

/* A tiled GEMM configuration (the tables of cl_gemm_kernels.c). */
typedef struct cg_cl_gemm_tile {
    int tm, tn, tk, wm, wn;
} cg_cl_gemm_tile;

/* A device's SGEMM state: found or created by cl_gemm.c (dev_get), its
 * kernels built and run by cl_gemm_kernels.c. */
typedef struct cg_cl_gemm_dev {
    cg_cl_device *d;
    cl_context ctx;     /* retained: no other context can take this handle while we hold it */
    int dk;             /* devkey of (name, driver) */
    pthread_mutex_t mu; /* guards what follows, kernel arguments and enqueues */
    /* Each kernel is built on its first use, so a model whose products are
     * all GEMVs along rows compiles neither cg_gemv_cols nor a tiled GEMM. */
    int rows_ready, cols_ready, scale_ready, nt_ready;
    cl_kernel k_rows, k_cols, k_scale, k_nt;
    size_t lk, rows, rv, cr, ck, cv, scale_local;
    int tiled_ready[2];
    cl_kernel k_tiled[2];
    cg_cl_gemm_tile cfg[2];
    struct cg_cl_gemm_dev *next;
} cg_cl_gemm_dev;

/* One product C = alpha op(A) op(B) + beta C; offsets and leading
 * dimensions count floats. */
typedef struct cg_cl_gemm_args {
    int ta, tb;
    int64_t m, n, k;
    float alpha, beta;
    cl_mem a, b, c;
    int64_t a_off, b_off, c_off, lda, ldb, ldc;
    cl_mem bias; /* cg_cl_sgemm_nt_bias: C = A B^T + bias[j] (cg_gemm_nt_cpu only); NULL: none */
} cg_cl_gemm_args;

/* ---- cl_gemm_choice.c (each takes g_tab_mu) ---- */

/* The interned id of a device's (name, driver); -1 when out of memory. */
int cg_cl_gemm_devkey(const char *name, const char *driver);

/* The choice of a shape, or CG_GEMM_CHOICE_PENDING (own kernels this time),
 * or CG_GEMM_CHOICE_NONE with the shape claimed for measuring. */
int cg_cl_gemm_lookup_or_claim(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k, int untimed);

/* The implementation this process runs the shape with (the first it ran). */
int cg_cl_gemm_pin_choice(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k, int choice);

/* CLBlast failed on the shape: own kernels from now on. */
void cg_cl_gemm_unpin_clblast(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k);

/* Sets the in-memory choice of a shape (CG_GEMM_CHOICE_NONE: unknown). */
void cg_cl_gemm_set_choice(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k, int choice);

/* Appends a line to gemm-choices.txt (own_us and clblast_us as written). */
void cg_cl_gemm_append_line(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k, int choice, const char *own_us,
                            const char *clblast_us);

/* ---- cl_gemm_kernels.c ---- */

/* Releases g's kernels; each is built again on its next use. Called with
 * g->mu held, or when g is no longer shared. */
void cg_cl_gemm_drop_kernels(cg_cl_gemm_dev *g);

/* Whether C = A B^T runs cg_gemm_nt_cpu on d (a shape that is not timed). */
int cg_cl_gemm_rows_gemm(const cg_cl_device *d, const cg_cl_gemm_args *x);

/* Runs the product on the own kernels (takes g->mu). */
cg_status cg_cl_gemm_run_own(cg_cl_device *d, cg_cl_gemm_dev *g, const cg_cl_gemm_args *x);

#endif
