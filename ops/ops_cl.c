/* Host-side helpers of the built-in operators' OpenCL kernels (ops_cl.h). */
#include "ops_cl.h"

#include <stdio.h>

cl_kernel cg_ops_cl_kernel(const cg_kernel_args *a, const char *source, const char *name,
                           int wide, int idx8, const char *extra) {
    const char *idx = idx8 ? (wide ? "-DIDX=long -DIDX8=long8" : "-DIDX=int -DIDX8=int8")
                           : (wide ? "-DIDX=long" : "-DIDX=int");
    if (!extra) return a->call->host->cl_kernel(a, source, idx, name);
    char opts[256];
    int len = snprintf(opts, sizeof opts, "%s %s", idx, extra);
    if (len < 0 || (size_t)len >= sizeof opts) {
        cg_op_fail(a->call, "build options of %s are too long: %s %s", name, idx, extra);
        return NULL;
    }
    return a->call->host->cl_kernel(a, source, opts, name);
}

cg_op_status cg_ops_cl_arg(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint i,
                           size_t size, const void *value) {
    cl_int e = clSetKernelArg(k, i, size, value);
    if (e != CL_SUCCESS)
        return cg_op_fail(a->call, "clSetKernelArg(%s, %u): %s", name, (unsigned)i,
                          a->call->host->cl_error_name(e));
    return CG_OP_OK;
}

cg_op_status cg_ops_cl_args(const cg_kernel_args *a, cl_kernel k, const char *name,
                            cl_uint first, int n, const cg_ops_cl_arg_value *args) {
    for (int i = 0; i < n; i++)
        if (cg_ops_cl_arg(a, k, name, first + (cl_uint)i, args[i].size, args[i].value))
            return CG_OP_ERROR;
    return CG_OP_OK;
}

cg_op_status cg_ops_cl_idx(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint i,
                           int wide, int64_t v) {
    cl_long l = v;
    cl_int s = (cl_int)v;
    return wide ? cg_ops_cl_arg(a, k, name, i, sizeof l, &l)
                : cg_ops_cl_arg(a, k, name, i, sizeof s, &s);
}

cg_op_status cg_ops_cl_idx8(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint i,
                            int wide, const int64_t *v, int n) {
    cl_long8 l;
    cl_int8 s;
    for (int j = 0; j < 8; j++) {
        l.s[j] = j < n ? v[j] : 1;
        s.s[j] = (cl_int)l.s[j];
    }
    return wide ? cg_ops_cl_arg(a, k, name, i, sizeof l, &l)
                : cg_ops_cl_arg(a, k, name, i, sizeof s, &s);
}

size_t cg_ops_cl_work_group(const cg_kernel_args *a, cl_kernel k, size_t cap, int pow2) {
    int64_t w = a->call->host->cl_info(a, CG_CL_INFO_MAX_WORK_GROUP);
    size_t l = w <= 0 ? 64 : (size_t)w;
    if (l > cap) l = cap;
    if (k) {
        cl_device_id dev;
        size_t kw = 0;
        if (clGetCommandQueueInfo((cl_command_queue)a->stream, CL_QUEUE_DEVICE, sizeof dev, &dev,
                                  NULL) == CL_SUCCESS &&
            clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof kw, &kw, NULL) ==
                CL_SUCCESS &&
            kw > 0 && kw < l)
            l = kw;
    }
    if (pow2) {
        size_t p = 1;
        while (p * 2 <= l) p *= 2;
        l = p;
    }
    return l;
}

int cg_ops_cl_is_cpu(const cg_kernel_args *a) {
    cl_device_id dev;
    cl_device_type type = 0;
    if (clGetCommandQueueInfo((cl_command_queue)a->stream, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL) !=
            CL_SUCCESS ||
        clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL) != CL_SUCCESS)
        return 0;
    /* Oclgrind reports every type: it takes the GPU paths, which is how the
     * tests run them under it. */
    return (type & CL_DEVICE_TYPE_CPU) && !(type & CL_DEVICE_TYPE_GPU);
}

size_t cg_ops_cl_fit_work_group(size_t local, int64_t n, size_t min_size) {
    while (local > min_size && (int64_t)(local / 2) >= n) local /= 2;
    return local;
}

cg_op_status cg_ops_cl_launch(const cg_kernel_args *a, cl_kernel k, const char *name, int dims,
                              const size_t *global, const size_t *local) {
    cg_op_status st = a->call->host->cl_launch(a, k, dims, global, local);
    if (st == CG_OP_OK || !name) return st;
    char msg[256];
    snprintf(msg, sizeof msg, "%s", a->call->err ? a->call->err : "");
    return cg_op_fail(a->call, "launching %s: %s", name, msg);
}

cg_op_status cg_ops_cl_launch_1d(const cg_kernel_args *a, cl_kernel k, const char *name,
                                 int64_t n, size_t local) {
    size_t global = (size_t)n;
    return cg_ops_cl_launch(a, k, name, 1, &global, &local);
}
