/* Kernel of ops/deform_conv.c (OpenCL C 1.2): the deformable convolution
 * (ONNX DeformConv, torchvision deform_conv2d), one work-item per output
 * element, summing over its group's channels and the kernel taps in the
 * CPU kernel's order; each tap samples x bilinearly at its offset
 * position, corners outside x reading 0. IDX is int unless built with
 * -DIDX=long. Contraction into fma is off so the sums round like the
 * CPU's. */
#pragma OPENCL FP_CONTRACT OFF

#if CG_WANT(deform_conv)
/* x at (ph, pw) of one channel plane [h, w], bilinear, zeros outside. */
inline float dc_sample(__global const float *x, int h, int w, float ph, float pw) {
    const float fh = floor(ph), fw = floor(pw), lh = ph - fh, lw = pw - fw;
    if (!(fh > -2.0f && fh < (float)h && fw > -2.0f && fw < (float)w)) return 0.0f; /* NaN too */
    const int h0 = (int)fh, w0 = (int)fw;
    float v = 0.0f;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            const int y = h0 + a, z = w0 + b;
            if (y < 0 || y >= h || z < 0 || z >= w) continue;
            v += (a ? lh : 1.0f - lh) * (b ? lw : 1.0f - lw) * x[(IDX)y * w + z];
        }
    return v;
}

/* geo: c, h, w, m, kh, kw, oh, ow; conv: sh, sw, dh, dw, ph, pw, group,
 * offset_group. has: bit 0 bias, bit 1 mask. */
__kernel void deform_conv(__global const float *x, __global const float *wt, __global const float *off,
                          __global const float *bias, __global const float *mask, __global float *y, long total,
                          int8 geo, int8 conv, int has) {
    const IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)total) return;
    const int c = geo.s0, h = geo.s1, w = geo.s2, m = geo.s3, kh = geo.s4, kw = geo.s5, oh = geo.s6, ow = geo.s7;
    const int cg = c / conv.s6, mg = m / conv.s6, co = c / conv.s7, taps = kh * kw;
    const int oj = (int)(i % ow), oi = (int)((i / ow) % oh), om = (int)((i / ((IDX)ow * oh)) % m);
    const IDX n = i / ((IDX)ow * oh * m), plane = (IDX)oh * ow, at = (IDX)oi * ow + oj;
    float acc = (has & 1) ? bias[om] : 0.0f;
    for (int cc = 0; cc < cg; cc++) {
        const int ch = (om / mg) * cg + cc, og = ch / co;
        __global const float *xp = x + (n * c + ch) * (IDX)h * w;
        for (int t = 0; t < taps; t++) {
            const int ki = t / kw, kj = t - ki * kw;
            const IDX oc = (n * conv.s7 + og) * taps + t;
            const float ph = (float)(oi * conv.s0 - conv.s4 + ki * conv.s2) + off[(2 * oc) * plane + at];
            const float pw = (float)(oj * conv.s1 - conv.s5 + kj * conv.s3) + off[(2 * oc + 1) * plane + at];
            float v = dc_sample(xp, h, w, ph, pw);
            if (has & 2) v *= mask[oc * plane + at];
            acc += wt[((IDX)om * cg + cc) * taps + t] * v;
        }
    }
    y[i] = acc;
}
#endif
