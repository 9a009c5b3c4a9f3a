/* Shape arithmetic over symbolic dims. Shape of a value whose dims are
 * symbols (a dynamic batch B, a source length S) is known at import up to
 * those symbols: an int64 tensor whose elements are sizes or ONNX_SYM(k)
 * codes (or ONNX_SYM_UNKNOWN for a product clgraph cannot name). Gather,
 * Concat, Slice, Unsqueeze and the other data movement folds carry the
 * codes as they are (onnx_fold.c); the arithmetic exporters apply to them
 * is evaluated here where the result stays a size or a symbol. The values
 * never run on a device: Reshape, Range, ConstantOfShape, Expand and TopK
 * read them and emit ops whose dims the planner binds. */
#include "onnx_imp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "shape.h"

int onnx_has_sym(const cg_tensor *t) {
    if (!t || t->dtype != CG_I64) return 0;
    const int64_t *p = t->data;
    for (int64_t i = 0, n = cg_tensor_numel(t); i < n; i++)
        if (onnx_is_sym(p[i])) return 1;
    return 0;
}

int64_t onnx_sym_to_dim(int64_t v) {
    if (v == ONNX_SYM_UNKNOWN) return CG_DIM_UNKNOWN;
    if (onnx_is_sym(v)) return CG_DIM_SYM(ONNX_SYM_UNKNOWN - 1 - v);
    return v;
}

int64_t onnx_dim_to_sym(int64_t d) {
    if (d >= 0) return d;
    if (d == CG_DIM_UNKNOWN) return ONNX_SYM_UNKNOWN;
    return ONNX_SYM(-2 - d);
}

/* Shape (with start and end) and Size of a value whose dims are not all
 * concrete. */
static cg_tensor *shape_of(onnx_imp *im, const onnx_val *v, int size) {
    const int r = v->desc.ndim;
    cg_tensor *t;
    if (size) {
        /* the product: a size, the one symbol when every other dim is 1, 0
         * when a dim is 0, else a dim clgraph cannot name */
        int64_t p = 1, code = 0;
        int syms = 0;
        for (int i = 0; i < r; i++) {
            const int64_t d = v->desc.dims[i];
            if (d >= 0) p = d && p > INT64_MAX / d ? -1 : p * d;
            else if (!syms++) code = onnx_dim_to_sym(d);
        }
        if (syms && p != 0) p = syms == 1 && p == 1 ? code : ONNX_SYM_UNKNOWN;
        else if (p < 0) p = ONNX_SYM_UNKNOWN;
        if (cg_tensor_alloc(CG_I64, 0, NULL, &t)) return NULL;
        ((int64_t *)t->data)[0] = p;
        return t;
    }
    int64_t s = onnx_attr_int(im, "start", 0), e = onnx_attr_int(im, "end", r);
    s += s < 0 ? r : 0;
    e += e < 0 ? r : 0;
    s = s < 0 ? 0 : s > r ? r : s;
    e = e < 0 ? 0 : e > r ? r : e;
    int64_t n = e > s ? e - s : 0;
    if (cg_tensor_alloc(CG_I64, 1, &n, &t)) return NULL;
    for (int64_t i = 0; i < n; i++) ((int64_t *)t->data)[i] = onnx_dim_to_sym(v->desc.dims[s + i]);
    return t;
}

typedef enum { S_ADD, S_SUB, S_MUL, S_DIV, S_MOD, S_EQ, S_LT, S_GT } sop;

/* One element of a binary op where a or b may be a symbol: exact where
 * the symbol passes through (x * 1, x / 1, x + 0, x - 0) or the answer
 * does not depend on it (a size is never negative, so it never equals
 * or is less than a negative number); else unknown (arithmetic) or
 * unanswerable (-1 returned: comparisons). */
static int sym_elem(sop op, int64_t a, int64_t b, int64_t *o) {
    const int sa = onnx_is_sym(a), sb = onnx_is_sym(b);
    if (!sa && !sb) {
        switch (op) {
        case S_ADD: *o = a + b; return 0;
        case S_SUB: *o = a - b; return 0;
        case S_MUL: *o = a * b; return 0;
        case S_DIV:
        case S_MOD:
            if (!b) return -1;
            if (b == -1) return -1; /* INT64_MIN / -1 overflows; no shape does this */
            *o = op == S_DIV ? a / b : a % b;
            if (op == S_MOD && *o && (*o < 0) != (b < 0)) *o += b; /* fmod 0: the divisor's sign */
            return 0;
        case S_EQ: *o = a == b; return 0;
        case S_LT: *o = a < b; return 0;
        case S_GT: *o = a > b; return 0;
        }
    }
    switch (op) {
    case S_ADD: *o = sa && b == 0 ? a : sb && a == 0 ? b : ONNX_SYM_UNKNOWN; return 0;
    case S_SUB: *o = sa && b == 0 ? a : ONNX_SYM_UNKNOWN; return 0;
    case S_MUL: *o = sa && b == 1 ? a : sb && a == 1 ? b : ONNX_SYM_UNKNOWN; return 0;
    case S_DIV: *o = sa && b == 1 ? a : ONNX_SYM_UNKNOWN; return 0;
    case S_MOD: return -1;
    case S_EQ:
        if (sa && sb && a == b && a != ONNX_SYM_UNKNOWN) return *o = 1, 0;
        if ((sa && !sb && b < 0) || (sb && !sa && a < 0)) return *o = 0, 0;
        return -1;
    case S_LT:
        if (sb && !sa && a < 0) return *o = 1, 0;
        if (sa && !sb && b <= 0) return *o = 0, 0;
        return -1;
    case S_GT:
        if (sa && !sb && b < 0) return *o = 1, 0;
        if (sb && !sa && a <= 0) return *o = 0, 0;
        return -1;
    }
    return -1;
}

/* A binary op of two int64 values with at least one symbolic: shapes equal
 * or one of them a single element (what exporters emit on shapes). */
static cg_tensor *sym_binary(sop op, const cg_tensor *a, const cg_tensor *b) {
    if (a->dtype != CG_I64 || b->dtype != CG_I64) return NULL;
    int64_t na = cg_tensor_numel(a), nb = cg_tensor_numel(b);
    const cg_tensor *big = na >= nb ? a : b;
    if (na != nb && na != 1 && nb != 1) return NULL;
    if (na == nb && (a->ndim != b->ndim || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->ndim))) {
        if (na != 1) return NULL;
        big = a->ndim >= b->ndim ? a : b;
    }
    const int cmp = op == S_EQ || op == S_LT || op == S_GT;
    cg_tensor *o;
    if (cg_tensor_alloc(cmp ? CG_BOOL : CG_I64, big->ndim, big->dims, &o)) return NULL;
    const int64_t *pa = a->data, *pb = b->data;
    for (int64_t i = 0, n = cg_tensor_numel(big); i < n; i++) {
        int64_t r;
        if (sym_elem(op, pa[na == 1 ? 0 : i], pb[nb == 1 ? 0 : i], &r)) {
            cg_tensor_free(o);
            return NULL;
        }
        if (cmp) ((uint8_t *)o->data)[i] = (uint8_t)r;
        else ((int64_t *)o->data)[i] = r;
    }
    return o;
}

/* ReduceProd of a symbolic vector (Size-like): a symbol where the others
 * are all 1. */
static cg_tensor *sym_prod(onnx_imp *im, const cg_tensor *a) {
    if (onnx_attr_int(im, "keepdims", 1) || onnx_in(im, 1) || onnx_attr(im, "axes")) return NULL;
    int64_t p = 1, code = 0;
    int syms = 0;
    const int64_t *x = a->data;
    for (int64_t i = 0, n = cg_tensor_numel(a); i < n; i++) {
        if (onnx_is_sym(x[i])) {
            if (!syms++) code = x[i];
        } else if (x[i] < 0 || (x[i] && p > INT64_MAX / x[i])) {
            return NULL; /* not a shape */
        } else {
            p *= x[i];
        }
    }
    if (syms) p = p == 0 ? 0 : syms == 1 && p == 1 ? code : ONNX_SYM_UNKNOWN;
    cg_tensor *t;
    if (cg_tensor_alloc(CG_I64, 0, NULL, &t)) return NULL;
    ((int64_t *)t->data)[0] = p;
    return t;
}

/* Folds that copy elements: symbolic values may be their data (input 0,
 * every input of Concat) but not their indices, axes, starts or shapes. */
static const char *const movers[] = {"Gather",   "Concat",  "Unsqueeze", "Squeeze", "Slice",
                                     "Identity", "Reshape", "Flatten",   NULL};
/* Ops whose mappings read symbolic values: as every input (shapes, counts)
 * or as the shape, K or ends of data that is not symbolic itself. */
static const char *const readers[] = {"Range", "ConstantOfShape", NULL};
static const char *const control_readers[] = {"Expand", "TopK", "Slice", "Reshape", NULL};

static int sym_in(onnx_imp *im, int i) {
    onnx_val *v = onnx_in(im, i);
    return v && v->sym;
}

int cg_onnx_fold_sym(onnx_imp *im) {
    const Onnx__NodeProto *n = im->node;
    const char *op = n->op_type;
    onnx_val *x = onnx_in(im, 0);
    if ((!strcmp(op, "Shape") || !strcmp(op, "Size")) && x && x->typed && !x->konst) {
        for (int i = 0; i < x->desc.ndim; i++)
            if (x->desc.dims[i] < 0) {
                cg_tensor *t = shape_of(im, x, op[1] == 'i');
                if (!t) return cg_error(CG_ERR_NO_MEMORY, "out of memory"), -1;
                return onnx_set_const(im, 0, t) ? -1 : 1;
            }
        return 0;
    }
    int any = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        onnx_val *v = onnx_in(im, (int)i);
        any |= v && v->sym;
    }
    if (!any) return 0;
    int control = 0; /* a symbolic value where an index, axis or shape goes */
    for (size_t i = 1; i < n->n_input; i++) control |= sym_in(im, (int)i) && strcmp(op, "Concat");
    for (int i = 0; movers[i] && !control; i++)
        if (!strcmp(op, movers[i])) return 0; /* folded as they are: the codes are copied */
    for (int i = 0; readers[i]; i++)
        if (!strcmp(op, readers[i])) return 2; /* their mappings read the codes */
    for (int i = 0; control_readers[i] && control && !sym_in(im, 0); i++)
        if (!strcmp(op, control_readers[i])) return 2;
    const cg_tensor *a = x ? x->konst : NULL, *b = onnx_in(im, 1) ? onnx_in(im, 1)->konst : NULL;
    cg_tensor *t = NULL;
    if (!strcmp(op, "Cast")) {
        const int64_t to = onnx_attr_int(im, "to", 0);
        /* INT32, INT64: sizes stay int64 here (their codes need 64 bits) */
        if (a && (to == 6 || to == 7)) {
            if (cg_tensor_alloc(CG_I64, a->ndim, a->dims, &t)) return cg_error(CG_ERR_NO_MEMORY, "out of memory"), -1;
            memcpy(t->data, a->data, (size_t)cg_tensor_numel(a) * 8);
        }
    } else if (!strcmp(op, "ReduceProd") && a) {
        t = sym_prod(im, a);
    } else if (!strcmp(op, "Where") && a && !onnx_has_sym(a) && b && onnx_in(im, 2) && onnx_in(im, 2)->konst) {
        return 0; /* a known condition picks codes as they are */
    } else if (a && b && n->n_input == 2) {
        static const struct {
            const char *name;
            sop op;
        } ops[] = {{"Add", S_ADD}, {"Sub", S_SUB},  {"Mul", S_MUL}, {"Div", S_DIV},
                   {"Mod", S_MOD}, {"Equal", S_EQ}, {"Less", S_LT}, {"Greater", S_GT}};
        if (!strcmp(op, "Mod") && onnx_attr_int(im, "fmod", 0))
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "Mod fmod 1 of symbolic dims"), -1;
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
            if (!strcmp(op, ops[i].name)) t = sym_binary(ops[i].op, a, b);
    }
    if (t) return onnx_set_const(im, 0, t) ? -1 : 1;
    const char *what = NULL;
    for (size_t i = 0; i < n->n_input && !what; i++)
        if (onnx_in(im, (int)i) && onnx_in(im, (int)i)->sym) what = onnx_in(im, (int)i)->name;
    return onnx_fail(im, CG_ERR_UNSUPPORTED,
                     "'%s' holds symbolic dims (from Shape of a value with dynamic dims); %s "
                     "of it cannot be computed at import",
                     what, op),
           -1;
}

int onnx_sym_dim_of(onnx_imp *im, int64_t dim, const char **name, int *axis) {
    for (int i = 0; i < im->n_vals; i++) {
        onnx_val *v = im->vals[i];
        if (!v->typed || v->konst || v->fill || v->sym || !(v->emitted || v->input)) continue;
        for (int d = 0; d < v->desc.ndim; d++)
            if (v->desc.dims[d] == dim) {
                *name = v->name;
                *axis = d;
                return 1;
            }
    }
    return 0;
}

cg_status onnx_materialize(onnx_imp *im, onnx_val *v) {
    /* a value of exactly these dims lends them: expand(fill, like) */
    for (int i = 0; i < im->n_vals; i++) {
        onnx_val *l = im->vals[i];
        if (l == v || !l->typed || l->konst || l->fill || !(l->emitted || l->input) || l->desc.ndim != v->desc.ndim ||
            memcmp(l->desc.dims, v->desc.dims, sizeof(int64_t) * (size_t)v->desc.ndim))
            continue;
        cg_tensor *c;
        if (cg_tensor_alloc(v->fill->dtype, 0, NULL, &c)) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        memcpy(c->data, v->fill->data, cg_dtype_size(c->dtype));
        const char *cn;
        cg_status s = onnx_const_param(im, c, &cn);
        if (s || (s = onnx_use(im, l))) return s;
        const char *in[2] = {cn, l->name}, *out[1] = {v->name};
        /* emitted under the name v has: mark first, so onnx_use does not recurse */
        cg_tensor *fill = v->fill;
        v->fill = NULL;
        v->typed = 0;
        s = onnx_emit(im, "expand", 2, in, 1, out, "shape: []");
        cg_tensor_free(fill);
        return s;
    }
    return onnx_fail(im, CG_ERR_UNSUPPORTED,
                     "'%s' (ConstantOfShape of symbolic dims) is read as data, and no value "
                     "of the graph has its dims to take them from",
                     v->name);
}

/* ConstantOfShape of a shape with symbolic dims: a lazy value of those dims
 * (onnx_materialize makes it a node where it is read as data; an RNN's
 * initial state of zeros is never read). */
cg_status cg_onnx_map_constant_of_shape(onnx_imp *im) {
    onnx_val *sh = onnx_in(im, 0);
    const Onnx__NodeProto *n = im->node;
    if (!sh || !sh->sym || !sh->konst || sh->konst->ndim != 1 || cg_tensor_numel(sh->konst) > CG_MAX_DIMS)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "ConstantOfShape needs its shape known at import (up to symbolic "
                         "dims)");
    cg_tensor *val = NULL;
    const Onnx__AttributeProto *va = onnx_attr_typed(im, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    cg_status s = va && va->t ? cg_onnx_tensor(va->t, NULL, im->path, "ConstantOfShape value", &val)
                              : cg_tensor_create(CG_F32, 0, NULL, &val);
    if (s) return onnx_fail(im, s, "%s", cg_last_error());
    if (cg_tensor_numel(val) != 1) {
        cg_tensor_free(val);
        return onnx_fail(im, CG_ERR_FORMAT, "the value must be one element");
    }
    onnx_val *o = n->n_output && n->output[0] && n->output[0][0] ? onnx_val_get(im, n->output[0]) : NULL;
    if (!o) {
        cg_tensor_free(val);
        return n->n_output ? cg_error(CG_ERR_NO_MEMORY, "out of memory") : CG_OK;
    }
    const int64_t *d = sh->konst->data;
    o->desc.dtype = val->dtype;
    o->desc.ndim = (int)cg_tensor_numel(sh->konst);
    for (int i = 0; i < o->desc.ndim; i++)
        if ((o->desc.dims[i] = onnx_sym_to_dim(d[i])) == CG_DIM_UNKNOWN) {
            cg_tensor_free(val);
            return onnx_fail(im, CG_ERR_UNSUPPORTED,
                             "dim %d of the shape is a product of symbolic dims clgraph "
                             "cannot name",
                             i);
        }
    o->typed = 1;
    o->fill = val;
    const unsigned char *p = val->data;
    o->zeros = 1;
    for (size_t i = 0; i < cg_dtype_size(val->dtype); i++) o->zeros &= p[i] == 0;
    return CG_OK;
}

/* Range(start, limit, delta) with a symbolic limit: start 0 and delta 1
 * (torch.arange of a size) count along a dim some value already has. */
cg_status cg_onnx_map_range(onnx_imp *im) {
    const cg_tensor *t[3];
    for (int i = 0; i < 3; i++) {
        onnx_val *v = onnx_in(im, i);
        t[i] = v ? v->konst : NULL;
        if (!t[i] || cg_tensor_numel(t[i]) != 1)
            return onnx_fail(im, CG_ERR_UNSUPPORTED,
                             "Range needs start, limit and delta known at import (the limit "
                             "may be a symbolic dim)");
    }
    const int64_t lim = onnx_in(im, 1)->sym ? ((const int64_t *)t[1]->data)[0] : 0;
    if (!onnx_in(im, 1)->sym || lim == ONNX_SYM_UNKNOWN || onnx_in(im, 0)->sym || onnx_in(im, 2)->sym ||
        cg_onnx_int_at(t[0], 0) != 0 || cg_onnx_int_at(t[2], 0) != 1)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "Range over a symbolic limit needs start 0, delta 1 and the limit "
                         "one dim");
    const char *like;
    int axis;
    if (!onnx_sym_dim_of(im, onnx_sym_to_dim(lim), &like, &axis))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "no value has the dim Range counts to");
    const cg_dtype dt = cg_tensor_dtype(t[0]);
    if (dt != CG_F32 && dt != CG_I32 && dt != CG_I64)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "Range of %s", cg_dtype_name(dt));
    char a[80];
    snprintf(a, sizeof a, "axis: %d, to: \"%s\"", axis, cg_dtype_name(dt));
    const char *in[1] = {like};
    const Onnx__NodeProto *n = im->node;
    const char *out[1] = {n->n_output && n->output[0] && n->output[0][0] ? n->output[0] : NULL};
    return onnx_emit(im, "arange", 1, in, 1, out, a);
}
