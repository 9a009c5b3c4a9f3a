/* Each OpenCL device as a device of the backend interface: buffers are
 * cl_mem objects (views are sub-buffers), transfers and kernels go on the
 * device's one in-order queue, events are cl_events. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"
#include "error.h"
#include "opencl/cl_backend.h"

static cg_device_info *g_infos;
static int g_n;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void fill_info(int i, cg_device_info *out) {
    const cg_cl_info *in = cg_cl_device_info(i);
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "opencl:%d", i);
    snprintf(out->label, sizeof out->label, "opencl:%d (%.250s)", i, in->name);
    /* Measurements on disk stay valid while the device, its driver and
     * its platform do. */
    snprintf(out->identity, sizeof out->identity, "%.250s|%.250s|%.250s", in->name, in->driver, in->platform_version);
    out->kind = CG_BACKEND_OPENCL;
    out->host_memory = 0;
    out->align = in->mem_align < 64 ? 64 : in->mem_align;
    out->global_mem = in->global_mem;
    out->max_alloc = in->max_alloc;
    out->local_mem = in->local_mem;
    out->max_work_group = in->max_work_group;
    out->compute_units = in->compute_units;
    out->fp16 = in->fp16;
    out->fp64 = in->fp64;
}

static void infos_init(void) {
    int n = cg_cl_device_count();
    g_infos = calloc((size_t)n + 1, sizeof *g_infos);
    if (!g_infos) return; /* cl_info then reports none */
    for (int i = 0; i < n; i++) fill_info(i, &g_infos[i]);
    g_n = n;
}

static const cg_device_info *cl_info(int i) {
    pthread_once(&g_once, infos_init);
    return i >= 0 && i < g_n ? &g_infos[i] : NULL;
}

static const char *type_name(cl_device_type t) {
    if (t & CL_DEVICE_TYPE_GPU) return (t & CL_DEVICE_TYPE_CPU) ? "CPU+GPU" : "GPU";
    if (t & CL_DEVICE_TYPE_CPU) return "CPU";
    if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
    return "other";
}

/* Which kernel path set the device takes and why. */
static void paths_text(const cg_cl_info *in, char *buf, size_t size) {
    const char *bad = NULL;
    const char *forced = cg_cl_paths_forced(&bad);
    const char *set = cg_cl_info_cpu_paths(in) ? "cpu" : "gpu";
    if (*forced) snprintf(buf, size, "%s (CLGRAPH_CL_PATHS)", set);
    else if (bad)
        snprintf(buf, size, "%s (by device type; CLGRAPH_CL_PATHS=%s ignored: not cpu, gpu or auto)", set, bad);
    else snprintf(buf, size, "%s (by device type)", set);
}

static void cl_describe(int i, char *buf, size_t size) {
    const cg_cl_info *in = cg_cl_device_info(i);
    const cg_device_info *di = cl_info(i);
    if (!in || !di) return;
    char paths[160];
    paths_text(in, paths, sizeof paths);
    snprintf(buf, size,
             "%-10s %s\n           platform: %s (%s)\n           vendor: %s; %s; %s; driver %s\n"
             "           type: %s; compute units: %u; global memory: %.1f GiB; local memory: %llu KiB; "
             "fp16: %s; fp64: %s\n"
             "           max work-group: %zu; max work-items: %zu x %zu x %zu; kernel paths: %s",
             di->name, in->name, in->platform, in->platform_version, in->vendor, in->version, in->c_version, in->driver,
             type_name(in->type), in->compute_units, (double)in->global_mem / (1024.0 * 1024 * 1024),
             (unsigned long long)(in->local_mem / 1024), in->fp16 ? "yes" : "no", in->fp64 ? "yes" : "no",
             in->max_work_group, in->max_item[0], in->max_item[1], in->max_item[2], paths);
}

static void cl_counters_add(cg_dev_counters *c) {
    cg_cl_counters k;
    cg_cl_cache_stats p;
    cg_cl_counters_get(&k);
    cg_cl_cache_stats_get(&p);
    c->objects_created += k.buffers_created + p.kernels_created + p.builds_from_source + p.loads_from_disk;
    c->launches += k.launches;
    c->transfers += k.writes + k.reads + k.copies;
    c->bytes_transferred += k.bytes_written + k.bytes_read;
    c->library_calls += k.clblast_calls;
}

static cg_status cl_open(int i, cg_device *d) {
    cg_cl_device *cl;
    cg_status st = cg_cl_device_open(i, &cl);
    if (!st) {
        d->impl = cl;
        d->iface = &cg_cl_device_iface;
    }
    return st;
}

static cg_cl_device *cl_of(const cg_device *d) { return (cg_cl_device *)d->impl; }

static cg_status cl_alloc(cg_device *d, size_t bytes, cg_buf *out) {
    cl_mem m;
    cg_status st = cg_cl_alloc(cl_of(d), bytes, &m);
    if (!st) out->handle = m;
    return st;
}

static cg_status cl_view(cg_device *d, const cg_buf *parent, size_t offset, size_t bytes, cg_buf *out) {
    cl_mem m;
    cg_status st = cg_cl_sub_buffer(cl_of(d), (cl_mem)parent->handle, offset, bytes, &m);
    if (!st) out->handle = m;
    return st;
}

static void cl_free(cg_device *d, cg_buf *b) {
    (void)d;
    if (b->handle) clReleaseMemObject((cl_mem)b->handle);
}

static cg_status cl_write(cg_device *d, const cg_buf *dst, size_t off, const void *src, size_t bytes, int async,
                          cg_event *ev) {
    cl_event e = NULL;
    cg_status st = cg_cl_write_ev(cl_of(d), (cl_mem)dst->handle, off, bytes, src, !async, ev ? &e : NULL);
    if (!st && ev && e) {
        ev->dev = d;
        ev->handle = e;
    }
    return st;
}

static cg_status cl_read(cg_device *d, const cg_buf *src, size_t off, void *dst, size_t bytes, int async,
                         cg_event *ev) {
    cl_event e = NULL;
    cg_status st = cg_cl_read_ev(cl_of(d), (cl_mem)src->handle, off, bytes, dst, !async, ev ? &e : NULL);
    if (!st && ev && e) {
        ev->dev = d;
        ev->handle = e;
    }
    return st;
}

static cg_status cl_copy(cg_device *d, const cg_buf *src, size_t src_off, const cg_buf *dst, size_t dst_off,
                         size_t bytes) {
    return cg_cl_copy(cl_of(d), (cl_mem)src->handle, src_off, (cl_mem)dst->handle, dst_off, bytes);
}

static cg_status cl_wait(cg_device *d, cg_event *ev) { return cg_cl_wait(cl_of(d), (cl_event)ev->handle); }

static cg_status cl_finish(cg_device *d) { return cg_cl_finish(cl_of(d)); }

static cg_status cl_capture_begin(cg_device *d) { return cg_cl_capture_begin(cl_of(d)); }

static cg_status cl_capture_end(cg_device *d, double *busy_us) { return cg_cl_capture_end(cl_of(d), busy_us); }

static void cl_bind(cg_device *d, cg_kernel_args *a) {
    a->stream = cg_cl_queue(cl_of(d));
    a->device = cl_of(d);
}

static cg_op_status cl_run(cg_device *d, const cg_kernel_def *k, const cg_kernel_args *a) {
    cg_cl_run_lock(cl_of(d));
    cg_op_status rc = k->run(a);
    cg_cl_run_unlock(cl_of(d));
    return rc;
}

static void cl_close(cg_device *d) { cg_cl_device_release(cl_of(d)); }

const cg_device_iface cg_cl_device_iface = {
    .alloc = cl_alloc,
    .view = cl_view,
    .free = cl_free,
    .write = cl_write,
    .read = cl_read,
    .copy = cl_copy,
    .wait = cl_wait,
    .finish = cl_finish,
    .capture_begin = cl_capture_begin,
    .capture_end = cl_capture_end,
    .bind = cl_bind,
    .run = cl_run,
    .close = cl_close,
};

/* Every OpenCL device of every platform the ICD loader finds, enumerated
 * once per process; "opencl:N", or a substring of a device, vendor or
 * platform name (cg_cl_device_find). */
const cg_backend cg_cl_backend = {
    .name = "opencl",
    .count = cg_cl_device_count,
    .info = cl_info,
    .open = cl_open,
    .describe = cl_describe,
    .counters_add = cl_counters_add,
    .find = cg_cl_device_find,
    .unavailable_reason = cg_cl_unavailable_reason,
};
