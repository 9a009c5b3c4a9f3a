/* Values made lazily or at plan time: ConstantOfShape of symbolic dims
 * (and the Slices and Expands of one exporters write for an RNN's zero
 * state) kept as one element and dims until read as data, then an expand;
 * shape values read as data become dim_values; Range over dims an arange
 * of the derived length. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "shape.h"

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

/* An i64 value of n elements (n a code or a size) to count along. */
static cg_status value_of_length(onnx_imp *im, int64_t n, const char **like) {
    const int64_t zero = 0, dn = onnx_sym_to_dim(n);
    const char *zname;
    char list[300], a[400];
    cg_status s = const_of(im, CG_I64, 0, NULL, &zero, &zname);
    if (s) return s;
    if (dn == CG_DIM_UNKNOWN || !onnx_named_dims(im, 1, &dn, list, sizeof list))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "a length with no dim to name");
    snprintf(a, sizeof a, "shape: %s", list);
    return emit_tmp(im, "expand", zname, a, like);
}

cg_status onnx_sym_slice_rows(onnx_imp *im, int64_t n, int64_t start, int64_t end, const char **idx) {
    const int64_t s0 = onnx_sym_clamp(im, n, start), e0 = onnx_sym_clamp(im, n, end);
    const int64_t len = onnx_sym_derive(im, CG_SYM_SUB, onnx_sym_derive(im, CG_SYM_MAX, e0, s0), s0);
    const char *like, *seq, *off, *off32;
    cg_status s = value_of_length(im, len, &like);
    if (s) return s;
    if (!onnx_is_sym(s0)) {
        char a[200];
        snprintf(a, sizeof a, "axis: 0, start: %lld, to: \"i32\"", (long long)s0);
        return emit_tmp(im, "arange", like, a, idx);
    }
    char list[300], a[400];
    const int64_t d = onnx_sym_to_dim(s0);
    if (!onnx_named_dims(im, 1, &d, list, sizeof list)) return onnx_fail(im, CG_ERR_UNSUPPORTED, "dims too long");
    snprintf(a, sizeof a, "values: %s, scalar: 1", list);
    const char *outs[1] = {NULL};
    if ((s = emit_tmp(im, "arange", like, "axis: 0, to: \"i32\"", &seq)) ||
        (s = onnx_emit(im, "dim_values", 0, NULL, 1, outs, a)) ||
        (s = emit_tmp(im, "cast", outs[0], "to: \"i32\"", &off32)))
        return s;
    off = off32;
    return emit_tmp2(im, "add", seq, off, NULL, idx);
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
    const char *like, *seq;
    char a[400];
    cg_status s = value_of_length(im, n, &like);
    if (s) return s;
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
