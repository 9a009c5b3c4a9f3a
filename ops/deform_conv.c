/* deform_conv: the 2-D deformable convolution (ONNX DeformConv, opset 19;
 * torchvision.ops.deform_conv2d): a grouped convolution whose every tap
 * samples x bilinearly at its regular position plus a learned offset
 * (corners outside x read 0), optionally scaled by a mask (modulated, v2).
 * OpenCL: one work-item per output element (cl/deform_conv.cl), summing in
 * the CPU kernel's order. */
#include "ops_cl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "deform_conv.cl.h"

enum { DC_STRIDES, DC_DILATIONS, DC_PADS, DC_GROUP, DC_OFFSET_GROUP };

static const cg_attr_def dc_attrs[] = {
    CG_ATTR(.name = "strides", .type = CG_ATTR_INTS, .doc = "step of the window along H and W (default 1, 1)"),
    CG_ATTR(.name = "dilations", .type = CG_ATTR_INTS, .doc = "distance between taps along H and W (default 1, 1)"),
    CG_ATTR(.name = "pads", .type = CG_ATTR_INTS, .doc = "top, left, bottom, right padding (default 0)"),
    CG_ATTR(.name = "group", .type = CG_ATTR_INT, .default_int = 1, .doc = "channel groups of x and w"),
    CG_ATTR(.name = "offset_group", .type = CG_ATTR_INT, .default_int = 1,
            .doc = "groups of x's channels sharing one set of offsets (and mask)"),
};

/* Window geometry: s (strides), d (dilations), p (pads: top, left,
 * bottom, right), all checked. */
typedef struct dc_geom {
    int64_t s[2], d[2], p[4], group, og;
} dc_geom;

static cg_op_status dc_geometry(const cg_op_call *call, dc_geom *g) {
    const cg_attr_value *at = call->attrs;
    g->group = at[DC_GROUP].i, g->og = at[DC_OFFSET_GROUP].i;
    for (int i = 0; i < 4; i++) {
        if (i < 2) g->s[i] = at[DC_STRIDES].n_ints == 2 ? at[DC_STRIDES].ints[i] : 1;
        if (i < 2) g->d[i] = at[DC_DILATIONS].n_ints == 2 ? at[DC_DILATIONS].ints[i] : 1;
        g->p[i] = at[DC_PADS].n_ints == 4 ? at[DC_PADS].ints[i] : 0;
    }
    if ((at[DC_STRIDES].present && at[DC_STRIDES].n_ints != 2) ||
        (at[DC_DILATIONS].present && at[DC_DILATIONS].n_ints != 2) || (at[DC_PADS].present && at[DC_PADS].n_ints != 4))
        return cg_op_fail(call, "strides and dilations take 2 values, pads 4 (2-D only)");
    if (g->s[0] < 1 || g->s[1] < 1 || g->d[0] < 1 || g->d[1] < 1 || g->p[0] < 0 || g->p[1] < 0 || g->p[2] < 0 ||
        g->p[3] < 0 || g->group < 1 || g->og < 1 || g->s[0] > INT32_MAX || g->s[1] > INT32_MAX || g->d[0] > INT32_MAX ||
        g->d[1] > INT32_MAX || g->p[0] > INT32_MAX || g->p[1] > INT32_MAX)
        return cg_op_fail(call, "strides and dilations must be positive, pads, group and offset_group not negative");
    return CG_OP_OK;
}

/* Output length of a spatial axis (unknown for a symbolic one). */
static int64_t dc_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
    if (in < 0 || k < 0) return CG_DIM_UNKNOWN;
    const int64_t span = d * (k - 1) + 1, room = in + pb + pe - span;
    return room < 0 ? INT64_MIN : room / s + 1; /* INT64_MIN: the kernel does not fit */
}

static cg_op_status dc_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *w = &call->inputs[1], *off = &call->inputs[2];
    dc_geom g;
    if (dc_geometry(call, &g)) return CG_OP_ERROR;
    for (int i = 0; i < call->n_inputs; i++)
        if (call->inputs[i].dtype != CG_OP_F32 || call->inputs[i].ndim != (i == 3 ? 1 : 4))
            return cg_op_fail(call, "input %d must be f32 of %d dims", i, i == 3 ? 1 : 4);
    const int64_t c = x->dims[1], m = w->dims[0], kh = w->dims[2], kw = w->dims[3];
    if (c < 0 || m < 0 || kh < 1 || kw < 1 || c % g.group || m % g.group || c % g.og || w->dims[1] != c / g.group)
        return cg_op_fail(call, "x [N, C, H, W] and w [M, C / group, kh, kw] need concrete C, M and kernel, C and M "
                                "divisible by group and C by offset_group");
    int64_t o[2];
    for (int a = 0; a < 2; a++) {
        o[a] = dc_out(x->dims[2 + a], w->dims[2 + a], g.s[a], g.d[a], g.p[a], g.p[2 + a]);
        if (o[a] == INT64_MIN) return cg_op_fail(call, "the kernel does not fit x along spatial axis %d", a);
    }
    const int64_t taps = g.og * kh * kw;
    if (off->dims[1] != 2 * taps || !cg_dim_compatible(off->dims[0], x->dims[0]) ||
        !cg_dim_compatible(off->dims[2], o[0]) || !cg_dim_compatible(off->dims[3], o[1]))
        return cg_op_fail(call, "offset must be [N, 2 * offset_group * kh * kw = %lld, out_h, out_w]",
                          (long long)(2 * taps));
    if (call->n_inputs > 3 && !cg_dim_compatible(call->inputs[3].dims[0], m))
        return cg_op_fail(call, "bias must be [M = %lld]", (long long)m);
    if (call->n_inputs > 4) {
        const cg_tensor_desc *mk = &call->inputs[4];
        if (mk->dims[1] != taps || !cg_dim_compatible(mk->dims[0], x->dims[0]) ||
            !cg_dim_compatible(mk->dims[2], o[0]) || !cg_dim_compatible(mk->dims[3], o[1]))
            return cg_op_fail(call, "mask must be [N, offset_group * kh * kw = %lld, out_h, out_w]", (long long)taps);
    }
    call->outputs[0] = *x;
    call->outputs[0].dims[0] = cg_dim_unify(x->dims[0], off->dims[0]);
    call->outputs[0].dims[1] = m;
    for (int a = 0; a < 2; a++) call->outputs[0].dims[2 + a] = cg_dim_unify(o[a], off->dims[2 + a]);
    return CG_OP_OK;
}

/* One channel plane [h, w] at (ph, pw), bilinear, zeros outside. */
static float dc_sample(const float *x, int64_t h, int64_t w, float ph, float pw) {
    const float fh = floorf(ph), fw = floorf(pw), lh = ph - fh, lw = pw - fw;
    if (!(fh > -2.0f && fh < (float)h && fw > -2.0f && fw < (float)w)) return 0.0f; /* NaN too */
    const int64_t h0 = (int64_t)fh, w0 = (int64_t)fw;
    float v = 0.0f;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            const int64_t y = h0 + a, z = w0 + b;
            if (y < 0 || y >= h || z < 0 || z >= w) continue;
            v += (a ? lh : 1.0f - lh) * (b ? lw : 1.0f - lw) * x[y * w + z];
        }
    return v;
}

/* Output element (n, om, oi, oj), as the OpenCL kernel sums it. */
static float dc_point(const cg_kernel_args *a, const dc_geom *g, int64_t n, int64_t om, int64_t oi, int64_t oj) {
    const cg_tensor_desc *x = &a->call->inputs[0], *w = &a->call->inputs[1], *y = &a->call->outputs[0];
    const float *xd = a->in[0], *wd = a->in[1], *off = a->in[2];
    const float *bias = a->call->n_inputs > 3 ? a->in[3] : NULL, *mask = a->call->n_inputs > 4 ? a->in[4] : NULL;
    const int64_t c = x->dims[1], h = x->dims[2], wi = x->dims[3], kw = w->dims[3], taps = w->dims[2] * kw;
    const int64_t cg = c / g->group, mg = y->dims[1] / g->group, co = c / g->og;
    const int64_t plane = y->dims[2] * y->dims[3], at = oi * y->dims[3] + oj;
    float acc = bias ? bias[om] : 0.0f;
    for (int64_t cc = 0; cc < cg; cc++) {
        const int64_t ch = (om / mg) * cg + cc, og = ch / co;
        const float *xp = xd + (n * c + ch) * h * wi;
        for (int64_t t = 0; t < taps; t++) {
            const int64_t ki = t / kw, kj = t - ki * kw, oc = (n * g->og + og) * taps + t;
            const float ph = (float)(oi * g->s[0] - g->p[0] + ki * g->d[0]) + off[(2 * oc) * plane + at];
            const float pw = (float)(oj * g->s[1] - g->p[1] + kj * g->d[1]) + off[(2 * oc + 1) * plane + at];
            float v = dc_sample(xp, h, wi, ph, pw);
            if (mask) v *= mask[oc * plane + at];
            acc += wd[(om * cg + cc) * taps + t] * v;
        }
    }
    return acc;
}

static cg_op_status dc_cpu(const cg_kernel_args *a) {
    dc_geom g;
    if (dc_geometry(a->call, &g)) return CG_OP_ERROR;
    const cg_tensor_desc *y = &a->call->outputs[0];
    float *out = a->out[0];
    int64_t i = 0;
    for (int64_t n = 0; n < y->dims[0]; n++)
        for (int64_t m = 0; m < y->dims[1]; m++)
            for (int64_t oi = 0; oi < y->dims[2]; oi++)
                for (int64_t oj = 0; oj < y->dims[3]; oj++) out[i++] = dc_point(a, &g, n, m, oi, oj);
    return CG_OP_OK;
}

static cg_op_status dc_cl(const cg_kernel_args *a) {
    static const char name[] = "deform_conv";
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0], *w = &call->inputs[1], *y = &call->outputs[0];
    dc_geom g;
    if (dc_geometry(call, &g)) return CG_OP_ERROR;
    const int64_t total = cg_desc_numel(y), big = cg_desc_numel(x) > total ? cg_desc_numel(x) : total;
    if (total == 0) return CG_OP_OK;
    const int64_t gv[8] = {x->dims[1], x->dims[2], x->dims[3], y->dims[1],
                           w->dims[2], w->dims[3], y->dims[2], y->dims[3]};
    cl_int8 geo, conv;
    const int64_t cv[8] = {g.s[0], g.s[1], g.d[0], g.d[1], g.p[0], g.p[1], g.group, g.og};
    for (int i = 0; i < 8; i++) {
        if (gv[i] > INT32_MAX || cv[i] > INT32_MAX) return cg_op_fail(call, "a dim or attribute past 2^31");
        geo.s[i] = (cl_int)gv[i], conv.s[i] = (cl_int)cv[i];
    }
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_deform_conv, name,
                                   big > INT32_MAX || 2 * cg_desc_numel(&call->inputs[2]) > INT32_MAX, 0, NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem xb = (cl_mem)a->in[0], wb = (cl_mem)a->in[1], ob = (cl_mem)a->in[2], yb = (cl_mem)a->out[0];
    cl_mem bb = call->n_inputs > 3 ? (cl_mem)a->in[3] : xb, mb = call->n_inputs > 4 ? (cl_mem)a->in[4] : xb;
    cl_long lt = total;
    cl_int has = (call->n_inputs > 3) | (call->n_inputs > 4) << 1;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(xb),   CG_OPS_CL_ARG(wb), CG_OPS_CL_ARG(ob), CG_OPS_CL_ARG(bb),
                                     CG_OPS_CL_ARG(mb),   CG_OPS_CL_ARG(yb), CG_OPS_CL_ARG(lt), CG_OPS_CL_ARG(geo),
                                     CG_OPS_CL_ARG(conv), CG_OPS_CL_ARG(has)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, total, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* Cases: x [n, c, h, w], w [m, c / group, kh, kw]; offsets in [-2.5, 2.5]
 * reach past every edge; mask in [0, 1]. */
static const struct {
    int64_t n, c, h, w, m, kh, kw, og, group;
    int n_in;
    const char *attrs;
} dc_cases[] = {
    {1, 1, 3, 3, 1, 2, 2, 1, 1, 3, NULL},
    {2, 3, 7, 6, 4, 3, 3, 1, 1, 4, "pads: [1, 1, 1, 1]"},
    {1, 4, 9, 8, 6, 3, 2, 2, 2, 5, "group: 2, offset_group: 2, strides: [2, 1], dilations: [1, 2], pads: [1, 0, 2, 1]"},
    {2, 6, 5, 5, 3, 1, 1, 3, 3, 5, "group: 3, offset_group: 3"},
    {1, 2, 12, 17, 5, 3, 3, 1, 1, 5, "strides: [2, 3], pads: [0, 2, 1, 0]"},
};

static int32_t dc_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= (int32_t)(sizeof dc_cases / sizeof dc_cases[0])) return 0;
    int64_t s[2] = {1, 1}, d[2] = {1, 1}, p[4] = {0};
    if (i == 2) s[0] = 2, d[1] = 2, p[0] = 1, p[2] = 2, p[3] = 1;
    if (i == 1) p[0] = p[1] = p[2] = p[3] = 1;
    if (i == 4) s[0] = 2, s[1] = 3, p[1] = 2, p[2] = 1;
    const int64_t oh = (dc_cases[i].h + p[0] + p[2] - d[0] * (dc_cases[i].kh - 1) - 1) / s[0] + 1;
    const int64_t ow = (dc_cases[i].w + p[1] + p[3] - d[1] * (dc_cases[i].kw - 1) - 1) / s[1] + 1;
    const int64_t taps = dc_cases[i].og * dc_cases[i].kh * dc_cases[i].kw, n = dc_cases[i].n;
    const int64_t dims[5][4] = {{n, dc_cases[i].c, dc_cases[i].h, dc_cases[i].w},
                                {dc_cases[i].m, dc_cases[i].c / dc_cases[i].group, dc_cases[i].kh, dc_cases[i].kw},
                                {n, 2 * taps, oh, ow},
                                {dc_cases[i].m},
                                {n, taps, oh, ow}};
    const uint32_t ss = c->struct_size;
    memset(c, 0, sizeof *c);
    c->struct_size = ss;
    c->n_inputs = dc_cases[i].n_in;
    c->n_outputs = 1;
    c->attrs = dc_cases[i].attrs;
    for (int k = 0; k < c->n_inputs; k++) {
        c->inputs[k].dtype = CG_OP_F32;
        c->inputs[k].ndim = k == 3 ? 1 : 4;
        memcpy(c->inputs[k].dims, dims[k], sizeof dims[k]);
        c->lo[k] = k == 2 ? -2.5 : k == 4 ? 0.0 : -1.0;
        c->hi[k] = k == 2 ? 2.5 : 1.0;
    }
    return 1;
}

static const char *const dc_inputs[] = {"x", "w", "offset", "bias", "mask", NULL};
static const cg_kernel_def dc_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = dc_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = dc_cl),
};
const cg_op_def cg_op_deform_conv =
    CG_OP(.name = "deform_conv",
          .doc = "2-D deformable convolution (ONNX DeformConv, torchvision deform_conv2d): x f32 [N, C, H, W], w [M, "
                 "C / group, kh, kw], offset [N, 2 * offset_group * kh * kw, out_h, out_w] (per tap a (dy, dx) pair "
                 "added to its position), optional bias [M] and mask [N, offset_group * kh * kw, out_h, out_w] "
                 "(each sample scaled by it). Each tap reads x bilinearly at its moved position, corners outside "
                 "x reading 0; strides, dilations, pads (top, left, bottom, right), group and offset_group as "
                 "ONNX's. Output [N, M, out_h, out_w].",
          .min_inputs = 3, .max_inputs = 5, .min_outputs = 1, .max_outputs = 1, .input_names = dc_inputs,
          CG_ATTRS(dc_attrs), .infer = dc_infer, CG_KERNELS(dc_kernels), .conform_case = dc_conform);
