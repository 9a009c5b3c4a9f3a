/* Subgraphs (the bodies of If, Loop and Scan) imported into the one
 * clgraph graph: a subgraph's nodes are copied with the values they define
 * renamed (unique per branch and iteration: "/Loop/iter2/Add_output_0")
 * and the names they read from enclosing scopes looked up there, then
 * imported by the driver like the file's own nodes, so folding, the op
 * mappings and the fusions apply inside as outside. The copies live while
 * their subgraph is imported; the values they made stay. */
#include "onnx_ctrl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

/* The names of one subgraph being imported. */
typedef struct onnx_scope {
    struct onnx_scope *parent;
    char *prefix;      /* joined before the names defined inside ("": kept as they are) */
    const char *label; /* for nameless nodes */
    int n, cap;
    char **from, **to; /* a name of the subgraph, the importer's value name (owned) */
    const onnx_ctrl_frame *frame;
    void **blocks; /* the copy's allocations */
    int n_blocks, cap_blocks;
} onnx_scope;

static cg_status oom(void) { return cg_error(CG_ERR_NO_MEMORY, "out of memory"); }

/* a then b as one name: "/Loop/iter2" and "/Loop/Add" give "/Loop/iter2/Loop/Add" */
static char *join(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 2);
    if (!s) return NULL;
    if (!la) memcpy(s, b, lb + 1);
    else snprintf(s, la + lb + 2, "%s%s%s", a, b[0] == '/' ? "" : "/", b);
    return s;
}

static void *sc_alloc(onnx_scope *sc, size_t size) {
    if (sc->n_blocks == sc->cap_blocks) {
        int cap = sc->cap_blocks ? sc->cap_blocks * 2 : 16;
        void **b = realloc(sc->blocks, (size_t)cap * sizeof *b);
        if (!b) return NULL;
        sc->blocks = b;
        sc->cap_blocks = cap;
    }
    void *p = calloc(1, size ? size : 1);
    if (p) sc->blocks[sc->n_blocks++] = p;
    return p;
}

/* Binds `from` to the value name `to` (taken); 0 on no memory. */
static int bind(onnx_scope *sc, const char *from, char *to) {
    if (sc->n == sc->cap) {
        int cap = sc->cap ? sc->cap * 2 : 32;
        char **f = realloc(sc->from, (size_t)cap * sizeof *f);
        if (f) sc->from = f;
        char **t = f ? realloc(sc->to, (size_t)cap * sizeof *t) : NULL;
        if (!t) return free(to), 0;
        sc->to = t;
        sc->cap = cap;
    }
    if (!to || !(sc->from[sc->n] = strdup(from))) return free(to), 0;
    sc->to[sc->n++] = to;
    return 1;
}

/* What `name` is in the subgraphs being imported, innermost first (the
 * last binding wins); the file's name outside all of them. */
static const char *lookup(const onnx_imp *im, const char *name) {
    for (const onnx_scope *sc = im->scope; sc; sc = sc->parent)
        for (int i = sc->n - 1; i >= 0; i--)
            if (!strcmp(sc->from[i], name)) return sc->to[i];
    return name;
}

static int name_used(onnx_imp *im, const onnx_scope *sc, const char *name) {
    if (onnx_val_find(im, name) || cg_graph_find_value(im->g, name) >= 0) return 1;
    for (int i = 0; sc && i < sc->n; i++)
        if (!strcmp(sc->to[i], name)) return 1;
    return 0;
}

/* base, or base_2, base_3 ... where base is taken (malloc'ed). */
static char *unique(onnx_imp *im, const onnx_scope *sc, const char *base) {
    size_t size = strlen(base) + 24;
    char *s = malloc(size);
    if (!s) return NULL;
    snprintf(s, size, "%s", base);
    for (int k = 2; name_used(im, sc, s); k++) snprintf(s, size, "%s_%d", base, k);
    return s;
}

/* The importer's name for `name`, defined in the scope being copied. */
static const char *define(onnx_imp *im, onnx_scope *sc, const char *name) {
    const onnx_ctrl_frame *f = sc->frame;
    for (int i = 0; i < f->n_preset; i++)
        if (!strcmp(f->preset_from[i], name)) return bind(sc, name, strdup(f->preset_to[i])) ? sc->to[sc->n - 1] : NULL;
    char *j = join(sc->prefix, name), *u = j ? unique(im, sc, j) : NULL;
    free(j);
    return bind(sc, name, u) ? sc->to[sc->n - 1] : NULL;
}

static cg_status push(onnx_imp *im, const onnx_ctrl_frame *f, const Onnx__GraphProto *g) {
    int depth = 1;
    for (const onnx_scope *p = im->scope; p; p = p->parent) depth++;
    if (depth > ONNX_CTRL_MAX_DEPTH)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "subgraphs nested more than %d deep", ONNX_CTRL_MAX_DEPTH);
    /* nested loops multiply: every copied node counts */
    if ((im->unrolled += (int64_t)g->n_node) > ONNX_CTRL_MAX_UNROLL)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "the subgraphs unroll into more than %d nodes: clgraph unrolls loops at import",
                         ONNX_CTRL_MAX_UNROLL);
    onnx_scope *sc = calloc(1, sizeof *sc);
    const char *prefix = f->prefix ? f->prefix : im->scope ? im->scope->prefix : "";
    if (!sc || !(sc->prefix = strdup(prefix))) return free(sc), oom();
    sc->label = f->label;
    sc->frame = f;
    sc->parent = im->scope;
    im->scope = sc;
    return CG_OK;
}

static void pop(onnx_imp *im) {
    onnx_scope *sc = im->scope;
    im->scope = sc->parent;
    for (int i = 0; i < sc->n; i++) {
        free(sc->from[i]);
        free(sc->to[i]);
    }
    for (int i = 0; i < sc->n_blocks; i++) free(sc->blocks[i]);
    free(sc->from);
    free(sc->to);
    free(sc->blocks);
    free(sc->prefix);
    free(sc);
}

/* ---- copies ---- */

static char *node_copy_name(onnx_scope *sc, const Onnx__NodeProto *o, size_t i) {
    char gen[200];
    if (o->name && *o->name) return join(sc->prefix, o->name);
    snprintf(gen, sizeof gen, "%s_%zu", o->op_type ? o->op_type : "node", i);
    return join(sc->label, gen);
}

/* Node o with its names as the importer has them (a shallow copy: the
 * attributes, nested subgraphs included, are the file's). */
static Onnx__NodeProto *copy_node(onnx_imp *im, onnx_scope *sc, const Onnx__NodeProto *o, size_t i) {
    Onnx__NodeProto *n = sc_alloc(sc, sizeof *n);
    char *name = node_copy_name(sc, o, i);
    if (!n || !name || !(n->input = sc_alloc(sc, o->n_input * sizeof *n->input)) ||
        !(n->output = sc_alloc(sc, o->n_output * sizeof *n->output)))
        return free(name), NULL;
    *n = (Onnx__NodeProto){.base = o->base,
                           .n_input = o->n_input,
                           .input = n->input,
                           .n_output = o->n_output,
                           .output = n->output,
                           .op_type = o->op_type,
                           .domain = o->domain,
                           .n_attribute = o->n_attribute,
                           .attribute = o->attribute};
    if (!(n->name = sc_alloc(sc, strlen(name) + 1))) return free(name), NULL;
    strcpy(n->name, name);
    free(name);
    for (size_t k = 0; k < o->n_input; k++)
        n->input[k] = (char *)(o->input[k] && *o->input[k] ? lookup(im, o->input[k]) : "");
    for (size_t k = 0; k < o->n_output; k++) {
        const char *d = o->output[k] && *o->output[k] ? define(im, sc, o->output[k]) : "";
        if (!d) return NULL;
        n->output[k] = (char *)d;
    }
    return n;
}

/* The subgraph's initializers as values known at import. */
static cg_status read_initializers(onnx_imp *im, onnx_scope *sc, const Onnx__GraphProto *g) {
    if (g->n_sparse_initializer) return onnx_fail(im, CG_ERR_UNSUPPORTED, "a subgraph with sparse initializers");
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        if (!t->name || !*t->name) return onnx_fail(im, CG_ERR_FORMAT, "a subgraph initializer has no name");
        const char *nm = define(im, sc, t->name);
        onnx_val *v = nm ? onnx_val_get(im, nm) : NULL;
        if (!v) return oom();
        char what[700];
        snprintf(what, sizeof what, "initializer '%.600s'", t->name);
        cg_status s = cg_onnx_tensor(t, im->dir, im->path, what, &v->konst);
        if (s) return s;
        v->typed = 1;
        v->desc.dtype = v->konst->dtype;
        v->desc.ndim = v->konst->ndim;
        memcpy(v->desc.dims, v->konst->dims, sizeof v->desc.dims);
    }
    return CG_OK;
}

static cg_status copy_graph(onnx_imp *im, onnx_scope *sc, const Onnx__GraphProto *g, Onnx__GraphProto **out) {
    Onnx__GraphProto *c = sc_alloc(sc, sizeof *c);
    if (!c) return oom();
    *c = (Onnx__GraphProto)ONNX__GRAPH_PROTO__INIT;
    cg_status s = read_initializers(im, sc, g);
    if (s) return s;
    if (!(c->node = sc_alloc(sc, g->n_node * sizeof *c->node)) ||
        !(c->output = sc_alloc(sc, g->n_output * sizeof *c->output)))
        return oom();
    for (size_t i = 0; i < g->n_node; i++)
        if (!(c->node[i] = copy_node(im, sc, g->node[i], i))) return oom();
    c->n_node = g->n_node;
    for (size_t k = 0; k < g->n_output; k++) {
        Onnx__ValueInfoProto *vi = sc_alloc(sc, sizeof *vi);
        if (!vi) return oom();
        *vi = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
        vi->name = (char *)lookup(im, g->output[k]->name ? g->output[k]->name : "");
        c->output[k] = vi;
    }
    c->n_output = g->n_output;
    *out = c;
    return CG_OK;
}

/* Binds the subgraph's inputs to the actual values. */
static cg_status bind_inputs(onnx_imp *im, onnx_scope *sc, const Onnx__GraphProto *g, const onnx_ctrl_frame *f) {
    if ((int)g->n_input != f->n_actual)
        return onnx_fail(im, CG_ERR_FORMAT, "the subgraph has %zu inputs, %d expected", g->n_input, f->n_actual);
    for (int i = 0; i < f->n_actual; i++) {
        const char *nm = g->input[i]->name;
        if (!nm || !*nm) return onnx_fail(im, CG_ERR_FORMAT, "subgraph input %d has no name", i);
        if (!bind(sc, nm, strdup(f->actual[i]))) return oom();
    }
    return CG_OK;
}

cg_status onnx_ctrl_body(onnx_imp *im, const Onnx__GraphProto *g, const onnx_ctrl_frame *f, const char **outs) {
    cg_status s = push(im, f, g);
    if (s) return s;
    onnx_scope *sc = im->scope;
    Onnx__GraphProto *c = NULL;
    if (!(s = bind_inputs(im, sc, g, f)) && !(s = copy_graph(im, sc, g, &c))) s = onnx_import_nodes(im, c);
    for (size_t k = 0; !s && k < c->n_output; k++) {
        onnx_val *v = onnx_val_find(im, c->output[k]->name);
        if (!v || !(v->typed || v->input))
            s = onnx_fail(im, CG_ERR_FORMAT, "subgraph output '%s' is never computed",
                          g->output[k]->name ? g->output[k]->name : "");
        else outs[k] = v->name;
    }
    pop(im);
    return s;
}

/* ---- nodes and values the importer makes ---- */

cg_status onnx_ctrl_node(onnx_imp *im, const char *op, const char *name, int n_in, const char *const *ins,
                         const char *out, const char *key, int64_t val, int list) {
    Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT, *ap[1] = {&a};
    Onnx__NodeProto n = ONNX__NODE_PROTO__INIT, *np[1] = {&n};
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    char *outs[1] = {(char *)out};
    a.name = (char *)key;
    if (list) {
        a.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        a.n_ints = 1;
        a.ints = &val;
    } else {
        a.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        a.has_i = 1;
        a.i = val;
    }
    n.n_input = (size_t)n_in;
    n.input = (char **)ins;
    n.n_output = 1;
    n.output = outs;
    n.name = (char *)name;
    n.op_type = (char *)op;
    n.n_attribute = key ? 1 : 0;
    n.attribute = ap;
    g.n_node = 1;
    g.node = np;
    return onnx_import_nodes(im, &g);
}

char *onnx_ctrl_unique(onnx_imp *im, const char *base) { return unique(im, im->scope, base); }

cg_status onnx_ctrl_konst(onnx_imp *im, const char *base, cg_tensor *t, const char **name) {
    char *u = unique(im, im->scope, base);
    onnx_val *v = u ? onnx_val_get(im, u) : NULL;
    free(u);
    if (!v) return cg_tensor_free(t), oom();
    v->konst = t;
    v->typed = 1;
    v->desc.dtype = t->dtype;
    v->desc.ndim = t->ndim;
    memcpy(v->desc.dims, t->dims, sizeof v->desc.dims);
    *name = v->name;
    return CG_OK;
}

const char *onnx_ctrl_node_name(const onnx_imp *im, char *buf, size_t size) {
    const Onnx__NodeProto *n = im->node;
    if (n->name && *n->name) snprintf(buf, size, "%s", n->name);
    else snprintf(buf, size, "%s_%d", n->op_type, im->node_index);
    return buf;
}

cg_status onnx_ctrl_graph_attr(onnx_imp *im, const char *key, const Onnx__GraphProto **g) {
    const Onnx__AttributeProto *a = onnx_attr_typed(im, key, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    *g = a ? a->g : NULL;
    if (!*g) return onnx_fail(im, CG_ERR_FORMAT, "attribute '%s' (a graph) is missing", key);
    return CG_OK;
}

int cg_onnx_graph_reads(const Onnx__GraphProto *gp, const char *name) {
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (size_t k = 0; k < n->n_input; k++)
            if (n->input[k] && !strcmp(n->input[k], name)) return 1;
        for (size_t k = 0; k < n->n_attribute; k++) {
            const Onnx__AttributeProto *a = n->attribute[k];
            if (a->g && cg_onnx_graph_reads(a->g, name)) return 1;
            for (size_t j = 0; j < a->n_graphs; j++)
                if (cg_onnx_graph_reads(a->graphs[j], name)) return 1;
        }
    }
    for (size_t k = 0; k < gp->n_output; k++)
        if (gp->output[k]->name && !strcmp(gp->output[k]->name, name)) return 1;
    return 0;
}
