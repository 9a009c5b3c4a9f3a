/* ONNX ops made of element positions, taking any dtype: EyeLike (1 where
 * column - row == k, from arange) and ReverseSequence (each batch entry's
 * first seq_len steps reversed, gather_elements of the reversed
 * positions). */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* arange(like) along axis as i64, reshaped to rank r with the length at
 * position `at` and 1 elsewhere, into *out. */
static cg_status positions(onnx_imp *im, const char *like, int axis, int r, int at, const char **out) {
    char a[40];
    const char *p = NULL;
    snprintf(a, sizeof a, "axis: %d", axis);
    cg_status s = emit_tmp(im, "arange", like, a, &p);
    if (s) return s;
    onnx_val *v = onnx_val_get(im, p);
    int64_t d[CG_MAX_DIMS];
    for (int i = 0; i < r; i++) d[i] = i == at ? v->desc.dims[0] : 1;
    *out = NULL;
    return onnx_emit_reshape(im, v, r, d, out);
}

/* A scalar constant of dtype dt holding 0 or 1. */
static cg_status scalar_of(onnx_imp *im, cg_dtype dt, int one, const char **name) {
    unsigned char b[8] = {0};
    const float f = 1.0f;
    const uint16_t h = 0x3C00, bh = 0x3F80; /* 1.0 in f16 and bf16 */
    if (one && dt == CG_F32) memcpy(b, &f, 4);
    else if (one && dt == CG_F16) memcpy(b, &h, 2);
    else if (one && dt == CG_BF16) memcpy(b, &bh, 2);
    else if (one && dt == CG_I64) memcpy(b, &(int64_t){1}, 8);
    else if (one && dt == CG_I32) memcpy(b, &(int32_t){1}, 4);
    else if (one) b[0] = 1; /* i8, u8, bool */
    return const_of(im, dt, 0, NULL, b, name);
}

/* EyeLike: [R, C] (a 1-D input n: [n, n]) of dtype `dtype` (default the
 * input's), 1 on diagonal k. */
cg_status cg_onnx_map_eye_like(onnx_imp *im) {
    static const char *const known[] = {"dtype", "k", NULL};
    onnx_val *x;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    const int r = x->desc.ndim;
    if (r != 1 && r != 2) return onnx_fail(im, CG_ERR_FORMAT, "the input must have 1 or 2 dims");
    cg_dtype dt = (cg_dtype)x->desc.dtype;
    if (onnx_attr(im, "dtype")) {
        const int64_t t = onnx_attr_int(im, "dtype", 0);
        if (!(dt = cg_onnx_dtype((int32_t)t)))
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "dtype %s is not supported", cg_onnx_type_name((int32_t)t));
    }
    const int64_t k = onnx_attr_int(im, "k", 0);
    const char *rows = NULL, *cols = NULL, *d = NULL, *kc = NULL, *eq = NULL, *one = NULL, *zero = NULL;
    if ((s = positions(im, x->name, 0, 2, 0, &rows)) || (s = positions(im, x->name, r - 1, 2, 1, &cols)) ||
        (s = emit_tmp2(im, "sub", cols, rows, NULL, &d)) || (s = const_of(im, CG_I64, 0, NULL, &k, &kc)) ||
        (s = emit_tmp2(im, "equal", d, kc, NULL, &eq)) || (s = scalar_of(im, dt, 1, &one)) ||
        (s = scalar_of(im, dt, 0, &zero)))
        return s;
    return emit1(im, "where", 3, (const char *[]){eq, one, zero}, out_name(im, 0), NULL);
}

/* ReverseSequence: along time_axis, position t of batch entry b reads
 * seq_lens[b] - 1 - t where t < seq_lens[b], else t itself. */
cg_status cg_onnx_map_reverse_sequence(onnx_imp *im) {
    static const char *const known[] = {"batch_axis", "time_axis", NULL};
    onnx_val *x, *len;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = need_in(im, 1, &len)) || (s = onnx_check_attrs(im, known))) return s;
    const int r = x->desc.ndim, ba = (int)onnx_attr_int(im, "batch_axis", 1),
              ta = (int)onnx_attr_int(im, "time_axis", 0);
    if (r < 2 || ba < 0 || ba > 1 || ta < 0 || ta > 1 || ba == ta)
        return onnx_fail(im, CG_ERR_FORMAT, "batch_axis and time_axis must be 0 and 1 (or 1 and 0) of a 2+-D input");
    if (len->desc.ndim != 1 || (len->desc.dtype != CG_I64 && len->desc.dtype != CG_I32))
        return onnx_fail(im, CG_ERR_FORMAT, "sequence_lens must be an integer vector [batch]");
    int64_t ld[CG_MAX_DIMS];
    for (int i = 0; i < r; i++) ld[i] = i == ba ? len->desc.dims[0] : 1;
    const char *l = len->name, *t = NULL, *lr = NULL, *one = NULL, *l1 = NULL, *rev = NULL, *lt = NULL, *idx = NULL;
    const int64_t c1 = 1;
    if ((len->desc.dtype != CG_I64 && (s = emit_tmp(im, "cast", l, "to: \"i64\"", &l))) ||
        (s = onnx_emit_reshape(im, onnx_val_get(im, l), r, ld, &lr)) || (s = positions(im, x->name, ta, r, ta, &t)) ||
        (s = const_of(im, CG_I64, 0, NULL, &c1, &one)) || (s = emit_tmp2(im, "sub", lr, one, NULL, &l1)) ||
        (s = emit_tmp2(im, "sub", l1, t, NULL, &rev)) || (s = emit_tmp2(im, "less", t, lr, NULL, &lt)) ||
        (s = onnx_emit(im, "where", 3, (const char *[]){lt, rev, t}, 1, &idx, NULL)))
        return s;
    /* gather_elements takes an index of the output's whole shape */
    char a[200];
    size_t u = (size_t)snprintf(a, sizeof a, "shape: [");
    for (int i = 0; i < r && u < sizeof a; i++) u += (size_t)snprintf(a + u, sizeof a - u, "%s1", i ? ", " : "");
    if (u < sizeof a) snprintf(a + u, sizeof a - u, "]");
    const char *full = NULL;
    if ((s = onnx_emit(im, "expand", 2, (const char *[]){idx, x->name}, 1, &full, a))) return s;
    snprintf(a, sizeof a, "axis: %d", ta);
    return emit1(im, "gather_elements", 2, (const char *[]){x->name, full}, out_name(im, 0), a);
}
