/* The profiler (cg_profiler, clgraph.h): what the executor records while a
 * profiler is attached to a plan (exec.c), and the trace and table it
 * writes (profile.c). */
#ifndef CG_GRAPH_SCHED_PROFILE_H
#define CG_GRAPH_SCHED_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "clgraph/clgraph.h"

/* What an event is. */
typedef enum { PROF_KERNEL, PROF_COPY, PROF_WAIT, PROF_RUN } prof_kind;

/* Microseconds since the profiler was created. */
double cg_profile_now(const cg_profiler *p);

/* Records one event: on track `track` (a device name, or "host"), `name`
 * (a node, or what the host waited for), in graph `graph`, op `op` (NULL
 * for copies, waits and runs), `detail` (shapes, or NULL), from t0 to t1
 * (cg_profile_now), moving `bytes` (copies), taking dev_us on the device
 * by its own timestamps (< 0: none). Strings are copied. Returns non-zero
 * when memory is short (the event is counted as dropped). */
int cg_profile_add(cg_profiler *p, prof_kind kind, const char *track, const char *graph, const char *name,
                   const char *op, const char *detail, double t0, double t1, uint64_t bytes, double dev_us);

#endif
