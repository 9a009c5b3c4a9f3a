/* Row lookups of elements of any dtype, copied as the unsigned type T of
 * their size (-DT=uchar, ushort, uint or ulong; uint by default).
 *
 * Build options: -DIDX=int or -DIDX=long (index type, long when a tensor
 * has 2^31 elements or more), -DT. */

#ifndef T
#define T uint
#endif

/* dst[r, c] = src[idx[r], c] for r < total / row, c < row, where src has
 * n_src rows of `row` elements; a row whose index is outside [0, n_src) is
 * written as zeros and recorded in the check words (input 1, as the CPU
 * kernels report it). */
#if CG_WANT(gather_rows4)
__kernel void gather_rows4(__global const T *src, __global const int *idx, __global T *dst,
                           IDX n_src, IDX row, IDX total, __global int *check, int word) {
    IDX i = (IDX)get_global_id(0);
    if (i >= total) return;
    IDX r = i / row, c = i - r * row;
    int id = idx[r];
    int ok = id >= 0 && (IDX)id < n_src;
    dst[i] = ok ? src[(IDX)id * row + c] : (T)0;
    if (!ok && c == 0) cg_check_report(check, word, 1, id, (long)r, 0, n_src - 1 > INT_MAX ? INT_MAX : (int)(n_src - 1));
}
#endif
