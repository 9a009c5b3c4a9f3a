/* ONNX activations and elementwise tests that are compositions of
 * clgraph's ops, each in the form ONNX's reference or function body
 * computes: HardSwish, Gelu (none and tanh), Mish, PRelu, Selu, Celu,
 * Shrink, ThresholdedRelu, Swish, IsNaN, IsInf and Hardmax. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static cg_status f32_const(onnx_imp *im, double v, const char **name) {
    const float f = (float)v;
    return const_of(im, CG_F32, 0, NULL, &f, name);
}

/* The one input, f32 (f16 and bf16 arrive widened), and the attributes
 * checked. */
static cg_status f32_input(onnx_imp *im, const char *const *known, onnx_val **x) {
    cg_status s;
    if ((s = need_in(im, 0, x)) || (s = onnx_check_attrs(im, known))) return s;
    if ((*x)->desc.dtype != CG_F32)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "%s of %s (floats only)", im->node->op_type,
                         cg_dtype_name((cg_dtype)(*x)->desc.dtype));
    return CG_OK;
}

/* A float attribute as text that reads back as the same float; a
 * non-finite one fails the node. */
static cg_status float_attr(onnx_imp *im, const char *name, double def, double *v) {
    *v = (float)onnx_attr_float(im, name, def);
    if (!isfinite(*v)) return onnx_fail(im, CG_ERR_UNSUPPORTED, "attribute %s %g", name, *v);
    return CG_OK;
}

/* HardSwish: x * hard_sigmoid(x) with alpha 1/6, beta 1/2. */
static cg_status hard_swish(onnx_imp *im, onnx_val *x, const char *y) {
    const char *h = NULL;
    cg_status s = emit_tmp(im, "hard_sigmoid", x->name, "alpha: 0.166666672, beta: 0.5", &h);
    return s ? s : emit1(im, "mul", 2, (const char *[]){x->name, h}, y, NULL);
}

/* Gelu: 0.5 x (1 + erf(x / sqrt 2)), or with approximate "tanh" 0.5 x (1
 * + tanh(sqrt(2 / pi) (x + 0.044715 x^3))). */
static cg_status gelu(onnx_imp *im, onnx_val *x, const char *y) {
    const Onnx__AttributeProto *a = onnx_attr_typed(im, "approximate", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    int approx = 0;
    if (a && a->has_s) {
        approx = a->s.len == 4 && !memcmp(a->s.data, "tanh", 4);
        if (!approx && !(a->s.len == 4 && !memcmp(a->s.data, "none", 4)))
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "approximate '%.*s' (none or tanh)",
                             (int)(a->s.len > 40 ? 40 : a->s.len), (const char *)a->s.data);
    }
    const char *t = NULL, *u = NULL, *h = NULL;
    cg_status s;
    if (!approx) {
        if ((s = emit_tmp(im, "affine", x->name, "alpha: 0.707106769, beta: 0.0", &t)) ||
            (s = emit_tmp(im, "erf", t, NULL, &u)))
            return s;
    } else {
        const char *c = NULL, *x3 = NULL, *x2 = NULL;
        if ((s = emit_tmp2(im, "mul", x->name, x->name, NULL, &x2)) ||
            (s = emit_tmp2(im, "mul", x2, x->name, NULL, &x3)) ||
            (s = emit_tmp(im, "affine", x3, "alpha: 0.044715, beta: 0.0", &c)) ||
            (s = emit_tmp2(im, "add", x->name, c, NULL, &t)) ||
            (s = emit_tmp(im, "affine", t, "alpha: 0.797884583, beta: 0.0", &t)) ||
            (s = emit_tmp(im, "tanh", t, NULL, &u)))
            return s;
    }
    if ((s = emit_tmp(im, "affine", u, "alpha: 1.0, beta: 1.0", &u)) ||
        (s = emit_tmp2(im, "mul", x->name, u, NULL, &h)))
        return s;
    return emit1(im, "affine", 1, (const char *[]){h}, y, "alpha: 0.5, beta: 0.0");
}

/* Mish: x tanh(softplus(x)); Swish: x sigmoid(alpha x). */
static cg_status mish_swish(onnx_imp *im, onnx_val *x, const char *y) {
    const char *t = NULL, *u = NULL;
    cg_status s;
    if (!strcmp(im->node->op_type, "Mish")) {
        if ((s = emit_tmp(im, "softplus", x->name, NULL, &t)) || (s = emit_tmp(im, "tanh", t, NULL, &u))) return s;
    } else {
        double alpha;
        char at[64];
        if ((s = float_attr(im, "alpha", 1.0, &alpha))) return s;
        snprintf(at, sizeof at, "alpha: %.9g, beta: 0.0", alpha);
        if ((s = emit_tmp(im, "affine", x->name, at, &t)) || (s = emit_tmp(im, "sigmoid", t, NULL, &u))) return s;
    }
    return emit1(im, "mul", 2, (const char *[]){x->name, u}, y, NULL);
}

/* Selu: gamma * (x > 0 ? x : alpha (exp(x) - 1)); Celu: x >= 0 ? x :
 * alpha (exp(x / alpha) - 1). */
static cg_status selu_celu(onnx_imp *im, onnx_val *x, const char *y) {
    const int selu = !strcmp(im->node->op_type, "Selu");
    double alpha, gamma = 1;
    char at[80];
    cg_status s;
    /* Selu's defaults were rounded to 5 digits before opset 6 */
    const int old = im->opset < 6;
    if ((s = float_attr(im, "alpha",
                        !selu ? 1.0
                        : old ? 1.6732f
                              : 1.67326319217681884765625,
                        &alpha)) ||
        (selu && (s = float_attr(im, "gamma", old ? 1.0507f : 1.05070102214813232421875, &gamma))))
        return s;
    if (!selu && alpha == 0) return onnx_fail(im, CG_ERR_FORMAT, "alpha 0");
    const char *t = x->name, *e = NULL, *a = NULL;
    if (!selu && ((s = f32_const(im, alpha, &a)) || (s = emit_tmp2(im, "div", x->name, a, NULL, &t)))) return s;
    snprintf(at, sizeof at, "alpha: %.9g", alpha);
    if ((s = emit_tmp(im, "elu", t, at, &e))) return s;
    if (selu) {
        snprintf(at, sizeof at, "alpha: %.9g, beta: 0.0", gamma);
        return emit1(im, "affine", 1, (const char *[]){e}, y, at);
    }
    /* elu(x / alpha) is alpha (exp(x / alpha) - 1) below 0; x itself above */
    const char *zero = NULL, *neg = NULL;
    if ((s = f32_const(im, 0, &zero)) || (s = emit_tmp2(im, "less", x->name, zero, NULL, &neg))) return s;
    return emit1(im, "where", 3, (const char *[]){neg, e, x->name}, y, NULL);
}

/* PRelu: x > 0 ? x : slope x (slope broadcast to x). */
static cg_status prelu(onnx_imp *im, onnx_val *x, const char *y) {
    onnx_val *sl;
    const char *zero = NULL, *pos = NULL, *m = NULL;
    cg_status s;
    if ((s = need_in(im, 1, &sl)) || (s = f32_const(im, 0, &zero)) ||
        (s = emit_tmp2(im, "greater", x->name, zero, NULL, &pos)) ||
        (s = emit_tmp2(im, "mul", x->name, sl->name, NULL, &m)))
        return s;
    return emit1(im, "where", 3, (const char *[]){pos, x->name, m}, y, NULL);
}

/* Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0;
 * ThresholdedRelu: x > alpha ? x : 0. */
static cg_status shrink_thresh(onnx_imp *im, onnx_val *x, const char *y) {
    const char *zero = NULL, *hi = NULL, *gt = NULL, *inner = NULL;
    const int shrink = !strcmp(im->node->op_type, "Shrink");
    double l, b = 0;
    cg_status s;
    if ((s = float_attr(im, shrink ? "lambd" : "alpha", shrink ? 0.5 : 1.0, &l)) ||
        (shrink && (s = float_attr(im, "bias", 0.0, &b))) || (s = f32_const(im, 0, &zero)) ||
        (s = f32_const(im, l, &hi)) || (s = emit_tmp2(im, "greater", x->name, hi, NULL, &gt)))
        return s;
    if (!shrink) return emit1(im, "where", 3, (const char *[]){gt, x->name, zero}, y, NULL);
    const char *lo = NULL, *lt = NULL, *bias = NULL, *xm = NULL, *xp = NULL;
    if ((s = f32_const(im, -l, &lo)) || (s = emit_tmp2(im, "less", x->name, lo, NULL, &lt)) ||
        (s = f32_const(im, b, &bias)) || (s = emit_tmp2(im, "sub", x->name, bias, NULL, &xm)) ||
        (s = emit_tmp2(im, "add", x->name, bias, NULL, &xp)))
        return s;
    if ((s = onnx_emit(im, "where", 3, (const char *[]){gt, xm, zero}, 1, &inner, NULL))) return s;
    return emit1(im, "where", 3, (const char *[]){lt, xp, inner}, y, NULL);
}

/* IsNaN: x != x; IsInf: x == +inf or x == -inf (as detect_positive and
 * detect_negative ask). */
static cg_status is_nan_inf(onnx_imp *im, onnx_val *x, const char *y) {
    const char *c = NULL;
    cg_status s;
    if (!strcmp(im->node->op_type, "IsNaN")) {
        if ((s = emit_tmp2(im, "equal", x->name, x->name, NULL, &c))) return s;
        return emit1(im, "logical_not", 1, &c, y, NULL);
    }
    const int pos = onnx_attr_int(im, "detect_positive", 1) != 0, neg = onnx_attr_int(im, "detect_negative", 1) != 0;
    const char *pi = NULL, *ni = NULL, *p = NULL, *n = NULL;
    if (!pos && !neg) { /* all false: x < x is false everywhere, NaN included */
        return emit1(im, "less", 2, (const char *[]){x->name, x->name}, y, NULL);
    }
    if ((s = f32_const(im, INFINITY, &pi)) || (s = f32_const(im, -INFINITY, &ni))) return s;
    if (!neg) return emit1(im, "equal", 2, (const char *[]){x->name, pi}, y, NULL);
    if (!pos) return emit1(im, "equal", 2, (const char *[]){x->name, ni}, y, NULL);
    if ((s = emit_tmp2(im, "equal", x->name, pi, NULL, &p)) || (s = emit_tmp2(im, "equal", x->name, ni, NULL, &n)))
        return s;
    return emit1(im, "logical_or", 2, (const char *[]){p, n}, y, NULL);
}

/* Hardmax: 1 at the first maximum along axis, 0 elsewhere: argmax
 * (keepdims) against the positions along the axis. Before opset 13 the
 * axis splits x into [rows, columns] (Softmax's old rule). */
static cg_status hardmax(onnx_imp *im, onnx_val *x, const char *y) {
    const int r = x->desc.ndim;
    int64_t axis = onnx_attr_int(im, "axis", im->opset >= 13 ? -1 : 1);
    if (axis < -r || axis >= (r ? r : 1))
        return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)axis);
    if (axis < 0) axis += r;
    const char *src = x->name, *am = NULL, *pos = NULL, *eq = NULL, *zero = NULL, *one = NULL;
    cg_status s;
    int nr = r, ax = (int)axis;
    int64_t d[CG_MAX_DIMS] = {0};
    if (im->opset < 13 && axis != r - 1) {
        int64_t cols = 1;
        for (int i = (int)axis; i < r; i++) {
            if (x->desc.dims[i] < 0)
                return onnx_fail(im, CG_ERR_UNSUPPORTED, "Hardmax over symbolic dims (opset < 13)");
            cols *= x->desc.dims[i];
        }
        const int64_t d2[2] = {CG_DIM_UNKNOWN, cols};
        src = NULL;
        if ((s = onnx_emit_reshape(im, x, 2, d2, &src))) return s;
        nr = 2, ax = 1;
    }
    const onnx_val *sv = onnx_val_get(im, src);
    for (int i = 0; i < nr; i++) d[i] = i == ax ? sv->desc.dims[i] : 1;
    char at[80];
    snprintf(at, sizeof at, "axis: %d, keepdims: 1", ax);
    if ((s = emit_tmp(im, "argmax", src, at, &am))) return s;
    snprintf(at, sizeof at, "axis: %d, to: \"i32\"", ax);
    const char *r0 = NULL;
    if ((s = emit_tmp(im, "arange", src, at, &r0)) || (s = onnx_emit_reshape(im, onnx_val_get(im, r0), nr, d, &pos)))
        return s;
    if ((s = emit_tmp2(im, "equal", pos, am, NULL, &eq)) || (s = f32_const(im, 0, &zero)) ||
        (s = f32_const(im, 1, &one)))
        return s;
    const char *h = nr == r ? y : NULL;
    if ((s = onnx_emit(im, "where", 3, (const char *[]){eq, one, zero}, 1, &h, NULL)) || nr == r) return s;
    return emit_reshape(im, onnx_val_get(im, h), r, x->desc.dims, y);
}

cg_status cg_onnx_map_act(onnx_imp *im) {
    static const struct {
        const char *op;
        cg_status (*fn)(onnx_imp *, onnx_val *, const char *);
        const char *attrs[3];
    } ops[] = {{"Celu", selu_celu, {"alpha"}},
               {"Gelu", gelu, {"approximate"}},
               {"HardSwish", hard_swish, {NULL}},
               {"Hardmax", hardmax, {"axis"}},
               {"IsInf", is_nan_inf, {"detect_negative", "detect_positive"}},
               {"IsNaN", is_nan_inf, {NULL}},
               {"Mish", mish_swish, {NULL}},
               {"PRelu", prelu, {NULL}},
               {"Selu", selu_celu, {"alpha", "gamma"}},
               {"Shrink", shrink_thresh, {"bias", "lambd"}},
               {"Swish", mish_swish, {"alpha"}},
               {"ThresholdedRelu", shrink_thresh, {"alpha"}}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (strcmp(im->node->op_type, ops[i].op)) continue;
        onnx_val *x;
        cg_status s = f32_input(im, ops[i].attrs, &x);
        return s ? s : ops[i].fn(im, x, out_name(im, 0));
    }
    return onnx_fail(im, CG_ERR_UNSUPPORTED, "no mapping");
}
