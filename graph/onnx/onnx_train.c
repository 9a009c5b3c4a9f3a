/* The optimizers of the ai.onnx.preview.training domain (Adagrad, Momentum,
 * Adam): one update of each tensor group as elementwise clgraph ops. The
 * scalar inputs R (learning rate) and T (update count) are read at run
 * time, so one imported step serves every iteration of a training loop; the
 * factors ONNX makes of them (bias corrections, the first step's beta) are
 * scalar nodes that every tensor of the group then broadcasts. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define TRAINING_DOMAIN "ai.onnx.preview.training"

int cg_onnx_training_op(const char *domain, const char *op_type) {
    return domain && !strcmp(domain, TRAINING_DOMAIN) &&
           (!strcmp(op_type, "Adagrad") || !strcmp(op_type, "Momentum") || !strcmp(op_type, "Adam"));
}

/* Emission that stops at the first failure (st keeps it), so an update rule
 * reads as straight-line code and is checked once. */
typedef struct {
    onnx_imp *im;
    cg_status st;
} tr_em;

/* op(a[, b]) with attributes `attrs` into `out` (NULL: a fresh value); the
 * value's name, or "" once failed. */
static const char *opa(tr_em *e, const char *op, const char *a, const char *b, const char *attrs, const char *out) {
    if (e->st) return "";
    const char *in[2] = {a, b}, *o[1] = {out};
    e->st = onnx_emit(e->im, op, b ? 2 : 1, in, 1, o, attrs);
    return e->st ? "" : o[0];
}

static const char *op2(tr_em *e, const char *op, const char *a, const char *b, const char *out) {
    return opa(e, op, a, b, NULL, out);
}

/* A scalar constant of dtype f32, or i64 where `i64`. */
static const char *scalar(tr_em *e, double v, int i64) {
    if (e->st) return "";
    const float f = (float)v;
    const int64_t k = (int64_t)v;
    const char *name = NULL;
    e->st = const_of(e->im, i64 ? CG_I64 : CG_F32, 0, NULL, i64 ? (const void *)&k : (const void *)&f, &name);
    return e->st ? "" : name;
}

/* c * x (x itself where c is 1). */
static const char *scale(tr_em *e, double c, const char *x) {
    return c == 1.0 ? x : op2(e, "mul", x, scalar(e, c, 0), NULL);
}

/* G + norm_coefficient * X: the gradient with the regularization term. */
static const char *regularized(tr_em *e, double nc, const char *x, const char *g) {
    return nc == 0.0 ? g : op2(e, "add", g, scale(e, nc, x), NULL);
}

/* The node's inputs and float attributes, checked: R and T scalars (R f32,
 * T i64), then n_groups groups of n tensors each (X, G, then the states),
 * every tensor of a position alike in shape. */
static cg_status tr_inputs(onnx_imp *im, int per, int *n, const char **names) {
    const Onnx__NodeProto *nd = im->node;
    if (!cg_onnx_training_op(nd->domain, nd->op_type))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "operator %s is not supported (only in domain '%s')", nd->op_type,
                         TRAINING_DOMAIN);
    if (nd->n_input < 2 + (size_t)per || (nd->n_input - 2) % (size_t)per || nd->n_input > ONNX_MAX_IO)
        return onnx_fail(im, CG_ERR_FORMAT, "%zu inputs: R, T and %d tensors per group are expected", nd->n_input, per);
    *n = (int)(nd->n_input - 2) / per;
    if (nd->n_output != (size_t)(*n * (per - 1)))
        return onnx_fail(im, CG_ERR_FORMAT, "%zu outputs for %d groups: %d expected", nd->n_output, *n, *n * (per - 1));
    for (int i = 0; i < (int)nd->n_input; i++) {
        onnx_val *v;
        cg_status s = need_in(im, i, &v);
        if (s) return s;
        const cg_dtype want = i == 1 ? CG_I64 : CG_F32;
        if (v->desc.dtype != want || (i < 2 && v->desc.ndim != 0 && !(v->desc.ndim == 1 && v->desc.dims[0] == 1)))
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "input %d ('%s') must be %s", i, v->name,
                             i == 0   ? "a float scalar (R)"
                             : i == 1 ? "an int64 scalar (T)"
                                      : "float32");
        names[i] = v->name;
    }
    for (int i = 0; i < (int)nd->n_output; i++)
        if (!out_name(im, i)) return onnx_fail(im, CG_ERR_UNSUPPORTED, "output %d is unnamed", i);
    return CG_OK;
}

/* where(T > 0, a, b) for scalars a and b. */
static const char *if_t_pos(tr_em *e, const char *t, const char *a, const char *b) {
    const char *pos = op2(e, "greater", t, scalar(e, 0, 1), NULL);
    if (e->st) return "";
    const char *in[3] = {pos, a, b}, *o[1] = {NULL};
    e->st = onnx_emit(e->im, "where", 3, in, 1, o, NULL);
    return e->st ? "" : o[0];
}

/* Adagrad: r = R / (1 + T * decay_factor); G' = G + nc * X; H' = H + G'^2;
 * X' = X - r * G' / (sqrt(H') + epsilon). Outputs X'..., H'.... */
cg_status cg_onnx_map_adagrad(onnx_imp *im) {
    static const char *const known[] = {"decay_factor", "epsilon", "norm_coefficient", NULL};
    const char *in[ONNX_MAX_IO];
    int n;
    cg_status s;
    if ((s = tr_inputs(im, 3, &n, in)) || (s = onnx_check_attrs(im, known))) return s;
    const double decay = onnx_attr_float(im, "decay_factor", 0), eps = onnx_attr_float(im, "epsilon", 1e-6),
                 nc = onnx_attr_float(im, "norm_coefficient", 0);
    tr_em e = {im, CG_OK};
    const char *t = opa(&e, "cast", in[1], NULL, "to: \"f32\"", NULL);
    const char *den = op2(&e, "add", scale(&e, decay, t), scalar(&e, 1, 0), NULL);
    const char *r = op2(&e, "div", in[0], den, NULL);
    for (int i = 0; i < n && !e.st; i++) {
        const char *x = in[2 + i], *g = regularized(&e, nc, x, in[2 + n + i]);
        const char *h = op2(&e, "add", in[2 + 2 * n + i], op2(&e, "mul", g, g, NULL), out_name(im, n + i));
        const char *ad = op2(&e, "add", op2(&e, "sqrt", h, NULL, NULL), scalar(&e, eps, 0), NULL);
        const char *step = op2(&e, "div", op2(&e, "mul", r, g, NULL), ad, NULL);
        op2(&e, "sub", x, step, out_name(im, i));
    }
    return e.st;
}

/* The string attribute `name` is `want` (or absent: `def`). */
static int attr_is(onnx_imp *im, const char *name, const char *def, const char *want) {
    const Onnx__AttributeProto *a = onnx_attr_typed(im, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (!a || !a->has_s) return !strcmp(def, want);
    return a->s.len == strlen(want) && !memcmp(a->s.data, want, a->s.len);
}

/* Momentum: G' = G + nc * X; V' = alpha * V + b * G' with b = beta, or 1
 * on the first update (T = 0); standard X' = X - R * V', nesterov X' = X -
 * R * (G' + alpha * V'). Outputs X'..., V'.... */
cg_status cg_onnx_map_momentum(onnx_imp *im) {
    static const char *const known[] = {"alpha", "beta", "mode", "norm_coefficient", NULL};
    const char *in[ONNX_MAX_IO];
    int n;
    cg_status s;
    if ((s = tr_inputs(im, 3, &n, in)) || (s = onnx_check_attrs(im, known))) return s;
    const int nesterov = attr_is(im, "mode", "standard", "nesterov");
    if (!nesterov && !attr_is(im, "mode", "standard", "standard"))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "attribute mode must be 'standard' or 'nesterov'");
    if (!onnx_attr(im, "alpha") || !onnx_attr(im, "beta") || !onnx_attr(im, "norm_coefficient"))
        return onnx_fail(im, CG_ERR_FORMAT, "attributes alpha, beta and norm_coefficient are required");
    const double alpha = onnx_attr_float(im, "alpha", 0), beta = onnx_attr_float(im, "beta", 0),
                 nc = onnx_attr_float(im, "norm_coefficient", 0);
    tr_em e = {im, CG_OK};
    const char *b = if_t_pos(&e, in[1], scalar(&e, beta, 0), scalar(&e, 1, 0));
    for (int i = 0; i < n && !e.st; i++) {
        const char *x = in[2 + i], *g = regularized(&e, nc, x, in[2 + n + i]);
        const char *v =
            op2(&e, "add", scale(&e, alpha, in[2 + 2 * n + i]), op2(&e, "mul", b, g, NULL), out_name(im, n + i));
        const char *d = nesterov ? op2(&e, "add", g, scale(&e, alpha, v), NULL) : v;
        op2(&e, "sub", x, op2(&e, "mul", in[0], d, NULL), out_name(im, i));
    }
    return e.st;
}

/* Adam: G' = G + nc * X; V' = alpha * V + (1 - alpha) * G'; H' = beta * H +
 * (1 - beta) * G'^2; r = R * sqrt(1 - beta^T) / (1 - alpha^T), or R when
 * T = 0; X' = (1 - nc_post) * (X - r * V' / (sqrt(H') + epsilon)).
 * Outputs X'..., V'..., H'.... */
cg_status cg_onnx_map_adam(onnx_imp *im) {
    static const char *const known[] = {"alpha", "beta", "epsilon", "norm_coefficient", "norm_coefficient_post", NULL};
    const char *in[ONNX_MAX_IO];
    int n;
    cg_status s;
    if ((s = tr_inputs(im, 4, &n, in)) || (s = onnx_check_attrs(im, known))) return s;
    const double alpha = onnx_attr_float(im, "alpha", 0.9), beta = onnx_attr_float(im, "beta", 0.999),
                 eps = onnx_attr_float(im, "epsilon", 1e-6), nc = onnx_attr_float(im, "norm_coefficient", 0),
                 post = onnx_attr_float(im, "norm_coefficient_post", 0);
    tr_em e = {im, CG_OK};
    const char *t = opa(&e, "cast", in[1], NULL, "to: \"f32\"", NULL), *one = scalar(&e, 1, 0);
    const char *bt = op2(&e, "sub", one, op2(&e, "pow", scalar(&e, beta, 0), t, NULL), NULL);
    const char *at = op2(&e, "sub", one, op2(&e, "pow", scalar(&e, alpha, 0), t, NULL), NULL);
    const char *rc = op2(&e, "div", op2(&e, "mul", in[0], op2(&e, "sqrt", bt, NULL, NULL), NULL), at, NULL);
    const char *r = if_t_pos(&e, in[1], rc, in[0]);
    for (int i = 0; i < n && !e.st; i++) {
        const char *x = in[2 + i], *g = regularized(&e, nc, x, in[2 + n + i]);
        const char *v =
            op2(&e, "add", scale(&e, alpha, in[2 + 2 * n + i]), scale(&e, 1 - alpha, g), out_name(im, n + i));
        const char *h = op2(&e, "add", scale(&e, beta, in[2 + 3 * n + i]),
                            scale(&e, 1 - beta, op2(&e, "mul", g, g, NULL)), out_name(im, 2 * n + i));
        const char *hs = op2(&e, "add", op2(&e, "sqrt", h, NULL, NULL), scalar(&e, eps, 0), NULL);
        const char *xn =
            op2(&e, "sub", x, op2(&e, "mul", r, op2(&e, "div", v, hs, NULL), NULL), post == 0 ? out_name(im, i) : NULL);
        if (post != 0) op2(&e, "mul", xn, scalar(&e, 1 - post, 0), out_name(im, i));
    }
    return e.st;
}
