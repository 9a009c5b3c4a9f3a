/* The CPU backend's persistent thread pool: one set of worker threads shared by
 * the GEMM kernels and the element-wise ops, so that a decoder step with many
 * short parallel regions does not create threads or pay a full wake-up each. */
#ifndef CG_BACKEND_CPU_POOL_H
#define CG_BACKEND_CPU_POOL_H

#include <stddef.h>

/* Number of threads cg_cpu_parallel_for uses (the caller included):
 * CLGRAPH_THREADS when set to a positive integer, otherwise the online CPUs
 * (sysconf), at least 1 (and at most 1024). Fixed at first use. */
int cg_cpu_threads(void);

/* Runs fn(ctx, begin, end) over [0, n) split into contiguous chunks of at least
 * `grain` items, on the pool's threads and the caller; returns when every chunk
 * is done. Serial (one call fn(ctx,0,n)) when n <= grain, when only one thread,
 * or when called from inside a pool task (no nesting); no call at all when
 * n == 0; grain 0 counts as 1. Thread-safe: concurrent callers from different
 * threads serialise (a mutex) rather than deadlock. Which thread runs which
 * chunk varies from call to call: fn must compute each item the same way
 * whatever chunk it lands in. */
void cg_cpu_parallel_for(size_t n, size_t grain, void (*fn)(void *ctx, size_t begin, size_t end), void *ctx);

#endif
