/* Each kernel's own limits on its device (CL_KERNEL_WORK_GROUP_SIZE, its
 * preferred multiple, the local memory it takes), queried once when the
 * kernel is made and then looked up by the kernel's handle: the operators
 * size every launch from them, and querying OpenCL for them per launch was
 * most of a small launch's host time (issue 32). Kernels live as long as
 * the device's program cache, which clears this table with them. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "cl_internal.h"

static atomic_long n_queries;

long cg_cl_test_limit_queries(void) { return atomic_load(&n_queries); }

cg_cl_kernel_limits cg_cl_query_kernel_limits(const cg_cl_device *d, cl_kernel k) {
    cg_cl_kernel_limits l = {0, 0, 0};
    atomic_fetch_add(&n_queries, 1);
    cl_device_id dev = d->info->device_id;
    if (clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof l.group, &l.group, NULL) != CL_SUCCESS)
        l.group = 0;
    if (clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof l.multiple, &l.multiple,
                                 NULL) != CL_SUCCESS)
        l.multiple = 0;
    cl_ulong mem = 0;
    if (clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof mem, &mem, NULL) != CL_SUCCESS) mem = 0;
    l.local_mem = mem;
    return l;
}

static size_t slot_of(cl_kernel k, size_t cap) {
    uintptr_t h = (uintptr_t)k;
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15u;
    return (size_t)(h >> 7) & (cap - 1);
}

/* Open addressing; a power-of-two capacity kept at most half full. */
static int grow_locked(cg_cl_device *d) {
    size_t cap = d->klim_cap ? d->klim_cap * 2 : 64;
    cg_cl_kernel_limit_slot *t = calloc(cap, sizeof *t);
    if (!t) return -1;
    for (size_t i = 0; i < d->klim_cap; i++) {
        if (!d->klim[i].kernel) continue;
        size_t s = slot_of(d->klim[i].kernel, cap);
        while (t[s].kernel) s = (s + 1) & (cap - 1);
        t[s] = d->klim[i];
    }
    free(d->klim);
    d->klim = t;
    d->klim_cap = cap;
    return 0;
}

void cg_cl_kernel_limits_add_locked(cg_cl_device *d, cl_kernel k) {
    if ((d->klim_n + 1) * 2 > d->klim_cap && grow_locked(d)) return; /* looked up by query then */
    size_t s = slot_of(k, d->klim_cap);
    while (d->klim[s].kernel && d->klim[s].kernel != k) s = (s + 1) & (d->klim_cap - 1);
    if (!d->klim[s].kernel) d->klim_n++;
    d->klim[s].kernel = k;
    d->klim[s].lim = cg_cl_query_kernel_limits(d, k);
}

void cg_cl_kernel_limits_clear_locked(cg_cl_device *d) {
    free(d->klim);
    d->klim = NULL;
    d->klim_cap = d->klim_n = 0;
}

cg_cl_kernel_limits cg_cl_kernel_limits_of(cg_cl_device *d, cl_kernel k) {
    pthread_mutex_lock(&d->mu);
    for (size_t s = d->klim_cap ? slot_of(k, d->klim_cap) : 0; d->klim_cap && d->klim[s].kernel;
         s = (s + 1) & (d->klim_cap - 1))
        if (d->klim[s].kernel == k) {
            const cg_cl_kernel_limits l = d->klim[s].lim;
            pthread_mutex_unlock(&d->mu);
            return l;
        }
    pthread_mutex_unlock(&d->mu);
    return cg_cl_query_kernel_limits(d, k); /* not made by cg_cl_kernel */
}
