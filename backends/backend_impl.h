/* What a backend implements behind backend.h: one table of functions per
 * kind of device, and the device record the generic code in backend.c
 * keeps. Included by the backends only. */
#ifndef CG_BACKEND_IMPL_H
#define CG_BACKEND_IMPL_H

#include <stdatomic.h>

#include "backend.h"

typedef struct cg_device_iface {
    cg_status (*alloc)(cg_device *d, size_t bytes, cg_buf *out);
    cg_status (*view)(cg_device *d, const cg_buf *parent, size_t offset, size_t bytes, cg_buf *out);
    /* Releases an allocation or a view (never called for NONE or WRAP). */
    void (*free)(cg_device *d, cg_buf *b);
    /* Transfers; `async` 0: return when done (ev is NULL then). */
    cg_status (*write)(cg_device *d, const cg_buf *dst, size_t off, const void *src, size_t bytes, int async,
                       cg_event *ev);
    cg_status (*read)(cg_device *d, const cg_buf *src, size_t off, void *dst, size_t bytes, int async, cg_event *ev);
    cg_status (*copy)(cg_device *d, const cg_buf *src, size_t src_off, const cg_buf *dst, size_t dst_off, size_t bytes);
    cg_status (*wait)(cg_device *d, cg_event *ev);
    cg_status (*finish)(cg_device *d);
    /* Device times for profiles (NULL: none): see cg_dev_capture_begin. */
    cg_status (*capture_begin)(cg_device *d);
    cg_status (*capture_end)(cg_device *d, double *busy_us);
    /* Fills what a kernel's args need from the device (stream, device). */
    void (*bind)(cg_device *d, cg_kernel_args *a);
    /* Runs k->run(a) with whatever the device needs around it (a lock:
     * kernel objects are shared state). */
    cg_op_status (*run)(cg_device *d, const cg_kernel_def *k, const cg_kernel_args *a);
    /* Closes what open made (the last release). */
    void (*close)(cg_device *d);
} cg_device_iface;

struct cg_device {
    const cg_device_iface *iface;
    const cg_device_info *info;
    int index;  /* in cg_dev_count() order */
    int refs;   /* guarded by the device table's lock (backend.c) */
    void *impl; /* the backend's own device (cg_cl_device) */
    _Atomic uint64_t bytes_now, bytes_peak, buffers_now;
};

/* Accounting every backend's alloc / free call does (backend.c). */
void cg_dev_account_alloc(cg_device *d, size_t bytes);
void cg_dev_account_free(cg_device *d, size_t bytes);

/* ---- the backends ----
 *
 * A backend is one entry of the registry in backend.c: its devices are
 * numbered after those of the backends before it (the CPU is device 0).
 * Adding one (Vulkan, CUDA) is a cg_backend, a cg_device_iface, a
 * CG_BACKEND_* kind for its kernels, and a line in backend.c's table
 * (docs/architecture.md); nothing above this layer changes. */
typedef struct cg_backend {
    const char *name;                     /* "cpu", "opencl": device names are NAME or NAME:I */
    int (*count)(void);                   /* its devices (may start the implementation) */
    const cg_device_info *(*info)(int i); /* device i's info, NULL if out of range */
    /* Opens device i into d: sets d->iface (and d->impl); d->info, index and
     * refs are set by the registry. */
    cg_status (*open)(int i, cg_device *d);
    void (*describe)(int i, char *buf, size_t size); /* lines for `clgraph devices` */
    void (*counters_add)(cg_dev_counters *c);        /* adds its process-wide counters */
    /* Device i of this backend named by spec ("NAME:I", or the backend's own
     * names); CG_ERR_NOT_FOUND with a message listing its devices otherwise.
     * NULL: only "NAME" and "NAME:I". */
    cg_status (*find)(const char *spec, int *i);
    /* Why it has no device (NULL when it has some, or cannot say). */
    const char *(*unavailable_reason)(void);
} cg_backend;

/* The built-in backends (cpu_device.c, opencl/cl_iface.c). */
extern const cg_backend cg_cpu_backend;
extern const cg_backend cg_cl_backend;

/* Appends a backend after the built-in ones, for tests and embedders that
 * bring their own devices; before the first device call of the process
 * (CG_ERR_INVALID_ARGUMENT after it, or when the table is full). */
cg_status cg_dev_register_backend(const cg_backend *b);

/* Device-interface tables of the built-in backends. */
extern const cg_device_iface cg_cpu_device_iface;
extern const cg_device_iface cg_cl_device_iface;

#endif
