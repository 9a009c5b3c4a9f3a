/* The OpenCL backend: devices found through the ICD loader, one context and
 * one in-order queue per device, buffers and transfers, programs compiled on
 * first use with an on-disk binary cache, kernel launches, and SGEMM
 * (CLBlast or own kernels, chosen by measurement). It knows no operators. */
#ifndef CG_BACKEND_OPENCL_H
#define CG_BACKEND_OPENCL_H

#include <stddef.h>
#include <stdint.h>

#include <CL/cl.h>

#include "clgraph/clgraph.h"

/* What `clgraph devices` shows of one device; read once at enumeration. */
typedef struct cg_cl_info {
    int index;                  /* N of "opencl:N": enumeration order over platforms */
    char name[256];             /* CL_DEVICE_NAME */
    char vendor[256];           /* CL_DEVICE_VENDOR */
    char platform[256];         /* CL_PLATFORM_NAME */
    char platform_version[256]; /* CL_PLATFORM_VERSION */
    char version[256];          /* CL_DEVICE_VERSION */
    char c_version[256];        /* CL_DEVICE_OPENCL_C_VERSION */
    char driver[256];           /* CL_DRIVER_VERSION */
    cl_device_type type;
    uint32_t compute_units;
    uint64_t global_mem; /* bytes */
    uint64_t local_mem;  /* bytes */
    uint64_t max_alloc;  /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
    size_t max_work_group;
    size_t max_item[3]; /* CL_DEVICE_MAX_WORK_ITEM_SIZES (dims 0..2) */
    uint32_t mem_align; /* CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes (>= 64) */
    int fp16, fp64;     /* cl_khr_fp16 / cl_khr_fp64 (or a double config) */
    cl_platform_id platform_id;
    cl_device_id device_id;
} cg_cl_info;

/* A kernel's own limits on its device: CL_KERNEL_WORK_GROUP_SIZE (often
 * below the device's maximum: it depends on the kernel's registers and local
 * memory), CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE and
 * CL_KERNEL_LOCAL_MEM_SIZE; 0 where a query failed. */
typedef struct cg_cl_kernel_limits {
    size_t group, multiple;
    uint64_t local_mem;
} cg_cl_kernel_limits;

/* An opened device: context, queue, caches. Opaque. */
typedef struct cg_cl_device cg_cl_device;

/* Number of OpenCL devices (enumerated once per process, thread-safe).
 * 0 when there is no ICD or no platform; cg_cl_unavailable_reason() says
 * why. Never fails otherwise. */
int cg_cl_device_count(void);

/* Why there are no devices ("no OpenCL platform found (clGetPlatformIDs:
 * CL_PLATFORM_NOT_FOUND_KHR)"), or NULL when there are some. */
const char *cg_cl_unavailable_reason(void);

/* Info of device i (NULL if out of range). */
const cg_cl_info *cg_cl_device_info(int i);

/* Resolves a device spec: "opencl:N", "N", or a case-insensitive substring
 * of the device, vendor or platform name. Returns the index or sets an error
 * listing the devices. */
cg_status cg_cl_device_find(const char *spec, int *index);

/* Opens device i: context and in-order queue, created on the first open and
 * shared by every opener (reference counted; thread-safe). The last release
 * writes the program binaries it deferred (cg_cl_kernel) to the disk cache
 * and frees the queue, the context and the device's programs and kernels. */
cg_status cg_cl_device_open(int i, cg_cl_device **out);
void cg_cl_device_release(cg_cl_device *d);

const cg_cl_info *cg_cl_info_of(const cg_cl_device *d);
cl_context cg_cl_context(const cg_cl_device *d);
cl_command_queue cg_cl_queue(const cg_cl_device *d);
/* "opencl:0 (pthread-skylake...)" for messages. */
const char *cg_cl_label(const cg_cl_device *d);

/* Whether kernels take the paths written for CPU devices on d (CPU drivers
 * run a work-group's items as a loop: few items per row, many rows per
 * group, GEMV rows, 8-item selection groups) or those for GPUs. By default
 * a device whose type is CPU and not GPU takes the CPU set (Oclgrind,
 * which reports every type, the GPU set); CLGRAPH_CL_PATHS=cpu or gpu
 * forces one set on every device (read once per process), so both sets run
 * anywhere. */
int cg_cl_cpu_paths(const cg_cl_device *d);

/* cg_cl_cpu_paths for a device not opened yet. */
int cg_cl_info_cpu_paths(const cg_cl_info *in);

/* The path set CLGRAPH_CL_PATHS forces: "cpu", "gpu", or "" (each device
 * by its type); an unknown value counts as "" and is returned in *bad. */
const char *cg_cl_paths_forced(const char **bad);

/* ---- memory and transfers (errors name the call, the CL error and the device) ---- */

/* A read-write buffer; bytes 0 gives a minimal (4-byte) one. More than
 * info->max_alloc fails with CG_ERR_NO_MEMORY. */
cg_status cg_cl_alloc(cg_cl_device *d, size_t bytes, cl_mem *out);
/* A sub-buffer [offset, offset + bytes) of parent; offset must be a multiple
 * of info->mem_align. bytes 0 is allowed (a 1-element region is used). */
cg_status cg_cl_sub_buffer(cg_cl_device *d, cl_mem parent, size_t offset, size_t bytes, cl_mem *out);
cg_status cg_cl_write(cg_cl_device *d, cl_mem m, size_t offset, size_t bytes, const void *src, int blocking);
cg_status cg_cl_read(cg_cl_device *d, cl_mem m, size_t offset, size_t bytes, void *dst);
/* As cg_cl_write / cg_cl_read with the choice of blocking, and the
 * transfer's event in *ev when ev is not NULL (release it with cg_cl_wait). */
cg_status cg_cl_write_ev(cg_cl_device *d, cl_mem m, size_t offset, size_t bytes, const void *src, int blocking,
                         cl_event *ev);
cg_status cg_cl_read_ev(cg_cl_device *d, cl_mem m, size_t offset, size_t bytes, void *dst, int blocking, cl_event *ev);
/* Waits for an event and releases it (NULL: nothing to wait for). */
cg_status cg_cl_wait(cg_cl_device *d, cl_event ev);
/* Profiles: from begin to end the device keeps the events of the commands
 * enqueued on its queue (kernels, transfers, CLBlast calls; up to
 * CG_CL_CAPTURE_MAX); end waits for them and sums the time each took on
 * the device by its timestamps. CG_ERR_UNSUPPORTED where the queue has no
 * profiling. keep takes one command's event (retain: the caller keeps its
 * own reference). */
cg_status cg_cl_capture_begin(cg_cl_device *d);
void cg_cl_capture_keep(cg_cl_device *d, cl_event ev, int retain);
cg_status cg_cl_capture_end(cg_cl_device *d, double *busy_us);
cg_status cg_cl_copy(cg_cl_device *d, cl_mem src, size_t src_off, cl_mem dst, size_t dst_off, size_t bytes);
cg_status cg_cl_finish(cg_cl_device *d);

/* Serialises the kernel runs on a device: OpenCL kernel arguments are
 * state on the (shared, cached) kernel object, so a run's clSetKernelArg
 * calls and its launch must not interleave with another thread's. */
void cg_cl_run_lock(cg_cl_device *d);
void cg_cl_run_unlock(cg_cl_device *d);

/* ---- programs and kernels ---- */

/* The kernel `name` of `source` built with `options` (OpenCL C 1.2; the
 * backend adds -cl-std=CL1.2). Cached per device in memory by (source hash,
 * options, name), and as a binary on disk under cg_cache_dir() keyed by
 * the source hash, options, device name, driver and platform version; files
 * are written atomically and a stale or damaged entry is silently rebuilt
 * from source. A build failure's message carries the build log.
 *
 * A source that mentions CG_ONE_KERNEL is built one kernel per program, so
 * a plan compiles only the kernels it runs: kernel K gets a program of its
 * own, built with -DCG_ONE_KERNEL=1 -DCG_KERNEL_K=1 added to the options,
 * and the source wraps each kernel in `#if CG_WANT(K)` with
 *     #ifndef CG_ONE_KERNEL
 *     #define CG_ONE_KERNEL 0
 *     #endif
 *     #define CG_WANT(k) (!CG_ONE_KERNEL || CG_KERNEL_##k)
 * (so that it still builds whole without them): the library's own sources
 * get these lines from backends/opencl/cl_preamble.cl, put in front of each
 * when it is embedded. Other sources are built whole, once for all their
 * kernels.
 *
 * Binaries are written to disk when built, except on PoCL, where fetching
 * a binary compiles every kernel of the program for every work-group size:
 * there the device's last release writes them (cg_cl_device_release), and
 * PoCL's own kernel cache serves the processes in between.
 * The kernel object belongs to the device (do not release it) and is the
 * same object for every caller asking for the same (source, options, name):
 * OpenCL kernel arguments are state on that object, so callers that launch
 * it from several threads must serialise clSetKernelArg + cg_cl_launch. */
cg_status cg_cl_kernel(cg_cl_device *d, const char *source, const char *options, const char *name, cl_kernel *out);

/* Kernel k's limits on d: looked up for a kernel cg_cl_kernel made (queried
 * once, when it was made), else queried. */
cg_cl_kernel_limits cg_cl_kernel_limits_of(cg_cl_device *d, cl_kernel k);

/* Counters of the program cache since start (for tests and `bench`). */
typedef struct cg_cl_cache_stats {
    uint64_t builds_from_source; /* clBuildProgram from source */
    uint64_t loads_from_disk;    /* binaries loaded from the disk cache */
    uint64_t disk_writes;        /* binaries written */
    uint64_t disk_rejects;       /* damaged or stale entries rebuilt */
    uint64_t kernels_created;    /* clCreateKernel calls */
} cg_cl_cache_stats;
void cg_cl_cache_stats_get(cg_cl_cache_stats *out);

/* Process-wide counters of what the backend asked of OpenCL, so callers can
 * show that a steady state creates no object (plans' statistics). */
typedef struct cg_cl_counters {
    uint64_t buffers_created;       /* clCreateBuffer + clCreateSubBuffer */
    uint64_t launches;              /* clEnqueueNDRangeKernel through cg_cl_launch */
    uint64_t writes, reads, copies; /* transfers enqueued */
    uint64_t bytes_written, bytes_read;
    uint64_t clblast_calls; /* CLBlast SGEMM calls (each creates kernels inside CLBlast) */
} cg_cl_counters;
void cg_cl_counters_get(cg_cl_counters *out);

/* Enqueues a kernel; global sizes are rounded up to multiples of local (when
 * given; the kernel must guard the padding work-items) and the local size is
 * checked against the device's and the kernel's maximum work-group size. A
 * zero global size enqueues nothing. `what` names the kernel in messages
 * (NULL: its function name). */
cg_status cg_cl_launch(cg_cl_device *d, cl_kernel k, int dims, const size_t *global, const size_t *local,
                       const char *what);

/* ---- SGEMM ---- */

/* C [m, n] = A [m, k] B [n, k]^T + bias [n] per row, in one launch, where
 * cg_cl_sgemm would run the CPU devices' cg_gemm_nt_cpu (m, n >= 2, k >= 1,
 * CLGRAPH_GEMM not clblast, int-indexable): *done 1. Elsewhere *done 0 and
 * nothing is enqueued (fill C with the bias and call cg_cl_sgemm with beta
 * = 1: the same sum). */
cg_status cg_cl_sgemm_nt_bias(cg_cl_device *d, int64_t m, int64_t n, int64_t k, cl_mem a, cl_mem b, cl_mem bias,
                              cl_mem c, int *done);

/* Row-major C = alpha op(A) op(B) + beta C on buffers, offsets in floats.
 * Chooses CLBlast or the backend's own kernels (GEMV for m == 1 or n == 1,
 * and on CPU devices for C = A B^T row by row; a tiled GEMM otherwise) by
 * timing both once per device and shape, at the shape's 16th call (before
 * it, and for shapes the GEMV kernels run, the own kernels run: timing
 * compiles CLBlast);
 * the choice is kept in memory and recorded in
 * cg_cache_dir()/gemm-choices.txt, whose lines are obeyed for any shape
 * when they were measured against the same own kernels. */
cg_status cg_cl_sgemm(cg_cl_device *d, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, cl_mem a,
                      size_t a_off, int64_t lda, cl_mem b, size_t b_off, int64_t ldb, float beta, cl_mem c,
                      size_t c_off, int64_t ldc);

/* ---- error names ---- */

/* "CL_OUT_OF_RESOURCES"; "CL_UNKNOWN_ERROR(-9999)" style for unknown codes
 * (in a static per-thread buffer). */
const char *cg_cl_error_name(int code);
/* CLBlast status names (its -1007..-1011 collide with KHR extension codes,
 * hence a separate table); OpenCL codes fall through to cg_cl_error_name. */
const char *cg_clblast_error_name(int code);

#endif
