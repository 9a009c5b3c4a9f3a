/* The own SGEMM kernels of the OpenCL backend (gemm.cl): each built on a
 * device at its first use, within the device's limits, and launched for a
 * product (cg_cl_gemm_run_own: C = beta C, GEMV, C = A B^T on CPU devices
 * or the tiled GEMM); and their identity (cg_cl_gemm_own_id), which keys
 * the lines of the choices file. A device's kernels are shared cl_kernel
 * objects: they are built, their arguments set and enqueued under its
 * cg_cl_gemm_dev's mu. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "opencl/cl_gemm_impl.h"
#include "opencl/gemm.cl.h"
#include "error.h"
#include "hash.h"

#define MAX_LOCAL 256             /* work-group size cap (portability rule) */
#define MAX_LOCAL_MEM (32 * 1024) /* local memory cap in bytes */

/* ------------------------------------------------------------------ */
/* Per-device kernels                                                   */

/* Tiled GEMM configurations {tm, tn, tk, wm, wn}, best first; a device
 * gets the first one its limits allow. Items per group: (tm / wm) * (tn / wn);
 * wn is the vector width of an item's columns (1, 2, 4 or 8). On PoCL
 * (2 cores) 64x64 tiles of 8x8 ran 128^3 at ~10 GFLOP/s, 4x4 blocks or
 * scalar columns 2-3x slower. */
static const cg_cl_gemm_tile k_large_cfgs[] = {
    {64, 64, 16, 8, 8}, {32, 32, 16, 4, 8}, {16, 16, 16, 2, 4}, {8, 8, 8, 2, 2}, {4, 4, 4, 2, 2}, {1, 1, 1, 1, 1},
};
/* For small or thin products, where a large tile would be mostly padding. */
static const cg_cl_gemm_tile k_small_cfgs[] = {
    {32, 32, 16, 4, 8}, {16, 16, 16, 2, 4}, {8, 8, 8, 2, 2}, {4, 4, 4, 2, 2}, {1, 1, 1, 1, 1},
};

enum { TILE_LARGE = 0, TILE_SMALL = 1 };

void cg_cl_gemm_drop_kernels(cg_cl_gemm_dev *g) {
    cl_kernel ks[6] = {g->k_rows, g->k_cols, g->k_scale, g->k_tiled[0], g->k_tiled[1], g->k_nt};
    for (int i = 0; i < 6; i++)
        if (ks[i]) clReleaseKernel(ks[i]);
    g->k_rows = g->k_cols = g->k_scale = g->k_tiled[0] = g->k_tiled[1] = g->k_nt = NULL;
    g->rows_ready = g->cols_ready = g->scale_ready = g->nt_ready = 0;
    g->tiled_ready[0] = g->tiled_ready[1] = 0;
}

static size_t pow2_floor(size_t v) {
    size_t p = 1;
    while (p * 2 <= v) p *= 2;
    return p;
}

/* Largest work-group the device allows, capped at MAX_LOCAL. */
static size_t group_limit(const cg_cl_device *d) {
    size_t l = cg_cl_info_of(d)->max_work_group;
    if (l > MAX_LOCAL) l = MAX_LOCAL;
    return l ? l : 1;
}

static size_t local_mem_limit(const cg_cl_device *d) {
    uint64_t l = cg_cl_info_of(d)->local_mem;
    return l > MAX_LOCAL_MEM ? MAX_LOCAL_MEM : (size_t)l;
}

/* Whether kernel k can run with `items` per group and within local memory. */
static int kernel_fits(const cg_cl_device *d, cl_kernel k, size_t items) {
    cl_device_id dev = cg_cl_info_of(d)->device_id;
    size_t wg = 0;
    cl_ulong lmem = 0;
    if (clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) != CL_SUCCESS) return 0;
    if (clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL) != CL_SUCCESS) lmem = 0;
    return wg >= items && lmem <= cg_cl_info_of(d)->local_mem;
}

/* The GEMV group shape for the device: lk x rows items for cg_gemv_rows
 * (vectors of rv floats), cr x ck items for cg_gemv_cols (vectors of cv),
 * from the device type, capped by its limits. */
typedef struct gemv_shape {
    size_t lk, rows, rv, cr, ck, cv;
} gemv_shape;

/* Halves a GEMV group of outer x inner items: the inner dim first (it
 * only groups rows or columns), then the outer one. */
static void shrink_group(size_t *outer, size_t *inner) {
    if (*inner > 1) *inner /= 2;
    else *outer /= 2;
}

static gemv_shape gemv_shape_of(const cg_cl_device *d) {
    gemv_shape v;
    if (cg_cl_cpu_paths(d))
        /* CPU drivers run a group's items as a loop: few items per row,
         * many rows per group. */
        v = (gemv_shape){.lk = 1, .rows = 16, .rv = 16, .cr = 8, .ck = 1, .cv = 16};
    else v = (gemv_shape){.lk = 64, .rows = 4, .rv = 4, .cr = 64, .ck = 4, .cv = 4};
    size_t lim = pow2_floor(group_limit(d));
    size_t lim0 = pow2_floor(d->max_item[0] ? d->max_item[0] : 1);
    size_t lim1 = pow2_floor(d->max_item[1] ? d->max_item[1] : 1);
    if (v.lk > lim0) v.lk = lim0;
    if (v.cr > lim0) v.cr = lim0;
    if (v.rows > lim1) v.rows = lim1;
    if (v.ck > lim1) v.ck = lim1;
    while (v.lk * v.rows > lim) shrink_group(&v.lk, &v.rows);
    while (v.cr * v.ck > lim) shrink_group(&v.cr, &v.ck);
    return v;
}

/* Builds GEMV kernel `name` with its group of outer x inner items and
 * vectors of vec floats as the options -D<po>=outer -D<pi>=inner -D<pv>=vec;
 * a kernel that cannot run that group is rebuilt with a smaller one
 * (shrink_group), and *outer, *inner say the group it got. */
static cg_status build_gemv(cg_cl_device *d, const char *name, const char *po, const char *pi, const char *pv,
                            size_t *outer, size_t *inner, size_t vec, cl_kernel *out) {
    for (;;) {
        char opts[160];
        snprintf(opts, sizeof opts, "-DCG_GEMV -D%s=%zu -D%s=%zu -D%s=%zu", po, *outer, pi, *inner, pv, vec);
        cl_kernel k;
        cg_status s = cg_cl_kernel(d, cg_cl_gemm_src, opts, name, &k);
        if (s != CG_OK) return s;
        if (kernel_fits(d, k, *outer * *inner)) {
            clRetainKernel(k);
            *out = k;
            return CG_OK;
        }
        if (*outer * *inner == 1)
            return cg_error(CG_ERR_UNSUPPORTED, "%s: the GEMV kernels cannot run on this device", cg_cl_label(d));
        shrink_group(outer, inner);
    }
}

/* Builds cg_gemv_rows (g->mu held). */
static cg_status build_gemv_rows(cg_cl_device *d, cg_cl_gemm_dev *g) {
    gemv_shape v = gemv_shape_of(d);
    cg_status s = build_gemv(d, "cg_gemv_rows", "GEMV_LK", "GEMV_ROWS", "GEMV_RV", &v.lk, &v.rows, v.rv, &g->k_rows);
    if (s != CG_OK) return s;
    g->lk = v.lk;
    g->rows = v.rows;
    g->rv = v.rv;
    g->rows_ready = 1;
    return CG_OK;
}

/* Builds cg_gemv_cols (g->mu held). */
static cg_status build_gemv_cols(cg_cl_device *d, cg_cl_gemm_dev *g) {
    gemv_shape v = gemv_shape_of(d);
    cg_status s = build_gemv(d, "cg_gemv_cols", "GEMV_CR", "GEMV_CK", "GEMV_CV", &v.cr, &v.ck, v.cv, &g->k_cols);
    if (s != CG_OK) return s;
    g->cr = v.cr;
    g->ck = v.ck;
    g->cv = v.cv;
    g->cols_ready = 1;
    return CG_OK;
}

/* Builds cg_gemm_nt_cpu (g->mu held): one item per group, so it fits any
 * device that runs a kernel at all. */
static cg_status build_nt(cg_cl_device *d, cg_cl_gemm_dev *g) {
    cl_kernel k;
    cg_status s = cg_cl_kernel(d, cg_cl_gemm_src, "-DCG_GEMV -DGEMV_RV=16", "cg_gemm_nt_cpu", &k);
    if (s != CG_OK) return s;
    clRetainKernel(k);
    g->k_nt = k;
    g->nt_ready = 1;
    return CG_OK;
}

/* Builds cg_gemm_scale (g->mu held). */
static cg_status build_scale(cg_cl_device *d, cg_cl_gemm_dev *g) {
    cl_kernel k;
    cg_status s = cg_cl_kernel(d, cg_cl_gemm_src, "-DCG_GEMV", "cg_gemm_scale", &k);
    if (s != CG_OK) return s;
    size_t wg = 0;
    if (clGetKernelWorkGroupInfo(k, cg_cl_info_of(d)->device_id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) !=
            CL_SUCCESS ||
        wg == 0)
        wg = 1;
    size_t lim0 = pow2_floor(d->max_item[0] ? d->max_item[0] : 1);
    size_t sl = 64;
    if (sl > lim0) sl = lim0;
    if (sl > wg) sl = pow2_floor(wg);
    clRetainKernel(k);
    g->k_scale = k;
    g->scale_local = sl;
    g->scale_ready = 1;
    return CG_OK;
}

/* The first configuration of a role, from `after` on (NULL: the start),
 * that fits the device's group, item and local memory limits; NULL when
 * none is left. */
static const cg_cl_gemm_tile *first_tile_cfg(const cg_cl_device *d, int role, const cg_cl_gemm_tile *after) {
    const cg_cl_gemm_tile *cfgs = role == TILE_LARGE ? k_large_cfgs : k_small_cfgs;
    size_t ncfg = role == TILE_LARGE ? sizeof k_large_cfgs / sizeof k_large_cfgs[0]
                                     : sizeof k_small_cfgs / sizeof k_small_cfgs[0];
    size_t lim = group_limit(d), lmem = local_mem_limit(d);
    for (size_t i = after ? (size_t)(after - cfgs) + 1 : 0; i < ncfg; i++) {
        const cg_cl_gemm_tile *c = &cfgs[i];
        size_t tnt = (size_t)(c->tn / c->wn), tmt = (size_t)(c->tm / c->wm);
        size_t bytes = (size_t)c->tk * (size_t)(c->tm + 1 + c->tn) * sizeof(float);
        if (tnt * tmt <= lim && tnt <= d->max_item[0] && tmt <= d->max_item[1] && bytes <= lmem) return c;
    }
    return NULL;
}

/* Builds the tiled GEMM of one role (g->mu held): the first configuration
 * that fits the device's limits and whose kernel can run its group. */
static cg_status build_tiled(cg_cl_device *d, cg_cl_gemm_dev *g, int role) {
    cg_status last = CG_OK;
    for (const cg_cl_gemm_tile *c = first_tile_cfg(d, role, NULL); c; c = first_tile_cfg(d, role, c)) {
        size_t tnt = (size_t)(c->tn / c->wn), tmt = (size_t)(c->tm / c->wm);
        char opts[256];
        snprintf(opts, sizeof opts, "-DCG_GEMM_TM=%d -DCG_GEMM_TN=%d -DCG_GEMM_TK=%d -DCG_GEMM_WM=%d -DCG_GEMM_WN=%d",
                 c->tm, c->tn, c->tk, c->wm, c->wn);
        cl_kernel k;
        last = cg_cl_kernel(d, cg_cl_gemm_src, opts, "cg_gemm_tiled", &k);
        if (last != CG_OK) return last;
        if (!kernel_fits(d, k, tnt * tmt)) continue;
        clRetainKernel(k);
        g->k_tiled[role] = k;
        g->cfg[role] = *c;
        g->tiled_ready[role] = 1;
        return CG_OK;
    }
    return cg_error(CG_ERR_UNSUPPORTED, "%s: no tiled GEMM configuration fits this device", cg_cl_label(d));
}

/* ------------------------------------------------------------------ */
/* Runs of the own kernels                                              */

typedef struct karg {
    size_t size;
    const void *ptr;
} karg;

#define KI(v) \
    { sizeof(cl_int), &(v) }
#define KF(v) \
    { sizeof(cl_float), &(v) }
#define KM(v) \
    { sizeof(cl_mem), &(v) }

/* Sets the arguments and enqueues (g->mu held). */
static cg_status launch(cg_cl_device *d, cl_kernel k, const karg *args, int nargs, int dims, const size_t *global,
                        const size_t *local, const char *what) {
    for (int i = 0; i < nargs; i++) {
        cl_int err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].ptr);
        if (err != CL_SUCCESS) {
            char call[96];
            snprintf(call, sizeof call, "clSetKernelArg(%s, %d)", what, i);
            return cg_cl_fail(d, CG_ERR_KERNEL, call, err);
        }
    }
    return cg_cl_launch(d, k, dims, global, local, what);
}

static size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

/* C = beta C (k == 0 or alpha == 0). */
static cg_status own_scale(cg_cl_device *d, cg_cl_gemm_dev *g, const cg_cl_gemm_args *x) {
    cg_status s;
    if (!g->scale_ready && (s = build_scale(d, g)) != CG_OK) return s;
    cl_int M = (cl_int)x->m, N = (cl_int)x->n, c_off = (cl_int)x->c_off, ldc = (cl_int)x->ldc;
    cl_float beta = x->beta;
    karg args[] = {KI(M), KI(N), KF(beta), KM(x->c), KI(c_off), KI(ldc)};
    size_t local[2] = {g->scale_local, 1};
    size_t global[2] = {round_up((size_t)N, local[0]), (size_t)M};
    return launch(d, g->k_scale, args, 6, 2, global, local, "cg_gemm_scale");
}

static cg_status own_gemv(cg_cl_device *d, cg_cl_gemm_dev *g, const cg_cl_gemm_args *x) {
    /* y[r] = alpha sum_p W(r, p) x[p] + beta y[r], W(r, p) = W[w_off + r*rs
     * + p*ps], x[p] = X[x_off + p*incx], y[r] = C[c_off + r*incy]. */
    int rows_form;
    cl_mem W, X;
    int64_t R, w_off, rs = 0, ps, x_off, incx, incy;
    if (x->m == 1 && x->n == 1) {
        int64_t a_inc = x->ta ? x->lda : 1, b_inc = x->tb ? 1 : x->ldb;
        rows_form = 1;
        R = 1;
        if (a_inc != 1 && b_inc == 1) {
            W = x->b, w_off = x->b_off, ps = b_inc, X = x->a, x_off = x->a_off, incx = a_inc;
        } else {
            W = x->a, w_off = x->a_off, ps = a_inc, X = x->b, x_off = x->b_off, incx = b_inc;
        }
        incy = 1;
    } else if (x->m == 1) {
        R = x->n;
        W = x->b, w_off = x->b_off, X = x->a, x_off = x->a_off;
        incx = x->ta ? x->lda : 1;
        incy = 1;
        rows_form = x->tb;
        if (x->tb) rs = x->ldb, ps = 1;
        else ps = x->ldb;
    } else { /* n == 1 */
        R = x->m;
        W = x->a, w_off = x->a_off, X = x->b, x_off = x->b_off;
        incx = x->tb ? 1 : x->ldb;
        incy = x->ldc;
        rows_form = !x->ta;
        if (!x->ta) rs = x->lda, ps = 1;
        else ps = x->lda;
    }
    cg_status s;
    if (rows_form ? !g->rows_ready && (s = build_gemv_rows(d, g)) != CG_OK
                  : !g->cols_ready && (s = build_gemv_cols(d, g)) != CG_OK)
        return s;
    cl_int cR = (cl_int)R, cK = (cl_int)x->k, cw = (cl_int)w_off, crs = (cl_int)rs, cps = (cl_int)ps,
           cx = (cl_int)x_off, cinx = (cl_int)incx, cy = (cl_int)x->c_off, ciny = (cl_int)incy, vec;
    cl_float alpha = x->alpha, beta = x->beta;
    if (rows_form) {
        int64_t v = (int64_t)g->rv;
        vec = ps == 1 && incx == 1 ? (w_off % v == 0 && rs % v == 0 && x_off % v == 0 ? 2 : 1) : 0;
        karg args[] = {KI(cR), KI(cK), KF(alpha), KF(beta), KM(W),  KI(cw),   KI(crs), KI(cps),
                       KM(X),  KI(cx), KI(cinx),  KM(x->c), KI(cy), KI(ciny), KI(vec)};
        size_t local[2] = {g->lk, g->rows};
        size_t global[2] = {g->lk, round_up((size_t)R, g->rows)};
        return launch(d, g->k_rows, args, 15, 2, global, local, "cg_gemv_rows");
    }
    vec = w_off % (int64_t)g->cv == 0 && ps % (int64_t)g->cv == 0 ? 2 : 1;
    karg args[] = {KI(cR), KI(cK), KF(alpha), KF(beta), KM(W),  KI(cw),   KI(cps),
                   KM(X),  KI(cx), KI(cinx),  KM(x->c), KI(cy), KI(ciny), KI(vec)};
    size_t local[2] = {g->cr, g->ck};
    size_t global[2] = {round_up(((size_t)R + g->cv - 1) / g->cv, g->cr), g->ck};
    return launch(d, g->k_cols, args, 14, 2, global, local, "cg_gemv_cols");
}

/* Large tiles only when they are full and leave every compute unit at
 * least two groups. Decided before the large kernel is built (from the
 * configuration it would start from), so that products that never use it
 * do not compile it. */
static int want_large(const cg_cl_device *d, const cg_cl_gemm_dev *g, const cg_cl_gemm_args *x) {
    const cg_cl_gemm_tile *c = g->tiled_ready[TILE_LARGE] ? &g->cfg[TILE_LARGE] : first_tile_cfg(d, TILE_LARGE, NULL);
    if (!c || x->m < c->tm || x->n < c->tn) return 0;
    uint64_t tiles = (uint64_t)((x->m + c->tm - 1) / c->tm) * (uint64_t)((x->n + c->tn - 1) / c->tn);
    uint64_t cu = cg_cl_info_of(d)->compute_units;
    return tiles >= 2 * (cu ? cu : 1);
}

static cg_status own_tiled(cg_cl_device *d, cg_cl_gemm_dev *g, const cg_cl_gemm_args *x) {
    cg_status s;
    int role = want_large(d, g, x) ? TILE_LARGE : TILE_SMALL;
    if (!g->tiled_ready[role] && (s = build_tiled(d, g, role)) != CG_OK) return s;
    const cg_cl_gemm_tile *c = &g->cfg[role];
    cl_int M = (cl_int)x->m, N = (cl_int)x->n, K = (cl_int)x->k;
    cl_int a_off = (cl_int)x->a_off, a_si = (cl_int)(x->ta ? 1 : x->lda), a_sp = (cl_int)(x->ta ? x->lda : 1);
    cl_int b_off = (cl_int)x->b_off, b_sp = (cl_int)(x->tb ? 1 : x->ldb), b_sj = (cl_int)(x->tb ? x->ldb : 1);
    cl_int c_off = (cl_int)x->c_off, ldc = (cl_int)x->ldc;
    cl_float alpha = x->alpha, beta = x->beta;
    karg args[] = {KI(M),    KI(N),    KI(K),     KF(alpha), KF(beta), KM(x->a), KI(a_off), KI(a_si),
                   KI(a_sp), KM(x->b), KI(b_off), KI(b_sp),  KI(b_sj), KM(x->c), KI(c_off), KI(ldc)};
    size_t local[2] = {(size_t)(c->tn / c->wn), (size_t)(c->tm / c->wm)};
    size_t global[2] = {(size_t)((x->n + c->tn - 1) / c->tn) * local[0],
                        (size_t)((x->m + c->tm - 1) / c->tm) * local[1]};
    return launch(d, g->k_tiled[role], args, 16, 2, global, local, "cg_gemm_tiled");
}

/* Whether C = A B^T (a linear layer's x W^T) goes through cg_gemm_nt_cpu
 * rather than the tiled GEMM. On CPU devices a work-item that keeps 4 of W's
 * rows in cache against all of A's rows, in register tiles, beats the
 * local-memory tiles: on PoCL (2 cores) the tiled GEMM reached 1 to 16
 * GFLOP/s and CLBlast 12 to 34, one GEMV per row of A (cg_gemv_rows, the
 * previous route) 30 to 72, and cg_gemm_nt_cpu takes half of that GEMV's
 * time in the medium decoder at batch 64. GPUs keep the tiled GEMM, whose
 * local-memory tiles reuse each loaded value across rows. */
int cg_cl_gemm_rows_gemm(const cg_cl_device *d, const cg_cl_gemm_args *x) {
    return cg_cl_cpu_paths(d) && !x->ta && x->tb;
}

/* C = A B^T with at least 2 rows of A on a CPU device: cg_gemm_nt_cpu's 4 x 4
 * register tiles (see gemm.cl). */
static cg_status own_nt(cg_cl_device *d, cg_cl_gemm_dev *g, const cg_cl_gemm_args *x) {
    cg_status s;
    if (!g->nt_ready && (s = build_nt(d, g)) != CG_OK) return s;
    cl_int cM = (cl_int)x->m, cN = (cl_int)x->n, cK = (cl_int)x->k, ca = (cl_int)x->a_off, clda = (cl_int)x->lda,
           cb = (cl_int)x->b_off, cldb = (cl_int)x->ldb, cc = (cl_int)x->c_off, cldc = (cl_int)x->ldc;
    cl_float alpha = x->alpha, beta = x->beta;
    cl_int has_bias = x->bias != NULL;
    cl_mem bias = has_bias ? x->bias : x->c; /* unread without a bias */
    karg args[] = {KI(cM),   KI(cN), KI(cK),   KF(alpha), KF(beta), KM(x->a), KI(ca),   KI(clda),
                   KM(x->b), KI(cb), KI(cldb), KM(x->c),  KI(cc),   KI(cldc), KM(bias), KI(has_bias)};
    size_t local[1] = {1}, global[1] = {(size_t)((x->n + 3) / 4)};
    return launch(d, g->k_nt, args, 16, 1, global, local, "cg_gemm_nt_cpu");
}

cg_status cg_cl_gemm_run_own(cg_cl_device *d, cg_cl_gemm_dev *g, const cg_cl_gemm_args *x) {
    pthread_mutex_lock(&g->mu);
    cg_status s;
    if (x->bias && (x->k == 0 || x->m < 2 || x->n < 2 || !cg_cl_gemm_rows_gemm(d, x)))
        s = cg_error(CG_ERR_INVALID_ARGUMENT, "%s: SGEMM with a bias outside cg_gemm_nt_cpu's shapes", cg_cl_label(d));
    else if (x->k == 0 || x->alpha == 0.0f) s = own_scale(d, g, x);
    else if (x->m == 1 || x->n == 1) s = own_gemv(d, g, x);
    else if (cg_cl_gemm_rows_gemm(d, x)) s = own_nt(d, g, x);
    else s = own_tiled(d, g, x);
    pthread_mutex_unlock(&g->mu);
    if (s == CG_OK) cg_cl_gemm_st_own++;
    return s;
}

/* ------------------------------------------------------------------ */
/* Identity of the own kernels                                          */

/* How the own kernels are routed (bump when own_gemv, own_tiled or
 * cg_cl_gemm_rows_gemm() change what runs for a shape): with gemm.cl's
 * text, the identity of what a line of the choices file was measured
 * against. */
#define OWN_ROUTING "rows-gemm-2"

static char g_own_id[24];
static pthread_once_t g_own_id_once = PTHREAD_ONCE_INIT;

static void make_own_id(void) {
    uint64_t h = cg_fnv1a(CG_FNV_BASIS, OWN_ROUTING, strlen(OWN_ROUTING));
    /* A forced path set routes shapes to other own kernels. */
    const char *paths = cg_cl_paths_forced(NULL);
    h = cg_fnv1a(h, paths, strlen(paths));
    h = cg_fnv1a(h, cg_cl_gemm_src, strlen(cg_cl_gemm_src));
    snprintf(g_own_id, sizeof g_own_id, "own=%016llx", (unsigned long long)h);
}

const char *cg_cl_gemm_own_id(void) {
    pthread_once(&g_own_id_once, make_own_id);
    return g_own_id;
}
