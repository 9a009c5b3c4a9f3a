/* Comparisons (equal, less, less_equal, greater, greater_equal), logic
 * (logical_and, logical_or, logical_xor, logical_not) and where: the ops
 * that make and use bool tensors, with NumPy broadcasting (bcast.h). */
#include "bcast.h"

#include <stdint.h>
#include <string.h>

#include "broadcast.cl.h"

/* ------------------------------------------------------------------ */
/* Comparisons                                                         */

/* The comparisons in the order of the tables below, with their kernels'
 * BOP_ names. */
enum { CMP_EQ, CMP_LT, CMP_LE, CMP_GT, CMP_GE, N_CMP };
static const char *const cmp_bop[N_CMP] = {"EQ", "LT", "LE", "GT", "GE"};

/* The dtypes a comparison takes, in the order of the loop tables. */
enum { CT_F32, CT_I32, CT_I64, CT_U8, CT_I8, CT_I16, CT_U16, CT_U32, CT_U64, N_CT };

static int cmp_type(cg_op_dtype dt) {
    switch (dt) {
    case CG_F32: return CT_F32;
    case CG_I32: return CT_I32;
    case CG_I64: return CT_I64;
    case CG_U8:
    case CG_BOOL: return CT_U8;
    case CG_I8: return CT_I8;
    case CG_I16: return CT_I16;
    case CG_U16: return CT_U16;
    case CG_U32: return CT_U32;
    case CG_U64: return CT_U64;
    default: return -1;
    }
}

/* f32 compares as IEEE does: NaN is unequal to everything, itself too. */
#define CMP_LOOPS(SUF, T)                        \
    CG_BCAST_LOOP2(eq_##SUF, T, uint8_t, x == y) \
    CG_BCAST_LOOP2(lt_##SUF, T, uint8_t, x < y)  \
    CG_BCAST_LOOP2(le_##SUF, T, uint8_t, x <= y) \
    CG_BCAST_LOOP2(gt_##SUF, T, uint8_t, x > y)  \
    CG_BCAST_LOOP2(ge_##SUF, T, uint8_t, x >= y)
CMP_LOOPS(f32, float)
CMP_LOOPS(i32, int32_t)
CMP_LOOPS(i64, int64_t)
CMP_LOOPS(u8, uint8_t)
CMP_LOOPS(i8, int8_t)
CMP_LOOPS(i16, int16_t)
CMP_LOOPS(u16, uint16_t)
CMP_LOOPS(u32, uint32_t)
CMP_LOOPS(u64, uint64_t)

#define CMP_ROW(SUF) \
    { eq_##SUF, lt_##SUF, le_##SUF, gt_##SUF, ge_##SUF }
static const cg_bcast_loop cmp_loops[N_CT][N_CMP] = {CMP_ROW(f32), CMP_ROW(i32), CMP_ROW(i64), CMP_ROW(u8), CMP_ROW(i8),
                                                     CMP_ROW(i16), CMP_ROW(u16), CMP_ROW(u32), CMP_ROW(u64)};

static cg_op_status cmp_infer(cg_op_call *call, const char *op) {
    const cg_tensor_desc *a = &call->inputs[0], *b = &call->inputs[1];
    if (cmp_type(a->dtype) < 0)
        return cg_op_fail(call, "input 0 (a) has unsupported dtype %s for %s (%s or bool)", cg_ops_dtype_name(a->dtype),
                          op, "f32, i8, u8, i16, u16, i32, u32, i64, u64");
    if (a->dtype != b->dtype)
        return cg_op_fail(call, "inputs have mixed dtypes %s and %s; %s needs both the same (use cast)",
                          cg_ops_dtype_name(a->dtype), cg_ops_dtype_name(b->dtype), op);
    call->outputs[0].dtype = CG_BOOL;
    return cg_broadcast_shapes(call, a, b, &call->outputs[0]);
}

#define BOOL_DT CG_BOOL
#define D(...) \
    { __VA_ARGS__ }
/* Comparison cases: small whole-number ranges, so that ties are common,
 * for every dtype; f32 also with NaN-free random values; broadcasts as the
 * arithmetic ops. */
#define CMP_CASE(DT, LO, HI, nd_a, da, nd_b, db) \
    { 2, {{DT, nd_a, da, LO, HI}, {DT, nd_b, db, LO, HI}}, NULL }
static const cg_ops_case cmp_cases[] = {
    CMP_CASE(CG_F32, -2, 2, 1, D(1), 1, D(1)),
    CMP_CASE(CG_I32, -3, 3, 1, D(17), 1, D(17)),
    CMP_CASE(CG_I64, -3, 3, 2, D(17, 3), 1, D(3)),
    CMP_CASE(BOOL_DT, 0, 1, 2, D(3, 1), 3, D(4, 1, 5)),
    CMP_CASE(CG_U8, 0, 255, 1, D(257), 0, D(0)),
    CMP_CASE(CG_I8, -3, 3, 4, D(2, 1, 3, 1), 4, D(1, 5, 1, 7)),
    CMP_CASE(CG_F32, -2, 2, 3, D(2, 3, 5), 3, D(2, 1, 5)),
    CMP_CASE(CG_I32, -2147483648.0, 2147483647.0, 2, D(100, 1000), 2, D(100, 1000)),
    CMP_CASE(CG_I64, -9e15, 9e15, 2, D(1000, 1), 2, D(1000, 3)),
    CMP_CASE(CG_F32, -2, 2, 3, D(7, 1, 1000), 2, D(13, 1)),
    CMP_CASE(CG_I16, -3, 3, 2, D(17, 3), 1, D(3)),
    CMP_CASE(CG_U16, 0, 65535, 1, D(257), 0, D(0)),
    CMP_CASE(CG_U32, 0, 3, 2, D(3, 1), 3, D(4, 1, 5)),
    CMP_CASE(CG_U64, 0, 1.8e19, 2, D(1000, 1), 2, D(1000, 3)),
    CMP_CASE(CG_U64, 9.2233720368547e18, 9.2233720368548e18, 1, D(17), 1, D(17)),
};

/* Fills *c from case `index` of `cases` (n of them) with one output. */
static int32_t case_at(const cg_ops_case *cases, int32_t n, int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= n) return 0;
    cg_ops_fill_case(&cases[index], 1, c);
    return 1;
}

static const char *const binary_inputs[] = {"a", "b", NULL};

#define CMP_DOC(WHAT)                                                                                       \
    "Elementwise " WHAT ": a bool tensor, 1 where it holds. a and b have the same dtype (f32, "             \
    "i8, u8, i16, u16, i32, u32, i64, u64 or bool) and broadcast against each other with NumPy rules; f32 " \
    "compares as IEEE (NaN is unequal to everything, itself included)."

/* An op of two broadcast inputs and a bool output: the CPU loop LOOP (an
 * expression of the kernel args `a`), the OpenCL kernel BOP of
 * broadcast.cl, conformance cases CASES. */
#define BOOL_OP(NAME, INFER, LOOP, BOP, CASES, DOC)                                                        \
    static cg_op_status NAME##_cpu(const cg_kernel_args *a) { return cg_bcast_cpu2(a, LOOP); }             \
    static cg_op_status NAME##_cl(const cg_kernel_args *a) { return cg_bcast_cl2(a, BOP); }                \
    static int32_t NAME##_conform(int32_t i, cg_conform_case *c) {                                         \
        return case_at(CASES, (int32_t)(sizeof CASES / sizeof CASES[0]), i, c);                            \
    }                                                                                                      \
    static const cg_kernel_def NAME##_kernels[] = {                                                        \
        CG_KERNEL(.backend = CG_BACKEND_CPU, .run = NAME##_cpu),                                           \
        CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = NAME##_cl),                                         \
    };                                                                                                     \
    const cg_op_def cg_op_##NAME = CG_OP(.name = #NAME, .doc = DOC, .min_inputs = 2, .max_inputs = 2,      \
                                         .min_outputs = 1, .max_outputs = 1, .input_names = binary_inputs, \
                                         .infer = INFER, CG_KERNELS(NAME##_kernels), .conform_case = NAME##_conform);

#define CMP_OP(NAME, K, WHAT)                                                             \
    static cg_op_status NAME##_infer(cg_op_call *call) { return cmp_infer(call, #NAME); } \
    BOOL_OP(NAME, NAME##_infer, cmp_loops[cmp_type(a->call->inputs[0].dtype)][K], cmp_bop[K], cmp_cases, CMP_DOC(WHAT))

CMP_OP(equal, CMP_EQ, "comparison a == b")
CMP_OP(less, CMP_LT, "comparison a < b")
CMP_OP(less_equal, CMP_LE, "comparison a <= b")
CMP_OP(greater, CMP_GT, "comparison a > b")
CMP_OP(greater_equal, CMP_GE, "comparison a >= b")

/* ------------------------------------------------------------------ */
/* Logic                                                               */

/* Any nonzero byte is true (a bool tensor holds 0 and 1; the kernels do
 * not rely on it); results are 0 or 1. */
CG_BCAST_LOOP2(and_loop, uint8_t, uint8_t, x != 0 && y != 0)
CG_BCAST_LOOP2(or_loop, uint8_t, uint8_t, x != 0 || y != 0)
CG_BCAST_LOOP2(xor_loop, uint8_t, uint8_t, (x != 0) != (y != 0))

static cg_op_status logic_infer(cg_op_call *call) {
    for (int i = 0; i < call->n_inputs; i++)
        if (call->inputs[i].dtype != CG_BOOL)
            return cg_op_fail(call, "input %d (%s) must be bool, got %s", i, i ? "b" : "a",
                              cg_ops_dtype_name(call->inputs[i].dtype));
    call->outputs[0].dtype = CG_BOOL;
    if (call->n_inputs == 1) {
        call->outputs[0] = call->inputs[0];
        return CG_OP_OK;
    }
    return cg_broadcast_shapes(call, &call->inputs[0], &call->inputs[1], &call->outputs[0]);
}

static const cg_ops_case logic_cases[] = {
    CMP_CASE(BOOL_DT, 0, 1, 1, D(1), 1, D(1)),
    CMP_CASE(BOOL_DT, 0, 1, 0, D(0), 1, D(3)),
    CMP_CASE(BOOL_DT, 0, 1, 1, D(17), 1, D(17)),
    CMP_CASE(BOOL_DT, 0, 1, 2, D(17, 3), 1, D(3)),
    CMP_CASE(BOOL_DT, 0, 1, 2, D(3, 1), 3, D(4, 1, 5)),
    CMP_CASE(BOOL_DT, 0, 1, 4, D(2, 1, 3, 1), 4, D(1, 5, 1, 7)),
    CMP_CASE(BOOL_DT, 0, 1, 2, D(100, 1000), 2, D(100, 1000)),
    CMP_CASE(BOOL_DT, 0, 1, 3, D(7, 1, 1000), 2, D(13, 1)),
};

#define LOGIC_DOC(WHAT)                                                                         \
    "Elementwise logical " WHAT " of bool tensors a and b, which broadcast against each other " \
    "with NumPy rules."

#define LOGIC_OP(NAME, LOOP, BOP, WHAT) BOOL_OP(NAME, logic_infer, LOOP, BOP, logic_cases, LOGIC_DOC(WHAT))

LOGIC_OP(logical_and, and_loop, "AND", "and")
LOGIC_OP(logical_or, or_loop, "OR", "or")
LOGIC_OP(logical_xor, xor_loop, "XOR", "exclusive or")

/* logical_not: 1 where x is 0. */
static cg_op_status not_cpu(const cg_kernel_args *a) {
    const uint8_t *x = a->in[0];
    uint8_t *y = a->out[0];
    const int64_t n = cg_desc_numel(&a->call->inputs[0]);
    for (int64_t i = 0; i < n; i++) y[i] = x[i] == 0;
    return CG_OP_OK;
}

static cg_op_status not_cl(const cg_kernel_args *a) {
    return cg_ops_cl_unary(a, cg_cl_broadcast, "logical_not", 0, NULL);
}

static const struct {
    int nd;
    int64_t d[4];
} not_shapes[] = {{1, {1}}, {0, {0}}, {1, {17}}, {3, {2, 3, 5}}, {2, {100, 1000}}};

static int32_t not_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= (int32_t)(sizeof not_shapes / sizeof not_shapes[0])) return 0;
    cg_ops_case t = {1, {{CG_BOOL, not_shapes[i].nd, {0}, 0, 1}}, NULL};
    memcpy(t.in[0].d, not_shapes[i].d, sizeof t.in[0].d);
    cg_ops_fill_case(&t, 1, c);
    return 1;
}

static const char *const not_inputs[] = {"x", NULL};
static const cg_kernel_def not_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = not_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = not_cl),
};
const cg_op_def cg_op_logical_not =
    CG_OP(.name = "logical_not",
          .doc = "Elementwise logical not of bool tensor x (1 where x is 0); the output has x's shape.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = not_inputs,
          .infer = logic_infer, CG_KERNELS(not_kernels), .conform_case = not_conform);

/* ------------------------------------------------------------------ */
/* where                                                               */

/* out = c ? x : y for elements of T, row by row (rows at rs[]); c
 * advances by s[0], x by s[1], y by s[2] (each 0 or 1). */
#define WHERE_LOOP(NAME, T)                                                                                           \
    static void NAME(const void *const *in, const int64_t *s, const int64_t *rs, void *o_, int64_t n, int64_t rows) { \
        T *o = o_;                                                                                                    \
        for (int64_t r = 0; r < rows; r++, o += n) {                                                                  \
            const uint8_t *c = (const uint8_t *)in[0] + r * rs[0];                                                    \
            const T *x = (const T *)in[1] + r * rs[1], *y = (const T *)in[2] + r * rs[2];                             \
            for (int64_t i = 0; i < n; i++) o[i] = c[i * s[0]] ? x[i * s[1]] : y[i * s[2]];                           \
        }                                                                                                             \
    }
WHERE_LOOP(where_1, uint8_t)
WHERE_LOOP(where_2, uint16_t)
WHERE_LOOP(where_4, uint32_t)
WHERE_LOOP(where_8, uint64_t)

static cg_op_status where_infer(cg_op_call *call) {
    const cg_tensor_desc *c = &call->inputs[0], *x = &call->inputs[1], *y = &call->inputs[2];
    if (c->dtype != CG_BOOL)
        return cg_op_fail(call, "input 0 (cond) must be bool, got %s", cg_ops_dtype_name(c->dtype));
    if (!cg_dtype_size((cg_dtype)x->dtype))
        return cg_op_fail(call, "input 1 (x) has unsupported dtype %s", cg_ops_dtype_name(x->dtype));
    if (x->dtype != y->dtype)
        return cg_op_fail(call, "inputs x and y have mixed dtypes %s and %s; where needs both the same (use cast)",
                          cg_ops_dtype_name(x->dtype), cg_ops_dtype_name(y->dtype));
    cg_tensor_desc xy;
    cg_op_status st = cg_broadcast_shapes(call, x, y, &xy);
    if (st) return st;
    call->outputs[0].dtype = x->dtype;
    return cg_broadcast_shapes(call, c, &xy, &call->outputs[0]);
}

static cg_op_status where_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *o = &call->outputs[0];
    if (cg_desc_numel(o) == 0) return CG_OP_OK;
    const size_t b = cg_dtype_size((cg_dtype)o->dtype);
    cg_bcast p;
    cg_bcast_make(&p, 3, call->inputs, o);
    const void *in[3] = {a->in[0], a->in[1], a->in[2]};
    const size_t bytes[3] = {1, b, b};
    cg_bcast_run(&p, b == 1 ? where_1 : b == 2 ? where_2 : b == 8 ? where_8 : where_4, in, bytes, a->out[0], b);
    return CG_OP_OK;
}

static cg_op_status where_cl(const cg_kernel_args *a) {
    static const char name[] = "where_nd";
    const cg_op_call *call = a->call;
    const cg_tensor_desc *o = &call->outputs[0];
    const int64_t n = cg_desc_numel(o);
    if (n == 0) return CG_OP_OK;
    cg_bcast p;
    cg_bcast_make(&p, 3, call->inputs, o);
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_broadcast, name, n > INT32_MAX, 0,
                                   cg_ops_cl_elem_type_option(cg_dtype_size((cg_dtype)o->dtype)));
    if (!k) return CG_OP_ERROR;
    cl_mem c = (cl_mem)a->in[0], x = (cl_mem)a->in[1], y = (cl_mem)a->in[2], out = (cl_mem)a->out[0];
    cl_long ln = n;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(c), CG_OPS_CL_ARG(x), CG_OPS_CL_ARG(y), CG_OPS_CL_ARG(out),
                                     CG_OPS_CL_ARG(ln)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v) || cg_bcast_cl_args(a, k, name, 5, &p))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

#define WHERE_CASE(DT, LO, HI, nd_c, dc, nd_x, dx, nd_y, dy) \
    { 3, {{CG_BOOL, nd_c, dc, 0, 1}, {DT, nd_x, dx, LO, HI}, {DT, nd_y, dy, LO, HI}}, NULL }
static const cg_ops_case where_cases[] = {
    WHERE_CASE(CG_F32, -2, 2, 1, D(1), 1, D(1), 1, D(1)),
    WHERE_CASE(CG_F32, -2, 2, 1, D(17), 1, D(17), 1, D(17)),
    WHERE_CASE(CG_I64, -9e15, 9e15, 2, D(17, 3), 1, D(3), 0, D(0)),
    WHERE_CASE(CG_I32, -1e9, 1e9, 2, D(3, 1), 3, D(4, 1, 5), 1, D(5)),
    WHERE_CASE(CG_BOOL, 0, 1, 0, D(0), 1, D(257), 1, D(257)),
    WHERE_CASE(CG_F16, -2, 2, 4, D(2, 1, 3, 1), 4, D(1, 5, 1, 7), 2, D(3, 1)),
    WHERE_CASE(CG_U8, 0, 255, 2, D(100, 1000), 2, D(100, 1000), 2, D(100, 1000)),
    WHERE_CASE(CG_F32, -2, 2, 3, D(7, 1, 1000), 2, D(13, 1), 1, D(1000)),
    WHERE_CASE(CG_U16, 0, 65535, 2, D(3, 1), 2, D(3, 17), 1, D(17)),
    WHERE_CASE(CG_U64, 0, 1.8e19, 1, D(17), 0, D(0), 1, D(17)),
};

static int32_t where_conform(int32_t i, cg_conform_case *c) {
    return case_at(where_cases, (int32_t)(sizeof where_cases / sizeof where_cases[0]), i, c);
}

static const char *const where_inputs[] = {"cond", "x", "y", NULL};
static const cg_kernel_def where_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = where_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = where_cl),
};
const cg_op_def cg_op_where =
    CG_OP(.name = "where",
          .doc = "Elementwise choice: x where cond (bool) is true, else y. x and y have the same dtype "
                 "(any); the three broadcast against each other with NumPy rules.",
          .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .input_names = where_inputs,
          .infer = where_infer, CG_KERNELS(where_kernels), .conform_case = where_conform);
