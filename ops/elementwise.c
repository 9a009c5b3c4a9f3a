/* Elementwise operators: binary arithmetic with NumPy broadcasting, unary
 * math functions, affine and cast. */
#include "bcast.h"
#include "int_ops.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_clones.h"
#include "cpu/cpu_math.h"
#include "elementwise.cl.h"

/* ------------------------------------------------------------------ */
/* Binary inner loops (bcast.h)                                        */

/* Integer division truncates toward zero; x / 0 is 0 and MIN / -1 wraps
 * to MIN (C leaves both undefined, and x86 traps on them). Narrower signed
 * operands come in widened; their quotient's low bits are the result. */
static inline int64_t idiv(int64_t x, int64_t y) { return y == 0 ? 0 : y == -1 ? (int64_t)(0u - (uint64_t)x) : x / y; }

/* Integer power by squaring, wrapping around modulo 2^64 (the low bits are
 * every narrower type's result). */
static inline uint64_t upow(uint64_t b, uint64_t e) {
    uint64_t r = 1;
    for (; e; e >>= 1) {
        if (e & 1) r *= b;
        b *= b;
    }
    return r;
}

/* Signed: a negative exponent gives 0 but for the bases 1 and -1 (1 / x^-e
 * truncated). */
static inline int64_t ipow(int64_t x, int64_t e) {
    if (e < 0) return x == 1 ? 1 : x == -1 ? ((e & 1) ? -1 : 1) : 0;
    return (int64_t)upow((uint64_t)x, (uint64_t)e);
}

CG_BCAST_LOOP2(add_f32_loop, float, float, x + y)
CG_BCAST_LOOP2(sub_f32_loop, float, float, x - y)
// clang-format off
CG_BCAST_LOOP2(mul_f32_loop, float, float, x * y)
// clang-format on
CG_BCAST_LOOP2(div_f32_loop, float, float, x / y)
CG_BCAST_LOOP2(pow_f32_any, float, float, powf(x, y))

/* x^2 and x^3 with a broadcast exponent (GELU's tanh form cubes, a
 * variance squares), as cg_ops_cube says: vector code where powf is a
 * call per element. */
static CG_CPU_CLONES void pow_f32_small(const float *x, float *o, int64_t n, int cube) {
    if (cube)
        for (int64_t i = 0; i < n; i++) o[i] = cg_ops_cube(x[i]);
    else
        for (int64_t i = 0; i < n; i++) o[i] = x[i] * x[i];
}

static void pow_f32_loop(const void *const *in, const int64_t *s, const int64_t *rs, void *out, int64_t n,
                         int64_t rows) {
    const float y = *(const float *)in[1];
    if (s[0] && !s[1] && !rs[1] && (y == 2.0f || y == 3.0f))
        for (int64_t r = 0; r < rows; r++)
            pow_f32_small((const float *)in[0] + r * rs[0], (float *)out + r * n, n, y == 3.0f);
    else pow_f32_any(in, s, rs, out, n, rows);
}
/* NaN propagates, as in NumPy's maximum/minimum. */
CG_BCAST_LOOP2(maximum_f32_loop, float, float, (x > y || x != x) ? x : y)
CG_BCAST_LOOP2(minimum_f32_loop, float, float, (x < y || x != x) ? x : y)

/* Integer arithmetic of type T wraps around, computed in the unsigned type
 * U (at least as wide as T and as int, so nothing is promoted to a signed
 * int: no undefined behaviour) and narrowed to T. */
/* (clang-format reads `x op (T)y` as a call and `x * y` in a macro
 * argument as a declaration: these lines keep their spelling.) */
// clang-format off
#define INT_LOOPS(SUF, T, U)                                        \
    CG_BCAST_LOOP2(add_##SUF##_loop, T, T, (T)((U)x + (U)y))       \
    CG_BCAST_LOOP2(sub_##SUF##_loop, T, T, (T)((U)x - (U)y))       \
    CG_BCAST_LOOP2(mul_##SUF##_loop, T, T, (T)((U)x * (U)y))       \
    CG_BCAST_LOOP2(maximum_##SUF##_loop, T, T, x > y ? x : y)      \
    CG_BCAST_LOOP2(minimum_##SUF##_loop, T, T, x < y ? x : y)
#define SINT_LOOPS(SUF, T, U)                                       \
    INT_LOOPS(SUF, T, U)                                            \
    CG_BCAST_LOOP2(div_##SUF##_loop, T, T, (T)idiv(x, y))           \
    CG_BCAST_LOOP2(pow_##SUF##_loop, T, T, (T)ipow(x, y))
#define UINT_LOOPS(SUF, T, U)                                       \
    INT_LOOPS(SUF, T, U)                                            \
    CG_BCAST_LOOP2(div_##SUF##_loop, T, T, y == 0 ? 0 : x / y)      \
    CG_BCAST_LOOP2(pow_##SUF##_loop, T, T, (T)upow(x, y))
// clang-format on
SINT_LOOPS(i32, int32_t, uint32_t)
SINT_LOOPS(i64, int64_t, uint64_t)
SINT_LOOPS(i8, int8_t, unsigned)
UINT_LOOPS(u8, uint8_t, unsigned)
SINT_LOOPS(i16, int16_t, unsigned)
UINT_LOOPS(u16, uint16_t, unsigned)
UINT_LOOPS(u32, uint32_t, uint32_t)
UINT_LOOPS(u64, uint64_t, uint64_t)

/* ------------------------------------------------------------------ */
/* OpenCL                                                              */

/* Runs unary kernel `name` of elementwise.cl (x, y, n[, extra float
 * args]) over input 0. */
static cg_op_status ew_unary_cl(const cg_kernel_args *a, const char *name, int n_f, const float *f) {
    return cg_ops_cl_unary(a, cg_cl_elementwise, name, n_f, f);
}

/* ------------------------------------------------------------------ */
/* Conformance cases                                                   */

#define F32 CG_OP_F32
#define I32 CG_OP_I32
#define IMIN (-2147483648.0)
#define IMAX 2147483647.0

/* Binary cases, smallest first: equal shapes, scalars, trailing-row,
 * column, middle and two-sided broadcasts, sizes that do not divide
 * work-group sizes. f32 values in [-2, 2]; i32 and i64 values over most of
 * their range so that add/sub/mul wrap around. */
#define BIN_F(nd_a, da, nd_b, db) \
    { 2, {{F32, nd_a, da, -2, 2}, {F32, nd_b, db, -2, 2}}, NULL }
#define BIN_I(nd_a, da, nd_b, db) \
    { 2, {{I32, nd_a, da, IMIN, IMAX}, {I32, nd_b, db, IMIN, IMAX}}, NULL }
#define LMAX 9.2e18
#define BIN_L(nd_a, da, nd_b, db) \
    { 2, {{CG_I64, nd_a, da, -LMAX, LMAX}, {CG_I64, nd_b, db, -LMAX, LMAX}}, NULL }
#define BIN_B(nd_a, da, nd_b, db) \
    { 2, {{CG_I8, nd_a, da, -128, 127}, {CG_I8, nd_b, db, -128, 127}}, NULL }
#define BIN_U(nd_a, da, nd_b, db) \
    { 2, {{CG_U8, nd_a, da, 0, 255}, {CG_U8, nd_b, db, 0, 255}}, NULL }
/* the other integer types over their whole range (u64's past int64's) */
#define BIN_T(DT, nd_a, da, nd_b, db) \
    { 2, {{DT, nd_a, da, -1e300, 1e300}, {DT, nd_b, db, -1e300, 1e300}}, NULL }
#define D(...) \
    { __VA_ARGS__ }

static const cg_ops_case bin_cases[] = {
    BIN_F(1, D(1), 1, D(1)),
    BIN_I(1, D(1), 1, D(1)),
    BIN_L(1, D(1), 1, D(1)),
    BIN_F(0, D(0), 0, D(0)),
    BIN_F(1, D(3), 1, D(3)),
    BIN_I(1, D(3), 1, D(3)),
    BIN_F(0, D(0), 1, D(3)),
    BIN_F(1, D(17), 1, D(1)),
    BIN_F(1, D(17), 1, D(17)),
    BIN_I(1, D(17), 1, D(17)),
    BIN_L(1, D(17), 1, D(17)),
    BIN_F(2, D(17, 3), 1, D(3)),
    BIN_I(2, D(17, 3), 1, D(3)),
    BIN_L(2, D(17, 3), 1, D(3)),
    BIN_F(2, D(17, 1), 2, D(17, 3)),
    BIN_F(2, D(3, 1), 3, D(4, 1, 5)),
    BIN_I(2, D(3, 1), 3, D(4, 1, 5)),
    BIN_L(2, D(3, 1), 3, D(4, 1, 5)),
    BIN_F(3, D(2, 3, 5), 3, D(2, 1, 5)),
    BIN_F(4, D(2, 1, 3, 1), 4, D(1, 5, 1, 7)),
    BIN_I(4, D(2, 1, 3, 1), 4, D(1, 5, 1, 7)),
    BIN_F(1, D(257), 1, D(257)),
    BIN_I(1, D(257), 0, D(0)),
    BIN_L(0, D(0), 1, D(257)),
    BIN_F(2, D(3, 1000), 1, D(1000)),
    BIN_F(2, D(1000, 1), 2, D(1000, 3)),
    BIN_F(2, D(100, 1000), 2, D(100, 1000)),
    BIN_I(2, D(100, 1000), 2, D(100, 1000)),
    BIN_L(2, D(100, 1000), 2, D(100, 1000)),
    BIN_F(3, D(7, 1, 1000), 2, D(13, 1)),
    BIN_B(1, D(17), 1, D(17)),
    BIN_U(1, D(17), 1, D(17)),
    BIN_B(2, D(3, 1), 3, D(4, 1, 5)),
    BIN_U(2, D(17, 3), 1, D(3)),
    BIN_U(0, D(0), 1, D(257)),
    BIN_B(2, D(100, 1000), 2, D(100, 1000)),
    BIN_U(2, D(100, 1000), 2, D(100, 1000)),
    BIN_T(CG_I16, 1, D(17), 1, D(17)),
    BIN_T(CG_U16, 2, D(17, 3), 1, D(3)),
    BIN_T(CG_U32, 1, D(17), 1, D(17)),
    BIN_T(CG_U64, 1, D(17), 1, D(17)),
    BIN_T(CG_I16, 2, D(3, 1), 3, D(4, 1, 5)),
    BIN_T(CG_U16, 0, D(0), 1, D(257)),
    BIN_T(CG_U32, 2, D(100, 1000), 2, D(100, 1000)),
    BIN_T(CG_U64, 2, D(3, 1), 3, D(4, 1, 5)),
    BIN_T(CG_U64, 1, D(257), 0, D(0)),
};
#define N_BIN_CASES ((int32_t)(sizeof bin_cases / sizeof bin_cases[0]))

/* Value ranges of the operands where the whole range does not suit:
 * division keeps f32 divisors in [0.25, 2] and gives every other integer
 * case small divisors (0, -1 and exact quotients included); pow keeps f32
 * bases positive, and integer bases and exponents small (i32 results
 * still wrap). */
enum { RANGE_ANY, RANGE_DIV, RANGE_POW };

/* Fills case `index` of a binary op. */
static int32_t bin_conform(int32_t index, cg_conform_case *c, int range) {
    if (index < 0 || index >= N_BIN_CASES) return 0;
    const cg_ops_case *t = &bin_cases[index];
    cg_ops_fill_case(t, 1, c);
    const int is_f = t->in[0].dt == F32, odd = index % 2, is_u8 = cg_ops_is_unsigned(t->in[0].dt);
    if (range == RANGE_DIV) {
        c->lo[1] = is_f ? 0.25 : is_u8 ? 0 : odd ? -3 : -1e3;
        c->hi[1] = is_f ? 2 : is_u8 ? 7 : odd ? 3 : 1e3;
    } else if (range == RANGE_POW) {
        c->lo[0] = is_f ? 0.1 : is_u8 ? 0 : -6;
        c->hi[0] = is_f ? 3 : 6;
        c->lo[1] = is_u8 ? 0 : -2;
        c->hi[1] = is_f ? 2 : 13;
    }
    return 1;
}

/* ------------------------------------------------------------------ */
/* Binary operators                                                    */

static cg_op_status binary_infer(cg_op_call *call, const char *op) {
    const cg_tensor_desc *a = &call->inputs[0], *b = &call->inputs[1];
    if (cg_ops_arith_slot(a->dtype) < 0)
        return cg_op_fail(call, "input 0 (a) has unsupported dtype %s for %s (%s)", cg_ops_dtype_name(a->dtype), op,
                          cg_ops_int_names(1));
    if (a->dtype != b->dtype)
        return cg_op_fail(call,
                          "inputs have mixed dtypes %s and %s; %s needs both the same "
                          "(use cast)",
                          cg_ops_dtype_name(a->dtype), cg_ops_dtype_name(b->dtype), op);
    cg_tensor_desc *o = &call->outputs[0];
    o->dtype = a->dtype;
    return cg_broadcast_shapes(call, a, b, o);
}

/* loops[]: by cg_ops_arith_slot */
static cg_op_status binary_cpu(const cg_kernel_args *args, const cg_bcast_loop loops[CG_OPS_ARITH_SLOTS]) {
    return cg_bcast_cpu2(args, loops[cg_ops_arith_slot(args->call->outputs[0].dtype)]);
}

static const char *const binary_inputs[] = {"a", "b", NULL};

#define BINARY_OP(NAME, BOP, RANGE, DOC)                                                                        \
    static cg_op_status NAME##_infer(cg_op_call *call) { return binary_infer(call, #NAME); }                    \
    static cg_op_status NAME##_cpu(const cg_kernel_args *a) {                                                   \
        static const cg_bcast_loop l[CG_OPS_ARITH_SLOTS] = {NAME##_f32_loop, NAME##_i32_loop, NAME##_i64_loop,  \
                                                            NAME##_i8_loop,  NAME##_u8_loop,  NAME##_i16_loop,  \
                                                            NAME##_u16_loop, NAME##_u32_loop, NAME##_u64_loop}; \
        return binary_cpu(a, l);                                                                                \
    }                                                                                                           \
    static cg_op_status NAME##_cl(const cg_kernel_args *a) { return cg_bcast_cl2(a, BOP); }                     \
    static int32_t NAME##_conform(int32_t index, cg_conform_case *c) { return bin_conform(index, c, RANGE); }   \
    static const cg_kernel_def NAME##_kernels[] = {                                                             \
        CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = NAME##_cpu),                             \
        CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = NAME##_cl),                           \
    };                                                                                                          \
    const cg_op_def cg_op_##NAME =                                                                              \
        CG_OP(.name = #NAME, .doc = DOC, .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,  \
              .input_names = binary_inputs, .infer = NAME##_infer, CG_KERNELS(NAME##_kernels),                  \
              .conform_case = NAME##_conform);

#define BCAST_DOC                                                                \
    " a and b broadcast against each other with NumPy rules (shapes are "        \
    "right-aligned; a dim of size 1 stretches to the other's size); the output " \
    "has the broadcast shape. Both inputs must have the same dtype: f32, i8, u8, i16, u16, i32, u32, i64 or u64."

BINARY_OP(add, "ADD", RANGE_ANY, "Elementwise sum a + b (integers wrap around on overflow)." BCAST_DOC)
BINARY_OP(sub, "SUB", RANGE_ANY, "Elementwise difference a - b (integers wrap around on overflow)." BCAST_DOC)
BINARY_OP(mul, "MUL", RANGE_ANY, "Elementwise product a * b (integers wrap around on overflow)." BCAST_DOC)
BINARY_OP(div, "DIV", RANGE_DIV,
          "Elementwise quotient a / b: f32 with IEEE semantics (x / 0 is +-inf, 0 / 0 is NaN); "
          "integers truncate toward zero (as C and ONNX Runtime), x / 0 is 0 and the most "
          "negative value / -1 wraps around to itself." BCAST_DOC)
BINARY_OP(pow, "POW", RANGE_POW,
          "Elementwise power a^b: f32 as C's powf (a negative a with a non-integer b is NaN; "
          "pow(x, 0) is 1; a single b of 2 or 3 as x * x and the cube in double, within 1 ulp of "
          "the exact power as powf is); integers exactly, wrapping around on overflow, and a negative "
          "exponent gives 0 but for the bases 1 and -1." BCAST_DOC)
BINARY_OP(maximum, "MAX", RANGE_ANY,
          "Elementwise maximum of a and b. For f32 a NaN in either "
          "input gives NaN (as numpy.maximum)." BCAST_DOC)
BINARY_OP(minimum, "MIN", RANGE_ANY,
          "Elementwise minimum of a and b. For f32 a NaN in either "
          "input gives NaN (as numpy.minimum)." BCAST_DOC)

/* ------------------------------------------------------------------ */
/* Unary operators                                                     */

static cg_op_status unary_infer(cg_op_call *call, const char *op, int allow_int) {
    const cg_tensor_desc *x = &call->inputs[0];
    if (x->dtype != CG_OP_F32 && !(allow_int && cg_ops_is_int(x->dtype)))
        return cg_op_fail(call, "input 0 (x) must be %s for %s, got %s", allow_int ? cg_ops_int_names(1) : "f32", op,
                          cg_ops_dtype_name(x->dtype));
    call->outputs[0] = *x;
    return CG_OP_OK;
}

static float relu_f(float x) { return x < 0.0f ? 0.0f : x; /* NaN stays NaN */ }
static float neg_f(float x) { return -x; }

/* Elementwise in place is allowed: each element is read before it is
 * written at the same index. */
#define UNARY_F32(NAME, FN)                                   \
    static cg_op_status NAME##_cpu(const cg_kernel_args *a) { \
        const float *x = a->in[0];                            \
        float *y = a->out[0];                                 \
        int64_t n = cg_desc_numel(&a->call->inputs[0]);       \
        for (int64_t i = 0; i < n; i++) y[i] = FN(x[i]);      \
        return CG_OP_OK;                                      \
    }

/* The transcendental ones run on the CPU backend's vector functions. */
#define UNARY_VEC_F32(NAME, VFN)                                              \
    static cg_op_status NAME##_cpu(const cg_kernel_args *a) {                 \
        VFN(a->in[0], a->out[0], (size_t)cg_desc_numel(&a->call->inputs[0])); \
        return CG_OP_OK;                                                      \
    }

UNARY_VEC_F32(tanh, cg_cpu_vtanh)
UNARY_VEC_F32(sigmoid, cg_cpu_vsigmoid)
UNARY_VEC_F32(exp, cg_cpu_vexp)
UNARY_F32(log, logf)
UNARY_F32(sqrt, sqrtf)
UNARY_F32(relu, relu_f)

static cg_op_status neg_cpu(const cg_kernel_args *a) {
    const cg_tensor_desc *d = &a->call->inputs[0];
    if (d->dtype != CG_F32) return cg_ops_int_unary_cpu(a, CG_IU_NEG); /* wraps: -MIN is MIN */
    int64_t n = cg_desc_numel(d);
    const float *x = a->in[0];
    float *y = a->out[0];
    for (int64_t i = 0; i < n; i++) y[i] = neg_f(x[i]);
    return CG_OP_OK;
}

static cg_op_status neg_cl(const cg_kernel_args *a) {
    if (a->call->inputs[0].dtype != CG_F32) return cg_ops_int_unary_cl(a, CG_IU_NEG);
    return ew_unary_cl(a, "un_neg_f32", 0, NULL);
}

#define UNARY_CL(NAME) \
    static cg_op_status NAME##_cl(const cg_kernel_args *a) { return ew_unary_cl(a, "un_" #NAME, 0, NULL); }
UNARY_CL(tanh)
UNARY_CL(sigmoid)
UNARY_CL(exp)
UNARY_CL(log)
UNARY_CL(sqrt)
UNARY_CL(relu)

/* Shapes of the unary conformance cases, smallest first (0-d included). */
static const struct {
    int nd;
    int64_t d[4];
} un_shapes[] = {
    {1, {1}}, {0, {0}}, {1, {3}}, {1, {17}}, {3, {2, 3, 5}}, {1, {257}}, {2, {4, 1000}}, {2, {100, 1000}},
};
#define N_UN_SHAPES ((int32_t)(sizeof un_shapes / sizeof un_shapes[0]))

/* Case `index` of a unary op with f32 values in [lo, hi]; with ints, every
 * shape is also run as one of the integer types over its whole range (so
 * -MIN wraps), each type on one shape. */
static int32_t un_conform(int32_t index, cg_conform_case *c, double lo, double hi, int ints, const char *attrs) {
    int32_t per = ints ? 2 : 1, s = index / per;
    if (index < 0 || index >= N_UN_SHAPES * per) return 0;
    if (ints && index % 2 == 1) return cg_ops_int_unary_case(s, un_shapes[s].nd, un_shapes[s].d, attrs, c);
    cg_ops_case t = {1, {{CG_OP_F32, un_shapes[s].nd, {0}, lo, hi}}, attrs};
    memcpy(t.in[0].d, un_shapes[s].d, sizeof t.in[0].d);
    cg_ops_fill_case(&t, 1, c);
    return 1;
}

/* Value ranges: tanh and sigmoid reach into saturation; log and sqrt get
 * positive inputs; exp stays where results are moderate. */
static int32_t neg_conform(int32_t i, cg_conform_case *c) { return un_conform(i, c, -2, 2, 1, NULL); }
static int32_t tanh_conform(int32_t i, cg_conform_case *c) { return un_conform(i, c, -6, 6, 0, NULL); }
static int32_t sigmoid_conform(int32_t i, cg_conform_case *c) { return un_conform(i, c, -100, 100, 0, NULL); }
static int32_t exp_conform(int32_t i, cg_conform_case *c) { return un_conform(i, c, -4, 4, 0, NULL); }
static int32_t log_conform(int32_t i, cg_conform_case *c) { return un_conform(i, c, 0.05, 8, 0, NULL); }
static int32_t sqrt_conform(int32_t i, cg_conform_case *c) { return un_conform(i, c, 0, 8, 0, NULL); }
static int32_t relu_conform(int32_t i, cg_conform_case *c) { return un_conform(i, c, -2, 2, 0, NULL); }

static const char *const unary_inputs[] = {"x", NULL};

#define UNARY_OP(NAME, I32, DOC)                                                                               \
    static cg_op_status NAME##_infer(cg_op_call *call) { return unary_infer(call, #NAME, I32); }               \
    static const cg_kernel_def NAME##_kernels[] = {                                                            \
        CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = NAME##_cpu),                            \
        CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = NAME##_cl),                          \
    };                                                                                                         \
    const cg_op_def cg_op_##NAME =                                                                             \
        CG_OP(.name = #NAME, .doc = DOC, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, \
              .input_names = unary_inputs, .infer = NAME##_infer, CG_KERNELS(NAME##_kernels),                  \
              .flags = CG_OP_FLAG_INPLACE0, .conform_case = NAME##_conform);

UNARY_OP(neg, 1,
         "Elementwise negation -x of f32 or any integer type (i8, u8, i16, u16, i32, u32, i64, u64): integers "
         "wrap around (-INT32_MIN is INT32_MIN; an unsigned x gives 2^n - x). Output has x's shape and dtype; may "
         "run in place.")
UNARY_OP(tanh, 0,
         "Elementwise hyperbolic tangent of an f32 tensor; output has x's shape. "
         "May run in place.")
UNARY_OP(sigmoid, 0,
         "Elementwise logistic function 1 / (1 + exp(-x)) of an f32 tensor, "
         "evaluated so that large |x| saturates to 0 or 1 without overflow or "
         "NaN. Output has x's shape; may run in place.")
UNARY_OP(exp, 0,
         "Elementwise natural exponential of an f32 tensor (overflows to +inf). "
         "Output has x's shape; may run in place.")
UNARY_OP(log, 0,
         "Elementwise natural logarithm of an f32 tensor: log(0) is -inf, a "
         "negative input gives NaN. Output has x's shape; may run in place.")
UNARY_OP(sqrt, 0,
         "Elementwise square root of an f32 tensor; a negative input gives NaN. "
         "Output has x's shape; may run in place.")
UNARY_OP(relu, 0,
         "Elementwise rectifier max(x, 0) of an f32 tensor (NaN stays NaN). "
         "Output has x's shape; may run in place.")

/* ------------------------------------------------------------------ */
/* affine(x; alpha, beta) = alpha * x + beta                           */

enum { AFFINE_ALPHA, AFFINE_BETA };

static const cg_attr_def affine_attrs[] = {
    CG_ATTR(.name = "alpha", .type = CG_ATTR_FLOAT, .default_float = 1.0, .doc = "scale applied to x (default 1.0)"),
    CG_ATTR(.name = "beta", .type = CG_ATTR_FLOAT, .default_float = 0.0,
            .doc = "offset added after scaling (default 0.0)"),
};

static cg_op_status affine_infer(cg_op_call *call) { return unary_infer(call, "affine", 0); }

static cg_op_status affine_cpu(const cg_kernel_args *a) {
    const float *x = a->in[0];
    float *y = a->out[0];
    const float alpha = (float)a->call->attrs[AFFINE_ALPHA].f;
    const float beta = (float)a->call->attrs[AFFINE_BETA].f;
    int64_t n = cg_desc_numel(&a->call->inputs[0]);
    for (int64_t i = 0; i < n; i++) y[i] = alpha * x[i] + beta;
    return CG_OP_OK;
}

static cg_op_status affine_cl(const cg_kernel_args *a) {
    const float f[2] = {(float)a->call->attrs[AFFINE_ALPHA].f, (float)a->call->attrs[AFFINE_BETA].f};
    return ew_unary_cl(a, "un_affine", 2, f);
}

/* Defaults, then explicit alpha and beta, over the unary shapes. */
static int32_t affine_conform(int32_t i, cg_conform_case *c) {
    static const char *const attrs[] = {NULL, "alpha: 2.5, beta: -0.75", "alpha: -0.125", "beta: 3"};
    if (i < 0 || i >= N_UN_SHAPES * 4) return 0;
    return un_conform(i / 4, c, -2, 2, 0, attrs[i % 4]);
}

static const cg_kernel_def affine_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = affine_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = affine_cl),
};

const cg_op_def cg_op_affine =
    CG_OP(.name = "affine",
          .doc = "Elementwise y = alpha * x + beta on an f32 tensor, with scalar float "
                 "attributes alpha (default 1.0) and beta (default 0.0), computed in "
                 "single precision. Output has x's shape; may run in place.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = unary_inputs,
          CG_ATTRS(affine_attrs), .infer = affine_infer, CG_KERNELS(affine_kernels), .flags = CG_OP_FLAG_INPLACE0,
          .conform_case = affine_conform);
