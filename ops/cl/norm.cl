/* layer_norm: one work-group per row of n elements (the group's size a
 * power of two, `red` one float per work-item): the mean, then the
 * variance of the deviations (two passes: no cancellation), then
 * y = (x - mean) * rstd * gamma + beta. */
#if CG_WANT(layer_norm)
static float ln_group_sum(float v, __local float *red) {
    const int lid = (int)get_local_id(0), wg = (int)get_local_size(0);
    red[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = wg / 2; h > 0; h /= 2) {
        if (lid < h) red[lid] += red[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float s = red[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* every item has read red[0] before it is reused */
    return s;
}

__kernel void layer_norm(__global const float *x, __global const float *g, __global const float *b, int has_g,
                         int has_b, __global float *y, long n_, float eps, __local float *red) {
    const IDX row = (IDX)get_group_id(0), n = (IDX)n_;
    const IDX lid = (IDX)get_local_id(0), wg = (IDX)get_local_size(0);
    __global const float *xr = x + row * n;
    __global float *yr = y + row * n;
    float s = 0.0f;
    for (IDX j = lid; j < n; j += wg) s += xr[j];
    const float mean = ln_group_sum(s, red) / (float)n;
    float v = 0.0f;
    for (IDX j = lid; j < n; j += wg) {
        const float d = xr[j] - mean;
        v += d * d;
    }
    const float rstd = 1.0f / sqrt(ln_group_sum(v, red) / (float)n + eps);
    for (IDX j = lid; j < n; j += wg) {
        float t = (xr[j] - mean) * rstd;
        if (has_g) t *= g[j];
        if (has_b) t += b[j];
        yr[j] = t;
    }
}
#endif
