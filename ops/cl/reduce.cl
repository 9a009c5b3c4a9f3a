/* Kernels of ops/reduce.c: reduce_sum / reduce_mean / reduce_max over a set
 * of axes, argmax along one axis, topk along the last axis (OpenCL C 1.2).
 *
 * IDX is int unless the host builds with -DIDX=long for tensors of 2^31
 * elements or more. */
#pragma OPENCL FP_CONTRACT OFF

/* ---- reduce_sum / reduce_mean / reduce_max ----
 *
 * The host collapses x's dims as the CPU kernel does (size-1 dims dropped,
 * neighbours of the same kind merged), so kept and reduced dims alternate and
 * there are at most 4 of each. Kept dims (sizes kd, element strides ks in x)
 * and reduced dims (rd, rs) come innermost first; unused entries have size 1
 * and stride 0. Output element g is the kept dims' row-major index, which is
 * its position in y. kind: 0 sum, 1 mean (sum times `scale` = 1 / count, or
 * NaN when count is 0), 2 max (NaN propagates), 3 product.
 *
 * Sums use Kahan compensation in float per work-item (the CPU accumulates in
 * double) so that long reductions stay well within tolerance. */

#define RED_MAX 2
#define RED_PROD 3

inline float red_max(float m, float v) { return (v > m || v != v) ? v : m; }

#define OFF_STEP(c, d, st)                                                      \
    if (n > c) {                                                                \
        IDX dd = (IDX)d.s##c, q = r / dd;                                       \
        off += (r - q * dd) * (IDX)st.s##c;                                     \
        r = q;                                                                  \
    }

/* Offset in x of index r over n (<= 4) dims, innermost first. */
inline IDX red_offset(IDX r, int n, long4 d, long4 st) {
    if (n == 1) return r * (IDX)st.s0;
    IDX off = 0;
    OFF_STEP(0, d, st) OFF_STEP(1, d, st) OFF_STEP(2, d, st) OFF_STEP(3, d, st)
    return off;
}

/* Kahan step: adds v to (s, c). Once the sum is infinite or NaN the
 * compensation is dropped (inf - inf would turn -inf + 1 into NaN), so
 * infinities and NaN come out as in a plain sum. */
#define KAHAN_ADD(s, c, v)                                                      \
    do {                                                                        \
        float ky_ = (v) - (c), kt_ = (s) + ky_;                                 \
        (c) = isfinite(kt_) ? (kt_ - (s)) - ky_ : 0.0f;                         \
        (s) = kt_;                                                              \
    } while (0)

/* One work-group per output element (launched with exactly n_out groups);
 * the group's work-items stride over the reduced elements, then combine in
 * local memory (`red`, one float per work-item; power-of-two group size). */
#if CG_WANT(reduce_group)
__kernel void reduce_group(__global const float *x, __global float *y, long n_out, long count_,
                           int nk, long4 kd, long4 ks, int nr, long4 rd, long4 rs, int kind,
                           float scale, __local float *red) {
    const IDX g = (IDX)get_group_id(0);
    /* exactly n_out groups: no early return (softmax.cl says why) */
    const IDX lid = (IDX)get_local_id(0), wg = (IDX)get_local_size(0), count = (IDX)count_;
    const IDX base = nk > 0 ? red_offset(g, nk, kd, ks) : 0;
    float acc;
    if (kind == RED_MAX) {
        acc = -INFINITY;
        for (IDX r = lid; r < count; r += wg) acc = red_max(acc, x[base + red_offset(r, nr, rd, rs)]);
    } else if (kind == RED_PROD) {
        acc = 1.0f;
        for (IDX r = lid; r < count; r += wg) acc *= x[base + red_offset(r, nr, rd, rs)];
    } else {
        float c = 0.0f;
        acc = 0.0f;
        for (IDX r = lid; r < count; r += wg) KAHAN_ADD(acc, c, x[base + red_offset(r, nr, rd, rs)]);
    }
    red[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (IDX h = wg / 2; h > 0; h /= 2) {
        if (lid < h) red[lid] = kind == RED_MAX ? red_max(red[lid], red[lid + h])
                                : kind == RED_PROD ? red[lid] * red[lid + h] : red[lid] + red[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) y[g] = kind == RED_MAX ? red[0] : kind == 1 ? red[0] * scale : red[0];
}
#endif

/* One work-item per output element, walking the reduced dims with nested
 * loops; used when the innermost dim is kept (neighbouring work-items read
 * neighbouring addresses) or when groups are short. */
#if CG_WANT(reduce_item)
__kernel void reduce_item(__global const float *x, __global float *y, long n_out, int nk,
                          long4 kd, long4 ks, long4 rd, long4 rs, int kind, float scale) {
    const IDX g = (IDX)get_global_id(0);
    if (g >= (IDX)n_out) return;
    const IDX base = nk > 0 ? red_offset(g, nk, kd, ks) : 0;
    const IDX d0 = (IDX)rd.s0, d1 = (IDX)rd.s1, d2 = (IDX)rd.s2, d3 = (IDX)rd.s3;
    const IDX s0 = (IDX)rs.s0, s1 = (IDX)rs.s1, s2 = (IDX)rs.s2, s3 = (IDX)rs.s3;
    float acc = kind == RED_MAX ? -INFINITY : kind == RED_PROD ? 1.0f : 0.0f, c = 0.0f;
    for (IDX i3 = 0; i3 < d3; i3++)
        for (IDX i2 = 0; i2 < d2; i2++)
            for (IDX i1 = 0; i1 < d1; i1++) {
                __global const float *xr = x + base + i3 * s3 + i2 * s2 + i1 * s1;
                if (kind == RED_MAX)
                    for (IDX i0 = 0; i0 < d0; i0++) acc = red_max(acc, xr[i0 * s0]);
                else if (kind == RED_PROD)
                    for (IDX i0 = 0; i0 < d0; i0++) acc *= xr[i0 * s0];
                else
                    for (IDX i0 = 0; i0 < d0; i0++) KAHAN_ADD(acc, c, xr[i0 * s0]);
            }
    y[g] = kind == 1 ? acc * scale : acc;
}
#endif

/* ---- argmax ----
 *
 * Order: NaN above every number, then by value; ties keep the lowest index,
 * so the first NaN wins, or with `last` the highest (the last NaN wins). x
 * is [outer, n, inner]; a slice is s = o * inner + i and its output is
 * y[s]. */

inline int f32_greater(float a, float b) { return (a != a) ? (b == b) : (a > b); }

/* Whether v at a later index replaces the best bv so far. */
inline int argmax_takes(float v, float bv, int last) { return last ? !f32_greater(bv, v) : f32_greater(v, bv); }

/* One work-group per slice (exactly `slices` groups): each work-item keeps
 * its best (value, index), then the group combines them in local memory. */
#if CG_WANT(argmax_group)
__kernel void argmax_group(__global const float *x, __global int *y, long slices, long n_,
                           long inner_, __local float *rv, __local int *ri, int last) {
    const IDX s = (IDX)get_group_id(0);
    /* exactly `slices` groups: no early return (softmax.cl says why) */
    const IDX lid = (IDX)get_local_id(0), wg = (IDX)get_local_size(0);
    const IDX n = (IDX)n_, inner = (IDX)inner_, o = s / inner, in = s - o * inner;
    __global const float *xs = x + o * n * inner + in;
    float bv = 0.0f;
    int bi = -1; /* -1: no element seen */
    for (IDX j = lid; j < n; j += wg) {
        float v = xs[j * inner];
        if (bi < 0 || argmax_takes(v, bv, last)) {
            bv = v;
            bi = (int)j;
        }
    }
    rv[lid] = bv;
    ri[lid] = bi;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (IDX h = wg / 2; h > 0; h /= 2) {
        if (lid < h) {
            float av = rv[lid], ov = rv[lid + h];
            int ai = ri[lid], oi = ri[lid + h];
            if (oi >= 0 && (ai < 0 || f32_greater(ov, av) || (!f32_greater(av, ov) && (last ? oi > ai : oi < ai)))) {
                rv[lid] = ov;
                ri[lid] = oi;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) y[s] = ri[0];
}
#endif

/* One work-item per slice, scanning the axis in order. */
#if CG_WANT(argmax_item)
__kernel void argmax_item(__global const float *x, __global int *y, long slices, long n_,
                          long inner_, int last) {
    const IDX s = (IDX)get_global_id(0);
    if (s >= (IDX)slices) return;
    const IDX n = (IDX)n_, inner = (IDX)inner_, o = s / inner, in = s - o * inner;
    __global const float *xs = x + o * n * inner + in;
    float bv = xs[0];
    int bi = 0;
    for (IDX j = 1; j < n; j++) {
        float v = xs[j * inner];
        if (argmax_takes(v, bv, last)) {
            bv = v;
            bi = (int)j;
        }
    }
    y[s] = bi;
}
#endif

/* ---- topk ----
 *
 * Rank selection: element j of a row ranks after exactly `rank` elements of
 * the strict total order "larger value first (NaN largest), then lower
 * index"; if rank < k it goes to output position rank. Ranks of a row are a
 * permutation, so every output position is written exactly once. One
 * work-item per element; the count stops once it reaches k. */
#if CG_WANT(topk_rank)
__kernel void topk_rank(__global const float *x, __global float *vals, __global int *idx,
                        long total, long n_, long k_) {
    const IDX gid = (IDX)get_global_id(0);
    if (gid >= (IDX)total) return;
    const IDX n = (IDX)n_, k = (IDX)k_, row = gid / n, j = gid - row * n;
    __global const float *xr = x + row * n;
    const float v = xr[j];
    IDX rank = 0;
    for (IDX i = 0; i < n && rank < k; i++) {
        float u = xr[i];
        if (f32_greater(u, v) || (i < j && !f32_greater(v, u))) rank++;
    }
    if (rank < k) {
        vals[row * k + rank] = v;
        idx[row * k + rank] = (int)j;
    }
}
#endif

/* ---- cumsum, cumprod ----
 * Running sums (products) along one axis of x viewed as [outer, len, inner]: one
 * work-item per line, in order along the axis (from its end when
 * reverse), so that the sums round as the CPU kernel's; exclusive leaves
 * the element itself out. Built with -DCS_T=<type> -DCS_U=<its unsigned
 * type, CS_T for float> (integers wrap). In place is fine. */
#ifndef CS_T
#define CS_T float
#define CS_U float
#endif
/* one line in order; INIT and OP: 0 and + (cumsum) or 1 and * (cumprod) */
#define CUM_LINE(INIT, OP)                                                          \
    IDX i = (IDX)get_global_id(0);                                                  \
    if (i >= n) return;                                                             \
    IDX o = i / (IDX)inner, c = i - o * (IDX)inner;                                 \
    IDX p = (o * (IDX)len + (reverse ? (IDX)len - 1 : 0)) * (IDX)inner + c;         \
    IDX step = reverse ? -(IDX)inner : (IDX)inner;                                  \
    CS_U acc = INIT;                                                                \
    for (long j = 0; j < len; j++, p += step) {                                     \
        CS_U v = (CS_U)x[p];                                                        \
        if (exclusive) y[p] = (CS_T)acc;                                            \
        acc = acc OP v;                                                             \
        if (!exclusive) y[p] = (CS_T)acc;                                           \
    }
#if CG_WANT(cumsum)
__kernel void cumsum(__global const CS_T *x, __global CS_T *y, long len, long inner, int exclusive, int reverse,
                     IDX n) {
    CUM_LINE(0, +)
}
#endif
#if CG_WANT(cumprod)
__kernel void cumprod(__global const CS_T *x, __global CS_T *y, long len, long inner, int exclusive, int reverse,
                      IDX n) {
    CUM_LINE(1, *)
}
#endif
