/* Rewrite "elementwise": a tree of f32 element-wise nodes (add, sub, mul,
 * div, neg, erf, tanh, sigmoid, relu, exp, sqrt, abs: GELU's Div, Erf, Add,
 * Mul, Mul; bias and residual adds; pow, affine and hard_sigmoid: GPT-2's
 * GELU, the dynamo exporter's, HardSwish) becomes one ew_fused node, whose
 * program is the tree in postfix. A group grows from a root backwards
 * through each input made by a fusable node, read only there, no graph
 * output, and of the root's shape; every other input is a leaf, which must
 * be the root's shape, its trailing dims after leading 1s, or one element
 * (dims compared as equal ints: a symbol matches itself, an unknown dim
 * nothing). A pow by a constant 2 or 3 is the token square or cube.
 * Groups of one node stay as they are, but for such a pow. */
#include "rewrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

/* ew_fused's limits (ops/ew_fused.c) */
#define MAX_LEAVES 8
#define MAX_TOKENS 64
#define MAX_DEPTH 16

/* the binary ones first; affine and hard_sigmoid carry their attributes
 * in the token */
static const char *const fusable_ops[] = {"add",     "sub",  "mul", "div",  "pow", "neg",    "erf",         "tanh",
                                          "sigmoid", "relu", "exp", "sqrt", "abs", "affine", "hard_sigmoid"};
enum { N_FUSABLE = (int)(sizeof fusable_ops / sizeof fusable_ops[0]), FIRST_UNARY = 5, TOKEN_SIZE = 48 };

typedef struct group {
    const cg_graph *g;
    const cg_rw_uses *u;
    int n0; /* nodes before the pass: the candidates */
    const cg_value *root;
    /* the tree as built so far */
    int n_tok, depth, max_depth, n_leaves, n_members;
    char tok[MAX_TOKENS][TOKEN_SIZE];
    int32_t leaves[MAX_LEAVES];
    int32_t *members; /* node indices, [n0] */
} group;

/* The op's index in fusable_ops, or -1; with the arity it needs. */
static int fusable_index(const cg_graph *g, const cg_node *n) {
    if (n->n_outputs != 1) return -1;
    const cg_value *o = cg_rw_val(g, n->outputs[0]);
    if (!o->typed || o->dtype != CG_F32) return -1;
    for (int i = 0; i < N_FUSABLE; i++) {
        if (strcmp(n->op, fusable_ops[i])) continue;
        if (n->n_inputs != (i < FIRST_UNARY ? 2 : 1)) return -1;
        for (int k = 0; k < n->n_inputs; k++) {
            const cg_value *x = n->inputs[k] >= 0 ? cg_rw_val(g, n->inputs[k]) : NULL;
            if (!x || !x->typed || x->dtype != CG_F32) return -1;
        }
        return i;
    }
    return -1;
}

/* A leaf ew_fused can read: the root's shape, or its trailing dims after
 * the leaf's leading 1s (one element: none left). */
static int leaf_fits(const cg_value *x, const cg_value *root) {
    int lead = 0;
    while (lead < x->ndim && x->dims[lead] == 1) lead++;
    const int n = x->ndim - lead;
    if (cg_rw_same_shape(x, root)) return 1;
    if (n > root->ndim) return 0;
    for (int i = 0; i < n; i++) {
        int64_t d = x->dims[lead + i];
        if (d != root->dims[root->ndim - n + i] || d == CG_DIM_UNKNOWN) return 0;
    }
    return 1;
}

/* The node index of v's producer when v may be inside the group. */
static int inner_producer(const group *s, int32_t v) {
    const cg_value *x = cg_rw_val(s->g, v);
    if (x->kind != CG_VAL_NODE || x->producer < 0 || x->producer >= s->n0) return -1;
    if (s->u->readers[v] != 1 || s->u->output[v] || !cg_rw_same_shape(x, s->root)) return -1;
    return fusable_index(s->g, s->g->nodes[x->producer]) >= 0 ? x->producer : -1;
}

static int push_token(group *s, const char *t, int delta) {
    if (s->n_tok == MAX_TOKENS) return 0;
    strcpy(s->tok[s->n_tok++], t);
    s->depth += delta;
    if (s->depth > s->max_depth) s->max_depth = s->depth;
    return s->max_depth <= MAX_DEPTH;
}

static int add_leaf(group *s, int32_t v) {
    if (!leaf_fits(cg_rw_val(s->g, v), s->root)) return 0;
    int k = 0;
    while (k < s->n_leaves && s->leaves[k] != v) k++;
    if (k == MAX_LEAVES) return 0;
    if (k == s->n_leaves) s->leaves[s->n_leaves++] = v;
    char t[8] = {(char)('0' + k), 0};
    return push_token(s, t, 1);
}

/* Node n's token (op `op`) into t: "affine:A:B" and "hard_sigmoid:A:B"
 * with the attributes (or their defaults) as exact f32 in hexadecimal, as
 * the ops read them. */
static const char *op_token(const cg_node *n, int op, char *t) {
    const char *name = fusable_ops[op];
    const int affine = !strcmp(name, "affine");
    if (!affine && strcmp(name, "hard_sigmoid")) return name;
    const cg_attr *a = cg_rw_attr(n, "alpha"), *b = cg_rw_attr(n, "beta");
    const float pa = a && a->type == CG_ATTR_FLOAT ? (float)a->f : affine ? 1.0f : 0.2f;
    const float pb = b && b->type == CG_ATTR_FLOAT ? (float)b->f : affine ? 0.0f : 0.5f;
    snprintf(t, TOKEN_SIZE, "%s:%a:%a", name, (double)pa, (double)pb);
    return t;
}

/* "square" or "cube" for a pow by a constant 2 or 3 (GPT-2's GELU): the
 * kernel then knows the exponent when it is built, instead of a general
 * pow per element. NULL for any other node. */
static const char *const_power(const cg_graph *g, const cg_node *n) {
    double e;
    if (strcmp(n->op, "pow") || !cg_rw_scalar(g, n->inputs[1], &e)) return NULL;
    return e == 2.0 ? "square" : e == 3.0 ? "cube" : NULL;
}

/* Appends node `ni`'s tree: an input made inside the group is grown into,
 * unless that breaks a limit (then it is a leaf). 0 when even that fails. */
static int grow(group *s, int ni) {
    const cg_node *n = s->g->nodes[ni];
    char t[TOKEN_SIZE];
    s->members[s->n_members++] = ni;
    const char *power = const_power(s->g, n);
    for (int k = 0; k < (power ? 1 : n->n_inputs); k++) {
        const int32_t v = n->inputs[k];
        const int p = inner_producer(s, v);
        if (p >= 0) {
            group saved = *s;
            if (grow(s, p)) continue;
            int32_t *members = s->members;
            *s = saved;
            s->members = members;
        }
        if (!add_leaf(s, v)) return 0;
    }
    if (power) return push_token(s, power, 0);
    return push_token(s, op_token(n, fusable_index(s->g, n), t), n->n_inputs == 2 ? -1 : 0);
}

/* Adds the ew_fused node of a grown group and points the root's readers
 * at it. */
static cg_status emit(cg_graph *g, const group *s, int root) {
    char program[MAX_TOKENS * TOKEN_SIZE] = "";
    for (int t = 0; t < s->n_tok; t++) {
        if (t) strcat(program, " ");
        strcat(program, s->tok[t]);
    }
    cg_node *n;
    int32_t out;
    const cg_node *r = g->nodes[root];
    cg_status st = cg_rw_add_node(g, "ew_fused", r->name, "/ew", s->n_leaves, s->leaves, &n, &out);
    if (!st) st = cg_node_set_string(n, "program", program);
    if (!st) st = cg_rw_redirect(g, r->outputs[0], out);
    return st;
}

/* Whether node i waits for its sole reader, into whose group it may grow
 * (-1: it will not; else that reader's index). */
static int absorbing_reader(const group *s, int i) {
    const int32_t v = s->g->nodes[i]->outputs[0];
    const cg_node *r = cg_rw_sole_reader(s->g, s->u, v);
    const int ri = r ? s->u->reader[v] : -1;
    if (ri < 0 || ri >= s->n0) return -1;
    if (fusable_index(s->g, r) < 0 || !cg_rw_same_shape(cg_rw_val(s->g, v), cg_rw_val(s->g, r->outputs[0]))) return -1;
    return ri;
}

/* Node i as a root: its group grown and, from two nodes on, fused. Marks
 * what it took. */
static cg_status take_root(cg_graph *g, group *s, uint8_t *done, int i, int *fired) {
    const int32_t v = g->nodes[i]->outputs[0];
    done[i] = 1;
    if (s->u->output[v]) return CG_OK; /* never touch a graph output */
    s->root = cg_rw_val(g, v);
    s->n_tok = s->depth = s->max_depth = s->n_leaves = s->n_members = 0;
    /* one node alone is left as it is, but for a pow by 2 or 3 (T5's
     * RMSNorm squares before its mean): its token spares a general pow */
    if (!grow(s, i) || (s->n_members < 2 && !const_power(g, g->nodes[i]))) return CG_OK;
    for (int m = 0; m < s->n_members; m++) done[s->members[m]] = 1;
    ++*fired;
    return emit(g, s, i);
}

/* Roots are taken downstream first: a node waits while its sole reader
 * may still grow into it, so each group is as large as the limits allow. */
static cg_status fuse_all(cg_graph *g, group *s, uint8_t *done, int *fired) {
    for (int progress = 1; progress;) {
        progress = 0;
        for (int i = s->n0 - 1; i >= 0; i--) {
            if (done[i] || !s->u->live[i] || fusable_index(g, g->nodes[i]) < 0) continue;
            const int r = absorbing_reader(s, i);
            if (r >= 0 && !done[r]) continue;
            cg_status st = take_root(g, s, done, i, fired);
            if (st) return st;
            progress = 1;
        }
    }
    return CG_OK;
}

static cg_status elementwise_run(cg_graph *g, int *fired) {
    if (!cg_registry_find(g->model->ctx, "ew_fused") || g->n_nodes == 0) return CG_OK;
    cg_rw_uses u;
    group s = {.g = g, .u = &u, .n0 = g->n_nodes};
    cg_status st = cg_rw_uses_make(g, &u);
    if (st) return st;
    uint8_t *done = calloc((size_t)s.n0, 1);
    s.members = malloc((size_t)s.n0 * sizeof *s.members);
    if (!done || !s.members) st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    else st = fuse_all(g, &s, done, fired);
    cg_rw_uses_free(&u);
    free(done), free(s.members);
    return st;
}

const cg_rewrite_pass cg_rewrite_elementwise = {
    "elementwise",
    "trees of f32 element-wise ops (add, sub, mul, div, pow, neg, erf, tanh, sigmoid, relu, exp, sqrt, abs, affine, "
    "hard_sigmoid: GELU, HardSwish, bias and residual adds) into one ew_fused node",
    elementwise_run,
};
