/* Buffers and transfers of backend.h: argument checks and accounting here,
 * the work in each backend's table. */
#include <string.h>

#include "backend_impl.h"
#include "error.h"

cg_status cg_dev_alloc(cg_device *d, size_t bytes, cg_buf *out) {
    if (!d || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_dev_alloc: NULL argument");
    memset(out, 0, sizeof *out);
    /* Refused before asking: an allocator may abort (or the OS kill the
     * process) on a request this size rather than fail. */
    if ((d->info->max_alloc && bytes > d->info->max_alloc) || (d->info->global_mem && bytes > d->info->global_mem))
        return cg_error(CG_ERR_NO_MEMORY, "%s: %zu bytes asked for, more than the device's %s (%llu bytes)",
                        d->info->label, bytes,
                        d->info->max_alloc && bytes > d->info->max_alloc ? "largest allocation" : "memory",
                        (unsigned long long)(d->info->max_alloc && bytes > d->info->max_alloc ? d->info->max_alloc
                                                                                              : d->info->global_mem));
    cg_status st = d->iface->alloc(d, bytes, out);
    if (st) return st;
    out->kind = CG_BUF_ALLOC;
    out->bytes = bytes;
    cg_dev_account_alloc(d, bytes);
    return CG_OK;
}

cg_status cg_dev_view(cg_device *d, const cg_buf *parent, size_t offset, size_t bytes, cg_buf *out) {
    if (!d || !parent || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_dev_view: NULL argument");
    memset(out, 0, sizeof *out);
    if (parent->kind != CG_BUF_ALLOC)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: a view needs an allocation as its parent", d->info->label);
    if (offset > parent->bytes || bytes > parent->bytes - offset)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: view [%zu, %zu) is outside the %zu-byte buffer", d->info->label,
                        offset, offset + bytes, parent->bytes);
    if (offset % d->info->align)
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "%s: view offset %zu is not a multiple of the device's alignment (%zu bytes)", d->info->label,
                        offset, d->info->align);
    cg_status st = d->iface->view(d, parent, offset, bytes, out);
    if (st) return st;
    out->kind = CG_BUF_VIEW;
    out->bytes = bytes;
    return CG_OK;
}

cg_status cg_dev_wrap(cg_device *d, void *host, size_t bytes, cg_buf *out) {
    if (!d || !out || (bytes && !host)) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_dev_wrap: NULL argument");
    memset(out, 0, sizeof *out);
    if (!d->info->host_memory)
        return cg_error(CG_ERR_UNSUPPORTED, "%s: its buffers are not host memory", d->info->label);
    out->handle = host;
    out->bytes = bytes;
    out->kind = CG_BUF_WRAP;
    return CG_OK;
}

cg_status cg_dev_upload_const(cg_device *d, const void *host, size_t bytes, cg_buf *out) {
    if (!d || !out || (bytes && !host)) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_dev_upload_const: NULL argument");
    /* Kernels never write a parameter, so host bytes serve as they are. */
    if (d->info->host_memory) return cg_dev_wrap(d, (void *)host, bytes, out);
    cg_status st = cg_dev_alloc(d, bytes, out);
    if (!st && bytes) st = cg_dev_write(d, out, 0, host, bytes);
    if (st) cg_dev_free(d, out);
    return st;
}

void cg_dev_free(cg_device *d, cg_buf *b) {
    if (!b) return;
    if (d && (b->kind == CG_BUF_ALLOC || b->kind == CG_BUF_VIEW)) {
        d->iface->free(d, b);
        if (b->kind == CG_BUF_ALLOC) cg_dev_account_free(d, b->bytes);
    }
    memset(b, 0, sizeof *b);
}

void *cg_dev_host_ptr(const cg_device *d, const cg_buf *b) { return d && b && d->info->host_memory ? b->handle : NULL; }

/* Checks a transfer's range against the buffer. */
static cg_status check_range(cg_device *d, const char *what, const cg_buf *b, size_t off, size_t bytes,
                             const void *host) {
    if (!d || !b || (bytes && !host)) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: NULL argument", what);
    if (off > b->bytes || bytes > b->bytes - off)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: %s: [%zu, %zu) is outside the %zu-byte buffer", d->info->label,
                        what, off, off + bytes, b->bytes);
    return CG_OK;
}

static void event_clear(cg_event *ev) {
    if (ev) memset(ev, 0, sizeof *ev);
}

cg_status cg_dev_write(cg_device *d, const cg_buf *dst, size_t off, const void *src, size_t bytes) {
    cg_status st = check_range(d, "write", dst, off, bytes, src);
    if (st || !bytes) return st;
    return d->iface->write(d, dst, off, src, bytes, 0, NULL);
}

cg_status cg_dev_write_async(cg_device *d, const cg_buf *dst, size_t off, const void *src, size_t bytes, cg_event *ev) {
    event_clear(ev);
    cg_status st = check_range(d, "write", dst, off, bytes, src);
    if (st || !bytes) return st;
    return d->iface->write(d, dst, off, src, bytes, 1, ev);
}

cg_status cg_dev_read(cg_device *d, const cg_buf *src, size_t off, void *dst, size_t bytes) {
    cg_status st = check_range(d, "read", src, off, bytes, dst);
    if (st || !bytes) return st;
    return d->iface->read(d, src, off, dst, bytes, 0, NULL);
}

cg_status cg_dev_read_async(cg_device *d, const cg_buf *src, size_t off, void *dst, size_t bytes, cg_event *ev) {
    event_clear(ev);
    cg_status st = check_range(d, "read", src, off, bytes, dst);
    if (st || !bytes) return st;
    return d->iface->read(d, src, off, dst, bytes, 1, ev);
}

cg_status cg_dev_copy(cg_device *d, const cg_buf *src, size_t src_off, const cg_buf *dst, size_t dst_off,
                      size_t bytes) {
    cg_status st = check_range(d, "copy", src, src_off, bytes, src);
    if (!st) st = check_range(d, "copy", dst, dst_off, bytes, dst);
    if (st || !bytes) return st;
    return d->iface->copy(d, src, src_off, dst, dst_off, bytes);
}

cg_status cg_dev_transfer(cg_device *from, const cg_buf *src, cg_device *to, const cg_buf *dst, size_t bytes,
                          void *staging, cg_event *ev) {
    event_clear(ev);
    if (!from || !to) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_dev_transfer: NULL device");
    if (from == to) return cg_dev_copy(to, src, 0, dst, 0, bytes);
    void *src_host = cg_dev_host_ptr(from, src), *dst_host = cg_dev_host_ptr(to, dst);
    if (src_host && dst_host) {
        memcpy(dst_host, src_host, bytes);
        return CG_OK;
    }
    if (src_host) return cg_dev_write_async(to, dst, 0, src_host, bytes, ev);
    if (dst_host) return cg_dev_read_async(from, src, 0, dst_host, bytes, ev);
    /* Two devices that share no memory: through the host. */
    if (!staging && bytes) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_dev_transfer: no staging memory");
    cg_status st = cg_dev_read(from, src, 0, staging, bytes);
    return st ? st : cg_dev_write_async(to, dst, 0, staging, bytes, ev);
}

cg_status cg_dev_wait(cg_event *ev) {
    if (!ev || !ev->handle || !ev->dev) {
        event_clear(ev);
        return CG_OK;
    }
    cg_status st = ev->dev->iface->wait(ev->dev, ev);
    event_clear(ev);
    return st;
}

cg_status cg_dev_capture_begin(cg_device *d) {
    if (!d) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_dev_capture_begin: NULL device");
    if (!d->iface->capture_begin) return cg_error(CG_ERR_UNSUPPORTED, "%s: no device timestamps", d->info->label);
    return d->iface->capture_begin(d);
}

cg_status cg_dev_capture_end(cg_device *d, double *busy_us) {
    if (!d || !busy_us) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_dev_capture_end: NULL argument");
    *busy_us = 0;
    if (!d->iface->capture_end) return cg_error(CG_ERR_UNSUPPORTED, "%s: no device timestamps", d->info->label);
    return d->iface->capture_end(d, busy_us);
}

cg_status cg_dev_finish(cg_device *d) {
    if (!d) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_dev_finish: NULL device");
    return d->iface->finish(d);
}
