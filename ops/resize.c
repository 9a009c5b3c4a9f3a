/* resize: x resampled to new dims (ONNX Resize): nearest (any dtype),
 * linear and cubic (f32; N-D: bilinear, trilinear, bicubic ...), every
 * coordinate transformation of ONNX, antialias. Each output position along
 * each axis reads the input positions and weights of a table the host
 * computes once (resize_table.c); the kernels sum over the product of the
 * axes' taps in one fixed order. */
#include "resize.h"

#include "bcast.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "resize.cl.h"

static const cg_attr_def rs_attrs[] = {
    CG_ATTR(.name = "sizes", .type = CG_ATTR_DIMS, .required = 1, .doc = "the output's dims, one per axis of x"),
    CG_ATTR(.name = "scales", .type = CG_ATTR_STRING, .default_string = "",
            .doc = "the scale factor of each axis (numbers separated by spaces) for the coordinate transformation; "
                   "\"\": sizes / x's dims"),
    CG_ATTR(.name = "roi", .type = CG_ATTR_STRING, .default_string = "",
            .doc = "tf_crop_and_resize's region: the start of each axis, then the end, as fractions of it"),
    CG_ATTR(.name = "mode", .type = CG_ATTR_STRING, .default_string = "nearest",
            .doc = "\"nearest\", \"linear\" or \"cubic\" (along every resized axis)"),
    CG_ATTR(.name = "coordinate_transformation_mode", .type = CG_ATTR_STRING, .default_string = "half_pixel",
            .doc = "half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric, "
                   "tf_crop_and_resize or tf_half_pixel_for_nn (ONNX's formulas)"),
    CG_ATTR(.name = "nearest_mode", .type = CG_ATTR_STRING, .default_string = "round_prefer_floor",
            .doc = "round_prefer_floor, round_prefer_ceil, floor or ceil"),
    CG_ATTR(.name = "cubic_coeff_a", .type = CG_ATTR_FLOAT, .default_float = -0.75, .doc = "cubic's a"),
    CG_ATTR(.name = "exclude_outside", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "1: weights of positions outside x are 0 and the rest renormalised"),
    CG_ATTR(.name = "extrapolation_value", .type = CG_ATTR_FLOAT, .default_float = 0,
            .doc = "tf_crop_and_resize's value where the region leaves x"),
    CG_ATTR(.name = "antialias", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "1: linear and cubic downsampling widen their filter by 1 / scale"),
};

static cg_op_status rs_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    rs_params p;
    if (!cg_dtype_size((cg_dtype)x->dtype))
        return cg_op_fail(call, "input 0 (x) has unsupported dtype %s", cg_ops_dtype_name(x->dtype));
    if (cg_rs_params(call, &p)) return CG_OP_ERROR;
    if (p.mode != RS_NEAREST_MODE && x->dtype != CG_F32)
        return cg_op_fail(call, "mode %s needs x of f32, got %s", call->attrs[RS_MODE].s, cg_ops_dtype_name(x->dtype));
    call->outputs[0] = *x;
    for (int i = 0; i < x->ndim; i++) call->outputs[0].dims[i] = call->attrs[RS_SIZES].ints[i];
    return CG_OP_OK;
}

/* The extrapolation value as an element of dtype dt, in the low bytes. */
static uint64_t extrap_bits(cg_op_dtype dt, double v) {
    uint64_t u = 0;
    const float f = (float)v;
    uint32_t fb;
    memcpy(&fb, &f, sizeof fb);
    switch (dt) {
    case CG_F32: u = fb; break;
    case CG_F16: u = cg_f32_to_f16_bits(fb); break;
    case CG_BF16: u = cg_f32_to_bf16_bits(fb); break;
    case CG_BOOL: u = v != 0; break;
    default: { /* integers: truncated toward zero, in two's complement */
        const int64_t i = v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
        memcpy(&u, &i, sizeof u);
        const size_t b = cg_dtype_size((cg_dtype)dt);
        if (b < 8) u &= ((uint64_t)1 << (8 * b)) - 1;
    }
    }
    return u;
}

static size_t rs_workspace(const cg_op_call *call) {
    rs_params p;
    int32_t taps[CG_MAX_DIMS];
    int64_t base[CG_MAX_DIMS];
    if (cg_rs_params(call, &p)) return 0;
    return (size_t)cg_rs_table(&p, taps, base, NULL) * sizeof(int32_t);
}

/* One output element of an interpolation: the weighted sum over the taps
 * of the axes that have several, starting at x offset `off`. */
static float interp_at(const float *x, const int32_t *tab, int na, const int64_t *rows, const int32_t *nt,
                       const int64_t *st, int64_t off) {
    int cnt[CG_MAX_DIMS] = {0};
    float acc = 0;
    for (;;) {
        int64_t o = off;
        float w = 1.0f, wt;
        for (int j = 0; j < na; j++) {
            const int64_t e = rows[j] + 2 * cnt[j];
            memcpy(&wt, &tab[e + 1], sizeof wt);
            o += tab[e] * st[j];
            w *= wt;
        }
        acc += w * x[o];
        int j = na - 1;
        while (j >= 0 && ++cnt[j] == nt[j]) cnt[j--] = 0;
        if (j < 0) return acc;
    }
}

static cg_op_status rs_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0], *y = &call->outputs[0];
    rs_params p;
    int32_t taps[CG_MAX_DIMS], *tab = a->workspace;
    int64_t base[CG_MAX_DIMS], xs[CG_MAX_DIMS], s = 1, idx[CG_MAX_DIMS] = {0};
    if (cg_rs_params(call, &p)) return CG_OP_ERROR;
    cg_rs_table(&p, taps, base, tab);
    for (int i = x->ndim - 1; i >= 0; i--) xs[i] = s, s *= x->dims[i];
    const size_t b = cg_dtype_size((cg_dtype)x->dtype);
    const uint64_t ev = extrap_bits(x->dtype, p.extrap);
    const int64_t n = cg_desc_numel(y);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0, rows[CG_MAX_DIMS], st[CG_MAX_DIMS];
        int32_t nt[CG_MAX_DIMS];
        int na = 0, ext = 0;
        /* innermost axis first, as the OpenCL kernel walks them */
        for (int d = x->ndim - 1; d >= 0; d--) {
            const int64_t row = base[d] + 2 * (int64_t)taps[d] * idx[d];
            if (!taps[d]) off += idx[d] * xs[d];
            else if (tab[row] < 0) ext = 1;
            else if (p.mode == RS_NEAREST_MODE) off += tab[row] * xs[d];
            else rows[na] = row, nt[na] = taps[d], st[na++] = xs[d];
        }
        char *o = (char *)a->out[0] + (size_t)i * b;
        if (ext) memcpy(o, &ev, b);
        else if (p.mode == RS_NEAREST_MODE) memcpy(o, (const char *)a->in[0] + (size_t)off * b, b);
        else ((float *)a->out[0])[i] = interp_at(a->in[0], tab, na, rows, nt, st, off);
        for (int d = y->ndim - 1; d >= 0 && ++idx[d] == y->dims[d]; d--) idx[d] = 0;
    }
    return CG_OP_OK;
}

/* OpenCL state: the table in a read-only buffer, made once per plan
 * instance. */
static cg_op_status rs_cl_create(const cg_kernel_args *a, void **state, size_t *bytes) {
    rs_params p;
    int32_t taps[CG_MAX_DIMS];
    int64_t base[CG_MAX_DIMS];
    if (cg_rs_params(a->call, &p)) return CG_OP_ERROR;
    const int64_t words = cg_rs_table(&p, taps, base, NULL);
    const size_t size = (size_t)(words > 0 ? words : 1) * sizeof(int32_t);
    int32_t *host = calloc(1, size);
    cl_context ctx;
    cl_int err = host ? clGetCommandQueueInfo((cl_command_queue)a->stream, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL)
                      : CL_OUT_OF_HOST_MEMORY;
    cl_mem buf = NULL;
    if (err == CL_SUCCESS) {
        cg_rs_table(&p, taps, base, host);
        buf = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, size, host, &err);
    }
    free(host);
    if (err != CL_SUCCESS)
        return cg_op_fail(a->call, "resize's table of %zu bytes: %s", size, cg_host_cl_error_name(err));
    *state = buf;
    *bytes = size;
    return CG_OP_OK;
}

static void rs_cl_destroy(void *state) { clReleaseMemObject((cl_mem)state); }

static cg_op_status rs_cl(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0], *y = &call->outputs[0];
    rs_params p;
    int32_t taps[CG_MAX_DIMS];
    int64_t base[CG_MAX_DIMS];
    const int64_t n = cg_desc_numel(y);
    if (n == 0) return CG_OP_OK;
    if (cg_rs_params(call, &p)) return CG_OP_ERROR;
    cg_rs_table(&p, taps, base, NULL);
    const int near = p.mode == RS_NEAREST_MODE;
    const char *name = near ? "resize_nearest" : "resize_interp";
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_resize, name, cg_desc_numel(x) > INT32_MAX || n > INT32_MAX, 0,
                                   cg_ops_cl_elem_type_option(cg_dtype_size((cg_dtype)x->dtype)));
    if (!k) return CG_OP_ERROR;
    cl_long8 od, st, bs;
    cl_int8 tp;
    int64_t s = 1;
    for (int i = 0; i < 8; i++) {
        const int d = x->ndim - 1 - i;
        od.s[i] = d >= 0 ? y->dims[d] : 1;
        st.s[i] = d >= 0 ? s : 0;
        tp.s[i] = d >= 0 ? taps[d] : 0;
        bs.s[i] = d >= 0 ? base[d] : 0;
        if (d >= 0) s *= x->dims[d];
    }
    cl_mem src = (cl_mem)a->in[0], tab = (cl_mem)a->state, dst = (cl_mem)a->out[0];
    cl_long ln = n;
    cl_int nd = x->ndim;
    cl_ulong ev = extrap_bits(x->dtype, p.extrap);
    cl_float evf = (cl_float)p.extrap;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(src), CG_OPS_CL_ARG(tab), CG_OPS_CL_ARG(dst),
                                     CG_OPS_CL_ARG(ln),  CG_OPS_CL_ARG(nd),  CG_OPS_CL_ARG(od),
                                     CG_OPS_CL_ARG(st),  CG_OPS_CL_ARG(tp),  CG_OPS_CL_ARG(bs)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v) ||
        (near ? cg_ops_cl_arg(a, k, name, 9, sizeof ev, &ev) : cg_ops_cl_arg(a, k, name, 9, sizeof evf, &evf)))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* Every mode and coordinate transformation, up- and downsampling, 1-D to
 * 4-D (and 5-D: trilinear), antialias, extrapolation. */
static const struct {
    cg_op_dtype x;
    int nd;
    int64_t xd[5];
    const char *attrs;
} rs_cases[] = {
    {CG_F32, 4, {1, 2, 4, 4}, "sizes: [1, 2, 8, 7], mode: \"linear\""},
    {CG_F32,
     4,
     {2, 1, 5, 6},
     "sizes: [2, 1, 3, 4], mode: \"linear\", coordinate_transformation_mode: \"align_corners\""},
    {CG_F32,
     4,
     {1, 3, 4, 5},
     "sizes: [1, 3, 9, 2], scales: \"1 1 2.3 0.5\", mode: \"cubic\", "
     "coordinate_transformation_mode: \"asymmetric\""},
    {CG_F32, 4, {1, 1, 6, 6}, "sizes: [1, 1, 3, 4], mode: \"cubic\", cubic_coeff_a: -0.5, exclude_outside: 1"},
    {CG_F32,
     3,
     {2, 7, 9},
     "sizes: [2, 3, 4], mode: \"linear\", antialias: 1, "
     "coordinate_transformation_mode: \"pytorch_half_pixel\""},
    {CG_F32, 3, {2, 7, 9}, "sizes: [2, 2, 4], mode: \"cubic\", antialias: 1"},
    {CG_F32,
     4,
     {1, 1, 5, 5},
     "sizes: [1, 1, 4, 3], roi: \"0 0 0.2 0.4 1 1 1.3 0.9\", mode: \"linear\", "
     "coordinate_transformation_mode: \"tf_crop_and_resize\", extrapolation_value: 7.5"},
    {CG_F32, 5, {1, 2, 3, 4, 5}, "sizes: [1, 2, 5, 7, 3], mode: \"linear\""},
    {CG_F32,
     2,
     {3, 5},
     "sizes: [3, 8], scales: \"1 1.7\", mode: \"linear\", "
     "coordinate_transformation_mode: \"half_pixel_symmetric\""},
    {CG_F32, 4, {1, 1, 4, 4}, "sizes: [1, 1, 8, 7], mode: \"nearest\""},
    {CG_I64,
     4,
     {1, 2, 3, 4},
     "sizes: [1, 2, 7, 9], mode: \"nearest\", nearest_mode: \"round_prefer_ceil\", "
     "coordinate_transformation_mode: \"asymmetric\""},
    {CG_U8,
     3,
     {2, 5, 6},
     "sizes: [2, 3, 11], mode: \"nearest\", nearest_mode: \"floor\", "
     "coordinate_transformation_mode: \"align_corners\""},
    {CG_F16,
     2,
     {4, 4},
     "sizes: [9, 3], mode: \"nearest\", nearest_mode: \"ceil\", "
     "coordinate_transformation_mode: \"tf_half_pixel_for_nn\""},
    {CG_I32,
     2,
     {4, 5},
     "sizes: [6, 3], roi: \"-0.2 0.1 1.1 0.8\", mode: \"nearest\", "
     "coordinate_transformation_mode: \"tf_crop_and_resize\", extrapolation_value: -3"},
    {CG_F32, 2, {40, 300}, "sizes: [90, 123], mode: \"cubic\""},
    {CG_F32, 1, {5}, "sizes: [1], mode: \"linear\", coordinate_transformation_mode: \"pytorch_half_pixel\""},
    {CG_F32, 2, {3, 4}, "sizes: [0, 4], mode: \"linear\""},
};
#define N_RS ((int32_t)(sizeof rs_cases / sizeof rs_cases[0]))

static int32_t rs_conform(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= N_RS) return 0;
    const uint32_t ss = c->struct_size;
    memset(c, 0, sizeof *c);
    c->struct_size = ss;
    c->n_inputs = 1;
    c->n_outputs = 1;
    c->attrs = rs_cases[index].attrs;
    c->inputs[0].dtype = rs_cases[index].x;
    c->inputs[0].ndim = rs_cases[index].nd;
    memcpy(c->inputs[0].dims, rs_cases[index].xd, sizeof rs_cases[index].xd);
    c->lo[0] = -2, c->hi[0] = 2;
    if (rs_cases[index].x == CG_U8) c->lo[0] = 0, c->hi[0] = 255;
    if (rs_cases[index].x == CG_I64 || rs_cases[index].x == CG_I32) c->lo[0] = -9e8, c->hi[0] = 9e8;
    return 1;
}

static const char *const rs_inputs[] = {"x", NULL};
static const cg_kernel_def rs_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = rs_workspace, .run = rs_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = rs_cl, .create = rs_cl_create, .destroy = rs_cl_destroy),
};
const cg_op_def cg_op_resize =
    CG_OP(.name = "resize",
          .doc = "x resampled to the dims `sizes` (ONNX Resize): mode nearest (any dtype; nearest_mode "
                 "round_prefer_floor, round_prefer_ceil, floor, ceil), linear or cubic (f32; along every resized "
                 "axis at once: bilinear, trilinear, ...; cubic_coeff_a, exclude_outside, antialias). The input "
                 "coordinate of each output position follows coordinate_transformation_mode with the axis' scale "
                 "(`scales`, else sizes / dims) and, for tf_crop_and_resize, `roi` and extrapolation_value, by "
                 "ONNX's formulas in double precision on the host: every device samples the same positions.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = rs_inputs,
          CG_ATTRS(rs_attrs), .infer = rs_infer, CG_KERNELS(rs_kernels), .conform_case = rs_conform);
