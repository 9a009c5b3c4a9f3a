/* dynamic_quantize (ops/dynamic_quantize.c): one work-group reduces x's
 * range in local memory (lo and hi, one float per work-item; the group's
 * size a power of two), then quantizes every element; each step rounds as
 * the CPU kernel's (IEEE division, rint: half to even). IDX is int unless
 * built with -DIDX=long. */
#if CG_WANT(dynamic_quantize)
inline float dq_min(float a, float b) { return (a < b || a != a) ? a : b; }
inline float dq_max(float a, float b) { return (a > b || a != a) ? a : b; }

inline uchar dq_u8(float v, float zp) {
    const float t = rint(v) + zp;
    return t != t ? (uchar)0 : t <= 0.0f ? (uchar)0 : t >= 255.0f ? (uchar)255 : (uchar)t;
}

__kernel void dynamic_quantize(__global const float *x, long n_, __global uchar *y, __global float *scale_out,
                               __global uchar *zp_out, __local float *rlo, __local float *rhi) {
    const IDX n = (IDX)n_, lid = (IDX)get_local_id(0), wg = (IDX)get_local_size(0);
    float lo = 0.0f, hi = 0.0f;
    for (IDX i = lid; i < n; i += wg) {
        lo = dq_min(lo, x[i]);
        hi = dq_max(hi, x[i]);
    }
    rlo[lid] = lo;
    rhi[lid] = hi;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (IDX h = wg / 2; h > 0; h /= 2) {
        if (lid < h) {
            rlo[lid] = dq_min(rlo[lid], rlo[lid + h]);
            rhi[lid] = dq_max(rhi[lid], rhi[lid + h]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    lo = rlo[0];
    hi = rhi[0];
    const float range = hi - lo, scale = range == 0.0f ? 1.0f : range / 255.0f;
    const float zf = -(lo / scale), zc = zf != zf ? zf : zf < 0.0f ? 0.0f : zf > 255.0f ? 255.0f : zf;
    const float zp = rint(zc);
    for (IDX i = lid; i < n; i += wg) y[i] = dq_u8(x[i] / scale, zp);
    if (lid == 0) {
        *scale_out = scale;
        *zp_out = zp != zp ? (uchar)0 : (uchar)zp;
    }
}
#endif
