/* Rewrite "cse": a node that repeats an earlier one (the same op, the same
 * attributes, the same inputs) is dropped and its readers read the
 * earlier node's outputs. Exporters repeat work per layer: BERT, Marian
 * and BART turn the same boolean mask into the same additive mask in
 * every layer (Where(mask, -inf, 0) with each layer's own Constant
 * nodes). Small parameters with equal bytes, dtype and shape count as the
 * same input. Built-in ops only (a plugin's op may have effects of its
 * own), with at least one input, no graph output among the outputs. Runs
 * first, on the importer's topological order. */
#include "rewrite.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hash.h"
#include "shape.h"
#include "weights.h"

/* Parameters of at most this many bytes are compared by content. */
#define CSE_PARAM_BYTES 64

static int same_attr(const cg_attr *a, const cg_attr *b) {
    if (strcmp(a->key, b->key) || a->type != b->type || a->i != b->i || a->syms != b->syms ||
        memcmp(&a->f, &b->f, sizeof a->f) || a->n_ints != b->n_ints)
        return 0;
    if ((a->s == NULL) != (b->s == NULL) || (a->s && strcmp(a->s, b->s))) return 0;
    return a->n_ints == 0 || !memcmp(a->ints, b->ints, sizeof *a->ints * (size_t)a->n_ints);
}

static int same_attrs(const cg_node *a, const cg_node *b) {
    if (a->n_attrs != b->n_attrs) return 0;
    for (int i = 0; i < a->n_attrs; i++) {
        int found = 0;
        for (int j = 0; j < b->n_attrs && !found; j++) found = same_attr(&a->attrs[i], &b->attrs[j]);
        if (!found) return 0;
    }
    return 1;
}

/* The bytes of a small parameter, or NULL. */
static const void *param_bytes(const cg_graph *g, int32_t v, size_t *n) {
    const cg_value *x = cg_rw_val(g, v);
    cg_tensor_desc d;
    const void *data;
    if (x->kind != CG_VAL_PARAM || !x->weight || !g->model->weights ||
        cg_weights_view(g->model->weights, x->weight, &d, &data))
        return NULL;
    *n = cg_desc_bytes(&d);
    return *n <= CSE_PARAM_BYTES ? data : NULL;
}

typedef struct cse_param {
    const void *bytes;
    size_t n;
    int next; /* the next small parameter of the same bucket, -1 none */
} cse_param;

static int same_param(const cg_graph *g, int32_t v, const cse_param *pv, int32_t w, const cse_param *pw) {
    const cg_value *xv = cg_rw_val(g, v), *xw = cg_rw_val(g, w);
    return pv->n == pw->n && xv->dtype == xw->dtype && xv->ndim == xw->ndim &&
           !memcmp(xw->dims, xv->dims, sizeof *xv->dims * (size_t)xv->ndim) && !memcmp(pv->bytes, pw->bytes, pv->n);
}

/* canon[v] for each small parameter: the first one of equal content
 * (hashed by dtype, shape and bytes: a model has thousands of values). */
static cg_status canon_params(const cg_graph *g, int32_t *canon) {
    const unsigned nb = (unsigned)g->n_values + 1u;
    cse_param *p = malloc(sizeof *p * ((size_t)g->n_values + 1));
    int *head = malloc(sizeof *head * nb);
    if (!p || !head) {
        free(p), free(head);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    for (unsigned b = 0; b < nb; b++) head[b] = -1;
    for (int32_t v = 0; v < g->n_values; v++) {
        p[v].bytes = param_bytes(g, v, &p[v].n);
        if (!p[v].bytes) continue;
        const cg_value *x = cg_rw_val(g, v);
        uint64_t h = cg_fnv1a(CG_FNV_BASIS, &x->dtype, sizeof x->dtype);
        h = cg_fnv1a(cg_fnv1a(h, &x->ndim, sizeof x->ndim), x->dims, sizeof *x->dims * (size_t)x->ndim);
        const unsigned b = (unsigned)(cg_fnv1a(h, p[v].bytes, p[v].n) % nb);
        int w = head[b];
        while (w >= 0 && !same_param(g, v, &p[v], w, &p[w])) w = p[w].next;
        if (w >= 0) canon[v] = w; /* the bucket keeps first occurrences only */
        else p[v].next = head[b], head[b] = v;
    }
    free(p), free(head);
    return CG_OK;
}

static int same_node(const cg_node *a, const cg_node *b, const int32_t *canon) {
    if (strcmp(a->op, b->op) || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs || !same_attrs(a, b))
        return 0;
    for (int k = 0; k < a->n_inputs; k++)
        if (a->inputs[k] < 0 || b->inputs[k] < 0 || canon[a->inputs[k]] != canon[b->inputs[k]]) return 0;
    return 1;
}

/* Whether node n may be merged into an equal earlier one. */
static int candidate(const cg_graph *g, const cg_rw_uses *u, int i) {
    const cg_node *n = g->nodes[i];
    const cg_op_entry *e = cg_registry_find(g->model->ctx, n->op);
    if (!u->live[i] || n->n_inputs == 0 || !e || !e->plugin || e->plugin->dl) return 0;
    for (int k = 0; k < n->n_outputs; k++)
        if (u->output[n->outputs[k]]) return 0;
    return 1;
}

/* Buckets by op and first input; nodes in their order of the graph. */
static unsigned bucket(const cg_node *n, const int32_t *canon, unsigned nb) {
    uint64_t h = cg_fnv1a_str(CG_FNV_BASIS, n->op);
    if (n->n_inputs > 0 && n->inputs[0] >= 0) h = cg_fnv1a(h, &canon[n->inputs[0]], sizeof canon[0]);
    return (unsigned)(h % nb);
}

static cg_status cse_run(cg_graph *g, int *fired) {
    if (g->n_nodes < 2) return CG_OK;
    cg_rw_uses u;
    cg_status st = cg_rw_uses_make(g, &u);
    if (st) return st;
    const int n0 = g->n_nodes;
    const unsigned nb = (unsigned)n0 * 2u + 1u;
    int32_t *canon = malloc(sizeof *canon * ((size_t)g->n_values + 1));
    int *head = malloc(sizeof *head * nb), *next = malloc(sizeof *next * (size_t)n0);
    if (!canon || !head || !next) st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int32_t v = 0; !st && v < g->n_values; v++) canon[v] = v;
    for (unsigned b = 0; !st && b < nb; b++) head[b] = -1;
    if (!st) st = canon_params(g, canon);
    for (int i = 0; !st && i < n0; i++) {
        cg_node *n = g->nodes[i];
        if (!candidate(g, &u, i)) continue;
        const unsigned b = bucket(n, canon, nb);
        int j = head[b];
        while (j >= 0 && !same_node(g->nodes[j], n, canon)) j = next[j];
        if (j < 0) {
            next[i] = head[b], head[b] = i;
            continue;
        }
        for (int k = 0; !st && k < n->n_outputs; k++) {
            canon[n->outputs[k]] = g->nodes[j]->outputs[k];
            st = cg_rw_redirect(g, n->outputs[k], g->nodes[j]->outputs[k]);
        }
        if (!st) ++*fired;
    }
    free(canon), free(head), free(next);
    cg_rw_uses_free(&u);
    return st;
}

const cg_rewrite_pass cg_rewrite_cse = {
    "cse",
    "a node repeating an earlier one (op, attributes, inputs; small parameters by content) is dropped for it: "
    "the additive mask exporters rebuild in every layer",
    cse_run,
};
