/* Operators of ONNX opsets 18 to 28 that are compositions of clgraph ops:
 * SwiGLU, TensorScatter, CenterCropPad and BitCast (ONNX's function bodies
 * are the guide). The Optional ops are onnx_seq.c's. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <string.h>

/* SwiGLU (28): a * sigmoid(alpha * a) * b, a and b of one shape. */
cg_status cg_onnx_map_swiglu(onnx_imp *im) {
    static const char *const known[] = {"alpha", NULL};
    onnx_val *a, *b;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &a)) || (s = need_in(im, 1, &b))) return s;
    if (a->desc.dtype != CG_F32 || b->desc.dtype != CG_F32)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "SwiGLU of %s and %s (floats only)",
                         cg_dtype_name((cg_dtype)a->desc.dtype), cg_dtype_name((cg_dtype)b->desc.dtype));
    if (a->desc.ndim != b->desc.ndim || memcmp(a->desc.dims, b->desc.dims, sizeof(int64_t) * (size_t)a->desc.ndim))
        return onnx_fail(im, CG_ERR_FORMAT, "SwiGLU's A ('%s') and B ('%s') must have one shape (no broadcasting)",
                         a->name, b->name);
    const double alpha = onnx_attr_float(im, "alpha", 1.0);
    char at[64];
    snprintf(at, sizeof at, "alpha: %.9g", alpha);
    if (strstr(at, "inf") || strstr(at, "nan")) return onnx_fail(im, CG_ERR_UNSUPPORTED, "alpha %g", alpha);
    const char *g = a->name, *t = NULL;
    if (alpha != 1.0 && (s = emit_tmp(im, "affine", g, at, &g))) return s;
    if ((s = emit_tmp(im, "sigmoid", g, NULL, &g)) || (s = emit_tmp2(im, "mul", a->name, g, NULL, &t))) return s;
    const char *in[2] = {t, b->name};
    return emit1(im, "mul", 2, in, out_name(im, 0), NULL);
}

/* An i64 constant holding one value. */
static cg_status i64_scalar(onnx_imp *im, int64_t v, const char **name) {
    return const_of(im, CG_I64, 0, NULL, &v, name);
}

/* TensorScatter's index of update's element along the axis: write_indices
 * of its batch (none: 0) plus its position, modulo the cache's length in
 * circular mode (one conditional subtraction: ONNX requires the write
 * index below that length and update no longer than it). Shaped
 * [B, 1.., S, 1..] and expanded to update's shape. */
static cg_status scatter_index(onnx_imp *im, const onnx_val *past, onnx_val *upd, onnx_val *wi, int axis, int circular,
                               const char **out) {
    const int nd = upd->desc.ndim;
    int64_t d[CG_MAX_DIMS];
    char at[80];
    cg_status s;
    snprintf(at, sizeof at, "axis: %d, to: \"i64\"", axis);
    const char *line = NULL, *idx;
    if ((s = emit_tmp(im, "arange", upd->name, at, &line))) return s;
    onnx_val *lv = onnx_val_get(im, line);
    if (!lv) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < nd; i++) d[i] = i == axis ? upd->desc.dims[axis] : 1;
    idx = NULL;
    if ((s = onnx_emit_reshape(im, lv, nd, d, &idx))) return s;
    if (wi) {
        for (int i = 0; i < nd; i++) d[i] = i ? 1 : wi->desc.dims[0];
        const char *w = NULL;
        if ((s = onnx_emit_reshape(im, wi, nd, d, &w)) || (s = emit_tmp2(im, "add", w, idx, NULL, &idx))) return s;
    }
    if (circular) {
        const int64_t len = past->desc.dims[axis];
        if (len < 0)
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "circular TensorScatter along a symbolic dim of '%s'", past->name);
        const char *m, *ge = NULL, *wrapped = NULL;
        if ((s = i64_scalar(im, len, &m)) || (s = emit_tmp2(im, "greater_equal", idx, m, NULL, &ge)) ||
            (s = emit_tmp2(im, "sub", idx, m, NULL, &wrapped)))
            return s;
        const char *w3[3] = {ge, wrapped, idx}, *o[1] = {NULL};
        if ((s = onnx_emit(im, "where", 3, w3, 1, o, NULL))) return s;
        idx = o[0];
    }
    const char *ex[2] = {idx, upd->name}, *o[1] = {NULL};
    if ((s = onnx_emit(im, "expand", 2, ex, 1, o, "shape: []"))) return s;
    *out = o[0];
    return CG_OK;
}

/* TensorScatter (24): update written into a copy of past_cache along axis
 * at each batch's write index (scatter_elements of a computed index). */
cg_status cg_onnx_map_tensor_scatter(onnx_imp *im) {
    static const char *const known[] = {"axis", "mode", NULL};
    onnx_val *past, *upd, *wi = onnx_in(im, 2);
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &past)) || (s = need_in(im, 1, &upd))) return s;
    const int nd = past->desc.ndim;
    const int axis = (int)onnx_attr_int(im, "axis", -2) + (onnx_attr_int(im, "axis", -2) < 0 ? nd : 0);
    if (axis < 1 || axis >= nd || upd->desc.ndim != nd || past->desc.dtype != upd->desc.dtype)
        return onnx_fail(im, CG_ERR_FORMAT,
                         "past_cache ('%s') and update ('%s') must have one dtype and rank, axis %lld one of "
                         "its dims after the batch",
                         past->name, upd->name, (long long)onnx_attr_int(im, "axis", -2));
    if (wi && (!wi->typed || wi->desc.dtype != CG_I64 || wi->desc.ndim != 1))
        return onnx_fail(im, CG_ERR_FORMAT, "write_indices must be a 1-D int64 tensor");
    const Onnx__AttributeProto *m = onnx_attr_typed(im, "mode", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    const int circular = m && m->has_s && m->s.len == 8 && !memcmp(m->s.data, "circular", 8);
    if (m && m->has_s && !circular && !(m->s.len == 6 && !memcmp(m->s.data, "linear", 6)))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "mode '%.*s' (linear or circular)",
                         (int)(m->s.len > 20 ? 20 : m->s.len), (const char *)m->s.data);
    const char *idx = NULL;
    if ((s = scatter_index(im, past, upd, wi, axis, circular, &idx))) return s;
    char at[32];
    snprintf(at, sizeof at, "axis: %d", axis);
    const char *in[3] = {past->name, idx, upd->name};
    return emit1(im, "scatter_elements", 3, in, out_name(im, 0), at);
}

/* cur padded with zeros along axis: `before` in front, `after` behind
 * (zeros expanded to cur's dims, which may be symbolic elsewhere). */
static cg_status pad_zeros(onnx_imp *im, const char **cur, int axis, int64_t before, int64_t after) {
    onnx_val *v = onnx_val_get(im, *cur);
    if (!v) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    const char *parts[3], *zero;
    int n = 0;
    unsigned char bytes[8] = {0};
    cg_status s = const_of(im, (cg_dtype)v->desc.dtype, 0, NULL, bytes, &zero);
    if (s) return s;
    const cg_tensor_desc desc = v->desc;
    for (int k = 0; k < 2; k++) {
        const int64_t len = k ? after : before;
        if (k) parts[n++] = *cur;
        if (!len) continue;
        int64_t d[CG_MAX_DIMS];
        char l[512], at[600];
        memcpy(d, desc.dims, sizeof d);
        d[axis] = len;
        if (!onnx_named_dims(im, desc.ndim, d, l, sizeof l))
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "the padded shape of '%s' has a dim clgraph cannot name", *cur);
        snprintf(at, sizeof at, "shape: %s", l);
        if ((s = emit_tmp(im, "expand", zero, at, &parts[n]))) return s;
        n++;
    }
    char at[32];
    snprintf(at, sizeof at, "axis: %d", axis);
    const char *o[1] = {NULL};
    if ((s = onnx_emit(im, "concat", n, parts, 1, o, at))) return s;
    *cur = o[0];
    return CG_OK;
}

/* CenterCropPad (18): along each axis the centred window of the new
 * length, the odd element cut from or added at the end (slice, or a concat
 * with zeros); the lengths must be known at import. */
cg_status cg_onnx_map_center_crop_pad(onnx_imp *im) {
    static const char *const known[] = {"axes", NULL};
    onnx_val *x, *sv;
    const cg_tensor *sh;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &x)) || (s = need_in(im, 1, &sv)) ||
        (s = onnx_need_const(im, sv, "input 1 (shape)", &sh)))
        return s;
    const int nd = x->desc.ndim;
    int na;
    const int64_t *ax = onnx_attr_ints(im, "axes", &na);
    if (!ax) na = nd;
    if (na != cg_tensor_numel(sh) || cg_tensor_ndim(sh) != 1)
        return onnx_fail(im, CG_ERR_FORMAT, "shape has %lld values for %d axes", (long long)cg_tensor_numel(sh), na);
    const char *cur = x->name;
    for (int i = 0; i < na; i++) {
        const int a = ax ? (int)(ax[i] < 0 ? ax[i] + nd : ax[i]) : i;
        const int64_t want = cg_onnx_int_at(sh, i), dim = x->desc.dims[a >= 0 && a < nd ? a : 0];
        if (a < 0 || a >= nd || want < 0)
            return onnx_fail(im, CG_ERR_FORMAT, "axis %d or its length is out of range", a);
        if (dim < 0 && want != dim)
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "CenterCropPad along symbolic dim %d of '%s'", a, x->name);
        if (want == dim) continue;
        if (want < dim) {
            char at[96];
            const int64_t start = (dim - want) / 2;
            snprintf(at, sizeof at, "axis: %d, start: %lld, end: %lld", a, (long long)start, (long long)(start + want));
            if ((s = emit_tmp(im, "slice", cur, at, &cur))) return s;
        } else if ((s = pad_zeros(im, &cur, a, (want - dim) / 2, want - dim - (want - dim) / 2))) {
            return s;
        }
    }
    onnx_val *v = onnx_val_get(im, cur);
    if (!v) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    return emit_reshape(im, v, v->desc.ndim, v->desc.dims, out_name(im, 0));
}

/* BitCast (26): the bits of each element read as another type of the same
 * size (clgraph's bitcast). */
cg_status cg_onnx_map_bitcast(onnx_imp *im) {
    static const char *const known[] = {"to", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &x))) return s;
    const Onnx__AttributeProto *to = onnx_attr_typed(im, "to", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (!to) return onnx_fail(im, CG_ERR_FORMAT, "no 'to' attribute");
    const cg_dtype dt = cg_onnx_dtype((int32_t)to->i);
    /* DOUBLE is computed as f32 (docs/onnx.md): its bits are not ONNX's */
    if (!dt || to->i == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "BitCast to %s (clgraph has no such type)",
                         cg_onnx_type_name((int32_t)to->i));
    if (cg_dtype_size(dt) != cg_dtype_size((cg_dtype)x->desc.dtype))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "BitCast of %s to %s: the types differ in size%s",
                         cg_dtype_name((cg_dtype)x->desc.dtype), cg_dtype_name(dt),
                         x->desc.dtype == CG_F32 ? " (a DOUBLE is read as f32: its bits are not ONNX's)" : "");
    char at[64];
    snprintf(at, sizeof at, "to: \"%s\"", cg_dtype_name(dt));
    const char *in[1] = {x->name};
    return emit1(im, "bitcast", 1, in, out_name(im, 0), at);
}
