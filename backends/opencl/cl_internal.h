/* Internals of the OpenCL backend shared by its source files, and hooks for
 * its tests. Not part of the interface others code against (cl_backend.h). */
#ifndef CG_BACKEND_OPENCL_INTERNAL_H
#define CG_BACKEND_OPENCL_INTERNAL_H

#include <pthread.h>

#include "opencl/cl_backend.h"

typedef struct cg_cl_kernel_entry {
    char *name;
    cl_kernel kernel;
    struct cg_cl_kernel_entry *next;
} cg_cl_kernel_entry;

/* One built program of a device's in-memory cache, keyed by its source
 * text, build options and, for a source that selects kernels
 * (CG_ONE_KERNEL, cl_backend.h), the kernel's name (compared in full: no
 * hash collisions). */
typedef struct cg_cl_program_entry {
    size_t source_len;
    char *source;
    char *options;      /* the caller's options, without -cl-std */
    char *kernel;       /* the one kernel built, or NULL for the whole source */
    char *full_options; /* as passed to clBuildProgram (the disk key) */
    int store_pending;  /* built from source, binary not yet on disk */
    cl_program program;
    cg_cl_kernel_entry *kernels;
    struct cg_cl_program_entry *next;
} cg_cl_program_entry;

#define CG_CL_CAPTURE_MAX 256

typedef struct cg_cl_kernel_limit_slot {
    cl_kernel kernel; /* NULL: empty */
    cg_cl_kernel_limits lim;
} cg_cl_kernel_limit_slot;

struct cg_cl_device {
    int index;
    int refs; /* guarded by the open/release lock in cl_device.c */
    const cg_cl_info *info;
    cl_context context;
    cl_command_queue queue;
    int profiling; /* the queue records timestamps (CL_QUEUE_PROFILING_ENABLE) */
    /* A profile's capture (cg_cl_capture_begin): the events of the commands
     * enqueued since, kept to read their times. */
    int capture, n_cap;
    cl_event cap[CG_CL_CAPTURE_MAX];
    size_t max_item[3]; /* CL_DEVICE_MAX_WORK_ITEM_SIZES */
    char label[320];    /* "opencl:0 (NAME)" */
    /* 1: binaries go to the disk cache when the device is released, not
     * when built. On PoCL, CL_PROGRAM_BINARIES compiles a generic
     * work-group function for every kernel of the program (0.05 to 1.5 s
     * each): fetched right after each build, that was most of a cold start. */
    int defer_stores;
    pthread_mutex_t mu;     /* guards programs (and its kernels) and klim */
    pthread_mutex_t run_mu; /* serialises kernel runs (cg_cl_run_lock) */
    cg_cl_program_entry *programs;
    /* the cached kernels' limits by handle (cl_kernel_limits.c) */
    cg_cl_kernel_limit_slot *klim;
    size_t klim_cap, klim_n;
};

/* Sets the message "LABEL: CALL failed: CL_NAME" (call is e.g.
 * "clEnqueueNDRangeKernel(softmax)") and returns s. */
cg_status cg_cl_fail(const cg_cl_device *d, cg_status s, const char *call, cl_int err);

/* Writes the deferred binaries (defer_stores) to the disk cache, then
 * releases every program and kernel of the device's in-memory cache (the
 * device stays open). Used at release and by tests. */
void cg_cl_program_cache_clear(cg_cl_device *d);

/* Whether the device's binaries are written at release (PoCL) rather than
 * when built; decided when the device is opened. */
int cg_cl_defers_stores(const cg_cl_info *info);

/* ---- cl_kernel_limits.c (d->mu held where named _locked) ---- */

/* Kernel k's limits asked of OpenCL (0 where a query fails). */
cg_cl_kernel_limits cg_cl_query_kernel_limits(const cg_cl_device *d, cl_kernel k);
/* Records k's limits (queried now) for cg_cl_kernel_limits_of. */
void cg_cl_kernel_limits_add_locked(cg_cl_device *d, cl_kernel k);
/* Forgets every kernel's (the program cache is being cleared). */
void cg_cl_kernel_limits_clear_locked(cg_cl_device *d);

/* ---- test hooks ---- */

/* How many times a kernel's limits were asked of OpenCL in this process. */
long cg_cl_test_limit_queries(void);

/* Whether OpenCL platforms have been enumerated in this process (starting
 * them costs memory and threads: a CPU-only run must not). */
int cg_cl_test_enumerated(void);

/* Drops the in-memory program cache of d (as if the process restarted, with
 * the device still open); deferred binaries are written first, as at
 * release. */
void cg_cl_test_drop_memory_cache(cg_cl_device *d);

/* Overrides when d writes binaries: 1 at release, 0 when built. */
void cg_cl_test_set_defer_stores(cg_cl_device *d, int defer);

/* The path of the disk cache entry of (source, options) on d; 0 on success.
 * For a source that selects kernels, `kernel` names the one built (NULL
 * otherwise). */
int cg_cl_test_cache_path(const cg_cl_device *d, const char *source, const char *options, const char *kernel, char *buf,
                          size_t size);

#endif
