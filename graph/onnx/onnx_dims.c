/* Derived dims (graph/ir's `dim NAME = a OP b`) as the importer makes
 * them: one symbol per expression however an exporter wrote it (constants
 * second, identities and sums taken apart), products of dims, and the dims
 * op inference leaves unknown (concat along a symbolic axis, reshape's -1,
 * a slice of a symbolic dim) named, so a later Shape of them stays exact. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "shape.h"

int onnx_named_dims(const onnx_imp *im, int ndim, const int64_t *dims, char *buf, size_t size) {
    size_t u = (size_t)snprintf(buf, size, "[");
    int unknown = 0;
    for (int i = 0; i < ndim && u < size; i++) {
        const int64_t d = dims[i];
        u += (size_t)snprintf(buf + u, size - u, "%s", i ? ", " : "");
        if (d == CG_DIM_UNKNOWN && unknown++) return 0;
        if (d <= -2 && -2 - d < im->m->n_syms) {
            const char *nm = im->m->syms[-2 - d];
            /* a name that is no identifier is written quoted, as the text format does */
            u += (size_t)snprintf(buf + u, size - u, cg_ident_valid(nm) ? "%s" : "`%s`", nm);
        } else {
            u += (size_t)snprintf(buf + u, size - u, "%lld", (long long)(d < -1 ? -1 : d));
        }
    }
    if (u < size) u += (size_t)snprintf(buf + u, size - u, "]");
    return u < size;
}
/* The product of n sizes or codes: a size, or a derived dim (the sizes
 * multiplied first, then the symbols in order: B*S*64). */
int64_t onnx_sym_product(onnx_imp *im, int n, const int64_t *x) {
    int64_t p = 1, acc = 1;
    for (int i = 0; i < n; i++)
        if (!onnx_is_sym(x[i])) {
            if (x[i] && p > INT64_MAX / x[i]) return ONNX_SYM_UNKNOWN;
            p *= x[i];
        }
    if (p == 0) return 0;
    for (int i = 0; i < n; i++)
        if (onnx_is_sym(x[i])) acc = acc == 1 ? x[i] : onnx_sym_derive(im, CG_SYM_MUL, acc, x[i]);
    return onnx_sym_derive(im, CG_SYM_MUL, acc, p);
}
/* The definition of a derived dim's code (0 for a size or a free one). */
static int def_of(const onnx_imp *im, int64_t code, int64_t *a, int64_t *b) {
    if (!onnx_is_sym(code)) return 0;
    const int k = (int)(ONNX_SYM_UNKNOWN - 1 - code);
    if (!cg_model_sym_derived(im->m, k)) return 0;
    *a = onnx_dim_to_sym(im->m->sym_defs[k].a);
    *b = onnx_dim_to_sym(im->m->sym_defs[k].b);
    return im->m->sym_defs[k].op;
}

/* Sums taken apart again, as exporters write them around a past length:
 * max(P, P + S) = P + S, min(P, P + S) = P, (P + S) - P = S; else
 * ONNX_SYM_UNKNOWN. */
static int64_t sym_simplify(const onnx_imp *im, int op, int64_t a, int64_t b) {
    int64_t x, y;
    if (op == CG_SYM_MAX || op == CG_SYM_MIN)
        for (int swap = 0; swap < 2; swap++) {
            const int64_t p = swap ? b : a, q = swap ? a : b;
            const int dq = def_of(im, q, &x, &y);
            if (dq == CG_SYM_ADD && (x == p || y == p)) return op == CG_SYM_MAX ? q : p;
            /* max(p, min(p, x)) = p, min(p, max(p, x)) = p */
            if (dq == (op == CG_SYM_MAX ? CG_SYM_MIN : CG_SYM_MAX) && (x == p || y == p)) return p;
        }
    if (op == CG_SYM_SUB && def_of(im, a, &x, &y) == CG_SYM_ADD) {
        if (x == b) return y;
        if (y == b) return x;
    }
    return ONNX_SYM_UNKNOWN;
}

/* The derived dim op(a, b) of two codes or sizes >= 0, as a code: the
 * identities that keep an operand taken first (x + 0, x * 1, x - x), and
 * a constant kept second in commutative ops, so one expression has one
 * symbol however an exporter wrote it. ONNX_SYM_UNKNOWN when an operand is
 * unknown. */
int64_t onnx_sym_derive(onnx_imp *im, int op, int64_t a, int64_t b) {
    if (a == ONNX_SYM_UNKNOWN || b == ONNX_SYM_UNKNOWN) return ONNX_SYM_UNKNOWN;
    const int commutes = op == CG_SYM_ADD || op == CG_SYM_MUL || op == CG_SYM_MIN || op == CG_SYM_MAX;
    if (commutes && (!onnx_is_sym(a) || (onnx_is_sym(b) && b > a))) {
        const int64_t t = a;
        a = b, b = t;
    }
    switch (op) {
    case CG_SYM_ADD:
    case CG_SYM_SUB:
        if (b == 0) return a;
        if (op == CG_SYM_SUB && a == b) return 0;
        break;
    case CG_SYM_MUL:
        if (b == 1) return a;
        if (b == 0) return 0;
        break;
    case CG_SYM_DIV:
    case CG_SYM_CEIL_DIV:
        if (b == 1) return a;
        break;
    case CG_SYM_MIN:
    case CG_SYM_MAX:
        if (a == b) return a;
        if (b == 0) return op == CG_SYM_MAX ? a : 0;
        break;
    }
    const int64_t r = sym_simplify(im, op, a, b);
    if (r != ONNX_SYM_UNKNOWN) return r;
    if (!onnx_is_sym(a) && !onnx_is_sym(b)) { /* both sizes: computed here, as a plan would */
        switch (op) {
        case CG_SYM_ADD: return a + b;
        case CG_SYM_SUB: return a >= b ? a - b : ONNX_SYM_UNKNOWN;
        case CG_SYM_MUL: return a * b;
        case CG_SYM_DIV: return b ? a / b : ONNX_SYM_UNKNOWN;
        case CG_SYM_MOD: return b ? a % b : ONNX_SYM_UNKNOWN;
        case CG_SYM_CEIL_DIV: return b ? a / b + (a % b != 0) : ONNX_SYM_UNKNOWN;
        case CG_SYM_MIN: return a < b ? a : b;
        case CG_SYM_MAX: return a > b ? a : b;
        }
    }
    int k;
    if (cg_model_sym_define(im->m, op, onnx_sym_to_dim(a), onnx_sym_to_dim(b), &k)) {
        im->sym_failed = 1; /* out of memory: the node fails as such (import_node) */
        return ONNX_SYM_UNKNOWN;
    }
    return ONNX_SYM(k);
}
/* ---- dims op inference leaves unknown, named where the arithmetic is
 * exact (so a later Shape of the value stays exact) ---- */

typedef struct factors {
    int64_t c; /* the sizes multiplied */
    int n;     /* and these codes: free or not a product */
    int64_t atom[4 * CG_MAX_DIMS];
} factors;

/* A product taken apart into sizes and codes; 0 when too many. */
static int factor(const onnx_imp *im, int64_t code, factors *f) {
    int64_t a, b;
    if (!onnx_is_sym(code)) {
        f->c *= code;
        return 1;
    }
    if (def_of(im, code, &a, &b) == CG_SYM_MUL) return factor(im, a, f) && factor(im, b, f);
    if (f->n == (int)(sizeof f->atom / sizeof f->atom[0])) return 0;
    f->atom[f->n++] = code;
    return 1;
}

static const cg_attr *node_attr(const cg_node *nd, const char *key) {
    for (int i = 0; i < nd->n_attrs; i++)
        if (!strcmp(nd->attrs[i].key, key)) return &nd->attrs[i];
    return NULL;
}

/* reshape's one inferred dim: numel(x) over the other dims, with common
 * factors cancelled ([B, S, 64] to [B, -1] is S*64), else their quotient. */
static int64_t reshape_rest(onnx_imp *im, const cg_tensor_desc *x, const cg_tensor_desc *o, int at) {
    factors num = {1, 0, {0}}, den = {1, 0, {0}};
    for (int i = 0; i < x->ndim; i++)
        if (x->dims[i] == CG_DIM_UNKNOWN || !factor(im, onnx_dim_to_sym(x->dims[i]), &num)) return ONNX_SYM_UNKNOWN;
    for (int i = 0; i < o->ndim; i++)
        if (i != at && (o->dims[i] == CG_DIM_UNKNOWN || !factor(im, onnx_dim_to_sym(o->dims[i]), &den)))
            return ONNX_SYM_UNKNOWN;
    int cancel = den.c && num.c % den.c == 0;
    for (int k = 0; k < den.n && cancel; k++) {
        int j = 0;
        while (j < num.n && num.atom[j] != den.atom[k]) j++;
        if (j == num.n) cancel = 0;
        else num.atom[j] = num.atom[--num.n];
    }
    if (cancel) {
        num.atom[num.n] = num.c / den.c;
        return onnx_sym_product(im, num.n + 1, num.atom);
    }
    factors all = {1, 0, {0}};
    for (int i = 0; i < x->ndim; i++) factor(im, onnx_dim_to_sym(x->dims[i]), &all);
    all.atom[all.n] = all.c;
    const int64_t n = onnx_sym_product(im, all.n + 1, all.atom);
    int64_t d[CG_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < o->ndim; i++)
        if (i != at) d[nd++] = onnx_dim_to_sym(o->dims[i]);
    return onnx_sym_derive(im, CG_SYM_DIV, n, onnx_sym_product(im, nd, d));
}

/* One end of a step-1 slice over a symbolic dim n, clamped as Python's. */
int64_t onnx_sym_clamp(onnx_imp *im, int64_t n, int64_t v) {
    if (v == ONNX_SYM_UNKNOWN) return ONNX_SYM_UNKNOWN;
    if (onnx_is_sym(v)) return onnx_sym_derive(im, CG_SYM_MIN, n, v); /* a dim: never negative */
    if (v >= INT64_MAX / 2) return n;
    if (v >= 0) return onnx_sym_derive(im, CG_SYM_MIN, n, v);
    if (v <= INT64_MIN / 2) return 0;
    return onnx_sym_derive(im, CG_SYM_SUB, n, onnx_sym_derive(im, CG_SYM_MIN, n, -v));
}

/* Attribute k of list a (the default where absent or short). */
static int64_t attr_at(const cg_attr *a, int k, int64_t def) { return a && k < a->n_ints ? a->ints[k] : def; }

/* The output size of a sliding window over a symbolic input size n (conv
 * and the pools, no ceil_mode): (n + pads - extent) / stride + 1, or
 * ceil(n / stride) for auto_pad "same_*", as ONNX and the op compute it. */
static int64_t window_out(onnx_imp *im, int64_t n, int64_t k, int64_t s, int64_t d, int64_t pads, const char *ap) {
    if (s < 1 || d < 1 || k < 1 || pads < 0) return ONNX_SYM_UNKNOWN;
    if (ap && (!strcmp(ap, "same_upper") || !strcmp(ap, "same_lower")))
        return onnx_sym_derive(im, CG_SYM_CEIL_DIV, n, s);
    if (ap && !strcmp(ap, "valid")) pads = 0;
    const int64_t extent = d * (k - 1) + 1;
    int64_t span = onnx_sym_derive(im, CG_SYM_ADD, n, pads);
    span = onnx_sym_derive(im, CG_SYM_SUB, span, extent);
    return onnx_sym_derive(im, CG_SYM_ADD, onnx_sym_derive(im, CG_SYM_DIV, span, s), 1);
}

/* conv, max_pool, avg_pool, lp_pool over symbolic spatial dims. */
static void refine_window(onnx_imp *im, const cg_node *nd, const cg_tensor_desc *in, cg_tensor_desc *out) {
    const int conv = !strcmp(nd->op, "conv");
    const cg_attr *kern = node_attr(nd, "kernel"), *cm = node_attr(nd, "ceil_mode"), *ap = node_attr(nd, "auto_pad");
    const int nsp = in[0].ndim - 2;
    if (nsp < 1 || out->ndim != in[0].ndim || (conv && (nd->n_inputs < 2 || in[1].ndim != in[0].ndim)) ||
        (!conv && !kern) || (cm && cm->i))
        return;
    const cg_attr *st = node_attr(nd, "strides"), *dl = node_attr(nd, "dilations"), *pd = node_attr(nd, "pads");
    for (int i = 0; i < nsp; i++) {
        const int64_t n = in[0].dims[2 + i], k = conv ? in[1].dims[2 + i] : attr_at(kern, i, -1);
        if (out->dims[2 + i] != CG_DIM_UNKNOWN || n >= 0 || n == CG_DIM_UNKNOWN || k < 1) continue;
        const int64_t pads = attr_at(pd, i, 0) + attr_at(pd, nsp + i, 0);
        out->dims[2 + i] = onnx_sym_to_dim(window_out(im, onnx_dim_to_sym(n), k, attr_at(st, i, 1), attr_at(dl, i, 1),
                                                      pads, ap && ap->s ? ap->s : NULL));
    }
}

/* pad over a symbolic dim: n + begin + end (a negative pad crops). */
static void refine_pad(onnx_imp *im, const cg_node *nd, const cg_tensor_desc *in, cg_tensor_desc *out) {
    const cg_attr *pd = node_attr(nd, "pads");
    const int r = in[0].ndim;
    if (!pd || pd->n_ints != 2 * r || out->ndim != r) return;
    for (int i = 0; i < r; i++) {
        const int64_t n = in[0].dims[i], p = pd->ints[i] + pd->ints[r + i];
        if (out->dims[i] != CG_DIM_UNKNOWN || n >= 0 || n == CG_DIM_UNKNOWN) continue;
        const int64_t c = onnx_dim_to_sym(n);
        out->dims[i] =
            onnx_sym_to_dim(p >= 0 ? onnx_sym_derive(im, CG_SYM_ADD, c, p) : onnx_sym_derive(im, CG_SYM_SUB, c, -p));
    }
}

void onnx_sym_refine(onnx_imp *im, const cg_node *nd, const cg_tensor_desc *in, cg_tensor_desc *out) {
    if (!strcmp(nd->op, "pad") && nd->n_inputs >= 1) {
        refine_pad(im, nd, in, out);
        return;
    }
    if (!strcmp(nd->op, "conv") || !strcmp(nd->op, "max_pool") || !strcmp(nd->op, "avg_pool") ||
        !strcmp(nd->op, "lp_pool")) {
        refine_window(im, nd, in, out);
        return;
    }
    const cg_attr *ax = node_attr(nd, "axis");
    if (!strcmp(nd->op, "concat") && ax && ax->type == CG_ATTR_INT && nd->n_inputs > 0) {
        const int a = (int)(ax->i < 0 ? ax->i + out->ndim : ax->i);
        if (a < 0 || a >= out->ndim || out->dims[a] != CG_DIM_UNKNOWN) return;
        int64_t sum = 0;
        for (int i = 0; i < nd->n_inputs && sum != ONNX_SYM_UNKNOWN; i++)
            sum = in[i].ndim != out->ndim || in[i].dims[a] == CG_DIM_UNKNOWN
                      ? ONNX_SYM_UNKNOWN
                      : onnx_sym_derive(im, CG_SYM_ADD, sum, onnx_dim_to_sym(in[i].dims[a]));
        out->dims[a] = onnx_sym_to_dim(sum);
    } else if (!strcmp(nd->op, "reshape") && nd->n_inputs == 1) {
        int at = -1, n = 0;
        for (int i = 0; i < out->ndim; i++)
            if (out->dims[i] == CG_DIM_UNKNOWN) at = i, n++;
        if (n == 1) out->dims[at] = onnx_sym_to_dim(reshape_rest(im, &in[0], out, at));
    } else if (!strcmp(nd->op, "slice") && ax && nd->n_inputs == 1) {
        const cg_attr *st = node_attr(nd, "start"), *en = node_attr(nd, "end");
        const int a = (int)(ax->i < 0 ? ax->i + out->ndim : ax->i);
        if (a < 0 || a >= out->ndim || out->dims[a] != CG_DIM_UNKNOWN || in[0].dims[a] == CG_DIM_UNKNOWN) return;
        const int64_t n = onnx_dim_to_sym(in[0].dims[a]);
        const int64_t s = onnx_sym_clamp(im, n, st ? st->i : 0), e = onnx_sym_clamp(im, n, en ? en->i : INT64_MAX);
        out->dims[a] = onnx_sym_to_dim(onnx_sym_derive(im, CG_SYM_SUB, onnx_sym_derive(im, CG_SYM_MAX, e, s), s));
    }
}
