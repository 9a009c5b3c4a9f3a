/* resize's sampling tables and attribute checks (resize.h). The formulas
 * are those of ONNX's reference implementation (onnx/reference/ops/
 * op_resize.py), in double: the positions a nearest sample takes and the
 * taps an interpolation reads are decided here once, never by a device's
 * float rounding. */
#include "resize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const mode_names[] = {"nearest", "linear", "cubic", NULL};
static const char *const coord_names[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",   "align_corners",
                                          "asymmetric", "tf_crop_and_resize",   "tf_half_pixel_for_nn", NULL};
enum { C_HALF, C_HALF_SYM, C_PYTORCH, C_ALIGN, C_ASYM, C_CROP, C_TF_NN };
static const char *const nearest_names[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL};
enum { N_PREFER_FLOOR, N_PREFER_CEIL, N_FLOOR, N_CEIL };

static int find_name(const char *const *names, const char *s) {
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], s)) return i;
    return -1;
}

/* Parses n numbers separated by spaces or commas from s into v; 0 when s
 * holds another count or something else. */
static int parse_list(const char *s, int n, double *v) {
    int k = 0;
    for (;;) {
        while (*s == ' ' || *s == ',') s++;
        if (!*s) return k == n;
        char *end;
        const double d = strtod(s, &end);
        if (end == s || k == n || !isfinite(d)) return 0;
        v[k++] = d;
        s = end;
    }
}

static cg_op_status parse_names(const cg_op_call *call, rs_params *p) {
    const cg_attr_value *at = call->attrs;
    p->mode = find_name(mode_names, at[RS_MODE].s);
    p->coord = find_name(coord_names, at[RS_COORD].s);
    p->nearest = find_name(nearest_names, at[RS_NEAREST].s);
    if (p->mode < 0)
        return cg_op_fail(call, "attribute mode must be nearest, linear or cubic, got \"%s\"", at[RS_MODE].s);
    if (p->coord < 0)
        return cg_op_fail(call,
                          "attribute coordinate_transformation_mode must be half_pixel, half_pixel_symmetric, "
                          "pytorch_half_pixel, align_corners, asymmetric, tf_crop_and_resize or "
                          "tf_half_pixel_for_nn, got \"%s\"",
                          at[RS_COORD].s);
    if (p->nearest < 0)
        return cg_op_fail(call,
                          "attribute nearest_mode must be round_prefer_floor, round_prefer_ceil, floor or ceil, "
                          "got \"%s\"",
                          at[RS_NEAREST].s);
    if (p->antialias && p->mode == RS_NEAREST_MODE) return cg_op_fail(call, "antialias needs mode linear or cubic");
    return CG_OP_OK;
}

/* The taps of axis a for an interpolation (reference: the coefficient
 * count of its mode). */
static int taps_of(const rs_params *p, double scale) {
    if (p->mode == RS_NEAREST_MODE) return 2;
    if (!p->antialias) return p->mode == RS_LINEAR ? 2 : 4;
    const double s = scale < 1 ? scale : 1;
    if (p->mode == RS_LINEAR) return 2 - 2 * (int)(floor(-1 / s) + 1);
    const int start = (int)(floor(-2 / s) + 1);
    return 2 - 2 * start;
}

cg_op_status cg_rs_params(const cg_op_call *call, rs_params *p) {
    const cg_tensor_desc *x = &call->inputs[0];
    const cg_attr_value *at = call->attrs;
    memset(p, 0, sizeof *p);
    p->nd = x->ndim;
    p->exclude = at[RS_EXCLUDE].i != 0;
    p->antialias = at[RS_ANTIALIAS].i != 0;
    p->a = at[RS_CUBIC_A].f;
    p->extrap = at[RS_EXTRAP].f;
    if (parse_names(call, p)) return CG_OP_ERROR;
    if (at[RS_SIZES].n_ints != x->ndim || x->ndim < 1)
        return cg_op_fail(call, "sizes has %d values for x of %d dims", (int)at[RS_SIZES].n_ints, (int)x->ndim);
    if (at[RS_SCALES].s[0] && !parse_list(at[RS_SCALES].s, p->nd, p->scale))
        return cg_op_fail(call, "scales \"%s\" must be %d numbers", at[RS_SCALES].s, p->nd);
    for (int i = 0; i < p->nd; i++) p->roi[i] = 0, p->roi[p->nd + i] = 1;
    if (at[RS_ROI].s[0] && !parse_list(at[RS_ROI].s, 2 * p->nd, p->roi))
        return cg_op_fail(call, "roi \"%s\" must be %d numbers (starts, then ends)", at[RS_ROI].s, 2 * p->nd);
    for (int i = 0; i < p->nd; i++) {
        const int64_t n = x->dims[i], m = at[RS_SIZES].ints[i];
        p->in[i] = n, p->out[i] = m;
        if (at[RS_SCALES].s[0] && !(p->scale[i] > 0))
            return cg_op_fail(call, "scale %g of axis %d must be positive", p->scale[i], i);
        if (n < 0 || m < 0) continue;
        if (n == 0 && m > 0)
            return cg_op_fail(call, "axis %d of x is empty and cannot be resized to %lld", i, (long long)m);
        if (!at[RS_SCALES].s[0]) p->scale[i] = n ? (double)m / (double)n : 1;
        if (p->mode != RS_NEAREST_MODE && taps_of(p, p->scale[i]) > RS_MAX_TAPS)
            return cg_op_fail(call, "antialias over scale %g of axis %d reads more than %d inputs per output",
                              p->scale[i], i, RS_MAX_TAPS);
    }
    return CG_OP_OK;
}

static double cubic_w(double x, double a) {
    x = fabs(x);
    if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0;
}

/* The n coefficients at `ratio` (in (0, 1]) of p's mode. */
static void coeffs_of(const rs_params *p, double ratio, double scale, int n, double *c) {
    if (p->mode == RS_NEAREST_MODE) {
        int right;
        if (ratio == 1) right = 1;
        else if (p->nearest == N_PREFER_FLOOR) right = ratio > 0.5;
        else if (p->nearest == N_PREFER_CEIL) right = ratio >= 0.5;
        else right = p->nearest == N_CEIL;
        c[0] = !right, c[1] = right;
        return;
    }
    const double s = p->antialias && scale < 1 ? scale : 1;
    const int start = p->antialias ? 1 - n / 2 : p->mode == RS_LINEAR ? 0 : -1;
    double sum = 0;
    for (int t = 0; t < n; t++) {
        const double x = (start + t - ratio) * s;
        if (p->mode == RS_LINEAR) c[t] = !p->antialias ? (t ? ratio : 1 - ratio) : fmax(0, fmin(1, 1 - fabs(x)));
        else c[t] = cubic_w(x, p->a);
        sum += c[t];
    }
    if (p->antialias)
        for (int t = 0; t < n; t++) c[t] /= sum;
}

/* The input coordinate of output position o along axis a; *extrap set
 * where tf_crop_and_resize falls outside the input. */
static double coord_of(const rs_params *p, int a, int64_t o, int *extrap) {
    const double in = (double)p->in[a], s = p->scale[a], w = s * in, y = (double)o;
    double x;
    *extrap = 0;
    switch (p->coord) {
    case C_ALIGN: return w == 1 ? 0 : y * (in - 1) / (w - 1);
    case C_ASYM: return y / s;
    case C_CROP: {
        const double r0 = p->roi[a], r1 = p->roi[p->nd + a];
        x = w == 1 ? (r1 - r0) * (in - 1) / 2 : y * (r1 - r0) * (in - 1) / (w - 1);
        x += r0 * (in - 1);
        *extrap = x < 0 || x > in - 1;
        return x;
    }
    case C_PYTORCH: return w == 1 ? -0.5 : (y + 0.5) / s - 0.5;
    case C_HALF_SYM: {
        const double adj = (double)p->out[a] / w, center = in / 2;
        return center * (1 - adj) + (y + 0.5) / s - 0.5;
    }
    case C_TF_NN: return (y + 0.5) / s;
    default: return (y + 0.5) / s - 0.5;
    }
}

/* Whether axis a is left as it is (the reference skips it). */
static int identity_axis(const rs_params *p, int a) {
    if (p->out[a] != p->in[a] || fabs(p->scale[a] - 1) > 1e-9) return 0;
    return p->coord != C_CROP || (fabs(p->roi[a]) <= 1e-9 && fabs(p->roi[p->nd + a] - 1) <= 1e-9);
}

/* One output position's row: n (index, weight) pairs; nearest keeps only
 * the chosen input position, in the first pair. */
static void row_of(const rs_params *p, int a, int64_t o, int n, int32_t *row) {
    int ext;
    const double x = coord_of(p, a, o, &ext), fx = floor(x);
    const double ratio = x == fx ? 1 : x - fx;
    double c[RS_MAX_TAPS];
    coeffs_of(p, ratio, p->scale[a], n, c);
    /* the n positions nearest x, ties to the smaller (reference's window) */
    const int pad = (n + 1) / 2;
    const double xp = x + pad, pp = floor(xp), frac = xp - pp;
    const int64_t start =
        (int64_t)pp +
        (n % 2 == 0 ? (frac == 0 ? -(n / 2) : 1 - n / 2) : (frac <= 0.5 ? -((n - 1) / 2) : 1 - (n - 1) / 2)) - pad;
    const int64_t len = p->in[a];
    double sum = 0;
    for (int t = 0; t < n; t++) {
        if (p->exclude && (start + t < 0 || start + t >= len)) c[t] = 0;
        sum += c[t];
    }
    if (!p->exclude || sum == 0) sum = 1;
    for (int t = 0; t < n; t++) {
        int64_t k = start + t;
        k = k < 0 ? 0 : k >= len ? len - 1 : k;
        const float w = (float)(c[t] / sum);
        row[2 * t] = ext ? -1 : (int32_t)k;
        memcpy(&row[2 * t + 1], &w, sizeof w);
        if (p->mode == RS_NEAREST_MODE && c[t] == 1) row[0] = row[2 * t];
    }
}

int64_t cg_rs_table(const rs_params *p, int32_t *taps, int64_t *base, int32_t *tab) {
    int64_t words = 0;
    for (int a = 0; a < p->nd; a++) {
        const int n = identity_axis(p, a) ? 0 : taps_of(p, p->scale[a]);
        /* nearest reads one position; interpolations all n */
        const int keep = p->mode == RS_NEAREST_MODE && n ? 1 : n;
        taps[a] = keep;
        base[a] = words;
        if (tab && n) {
            int32_t row[2 * RS_MAX_TAPS];
            for (int64_t o = 0; o < p->out[a]; o++) {
                row_of(p, a, o, n, row);
                memcpy(tab + words + 2 * keep * o, row, (size_t)(2 * keep) * sizeof *row);
            }
        }
        words += 2 * (int64_t)keep * p->out[a];
    }
    return words;
}
