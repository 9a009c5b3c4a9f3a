/* Control flow decided by inputs given for the import, settled before
 * the nodes are imported. Dims: a given input whose dims reach an If's
 * condition or a Loop's trip count or condition through Shape or Size
 * (in the model's graph or a subgraph) takes its given value's dims, so
 * those shapes fold. Values: the condition of each If and the trip count
 * and condition of each Loop of the model's graph are evaluated on the
 * host from constants and given values (copies of the nodes that compute
 * them, folded as onnx_fold.c folds); where that succeeds, the given
 * inputs it read become constants of the graph, so every use of them
 * folds too. Either way the imported graph is made for what was given. */
#include "onnx_ctrl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

/* Deeper than this, a value is not evaluated (not worth it at import). */
#define EVAL_MAX_DEPTH 64

typedef struct eval_ctx {
    onnx_imp *im;
    const Onnx__GraphProto *gp;
    int n, cap;
    const char **from, **to; /* a value of the graph, its evaluated copy (names of values) */
    onnx_val **used;         /* the given inputs read */
    int n_used;
} eval_ctx;

static const char *memo(const eval_ctx *e, const char *name) {
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->from[i], name)) return e->to[i];
    return NULL;
}

static int remember(eval_ctx *e, const char *from, const char *to) {
    if (e->n == e->cap) {
        int cap = e->cap ? e->cap * 2 : 32;
        const char **f = realloc(e->from, (size_t)cap * sizeof *f);
        if (f) e->from = f;
        const char **t = f ? realloc(e->to, (size_t)cap * sizeof *t) : NULL;
        onnx_val **u = t ? realloc(e->used, (size_t)cap * sizeof *u) : NULL;
        if (t) e->to = t;
        if (!u) return 0;
        e->used = u;
        e->cap = cap;
    }
    e->from[e->n] = from;
    e->to[e->n++] = to;
    return 1;
}

/* A given input's value as a constant of its own ("x/given"). */
static const char *given_copy(eval_ctx *e, onnx_val *v) {
    char base[700];
    cg_tensor *t;
    const char *nm;
    snprintf(base, sizeof base, "%.600s/given", v->name);
    if (cg_tensor_convert(v->given, cg_tensor_dtype(v->given), &t) || onnx_ctrl_konst(e->im, base, t, &nm) ||
        !remember(e, v->name, nm))
        return NULL;
    e->used[e->n_used++] = v;
    return nm;
}

static const Onnx__NodeProto *producer(const Onnx__GraphProto *gp, const char *name, size_t *index) {
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t k = 0; k < gp->node[i]->n_output; k++)
            if (gp->node[i]->output[k] && !strcmp(gp->node[i]->output[k], name)) return *index = i, gp->node[i];
    return NULL;
}

static const char *eval(eval_ctx *e, const char *name, int depth);

/* Folds a copy of node p whose inputs are the evaluated `ins`; 1 when its
 * outputs are known (remembered), else 0. */
static int fold_copy(eval_ctx *e, const Onnx__NodeProto *p, size_t index, char **ins) {
    onnx_imp *im = e->im;
    char **outs = calloc(p->n_output + 1, sizeof *outs);
    int ok = outs != NULL;
    for (size_t k = 0; ok && k < p->n_output; k++) {
        char base[700];
        snprintf(base, sizeof base, "%.600s/at_import", p->output[k] ? p->output[k] : "");
        ok = (outs[k] = onnx_ctrl_unique(im, base)) != NULL;
    }
    Onnx__NodeProto c = *p;
    c.input = ins;
    c.output = outs;
    im->node = &c;
    im->node_index = (int)index;
    int f = ok ? cg_onnx_fold_sym(im) : -1;
    if (!f) f = cg_onnx_fold(im);
    im->bad_attr[0] = 0;
    for (size_t k = 0; f == 1 && k < p->n_output; k++) {
        onnx_val *v = onnx_val_find(im, outs[k]);
        /* a value of symbolic dims (their codes) decides nothing */
        if (p->output[k] && *p->output[k] &&
            !(v && v->konst && !onnx_has_sym(v->konst) && remember(e, p->output[k], v->name)))
            f = 0;
    }
    for (size_t k = 0; outs && k < p->n_output; k++) free(outs[k]);
    free(outs);
    return f == 1;
}

/* The name of a constant holding `name`'s value, or NULL when it cannot
 * be computed at import. */
static const char *eval(eval_ctx *e, const char *name, int depth) {
    const char *m = memo(e, name);
    if (m) return m;
    onnx_val *v = onnx_val_find(e->im, name);
    if (v && v->konst) return v->sym ? NULL : v->name;
    if (v && v->input) return v->given ? given_copy(e, v) : NULL;
    size_t index;
    const Onnx__NodeProto *p = producer(e->gp, name, &index);
    static const char *const ctrl[] = {"If", "Loop", "Scan"};
    if (!p || depth > EVAL_MAX_DEPTH || !p->op_type) return NULL;
    for (size_t i = 0; i < sizeof ctrl / sizeof ctrl[0]; i++)
        if (!strcmp(p->op_type, ctrl[i])) return NULL;
    /* Shape and Size read dims only: their input as it is (concrete dims fold) */
    const int dims_only = !strcmp(p->op_type, "Shape") || !strcmp(p->op_type, "Size");
    char **ins = calloc(p->n_input + 1, sizeof *ins);
    int ok = ins != NULL;
    for (size_t k = 0; ok && k < p->n_input; k++)
        ok = !p->input[k] || !*p->input[k] ||
             (ins[k] = dims_only ? p->input[k] : (char *)eval(e, p->input[k], depth + 1));
    for (size_t k = 0; ok && k < p->n_input; k++)
        if (!ins[k]) ins[k] = "";
    ok = ok && fold_copy(e, p, index, ins);
    free(ins);
    return ok ? memo(e, name) : NULL;
}

/* The given inputs read become constants: every use of them folds. */
static cg_status promote(eval_ctx *e) {
    for (int i = 0; i < e->n_used; i++) {
        onnx_val *v = e->used[i];
        if (v->konst) continue;
        cg_status s = cg_tensor_convert(v->given, cg_tensor_dtype(v->given), &v->konst);
        if (s) return s;
        v->input = 0;
        v->desc.dtype = v->konst->dtype;
        v->desc.ndim = v->konst->ndim;
        memcpy(v->desc.dims, v->konst->dims, sizeof v->desc.dims);
    }
    e->n_used = 0;
    return CG_OK;
}

/* v's symbolic dims as its given value has them. */
static void concretize(onnx_val *v) {
    const cg_tensor *t = v->given;
    if (cg_tensor_ndim(t) != v->desc.ndim) return; /* the import says so where it reads v */
    for (int k = 0; k < v->desc.ndim; k++)
        if (v->desc.dims[k] < 0) v->desc.dims[k] = cg_tensor_dim(t, k);
}

/* A graph and the graphs around it (a subgraph reads their values). */
typedef struct gchain {
    const Onnx__GraphProto *g;
    const struct gchain *up;
} gchain;

/* One node to visit, and whether a Shape or Size is on the path to it. */
typedef struct reach_item {
    const Onnx__NodeProto *p;
    const gchain *c;
    int shaped;
} reach_item;

typedef struct reach_ctx {
    reach_item *v;
    size_t n, cap, seen; /* v[0 .. seen) visited, v[seen .. n) to visit */
} reach_ctx;

static int reach_push(reach_ctx *r, const gchain *c, const char *name, int shaped) {
    size_t index;
    const Onnx__NodeProto *p = NULL;
    for (; c && !p; c = p ? c : c->up) p = producer(c->g, name, &index);
    for (size_t i = 0; p && i < r->n; i++)
        if (r->v[i].p == p && r->v[i].shaped == shaped) return 1;
    if (!p) return 1;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        reach_item *v = realloc(r->v, cap * sizeof *v);
        if (!v) return 0;
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = (reach_item){p, c, shaped};
    return 1;
}

/* The given inputs whose dims reach `name` of graph c through Shape or
 * Size (any path back from it, into the enclosing graphs too) take their
 * given value's dims. */
static cg_status reach_dims(eval_ctx *e, const gchain *c, const char *name) {
    reach_ctx r = {0};
    int ok = reach_push(&r, c, name, 0);
    while (ok && r.seen < r.n) {
        const reach_item it = r.v[r.seen++];
        const Onnx__NodeProto *p = it.p;
        const int shaped = it.shaped || (p->op_type && (!strcmp(p->op_type, "Shape") || !strcmp(p->op_type, "Size")));
        for (size_t k = 0; ok && k < p->n_input; k++) {
            if (!p->input[k] || !*p->input[k]) continue;
            onnx_val *v = onnx_val_find(e->im, p->input[k]);
            if (v && v->input && v->given && shaped) concretize(v);
            if (!(v && (v->input || v->konst))) ok = reach_push(&r, it.c, p->input[k], shaped);
        }
    }
    free(r.v);
    return ok ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory");
}

/* The inputs of n that decide what is imported: If's condition, Loop's
 * trip count and condition. */
static int deciding_inputs(const Onnx__NodeProto *n) {
    if (!n->op_type || (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))) return 0;
    if (!strcmp(n->op_type, "If")) return 1;
    if (!strcmp(n->op_type, "Loop")) return 2;
    return 0;
}

/* reach_dims for the deciding inputs of every node of c's graph and of
 * the subgraphs in it. */
static cg_status dims_deciding(eval_ctx *e, const gchain *c) {
    cg_status s = CG_OK;
    for (size_t i = 0; !s && i < c->g->n_node; i++) {
        const Onnx__NodeProto *n = c->g->node[i];
        for (int k = 0; !s && k < deciding_inputs(n) && (size_t)k < n->n_input; k++)
            if (n->input[k] && *n->input[k]) s = reach_dims(e, c, n->input[k]);
        for (size_t a = 0; !s && a < n->n_attribute; a++)
            if (n->attribute[a]->g) {
                const gchain sub = {n->attribute[a]->g, c};
                s = dims_deciding(e, &sub);
            }
    }
    return s;
}

cg_status cg_onnx_ctrl_prepare(onnx_imp *im, const Onnx__GraphProto *gp) {
    if (!im->opt || !im->opt->n_given) return CG_OK;
    eval_ctx e = {.im = im, .gp = gp};
    cg_status s = CG_OK;
    const gchain top = {gp, NULL};
    s = dims_deciding(&e, &top); /* dims first: values may read them */
    for (size_t i = 0; !s && i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (int k = 0; !s && k < deciding_inputs(n) && (size_t)k < n->n_input; k++) {
            if (!n->input[k] || !*n->input[k]) continue;
            const int known = e.n;
            if (eval(&e, n->input[k], 0)) s = promote(&e);
            else e.n = known, e.n_used = 0; /* not computable: the inputs it read stay inputs */
        }
    }
    im->node = NULL;
    free(e.from);
    free(e.to);
    free(e.used);
    return s;
}
