/* OpenCL kernels of the recurrent operators: the pointwise gate work of
 * gru_cell / lstm_cell (rnn_cell.c) and of one time step of the gru / lstm
 * sequence layers (rnn_seq.c). The matrix products (x W_ih^T, h W_hh^T) are
 * SGEMMs the host enqueues before these kernels; the gate arithmetic below is
 * written in the same order as the CPU kernels (cg_rnn_gru_row /
 * cg_rnn_lstm_row) and without contraction, so both round alike. One
 * work-item per (row, hidden unit); sizes arrive as arguments and every
 * kernel bounds-checks (the global size is rounded up to the work-group). */

#pragma OPENCL FP_CONTRACT OFF

/* GRU unit j: gi / gh point at the row's [3H] projections without biases
 * (gh NULL-equivalent when has_gh == 0: h W_hh^T is zero). */
float cg_gru_unit(int H, int j, __global const float *gi, int has_gi,
                  __global const float *gh, int has_gh, __global const float *b_ih,
                  __global const float *b_hh, float h) {
    float ir = has_gi ? gi[j] : 0.0f, iz = has_gi ? gi[H + j] : 0.0f;
    float in = has_gi ? gi[2 * H + j] : 0.0f;
    float hr = has_gh ? gh[j] : 0.0f, hz = has_gh ? gh[H + j] : 0.0f;
    float hn = has_gh ? gh[2 * H + j] : 0.0f;
    float r = cg_sigmoid(ir + b_ih[j] + hr + b_hh[j]);
    float z = cg_sigmoid(iz + b_ih[H + j] + hz + b_hh[H + j]);
    float n = tanh(in + b_ih[2 * H + j] + r * (hn + b_hh[2 * H + j]));
    return (1.0f - z) * n + z * h;
}

/* LSTM unit j: returns c' and writes h' to *h_new. */
float cg_lstm_unit(int H, int j, __global const float *gi, int has_gi,
                   __global const float *gh, int has_gh, __global const float *b_ih,
                   __global const float *b_hh, float c, float *h_new) {
    float a[4];
    for (int k = 0; k < 4; k++) {
        float x = has_gi ? gi[k * H + j] : 0.0f;
        float y = has_gh ? gh[k * H + j] : 0.0f;
        a[k] = x + b_ih[k * H + j] + y + b_hh[k * H + j];
    }
    float ig = cg_sigmoid(a[0]);
    float fg = cg_sigmoid(a[1]);
    float gg = tanh(a[2]);
    float og = cg_sigmoid(a[3]);
    float cn = fg * c + ig * gg;
    *h_new = og * tanh(cn);
    return cn;
}

/* ---- cells: ws holds gi [B, 3H] then gh [B, 3H] (4H for the LSTM) ---- */

#if CG_WANT(gru_cell_gates)
__kernel void gru_cell_gates(int B, int H, int has_gi, __global const float *ws,
                             __global const float *b_ih, __global const float *b_hh,
                             __global const float *h, __global float *h_out) {
    long idx = get_global_id(0);
    if (idx >= (long)B * H) return;
    long b = idx / H;
    int j = (int)(idx - b * H);
    long G = 3L * H;
    h_out[idx] = cg_gru_unit(H, j, ws + b * G, has_gi, ws + (long)B * G + b * G, 1, b_ih, b_hh,
                             h[idx]);
}
#endif

/* write_c == 0: the node has no c' output (c_out is then any valid buffer
 * and is not written). */
#if CG_WANT(lstm_cell_gates)
__kernel void lstm_cell_gates(int B, int H, int has_gi, __global const float *ws,
                              __global const float *b_ih, __global const float *b_hh,
                              __global const float *c, __global float *h_out,
                              __global float *c_out, int write_c) {
    long idx = get_global_id(0);
    if (idx >= (long)B * H) return;
    long b = idx / H;
    int j = (int)(idx - b * H);
    long G = 4L * H;
    float hn;
    float cn = cg_lstm_unit(H, j, ws + b * G, has_gi, ws + (long)B * G + b * G, 1, b_ih, b_hh,
                            c[idx], &hn);
    h_out[idx] = hn;
    if (write_c) c_out[idx] = cn;
}
#endif

/* ---- one time step of one direction of a sequence layer ----
 * Step t of row b (lengths clamped into [0, S]) processes position t
 * (forward) or len_b - 1 - t (reverse) when t < len_b: it reads the input
 * projection proj [B*S, G*H] at that position and gh = h W_hh^T [B, G*H],
 * updates the state row hs[h_off + b*H ..] (and cs for the LSTM) in place and
 * writes h' to out[o_off + (b*S + pos)*DH + col + j]. When t >= len_b the
 * state is kept and position t of the output (a padded one) gets 0, so over
 * t = 0..S-1 every position of this direction's columns is written exactly
 * once. first != 0: the state is zero (gh is not read), the first step
 * from zero states (from given ones every step has first == 0). */

#if CG_WANT(gru_seq_step)
__kernel void gru_seq_step(int B, int S, int H, int t, int reverse, int first, int has_gi,
                           __global const int *lengths, __global const float *proj,
                           long p_off, __global const float *gh, long g_off,
                           __global const float *b_ih, __global const float *b_hh,
                           __global float *hs, long h_off, __global float *out, long o_off,
                           int DH, int col) {
    long idx = get_global_id(0);
    if (idx >= (long)B * H) return;
    long b = idx / H;
    int j = (int)(idx - b * H);
    int len = clamp(lengths[b], 0, S);
    __global float *h = hs + h_off + idx;
    __global float *o = out + o_off + b * S * DH + col + j;
    if (t >= len) {
        if (first) *h = 0.0f;
        o[(long)t * DH] = 0.0f;
        return;
    }
    int pos = reverse ? len - 1 - t : t;
    long G = 3L * H;
    float hp = first ? 0.0f : *h;
    float hn = cg_gru_unit(H, j, proj + p_off + (b * S + pos) * G, has_gi, gh + g_off + b * G,
                           !first, b_ih, b_hh, hp);
    *h = hn;
    o[(long)pos * DH] = hn;
}
#endif

#if CG_WANT(lstm_seq_step)
__kernel void lstm_seq_step(int B, int S, int H, int t, int reverse, int first, int has_gi,
                            __global const int *lengths, __global const float *proj,
                            long p_off, __global const float *gh, long g_off,
                            __global const float *b_ih, __global const float *b_hh,
                            __global float *hs, long h_off, __global float *cs, long c_off,
                            __global float *out, long o_off, int DH, int col) {
    long idx = get_global_id(0);
    if (idx >= (long)B * H) return;
    long b = idx / H;
    int j = (int)(idx - b * H);
    int len = clamp(lengths[b], 0, S);
    __global float *h = hs + h_off + idx;
    __global float *c = cs + c_off + idx;
    __global float *o = out + o_off + b * S * DH + col + j;
    if (t >= len) {
        if (first) {
            *h = 0.0f;
            *c = 0.0f;
        }
        o[(long)t * DH] = 0.0f;
        return;
    }
    int pos = reverse ? len - 1 - t : t;
    long G = 4L * H;
    float cp = first ? 0.0f : *c;
    float hn;
    float cn = cg_lstm_unit(H, j, proj + p_off + (b * S + pos) * G, has_gi, gh + g_off + b * G,
                            !first, b_ih, b_hh, cp, &hn);
    *h = hn;
    *c = cn;
    o[(long)pos * DH] = hn;
}
#endif

/* Zeroes n floats of buf from off (final states when S == 0). */
#if CG_WANT(rnn_zero)
__kernel void rnn_zero(long n, __global float *buf, long off) {
    long i = get_global_id(0);
    if (i < n) buf[off + i] = 0.0f;
}
#endif

/* Copies n floats from src + s_off to dst + d_off: a layer's initial
 * state into the state it updates (or, when S == 0, to the final states). */
#if CG_WANT(rnn_copy)
__kernel void rnn_copy(long n, __global const float *src, long s_off, __global float *dst, long d_off) {
    long i = get_global_id(0);
    if (i < n) dst[d_off + i] = src[s_off + i];
}
#endif

/* Widens n 16-bit weights (their ushort bits: bf16 when bf16 != 0, else
 * f16) to floats at buf + off, exactly as the CPU reads them: the layer
 * ops' 16-bit weights on a device, once per run (no cl_khr_fp16 needed). */
#if CG_WANT(rnn_widen)
__kernel void rnn_widen(long n, __global const ushort *w, int bf16, __global float *buf, long off) {
    long i = get_global_id(0);
    if (i < n) buf[off + i] = bf16 ? as_float((uint)w[i] << 16) : cg_f16_to_f32(w[i]);
}
#endif

/* Widens n int8 weights of rows of `cols` to floats at buf + off, each times
 * its row's scale: the layer ops' int8 weights on a device, once per run. */
#if CG_WANT(rnn_widen_q8)
__kernel void rnn_widen_q8(long n, __global const char *w, long cols, __global const float *scale,
                           __global float *buf, long off) {
    long i = get_global_id(0);
    if (i < n) buf[off + i] = scale[i / cols] * (float)w[i];
}
#endif
