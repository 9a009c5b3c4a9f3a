/* Bitwise operators of the integer types (i8, u8, i16, u16, i32, u32, i64,
 * u64): bitwise_and, bitwise_or, bitwise_xor and bit_shift with NumPy
 * broadcasting (bcast.h, cl/broadcast.cl), and bitwise_not (int_ops.h). */
#include "bcast.h"
#include "int_ops.h"

#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* CPU loops, one per op and type, in cg_ops_arith_slot order less f32 */

/* Shifts as ONNX BitShift: by a negative amount or by the width or more,
 * 0, or -1 for a negative x shifted right; a signed x shifts right
 * arithmetically (written without C's implementation-defined >> of a
 * negative number). U is unsigned and at least as wide as T and int. */
// clang-format off
#define SHIFTS_SIGNED(SUF, T, U, BITS)                                                           \
    CG_BCAST_LOOP2(shl_##SUF, T, T, y < 0 || y >= BITS ? 0 : (T)((U)x << y))                     \
    CG_BCAST_LOOP2(shr_##SUF, T, T, y < 0 || y >= BITS ? (x < 0 ? -1 : 0)                        \
                                                      : x < 0 ? (T)~(~x >> y) : (T)(x >> y))
#define SHIFTS_UNSIGNED(SUF, T, U, BITS)                                                         \
    CG_BCAST_LOOP2(shl_##SUF, T, T, y >= BITS ? 0 : (T)((U)x << y))                              \
    CG_BCAST_LOOP2(shr_##SUF, T, T, y >= BITS ? 0 : (T)((U)x >> y))
#define BIT_LOOPS(SUF, T)                                                                        \
    CG_BCAST_LOOP2(and_##SUF, T, T, x & y)                                                       \
    CG_BCAST_LOOP2(or_##SUF, T, T, x | y)                                                        \
    CG_BCAST_LOOP2(xor_##SUF, T, T, x ^ y)
// clang-format on
BIT_LOOPS(i32, int32_t)
BIT_LOOPS(i64, int64_t)
BIT_LOOPS(i8, int8_t)
BIT_LOOPS(u8, uint8_t)
BIT_LOOPS(i16, int16_t)
BIT_LOOPS(u16, uint16_t)
BIT_LOOPS(u32, uint32_t)
BIT_LOOPS(u64, uint64_t)
SHIFTS_SIGNED(i32, int32_t, uint32_t, 32)
SHIFTS_SIGNED(i64, int64_t, uint64_t, 64)
SHIFTS_SIGNED(i8, int8_t, unsigned, 8)
SHIFTS_UNSIGNED(u8, uint8_t, unsigned, 8)
SHIFTS_SIGNED(i16, int16_t, unsigned, 16)
SHIFTS_UNSIGNED(u16, uint16_t, unsigned, 16)
SHIFTS_UNSIGNED(u32, uint32_t, uint32_t, 32)
SHIFTS_UNSIGNED(u64, uint64_t, uint64_t, 64)

#define INT_ROW(OP) \
    { OP##_i32, OP##_i64, OP##_i8, OP##_u8, OP##_i16, OP##_u16, OP##_u32, OP##_u64 }
enum { B_AND, B_OR, B_XOR, B_SHL, B_SHR, N_BOPS };
static const cg_bcast_loop bit_loops[N_BOPS][CG_OPS_ARITH_SLOTS - 1] = {INT_ROW(and), INT_ROW(or), INT_ROW(xor),
                                                                        INT_ROW(shl), INT_ROW(shr)};
static const char *const bit_bop[N_BOPS] = {"BAND", "BOR", "BXOR", "SHL", "SHR"};

static cg_op_status bit_cpu(const cg_kernel_args *a, int op) {
    return cg_bcast_cpu2(a, bit_loops[op][cg_ops_arith_slot(a->call->inputs[0].dtype) - 1]);
}

/* ------------------------------------------------------------------ */
/* Definitions                                                         */

static cg_op_status bit_infer(cg_op_call *call, const char *op) {
    const cg_tensor_desc *a = &call->inputs[0], *b = &call->inputs[1];
    if (!cg_ops_is_int(a->dtype))
        return cg_op_fail(call, "input 0 (a) has unsupported dtype %s for %s (%s)", cg_ops_dtype_name(a->dtype), op,
                          cg_ops_int_names(0));
    if (a->dtype != b->dtype)
        return cg_op_fail(call, "inputs have mixed dtypes %s and %s; %s needs both the same (use cast)",
                          cg_ops_dtype_name(a->dtype), cg_ops_dtype_name(b->dtype), op);
    call->outputs[0].dtype = a->dtype;
    return cg_broadcast_shapes(call, a, b, &call->outputs[0]);
}

#define D(...) \
    { __VA_ARGS__ }
#define CASE(DT, nd_a, da, nd_b, db) \
    { 2, {{DT, nd_a, da, -1e300, 1e300}, {DT, nd_b, db, -1e300, 1e300}}, NULL }
/* Every type over its whole range (conform clips to it), with broadcasts. */
static const cg_ops_case bit_cases[] = {
    CASE(CG_I32, 1, D(1), 1, D(1)),
    CASE(CG_U8, 1, D(17), 1, D(17)),
    CASE(CG_I8, 0, D(0), 1, D(3)),
    CASE(CG_U16, 2, D(17, 3), 1, D(3)),
    CASE(CG_I16, 2, D(3, 1), 3, D(4, 1, 5)),
    CASE(CG_U32, 4, D(2, 1, 3, 1), 4, D(1, 5, 1, 7)),
    CASE(CG_I64, 1, D(257), 0, D(0)),
    CASE(CG_U64, 2, D(3, 1), 3, D(4, 1, 5)),
    CASE(CG_I32, 2, D(100, 1000), 2, D(100, 1000)),
    CASE(CG_U64, 2, D(1000, 1), 2, D(1000, 3)),
};
#define N_BIT_CASES ((int32_t)(sizeof bit_cases / sizeof bit_cases[0]))

static int32_t bit_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= N_BIT_CASES) return 0;
    cg_ops_fill_case(&bit_cases[i], 1, c);
    return 1;
}

static const char *const binary_inputs[] = {"a", "b", NULL};

#define BIT_DOC(WHAT)                                                                                          \
    "Elementwise bitwise " WHAT " of a and b, of the same integer dtype (i8, u8, i16, u16, i32, u32, i64 or "  \
    "u64), which broadcast against each other with NumPy rules; the output has their dtype and the broadcast " \
    "shape."

#define BIT_OP(NAME, OP, WHAT)                                                                                   \
    static cg_op_status NAME##_infer(cg_op_call *call) { return bit_infer(call, #NAME); }                        \
    static cg_op_status NAME##_cpu(const cg_kernel_args *a) { return bit_cpu(a, OP); }                           \
    static cg_op_status NAME##_cl(const cg_kernel_args *a) { return cg_bcast_cl2(a, bit_bop[OP]); }              \
    static const cg_kernel_def NAME##_kernels[] = {                                                              \
        CG_KERNEL(.backend = CG_BACKEND_CPU, .run = NAME##_cpu),                                                 \
        CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = NAME##_cl),                                               \
    };                                                                                                           \
    const cg_op_def cg_op_##NAME =                                                                               \
        CG_OP(.name = #NAME, .doc = BIT_DOC(WHAT), .min_inputs = 2, .max_inputs = 2, .min_outputs = 1,           \
              .max_outputs = 1, .input_names = binary_inputs, .infer = NAME##_infer, CG_KERNELS(NAME##_kernels), \
              .conform_case = bit_conform);

BIT_OP(bitwise_and, B_AND, "and")
BIT_OP(bitwise_or, B_OR, "or")
BIT_OP(bitwise_xor, B_XOR, "exclusive or")

/* ------------------------------------------------------------------ */
/* bit_shift                                                           */

enum { SH_DIRECTION };

static const cg_attr_def shift_attrs[] = {
    CG_ATTR(.name = "direction", .type = CG_ATTR_STRING, .required = 1,
            .doc = "\"left\" (toward the high bits) or \"right\""),
};

/* B_SHL or B_SHR for the node's direction, or -1. */
static int shift_op(const cg_op_call *call) {
    const char *d = call->attrs[SH_DIRECTION].s;
    return !strcmp(d, "left") ? B_SHL : !strcmp(d, "right") ? B_SHR : -1;
}

static cg_op_status shift_infer(cg_op_call *call) {
    if (shift_op(call) < 0)
        return cg_op_fail(call, "attribute 'direction' must be \"left\" or \"right\", got \"%s\"",
                          call->attrs[SH_DIRECTION].s);
    return bit_infer(call, "bit_shift");
}

static cg_op_status shift_cpu(const cg_kernel_args *a) { return bit_cpu(a, shift_op(a->call)); }
static cg_op_status shift_cl(const cg_kernel_args *a) { return cg_bcast_cl2(a, bit_bop[shift_op(a->call)]); }

/* The bit cases both ways, the amounts from below 0 to past the width so
 * that every rule of an amount out of range is met. */
static int32_t shift_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= 2 * N_BIT_CASES) return 0;
    const cg_ops_case *t = &bit_cases[i / 2];
    cg_ops_fill_case(t, 1, c);
    c->attrs = i % 2 ? "direction: \"right\"" : "direction: \"left\"";
    const double bits = 8.0 * (double)cg_dtype_size((cg_dtype)t->in[0].dt);
    c->lo[1] = cg_ops_is_unsigned(t->in[0].dt) ? 0 : -3;
    c->hi[1] = bits + 3;
    return 1;
}

static const cg_kernel_def shift_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = shift_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = shift_cl),
};

static const char *const shift_inputs[] = {"x", "amount", NULL};

const cg_op_def cg_op_bit_shift =
    CG_OP(.name = "bit_shift",
          .doc = "Elementwise x shifted by `amount` bits toward the high bits (direction \"left\") or the low bits "
                 "(\"right\"), as ONNX BitShift: x and amount of the same integer dtype (i8, u8, i16, u16, i32, "
                 "u32, i64 or u64), broadcast with NumPy rules; bits shifted out are lost, a signed x shifts right "
                 "arithmetically (copies of the sign bit come in), and an amount below 0 or at least the width "
                 "gives 0, or -1 for a negative x shifted right.",
          .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .input_names = shift_inputs,
          CG_ATTRS(shift_attrs), .infer = shift_infer, CG_KERNELS(shift_kernels), .conform_case = shift_conform);

/* ------------------------------------------------------------------ */
/* bitwise_not                                                         */

static cg_op_status not_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    if (!cg_ops_is_int(x->dtype))
        return cg_op_fail(call, "input 0 (x) must be %s, got %s", cg_ops_int_names(0), cg_ops_dtype_name(x->dtype));
    call->outputs[0] = *x;
    return CG_OP_OK;
}

static cg_op_status not_cpu(const cg_kernel_args *a) { return cg_ops_int_unary_cpu(a, CG_IU_NOT); }
static cg_op_status not_cl(const cg_kernel_args *a) { return cg_ops_int_unary_cl(a, CG_IU_NOT); }

/* Each integer type on a shape of its own (0-d and empty included). */
static int32_t not_conform(int32_t i, cg_conform_case *c) {
    static const struct {
        int nd;
        int64_t d[4];
    } shapes[] = {{1, {1}}, {0, {0}}, {1, {0}}, {1, {17}}, {3, {2, 3, 5}}, {1, {257}}, {2, {3, 1000}}, {2, {7, 3}}};
    if (i < 0 || i >= (int32_t)(sizeof shapes / sizeof shapes[0])) return 0;
    return cg_ops_int_unary_case(i, shapes[i].nd, shapes[i].d, NULL, c);
}

static const char *const not_inputs[] = {"x", NULL};
static const cg_kernel_def not_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = not_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = not_cl),
};

const cg_op_def cg_op_bitwise_not =
    CG_OP(.name = "bitwise_not",
          .doc = "Elementwise bitwise complement ~x of an integer tensor (i8, u8, i16, u16, i32, u32, i64 or u64); "
                 "output has x's shape and dtype, may run in place.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = not_inputs,
          .infer = not_infer, CG_KERNELS(not_kernels), .flags = CG_OP_FLAG_INPLACE0, .conform_case = not_conform);
