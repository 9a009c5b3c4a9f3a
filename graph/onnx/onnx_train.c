/* Two optimizers of the ai.onnx.preview.training domain (Adagrad,
 * Momentum) as elementwise clgraph ops: one update per tensor of the
 * node's group, in the formulas of ONNX's reference. The learning rate R
 * and the step count T must be known at import (the step's scalars are
 * folded into the constants there). Adam is not mapped: ONNX 1.12's
 * test_adam_multiple computed its outputs with an epsilon its model does
 * not carry (onnx/onnx#7749), so a correct Adam fails that node test. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* R and T (inputs 0 and 1) as doubles; the number of tensors updated (the
 * inputs after R and T come in `per` groups of n). */
static cg_status hyper(onnx_imp *im, int per, double *r, double *t, int *n) {
    const cg_tensor *rt, *tt;
    cg_status s;
    if ((s = onnx_need_const(im, onnx_in(im, 0), "input 0 (R, the learning rate)", &rt)) ||
        (s = onnx_need_const(im, onnx_in(im, 1), "input 1 (T, the step count)", &tt)))
        return s;
    if (cg_tensor_numel(rt) != 1 || cg_tensor_dtype(rt) != CG_F32 || cg_tensor_numel(tt) != 1)
        return onnx_fail(im, CG_ERR_FORMAT, "R must be one float and T one integer");
    *r = ((const float *)cg_tensor_data_const(rt))[0], *t = (double)cg_onnx_int_at(tt, 0);
    const int k = (int)im->node->n_input - 2;
    *n = k / per;
    if (k < per || k % per || (int)im->node->n_output != *n * (per - 1))
        return onnx_fail(im, CG_ERR_FORMAT, "%d inputs after R and T for %zu outputs (groups of %d)", k,
                         im->node->n_output, per);
    return CG_OK;
}

/* a * x (+ b * y when y) into *out (a name, or NULL for a fresh value):
 * affine, and add. */
static cg_status axpby(onnx_imp *im, double a, const char *x, double b, const char *y, const char **out) {
    char at[80];
    const char *u = NULL, *v = NULL;
    snprintf(at, sizeof at, "alpha: %.9g, beta: 0.0", (double)(float)a);
    cg_status s = onnx_emit(im, "affine", 1, &x, 1, y ? &u : out, at);
    if (s || !y) return s;
    snprintf(at, sizeof at, "alpha: %.9g, beta: 0.0", (double)(float)b);
    if ((s = emit_tmp(im, "affine", y, at, &v))) return s;
    return onnx_emit(im, "add", 2, (const char *[]){u, v}, 1, out, NULL);
}

/* Input i of the current node's tensors, which must be f32 and typed. */
static cg_status tensor_in(onnx_imp *im, int i, const char **name) {
    onnx_val *v;
    cg_status s = need_in(im, i, &v);
    if (s) return s;
    if (v->desc.dtype != CG_F32) return onnx_fail(im, CG_ERR_UNSUPPORTED, "'%s' is not float", v->name);
    *name = v->name;
    return CG_OK;
}

/* g + norm_coefficient x: the regularized gradient. */
static cg_status regularized(onnx_imp *im, const char *x, const char *g, const char **out) {
    const double nc = onnx_attr_float(im, "norm_coefficient", 0);
    const char *t = NULL;
    if (nc == 0) return *out = g, CG_OK;
    cg_status s = axpby(im, nc, x, 0, NULL, &t);
    return s ? s : emit_tmp2(im, "add", t, g, NULL, out);
}

/* x - y into output o (y already scaled). */
static cg_status x_minus(onnx_imp *im, const char *x, const char *y, int o) {
    return emit1(im, "sub", 2, (const char *[]){x, y}, out_name(im, o), NULL);
}

/* Adagrad: H' = H + G'^2, X' = X - R / (1 + T decay) G' / (sqrt(H') + eps). */
static cg_status adagrad(onnx_imp *im) {
    double r, t;
    int n;
    cg_status s = hyper(im, 3, &r, &t, &n);
    const double rr = r / (1 + t * onnx_attr_float(im, "decay_factor", 0));
    char at[80];
    snprintf(at, sizeof at, "alpha: 1.0, beta: %.9g", (double)(float)onnx_attr_float(im, "epsilon", 1e-6));
    for (int i = 0; !s && i < n; i++) {
        const char *x, *g, *h, *gr, *sq = NULL, *hn = out_name(im, n + i), *rt = NULL, *hs = NULL, *u = NULL, *d = NULL;
        if ((s = tensor_in(im, 2 + i, &x)) || (s = tensor_in(im, 2 + n + i, &g)) ||
            (s = tensor_in(im, 2 + 2 * n + i, &h)) || (s = regularized(im, x, g, &gr)) ||
            (s = emit_tmp2(im, "mul", gr, gr, NULL, &sq)) ||
            (s = onnx_emit(im, "add", 2, (const char *[]){h, sq}, 1, &hn, NULL)) ||
            (s = emit_tmp(im, "sqrt", hn, NULL, &rt)) || (s = emit_tmp(im, "affine", rt, at, &hs)) ||
            (s = axpby(im, rr, gr, 0, NULL, &u)) || (s = emit_tmp2(im, "div", u, hs, NULL, &d)))
            return s;
        s = x_minus(im, x, d, i);
    }
    return s;
}

/* Momentum: V' = alpha V + beta' G' (beta' 1 at T 0), X' = X - R V'
 * (nesterov: X - R (G' + alpha V')). */
static cg_status momentum(onnx_imp *im) {
    double r, t;
    int n;
    cg_status s = hyper(im, 3, &r, &t, &n);
    const Onnx__AttributeProto *m = onnx_attr_typed(im, "mode", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    const int nesterov = m && m->has_s && m->s.len == 8 && !memcmp(m->s.data, "nesterov", 8);
    if (!s && m && m->has_s && !nesterov && !(m->s.len == 8 && !memcmp(m->s.data, "standard", 8)))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "mode (standard or nesterov)");
    const double alpha = onnx_attr_float(im, "alpha", 0), beta = t > 0 ? onnx_attr_float(im, "beta", 0) : 1;
    for (int i = 0; !s && i < n; i++) {
        const char *x, *g, *v, *gr, *vn = out_name(im, n + i), *a = NULL, *b = NULL, *u = NULL, *w = NULL;
        if ((s = tensor_in(im, 2 + i, &x)) || (s = tensor_in(im, 2 + n + i, &g)) ||
            (s = tensor_in(im, 2 + 2 * n + i, &v)) || (s = regularized(im, x, g, &gr)) ||
            (s = axpby(im, alpha, v, 0, NULL, &a)) || (s = axpby(im, beta, gr, 0, NULL, &b)) ||
            (s = onnx_emit(im, "add", 2, (const char *[]){a, b}, 1, &vn, NULL)))
            return s;
        if (nesterov && ((s = axpby(im, alpha, vn, 0, NULL, &w)) || (s = emit_tmp2(im, "add", gr, w, NULL, &w))))
            return s;
        if ((s = axpby(im, r, nesterov ? w : vn, 0, NULL, &u))) return s;
        s = x_minus(im, x, u, i);
    }
    return s;
}

cg_status cg_onnx_map_optimizer(onnx_imp *im) {
    static const char *const known[] = {
        "alpha", "beta", "epsilon", "decay_factor", "mode", "norm_coefficient", "norm_coefficient_post", NULL};
    cg_status s = onnx_check_attrs(im, known);
    if (s) return s;
    const char *op = im->node->op_type;
    return !strcmp(op, "Adagrad") ? adagrad(im) : momentum(im);
}
