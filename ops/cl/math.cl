/* Kernels of ops/math.c: elementwise f32 functions with up to two float
 * parameters a and b (the op's attributes). Bounds-checked like
 * elementwise.cl; IDX is int unless built with -DIDX=long. Contraction into
 * fma is off so that results round like the CPU kernels. */
#pragma OPENCL FP_CONTRACT OFF

#define MATH(NAME, EXPR)                                                        \
    __kernel void mu_##NAME(__global const float *xp, __global float *yp, long n, \
                            float a, float b) {                                 \
        IDX i = (IDX)get_global_id(0);                                          \
        if (i >= (IDX)n) return;                                                \
        float x = xp[i];                                                        \
        yp[i] = (EXPR);                                                         \
    }

#if CG_WANT(mu_abs)
MATH(abs, fabs(x))
#endif
#if CG_WANT(mu_reciprocal)
MATH(reciprocal, 1.0f / x)
#endif
#if CG_WANT(mu_floor)
MATH(floor, floor(x))
#endif
#if CG_WANT(mu_ceil)
MATH(ceil, ceil(x))
#endif
/* halves to even, as rint in the default rounding mode */
#if CG_WANT(mu_round)
MATH(round, rint(x))
#endif
#if CG_WANT(mu_sign)
MATH(sign, x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x) /* 0 and NaN as they are */
#endif
#if CG_WANT(mu_sin)
MATH(sin, sin(x))
#endif
#if CG_WANT(mu_cos)
MATH(cos, cos(x))
#endif
#if CG_WANT(mu_tan)
MATH(tan, tan(x))
#endif
#if CG_WANT(mu_asin)
MATH(asin, asin(x))
#endif
#if CG_WANT(mu_acos)
MATH(acos, acos(x))
#endif
#if CG_WANT(mu_atan)
MATH(atan, atan(x))
#endif
#if CG_WANT(mu_sinh)
MATH(sinh, sinh(x))
#endif
#if CG_WANT(mu_cosh)
MATH(cosh, cosh(x))
#endif
#if CG_WANT(mu_asinh)
MATH(asinh, asinh(x))
#endif
#if CG_WANT(mu_acosh)
MATH(acosh, acosh(x))
#endif
#if CG_WANT(mu_atanh)
MATH(atanh, atanh(x))
#endif
#if CG_WANT(mu_erf)
MATH(erf, cg_erf(x))
#endif
/* log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)) */
#if CG_WANT(mu_softplus)
MATH(softplus, fmax(x, 0.0f) + log1p(exp(-fabs(x))))
#endif
#if CG_WANT(mu_softsign)
MATH(softsign, x / (1.0f + fabs(x)))
#endif
#if CG_WANT(mu_elu)
MATH(elu, x < 0.0f ? a * (exp(x) - 1.0f) : x)
#endif
#if CG_WANT(mu_leaky_relu)
MATH(leaky_relu, x < 0.0f ? a * x : x)
#endif
#if CG_WANT(mu_hard_sigmoid)
MATH(hard_sigmoid, fmin(1.0f, fmax(0.0f, a * x + b)))
#endif
/* max(x, min) then min(., max), as ONNX; NaN stays NaN (fmin/fmax would
 * drop it) */
inline float cg_clip(float x, float a, float b) {
    float t = x < a ? a : x;
    return t > b ? b : t;
}
#if CG_WANT(mu_clip)
MATH(clip, cg_clip(x, a, b))
#endif
