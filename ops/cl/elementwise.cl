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

/* ---- binary operators ---- */

#define OP_ADD_F(x, y) ((x) + (y))
#define OP_SUB_F(x, y) ((x) - (y))
#define OP_MUL_F(x, y) ((x) * (y))
#define OP_DIV_F(x, y) ((x) / (y))
#define OP_POW_F(x, y) pow((x), (y))
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
#define BIN_FLAT(NAME, T, OP)                                                   \
    __kernel void bin_flat_##NAME(__global const T *a, long sa, __global const T *b, \
                                  long sb, __global T *o, long n) {             \
        IDX i = (IDX)get_global_id(0);                                          \
        if (i >= (IDX)n) return;                                                \
        T x = a[i * (IDX)sa], y = b[i * (IDX)sb];                               \
        o[i] = OP(x, y);                                                        \
    }
#define BIN_ND(NAME, T, OP)                                                     \
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

#if CG_WANT(bin_flat_add_f32)
BIN_FLAT(add_f32, float, OP_ADD_F)
#endif
#if CG_WANT(bin_nd_add_f32)
BIN_ND(add_f32, float, OP_ADD_F)
#endif
#if CG_WANT(bin_flat_sub_f32)
BIN_FLAT(sub_f32, float, OP_SUB_F)
#endif
#if CG_WANT(bin_nd_sub_f32)
BIN_ND(sub_f32, float, OP_SUB_F)
#endif
#if CG_WANT(bin_flat_mul_f32)
BIN_FLAT(mul_f32, float, OP_MUL_F)
#endif
#if CG_WANT(bin_nd_mul_f32)
BIN_ND(mul_f32, float, OP_MUL_F)
#endif
#if CG_WANT(bin_flat_div_f32)
BIN_FLAT(div_f32, float, OP_DIV_F)
#endif
#if CG_WANT(bin_nd_div_f32)
BIN_ND(div_f32, float, OP_DIV_F)
#endif
#if CG_WANT(bin_flat_pow_f32)
BIN_FLAT(pow_f32, float, OP_POW_F)
#endif
#if CG_WANT(bin_nd_pow_f32)
BIN_ND(pow_f32, float, OP_POW_F)
#endif
#if CG_WANT(bin_flat_maximum_f32)
BIN_FLAT(maximum_f32, float, OP_MAX_F)
#endif
#if CG_WANT(bin_nd_maximum_f32)
BIN_ND(maximum_f32, float, OP_MAX_F)
#endif
#if CG_WANT(bin_flat_minimum_f32)
BIN_FLAT(minimum_f32, float, OP_MIN_F)
#endif
#if CG_WANT(bin_nd_minimum_f32)
BIN_ND(minimum_f32, float, OP_MIN_F)
#endif
#if CG_WANT(bin_flat_add_i32)
BIN_FLAT(add_i32, int, OP_ADD_I)
#endif
#if CG_WANT(bin_nd_add_i32)
BIN_ND(add_i32, int, OP_ADD_I)
#endif
#if CG_WANT(bin_flat_sub_i32)
BIN_FLAT(sub_i32, int, OP_SUB_I)
#endif
#if CG_WANT(bin_nd_sub_i32)
BIN_ND(sub_i32, int, OP_SUB_I)
#endif
#if CG_WANT(bin_flat_mul_i32)
BIN_FLAT(mul_i32, int, OP_MUL_I)
#endif
#if CG_WANT(bin_nd_mul_i32)
BIN_ND(mul_i32, int, OP_MUL_I)
#endif
#if CG_WANT(bin_flat_maximum_i32)
BIN_FLAT(maximum_i32, int, OP_MAX_I)
#endif
#if CG_WANT(bin_nd_maximum_i32)
BIN_ND(maximum_i32, int, OP_MAX_I)
#endif
#if CG_WANT(bin_flat_minimum_i32)
BIN_FLAT(minimum_i32, int, OP_MIN_I)
#endif
#if CG_WANT(bin_nd_minimum_i32)
BIN_ND(minimum_i32, int, OP_MIN_I)
#endif

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

#if CG_WANT(un_neg_f32)
UNARY(neg_f32, float, -x)
#endif
#if CG_WANT(un_neg_i32)
UNARY(neg_i32, int, (int)(0u - (uint)x))
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

