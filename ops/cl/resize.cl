/* resize (ops/resize.c): one work-item per output element. Per axis,
 * innermost first: the output dims od, x's strides st, and the axis' table
 * (taps entries per output position from word base, each an input
 * position, -1 for the extrapolation value, and a weight's float bits; 0
 * taps: the axis is left as it is).
 *
 * Build options: -DIDX=int or -DIDX=long, -DT (resize_nearest: the
 * unsigned type of the element size). */

#ifndef T
#define T uint
#endif

/* resize_nearest: elements of any dtype moved; ev holds the extrapolation
 * value's bits in its low bytes. */
#if CG_WANT(resize_nearest)
#define RN_STEP(c)                                                        \
    if (nd > c) {                                                         \
        IDX d = (IDX)od.s##c, q = r / d, o = r - q * d;                   \
        if (taps.s##c == 0) off += o * (IDX)st.s##c;                      \
        else {                                                            \
            int k = tab[base.s##c + 2 * (long)o];                         \
            if (k < 0) ext = 1;                                           \
            else off += (IDX)k * (IDX)st.s##c;                            \
        }                                                                 \
        r = q;                                                            \
    }
__kernel void resize_nearest(__global const T *src, __global const int *tab, __global T *dst, long n, int nd,
                             long8 od, long8 st, int8 taps, long8 base, ulong ev) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    IDX r = i, off = 0;
    int ext = 0;
    RN_STEP(0) RN_STEP(1) RN_STEP(2) RN_STEP(3) RN_STEP(4) RN_STEP(5) RN_STEP(6) RN_STEP(7)
    dst[i] = ext ? (T)ev : src[off];
}
#endif

/* resize_interp (f32): the weighted sum over the product of the taps of
 * the axes that have them, in the order of resize.c's interp_at. */
#if CG_WANT(resize_interp)
#define RI_STEP(c)                                                        \
    if (nd > c) {                                                         \
        IDX d = (IDX)od.s##c, q = r / d, o = r - q * d;                   \
        if (taps.s##c == 0) off += o * (IDX)st.s##c;                      \
        else {                                                            \
            long row = base.s##c + 2 * (long)taps.s##c * (long)o;          \
            if (tab[row] < 0) ext = 1;                                    \
            rows[na] = row;                                               \
            nt[na] = taps.s##c;                                           \
            ms[na++] = (IDX)st.s##c;                                      \
        }                                                                 \
        r = q;                                                            \
    }
__kernel void resize_interp(__global const float *src, __global const int *tab, __global float *dst, long n, int nd,
                            long8 od, long8 st, int8 taps, long8 base, float ev) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    IDX r = i, off = 0, ms[8];
    long rows[8];
    int nt[8], cnt[8], na = 0, ext = 0;
    RI_STEP(0) RI_STEP(1) RI_STEP(2) RI_STEP(3) RI_STEP(4) RI_STEP(5) RI_STEP(6) RI_STEP(7)
    if (ext) {
        dst[i] = ev;
        return;
    }
    for (int j = 0; j < 8; j++) cnt[j] = 0;
    float acc = 0.0f;
    for (;;) {
        IDX o = off;
        float w = 1.0f;
        for (int j = 0; j < na; j++) {
            const long e = rows[j] + 2 * (long)cnt[j];
            o += (IDX)tab[e] * ms[j];
            w *= as_float(tab[e + 1]);
        }
        acc += w * src[o];
        int j = na - 1;
        while (j >= 0 && ++cnt[j] == nt[j]) cnt[j--] = 0;
        if (j < 0) break;
    }
    dst[i] = acc;
}
#endif
