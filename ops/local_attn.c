/* Local attention (seq2seq spec, section Equations, "Weights"): window_mask
 * builds the mask of valid keys of a window around a center (i < src_len
 * and |i - p| <= D), for softmax's mask input, and local_gaussian applies
 * the predictive variant's Gaussian a_i *= exp(-(i - p)^2 / (2 (D/2)^2))
 * after the softmax (no renormalisation). The center p is a per-row f32
 * (the decoder step t for local.monotonic, src_len * sigmoid(...) for
 * local.predictive), computed by other ops. */
#include "ops_cl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "local_attn.cl.h"

enum { LA_D };

/* Checks attribute D against [lo, hi] (hi INT64_MAX: no upper bound); `why`
 * is appended to the message. */
static cg_op_status la_check_d(const cg_op_call *call, int64_t lo, int64_t hi, const char *why) {
    int64_t d = call->attrs[LA_D].i;
    if (d < lo && hi == INT64_MAX)
        return cg_op_fail(call, "attribute D must be >= %lld%s, got %lld", (long long)lo, why, (long long)d);
    if (d < lo || d > hi)
        return cg_op_fail(call, "attribute D must be in [%lld, %lld]%s, got %lld", (long long)lo, (long long)hi, why,
                          (long long)d);
    return CG_OP_OK;
}

/* Checks that input i (named `name`) has dtype dt and one dim [B]
 * compatible with `b` (a dim of input `from`, shown as `from_dims`). */
static cg_op_status la_expect_row_vector(const cg_op_call *call, int i, const char *name, cg_op_dtype dt, int64_t b,
                                         const char *from, const char *from_dims) {
    const cg_tensor_desc *d = &call->inputs[i];
    char s[128];
    if (d->dtype != dt)
        return cg_op_fail(call, "input %d (%s) must be %s, got %s", i, name, cg_ops_dtype_name(dt),
                          cg_ops_dtype_name(d->dtype));
    cg_ops_format_dims(s, sizeof s, d);
    if (d->ndim != 1 || !cg_dim_compatible(d->dims[0], b))
        return cg_op_fail(call, "input %d (%s) has shape %s, expected [B] with B from %s %s", i, name, s, from,
                          from_dims);
    return CG_OP_OK;
}

/* ---- window_mask(lengths i32[B], center f32[B], like [B, S, ...]) -> i32[B, S] ---- */

/* Largest D of window_mask: the OpenCL kernel reproduces the CPU's double
 * comparison exactly below 2^31 (ops/cl/local_attn.cl). */
#define WM_MAX_D INT32_MAX

static cg_op_status window_mask_infer(cg_op_call *call) {
    const cg_tensor_desc *len = &call->inputs[0], *cen = &call->inputs[1], *like = &call->inputs[2];
    char sk[128];
    if (la_check_d(call, 0, WM_MAX_D, "")) return CG_OP_ERROR;
    cg_ops_format_dims(sk, sizeof sk, like);
    if (like->ndim < 2) return cg_op_fail(call, "input 2 (like) must have at least 2 dims [B, S, ...], got %s", sk);
    if (la_expect_row_vector(call, 0, "lengths", CG_OP_I32, like->dims[0], "like", sk) ||
        la_expect_row_vector(call, 1, "center", CG_OP_F32, like->dims[0], "like", sk))
        return CG_OP_ERROR;
    if (!cg_dim_compatible(len->dims[0], cen->dims[0])) {
        char sl[128], sc[128];
        cg_ops_format_dims(sl, sizeof sl, len);
        cg_ops_format_dims(sc, sizeof sc, cen);
        return cg_op_fail(call, "input 0 (lengths) %s and input 1 (center) %s disagree on B", sl, sc);
    }
    cg_tensor_desc *o = &call->outputs[0];
    memset(o, 0, sizeof *o);
    o->dtype = CG_OP_I32;
    o->ndim = 2;
    o->dims[0] = cg_dim_unify(like->dims[0], cg_dim_unify(len->dims[0], cen->dims[0]));
    o->dims[1] = like->dims[1];
    return CG_OP_OK;
}

static cg_op_status window_mask_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const int32_t *len = a->in[0];
    const float *cen = a->in[1];
    int32_t *out = a->out[0];
    const int64_t b = call->outputs[0].dims[0], s = call->outputs[0].dims[1];
    const double d = (double)call->attrs[LA_D].i;
    for (int64_t r = 0; r < b; r++) {
        const int64_t l = len[r];
        if (l < 0 || l > s) return cg_op_fail_range(call, 0, "lengths", l, r, 0, s);
        const double c = (double)cen[r];
        for (int64_t i = 0; i < s; i++) out[r * s + i] = i < l && fabs((double)i - c) <= d;
    }
    return CG_OP_OK;
}

/* Half the spacing of doubles just above d (0 for d = 0): how far the
 * CPU's rounded difference (double)i - (double)c can be pulled back onto
 * +-d (see wm_in_window in ops/cl/local_attn.cl). d < 2^31: a normal float. */
static float wm_tie(int64_t d) {
    if (d <= 0) return 0.0f;
    int k = 0;
    while (k < 62 && (d >> (k + 1)) != 0) k++;
    return ldexpf(1.0f, k - 53);
}

static cg_op_status window_mask_cl(const cg_kernel_args *a) {
    static const char name[] = "window_mask";
    const int64_t b = a->call->outputs[0].dims[0], s = a->call->outputs[0].dims[1], total = b * s;
    if (cg_ops_cl_check_range(a, 0, b, 0, s)) return CG_OP_ERROR;
    if (total == 0) return CG_OP_OK;
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_local_attn, name, total > INT32_MAX, 0, NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem len = (cl_mem)a->in[0], cen = (cl_mem)a->in[1], out = (cl_mem)a->out[0];
    cl_long lt = total, ls = s, ld = a->call->attrs[LA_D].i;
    cl_float t = wm_tie(ld);
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(len), CG_OPS_CL_ARG(cen), CG_OPS_CL_ARG(out), CG_OPS_CL_ARG(lt),
                                     CG_OPS_CL_ARG(ls),  CG_OPS_CL_ARG(ld),  CG_OPS_CL_ARG(t)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, total, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* ---- local_gaussian(a f32[B, S], center f32[B]) -> f32[B, S] ---- */

static cg_op_status local_gaussian_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *cen = &call->inputs[1];
    char sa[128];
    if (la_check_d(call, 1, INT64_MAX, " (D = 0 would divide by zero: sigma = D / 2)")) return CG_OP_ERROR;
    if (x->dtype != CG_OP_F32) return cg_op_fail(call, "input 0 (a) must be f32, got %s", cg_ops_dtype_name(x->dtype));
    cg_ops_format_dims(sa, sizeof sa, x);
    if (x->ndim != 2) return cg_op_fail(call, "input 0 (a) must have 2 dims [B, S], got %s", sa);
    if (la_expect_row_vector(call, 1, "center", CG_OP_F32, x->dims[0], "a", sa)) return CG_OP_ERROR;
    call->outputs[0] = *x;
    call->outputs[0].dims[0] = cg_dim_unify(x->dims[0], cen->dims[0]);
    return CG_OP_OK;
}

/* 2 sigma^2 with sigma = D / 2, in float, as both kernels use it. */
static float lg_denom(int64_t d) {
    const float sigma = (float)d * 0.5f;
    return 2.0f * sigma * sigma;
}

static cg_op_status local_gaussian_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const float *x = a->in[0], *cen = a->in[1];
    float *out = a->out[0];
    const int64_t b = call->outputs[0].dims[0], s = call->outputs[0].dims[1];
    const float denom = lg_denom(call->attrs[LA_D].i);
    for (int64_t r = 0; r < b; r++) {
        const float c = cen[r];
        for (int64_t i = 0; i < s; i++) {
            const float d = (float)i - c;
            out[r * s + i] = x[r * s + i] * expf(-(d * d) / denom);
        }
    }
    return CG_OP_OK;
}

static cg_op_status local_gaussian_cl(const cg_kernel_args *a) {
    static const char name[] = "local_gaussian";
    const int64_t b = a->call->outputs[0].dims[0], s = a->call->outputs[0].dims[1], total = b * s;
    if (total == 0) return CG_OP_OK;
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_local_attn, name, total > INT32_MAX, 0, NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem x = (cl_mem)a->in[0], cen = (cl_mem)a->in[1], out = (cl_mem)a->out[0];
    cl_long lt = total, ls = s;
    cl_float denom = lg_denom(a->call->attrs[LA_D].i);
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(x),  CG_OPS_CL_ARG(cen), CG_OPS_CL_ARG(out),
                                     CG_OPS_CL_ARG(lt), CG_OPS_CL_ARG(ls),  CG_OPS_CL_ARG(denom)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, total, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* ---- conformance cases ---- */

#define DIMS(...) \
    { __VA_ARGS__ }
/* window_mask: lengths in [0, S] (the CPU kernel rejects others), centers
 * in [-3, S + 3]; like's values are unused. */
#define WM(b, s, attrs)                                                                                              \
    {                                                                                                                \
        3, {{CG_OP_I32, 1, DIMS(b), 0, s}, {CG_OP_F32, 1, DIMS(b), -3, (s) + 3}, {CG_OP_F32, 2, DIMS(b, s), -2, 2}}, \
            attrs                                                                                                    \
    }
/* Centers within a few 1e-16 of 0, where the rounding of the CPU's double
 * difference decides keys at distance exactly D (D = 1, 2: the spacing of
 * doubles above D is 2^-52 or 2^-51). */
#define WM_TINY(b, s, attrs)                                                                                           \
    {                                                                                                                  \
        3, {{CG_OP_I32, 1, DIMS(b), 0, s}, {CG_OP_F32, 1, DIMS(b), -4e-16, 4e-16}, {CG_OP_F32, 2, DIMS(b, s), -2, 2}}, \
            attrs                                                                                                      \
    }

static const cg_ops_case wm_cases[] = {
    WM(1, 1, "D: 0"),
    WM(1, 1, "D: 1"),
    WM(3, 3, "D: 0"),
    WM(3, 3, "D: 1"),
    WM(3, 17, "D: 2"),
    WM(17, 3, "D: 1"),
    WM(17, 17, "D: 0"),
    WM(17, 17, "D: 2"),
    WM(17, 17, "D: 5"),
    WM_TINY(17, 3, "D: 1"),
    WM_TINY(17, 5, "D: 2"),
    /* like of 3 dims and i32 */
    {3, {{CG_OP_I32, 1, DIMS(5), 0, 7}, {CG_OP_F32, 1, DIMS(5), -3, 10}, {CG_OP_I32, 3, DIMS(5, 7, 3), 0, 9}}, "D: 2"},
    WM(1, 1000, "D: 5"),
    WM(3, 1000, "D: 1"),
    WM(4, 1000, "D: 2"),
    WM(3, 1000, "D: 300"),
    WM(17, 1000, "D: 5"),
};

/* After the valid cases: lengths past S, then negative lengths (errors). */
static int32_t window_mask_conform(int32_t index, cg_conform_case *c) {
    const int32_t n = (int32_t)(sizeof wm_cases / sizeof wm_cases[0]);
    if (index >= n && index < n + 2) {
        cg_ops_fill_case(&wm_cases[4], 1, c);
        const double S = (double)c->inputs[2].dims[1];
        return index == n ? cg_ops_error_case(c, 0, S + 1, S + 9) : cg_ops_error_case(c, 0, -3, -1);
    }
    if (index < 0 || index >= n) return 0;
    cg_ops_fill_case(&wm_cases[index], 1, c);
    return 1;
}

/* local_gaussian: a in [-2, 2] (softmax weights are in [0, 1]; signs check
 * the product), centers in [-3, S + 3]. */
#define LG(b, s, attrs) \
    { 2, {{CG_OP_F32, 2, DIMS(b, s), -2, 2}, {CG_OP_F32, 1, DIMS(b), -3, (s) + 3}}, attrs }

static const cg_ops_case lg_cases[] = {
    LG(1, 1, "D: 1"),    LG(3, 3, "D: 1"),    LG(3, 3, "D: 2"),      LG(3, 17, "D: 5"),
    LG(17, 3, "D: 2"),   LG(17, 17, "D: 1"),  LG(17, 17, "D: 5"),    LG(1, 1000, "D: 2"),
    LG(3, 1000, "D: 5"), LG(4, 1000, "D: 1"), LG(3, 1000, "D: 300"), LG(17, 1000, "D: 5"),
};

static int32_t local_gaussian_conform(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= (int32_t)(sizeof lg_cases / sizeof lg_cases[0])) return 0;
    cg_ops_fill_case(&lg_cases[index], 1, c);
    /* The same argument of exp on both (FP_CONTRACT off): what is left is
     * exp's error (OpenCL allows 3 ulp; PoCL is within 2) and, on devices
     * without correctly rounded division, the division's 2.5 ulp, which exp
     * scales by its argument: atol covers that where the result is small. */
    c->rtol = 2e-6;
    c->atol = 1e-9;
    return 1;
}

/* ---- definitions ---- */

static const cg_attr_def window_mask_attrs[] = {
    [LA_D] = CG_ATTR(.name = "D", .type = CG_ATTR_INT, .required = 1,
                     .doc = "half-width of the window: key i is inside when |i - center| <= D "
                            "(0 <= D <= 2147483647)"),
};
static const cg_attr_def local_gaussian_attrs[] = {
    [LA_D] = CG_ATTR(.name = "D", .type = CG_ATTR_INT, .required = 1,
                     .doc = "window half-width; the Gaussian's sigma is D / 2 (D >= 1: D = 0 would "
                            "divide by zero)"),
};

static const cg_kernel_def window_mask_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = window_mask_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = window_mask_cl, .flags = CG_KERNEL_FLAG_CHECKS),
};
static const cg_kernel_def local_gaussian_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = local_gaussian_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = local_gaussian_cl),
};
static const char *const window_mask_inputs[] = {"lengths", "center", "like", NULL};
static const char *const local_gaussian_inputs[] = {"a", "center", NULL};

const cg_op_def cg_op_window_mask =
    CG_OP(.name = "window_mask",
          .doc = "Mask of the keys of a local-attention window (seq2seq spec, local "
                 "attention): for i32 lengths [B], f32 center [B] and a tensor like [B, S, "
                 "...] of any dtype (only its shape is used), output i32 [B, S] with "
                 "out[b, i] = 1 if i < lengths[b] and |i - center[b]| <= D, else 0, the "
                 "distance compared in double precision: fabs((double)i - "
                 "(double)center[b]) <= D. The center may be any float, also negative or "
                 "beyond S (a window with no valid key gives a row of 0s, for which "
                 "softmax with this mask gives all 0); a NaN or infinite center gives a "
                 "row of 0s. Attribute D (required, 0 <= D <= 2^31 - 1). A length below 0 or above S is a "
                 "run-time error naming the batch row on every device. The OpenCL kernel "
                 "reproduces the double comparison exactly without fp64 (on a device "
                 "that flushes denormal floats, a denormal center counts as 0).",
          .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .input_names = window_mask_inputs,
          CG_ATTRS(window_mask_attrs), .infer = window_mask_infer, CG_KERNELS(window_mask_kernels),
          .conform_case = window_mask_conform);

const cg_op_def cg_op_local_gaussian =
    CG_OP(.name = "local_gaussian",
          .doc = "Gaussian weighting of predictive local attention (seq2seq spec): for "
                 "f32 weights a [B, S] and f32 center [B], output f32 [B, S] with out[b, "
                 "i] = a[b, i] * exp(-(i - center[b])^2 / (2 (D/2)^2)), applied after the "
                 "softmax with no renormalisation. Computed in single precision the same "
                 "way on every backend: d = (float)i - center[b], sigma = (float)D * "
                 "0.5f, out = a * expf(-(d * d) / (2 sigma^2)), so backends agree to "
                 "about 1e-6 relative (the error of exp). Attribute D (required, >= 1: "
                 "sigma = D / 2 and D = 0 would divide by zero). A NaN in a or center "
                 "gives NaN; an infinite center gives a * 0. Output 0 may share a's "
                 "buffer.",
          .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .input_names = local_gaussian_inputs,
          CG_ATTRS(local_gaussian_attrs), .infer = local_gaussian_infer, CG_KERNELS(local_gaussian_kernels),
          .flags = CG_OP_FLAG_INPLACE0, .conform_case = local_gaussian_conform);
