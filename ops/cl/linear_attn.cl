/* Kernel of ops/linear_attention.c (OpenCL C 1.2): the recurrence of
 * linear attention (ONNX LinearAttention). Each column m of a key/value
 * head's state [dk, dv] evolves on its own (decay scales rows, the delta
 * rule reads the column against k, the write adds k times the column's
 * value), so one work-item owns one column for the whole sequence, kept in
 * the present-state output, and writes that column of every query head of
 * its group. Sums run over d in order, as the CPU kernel's. IDX is int
 * unless built with -DIDX=long. Contraction into fma is off so the sums
 * round like the CPU's. */
#pragma OPENCL FP_CONTRACT OFF

#if CG_WANT(linear_attention)
/* q [B, T, hq * dk], k [B, T, hkv * dk], v [B, T, hkv * dv], state and
 * present [B, hkv, dk, dv]; decay [B, T, dlen] (dlen hkv: one per head, hkv
 * * dk: one per key dim) when gated, beta [B, T, blen] (blen 1 or hkv)
 * when delta; out [B, T, hq * dv]. */
__kernel void linear_attention(__global const float *q, __global const float *k, __global const float *v,
                               __global const float *state, __global const float *decay,
                               __global const float *beta, __global float *out, __global float *present, int nb,
                               int nt, int hq, int hkv, int dk, int dv, int dlen, int blen, float scale, int gated,
                               int delta) {
    const IDX gid = (IDX)get_global_id(0);
    if (gid >= (IDX)nb * hkv * dv) return;
    const int m = (int)(gid % dv), h = (int)((gid / dv) % hkv);
    const IDX b = gid / ((IDX)dv * hkv), g = hq / hkv;
    __global float *s = present + (b * hkv + h) * (IDX)dk * dv + m;
    __global const float *s0 = state + (b * hkv + h) * (IDX)dk * dv + m;
    for (int d = 0; d < dk; d++) s[(IDX)d * dv] = s0[(IDX)d * dv];
    for (int t = 0; t < nt; t++) {
        const IDX row = b * nt + t;
        __global const float *kr = k + row * hkv * dk + (IDX)h * dk;
        if (gated) {
            __global const float *dr = decay + row * dlen + (dlen == hkv ? h : (IDX)h * dk);
            for (int d = 0; d < dk; d++) s[(IDX)d * dv] *= exp(dr[dlen == hkv ? 0 : d]);
        }
        float val = v[row * hkv * dv + (IDX)h * dv + m];
        if (delta) {
            float r = 0.0f;
            for (int d = 0; d < dk; d++) r += s[(IDX)d * dv] * kr[d];
            val = beta[row * blen + (blen == 1 ? 0 : h)] * (val - r);
        }
        for (int d = 0; d < dk; d++) s[(IDX)d * dv] += kr[d] * val;
        for (IDX j = 0; j < g; j++) {
            const IDX qh = h * g + j;
            __global const float *qr = q + row * hq * dk + qh * dk;
            float o = 0.0f;
            for (int d = 0; d < dk; d++) o += qr[d] * s[(IDX)d * dv];
            out[row * hq * dv + qh * dv + m] = scale * o;
        }
    }
}
#endif
