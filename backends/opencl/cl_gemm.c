/* SGEMM on OpenCL devices: the backend's own kernels (gemm.cl: GEMV for
 * m == 1 or n == 1 and, on CPU devices, one GEMV per row of A for C = A B^T;
 * a tiled GEMM otherwise) or CLBlast, chosen per device and shape by timing
 * both. Choices live in a hash table and in cg_cache_dir()/gemm-choices.txt,
 * read back at first use, so a later process skips the measurement; a line
 * carries the identity of the own kernels it was measured against
 * (cg_cl_gemm_own_id()), and lines measured against other ones are stale.
 * CLGRAPH_GEMM=own|clblast|auto overrides.
 *
 * Timing a shape is not free: the first CLBlast call compiles CLBlast's
 * whole GEMM program (14 s on PoCL on 2 cores, most of a cold start), so
 * an unmeasured shape runs the own kernels until it has been called
 * g_measure_after times; a shape called once or twice (an encoder at the
 * first token) never pays for the compile. Shapes that run the GEMV
 * kernels (m == 1 or n == 1, and cg_cl_gemm_rows_gemm() on CPU devices)
 * are not timed at all: those beat CLBlast 2 to 80 times on PoCL at every
 * size measured, while timing one costs that compile (a cold `translate`
 * of the 14 sample dates took 16 s instead of 4). A choices-file line for
 * a shape is obeyed either way. A process keeps the implementation it
 * first ran a shape with (cg_cl_gemm_pin_choice): the two round
 * differently, and a plan's runs must give bit-identical outputs, so a
 * measurement that finds CLBlast faster pays off from the next process on.
 *
 * Threads: CLBlast calls are serialised by one global mutex (1.5.3 is not
 * reliable otherwise); each device's own kernels are shared cl_kernel
 * objects, so setting their arguments and enqueueing happen under that
 * device's mutex. The steady state allocates nothing and creates no OpenCL
 * object on the own path (CLBlast creates a kernel per call).
 *
 * This file holds the mode, the counters, the per-device state, the CLBlast
 * call, the measurement and the entry point; cl_gemm_choice.c the choice
 * table and file, cl_gemm_kernels.c the own kernels (cl_gemm_impl.h says
 * what they share). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if CG_HAVE_CLBLAST
#include <clblast_c.h>
#endif

#define NO_CLBLAST "this build of clgraph has no CLBlast (configured with -Dclblast=disabled or without CLBlast)"

#include "settings.h"
#include "opencl/cl_gemm_impl.h"
#include "error.h"

#define TIMED_RUNS 3
#define TIMING_BUDGET_US 250000.0 /* stop timing a candidate after this */

/* ------------------------------------------------------------------ */
/* Counters and mode                                                    */

_Atomic uint64_t cg_cl_gemm_st_measure, cg_cl_gemm_st_file_entries, cg_cl_gemm_st_file_writes, cg_cl_gemm_st_own,
    cg_cl_gemm_st_clblast, cg_cl_gemm_st_clblast_fail;

void cg_cl_gemm_stats_get(cg_cl_gemm_stats *out) {
    if (!out) return;
    out->measurements = cg_cl_gemm_st_measure;
    out->file_entries = cg_cl_gemm_st_file_entries;
    out->file_writes = cg_cl_gemm_st_file_writes;
    out->own_calls = cg_cl_gemm_st_own;
    out->clblast_calls = cg_cl_gemm_st_clblast;
    out->clblast_failures = cg_cl_gemm_st_clblast_fail;
}

void cg_cl_gemm_test_reset_stats(void) {
    cg_cl_gemm_st_measure = cg_cl_gemm_st_file_entries = cg_cl_gemm_st_file_writes = 0;
    cg_cl_gemm_st_own = cg_cl_gemm_st_clblast = cg_cl_gemm_st_clblast_fail = 0;
}

static pthread_mutex_t g_mode_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_mode = CG_GEMM_FROM_ENV; /* resolved mode, or FROM_ENV before the first call */
static int g_mode_bad;                /* CLGRAPH_GEMM holds an unknown value */
static char g_mode_text[64];

void cg_cl_gemm_test_set_mode(int mode) {
    pthread_mutex_lock(&g_mode_mu);
    g_mode = mode;
    g_mode_bad = 0;
    pthread_mutex_unlock(&g_mode_mu);
}

static cg_status current_mode(int *mode) {
    pthread_mutex_lock(&g_mode_mu);
    if (g_mode == CG_GEMM_FROM_ENV) {
        const char *v = cg_setting(CG_SET_GEMM);
        g_mode_bad = 0;
        if (!v || !*v || !strcmp(v, "auto")) {
            g_mode = CG_GEMM_AUTO;
        } else if (!strcmp(v, "own")) {
            g_mode = CG_GEMM_OWN;
        } else if (!strcmp(v, "clblast") && CG_HAVE_CLBLAST) {
            g_mode = CG_GEMM_CLBLAST;
        } else {
            g_mode = CG_GEMM_AUTO;
            g_mode_bad = 1;
            snprintf(g_mode_text, sizeof g_mode_text, "%s", v);
        }
    }
    *mode = g_mode;
    int bad = g_mode_bad;
    char text[sizeof g_mode_text];
    memcpy(text, g_mode_text, sizeof text);
    pthread_mutex_unlock(&g_mode_mu);
    if (bad && !CG_HAVE_CLBLAST && !strcmp(text, "clblast"))
        return cg_error(CG_ERR_UNSUPPORTED, "CLGRAPH_GEMM='clblast': %s", NO_CLBLAST);
    if (bad) return cg_error(CG_ERR_INVALID_ARGUMENT, "CLGRAPH_GEMM='%s': expected 'auto', 'own' or 'clblast'", text);
    /* Without CLBlast there is nothing to choose: auto is the own kernels. */
    if (!CG_HAVE_CLBLAST && *mode == CG_GEMM_AUTO) *mode = CG_GEMM_OWN;
    return CG_OK;
}

/* ------------------------------------------------------------------ */
/* Per-device state                                                     */

static pthread_mutex_t g_dev_mu = PTHREAD_MUTEX_INITIALIZER;
static cg_cl_gemm_dev *g_devs;

/* The state of d, created on first use. A device released and another
 * opened at the same address has a different context: its stale entry is
 * reset. */
static cg_status dev_get(cg_cl_device *d, cg_cl_gemm_dev **out) {
    cl_context ctx = cg_cl_context(d);
    const cg_cl_info *info = cg_cl_info_of(d);
    pthread_mutex_lock(&g_dev_mu);
    cg_cl_gemm_dev *g = g_devs;
    while (g && !(g->d == d && g->ctx == ctx)) g = g->next;
    if (!g) {
        for (g = g_devs; g && g->d != d; g = g->next) {
        }
        if (g) {
            /* Stale: the old device is gone. */
            pthread_mutex_lock(&g->mu);
            cg_cl_gemm_drop_kernels(g);
            clReleaseContext(g->ctx);
            g->ctx = ctx;
            clRetainContext(ctx);
            pthread_mutex_unlock(&g->mu);
        } else {
            g = calloc(1, sizeof *g);
            if (!g || pthread_mutex_init(&g->mu, NULL) != 0) {
                free(g);
                pthread_mutex_unlock(&g_dev_mu);
                return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory for SGEMM state", cg_cl_label(d));
            }
            g->d = d;
            g->ctx = ctx;
            clRetainContext(ctx);
            g->next = g_devs;
            g_devs = g;
        }
        g->dk = cg_cl_gemm_devkey(info->name, info->driver);
        if (g->dk < 0) {
            pthread_mutex_unlock(&g_dev_mu);
            return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory for SGEMM state", cg_cl_label(d));
        }
    }
    pthread_mutex_unlock(&g_dev_mu);
    *out = g;
    return CG_OK;
}

void cg_cl_gemm_device_released(cg_cl_device *d) {
    pthread_mutex_lock(&g_dev_mu);
    cg_cl_gemm_dev **pp = &g_devs;
    while (*pp && (*pp)->d != d) pp = &(*pp)->next;
    cg_cl_gemm_dev *g = *pp;
    if (g) *pp = g->next;
    pthread_mutex_unlock(&g_dev_mu);
    if (!g) return;
    cg_cl_gemm_drop_kernels(g);
    clReleaseContext(g->ctx);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

/* ------------------------------------------------------------------ */
/* CLBlast                                                              */

static _Atomic int g_fail_clblast; /* test hook: CLBlast "fails" without being called */

void cg_cl_gemm_test_fail_clblast(int on) { g_fail_clblast = on; }

#if !CG_HAVE_CLBLAST
/* Reached only by CLGRAPH_GEMM=clblast set through the test hook
 * cg_cl_gemm_test_set_mode; *code gets CLBlastNotImplemented's code. */
static cg_status run_clblast(cg_cl_device *d, const cg_cl_gemm_args *x, int *code) {
    (void)x;
    *code = -1024;
    return cg_error(CG_ERR_UNSUPPORTED, "%s: SGEMM: %s", cg_cl_label(d), NO_CLBLAST);
}
#else
static pthread_mutex_t g_clblast_mu = PTHREAD_MUTEX_INITIALIZER;

/* *code gets CLBlast's status (0 on success). */
static cg_status run_clblast(cg_cl_device *d, const cg_cl_gemm_args *x, int *code) {
    cl_command_queue q = cg_cl_queue(d);
    cl_event cap_ev = NULL; /* kept for a profile's device times */
    pthread_mutex_lock(&g_clblast_mu);
    CLBlastStatusCode st =
        g_fail_clblast
            ? CLBlastNotImplemented
            : CLBlastSgemm(CLBlastLayoutRowMajor, x->ta ? CLBlastTransposeYes : CLBlastTransposeNo,
                           x->tb ? CLBlastTransposeYes : CLBlastTransposeNo, (size_t)x->m, (size_t)x->n, (size_t)x->k,
                           x->alpha, x->a, (size_t)x->a_off, (size_t)x->lda, x->b, (size_t)x->b_off, (size_t)x->ldb,
                           x->beta, x->c, (size_t)x->c_off, (size_t)x->ldc, &q, d->capture ? &cap_ev : NULL);
    pthread_mutex_unlock(&g_clblast_mu);
    if (st == CLBlastSuccess) cg_cl_capture_keep(d, cap_ev, 0);
    *code = (int)st;
    if (st != CLBlastSuccess)
        return cg_error(CG_ERR_KERNEL, "%s: CLBlastSgemm(%c%c, m=%lld n=%lld k=%lld) failed: %s", cg_cl_label(d),
                        x->ta ? 'T' : 'N', x->tb ? 'T' : 'N', (long long)x->m, (long long)x->n, (long long)x->k,
                        cg_clblast_error_name((int)st));
    cg_cl_gemm_st_clblast++;
    return CG_OK;
}
#endif

/* ------------------------------------------------------------------ */
/* Measurement                                                          */

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* One warm-up (which also compiles), then up to TIMED_RUNS timed runs of
 * enqueue + clFinish; *best_us gets the fastest. */
static cg_status time_candidate(cg_cl_device *d, cg_cl_gemm_dev *g, const cg_cl_gemm_args *x, int clblast, int *code,
                                double *best_us) {
    double spent = 0.0, best = HUGE_VAL;
    for (int i = 0; i <= TIMED_RUNS; i++) {
        double t0 = now_us();
        cg_status s = clblast ? run_clblast(d, x, code) : cg_cl_gemm_run_own(d, g, x);
        if (s == CG_OK) s = cg_cl_finish(d);
        if (s != CG_OK) return s;
        double t = now_us() - t0;
        if (i == 0) continue; /* warm-up */
        if (t < best) best = t;
        spent += t;
        if (spent > TIMING_BUDGET_US) break;
    }
    *best_us = best;
    return CG_OK;
}

/* Times both implementations on a scratch copy of C (the caller's C is left
 * for the one real run), records the faster and returns it in *choice. */
static cg_status measure(cg_cl_device *d, cg_cl_gemm_dev *g, const cg_cl_gemm_args *x, int *choice) {
    cg_cl_gemm_st_measure++;
    cg_status s = cg_cl_finish(d); /* the caller's earlier work is not ours to time */
    if (s != CG_OK) return s;
    size_t elems = (size_t)((x->m - 1) * x->ldc + x->n);
    cl_mem scratch;
    if (cg_cl_alloc(d, elems * sizeof(float), &scratch) != CG_OK) {
        /* No room to measure: use the own kernels this time, measure later. */
        cg_error_clear();
        *choice = CG_GEMM_CHOICE_NONE;
        return CG_OK;
    }
    s = cg_cl_copy(d, x->c, (size_t)x->c_off * sizeof(float), scratch, 0, elems * sizeof(float));
    if (s != CG_OK) {
        clReleaseMemObject(scratch);
        return s;
    }
    cg_cl_gemm_args t = *x;
    t.c = scratch;
    t.c_off = 0;
    double own_us = 0.0, clb_us = 0.0;
    int code = 0;
    s = time_candidate(d, g, &t, 0, &code, &own_us);
    if (s != CG_OK) {
        clReleaseMemObject(scratch);
        return s;
    }
    cg_status cs = time_candidate(d, g, &t, 1, &code, &clb_us);
    if (cs != CG_OK) {
        cg_error_clear();
        cg_cl_gemm_st_clblast_fail++;
        /* A CLBlast failure may leave an OpenCL error pending on the queue. */
        clFinish(cg_cl_queue(d));
    }
    clReleaseMemObject(scratch);
    *choice = cs == CG_OK && clb_us < own_us ? CG_GEMM_CHOICE_CLBLAST : CG_GEMM_CHOICE_OWN;
    char own_txt[32], clb_txt[96];
    snprintf(own_txt, sizeof own_txt, "%.1f", own_us);
    if (cs == CG_OK) snprintf(clb_txt, sizeof clb_txt, "%.1f", clb_us);
    else snprintf(clb_txt, sizeof clb_txt, "failed(%s)", code ? cg_clblast_error_name(code) : "OpenCL");
    cg_cl_gemm_set_choice(g->dk, x->ta, x->tb, x->m, x->n, x->k, *choice);
    cg_cl_gemm_append_line(g->dk, x->ta, x->tb, x->m, x->n, x->k, *choice, own_txt, clb_txt);
    return CG_OK;
}

/* ------------------------------------------------------------------ */
/* Entry point                                                          */

/* Checks that buf holds the matrix rows x cols with leading dimension ld
 * from element off; *last gets one past its last element index. */
static cg_status check_matrix(cg_cl_device *d, char which, cl_mem buf, int64_t off, int64_t rows, int64_t cols,
                              int64_t ld, int64_t *last) {
    size_t bytes = 0;
    cl_int err = clGetMemObjectInfo(buf, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
    if (err != CL_SUCCESS) {
        char call[64];
        snprintf(call, sizeof call, "clGetMemObjectInfo(SGEMM %c)", which);
        return cg_cl_fail(d, CG_ERR_INVALID_ARGUMENT, call, err);
    }
    /* rows, cols >= 1 and ld >= cols here; the sizes fit comfortably in
     * 64 bits only if each factor does, so bound them first. */
    if (rows > INT64_MAX / 4 / ld)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: SGEMM %c: %lld x %lld (ld %lld) is too large", cg_cl_label(d),
                        which, (long long)rows, (long long)cols, (long long)ld);
    int64_t end = off + (rows - 1) * ld + cols;
    if (end > (int64_t)(bytes / sizeof(float)))
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "%s: SGEMM %c: %lld x %lld with ld %lld from offset %lld needs %lld "
                        "floats, the buffer holds %llu",
                        cg_cl_label(d), which, (long long)rows, (long long)cols, (long long)ld, (long long)off,
                        (long long)end, (unsigned long long)(bytes / sizeof(float)));
    *last = end;
    return CG_OK;
}

cg_status cg_cl_sgemm_nt_bias(cg_cl_device *d, int64_t m, int64_t n, int64_t k, cl_mem a, cl_mem b, cl_mem bias,
                              cl_mem c, int *done) {
    *done = 0;
    int mode;
    cg_status s = current_mode(&mode);
    if (s != CG_OK) return s;
    cg_cl_gemm_args x = {.ta = 0,
                         .tb = 1,
                         .m = m,
                         .n = n,
                         .k = k,
                         .alpha = 1.0f,
                         .beta = 0.0f,
                         .a = a,
                         .b = b,
                         .c = c,
                         .lda = k,
                         .ldb = k,
                         .ldc = n,
                         .bias = bias};
    /* where cg_cl_sgemm runs cg_gemm_nt_cpu (its CPU-device shapes, never
     * timed against CLBlast), the bias goes into the same launch */
    if (!d || !bias || mode == CG_GEMM_CLBLAST || m < 2 || n < 2 || k < 1 || !cg_cl_gemm_rows_gemm(d, &x) ||
        m * k > INT32_MAX || n * k > INT32_MAX || m * n > INT32_MAX)
        return CG_OK;
    int64_t end = 0;
    if ((s = check_matrix(d, 'A', a, 0, m, k, k, &end)) != CG_OK || (s = check_matrix(d, 'B', b, 0, n, k, k, &end)) ||
        (s = check_matrix(d, 'C', c, 0, m, n, n, &end)) || (s = check_matrix(d, 'b', bias, 0, 1, n, n, &end)))
        return s;
    cg_cl_gemm_dev *g = NULL;
    if ((s = dev_get(d, &g)) != CG_OK) return s;
    s = cg_cl_gemm_run_own(d, g, &x);
    *done = s == CG_OK;
    return s;
}

cg_status cg_cl_sgemm(cg_cl_device *d, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, cl_mem a,
                      size_t a_off, int64_t lda, cl_mem b, size_t b_off, int64_t ldb, float beta, cl_mem c,
                      size_t c_off, int64_t ldc) {
    if (!d) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_cl_sgemm: device is NULL");
    const char *label = cg_cl_label(d);
    int ta = !!trans_a, tb = !!trans_b;
    if (m < 0 || n < 0 || k < 0)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: SGEMM: negative size m=%lld n=%lld k=%lld", label, (long long)m,
                        (long long)n, (long long)k);
    int64_t a_cols = ta ? m : k, b_cols = tb ? k : n;
    if (lda < (a_cols > 1 ? a_cols : 1) || ldb < (b_cols > 1 ? b_cols : 1) || ldc < (n > 1 ? n : 1))
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "%s: SGEMM %c%c m=%lld n=%lld k=%lld: leading dimensions lda=%lld "
                        "ldb=%lld ldc=%lld must be at least %lld, %lld and %lld",
                        label, ta ? 'T' : 'N', tb ? 'T' : 'N', (long long)m, (long long)n, (long long)k, (long long)lda,
                        (long long)ldb, (long long)ldc, (long long)(a_cols > 1 ? a_cols : 1),
                        (long long)(b_cols > 1 ? b_cols : 1), (long long)(n > 1 ? n : 1));
    if (a_off > INT64_MAX / 8 || b_off > INT64_MAX / 8 || c_off > INT64_MAX / 8)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: SGEMM: offset out of range", label);
    if (m == 0 || n == 0) return CG_OK;
    if (!c) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: SGEMM: C is NULL", label);
    int trivial = k == 0 || alpha == 0.0f; /* C = beta C: A and B are not read */
    int64_t end_a = 0, end_b = 0, end_c = 0;
    cg_status s = check_matrix(d, 'C', c, (int64_t)c_off, m, n, ldc, &end_c);
    if (s != CG_OK) return s;
    if (!trivial) {
        if (!a || !b) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: SGEMM: %s is NULL", label, a ? "B" : "A");
        s = check_matrix(d, 'A', a, (int64_t)a_off, ta ? k : m, a_cols, lda, &end_a);
        if (s == CG_OK) s = check_matrix(d, 'B', b, (int64_t)b_off, tb ? n : k, b_cols, ldb, &end_b);
        if (s != CG_OK) return s;
    }
    /* The own kernels index with int. */
    int own_ok = end_a <= INT32_MAX && end_b <= INT32_MAX && end_c <= INT32_MAX && lda <= INT32_MAX &&
                 ldb <= INT32_MAX && ldc <= INT32_MAX;

    int mode;
    if ((s = current_mode(&mode)) != CG_OK) return s;
    cg_cl_gemm_dev *g = NULL;
    if ((s = dev_get(d, &g)) != CG_OK) return s;
    cg_cl_gemm_args x = {.ta = ta,
                         .tb = tb,
                         .m = m,
                         .n = n,
                         .k = k,
                         .alpha = alpha,
                         .beta = beta,
                         .a = a,
                         .b = b,
                         .c = c,
                         .a_off = (int64_t)a_off,
                         .b_off = (int64_t)b_off,
                         .c_off = (int64_t)c_off,
                         .lda = lda,
                         .ldb = ldb,
                         .ldc = ldc};
    if (trivial || mode == CG_GEMM_OWN) {
        if (!own_ok)
            return cg_error(CG_ERR_UNSUPPORTED,
                            "%s: SGEMM m=%lld n=%lld k=%lld: matrices past 2^31 elements need "
                            "CLBlast (CLGRAPH_GEMM=auto or clblast)",
                            label, (long long)m, (long long)n, (long long)k);
        return cg_cl_gemm_run_own(d, g, &x);
    }
    int code = 0;
    if (mode == CG_GEMM_CLBLAST || !own_ok) return run_clblast(d, &x, &code);

    int untimed = m == 1 || n == 1 || cg_cl_gemm_rows_gemm(d, &x);
    int choice = cg_cl_gemm_lookup_or_claim(g->dk, ta, tb, m, n, k, untimed);
    if (choice == CG_GEMM_CHOICE_NONE) {
        s = measure(d, g, &x, &choice);
        if (s != CG_OK || choice == CG_GEMM_CHOICE_NONE) {
            /* Unmeasured: let a later call try again. */
            cg_cl_gemm_set_choice(g->dk, ta, tb, m, n, k, CG_GEMM_CHOICE_NONE);
            if (s != CG_OK) return s;
            choice = CG_GEMM_CHOICE_OWN;
        }
    } else if (choice == CG_GEMM_CHOICE_MEASURING || choice == CG_GEMM_CHOICE_PENDING) {
        choice = CG_GEMM_CHOICE_OWN; /* being timed by another thread, or not yet due */
    }
    choice = cg_cl_gemm_pin_choice(g->dk, ta, tb, m, n, k, choice);
    if (choice == CG_GEMM_CHOICE_CLBLAST) {
        s = run_clblast(d, &x, &code);
        if (s == CG_OK) return CG_OK;
        /* CLBlast failed where it once worked: own kernels from now on. */
        char clb_txt[96];
        snprintf(clb_txt, sizeof clb_txt, "failed(%s)", cg_clblast_error_name(code));
        cg_error_clear();
        cg_cl_gemm_st_clblast_fail++;
        clFinish(cg_cl_queue(d));
        cg_cl_gemm_set_choice(g->dk, ta, tb, m, n, k, CG_GEMM_CHOICE_OWN);
        cg_cl_gemm_unpin_clblast(g->dk, ta, tb, m, n, k);
        cg_cl_gemm_append_line(g->dk, ta, tb, m, n, k, CG_GEMM_CHOICE_OWN, "-1", clb_txt);
    }
    return cg_cl_gemm_run_own(d, g, &x);
}
