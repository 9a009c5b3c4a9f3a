/* sdpa: fused scaled-dot-product attention, y = softmax(q k^T * scale +
 * mask) v over the keys, with grouped-query heads, an optional additive
 * mask, an optional bottom-right causal cut and two head layouts. The
 * graph rewrite "attention" (graph/rewrite/rw_attention.c) makes it from
 * the exporters' MatMul / Softmax chains, so one launch replaces about
 * eight and the [B, H, L, S] scores never reach memory on OpenCL.
 *
 * CPU: threads over (batch, head, block of query rows); a block's scores
 * are one product on the CPU GEMM (q rows against k rows, scale as its
 * alpha), then per row the mask, the max, exp and the weighted sum of the
 * value rows on the vectorised helpers of cpu_math.h.
 * OpenCL (cl/sdpa.cl): one work-group per (batch, head, block of query
 * rows) walking tiles of keys and values in local memory with an online
 * softmax; a one-item-per-output kernel where local memory is too small. */
#include "ops_cl.h"

#include "cpu/cpu_blas.h"
#include "cpu/cpu_math.h"
#include "cpu/cpu_pool.h"
#include "cpu/cpu_scan.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sdpa.cl.h"

enum { SDPA_LAYOUT, SDPA_SCALE, SDPA_CAUSAL, SDPA_PACKED, SDPA_HEADS, SDPA_KV_ROWS };

static const cg_attr_def sdpa_attrs[] = {
    CG_ATTR(.name = "layout", .type = CG_ATTR_STRING, .default_string = "bhsd",
            .doc = "\"bhsd\": q [B, Hq, L, D], k [B, Hk, S, D], v [B, Hk, S, Dv]; \"bshd\": heads after the sequence "
                   "(q [B, L, Hq, D], ...), y in the same layout"),
    CG_ATTR(.name = "scale", .type = CG_ATTR_FLOAT, .default_float = 0.0,
            .doc = "factor of the scores q . k; 0: 1 / sqrt(D) (1 for D = 0)"),
    CG_ATTR(.name = "causal", .type = CG_ATTR_INT, .default_int = 0,
            .doc =
                "1: query i sees keys j <= i + S - L only (bottom-right aligned, as a decoder step with a KV cache)"),
    CG_ATTR(.name = "packed", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "1: q, k and v are each [B, L, 3 * heads * D], a fused projection's q | k | v side by side in the "
                   "last dim: q is read from input 0's first third, k from input 1's second, v from input 2's last "
                   "(one tensor given three times; layout bshd, S = L, Hk = Hq = heads, Dv = D)"),
    CG_ATTR(.name = "heads", .type = CG_ATTR_INT, .default_int = 0, .doc = "the heads of a packed q, k, v (>= 1)"),
    CG_ATTR(.name = "kv_rows", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "1: the last input is an i32 index [B]: q's batch row b reads batch row index[b] of k and v, which "
                   "have N rows of their own (a decoder's rows reading their sentence's cross-attention keys, a "
                   "beam's rows sharing them, with no copy per row); the mask stays per q row; an index outside "
                   "[0, N) is a run-time error"),
};

static const char *const sdpa_names[] = {"q", "k", "v", "mask", "kv_rows", NULL};

/* One call's sizes and element strides. Strides of q, k, v, y: batch,
 * head, row (a query or key position); the row's elements are contiguous.
 * Mask strides: batch, head, query, key (0 where it broadcasts). */
typedef struct sdpa_geom {
    int64_t B, Hq, Hk, L, S, D, Dv;
    int64_t N; /* k's and v's batch rows: B, or any with kv_rows */
    int kv_in; /* the input of kv_rows' index, or -1 */
    int bshd, causal, has_mask, packed;
    float scale;
    int64_t qs[3], ks[3], vs[3], ys[3], ms[4];
    int64_t off[3]; /* elements of q, k and v before their first (packed: their third of each row) */
} sdpa_geom;

/* Positions of the batch, head, sequence and feature dims in a layout. */
static void layout_axes(int bshd, int *h_ax, int *s_ax) {
    *h_ax = bshd ? 2 : 1;
    *s_ax = bshd ? 1 : 2;
}

/* 1 for "bshd", 0 for "bhsd", -1 otherwise. */
static int layout_of(const cg_op_call *call) {
    const char *s = call->attrs[SDPA_LAYOUT].s;
    return !strcmp(s, "bshd") ? 1 : !strcmp(s, "bhsd") ? 0 : -1;
}

/* q, k or v (input i): f32 of 4 dims. */
static cg_op_status expect_4d(const cg_op_call *call, int i, int bshd) {
    static const char *const want[2][3] = {{"[B, Hq, L, D]", "[B, Hk, S, D]", "[B, Hk, S, Dv]"},
                                           {"[B, L, Hq, D]", "[B, S, Hk, D]", "[B, S, Hk, Dv]"}};
    const cg_tensor_desc *d = &call->inputs[i];
    if (d->dtype == CG_OP_F32 && d->ndim == 4) return CG_OP_OK;
    char s[128];
    cg_ops_format_dims(s, sizeof s, d);
    return cg_op_fail(call, "input %d (%s) must be f32 %s (layout %s), got %s %s", i, sdpa_names[i], want[bshd][i],
                      bshd ? "bshd" : "bhsd", cg_ops_dtype_name(d->dtype), s);
}

/* The message of q, k and v whose sizes `what` do not line up. */
static cg_op_status shapes_fail(const cg_op_call *call, int bshd, const char *what) {
    char sq[128], sk[128], sv[128];
    cg_ops_format_dims(sq, sizeof sq, &call->inputs[0]);
    cg_ops_format_dims(sk, sizeof sk, &call->inputs[1]);
    cg_ops_format_dims(sv, sizeof sv, &call->inputs[2]);
    return cg_op_fail(call, "%s (layout %s): q %s, k %s, v %s", what, bshd ? "bshd" : "bhsd", sq, sk, sv);
}

/* q, k and v agree: batch, kv heads, key count, D; Hq a multiple of Hk. */
static cg_op_status check_qkv(const cg_op_call *call, int bshd) {
    const cg_tensor_desc *q = &call->inputs[0], *k = &call->inputs[1], *v = &call->inputs[2];
    int h, s;
    layout_axes(bshd, &h, &s);
    for (int i = 0; i < 3; i++)
        if (expect_4d(call, i, bshd)) return CG_OP_ERROR;
    if (!cg_dim_compatible(k->dims[0], v->dims[0])) return shapes_fail(call, bshd, "k and v must have one batch size");
    if (!call->attrs[SDPA_KV_ROWS].i &&
        (!cg_dim_compatible(q->dims[0], k->dims[0]) || !cg_dim_compatible(q->dims[0], v->dims[0])))
        return shapes_fail(call, bshd, "q, k and v must have one batch size B (kv_rows: 1 reads k and v by an index)");
    if (!cg_dim_compatible(k->dims[h], v->dims[h])) return shapes_fail(call, bshd, "k and v must have as many heads");
    if (!cg_dim_compatible(k->dims[s], v->dims[s])) return shapes_fail(call, bshd, "k and v must have as many keys S");
    if (!cg_dim_compatible(q->dims[3], k->dims[3])) return shapes_fail(call, bshd, "q and k must have one head size D");
    const int64_t hq = q->dims[h], hk = cg_dim_unify(k->dims[h], v->dims[h]);
    if (hk == 0 && hq != 0) return shapes_fail(call, bshd, "k and v have no heads");
    if (cg_dim_known(hq) && cg_dim_known(hk) && hk > 0 && hq % hk)
        return shapes_fail(call, bshd, "q's heads Hq must be a multiple of k's and v's heads Hk");
    return CG_OP_OK;
}

/* The mask: f32 of at most 4 dims broadcasting to [B, Hq, L, S]. */
static cg_op_status check_mask(const cg_op_call *call, const int64_t *scores) {
    const cg_tensor_desc *m = &call->inputs[3];
    int ok = m->dtype == CG_OP_F32 && m->ndim <= 4;
    for (int i = 0; ok && i < m->ndim; i++) {
        const int64_t d = m->dims[m->ndim - 1 - i];
        ok = d == 1 || cg_dim_compatible(d, scores[3 - i]);
    }
    if (ok) return CG_OP_OK;
    cg_tensor_desc sd = {CG_OP_F32, 4, {scores[0], scores[1], scores[2], scores[3]}};
    char sm[128], ss[128];
    cg_ops_format_dims(sm, sizeof sm, m);
    cg_ops_format_dims(ss, sizeof ss, &sd);
    return cg_op_fail(call,
                      "input 3 (mask) must be f32 broadcasting to the scores [B, Hq, L, S] = %s (numpy rules), got "
                      "%s %s",
                      ss, cg_ops_dtype_name(m->dtype), sm);
}

/* packed: q, k and v f32 [B, L, 3 * heads * D] of one shape, the last dim
 * known; y [B, L, heads, D]. */
static cg_op_status packed_infer(cg_op_call *call, int bshd) {
    const int64_t H = call->attrs[SDPA_HEADS].i;
    if (!bshd) return cg_op_fail(call, "packed q, k and v need layout \"bshd\"");
    if (H < 1) return cg_op_fail(call, "packed q, k and v need heads >= 1, got %lld", (long long)H);
    const cg_tensor_desc *x = &call->inputs[0];
    for (int i = 0; i < 3; i++) {
        const cg_tensor_desc *d = &call->inputs[i];
        int same = d->dtype == CG_OP_F32 && d->ndim == 3;
        for (int a = 0; same && a < 3; a++) same = cg_dim_compatible(d->dims[a], x->dims[a]);
        if (!same) return shapes_fail(call, 1, "packed q, k and v must be f32 [B, L, 3 * heads * D] of one shape");
    }
    const int64_t E3 = x->dims[2];
    if (!cg_dim_known(E3) || E3 % (3 * H))
        return shapes_fail(call, 1, "packed q, k and v need a known last dim, a multiple of 3 * heads");
    const int64_t B = cg_dim_unify(cg_dim_unify(x->dims[0], call->inputs[1].dims[0]), call->inputs[2].dims[0]);
    const int64_t L = cg_dim_unify(cg_dim_unify(x->dims[1], call->inputs[1].dims[1]), call->inputs[2].dims[1]);
    const int64_t scores[4] = {B, H, L, L};
    if (call->n_inputs > 3 && check_mask(call, scores)) return CG_OP_ERROR; /* not with kv_rows */
    cg_tensor_desc *y = &call->outputs[0];
    *y = (cg_tensor_desc){CG_OP_F32, 4, {B, L, H, E3 / (3 * H)}};
    return CG_OP_OK;
}

/* kv_rows' index (the last input): i32 [B] for q's B rows. */
static cg_op_status check_kv_rows(const cg_op_call *call) {
    const int at = call->n_inputs - 1;
    if (at < 3) return cg_op_fail(call, "kv_rows: 1 needs the index as the last input (q, k, v[, mask], index)");
    const cg_tensor_desc *x = &call->inputs[at];
    if (x->dtype == CG_OP_I32 && x->ndim == 1 && cg_dim_compatible(x->dims[0], call->inputs[0].dims[0]))
        return CG_OP_OK;
    char sx[128], sq[128];
    cg_ops_format_dims(sx, sizeof sx, x);
    cg_ops_format_dims(sq, sizeof sq, &call->inputs[0]);
    return cg_op_fail(call, "input %d (kv_rows' index) must be i32 [B], B = q's batch (q %s), got %s %s", at, sq,
                      cg_ops_dtype_name(x->dtype), sx);
}

static cg_op_status sdpa_infer(cg_op_call *call) {
    const int bshd = layout_of(call);
    if (bshd < 0) return cg_op_fail(call, "layout \"%s\" is not \"bhsd\" or \"bshd\"", call->attrs[SDPA_LAYOUT].s);
    const int64_t causal = call->attrs[SDPA_CAUSAL].i, packed = call->attrs[SDPA_PACKED].i;
    const int64_t kv = call->attrs[SDPA_KV_ROWS].i;
    if (causal != 0 && causal != 1) return cg_op_fail(call, "causal must be 0 or 1, got %lld", (long long)causal);
    if (packed != 0 && packed != 1) return cg_op_fail(call, "packed must be 0 or 1, got %lld", (long long)packed);
    if (kv != 0 && kv != 1) return cg_op_fail(call, "kv_rows must be 0 or 1, got %lld", (long long)kv);
    if (kv && packed) return cg_op_fail(call, "kv_rows and packed exclude each other (packed k and v are q's rows)");
    if (kv && check_kv_rows(call)) return CG_OP_ERROR;
    if (!isfinite(call->attrs[SDPA_SCALE].f))
        return cg_op_fail(call, "scale must be finite, got %g", call->attrs[SDPA_SCALE].f);
    if (packed) return packed_infer(call, bshd);
    if (check_qkv(call, bshd)) return CG_OP_ERROR;
    const cg_tensor_desc *q = &call->inputs[0], *k = &call->inputs[1], *v = &call->inputs[2];
    int h, s;
    layout_axes(bshd, &h, &s);
    const int64_t B = kv ? q->dims[0] : cg_dim_unify(cg_dim_unify(q->dims[0], k->dims[0]), v->dims[0]);
    const int64_t scores[4] = {B, q->dims[h], q->dims[s], cg_dim_unify(k->dims[s], v->dims[s])};
    if (call->n_inputs - kv > 3 && check_mask(call, scores)) return CG_OP_ERROR;
    cg_tensor_desc *y = &call->outputs[0];
    memset(y, 0, sizeof *y);
    y->dtype = CG_OP_F32;
    y->ndim = 4;
    y->dims[0] = B;
    y->dims[h] = q->dims[h];
    y->dims[s] = q->dims[s];
    y->dims[3] = v->dims[3];
    return CG_OP_OK;
}

/* Strides (batch, head, row) of a [B, H, N, X] or [B, N, H, X] tensor. */
static void heads_strides(int bshd, int64_t H, int64_t N, int64_t X, int64_t *st) {
    st[0] = H * N * X;
    st[1] = bshd ? X : N * X;
    st[2] = bshd ? H * X : X;
}

/* The mask's strides against [B, Hq, L, S], right-aligned. */
static void mask_strides(const cg_tensor_desc *m, int64_t *ms) {
    int64_t st = 1;
    for (int p = 3; p >= 0; p--) {
        const int k = m->ndim - 4 + p;
        const int64_t d = k >= 0 ? m->dims[k] : 1;
        ms[p] = d == 1 ? 0 : st;
        st *= d;
    }
}

/* The geometry of a call with concrete shapes (a plan's, a kernel's). */
static void sdpa_geom_of(const cg_op_call *call, sdpa_geom *g) {
    const cg_tensor_desc *q = &call->inputs[0], *k = &call->inputs[1], *v = &call->inputs[2];
    int h, s;
    memset(g, 0, sizeof *g);
    g->bshd = layout_of(call) == 1;
    layout_axes(g->bshd, &h, &s);
    g->packed = call->attrs[SDPA_PACKED].i == 1;
    g->B = q->dims[0];
    if (g->packed) { /* rows of 3 * E: q | k | v, each H heads of D */
        const int64_t H = call->attrs[SDPA_HEADS].i, E = q->dims[2] / 3;
        g->Hq = g->Hk = H, g->S = g->L = q->dims[1], g->D = g->Dv = E / H;
        const int64_t st[3] = {g->L * 3 * E, g->D, 3 * E};
        memcpy(g->qs, st, sizeof st), memcpy(g->ks, st, sizeof st), memcpy(g->vs, st, sizeof st);
        g->off[1] = E, g->off[2] = 2 * E;
    } else {
        g->Hq = q->dims[h], g->Hk = k->dims[h], g->L = q->dims[s], g->S = k->dims[s];
        g->D = q->dims[3], g->Dv = v->dims[3];
        heads_strides(g->bshd, g->Hq, g->L, g->D, g->qs);
        heads_strides(g->bshd, g->Hk, g->S, g->D, g->ks);
        heads_strides(g->bshd, g->Hk, g->S, g->Dv, g->vs);
    }
    heads_strides(g->bshd, g->Hq, g->L, g->Dv, g->ys);
    g->causal = call->attrs[SDPA_CAUSAL].i == 1;
    const double sc = call->attrs[SDPA_SCALE].f;
    g->scale = sc != 0.0 ? (float)sc : g->D > 0 ? (float)(1.0 / sqrt((double)g->D)) : 1.0f;
    g->kv_in = call->attrs[SDPA_KV_ROWS].i ? call->n_inputs - 1 : -1;
    g->N = g->kv_in >= 0 ? k->dims[0] : g->B;
    g->has_mask = call->n_inputs - (g->kv_in >= 0) > 3;
    if (g->has_mask) mask_strides(&call->inputs[3], g->ms);
}

/* Keys query row i sees: all S, or with the causal cut those j <= i + S - L. */
static int64_t keys_seen(const sdpa_geom *g, int64_t i) {
    if (!g->causal) return g->S;
    const int64_t n = i + g->S - g->L + 1;
    return n < 0 ? 0 : n > g->S ? g->S : n;
}

/* ---- CPU ---- */

/* Query rows per block: the block's scores (rows x S floats, one block per
 * lane of the workspace) within 256 KiB, at most 32 rows. */
static int64_t cpu_rows(const sdpa_geom *g) {
    int64_t r = g->S > 0 ? (64 * 1024) / g->S : 32;
    r = r < 1 ? 1 : r > 32 ? 32 : r;
    return g->L < r ? (g->L > 0 ? g->L : 1) : r;
}

/* Workers: the pool's threads, fewer when there are fewer blocks. Each
 * owns one lane of scores in the workspace. */
static int64_t cpu_lanes(const sdpa_geom *g) {
    const int64_t blocks = g->B * g->Hq * ((g->L + cpu_rows(g) - 1) / cpu_rows(g));
    const int64_t t = cg_cpu_threads();
    return blocks < t ? (blocks > 0 ? blocks : 1) : t;
}

static size_t sdpa_workspace(const cg_op_call *call) {
    sdpa_geom g;
    sdpa_geom_of(call, &g);
    return sizeof(float) * (size_t)(cpu_lanes(&g) * cpu_rows(&g) * (g.S > 0 ? g.S : 1));
}

typedef struct sdpa_job {
    const sdpa_geom *g;
    const float *q, *k, *v, *mask;
    const int32_t *kv; /* kv_rows' index, or NULL */
    float *y, *ws;
    int64_t rows, lanes, blocks, qblocks;
} sdpa_job;

/* Softmax of one row's n scores s (mask added) times the value rows into
 * yr: the row's Dv outputs; 0 where no key is left (all excluded). */
static void cpu_row(const sdpa_job *j, float *s, int64_t n, const float *m, int64_t mst, const float *vh, float *yr) {
    const sdpa_geom *g = j->g;
    if (m && mst) {
        for (int64_t t = 0; t < n; t++) s[t] += m[t];
    } else if (m) {
        for (int64_t t = 0; t < n; t++) s[t] += m[0];
    }
    const float mx = cg_cpu_max(s, (size_t)n);
    if (n == 0 || mx == -INFINITY) {
        memset(yr, 0, sizeof(float) * (size_t)g->Dv);
        return;
    }
    const double sum = cg_cpu_exp_shift_sum(s, mx, s, (size_t)n);
    cg_cpu_weighted_rows(s, vh, (size_t)g->vs[2], (size_t)n, (size_t)g->Dv, yr);
    cg_cpu_mul_round(yr, 1.0 / sum, yr, (size_t)g->Dv);
}

/* Block `blk` (batch, head, rows i0 .. i0 + rows) with scores in sc. */
static void cpu_block(const sdpa_job *j, int64_t blk, float *sc) {
    const sdpa_geom *g = j->g;
    const int64_t qb = blk % j->qblocks, bh = blk / j->qblocks, h = bh % g->Hq, b = bh / g->Hq;
    const int64_t kvh = h / (g->Hq / g->Hk), i0 = qb * j->rows, kb = j->kv ? j->kv[b] : b;
    const int64_t nr = g->L - i0 < j->rows ? g->L - i0 : j->rows, ns = keys_seen(g, i0 + nr - 1);
    const float *qh = j->q + b * g->qs[0] + h * g->qs[1] + i0 * g->qs[2];
    const float *kh = j->k + kb * g->ks[0] + kvh * g->ks[1], *vh = j->v + kb * g->vs[0] + kvh * g->vs[1];
    /* scores [nr, ns] = scale * (q rows . k rows): alpha multiplies each
     * dot product once (the GEMM's own kernels compute each element the
     * same way whatever the split, so whatever the thread count) */
    if (ns > 0) cg_cpu_sgemm(0, 1, nr, ns, g->D, g->scale, qh, g->qs[2], kh, g->ks[2], 0.0f, sc, ns);
    for (int64_t r = 0; r < nr; r++) {
        const int64_t i = i0 + r;
        const float *m = j->mask ? j->mask + b * g->ms[0] + h * g->ms[1] + i * g->ms[2] : NULL;
        float *yr = j->y + b * g->ys[0] + h * g->ys[1] + i * g->ys[2];
        cpu_row(j, sc + r * ns, keys_seen(g, i), m, g->ms[3], vh, yr);
    }
}

/* Lane t runs blocks t, t + lanes, ...: causal blocks late in the sequence
 * see more keys, and interleaving spreads them over the lanes. */
static void cpu_lane(void *ctx, size_t begin, size_t end) {
    const sdpa_job *j = ctx;
    for (size_t t = begin; t < end; t++) {
        float *sc = j->ws + (int64_t)t * j->rows * (j->g->S > 0 ? j->g->S : 1);
        for (int64_t blk = (int64_t)t; blk < j->blocks; blk += j->lanes) cpu_block(j, blk, sc);
    }
}

static cg_op_status sdpa_cpu(const cg_kernel_args *a) {
    sdpa_geom g;
    sdpa_geom_of(a->call, &g);
    sdpa_job j = {&g, a->in[0], a->in[1], a->in[2], g.has_mask ? a->in[3] : NULL, NULL, a->out[0], a->workspace,
                  0,  0,        0,        0};
    if (g.kv_in >= 0) j.kv = a->in[g.kv_in];
    if (j.kv && cg_ops_check_rows(a->call, g.kv_in, "index", j.kv, g.B, g.N)) return CG_OP_ERROR;
    if (g.B * g.Hq * g.L * g.Dv == 0) return CG_OP_OK;
    j.q += g.off[0], j.k += g.off[1], j.v += g.off[2]; /* packed: each its third of the rows */
    j.rows = cpu_rows(&g);
    j.lanes = cpu_lanes(&g);
    j.qblocks = (g.L + j.rows - 1) / j.rows;
    j.blocks = g.B * g.Hq * j.qblocks;
    cg_cpu_parallel_for((size_t)j.lanes, 1, cpu_lane, &j);
    return CG_OP_OK;
}

/* ---- OpenCL (cl/sdpa.cl) ---- */

/* Tile sizes of sdpa_tiled: query rows and keys per tile. */
typedef struct cl_tiles {
    size_t bq, bk, nt; /* nt: work-items per group */
} cl_tiles;

/* Local memory of the tiles in bytes: q rows, k and v tiles, scores,
 * accumulators and three floats per row (max, sum, rescale); D = 0 takes
 * one float per q and k row (no local argument may be empty). */
static size_t tiles_bytes(const sdpa_geom *g, const cl_tiles *t) {
    const size_t d = (size_t)(g->D > 0 ? g->D : 1), dv = (size_t)g->Dv;
    return sizeof(float) * (t->bq * d + t->bk * (d + dv) + t->bq * t->bk + t->bq * dv + 3 * t->bq);
}

/* The largest tiles (at most 32 rows by 64 keys, no more rows than L) that
 * fit the device's local memory next to the kernel's own, keys shrunk to 16
 * before rows; 0 when not even one row by one key fits. */
static int choose_tiles(const cg_kernel_args *a, cl_kernel k, const sdpa_geom *g, cl_tiles *t) {
    t->bq = g->L < 32 ? (size_t)g->L : 32;
    t->bk = g->S < 64 ? (size_t)(g->S > 0 ? g->S : 1) : 64;
    t->nt = cg_ops_cl_work_group(a, k, cg_ops_cl_is_cpu(a) ? 64 : CG_OPS_CL_MAX_WORK_GROUP, 0);
    /* no wider than the larger of the scores and the accumulators of a tile */
    const size_t need = t->bq * (t->bk > (size_t)g->Dv ? t->bk : (size_t)g->Dv);
    while (t->nt > 1 && t->nt / 2 >= need) t->nt /= 2;
    for (;;) {
        if (cg_ops_cl_group_fits(a, k, 1, &t->nt, tiles_bytes(g, t))) return 1;
        if (t->bk > 16) t->bk /= 2;
        else if (t->bq > 1) t->bq = (t->bq + 1) / 2;
        else if (t->bk > 1) t->bk /= 2;
        else return 0;
    }
}

/* The arguments both kernels share: buffers, sizes, strides (IDX8: q, k
 * and v's, then v's row, y's and the mask's). */
static cg_op_status common_args(const cg_kernel_args *a, cl_kernel k, const char *name, const sdpa_geom *g, int wide) {
    const cl_mem q = (cl_mem)a->in[0], kk = (cl_mem)a->in[1], v = (cl_mem)a->in[2], y = a->out[0];
    const cl_mem m = g->has_mask ? (cl_mem)a->in[3] : q; /* unread without a mask */
    const cl_int hq = (cl_int)g->Hq, grp = (cl_int)(g->Hq / g->Hk), L = (cl_int)g->L, S = (cl_int)g->S;
    const cl_int D = (cl_int)g->D, Dv = (cl_int)g->Dv, hm = g->has_mask, causal = g->causal;
    const cl_float scale = g->scale;
    const cg_ops_cl_arg_value args[] = {
        CG_OPS_CL_ARG(q),  CG_OPS_CL_ARG(kk),  CG_OPS_CL_ARG(v),      CG_OPS_CL_ARG(m),    CG_OPS_CL_ARG(y),
        CG_OPS_CL_ARG(hq), CG_OPS_CL_ARG(grp), CG_OPS_CL_ARG(L),      CG_OPS_CL_ARG(S),    CG_OPS_CL_ARG(D),
        CG_OPS_CL_ARG(Dv), CG_OPS_CL_ARG(hm),  CG_OPS_CL_ARG(causal), CG_OPS_CL_ARG(scale)};
    const int64_t s0[8] = {g->qs[0], g->qs[1], g->qs[2], g->ks[0], g->ks[1], g->ks[2], g->vs[0], g->vs[1]};
    const int64_t s1[8] = {g->vs[2], g->ys[0], g->ys[1], g->ys[2], g->ms[0], g->ms[1], g->ms[2], g->ms[3]};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(args), args)) return CG_OP_ERROR;
    return cg_ops_cl_idx8(a, k, name, 14, wide, s0, 8) || cg_ops_cl_idx8(a, k, name, 15, wide, s1, 8) ? CG_OP_ERROR
                                                                                                      : CG_OP_OK;
}

/* The arguments every kernel ends with, from `first` on: q's, k's and v's
 * offsets (elements), then kv_rows' index: the buffer (q's, unread,
 * without one), whether there is one, and k's and v's batch rows N (the
 * kernels clamp an index into [0, N); the host's check fails the run). */
static cg_op_status tail_args(const cg_kernel_args *a, cl_kernel k, const char *name, int first, const sdpa_geom *g,
                              int wide) {
    for (int i = 0; i < 3; i++)
        if (cg_ops_cl_idx(a, k, name, (cl_uint)(first + i), wide, g->off[i])) return CG_OP_ERROR;
    const cl_mem x = g->kv_in >= 0 ? (cl_mem)a->in[g->kv_in] : (cl_mem)a->in[0];
    const cl_int has = g->kv_in >= 0;
    const cg_ops_cl_arg_value args[] = {CG_OPS_CL_ARG(x), CG_OPS_CL_ARG(has)};
    if (cg_ops_cl_args(a, k, name, (cl_uint)first + 3, CG_OPS_CL_N_ARGS(args), args)) return CG_OP_ERROR;
    return cg_ops_cl_idx(a, k, name, (cl_uint)first + 5, wide, g->N) ? CG_OP_ERROR : CG_OP_OK;
}

/* One work-group per (batch, head, tile of query rows). */
static cg_op_status launch_tiled(const cg_kernel_args *a, cl_kernel k, const sdpa_geom *g, const cl_tiles *t,
                                 int wide) {
    static const char name[] = "sdpa_tiled";
    const size_t d = (size_t)(g->D > 0 ? g->D : 1), dv = (size_t)g->Dv;
    const cl_int bq = (cl_int)t->bq, bk = (cl_int)t->bk, nqb = (cl_int)(((size_t)g->L + t->bq - 1) / t->bq);
    const cg_ops_cl_arg_value args[] = {
        CG_OPS_CL_ARG(bq),
        CG_OPS_CL_ARG(bk),
        CG_OPS_CL_ARG(nqb),
        CG_OPS_CL_LOCAL(sizeof(float) * t->bq * d),
        CG_OPS_CL_LOCAL(sizeof(float) * t->bk * d),
        CG_OPS_CL_LOCAL(sizeof(float) * t->bk * dv),
        CG_OPS_CL_LOCAL(sizeof(float) * t->bq * t->bk),
        CG_OPS_CL_LOCAL(sizeof(float) * t->bq * dv),
        CG_OPS_CL_LOCAL(sizeof(float) * t->bq * 3),
    };
    if (common_args(a, k, name, g, wide) || cg_ops_cl_args(a, k, name, 16, CG_OPS_CL_N_ARGS(args), args) ||
        tail_args(a, k, name, 25, g, wide))
        return CG_OP_ERROR;
    const size_t global = (size_t)(g->B * g->Hq * nqb) * t->nt;
    return cg_ops_cl_launch(a, k, name, 1, &global, &t->nt);
}

/* One work-item per output element, nothing in local memory. */
static cg_op_status launch_simple(const cg_kernel_args *a, const sdpa_geom *g, int wide) {
    static const char name[] = "sdpa_simple";
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_sdpa, name, wide, 1, NULL);
    const int64_t total = g->B * g->Hq * g->L * g->Dv;
    if (!k || common_args(a, k, name, g, wide) || cg_ops_cl_idx(a, k, name, 16, wide, total) ||
        tail_args(a, k, name, 17, g, wide))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, name, total, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* sdpa_rows (one work-item per query row) on CPU devices, for heads of at
 * most SDPA_ROWS_DV values (its accumulators are registers). */
#define SDPA_ROWS_DV 32
static cg_op_status launch_rows(const cg_kernel_args *a, const sdpa_geom *g, int wide) {
    static const char name[] = "sdpa_rows";
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_sdpa, name, wide, 1, NULL);
    const int64_t rows = g->B * g->Hq * g->L;
    if (!k || common_args(a, k, name, g, wide) || cg_ops_cl_idx(a, k, name, 16, wide, rows) ||
        tail_args(a, k, name, 17, g, wide))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, name, rows, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

static cg_op_status sdpa_cl(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    sdpa_geom g;
    sdpa_geom_of(call, &g);
    if (g.kv_in >= 0 && g.N == 0 && g.B > 0) /* every index is out of range, whatever it holds */
        return cg_op_fail(call, "kv_rows: k and v have no rows for q's %lld", (long long)g.B);
    if (g.kv_in >= 0 && cg_ops_cl_check_range(a, g.kv_in, g.B, 0, g.N - 1)) return CG_OP_ERROR;
    if (g.B * g.Hq * g.L * g.Dv == 0) return CG_OP_OK;
    const int64_t big = INT32_MAX;
    if (g.Hq > big || g.L > big || g.S > big || g.D > big || g.Dv > big || g.B * g.Hq * g.L > big)
        return cg_op_fail(call, "sizes B = %lld, H = %lld, L = %lld, S = %lld are too large for the OpenCL kernel",
                          (long long)g.B, (long long)g.Hq, (long long)g.L, (long long)g.S);
    int wide = cg_desc_numel(&call->inputs[0]) > big || cg_desc_numel(&call->inputs[1]) > big ||
               cg_desc_numel(&call->inputs[2]) > big || cg_desc_numel(&call->outputs[0]) > big;
    if (g.has_mask) wide = wide || cg_desc_numel(&call->inputs[3]) > big;
    wide = wide || g.N > big;
    if (g.Dv <= SDPA_ROWS_DV && cg_ops_cl_is_cpu(a)) return launch_rows(a, &g, wide);
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_sdpa, "sdpa_tiled", wide, 1, NULL);
    if (!k) return CG_OP_ERROR;
    cl_tiles t;
    if (!choose_tiles(a, k, &g, &t)) return launch_simple(a, &g, wide);
    return launch_tiled(a, k, &g, &t, wide);
}

/* ---- decomposition ---- */

/* The decomposition's node `op` with attributes printed from fmt. */
static int32_t emitf(cg_ops_emitter *e, const char *op, int32_t x, int32_t y, const char *fmt, ...) CG_OPS_PRINTF(5, 6);
static int32_t emitf(cg_ops_emitter *e, const char *op, int32_t x, int32_t y, const char *fmt, ...) {
    char attrs[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(attrs, sizeof attrs, fmt, ap);
    va_end(ap);
    return cg_ops_emit(e, op, attrs, x, y, -1);
}

/* The i32 mask [L, S] of the keys each query sees: j - (S - L) <= i. */
static int32_t causal_keep(cg_ops_emitter *e, const sdpa_geom *g, int32_t q, int32_t k) {
    const int ax = g->bshd ? 1 : 2;
    int32_t i = emitf(e, "arange", q, -1, "axis: %d, to: \"i32\"", ax);
    i = cg_ops_emit(e, "reshape", "shape: [-1, 1]", i, -1, -1);
    int32_t j = emitf(e, "arange", k, -1, "axis: %d, start: %.1f, to: \"i32\"", ax, (double)(g->L - g->S));
    return cg_ops_emit(e, "cast", "to: \"i32\"", cg_ops_emit(e, "less_equal", NULL, j, i, -1), -1, -1);
}

/* matmul, softmax and matmul on the heads [B, H, N, X]: a group of query
 * heads shares its kv head as rows [B, Hk, G * L, D] of one product, and
 * the scores go back to [B, Hq, L, S] for the mask and the softmax. */
static int32_t decomposed_heads(cg_ops_emitter *e, const sdpa_geom *g, int32_t q, int32_t k, int32_t v, int32_t mask,
                                int32_t keep) {
    const int grouped = g->Hq != g->Hk;
    if (grouped) q = emitf(e, "reshape", q, -1, "shape: [0, %lld, -1, 0]", (long long)g->Hk);
    int32_t s = cg_ops_emit(e, "matmul", "transpose_b: 1", q, k, -1);
    if (grouped) s = emitf(e, "reshape", s, -1, "shape: [0, %lld, -1, 0]", (long long)g->Hq);
    s = emitf(e, "affine", s, -1, "alpha: %.9g", (double)g->scale);
    if (mask >= 0) s = cg_ops_emit(e, "add", NULL, s, mask, -1);
    s = cg_ops_emit(e, "softmax", "axis: -1", s, keep, -1);
    if (grouped) s = emitf(e, "reshape", s, -1, "shape: [0, %lld, -1, 0]", (long long)g->Hk);
    int32_t y = cg_ops_emit(e, "matmul", NULL, s, v, -1);
    if (grouped) y = emitf(e, "reshape", y, -1, "shape: [0, %lld, -1, 0]", (long long)g->Hq);
    return y;
}

/* Transposes, matmul, affine (the scale), add (the mask), softmax (the
 * causal cut as its i32 mask; it gives rows with no key left 0, as sdpa
 * does), matmul. */
static cg_op_status sdpa_decompose(cg_decomp *d, const cg_op_call *call) {
    for (int i = 0; i < call->n_inputs; i++)
        for (int x = 0; x < call->inputs[i].ndim; x++)
            if (!cg_dim_known(call->inputs[i].dims[x]))
                return cg_op_fail(call, "the decomposition needs concrete shapes (input %d, %s)", i, sdpa_names[i]);
    sdpa_geom g;
    sdpa_geom_of(call, &g);
    cg_ops_emitter e = {d, call, CG_OP_OK};
    int32_t q = cg_ops_emit_input(&e, 0), k = cg_ops_emit_input(&e, 1), v = cg_ops_emit_input(&e, 2);
    if (g.kv_in >= 0) { /* each q row's k and v rows, copied */
        const int32_t idx = cg_ops_emit_input(&e, g.kv_in);
        k = cg_ops_emit(&e, "gather_rows", NULL, k, idx, -1);
        v = cg_ops_emit(&e, "gather_rows", NULL, v, idx, -1);
    }
    if (g.packed) { /* each its third of the rows, as [B, L, H, D] */
        const long long E = (long long)(g.Hq * g.D), H = (long long)g.Hq, D = (long long)g.D;
        q = emitf(&e, "reshape", emitf(&e, "slice", q, -1, "axis: -1, start: 0, end: %lld", E), -1,
                  "shape: [0, 0, %lld, %lld]", H, D);
        k = emitf(&e, "reshape", emitf(&e, "slice", k, -1, "axis: -1, start: %lld, end: %lld", E, 2 * E), -1,
                  "shape: [0, 0, %lld, %lld]", H, D);
        v = emitf(&e, "reshape", emitf(&e, "slice", v, -1, "axis: -1, start: %lld, end: %lld", 2 * E, 3 * E), -1,
                  "shape: [0, 0, %lld, %lld]", H, D);
    }
    const int32_t mask = g.has_mask ? cg_ops_emit_input(&e, 3) : -1, keep = g.causal ? causal_keep(&e, &g, q, k) : -1;
    static const char heads[] = "perm: [0, 2, 1, 3]";
    if (g.bshd) {
        q = cg_ops_emit(&e, "transpose", heads, q, -1, -1);
        k = cg_ops_emit(&e, "transpose", heads, k, -1, -1);
        v = cg_ops_emit(&e, "transpose", heads, v, -1, -1);
    }
    int32_t y = decomposed_heads(&e, &g, q, k, v, mask, keep);
    if (g.bshd) y = cg_ops_emit(&e, "transpose", heads, y, -1, -1);
    cg_ops_emit_output(&e, 0, y);
    return e.st;
}

/* ---- conformance cases ---- */

/* q, k, v in [-2, 2]; masks in [-4, 0] (0 is "keep"). */
typedef struct sdpa_case {
    int64_t B, Hq, Hk, L, S, D, Dv;
    int bshd, causal, mask_nd; /* mask_nd 0: none */
    int64_t mask[4];
    const char *extra; /* more attributes, or NULL */
} sdpa_case;

static const sdpa_case sdpa_cases[] = {
    {1, 1, 1, 1, 1, 1, 1, 0, 0, 0, {0}, NULL},
    {1, 1, 1, 3, 5, 4, 4, 0, 0, 0, {0}, NULL},
    {2, 3, 3, 5, 7, 8, 8, 1, 0, 0, {0}, NULL},
    /* grouped-query heads, D != Dv, both layouts */
    {2, 4, 2, 5, 7, 8, 3, 0, 0, 0, {0}, NULL},
    {2, 6, 2, 5, 9, 5, 7, 1, 0, 0, {0}, NULL},
    {1, 8, 1, 3, 11, 16, 16, 1, 0, 0, {0}, NULL},
    /* a decoder step: one query over a cache of keys */
    {2, 4, 2, 1, 17, 8, 8, 1, 0, 0, {0}, NULL},
    {3, 2, 2, 1, 33, 8, 5, 0, 1, 2, {1, 33}, NULL},
    /* causal: L == S, L < S (bottom-right), L > S (first rows see nothing) */
    {2, 2, 2, 9, 9, 8, 8, 0, 1, 0, {0}, NULL},
    {1, 4, 2, 5, 13, 8, 6, 1, 1, 0, {0}, NULL},
    {1, 2, 1, 12, 5, 4, 4, 0, 1, 0, {0}, NULL},
    /* masks [L, S], [B, 1, 1, S], [B, H, L, S], [S], [H, 1, 1] */
    {2, 4, 2, 6, 10, 8, 8, 0, 0, 2, {6, 10}, NULL},
    {3, 2, 2, 5, 19, 8, 8, 1, 0, 4, {3, 1, 1, 19}, NULL},
    {2, 3, 3, 4, 7, 5, 9, 0, 0, 4, {2, 3, 4, 7}, NULL},
    {2, 3, 1, 4, 7, 5, 5, 1, 1, 1, {7}, NULL},
    {1, 4, 4, 3, 5, 8, 8, 0, 0, 3, {4, 1, 1}, NULL},
    /* scale given */
    {2, 2, 1, 5, 6, 7, 7, 0, 0, 2, {5, 6}, "scale: 0.3"},
    {1, 2, 2, 4, 8, 8, 8, 1, 1, 0, {0}, "scale: -1.5"},
    /* more keys than one tile; odd sizes */
    {1, 2, 1, 7, 300, 16, 16, 0, 0, 0, {0}, NULL},
    {2, 4, 2, 33, 300, 24, 40, 1, 1, 4, {2, 1, 33, 300}, NULL},
    {1, 3, 3, 65, 130, 32, 17, 0, 1, 2, {65, 130}, NULL},
    {1, 2, 2, 1, 1000, 64, 64, 1, 0, 4, {1, 1, 1, 1000}, NULL},
    {1, 8, 8, 64, 64, 64, 64, 1, 1, 0, {0}, NULL},
    /* wide heads (the tiles shrink), D = 0 (every score 0) */
    {1, 2, 1, 9, 40, 300, 200, 0, 1, 0, {0}, NULL},
    {2, 2, 2, 3, 4, 0, 5, 0, 0, 2, {3, 4}, NULL},
    /* one row and one key of q, k and v past 32 KiB of local memory: the
     * one-item-per-output kernel (rusticl, Oclgrind) */
    {1, 2, 1, 2, 3, 4100, 4, 1, 1, 2, {2, 3}, NULL},
};

#define N_SDPA_CASES ((int32_t)(sizeof sdpa_cases / sizeof sdpa_cases[0]))

/* Fills input i with f32 dims of a [B, H, N, X] tensor in the layout. */
static void case_heads(cg_conform_case *c, int i, int bshd, int64_t B, int64_t H, int64_t N, int64_t X) {
    c->inputs[i] = (cg_tensor_desc){CG_OP_F32, 4, {B, bshd ? N : H, bshd ? H : N, X}};
    c->lo[i] = -2.0, c->hi[i] = 2.0;
}

/* Packed q | k | v (a fused QKV projection): B, heads, L, D, causal, mask. */
typedef struct sdpa_packed_case {
    int64_t B, H, L, D;
    int causal, mask_nd;
    int64_t mask[4];
} sdpa_packed_case;

static const sdpa_packed_case sdpa_packed_cases[] = {
    {1, 4, 6, 8, 0, 4, {1, 1, 6, 6}}, /* GPT-2's, with its additive mask */
    {2, 3, 5, 4, 1, 0, {0}},
    {1, 2, 40, 16, 0, 2, {40, 40}},
    {2, 3, 9, 48, 1, 0, {0}}, /* heads past sdpa_rows' 32 values */
};

#define N_PACKED_CASES ((int32_t)(sizeof sdpa_packed_cases / sizeof sdpa_packed_cases[0]))

/* kv_rows: B q rows over N rows of k and v, the index in [lo, hi] (out of
 * [0, N - 1]: every device must refuse it). */
typedef struct sdpa_kv_case {
    int64_t B, N, Hq, Hk, L, S, D, Dv;
    int bshd, causal, mask_nd;
    int64_t mask[4];
    double lo, hi;
} sdpa_kv_case;

static const sdpa_kv_case sdpa_kv_cases[] = {
    /* a decoder step's cross-attention: 6 beam rows over 2 sentences */
    {6, 2, 4, 4, 1, 9, 8, 8, 1, 0, 4, {6, 1, 1, 9}, 0, 1},
    {3, 5, 2, 2, 3, 7, 4, 6, 0, 0, 0, {0}, 0, 4},
    {4, 3, 4, 2, 2, 7, 8, 8, 1, 1, 2, {2, 7}, 0, 2},
    /* past one tile of keys; heads past sdpa_rows' 32 values */
    {2, 1, 2, 2, 1, 130, 16, 16, 1, 0, 4, {2, 1, 1, 130}, 0, 0},
    {3, 2, 2, 1, 2, 20, 40, 40, 0, 0, 4, {3, 2, 2, 20}, 0, 1},
    /* indices past either end */
    {4, 3, 2, 2, 1, 5, 4, 4, 1, 0, 0, {0}, 0, 3},
    {4, 3, 2, 2, 1, 5, 4, 4, 1, 0, 4, {4, 1, 1, 5}, -1, 2},
};

#define N_KV_CASES ((int32_t)(sizeof sdpa_kv_cases / sizeof sdpa_kv_cases[0]))

static void kv_case(int32_t index, cg_conform_case *c) {
    static char attrs[N_KV_CASES][64];
    const sdpa_kv_case *t = &sdpa_kv_cases[index];
    case_heads(c, 0, t->bshd, t->B, t->Hq, t->L, t->D);
    case_heads(c, 1, t->bshd, t->N, t->Hk, t->S, t->D);
    case_heads(c, 2, t->bshd, t->N, t->Hk, t->S, t->Dv);
    int at = 3;
    if (t->mask_nd) {
        c->inputs[at] = (cg_tensor_desc){CG_OP_F32, t->mask_nd, {0}};
        memcpy(c->inputs[at].dims, t->mask, sizeof(int64_t) * (size_t)t->mask_nd);
        c->lo[at] = -4.0, c->hi[at++] = 0.0;
    }
    c->inputs[at] = (cg_tensor_desc){CG_OP_I32, 1, {t->B}};
    c->lo[at] = t->lo, c->hi[at++] = t->hi;
    c->n_inputs = at;
    c->n_outputs = 1;
    c->expect_error = t->lo < 0 || t->hi >= (double)t->N;
    snprintf(attrs[index], sizeof attrs[index], "layout: \"%s\", causal: %d, kv_rows: 1", t->bshd ? "bshd" : "bhsd",
             t->causal);
    c->attrs = attrs[index];
}

static void packed_case(int32_t index, cg_conform_case *c) {
    static char attrs[N_PACKED_CASES][96];
    const sdpa_packed_case *t = &sdpa_packed_cases[index];
    for (int i = 0; i < 3; i++) {
        c->inputs[i] = (cg_tensor_desc){CG_OP_F32, 3, {t->B, t->L, 3 * t->H * t->D}};
        c->lo[i] = -2.0, c->hi[i] = 2.0;
    }
    c->n_inputs = 3 + (t->mask_nd > 0);
    c->n_outputs = 1;
    if (t->mask_nd) {
        c->inputs[3] = (cg_tensor_desc){CG_OP_F32, t->mask_nd, {0}};
        memcpy(c->inputs[3].dims, t->mask, sizeof(int64_t) * (size_t)t->mask_nd);
        c->lo[3] = -4.0, c->hi[3] = 0.0;
    }
    snprintf(attrs[index], sizeof attrs[index], "layout: \"bshd\", packed: 1, heads: %lld, causal: %d", (long long)t->H,
             t->causal);
    c->attrs = attrs[index];
}

static int32_t sdpa_conform(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= N_SDPA_CASES + N_PACKED_CASES + N_KV_CASES) return 0;
    static char attrs[N_SDPA_CASES][96];
    const uint32_t ss = c->struct_size;
    memset(c, 0, sizeof *c);
    c->struct_size = ss;
    if (index >= N_SDPA_CASES + N_PACKED_CASES) {
        kv_case(index - N_SDPA_CASES - N_PACKED_CASES, c);
        return 1;
    }
    if (index >= N_SDPA_CASES) {
        packed_case(index - N_SDPA_CASES, c);
        return 1;
    }
    const sdpa_case *t = &sdpa_cases[index];
    case_heads(c, 0, t->bshd, t->B, t->Hq, t->L, t->D);
    case_heads(c, 1, t->bshd, t->B, t->Hk, t->S, t->D);
    case_heads(c, 2, t->bshd, t->B, t->Hk, t->S, t->Dv);
    c->n_inputs = 3 + (t->mask_nd > 0);
    c->n_outputs = 1;
    if (t->mask_nd) {
        c->inputs[3].dtype = CG_OP_F32;
        c->inputs[3].ndim = t->mask_nd;
        memcpy(c->inputs[3].dims, t->mask, sizeof(int64_t) * (size_t)t->mask_nd);
        c->lo[3] = -4.0, c->hi[3] = 0.0;
    }
    snprintf(attrs[index], sizeof attrs[index], "layout: \"%s\", causal: %d%s%s", t->bshd ? "bshd" : "bhsd", t->causal,
             t->extra ? ", " : "", t->extra ? t->extra : "");
    c->attrs = attrs[index];
    return 1;
}

static const cg_kernel_def sdpa_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = sdpa_workspace, .run = sdpa_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = sdpa_cl, .flags = CG_KERNEL_FLAG_CHECKS),
};

const cg_op_def cg_op_sdpa =
    CG_OP(.name = "sdpa",
          .doc =
              "Scaled-dot-product attention, fused: y = softmax(q k^T * scale + mask) v over the keys, per batch and "
              "query head; all f32. layout \"bhsd\" (default): q [B, Hq, L, D], k [B, Hk, S, D], v [B, Hk, S, Dv], "
              "y [B, Hq, L, Dv]; \"bshd\": q [B, L, Hq, D], k [B, S, Hk, D], v [B, S, Hk, Dv], y [B, L, Hq, Dv] "
              "(an exporter's [B, L, H * D] reshaped, without the head-split transposes). Hq is a multiple of Hk: "
              "query head h reads kv head h / (Hq / Hk) (grouped-query attention). A score is the dot product of "
              "the q and k rows times scale (attribute, 0 (default): 1 / sqrt(D), 1 for D = 0), plus the optional f32 "
              "mask, "
              "which broadcasts (numpy rules, right-aligned) to [B, Hq, L, S] in either layout; -inf excludes a "
              "key. causal: 1 excludes key j for query i where j > i + S - L (bottom-right aligned: a decoder step "
              "over a KV cache; torch's is_causal when L == S). The softmax subtracts the row's max; a row whose "
              "every key is excluded gives y = 0 (what exporters' Where(IsNaN(p), 0, p) makes of it). A NaN in q, "
              "k or the mask makes its rows NaN; a NaN in v those rows that read its key (the keys before the "
              "causal cut). OpenCL: one work-group per (batch, head, tile of query rows) with keys and values in "
              "local memory and an online softmax (the scores never reach global memory).",
          .min_inputs = 3, .max_inputs = 5, .min_outputs = 1, .max_outputs = 1, .input_names = sdpa_names,
          CG_ATTRS(sdpa_attrs), .infer = sdpa_infer, .decompose = sdpa_decompose, CG_KERNELS(sdpa_kernels),
          .conform_case = sdpa_conform);
