/* QLinearMatMul as the arithmetic of its definition (onnx_sub.c): the
 * integer product of a - a_zero_point and b - b_zero_point, scaled by
 * a_scale * b_scale / y_scale, then quantized to y's type with
 * y_zero_point (QuantizeLinear with scale 1: round half to even, add,
 * saturate). The product is an f32 MatMul of the integer differences, exact
 * while every sum stays below 2^24 (K <= 258 for 8-bit operands);
 * MatMulInteger (int32) where K is larger and b is a matrix. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <string.h>

/* v cast to f32 into *out. */
static cg_status to_f32(onnx_imp *im, const char *v, const char **out) {
    onnx_sub_attr a = onnx_sub_int("to", 1);
    *out = NULL;
    return onnx_sub_node(im, "Cast", 1, &v, 1, out, 1, &a);
}

/* v - zp in f32 (zp absent: v as f32). */
static cg_status centered(onnx_imp *im, onnx_val *v, onnx_val *zp, const char **out) {
    const char *f, *z;
    cg_status s = to_f32(im, v->name, &f);
    if (s || !zp) return *out = f, s;
    if ((s = to_f32(im, zp->name, &z))) return s;
    *out = NULL;
    return onnx_sub2(im, "Sub", f, z, out);
}

/* The integer product (a - za) @ (b - zb) as f32 into *out. */
static cg_status int_product(onnx_imp *im, onnx_val *a, onnx_val *za, onnx_val *b, onnx_val *zb, const char **out) {
    const int64_t k = a->desc.dims[a->desc.ndim - 1];
    const char *ca, *cb, *p = NULL;
    cg_status s;
    *out = NULL;
    if (k >= 0 && k <= 258) {
        if ((s = centered(im, a, za, &ca)) || (s = centered(im, b, zb, &cb))) return s;
        return onnx_sub2(im, "MatMul", ca, cb, out);
    }
    if (b->desc.ndim != 2)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "K = %lld (over 258) with a b of %d dims", (long long)k, b->desc.ndim);
    const char *in[4] = {a->name, b->name, za ? za->name : "", zb ? zb->name : ""};
    if ((s = onnx_sub_node(im, "MatMulInteger", 4, in, 1, &p, 0, NULL))) return s;
    return to_f32(im, p, out);
}

/* Input i, which must hold one value (per-tensor quantization). */
static cg_status one_value(onnx_imp *im, int i, int optional, onnx_val **v) {
    *v = onnx_in(im, i);
    if (!*v && optional) return CG_OK;
    if (!*v || !(*v)->typed) return onnx_fail(im, CG_ERR_FORMAT, "input %d is missing", i);
    if (cg_shape_numel((*v)->desc.ndim, (*v)->desc.dims) != 1)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "input %d ('%s'): only one scale and zero point per tensor", i,
                         (*v)->name);
    return CG_OK;
}

cg_status cg_onnx_map_qlinear_matmul(onnx_imp *im) {
    onnx_val *a, *b, *q[6];
    cg_status s;
    if ((s = onnx_check_attrs(im, NULL)) || (s = need_in(im, 0, &a)) || (s = need_in(im, 3, &b))) return s;
    static const int qi[6] = {1, 2, 4, 5, 6, 7};
    for (int i = 0; i < 6; i++)
        if ((s = one_value(im, qi[i], i % 2, &q[i]))) return s;
    if (!q[5] && a->desc.dtype != CG_U8)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "y_zero_point is needed for an output type other than uint8");
    if (a->desc.ndim < 2 || b->desc.ndim < 2) return onnx_fail(im, CG_ERR_UNSUPPORTED, "a and b need 2 or more dims");
    const char *c, *sab = NULL, *k = NULL, *d = NULL, *one, *out = out_name(im, 0);
    const float f1 = 1.0f;
    if ((s = int_product(im, a, q[1], b, q[3], &c)) || (s = onnx_sub2(im, "Mul", q[0]->name, q[2]->name, &sab)) ||
        (s = onnx_sub2(im, "Div", sab, q[4]->name, &k)) || (s = onnx_sub2(im, "Mul", c, k, &d)) ||
        (s = onnx_new_const_data(im, CG_F32, 0, NULL, &f1, &one)))
        return s;
    const char *in[3] = {d, one, q[5] ? q[5]->name : ""};
    return onnx_sub_node(im, "QuantizeLinear", q[5] ? 3 : 2, in, 1, &out, 0, NULL);
}

/* v (one value, or one per output channel of m) shaped to broadcast over
 * [N, M, spatial...] of nd dims into *out. */
static cg_status per_channel(onnx_imp *im, onnx_val *v, int64_t m, int nd, const char **out) {
    int64_t d[CG_MAX_DIMS], n = nd;
    const int64_t cnt = cg_shape_numel(v->desc.ndim, v->desc.dims);
    if (cnt == 1) return *out = v->name, CG_OK;
    if (v->desc.ndim != 1 || cnt != m)
        return onnx_fail(im, CG_ERR_FORMAT, "'%s' must hold one value or one per output channel", v->name);
    for (int i = 0; i < nd; i++) d[i] = i == 1 ? m : 1;
    const char *shp;
    cg_status s = onnx_new_const_data(im, CG_I64, 1, &n, d, &shp);
    *out = NULL;
    return s ? s : onnx_sub2(im, "Reshape", v->name, shp, out);
}

/* QLinearConv: ConvInteger of x and w with their zero points (the node's
 * convolution attributes), plus the int32 bias, times x_scale * w_scale /
 * y_scale (w_scale one value or one per output channel), quantized with
 * y_zero_point as above. */
cg_status cg_onnx_map_qlinear_conv(onnx_imp *im) {
    onnx_val *x, *w, *q[6], *b = onnx_in(im, 8);
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 3, &w))) return s;
    static const int qi[6] = {1, 2, 4, 5, 6, 7};
    for (int i = 0; i < 6; i++) {
        q[i] = onnx_in(im, qi[i]);
        if (!q[i] && !(i % 2)) return onnx_fail(im, CG_ERR_FORMAT, "input %d (a scale) is missing", qi[i]);
    }
    if ((q[4] && cg_shape_numel(q[4]->desc.ndim, q[4]->desc.dims) != 1) ||
        (q[5] && cg_shape_numel(q[5]->desc.ndim, q[5]->desc.dims) != 1) ||
        cg_shape_numel(q[0]->desc.ndim, q[0]->desc.dims) != 1)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "x and y take one scale and zero point each");
    if (!q[5] && x->desc.dtype != CG_U8)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "y_zero_point is needed for an output type other than uint8");
    const Onnx__NodeProto *n = im->node;
    onnx_sub_attr at[16];
    if (n->n_attribute > 16) return onnx_fail(im, CG_ERR_UNSUPPORTED, "too many attributes");
    for (size_t i = 0; i < n->n_attribute; i++) at[i].a = *n->attribute[i];
    const int nd = x->desc.ndim;
    const int64_t m = w->desc.dims[0];
    const char *ci = NULL, *cf, *acc, *ws, *xw = NULL, *k = NULL, *r = NULL, *one, *out = out_name(im, 0);
    const char *in[4] = {x->name, w->name, q[1] ? q[1]->name : "", q[3] ? q[3]->name : ""};
    if ((s = onnx_sub_node(im, "ConvInteger", 4, in, 1, &ci, (int)n->n_attribute, at)) || (s = to_f32(im, ci, &cf)))
        return s;
    acc = cf;
    if (b) {
        const char *bf, *bb, *sum = NULL;
        if ((s = to_f32(im, b->name, &bf))) return s;
        onnx_val *bv = onnx_val_get(im, bf);
        if (!bv) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        if ((s = per_channel(im, bv, m, nd, &bb)) || (s = onnx_sub2(im, "Add", cf, bb, &sum))) return s;
        acc = sum;
    }
    const float f1 = 1.0f;
    if ((s = per_channel(im, q[2], m, nd, &ws)) || (s = onnx_sub2(im, "Mul", q[0]->name, ws, &xw)) ||
        (s = onnx_sub2(im, "Div", xw, q[4]->name, &k)) || (s = onnx_sub2(im, "Mul", acc, k, &r)) ||
        (s = onnx_new_const_data(im, CG_F32, 0, NULL, &f1, &one)))
        return s;
    const char *qin[3] = {r, one, q[5] ? q[5]->name : ""};
    return onnx_sub_node(im, "QuantizeLinear", q[5] ? 3 : 2, qin, 1, &out, 0, NULL);
}
