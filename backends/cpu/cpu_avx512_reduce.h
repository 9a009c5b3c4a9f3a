/* The transposing reduction of 16 AVX-512 accumulators that the f32 kernels
 * (cpu_gemm_avx512.c) and the int8 ones (cpu_q8_avx512.c) share: lane p of
 * the result is the sum of the 16 lanes of x[p], made with the additions
 * (i, i+8), (i, i+4), (i, i+2), (i, i+1) lane by lane, the same as
 * reducing one accumulator alone. CG_AVX512_REDUCE16(NAME, T, ADD, TO_PS,
 * FROM_PS) defines `static T NAME(const T *x)` for vectors of type T added
 * with ADD; TO_PS / FROM_PS view a T as __m512 and back for the in-lane
 * shuffles (identity for __m512; casts move bits only). Include after
 * <immintrin.h>, with CG_INLINE and the file's target attribute CG_AVX512
 * defined. */
#ifndef CG_BACKEND_CPU_AVX512_REDUCE_H
#define CG_BACKEND_CPU_AVX512_REDUCE_H

/* Four 16-lane sums: 128-bit lane l of the result holds the four partial
 * sums (i + 8, then i + 4 folded) of the l-th argument. Then the final
 * two folds across the four results. Macros: clang wants the shuffles'
 * immediates constant at the call. */
#define CG_AVX512_FOLD4(T, ADD, TO_PS, FROM_PS, a, b, c, d, out)                                                       \
    do {                                                                                                               \
        const __m512 a_ = TO_PS(a), b_ = TO_PS(b), c_ = TO_PS(c), d_ = TO_PS(d);                                       \
        const T ab_ = ADD(FROM_PS(_mm512_shuffle_f32x4(a_, b_, 0x44)), FROM_PS(_mm512_shuffle_f32x4(a_, b_, 0xEE)));   \
        const T cd_ = ADD(FROM_PS(_mm512_shuffle_f32x4(c_, d_, 0x44)), FROM_PS(_mm512_shuffle_f32x4(c_, d_, 0xEE)));   \
        const __m512 abp_ = TO_PS(ab_), cdp_ = TO_PS(cd_);                                                             \
        (out) = ADD(FROM_PS(_mm512_shuffle_f32x4(abp_, cdp_, 0x88)), FROM_PS(_mm512_shuffle_f32x4(abp_, cdp_, 0xDD))); \
    } while (0)

#define CG_AVX512_REDUCE16(NAME, T, ADD, TO_PS, FROM_PS)                                                       \
    CG_INLINE CG_AVX512 T NAME(const T *x) {                                                                   \
        T r0, r1, r2, r3;                                                                                      \
        CG_AVX512_FOLD4(T, ADD, TO_PS, FROM_PS, x[0], x[4], x[8], x[12], r0);                                  \
        CG_AVX512_FOLD4(T, ADD, TO_PS, FROM_PS, x[1], x[5], x[9], x[13], r1);                                  \
        CG_AVX512_FOLD4(T, ADD, TO_PS, FROM_PS, x[2], x[6], x[10], x[14], r2);                                 \
        CG_AVX512_FOLD4(T, ADD, TO_PS, FROM_PS, x[3], x[7], x[11], x[15], r3);                                 \
        const __m512 p0 = TO_PS(r0), p1 = TO_PS(r1), p2 = TO_PS(r2), p3 = TO_PS(r3);                           \
        const T v01 = ADD(FROM_PS(_mm512_shuffle_ps(p0, p1, 0x44)), FROM_PS(_mm512_shuffle_ps(p0, p1, 0xEE))); \
        const T v23 = ADD(FROM_PS(_mm512_shuffle_ps(p2, p3, 0x44)), FROM_PS(_mm512_shuffle_ps(p2, p3, 0xEE))); \
        const __m512 q01 = TO_PS(v01), q23 = TO_PS(v23);                                                       \
        return ADD(FROM_PS(_mm512_shuffle_ps(q01, q23, 0x88)), FROM_PS(_mm512_shuffle_ps(q01, q23, 0xDD)));    \
    }

#endif
