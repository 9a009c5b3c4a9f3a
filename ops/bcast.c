/* Broadcast plans of the elementwise ops (bcast.h). */
#include "bcast.h"

#include <stdio.h>

#include "broadcast.cl.h"
#include "int_ops.h"

/* Strides of `in` padded on the left to `nd` dims against output dims `od`. */
static void strides(const cg_tensor_desc *in, int nd, const int64_t *od, int64_t *st) {
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        int k = in->ndim - nd + i;
        int64_t d = k >= 0 ? in->dims[k] : 1;
        st[i] = (d == 1 && od[i] != 1) ? 0 : s;
        s *= d;
    }
}

void cg_bcast_make(cg_bcast *p, int n_in, const cg_tensor_desc *in, const cg_tensor_desc *o) {
    int64_t st[CG_BCAST_MAX_IN][CG_MAX_DIMS];
    for (int k = 0; k < n_in; k++) strides(&in[k], o->ndim, o->dims, st[k]);
    p->nd = 0;
    p->n_in = n_in;
    for (int i = 0; i < o->ndim; i++) {
        if (o->dims[i] == 1) continue;
        int last = p->nd - 1, merge = last >= 0;
        for (int k = 0; k < n_in && merge; k++) merge = p->s[k][last] == st[k][i] * o->dims[i];
        if (merge) {
            p->n[last] *= o->dims[i];
            for (int k = 0; k < n_in; k++) p->s[k][last] = st[k][i];
        } else {
            p->n[p->nd] = o->dims[i];
            for (int k = 0; k < n_in; k++) p->s[k][p->nd] = st[k][i];
            p->nd++;
        }
    }
    if (p->nd == 0) { /* a single element */
        p->nd = 1;
        p->n[0] = 1;
        for (int k = 0; k < n_in; k++) p->s[k][0] = 0;
    }
}

int cg_bcast_flat(const cg_bcast *p) {
    if (p->nd != 1) return 0;
    for (int k = 0; k < p->n_in; k++)
        if (p->s[k][0] > 1) return 0;
    return 1;
}

void cg_bcast_run(const cg_bcast *p, cg_bcast_loop fn, const void *const *in, const size_t *in_bytes, void *out,
                  size_t out_bytes) {
    /* The innermost dim is a row, the next one (if any) the rows of one
     * call; the dims above are walked here. */
    const int last = p->nd - 1, outer = last - 1, n_in = p->n_in;
    const int64_t inner = p->n[last], rows = outer >= 0 ? p->n[outer] : 1;
    int64_t idx[CG_MAX_DIMS] = {0}, off[CG_BCAST_MAX_IN] = {0}, inner_s[CG_BCAST_MAX_IN], row_s[CG_BCAST_MAX_IN];
    for (int k = 0; k < n_in; k++) {
        inner_s[k] = p->s[k][last];
        row_s[k] = outer >= 0 ? p->s[k][outer] : 0;
    }
    int64_t oo = 0;
    for (;;) {
        const void *ptr[CG_BCAST_MAX_IN];
        for (int k = 0; k < n_in; k++) ptr[k] = (const char *)in[k] + off[k] * (int64_t)in_bytes[k];
        fn(ptr, inner_s, row_s, (char *)out + oo * (int64_t)out_bytes, inner, rows);
        oo += inner * rows;
        int d = outer - 1;
        for (; d >= 0; d--) {
            for (int k = 0; k < n_in; k++) off[k] += p->s[k][d];
            if (++idx[d] < p->n[d]) break;
            for (int k = 0; k < n_in; k++) off[k] -= p->s[k][d] * p->n[d];
            idx[d] = 0;
        }
        if (d < 0) break;
    }
}

cg_op_status cg_bcast_cl_args(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint first,
                              const cg_bcast *p) {
    cl_long8 dims, st[CG_BCAST_MAX_IN];
    cl_int nd = p->nd;
    for (int i = 0; i < 8; i++) {
        int d = p->nd - 1 - i;
        dims.s[i] = d >= 0 ? p->n[d] : 1;
        for (int j = 0; j < p->n_in; j++) st[j].s[i] = d >= 0 ? p->s[j][d] : 0;
    }
    if (cg_ops_cl_arg(a, k, name, first, sizeof nd, &nd) || cg_ops_cl_arg(a, k, name, first + 1, sizeof dims, &dims))
        return CG_OP_ERROR;
    for (int j = 0; j < p->n_in; j++)
        if (cg_ops_cl_arg(a, k, name, first + 2 + (cl_uint)j, sizeof st[j], &st[j])) return CG_OP_ERROR;
    return CG_OP_OK;
}

cg_op_status cg_bcast_cpu2(const cg_kernel_args *a, cg_bcast_loop fn) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *o = &call->outputs[0];
    if (cg_desc_numel(o) == 0) return CG_OP_OK;
    cg_bcast p;
    cg_bcast_make(&p, 2, call->inputs, o);
    const void *in[2] = {a->in[0], a->in[1]};
    const size_t bytes[2] = {cg_dtype_size((cg_dtype)call->inputs[0].dtype),
                             cg_dtype_size((cg_dtype)call->inputs[1].dtype)};
    cg_bcast_run(&p, fn, in, bytes, a->out[0], cg_dtype_size((cg_dtype)o->dtype));
    return CG_OP_OK;
}

const char *cg_bcast_cl_type(cg_op_dtype dt, int is_unsigned) {
    switch (dt) {
    case CG_F32: return is_unsigned ? "uint" : "float";
    case CG_I32: return is_unsigned ? "uint" : "int";
    case CG_I64: return is_unsigned ? "ulong" : "long";
    case CG_U64: return "ulong";
    case CG_U32: return "uint";
    case CG_I16: return is_unsigned ? "ushort" : "short";
    case CG_I8: return is_unsigned ? "uchar" : "char";
    case CG_U8:
    case CG_BOOL: return "uchar";
    case CG_U16:
    case CG_F16:
    case CG_BF16: return "ushort";
    default: return NULL;
    }
}

cg_op_status cg_bcast_cl2(const cg_kernel_args *a, const char *bop) { return cg_bcast_cl2_opt(a, bop, NULL); }

cg_op_status cg_bcast_cl2_opt(const cg_kernel_args *a, const char *bop, const char *extra) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *o = &call->outputs[0];
    const int64_t n = cg_desc_numel(o);
    if (n == 0) return CG_OP_OK;
    cg_bcast p;
    cg_bcast_make(&p, 2, call->inputs, o);
    const int flat = cg_bcast_flat(&p);
    const char *name = flat ? "binx_flat" : "binx_nd";
    const char *ta = cg_bcast_cl_type(call->inputs[0].dtype, 0), *tu = cg_bcast_cl_type(call->inputs[0].dtype, 1),
               *to = cg_bcast_cl_type(o->dtype, 0);
    if (!ta || !to) return cg_op_fail(call, "%s: no OpenCL type for %s", name, cg_ops_dtype_name(o->dtype));
    const int tf = call->inputs[0].dtype == CG_F32;
    char opts[256];
    snprintf(opts, sizeof opts, "-DTA=%s -DTU=%s -DTO=%s%s -DBOP_%s %s%s%s", ta, tf ? ta : tu, to, tf ? " -DTF" : "",
             bop, cg_ops_cl_int_options(call->inputs[0].dtype), extra ? " " : "", extra ? extra : "");
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_broadcast, name, n > INT32_MAX, 0, opts);
    if (!k) return CG_OP_ERROR;
    cl_mem x = (cl_mem)a->in[0], y = (cl_mem)a->in[1], out = (cl_mem)a->out[0];
    cl_long ln = n;
    if (flat) {
        cl_long sa = p.s[0][0], sb = p.s[1][0];
        const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(x),  CG_OPS_CL_ARG(sa),  CG_OPS_CL_ARG(y),
                                         CG_OPS_CL_ARG(sb), CG_OPS_CL_ARG(out), CG_OPS_CL_ARG(ln)};
        if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    } else {
        const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(x), CG_OPS_CL_ARG(y), CG_OPS_CL_ARG(out), CG_OPS_CL_ARG(ln)};
        if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v) || cg_bcast_cl_args(a, k, name, 4, &p))
            return CG_OP_ERROR;
    }
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}
