/* Small emission helpers that the ONNX op mappings (onnx_ops.c,
 * onnx_rnn.c) share: static inline so each file keeps the short names
 * without exporting them. */
#ifndef CG_ONNX_OPS_UTIL_H
#define CG_ONNX_OPS_UTIL_H

#include "onnx_imp.h"

#include <string.h>

/* The ONNX name of output o, or NULL where it is absent. */
static inline const char *out_name(onnx_imp *im, int o) {
    const Onnx__NodeProto *n = im->node;
    return (size_t)o < n->n_output && n->output[o] && n->output[o][0] ? n->output[o] : NULL;
}

/* Input i of the current node, which must be present and typed. */
static inline cg_status need_in(onnx_imp *im, int i, onnx_val **v) {
    *v = onnx_in(im, i);
    if (!*v) return onnx_fail(im, CG_ERR_FORMAT, "input %d is missing", i);
    if (!(*v)->typed) return onnx_fail(im, CG_ERR_VERIFY, "input '%s' has no known type", (*v)->name);
    return CG_OK;
}

/* Emits `op` on n_in inputs into the one named output `out`. */
static inline cg_status emit1(onnx_imp *im, const char *op, int n_in, const char *const *ins, const char *out,
                              const char *attrs) {
    const char *outs[1] = {out};
    return onnx_emit(im, op, n_in, ins, 1, outs, attrs);
}

/* A reshape of x into the named value out. */
static inline cg_status emit_reshape(onnx_imp *im, onnx_val *x, int ndim, const int64_t *dims, const char *out) {
    return onnx_emit_reshape(im, x, ndim, dims, &out);
}

/* Emits `op` (attributes a, or NULL) on one input into a fresh value. */
static inline cg_status emit_tmp(onnx_imp *im, const char *op, const char *x, const char *a, const char **out) {
    const char *in[1] = {x};
    *out = NULL;
    return onnx_emit(im, op, 1, in, 1, out, a);
}

/* Emits `op` on two inputs into a fresh value (*out). */
static inline cg_status emit_tmp2(onnx_imp *im, const char *op, const char *a, const char *b, const char *attrs,
                                  const char **out) {
    const char *in[2] = {a, b};
    *out = NULL;
    return onnx_emit(im, op, 2, in, 1, out, attrs);
}

/* A constant of dtype dt and dims d[0..nd) from `data`, made a param. */
static inline cg_status const_of(onnx_imp *im, cg_dtype dt, int nd, const int64_t *d, const void *data,
                                 const char **name) {
    cg_tensor *t;
    cg_status s = cg_tensor_create(dt, nd, d, &t);
    if (s) return s;
    memcpy(cg_tensor_data(t), data, (size_t)cg_tensor_numel(t) * cg_dtype_size(dt));
    return onnx_const_param(im, t, name);
}

#endif
