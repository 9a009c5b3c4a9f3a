/* AffineGrid and Col2Im as compositions: the grid of sampling coordinates
 * is a constant of the known size times theta (one batched matmul), and
 * Col2Im a transposed convolution whose weights pick each block position
 * (every image element the sum of the columns that cover it). */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The homogeneous base grid [prod(sz), nsp + 1] of AffineGrid: per point
 * (x, y[, z], 1), x along the last axis, each coordinate from -1 to 1 at
 * the pixel corners (align_corners) or centres, as ONNX's reference
 * computes it (start + i * step in double). */
static cg_status base_grid(onnx_imp *im, int nsp, const int64_t *sz, int align, const char **name) {
    int64_t pts = 1;
    for (int i = 0; i < nsp; i++) pts *= sz[i];
    const int64_t d[2] = {pts, nsp + 1};
    cg_tensor *t;
    cg_status s = cg_tensor_create(CG_F32, 2, d, &t);
    if (s) return s;
    float *g = cg_tensor_data(t);
    for (int64_t p = 0; p < pts; p++) {
        int64_t r = p;
        for (int a = nsp - 1; a >= 0; a--) { /* axis a's coordinate is component nsp - 1 - a */
            const int64_t i = r % sz[a];
            r /= sz[a];
            const double n = (double)sz[a], step = align ? 2.0 / (n - 1) : 2.0 / n;
            const double v = align ? (n > 1 ? -1.0 + (double)i * step : -1.0) : -1.0 + step / 2 + (double)i * step;
            g[p * (nsp + 1) + (nsp - 1 - a)] = (float)v;
        }
        g[p * (nsp + 1) + nsp] = 1.0f;
    }
    return onnx_const_param(im, t, name);
}

/* AffineGrid (20): theta [N, 2, 3] or [N, 3, 4], size [N, C, H, W] or
 * [N, C, D, H, W] known at import; grid [N, H, W, 2] or [N, D, H, W, 3]. */
cg_status cg_onnx_map_affine_grid(onnx_imp *im) {
    static const char *const known[] = {"align_corners", NULL};
    onnx_val *th, *sv;
    const cg_tensor *st;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &th)) || (s = need_in(im, 1, &sv)) ||
        (s = onnx_need_const(im, sv, "input 1 (size)", &st)))
        return s;
    const int64_t n = cg_tensor_numel(st);
    const int nsp = (int)n - 2;
    if ((n != 4 && n != 5) || th->desc.ndim != 3 || th->desc.dtype != CG_F32 ||
        (th->desc.dims[1] >= 0 && th->desc.dims[1] != nsp) || (th->desc.dims[2] >= 0 && th->desc.dims[2] != nsp + 1))
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "AffineGrid needs size of 4 or 5 values and an f32 theta [N, %d, %d] ('%s')", nsp, nsp + 1,
                         th->name);
    int64_t sz[3], out[5] = {th->desc.dims[0]}, pts = 1;
    for (int i = 0; i < nsp; i++) {
        sz[i] = out[1 + i] = cg_onnx_int_at(st, 2 + i);
        pts *= sz[i] > 0 && sz[i] <= ((int64_t)1 << 24) ? sz[i] : 1;
        if (sz[i] <= 0 || sz[i] > ((int64_t)1 << 24) || pts > ((int64_t)1 << 26))
            return onnx_fail(im, CG_ERR_UNSUPPORTED,
                             "AffineGrid of size %lld along spatial axis %d (at most 2^24, 2^26 points)",
                             (long long)sz[i], i);
    }
    out[1 + nsp] = nsp;
    const char *base, *g = NULL;
    if ((s = base_grid(im, nsp, sz, onnx_attr_int(im, "align_corners", 0) != 0, &base)) ||
        (s = emit_tmp2(im, "matmul", base, th->name, "transpose_b: 1", &g)))
        return s;
    onnx_val *gv = onnx_val_get(im, g);
    if (!gv) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    return emit_reshape(im, gv, nsp + 2, out, out_name(im, 0));
}

/* Col2Im's geometry from its known inputs and attributes: per spatial axis
 * the image and block lengths, stride, dilation, pads, and the number of
 * block positions; fails naming what does not fit. */
typedef struct col2im_geom {
    int nsp;
    int64_t img[3], blk[3], st[3], dl[3], pb[3], pe[3], cnt[3], k;
} col2im_geom;

static cg_status col2im_geom_of(onnx_imp *im, const cg_tensor *it, const cg_tensor *bt, col2im_geom *g) {
    const int nsp = (int)cg_tensor_numel(it);
    int ns, nd, np;
    const int64_t *st = onnx_attr_ints(im, "strides", &ns), *dl = onnx_attr_ints(im, "dilations", &nd);
    const int64_t *pads = onnx_attr_ints(im, "pads", &np);
    if (nsp < 1 || nsp > 3 || cg_tensor_numel(bt) != nsp || (st && ns != nsp) || (dl && nd != nsp) ||
        (pads && np != 2 * nsp))
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "Col2Im of %d spatial axes (1 to 3; block_shape, strides, dilations and pads of as many)",
                         nsp);
    g->nsp = nsp;
    g->k = 1;
    for (int i = 0; i < nsp; i++) {
        g->img[i] = cg_onnx_int_at(it, i), g->blk[i] = cg_onnx_int_at(bt, i);
        g->st[i] = st ? st[i] : 1, g->dl[i] = dl ? dl[i] : 1;
        g->pb[i] = pads ? pads[i] : 0, g->pe[i] = pads ? pads[nsp + i] : 0;
        const int64_t span = g->dl[i] * (g->blk[i] - 1) + 1, room = g->img[i] + g->pb[i] + g->pe[i] - span;
        if (g->img[i] <= 0 || g->blk[i] <= 0 || g->st[i] <= 0 || g->dl[i] <= 0 || g->pb[i] < 0 || g->pe[i] < 0 ||
            room < 0 || g->blk[i] > 4096)
            return onnx_fail(im, CG_ERR_FORMAT, "Col2Im: block %lld does not fit image %lld along axis %d",
                             (long long)g->blk[i], (long long)g->img[i], i);
        g->cnt[i] = room / g->st[i] + 1;
        g->k *= g->blk[i];
    }
    if (g->k > ((int64_t)1 << 16))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "Col2Im of %lld positions per block (at most 65536)", (long long)g->k);
    return CG_OK;
}

/* Col2Im's weights [C * K, 1, block...]: filter c * K + j is one at block
 * position j (row-major), zero elsewhere. */
static cg_status col2im_weights(onnx_imp *im, const col2im_geom *g, int64_t c, const char **name) {
    int64_t d[5] = {c * g->k, 1};
    for (int i = 0; i < g->nsp; i++) d[2 + i] = g->blk[i];
    if (c > ((int64_t)1 << 26) / (g->k * g->k)) return onnx_fail(im, CG_ERR_UNSUPPORTED, "Col2Im block too large");
    cg_tensor *t;
    cg_status s = cg_tensor_create(CG_F32, g->nsp + 2, d, &t);
    if (s) return s;
    float *w = cg_tensor_data(t);
    memset(w, 0, (size_t)(c * g->k * g->k) * sizeof *w);
    for (int64_t f = 0; f < c * g->k; f++) w[f * g->k + f % g->k] = 1.0f;
    return onnx_const_param(im, t, name);
}

/* Col2Im (18): input [N, C * K, L] of the K block positions' columns at
 * L places; conv_transpose of it, reshaped to [N, C * K, places...], with
 * the one-hot weights and group C, gives each image element the sum of
 * the columns that cover it; output_padding makes up the image's end. */
cg_status cg_onnx_map_col2im(onnx_imp *im) {
    static const char *const known[] = {"dilations", "pads", "strides", NULL};
    onnx_val *x, *iv, *bv;
    const cg_tensor *it, *bt;
    col2im_geom g = {0};
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &x)) || (s = need_in(im, 1, &iv)) ||
        (s = need_in(im, 2, &bv)) || (s = onnx_need_const(im, iv, "input 1 (image_shape)", &it)) ||
        (s = onnx_need_const(im, bv, "input 2 (block_shape)", &bt)) || (s = col2im_geom_of(im, it, bt, &g)))
        return s;
    int64_t places = 1, d[5] = {x->desc.dims[0], x->desc.dims[1]};
    for (int i = 0; i < g.nsp; i++) places *= g.cnt[i], d[2 + i] = g.cnt[i];
    if (x->desc.dtype != CG_F32 || x->desc.ndim != 3 || x->desc.dims[1] < 0 || x->desc.dims[1] % g.k ||
        (x->desc.dims[2] >= 0 && x->desc.dims[2] != places))
        return onnx_fail(im, CG_ERR_FORMAT, "Col2Im input '%s' must be f32 [N, C * %lld, %lld] for these blocks",
                         x->name, (long long)g.k, (long long)places);
    const char *cols = NULL, *w, *pos;
    if ((s = onnx_emit_reshape(im, x, g.nsp + 2, d, &cols)) || (s = col2im_weights(im, &g, x->desc.dims[1] / g.k, &w)))
        return s;
    char a[600];
    size_t u = (size_t)snprintf(a, sizeof a, "group: %lld", (long long)(x->desc.dims[1] / g.k));
    static const char *const key[4] = {"strides", "dilations", "pads", "output_padding"};
    for (int k = 0; k < 4; k++) {
        u += (size_t)snprintf(a + u, sizeof a - u, ", %s: [", key[k]);
        for (int j = 0; j < (k == 2 ? 2 * g.nsp : g.nsp); j++) {
            const int i = j % g.nsp;
            const int64_t v =
                k == 0   ? g.st[i]
                : k == 1 ? g.dl[i]
                : k == 2 ? (j < g.nsp ? g.pb[i] : g.pe[i])
                         : g.img[i] + g.pb[i] + g.pe[i] - g.st[i] * (g.cnt[i] - 1) - g.dl[i] * (g.blk[i] - 1) - 1;
            u += (size_t)snprintf(a + u, sizeof a - u, "%s%lld", j ? ", " : "", (long long)v);
        }
        u += (size_t)snprintf(a + u, sizeof a - u, "]");
    }
    pos = cols;
    const char *in[2] = {pos, w};
    return emit1(im, "conv_transpose", 2, in, out_name(im, 0), a);
}
