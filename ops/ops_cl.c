/* Host-side helpers of the built-in operators' OpenCL kernels (ops_cl.h). */
#include "ops_cl.h"

#include <stdint.h>
#include <stdio.h>

#include "check.cl.h"

cl_kernel cg_ops_cl_kernel(const cg_kernel_args *a, const char *source, const char *name, int wide, int idx8,
                           const char *extra) {
    const char *idx =
        idx8 ? (wide ? "-DIDX=long -DIDX8=long8" : "-DIDX=int -DIDX8=int8") : (wide ? "-DIDX=long" : "-DIDX=int");
    if (!extra) return cg_host_cl_kernel(a, source, idx, name);
    char opts[4352]; /* ew_fused's expressions: up to 4 KiB */
    int len = snprintf(opts, sizeof opts, "%s %s", idx, extra);
    if (len < 0 || (size_t)len >= sizeof opts) {
        cg_op_fail(a->call, "build options of %s are too long: %s %s", name, idx, extra);
        return NULL;
    }
    return cg_host_cl_kernel(a, source, opts, name);
}

cg_op_status cg_ops_cl_arg(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint i, size_t size,
                           const void *value) {
    cl_int e = clSetKernelArg(k, i, size, value);
    if (e != CL_SUCCESS)
        return cg_op_fail(a->call, "clSetKernelArg(%s, %u): %s", name, (unsigned)i, cg_host_cl_error_name(e));
    return CG_OP_OK;
}

cg_op_status cg_ops_cl_args(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint first, int n,
                            const cg_ops_cl_arg_value *args) {
    for (int i = 0; i < n; i++)
        if (cg_ops_cl_arg(a, k, name, first + (cl_uint)i, args[i].size, args[i].value)) return CG_OP_ERROR;
    return CG_OP_OK;
}

cg_op_status cg_ops_cl_idx(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint i, int wide, int64_t v) {
    cl_long l = v;
    cl_int s = (cl_int)v;
    return wide ? cg_ops_cl_arg(a, k, name, i, sizeof l, &l) : cg_ops_cl_arg(a, k, name, i, sizeof s, &s);
}

cg_op_status cg_ops_cl_idx8(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint i, int wide,
                            const int64_t *v, int n) {
    cl_long8 l;
    cl_int8 s;
    for (int j = 0; j < 8; j++) {
        l.s[j] = j < n ? v[j] : 1;
        s.s[j] = (cl_int)l.s[j];
    }
    return wide ? cg_ops_cl_arg(a, k, name, i, sizeof l, &l) : cg_ops_cl_arg(a, k, name, i, sizeof s, &s);
}

/* Kernel k's own limits on the device (cached by the backend when the
 * kernel was made: no OpenCL query per launch). 0 where unknown. */
typedef struct kernel_limits {
    size_t group, multiple;
    uint64_t local_mem;
} kernel_limits;

static kernel_limits limits_of(const cg_kernel_args *a, cl_kernel k) {
    kernel_limits l = {0, 0, 0};
    if (k) cg_host_cl_kernel_limits(a, k, &l.group, &l.multiple, &l.local_mem);
    return l;
}

size_t cg_ops_cl_work_group(const cg_kernel_args *a, cl_kernel k, size_t cap, int pow2) {
    int64_t w = cg_host_cl_info(a, CG_CL_INFO_MAX_WORK_GROUP);
    size_t l = w <= 0 ? 64 : (size_t)w;
    if (l > cap) l = cap;
    size_t items[3] = {0, 0, 0}, dev_group;
    uint64_t dev_local;
    if (!cg_host_cl_device_limits(a, items, &dev_group, &dev_local)) items[0] = 0;
    const kernel_limits kl = limits_of(a, k);
    if (kl.group && kl.group < l) l = kl.group;
    if (items[0] && items[0] < l) l = items[0];
    if (l < 1) l = 1;
    if (pow2) {
        size_t p = 1;
        while (p * 2 <= l) p *= 2;
        l = p;
    } else if (kl.multiple > 1 && l > kl.multiple) {
        /* Whole multiples of what the device schedules together. */
        l = l / kl.multiple * kl.multiple;
    }
    return l;
}

int cg_ops_cl_group_fits(const cg_kernel_args *a, cl_kernel k, int dims, const size_t *local, size_t dyn_local) {
    size_t items[3] = {0, 0, 0}, dev_group = 0;
    uint64_t dev_local = 0;
    if (!cg_host_cl_device_limits(a, items, &dev_group, &dev_local)) return 0;
    const kernel_limits kl = limits_of(a, k);
    size_t group = 1;
    for (int i = 0; i < dims; i++) {
        if (local[i] > items[i]) return 0;
        group *= local[i];
    }
    if (group > dev_group || (kl.group && group > kl.group)) return 0;
    return kl.local_mem + dyn_local <= dev_local;
}

int cg_ops_cl_is_cpu(const cg_kernel_args *a) { return cg_host_cl_info(a, CG_CL_INFO_CPU_PATHS) == 1; }

size_t cg_ops_cl_fit_work_group(size_t local, int64_t n, size_t min_size) {
    while (local > min_size && (int64_t)(local / 2) >= n) local /= 2;
    return local;
}

cg_op_status cg_ops_cl_launch(const cg_kernel_args *a, cl_kernel k, const char *name, int dims, const size_t *global,
                              const size_t *local) {
    cg_op_status st = cg_host_cl_launch(a, k, dims, global, local);
    if (st == CG_OP_OK || !name) return st;
    char msg[256];
    snprintf(msg, sizeof msg, "%s", a->call->err ? a->call->err : "");
    return cg_op_fail(a->call, "launching %s: %s", name, msg);
}

cg_op_status cg_ops_cl_launch_1d(const cg_kernel_args *a, cl_kernel k, const char *name, int64_t n, size_t local) {
    size_t global = (size_t)n;
    return cg_ops_cl_launch(a, k, name, 1, &global, &local);
}

static cg_op_status unary(const cg_kernel_args *a, const char *source, const char *name, const char *extra, int n_f,
                          const float *f) {
    int64_t n = cg_desc_numel(&a->call->inputs[0]);
    if (n == 0) return CG_OP_OK;
    cl_kernel k = cg_ops_cl_kernel(a, source, name, n > INT32_MAX, 0, extra);
    if (!k) return CG_OP_ERROR;
    cl_mem x = (cl_mem)a->in[0], y = (cl_mem)a->out[0];
    cl_long ln = n;
    const cg_ops_cl_arg_value args[] = {CG_OPS_CL_ARG(x), CG_OPS_CL_ARG(y), CG_OPS_CL_ARG(ln)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(args), args)) return CG_OP_ERROR;
    for (int i = 0; i < n_f; i++) {
        cl_float v = f[i];
        if (cg_ops_cl_arg(a, k, name, (cl_uint)(3 + i), sizeof v, &v)) return CG_OP_ERROR;
    }
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

cg_op_status cg_ops_cl_unary(const cg_kernel_args *a, const char *source, const char *name, int n_f, const float *f) {
    return unary(a, source, name, NULL, n_f, f);
}

cg_op_status cg_ops_cl_unary_built(const cg_kernel_args *a, const char *source, const char *name, const char *extra) {
    return unary(a, source, name, extra, 0, NULL);
}

const char *cg_ops_cl_elem_type_option(size_t bytes) {
    return bytes == 1 ? "-DT=uchar" : bytes == 2 ? "-DT=ushort" : bytes == 8 ? "-DT=ulong" : "-DT=uint";
}

cg_op_status cg_ops_cl_check_args(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint first) {
    const cl_mem check = (cl_mem)a->check;
    const cl_int word = a->check_word;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(check), CG_OPS_CL_ARG(word)};
    return cg_ops_cl_args(a, k, name, first, CG_OPS_CL_N_ARGS(v), v);
}

cg_op_status cg_ops_cl_check_range(const cg_kernel_args *a, int input, int64_t n, int64_t lo, int64_t hi) {
    static const char kn[] = "check_range";
    if (!a->check || n <= 0) return CG_OP_OK;
    const int wide = n >= INT32_MAX;
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_check, kn, wide, 0, NULL);
    if (!k) return CG_OP_ERROR;
    const cl_mem v = (cl_mem)a->in[input];
    const cl_int l = cg_ops_clamp_i32(lo), h = cg_ops_clamp_i32(hi);
    const cl_int in = input;
    const cg_ops_cl_arg_value lim[] = {CG_OPS_CL_ARG(l), CG_OPS_CL_ARG(h)};
    const cg_ops_cl_arg_value last[] = {CG_OPS_CL_ARG(in)};
    if (cg_ops_cl_arg(a, k, kn, 0, sizeof v, &v) || cg_ops_cl_idx(a, k, kn, 1, wide, n) ||
        cg_ops_cl_args(a, k, kn, 2, CG_OPS_CL_N_ARGS(lim), lim) || cg_ops_cl_check_args(a, k, kn, 4) ||
        cg_ops_cl_args(a, k, kn, 6, CG_OPS_CL_N_ARGS(last), last))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, kn, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}
