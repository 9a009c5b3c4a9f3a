/* ONNX's Resize (opsets 10 to 19) and Upsample onto clgraph's resize: the
 * output dims and each axis' scale are computed here, as ONNX's reference
 * does (scales: floor(dim x scale); sizes: scale = size / dim, or one
 * scale for every axis with keep_aspect_ratio_policy), so scales, sizes and
 * roi must be known at import. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* What one Resize or Upsample node asks, for x of nd dims. */
typedef struct rs_req {
    int nd, has_scales, has_roi;
    double scale[CG_MAX_DIMS], roi[2 * CG_MAX_DIMS];
    int64_t out[CG_MAX_DIMS];
    char mode[16], coord[32], nearest[32], policy[16];
} rs_req;

/* The float values of known input i (absent, "" or empty: *n = 0). */
static cg_status known_floats(onnx_imp *im, int i, const char *what, int max, double *v, int *n) {
    onnx_val *x = onnx_in(im, i);
    const cg_tensor *t;
    *n = 0;
    if (!x) return CG_OK;
    cg_status s = onnx_need_const(im, x, what, &t);
    if (s) return s;
    if (cg_tensor_numel(t) == 0) return CG_OK;
    if (cg_tensor_dtype(t) != CG_F32 || cg_tensor_ndim(t) != 1)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "%s must be a 1-D float tensor", what);
    if (cg_tensor_numel(t) > max) return onnx_fail(im, CG_ERR_FORMAT, "%s has too many values", what);
    *n = (int)cg_tensor_numel(t);
    for (int k = 0; k < *n; k++) v[k] = ((const float *)cg_tensor_data_const(t))[k];
    return CG_OK;
}

/* The axes (input 'axes' attribute, opset 18) as positions of x, or all. */
static cg_status axes_of(onnx_imp *im, int nd, int64_t *ax, int *na) {
    int n;
    const int64_t *a = onnx_attr_ints(im, "axes", &n);
    *na = nd;
    for (int i = 0; i < nd; i++) ax[i] = i;
    if (n < 0) return CG_OK;
    if (n > nd) return onnx_fail(im, CG_ERR_FORMAT, "axes has %d values for %d dims", n, nd);
    for (int i = 0; i < n; i++) {
        ax[i] = a[i] < 0 ? a[i] + nd : a[i];
        if (ax[i] < 0 || ax[i] >= nd) return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)a[i]);
        for (int j = 0; j < i; j++)
            if (ax[j] == ax[i]) return onnx_fail(im, CG_ERR_FORMAT, "axis %lld is given twice", (long long)a[i]);
    }
    *na = n;
    return CG_OK;
}

/* Output dims from sizes (and keep_aspect_ratio_policy). */
static cg_status from_sizes(onnx_imp *im, const onnx_val *x, rs_req *r, const int64_t *ax, int na, const int64_t *sz) {
    const int64_t *d = x->desc.dims;
    double s = 0;
    const int keep = strcmp(r->policy, "stretch") != 0;
    if (keep && strcmp(r->policy, "not_larger") && strcmp(r->policy, "not_smaller"))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "keep_aspect_ratio_policy '%s'", r->policy);
    for (int i = 0; i < na; i++) {
        if (d[ax[i]] <= 0 || sz[i] < 0)
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "size %lld for dim %d of x, which is %s", (long long)sz[i],
                             (int)ax[i], d[ax[i]] < 0 ? "symbolic" : "empty");
        const double f = (double)sz[i] / (double)d[ax[i]];
        if (!i || (!strcmp(r->policy, "not_larger") ? f < s : f > s)) s = f;
        r->out[ax[i]] = sz[i], r->scale[ax[i]] = f;
    }
    r->has_scales = keep;
    for (int i = 0; keep && i < na; i++) r->scale[ax[i]] = s, r->out[ax[i]] = (int64_t)(s * (double)d[ax[i]] + 0.5);
    return CG_OK;
}

/* Output dims from scales: floor(dim x scale); a symbolic dim only with
 * scale 1. */
static cg_status from_scales(onnx_imp *im, const onnx_val *x, rs_req *r, const int64_t *ax, int na, const double *sc) {
    for (int i = 0; i < na; i++) {
        const int64_t d = x->desc.dims[ax[i]];
        if (!(sc[i] > 0) || !isfinite(sc[i]) || sc[i] * (double)d > (double)((int64_t)1 << 40))
            return onnx_fail(im, CG_ERR_FORMAT,
                             "scale %g of dim %d must be positive (and the size it gives below 2^40)", sc[i],
                             (int)ax[i]);
        if (d < 0 && sc[i] != 1)
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "dim %d of x is symbolic and scaled by %g", (int)ax[i], sc[i]);
        r->scale[ax[i]] = sc[i];
        r->out[ax[i]] = d < 0 ? d : (int64_t)(sc[i] * (double)d);
    }
    r->has_scales = 1;
    return CG_OK;
}

/* Resize's inputs (opset 10: X, scales; 11 on: X, roi, scales, sizes). */
static cg_status resize_inputs(onnx_imp *im, const onnx_val *x, rs_req *r) {
    int64_t ax[CG_MAX_DIMS], sz[CG_MAX_DIMS];
    double sc[CG_MAX_DIMS];
    int na, ns, nz = 0, nr = 0;
    cg_status s;
    if ((s = axes_of(im, r->nd, ax, &na)) ||
        (s = known_floats(im, im->opset < 11 ? 1 : 2, "input 'scales'", CG_MAX_DIMS, sc, &ns)))
        return s;
    if (im->opset >= 11 && onnx_in(im, 3) && (s = cg_onnx_known_ints(im, 3, "input 'sizes'", CG_MAX_DIMS, sz, &nz)))
        return s;
    if (!strcmp(r->coord, "tf_crop_and_resize") &&
        (s = known_floats(im, 1, "input 'roi'", 2 * CG_MAX_DIMS, r->roi, &nr)))
        return s;
    if ((ns > 0) == (nz > 0)) return onnx_fail(im, CG_ERR_FORMAT, "exactly one of scales and sizes must be given");
    if ((ns && ns != na) || (nz && nz != na) || (nr && nr != 2 * na))
        return onnx_fail(im, CG_ERR_FORMAT, "scales, sizes or roi do not have a value per axis");
    if (nr) { /* spread over x's dims: 0 and 1 on the others */
        double roi[2 * CG_MAX_DIMS];
        for (int i = 0; i < r->nd; i++) roi[i] = 0, roi[r->nd + i] = 1;
        for (int i = 0; i < na; i++) roi[ax[i]] = r->roi[i], roi[r->nd + ax[i]] = r->roi[na + i];
        memcpy(r->roi, roi, sizeof roi);
        r->has_roi = 1;
    }
    return ns ? from_scales(im, x, r, ax, na, sc) : from_sizes(im, x, r, ax, na, sz);
}

/* Appends dim d (a size, or a symbol of the model) to buf. */
static void dim_text(onnx_imp *im, char *buf, size_t size, size_t *u, int64_t d) {
    if (*u >= size) return;
    if (d < -1 && -2 - d < im->m->n_syms) {
        const char *nm = im->m->syms[-2 - d];
        *u += (size_t)snprintf(buf + *u, size - *u, cg_ident_valid(nm) ? "%s" : "`%s`", nm);
    } else {
        *u += (size_t)snprintf(buf + *u, size - *u, "%lld", (long long)d);
    }
}

/* resize's attribute text for r; 0 when it does not fit. */
static int attrs_text(onnx_imp *im, const rs_req *r, double a, int exclude, double ev, int aa, char *buf, size_t size) {
    size_t u = (size_t)snprintf(buf, size, "sizes: [");
    for (int i = 0; i < r->nd; i++) {
        if (i && u < size) u += (size_t)snprintf(buf + u, size - u, ", ");
        dim_text(im, buf, size, &u, r->out[i]);
    }
    if (u < size && r->has_scales) {
        u += (size_t)snprintf(buf + u, size - u, "], scales: \"");
        for (int i = 0; i < r->nd && u < size; i++)
            u += (size_t)snprintf(buf + u, size - u, "%s%.17g", i ? " " : "", r->scale[i]);
        if (u < size) u += (size_t)snprintf(buf + u, size - u, "\"");
    } else if (u < size) {
        u += (size_t)snprintf(buf + u, size - u, "]");
    }
    if (u < size && r->has_roi) {
        u += (size_t)snprintf(buf + u, size - u, ", roi: \"");
        for (int i = 0; i < 2 * r->nd && u < size; i++)
            u += (size_t)snprintf(buf + u, size - u, "%s%.17g", i ? " " : "", r->roi[i]);
        if (u < size) u += (size_t)snprintf(buf + u, size - u, "\"");
    }
    if (u < size)
        u += (size_t)snprintf(buf + u, size - u,
                              ", mode: \"%s\", coordinate_transformation_mode: \"%s\", nearest_mode: \"%s\", "
                              "cubic_coeff_a: %.17g, exclude_outside: %d, extrapolation_value: %.17g, antialias: %d",
                              r->mode, r->coord, r->nearest, a, exclude, ev, aa);
    return u < size;
}

/* resize of x by r (nearest moves any dtype; linear and cubic compute in
 * f32, 16-bit floats widened and narrowed back). */
static cg_status emit_resize(onnx_imp *im, onnx_val *x, const rs_req *r, double a, int exclude, double ev, int aa) {
    char attrs[1600];
    const cg_dtype dt = (cg_dtype)x->desc.dtype;
    const int near = !strcmp(r->mode, "nearest"), narrow = dt == CG_F16 || dt == CG_BF16;
    if (!near && dt != CG_F32 && !narrow)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "mode %s of %s values (only floats)", r->mode, cg_dtype_name(dt));
    if (!attrs_text(im, r, a, exclude, ev, aa, attrs, sizeof attrs))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "too many dims");
    const char *cur = x->name;
    cg_status s;
    if (near || !narrow) {
        const char *in[1] = {cur};
        return emit1(im, "resize", 1, in, out_name(im, 0), attrs);
    }
    if ((s = emit_tmp(im, "cast", cur, "to: \"f32\"", &cur)) || (s = emit_tmp(im, "resize", cur, attrs, &cur)))
        return s;
    const char *in[1] = {cur};
    return emit1(im, "cast", 1, in, out_name(im, 0), dt == CG_F16 ? "to: \"f16\"" : "to: \"bf16\"");
}

/* Before opset 11 (Resize 10, Upsample): asymmetric coordinates and ONNX
 * Runtime's nearest rule, floor where the axis grows and ceil where it
 * shrinks (one rule per node here: both at once is refused). */
static cg_status legacy_nearest(onnx_imp *im, rs_req *r) {
    int up = 0, down = 0;
    snprintf(r->coord, sizeof r->coord, "asymmetric");
    for (int i = 0; i < r->nd; i++) up |= r->scale[i] > 1, down |= r->scale[i] < 1;
    if (up && down && !strcmp(r->mode, "nearest"))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "nearest with some dims scaled up and others down (opset %lld)",
                         (long long)im->opset);
    snprintf(r->nearest, sizeof r->nearest, "%s", down ? "ceil" : "floor");
    return CG_OK;
}

static cg_status map_resize(onnx_imp *im) {
    static const char *const known[] = {"antialias",
                                        "axes",
                                        "coordinate_transformation_mode",
                                        "cubic_coeff_a",
                                        "exclude_outside",
                                        "extrapolation_value",
                                        "keep_aspect_ratio_policy",
                                        "mode",
                                        "nearest_mode",
                                        NULL};
    onnx_val *x;
    rs_req r;
    cg_status s;
    memset(&r, 0, sizeof r);
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known)) ||
        (s = cg_onnx_attr_string(im, "mode", "nearest", r.mode, sizeof r.mode)) ||
        (s = cg_onnx_attr_string(im, "coordinate_transformation_mode", "half_pixel", r.coord, sizeof r.coord)) ||
        (s = cg_onnx_attr_string(im, "nearest_mode", "round_prefer_floor", r.nearest, sizeof r.nearest)) ||
        (s = cg_onnx_attr_string(im, "keep_aspect_ratio_policy", "stretch", r.policy, sizeof r.policy)))
        return s;
    r.nd = x->desc.ndim;
    for (int i = 0; i < r.nd; i++) r.scale[i] = 1, r.out[i] = x->desc.dims[i];
    if ((s = resize_inputs(im, x, &r)) || (im->opset < 11 && (s = legacy_nearest(im, &r)))) return s;
    return emit_resize(im, x, &r, onnx_attr_float(im, "cubic_coeff_a", -0.75),
                       onnx_attr_int(im, "exclude_outside", 0) != 0, onnx_attr_float(im, "extrapolation_value", 0),
                       onnx_attr_int(im, "antialias", 0) != 0);
}

/* Upsample (deprecated since opset 10): scales as an attribute (opset 7)
 * or input 1 (opset 9); mode nearest, linear or bilinear. */
static cg_status map_upsample(onnx_imp *im) {
    static const char *const known[] = {"mode", "scales", "height_scale", "width_scale", NULL};
    onnx_val *x;
    rs_req r;
    double sc[CG_MAX_DIMS];
    int64_t ax[CG_MAX_DIMS];
    int n = 0;
    cg_status s;
    memset(&r, 0, sizeof r);
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known)) ||
        (s = cg_onnx_attr_string(im, "mode", "nearest", r.mode, sizeof r.mode)))
        return s;
    if (onnx_attr(im, "height_scale")) return onnx_fail(im, CG_ERR_UNSUPPORTED, "Upsample of opset 1");
    const Onnx__AttributeProto *a = onnx_attr_typed(im, "scales", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    if (a) {
        n = (int)a->n_floats;
        for (int i = 0; i < n && i < CG_MAX_DIMS; i++) sc[i] = a->floats[i];
    } else if ((s = known_floats(im, 1, "input 1 (scales)", CG_MAX_DIMS, sc, &n))) return s;
    if (!strcmp(r.mode, "bilinear")) snprintf(r.mode, sizeof r.mode, "linear");
    r.nd = x->desc.ndim;
    if (n != r.nd) return onnx_fail(im, CG_ERR_FORMAT, "scales has %d values for %d dims", n, r.nd);
    for (int i = 0; i < r.nd; i++) ax[i] = i, r.out[i] = x->desc.dims[i];
    if ((s = from_scales(im, x, &r, ax, r.nd, sc)) || (s = legacy_nearest(im, &r))) return s;
    return emit_resize(im, x, &r, -0.75, 0, 0, 0);
}

cg_status cg_onnx_map_resize(onnx_imp *im) {
    return !strcmp(im->node->op_type, "Upsample") ? map_upsample(im) : map_resize(im);
}
