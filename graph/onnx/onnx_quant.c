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

static cg_status typed_in(onnx_imp *im, int i, onnx_val **v) {
    *v = onnx_in(im, i);
    if (!*v) return onnx_fail(im, CG_ERR_FORMAT, "input %d is missing", i);
    if (!(*v)->typed) return onnx_fail(im, CG_ERR_VERIFY, "input '%s' has no known type", (*v)->name);
    return CG_OK;
}

/* "shape: [d0, d1, ...]" of n dims into buf. */
static void shape_attr(char *buf, size_t size, int n, const int64_t *d) {
    size_t u = (size_t)snprintf(buf, size, "shape: [");
    for (int i = 0; i < n && u < size; i++)
        u += (size_t)snprintf(buf + u, size - u, "%s%lld", i ? ", " : "", (long long)d[i]);
    if (u < size) snprintf(buf + u, size - u, "]");
}

/* A blocked scale or zero point v (x's rank, dim `axis` ceil(D / block)):
 * each value repeated `block` times along axis (a reshape adding a dim of
 * 1 after it, an expand of that dim to block, a reshape merging the two),
 * cut to x's dim there. */
static cg_status blocked(onnx_imp *im, const char *cur, const onnx_val *v, const onnx_val *x, int axis, int64_t block,
                         const char *what, const char **out) {
    const int nd = x->desc.ndim;
    const int64_t xd = x->desc.dims[axis], sd = v->desc.dims[axis];
    int ok = v->desc.ndim == nd && nd < CG_MAX_DIMS && xd >= 0 && sd >= 0 && (xd + block - 1) / block == sd;
    for (int i = 0; ok && i < nd; i++) ok = v->desc.dims[i] >= 0 && (i == axis || v->desc.dims[i] == x->desc.dims[i]);
    if (!ok)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "%s ('%s') must have the input's %d known dims but ceil(dim / block_size) = "
                         "ceil(%lld / %lld) along axis %d",
                         what, v->name, nd, (long long)xd, (long long)block, axis);
    int64_t d1[CG_MAX_DIMS + 1], d3[CG_MAX_DIMS];
    for (int i = 0, k = 0; i < nd; i++) {
        d1[k++] = d3[i] = v->desc.dims[i];
        if (i == axis) d1[k++] = 1, d3[i] *= block;
    }
    char r1[220], ex[220], r3[220], sl[64];
    shape_attr(r1, sizeof r1, nd + 1, d1);
    d1[axis + 1] = block;
    shape_attr(ex, sizeof ex, nd + 1, d1);
    shape_attr(r3, sizeof r3, nd, d3);
    snprintf(sl, sizeof sl, "axis: %d, start: 0, end: %lld", axis, (long long)xd);
    cg_status s;
    if ((s = op2(im, "reshape", cur, NULL, r1, &cur)) || (s = op2(im, "expand", cur, NULL, ex, &cur)) ||
        (s = op2(im, "reshape", cur, NULL, r3, &cur)))
        return s;
    return sd * block == xd ? (*out = cur, CG_OK) : op2(im, "slice", cur, NULL, sl, out);
}

/* A scale or zero point v (one value, one per slice of x along axis, or
 * with block_size > 0 one per block of that many along axis) as f32,
 * shaped to broadcast against x. */
static cg_status along_axis(onnx_imp *im, onnx_val *v, const onnx_val *x, int64_t axis, int64_t block, const char *what,
                            const char **out) {
    const char *cur = v->name;
    cg_status s;
    if (v->desc.dtype != CG_F32 && (s = op2(im, "cast", cur, NULL, "to: \"f32\"", &cur))) return s;
    *out = cur;
    /* one value (a 1-D input's per-axis scale too) broadcasts as it is */
    if (v->desc.ndim == 0 || (block <= 0 && v->desc.ndim == 1 && v->desc.dims[0] == 1)) return CG_OK;
    const int nd = x->desc.ndim;
    if (axis < 0) axis += nd;
    if (block > 0 && axis >= 0 && axis < nd) return blocked(im, cur, v, x, (int)axis, block, what, out);
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

/* The range of an integer type QuantizeLinear saturates to; 0 for the
 * float types it rounds into and the types it does not make. */
static int quant_range(cg_dtype t, int *lo, int *hi) {
    switch (t) {
    case CG_U8: *lo = 0, *hi = 255; return 1;
    case CG_I8: *lo = -128, *hi = 127; return 1;
    case CG_U16: *lo = 0, *hi = 65535; return 1;
    case CG_I16: *lo = -32768, *hi = 32767; return 1;
    case CG_U4: *lo = 0, *hi = 15; return 1;
    case CG_I4: *lo = -8, *hi = 7; return 1;
    case CG_U2: *lo = 0, *hi = 3; return 1;
    case CG_I2: *lo = -2, *hi = 1; return 1;
    default: return 0;
    }
}

/* The float types QuantizeLinear rounds into: the four float8 and f4e2m1. */
static int quant_float(cg_dtype t) {
    return t == CG_F8E4M3FN || t == CG_F8E4M3FNUZ || t == CG_F8E5M2 || t == CG_F8E5M2FNUZ || t == CG_F4E2M1;
}

/* y = saturate(round(x / scale) + zp) as an integer type dt, or x / scale
 * + zp cast to a float type (rounded to nearest even, saturated or not by
 * `saturate` for float8, at +-6 for f4e2m1), into out; zp the f32 zero
 * point shaped for x, or NULL. */
static cg_status quantize(onnx_imp *im, const char *x, const char *scale, const char *zp, cg_dtype dt, int saturate,
                          const char *out) {
    const char *t = NULL;
    cg_status s;
    int lo, hi;
    char a[96];
    if ((s = op2(im, "div", x, scale, NULL, &t))) return s;
    if (quant_float(dt)) {
        if (zp && (s = op2(im, "add", t, zp, NULL, &t))) return s;
        snprintf(a, sizeof a, "to: \"%s\", saturate: %d", cg_dtype_name(dt), saturate != 0);
        return op2_to(im, "cast", t, NULL, a, out);
    }
    quant_range(dt, &lo, &hi);
    if ((s = op2(im, "round", t, NULL, NULL, &t))) return s;
    if (zp && (s = op2(im, "add", t, zp, NULL, &t))) return s;
    snprintf(a, sizeof a, "min: %d, max: %d", lo, hi);
    if ((s = op2(im, "clip", t, NULL, a, &t))) return s;
    snprintf(a, sizeof a, "to: \"%s\"", cg_dtype_name(dt));
    return op2_to(im, "cast", t, NULL, a, out);
}

/* x as f32 (a cast when it is another type) into *out. */
static cg_status as_f32(onnx_imp *im, const onnx_val *x, const char **out) {
    *out = x->name;
    return x->desc.dtype == CG_F32 ? CG_OK : op2(im, "cast", x->name, NULL, "to: \"f32\"", out);
}

cg_status cg_onnx_map_quantize(onnx_imp *im) {
    static const char *const known[] = {"axis", "saturate", "block_size", "output_dtype", "precision", NULL};
    onnx_val *x, *scale, *zp = onnx_in(im, 2);
    cg_status s;
    int lo, hi;
    if ((s = onnx_check_attrs(im, known)) || (s = typed_in(im, 0, &x)) || (s = typed_in(im, 1, &scale))) return s;
    if (zp && !zp->typed) return onnx_fail(im, CG_ERR_VERIFY, "input '%s' has no known type", zp->name);
    const int64_t odt = onnx_attr_int(im, "output_dtype", 0);
    const cg_dtype dt = zp ? (cg_dtype)zp->desc.dtype : odt ? cg_onnx_dtype((int32_t)odt) : CG_U8;
    const cg_dtype xt = (cg_dtype)x->desc.dtype, st = (cg_dtype)scale->desc.dtype;
    const int x_ok = xt == CG_F32 || xt == CG_F16 || xt == CG_BF16 || xt == CG_I32;
    const int s_ok = st == CG_F32 || st == CG_F16 || st == CG_BF16 || st == CG_I32 || st == CG_F8E8M0;
    if (!x_ok || !s_ok || (!quant_range(dt, &lo, &hi) && !quant_float(dt)))
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "QuantizeLinear of %s with a %s scale to %s (f32, f16, bf16 or i32 with such a scale or an "
                         "f8e8m0 one, to u8, i8, u16, i16, u4, i4, u2, i2, float8 or f4e2m1)",
                         cg_dtype_name(xt), cg_dtype_name(st), dt ? cg_dtype_name(dt) : "an unknown type");
    const int64_t axis = onnx_attr_int(im, "axis", 1), block = onnx_attr_int(im, "block_size", 0);
    const char *sc, *z = NULL, *xf;
    if ((s = along_axis(im, scale, x, axis, block, "input 1 (y_scale)", &sc)) ||
        (zp && (s = along_axis(im, zp, x, axis, block, "input 2 (y_zero_point)", &z))) || (s = as_f32(im, x, &xf)))
        return s;
    return quantize(im, xf, sc, z, dt, (int)onnx_attr_int(im, "saturate", 1), out_at(im, 0));
}

cg_status cg_onnx_map_dequantize(onnx_imp *im) {
    static const char *const known[] = {"axis", "block_size", "output_dtype", NULL};
    onnx_val *x, *scale, *zp = onnx_in(im, 2);
    cg_status s;
    int lo, hi;
    if ((s = onnx_check_attrs(im, known)) || (s = typed_in(im, 0, &x)) || (s = typed_in(im, 1, &scale))) return s;
    if (zp && !zp->typed) return onnx_fail(im, CG_ERR_VERIFY, "input '%s' has no known type", zp->name);
    const cg_dtype dt = (cg_dtype)x->desc.dtype, st = (cg_dtype)scale->desc.dtype;
    const int64_t odt = onnx_attr_int(im, "output_dtype", 0);
    /* the output: output_dtype, else the scale's type (f32 for e8m0) */
    const cg_dtype yt = odt ? cg_onnx_dtype((int32_t)odt) : st == CG_F8E8M0 ? CG_F32 : st;
    const int s_ok = st == CG_F32 || st == CG_F16 || st == CG_BF16 || st == CG_F8E8M0;
    if ((!quant_range(dt, &lo, &hi) && !quant_float(dt) && dt != CG_I32) || !s_ok || (zp && zp->desc.dtype != dt) ||
        (yt != CG_F32 && yt != CG_F16 && yt != CG_BF16))
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "DequantizeLinear of %s with a %s scale to %s (u8, i8, u16, i16, i32, u4, i4, u2, i2, float8 "
                         "or f4e2m1, a zero point of the same type, an f32, f16, bf16 or f8e8m0 scale, to f32, f16 or "
                         "bf16)",
                         cg_dtype_name(dt), cg_dtype_name(st), yt ? cg_dtype_name(yt) : "an unknown type");
    const int64_t axis = onnx_attr_int(im, "axis", 1), block = onnx_attr_int(im, "block_size", 0);
    const char *sc, *z = NULL, *t = NULL, *y = out_at(im, 0);
    if ((s = along_axis(im, scale, x, axis, block, "input 1 (x_scale)", &sc)) ||
        (zp && (s = along_axis(im, zp, x, axis, block, "input 2 (x_zero_point)", &z))) ||
        (s = op2(im, "cast", x->name, NULL, "to: \"f32\"", &t)) || (z && (s = op2(im, "sub", t, z, NULL, &t))))
        return s;
    /* i32 values past 2^24 round on the cast, as in ONNX Runtime */
    if (yt == CG_F32) return op2_to(im, "mul", t, sc, NULL, y);
    if ((s = op2(im, "mul", t, sc, NULL, &t))) return s;
    return op2_to(im, "cast", t, NULL, yt == CG_F16 ? "to: \"f16\"" : "to: \"bf16\"", y);
}

/* DynamicQuantizeLinear (u8): clgraph's dynamic_quantize, one node (the
 * range of x widened to hold 0, scale = range / 255, 1 where the range is
 * 0 as in ONNX Runtime, zero point = round(clip(-min / scale, 0, 255)),
 * then QuantizeLinear's rounding: ops/dynamic_quantize.c). */
cg_status cg_onnx_map_dynamic_quantize(onnx_imp *im) {
    onnx_val *x;
    cg_status s;
    if ((s = onnx_check_attrs(im, NULL)) || (s = typed_in(im, 0, &x))) return s;
    if (x->desc.dtype != CG_F32)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "DynamicQuantizeLinear of %s (f32 only)",
                         cg_dtype_name((cg_dtype)x->desc.dtype));
    const char *in[1] = {x->name}, *outs[3] = {out_at(im, 0), out_at(im, 1), out_at(im, 2)};
    return onnx_emit(im, "dynamic_quantize", 1, in, 3, outs, NULL);
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
