/* Unary elementwise kernels of ops/elementwise.c (OpenCL C 1.2, f32 and
 * i32); the binary ones, of every dtype, are in broadcast.cl.
 *
 * un_int: neg, abs, sign or bitwise not (-DUOP_NEG, _ABS, _SIGN, _NOT) of
 * any integer type T, computed in TC and wrapping in TW as broadcast.cl
 * does (-DTSIGNED for a signed T): -MIN and |MIN| are MIN.
 *
 * Every kernel takes the real element count and bounds-checks, since the host
 * rounds the global size up to a multiple of the work-group size. IDX is the
 * index type: int unless the host builds with -DIDX=long for tensors of more
 * than 2^31 - 1 elements. i32 negation is done in uint so that it wraps
 * around modulo 2^32 like the CPU kernel (signed overflow is undefined in
 * OpenCL C as in C). Contraction into fma is off so that affine rounds like
 * the CPU kernel. */
#pragma OPENCL FP_CONTRACT OFF

/* un_int's types when the source is built whole */
#ifndef T
#define T int
#define TSIGNED 1
#endif
#ifndef TC
#define TC T
#endif
#ifndef TW
#define TW uint
#endif

/* ---- unary operators (x and y may be the same buffer) ---- */

#define UNARY(NAME, T, EXPR)                                                    \
    __kernel void un_##NAME(__global const T *xp, __global T *yp, long n) {     \
        IDX i = (IDX)get_global_id(0);                                          \
        if (i >= (IDX)n) return;                                                \
        T x = xp[i];                                                            \
        yp[i] = (EXPR);                                                         \
    }

#if CG_WANT(un_neg_f32)
UNARY(neg_f32, float, -x)
#endif
#if CG_WANT(un_int)
#if defined(UOP_NEG)
#define UOP(v) ((T)((TW)0 - (TW)(v)))
#elif defined(UOP_ABS) && defined(TSIGNED)
/* the builtin (unsigned |v|, so |MIN| wraps back to MIN): a select of the
 * negation becomes llvm.abs.i16, which Oclgrind cannot run */
#define UOP(v) ((T)abs(v))
#elif defined(UOP_ABS)
#define UOP(v) ((T)(v))
#elif defined(UOP_SIGN) && defined(TSIGNED)
#define UOP(v) ((T)(((v) > (TC)0) - ((v) < (TC)0)))
#elif defined(UOP_SIGN)
#define UOP(v) ((T)((v) != (TC)0))
#else
#define UOP(v) ((T)~(TW)(v))
#endif
/* x widened to TC first: the 8- and 16-bit types compute in int */
UNARY(int, T, UOP((TC)x))
#endif
#if CG_WANT(un_tanh)
UNARY(tanh, float, tanh(x))
#endif
#if CG_WANT(un_sigmoid)
UNARY(sigmoid, float, cg_sigmoid(x))
#endif
#if CG_WANT(un_exp)
UNARY(exp, float, exp(x))
#endif
#if CG_WANT(un_log)
UNARY(log, float, cg_log(x))
#endif
#if CG_WANT(un_sqrt)
UNARY(sqrt, float, sqrt(x))
#endif
#if CG_WANT(un_relu)
UNARY(relu, float, x < 0.0f ? 0.0f : x) /* NaN stays NaN */
#endif

#if CG_WANT(un_affine)
__kernel void un_affine(__global const float *xp, __global float *yp, long n, float alpha,
                        float beta) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    yp[i] = alpha * xp[i] + beta;
}
#endif

