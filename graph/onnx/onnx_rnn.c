/* ONNX's recurrent layers: GRU and LSTM onto clgraph's gru / lstm (or
 * their cells for one step), and what those cannot take (RNN, GRU with
 * linear_before_reset 0, LSTM with peepholes) unrolled over the known
 * sequence length. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "shape.h"

/* Whether attribute `name` (of type `type`: STRING or STRINGS) is absent
 * or has every value one of the two given (repeated per direction). */
static int strings_are(onnx_imp *im, const char *name, Onnx__AttributeProto__AttributeType type, const char *a,
                       const char *b) {
    const Onnx__AttributeProto *at = onnx_attr_typed(im, name, type);
    if (!at) return 1;
    if (at->has_s)
        return at->s.len && ((strlen(a) == at->s.len && !memcmp(at->s.data, a, at->s.len)) ||
                             (b && strlen(b) == at->s.len && !memcmp(at->s.data, b, at->s.len)));
    for (size_t i = 0; i < at->n_strings; i++) {
        const ProtobufCBinaryData *v = &at->strings[i];
        const char *want = (i % 3 == 0) ? a : b;
        if (!want || strlen(want) != v->len || memcmp(v->data, want, v->len)) return 0;
    }
    return 1;
}

/* Rows of an ONNX gate matrix [G H, K] in PyTorch's gate order, as a
 * constant: block g of the result is block from[g] of src (LSTM: ONNX's
 * i, o, f, c to PyTorch's i, f, g, o; GRU: z, r, h to r, z, n). */
static cg_status torch_gates(onnx_imp *im, const float *src, int ng, const int *from, int64_t h, int64_t k,
                             const char **name) {
    int64_t d[2] = {ng * h, k};
    float *buf = malloc((size_t)(ng * h * k) * sizeof *buf + 1);
    if (!buf) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int g = 0; g < ng; g++) memcpy(buf + g * h * k, src + from[g] * h * k, (size_t)(h * k) * sizeof *buf);
    cg_status s = const_of(im, CG_F32, k == 1 ? 1 : 2, d, buf, name);
    free(buf);
    return s;
}

typedef struct rnn_parts rnn_parts;
static cg_status unrolled(onnx_imp *im, const rnn_parts *p);

/* What both mappings of RNN, GRU and LSTM read: x, the weights W, R and B
 * (known at import, f32, sized for hidden_size; B optional), the
 * direction and layout. Activations must be the defaults, no clip, no
 * input_forget. */
struct rnn_parts {
    const char *op; /* "RNN", "GRU" or "LSTM" */
    onnx_val *x;
    const cg_tensor *w, *r, *b;
    int64_t h, in_sz;
    int ng, nd, rev, bidir, layout; /* ng gates; nd directions */
};

static cg_status rnn_read(onnx_imp *im, rnn_parts *p) {
    static const char *const known[] = {"hidden_size",  "direction",           "layout", "activations", "clip",
                                        "input_forget", "linear_before_reset", NULL};
    const char *op = p->op = im->node->op_type;
    const int lstm = !strcmp(op, "LSTM"), rnn = !strcmp(op, "RNN");
    cg_status s;
    p->b = NULL;
    if ((s = need_in(im, 0, &p->x)) || (s = onnx_check_attrs(im, known)) ||
        (s = onnx_need_const(im, onnx_in(im, 1), "input 1 (W)", &p->w)) ||
        (s = onnx_need_const(im, onnx_in(im, 2), "input 2 (R)", &p->r)) ||
        (onnx_in(im, 3) && (s = onnx_need_const(im, onnx_in(im, 3), "input 3 (B)", &p->b))))
        return s;
    if (!strings_are(im, "activations", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS, rnn ? "Tanh" : "Sigmoid",
                     "Tanh") ||
        onnx_attr(im, "clip") || onnx_attr_int(im, "input_forget", 0))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "%s with activations other than the defaults, clip or input_forget",
                         op);
    p->rev = strings_are(im, "direction", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, "reverse", NULL) &&
             onnx_attr(im, "direction");
    p->bidir = !p->rev && !strings_are(im, "direction", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, "forward", NULL);
    if (p->bidir && !strings_are(im, "direction", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, "bidirectional", NULL))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "%s direction other than forward, reverse or bidirectional", op);
    p->ng = lstm ? 4 : rnn ? 1 : 3;
    p->nd = p->bidir ? 2 : 1;
    p->layout = (int)onnx_attr_int(im, "layout", 0);
    p->h = onnx_attr_int(im, "hidden_size", 0);
    const cg_tensor *w = p->w, *r = p->r, *b = p->b;
    const onnx_val *x = p->x;
    if (x->desc.ndim != 3 || cg_tensor_dtype(w) != CG_F32 || cg_tensor_dtype(r) != CG_F32 ||
        (b && cg_tensor_dtype(b) != CG_F32))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "%s of other than f32 [S, B, I] data and weights", op);
    const int64_t h = p->h, n = p->nd * p->ng, in_sz = p->in_sz = x->desc.dims[2];
    if (h < 1 || in_sz < 0 || cg_tensor_numel(w) != n * h * in_sz || cg_tensor_numel(r) != n * h * h ||
        (b && cg_tensor_numel(b) != 2 * n * h))
        return onnx_fail(im, CG_ERR_FORMAT, "W, R or B does not match hidden_size %lld and the input", (long long)h);
    return CG_OK;
}

/* Every sequence of a batch whole: lengths [B] of S where B or S are
 * symbolic, made when the plan binds them (dim_values, cast, expand). */
static cg_status full_lengths(onnx_imp *im, int64_t bsz, int64_t seq, const char **out) {
    char vs[200], bs[200], a[300];
    if (!onnx_named_dims(im, 1, &seq, vs, sizeof vs) || !onnx_named_dims(im, 1, &bsz, bs, sizeof bs))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "dims too long to name");
    const char *outs[1] = {NULL}, *c = NULL;
    snprintf(a, sizeof a, "values: %s, scalar: 1", vs);
    cg_status s = onnx_emit(im, "dim_values", 0, NULL, 1, outs, a);
    if (!s) s = emit_tmp(im, "cast", outs[0], "to: \"i32\"", &c);
    snprintf(a, sizeof a, "shape: %s", bs);
    if (!s) s = emit_tmp(im, "expand", c, a, out);
    return s;
}

/* Whether a value is known at import to be all zeros: absent, an Expand
 * of zeros (v->zeros), or an f32 constant of zeros. */
static int known_zero(const onnx_val *v) {
    if (!v || v->zeros) return 1;
    if (!v->konst || cg_tensor_dtype(v->konst) != CG_F32) return 0;
    for (int64_t k = 0; k < cg_tensor_numel(v->konst); k++)
        if (((const float *)cg_tensor_data_const(v->konst))[k] != 0) return 0;
    return 1;
}

/* One forward step from given states (a decoder step: S = 1, initial_h
 * and for LSTM initial_c, which may be zeros): clgraph's gru_cell /
 * lstm_cell with the weights in PyTorch's gate order, x and the states
 * reshaped to [B, I] and [B, H], the outputs reshaped back. */
static cg_status cell_step(onnx_imp *im, const rnn_parts *p, const int *from) {
    const int lstm = p->ng == 4;
    const int64_t h = p->h, in_sz = p->in_sz, bsz = p->x->desc.dims[p->layout ? 0 : 1];
    float *zero = calloc((size_t)(p->ng * h), sizeof *zero);
    if (!zero) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    const float *wf = cg_tensor_data_const(p->w), *rf = cg_tensor_data_const(p->r);
    const float *bf = p->b ? cg_tensor_data_const(p->b) : NULL;
    const char *ins[7] = {NULL};
    int64_t dx[2] = {bsz, in_sz}, dh[2] = {bsz, h};
    cg_status s = onnx_emit_reshape(im, p->x, 2, dx, &ins[0]);
    if (!s) s = onnx_emit_reshape(im, onnx_in(im, 5), 2, dh, &ins[1]);
    int k = 2;
    if (!s && lstm) {
        if (!known_zero(onnx_in(im, 6))) s = onnx_emit_reshape(im, onnx_in(im, 6), 2, dh, &ins[k]);
        else { /* c0 zeros: h's dims lend theirs */ float z = 0;
            const char *zc;
            if (!(s = const_of(im, CG_F32, 0, NULL, &z, &zc)))
                s = emit_tmp2(im, "expand", zc, ins[1], "shape: []", &ins[k]);
        }
        k++;
    }
    if (!s) s = torch_gates(im, wf, p->ng, from, h, in_sz, &ins[k]);
    if (!s) s = torch_gates(im, rf, p->ng, from, h, h, &ins[k + 1]);
    if (!s) s = torch_gates(im, bf ? bf : zero, p->ng, from, h, 1, &ins[k + 2]);
    if (!s) s = torch_gates(im, bf ? bf + p->ng * h : zero, p->ng, from, h, 1, &ins[k + 3]);
    free(zero);
    const char *outs[2] = {NULL, NULL};
    if (s || (s = onnx_emit(im, lstm ? "lstm_cell" : "gru_cell", k + 4, ins, lstm ? 2 : 1, outs, NULL))) return s;
    /* Y: [1, 1, B, H] (layout 0) or [B, 1, 1, H]; Y_h, Y_c: [1, B, H] or [B, 1, H] */
    for (int o = 0; o < (lstm ? 3 : 2) && !s; o++) {
        if (!out_name(im, o)) continue;
        int64_t y0[4] = {1, 1, bsz, h}, y1[4] = {bsz, 1, 1, h}, s0[3] = {1, bsz, h}, s1[3] = {bsz, 1, h};
        const int64_t *d = o ? (p->layout ? s1 : s0) : (p->layout ? y1 : y0);
        s = emit_reshape(im, onnx_val_get(im, outs[o == 2]), o ? 3 : 4, d, out_name(im, o));
    }
    return s;
}

/* The initial states of a layer op from initial_h (and initial_c for the
 * LSTM), at least one not known to be zeros: ONNX's [D, B, H] (layout 1:
 * [B, D, H], transposed) is clgraph's h0 / c0 of one layer, its directions
 * in the same order as the weights; a state known to be zeros is made as
 * zeros of the other's shape. Sets *n (1 or 2) names in out. */
static cg_status initial_states(onnx_imp *im, const rnn_parts *p, const char **out, int *n) {
    const int lstm = p->ng == 4;
    onnx_val *init[2] = {onnx_in(im, 5), lstm ? onnx_in(im, 6) : NULL};
    static const char *const what[2] = {"initial_h", "initial_c"};
    cg_status s = CG_OK;
    *n = lstm ? 2 : 1;
    for (int k = 0; k < *n && !s; k++) {
        out[k] = NULL;
        if (known_zero(init[k])) continue;
        if (init[k]->desc.dtype != CG_F32 || init[k]->desc.ndim != 3)
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "input %d (%s) must be float32 [D, B, H]", 5 + k, what[k]);
        out[k] = init[k]->name;
        if (p->layout) s = emit_tmp(im, "transpose", out[k], "perm: [1, 0, 2]", &out[k]);
    }
    for (int k = 0; k < *n && !s; k++) { /* zeros of the other state's shape */
        if (out[k]) continue;
        const float z = 0;
        const char *zc;
        if (!(s = const_of(im, CG_F32, 0, NULL, &z, &zc)))
            s = emit_tmp2(im, "expand", zc, out[1 - k], "shape: []", &out[k]);
    }
    return s;
}

/* Final states [D, B, H] of rows whose sequence_lens (lens, i32 [B]) is 0
 * made zeros, as ONNX Runtime gives them: clgraph's layers, like the
 * unrolled form, keep such a row's initial state. */
static cg_status zero_empty_rows(onnx_imp *im, const char *lens, int64_t bsz, const char **state) {
    const int32_t z32 = 0;
    const float zf = 0;
    const int64_t d3[3] = {1, bsz, 1};
    const char *zi, *zc, *m, *m3 = NULL;
    cg_status s;
    if ((s = const_of(im, CG_I32, 0, NULL, &z32, &zi)) || (s = const_of(im, CG_F32, 0, NULL, &zf, &zc)) ||
        (s = emit_tmp2(im, "less", zi, lens, NULL, &m)) || (s = onnx_emit_reshape(im, onnx_val_get(im, m), 3, d3, &m3)))
        return s;
    const char *w[3] = {m3, *state, zc}, *o[1] = {NULL};
    if ((s = onnx_emit(im, "where", 3, w, 1, o, NULL))) return s;
    *state = o[0];
    return CG_OK;
}

/* LSTM and GRU: clgraph's lstm / gru (PyTorch's nn.LSTM / nn.GRU, batch
 * first) with the weights reordered at import (they must be known), for
 * forward and bidirectional layers with ONNX's default activations, no
 * clip and no peepholes; a GRU only with linear_before_reset 1 (PyTorch's
 * cell, which its exports declare). Initial states not known to be zeros
 * become the op's h0 / c0 (attribute initial). sequence_lens becomes the
 * lengths (else every row is S long, made at run time where B or S are
 * symbolic). */
cg_status cg_onnx_map_rnn_layer(onnx_imp *im) {
    static const int lstm_from[4] = {0, 2, 3, 1}, gru_from[3] = {1, 0, 2};
    const int lstm = !strcmp(im->node->op_type, "LSTM");
    const int *from = lstm ? lstm_from : gru_from;
    rnn_parts p;
    cg_status s = rnn_read(im, &p);
    if (s) return s;
    const char *op = p.op;
    if (p.rev) return unrolled(im, &p); /* clgraph's layers run forward: a reverse one is unrolled */
    if (!lstm && onnx_attr_int(im, "linear_before_reset", 0) != 1) return unrolled(im, &p);
    /* one step from a given h (a decoder step): the cell op */
    if (p.nd == 1 && p.x->desc.dims[p.layout ? 1 : 0] == 1 && !onnx_in(im, 4) && !known_zero(onnx_in(im, 5)) &&
        (!lstm || known_zero(onnx_in(im, 7))))
        return cell_step(im, &p, from);
    /* clgraph's gru and lstm have no peepholes */
    if (lstm && !known_zero(onnx_in(im, 7))) return unrolled(im, &p);
    const int initial = !known_zero(onnx_in(im, 5)) || (lstm && !known_zero(onnx_in(im, 6)));
    onnx_val *x = p.x;
    const cg_tensor *w = p.w, *r = p.r, *b = p.b;
    const int64_t h = p.h, layout = p.layout, in_sz = p.in_sz;
    const int ng = p.ng, nd = p.nd, bidir = p.bidir;
    /* x as [B, S, I] */
    const char *xb = x->name, *lens = NULL;
    if (layout == 0 && (s = emit_tmp(im, "transpose", xb, "perm: [1, 0, 2]", &xb))) return s;
    const int64_t bsz = x->desc.dims[layout ? 0 : 1], seq = x->desc.dims[layout ? 1 : 0];
    onnx_val *sl = onnx_in(im, 4);
    if (sl) {
        if ((s = emit_tmp(im, "cast", sl->name, "to: \"i32\"", &lens))) return s;
    } else {
        if (bsz < 0 || seq < 0) {
            if ((s = full_lengths(im, bsz, seq, &lens))) return s;
        } else if (seq > INT32_MAX) {
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "%s over a sequence of more than 2^31 - 1 steps", op);
        }
    }
    if (!lens) {
        int32_t *l = malloc((size_t)(bsz ? bsz : 1) * sizeof *l);
        if (!l) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        for (int64_t i = 0; i < bsz; i++) l[i] = (int32_t)seq;
        s = const_of(im, CG_I32, 1, &bsz, l, &lens);
        free(l);
        if (s) return s;
    }
    const char *ins[2 + 8 + 2];
    ins[0] = xb, ins[1] = lens;
    int n_states = 0;
    if (initial && (s = initial_states(im, &p, ins + 2 + 4 * nd, &n_states))) return s;
    float *zero = calloc((size_t)(ng * h), sizeof *zero);
    if (!zero) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    const float *wf = cg_tensor_data_const(w), *rf = cg_tensor_data_const(r), *bf = b ? cg_tensor_data_const(b) : NULL;
    for (int d = 0; d < nd && !s; d++) {
        const char **q = ins + 2 + 4 * d;
        if (!(s = torch_gates(im, wf + d * ng * h * in_sz, ng, from, h, in_sz, &q[0])) &&
            !(s = torch_gates(im, rf + d * ng * h * h, ng, from, h, h, &q[1])) &&
            !(s = torch_gates(im, bf ? bf + d * 2 * ng * h : zero, ng, from, h, 1, &q[2])))
            s = torch_gates(im, bf ? bf + d * 2 * ng * h + ng * h : zero, ng, from, h, 1, &q[3]);
    }
    free(zero);
    if (s) return s;
    char a[120];
    snprintf(a, sizeof a, "hidden: %lld, layers: 1, bidirectional: %d%s", (long long)h, bidir,
             initial ? ", initial: 1" : "");
    const char *outs[3] = {NULL, NULL, NULL};
    if ((s = onnx_emit(im, lstm ? "lstm" : "gru", 2 + 4 * nd + n_states, ins, lstm ? 3 : 2, outs, a))) return s;
    /* Y: [B, S, D*H] -> [B, S, D, H] (layout 1) -> [S, D, B, H] (layout 0) */
    if (out_name(im, 0)) {
        int64_t d4[4] = {bsz, seq, nd, h};
        const char *y = layout ? out_name(im, 0) : NULL;
        if ((s = onnx_emit_reshape(im, onnx_val_get(im, outs[0]), 4, d4, &y))) return s;
        if (!layout) {
            const char *tin[1] = {y};
            if ((s = emit1(im, "transpose", 1, tin, out_name(im, 0), "perm: [1, 2, 0, 3]"))) return s;
        }
    }
    /* Y_h, Y_c: [D, B, H] (layout 0) or [B, D, H] (layout 1) */
    for (int k = 1; k <= (lstm ? 2 : 1); k++) {
        if (!out_name(im, k)) continue;
        if (sl && initial && (s = zero_empty_rows(im, lens, bsz, &outs[k]))) return s;
        const char *tin[1] = {outs[k]};
        if (layout) s = emit1(im, "transpose", 1, tin, out_name(im, k), "perm: [1, 0, 2]");
        else {
            int64_t d3[3] = {nd, bsz, h};
            s = emit_reshape(im, onnx_val_get(im, outs[k]), 3, d3, out_name(im, k));
        }
        if (s) return s;
    }
    return CG_OK;
}

/* One unrolled step of direction d (gate constants wn/rn/bn, ng of them):
 * the new h from x_t [B, I] and h (NULL: zeros, so every R h term is
 * dropped). RNN: tanh(W x + b + R h). GRU (gates z, r, n; bn holds Wb +
 * Rb): z = sigmoid(Wz x + bz + Rz h), r likewise, n = tanh(Wn x + bn +
 * Rn (r h)) (linear_before_reset 0) or tanh(Wn x + Wbn + r (Rn h + Rbn))
 * (1: then rbn holds Rbn and bn only Wbn), h' = n + z (h - n). */
static cg_status unrolled_step(onnx_imp *im, int gru, int lbr, const char *const *wn, const char *const *rn,
                               const char *const *bn, const char *rbn, const char *xt, const char *hp,
                               const char **out) {
    cg_status s;
    const char *g[3], *t1, *t2;
    for (int k = 0; k < (gru ? 3 : 1); k++) {
        const char *lin[3] = {xt, wn[k], bn[k]}, *lo[1] = {NULL};
        if ((s = onnx_emit(im, "linear", 3, lin, 1, lo, NULL))) return s;
        g[k] = lo[0];
        if (hp && (k < 2 || !gru)) {
            if ((s = emit_tmp2(im, "linear", hp, rn[k], NULL, &t1)) ||
                (s = emit_tmp2(im, "add", g[k], t1, NULL, &g[k])))
                return s;
        }
        if (gru && k < 2 && (s = emit_tmp(im, "sigmoid", g[k], NULL, &g[k]))) return s;
    }
    if (!gru) return emit_tmp(im, "tanh", g[0], NULL, out);
    if (hp) { /* the n gate's h term */
        if (lbr) {
            const char *lin[3] = {hp, rn[2], rbn}, *lo[1] = {NULL};
            if ((s = onnx_emit(im, "linear", 3, lin, 1, lo, NULL)) ||
                (s = emit_tmp2(im, "mul", g[1], lo[0], NULL, &t1)))
                return s;
        } else if ((s = emit_tmp2(im, "mul", g[1], hp, NULL, &t2)) ||
                   (s = emit_tmp2(im, "linear", t2, rn[2], NULL, &t1))) {
            return s;
        }
        if ((s = emit_tmp2(im, "add", g[2], t1, NULL, &g[2]))) return s;
    } else if (lbr) { /* r (R 0 + Rbn) = r Rbn */
        if ((s = emit_tmp2(im, "mul", g[1], rbn, NULL, &t1)) || (s = emit_tmp2(im, "add", g[2], t1, NULL, &g[2])))
            return s;
    }
    const char *n;
    if ((s = emit_tmp(im, "tanh", g[2], NULL, &n))) return s;
    if (hp) { /* n + z (h - n) */
        if ((s = emit_tmp2(im, "sub", hp, n, NULL, &t1)) || (s = emit_tmp2(im, "mul", g[0], t1, NULL, &t2))) return s;
        return emit_tmp2(im, "add", n, t2, NULL, out);
    }
    if ((s = emit_tmp2(im, "mul", g[0], n, NULL, &t1))) return s; /* n - z n */
    return emit_tmp2(im, "sub", n, t1, NULL, out);
}

/* One unrolled LSTM step (ONNX's gate order i, o, f, c in wn/rn/bn; pn:
 * the peepholes i, o, f or NULL): from x_t, h and c (NULL: zeros, their
 * terms dropped), C = f c + i tanh(a_c), H = o tanh(C), with i, f seeing c
 * and o seeing C through the peepholes. */
static cg_status lstm_step(onnx_imp *im, const char *const *wn, const char *const *rn, const char *const *bn,
                           const char *const *pn, const char *xt, const char *hp, const char *cp, const char **h_out,
                           const char **c_out) {
    cg_status s;
    const char *g[4], *t1, *t2;
    for (int k = 0; k < 4; k++) {
        const char *lin[3] = {xt, wn[k], bn[k]}, *lo[1] = {NULL};
        if ((s = onnx_emit(im, "linear", 3, lin, 1, lo, NULL))) return s;
        g[k] = lo[0];
        if (hp &&
            ((s = emit_tmp2(im, "linear", hp, rn[k], NULL, &t1)) || (s = emit_tmp2(im, "add", g[k], t1, NULL, &g[k]))))
            return s;
    }
    static const int peep[2] = {0, 2}; /* i and f see the old c: P's rows 0 and 2 */
    for (int j = 0; j < 2; j++) {
        const int k = peep[j];
        if (pn && cp &&
            ((s = emit_tmp2(im, "mul", pn[k], cp, NULL, &t1)) || (s = emit_tmp2(im, "add", g[k], t1, NULL, &g[k]))))
            return s;
        if ((s = emit_tmp(im, "sigmoid", g[k], NULL, &g[k]))) return s;
    }
    if ((s = emit_tmp(im, "tanh", g[3], NULL, &g[3])) || (s = emit_tmp2(im, "mul", g[0], g[3], NULL, c_out))) return s;
    if (cp && ((s = emit_tmp2(im, "mul", g[2], cp, NULL, &t1)) || (s = emit_tmp2(im, "add", t1, *c_out, NULL, c_out))))
        return s;
    if (pn &&
        ((s = emit_tmp2(im, "mul", pn[1], *c_out, NULL, &t1)) || (s = emit_tmp2(im, "add", g[1], t1, NULL, &g[1]))))
        return s;
    if ((s = emit_tmp(im, "sigmoid", g[1], NULL, &g[1])) || (s = emit_tmp(im, "tanh", *c_out, NULL, &t2))) return s;
    return emit_tmp2(im, "mul", g[1], t2, NULL, h_out);
}

/* Y [S, D, B, H] (layout 1: [B, S, D, H]) from hs (step t of direction d
 * at t * nd + d): each h as [1, 1, B, H], concatenated over D then S. */
static cg_status emit_y(onnx_imp *im, const char *const *hs, int64_t seq, int nd, int64_t bsz, int64_t h, int layout) {
    const char *yname = out_name(im, 0);
    cg_status s = CG_OK;
    if (!yname) return CG_OK;
    const char **rows = calloc((size_t)seq, sizeof *rows);
    if (!rows) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    int64_t d4[4] = {1, 1, bsz, h};
    for (int64_t t = 0; t < seq && !s; t++) {
        const char *parts[2];
        for (int d = 0; d < nd && !s; d++) {
            parts[d] = NULL;
            s = onnx_emit_reshape(im, onnx_val_get(im, hs[t * nd + d]), 4, d4, &parts[d]);
        }
        if (!s && nd == 2) {
            const char *o[1] = {NULL};
            s = onnx_emit(im, "concat", 2, parts, 1, o, "axis: 1");
            parts[0] = o[0];
        }
        rows[t] = parts[0];
    }
    const char *o[1] = {layout ? NULL : yname};
    if (!s) s = onnx_emit(im, "concat", (int)seq, rows, 1, o, "axis: 0");
    if (!s && layout) {
        const char *tin[1] = {o[0]};
        s = emit1(im, "transpose", 1, tin, yname, "perm: [2, 0, 1, 3]");
    }
    free(rows);
    return s;
}

/* Y_h and Y_c [D, B, H] (layout 1: [B, D, H]) from each direction's last
 * h and c. */
static cg_status emit_last(onnx_imp *im, const char *const *last, const char *const *lastc, int lstm, int nd,
                           int64_t bsz, int64_t h, int layout) {
    cg_status s = CG_OK;
    for (int o = 1; o <= (lstm ? 2 : 1) && !s; o++) {
        const char *name = out_name(im, o), *parts[2];
        if (!name) continue;
        int64_t d3[3] = {1, bsz, h};
        for (int d = 0; d < nd && !s; d++) {
            parts[d] = NULL;
            s = onnx_emit_reshape(im, onnx_val_get(im, o == 1 ? last[d] : lastc[d]), 3, d3, &parts[d]);
        }
        const char *oo[1] = {layout ? NULL : name};
        if (!s) s = onnx_emit(im, "concat", nd, parts, 1, oo, "axis: 0");
        if (!s && layout) {
            const char *tin[1] = {oo[0]};
            s = emit1(im, "transpose", 1, tin, name, "perm: [1, 0, 2]");
        }
    }
    return s;
}

/* With sequence_lens: rows with t >= their length keep their state (*hn,
 * *cn become where(t < len, new, old)) and get 0 in Y (*yt). */
static cg_status mask_step(onnx_imp *im, const onnx_val *lens, int64_t t, int64_t bsz, const char *zero, int lstm,
                           const char *hcur, const char *ccur, const char **hn, const char **cn, const char **yt) {
    const char *tc, *m, *m2 = NULL;
    const int64_t t64 = t;
    const int32_t t32 = (int32_t)t;
    int64_t d2m[2] = {bsz, 1};
    cg_status s;
    if ((s = const_of(im, (cg_dtype)lens->desc.dtype, 0, NULL, lens->desc.dtype == CG_I64 ? (const void *)&t64 : &t32,
                      &tc)) ||
        (s = emit_tmp2(im, "less", tc, lens->name, NULL, &m)) ||
        (s = onnx_emit_reshape(im, onnx_val_get(im, m), 2, d2m, &m2)))
        return s;
    const char *w1[3] = {m2, *hn, zero}, *o1[1] = {NULL};
    if ((s = onnx_emit(im, "where", 3, w1, 1, o1, NULL))) return s;
    *yt = o1[0];
    const char *w2[3] = {m2, *hn, hcur ? hcur : zero}, *o2[1] = {NULL};
    if ((s = onnx_emit(im, "where", 3, w2, 1, o2, NULL))) return s;
    *hn = o2[0];
    if (lstm) {
        const char *w3[3] = {m2, *cn, ccur ? ccur : zero}, *o3[1] = {NULL};
        if ((s = onnx_emit(im, "where", 3, w3, 1, o3, NULL))) return s;
        *cn = o3[0];
    }
    return CG_OK;
}

/* RNN (the plain cell), GRU that clgraph's gru does not take
 * (linear_before_reset 0, ONNX's default) and LSTM with peepholes:
 * unrolled over the concrete sequence length, per step and direction a
 * slice and the cell (unrolled_step, lstm_step); weights known at import,
 * default activations, no clip; initial states may be run-time values;
 * sequence_lens (forward only) masks each step: rows past their length
 * keep their state and give zeros in Y. */
static cg_status unrolled(onnx_imp *im, const rnn_parts *p) {
    const char *op = p->op;
    const int gru = !strcmp(op, "GRU"), lstm = !strcmp(op, "LSTM");
    onnx_val *x = p->x, *h0 = onnx_in(im, 5), *c0 = lstm ? onnx_in(im, 6) : NULL, *lens = onnx_in(im, 4);
    const cg_tensor *pt = NULL, *w = p->w, *r = p->r, *b = p->b;
    const int ng = p->ng, nd = p->nd, rev = p->rev, bidir = p->bidir, layout = p->layout;
    const int64_t h = p->h, in_sz = p->in_sz;
    cg_status s = CG_OK;
    const int lbr = gru && onnx_attr_int(im, "linear_before_reset", 0) != 0;
    if (lstm && onnx_in(im, 7) && (s = onnx_need_const(im, onnx_in(im, 7), "input 7 (P)", &pt))) return s;
    if (pt && (cg_tensor_dtype(pt) != CG_F32 || cg_tensor_numel(pt) != nd * 3 * h))
        return onnx_fail(im, CG_ERR_FORMAT, "P does not match hidden_size %lld", (long long)h);
    if (lens && (rev || bidir))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "%s unrolled with sequence_lens, not forward", op);
    if (lens && lens->desc.dtype != CG_I32 && lens->desc.dtype != CG_I64)
        return onnx_fail(im, CG_ERR_FORMAT, "sequence_lens must be int32");
    const int64_t seq = x->desc.dims[layout ? 1 : 0], bsz = x->desc.dims[layout ? 0 : 1];
    if (seq < 1 || seq > 4096)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "%s over a symbolic or empty sequence (unrolled: concrete S)", op);
    const char *xs = x->name, *zero = NULL;
    if (layout && (s = emit_tmp(im, "transpose", xs, "perm: [1, 0, 2]", &xs))) return s;
    const float fz = 0;
    if (lens && (s = const_of(im, CG_F32, 0, NULL, &fz, &zero))) return s;
    const char **hs = calloc((size_t)(seq * nd), sizeof *hs);
    float *bias = calloc((size_t)(2 * h), sizeof *bias);
    if (!hs || !bias) {
        free(hs);
        free(bias);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    const char *last[2] = {NULL, NULL}, *lastc[2] = {NULL, NULL};
    char a[160];
    int64_t wd[2] = {h, in_sz}, rd[2] = {h, h};
    const float *wf = cg_tensor_data_const(w), *rf = cg_tensor_data_const(r), *bf = b ? cg_tensor_data_const(b) : NULL;
    for (int d = 0; d < nd && !s; d++) {
        const char *wn[4], *rn[4], *bn[4], *pn[3], *rbn = NULL, *hcur = NULL, *ccur = NULL;
        for (int k = 0; pt && k < 3 && !s; k++)
            s = const_of(im, CG_F32, 1, &h, (const float *)cg_tensor_data_const(pt) + (d * 3 + k) * h, &pn[k]);
        for (int k = 0; k < ng && !s; k++) {
            /* the bias of gate k: Wb + Rb, but for a GRU's n gate with
             * linear_before_reset only Wb (Rbn goes inside r ( )) */
            const int split = lbr && k == 2;
            for (int64_t j = 0; j < h; j++) {
                const float wb = bf ? bf[d * 2 * ng * h + k * h + j] : 0,
                            rb = bf ? bf[d * 2 * ng * h + ng * h + k * h + j] : 0;
                bias[j] = split ? wb : wb + rb;
                bias[h + j] = rb;
            }
            s = const_of(im, CG_F32, 2, wd, wf + (d * ng + k) * h * in_sz, &wn[k]);
            if (!s) s = const_of(im, CG_F32, 2, rd, rf + (d * ng + k) * h * h, &rn[k]);
            if (!s) s = const_of(im, CG_F32, 1, &h, bias, &bn[k]);
            if (!s && split) s = const_of(im, CG_F32, 1, &h, bias + h, &rbn);
        }
        onnx_val *init[2] = {h0, c0};
        const char **state[2] = {&hcur, &ccur};
        for (int k = 0; k < 2 && !s; k++) { /* initial_h / initial_c [D, B, H]: direction d as [B, H] */
            if (!init[k]) continue;
            const char *t0;
            snprintf(a, sizeof a, "axis: 0, start: %d, end: %d", d, d + 1);
            int64_t d2[2] = {bsz, h};
            if (!(s = emit_tmp(im, "slice", init[k]->name, a, &t0)))
                s = onnx_emit_reshape(im, onnx_val_get(im, t0), 2, d2, state[k]);
        }
        for (int64_t i = 0; i < seq && !s; i++) {
            const int64_t t = (rev || d == 1) ? seq - 1 - i : i;
            const char *xt, *xt2 = NULL;
            int64_t d2[2] = {bsz, in_sz};
            snprintf(a, sizeof a, "axis: 0, start: %lld, end: %lld", (long long)t, (long long)t + 1);
            if ((s = emit_tmp(im, "slice", xs, a, &xt)) ||
                (s = onnx_emit_reshape(im, onnx_val_get(im, xt), 2, d2, &xt2)))
                break;
            const char *hn = NULL, *cn = NULL;
            s = lstm ? lstm_step(im, wn, rn, bn, pt ? pn : NULL, xt2, hcur, ccur, &hn, &cn)
                     : unrolled_step(im, gru, lbr, wn, rn, bn, rbn, xt2, hcur, &hn);
            if (s) break;
            const char *yt = hn;
            if (lens && (s = mask_step(im, lens, t, bsz, zero, lstm, hcur, ccur, &hn, &cn, &yt))) break;
            hs[t * nd + d] = yt;
            hcur = hn, ccur = cn;
        }
        last[d] = hcur;
        lastc[d] = ccur;
    }
    free(bias);
    if (!s) s = emit_y(im, hs, seq, nd, bsz, h, layout);
    if (!s) s = emit_last(im, last, lastc, lstm, nd, bsz, h, layout);
    free(hs);
    return s;
}

/* RNN: always unrolled (clgraph has no plain-cell op). */
cg_status cg_onnx_map_rnn(onnx_imp *im) {
    rnn_parts p;
    cg_status s = rnn_read(im, &p);
    return s ? s : unrolled(im, &p);
}
