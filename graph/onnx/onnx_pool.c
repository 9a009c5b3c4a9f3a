/* Pooling: MaxPool (both outputs), AveragePool and LpPool onto clgraph's
 * max_pool, avg_pool and lp_pool with ONNX's windows carried over;
 * GlobalAveragePool, GlobalMaxPool and GlobalLpPool onto reductions over
 * the spatial axes (any spatial rank, symbolic sizes included). */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <string.h>

/* Appends ", name: [v...]" for an INTS attribute the node sets. */
static void add_ints(onnx_imp *im, char *buf, size_t size, const char *name) {
    int n;
    const int64_t *v = onnx_attr_ints(im, name, &n);
    if (!v || n <= 0) return;
    size_t u = strlen(buf);
    u += (size_t)snprintf(buf + u, size - u, "%s%s: [", u ? ", " : "", !strcmp(name, "kernel_shape") ? "kernel" : name);
    for (int i = 0; i < n && u < size; i++)
        u += (size_t)snprintf(buf + u, size - u, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (u < size) snprintf(buf + u, size - u, "]");
}

/* The window attributes every pool shares, in clgraph's spelling. */
static cg_status window_attrs(onnx_imp *im, const onnx_val *x, char *a, size_t size) {
    const int nsp = x->desc.ndim - 2;
    int n;
    if (nsp < 1 || nsp > 3)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "input '%s' has %d dims; [N, C] and 1 to 3 spatial axes are supported",
                         x->name, x->desc.ndim);
    if (!onnx_attr_ints(im, "kernel_shape", &n) || n <= 0)
        return onnx_fail(im, CG_ERR_FORMAT, "no 'kernel_shape' attribute");
    add_ints(im, a, size, "kernel_shape");
    add_ints(im, a, size, "strides");
    add_ints(im, a, size, "dilations");
    add_ints(im, a, size, "pads");
    size_t u = strlen(a);
    snprintf(a + u, size - u, ", ceil_mode: %lld", (long long)onnx_attr_int(im, "ceil_mode", 0));
    const Onnx__AttributeProto *ap = onnx_attr_typed(im, "auto_pad", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (!ap || !ap->has_s || ap->s.len == 0) return CG_OK;
    static const char *const onnx[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    static const char *const ours[] = {"", "same_upper", "same_lower", "valid"};
    for (int i = 0; i < 4; i++) {
        if (ap->s.len != strlen(onnx[i]) || memcmp(ap->s.data, onnx[i], ap->s.len)) continue;
        u = strlen(a);
        if (i) snprintf(a + u, size - u, ", auto_pad: \"%s\"", ours[i]);
        return CG_OK;
    }
    return onnx_fail(im, CG_ERR_UNSUPPORTED, "auto_pad '%.*s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                     (int)(ap->s.len > 40 ? 40 : ap->s.len), (const char *)ap->s.data);
}

/* LpPool's and GlobalLpPool's p: a float before opset 2, an int since. */
static double attr_p(onnx_imp *im) {
    const Onnx__AttributeProto *a = onnx_attr(im, "p");
    if (!a) return 2.0;
    return a->has_f && !a->has_i ? (double)a->f : (double)a->i;
}

/* MaxPool (1, 8, 10, 11, 12, 22), AveragePool (1, 7, 10, 11, 19, 22),
 * LpPool (1, 2, 11, 18, 22). */
cg_status cg_onnx_map_pool(onnx_imp *im) {
    static const char *const known[] = {"auto_pad", "ceil_mode",         "dilations", "kernel_shape",  "pads",
                                        "strides",  "count_include_pad", "p",         "storage_order", NULL};
    const char *op_type = im->node->op_type;
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    const int max = !strcmp(op_type, "MaxPool"), avg = !strcmp(op_type, "AveragePool");
    if ((!max && onnx_attr(im, "storage_order")) || (!avg && onnx_attr(im, "count_include_pad")) ||
        ((max || avg) && onnx_attr(im, "p")))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "an attribute of another pooling op");
    char a[700] = "";
    if ((s = window_attrs(im, x, a, sizeof a))) return s;
    const size_t u = strlen(a);
    if (max) snprintf(a + u, sizeof a - u, ", storage_order: %lld", (long long)onnx_attr_int(im, "storage_order", 0));
    if (avg)
        snprintf(a + u, sizeof a - u, ", count_include_pad: %lld",
                 (long long)onnx_attr_int(im, "count_include_pad", 0));
    if (!max && !avg) snprintf(a + u, sizeof a - u, ", p: %.17g", attr_p(im));
    const char *in[1] = {x->name};
    const char *outs[2] = {out_name(im, 0), out_name(im, 1)};
    const int n_out = max && outs[1] ? 2 : 1;
    if (max && x->desc.dtype != CG_F32 && x->desc.dtype != CG_I8 && x->desc.dtype != CG_U8)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "MaxPool of %s (float, int8, uint8)",
                         cg_dtype_name((cg_dtype)x->desc.dtype));
    if (!outs[0] && n_out == 2) outs[0] = NULL;
    return onnx_emit(im, max ? "max_pool" : avg ? "avg_pool" : "lp_pool", 1, in, n_out, outs, a);
}

/* GlobalAveragePool, GlobalMaxPool, GlobalLpPool: a reduction over every
 * axis from 2 on, kept as size 1 (Lp: |x|^p summed, then the p-th root;
 * p 2 as x * x and sqrt). */
cg_status cg_onnx_map_global_pool(onnx_imp *im) {
    static const char *const known[] = {"p", NULL};
    const char *op_type = im->node->op_type;
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    const int lp = !strcmp(op_type, "GlobalLpPool");
    if (!lp && onnx_attr(im, "p")) return onnx_fail(im, CG_ERR_UNSUPPORTED, "attribute 'p' is not supported");
    if (x->desc.ndim < 3)
        return onnx_fail(im, CG_ERR_FORMAT, "input '%s' has %d dims, [N, C, spatial...] expected", x->name,
                         x->desc.ndim);
    char at[200];
    size_t u = (size_t)snprintf(at, sizeof at, "axes: [");
    for (int i = 2; i < x->desc.ndim; i++) u += (size_t)snprintf(at + u, sizeof at - u, "%s%d", i > 2 ? ", " : "", i);
    snprintf(at + u, sizeof at - u, "], keepdims: 1");
    const char *in[1] = {x->name};
    if (!lp)
        return emit1(im, strcmp(op_type, "GlobalMaxPool") ? "reduce_mean" : "reduce_max", 1, in, out_name(im, 0), at);
    const double p = attr_p(im);
    if (!(p > 0.0)) return onnx_fail(im, CG_ERR_FORMAT, "p must be positive, got %g", p);
    const float pf = (float)p, inv = (float)(1.0 / p);
    const int64_t one = 1;
    const char *v = NULL, *pc = NULL, *sum = NULL, *ipc = NULL;
    if (p == 2.0) s = emit_tmp2(im, "mul", x->name, x->name, NULL, &v);
    else if ((s = emit_tmp(im, "abs", x->name, NULL, &v)) == CG_OK && p != 1.0 &&
             (s = const_of(im, CG_F32, 1, &one, &pf, &pc)) == CG_OK)
        s = emit_tmp2(im, "pow", v, pc, NULL, &v);
    if (s) return s;
    if (p == 1.0) return emit1(im, "reduce_sum", 1, &v, out_name(im, 0), at);
    if ((s = emit_tmp(im, "reduce_sum", v, at, &sum))) return s;
    if (p == 2.0) return emit1(im, "sqrt", 1, &sum, out_name(im, 0), NULL);
    if ((s = const_of(im, CG_F32, 1, &one, &inv, &ipc))) return s;
    const char *two[2] = {sum, ipc};
    return emit1(im, "pow", 2, two, out_name(im, 0), NULL);
}
