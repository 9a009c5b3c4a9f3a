/* ONNX nodes made inside a mapping: an op the importer maps already
 * (Gather, Transpose, MatMul, ...) applied to values of the current node,
 * so that a composite op (Compress, DFT, LRN, ...) is written as the ONNX
 * ops its definition uses and gets their checks, folding and dtype
 * handling. The sub-node keeps the current node's name, so the clgraph
 * nodes it makes and its messages name the node being imported. */
#include "onnx_imp.h"

#include <stdio.h>
#include <string.h>

cg_status onnx_new_const(onnx_imp *im, cg_tensor *t, const char **name) {
    onnx_val *v = onnx_val_get(im, onnx_fresh(im, "k"));
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
    return CG_OK;
}

cg_status onnx_new_const_data(onnx_imp *im, cg_dtype dt, int ndim, const int64_t *dims, const void *data,
                              const char **name) {
    cg_tensor *t;
    cg_status s = cg_tensor_alloc(dt, ndim, dims, &t);
    if (s) return s;
    if (data) memcpy(cg_tensor_data(t), data, (size_t)cg_tensor_numel(t) * cg_dtype_size(dt));
    return onnx_new_const(im, t, name);
}

onnx_sub_attr onnx_sub_int(const char *name, int64_t v) {
    onnx_sub_attr a;
    onnx__attribute_proto__init(&a.a);
    a.a.name = (char *)name;
    a.a.has_type = 1;
    a.a.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a.a.has_i = 1;
    a.a.i = v;
    return a;
}

onnx_sub_attr onnx_sub_float(const char *name, double v) {
    onnx_sub_attr a;
    onnx__attribute_proto__init(&a.a);
    a.a.name = (char *)name;
    a.a.has_type = 1;
    a.a.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    a.a.has_f = 1;
    a.a.f = (float)v;
    return a;
}

onnx_sub_attr onnx_sub_ints(const char *name, int n, const int64_t *v) {
    onnx_sub_attr a;
    onnx__attribute_proto__init(&a.a);
    a.a.name = (char *)name;
    a.a.has_type = 1;
    a.a.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    a.a.n_ints = (size_t)n;
    a.a.ints = (int64_t *)v;
    return a;
}

/* The sub-node's outputs: the given names, or fresh values (named in
 * names[], which outs[] then points into). */
static cg_status sub_outputs(onnx_imp *im, int n_out, const char **outs, char (*names)[600], char **out) {
    for (int i = 0; i < n_out; i++) {
        if (!outs[i]) {
            snprintf(names[i], sizeof names[i], "%s", onnx_fresh(im, "s"));
            if (!onnx_val_get(im, names[i])) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
            outs[i] = onnx_val_get(im, names[i])->name;
        }
        out[i] = (char *)outs[i];
    }
    return CG_OK;
}

cg_status onnx_sub_node(onnx_imp *im, const char *op_type, int n_in, const char *const *ins, int n_out,
                        const char **outs, int n_attrs, onnx_sub_attr *attrs) {
    const Onnx__NodeProto *n = im->node;
    char *in[ONNX_MAX_IO], *out[ONNX_MAX_IO];
    char names[8][600];
    Onnx__AttributeProto *ap[16];
    if (n_in > ONNX_MAX_IO || n_out > 8 || n_attrs > 16)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "too many inputs or outputs");
    onnx_map_fn fn = cg_onnx_find_op(op_type);
    if (!fn) return onnx_fail(im, CG_ERR_UNSUPPORTED, "operator %s is not supported", op_type);
    cg_status s = sub_outputs(im, n_out, outs, names, out);
    if (s) return s;
    for (int i = 0; i < n_in; i++) in[i] = (char *)(ins[i] ? ins[i] : "");
    for (int i = 0; i < n_attrs; i++) ap[i] = &attrs[i].a;
    Onnx__NodeProto sub = *n;
    sub.op_type = (char *)op_type;
    sub.domain = NULL;
    sub.input = in;
    sub.n_input = (size_t)n_in;
    sub.output = out;
    sub.n_output = (size_t)n_out;
    sub.attribute = ap;
    sub.n_attribute = (size_t)n_attrs;
    im->node = &sub;
    int f = cg_onnx_fold(im);
    s = f < 0 ? CG_ERR_UNSUPPORTED : f > 0 ? CG_OK : cg_onnx_map(im, fn);
    im->node = n;
    return s;
}

cg_status onnx_sub2(onnx_imp *im, const char *op, const char *a, const char *b, const char **out) {
    const char *in[2] = {a, b};
    return onnx_sub_node(im, op, 2, in, 1, out, 0, NULL);
}

cg_status onnx_sub_scalar(onnx_imp *im, cg_dtype dt, double v, const char **name) {
    const float f = (float)v;
    const int64_t i = (int64_t)v;
    return onnx_new_const_data(im, dt, 0, NULL, dt == CG_F32 ? (const void *)&f : (const void *)&i, name);
}

int onnx_attr_str(onnx_imp *im, const char *name, const char *def, char *buf, size_t size) {
    const Onnx__AttributeProto *a = onnx_attr_typed(im, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (!a || !a->has_s) return snprintf(buf, size, "%s", def) < (int)size;
    if (a->s.len >= size) return 0;
    memcpy(buf, a->s.data, a->s.len);
    buf[a->s.len] = 0;
    return 1;
}
