/* Data movement of elements of any dtype, copied as the unsigned type T of
 * their size (-DT=uchar, ushort, uint or ulong; uint by default): block
 * copies for concat and slice, and strided copies for transpose.
 *
 * Build options: -DIDX=int or -DIDX=long (index type, long when a tensor
 * has 2^31 elements or more), -DIDX8=int8 or long8 to match; for
 * transpose_tiled also -DTILE=<tile side> -DROWS=<rows per pass>. */

#ifndef T
#define T uint
#endif

/* dst[dst_off + r * dst_stride + c] = src[src_off + r * src_stride + c] for
 * r < rows, c < cols; one work-item per element of the rows x cols block. */
#if CG_WANT(copy_rows)
__kernel void copy_rows(__global const T *src, IDX src_off, IDX src_stride,
                        __global T *dst, IDX dst_off, IDX dst_stride, IDX rows, IDX cols) {
    IDX i = (IDX)get_global_id(0);
    if (i >= rows * cols) return;
    IDX r = i / cols, c = i - r * cols;
    dst[dst_off + r * dst_stride + c] = src[src_off + r * src_stride + c];
}
#endif

/* out[i] = src[sum_k idx_k * stride_k], where (idx_0, ..., idx_{nd-1}) is
 * the row-major index of i in the output dims `n`; `st` are the input
 * strides of the output dims. */
#if CG_WANT(transpose_any)
__kernel void transpose_any(__global const T *src, __global T *dst, IDX total, int nd,
                            IDX8 n, IDX8 st) {
    IDX i = (IDX)get_global_id(0);
    if (i >= total) return;
    IDX rem = i, off = 0;
    for (int k = nd - 1; k >= 0; k--) {
        IDX d = cg_vec_at(n, k);
        IDX q = rem / d;
        off += (rem - q * d) * cg_vec_at(st, k);
        rem = q;
    }
    dst[i] = src[off];
}
#endif

#ifdef TILE
/* Transpose through a local tile. The output is [rest..., nq (somewhere),
 * nl (last)] where output dim q has input stride 1 and the last output dim
 * has input stride sl: a TILE x TILE block is read along q (contiguous in
 * the input) and written along the last dim (contiguous in the output).
 * Group (g0, g1, g2): g0 tiles the last dim, g1 tiles dim q, g2 runs over
 * the other output dims (`rn` sizes, `rin` input and `rout` output strides,
 * `rnd` of them). `oq` is the output stride of dim q. */
#if CG_WANT(transpose_tiled)
__kernel __attribute__((reqd_work_group_size(TILE, ROWS, 1)))
void transpose_tiled(__global const T *src, __global T *dst, IDX nl, IDX sl, IDX nq, IDX oq,
                     int rnd, IDX8 rn, IDX8 rin, IDX8 rout) {
    __local T tile[TILE][TILE + 1];
    const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
    const IDX l0 = (IDX)get_group_id(0) * TILE, q0 = (IDX)get_group_id(1) * TILE;
    IDX in_off, out_off;
    cg_index_offsets((IDX)get_global_id(2), rnd, rn, rin, rout, &in_off, &out_off);
    /* Read: lx runs along q (input stride 1). */
    for (int j = ly; j < TILE; j += ROWS) {
        IDX qi = q0 + lx, li = l0 + j;
        if (qi < nq && li < nl) tile[j][lx] = src[in_off + qi + li * sl];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* Write: lx runs along the last output dim (output stride 1). */
    for (int j = ly; j < TILE; j += ROWS) {
        IDX li = l0 + lx, qi = q0 + j;
        if (qi < nq && li < nl) dst[out_off + qi * oq + li] = tile[lx][j];
    }
}
#endif
#endif

/* trilu: y = x where column - row >= diag (upper) or <= diag (lower) in
 * the last two dims ([.., rows, cols]), else 0; one work-item per element. */
#if CG_WANT(trilu)
__kernel void trilu(__global const T *x, __global T *y, long rows, long cols, long diag, int upper, IDX n) {
    IDX i = (IDX)get_global_id(0);
    if (i >= n) return;
    long c = (long)(i % (IDX)cols), r = (long)((i / (IDX)cols) % (IDX)rows), d = c - r;
    y[i] = (upper ? d >= diag : d <= diag) ? x[i] : (T)0;
}
#endif

/* arange: y[i] = start + i * delta in AR_T (integers wrap: computed in the
 * unsigned AR_U). */
#if CG_WANT(arange)
__kernel void arange(__global AR_T *y, AR_U start, AR_U delta, long n) {
    long i = get_global_id(0);
    if (i >= n) return;
    y[i] = (AR_T)(start + (AR_U)i * delta);
}
#endif

/* dim_values: sizes bound at plan time, written as they are */
#if CG_WANT(dim_values)
__kernel void dim_values(__global long *y, long8 v, int n) {
    int i = get_global_id(0);
    if (i >= n) return;
    long a[8] = {v.s0, v.s1, v.s2, v.s3, v.s4, v.s5, v.s6, v.s7};
    y[i] = a[i];
}
#endif
