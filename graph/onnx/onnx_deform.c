/* DeformConv (19, 22) onto clgraph's deform_conv (2-D): ONNX's attributes
 * carried over; a mask without a bias gets a zero bias, deform_conv's
 * optional inputs being positional. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <string.h>

/* Appends ", key: [v...]" for an INTS attribute the node sets. */
static void add_ints(onnx_imp *im, char *buf, size_t size, const char *key) {
    int n;
    const int64_t *v = onnx_attr_ints(im, key, &n);
    if (!v || n <= 0) return;
    size_t u = strlen(buf);
    u += (size_t)snprintf(buf + u, size - u, ", %s: [", key);
    for (int i = 0; i < n && u < size; i++)
        u += (size_t)snprintf(buf + u, size - u, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (u < size) snprintf(buf + u, size - u, "]");
}

cg_status cg_onnx_map_deform_conv(onnx_imp *im) {
    static const char *const known[] = {"dilations", "group", "kernel_shape", "offset_group", "pads", "strides", NULL};
    onnx_val *x, *w, *off, *b = onnx_in(im, 3), *mask = onnx_in(im, 4);
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &x)) || (s = need_in(im, 1, &w)) ||
        (s = need_in(im, 2, &off)))
        return s;
    if (x->desc.ndim != 4 || w->desc.ndim != 4 || w->desc.dims[0] < 0)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "DeformConv of %d-D input '%s' (2-D images [N, C, H, W] only)",
                         x->desc.ndim, x->name);
    int nk;
    const int64_t *ks = onnx_attr_ints(im, "kernel_shape", &nk);
    if (ks && (nk != 2 || ks[0] != w->desc.dims[2] || ks[1] != w->desc.dims[3]))
        return onnx_fail(im, CG_ERR_FORMAT, "kernel_shape differs from the weights' kernel");
    const char *bias = b ? b->name : NULL;
    if (!b && mask) {
        float zeros[1] = {0.0f};
        const char *z;
        char a[64];
        snprintf(a, sizeof a, "shape: [%lld]", (long long)w->desc.dims[0]);
        if ((s = const_of(im, CG_F32, 0, NULL, zeros, &z)) || (s = emit_tmp(im, "expand", z, a, &bias))) return s;
    }
    char a[600];
    snprintf(a, sizeof a, "group: %lld, offset_group: %lld", (long long)onnx_attr_int(im, "group", 1),
             (long long)onnx_attr_int(im, "offset_group", 1));
    add_ints(im, a, sizeof a, "strides");
    add_ints(im, a, sizeof a, "dilations");
    add_ints(im, a, sizeof a, "pads");
    const char *in[5] = {x->name, w->name, off->name, bias, mask ? mask->name : NULL};
    return emit1(im, "deform_conv", mask ? 5 : bias ? 4 : 3, in, out_name(im, 0), a);
}
