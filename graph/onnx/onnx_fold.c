/* Constant folding at import: a node whose inputs are all known (and Shape
 * and Size of a value with concrete dims) is evaluated here, on the host,
 * and never becomes a clgraph node. This covers the shape arithmetic that
 * exporters emit (Shape -> Gather -> Unsqueeze -> Concat -> Reshape,
 * ConstantOfShape, Range) and small constant math. Integers are computed
 * in int64, floats in double and rounded to the output's dtype. */
#include "onnx_imp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "narrow.h"
#include "error.h"
#include "shape.h"

static int is_float(cg_dtype t) { return t == CG_F32 || t == CG_F16 || t == CG_BF16; }

static double get_f(const cg_tensor *t, int64_t i) {
    uint32_t b;
    float f;
    switch (t->dtype) {
    case CG_F32: return ((const float *)t->data)[i];
    case CG_F16:
    case CG_BF16:
        b = t->dtype == CG_F16 ? cg_f16_to_f32_bits(((const uint16_t *)t->data)[i])
                               : cg_bf16_to_f32_bits(((const uint16_t *)t->data)[i]);
        memcpy(&f, &b, 4);
        return f;
    case CG_I32: return ((const int32_t *)t->data)[i];
    case CG_I64: return (double)((const int64_t *)t->data)[i];
    case CG_I8: return ((const int8_t *)t->data)[i];
    case CG_I16: return ((const int16_t *)t->data)[i];
    case CG_U16: return ((const uint16_t *)t->data)[i];
    case CG_U32: return ((const uint32_t *)t->data)[i];
    case CG_U64: return (double)((const uint64_t *)t->data)[i];
    default: return ((const uint8_t *)t->data)[i];
    }
}

static int64_t get_i(const cg_tensor *t, int64_t i) {
    switch (t->dtype) {
    case CG_I32: return ((const int32_t *)t->data)[i];
    case CG_I64: return ((const int64_t *)t->data)[i];
    case CG_I8: return ((const int8_t *)t->data)[i];
    case CG_U8:
    case CG_BOOL: return ((const uint8_t *)t->data)[i];
    case CG_I16: return ((const int16_t *)t->data)[i];
    case CG_U16: return ((const uint16_t *)t->data)[i];
    case CG_U32: return ((const uint32_t *)t->data)[i];
    case CG_U64: return (int64_t)((const uint64_t *)t->data)[i]; /* the bits: wraps as u64 arithmetic does */
    default: {
        double d = get_f(t, i);
        /* 2^63 and -2^63 are exact in a double; the cast op saturates there */
        return isnan(d)                     ? 0
               : d >= 9223372036854775808.0 ? INT64_MAX
               : d < -9223372036854775808.0 ? INT64_MIN
                                            : (int64_t)d;
    }
    }
}

static void set_f(cg_tensor *t, int64_t i, double v) {
    float f = (float)v;
    uint32_t b;
    switch (t->dtype) {
    case CG_F32: ((float *)t->data)[i] = f; return;
    case CG_F16:
    case CG_BF16:
        memcpy(&b, &f, 4);
        ((uint16_t *)t->data)[i] = t->dtype == CG_F16 ? cg_f32_to_f16_bits(b) : cg_f32_to_bf16_bits(b);
        return;
    default: return;
    }
}

static void set_i(cg_tensor *t, int64_t i, int64_t v) {
    switch (t->dtype) {
    case CG_I32: ((int32_t *)t->data)[i] = (int32_t)v; return;
    case CG_I64: ((int64_t *)t->data)[i] = v; return;
    case CG_I8: ((int8_t *)t->data)[i] = (int8_t)v; return;
    case CG_U8: ((uint8_t *)t->data)[i] = (uint8_t)v; return;
    case CG_BOOL: ((uint8_t *)t->data)[i] = v != 0; return;
    case CG_I16: ((int16_t *)t->data)[i] = (int16_t)v; return;
    case CG_U16: ((uint16_t *)t->data)[i] = (uint16_t)v; return;
    case CG_U32: ((uint32_t *)t->data)[i] = (uint32_t)v; return;
    case CG_U64: ((uint64_t *)t->data)[i] = (uint64_t)v; return;
    default: set_f(t, i, (double)v); return;
    }
}

/* Copies element i of a to element j of b (same dtype). */
static void copy_el(const cg_tensor *a, int64_t i, cg_tensor *b, int64_t j) {
    size_t es = cg_dtype_size(a->dtype);
    memcpy((char *)b->data + (size_t)j * es, (const char *)a->data + (size_t)i * es, es);
}

/* Folding is for shape arithmetic and small constants: an output of more
 * elements than this stays a node (and fails there if unsupported). */
#define FOLD_MAX_ELEMENTS ((int64_t)1 << 24)

static cg_tensor *new_t(cg_dtype dt, int ndim, const int64_t *dims) {
    cg_tensor *t;
    if (!cg_shape_fits(ndim, dims) || cg_shape_numel(ndim, dims) > FOLD_MAX_ELEMENTS) return NULL;
    return cg_tensor_alloc(dt, ndim, dims, &t) ? NULL : t;
}

/* Flat index into x (broadcast to out's dims) for out's multi-index. */
static int64_t bcast_index(const cg_tensor *x, int ndim, const int64_t *idx) {
    int64_t k = 0;
    for (int d = 0; d < x->ndim; d++) {
        int od = ndim - x->ndim + d;
        int64_t i = x->dims[d] == 1 ? 0 : idx[od];
        k = k * x->dims[d] + i;
    }
    return k;
}

static int bcast_shape(int n, const cg_tensor *const *xs, int *ndim, int64_t *dims) {
    *ndim = 0;
    for (int i = 0; i < n; i++)
        if (xs[i]->ndim > *ndim) *ndim = xs[i]->ndim;
    for (int d = 0; d < *ndim; d++) dims[d] = 1;
    for (int i = 0; i < n; i++)
        for (int d = 0; d < xs[i]->ndim; d++) {
            int od = *ndim - xs[i]->ndim + d;
            int64_t v = xs[i]->dims[d];
            if (v == dims[od] || v == 1) continue;
            if (dims[od] != 1) return 0;
            dims[od] = v;
        }
    return 1;
}

static void next_index(int ndim, const int64_t *dims, int64_t *idx) {
    for (int d = ndim - 1; d >= 0; d--) {
        if (++idx[d] < dims[d]) return;
        idx[d] = 0;
    }
}

typedef enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MOD, B_FMOD, B_EQ, B_LT, B_GT, B_MAX, B_MIN, B_AND, B_OR } bop;

/* The ops whose u64 result is not int64's on the same bits (order,
 * division) in unsigned arithmetic; 0 with *ok 0 for a division by 0. */
static int64_t u64_op(bop op, uint64_t x, uint64_t y, int *ok) {
    switch (op) {
    case B_DIV:
    case B_MOD:
    case B_FMOD:
        if (y == 0) return *ok = 0, 0;
        return (int64_t)(op == B_DIV ? x / y : x % y);
    case B_MAX: return (int64_t)(x > y ? x : y);
    case B_MIN: return (int64_t)(x < y ? x : y);
    case B_LT: return x < y;
    default: return x > y; /* B_GT */
    }
}

static int u64_specific(bop op) {
    return op == B_DIV || op == B_MOD || op == B_FMOD || op == B_MAX || op == B_MIN || op == B_LT || op == B_GT;
}

static cg_tensor *binary(bop op, const cg_tensor *a, const cg_tensor *b) {
    const cg_tensor *xs[2] = {a, b};
    int ndim;
    int64_t dims[CG_MAX_DIMS], idx[CG_MAX_DIMS] = {0};
    if (a->dtype != b->dtype || !bcast_shape(2, xs, &ndim, dims)) return NULL;
    int cmp = op == B_EQ || op == B_LT || op == B_GT || op == B_AND || op == B_OR;
    cg_tensor *o = new_t(cmp ? CG_BOOL : a->dtype, ndim, dims);
    if (!o) return NULL;
    int64_t n = cg_shape_numel(ndim, dims);
    int fl = is_float(a->dtype);
    for (int64_t i = 0; i < n; i++, next_index(ndim, dims, idx)) {
        int64_t ia = bcast_index(a, ndim, idx), ib = bcast_index(b, ndim, idx);
        if (fl) {
            double x = get_f(a, ia), y = get_f(b, ib), r = 0;
            switch (op) {
            case B_ADD: r = x + y; break;
            case B_SUB: r = x - y; break;
            case B_MUL: r = x * y; break;
            case B_DIV: r = x / y; break;
            case B_MOD:
            case B_FMOD: r = fmod(x, y); break; /* floats: fmod 1 (ONNX) */
            case B_MAX: r = x > y || isnan(x) ? x : y; break;
            case B_MIN: r = x < y || isnan(x) ? x : y; break;
            case B_EQ: r = x == y; break;
            case B_LT: r = x < y; break;
            case B_GT: r = x > y; break;
            default: r = (x != 0) && (y != 0); break;
            }
            if (cmp) set_i(o, i, (int64_t)r);
            else set_f(o, i, r);
        } else if (a->dtype == CG_U64 && u64_specific(op)) {
            int ok = 1;
            int64_t r = u64_op(op, (uint64_t)get_i(a, ia), (uint64_t)get_i(b, ib), &ok);
            if (!ok) {
                cg_tensor_free(o);
                return NULL;
            }
            set_i(o, i, r);
        } else {
            int64_t x = get_i(a, ia), y = get_i(b, ib), r = 0;
            switch (op) {
            case B_ADD: r = (int64_t)((uint64_t)x + (uint64_t)y); break;
            case B_SUB: r = (int64_t)((uint64_t)x - (uint64_t)y); break;
            case B_MUL: r = (int64_t)((uint64_t)x * (uint64_t)y); break;
            case B_DIV:
                if (y == 0 || (y == -1 && x == INT64_MIN)) {
                    cg_tensor_free(o);
                    return NULL;
                }
                r = x / y;
                break;
            case B_MOD:
            case B_FMOD:
                if (y == 0) {
                    cg_tensor_free(o);
                    return NULL;
                }
                r = y == -1 ? 0 : x % y;
                /* fmod 0: the sign of the divisor, as Python's % */
                if (op == B_MOD && r != 0 && ((r < 0) != (y < 0))) r += y;
                break;
            case B_MAX: r = x > y ? x : y; break;
            case B_MIN: r = x < y ? x : y; break;
            case B_EQ: r = x == y; break;
            case B_LT: r = x < y; break;
            case B_GT: r = x > y; break;
            case B_AND: r = x && y; break;
            default: r = x || y; break;
            }
            set_i(o, i, r);
        }
    }
    return o;
}

/* axis in [-r, r) as [0, r), or -1. */
static int norm_axis(int64_t a, int r) { return a < -r || a >= r ? -1 : (int)(a < 0 ? a + r : a); }

static cg_tensor *reshaped(const cg_tensor *x, int ndim, const int64_t *dims) {
    if (cg_shape_numel(ndim, dims) != cg_shape_numel(x->ndim, x->dims)) return NULL;
    cg_tensor *o = new_t(x->dtype, ndim, dims);
    if (o) memcpy(o->data, x->data, (size_t)cg_shape_numel(ndim, dims) * cg_dtype_size(x->dtype));
    return o;
}

/* ONNX Reshape's target (0 copies, -1 infers) against x's dims. */
static int reshape_dims(const cg_tensor *x, const cg_tensor *s, int allowzero, int *ndim, int64_t *dims) {
    if (s->ndim != 1 || s->dims[0] > CG_MAX_DIMS) return 0;
    *ndim = (int)s->dims[0];
    int neg = -1;
    int64_t known = 1;
    for (int i = 0; i < *ndim; i++) {
        int64_t v = get_i(s, i);
        if (v == 0 && !allowzero) {
            if (i >= x->ndim) return 0;
            v = x->dims[i];
        }
        if (v == -1) {
            if (neg >= 0) return 0;
            neg = i;
            continue;
        }
        if (v < 0) return 0;
        dims[i] = v;
        known *= v;
    }
    if (neg >= 0) {
        int64_t total = cg_shape_numel(x->ndim, x->dims);
        if (known == 0 || total % known) return 0;
        dims[neg] = total / known;
    }
    return 1;
}

/* Unsqueeze / Squeeze dims: axes inserted / removed. */
static int squeeze_dims(const cg_tensor *x, const int64_t *axes, int n_axes, int unsqueeze, int *ndim, int64_t *dims) {
    int mark[CG_MAX_DIMS] = {0};
    if (unsqueeze) {
        *ndim = x->ndim + n_axes;
        if (*ndim > CG_MAX_DIMS) return 0;
        for (int i = 0; i < n_axes; i++) {
            int a = norm_axis(axes[i], *ndim);
            if (a < 0 || mark[a]) return 0;
            mark[a] = 1;
        }
        for (int d = 0, k = 0; d < *ndim; d++) dims[d] = mark[d] ? 1 : x->dims[k++];
        return 1;
    }
    for (int i = 0; i < n_axes; i++) {
        int a = norm_axis(axes[i], x->ndim);
        if (a < 0 || x->dims[a] != 1) return 0;
        mark[a] = 1;
    }
    *ndim = 0;
    for (int d = 0; d < x->ndim; d++)
        if (!(n_axes ? mark[d] : x->dims[d] == 1)) dims[(*ndim)++] = x->dims[d];
    return 1;
}

static cg_tensor *concat(const cg_tensor *const *xs, int n, int64_t axis) {
    if (n < 1) return NULL;
    int r = xs[0]->ndim, a = norm_axis(axis, r);
    if (a < 0) return NULL;
    int64_t dims[CG_MAX_DIMS];
    memcpy(dims, xs[0]->dims, sizeof dims);
    dims[a] = 0;
    for (int i = 0; i < n; i++) {
        if (xs[i]->ndim != r || xs[i]->dtype != xs[0]->dtype) return NULL;
        for (int d = 0; d < r; d++)
            if (d != a && xs[i]->dims[d] != xs[0]->dims[d]) return NULL;
        dims[a] += xs[i]->dims[a];
    }
    cg_tensor *o = new_t(xs[0]->dtype, r, dims);
    if (!o) return NULL;
    int64_t outer = cg_shape_numel(a, dims), inner = cg_shape_numel(r - a - 1, dims + a + 1);
    size_t es = cg_dtype_size(o->dtype);
    char *dst = o->data;
    for (int64_t k = 0; k < outer; k++)
        for (int i = 0; i < n; i++) {
            size_t row = (size_t)(xs[i]->dims[a] * inner) * es;
            memcpy(dst, (const char *)xs[i]->data + (size_t)k * row, row);
            dst += row;
        }
    return o;
}

static cg_tensor *gather(const cg_tensor *x, const cg_tensor *ind, int64_t axis) {
    int a = norm_axis(axis, x->ndim);
    if (a < 0 || x->ndim + ind->ndim - 1 > CG_MAX_DIMS) return NULL;
    int64_t dims[CG_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < a; d++) dims[nd++] = x->dims[d];
    for (int d = 0; d < ind->ndim; d++) dims[nd++] = ind->dims[d];
    for (int d = a + 1; d < x->ndim; d++) dims[nd++] = x->dims[d];
    cg_tensor *o = new_t(x->dtype, nd, dims);
    if (!o) return NULL;
    int64_t outer = cg_shape_numel(a, x->dims), inner = cg_shape_numel(x->ndim - a - 1, x->dims + a + 1);
    int64_t n_ind = cg_shape_numel(ind->ndim, ind->dims), j = 0;
    for (int64_t k = 0; k < outer; k++)
        for (int64_t t = 0; t < n_ind; t++) {
            int64_t i = get_i(ind, t);
            if (i < 0) i += x->dims[a];
            if (i < 0 || i >= x->dims[a]) {
                cg_tensor_free(o);
                return NULL;
            }
            for (int64_t e = 0; e < inner; e++) copy_el(x, (k * x->dims[a] + i) * inner + e, o, j++);
        }
    return o;
}

/* ONNX Slice (any step) on known starts/ends/axes/steps. */
static cg_tensor *slice(const cg_tensor *x, const cg_tensor *st, const cg_tensor *en, const cg_tensor *ax,
                        const cg_tensor *sp) {
    int64_t start[CG_MAX_DIMS], step[CG_MAX_DIMS], dims[CG_MAX_DIMS];
    int r = x->ndim;
    for (int d = 0; d < r; d++) start[d] = 0, step[d] = 1, dims[d] = x->dims[d];
    int64_t n = cg_shape_numel(st->ndim, st->dims);
    if (cg_shape_numel(en->ndim, en->dims) != n) return NULL;
    for (int64_t k = 0; k < n; k++) {
        int a = norm_axis(ax ? get_i(ax, k) : k, r);
        int64_t s = get_i(st, k), e = get_i(en, k), p = sp ? get_i(sp, k) : 1, dim = x->dims[a < 0 ? 0 : a];
        if (a < 0 || p == 0) return NULL;
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        if (p > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            dims[a] = e > s ? (e - s + p - 1) / p : 0;
        } else {
            s = s < 0 ? -1 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            dims[a] = s > e ? (s - e - p - 1) / -p : 0;
        }
        start[a] = s;
        step[a] = p;
    }
    cg_tensor *o = new_t(x->dtype, r, dims);
    if (!o) return NULL;
    int64_t on = cg_shape_numel(r, dims), idx[CG_MAX_DIMS] = {0};
    for (int64_t i = 0; i < on; i++, next_index(r, dims, idx)) {
        int64_t k = 0;
        for (int d = 0; d < r; d++) k = k * x->dims[d] + start[d] + idx[d] * step[d];
        copy_el(x, k, o, i);
    }
    return o;
}

/* The rules of clgraph's cast op (ops/cast.c), so that a Cast folded here
 * gives what the same Cast run on a device gives: floats to integers
 * truncate with NaN 0 and saturate at the target's range, integers to
 * integers keep the low bits, integers to floats round once (as a C cast
 * from int64), anything to bool is x != 0 (NaN is true). */
static cg_tensor *cast(const cg_tensor *x, cg_dtype to) {
    cg_tensor *o = new_t(to, x->ndim, x->dims);
    if (!o) return NULL;
    int64_t n = cg_shape_numel(x->ndim, x->dims), lo = INT64_MIN, hi = INT64_MAX;
    if (to == CG_I32) lo = INT32_MIN, hi = INT32_MAX;
    else if (to == CG_U32) lo = 0, hi = UINT32_MAX;
    else if (to == CG_I16) lo = INT16_MIN, hi = INT16_MAX;
    else if (to == CG_U16) lo = 0, hi = UINT16_MAX;
    else if (to == CG_I8) lo = INT8_MIN, hi = INT8_MAX;
    else if (to == CG_U8) lo = 0, hi = UINT8_MAX;
    for (int64_t i = 0; i < n; i++) {
        if (to == CG_BOOL) {
            set_i(o, i, is_float(x->dtype) ? get_f(x, i) != 0 : get_i(x, i) != 0);
        } else if (is_float(to)) {
            /* one rounding, from the integer itself, as the cast op does */
            float f = x->dtype == CG_U64 ? (float)(uint64_t)get_i(x, i) : (float)get_i(x, i);
            set_f(o, i, is_float(x->dtype) ? get_f(x, i) : (double)f);
        } else if (is_float(x->dtype) && to == CG_U64) {
            double d = get_f(x, i); /* truncated, NaN 0, within [0, 2^64 - 1] */
            set_i(o, i, !(d > 0) ? 0 : d >= 18446744073709551616.0 ? -1 : (int64_t)(uint64_t)d);
        } else if (is_float(x->dtype)) {
            int64_t v = get_i(x, i); /* truncated, NaN 0, within int64 */
            set_i(o, i, v < lo ? lo : v > hi ? hi : v);
        } else {
            set_i(o, i, get_i(x, i));
        }
    }
    return o;
}

/* The known value of input i (NULL when absent or unknown). */
static const cg_tensor *kin(onnx_imp *im, int i) {
    onnx_val *v = onnx_in(im, i);
    return v && v->konst ? v->konst : NULL;
}

/* Input i's value for an op that makes a shape or an index sequence
 * (ConstantOfShape, Range): a constant, or a value given for a graph input
 * (cg_onnx_options.given). They never run on a device: their inputs are
 * shapes, fixed for the import like Reshape's. */
static const cg_tensor *kin_given(onnx_imp *im, int i) { return onnx_known(onnx_in(im, i)); }

/* 1 when every present input is known (Shape and Size excepted). */
static int all_known(onnx_imp *im) {
    const Onnx__NodeProto *n = im->node;
    for (size_t i = 0; i < n->n_input; i++) {
        if (!n->input[i] || !n->input[i][0]) continue;
        if (!kin(im, (int)i)) return 0;
    }
    return 1;
}

static int concrete(const onnx_val *v) {
    if (!v || !v->typed) return 0;
    for (int d = 0; d < v->desc.ndim; d++)
        if (v->desc.dims[d] < 0) return 0;
    return 1;
}

static cg_tensor *ints_tensor(int n, const int64_t *v) {
    int64_t d = n;
    cg_tensor *t = new_t(CG_I64, 1, &d);
    if (t && n) memcpy(t->data, v, (size_t)n * 8);
    return t;
}

/* The node's axes: the attribute (older opsets) or input k. */
static int axes_of(onnx_imp *im, int k, int64_t *axes, int *n) {
    int na;
    const int64_t *a = onnx_attr_ints(im, "axes", &na);
    if (a) {
        if (na > CG_MAX_DIMS) return 0;
        memcpy(axes, a, (size_t)na * 8);
        *n = na;
        return 1;
    }
    const cg_tensor *t = kin(im, k);
    *n = 0;
    if (!t) return onnx_in(im, k) == NULL;
    int64_t c = cg_shape_numel(t->ndim, t->dims);
    if (c > CG_MAX_DIMS) return 0;
    for (int64_t i = 0; i < c; i++) axes[i] = get_i(t, i);
    *n = (int)c;
    return 1;
}

/* ConstantOfShape of a known shape. */
static cg_tensor *fold_constant_of_shape(onnx_imp *im) {
    const cg_tensor *a = kin_given(im, 0);
    int64_t dims[CG_MAX_DIMS];
    if (!a) return NULL;
    int64_t n = cg_shape_numel(a->ndim, a->dims);
    if (a->ndim != 1 || n > CG_MAX_DIMS) return NULL;
    for (int64_t i = 0; i < n; i++)
        if ((dims[i] = get_i(a, i)) < 0) return NULL;
    const Onnx__AttributeProto *va = onnx_attr_typed(im, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    cg_tensor *val = NULL;
    if (va && va->t && cg_onnx_tensor(va->t, NULL, im->path, "ConstantOfShape value", &val)) return NULL;
    if (!cg_shape_fits((int)n, dims)) {
        cg_tensor_free(val);
        return NULL;
    }
    cg_tensor *o = new_t(val ? val->dtype : CG_F32, (int)n, dims);
    int64_t m = cg_shape_numel((int)n, dims);
    for (int64_t i = 0; o && i < m; i++)
        if (val) copy_el(val, 0, o, i);
        else ((float *)o->data)[i] = 0;
    cg_tensor_free(val);
    return o;
}

/* Range of known start, limit and delta. */
static cg_tensor *fold_range(onnx_imp *im) {
    const cg_tensor *a = kin_given(im, 0), *b = kin_given(im, 1), *d = kin_given(im, 2);
    if (!a || !b || !d || cg_shape_numel(a->ndim, a->dims) != 1 || cg_shape_numel(b->ndim, b->dims) != 1 ||
        cg_shape_numel(d->ndim, d->dims) != 1)
        return NULL;
    double s = get_f(a, 0), l = get_f(b, 0), st = get_f(d, 0);
    if (st == 0 || a->dtype != b->dtype || a->dtype != d->dtype) return NULL;
    double cnt = ceil((l - s) / st);
    int64_t n = cnt > 0 ? (int64_t)cnt : 0;
    if (n > FOLD_MAX_ELEMENTS) return NULL;
    cg_tensor *o = new_t(a->dtype, 1, &n);
    for (int64_t i = 0; o && i < n; i++) {
        if (is_float(a->dtype)) set_f(o, i, s + (double)i * st);
        else set_i(o, i, get_i(a, 0) + i * get_i(d, 0));
    }
    return o;
}

/* Shape (with start and end) and Size of a value of concrete shape. */
static cg_tensor *fold_shape_of(onnx_imp *im, const char *op) {
    onnx_val *v = onnx_in(im, 0);
    if (!concrete(v)) return NULL;
    if (!strcmp(op, "Size")) {
        int64_t n = cg_shape_numel(v->desc.ndim, v->desc.dims);
        cg_tensor *t = new_t(CG_I64, 0, NULL);
        if (t) ((int64_t *)t->data)[0] = n;
        return t;
    }
    int r = v->desc.ndim;
    int64_t s = onnx_attr_int(im, "start", 0), e = onnx_attr_int(im, "end", r);
    if (s < 0) s += r;
    if (e < 0) e += r;
    s = s < 0 ? 0 : s > r ? r : s;
    e = e < 0 ? 0 : e > r ? r : e;
    return ints_tensor(e > s ? (int)(e - s) : 0, v->desc.dims + s);
}

/* Slice: starts, ends and axes as attributes before opset 10, inputs since. */
static cg_tensor *fold_slice(onnx_imp *im, const cg_tensor *a, const cg_tensor *b) {
    if (im->opset >= 10) return a && b && kin(im, 2) ? slice(a, b, kin(im, 2), kin(im, 3), kin(im, 4)) : NULL;
    int ns, ne, nx;
    const int64_t *s = onnx_attr_ints(im, "starts", &ns), *e = onnx_attr_ints(im, "ends", &ne),
                  *x = onnx_attr_ints(im, "axes", &nx);
    if (!a || !s || !e || ns != ne || (x && nx != ns)) return NULL;
    cg_tensor *ts = ints_tensor(ns, s), *te = ints_tensor(ne, e), *tx = x ? ints_tensor(nx, x) : NULL;
    cg_tensor *o = ts && te && (tx || !x) ? slice(a, ts, te, tx, NULL) : NULL;
    cg_tensor_free(ts);
    cg_tensor_free(te);
    cg_tensor_free(tx);
    return o;
}

/* Transpose by perm (reversed dims without it); NULL on a bad perm. PyTorch's
 * TorchScript export of F.pad computes Pad's pads through one. */
static cg_tensor *transpose(onnx_imp *im, const cg_tensor *x) {
    int n, r = x->ndim, seen = 0;
    const int64_t *perm = onnx_attr_ints(im, "perm", &n);
    int64_t p[CG_MAX_DIMS], dims[CG_MAX_DIMS], st[CG_MAX_DIMS], idx[CG_MAX_DIMS] = {0}, s = 1;
    if (n >= 0 && n != r) return NULL;
    for (int i = 0; i < r; i++) {
        p[i] = n < 0 ? r - 1 - i : perm[i];
        if (p[i] < 0 || p[i] >= r || (seen & (1 << p[i]))) return NULL;
        seen |= 1 << p[i];
    }
    for (int i = r - 1; i >= 0; i--) st[i] = s, s *= x->dims[i];
    for (int i = 0; i < r; i++) dims[i] = x->dims[p[i]];
    cg_tensor *o = new_t(x->dtype, r, dims);
    const int64_t total = cg_shape_numel(r, dims);
    for (int64_t j = 0; o && j < total; j++, next_index(r, dims, idx)) {
        int64_t off = 0;
        for (int i = 0; i < r; i++) off += idx[i] * st[p[i]];
        copy_el(x, off, o, j);
    }
    return o;
}

/* The ops that move or retype elements. Returns 0 when op is none of them;
 * otherwise 1, with *o the folded value or NULL when it cannot fold. */
static int fold_layout(onnx_imp *im, const char *op, const cg_tensor *a, const cg_tensor *b, cg_tensor **o) {
    int ndim, na;
    int64_t dims[CG_MAX_DIMS], axes[CG_MAX_DIMS];
    *o = NULL;
    if (!strcmp(op, "Identity")) {
        if (a) *o = reshaped(a, a->ndim, a->dims);
    } else if (!strcmp(op, "Cast")) {
        const Onnx__AttributeProto *to = onnx_attr_typed(im, "to", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
        cg_dtype dt = to && to->has_i ? cg_onnx_dtype((int32_t)to->i) : (cg_dtype)0;
        /* the narrow types: the cast op's own conversions, on the device */
        if (a && dt && !cg_dtype_is_narrow(dt) && !cg_dtype_is_narrow(a->dtype)) *o = cast(a, dt);
    } else if (!strcmp(op, "CastLike")) {
        if (a && b && !cg_dtype_is_narrow(b->dtype) && !cg_dtype_is_narrow(a->dtype)) *o = cast(a, b->dtype);
    } else if (!strcmp(op, "Reshape")) {
        if (a && b && reshape_dims(a, b, (int)onnx_attr_int(im, "allowzero", 0), &ndim, dims))
            *o = reshaped(a, ndim, dims);
    } else if (!strcmp(op, "Flatten")) {
        int ax = a ? norm_axis(onnx_attr_int(im, "axis", 1), a->ndim + 1) : -1;
        int64_t d2[2] = {ax < 0 ? 0 : cg_shape_numel(ax, a->dims),
                         ax < 0 ? 0 : cg_shape_numel(a->ndim - ax, a->dims + ax)};
        if (ax >= 0) *o = reshaped(a, 2, d2);
    } else if (!strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze")) {
        if (a && axes_of(im, 1, axes, &na) && squeeze_dims(a, axes, na, op[0] == 'U', &ndim, dims))
            *o = reshaped(a, ndim, dims);
    } else if (!strcmp(op, "Concat")) {
        const Onnx__NodeProto *n = im->node;
        const cg_tensor *xs[ONNX_MAX_IO];
        if (n->n_input > ONNX_MAX_IO) return 1;
        for (size_t i = 0; i < n->n_input; i++)
            if (!(xs[i] = kin(im, (int)i))) return 1;
        *o = concat(xs, (int)n->n_input, onnx_attr_int(im, "axis", im->opset < 4 ? 1 : 0)); /* 1 before opset 4 */
    } else if (!strcmp(op, "Gather")) {
        if (a && b) *o = gather(a, b, onnx_attr_int(im, "axis", 0));
    } else if (!strcmp(op, "Slice")) {
        *o = fold_slice(im, a, b);
    } else if (!strcmp(op, "Transpose")) {
        if (a) *o = transpose(im, a);
    } else {
        return 0;
    }
    return 1;
}

/* Where: a picks b's element where true, c's where false, broadcast. */
static cg_tensor *fold_where(const cg_tensor *a, const cg_tensor *b, const cg_tensor *c) {
    const cg_tensor *xs[3] = {a, b, c};
    int64_t idx[CG_MAX_DIMS] = {0}, dims[CG_MAX_DIMS];
    int ndim;
    if (b->dtype != c->dtype || !bcast_shape(3, xs, &ndim, dims)) return NULL;
    cg_tensor *o = new_t(b->dtype, ndim, dims);
    int64_t n = cg_shape_numel(ndim, dims);
    for (int64_t i = 0; o && i < n; i++, next_index(ndim, dims, idx))
        get_i(a, bcast_index(a, ndim, idx)) ? copy_el(b, bcast_index(b, ndim, idx), o, i)
                                            : copy_el(c, bcast_index(c, ndim, idx), o, i);
    return o;
}

/* Ceil, Floor, Relu, Abs: exact in any dtype, so the folded value is the
 * op's (Range's function body, as its _expanded tests write it, takes
 * Ceil and Relu of the element count). */
static cg_tensor *fold_exact_unary(const char *op, const cg_tensor *a) {
    const int ceil_ = !strcmp(op, "Ceil"), floor_ = !strcmp(op, "Floor"), relu = !strcmp(op, "Relu");
    if (!ceil_ && !floor_ && !relu && strcmp(op, "Abs")) return NULL;
    const int f = is_float(a->dtype);
    if (!f && a->dtype == CG_BOOL) return NULL;
    cg_tensor *o = new_t(a->dtype, a->ndim, a->dims);
    const int64_t n = o ? cg_shape_numel(a->ndim, a->dims) : 0;
    for (int64_t i = 0; i < n; i++) {
        if (!f) { /* integers: Ceil and Floor are not defined on them */
            const int64_t v = get_i(a, i);
            if (ceil_ || floor_) return cg_tensor_free(o), NULL;
            set_i(o, i, relu ? (v > 0 ? v : 0) : (v < 0 ? -v : v));
            continue;
        }
        const double v = get_f(a, i);
        set_f(o, i, ceil_ ? ceil(v) : floor_ ? floor(v) : relu ? (v > 0 ? v : 0) : fabs(v));
    }
    return o;
}

/* The elementwise ops: binary arithmetic, comparisons and logic, Mod, Neg,
 * Not, Where; Ceil, Floor, Relu, Abs. */
static cg_tensor *fold_arith(onnx_imp *im, const char *op, const cg_tensor *a, const cg_tensor *b) {
    static const struct {
        const char *name;
        bop op;
    } bins[] = {{"Add", B_ADD},    {"Sub", B_SUB}, {"Mul", B_MUL}, {"Div", B_DIV}, {"Equal", B_EQ}, {"Less", B_LT},
                {"Greater", B_GT}, {"Max", B_MAX}, {"Min", B_MIN}, {"And", B_AND}, {"Or", B_OR}};
    for (size_t i = 0; i < sizeof bins / sizeof bins[0]; i++)
        if (!strcmp(op, bins[i].name) && im->node->n_input == 2) return a && b ? binary(bins[i].op, a, b) : NULL;
    if (!strcmp(op, "Mod") && im->node->n_input == 2 && a && b) {
        const int f = onnx_attr_int(im, "fmod", 0) != 0;
        return !f && is_float(a->dtype) ? NULL : binary(f ? B_FMOD : B_MOD, a, b);
    }
    if (!strcmp(op, "Neg") && a) {
        cg_tensor *z = new_t(a->dtype, 0, NULL);
        if (!z) return NULL;
        memset(z->data, 0, cg_dtype_size(a->dtype));
        cg_tensor *o = binary(B_SUB, z, a);
        cg_tensor_free(z);
        return o;
    }
    if (!strcmp(op, "Not") && a && a->dtype == CG_BOOL) {
        cg_tensor *o = cast(a, CG_BOOL);
        int64_t n = o ? cg_shape_numel(o->ndim, o->dims) : 0;
        for (int64_t i = 0; i < n; i++) ((uint8_t *)o->data)[i] ^= 1;
        return o;
    }
    if (!strcmp(op, "Where") && a && b && kin(im, 2)) return fold_where(a, b, kin(im, 2));
    return a && im->node->n_input == 1 ? fold_exact_unary(op, a) : NULL;
}

/* An integer scalar graph input given for the import: a size (a window's
 * length, a count), read where it is cast to compute with it, as the
 * function bodies of HannWindow and the like do before a Range needs it. */
static const cg_tensor *given_size(onnx_imp *im) {
    onnx_val *v = onnx_in(im, 0);
    if (!v || !v->given || v->konst || v->given->ndim != 0) return NULL;
    cg_dtype t = v->given->dtype;
    return t == CG_I64 || t == CG_I32 ? onnx_known(v) : NULL;
}

static cg_tensor *fold_one(onnx_imp *im, const char *op) {
    if (!strcmp(op, "Shape") || !strcmp(op, "Size")) return fold_shape_of(im, op);
    if (!strcmp(op, "Cast") && given_size(im)) {
        cg_tensor *o;
        return fold_layout(im, op, given_size(im), NULL, &o) ? o : NULL;
    }
    if (!strcmp(op, "ConstantOfShape")) return fold_constant_of_shape(im);
    if (!strcmp(op, "Range")) return fold_range(im);
    if (!all_known(im)) return NULL;
    const cg_tensor *a = kin(im, 0), *b = kin(im, 1);
    cg_tensor *o;
    if (fold_layout(im, op, a, b, &o)) return o;
    /* the narrow types are moved and cast here, never computed with */
    for (int i = 0; i < (int)im->node->n_input; i++)
        if (kin(im, i) && cg_dtype_is_narrow(kin(im, i)->dtype)) return NULL;
    return fold_arith(im, op, a, b);
}

static int fold_constant(onnx_imp *im) {
    const Onnx__AttributeProto *a = NULL;
    const Onnx__NodeProto *n = im->node;
    for (size_t i = 0; i < n->n_attribute && !a; i++) a = n->attribute[i];
    if (!a || n->n_attribute != 1 || !a->name)
        return onnx_fail(im, CG_ERR_FORMAT, "a Constant needs exactly one value attribute"), -1;
    cg_tensor *t = NULL;
    cg_status s = CG_OK;
    const char *k = a->name;
    /* the attribute's name says its type (Constant's definition) */
    Onnx__AttributeProto__AttributeType want =
        !strcmp(k, "value")          ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR
        : !strcmp(k, "value_float")  ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT
        : !strcmp(k, "value_int")    ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT
        : !strcmp(k, "value_floats") ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS
        : !strcmp(k, "value_ints")   ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS
                                     : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
    if (want && !onnx_attr_check(im, a, want)) return -1; /* import_graph names the attribute */
    if (!strcmp(k, "value") && a->t) {
        s = cg_onnx_tensor(a->t, im->dir, im->path, "Constant value", &t);
    } else if (!strcmp(k, "value_float") || !strcmp(k, "value_int")) {
        int f = k[6] == 'f';
        s = cg_tensor_alloc(f ? CG_F32 : CG_I64, 0, NULL, &t);
        if (!s && f) ((float *)t->data)[0] = a->f;
        else if (!s) ((int64_t *)t->data)[0] = a->i;
    } else if (!strcmp(k, "value_floats") || !strcmp(k, "value_ints")) {
        int f = k[6] == 'f';
        int64_t c = f ? (int64_t)a->n_floats : (int64_t)a->n_ints;
        s = cg_tensor_alloc(f ? CG_F32 : CG_I64, 1, &c, &t);
        if (!s && c) memcpy(t->data, f ? (const void *)a->floats : (const void *)a->ints, (size_t)c * (f ? 4 : 8));
    } else {
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "Constant attribute '%s' is not supported", k), -1;
    }
    if (s) {
        cg_error(s, "%s: node '%s' (Constant, #%d): %s", im->path, n->name ? n->name : "", im->node_index,
                 cg_last_error());
        return -1;
    }
    return onnx_set_const(im, 0, t) ? -1 : 1;
}

int64_t cg_onnx_int_at(const cg_tensor *t, int64_t i) { return get_i(t, i); }
double cg_onnx_float_at(const cg_tensor *t, int64_t i) { return get_f(t, i); }
void cg_onnx_set_at(cg_tensor *t, int64_t i, double v) {
    if (is_float(t->dtype)) set_f(t, i, v);
    else set_i(t, i, (int64_t)v);
}

int cg_onnx_fold(onnx_imp *im) {
    const char *op = im->node->op_type;
    if (!strcmp(op, "Constant")) return fold_constant(im);
    /* opsets 1 to 6: broadcast along an axis is not NumPy's; the mapping
     * lines the operands up (onnx_ops.c) */
    if (im->opset < 7 && onnx_attr(im, "broadcast") && onnx_attr(im, "axis")) return 0;
    cg_tensor *t = fold_one(im, op);
    if (!t) return 0;
    return onnx_set_const(im, 0, t) ? -1 : 1;
}
