/* ONNX Einsum of one or two operands onto clgraph ops: a label repeated in
 * one operand takes the diagonal (where with an identity mask, then a sum),
 * a label in one operand only and not in the output is summed away, and
 * two operands become one batched matmul: A as [batch..., M, K], B as
 * [batch..., K, N] (transposes and reshapes around it), the batch labels
 * broadcasting as matmul's batch dims do. The output is then reshaped and
 * transposed into the order the equation gives. */
#include "onnx_imp.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Labels: letters 0..51, the ellipsis' dims 52.. (right-aligned). */
#define N_LETTERS 52
#define N_LABELS (N_LETTERS + CG_MAX_DIMS)

typedef struct term {
    const char *name; /* the clgraph value */
    int n;            /* rank */
    int lab[CG_MAX_DIMS];
} term;

static int letter(char c) {
    return islower((unsigned char)c) ? c - 'a' : isupper((unsigned char)c) ? 26 + c - 'A' : -1;
}

/* One side of the equation, [p, end), of a tensor of rank `rank` (-1: the
 * output, whose ellipsis has `ell` dims) into t; the ellipsis' dim count
 * in *n_ell. 0 on a malformed term. */
static int parse_term(const char *p, const char *end, int rank, int ell, term *t, int *n_ell) {
    int letters = 0, dots = 0;
    for (const char *q = p; q < end; q++) {
        if (*q == '.') dots++;
        else if (letter(*q) >= 0) letters++;
        else if (*q != ' ') return 0;
    }
    if (dots != 0 && dots != 3) return 0;
    const int e = !dots ? 0 : rank >= 0 ? rank - letters : ell;
    if (e < 0 || (rank >= 0 && !dots && letters != rank) || letters + e > CG_MAX_DIMS) return 0;
    *n_ell = e;
    t->n = 0;
    for (const char *q = p; q < end; q++) {
        if (*q == ' ') continue;
        if (*q == '.') {
            if (q[1] != '.' || q[2] != '.') return 0;
            for (int j = 0; j < e; j++) t->lab[t->n++] = N_LETTERS + CG_MAX_DIMS - e + j;
            q += 2;
        } else {
            t->lab[t->n++] = letter(*q);
        }
    }
    return 1;
}

static int find(const term *t, int lab) {
    for (int i = 0; i < t->n; i++)
        if (t->lab[i] == lab) return i;
    return -1;
}

static const char *list(char *buf, size_t size, int n, const int64_t *v) {
    size_t u = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < n && u < size; i++)
        u += (size_t)snprintf(buf + u, size - u, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (u < size) snprintf(buf + u, size - u, "]");
    return buf;
}

static cg_status emit(onnx_imp *im, const char *op, int n_in, const char *a, const char *b, const char *c,
                      const char *attrs, const char **out) {
    const char *ins[3] = {a, b, c};
    return onnx_emit(im, op, n_in, ins, 1, out, attrs);
}

/* t's dims in the order perm (a transpose unless it is the identity);
 * *out the final name, or NULL for a fresh one. */
static cg_status permute(onnx_imp *im, term *t, const int *perm, const char *out) {
    int64_t p[CG_MAX_DIMS];
    int same = 1, lab[CG_MAX_DIMS];
    for (int i = 0; i < t->n; i++) {
        p[i] = perm[i];
        lab[i] = t->lab[perm[i]];
        same &= perm[i] == i;
    }
    memcpy(t->lab, lab, sizeof lab);
    if (same && !out) return CG_OK;
    char a[300], l[256];
    snprintf(a, sizeof a, "perm: %s", list(l, sizeof l, t->n, p));
    const char *o = out;
    /* a 0-d result (a full contraction) is a reshape to itself */
    cg_status s = emit(im, t->n ? "transpose" : "reshape", 1, t->name, NULL, NULL, t->n ? a : "shape: []", &o);
    t->name = o;
    return s;
}

/* The diagonal of t over its dims i < j (the same label, concrete equal
 * sizes): the elements where both indices agree, dim j dropped. */
static cg_status diagonal(onnx_imp *im, term *t, int i, int j) {
    onnx_val *v = onnx_val_get(im, t->name);
    if (!v) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    const int64_t n = v->desc.dims[i];
    if (n <= 0 || n != v->desc.dims[j] || n > 65536)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "Einsum: a repeated label over dims %d and %d of '%s' needs equal "
                         "known sizes (1 to 65536)",
                         i, j, t->name);
    int64_t d[CG_MAX_DIMS];
    for (int k = i; k < t->n; k++) d[k - i] = k == i || k == j ? n : 1;
    cg_tensor *eye, *zt;
    cg_status s = cg_tensor_create(CG_BOOL, t->n - i, d, &eye);
    if (s) return s;
    unsigned char *e = cg_tensor_data(eye);
    const int64_t inner = cg_tensor_numel(eye) / (n * n); /* the ones after j */
    for (int64_t k = 0; k < n * n * inner; k++) e[k] = (k / inner) / n == (k / inner) % n;
    const char *en, *zn, *w = NULL, *r = NULL;
    if ((s = onnx_const_param(im, eye, &en))) return s;
    if ((s = cg_tensor_create((cg_dtype)v->desc.dtype, 0, NULL, &zt))) return s;
    memset(cg_tensor_data(zt), 0, cg_dtype_size((cg_dtype)v->desc.dtype));
    if ((s = onnx_const_param(im, zt, &zn))) return s;
    char a[100];
    snprintf(a, sizeof a, "axes: [%d], keepdims: 0", j);
    if ((s = emit(im, "where", 3, en, t->name, zn, NULL, &w)) || (s = emit(im, "reduce_sum", 1, w, NULL, NULL, a, &r)))
        return s;
    t->name = r;
    for (int k = j; k + 1 < t->n; k++) t->lab[k] = t->lab[k + 1];
    t->n--;
    return CG_OK;
}

/* Sums t over its labels that are neither in `other` (may be NULL) nor in
 * the output; takes its diagonals first. */
static cg_status reduce_own(onnx_imp *im, term *t, const term *other, const term *out) {
    cg_status s;
    for (int i = 0; i < t->n; i++)
        for (int j = i + 1; j < t->n; j++)
            if (t->lab[i] == t->lab[j]) {
                if ((s = diagonal(im, t, i, j))) return s;
                j = i; /* look again from i */
            }
    int64_t axes[CG_MAX_DIMS];
    int na = 0, keep = 0;
    for (int i = 0; i < t->n; i++) {
        if ((other && find(other, t->lab[i]) >= 0) || find(out, t->lab[i]) >= 0) t->lab[keep++] = t->lab[i];
        else axes[na++] = i;
    }
    if (!na) return CG_OK;
    char a[300], l[256];
    snprintf(a, sizeof a, "axes: %s, keepdims: 0", list(l, sizeof l, na, axes));
    const char *r = NULL;
    if ((s = emit(im, "reduce_sum", 1, t->name, NULL, NULL, a, &r))) return s;
    t->name = r;
    t->n = keep;
    return CG_OK;
}

/* Reshapes t (dims now [nb batch..., then groups of g1 and g2 dims]) to
 * [batch..., prod(g1), prod(g2)]. */
static cg_status to_3d(onnx_imp *im, term *t, int nb, int g1, int g2) {
    onnx_val *v = onnx_val_get(im, t->name);
    if (!v) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if (g1 == 1 && g2 == 1) return CG_OK;
    int64_t d[CG_MAX_DIMS];
    memcpy(d, v->desc.dims, (size_t)nb * sizeof d[0]);
    for (int g = 0, k = nb; g < 2; g++) {
        const int cnt = g ? g2 : g1;
        int64_t p = 1;
        for (int i = 0; i < cnt; i++, k++) {
            const int64_t dk = v->desc.dims[k];
            if (cnt == 1) p = dk;
            else if (dk < 0) p = -1;
            else if (p >= 0 && dk && p > INT64_MAX / dk)
                return onnx_fail(im, CG_ERR_FORMAT, "Einsum: the dims of '%s' are too large", t->name);
            else if (p >= 0) p *= dk;
        }
        if (p == -1 && cnt != 1)
            return onnx_fail(im, CG_ERR_UNSUPPORTED, "Einsum: merging dims of '%s' of unknown size", t->name);
        d[nb + g] = p;
    }
    if (nb + 2 > CG_MAX_DIMS) return onnx_fail(im, CG_ERR_UNSUPPORTED, "Einsum: too many dims");
    const char *o = NULL;
    cg_status s = onnx_emit_reshape(im, v, nb + 2, d, &o);
    t->name = o;
    return s;
}

/* The dims of t's value, by label, into size[]. */
static cg_status sizes_of(onnx_imp *im, const term *t, int64_t *size) {
    onnx_val *v = onnx_val_get(im, t->name);
    if (!v) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < t->n; i++) size[t->lab[i]] = v->desc.dims[i];
    return CG_OK;
}

/* t into the output's order, as the value `name`. */
static cg_status finish(onnx_imp *im, term *t, const term *out, const char *name) {
    int perm[CG_MAX_DIMS];
    for (int i = 0; i < out->n; i++) perm[i] = find(t, out->lab[i]);
    return permute(im, t, perm, name);
}

/* Two operands: one batched matmul, then the output's dims in order. */
static cg_status contract(onnx_imp *im, term *a, term *b, const term *out, const char *name) {
    int batch[CG_MAX_DIMS], aonly[CG_MAX_DIMS], bonly[CG_MAX_DIMS], con[CG_MAX_DIMS], nb = 0, na = 0, nn = 0, nk = 0;
    for (int i = 0; i < out->n; i++) {
        int ia = find(a, out->lab[i]), ib = find(b, out->lab[i]);
        if (ia >= 0 && ib >= 0) batch[nb++] = out->lab[i];
        else if (ia >= 0) aonly[na++] = out->lab[i];
        else if (ib >= 0) bonly[nn++] = out->lab[i];
    }
    for (int i = 0; i < a->n; i++)
        if (find(out, a->lab[i]) < 0) con[nk++] = a->lab[i];
    int pa[CG_MAX_DIMS], pb[CG_MAX_DIMS], k = 0;
    for (int i = 0; i < nb; i++) pa[k++] = find(a, batch[i]);
    for (int i = 0; i < na; i++) pa[k++] = find(a, aonly[i]);
    for (int i = 0; i < nk; i++) pa[k++] = find(a, con[i]);
    k = 0;
    for (int i = 0; i < nb; i++) pb[k++] = find(b, batch[i]);
    for (int i = 0; i < nk; i++) pb[k++] = find(b, con[i]);
    for (int i = 0; i < nn; i++) pb[k++] = find(b, bonly[i]);
    int64_t size[N_LABELS];
    cg_status s;
    if ((s = sizes_of(im, a, size)) || (s = sizes_of(im, b, size)) || (s = permute(im, a, pa, NULL)) ||
        (s = permute(im, b, pb, NULL)) || (s = to_3d(im, a, nb, na, nk)) || (s = to_3d(im, b, nb, nk, nn)))
        return s;
    const char *mm = NULL;
    if ((s = emit(im, "matmul", 2, a->name, b->name, NULL, NULL, &mm))) return s;
    onnx_val *p = onnx_val_get(im, mm);
    if (!p) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    /* [batch..., M, N] back to [batch..., a's kept dims..., b's kept dims...] */
    term r = {.name = mm, .n = nb + na + nn};
    int64_t d[CG_MAX_DIMS];
    memcpy(d, p->desc.dims, (size_t)nb * sizeof d[0]);
    for (int i = 0; i < nb; i++) r.lab[i] = batch[i];
    for (int i = 0; i < na; i++) r.lab[nb + i] = aonly[i], d[nb + i] = size[aonly[i]];
    for (int i = 0; i < nn; i++) r.lab[nb + na + i] = bonly[i], d[nb + na + i] = size[bonly[i]];
    if (na != 1 || nn != 1) {
        const char *o = NULL;
        if ((s = onnx_emit_reshape(im, p, r.n, d, &o))) return s;
        r.name = o;
    }
    return finish(im, &r, out, name);
}

cg_status cg_onnx_map_einsum(onnx_imp *im) {
    static const char *const known[] = {"equation", NULL};
    cg_status s = onnx_check_attrs(im, known);
    if (s) return s;
    const Onnx__AttributeProto *eq = onnx_attr_typed(im, "equation", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (!eq || !eq->has_s) return onnx_fail(im, CG_ERR_FORMAT, "no 'equation' attribute");
    char e[512];
    if (eq->s.len >= sizeof e) return onnx_fail(im, CG_ERR_UNSUPPORTED, "Einsum equation too long");
    memcpy(e, eq->s.data, eq->s.len);
    e[eq->s.len] = 0;
    const int n_in = (int)im->node->n_input;
    if (n_in < 1 || n_in > 2)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "Einsum of %d operands (one or two are supported)", n_in);
    term t[2], out;
    int ell = 0, e_n;
    const char *arrow = strstr(e, "->"), *lhs_end = arrow ? arrow : e + strlen(e), *p = e;
    for (int i = 0; i < n_in; i++) {
        onnx_val *v = onnx_in(im, i);
        if (!v || !v->typed) return onnx_fail(im, CG_ERR_VERIFY, "input %d has no known type", i);
        const char *comma = memchr(p, ',', (size_t)(lhs_end - p)), *end = comma ? comma : lhs_end;
        if ((i == n_in - 1) != (comma == NULL) || !parse_term(p, end, v->desc.ndim, 0, &t[i], &e_n))
            return onnx_fail(im, CG_ERR_FORMAT, "Einsum equation '%s' does not fit its %d inputs (term %d)", e, n_in,
                             i);
        t[i].name = v->name;
        if (e_n > ell) ell = e_n;
        p = end + 1;
    }
    if (arrow) {
        if (!parse_term(arrow + 2, e + strlen(e), -1, ell, &out, &e_n))
            return onnx_fail(im, CG_ERR_FORMAT, "Einsum equation '%s': malformed output", e);
    } else { /* implicit: the ellipsis, then the labels used once, in order */
        out.n = 0;
        for (int j = 0; j < ell; j++) out.lab[out.n++] = N_LETTERS + CG_MAX_DIMS - ell + j;
        for (int l = 0; l < N_LETTERS; l++) {
            int uses = 0;
            for (int i = 0; i < n_in; i++)
                for (int j = 0; j < t[i].n; j++) uses += t[i].lab[j] == l;
            if (uses == 1 && out.n < CG_MAX_DIMS) out.lab[out.n++] = l;
        }
    }
    for (int i = 0; i < out.n; i++) {
        int seen = 0;
        for (int k = 0; k < n_in; k++) seen |= find(&t[k], out.lab[i]) >= 0;
        if (!seen || find(&out, out.lab[i]) != i)
            return onnx_fail(im, CG_ERR_FORMAT, "Einsum equation '%s': output label %d is not an input's, or repeats",
                             e, i);
    }
    const Onnx__NodeProto *nd = im->node;
    const char *name = nd->n_output && nd->output[0] && nd->output[0][0] ? nd->output[0] : NULL;
    if ((s = reduce_own(im, &t[0], n_in == 2 ? &t[1] : NULL, &out))) return s;
    if (n_in == 1) return finish(im, &t[0], &out, name);
    if ((s = reduce_own(im, &t[1], &t[0], &out))) return s;
    return contract(im, &t[0], &t[1], &out, name);
}
