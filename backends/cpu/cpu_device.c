/* The CPU as a device of the backend interface: buffers are 64-byte aligned
 * host memory, transfers are memcpy and complete at once, kernels run on the
 * calling thread (and the pool they split work over). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend_impl.h"
#include "cpu/cpu_gemm.h"
#include "cpu/cpu_pool.h"
#include "error.h"
#include "mem.h"

static _Atomic uint64_t n_launches, n_allocs, n_copies, n_bytes;

static cg_device_info g_info;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void info_init(void) {
    snprintf(g_info.name, sizeof g_info.name, "cpu");
    snprintf(g_info.label, sizeof g_info.label, "cpu");
    snprintf(g_info.identity, sizeof g_info.identity, "cpu");
    g_info.kind = CG_BACKEND_CPU;
    g_info.host_memory = 1;
    g_info.align = 64;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) g_info.global_mem = (uint64_t)pages * (uint64_t)page;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    g_info.compute_units = cpus > 0 ? (uint32_t)cpus : 1;
    g_info.fp64 = 1;
}

static int cpu_count(void) { return 1; }

static const cg_device_info *cpu_info(int i) {
    if (i != 0) return NULL;
    pthread_once(&g_once, info_init);
    return &g_info;
}

static void cpu_describe(int i, char *buf, size_t size) {
    (void)i;
    snprintf(buf, size, "%-10s host CPU (CBLAS: OpenBLAS; own SGEMM: %s; %d threads)", "cpu", cg_cpu_gemm_path(),
             cg_cpu_threads());
}

static void cpu_counters_add(cg_dev_counters *c) {
    c->objects_created += n_allocs;
    c->launches += n_launches;
    c->transfers += n_copies;
    c->bytes_transferred += n_bytes;
}

static cg_status cpu_alloc(cg_device *d, size_t bytes, cg_buf *out) {
    void *p = cg_aligned_alloc(bytes);
    if (!p) return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory allocating %zu bytes", d->info->label, bytes);
    n_allocs++;
    out->handle = p;
    return CG_OK;
}

static cg_status cpu_view(cg_device *d, const cg_buf *parent, size_t offset, size_t bytes, cg_buf *out) {
    (void)d, (void)bytes;
    out->handle = (char *)parent->handle + offset;
    return CG_OK;
}

static void cpu_free(cg_device *d, cg_buf *b) {
    (void)d;
    if (b->kind == CG_BUF_ALLOC) cg_aligned_free(b->handle);
}

static cg_status cpu_write(cg_device *d, const cg_buf *dst, size_t off, const void *src, size_t bytes, int async,
                           cg_event *ev) {
    (void)d, (void)async, (void)ev;
    memcpy((char *)dst->handle + off, src, bytes);
    n_copies++;
    n_bytes += bytes;
    return CG_OK;
}

static cg_status cpu_read(cg_device *d, const cg_buf *src, size_t off, void *dst, size_t bytes, int async,
                          cg_event *ev) {
    (void)d, (void)async, (void)ev;
    memcpy(dst, (const char *)src->handle + off, bytes);
    n_copies++;
    n_bytes += bytes;
    return CG_OK;
}

typedef struct copy_job {
    char *dst;
    const char *src;
    size_t bytes;
} copy_job;

enum { COPY_PIECE = 1 << 16 };

static void copy_pieces(void *p, size_t begin, size_t end) {
    const copy_job *j = p;
    const size_t from = begin * COPY_PIECE, to = end * COPY_PIECE < j->bytes ? end * COPY_PIECE : j->bytes;
    memcpy(j->dst + from, j->src + from, to - from);
}

static cg_status cpu_copy(cg_device *d, const cg_buf *src, size_t src_off, const cg_buf *dst, size_t dst_off,
                          size_t bytes) {
    (void)d;
    char *to = (char *)dst->handle + dst_off;
    const char *from = (const char *)src->handle + src_off;
    /* A large copy between separate buffers (a decoder's carried caches,
     * tens of MB a step) on every core, in 64 KiB pieces. */
    if (bytes >= 8 * COPY_PIECE && (to + bytes <= from || from + bytes <= to)) {
        copy_job j = {to, from, bytes};
        cg_cpu_parallel_for((bytes + COPY_PIECE - 1) / COPY_PIECE, 4, copy_pieces, &j);
    } else {
        memmove(to, from, bytes);
    }
    n_copies++;
    n_bytes += bytes;
    return CG_OK;
}

static cg_status cpu_wait(cg_device *d, cg_event *ev) {
    (void)d, (void)ev;
    return CG_OK;
}

static cg_status cpu_finish(cg_device *d) {
    (void)d;
    return CG_OK;
}

static void cpu_bind(cg_device *d, cg_kernel_args *a) {
    (void)d;
    a->stream = NULL;
    a->device = NULL;
}

static cg_op_status cpu_run(cg_device *d, const cg_kernel_def *k, const cg_kernel_args *a) {
    (void)d;
    n_launches++;
    return k->run(a);
}

static void cpu_close(cg_device *d) { (void)d; }

const cg_device_iface cg_cpu_device_iface = {
    .alloc = cpu_alloc,
    .view = cpu_view,
    .free = cpu_free,
    .write = cpu_write,
    .read = cpu_read,
    .copy = cpu_copy,
    .wait = cpu_wait,
    .finish = cpu_finish,
    .bind = cpu_bind,
    .run = cpu_run,
    .close = cpu_close,
};

static cg_status cpu_open(int i, cg_device *d) {
    (void)i;
    d->iface = &cg_cpu_device_iface;
    return CG_OK;
}

/* The CPU is one device, "cpu", always present. */
const cg_backend cg_cpu_backend = {
    .name = "cpu",
    .count = cpu_count,
    .info = cpu_info,
    .open = cpu_open,
    .describe = cpu_describe,
    .counters_add = cpu_counters_add,
};
