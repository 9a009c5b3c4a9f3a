/* The device table of backend.h over the backend registry: device 0 is
 * the CPU, then each backend's devices in the registry's order (OpenCL's
 * in enumeration order). An opened device is shared by every opener
 * (reference counted under one lock) so its memory accounting is the
 * device's, whoever allocated. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"
#include "error.h"

enum { MAX_BACKENDS = 8 };

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
/* The registry: the CPU first (device 0 needs no other backend started),
 * then OpenCL, then what cg_dev_register_backend added. */
static const cg_backend *g_backends[MAX_BACKENDS] = {&cg_cpu_backend, &cg_cl_backend};
static int g_n_backends = 2;
static atomic_int g_frozen; /* a device call was made: the registry is fixed */
static cg_device g_cpu;     /* never closed */
static cg_device **g_open;  /* index -> opened device (1..), grown on demand */
static int g_cap;

cg_status cg_dev_register_backend(const cg_backend *b) {
    if (!b || !b->name || !b->count || !b->info || !b->open)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_dev_register_backend: incomplete backend");
    pthread_mutex_lock(&g_mu);
    cg_status st = CG_OK;
    if (atomic_load(&g_frozen))
        st = cg_error(CG_ERR_INVALID_ARGUMENT, "backend '%s': devices are already in use; register backends first",
                      b->name);
    else if (g_n_backends == MAX_BACKENDS)
        st = cg_error(CG_ERR_INVALID_ARGUMENT, "backend '%s': at most %d backends", b->name, MAX_BACKENDS);
    else g_backends[g_n_backends++] = b;
    pthread_mutex_unlock(&g_mu);
    return st;
}

static int n_backends(void) {
    atomic_store(&g_frozen, 1);
    return g_n_backends;
}

/* The backend of device `index` and the device's index in it; NULL when out
 * of range. Counts only the backends before it. */
static const cg_backend *locate(int index, int *local) {
    if (index < 0) return NULL;
    for (int k = 0, n = n_backends(); k < n; k++) {
        int c = g_backends[k]->count();
        if (index < c) {
            *local = index;
            return g_backends[k];
        }
        index -= c;
    }
    return NULL;
}

/* The global index of device `local` of backend k. */
static int global_index(int k, int local) {
    for (int j = 0; j < k; j++) local += g_backends[j]->count();
    return local;
}

int cg_dev_count(void) {
    int n = 0;
    for (int k = 0, nb = n_backends(); k < nb; k++) n += g_backends[k]->count();
    return n;
}

const char *cg_dev_unavailable_reason(void) {
    for (int k = 1, n = n_backends(); k < n; k++) {
        const cg_backend *b = g_backends[k];
        if (b->count() == 0 && b->unavailable_reason && b->unavailable_reason()) return b->unavailable_reason();
    }
    return NULL;
}

const cg_device_info *cg_dev_info_at(int index) {
    int i;
    const cg_backend *b = locate(index, &i);
    return b ? b->info(i) : NULL;
}

/* "NAME" or "NAME:I" of backend b: device I (0 for the bare name when the
 * backend has one device); -1 when spec names another backend. */
static int by_name(const cg_backend *b, const char *spec) {
    size_t n = strlen(b->name);
    if (strncmp(spec, b->name, n)) return -1;
    if (!spec[n]) return b->count() == 1 ? 0 : -1;
    if (spec[n] != ':' || !spec[n + 1]) return -1;
    char *end;
    long i = strtol(spec + n + 1, &end, 10);
    return !*end && spec[n + 1] >= '0' && spec[n + 1] <= '9' && i < b->count() ? (int)i : -1;
}

cg_status cg_dev_find(const char *spec, int *index) {
    if (!spec || !index) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_dev_find: NULL argument");
    if (!*spec) return cg_error(CG_ERR_INVALID_ARGUMENT, "device '': give cpu, opencl:N or a device name");
    const int nb = n_backends();
    for (int k = 0; k < nb; k++) {
        int i = g_backends[k]->find ? -1 : by_name(g_backends[k], spec);
        if (i >= 0) {
            *index = global_index(k, i);
            return CG_OK;
        }
    }
    /* the backends that resolve names themselves (OpenCL: "opencl:N" and
     * substrings of device, vendor and platform names), whose messages list
     * their devices */
    cg_status last = cg_error(CG_ERR_NOT_FOUND, "device '%s': no such device", spec);
    for (int k = 0; k < nb; k++) {
        const cg_backend *b = g_backends[k];
        if (!b->find) continue;
        if (b->count() == 0) {
            last = cg_error(CG_ERR_NOT_FOUND, "device '%s': %s", spec,
                            b->unavailable_reason && b->unavailable_reason() ? b->unavailable_reason() : "no device");
            continue;
        }
        int i;
        if (!(last = b->find(spec, &i))) {
            *index = global_index(k, i);
            return CG_OK;
        }
    }
    return last;
}

void cg_dev_describe(int index, char *buf, size_t size) {
    if (!buf || !size) return;
    buf[0] = '\0';
    int i;
    const cg_backend *b = locate(index, &i);
    if (b && b->describe) b->describe(i, buf, size);
}

static cg_status grow_table(int index) {
    if (index < g_cap) return CG_OK;
    int cap = index + 8;
    cg_device **t = realloc(g_open, sizeof *t * (size_t)cap);
    if (!t) return cg_error(CG_ERR_NO_MEMORY, "out of memory opening a device");
    for (int i = g_cap; i < cap; i++) t[i] = NULL;
    g_open = t;
    g_cap = cap;
    return CG_OK;
}

static cg_status out_of_range(int index) {
    int n = cg_dev_count();
    if (n == 1)
        return cg_error(CG_ERR_NOT_FOUND, "device %d: no such device: %s", index,
                        cg_dev_unavailable_reason() ? cg_dev_unavailable_reason() : "only the CPU");
    return cg_error(CG_ERR_NOT_FOUND, "device %d: no such device (%d devices)", index, n);
}

/* A new record for device `index`, backend b's device i, opened. */
static cg_status open_new(const cg_backend *b, int i, int index, cg_device **out) {
    cg_device *d = calloc(1, sizeof *d);
    if (!d) return cg_error(CG_ERR_NO_MEMORY, "out of memory opening a device");
    d->index = index;
    d->refs = 1;
    d->info = b->info(i);
    cg_status st = b->open(i, d);
    if (!st && !d->iface)
        st = cg_error(CG_ERR_INVALID_ARGUMENT, "backend '%s' opened device %d without an interface", b->name, i);
    if (st) {
        free(d);
        return st;
    }
    *out = g_open[index] = d;
    return CG_OK;
}

cg_status cg_dev_open(int index, cg_device **out) {
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_dev_open: out is NULL");
    *out = NULL;
    if (index == 0) { /* without counting the others: that would start every OpenCL platform */
        pthread_mutex_lock(&g_mu);
        if (!g_cpu.iface) {
            g_cpu.info = cg_cpu_backend.info(0);
            cg_cpu_backend.open(0, &g_cpu);
        }
        *out = &g_cpu;
        pthread_mutex_unlock(&g_mu);
        atomic_store(&g_frozen, 1);
        return CG_OK;
    }
    int i;
    const cg_backend *b = locate(index, &i);
    if (!b) return out_of_range(index);
    pthread_mutex_lock(&g_mu);
    cg_status st = grow_table(index);
    if (!st && g_open[index]) {
        g_open[index]->refs++;
        *out = g_open[index];
    } else if (!st) {
        st = open_new(b, i, index, out);
    }
    pthread_mutex_unlock(&g_mu);
    return st;
}

void cg_dev_release(cg_device *d) {
    if (!d || d == &g_cpu) return;
    pthread_mutex_lock(&g_mu);
    int last = --d->refs == 0;
    if (last) g_open[d->index] = NULL;
    pthread_mutex_unlock(&g_mu);
    if (last) {
        d->iface->close(d);
        free(d);
    }
}

const cg_device_info *cg_dev_info(const cg_device *d) { return d ? d->info : NULL; }

void cg_dev_account_alloc(cg_device *d, size_t bytes) {
    uint64_t now = atomic_fetch_add(&d->bytes_now, bytes) + bytes;
    atomic_fetch_add(&d->buffers_now, 1);
    uint64_t peak = atomic_load(&d->bytes_peak);
    while (now > peak && !atomic_compare_exchange_weak(&d->bytes_peak, &peak, now)) {
    }
}

void cg_dev_account_free(cg_device *d, size_t bytes) {
    atomic_fetch_sub(&d->bytes_now, bytes);
    atomic_fetch_sub(&d->buffers_now, 1);
}

void cg_dev_memory_get(const cg_device *d, cg_dev_memory *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!d) return;
    out->bytes_now = atomic_load(&d->bytes_now);
    out->bytes_peak = atomic_load(&d->bytes_peak);
    out->buffers_now = atomic_load(&d->buffers_now);
}

void cg_dev_counters_get(cg_dev_counters *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    for (int k = 0, n = n_backends(); k < n; k++)
        if (g_backends[k]->counters_add) g_backends[k]->counters_add(out);
}
