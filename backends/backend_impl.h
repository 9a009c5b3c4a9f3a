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
    cg_status (*write)(cg_device *d, const cg_buf *dst, size_t off, const void *src, size_t bytes,
                       int async, cg_event *ev);
    cg_status (*read)(cg_device *d, const cg_buf *src, size_t off, void *dst, size_t bytes, int async,
                      cg_event *ev);
    cg_status (*copy)(cg_device *d, const cg_buf *src, size_t src_off, const cg_buf *dst,
                      size_t dst_off, size_t bytes);
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
    int index;           /* in cg_dev_count() order */
    int refs;            /* guarded by the device table's lock (backend.c) */
    void *impl;          /* the backend's own device (cg_cl_device) */
    _Atomic uint64_t bytes_now, bytes_peak, buffers_now;
};

/* Accounting every backend's alloc / free call does (backend.c). */
void cg_dev_account_alloc(cg_device *d, size_t bytes);
void cg_dev_account_free(cg_device *d, size_t bytes);

/* ---- the backends ---- */

/* CPU (backends/cpu/cpu_device.c): its info and its functions. */
const cg_device_info *cg_cpu_device_info(void);
extern const cg_device_iface cg_cpu_device_iface;
void cg_cpu_device_describe(char *buf, size_t size);
void cg_cpu_counters_add(cg_dev_counters *c);

/* OpenCL (backends/opencl/cl_iface.c): device i of the OpenCL backend. */
const cg_device_info *cg_cl_iface_info(int i);
cg_status cg_cl_iface_open(int i, cg_device *d);
extern const cg_device_iface cg_cl_device_iface;
void cg_cl_iface_describe(int i, char *buf, size_t size);
void cg_cl_counters_add(cg_dev_counters *c);

#endif
