/* Exporter idioms as clgraph's fused ops, found by looking ahead from the
 * node being imported: MatMul by a constant plus a constant bias is linear
 * (nn.Linear as exporters write it), and the ReduceMean ... Div [Mul Add]
 * chain that exports before opset 17 write for nn.LayerNorm is layer_norm.
 * The nodes taken in are marked absorbed and skipped when their turn
 * comes; every intermediate value must be read inside the idiom only. */
#include "onnx_imp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static int default_domain(const Onnx__NodeProto *n) {
    return !n->domain || !*n->domain || !strcmp(n->domain, "ai.onnx");
}

/* Whether an If, Loop or Scan body of n reads `name`: a reader an idiom
 * cannot take in. Inside a subgraph the nodes are renamed copies whose
 * own bodies still use the file's names: any body counts as a reader. */
static int subgraph_reads(const onnx_imp *im, const Onnx__NodeProto *n, const char *name) {
    for (size_t k = 0; k < n->n_attribute; k++) {
        const Onnx__AttributeProto *a = n->attribute[k];
        if ((a->g || a->n_graphs) && im->scope) return 1;
        if (a->g && cg_onnx_graph_reads(a->g, name)) return 1;
        for (size_t j = 0; j < a->n_graphs; j++)
            if (cg_onnx_graph_reads(a->graphs[j], name)) return 1;
    }
    return 0;
}

/* The one later node that reads value `name` (its index), or -1 when none,
 * several, or the graph outputs it. `also` (>= 0): one more reader that is
 * allowed, not counted. */
static int sole_reader(const onnx_imp *im, const char *name, int also) {
    const Onnx__GraphProto *gp = im->graph;
    int found = -1;
    for (size_t i = 0; i < gp->n_output; i++)
        if (gp->output[i]->name && !strcmp(gp->output[i]->name, name)) return -1;
    for (size_t i = (size_t)im->node_index + 1; i < gp->n_node; i++) {
        if ((int)i == also) continue;
        if (subgraph_reads(im, gp->node[i], name)) return -1;
        for (size_t k = 0; k < gp->node[i]->n_input; k++)
            if (gp->node[i]->input[k] && !strcmp(gp->node[i]->input[k], name)) {
                if (found >= 0 || im->absorbed[i]) return -1;
                found = (int)i;
            }
    }
    return found;
}

/* Whether node n is a default-domain `op` (any field of a file may be
 * missing: the fuzzer sends such files). */
static int op_is(const Onnx__NodeProto *n, const char *op) {
    return n && n->op_type && !strcmp(n->op_type, op) && default_domain(n);
}

/* Node r if it is a default-domain `op` of n_in present inputs and one
 * named output. */
static const Onnx__NodeProto *node_is(const onnx_imp *im, int r, const char *op, size_t n_in) {
    const Onnx__NodeProto *n = r >= 0 ? im->graph->node[r] : NULL;
    if (!op_is(n, op) || n->n_input != n_in || n->n_output != 1 || !n->output[0] || !n->output[0][0]) return NULL;
    for (size_t k = 0; k < n_in; k++)
        if (!n->input[k]) return NULL;
    return n;
}

/* The other input of binary node n than `name`. */
static const char *other_input(const Onnx__NodeProto *n, const char *name) {
    return strcmp(n->input[0], name) ? n->input[0] : n->input[1];
}

/* The value of `name` where it is known now or is the output of a
 * Constant node later in the file (exporters put a constant just before
 * its reader); a new tensor in *out (free it). 0 when neither. */
static int peek_const(onnx_imp *im, const char *name, cg_tensor **out) {
    onnx_val *v = onnx_val_get(im, name);
    *out = NULL;
    if (v && v->konst) return cg_tensor_convert(v->konst, v->konst->dtype, out) == CG_OK;
    const Onnx__GraphProto *gp = im->graph;
    for (size_t i = (size_t)im->node_index + 1; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        if (!op_is(n, "Constant") || n->n_output != 1 || !n->output[0] || strcmp(n->output[0], name)) continue;
        if (n->n_attribute != 1 || !n->attribute[0]->name || strcmp(n->attribute[0]->name, "value") ||
            !n->attribute[0]->t)
            return 0;
        return cg_onnx_tensor(n->attribute[0]->t, NULL, im->path, "Constant value", out) == CG_OK;
    }
    return 0;
}

/* A one-element f32 constant's value (NaN when it is not one). */
static double scalar_of(onnx_imp *im, const char *name) {
    cg_tensor *t;
    double v = NAN;
    if (peek_const(im, name, &t) && cg_tensor_numel(t) == 1 && t->dtype == CG_F32) v = ((const float *)t->data)[0];
    cg_tensor_free(t);
    return v;
}

cg_status cg_onnx_weight_t(onnx_imp *im, onnx_val *v, const char **name) {
    if (v->weight_t) { /* a weight several products read (tied): one copy */
        *name = v->weight_t;
        return CG_OK;
    }
    const cg_tensor *w = v->konst;
    const int64_t k = w->dims[0], n = w->dims[1], wd[2] = {n, k};
    cg_tensor *wt;
    if (cg_tensor_alloc(CG_F32, 2, wd, &wt)) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    const float *src = w->data;
    float *o = wt->data;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < n; j++) o[j * k + i] = src[i * n + j];
    cg_status s = onnx_const_param(im, wt, name);
    if (!s) v->weight_t = *name;
    return s;
}

int cg_onnx_fuse_linear(onnx_imp *im, onnx_val *a, onnx_val *b, cg_status *st) {
    *st = CG_OK;
    const Onnx__NodeProto *mm = im->node;
    const char *y = mm->n_output && mm->output[0] && mm->output[0][0] ? mm->output[0] : NULL;
    if (!y || a->desc.ndim < 2 || a->desc.dtype != CG_F32 || !b->konst || b->konst->dtype != CG_F32 ||
        b->konst->ndim != 2)
        return 0;
    const int r = sole_reader(im, y, -1);
    const Onnx__NodeProto *add = node_is(im, r, "Add", 2);
    if (!add) return 0;
    onnx_val *c = onnx_val_get(im, other_input(add, y));
    const int64_t n = b->konst->dims[1];
    if (!c || !c->konst || c->konst->dtype != CG_F32 || cg_tensor_numel(c->konst) != n || c->konst->ndim > a->desc.ndim)
        return 0;
    cg_tensor *bias;
    if (cg_tensor_alloc(CG_F32, 1, &n, &bias)) return *st = cg_error(CG_ERR_NO_MEMORY, "out of memory"), 1;
    memcpy(bias->data, c->konst->data, (size_t)n * sizeof(float));
    const char *wn, *bn;
    if ((*st = cg_onnx_weight_t(im, b, &wn))) {
        cg_tensor_free(bias);
        return 1;
    }
    if ((*st = onnx_const_param(im, bias, &bn))) return 1;
    const char *in[3] = {a->name, wn, bn}, *out[1] = {add->output[0]};
    *st = onnx_emit(im, "linear", 3, in, 1, out, NULL);
    im->absorbed[r] = 1;
    return 1;
}

/* The reduced axes of ReduceMean node n over rank r when they are the
 * trailing dims from some axis (returned), keepdims 1; -1 otherwise. */
static int trailing_axes(onnx_imp *im, const Onnx__NodeProto *n, int r) {
    int na = 0;
    const int64_t *ax = NULL;
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        if (!a->name) return -1;
        /* another type is not fused: the node's own mapping then names it */
        if (a->type && a->type != (!strcmp(a->name, "axes") ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS
                                                            : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT))
            return -1;
        if (!strcmp(a->name, "axes")) ax = a->ints, na = (int)a->n_ints;
        else if (!strcmp(a->name, "keepdims") && a->i != 1) return -1;
        else if (strcmp(a->name, "axes") && strcmp(a->name, "keepdims")) return -1;
    }
    if (!ax || na < 1 || na > r || n->n_input != 1) return -1; /* opset 18's axes input is not read here */
    int seen[CG_MAX_DIMS] = {0};
    for (int i = 0; i < na; i++) {
        const int64_t a = ax[i] + (ax[i] < 0 ? r : 0);
        if (a < r - na || a >= r || seen[a]++) return -1;
    }
    (void)im;
    return r - na;
}

int cg_onnx_fuse_layer_norm(onnx_imp *im, cg_status *st) {
    *st = CG_OK;
    const Onnx__NodeProto *rm = im->node;
    onnx_val *x = onnx_in(im, 0);
    if (!x || !x->typed || x->desc.dtype != CG_F32 || rm->n_output != 1 || !rm->output[0] || !rm->output[0][0])
        return 0;
    const int axis = trailing_axes(im, rm, x->desc.ndim);
    if (axis < 0) return 0;
    /* mean -> Sub(x, mean) -> d; d is read by Pow(d, 2) and Div(d, sd) */
    const int i_sub = sole_reader(im, rm->output[0], -1);
    const Onnx__NodeProto *sub = node_is(im, i_sub, "Sub", 2);
    if (!sub || strcmp(sub->input[0], x->name) || strcmp(sub->input[1], rm->output[0])) return 0;
    const char *d = sub->output[0];
    const Onnx__GraphProto *gp = im->graph;
    for (size_t i = 0; i < gp->n_output; i++)
        if (gp->output[i]->name && !strcmp(gp->output[i]->name, d)) return 0;
    int i_pow = -1, i_div = -1;
    for (size_t i = (size_t)i_sub + 1; i < gp->n_node; i++) {
        if (subgraph_reads(im, gp->node[i], d)) return 0;
        for (size_t k = 0; k < gp->node[i]->n_input; k++)
            if (gp->node[i]->input[k] && !strcmp(gp->node[i]->input[k], d)) {
                if (op_is(gp->node[i], "Pow") && i_pow < 0 && k == 0 && !im->absorbed[i]) i_pow = (int)i;
                else if (op_is(gp->node[i], "Div") && i_div < 0 && k == 0 && !im->absorbed[i]) i_div = (int)i;
                else return 0;
            }
    }
    const Onnx__NodeProto *pw = node_is(im, i_pow, "Pow", 2), *dv = node_is(im, i_div, "Div", 2);
    if (!pw || !dv || scalar_of(im, pw->input[1]) != 2.0) return 0;
    /* Pow -> ReduceMean (same axes) -> Add(eps) -> Sqrt -> the Div */
    const int i_rm2 = sole_reader(im, pw->output[0], -1);
    const Onnx__NodeProto *rm2 = node_is(im, i_rm2, "ReduceMean", 1);
    if (!rm2 || trailing_axes(im, rm2, x->desc.ndim) != axis) return 0;
    const int i_eps = sole_reader(im, rm2->output[0], -1);
    const Onnx__NodeProto *ae = node_is(im, i_eps, "Add", 2);
    if (!ae) return 0;
    const double eps = scalar_of(im, other_input(ae, rm2->output[0]));
    if (!(eps >= 0) || isinf(eps)) return 0;
    const int i_sqrt = sole_reader(im, ae->output[0], -1);
    const Onnx__NodeProto *sq = node_is(im, i_sqrt, "Sqrt", 1);
    if (!sq || sole_reader(im, sq->output[0], -1) != i_div || strcmp(dv->input[1], sq->output[0])) return 0;
    /* then Mul(gamma) and Add(beta), each a constant over the rows, if there */
    int taken[2] = {-1, -1};
    const char *y = dv->output[0], *gb[2] = {NULL, NULL};
    static const char *const ops[2] = {"Mul", "Add"};
    for (int k = 0; k < 2; k++) {
        const int i = sole_reader(im, y, -1);
        const Onnx__NodeProto *n = node_is(im, i, ops[k], 2);
        onnx_val *p = n ? onnx_val_get(im, other_input(n, y)) : NULL;
        if (!p || !p->konst || p->konst->dtype != CG_F32) break;
        int64_t rows_n = 1;
        for (int j = axis; j < x->desc.ndim; j++) rows_n = x->desc.dims[j] < 0 ? -1 : rows_n * x->desc.dims[j];
        if (rows_n < 0 || cg_tensor_numel(p->konst) != rows_n ||
            p->konst->dims[p->konst->ndim - 1] != x->desc.dims[x->desc.ndim - 1])
            break;
        gb[k] = p->name;
        taken[k] = i;
        y = n->output[0];
    }
    if (!gb[0] && gb[1]) return 0; /* beta without gamma is not layer_norm's order */
    char at[100];
    snprintf(at, sizeof at, "axis: %d, epsilon: %.9g", axis, eps);
    const char *in[3] = {x->name, gb[0], gb[1]}, *out[1] = {y};
    if ((*st = onnx_emit(im, "layer_norm", gb[1] ? 3 : gb[0] ? 2 : 1, in, 1, out, at))) return 1;
    const int absorbed[] = {i_sub, i_pow, i_rm2, i_eps, i_sqrt, i_div, taken[0], taken[1]};
    for (size_t k = 0; k < sizeof absorbed / sizeof absorbed[0]; k++)
        if (absorbed[k] >= 0) im->absorbed[absorbed[k]] = 1;
    return 1;
}
