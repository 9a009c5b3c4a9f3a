/* Convolutions, one work-item per output element: conv and conv_transpose
 * (ops/conv.c, ops/conv_transpose.c). Every op is 3-D here: a 1-D or 2-D
 * one has leading axes of size 1 (ops/conv_geom.h). Geometry per axis in
 * int4 vectors (x, y, z: the three axes): input size, kernel size, stride,
 * dilation, begin pad, output size.
 *
 * Build options: -DIDX=int or -DIDX=long (index type, long when a tensor
 * has 2^31 elements or more); -DHAS_BIAS=1 when the node has a bias. */

/* The output element i's (plane, o.x, o.y, o.z). */
#define CONV_SPLIT(i, out, plane, o)                                            \
    IDX plane;                                                                  \
    int4 o;                                                                     \
    {                                                                           \
        IDX r_ = (i);                                                           \
        o.z = (int)(r_ % out.z), r_ /= out.z;                                   \
        o.y = (int)(r_ % out.y), r_ /= out.y;                                   \
        o.x = (int)(r_ % out.x), plane = r_ / out.x;                            \
    }

/* y[n, m, o] = bias[m] + sum over the group's c and the taps of
 * x[n, c, o * s - pb + k * d] * w[m, c, k]. */
#if CG_WANT(conv_direct)
__kernel void conv_direct(__global const float *x, __global const float *w, __global const float *bias,
                          __global float *y, int C, int M, int Cg, int Mg, int4 in, int4 ks, int4 s, int4 d,
                          int4 pb, int4 out, long total) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)total) return;
    CONV_SPLIT(i, out, plane, o)
    const int m = (int)(plane % M);
    const IDX n = plane / M;
    const int4 base = o * s - pb;
    const IDX in_size = (IDX)in.x * in.y * in.z, k_size = (IDX)ks.x * ks.y * ks.z;
#ifdef HAS_BIAS
    float acc = bias[m];
#else
    float acc = 0.0f;
#endif
    __global const float *xg = x + (n * C + (IDX)(m / Mg) * Cg) * in_size;
    __global const float *wm = w + (IDX)m * Cg * k_size;
    for (int c = 0; c < Cg; c++) {
        for (int k0 = 0; k0 < ks.x; k0++) {
            const int i0 = base.x + k0 * d.x;
            if (i0 < 0 || i0 >= in.x) continue;
            for (int k1 = 0; k1 < ks.y; k1++) {
                const int i1 = base.y + k1 * d.y;
                if (i1 < 0 || i1 >= in.y) continue;
                __global const float *xr = xg + ((IDX)i0 * in.y + i1) * in.z;
                __global const float *wr = wm + ((IDX)k0 * ks.y + k1) * ks.z;
                for (int k2 = 0; k2 < ks.z; k2++) {
                    const int i2 = base.z + k2 * d.z;
                    if (i2 >= 0 && i2 < in.z) acc += xr[i2] * wr[k2];
                }
            }
        }
        xg += in_size;
        wm += k_size;
    }
    y[i] = acc;
}
#endif

/* The input position a transposed tap reaches: t = o + pb - k * d, a
 * multiple of the stride inside the input; -1 otherwise. */
inline int tr_pos(int t, int s, int n) {
    if (t < 0 || t % s) return -1;
    t /= s;
    return t < n ? t : -1;
}

/* conv_transpose: y[n, m, o] = bias[m] + sum over the group's c and the
 * taps with o + pb - k * d = i * s of x[n, c, i] * w[c, m % Mg, k]. */
#if CG_WANT(conv_transpose_direct)
__kernel void conv_transpose_direct(__global const float *x, __global const float *w, __global const float *bias,
                                    __global float *y, int C, int M, int Cg, int Mg, int4 in, int4 ks, int4 s,
                                    int4 d, int4 pb, int4 out, long total) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)total) return;
    CONV_SPLIT(i, out, plane, o)
    const int m = (int)(plane % M);
    const IDX n = plane / M;
    const int4 base = o + pb;
    const IDX in_size = (IDX)in.x * in.y * in.z, k_size = (IDX)ks.x * ks.y * ks.z;
#ifdef HAS_BIAS
    float acc = bias[m];
#else
    float acc = 0.0f;
#endif
    const int g = m / Mg;
    __global const float *xg = x + (n * C + (IDX)g * Cg) * in_size;
    __global const float *wc = w + ((IDX)g * Cg * Mg + m % Mg) * k_size;
    for (int c = 0; c < Cg; c++) {
        for (int k0 = 0; k0 < ks.x; k0++) {
            const int i0 = tr_pos(base.x - k0 * d.x, s.x, in.x);
            if (i0 < 0) continue;
            for (int k1 = 0; k1 < ks.y; k1++) {
                const int i1 = tr_pos(base.y - k1 * d.y, s.y, in.y);
                if (i1 < 0) continue;
                __global const float *xr = xg + ((IDX)i0 * in.y + i1) * in.z;
                __global const float *wr = wc + ((IDX)k0 * ks.y + k1) * ks.z;
                for (int k2 = 0; k2 < ks.z; k2++) {
                    const int i2 = tr_pos(base.z - k2 * d.z, s.z, in.z);
                    if (i2 >= 0) acc += xr[i2] * wr[k2];
                }
            }
        }
        xg += in_size;
        wc += (IDX)Mg * k_size;
    }
    y[i] = acc;
}
#endif
