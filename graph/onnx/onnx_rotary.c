/* ONNX RotaryEmbedding (opset 23) as clgraph ops, as the reference
 * computes it: x as [B, S, H, D], its first rotary_embedding_dim features
 * split in halves (or, interleaved, even and odd ones), real = cos x1 -
 * sin x2 and imag = sin x1 + cos x2 put back in their places, the rest of
 * the features as they were. cos and sin come per [B, S] or, with
 * position_ids, are rows of the caches looked up by position (embedding). */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <string.h>

/* A slice of x along axis from start to end into *out. */
static cg_status cut(onnx_imp *im, const char *x, int axis, int64_t start, int64_t end, const char **out) {
    char a[120];
    snprintf(a, sizeof a, "axis: %d, start: %lld, end: %lld", axis, (long long)start, (long long)end);
    return emit_tmp(im, "slice", x, a, out);
}

/* The cos or sin cache as [B, S, 1, half] (with a trailing 1 when
 * interleaved), looked up by position_ids when given. */
static cg_status cache(onnx_imp *im, onnx_val *c, onnx_val *pos, int inter, const char **out) {
    const char *t = c->name;
    cg_status s;
    if (pos) {
        const char *ids = pos->name;
        if (c->desc.ndim != 2 || (pos->desc.dtype != CG_I64 && pos->desc.dtype != CG_I32))
            return onnx_fail(im, CG_ERR_FORMAT, "with position_ids the caches must be [max_position, D / 2]");
        if (pos->desc.dtype != CG_I32 && (s = emit_tmp(im, "cast", ids, "to: \"i32\"", &ids))) return s;
        if ((s = emit_tmp2(im, "embedding", c->name, ids, NULL, &t))) return s;
    }
    const onnx_val *v = onnx_val_get(im, t);
    if (v->desc.ndim != 3) return onnx_fail(im, CG_ERR_FORMAT, "the caches must be [B, S, D / 2]");
    const int64_t d[5] = {v->desc.dims[0], v->desc.dims[1], 1, v->desc.dims[2], 1};
    *out = NULL;
    return onnx_emit_reshape(im, onnx_val_get(im, t), inter ? 5 : 4, d, out);
}

/* x [B, S, H, D] from the input (3-D: [B, S, H * D], 4-D: [B, H, S, D]). */
static cg_status as_bshd(onnx_imp *im, onnx_val *x, const char **out) {
    if (x->desc.ndim == 4) return emit_tmp(im, "transpose", x->name, "perm: [0, 2, 1, 3]", out);
    const int64_t h = onnx_attr_int(im, "num_heads", 0), hid = x->desc.dims[2];
    if (x->desc.ndim != 3 || h < 1 || hid < 0 || hid % h)
        return onnx_fail(im, CG_ERR_FORMAT, "a 3-D input needs num_heads dividing its last dim");
    const int64_t d[4] = {x->desc.dims[0], x->desc.dims[1], h, hid / h};
    *out = NULL;
    return onnx_emit_reshape(im, x, 4, d, out);
}

/* real and imag of the rotation from the halves x1, x2. */
static cg_status rotate(onnx_imp *im, const char *x1, const char *x2, const char *cs, const char *sn, const char **re,
                        const char **imag) {
    const char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
    cg_status s;
    if ((s = emit_tmp2(im, "mul", cs, x1, NULL, &a)) || (s = emit_tmp2(im, "mul", sn, x2, NULL, &b)) ||
        (s = emit_tmp2(im, "sub", a, b, NULL, re)) || (s = emit_tmp2(im, "mul", sn, x1, NULL, &c)) ||
        (s = emit_tmp2(im, "mul", cs, x2, NULL, &d)))
        return s;
    return emit_tmp2(im, "add", c, d, NULL, imag);
}

cg_status cg_onnx_map_rotary(onnx_imp *im) {
    static const char *const known[] = {"interleaved", "num_heads", "rotary_embedding_dim", NULL};
    onnx_val *x, *cc, *sc, *pos = onnx_in(im, 3);
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &cc)) || (s = need_in(im, 2, &sc)) ||
        (pos && (s = need_in(im, 3, &pos))) || (s = onnx_check_attrs(im, known)))
        return s;
    const int inter = onnx_attr_int(im, "interleaved", 0) != 0;
    const char *xb = NULL, *cs = NULL, *sn = NULL, *xr = NULL, *x1 = NULL, *x2 = NULL, *re = NULL, *ig = NULL,
               *rot = NULL;
    if ((s = as_bshd(im, x, &xb))) return s;
    const onnx_val *v = onnx_val_get(im, xb);
    const int64_t hd = v->desc.dims[3], given = onnx_attr_int(im, "rotary_embedding_dim", 0), rd = given ? given : hd;
    if (hd < 0 || rd < 2 || rd > hd || rd % 2)
        return onnx_fail(im, CG_ERR_FORMAT, "rotary_embedding_dim %lld for a head size of %lld", (long long)rd,
                         (long long)hd);
    if ((s = cache(im, cc, pos, inter, &cs)) || (s = cache(im, sc, pos, inter, &sn)) ||
        (s = (rd == hd ? (xr = xb, CG_OK) : cut(im, xb, 3, 0, rd, &xr))))
        return s;
    if (inter) {
        const int64_t d5[5] = {v->desc.dims[0], v->desc.dims[1], v->desc.dims[2], rd / 2, 2};
        const char *x5 = NULL;
        if ((s = onnx_emit_reshape(im, onnx_val_get(im, xr), 5, d5, &x5)) || (s = cut(im, x5, 4, 0, 1, &x1)) ||
            (s = cut(im, x5, 4, 1, 2, &x2)) || (s = rotate(im, x1, x2, cs, sn, &re, &ig)) ||
            (s = emit_tmp2(im, "concat", re, ig, "axis: 4", &rot)))
            return s;
        const int64_t d4[4] = {v->desc.dims[0], v->desc.dims[1], v->desc.dims[2], rd};
        const char *r4 = NULL;
        if ((s = onnx_emit_reshape(im, onnx_val_get(im, rot), 4, d4, &r4))) return s;
        rot = r4;
    } else if ((s = cut(im, xr, 3, 0, rd / 2, &x1)) || (s = cut(im, xr, 3, rd / 2, rd, &x2)) ||
               (s = rotate(im, x1, x2, cs, sn, &re, &ig)) || (s = emit_tmp2(im, "concat", re, ig, "axis: 3", &rot))) {
        return s;
    }
    const char *rest = NULL;
    if (rd < hd && ((s = cut(im, xb, 3, rd, hd, &rest)) || (s = emit_tmp2(im, "concat", rot, rest, "axis: 3", &rot))))
        return s;
    if (x->desc.ndim == 4) return emit1(im, "transpose", 1, &rot, out_name(im, 0), "perm: [0, 2, 1, 3]");
    return emit_reshape(im, onnx_val_get(im, rot), 3, x->desc.dims, out_name(im, 0));
}
