/* Elementwise operators: binary arithmetic with NumPy broadcasting, unary
 * math functions, affine and cast. */
#include "ops_cl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_math.h"
#include "elementwise.cl.h"

/* ------------------------------------------------------------------ */
/* Broadcast iteration                                                 */

/*
 * A binary broadcast reduced to as few dimensions as possible: dims of size
 * 1 in the output are dropped, and neighbouring dims are merged whenever
 * both inputs walk them contiguously or both broadcast them. Equal shapes
 * become one dim; a trailing-row broadcast ([R, C] op [C]) becomes two dims
 * with b's outer stride 0. Strides are in elements; 0 means broadcast.
 */
typedef struct bcast_plan {
    int nd;
    int64_t n[CG_MAX_DIMS];
    int64_t sa[CG_MAX_DIMS], sb[CG_MAX_DIMS];
} bcast_plan;

/* Strides of `in` padded on the left to `nd` dims against output dims `od`. */
static void bcast_strides(const cg_tensor_desc *in, int nd, const int64_t *od, int64_t *st) {
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        int k = in->ndim - nd + i;
        int64_t d = k >= 0 ? in->dims[k] : 1;
        st[i] = (d == 1 && od[i] != 1) ? 0 : s;
        s *= d;
    }
}

static void bcast_plan_make(bcast_plan *p, const cg_tensor_desc *a, const cg_tensor_desc *b,
                            const cg_tensor_desc *o) {
    int64_t sa[CG_MAX_DIMS], sb[CG_MAX_DIMS];
    bcast_strides(a, o->ndim, o->dims, sa);
    bcast_strides(b, o->ndim, o->dims, sb);
    p->nd = 0;
    for (int i = 0; i < o->ndim; i++) {
        if (o->dims[i] == 1) continue;
        int k = p->nd - 1;
        if (k >= 0 && p->sa[k] == sa[i] * o->dims[i] && p->sb[k] == sb[i] * o->dims[i]) {
            p->n[k] *= o->dims[i];
            p->sa[k] = sa[i];
            p->sb[k] = sb[i];
        } else {
            p->n[p->nd] = o->dims[i];
            p->sa[p->nd] = sa[i];
            p->sb[p->nd] = sb[i];
            p->nd++;
        }
    }
    if (p->nd == 0) { /* a single element */
        p->nd = 1;
        p->n[0] = 1;
        p->sa[0] = p->sb[0] = 0;
    }
}

/* Inner loop of a binary op over n output elements; sa/sb are 0 or 1. */
typedef void (*bin_loop_fn)(const void *a, int64_t sa, const void *b, int64_t sb, void *o,
                            int64_t n);

/* Runs `fn` over a broadcast plan for 4-byte elements. */
static void bcast_run(const bcast_plan *p, bin_loop_fn fn, const char *a, const char *b,
                      char *o) {
    int last = p->nd - 1;
    int64_t inner = p->n[last];
    int64_t idx[CG_MAX_DIMS] = {0};
    int64_t oa = 0, ob = 0, oo = 0;
    for (;;) {
        fn(a + oa * 4, p->sa[last], b + ob * 4, p->sb[last], o + oo * 4, inner);
        oo += inner;
        int d = last - 1;
        for (; d >= 0; d--) {
            oa += p->sa[d];
            ob += p->sb[d];
            if (++idx[d] < p->n[d]) break;
            oa -= p->sa[d] * p->n[d];
            ob -= p->sb[d] * p->n[d];
            idx[d] = 0;
        }
        if (d < 0) break;
    }
}

/* Defines an inner loop NAME for element type T computing EXPR from x, y. */
#define BIN_LOOP(NAME, T, EXPR)                                                  \
    static void NAME(const void *a_, int64_t sa, const void *b_, int64_t sb,     \
                     void *o_, int64_t n) {                                      \
        const T *a = a_, *b = b_;                                                \
        T *o = o_;                                                               \
        if (sa && sb) {                                                          \
            for (int64_t i = 0; i < n; i++) {                                    \
                T x = a[i], y = b[i];                                            \
                o[i] = (EXPR);                                                   \
            }                                                                    \
        } else if (sa) {                                                         \
            const T y = b[0];                                                    \
            for (int64_t i = 0; i < n; i++) {                                    \
                T x = a[i];                                                      \
                o[i] = (EXPR);                                                   \
            }                                                                    \
        } else if (sb) {                                                         \
            const T x = a[0];                                                    \
            for (int64_t i = 0; i < n; i++) {                                    \
                T y = b[i];                                                      \
                o[i] = (EXPR);                                                   \
            }                                                                    \
        } else {                                                                 \
            const T x = a[0], y = b[0];                                          \
            const T r = (EXPR);                                                  \
            for (int64_t i = 0; i < n; i++) o[i] = r;                            \
        }                                                                        \
    }

/* Integer arithmetic wraps around modulo 2^32 (computed unsigned: no UB). */
#define WRAP(op) ((int32_t)((uint32_t)x op (uint32_t)y))

BIN_LOOP(add_f32_loop, float, x + y)
BIN_LOOP(sub_f32_loop, float, x - y)
BIN_LOOP(mul_f32_loop, float, x * y)
BIN_LOOP(div_f32_loop, float, x / y)
BIN_LOOP(pow_f32_loop, float, powf(x, y))
/* NaN propagates, as in NumPy's maximum/minimum. */
BIN_LOOP(max_f32_loop, float, (x > y || x != x) ? x : y)
BIN_LOOP(min_f32_loop, float, (x < y || x != x) ? x : y)
BIN_LOOP(add_i32_loop, int32_t, WRAP(+))
BIN_LOOP(sub_i32_loop, int32_t, WRAP(-))
BIN_LOOP(mul_i32_loop, int32_t, WRAP(*))
BIN_LOOP(max_i32_loop, int32_t, x > y ? x : y)
BIN_LOOP(min_i32_loop, int32_t, x < y ? x : y)


/* ------------------------------------------------------------------ */
/* OpenCL                                                              */

/* Launches a one-element-per-item kernel of elementwise.cl over n elements. */
static cg_op_status ew_launch(const cg_kernel_args *a, cl_kernel k, int64_t n) {
    return cg_ops_cl_launch_1d(a, k, NULL, n,
                               cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* Runs unary kernel `name` of elementwise.cl (x, y, n[, extra float
 * args]) over input 0. */
static cg_op_status ew_unary_cl(const cg_kernel_args *a, const char *name, int n_f,
                                const float *f) {
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
 * work-group sizes. f32 values in [-2, 2]; i32 values over the whole range
 * so that add/sub/mul wrap around. */
#define BIN_F(nd_a, da, nd_b, db) \
    {2, {{F32, nd_a, da, -2, 2}, {F32, nd_b, db, -2, 2}}, NULL}
#define BIN_I(nd_a, da, nd_b, db) \
    {2, {{I32, nd_a, da, IMIN, IMAX}, {I32, nd_b, db, IMIN, IMAX}}, NULL}
#define D(...) {__VA_ARGS__}

static const cg_ops_case bin_cases[] = {
    BIN_F(1, D(1), 1, D(1)),
    BIN_I(1, D(1), 1, D(1)),
    BIN_F(0, D(0), 0, D(0)),
    BIN_F(1, D(3), 1, D(3)),
    BIN_I(1, D(3), 1, D(3)),
    BIN_F(0, D(0), 1, D(3)),
    BIN_F(1, D(17), 1, D(1)),
    BIN_F(1, D(17), 1, D(17)),
    BIN_I(1, D(17), 1, D(17)),
    BIN_F(2, D(17, 3), 1, D(3)),
    BIN_I(2, D(17, 3), 1, D(3)),
    BIN_F(2, D(17, 1), 2, D(17, 3)),
    BIN_F(2, D(3, 1), 3, D(4, 1, 5)),
    BIN_I(2, D(3, 1), 3, D(4, 1, 5)),
    BIN_F(3, D(2, 3, 5), 3, D(2, 1, 5)),
    BIN_F(4, D(2, 1, 3, 1), 4, D(1, 5, 1, 7)),
    BIN_I(4, D(2, 1, 3, 1), 4, D(1, 5, 1, 7)),
    BIN_F(1, D(257), 1, D(257)),
    BIN_I(1, D(257), 0, D(0)),
    BIN_F(2, D(3, 1000), 1, D(1000)),
    BIN_F(2, D(1000, 1), 2, D(1000, 3)),
    BIN_F(2, D(100, 1000), 2, D(100, 1000)),
    BIN_I(2, D(100, 1000), 2, D(100, 1000)),
    BIN_F(3, D(7, 1, 1000), 2, D(13, 1)),
};

/* Fills case `index` of a binary op; f32-only ops skip the i32 cases, div
 * (is_div 1) keeps its divisor away from 0 ([0.25, 2]) and pow (2) its base
 * positive. */
static int32_t bin_conform(int32_t index, cg_conform_case *c, int allow_i32, int is_div) {
    int32_t seen = 0;
    for (size_t i = 0; i < sizeof bin_cases / sizeof bin_cases[0]; i++) {
        if (!allow_i32 && bin_cases[i].in[0].dt == CG_OP_I32) continue;
        if (seen++ != index) continue;
        cg_ops_fill_case(&bin_cases[i], 1, c);
        if (is_div == 1) {
            c->lo[1] = 0.25;
            c->hi[1] = 2;
        } else if (is_div == 2) { /* pow: positive bases, exponents of both signs */
            c->lo[0] = 0.1;
            c->hi[0] = 3;
            c->lo[1] = -2;
            c->hi[1] = 2;
        }
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Binary operators                                                    */

static cg_op_status binary_infer(cg_op_call *call, const char *op, int allow_i32) {
    const cg_tensor_desc *a = &call->inputs[0], *b = &call->inputs[1];
    if (a->dtype != CG_OP_F32 && a->dtype != CG_OP_I32)
        return cg_op_fail(call, "input 0 (a) has unsupported dtype %s for %s",
                          cg_ops_dtype_name(a->dtype), op);
    if (a->dtype != b->dtype)
        return cg_op_fail(call, "inputs have mixed dtypes %s and %s; %s needs both the same "
                          "(use cast)", cg_ops_dtype_name(a->dtype),
                          cg_ops_dtype_name(b->dtype), op);
    if (a->dtype == CG_OP_I32 && !allow_i32)
        return cg_op_fail(call, "%s supports only f32 inputs, got i32", op);
    cg_tensor_desc *o = &call->outputs[0];
    o->dtype = a->dtype;
    return cg_broadcast_shapes(call, a, b, o);
}

static cg_op_status binary_cpu(const cg_kernel_args *args, bin_loop_fn f32, bin_loop_fn i32) {
    const cg_op_call *call = args->call;
    const cg_tensor_desc *o = &call->outputs[0];
    if (cg_desc_numel(o) == 0) return CG_OP_OK;
    bcast_plan p;
    bcast_plan_make(&p, &call->inputs[0], &call->inputs[1], o);
    bcast_run(&p, o->dtype == CG_OP_I32 ? i32 : f32, args->in[0], args->in[1], args->out[0]);
    return CG_OP_OK;
}

/*
 * OpenCL: the same collapsed broadcast plan as the CPU. One dim with unit or
 * zero strides (equal shapes, or one side a single element) runs
 * bin_flat_<op>_<dtype>; anything else bin_nd_<op>_<dtype>, which decomposes
 * each output index over the plan's dims.
 */
static cg_op_status binary_cl(const cg_kernel_args *args, const char *op) {
    const cg_op_call *call = args->call;
    const cg_tensor_desc *o = &call->outputs[0];
    int64_t n = cg_desc_numel(o);
    if (n == 0) return CG_OP_OK;
    bcast_plan p;
    bcast_plan_make(&p, &call->inputs[0], &call->inputs[1], o);
    const char *dt = o->dtype == CG_OP_I32 ? "i32" : "f32";
    int flat = p.nd == 1 && p.sa[0] <= 1 && p.sb[0] <= 1;
    char name[64];
    snprintf(name, sizeof name, "bin_%s_%s_%s", flat ? "flat" : "nd", op, dt);
    cl_kernel k = cg_ops_cl_kernel(args, cg_cl_elementwise, name, n > INT32_MAX, 0, NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem a = (cl_mem)args->in[0], b = (cl_mem)args->in[1], y = (cl_mem)args->out[0];
    cl_long ln = n;
    if (flat) {
        cl_long sa = p.sa[0], sb = p.sb[0];
        const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(a), CG_OPS_CL_ARG(sa), CG_OPS_CL_ARG(b),
                                         CG_OPS_CL_ARG(sb), CG_OPS_CL_ARG(y), CG_OPS_CL_ARG(ln)};
        if (cg_ops_cl_args(args, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    } else {
        /* Innermost dim first in the vectors; unused entries are 1 / 0. */
        cl_long8 dims, sta, stb;
        cl_int nd = p.nd;
        for (int i = 0; i < 8; i++) {
            int d = p.nd - 1 - i;
            dims.s[i] = d >= 0 ? p.n[d] : 1;
            sta.s[i] = d >= 0 ? p.sa[d] : 0;
            stb.s[i] = d >= 0 ? p.sb[d] : 0;
        }
        const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(a),   CG_OPS_CL_ARG(b),
                                         CG_OPS_CL_ARG(y),   CG_OPS_CL_ARG(ln),
                                         CG_OPS_CL_ARG(nd),  CG_OPS_CL_ARG(dims),
                                         CG_OPS_CL_ARG(sta), CG_OPS_CL_ARG(stb)};
        if (cg_ops_cl_args(args, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    }
    return ew_launch(args, k, n);
}

static const char *const binary_inputs[] = {"a", "b", NULL};

#define BINARY_OP(NAME, I32, F32_LOOP, I32_LOOP, DOC)                             \
    static cg_op_status NAME##_infer(cg_op_call *call) {                          \
        return binary_infer(call, #NAME, I32);                                    \
    }                                                                             \
    static cg_op_status NAME##_cpu(const cg_kernel_args *a) {                     \
        return binary_cpu(a, F32_LOOP, I32_LOOP);                                 \
    }                                                                             \
    static cg_op_status NAME##_cl(const cg_kernel_args *a) {                      \
        return binary_cl(a, #NAME);                                               \
    }                                                                             \
    static int32_t NAME##_conform(int32_t index, cg_conform_case *c) {            \
        return bin_conform(index, c, I32, !strcmp(#NAME, "div") ? 1 : !strcmp(#NAME, "pow") ? 2 : 0); \
    }                                                                             \
    static const cg_kernel_def NAME##_kernels[] = {                               \
        {.struct_size = sizeof(cg_kernel_def), .backend = CG_BACKEND_CPU, .workspace = NULL, .run = NAME##_cpu},                \
        {.struct_size = sizeof(cg_kernel_def), .backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = NAME##_cl},              \
    };                                                                            \
    const cg_op_def cg_op_##NAME = {                                              \
        .struct_size = sizeof(cg_op_def),                                         \
        .name = #NAME,                                                            \
        .doc = DOC,                                                               \
        .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,     \
        .input_names = binary_inputs,                                             \
        .infer = NAME##_infer,                                                    \
        .kernels = NAME##_kernels, .n_kernels = 2,                                \
        .conform_case = NAME##_conform,                                           \
    };

#define BCAST_DOC                                                                 \
    " a and b broadcast against each other with NumPy rules (shapes are "        \
    "right-aligned; a dim of size 1 stretches to the other's size); the output " \
    "has the broadcast shape. Both inputs must have the same dtype."

BINARY_OP(add, 1, add_f32_loop, add_i32_loop,
          "Elementwise sum a + b, f32 or i32 (i32 wraps around on overflow)." BCAST_DOC)
BINARY_OP(sub, 1, sub_f32_loop, sub_i32_loop,
          "Elementwise difference a - b, f32 or i32 (i32 wraps around on overflow)." BCAST_DOC)
BINARY_OP(mul, 1, mul_f32_loop, mul_i32_loop,
          "Elementwise product a * b, f32 or i32 (i32 wraps around on overflow)." BCAST_DOC)
BINARY_OP(div, 0, div_f32_loop, NULL,
          "Elementwise quotient a / b, f32 only, IEEE semantics (x / 0 is +-inf, "
          "0 / 0 is NaN)." BCAST_DOC)
BINARY_OP(pow, 0, pow_f32_loop, NULL,
          "Elementwise power a^b, f32 only, as C's powf (a negative a with a non-integer b "
          "is NaN; pow(x, 0) is 1)." BCAST_DOC)
BINARY_OP(maximum, 1, max_f32_loop, max_i32_loop,
          "Elementwise maximum of a and b, f32 or i32. For f32 a NaN in either "
          "input gives NaN (as numpy.maximum)." BCAST_DOC)
BINARY_OP(minimum, 1, min_f32_loop, min_i32_loop,
          "Elementwise minimum of a and b, f32 or i32. For f32 a NaN in either "
          "input gives NaN (as numpy.minimum)." BCAST_DOC)

/* ------------------------------------------------------------------ */
/* Unary operators                                                     */

static cg_op_status unary_infer(cg_op_call *call, const char *op, int allow_i32) {
    const cg_tensor_desc *x = &call->inputs[0];
    if (x->dtype != CG_OP_F32 && !(allow_i32 && x->dtype == CG_OP_I32))
        return cg_op_fail(call, "input 0 (x) must be %s for %s, got %s",
                          allow_i32 ? "f32 or i32" : "f32", op, cg_ops_dtype_name(x->dtype));
    call->outputs[0] = *x;
    return CG_OP_OK;
}

static float relu_f(float x) { return x < 0.0f ? 0.0f : x; /* NaN stays NaN */ }
static float neg_f(float x) { return -x; }

/* Elementwise in place is allowed: each element is read before it is
 * written at the same index. */
#define UNARY_F32(NAME, FN)                                                       \
    static cg_op_status NAME##_cpu(const cg_kernel_args *a) {                     \
        const float *x = a->in[0];                                                \
        float *y = a->out[0];                                                     \
        int64_t n = cg_desc_numel(&a->call->inputs[0]);                           \
        for (int64_t i = 0; i < n; i++) y[i] = FN(x[i]);                          \
        return CG_OP_OK;                                                          \
    }

/* The transcendental ones run on the CPU backend's vector functions. */
#define UNARY_VEC_F32(NAME, VFN)                                                  \
    static cg_op_status NAME##_cpu(const cg_kernel_args *a) {                     \
        VFN(a->in[0], a->out[0], (size_t)cg_desc_numel(&a->call->inputs[0]));      \
        return CG_OP_OK;                                                          \
    }

UNARY_VEC_F32(tanh, cg_cpu_vtanh)
UNARY_VEC_F32(sigmoid, cg_cpu_vsigmoid)
UNARY_VEC_F32(exp, cg_cpu_vexp)
UNARY_F32(log, logf)
UNARY_F32(sqrt, sqrtf)
UNARY_F32(relu, relu_f)

static cg_op_status neg_cpu(const cg_kernel_args *a) {
    const cg_tensor_desc *d = &a->call->inputs[0];
    int64_t n = cg_desc_numel(d);
    if (d->dtype == CG_OP_I32) {
        const int32_t *x = a->in[0];
        int32_t *y = a->out[0];
        /* Wraps around: -INT32_MIN is INT32_MIN. */
        for (int64_t i = 0; i < n; i++) y[i] = (int32_t)(0u - (uint32_t)x[i]);
        return CG_OP_OK;
    }
    const float *x = a->in[0];
    float *y = a->out[0];
    for (int64_t i = 0; i < n; i++) y[i] = neg_f(x[i]);
    return CG_OP_OK;
}

static cg_op_status neg_cl(const cg_kernel_args *a) {
    return ew_unary_cl(a, a->call->inputs[0].dtype == CG_OP_I32 ? "un_neg_i32" : "un_neg_f32",
                       0, NULL);
}

#define UNARY_CL(NAME)                                                            \
    static cg_op_status NAME##_cl(const cg_kernel_args *a) {                      \
        return ew_unary_cl(a, "un_" #NAME, 0, NULL);                              \
    }
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
    {1, {1}}, {0, {0}}, {1, {3}}, {1, {17}}, {3, {2, 3, 5}}, {1, {257}},
    {2, {4, 1000}}, {2, {100, 1000}},
};
#define N_UN_SHAPES ((int32_t)(sizeof un_shapes / sizeof un_shapes[0]))

/* Case `index` of a unary op with f32 values in [lo, hi]; with i32, every
 * shape is also run as i32 over the whole range (so -INT32_MIN wraps). */
static int32_t un_conform(int32_t index, cg_conform_case *c, double lo, double hi, int i32,
                          const char *attrs) {
    int32_t per = i32 ? 2 : 1;
    if (index < 0 || index >= N_UN_SHAPES * per) return 0;
    int is_i32 = i32 && index % 2 == 1;
    cg_ops_case t = {1, {{is_i32 ? CG_OP_I32 : CG_OP_F32, un_shapes[index / per].nd, {0},
                          is_i32 ? IMIN : lo, is_i32 ? IMAX : hi}}, attrs};
    memcpy(t.in[0].d, un_shapes[index / per].d, sizeof t.in[0].d);
    cg_ops_fill_case(&t, 1, c);
    return 1;
}

/* Value ranges: tanh and sigmoid reach into saturation; log and sqrt get
 * positive inputs; exp stays where results are moderate. */
static int32_t neg_conform(int32_t i, cg_conform_case *c) { return un_conform(i, c, -2, 2, 1, NULL); }
static int32_t tanh_conform(int32_t i, cg_conform_case *c) { return un_conform(i, c, -6, 6, 0, NULL); }
static int32_t sigmoid_conform(int32_t i, cg_conform_case *c) {
    return un_conform(i, c, -100, 100, 0, NULL);
}
static int32_t exp_conform(int32_t i, cg_conform_case *c) { return un_conform(i, c, -4, 4, 0, NULL); }
static int32_t log_conform(int32_t i, cg_conform_case *c) { return un_conform(i, c, 0.05, 8, 0, NULL); }
static int32_t sqrt_conform(int32_t i, cg_conform_case *c) { return un_conform(i, c, 0, 8, 0, NULL); }
static int32_t relu_conform(int32_t i, cg_conform_case *c) { return un_conform(i, c, -2, 2, 0, NULL); }

static const char *const unary_inputs[] = {"x", NULL};

#define UNARY_OP(NAME, I32, DOC)                                                  \
    static cg_op_status NAME##_infer(cg_op_call *call) {                          \
        return unary_infer(call, #NAME, I32);                                     \
    }                                                                             \
    static const cg_kernel_def NAME##_kernels[] = {                               \
        {.struct_size = sizeof(cg_kernel_def), .backend = CG_BACKEND_CPU, .workspace = NULL, .run = NAME##_cpu},                \
        {.struct_size = sizeof(cg_kernel_def), .backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = NAME##_cl},              \
    };                                                                            \
    const cg_op_def cg_op_##NAME = {                                              \
        .struct_size = sizeof(cg_op_def),                                         \
        .name = #NAME,                                                            \
        .doc = DOC,                                                               \
        .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,     \
        .input_names = unary_inputs,                                              \
        .infer = NAME##_infer,                                                    \
        .kernels = NAME##_kernels, .n_kernels = 2,                                \
        .flags = CG_OP_FLAG_INPLACE0,                                             \
        .conform_case = NAME##_conform,                                           \
    };

UNARY_OP(neg, 1,
         "Elementwise negation -x, f32 or i32 (i32 wraps around: -INT32_MIN is "
         "INT32_MIN). Output has x's shape and dtype; may run in place.")
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
    {.struct_size = sizeof(cg_attr_def), .name = "alpha", .type = CG_ATTR_FLOAT,
     .default_float = 1.0, .doc = "scale applied to x (default 1.0)"},
    {.struct_size = sizeof(cg_attr_def), .name = "beta", .type = CG_ATTR_FLOAT,
     .default_float = 0.0, .doc = "offset added after scaling (default 0.0)"},
};

static cg_op_status affine_infer(cg_op_call *call) {
    return unary_infer(call, "affine", 0);
}

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
    const float f[2] = {(float)a->call->attrs[AFFINE_ALPHA].f,
                        (float)a->call->attrs[AFFINE_BETA].f};
    return ew_unary_cl(a, "un_affine", 2, f);
}

/* Defaults, then explicit alpha and beta, over the unary shapes. */
static int32_t affine_conform(int32_t i, cg_conform_case *c) {
    static const char *const attrs[] = {NULL, "alpha: 2.5, beta: -0.75", "alpha: -0.125",
                                        "beta: 3"};
    if (i < 0 || i >= N_UN_SHAPES * 4) return 0;
    return un_conform(i / 4, c, -2, 2, 0, attrs[i % 4]);
}

static const cg_kernel_def affine_kernels[] = {
    {.struct_size = sizeof(cg_kernel_def), .backend = CG_BACKEND_CPU, .workspace = NULL, .run = affine_cpu},
    {.struct_size = sizeof(cg_kernel_def), .backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = affine_cl},
};

const cg_op_def cg_op_affine = {
    .struct_size = sizeof(cg_op_def),
    .name = "affine",
    .doc = "Elementwise y = alpha * x + beta on an f32 tensor, with scalar float "
           "attributes alpha (default 1.0) and beta (default 0.0), computed in "
           "single precision. Output has x's shape; may run in place.",
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .input_names = unary_inputs,
    .attrs = affine_attrs, .n_attrs = 2,
    .infer = affine_infer,
    .kernels = affine_kernels, .n_kernels = 2,
    .flags = CG_OP_FLAG_INPLACE0,
    .conform_case = affine_conform,
};

