/* ONNX sequences and optionals, known at import: clgraph graphs carry
 * tensors only, so a sequence is a list of tensor values inside the
 * importer (its length and every position known when the model is read)
 * and an optional is what it holds, or marked empty. Graph inputs and
 * outputs of these types become one graph input or output per element
 * (NAME.0 .. NAME.N-1). What would need a length or a position computed at
 * run time is refused naming the value. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static cg_status oom(void) { return cg_error(CG_ERR_NO_MEMORY, "out of memory"); }

void cg_onnx_seq_free(onnx_val *v) {
    for (int i = 0; i < v->n_elems; i++) free(v->elems[i]);
    free(v->elems);
    v->elems = NULL;
    v->n_elems = 0;
}

cg_status onnx_seq_set(onnx_val *v, int n, char *const *names) {
    char **e = calloc((size_t)n + 1, sizeof *e);
    if (!e) return oom();
    for (int i = 0; i < n; i++)
        if (!(e[i] = strdup(names[i]))) {
            for (int k = 0; k < i; k++) free(e[k]);
            free(e);
            return oom();
        }
    cg_onnx_seq_free(v);
    v->elems = e;
    v->n_elems = n;
    v->seq = 1;
    v->typed = 1; /* defined: a later node may not define it again */
    return CG_OK;
}

/* A copy of t (the value of a constant element read elsewhere). */
static cg_status tensor_copy(const cg_tensor *t, cg_tensor **out) {
    cg_status s = cg_tensor_create(cg_tensor_dtype(t), cg_tensor_ndim(t), t->dims, out);
    if (!s && cg_tensor_numel(t))
        memcpy(cg_tensor_data(*out), cg_tensor_data_const(t),
               (size_t)cg_tensor_numel(t) * cg_dtype_size(cg_tensor_dtype(t)));
    return s;
}

/* The value `out` made a copy of tensor value x: a constant stays one (so
 * what reads it still folds), else a reshape to x's own dims. */
static cg_status alias_tensor(onnx_imp *im, onnx_val *x, const char *out) {
    onnx_val *o = onnx_val_get(im, out);
    if (!o) return oom();
    if (x->konst && !x->fill) {
        cg_status s = tensor_copy(x->konst, &o->konst);
        if (s) return s;
        o->typed = 1;
        o->desc = x->desc;
        o->sym = x->sym;
        o->sym_i32 = x->sym_i32;
        o->zeros = x->zeros;
        return CG_OK;
    }
    int64_t dims[CG_MAX_DIMS];
    memcpy(dims, x->desc.dims, sizeof dims);
    const char *name = out;
    return onnx_emit_reshape(im, x, x->desc.ndim, dims, &name);
}

/* `out` made what x holds: a sequence's element list or a tensor. */
static cg_status alias(onnx_imp *im, onnx_val *x, const char *out) {
    if (!out) return CG_OK;
    if (!x->seq) return alias_tensor(im, x, out);
    onnx_val *o = onnx_val_get(im, out);
    return o ? onnx_seq_set(o, x->n_elems, x->elems) : oom();
}

/* ---- graph inputs and outputs ---- */

/* The value given for `name` (found: 1; *t may be NULL), else 0. */
static int given(const onnx_imp *im, const char *name, const cg_tensor **t) {
    for (int k = 0; im->opt && k < im->opt->n_given; k++)
        if (im->opt->given_names[k] && !strcmp(im->opt->given_names[k], name)) {
            *t = im->opt->given[k];
            return 1;
        }
    return 0;
}

/* Element i of sequence input v: a graph input NAME.i typed by its given
 * value t (of the sequence's element type `elem`, when it says one). */
static cg_status seq_elem_input(onnx_imp *im, onnx_val *v, int i, const Onnx__TypeProto *elem, const cg_tensor *t) {
    char nm[700];
    snprintf(nm, sizeof nm, "%.600s.%d", v->name, i);
    onnx_val *e = onnx_val_get(im, nm);
    if (!e) return oom();
    if (e->typed || e->input || e->konst)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "graph input '%s': element %d's name '%s' is taken", v->name, i, nm);
    const Onnx__TypeProto__Tensor *tt =
        elem && elem->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? elem->tensor_type : NULL;
    if (tt && tt->has_elem_type && tt->elem_type && cg_onnx_dtype(tt->elem_type) != cg_tensor_dtype(t))
        return onnx_fail(im, CG_ERR_FORMAT, "graph input '%s': element %d is %s, the sequence holds %s", v->name, i,
                         cg_dtype_name(cg_tensor_dtype(t)), cg_onnx_type_name(tt->elem_type));
    if (tt && tt->shape && (int)tt->shape->n_dim != cg_tensor_ndim(t))
        return onnx_fail(im, CG_ERR_FORMAT, "graph input '%s': element %d has %d dims, the sequence's %zu", v->name, i,
                         cg_tensor_ndim(t), tt->shape->n_dim);
    /* typed by the value given: the length is fixed at import, the dims with it */
    e->typed = e->input = 1;
    e->given = t;
    e->desc.dtype = cg_tensor_dtype(t);
    e->desc.ndim = cg_tensor_ndim(t);
    for (int k = 0; k < e->desc.ndim; k++) e->desc.dims[k] = cg_tensor_dim(t, k);
    memcpy(e->declared, e->desc.dims, sizeof e->declared);
    return CG_OK;
}

/* A sequence input: its elements given as NAME.0 .. NAME.N-1. */
static cg_status seq_input(onnx_imp *im, const Onnx__TypeProto *elem, onnx_val *v) {
    const cg_tensor *t;
    char nm[700];
    int n = 0;
    for (;; n++) {
        snprintf(nm, sizeof nm, "%.600s.%d", v->name, n);
        if (!given(im, nm, &t) || !t) break;
    }
    if (!n && !(given(im, v->name, &t) && !t))
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "graph input '%s' is a sequence: its length must be known at import (give its "
                         "elements as %s.0 .. %s.N-1)",
                         v->name, v->name, v->name);
    char **names = calloc((size_t)n + 1, sizeof *names);
    if (!names) return oom();
    cg_status s = CG_OK;
    for (int i = 0; !s && i < n; i++) {
        snprintf(nm, sizeof nm, "%.600s.%d", v->name, i);
        given(im, nm, &t);
        s = seq_elem_input(im, v, i, elem, t);
        if (!s && !(names[i] = strdup(nm))) s = oom();
    }
    if (!s) s = onnx_seq_set(v, n, names);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    return s;
}

cg_status cg_onnx_seq_input(onnx_imp *im, const Onnx__TypeProto *tp, onnx_val *v) {
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)
        return seq_input(im, tp->sequence_type ? tp->sequence_type->elem_type : NULL, v);
    const Onnx__TypeProto *elem = tp->optional_type ? tp->optional_type->elem_type : NULL;
    const cg_tensor *t;
    v->optional = 1;
    if (given(im, v->name, &t) && !t) { /* given as empty */
        v->none = v->typed = 1;
        return CG_OK;
    }
    if (!elem || (elem->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
                  elem->value_case != ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "graph input '%s': an optional of neither a tensor nor a sequence",
                         v->name);
    return onnx_input_type(im, elem, v);
}

cg_status cg_onnx_seq_outputs(onnx_imp *im, onnx_val *v, const char **names) {
    if (!v->seq) return CG_OK; /* an empty optional: no output */
    Onnx__NodeProto node = ONNX__NODE_PROTO__INIT;
    node.name = v->name; /* the copies are named after the output */
    node.op_type = "Identity";
    im->node = &node;
    cg_status s = CG_OK;
    for (int i = 0; !s && i < v->n_elems; i++) {
        char nm[700];
        snprintf(nm, sizeof nm, "%.600s.%d", v->name, i);
        onnx_val *e = onnx_val_get(im, v->elems[i]), *o = onnx_val_get(im, nm);
        if (!e || !o) s = oom();
        else if (e == o) /* an element of a sequence input given back as it is */
            s = onnx_use(im, e), names[i] = e->name;
        else if (o->typed || o->input)
            s = onnx_fail(im, CG_ERR_UNSUPPORTED, "output element %d's name '%s' is taken", i, nm);
        else if (!(s = alias_tensor(im, e, nm)) && !(s = onnx_use(im, o = onnx_val_get(im, nm)))) names[i] = o->name;
    }
    im->node = NULL;
    return s;
}

/* ---- nodes ---- */

static const char *const seq_ops[] = {"SequenceConstruct",
                                      "SequenceEmpty",
                                      "SequenceInsert",
                                      "SequenceErase",
                                      "SequenceAt",
                                      "SequenceLength",
                                      "SplitToSequence",
                                      "ConcatFromSequence",
                                      "SequenceMap",
                                      "Optional",
                                      "OptionalHasElement",
                                      "OptionalGetElement",
                                      "If",
                                      "Loop",
                                      NULL};

int cg_onnx_seq_node(onnx_imp *im, cg_status *st) {
    const Onnx__NodeProto *n = im->node;
    for (int i = 0; seq_ops[i]; i++)
        if (!strcmp(n->op_type, seq_ops[i])) return 0;
    onnx_val *x = onnx_in(im, 0);
    if (!strcmp(n->op_type, "Identity") && x && (x->seq || x->optional)) {
        const char *out = out_name(im, 0);
        onnx_val *o = out ? onnx_val_get(im, out) : NULL;
        if (out && !o) return *st = oom(), 1;
        if (!out || x->none) { /* an empty optional copied: empty too */
            if (o) o->optional = o->none = o->typed = 1;
            return *st = CG_OK, 1;
        }
        *st = alias(im, x, out);
        if (!*st) o->optional = x->optional;
        return 1;
    }
    for (size_t i = 0; i < n->n_input; i++) {
        onnx_val *v = onnx_in(im, (int)i);
        if (v && (v->seq || v->none)) {
            *st = onnx_fail(im, CG_ERR_UNSUPPORTED, "input '%s' is %s; %s reads tensors", v->name,
                            v->seq ? "a sequence" : "an empty optional", n->op_type);
            return 1;
        }
    }
    return 0;
}

/* Input i, which must be a sequence. */
static cg_status need_seq(onnx_imp *im, int i, onnx_val **v) {
    *v = onnx_in(im, i);
    if (!*v) return onnx_fail(im, CG_ERR_FORMAT, "input %d (a sequence) is missing", i);
    if (!(*v)->seq)
        return onnx_fail(im, CG_ERR_FORMAT, "input '%s' is %s, not a sequence", (*v)->name,
                         (*v)->none ? "an empty optional" : "a tensor");
    return CG_OK;
}

/* Input i, which must be a tensor. */
static cg_status need_tensor(onnx_imp *im, int i, onnx_val **v) {
    cg_status s = need_in(im, i, v);
    if (!s && ((*v)->seq || (*v)->none))
        s = onnx_fail(im, CG_ERR_FORMAT, "input '%s' is %s, not a tensor", (*v)->name,
                      (*v)->seq ? "a sequence" : "an empty optional");
    return s;
}

/* The position input i (a scalar known at import; absent: def) in
 * [lo, hi] of a sequence of n, negative ones counted from the end. */
static cg_status position(onnx_imp *im, int i, int64_t def, int64_t lo, int64_t hi, int n, int64_t *pos) {
    onnx_val *p = onnx_in(im, i);
    const cg_tensor *t;
    *pos = def;
    if (!p) return CG_OK;
    cg_status s = onnx_need_const(im, p, "the position", &t);
    if (s) return s;
    if ((cg_tensor_dtype(t) != CG_I64 && cg_tensor_dtype(t) != CG_I32) || cg_tensor_numel(t) != 1)
        return onnx_fail(im, CG_ERR_FORMAT, "the position '%s' must be one int32 or int64", p->name);
    *pos = cg_onnx_int_at(t, 0);
    if (*pos < lo || *pos > hi)
        return onnx_fail(im, CG_ERR_FORMAT, "position %lld is outside [%lld, %lld] of a sequence of %d",
                         (long long)*pos, (long long)lo, (long long)hi, n);
    if (*pos < 0) *pos += n;
    return CG_OK;
}

/* The output sequence: elems[0 .. n) of the current node's output 0. */
static cg_status out_seq(onnx_imp *im, int n, char *const *elems) {
    const char *out = out_name(im, 0);
    onnx_val *o = out ? onnx_val_get(im, out) : NULL;
    if (!out) return CG_OK;
    return o ? onnx_seq_set(o, n, elems) : oom();
}

static cg_status map_construct(onnx_imp *im) {
    int n = (int)im->node->n_input;
    char **names = calloc((size_t)n + 1, sizeof *names);
    if (!names) return oom();
    cg_status s = CG_OK;
    for (int i = 0; !s && i < n; i++) {
        onnx_val *v;
        if (!(s = need_tensor(im, i, &v))) names[i] = v->name;
    }
    if (!s) s = out_seq(im, n, names);
    free(names);
    return s;
}

/* SequenceInsert (tensor at position, default the end) and SequenceErase
 * (position, default the last). */
static cg_status map_insert_erase(onnx_imp *im) {
    onnx_val *q, *t = NULL;
    const int insert = !strcmp(im->node->op_type, "SequenceInsert");
    cg_status s = need_seq(im, 0, &q);
    if (!s && insert) s = need_tensor(im, 1, &t);
    if (s) return s;
    int n = q->n_elems;
    int64_t pos;
    if (!insert && !n) return onnx_fail(im, CG_ERR_FORMAT, "erasing from the empty sequence '%s'", q->name);
    if ((s = insert ? position(im, 2, n, -n, n, n, &pos) : position(im, 1, n - 1, -n, n - 1, n, &pos))) return s;
    char **e = calloc((size_t)n + 2, sizeof *e);
    if (!e) return oom();
    int k = 0;
    for (int i = 0; i <= n; i++) {
        if (insert && i == pos) e[k++] = t->name;
        if (i < n && (insert || i != pos)) e[k++] = q->elems[i];
    }
    s = out_seq(im, k, e);
    free(e);
    return s;
}

static cg_status map_at(onnx_imp *im) {
    onnx_val *q;
    cg_status s = need_seq(im, 0, &q);
    int64_t pos;
    if (!s && !onnx_in(im, 1)) s = onnx_fail(im, CG_ERR_FORMAT, "input 1 (position) is missing");
    if (!s && !q->n_elems) s = onnx_fail(im, CG_ERR_FORMAT, "SequenceAt of the empty sequence '%s'", q->name);
    if (!s) s = position(im, 1, 0, -q->n_elems, q->n_elems - 1, q->n_elems, &pos);
    if (s) return s;
    onnx_val *e = onnx_val_get(im, q->elems[pos]);
    return !e ? oom() : out_name(im, 0) ? alias_tensor(im, e, out_name(im, 0)) : CG_OK;
}

/* A scalar known at import: int64 v or bool b, as output 0. */
static cg_status out_scalar(onnx_imp *im, cg_dtype dt, int64_t v) {
    cg_tensor *t;
    cg_status s = cg_tensor_create(dt, 0, NULL, &t);
    if (s) return s;
    if (dt == CG_I64) *(int64_t *)cg_tensor_data(t) = v;
    else *(uint8_t *)cg_tensor_data(t) = (uint8_t)v;
    return onnx_set_const(im, 0, t);
}

static cg_status map_length(onnx_imp *im) {
    onnx_val *q;
    cg_status s = need_seq(im, 0, &q);
    return s ? s : out_scalar(im, CG_I64, q->n_elems);
}

/* Optional(x): what x holds, marked optional; without x, empty. */
static cg_status map_optional(onnx_imp *im) {
    onnx_val *x = onnx_in(im, 0);
    const char *out = out_name(im, 0);
    onnx_val *o = out ? onnx_val_get(im, out) : NULL;
    if (!out) return CG_OK;
    if (!o) return oom();
    cg_status s = CG_OK;
    if (!x || x->none) o->none = o->typed = 1;
    else if (x->typed || x->seq) s = alias(im, x, out);
    else s = onnx_fail(im, CG_ERR_VERIFY, "input '%s' has no known type", x->name);
    o->optional = 1;
    return s;
}

/* OptionalHasElement (a tensor holds one; no input is empty) and
 * OptionalGetElement (an empty optional is refused: nothing to give). */
static cg_status map_optional_read(onnx_imp *im) {
    onnx_val *x = onnx_in(im, 0);
    if (!strcmp(im->node->op_type, "OptionalHasElement")) return out_scalar(im, CG_BOOL, x && !x->none);
    if (!x) return onnx_fail(im, CG_ERR_FORMAT, "input 0 is missing");
    if (x->none) return onnx_fail(im, CG_ERR_UNSUPPORTED, "the optional '%s' is empty (known at import)", x->name);
    if (!x->typed) return onnx_fail(im, CG_ERR_VERIFY, "input '%s' has no known type", x->name);
    return alias(im, x, out_name(im, 0));
}

static cg_status map_empty(onnx_imp *im) {
    static const char *const known[] = {"dtype", NULL};
    cg_status s = onnx_check_attrs(im, known);
    return s ? s : out_seq(im, 0, NULL);
}

/* SplitToSequence's part sizes along a dim of size dim: split absent (parts
 * of 1), a scalar (parts of it, the last smaller) or 1-D (the sizes). */
static cg_status split_sizes(onnx_imp *im, int64_t dim, int64_t **sizes, int *n) {
    onnx_val *sp = onnx_in(im, 1);
    const cg_tensor *t = NULL;
    cg_status s = sp ? onnx_need_const(im, sp, "input 1 (split)", &t) : CG_OK;
    if (s) return s;
    if (t && ((cg_tensor_dtype(t) != CG_I64 && cg_tensor_dtype(t) != CG_I32) || cg_tensor_ndim(t) > 1))
        return onnx_fail(im, CG_ERR_FORMAT, "split must be an int32 or int64 scalar or 1-D tensor");
    const int list = t && cg_tensor_ndim(t) == 1;
    if (!list && dim < 0)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "the sequence's length depends on a dim known only at run time (give split as a list)");
    int64_t part = t && !list ? cg_onnx_int_at(t, 0) : 1, count = list ? cg_tensor_numel(t) : 0;
    if (part < 1)
        return onnx_fail(im, CG_ERR_FORMAT, "split %lld: parts must have at least one element", (long long)part);
    if (!list) count = (dim + part - 1) / part;
    if (count > 65536) return onnx_fail(im, CG_ERR_UNSUPPORTED, "a sequence of %lld tensors", (long long)count);
    if (!(*sizes = calloc((size_t)count + 1, sizeof **sizes))) return oom();
    int64_t sum = 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t left = dim - part * i;
        (*sizes)[i] = list ? cg_onnx_int_at(t, i) : left < part ? left : part;
        if ((*sizes)[i] < 0) return onnx_fail(im, CG_ERR_FORMAT, "split size %lld", (long long)(*sizes)[i]);
        sum += (*sizes)[i];
    }
    if (list && dim >= 0 && sum != dim)
        return onnx_fail(im, CG_ERR_FORMAT, "split sizes add up to %lld, the dim is %lld", (long long)sum,
                         (long long)dim);
    *n = (int)count;
    return CG_OK;
}

/* Part i of x (start, size along axis) as a new value, its name into
 * names[i]; squeezed where asked (keepdims 0 with parts of one). */
static cg_status split_part(onnx_imp *im, onnx_val *x, int axis, int64_t start, int64_t size, int squeeze,
                            char **name) {
    char at[160];
    snprintf(at, sizeof at, "axis: %d, start: %lld, end: %lld", axis, (long long)start, (long long)(start + size));
    const char *out = NULL;
    cg_status s = emit_tmp(im, "slice", x->name, at, &out);
    if (!s && squeeze) {
        int64_t d[CG_MAX_DIMS];
        for (int k = 0, j = 0; k < x->desc.ndim; k++)
            if (k != axis) d[j++] = x->desc.dims[k];
        onnx_val *p = onnx_val_get(im, out);
        out = NULL;
        s = p ? onnx_emit_reshape(im, p, x->desc.ndim - 1, d, &out) : oom();
    }
    if (!s && !(*name = strdup(out))) s = oom();
    return s;
}

static cg_status map_split(onnx_imp *im) {
    static const char *const known[] = {"axis", "keepdims", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_tensor(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    const int r = x->desc.ndim;
    int64_t axis = onnx_attr_int(im, "axis", 0);
    if (axis < -r || axis >= r) return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)axis);
    if (axis < 0) axis += r;
    int64_t *sizes = NULL;
    int n = 0;
    if ((s = split_sizes(im, x->desc.dims[axis], &sizes, &n))) return free(sizes), s;
    const int squeeze = !onnx_in(im, 1) && !onnx_attr_int(im, "keepdims", 1);
    char **names = calloc((size_t)n + 1, sizeof *names);
    int64_t start = 0;
    if (!names) s = oom();
    for (int i = 0; !s && i < n; start += sizes[i++])
        s = split_part(im, x, (int)axis, start, sizes[i], squeeze, &names[i]);
    if (!s) s = out_seq(im, n, names);
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
    free(sizes);
    return s;
}

/* ConcatFromSequence: concat along axis, or (new_axis 1) a stack: each
 * element given a dim of 1 there first. Concat takes ONNX_MAX_IO inputs at
 * a time: longer sequences are joined in rounds. */
static cg_status map_concat(onnx_imp *im) {
    static const char *const known[] = {"axis", "new_axis", NULL};
    onnx_val *q;
    cg_status s;
    if ((s = need_seq(im, 0, &q)) || (s = onnx_check_attrs(im, known))) return s;
    if (!onnx_attr(im, "axis")) return onnx_fail(im, CG_ERR_FORMAT, "attribute 'axis' is missing");
    if (!q->n_elems) return onnx_fail(im, CG_ERR_FORMAT, "ConcatFromSequence of the empty sequence '%s'", q->name);
    const int stack = onnx_attr_int(im, "new_axis", 0) != 0;
    onnx_val *e0 = onnx_val_get(im, q->elems[0]);
    if (!e0) return oom();
    const int r = e0->desc.ndim + stack;
    int64_t axis = onnx_attr_int(im, "axis", 0);
    if (axis < -r || axis >= r) return onnx_fail(im, CG_ERR_FORMAT, "axis %lld out of range", (long long)axis);
    if (axis < 0) axis += r;
    const char *in[ONNX_MAX_IO];
    char at[64];
    snprintf(at, sizeof at, "axis: %lld", (long long)axis);
    int k = 0;
    for (int i = 0; !s && i < q->n_elems; i++) {
        onnx_val *e = onnx_val_get(im, q->elems[i]);
        if (!e) return oom();
        in[k] = e->name;
        if (stack) {
            int64_t d[CG_MAX_DIMS];
            for (int j = 0, m = 0; j < r; j++) d[j] = j == axis ? 1 : e->desc.dims[m++];
            in[k] = NULL;
            if (r > CG_MAX_DIMS) return onnx_fail(im, CG_ERR_UNSUPPORTED, "%d dims", r);
            if ((s = onnx_emit_reshape(im, e, r, d, &in[k]))) return s;
        }
        k++;
        const int last = i == q->n_elems - 1;
        if (k == ONNX_MAX_IO || last) { /* a round: its result the first input of the next */
            const char *outs[1] = {last ? out_name(im, 0) : NULL};
            if ((s = onnx_emit(im, "concat", k, in, 1, outs, at))) return s;
            in[0] = outs[0];
            k = 1;
        }
    }
    return s;
}

/* ---- the table's entry ---- */

static const struct {
    const char *op;
    cg_status (*fn)(onnx_imp *im);
} seq_maps[] = {
    {"SequenceConstruct", map_construct},
    {"SequenceEmpty", map_empty},
    {"SequenceInsert", map_insert_erase},
    {"SequenceErase", map_insert_erase},
    {"SequenceAt", map_at},
    {"SequenceLength", map_length},
    {"SplitToSequence", map_split},
    {"ConcatFromSequence", map_concat},
    {"Optional", map_optional},
    {"OptionalHasElement", map_optional_read},
    {"OptionalGetElement", map_optional_read},
    {"SequenceMap", cg_onnx_map_seq_map},
};

cg_status cg_onnx_map_seq(onnx_imp *im) {
    const char *op = im->node->op_type;
    static const char *const none[] = {NULL}, *const optional[] = {"type", NULL};
    for (size_t i = 0; i < sizeof seq_maps / sizeof seq_maps[0]; i++) {
        if (strcmp(op, seq_maps[i].op)) continue;
        /* those that read attributes check them themselves */
        int own = seq_maps[i].fn == map_split || seq_maps[i].fn == map_concat || seq_maps[i].fn == map_empty ||
                  seq_maps[i].fn == cg_onnx_map_seq_map;
        cg_status s = own ? CG_OK : onnx_check_attrs(im, strcmp(op, "Optional") ? none : optional);
        return s ? s : seq_maps[i].fn(im);
    }
    return onnx_fail(im, CG_ERR_UNSUPPORTED, "operator %s is not supported", op);
}
