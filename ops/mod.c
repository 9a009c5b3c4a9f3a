/* mod(a, b; fmod): the remainder of a / b, ONNX Mod, for f32 and every
 * integer type, with NumPy broadcasting (bcast.h, cl/broadcast.cl BOP_MOD).
 * fmod 0 gives the divisor's sign (a - floor(a / b) * b: Python's % and
 * numpy.mod), fmod 1 the dividend's (a - trunc(a / b) * b: C's % and fmod,
 * numpy.fmod). */
#include "bcast.h"
#include "int_ops.h"

#include <math.h>
#include <stdint.h>

enum { MOD_FMOD };

static const cg_attr_def mod_attrs[] = {
    CG_ATTR(.name = "fmod", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "0: the result has the divisor's sign (Python's %); 1: the dividend's (C's fmod)"),
};

/* f32, fmod 0: IEEE fmod moved into the divisor's sign, a zero taking the
 * divisor's sign too; NaN, infinite dividends and zero divisors give NaN,
 * an infinite divisor gives x or the divisor (ONNX's special cases). */
static inline float fmod_floor(float x, float y) {
    float r = fmodf(x, y);
    if (r == 0.0f) return copysignf(0.0f, y);
    return (r < 0.0f) != (y < 0.0f) ? r + y : r;
}

/* Signed integers: x mod 0 is 0 (as numpy), MIN mod -1 is 0 (C's %
 * overflows there). */
static inline int64_t imod(int64_t x, int64_t y, int floor) {
    if (y == 0 || y == -1) return 0;
    int64_t r = x % y;
    return floor && r != 0 && (r < 0) != (y < 0) ? r + y : r;
}

// clang-format off
#define MOD_SIGNED(SUF, T)                                              \
    CG_BCAST_LOOP2(mod_##SUF, T, T, (T)imod(x, y, 1))                   \
    CG_BCAST_LOOP2(fmod_##SUF, T, T, (T)imod(x, y, 0))
#define MOD_UNSIGNED(SUF, T)                                            \
    CG_BCAST_LOOP2(mod_##SUF, T, T, y == 0 ? 0 : x % y)                 \
    CG_BCAST_LOOP2(fmod_##SUF, T, T, y == 0 ? 0 : x % y)
// clang-format on
CG_BCAST_LOOP2(mod_f32, float, float, fmod_floor(x, y))
CG_BCAST_LOOP2(fmod_f32, float, float, fmodf(x, y))
MOD_SIGNED(i32, int32_t)
MOD_SIGNED(i64, int64_t)
MOD_SIGNED(i8, int8_t)
MOD_UNSIGNED(u8, uint8_t)
MOD_SIGNED(i16, int16_t)
MOD_UNSIGNED(u16, uint16_t)
MOD_UNSIGNED(u32, uint32_t)
MOD_UNSIGNED(u64, uint64_t)

#define ROW(OP) \
    { OP##_f32, OP##_i32, OP##_i64, OP##_i8, OP##_u8, OP##_i16, OP##_u16, OP##_u32, OP##_u64 }
static const cg_bcast_loop mod_loops[2][CG_OPS_ARITH_SLOTS] = {ROW(mod), ROW(fmod)};

static cg_op_status mod_infer(cg_op_call *call) {
    const cg_tensor_desc *a = &call->inputs[0], *b = &call->inputs[1];
    const int64_t f = call->attrs[MOD_FMOD].i;
    if (f != 0 && f != 1) return cg_op_fail(call, "attribute 'fmod' must be 0 or 1, got %lld", (long long)f);
    if (cg_ops_arith_slot(a->dtype) < 0)
        return cg_op_fail(call, "input 0 (a) has unsupported dtype %s for mod (%s)", cg_ops_dtype_name(a->dtype),
                          cg_ops_int_names(1));
    if (a->dtype != b->dtype)
        return cg_op_fail(call, "inputs have mixed dtypes %s and %s; mod needs both the same (use cast)",
                          cg_ops_dtype_name(a->dtype), cg_ops_dtype_name(b->dtype));
    call->outputs[0].dtype = a->dtype;
    return cg_broadcast_shapes(call, a, b, &call->outputs[0]);
}

static cg_op_status mod_cpu(const cg_kernel_args *a) {
    return cg_bcast_cpu2(a, mod_loops[a->call->attrs[MOD_FMOD].i == 1][cg_ops_arith_slot(a->call->inputs[0].dtype)]);
}

static cg_op_status mod_cl(const cg_kernel_args *a) {
    return cg_bcast_cl2_opt(a, "MOD", a->call->attrs[MOD_FMOD].i == 1 ? "-DMOD_FMOD" : NULL);
}

#define D(...) \
    { __VA_ARGS__ }
#define CASE(DT, LO, HI, nd_a, da, nd_b, db) \
    { 2, {{DT, nd_a, da, LO, HI}, {DT, nd_b, db, LO, HI}}, NULL }
/* Dividends over the whole range of each integer type (f32 in [-50, 50]);
 * the divisors' range is set in mod_conform. */
static const cg_ops_case mod_cases[] = {
    CASE(CG_F32, -50, 50, 1, D(1), 1, D(1)),
    CASE(CG_I32, -1e300, 1e300, 1, D(17), 1, D(17)),
    CASE(CG_I8, -1e300, 1e300, 2, D(17, 3), 1, D(3)),
    CASE(CG_U8, -1e300, 1e300, 0, D(0), 1, D(3)),
    CASE(CG_I16, -1e300, 1e300, 2, D(3, 1), 3, D(4, 1, 5)),
    CASE(CG_U16, -1e300, 1e300, 1, D(257), 0, D(0)),
    CASE(CG_U32, -1e300, 1e300, 4, D(2, 1, 3, 1), 4, D(1, 5, 1, 7)),
    CASE(CG_I64, -1e300, 1e300, 2, D(17, 3), 1, D(3)),
    CASE(CG_U64, -1e300, 1e300, 1, D(17), 1, D(17)),
    CASE(CG_F32, -50, 50, 2, D(100, 1000), 2, D(100, 1000)),
    CASE(CG_I32, -1e300, 1e300, 2, D(1000, 1), 2, D(1000, 3)),
};
#define N_MOD_CASES ((int32_t)(sizeof mod_cases / sizeof mod_cases[0]))

/* Each case with fmod 0 and 1; divisors small (0 and -1 included) on even
 * cases, over the whole range on odd ones; f32 divisors in [-4, 4]. */
static int32_t mod_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= 2 * N_MOD_CASES) return 0;
    const cg_ops_case *t = &mod_cases[i / 2];
    cg_ops_fill_case(t, 1, c);
    c->attrs = i % 2 ? "fmod: 1" : "fmod: 0";
    if (t->in[0].dt == CG_F32) c->lo[1] = -4, c->hi[1] = 4;
    else if ((i / 2) % 2 == 0) c->lo[1] = cg_ops_is_unsigned(t->in[0].dt) ? 0 : -9, c->hi[1] = 9;
    return 1;
}

static const char *const mod_inputs[] = {"a", "b", NULL};
static const cg_kernel_def mod_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = mod_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = mod_cl),
};

const cg_op_def cg_op_mod = CG_OP(
        .name = "mod",
        .doc =
            "Elementwise remainder of a / b (ONNX Mod): with fmod 0 (the default) it has b's sign, a - floor(a / b) * "
            "b "
            "(Python's % and numpy.mod); with fmod 1 a's sign, a - trunc(a / b) * b (C's % and fmod, numpy.fmod). a "
            "and b have the same dtype, f32 or an integer type (i8, u8, i16, u16, i32, u32, i64, u64), and broadcast "
            "with NumPy rules. Integers: x mod 0 is 0 (as numpy). f32: a NaN, an infinite a or a zero b give NaN; with "
            "fmod 0 a zero result has b's sign and an infinite b gives a when a and b have the same sign, else b.",
        .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .input_names = mod_inputs,
        CG_ATTRS(mod_attrs), .infer = mod_infer, CG_KERNELS(mod_kernels), .conform_case = mod_conform);
