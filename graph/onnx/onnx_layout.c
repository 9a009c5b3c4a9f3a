/* Data layout ops (onnx_sub.c): BitCast onto bitcast, CenterCropPad as
 * Slice and Pad, TensorScatter (a KV cache's update) as a ScatterElements
 * of computed positions. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <string.h>

/* BitCast: clgraph's bitcast (DOUBLE, which clgraph reads as f32, refused). */
cg_status cg_onnx_map_bitcast(onnx_imp *im) {
    static const char *const known[] = {"to", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &x))) return s;
    const int64_t to = onnx_attr_int(im, "to", 0);
    const cg_dtype dt = cg_onnx_dtype((int32_t)to);
    if (!dt || to == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE || dt == CG_BOOL)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "BitCast to %s is not supported", cg_onnx_type_name((int32_t)to));
    if (cg_dtype_size(dt) != cg_dtype_size((cg_dtype)x->desc.dtype))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "BitCast of '%s' (%s, as clgraph reads it) to %s: sizes differ",
                         x->name, cg_dtype_name((cg_dtype)x->desc.dtype), cg_onnx_type_name((int32_t)to));
    char a[40];
    snprintf(a, sizeof a, "to: \"%s\"", cg_dtype_name(dt));
    const char *in[1] = {x->name};
    return emit1(im, "bitcast", 1, in, out_name(im, 0), a);
}

/* ---- CenterCropPad, TensorScatter ---- */

/* CenterCropPad: per axis a centred Slice where the target is smaller
 * (the extra element off the end), then a constant Pad where it is larger
 * (the extra zero at the end); the target shape known at import. */
cg_status cg_onnx_map_center_crop_pad(onnx_imp *im) {
    static const char *const known[] = {"axes", NULL};
    onnx_val *x;
    int64_t tgt[CG_MAX_DIMS], axes[CG_MAX_DIMS], st[CG_MAX_DIMS], en[CG_MAX_DIMS], pads[2 * CG_MAX_DIMS] = {0};
    int na, nt;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &x)) ||
        (s = cg_onnx_known_ints(im, 1, "input 1 (shape)", CG_MAX_DIMS, tgt, &nt)))
        return s;
    const int nd = x->desc.ndim;
    const int64_t *a = onnx_attr_ints(im, "axes", &na);
    if (!a) na = nt;
    if (na != nt) return onnx_fail(im, CG_ERR_FORMAT, "shape has %d values for %d axes", nt, na);
    for (int i = 0; i < na; i++) {
        axes[i] = a ? (a[i] < 0 ? a[i] + nd : a[i]) : i;
        const int64_t dim = axes[i] >= 0 && axes[i] < nd ? x->desc.dims[axes[i]] : -1;
        if (dim < 0 || tgt[i] < 0)
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "axis %lld of '%s' needs a known size and a target >= 0",
                             (long long)axes[i], x->name);
        const int64_t d = dim > tgt[i] ? dim - tgt[i] : 0, p = tgt[i] > dim ? tgt[i] - dim : 0;
        st[i] = d / 2, en[i] = dim - (d - d / 2);
        pads[axes[i]] = p / 2, pads[nd + axes[i]] = p - p / 2;
    }
    const int64_t n = na, n2 = 2 * nd;
    const char *ks, *ke, *ka, *kp, *cut = NULL, *out = out_name(im, 0);
    if ((s = onnx_new_const_data(im, CG_I64, 1, &n, st, &ks)) ||
        (s = onnx_new_const_data(im, CG_I64, 1, &n, en, &ke)) ||
        (s = onnx_new_const_data(im, CG_I64, 1, &n, axes, &ka)) ||
        (s = onnx_new_const_data(im, CG_I64, 1, &n2, pads, &kp)))
        return s;
    const char *sin[4] = {x->name, ks, ke, ka};
    if ((s = onnx_sub_node(im, "Slice", 4, sin, 1, &cut, 0, NULL))) return s;
    const char *pin[2] = {cut, kp};
    return onnx_sub_node(im, "Pad", 2, pin, 1, &out, 0, NULL);
}

/* The position of every update element along the axis: write_indices[b]
 * (zeros when absent) plus its index j, past the end wrapped once
 * (circular), expanded to the update's dims d into *out. */
static cg_status scatter_positions(onnx_imp *im, onnx_val *wi, int nd, int axis, const int64_t *d, int64_t len,
                                   int circular, const char **out) {
    int64_t jd[CG_MAX_DIMS], bd[CG_MAX_DIMS], n = nd;
    for (int i = 0; i < nd; i++) jd[i] = i == axis ? d[axis] : 1, bd[i] = i == 0 ? d[0] : 1;
    cg_tensor *j;
    cg_status s = cg_tensor_alloc(CG_I64, nd, jd, &j);
    if (s) return s;
    for (int64_t i = 0; i < d[axis]; i++) ((int64_t *)j->data)[i] = i;
    const char *kj, *kb, *kd, *w = NULL, *p = NULL, *kl, *ge = NULL, *wr = NULL, *sel = NULL;
    if ((s = onnx_new_const(im, j, &kj)) || (s = onnx_new_const_data(im, CG_I64, 1, &n, bd, &kb)) ||
        (s = onnx_new_const_data(im, CG_I64, 1, &n, d, &kd)) || (s = onnx_sub_scalar(im, CG_I64, (double)len, &kl)))
        return s;
    if (!wi) p = kj;
    else if ((s = onnx_sub2(im, "Reshape", wi->name, kb, &w)) || (s = onnx_sub2(im, "Add", w, kj, &p))) return s;
    if (circular) {
        if ((s = onnx_sub2(im, "GreaterOrEqual", p, kl, &ge)) || (s = onnx_sub2(im, "Sub", p, kl, &wr))) return s;
        const char *in[3] = {ge, wr, p};
        if ((s = onnx_sub_node(im, "Where", 3, in, 1, &sel, 0, NULL))) return s;
        p = sel;
    }
    *out = NULL;
    return onnx_sub2(im, "Expand", p, kd, out);
}

/* TensorScatter: the update written into the cache along axis at
 * write_indices[b] + j (circular: wrapped at the axis' length), as a
 * ScatterElements of those positions. */
cg_status cg_onnx_map_tensor_scatter(onnx_imp *im) {
    static const char *const known[] = {"axis", "mode", NULL};
    onnx_val *past, *up, *wi = onnx_in(im, 2);
    char mode[16];
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &past)) || (s = need_in(im, 1, &up))) return s;
    if (!onnx_attr_str(im, "mode", "linear", mode, sizeof mode) || (strcmp(mode, "linear") && strcmp(mode, "circular")))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "mode must be linear or circular");
    const int nd = past->desc.ndim;
    int64_t axis = onnx_attr_int(im, "axis", -2);
    if (axis < 0) axis += nd;
    if (nd < 2 || axis < 1 || axis >= nd || up->desc.ndim != nd)
        return onnx_fail(im, CG_ERR_FORMAT, "axis %lld does not fit past_cache and update of %d dims", (long long)axis,
                         nd);
    for (int i = 0; i < nd; i++)
        if (up->desc.dims[i] < 0 || past->desc.dims[i] < 0)
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "past_cache and update need known dims");
    const char *pos, *out = out_name(im, 0);
    if ((s = scatter_positions(im, wi, nd, (int)axis, up->desc.dims, past->desc.dims[axis], mode[0] == 'c', &pos)))
        return s;
    const char *in[3] = {past->name, pos, up->name};
    onnx_sub_attr a = onnx_sub_int("axis", axis);
    return onnx_sub_node(im, "ScatterElements", 3, in, 1, &out, 1, &a);
}
