/* ONNX Attention (opset 23; 24's nonpad_kv_seqlen, 25's sliding window)
 * as clgraph ops, step for step as the operator's reference computes it
 * (onnx/reference/ops/op_attention.py), so that every intermediate rounds
 * where the reference's does: Q and K^T each scaled by sqrt(scale), their
 * product, softcap, the additive bias (mask, causal, window, padding), a
 * softmax whose fully masked rows are 0, the product with V. The positions
 * the causal and window masks compare are made with arange over the values
 * themselves, so symbolic sequence lengths work. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtype.h"

typedef struct att {
    onnx_val *mask, *past_k, *past_v, *nonpad;
    int rank3, causal, mode;
    int64_t hq, hkv, left, right;
    const char *q, *k, *v; /* [B, H, L, D] */
    const char *k_new;     /* K before the past keys join it */
} att;

/* x [B, L, H * D] as [B, H, L, D] into *out. */
static cg_status to_heads(onnx_imp *im, onnx_val *x, int64_t heads, const char **out) {
    const int64_t hidden = x->desc.dims[2];
    if (heads < 1 || hidden < 0 || hidden % heads)
        return onnx_fail(im, CG_ERR_FORMAT, "the last dim of '%s' (%lld) is not a multiple of %lld heads", x->name,
                         (long long)hidden, (long long)heads);
    const int64_t d[4] = {x->desc.dims[0], x->desc.dims[1], heads, hidden / heads};
    const char *r = NULL;
    cg_status s = onnx_emit_reshape(im, x, 4, d, &r);
    return s ? s : emit_tmp(im, "transpose", r, "perm: [0, 2, 1, 3]", out);
}

/* Each of the hkv heads of x [B, hkv, L, D] repeated r times in place
 * (h0, h0, h1, h1, ...: grouped-query attention) into *out. */
static cg_status repeat_heads(onnx_imp *im, const char *x, int64_t r, const char **out) {
    const onnx_val *v = onnx_val_get(im, x);
    const int64_t *d = v->desc.dims;
    const int64_t d5[5] = {d[0], d[1], 1, d[2], d[3]}, d4[4] = {d[0], d[1] * r, d[2], d[3]};
    const char *a = NULL, *e = NULL;
    char at[80];
    snprintf(at, sizeof at, "shape: [1, 1, %lld, 1, 1]", (long long)r);
    cg_status s;
    if ((s = onnx_emit_reshape(im, onnx_val_get(im, x), 5, d5, &a)) || (s = emit_tmp(im, "expand", a, at, &e)))
        return s;
    *out = NULL;
    return onnx_emit_reshape(im, onnx_val_get(im, e), 4, d4, out);
}

/* Q, K, V (3-D ones split into heads), the key and value caches (present_key
 * and present_value: past ++ new along the sequence) and the grouped-query
 * repeat. */
static cg_status read_qkv(onnx_imp *im, att *a) {
    onnx_val *q, *k, *v;
    cg_status s;
    if ((s = need_in(im, 0, &q)) || (s = need_in(im, 1, &k)) || (s = need_in(im, 2, &v))) return s;
    a->rank3 = q->desc.ndim == 3;
    if (q->desc.ndim != k->desc.ndim || q->desc.ndim != v->desc.ndim || (q->desc.ndim != 3 && q->desc.ndim != 4))
        return onnx_fail(im, CG_ERR_FORMAT, "Q, K and V must all have 3 or all 4 dims");
    if (a->rank3) {
        a->hq = onnx_attr_int(im, "q_num_heads", 0), a->hkv = onnx_attr_int(im, "kv_num_heads", 0);
        if (a->hq < 1 || a->hkv < 1)
            return onnx_fail(im, CG_ERR_FORMAT, "3-D inputs need q_num_heads and kv_num_heads (positive)");
        if ((s = to_heads(im, q, a->hq, &a->q)) || (s = to_heads(im, k, a->hkv, &a->k)) ||
            (s = to_heads(im, v, a->hkv, &a->v)))
            return s;
    } else {
        a->hq = q->desc.dims[1], a->hkv = k->desc.dims[1];
        a->q = q->name, a->k = k->name, a->v = v->name;
    }
    const char *kv[2] = {a->k, a->v};
    a->k_new = a->k;
    onnx_val *past[2] = {a->past_k, a->past_v};
    for (int i = 0; i < 2; i++) {
        const char *o = out_name(im, 1 + i);
        if (past[i]) {
            const char *in[2] = {past[i]->name, kv[i]};
            if ((s = onnx_emit(im, "concat", 2, in, 1, &o, "axis: 2"))) return s;
            kv[i] = o;
        } else if (o) {
            onnx_val *x = onnx_val_get(im, kv[i]);
            if ((s = emit_reshape(im, x, 4, x->desc.dims, o))) return s;
        }
    }
    a->k = kv[0], a->v = kv[1];
    if (a->hq == a->hkv) return CG_OK;
    if (a->hq < 1 || a->hkv < 1 || a->hq % a->hkv)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "%lld query heads over %lld key/value heads (a multiple is needed)",
                         (long long)a->hq, (long long)a->hkv);
    if ((s = repeat_heads(im, a->k, a->hq / a->hkv, &a->k))) return s;
    return repeat_heads(im, a->v, a->hq / a->hkv, &a->v);
}

/* An f32 or i64 scalar constant. */
static cg_status f32_const(onnx_imp *im, float f, const char **name) { return const_of(im, CG_F32, 0, NULL, &f, name); }
static cg_status i64_const(onnx_imp *im, int64_t v, const char **name) {
    return const_of(im, CG_I64, 0, NULL, &v, name);
}

/* The positions along axis 2 of x as i64, reshaped to dims nd (the axis
 * last or next to last); from_end: L - 1 - i instead of i (a cumsum of
 * ones from the end, so a symbolic L needs no value). */
static cg_status positions(onnx_imp *im, const char *x, int from_end, int nd, int last, const char **out) {
    const char *r = NULL, *c = NULL;
    cg_status s = emit_tmp(im, "arange", x, from_end ? "axis: 2, start: 1, delta: 0" : "axis: 2", &r);
    if (!s && from_end) s = emit_tmp(im, "cumsum", r, "axis: 0, exclusive: 1, reverse: 1", &c), r = c;
    if (s) return s;
    const onnx_val *v = onnx_val_get(im, r);
    int64_t d[4] = {1, 1, 1, 1};
    d[last ? nd - 1 : nd - 2] = v->desc.dims[0];
    *out = NULL;
    return onnx_emit_reshape(im, onnx_val_get(im, r), nd, d, out);
}

/* How far each query sits past each key, the reference's i + offset - j:
 * [Lq, Lt] with offset 0 (no cache) or the past keys' length, and
 * [B, 1, Lq, Lt] with nonpad_kv_seqlen[b] - Lq. */
static cg_status query_key_diff(onnx_imp *im, const att *a, const char *nonpad, const char **diff) {
    const char *i = NULL, *j = NULL, *t = NULL, *n1 = NULL, *one = NULL;
    cg_status s;
    if (nonpad) {
        if ((s = positions(im, a->q, 1, 4, 0, &i)) || (s = positions(im, a->k, 0, 4, 1, &j)) ||
            (s = emit_tmp2(im, "add", i, j, NULL, &t)) || (s = i64_const(im, 1, &one)) ||
            (s = emit_tmp2(im, "sub", nonpad, one, NULL, &n1)))
            return s;
        return emit_tmp2(im, "sub", n1, t, NULL, diff);
    }
    if ((s = positions(im, a->q, 0, 2, 0, &i))) return s;
    if (!a->past_k) {
        if ((s = positions(im, a->k, 0, 2, 1, &j))) return s;
        return emit_tmp2(im, "sub", i, j, NULL, diff);
    }
    /* the keys' positions relative to the new ones: -P .. -1 for the past
     * (-1 - (P - 1 - p)), then 0 .. Lnew - 1 */
    const char *rp = NULL, *m1 = NULL, *jp = NULL, *jn = NULL;
    if ((s = positions(im, a->past_k->name, 1, 2, 1, &rp)) || (s = i64_const(im, -1, &m1)) ||
        (s = emit_tmp2(im, "sub", m1, rp, NULL, &jp)) || (s = positions(im, a->k_new, 0, 2, 1, &jn)) ||
        (s = emit_tmp2(im, "concat", jp, jn, "axis: 1", &j)))
        return s;
    return emit_tmp2(im, "sub", i, j, NULL, diff);
}

/* b = b && (op(x, c)) for the i64 constant c (b NULL: the comparison). */
static cg_status and_cmp(onnx_imp *im, const char *op, const char *x, int64_t c, const char **b) {
    const char *k = NULL, *r = NULL;
    cg_status s;
    if ((s = i64_const(im, c, &k)) || (s = emit_tmp2(im, op, x, k, NULL, &r))) return s;
    if (!*b) return *b = r, CG_OK;
    return emit_tmp2(im, "logical_and", *b, r, NULL, b);
}

/* Where the causal mask, the window and nonpad_kv_seqlen let a query see a
 * key (bool), or NULL when none of them applies. */
static cg_status allowed(onnx_imp *im, const att *a, const char **ok) {
    const char *np = NULL;
    cg_status s;
    *ok = NULL;
    if (a->nonpad) {
        int64_t d[4] = {a->nonpad->desc.dims[0], 1, 1, 1};
        np = a->nonpad->name;
        if (a->nonpad->desc.ndim != 1) return onnx_fail(im, CG_ERR_FORMAT, "nonpad_kv_seqlen must be 1-D [B]");
        if (a->nonpad->desc.dtype != CG_I64 && (s = emit_tmp(im, "cast", np, "to: \"i64\"", &np))) return s;
        const char *r = NULL;
        if ((s = onnx_emit_reshape(im, onnx_val_get(im, np), 4, d, &r))) return s;
        np = r;
    }
    if (a->causal || a->left >= 0 || a->right >= 0) {
        const char *diff = NULL;
        if ((s = query_key_diff(im, a, np, &diff))) return s;
        if (a->causal && (s = and_cmp(im, "greater_equal", diff, 0, ok))) return s;
        if (a->left >= 0 && (s = and_cmp(im, "less_equal", diff, a->left, ok))) return s;
        if (a->right >= 0 && (s = and_cmp(im, "greater_equal", diff, -a->right, ok))) return s;
    }
    if (np) { /* keys at or past nonpad_kv_seqlen[b] are padding */
        const char *j = NULL, *r = NULL;
        if ((s = positions(im, a->k, 0, 4, 1, &j)) || (s = emit_tmp2(im, "less", j, np, NULL, &r))) return s;
        if (!*ok) return *ok = r, CG_OK;
        return emit_tmp2(im, "logical_and", *ok, r, NULL, ok);
    }
    return CG_OK;
}

/* attn_mask with its last dim padded to the keys' total length: with
 * false (bool) or -inf, as the reference pads a shorter mask. */
static cg_status padded_mask(onnx_imp *im, const att *a, const char **out) {
    onnx_val *m = a->mask;
    const int64_t lt = onnx_val_get(im, a->k)->desc.dims[2], ml = m->desc.dims[m->desc.ndim - 1];
    *out = m->name;
    if (ml == lt) return CG_OK;
    int64_t d[CG_MAX_DIMS];
    for (int i = 0; i < m->desc.ndim; i++) d[i] = m->desc.dims[i];
    d[m->desc.ndim - 1] = lt - ml;
    for (int i = 0; i < m->desc.ndim; i++)
        if (d[i] < 0 || lt < 0 || ml < 0 || lt < ml)
            return onnx_fail(im, CG_ERR_UNSUPPORTED,
                             "attn_mask's last dim (%lld) differs from the keys' length (%lld): padding it needs "
                             "concrete dims",
                             (long long)ml, (long long)lt);
    cg_tensor *t;
    const int is_bool = m->desc.dtype == CG_BOOL;
    cg_status s = cg_tensor_create(is_bool ? CG_BOOL : CG_F32, m->desc.ndim, d, &t);
    if (s) return s;
    const int64_t n = cg_tensor_numel(t);
    for (int64_t i = 0; i < n && !is_bool; i++) ((float *)cg_tensor_data(t))[i] = -INFINITY;
    if (is_bool) memset(cg_tensor_data(t), 0, (size_t)n);
    const char *pad, *in[2] = {m->name, NULL};
    if ((s = onnx_const_param(im, t, &pad))) return s;
    in[1] = pad;
    char at[40];
    snprintf(at, sizeof at, "axis: %d", m->desc.ndim - 1);
    *out = NULL;
    return onnx_emit(im, "concat", 2, in, 1, out, at);
}

/* The additive bias (0 or -inf where masked; a float mask's values), or
 * NULL when nothing is masked. */
static cg_status bias(onnx_imp *im, const att *a, const char **out) {
    const char *ok = NULL, *m = NULL, *zero = NULL, *ninf = NULL, *pb = NULL;
    cg_status s;
    *out = NULL;
    if ((s = allowed(im, a, &ok))) return s;
    if (!ok && !a->mask) return CG_OK;
    if ((s = f32_const(im, 0.0f, &zero)) || (s = f32_const(im, -INFINITY, &ninf))) return s;
    if (a->mask) {
        if ((s = padded_mask(im, a, &m))) return s;
        if (a->mask->desc.dtype == CG_BOOL) {
            const char *in[3] = {m, zero, ninf};
            m = NULL;
            if ((s = onnx_emit(im, "where", 3, in, 1, &m, NULL))) return s;
        } else if (a->mask->desc.dtype != CG_F32) {
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "attn_mask of %s (bool or float)",
                             cg_dtype_name((cg_dtype)a->mask->desc.dtype));
        }
    }
    if (ok) {
        const char *in[3] = {ok, zero, ninf};
        if ((s = onnx_emit(im, "where", 3, in, 1, &pb, NULL))) return s;
    }
    if (!m || !pb) return *out = m ? m : pb, CG_OK;
    return emit_tmp2(im, "add", m, pb, NULL, out);
}

/* Output 3 (qk_matmul_output) when the mode names this stage. */
static cg_status qk_out(onnx_imp *im, const att *a, int mode, const char *x) {
    if (!out_name(im, 3) || a->mode != mode) return CG_OK;
    onnx_val *v = onnx_val_get(im, x);
    return emit_reshape(im, v, v->desc.ndim, v->desc.dims, out_name(im, 3));
}

/* sqrt(scale) rounded to the inputs' type, as the reference scales both
 * Q and K by it. */
static float root_scale(onnx_imp *im, const att *a) {
    const onnx_val *q = onnx_val_get(im, a->q);
    double sc = onnx_attr(im, "scale") ? onnx_attr_float(im, "scale", 1) : 1 / sqrt((double)q->desc.dims[3]);
    float f = (float)sqrt(sc);
    uint32_t b;
    memcpy(&b, &f, 4);
    if (im->narrow == CG_F16) b = cg_f16_to_f32_bits(cg_f32_to_f16_bits(b));
    if (im->narrow == CG_BF16) b = cg_bf16_to_f32_bits(cg_f32_to_bf16_bits(b));
    memcpy(&f, &b, 4);
    return f;
}

/* The scores: (Q s) (K s)^T, then softcap (c tanh(x / c)). */
static cg_status scores(onnx_imp *im, const att *a, const char **out) {
    const char *qs = NULL, *ks = NULL, *c = NULL, *t = NULL;
    char at[64];
    snprintf(at, sizeof at, "alpha: %.9g, beta: 0.0", root_scale(im, a));
    cg_status s;
    if ((s = emit_tmp(im, "affine", a->q, at, &qs)) || (s = emit_tmp(im, "affine", a->k, at, &ks)) ||
        (s = emit_tmp2(im, "matmul", qs, ks, "transpose_b: 1", out)))
        return s;
    const double cap = onnx_attr_float(im, "softcap", 0);
    if (!(cap > 0)) return CG_OK;
    if ((s = f32_const(im, (float)cap, &c)) || (s = emit_tmp2(im, "div", *out, c, NULL, &t)) ||
        (s = emit_tmp(im, "tanh", t, NULL, &t)))
        return s;
    return emit_tmp2(im, "mul", t, c, NULL, out);
}

/* softmax over the keys; rows whose bias masks every key are 0 (decided on
 * the bias, as the reference, so +inf + -inf = NaN scores do not leak). */
static cg_status probabilities(onnx_imp *im, const char *x, const char *b, const char **p) {
    const char *m = NULL, *ninf = NULL, *zero = NULL, *all = NULL;
    cg_status s;
    if ((s = emit_tmp(im, "softmax", x, "axis: -1", p)) || !b) return s;
    if ((s = emit_tmp(im, "reduce_max", b, "axes: [-1], keepdims: 1", &m)) || (s = f32_const(im, -INFINITY, &ninf)) ||
        (s = f32_const(im, 0.0f, &zero)) || (s = emit_tmp2(im, "equal", m, ninf, NULL, &all)))
        return s;
    const char *in[3] = {all, zero, *p};
    *p = NULL;
    return onnx_emit(im, "where", 3, in, 1, p, NULL);
}

/* Y [B, Hq, Lq, Dv], or [B, Lq, Hq * Dv] for 3-D inputs. */
static cg_status output_y(onnx_imp *im, const att *a, const char *p) {
    const char *y = a->rank3 ? NULL : out_name(im, 0), *t = NULL;
    const char *in[2] = {p, a->v};
    cg_status s;
    if ((s = onnx_emit(im, "matmul", 2, in, 1, &y, NULL)) || !a->rank3) return s;
    if ((s = emit_tmp(im, "transpose", y, "perm: [0, 2, 1, 3]", &t))) return s;
    const onnx_val *v = onnx_val_get(im, t);
    const int64_t *d = v->desc.dims;
    const int64_t d3[3] = {d[0], d[1], d[2] < 0 || d[3] < 0 ? CG_DIM_UNKNOWN : d[2] * d[3]};
    return emit_reshape(im, onnx_val_get(im, t), 3, d3, out_name(im, 0));
}

static cg_status read_attrs(onnx_imp *im, att *a) {
    static const char *const known[] = {"is_causal",         "scale",
                                        "softcap",           "q_num_heads",
                                        "kv_num_heads",      "qk_matmul_output_mode",
                                        "softmax_precision", "left_window_size",
                                        "right_window_size", NULL};
    cg_status s = onnx_check_attrs(im, known);
    if (s) return s;
    a->causal = onnx_attr_int(im, "is_causal", 0) != 0;
    a->mode = (int)onnx_attr_int(im, "qk_matmul_output_mode", 0);
    a->left = onnx_attr_int(im, "left_window_size", -1), a->right = onnx_attr_int(im, "right_window_size", -1);
    if (a->mode < 0 || a->mode > 3) return onnx_fail(im, CG_ERR_FORMAT, "qk_matmul_output_mode %d (0 to 3)", a->mode);
    if (a->left < -1 || a->right < -1) return onnx_fail(im, CG_ERR_FORMAT, "a window size below -1");
    a->mask = onnx_in(im, 3), a->past_k = onnx_in(im, 4), a->past_v = onnx_in(im, 5), a->nonpad = onnx_in(im, 6);
    if (!a->past_k != !a->past_v) return onnx_fail(im, CG_ERR_FORMAT, "past_key and past_value go together");
    if (a->nonpad && a->past_k)
        return onnx_fail(im, CG_ERR_FORMAT, "nonpad_kv_seqlen cannot be combined with past_key and past_value");
    onnx_val *opt[4] = {a->mask, a->past_k, a->past_v, a->nonpad};
    for (int i = 0; i < 4; i++)
        if (opt[i] && !opt[i]->typed) return onnx_fail(im, CG_ERR_VERIFY, "input '%s' has no known type", opt[i]->name);
    return CG_OK;
}

cg_status cg_onnx_map_attention(onnx_imp *im) {
    att a = {0};
    const char *sc = NULL, *b = NULL, *sb = NULL, *p = NULL;
    cg_status s;
    if ((s = read_attrs(im, &a)) || (s = read_qkv(im, &a))) return s;
    if (onnx_val_get(im, a.q)->desc.dims[3] < 1 && !onnx_attr(im, "scale"))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "the default scale needs a concrete head size");
    if ((s = scores(im, &a, &sc)) || (s = qk_out(im, &a, 0, sc)) || (s = qk_out(im, &a, 1, sc)) ||
        (s = bias(im, &a, &b)))
        return s;
    sb = sc;
    if (b && (s = emit_tmp2(im, "add", sc, b, NULL, &sb))) return s;
    if ((s = qk_out(im, &a, 2, sb)) || (s = probabilities(im, sb, b, &p)) || (s = qk_out(im, &a, 3, p))) return s;
    return output_y(im, &a, p);
}
