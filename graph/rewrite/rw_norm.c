/* Rewrite "norm": RMSNorm as exporters write it becomes one rms_norm node,
 * and a LayerNorm of a residual Add takes the Add in (fuse_residual).
 * T5's TorchScript form is w * (x * (1 / sqrt(mean(x^2, -1) + eps))):
 * Pow(x, 2) (or Mul(x, x)), ReduceMean over the last axis keeping it, Add
 * of a constant eps (or the importer's affine of ONNX RMSNormalization),
 * Sqrt, Div(1, .) (or Reciprocal), Mul with x, Mul with a weight [N]; each
 * inner value read only by the next node, no graph output. */
#include "rewrite.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

typedef struct rms_match {
    int32_t x, w, result;
    double eps;
} rms_match;

/* v's producer when v is read by nothing else and is no graph output. */
static cg_node *inner(const cg_graph *g, const cg_rw_uses *u, int32_t v, const char *op) {
    cg_node *p = cg_rw_producer(g, v);
    if (!p || !cg_rw_is(p, op) || u->readers[v] != 1 || u->output[v]) return NULL;
    return p;
}

/* mean(x^2) over the last axis, keepdims: r's producers; x into *x. */
static int mean_square(const cg_graph *g, const cg_rw_uses *u, int32_t r, int32_t *x) {
    const cg_node *m = inner(g, u, r, "reduce_mean");
    if (!m || m->n_inputs != 1) return 0;
    const cg_value *in = cg_rw_val(g, m->inputs[0]);
    const int64_t last[1] = {-1}, lastp[1] = {in->ndim - 1}, one[1] = {1};
    const cg_attr *kd = cg_rw_attr(m, "keepdims");
    if (!(cg_rw_ints_are(m, "axes", 1, last) || cg_rw_ints_are(m, "axes", 1, lastp)) || (kd && kd->i != one[0]))
        return 0;
    const cg_node *p = inner(g, u, m->inputs[0], "pow");
    double e;
    if (p && p->n_inputs == 2 && cg_rw_scalar(g, p->inputs[1], &e) && e == 2.0) return *x = p->inputs[0], 1;
    p = inner(g, u, m->inputs[0], "mul");
    if (p && p->n_inputs == 2 && p->inputs[0] == p->inputs[1]) return *x = p->inputs[0], 1;
    return 0;
}

/* 1 / sqrt(mean(x^2) + eps) in inv; *x and *eps from it. */
static int inv_rms(const cg_graph *g, const cg_rw_uses *u, int32_t inv, int32_t *x, double *eps) {
    const cg_node *d = inner(g, u, inv, "div"), *s;
    double one;
    if (d && d->n_inputs == 2 && cg_rw_scalar(g, d->inputs[0], &one) && one == 1.0)
        s = inner(g, u, d->inputs[1], "sqrt");
    else if ((d = inner(g, u, inv, "reciprocal")) && d->n_inputs == 1) s = inner(g, u, d->inputs[0], "sqrt");
    else return 0;
    if (!s || s->n_inputs != 1) return 0;
    const cg_node *a = inner(g, u, s->inputs[0], "add");
    if (a && a->n_inputs == 2) {
        for (int k = 0; k < 2; k++)
            if (cg_rw_scalar(g, a->inputs[1 - k], eps) && mean_square(g, u, a->inputs[k], x)) return 1;
        return 0;
    }
    a = inner(g, u, s->inputs[0], "affine");
    const cg_attr *al = a ? cg_rw_attr(a, "alpha") : NULL, *be = a ? cg_rw_attr(a, "beta") : NULL;
    if (!a || (al && al->f != 1.0) || !be) return 0;
    *eps = be->f;
    return mean_square(g, u, a->inputs[0], x);
}

/* Node `root` (a mul) as w * (x * inv) in either order of either mul. */
static int match(const cg_graph *g, const cg_rw_uses *u, const cg_node *root, rms_match *m) {
    if (!cg_rw_is(root, "mul") || root->n_inputs != 2) return 0;
    for (int k = 0; k < 2; k++) {
        const cg_value *w = cg_rw_val(g, root->inputs[1 - k]);
        if (w->kind != CG_VAL_PARAM || !w->typed || w->dtype != CG_F32 || w->ndim != 1) continue;
        const cg_node *h = inner(g, u, root->inputs[k], "mul");
        if (!h || h->n_inputs != 2) continue;
        for (int j = 0; j < 2; j++) {
            int32_t x;
            if (!inv_rms(g, u, h->inputs[1 - j], &x, &m->eps) || x != h->inputs[j]) continue;
            const cg_value *xv = cg_rw_val(g, x);
            if (!xv->typed || xv->dtype != CG_F32 || xv->ndim < 1 || xv->dims[xv->ndim - 1] != w->dims[0] ||
                w->dims[0] == CG_DIM_UNKNOWN || !(m->eps >= 0))
                continue;
            m->x = x, m->w = root->inputs[1 - k], m->result = root->outputs[0];
            return !u->output[m->result]; /* a graph output keeps its own node */
        }
    }
    return 0;
}

/* The type of value `from` (the node output a fusion replaces) on `to`,
 * its replacement, so that the next match of this pass sees it typed (the
 * verifier, after the passes, infers it the same). */
static void typed_as(cg_graph *g, int32_t to, int32_t from) {
    cg_value *t = &g->values[to];
    const cg_value *f = &g->values[from];
    if (!f->typed) return;
    t->typed = 1, t->dtype = f->dtype, t->ndim = f->ndim;
    memcpy(t->dims, f->dims, sizeof t->dims);
}

/* a, r and their sum s = a + r (an Add's inputs and output) are f32 of
 * one shape: no broadcast. */
static int residual_fits(const cg_graph *g, const cg_node *add) {
    if (add->n_inputs != 2) return 0;
    const cg_value *s = cg_rw_val(g, add->outputs[0]), *a = cg_rw_val(g, add->inputs[0]),
                   *r = cg_rw_val(g, add->inputs[1]);
    return s->typed && s->dtype == CG_F32 && a->typed && a->dtype == CG_F32 && r->typed && r->dtype == CG_F32 &&
           cg_rw_same_shape(a, s) && cg_rw_same_shape(r, s);
}

/* A pre-LN Transformer's LayerNorm of a residual Add whose sum the next
 * residual Add reads too (GPT-2, Whisper): a new layer_norm(a, gamma, beta,
 * r) gives the normalized sum and the sum itself, and the readers of both
 * move to it. Not where either is a graph output (a new node's values
 * cannot take a graph output's name). */
static cg_status fuse_residual_sum(cg_graph *g, const cg_rw_uses *u, cg_node *ln, int *fired) {
    const int32_t s = ln->inputs[0];
    const cg_node *add = cg_rw_producer(g, s);
    if (!cg_rw_is(add, "add") || u->output[s] || u->output[ln->outputs[0]] || u->readers[s] < 2 ||
        !residual_fits(g, add))
        return CG_OK;
    const int32_t in[4] = {add->inputs[0], ln->inputs[1], ln->inputs[2], add->inputs[1]};
    const char *const suffix[2] = {"/res", "/sum"};
    cg_node *n;
    int32_t out[2];
    cg_status st = cg_rw_add_node_outs(g, "layer_norm", ln->name, suffix, 2, 4, in, &n, out);
    for (int k = 0; !st && k < ln->n_attrs; k++) st = cg_node_add_attr(n, &ln->attrs[k]);
    if (!st) st = cg_rw_redirect(g, ln->outputs[0], out[0]);
    if (!st) st = cg_rw_redirect(g, s, out[1]);
    if (st) return st;
    typed_as(g, out[0], ln->outputs[0]);
    typed_as(g, out[1], s);
    ++*fired;
    return CG_OK;
}

/* A post-LN Transformer's LayerNorm of a residual Add (BERT, Marian,
 * BART; the last one of a pre-LN stack too): layer_norm(add(a, r), gamma,
 * beta), the sum read only there and a, r and the sum of one shape (no
 * broadcast), becomes layer_norm(a, gamma, beta, r), which adds as that
 * Add did. The node changes in place, so its output keeps its name (a
 * graph output's, as often for the last LayerNorm). */
static cg_status fuse_residual(cg_graph *g, const cg_rw_uses *u, int i, int *fired) {
    cg_node *ln = g->nodes[i];
    if (!cg_rw_is(ln, "layer_norm") || ln->n_inputs != 3) return CG_OK;
    const cg_node *add = inner(g, u, ln->inputs[0], "add");
    if (!add) return fuse_residual_sum(g, u, ln, fired);
    if (!residual_fits(g, add)) return CG_OK;
    const int32_t ia = add->inputs[0], ir = add->inputs[1];
    cg_status st = cg_node_set_input_name(ln, 0, cg_rw_val(g, ia)->name);
    if (!st) st = cg_node_append_input(ln, cg_rw_val(g, ir)->name);
    if (st) return st;
    ln->inputs[0] = ia, ln->inputs[3] = ir; /* resolved now: later matches walk through them */
    ++*fired;
    return CG_OK;
}

static cg_status norm_run(cg_graph *g, int *fired) {
    if (!cg_registry_find(g->model->ctx, "rms_norm") || g->n_nodes == 0) return CG_OK;
    cg_rw_uses u;
    cg_status st = cg_rw_uses_make(g, &u);
    const int n0 = g->n_nodes;
    for (int i = 0; !st && i < n0; i++) {
        rms_match m;
        if (u.live[i] && g->nodes[i]->n_outputs == 1) st = fuse_residual(g, &u, i, fired);
        if (st || !u.live[i] || !match(g, &u, g->nodes[i], &m)) continue;
        const int32_t in[2] = {m.x, m.w};
        cg_node *n;
        int32_t out;
        st = cg_rw_add_node(g, "rms_norm", g->nodes[i]->name, "/rms", 2, in, &n, &out);
        if (!st) st = cg_node_set_float(n, "epsilon", m.eps);
        if (!st) st = cg_rw_redirect(g, m.result, out);
        if (!st) typed_as(g, out, m.result);
        if (!st) ++*fired;
    }
    cg_rw_uses_free(&u);
    return st;
}

const cg_rewrite_pass cg_rewrite_norm = {
    "norm",
    "RMSNorm as exporters write it (T5: pow 2, reduce_mean, add eps, sqrt, 1 / ., mul x, mul weight; ONNX "
    "RMSNormalization over the last axis) into one rms_norm node; a LayerNorm of a residual add (post-LN "
    "Transformers) into one layer_norm with the residual",
    norm_run,
};
