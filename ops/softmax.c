/* Normalisation along an axis: softmax and log_softmax with an optional
 * validity mask, and length_mask which builds such masks from lengths. */
#include "ops_common.h"

#include <math.h>
#include <string.h>

/* ---- softmax / log_softmax (x f32[...], mask i32? broadcastable to x) ---- */

enum { SOFTMAX_AXIS };

static const cg_attr_def softmax_attrs[] = {
    {.struct_size = sizeof(cg_attr_def), .name = "axis", .type = CG_ATTR_INT,
     .default_int = -1, .doc = "axis to normalise over; negative counts from the end"},
};

static cg_op_status softmax_infer_common(cg_op_call *call, const char *op) {
    const cg_tensor_desc *x = &call->inputs[0];
    char sx[128], sm[128];
    if (cg_expect_input(call, 0, CG_OP_F32, -1)) return CG_OP_ERROR;
    cg_ops_format_dims(sx, sizeof sx, x);
    if (x->ndim < 1)
        return cg_op_fail(call, "input 0 (x) must have at least 1 dim for %s, got %s", op, sx);
    int64_t axis = call->attrs[SOFTMAX_AXIS].i;
    if (cg_norm_axis(axis, x->ndim) < 0)
        return cg_op_fail(call, "axis %lld is out of range for x %s (%d dims)",
                          (long long)axis, sx, x->ndim);
    if (call->n_inputs > 1) {
        const cg_tensor_desc *m = &call->inputs[1];
        if (m->dtype != CG_OP_I32)
            return cg_op_fail(call, "input 1 (mask) must be i32 for %s", op);
        cg_ops_format_dims(sm, sizeof sm, m);
        int ok = m->ndim <= x->ndim;
        for (int i = 0; ok && i < m->ndim; i++) {
            int64_t md = m->dims[i], xd = x->dims[x->ndim - m->ndim + i];
            if (md != 1 && !cg_dim_compatible(md, xd)) ok = 0;
        }
        if (!ok)
            return cg_op_fail(call, "input 1 (mask) has shape %s, which does not broadcast "
                              "to x %s for %s", sm, sx, op);
    }
    call->outputs[0] = *x;
    return CG_OP_OK;
}

static cg_op_status softmax_infer(cg_op_call *call) {
    return softmax_infer_common(call, "softmax");
}

static cg_op_status log_softmax_infer(cg_op_call *call) {
    return softmax_infer_common(call, "log_softmax");
}

/*
 * One slice of n elements at stride `st`; `mask` (stride `mst`, possibly 0)
 * may be NULL. Sums are accumulated in double.
 */
static void softmax_slice(const float *x, float *y, int64_t n, int64_t st,
                          const int32_t *mask, int64_t mst, int log_out) {
    float mx = -INFINITY;
    int any = 0;
    for (int64_t j = 0; j < n; j++) {
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

static cg_op_status softmax_cpu_common(const cg_kernel_args *args, int log_out) {
    const cg_op_call *call = args->call;
    const cg_tensor_desc *x = &call->inputs[0];
    const float *px = args->in[0];
    float *py = args->out[0];
    const int32_t *pm = call->n_inputs > 1 ? args->in[1] : NULL;
    int nd = x->ndim;
    int axis = cg_norm_axis(call->attrs[SOFTMAX_AXIS].i, nd);
    int64_t outer = 1, n = x->dims[axis], inner = 1;
    for (int i = 0; i < axis; i++) outer *= x->dims[i];
    for (int i = axis + 1; i < nd; i++) inner *= x->dims[i];
    if (outer * n * inner == 0) return CG_OP_OK;
    /* Mask strides against x's dims (0 where the mask broadcasts). */
    int64_t ms[CG_MAX_DIMS] = {0};
    if (pm) {
        const cg_tensor_desc *m = &call->inputs[1];
        int64_t s = 1;
        for (int i = nd - 1; i >= 0; i--) {
            int k = m->ndim - nd + i;
            int64_t d = k >= 0 ? m->dims[k] : 1;
            ms[i] = d == 1 ? 0 : s;
            s *= d;
        }
    }
    for (int64_t o = 0; o < outer; o++) {
        int64_t mo = 0;
        if (pm) {
            int64_t r = o;
            for (int i = axis - 1; i >= 0; i--) {
                mo += (r % x->dims[i]) * ms[i];
                r /= x->dims[i];
            }
        }
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = (o * n) * inner + in, mb = mo;
            if (pm) {
                int64_t r = in;
                for (int i = nd - 1; i > axis; i--) {
                    mb += (r % x->dims[i]) * ms[i];
                    r /= x->dims[i];
                }
            }
            softmax_slice(px + base, py + base, n, inner, pm ? pm + mb : NULL, ms[axis], log_out);
        }
    }
    return CG_OP_OK;
}

static cg_op_status softmax_cpu(const cg_kernel_args *a) { return softmax_cpu_common(a, 0); }
static cg_op_status log_softmax_cpu(const cg_kernel_args *a) { return softmax_cpu_common(a, 1); }

static const cg_kernel_def softmax_kernels[] = {
    {sizeof(cg_kernel_def), CG_BACKEND_CPU, NULL, softmax_cpu},
};
static const cg_kernel_def log_softmax_kernels[] = {
    {sizeof(cg_kernel_def), CG_BACKEND_CPU, NULL, log_softmax_cpu},
};
static const char *const softmax_inputs[] = {"x", "mask", NULL};

const cg_op_def cg_op_softmax = {
    .struct_size = sizeof(cg_op_def),
    .name = "softmax",
    .doc = "Softmax of f32 x along axis (default -1): exp(x - max) / sum(exp(x - "
           "max)), with the maximum subtracted for stability and the sum kept in "
           "double precision. Optional i32 mask, the same shape as x or "
           "broadcastable to it (NumPy rules): mask != 0 marks valid positions; "
           "invalid ones are left out of the max and the sum and give 0. A slice "
           "with no valid position (or whose valid entries are all -inf) gives "
           "all 0, never NaN. A NaN in a slice makes that slice NaN. Output has "
           "x's shape.",
    .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .input_names = softmax_inputs,
    .attrs = softmax_attrs, .n_attrs = 1,
    .infer = softmax_infer,
    .kernels = softmax_kernels, .n_kernels = 1,
};

const cg_op_def cg_op_log_softmax = {
    .struct_size = sizeof(cg_op_def),
    .name = "log_softmax",
    .doc = "Logarithm of softmax of f32 x along axis (default -1), computed as x "
           "- (max + log(sum(exp(x - max)))) in double precision. Optional i32 "
           "mask, the same shape as x or broadcastable to it: mask != 0 marks "
           "valid positions; invalid ones give -inf. A slice with no valid "
           "position (or whose valid entries are all -inf) gives all -inf. A NaN "
           "in a slice makes that slice NaN. Output has x's shape.",
    .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .input_names = softmax_inputs,
    .attrs = softmax_attrs, .n_attrs = 1,
    .infer = log_softmax_infer,
    .kernels = log_softmax_kernels, .n_kernels = 1,
};

/* ---- length_mask(lengths i32[B], like [B, S, ...]) -> i32[B, S] ---- */

static cg_op_status length_mask_infer(cg_op_call *call) {
    const cg_tensor_desc *len = &call->inputs[0], *like = &call->inputs[1];
    char sl[128], sk[128];
    if (cg_expect_input(call, 0, CG_OP_I32, 1)) return CG_OP_ERROR;
    cg_ops_format_dims(sl, sizeof sl, len);
    cg_ops_format_dims(sk, sizeof sk, like);
    if (like->ndim < 2)
        return cg_op_fail(call, "input 1 (like) must have at least 2 dims [B, S, ...], got %s",
                          sk);
    if (!cg_dim_compatible(len->dims[0], like->dims[0]))
        return cg_op_fail(call, "input 0 (lengths) has shape %s, expected [B] with B from "
                          "like %s", sl, sk);
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
        if (l < 0 || l > s)
            return cg_op_fail(call, "length %lld of batch row %lld is outside [0, %lld]",
                              (long long)l, (long long)i, (long long)s);
        for (int64_t j = 0; j < s; j++) out[i * s + j] = j < l;
    }
    return CG_OP_OK;
}

static const cg_kernel_def length_mask_kernels[] = {
    {sizeof(cg_kernel_def), CG_BACKEND_CPU, NULL, length_mask_cpu},
};
static const char *const length_mask_inputs[] = {"lengths", "like", NULL};

const cg_op_def cg_op_length_mask = {
    .struct_size = sizeof(cg_op_def),
    .name = "length_mask",
    .doc = "Builds a padding mask from sequence lengths: for i32 lengths [B] and "
           "a tensor like [B, S, ...] of any dtype (only its shape is used), "
           "output i32 [B, S] with out[b, s] = 1 if s < lengths[b] else 0. A "
           "length below 0 or above S is a run-time error naming the batch row.",
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .input_names = length_mask_inputs,
    .infer = length_mask_infer,
    .kernels = length_mask_kernels, .n_kernels = 1,
};
