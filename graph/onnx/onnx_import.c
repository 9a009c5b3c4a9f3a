/* The ONNX importer's driver: graph inputs and initializers, each node in
 * file order (folded on the host when its inputs are known, else mapped to
 * clgraph ops by onnx_ops.c), the outputs, the weights, verification. */
#include "onnx_imp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "error.h"
#include "hash.h"
#include "rewrite.h"
#include "settings.h"
#include "shape.h"
#include "weights.h"

/* ---- values by name ---- */

static uint32_t hash_name(const char *s) { return (uint32_t)cg_fnv1a_str(CG_FNV_BASIS, s); }

static int32_t find_val(const onnx_imp *im, const char *name) {
    if (!im->cap_index) return -1;
    for (uint32_t i = hash_name(name) & (im->cap_index - 1);; i = (i + 1) & (im->cap_index - 1)) {
        int32_t v = im->index[i];
        if (v < 0) return -1;
        if (!strcmp(im->vals[v]->name, name)) return v;
    }
}

static int grow_index(onnx_imp *im) {
    uint32_t cap = im->cap_index ? im->cap_index * 2 : 64;
    int32_t *ix = malloc(cap * sizeof *ix);
    if (!ix) return 0;
    for (uint32_t i = 0; i < cap; i++) ix[i] = -1;
    for (int32_t v = 0; v < im->n_vals; v++) {
        uint32_t i = hash_name(im->vals[v]->name) & (cap - 1);
        while (ix[i] >= 0) i = (i + 1) & (cap - 1);
        ix[i] = v;
    }
    free(im->index);
    im->index = ix;
    im->cap_index = cap;
    return 1;
}

onnx_val *onnx_val_get(onnx_imp *im, const char *name) {
    int32_t v = find_val(im, name);
    if (v >= 0) return im->vals[v];
    if ((uint32_t)(im->n_vals + 1) * 2 > im->cap_index && !grow_index(im)) return NULL;
    if (im->n_vals == im->cap_vals) {
        int cap = im->cap_vals ? im->cap_vals * 2 : 64;
        onnx_val **nv = realloc(im->vals, (size_t)cap * sizeof *nv);
        if (!nv) return NULL;
        im->vals = nv;
        im->cap_vals = cap;
    }
    /* one allocation each: pointers to values stay valid as more come */
    onnx_val *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    if (!(x->name = strdup(name))) {
        free(x);
        return NULL;
    }
    im->vals[im->n_vals] = x;
    uint32_t i = hash_name(name) & (im->cap_index - 1);
    while (im->index[i] >= 0) i = (i + 1) & (im->cap_index - 1);
    im->index[i] = im->n_vals++;
    return x;
}

/* ---- messages ---- */

cg_status onnx_fail(onnx_imp *im, cg_status st, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const Onnx__NodeProto *n = im->node;
    if (!n) return cg_error(st, "%s: %s", im->path, msg);
    return cg_error(st, "%s: node '%s' (%s, #%d): %s", im->path, n->name && *n->name ? n->name : "",
                    n->op_type ? n->op_type : "", im->node_index, msg);
}

onnx_val *onnx_in(onnx_imp *im, int i) {
    const Onnx__NodeProto *n = im->node;
    if (i < 0 || (size_t)i >= n->n_input || !n->input[i] || !n->input[i][0]) return NULL;
    int32_t v = find_val(im, n->input[i]);
    return v < 0 ? NULL : im->vals[v];
}

/* ---- attributes ---- */

const Onnx__AttributeProto *onnx_attr(const onnx_imp *im, const char *name) {
    const Onnx__NodeProto *n = im->node;
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name)) return n->attribute[i];
    return NULL;
}

static const char *attr_type_name(Onnx__AttributeProto__AttributeType t) {
    static const char *const names[] = {
        "UNDEFINED", "FLOAT",   "INT",    "STRING",        "TENSOR",         "GRAPH",      "FLOATS",     "INTS",
        "STRINGS",   "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "an unknown type";
}

/* An attribute's type: the declared one, or for files that leave it out
 * (UNDEFINED) the one its filled field implies; UNDEFINED when none is. */
static Onnx__AttributeProto__AttributeType attr_type(const Onnx__AttributeProto *a) {
    if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED) return a->type;
    return a->has_f       ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT
           : a->has_i     ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT
           : a->has_s     ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING
           : a->t         ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR
           : a->g         ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH
           : a->n_floats  ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS
           : a->n_ints    ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS
           : a->n_strings ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS
                          : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

int onnx_attr_check(onnx_imp *im, const Onnx__AttributeProto *a, Onnx__AttributeProto__AttributeType want) {
    Onnx__AttributeProto__AttributeType t = attr_type(a);
    if (t == want || t == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED) return 1;
    if (!im->bad_attr[0])
        snprintf(im->bad_attr, sizeof im->bad_attr, "attribute '%.200s' is %s, expected %s", a->name ? a->name : "",
                 attr_type_name(t), attr_type_name(want));
    return 0;
}

/* Every value an op mapping reads goes through here: an attribute of
 * another type than the op defines (Softmax's axis as a FLOAT) is noted
 * for the node's error (import_graph) instead of being read as absent, and
 * so silently taken as the default. */
const Onnx__AttributeProto *onnx_attr_typed(onnx_imp *im, const char *name, Onnx__AttributeProto__AttributeType want) {
    const Onnx__AttributeProto *a = onnx_attr(im, name);
    return a && onnx_attr_check(im, a, want) ? a : NULL;
}

int64_t onnx_attr_int(onnx_imp *im, const char *name, int64_t def) {
    const Onnx__AttributeProto *a = onnx_attr_typed(im, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    return a && a->has_i ? a->i : def;
}

double onnx_attr_float(onnx_imp *im, const char *name, double def) {
    const Onnx__AttributeProto *a = onnx_attr_typed(im, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    return a && a->has_f ? a->f : def;
}

const int64_t *onnx_attr_ints(onnx_imp *im, const char *name, int *n) {
    const Onnx__AttributeProto *a = onnx_attr_typed(im, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    *n = -1;
    if (!a || (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS && !a->n_ints)) return NULL;
    *n = (int)a->n_ints;
    return a->ints;
}

cg_status onnx_check_attrs(onnx_imp *im, const char *const *known) {
    const Onnx__NodeProto *n = im->node;
    for (size_t i = 0; i < n->n_attribute; i++) {
        const char *name = n->attribute[i]->name ? n->attribute[i]->name : "";
        /* opsets 1 to 6 hint buffer reuse with consumed_inputs; it changes
         * no result */
        int ok = im->opset < 7 && !strcmp(name, "consumed_inputs");
        for (int k = 0; known && known[k] && !ok; k++) ok = !strcmp(known[k], name);
        if (!ok) return onnx_fail(im, CG_ERR_UNSUPPORTED, "attribute '%s' is not supported", name);
    }
    return CG_OK;
}

/* ---- emission ---- */

const char *onnx_fresh(onnx_imp *im, const char *what) {
    static _Thread_local char buf[600];
    const Onnx__NodeProto *n = im->node;
    const char *base = n && n->name && *n->name ? n->name : n && n->n_output ? n->output[0] : "onnx";
    do snprintf(buf, sizeof buf, "%.400s/%s_%d", base, what, ++im->uniq);
    while (find_val(im, buf) >= 0 || cg_graph_find_value(im->g, buf) >= 0);
    return buf;
}

cg_status onnx_const_param(onnx_imp *im, cg_tensor *t, const char **name) {
    const char *nm = onnx_fresh(im, "const");
    onnx_val *v = onnx_val_get(im, nm);
    if (!v) {
        cg_tensor_free(t);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    v->konst = t;
    v->typed = 1;
    v->desc.dtype = t->dtype;
    v->desc.ndim = t->ndim;
    memcpy(v->desc.dims, t->dims, sizeof t->dims);
    *name = v->name;
    return onnx_use(im, v);
}

static cg_status add_param(onnx_imp *im, onnx_val *v) {
    if (im->n_params == im->cap_params) {
        int cap = im->cap_params ? im->cap_params * 2 : 32;
        char **nn = realloc(im->param_names, (size_t)cap * sizeof *nn);
        if (nn) im->param_names = nn;
        cg_tensor **nt = nn ? realloc(im->param_tensors, (size_t)cap * sizeof *nt) : NULL;
        if (!nt) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        im->param_tensors = nt;
        im->cap_params = cap;
    }
    cg_dim dims[CG_MAX_DIMS];
    for (int i = 0; i < v->konst->ndim; i++) dims[i] = CG_DIM(v->konst->dims[i]);
    if (cg_graph_add_param(im->g, v->name, v->name, v->konst->dtype, v->konst->ndim, dims))
        return onnx_fail(im, CG_ERR_FORMAT, "%s", cg_last_error());
    im->param_names[im->n_params] = v->name;
    im->param_tensors[im->n_params++] = v->konst;
    return CG_OK;
}

cg_status onnx_use(onnx_imp *im, onnx_val *v) {
    if (v->emitted) return CG_OK;
    if (v->sym) return onnx_sym_materialize(im, v);
    if (v->fill) return onnx_materialize(im, v);
    if (v->konst) {
        cg_status s = add_param(im, v);
        if (!s) v->emitted = 1;
        return s;
    }
    if (v->input) { /* declared at the end, in the file's order */
        v->emitted = 1;
        return CG_OK;
    }
    return onnx_fail(im, CG_ERR_VERIFY,
                     "input '%s' is not defined before this node (the graph is not in "
                     "topological order, or has a cycle)",
                     v->name);
}

const cg_tensor *onnx_known(onnx_val *v) {
    if (!v) return NULL;
    if (v->konst) return v->konst;
    if (v->given) v->fixed = 1;
    return v->given;
}

cg_status onnx_need_const(onnx_imp *im, onnx_val *v, const char *what, const cg_tensor **out) {
    if ((*out = onnx_known(v))) return CG_OK;
    if (!v) return onnx_fail(im, CG_ERR_UNSUPPORTED, "%s is missing", what);
    return onnx_fail(im, CG_ERR_UNSUPPORTED,
                     "%s ('%s') must be known at import: a constant, computed from constants, or a graph "
                     "input whose value is given (clgraph run --input gives them)",
                     what, v->name);
}

cg_status onnx_set_const(onnx_imp *im, int o, cg_tensor *t) {
    const Onnx__NodeProto *n = im->node;
    if ((size_t)o >= n->n_output || !n->output[o] || !n->output[o][0]) {
        cg_tensor_free(t);
        return CG_OK;
    }
    onnx_val *v = onnx_val_get(im, n->output[o]);
    if (!v) {
        cg_tensor_free(t);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    if (v->typed || v->konst || v->input) {
        cg_tensor_free(t);
        return onnx_fail(im, CG_ERR_FORMAT, "output '%s' is already defined", v->name);
    }
    v->konst = t;
    v->typed = 1;
    v->desc.dtype = t->dtype;
    v->desc.ndim = t->ndim;
    memcpy(v->desc.dims, t->dims, sizeof t->dims);
    return CG_OK;
}

/* The output types of node by its op's inference, into the values. */
static cg_status infer_outputs(onnx_imp *im, cg_node *node) {
    const cg_op_entry *op = cg_registry_find(im->ctx, node->op);
    if (!op) return onnx_fail(im, CG_ERR_UNSUPPORTED, "clgraph has no operator '%s'", node->op);
    cg_tensor_desc in[ONNX_MAX_IO], out[ONNX_MAX_IO];
    if (node->n_inputs > ONNX_MAX_IO || node->n_outputs > ONNX_MAX_IO)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "too many inputs or outputs");
    for (int i = 0; i < node->n_inputs; i++) {
        int32_t v = find_val(im, node->in_names[i]);
        if (v < 0 || !im->vals[v]->typed)
            return onnx_fail(im, CG_ERR_VERIFY, "input '%s' has no known type", node->in_names[i]);
        in[i] = im->vals[v]->desc;
    }
    cg_attr_value *av = calloc((size_t)op->def->n_attrs + 1, sizeof *av);
    if (!av) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    cg_status s = cg_node_resolve_attrs(im->m, node, op->def, av);
    if (!s) s = cg_call_infer(im->m, node->name, 0, 0, op, av, node->n_inputs, in, node->n_outputs, out, 0);
    free(av);
    if (s) { /* the reason alone: the file and node are said once, by onnx_fail */
        char key[700];
        const char *msg = cg_last_error();
        snprintf(key, sizeof key, "%s '%s': ", node->op, node->name);
        const char *r = strstr(msg, key);
        return onnx_fail(im, s, "as clgraph's %s: %s", node->op, r ? r + strlen(key) : msg);
    }
    if (node->n_outputs >= 1) onnx_sym_refine(im, node, in, &out[0]);
    for (int i = 0; i < node->n_outputs; i++) {
        cg_graph_pin_desc(im->g, &out[i]);
        onnx_val *v = onnx_val_get(im, im->g->values[node->outputs[i]].name);
        if (!v) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        v->typed = 1;
        v->emitted = 1;
        v->desc = out[i];
    }
    return CG_OK;
}

cg_status onnx_emit(onnx_imp *im, const char *op, int n_in, const char *const *ins, int n_out, const char **outs,
                    const char *attrs) {
    const Onnx__NodeProto *n = im->node;
    char name[600];
    const char *base = n->name && *n->name ? n->name : NULL;
    char gen[64];
    if (!base) {
        snprintf(gen, sizeof gen, "%s_%d", n->op_type ? n->op_type : "node", im->node_index);
        base = gen;
    }
    if (im->n_emitted++) snprintf(name, sizeof name, "%.500s/%d", base, im->n_emitted);
    else snprintf(name, sizeof name, "%.500s", base);
    char fresh[ONNX_MAX_IO][600];
    if (n_out > ONNX_MAX_IO) return onnx_fail(im, CG_ERR_UNSUPPORTED, "too many outputs");
    for (int i = 0; i < n_out; i++)
        if (!outs[i]) {
            snprintf(fresh[i], sizeof fresh[i], "%s", onnx_fresh(im, "t"));
            if (!onnx_val_get(im, fresh[i])) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
            outs[i] = fresh[i];
        }
    for (int i = 0; i < n_in; i++) {
        onnx_val *v = onnx_val_get(im, ins[i]);
        if (!v) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        cg_status s = onnx_use(im, v);
        if (s) return s;
    }
    cg_node *node;
    cg_status s = cg_graph_add_node(im->g, op, name, n_in, ins, n_out, outs, &node);
    if (s) return onnx_fail(im, s, "%s", cg_last_error());
    if (attrs && *attrs && (s = cg_parse_attr_list(attrs, node)))
        return onnx_fail(im, s, "attributes of clgraph's %s: %s", op, cg_last_error());
    s = infer_outputs(im, node);
    /* fresh names point into this frame: the values keep copies */
    for (int i = 0; i < n_out; i++)
        if (outs[i] == fresh[i]) outs[i] = im->vals[find_val(im, fresh[i])]->name;
    return s;
}

/* ---- the graph ---- */

cg_status onnx_input_type(onnx_imp *im, const Onnx__TypeProto *tp, onnx_val *v) {
    if (tp && (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ||
               tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE))
        return cg_onnx_seq_input(im, tp, v);
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "graph input '%s' is not a tensor, sequence or optional (maps and "
                         "sparse tensors are not supported)",
                         v->name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    cg_dtype dt = cg_onnx_dtype(tt->elem_type);
    if (!dt) /* DOUBLE is read as f32 (cg_onnx_dtype): clgraph computes it in f32 */
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "graph input '%s': element type %s is not supported", v->name,
                         cg_onnx_type_name(tt->elem_type));
    if (!tt->shape)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "graph input '%s' has no shape (its rank must be known)", v->name);
    if (tt->shape->n_dim > CG_MAX_DIMS)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "graph input '%s' has %zu dims (at most %d)", v->name,
                         tt->shape->n_dim, CG_MAX_DIMS);
    v->desc.dtype = dt;
    v->desc.ndim = (int)tt->shape->n_dim;
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        char sym[600];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0) {
            v->desc.dims[i] = d->dim_value;
            continue;
        }
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param && *d->dim_param)
            snprintf(sym, sizeof sym, "%s", d->dim_param);
        else /* unnamed: a symbol of its own */ snprintf(sym, sizeof sym, "%.500s.dim%zu", v->name, i);
        int k = cg_model_sym(im->m, sym);
        if (k < 0) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        v->desc.dims[i] = CG_DIM_SYM(k);
    }
    v->typed = 1;
    return CG_OK;
}

static cg_status read_inputs(onnx_imp *im, const Onnx__GraphProto *gp) {
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        if (!t->name || !*t->name) return onnx_fail(im, CG_ERR_FORMAT, "initializer %zu has no name", i);
        onnx_val *v = onnx_val_get(im, t->name);
        if (!v) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        if (v->konst) return onnx_fail(im, CG_ERR_FORMAT, "initializer '%s' is defined twice", t->name);
        char what[700];
        snprintf(what, sizeof what, "initializer '%.600s'", t->name);
        cg_status s = cg_onnx_tensor(t, im->dir, im->path, what, &v->konst);
        if (s) return s;
        v->typed = 1;
        v->desc.dtype = v->konst->dtype;
        v->desc.ndim = v->konst->ndim;
        memcpy(v->desc.dims, v->konst->dims, sizeof v->desc.dims);
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !*vi->name) return onnx_fail(im, CG_ERR_FORMAT, "graph input %zu has no name", i);
        onnx_val *v = onnx_val_get(im, vi->name);
        if (!v) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        if (v->konst) continue; /* an initializer listed as an input (IR < 4): a constant */
        if (v->input) return onnx_fail(im, CG_ERR_FORMAT, "graph input '%s' is listed twice", vi->name);
        cg_status s = onnx_input_type(im, vi->type, v);
        if (s) return s;
        if (v->seq || v->none) continue; /* its elements are the inputs (onnx_seq.c) */
        v->input = 1;
        memcpy(v->declared, v->desc.dims, sizeof v->declared);
        cg_graph_pin_desc(im->g, &v->desc);
        for (int k = 0; im->opt && k < im->opt->n_given; k++)
            if (im->opt->given_names[k] && !strcmp(im->opt->given_names[k], vi->name)) v->given = im->opt->given[k];
    }
    return CG_OK;
}

/* Declares input v where it is used as data. */
static cg_status declare_input(onnx_imp *im, onnx_val *v) {
    if (!v->input || !v->emitted) return CG_OK;
    /* a value fixed at import must not be fed another at run time */
    if (v->fixed)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "input '%s' is used both where its value must be known at "
                         "import (a shape, a count) and as data; clgraph needs it as a constant",
                         v->name);
    cg_dim dims[CG_MAX_DIMS];
    for (int k = 0; k < v->desc.ndim; k++) {
        int64_t d = v->declared[k];
        dims[k] = d >= 0 ? CG_DIM(d) : CG_SYM(im->m->syms[-2 - d]);
    }
    if (cg_graph_add_input(im->g, v->name, (cg_dtype)v->desc.dtype, v->desc.ndim, dims))
        return onnx_fail(im, CG_ERR_FORMAT, "%s", cg_last_error());
    return CG_OK;
}

/* Declares the inputs used as data, in the file's order (a sequence's
 * elements in theirs). */
static cg_status declare_inputs(onnx_imp *im, const Onnx__GraphProto *gp) {
    for (size_t i = 0; i < gp->n_input; i++) {
        onnx_val *v = im->vals[find_val(im, gp->input[i]->name)];
        cg_status s = declare_input(im, v);
        for (int e = 0; !s && v->seq && e < v->n_elems; e++) s = declare_input(im, onnx_val_get(im, v->elems[e]));
        if (s) return s;
    }
    return CG_OK;
}

static cg_status check_opset(onnx_imp *im) {
    const Onnx__ModelProto *mp = im->proto;
    im->opset = -1;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if (o->domain && *o->domain && strcmp(o->domain, "ai.onnx")) continue;
        im->opset = o->has_version ? o->version : 1;
    }
    if (im->opset < 0) im->opset = 1; /* no opset_import: IR version 1-2 files */
    if (im->opset > CG_ONNX_OPSET_MAX)
        return cg_error(CG_ERR_UNSUPPORTED,
                        "%s: opset %lld of the default domain is newer than clgraph reads "
                        "(%d to %d)",
                        im->path, (long long)im->opset, CG_ONNX_OPSET_MIN, CG_ONNX_OPSET_MAX);
    if (im->opset < CG_ONNX_OPSET_MIN)
        return cg_error(CG_ERR_UNSUPPORTED,
                        "%s: opset %lld of the default domain is older than clgraph reads "
                        "(%d to %d)",
                        im->path, (long long)im->opset, CG_ONNX_OPSET_MIN, CG_ONNX_OPSET_MAX);
    return CG_OK;
}

/* Outputs folded from symbolic shape values that still hold codes. */
static void mark_sym(onnx_imp *im) {
    const Onnx__NodeProto *n = im->node;
    int any = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        onnx_val *v = onnx_in(im, (int)i);
        any |= v && v->sym;
    }
    if (!strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size")) any = 1;
    for (size_t i = 0; any && i < n->n_output; i++) {
        int32_t v = n->output[i] && n->output[i][0] ? find_val(im, n->output[i]) : -1;
        if (v >= 0 && im->vals[v]->konst) im->vals[v]->sym = onnx_has_sym(im->vals[v]->konst);
        if (v >= 0 && im->vals[v]->sym && !im->vals[v]->sym_i32) /* moved as it is: int32 stays int32 */
            for (size_t k = 0; k < n->n_input; k++)
                if (onnx_in(im, (int)k) && onnx_in(im, (int)k)->sym_i32 && strcmp(n->op_type, "Shape"))
                    im->vals[v]->sym_i32 = 1;
    }
}

static cg_status import_node_mapped(onnx_imp *im);
static cg_status import_node_op(onnx_imp *im);

static cg_status import_node(onnx_imp *im) {
    const Onnx__NodeProto *n = im->node;
    if (!n->op_type || !*n->op_type) return onnx_fail(im, CG_ERR_FORMAT, "no op_type");
    if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx") && !cg_onnx_training_op(n->domain, n->op_type))
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "domain '%s' is not supported (only the default domain, and Adagrad, Momentum and Adam "
                         "of ai.onnx.preview.training)",
                         n->domain);
    for (size_t i = 0; i < n->n_input; i++)
        if (n->input[i] && n->input[i][0] && find_val(im, n->input[i]) < 0)
            return onnx_fail(im, CG_ERR_FORMAT,
                             "input '%s' is not defined before this node (the graph is not in "
                             "topological order, or has a cycle)",
                             n->input[i]);
    for (size_t i = 0; i < n->n_output; i++)
        if (n->output[i] && n->output[i][0]) {
            int32_t v = find_val(im, n->output[i]);
            if (v >= 0 && (im->vals[v]->typed || im->vals[v]->input))
                return onnx_fail(im, CG_ERR_FORMAT, "output '%s' is already defined", n->output[i]);
        }
    cg_status st;
    if (cg_onnx_seq_node(im, &st)) return st;
    return import_node_mapped(im);
}

static cg_status import_node_mapped(onnx_imp *im) {
    const Onnx__NodeProto *n = im->node;
    cg_guard pred;
    cg_status st;
    const int vc = onnx_value_compare(im, &pred, &st);
    if (st || vc == 0 || vc == 1) return st;
    if (vc == 2) { /* a comparison of a mode input: an If on it may fork */
        if ((st = import_node_op(im))) return st;
        onnx_val *o = onnx_val_get(im, n->output[0]);
        if (!o) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        o->has_pred = 1;
        o->pred = pred;
        return CG_OK;
    }
    return import_node_op(im);
}

static cg_status import_node_op(onnx_imp *im) {
    const Onnx__NodeProto *n = im->node;
    onnx_map_fn fn = cg_onnx_find_op(n->op_type);
    if (!fn) return onnx_fail(im, CG_ERR_UNSUPPORTED, "operator %s is not supported", n->op_type);
    int f = cg_onnx_fill_move(im);
    if (f) return f < 0 ? CG_ERR_NO_MEMORY : CG_OK;
    f = cg_onnx_fold_sym(im);
    if (f == 2) return cg_onnx_map(im, fn);
    if (f == 3) return onnx_sym_map_as_data(im, fn);
    if (!f) f = cg_onnx_fold(im);
    if (f < 0) return CG_ERR_UNSUPPORTED;
    if (f > 0) {
        mark_sym(im);
        return CG_OK;
    }
    return cg_onnx_map(im, fn);
}

/* The graph's outputs: each made a clgraph value (a param for a constant,
 * an input used as an output), the inputs declared, then the outputs set. */
static cg_status set_outputs(onnx_imp *im, const Onnx__GraphProto *gp) {
    im->node = NULL;
    size_t n = 0; /* a sequence is one output per element, an empty optional none */
    for (size_t i = 0; i < gp->n_output; i++) {
        int32_t v = gp->output[i]->name ? find_val(im, gp->output[i]->name) : -1;
        n += v < 0 || !(im->vals[v]->seq || im->vals[v]->none) ? 1 : (size_t)im->vals[v]->n_elems;
    }
    const char **names = calloc(n + 1, sizeof *names);
    if (!names) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    cg_status s = CG_OK;
    for (size_t i = 0, k = 0; !s && i < gp->n_output; i++) {
        const char *nm = gp->output[i]->name;
        int32_t v = nm ? find_val(im, nm) : -1;
        if (v < 0) s = onnx_fail(im, CG_ERR_FORMAT, "graph output '%s' is never computed", nm ? nm : "");
        else if (im->vals[v]->seq || im->vals[v]->none) {
            s = cg_onnx_seq_outputs(im, im->vals[v], names + k);
            k += (size_t)im->vals[v]->n_elems;
        } else if (!(s = onnx_use(im, im->vals[v]))) names[k++] = im->vals[v]->name;
    }
    if (!s) s = declare_inputs(im, gp);
    if (!s && cg_graph_set_outputs(im->g, (int)n, names)) s = onnx_fail(im, CG_ERR_FORMAT, "%s", cg_last_error());
    free(names);
    return s;
}

static cg_status import_nodes(onnx_imp *im, const Onnx__GraphProto *gp) {
    if (!(im->absorbed = calloc(gp->n_node + 1, 1))) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    im->graph = gp;
    for (size_t i = 0; i < gp->n_node; i++) {
        im->node = gp->node[i];
        im->node_index = (int)i;
        im->n_emitted = 0;
        if (im->absorbed[i]) continue;
        im->bad_attr[0] = 0;
        cg_status s = import_node(im);
        if (im->sym_failed) s = onnx_fail(im, CG_ERR_NO_MEMORY, "out of memory defining a dim");
        /* a wrong-typed attribute is the cause of whatever else failed */
        if (im->bad_attr[0]) return onnx_fail(im, CG_ERR_FORMAT, "%s", im->bad_attr);
        /* a failure below the importer (an allocation, the IR) is named
         * with the node it stopped */
        if (s && !strstr(cg_last_error(), im->path)) return onnx_fail(im, s, "%s", cg_last_error());
        if (s) return s;
    }
    return CG_OK;
}

/* A subgraph's nodes (onnx_ctrl.c), the node that holds it restored after. */
cg_status onnx_import_nodes(onnx_imp *im, const Onnx__GraphProto *gp) {
    const Onnx__GraphProto *graph = im->graph;
    const Onnx__NodeProto *node = im->node;
    unsigned char *absorbed = im->absorbed;
    int index = im->node_index, emitted = im->n_emitted;
    cg_status s = import_nodes(im, gp);
    free(im->absorbed);
    im->graph = graph;
    im->node = node;
    im->absorbed = absorbed;
    im->node_index = index;
    im->n_emitted = emitted;
    return s;
}

onnx_val *onnx_val_find(onnx_imp *im, const char *name) {
    int32_t v = find_val(im, name);
    return v < 0 ? NULL : im->vals[v];
}

/* One import of the model's graph into im->m, as a variant when im assumes
 * comparisons of dims (onnx_variant.c); its weights are bound later. */
cg_status cg_onnx_import_graph(onnx_imp *im) {
    const Onnx__GraphProto *gp = im->proto->graph;
    cg_status s = check_opset(im);
    if (s) return s;
    const char *gname = gp->name && cg_name_valid(gp->name) ? gp->name : "main";
    if ((s = cg_model_new_variant(im->m, gname, im->n_assume, im->assume, 0, 0, &im->g))) return s;
    if ((s = read_inputs(im, gp)) || (s = cg_onnx_ctrl_prepare(im, gp))) return s;
    if ((s = import_nodes(im, gp))) return s;
    return set_outputs(im, gp);
}

void cg_onnx_imp_free(onnx_imp *im) {
    for (int i = 0; i < im->n_vals; i++) {
        free(im->vals[i]->name);
        cg_tensor_free(im->vals[i]->konst);
        cg_tensor_free(im->vals[i]->fill);
        cg_onnx_seq_free(im->vals[i]);
        free(im->vals[i]);
    }
    free(im->vals);
    free(im->absorbed);
    free(im->index);
    free(im->param_names);
    free(im->param_tensors);
    free(im->dir);
}

/* The rewrites the options (or CLGRAPH_REWRITES) select, run on the
 * imported model; a bad selection names where it came from. */
static cg_status import_rewrites(cg_model *m, const cg_onnx_options *opt) {
    int has = opt && opt->struct_size >= offsetof(cg_onnx_options, rewrites) + sizeof opt->rewrites;
    const char *which = has && opt->rewrites ? opt->rewrites : cg_setting(CG_SET_REWRITES);
    cg_status s = cg_model_rewrite(m, which);
    if (s == CG_ERR_INVALID_ARGUMENT && !(has && opt->rewrites))
        return cg_error(s, "%s: %s", cg_setting_name(CG_SET_REWRITES), cg_last_error());
    return s;
}

cg_status cg_model_load_onnx(cg_context *ctx, const char *path, const cg_onnx_options *opt, cg_model **out) {
    if (!out || !ctx || !path) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_load_onnx: NULL argument");
    *out = NULL;
    if (opt && opt->struct_size < offsetof(cg_onnx_options, given) + sizeof opt->given)
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "cg_onnx_options.struct_size is %zu; set it to sizeof(cg_onnx_options)", opt->struct_size);
    if (opt && opt->n_given && (!opt->given_names || !opt->given))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_load_onnx: n_given without names or values");
    Onnx__ModelProto *proto = NULL;
    cg_model *m = NULL;
    cg_status s = cg_onnx_read_model(path, &proto);
    if (!s) s = cg_model_new(ctx, path, &m);
    if (!s) s = cg_onnx_import_variants(ctx, path, opt, proto, m);
    if (!s) s = import_rewrites(m, opt);
    if (s) cg_model_free(m);
    else *out = m;
    if (proto) onnx__model_proto__free_unpacked(proto, NULL);
    return cg_onnx_one_line(s, path);
}
