/* Kernel of ops/roi_align.c: one work-item per output element, the samples
 * of its CPU kernel in the same order. Contraction into fma is off so that
 * coordinates and sums round as there. A batch index outside [0, N) (the
 * host's range check reports it) gives zeros. Build option: -DIDX. */
#pragma OPENCL FP_CONTRACT OFF

#if CG_WANT(roi_align)
__kernel void roi_align(__global const float *xp, __global const float *rois, __global const int *bi,
                        __global float *yp, long n, long4 d, long oh, long ow, long sr, float scale, int hpx,
                        int mx) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    const long pw = (long)i % ow, ph = (long)i / ow % oh, c = (long)i / (ow * oh) % d.s1, r = (long)i / (ow * oh * d.s1);
    const long b = bi[r], h = d.s2, w = d.s3;
    if (b < 0 || b >= d.s0) {
        yp[i] = 0.0f;
        return;
    }
    __global const float *roi = rois + 4 * r, *p = xp + (b * d.s1 + c) * h * w;
    const float off = hpx ? 0.5f : 0.0f;
    const long out[2] = {oh, ow};
    float start[2], bin[2];
    int grid[2];
    for (int k = 0; k < 2; k++) {
        start[k] = roi[1 - k] * scale - off;
        float size = roi[3 - k] * scale - off - start[k];
        if (!hpx) size = fmax(size, 1.0f);
        bin[k] = size / (float)out[k];
        const float cs = ceil(size / (float)out[k]);
        grid[k] = sr > 0 ? (int)sr : cs > 0.0f ? (cs < 1024.0f ? (int)cs : 1024) : 0;
    }
    float acc = 0.0f;
    int any = 0;
    for (int iy = 0; iy < grid[0]; iy++)
        for (int ix = 0; ix < grid[1]; ix++) {
            float y = start[0] + (float)ph * bin[0] + ((float)iy + 0.5f) * bin[0] / (float)grid[0];
            float x = start[1] + (float)pw * bin[1] + ((float)ix + 0.5f) * bin[1] / (float)grid[1];
            float v0 = 0.0f, v1 = 0.0f, v2 = 0.0f, v3 = 0.0f;
            if (!(y < -1.0f || y > (float)h || x < -1.0f || x > (float)w)) {
                y = fmax(y, 0.0f);
                x = fmax(x, 0.0f);
                long y0 = (long)y, x0 = (long)x, y1 = y0 + 1, x1 = x0 + 1;
                if (y0 >= h - 1) {
                    y0 = y1 = h - 1;
                    y = (float)y0;
                }
                if (x0 >= w - 1) {
                    x0 = x1 = w - 1;
                    x = (float)x0;
                }
                const float ly = y - (float)y0, lx = x - (float)x0, hy = 1.0f - ly, hx = 1.0f - lx;
                v0 = hy * hx * p[y0 * w + x0];
                v1 = hy * lx * p[y0 * w + x1];
                v2 = ly * hx * p[y1 * w + x0];
                v3 = ly * lx * p[y1 * w + x1];
            }
            if (!mx) {
                acc += v0 + v1 + v2 + v3;
            } else {
                const float m = fmax(fmax(v0, v1), fmax(v2, v3));
                acc = any ? fmax(acc, m) : m;
                any = 1;
            }
        }
    const int cnt = grid[0] * grid[1];
    yp[i] = mx ? acc : acc / (float)(cnt > 1 ? cnt : 1);
}
#endif
