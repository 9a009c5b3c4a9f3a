/* The OpenCL backend of a build without OpenCL (-Dopencl=disabled, or no
 * OpenCL found at configure time), in place of backends/opencl/: no device,
 * and a reason that says why, which `clgraph devices` and every lookup of
 * an OpenCL device (--device opencl:0) report. */
#include <stdio.h>

#include "backend_impl.h"
#include "error.h"
#include "opencl/cl_backend.h"
#include "opencl/cl_host.h"

#define NO_OPENCL "this build of clgraph has no OpenCL (configured with -Dopencl=disabled or without OpenCL)"

int cg_cl_device_count(void) { return 0; }

const char *cg_cl_unavailable_reason(void) { return NO_OPENCL; }

cg_status cg_cl_device_find(const char *spec, int *index) {
    (void)index;
    return cg_error(CG_ERR_NOT_FOUND, "device '%s': %s", spec, NO_OPENCL);
}

static const cg_device_info *no_info(int i) {
    (void)i;
    return NULL;
}

static cg_status no_open(int i, cg_device *d) {
    (void)d;
    return cg_error(CG_ERR_NOT_FOUND, "device %d: %s", i + 1, NO_OPENCL);
}

/* The registry's OpenCL entry: no device, and the reason. */
const cg_backend cg_cl_backend = {
    .name = "opencl",
    .count = cg_cl_device_count,
    .info = no_info,
    .open = no_open,
    .find = cg_cl_device_find,
    .unavailable_reason = cg_cl_unavailable_reason,
};

/* reshape's OpenCL kernel copies through this; no OpenCL kernel runs here. */
cg_status cg_cl_copy(cg_cl_device *d, cl_mem src, size_t src_off, cl_mem dst, size_t dst_off, size_t bytes) {
    (void)d, (void)src, (void)src_off, (void)dst, (void)dst_off, (void)bytes;
    return cg_error(CG_ERR_UNSUPPORTED, "%s", NO_OPENCL);
}

/* The OpenCL services of the plugin host API: only an OpenCL kernel calls
 * them, and none runs in this build; a plugin that calls one anyway gets
 * the reason in its message buffer. */
static void no_service(const cg_kernel_args *a) {
    if (a && a->call && a->call->err && a->call->err_size) snprintf(a->call->err, a->call->err_size, "%s", NO_OPENCL);
}

void *cg_host_cl_kernel(const cg_kernel_args *a, const char *source, const char *options, const char *name) {
    (void)source, (void)options, (void)name;
    no_service(a);
    return NULL;
}

cg_op_status cg_host_cl_launch(const cg_kernel_args *a, void *kernel, int32_t dims, const size_t *global,
                               const size_t *local) {
    (void)kernel, (void)dims, (void)global, (void)local;
    no_service(a);
    return CG_OP_ERROR;
}

cg_op_status cg_host_cl_sgemm(const cg_kernel_args *a, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                              void *am, size_t a_off, int64_t lda, void *bm, size_t b_off, int64_t ldb, float beta,
                              void *cm, size_t c_off, int64_t ldc) {
    (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)am, (void)a_off, (void)lda;
    (void)bm, (void)b_off, (void)ldb, (void)beta, (void)cm, (void)c_off, (void)ldc;
    no_service(a);
    return CG_OP_ERROR;
}

cg_op_status cg_host_cl_linear_bias(const cg_kernel_args *a, int64_t m, int64_t n, int64_t k, void *x, void *w, void *b,
                                    void *y, int *done) {
    (void)m, (void)n, (void)k, (void)x, (void)w, (void)b, (void)y;
    *done = 0;
    no_service(a);
    return CG_OP_ERROR;
}

int64_t cg_host_cl_info(const cg_kernel_args *a, int32_t what) {
    (void)a, (void)what;
    return 0; /* "unknown", as plugin.h allows */
}

void cg_host_cl_kernel_limits(const cg_kernel_args *a, void *kernel, size_t *group, size_t *multiple,
                              uint64_t *local_mem) {
    (void)a, (void)kernel;
    *group = *multiple = 0;
    *local_mem = 0;
}

int cg_host_cl_device_limits(const cg_kernel_args *a, size_t items[3], size_t *group, uint64_t *local_mem) {
    (void)a, (void)items, (void)group, (void)local_mem;
    return 0;
}

/* The names are the OpenCL backend's own table (cl_errors.c, built here too). */
const char *cg_host_cl_error_name(int32_t code) { return cg_cl_error_name(code); }
