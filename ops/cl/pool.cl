/* Pooling, one work-item per output element (ops/pool.c): the window
 * walked in the CPU kernel's order (axis 0 first). Every op is 3-D here
 * (ops/conv_geom.h); geometry per axis in int4 vectors (x, y, z).
 *
 * Build options: -DIDX=int or -DIDX=long (index type); -DPOOL=0 (max), 1
 * (average), 2 (Lp); -DT=float, char or uchar (x and y; max only);
 * -DWITH_INDEX=1: max also writes each maximum's flattened index;
 * -DLP=1 or 2 for Lp of those orders (exact forms, and no branch on the
 * argument p, which Mesa's llvmpipe warns about), 0 for pow. */

#ifndef T
#define T float
#endif
#ifndef LP
#define LP 0
#endif

/* The taps [lo, hi) of one axis inside x, and how many lie inside the
 * padded input (up to in + pe). */
inline int2 pool_taps(int base, int k, int d, int n, int pe, int *padded) {
    int lo = 0, hi = k, ph = k;
    while (lo < hi && base + lo * d < 0) lo++;
    while (hi > lo && base + (hi - 1) * d >= n) hi--;
    while (ph > 0 && base + (ph - 1) * d >= n + pe) ph--;
    *padded = ph;
    return (int2)(lo, hi);
}

/* own: storage_order (max), count_include_pad (average); p: Lp's order. */
#if CG_WANT(pool_direct)
__kernel void pool_direct(__global const T *x, __global T *y, __global long *idx, int4 pe, int own, float p,
                          int4 in, int4 ks, int4 s, int4 d, int4 pb, int4 out, long total) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)total) return;
    IDX r = i;
    const int o2 = (int)(r % out.z);
    r /= out.z;
    const int o1 = (int)(r % out.y);
    r /= out.y;
    const int o0 = (int)(r % out.x);
    const IDX plane = r / out.x, xb = plane * ((IDX)in.x * in.y * in.z);
    const int b0 = o0 * s.x - pb.x, b1 = o1 * s.y - pb.y, b2 = o2 * s.z - pb.z;
    int c0, c1, c2;
    const int2 t0 = pool_taps(b0, ks.x, d.x, in.x, pe.x, &c0);
    const int2 t1 = pool_taps(b1, ks.y, d.y, in.y, pe.y, &c1);
    const int2 t2 = pool_taps(b2, ks.z, d.z, in.z, pe.z, &c2);
    float acc = 0.0f;
    long best = -1;
    for (int k0 = t0.x; k0 < t0.y; k0++)
        for (int k1 = t1.x; k1 < t1.y; k1++)
            for (int k2 = t2.x; k2 < t2.y; k2++) {
                const int i0 = b0 + k0 * d.x, i1 = b1 + k1 * d.y, i2 = b2 + k2 * d.z;
                const long pos = ((long)i0 * in.y + i1) * in.z + i2;
                const float v = (float)x[xb + (IDX)pos];
#if POOL == 0
                if (best < 0 || v > acc) {
                    acc = v;
                    best = own ? i0 + ((long)i1 + (long)i2 * in.y) * in.x : pos;
                }
#elif POOL == 1
                acc += v;
#else
                const float av = fabs(v);
#if LP == 2
                acc += av * av;
#elif LP == 1
                acc += av;
#else
                acc += pow(av, p);
#endif
#endif
            }
#if POOL == 1
    const long cnt = own ? (long)c0 * c1 * c2 : (long)(t0.y - t0.x) * (t1.y - t1.x) * (t2.y - t2.x);
    acc = cnt ? acc / (float)cnt : 0.0f;
#elif POOL == 2
#if LP == 2
    acc = sqrt(acc);
#elif LP == 0
    acc = pow(acc, 1.0f / p);
#endif
#endif
    y[i] = (T)acc;
#ifdef WITH_INDEX
    idx[i] = best < 0 ? -1 : (long)xb + best;
#endif
}
#endif
