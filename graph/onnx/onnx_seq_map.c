/* Sequences through subgraphs: SequenceMap, its body imported once per
 * element (onnx_ctrl_body, as Loop's iterations are), and the sequences an
 * If selects between when its condition is known only at run time. */
#include "onnx_ctrl.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static cg_status oom(void) { return cg_error(CG_ERR_NO_MEMORY, "out of memory"); }

/* The inputs: sequences of one length *n (the first's), and tensors. */
static cg_status map_inputs(onnx_imp *im, const Onnx__GraphProto *body, int *n) {
    const Onnx__NodeProto *nd = im->node;
    onnx_val *q = onnx_in(im, 0);
    if (!q || !q->seq) return onnx_fail(im, CG_ERR_FORMAT, "input 0 must be a sequence");
    *n = q->n_elems;
    if (nd->n_input > ONNX_MAX_IO || nd->n_output > ONNX_MAX_IO)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "more than %d inputs or outputs", ONNX_MAX_IO);
    if (body->n_input != nd->n_input || body->n_output != nd->n_output)
        return onnx_fail(im, CG_ERR_FORMAT, "the body has %zu inputs and %zu outputs, the node %zu and %zu",
                         body->n_input, body->n_output, nd->n_input, nd->n_output);
    for (size_t i = 1; i < nd->n_input; i++) {
        onnx_val *v = onnx_in(im, (int)i);
        if (!v) return onnx_fail(im, CG_ERR_FORMAT, "input %zu is missing", i);
        if (v->none) return onnx_fail(im, CG_ERR_FORMAT, "input '%s' is an empty optional", v->name);
        if (v->seq && v->n_elems != *n)
            return onnx_fail(im, CG_ERR_FORMAT, "sequence '%s' has %d elements, '%s' %d", v->name, v->n_elems, q->name,
                             *n);
    }
    return CG_OK;
}

/* Element i: the body on element i of each sequence (and the tensors), its
 * outputs into res[k][i]. */
static cg_status map_one(onnx_imp *im, const Onnx__GraphProto *body, int i, char ***res) {
    const Onnx__NodeProto *nd = im->node;
    const char *actual[ONNX_MAX_IO], *outs[ONNX_MAX_IO];
    for (size_t k = 0; k < nd->n_input; k++) {
        onnx_val *v = onnx_in(im, (int)k);
        actual[k] = v->seq ? v->elems[i] : v->name;
    }
    char nm[600], prefix[700];
    snprintf(prefix, sizeof prefix, "%s/elem%d", onnx_ctrl_node_name(im, nm, sizeof nm), i);
    const onnx_ctrl_frame f = {.prefix = prefix, .label = prefix, .n_actual = (int)nd->n_input, .actual = actual};
    cg_status s = onnx_ctrl_body(im, body, &f, outs);
    for (size_t k = 0; !s && k < nd->n_output; k++) {
        onnx_val *o = onnx_val_find(im, outs[k]);
        if (o->seq || o->none)
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "body output %zu is not a tensor (a sequence of sequences)", k);
        if (!(res[k][i] = strdup(outs[k]))) s = oom();
    }
    return s;
}

cg_status cg_onnx_map_seq_map(onnx_imp *im) {
    static const char *const known[] = {"body", NULL};
    const Onnx__GraphProto *body;
    int n = 0;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = onnx_ctrl_graph_attr(im, "body", &body)) ||
        (s = map_inputs(im, body, &n)))
        return s;
    const int m = (int)im->node->n_output;
    char **res[ONNX_MAX_IO] = {0};
    for (int k = 0; !s && k < m; k++)
        if (!(res[k] = calloc((size_t)n + 1, sizeof *res[k]))) s = oom();
    for (int i = 0; !s && i < n; i++) s = map_one(im, body, i, res);
    for (int k = 0; !s && k < m; k++) {
        onnx_val *o = out_name(im, k) ? onnx_val_get(im, out_name(im, k)) : NULL;
        if (out_name(im, k)) s = o ? onnx_seq_set(o, n, res[k]) : oom();
    }
    for (int k = 0; k < m; k++) {
        for (int i = 0; res[k] && i < n; i++) free(res[k][i]);
        free(res[k]);
    }
    return s;
}

/* ---- If ---- */

static cg_status select_elems(onnx_imp *im, const char *cond, onnx_val *t, onnx_val *e, onnx_val *o) {
    char **names = calloc((size_t)t->n_elems + 1, sizeof *names);
    cg_status s = names ? CG_OK : oom();
    for (int i = 0; !s && i < t->n_elems; i++) {
        onnx_val *a = onnx_val_find(im, t->elems[i]), *b = onnx_val_find(im, e->elems[i]);
        int same = a->desc.dtype == b->desc.dtype && a->desc.ndim == b->desc.ndim;
        for (int d = 0; same && d < a->desc.ndim; d++) same = a->desc.dims[d] == b->desc.dims[d];
        const char *in[3] = {cond, a->name, b->name}, *out[1] = {NULL};
        if (!same)
            s = onnx_fail(im, CG_ERR_UNSUPPORTED,
                          "element %d of the sequences differs in dtype or shape between "
                          "the branches",
                          i);
        else if (!(s = onnx_emit(im, "where", 3, in, 1, out, NULL)) && !(names[i] = strdup(out[0]))) s = oom();
    }
    if (!s) s = onnx_seq_set(o, t->n_elems, names);
    for (int i = 0; names && i < t->n_elems; i++) free(names[i]);
    free(names);
    return s;
}

cg_status cg_onnx_seq_select(onnx_imp *im, const char *cond, onnx_val *t, onnx_val *e, const char *out, int k) {
    onnx_val *o = onnx_val_get(im, out);
    if (!o) return oom();
    if (t->none == e->none && t->seq == e->seq && t->seq && t->n_elems != e->n_elems)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "the condition is known only at run time and output %d is a sequence of %d in then_branch "
                         "but of %d in else_branch: its length must be known at import (give the inputs the "
                         "condition depends on for the import)",
                         k, t->n_elems, e->n_elems);
    if (t->none != e->none || t->seq != e->seq)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "the condition is known only at run time and output %d is %s in then_branch but %s in "
                         "else_branch: which one must be known at import (give the inputs the condition depends "
                         "on for the import)",
                         k,
                         t->none  ? "empty"
                         : t->seq ? "a sequence"
                                  : "a tensor",
                         e->none  ? "empty"
                         : e->seq ? "a sequence"
                                  : "a tensor");
    o->optional = t->optional || e->optional;
    if (t->none) return o->none = o->typed = 1, CG_OK;
    return select_elems(im, cond, t, e, o);
}
