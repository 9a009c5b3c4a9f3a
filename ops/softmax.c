/* Normalisation along an axis: softmax and log_softmax with an optional
 * validity mask, and length_mask which builds such masks from lengths. */
#include "ops_cl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_math.h"
#include "cpu/cpu_pool.h"
#include "cpu/cpu_scan.h"

#include "softmax.cl.h"

/* ---- softmax / log_softmax (x f32[...], mask i32? broadcastable to x) ---- */

enum { SOFTMAX_AXIS };

static const cg_attr_def softmax_attrs[] = {
    CG_ATTR(.name = "axis", .type = CG_ATTR_INT, .default_int = -1,
            .doc = "axis to normalise over; negative counts from the end"),
};

static cg_op_status softmax_infer_common(cg_op_call *call, const char *op) {
    const cg_tensor_desc *x = &call->inputs[0];
    char sx[128], sm[128];
    if (cg_expect_input(call, 0, CG_OP_F32, -1)) return CG_OP_ERROR;
    cg_ops_format_dims(sx, sizeof sx, x);
    if (x->ndim < 1) return cg_op_fail(call, "input 0 (x) must have at least 1 dim for %s, got %s", op, sx);
    int64_t axis = call->attrs[SOFTMAX_AXIS].i;
    if (cg_norm_axis(axis, x->ndim) < 0)
        return cg_op_fail(call, "axis %lld is out of range for x %s (%d dims)", (long long)axis, sx, x->ndim);
    if (call->n_inputs > 1) {
        const cg_tensor_desc *m = &call->inputs[1];
        if (m->dtype != CG_OP_I32) return cg_op_fail(call, "input 1 (mask) must be i32 for %s", op);
        cg_ops_format_dims(sm, sizeof sm, m);
        int ok = m->ndim <= x->ndim;
        for (int i = 0; ok && i < m->ndim; i++) {
            int64_t md = m->dims[i], xd = x->dims[x->ndim - m->ndim + i];
            if (md != 1 && !cg_dim_compatible(md, xd)) ok = 0;
        }
        if (!ok)
            return cg_op_fail(call,
                              "input 1 (mask) has shape %s, which does not broadcast "
                              "to x %s for %s",
                              sm, sx, op);
    }
    call->outputs[0] = *x;
    return CG_OP_OK;
}

static cg_op_status softmax_infer(cg_op_call *call) { return softmax_infer_common(call, "softmax"); }

static cg_op_status log_softmax_infer(cg_op_call *call) { return softmax_infer_common(call, "log_softmax"); }

/* A contiguous unmasked slice with its maximum mx (finite or +inf), on the
 * CPU backend's vector functions; as precise as the double path below. */
static void softmax_contiguous(const float *x, float *y, int64_t n, float mx, int log_out) {
    if (log_out) {
        const double sum = cg_cpu_exp_shift_sum(x, mx, NULL, (size_t)n);
        cg_cpu_add_round(x, -((double)mx + log(sum)), y, (size_t)n);
        return;
    }
    const double sum = cg_cpu_exp_shift_sum(x, mx, y, (size_t)n);
    cg_cpu_mul_round(y, 1.0 / sum, y, (size_t)n);
}

/*
 * One slice of n elements at stride `st`; `mask` (stride `mst`, possibly 0)
 * may be NULL. Sums are accumulated in double.
 */
static void softmax_slice(const float *x, float *y, int64_t n, int64_t st, const int32_t *mask, int64_t mst,
                          int log_out) {
    float mx = -INFINITY;
    int any = 0;
    if (st == 1 && !mask) {
        mx = cg_cpu_max(x, (size_t)n);
        any = n > 0;
    }
    for (int64_t j = 0; !(st == 1 && !mask) && j < n; j++) {
        if (mask && !mask[j * mst]) continue;
        float v = x[j * st];
        any = 1;
        if (v > mx || v != v) mx = v;
        if (mx != mx) break; /* NaN: the whole slice is NaN */
    }
    if (!any || mx == -INFINITY) {
        /* Nothing valid (or every valid entry is -inf): an all-zero
         * distribution instead of 0/0. */
        const float fill = log_out ? -INFINITY : 0.0f;
        for (int64_t j = 0; j < n; j++) y[j * st] = fill;
        return;
    }
    if (st == 1 && !mask) {
        softmax_contiguous(x, y, n, mx, log_out);
        return;
    }
    const double m = mx;
    double sum = 0.0;
    if (log_out) {
        for (int64_t j = 0; j < n; j++)
            if (!mask || mask[j * mst]) sum += exp((double)x[j * st] - m);
        const double lse = m + log(sum);
        for (int64_t j = 0; j < n; j++)
            y[j * st] = (!mask || mask[j * mst]) ? (float)((double)x[j * st] - lse) : -INFINITY;
        return;
    }
    for (int64_t j = 0; j < n; j++) {
        if (mask && !mask[j * mst]) {
            y[j * st] = 0.0f;
            continue;
        }
        double e = exp((double)x[j * st] - m);
        sum += e;
        y[j * st] = (float)e;
    }
    const double inv = 1.0 / sum;
    for (int64_t j = 0; j < n; j++) y[j * st] = (float)((double)y[j * st] * inv);
}

/* Element strides of the mask (input 1) against x's dims, 0 where it
 * broadcasts; all 0 without a mask. */
static void mask_strides(const cg_op_call *call, int64_t *ms) {
    const int nd = call->inputs[0].ndim;
    memset(ms, 0, sizeof(int64_t) * CG_MAX_DIMS);
    if (call->n_inputs < 2) return;
    const cg_tensor_desc *m = &call->inputs[1];
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        int k = m->ndim - nd + i;
        int64_t d = k >= 0 ? m->dims[k] : 1;
        ms[i] = d == 1 ? 0 : s;
        s *= d;
    }
}

/* The slices of outer indices [begin, end), for cg_cpu_parallel_for. */
typedef struct softmax_job {
    const cg_tensor_desc *x;
    const float *px;
    float *py;
    const int32_t *pm;
    int64_t ms[CG_MAX_DIMS];
    int64_t n, inner;
    int axis, log_out;
} softmax_job;

static void softmax_rows(void *p, size_t begin, size_t end) {
    const softmax_job *j = p;
    const cg_tensor_desc *x = j->x;
    const int nd = x->ndim, axis = j->axis;
    const int64_t n = j->n, inner = j->inner;
    if (!j->pm && inner == 1 && n <= 16 && !j->log_out) {
        /* Short contiguous rows, several at a time: the same bits. */
        cg_cpu_softmax_short(j->px + (int64_t)begin * n, j->py + (int64_t)begin * n, end - begin, (size_t)n);
        return;
    }
    for (int64_t o = (int64_t)begin; o < (int64_t)end; o++) {
        int64_t mo = 0;
        if (j->pm) {
            int64_t r = o;
            for (int i = axis - 1; i >= 0; i--) {
                mo += (r % x->dims[i]) * j->ms[i];
                r /= x->dims[i];
            }
        }
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = (o * n) * inner + in, mb = mo;
            if (j->pm) {
                int64_t r = in;
                for (int i = nd - 1; i > axis; i--) {
                    mb += (r % x->dims[i]) * j->ms[i];
                    r /= x->dims[i];
                }
            }
            softmax_slice(j->px + base, j->py + base, n, inner, j->pm ? j->pm + mb : NULL, j->ms[axis], j->log_out);
        }
    }
}

static cg_op_status softmax_cpu_common(const cg_kernel_args *args, int log_out) {
    const cg_op_call *call = args->call;
    const cg_tensor_desc *x = &call->inputs[0];
    softmax_job j = {.x = x,
                     .px = args->in[0],
                     .py = args->out[0],
                     .pm = call->n_inputs > 1 ? args->in[1] : NULL,
                     .log_out = log_out};
    j.axis = cg_norm_axis(call->attrs[SOFTMAX_AXIS].i, x->ndim);
    int64_t outer;
    j.n = x->dims[j.axis];
    cg_desc_split(x, j.axis, &outer, &j.inner);
    if (outer * j.n * j.inner == 0) return CG_OP_OK;
    mask_strides(call, j.ms);
    /* Chunks of at least ~16K elements: smaller ones cost more to hand over
     * than they take. */
    const int64_t per_outer = j.n * j.inner;
    const size_t grain = (size_t)(per_outer >= 16384 ? 1 : 16384 / per_outer);
    cg_cpu_parallel_for((size_t)outer, grain, softmax_rows, &j);
    return CG_OP_OK;
}

static cg_op_status softmax_cpu(const cg_kernel_args *a) { return softmax_cpu_common(a, 0); }
static cg_op_status log_softmax_cpu(const cg_kernel_args *a) { return softmax_cpu_common(a, 1); }

/*
 * OpenCL: long slices (more than 32 elements) run softmax_wg, one work-group
 * per slice reducing in local memory, when the axis is the last one or when
 * there are few slices; otherwise softmax_item runs one work-item per slice.
 */
static cg_op_status softmax_cl_common(const cg_kernel_args *args, int log_out) {
    const cg_op_call *call = args->call;
    const cg_tensor_desc *x = &call->inputs[0];
    const int has_mask = call->n_inputs > 1;
    int nd = x->ndim;
    int axis = cg_norm_axis(call->attrs[SOFTMAX_AXIS].i, nd);
    int64_t outer, n = x->dims[axis], inner;
    cg_desc_split(x, axis, &outer, &inner);
    int64_t total = outer * n * inner, slices = outer * inner;
    if (total == 0) return CG_OP_OK;
    /* Mask strides against x's dims, then the dims before and after the
     * axis, innermost first. */
    int64_t ms[CG_MAX_DIMS];
    mask_strides(call, ms);
    cl_long8 od, oms, id, ims;
    for (int i = 0; i < 8; i++) {
        od.s[i] = id.s[i] = 1;
        oms.s[i] = ims.s[i] = 0;
    }
    cl_int ond = axis, ind = nd - 1 - axis;
    for (int i = 0; i < ond; i++) {
        od.s[i] = x->dims[axis - 1 - i];
        oms.s[i] = ms[axis - 1 - i];
    }
    for (int i = 0; i < ind; i++) {
        id.s[i] = x->dims[nd - 1 - i];
        ims.s[i] = ms[nd - 1 - i];
    }
    const int use_wg = n > 32 && (inner == 1 || slices < 256);
    const char *name = use_wg ? "softmax_wg" : "softmax_item";
    cl_kernel k = cg_ops_cl_kernel(args, cg_cl_softmax, name, total > INT32_MAX, 0, NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem px = (cl_mem)args->in[0], py = (cl_mem)args->out[0];
    cl_mem pm = has_mask ? (cl_mem)args->in[1] : px; /* never read without a mask */
    cl_int hm = has_mask, lo = log_out;
    cl_long ls = slices, ln = n, li = inner, lmst = ms[axis];
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(px),  CG_OPS_CL_ARG(py),  CG_OPS_CL_ARG(pm),  CG_OPS_CL_ARG(hm),
                                     CG_OPS_CL_ARG(ls),  CG_OPS_CL_ARG(ln),  CG_OPS_CL_ARG(li),  CG_OPS_CL_ARG(lmst),
                                     CG_OPS_CL_ARG(ond), CG_OPS_CL_ARG(od),  CG_OPS_CL_ARG(oms), CG_OPS_CL_ARG(ind),
                                     CG_OPS_CL_ARG(id),  CG_OPS_CL_ARG(ims), CG_OPS_CL_ARG(lo)};
    if (cg_ops_cl_args(args, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    size_t local = cg_ops_cl_work_group(args, k, CG_OPS_CL_MAX_WORK_GROUP, 1), global;
    if (use_wg) {
        /* No wider than the slice needs (a power of two >= 32). */
        local = cg_ops_cl_fit_work_group(local, n, 32);
        if (cg_ops_cl_arg(args, k, name, 15, local * sizeof(cl_float), NULL)) return CG_OP_ERROR;
        global = (size_t)slices * local;
    } else {
        global = (size_t)slices;
    }
    return cg_ops_cl_launch(args, k, NULL, 1, &global, &local);
}

static cg_op_status softmax_cl(const cg_kernel_args *a) { return softmax_cl_common(a, 0); }
static cg_op_status log_softmax_cl(const cg_kernel_args *a) { return softmax_cl_common(a, 1); }

/* ---- conformance cases ---- */

#define D(...) \
    { __VA_ARGS__ }
/* x f32 in [-2, 2] (or [-30, 30] where noted), no mask. */
#define SM_X(nd, d, attrs) \
    { 1, {{CG_OP_F32, nd, d, -2, 2}}, attrs }
/* x with an i32 mask of 0s and 1s. */
#define SM_XM(nd, d, mnd, md, attrs) \
    { 2, {{CG_OP_F32, nd, d, -2, 2}, {CG_OP_I32, mnd, md, 0, 1}}, attrs }

/*
 * Smallest first: single elements, short rows (one work-item per slice),
 * axes other than the last, masks of x's shape and broadcast masks (a
 * [B, 1] mask masks whole rows, so some slices have no valid position), a
 * 0-d mask, long rows (one work-group per slice), and an inner axis with few
 * slices (work-group over a strided slice).
 */
static const cg_ops_case sm_cases[] = {
    SM_X(1, D(1), NULL),
    SM_X(1, D(3), NULL),
    SM_XM(1, D(3), 1, D(3), NULL),
    SM_X(2, D(2, 17), NULL),
    SM_X(2, D(17, 3), "axis: 0"),
    SM_XM(2, D(3, 5), 0, D(0), NULL),
    SM_XM(2, D(8, 5), 2, D(8, 1), NULL),
    SM_XM(2, D(8, 5), 1, D(5), "axis: 0"),
    SM_X(3, D(2, 3, 5), "axis: 1"),
    SM_XM(3, D(2, 3, 5), 2, D(3, 1), "axis: 1"),
    SM_XM(3, D(2, 3, 5), 3, D(2, 3, 5), "axis: -3"),
    SM_XM(4, D(2, 3, 4, 5), 4, D(2, 1, 4, 1), "axis: 2"),
    {1, {{CG_OP_F32, 2, D(4, 17), -30, 30}}, NULL},
    SM_XM(3, D(2, 4, 257), 3, D(2, 1, 257), NULL),
    /* groups of 64 and 128 work-items over slices that do not fill them
     * (PoCL once stored past the end of [2, 4, 100]) */
    SM_X(3, D(2, 4, 100), NULL),
    SM_X(2, D(3, 33), NULL),
    SM_XM(2, D(5, 50), 2, D(5, 1), NULL),
    SM_X(2, D(1, 128), NULL),
    SM_XM(2, D(16, 257), 2, D(16, 1), NULL),
    SM_X(2, D(4, 1000), NULL),
    SM_XM(2, D(4, 1000), 2, D(4, 1000), NULL),
    SM_X(2, D(1000, 3), "axis: 0"),
    SM_X(2, D(3, 1000), "axis: 0"),
    SM_XM(3, D(10, 1000, 3), 2, D(1000, 1), "axis: 1"),
    SM_X(2, D(100, 1000), NULL),
    SM_XM(2, D(100, 1000), 2, D(100, 1), NULL),
};

static int32_t softmax_conform(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= (int32_t)(sizeof sm_cases / sizeof sm_cases[0])) return 0;
    cg_ops_fill_case(&sm_cases[index], 1, c);
    return 1;
}

static const cg_kernel_def softmax_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = softmax_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = softmax_cl),
};
static const cg_kernel_def log_softmax_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = log_softmax_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = log_softmax_cl),
};
static const char *const softmax_inputs[] = {"x", "mask", NULL};

const cg_op_def cg_op_softmax =
    CG_OP(.name = "softmax",
          .doc = "Softmax of f32 x along axis (default -1): exp(x - max) / sum(exp(x - "
                 "max)), with the maximum subtracted for stability and the sum kept in "
                 "double precision (single precision on OpenCL devices). Optional i32 mask, the same shape as x or "
                 "broadcastable to it (NumPy rules): mask != 0 marks valid positions; "
                 "invalid ones are left out of the max and the sum and give 0. A slice "
                 "with no valid position (or whose valid entries are all -inf) gives "
                 "all 0, never NaN. A NaN in a slice makes that slice NaN. Output has "
                 "x's shape.",
          .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .input_names = softmax_inputs,
          CG_ATTRS(softmax_attrs), .infer = softmax_infer, CG_KERNELS(softmax_kernels),
          .conform_case = softmax_conform);

const cg_op_def cg_op_log_softmax =
    CG_OP(.name = "log_softmax",
          .doc = "Logarithm of softmax of f32 x along axis (default -1), computed as x "
                 "- (max + log(sum(exp(x - max)))) in double precision (single precision "
                 "on OpenCL devices). Optional i32 "
                 "mask, the same shape as x or broadcastable to it: mask != 0 marks "
                 "valid positions; invalid ones give -inf. A slice with no valid "
                 "position (or whose valid entries are all -inf) gives all -inf. A NaN "
                 "in a slice makes that slice NaN. Output has x's shape.",
          .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .input_names = softmax_inputs,
          CG_ATTRS(softmax_attrs), .infer = log_softmax_infer, CG_KERNELS(log_softmax_kernels),
          .conform_case = softmax_conform);

/* ---- length_mask(lengths i32[B], like [B, S, ...]) -> i32[B, S] ---- */

static cg_op_status length_mask_infer(cg_op_call *call) {
    const cg_tensor_desc *len = &call->inputs[0], *like = &call->inputs[1];
    char sl[128], sk[128];
    if (cg_expect_input(call, 0, CG_OP_I32, 1)) return CG_OP_ERROR;
    cg_ops_format_dims(sl, sizeof sl, len);
    cg_ops_format_dims(sk, sizeof sk, like);
    if (like->ndim < 2) return cg_op_fail(call, "input 1 (like) must have at least 2 dims [B, S, ...], got %s", sk);
    if (!cg_dim_compatible(len->dims[0], like->dims[0]))
        return cg_op_fail(call,
                          "input 0 (lengths) has shape %s, expected [B] with B from "
                          "like %s",
                          sl, sk);
    cg_tensor_desc *o = &call->outputs[0];
    o->dtype = CG_OP_I32;
    o->ndim = 2;
    o->dims[0] = cg_dim_unify(len->dims[0], like->dims[0]);
    o->dims[1] = like->dims[1];
    return CG_OP_OK;
}

static cg_op_status length_mask_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const int32_t *len = a->in[0];
    int32_t *out = a->out[0];
    int64_t b = call->outputs[0].dims[0], s = call->outputs[0].dims[1];
    for (int64_t i = 0; i < b; i++) {
        int64_t l = len[i];
        if (l < 0 || l > s) return cg_op_fail_range(call, 0, "lengths", l, i, 0, s);
        for (int64_t j = 0; j < s; j++) out[i * s + j] = j < l;
    }
    return CG_OP_OK;
}

static cg_op_status length_mask_cl(const cg_kernel_args *a) {
    static const char name[] = "length_mask";
    int64_t b = a->call->outputs[0].dims[0], s = a->call->outputs[0].dims[1], total = b * s;
    if (cg_ops_cl_check_range(a, 0, b, 0, s)) return CG_OP_ERROR;
    if (total == 0) return CG_OP_OK;
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_softmax, name, total > INT32_MAX, 0, NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem len = (cl_mem)a->in[0], out = (cl_mem)a->out[0];
    cl_long lt = total, ls = s;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(len), CG_OPS_CL_ARG(out), CG_OPS_CL_ARG(lt), CG_OPS_CL_ARG(ls)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, total, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 1));
}

/* Lengths in [0, S] (the CPU kernel rejects others); like's values are
 * unused. */
#define LM(b, s) \
    { 2, {{CG_OP_I32, 1, D(b), 0, s}, {CG_OP_F32, 2, D(b, s), -2, 2}}, NULL }
static const cg_ops_case lm_cases[] = {
    LM(1, 1),
    LM(3, 3),
    LM(3, 17),
    LM(17, 3),
    {2, {{CG_OP_I32, 1, D(2), 0, 5}, {CG_OP_F32, 3, D(2, 5, 4), -2, 2}}, NULL},
    {2, {{CG_OP_I32, 1, D(5), 0, 7}, {CG_OP_I32, 3, D(5, 7, 3), 0, 9}}, NULL},
    LM(257, 3),
    LM(4, 1000),
    LM(100, 1000),
};

/* After the valid cases: lengths past S, then negative lengths (errors). */
static int32_t length_mask_conform(int32_t index, cg_conform_case *c) {
    const int32_t n = (int32_t)(sizeof lm_cases / sizeof lm_cases[0]);
    if (index >= n && index < n + 2) {
        cg_ops_fill_case(&lm_cases[2], 1, c); /* lengths [3], like [3, 17] */
        const double S = (double)c->inputs[1].dims[1];
        return index == n ? cg_ops_error_case(c, 0, S + 1, S + 9) : cg_ops_error_case(c, 0, -3, -1);
    }
    if (index < 0 || index >= n) return 0;
    cg_ops_fill_case(&lm_cases[index], 1, c);
    return 1;
}

static const cg_kernel_def length_mask_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = length_mask_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = length_mask_cl, .flags = CG_KERNEL_FLAG_CHECKS),
};
static const char *const length_mask_inputs[] = {"lengths", "like", NULL};

const cg_op_def cg_op_length_mask =
    CG_OP(.name = "length_mask",
          .doc = "Builds a padding mask from sequence lengths: for i32 lengths [B] and "
                 "a tensor like [B, S, ...] of any dtype (only its shape is used), "
                 "output i32 [B, S] with out[b, s] = 1 if s < lengths[b] else 0. A "
                 "length below 0 or above S is a run-time error naming the batch row on "
                 "every device.",
          .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .input_names = length_mask_inputs,
          .infer = length_mask_infer, CG_KERNELS(length_mask_kernels), .conform_case = length_mask_conform);
