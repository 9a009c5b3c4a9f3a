/* The stateful sequence operators of opset 27, for recurrent decoding:
 * CausalConvWithState as its function body (the past state or zeros in
 * front of the input, a depthwise conv, SiLU, the last k - 1 positions as
 * the new state) and LinearAttention as clgraph's linear_attention. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <string.h>

/* input [B, C, L] with past_state [B, C, k - 1] (absent: zeros) in front,
 * into *out; x itself where k is 1. */
static cg_status padded_input(onnx_imp *im, onnx_val *x, onnx_val *past, int64_t k, const char **out) {
    cg_status s;
    *out = x->name;
    if (k == 1) return CG_OK;
    const char *front = past ? past->name : NULL;
    if (!front) {
        const int64_t d[3] = {x->desc.dims[0], x->desc.dims[1], k - 1};
        char l[512], a[600];
        float zero = 0.0f;
        const char *z;
        if (!onnx_named_dims(im, 3, d, l, sizeof l))
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "the state's shape has a dim clgraph cannot name");
        snprintf(a, sizeof a, "shape: %s", l);
        if ((s = const_of(im, CG_F32, 0, NULL, &zero, &z)) || (s = emit_tmp(im, "expand", z, a, &front))) return s;
    }
    const char *in[2] = {front, x->name}, *o[1] = {NULL};
    if ((s = onnx_emit(im, "concat", 2, in, 1, o, "axis: 2"))) return s;
    *out = o[0];
    return CG_OK;
}

/* CausalConvWithState (27): output = act(conv(cat(state, x), w, b; group
 * C)), act none or SiLU ("silu", "swish"); present_state the last k - 1
 * positions of cat(state, x). */
cg_status cg_onnx_map_causal_conv(onnx_imp *im) {
    static const char *const known[] = {"activation", NULL};
    onnx_val *x, *w, *b = onnx_in(im, 2), *past = onnx_in(im, 3);
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &x)) || (s = need_in(im, 1, &w))) return s;
    const Onnx__AttributeProto *act = onnx_attr_typed(im, "activation", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    const int silu =
        act && act->has_s &&
        ((act->s.len == 4 && !memcmp(act->s.data, "silu", 4)) || (act->s.len == 5 && !memcmp(act->s.data, "swish", 5)));
    if (act && act->has_s && !silu && !(act->s.len == 4 && !memcmp(act->s.data, "none", 4)))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "activation '%.*s' (none, silu or swish)",
                         (int)(act->s.len > 20 ? 20 : act->s.len), (const char *)act->s.data);
    const int64_t c = x->desc.dims[1], k = w->desc.ndim == 3 ? w->desc.dims[2] : -1;
    if (x->desc.ndim != 3 || c < 0 || k < 1 || w->desc.dims[0] != c || w->desc.dims[1] != 1 ||
        (past && (past->desc.ndim != 3 || past->desc.dims[2] != k - 1)))
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "CausalConvWithState needs input [B, C, L] with C known, weight [C, 1, k] and past_state "
                         "[B, C, k - 1] ('%s', '%s')",
                         x->name, w->name);
    const char *xp, *y = NULL;
    char a[64];
    snprintf(a, sizeof a, "group: %lld", (long long)c);
    if ((s = padded_input(im, x, past, k, &xp))) return s;
    const char *in[3] = {xp, w->name, b ? b->name : NULL};
    const char *o[1] = {silu ? NULL : out_name(im, 0)};
    if ((s = onnx_emit(im, "conv", b ? 3 : 2, in, 1, o, a))) return s;
    if (silu) {
        const char *sg = NULL;
        y = o[0];
        if ((s = emit_tmp(im, "sigmoid", y, NULL, &sg))) return s;
        const char *m[2] = {y, sg};
        if ((s = emit1(im, "mul", 2, m, out_name(im, 0), NULL))) return s;
    }
    if (!out_name(im, 1)) return CG_OK;
    /* k == 1: an empty state, the slice from past the end */
    snprintf(a, sizeof a, "axis: 2, start: %lld", k == 1 ? (long long)INT64_MAX : (long long)-(k - 1));
    const char *si[1] = {xp};
    return emit1(im, "slice", 1, si, out_name(im, 1), a);
}

/* The rule's name and the inputs it reads: bit 0 decay, bit 1 beta. */
static int la_rule_of(onnx_imp *im, const char **name) {
    static const char *const names[] = {"linear", "gated", "delta", "gated_delta"};
    const Onnx__AttributeProto *r = onnx_attr_typed(im, "update_rule", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    *name = r && r->has_s ? (const char *)r->s.data : "gated_delta";
    const size_t len = r && r->has_s ? r->s.len : strlen("gated_delta");
    for (int i = 0; i < 4; i++)
        if (len == strlen(names[i]) && !memcmp(*name, names[i], len)) return *name = names[i], i;
    return -1;
}

/* LinearAttention (27): linear_attention, a zero state where past_state is
 * absent (expanded to [B, kv heads, dk, dv]); chunk_size is a hint. */
cg_status cg_onnx_map_linear_attention(onnx_imp *im) {
    static const char *const known[] = {"chunk_size", "kv_num_heads", "q_num_heads", "scale", "update_rule", NULL};
    onnx_val *q, *k, *v, *past = onnx_in(im, 3), *decay = onnx_in(im, 4), *beta = onnx_in(im, 5);
    const char *rn;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &q)) || (s = need_in(im, 1, &k)) ||
        (s = need_in(im, 2, &v)))
        return s;
    const int rule = la_rule_of(im, &rn);
    const int64_t hq = onnx_attr_int(im, "q_num_heads", 0), hkv = onnx_attr_int(im, "kv_num_heads", 0);
    if (rule < 0) return onnx_fail(im, CG_ERR_UNSUPPORTED, "update_rule is not linear, gated, delta or gated_delta");
    if (!!(rule & 1) != !!decay || !!(rule & 2) != !!beta)
        return onnx_fail(im, CG_ERR_FORMAT, "update_rule '%s' %s decay and %s beta", rn,
                         rule & 1 ? "needs" : "takes no", rule & 2 ? "needs" : "takes no");
    if (hq <= 0 || hkv <= 0 || q->desc.ndim != 3 || v->desc.ndim != 3 || q->desc.dims[2] < 0 || v->desc.dims[2] < 0 ||
        q->desc.dims[2] % hq || v->desc.dims[2] % hkv)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "LinearAttention needs q_num_heads, kv_num_heads and 3-D query and value with known "
                         "last dims divisible by them");
    const char *st = past ? past->name : NULL;
    if (!st) {
        const int64_t d[4] = {q->desc.dims[0], hkv, q->desc.dims[2] / hq, v->desc.dims[2] / hkv};
        char l[512], a[600];
        float zero = 0.0f;
        const char *z;
        if (!onnx_named_dims(im, 4, d, l, sizeof l))
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "the state's shape has a dim clgraph cannot name");
        snprintf(a, sizeof a, "shape: %s", l);
        if ((s = const_of(im, CG_F32, 0, NULL, &zero, &z)) || (s = emit_tmp(im, "expand", z, a, &st))) return s;
    }
    const char *in[6] = {q->name, k->name, v->name, st}, *outs[2] = {out_name(im, 0), out_name(im, 1)};
    int n = 4;
    if (decay) in[n++] = decay->name;
    if (beta) in[n++] = beta->name;
    char a[200];
    snprintf(a, sizeof a, "q_num_heads: %lld, kv_num_heads: %lld, scale: %.9g, update_rule: \"%s\"", (long long)hq,
             (long long)hkv, onnx_attr_float(im, "scale", 0.0), rn);
    return onnx_emit(im, "linear_attention", n, in, 2, outs, a);
}
