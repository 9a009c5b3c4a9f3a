/* cast(x; to): every dtype to every dtype, the same rules on the CPU and in
 * OpenCL (cl/cast.cl): values go through float (f32, f16, bf16) or a 64-bit integer
 * (integer types, bool); float to integer truncates toward zero with NaN 0
 * and saturation at the target's range; integer to integer keeps the low
 * bits (two's complement); to bool is x != 0; to f16 and bf16 rounds to
 * nearest even; the same dtype copies the bits. */
#include "bcast.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cast.cl.h"
#include "cast_narrow.h"
#include "dtype.h"

enum { CAST_TO, CAST_SATURATE, CAST_ROUND_MODE };

static const cg_attr_def cast_attrs[] = {
    CG_ATTR(.name = "to", .type = CG_ATTR_STRING, .required = 1,
            .doc = "target dtype: \"f32\", \"f16\", \"bf16\", \"i8\", \"u8\", \"i16\", \"u16\", \"i32\", \"u32\", "
                   "\"i64\", \"u64\", \"bool\" or a narrow type (\"f8e4m3fn\" ... \"u2\")"),
    CG_ATTR(.name = "saturate", .type = CG_ATTR_INT, .default_int = 1,
            .doc = "to a float8 type: 1 saturates values past its range at its largest finite value, 0 gives inf "
                   "or NaN (ONNX Cast's saturate)"),
    CG_ATTR(.name = "round_mode", .type = CG_ATTR_STRING, .default_string = "up",
            .doc = "to f8e8m0: \"up\", \"down\" or \"nearest\" (ONNX Cast's round_mode)"),
};

static int is_float(cg_op_dtype t) { return t == CG_OP_F32 || t == CG_F16 || t == CG_BF16; }

static cg_op_status cast_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    const cg_attr_value *to = &call->attrs[CAST_TO];
    if (!cg_dtype_valid((int)x->dtype))
        return cg_op_fail(call, "input 0 (x) has unsupported dtype %s for cast", cg_ops_dtype_name(x->dtype));
    if (!to->present) return cg_op_fail(call, "attribute 'to' is required for cast");
    cg_dtype dt = to->s ? cg_dtype_parse(to->s, strlen(to->s)) : (cg_dtype)0;
    if (!dt)
        return cg_op_fail(call, "attribute 'to' must name a dtype (%s), got \"%s\"", cg_dtype_all_names(),
                          to->s ? to->s : "");
    if (cg_cast_round_mode(call->attrs[CAST_ROUND_MODE].s) < 0)
        return cg_op_fail(call, "attribute 'round_mode' must be \"up\", \"down\" or \"nearest\", got \"%s\"",
                          call->attrs[CAST_ROUND_MODE].s);
    call->outputs[0] = *x;
    call->outputs[0].dtype = (cg_op_dtype)dt;
    return CG_OP_OK;
}

static inline float load_f(const void *p, int64_t i, cg_op_dtype t) {
    uint32_t b;
    float f;
    if (t == CG_OP_F32) return ((const float *)p)[i];
    b = t == CG_F16 ? cg_f16_to_f32_bits(((const uint16_t *)p)[i]) : cg_bf16_to_f32_bits(((const uint16_t *)p)[i]);
    memcpy(&f, &b, 4);
    return f;
}

/* An integer element's bits as int64 (u64 as its two's complement bits:
 * store_i knows it from `from`). */
static inline int64_t load_i(const void *p, int64_t i, cg_op_dtype t) {
    switch ((cg_dtype)t) {
    case CG_I32: return ((const int32_t *)p)[i];
    case CG_U32: return ((const uint32_t *)p)[i];
    case CG_I16: return ((const int16_t *)p)[i];
    case CG_U16: return ((const uint16_t *)p)[i];
    case CG_I8: return ((const int8_t *)p)[i];
    case CG_U8: return ((const uint8_t *)p)[i];
    case CG_I64: return ((const int64_t *)p)[i];
    case CG_U64: return (int64_t)((const uint64_t *)p)[i];
    default: return ((const uint8_t *)p)[i] != 0; /* bool */
    }
}

/* Truncation toward zero, NaN 0, saturation: hi1 and lo1 are the floats
 * just past the range (as in cl/cast.cl). */
static inline int64_t f2i(float v, float hi1, float lo1, int64_t hi, int64_t lo) {
    if (v != v) return 0;
    if (v >= hi1) return hi;
    if (v <= lo1) return lo;
    return (int64_t)v;
}

/* The same for u64, whose top half int64_t does not hold. */
static inline uint64_t f2u64(float v) {
    if (v != v || v <= -1.0f) return 0;
    return v >= 18446744073709551616.0f ? UINT64_MAX : (uint64_t)v;
}

static inline void store_f(void *p, int64_t i, cg_op_dtype t, float v) {
    uint32_t b;
    switch ((cg_dtype)t) {
    case CG_F32: ((float *)p)[i] = v; return;
    case CG_F16:
    case CG_BF16:
        memcpy(&b, &v, 4);
        ((uint16_t *)p)[i] = t == CG_F16 ? cg_f32_to_f16_bits(b) : cg_f32_to_bf16_bits(b);
        return;
    case CG_I32: ((int32_t *)p)[i] = (int32_t)f2i(v, 2147483648.0f, -2147483904.0f, INT32_MAX, INT32_MIN); return;
    case CG_U32: ((uint32_t *)p)[i] = (uint32_t)f2i(v, 4294967296.0f, -1.0f, UINT32_MAX, 0); return;
    case CG_I16: ((int16_t *)p)[i] = (int16_t)f2i(v, 32768.0f, -32769.0f, INT16_MAX, INT16_MIN); return;
    case CG_U16: ((uint16_t *)p)[i] = (uint16_t)f2i(v, 65536.0f, -1.0f, UINT16_MAX, 0); return;
    case CG_I8: ((int8_t *)p)[i] = (int8_t)f2i(v, 128.0f, -129.0f, 127, -128); return;
    case CG_U8: ((uint8_t *)p)[i] = (uint8_t)f2i(v, 256.0f, -1.0f, 255, 0); return;
    case CG_I64:
        ((int64_t *)p)[i] = f2i(v, 9223372036854775808.0f, -9223373136366403584.0f, INT64_MAX, INT64_MIN);
        return;
    case CG_U64: ((uint64_t *)p)[i] = f2u64(v); return;
    default: ((uint8_t *)p)[i] = v != 0.0f; return; /* bool: NaN is true */
    }
}

/* v (u64's bits when from_u64) to an integer type keeps the low bits; to a
 * float type rounds once, from the integer's own value. */
static inline void store_i(void *p, int64_t i, cg_op_dtype t, int64_t v, int from_u64) {
    if (is_float(t)) {
        store_f(p, i, t, from_u64 ? (float)(uint64_t)v : (float)v);
        return;
    }
    switch (cg_dtype_size((cg_dtype)t)) {
    case 8: ((uint64_t *)p)[i] = (uint64_t)v; return;
    case 4: ((uint32_t *)p)[i] = (uint32_t)(uint64_t)v; return;
    case 2: ((uint16_t *)p)[i] = (uint16_t)(uint64_t)v; return;
    default: ((uint8_t *)p)[i] = t == CG_BOOL ? v != 0 : (uint8_t)(uint64_t)v; return;
    }
}

/* Elementwise and reading each element before writing it, so in place
 * (same element size) is safe. */
static inline __attribute__((always_inline)) void cast_run(const void *x, void *y, int64_t n, cg_op_dtype from,
                                                           cg_op_dtype to) {
    for (int64_t i = 0; i < n; i++) {
        if (is_float(from)) store_f(y, i, to, load_f(x, i, from));
        else store_i(y, i, to, load_i(x, i, from), from == CG_U64);
    }
}

/* The pairs imported models cast every run (int8 graphs' i32 products to
 * f32 and f32 to u8, ids and masks), each a loop of its own types: the
 * switches above fold away and the loop vectorises (an i32 -> f32 cast of
 * 1728 elements: 11 us through the switches, under 1 us here). The same
 * element code as every other pair. */
// clang-format off
#define CAST_PAIRS(X) \
    X(CG_I32, CG_F32) \
    X(CG_F32, CG_I32) \
    X(CG_I64, CG_F32) \
    X(CG_F32, CG_I64) \
    X(CG_U8, CG_F32) \
    X(CG_F32, CG_U8) \
    X(CG_I8, CG_F32) \
    X(CG_F32, CG_I8) \
    X(CG_I64, CG_I32) \
    X(CG_I32, CG_I64) \
    X(CG_BOOL, CG_F32) \
    X(CG_F32, CG_BOOL) \
    X(CG_BOOL, CG_I64) \
    X(CG_I64, CG_BOOL) \
    X(CG_BOOL, CG_I32) \
    X(CG_I32, CG_BOOL)
// clang-format on
#define CAST_FN(F, T) \
    static void cast_##F##_##T(const void *x, void *y, int64_t n) { cast_run(x, y, n, F, T); }
CAST_PAIRS(CAST_FN)
#undef CAST_FN

static int cast_fast(const void *x, void *y, int64_t n, cg_op_dtype from, cg_op_dtype to) {
#define CAST_CASE(F, T)          \
    if (from == F && to == T) {  \
        cast_##F##_##T(x, y, n); \
        return 1;                \
    }
    CAST_PAIRS(CAST_CASE)
#undef CAST_CASE
    return 0;
}

static cg_op_status cast_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    cg_op_dtype from = call->inputs[0].dtype, to = call->outputs[0].dtype;
    int64_t n = cg_desc_numel(&call->inputs[0]);
    if (cg_cast_is_narrow(from, to))
        return cg_cast_narrow_cpu(a, (int)call->attrs[CAST_SATURATE].i,
                                  cg_cast_round_mode(call->attrs[CAST_ROUND_MODE].s));
    if (from == to) {
        if (a->out[0] != a->in[0]) memcpy(a->out[0], a->in[0], (size_t)n * cg_dtype_size((cg_dtype)from));
        return CG_OP_OK;
    }
    if (!cast_fast(a->in[0], a->out[0], n, from, to)) cast_run(a->in[0], a->out[0], n, from, to);
    return CG_OP_OK;
}

/* The kernel `cast` of cl/cast.cl built for the pair: element types,
 * the value's type on the way (float, long, or ulong from u64) and the
 * load and store macros; `cast_copy` of the element's bits for the same
 * dtype. */
static cg_op_status cast_cl(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    cg_op_dtype from = call->inputs[0].dtype, to = call->outputs[0].dtype;
    if (cg_cast_is_narrow(from, to))
        return cg_cast_narrow_cl(a, (int)call->attrs[CAST_SATURATE].i,
                                 cg_cast_round_mode(call->attrs[CAST_ROUND_MODE].s));
    if (from == to && a->out[0] == a->in[0]) return CG_OP_OK;
    if (from == to)
        return cg_ops_cl_unary_built(a, cg_cl_cast, "cast_copy",
                                     cg_ops_cl_elem_type_option(cg_dtype_size((cg_dtype)from)));
    const char *fn = cg_dtype_name((cg_dtype)from), *tn = cg_dtype_name((cg_dtype)to);
    const char *vt = is_float(from) ? "float" : from == CG_U64 ? "ulong" : "long";
    char opts[160];
    snprintf(opts, sizeof opts, "-DFT=%s -DTT=%s -DVT=%s -DLD=LD_%s -DST=ST_%c_%s", cg_bcast_cl_type(from, 0),
             cg_bcast_cl_type(to, 0), vt, fn, is_float(from) ? 'F' : 'I', tn);
    return cg_ops_cl_unary_built(a, cg_cl_cast, "cast", opts);
}

/* Every pair of dtypes, each over a few shapes, with values that reach past
 * every integer range (saturation and wrap-around) and fractions (rounding
 * toward zero, to f16/bf16): integers over their whole range, f32 and bf16
 * within +-300 on one shape (most values inside the narrow types), +-3e19
 * on another (past u64), +-3e9 on the rest. */
static int32_t cast_conform(int32_t i, cg_conform_case *c) {
    static const cg_op_dtype types[] = {CG_OP_F32, CG_OP_I32, CG_F16, CG_BF16, CG_I8,  CG_U8,
                                        CG_I64,    CG_BOOL,   CG_I16, CG_U16,  CG_U32, CG_U64};
    enum { NT = (int)(sizeof types / sizeof types[0]) };
    static const struct {
        int nd;
        int64_t d[4];
    } shapes[] = {{1, {1}}, {0, {0}}, {1, {0}}, {2, {3, 17}}, {1, {1000}}};
    const int32_t ns = (int32_t)(sizeof shapes / sizeof shapes[0]);
    if (i >= NT * NT * ns) return cg_cast_narrow_conform(i - NT * NT * ns, c);
    if (i < 0) return 0;
    int from = i % NT, to = (i / NT) % NT, sh = i / (NT * NT);
    static char attrs[NT][NT][16];
    snprintf(attrs[from][to], sizeof attrs[from][to], "to: \"%s\"", cg_dtype_name((cg_dtype)types[to]));
    /* f16's range is +-65504: larger values would be inf before the cast */
    double lim = types[from] == CG_F16 ? 6e4 : !is_float(types[from]) ? 1e300 : sh == 3 ? 300 : sh == 4 ? 3e19 : 3e9;
    cg_ops_case t = {1, {{types[from], shapes[sh].nd, {0}, -lim, lim}}, attrs[from][to]};
    memcpy(t.in[0].d, shapes[sh].d, sizeof t.in[0].d);
    cg_ops_fill_case(&t, 1, c);
    return 1;
}

static const char *const cast_inputs[] = {"x", NULL};

static const cg_kernel_def cast_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = cast_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = cast_cl),
};

const cg_op_def cg_op_cast =
    CG_OP(.name = "cast",
          .doc = "Converts x of any dtype to the dtype named by the required string attribute to (f32, f16, bf16, "
                 "i8, u8, i16, u16, i32, u32, i64, u64, bool or a narrow type); the shape is unchanged. Floats to "
                 "integers truncate toward zero, NaN "
                 "becomes 0 and values beyond the target's range saturate to its limits; integers to integers keep "
                 "the low bits (two's complement wrap-around); anything to bool is x != 0 (NaN is true) and bool "
                 "is 0 or 1; to f32, f16 and bf16 rounds to the nearest, ties to even (an i64 "
                 "or u64 goes through f32 on its way to f16 or bf16). The same dtype copies the bits. The narrow "
                 "types (f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, f8e8m0, f4e2m1, i4, u4, i2, u2) convert as ONNX's "
                 "Cast does: to float8 rounded to nearest even, saturating (saturate: 1) or giving inf/NaN (0); to "
                 "f8e8m0 rounded by round_mode; to f4e2m1 rounded, saturating at +-6; to i4, u4, i2 and u2 "
                 "truncated and wrapped to the low bits. May run in place.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = cast_inputs,
          CG_ATTRS(cast_attrs), .infer = cast_infer, CG_KERNELS(cast_kernels), .flags = CG_OP_FLAG_INPLACE0,
          .conform_case = cast_conform);
