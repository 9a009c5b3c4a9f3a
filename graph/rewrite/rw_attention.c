/* Rewrite "attention": scaled-dot-product attention as exporters write it,
 *
 *     y = MatMul(P, v),  P = Softmax(S, last axis)
 *         [or Where(IsNaN(P), 0, P): fully masked rows give 0]
 *     S = [Add(mask)] (MatMul(q [* c], kT [* c]) [* c | / c])
 *
 * with the head splits around it (q, v: Transpose(0, 2, 1, 3) of
 * [B, L, H, D]; kT: Transpose(0, 2, 3, 1) of [B, S, H, D], or a transposed
 * [B, H, S, D], also through the [B * H, S, D] detour the dynamo exporter
 * takes; the result Transpose(0, 2, 1, 3) back), becomes one sdpa node:
 * layout "bshd" when every head split is there (the transposes go too),
 * else "bhsd" on the 4-D values. The constant factors multiply into
 * sdpa's scale, also one on q before its head split (x * c -> Reshape). */
#include "rewrite.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

typedef struct site {
    const cg_node *fin;    /* the MatMul with v */
    int32_t q, k, v, mask; /* mask -1: none */
    int bshd, k_t;         /* k_t: k is [B, H, D, S], to transpose */
    double scale;
    int32_t result;     /* the value the sdpa output replaces */
    cg_node *q_reshape; /* the head split's Reshape, to read q_src: the */
    int32_t q_src;      /* Mul by a constant before it went into scale */
    int32_t packed;     /* the [B, L, 3 * H * D] q | k | v all three slice, or -1 */
    int64_t heads;
    const cg_node *lin[3]; /* q's, k's and v's linear of one x, to be one linear */
} site;

static const int64_t P0213[4] = {0, 2, 1, 3}, P0231[4] = {0, 2, 3, 1}, P0132[4] = {0, 1, 3, 2}, P021[3] = {0, 2, 1};

static const cg_value *val(const cg_graph *g, int32_t v) { return &g->values[v]; }

static int f32_rank(const cg_graph *g, int32_t v, int rank) {
    return v >= 0 && val(g, v)->typed && val(g, v)->dtype == CG_F32 && val(g, v)->ndim == rank;
}

/* Dims that may be equal: the same size or symbol, or one not known at
 * import (a Reshape's -1 of a symbolic size); sdpa checks the sizes of
 * each binding when it is planned, as the MatMuls would have. */
static int dims_eq(int64_t a, int64_t b) { return a == b || a == CG_DIM_UNKNOWN || b == CG_DIM_UNKNOWN; }

/* x, unless x is `x * c` or `x / c` (allow_div) read only here, c a
 * scalar constant: then its other operand, with c folded into *scale. */
static int32_t strip_scale(const cg_graph *g, const cg_rw_uses *u, int32_t x, int allow_div, double *scale) {
    const cg_node *n = cg_rw_producer(g, x);
    double c;
    if (u->readers[x] != 1 || !n || n->n_inputs != 2) return x;
    int is_mul = cg_rw_is(n, "mul"), is_div = allow_div && cg_rw_is(n, "div");
    if (is_mul && cg_rw_scalar(g, n->inputs[0], &c) && val(g, n->inputs[1])->kind == CG_VAL_NODE) {
        *scale *= c;
        return n->inputs[1];
    }
    if ((is_mul || is_div) && cg_rw_scalar(g, n->inputs[1], &c) && c != 0.0) {
        *scale = is_mul ? *scale * c : *scale / c;
        return n->inputs[0];
    }
    return x;
}

/* The softmax's probabilities P -> the softmax's output, through the
 * Where(Not(Equal(P, P)), 0, P) that maps NaN rows to 0; -1 if none. */
static int32_t probs(const cg_graph *g, const cg_rw_uses *u, int32_t p) {
    const cg_node *w = cg_rw_producer(g, p);
    double z;
    if (cg_rw_is(w, "where") && w->n_inputs == 3 && cg_rw_scalar(g, w->inputs[1], &z) && z == 0.0) {
        const cg_node *no = cg_rw_producer(g, w->inputs[0]), *eq;
        int32_t sm = w->inputs[2];
        if (u->readers[p] != 1 || !cg_rw_is(no, "logical_not") || u->readers[w->inputs[0]] != 1) return -1;
        eq = cg_rw_producer(g, no->inputs[0]);
        if (!cg_rw_is(eq, "equal") || u->readers[no->inputs[0]] != 1 || eq->inputs[0] != sm || eq->inputs[1] != sm ||
            u->readers[sm] != 3)
            return -1;
        return sm;
    }
    return u->readers[p] == 1 ? p : -1;
}

/* Whether mask m broadcasts to scores [B, H, L, S] (sc). */
static int mask_fits(const cg_graph *g, int32_t m, const int64_t *sc) {
    const cg_value *x = val(g, m);
    if (!x->typed || x->dtype != CG_F32 || x->ndim > 4) return 0;
    for (int d = 0; d < x->ndim; d++) {
        int64_t a = x->dims[x->ndim - 1 - d], b = sc[3 - d];
        if (a != 1 && !dims_eq(a, b)) return 0;
    }
    return 1;
}

/* S -> the scores' MatMul (scale and mask into s); NULL if S is no
 * scores. */
static const cg_node *scores(const cg_graph *g, const cg_rw_uses *u, int32_t S, site *s) {
    const cg_node *add = cg_rw_producer(g, S);
    if (cg_rw_is(add, "add") && add->n_inputs == 2 && u->readers[S] == 1)
        for (int side = 0; side < 2; side++) {
            int32_t x = strip_scale(g, u, add->inputs[side], 1, &s->scale);
            const cg_node *mm = cg_rw_producer(g, x);
            if (cg_rw_is(mm, "matmul") && u->readers[x] == 1) {
                s->mask = add->inputs[1 - side];
                return mm;
            }
            s->scale = 1.0;
        }
    if (u->readers[S] != 1) return NULL;
    int32_t x = strip_scale(g, u, S, 1, &s->scale);
    const cg_node *mm = cg_rw_producer(g, x);
    return cg_rw_is(mm, "matmul") && (x == S || u->readers[x] == 1) ? mm : NULL;
}

/* The input of a Transpose(perm) that makes x, or -1. */
static int32_t untranspose(const cg_graph *g, int32_t x, int rank, const int64_t *perm) {
    const cg_node *t = cg_rw_producer(g, x);
    return cg_rw_is(t, "transpose") && cg_rw_ints_are(t, "perm", rank, perm) ? t->inputs[0] : -1;
}

/* kT [B, H, D, S] -> K [B, H, S, D] when kT is K transposed, directly or
 * through Reshape([B*H, S, D]) -> Transpose(0, 2, 1) -> Reshape; else -1. */
static int32_t k_heads(const cg_graph *g, int32_t kt) {
    int32_t k = untranspose(g, kt, 4, P0132);
    if (k >= 0) return k;
    const cg_node *r2 = cg_rw_producer(g, kt);
    if (!cg_rw_is(r2, "reshape")) return -1;
    int32_t t3 = untranspose(g, r2->inputs[0], 3, P021);
    const cg_node *r1 = t3 >= 0 ? cg_rw_producer(g, t3) : NULL;
    if (!cg_rw_is(r1, "reshape") || !f32_rank(g, r1->inputs[0], 4)) return -1;
    k = r1->inputs[0];
    const int64_t *kd = val(g, k)->dims, *td = val(g, kt)->dims;
    return dims_eq(kd[0], td[0]) && dims_eq(kd[1], td[1]) && dims_eq(kd[2], td[3]) && dims_eq(kd[3], td[2]) ? k : -1;
}

/* The Transpose(0, 2, 1, 3) that takes y [B, H, L, Dv] back to
 * [B, L, H, Dv] (through a Reshape that keeps its shape), or NULL. */
static const cg_node *out_heads(const cg_graph *g, const cg_rw_uses *u, int32_t y) {
    const cg_node *r = cg_rw_sole_reader(g, u, y);
    if (cg_rw_is(r, "reshape")) {
        const cg_value *a = val(g, y), *b = val(g, r->outputs[0]);
        if (!b->typed || b->ndim != 4 || memcmp(a->dims, b->dims, sizeof(int64_t) * 4)) return NULL;
        r = cg_rw_sole_reader(g, u, r->outputs[0]);
    }
    return cg_rw_is(r, "transpose") && cg_rw_ints_are(r, "perm", 4, P0213) ? r : NULL;
}

/* The shapes agree: q [B, H, L, D], kT [B, H, D, S], v [B, H, S, Dv]. */
static int shapes_fit(const cg_graph *g, int32_t q, int32_t kt, int32_t v, int64_t *sc) {
    if (!f32_rank(g, q, 4) || !f32_rank(g, kt, 4) || !f32_rank(g, v, 4)) return 0;
    const int64_t *qd = val(g, q)->dims, *kd = val(g, kt)->dims, *vd = val(g, v)->dims;
    for (int d = 0; d < 2; d++)
        if (!dims_eq(qd[d], kd[d]) || !dims_eq(qd[d], vd[d])) return 0;
    if (!dims_eq(qd[3], kd[2]) || !dims_eq(kd[3], vd[2])) return 0;
    sc[0] = qd[0], sc[1] = qd[1], sc[2] = qd[2], sc[3] = kd[3];
    return 1;
}

/* Head layouts: "bshd" when q, k, v and the result all have their head
 * split transposes, else "bhsd" (k transposed by a new node if needed). */
static void choose_layout(const cg_graph *g, const cg_rw_uses *u, int32_t q, int32_t kt, int32_t v, site *s) {
    int32_t k4 = k_heads(g, kt), x = untranspose(g, q, 4, P0213), z = untranspose(g, v, 4, P0213);
    int32_t y = untranspose(g, kt, 4, P0231);
    if (y < 0 && k4 >= 0) y = untranspose(g, k4, 4, P0213);
    const cg_node *back = out_heads(g, u, s->fin->outputs[0]);
    if (x >= 0 && y >= 0 && z >= 0 && back) {
        s->bshd = 1, s->q = x, s->k = y, s->v = z, s->result = back->outputs[0];
        return;
    }
    s->q = q, s->v = v, s->result = s->fin->outputs[0];
    s->k = k4 >= 0 ? k4 : kt;
    s->k_t = k4 < 0;
}

/* bshd: q [B, L, H, D] = Reshape(x * c) read only by its head split, which
 * only the scores read (Marian, BART and Whisper scale q after its
 * projection): c goes into the scale too, and the Reshape reads x. */
static void strip_head_scale(const cg_graph *g, const cg_rw_uses *u, int32_t q_t, site *s) {
    cg_node *r = cg_rw_producer(g, s->q);
    if (!s->bshd || !cg_rw_is(r, "reshape") || r->n_inputs < 1 || u->readers[s->q] != 1 || u->readers[q_t] != 1) return;
    double c = 1.0;
    const int32_t x = strip_scale(g, u, r->inputs[0], 0, &c);
    if (x == r->inputs[0] || !cg_rw_same_shape(val(g, x), val(g, r->inputs[0]))) return;
    s->scale *= c;
    s->q_reshape = r, s->q_src = x;
}

/* x = Reshape(Slice(X, last axis, [part * E, (part + 1) * E))) as [B, L, H,
 * D] with E = H * D and X [B, L, 3 * E]: X, else -1. */
static int32_t packed_part(const cg_graph *g, int32_t x, int part) {
    const cg_node *r = cg_rw_producer(g, x);
    const cg_node *sl = cg_rw_is(r, "reshape") ? cg_rw_producer(g, r->inputs[0]) : NULL;
    if (!cg_rw_is(sl, "slice") || !f32_rank(g, x, 4) || !f32_rank(g, sl->inputs[0], 3)) return -1;
    const cg_value *v = val(g, x), *X = val(g, sl->inputs[0]);
    const int64_t E = v->dims[2] * v->dims[3];
    if (v->dims[2] < 1 || v->dims[3] < 1 || X->dims[2] != 3 * E || !dims_eq(X->dims[0], v->dims[0]) ||
        !dims_eq(X->dims[1], v->dims[1]))
        return -1;
    const cg_attr *axis = cg_rw_attr(sl, "axis"), *start = cg_rw_attr(sl, "start"), *end = cg_rw_attr(sl, "end");
    const int64_t a = axis ? axis->i : 0, b = start ? start->i : 0, e = end ? end->i : INT64_MAX;
    if ((a != -1 && a != 2) || b != part * E || (part < 2 ? e != b + E : e < 3 * E)) return -1;
    return sl->inputs[0];
}

/* An f32 parameter of exactly these dims. */
static int param_of(const cg_graph *g, int32_t v, int nd, const int64_t *dims) {
    const cg_value *x = val(g, v);
    return x->kind == CG_VAL_PARAM && x->typed && x->dtype == CG_F32 && x->ndim == nd &&
           !memcmp(x->dims, dims, sizeof *dims * (size_t)nd);
}

/* The linear whose [B, L, E] output the head split of `x` (a [B, L, H, D]
 * Reshape's output) reads, where it reads `pre` (q's, after its scale went
 * into sdpa's); NULL if none. */
static const cg_node *head_linear(const cg_graph *g, int32_t x, int32_t pre) {
    const cg_node *r = cg_rw_producer(g, x);
    if (!cg_rw_is(r, "reshape") || !f32_rank(g, x, 4)) return NULL;
    const cg_node *lin = cg_rw_producer(g, pre >= 0 ? pre : r->inputs[0]);
    return cg_rw_is(lin, "linear") && (lin->n_inputs == 2 || lin->n_inputs == 3) ? lin : NULL;
}

/* bshd q, k and v each a linear of one x with weights [E, IN] (and biases
 * [E]) given as parameters (BERT, Marian, BART, Whisper, T5): the weights
 * concatenated (once per plan: they read parameters only) make one linear
 * whose output sdpa reads packed. Some may lack a bias (Whisper's k_proj):
 * theirs is then zeros. */
static void find_linears(const cg_graph *g, site *s) {
    const cg_value *q = val(g, s->q);
    const int64_t E = q->dims[2] * q->dims[3];
    const cg_node *l[3] = {head_linear(g, s->q, s->q_reshape ? s->q_src : -1), head_linear(g, s->k, -1),
                           head_linear(g, s->v, -1)};
    if (!l[0] || !l[1] || !l[2] || q->dims[2] < 1 || q->dims[3] < 1) return;
    const cg_value *w = val(g, l[0]->inputs[1]);
    if (w->ndim != 2 || w->dims[0] != E) return;
    const int64_t bias[1] = {E};
    for (int i = 0; i < 3; i++)
        if (l[i]->inputs[0] != l[0]->inputs[0] || !param_of(g, l[i]->inputs[1], 2, w->dims) ||
            (l[i]->n_inputs == 3 && !param_of(g, l[i]->inputs[2], 1, bias)))
            return;
    memcpy(s->lin, l, sizeof l);
    s->heads = q->dims[2];
}

/* bshd q, k and v the three parts of one fused projection (GPT-2's c_attn
 * and Split): sdpa reads that tensor three times, packed, and the slices
 * and reshapes go; or three linears of one input that can become one. */
static void find_packed(const cg_graph *g, site *s) {
    s->packed = -1;
    if (!s->bshd) return;
    const cg_value *q = val(g, s->q), *k = val(g, s->k), *v = val(g, s->v);
    for (int d = 1; d < 4; d++)
        if (q->dims[d] != k->dims[d] || q->dims[d] != v->dims[d]) return; /* self-attention: S = L, one D */
    const int32_t x = s->q_reshape ? -1 : packed_part(g, s->q, 0);
    if (x >= 0 && packed_part(g, s->k, 1) == x && packed_part(g, s->v, 2) == x) {
        s->packed = x, s->heads = q->dims[2];
        return;
    }
    find_linears(g, s);
}

/* One linear for q, k and v: concat(wq, wk, wv) and, when any has a bias,
 * concat of the biases, axis 0; a missing bias is zeros made from a given
 * one (affine by 0: +0 exactly, as a linear without a bias adds nothing),
 * so the k columns of Whisper's projection are the dot products alone. */
static cg_status merge_linears(cg_graph *g, site *s) {
    const cg_node *const *l = s->lin;
    int32_t in[3], cat[2] = {-1, -1}, lin_in[3], given = -1, zeros = -1;
    for (int i = 0; i < 3; i++)
        if (l[i]->n_inputs == 3 && given < 0) given = l[i]->inputs[2];
    const int nb = given >= 0;
    cg_node *n;
    cg_status st = CG_OK;
    for (int i = 0; i < 3 && nb && !st && zeros < 0; i++)
        if (l[i]->n_inputs == 2) {
            st = cg_rw_add_node(g, "affine", s->fin->name, "/qkv_zeros", 1, &given, &n, &zeros);
            if (!st) st = cg_node_set_float(n, "alpha", 0.0);
            if (!st) st = cg_node_set_float(n, "beta", 0.0);
        }
    for (int p = 0; p < 1 + nb && !st; p++) {
        for (int i = 0; i < 3; i++) in[i] = !p ? l[i]->inputs[1] : l[i]->n_inputs == 3 ? l[i]->inputs[2] : zeros;
        st = cg_rw_add_node(g, "concat", s->fin->name, p ? "/qkv_b" : "/qkv_w", 3, in, &n, &cat[p]);
        if (!st) st = cg_node_set_int(n, "axis", 0);
    }
    lin_in[0] = l[0]->inputs[0], lin_in[1] = cat[0], lin_in[2] = cat[1];
    if (!st) st = cg_rw_add_node(g, "linear", s->fin->name, "/qkv", 2 + nb, lin_in, &n, &s->packed);
    return st;
}

static int match(const cg_graph *g, const cg_rw_uses *u, const cg_node *fin, site *s) {
    memset(s, 0, sizeof *s);
    s->fin = fin, s->mask = -1, s->scale = 1.0;
    if (!cg_rw_is(fin, "matmul") || fin->n_inputs != 2 || !f32_rank(g, fin->outputs[0], 4)) return 0;
    int32_t sm = probs(g, u, fin->inputs[0]);
    const cg_node *soft = sm >= 0 ? cg_rw_producer(g, sm) : NULL;
    const cg_attr *axis = soft ? cg_rw_attr(soft, "axis") : NULL;
    if (!cg_rw_is(soft, "softmax") || (axis && axis->i != 3 && axis->i != -1)) return 0;
    const cg_node *mm = scores(g, u, soft->inputs[0], s);
    if (!mm || mm->n_inputs != 2) return 0;
    int32_t q = strip_scale(g, u, mm->inputs[0], 0, &s->scale);
    int32_t kt = strip_scale(g, u, mm->inputs[1], 0, &s->scale);
    int64_t sc[4];
    if (!shapes_fit(g, q, kt, fin->inputs[1], sc) || (s->mask >= 0 && !mask_fits(g, s->mask, sc))) return 0;
    choose_layout(g, u, q, kt, fin->inputs[1], s);
    if (u->output[s->result]) return 0;
    strip_head_scale(g, u, q, s);
    find_packed(g, s);
    return 1;
}

static cg_status apply(cg_graph *g, site *s) {
    cg_node *n;
    int32_t k = s->k, out, in[4];
    cg_status st = CG_OK;
    if (s->k_t) {
        st = cg_rw_add_node(g, "transpose", s->fin->name, "/sdpa_k", 1, &s->k, &n, &k);
        if (!st) st = cg_node_set_ints(n, "perm", 4, P0132);
    }
    if (!st && s->q_reshape) {
        st = cg_node_set_input_name(s->q_reshape, 0, g->values[s->q_src].name);
        s->q_reshape->inputs[0] = s->q_src;
    }
    if (!st && s->lin[0]) st = merge_linears(g, s);
    in[0] = s->q, in[1] = k, in[2] = s->v, in[3] = s->mask;
    if (s->packed >= 0) in[0] = in[1] = in[2] = s->packed;
    if (!st) st = cg_rw_add_node(g, "sdpa", s->fin->name, "/sdpa", s->mask >= 0 ? 4 : 3, in, &n, &out);
    if (!st) st = cg_node_set_string(n, "layout", s->bshd ? "bshd" : "bhsd");
    if (!st && s->packed >= 0) st = cg_node_set_int(n, "packed", 1);
    if (!st && s->packed >= 0) st = cg_node_set_int(n, "heads", s->heads);
    if (!st) st = cg_node_set_float(n, "scale", s->scale);
    if (!st) st = cg_rw_redirect(g, s->result, out);
    return st;
}

static cg_status attention_run(cg_graph *g, int *fired) {
    if (!cg_registry_find(g->model->ctx, "sdpa")) return CG_OK;
    int n_nodes = g->n_nodes; /* the nodes a fusion adds are no candidates */
    cg_rw_uses u;
    cg_status st = cg_rw_uses_make(g, &u);
    for (int i = 0; !st && i < n_nodes; i++) {
        site s;
        if (!u.live[i] || !match(g, &u, g->nodes[i], &s)) continue;
        /* the fusion adds values and moves readers: count the uses again */
        cg_rw_uses_free(&u);
        st = apply(g, &s);
        if (!st) st = cg_rw_uses_make(g, &u);
        if (!st) ++*fired;
    }
    cg_rw_uses_free(&u);
    return st;
}

const cg_rewrite_pass cg_rewrite_attention = {
    "attention",
    "scaled-dot-product attention (MatMul, scale, mask Add, Softmax, MatMul, with the exporters' head-split "
    "transposes) into one sdpa node",
    attention_run,
};
