/* LinearAttention (onnx 1.23) unrolled over its concrete sequence length
 * as the ONNX ops of its definition (onnx_sub.c): per step t the state S
 * [B, Hkv, dk, dv] decays (gated: S * exp(g_t)), is corrected (delta: v_t
 * = beta_t * (v_t - k_t S)) and takes k_t^T v_t, and the output row is
 * scale * q_t S, the query heads grouped onto their key/value head by a
 * reshape (no copy of S per group). Like the unrolled RNN, a dedicated op
 * would be the faster next step. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The model's dims. */
typedef struct {
    int64_t b, t, hq, hkv, dk, dv;
    int gating, delta;
} la_dims;

/* Reshape of x to d[0..n) into *out (NULL: fresh). */
static cg_status la_reshape(onnx_imp *im, const char *x, int n, const int64_t *d, const char **out) {
    const int64_t nn = n;
    const char *k;
    cg_status s = onnx_new_const_data(im, CG_I64, 1, &nn, d, &k);
    return s ? s : onnx_sub2(im, "Reshape", x, k, out);
}

static cg_status la_transpose(onnx_imp *im, const char *x, const int64_t *perm, const char **out) {
    onnx_sub_attr a = onnx_sub_ints("perm", 4, perm);
    *out = NULL;
    return onnx_sub_node(im, "Transpose", 1, &x, 1, out, 1, &a);
}

/* x [B, T, H * D] as [B, H, T, D]. */
static cg_status la_heads(onnx_imp *im, const char *x, const la_dims *d, int64_t h, int64_t dd, const char **out) {
    static const int64_t perm[4] = {0, 2, 1, 3};
    const int64_t shp[4] = {d->b, d->t, h, dd};
    const char *r = NULL;
    cg_status s = la_reshape(im, x, 4, shp, &r);
    return s ? s : la_transpose(im, r, perm, out);
}

/* Step t of x [B, H, T, D]: [B, H, 1, D]. */
static cg_status la_step(onnx_imp *im, const char *x, int64_t t, const char **out) {
    const int64_t one = 1, st = t, en = t + 1, ax = 2;
    const char *ks, *ke, *ka;
    cg_status s;
    if ((s = onnx_new_const_data(im, CG_I64, 1, &one, &st, &ks)) ||
        (s = onnx_new_const_data(im, CG_I64, 1, &one, &en, &ke)) ||
        (s = onnx_new_const_data(im, CG_I64, 1, &one, &ax, &ka)))
        return s;
    const char *in[4] = {x, ks, ke, ka};
    *out = NULL;
    return onnx_sub_node(im, "Slice", 4, in, 1, out, 0, NULL);
}

/* Row [B, H, 1, D] as a column [B, H, D, 1]. */
static cg_status la_col(onnx_imp *im, const char *x, const char **out) {
    static const int64_t perm[4] = {0, 1, 3, 2};
    return la_transpose(im, x, perm, out);
}

/* One step: the state *st updated by q, k, v, g, beta rows (g, beta NULL
 * when the rule has none), the output row [B, Hq, 1, dv] into *out. */
static cg_status la_update(onnx_imp *im, const la_dims *d, const char **st, const char *q, const char *k, const char *v,
                           const char *g, const char *beta, const char *scale, const char **out) {
    const char *e = NULL, *gc, *kc, *r = NULL, *dv = NULL, *kv = NULL, *sn = NULL, *qg = NULL, *o = NULL, *os = NULL;
    cg_status s;
    if (g && ((s = onnx_sub_node(im, "Exp", 1, &g, 1, &e, 0, NULL)) || (s = la_col(im, e, &gc)) ||
              (s = onnx_sub2(im, "Mul", *st, gc, &sn))))
        return s;
    if (g) *st = sn, sn = NULL;
    if (beta) {
        const char *df = NULL;
        if ((s = onnx_sub2(im, "MatMul", k, *st, &r)) || (s = onnx_sub2(im, "Sub", v, r, &df)) ||
            (s = onnx_sub2(im, "Mul", beta, df, &dv)))
            return s;
        v = dv;
    }
    if ((s = la_col(im, k, &kc)) || (s = onnx_sub2(im, "MatMul", kc, v, &kv)) ||
        (s = onnx_sub2(im, "Add", *st, kv, &sn)))
        return s;
    *st = sn;
    const int64_t gq[4] = {d->b, d->hkv, d->hq / d->hkv, d->dk}, back[4] = {d->b, d->hq, 1, d->dv};
    if ((s = la_reshape(im, q, 4, gq, &qg)) || (s = onnx_sub2(im, "MatMul", qg, *st, &o)) ||
        (s = onnx_sub2(im, "Mul", o, scale, &os)))
        return s;
    *out = NULL;
    return la_reshape(im, os, 4, back, out);
}

/* The dims and the rule, checked. */
static cg_status la_check(onnx_imp *im, onnx_val *q, onnx_val *k, onnx_val *v, la_dims *d) {
    char rule[16];
    if (!onnx_attr_str(im, "update_rule", "gated_delta", rule, sizeof rule))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "update_rule is too long");
    d->gating = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
    d->delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
    if (!d->gating && !d->delta && strcmp(rule, "linear"))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "update_rule '%s' is not linear, gated, delta or gated_delta", rule);
    d->hq = onnx_attr_int(im, "q_num_heads", 0), d->hkv = onnx_attr_int(im, "kv_num_heads", 0);
    if (q->desc.ndim != 3 || k->desc.ndim != 3 || v->desc.ndim != 3 || d->hq <= 0 || d->hkv <= 0 || d->hq % d->hkv)
        return onnx_fail(im, CG_ERR_FORMAT,
                         "query, key, value must be [B, T, H * D] and q_num_heads a multiple of "
                         "kv_num_heads");
    d->b = q->desc.dims[0], d->t = q->desc.dims[1];
    d->dk = q->desc.dims[2] / d->hq, d->dv = v->desc.dims[2] / d->hkv;
    if (d->b < 0 || d->t < 1 || d->t > ONNX_MAX_IO || q->desc.dims[2] % d->hq || k->desc.dims[2] != d->hkv * d->dk ||
        v->desc.dims[2] % d->hkv)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "LinearAttention is unrolled: B and T (1..64) must be known and "
                         "the head dims must divide");
    if ((d->gating != (onnx_in(im, 4) != NULL)) || (d->delta != (onnx_in(im, 5) != NULL)))
        return onnx_fail(im, CG_ERR_FORMAT, "update_rule '%s' %s decay and %s beta", rule,
                         d->gating ? "needs" : "forbids", d->delta ? "needs" : "forbids");
    return CG_OK;
}

/* decay [B, T, Hkv or Hkv * dk] or beta [B, T, Hkv or 1] as [B, H, T, 1
 * or dk]. */
static cg_status la_gate(onnx_imp *im, onnx_val *x, const la_dims *d, int64_t per_head, const char **out) {
    const int64_t last = x->desc.ndim == 3 ? x->desc.dims[2] : -1;
    if (x->desc.ndim != 3 || x->desc.dims[0] != d->b || x->desc.dims[1] != d->t || (last != d->hkv && last != per_head))
        return onnx_fail(im, CG_ERR_FORMAT, "'%s' must be [%lld, %lld, %lld or %lld]", x->name, (long long)d->b,
                         (long long)d->t, (long long)d->hkv, (long long)per_head);
    if (last == per_head && per_head != 1) return la_heads(im, x->name, d, d->hkv, d->dk, out);
    return la_heads(im, x->name, d, last, 1, out);
}

/* The initial state: past_state, or zeros. */
static cg_status la_state0(onnx_imp *im, const la_dims *d, const char **st) {
    onnx_val *p = onnx_in(im, 3);
    const int64_t sd[4] = {d->b, d->hkv, d->dk, d->dv}, four = 4;
    if (p) {
        if (p->desc.ndim != 4 || memcmp(p->desc.dims, sd, sizeof sd))
            return onnx_fail(im, CG_ERR_FORMAT, "past_state '%s' must be [B, kv_num_heads, d_k, d_v]", p->name);
        *st = p->name;
        return CG_OK;
    }
    const char *z, *k;
    cg_status s;
    if ((s = onnx_sub_scalar(im, CG_F32, 0, &z)) || (s = onnx_new_const_data(im, CG_I64, 1, &four, sd, &k))) return s;
    *st = NULL;
    return onnx_sub2(im, "Expand", z, k, st);
}

/* LinearAttention: outputs [B, T, Hq * dv] and the present state. */
cg_status cg_onnx_map_linear_attention(onnx_imp *im) {
    static const char *const known[] = {"chunk_size", "kv_num_heads", "q_num_heads", "scale", "update_rule", NULL};
    static const int64_t perm[4] = {0, 2, 1, 3};
    onnx_val *q, *k, *v;
    la_dims d;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &q)) || (s = need_in(im, 1, &k)) ||
        (s = need_in(im, 2, &v)) || (s = la_check(im, q, k, v, &d)))
        return s;
    const double sc = onnx_attr_float(im, "scale", 0);
    const char *q4, *k4, *v4, *g4 = NULL, *b4 = NULL, *st, *ks, *rows[ONNX_MAX_IO];
    if ((s = la_heads(im, q->name, &d, d.hq, d.dk, &q4)) || (s = la_heads(im, k->name, &d, d.hkv, d.dk, &k4)) ||
        (s = la_heads(im, v->name, &d, d.hkv, d.dv, &v4)) ||
        (d.gating && (s = la_gate(im, onnx_in(im, 4), &d, d.hkv * d.dk, &g4))) ||
        (d.delta && (s = la_gate(im, onnx_in(im, 5), &d, 1, &b4))) || (s = la_state0(im, &d, &st)) ||
        (s = onnx_sub_scalar(im, CG_F32, sc == 0 ? 1 / sqrt((double)d.dk) : sc, &ks)))
        return s;
    for (int64_t t = 0; t < d.t; t++) {
        const char *qt, *kt, *vt, *gt = NULL, *bt = NULL;
        if ((s = la_step(im, q4, t, &qt)) || (s = la_step(im, k4, t, &kt)) || (s = la_step(im, v4, t, &vt)) ||
            (g4 && (s = la_step(im, g4, t, &gt))) || (b4 && (s = la_step(im, b4, t, &bt))) ||
            (s = la_update(im, &d, &st, qt, kt, vt, gt, bt, ks, &rows[t])))
            return s;
    }
    const char *cat = NULL, *tr, *out = out_name(im, 0), *ps = out_name(im, 1);
    onnx_sub_attr ax = onnx_sub_int("axis", 2);
    const int64_t shp[3] = {d.b, d.t, d.hq * d.dv};
    if ((s = onnx_sub_node(im, "Concat", (int)d.t, rows, 1, &cat, 1, &ax)) || (s = la_transpose(im, cat, perm, &tr)) ||
        (s = la_reshape(im, tr, 3, shp, &out)))
        return s;
    return ps ? onnx_sub_node(im, "Identity", 1, &st, 1, &ps, 0, NULL) : CG_OK;
}
