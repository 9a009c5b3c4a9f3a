/* ONNX's indexing and padding operators onto clgraph ops: GatherND and
 * ScatterND (gather_nd, scatter_nd with int64 indices), Pad (pad, every
 * version's form), DepthToSpace and SpaceToDepth (reshape, transpose,
 * reshape). */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <string.h>

#include "dtype.h"

cg_status cg_onnx_attr_string(onnx_imp *im, const char *name, const char *def, char *buf, size_t size) {
    const Onnx__AttributeProto *a = onnx_attr_typed(im, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    snprintf(buf, size, "%s", def);
    if (!a || !a->has_s) return CG_OK;
    if (a->s.len >= size || memchr(a->s.data, 0, a->s.len) || memchr(a->s.data, '"', a->s.len))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "attribute '%s' has an unexpected value", name);
    memcpy(buf, a->s.data, a->s.len);
    buf[a->s.len] = 0;
    return CG_OK;
}

cg_status cg_onnx_known_ints(onnx_imp *im, int i, const char *what, int max, int64_t *v, int *n) {
    const cg_tensor *t;
    cg_status s = onnx_need_const(im, onnx_in(im, i), what, &t);
    if (s) return s;
    const cg_dtype dt = cg_tensor_dtype(t);
    if ((dt != CG_I64 && dt != CG_I32) || cg_tensor_ndim(t) > 1)
        return onnx_fail(im, CG_ERR_FORMAT, "%s must be a 1-D integer tensor", what);
    if (cg_tensor_numel(t) > max)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "%s has %lld values (at most %d)", what, (long long)cg_tensor_numel(t),
                         max);
    *n = (int)cg_tensor_numel(t);
    for (int k = 0; k < *n; k++) v[k] = cg_onnx_int_at(t, k);
    return CG_OK;
}

/* Indices as int64 (clgraph's index ops take i64). */
static cg_status i64_indices(onnx_imp *im, onnx_val *ix, const char **name) {
    *name = ix->name;
    if (ix->desc.dtype == CG_I64) return CG_OK;
    if (ix->desc.dtype != CG_I32) return onnx_fail(im, CG_ERR_FORMAT, "indices must be int64 or int32");
    return emit_tmp(im, "cast", ix->name, "to: \"i64\"", name);
}

/* GatherND: gather_nd with batch_dims (opset 12; 0 before). */
static cg_status map_gather_nd(onnx_imp *im) {
    static const char *const known[] = {"batch_dims", NULL};
    onnx_val *x, *ix;
    const char *idx;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &ix)) || (s = onnx_check_attrs(im, known)) ||
        (s = i64_indices(im, ix, &idx)))
        return s;
    char a[64];
    snprintf(a, sizeof a, "batch_dims: %lld", (long long)onnx_attr_int(im, "batch_dims", 0));
    const char *in[2] = {x->name, idx};
    return emit1(im, "gather_nd", 2, in, out_name(im, 0), a);
}

/* ScatterND: scatter_nd with the reduction (opset 16: add, mul; 18: max,
 * min). */
static cg_status map_scatter_nd(onnx_imp *im) {
    static const char *const known[] = {"reduction", NULL};
    onnx_val *x, *ix, *up;
    const char *idx;
    char red[16], a[64];
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &ix)) || (s = need_in(im, 2, &up)) ||
        (s = onnx_check_attrs(im, known)) || (s = cg_onnx_attr_string(im, "reduction", "none", red, sizeof red)) ||
        (s = i64_indices(im, ix, &idx)))
        return s;
    if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul") && strcmp(red, "max") && strcmp(red, "min"))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "reduction '%s'", red);
    snprintf(a, sizeof a, "reduction: \"%s\"", red);
    const char *in[3] = {x->name, idx, up->name};
    return emit1(im, "scatter_nd", 3, in, out_name(im, 0), a);
}

/* A one-element constant of dtype dt holding v (Pad's value attribute
 * before opset 11), made a param. */
static cg_status scalar_of(onnx_imp *im, cg_dtype dt, double v, const char **name) {
    unsigned char b[8] = {0};
    const float f = (float)v;
    uint32_t fb;
    memcpy(&fb, &f, sizeof fb);
    if (dt == CG_F32) memcpy(b, &f, 4);
    else if (dt == CG_F16 || dt == CG_BF16) {
        const uint16_t h = dt == CG_F16 ? cg_f32_to_f16_bits(fb) : cg_f32_to_bf16_bits(fb);
        memcpy(b, &h, 2);
    } else if (dt == CG_BOOL) b[0] = v != 0;
    else {
        const int64_t i = (int64_t)v; /* two's complement: the low bytes are the narrower type's */
        memcpy(b, &i, 8);
    }
    return const_of(im, dt, 0, NULL, b, name);
}

/* Pad's pads (begin of every axis, then end) for x's rank: the attribute
 * before opset 11 (`paddings` in opset 1), the input after, spread over
 * `axes` (input 3, opset 18) when given. */
static cg_status pads_of(onnx_imp *im, int nd, int64_t *pads) {
    int64_t v[2 * CG_MAX_DIMS], ax[CG_MAX_DIMS];
    int n, na = nd;
    cg_status s;
    if (im->opset < 11) {
        const int64_t *p = onnx_attr_ints(im, im->opset < 2 ? "paddings" : "pads", &n);
        if (n < 0) return onnx_fail(im, CG_ERR_FORMAT, "attribute pads is missing");
        if (n > 2 * CG_MAX_DIMS) return onnx_fail(im, CG_ERR_UNSUPPORTED, "pads has %d values", n);
        memcpy(v, p, (size_t)n * sizeof *v);
    } else if ((s = cg_onnx_known_ints(im, 1, "input 1 (pads)", 2 * CG_MAX_DIMS, v, &n))) return s;
    for (int i = 0; i < nd; i++) ax[i] = i;
    if (im->opset >= 18 && onnx_in(im, 3) && (s = cg_onnx_known_ints(im, 3, "input 3 (axes)", CG_MAX_DIMS, ax, &na)))
        return s;
    if (n != 2 * na) return onnx_fail(im, CG_ERR_FORMAT, "pads has %d values for %d axes", n, na);
    memset(pads, 0, 2 * (size_t)nd * sizeof *pads);
    for (int i = 0; i < na; i++) {
        const int64_t a = ax[i] < 0 ? ax[i] + nd : ax[i];
        if (a < 0 || a >= nd) return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)ax[i]);
        pads[a] = v[i], pads[nd + a] = v[na + i];
    }
    return CG_OK;
}

/* Pad's constant: the value attribute (before opset 11) or input 2, which
 * may be a run-time value; NULL for zero. */
static cg_status pad_value(onnx_imp *im, onnx_val *x, const char **name) {
    *name = NULL;
    if (im->opset < 11) {
        const double v = onnx_attr_float(im, "value", 0);
        return v == 0 ? CG_OK : scalar_of(im, (cg_dtype)x->desc.dtype, v, name);
    }
    onnx_val *c = onnx_in(im, 2);
    if (!c) return CG_OK;
    if (!c->typed || c->desc.dtype != x->desc.dtype)
        return onnx_fail(im, CG_ERR_FORMAT, "input 2 (constant_value) must have the dtype of x");
    for (int i = 0; i < c->desc.ndim; i++)
        if (c->desc.dims[i] != 1) return onnx_fail(im, CG_ERR_FORMAT, "input 2 (constant_value) must be one value");
    *name = c->name;
    return CG_OK;
}

static cg_status map_pad(onnx_imp *im) {
    static const char *const known[] = {"mode", "pads", "paddings", "value", NULL};
    onnx_val *x;
    int64_t pads[2 * CG_MAX_DIMS];
    char mode[16], l[400], a[480];
    const char *val;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known)) ||
        (s = cg_onnx_attr_string(im, "mode", "constant", mode, sizeof mode)) || (s = pads_of(im, x->desc.ndim, pads)) ||
        (s = pad_value(im, x, &val)))
        return s;
    if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge") && strcmp(mode, "wrap"))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "mode '%s'", mode);
    size_t u = (size_t)snprintf(l, sizeof l, "[");
    for (int i = 0; i < 2 * x->desc.ndim; i++)
        u += (size_t)snprintf(l + u, sizeof l - u, "%s%lld", i ? ", " : "", (long long)pads[i]);
    snprintf(a, sizeof a, "pads: %s], mode: \"%s\"", l, mode);
    const char *in[2] = {x->name, val};
    return emit1(im, "pad", val ? 2 : 1, in, out_name(im, 0), a);
}

/* DepthToSpace (DCR, CRD) and SpaceToDepth (DCR, and CRD from opset 25):
 * x [N, C, H, W] reshaped to 6 dims, transposed, reshaped back, as ONNX
 * defines them. */
static cg_status map_depth_space(onnx_imp *im) {
    static const char *const known[] = {"blocksize", "mode", NULL};
    onnx_val *x;
    char mode[8];
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known)) ||
        (s = cg_onnx_attr_string(im, "mode", "DCR", mode, sizeof mode)))
        return s;
    const int to_space = !strcmp(im->node->op_type, "DepthToSpace"), crd = !strcmp(mode, "CRD");
    const int64_t b = onnx_attr_int(im, "blocksize", 0), *d = x->desc.dims;
    if (!crd && strcmp(mode, "DCR")) return onnx_fail(im, CG_ERR_UNSUPPORTED, "mode '%s'", mode);
    if (x->desc.ndim != 4) return onnx_fail(im, CG_ERR_FORMAT, "x must have 4 dims");
    if (b < 1 || b > (1 << 20)) return onnx_fail(im, CG_ERR_FORMAT, "blocksize %lld out of range", (long long)b);
    for (int i = 1; i < 4; i++)
        if (d[i] < 0) return onnx_fail(im, CG_ERR_UNSUPPORTED, "x's dim %d is symbolic (C, H and W must be sizes)", i);
    if (to_space ? d[1] % (b * b) : d[2] % b || d[3] % b)
        return onnx_fail(im, CG_ERR_FORMAT, "x's dims are not divisible by the blocksize %lld", (long long)b);
    const int64_t n = d[0], c = d[1], h = d[2], w = d[3], cb = c / (b * b);
    int64_t t6[6], y[4], p[6];
    if (to_space) {
        const int64_t dcr[6] = {n, b, b, cb, h, w}, crd6[6] = {n, cb, b, b, h, w};
        const int64_t pd[6] = {0, 3, 4, 1, 5, 2}, pc[6] = {0, 1, 4, 2, 5, 3};
        memcpy(t6, crd ? crd6 : dcr, sizeof t6), memcpy(p, crd ? pc : pd, sizeof p);
        y[0] = n, y[1] = cb, y[2] = h * b, y[3] = w * b;
    } else {
        const int64_t t[6] = {n, c, h / b, b, w / b, b};
        const int64_t pd[6] = {0, 3, 5, 1, 2, 4}, pc[6] = {0, 1, 3, 5, 2, 4};
        memcpy(t6, t, sizeof t6), memcpy(p, crd ? pc : pd, sizeof p);
        y[0] = n, y[1] = c * b * b, y[2] = h / b, y[3] = w / b;
    }
    const char *r = NULL, *tr = NULL;
    char a[96];
    snprintf(a, sizeof a, "perm: [%lld, %lld, %lld, %lld, %lld, %lld]", (long long)p[0], (long long)p[1],
             (long long)p[2], (long long)p[3], (long long)p[4], (long long)p[5]);
    if ((s = onnx_emit_reshape(im, x, 6, t6, &r)) || (s = emit_tmp(im, "transpose", r, a, &tr))) return s;
    return emit_reshape(im, onnx_val_get(im, tr), 4, y, out_name(im, 0));
}

cg_status cg_onnx_map_index(onnx_imp *im) {
    const char *op = im->node->op_type;
    if (!strcmp(op, "GatherND")) return map_gather_nd(im);
    if (!strcmp(op, "ScatterND")) return map_scatter_nd(im);
    if (!strcmp(op, "Pad")) return map_pad(im);
    return map_depth_space(im);
}
