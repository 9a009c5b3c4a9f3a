/* rms_norm (ops/rms_norm.c): y = x * (1 / sqrt(mean(x^2) + eps)) * w over
 * rows of n elements. rms_norm_rows: one work-item per row (short rows; no
 * barrier). rms_norm_group: one work-group per row (its size a power of
 * two), the squares reduced in local memory. IDX is int unless built with
 * -DIDX=long. */
#if CG_WANT(rms_norm_rows)
__kernel void rms_norm_rows(__global const float *x, __global const float *w, __global float *y, long n_,
                            long rows, float eps) {
    const IDX r = (IDX)get_global_id(0), n = (IDX)n_;
    if (r >= (IDX)rows) return;
    __global const float *xr = x + r * n;
    __global float *yr = y + r * n;
    float s = 0.0f;
    for (IDX j = 0; j < n; j++) s += xr[j] * xr[j];
    const float rs = 1.0f / sqrt(s / (float)n + eps);
    for (IDX j = 0; j < n; j++) yr[j] = xr[j] * rs * w[j];
}
#endif

#if CG_WANT(rms_norm_group)
__kernel void rms_norm_group(__global const float *x, __global const float *w, __global float *y, long n_,
                             long rows, float eps, __local float *red) {
    const IDX row = (IDX)get_group_id(0), n = (IDX)n_;
    const IDX lid = (IDX)get_local_id(0), wg = (IDX)get_local_size(0);
    __global const float *xr = x + row * n;
    __global float *yr = y + row * n;
    float s = 0.0f;
    for (IDX j = lid; j < n; j += wg) s += xr[j] * xr[j];
    red[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (IDX h = wg / 2; h > 0; h /= 2) {
        if (lid < h) red[lid] += red[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float rs = 1.0f / sqrt(red[0] / (float)n + eps);
    for (IDX j = lid; j < n; j += wg) yr[j] = xr[j] * rs * w[j];
}
#endif
