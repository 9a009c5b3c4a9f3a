/* The device table of backend.h: device 0 is the CPU, devices 1.. the
 * OpenCL devices in enumeration order. An opened device is shared by every
 * opener (reference counted under one lock) so its memory accounting is
 * the device's, whoever allocated. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"
#include "error.h"
#include "opencl/cl_backend.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static cg_device g_cpu;          /* never closed */
static cg_device **g_open;       /* index -> opened device (1..), grown on demand */
static int g_cap;

int cg_dev_count(void) { return 1 + cg_cl_device_count(); }

const char *cg_dev_unavailable_reason(void) { return cg_cl_unavailable_reason(); }

const cg_device_info *cg_dev_info_at(int index) {
    if (index == 0) return cg_cpu_device_info();
    if (index < 0 || index >= cg_dev_count()) return NULL;
    return cg_cl_iface_info(index - 1);
}

cg_status cg_dev_find(const char *spec, int *index) {
    if (!spec || !index) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_dev_find: NULL argument");
    if (!strcmp(spec, "cpu")) {
        *index = 0;
        return CG_OK;
    }
    if (!*spec) return cg_error(CG_ERR_INVALID_ARGUMENT, "device '': give cpu, opencl:N or a device name");
    if (cg_cl_device_count() == 0)
        return cg_error(CG_ERR_NOT_FOUND, "device '%s': %s", spec,
                        cg_cl_unavailable_reason() ? cg_cl_unavailable_reason() : "no OpenCL device");
    int i;
    cg_status st = cg_cl_device_find(spec, &i);
    if (st) return st;
    *index = i + 1;
    return CG_OK;
}

void cg_dev_describe(int index, char *buf, size_t size) {
    if (!buf || !size) return;
    buf[0] = '\0';
    if (index == 0) cg_cpu_device_describe(buf, size);
    else if (index > 0 && index < cg_dev_count()) cg_cl_iface_describe(index - 1, buf, size);
}

/* The CPU's record, made once. */
static cg_device *cpu_device(void) {
    if (!g_cpu.iface) {
        g_cpu.info = cg_cpu_device_info();
        g_cpu.index = 0;
        g_cpu.iface = &cg_cpu_device_iface;
    }
    return &g_cpu;
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

cg_status cg_dev_open(int index, cg_device **out) {
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_dev_open: out is NULL");
    *out = NULL;
    if (index == 0) { /* without counting the others: that would start every OpenCL platform */
        pthread_mutex_lock(&g_mu);
        *out = cpu_device();
        pthread_mutex_unlock(&g_mu);
        return CG_OK;
    }
    int n = cg_dev_count();
    if (index < 0 || index >= n) {
        if (n == 1)
            return cg_error(CG_ERR_NOT_FOUND, "device %d: no such device: %s", index,
                            cg_dev_unavailable_reason() ? cg_dev_unavailable_reason() : "only the CPU");
        return cg_error(CG_ERR_NOT_FOUND, "device %d: no such device (%d devices)", index, n);
    }
    pthread_mutex_lock(&g_mu);
    cg_status st = CG_OK;
    if (!(st = grow_table(index)) && g_open[index]) {
        g_open[index]->refs++;
        *out = g_open[index];
    } else if (!st) {
        cg_device *d = calloc(1, sizeof *d);
        if (!d) st = cg_error(CG_ERR_NO_MEMORY, "out of memory opening a device");
        else {
            d->index = index;
            d->refs = 1;
            d->iface = &cg_cl_device_iface;
            d->info = cg_cl_iface_info(index - 1);
            st = cg_cl_iface_open(index - 1, d);
            if (st) free(d);
            else *out = g_open[index] = d;
        }
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
    cg_cpu_counters_add(out);
    cg_cl_counters_add(out);
}
