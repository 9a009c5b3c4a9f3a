/* Shape arithmetic over symbolic dims. Shape of a value whose dims are
 * symbols (a dynamic batch B, a source length S) is known at import up to
 * those symbols: an int64 tensor whose elements are sizes or ONNX_SYM(k)
 * codes (ONNX_SYM_UNKNOWN where no dim names one). Gather, Concat, Slice,
 * Unsqueeze and the other data movement folds carry the codes as they are
 * (onnx_fold.c); the arithmetic exporters apply to them is evaluated here,
 * into derived dims (onnx_dims.c). Reshape, Range, ConstantOfShape, Expand,
 * Tile and TopK read them and emit ops whose dims the planner binds; what
 * reads them as data gets dim_values (onnx_fill.c). */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "shape.h"

static int has_unknown(const cg_tensor *t);

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
        int64_t d[CG_MAX_DIMS];
        for (int i = 0; i < r; i++) d[i] = onnx_dim_to_sym(v->desc.dims[i]);
        if (cg_tensor_alloc(CG_I64, 0, NULL, &t)) return NULL;
        ((int64_t *)t->data)[0] = onnx_sym_product(im, r, d);
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
typedef enum { S_ADD, S_SUB, S_MUL, S_DIV, S_MOD, S_EQ, S_LT, S_GT, S_MIN, S_MAX } sop;

/* A comparison of dims (ONNX_SYM codes or sizes) the binding decides: the
 * answer where this import's variant assumes it or its negation (0), else
 * -1 with the comparison kept for an If that may fork on it. */
static int assumed(onnx_imp *im, int op, int64_t a, int64_t b, int64_t *o) {
    const cg_guard c = {op, onnx_sym_to_dim(a), onnx_sym_to_dim(b)};
    if (c.a == CG_DIM_UNKNOWN || c.b == CG_DIM_UNKNOWN) return -1;
    int r = onnx_assumed(im, &c);
    if (r >= 0) return *o = r, 0;
    im->last_pred = c;
    im->has_last_pred = 1;
    return -1;
}
/* One element of a binary op where a or b may be a symbol. Arithmetic
 * makes a derived dim where the result is a size for every binding it has
 * (S - 1 is, 1 - S and S * -1 are not: unknown); comparisons are answered
 * where they do not depend on the binding (a size is never negative), else
 * unanswerable (-1 returned). */
static int sym_elem(onnx_imp *im, sop op, int64_t a, int64_t b, int64_t *o) {
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
        case S_MIN: *o = a < b ? a : b; return 0;
        case S_MAX: *o = a > b ? a : b; return 0;
        }
    }
    const int64_t U = ONNX_SYM_UNKNOWN;
    switch (op) {
    case S_ADD:
        if (!sb && b < 0) return *o = onnx_sym_derive(im, CG_SYM_SUB, a, -b), 0;
        if (!sa && a < 0) return *o = onnx_sym_derive(im, CG_SYM_SUB, b, -a), 0;
        return *o = onnx_sym_derive(im, CG_SYM_ADD, a, b), 0;
    case S_SUB:
        if (!sb && b < 0) return *o = onnx_sym_derive(im, CG_SYM_ADD, a, -b), 0;
        return *o = !sa && a < 0 ? U : onnx_sym_derive(im, CG_SYM_SUB, a, b), 0;
    case S_MUL: return *o = (!sa && a < 0) || (!sb && b < 0) ? U : onnx_sym_derive(im, CG_SYM_MUL, a, b), 0;
    case S_DIV: return *o = (!sa && a < 0) || (!sb && b <= 0) ? U : onnx_sym_derive(im, CG_SYM_DIV, a, b), 0;
    case S_MOD:
        if (!sb && b <= 0) return -1;
        return *o = !sa && a < 0 ? U : onnx_sym_derive(im, CG_SYM_MOD, a, b), 0;
    case S_MIN:
        if ((!sa && a < 0) || (!sb && b < 0)) return *o = sa ? b : a, 0; /* a negative number is the smaller */
        return *o = onnx_sym_derive(im, CG_SYM_MIN, a, b), 0;
    case S_MAX:
        if ((!sa && a < 0) || (!sb && b < 0)) return *o = sa ? a : b, 0;
        return *o = onnx_sym_derive(im, CG_SYM_MAX, a, b), 0;
    case S_EQ:
        if (sa && sb && a == b && a != U) return *o = 1, 0;
        if ((sa && !sb && b < 0) || (sb && !sa && a < 0)) return *o = 0, 0;
        return assumed(im, CG_GUARD_EQ, a, b, o);
    case S_LT:
        if (sb && !sa && a < 0) return *o = 1, 0;
        if (sa && !sb && b <= 0) return *o = 0, 0;
        return assumed(im, CG_GUARD_LT, a, b, o);
    case S_GT:
        if (sa && !sb && b < 0) return *o = 1, 0;
        if (sb && !sa && a <= 0) return *o = 0, 0;
        return assumed(im, CG_GUARD_GT, a, b, o);
    }
    return -1;
}

/* A binary op of two int64 values with at least one symbolic: shapes equal
 * or one of them a single element (what exporters emit on shapes). */
static cg_tensor *sym_binary(onnx_imp *im, sop op, const cg_tensor *a, const cg_tensor *b) {
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
        if (sym_elem(im, op, pa[na == 1 ? 0 : i], pb[nb == 1 ? 0 : i], &r)) {
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
    const int64_t *x = a->data, n = cg_tensor_numel(a);
    for (int64_t i = 0; i < n; i++)
        if (!onnx_is_sym(x[i]) && x[i] < 0) return NULL; /* not a shape */
    cg_tensor *t;
    if (cg_tensor_alloc(CG_I64, 0, NULL, &t)) return NULL;
    ((int64_t *)t->data)[0] = onnx_sym_product(im, (int)(n > INT32_MAX ? INT32_MAX : n), x);
    return t;
}

/* Folds that copy elements: symbolic values may be their data (input 0,
 * every input of Concat) but not their indices, axes, starts or shapes. */
static const char *const movers[] = {"Gather",   "Concat",  "Unsqueeze", "Squeeze", "Slice",
                                     "Identity", "Reshape", "Flatten",   NULL};
/* Ops whose mappings read symbolic values: as every input (shapes, counts)
 * or as the shape, K or ends of data that is not symbolic itself. */
static const char *const readers[] = {"Range", "ConstantOfShape", NULL};
static const char *const control_readers[] = {"Expand", "TopK", "Slice", "Reshape", "Tile", NULL};

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
    if ((!strcmp(op, "Shape") || !strcmp(op, "Size")) && x && x->konst) return 0; /* its dims are concrete */
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
    im->has_last_pred = 0;
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
        } ops[] = {{"Add", S_ADD},  {"Sub", S_SUB}, {"Mul", S_MUL},    {"Div", S_DIV}, {"Mod", S_MOD},
                   {"Equal", S_EQ}, {"Less", S_LT}, {"Greater", S_GT}, {"Min", S_MIN}, {"Max", S_MAX}};
        if (!strcmp(op, "Mod") && onnx_attr_int(im, "fmod", 0))
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "Mod fmod 1 of symbolic dims"), -1;
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
            if (!strcmp(op, ops[i].name)) t = sym_binary(im, ops[i].op, a, b);
    }
    if (t && !has_unknown(t)) {
        const int i32 = !strcmp(op, "Cast") && onnx_attr_int(im, "to", 0) == 6;
        if (onnx_set_const(im, 0, t)) return -1;
        onnx_val *o = n->n_output && n->output[0] && n->output[0][0] ? onnx_val_get(im, n->output[0]) : NULL;
        if (o && i32) o->sym_i32 = 1;
        return 1;
    }
    cg_tensor_free(t);
    int moves = 0;
    for (int i = 0; movers[i]; i++) moves |= !strcmp(op, movers[i]);
    for (int i = 0; control_readers[i]; i++) moves |= !strcmp(op, control_readers[i]);
    if (control && moves) {
        const char *what = NULL;
        for (size_t i = 1; i < n->n_input && !what; i++)
            if (sym_in(im, (int)i)) what = onnx_in(im, (int)i)->name;
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "'%s' holds symbolic dims (from Shape of a value with dynamic dims); %s "
                         "needs it known at import",
                         what, op),
               -1;
    }
    if (im->has_last_pred && (!strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "Greater")) && a && b &&
        cg_tensor_numel(a) == 1 && cg_tensor_numel(b) == 1) {
        onnx_val *o = n->n_output && n->output[0] && n->output[0][0] ? onnx_val_get(im, n->output[0]) : NULL;
        if (!o) return cg_error(CG_ERR_NO_MEMORY, "out of memory"), -1;
        o->has_pred = 1;
        o->pred = im->last_pred;
    }
    return 3; /* arithmetic on sizes that names no dim: computed as data, the sizes bound by the plan */
}

/* Where no symbol names an element (S * -1, a comparison of two dims). */
static int has_unknown(const cg_tensor *t) {
    if (t->dtype != CG_I64) return 0;
    const int64_t *p = t->data;
    for (int64_t i = 0, n = cg_tensor_numel(t); i < n; i++)
        if (p[i] == ONNX_SYM_UNKNOWN) return 1;
    return 0;
}
