/* Kernel of ops/det.c: one work-item per matrix, eliminating a copy of it
 * in the workspace w in the CPU kernel's order of operations. Contraction
 * into fma is off so that the updates round as there. Build option: -DIDX. */
#pragma OPENCL FP_CONTRACT OFF

#if CG_WANT(det)
__kernel void det(__global const float *x, __global float *w, __global float *y, long n, long m) {
    IDX b = (IDX)get_global_id(0);
    if (b >= (IDX)n) return;
    __global float *a = w + (IDX)b * (IDX)(m * m);
    __global const float *s = x + (IDX)b * (IDX)(m * m);
    for (long i = 0; i < m * m; i++) a[i] = s[i];
    float d = 1.0f;
    for (long k = 0; k < m; k++) {
        long p = k;
        for (long i = k + 1; i < m; i++)
            if (fabs(a[i * m + k]) > fabs(a[p * m + k])) p = i;
        if (a[p * m + k] == 0.0f) {
            d = 0.0f;
            break;
        }
        if (p != k) {
            for (long j = k; j < m; j++) {
                const float t = a[k * m + j];
                a[k * m + j] = a[p * m + j];
                a[p * m + j] = t;
            }
            d = -d;
        }
        const float piv = a[k * m + k];
        d *= piv;
        for (long i = k + 1; i < m; i++) {
            const float f = a[i * m + k] / piv;
            for (long j = k + 1; j < m; j++) a[i * m + j] -= f * a[k * m + j];
        }
    }
    y[b] = d;
}
#endif
