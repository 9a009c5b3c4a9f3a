/* If: with its condition known at import (a constant, computed from
 * constants, or from inputs given for the import) the taken branch is
 * imported inline, its outputs named as the If's; with a condition known
 * only at run time both branches are imported and each output is a
 * `where` of the condition over the two (ONNX ops have no side effects;
 * docs/onnx.md "Control flow" says what this costs). */
#include "onnx_ctrl.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "error.h"

/* Whether `name` is made by a node of g (not read from outside it). */
static int defined_in(const Onnx__GraphProto *g, const char *name) {
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_output; k++)
            if (g->node[i]->output[k] && !strcmp(g->node[i]->output[k], name)) return 1;
    return 0;
}

static int listed_once(const Onnx__GraphProto *g, const char *name) {
    int n = 0;
    for (size_t k = 0; k < g->n_output; k++) n += g->output[k]->name && !strcmp(g->output[k]->name, name);
    return n == 1;
}

/* The taken branch g inline: an output the branch computes takes the If's
 * output name; one it reads from outside (or lists twice) is copied. */
static cg_status if_inline(onnx_imp *im, const Onnx__GraphProto *g, const char *which) {
    const Onnx__NodeProto *n = im->node;
    const char *from[ONNX_MAX_IO], *to[ONNX_MAX_IO], *outs[ONNX_MAX_IO];
    int np = 0;
    for (size_t k = 0; k < n->n_output; k++) {
        const char *b = g->output[k]->name, *o = out_name(im, (int)k);
        if (o && b && defined_in(g, b) && listed_once(g, b)) {
            from[np] = b;
            to[np++] = o;
        }
    }
    char nm[600], label[700];
    onnx_ctrl_node_name(im, nm, sizeof nm);
    snprintf(label, sizeof label, "%s/%s", nm, which);
    const onnx_ctrl_frame f = {.label = label, .n_preset = np, .preset_from = from, .preset_to = to};
    cg_status s = onnx_ctrl_body(im, g, &f, outs);
    for (size_t k = 0; !s && k < n->n_output; k++) {
        const char *o = out_name(im, (int)k), *in[1] = {outs[k]};
        if (!o || !strcmp(o, outs[k])) continue;
        char id[700];
        snprintf(id, sizeof id, "%s/out%zu", nm, k);
        s = onnx_ctrl_node(im, "Identity", id, 1, in, o, NULL, 0, 0);
    }
    return s;
}

/* Output k of both branches, which `where` selects between: the same
 * dtype and dims, or the If is refused. */
static cg_status same_type(onnx_imp *im, size_t k, const onnx_val *t, const onnx_val *e) {
    int same = t->desc.dtype == e->desc.dtype && t->desc.ndim == e->desc.ndim;
    for (int d = 0; same && d < t->desc.ndim; d++) same = t->desc.dims[d] == e->desc.dims[d];
    if (same && t->desc.dtype) return CG_OK;
    char a[160], b[160];
    cg_desc_format(a, sizeof a, im->m, &t->desc);
    cg_desc_format(b, sizeof b, im->m, &e->desc);
    return onnx_fail(
        im, CG_ERR_UNSUPPORTED,
        "the condition is known only at run time and output %zu is %s in then_branch but %s in "
        "else_branch: clgraph computes both branches and selects, which needs the same dtype and shape (give "
        "the inputs the condition depends on for the import)",
        k, a, b);
}

/* The condition as one bool of rank 0 (where broadcasts it). */
static cg_status scalar_cond(onnx_imp *im, onnx_val *c, const char **out) {
    int one = c->desc.dtype == CG_BOOL;
    for (int d = 0; one && d < c->desc.ndim; d++) one = c->desc.dims[d] == 1;
    if (!one) return onnx_fail(im, CG_ERR_FORMAT, "the condition '%s' must be one bool", c->name);
    *out = c->name;
    if (!c->desc.ndim) return CG_OK;
    return emit_tmp(im, "reshape", c->name, "shape: []", out);
}

/* A branch that does not import where the condition is not known: the If
 * fails saying why both were imported, then the branch's reason. */
static cg_status branch_failed(onnx_imp *im, const onnx_val *c, const char *which, cg_status s) {
    char why[1024];
    const char *msg = cg_last_error();
    const size_t lp = strlen(im->path);
    if (!strncmp(msg, im->path, lp) && !strncmp(msg + lp, ": ", 2)) msg += lp + 2;
    snprintf(why, sizeof why, "%s", msg);
    return onnx_fail(im, s,
                     "the condition '%s' is known only at run time, so both branches are imported, and %s_branch "
                     "fails: %s",
                     c->name, which, why);
}

static cg_status if_select(onnx_imp *im, onnx_val *c, const Onnx__GraphProto *g[2]) {
    static const char *const which[2] = {"then", "else"};
    const Onnx__NodeProto *n = im->node;
    const char *outs[2][ONNX_MAX_IO];
    char nm[600], label[2][700];
    onnx_ctrl_node_name(im, nm, sizeof nm);
    cg_status s = CG_OK;
    for (int b = 0; b < 2 && !s; b++) {
        snprintf(label[b], sizeof label[b], "%s/%s", nm, which[b]);
        const onnx_ctrl_frame f = {.label = label[b]};
        if ((s = onnx_ctrl_body(im, g[b], &f, outs[b]))) return branch_failed(im, c, which[b], s);
    }
    const char *cond;
    if ((s = scalar_cond(im, c, &cond))) return s;
    for (size_t k = 0; !s && k < n->n_output; k++) {
        const char *o = out_name(im, (int)k);
        if (!o) continue;
        onnx_val *t = onnx_val_find(im, outs[0][k]), *e = onnx_val_find(im, outs[1][k]);
        if (t->seq || t->none || e->seq || e->none) s = cg_onnx_seq_select(im, cond, t, e, o, (int)k);
        else if (!(s = same_type(im, k, t, e))) {
            const char *in[3] = {cond, t->name, e->name};
            s = emit1(im, "where", 3, in, o, NULL);
        }
    }
    return s;
}

cg_status cg_onnx_map_if(onnx_imp *im) {
    static const char *const known[] = {"then_branch", "else_branch", NULL};
    const Onnx__GraphProto *g[2];
    onnx_val *c;
    cg_status s;
    if ((s = need_in(im, 0, &c)) || (s = onnx_check_attrs(im, known)) ||
        (s = onnx_ctrl_graph_attr(im, "then_branch", &g[0])) || (s = onnx_ctrl_graph_attr(im, "else_branch", &g[1])))
        return s;
    const Onnx__NodeProto *n = im->node;
    if (n->n_output > ONNX_MAX_IO) return onnx_fail(im, CG_ERR_UNSUPPORTED, "more than %d outputs", ONNX_MAX_IO);
    for (int b = 0; b < 2; b++)
        if (g[b]->n_output != n->n_output)
            return onnx_fail(im, CG_ERR_FORMAT, "%s has %zu outputs, the If %zu", b ? "else_branch" : "then_branch",
                             g[b]->n_output, n->n_output);
    const cg_tensor *ct = c->sym ? NULL : onnx_known(c);
    if (!ct) {
        /* branches that cannot be selected between, on a comparison of dims:
         * the import forks on it (onnx_variant.c) */
        cg_status sel = if_select(im, c, g);
        if (sel && onnx_fork_on(im, c)) return onnx_fail(im, sel, "the import forks on this If's condition");
        return sel;
    }
    if (cg_tensor_numel(ct) != 1) return onnx_fail(im, CG_ERR_FORMAT, "the condition '%s' must be one value", c->name);
    int taken = cg_onnx_int_at(ct, 0) != 0;
    return if_inline(im, g[taken ? 0 : 1], taken ? "then" : "else");
}
