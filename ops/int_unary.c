/* Integer unary kernels (int_ops.h) for neg, abs, sign and bitwise_not on
 * every integer dtype, and the integer dtype helpers. */
#include "int_ops.h"

#include <stdint.h>

#include "bcast.h"
#include "elementwise.cl.h"

/* Types in the order of the tables below (and of cg_ops_int_unary_case). */
static const cg_op_dtype int_types[] = {CG_U8, CG_I8, CG_U16, CG_I16, CG_U32, CG_I32, CG_U64, CG_I64};
#define N_INT ((int)(sizeof int_types / sizeof int_types[0]))

static int int_slot(cg_op_dtype t) {
    for (int i = 0; i < N_INT; i++)
        if (int_types[i] == t) return i;
    return -1;
}

int cg_ops_is_int(cg_op_dtype t) { return int_slot(t) >= 0; }

int cg_ops_arith_slot(cg_op_dtype t) {
    static const cg_op_dtype order[CG_OPS_ARITH_SLOTS] = {CG_F32, CG_I32, CG_I64, CG_I8, CG_U8,
                                                          CG_I16, CG_U16, CG_U32, CG_U64};
    for (int i = 0; i < CG_OPS_ARITH_SLOTS; i++)
        if (order[i] == t) return i;
    return -1;
}

int cg_ops_is_unsigned(cg_op_dtype t) { return t == CG_U8 || t == CG_U16 || t == CG_U32 || t == CG_U64; }

const char *cg_ops_int_names(int with_f32) {
    return with_f32 ? "f32, i8, u8, i16, u16, i32, u32, i64 or u64" : "i8, u8, i16, u16, i32, u32, i64 or u64";
}

const char *cg_ops_cl_int_options(cg_op_dtype t) {
    static const char *const opts[N_INT] = {
        "-DTC=int -DTW=uint",    "-DTC=int -DTW=uint -DTSIGNED",
        "-DTC=int -DTW=uint",    "-DTC=int -DTW=uint -DTSIGNED",
        "-DTC=uint -DTW=uint",   "-DTC=int -DTW=uint -DTSIGNED",
        "-DTC=ulong -DTW=ulong", "-DTC=long -DTW=ulong -DTSIGNED",
    };
    int k = int_slot(t);
    return k < 0 ? "" : opts[k];
}

/* One loop per op and type: T the element type, U an unsigned type at least
 * as wide as T and int, so the arithmetic wraps without a promotion to a
 * signed int (no undefined behaviour). SIGN_EXPR is the op's expression
 * for the type's signedness. */
// clang-format off
#define IU_LOOP(SUF, T, U, NEG_ABS, SIGN_EXPR)                                          \
    static void iu_##SUF(const T *x, T *y, int64_t n, cg_ops_int_unary op) {            \
        switch (op) {                                                                   \
        case CG_IU_NEG: for (int64_t i = 0; i < n; i++) y[i] = (T)(0u - (U)x[i]); return; \
        case CG_IU_ABS: for (int64_t i = 0; i < n; i++) y[i] = NEG_ABS; return;         \
        case CG_IU_SIGN: for (int64_t i = 0; i < n; i++) y[i] = SIGN_EXPR; return;      \
        default: for (int64_t i = 0; i < n; i++) y[i] = (T)~(U)x[i]; return;            \
        }                                                                               \
    }
#define IU_SIGNED(SUF, T, U) IU_LOOP(SUF, T, U, x[i] < 0 ? (T)(0u - (U)x[i]) : x[i], (T)((x[i] > 0) - (x[i] < 0)))
#define IU_UNSIGNED(SUF, T, U) IU_LOOP(SUF, T, U, x[i], (T)(x[i] != 0))
// clang-format on
IU_UNSIGNED(u8, uint8_t, unsigned)
IU_SIGNED(i8, int8_t, unsigned)
IU_UNSIGNED(u16, uint16_t, unsigned)
IU_SIGNED(i16, int16_t, unsigned)
IU_UNSIGNED(u32, uint32_t, uint32_t)
IU_SIGNED(i32, int32_t, uint32_t)
IU_UNSIGNED(u64, uint64_t, uint64_t)
IU_SIGNED(i64, int64_t, uint64_t)

cg_op_status cg_ops_int_unary_cpu(const cg_kernel_args *a, cg_ops_int_unary op) {
    const cg_tensor_desc *d = &a->call->inputs[0];
    const int64_t n = cg_desc_numel(d);
    switch (int_slot(d->dtype)) {
    case 0: iu_u8(a->in[0], a->out[0], n, op); break;
    case 1: iu_i8(a->in[0], a->out[0], n, op); break;
    case 2: iu_u16(a->in[0], a->out[0], n, op); break;
    case 3: iu_i16(a->in[0], a->out[0], n, op); break;
    case 4: iu_u32(a->in[0], a->out[0], n, op); break;
    case 5: iu_i32(a->in[0], a->out[0], n, op); break;
    case 6: iu_u64(a->in[0], a->out[0], n, op); break;
    case 7: iu_i64(a->in[0], a->out[0], n, op); break;
    default: return cg_op_fail(a->call, "no integer kernel for %s", cg_ops_dtype_name(d->dtype));
    }
    return CG_OP_OK;
}

cg_op_status cg_ops_int_unary_cl(const cg_kernel_args *a, cg_ops_int_unary op) {
    static const char *const uop[] = {"NEG", "ABS", "SIGN", "NOT"};
    const cg_op_dtype t = a->call->inputs[0].dtype;
    char opts[160];
    snprintf(opts, sizeof opts, "-DT=%s -DUOP_%s %s", cg_bcast_cl_type(t, 0), uop[op], cg_ops_cl_int_options(t));
    return cg_ops_cl_unary_built(a, cg_cl_elementwise, "un_int", opts);
}

int32_t cg_ops_int_unary_case(int32_t k, int nd, const int64_t *d, const char *attrs, cg_conform_case *c) {
    if (k < 0 || k >= N_INT) return 0;
    /* conform clips the range to the type's (i64 to +-2^53) */
    cg_ops_case t = {1, {{int_types[k], nd, {0}, -1e300, 1e300}}, attrs};
    for (int i = 0; i < nd; i++) t.in[0].d[i] = d[i];
    cg_ops_fill_case(&t, 1, c);
    return 1;
}
