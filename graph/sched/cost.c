/* The cost model of auto placement: kernels timed on each device with the
 * node's real shapes (and, when available, real data), copies timed once
 * per device. Times are kept in memory and in the cache directory
 * (costs.txt), keyed by device, driver, op, types and attributes, so a later
 * process plans without measuring. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mem.h"
#include "cache.h"
#include "error.h"
#include "shape.h"
#include "plan.h"
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

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static uint64_t fnv_str(uint64_t h, const char *s) { return fnv(h, s, strlen(s) + 1); }

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

static void load_file(void) {
    if (loaded) return;
    loaded = 1;
    const char *dir = cg_cache_dir();
    if (!dir || !*dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/costs.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        unsigned long long k;
        double us;
        if (sscanf(line, "%llx %lf", &k, &us) == 2 && us >= 0 && isfinite(us)) remember(k, us);
    }
    fclose(f);
}

/* Appends one measurement; best effort, like every cache write. */
static void save(uint64_t key, double us, const char *what) {
    if (!cg_cache_dir_ready()) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/costs.txt", cg_cache_dir());
    FILE *f = fopen(path, "a");
    if (!f) return;
    /* %g keeps small values: a link's cost per byte is ~1e-4 us. */
    fprintf(f, "%016llx %.9g %s\n", (unsigned long long)key, us, what);
    fclose(f);
}

static uint64_t device_key(const cg_plan *p, int dev) {
    uint64_t h = 1469598103934665603ull;
    if (!p->devs[dev].cl) return fnv_str(h, "cpu");
    const cg_cl_info *in = cg_cl_info_of(p->devs[dev].cl);
    h = fnv_str(h, in->name);
    h = fnv_str(h, in->driver);
    return fnv_str(h, in->platform_version);
}

static size_t bytes_of(const cg_tensor_desc *d) {
    int64_t n = cg_shape_numel(d->ndim, d->dims);
    return n > 0 ? (size_t)n * 4 : 0;
}

/* Times `reps` runs of a kernel; -1 if it fails. */
static double time_kernel(cg_plan *p, int dev, const cg_op_entry *op, const cg_kernel_def *k,
                          const cg_attr_value *attrs, int n_in, const cg_tensor_desc *in,
                          const void *const *host_in, int n_out, const cg_tensor_desc *out) {
    char err[512];
    cg_tensor_desc outd[64];
    memcpy(outd, out, sizeof *out * (size_t)n_out);
    cg_op_call call = {.struct_size = sizeof call, .node_name = op->def->name, .n_inputs = n_in,
                       .n_outputs = n_out, .inputs = in, .outputs = outd, .attrs = attrs, .err = err,
                       .err_size = sizeof err, .host = cg_host_api_get()};
    size_t ws = k->workspace ? k->workspace(&call) : 0;
    cg_cl_device *cl = p->devs[dev].cl;
    void *hin[256] = {0}, *hout[64] = {0}, *hws = NULL;
    cl_mem min[256] = {0}, mout[64] = {0}, mws = NULL;
    double result = -1;
    int ok = 1;
    for (int i = 0; ok && i < n_in; i++) {
        size_t b = bytes_of(&in[i]);
        if (!cl) {
            hin[i] = calloc(1, b + 4);
            ok = hin[i] != NULL;
            if (ok && host_in[i]) memcpy(hin[i], host_in[i], b);
        } else {
            ok = cg_cl_alloc(cl, b ? b : 4, &min[i]) == CG_OK;
            if (ok && b) {
                void *z = host_in[i] ? NULL : calloc(1, b);
                ok = cg_cl_write(cl, min[i], 0, b, host_in[i] ? host_in[i] : z, 1) == CG_OK;
                free(z);
            }
        }
    }
    for (int i = 0; ok && i < n_out; i++) {
        size_t b = bytes_of(&out[i]);
        if (!cl) ok = (hout[i] = calloc(1, b + 4)) != NULL;
        else ok = cg_cl_alloc(cl, b ? b : 4, &mout[i]) == CG_OK;
    }
    if (ok && ws) {
        if (!cl) ok = (hws = cg_aligned_alloc(ws)) != NULL;
        else ok = cg_cl_alloc(cl, ws, &mws) == CG_OK;
    }
    if (ok) {
        cg_kernel_args a = {.struct_size = sizeof a, .call = &call, .workspace_size = ws};
        a.in = cl ? (const void *const *)min : (const void *const *)hin;
        a.out = cl ? (void *const *)mout : hout;
        a.workspace = cl ? (void *)mws : hws;
        if (cl) {
            a.stream = cg_cl_queue(cl);
            a.device = cl;
        }
        /* One warm-up (program builds, SGEMM choices), then runs until a
         * few milliseconds have passed. */
        ok = k->run(&a) == CG_OP_OK && (!cl || cg_cl_finish(cl) == CG_OK);
        int reps = 0;
        double t0 = now_us(), t = t0;
        while (ok && (reps < 3 || t - t0 < 2000) && reps < 50) {
            ok = k->run(&a) == CG_OP_OK;
            if (cl && ok) ok = cg_cl_finish(cl) == CG_OK;
            reps++;
            t = now_us();
        }
        if (ok) result = (t - t0) / reps;
    }
    for (int i = 0; i < n_in; i++) {
        free(hin[i]);
        if (min[i]) clReleaseMemObject(min[i]);
    }
    for (int i = 0; i < n_out; i++) {
        free(hout[i]);
        if (mout[i]) clReleaseMemObject(mout[i]);
    }
    cg_aligned_free(hws);
    if (mws) clReleaseMemObject(mws);
    cg_error_clear();
    return result;
}

double cg_cost_kernel(cg_plan *p, int dev, const cg_op_entry *op, const cg_attr_value *attrs, int n_in,
                      const cg_tensor_desc *in, const void *const *host_in, int n_out,
                      const cg_tensor_desc *out) {
    const cg_kernel_def *k = p->devs[dev].cl ? op->opencl : op->cpu;
    if (!k) return -1;
    uint64_t key = device_key(p, dev);
    key = fnv_str(key, op->def->name);
    key = fnv_str(key, op->plugin->name);
    for (int i = 0; i < n_in; i++) {
        key = fnv(key, &in[i].dtype, sizeof in[i].dtype);
        key = fnv(key, &in[i].ndim, sizeof in[i].ndim);
        key = fnv(key, in[i].dims, sizeof(int64_t) * (size_t)in[i].ndim);
    }
    for (int a = 0; a < op->def->n_attrs; a++) {
        const cg_attr_value *v = &attrs[a];
        key = fnv(key, &v->i, sizeof v->i);
        key = fnv(key, &v->f, sizeof v->f);
        if (v->s) key = fnv_str(key, v->s);
        if (v->n_ints) key = fnv(key, v->ints, sizeof(int64_t) * (size_t)v->n_ints);
    }
    double us;
    pthread_mutex_lock(&mu);
    load_file();
    int hit = lookup(key, &us);
    pthread_mutex_unlock(&mu);
    if (hit) return us;
    us = time_kernel(p, dev, op, k, attrs, n_in, in, host_in, n_out, out);
    char what[512];
    char shape[128] = "";
    if (n_in > 0) cg_shape_format(shape, sizeof shape, in[0].dtype, in[0].ndim, in[0].dims, NULL, 0);
    snprintf(what, sizeof what, "%s %s %s", p->devs[dev].name, op->def->name, shape);
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
    cg_cl_device *cl = p->devs[dev].cl;
    size_t big = (size_t)4 << 20;
    void *h = cg_aligned_alloc(big);
    cl_mem m;
    if (!h || cg_cl_alloc(cl, big, &m)) {
        cg_aligned_free(h);
        cg_error_clear();
        return l;
    }
    memset(h, 0, big);
    double t_small = 0, t_big = 0;
    for (int pass = 0; pass < 2; pass++) { /* the first pass warms up */
        double t0 = now_us();
        for (int r = 0; r < 5; r++) {
            if (to_device) cg_cl_write(cl, m, 0, 64, h, 1);
            else cg_cl_read(cl, m, 0, 64, h);
        }
        double t1 = now_us();
        if (to_device) cg_cl_write(cl, m, 0, big, h, 1);
        else cg_cl_read(cl, m, 0, big, h);
        double t2 = now_us();
        t_small = (t1 - t0) / 5;
        t_big = t2 - t1;
    }
    clReleaseMemObject(m);
    cg_aligned_free(h);
    cg_error_clear();
    l.lat_us = t_small;
    l.us_per_byte = t_big > t_small ? (t_big - t_small) / (double)big : 1e-6;
    return l;
}

static link get_link(cg_plan *p, int dev, int to_device) {
    uint64_t key = fnv_str(device_key(p, dev), to_device ? "link-h2d" : "link-d2h");
    uint64_t kb = fnv_str(key, "per-byte");
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
    snprintf(what, sizeof what, "%s %s", p->devs[dev].name, to_device ? "host-to-device" : "device-to-host");
    save(key, l.lat_us, what);
    save(kb, l.us_per_byte, what);
    pthread_mutex_unlock(&mu);
    return l;
}

double cg_cost_copy(cg_plan *p, int a, int b, size_t bytes) {
    if (a == b) return 0;
    double c = 0;
    if (p->devs[a].cl) {
        link l = get_link(p, a, 0);
        c += l.lat_us + l.us_per_byte * (double)bytes;
    }
    if (p->devs[b].cl) {
        link l = get_link(p, b, 1);
        c += l.lat_us + l.us_per_byte * (double)bytes;
    }
    return c;
}
