/* Ops whose values come from a size known at import, computed there in
 * double as ONNX's reference does: HannWindow, HammingWindow and
 * BlackmanWindow (rounded to output_datatype, float by default), and
 * AffineGrid's base grid (which theta then transforms on the device). */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <string.h>

#include "dtype.h"

/* Element n of the window of N_1 = size (periodic) or size - 1. */
static double window_at(const char *op, int64_t n, double n1) {
    const double pi = 3.14159265358979323846;
    if (!strcmp(op, "HannWindow")) {
        const double v = sin((double)n * pi / n1);
        return v * v;
    }
    if (!strcmp(op, "HammingWindow")) return 25.0 / 46.0 - cos((double)n * pi * 2 / n1) * (1 - 25.0 / 46.0);
    return cos((double)n * (pi * 2) / n1) * -0.5 + cos((double)n * (pi * 4) / n1) * 0.08 + 0.42;
}

/* v (double) stored as element i of t (f32, f16, bf16 or an integer). */
static void store(cg_tensor *t, int64_t i, double v) {
    const float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    void *p = cg_tensor_data(t);
    switch (cg_tensor_dtype(t)) {
    case CG_F32: ((float *)p)[i] = f; break;
    case CG_F16: ((uint16_t *)p)[i] = cg_f32_to_f16_bits(b); break;
    case CG_BF16: ((uint16_t *)p)[i] = cg_f32_to_bf16_bits(b); break;
    case CG_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    case CG_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case CG_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    default: ((uint8_t *)p)[i] = (uint8_t)v; break;
    }
}

cg_status cg_onnx_map_window(onnx_imp *im) {
    static const char *const known[] = {"output_datatype", "periodic", NULL};
    const cg_tensor *sz;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) ||
        (s = onnx_need_const(im, onnx_in(im, 0), "input 0 (size: the output's length)", &sz)))
        return s;
    const int64_t size = cg_onnx_int_at(sz, 0), ot = onnx_attr_int(im, "output_datatype", 1);
    const cg_dtype dt = cg_onnx_dtype((int32_t)ot);
    if (cg_tensor_numel(sz) != 1 || size < 0 || size > ((int64_t)1 << 24))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "a window size of %lld values (one, 0 to 2^24)", (long long)size);
    if (!dt || dt == CG_BOOL)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "output_datatype %s", cg_onnx_type_name((int32_t)ot));
    cg_tensor *t;
    if ((s = cg_tensor_create(dt, 1, &size, &t))) return s;
    const double n1 = (double)(onnx_attr_int(im, "periodic", 1) ? size : size - 1);
    for (int64_t n = 0; n < size; n++) store(t, n, window_at(im->node->op_type, n, n1));
    return onnx_set_const(im, 0, t);
}

/* AffineGrid: the base grid of the spatial size (known at import: points
 * (x, y[, z], 1) evenly spaced in [-1, 1], as the reference builds them in
 * double) made a constant [dims + 1, points], then theta [N, dims, dims +
 * 1] times it, transposed and reshaped to [N, (D,) H, W, dims]. */
cg_status cg_onnx_map_affine_grid(onnx_imp *im) {
    static const char *const known[] = {"align_corners", NULL};
    onnx_val *theta;
    const cg_tensor *sz;
    cg_status s;
    if ((s = need_in(im, 0, &theta)) || (s = onnx_check_attrs(im, known)) ||
        (s = onnx_need_const(im, onnx_in(im, 1), "input 1 (size: the grid's dims)", &sz)))
        return s;
    const int nsp = (int)cg_tensor_numel(sz) - 2, align = onnx_attr_int(im, "align_corners", 0) != 0;
    int64_t sp[3], pts = 1;
    if ((nsp != 2 && nsp != 3) || theta->desc.ndim != 3)
        return onnx_fail(im, CG_ERR_FORMAT, "size must be [N, C, H, W] or [N, C, D, H, W] and theta 3-D");
    for (int i = 0; i < nsp; i++) {
        sp[i] = cg_onnx_int_at(sz, i + 2), pts *= sp[i] > 0 ? sp[i] : 0;
        if (sp[i] < 1 || pts > ((int64_t)1 << 24)) return onnx_fail(im, CG_ERR_UNSUPPORTED, "a grid of that size");
    }
    const int64_t gd[2] = {nsp + 1, pts};
    cg_tensor *g;
    if ((s = cg_tensor_create(CG_F32, 2, gd, &g))) return s;
    float *gp = cg_tensor_data(g);
    for (int64_t p = 0; p < pts; p++) {
        int64_t rest = p;
        for (int i = nsp - 1; i >= 0; i--) { /* component 0 is x, the last spatial dim */
            const int64_t at = rest % sp[i];
            rest /= sp[i];
            const double step = align ? 2.0 / (double)(sp[i] - 1) : 2.0 / (double)sp[i];
            const double v = align ? (sp[i] == 1 ? -1.0 : -1 + (double)at * step) : -1 + step / 2 + (double)at * step;
            gp[(nsp - 1 - i) * pts + p] = (float)v;
        }
        gp[nsp * pts + p] = 1.0f;
    }
    const char *gn, *m = NULL, *t = NULL;
    if ((s = onnx_const_param(im, g, &gn)) || (s = emit_tmp2(im, "matmul", theta->name, gn, NULL, &m)) ||
        (s = emit_tmp(im, "transpose", m, "perm: [0, 2, 1]", &t)))
        return s;
    int64_t od[5] = {theta->desc.dims[0]};
    for (int i = 0; i < nsp; i++) od[i + 1] = sp[i];
    od[nsp + 1] = nsp;
    return emit_reshape(im, onnx_val_get(im, t), nsp + 2, od, out_name(im, 0));
}
