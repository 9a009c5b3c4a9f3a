/* cg_machine_measure (clgraph.h): this machine's memory read bandwidth and
 * SGEMM peak, the limits a decoder step of `clgraph bench --machine` is
 * compared with, and the BLAS thread count. */
#include "cpu_blas.h"

#include "clgraph/clgraph.h"
#include "error.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef CG_HAVE_OPENBLAS_THREADS
int openblas_get_num_threads(void);
#endif

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long online_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

typedef float v4sf __attribute__((vector_size(16)));

/* Holds the readers until every one has started (go = 1) or one could not
 * be (go = -1: they return): a barrier short of a thread would wait for
 * ever. */
typedef struct start_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go;
} start_gate;

static int gate_wait(start_gate *g) {
    pthread_mutex_lock(&g->mu);
    while (!g->go) pthread_cond_wait(&g->cv, &g->mu);
    int go = g->go;
    pthread_mutex_unlock(&g->mu);
    return go;
}

static void gate_open(start_gate *g, int go) {
    pthread_mutex_lock(&g->mu);
    g->go = go;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

typedef struct stream_job {
    start_gate *gate;
    const float *a;
    size_t n; /* floats, a multiple of 16 */
    pthread_barrier_t *bar;
    int reps;
    double *best_ms; /* thread 0 only */
    float sum;
} stream_job;

static void *stream_thread(void *arg) {
    stream_job *j = arg;
    if (gate_wait(j->gate) < 0) return NULL;
    for (int r = 0; r < j->reps; r++) {
        pthread_barrier_wait(j->bar);
        double t0 = now_ms();
        v4sf s0 = {0, 0, 0, 0}, s1 = s0, s2 = s0, s3 = s0;
        for (size_t i = 0; i < j->n; i += 16) {
            v4sf x0, x1, x2, x3;
            memcpy(&x0, j->a + i, 16);
            memcpy(&x1, j->a + i + 4, 16);
            memcpy(&x2, j->a + i + 8, 16);
            memcpy(&x3, j->a + i + 12, 16);
            s0 += x0;
            s1 += x1;
            s2 += x2;
            s3 += x3;
        }
        v4sf s = s0 + s1 + s2 + s3;
        j->sum += s[0] + s[1] + s[2] + s[3];
        pthread_barrier_wait(j->bar);
        if (j->best_ms) {
            double t = now_ms() - t0;
            if (*j->best_ms == 0 || t < *j->best_ms) *j->best_ms = t;
        }
    }
    return NULL;
}

static void *touch_thread(void *arg) {
    stream_job *j = arg;
    memset((void *)j->a, 0, j->n * sizeof(float));
    for (size_t i = 0; i < j->n; i += 1024) ((float *)j->a)[i] = (float)(i & 7);
    return NULL;
}

/* GB/s reading a 512 MiB float array, summed by `threads` threads, best
 * of 5; 0 when the memory or a thread could not be had. */
static double read_bandwidth(int threads) {
    size_t n = (size_t)512 << 20 >> 2;
    float *a = aligned_alloc(64, n * sizeof(float));
    stream_job *jobs = calloc((size_t)threads, sizeof *jobs);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    pthread_barrier_t bar;
    start_gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    double best = 0, gbps = 0;
    if (!a || !jobs || !tid || pthread_barrier_init(&bar, NULL, (unsigned)threads)) goto out;
    size_t per = n / (size_t)threads / 16 * 16;
    for (int t = 0; t < threads; t++) {
        jobs[t].a = a + (size_t)t * per;
        jobs[t].n = t == threads - 1 ? (n - (size_t)t * per) / 16 * 16 : per;
        jobs[t].gate = &gate;
        jobs[t].bar = &bar;
        jobs[t].reps = 5;
        jobs[t].best_ms = t == 0 ? &best : NULL;
    }
    /* Pages first touched by the thread that reads them. */
    int started = 0;
    for (; started < threads; started++)
        if (pthread_create(&tid[started], NULL, touch_thread, &jobs[started])) break;
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    if (started == threads) {
        for (started = 0; started < threads; started++)
            if (pthread_create(&tid[started], NULL, stream_thread, &jobs[started])) break;
        gate_open(&gate, started == threads ? 1 : -1);
        float sum = 0;
        for (int t = 0; t < started; t++) {
            pthread_join(tid[t], NULL);
            sum += jobs[t].sum;
        }
        size_t read = 0;
        for (int t = 0; t < threads; t++) read += jobs[t].n * sizeof(float);
        if (started == threads && best > 0 && sum >= 0) gbps = (double)read / (best * 1e6);
    }
    pthread_barrier_destroy(&bar);
out:
    free(a);
    free(jobs);
    free(tid);
    return gbps;
}

/* GFLOP/s of SGEMM (cblas_sgemm: no transposes) on 2048 x 2048 matrices,
 * best of 3; 0 when the memory could not be had. */
static double sgemm_peak(void) {
    const int n = 2048;
    size_t nn = (size_t)n * (size_t)n;
    float *a = malloc(nn * sizeof(float)), *b = malloc(nn * sizeof(float)), *c = malloc(nn * sizeof(float));
    double best = 0;
    if (a && b && c) {
        for (size_t i = 0; i < nn; i++) {
            a[i] = (float)(i % 7) * 0.125f;
            b[i] = (float)(i % 5) * 0.25f;
        }
        for (int r = 0; r < 3; r++) {
            double t0 = now_ms();
            cg_cpu_sgemm(0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
            double t = now_ms() - t0;
            if (best == 0 || t < best) best = t;
        }
    }
    free(a);
    free(b);
    free(c);
    return best > 0 ? 2.0 * n * n * (double)n / (best * 1e6) : 0;
}

/* The CPU backend's thread pool and OpenBLAS both default to the online
 * CPUs; CLGRAPH_THREADS sets the pool's count. */
static int blas_threads(void) {
    const char *env = getenv("CLGRAPH_THREADS");
    if (env && atoi(env) > 0) return atoi(env);
#ifdef CG_HAVE_OPENBLAS_THREADS
    int t = openblas_get_num_threads();
    if (t > 0) return t;
#endif
    return (int)online_cpus();
}

cg_status cg_machine_measure(cg_machine_info *info) {
    if (!info || info->struct_size < sizeof *info)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_machine_measure: %s",
                        info ? "struct_size is smaller than cg_machine_info" : "NULL info");
    unsigned what = info->measure;
    if (what & ~(unsigned)(CG_MACHINE_READ | CG_MACHINE_SGEMM))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_machine_measure: unknown measure bits 0x%x", what);
    info->blas_threads = blas_threads();
    info->read_threads = (int)online_cpus();
    info->read_gbps = info->sgemm_gflops = 0;
    if (what & CG_MACHINE_READ) {
        info->read_gbps = read_bandwidth(info->read_threads);
        if (info->read_gbps <= 0)
            return cg_error(CG_ERR_NO_MEMORY, "cg_machine_measure: cannot read 512 MiB with %d threads",
                            info->read_threads);
    }
    if (what & CG_MACHINE_SGEMM) {
        info->sgemm_gflops = sgemm_peak();
        if (info->sgemm_gflops <= 0)
            return cg_error(CG_ERR_NO_MEMORY, "cg_machine_measure: no memory for the SGEMM matrices");
    }
    return CG_OK;
}
