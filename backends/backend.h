/* The backend interface: everything the layers above (graph/, seq2seq/,
 * tools/) know of devices. The CPU backend and each OpenCL device implement
 * it (backends/cpu/cpu_device.c, backends/opencl/cl_iface.c); the scheduler
 * allocates, transfers, runs kernels and waits only through these calls,
 * so a new backend is one more implementation of cg_device_iface
 * (backend_impl.h), not a change above this layer.
 *
 * Devices are numbered 0 ("cpu", always present, its buffers are host
 * memory) then 1.. for every OpenCL device ("opencl:0" is device 1). An
 * opened device is shared by every opener and reference counted; every call
 * here is thread-safe unless it says otherwise. Errors set the per-thread
 * message (cg_last_error) naming the device and the failing call. */
#ifndef CG_BACKEND_H
#define CG_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h"

typedef struct cg_device cg_device;

/* A buffer, a view into one, or host memory wrapped for a host-memory
 * device: a small value its owner keeps and passes back to cg_dev_free.
 * `handle` is what a kernel receives for it (cg_kernel_args in/out): a host
 * address on a device with host memory, the backend's object otherwise
 * (a cl_mem). A zeroed cg_buf is "no buffer". */
typedef struct cg_buf {
    void *handle;
    size_t bytes;
    int kind; /* CG_BUF_*: what cg_dev_free releases */
} cg_buf;

enum {
    CG_BUF_NONE = 0,  /* nothing */
    CG_BUF_ALLOC = 1, /* an allocation of the device (counted in its memory) */
    CG_BUF_VIEW = 2,  /* a view into an allocation */
    CG_BUF_WRAP = 3   /* host memory the caller owns */
};

/* The completion of an asynchronous transfer; cg_dev_wait waits for it and
 * releases it. A zeroed event is complete. */
typedef struct cg_event {
    cg_device *dev; /* whose queue it is on */
    void *handle;
} cg_event;

/* What a device is; read once when it is enumerated. */
typedef struct cg_device_info {
    char name[32];         /* stable name: "cpu", "opencl:0" (placement rules, files) */
    char label[320];       /* for messages: "cpu", "opencl:0 (NAME)" */
    char identity[1024];   /* keys measurements kept on disk: device, driver, platform */
    cg_backend_kind kind;  /* which kernels of an op it runs */
    int host_memory;       /* its buffers are host memory (cg_dev_wrap, cg_dev_host_ptr) */
    size_t align;          /* offset alignment of views, bytes (>= 64) */
    uint64_t global_mem;   /* bytes; 0 if unknown */
    uint64_t max_alloc;    /* largest single allocation, bytes; 0 if unknown */
    uint64_t local_mem;    /* bytes of work-group local memory; 0 if none */
    size_t max_work_group; /* most work-items in a group; 0 if not applicable */
    uint32_t compute_units;
    int fp16, fp64; /* half / double arithmetic in kernels */
} cg_device_info;

/* Memory a device holds for its openers right now, and at most so far. */
typedef struct cg_dev_memory {
    uint64_t bytes_now, bytes_peak;
    uint64_t buffers_now; /* allocations (views not counted) */
} cg_dev_memory;

/* Process-wide work counters of all backends, so a caller can show that a
 * steady state creates nothing (differences across a run). */
typedef struct cg_dev_counters {
    uint64_t objects_created; /* buffers, views, programs and kernels the backends created */
    uint64_t launches;        /* device kernels enqueued (CPU kernels are counted by callers) */
    uint64_t transfers;       /* reads, writes and on-device copies */
    uint64_t bytes_transferred;
    uint64_t library_calls; /* calls into libraries that create objects inside (CLBlast) */
} cg_dev_counters;

/* ---- devices ---- */

/* Number of devices: 1 (the CPU) plus every OpenCL device (enumerated once
 * per process). */
int cg_dev_count(void);

/* Why there are no devices but the CPU ("no OpenCL platform found
 * (clGetPlatformIDs: ...)"), or NULL when there are some. */
const char *cg_dev_unavailable_reason(void);

/* The index of a device spec: "cpu", "opencl:N", or a case-insensitive
 * substring of an OpenCL device, vendor or platform name; an error listing
 * the devices otherwise. */
cg_status cg_dev_find(const char *spec, int *index);

/* Info of device `index`, NULL if out of range (no need to open it). */
const cg_device_info *cg_dev_info_at(int index);

/* Several lines describing device `index` for `clgraph devices` (name,
 * platform, version, driver, limits). "" if out of range. */
void cg_dev_describe(int index, char *buf, size_t size);

/* Opens device `index` (shared, reference counted) / releases it. */
cg_status cg_dev_open(int index, cg_device **out);
void cg_dev_release(cg_device *d);

const cg_device_info *cg_dev_info(const cg_device *d);

/* Memory the device holds now (every opener's allocations). */
void cg_dev_memory_get(const cg_device *d, cg_dev_memory *out);

/* Sums of every backend's counters since the process started. */
void cg_dev_counters_get(cg_dev_counters *out);

/* ---- buffers ---- */

/* A buffer of `bytes` (0 gives a minimal valid one). More than the
 * device's max_alloc fails with CG_ERR_NO_MEMORY. */
cg_status cg_dev_alloc(cg_device *d, size_t bytes, cg_buf *out);

/* A view [offset, offset + bytes) of `parent` (an allocation of d); offset
 * a multiple of info.align. bytes 0 is allowed. Free it before the parent. */
cg_status cg_dev_view(cg_device *d, const cg_buf *parent, size_t offset, size_t bytes, cg_buf *out);

/* On a device with host memory: a buffer over `bytes` the caller owns at
 * `host` (kernels read and write them in place; nothing is copied or
 * allocated). CG_ERR_UNSUPPORTED elsewhere. */
cg_status cg_dev_wrap(cg_device *d, void *host, size_t bytes, cg_buf *out);

/* A buffer holding a copy of `bytes` constant bytes for its life (weights):
 * the bytes themselves on a device with host memory (they must outlive the
 * buffer), an allocation written once elsewhere. */
cg_status cg_dev_upload_const(cg_device *d, const void *host, size_t bytes, cg_buf *out);

/* Releases what b holds (nothing for CG_BUF_NONE and CG_BUF_WRAP) and
 * zeroes it. Pending work on the device that uses b must be finished or
 * ordered before any reuse of its memory (in-order queues guarantee it). */
void cg_dev_free(cg_device *d, cg_buf *b);

/* The host address of b's bytes on a device with host memory; NULL on
 * others (their bytes are reached only by transfers). */
void *cg_dev_host_ptr(const cg_device *d, const cg_buf *b);

/* ---- transfers (ordered on the device's queue) ---- */

/* Host -> device. Returns when the bytes are copied: `src` may be reused. */
cg_status cg_dev_write(cg_device *d, const cg_buf *dst, size_t off, const void *src, size_t bytes);

/* Host -> device, enqueued: `src` must stay unchanged until `ev` completes
 * (cg_dev_wait) or, with ev NULL, until cg_dev_finish returns. */
cg_status cg_dev_write_async(cg_device *d, const cg_buf *dst, size_t off, const void *src, size_t bytes, cg_event *ev);

/* Device -> host. Returns when `dst` holds the bytes. */
cg_status cg_dev_read(cg_device *d, const cg_buf *src, size_t off, void *dst, size_t bytes);

/* Device -> host, enqueued: `dst` holds the bytes once `ev` completes (or,
 * with ev NULL, once cg_dev_finish returns). */
cg_status cg_dev_read_async(cg_device *d, const cg_buf *src, size_t off, void *dst, size_t bytes, cg_event *ev);

/* Device -> the same device. */
cg_status cg_dev_copy(cg_device *d, const cg_buf *src, size_t src_off, const cg_buf *dst, size_t dst_off, size_t bytes);

/* `bytes` from buffer `src` on device `from` to buffer `dst` on device
 * `to`: one on-device copy when from == to, a direct write or read when one
 * side has host memory, else through `staging` (host memory of at least
 * `bytes` the caller owns; read, then an enqueued write). The destination
 * device's queue orders it: with an event, it completes when `ev` does; the
 * host bytes it reads (a host-memory source, `staging`) must stay unchanged
 * until then, or until cg_dev_finish(to). */
cg_status cg_dev_transfer(cg_device *from, const cg_buf *src, cg_device *to, const cg_buf *dst, size_t bytes,
                          void *staging, cg_event *ev);

/* Waits for an event and releases it, leaving it zeroed (a zeroed event
 * returns at once). */
cg_status cg_dev_wait(cg_event *ev);

/* Waits until everything enqueued on the device is done. */
cg_status cg_dev_finish(cg_device *d);

/* Device times for profiles: between begin and end the device keeps the
 * events of what is enqueued on it (kernels, transfers, library calls),
 * and end waits for them and gives the time they took on the device by
 * its own timestamps, summed (CG_ERR_UNSUPPORTED on the CPU and on OpenCL
 * queues without profiling). One capture per device at a time. */
cg_status cg_dev_capture_begin(cg_device *d);
cg_status cg_dev_capture_end(cg_device *d, double *busy_us);

/* ---- kernels ---- */

/* Whether kernel k (an op's kernel for this device's kind) runs the node
 * described by `call` on d: the kernel is for d's kind and, when it has a
 * supports callback, the callback accepts the inputs and attributes. */
int cg_dev_supports(cg_device *d, const cg_kernel_def *k, const cg_op_call *call);

/* Bytes of workspace k asks for this call (0 without a workspace callback). */
size_t cg_dev_workspace(const cg_kernel_def *k, const cg_op_call *call);

/* Creates k's per-node state (ABI 1.1 create callback) for a node on d:
 * `params[i]` is the buffer of input i when it is a parameter (constant for
 * the state's life), else NULL. *state stays NULL and *bytes 0 when k has
 * no create callback. On failure the message names the op and device. */
cg_status cg_dev_state_create(cg_device *d, const cg_kernel_def *k, const cg_op_call *call, const cg_buf *const *params,
                              void **state, size_t *bytes);

/* Destroys a state made by cg_dev_state_create (NULL is ignored). */
void cg_dev_state_destroy(const cg_kernel_def *k, void *state);

/* Whether k, run on d, takes check words (an OpenCL kernel flagged
 * CG_KERNEL_FLAG_CHECKS): the caller then gives it CG_CHECK_WORDS zeroed
 * int32 words of a buffer of d, and reads them once the run has finished. */
int cg_dev_checks(const cg_device *d, const cg_kernel_def *k);

/* Runs kernel k for one node: in[i] / out[i] are the buffers of its inputs
 * and outputs, `ws` its workspace (or NULL), `state` its per-node state,
 * `check` (or NULL) the buffer holding its check words from int32 word
 * `check_word` (see cg_dev_checks).
 * Device kernels are enqueued (the host does not wait). On failure returns
 * CG_ERR_KERNEL with the kernel's own message in call->err (the caller
 * adds the node). */
cg_status cg_dev_run(cg_device *d, const cg_kernel_def *k, const cg_op_call *call, const cg_buf *const *in,
                     const cg_buf *const *out, const cg_buf *ws, void *state, const cg_buf *check, int32_t check_word);

/* The one "allocate, fill, run, read back" of the layers above: runs
 * kernel k once (or, with `reps` > 0, once to warm up and then until about
 * 2 ms or `reps` runs have passed) on d over host data: `host_in[i]` (NULL:
 * zeros) are copied into buffers of d, the outputs start as `out_fill`
 * bytes, and when `host_out` is given each output is read back into
 * host_out[i] after the last run. A per-node state is created around the
 * runs with every input given as a parameter (each stays constant for the
 * whole trial), and destroyed after. A kernel's check words (cg_dev_checks)
 * are read after the first run: a record fails it like a CPU kernel. *us (may be NULL) receives the mean time of a timed run.
 * On a kernel failure the message is in call->err and the status is
 * CG_ERR_KERNEL; other failures set cg_last_error. */
cg_status cg_dev_run_host(cg_device *d, const cg_kernel_def *k, const cg_op_call *call, const void *const *host_in,
                          void *const *host_out, int out_fill, int reps, double *us);

/* The byte guard regions after outputs hold (conformance's out-of-bounds
 * write check), and the byte around inputs: all bits set, NaN for f32, so
 * a read past an input shows as a NaN in the result. */
#define CG_GUARD_BYTE 0xCB
#define CG_GUARD_IN_BYTE 0xFF

/* Guard bytes around each output of a trial. */
typedef struct cg_trial_guard {
    size_t bytes;   /* in: guard bytes before and after each output */
    int bad_output; /* out: the first output whose guard bytes changed, or -1 */
    int bad_side;   /* out: -1 before it, 1 after it */
} cg_trial_guard;

/* cg_dev_run_host with guard bytes around every output, checked after the
 * runs (also after a kernel failure): on a device without host memory each
 * output is a view into an allocation g->bytes (rounded up to the
 * device's alignment) larger on each side, and each input too, its sides
 * CG_GUARD_IN_BYTE; on a host-memory device the inputs and outputs are the
 * caller's host_in and host_out, which must have g->bytes of its own
 * memory before and after each (the caller fills the inputs' sides).
 * g->bad_output tells what changed. */
cg_status cg_dev_run_host_guarded(cg_device *d, const cg_kernel_def *k, const cg_op_call *call,
                                  const void *const *host_in, void *const *host_out, int out_fill, int reps, double *us,
                                  cg_trial_guard *g);

/* ---- services for operator plugins ---- */

/* Fills the backends' services in the plugin host API: SGEMM and
 * parallel_for on the CPU, and the OpenCL services of kernels written for
 * OpenCL devices. */
void cg_backend_host_services(cg_host_api *api);

#endif
