/* Kernels of ops/softmax.c: softmax and log_softmax along an axis with an
 * optional broadcast i32 mask, and length_mask (OpenCL C 1.2).
 *
 * x is seen as [outer, n, inner] with the normalised axis in the middle; a
 * slice is one (outer, inner) pair, s = o * inner + i. The mask, when
 * present, is addressed through strides over x's dims (0 where it
 * broadcasts): its offset for a slice decomposes o over the dims before the
 * axis (od / oms, innermost first) and i over the dims after it (id / ims);
 * `mst` is its stride along the axis. IDX is int unless the host builds with
 * -DIDX=long for tensors of 2^31 elements or more.
 *
 * Semantics match the CPU kernel: masked positions are left out of the max
 * and the sum and give 0 (softmax) or -inf (log_softmax); a slice without a
 * valid position, or whose valid entries are all -inf, gives all 0 / -inf; a
 * NaN makes the max NaN and so the valid outputs of its slice NaN. softmax
 * scales masked zeros by 1 / sum too, so where the sum is NaN (a NaN, or an
 * inf among the valid entries) they become NaN as on the CPU. Sums are
 * accumulated in float (the CPU uses double), which stays within the default
 * conformance tolerance. */
#pragma OPENCL FP_CONTRACT OFF

/* Max that keeps a NaN once seen. */
inline float sm_max(float m, float v) { return (v > m || v != v) ? v : m; }

#define MS_STEP(c, r, d, st)                                                    \
    if (nd > c) {                                                               \
        IDX dd = (IDX)d.s##c, q = r / dd;                                       \
        off += (r - q * dd) * (IDX)st.s##c;                                     \
        r = q;                                                                  \
    }

/* Mask offset of an index r over up to 7 dims (sizes d, strides st,
 * innermost first). */
inline IDX sm_mask_part(IDX r, int nd, long8 d, long8 st) {
    IDX off = 0;
    MS_STEP(0, r, d, st) MS_STEP(1, r, d, st) MS_STEP(2, r, d, st) MS_STEP(3, r, d, st)
    MS_STEP(4, r, d, st) MS_STEP(5, r, d, st) MS_STEP(6, r, d, st)
    return off;
}

/*
 * One work-group per slice: the group reduces the max, then the sum of
 * exponentials, in local memory (`red`, one float per work-item; the
 * work-group size is a power of two), then writes the slice. Launched with
 * exactly `slices` groups.
 */
#if CG_WANT(softmax_wg)
/* No early return anywhere: PoCL 3.1 miscompiled this kernel's earlier
 * form (a uniform return before the barriers, another between them) into
 * work-items that stored one element past the slice's end (y[slices * n] on
 * [2, 4, 100]: heap corruption, or a neighbouring tensor overwritten in a
 * plan's arena). Every work-item passes every barrier on one path. */
__kernel void softmax_wg(__global const float *x, __global float *y, __global const int *mask,
                         int has_mask, long slices, long n_, long inner_, long mst_, int ond,
                         long8 od, long8 oms, int ind, long8 id, long8 ims, int log_out,
                         __local float *red) {
    const IDX s = (IDX)get_group_id(0); /* launched with exactly `slices` groups */
    const IDX lid = (IDX)get_local_id(0), wg = (IDX)get_local_size(0);
    const IDX n = (IDX)n_, inner = (IDX)inner_, mst = (IDX)mst_;
    const IDX o = s / inner, in = s - o * inner;
    const IDX base = o * n * inner + in;
    __global const int *m = mask;
    if (has_mask) m += sm_mask_part(o, ond, od, oms) + sm_mask_part(in, ind, id, ims);

    float mx = -INFINITY;
    for (IDX j = lid; j < n; j += wg)
        if (!has_mask || m[j * mst]) mx = sm_max(mx, x[base + j * inner]);
    red[lid] = mx;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (IDX h = wg / 2; h > 0; h /= 2) {
        if (lid < h) red[lid] = sm_max(red[lid], red[lid + h]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    mx = red[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* everyone has read red[0] before it is reused */

    /* nothing valid, or every valid entry is -inf: the slice is all fill */
    const int empty = mx == -INFINITY;
    float sum = 0.0f;
    for (IDX j = lid; !empty && j < n; j += wg)
        if (!has_mask || m[j * mst]) sum += exp(x[base + j * inner] - mx);
    red[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (IDX h = wg / 2; h > 0; h /= 2) {
        if (lid < h) red[lid] += red[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    sum = red[0];

    if (empty) {
        const float fill = log_out ? -INFINITY : 0.0f;
        for (IDX j = lid; j < n; j += wg) y[base + j * inner] = fill;
    } else if (log_out) {
        const float lse = mx + cg_log(sum);
        for (IDX j = lid; j < n; j += wg)
            y[base + j * inner] =
                (!has_mask || m[j * mst]) ? x[base + j * inner] - lse : -INFINITY;
    } else {
        const float inv = 1.0f / sum;
        for (IDX j = lid; j < n; j += wg)
            y[base + j * inner] =
                ((!has_mask || m[j * mst]) ? exp(x[base + j * inner] - mx) : 0.0f) * inv;
    }
}
#endif

/*
 * One work-item per slice, for short slices or many slices along an inner
 * axis (neighbouring work-items then read neighbouring addresses).
 */
#if CG_WANT(softmax_item)
__kernel void softmax_item(__global const float *x, __global float *y, __global const int *mask,
                           int has_mask, long slices, long n_, long inner_, long mst_, int ond,
                           long8 od, long8 oms, int ind, long8 id, long8 ims, int log_out) {
    const IDX s = (IDX)get_global_id(0);
    if (s >= (IDX)slices) return;
    const IDX n = (IDX)n_, inner = (IDX)inner_, mst = (IDX)mst_;
    const IDX o = s / inner, in = s - o * inner;
    const IDX base = o * n * inner + in;
    __global const int *m = mask;
    if (has_mask) m += sm_mask_part(o, ond, od, oms) + sm_mask_part(in, ind, id, ims);

    float mx = -INFINITY;
    for (IDX j = 0; j < n; j++)
        if (!has_mask || m[j * mst]) mx = sm_max(mx, x[base + j * inner]);
    if (mx == -INFINITY) {
        const float fill = log_out ? -INFINITY : 0.0f;
        for (IDX j = 0; j < n; j++) y[base + j * inner] = fill;
        return;
    }
    float sum = 0.0f;
    for (IDX j = 0; j < n; j++)
        if (!has_mask || m[j * mst]) sum += exp(x[base + j * inner] - mx);
    if (log_out) {
        const float lse = mx + cg_log(sum);
        for (IDX j = 0; j < n; j++)
            y[base + j * inner] =
                (!has_mask || m[j * mst]) ? x[base + j * inner] - lse : -INFINITY;
    } else {
        const float inv = 1.0f / sum;
        for (IDX j = 0; j < n; j++)
            y[base + j * inner] =
                ((!has_mask || m[j * mst]) ? exp(x[base + j * inner] - mx) : 0.0f) * inv;
    }
}
#endif

/* out[b, s] = s < lengths[b] for out [B, S]. A length outside [0, S] is not
 * reported here (the CPU kernel fails on it): below 0 gives a row of 0s,
 * above S a row of 1s. */
#if CG_WANT(length_mask)
__kernel void length_mask(__global const int *lengths, __global int *out, long total, long s_) {
    const IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)total) return;
    const IDX s = (IDX)s_, b = i / s, j = i - b * s;
    out[i] = (long)j < (long)lengths[b] ? 1 : 0;
}
#endif
