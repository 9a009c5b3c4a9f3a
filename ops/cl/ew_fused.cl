/* Kernel of ops/ew_fused.c: a chain of f32 element-wise ops in one launch.
 * The host builds it per program: -DNIN=<inputs> and -DEXPR=<expression of
 * a0 .. a(NIN-1)>, e.g. -DNIN=3 -DEXPR=(erf(a0*a1)+a2), and the bit masks
 * -DBCAST (inputs smaller than the output) and -DSCALAR (one element).
 * Element i of the output reads input k at i % mk (mk its element count:
 * the output's, a trailing suffix's, or 1). Contraction into fma is off,
 * and the helpers are those of the unfused kernels (cg_sigmoid shared
 * with elementwise.cl and rnn.cl through sigmoid_common.cl, math.cl's
 * forms), so each step rounds as the unfused op does. IDX is int unless built with -DIDX=long. */
#pragma OPENCL FP_CONTRACT OFF

#ifndef NIN
#define NIN 1
#define EXPR a0
#endif

inline float cg_relu(float x) { return x < 0.0f ? 0.0f : x; /* NaN stays NaN */ }
inline float cg_square(float x) { return x * x; }
/* x^3 rounded once, as the CPU's cube in double (no fp64 needed): x * x
 * split exactly into h + l by fma, then h * x + l * x with one rounding
 * (l * x's own is far below the result's last bit) */
inline float cg_cube(float x) {
    const float h = x * x, l = fma(x, x, -h);
    return isinf(h) ? h * x : fma(h, x, l * x);
}

#ifndef BCAST
#define BCAST 0
#endif
#ifndef SCALAR
#define SCALAR 0
#endif

/* input k: its buffer and element count */
#define XIN(k) , __global const float *x##k, long m##k
/* its element for output index i: bit k of SCALAR (one element) reads
 * element 0, of BCAST (a suffix) i modulo its size, else element i; the
 * host sets the bits, so no branch is left at run time */
#define XLOAD(k)                                                                       \
    const float a##k = ((SCALAR >> k) & 1) ? x##k[0]                                   \
                       : ((BCAST >> k) & 1) ? x##k[i % (IDX)m##k] : x##k[i];

#if CG_WANT(ew_fused)
__kernel void ew_fused(__global float *y, long n XIN(0)
#if NIN > 1
                           XIN(1)
#endif
#if NIN > 2
                               XIN(2)
#endif
#if NIN > 3
                                   XIN(3)
#endif
#if NIN > 4
                                       XIN(4)
#endif
#if NIN > 5
                                           XIN(5)
#endif
#if NIN > 6
                                               XIN(6)
#endif
#if NIN > 7
                                                   XIN(7)
#endif
) {
    const IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    XLOAD(0)
#if NIN > 1
    XLOAD(1)
#endif
#if NIN > 2
    XLOAD(2)
#endif
#if NIN > 3
    XLOAD(3)
#endif
#if NIN > 4
    XLOAD(4)
#endif
#if NIN > 5
    XLOAD(5)
#endif
#if NIN > 6
    XLOAD(6)
#endif
#if NIN > 7
    XLOAD(7)
#endif
    y[i] = EXPR;
}
#endif
