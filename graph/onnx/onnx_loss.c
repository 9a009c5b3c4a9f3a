/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (log_softmax over
 * the classes, then the same loss) as clgraph ops, as ONNX's reference
 * computes them: the negated log-probability of each target class
 * (gather_elements along axis 1), times the class weight, 0 where the
 * target is ignore_index; then none, sum, or mean (the weighted sum over
 * the weights' sum where there are weights or an ignore_index). */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <string.h>

/* The reduction attribute: 0 none, 1 sum, 2 mean (the default); -1 and
 * the node failed for another value. */
static int reduction(onnx_imp *im) {
    const Onnx__AttributeProto *r = onnx_attr_typed(im, "reduction", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (!r || !r->has_s) return 2;
    static const char *const names[3] = {"none", "sum", "mean"};
    for (int i = 0; i < 3; i++)
        if (r->s.len == strlen(names[i]) && !memcmp(r->s.data, names[i], r->s.len)) return i;
    onnx_fail(im, CG_ERR_UNSUPPORTED, "reduction '%.*s' (none, sum or mean)", (int)(r->s.len > 40 ? 40 : r->s.len),
              (const char *)r->s.data);
    return -1;
}

/* target as i64 with the ignored entries 0 (*t0), and where it is ignored
 * (*ign, NULL without ignore_index). */
static cg_status safe_target(onnx_imp *im, onnx_val *target, const char **t0, const char **ign) {
    const char *t = target->name, *ii = NULL, *zero = NULL;
    cg_status s;
    *ign = NULL;
    if (target->desc.dtype != CG_I64 && target->desc.dtype != CG_I32)
        return onnx_fail(im, CG_ERR_FORMAT, "the target must be int32 or int64");
    if (target->desc.dtype != CG_I64 && (s = emit_tmp(im, "cast", t, "to: \"i64\"", &t))) return s;
    *t0 = t;
    if (!onnx_attr(im, "ignore_index")) return CG_OK;
    const int64_t v = onnx_attr_int(im, "ignore_index", 0), z = 0;
    if ((s = const_of(im, CG_I64, 0, NULL, &v, &ii)) || (s = const_of(im, CG_I64, 0, NULL, &z, &zero)) ||
        (s = emit_tmp2(im, "equal", t, ii, NULL, ign)))
        return s;
    const char *in[3] = {*ign, zero, t};
    *t0 = NULL;
    return onnx_emit(im, "where", 3, in, 1, t0, NULL);
}

/* Each target's class weight (0 where ignored), or NULL when every one
 * is 1. */
static cg_status target_weights(onnx_imp *im, onnx_val *target, onnx_val *weight, const char *t0, const char *ign,
                                const char **wt) {
    const char *zero = NULL, *one = NULL, *flat = NULL, *g = NULL;
    const float fz = 0, f1 = 1;
    cg_status s;
    *wt = NULL;
    if (!weight && !ign) return CG_OK;
    if ((s = const_of(im, CG_F32, 0, NULL, &fz, &zero))) return s;
    if (weight) {
        if (weight->desc.dtype != CG_F32 || weight->desc.ndim != 1)
            return onnx_fail(im, CG_ERR_FORMAT, "the weight must be a float vector [C]");
        if ((s = emit_tmp(im, "cast", t0, "to: \"i32\"", &flat)) ||
            (s = emit_tmp(im, "reshape", flat, "shape: [-1]", &flat)) ||
            (s = emit_tmp2(im, "gather_rows", weight->name, flat, NULL, &g)) ||
            (s = onnx_emit_reshape(im, onnx_val_get(im, g), target->desc.ndim, target->desc.dims, wt)))
            return s;
        if (!ign) return CG_OK;
    } else if ((s = const_of(im, CG_F32, 0, NULL, &f1, &one))) {
        return s;
    }
    const char *in[3] = {ign, zero, weight ? *wt : one};
    *wt = NULL;
    return onnx_emit(im, "where", 3, in, 1, wt, NULL);
}

/* The loss from log-probabilities logp [N, C, d...] into output 0. */
static cg_status nll(onnx_imp *im, const char *logp, onnx_val *target, onnx_val *weight) {
    const int red = reduction(im);
    if (red < 0) return CG_ERR_UNSUPPORTED;
    const onnx_val *lp = onnx_val_get(im, logp);
    const int r = target->desc.ndim;
    if (lp->desc.ndim < 2 || r != lp->desc.ndim - 1)
        return onnx_fail(im, CG_ERR_FORMAT, "the input must be [N, C, d...] and the target [N, d...]");
    const char *t0, *ign, *wt, *idx = NULL, *g = NULL, *nl = NULL, *loss = NULL;
    int64_t d[CG_MAX_DIMS];
    for (int i = 0, k = 0; i <= r; i++) d[i] = i == 1 ? 1 : target->desc.dims[k++];
    cg_status s;
    if ((s = safe_target(im, target, &t0, &ign)) || (s = target_weights(im, target, weight, t0, ign, &wt)) ||
        (s = onnx_emit_reshape(im, onnx_val_get(im, t0), r + 1, d, &idx)) ||
        (s = emit_tmp2(im, "gather_elements", logp, idx, "axis: 1", &g)) ||
        (s = onnx_emit_reshape(im, onnx_val_get(im, g), r, target->desc.dims, &nl)) ||
        (s = emit_tmp(im, "neg", nl, NULL, &nl)))
        return s;
    const char *y = out_name(im, 0), *sum = NULL, *wsum = NULL;
    if (red == 0 && wt) return emit1(im, "mul", 2, (const char *[]){nl, wt}, y, NULL);
    if (red == 0) return emit_reshape(im, onnx_val_get(im, nl), r, target->desc.dims, y);
    loss = nl;
    if (wt && (s = emit_tmp2(im, "mul", nl, wt, NULL, &loss))) return s;
    if (red == 1 || !wt) return emit1(im, red == 1 ? "reduce_sum" : "reduce_mean", 1, &loss, y, "axes: []");
    if ((s = emit_tmp(im, "reduce_sum", loss, "axes: []", &sum)) ||
        (s = emit_tmp(im, "reduce_sum", wt, "axes: []", &wsum)))
        return s;
    return emit1(im, "div", 2, (const char *[]){sum, wsum}, y, NULL);
}

static const char *const loss_attrs[] = {"reduction", "ignore_index", NULL};

cg_status cg_onnx_map_nll_loss(onnx_imp *im) {
    onnx_val *x, *t, *w = onnx_in(im, 2);
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &t)) || (w && (s = need_in(im, 2, &w))) ||
        (s = onnx_check_attrs(im, loss_attrs)))
        return s;
    return nll(im, x->name, t, w);
}

cg_status cg_onnx_map_softmax_cross_entropy(onnx_imp *im) {
    onnx_val *x, *t, *w = onnx_in(im, 2);
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &t)) || (w && (s = need_in(im, 2, &w))) ||
        (s = onnx_check_attrs(im, loss_attrs)))
        return s;
    const char *logp = out_name(im, 1);
    if ((s = onnx_emit(im, "log_softmax", 1, (const char *[]){x->name}, 1, &logp, "axis: 1"))) return s;
    return nll(im, logp, t, w);
}
