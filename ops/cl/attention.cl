/* OpenCL kernels of attn_score and attn_context (attention.c). Built with
 * -DTX=.. -DTY=..: the work-group is TX x TY (TX, TY powers of two), and
 * the kernels reduce over a local-memory tree, so the result does not depend
 * on how many work-groups run. */

#pragma OPENCL FP_CONTRACT OFF

/* Kinds of attn_score, as score_kind in attention.c. */
#define KIND_ADDITIVE 0
#define KIND_DOT 1
#define KIND_SCALED_DOT 2
#define KIND_GENERAL 3
#define KIND_COSINE 4

/* e[r] for the rows r = b*S + s of keys [B*S, K] (with has_rows: of keys
 * [n_keys*S, K], row rows[b]*S + s); TX work-items of a row
 * (dimension 0) share its K columns, TY rows per work-group (dimension 1).
 * vec [B, K] from vec_off is the per-batch vector: the projected query
 * W_q q (additive; bias b_q and weights v added here), W q (general) or q
 * itself; has_vec == 0: it is zero (an empty query, H == 0).
 *   additive: e = sum_i v_i tanh((vec_i + b_q_i) + key_i)
 *   dot, general: e = key . vec;  scaled_dot: e = alpha (key . vec)
 *   cosine: e = (key . vec) / max(|vec| |key|, 1e-8) */
#if CG_WANT(attn_score_rows)
__kernel __attribute__((reqd_work_group_size(TX, TY, 1)))
void attn_score_rows(int B, int S, int K, int kind, int has_vec, float alpha,
                     __global const float *keys, __global const float *vec, long vec_off,
                     __global const float *b_q, __global const float *v,
                     __global float *e, __global const int *rows, int has_rows, long n_keys) {
    __local float s_dot[TY][TX];
    __local float s_kk[TY][TX];
    __local float s_qq[TY][TX];
    const int lx = get_local_id(0), ly = get_local_id(1);
    const long row = (long)get_group_id(1) * TY + ly;
    const long n_rows = (long)B * S;
    float dot = 0.0f, kk = 0.0f, qq = 0.0f;
    const long b = row / S;
    /* rows[b] names the keys row of batch row b (has_rows); outside [0,
     * n_keys) the score is 0, as gather_rows gives zero rows. */
    const long src = row < n_rows && has_rows ? rows[b] : b;
    const int ok = row < n_rows && src >= 0 && src < n_keys;
    if (ok) {
        __global const float *kr = keys + (src * S + (row - b * S)) * K;
        __global const float *vb = vec + vec_off + b * K;
        if (kind == KIND_ADDITIVE) {
            for (int i = lx; i < K; i += TX) {
                float u = has_vec ? vb[i] : 0.0f;
                dot += v[i] * tanh((u + b_q[i]) + kr[i]);
            }
        } else if (has_vec) {
            for (int i = lx; i < K; i += TX) {
                float k = kr[i], u = vb[i];
                dot += k * u;
                kk += k * k;
                qq += u * u;
            }
        }
    }
    s_dot[ly][lx] = dot;
    s_kk[ly][lx] = kk;
    s_qq[ly][lx] = qq;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = TX / 2; w > 0; w >>= 1) {
        if (lx < w) {
            s_dot[ly][lx] += s_dot[ly][lx + w];
            s_kk[ly][lx] += s_kk[ly][lx + w];
            s_qq[ly][lx] += s_qq[ly][lx + w];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lx == 0 && row < n_rows) {
        float r = s_dot[ly][0];
        if (kind == KIND_COSINE) {
            float den = sqrt(s_qq[ly][0]) * sqrt(s_kk[ly][0]);
            r = r / (den > 1e-8f ? den : 1e-8f);
        } else if (kind == KIND_SCALED_DOT) {
            r = alpha * r;
        }
        e[row] = r;
    }
}
#endif

/* c[b, k] = sum_s a[b, s] values[b, s, k] (has_rows: values[rows[b], s, k];
 * 0 for a row outside [0, n_values)): TX columns k per work-group
 * (dimension 0, adjacent work-items read adjacent values), TY work-items
 * share the S positions (dimension 1 of the work-group); the groups of
 * dimension 1 are the batch rows. */
#if CG_WANT(attn_context)
__kernel __attribute__((reqd_work_group_size(TX, TY, 1)))
void attn_context(int B, int S, int K, __global const float *a,
                  __global const float *values, __global float *c,
                  __global const int *rows, int has_rows, long n_values) {
    __local float part[TY][TX];
    const int lx = get_local_id(0), ly = get_local_id(1);
    const long k = (long)get_group_id(0) * TX + lx;
    const long b = get_group_id(1);
    float acc = 0.0f;
    const long src = has_rows && b < B ? rows[b] : b;
    if (k < K && b < B && src >= 0 && src < n_values) {
        __global const float *ab = a + b * S;
        __global const float *vb = values + src * S * K + k;
        for (int s = ly; s < S; s += TY) acc += ab[s] * vb[(long)s * K];
    }
    part[ly][lx] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = TY / 2; w > 0; w >>= 1) {
        if (ly < w) part[ly][lx] += part[ly + w][lx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (ly == 0 && k < K && b < B) c[b * K + k] = part[0][lx];
}
#endif
