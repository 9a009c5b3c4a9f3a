/* Signal processing ops: the windows (HannWindow, HammingWindow,
 * BlackmanWindow) and MelWeightMatrix, whose inputs are sizes and so are
 * evaluated at import like a Range; DFT and STFT as one matrix product with
 * the transform's matrix (cosines and sines made at import in double), the
 * frames of STFT a Gather of constant indices. A product is O(N^2) where
 * an FFT is O(N log N), but it runs as the GEMM every device already does
 * well, with the same rounding on each. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TWO_PI 6.283185307179586476925286766559

/* A scalar input that must be known at import (a size). */
static cg_status need_scalar(onnx_imp *im, int i, const char *what, double *v) {
    const cg_tensor *t;
    cg_status s = onnx_need_const(im, onnx_in(im, i), what, &t);
    if (s) return s;
    if (cg_shape_numel(t->ndim, t->dims) != 1) return onnx_fail(im, CG_ERR_FORMAT, "%s must be one value", what);
    *v = cg_onnx_float_at(t, 0);
    return CG_OK;
}

/* The output_datatype attribute as a clgraph dtype (float by default). */
static cg_status out_dtype(onnx_imp *im, cg_dtype *dt) {
    const int64_t t = onnx_attr_int(im, "output_datatype", 1);
    *dt = cg_onnx_dtype((int32_t)t);
    if (!*dt || *dt == CG_BOOL)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "output_datatype %s is not supported", cg_onnx_type_name((int32_t)t));
    return CG_OK;
}

/* ---- windows ---- */

/* HannWindow, HammingWindow, BlackmanWindow: a0 - a1 cos(2 pi n / N') +
 * a2 cos(4 pi n / N') for n < size, N' = size (periodic) or size - 1. */
cg_status cg_onnx_map_window(onnx_imp *im) {
    static const char *const known[] = {"output_datatype", "periodic", NULL};
    const char *op = im->node->op_type;
    double size, a0 = 0.5, a1 = 0.5, a2 = 0;
    cg_dtype dt;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = out_dtype(im, &dt)) || (s = need_scalar(im, 0, "size", &size)))
        return s;
    if (!strcmp(op, "HammingWindow")) a0 = 25.0 / 46.0, a1 = 1 - a0;
    else if (!strcmp(op, "BlackmanWindow")) a0 = 0.42, a1 = 0.5, a2 = 0.08;
    if (size < 0 || size > (1 << 24)) return onnx_fail(im, CG_ERR_UNSUPPORTED, "size %g is out of range", size);
    const int64_t n = (int64_t)size;
    const double den = onnx_attr_int(im, "periodic", 1) ? (double)n : (double)n - 1;
    cg_tensor *t;
    if ((s = cg_tensor_alloc(dt, 1, &n, &t))) return s;
    for (int64_t i = 0; i < n; i++)
        cg_onnx_set_at(t, i, a0 - a1 * cos(TWO_PI * (double)i / den) + a2 * cos(2 * TWO_PI * (double)i / den));
    return onnx_set_const(im, 0, t);
}

/* ---- MelWeightMatrix ---- */

/* The triangle of mel bin i over spectrogram bins f[i] .. f[i + 2] into
 * column i of w [rows, mels]. */
static void mel_triangle(cg_tensor *w, int64_t mels, int64_t rows, const int64_t *f, int64_t i) {
    const int64_t lo = f[i], c = f[i + 1], hi = f[i + 2];
    if (c - lo == 0) {
        if (c >= 0 && c < rows) cg_onnx_set_at(w, c * mels + i, 1);
    } else {
        for (int64_t j = lo < 0 ? 0 : lo; j <= c && j < rows; j++)
            cg_onnx_set_at(w, j * mels + i, (double)(j - lo) / (double)(c - lo));
    }
    for (int64_t j = c < 0 ? 0 : c; j < hi && j < rows; j++)
        cg_onnx_set_at(w, j * mels + i, (double)(hi - j) / (double)(hi - c));
}

/* MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] triangles between
 * mel-spaced points, as ONNX's definition computes them. */
cg_status cg_onnx_map_mel(onnx_imp *im) {
    static const char *const known[] = {"output_datatype", NULL};
    double mels, dft, rate, lo, hi;
    cg_dtype dt;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = out_dtype(im, &dt)) ||
        (s = need_scalar(im, 0, "num_mel_bins", &mels)) || (s = need_scalar(im, 1, "dft_length", &dft)) ||
        (s = need_scalar(im, 2, "sample_rate", &rate)) || (s = need_scalar(im, 3, "lower_edge_hertz", &lo)) ||
        (s = need_scalar(im, 4, "upper_edge_hertz", &hi)))
        return s;
    if (mels < 1 || mels > 65536 || dft < 1 || dft > (1 << 20) || rate <= 0)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "num_mel_bins %g, dft_length %g, sample_rate %g out of range", mels,
                         dft, rate);
    const int64_t m = (int64_t)mels, d[2] = {(int64_t)dft / 2 + 1, m};
    int64_t *f = malloc((size_t)(m + 2) * sizeof *f);
    cg_tensor *w;
    if (!f) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if ((s = cg_tensor_create(dt, 2, d, &w))) {
        free(f);
        return s;
    }
    const double lm = 2595 * log1p(lo / 700) / log(10),
                 step = (2595 * log1p(hi / 700) / log(10) - lm) / (double)(m + 2);
    for (int64_t i = 0; i < m + 2; i++)
        f[i] =
            (int64_t)floor(((double)(int64_t)dft + 1) * 700 * expm1(((double)i * step + lm) / 2595 * log(10)) / rate);
    for (int64_t i = 0; i < m; i++) mel_triangle(w, m, d[0], f, i);
    free(f);
    return onnx_set_const(im, 0, w);
}

/* ---- DFT ---- */

/* One transform along an axis of x [..., n_in, c_in] (c_in 1: real, 2:
 * complex) into [..., k_out, c_out]: len points (the input truncated or
 * zero-padded to them), forward or inverse (scaled by 1 / len), one-sided
 * (the first len / 2 + 1 bins), or irfft (one-sided complex in, real out). */
typedef struct {
    int64_t n_in, c_in, len, k_out, c_out;
    int inverse, irfft;
} dft_spec;

/* cos and sin of 2 pi k n / len, the product reduced mod len first so that
 * large indices keep their accuracy. */
static void dft_angle(int64_t k, int64_t n, int64_t len, double *c, double *s) {
    const double a = TWO_PI * (double)((k % len) * (n % len) % len) / (double)len;
    *c = cos(a), *s = sin(a);
}

/* The matrix M [n_in * c_in, k_out * c_out] with out = in @ M. */
static cg_tensor *dft_matrix(const dft_spec *p) {
    const int64_t d[2] = {p->n_in * p->c_in, p->k_out * p->c_out};
    cg_tensor *m;
    if (cg_tensor_create(CG_F32, 2, d, &m)) return NULL;
    float *w = m->data;
    const double sg = p->inverse ? 1 : -1, sc = p->inverse ? 1.0 / (double)p->len : 1;
    for (int64_t n = 0; n < p->n_in; n++)
        for (int64_t k = 0; k < p->k_out; k++) {
            double c, s;
            float *r0 = w + (n * p->c_in) * d[1], *r1 = r0 + d[1];
            if (p->irfft) { /* input bin n, output sample k: Hermitian weights */
                if (n > p->len / 2) continue;
                const double wt = n == 0 || 2 * n == p->len ? 1 : 2;
                dft_angle(n, k, p->len, &c, &s);
                r0[k] = (float)(wt * c * sc);
                if (p->c_in == 2) r1[k] = (float)(n == 0 || 2 * n == p->len ? 0 : -wt * s * sc);
                continue;
            }
            if (n >= p->len) continue; /* truncated */
            dft_angle(k, n, p->len, &c, &s);
            r0[2 * k] = (float)(c * sc), r0[2 * k + 1] = (float)(sg * s * sc);
            if (p->c_in == 2) r1[2 * k] = (float)(-sg * s * sc), r1[2 * k + 1] = (float)(c * sc);
        }
    return m;
}

/* Transpose sub-node of x by perm into *out (fresh). */
static cg_status sub_transpose(onnx_imp *im, const char *x, int nd, const int64_t *perm, const char **out) {
    onnx_sub_attr a = onnx_sub_ints("perm", nd, perm);
    *out = NULL;
    return onnx_sub_node(im, "Transpose", 1, &x, 1, out, 1, &a);
}

/* Reshape sub-node of x to its first `keep` dims (copied: 0) then the
 * sizes tail[0..n_tail) into *out (NULL: fresh). */
static cg_status sub_reshape(onnx_imp *im, const char *x, int keep, int n_tail, const int64_t *tail, const char **out) {
    int64_t shp[CG_MAX_DIMS + 2] = {0}, n = keep + n_tail;
    memcpy(shp + keep, tail, (size_t)n_tail * sizeof *tail);
    const char *k, *in[2];
    cg_status s = onnx_new_const_data(im, CG_I64, 1, &n, shp, &k);
    in[0] = x, in[1] = k;
    return s ? s : onnx_sub_node(im, "Reshape", 2, in, 1, out, 0, NULL);
}

/* The transform p of value x (dims d[0..nd), the last c_in) along axis
 * (< nd - 1) into the ONNX value out. */
static cg_status dft_apply(onnx_imp *im, const char *x, int nd, int axis, const dft_spec *p, const char *out) {
    int64_t perm[CG_MAX_DIMS], inv[CG_MAX_DIMS], j = 0;
    const int moved = axis != nd - 2;
    for (int i = 0; i < nd - 1; i++)
        if (i != axis) perm[j++] = i;
    perm[j++] = axis, perm[j] = nd - 1;
    for (int i = 0; i < nd; i++) inv[perm[i]] = i;
    const char *cur = x, *flat = NULL, *prod = NULL, *mn, *back = moved ? NULL : out;
    const int64_t nc = p->n_in * p->c_in, tail[2] = {p->k_out, p->c_out};
    cg_tensor *m = dft_matrix(p);
    if (!m) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    cg_status s = onnx_new_const(im, m, &mn);
    if (!s && moved) s = sub_transpose(im, x, nd, perm, &cur);
    if (!s) s = sub_reshape(im, cur, nd - 2, 1, &nc, &flat);
    const char *in[2] = {flat, mn};
    if (!s) s = onnx_sub_node(im, "MatMul", 2, in, 1, &prod, 0, NULL);
    if (!s) s = sub_reshape(im, prod, nd - 2, 2, tail, &back);
    if (!s && moved) {
        onnx_sub_attr a = onnx_sub_ints("perm", nd, inv);
        s = onnx_sub_node(im, "Transpose", 1, &back, 1, &out, 1, &a);
    }
    return s;
}

/* The DFT's input x and axis (an attribute before opset 20, an input known
 * at import since, -2 by default), checked. */
static cg_status dft_axis(onnx_imp *im, onnx_val *x, int *axis) {
    int64_t a = onnx_attr_int(im, "axis", 1);
    if (im->opset >= 20) {
        double v = -2;
        cg_status s = onnx_in(im, 2) ? need_scalar(im, 2, "input 2 (axis)", &v) : CG_OK;
        if (s) return s;
        a = (int64_t)v;
    }
    const int nd = x->desc.ndim;
    if (a < 0) a += nd;
    if (nd < 2 || a < 0 || a >= nd - 1)
        return onnx_fail(im, CG_ERR_FORMAT, "axis %lld is out of range for '%s' (the last dim is real / imaginary)",
                         (long long)a, x->name);
    *axis = (int)a;
    return CG_OK;
}

/* DFT: forward or inverse, real or complex input, one-sided output (or
 * input, for the inverse: irfft), dft_length known at import. */
cg_status cg_onnx_map_dft(onnx_imp *im) {
    static const char *const known[] = {"axis", "inverse", "onesided", NULL};
    onnx_val *x;
    int axis = 0;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &x)) || (s = dft_axis(im, x, &axis))) return s;
    const int nd = x->desc.ndim, inv = onnx_attr_int(im, "inverse", 0) != 0,
              one = onnx_attr_int(im, "onesided", 0) != 0;
    dft_spec p = {x->desc.dims[axis], x->desc.dims[nd - 1], 0, 0, 2, inv, inv && one};
    if (p.n_in < 0 || (p.c_in != 1 && p.c_in != 2))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "'%s' needs a known length along axis %d and a last dim of 1 or 2",
                         x->name, axis);
    double len = (double)(p.irfft ? 2 * (p.n_in - 1) : p.n_in);
    if (onnx_in(im, 1) && (s = need_scalar(im, 1, "input 1 (dft_length)", &len))) return s;
    if (len < 1 || len > (1 << 16)) return onnx_fail(im, CG_ERR_UNSUPPORTED, "dft_length %g is out of range", len);
    p.len = (int64_t)len;
    p.k_out = p.irfft ? p.len : one ? p.len / 2 + 1 : p.len;
    if (p.irfft) p.c_out = 1;
    if (p.n_in * p.c_in * p.k_out * p.c_out > ((int64_t)1 << 26))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "the transform's matrix (%lld x %lld) is too large",
                         (long long)(p.n_in * p.c_in), (long long)(p.k_out * p.c_out));
    return dft_apply(im, x->name, nd, axis, &p, out_name(im, 0));
}

/* ---- STFT ---- */

/* The frames of signal x [B, S, C]: a Gather along axis 1 of the constant
 * indices [frames, fl] (frame f starts at f * step) into *out. */
static cg_status stft_frames(onnx_imp *im, onnx_val *x, int64_t frames, int64_t fl, int64_t step, const char **out) {
    const int64_t d[2] = {frames, fl};
    cg_tensor *ix;
    cg_status s = cg_tensor_alloc(CG_I64, 2, d, &ix);
    if (s) return s;
    for (int64_t f = 0; f < frames; f++)
        for (int64_t i = 0; i < fl; i++) ((int64_t *)ix->data)[f * fl + i] = f * step + i;
    const char *k, *in[2];
    if ((s = onnx_new_const(im, ix, &k))) return s;
    in[0] = x->name, in[1] = k;
    onnx_sub_attr a = onnx_sub_int("axis", 1);
    *out = NULL;
    return onnx_sub_node(im, "Gather", 2, in, 1, out, 1, &a);
}

/* STFT: frames of frame_length every frame_step samples, each multiplied
 * by the window where given, then the DFT of each (one-sided by default):
 * [B, frames, bins, 2]. frame_step and frame_length must be known. */
cg_status cg_onnx_map_stft(onnx_imp *im) {
    static const char *const known[] = {"onesided", NULL};
    onnx_val *x, *win = onnx_in(im, 2);
    double step, fl = -1;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &x)) ||
        (s = need_scalar(im, 1, "input 1 (frame_step)", &step)))
        return s;
    if (onnx_in(im, 3) && (s = need_scalar(im, 3, "input 3 (frame_length)", &fl))) return s;
    if (win && fl < 0) fl = win->typed && win->desc.ndim == 1 ? (double)win->desc.dims[0] : -1;
    if (x->desc.ndim != 3 || x->desc.dims[1] < 0 || (x->desc.dims[2] != 1 && x->desc.dims[2] != 2))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "signal '%s' must be [B, S, 1 or 2] with a known length S", x->name);
    if (fl < 0) fl = (double)x->desc.dims[1];
    if (step < 1 || fl < 1 || fl > (double)x->desc.dims[1] || fl > (1 << 16))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "frame_step %g and frame_length %g do not fit a signal of %lld", step,
                         fl, (long long)x->desc.dims[1]);
    const int64_t n = (int64_t)fl, frames = 1 + (x->desc.dims[1] - n) / (int64_t)step;
    const int one = onnx_attr_int(im, "onesided", 1) != 0;
    dft_spec p = {n, x->desc.dims[2], n, one ? n / 2 + 1 : n, 2, 0, 0};
    const char *fr, *w = NULL, *wx = NULL;
    if ((s = stft_frames(im, x, frames, n, (int64_t)step, &fr))) return s;
    if (win) {
        const int64_t wd[2] = {n, 1};
        if (!win->typed || win->desc.ndim != 1 || win->desc.dims[0] != n)
            return onnx_fail(im, CG_ERR_FORMAT, "window '%s' must be [%lld]", win->name, (long long)n);
        if ((s = sub_reshape(im, win->name, 0, 2, wd, &w))) return s;
        const char *in[2] = {fr, w};
        if ((s = onnx_sub_node(im, "Mul", 2, in, 1, &wx, 0, NULL))) return s;
        fr = wx;
    }
    return dft_apply(im, fr, 4, 2, &p, out_name(im, 0));
}
