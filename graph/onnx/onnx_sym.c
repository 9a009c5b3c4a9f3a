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

int onnx_named_dims(const onnx_imp *im, int ndim, const int64_t *dims, char *buf, size_t size) {
    size_t u = (size_t)snprintf(buf, size, "[");
    int unknown = 0;
    for (int i = 0; i < ndim && u < size; i++) {
        const int64_t d = dims[i];
        u += (size_t)snprintf(buf + u, size - u, "%s", i ? ", " : "");
        if (d == CG_DIM_UNKNOWN && unknown++) return 0;
        if (d <= -2 && -2 - d < im->m->n_syms) {
            const char *nm = im->m->syms[-2 - d];
            /* a name that is no identifier is written quoted, as the text format does */
            u += (size_t)snprintf(buf + u, size - u, cg_ident_valid(nm) ? "%s" : "`%s`", nm);
        } else {
            u += (size_t)snprintf(buf + u, size - u, "%lld", (long long)(d < -1 ? -1 : d));
        }
    }
    if (u < size) u += (size_t)snprintf(buf + u, size - u, "]");
    return u < size;
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

/* The product of n sizes or codes: a size, or a derived dim (the sizes
 * multiplied first, then the symbols in order: B*S*64). */
static int64_t sym_product(onnx_imp *im, int n, const int64_t *x) {
    int64_t p = 1, acc = 1;
    for (int i = 0; i < n; i++)
        if (!onnx_is_sym(x[i])) {
            if (x[i] && p > INT64_MAX / x[i]) return ONNX_SYM_UNKNOWN;
            p *= x[i];
        }
    if (p == 0) return 0;
    for (int i = 0; i < n; i++)
        if (onnx_is_sym(x[i])) acc = acc == 1 ? x[i] : onnx_sym_derive(im, CG_SYM_MUL, acc, x[i]);
    return onnx_sym_derive(im, CG_SYM_MUL, acc, p);
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
        ((int64_t *)t->data)[0] = sym_product(im, r, d);
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

/* The definition of a derived dim's code (0 for a size or a free one). */
static int def_of(const onnx_imp *im, int64_t code, int64_t *a, int64_t *b) {
    if (!onnx_is_sym(code)) return 0;
    const int k = (int)(ONNX_SYM_UNKNOWN - 1 - code);
    if (!cg_model_sym_derived(im->m, k)) return 0;
    *a = onnx_dim_to_sym(im->m->sym_defs[k].a);
    *b = onnx_dim_to_sym(im->m->sym_defs[k].b);
    return im->m->sym_defs[k].op;
}

/* Sums taken apart again, as exporters write them around a past length:
 * max(P, P + S) = P + S, min(P, P + S) = P, (P + S) - P = S; else
 * ONNX_SYM_UNKNOWN. */
static int64_t sym_simplify(const onnx_imp *im, int op, int64_t a, int64_t b) {
    int64_t x, y;
    if (op == CG_SYM_MAX || op == CG_SYM_MIN)
        for (int swap = 0; swap < 2; swap++) {
            const int64_t p = swap ? b : a, q = swap ? a : b;
            const int dq = def_of(im, q, &x, &y);
            if (dq == CG_SYM_ADD && (x == p || y == p)) return op == CG_SYM_MAX ? q : p;
            /* max(p, min(p, x)) = p, min(p, max(p, x)) = p */
            if (dq == (op == CG_SYM_MAX ? CG_SYM_MIN : CG_SYM_MAX) && (x == p || y == p)) return p;
        }
    if (op == CG_SYM_SUB && def_of(im, a, &x, &y) == CG_SYM_ADD) {
        if (x == b) return y;
        if (y == b) return x;
    }
    return ONNX_SYM_UNKNOWN;
}

/* The derived dim op(a, b) of two codes or sizes >= 0, as a code: the
 * identities that keep an operand taken first (x + 0, x * 1, x - x), and
 * a constant kept second in commutative ops, so one expression has one
 * symbol however an exporter wrote it. ONNX_SYM_UNKNOWN when an operand is
 * unknown. */
int64_t onnx_sym_derive(onnx_imp *im, int op, int64_t a, int64_t b) {
    if (a == ONNX_SYM_UNKNOWN || b == ONNX_SYM_UNKNOWN) return ONNX_SYM_UNKNOWN;
    const int commutes = op == CG_SYM_ADD || op == CG_SYM_MUL || op == CG_SYM_MIN || op == CG_SYM_MAX;
    if (commutes && (!onnx_is_sym(a) || (onnx_is_sym(b) && b > a))) {
        const int64_t t = a;
        a = b, b = t;
    }
    switch (op) {
    case CG_SYM_ADD:
    case CG_SYM_SUB:
        if (b == 0) return a;
        if (op == CG_SYM_SUB && a == b) return 0;
        break;
    case CG_SYM_MUL:
        if (b == 1) return a;
        if (b == 0) return 0;
        break;
    case CG_SYM_DIV:
    case CG_SYM_CEIL_DIV:
        if (b == 1) return a;
        break;
    case CG_SYM_MIN:
    case CG_SYM_MAX:
        if (a == b) return a;
        if (b == 0) return op == CG_SYM_MAX ? a : 0;
        break;
    }
    const int64_t r = sym_simplify(im, op, a, b);
    if (r != ONNX_SYM_UNKNOWN) return r;
    if (!onnx_is_sym(a) && !onnx_is_sym(b)) { /* both sizes: computed here, as a plan would */
        switch (op) {
        case CG_SYM_ADD: return a + b;
        case CG_SYM_SUB: return a >= b ? a - b : ONNX_SYM_UNKNOWN;
        case CG_SYM_MUL: return a * b;
        case CG_SYM_DIV: return b ? a / b : ONNX_SYM_UNKNOWN;
        case CG_SYM_MOD: return b ? a % b : ONNX_SYM_UNKNOWN;
        case CG_SYM_CEIL_DIV: return b ? a / b + (a % b != 0) : ONNX_SYM_UNKNOWN;
        case CG_SYM_MIN: return a < b ? a : b;
        case CG_SYM_MAX: return a > b ? a : b;
        }
    }
    int k;
    if (cg_model_sym_define(im->m, op, onnx_sym_to_dim(a), onnx_sym_to_dim(b), &k)) return ONNX_SYM_UNKNOWN;
    return ONNX_SYM(k);
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
    ((int64_t *)t->data)[0] = sym_product(im, (int)(n > INT32_MAX ? INT32_MAX : n), x);
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

cg_status onnx_sym_materialize(onnx_imp *im, onnx_val *v) {
    const cg_tensor *t = v->konst;
    const int64_t n = cg_tensor_numel(t), *p = t->data;
    if (t->ndim > 1 || n > CG_MAX_DIMS)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "'%s' (computed from symbolic dims) is read as data, and has %lld elements (at most %d)",
                         v->name, (long long)n, CG_MAX_DIMS);
    char list[600], a[700];
    int64_t d[CG_MAX_DIMS];
    for (int64_t i = 0; i < n; i++) {
        if (!onnx_is_sym(p[i]) && p[i] < 0)
            return onnx_fail(im, CG_ERR_UNSUPPORTED,
                             "'%s' (computed from symbolic dims) is read as data and holds %lld, not a size", v->name,
                             (long long)p[i]);
        if ((d[i] = onnx_sym_to_dim(p[i])) == CG_DIM_UNKNOWN)
            return onnx_fail(im, CG_ERR_UNSUPPORTED,
                             "'%s' (computed from symbolic dims) is read as data, and element %lld has no "
                             "name clgraph can bind",
                             v->name, (long long)i);
    }
    if (!onnx_named_dims(im, (int)n, d, list, sizeof list))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "'%s': too many dims to name", v->name);
    snprintf(a, sizeof a, "values: %s, scalar: %d", list, t->ndim == 0);
    const char *out[1] = {v->sym_i32 ? NULL : v->name};
    cg_status s = onnx_emit(im, "dim_values", 0, NULL, 1, out, a);
    if (s || !v->sym_i32) return s;
    const char *in[1] = {out[0]}, *o2[1] = {v->name};
    return onnx_emit(im, "cast", 1, in, 1, o2, "to: \"i32\"");
}

cg_status onnx_sym_map_as_data(onnx_imp *im, onnx_map_fn fn) {
    const Onnx__NodeProto *n = im->node;
    cg_tensor *hidden[ONNX_MAX_IO] = {0};
    if (n->n_input > ONNX_MAX_IO) return onnx_fail(im, CG_ERR_UNSUPPORTED, "too many inputs");
    cg_status s = CG_OK;
    for (size_t i = 0; !s && i < n->n_input; i++) {
        onnx_val *v = onnx_in(im, (int)i);
        if (v && v->sym) s = onnx_use(im, v);
    }
    /* the mapping sees run-time values: their codes are not constants to it */
    for (size_t i = 0; !s && i < n->n_input; i++) {
        onnx_val *v = onnx_in(im, (int)i);
        if (v && v->sym && v->konst) hidden[i] = v->konst, v->konst = NULL, v->sym = 0;
    }
    if (!s) s = cg_onnx_map(im, fn);
    for (size_t i = 0; i < n->n_input; i++) {
        onnx_val *v = onnx_in(im, (int)i);
        if (v && hidden[i]) v->konst = hidden[i], v->sym = 1;
    }
    return s;
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
    char list[600], a[700];
    if (!onnx_named_dims(im, v->desc.ndim, v->desc.dims, list, sizeof list))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "'%s': too many dims to name", v->name);
    snprintf(a, sizeof a, "shape: %s", list);
    cg_tensor *c;
    if (cg_tensor_alloc(v->fill->dtype, 0, NULL, &c)) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    memcpy(c->data, v->fill->data, cg_dtype_size(c->dtype));
    const char *cn;
    cg_status s = onnx_const_param(im, c, &cn);
    if (s) return s;
    const char *in[1] = {cn}, *out[1] = {v->name};
    /* emitted under the name v has: mark first, so onnx_use does not recurse */
    cg_tensor *fill = v->fill;
    v->fill = NULL;
    v->typed = 0;
    s = onnx_emit(im, "expand", 1, in, 1, out, a);
    cg_tensor_free(fill);
    return s;
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

/* A scalar of Range as a code or an integer (a float with an integer
 * value too); 0 when it is neither. */
static int range_operand(const onnx_val *v, int64_t *out) {
    const cg_tensor *t = v ? v->konst : NULL;
    if (!t || cg_tensor_numel(t) != 1) return 0;
    if (v->sym) return *out = ((const int64_t *)t->data)[0], 1;
    const cg_dtype dt = cg_tensor_dtype(t);
    if (dt == CG_I64 || dt == CG_I32) return *out = cg_onnx_int_at(t, 0), 1;
    const double f = dt == CG_F32 ? ((const float *)t->data)[0] : NAN;
    if (!(f == f) || f != (double)(int64_t)f || fabs(f) > 9007199254740992.0) return 0;
    return *out = (int64_t)f, 1;
}

/* The length of Range(start, limit, delta) over codes and integers:
 * ceil(max(limit - start, 0) / delta) with both shifted by a constant to
 * keep every operand a size (only their difference counts). */
static int64_t range_length(onnx_imp *im, int64_t start, int64_t limit, int64_t delta) {
    int64_t shift = 0;
    if (!onnx_is_sym(start) && start < 0) shift = -start;
    if (!onnx_is_sym(limit) && limit < 0 && -limit > shift) shift = -limit;
    start = onnx_sym_derive(im, CG_SYM_ADD, start, shift);
    limit = onnx_sym_derive(im, CG_SYM_ADD, limit, shift);
    const int64_t hi = delta > 0 ? limit : start, lo = delta > 0 ? start : limit;
    const int64_t span = onnx_sym_derive(im, CG_SYM_SUB, onnx_sym_derive(im, CG_SYM_MAX, hi, lo), lo);
    return onnx_sym_derive(im, CG_SYM_CEIL_DIV, span, delta > 0 ? delta : -delta);
}

/* Range(start, limit, delta) where start or limit is a symbolic dim (or
 * computed from one): arange along a value of the derived length, plus
 * start read as data where it is symbolic. delta must be a known integer. */
cg_status cg_onnx_map_range(onnx_imp *im) {
    int64_t st, li, de;
    onnx_val *v0 = onnx_in(im, 0), *v1 = onnx_in(im, 1), *v2 = onnx_in(im, 2);
    if (!range_operand(v0, &st) || !range_operand(v1, &li) || !range_operand(v2, &de) || (v2 && v2->sym) || !de)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "Range needs start, limit and delta known at import (start and limit may be "
                         "symbolic dims; delta a non-zero integer)");
    const int64_t n = range_length(im, st, li, de);
    if (n == ONNX_SYM_UNKNOWN) return onnx_fail(im, CG_ERR_UNSUPPORTED, "the length of Range has no dim to name");
    const cg_dtype dt = v0->sym ? (v0->sym_i32 ? CG_I32 : CG_I64) : cg_tensor_dtype(v0->konst);
    if (dt != CG_F32 && dt != CG_I32 && dt != CG_I64)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "Range of %s", cg_dtype_name(dt));
    /* a value of n elements to count along */
    const int64_t zero = 0, dn = onnx_sym_to_dim(n);
    const char *zname, *like, *seq;
    char list[300], a[400];
    cg_status s = const_of(im, CG_I64, 0, NULL, &zero, &zname);
    if (s || !onnx_named_dims(im, 1, &dn, list, sizeof list)) return s ? s : CG_ERR_UNSUPPORTED;
    snprintf(a, sizeof a, "shape: %s", list);
    if ((s = emit_tmp(im, "expand", zname, a, &like))) return s;
    snprintf(a, sizeof a, "axis: 0, start: %lld, delta: %lld, to: \"%s\"", onnx_is_sym(st) ? 0LL : (long long)st,
             (long long)de, cg_dtype_name(dt));
    const char *out = out_name(im, 0);
    if (!onnx_is_sym(st)) return emit1(im, "arange", 1, &like, out, a);
    if ((s = emit_tmp(im, "arange", like, a, &seq))) return s;
    return emit1(im, "add", 2, (const char *[]){seq, v0->name}, out, NULL);
}

/* The ints of input i (or of attribute `attr` in opsets before 10), known
 * at import and without symbols; 0 when absent (n = 0), -1 when unknown. */
static int known_ints(onnx_imp *im, int i, const char *attr, int64_t *v, int *n) {
    *n = 0;
    if (im->opset < 10) {
        const int64_t *a = onnx_attr_ints(im, attr, n);
        if (!a || *n > CG_MAX_DIMS) return a ? -1 : 0;
        memcpy(v, a, sizeof *v * (size_t)*n);
        return 0;
    }
    onnx_val *x = onnx_in(im, i);
    if (!x) return 0;
    if (!x->konst || x->sym || cg_tensor_numel(x->konst) > CG_MAX_DIMS) return -1;
    *n = (int)cg_tensor_numel(x->konst);
    for (int k = 0; k < *n; k++) v[k] = cg_onnx_int_at(x->konst, k);
    return 0;
}

/* Slice of a ConstantOfShape made lazily (x->fill): another such value,
 * of the sliced dims, so a multi-layer RNN's zero state sliced per layer
 * stays known zeros and is never made. Steps of 1; a symbolic dim only
 * taken whole. */
static int fill_slice(onnx_imp *im, onnx_val *x, onnx_val *o) {
    int64_t st[CG_MAX_DIMS], en[CG_MAX_DIMS], ax[CG_MAX_DIMS], sp[CG_MAX_DIMS];
    int ns, ne, na, np;
    if (known_ints(im, 1, "starts", st, &ns) || known_ints(im, 2, "ends", en, &ne) ||
        known_ints(im, 3, "axes", ax, &na) || known_ints(im, 4, "steps", sp, &np) || ns != ne || !ns ||
        (na && na != ns) || (np && np != ns))
        return 0;
    cg_tensor_desc d = x->desc;
    for (int k = 0; k < ns; k++) {
        int64_t a = na ? ax[k] : k;
        a += a < 0 ? d.ndim : 0;
        if (a < 0 || a >= d.ndim || (np && sp[k] != 1)) return 0;
        const int64_t n = d.dims[a];
        if (n < 0) {
            if (st[k] != 0 || en[k] < INT64_MAX / 2) return 0;
            continue;
        }
        int64_t s = st[k] < 0 ? st[k] + n : st[k], e = en[k] < 0 ? en[k] + n : en[k];
        s = s < 0 ? 0 : s > n ? n : s;
        e = e < 0 ? 0 : e > n ? n : e;
        d.dims[a] = e > s ? e - s : 0;
    }
    cg_tensor *f;
    if (cg_tensor_alloc(x->fill->dtype, 0, NULL, &f)) return cg_error(CG_ERR_NO_MEMORY, "out of memory"), -1;
    memcpy(f->data, x->fill->data, cg_dtype_size(f->dtype));
    o->desc = d;
    o->typed = 1;
    o->fill = f;
    o->zeros = x->zeros;
    return 1;
}

/* Expand of one known element to a shape with symbolic dims: what the
 * dynamo exporter writes for torch.zeros(layers, B, H), made lazy like
 * ConstantOfShape. */
static int fill_expand(onnx_imp *im, onnx_val *x, onnx_val *o) {
    onnx_val *sh = onnx_in(im, 1);
    if (!sh || !sh->sym || !sh->konst || sh->konst->ndim != 1 || cg_tensor_numel(x->konst) != 1 ||
        cg_tensor_numel(sh->konst) > CG_MAX_DIMS || cg_tensor_numel(sh->konst) < x->konst->ndim)
        return 0;
    const int64_t *d = sh->konst->data;
    cg_tensor_desc t = {0};
    t.dtype = (cg_op_dtype)cg_tensor_dtype(x->konst);
    t.ndim = (int)cg_tensor_numel(sh->konst);
    for (int i = 0; i < t.ndim; i++)
        if ((t.dims[i] = onnx_sym_to_dim(d[i])) == CG_DIM_UNKNOWN || (d[i] >= 0 && d[i] < 1)) return 0;
    cg_tensor *f;
    if (cg_tensor_alloc(cg_tensor_dtype(x->konst), 0, NULL, &f)) return cg_error(CG_ERR_NO_MEMORY, "out of memory"), -1;
    memcpy(f->data, x->konst->data, cg_dtype_size(f->dtype));
    const unsigned char *p = f->data;
    o->zeros = 1;
    for (size_t i = 0; i < cg_dtype_size(f->dtype); i++) o->zeros &= p[i] == 0;
    o->desc = t;
    o->typed = 1;
    o->fill = f;
    return 1;
}

int cg_onnx_fill_move(onnx_imp *im) {
    const Onnx__NodeProto *n = im->node;
    onnx_val *x = onnx_in(im, 0);
    if (!x || n->n_output != 1 || !n->output[0] || !n->output[0][0]) return 0;
    const int slice = x->fill && !strcmp(n->op_type, "Slice");
    const int expand = x->konst && !x->sym && !strcmp(n->op_type, "Expand");
    if (!slice && !expand) return 0;
    onnx_val *o = onnx_val_get(im, n->output[0]);
    if (!o) return cg_error(CG_ERR_NO_MEMORY, "out of memory"), -1;
    return slice ? fill_slice(im, x, o) : fill_expand(im, x, o);
}

/* ---- dims op inference leaves unknown, named where the arithmetic is
 * exact (so a later Shape of the value stays exact) ---- */

typedef struct factors {
    int64_t c; /* the sizes multiplied */
    int n;     /* and these codes: free or not a product */
    int64_t atom[4 * CG_MAX_DIMS];
} factors;

/* A product taken apart into sizes and codes; 0 when too many. */
static int factor(const onnx_imp *im, int64_t code, factors *f) {
    int64_t a, b;
    if (!onnx_is_sym(code)) {
        f->c *= code;
        return 1;
    }
    if (def_of(im, code, &a, &b) == CG_SYM_MUL) return factor(im, a, f) && factor(im, b, f);
    if (f->n == (int)(sizeof f->atom / sizeof f->atom[0])) return 0;
    f->atom[f->n++] = code;
    return 1;
}

static const cg_attr *node_attr(const cg_node *nd, const char *key) {
    for (int i = 0; i < nd->n_attrs; i++)
        if (!strcmp(nd->attrs[i].key, key)) return &nd->attrs[i];
    return NULL;
}

/* reshape's one inferred dim: numel(x) over the other dims, with common
 * factors cancelled ([B, S, 64] to [B, -1] is S*64), else their quotient. */
static int64_t reshape_rest(onnx_imp *im, const cg_tensor_desc *x, const cg_tensor_desc *o, int at) {
    factors num = {1, 0, {0}}, den = {1, 0, {0}};
    for (int i = 0; i < x->ndim; i++)
        if (x->dims[i] == CG_DIM_UNKNOWN || !factor(im, onnx_dim_to_sym(x->dims[i]), &num)) return ONNX_SYM_UNKNOWN;
    for (int i = 0; i < o->ndim; i++)
        if (i != at && (o->dims[i] == CG_DIM_UNKNOWN || !factor(im, onnx_dim_to_sym(o->dims[i]), &den)))
            return ONNX_SYM_UNKNOWN;
    int cancel = den.c && num.c % den.c == 0;
    for (int k = 0; k < den.n && cancel; k++) {
        int j = 0;
        while (j < num.n && num.atom[j] != den.atom[k]) j++;
        if (j == num.n) cancel = 0;
        else num.atom[j] = num.atom[--num.n];
    }
    if (cancel) {
        num.atom[num.n] = num.c / den.c;
        return sym_product(im, num.n + 1, num.atom);
    }
    factors all = {1, 0, {0}};
    for (int i = 0; i < x->ndim; i++) factor(im, onnx_dim_to_sym(x->dims[i]), &all);
    all.atom[all.n] = all.c;
    const int64_t n = sym_product(im, all.n + 1, all.atom);
    int64_t d[CG_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < o->ndim; i++)
        if (i != at) d[nd++] = onnx_dim_to_sym(o->dims[i]);
    return onnx_sym_derive(im, CG_SYM_DIV, n, sym_product(im, nd, d));
}

/* One end of a step-1 slice over a symbolic dim n, clamped as Python's. */
static int64_t slice_end(onnx_imp *im, int64_t n, int64_t v) {
    if (v >= INT64_MAX / 2) return n;
    if (v >= 0) return onnx_sym_derive(im, CG_SYM_MIN, n, v);
    if (v <= INT64_MIN / 2) return 0;
    return onnx_sym_derive(im, CG_SYM_SUB, n, onnx_sym_derive(im, CG_SYM_MIN, n, -v));
}

void onnx_sym_refine(onnx_imp *im, const cg_node *nd, const cg_tensor_desc *in, cg_tensor_desc *out) {
    const cg_attr *ax = node_attr(nd, "axis");
    if (!strcmp(nd->op, "concat") && ax && ax->type == CG_ATTR_INT && nd->n_inputs > 0) {
        const int a = (int)(ax->i < 0 ? ax->i + out->ndim : ax->i);
        if (a < 0 || a >= out->ndim || out->dims[a] != CG_DIM_UNKNOWN) return;
        int64_t sum = 0;
        for (int i = 0; i < nd->n_inputs && sum != ONNX_SYM_UNKNOWN; i++)
            sum = in[i].ndim != out->ndim || in[i].dims[a] == CG_DIM_UNKNOWN
                      ? ONNX_SYM_UNKNOWN
                      : onnx_sym_derive(im, CG_SYM_ADD, sum, onnx_dim_to_sym(in[i].dims[a]));
        out->dims[a] = onnx_sym_to_dim(sum);
    } else if (!strcmp(nd->op, "reshape") && nd->n_inputs == 1) {
        int at = -1, n = 0;
        for (int i = 0; i < out->ndim; i++)
            if (out->dims[i] == CG_DIM_UNKNOWN) at = i, n++;
        if (n == 1) out->dims[at] = onnx_sym_to_dim(reshape_rest(im, &in[0], out, at));
    } else if (!strcmp(nd->op, "slice") && ax && nd->n_inputs == 1) {
        const cg_attr *st = node_attr(nd, "start"), *en = node_attr(nd, "end");
        const int a = (int)(ax->i < 0 ? ax->i + out->ndim : ax->i);
        if (a < 0 || a >= out->ndim || out->dims[a] != CG_DIM_UNKNOWN || in[0].dims[a] == CG_DIM_UNKNOWN) return;
        const int64_t n = onnx_dim_to_sym(in[0].dims[a]);
        const int64_t s = slice_end(im, n, st ? st->i : 0), e = slice_end(im, n, en ? en->i : INT64_MAX);
        out->dims[a] = onnx_sym_to_dim(onnx_sym_derive(im, CG_SYM_SUB, onnx_sym_derive(im, CG_SYM_MAX, e, s), s));
    }
}
