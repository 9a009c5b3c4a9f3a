/* Matrix products: a tiled batched GEMM for broadcasting matmul with many
 * small matrices, and the zeros for K = 0 around cg_host_cl_sgemm (the bias
 * rows are shape.cl's copy_rows). Large products go through cg_host_cl_sgemm.
 *
 * Build options: -DIDX=int or -DIDX=long (index type, long when a tensor
 * has 2^31 elements or more), -DIDX8=int8 or long8 to match; for bmm also
 * -DTS=<tile side> -DTA=0|1 -DTB=0|1. */

/* y[i] = 0 for i < total. */
#if CG_WANT(fill_zero)
__kernel void fill_zero(__global float *y, IDX total) {
    IDX i = (IDX)get_global_id(0);
    if (i < total) y[i] = 0.0f;
}
#endif

#ifdef TS
/* C[z] = op(A[z]) op(B[z]) for every batch z = get_global_id(2), with C
 * [batch, M, N] contiguous; A[z] is [M, K] ([K, M] with TA) at the offset
 * sum_d idx_d * astr_d, where idx is z's row-major index in the `nb` batch
 * dims `bdims` (a stride is 0 where the operand broadcasts); B[z] is [K, N]
 * ([N, K] with TB) likewise with bstr. One work-item per element of C, a
 * TS x TS tile per work-group, K walked in TS steps through local memory;
 * every load runs along contiguous memory for each transpose variant. */
#if CG_WANT(bmm)
__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void bmm(__global const float *A, __global const float *B, __global float *C, IDX M, IDX N,
         IDX K, int nb, IDX8 bdims, IDX8 astr, IDX8 bstr) {
    __local float As[TS][TS + 1]; /* As[k][r] = A(row0 + r, t + k) */
    __local float Bs[TS][TS + 1]; /* Bs[k][c] = B(t + k, col0 + c) */
    const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
    const IDX col0 = (IDX)get_group_id(0) * TS, row0 = (IDX)get_group_id(1) * TS;
    const IDX z = (IDX)get_global_id(2);
    IDX aoff, boff;
    cg_index_offsets(z, nb, bdims, astr, bstr, &aoff, &boff);
    float acc = 0.0f;
    for (IDX t = 0; t < K; t += TS) {
#if TA
        { /* A is [K, M]: contiguous along the row index */
            IDX r = row0 + lx, k = t + ly;
            As[ly][lx] = (r < M && k < K) ? A[aoff + k * M + r] : 0.0f;
        }
#else
        { /* A is [M, K]: contiguous along k */
            IDX r = row0 + ly, k = t + lx;
            As[lx][ly] = (r < M && k < K) ? A[aoff + r * K + k] : 0.0f;
        }
#endif
#if TB
        { /* B is [N, K]: contiguous along k */
            IDX c = col0 + ly, k = t + lx;
            Bs[lx][ly] = (c < N && k < K) ? B[boff + c * K + k] : 0.0f;
        }
#else
        { /* B is [K, N]: contiguous along the column index */
            IDX c = col0 + lx, k = t + ly;
            Bs[ly][lx] = (c < N && k < K) ? B[boff + k * N + c] : 0.0f;
        }
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; k++) acc += As[k][ly] * Bs[k][lx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const IDX row = row0 + ly, col = col0 + lx;
    if (row < M && col < N) C[z * M * N + row * N + col] = acc;
}
#endif
#endif

/* bmm_rows: C[z] = op(A[z]) op(B[z]) as bmm computes it, for few rows
 * (M <= 4: a decoder step's attention context [B, 1, S] @ [B, S, K]), one
 * work-item per element of C walking K with no local memory: bmm's tiles
 * would sit mostly idle there. Neighbouring work-items take neighbouring
 * columns, so B [K, N] is read along its rows. -DTA, -DTB as for bmm. */
#if CG_WANT(bmm_rows)
__kernel void bmm_rows(__global const float *A, __global const float *B, __global float *C, IDX M, IDX N, IDX K,
                       int nb, IDX8 bdims, IDX8 astr, IDX8 bstr) {
    const IDX col = (IDX)get_global_id(0), row = (IDX)get_global_id(1), z = (IDX)get_global_id(2);
    if (col >= N || row >= M) return;
    IDX aoff, boff;
    cg_index_offsets(z, nb, bdims, astr, bstr, &aoff, &boff);
    float acc = 0.0f;
    for (IDX k = 0; k < K; k++) {
#if TA
        const float x = A[aoff + k * M + row];
#else
        const float x = A[aoff + row * K + k];
#endif
#if TB
        acc += x * B[boff + col * K + k];
#else
        acc += x * B[boff + k * N + col];
#endif
    }
    C[z * M * N + row * N + col] = acc;
}
#endif

/* matmul_integer: y = (a - za) @ (b - zb) in int, one work-item per output
 * element, for a [rows, K] (rows = batch * M) of MA and b [K, N] of MB
 * (-DMA, -DMB: uchar or char). A zero point is used where use_z* is set,
 * one per row of a (or column of b) where step_z* is set. Summed in uint
 * so that a sum past int's range wraps as on the CPU (it cannot for K up
 * to 33025: |term| <= 255 * 255). */
#ifndef MA
#define MA uchar
#define MB uchar
#endif
#if CG_WANT(matmul_integer)
__kernel void matmul_integer(__global const MA *a, __global const MB *b, __global const MA *za, int use_za,
                             int step_za, __global const MB *zb, int use_zb, int step_zb, __global int *y,
                             long m, long k, long n, IDX total) {
    IDX i = (IDX)get_global_id(0);
    if (i >= total) return;
    IDX r = i / (IDX)n, c = i - r * (IDX)n;
    int zav = use_za ? (int)za[step_za ? r % (IDX)m : 0] : 0;
    int zbv = use_zb ? (int)zb[step_zb ? c : 0] : 0;
    __global const MA *ar = a + r * (IDX)k;
    uint acc = 0;
    for (long j = 0; j < k; j++) acc += (uint)(((int)ar[j] - zav) * ((int)b[(IDX)j * (IDX)n + c] - zbv));
    y[i] = (int)acc;
}
#endif
