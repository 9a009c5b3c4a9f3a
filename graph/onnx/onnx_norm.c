/* The normalizations ONNX defines beside LayerNormalization, as clgraph
 * reductions and elementwise ops in the order ONNX's reference (or the
 * op's function body) computes them: BatchNormalization (inference),
 * InstanceNormalization, GroupNormalization (opset 18's per-group and
 * 21's per-channel scale), RMSNormalization, LpNormalization and
 * MeanVarianceNormalization. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* One clgraph reduction (keepdims) over axes[0..n) into a fresh value. */
static cg_status reduce(onnx_imp *im, const char *op, const char *x, const int64_t *axes, int n, const char **out) {
    char at[300];
    size_t u = (size_t)snprintf(at, sizeof at, "keepdims: 1, axes: [");
    for (int i = 0; i < n && u < sizeof at; i++)
        u += (size_t)snprintf(at + u, sizeof at - u, "%s%lld", i ? ", " : "", (long long)axes[i]);
    if (u < sizeof at) snprintf(at + u, sizeof at - u, "]");
    return emit_tmp(im, op, x, at, out);
}

static cg_status f32_const(onnx_imp *im, double v, const char **name) {
    const float f = (float)v;
    return const_of(im, CG_F32, 0, NULL, &f, name);
}

/* x - mean over the axes (*d) and the population variance over them
 * (*var: mean of the squares of *d). */
static cg_status centered(onnx_imp *im, const char *x, const int64_t *axes, int n, const char **d, const char **var) {
    const char *mean = NULL, *sq = NULL;
    cg_status s;
    if ((s = reduce(im, "reduce_mean", x, axes, n, &mean)) || (s = emit_tmp2(im, "sub", x, mean, NULL, d)) ||
        (s = emit_tmp2(im, "mul", *d, *d, NULL, &sq)))
        return s;
    return reduce(im, "reduce_mean", sq, axes, n, var);
}

/* sqrt(v + eps). */
static cg_status root_eps(onnx_imp *im, const char *v, double eps, const char **out) {
    char at[80];
    const char *t = NULL;
    snprintf(at, sizeof at, "alpha: 1.0, beta: %.9g", (double)(float)eps);
    cg_status s = emit_tmp(im, "affine", v, at, &t);
    return s ? s : emit_tmp(im, "sqrt", t, NULL, out);
}

/* A per-channel vector [C] shaped [C, 1, ...] to broadcast against
 * [N, C, ...] of rank r. */
static cg_status per_channel(onnx_imp *im, onnx_val *v, int r, const char **out) {
    int64_t d[CG_MAX_DIMS];
    if (v->desc.ndim != 1) return onnx_fail(im, CG_ERR_FORMAT, "'%s' must be a vector [C]", v->name);
    d[0] = v->desc.dims[0];
    for (int i = 1; i < r - 1; i++) d[i] = 1;
    *out = NULL;
    return onnx_emit_reshape(im, v, r - 1 > 0 ? r - 1 : 1, d, out);
}

/* s * (x - mean) / sqrt(var + eps) + b, the reference's order, into y. */
static cg_status affine_norm(onnx_imp *im, const char *d, const char *sd, const char *sc, const char *b,
                             const char *y) {
    const char *t = NULL, *u = NULL;
    cg_status s;
    if ((s = emit_tmp2(im, "mul", sc, d, NULL, &t)) || (s = emit_tmp2(im, "div", t, sd, NULL, &u))) return s;
    return emit1(im, "add", 2, (const char *[]){u, b}, y, NULL);
}

/* BatchNormalization in inference mode: the given mean and variance. */
cg_status cg_onnx_map_batch_norm(onnx_imp *im) {
    static const char *const known[] = {"epsilon", "momentum", "training_mode", "is_test", "spatial", NULL};
    onnx_val *x, *v[4];
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    for (int i = 0; i < 4; i++)
        if ((s = need_in(im, i + 1, &v[i]))) return s;
    /* opsets 1 to 6 compute batch statistics unless is_test */
    if (onnx_attr_int(im, "training_mode", 0) || (im->opset < 7 && !onnx_attr_int(im, "is_test", 0)))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "training_mode 1 (batch statistics) is not supported");
    if (!onnx_attr_int(im, "spatial", 1)) return onnx_fail(im, CG_ERR_UNSUPPORTED, "spatial 0 is not supported");
    for (size_t o = 1; o < im->node->n_output; o++)
        if (out_name(im, (int)o))
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "output %zu (the training statistics) is not supported", o);
    const int r = x->desc.ndim;
    if (r < 2) return onnx_fail(im, CG_ERR_FORMAT, "the input must be [N, C, ...]");
    const char *c[4], *d = NULL, *sd = NULL;
    for (int i = 0; i < 4; i++)
        if ((s = per_channel(im, v[i], r, &c[i]))) return s;
    if ((s = emit_tmp2(im, "sub", x->name, c[2], NULL, &d)) ||
        (s = root_eps(im, c[3], onnx_attr_float(im, "epsilon", 1e-5), &sd)))
        return s;
    return affine_norm(im, d, sd, c[0], c[1], out_name(im, 0));
}

/* InstanceNormalization: each (n, c) over the spatial dims. */
cg_status cg_onnx_map_instance_norm(onnx_imp *im) {
    static const char *const known[] = {"epsilon", NULL};
    onnx_val *x, *sc, *b;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &sc)) || (s = need_in(im, 2, &b)) ||
        (s = onnx_check_attrs(im, known)))
        return s;
    const int r = x->desc.ndim;
    if (r < 3) return onnx_fail(im, CG_ERR_FORMAT, "the input must be [N, C, d1, ...]");
    int64_t axes[CG_MAX_DIMS];
    for (int i = 2; i < r; i++) axes[i - 2] = i;
    const char *cs = NULL, *cb = NULL, *d = NULL, *var = NULL, *sd = NULL;
    if ((s = per_channel(im, sc, r, &cs)) || (s = per_channel(im, b, r, &cb)) ||
        (s = centered(im, x->name, axes, r - 2, &d, &var)) ||
        (s = root_eps(im, var, onnx_attr_float(im, "epsilon", 1e-5), &sd)))
        return s;
    return affine_norm(im, d, sd, cs, cb, out_name(im, 0));
}

/* GroupNormalization: x [N, C, ...] as [N, G, C / G * ...], normalized
 * over the last axis; scale and bias per group (opset 18, applied in that
 * shape) or per channel (21, after the reshape back). */
cg_status cg_onnx_map_group_norm(onnx_imp *im) {
    static const char *const known[] = {"epsilon", "num_groups", "stash_type", NULL};
    onnx_val *x, *sc, *b;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &sc)) || (s = need_in(im, 2, &b)) ||
        (s = onnx_check_attrs(im, known)))
        return s;
    const int r = x->desc.ndim;
    const int64_t g = onnx_attr_int(im, "num_groups", 0), c = r >= 2 ? x->desc.dims[1] : -1;
    if (onnx_attr_int(im, "stash_type", 1) != 1)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "stash_type %lld (only 1, f32)",
                         (long long)onnx_attr_int(im, "stash_type", 1));
    if (r < 2 || g < 1 || c < 0 || c % g)
        return onnx_fail(im, CG_ERR_FORMAT, "num_groups %lld must divide the channels (%lld, concrete)", (long long)g,
                         (long long)c);
    const int per_group = im->opset < 21;
    const int64_t gd[3] = {x->desc.dims[0], g, CG_DIM_UNKNOWN}, ax[1] = {2}, one[2] = {g, 1};
    const char *xg = NULL, *d = NULL, *var = NULL, *sd = NULL, *n = NULL, *cs = NULL, *cb = NULL;
    if ((s = onnx_emit_reshape(im, x, 3, gd, &xg)) || (s = centered(im, xg, ax, 1, &d, &var)) ||
        (s = root_eps(im, var, onnx_attr_float(im, "epsilon", 1e-5), &sd)) ||
        (s = emit_tmp2(im, "div", d, sd, NULL, &n)))
        return s;
    if (per_group) {
        const char *t = NULL, *u = NULL;
        if ((s = onnx_emit_reshape(im, sc, 2, one, &cs)) || (s = onnx_emit_reshape(im, b, 2, one, &cb)) ||
            (s = emit_tmp2(im, "mul", cs, n, NULL, &t)) || (s = emit_tmp2(im, "add", t, cb, NULL, &u)))
            return s;
        return emit_reshape(im, onnx_val_get(im, u), r, x->desc.dims, out_name(im, 0));
    }
    const char *back = NULL, *t = NULL;
    if ((s = onnx_emit_reshape(im, onnx_val_get(im, n), r, x->desc.dims, &back)) || (s = per_channel(im, sc, r, &cs)) ||
        (s = per_channel(im, b, r, &cb)) || (s = emit_tmp2(im, "mul", cs, back, NULL, &t)))
        return s;
    return emit1(im, "add", 2, (const char *[]){t, cb}, out_name(im, 0), NULL);
}

/* RMSNormalization: x * 1 / sqrt(mean(x^2) + eps) * scale over the dims
 * from axis on. */
cg_status cg_onnx_map_rms_norm(onnx_imp *im) {
    static const char *const known[] = {"axis", "epsilon", "stash_type", NULL};
    onnx_val *x, *sc;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &sc)) || (s = onnx_check_attrs(im, known))) return s;
    if (onnx_attr_int(im, "stash_type", 1) != 1)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "stash_type %lld (only 1, f32)",
                         (long long)onnx_attr_int(im, "stash_type", 1));
    const int r = x->desc.ndim;
    int64_t axis = onnx_attr_int(im, "axis", -1), axes[CG_MAX_DIMS];
    if (axis < -r || axis >= r) return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)axis);
    if (axis < 0) axis += r;
    for (int64_t i = axis; i < r; i++) axes[i - axis] = i;
    const char *sq = NULL, *m = NULL, *rms = NULL, *inv = NULL, *y = NULL;
    if ((s = emit_tmp2(im, "mul", x->name, x->name, NULL, &sq)) ||
        (s = reduce(im, "reduce_mean", sq, axes, r - (int)axis, &m)) ||
        (s = root_eps(im, m, onnx_attr_float(im, "epsilon", 1e-5), &rms)) ||
        (s = emit_tmp(im, "reciprocal", rms, NULL, &inv)) || (s = emit_tmp2(im, "mul", x->name, inv, NULL, &y)))
        return s;
    return emit1(im, "mul", 2, (const char *[]){y, sc->name}, out_name(im, 0), NULL);
}

/* LpNormalization: x / sum(|x|) (p 1) or x / sqrt(sum(x^2)) (p 2) along
 * axis, 0 where that norm is. */
cg_status cg_onnx_map_lp_norm(onnx_imp *im) {
    static const char *const known[] = {"axis", "p", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    const int64_t p = onnx_attr_int(im, "p", 2), r = x->desc.ndim;
    int64_t axis = onnx_attr_int(im, "axis", -1);
    if (p != 1 && p != 2) return onnx_fail(im, CG_ERR_UNSUPPORTED, "p %lld (1 or 2)", (long long)p);
    if (axis < -r || axis >= r) return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)axis);
    const char *t = NULL, *n = NULL, *q = NULL, *z = NULL, *zero = NULL;
    if ((s = p == 1 ? emit_tmp(im, "abs", x->name, NULL, &t) : emit_tmp2(im, "mul", x->name, x->name, NULL, &t)) ||
        (s = reduce(im, "reduce_sum", t, &axis, 1, &n)) || (p == 2 && (s = emit_tmp(im, "sqrt", n, NULL, &n))) ||
        (s = emit_tmp2(im, "div", x->name, n, NULL, &q)) || (s = f32_const(im, 0, &zero)) ||
        (s = emit_tmp2(im, "equal", n, zero, NULL, &z)))
        return s;
    /* a zero norm gives 0, as the reference, not 0 / 0 */
    return emit1(im, "where", 3, (const char *[]){z, zero, q}, out_name(im, 0), NULL);
}

/* MeanVarianceNormalization: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9)
 * over axes (default [0, 2, 3]), the reference's formula. */
cg_status cg_onnx_map_mvn(onnx_imp *im) {
    static const char *const known[] = {"axes", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    int n;
    const int64_t def[3] = {0, 2, 3}, *axes = onnx_attr_ints(im, "axes", &n);
    if (!axes) axes = def, n = 3;
    if (n > CG_MAX_DIMS) return onnx_fail(im, CG_ERR_FORMAT, "too many axes");
    const char *m = NULL, *m2 = NULL, *sq = NULL, *msq = NULL, *v = NULL, *sd = NULL, *eps = NULL, *den = NULL,
               *d = NULL;
    if ((s = reduce(im, "reduce_mean", x->name, axes, n, &m)) || (s = emit_tmp2(im, "mul", m, m, NULL, &m2)) ||
        (s = emit_tmp2(im, "mul", x->name, x->name, NULL, &sq)) || (s = reduce(im, "reduce_mean", sq, axes, n, &msq)) ||
        (s = emit_tmp2(im, "sub", msq, m2, NULL, &v)) || (s = emit_tmp(im, "sqrt", v, NULL, &sd)) ||
        (s = f32_const(im, 1e-9, &eps)) || (s = emit_tmp2(im, "add", sd, eps, NULL, &den)) ||
        (s = emit_tmp2(im, "sub", x->name, m, NULL, &d)))
        return s;
    return emit1(im, "div", 2, (const char *[]){d, den}, out_name(im, 0), NULL);
}
