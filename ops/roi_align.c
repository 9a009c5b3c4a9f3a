/* roi_align: y[r, c, ph, pw] pools bin (ph, pw) of region r of x[b[r], c]
 * (ONNX RoiAlign, torchvision roi_align): a grid of bilinear samples per
 * bin (sampling_ratio each way, or ceil(bin size)), averaged, or with mode
 * max the largest weighted corner of any sample (ONNX's definition). The
 * coordinate rules follow ONNX's reference in f32; cl/roi_align.cl computes
 * the same samples in the same order. */
#include "ops_cl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "roi_align.cl.h"

enum { RA_MODE, RA_OH, RA_OW, RA_SR, RA_SCALE, RA_HALF };

static const cg_attr_def ra_attrs[] = {
    CG_ATTR(.name = "mode", .type = CG_ATTR_STRING, .default_string = "avg", .doc = "avg or max"),
    CG_ATTR(.name = "output_height", .type = CG_ATTR_INT, .default_int = 1, .doc = "bins down"),
    CG_ATTR(.name = "output_width", .type = CG_ATTR_INT, .default_int = 1, .doc = "bins across"),
    CG_ATTR(.name = "sampling_ratio", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "samples per bin each way; 0: ceil of the bin's size"),
    CG_ATTR(.name = "spatial_scale", .type = CG_ATTR_FLOAT, .default_float = 1.0,
            .doc = "rois' coordinates times this are x's"),
    CG_ATTR(.name = "half_pixel", .type = CG_ATTR_INT, .default_int = 1,
            .doc = "1: pixel centres at +0.5 (rois shifted by -0.5); 0: the legacy rule (regions at least 1)"),
};

static cg_op_status ra_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *r = &call->inputs[1], *b = &call->inputs[2];
    char sx[128], sr[128], sb[128];
    cg_ops_format_dims(sx, sizeof sx, x);
    cg_ops_format_dims(sr, sizeof sr, r);
    cg_ops_format_dims(sb, sizeof sb, b);
    if (x->dtype != CG_OP_F32 || r->dtype != CG_OP_F32 || b->dtype != CG_OP_I32)
        return cg_op_fail(call, "x and rois must be f32, batch_indices i32");
    if (x->ndim != 4 || r->ndim != 2 || (r->dims[1] >= 0 && r->dims[1] != 4) || b->ndim != 1 ||
        (r->dims[0] >= 0 && b->dims[0] >= 0 && r->dims[0] != b->dims[0]))
        return cg_op_fail(call, "x %s must be [N, C, H, W], rois %s [R, 4] and batch_indices %s [R]", sx, sr, sb);
    const char *m = call->attrs[RA_MODE].s;
    if (strcmp(m, "avg") && strcmp(m, "max")) return cg_op_fail(call, "mode '%s' is not avg or max", m);
    if (call->attrs[RA_OH].i < 1 || call->attrs[RA_OW].i < 1 || call->attrs[RA_SR].i < 0 ||
        call->attrs[RA_OH].i > 65536 || call->attrs[RA_OW].i > 65536 || call->attrs[RA_SR].i > 1024)
        return cg_op_fail(call, "output_height, output_width (1..65536) or sampling_ratio (0..1024) out of range");
    cg_tensor_desc *y = &call->outputs[0];
    *y = *x;
    y->dims[0] = r->dims[0];
    y->dims[2] = call->attrs[RA_OH].i, y->dims[3] = call->attrs[RA_OW].i;
    return CG_OP_OK;
}

/* One region's geometry: start, bin size and samples per bin, y then x. */
typedef struct {
    float start[2], bin[2];
    int grid[2];
} ra_geom;

static ra_geom ra_region(const float *roi, float scale, int half, const int64_t *out, int64_t sr) {
    ra_geom g;
    const float off = half ? 0.5f : 0.0f;
    for (int k = 0; k < 2; k++) { /* roi holds x1, y1, x2, y2 */
        g.start[k] = roi[1 - k] * scale - off;
        float size = roi[3 - k] * scale - off - g.start[k];
        if (!half) size = fmaxf(size, 1.0f);
        g.bin[k] = size / (float)out[k];
        const float c = ceilf(size / (float)out[k]);
        g.grid[k] = sr > 0 ? (int)sr : c > 0.0f ? (c < 1024.0f ? (int)c : 1024) : 0;
    }
    return g;
}

/* The pooled value of bin (ph, pw) over the h x w plane p. */
static float ra_bin(const float *p, int64_t h, int64_t w, const ra_geom *g, int64_t ph, int64_t pw, int max) {
    float acc = 0.0f;
    int any = 0;
    for (int iy = 0; iy < g->grid[0]; iy++)
        for (int ix = 0; ix < g->grid[1]; ix++) {
            float y = g->start[0] + (float)ph * g->bin[0] + ((float)iy + 0.5f) * g->bin[0] / (float)g->grid[0];
            float x = g->start[1] + (float)pw * g->bin[1] + ((float)ix + 0.5f) * g->bin[1] / (float)g->grid[1];
            float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            if (!(y < -1.0f || y > (float)h || x < -1.0f || x > (float)w)) {
                y = fmaxf(y, 0.0f), x = fmaxf(x, 0.0f);
                int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1 = y0 + 1, x1 = x0 + 1;
                if (y0 >= h - 1) y0 = y1 = h - 1, y = (float)y0;
                if (x0 >= w - 1) x0 = x1 = w - 1, x = (float)x0;
                const float ly = y - (float)y0, lx = x - (float)x0, hy = 1.0f - ly, hx = 1.0f - lx;
                v[0] = hy * hx * p[y0 * w + x0], v[1] = hy * lx * p[y0 * w + x1];
                v[2] = ly * hx * p[y1 * w + x0], v[3] = ly * lx * p[y1 * w + x1];
            }
            if (!max) acc += v[0] + v[1] + v[2] + v[3];
            else {
                const float m = fmaxf(fmaxf(v[0], v[1]), fmaxf(v[2], v[3]));
                acc = any ? fmaxf(acc, m) : m;
                any = 1;
            }
        }
    const int n = g->grid[0] * g->grid[1];
    return max ? acc : acc / (float)(n > 1 ? n : 1);
}

static cg_op_status ra_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0], *y = &call->outputs[0];
    const int64_t n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3], out[2] = {y->dims[2], y->dims[3]};
    const int max = !strcmp(call->attrs[RA_MODE].s, "max");
    const int32_t *bi = a->in[2];
    float *yp = a->out[0];
    for (int64_t r = 0; r < y->dims[0]; r++) {
        if (bi[r] < 0 || bi[r] >= n) return cg_op_fail_range(call, 2, "batch_indices", bi[r], r, 0, n - 1);
        const ra_geom g = ra_region((const float *)a->in[1] + 4 * r, (float)call->attrs[RA_SCALE].f,
                                    call->attrs[RA_HALF].i != 0, out, call->attrs[RA_SR].i);
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t i = 0; i < out[0] * out[1]; i++)
                *yp++ =
                    ra_bin((const float *)a->in[0] + (bi[r] * c + ch) * h * w, h, w, &g, i / out[1], i % out[1], max);
    }
    return CG_OP_OK;
}

static cg_op_status ra_cl(const cg_kernel_args *a) {
    static const char name[] = "roi_align";
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0], *y = &call->outputs[0];
    const int64_t total = cg_desc_numel(y);
    if (total == 0) return CG_OP_OK;
    if (cg_ops_cl_check_range(a, 2, y->dims[0], 0, x->dims[0] - 1)) return CG_OP_ERROR;
    cl_kernel k =
        cg_ops_cl_kernel(a, cg_cl_roi_align, name, cg_desc_numel(x) > INT32_MAX || total > INT32_MAX, 0, NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem xp = (cl_mem)a->in[0], rp = (cl_mem)a->in[1], bp = (cl_mem)a->in[2], yp = (cl_mem)a->out[0];
    cl_long4 d = {{x->dims[0], x->dims[1], x->dims[2], x->dims[3]}};
    cl_long n = total, oh = y->dims[2], ow = y->dims[3], sr = call->attrs[RA_SR].i;
    cl_float sc = (float)call->attrs[RA_SCALE].f;
    cl_int half = call->attrs[RA_HALF].i != 0, mx = !strcmp(call->attrs[RA_MODE].s, "max");
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(xp), CG_OPS_CL_ARG(rp), CG_OPS_CL_ARG(bp),   CG_OPS_CL_ARG(yp),
                                     CG_OPS_CL_ARG(n),  CG_OPS_CL_ARG(d),  CG_OPS_CL_ARG(oh),   CG_OPS_CL_ARG(ow),
                                     CG_OPS_CL_ARG(sr), CG_OPS_CL_ARG(sc), CG_OPS_CL_ARG(half), CG_OPS_CL_ARG(mx)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, total, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* Cases: rois with corners in [0, 9] of a 2 x 3 x 7 x 9 x (values in [0,
 * 9]: regions partly outside and flipped ones too), each mode and rule;
 * batch indices in [0, 1], once more past N (an error on every device). */
static const char *const ra_sets[] = {
    "output_height: 3, output_width: 2",
    "mode: \"max\", output_height: 2, output_width: 3, sampling_ratio: 2",
    "output_height: 4, output_width: 4, sampling_ratio: 0, spatial_scale: 0.5, half_pixel: 0",
    "mode: \"max\", output_height: 1, output_width: 5, spatial_scale: 0.75",
};
static int32_t ra_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= 5) return 0;
    const int set = i % 4;
    cg_ops_case t = {3,
                     {{CG_OP_F32, 4, {2, 3, 7, 9}, -2, 2}, {CG_OP_F32, 2, {5, 4}, -1, 10}, {CG_OP_I32, 1, {5}, 0, 1}},
                     ra_sets[set]};
    cg_ops_fill_case(&t, 1, c);
    return i < 4 ? 1 : cg_ops_error_case(c, 2, 2, 5);
}

static const char *const ra_inputs[] = {"x", "rois", "batch_indices", NULL};
static const cg_kernel_def ra_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = ra_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = ra_cl, .flags = CG_KERNEL_FLAG_CHECKS),
};
const cg_op_def cg_op_roi_align =
    CG_OP(.name = "roi_align",
          .doc = "Region pooling (ONNX RoiAlign): x f32 [N, C, H, W], rois f32 [R, 4] (x1, y1, x2, y2), batch_indices "
                 "i32 [R] in [0, N) (one outside is a run-time error); y [R, C, output_height, output_width], each "
                 "bin the average of a grid of bilinear samples (mode avg) or ONNX's max of weighted corners.",
          .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .input_names = ra_inputs,
          CG_ATTRS(ra_attrs), .infer = ra_infer, CG_KERNELS(ra_kernels), .conform_case = ra_conform);
