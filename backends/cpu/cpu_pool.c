/* Persistent worker pool behind cg_cpu_parallel_for.
 *
 * One job at a time (callers serialise on call_lock). A job is published under
 * `lock` and announced by bumping the atomic `gen`; workers that see the new
 * generation join it under `lock` (only while it is still open), then claim
 * chunks with an atomic counter. The caller works on chunks too, so a worker
 * that is late (asleep, descheduled on a busy machine) costs nothing: the
 * caller simply takes its chunks. When the caller runs out of chunks it closes
 * the job and waits only for the workers that joined, which are running
 * chunks right now. Nothing of a job is touched after its caller returns.
 *
 * Idle workers spin for a short while (a decoder step opens many short
 * parallel regions back to back) and then sleep on a condition variable, so an
 * idle process burns no CPU. Workers are detached and blocked for signals;
 * a child process after fork() starts a fresh pool lazily. */
#include "settings.h"
#include "cpu_pool.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#define CG_CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define CG_CPU_RELAX() __asm__ __volatile__("yield")
#else
#define CG_CPU_RELAX() sched_yield()
#endif

/* How long an idle worker polls for the next job before it sleeps, and how
 * long a caller polls for its workers before it sleeps. Polling covers the gap
 * between two layers of a decoder step; a sleeping worker needs a futex
 * wake-up (tens of microseconds in a VM). Batch-1 medium decoder step, 2
 * threads: 1.19 ms with 5 us, 0.93 ms with 50 us, 0.88 ms with 200 us. */
#define CG_POOL_SPIN_NS 50000L
/* More chunks than threads balances a late or slower thread; each chunk still
 * holds at least `grain` items. */
#define CG_POOL_CHUNKS_PER_THREAD 4
#define CG_POOL_MAX_THREADS 1024

typedef void (*cg_pool_fn)(void *ctx, size_t begin, size_t end);

static struct {
    pthread_once_t once;
    int threads;
    pthread_mutex_t call_lock; /* one job at a time */
    pthread_mutex_t lock;      /* guards everything below that is not atomic */
    pthread_cond_t wake;       /* sleeping workers wait here for a job */
    pthread_cond_t idle;       /* the caller waits here for active == 0 */
    int started;               /* workers created (or tried) in this process */
    int nworkers;
    pthread_t *tids;
    int sleepers;
    int caller_waiting;
    int open; /* workers may still join the current job */
    cg_pool_fn fn;
    void *ctx;
    size_t n, nchunks;
    atomic_uint gen;    /* bumped once per published job */
    atomic_size_t next; /* next unclaimed chunk of the current job */
    atomic_int active;  /* workers that joined the current job */
} P = {.once = PTHREAD_ONCE_INIT,
       .call_lock = PTHREAD_MUTEX_INITIALIZER,
       .lock = PTHREAD_MUTEX_INITIALIZER,
       .wake = PTHREAD_COND_INITIALIZER,
       .idle = PTHREAD_COND_INITIALIZER};

/* Set on pool workers for their whole life and on a caller while it runs a
 * job: a parallel_for from such a thread runs serially instead of waiting for
 * a pool that is busy with the job that called it. */
static _Thread_local int tls_in_task;

static long cg_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void cg_pool_prepare_fork(void) { pthread_mutex_lock(&P.lock); }
static void cg_pool_parent_fork(void) { pthread_mutex_unlock(&P.lock); }

/* The child has only the forking thread: forget the workers (their array is
 * reused when the child starts its own) and any job in flight. */
static void cg_pool_child_fork(void) {
    pthread_mutex_init(&P.call_lock, NULL);
    pthread_mutex_init(&P.lock, NULL);
    pthread_cond_init(&P.wake, NULL);
    pthread_cond_init(&P.idle, NULL);
    P.started = 0;
    P.nworkers = 0;
    P.sleepers = 0;
    P.caller_waiting = 0;
    P.open = 0;
    atomic_store(&P.active, 0);
}

static void cg_pool_init(void) {
    long t = 0;
    const char *env = cg_setting(CG_SET_THREADS);
    if (env && *env) {
        char *end = NULL;
        long v = strtol(env, &end, 10);
        if (end && *end == '\0' && v > 0) t = v;
    }
    if (t <= 0) t = sysconf(_SC_NPROCESSORS_ONLN);
    if (t < 1) t = 1;
    if (t > CG_POOL_MAX_THREADS) t = CG_POOL_MAX_THREADS;
    P.threads = (int)t;
    pthread_atfork(cg_pool_prepare_fork, cg_pool_parent_fork, cg_pool_child_fork);
}

int cg_cpu_threads(void) {
    pthread_once(&P.once, cg_pool_init);
    return P.threads;
}

/* Chunk c of nchunks over [0, n): sizes differ by at most one item. */
static void cg_pool_run_chunks(cg_pool_fn fn, void *ctx, size_t n, size_t nchunks) {
    size_t q = n / nchunks, r = n % nchunks;
    for (;;) {
        size_t c = atomic_fetch_add_explicit(&P.next, 1, memory_order_relaxed);
        if (c >= nchunks) return;
        size_t begin = c * q + (c < r ? c : r);
        fn(ctx, begin, begin + q + (c < r));
    }
}

static void *cg_pool_worker(void *arg) {
    unsigned seen = (unsigned)(uintptr_t)arg;
    tls_in_task = 1;
    for (;;) {
        long deadline = cg_now_ns() + CG_POOL_SPIN_NS;
        for (int i = 1; atomic_load_explicit(&P.gen, memory_order_acquire) == seen; i++) {
            CG_CPU_RELAX();
            if (i % 64 == 0 && cg_now_ns() > deadline) break;
        }
        pthread_mutex_lock(&P.lock);
        while (atomic_load_explicit(&P.gen, memory_order_relaxed) == seen) {
            P.sleepers++;
            pthread_cond_wait(&P.wake, &P.lock);
            P.sleepers--;
        }
        seen = atomic_load_explicit(&P.gen, memory_order_relaxed);
        if (!P.open) { /* finished before we got here */
            pthread_mutex_unlock(&P.lock);
            continue;
        }
        cg_pool_fn fn = P.fn;
        void *ctx = P.ctx;
        size_t n = P.n, nchunks = P.nchunks;
        atomic_fetch_add_explicit(&P.active, 1, memory_order_relaxed);
        pthread_mutex_unlock(&P.lock);

        cg_pool_run_chunks(fn, ctx, n, nchunks);

        pthread_mutex_lock(&P.lock);
        if (atomic_fetch_sub_explicit(&P.active, 1, memory_order_release) == 1 && P.caller_waiting)
            pthread_cond_signal(&P.idle);
        pthread_mutex_unlock(&P.lock);
    }
    return NULL;
}

/* Called with call_lock held. Threads that cannot be created are done
 * without: the caller takes their chunks. */
static void cg_pool_start_workers(void) {
    P.started = 1;
    int want = P.threads - 1;
    if (!P.tids) P.tids = calloc((size_t)want, sizeof *P.tids);
    if (!P.tids) return;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* Signals go to the application's threads, never to a pool worker. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    uintptr_t gen = atomic_load(&P.gen);
    for (int i = 0; i < want; i++) {
        if (pthread_create(&P.tids[i], &attr, cg_pool_worker, (void *)gen) != 0) break;
        P.nworkers++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
}

void cg_cpu_parallel_for(size_t n, size_t grain, void (*fn)(void *ctx, size_t begin, size_t end), void *ctx) {
    if (n == 0) return;
    if (grain == 0) grain = 1;
    int threads = cg_cpu_threads();
    if (n <= grain || threads == 1 || tls_in_task) {
        fn(ctx, 0, n);
        return;
    }
    size_t nchunks = n / grain;
    size_t cap = (size_t)threads * CG_POOL_CHUNKS_PER_THREAD;
    if (nchunks > cap) nchunks = cap;

    pthread_mutex_lock(&P.call_lock);
    if (!P.started) cg_pool_start_workers();
    if (P.nworkers == 0) {
        pthread_mutex_unlock(&P.call_lock);
        fn(ctx, 0, n);
        return;
    }
    tls_in_task = 1;

    pthread_mutex_lock(&P.lock);
    P.fn = fn;
    P.ctx = ctx;
    P.n = n;
    P.nchunks = nchunks;
    P.open = 1;
    atomic_store_explicit(&P.next, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&P.gen, 1, memory_order_release);
    if (P.sleepers > 0) pthread_cond_broadcast(&P.wake);
    pthread_mutex_unlock(&P.lock);

    cg_pool_run_chunks(fn, ctx, n, nchunks);

    /* Every chunk is claimed: close the job to latecomers, then wait for the
     * workers inside it (each is finishing a chunk it claimed). */
    pthread_mutex_lock(&P.lock);
    P.open = 0;
    int busy = atomic_load_explicit(&P.active, memory_order_acquire) > 0;
    pthread_mutex_unlock(&P.lock);
    if (busy) {
        long deadline = cg_now_ns() + CG_POOL_SPIN_NS;
        for (int i = 1; atomic_load_explicit(&P.active, memory_order_acquire) > 0; i++) {
            CG_CPU_RELAX();
            if (i % 64 == 0 && cg_now_ns() > deadline) break;
        }
        pthread_mutex_lock(&P.lock);
        while (atomic_load_explicit(&P.active, memory_order_acquire) > 0) {
            P.caller_waiting = 1;
            pthread_cond_wait(&P.idle, &P.lock);
        }
        P.caller_waiting = 0;
        pthread_mutex_unlock(&P.lock);
    }
    tls_in_task = 0;
    pthread_mutex_unlock(&P.call_lock);
}
