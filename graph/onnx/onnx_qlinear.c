/* QLinearMatMul and QLinearConv: the exact integer product of the
 * operands minus their zero points (MatMulInteger's and ConvInteger's
 * mappings, or an f32 matmul where its sums stay exact), then requantized
 * as ONNX's reference does: times a_scale * b_scale / y_scale (computed in
 * the scales' type, float16 included), plus y_zero_point, rounded half to
 * even, saturated. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <string.h>

/* Runs `fn` (an integer op's mapping) on the current node's inputs `ins`
 * (ONNX names, "" for absent) with a fresh int32 output, named in *out;
 * failures name the current node. */
static cg_status as_integer_op(onnx_imp *im, onnx_map_fn fn, int n_in, const char *const *ins, const char **out) {
    const Onnx__NodeProto *n = im->node;
    Onnx__NodeProto sub = *n;
    char *in[4], *o[1];
    onnx_val *v = onnx_val_get(im, onnx_fresh(im, "i32"));
    if (!v) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < n_in; i++) in[i] = (char *)ins[i];
    o[0] = v->name;
    sub.n_input = (size_t)n_in, sub.input = in, sub.n_output = 1, sub.output = o;
    im->node = &sub;
    cg_status s = fn(im);
    im->node = n;
    *out = v->name;
    return s;
}

/* A scale (input i) as f32, one value or one per slice along `axis` of an
 * output of `nd` dims (reshaped to broadcast there; -1: one value only). */
static cg_status scale_f32(onnx_imp *im, int i, int axis, int nd, const char **out) {
    onnx_val *v;
    cg_status s;
    if ((s = need_in(im, i, &v))) return s;
    int64_t n = 1;
    for (int k = 0; k < v->desc.ndim; k++) n = v->desc.dims[k] < 0 ? -1 : n * v->desc.dims[k];
    if ((v->desc.dtype != CG_F32 && v->desc.dtype != CG_F16 && v->desc.dtype != CG_BF16) || n < 1 ||
        (n > 1 && (axis < 0 || v->desc.ndim != 1)))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "input %d ('%s') must be one float value%s", i, v->name,
                         axis >= 0 ? " or one per output channel" : "");
    *out = v->name;
    if (v->desc.dtype != CG_F32 && (s = emit_tmp(im, "cast", v->name, "to: \"f32\"", out))) return s;
    int64_t d[CG_MAX_DIMS];
    for (int k = 0; k < nd; k++) d[k] = k == axis ? n : 1;
    onnx_val *f = onnx_val_get(im, *out);
    if (!f) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    const char *r = NULL;
    if ((s = onnx_emit_reshape(im, f, n > 1 ? nd : 0, d, &r))) return s;
    *out = r;
    return CG_OK;
}

/* op(a, b) into *out, then rounded to the narrow float type dt where the
 * scales are narrow (ONNX's reference computes in their type). */
static cg_status scale_op(onnx_imp *im, const char *op, const char *a, const char *b, cg_dtype dt, const char **out) {
    cg_status s = emit_tmp2(im, op, a, b, NULL, out);
    if (s || dt == CG_F32) return s;
    return (s = emit_tmp(im, "cast", *out, dt == CG_F16 ? "to: \"f16\"" : "to: \"bf16\"", out))
               ? s
               : emit_tmp(im, "cast", *out, "to: \"f32\"", out);
}

/* y = saturate(round(p * (sa * sb / sy) + zy)) into output 0: p the f32
 * integer product, sa, sb, sy inputs ia, ib, iy (ib per output channel
 * along `axis`), zy input iy + 1 or absent (then of type `dt`). */
static cg_status requantize(onnx_imp *im, const char *p, int ia, int ib, int iy, int axis, int nd, cg_dtype dt) {
    const onnx_val *sv = onnx_in(im, ia);
    const cg_dtype sdt = sv && sv->typed ? (cg_dtype)sv->desc.dtype : CG_F32;
    const char *sa, *sb, *sy, *m, *t = NULL;
    onnx_val *zy = onnx_in(im, iy + 1);
    cg_status s;
    if ((s = scale_f32(im, ia, -1, nd, &sa)) || (s = scale_f32(im, ib, axis, nd, &sb)) ||
        (s = scale_f32(im, iy, -1, nd, &sy)) || (s = scale_op(im, "mul", sa, sb, sdt, &m)) ||
        (s = scale_op(im, "div", m, sy, sdt, &m)) || (s = emit_tmp2(im, "mul", p, m, NULL, &t)))
        return s;
    if (zy) {
        if (!zy->typed || (zy->desc.dtype != CG_U8 && zy->desc.dtype != CG_I8))
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "y_zero_point ('%s') must be uint8 or int8", zy->name);
        dt = (cg_dtype)zy->desc.dtype;
        const char *z = NULL;
        if ((s = emit_tmp(im, "cast", zy->name, "to: \"f32\"", &z)) || (s = emit_tmp2(im, "add", t, z, NULL, &t)))
            return s;
    }
    const char *clip = dt == CG_U8 ? "min: 0, max: 255" : "min: -128, max: 127";
    if ((s = emit_tmp(im, "round", t, NULL, &t)) || (s = emit_tmp(im, "clip", t, clip, &t))) return s;
    const char *in[1] = {t};
    return emit1(im, "cast", 1, in, out_name(im, 0), dt == CG_U8 ? "to: \"u8\"" : "to: \"i8\"");
}

/* Input i (u8 / i8) as f32 minus its zero point (input z, or none; one per
 * row of a 2-D-or-more operand when `rows`), into *out. */
static cg_status centred_f32(onnx_imp *im, int i, int z, int rows, const char **out) {
    onnx_val *v, *zp = onnx_in(im, z);
    cg_status s;
    if ((s = need_in(im, i, &v)) || (s = emit_tmp(im, "cast", v->name, "to: \"f32\"", out)) || !zp) return s;
    const char *zf = NULL;
    if ((s = emit_tmp(im, "cast", zp->name, "to: \"f32\"", &zf))) return s;
    if (rows && zp->desc.ndim == 1 && zp->desc.dims[0] > 1) {
        const int64_t d[2] = {zp->desc.dims[0], 1};
        onnx_val *f = onnx_val_get(im, zf);
        if (!f) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        const char *r = NULL;
        if ((s = onnx_emit_reshape(im, f, 2, d, &r))) return s;
        zf = r;
    }
    return emit_tmp2(im, "sub", *out, zf, NULL, out);
}

/* The ONNX name of input i, "" where absent. */
static const char *in_name(const onnx_imp *im, int i) {
    return (size_t)i < im->node->n_input && im->node->input[i] ? im->node->input[i] : "";
}

static int is_q8(const onnx_val *v) { return v && v->typed && (v->desc.dtype == CG_U8 || v->desc.dtype == CG_I8); }

/* QLinearMatMul (10, 21): a 2-D b through MatMulInteger's mapping (exact
 * int32 sums); a batched b as an f32 matmul of the centred values, exact
 * while K * 255^2 stays within 2^24. */
cg_status cg_onnx_map_qlinear_matmul(onnx_imp *im) {
    onnx_val *a, *b;
    cg_status s;
    if ((s = onnx_check_attrs(im, NULL)) || (s = need_in(im, 0, &a)) || (s = need_in(im, 3, &b))) return s;
    if (!is_q8(a) || !is_q8(b) || a->desc.ndim < 2 || b->desc.ndim < 2 || !is_q8(onnx_in(im, 2)) ||
        !is_q8(onnx_in(im, 5)))
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "QLinearMatMul of uint8 or int8 matrices ('%s', '%s') with zero points of their type", a->name,
                         b->name);
    const int64_t k = a->desc.dims[a->desc.ndim - 1];
    const char *p = NULL;
    if (b->desc.ndim == 2) {
        const char *ins[4] = {a->name, b->name, in_name(im, 2), in_name(im, 5)};
        if ((s = as_integer_op(im, cg_onnx_map_matmul_integer, 4, ins, &p)) ||
            (s = emit_tmp(im, "cast", p, "to: \"f32\"", &p)))
            return s;
    } else {
        const char *af, *bf;
        if (k < 0 || k * 255 * 255 > (1 << 24))
            return onnx_fail(im, CG_ERR_UNSUPPORTED,
                             "QLinearMatMul of a batched B with K %lld: sums past 2^24 are not exact in f32",
                             (long long)k);
        if ((s = centred_f32(im, 0, 2, 1, &af)) || (s = centred_f32(im, 3, 5, 0, &bf)) ||
            (s = emit_tmp2(im, "matmul", af, bf, NULL, &p)))
            return s;
    }
    const int nd = a->desc.ndim > b->desc.ndim ? a->desc.ndim : b->desc.ndim;
    return requantize(im, p, 1, 4, 6, nd - 1, nd, (cg_dtype)a->desc.dtype);
}

/* QLinearConv (10): ConvInteger's mapping (x, w, their zero points), plus
 * the int32 bias B, then requantized (w_scale one or per output channel). */
cg_status cg_onnx_map_qlinear_conv(onnx_imp *im) {
    onnx_val *x, *w, *bias = onnx_in(im, 8);
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 3, &w))) return s;
    const char *ins[4] = {x->name, w->name, in_name(im, 2), in_name(im, 5)}, *p = NULL;
    if ((s = as_integer_op(im, cg_onnx_map_conv_integer, 4, ins, &p))) return s;
    if (bias) {
        if (!bias->typed || bias->desc.dtype != CG_I32 || bias->desc.ndim != 1)
            return onnx_fail(im, CG_ERR_FORMAT, "B ('%s') must be a 1-D int32 tensor", bias->name);
        int64_t d[CG_MAX_DIMS];
        for (int k = 0; k < x->desc.ndim; k++) d[k] = k == 1 ? bias->desc.dims[0] : 1;
        const char *r = NULL;
        if ((s = onnx_emit_reshape(im, bias, x->desc.ndim, d, &r)) || (s = emit_tmp2(im, "add", p, r, NULL, &p)))
            return s;
    }
    if ((s = emit_tmp(im, "cast", p, "to: \"f32\"", &p))) return s;
    return requantize(im, p, 1, 4, 6, 1, x->desc.ndim, (cg_dtype)x->desc.dtype);
}
