/* The cost model of auto placement: kernels timed on each device with the
 * node's real shapes (and, when available, real data), copies timed once
 * per device. Times are kept in memory and in the cache directory
 * (costs.txt), keyed by device, driver, op, the code's file, types and
 * attributes, so a later process plans without measuring, and a rebuilt
 * kernel (a plugin, or clgraph itself) is timed again.
 *
 * The code's identity is its file's (device, inode, size, modification
 * time): a kernel's OpenCL source is embedded in the library that holds
 * it, so a changed source is a changed file. A plugin that reads its
 * OpenCL source from another file at run time is not covered: change its
 * version string with the source. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <sys/stat.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache.h"
#include "error.h"
#include "hash.h"
#include "measure_log.h"
#include "mem.h"
#include "shape.h"
#include "plan.h"
#include "read_file.h"
#include "tensor.h"

typedef struct entry {
    uint64_t key;
    double us;
} entry;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static entry *table;
static int n_table, cap_table, loaded;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void remember(uint64_t key, double us) {
    for (int i = 0; i < n_table; i++)
        if (table[i].key == key) {
            table[i].us = us;
            return;
        }
    if (n_table == cap_table) {
        int cap = cap_table * 2 + 64;
        entry *nt = realloc(table, sizeof *nt * (size_t)cap);
        if (!nt) return; /* forgetting a measurement only costs a re-measure */
        table = nt;
        cap_table = cap;
    }
    table[n_table++] = (entry){key, us};
}

static int lookup(uint64_t key, double *us) {
    for (int i = 0; i < n_table; i++)
        if (table[i].key == key) {
            *us = table[i].us;
            return 1;
        }
    return 0;
}

static void load_line(char *line, void *ctx) {
    (void)ctx;
    unsigned long long k;
    double us;
    if (sscanf(line, "%llx %lf", &k, &us) == 2 && us >= 0 && isfinite(us)) remember(k, us);
}

static void load_file(void) {
    if (loaded) return;
    loaded = 1;
    const char *dir = cg_cache_dir();
    if (!dir || !*dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/costs.txt", dir);
    cg_mlog_read(path, 0, load_line, NULL);
}

/* Appends one measurement; best effort, like every cache write. */
static void save(uint64_t key, double us, const char *what) {
    if (!cg_cache_dir_ready()) return;
    char path[4096], line[1024];
    snprintf(path, sizeof path, "%s/costs.txt", cg_cache_dir());
    /* %g keeps small values: a link's cost per byte is ~1e-4 us. */
    int n = snprintf(line, sizeof line, "%016llx %.9g %s\n", (unsigned long long)key, us, what);
    if (n > 0 && (size_t)n < sizeof line) cg_mlog_append(path, line, (size_t)n);
}

static uint64_t device_key(const cg_plan *p, int dev) {
    return cg_fnv1a_str(CG_FNV_BASIS, p->devs[dev].info->identity);
}

/* The identity of the file holding op's code: the plugin library, or for
 * built-in ops the file this function was loaded from (libclgraph, or a
 * program it is linked into). 0 when it cannot be told. */
static uint64_t code_identity(const cg_op_entry *op) {
    const char *path = op->plugin->dl ? op->plugin->path : NULL;
    Dl_info info;
    if (!path && dladdr((void *)(uintptr_t)&code_identity, &info) && info.dli_fname) path = info.dli_fname;
    struct stat sb;
    if (!path || stat(path, &sb) != 0) return 0;
    uint64_t v[5] = {(uint64_t)sb.st_dev, (uint64_t)sb.st_ino, (uint64_t)sb.st_size, (uint64_t)sb.st_mtim.tv_sec,
                     (uint64_t)sb.st_mtim.tv_nsec};
    return cg_fnv1a(CG_FNV_BASIS, v, sizeof v);
}

/* The measurement's key: device, op, the plugin, its version and its
 * code's file (a new kernel is measured again), types and attributes. */
static uint64_t kernel_key(const cg_plan *p, int dev, const cg_op_entry *op, const cg_attr_value *attrs, int n_in,
                           const cg_tensor_desc *in) {
    uint64_t key = device_key(p, dev);
    key = cg_fnv1a_str(key, op->def->name);
    key = cg_fnv1a_str(key, op->plugin->name);
    key = cg_fnv1a_str(key, op->plugin->version);
    uint64_t code = code_identity(op);
    key = cg_fnv1a(key, &code, sizeof code);
    for (int i = 0; i < n_in; i++) {
        key = cg_fnv1a(key, &in[i].dtype, sizeof in[i].dtype);
        key = cg_fnv1a(key, &in[i].ndim, sizeof in[i].ndim);
        key = cg_fnv1a(key, in[i].dims, sizeof(int64_t) * (size_t)in[i].ndim);
    }
    for (int a = 0; a < op->def->n_attrs; a++) {
        const cg_attr_value *v = &attrs[a];
        key = cg_fnv1a(key, &v->i, sizeof v->i);
        key = cg_fnv1a(key, &v->f, sizeof v->f);
        if (v->s) key = cg_fnv1a_str(key, v->s);
        if (v->n_ints) key = cg_fnv1a(key, v->ints, sizeof(int64_t) * (size_t)v->n_ints);
    }
    return key;
}

/* Times runs of a kernel on real inputs; -1 if it fails there. */
static double time_kernel(cg_plan *p, int dev, const cg_op_entry *op, const cg_kernel_def *k,
                          const cg_attr_value *attrs, int n_in, const cg_tensor_desc *in, const void *const *host_in,
                          int n_out, const cg_tensor_desc *out) {
    char err[512] = "";
    cg_tensor_desc *outd = malloc(sizeof *outd * ((size_t)n_out + 1));
    if (!outd) return -1;
    memcpy(outd, out, sizeof *out * (size_t)n_out);
    cg_op_call call = cg_host_call(op->def->name, n_in, in, n_out, outd, attrs, err, sizeof err);
    double us = -1;
    /* One warm-up (program builds, SGEMM choices), then runs until a few
     * milliseconds have passed. */
    if (cg_dev_run_host(p->devs[dev].dev, k, &call, host_in, NULL, 0, 50, &us) != CG_OK) us = -1;
    free(outd);
    cg_error_clear();
    return us;
}

double cg_cost_kernel(cg_plan *p, int dev, const cg_op_entry *op, const cg_kernel_def *k, const cg_attr_value *attrs,
                      int n_in, const cg_tensor_desc *in, const void *const *host_in, int n_out,
                      const cg_tensor_desc *out, int *cached) {
    if (cached) *cached = 0;
    if (!k) return -1;
    uint64_t key = kernel_key(p, dev, op, attrs, n_in, in);
    double us;
    pthread_mutex_lock(&mu);
    load_file();
    int hit = lookup(key, &us);
    pthread_mutex_unlock(&mu);
    if (hit && cached) *cached = 1;
    if (hit) return us;
    us = time_kernel(p, dev, op, k, attrs, n_in, in, host_in, n_out, out);
    char what[512];
    char shape[128] = "";
    if (n_in > 0) cg_shape_format(shape, sizeof shape, in[0].dtype, in[0].ndim, in[0].dims, NULL, 0);
    snprintf(what, sizeof what, "%s %s %s", p->devs[dev].info->name, op->def->name, shape);
    pthread_mutex_lock(&mu);
    remember(key, us);
    if (us >= 0) save(key, us, what);
    pthread_mutex_unlock(&mu);
    return us;
}

/* Latency and bandwidth of moving data between the host and a device. */
typedef struct link {
    double lat_us, us_per_byte;
} link;

static link measure_link(cg_plan *p, int dev, int to_device) {
    link l = {10.0, 1e-3};
    cg_device *d = p->devs[dev].dev;
    size_t big = (size_t)4 << 20;
    void *h = cg_aligned_alloc(big);
    cg_buf m;
    if (!h || cg_dev_alloc(d, big, &m)) {
        cg_aligned_free(h);
        cg_error_clear();
        return l;
    }
    memset(h, 0, big);
    double t_small = 0, t_big = 0;
    for (int pass = 0; pass < 2; pass++) { /* the first pass warms up */
        double t0 = now_us();
        for (int r = 0; r < 5; r++) {
            if (to_device) cg_dev_write(d, &m, 0, h, 64);
            else cg_dev_read(d, &m, 0, h, 64);
        }
        double t1 = now_us();
        if (to_device) cg_dev_write(d, &m, 0, h, big);
        else cg_dev_read(d, &m, 0, h, big);
        double t2 = now_us();
        t_small = (t1 - t0) / 5;
        t_big = t2 - t1;
    }
    cg_dev_free(d, &m);
    cg_aligned_free(h);
    cg_error_clear();
    l.lat_us = t_small;
    l.us_per_byte = t_big > t_small ? (t_big - t_small) / (double)big : 1e-6;
    return l;
}

static link get_link(cg_plan *p, int dev, int to_device) {
    uint64_t key = cg_fnv1a_str(device_key(p, dev), to_device ? "link-h2d" : "link-d2h");
    uint64_t kb = cg_fnv1a_str(key, "per-byte");
    double lat, per;
    pthread_mutex_lock(&mu);
    load_file();
    int hit = lookup(key, &lat) && lookup(kb, &per);
    pthread_mutex_unlock(&mu);
    if (hit) return (link){lat, per};
    link l = measure_link(p, dev, to_device);
    pthread_mutex_lock(&mu);
    remember(key, l.lat_us);
    remember(kb, l.us_per_byte);
    char what[128];
    snprintf(what, sizeof what, "%s %s", p->devs[dev].info->name, to_device ? "host-to-device" : "device-to-host");
    save(key, l.lat_us, what);
    save(kb, l.us_per_byte, what);
    pthread_mutex_unlock(&mu);
    return l;
}

double cg_cost_copy(cg_plan *p, int a, int b, size_t bytes) {
    if (a == b) return 0;
    double c = 0;
    /* Host memory is where copies go through: only the other side costs. */
    if (!p->devs[a].info->host_memory) {
        link l = get_link(p, a, 0);
        c += l.lat_us + l.us_per_byte * (double)bytes;
    }
    if (!p->devs[b].info->host_memory) {
        link l = get_link(p, b, 1);
        c += l.lat_us + l.us_per_byte * (double)bytes;
    }
    return c;
}
