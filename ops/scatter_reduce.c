/* The reductions of scatter_elements and scatter_nd (scatter_reduce.h). */
#include "scatter_reduce.h"

#include "bcast.h"

#include <string.h>

#include "gather.cl.h"

static const char *const red_names[CG_SCATTER_N_RED] = {"none", "add", "mul", "max", "min"};

int cg_scatter_reduction(const char *s) {
    for (int k = 0; k < CG_SCATTER_N_RED; k++)
        if (s && !strcmp(s, red_names[k])) return k;
    return -1;
}

cg_op_status cg_scatter_check(cg_op_call *call, const char *s, cg_op_dtype x) {
    const int red = cg_scatter_reduction(s);
    if (red < 0)
        return cg_op_fail(call, "attribute reduction must be none, add, mul, max or min, got \"%s\"", s ? s : "");
    if (!cg_dtype_size((cg_dtype)x))
        return cg_op_fail(call, "input 0 (x) has unsupported dtype %s", cg_ops_dtype_name(x));
    if (red != CG_SCATTER_NONE && x != CG_F32 && x != CG_I32 && x != CG_I64)
        return cg_op_fail(call, "reduction %s needs x of f32, i32 or i64, got %s", red_names[red],
                          cg_ops_dtype_name(x));
    return CG_OP_OK;
}

/* o combined with u by reduction `red`, for element type T; sums and
 * products in UT (unsigned for integers: they wrap around, no UB); a NaN
 * already there wins max and min. */
#define COMBINE(T, UT, o, u, red)                                            \
    do {                                                                     \
        T *o_ = (T *)(o);                                                    \
        T u_;                                                                \
        memcpy(&u_, (u), sizeof u_);                                         \
        switch (red) {                                                       \
        case CG_SCATTER_ADD: *o_ = (T)((UT)*o_ + (UT)u_); break;             \
        case CG_SCATTER_MUL: *o_ = (T)((UT)*o_ * (UT)u_); break;             \
        case CG_SCATTER_MAX: *o_ = *o_ > u_ || *o_ != *o_ ? *o_ : u_; break; \
        default: *o_ = *o_ < u_ || *o_ != *o_ ? *o_ : u_; break;             \
        }                                                                    \
    } while (0)

void cg_scatter_combine(cg_op_dtype dt, int red, size_t b, int64_t n, char *o, const char *u) {
    if (red == CG_SCATTER_NONE) {
        memcpy(o, u, (size_t)n * b);
        return;
    }
    for (int64_t c = 0; c < n; c++, o += b, u += b) {
        if (dt == CG_F32) COMBINE(float, float, o, u, red);
        else if (dt == CG_I32) COMBINE(int32_t, uint32_t, o, u, red);
        else COMBINE(int64_t, uint64_t, o, u, red);
    }
}

cg_op_status cg_scatter_cl_copy_x(const cg_kernel_args *a, int wide, const char *topt) {
    static const char cp[] = "copy_elems";
    const int64_t nx = cg_desc_numel(&a->call->inputs[0]);
    cl_mem src = (cl_mem)a->in[0], dst = (cl_mem)a->out[0];
    if (nx == 0 || src == dst) return CG_OP_OK;
    cl_kernel kc = cg_ops_cl_kernel(a, cg_cl_gather, cp, wide, 0, topt);
    cl_long ln = nx;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(src), CG_OPS_CL_ARG(dst), CG_OPS_CL_ARG(ln)};
    if (!kc || cg_ops_cl_args(a, kc, cp, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, kc, NULL, nx, cg_ops_cl_work_group(a, kc, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

void cg_scatter_cl_options(char *buf, size_t size, const char *topt, cg_op_dtype dt, int red) {
    /* TA and TU serve a reduction only: the element type, and the type
     * of sums and products (the unsigned twin, so integers wrap) */
    const int fl = dt == CG_F32;
    snprintf(buf, size, "%s -DTA=%s -DTU=%s -DSC_RED=%d -DSC_FLOAT=%d", topt,
             red == CG_SCATTER_NONE ? "uint" : cg_bcast_cl_type(dt, 0),
             red == CG_SCATTER_NONE || fl ? (fl ? "float" : "uint") : cg_bcast_cl_type(dt, 1), red, fl);
}
