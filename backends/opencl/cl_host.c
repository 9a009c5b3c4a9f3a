/* The OpenCL services of the host API (cg_host_api.cl_*): thin adapters from
 * a kernel's arguments to the OpenCL backend, turning backend errors into
 * the kernel's message buffer. */
#include <stdio.h>

#include "opencl/cl_backend.h"
#include "error.h"
#include "opencl/cl_host.h"

static void to_err(const cg_kernel_args *a) {
    if (a && a->call && a->call->err && a->call->err_size)
        snprintf(a->call->err, a->call->err_size, "%s", cg_last_error());
}

static int bad_args(const cg_kernel_args *a) {
    if (a && a->device) return 0;
    if (a && a->call && a->call->err && a->call->err_size)
        snprintf(a->call->err, a->call->err_size, "OpenCL service called without an OpenCL device");
    return 1;
}

void *cg_host_cl_kernel(const cg_kernel_args *a, const char *source, const char *options, const char *name) {
    if (bad_args(a)) return NULL;
    cl_kernel k = NULL;
    if (cg_cl_kernel(a->device, source, options, name, &k) != CG_OK) {
        to_err(a);
        return NULL;
    }
    return k;
}

cg_op_status cg_host_cl_launch(const cg_kernel_args *a, void *kernel, int32_t dims, const size_t *global,
                               const size_t *local) {
    if (bad_args(a)) return CG_OP_ERROR;
    if (cg_cl_launch(a->device, kernel, dims, global, local,
                     a->call && a->call->node_name ? a->call->node_name : "kernel") != CG_OK) {
        to_err(a);
        return CG_OP_ERROR;
    }
    return CG_OP_OK;
}

cg_op_status cg_host_cl_sgemm(const cg_kernel_args *a, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                              void *am, size_t a_off, int64_t lda, void *bm, size_t b_off, int64_t ldb, float beta,
                              void *cm, size_t c_off, int64_t ldc) {
    if (bad_args(a)) return CG_OP_ERROR;
    if (cg_cl_sgemm(a->device, ta, tb, m, n, k, alpha, am, a_off, lda, bm, b_off, ldb, beta, cm, c_off, ldc) != CG_OK) {
        to_err(a);
        return CG_OP_ERROR;
    }
    return CG_OP_OK;
}

cg_op_status cg_host_cl_linear_bias(const cg_kernel_args *a, int64_t m, int64_t n, int64_t k, void *x, void *w, void *b,
                                    void *y, int *done) {
    *done = 0;
    if (bad_args(a)) return CG_OP_ERROR;
    if (cg_cl_sgemm_nt_bias(a->device, m, n, k, x, w, b, y, done) != CG_OK) {
        to_err(a);
        return CG_OP_ERROR;
    }
    return CG_OP_OK;
}

void cg_host_cl_kernel_limits(const cg_kernel_args *a, void *kernel, size_t *group, size_t *multiple,
                              uint64_t *local_mem) {
    cg_cl_kernel_limits l = {0, 0, 0};
    if (a && a->device && kernel) l = cg_cl_kernel_limits_of(a->device, kernel);
    *group = l.group;
    *multiple = l.multiple;
    *local_mem = l.local_mem;
}

int cg_host_cl_device_limits(const cg_kernel_args *a, size_t items[3], size_t *group, uint64_t *local_mem) {
    if (!a || !a->device) return 0;
    const cg_cl_info *in = cg_cl_info_of(a->device);
    for (int i = 0; i < 3; i++) items[i] = in->max_item[i];
    *group = in->max_work_group;
    *local_mem = in->local_mem;
    return 1;
}

int64_t cg_host_cl_info(const cg_kernel_args *a, int32_t what) {
    if (!a || !a->device) return 0;
    const cg_cl_info *in = cg_cl_info_of(a->device);
    switch (what) {
    case CG_CL_INFO_MAX_WORK_GROUP:
        /* Portable cap (AMD and Intel report 256); kernels size local
         * memory from it. */
        return (int64_t)(in->max_work_group < 256 ? in->max_work_group : 256);
    case CG_CL_INFO_LOCAL_MEM: return (int64_t)(in->local_mem < 32768 ? in->local_mem : 32768);
    case CG_CL_INFO_COMPUTE_UNITS: return (int64_t)in->compute_units;
    case CG_CL_INFO_CPU_PATHS: return cg_cl_cpu_paths(a->device);
    case CG_CL_INFO_MEM_ALIGN: return (int64_t)in->mem_align;
    }
    return 0;
}

const char *cg_host_cl_error_name(int32_t code) { return cg_cl_error_name(code); }
