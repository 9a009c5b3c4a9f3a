/* Elementwise math functions of f32 tensors that ONNX models use (abs,
 * reciprocal, rounding, sign, trigonometric and hyperbolic functions and their
 * inverses, erf, softplus, softsign) and the
 * parameterised activations (elu, leaky_relu, hard_sigmoid, clip), each a
 * CPU kernel with libm and an OpenCL kernel in cl/math.cl. */
#include "int_ops.h"
#include "ops_cl.h"

#include "cpu/cpu_clones.h"
#include "cpu/cpu_math.h"

#include <math.h>
#include <string.h>

#include "math.cl.h"

/* Each function is a loop of its own (MATH_LOOP), its element function
 * inlined: the exact ones (abs, rounding, sign, the parameterised
 * activations) become vector code, and the libm ones at least lose the
 * indirect call per element. Comparisons stand in for fminf/fmaxf, which
 * GCC leaves as libm calls; they keep fmaxf's answer for NaN where it
 * matters (hard_sigmoid of NaN is 0). */
static inline float f_abs(float x, float a, float b) {
    (void)a, (void)b;
    return fabsf(x);
}
static inline float f_reciprocal(float x, float a, float b) {
    (void)a, (void)b;
    return 1.0f / x;
}
static inline float f_floor(float x, float a, float b) {
    (void)a, (void)b;
    return floorf(x);
}
static inline float f_ceil(float x, float a, float b) {
    (void)a, (void)b;
    return ceilf(x);
}
static inline float f_round(float x, float a, float b) {
    (void)a, (void)b;
    return rintf(x);
}
static inline float f_sign(float x, float a, float b) {
    (void)a, (void)b;
    return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;
}
#define LIBM_F(NAME, FN)                                      \
    static inline float f_##NAME(float x, float a, float b) { \
        (void)a, (void)b;                                     \
        return FN(x);                                         \
    }
LIBM_F(sin, sinf)
LIBM_F(cos, cosf)
LIBM_F(tan, tanf)
LIBM_F(asin, asinf)
LIBM_F(acos, acosf)
LIBM_F(atan, atanf)
LIBM_F(sinh, sinhf)
LIBM_F(cosh, coshf)
LIBM_F(asinh, asinhf)
LIBM_F(acosh, acoshf)
LIBM_F(atanh, atanhf)
static inline float f_softplus(float x, float a, float b) {
    (void)a, (void)b;
    return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
}
static inline float f_softsign(float x, float a, float b) {
    (void)a, (void)b;
    return x / (1.0f + fabsf(x));
}
static inline float f_elu(float x, float a, float b) {
    (void)b;
    return x < 0.0f ? a * (expf(x) - 1.0f) : x;
}
static inline float f_leaky_relu(float x, float a, float b) {
    (void)b;
    return x < 0.0f ? a * x : x;
}
static inline float f_hard_sigmoid(float x, float a, float b) {
    float v = a * x + b;
    v = v > 0.0f ? v : 0.0f; /* NaN gives 0, as fmaxf(0, NaN) */
    return v < 1.0f ? v : 1.0f;
}
static inline float f_clip(float x, float a, float b) {
    float t = x < a ? a : x; /* max(x, min) then min(., max), as ONNX; NaN stays NaN */
    return t > b ? b : t;
}

/* The loop of one function; in place (y == x) keeps the vector code. */
#define MATH_LOOP(NAME)                                                                            \
    static CG_CPU_CLONES void NAME##_loop(const float *x, float *y, int64_t n, float p, float q) { \
        for (int64_t i = 0; i < n; i++) y[i] = f_##NAME(x[i], p, q);                               \
    }

/* The CPU backend's vector erf (double precision inside, rounded once). */
static void erf_loop(const float *x, float *y, int64_t n, float p, float q) {
    (void)p, (void)q;
    cg_cpu_verf(x, y, (size_t)n);
}

/* Runs loop over input 0 with attributes 0 and 1 (when the op has them). */
static cg_op_status math_cpu(const cg_kernel_args *a, void (*loop)(const float *, float *, int64_t, float, float),
                             int n_attrs) {
    float p = n_attrs > 0 ? (float)a->call->attrs[0].f : 0.0f, q = n_attrs > 1 ? (float)a->call->attrs[1].f : 0.0f;
    loop(a->in[0], a->out[0], cg_desc_numel(&a->call->inputs[0]), p, q);
    return CG_OP_OK;
}

/* Every kernel of math.cl takes both parameters, 0 where the op has none. */
static cg_op_status math_cl(const cg_kernel_args *a, const char *name, int n_attrs) {
    const float f[2] = {n_attrs > 0 ? (float)a->call->attrs[0].f : 0.0f,
                        n_attrs > 1 ? (float)a->call->attrs[1].f : 0.0f};
    return cg_ops_cl_unary(a, cg_cl_math, name, 2, f);
}

static cg_op_status math_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    if (x->dtype != CG_OP_F32) return cg_op_fail(call, "input 0 (x) must be f32, got %s", cg_ops_dtype_name(x->dtype));
    call->outputs[0] = *x;
    return CG_OP_OK;
}

/* abs and sign: f32 or any integer type. */
static cg_op_status math_int_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    if (x->dtype != CG_OP_F32 && !cg_ops_is_int(x->dtype))
        return cg_op_fail(call, "input 0 (x) must be %s, got %s", cg_ops_int_names(1), cg_ops_dtype_name(x->dtype));
    call->outputs[0] = *x;
    return CG_OP_OK;
}

/* Shapes of the cases (0-d and empty included) and their attributes. */
static const struct {
    int nd;
    int64_t d[4];
} shapes[] = {{1, {1}}, {0, {0}}, {1, {0}}, {1, {17}}, {3, {2, 3, 5}}, {2, {4, 1000}}};
#define N_SHAPES ((int32_t)(sizeof shapes / sizeof shapes[0]))

static int32_t math_case(int32_t i, cg_conform_case *c, double lo, double hi, const char *const *attrs, int n_sets) {
    if (i < 0 || i >= N_SHAPES * n_sets) return 0;
    cg_ops_case t = {1, {{CG_OP_F32, shapes[i / n_sets].nd, {0}, lo, hi}}, attrs[i % n_sets]};
    memcpy(t.in[0].d, shapes[i / n_sets].d, sizeof t.in[0].d);
    cg_ops_fill_case(&t, 1, c);
    return 1;
}

static const char *const math_inputs[] = {"x", NULL};
static const char *const no_attrs[] = {NULL};

#define ATTR(NAME, DEF, DOC) CG_ATTR(.name = NAME, .type = CG_ATTR_FLOAT, .default_float = DEF, .doc = DOC)

static const cg_attr_def elu_attrs[] = {ATTR("alpha", 1.0, "scale of the negative part (default 1.0)")};
static const cg_attr_def leaky_attrs[] = {ATTR("alpha", 0.01, "slope for x < 0 (default 0.01)")};
static const cg_attr_def hs_attrs[] = {ATTR("alpha", 0.2, "slope (default 0.2)"),
                                       ATTR("beta", 0.5, "offset (default 0.5)")};
static const cg_attr_def clip_attrs[] = {ATTR("min", -INFINITY, "lower bound (default -inf)"),
                                         ATTR("max", INFINITY, "upper bound (default +inf)")};
static const char *const elu_sets[] = {NULL, "alpha: 0.5"};
static const char *const leaky_sets[] = {NULL, "alpha: 0.25"};
static const char *const hs_sets[] = {NULL, "alpha: 0.125, beta: 0.25"};
static const char *const clip_sets[] = {"min: -1.0, max: 2.0", "min: 0.0", "max: -0.5", "min: 1.0, max: -1.0"};

/* One op: NAME, its CPU loop, attributes, the conformance value range
 * and attribute sets, and its documentation. */
#define MATH_OP_LOOP(NAME, LOOP, ATTRS, N_ATTRS, LO, HI, SETS, N_SETS, DOC)                                     \
    static cg_op_status NAME##_cpu(const cg_kernel_args *a) { return math_cpu(a, LOOP, N_ATTRS); }              \
    static cg_op_status NAME##_cl(const cg_kernel_args *a) { return math_cl(a, "mu_" #NAME, N_ATTRS); }         \
    static int32_t NAME##_case(int32_t i, cg_conform_case *c) { return math_case(i, c, LO, HI, SETS, N_SETS); } \
    static const cg_kernel_def NAME##_kernels[] = {                                                             \
        CG_KERNEL(.backend = CG_BACKEND_CPU, .run = NAME##_cpu),                                                \
        CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = NAME##_cl),                                              \
    };                                                                                                          \
    const cg_op_def cg_op_##NAME =                                                                              \
        CG_OP(.name = #NAME, .doc = DOC, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,  \
              .input_names = math_inputs, .attrs = ATTRS, .n_attrs = N_ATTRS, .infer = math_infer,              \
              CG_KERNELS(NAME##_kernels), .flags = CG_OP_FLAG_INPLACE0, .conform_case = NAME##_case);
/* The loop of f_NAME. */
#define MATH_OP(NAME, ...) MATH_LOOP(NAME) MATH_OP_LOOP(NAME, NAME##_loop, __VA_ARGS__)

/* abs and sign: the f32 kernels above, and the integer ones (int_ops.h);
 * the f32 cases, then one per integer type over its whole range. */
#define MATH_INT_OP(NAME, UOP, LO, HI, DOC)                                                                     \
    MATH_LOOP(NAME)                                                                                             \
    static cg_op_status NAME##_cpu(const cg_kernel_args *a) {                                                   \
        return a->call->inputs[0].dtype == CG_F32 ? math_cpu(a, NAME##_loop, 0) : cg_ops_int_unary_cpu(a, UOP); \
    }                                                                                                           \
    static cg_op_status NAME##_cl(const cg_kernel_args *a) {                                                    \
        return a->call->inputs[0].dtype == CG_F32 ? math_cl(a, "mu_" #NAME, 0) : cg_ops_int_unary_cl(a, UOP);   \
    }                                                                                                           \
    static int32_t NAME##_case(int32_t i, cg_conform_case *c) {                                                 \
        if (i < N_SHAPES) return math_case(i, c, LO, HI, no_attrs, 1);                                          \
        int s = (i - N_SHAPES + 1) % N_SHAPES;                                                                  \
        return cg_ops_int_unary_case(i - N_SHAPES, shapes[s].nd, shapes[s].d, NULL, c);                         \
    }                                                                                                           \
    static const cg_kernel_def NAME##_kernels[] = {                                                             \
        CG_KERNEL(.backend = CG_BACKEND_CPU, .run = NAME##_cpu),                                                \
        CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = NAME##_cl),                                              \
    };                                                                                                          \
    const cg_op_def cg_op_##NAME =                                                                              \
        CG_OP(.name = #NAME, .doc = DOC, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,  \
              .input_names = math_inputs, .infer = math_int_infer, CG_KERNELS(NAME##_kernels),                  \
              .flags = CG_OP_FLAG_INPLACE0, .conform_case = NAME##_case);

#define SAME " of an f32 tensor; output has x's shape, may run in place."
#define SAME_INT                                                                                                   \
    " of f32 or any integer type (i8, u8, i16, u16, i32, u32, i64, u64); output has x's shape and dtype, may run " \
    "in place."
MATH_INT_OP(abs, CG_IU_ABS, -5, 5,
            "Elementwise |x| (integers: |MIN| wraps around to MIN, as in two's complement; unsigned x as is)" SAME_INT)
MATH_OP(reciprocal, NULL, 0, 0.25, 4, no_attrs, 1, "Elementwise 1 / x (1/0 is inf)" SAME)
MATH_OP(floor, NULL, 0, -10, 10, no_attrs, 1, "Elementwise floor (round toward -inf)" SAME)
MATH_OP(ceil, NULL, 0, -10, 10, no_attrs, 1, "Elementwise ceiling (round toward +inf)" SAME)
MATH_OP(round, NULL, 0, -10, 10, no_attrs, 1,
        "Elementwise rounding to the nearest integer, halves to even (as numpy.round and ONNX Round)" SAME)
MATH_INT_OP(sign, CG_IU_SIGN, -3, 3,
            "Elementwise sign: 1, -1, or x itself for 0, -0 and NaN (unsigned integers 0 or 1)" SAME_INT)
MATH_OP(sin, NULL, 0, -10, 10, no_attrs, 1, "Elementwise sine" SAME)
MATH_OP(cos, NULL, 0, -10, 10, no_attrs, 1, "Elementwise cosine" SAME)
MATH_OP(tan, NULL, 0, -1.4, 1.4, no_attrs, 1, "Elementwise tangent" SAME)
MATH_OP(asin, NULL, 0, -1, 1, no_attrs, 1, "Elementwise arcsine (NaN outside [-1, 1])" SAME)
MATH_OP(acos, NULL, 0, -1, 1, no_attrs, 1, "Elementwise arccosine (NaN outside [-1, 1])" SAME)
MATH_OP(atan, NULL, 0, -10, 10, no_attrs, 1, "Elementwise arctangent" SAME)
MATH_OP(sinh, NULL, 0, -10, 10, no_attrs, 1, "Elementwise hyperbolic sine" SAME)
MATH_OP(cosh, NULL, 0, -10, 10, no_attrs, 1, "Elementwise hyperbolic cosine" SAME)
MATH_OP(asinh, NULL, 0, -10, 10, no_attrs, 1, "Elementwise inverse hyperbolic sine" SAME)
MATH_OP(acosh, NULL, 0, 1, 10, no_attrs, 1, "Elementwise inverse hyperbolic cosine (NaN below 1)" SAME)
MATH_OP(atanh, NULL, 0, -0.99, 0.99, no_attrs, 1,
        "Elementwise inverse hyperbolic tangent (+-inf at +-1, NaN outside [-1, 1])" SAME)
MATH_OP_LOOP(erf, erf_loop, NULL, 0, -3, 3, no_attrs, 1,
             "Elementwise error function (CPU: within 1 ulp of the correctly rounded result)" SAME)
MATH_OP(softplus, NULL, 0, -30, 30, no_attrs, 1,
        "Elementwise log(1 + exp(x)), as max(x, 0) + log1p(exp(-|x|)) so large |x| neither overflows nor "
        "loses the small part" SAME)
MATH_OP(softsign, NULL, 0, -10, 10, no_attrs, 1, "Elementwise x / (1 + |x|)" SAME)
MATH_OP(elu, elu_attrs, 1, -4, 4, elu_sets, 2,
        "Elementwise exponential linear unit: alpha * (exp(x) - 1) for x < 0, else x (attribute alpha, "
        "default 1.0)" SAME)
MATH_OP(leaky_relu, leaky_attrs, 1, -4, 4, leaky_sets, 2,
        "Elementwise leaky rectifier: alpha * x for x < 0, else x (attribute alpha, default 0.01)" SAME)
MATH_OP(hard_sigmoid, hs_attrs, 2, -6, 6, hs_sets, 2,
        "Elementwise max(0, min(1, alpha * x + beta)) (attributes alpha 0.2 and beta 0.5 by default)" SAME)
MATH_OP(clip, clip_attrs, 2, -4, 4, clip_sets, 4,
        "Elementwise clamp of x to [min, max] (attributes, default -inf and +inf; min > max gives max "
        "everywhere, as ONNX Clip; NaN stays NaN)" SAME)
