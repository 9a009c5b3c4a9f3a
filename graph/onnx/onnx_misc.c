/* ONNX ops whose output shape depends on their input values (NonZero,
 * Unique, NonMaxSuppression, Compress): clgraph's shapes are known when a
 * plan is made, so these are evaluated at import where those values are
 * known (constants, or inputs given for the import), and refused with the
 * reason otherwise. Compress needs only its condition: the data is then a
 * Gather of the selected indices, run on the device. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Input i's value at import, which this op needs: else the refusal. */
static cg_status need_value(onnx_imp *im, int i, const char *what, const cg_tensor **t) {
    onnx_val *v = onnx_in(im, i);
    if (!v) return onnx_fail(im, CG_ERR_FORMAT, "input %d (%s) is missing", i, what);
    if ((*t = onnx_known(v))) return CG_OK;
    return onnx_fail(im, CG_ERR_UNSUPPORTED,
                     "input %d (%s, '%s') must be known at import: the output's shape depends on its values "
                     "(give it with --input, or cg_onnx_options.given)",
                     i, what, v->name);
}

static cg_tensor *new_tensor(cg_dtype dt, int nd, const int64_t *dims) {
    cg_tensor *t;
    return cg_tensor_alloc(dt, nd, dims, &t) ? NULL : t;
}

/* ---- NonZero ---- */

/* NonZero: the indices of the non-zero elements, [rank, count] int64 in
 * row-major order. */
cg_status cg_onnx_map_nonzero(onnx_imp *im) {
    const cg_tensor *x;
    cg_status s;
    if ((s = onnx_check_attrs(im, NULL)) || (s = need_value(im, 0, "X", &x))) return s;
    const int64_t n = cg_shape_numel(x->ndim, x->dims);
    int64_t cnt = 0, k = 0;
    for (int64_t i = 0; i < n; i++) cnt += cg_onnx_float_at(x, i) != 0;
    int64_t dims[2] = {x->ndim, cnt};
    cg_tensor *o = new_tensor(CG_I64, 2, dims);
    if (!o) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    int64_t *p = o->data;
    for (int64_t i = 0; i < n; i++) {
        if (cg_onnx_float_at(x, i) == 0) continue;
        for (int64_t d = x->ndim - 1, rem = i; d >= 0; d--) {
            p[d * cnt + k] = rem % x->dims[d];
            rem /= x->dims[d];
        }
        k++;
    }
    return onnx_set_const(im, 0, o);
}

/* ---- Unique ---- */

/* x viewed as [outer, len, inner] around the axis (len the flat size and
 * outer = inner = 1 without one): slice i is the elements with middle
 * index i. */
typedef struct {
    const cg_tensor *x;
    int64_t outer, len, inner;
} uq_view;

static double uq_el(const uq_view *v, int64_t slice, int64_t j) {
    const int64_t o = j / v->inner, r = j % v->inner;
    return cg_onnx_float_at(v->x, (o * v->len + slice) * v->inner + r);
}

/* Orders slices a and b lexicographically (-1, 0, 1). */
static int uq_cmp(const uq_view *v, int64_t a, int64_t b) {
    for (int64_t j = 0; j < v->outer * v->inner; j++) {
        const double p = uq_el(v, a, j), q = uq_el(v, b, j);
        if (p != q) return p < q ? -1 : 1;
    }
    return 0;
}

/* The Unique outputs for the unique slices u[0..m) (first occurrences, in
 * output order): Y, indices, inverse_indices, counts. */
static cg_status uq_outputs(onnx_imp *im, const uq_view *v, int axis, const int64_t *u, int64_t m) {
    const cg_tensor *x = v->x;
    int64_t yd[CG_MAX_DIMS], n1 = m;
    int nd = axis < 0 ? 1 : x->ndim;
    if (axis < 0) yd[0] = m;
    else memcpy(yd, x->dims, sizeof yd), yd[axis] = m;
    cg_tensor *y = new_tensor(x->dtype, nd, yd), *ix = new_tensor(CG_I64, 1, &n1),
              *inv = new_tensor(CG_I64, 1, &v->len), *cnt = new_tensor(CG_I64, 1, &n1);
    cg_status s = y && ix && inv && cnt ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    const size_t es = cg_dtype_size(x->dtype);
    for (int64_t k = 0; !s && k < m; k++) {
        ((int64_t *)ix->data)[k] = u[k];
        ((int64_t *)cnt->data)[k] = 0;
        for (int64_t j = 0; j < v->outer * v->inner; j++) {
            const int64_t o = j / v->inner, r = j % v->inner;
            memcpy((char *)y->data + (size_t)((o * m + k) * v->inner + r) * es,
                   (const char *)x->data + (size_t)((o * v->len + u[k]) * v->inner + r) * es, es);
        }
    }
    for (int64_t i = 0; !s && i < v->len; i++)
        for (int64_t k = 0; k < m; k++)
            if (!uq_cmp(v, i, u[k])) {
                ((int64_t *)inv->data)[i] = k;
                ((int64_t *)cnt->data)[k]++;
                break;
            }
    cg_tensor *outs[4] = {y, ix, inv, cnt};
    for (int o = 0; o < 4; o++) {
        if (!s) s = onnx_set_const(im, o, outs[o]);
        else cg_tensor_free(outs[o]);
    }
    return s;
}

static _Thread_local const uq_view *uq_sort_view;
static int uq_sort_cmp(const void *a, const void *b) {
    const int64_t p = *(const int64_t *)a, q = *(const int64_t *)b;
    const int c = uq_cmp(uq_sort_view, p, q);
    return c ? c : (p > q) - (p < q);
}

/* Unique: the distinct elements (or slices along axis), sorted or in order
 * of first occurrence, with their first indices, each element's (slice's)
 * position among them and their counts, as np.unique. */
cg_status cg_onnx_map_unique(onnx_imp *im) {
    static const char *const known[] = {"axis", "sorted", NULL};
    const cg_tensor *x;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_value(im, 0, "X", &x))) return s;
    uq_view v = {x, 1, cg_shape_numel(x->ndim, x->dims), 1};
    int axis = -1;
    if (onnx_attr(im, "axis")) {
        const int64_t a = onnx_attr_int(im, "axis", 0);
        if (a < -x->ndim || a >= x->ndim)
            return onnx_fail(im, CG_ERR_FORMAT, "axis %lld is out of range", (long long)a);
        axis = (int)(a < 0 ? a + x->ndim : a);
        v.len = x->dims[axis];
        for (int d = 0; d < x->ndim; d++)
            if (d < axis) v.outer *= x->dims[d];
            else if (d > axis) v.inner *= x->dims[d];
    }
    int64_t *u = malloc((size_t)(v.len ? v.len : 1) * sizeof *u), m = 0;
    if (!u) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int64_t i = 0; i < v.len; i++) {
        int64_t k = 0;
        while (k < m && uq_cmp(&v, i, u[k])) k++;
        if (k == m) u[m++] = i;
    }
    if (onnx_attr_int(im, "sorted", 1)) {
        uq_sort_view = &v; /* qsort has no context argument */
        qsort(u, (size_t)m, sizeof *u, uq_sort_cmp);
    }
    s = uq_outputs(im, &v, axis, u, m);
    free(u);
    return s;
}

/* ---- Compress ---- */

/* Compress: the slices along axis (of the flattened input without one)
 * whose condition is true; the condition, which may be shorter than the
 * axis, must be known. The data is then a Gather of their indices. */
cg_status cg_onnx_map_compress(onnx_imp *im) {
    static const char *const known[] = {"axis", NULL};
    onnx_val *x;
    const cg_tensor *c;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &x)) || (s = need_value(im, 1, "condition", &c)))
        return s;
    const char *data = x->name;
    int64_t axis = 0, len = cg_shape_numel(x->desc.ndim, x->desc.dims);
    if (onnx_attr(im, "axis")) {
        axis = onnx_attr_int(im, "axis", 0);
        if (axis < -x->desc.ndim || axis >= x->desc.ndim)
            return onnx_fail(im, CG_ERR_FORMAT, "axis %lld is out of range", (long long)axis);
        if (axis < 0) axis += x->desc.ndim;
        len = x->desc.dims[axis];
    } else {
        const int64_t flat = -1;
        const char *shp, *in[2];
        if ((s = onnx_new_const_data(im, CG_I64, 1, (int64_t[]){1}, &flat, &shp))) return s;
        in[0] = x->name, in[1] = shp, data = NULL;
        if ((s = onnx_sub_node(im, "Reshape", 2, in, 1, &data, 0, NULL))) return s;
    }
    if (len < 0)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "the compressed axis of '%s' must have a known size", x->name);
    const int64_t n = cg_shape_numel(c->ndim, c->dims);
    if (c->ndim != 1 || n > len)
        return onnx_fail(im, CG_ERR_FORMAT, "condition must be 1-D and no longer than the axis (%lld)", (long long)len);
    int64_t cnt = 0;
    for (int64_t i = 0; i < n; i++) cnt += cg_onnx_int_at(c, i) != 0;
    cg_tensor *ix = new_tensor(CG_I64, 1, &cnt);
    if (!ix) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int64_t i = 0, k = 0; i < n; i++)
        if (cg_onnx_int_at(c, i)) ((int64_t *)ix->data)[k++] = i;
    const char *idx, *in[2], *out = out_name(im, 0);
    if ((s = onnx_new_const(im, ix, &idx))) return s;
    in[0] = data, in[1] = idx;
    onnx_sub_attr a = onnx_sub_int("axis", axis);
    return onnx_sub_node(im, "Gather", 2, in, 1, &out, 1, &a);
}

/* ---- NonMaxSuppression ---- */

typedef struct {
    float lo[2], hi[2]; /* y, x */
} nms_box;

static nms_box nms_read(const cg_tensor *b, int64_t at, int center) {
    float v[4];
    for (int i = 0; i < 4; i++) v[i] = (float)cg_onnx_float_at(b, at + i);
    nms_box r;
    for (int k = 0; k < 2; k++) {
        if (center) { /* [x_center, y_center, width, height] */
            const float c = v[1 - k], h = v[3 - k] / 2;
            r.lo[k] = c - h, r.hi[k] = c + h;
        } else { /* [y1, x1, y2, x2], either corner first */
            r.lo[k] = fminf(v[k], v[k + 2]), r.hi[k] = fmaxf(v[k], v[k + 2]);
        }
    }
    return r;
}

/* Whether b suppresses a: IoU over the threshold, computed in f32 as ONNX's
 * reference and ONNX Runtime do. */
static int nms_suppress(nms_box a, nms_box b, float thr) {
    float in[2];
    for (int k = 0; k < 2; k++) {
        const float lo = fmaxf(a.lo[k], b.lo[k]), hi = fminf(a.hi[k], b.hi[k]);
        if (hi <= lo) return 0;
        in[k] = hi - lo;
    }
    const float inter = in[0] * in[1];
    const float a1 = (a.hi[0] - a.lo[0]) * (a.hi[1] - a.lo[1]), a2 = (b.hi[0] - b.lo[0]) * (b.hi[1] - b.lo[1]);
    const float uni = a1 + a2 - inter;
    if (inter <= 0 || a1 <= 0 || a2 <= 0 || uni <= 0) return 0;
    return inter / uni > thr;
}

typedef struct {
    float score;
    int64_t box;
} nms_cand;

/* Highest score first, the lower box index first among equal scores. */
static int nms_order(const void *a, const void *b) {
    const nms_cand *p = a, *q = b;
    if (p->score != q->score) return p->score < q->score ? 1 : -1;
    return (p->box > q->box) - (p->box < q->box);
}

/* One NonMaxSuppression: its inputs, thresholds and scratch. */
typedef struct {
    const cg_tensor *boxes, *scores;
    float iou, score;
    int use_score, center;
    int64_t max_out;
    nms_cand *cand;
    int64_t *keep, *sel, n_sel; /* sel: the selected triples so far */
} nms_ctx;

/* The selected boxes of batch b and class c appended to x->sel. */
static void nms_class(nms_ctx *x, int64_t b, int64_t c) {
    const int64_t nb = x->boxes->dims[1], nc = x->scores->dims[1];
    int64_t m = 0, k = 0;
    for (int64_t i = 0; i < nb; i++) {
        const float sc = (float)cg_onnx_float_at(x->scores, (b * nc + c) * nb + i);
        if (!x->use_score || sc > x->score) x->cand[m].score = sc, x->cand[m++].box = i;
    }
    qsort(x->cand, (size_t)m, sizeof *x->cand, nms_order);
    for (int64_t i = 0; i < m && k < x->max_out; i++) {
        const nms_box bi = nms_read(x->boxes, (b * nb + x->cand[i].box) * 4, x->center);
        int ok = 1;
        for (int64_t j = 0; j < k && ok; j++)
            ok = !nms_suppress(bi, nms_read(x->boxes, (b * nb + x->keep[j]) * 4, x->center), x->iou);
        if (!ok) continue;
        x->keep[k++] = x->cand[i].box;
        int64_t *t = x->sel + 3 * x->n_sel++;
        t[0] = b, t[1] = c, t[2] = x->cand[i].box;
    }
}

/* A scalar input's value (absent or empty: def). */
static cg_status nms_scalar(onnx_imp *im, int i, const char *what, double def, double *v, int *given) {
    const cg_tensor *t;
    *v = def, *given = 0;
    if (!onnx_in(im, i)) return CG_OK;
    cg_status s = need_value(im, i, what, &t);
    if (s || !cg_shape_numel(t->ndim, t->dims)) return s;
    *v = cg_onnx_float_at(t, 0), *given = 1;
    return CG_OK;
}

/* NonMaxSuppression: per batch and class, boxes by descending score
 * (above score_threshold), each kept unless its IoU with a kept one
 * exceeds iou_threshold, at most max_output_boxes_per_class of them;
 * [selected, 3] (batch, class, box) int64. */
cg_status cg_onnx_map_nms(onnx_imp *im) {
    static const char *const known[] = {"center_point_box", NULL};
    const cg_tensor *boxes, *scores;
    double mo, iou, st;
    int gm, gi, gs; /* given */
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_value(im, 0, "boxes", &boxes)) ||
        (s = need_value(im, 1, "scores", &scores)) ||
        (s = nms_scalar(im, 2, "max_output_boxes_per_class", 0, &mo, &gm)) ||
        (s = nms_scalar(im, 3, "iou_threshold", 0, &iou, &gi)) ||
        (s = nms_scalar(im, 4, "score_threshold", 0, &st, &gs)))
        return s;
    if (boxes->ndim != 3 || boxes->dims[2] != 4 || scores->ndim != 3 || scores->dims[0] != boxes->dims[0] ||
        scores->dims[2] != boxes->dims[1])
        return onnx_fail(im, CG_ERR_FORMAT, "boxes must be [B, N, 4] and scores [B, C, N]");
    const int64_t nb = boxes->dims[1], tot = boxes->dims[0] * scores->dims[1] * nb;
    nms_ctx x = {boxes,
                 scores,
                 (float)iou,
                 (float)st,
                 gs,
                 onnx_attr_int(im, "center_point_box", 0) != 0,
                 mo > 0 ? (int64_t)mo : 0,
                 malloc((size_t)(nb ? nb : 1) * sizeof(nms_cand)),
                 malloc((size_t)(nb ? nb : 1) * 8),
                 malloc((size_t)(tot ? tot : 1) * 24),
                 0};
    if (!x.cand || !x.keep || !x.sel) s = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int64_t b = 0; !s && b < boxes->dims[0]; b++)
        for (int64_t c = 0; c < scores->dims[1]; c++) nms_class(&x, b, c);
    const int64_t n = x.n_sel;
    int64_t dims[2] = {n, 3};
    cg_tensor *o = s ? NULL : new_tensor(CG_I64, 2, dims);
    if (!s && !o) s = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if (!s && n) memcpy(o->data, x.sel, (size_t)n * 24);
    free(x.cand), free(x.keep), free(x.sel);
    return s ? s : onnx_set_const(im, 0, o);
}
