/* Elementwise kernels of ops/elementwise.c (OpenCL C 1.2, f32 and i32).
 *
 * Every kernel takes the real element count and bounds-checks, since the host
 * rounds the global size up to a multiple of the work-group size. IDX is the
 * index type: int unless the host builds with -DIDX=long for tensors of more
 * than 2^31 - 1 elements. i32 arithmetic is done in uint so that it wraps
 * around modulo 2^32 like the CPU kernels (signed overflow is undefined in
 * OpenCL C as in C). Contraction into fma is off so that affine rounds like
 * the CPU kernel. */
#pragma OPENCL FP_CONTRACT OFF

#ifndef IDX
#define IDX int
#endif

/* ---- binary operators ---- */

#define OP_ADD_F(x, y) ((x) + (y))
#define OP_SUB_F(x, y) ((x) - (y))
#define OP_MUL_F(x, y) ((x) * (y))
#define OP_DIV_F(x, y) ((x) / (y))
/* NaN in either input gives NaN, as numpy.maximum / numpy.minimum. */
#define OP_MAX_F(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define OP_MIN_F(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))
#define OP_ADD_I(x, y) ((int)((uint)(x) + (uint)(y)))
#define OP_SUB_I(x, y) ((int)((uint)(x) - (uint)(y)))
#define OP_MUL_I(x, y) ((int)((uint)(x) * (uint)(y)))
#define OP_MAX_I(x, y) ((x) > (y) ? (x) : (y))
#define OP_MIN_I(x, y) ((x) < (y) ? (x) : (y))

/* One step of decomposing the flat output index r over broadcast dim c
 * (dims stored innermost first in the .s0 .. .s7 components). */
#define BC_STEP(c)                                                              \
    if (nd > c) {                                                               \
        IDX d = (IDX)dims.s##c, q = r / d, k = r - q * d;                       \
        ia += k * (IDX)sta.s##c;                                                \
        ib += k * (IDX)stb.s##c;                                                \
        r = q;                                                                  \
    }

/*
 * bin_flat_*: o[i] = a[i * sa] op b[i * sb] with sa, sb in {0, 1} (equal
 * shapes, or one side a single element).
 * bin_nd_*: general broadcast over nd (1..8) collapsed dims; dims, sta, stb
 * hold sizes and the element strides of a and b (0 = broadcast), innermost
 * first.
 */
#define BINARY(NAME, T, OP)                                                     \
    __kernel void bin_flat_##NAME(__global const T *a, long sa, __global const T *b, \
                                  long sb, __global T *o, long n) {             \
        IDX i = (IDX)get_global_id(0);                                          \
        if (i >= (IDX)n) return;                                                \
        T x = a[i * (IDX)sa], y = b[i * (IDX)sb];                               \
        o[i] = OP(x, y);                                                        \
    }                                                                           \
    __kernel void bin_nd_##NAME(__global const T *a, __global const T *b,       \
                                __global T *o, long n, int nd, long8 dims,      \
                                long8 sta, long8 stb) {                         \
        IDX i = (IDX)get_global_id(0);                                          \
        if (i >= (IDX)n) return;                                                \
        IDX r = i, ia = 0, ib = 0;                                              \
        BC_STEP(0) BC_STEP(1) BC_STEP(2) BC_STEP(3)                             \
        BC_STEP(4) BC_STEP(5) BC_STEP(6) BC_STEP(7)                             \
        T x = a[ia], y = b[ib];                                                 \
        o[i] = OP(x, y);                                                        \
    }

BINARY(add_f32, float, OP_ADD_F)
BINARY(sub_f32, float, OP_SUB_F)
BINARY(mul_f32, float, OP_MUL_F)
BINARY(div_f32, float, OP_DIV_F)
BINARY(maximum_f32, float, OP_MAX_F)
BINARY(minimum_f32, float, OP_MIN_F)
BINARY(add_i32, int, OP_ADD_I)
BINARY(sub_i32, int, OP_SUB_I)
BINARY(mul_i32, int, OP_MUL_I)
BINARY(maximum_i32, int, OP_MAX_I)
BINARY(minimum_i32, int, OP_MIN_I)

/* ---- unary operators (x and y may be the same buffer) ---- */

inline float cg_sigmoid(float x) {
    /* Never evaluates exp of a large positive number: no inf / inf = NaN. */
    if (x >= 0.0f) return 1.0f / (1.0f + exp(-x));
    float e = exp(x);
    return e / (1.0f + e);
}

#define UNARY(NAME, T, EXPR)                                                    \
    __kernel void un_##NAME(__global const T *xp, __global T *yp, long n) {     \
        IDX i = (IDX)get_global_id(0);                                          \
        if (i >= (IDX)n) return;                                                \
        T x = xp[i];                                                            \
        yp[i] = (EXPR);                                                         \
    }

UNARY(neg_f32, float, -x)
UNARY(neg_i32, int, (int)(0u - (uint)x))
UNARY(tanh, float, tanh(x))
UNARY(sigmoid, float, cg_sigmoid(x))
UNARY(exp, float, exp(x))
UNARY(log, float, log(x))
UNARY(sqrt, float, sqrt(x))
UNARY(relu, float, x < 0.0f ? 0.0f : x) /* NaN stays NaN */
/* Copy of 32-bit elements (cast to the same dtype). */
UNARY(copy32, uint, x)

__kernel void un_affine(__global const float *xp, __global float *yp, long n, float alpha,
                        float beta) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    yp[i] = alpha * xp[i] + beta;
}

/* f32 -> i32 truncating toward zero; NaN gives 0 and values beyond the i32
 * range saturate, as the CPU kernel. */
__kernel void cast_f32_to_i32(__global const float *xp, __global int *yp, long n) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    float v = xp[i];
    int r;
    if (v != v) r = 0;
    else if (v >= 2147483648.0f) r = INT_MAX;
    else if (v <= -2147483648.0f) r = INT_MIN;
    else r = convert_int_rtz(v);
    yp[i] = r;
}

/* i32 -> f32 rounding to the nearest float (ties to even). */
__kernel void cast_i32_to_f32(__global const int *xp, __global float *yp, long n) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    yp[i] = convert_float_rte(xp[i]);
}
