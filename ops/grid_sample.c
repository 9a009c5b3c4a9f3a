/* grid_sample: y[n, c, o...] = x[n, c] sampled at the normalized point
 * grid[n, o...] (ONNX GridSample, torch.nn.functional.grid_sample) over 2
 * or 3 spatial dims: nearest, linear or cubic (Keys, a = -0.75)
 * interpolation, zeros / border / reflection padding, align_corners. The
 * per-dim coordinate rules follow ONNX's reference in f32; the CPU kernel
 * and cl/grid_sample.cl compute the same taps in the same order. */
#include "ops_cl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "grid_sample.cl.h"

enum { GS_MODE, GS_PADDING, GS_ALIGN };
enum { M_LINEAR, M_NEAREST, M_CUBIC };
enum { P_ZEROS, P_BORDER, P_REFLECTION };

static const cg_attr_def gs_attrs[] = {
    CG_ATTR(.name = "mode", .type = CG_ATTR_STRING, .default_string = "linear",
            .doc = "linear (bilinear / trilinear), nearest (halves to even) or cubic (bicubic, a = -0.75)"),
    CG_ATTR(.name = "padding", .type = CG_ATTR_STRING, .default_string = "zeros",
            .doc = "values outside x: zeros, border (the nearest edge) or reflection (mirrored at the edges)"),
    CG_ATTR(.name = "align_corners", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "1: -1 and 1 are the centres of the corner pixels; 0: their outer edges"),
};

static int mode_of(const char *s) {
    return !strcmp(s, "linear") ? M_LINEAR : !strcmp(s, "nearest") ? M_NEAREST : !strcmp(s, "cubic") ? M_CUBIC : -1;
}
static int pad_of(const char *s) {
    return !strcmp(s, "zeros")        ? P_ZEROS
           : !strcmp(s, "border")     ? P_BORDER
           : !strcmp(s, "reflection") ? P_REFLECTION
                                      : -1;
}

static cg_op_status gs_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *g = &call->inputs[1];
    char sx[128], sg[128];
    cg_ops_format_dims(sx, sizeof sx, x);
    cg_ops_format_dims(sg, sizeof sg, g);
    if (x->dtype != CG_OP_F32 || g->dtype != CG_OP_F32) return cg_op_fail(call, "x and grid must be f32");
    if (mode_of(call->attrs[GS_MODE].s) < 0)
        return cg_op_fail(call, "mode '%s' is not linear, nearest or cubic", call->attrs[GS_MODE].s);
    if (pad_of(call->attrs[GS_PADDING].s) < 0)
        return cg_op_fail(call, "padding '%s' is not zeros, border or reflection", call->attrs[GS_PADDING].s);
    const int k = x->ndim - 2;
    if ((k != 2 && k != 3) || g->ndim != x->ndim || g->dims[k + 1] != k)
        return cg_op_fail(call, "x %s must be [N, C, spatial (2 or 3)] and grid %s [N, out spatial, %d]", sx, sg,
                          k > 0 ? k : 2);
    if (x->dims[0] >= 0 && g->dims[0] >= 0 && x->dims[0] != g->dims[0])
        return cg_op_fail(call, "x %s and grid %s differ in batch", sx, sg);
    cg_tensor_desc *y = &call->outputs[0];
    *y = *x;
    for (int i = 0; i < k; i++) y->dims[2 + i] = g->dims[1 + i];
    return CG_OP_OK;
}

/* ---- the per-dim rules (mirrored in cl/grid_sample.cl) ---- */

/* x mirrored at lo and hi until inside them. */
static float gs_reflect(float x, float lo, float hi) {
    const float rng = hi - lo;
    if (!(rng > 0.0f)) return lo;
    if (x < lo || x > hi) {
        const float dx = x < lo ? lo - x : x - hi;
        const int n = (int)(dx / rng);
        const float r = dx - (float)n * rng;
        return (n % 2 == 0) == (x < lo) ? lo + r : hi - r;
    }
    return x;
}

/* The index of tap i along a dim of length len, or -1 for a zero. */
static int64_t gs_index(int64_t i, int64_t len, int pad, float lo, float hi) {
    if (pad == P_BORDER) return i < 0 ? 0 : i >= len ? len - 1 : i;
    if (pad == P_REFLECTION) {
        int64_t r = (int64_t)gs_reflect((float)i, lo, hi);
        return r < 0 ? 0 : r >= len ? len - 1 : r;
    }
    return i >= 0 && i < len ? i : -1;
}

static void gs_cubic(float t, float *w) {
    const float a = -0.75f, t1 = t + 1.0f, u = 1.0f - t, u1 = 2.0f - t;
    w[0] = ((a * t1 - 5.0f * a) * t1 + 8.0f * a) * t1 - 4.0f * a;
    w[1] = ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
    w[2] = ((a + 2.0f) * u - (a + 3.0f)) * u * u + 1.0f;
    w[3] = ((a * u1 - 5.0f * a) * u1 + 8.0f * a) * u1 - 4.0f * a;
}

/* The taps of one dim for normalized coordinate g: their indices (-1: a
 * zero) and weights; returns how many (1, 2 or 4). */
static int gs_taps(float g, int64_t len, int mode, int pad, int align, int64_t *ix, float *w) {
    const float fl = (float)len, lo = align ? 0.0f : -0.5f, hi = align ? fl - 1.0f : fl - 0.5f;
    float x = align ? (g + 1.0f) * 0.5f * (fl - 1.0f) : ((g + 1.0f) * fl - 1.0f) * 0.5f;
    if (mode == M_NEAREST) x = rintf(x);
    if (x < lo || x > hi) {
        if (pad == P_BORDER) x = x < 0.0f ? 0.0f : x > fl - 1.0f ? fl - 1.0f : x;
        else if (pad == P_REFLECTION) x = gs_reflect(x, lo, hi);
    }
    /* far outside (or NaN): every tap a zero or an edge, and no int overflow */
    x = x >= -4.0f ? (x <= fl + 4.0f ? x : fl + 4.0f) : -4.0f;
    const float x0 = floorf(x), t = x - x0;
    const int64_t i0 = (int64_t)x0;
    if (mode == M_NEAREST) {
        ix[0] = gs_index((int64_t)x, len, pad, lo, hi), w[0] = 1.0f;
        return 1;
    }
    if (mode == M_LINEAR) {
        ix[0] = gs_index(i0, len, pad, lo, hi), ix[1] = gs_index(i0 + 1, len, pad, lo, hi);
        w[0] = 1.0f - t, w[1] = t;
        return 2;
    }
    gs_cubic(t, w);
    for (int j = 0; j < 4; j++) ix[j] = gs_index(i0 - 1 + j, len, pad, lo, hi);
    return 4;
}

/* One output element: the taps of each dim, summed innermost dim first. */
static float gs_point(const float *x, const int64_t *dims, int k, const float *g, const int *cfg) {
    int64_t ix[3][4];
    float w[3][4];
    int nt[3] = {1, 1, 1};
    for (int d = 0; d < k; d++) /* grid holds (x, y[, z]): the last dim first */
        nt[d] = gs_taps(g[k - 1 - d], dims[d], cfg[0], cfg[1], cfg[2], ix[d], w[d]);
    float acc0 = 0.0f;
    for (int a = 0; a < (k == 3 ? nt[0] : 1); a++) {
        float acc1 = 0.0f;
        const int d1 = k - 2;
        for (int b = 0; b < nt[d1]; b++) {
            float acc2 = 0.0f;
            for (int c = 0; c < nt[d1 + 1]; c++) {
                const int64_t i1 = ix[d1][b], i2 = ix[d1 + 1][c], i0 = k == 3 ? ix[0][a] : 0;
                const float v = i0 < 0 || i1 < 0 || i2 < 0 ? 0.0f : x[(i0 * dims[d1] + i1) * dims[d1 + 1] + i2];
                acc2 += w[d1 + 1][c] * v;
            }
            acc1 += w[d1][b] * acc2;
        }
        acc0 += (k == 3 ? w[0][a] : 1.0f) * acc1;
    }
    return acc0;
}

static cg_op_status gs_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *xd = &call->inputs[0], *yd = &call->outputs[0];
    const int k = xd->ndim - 2;
    const int cfg[3] = {mode_of(call->attrs[GS_MODE].s), pad_of(call->attrs[GS_PADDING].s),
                        call->attrs[GS_ALIGN].i != 0};
    int64_t in_sp = 1, out_sp = 1;
    for (int i = 0; i < k; i++) in_sp *= xd->dims[2 + i], out_sp *= yd->dims[2 + i];
    const float *x = a->in[0], *g = a->in[1];
    float *y = a->out[0];
    for (int64_t n = 0; n < xd->dims[0]; n++)
        for (int64_t c = 0; c < xd->dims[1]; c++)
            for (int64_t o = 0; o < out_sp; o++)
                y[(n * xd->dims[1] + c) * out_sp + o] =
                    gs_point(x + (n * xd->dims[1] + c) * in_sp, xd->dims + 2, k, g + (n * out_sp + o) * k, cfg);
    return CG_OP_OK;
}

static cg_op_status gs_cl(const cg_kernel_args *a) {
    static const char name[] = "grid_sample";
    const cg_op_call *call = a->call;
    const cg_tensor_desc *xd = &call->inputs[0], *yd = &call->outputs[0];
    const int64_t n = cg_desc_numel(yd);
    if (n == 0) return CG_OP_OK;
    cl_kernel kr =
        cg_ops_cl_kernel(a, cg_cl_grid_sample, name, cg_desc_numel(xd) > INT32_MAX || n > INT32_MAX, 0, NULL);
    if (!kr) return CG_OP_ERROR;
    cl_long4 in = {{1, 1, 1, 1}}, out = {{1, 1, 1, 1}};
    const int k = xd->ndim - 2;
    for (int i = 0; i < k; i++) in.s[i] = xd->dims[2 + i], out.s[i] = yd->dims[2 + i];
    cl_mem x = (cl_mem)a->in[0], g = (cl_mem)a->in[1], y = (cl_mem)a->out[0];
    cl_long ln = n, ch = xd->dims[1];
    cl_int ck = k, mode = mode_of(call->attrs[GS_MODE].s), pad = pad_of(call->attrs[GS_PADDING].s),
           al = call->attrs[GS_ALIGN].i != 0;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(x),    CG_OPS_CL_ARG(g),   CG_OPS_CL_ARG(y),  CG_OPS_CL_ARG(ln),
                                     CG_OPS_CL_ARG(ch),   CG_OPS_CL_ARG(ck),  CG_OPS_CL_ARG(in), CG_OPS_CL_ARG(out),
                                     CG_OPS_CL_ARG(mode), CG_OPS_CL_ARG(pad), CG_OPS_CL_ARG(al)};
    if (cg_ops_cl_args(a, kr, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, kr, NULL, n, cg_ops_cl_work_group(a, kr, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* Cases: each mode with each padding and both alignments over a 4-D x,
 * then 5-D ones; grid values reach past [-1, 1] so padding matters. */
static const char *const gs_modes[] = {"linear", "nearest", "cubic"}, *const gs_pads[] = {"zeros", "border",
                                                                                          "reflection"};
static int32_t gs_conform(int32_t i, cg_conform_case *c) {
    static char attrs[18][96];
    if (i < 0 || i >= 18 + 4) return 0;
    cg_ops_case t = {2, {{CG_OP_F32, 4, {2, 3, 5, 7}, -2, 2}, {CG_OP_F32, 4, {2, 4, 6, 2}, -1.3, 1.3}}, NULL};
    if (i < 18) {
        snprintf(attrs[i], sizeof attrs[i], "mode: \"%s\", padding: \"%s\", align_corners: %d", gs_modes[i / 6],
                 gs_pads[i / 2 % 3], i % 2);
        t.attrs = attrs[i];
        if (i == 17) t.in[0].d[2] = 1, t.in[0].d[3] = 1; /* 1 x 1 images: a zero-width reflection range */
    } else {
        static const char *const v[] = {"mode: \"linear\"", "mode: \"nearest\", align_corners: 1",
                                        "mode: \"linear\", padding: \"reflection\", align_corners: 1",
                                        "mode: \"cubic\", padding: \"border\""};
        t.attrs = v[i - 18];
        t.in[0].nd = 4; /* 5-D through 4 dims of cg_ops_case: filled below */
    }
    cg_ops_fill_case(&t, 1, c);
    if (i >= 18) { /* x [1, 2, 3, 4, 5], grid [1, 2, 3, 4, 3] */
        const int64_t xd[5] = {1, 2, 3, 4, 5}, gd[5] = {1, 2, 3, 4, 3};
        c->inputs[0].ndim = c->inputs[1].ndim = 5;
        memcpy(c->inputs[0].dims, xd, sizeof xd);
        memcpy(c->inputs[1].dims, gd, sizeof gd);
    }
    return 1;
}

static const char *const gs_inputs[] = {"x", "grid", NULL};
static const cg_kernel_def gs_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = gs_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = gs_cl),
};
const cg_op_def cg_op_grid_sample =
    CG_OP(.name = "grid_sample",
          .doc = "y[n, c, o...] = x[n, c] sampled at grid[n, o...] (ONNX GridSample, torch grid_sample): x f32 [N, "
                 "C, D..] of 2 or 3 spatial dims, grid f32 [N, O.., k] of normalized (x, y[, z]) in [-1, 1]; y [N, "
                 "C, O..]. mode linear, nearest (halves to even) or cubic (a = -0.75); padding zeros, border or "
                 "reflection; align_corners.",
          .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .input_names = gs_inputs,
          CG_ATTRS(gs_attrs), .infer = gs_infer, CG_KERNELS(gs_kernels), .conform_case = gs_conform);
