/* Kernels of ops/local_attn.c: window_mask and local_gaussian, the two
 * pieces of local attention (seq2seq spec, "Weights") (OpenCL C 1.2).
 *
 * Both work on [B, S] row-major outputs with one work-item per element and
 * bounds-check (the host rounds the global size up to a multiple of the
 * work-group size). IDX is int unless the host builds with -DIDX=long for
 * tensors of 2^31 elements or more. Contraction into fma is off so that
 * local_gaussian rounds like the CPU kernel. */
#pragma OPENCL FP_CONTRACT OFF

/*
 * 1 when key i lies in the window of center c with radius d, exactly as the
 * CPU decides it in double precision: fabs((double)i - (double)c) <= d,
 * without needing cl_khr_fp64.
 *
 * Exactly, |i - c| <= d is m <= c <= M with m = i - d, M = i + d. The double
 * subtraction rounds i - c once, which can only move a difference just past
 * +-d back onto +-d: by at most t, half the spacing of doubles just above d
 * (t = 2^(floor(log2 d) - 53) for d >= 1, ties going to the even d; 0 for
 * d = 0). So the CPU's test is m - t <= c <= M + t, and for d < 2^31 this is
 * evaluated exactly here:
 *  - c >= m: c >= the smallest float not below m (convert_float_rtp);
 *  - or c in [m - t, m): then |m| < 2^24 (floats that close below an
 *    integer exist only there, and only for m = 0 when d < 2^29), (float)m is
 *    exact, and (float)m - c is exact where it matters (Sterbenz, or m = 0),
 *    so (float)m - c <= t is the exact test; likewise on the M side.
 * A NaN center fails every comparison and gives 0, and +-inf is never
 * within the window, as on the CPU. On a device that flushes denormal
 * floats to zero a denormal center acts as 0 (this differs from the CPU only
 * for d = 0 at i = 0).
 */
inline int wm_in_window(long i, float c, long d, float t) {
    const long m = i - d, M = i + d, F = 16777216L; /* 2^24 */
    const int lo = c >= convert_float_rtp(m) || (m >= -F && m <= F && (float)m - c <= t);
    const int hi = c <= convert_float_rtn(M) || (M >= -F && M <= F && c - (float)M <= t);
    return lo && hi;
}

/* out[b, i] = 1 if i < lengths[b] and |i - center[b]| <= d, else 0, for out
 * [B, S] (total = B * S elements, s_ = S). A length outside [0, S] is not
 * reported here (the CPU kernel fails on it): it acts as clamped to [0, S],
 * a negative length giving a row of 0s and one above S the whole window. */
#if CG_WANT(window_mask)
__kernel void window_mask(__global const int *lengths, __global const float *center,
                          __global int *out, long total, long s_, long d, float t) {
    const IDX k = (IDX)get_global_id(0);
    if (k >= (IDX)total) return;
    const IDX s = (IDX)s_, b = k / s, i = k - b * s;
    out[k] = ((long)i < (long)lengths[b] && wm_in_window((long)i, center[b], d, t)) ? 1 : 0;
}
#endif

/* out[b, i] = a[b, i] * exp(-(x * x) / denom) with x = (float)i - center[b]
 * and denom = 2 (D / 2)^2 computed by the host in float as the CPU kernel
 * does, so the argument of exp is bitwise the same on both. out may be a
 * (in place). */
#if CG_WANT(local_gaussian)
__kernel void local_gaussian(__global const float *a, __global const float *center,
                             __global float *out, long total, long s_, float denom) {
    const IDX k = (IDX)get_global_id(0);
    if (k >= (IDX)total) return;
    const IDX s = (IDX)s_, b = k / s, i = k - b * s;
    const float x = (float)i - center[b];
    out[k] = a[k] * exp(-(x * x) / denom);
}
#endif
