/* The AVX-512 VNNI int8 product in outer-product form, for products with
 * many rows of A (an encoder's, a beam's): B is copied, a panel of
 * CG_Q8_NP rows at a time, into a buffer where each group of four k holds
 * the panel's rows side by side (CG_Q8_NP x 4 bytes), unsigned (b + 128);
 * a tile of CG_Q8_MP rows of A then adds, per group of four k, each row's
 * four bytes broadcast against the three vectors of the panel. There is no
 * horizontal sum at the end (the dot form's cost at k of a few hundred) and
 * no flip of A per step, and the panel stays in L1 for every tile of A.
 *
 * Each sum gains 128 times its A row's sum, which is taken away; sums are
 * exact, so the result is the dot form's, bit for bit: (float)sum * as[i]
 * * bs[j] (cg_q8_out). */
#include "cpu_gemm_kernels.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>
#include <string.h>

#define CG_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define CG_INLINE static inline __attribute__((always_inline))

/* Four bytes of A as one int32 (memcpy: no aliasing of int8 as int32). */
CG_INLINE int32_t cg_ld32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* acc += u8 b . s8 a per int32 lane (see cpu_q8_avx512.c for why asm). */
#define CG_DP(acc, b, a) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(b), "v"(a))

/* Lane p of out[r] = lane r of in[p] for 16 vectors of 16 dwords: rows of
 * 16 groups of four bytes become, per group, one vector of the 16 rows. */
CG_INLINE CG_AVX512 void cg_transpose16(__m512i *x) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(x[i], x[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(x[i], x[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        x[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        x[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        x[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        x[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    /* x[4q + s] now holds, in 128-bit lane l, rows 4q..4q+3 of group 4l + s */
    for (int i = 0; i < 4; i++) {
        const __m512i a = x[i], b = x[4 + i], c = x[8 + i], d = x[12 + i];
        const __m512i ab_lo = _mm512_shuffle_i32x4(a, b, 0x44), ab_hi = _mm512_shuffle_i32x4(a, b, 0xEE);
        const __m512i cd_lo = _mm512_shuffle_i32x4(c, d, 0x44), cd_hi = _mm512_shuffle_i32x4(c, d, 0xEE);
        t[i] = _mm512_shuffle_i32x4(ab_lo, cd_lo, 0x88);
        t[4 + i] = _mm512_shuffle_i32x4(ab_lo, cd_lo, 0xDD);
        t[8 + i] = _mm512_shuffle_i32x4(ab_hi, cd_hi, 0x88);
        t[12 + i] = _mm512_shuffle_i32x4(ab_hi, cd_hi, 0xDD);
    }
    for (int i = 0; i < 16; i++) x[i] = t[i];
}

/* The panel of B rows j0 .. j0 + nr (nr <= CG_Q8_NP; missing rows zero)
 * over k4 groups of four k (k4 a multiple of 16; k past g->k zero). */
static CG_AVX512 void cg_q8_pack(const cg_gemm_args *g, int64_t j0, int nr, int64_t k4, uint8_t *panel) {
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int q = 0; q < CG_Q8_NP / 16; q++)
        for (int64_t kc = 0; kc < k4; kc += 16) {
            const int64_t k0 = kc * 4, left = g->k - k0;
            const __mmask64 km = left >= 64 ? ~(__mmask64)0 : left <= 0 ? 0 : _cvtu64_mask64(~0ull >> (64 - left));
            __m512i x[16];
            for (int r = 0; r < 16; r++) {
                const int row = q * 16 + r;
                x[r] =
                    row < nr ? _mm512_maskz_loadu_epi8(km, g->bq + (j0 + row) * g->ldb + k0) : _mm512_setzero_si512();
                x[r] = _mm512_xor_si512(x[r], flip);
            }
            cg_transpose16(x);
            for (int s = 0; s < 16; s++) _mm512_store_si512((void *)(panel + (kc + s) * (CG_Q8_NP * 4) + q * 64), x[s]);
        }
}

/* One row's three accumulators against the panel's three vectors. */
#define CG_ROW3(i)                                                    \
    do {                                                              \
        const __m512i av = _mm512_set1_epi32(cg_ld32(a##i + 4 * kk)); \
        CG_DP(c##i##0, b0, av);                                       \
        CG_DP(c##i##1, b1, av);                                       \
        CG_DP(c##i##2, b2, av);                                       \
    } while (0)

/* C rows i0 .. i0 + mr (mr <= CG_Q8_MP), columns j0 .. j0 + nr, from the
 * packed panel; asum: 128 times each A row's sum. Rows past mr repeat row
 * i0 and are not stored. */
static CG_AVX512 void cg_q8_ptile(const cg_gemm_args *g, const uint8_t *panel, int64_t k4, const int32_t *asum,
                                  int64_t i0, int mr, int64_t j0, int nr) {
    const int8_t *base = g->aq + i0 * g->ldaq, *a0 = base, *a1 = mr > 1 ? base + g->ldaq : base,
                 *a2 = mr > 2 ? base + 2 * g->ldaq : base, *a3 = mr > 3 ? base + 3 * g->ldaq : base,
                 *a4 = mr > 4 ? base + 4 * g->ldaq : base, *a5 = mr > 5 ? base + 5 * g->ldaq : base,
                 *a6 = mr > 6 ? base + 6 * g->ldaq : base, *a7 = mr > 7 ? base + 7 * g->ldaq : base;
    __m512i c00, c01, c02, c10, c11, c12, c20, c21, c22, c30, c31, c32;
    __m512i c40, c41, c42, c50, c51, c52, c60, c61, c62, c70, c71, c72;
    c00 = c01 = c02 = c10 = c11 = c12 = c20 = c21 = c22 = c30 = c31 = c32 = _mm512_setzero_si512();
    c40 = c41 = c42 = c50 = c51 = c52 = c60 = c61 = c62 = c70 = c71 = c72 = _mm512_setzero_si512();
    for (int64_t kk = 0; kk < k4; kk++) {
        const uint8_t *p = panel + kk * (CG_Q8_NP * 4);
        const __m512i b0 = _mm512_load_si512((const void *)p), b1 = _mm512_load_si512((const void *)(p + 64)),
                      b2 = _mm512_load_si512((const void *)(p + 128));
        CG_ROW3(0);
        CG_ROW3(1);
        CG_ROW3(2);
        CG_ROW3(3);
        CG_ROW3(4);
        CG_ROW3(5);
        CG_ROW3(6);
        CG_ROW3(7);
    }
    const __m512i acc[CG_Q8_MP][3] = {{c00, c01, c02}, {c10, c11, c12}, {c20, c21, c22}, {c30, c31, c32},
                                      {c40, c41, c42}, {c50, c51, c52}, {c60, c61, c62}, {c70, c71, c72}};
    for (int v = 0; v < 3 && v * 16 < nr; v++) {
        const int cols = nr - v * 16 < 16 ? nr - v * 16 : 16;
        const __mmask16 cm = (__mmask16)((1u << cols) - 1);
        const __m512 sb = _mm512_maskz_loadu_ps(cm, g->bs + j0 + v * 16);
        const __m512 bias = g->bias ? _mm512_maskz_loadu_ps(cm, g->bias + j0 + v * 16) : _mm512_setzero_ps();
        for (int i = 0; i < mr; i++) {
            const __m512i sum = _mm512_sub_epi32(acc[i][v], _mm512_set1_epi32(asum[i0 + i]));
            __m512 r = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(sum), _mm512_set1_ps(g->as[i0 + i])), sb);
            if (g->bias) r = _mm512_add_ps(r, bias); /* as a separate pass would: one rounding */
            _mm512_mask_storeu_ps(g->c + (i0 + i) * g->ldc + j0 + v * 16, cm, r);
        }
    }
}
#undef CG_ROW3

const cg_q8_packed_kernels cg_q8_packed_avx512 = {cg_q8_pack, cg_q8_ptile};

#else
typedef int cg_q8_packed_avx512_not_x86;
#endif
