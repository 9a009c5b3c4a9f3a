/* ONNX operators onto clgraph ops: one function per ONNX op (or family),
 * reading the node's attributes for the opset in use and emitting clgraph
 * nodes through onnx_emit. What a mapping cannot express fails the node
 * with the reason (onnx_fail, CG_ERR_UNSUPPORTED). */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "shape.h"

/* A list "[a, b, c]" of ints into buf. */
static const char *ints_text(char *buf, size_t size, int n, const int64_t *v) {
    size_t u = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < n && u < size; i++)
        u += (size_t)snprintf(buf + u, size - u, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (u < size) snprintf(buf + u, size - u, "]");
    return buf;
}

/* The clgraph reshape target for new dims of x: each dim a size, or
 * symbolic; a symbolic dim at the position it had in x is 0 (copy), one
 * other symbolic dim -1; otherwise not expressible (0 returned). */
static int reshape_target(const onnx_val *x, int ndim, const int64_t *dims, int64_t *target) {
    int inferred = 0;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] >= 0) target[i] = dims[i];
        else if (dims[i] != CG_DIM_UNKNOWN && i < x->desc.ndim && x->desc.dims[i] == dims[i]) target[i] = 0;
        else if (!inferred++) target[i] = -1;
        else return 0;
    }
    /* a concrete 0 would mean "copy": only where x has a 0 there too */
    for (int i = 0; i < ndim; i++)
        if (dims[i] == 0 && !(i < x->desc.ndim && x->desc.dims[i] == 0)) return 0;
    return 1;
}

/* *out: the output's name, or NULL for a fresh one (set). */
static cg_status emit_reshape_to(onnx_imp *im, onnx_val *x, int ndim, const int64_t *dims, const char **out) {
    int64_t t[CG_MAX_DIMS];
    char a[600], l[512];
    if (reshape_target(x, ndim, dims, t)) snprintf(a, sizeof a, "shape: %s", ints_text(l, sizeof l, ndim, t));
    else if (onnx_named_dims(im, ndim, dims, l, sizeof l)) snprintf(a, sizeof a, "shape: %s", l);
    else
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "the new shape of '%s' has more than one dim clgraph cannot name",
                         x->name);
    const char *in[1] = {x->name};
    return onnx_emit(im, "reshape", 1, in, 1, out, a);
}

cg_status onnx_emit_reshape(onnx_imp *im, onnx_val *x, int ndim, const int64_t *dims, const char **out) {
    return emit_reshape_to(im, x, ndim, dims, out);
}

/* ---- elementwise ---- */

static const struct {
    const char *onnx, *cg;
} unary_ops[] = {{"Neg", "neg"},     {"Tanh", "tanh"},         {"Sigmoid", "sigmoid"},
                 {"Exp", "exp"},     {"Log", "log"},           {"Sqrt", "sqrt"},
                 {"Relu", "relu"},   {"Abs", "abs"},           {"Reciprocal", "reciprocal"},
                 {"Floor", "floor"}, {"Ceil", "ceil"},         {"Round", "round"},
                 {"Sign", "sign"},   {"Sin", "sin"},           {"Cos", "cos"},
                 {"Erf", "erf"},     {"Softplus", "softplus"}, {"Softsign", "softsign"},
                 {"Tan", "tan"},     {"Asin", "asin"},         {"Acos", "acos"},
                 {"Atan", "atan"},   {"Sinh", "sinh"},         {"Cosh", "cosh"},
                 {"Asinh", "asinh"}, {"Acosh", "acosh"},       {"Atanh", "atanh"},
                 {"Det", "det"}};

static cg_status map_unary(onnx_imp *im) {
    onnx_val *x;
    cg_status s = need_in(im, 0, &x);
    if (s || (s = onnx_check_attrs(im, NULL))) return s;
    for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++)
        if (!strcmp(im->node->op_type, unary_ops[i].onnx)) {
            const char *in[1] = {x->name};
            return emit1(im, unary_ops[i].cg, 1, in, out_name(im, 0), NULL);
        }
    return onnx_fail(im, CG_ERR_UNSUPPORTED, "no mapping");
}

/* Elu, LeakyRelu, HardSigmoid: their float attributes as clgraph's. */
static cg_status map_activation(onnx_imp *im) {
    static const char *const known[] = {"alpha", "beta", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    const char *op = im->node->op_type, *cg;
    char a[160];
    if (!strcmp(op, "Elu")) {
        cg = "elu";
        snprintf(a, sizeof a, "alpha: %.9g", onnx_attr_float(im, "alpha", 1.0));
    } else if (!strcmp(op, "LeakyRelu")) {
        cg = "leaky_relu";
        snprintf(a, sizeof a, "alpha: %.9g", onnx_attr_float(im, "alpha", 0.01));
    } else {
        cg = "hard_sigmoid";
        snprintf(a, sizeof a, "alpha: %.9g, beta: %.9g", onnx_attr_float(im, "alpha", 0.2),
                 onnx_attr_float(im, "beta", 0.5));
    }
    /* %.9g of a float in the text reads back as the same float */
    if (strstr(a, "inf") || strstr(a, "nan")) return onnx_fail(im, CG_ERR_UNSUPPORTED, "attribute %s", a);
    const char *in[1] = {x->name};
    return emit1(im, cg, 1, in, out_name(im, 0), a);
}

/* Clip of an integer x: maximum with the known min, then minimum with the
 * known max (each a one-element tensor of x's dtype, or absent). */
static cg_status clip_int(onnx_imp *im, onnx_val *x, const cg_tensor *const b[2]) {
    static const char *const ops[2] = {"maximum", "minimum"};
    const char *cur = x->name;
    int last = b[1] ? 1 : 0;
    cg_status s;
    if (!b[0] && !b[1]) {
        int64_t d[CG_MAX_DIMS];
        memcpy(d, x->desc.dims, sizeof d);
        return emit_reshape(im, x, x->desc.ndim, d, out_name(im, 0));
    }
    for (int k = 0; k < 2; k++) {
        if (!b[k]) continue;
        const char *c;
        if ((s = const_of(im, (cg_dtype)x->desc.dtype, 0, NULL, cg_tensor_data_const(b[k]), &c))) return s;
        const char *in[2] = {cur, c}, *outs[1] = {k == last ? out_name(im, 0) : NULL};
        if ((s = onnx_emit(im, ops[k], 2, in, 1, outs, NULL))) return s;
        cur = outs[0];
    }
    return CG_OK;
}

/* Clip: bounds as attributes (opset < 11) or as optional scalar inputs of
 * x's dtype, which must be known at import. f32 is clgraph's clip;
 * integers maximum and minimum. */
static cg_status map_clip(onnx_imp *im) {
    static const char *const known[] = {"min", "max", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    const cg_dtype dt = (cg_dtype)x->desc.dtype;
    double b[2] = {-INFINITY, INFINITY};
    const cg_tensor *bt[2] = {NULL, NULL};
    if (im->opset < 11) { /* opsets 6 to 10 default to the float range, which clips infinities */
        b[0] = onnx_attr_float(im, "min", im->opset >= 6 ? -FLT_MAX : -INFINITY);
        b[1] = onnx_attr_float(im, "max", im->opset >= 6 ? FLT_MAX : INFINITY);
    } else {
        static const char *what[2] = {"input 1 (min)", "input 2 (max)"};
        for (int k = 0; k < 2; k++) {
            onnx_val *v = onnx_in(im, k + 1);
            if (!v) continue;
            if ((s = onnx_need_const(im, v, what[k], &bt[k]))) return s;
            if (cg_tensor_dtype(bt[k]) != dt || cg_tensor_numel(bt[k]) != 1)
                return onnx_fail(im, CG_ERR_FORMAT, "%s must be one value of the input's dtype %s", what[k],
                                 cg_dtype_name(dt));
            if (dt == CG_F32) b[k] = ((const float *)cg_tensor_data_const(bt[k]))[0];
        }
    }
    if (dt != CG_F32) {
        if (im->opset < 11 || dt == CG_BOOL) return onnx_fail(im, CG_ERR_UNSUPPORTED, "Clip of %s", cg_dtype_name(dt));
        return clip_int(im, x, bt);
    }
    char a[200];
    size_t u = 0;
    a[0] = 0;
    if (!isinf(b[0])) u += (size_t)snprintf(a + u, sizeof a - u, "min: %.9g", b[0]);
    if (!isinf(b[1])) snprintf(a + u, sizeof a - u, "%smax: %.9g", u ? ", " : "", b[1]);
    if (isnan(b[0]) || isnan(b[1]) || (isinf(b[0]) && b[0] > 0) || (isinf(b[1]) && b[1] < 0))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "Clip bounds %g, %g", b[0], b[1]);
    const char *in[1] = {x->name};
    return emit1(im, "clip", 1, in, out_name(im, 0), a);
}

/* Opsets 1 to 6 give the binary ops broadcast and axis: without
 * broadcast: 1 the shapes match (NumPy's rules, a superset, apply); with
 * it B lines up with A's dims from axis (by default A's last dims, as
 * NumPy's rules). B is then reshaped with trailing 1s into *bn. */
static const char *const legacy_attrs[] = {"broadcast", "axis", NULL};

static cg_status legacy_operand(onnx_imp *im, const onnx_val *a, onnx_val *b, const char **bn) {
    *bn = b->name;
    if (im->opset >= 7 || !onnx_attr_int(im, "broadcast", 0) || !onnx_attr(im, "axis")) return CG_OK;
    const int ra = a->desc.ndim, rb = b->desc.ndim;
    int64_t axis = onnx_attr_int(im, "axis", 0), d[CG_MAX_DIMS];
    if (axis < 0) axis += ra;
    if (axis < 0 || axis + rb > ra)
        return onnx_fail(im, CG_ERR_FORMAT, "axis %lld does not fit B's %d dims into A's %d",
                         (long long)onnx_attr_int(im, "axis", 0), rb, ra);
    for (int i = 0; i < ra - (int)axis; i++) d[i] = i < rb ? b->desc.dims[i] : 1;
    *bn = NULL;
    return emit_reshape_to(im, b, ra - (int)axis, d, bn);
}

/* Add, Sub, Mul, Div; Max, Min, Sum (any number of inputs); Mean. */
static cg_status map_binary(onnx_imp *im) {
    const char *op = im->node->op_type, *cg;
    if (!strcmp(op, "Add") || !strcmp(op, "Sum") || !strcmp(op, "Mean")) cg = "add";
    else if (!strcmp(op, "Sub")) cg = "sub";
    else if (!strcmp(op, "Mul")) cg = "mul";
    else if (!strcmp(op, "Div")) cg = "div";
    else if (!strcmp(op, "Max")) cg = "maximum";
    else cg = "minimum";
    cg_status s = onnx_check_attrs(im, im->opset < 7 ? legacy_attrs : NULL);
    int n = (int)im->node->n_input;
    if (s) return s;
    if (n < 1) return onnx_fail(im, CG_ERR_FORMAT, "no inputs");
    onnx_val *acc;
    if ((s = need_in(im, 0, &acc))) return s;
    const char *cur = acc->name;
    int mean = !strcmp(op, "Mean");
    if (n == 1 && !mean) { /* a copy */
        int64_t dims[CG_MAX_DIMS];
        memcpy(dims, acc->desc.dims, sizeof dims);
        return emit_reshape(im, acc, acc->desc.ndim, dims, out_name(im, 0));
    }
    for (int i = 1; i < n; i++) {
        onnx_val *b;
        const char *bn;
        if ((s = need_in(im, i, &b)) || (s = legacy_operand(im, acc, b, &bn))) return s;
        const char *in[2] = {cur, bn};
        const char *outs[1] = {i == n - 1 && !mean ? out_name(im, 0) : NULL};
        if ((s = onnx_emit(im, cg, 2, in, 1, outs, NULL))) return s;
        cur = outs[0];
    }
    if (mean) {
        char a[100];
        snprintf(a, sizeof a, "alpha: %.17g, beta: 0.0", 1.0 / n);
        const char *in[1] = {cur};
        return emit1(im, "affine", 1, in, out_name(im, 0), a);
    }
    return CG_OK;
}

/* Dropout's mask of all kept: bool from opset 10, x's type before. */
static cg_status ones_mask(onnx_imp *im, const onnx_val *x, cg_tensor **out) {
    const cg_dtype mt = im->opset >= 10 ? CG_BOOL : (cg_dtype)x->desc.dtype;
    const uint16_t h1 = mt == CG_F16 ? 0x3C00 : 0x3F80; /* 1.0 in f16, bf16 */
    cg_tensor *mask;
    cg_status s = cg_tensor_create(CG_BOOL, x->desc.ndim, x->desc.dims, &mask);
    if (s) return s;
    memset(cg_tensor_data(mask), 1, (size_t)cg_tensor_numel(mask));
    if (mt == CG_BOOL) return *out = mask, CG_OK;
    const int64_t n = cg_tensor_numel(mask);
    if (mt == CG_F32 || mt == CG_F16 || mt == CG_BF16) s = cg_tensor_create(mt, x->desc.ndim, x->desc.dims, out);
    else s = cg_tensor_convert(mask, mt, out); /* integers: ones */
    cg_tensor_free(mask);
    if (s) return onnx_fail(im, CG_ERR_UNSUPPORTED, "Dropout's mask of %s", cg_dtype_name(mt));
    for (int64_t i = 0; mt == CG_F32 && i < n; i++) ((float *)cg_tensor_data(*out))[i] = 1.0f;
    for (int64_t i = 0; (mt == CG_F16 || mt == CG_BF16) && i < n; i++) ((uint16_t *)cg_tensor_data(*out))[i] = h1;
    return CG_OK;
}

static cg_status map_identity(onnx_imp *im) {
    onnx_val *x;
    cg_status s = need_in(im, 0, &x);
    if (s) return s;
    if (!strcmp(im->node->op_type, "Dropout")) {
        /* the input as is: inference, or training with ratio 0 (as PyTorch
         * and ONNX Runtime: nothing dropped); the mask is then all true */
        static const char *const known[] = {"ratio", "seed", "is_test", NULL};
        if ((s = onnx_check_attrs(im, known))) return s;
        onnx_val *tm = im->opset >= 12 ? onnx_in(im, 2) : NULL, *rv = im->opset >= 12 ? onnx_in(im, 1) : NULL;
        const cg_tensor *t, *rt;
        /* opsets 1 to 6 train unless is_test; 7 to 11 always infer */
        int training = im->opset < 7 && !onnx_attr_int(im, "is_test", 0);
        if (tm && (s = onnx_need_const(im, tm, "input 2 (training_mode)", &t))) return s;
        if (tm) training = cg_tensor_numel(t) == 1 && ((const uint8_t *)cg_tensor_data_const(t))[0];
        double ratio = onnx_attr_float(im, "ratio", 0.5);
        if (rv) {
            if ((s = onnx_need_const(im, rv, "input 1 (ratio)", &rt))) return s;
            if (cg_tensor_dtype(rt) != CG_F32 || cg_tensor_numel(rt) != 1)
                return onnx_fail(im, CG_ERR_UNSUPPORTED, "ratio must be one f32 value");
            ratio = ((const float *)cg_tensor_data_const(rt))[0];
        }
        if (training && ratio != 0)
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "Dropout in training mode (ratio %g): random", ratio);
        if (out_name(im, 1)) {
            for (int i = 0; i < x->desc.ndim; i++)
                if (x->desc.dims[i] < 0) return onnx_fail(im, CG_ERR_UNSUPPORTED, "Dropout's mask of symbolic dims");
            cg_tensor *mask;
            if ((s = ones_mask(im, x, &mask))) return s;
            if ((s = onnx_set_const(im, 1, mask))) return s;
        }
    }
    int64_t dims[CG_MAX_DIMS];
    memcpy(dims, x->desc.dims, sizeof dims);
    return emit_reshape(im, x, x->desc.ndim, dims, out_name(im, 0));
}

/* ---- matrix products ---- */

/* A constant f32 [K, N] weight that x (f32) multiplies from the left. */
static int const_weight(const onnx_val *x, const onnx_val *w) {
    return x->desc.dtype == CG_F32 && w->konst && w->konst->dtype == CG_F32 && w->konst->ndim == 2;
}

static cg_status map_matmul(onnx_imp *im) {
    onnx_val *a, *b;
    cg_status s;
    if ((s = need_in(im, 0, &a)) || (s = need_in(im, 1, &b)) || (s = onnx_check_attrs(im, NULL))) return s;
    if (cg_onnx_fuse_linear(im, a, b, &s)) return s;
    if (a->desc.ndim >= 2 && const_weight(a, b)) { /* x W, W constant: linear on W^T */
        const char *wn, *in[2] = {a->name, NULL};
        if ((s = cg_onnx_weight_t(im, b, &wn))) return s;
        in[1] = wn;
        return emit1(im, "linear", 2, in, out_name(im, 0), NULL);
    }
    if (a->desc.ndim >= 2 && b->desc.ndim >= 2) {
        const char *in[2] = {a->name, b->name};
        return emit1(im, "matmul", 2, in, out_name(im, 0), NULL);
    }
    /* 1-D operands (NumPy's matmul): [K] is [1, K] on the left, [K, 1] on
     * the right, and that dim is dropped from the result */
    const char *an = a->name, *bn = b->name;
    int64_t d[CG_MAX_DIMS];
    if (a->desc.ndim == 1) {
        d[0] = 1, d[1] = a->desc.dims[0];
        an = NULL;
        if ((s = emit_reshape_to(im, a, 2, d, &an))) return s;
    }
    if (b->desc.ndim == 1) {
        d[0] = b->desc.dims[0], d[1] = 1;
        bn = NULL;
        if ((s = emit_reshape_to(im, b, 2, d, &bn))) return s;
    }
    const char *in[2] = {an, bn}, *outs[1] = {NULL};
    if ((s = onnx_emit(im, "matmul", 2, in, 1, outs, NULL))) return s;
    onnx_val *p = onnx_val_get(im, outs[0]);
    int r = p->desc.ndim, nd = 0;
    for (int i = 0; i < r; i++)
        if (!((a->desc.ndim == 1 && i == r - 2) || (b->desc.ndim == 1 && i == r - 1))) d[nd++] = p->desc.dims[i];
    return emit_reshape(im, p, nd, d, out_name(im, 0));
}

static cg_status map_gemm(onnx_imp *im) {
    static const char *const known[] = {"alpha", "beta", "transA", "transB", "broadcast", NULL};
    onnx_val *a, *b, *c = onnx_in(im, 2);
    cg_status s;
    if ((s = need_in(im, 0, &a)) || (s = need_in(im, 1, &b)) || (s = onnx_check_attrs(im, known))) return s;
    double alpha = onnx_attr_float(im, "alpha", 1), beta = onnx_attr_float(im, "beta", 1);
    int ta = (int)onnx_attr_int(im, "transA", 0), tb = (int)onnx_attr_int(im, "transB", 0);
    if (a->desc.ndim != 2 || b->desc.ndim != 2) return onnx_fail(im, CG_ERR_FORMAT, "Gemm takes 2-D A and B");
    if (c && !c->typed) return onnx_fail(im, CG_ERR_VERIFY, "input '%s' has no known type", c->name);
    /* the exporters' linear layer: x w^T + b; GPT-2's Conv1D (transB 0) on
     * its constant weight transposed once */
    const int64_t n = b->desc.dims[tb ? 0 : 1];
    const int bias_ok = !c || (beta == 1 && c->desc.ndim == 1 && c->desc.dims[0] == n);
    if (alpha == 1 && !ta && bias_ok && (tb || const_weight(a, b))) {
        const char *in[3] = {a->name, b->name, c ? c->name : NULL};
        if (!tb && (s = cg_onnx_weight_t(im, b, &in[1]))) return s;
        return emit1(im, "linear", c ? 3 : 2, in, out_name(im, 0), NULL);
    }
    char at[100];
    snprintf(at, sizeof at, "transpose_a: %d, transpose_b: %d", ta != 0, tb != 0);
    const char *in[2] = {a->name, b->name};
    const char *outs[1] = {alpha == 1 && (!c || beta == 0) ? out_name(im, 0) : NULL};
    if ((s = onnx_emit(im, "matmul", 2, in, 1, outs, at))) return s;
    const char *cur = outs[0];
    if (alpha != 1) {
        snprintf(at, sizeof at, "alpha: %.9g, beta: 0.0", alpha);
        const char *in1[1] = {cur};
        outs[0] = !c || beta == 0 ? out_name(im, 0) : NULL;
        if ((s = onnx_emit(im, "affine", 1, in1, 1, outs, at))) return s;
        cur = outs[0];
    }
    if (!c || beta == 0) return CG_OK;
    const char *cn = c->name;
    if (beta != 1) {
        snprintf(at, sizeof at, "alpha: %.9g, beta: 0.0", beta);
        const char *in1[1] = {cn};
        outs[0] = NULL;
        if ((s = onnx_emit(im, "affine", 1, in1, 1, outs, at))) return s;
        cn = outs[0];
    }
    const char *in2[2] = {cur, cn};
    return emit1(im, "add", 2, in2, out_name(im, 0), NULL);
}

/* ---- softmax ---- */

static cg_status map_softmax(onnx_imp *im) {
    static const char *const known[] = {"axis", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    const char *cg = !strcmp(im->node->op_type, "Softmax") ? "softmax" : "log_softmax";
    int r = x->desc.ndim;
    int64_t axis = onnx_attr_int(im, "axis", im->opset >= 13 ? -1 : 1);
    if (axis < -r || axis >= (r ? r : 1))
        return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)axis);
    if (axis < 0) axis += r;
    char a[64];
    const char *in[1] = {x->name};
    if (im->opset >= 13 || axis == r - 1) {
        snprintf(a, sizeof a, "axis: %lld", (long long)axis);
        return emit1(im, cg, 1, in, out_name(im, 0), a);
    }
    /* before opset 13: over the flattened dims from axis on */
    int64_t d2[2] = {-1, 1};
    for (int i = (int)axis; i < r; i++) {
        if (x->desc.dims[i] < 0) return onnx_fail(im, CG_ERR_UNSUPPORTED, "softmax over symbolic dims (opset < 13)");
        d2[1] *= x->desc.dims[i];
    }
    int64_t t[2] = {-1, d2[1]};
    char l[64], at[100];
    snprintf(at, sizeof at, "shape: %s", ints_text(l, sizeof l, 2, t));
    const char *o1[1] = {NULL}, *o2[1] = {NULL};
    if ((s = onnx_emit(im, "reshape", 1, in, 1, o1, at))) return s;
    if ((s = onnx_emit(im, cg, 1, o1, 1, o2, "axis: -1"))) return s;
    onnx_val *y = onnx_val_get(im, o2[0]);
    return emit_reshape(im, y, r, x->desc.dims, out_name(im, 0));
}

/* ---- shapes ---- */

static cg_status map_transpose(onnx_imp *im) {
    static const char *const known[] = {"perm", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    int n;
    const int64_t *p = onnx_attr_ints(im, "perm", &n);
    int64_t rev[CG_MAX_DIMS];
    if (!p) {
        n = x->desc.ndim;
        for (int i = 0; i < n; i++) rev[i] = n - 1 - i;
        p = rev;
    }
    char a[300], l[256];
    snprintf(a, sizeof a, "perm: %s", ints_text(l, sizeof l, n, p));
    const char *in[1] = {x->name};
    return emit1(im, "transpose", 1, in, out_name(im, 0), a);
}

/* Reshape to a shape with symbolic dims (onnx_sym.c): ONNX's 0 copies x's
 * dim, -1 and dims clgraph cannot name are inferred (one at most), the
 * symbols kept where x has them. */
static cg_status reshape_sym(onnx_imp *im, onnx_val *x, int n, const int64_t *t) {
    const int allowzero = onnx_attr_int(im, "allowzero", 0) != 0;
    int64_t d[CG_MAX_DIMS];
    for (int i = 0; i < n && allowzero; i++)
        if (t[i] == 0) return onnx_fail(im, CG_ERR_UNSUPPORTED, "allowzero with a 0 among symbolic dims");
    for (int i = 0; i < n; i++) {
        if (t[i] == 0 && i >= x->desc.ndim)
            return onnx_fail(im, CG_ERR_FORMAT, "shape entry %d copies a dim x lacks", i);
        d[i] = t[i] == 0 ? x->desc.dims[i] : t[i] == -1 ? CG_DIM_UNKNOWN : onnx_sym_to_dim(t[i]);
        if (d[i] < 0 && d[i] != CG_DIM_UNKNOWN && !onnx_is_sym(t[i]) && t[i] != 0)
            return onnx_fail(im, CG_ERR_FORMAT, "shape entry %lld", (long long)t[i]);
    }
    return emit_reshape_to(im, x, n, d, &(const char *){out_name(im, 0)});
}

static cg_status map_reshape(onnx_imp *im) {
    static const char *const known[] = {"allowzero", "shape", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    int64_t t[CG_MAX_DIMS];
    int n;
    if (im->opset < 5) {
        const int64_t *a = onnx_attr_ints(im, "shape", &n);
        if (!a || n > CG_MAX_DIMS) return onnx_fail(im, CG_ERR_FORMAT, "no shape attribute");
        memcpy(t, a, (size_t)n * 8);
    } else {
        const cg_tensor *sh;
        if ((s = onnx_need_const(im, onnx_in(im, 1), "input 1 (shape)", &sh))) return s;
        n = (int)cg_shape_numel(sh->ndim, sh->dims);
        if (sh->ndim != 1 || sh->dtype != CG_I64 || n > CG_MAX_DIMS)
            return onnx_fail(im, CG_ERR_FORMAT, "the shape must be an int64 vector of at most %d", CG_MAX_DIMS);
        memcpy(t, sh->data, (size_t)n * 8);
        if (onnx_in(im, 1)->sym) return reshape_sym(im, x, n, t);
    }
    int allowzero = (int)onnx_attr_int(im, "allowzero", 0), zeros = 0, zero_at = -1, concrete = 1;
    for (int i = 0; i < n; i++) {
        if (t[i] < -1) return onnx_fail(im, CG_ERR_FORMAT, "shape entry %lld", (long long)t[i]);
        if (t[i] == 0) zeros++, zero_at = i;
        if (t[i] < 0) concrete = 0;
    }
    if (allowzero && zeros) {
        /* a literal 0: the data is empty; with one 0 and the rest sizes it
         * is the dim clgraph infers (-1: 0 elements over the others') */
        for (int i = 0; i < x->desc.ndim; i++)
            if (x->desc.dims[i] < 0) concrete = 0;
        if (!concrete || zeros != 1 || cg_shape_numel(x->desc.ndim, x->desc.dims) != 0)
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "allowzero with a 0 in the shape (only one 0, of empty data)");
        t[zero_at] = -1;
    }
    /* clgraph's reshape reads 0 and -1 as ONNX does */
    char a[300], l[256];
    snprintf(a, sizeof a, "shape: %s", ints_text(l, sizeof l, n, t));
    const char *in[1] = {x->name};
    return emit1(im, "reshape", 1, in, out_name(im, 0), a);
}

static cg_status map_flatten(onnx_imp *im) {
    static const char *const known[] = {"axis", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    int r = x->desc.ndim;
    int64_t axis = onnx_attr_int(im, "axis", 1);
    if (axis < -r || axis > r) return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)axis);
    if (axis < 0) axis += r;
    int64_t d[2] = {1, 1};
    for (int i = 0; i < r; i++) {
        int64_t v = x->desc.dims[i];
        int k = i >= axis;
        if (v < 0 || d[k] < 0) d[k] = -2; /* symbolic */
        else d[k] *= v;
    }
    if (d[0] == -2 && d[1] == -2) return onnx_fail(im, CG_ERR_UNSUPPORTED, "flatten of symbolic dims on both sides");
    int64_t t[2] = {d[0] == -2 ? -1 : d[0], d[1] == -2 ? -1 : d[1]};
    char a[100], l[64];
    snprintf(a, sizeof a, "shape: %s", ints_text(l, sizeof l, 2, t));
    const char *in[1] = {x->name};
    return emit1(im, "reshape", 1, in, out_name(im, 0), a);
}

static cg_status map_squeeze(onnx_imp *im) {
    static const char *const known[] = {"axes", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    int un = im->node->op_type[0] == 'U', n, r = x->desc.ndim;
    int64_t axes[CG_MAX_DIMS];
    const int64_t *a = onnx_attr_ints(im, "axes", &n);
    if (!a && onnx_in(im, 1)) {
        const cg_tensor *t;
        if ((s = onnx_need_const(im, onnx_in(im, 1), "input 1 (axes)", &t))) return s;
        n = (int)cg_shape_numel(t->ndim, t->dims);
        if (t->dtype != CG_I64 || n > CG_MAX_DIMS) return onnx_fail(im, CG_ERR_FORMAT, "axes must be int64");
        a = t->data;
    }
    if (!a) n = 0;
    if (n > CG_MAX_DIMS) return onnx_fail(im, CG_ERR_FORMAT, "too many axes");
    memcpy(axes, a ? a : axes, (size_t)n * 8);
    int mark[CG_MAX_DIMS] = {0}, nd = un ? r + n : 0;
    int64_t d[CG_MAX_DIMS];
    if (un && nd > CG_MAX_DIMS) return onnx_fail(im, CG_ERR_UNSUPPORTED, "more than %d dims", CG_MAX_DIMS);
    for (int i = 0; i < n; i++) {
        int lim = un ? nd : r;
        int64_t v = axes[i] < 0 ? axes[i] + lim : axes[i];
        if (v < 0 || v >= lim || mark[v]) return onnx_fail(im, CG_ERR_FORMAT, "axis %lld", (long long)axes[i]);
        if (!un && x->desc.dims[v] != 1)
            return onnx_fail(im, CG_ERR_FORMAT, "dim %lld of '%s' is not 1", (long long)v, x->name);
        mark[v] = 1;
    }
    if (un)
        for (int i = 0, k = 0; i < nd; i++) d[i] = mark[i] ? 1 : x->desc.dims[k++];
    else
        for (int i = 0; i < r; i++) {
            if (n ? mark[i] : x->desc.dims[i] == 1) continue;
            if (!n && x->desc.dims[i] < 0)
                return onnx_fail(im, CG_ERR_UNSUPPORTED, "Squeeze without axes of a symbolic dim");
            d[nd++] = x->desc.dims[i];
        }
    return emit_reshape(im, x, nd, d, out_name(im, 0));
}

static cg_status map_concat(onnx_imp *im) {
    static const char *const known[] = {"axis", NULL};
    cg_status s = onnx_check_attrs(im, known);
    int n = (int)im->node->n_input;
    if (s) return s;
    if (n < 1 || n > ONNX_MAX_IO) return onnx_fail(im, CG_ERR_UNSUPPORTED, "%d inputs", n);
    const char *in[ONNX_MAX_IO];
    for (int i = 0; i < n; i++) {
        onnx_val *v;
        if ((s = need_in(im, i, &v))) return s;
        in[i] = v->name;
    }
    char a[64];
    snprintf(a, sizeof a, "axis: %lld", (long long)onnx_attr_int(im, "axis", im->opset < 4 ? 1 : 0)); /* 1 before 4 */
    return emit1(im, "concat", n, in, out_name(im, 0), a);
}

/* x's elements along `axis` at the i32 indices of 1-D value `idx`, in that
 * order: the axis brought to the front, gather_rows, the axis put back.
 * *out: NULL for a fresh name (set). */
static cg_status emit_take(onnx_imp *im, onnx_val *x, int axis, const char *idx, const char **out) {
    cg_status s;
    const char *front = x->name, *g = NULL;
    const int r = x->desc.ndim;
    int64_t perm[CG_MAX_DIMS], back[CG_MAX_DIMS];
    for (int i = 0, k = 1; i < r; i++) {
        if (i != axis) perm[k++] = i;
        back[i] = i < axis ? i + 1 : i == axis ? 0 : i;
    }
    perm[0] = axis;
    char a[300], l[256];
    snprintf(a, sizeof a, "perm: %s", ints_text(l, sizeof l, r, perm));
    if (axis && (s = emit_tmp(im, "transpose", front, a, &front))) return s;
    const char *gin[2] = {front, idx}, *go[1] = {axis ? NULL : *out};
    if ((s = onnx_emit(im, "gather_rows", 2, gin, 1, go, NULL))) return s;
    g = go[0];
    if (!axis) return *out = g, CG_OK;
    snprintf(a, sizeof a, "perm: %s", ints_text(l, sizeof l, r, back));
    const char *tin[1] = {g};
    return onnx_emit(im, "transpose", 1, tin, 1, out, a);
}

/* Slice along one axis with a step other than 1 (ONNX's clamping of start
 * and end), as emit_take of the indices it visits. */
static cg_status slice_stepped(onnx_imp *im, onnx_val *x, int64_t axis, int64_t st, int64_t en, int64_t sp,
                               const char **out) {
    const int r = x->desc.ndim;
    if (axis < -r || axis >= r) return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)axis);
    if (axis < 0) axis += r;
    const int64_t dim = x->desc.dims[axis];
    if (dim < 0) return onnx_fail(im, CG_ERR_UNSUPPORTED, "Slice with step %lld of a symbolic dim", (long long)sp);
    if (sp == 0) return onnx_fail(im, CG_ERR_FORMAT, "Slice with step 0");
    if (dim > (1 << 24))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "Slice with step %lld of a dim of %lld", (long long)sp,
                         (long long)dim);
    if (st < 0) st = st < -dim ? 0 : st + dim;
    if (en < 0) en = en < -dim ? -1 : en + dim;
    if (sp > 0) st = st > dim ? dim : st, en = en > dim ? dim : en < 0 ? 0 : en;
    else st = st > dim - 1 ? dim - 1 : st, en = en > dim - 1 ? dim - 1 : en;
    int32_t *idx = malloc((size_t)(dim ? dim : 1) * sizeof *idx);
    if (!idx) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    int64_t n = 0;
    for (int64_t i = st; sp > 0 ? i < en : i > en; i += sp) idx[n++] = (int32_t)i;
    cg_tensor *t;
    const char *iname;
    cg_status s = cg_tensor_create(CG_I32, 1, &n, &t);
    if (!s && n) memcpy(cg_tensor_data(t), idx, (size_t)n * sizeof *idx);
    free(idx);
    if (!s) s = onnx_const_param(im, t, &iname);
    return s ? s : emit_take(im, x, (int)axis, iname, out);
}

static cg_status map_slice(onnx_imp *im) {
    static const char *const known[] = {"starts", "ends", "axes", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    int64_t st[CG_MAX_DIMS], en[CG_MAX_DIMS], ax[CG_MAX_DIMS], sp[CG_MAX_DIMS];
    int n;
    if (im->opset < 10) {
        int ne, na;
        const int64_t *a = onnx_attr_ints(im, "starts", &n), *b = onnx_attr_ints(im, "ends", &ne),
                      *c = onnx_attr_ints(im, "axes", &na);
        if (!a || !b || n != ne || n > CG_MAX_DIMS || (c && na != n))
            return onnx_fail(im, CG_ERR_FORMAT, "starts and ends must be lists of one length");
        for (int i = 0; i < n; i++) st[i] = a[i], en[i] = b[i], ax[i] = c ? c[i] : i, sp[i] = 1;
    } else {
        const cg_tensor *t[4] = {NULL};
        static const char *what[4] = {"input 1 (starts)", "input 2 (ends)", "input 3 (axes)", "input 4 (steps)"};
        for (int k = 0; k < 4; k++) {
            onnx_val *v = onnx_in(im, k + 1);
            if (!v && k >= 2) continue;
            if ((s = onnx_need_const(im, v, what[k], &t[k]))) return s;
        }
        n = (int)cg_shape_numel(t[0]->ndim, t[0]->dims);
        if (n > CG_MAX_DIMS) return onnx_fail(im, CG_ERR_FORMAT, "too many starts");
        for (int k = 0; k < 4; k++)
            if (t[k] &&
                ((t[k]->dtype != CG_I64 && t[k]->dtype != CG_I32) || cg_shape_numel(t[k]->ndim, t[k]->dims) != n))
                return onnx_fail(im, CG_ERR_FORMAT, "%s must be %d integers", what[k], n);
        for (int i = 0; i < n; i++) {
            int64_t v[4] = {0, 0, i, 1};
            for (int k = 0; k < 4; k++)
                if (t[k])
                    v[k] = t[k]->dtype == CG_I64 ? ((const int64_t *)t[k]->data)[i] : ((const int32_t *)t[k]->data)[i];
            st[i] = v[0], en[i] = v[1], ax[i] = v[2], sp[i] = v[3];
        }
    }
    const char *cur = x->name;
    for (int i = 0; i < n; i++) {
        const int64_t xa = ax[i] + (ax[i] < 0 ? x->desc.ndim : 0);
        if ((onnx_is_sym(st[i]) || onnx_is_sym(en[i])) && sp[i] != 1)
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "Slice with a symbolic start or end and a step other than 1");
        const int in_range = xa >= 0 && xa < x->desc.ndim;
        if (in_range && onnx_is_sym(en[i]) && st[i] == 0 && onnx_sym_to_dim(en[i]) == x->desc.dims[xa]) {
            en[i] = INT64_MAX; /* to the end of that very dim */
        } else if (in_range && (onnx_is_sym(st[i]) || onnx_is_sym(en[i]))) {
            /* bounds computed from dims (x[:, P:P + S], x[:, :S - 1]): the
             * rows they take, clamped to the dim as ONNX does */
            const char *idx = NULL, *o = i == n - 1 ? out_name(im, 0) : NULL;
            if ((s = onnx_sym_slice_rows(im, onnx_dim_to_sym(x->desc.dims[xa]), st[i], en[i], &idx)) ||
                (s = emit_take(im, onnx_val_get(im, cur), (int)xa, idx, &o)))
                return s;
            cur = o;
            continue;
        }
        if (sp[i] != 1) {
            const char *o = i == n - 1 ? out_name(im, 0) : NULL;
            if ((s = slice_stepped(im, onnx_val_get(im, cur), ax[i], st[i], en[i], sp[i], &o))) return s;
            cur = o;
            continue;
        }
        char a[200];
        snprintf(a, sizeof a, "axis: %lld, start: %lld, end: %lld", (long long)ax[i], (long long)st[i],
                 (long long)en[i]);
        const char *in[1] = {cur}, *outs[1] = {i == n - 1 ? out_name(im, 0) : NULL};
        if ((s = onnx_emit(im, "slice", 1, in, 1, outs, a))) return s;
        cur = outs[0];
    }
    if (n == 0) {
        int64_t d[CG_MAX_DIMS];
        memcpy(d, x->desc.dims, sizeof d);
        return emit_reshape(im, x, x->desc.ndim, d, out_name(im, 0));
    }
    return CG_OK;
}

/* CumSum and CumProd: the axis (input 1) must be known at import. */
static cg_status map_cumsum(onnx_imp *im) {
    static const char *const known[] = {"exclusive", "reverse", NULL};
    onnx_val *x, *ax;
    const cg_tensor *t;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &ax)) || (s = onnx_check_attrs(im, known)) ||
        (s = onnx_need_const(im, ax, "input 1 (axis)", &t)))
        return s;
    if ((cg_tensor_dtype(t) != CG_I32 && cg_tensor_dtype(t) != CG_I64) || cg_tensor_numel(t) != 1)
        return onnx_fail(im, CG_ERR_FORMAT, "input 1 (axis) must be one int32 or int64 value");
    char a[200];
    snprintf(a, sizeof a, "axis: %lld, exclusive: %d, reverse: %d", (long long)cg_onnx_int_at(t, 0),
             onnx_attr_int(im, "exclusive", 0) != 0, onnx_attr_int(im, "reverse", 0) != 0);
    const char *in[1] = {x->name};
    return emit1(im, strcmp(im->node->op_type, "CumProd") ? "cumsum" : "cumprod", 1, in, out_name(im, 0), a);
}

/* ---- reductions ---- */

/* One clgraph reduction of `in` over axes (n = 0: all) into *out (NULL:
 * a fresh name, set). */
static cg_status reduce_to(onnx_imp *im, const char *op, const char *in, const int64_t *axes, int n, int keep,
                           const char **out) {
    char at[300], l[256];
    snprintf(at, sizeof at, "axes: %s, keepdims: %d", ints_text(l, sizeof l, n, axes), keep);
    const char *ins[1] = {in};
    return onnx_emit(im, op, 1, ins, 1, out, at);
}

/* One elementwise clgraph op (unary, or binary with b != NULL) into *out. */
static cg_status ew_to(onnx_imp *im, const char *op, const char *a, const char *b, const char **out) {
    const char *ins[2] = {a, b};
    return onnx_emit(im, op, b ? 2 : 1, ins, 1, out, NULL);
}

/* ReduceSum of int32 or int64, exact: a running sum (cumsum) along each
 * reduced axis and its last element, then a reshape to the output dims. */
static cg_status int_sum_to(onnx_imp *im, onnx_val *x, const int64_t *axes, int n, int keep, const char **out) {
    const int r = x->desc.ndim;
    int64_t d[CG_MAX_DIMS];
    int red[CG_MAX_DIMS] = {0}, nd = 0;
    for (int i = 0; i < (n ? n : r); i++) {
        const int64_t k = n ? axes[i] + (axes[i] < 0 ? r : 0) : i;
        if (k < 0 || k >= r) return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)axes[i]);
        if (x->desc.dims[k] == 0) return onnx_fail(im, CG_ERR_UNSUPPORTED, "integer ReduceSum over an empty axis");
        red[k] = 1;
    }
    const char *cur = x->name;
    cg_status s;
    char at[80];
    for (int k = 0; k < r; k++) {
        if (!red[k]) continue;
        const char *c = NULL, *l = NULL;
        snprintf(at, sizeof at, "axis: %d", k);
        if ((s = emit_tmp(im, "cumsum", cur, at, &c))) return s;
        snprintf(at, sizeof at, "axis: %d, start: -1", k);
        if ((s = emit_tmp(im, "slice", c, at, &l))) return s;
        cur = l;
    }
    for (int k = 0; k < r; k++)
        if (!red[k] || keep) d[nd++] = red[k] ? 1 : x->desc.dims[k];
    onnx_val *v = onnx_val_get(im, cur);
    if (!v) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    return emit_reshape_to(im, v, nd, d, out);
}

/* ReduceMax, ReduceMin or ReduceLogSumExp over an axis of size 0 (x of
 * concrete dims): the reduction's identity everywhere (-inf, +inf, -inf;
 * for bool false and true), a constant. 1 when it applies. */
static int reduce_empty(onnx_imp *im, onnx_val *x, const char *op, const int64_t *axes, int n, int keep,
                        cg_status *st) {
    const int r = x->desc.ndim;
    int red[CG_MAX_DIMS] = {0}, empty = 0, nd = 0;
    int64_t d[CG_MAX_DIMS];
    *st = CG_OK;
    if (strcmp(op, "Max") && strcmp(op, "Min") && strcmp(op, "LogSumExp")) return 0;
    for (int i = 0; i < r; i++)
        if (x->desc.dims[i] < 0) return 0;
    for (int i = 0; i < (n ? n : r); i++) {
        const int64_t k = n ? axes[i] + (axes[i] < 0 ? r : 0) : i;
        if (k < 0 || k >= r) return 0; /* the reduction's own check names it */
        red[k] = 1, empty |= x->desc.dims[k] == 0;
    }
    if (!empty) return 0;
    for (int i = 0; i < r; i++)
        if (!red[i] || keep) d[nd++] = red[i] ? 1 : x->desc.dims[i];
    const int is_bool = x->desc.dtype == CG_BOOL, is_min = !strcmp(op, "Min");
    cg_tensor *t;
    if (!is_bool && x->desc.dtype != CG_F32) return 0;
    if ((*st = cg_tensor_create(is_bool ? CG_BOOL : CG_F32, nd, d, &t))) return 1;
    for (int64_t i = 0; i < cg_tensor_numel(t); i++)
        if (is_bool) ((uint8_t *)cg_tensor_data(t))[i] = (uint8_t)is_min;
        else ((float *)cg_tensor_data(t))[i] = is_min ? INFINITY : -INFINITY;
    *st = onnx_set_const(im, 0, t);
    return 1;
}

/* ReduceMax and ReduceMin of bool (opset 20: any and all): computed on 0
 * and 1 as f32 and cast back. */
static cg_status reduce_bool(onnx_imp *im, onnx_val *x, const char *op, const int64_t *axes, int n, int keep) {
    const char *f = NULL, *nf = NULL, *t1 = NULL, *t2 = NULL;
    const int is_min = !strcmp(op, "Min");
    cg_status s;
    if (strcmp(op, "Max") && !is_min)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "Reduce%s of bool (only Max and Min)", op);
    if ((s = emit_tmp(im, "cast", x->name, "to: \"f32\"", &f))) return s;
    if (is_min && (s = ew_to(im, "neg", f, NULL, &nf))) return s;
    if ((s = reduce_to(im, "reduce_max", is_min ? nf : f, axes, n, keep, &t1))) return s;
    if (is_min && (s = ew_to(im, "neg", t1, NULL, &t2))) return s;
    t1 = is_min ? t2 : t1;
    return emit1(im, "cast", 1, &t1, out_name(im, 0), "to: \"bool\"");
}

/* The Reduce family: Sum, Mean, Max and Prod are clgraph's; Min, L1, L2,
 * SumSquare, LogSum and LogSumExp are made of them (LogSumExp with the
 * maximum taken out first, so large inputs do not overflow). */
static cg_status map_reduce(onnx_imp *im) {
    static const char *const known[] = {"axes", "keepdims", "noop_with_empty_axes", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    const char *op = im->node->op_type + 6; /* after "Reduce" */
    if (!strcmp(op, "Mean") && cg_onnx_fuse_layer_norm(im, &s)) return s;
    int n;
    const int64_t *a = onnx_attr_ints(im, "axes", &n);
    if (!a && onnx_in(im, 1)) {
        const cg_tensor *t;
        if ((s = onnx_need_const(im, onnx_in(im, 1), "input 1 (axes)", &t))) return s;
        if (cg_tensor_dtype(t) != CG_I64) return onnx_fail(im, CG_ERR_FORMAT, "axes must be int64");
        n = (int)cg_tensor_numel(t);
        a = cg_tensor_data_const(t);
    }
    if (!a) n = 0;
    if (n > CG_MAX_DIMS) return onnx_fail(im, CG_ERR_FORMAT, "too many axes");
    int64_t axes[CG_MAX_DIMS];
    if (n) memcpy(axes, a, (size_t)n * 8);
    int keep = onnx_attr_int(im, "keepdims", 1) != 0;
    if (n == 0 && onnx_attr_int(im, "noop_with_empty_axes", 0)) {
        int64_t d[CG_MAX_DIMS];
        memcpy(d, x->desc.dims, sizeof d);
        return emit_reshape(im, x, x->desc.ndim, d, out_name(im, 0));
    }
    if (reduce_empty(im, x, op, axes, n, keep, &s)) return s;
    if (x->desc.dtype == CG_BOOL) return reduce_bool(im, x, op, axes, n, keep);
    const char *y = out_name(im, 0), *t1 = NULL, *t2 = NULL, *t3 = NULL;
    if (!strcmp(op, "Sum") && (x->desc.dtype == CG_I32 || x->desc.dtype == CG_I64))
        return int_sum_to(im, x, axes, n, keep, &y);
    if (!strcmp(op, "Sum")) return reduce_to(im, "reduce_sum", x->name, axes, n, keep, &y);
    if (!strcmp(op, "Mean")) return reduce_to(im, "reduce_mean", x->name, axes, n, keep, &y);
    if (!strcmp(op, "Max")) return reduce_to(im, "reduce_max", x->name, axes, n, keep, &y);
    if (!strcmp(op, "Prod")) return reduce_to(im, "reduce_prod", x->name, axes, n, keep, &y);
    if (!strcmp(op, "Min")) {
        if ((s = ew_to(im, "neg", x->name, NULL, &t1)) || (s = reduce_to(im, "reduce_max", t1, axes, n, keep, &t2)))
            return s;
        return ew_to(im, "neg", t2, NULL, &y);
    }
    if (!strcmp(op, "L1")) {
        if ((s = ew_to(im, "abs", x->name, NULL, &t1))) return s;
        return reduce_to(im, "reduce_sum", t1, axes, n, keep, &y);
    }
    if (!strcmp(op, "L2") || !strcmp(op, "SumSquare")) {
        if ((s = ew_to(im, "mul", x->name, x->name, &t1))) return s;
        if (op[0] == 'S') return reduce_to(im, "reduce_sum", t1, axes, n, keep, &y);
        if ((s = reduce_to(im, "reduce_sum", t1, axes, n, keep, &t2))) return s;
        return ew_to(im, "sqrt", t2, NULL, &y);
    }
    if (!strcmp(op, "LogSum")) {
        if ((s = reduce_to(im, "reduce_sum", x->name, axes, n, keep, &t1))) return s;
        return ew_to(im, "log", t1, NULL, &y);
    }
    if (!strcmp(op, "LogSumExp")) {
        const char *m = NULL, *mo = NULL;
        if ((s = reduce_to(im, "reduce_max", x->name, axes, n, 1, &m)) || (s = ew_to(im, "sub", x->name, m, &t1)) ||
            (s = ew_to(im, "exp", t1, NULL, &t2)) || (s = reduce_to(im, "reduce_sum", t2, axes, n, keep, &t3)))
            return s;
        const char *lg = NULL;
        if ((s = ew_to(im, "log", t3, NULL, &lg))) return s;
        if (keep) mo = m;
        else if ((s = reduce_to(im, "reduce_max", x->name, axes, n, 0, &mo))) return s;
        return ew_to(im, "add", lg, mo, &y);
    }
    return onnx_fail(im, CG_ERR_UNSUPPORTED, "Reduce%s is not supported", op);
}

/* Whether p (f32) holds one value per element of x's dims from axis on:
 * those dims exactly (after leading 1s), so it lines up with each row. */
static int covers_rows(const onnx_val *x, int axis, const onnx_val *p) {
    const int n = x->desc.ndim - axis;
    if (p->desc.dtype != CG_F32 || p->desc.ndim < n) return 0;
    for (int i = 0; i < p->desc.ndim - n; i++)
        if (p->desc.dims[i] != 1) return 0;
    for (int i = 0; i < n; i++)
        if (p->desc.dims[p->desc.ndim - n + i] != x->desc.dims[axis + i]) return 0;
    return 1;
}

/* LayerNormalization (opset 17): clgraph's layer_norm where only Y is read
 * and Scale and B line up with the rows; otherwise its ONNX function body:
 * mean and variance over the dims from axis on, Y = (X - mean) / sqrt(var
 * + eps) * Scale + B, and the optional Mean and InvStdDev outputs. */
static cg_status map_layer_norm(onnx_imp *im) {
    static const char *const known[] = {"axis", "epsilon", "stash_type", NULL};
    onnx_val *x, *scale, *bias = onnx_in(im, 2);
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &scale)) || (s = onnx_check_attrs(im, known))) return s;
    if (onnx_attr_int(im, "stash_type", 1) != 1)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "stash_type %lld (only 1, f32)",
                         (long long)onnx_attr_int(im, "stash_type", 1));
    int r = x->desc.ndim;
    int64_t axis = onnx_attr_int(im, "axis", -1);
    if (axis < -r || axis >= r) return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)axis);
    if (axis < 0) axis += r;
    if (!out_name(im, 1) && !out_name(im, 2) && x->desc.dtype == CG_F32 && covers_rows(x, (int)axis, scale) &&
        (!bias || covers_rows(x, (int)axis, bias))) {
        char at[100];
        snprintf(at, sizeof at, "axis: %lld, epsilon: %.9g", (long long)axis, onnx_attr_float(im, "epsilon", 1e-5));
        const char *in[3] = {x->name, scale->name, bias ? bias->name : NULL};
        return emit1(im, "layer_norm", bias ? 3 : 2, in, out_name(im, 0), at);
    }
    int64_t axes[CG_MAX_DIMS];
    int n = 0;
    for (int64_t i = axis; i < r; i++) axes[n++] = i;
    char eps[80];
    snprintf(eps, sizeof eps, "alpha: 1.0, beta: %.9g", onnx_attr_float(im, "epsilon", 1e-5));
    const char *mean = out_name(im, 1), *d = NULL, *sq = NULL, *var = NULL, *ve = NULL, *sd = NULL, *nrm = NULL;
    const char *inv = out_name(im, 2), *sc = NULL, *y = out_name(im, 0);
    if ((s = reduce_to(im, "reduce_mean", x->name, axes, n, 1, &mean)) || (s = ew_to(im, "sub", x->name, mean, &d)) ||
        (s = ew_to(im, "mul", d, d, &sq)) || (s = reduce_to(im, "reduce_mean", sq, axes, n, 1, &var)))
        return s;
    const char *vin[1] = {var};
    const char *vout[1] = {NULL};
    if ((s = onnx_emit(im, "affine", 1, vin, 1, vout, eps))) return s;
    ve = vout[0];
    if ((s = ew_to(im, "sqrt", ve, NULL, &sd)) || (s = ew_to(im, "div", d, sd, &nrm))) return s;
    if (out_name(im, 2) && (s = ew_to(im, "reciprocal", sd, NULL, &inv))) return s;
    if (!bias) return ew_to(im, "mul", nrm, scale->name, &y);
    if ((s = ew_to(im, "mul", nrm, scale->name, &sc))) return s;
    return ew_to(im, "add", sc, bias->name, &y);
}

/* ---- more shapes ---- */

/* Split into slices along axis: sizes from the attribute (before opset 13),
 * a known input, or equal parts (num_outputs). */
static cg_status map_split(onnx_imp *im) {
    static const char *const known[] = {"axis", "split", "num_outputs", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    int r = x->desc.ndim, n_out = (int)im->node->n_output;
    int64_t axis = onnx_attr_int(im, "axis", 0);
    if (axis < -r || axis >= r) return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)axis);
    if (axis < 0) axis += r;
    int64_t dim = x->desc.dims[axis];
    if (dim < 0) return onnx_fail(im, CG_ERR_UNSUPPORTED, "Split of a symbolic dim");
    if (n_out < 1 || n_out > ONNX_MAX_IO) return onnx_fail(im, CG_ERR_UNSUPPORTED, "%d outputs", n_out);
    int64_t sizes[ONNX_MAX_IO];
    int n;
    const int64_t *a = onnx_attr_ints(im, "split", &n);
    if (!a && onnx_in(im, 1)) {
        const cg_tensor *t;
        if ((s = onnx_need_const(im, onnx_in(im, 1), "input 1 (split)", &t))) return s;
        if (cg_tensor_dtype(t) != CG_I64) return onnx_fail(im, CG_ERR_FORMAT, "split must be int64");
        n = (int)cg_tensor_numel(t);
        a = cg_tensor_data_const(t);
    }
    const int64_t num = onnx_attr_int(im, "num_outputs", 0);
    if (onnx_attr(im, "num_outputs") && (a || num != n_out))
        return onnx_fail(im, CG_ERR_FORMAT, "num_outputs %lld with %s and %d outputs", (long long)num,
                         a ? "split sizes" : "no sizes", n_out);
    if (!a && im->opset < 18 && dim % n_out)
        return onnx_fail(im, CG_ERR_FORMAT, "a dim of %lld does not split into %d equal parts", (long long)dim, n_out);
    if (a) {
        if (n != n_out) return onnx_fail(im, CG_ERR_FORMAT, "%d split sizes for %d outputs", n, n_out);
        int64_t sum = 0;
        for (int i = 0; i < n; i++) {
            if (a[i] < 0) return onnx_fail(im, CG_ERR_FORMAT, "split size %lld", (long long)a[i]);
            sizes[i] = a[i];
            sum += a[i];
        }
        if (sum != dim)
            return onnx_fail(im, CG_ERR_FORMAT, "split sizes add up to %lld, the dim is %lld", (long long)sum,
                             (long long)dim);
    } else { /* equal parts, the last one smaller (opset 18's rule; before, dim must divide) */
        int64_t part = (dim + n_out - 1) / n_out;
        for (int i = 0; i < n_out; i++) {
            int64_t left = dim - part * i;
            sizes[i] = left < 0 ? 0 : left < part ? left : part;
        }
    }
    int64_t start = 0;
    for (int i = 0; i < n_out; i++) {
        char at[160];
        snprintf(at, sizeof at, "axis: %lld, start: %lld, end: %lld", (long long)axis, (long long)start,
                 (long long)(start + sizes[i]));
        start += sizes[i];
        const char *in[1] = {x->name}, *outs[1] = {out_name(im, i)};
        if ((s = onnx_emit(im, "slice", 1, in, 1, outs, at))) return s;
    }
    return CG_OK;
}

/* Runtime indices of a Gather along dim `axis` of x as i32 for
 * gather_rows / embedding: negative ones + dim (where(less(i, 0), i + dim,
 * i)), then a cast. A symbolic dim's size is made at run time: the last of
 * arange(x) from 1. */
static cg_status runtime_index(onnx_imp *im, onnx_val *ix, onnx_val *x, int axis, const char **out) {
    const int64_t dim = x->desc.dims[axis];
    cg_status s;
    const cg_dtype dt = (cg_dtype)ix->desc.dtype;
    if (dt != CG_I64 && dt != CG_I32) return onnx_fail(im, CG_ERR_FORMAT, "indices must be int32 or int64");
    const int64_t z64 = 0, d64 = dim;
    const int32_t z32 = 0, d32 = (int32_t)dim;
    const char *zero, *len, *neg = NULL, *wrapped = NULL, *fixed = NULL;
    if ((s = const_of(im, dt, 0, NULL, dt == CG_I64 ? (const void *)&z64 : &z32, &zero))) return s;
    if (dim >= 0) {
        if ((s = const_of(im, dt, 0, NULL, dt == CG_I64 ? (const void *)&d64 : &d32, &len))) return s;
    } else {
        char at[80];
        const char *r = NULL;
        len = NULL;
        snprintf(at, sizeof at, "axis: %d, start: 1, to: \"%s\"", axis, cg_dtype_name(dt));
        if ((s = emit_tmp(im, "arange", x->name, at, &r)) || (s = emit_tmp(im, "slice", r, "axis: 0, start: -1", &len)))
            return s;
        if (ix->desc.ndim == 0 && (s = emit_tmp(im, "reshape", len, "shape: []", &len))) return s;
    }
    const char *l_in[2] = {ix->name, zero}, *a_in[2] = {ix->name, len}, *o[1] = {NULL};
    if ((s = onnx_emit(im, "less", 2, l_in, 1, o, NULL))) return s;
    neg = o[0], o[0] = NULL;
    if ((s = onnx_emit(im, "add", 2, a_in, 1, o, NULL))) return s;
    wrapped = o[0], o[0] = NULL;
    const char *w_in[3] = {neg, wrapped, ix->name};
    if ((s = onnx_emit(im, "where", 3, w_in, 1, o, NULL))) return s;
    fixed = o[0];
    if (dt == CG_I32) return *out = fixed, CG_OK;
    return emit_tmp(im, "cast", fixed, "to: \"i32\"", out);
}

/* Gather: emit_take of the indices flattened, then (for indices of other
 * than one dim) a reshape that splits the axis into the indices' dims.
 * Indices known at
 * import are checked and stored as an i32 constant; runtime ones go
 * through runtime_index (but an f32 [V, E] table along axis 0 is clgraph's
 * embedding, the exporter's form of nn.Embedding, which wraps negative ids
 * itself). */
static cg_status map_gather(onnx_imp *im) {
    static const char *const known[] = {"axis", NULL};
    onnx_val *x, *iv;
    cg_status s;
    const cg_tensor *ind = NULL;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &iv)) || (s = onnx_check_attrs(im, known))) return s;
    if (iv->konst && (s = onnx_need_const(im, iv, "input 1 (indices)", &ind))) return s;
    int r = x->desc.ndim, q = ind ? cg_tensor_ndim(ind) : iv->desc.ndim;
    int64_t axis = onnx_attr_int(im, "axis", 0);
    if (axis < -r || axis >= r) return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)axis);
    if (axis < 0) axis += r;
    if (r + q - 1 > CG_MAX_DIMS || r < 1) return onnx_fail(im, CG_ERR_UNSUPPORTED, "rank %d", r + q - 1);
    int64_t dim = x->desc.dims[axis];
    if (dim > INT32_MAX) return onnx_fail(im, CG_ERR_UNSUPPORTED, "Gather along a dim of %lld", (long long)dim);
    const char *idx_name;
    if (ind && dim < 0 && cg_tensor_numel(ind) == 1 && q <= 1) {
        /* one index along a symbolic dim (h[:, -1]): a slice, the axis then
         * dropped (q 0) or kept; an index past the end leaves the slice
         * empty, which the reshape refuses at plan time */
        const int64_t v = cg_onnx_int_at(ind, 0);
        char at[120];
        snprintf(at, sizeof at, "axis: %d, start: %lld, end: %lld", (int)axis, (long long)v,
                 (long long)(v == -1 ? INT64_MAX : v + 1));
        const char *sl = q == 1 ? out_name(im, 0) : NULL, *in[1] = {x->name};
        if ((s = onnx_emit(im, "slice", 1, in, 1, &sl, at)) || q == 1) return s;
        int64_t d[CG_MAX_DIMS];
        int nd = 0;
        for (int i = 0; i < r; i++)
            if (i != axis) d[nd++] = x->desc.dims[i];
        return emit_reshape(im, onnx_val_get(im, sl), nd, d, out_name(im, 0));
    }
    if (ind) {
        int64_t n = cg_tensor_numel(ind);
        cg_tensor *idx;
        if ((s = cg_tensor_create(CG_I32, 1, &n, &idx))) return s;
        for (int64_t i = 0; i < n; i++) {
            int64_t v = cg_tensor_dtype(ind) == CG_I64   ? ((const int64_t *)cg_tensor_data_const(ind))[i]
                        : cg_tensor_dtype(ind) == CG_I32 ? ((const int32_t *)cg_tensor_data_const(ind))[i]
                                                         : INT64_MIN;
            if (v < 0 && dim < 0) {
                cg_tensor_free(idx);
                return onnx_fail(im, CG_ERR_UNSUPPORTED, "a negative index along a symbolic dim");
            }
            if (v < 0) v += dim;
            if (v < 0 || (dim >= 0 && v >= dim)) {
                cg_tensor_free(idx);
                return onnx_fail(im, CG_ERR_FORMAT, "index %lld of '%s' is out of range for dim %lld", (long long)i,
                                 iv->name, (long long)dim);
            }
            ((int32_t *)cg_tensor_data(idx))[i] = (int32_t)v;
        }
        if ((s = onnx_const_param(im, idx, &idx_name))) return s;
    } else {
        /* embedding takes the ids as they come (one launch, not four) */
        if (axis == 0 && r == 2 && x->desc.dtype == CG_F32 && (iv->desc.dtype == CG_I64 || iv->desc.dtype == CG_I32)) {
            const char *in[2] = {x->name, iv->name};
            return emit1(im, "embedding", 2, in, out_name(im, 0), "wrap: 1");
        }
        if ((s = runtime_index(im, iv, x, (int)axis, &idx_name))) return s;
        if (q != 1 && (s = emit_tmp(im, "reshape", idx_name, "shape: [-1]", &idx_name))) return s; /* 1-D */
    }
    /* taken along the axis, then the axis split into the indices' dims
     * (q = 1: already the output) */
    const char *taken = q == 1 ? out_name(im, 0) : NULL;
    if ((s = emit_take(im, x, (int)axis, idx_name, &taken)) || q == 1) return s;
    int64_t d[CG_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < axis; i++) d[nd++] = x->desc.dims[i];
    for (int i = 0; i < q; i++) d[nd++] = ind ? cg_tensor_dim(ind, i) : iv->desc.dims[i];
    for (int i = (int)axis + 1; i < r; i++) d[nd++] = x->desc.dims[i];
    return emit_reshape(im, onnx_val_get(im, taken), nd, d, out_name(im, 0));
}

/* Pow: the exponent is cast to the base's dtype, except that an integer
 * base with a float exponent is computed in f32 and cast back (ONNX's
 * reference: NumPy's power in floating point, then the base's type). */
static cg_status map_pow(onnx_imp *im) {
    onnx_val *a, *b;
    cg_status s;
    if ((s = need_in(im, 0, &a)) || (s = need_in(im, 1, &b)) ||
        (s = onnx_check_attrs(im, im->opset < 7 ? legacy_attrs : NULL)))
        return s;
    const char *bl;
    if ((s = legacy_operand(im, a, b, &bl))) return s;
    if (bl != b->name) b = onnx_val_get(im, bl);
    const int ta = a->desc.dtype, tb = b->desc.dtype;
    if (ta != CG_F32 && ta != CG_I32 && ta != CG_I64)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "Pow of %s (f32, i32 and i64)", cg_dtype_name((cg_dtype)ta));
    if (tb == CG_BOOL) return onnx_fail(im, CG_ERR_UNSUPPORTED, "Pow with a %s exponent", cg_dtype_name((cg_dtype)tb));
    const char *an = a->name, *bn = b->name;
    const int via_f32 = ta != CG_F32 && tb == CG_F32;
    char to[32];
    if (via_f32) {
        const char *in[1] = {a->name}, *o[1] = {NULL};
        if ((s = onnx_emit(im, "cast", 1, in, 1, o, "to: \"f32\""))) return s;
        an = o[0];
    } else if (ta != tb) {
        snprintf(to, sizeof to, "to: \"%s\"", cg_dtype_name((cg_dtype)ta));
        const char *in[1] = {b->name}, *o[1] = {NULL};
        if ((s = onnx_emit(im, "cast", 1, in, 1, o, to))) return s;
        bn = o[0];
    }
    const char *in[2] = {an, bn};
    if (!via_f32) return emit1(im, "pow", 2, in, out_name(im, 0), NULL);
    const char *o[1] = {NULL};
    if ((s = onnx_emit(im, "pow", 2, in, 1, o, NULL))) return s;
    snprintf(to, sizeof to, "to: \"%s\"", cg_dtype_name((cg_dtype)ta));
    const char *cin[1] = {o[0]};
    return emit1(im, "cast", 1, cin, out_name(im, 0), to);
}

/* The int64 values of input i, which must be known at import, into v
 * (at most CG_MAX_DIMS of them); *n their count. */
static cg_status const_ints(onnx_imp *im, int i, const char *what, int64_t *v, int *n) {
    onnx_val *x = onnx_in(im, i);
    const cg_tensor *t;
    cg_status s = onnx_need_const(im, x, what, &t);
    if (s) return s;
    int64_t c = cg_tensor_numel(t);
    if (cg_tensor_dtype(t) != CG_I64 || cg_tensor_ndim(t) != 1)
        return onnx_fail(im, CG_ERR_FORMAT, "%s must be a 1-D int64 tensor", what);
    if (c > CG_MAX_DIMS)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "%s has %lld values (at most %d dims)", what, (long long)c,
                         CG_MAX_DIMS);
    memcpy(v, cg_tensor_data_const(t), (size_t)c * sizeof *v);
    *n = (int)c;
    return CG_OK;
}

/* Expand: clgraph's expand with the shape known at import. */
static cg_status map_expand(onnx_imp *im) {
    onnx_val *x;
    int64_t d[CG_MAX_DIMS];
    int n;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, NULL)) ||
        (s = const_ints(im, 1, "input 1 (shape)", d, &n)))
        return s;
    char a[600], l[512];
    if (onnx_in(im, 1)->sym) {
        for (int i = 0; i < n; i++) d[i] = onnx_sym_to_dim(d[i]);
        for (int i = 0; i < n; i++)
            if (d[i] == CG_DIM_UNKNOWN)
                return onnx_fail(im, CG_ERR_UNSUPPORTED, "the shape has a dim clgraph cannot name");
        if (!onnx_named_dims(im, n, d, l, sizeof l)) return onnx_fail(im, CG_ERR_UNSUPPORTED, "the shape is too long");
    } else {
        ints_text(l, sizeof l, n, d);
    }
    snprintf(a, sizeof a, "shape: %s", l);
    const char *in[1] = {x->name};
    if ((s = emit1(im, "expand", 1, in, out_name(im, 0), a))) return s;
    /* exporters make zero initial states this way (torch's nn.GRU / nn.LSTM) */
    int zeros = x->zeros;
    if (x->konst) {
        const cg_tensor *t = x->konst;
        const unsigned char *p = cg_tensor_data_const(t);
        const size_t bytes = (size_t)cg_tensor_numel(t) * cg_dtype_size(cg_tensor_dtype(t));
        zeros = 1;
        for (size_t i = 0; i < bytes && zeros; i++) zeros = p[i] == 0;
    }
    if (zeros && out_name(im, 0)) onnx_val_get(im, out_name(im, 0))->zeros = 1;
    return CG_OK;
}

/* Tile: x [d0, d1, ...] as [1, d0, 1, d1, ...], expanded to [r0, d0, r1,
 * d1, ...] and reshaped to [r0 d0, r1 d1, ...]; repeats and dims may be
 * symbolic (torch's repeat(B, 1) over a dynamic batch), their products
 * derived dims. */
static cg_status map_tile(onnx_imp *im) {
    onnx_val *x;
    int64_t r[CG_MAX_DIMS], d2[CG_MAX_DIMS], e[CG_MAX_DIMS], o[CG_MAX_DIMS];
    int n;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, NULL))) return s;
    const int nd = x->desc.ndim;
    if (im->opset < 6) { /* inputs tiles and axis: one axis repeated tiles times */
        const cg_tensor *t, *ax;
        if ((s = onnx_need_const(im, onnx_in(im, 1), "input 1 (tiles)", &t)) ||
            (s = onnx_need_const(im, onnx_in(im, 2), "input 2 (axis)", &ax)))
            return s;
        const int64_t k = cg_onnx_int_at(ax, 0);
        if (cg_tensor_numel(t) != 1 || cg_tensor_numel(ax) != 1 || k < 0 || k >= nd)
            return onnx_fail(im, CG_ERR_FORMAT, "tiles and axis must be one value each, axis a dim of the input");
        for (int i = 0; i < nd; i++) r[i] = i == k ? cg_onnx_int_at(t, 0) : 1;
        n = nd;
    } else if ((s = const_ints(im, 1, "input 1 (repeats)", r, &n))) {
        return s;
    }
    if (n != nd) return onnx_fail(im, CG_ERR_FORMAT, "repeats has %d values for %d dims", n, nd);
    if (2 * nd > CG_MAX_DIMS) return onnx_fail(im, CG_ERR_UNSUPPORTED, "Tile of more than %d dims", CG_MAX_DIMS / 2);
    for (int i = 0; i < nd; i++) {
        if (r[i] < 0 && !onnx_is_sym(r[i]))
            return onnx_fail(im, CG_ERR_FORMAT, "repeats has a negative value %lld", (long long)r[i]);
        const int64_t xd = x->desc.dims[i];
        d2[2 * i] = 1, d2[2 * i + 1] = xd;
        e[2 * i] = onnx_sym_to_dim(r[i]), e[2 * i + 1] = xd;
        o[i] = onnx_sym_to_dim(onnx_sym_derive(im, CG_SYM_MUL, r[i], onnx_dim_to_sym(xd)));
        if (e[2 * i] == CG_DIM_UNKNOWN || xd == CG_DIM_UNKNOWN || o[i] == CG_DIM_UNKNOWN)
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "Tile along dim %d: a repeat or dim clgraph cannot name", i);
    }
    const char *t1 = NULL;
    if ((s = emit_reshape_to(im, x, 2 * nd, d2, &t1))) return s;
    char a[700], l[600];
    if (!onnx_named_dims(im, 2 * nd, e, l, sizeof l)) return onnx_fail(im, CG_ERR_UNSUPPORTED, "the shape is too long");
    snprintf(a, sizeof a, "shape: %s", l);
    const char *in[1] = {t1}, *outs[1] = {NULL};
    if ((s = onnx_emit(im, "expand", 1, in, 1, outs, a))) return s;
    return emit_reshape(im, onnx_val_get(im, outs[0]), nd, o, out_name(im, 0));
}

/* TopK: clgraph's topk works along the last axis and gives the largest
 * first, ties to the lower index (ONNX's order; sorted 0 allows any, so
 * this one too). Another axis is moved last and back with transposes; the
 * smallest are the largest of -x, negated back; indices cast to int64. */
static cg_status map_topk(onnx_imp *im) {
    static const char *const known[] = {"axis", "largest", "sorted", "k", NULL};
    onnx_val *x;
    cg_status s;
    int64_t kv[CG_MAX_DIMS];
    int nk = 1;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    const int nd = x->desc.ndim,
              axis = (int)onnx_attr_int(im, "axis", -1) + (onnx_attr_int(im, "axis", -1) < 0 ? nd : 0);
    if (axis < 0 || axis >= nd)
        return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)onnx_attr_int(im, "axis", -1));
    onnx_val *kval = onnx_in(im, 1);
    if (im->opset < 10) kv[0] = onnx_attr_int(im, "k", -1);
    else if (kval && kval->sym && kval->konst && cg_tensor_numel(kval->konst) == 1) {
        /* K a symbolic dim: only the whole axis (a sort, as pack_padded_sequence exports) */
        if (onnx_sym_to_dim(((const int64_t *)kval->konst->data)[0]) != x->desc.dims[axis])
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "K is a symbolic dim other than the axis' length");
        kv[0] = -1;
    } else if ((s = const_ints(im, 1, "input 1 (K)", kv, &nk))) return s;
    if (nk != 1 || kv[0] < -1 || (kv[0] == -1 && !(kval && kval->sym)))
        return onnx_fail(im, CG_ERR_FORMAT, "K must be one non-negative value");
    const int largest = onnx_attr_int(im, "largest", 1) != 0;
    int64_t perm[CG_MAX_DIMS];
    for (int i = 0; i < nd; i++) perm[i] = i == axis ? nd - 1 : i == nd - 1 ? axis : i;
    char pa[300], l[256], ka[64];
    snprintf(pa, sizeof pa, "perm: %s", ints_text(l, sizeof l, nd, perm));
    const char *cur = x->name, *o[2] = {NULL, NULL};
    /* integers rank as f32 (exact up to 2^24: lengths, ids) and come back */
    const cg_dtype xt = x->desc.dtype;
    const int is_int = xt != CG_F32 && xt != CG_BOOL;
    if (is_int && (s = emit_tmp(im, "cast", cur, "to: \"f32\"", &cur))) return s;
    if (axis != nd - 1 && (s = emit_tmp(im, "transpose", cur, pa, &cur))) return s;
    if (!largest && (s = emit_tmp(im, "neg", cur, NULL, &cur))) return s;
    snprintf(ka, sizeof ka, "k: %lld", (long long)kv[0]);
    /* the last op on each output writes it, unless a transpose follows */
    const int moved = axis != nd - 1;
    const char *vo = moved ? NULL : out_name(im, 0), *io = moved ? NULL : out_name(im, 1);
    o[0] = largest && !is_int ? vo : NULL;
    const char *in[1] = {cur};
    if ((s = onnx_emit(im, "topk", 1, in, 2, o, ka))) return s;
    const char *src[2] = {o[0], o[1]}, *n1[1] = {vo}, *c1[1] = {io};
    if (!largest) {
        const char *nin[1] = {src[0]};
        if (is_int) n1[0] = NULL;
        if ((s = onnx_emit(im, "neg", 1, nin, 1, n1, NULL))) return s;
        src[0] = n1[0];
    }
    if (is_int) {
        char ca[40];
        snprintf(ca, sizeof ca, "to: \"%s\"", cg_dtype_name(xt));
        const char *iin[1] = {src[0]}, *io1[1] = {vo};
        if ((s = onnx_emit(im, "cast", 1, iin, 1, io1, ca))) return s;
        src[0] = io1[0];
    }
    const char *cin[1] = {src[1]};
    if ((s = onnx_emit(im, "cast", 1, cin, 1, c1, "to: \"i64\""))) return s;
    src[1] = c1[0];
    for (int k = 0; moved && k < 2; k++) {
        const char *tin[1] = {src[k]};
        if (out_name(im, k) && (s = emit1(im, "transpose", 1, tin, out_name(im, k), pa))) return s;
    }
    return CG_OK;
}

/* OneHot: equal(indices as int64 with a 1 inserted at axis, the classes 0
 * .. depth-1 laid along axis) or the same against classes - depth (negative
 * indices count from the end), then where(mask, on, off). depth and values
 * must be known at import. */
static cg_status map_onehot(onnx_imp *im) {
    static const char *const known[] = {"axis", NULL};
    onnx_val *x;
    const cg_tensor *dt, *vt;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known)) ||
        (s = onnx_need_const(im, onnx_in(im, 1), "input 1 (depth)", &dt)) ||
        (s = onnx_need_const(im, onnx_in(im, 2), "input 2 (values)", &vt)))
        return s;
    if (cg_tensor_numel(dt) != 1 || cg_tensor_numel(vt) != 2)
        return onnx_fail(im, CG_ERR_FORMAT, "depth must be one value and values two");
    const int64_t depth = cg_onnx_int_at(dt, 0);
    const int r = x->desc.ndim;
    int64_t axis = onnx_attr_int(im, "axis", -1);
    axis += axis < 0 ? r + 1 : 0;
    if (depth < 1 || depth > ((int64_t)1 << 24))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "depth %lld", (long long)depth);
    if (axis < 0 || axis > r || r + 1 > CG_MAX_DIMS) return onnx_fail(im, CG_ERR_FORMAT, "axis out of range");
    const char *idx = x->name, *iu = NULL, *cls, *cls2, *m1, *m2, *mask, *on, *off;
    if (x->desc.dtype != CG_I64 && (s = emit_tmp(im, "cast", idx, "to: \"i64\"", &idx))) return s;
    int64_t d[CG_MAX_DIMS], cd[CG_MAX_DIMS];
    for (int i = 0, j = 0; i <= r; i++) d[i] = i == axis ? 1 : x->desc.dims[j++];
    if ((s = emit_reshape_to(im, onnx_val_get(im, idx), r + 1, d, &iu))) return s;
    for (int i = 0; i < r + 1 - (int)axis; i++) cd[i] = i ? 1 : depth;
    int64_t *c = malloc((size_t)depth * 2 * sizeof *c);
    if (!c) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int64_t i = 0; i < depth; i++) c[i] = i, c[depth + i] = i - depth;
    s = const_of(im, CG_I64, r + 1 - (int)axis, cd, c, &cls);
    if (!s) s = const_of(im, CG_I64, r + 1 - (int)axis, cd, c + depth, &cls2);
    free(c);
    if (s) return s;
    const size_t es = cg_dtype_size(cg_tensor_dtype(vt));
    const char *data = cg_tensor_data_const(vt);
    if ((s = const_of(im, cg_tensor_dtype(vt), 0, NULL, data + es, &on)) ||
        (s = const_of(im, cg_tensor_dtype(vt), 0, NULL, data, &off)))
        return s;
    const char *e1[2] = {iu, cls}, *e2[2] = {iu, cls2}, *o1[1] = {NULL}, *o2[1] = {NULL}, *o3[1] = {NULL};
    if ((s = onnx_emit(im, "equal", 2, e1, 1, o1, NULL)) || (s = onnx_emit(im, "equal", 2, e2, 1, o2, NULL))) return s;
    m1 = o1[0], m2 = o2[0];
    const char *e3[2] = {m1, m2};
    if ((s = onnx_emit(im, "logical_or", 2, e3, 1, o3, NULL))) return s;
    mask = o3[0];
    const char *w[3] = {mask, on, off};
    return emit1(im, "where", 3, w, out_name(im, 0), NULL);
}

/* GatherElements: gather_elements with int64 indices. */
static cg_status map_gather_elements(onnx_imp *im) {
    static const char *const known[] = {"axis", NULL};
    onnx_val *x, *ix;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &ix)) || (s = onnx_check_attrs(im, known))) return s;
    const char *idx = ix->name;
    if (ix->desc.dtype != CG_I64 && (s = emit_tmp(im, "cast", idx, "to: \"i64\"", &idx))) return s;
    char a[64];
    snprintf(a, sizeof a, "axis: %lld", (long long)onnx_attr_int(im, "axis", 0));
    const char *in[2] = {x->name, idx};
    return emit1(im, "gather_elements", 2, in, out_name(im, 0), a);
}

/* ScatterElements (and the older Scatter): scatter_elements with int64
 * indices and the reduction attribute (opset 16: none, add, mul; 18: max,
 * min). */
static cg_status map_scatter_elements(onnx_imp *im) {
    static const char *const known[] = {"axis", "reduction", NULL};
    onnx_val *x, *ix, *up;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &ix)) || (s = need_in(im, 2, &up)) ||
        (s = onnx_check_attrs(im, known)))
        return s;
    const Onnx__AttributeProto *r = onnx_attr_typed(im, "reduction", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    char red[16] = "none";
    if (r && r->has_s) {
        if (r->s.len >= sizeof red) return onnx_fail(im, CG_ERR_UNSUPPORTED, "reduction of %zu bytes", r->s.len);
        memcpy(red, r->s.data, r->s.len);
        red[r->s.len] = 0;
        if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul") && strcmp(red, "max") && strcmp(red, "min"))
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "reduction '%s'", red);
    }
    const char *idx = ix->name;
    if (ix->desc.dtype != CG_I64 && (s = emit_tmp(im, "cast", idx, "to: \"i64\"", &idx))) return s;
    char a[96];
    snprintf(a, sizeof a, "axis: %lld, reduction: \"%s\"", (long long)onnx_attr_int(im, "axis", 0), red);
    const char *in[3] = {x->name, idx, up->name};
    return emit1(im, "scatter_elements", 3, in, out_name(im, 0), a);
}

/* Trilu: its diagonal k (an optional input) must be known at import. */
static cg_status map_trilu(onnx_imp *im) {
    static const char *const known[] = {"upper", NULL};
    onnx_val *x, *kv = onnx_in(im, 1);
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    int64_t k = 0;
    if (kv) {
        const cg_tensor *t;
        if ((s = onnx_need_const(im, kv, "input 1 (k)", &t))) return s;
        if (cg_tensor_dtype(t) != CG_I64 || cg_tensor_numel(t) != 1)
            return onnx_fail(im, CG_ERR_FORMAT, "input 1 (k) must be one int64 value");
        k = ((const int64_t *)cg_tensor_data_const(t))[0];
    }
    char a[100];
    snprintf(a, sizeof a, "upper: %d, k: %lld", onnx_attr_int(im, "upper", 1) != 0, (long long)k);
    const char *in[1] = {x->name};
    return emit1(im, "trilu", 1, in, out_name(im, 0), a);
}

/* Comparisons and logic: clgraph's ops of the same names; Where. */
static cg_status map_bool_op(onnx_imp *im) {
    static const struct {
        const char *onnx, *cg;
    } ops[] = {{"Equal", "equal"},
               {"Less", "less"},
               {"LessOrEqual", "less_equal"},
               {"Greater", "greater"},
               {"GreaterOrEqual", "greater_equal"},
               {"And", "logical_and"},
               {"Or", "logical_or"},
               {"Xor", "logical_xor"},
               {"Not", "logical_not"},
               {"Where", "where"}};
    cg_status s = onnx_check_attrs(im, im->opset < 7 ? legacy_attrs : NULL);
    if (s) return s;
    const char *op = im->node->op_type, *cg = NULL;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(op, ops[i].onnx)) cg = ops[i].cg;
    const int n = !strcmp(op, "Not") ? 1 : !strcmp(op, "Where") ? 3 : 2;
    const char *in[3];
    onnx_val *v[3];
    for (int i = 0; i < n; i++) {
        if ((s = need_in(im, i, &v[i]))) return s;
        in[i] = v[i]->name;
    }
    if (n == 2 && (s = legacy_operand(im, v[0], v[1], &in[1]))) return s;
    return emit1(im, cg, n, in, out_name(im, 0), NULL);
}

/* ArgMax / ArgMin: clgraph's argmax (of -x for ArgMin), whose i32 index
 * is cast to ONNX's int64. Ties go to the first index, ONNX's default, or
 * with select_last_index to the last. */
static cg_status map_argmax(onnx_imp *im) {
    static const char *const known[] = {"axis", "keepdims", "select_last_index", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    const char *src = x->name, *idx = NULL;
    if (!strcmp(im->node->op_type, "ArgMin")) { /* a fresh value for -x */
        src = NULL;
        if ((s = ew_to(im, "neg", x->name, NULL, &src))) return s;
    }
    char a[100];
    snprintf(a, sizeof a, "axis: %lld, keepdims: %d, last: %d", (long long)onnx_attr_int(im, "axis", 0),
             onnx_attr_int(im, "keepdims", 1) != 0, onnx_attr_int(im, "select_last_index", 0) != 0);
    const char *in[1] = {src}, *o[1] = {NULL};
    if ((s = onnx_emit(im, "argmax", 1, in, 1, o, a))) return s;
    idx = o[0];
    const char *cin[1] = {idx};
    return emit1(im, "cast", 1, cin, out_name(im, 0), "to: \"i64\"");
}

/* Ops only folded at import (their inputs known): here when they are not. */
static cg_status map_fold_only(onnx_imp *im) {
    return onnx_fail(im, CG_ERR_UNSUPPORTED,
                     "%s is supported only where it can be computed at import (its "
                     "inputs known, and for Shape and Size concrete dims)",
                     im->node->op_type);
}

/* OP_ANY_DTYPE: the clgraph mapping moves data of any dtype; every other
 * op computes in f32 (or integers), so its f16 and bf16 inputs are widened
 * (cg_onnx_map). */
enum { OP_ANY_DTYPE = 1 };

static const struct {
    const char *name;
    onnx_map_fn fn;
    unsigned flags;
} table[] = {
    {"Abs", map_unary, 0},
    {"Acos", map_unary, 0},
    {"Acosh", map_unary, 0},
    {"Adagrad", cg_onnx_map_adagrad, 0},
    {"Adam", cg_onnx_map_adam, 0},
    {"AffineGrid", cg_onnx_map_affine_grid, 0},
    {"And", map_bool_op, OP_ANY_DTYPE},
    {"Add", map_binary, 0},
    {"ArgMax", map_argmax, 0},
    {"ArgMin", map_argmax, 0},
    {"Asin", map_unary, 0},
    {"Asinh", map_unary, 0},
    {"Atan", map_unary, 0},
    {"Atanh", map_unary, 0},
    {"Attention", cg_onnx_map_attention, 0},
    {"BitCast", cg_onnx_map_bitcast, OP_ANY_DTYPE},
    {"BlackmanWindow", cg_onnx_map_window, OP_ANY_DTYPE},
    {"AveragePool", cg_onnx_map_pool, 0},
    {"BatchNormalization", cg_onnx_map_batch_norm, 0},
    {"BitShift", cg_onnx_map_bitshift, 0},
    {"BitwiseAnd", cg_onnx_map_bitwise, 0},
    {"BitwiseNot", cg_onnx_map_bitwise, 0},
    {"BitwiseOr", cg_onnx_map_bitwise, 0},
    {"BitwiseXor", cg_onnx_map_bitwise, 0},
    {"BlackmanWindow", cg_onnx_map_window, OP_ANY_DTYPE},
    {"Cast", cg_onnx_map_cast, OP_ANY_DTYPE},
    {"CastLike", cg_onnx_map_cast, OP_ANY_DTYPE},
    {"CausalConvWithState", cg_onnx_map_causal_conv, 0},
    {"Ceil", map_unary, 0},
    {"Celu", cg_onnx_map_act, 0},
    {"CenterCropPad", cg_onnx_map_center_crop_pad, OP_ANY_DTYPE},
    {"Clip", map_clip, 0},
    {"Col2Im", cg_onnx_map_col2im, 0},
    {"Compress", cg_onnx_map_compress, OP_ANY_DTYPE},
    {"Concat", map_concat, OP_ANY_DTYPE},
    {"Constant", map_fold_only, OP_ANY_DTYPE},
    {"ConstantOfShape", cg_onnx_map_constant_of_shape, OP_ANY_DTYPE},
    {"ConcatFromSequence", cg_onnx_map_seq, OP_ANY_DTYPE},
    {"Conv", cg_onnx_map_conv, 0},
    {"ConvInteger", cg_onnx_map_conv_integer, 0},
    {"ConvTranspose", cg_onnx_map_conv_transpose, 0},
    {"Cos", map_unary, 0},
    {"Cosh", map_unary, 0},
    {"CumProd", map_cumsum, 0},
    {"CumSum", map_cumsum, 0},
    {"DeformConv", cg_onnx_map_deform_conv, 0},
    {"DepthToSpace", cg_onnx_map_index, OP_ANY_DTYPE},
    {"DequantizeLinear", cg_onnx_map_dequantize, 0},
    {"Det", map_unary, 0},
    {"DFT", cg_onnx_map_dft, 0},
    {"Div", map_binary, 0},
    {"Dropout", map_identity, OP_ANY_DTYPE},
    {"DynamicQuantizeLinear", cg_onnx_map_dynamic_quantize, 0},
    {"Elu", map_activation, 0},
    {"Equal", map_bool_op, 0},
    {"Einsum", cg_onnx_map_einsum, 0},
    {"Erf", map_unary, 0},
    {"Exp", map_unary, 0},
    {"Expand", map_expand, OP_ANY_DTYPE},
    {"EyeLike", cg_onnx_map_eye_like, OP_ANY_DTYPE},
    {"Flatten", map_flatten, OP_ANY_DTYPE},
    {"Floor", map_unary, 0},
    {"Gather", map_gather, OP_ANY_DTYPE},
    {"GatherElements", map_gather_elements, OP_ANY_DTYPE},
    {"GatherND", cg_onnx_map_index, OP_ANY_DTYPE},
    {"Gelu", cg_onnx_map_act, 0},
    {"Gemm", map_gemm, 0},
    {"GlobalAveragePool", cg_onnx_map_global_pool, 0},
    {"GlobalLpPool", cg_onnx_map_global_pool, 0},
    {"GlobalMaxPool", cg_onnx_map_global_pool, 0},
    {"GroupNormalization", cg_onnx_map_group_norm, 0},
    {"GRU", cg_onnx_map_rnn_layer, 0},
    {"Greater", map_bool_op, 0},
    {"GreaterOrEqual", map_bool_op, 0},
    {"GridSample", cg_onnx_map_grid_sample, 0},
    {"HammingWindow", cg_onnx_map_window, OP_ANY_DTYPE},
    {"HannWindow", cg_onnx_map_window, OP_ANY_DTYPE},
    {"Hardmax", cg_onnx_map_act, 0},
    {"HardSigmoid", map_activation, 0},
    {"HardSwish", cg_onnx_map_act, 0},
    {"Identity", map_identity, OP_ANY_DTYPE},
    {"If", cg_onnx_map_if, OP_ANY_DTYPE},
    {"InstanceNormalization", cg_onnx_map_instance_norm, 0},
    {"IsInf", cg_onnx_map_act, 0},
    {"IsNaN", cg_onnx_map_act, 0},
    {"LayerNormalization", map_layer_norm, 0},
    {"LeakyRelu", map_activation, 0},
    {"Less", map_bool_op, 0},
    {"LessOrEqual", map_bool_op, 0},
    {"LinearAttention", cg_onnx_map_linear_attention, 0},
    {"LpNormalization", cg_onnx_map_lp_norm, 0},
    {"LRN", cg_onnx_map_lrn, 0},
    {"LSTM", cg_onnx_map_rnn_layer, 0},
    {"LpPool", cg_onnx_map_pool, 0},
    {"Log", map_unary, 0},
    {"LogSoftmax", map_softmax, 0},
    {"LRN", cg_onnx_map_lrn, 0},
    {"Loop", cg_onnx_map_loop, OP_ANY_DTYPE},
    {"MatMul", map_matmul, 0},
    {"MatMulInteger", cg_onnx_map_matmul_integer, 0},
    {"MaxPool", cg_onnx_map_pool, 0},
    {"Max", map_binary, 0},
    {"MaxUnpool", cg_onnx_map_max_unpool, 0},
    {"Mean", map_binary, 0},
    {"MeanVarianceNormalization", cg_onnx_map_mvn, 0},
    {"MelWeightMatrix", cg_onnx_map_mel, OP_ANY_DTYPE},
    {"Min", map_binary, 0},
    {"Mish", cg_onnx_map_act, 0},
    {"Mod", cg_onnx_map_mod, 0},
    {"Momentum", cg_onnx_map_momentum, 0},
    {"Mul", map_binary, 0},
    {"Neg", map_unary, 0},
    {"NegativeLogLikelihoodLoss", cg_onnx_map_nll_loss, 0},
    {"NonMaxSuppression", cg_onnx_map_nms, OP_ANY_DTYPE},
    {"NonZero", cg_onnx_map_nonzero, OP_ANY_DTYPE},
    {"Not", map_bool_op, OP_ANY_DTYPE},
    {"OneHot", map_onehot, OP_ANY_DTYPE},
    {"Optional", cg_onnx_map_seq, OP_ANY_DTYPE},
    {"OptionalGetElement", cg_onnx_map_seq, OP_ANY_DTYPE},
    {"OptionalHasElement", cg_onnx_map_seq, OP_ANY_DTYPE},
    {"Or", map_bool_op, OP_ANY_DTYPE},
    {"Pad", cg_onnx_map_index, OP_ANY_DTYPE},
    {"Pow", map_pow, 0},
    {"PRelu", cg_onnx_map_act, 0},
    {"QLinearConv", cg_onnx_map_qlinear_conv, OP_ANY_DTYPE},
    {"QLinearMatMul", cg_onnx_map_qlinear_matmul, OP_ANY_DTYPE},
    {"QuantizeLinear", cg_onnx_map_quantize, 0},
    {"Range", cg_onnx_map_range, OP_ANY_DTYPE},
    {"Reciprocal", map_unary, 0},
    {"ReduceL1", map_reduce, 0},
    {"ReduceL2", map_reduce, 0},
    {"ReduceLogSum", map_reduce, 0},
    {"ReduceLogSumExp", map_reduce, 0},
    {"ReduceMax", map_reduce, 0},
    {"ReduceMean", map_reduce, 0},
    {"ReduceMin", map_reduce, 0},
    {"ReduceProd", map_reduce, 0},
    {"ReduceSum", map_reduce, 0},
    {"ReduceSumSquare", map_reduce, 0},
    {"Relu", map_unary, 0},
    {"Reshape", map_reshape, OP_ANY_DTYPE},
    {"Resize", cg_onnx_map_resize, OP_ANY_DTYPE},
    {"ReverseSequence", cg_onnx_map_reverse_sequence, OP_ANY_DTYPE},
    {"RMSNormalization", cg_onnx_map_rms_norm, 0},
    {"RNN", cg_onnx_map_rnn, 0},
    {"RoiAlign", cg_onnx_map_roi_align, 0},
    {"RotaryEmbedding", cg_onnx_map_rotary, 0},
    {"Round", map_unary, 0},
    {"Scatter", map_scatter_elements, OP_ANY_DTYPE},
    {"Scan", cg_onnx_map_scan, OP_ANY_DTYPE},
    {"Scatter", map_scatter_elements, OP_ANY_DTYPE},
    {"ScatterElements", map_scatter_elements, OP_ANY_DTYPE},
    {"ScatterND", cg_onnx_map_index, OP_ANY_DTYPE},
    {"Selu", cg_onnx_map_act, 0},
    {"SequenceAt", cg_onnx_map_seq, OP_ANY_DTYPE},
    {"SequenceConstruct", cg_onnx_map_seq, OP_ANY_DTYPE},
    {"SequenceEmpty", cg_onnx_map_seq, OP_ANY_DTYPE},
    {"SequenceErase", cg_onnx_map_seq, OP_ANY_DTYPE},
    {"SequenceInsert", cg_onnx_map_seq, OP_ANY_DTYPE},
    {"SequenceLength", cg_onnx_map_seq, OP_ANY_DTYPE},
    {"SequenceMap", cg_onnx_map_seq, OP_ANY_DTYPE},
    {"Shape", map_fold_only, OP_ANY_DTYPE},
    {"Shrink", cg_onnx_map_act, 0},
    {"Sigmoid", map_unary, 0},
    {"Sign", map_unary, 0},
    {"Sin", map_unary, 0},
    {"Sinh", map_unary, 0},
    {"SpaceToDepth", cg_onnx_map_index, OP_ANY_DTYPE},
    {"Size", map_fold_only, OP_ANY_DTYPE},
    {"Slice", map_slice, OP_ANY_DTYPE},
    {"Softmax", map_softmax, 0},
    {"SoftmaxCrossEntropyLoss", cg_onnx_map_softmax_cross_entropy, 0},
    {"Softplus", map_unary, 0},
    {"Softsign", map_unary, 0},
    {"Split", map_split, OP_ANY_DTYPE},
    {"SplitToSequence", cg_onnx_map_seq, OP_ANY_DTYPE},
    {"Sqrt", map_unary, 0},
    {"Squeeze", map_squeeze, OP_ANY_DTYPE},
    {"STFT", cg_onnx_map_stft, 0},
    {"Sub", map_binary, 0},
    {"Sum", map_binary, 0},
    {"SwiGLU", cg_onnx_map_swiglu, 0},
    {"Swish", cg_onnx_map_act, 0},
    {"Tan", map_unary, 0},
    {"Tanh", map_unary, 0},
    {"TensorScatter", cg_onnx_map_tensor_scatter, OP_ANY_DTYPE},
    {"TfIdfVectorizer", cg_onnx_map_tfidf, 0},
    {"ThresholdedRelu", cg_onnx_map_act, 0},
    {"Tile", map_tile, OP_ANY_DTYPE},
    {"TopK", map_topk, 0},
    {"Transpose", map_transpose, OP_ANY_DTYPE},
    {"Trilu", map_trilu, OP_ANY_DTYPE},
    {"Unique", cg_onnx_map_unique, OP_ANY_DTYPE},
    {"Unsqueeze", map_squeeze, OP_ANY_DTYPE},
    {"Upsample", cg_onnx_map_resize, OP_ANY_DTYPE},
    {"Where", map_bool_op, OP_ANY_DTYPE},
    {"Xor", map_bool_op, OP_ANY_DTYPE},
};

/* The table row of op_type, or -1. */
static int find_row(const char *op_type) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].name, op_type)) return (int)i;
    return -1;
}

onnx_map_fn cg_onnx_find_op(const char *op_type) {
    int r = find_row(op_type);
    return r < 0 ? NULL : table[r].fn;
}

static int any_dtype(const char *op) {
    int r = find_row(op);
    return r >= 0 && (table[r].flags & OP_ANY_DTYPE);
}

/* A fresh value's stable name. */
static cg_status fresh_val(onnx_imp *im, const char *what, char **name) {
    onnx_val *v = onnx_val_get(im, onnx_fresh(im, what));
    if (!v) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    *name = v->name;
    return CG_OK;
}

/* fn on a node with f16 or bf16 inputs: as ONNX Runtime does on devices
 * without 16-bit arithmetic, those inputs are cast to f32, the node
 * computes in f32, and its f32 outputs are cast back to the 16-bit type
 * (the type ONNX gives them); other outputs (indices, bools) keep theirs. */
static cg_status map_widened(onnx_imp *im, onnx_map_fn fn, cg_dtype narrow) {
    const Onnx__NodeProto *n = im->node;
    if (n->n_input > ONNX_MAX_IO || n->n_output > ONNX_MAX_IO)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "too many inputs or outputs");
    char *in[ONNX_MAX_IO], *out[ONNX_MAX_IO];
    Onnx__NodeProto wide = *n;
    wide.input = in;
    wide.output = out;
    cg_status s = CG_OK;
    for (size_t i = 0; !s && i < n->n_input; i++) {
        onnx_val *v = onnx_in(im, (int)i);
        in[i] = n->input[i];
        if (!v || !v->typed || (v->desc.dtype != CG_F16 && v->desc.dtype != CG_BF16)) continue;
        const char *o = NULL;
        s = emit_tmp(im, "cast", v->name, "to: \"f32\"", &o);
        in[i] = (char *)o;
    }
    for (size_t o = 0; !s && o < n->n_output; o++) {
        out[o] = n->output[o];
        if (out_name(im, (int)o)) s = fresh_val(im, "f32", &out[o]);
    }
    if (s) return s;
    im->node = &wide;
    im->narrow = narrow;
    s = fn(im);
    im->narrow = 0;
    im->node = n;
    for (size_t o = 0; !s && o < n->n_output; o++) {
        if (!out_name(im, (int)o)) continue;
        onnx_val *v = onnx_val_get(im, out[o]);
        if (!v) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        const char *ins[1] = {v->name};
        if (v->typed && v->desc.dtype == CG_F32)
            s = emit1(im, "cast", 1, ins, n->output[o], narrow == CG_F16 ? "to: \"f16\"" : "to: \"bf16\"");
        else if (v->typed) s = emit_reshape(im, v, v->desc.ndim, v->desc.dims, n->output[o]);
    }
    return s;
}

cg_status cg_onnx_map(onnx_imp *im, onnx_map_fn fn) {
    if (any_dtype(im->node->op_type)) return fn(im);
    for (size_t i = 0; i < im->node->n_input; i++) {
        onnx_val *v = onnx_in(im, (int)i);
        if (v && v->typed && (v->desc.dtype == CG_F16 || v->desc.dtype == CG_BF16))
            return map_widened(im, fn, (cg_dtype)v->desc.dtype);
    }
    return fn(im);
}
