/* What the rewrite passes share: who reads and who makes a value, a
 * node's attributes, the scalar constants exporters write, and adding a
 * node to a verified graph. */
#include "rewrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "weights.h"

/* Marks the nodes some graph output depends on (stack: room for every
 * value). */
static void mark_live(const cg_graph *g, uint8_t *live, int32_t *stack) {
    int sp = 0;
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] >= 0) stack[sp++] = g->outputs[k];
    while (sp > 0) {
        const cg_value *v = cg_rw_val(g, stack[--sp]);
        if (v->kind != CG_VAL_NODE || v->producer < 0 || live[v->producer]) continue;
        live[v->producer] = 1;
        const cg_node *p = g->nodes[v->producer];
        for (int k = 0; k < p->n_inputs; k++)
            if (p->inputs[k] >= 0) stack[sp++] = p->inputs[k];
    }
}

cg_status cg_rw_uses_make(const cg_graph *g, cg_rw_uses *u) {
    const size_t n = (size_t)g->n_values + 1;
    size_t edges = (size_t)g->n_outputs + 1;
    for (int i = 0; i < g->n_nodes; i++) edges += (size_t)g->nodes[i]->n_inputs;
    u->readers = calloc(n, sizeof *u->readers);
    u->reader = malloc(n * sizeof *u->reader);
    u->output = calloc(n, 1);
    u->live = calloc((size_t)g->n_nodes + 1, 1);
    int32_t *stack = malloc(edges * sizeof *stack);
    if (!u->readers || !u->reader || !u->output || !u->live || !stack) {
        free(stack);
        cg_rw_uses_free(u);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    mark_live(g, u->live, stack);
    free(stack);
    for (int v = 0; v < g->n_values; v++) u->reader[v] = -1;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; u->live[i] && k < g->nodes[i]->n_inputs; k++) {
            const int32_t v = g->nodes[i]->inputs[k];
            if (v < 0) continue;
            u->readers[v]++;
            u->reader[v] = i;
        }
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] >= 0) u->readers[g->outputs[k]]++, u->output[g->outputs[k]] = 1;
    return CG_OK;
}

void cg_rw_uses_free(cg_rw_uses *u) {
    free(u->readers), free(u->reader), free(u->output), free(u->live);
    u->readers = u->reader = NULL;
    u->output = u->live = NULL;
}

cg_node *cg_rw_sole_reader(const cg_graph *g, const cg_rw_uses *u, int32_t v) {
    return u->readers[v] == 1 && !u->output[v] ? g->nodes[u->reader[v]] : NULL;
}

cg_node *cg_rw_producer(const cg_graph *g, int32_t v) {
    if (v < 0 || v >= g->n_values) return NULL;
    const cg_value *x = &g->values[v];
    return x->kind == CG_VAL_NODE && x->producer >= 0 ? g->nodes[x->producer] : NULL;
}

int cg_rw_is(const cg_node *n, const char *op) { return n && n->n_outputs == 1 && !strcmp(n->op, op); }

const cg_attr *cg_rw_attr(const cg_node *n, const char *key) {
    for (int i = 0; i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].key, key)) return &n->attrs[i];
    return NULL;
}

int cg_rw_ints_are(const cg_node *n, const char *key, int count, const int64_t *want) {
    const cg_attr *a = cg_rw_attr(n, key);
    if (!a || a->type != CG_ATTR_INTS || a->syms || a->n_ints != count) return 0;
    for (int i = 0; i < count; i++)
        if (a->ints[i] != want[i]) return 0;
    return 1;
}

int cg_rw_same_shape(const cg_value *a, const cg_value *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i] || a->dims[i] == CG_DIM_UNKNOWN) return 0;
    return 1;
}

int cg_rw_scalar(const cg_graph *g, int32_t v, double *out) {
    const cg_value *x = &g->values[v];
    cg_weights *w = g->model->weights;
    if (x->kind != CG_VAL_PARAM || !x->weight || !w || x->dtype != CG_F32) return 0;
    for (int d = 0; d < x->ndim; d++)
        if (x->dims[d] != 1) return 0;
    cg_tensor_desc desc;
    const void *data;
    if (cg_weights_view(w, x->weight, &desc, &data) || desc.dtype != CG_F32) return 0;
    float f;
    memcpy(&f, data, sizeof f);
    *out = f;
    return 1;
}

/* base + suffix, or base + suffix + "_K" for the first K that names no
 * value of g. */
static char *fresh_name(const cg_graph *g, const char *base, const char *suffix) {
    size_t n = strlen(base) + strlen(suffix) + 24;
    char *s = malloc(n);
    if (!s) return NULL;
    snprintf(s, n, "%s%s", base, suffix);
    for (int k = 2; cg_graph_find_value(g, s) >= 0; k++) snprintf(s, n, "%s%s_%d", base, suffix, k);
    return s;
}

cg_status cg_rw_add_node_outs(cg_graph *g, const char *op, const char *base, const char *const *suffixes, int n_out,
                              int n_in, const int32_t *in, cg_node **node, int32_t *out_values) {
    const char *names[8];
    char *outs[4] = {NULL};
    if (n_in > 8 || n_out < 1 || n_out > 4) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_rw_add_node: too many values");
    for (int i = 0; i < n_in; i++) names[i] = g->values[in[i]].name;
    cg_status st = CG_OK;
    for (int k = 0; k < n_out && !st; k++) {
        outs[k] = fresh_name(g, base, suffixes[k]);
        if (!outs[k]) st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    if (!st) st = cg_graph_new_node(g, op, outs[0], n_in, names, n_out, (const char *const *)outs, 0, 0, node);
    for (int k = 0; k < n_out; k++) free(outs[k]);
    if (st) return st;
    for (int k = 0; k < n_out; k++) out_values[k] = (*node)->outputs[k];
    return CG_OK;
}

cg_status cg_rw_add_node(cg_graph *g, const char *op, const char *base, const char *suffix, int n_in, const int32_t *in,
                         cg_node **node, int32_t *out_value) {
    return cg_rw_add_node_outs(g, op, base, &suffix, 1, n_in, in, node, out_value);
}

cg_status cg_rw_redirect(cg_graph *g, int32_t from, int32_t to) {
    const char *name = g->values[to].name;
    for (int i = 0; i < g->n_nodes; i++) {
        cg_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] != from) continue;
            cg_status st = cg_node_set_input_name(n, k, name);
            if (st) return st;
            n->inputs[k] = to; /* resolved now too: later matches walk through it */
        }
    }
    return CG_OK;
}
