/* Broadcast kernels of any element type: the binary arithmetic of
 * ops/elementwise.c, and the comparisons, logic and where of ops/compare.c.
 *
 * binx_*: o = BOP(a, b), built with -DTA=<input type> -DTU=<its unsigned
 * type, TA itself for float> -DTO=<output type>, -DTF for float inputs and
 * one -DBOP_<op>; integer inputs also with -DTC (the type computed in: int
 * for the 8- and 16-bit types), -DTW (the unsigned type arithmetic wraps
 * in: uint for those) and -DTSIGNED for signed types (ops/int_ops.h).
 * Integer arithmetic is done in TW so that it wraps around like the CPU
 * kernels (signed overflow is undefined in OpenCL C as in C, and ushort *
 * ushort overflows the int it promotes to); integer division truncates,
 * x / 0 is 0; integer power by squaring, a negative exponent gives 0 but
 * for bases 1 and -1. Float division and power are IEEE's / and pow; a NaN
 * in either input of max and min gives NaN (numpy.maximum). Comparisons
 * and logic give uchar 0 or 1 (bool).
 * mod: the sign of the divisor (Python's %, ONNX fmod 0), or with
 * -DMOD_FMOD the dividend's (C's % and fmod); integer x mod 0 is 0 (as
 * numpy), floats as IEEE fmod then moved into the divisor's sign, a zero
 * result taking the divisor's sign. Shifts (BOP_SHL, BOP_SHR; ONNX
 * BitShift) by a negative amount or by the width or more give 0, or -1 for
 * a negative x shifted right; a signed x shifts right arithmetically.
 * Contraction into fma is off, as in elementwise.cl.
 * where_nd: o = c ? x : y, built with -DT=<unsigned type of the element
 * size> (data movement: any dtype).
 * IDX as in elementwise.cl. */

#pragma OPENCL FP_CONTRACT OFF

#ifndef TA
#define TA int
#define TU uint
#define TO int
#define BOP_ADD 1
#endif
#ifndef T
#define T uint
#endif
#ifndef TC
#define TC TA
#endif
#ifndef TW
#define TW TU
#endif

#if defined(BOP_ADD)
#define BOP(x, y) ((TA)(TU)((TW)(x) + (TW)(y))) /* (TU) again: to the element's width */
#elif defined(BOP_SUB)
#define BOP(x, y) ((TA)(TU)((TW)(x) - (TW)(y)))
#elif defined(BOP_MUL)
#define BOP(x, y) ((TA)(TU)((TW)(x) * (TW)(y)))
#elif defined(BOP_DIV) && defined(TF)
#define BOP(x, y) ((x) / (y))
#elif defined(BOP_DIV)
inline TA cg_idiv(TA x, TA y) {
    if (y == (TA)0) return (TA)0;
    /* MIN / -1 wraps to MIN (signed types only: (TA)-1 is 255 for uchar) */
    if ((TA)-1 < (TA)0 && y == (TA)-1) return (TA)(TU)((TU)0 - (TU)x);
    return x / y;
}
#define BOP(x, y) cg_idiv((x), (y))
#elif defined(BOP_POW) && defined(TF)
#define BOP(x, y) pow((x), (y))
#elif defined(BOP_POW)
inline TA cg_ipow(TA x, TA e) {
    if (e < (TA)0) /* never for unsigned TA */
        return x == (TA)1 ? (TA)1 : x == (TA)-1 ? ((e & (TA)1) ? (TA)-1 : (TA)1) : (TA)0;
    TW r = 1, b = (TW)(TU)x;
    while (e) {
        if (e & (TA)1) r *= b;
        b *= b;
        e >>= 1;
    }
    return (TA)(TU)r;
}
#define BOP(x, y) cg_ipow((x), (y))
#elif defined(BOP_MOD) && defined(TF)
inline TA cg_fmod(TA x, TA y) {
    TA r = fmod(x, y);
#ifndef MOD_FMOD
    if (r == (TA)0) return copysign((TA)0, y);
    if ((r < (TA)0) != (y < (TA)0)) r += y;
#endif
    return r;
}
#define BOP(x, y) cg_fmod((x), (y))
#elif defined(BOP_MOD)
inline TA cg_imod(TC x, TC y) {
    if (y == (TC)0) return (TA)0;
#ifdef TSIGNED
    if (y == (TC)-1) return (TA)0; /* MIN % -1 overflows in C */
#endif
    TC r = x % y;
#if defined(TSIGNED) && !defined(MOD_FMOD)
    if (r != (TC)0 && ((r < (TC)0) != (y < (TC)0))) r += y;
#endif
    return (TA)r;
}
#define BOP(x, y) cg_imod((TC)(x), (TC)(y))
#elif defined(BOP_SHL) || defined(BOP_SHR)
/* OpenCL C takes a shift count modulo the width: the range is checked */
inline TA cg_shift(TC x, TC y) {
    const TC bits = (TC)(sizeof(TA) * 8);
#ifdef TSIGNED
    if (y < (TC)0 || y >= bits) {
#ifdef BOP_SHR
        return x < (TC)0 ? (TA)-1 : (TA)0;
#else
        return (TA)0;
#endif
    }
#else
    if (y >= bits) return (TA)0;
#endif
#ifdef BOP_SHL
    return (TA)(TU)((TW)x << y);
#else
    return (TA)(x >> y); /* TC signed for a signed TA: sign-extending */
#endif
}
#define BOP(x, y) cg_shift((TC)(x), (TC)(y))
#elif defined(BOP_BAND)
#define BOP(x, y) ((TA)((x) & (y)))
#elif defined(BOP_BOR)
#define BOP(x, y) ((TA)((x) | (y)))
#elif defined(BOP_BXOR)
#define BOP(x, y) ((TA)((x) ^ (y)))
#elif defined(BOP_MAX)
#define BOP(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y)) /* x != x: NaN, never for integers */
#elif defined(BOP_MIN)
#define BOP(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))
#elif defined(BOP_EQ)
#define BOP(x, y) ((x) == (y))
#elif defined(BOP_LT)
#define BOP(x, y) ((x) < (y))
#elif defined(BOP_LE)
#define BOP(x, y) ((x) <= (y))
#elif defined(BOP_GT)
#define BOP(x, y) ((x) > (y))
#elif defined(BOP_GE)
#define BOP(x, y) ((x) >= (y))
#elif defined(BOP_AND)
#define BOP(x, y) ((x) != (TA)0 && (y) != (TA)0)
#elif defined(BOP_OR)
#define BOP(x, y) ((x) != (TA)0 || (y) != (TA)0)
#elif defined(BOP_XOR)
#define BOP(x, y) (((x) != (TA)0) != ((y) != (TA)0))
#endif

/* One step of decomposing the flat output index r over broadcast dim c
 * (dims stored innermost first in the .s0 .. .s7 components); ST_STEP
 * adds dim c's offset of one input. */
#define ST_STEP(st, i, c) i += k * (IDX)st.s##c;
#define BC_STEP(c, STEPS)                                                      \
    if (nd > c) {                                                              \
        IDX d = (IDX)dims.s##c, q = r / d, k = r - q * d;                      \
        STEPS(c)                                                               \
        r = q;                                                                 \
    }
#define BC_ALL(STEPS)                                                          \
    BC_STEP(0, STEPS) BC_STEP(1, STEPS) BC_STEP(2, STEPS) BC_STEP(3, STEPS)    \
    BC_STEP(4, STEPS) BC_STEP(5, STEPS) BC_STEP(6, STEPS) BC_STEP(7, STEPS)

/* o[i] = BOP(a[i * sa], b[i * sb]) with sa, sb in {0, 1}. */
#if CG_WANT(binx_flat)
__kernel void binx_flat(__global const TA *a, long sa, __global const TA *b, long sb,
                        __global TO *o, long n) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    TA x = a[i * (IDX)sa], y = b[i * (IDX)sb];
    o[i] = (TO)BOP(x, y);
}
#endif

/* General broadcast over nd (1..8) collapsed dims: sizes in dims, the
 * element strides of a and b in sta and stb (0 = broadcast). */
#if CG_WANT(binx_nd)
#define STEPS2(c) ST_STEP(sta, ia, c) ST_STEP(stb, ib, c)
__kernel void binx_nd(__global const TA *a, __global const TA *b, __global TO *o, long n,
                      int nd, long8 dims, long8 sta, long8 stb) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    IDX r = i, ia = 0, ib = 0;
    BC_ALL(STEPS2)
    TA x = a[ia], y = b[ib];
    o[i] = (TO)BOP(x, y);
}
#endif

/* o[i] = c ? x : y over a broadcast of the three (c bool, any nonzero
 * byte true). */
#if CG_WANT(where_nd)
#define STEPS3(c) ST_STEP(stc, ic, c) ST_STEP(stx, ix, c) ST_STEP(sty, iy, c)
__kernel void where_nd(__global const uchar *cond, __global const T *x, __global const T *y,
                       __global T *o, long n, int nd, long8 dims, long8 stc, long8 stx,
                       long8 sty) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    IDX r = i, ic = 0, ix = 0, iy = 0;
    BC_ALL(STEPS3)
    o[i] = cond[ic] ? x[ix] : y[iy];
}
#endif

/* o[i] = x at the broadcast index (expand), any element type T. */
#if CG_WANT(expand_nd)
#define STEPS1(c) ST_STEP(stx, ix, c)
__kernel void expand_nd(__global const T *x, __global T *o, long n, int nd, long8 dims, long8 stx) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    IDX r = i, ix = 0;
    BC_ALL(STEPS1)
    o[i] = x[ix];
}
#endif

/* y[i] = !x[i] for bool (any nonzero byte true). */
#if CG_WANT(logical_not)
__kernel void logical_not(__global const uchar *x, __global uchar *y, long n) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    y[i] = (uchar)(x[i] == (uchar)0);
}
#endif
