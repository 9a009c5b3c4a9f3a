/* The backends' part of the plugin host API: SGEMM and parallel_for on the
 * CPU backend, the OpenCL services for OpenCL kernels (as the table's cl_*
 * members for plugins of ABI 1.0 to 1.3, and as the "opencl" extension). */
#include <string.h>

#include "backend.h"
#include "cpu/cpu_blas.h"
#include "cpu/cpu_pool.h"
#include "opencl/cl_host.h"

typedef struct pf_call {
    void (*fn)(void *ctx, int64_t begin, int64_t end);
    void *ctx;
} pf_call;

static void pf_chunk(void *c, size_t begin, size_t end) {
    const pf_call *p = c;
    p->fn(p->ctx, (int64_t)begin, (int64_t)end);
}

static void host_parallel_for(int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx) {
    if (n <= 0 || !fn) return;
    pf_call p = {fn, ctx};
    cg_cpu_parallel_for((size_t)n, grain > 0 ? (size_t)grain : 1, pf_chunk, &p);
}

static int32_t host_cpu_threads(void) { return (int32_t)cg_cpu_threads(); }

static const cg_host_opencl host_opencl = {
    .struct_size = sizeof(cg_host_opencl),
    .version = CG_HOST_OPENCL_VERSION,
    .kernel = cg_host_cl_kernel,
    .launch = cg_host_cl_launch,
    .sgemm = cg_host_cl_sgemm,
    .info = cg_host_cl_info,
    .error_name = cg_host_cl_error_name,
};

/* The extensions the backends offer plugins, by name; a build without
 * OpenCL has none. */
static const void *host_extension(const char *name, uint32_t min_version) {
    if (CG_HAVE_OPENCL && name && !strcmp(name, CG_HOST_OPENCL) && min_version <= host_opencl.version)
        return &host_opencl;
    return NULL;
}

void cg_backend_host_services(cg_host_api *api) {
    api->sgemm = cg_cpu_sgemm;
    api->parallel_for = host_parallel_for;
    api->cpu_threads = host_cpu_threads;
    api->cl_kernel = cg_host_cl_kernel;
    api->cl_launch = cg_host_cl_launch;
    api->cl_sgemm = cg_host_cl_sgemm;
    api->cl_info = cg_host_cl_info;
    api->cl_error_name = cg_host_cl_error_name;
    api->extension = host_extension;
}
