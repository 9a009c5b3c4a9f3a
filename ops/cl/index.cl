/* pad, gather_nd and scatter_nd: elements of any dtype moved as the
 * unsigned type T of their size (-DT=uchar, ushort, uint or ulong; uint by
 * default). Dims and strides come innermost first in long8 vectors. Index
 * reads and scatter updates are cl/index_common.cl's, put in front of this
 * source when it is embedded.
 *
 * Build options: -DIDX=int or -DIDX=long (index type, long when a tensor
 * has 2^31 elements or more), -DT, and each kernel's own below. */

/* pad_nd: one work-item per output element. Along each axis the kept part
 * of x, [cs, cs + cn), starts at output position ob; a position outside it
 * maps by -DPAD_MODE (0 constant: the value, from val[0] with
 * -DPAD_VALUE=1, else 0; 1 reflect; 2 edge; 3 wrap) as ops/pad.c's
 * source_of does. */
#ifndef PAD_MODE
#define PAD_MODE 0
#endif
#ifndef PAD_VALUE
#define PAD_VALUE 0
#endif
#if CG_WANT(pad_nd)
inline long pad_source(long j, long n) {
    if (j >= 0 && j < n) return j;
#if PAD_MODE == 1
    if (n == 1) return 0;
    const long period = 2 * (n - 1);
    j %= period;
    if (j < 0) j += period;
    return j >= n ? period - j : j;
#elif PAD_MODE == 2
    return j < 0 ? 0 : n - 1;
#elif PAD_MODE == 3
    j %= n;
    return j < 0 ? j + n : j;
#else
    return -1;
#endif
}
#define PD_STEP(c)                                                          \
    if (nd > c) {                                                           \
        IDX d = (IDX)od.s##c, q = r / d;                                    \
        long j = pad_source((long)(r - q * d) - ob.s##c, cn.s##c);          \
        if (j < 0) inside = 0;                                              \
        else off += (IDX)(cs.s##c + j) * (IDX)st.s##c;                      \
        r = q;                                                              \
    }
__kernel void pad_nd(__global const T *src, __global const T *val, __global T *dst, long n, int nd, long8 od,
                     long8 st, long8 cs, long8 cn, long8 ob) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    IDX r = i, off = 0;
    int inside = 1;
    PD_STEP(0) PD_STEP(1) PD_STEP(2) PD_STEP(3) PD_STEP(4) PD_STEP(5) PD_STEP(6) PD_STEP(7)
#if PAD_VALUE
    dst[i] = inside ? src[off] : val[0];
#else
    (void)val;
    dst[i] = inside ? src[off] : (T)0;
#endif
}
#endif

/* The offset in x of index tuple t (k values from idx[t * k]), dims xd and
 * strides xs of the indexed axes; negative values count from the end. An
 * invalid value is recorded in the check words (input 1) when `report`,
 * and the tuple's offset is -1. */
#if CG_WANT(gather_nd) || CG_WANT(scatter_nd)
#define ND_STEP(c)                                                                     \
    if (k > c) {                                                                       \
        const IDX p = t * (IDX)k + c;                                                  \
        const long v = cg_index_wrap(idx[p], xd.s##c, report, (long)p, check, word);   \
        if (v < 0) return -1;                                                          \
        off += (IDX)v * (IDX)xs.s##c;                                                  \
    }
inline IDX nd_offset(__global const long *idx, IDX t, int k, long8 xd, long8 xs, int report, __global int *check,
                     int word) {
    IDX off = 0;
    ND_STEP(0) ND_STEP(1) ND_STEP(2) ND_STEP(3) ND_STEP(4) ND_STEP(5) ND_STEP(6) ND_STEP(7)
    return off;
}
#endif

/* gather_nd: one work-item per output element i = (tuple t, element c of
 * the slice of `inner` elements); tuples of batch b = t / per_batch read x
 * from b * bstride. An invalid tuple gives zeros. */
#if CG_WANT(gather_nd)
__kernel void gather_nd(__global const T *src, __global const long *idx, __global T *dst, long n, long inner,
                        long per_batch, long bstride, int k, long8 xd, long8 xs, __global int *check, int word) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    const IDX t = i / (IDX)inner, c = i - t * (IDX)inner;
    const IDX off = nd_offset(idx, t, k, xd, xs, c == 0, check, word);
    dst[i] = off < 0 ? (T)0 : src[(t / (IDX)per_batch) * (IDX)bstride + off + c];
}
#endif

/* scatter_nd: after dst holds a copy of x, one work-item per element c of
 * the slices walks all `tuples` index tuples in order and writes or
 * combines (cg_scatter_update, -DSC_RED) update element c of each tuple's
 * slice: every output element sees its updates in index order, as on the
 * CPU. An invalid tuple is skipped. */
#if CG_WANT(scatter_nd)
__kernel void scatter_nd(__global const long *idx, __global const T *up, __global T *dst, long tuples, long inner,
                         int k, long8 xd, long8 xs, __global int *check, int word) {
    IDX c = (IDX)get_global_id(0);
    if (c >= (IDX)inner) return;
    for (IDX t = 0; t < (IDX)tuples; t++) {
        const IDX off = nd_offset(idx, t, k, xd, xs, c == 0, check, word);
        if (off < 0) continue;
        cg_scatter_update(dst, up, off + c, t * (IDX)inner + c);
    }
}
#endif
