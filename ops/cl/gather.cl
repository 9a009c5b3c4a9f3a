/* Row lookups of 4-byte elements (f32 and i32 copied as uint).
 *
 * Build options: -DIDX=int or -DIDX=long (index type, long when a tensor
 * has 2^31 elements or more). */

/* dst[r, c] = src[idx[r], c] for r < total / row, c < row, where src has
 * n_src rows of `row` elements; a row whose index is outside [0, n_src) is
 * written as zeros (the CPU kernels report it as an error instead). */
#if CG_WANT(gather_rows4)
__kernel void gather_rows4(__global const uint *src, __global const int *idx, __global uint *dst,
                           IDX n_src, IDX row, IDX total) {
    IDX i = (IDX)get_global_id(0);
    if (i >= total) return;
    IDX r = i / row, c = i - r * row;
    int id = idx[r];
    dst[i] = (id >= 0 && (IDX)id < n_src) ? src[(IDX)id * row + c] : 0u;
}
#endif
