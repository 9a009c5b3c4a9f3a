/* Convolutions and pooling: Conv, ConvTranspose, MaxPool, AveragePool,
 * LpPool onto clgraph's conv, conv_transpose, max_pool, avg_pool and
 * lp_pool (ONNX's attributes carried over: the ops take ONNX's windows,
 * auto_pad included, so dynamic spatial dims stay dynamic); ConvInteger
 * as conv of the f32 values minus their zero points. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Appends ", name: [v...]" for an INTS attribute the node sets. */
static void add_ints(onnx_imp *im, char *buf, size_t size, const char *onnx_name, const char *name) {
    int n;
    const int64_t *v = onnx_attr_ints(im, onnx_name, &n);
    if (!v || n <= 0) return;
    size_t u = strlen(buf);
    u += (size_t)snprintf(buf + u, size - u, "%s%s: [", u ? ", " : "", name);
    for (int i = 0; i < n && u < size; i++)
        u += (size_t)snprintf(buf + u, size - u, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (u < size) snprintf(buf + u, size - u, "]");
}

/* The node's auto_pad as the ops spell it ("" for NOTSET), appended to buf;
 * an unknown value fails. */
static cg_status add_auto_pad(onnx_imp *im, char *buf, size_t size) {
    const Onnx__AttributeProto *a = onnx_attr_typed(im, "auto_pad", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (!a || !a->has_s || a->s.len == 0) return CG_OK;
    static const char *const onnx[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    static const char *const ours[] = {"", "same_upper", "same_lower", "valid"};
    for (int i = 0; i < 4; i++) {
        if (a->s.len != strlen(onnx[i]) || memcmp(a->s.data, onnx[i], a->s.len)) continue;
        if (i) {
            size_t u = strlen(buf);
            snprintf(buf + u, size - u, "%sauto_pad: \"%s\"", u ? ", " : "", ours[i]);
        }
        return CG_OK;
    }
    return onnx_fail(im, CG_ERR_UNSUPPORTED, "auto_pad '%.*s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                     (int)(a->s.len > 40 ? 40 : a->s.len), (const char *)a->s.data);
}

/* Checks that x has [N, C, spatial...] with 1 to 3 spatial axes and that a
 * kernel_shape attribute, where given, matches the kernel sizes k (NULL:
 * pooling, where it is required). */
static cg_status check_kernel(onnx_imp *im, const onnx_val *x, const int64_t *k) {
    const int nsp = x->desc.ndim - 2;
    if (nsp < 1 || nsp > 3)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "input '%s' has %d dims; [N, C] and 1 to 3 spatial axes are supported",
                         x->name, x->desc.ndim);
    int n;
    const int64_t *ks = onnx_attr_ints(im, "kernel_shape", &n);
    if (!ks && !k) return onnx_fail(im, CG_ERR_FORMAT, "no 'kernel_shape' attribute");
    if (ks && n != nsp) return onnx_fail(im, CG_ERR_FORMAT, "kernel_shape has %d values for %d spatial axes", n, nsp);
    for (int i = 0; ks && k && i < nsp; i++)
        if (k[i] >= 0 && ks[i] != k[i])
            return onnx_fail(im, CG_ERR_FORMAT, "kernel_shape %lld of spatial axis %d differs from the weights' %lld",
                             (long long)ks[i], i, (long long)k[i]);
    return CG_OK;
}

/* Conv's attributes (also ConvInteger's) as conv's, into a. */
static cg_status conv_attrs(onnx_imp *im, const onnx_val *x, const onnx_val *w, char *a, size_t size) {
    static const char *const known[] = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", NULL};
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) ||
        (s = check_kernel(im, x, w->desc.ndim == x->desc.ndim ? w->desc.dims + 2 : NULL)))
        return s;
    add_ints(im, a, size, "strides", "strides");
    add_ints(im, a, size, "dilations", "dilations");
    add_ints(im, a, size, "pads", "pads");
    if ((s = add_auto_pad(im, a, size))) return s;
    const size_t u = strlen(a);
    snprintf(a + u, size - u, "%sgroup: %lld", u ? ", " : "", (long long)onnx_attr_int(im, "group", 1));
    return CG_OK;
}

/* Conv (1, 11, 22): conv with ONNX's attributes. */
cg_status cg_onnx_map_conv(onnx_imp *im) {
    onnx_val *x, *w, *b = onnx_in(im, 2);
    char a[600] = "";
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &w)) || (s = conv_attrs(im, x, w, a, sizeof a))) return s;
    const char *in[3] = {x->name, w->name, b ? b->name : NULL};
    return emit1(im, "conv", b ? 3 : 2, in, out_name(im, 0), a);
}

/* Elements of d, -1 when a dim is not a size. */
static int64_t desc_count(const cg_tensor_desc *d) {
    int64_t n = 1;
    for (int i = 0; i < d->ndim; i++) n = d->dims[i] < 0 || n < 0 ? -1 : n * d->dims[i];
    return n;
}

/* v (u8 / i8) as f32 minus its zero point zp (NULL: none; one value, or
 * per_axis: one per output channel, w's first dim), into *out. */
static cg_status centered(onnx_imp *im, const onnx_val *v, const onnx_val *zp, int per_axis, const char **out) {
    cg_status s;
    const char *f = NULL, *z = NULL;
    if ((s = emit_tmp(im, "cast", v->name, "to: \"f32\"", &f))) return s;
    if (!zp) {
        *out = f;
        return CG_OK;
    }
    if ((s = emit_tmp(im, "cast", zp->name, "to: \"f32\"", &z))) return s;
    if (per_axis) {
        int64_t d[CG_MAX_DIMS];
        for (int i = 0; i < v->desc.ndim; i++) d[i] = i ? 1 : v->desc.dims[0];
        onnx_val *zv = onnx_val_get(im, z);
        if (!zv) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        const char *r = NULL;
        if ((s = onnx_emit_reshape(im, zv, v->desc.ndim, d, &r))) return s;
        z = r;
    }
    return emit_tmp2(im, "sub", f, z, NULL, out);
}

/* The largest |sum| a ConvInteger output can reach: per filter the sum of
 * |w - zero point| where w is known, else every tap at 255, times 255. */
static double integer_bound(const onnx_val *w, const onnx_val *wz) {
    const int64_t m = w->desc.dims[0];
    int64_t per = 1;
    for (int i = 1; i < w->desc.ndim; i++) per *= w->desc.dims[i];
    if (!w->konst || (wz && !wz->konst) || m <= 0) return (double)per * 255.0 * 255.0;
    const cg_tensor *zt = wz ? wz->konst : NULL;
    double worst = 0.0;
    for (int64_t f = 0; f < m; f++) {
        const int64_t zi = zt && cg_tensor_numel(zt) > 1 ? f : 0;
        const double z = zt ? (double)cg_onnx_int_at(zt, zi) : 0.0;
        double sum = 0.0;
        for (int64_t i = 0; i < per; i++) sum += fabs((double)cg_onnx_int_at(w->konst, f * per + i) - z);
        if (sum > worst) worst = sum;
    }
    return worst * 255.0;
}

/* ConvInteger (10): (x - x_zero_point) conv (w - w_zero_point) in int32,
 * computed in f32, which is exact while every partial sum stays below
 * 2^24 (checked at import from w where it is known); then cast to i32. */
cg_status cg_onnx_map_conv_integer(onnx_imp *im) {
    onnx_val *x, *w, *xz = onnx_in(im, 2), *wz = onnx_in(im, 3);
    char a[600] = "";
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &w)) || (s = conv_attrs(im, x, w, a, sizeof a))) return s;
    for (int i = 0; i < 4; i++) {
        const onnx_val *v = i == 0 ? x : i == 1 ? w : i == 2 ? xz : wz;
        if (v && (!v->typed || (v->desc.dtype != CG_U8 && v->desc.dtype != CG_I8)))
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "ConvInteger input %d must be uint8 or int8", i);
    }
    if (xz && desc_count(&xz->desc) != 1)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "x_zero_point of more than one value");
    const int per_axis = wz && desc_count(&wz->desc) != 1;
    if (per_axis && (wz->desc.ndim != 1 || wz->desc.dims[0] != w->desc.dims[0]))
        return onnx_fail(im, CG_ERR_FORMAT, "w_zero_point must be one value or one per output channel");
    if (w->desc.ndim < 3 || integer_bound(w, wz) > 16777216.0)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "ConvInteger sums could pass 2^24, where clgraph's f32 accumulation stops being exact");
    const char *xf, *wf, *y = NULL;
    if ((s = centered(im, x, xz, 0, &xf)) || (s = centered(im, w, wz, per_axis, &wf)) ||
        (s = emit_tmp2(im, "conv", xf, wf, a, &y)))
        return s;
    const char *in[1] = {y};
    return emit1(im, "cast", 1, in, out_name(im, 0), "to: \"i32\"");
}

/* ConvTranspose's output_shape: the pads that give it, for a concrete x
 * (ONNX's reference: SAME_UPPER puts the smaller half first, SAME_LOWER
 * the larger; otherwise the pads given, the end pad making up the rest). */
static cg_status transpose_output_shape(onnx_imp *im, const onnx_val *x, const onnx_val *w, char *a, size_t size) {
    int n, np, nop, ns, nd;
    const int64_t *os = onnx_attr_ints(im, "output_shape", &n);
    if (!os || n <= 0) return CG_OK;
    const int nsp = x->desc.ndim - 2;
    if (n == nsp + 2) os += 2, n = nsp;
    if (n != nsp) return onnx_fail(im, CG_ERR_FORMAT, "output_shape has %d values for %d spatial axes", n, nsp);
    const int64_t *pads = onnx_attr_ints(im, "pads", &np), *op = onnx_attr_ints(im, "output_padding", &nop);
    const int64_t *st = onnx_attr_ints(im, "strides", &ns), *dl = onnx_attr_ints(im, "dilations", &nd);
    const Onnx__AttributeProto *ap = onnx_attr_typed(im, "auto_pad", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    const int upper = ap && ap->has_s && ap->s.len == 10 && !memcmp(ap->s.data, "SAME_UPPER", 10);
    const int lower = ap && ap->has_s && ap->s.len == 10 && !memcmp(ap->s.data, "SAME_LOWER", 10);
    int64_t pb[3], pe[3];
    for (int i = 0; i < nsp; i++) {
        const int64_t in = x->desc.dims[2 + i], k = w->desc.dims[2 + i];
        if (in < 0 || k < 0)
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "output_shape with a symbolic spatial dim of '%s'", x->name);
        const int64_t s = ns == nsp ? st[i] : 1, d = nd == nsp ? dl[i] : 1, o = nop == nsp ? op[i] : 0;
        const int64_t total = s * (in - 1) + o + (k - 1) * d + 1 - os[i];
        const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
        pb[i] = upper ? half : lower ? total - half : np == 2 * nsp ? pads[i] : 0;
        pe[i] = total - pb[i];
    }
    size_t u = strlen(a);
    u += (size_t)snprintf(a + u, size - u, "%spads: [", u ? ", " : "");
    for (int i = 0; i < 2 * nsp && u < size; i++)
        u += (size_t)snprintf(a + u, size - u, "%s%lld", i ? ", " : "", (long long)(i < nsp ? pb[i] : pe[i - nsp]));
    if (u < size) snprintf(a + u, size - u, "]");
    return CG_OK;
}

/* ConvTranspose (1, 11, 22): conv_transpose; output_shape as pads. */
cg_status cg_onnx_map_conv_transpose(onnx_imp *im) {
    static const char *const known[] = {
        "auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides", NULL};
    onnx_val *x, *w, *b = onnx_in(im, 2);
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &w)) || (s = onnx_check_attrs(im, known)) ||
        (s = check_kernel(im, x, w->desc.ndim == x->desc.ndim ? w->desc.dims + 2 : NULL)))
        return s;
    char a[600] = "";
    int n;
    add_ints(im, a, sizeof a, "strides", "strides");
    add_ints(im, a, sizeof a, "dilations", "dilations");
    add_ints(im, a, sizeof a, "output_padding", "output_padding");
    if (onnx_attr_ints(im, "output_shape", &n) && n > 0) {
        if ((s = transpose_output_shape(im, x, w, a, sizeof a))) return s;
    } else {
        add_ints(im, a, sizeof a, "pads", "pads");
        if ((s = add_auto_pad(im, a, sizeof a))) return s;
    }
    const size_t u = strlen(a);
    snprintf(a + u, sizeof a - u, "%sgroup: %lld", u ? ", " : "", (long long)onnx_attr_int(im, "group", 1));
    const char *in[3] = {x->name, w->name, b ? b->name : NULL};
    return emit1(im, "conv_transpose", b ? 3 : 2, in, out_name(im, 0), a);
}
