/* Buffers, transfers and kernel launches on an opened device's queue. Every
 * error names the device, the OpenCL call and the CL error. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "opencl/cl_gemm_internal.h"
#include "opencl/cl_internal.h"
#include "error.h"

static cg_status mem_status(cl_int err) {
    return err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY || err == CL_OUT_OF_RESOURCES
               ? CG_ERR_NO_MEMORY
               : CG_ERR_KERNEL;
}

static _Atomic uint64_t n_buffers, n_launches, n_writes, n_reads, n_copies, n_bytes_w, n_bytes_r;

void cg_cl_counters_get(cg_cl_counters *out) {
    memset(out, 0, sizeof *out);
    out->buffers_created = n_buffers;
    out->launches = n_launches;
    out->writes = n_writes;
    out->reads = n_reads;
    out->copies = n_copies;
    out->bytes_written = n_bytes_w;
    out->bytes_read = n_bytes_r;
    cg_cl_gemm_stats c;
    cg_cl_gemm_stats_get(&c);
    out->clblast_calls = c.clblast_calls;
}

cg_status cg_cl_alloc(cg_cl_device *d, size_t bytes, cl_mem *out) {
    if (!d || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_cl_alloc: NULL argument");
    *out = NULL;
    /* An empty tensor still gets a valid (minimal) buffer. */
    size_t n = bytes ? bytes : 4;
    if (d->info->max_alloc && n > d->info->max_alloc)
        return cg_error(CG_ERR_NO_MEMORY,
                        "%s: clCreateBuffer(%zu bytes) failed: CL_INVALID_BUFFER_SIZE (more than "
                        "CL_DEVICE_MAX_MEM_ALLOC_SIZE, %llu bytes)",
                        d->label, n, (unsigned long long)d->info->max_alloc);
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(d->context, CL_MEM_READ_WRITE, n, NULL, &err);
    n_buffers++;
    if (!m || err != CL_SUCCESS) {
        char call[64];
        snprintf(call, sizeof call, "clCreateBuffer(%zu bytes)", n);
        return cg_cl_fail(d, mem_status(err), call, err);
    }
    *out = m;
    return CG_OK;
}

cg_status cg_cl_sub_buffer(cg_cl_device *d, cl_mem parent, size_t offset, size_t bytes, cl_mem *out) {
    if (!d || !parent || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_cl_sub_buffer: NULL argument");
    *out = NULL;
    size_t align = d->info->mem_align ? d->info->mem_align : 1;
    if (offset % align)
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "%s: clCreateSubBuffer failed: CL_MISALIGNED_SUB_BUFFER_OFFSET (offset %zu "
                        "is not a multiple of the device's base address alignment, %zu bytes)",
                        d->label, offset, align);
    size_t size = 0;
    cl_int err = clGetMemObjectInfo(parent, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err != CL_SUCCESS) return cg_cl_fail(d, CG_ERR_INVALID_ARGUMENT, "clGetMemObjectInfo", err);
    cl_buffer_region region = {offset, bytes};
    if (bytes == 0) {
        /* A minimal region; at the very end of the parent, take its start
         * (nothing reads an empty view). */
        region.size = size < 4 ? size : 4;
        if (offset + region.size > size) region.origin = 0;
    } else if (offset > size || bytes > size - offset) {
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "%s: clCreateSubBuffer failed: CL_INVALID_VALUE (region [%zu, %zu) is "
                        "outside the %zu-byte buffer)",
                        d->label, offset, offset + bytes, size);
    }
    n_buffers++;
    cl_mem m = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    if (!m || err != CL_SUCCESS) return cg_cl_fail(d, mem_status(err), "clCreateSubBuffer", err);
    *out = m;
    return CG_OK;
}

cg_status cg_cl_write(cg_cl_device *d, cl_mem m, size_t offset, size_t bytes, const void *src, int blocking) {
    return cg_cl_write_ev(d, m, offset, bytes, src, blocking, NULL);
}

cg_status cg_cl_write_ev(cg_cl_device *d, cl_mem m, size_t offset, size_t bytes, const void *src, int blocking,
                         cl_event *ev) {
    if (ev) *ev = NULL;
    if (!d || !m || (bytes && !src)) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_cl_write: NULL argument");
    if (!bytes) return CG_OK;
    n_writes++;
    n_bytes_w += bytes;
    cl_event own = NULL;
    cl_int err = clEnqueueWriteBuffer(d->queue, m, blocking ? CL_TRUE : CL_FALSE, offset, bytes, src, 0, NULL,
                                      ev           ? ev
                                      : d->capture ? &own
                                                   : NULL);
    if (err != CL_SUCCESS) return cg_cl_fail(d, mem_status(err), "clEnqueueWriteBuffer", err);
    cg_cl_capture_keep(d, ev ? *ev : own, ev != NULL);
    return CG_OK;
}

cg_status cg_cl_read(cg_cl_device *d, cl_mem m, size_t offset, size_t bytes, void *dst) {
    return cg_cl_read_ev(d, m, offset, bytes, dst, 1, NULL);
}

cg_status cg_cl_read_ev(cg_cl_device *d, cl_mem m, size_t offset, size_t bytes, void *dst, int blocking, cl_event *ev) {
    if (ev) *ev = NULL;
    if (!d || !m || (bytes && !dst)) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_cl_read: NULL argument");
    if (!bytes) return CG_OK;
    n_reads++;
    n_bytes_r += bytes;
    cl_event own = NULL;
    cl_int err = clEnqueueReadBuffer(d->queue, m, blocking ? CL_TRUE : CL_FALSE, offset, bytes, dst, 0, NULL,
                                     ev           ? ev
                                     : d->capture ? &own
                                                  : NULL);
    if (err != CL_SUCCESS) return cg_cl_fail(d, mem_status(err), "clEnqueueReadBuffer", err);
    cg_cl_capture_keep(d, ev ? *ev : own, ev != NULL);
    return CG_OK;
}

cg_status cg_cl_wait(cg_cl_device *d, cl_event ev) {
    if (!ev) return CG_OK;
    cl_int err = clWaitForEvents(1, &ev);
    /* The command may still run and write host memory the caller frees on
     * the error: wait for the whole queue before giving up on it. */
    if (err != CL_SUCCESS && d) clFinish(d->queue);
    clReleaseEvent(ev);
    if (err != CL_SUCCESS) return cg_cl_fail(d, CG_ERR_KERNEL, "clWaitForEvents", err);
    return CG_OK;
}

cg_status cg_cl_capture_begin(cg_cl_device *d) {
    if (!d->profiling) return cg_error(CG_ERR_UNSUPPORTED, "%s: its queue records no timestamps", d->label);
    d->n_cap = 0;
    d->capture = 1;
    return CG_OK;
}

void cg_cl_capture_keep(cg_cl_device *d, cl_event ev, int retain) {
    if (!d->capture || !ev) return;
    if (d->n_cap == CG_CL_CAPTURE_MAX) { /* the time of the step's last commands is not counted */
        if (!retain) clReleaseEvent(ev);
        return;
    }
    if (retain) clRetainEvent(ev);
    d->cap[d->n_cap++] = ev;
}

cg_status cg_cl_capture_end(cg_cl_device *d, double *busy_us) {
    *busy_us = 0;
    d->capture = 0;
    cl_int err = d->n_cap ? clWaitForEvents((cl_uint)d->n_cap, d->cap) : CL_SUCCESS;
    cl_ulong busy = 0;
    for (int i = 0; i < d->n_cap; i++) {
        cl_ulong t0 = 0, t1 = 0;
        if (err == CL_SUCCESS)
            err = clGetEventProfilingInfo(d->cap[i], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
        if (err == CL_SUCCESS) err = clGetEventProfilingInfo(d->cap[i], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
        if (t1 > t0) busy += t1 - t0;
        clReleaseEvent(d->cap[i]);
    }
    d->n_cap = 0;
    if (err != CL_SUCCESS) return cg_cl_fail(d, CG_ERR_KERNEL, "clGetEventProfilingInfo", err);
    *busy_us = (double)busy * 1e-3;
    return CG_OK;
}

cg_status cg_cl_copy(cg_cl_device *d, cl_mem src, size_t src_off, cl_mem dst, size_t dst_off, size_t bytes) {
    if (!d || !src || !dst) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_cl_copy: NULL argument");
    if (!bytes) return CG_OK;
    n_copies++;
    cl_event own = NULL;
    cl_int err = clEnqueueCopyBuffer(d->queue, src, dst, src_off, dst_off, bytes, 0, NULL, d->capture ? &own : NULL);
    if (err != CL_SUCCESS) return cg_cl_fail(d, mem_status(err), "clEnqueueCopyBuffer", err);
    cg_cl_capture_keep(d, own, 0);
    return CG_OK;
}

cg_status cg_cl_finish(cg_cl_device *d) {
    if (!d) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_cl_finish: NULL device");
    cl_int err = clFinish(d->queue);
    /* A failed clFinish does not say the queue is empty: reads into host
     * memory the caller frees on the error may still be under way. One more
     * try drains it after a transient failure (a device that is gone fails
     * again, and its commands are not run); the error stands either way. */
    if (err != CL_SUCCESS) {
        clFinish(d->queue);
        return cg_cl_fail(d, CG_ERR_KERNEL, "clFinish", err);
    }
    return CG_OK;
}

/* The kernel's function name when the caller gave none. */
static const char *kernel_name(cl_kernel k, const char *what, char *buf, size_t n) {
    if (what && *what) return what;
    buf[0] = '\0';
    if (clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, n, buf, NULL) != CL_SUCCESS || !buf[0]) snprintf(buf, n, "kernel");
    return buf;
}

static cg_status launch_error(cg_cl_device *d, cl_kernel k, const char *what, cl_int err, const char *detail) {
    char nb[128];
    const char *name = kernel_name(k, what, nb, sizeof nb);
    return cg_error(CG_ERR_KERNEL, "%s: clEnqueueNDRangeKernel(%s) failed: %s%s%s%s", d->label, name,
                    cg_cl_error_name(err), detail ? " (" : "", detail ? detail : "", detail ? ")" : "");
}

cg_status cg_cl_launch(cg_cl_device *d, cl_kernel k, int dims, const size_t *global, const size_t *local,
                       const char *what) {
    if (!d || !k || !global)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_cl_launch(%s): NULL argument", what ? what : "kernel");
    char detail[200];
    if (dims < 1 || dims > 3) {
        snprintf(detail, sizeof detail, "%d dimensions; 1 to 3 are allowed", dims);
        return launch_error(d, k, what, CL_INVALID_WORK_DIMENSION, detail);
    }
    size_t g[3] = {1, 1, 1}, l[3] = {1, 1, 1};
    size_t group = 1;
    for (int i = 0; i < dims; i++) {
        /* Nothing to do for an empty range (OpenCL 1.2 rejects a 0 size). */
        if (global[i] == 0) return CG_OK;
        g[i] = global[i];
        if (!local) continue;
        l[i] = local[i];
        if (l[i] == 0) {
            snprintf(detail, sizeof detail, "local size 0 in dimension %d", i);
            return launch_error(d, k, what, CL_INVALID_WORK_GROUP_SIZE, detail);
        }
        group = group > SIZE_MAX / l[i] ? SIZE_MAX : group * l[i];
    }
    if (local) {
        if (group > d->info->max_work_group) {
            snprintf(detail, sizeof detail, "work-group of %zu items exceeds CL_DEVICE_MAX_WORK_GROUP_SIZE %zu", group,
                     d->info->max_work_group);
            return launch_error(d, k, what, CL_INVALID_WORK_GROUP_SIZE, detail);
        }
        for (int i = 0; i < dims; i++) {
            if (l[i] > d->max_item[i]) {
                snprintf(detail, sizeof detail,
                         "local size %zu in dimension %d exceeds CL_DEVICE_MAX_WORK_ITEM_SIZES %zu", l[i], i,
                         d->max_item[i]);
                return launch_error(d, k, what, CL_INVALID_WORK_ITEM_SIZE, detail);
            }
            /* Round up to a multiple of local (PoCL 3.1 and OpenCL 1.2 need it). */
            if (g[i] > SIZE_MAX - l[i]) {
                snprintf(detail, sizeof detail, "global size %zu in dimension %d is too large", g[i], i);
                return launch_error(d, k, what, CL_INVALID_GLOBAL_WORK_SIZE, detail);
            }
            g[i] = (g[i] + l[i] - 1) / l[i] * l[i];
        }
        const size_t kmax = cg_cl_kernel_limits_of(d, k).group;
        if (kmax && group > kmax) {
            snprintf(detail, sizeof detail,
                     "work-group of %zu items exceeds the kernel's CL_KERNEL_WORK_GROUP_SIZE %zu", group, kmax);
            return launch_error(d, k, what, CL_INVALID_WORK_GROUP_SIZE, detail);
        }
    }
    n_launches++;
    cl_event own = NULL;
    cl_int err = clEnqueueNDRangeKernel(d->queue, k, (cl_uint)dims, NULL, g, local ? l : NULL, 0, NULL,
                                        d->capture ? &own : NULL);
    if (err != CL_SUCCESS) return launch_error(d, k, what, err, NULL);
    cg_cl_capture_keep(d, own, 0);
    return CG_OK;
}
