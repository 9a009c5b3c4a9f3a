/* ONNX's linear quantization operators onto clgraph ops: QuantizeLinear,
 * DequantizeLinear and DynamicQuantizeLinear as the f32 arithmetic their
 * definitions give (divide, round half to even, add the zero point,
 * saturate, cast), which is how ONNX Runtime computes them too. Scales
 * and zero points may be run-time values (DynamicQuantizeLinear's are).
 * MatMulInteger is clgraph's matmul_integer. */
#include "onnx_imp.h"

#include <stdio.h>
#include <string.h>

/* One clgraph op on a (and b, when not NULL) into a fresh value, whose
 * name *out receives (a and b may be *out). */
static cg_status op2(onnx_imp *im, const char *op, const char *a, const char *b, const char *attrs, const char **out) {
    const char *ins[2] = {a, b};
    *out = NULL;
    return onnx_emit(im, op, b ? 2 : 1, ins, 1, out, attrs);
}

/* The same into the value named `name` (NULL: a fresh one). */
static cg_status op2_to(onnx_imp *im, const char *op, const char *a, const char *b, const char *attrs,
                        const char *name) {
    const char *ins[2] = {a, b}, *outs[1] = {name};
    return onnx_emit(im, op, b ? 2 : 1, ins, 1, outs, attrs);
}

/* The ONNX name of output o, or NULL where it is absent. */
static const char *out_at(onnx_imp *im, int o) {
    const Onnx__NodeProto *n = im->node;
    return (size_t)o < n->n_output && n->output[o] && n->output[o][0] ? n->output[o] : NULL;
}

static cg_status f32_const(onnx_imp *im, float v, const char **name) {
    cg_tensor *t;
    cg_status s = cg_tensor_create(CG_F32, 0, NULL, &t);
    if (s) return s;
    *(float *)cg_tensor_data(t) = v;
    return onnx_const_param(im, t, name);
}

static cg_status typed_in(onnx_imp *im, int i, onnx_val **v) {
    *v = onnx_in(im, i);
    if (!*v) return onnx_fail(im, CG_ERR_FORMAT, "input %d is missing", i);
    if (!(*v)->typed) return onnx_fail(im, CG_ERR_VERIFY, "input '%s' has no known type", (*v)->name);
    return CG_OK;
}

/* A scale or zero point v (one value, or one per slice of x along axis)
 * as f32, shaped to broadcast against x. */
static cg_status along_axis(onnx_imp *im, onnx_val *v, const onnx_val *x, int64_t axis, const char *what,
                            const char **out) {
    const char *cur = v->name;
    cg_status s;
    if (v->desc.dtype != CG_F32 && (s = op2(im, "cast", cur, NULL, "to: \"f32\"", &cur))) return s;
    *out = cur;
    if (v->desc.ndim == 0) return CG_OK;
    const int nd = x->desc.ndim;
    if (axis < 0) axis += nd;
    if (v->desc.ndim != 1 || v->desc.dims[0] < 0 || axis < 0 || axis >= nd)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "%s ('%s') must be one value, or a 1-D tensor of known size along "
                         "axis %lld of the %d-D input",
                         what, v->name, (long long)axis, nd);
    const int64_t c = v->desc.dims[0], xd = x->desc.dims[axis];
    if (c != 1 && xd >= 0 && c != xd)
        return onnx_fail(im, CG_ERR_FORMAT, "%s ('%s') has %lld values for a dim of %lld", what, v->name, (long long)c,
                         (long long)xd);
    char a[200];
    size_t u = (size_t)snprintf(a, sizeof a, "shape: [%lld", (long long)c);
    for (int i = (int)axis + 1; i < nd && u < sizeof a; i++) u += (size_t)snprintf(a + u, sizeof a - u, ", 1");
    if (u < sizeof a) snprintf(a + u, sizeof a - u, "]");
    return op2(im, "reshape", cur, NULL, a, out);
}

/* y = saturate(round(x / scale) + zp) as dt (u8, i8, u16 or i16) into
 * out; zp the f32 zero point shaped for x, or NULL. */
static cg_status quantize(onnx_imp *im, const char *x, const char *scale, const char *zp, cg_dtype dt,
                          const char *out) {
    const char *t = NULL;
    cg_status s;
    if ((s = op2(im, "div", x, scale, NULL, &t)) || (s = op2(im, "round", t, NULL, NULL, &t))) return s;
    if (zp && (s = op2(im, "add", t, zp, NULL, &t))) return s;
    const char *clip = dt == CG_U8    ? "min: 0, max: 255"
                       : dt == CG_I8  ? "min: -128, max: 127"
                       : dt == CG_U16 ? "min: 0, max: 65535"
                                      : "min: -32768, max: 32767";
    char to[24];
    snprintf(to, sizeof to, "to: \"%s\"", cg_dtype_name(dt));
    if ((s = op2(im, "clip", t, NULL, clip, &t))) return s;
    return op2_to(im, "cast", t, NULL, to, out);
}

cg_status cg_onnx_map_quantize(onnx_imp *im) {
    static const char *const known[] = {"axis", NULL};
    onnx_val *x, *scale, *zp = onnx_in(im, 2);
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = typed_in(im, 0, &x)) || (s = typed_in(im, 1, &scale))) return s;
    if (zp && !zp->typed) return onnx_fail(im, CG_ERR_VERIFY, "input '%s' has no known type", zp->name);
    const cg_dtype dt = zp ? (cg_dtype)zp->desc.dtype : CG_U8;
    if (x->desc.dtype != CG_F32 || scale->desc.dtype != CG_F32 ||
        (dt != CG_U8 && dt != CG_I8 && dt != CG_U16 && dt != CG_I16))
        return onnx_fail(
            im, CG_ERR_UNSUPPORTED, "QuantizeLinear of %s with a %s scale to %s (f32 to u8, i8, u16 or i16)",
            cg_dtype_name((cg_dtype)x->desc.dtype), cg_dtype_name((cg_dtype)scale->desc.dtype), cg_dtype_name(dt));
    const int64_t axis = onnx_attr_int(im, "axis", 1);
    const char *sc, *z = NULL;
    if ((s = along_axis(im, scale, x, axis, "input 1 (y_scale)", &sc)) ||
        (zp && (s = along_axis(im, zp, x, axis, "input 2 (y_zero_point)", &z))))
        return s;
    return quantize(im, x->name, sc, z, dt, out_at(im, 0));
}

cg_status cg_onnx_map_dequantize(onnx_imp *im) {
    static const char *const known[] = {"axis", NULL};
    onnx_val *x, *scale, *zp = onnx_in(im, 2);
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = typed_in(im, 0, &x)) || (s = typed_in(im, 1, &scale))) return s;
    if (zp && !zp->typed) return onnx_fail(im, CG_ERR_VERIFY, "input '%s' has no known type", zp->name);
    const cg_dtype dt = (cg_dtype)x->desc.dtype;
    if ((dt != CG_U8 && dt != CG_I8 && dt != CG_U16 && dt != CG_I16 && dt != CG_I32) || scale->desc.dtype != CG_F32 ||
        (zp && zp->desc.dtype != dt))
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "DequantizeLinear of %s with a %s scale (u8, i8, u16, i16 or i32, a zero "
                         "point of the same type, an f32 scale)",
                         cg_dtype_name(dt), cg_dtype_name((cg_dtype)scale->desc.dtype));
    const int64_t axis = onnx_attr_int(im, "axis", 1);
    const char *sc, *z = NULL, *t = NULL, *y = out_at(im, 0);
    if ((s = along_axis(im, scale, x, axis, "input 1 (x_scale)", &sc)) ||
        (zp && (s = along_axis(im, zp, x, axis, "input 2 (x_zero_point)", &z))) ||
        (s = op2(im, "cast", x->name, NULL, "to: \"f32\"", &t)) || (z && (s = op2(im, "sub", t, z, NULL, &t))))
        return s;
    /* i32 values past 2^24 round on the cast, as in ONNX Runtime */
    return op2_to(im, "mul", t, sc, NULL, y);
}

/* DynamicQuantizeLinear (u8): the range of x widened to hold 0, scale =
 * range / 255 (1 where the range is 0, as ONNX Runtime, so that an
 * all-zero x quantizes to zeros rather than NaN), zero point =
 * round(clip(-min / scale, 0, 255)), then QuantizeLinear. */
cg_status cg_onnx_map_dynamic_quantize(onnx_imp *im) {
    onnx_val *x;
    cg_status s;
    if ((s = onnx_check_attrs(im, NULL)) || (s = typed_in(im, 0, &x))) return s;
    if (x->desc.dtype != CG_F32)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "DynamicQuantizeLinear of %s (f32 only)",
                         cg_dtype_name((cg_dtype)x->desc.dtype));
    const char *zero, *one, *q255, *lo = NULL, *hi = NULL, *range = NULL, *is0 = NULL, *sc = NULL,
                                   *scale = out_at(im, 1), *zf = NULL, *zq = out_at(im, 2);
    const char *all = "axes: [], keepdims: 0";
    if ((s = f32_const(im, 0.0f, &zero)) || (s = f32_const(im, 1.0f, &one)) || (s = f32_const(im, 255.0f, &q255)) ||
        (s = op2(im, "neg", x->name, NULL, NULL, &lo)) || (s = op2(im, "reduce_max", lo, NULL, all, &lo)) ||
        (s = op2(im, "neg", lo, NULL, NULL, &lo)) || (s = op2(im, "minimum", lo, zero, NULL, &lo)) ||
        (s = op2(im, "reduce_max", x->name, NULL, all, &hi)) || (s = op2(im, "maximum", hi, zero, NULL, &hi)) ||
        (s = op2(im, "sub", hi, lo, NULL, &range)) || (s = op2(im, "equal", range, zero, NULL, &is0)) ||
        (s = op2(im, "div", range, q255, NULL, &sc)))
        return s;
    const char *w[3] = {is0, one, sc};
    const char *so[1] = {scale};
    if ((s = onnx_emit(im, "where", 3, w, 1, so, NULL))) return s;
    scale = so[0];
    if ((s = op2(im, "div", lo, scale, NULL, &zf)) || (s = op2(im, "neg", zf, NULL, NULL, &zf)) ||
        (s = op2(im, "clip", zf, NULL, "min: 0, max: 255", &zf)) || (s = op2(im, "round", zf, NULL, NULL, &zf)) ||
        (zq && (s = op2_to(im, "cast", zf, NULL, "to: \"u8\"", zq))))
        return s;
    return out_at(im, 0) ? quantize(im, x->name, scale, zf, CG_U8, out_at(im, 0)) : CG_OK;
}

/* MatMulInteger: clgraph's matmul_integer (a [..., M, K], a 2-D b; the
 * zero points one value or one per row of a / column of b). */
cg_status cg_onnx_map_matmul_integer(onnx_imp *im) {
    onnx_val *a, *b;
    cg_status s;
    if ((s = onnx_check_attrs(im, NULL)) || (s = typed_in(im, 0, &a)) || (s = typed_in(im, 1, &b))) return s;
    if (a->desc.ndim < 2 || b->desc.ndim != 2)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "MatMulInteger of %d-D A and %d-D B (A of 2 dims or more and a "
                         "2-D B are supported)",
                         a->desc.ndim, b->desc.ndim);
    const char *in[4] = {a->name, b->name, NULL, NULL};
    int n = 2;
    for (int i = 2; i < 4; i++) {
        onnx_val *z = onnx_in(im, i);
        if (!z) continue;
        if (!z->typed) return onnx_fail(im, CG_ERR_VERIFY, "input '%s' has no known type", z->name);
        if (i == 3 && !in[2]) { /* b's zero point without a's: a's is 0 */
            cg_tensor *t;
            if ((s = cg_tensor_create((cg_dtype)a->desc.dtype, 0, NULL, &t))) return s;
            memset(cg_tensor_data(t), 0, 1);
            if ((s = onnx_const_param(im, t, &in[2]))) return s;
        }
        in[i] = z->name;
        n = i + 1;
    }
    const char *outs[1] = {out_at(im, 0)};
    return onnx_emit(im, "matmul_integer", n, in, 1, outs, NULL);
}
