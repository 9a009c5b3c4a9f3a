/* The OpenCL services of the plugin host API (cg_host_api.cl_*, plugin.h). */
#ifndef CG_BACKEND_OPENCL_HOST_H
#define CG_BACKEND_OPENCL_HOST_H

#include "clgraph/plugin.h"

void *cg_host_cl_kernel(const cg_kernel_args *a, const char *source, const char *options, const char *name);
cg_op_status cg_host_cl_launch(const cg_kernel_args *a, void *kernel, int32_t dims, const size_t *global,
                               const size_t *local);
cg_op_status cg_host_cl_sgemm(const cg_kernel_args *a, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                              void *am, size_t a_off, int64_t lda, void *bm, size_t b_off, int64_t ldb, float beta,
                              void *cm, size_t c_off, int64_t ldc);
int64_t cg_host_cl_info(const cg_kernel_args *a, int32_t what);

/* For the built-in linear: y [m, n] = x [m, k] w [n, k]^T + b [n] in one
 * launch where the device's own GEMM can (cg_cl_sgemm_nt_bias); *done 0
 * where not (nothing enqueued). */
cg_op_status cg_host_cl_linear_bias(const cg_kernel_args *a, int64_t m, int64_t n, int64_t k, void *x, void *w, void *b,
                                    void *y, int *done);

/* For the built-in operators, which size each launch from these (a plugin
 * queries OpenCL itself): the kernel's own limits on the device of a
 * (cached when the kernel was made; zeros where unknown), and the device's
 * CL_DEVICE_MAX_WORK_ITEM_SIZES, CL_DEVICE_MAX_WORK_GROUP_SIZE and
 * CL_DEVICE_LOCAL_MEM_SIZE as queried when it was opened (0: no device). */
void cg_host_cl_kernel_limits(const cg_kernel_args *a, void *kernel, size_t *group, size_t *multiple,
                              uint64_t *local_mem);
int cg_host_cl_device_limits(const cg_kernel_args *a, size_t items[3], size_t *group, uint64_t *local_mem);
const char *cg_host_cl_error_name(int32_t code);

#endif
