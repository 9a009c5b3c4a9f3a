/* Network ops written as the ONNX ops of their definitions (onnx_sub.c):
 * LRN (the sum over neighbouring channels as a product with a band
 * matrix) and MaxUnpool (a ScatterElements of the values into zeros). */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- LRN ---- */

/* The sum of squares over channels c - floor((size - 1) / 2) .. c +
 * ceil((size - 1) / 2) of x [N, C, ...]: channels moved last, a product
 * with the band matrix [C, C], moved back. */
static cg_status lrn_window_sum(onnx_imp *im, onnx_val *x, int64_t size, const char **out) {
    const int nd = x->desc.ndim;
    const int64_t c = x->desc.dims[1], d[2] = {c, c};
    int64_t fwd[CG_MAX_DIMS], back[CG_MAX_DIMS];
    for (int i = 0; i < nd; i++) fwd[i] = i == 0 ? 0 : i == nd - 1 ? 1 : i + 1;
    for (int i = 0; i < nd; i++) back[fwd[i]] = i;
    cg_tensor *band;
    cg_status s = cg_tensor_create(CG_F32, 2, d, &band);
    if (s) return s;
    for (int64_t j = 0; j < c; j++) /* column j sums rows j - lo .. j + hi */
        for (int64_t i = j - (size - 1) / 2; i <= j + size / 2; i++)
            if (i >= 0 && i < c) ((float *)band->data)[i * c + j] = 1;
    const char *b, *sq = NULL, *t = NULL, *p = NULL;
    onnx_sub_attr a1 = onnx_sub_ints("perm", nd, fwd), a2 = onnx_sub_ints("perm", nd, back);
    if ((s = onnx_new_const(im, band, &b)) || (s = onnx_sub2(im, "Mul", x->name, x->name, &sq)) ||
        (s = onnx_sub_node(im, "Transpose", 1, &sq, 1, &t, 1, &a1)) || (s = onnx_sub2(im, "MatMul", t, b, &p)))
        return s;
    *out = NULL;
    return onnx_sub_node(im, "Transpose", 1, &p, 1, out, 1, &a2);
}

/* LRN: x / (bias + alpha / size * window sum of x^2)^beta. */
cg_status cg_onnx_map_lrn(onnx_imp *im) {
    static const char *const known[] = {"alpha", "beta", "bias", "size", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &x))) return s;
    const int64_t size = onnx_attr_int(im, "size", 0);
    if (!onnx_attr(im, "size") || size < 1) return onnx_fail(im, CG_ERR_FORMAT, "attribute size must be positive");
    if (x->desc.ndim < 3 || x->desc.dims[1] < 0 || x->desc.dims[1] > 4096)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "'%s' must be [N, C, ...] with at most 4096 known channels", x->name);
    const double alpha = onnx_attr_float(im, "alpha", 1e-4), beta = onnx_attr_float(im, "beta", 0.75),
                 bias = onnx_attr_float(im, "bias", 1.0);
    const char *sum, *ka, *kb, *ke, *sc = NULL, *sh = NULL, *pw = NULL, *out = out_name(im, 0);
    if ((s = lrn_window_sum(im, x, size, &sum)) || (s = onnx_sub_scalar(im, CG_F32, alpha / (double)size, &ka)) ||
        (s = onnx_sub_scalar(im, CG_F32, bias, &kb)) || (s = onnx_sub_scalar(im, CG_F32, beta, &ke)) ||
        (s = onnx_sub2(im, "Mul", sum, ka, &sc)) || (s = onnx_sub2(im, "Add", sc, kb, &sh)) ||
        (s = onnx_sub2(im, "Pow", sh, ke, &pw)))
        return s;
    return onnx_sub2(im, "Div", x->name, pw, &out);
}

/* ---- MaxUnpool ---- */

/* The unpooled shape of x [N, C, spatial...]: (in - 1) * stride - pads +
 * kernel per spatial dim; 0 on a bad attribute. */
static int unpool_shape(onnx_imp *im, const onnx_val *x, int64_t *d) {
    int nk, np, ns;
    const int64_t *k = onnx_attr_ints(im, "kernel_shape", &nk), *p = onnx_attr_ints(im, "pads", &np),
                  *st = onnx_attr_ints(im, "strides", &ns);
    const int sp = x->desc.ndim - 2;
    if (!k || nk != sp || (p && np != 2 * sp) || (st && ns != sp)) return 0;
    d[0] = x->desc.dims[0], d[1] = x->desc.dims[1];
    for (int i = 0; i < sp; i++) {
        d[i + 2] = (x->desc.dims[i + 2] - 1) * (st ? st[i] : 1) - (p ? p[i] + p[sp + i] : 0) + k[i];
        if (x->desc.dims[i + 2] < 0 || d[i + 2] < 1) return 0;
    }
    return d[0] >= 0 && d[1] >= 0;
}

/* Indices into the unpooled shape `from` made indices into `to` (which is
 * no smaller in any dim): sum over dims of (i / stride_from % from[d]) *
 * stride_to, in int64 arithmetic on the device. */
static cg_status unpool_remap(onnx_imp *im, const char *ix, int nd, const int64_t *from, const int64_t *to,
                              const char **out) {
    int64_t sf = 1, stt = 1, sfs[CG_MAX_DIMS], sts[CG_MAX_DIMS];
    for (int d = nd - 1; d >= 0; d--) sfs[d] = sf, sts[d] = stt, sf *= from[d], stt *= to[d];
    const char *acc = NULL;
    cg_status s = CG_OK;
    for (int d = 0; d < nd && !s; d++) {
        const char *k1, *k2, *k3, *q = NULL, *r = NULL, *m = NULL, *qq = NULL, *t = NULL, *sum = NULL;
        if ((s = onnx_sub_scalar(im, CG_I64, (double)sfs[d], &k1)) ||
            (s = onnx_sub_scalar(im, CG_I64, (double)from[d], &k2)) ||
            (s = onnx_sub_scalar(im, CG_I64, (double)sts[d], &k3)) || (s = onnx_sub2(im, "Div", ix, k1, &q)) ||
            (s = onnx_sub2(im, "Div", q, k2, &qq)) || (s = onnx_sub2(im, "Mul", qq, k2, &m)) ||
            (s = onnx_sub2(im, "Sub", q, m, &r)) || (s = onnx_sub2(im, "Mul", r, k3, &t)))
            return s;
        if (acc) s = onnx_sub2(im, "Add", acc, t, &sum), acc = sum;
        else acc = t;
    }
    *out = acc;
    return s;
}

/* MaxUnpool: the values of x at their indices (flat, into the unpooled
 * shape) of a zero tensor of that shape, or of output_shape (known at
 * import) with the unpooled one at its start. */
cg_status cg_onnx_map_max_unpool(onnx_imp *im) {
    static const char *const known[] = {"kernel_shape", "pads", "strides", NULL};
    onnx_val *x, *ix;
    int64_t d[CG_MAX_DIMS], od[CG_MAX_DIMS], tot = 1;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &x)) || (s = need_in(im, 1, &ix))) return s;
    const int nd = x->desc.ndim;
    if (nd < 3 || !unpool_shape(im, x, d))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "'%s' needs known dims and kernel_shape, pads, strides that fit it",
                         x->name);
    memcpy(od, d, sizeof od);
    if (onnx_in(im, 2)) {
        const cg_tensor *t;
        if ((s = onnx_need_const(im, onnx_in(im, 2), "input 2 (output_shape)", &t))) return s;
        if (cg_shape_numel(t->ndim, t->dims) != nd)
            return onnx_fail(im, CG_ERR_FORMAT, "output_shape needs %d dims", nd);
        for (int i = 0; i < nd; i++)
            if ((od[i] = cg_onnx_int_at(t, i)) < d[i])
                return onnx_fail(im, CG_ERR_FORMAT, "output_shape is smaller than the unpooled shape in dim %d", i);
    }
    for (int i = 0; i < nd; i++) tot *= od[i];
    const int64_t flat = -1, n = nd;
    const char *zero, *shp, *shp1, *xs = NULL, *is = NULL, *z = NULL, *ii = NULL, *sc = NULL, *out = out_name(im, 0);
    if (x->desc.dtype != CG_F32 || ix->desc.dtype != CG_I64)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "MaxUnpool of float X and int64 I only");
    if ((s = onnx_sub_scalar(im, CG_F32, 0, &zero)) || (s = onnx_new_const_data(im, CG_I64, 1, &n, od, &shp)) ||
        (s = onnx_new_const_data(im, CG_I64, 1, (const int64_t[]){1}, &flat, &shp1)) ||
        (s = onnx_new_const_data(im, CG_I64, 1, (const int64_t[]){1}, &tot, &z)))
        return s;
    const char *zin[2] = {zero, z}, *ex = NULL;
    if ((s = onnx_sub_node(im, "Expand", 2, zin, 1, &ex, 0, NULL)) ||
        (s = onnx_sub2(im, "Reshape", x->name, shp1, &xs)) || (s = onnx_sub2(im, "Reshape", ix->name, shp1, &is)))
        return s;
    if (memcmp(d, od, (size_t)nd * sizeof *d) && (s = unpool_remap(im, is, nd, d, od, &ii))) return s;
    const char *sin[3] = {ex, ii ? ii : is, xs};
    if ((s = onnx_sub_node(im, "ScatterElements", 3, sin, 1, &sc, 0, NULL))) return s;
    return onnx_sub2(im, "Reshape", sc, shp, &out);
}

/* ---- GridSample ---- */

/* GridSample: clgraph's grid_sample; opset 16's bilinear and bicubic are
 * its linear and cubic. */
cg_status cg_onnx_map_grid_sample(onnx_imp *im) {
    static const char *const known[] = {"mode", "padding_mode", "align_corners", NULL};
    onnx_val *x, *g;
    char mode[16], pad[16], a[120];
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &x)) || (s = need_in(im, 1, &g))) return s;
    if (!onnx_attr_str(im, "mode", "linear", mode, sizeof mode) ||
        !onnx_attr_str(im, "padding_mode", "zeros", pad, sizeof pad))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "unknown mode or padding_mode");
    const char *m = !strcmp(mode, "bilinear") ? "linear" : !strcmp(mode, "bicubic") ? "cubic" : mode;
    if (strcmp(m, "linear") && strcmp(m, "nearest") && strcmp(m, "cubic"))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "mode '%s' is not supported", mode);
    if (strcmp(pad, "zeros") && strcmp(pad, "border") && strcmp(pad, "reflection"))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "padding_mode '%s' is not supported", pad);
    snprintf(a, sizeof a, "mode: \"%s\", padding: \"%s\", align_corners: %d", m, pad,
             onnx_attr_int(im, "align_corners", 0) != 0);
    const char *in[2] = {x->name, g->name};
    return emit1(im, "grid_sample", 2, in, out_name(im, 0), a);
}

/* ---- RoiAlign ---- */

/* RoiAlign: clgraph's roi_align, batch_indices cast to i32; opset 10 (no
 * coordinate_transformation_mode) pools with the legacy rule. */
cg_status cg_onnx_map_roi_align(onnx_imp *im) {
    static const char *const known[] = {"coordinate_transformation_mode",
                                        "mode",
                                        "output_height",
                                        "output_width",
                                        "sampling_ratio",
                                        "spatial_scale",
                                        NULL};
    onnx_val *x, *r, *b;
    char mode[8], ct[24], a[240];
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &x)) || (s = need_in(im, 1, &r)) ||
        (s = need_in(im, 2, &b)))
        return s;
    if (!onnx_attr_str(im, "mode", "avg", mode, sizeof mode) ||
        !onnx_attr_str(im, "coordinate_transformation_mode", im->opset >= 16 ? "half_pixel" : "output_half_pixel", ct,
                       sizeof ct) ||
        (strcmp(mode, "avg") && strcmp(mode, "max")) || (strcmp(ct, "half_pixel") && strcmp(ct, "output_half_pixel")))
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "mode must be avg or max, coordinate_transformation_mode half_pixel "
                         "or output_half_pixel");
    const double sc = onnx_attr_float(im, "spatial_scale", 1.0);
    snprintf(a, sizeof a,
             "mode: \"%s\", output_height: %lld, output_width: %lld, sampling_ratio: %lld, spatial_scale: %.9g, "
             "half_pixel: %d",
             mode, (long long)onnx_attr_int(im, "output_height", 1), (long long)onnx_attr_int(im, "output_width", 1),
             (long long)onnx_attr_int(im, "sampling_ratio", 0), sc, !strcmp(ct, "half_pixel"));
    if (!isfinite(sc)) return onnx_fail(im, CG_ERR_UNSUPPORTED, "spatial_scale %g", sc);
    const char *bi = b->name;
    if (b->desc.dtype != CG_I32 && (s = emit_tmp(im, "cast", bi, "to: \"i32\"", &bi))) return s;
    const char *in[3] = {x->name, r->name, bi};
    return emit1(im, "roi_align", 3, in, out_name(im, 0), a);
}
