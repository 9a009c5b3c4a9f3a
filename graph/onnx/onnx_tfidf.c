/* TfIdfVectorizer of integer input as the ONNX ops of a direct count
 * (onnx_sub.c): for each n-gram length n and skip distance d that the
 * attributes allow (unigrams once, at d = 1), the n-grams of every row
 * (a Gather of constant positions) are compared with the pool's n-grams
 * of that length (Equal, all n equal: ReduceMin), counted over the
 * positions (ReduceSum) and summed into their output columns (a product
 * with a constant 0/1 matrix); the counts, exact in f32, are then weighted
 * by the mode. Strings are not a clgraph type: pool_strings is refused. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <string.h>

/* The node's pool: its n-grams by length and their output columns. */
typedef struct {
    const int64_t *pool, *counts, *index;
    int n_pool, n_counts, n_index;
    int64_t min_n, max_n, skip, out;
    cg_dtype dt; /* X's */
} tf_pool;

/* Reduce `op` of x over one axis, keepdims 0, with the axes as the opset
 * wants them (an input from 13 for ReduceSum, from 18 for the others). */
static cg_status sub_reduce(onnx_imp *im, const char *op, const char *x, int64_t axis, const char **out) {
    onnx_sub_attr a[2] = {onnx_sub_int("keepdims", 0), onnx_sub_ints("axes", 1, &axis)};
    const int as_input = im->opset >= (strcmp(op, "ReduceSum") ? 18 : 13);
    const char *in[2] = {x, NULL};
    *out = NULL;
    if (!as_input) return onnx_sub_node(im, op, 1, in, 1, out, 2, a);
    cg_status s = onnx_new_const_data(im, CG_I64, 1, (const int64_t[]){1}, &axis, &in[1]);
    return s ? s : onnx_sub_node(im, op, 2, in, 1, out, 1, a);
}

/* The pool's n-grams of length n ([g, n] in X's dtype) and the matrix [g,
 * out] sending each to its column; g = 0 when there are none. */
static cg_status tf_grams(onnx_imp *im, const tf_pool *p, int64_t n, int64_t *g, const char **grams, const char **sel) {
    const int64_t first = p->counts[n - 1], end = n < p->n_counts ? p->counts[n] : p->n_pool;
    int64_t k0 = 0; /* grams before this length: their ids start the index */
    for (int64_t m = 1; m < n; m++) k0 += ((m < p->n_counts ? p->counts[m] : p->n_pool) - p->counts[m - 1]) / m;
    *g = end > first ? (end - first) / n : 0;
    if (!*g) return CG_OK;
    const int64_t gd[2] = {*g, n}, sd[2] = {*g, p->out};
    cg_tensor *gt, *st;
    cg_status s = cg_tensor_alloc(p->dt, 2, gd, &gt);
    if (s) return s;
    for (int64_t i = 0; i < *g * n; i++) cg_onnx_set_at(gt, i, (double)p->pool[first + i]);
    if ((s = onnx_new_const(im, gt, grams)) || (s = cg_tensor_create(CG_F32, 2, sd, &st))) return s;
    for (int64_t i = 0; i < *g; i++) {
        const int64_t col = k0 + i < p->n_index ? p->index[k0 + i] : -1;
        if (col < 0 || col >= p->out) {
            cg_tensor_free(st);
            return onnx_fail(im, CG_ERR_FORMAT, "ngram_indexes has no valid column for n-gram %lld",
                             (long long)(k0 + i));
        }
        ((float *)st->data)[i * p->out + col] = 1;
    }
    return onnx_new_const(im, st, sel);
}

/* The counts [B, out] of the pool's n-grams of length n at skip distance
 * d in x [B, C] into *out (NULL where none fit). */
static cg_status tf_pass(onnx_imp *im, const tf_pool *p, const char *x, int64_t c, int64_t n, int64_t d,
                         const char **out) {
    const int64_t starts = c - (n - 1) * d;
    const char *grams, *sel, *pos, *got = NULL, *eq = NULL, *f = NULL, *all = NULL, *sum = NULL;
    int64_t g;
    cg_status s;
    *out = NULL;
    if (starts <= 0 || (s = tf_grams(im, p, n, &g, &grams, &sel)) || !g) return starts <= 0 ? CG_OK : s;
    const int64_t pd[3] = {starts, 1, n};
    cg_tensor *pt;
    if ((s = cg_tensor_alloc(CG_I64, 3, pd, &pt))) return s;
    for (int64_t i = 0; i < starts; i++)
        for (int64_t j = 0; j < n; j++) ((int64_t *)pt->data)[i * n + j] = i + j * d;
    if ((s = onnx_new_const(im, pt, &pos))) return s;
    const char *gin[2] = {x, pos};
    onnx_sub_attr ax = onnx_sub_int("axis", 1), to = onnx_sub_int("to", 1);
    if ((s = onnx_sub_node(im, "Gather", 2, gin, 1, &got, 1, &ax)) || /* [B, starts, 1, n] */
        (s = onnx_sub2(im, "Equal", got, grams, &eq)) ||              /* [B, starts, g, n] */
        (s = onnx_sub_node(im, "Cast", 1, &eq, 1, &f, 1, &to)) || (s = sub_reduce(im, "ReduceMin", f, 3, &all)) ||
        (s = sub_reduce(im, "ReduceSum", all, 1, &sum))) /* [B, g] */
        return s;
    return onnx_sub2(im, "MatMul", sum, sel, out);
}

/* Reshape sub-node of x to dims d[0..n) into *out (NULL: fresh). */
static cg_status sub_reshape(onnx_imp *im, const char *x, int64_t n, const int64_t *d, const char **out) {
    const char *shp, *in[2];
    cg_status s = onnx_new_const_data(im, CG_I64, 1, &n, d, &shp);
    in[0] = x, in[1] = shp;
    return s ? s : onnx_sub_node(im, "Reshape", 2, in, 1, out, 0, NULL);
}

/* The weighting of counts by mode (TF, IDF, TFIDF) and weights into *out
 * (NULL: fresh). */
static cg_status tf_weigh(onnx_imp *im, const char *cnt, const tf_pool *p, const char **out) {
    char mode[8] = "TF";
    const Onnx__AttributeProto *m = onnx_attr_typed(im, "mode", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (m && m->has_s && m->s.len < sizeof mode) memcpy(mode, m->s.data, m->s.len), mode[m->s.len] = 0;
    const Onnx__AttributeProto *wa = onnx_attr_typed(im, "weights", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    const float *w = wa ? wa->floats : NULL;
    const int nw = wa ? (int)wa->n_floats : 0;
    const char *wt = NULL, *pos = NULL, *pf = NULL, *zero;
    const float z = 0;
    cg_status s;
    if (nw && nw != p->out) return onnx_fail(im, CG_ERR_FORMAT, "%d weights for %lld columns", nw, (long long)p->out);
    if (nw && (s = onnx_new_const_data(im, CG_F32, 1, &p->out, w, &wt))) return s;
    const char *in[2] = {cnt, wt};
    if (!strcmp(mode, "TF") || (!strcmp(mode, "TFIDF") && !wt))
        return onnx_sub_node(im, "Identity", 1, in, 1, out, 0, NULL);
    if (!strcmp(mode, "TFIDF")) return onnx_sub_node(im, "Mul", 2, in, 1, out, 0, NULL);
    if (strcmp(mode, "IDF")) return onnx_fail(im, CG_ERR_UNSUPPORTED, "mode '%s' is not TF, IDF or TFIDF", mode);
    onnx_sub_attr to = onnx_sub_int("to", 1);
    if ((s = onnx_new_const_data(im, CG_F32, 0, NULL, &z, &zero)) || (s = onnx_sub2(im, "Greater", cnt, zero, &pos)))
        return s;
    if (!wt) return onnx_sub_node(im, "Cast", 1, &pos, 1, out, 1, &to);
    in[0] = NULL;
    if ((s = onnx_sub_node(im, "Cast", 1, &pos, 1, &pf, 1, &to))) return s;
    in[0] = pf;
    return onnx_sub_node(im, "Mul", 2, in, 1, out, 0, NULL);
}

/* The attributes into p, checked. */
static cg_status tf_attrs(onnx_imp *im, onnx_val *x, tf_pool *p) {
    if (onnx_attr(im, "pool_strings"))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "pool_strings: strings are not a clgraph type");
    p->pool = onnx_attr_ints(im, "pool_int64s", &p->n_pool);
    p->counts = onnx_attr_ints(im, "ngram_counts", &p->n_counts);
    p->index = onnx_attr_ints(im, "ngram_indexes", &p->n_index);
    p->min_n = onnx_attr_int(im, "min_gram_length", 0);
    p->max_n = onnx_attr_int(im, "max_gram_length", 0);
    p->skip = onnx_attr_int(im, "max_skip_count", 0);
    p->dt = (cg_dtype)x->desc.dtype;
    if (!p->pool || !p->counts || !p->index || p->min_n < 1 || p->max_n < p->min_n || p->max_n > p->n_counts ||
        p->skip < 0 || p->skip > 64 || p->max_n > 64)
        return onnx_fail(im, CG_ERR_FORMAT,
                         "pool_int64s, ngram_counts, ngram_indexes and 1 <= min_gram_length <= max_gram_length <= "
                         "len(ngram_counts) are required (max_skip_count and the lengths at most 64)");
    if (p->dt != CG_I32 && p->dt != CG_I64)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "X must be int32 or int64 (strings are not a clgraph type)");
    p->out = 0;
    for (int i = 0; i < p->n_index; i++) p->out = p->index[i] + 1 > p->out ? p->index[i] + 1 : p->out;
    for (int i = 0; i < p->n_counts; i++)
        if (p->counts[i] < 0 || p->counts[i] > p->n_pool || (i && p->counts[i] < p->counts[i - 1]))
            return onnx_fail(im, CG_ERR_FORMAT, "ngram_counts must rise within the pool");
    return CG_OK;
}

/* TfIdfVectorizer: X [C] or [B, C] of int32 / int64 into [out] or [B,
 * out] f32. */
cg_status cg_onnx_map_tfidf(onnx_imp *im) {
    static const char *const known[] = {
        "max_gram_length", "max_skip_count", "min_gram_length", "mode",    "ngram_counts",
        "ngram_indexes",   "pool_int64s",    "pool_strings",    "weights", NULL};
    onnx_val *x;
    tf_pool p;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = need_in(im, 0, &x)) || (s = tf_attrs(im, x, &p))) return s;
    const int two = x->desc.ndim == 2;
    const int64_t c = x->desc.dims[x->desc.ndim - 1], rows[2] = {1, c};
    if ((x->desc.ndim != 1 && !two) || c < 0)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "X '%s' must be [C] or [B, C] with a known C", x->name);
    const char *xs = x->name, *acc = NULL;
    if (!two && (xs = NULL, s = sub_reshape(im, x->name, 2, rows, &xs))) return s;
    for (int64_t d = 1; d <= p.skip + 1; d++)
        for (int64_t n = d == 1 ? p.min_n : (p.min_n > 2 ? p.min_n : 2); n <= p.max_n; n++) {
            const char *cnt, *sum = NULL;
            if ((s = tf_pass(im, &p, xs, c, n, d, &cnt))) return s;
            if (cnt && acc && (s = onnx_sub2(im, "Add", acc, cnt, &sum))) return s;
            if (cnt) acc = acc ? sum : cnt;
        }
    if (!acc) return onnx_fail(im, CG_ERR_UNSUPPORTED, "no n-gram of the pool fits a row of %lld", (long long)c);
    const char *y = two ? out_name(im, 0) : NULL, *out = out_name(im, 0);
    if ((s = tf_weigh(im, acc, &p, &y)) || two) return s;
    return sub_reshape(im, y, 1, &p.out, &out);
}
