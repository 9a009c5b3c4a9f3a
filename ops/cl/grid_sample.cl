/* Kernel of ops/grid_sample.c: one work-item per output element, the
 * per-dim rules and the summation order of its CPU kernel. Contraction
 * into fma is off so that coordinates and sums round as there (a nearest
 * tap depends on the coordinate's last bit). Build option: -DIDX. */
#pragma OPENCL FP_CONTRACT OFF

#define GS_NEAREST 1
#define GS_CUBIC 2
#define GS_BORDER 1
#define GS_REFLECTION 2

#if CG_WANT(grid_sample)
/* x mirrored at lo and hi until inside them. */
inline float gs_reflect(float x, float lo, float hi) {
    const float rng = hi - lo;
    if (!(rng > 0.0f)) return lo;
    if (x < lo || x > hi) {
        const float dx = x < lo ? lo - x : x - hi;
        const int n = (int)(dx / rng);
        const float r = dx - (float)n * rng;
        return ((n % 2 == 0) == (x < lo)) ? lo + r : hi - r;
    }
    return x;
}

/* The index of tap i along a dim of length len, or -1 for a zero. */
inline long gs_index(long i, long len, int pad, float lo, float hi) {
    if (pad == GS_BORDER) return i < 0 ? 0 : i >= len ? len - 1 : i;
    if (pad == GS_REFLECTION) {
        long r = (long)gs_reflect((float)i, lo, hi);
        return r < 0 ? 0 : r >= len ? len - 1 : r;
    }
    return i >= 0 && i < len ? i : -1;
}

/* The taps of one dim for normalized coordinate g into ix, w; how many. */
inline int gs_taps(float g, long len, int mode, int pad, int align, long *ix, float *w) {
    const float fl = (float)len, lo = align ? 0.0f : -0.5f, hi = align ? fl - 1.0f : fl - 0.5f;
    float x = align ? (g + 1.0f) * 0.5f * (fl - 1.0f) : ((g + 1.0f) * fl - 1.0f) * 0.5f;
    if (mode == GS_NEAREST) x = rint(x);
    if (x < lo || x > hi) {
        if (pad == GS_BORDER) x = x < 0.0f ? 0.0f : x > fl - 1.0f ? fl - 1.0f : x;
        else if (pad == GS_REFLECTION) x = gs_reflect(x, lo, hi);
    }
    x = x >= -4.0f ? (x <= fl + 4.0f ? x : fl + 4.0f) : -4.0f;
    const float x0 = floor(x), t = x - x0;
    const long i0 = (long)x0;
    if (mode == GS_NEAREST) {
        ix[0] = gs_index((long)x, len, pad, lo, hi);
        w[0] = 1.0f;
        return 1;
    }
    if (mode != GS_CUBIC) {
        ix[0] = gs_index(i0, len, pad, lo, hi);
        ix[1] = gs_index(i0 + 1, len, pad, lo, hi);
        w[0] = 1.0f - t;
        w[1] = t;
        return 2;
    }
    const float a = -0.75f, t1 = t + 1.0f, u = 1.0f - t, u1 = 2.0f - t;
    w[0] = ((a * t1 - 5.0f * a) * t1 + 8.0f * a) * t1 - 4.0f * a;
    w[1] = ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
    w[2] = ((a + 2.0f) * u - (a + 3.0f)) * u * u + 1.0f;
    w[3] = ((a * u1 - 5.0f * a) * u1 + 8.0f * a) * u1 - 4.0f * a;
    for (int j = 0; j < 4; j++) ix[j] = gs_index(i0 - 1 + j, len, pad, lo, hi);
    return 4;
}

/* y [N, C, out...] from x [N, C, in...] and grid [N, out..., k]; in and out
 * hold the k spatial dims (then 1s). */
__kernel void grid_sample(__global const float *xp, __global const float *gp, __global float *yp, long n, long ch,
                          int k, long4 in, long4 out, int mode, int pad, int align) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    const long osp = out.s0 * out.s1 * out.s2, isp = in.s0 * in.s1 * in.s2;
    const long o = (long)i % osp, nc = (long)i / osp, b = nc / ch;
    __global const float *x = xp + nc * isp, *g = gp + (b * osp + o) * k;
    long ix[3][4];
    float w[3][4];
    int nt[3] = {1, 1, 1};
    const long dims[3] = {in.s0, in.s1, in.s2};
    for (int d = 0; d < k; d++) nt[d] = gs_taps(g[k - 1 - d], dims[d], mode, pad, align, ix[d], w[d]);
    const int d1 = k - 2;
    float acc0 = 0.0f;
    for (int a = 0; a < (k == 3 ? nt[0] : 1); a++) {
        float acc1 = 0.0f;
        for (int bb = 0; bb < nt[d1]; bb++) {
            float acc2 = 0.0f;
            for (int c = 0; c < nt[d1 + 1]; c++) {
                const long i1 = ix[d1][bb], i2 = ix[d1 + 1][c], i0 = k == 3 ? ix[0][a] : 0;
                const float v = i0 < 0 || i1 < 0 || i2 < 0 ? 0.0f : x[(i0 * dims[d1] + i1) * dims[d1 + 1] + i2];
                acc2 += w[d1 + 1][c] * v;
            }
            acc1 += w[d1][bb] * acc2;
        }
        acc0 += (k == 3 ? w[0][a] : 1.0f) * acc1;
    }
    yp[i] = acc0;
}
#endif
