/* SGEMM / SGEMV speed of the CPU backend: the own kernels against OpenBLAS,
 * through cg_cpu_sgemm(0, 1, ...) and cg_cpu_sgemv(0, ...) as the ops call
 * them (C = A W^T, warm caches, the same operands every repetition).
 *
 *   gemm_bench [--paths auto,blas,...] [--ms MS] [--int8] [M,N,K ...]
 *
 * --int8 times cg_cpu_gemm_nt_q8 instead (W int8 with per-row scales, A
 * quantized on the fly; the int8 kernels that go with each path).
 *
 * Paths are cg_cpu_gemm_force names (auto, own, blas, avx512, avx2,
 * portable); each shape runs for about MS milliseconds (default 300) per path
 * and reports the best and the median time. M = 1 is the GEMV. Threads:
 * CLGRAPH_THREADS for the own kernels, OPENBLAS_NUM_THREADS for OpenBLAS;
 * OPENBLAS_CORETYPE=SKYLAKEX in the environment picks OpenBLAS's AVX-512
 * kernels on CPUs it does not recognise. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/cpu_blas.h"
#include "mem.h"
#include "cpu/cpu_gemm.h"
#include "cpu/cpu_pool.h"
#include "dtype.h"

static int g_int8;
static int8_t *g_wq;
static float *g_ws;
static void *g_scratch;

static const int64_t default_shapes[][3] = {
    {64, 1536, 1280},  {64, 1536, 512}, {64, 8000, 512}, {64, 512, 512},   {80, 8000, 512},
    {1920, 1536, 256}, {1, 8000, 512},  {1, 1536, 1280}, {1, 32000, 1024},
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static float *filled(size_t n, uint32_t seed) {
    float *p = cg_aligned_alloc(n * sizeof *p);
    if (!p) {
        fprintf(stderr, "gemm_bench: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)(seed >> 8) / (float)(1u << 24) - 0.5f;
    }
    return p;
}

static void product(int64_t m, int64_t n, int64_t k, const float *a, const float *w, float *c) {
    if (g_int8) cg_cpu_gemm_nt_q8(m, n, k, a, k, g_wq, g_ws, NULL, k, NULL, c, n, g_scratch);
    else if (m == 1) cg_cpu_sgemv(0, n, k, 1.0f, w, k, a, 0.0f, c);
    else cg_cpu_sgemm(0, 1, m, n, k, 1.0f, a, k, w, k, 0.0f, c, n);
}

static void bench_shape(int64_t m, int64_t n, int64_t k, const char *paths, double ms) {
    float *a = filled((size_t)(m * k), 1), *w = filled((size_t)(n * k), 2);
    float *c = filled((size_t)(m * n), 3);
    if (g_int8) {
        g_wq = cg_aligned_alloc((size_t)(n * k));
        g_ws = cg_aligned_alloc((size_t)n * sizeof *g_ws);
        g_scratch = cg_aligned_alloc(cg_cpu_gemm_q8_scratch(m, n, k));
        if (!g_wq || !g_ws || !g_scratch) exit(1);
        for (int64_t j = 0; j < n; j++) g_ws[j] = cg_q8_row(w + j * k, k, g_wq + j * k);
    }
    char list[256];
    snprintf(list, sizeof list, "%s", paths);
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (!cg_cpu_gemm_force(p)) {
            printf("%6lld %6lld %6lld  %-9s  (not available)\n", (long long)m, (long long)n, (long long)k, p);
            continue;
        }
        product(m, n, k, a, w, c); /* warm caches, threads and packing */
        enum { MAX_REPS = 20000 };
        static double t[MAX_REPS];
        int reps = 0;
        double start = now_s();
        while (reps < MAX_REPS && (reps < 5 || now_s() - start < ms * 1e-3)) {
            double t0 = now_s();
            product(m, n, k, a, w, c);
            t[reps++] = now_s() - t0;
        }
        qsort(t, (size_t)reps, sizeof t[0], cmp_double);
        double flops = 2.0 * (double)m * (double)n * (double)k;
        printf("%6lld %6lld %6lld  %-9s %10.1f us best %10.1f us median %8.1f GFLOP/s best "
               "%8.1f median\n",
               (long long)m, (long long)n, (long long)k, g_int8 ? cg_cpu_gemm_q8_path() : cg_cpu_gemm_path(),
               t[0] * 1e6, t[reps / 2] * 1e6, flops / t[0] * 1e-9, flops / t[reps / 2] * 1e-9);
        fflush(stdout);
    }
    cg_aligned_free(a);
    cg_aligned_free(w);
    cg_aligned_free(c);
    cg_aligned_free(g_wq);
    cg_aligned_free(g_ws);
    cg_aligned_free(g_scratch);
    g_wq = NULL, g_ws = NULL, g_scratch = NULL;
}

int main(int argc, char **argv) {
    const char *paths = "auto,blas";
    double ms = 300;
    int first_shape = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--paths") == 0 && i + 1 < argc) {
            paths = argv[++i];
        } else if (strcmp(argv[i], "--int8") == 0) {
            g_int8 = 1;
        } else if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc) {
            ms = atof(argv[++i]);
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: %s [--paths auto,blas,...] [--ms MS] [--int8] [M,N,K ...]\n", argv[0]);
            return 2;
        } else {
            first_shape = i;
            break;
        }
    }
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    printf("# own-kernel threads %d, OPENBLAS_CORETYPE=%s\n", cg_cpu_threads(), coretype ? coretype : "(unset)");
    if (first_shape == argc) {
        for (size_t s = 0; s < sizeof default_shapes / sizeof default_shapes[0]; s++)
            bench_shape(default_shapes[s][0], default_shapes[s][1], default_shapes[s][2], paths, ms);
        return 0;
    }
    for (int i = first_shape; i < argc; i++) {
        long long m, n, k;
        if (sscanf(argv[i], "%lld,%lld,%lld", &m, &n, &k) != 3 || m < 1 || n < 1 || k < 1) {
            fprintf(stderr, "gemm_bench: bad shape '%s' (want M,N,K)\n", argv[i]);
            return 2;
        }
        bench_shape(m, n, k, paths, ms);
    }
    return 0;
}
