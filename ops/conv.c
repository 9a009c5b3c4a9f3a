/* conv: N-d convolution (ONNX Conv, torch.nn.Conv1d/2d/3d) of x [N, C,
 * spatial...] with w [M, C / group, kernel...] and an optional bias [M].
 * CPU: the windows of 16 output positions at a time copied into a panel
 * (im2col) that the group's weights multiply (cg_cpu_gemm_panel), panels
 * and blocks of output channels spread over the thread pool; 1x1 windows
 * are read from x in place, 1x1 planes are a linear layer; a depthwise
 * conv (one input channel per group) and a conv of at most 8 output
 * channels are direct loops with 8 channels in the lanes of a vector.
 * OpenCL: one work-item per output element (ops/cl/conv.cl). */
#include "conv_geom.h"
#include "ops_cl.h"

#include "cpu/cpu_blas.h"
#include "cpu/cpu_gemm.h"
#include "cpu/cpu_pool.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conv.cl.h"

enum { CONV_STRIDES, CONV_DILATIONS, CONV_PADS, CONV_AUTO_PAD, CONV_GROUP };

static const cg_attr_def conv_attrs[] = {
    CG_CONV_ATTR_STRIDES,
    CG_CONV_ATTR_DILATIONS,
    CG_ATTR(.name = "pads", .type = CG_ATTR_INTS,
            .doc = "zeros added before each spatial axis, then after each (ONNX's order; default none)"),
    CG_CONV_ATTR_AUTO_PAD,
    CG_ATTR(.name = "group", .type = CG_ATTR_INT, .default_int = 1,
            .doc = "channel groups: C and M split into `group` parts, part g of the output reading part g of x"),
};
static const cg_conv_attr_ix conv_ix = {CONV_STRIDES, CONV_DILATIONS, CONV_PADS, CONV_AUTO_PAD, -1, -1};

/* The sizes of one conv call. */
typedef struct conv_dims {
    cg_conv_geom g;
    int64_t n, c, m, group, cg, mg; /* batch, channels in / out, groups, per group */
} conv_dims;

static cg_op_status conv_dims_of(const cg_op_call *call, conv_dims *cd) {
    const cg_tensor_desc *x = &call->inputs[0], *w = &call->inputs[1];
    char sx[128], sw[128];
    int nsp;
    if (cg_conv_check_x(call, NULL, &nsp)) return CG_OP_ERROR;
    cg_ops_format_dims(sx, sizeof sx, x);
    cg_ops_format_dims(sw, sizeof sw, w);
    if (w->dtype != CG_F32 || w->ndim != x->ndim)
        return cg_op_fail(call, "input 1 (w) %s %s must be f32 [M, C / group, kernel...] of x %s's rank", sw,
                          cg_ops_dtype_name(w->dtype), sx);
    cd->n = x->dims[0], cd->c = x->dims[1], cd->m = w->dims[0], cd->cg = w->dims[1];
    cd->group = call->attrs[CONV_GROUP].i;
    if (cd->group < 1) return cg_op_fail(call, "attribute group must be positive, got %lld", (long long)cd->group);
    if (cd->m >= 0 && cd->m % cd->group)
        return cg_op_fail(call, "w %s: its %lld output channels do not split into %lld groups", sw, (long long)cd->m,
                          (long long)cd->group);
    if (cd->c >= 0 && cd->cg >= 0 && cd->cg * cd->group != cd->c)
        return cg_op_fail(call, "w %s takes %lld channels per group, x %s has %lld channels in %lld groups", sw,
                          (long long)cd->cg, sx, (long long)cd->c, (long long)cd->group);
    cd->mg = cd->m >= 0 ? cd->m / cd->group : CG_DIM_UNKNOWN;
    return cg_conv_geom_make(call, &conv_ix, nsp, x->dims + 2, w->dims + 2, 0, &cd->g);
}

static cg_op_status conv_infer(cg_op_call *call) {
    conv_dims cd;
    if (conv_dims_of(call, &cd)) return CG_OP_ERROR;
    return cg_conv_output(call, cd.n, cd.m, &cd.g, "w's first dim");
}

/* ---- CPU ---- */

static int conv_pointwise(const cg_conv_geom *g) {
    for (int a = 0; a < CG_CONV_AXES; a++)
        if (g->k[a] != 1 || g->s[a] != 1 || g->pb[a] || g->pe[a]) return 0;
    return 1;
}

/* One input channel per output channel group and few outputs from it: the
 * direct loop, which reads each window once per output; with many outputs
 * of one channel (an STFT as a conv) im2col's one copy per window serves
 * them all in a GEMM. */
static int conv_direct(const conv_dims *cd) { return cd->cg == 1 && cd->mg <= 8 && !conv_pointwise(&cd->g); }

/* The padded extent of axis a that the windows read. */
static int64_t dw_extent(const cg_conv_geom *g, int a) {
    return (g->out[a] - 1) * g->s[a] + (g->k[a] - 1) * g->d[a] + 1;
}

/* Positions of the padded extents, or cap + 1 when more than cap (no
 * overflow whatever the pads). */
static int64_t dw_extent_size(const cg_conv_geom *g, int64_t cap) {
    int64_t n = 1;
    for (int a = 0; a < CG_CONV_AXES; a++) {
        const int64_t e = dw_extent(g, a);
        if (e > cap || n > cap / (e > 0 ? e : 1)) return cap + 1;
        n *= e;
    }
    return n;
}

/* x's plane copied into xp with its pads as zeros, extents e. */
static void dw_pad(const cg_conv_geom *g, const float *x, const int64_t *e, float *xp) {
    const int64_t lead = g->pb[2] < e[2] ? g->pb[2] : e[2];
    int64_t len = e[2] - lead < g->in[2] ? e[2] - lead : g->in[2];
    for (int64_t p0 = 0; p0 < e[0]; p0++)
        for (int64_t p1 = 0; p1 < e[1]; p1++) {
            const int64_t i0 = p0 - g->pb[0], i1 = p1 - g->pb[1];
            float *row = xp + (p0 * e[1] + p1) * e[2];
            if (i0 < 0 || i0 >= g->in[0] || i1 < 0 || i1 >= g->in[1] || len <= 0) {
                memset(row, 0, (size_t)e[2] * sizeof(float));
                continue;
            }
            memset(row, 0, (size_t)lead * sizeof(float));
            memcpy(row + lead, x + (i0 * g->in[1] + i1) * g->in[2], (size_t)len * sizeof(float));
            memset(row + lead + len, 0, (size_t)(e[2] - lead - len) * sizeof(float));
        }
}

/* The im2col GEMM: the output positions of all N images in one row of
 * columns (j = n * P + position, so the images of a small plane share a
 * panel), in panels of CG_GEMM_PANEL columns that one thread packs (each
 * tap a short run copied from a row of x) and multiplies by a block of
 * output channels' weights (cg_cpu_gemm_panel). An item is one (group,
 * panel, block of output channels); a thread packs a panel once for the
 * consecutive items it gets of it. Each output is its bias and then the
 * products in the order of the window, whatever the split. */
typedef struct conv_job {
    const conv_dims *cd;
    const float *x, *w, *bias;
    float *y;
    float *slots;       /* per slot: the packed panel [ck][PANEL], then an output tile [mblk][PANEL] */
    _Atomic int *claim; /* slot s is in use while claim[s] != 0 */
    int nslots;
    int64_t ck, p, cols, panels, mblk, mblocks;
    float *shared;    /* all panels, packed before the products (conv_plan) */
    int64_t cchunks;  /* items per panel packing them: channel ranges */
    int source;       /* CONV_SRC_* */
    const float *src; /* x, or x padded (CONV_SRC_PADDED) */
    int64_t se[3];    /* src's extents */
    const void *wl;   /* conv_outl: the weights in lanes, per block of 8 channels [ck] */
    int64_t *toff;    /* conv_outl: each tap's offset in the source */
} conv_job;

#define PANEL CG_GEMM_PANEL

/* Multiply-adds below which an item is not worth handing to another thread. */
#define CONV_TASK_MACS ((int64_t)1 << 17)
/* The least work of a chunk of the direct loops (multiply-adds) and of the
 * copies (floats): a hand-off to another thread costs microseconds. */
#define CONV_CHUNK 16384

static int64_t conv_slot_floats(const conv_dims *cd) { return (cd->cg * cg_conv_k_size(&cd->g) + cd->mg) * PANEL; }

/* Where the panels read x from: x itself when no window reaches a pad; a
 * copy of x with its pads as zeros, to the extents the windows read, when
 * that is at most about twice x; else x with bounds checks (huge pads). */
enum { CONV_SRC_X, CONV_SRC_PADDED, CONV_SRC_CHECKED };

static int conv_source(const conv_dims *cd, int64_t *pad_floats) {
    const cg_conv_geom *g = &cd->g;
    const int64_t cap = 2 * cg_conv_in_size(g) + 65536, e = dw_extent_size(g, cap);
    int inside = 1;
    for (int a = 0; a < CG_CONV_AXES; a++)
        if (g->pb[a] || dw_extent(g, a) > g->in[a]) inside = 0;
    *pad_floats = 0;
    if (inside) return CONV_SRC_X;
    if (e > cap) return CONV_SRC_CHECKED;
    *pad_floats = cd->n * cd->c * e;
    return CONV_SRC_PADDED;
}

/* How conv_gemm splits the work, a function of the shapes and the thread
 * count (so the workspace agrees): blocks of mblk output channels, enough
 * items to go round the threads a few times when the panels are few (whole
 * register tiles each), one block for a product too small to share. When
 * blocks split the panels, the panels are packed once, into one buffer
 * shared by all (cchunks items each, by channel ranges), before the
 * products; else each item's thread packs its own. */
typedef struct conv_plan {
    int64_t cols, panels, mblk, mblocks, cchunks, shared_floats;
} conv_plan;

static void conv_plan_of(const conv_dims *cd, int threads, conv_plan *pl) {
    const int64_t ck = cd->cg * cg_conv_k_size(&cd->g), want = 4 * (int64_t)threads;
    int64_t pad;
    pl->cols = cd->n * cg_conv_out_size(&cd->g);
    pl->panels = (pl->cols + PANEL - 1) / PANEL;
    const int64_t items = cd->group * pl->panels, macs = items * cd->mg * ck * PANEL;
    pl->mblk = cd->mg;
    if (items < want && threads > 1 && macs >= 2 * CONV_TASK_MACS) {
        const int64_t split = (want + items - 1) / items, per = (cd->mg + split - 1) / split;
        pl->mblk = (per + 5) / 6 * 6;
    }
    if (pl->mblk < 1) pl->mblk = 1;
    pl->mblocks = (cd->mg + pl->mblk - 1) / pl->mblk;
    const int shared = pl->mblocks > 1 && conv_source(cd, &pad) != CONV_SRC_CHECKED;
    pl->cchunks = shared ? (want + items - 1) / items : 1;
    if (pl->cchunks > cd->cg) pl->cchunks = cd->cg > 0 ? cd->cg : 1;
    pl->shared_floats = shared ? items * ck * PANEL : 0;
}

/* 1x1 planes (squeeze-excitation): a linear layer, y [N, M] = x [N, C]
 * w^T + bias, on the dot-form GEMM, which suits a few rows. */
static int conv_linear(const conv_dims *cd) {
    return cd->group == 1 && cg_conv_out_size(&cd->g) == 1 && conv_pointwise(&cd->g);
}

/* One panel row: len outputs from row xr (NULL: a row in the pads) at
 * xr[base + t * s], t in [lo, hi) inside x, zeros elsewhere. */
static inline void conv_pack_row(const float *xr, int64_t base, int64_t s, int64_t lo, int64_t hi, int64_t len,
                                 float *dst) {
    if (!xr) {
        memset(dst, 0, (size_t)len * sizeof(float));
        return;
    }
    if (s == 1 && lo == 0 && hi == PANEL) { /* the common interior run: a fixed-size copy the compiler inlines */
        memcpy(dst, xr + base, PANEL * sizeof(float));
        return;
    }
    for (int64_t t = 0; t < lo; t++) dst[t] = 0.0f;
    const float *xs = xr + base;
    if (s == 1)
        for (int64_t t = lo; t < hi; t++) dst[t] = xs[t];
    else if (s == 2) /* a constant stride: the loads need no multiply */
        for (int64_t t = lo; t < hi; t++) dst[t] = xs[2 * t];
    else
        for (int64_t t = lo; t < hi; t++) dst[t] = xs[t * s];
    for (int64_t t = hi; t < len; t++) dst[t] = 0.0f;
}

/* One run of len outputs along the last axis from (o0, o1, o2) of the
 * group's channels xg into the panel rows from dst: per tap k2 the span
 * [lo, hi) of the run that reads inside x (found once), then that tap's
 * row for every channel and (k0, k1). */
static void conv_pack_run(const conv_dims *cd, const float *xg, int64_t o0, int64_t o1, int64_t o2, int64_t len,
                          float *dst) {
    const cg_conv_geom *g = &cd->g;
    const int64_t s = g->s[2], n2 = g->in[2], in = cg_conv_in_size(g), step = g->k[2] * PANEL;
    for (int64_t k2 = 0; k2 < g->k[2]; k2++) {
        const int64_t base = o2 * s - g->pb[2] + k2 * g->d[2];
        int64_t lo = base >= 0 ? 0 : (-base + s - 1) / s, hi = n2 > base ? (n2 - base + s - 1) / s : 0;
        if (hi > len) hi = len;
        if (lo > hi) lo = hi;
        float *d = dst + k2 * PANEL;
        for (int64_t c = 0; c < cd->cg; c++)
            for (int64_t k0 = 0; k0 < g->k[0]; k0++) {
                const int64_t i0 = o0 * g->s[0] - g->pb[0] + k0 * g->d[0];
                const int in0 = i0 >= 0 && i0 < g->in[0];
                const float *xc = in0 ? xg + c * in + i0 * g->in[1] * n2 : NULL;
                for (int64_t k1 = 0; k1 < g->k[1]; k1++, d += step) {
                    const int64_t i1 = o1 * g->s[1] - g->pb[1] + k1 * g->d[1];
                    conv_pack_row(in0 && i1 >= 0 && i1 < g->in[1] ? xc + i1 * n2 : NULL, base, s, lo, hi, len, d);
                }
            }
    }
}

/* len floats from src at stride s (constant sizes for the usual runs,
 * which the compiler turns into a few vector moves). */
static inline void conv_copy(float *dst, const float *src, int64_t len, int64_t s) {
    if (s == 1) {
        switch (len) {
        case 16: memcpy(dst, src, 16 * sizeof(float)); return;
        case 8: memcpy(dst, src, 8 * sizeof(float)); return;
        case 4: memcpy(dst, src, 4 * sizeof(float)); return;
        case 2: memcpy(dst, src, 2 * sizeof(float)); return;
        default:
            for (int64_t t = 0; t < len; t++) dst[t] = src[t];
            return;
        }
    }
    if (s == 2 && len == 16) /* fixed sizes: unrolled into shuffles of whole vectors */
        for (int t = 0; t < 16; t++) dst[t] = src[2 * t];
    else if (s == 2 && len == 8)
        for (int t = 0; t < 8; t++) dst[t] = src[2 * t];
    else if (s == 2)
        for (int64_t t = 0; t < len; t++) dst[t] = src[2 * t];
    else
        for (int64_t t = 0; t < len; t++) dst[t] = src[t * s];
}

/* conv_pack of channels [c0, c1) from a source no window leaves (x, or x
 * padded): the panel's runs found once, then each panel row (c, k0, k1,
 * k2) copies every run from the same offset, with no bounds to check. */
static void conv_pack_src(const conv_job *j, int64_t gi, int64_t j0, int nr, int64_t c0, int64_t c1, float *pk) {
    const conv_dims *cd = j->cd;
    const cg_conv_geom *g = &cd->g;
    const int64_t *se = j->se, sch = se[0] * se[1] * se[2];
    const float *src[PANEL];
    int64_t len[PANEL], at[PANEL];
    int runs = 0;
    for (int l = 0; l < nr; runs++) {
        const int64_t col = j0 + l, img = col / j->p, pos = col % j->p;
        const int64_t o2 = pos % g->out[2], o1 = pos / g->out[2] % g->out[1], o0 = pos / g->out[2] / g->out[1];
        len[runs] = g->out[2] - o2 < nr - l ? g->out[2] - o2 : nr - l;
        at[runs] = l;
        src[runs] =
            j->src + (img * cd->c + gi * cd->cg) * sch + (o0 * g->s[0] * se[1] + o1 * g->s[1]) * se[2] + o2 * g->s[2];
        l += (int)len[runs];
    }
    float *d = pk + c0 * cg_conv_k_size(g) * PANEL;
    for (int64_t c = c0; c < c1; c++)
        for (int64_t k0 = 0; k0 < g->k[0]; k0++)
            for (int64_t k1 = 0; k1 < g->k[1]; k1++) {
                const int64_t off = c * sch + (k0 * g->d[0] * se[1] + k1 * g->d[1]) * se[2];
                for (int64_t k2 = 0; k2 < g->k[2]; k2++, d += PANEL)
                    for (int q = 0; q < runs; q++) conv_copy(d + at[q], src[q] + off + k2 * g->d[2], len[q], g->s[2]);
            }
}

/* Planes [p0, p1) of x (n * C of them) padded into the source. */
static void conv_pad_run(void *ctx, size_t p0, size_t p1) {
    const conv_job *j = ctx;
    const cg_conv_geom *g = &j->cd->g;
    const int64_t in = cg_conv_in_size(g), sch = j->se[0] * j->se[1] * j->se[2];
    for (size_t p = p0; p < p1; p++) dw_pad(g, j->x + (int64_t)p * in, j->se, (float *)j->src + (int64_t)p * sch);
}

/* Columns [j0, j0 + nr) of group gi into pk [ck][PANEL], in runs of
 * consecutive outputs along the last axis of one image. */
static void conv_pack(const conv_job *j, int64_t gi, int64_t j0, int nr, float *pk) {
    const conv_dims *cd = j->cd;
    const cg_conv_geom *g = &cd->g;
    if (nr < PANEL)
        for (int64_t r = 0; r < j->ck; r++) memset(pk + r * PANEL + nr, 0, (size_t)(PANEL - nr) * sizeof(float));
    if (j->source != CONV_SRC_CHECKED) {
        conv_pack_src(j, gi, j0, nr, 0, j->cd->cg, pk);
        return;
    }
    for (int l = 0; l < nr;) {
        const int64_t col = j0 + l, img = col / j->p, pos = col % j->p;
        const int64_t o2 = pos % g->out[2], o1 = pos / g->out[2] % g->out[1], o0 = pos / g->out[2] / g->out[1];
        const int64_t len = g->out[2] - o2 < nr - l ? g->out[2] - o2 : nr - l;
        conv_pack_run(cd, j->x + (img * cd->c + gi * cd->cg) * cg_conv_in_size(g), o0, o1, o2, len, pk + l);
        l += (int)len;
    }
}

/* The workspace's head: one claim flag per thread, then the slots (on 64
 * bytes), which slots_bytes more bytes follow. */
static size_t conv_slots_head(int threads) { return 64 + (size_t)threads * sizeof(_Atomic int) + 64; }

static void conv_slots(conv_job *j, void *ws, int threads) {
    uintptr_t at = ((uintptr_t)ws + 63) / 64 * 64;
    j->claim = (_Atomic int *)at;
    j->slots = (float *)((at + (size_t)threads * sizeof(_Atomic int) + 63) / 64 * 64);
    j->nslots = threads;
    for (int s = 0; s < threads; s++) atomic_init(&j->claim[s], 0);
}

/* A free slot: at most `threads` items run at once, so one always is. */
static int conv_claim(conv_job *j) {
    for (;;)
        for (int s = 0; s < j->nslots; s++) {
            int free_ = 0;
            if (atomic_compare_exchange_strong(&j->claim[s], &free_, 1)) return s;
        }
}

/* The output tile of a panel that spans two images: to y image by image. */
static void conv_scatter(const conv_job *j, int64_t gi, int64_t m0, int64_t mr, int64_t j0, int nr, const float *t) {
    const conv_dims *cd = j->cd;
    for (int l = 0; l < nr;) {
        const int64_t col = j0 + l, img = col / j->p, pos = col % j->p;
        const int64_t len = j->p - pos < nr - l ? j->p - pos : nr - l;
        float *yo = j->y + (img * cd->m + gi * cd->mg + m0) * j->p + pos;
        for (int64_t i = 0; i < mr; i++) memcpy(yo + i * j->p, t + i * PANEL + l, (size_t)len * sizeof(float));
        l += (int)len;
    }
}

/* Items [i0, i1) of the shared packing: channel ranges of panels. */
static void conv_pack_items(void *ctx, size_t i0, size_t i1) {
    const conv_job *j = ctx;
    const int64_t cg = j->cd->cg, kn = cg_conv_k_size(&j->cd->g);
    for (size_t it = i0; it < i1; it++) {
        const int64_t gq = (int64_t)it / j->cchunks, cc = (int64_t)it % j->cchunks, j0 = gq % j->panels * PANEL;
        const int64_t c0 = cg * cc / j->cchunks, c1 = cg * (cc + 1) / j->cchunks;
        const int nr = j->cols - j0 < PANEL ? (int)(j->cols - j0) : PANEL;
        float *pk = j->shared + gq * j->ck * PANEL;
        if (nr < PANEL)
            for (int64_t r = c0 * kn; r < c1 * kn; r++)
                memset(pk + r * PANEL + nr, 0, (size_t)(PANEL - nr) * sizeof(float));
        conv_pack_src(j, gq / j->panels, j0, nr, c0, c1, pk);
    }
}

/* Items [i0, i1) on one slot's buffers. */
static void conv_items(void *ctx, size_t i0, size_t i1) {
    conv_job *j = ctx;
    const conv_dims *cd = j->cd;
    const int slot = conv_claim(j);
    float *pk = j->slots + (int64_t)slot * conv_slot_floats(cd), *tile = pk + j->ck * PANEL;
    int64_t packed = -1;
    for (size_t it = i0; it < i1; it++) {
        const int64_t gq = (int64_t)it / j->mblocks, gi = gq / j->panels, j0 = gq % j->panels * PANEL;
        const int64_t m0 = (int64_t)it % j->mblocks * j->mblk, mr = cd->mg - m0 < j->mblk ? cd->mg - m0 : j->mblk;
        const int nr = j->cols - j0 < PANEL ? (int)(j->cols - j0) : PANEL;
        const int64_t img = j0 / j->p, pos = j0 % j->p, one_image = pos + nr <= j->p;
        const float *b = pk;
        int64_t ldb = PANEL;
        if (j->shared) {
            b = j->shared + gq * j->ck * PANEL;
        } else if (conv_pointwise(&cd->g) && one_image && nr == PANEL) {
            b = j->x + (img * cd->c + gi * cd->cg) * j->p + pos, ldb = j->p;
        } else if (packed != gq) {
            conv_pack(j, gi, j0, nr, pk);
            packed = gq;
        }
        const float *a = j->w + (gi * cd->mg + m0) * j->ck, *init = j->bias ? j->bias + gi * cd->mg + m0 : NULL;
        if (one_image) {
            cg_cpu_gemm_panel(mr, nr, j->ck, a, j->ck, b, ldb, init,
                              j->y + (img * cd->m + gi * cd->mg + m0) * j->p + pos, j->p);
        } else {
            cg_cpu_gemm_panel(mr, nr, j->ck, a, j->ck, b, ldb, init, tile, PANEL);
            conv_scatter(j, gi, m0, mr, j0, nr, tile);
        }
    }
    atomic_store(&j->claim[slot], 0);
}

/* The source the panels read (conv_source), x padded into pad if so. */
static void conv_set_source(conv_job *j, float *pad) {
    const cg_conv_geom *g = &j->cd->g;
    int64_t floats;
    j->source = conv_source(j->cd, &floats);
    j->src = j->x;
    for (int a = 0; a < CG_CONV_AXES; a++) j->se[a] = j->source == CONV_SRC_PADDED ? dw_extent(g, a) : g->in[a];
    if (j->source != CONV_SRC_PADDED) return;
    j->src = pad;
    const int64_t planes = j->cd->n * j->cd->c, per = floats / (planes ? planes : 1);
    cg_cpu_parallel_for((size_t)planes, (size_t)(per >= CONV_CHUNK ? 1 : CONV_CHUNK / (per + 1)), conv_pad_run, j);
}

/* The products of conv_plan's items over the pool, after x is padded
 * (conv_source) and, with shared panels, the panels packed. */
static void conv_gemm(conv_job *j, void *ws) {
    const conv_dims *cd = j->cd;
    const int threads = cg_cpu_threads();
    conv_plan pl;
    conv_plan_of(cd, threads, &pl);
    conv_slots(j, ws, threads);
    int64_t pad;
    conv_source(cd, &pad);
    conv_set_source(j, j->slots + threads * conv_slot_floats(cd));
    j->cols = pl.cols, j->panels = pl.panels, j->mblk = pl.mblk, j->mblocks = pl.mblocks, j->cchunks = pl.cchunks;
    const int64_t items = cd->group * j->panels;
    j->shared = NULL;
    if (pl.shared_floats) {
        j->shared = j->slots + threads * conv_slot_floats(cd) + pad;
        const int64_t per = j->ck / j->cchunks * PANEL;
        cg_cpu_parallel_for((size_t)(items * j->cchunks), (size_t)(per >= CONV_CHUNK ? 1 : CONV_CHUNK / (per + 1)),
                            conv_pack_items, j);
    }
    const int64_t item_macs = j->mblk * (j->ck + 1) * PANEL;
    cg_cpu_parallel_for((size_t)(items * j->mblocks), (size_t)((CONV_TASK_MACS + item_macs - 1) / item_macs),
                        conv_items, j);
}

/* Depthwise: channel m of y from channel m / mg of x alone, a direct loop
 * over the output rows [r0, r1) of the n * M planes. Along the last axis,
 * the outputs whose whole window lies inside x (lo .. hi) take each tap
 * as one pass over the row, which the compiler vectorises at stride 1;
 * only the few outputs at the edges check bounds per tap. */
static void depthwise_row(const cg_conv_geom *g, const float *x, const float *w, float b, int64_t o0, int64_t o1,
                          float *y) {
    const int64_t s = g->s[2], d = g->d[2], pb = g->pb[2], n2 = g->in[2], k2n = g->k[2];
    /* first o2 with o2 * s - pb >= 0; first o2 whose last tap passes the end */
    int64_t lo = (pb + s - 1) / s, hi = n2 - (k2n - 1) * d + pb > 0 ? (n2 - (k2n - 1) * d + pb + s - 1) / s : 0;
    if (lo > g->out[2]) lo = g->out[2];
    if (hi > g->out[2]) hi = g->out[2];
    if (hi < lo) hi = lo;
    for (int64_t o2 = 0; o2 < g->out[2]; o2++) y[o2] = b;
    for (int64_t k0 = 0; k0 < g->k[0]; k0++) {
        const int64_t i0 = o0 * g->s[0] - g->pb[0] + k0 * g->d[0];
        if (i0 < 0 || i0 >= g->in[0]) continue;
        for (int64_t k1 = 0; k1 < g->k[1]; k1++) {
            const int64_t i1 = o1 * g->s[1] - g->pb[1] + k1 * g->d[1];
            if (i1 < 0 || i1 >= g->in[1]) continue;
            const float *xr = x + (i0 * g->in[1] + i1) * n2, *wr = w + (k0 * g->k[1] + k1) * k2n;
            for (int64_t k2 = 0; k2 < k2n; k2++) {
                const float wv = wr[k2];
                const float *xs = xr + k2 * d - pb;
                if (s == 1)
                    for (int64_t o2 = lo; o2 < hi; o2++) y[o2] += wv * xs[o2];
                else
                    for (int64_t o2 = lo; o2 < hi; o2++) y[o2] += wv * xs[o2 * s];
            }
            for (int64_t o2 = 0; o2 < g->out[2]; o2++) {
                if (o2 == lo) o2 = hi;
                if (o2 >= g->out[2]) break;
                for (int64_t k2 = 0; k2 < k2n; k2++) {
                    const int64_t i2 = o2 * s - pb + k2 * d;
                    if (i2 >= 0 && i2 < n2) y[o2] += xr[i2] * wr[k2];
                }
            }
        }
    }
}

/* Items [r0, r1): output rows, for planes too large for the lanes. */
static void depthwise_run(void *ctx, size_t r0, size_t r1) {
    const conv_job *j = ctx;
    const conv_dims *cd = j->cd;
    const cg_conv_geom *g = &cd->g;
    const int64_t in = cg_conv_in_size(g), kn = cg_conv_k_size(g), rows = g->out[0] * g->out[1];
    for (size_t r = r0; r < r1; r++) {
        const int64_t plane = (int64_t)r / rows, o1 = (int64_t)r % rows % g->out[1], o0 = (int64_t)r % rows / g->out[1];
        const int64_t m = plane % cd->m, ch = plane / cd->m * cd->c + m / cd->mg;
        const float *x = j->x + ch * in, *w = j->w + m * kn, b = j->bias ? j->bias[m] : 0.0f;
        depthwise_row(g, x, w, b, o0, o1, j->y + (int64_t)r * g->out[2]);
    }
}

/* GCC builds the lanes loop for AVX2 and for the baseline and picks one
 * when the library loads (ifunc); neither contracts a product and a sum
 * into one rounding (C11 mode), so both give the same bits. Not under
 * ThreadSanitizer, whose runtime is not up when the resolver runs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define DW_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define DW_CLONES
#endif

/* Small planes go DW_LANES at a time, one plane per lane of a vector: up
 * to DW_LANES_OUT outputs, DW_LANES_POS padded positions and DW_LANES_TAPS
 * taps. */
#define DW_LANES 8
#define DW_LANES_POS 16384
#define DW_LANES_TAPS 4096
typedef float dw_vec __attribute__((vector_size(DW_LANES * sizeof(float))));

static int dw_by_lanes(const cg_conv_geom *g) {
    return cg_conv_k_size(g) <= DW_LANES_TAPS && dw_extent_size(g, DW_LANES_POS) <= DW_LANES_POS;
}

static size_t dw_round64(size_t n) { return (n + 63) / 64 * 64; }

/* Bytes of one slot of the lanes path's workspace: the 8 padded planes,
 * the weights and each output's window start, each on 64 bytes. */
static size_t dw_lanes_slot(const cg_conv_geom *g) {
    return dw_round64((size_t)(dw_extent(g, 0) * dw_extent(g, 1) * dw_extent(g, 2)) * sizeof(dw_vec)) +
           dw_round64((size_t)cg_conv_k_size(g) * sizeof(dw_vec)) +
           dw_round64((size_t)cg_conv_out_size(g) * sizeof(int64_t));
}

/* The 8 planes xs[l] padded with zeros to the extents e into xt (whose
 * pads hold zeros): each position's 8 values gathered in registers and
 * stored whole, since a vector load of 8 scalar stores stalls on store
 * forwarding. */
static inline __attribute__((always_inline)) void dw_lanes_pad(const cg_conv_geom *g, const float *const *xs,
                                                               const int64_t *e, dw_vec *xt) {
    int64_t n[3];
    for (int a = 0; a < 3; a++) n[a] = e[a] > g->pb[a] ? (e[a] - g->pb[a] < g->in[a] ? e[a] - g->pb[a] : g->in[a]) : 0;
    for (int64_t i0 = 0; i0 < n[0]; i0++)
        for (int64_t i1 = 0; i1 < n[1]; i1++) {
            dw_vec *row = xt + ((i0 + g->pb[0]) * e[1] + i1 + g->pb[1]) * e[2] + g->pb[2];
            const int64_t at = (i0 * g->in[1] + i1) * g->in[2];
            for (int64_t i2 = 0; i2 < n[2]; i2++)
                row[i2] = (dw_vec){xs[0][at + i2], xs[1][at + i2], xs[2][at + i2], xs[3][at + i2],
                                   xs[4][at + i2], xs[5][at + i2], xs[6][at + i2], xs[7][at + i2]};
        }
}

/* Outputs per pass of the lanes loop: independent sums that overlap. */
#define DW_RUN 4

/* Outputs o .. o + nq of the planes of the nl lanes (nq a constant after
 * inlining), their windows from xt + base[q]. */
static inline __attribute__((always_inline)) void dw_lanes_outputs(const cg_conv_geom *g, const int64_t *e,
                                                                   const dw_vec *xt, const int64_t *base,
                                                                   const dw_vec *wt, const dw_vec *b, int64_t o,
                                                                   const int nq, float *y, int64_t p, int nl) {
    dw_vec acc[DW_RUN];
#pragma GCC unroll 4
    for (int q = 0; q < nq; q++) acc[q] = *b;
    const dw_vec *wv = wt;
    for (int64_t k0 = 0; k0 < g->k[0]; k0++)
        for (int64_t k1 = 0; k1 < g->k[1]; k1++) {
            const int64_t off = (k0 * g->d[0] * e[1] + k1 * g->d[1]) * e[2];
            for (int64_t k2 = 0; k2 < g->k[2]; k2++, wv++) {
                const int64_t t = off + k2 * g->d[2];
#pragma GCC unroll 4
                for (int q = 0; q < nq; q++) acc[q] += *wv * xt[base[q] + t];
            }
        }
#pragma GCC unroll 4
    for (int q = 0; q < nq; q++)
        for (int l = 0; l < nl; l++) y[l * p + o + q] = acc[q][l];
}

/* Output channels [m0, m0 + nl), nl <= DW_LANES, of a depthwise conv,
 * image by image: DW_RUN outputs at a time of all nl planes at once, each
 * its bias and then the taps in order, the pads adding zeros (the row path
 * and OpenCL skip them: the same sums but for the sign of a zero, or an
 * infinite weight over a pad). The weights go into lanes once for all
 * images, the pads' zeros once (each image overwrites only the inside). */
DW_CLONES static void depthwise_lanes(const conv_job *j, int64_t m0, int nl, char *slot) {
    const conv_dims *cd = j->cd;
    const cg_conv_geom *g = &cd->g;
    const int64_t e[3] = {dw_extent(g, 0), dw_extent(g, 1), dw_extent(g, 2)}, kn = cg_conv_k_size(g);
    const int64_t p = cg_conv_out_size(g);
    dw_vec *xt = (dw_vec *)slot, b = {0};
    dw_vec *wt = (dw_vec *)(slot + dw_round64((size_t)(e[0] * e[1] * e[2]) * sizeof(dw_vec)));
    int64_t *base = (int64_t *)((char *)wt + dw_round64((size_t)kn * sizeof(dw_vec)));
    /* lanes past nl repeat lane 0 (never stored) */
    const float *ws[DW_LANES], *xs[DW_LANES];
    for (int l = 0; l < DW_LANES; l++) {
        const int64_t m = m0 + (l < nl ? l : 0);
        ws[l] = j->w + m * kn;
        b[l] = j->bias ? j->bias[m] : 0.0f;
    }
    for (int64_t t = 0; t < kn; t++)
        wt[t] = (dw_vec){ws[0][t], ws[1][t], ws[2][t], ws[3][t], ws[4][t], ws[5][t], ws[6][t], ws[7][t]};
    memset(xt, 0, (size_t)(e[0] * e[1] * e[2]) * sizeof *xt);
    for (int64_t o0 = 0, o = 0; o0 < g->out[0]; o0++)
        for (int64_t o1 = 0; o1 < g->out[1]; o1++)
            for (int64_t o2 = 0; o2 < g->out[2]; o2++)
                base[o++] = (o0 * g->s[0] * e[1] + o1 * g->s[1]) * e[2] + o2 * g->s[2];
    for (int64_t n = 0; n < cd->n; n++) {
        for (int l = 0; l < DW_LANES; l++)
            xs[l] = j->x + (n * cd->c + (m0 + (l < nl ? l : 0)) / cd->mg) * cg_conv_in_size(g);
        dw_lanes_pad(g, xs, e, xt);
        float *y = j->y + (n * cd->m + m0) * p;
        int64_t o = 0;
        for (; o + DW_RUN <= p; o += DW_RUN) dw_lanes_outputs(g, e, xt, base + o, wt, &b, o, DW_RUN, y, p, nl);
        for (; o < p; o++) dw_lanes_outputs(g, e, xt, base + o, wt, &b, o, 1, y, p, nl);
    }
}

/* Items [b0, b1): blocks of DW_LANES output channels, on one slot. */
static void depthwise_lanes_run(void *ctx, size_t b0, size_t b1) {
    conv_job *j = ctx;
    const int s = conv_claim(j);
    for (size_t b = b0; b < b1; b++) {
        const int64_t m0 = (int64_t)b * DW_LANES;
        depthwise_lanes(j, m0, j->cd->m - m0 < DW_LANES ? (int)(j->cd->m - m0) : DW_LANES,
                        (char *)j->slots + (size_t)s * dw_lanes_slot(&j->cd->g));
    }
    atomic_store(&j->claim[s], 0);
}

/* A conv of at most 8 output channels (mobilenet's stem, 3 -> 8) over
 * short windows: the output channels in the lanes of a vector, each tap of
 * the window broadcast from the source (conv_source) and added in the
 * window's order after the bias (pads as zeros); no im2col, whose cost per
 * panel row outweighs the products of so few channels (with 16 channels
 * the panels are faster again). */
#define OUTL_MAX_M DW_LANES
#define OUTL_MAX_K 256

static int conv_by_outl(const conv_dims *cd) {
    int64_t pad;
    return cd->group == 1 && cd->m <= OUTL_MAX_M && cd->cg * cg_conv_k_size(&cd->g) <= OUTL_MAX_K &&
           !conv_pointwise(&cd->g) && conv_source(cd, &pad) != CONV_SRC_CHECKED;
}

/* Bytes of the weights in lanes and the taps' offsets. */
static size_t conv_outl_bytes(const conv_dims *cd) {
    const size_t ck = (size_t)(cd->cg * cg_conv_k_size(&cd->g)), nb = (size_t)(cd->m + DW_LANES - 1) / DW_LANES;
    return dw_round64(nb * ck * sizeof(dw_vec)) + dw_round64(ck * sizeof(int64_t));
}

/* Outputs o2 .. o2 + nq of one row (nq a constant after inlining) for a
 * block of nl channels, their windows from xr + o * s. */
static inline __attribute__((always_inline)) void conv_outl_run(const conv_job *j, const float *xr, const dw_vec *wv,
                                                                const dw_vec *b, int64_t o2, const int nq, float *y,
                                                                int nl) {
    const int64_t s = j->cd->g.s[2], p = j->p;
    dw_vec acc[DW_RUN];
#pragma GCC unroll 4
    for (int q = 0; q < nq; q++) acc[q] = *b;
    for (int64_t k = 0; k < j->ck; k++) {
        const float *xk = xr + j->toff[k] + o2 * s;
#pragma GCC unroll 4
        for (int q = 0; q < nq; q++) acc[q] += wv[k] * xk[q * s];
    }
#pragma GCC unroll 4
    for (int q = 0; q < nq; q++)
        for (int l = 0; l < nl; l++) y[l * p + o2 + q] = acc[q][l];
}

/* Items [r0, r1): output rows (n, o0, o1), all channels. */
DW_CLONES static void conv_outl_rows(void *ctx, size_t r0, size_t r1) {
    const conv_job *j = ctx;
    const conv_dims *cd = j->cd;
    const cg_conv_geom *g = &cd->g;
    const int64_t rows = g->out[0] * g->out[1], sch = j->se[0] * j->se[1] * j->se[2];
    for (size_t r = r0; r < r1; r++) {
        const int64_t n = (int64_t)r / rows, o1 = (int64_t)r % rows % g->out[1], o0 = (int64_t)r % rows / g->out[1];
        const float *xr = j->src + n * cd->c * sch + (o0 * g->s[0] * j->se[1] + o1 * g->s[1]) * j->se[2];
        for (int64_t m0 = 0; m0 < cd->m; m0 += DW_LANES) {
            const int nl = cd->m - m0 < DW_LANES ? (int)(cd->m - m0) : DW_LANES;
            const dw_vec *wv = (const dw_vec *)j->wl + m0 / DW_LANES * j->ck;
            dw_vec b = {0};
            for (int l = 0; l < nl; l++) b[l] = j->bias ? j->bias[m0 + l] : 0.0f;
            float *y = j->y + (n * cd->m + m0) * j->p + (o0 * g->out[1] + o1) * g->out[2];
            int64_t o2 = 0;
            for (; o2 + DW_RUN <= g->out[2]; o2 += DW_RUN) conv_outl_run(j, xr, wv, &b, o2, DW_RUN, y, nl);
            for (; o2 < g->out[2]; o2++) conv_outl_run(j, xr, wv, &b, o2, 1, y, nl);
        }
    }
}

/* The weights into lanes and the taps' offsets (in ws), x padded after
 * them if need be, then the rows over the pool. */
static void conv_outl(conv_job *j, void *ws) {
    const conv_dims *cd = j->cd;
    const cg_conv_geom *g = &cd->g;
    char *at = (char *)(((uintptr_t)ws + 63) / 64 * 64);
    dw_vec *wl = (dw_vec *)at;
    const int64_t nb = (cd->m + DW_LANES - 1) / DW_LANES;
    j->toff = (int64_t *)(at + dw_round64((size_t)(nb * j->ck) * sizeof(dw_vec)));
    conv_set_source(j, (float *)(at + conv_outl_bytes(cd)));
    for (int64_t k = 0; k < j->ck; k++)
        for (int64_t mb = 0; mb < nb; mb++) {
            dw_vec v = {0};
            for (int l = 0; l < DW_LANES && mb * DW_LANES + l < cd->m; l++)
                v[l] = j->w[(mb * DW_LANES + l) * j->ck + k];
            wl[mb * j->ck + k] = v;
        }
    j->wl = wl;
    const int64_t kn = cg_conv_k_size(g), sch = j->se[0] * j->se[1] * j->se[2];
    for (int64_t k = 0; k < j->ck; k++) {
        const int64_t c = k / kn, k0 = k % kn / (g->k[1] * g->k[2]), k1 = k % (g->k[1] * g->k[2]) / g->k[2];
        j->toff[k] = c * sch + (k0 * g->d[0] * j->se[1] + k1 * g->d[1]) * j->se[2] + k % g->k[2] * g->d[2];
    }
    const int64_t rows = cd->n * g->out[0] * g->out[1], work = g->out[2] * j->ck * cd->m;
    cg_cpu_parallel_for((size_t)rows, (size_t)(work >= CONV_CHUNK ? 1 : CONV_CHUNK / (work + 1)), conv_outl_rows, j);
}

static size_t conv_workspace(const cg_op_call *call) {
    conv_dims cd;
    conv_plan pl;
    int64_t pad;
    if (conv_dims_of(call, &cd) || conv_linear(&cd)) return 0;
    const int threads = cg_cpu_threads();
    if (conv_direct(&cd)) return dw_by_lanes(&cd.g) ? conv_slots_head(threads) + threads * dw_lanes_slot(&cd.g) : 0;
    conv_source(&cd, &pad);
    if (conv_by_outl(&cd)) return 64 + conv_outl_bytes(&cd) + (size_t)pad * sizeof(float);
    conv_plan_of(&cd, threads, &pl);
    const size_t floats = (size_t)threads * (size_t)conv_slot_floats(&cd) + (size_t)pad + (size_t)pl.shared_floats;
    return conv_slots_head(threads) + floats * sizeof(float);
}

static cg_op_status conv_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    conv_dims cd;
    if (conv_dims_of(call, &cd)) return CG_OP_ERROR;
    const int64_t p = cg_conv_out_size(&cd.g);
    conv_job j = {.cd = &cd,
                  .x = a->in[0],
                  .w = a->in[1],
                  .bias = call->n_inputs > 2 ? a->in[2] : NULL,
                  .y = a->out[0],
                  .ck = cd.cg * cg_conv_k_size(&cd.g),
                  .p = p};
    if (cd.n * cd.m * p == 0) return CG_OP_OK;
    if (conv_direct(&cd) && dw_by_lanes(&cd.g)) {
        conv_slots(&j, a->workspace, cg_cpu_threads());
        const int64_t blocks = (cd.m + DW_LANES - 1) / DW_LANES, work = cd.n * DW_LANES * p * cg_conv_k_size(&cd.g);
        cg_cpu_parallel_for((size_t)blocks, (size_t)(work >= CONV_CHUNK ? 1 : CONV_CHUNK / (work + 1)),
                            depthwise_lanes_run, &j);
        return CG_OP_OK;
    }
    if (conv_direct(&cd)) {
        const int64_t rows = cd.n * cd.m * cd.g.out[0] * cd.g.out[1];
        const int64_t work = cd.n * cd.m * p * cg_conv_k_size(&cd.g) / rows;
        cg_cpu_parallel_for((size_t)rows, (size_t)(work >= 8192 ? 1 : 8192 / (work + 1)), depthwise_run, &j);
        return CG_OP_OK;
    }
    if (conv_linear(&cd)) {
        for (int64_t i = 0; i < cd.n * cd.m; i++) j.y[i] = j.bias ? j.bias[i % cd.m] : 0.0f;
        cg_cpu_sgemm(0, 1, cd.n, cd.m, cd.c, 1.0f, j.x, cd.c, j.w, cd.c, j.bias ? 1.0f : 0.0f, j.y, cd.m);
        return CG_OP_OK;
    }
    if (conv_by_outl(&cd)) conv_outl(&j, a->workspace);
    else conv_gemm(&j, a->workspace);
    return CG_OP_OK;
}

/* ---- OpenCL ---- */

static cg_op_status conv_cl(const cg_kernel_args *a) {
    static const char name[] = "conv_direct";
    const cg_op_call *call = a->call;
    conv_dims cd;
    if (conv_dims_of(call, &cd)) return CG_OP_ERROR;
    const int64_t total = cg_desc_numel(&call->outputs[0]);
    if (total == 0) return CG_OP_OK;
    const int wide = total > INT32_MAX || cg_desc_numel(&call->inputs[0]) > INT32_MAX;
    const int has_b = call->n_inputs > 2;
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_conv, name, wide, 0, has_b ? "-DHAS_BIAS=1" : NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem x = (cl_mem)a->in[0], w = (cl_mem)a->in[1], b = has_b ? (cl_mem)a->in[2] : (cl_mem)a->in[1];
    cl_mem y = (cl_mem)a->out[0];
    cl_int c = (cl_int)cd.c, m = (cl_int)cd.m, cg = (cl_int)cd.cg, mg = (cl_int)cd.mg;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(x), CG_OPS_CL_ARG(w), CG_OPS_CL_ARG(b),  CG_OPS_CL_ARG(y),
                                     CG_OPS_CL_ARG(c), CG_OPS_CL_ARG(m), CG_OPS_CL_ARG(cg), CG_OPS_CL_ARG(mg)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v) || cg_conv_cl_geom_args(a, k, name, 8, &cd.g, total))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, name, total, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* ---- conformance ---- */

/* x [N, C, spatial...] and w [M, C / group, kernel...] of 1 to 3 axes. */
static const struct {
    int nsp;
    int64_t n, c, m, sp[3], k[3];
    int bias;
    const char *attrs;
} conv_cases[] = {
    {1, 2, 3, 4, {9}, {3}, 1, NULL},
    {1, 1, 4, 6, {11}, {3}, 0, "strides: [2], dilations: [2], pads: [1, 2], group: 2"},
    {2, 2, 3, 5, {7, 6}, {3, 3}, 1, "pads: [1, 1, 1, 1]"},
    {2, 1, 4, 4, {8, 9}, {3, 2}, 1, "strides: [2, 3], pads: [0, 1, 2, 0]"},
    {2, 1, 6, 6, {9, 9}, {3, 3}, 1, "group: 6, pads: [1, 1, 1, 1], strides: [2, 2]"},   /* depthwise */
    {2, 2, 4, 8, {6, 5}, {3, 3}, 0, "group: 4, dilations: [2, 1], pads: [2, 1, 2, 1]"}, /* multiplier 2 */
    {2, 1, 8, 4, {5, 5}, {1, 1}, 1, NULL},                                              /* pointwise */
    {2, 1, 3, 4, {7, 8}, {3, 3}, 1, "auto_pad: \"same_lower\", strides: [2, 2]"},
    {2, 1, 2, 3, {6, 7}, {2, 3}, 0, "auto_pad: \"valid\", strides: [1, 2]"},
    {3, 1, 2, 3, {5, 6, 4}, {3, 2, 3}, 1, "pads: [1, 0, 1, 1, 1, 0], strides: [1, 2, 1]"},
    {2, 1, 64, 40, {20, 20}, {3, 3}, 1, "pads: [1, 1, 1, 1]"}, /* a block of several GEMM rows */
    /* the depthwise loop's paths: planes too large for the lanes (rows,
     * edges checked) at stride 2 and at uneven pads; the lanes at stride 1
     * and 2, one whose windows all reach a pad, mixed strides; one channel
     * with many outputs (im2col) */
    {2, 1, 2, 2, {270, 70}, {3, 3}, 1, "group: 2, pads: [1, 1, 1, 1], strides: [2, 2]"},
    {2, 1, 2, 2, {132, 130}, {3, 3}, 0, "group: 2, pads: [1, 2, 1, 0]"},
    {1, 2, 3, 3, {40}, {5}, 1, "group: 3, pads: [2, 2]"},
    {2, 2, 3, 3, {5, 4}, {5, 5}, 1, "group: 3, pads: [2, 2, 2, 2]"},
    {2, 1, 2, 2, {9, 9}, {3, 3}, 1, "group: 2, strides: [2, 2], pads: [0, 1, 1, 0]"},
    {2, 1, 2, 2, {9, 9}, {3, 3}, 1, "group: 2, strides: [1, 2], pads: [1, 1, 1, 1]"},
    {1, 1, 1, 16, {64}, {8}, 1, "strides: [4]"},
    /* the lanes: a last block of 5 channels, mobilenet's 2x2 planes under a
     * 5x5 kernel, larger planes (2-D and 1-D), mixed strides */
    {2, 3, 5, 5, {4, 4}, {3, 3}, 1, "group: 5, pads: [1, 1, 1, 1]"},
    {2, 3, 10, 10, {2, 2}, {5, 5}, 1, "group: 10, pads: [2, 2, 2, 2]"},
    {2, 1, 3, 3, {12, 12}, {3, 3}, 1, "group: 3, pads: [1, 1, 1, 1]"},
    {1, 1, 2, 2, {100}, {3}, 0, "group: 2, pads: [1, 1]"},
    {2, 1, 2, 2, {20, 20}, {3, 3}, 1, "group: 2, strides: [1, 2], pads: [1, 1, 1, 1]"},
    /* few panels for many output channels (with 2 or more threads): blocks
     * of channels share panels packed once, also across images and groups */
    {2, 1, 32, 64, {4, 4}, {3, 3}, 1, "pads: [1, 1, 1, 1]"},
    {2, 2, 32, 64, {3, 3}, {3, 3}, 1, "group: 2, pads: [1, 1, 1, 1]"},
    /* 1x1 planes: a linear layer */
    {2, 3, 8, 5, {1, 1}, {1, 1}, 1, NULL},
    {1, 2, 20, 4, {1}, {1}, 0, NULL},
    /* pads too large to copy x padded: the panels check bounds */
    {1, 1, 2, 3, {5}, {3}, 1, "pads: [40000, 39990], strides: [3]"},
    {2, 2, 2, 2, {3, 4}, {2, 2}, 0, "pads: [300, 1, 2, 300], dilations: [2, 1]"},
};
#define N_CONV ((int32_t)(sizeof conv_cases / sizeof conv_cases[0]))

static int32_t conv_conform(int32_t index, cg_conform_case *c) {
    /* bad shapes and attributes fail in infer, which tests/ops checks */
    if (index < 0 || index >= N_CONV) return 0;
    const int i = index, nsp = conv_cases[i].nsp;
    int64_t group = 1;
    const char *gs = conv_cases[i].attrs ? strstr(conv_cases[i].attrs, "group: ") : NULL;
    if (gs) group = strtoll(gs + 7, NULL, 10);
    c->n_inputs = 2 + conv_cases[i].bias, c->n_outputs = 1, c->attrs = conv_cases[i].attrs;
    cg_tensor_desc *x = &c->inputs[0], *w = &c->inputs[1];
    *x = (cg_tensor_desc){CG_F32, 2 + nsp, {conv_cases[i].n, conv_cases[i].c}};
    *w = (cg_tensor_desc){CG_F32, 2 + nsp, {conv_cases[i].m, conv_cases[i].c / group}};
    for (int a = 0; a < nsp; a++) x->dims[2 + a] = conv_cases[i].sp[a], w->dims[2 + a] = conv_cases[i].k[a];
    c->inputs[2] = (cg_tensor_desc){CG_F32, 1, {conv_cases[i].m}};
    for (int k = 0; k < 3; k++) c->lo[k] = -1, c->hi[k] = 1;
    return 1;
}

static const char *const conv_inputs[] = {"x", "w", "bias", NULL};
static const cg_kernel_def conv_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = conv_cpu, .workspace = conv_workspace),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = conv_cl),
};
const cg_op_def cg_op_conv =
    CG_OP(.name = "conv",
          .doc = "y[n, m, o...] = bias[m] + sum over c, k of x[n, g * C/group + c, o * strides - pads_begin + "
                 "k * dilations] * w[m, c, k...], g = m / (M / group), zeros outside x (ONNX Conv, "
                 "torch.nn.Conv1d/2d/3d): x f32 [N, C, spatial...] with 1 to 3 spatial axes, w f32 [M, C / group, "
                 "kernel...], bias f32 [M] optional. Output [N, M, out...], out = floor((in + pads - dilation * "
                 "(kernel - 1) - 1) / stride) + 1 (auto_pad same: ceil(in / stride)). Spatial dims may be symbolic.",
          .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .input_names = conv_inputs,
          CG_ATTRS(conv_attrs), .infer = conv_infer, CG_KERNELS(conv_kernels), .conform_case = conv_conform);
