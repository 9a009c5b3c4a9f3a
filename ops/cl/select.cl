/* Kernel of ops/select.c: log_softmax_topk along the last axis (OpenCL C
 * 1.2). IDX is int unless the host builds with -DIDX=long for tensors of
 * 2^31 elements or more. */
#pragma OPENCL FP_CONTRACT OFF

/* Entries a work-item keeps in private memory between rescans. */
#define KP 8

/* Strict order of topk: larger value first (NaN largest), then lower index. */
inline int lst_before(float a, IDX ia, float b, IDX ib) {
    if (a != a) return b == b || ia < ib;
    if (b != b) return 0;
    return a > b || (a == b && ia < ib);
}

/*
 * One work-group per row (exactly `rows` groups; the work-group size is a
 * power of two). The max and the sum of exponentials are reduced as
 * softmax_wg reduces them, so the values equal that kernel's log_softmax.
 *
 * Selection: work-item w owns the elements j = w (mod wg). Each keeps, in
 * ranking order, the best KP of its elements that rank after the last one
 * it gave up (`lv`/`li`); k rounds then pick the best head over the group
 * in local memory, and the winner's owner moves to its next entry,
 * rescanning its elements when its list runs out. A row costs one pass per
 * KP entries a work-item gives up: one pass in all unless the k best
 * crowd into few work-items.
 */
#if CG_WANT(lsm_topk_wg)
__kernel void lsm_topk_wg(__global const float *x, __global float *vals, __global int *idx,
                          long rows, long n_, long k_, __local float *red, __local int *redi) {
    const IDX r = (IDX)get_group_id(0);
    /* launched with exactly `rows` groups: no early return (softmax.cl says why) */
    const IDX lid = (IDX)get_local_id(0), wg = (IDX)get_local_size(0);
    const IDX n = (IDX)n_, k = (IDX)k_;
    __global const float *xr = x + r * n;

    float mx = -INFINITY;
    for (IDX j = lid; j < n; j += wg) {
        const float v = xr[j];
        mx = (v > mx || v != v) ? v : mx;
    }
    red[lid] = mx;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (IDX h = wg / 2; h > 0; h /= 2) {
        if (lid < h) {
            const float a = red[lid], b = red[lid + h];
            red[lid] = (b > a || b != b) ? b : a;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    mx = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    float sum = 0.0f;
    for (IDX j = lid; j < n; j += wg) sum += exp(xr[j] - mx);
    red[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (IDX h = wg / 2; h > 0; h /= 2) {
        if (lid < h) red[lid] += red[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    sum = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    /* All -inf: log_softmax is -inf everywhere (not NaN from -inf - -inf). */
    const int all_neg_inf = mx == -INFINITY;
    const float lse = mx + cg_log(sum);

    float lv[KP];
    IDX li[KP];
    int cnt = 0, head = 0, more = 1; /* more: elements after the list may remain */
    float last_v = 0.0f;
    IDX last_i = -1; /* none given up yet */
    for (IDX round = 0; round < k; round++) {
        if (head == cnt && more) {
            /* Refill: the best KP of my elements that rank after (last_v, last_i). */
            cnt = head = 0;
            for (IDX j = lid; j < n; j += wg) {
                const float v = all_neg_inf ? -INFINITY : xr[j] - lse;
                if (last_i >= 0 && !lst_before(last_v, last_i, v, j)) continue;
                if (cnt == KP && !lst_before(v, j, lv[KP - 1], li[KP - 1])) continue;
                int p = cnt < KP ? cnt++ : KP - 1;
                while (p > 0 && lst_before(v, j, lv[p - 1], li[p - 1])) {
                    lv[p] = lv[p - 1];
                    li[p] = li[p - 1];
                    p--;
                }
                lv[p] = v;
                li[p] = j;
            }
            more = cnt == KP;
        }
        const int has = head < cnt;
        red[lid] = has ? lv[head] : 0.0f;
        redi[lid] = has ? (int)li[head] : -1;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (IDX h = wg / 2; h > 0; h /= 2) {
            if (lid < h) {
                const int ib = redi[lid + h];
                if (ib >= 0 && (redi[lid] < 0 || lst_before(red[lid + h], ib, red[lid], redi[lid]))) {
                    red[lid] = red[lid + h];
                    redi[lid] = ib;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        const int best = redi[0];
        if (lid == 0) {
            vals[r * k + round] = red[0];
            idx[r * k + round] = best;
        }
        if (has && best == (int)li[head]) {
            last_v = lv[head];
            last_i = li[head];
            head++;
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* red[0] is read before the next round writes */
    }
}
#endif
