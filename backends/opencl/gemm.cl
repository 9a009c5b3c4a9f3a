/* SGEMM kernels of the OpenCL backend (OpenCL C 1.2, float only, no
 * extensions). cl_gemm.c builds each kernel as its own program (the
 * backend adds -DCG_ONE_KERNEL=1 -DCG_KERNEL_<name>=1, cl_backend.h) with
 * the options it needs:
 *
 *   -DCG_GEMV -DGEMV_LK=.. -DGEMV_ROWS=.. -DGEMV_RV=..   cg_gemv_rows and
 *   -DCG_GEMV -DGEMV_CR=.. -DGEMV_CK=.. -DGEMV_CV=..     cg_gemv_cols, the
 *       matrix-vector products for m == 1 or n == 1;
 *   -DCG_GEMV -DGEMV_RV=16   cg_gemm_nt_cpu, C = A B^T on CPU devices;
 *   -DCG_GEMV   cg_gemm_scale (C = beta C, for k == 0 or alpha == 0);
 *   -DCG_GEMM_TM=.. -DCG_GEMM_TN=.. -DCG_GEMM_TK=.. -DCG_GEMM_WM=.. -DCG_GEMM_WN=..
 *       cg_gemm_tiled, a local-memory tiled GEMM for any M, N, K.
 *
 * Every index is an element (float) index that the host has checked to fit
 * in an int. beta == 0 never reads C, so NaN or garbage there is overwritten. */

#ifdef CG_GEMV

/* Vectors of GEMV_RV (4, 8 or 16) floats along a row, and their sum. */
#if GEMV_RV == 16
#define floatR float16
#define vloadR vload16
#define SUMR(v) sum4((v).s0123 + (v).s4567 + (v).s89ab + (v).scdef)
#elif GEMV_RV == 8
#define floatR float8
#define vloadR vload8
#define SUMR(v) sum4((v).lo + (v).hi)
#else
#define floatR float4
#define vloadR vload4
#define SUMR(v) sum4(v)
#endif
#define sum4(v) dot((v), (float4)(1.0f))

/* y[y_off + r*incy] = alpha * sum_p W[w_off + r*rs + p*ps] * x[x_off + p*incx]
 * + beta * y[...] for r < R: one matrix-vector product (C = A B^T with more
 * rows of A goes to cg_gemm_nt_cpu on CPU devices and to the tiled GEMM
 * elsewhere). A work-group of GEMV_LK x GEMV_ROWS items handles GEMV_ROWS
 * rows, GEMV_LK items (a power of two) sharing each row's dot product.
 * vec: 2 = GEMV_RV-float vectors through aligned pointers (ps == incx == 1,
 * and w_off, rs, x_off multiples of GEMV_RV), 1 = vloadn (ps == incx == 1,
 * any alignment), 0 = scalar strided loads. */
#if CG_WANT(cg_gemv_rows)
__kernel __attribute__((reqd_work_group_size(GEMV_LK, GEMV_ROWS, 1)))
void cg_gemv_rows(const int R, const int K, const float alpha, const float beta,
                  __global const float *W, const int w_off, const int rs, const int ps,
                  __global const float *x, const int x_off, const int incx,
                  __global float *y, const int y_off, const int incy, const int vec)
{
#if GEMV_LK > 1
    __local float part[GEMV_ROWS][GEMV_LK];
#endif
    const int lk = get_local_id(0), lr = get_local_id(1);
    const int r = get_group_id(1) * GEMV_ROWS + lr;
    float acc = 0.0f;
    if (r < R) {
        __global const float *w = W + w_off + r * rs;
        __global const float *xv = x + x_off;
        if (vec != 0) {
            const int KV = K / GEMV_RV;
            floatR av = (floatR)(0.0f);
            if (vec == 2) {
                __global const floatR *wv = (__global const floatR *)w;
                __global const floatR *xvv = (__global const floatR *)xv;
                for (int q = lk; q < KV; q += GEMV_LK) av = mad(wv[q], xvv[q], av);
            } else {
                for (int q = lk; q < KV; q += GEMV_LK)
                    av = mad(vloadR(q, w), vloadR(q, xv), av);
            }
            acc = SUMR(av);
            for (int p = KV * GEMV_RV + lk; p < K; p += GEMV_LK) acc = mad(w[p], xv[p], acc);
        } else {
            for (int p = lk; p < K; p += GEMV_LK) acc = mad(w[p * ps], xv[p * incx], acc);
        }
    }
#if GEMV_LK > 1
    part[lr][lk] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = GEMV_LK / 2; s > 0; s >>= 1) {
        if (lk < s) part[lr][lk] += part[lr][lk + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    acc = part[lr][0];
#endif
    if (lk == 0 && r < R) {
        const int yi = y_off + r * incy;
        const float v = alpha * acc;
        y[yi] = beta == 0.0f ? v : mad(beta, y[yi], v);
    }
}
#endif

/* The same product when W is contiguous along r (rs == 1): each item owns
 * GEMV_CV (4, 8 or 16) consecutive outputs, read as one vector per p
 * (coalesced across items on GPUs, whole cache lines per item on CPUs);
 * GEMV_CK items (a power of two) split p and add up in local memory.
 * vec: 2 = aligned vector pointers (w_off and ps multiples of GEMV_CV),
 * 1 = vloadn. */
#if GEMV_CV == 16
#define floatV float16
#define vloadV vload16
#define vstoreV vstore16
#elif GEMV_CV == 8
#define floatV float8
#define vloadV vload8
#define vstoreV vstore8
#else
#define floatV float4
#define vloadV vload4
#define vstoreV vstore4
#endif

#if CG_WANT(cg_gemv_cols)
__kernel __attribute__((reqd_work_group_size(GEMV_CR, GEMV_CK, 1)))
void cg_gemv_cols(const int R, const int K, const float alpha, const float beta,
                  __global const float *W, const int w_off, const int ps,
                  __global const float *x, const int x_off, const int incx,
                  __global float *y, const int y_off, const int incy, const int vec)
{
#if GEMV_CK > 1
    __local floatV part[GEMV_CK][GEMV_CR];
#endif
    const int lr = get_local_id(0), lk = get_local_id(1);
    const int r0 = (get_group_id(0) * GEMV_CR + lr) * GEMV_CV;
    floatV acc = (floatV)(0.0f);
    if (r0 < R) {
        __global const float *w = W + w_off + r0;
        __global const float *xv = x + x_off;
        if (r0 + GEMV_CV <= R) {
            if (vec == 2) {
                for (int p = lk; p < K; p += GEMV_CK)
                    acc = mad(*(__global const floatV *)(w + p * ps), (floatV)(xv[p * incx]), acc);
            } else {
                for (int p = lk; p < K; p += GEMV_CK)
                    acc = mad(vloadV(0, w + p * ps), (floatV)(xv[p * incx]), acc);
            }
        } else {
            const int left = R - r0; /* 1 .. GEMV_CV - 1 */
            float t[GEMV_CV];
            for (int q = 0; q < GEMV_CV; q++) t[q] = 0.0f;
            for (int p = lk; p < K; p += GEMV_CK) {
                const float xp = xv[p * incx];
                __global const float *wp = w + p * ps;
                for (int q = 0; q < left; q++) t[q] = mad(wp[q], xp, t[q]);
            }
            acc = vloadV(0, t);
        }
    }
#if GEMV_CK > 1
    part[lk][lr] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = GEMV_CK / 2; s > 0; s >>= 1) {
        if (lk < s) part[lk][lr] += part[lk + s][lr];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    acc = part[0][lr];
#endif
    if (lk == 0 && r0 < R) {
        float vs[GEMV_CV];
        vstoreV(alpha * acc, 0, vs);
        const int left = min(R - r0, GEMV_CV);
        for (int q = 0; q < left; q++) {
            const int yi = y_off + (r0 + q) * incy;
            y[yi] = beta == 0.0f ? vs[q] : mad(beta, y[yi], vs[q]);
        }
    }
}
#endif

/* C[i, j] = beta * C[i, j] for i < M, j < N (0 when beta == 0, NaN or not). */
/* C = alpha A B^T + beta C, or with has_bias alpha A B^T + bias[j] (a
 * linear layer in one launch: the same sum as the bias filled into C first
 * and beta = 1), on CPU devices (a linear layer's x W^T): one
 * work-item per 4 rows of B (W), which stay in its cache while it walks all
 * of A's rows 4 at a time; a 4 x 4 tile of 16-float accumulators along k
 * takes 8 vector loads per 16 multiply-adds, where cg_gemv_rows takes 2 per
 * 1 (the CPU backend's own kernel has the same tile). Rows past M or N
 * repeat the last one and are not stored. Requires GEMV_RV == 16. */
#if CG_WANT(cg_gemm_nt_cpu)
#define NT_SUM(v) sum4((v).s0123 + (v).s4567 + (v).s89ab + (v).scdef)
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void cg_gemm_nt_cpu(const int M, const int N, const int K, const float alpha, const float beta,
                    __global const float *A, const int a_off, const int lda,
                    __global const float *B, const int b_off, const int ldb,
                    __global float *C, const int c_off, const int ldc,
                    __global const float *bias, const int has_bias)
{
    const int r0 = get_global_id(0) * 4;
    if (r0 >= N) return;
    __global const float *b0 = B + b_off + r0 * ldb;
    __global const float *b1 = B + b_off + min(r0 + 1, N - 1) * ldb;
    __global const float *b2 = B + b_off + min(r0 + 2, N - 1) * ldb;
    __global const float *b3 = B + b_off + min(r0 + 3, N - 1) * ldb;
    const int KV = K / 16;
    for (int z0 = 0; z0 < M; z0 += 4) {
        __global const float *a0 = A + a_off + z0 * lda;
        __global const float *a1 = A + a_off + min(z0 + 1, M - 1) * lda;
        __global const float *a2 = A + a_off + min(z0 + 2, M - 1) * lda;
        __global const float *a3 = A + a_off + min(z0 + 3, M - 1) * lda;
        float16 c00 = 0.0f, c01 = 0.0f, c02 = 0.0f, c03 = 0.0f, c10 = 0.0f, c11 = 0.0f,
                c12 = 0.0f, c13 = 0.0f, c20 = 0.0f, c21 = 0.0f, c22 = 0.0f, c23 = 0.0f,
                c30 = 0.0f, c31 = 0.0f, c32 = 0.0f, c33 = 0.0f;
        for (int q = 0; q < KV; q++) {
            const float16 w0 = vload16(q, b0), w1 = vload16(q, b1), w2 = vload16(q, b2),
                          w3 = vload16(q, b3);
            float16 x = vload16(q, a0);
            c00 = mad(x, w0, c00); c01 = mad(x, w1, c01); c02 = mad(x, w2, c02); c03 = mad(x, w3, c03);
            x = vload16(q, a1);
            c10 = mad(x, w0, c10); c11 = mad(x, w1, c11); c12 = mad(x, w2, c12); c13 = mad(x, w3, c13);
            x = vload16(q, a2);
            c20 = mad(x, w0, c20); c21 = mad(x, w1, c21); c22 = mad(x, w2, c22); c23 = mad(x, w3, c23);
            x = vload16(q, a3);
            c30 = mad(x, w0, c30); c31 = mad(x, w1, c31); c32 = mad(x, w2, c32); c33 = mad(x, w3, c33);
        }
        float s[4][4] = {{NT_SUM(c00), NT_SUM(c01), NT_SUM(c02), NT_SUM(c03)},
                         {NT_SUM(c10), NT_SUM(c11), NT_SUM(c12), NT_SUM(c13)},
                         {NT_SUM(c20), NT_SUM(c21), NT_SUM(c22), NT_SUM(c23)},
                         {NT_SUM(c30), NT_SUM(c31), NT_SUM(c32), NT_SUM(c33)}};
        for (int p = KV * 16; p < K; p++) {
            const float av[4] = {a0[p], a1[p], a2[p], a3[p]};
            const float bv[4] = {b0[p], b1[p], b2[p], b3[p]};
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) s[i][j] = mad(av[i], bv[j], s[i][j]);
        }
        for (int i = 0; i < 4 && z0 + i < M; i++)
            for (int j = 0; j < 4 && r0 + j < N; j++) {
                const int ci = c_off + (z0 + i) * ldc + r0 + j;
                const float v = alpha * s[i][j];
                C[ci] = has_bias ? v + bias[r0 + j] : beta == 0.0f ? v : mad(beta, C[ci], v);
            }
    }
}
#endif

#if CG_WANT(cg_gemm_scale)
__kernel void cg_gemm_scale(const int M, const int N, const float beta,
                            __global float *C, const int c_off, const int ldc)
{
    const int j = get_global_id(0), i = get_global_id(1);
    if (i < M && j < N) {
        const int ci = c_off + i * ldc + j;
        C[ci] = beta == 0.0f ? 0.0f : beta * C[ci];
    }
}
#endif

#endif /* CG_GEMV */

#ifdef CG_GEMM_TM

#define TM CG_GEMM_TM
#define TN CG_GEMM_TN
#define TK CG_GEMM_TK
#define WM CG_GEMM_WM
#define WN CG_GEMM_WN
#define TMT (TM / WM) /* items along M: local dimension 1 */
#define TNT (TN / WN) /* items along N: local dimension 0 */
#define NT (TMT * TNT)

/* An item's WN consecutive columns are one vector. */
#if WN == 8
#define floatW float8
#define vloadW vload8
#define vstoreW vstore8
#elif WN == 4
#define floatW float4
#define vloadW vload4
#define vstoreW vstore4
#elif WN == 2
#define floatW float2
#define vloadW vload2
#define vstoreW vstore2
#elif WN == 1
#define floatW float
#define vloadW(i, p) ((p)[i])
#define vstoreW(v, i, p) ((p)[i] = (v))
#else
#error "CG_GEMM_WN must be 1, 2, 4 or 8"
#endif

/* C = alpha op(A) op(B) + beta C, row-major, with op folded into strides:
 * op(A)[i, p] = A[a_off + i*a_si + p*a_sp], op(B)[p, j] = B[b_off + p*b_sp + j*b_sj].
 * A work-group computes a TM x TN tile of C; item (tx, ty) computes rows
 * ty + r*TMT (r < WM) by the WN consecutive columns tx*WN.., kept as
 * vectors. TK-deep slices of op(A) and op(B) go through local memory,
 * zero-filled past M, N and K. */
#if CG_WANT(cg_gemm_tiled)
__kernel __attribute__((reqd_work_group_size(TNT, TMT, 1)))
void cg_gemm_tiled(const int M, const int N, const int K, const float alpha, const float beta,
                   __global const float *A, const int a_off, const int a_si, const int a_sp,
                   __global const float *B, const int b_off, const int b_sp, const int b_sj,
                   __global float *C, const int c_off, const int ldc)
{
    __local float As[TK][TM + 1];
    __local float Bs[TK][TN];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int tid = ty * TNT + tx;
    const int i0 = get_group_id(1) * TM, j0 = get_group_id(0) * TN;

    floatW acc[WM];
    for (int wm = 0; wm < WM; wm++) acc[wm] = (floatW)(0.0f);

    for (int p0 = 0; p0 < K; p0 += TK) {
        /* Consecutive items read consecutive addresses of whichever
         * dimension is contiguous in memory. */
        if (a_sp == 1) {
            for (int l = tid; l < TM * TK; l += NT) {
                const int ii = l / TK, pp = l % TK, gi = i0 + ii, gp = p0 + pp;
                As[pp][ii] = (gi < M && gp < K) ? A[a_off + gi * a_si + gp] : 0.0f;
            }
        } else {
            for (int l = tid; l < TM * TK; l += NT) {
                const int ii = l % TM, pp = l / TM, gi = i0 + ii, gp = p0 + pp;
                As[pp][ii] = (gi < M && gp < K) ? A[a_off + gi * a_si + gp * a_sp] : 0.0f;
            }
        }
        if (b_sj == 1) {
            for (int l = tid; l < TN * TK; l += NT) {
                const int jj = l % TN, pp = l / TN, gj = j0 + jj, gp = p0 + pp;
                Bs[pp][jj] = (gj < N && gp < K) ? B[b_off + gp * b_sp + gj] : 0.0f;
            }
        } else {
            for (int l = tid; l < TN * TK; l += NT) {
                const int jj = l / TK, pp = l % TK, gj = j0 + jj, gp = p0 + pp;
                Bs[pp][jj] = (gj < N && gp < K) ? B[b_off + gp * b_sp + gj * b_sj] : 0.0f;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int pp = 0; pp < TK; pp++) {
            const floatW bv = vloadW(tx, &Bs[pp][0]);
            for (int wm = 0; wm < WM; wm++)
                acc[wm] = mad((floatW)(As[pp][ty + wm * TMT]), bv, acc[wm]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    const int jb = j0 + tx * WN;
    for (int wm = 0; wm < WM; wm++) {
        const int i = i0 + ty + wm * TMT;
        if (i >= M) break;
        float vs[WN];
        vstoreW(alpha * acc[wm], 0, vs);
        for (int q = 0; q < WN && jb + q < N; q++) {
            const int ci = c_off + i * ldc + jb + q;
            C[ci] = beta == 0.0f ? vs[q] : mad(beta, C[ci], vs[q]);
        }
    }
}
#endif

#endif /* CG_GEMM_TM */
