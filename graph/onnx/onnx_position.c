/* ONNX ops that pick or move elements by their positions, taking any
 * dtype: EyeLike (1 where column - row == k, from arange), ReverseSequence
 * (each batch entry's first seq_len steps reversed, gather_elements of
 * the reversed positions), Compress (the positions its known condition
 * keeps) and TensorScatter (a cache written at per-batch positions). */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* arange(like) along axis as i64, reshaped to rank r with the length at
 * position `at` and 1 elsewhere, into *out. */
static cg_status positions(onnx_imp *im, const char *like, int axis, int r, int at, const char **out) {
    char a[40];
    const char *p = NULL;
    snprintf(a, sizeof a, "axis: %d", axis);
    cg_status s = emit_tmp(im, "arange", like, a, &p);
    if (s) return s;
    onnx_val *v = onnx_val_get(im, p);
    int64_t d[CG_MAX_DIMS];
    for (int i = 0; i < r; i++) d[i] = i == at ? v->desc.dims[0] : 1;
    *out = NULL;
    return onnx_emit_reshape(im, v, r, d, out);
}

/* A scalar constant of dtype dt holding 0 or 1. */
static cg_status scalar_of(onnx_imp *im, cg_dtype dt, int one, const char **name) {
    unsigned char b[8] = {0};
    const float f = 1.0f;
    const uint16_t h = 0x3C00, bh = 0x3F80; /* 1.0 in f16 and bf16 */
    if (one && dt == CG_F32) memcpy(b, &f, 4);
    else if (one && dt == CG_F16) memcpy(b, &h, 2);
    else if (one && dt == CG_BF16) memcpy(b, &bh, 2);
    else if (one && dt == CG_I64) memcpy(b, &(int64_t){1}, 8);
    else if (one && dt == CG_I32) memcpy(b, &(int32_t){1}, 4);
    else if (one) b[0] = 1; /* i8, u8, bool */
    return const_of(im, dt, 0, NULL, b, name);
}

/* EyeLike: [R, C] (a 1-D input n: [n, n]) of dtype `dtype` (default the
 * input's), 1 on diagonal k. */
cg_status cg_onnx_map_eye_like(onnx_imp *im) {
    static const char *const known[] = {"dtype", "k", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    const int r = x->desc.ndim;
    if (r != 1 && r != 2) return onnx_fail(im, CG_ERR_FORMAT, "the input must have 1 or 2 dims");
    cg_dtype dt = (cg_dtype)x->desc.dtype;
    if (onnx_attr(im, "dtype")) {
        const int64_t t = onnx_attr_int(im, "dtype", 0);
        if (!(dt = cg_onnx_dtype((int32_t)t)))
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "dtype %s is not supported", cg_onnx_type_name((int32_t)t));
    }
    const int64_t k = onnx_attr_int(im, "k", 0);
    const char *rows = NULL, *cols = NULL, *d = NULL, *kc = NULL, *eq = NULL, *one = NULL, *zero = NULL;
    if ((s = positions(im, x->name, 0, 2, 0, &rows)) || (s = positions(im, x->name, r - 1, 2, 1, &cols)) ||
        (s = emit_tmp2(im, "sub", cols, rows, NULL, &d)) || (s = const_of(im, CG_I64, 0, NULL, &k, &kc)) ||
        (s = emit_tmp2(im, "equal", d, kc, NULL, &eq)) || (s = scalar_of(im, dt, 1, &one)) ||
        (s = scalar_of(im, dt, 0, &zero)))
        return s;
    return emit1(im, "where", 3, (const char *[]){eq, one, zero}, out_name(im, 0), NULL);
}

/* ReverseSequence: along time_axis, position t of batch entry b reads
 * seq_lens[b] - 1 - t where t < seq_lens[b], else t itself. */
cg_status cg_onnx_map_reverse_sequence(onnx_imp *im) {
    static const char *const known[] = {"batch_axis", "time_axis", NULL};
    onnx_val *x, *len;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &len)) || (s = onnx_check_attrs(im, known))) return s;
    const int r = x->desc.ndim, ba = (int)onnx_attr_int(im, "batch_axis", 1),
              ta = (int)onnx_attr_int(im, "time_axis", 0);
    if (r < 2 || ba < 0 || ba > 1 || ta < 0 || ta > 1 || ba == ta)
        return onnx_fail(im, CG_ERR_FORMAT, "batch_axis and time_axis must be 0 and 1 (or 1 and 0) of a 2+-D input");
    if (len->desc.ndim != 1 || (len->desc.dtype != CG_I64 && len->desc.dtype != CG_I32))
        return onnx_fail(im, CG_ERR_FORMAT, "sequence_lens must be an integer vector [batch]");
    int64_t ld[CG_MAX_DIMS];
    for (int i = 0; i < r; i++) ld[i] = i == ba ? len->desc.dims[0] : 1;
    const char *l = len->name, *t = NULL, *lr = NULL, *one = NULL, *l1 = NULL, *rev = NULL, *lt = NULL, *idx = NULL;
    const int64_t c1 = 1;
    if ((len->desc.dtype != CG_I64 && (s = emit_tmp(im, "cast", l, "to: \"i64\"", &l))) ||
        (s = onnx_emit_reshape(im, onnx_val_get(im, l), r, ld, &lr)) || (s = positions(im, x->name, ta, r, ta, &t)) ||
        (s = const_of(im, CG_I64, 0, NULL, &c1, &one)) || (s = emit_tmp2(im, "sub", lr, one, NULL, &l1)) ||
        (s = emit_tmp2(im, "sub", l1, t, NULL, &rev)) || (s = emit_tmp2(im, "less", t, lr, NULL, &lt)) ||
        (s = onnx_emit(im, "where", 3, (const char *[]){lt, rev, t}, 1, &idx, NULL)))
        return s;
    /* gather_elements takes an index of the output's whole shape */
    char a[200];
    size_t u = (size_t)snprintf(a, sizeof a, "shape: [");
    for (int i = 0; i < r && u < sizeof a; i++) u += (size_t)snprintf(a + u, sizeof a - u, "%s1", i ? ", " : "");
    if (u < sizeof a) snprintf(a + u, sizeof a - u, "]");
    const char *full = NULL;
    if ((s = onnx_emit(im, "expand", 2, (const char *[]){idx, x->name}, 1, &full, a))) return s;
    snprintf(a, sizeof a, "axis: %d", ta);
    return emit1(im, "gather_elements", 2, (const char *[]){x->name, full}, out_name(im, 0), a);
}

/* Compress: the slices along axis (of x flattened without one) where the
 * condition, which must be known at import, holds. */
cg_status cg_onnx_map_compress(onnx_imp *im) {
    static const char *const known[] = {"axis", NULL};
    onnx_val *x;
    const cg_tensor *c;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known)) ||
        (s = onnx_need_const(im, onnx_in(im, 1), "input 1 (condition: the output's size depends on it)", &c)))
        return s;
    const int has_axis = onnx_attr(im, "axis") != NULL, r = x->desc.ndim;
    int64_t axis = onnx_attr_int(im, "axis", 0);
    if (has_axis && (axis < -r || axis >= r))
        return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)axis);
    if (axis < 0) axis += r;
    onnx_val *src = x;
    if (!has_axis) {
        const char *flat = NULL;
        if ((s = emit_tmp(im, "reshape", x->name, "shape: [-1]", &flat))) return s;
        src = onnx_val_get(im, flat), axis = 0;
    }
    const int64_t dim = src->desc.dims[axis], n = cg_tensor_numel(c);
    if (dim < 0 || n > dim || dim > INT32_MAX)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "a condition of %lld values along a dim of %lld (concrete, no shorter)", (long long)n,
                         (long long)dim);
    int64_t cnt = 0;
    for (int64_t i = 0; i < n; i++) cnt += cg_onnx_int_at(c, i) != 0;
    cg_tensor *idx;
    if ((s = cg_tensor_create(CG_I32, 1, &cnt, &idx))) return s;
    for (int64_t i = 0, k = 0; i < n; i++)
        if (cg_onnx_int_at(c, i)) ((int32_t *)cg_tensor_data(idx))[k++] = (int32_t)i;
    const char *iname, *y = out_name(im, 0);
    if ((s = onnx_const_param(im, idx, &iname))) return s;
    return onnx_emit_take(im, src, (int)axis, iname, &y);
}

/* TensorScatter (opset 24, a KV cache update): along axis, position p of
 * batch entry b takes update[k] with k = p - write_indices[b] (mode
 * circular: modulo the cache's length) where 0 <= k < the update's length,
 * else keeps past_cache[p]: gather_elements of the update at k (0 where
 * outside), then where. */
cg_status cg_onnx_map_tensor_scatter(onnx_imp *im) {
    static const char *const known[] = {"axis", "mode", NULL};
    onnx_val *past, *upd, *wi = onnx_in(im, 2);
    cg_status s;
    if ((s = need_in(im, 0, &past)) || (s = need_in(im, 1, &upd)) || (wi && (s = need_in(im, 2, &wi))) ||
        (s = onnx_check_attrs(im, known)))
        return s;
    const int r = past->desc.ndim;
    int64_t axis = onnx_attr_int(im, "axis", -2);
    if (axis < 0) axis += r;
    const Onnx__AttributeProto *m = onnx_attr_typed(im, "mode", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    const int circ = m && m->has_s && m->s.len == 8 && !memcmp(m->s.data, "circular", 8);
    if (m && m->has_s && !circ && !(m->s.len == 6 && !memcmp(m->s.data, "linear", 6)))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "mode '%.*s' (linear or circular)",
                         (int)(m->s.len > 20 ? 20 : m->s.len), (const char *)m->s.data);
    const int64_t smax = past->desc.dims[axis], sl = upd->desc.dims[axis];
    if (r < 2 || axis < 1 || axis >= r || upd->desc.ndim != r || smax < 0 || sl < 0)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "axis %lld of the cache (not the batch; concrete lengths)",
                         (long long)onnx_attr_int(im, "axis", -2));
    if (sl == 0) return emit_reshape(im, past, r, past->desc.dims, out_name(im, 0)); /* nothing written */
    int64_t wd[CG_MAX_DIMS];
    for (int i = 0; i < r; i++) wd[i] = i ? 1 : past->desc.dims[0];
    const char *p = NULL, *w = NULL, *k = NULL, *zero = NULL, *len = NULL, *ok = NULL, *lo = NULL, *idx = NULL;
    const int64_t z = 0, n = sl, cap = smax;
    if ((s = positions(im, past->name, (int)axis, r, (int)axis, &p)) ||
        (s = const_of(im, CG_I64, 0, NULL, &z, &zero)) || (s = const_of(im, CG_I64, 0, NULL, &n, &len)))
        return s;
    if (wi) {
        const char *wc = wi->name;
        if (wi->desc.dtype != CG_I64 && (s = emit_tmp(im, "cast", wc, "to: \"i64\"", &wc))) return s;
        if ((s = onnx_emit_reshape(im, onnx_val_get(im, wc), r, wd, &w)) || (s = emit_tmp2(im, "sub", p, w, NULL, &k)))
            return s;
    } else {
        k = p;
    }
    if (circ && wi) { /* k in (-cap, cap): one turn back */
        const char *neg = NULL, *c = NULL, *kc = NULL, *kw = NULL;
        if ((s = const_of(im, CG_I64, 0, NULL, &cap, &c)) || (s = emit_tmp2(im, "less", k, zero, NULL, &neg)) ||
            (s = emit_tmp2(im, "add", k, c, NULL, &kc)) ||
            (s = onnx_emit(im, "where", 3, (const char *[]){neg, kc, k}, 1, &kw, NULL)))
            return s;
        k = kw;
    }
    if ((s = emit_tmp2(im, "less", k, len, NULL, &ok)) || (s = emit_tmp2(im, "greater_equal", k, zero, NULL, &lo)) ||
        (s = emit_tmp2(im, "logical_and", ok, lo, NULL, &ok)) ||
        (s = onnx_emit(im, "where", 3, (const char *[]){ok, k, zero}, 1, &idx, NULL)))
        return s;
    char a[200];
    size_t u = (size_t)snprintf(a, sizeof a, "shape: [");
    for (int i = 0; i < r && u < sizeof a; i++) u += (size_t)snprintf(a + u, sizeof a - u, "%s1", i ? ", " : "");
    if (u < sizeof a) snprintf(a + u, sizeof a - u, "]");
    const char *full = NULL, *g = NULL;
    if ((s = onnx_emit(im, "expand", 2, (const char *[]){idx, past->name}, 1, &full, a))) return s;
    snprintf(a, sizeof a, "axis: %d", (int)axis);
    if ((s = emit_tmp2(im, "gather_elements", upd->name, full, a, &g))) return s;
    return emit1(im, "where", 3, (const char *[]){ok, g, past->name}, out_name(im, 0), NULL);
}
