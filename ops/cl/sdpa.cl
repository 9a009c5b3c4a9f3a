/* Kernels of ops/sdpa.c (OpenCL C 1.2): fused scaled-dot-product
 * attention. q, k, v and y are addressed through strides (batch, head,
 * row; a row's elements contiguous) so one kernel reads both layouts:
 * st0 = (q batch, q head, q row, k batch, k head, k row, v batch, v head),
 * st1 = (v row, y batch, y head, y row, mask batch, head, query, key), the
 * mask's 0 where it broadcasts. Query head h reads kv head h / group. A
 * score is dot(q row, k row) * scale (+ mask); with `causal` query i sees
 * keys j < i + S - L + 1 only. Softmax over the keys seen, online: a
 * running max m and sum l per row, the accumulator rescaled by
 * exp(m_old - m_new) when the max grows; a row with no key left (all
 * excluded) gives 0, a NaN score makes the row NaN. IDX is int unless
 * built with -DIDX=long. Contraction into fma is off so the dot products
 * round like the CPU's. */
#pragma OPENCL FP_CONTRACT OFF

/* Keys query row i sees. */
inline int sdpa_seen(int i, int L, int S, int causal) {
    if (!causal) return S;
    const int n = i + S - L + 1;
    return n < 0 ? 0 : n > S ? S : n;
}

/* The batch row of k and v that q's row b reads. */
inline IDX sdpa_kv_row(__global const int *kv, int has_kv, IDX nkv, IDX b) {
    if (!has_kv) return b;
    const IDX r = (IDX)kv[b];
    return r < 0 ? 0 : r >= nkv ? nkv - 1 : r;
}

/* The new running max of a row: mt, the max of new scores, when larger;
 * NaN sticks. */
inline float sdpa_max(float m, float mt) { return isnan(m) ? m : (isnan(mt) || mt > m) ? mt : m; }

/* The score of query row qr against key row kr, for the kernels that take
 * keys one at a time: their dot product in order, times scale, plus the
 * mask's element mask_at where there is a mask. */
inline float sdpa_score(__global const float *qr, __global const float *kr, int D, float scale, int has_mask,
                        __global const float *mask_at) {
    float s = 0.0f;
    for (int d = 0; d < D; d++) s += qr[d] * kr[d];
    s *= scale;
    return has_mask ? s + *mask_at : s;
}

#if CG_WANT(sdpa_tiled)
/* One work-group per (batch, head, tile of bq query rows); nqb tiles per
 * head. Local memory: qs [bq, D] (at least one float per row), ks [bk, D],
 * vs [bk, Dv], ss [bq, bk] (scores, then their exponentials), acc [bq, Dv],
 * stat [3, bq] (max, sum, rescale of each row). Every loop over the tile's
 * elements strides by the group size, so any size works; barriers part
 * the phases (load a key tile, scores, row statistics, accumulate).
 * qo, ko, vo (every kernel): elements before q's, k's and v's first (a
 * packed q | k | v tensor given three times). With has_kv, q's batch row b
 * reads k's and v's batch row kv[b] (clamped into [0, nkv): the host
 * checks the index and fails the run on one outside). */
__kernel void sdpa_tiled(__global const float *q, __global const float *k, __global const float *v,
                         __global const float *mask, __global float *y, int hq, int group, int L, int S, int D,
                         int Dv, int has_mask, int causal, float scale, IDX8 st0, IDX8 st1, int bq, int bk,
                         int nqb, __local float *qs, __local float *ks, __local float *vs, __local float *ss,
                         __local float *acc, __local float *stat, IDX qo, IDX ko, IDX vo,
                         __global const int *kv, int has_kv, IDX nkv) {
    q += qo, k += ko, v += vo;
    const int lid = (int)get_local_id(0), nt = (int)get_local_size(0);
    const IDX grp = (IDX)get_group_id(0), bh = grp / nqb, b = bh / hq;
    const int h = (int)(bh - b * hq), i0 = (int)(grp - bh * nqb) * bq, kvh = h / group;
    const int rows = min(bq, L - i0), kend = sdpa_seen(i0 + rows - 1, L, S, causal), dq = max(D, 1);
    __global const float *qh = q + b * st0.s0 + h * st0.s1 + i0 * st0.s2;
    const IDX kb = sdpa_kv_row(kv, has_kv, nkv, b);
    __global const float *kh = k + kb * st0.s3 + kvh * st0.s4, *vh = v + kb * st0.s6 + kvh * st0.s7;
    __local float *m = stat, *l = stat + bq, *alpha = stat + 2 * bq;
    for (int x = lid; x < rows * D; x += nt) qs[(x / D) * dq + x % D] = qh[(x / D) * st0.s2 + x % D];
    for (int x = lid; x < rows * Dv; x += nt) acc[x] = 0.0f;
    for (int r = lid; r < rows; r += nt) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
    }
    for (int j0 = 0; j0 < kend; j0 += bk) {
        const int n = min(bk, kend - j0);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int x = lid; x < n * D; x += nt) ks[(x / D) * dq + x % D] = kh[(j0 + x / D) * st0.s5 + x % D];
        for (int x = lid; x < n * Dv; x += nt) vs[x] = vh[(j0 + x / Dv) * st1.s0 + x % Dv];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int x = lid; x < rows * n; x += nt) {
            const int r = x / n, j = x - r * n;
            if (j0 + j >= sdpa_seen(i0 + r, L, S, causal)) continue;
            float s = 0.0f;
            for (int d = 0; d < D; d++) s += qs[r * dq + d] * ks[j * dq + d];
            s *= scale;
            if (has_mask) s += mask[b * st1.s4 + h * st1.s5 + (i0 + r) * st1.s6 + (j0 + j) * st1.s7];
            ss[r * bk + j] = s;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int r = lid; r < rows; r += nt) {
            const int nr = min(n, sdpa_seen(i0 + r, L, S, causal) - j0);
            __local float *sr = ss + r * bk;
            float mt = -INFINITY, sum = 0.0f;
            for (int j = 0; j < nr; j++) mt = sdpa_max(mt, sr[j]);
            const float mo = m[r], mn = sdpa_max(mo, mt);
            if (mn == -INFINITY) { /* nothing seen yet: the keys add 0 */
                for (int j = 0; j < nr; j++) sr[j] = 0.0f;
                alpha[r] = 1.0f;
                continue;
            }
            for (int j = 0; j < nr; j++) {
                sr[j] = exp(sr[j] - mn);
                sum += sr[j];
            }
            alpha[r] = exp(mo - mn);
            m[r] = mn;
            l[r] = l[r] * alpha[r] + sum;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int x = lid; x < rows * Dv; x += nt) {
            const int r = x / Dv, c = x - r * Dv, nr = min(n, sdpa_seen(i0 + r, L, S, causal) - j0);
            float a = acc[x] * alpha[r];
            for (int j = 0; j < nr; j++) a += ss[r * bk + j] * vs[j * Dv + c];
            acc[x] = a;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    __global float *yh = y + b * st1.s1 + h * st1.s2 + i0 * st1.s3;
    for (int x = lid; x < rows * Dv; x += nt) {
        const int r = x / Dv, c = x - r * Dv;
        yh[r * st1.s3 + c] = m[r] == -INFINITY ? 0.0f : acc[x] / l[r];
    }
}
#endif

#if CG_WANT(sdpa_rows)
/* One work-item per query row (rows of them) with its Dv <= SDPA_DV_MAX
 * accumulators in registers: the row's scores one key at a time, the
 * online softmax of sdpa_simple, no barrier and no local memory (CPU
 * devices: PoCL runs sdpa_tiled's barrier phases at several us per
 * work-group). */
#define SDPA_DV_MAX 32
__kernel void sdpa_rows(__global const float *q, __global const float *k, __global const float *v,
                        __global const float *mask, __global float *y, int hq, int group, int L, int S, int D,
                        int Dv, int has_mask, int causal, float scale, IDX8 st0, IDX8 st1, IDX rows, IDX qo,
                        IDX ko, IDX vo, __global const int *kv, int has_kv, IDX nkv) {
    q += qo, k += ko, v += vo;
    const IDX row = (IDX)get_global_id(0), bh = row / L, b = bh / hq;
    if (row >= rows) return;
    const int i = (int)(row - bh * L), h = (int)(bh - b * hq), kvh = h / group;
    __global const float *qr = q + b * st0.s0 + h * st0.s1 + i * st0.s2;
    const IDX kb = sdpa_kv_row(kv, has_kv, nkv, b);
    __global const float *kh = k + kb * st0.s3 + kvh * st0.s4, *vh = v + kb * st0.s6 + kvh * st0.s7;
    const int n = sdpa_seen(i, L, S, causal);
    float acc[SDPA_DV_MAX];
    for (int c = 0; c < Dv; c++) acc[c] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int j = 0; j < n; j++) {
        const float s = sdpa_score(qr, kh + j * st0.s5, D, scale, has_mask,
                                   mask + (has_mask ? b * st1.s4 + h * st1.s5 + i * st1.s6 + j * st1.s7 : 0));
        const float mn = sdpa_max(m, s);
        if (mn == -INFINITY) continue;
        const float al = exp(m - mn), p = exp(s - mn);
        l = l * al + p;
        for (int c = 0; c < Dv; c++) acc[c] = acc[c] * al + p * vh[j * st1.s0 + c];
        m = mn;
    }
    __global float *yr = y + b * st1.s1 + h * st1.s2 + i * st1.s3;
    for (int c = 0; c < Dv; c++) yr[c] = m == -INFINITY ? 0.0f : acc[c] / l;
}
#endif

#if CG_WANT(sdpa_simple)
/* One work-item per element of y (total of them): its row's scores one key at a time from
 * global memory (the same online softmax with tiles of one key), for
 * devices whose local memory holds no tile. */
__kernel void sdpa_simple(__global const float *q, __global const float *k, __global const float *v,
                          __global const float *mask, __global float *y, int hq, int group, int L, int S, int D,
                          int Dv, int has_mask, int causal, float scale, IDX8 st0, IDX8 st1, IDX total, IDX qo,
                          IDX ko, IDX vo, __global const int *kv, int has_kv, IDX nkv) {
    q += qo, k += ko, v += vo;
    const IDX gid = (IDX)get_global_id(0), row = gid / Dv, bh = row / L, b = bh / hq;
    if (gid >= total) return;
    const int c = (int)(gid - row * Dv), i = (int)(row - bh * L), h = (int)(bh - b * hq), kvh = h / group;
    __global const float *qr = q + b * st0.s0 + h * st0.s1 + i * st0.s2;
    const IDX kb = sdpa_kv_row(kv, has_kv, nkv, b);
    __global const float *kh = k + kb * st0.s3 + kvh * st0.s4, *vh = v + kb * st0.s6 + kvh * st0.s7 + c;
    const int n = sdpa_seen(i, L, S, causal);
    float m = -INFINITY, l = 0.0f, a = 0.0f;
    for (int j = 0; j < n; j++) {
        const float s = sdpa_score(qr, kh + j * st0.s5, D, scale, has_mask,
                                   mask + (has_mask ? b * st1.s4 + h * st1.s5 + i * st1.s6 + j * st1.s7 : 0));
        const float mn = sdpa_max(m, s);
        if (mn == -INFINITY) continue;
        const float al = exp(m - mn), p = exp(s - mn);
        l = l * al + p;
        a = a * al + p * vh[j * st1.s0];
        m = mn;
    }
    y[b * st1.s1 + h * st1.s2 + i * st1.s3 + c] = m == -INFINITY ? 0.0f : a / l;
}
#endif
