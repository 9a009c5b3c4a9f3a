/* layer_norm: with has_res, of x + res (the residual add it replaces),
 * that sum kept in y, or in `sum` with has_sum (a second output);
 * one work-group per row of n elements (the group's size a
 * power of two, `red` one float per work-item): the mean, then the
 * variance of the deviations (two passes: no cancellation), then
 * y = (x - mean) * rstd * gamma + beta. */
/* layer_norm_rows: one work-item per row (short rows: no barrier, so a CPU
 * device runs it as a plain loop; a GPU's short rows are launch-bound).
 * The sums are taken of x - x[0] in four lanes, so that a row far from 0
 * loses no digits of its mean; then the variance of the deviations. */
#if CG_WANT(layer_norm_rows)
__kernel void layer_norm_rows(__global const float *x, __global const float *g, __global const float *b, int has_g,
                              int has_b, __global float *y, long n_, long rows, float eps, __global const float *res,
                              int has_res, __global float *sum, int has_sum) {
    const IDX r = (IDX)get_global_id(0), n = (IDX)n_;
    if (r >= (IDX)rows) return;
    __global float *yr = y + r * n;
    __global const float *xr = x + r * n;
    if (has_res) { /* x + residual, rounded as the add it replaces, kept in y or sum */
        __global float *sr = has_sum ? sum + r * n : yr;
        for (IDX j = 0; j < n; j++) sr[j] = xr[j] + res[r * n + j];
        xr = sr;
    }
    const float x0 = xr[0];
    float4 s4 = (float4)(0.0f);
    IDX j = 0;
    for (; j + 4 <= n; j += 4) s4 += vload4(0, xr + j) - x0;
    float s = (s4.x + s4.y) + (s4.z + s4.w);
    for (; j < n; j++) s += xr[j] - x0;
    const float mean = x0 + s / (float)n;
    float4 v4 = (float4)(0.0f);
    for (j = 0; j + 4 <= n; j += 4) {
        const float4 d = vload4(0, xr + j) - mean;
        v4 += d * d;
    }
    float v = (v4.x + v4.y) + (v4.z + v4.w);
    for (; j < n; j++) v += (xr[j] - mean) * (xr[j] - mean);
    const float rstd = 1.0f / sqrt(v / (float)n + eps);
    for (j = 0; j < n; j++) {
        float t = (xr[j] - mean) * rstd;
        if (has_g) t *= g[j];
        if (has_b) t += b[j];
        yr[j] = t;
    }
}
#endif

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
                         int has_b, __global float *y, long n_, float eps, __local float *red,
                         __global const float *res, int has_res, __global float *sum, int has_sum) {
    const IDX row = (IDX)get_group_id(0), n = (IDX)n_;
    const IDX lid = (IDX)get_local_id(0), wg = (IDX)get_local_size(0);
    __global const float *xr = x + row * n;
    __global float *yr = y + row * n;
    if (has_res) { /* x + residual in y or sum: each item reads back only the elements it wrote */
        __global float *sr = has_sum ? sum + row * n : yr;
        for (IDX j = lid; j < n; j += wg) sr[j] = xr[j] + res[row * n + j];
        xr = sr;
    }
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
