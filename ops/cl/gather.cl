/* Row lookups of elements of any dtype, copied as the unsigned type T of
 * their size (-DT=uchar, ushort, uint or ulong; uint by default), and
 * scatter_elements. Index reads and scatter updates are
 * cl/index_common.cl's, put in front of this source when it is embedded.
 *
 * Build options: -DIDX=int or -DIDX=long (index type, long when a tensor
 * has 2^31 elements or more), -DT. */

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

/* The table row an id of type ID names (with wrap, an id in [-n_src, 0)
 * counts from the end), or -1 after the row's first work-item (c == 0)
 * recorded the id as input 1's. The id is compared and clamped in its own
 * type: on rusticl (Mesa 22.3's llvmpipe) converting an int id loaded from
 * memory to long went wrong, and negative ids went unreported. */
#if CG_WANT(gather_rows_any) || CG_WANT(embedding_q8)
inline ID cg_table_row(ID id, int wrap, IDX n_src, IDX r, IDX c, __global int *check, int word) {
    const ID k = wrap && id < 0 ? id + (ID)n_src : id;
    if (k >= 0 && k < (ID)n_src) return k;
    if (c == 0)
        cg_check_report(check, word, 1,
                        id > (ID)2147483647 ? 2147483647 : id < (ID)(-2147483647 - 1) ? (-2147483647 - 1) : (int)id,
                        (long)r, wrap ? cg_clamp_int(-(long)n_src) : 0, cg_clamp_int((long)n_src - 1));
    return -1;
}
#endif

/* embedding_q8: gather_rows_any over an int8 table src [n_src, row] whose
 * row k reads as scale[k] * src[k] (f32 out). */
#if CG_WANT(embedding_q8)
__kernel void embedding_q8(__global const char *src, __global const ID *idx, __global const float *scale,
                           __global float *dst, IDX n_src, IDX row, IDX total, int wrap, __global int *check,
                           int word) {
    IDX i = (IDX)get_global_id(0);
    if (i >= total) return;
    IDX r = i / row, c = i - r * row;
    const ID k = cg_table_row(idx[r], wrap, n_src, r, c, check, word);
    dst[i] = k >= 0 ? scale[k] * (float)src[(IDX)k * row + c] : 0.0f;
}
#endif

/* gather_concat: dst [m, outer, cx + cy] from rows idx[r] of src
 * [n_src, outer, cx] and y [m, outer, cy]; a row whose index is outside
 * [0, n_src) gets zeros in its src part and is recorded (input 1). */
#if CG_WANT(gather_concat)
__kernel void gather_concat(__global const T *src, __global const int *idx, __global const T *y, __global T *dst,
                            IDX n_src, IDX outer, IDX cx, IDX cy, IDX total, __global int *check, int word) {
    IDX i = (IDX)get_global_id(0);
    if (i >= total) return;
    IDX w = cx + cy, b = i / w, c = i - b * w, r = b / outer, o = b - r * outer;
    if (c >= cx) {
        dst[i] = y[b * cy + c - cx];
        return;
    }
    int id = idx[r];
    int ok = id >= 0 && (IDX)id < n_src;
    dst[i] = ok ? src[((IDX)id * outer + o) * cx + c] : (T)0;
    if (!ok && o == 0 && c == 0)
        cg_check_report(check, word, 1, id, (long)r, 0, n_src - 1 > INT_MAX ? INT_MAX : (int)(n_src - 1));
}
#endif

/* gather_rows_any: gather_rows4 for ids of type ID (-DID=int or long),
 * where with `wrap` an id in [-n_src, 0) counts from the end (ONNX Gather);
 * an id outside the range is a zero row and recorded as input 1's. */
#if CG_WANT(gather_rows_any)
__kernel void gather_rows_any(__global const T *src, __global const ID *idx, __global T *dst, IDX n_src, IDX row,
                              IDX total, int wrap, __global int *check, int word) {
    IDX i = (IDX)get_global_id(0);
    if (i >= total) return;
    IDX r = i / row, c = i - r * row;
    const ID k = cg_table_row(idx[r], wrap, n_src, r, c, check, word);
    dst[i] = k >= 0 ? src[(IDX)k * row + c] : (T)0;
}
#endif

/* gather_elements: dst[i] = src at i's index over index's dims (dims,
 * innermost first) with the coordinate of dim `ax` replaced by idx[i]
 * (negative: + len); src's element strides in st. An index outside [-len,
 * len) gives 0 and is recorded in the check words (input 1). */
#if CG_WANT(gather_elements)
#define GE_STEP(c)                                                              \
    if (nd > c) {                                                               \
        IDX d = (IDX)dims.s##c, q = r / d, k = r - q * d;                       \
        if (ax == c) k = (IDX)kk;                                               \
        off += k * (IDX)st.s##c;                                                \
        r = q;                                                                  \
    }
__kernel void gather_elements(__global const T *src, __global const long *idx, __global T *dst, long n, int nd,
                              long8 dims, long8 st, int ax, long len, __global int *check, int word) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    long kk = cg_index_wrap(idx[i], len, 1, (long)i, check, word);
    const int ok = kk >= 0;
    if (!ok) kk = 0;
    IDX r = i, off = 0;
    GE_STEP(0) GE_STEP(1) GE_STEP(2) GE_STEP(3) GE_STEP(4) GE_STEP(5) GE_STEP(6) GE_STEP(7)
    dst[i] = ok ? src[off] : (T)0;
}
#endif

/* copy_elems: dst[i] = src[i] (the scatter ops' copy of x). */
#if CG_WANT(copy_elems)
__kernel void copy_elems(__global const T *src, __global T *dst, long n) {
    IDX i = (IDX)get_global_id(0);
    if (i < (IDX)n) dst[i] = src[i];
}
#endif

/* scatter_lines: one work-item per line of index along the axis (dims:
 * index's with the axis as 1, innermost first; sti / stx: element strides
 * of index / updates and of x). It walks the line's m indices in order and
 * writes or combines (cg_scatter_update, -DSC_RED) the update into dst at
 * the addressed position. An index outside [-len, len) is skipped and
 * recorded in the check words (input 1). */
#if CG_WANT(scatter_lines)
#define SL_STEP(c)                                                              \
    if (nd > c) {                                                               \
        IDX d = (IDX)dims.s##c, q = r / d, k = r - q * d;                       \
        oi += k * (IDX)sti.s##c;                                                \
        ox += k * (IDX)stx.s##c;                                                \
        r = q;                                                                  \
    }
__kernel void scatter_lines(__global const long *idx, __global const T *up, __global T *dst, long lines, int nd,
                            long8 dims, long8 sti, long8 stx, long m, long sia, long sxa, long len,
                            __global int *check, int word) {
    IDX l = (IDX)get_global_id(0);
    if (l >= (IDX)lines) return;
    IDX r = l, oi = 0, ox = 0;
    SL_STEP(0) SL_STEP(1) SL_STEP(2) SL_STEP(3) SL_STEP(4) SL_STEP(5) SL_STEP(6) SL_STEP(7)
    for (long j = 0; j < m; j++) {
        const IDX pi = oi + (IDX)j * (IDX)sia;
        const long kk = cg_index_wrap(idx[pi], len, 1, (long)pi, check, word);
        if (kk < 0) continue;
        cg_scatter_update(dst, up, ox + (IDX)kk * (IDX)sxa, pi);
    }
}
#endif
