/* Pooling over windows of the spatial axes of x [N, C, spatial...] (1 to
 * 3 axes): max_pool (and the flattened index of each maximum), avg_pool
 * and lp_pool, with ONNX's windows (MaxPool, AveragePool, LpPool: strides,
 * dilations, pads, auto_pad, ceil_mode). CPU: a direct loop over the output
 * rows on the thread pool; OpenCL: one work-item per output element
 * (ops/cl/pool.cl). Both walk each window in the same order. */
#include "conv_geom.h"

#include "cpu/cpu_pool.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "pool.cl.h"

enum { POOL_MAX, POOL_AVG, POOL_LP };
/* Attribute positions; the last is the op's own (storage_order,
 * count_include_pad, p). */
enum { PL_KERNEL, PL_STRIDES, PL_DILATIONS, PL_PADS, PL_AUTO_PAD, PL_CEIL_MODE, PL_OWN };
static const cg_conv_attr_ix pool_ix = {PL_STRIDES, PL_DILATIONS, PL_PADS, PL_AUTO_PAD, PL_CEIL_MODE, -1};

#define POOL_COMMON_ATTRS                                                                                        \
    CG_ATTR(.name = "kernel", .type = CG_ATTR_INTS, .required = 1, .doc = "the window's size per spatial axis"), \
        CG_CONV_ATTR_STRIDES, CG_CONV_ATTR_DILATIONS,                                                            \
        CG_ATTR(.name = "pads", .type = CG_ATTR_INTS,                                                            \
                .doc = "padding before each spatial axis, then after each (ONNX's order; default none)"),        \
        CG_CONV_ATTR_AUTO_PAD,                                                                                   \
        CG_ATTR(.name = "ceil_mode", .type = CG_ATTR_INT, .default_int = 0,                                      \
                .doc = "1: a last, partial window where one starts inside the input or the start pad")

static const cg_attr_def max_attrs[] = {
    POOL_COMMON_ATTRS,
    CG_ATTR(.name = "storage_order", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "indices output: 0 row-major spatial positions, 1 column-major"),
};
static const cg_attr_def avg_attrs[] = {
    POOL_COMMON_ATTRS,
    CG_ATTR(.name = "count_include_pad", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "1: divide by the window's positions inside the padded input, 0: by those inside x"),
};
static const cg_attr_def lp_attrs[] = {
    POOL_COMMON_ATTRS,
    CG_ATTR(.name = "p", .type = CG_ATTR_FLOAT, .default_float = 2.0, .doc = "the norm's order (positive)"),
};

static const cg_op_dtype max_more[] = {CG_I8, CG_U8, 0};

static cg_op_status pool_geom(const cg_op_call *call, int kind, cg_conv_geom *g) {
    int nsp;
    if (cg_conv_check_x(call, kind == POOL_MAX ? max_more : NULL, &nsp)) return CG_OP_ERROR;
    const cg_attr_value *k = &call->attrs[PL_KERNEL];
    if (k->n_ints != nsp)
        return cg_op_fail(call, "attribute kernel must hold %d sizes (one per spatial axis of x), got %d", nsp,
                          (int)k->n_ints);
    for (int i = 0; i < nsp; i++)
        if (k->ints[i] < 1) return cg_op_fail(call, "attribute kernel must hold positive sizes");
    if (kind == POOL_MAX && (call->attrs[PL_OWN].i < 0 || call->attrs[PL_OWN].i > 1))
        return cg_op_fail(call, "attribute storage_order must be 0 or 1, got %lld", (long long)call->attrs[PL_OWN].i);
    if (kind == POOL_AVG && (call->attrs[PL_OWN].i < 0 || call->attrs[PL_OWN].i > 1))
        return cg_op_fail(call, "attribute count_include_pad must be 0 or 1, got %lld",
                          (long long)call->attrs[PL_OWN].i);
    if (kind == POOL_LP && !(call->attrs[PL_OWN].f > 0.0))
        return cg_op_fail(call, "attribute p must be positive, got %g", call->attrs[PL_OWN].f);
    return cg_conv_geom_make(call, &pool_ix, nsp, call->inputs[0].dims + 2, k->ints, 0, g);
}

static cg_op_status pool_infer_kind(cg_op_call *call, int kind) {
    cg_conv_geom g;
    if (pool_geom(call, kind, &g)) return CG_OP_ERROR;
    const cg_tensor_desc *x = &call->inputs[0];
    for (int o = 0; o < call->n_outputs; o++) {
        cg_tensor_desc *y = &call->outputs[o];
        *y = *x;
        for (int i = 0; i < g.nsp; i++) y->dims[2 + i] = g.out[CG_CONV_AXES - g.nsp + i];
        if (o == 1) y->dtype = CG_I64;
    }
    return CG_OP_OK;
}

static cg_op_status max_infer(cg_op_call *call) { return pool_infer_kind(call, POOL_MAX); }
static cg_op_status avg_infer(cg_op_call *call) { return pool_infer_kind(call, POOL_AVG); }
static cg_op_status lp_infer(cg_op_call *call) { return pool_infer_kind(call, POOL_LP); }

/* ---- CPU ---- */

typedef struct pool_job {
    cg_conv_geom g;
    int kind, dt, own_i;
    float p;
    const void *x;
    void *y;
    int64_t *idx;
} pool_job;

/* The taps of axis a at output o inside x: [*j0, *j1); and those inside
 * the padded input (count_include_pad). */
static void taps(const cg_conv_geom *g, int a, int64_t o, int64_t *j0, int64_t *j1, int64_t *padded) {
    const int64_t base = o * g->s[a] - g->pb[a];
    int64_t lo = 0, hi = g->k[a], plo = 0;
    while (lo < hi && base + lo * g->d[a] < 0) lo++;
    while (hi > lo && base + (hi - 1) * g->d[a] >= g->in[a]) hi--;
    int64_t phi = g->k[a];
    while (phi > plo && base + (phi - 1) * g->d[a] >= g->in[a] + g->pe[a]) phi--;
    *j0 = lo, *j1 = hi, *padded = phi - plo;
}

static float load(const pool_job *j, int64_t i) {
    return j->dt == CG_I8   ? (float)((const int8_t *)j->x)[i]
           : j->dt == CG_U8 ? (float)((const uint8_t *)j->x)[i]
                            : ((const float *)j->x)[i];
}

static void store(const pool_job *j, int64_t i, float v) {
    if (j->dt == CG_I8) ((int8_t *)j->y)[i] = (int8_t)v;
    else if (j->dt == CG_U8) ((uint8_t *)j->y)[i] = (uint8_t)v;
    else ((float *)j->y)[i] = v;
}

/* One output element at (plane, o): the window walked axis 0 first. */
static void pool_one(const pool_job *j, int64_t plane, const int64_t *o, int64_t yi) {
    const cg_conv_geom *g = &j->g;
    int64_t lo[3], hi[3], cnt = 1, best = -1;
    for (int a = 0; a < 3; a++) {
        int64_t padded;
        taps(g, a, o[a], &lo[a], &hi[a], &padded);
        cnt *= j->own_i ? padded : hi[a] - lo[a];
    }
    const int64_t in = cg_conv_in_size(g), xb = plane * in;
    float acc = 0.0f;
    for (int64_t k0 = lo[0]; k0 < hi[0]; k0++)
        for (int64_t k1 = lo[1]; k1 < hi[1]; k1++)
            for (int64_t k2 = lo[2]; k2 < hi[2]; k2++) {
                const int64_t i0 = o[0] * g->s[0] - g->pb[0] + k0 * g->d[0];
                const int64_t i1 = o[1] * g->s[1] - g->pb[1] + k1 * g->d[1];
                const int64_t i2 = o[2] * g->s[2] - g->pb[2] + k2 * g->d[2];
                const int64_t pos = (i0 * g->in[1] + i1) * g->in[2] + i2;
                const float v = load(j, xb + pos);
                if (j->kind == POOL_MAX) {
                    if (best < 0 || v > acc) {
                        acc = v;
                        best = j->own_i ? i0 + (i1 + i2 * g->in[1]) * g->in[0] : pos;
                    }
                } else if (j->kind == POOL_AVG) {
                    acc += v;
                } else {
                    const float av = fabsf(v);
                    acc += j->p == 2.0f ? av * av : j->p == 1.0f ? av : powf(av, j->p);
                }
            }
    if (j->kind == POOL_AVG) acc = cnt ? acc / (float)cnt : 0.0f;
    if (j->kind == POOL_LP) acc = j->p == 2.0f ? sqrtf(acc) : j->p == 1.0f ? acc : powf(acc, 1.0f / j->p);
    store(j, yi, acc);
    if (j->idx) j->idx[yi] = best < 0 ? -1 : xb + best;
}

/* The outputs [*lo, *hi) of axis a whose whole window lies inside x. */
static void pool_inner(const cg_conv_geom *g, int a, int64_t *lo, int64_t *hi) {
    const int64_t s = g->s[a], end = g->in[a] - (g->k[a] - 1) * g->d[a] + g->pb[a];
    *lo = (g->pb[a] + s - 1) / s;
    *hi = end > 0 ? (end + s - 1) / s : 0;
    if (*hi > g->out[a]) *hi = g->out[a];
    if (*lo > *hi) *lo = *hi;
}

enum { TAP_SET, TAP_SUM, TAP_MAX };

/* One tap over n outputs from xs at stride s: y = x, y += x or y = the
 * larger (x only where greater: the first of equals stays). Called with s
 * a constant 1 or 2, which vectorise (a runtime stride does not). */
static inline __attribute__((always_inline)) void pool_tap(float *y, const float *xs, int64_t n, const int64_t s,
                                                           int op) {
    if (op == TAP_SUM)
        for (int64_t t = 0; t < n; t++) y[t] += xs[t * s];
    else if (op == TAP_SET)
        for (int64_t t = 0; t < n; t++) y[t] = xs[t * s];
    else
        for (int64_t t = 0; t < n; t++) y[t] = xs[t * s] > y[t] ? xs[t * s] : y[t];
}

/* Max or mean of f32 x without indices over the outputs [lo, hi) of one
 * row (o0, o1), whose windows lie inside x along the last axis: each tap
 * one pass over the row (vectorised at stride 1), the taps in pool_one's
 * order and with its arithmetic (a max keeps the first of equals and an
 * initial NaN; a mean starts from 0 and divides by the same count). */
static void pool_row_f32(const pool_job *j, const float *xp, int64_t o0, int64_t o1, int64_t lo, int64_t hi, float *y) {
    const cg_conv_geom *g = &j->g;
    int64_t a0, b0, a1, b1, pad0, pad1, pad2, a2, b2;
    taps(g, 0, o0, &a0, &b0, &pad0);
    taps(g, 1, o1, &a1, &b1, &pad1);
    taps(g, 2, lo, &a2, &b2, &pad2);
    const int64_t s = g->s[2], n = hi - lo, cnt = j->own_i ? pad0 * pad1 * pad2 : (b0 - a0) * (b1 - a1) * g->k[2];
    int first = 1;
    y += lo;
    if (j->kind == POOL_AVG)
        for (int64_t t = 0; t < n; t++) y[t] = 0.0f;
    for (int64_t k0 = a0; k0 < b0; k0++)
        for (int64_t k1 = a1; k1 < b1; k1++) {
            const int64_t i0 = o0 * g->s[0] - g->pb[0] + k0 * g->d[0], i1 = o1 * g->s[1] - g->pb[1] + k1 * g->d[1];
            for (int64_t k2 = 0; k2 < g->k[2]; k2++, first = 0) {
                const float *xs = xp + (i0 * g->in[1] + i1) * g->in[2] + lo * s - g->pb[2] + k2 * g->d[2];
                const int op = j->kind == POOL_AVG ? TAP_SUM : first ? TAP_SET : TAP_MAX;
                if (s == 1) pool_tap(y, xs, n, 1, op);
                else if (s == 2) pool_tap(y, xs, n, 2, op);
                else pool_tap(y, xs, n, s, op);
            }
        }
    if (j->kind == POOL_AVG)
        for (int64_t t = 0; t < n; t++) y[t] = cnt ? y[t] / (float)cnt : 0.0f;
}

static void pool_rows(void *ctx, size_t r0, size_t r1) {
    const pool_job *j = ctx;
    const cg_conv_geom *g = &j->g;
    const int64_t rows = g->out[0] * g->out[1];
    const int fast = j->dt == CG_F32 && !j->idx && j->kind != POOL_LP;
    int64_t lo = 0, hi = 0;
    if (fast) pool_inner(g, 2, &lo, &hi);
    for (size_t r = r0; r < r1; r++) {
        int64_t o[3] = {(int64_t)r % rows / g->out[1], (int64_t)r % rows % g->out[1], 0}, a0, b0, a1, b1, pad;
        taps(g, 0, o[0], &a0, &b0, &pad);
        taps(g, 1, o[1], &a1, &b1, &pad);
        /* the inner outputs of a row with taps on the first two axes */
        const int64_t rlo = lo, rhi = fast && b0 > a0 && b1 > a1 ? hi : lo;
        if (rhi > rlo)
            pool_row_f32(j, (const float *)j->x + (int64_t)r / rows * cg_conv_in_size(g), o[0], o[1], rlo, rhi,
                         (float *)j->y + (int64_t)r * g->out[2]);
        for (o[2] = 0; o[2] < g->out[2]; o[2]++) {
            if (o[2] == rlo && rhi > rlo) o[2] = rhi;
            if (o[2] >= g->out[2]) break;
            pool_one(j, (int64_t)r / rows, o, (int64_t)r * g->out[2] + o[2]);
        }
    }
}

static cg_op_status pool_cpu_kind(const cg_kernel_args *a, int kind) {
    const cg_op_call *call = a->call;
    pool_job j = {.kind = kind, .dt = call->inputs[0].dtype, .x = a->in[0], .y = a->out[0]};
    if (pool_geom(call, kind, &j.g)) return CG_OP_ERROR;
    j.own_i = kind == POOL_LP ? 0 : (int)call->attrs[PL_OWN].i;
    j.p = kind == POOL_LP ? (float)call->attrs[PL_OWN].f : 0.0f;
    j.idx = call->n_outputs > 1 ? a->out[1] : NULL;
    const int64_t rows = call->inputs[0].dims[0] * call->inputs[0].dims[1] * j.g.out[0] * j.g.out[1];
    const int64_t work = j.g.out[2] * cg_conv_k_size(&j.g);
    cg_cpu_parallel_for((size_t)rows, (size_t)(work >= 8192 ? 1 : 8192 / (work + 1)), pool_rows, &j);
    return CG_OP_OK;
}

static cg_op_status max_cpu(const cg_kernel_args *a) { return pool_cpu_kind(a, POOL_MAX); }
static cg_op_status avg_cpu(const cg_kernel_args *a) { return pool_cpu_kind(a, POOL_AVG); }
static cg_op_status lp_cpu(const cg_kernel_args *a) { return pool_cpu_kind(a, POOL_LP); }

/* ---- OpenCL ---- */

static cg_op_status pool_cl_kind(const cg_kernel_args *a, int kind) {
    static const char name[] = "pool_direct";
    const cg_op_call *call = a->call;
    cg_conv_geom g;
    if (pool_geom(call, kind, &g)) return CG_OP_ERROR;
    const int64_t total = cg_desc_numel(&call->outputs[0]);
    if (total == 0) return CG_OP_OK;
    const int wide = total > INT32_MAX || cg_desc_numel(&call->inputs[0]) > INT32_MAX;
    const int dt = call->inputs[0].dtype, with_idx = call->n_outputs > 1;
    const double p = kind == POOL_LP ? call->attrs[PL_OWN].f : 0.0;
    char opt[96];
    snprintf(opt, sizeof opt, "-DPOOL=%d -DT=%s -DLP=%d%s", kind,
             dt == CG_I8   ? "char"
             : dt == CG_U8 ? "uchar"
                           : "float",
             p == 2.0   ? 2
             : p == 1.0 ? 1
                        : 0,
             with_idx ? " -DWITH_INDEX=1" : "");
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_pool, name, wide, 0, opt);
    if (!k) return CG_OP_ERROR;
    cl_mem x = (cl_mem)a->in[0], y = (cl_mem)a->out[0], idx = with_idx ? (cl_mem)a->out[1] : (cl_mem)a->out[0];
    cl_int4 pe = {{(cl_int)g.pe[0], (cl_int)g.pe[1], (cl_int)g.pe[2], 0}};
    cl_int own = kind == POOL_LP ? 0 : (cl_int)call->attrs[PL_OWN].i;
    cl_float fp = (cl_float)p;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(x),  CG_OPS_CL_ARG(y),   CG_OPS_CL_ARG(idx),
                                     CG_OPS_CL_ARG(pe), CG_OPS_CL_ARG(own), CG_OPS_CL_ARG(fp)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v) || cg_conv_cl_geom_args(a, k, name, 6, &g, total))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, name, total, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

static cg_op_status max_cl(const cg_kernel_args *a) { return pool_cl_kind(a, POOL_MAX); }
static cg_op_status avg_cl(const cg_kernel_args *a) { return pool_cl_kind(a, POOL_AVG); }
static cg_op_status lp_cl(const cg_kernel_args *a) { return pool_cl_kind(a, POOL_LP); }

/* ---- conformance ---- */

static const struct {
    int nsp;
    cg_op_dtype dt;
    int64_t n, c, sp[3];
    const char *attrs;
} pool_cases[] = {
    {1, CG_F32, 2, 3, {9}, "kernel: [3], strides: [2]"},
    {2, CG_F32, 1, 3, {7, 8}, "kernel: [3, 3], pads: [1, 1, 1, 1], strides: [2, 2]"},
    {2, CG_F32, 2, 2, {8, 7}, "kernel: [2, 3], strides: [2, 2], ceil_mode: 1"},
    {2, CG_F32, 1, 2, {9, 9}, "kernel: [3, 2], dilations: [2, 3], pads: [2, 0, 1, 2]"},
    {2, CG_F32, 1, 3, {6, 7}, "kernel: [3, 3], auto_pad: \"same_upper\", strides: [2, 2]"},
    {2, CG_F32, 1, 1, {5, 6}, "kernel: [2, 2], auto_pad: \"same_lower\""},
    {3, CG_F32, 1, 2, {5, 4, 6}, "kernel: [2, 2, 3], strides: [2, 1, 2], pads: [1, 0, 1, 0, 1, 1], ceil_mode: 1"},
    {2, CG_F32, 2, 16, {28, 28}, "kernel: [2, 2], strides: [2, 2]"},
    /* the row path (f32, no indices: even cases of max_pool's first half):
     * resnet's stem, a 1-D dilated window, stride 1 with a window longer
     * than the row's inner part */
    {2, CG_F32, 2, 4, {32, 31}, "kernel: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1]"},
    {1, CG_F32, 1, 2, {6}, "kernel: [2]"},
    {1, CG_F32, 1, 3, {40}, "kernel: [4], dilations: [2], pads: [3, 1]"},
    {1, CG_F32, 1, 1, {1}, "kernel: [1]"},
    {2, CG_F32, 1, 3, {12, 21}, "kernel: [3, 5], pads: [1, 2, 1, 2], ceil_mode: 1"},
    {2, CG_F32, 1, 2, {5, 4}, "kernel: [3, 5], pads: [2, 2, 2, 2]"},
};
#define N_POOL ((int32_t)(sizeof pool_cases / sizeof pool_cases[0]))

/* The cases with each op's own attribute added; max_pool also with the
 * indices and over int8 / uint8. */
static int32_t pool_case(int32_t index, cg_conform_case *c, int kind) {
    static char attrs[N_POOL * 2][200];
    /* bad shapes and attributes fail in infer, which tests/ops checks */
    if (index < 0 || index >= 2 * N_POOL) return 0;
    const int i = index % N_POOL, second = index >= N_POOL;
    const char *own = kind == POOL_MAX   ? (second ? ", storage_order: 1" : "")
                      : kind == POOL_AVG ? (second ? ", count_include_pad: 1" : "")
                                         : (second ? ", p: 3" : ", p: 2");
    snprintf(attrs[index], sizeof attrs[index], "%s%s", pool_cases[i].attrs, own);
    c->n_inputs = 1, c->attrs = attrs[index];
    c->n_outputs = kind == POOL_MAX && (second || i % 2) ? 2 : 1;
    c->inputs[0] = (cg_tensor_desc){pool_cases[i].dt, 2 + pool_cases[i].nsp, {pool_cases[i].n, pool_cases[i].c}};
    for (int a = 0; a < pool_cases[i].nsp; a++) c->inputs[0].dims[2 + a] = pool_cases[i].sp[a];
    c->lo[0] = -2, c->hi[0] = 2;
    if (kind == POOL_MAX && second && i % 3 == 1)
        c->inputs[0].dtype = i % 2 ? CG_I8 : CG_U8, c->lo[0] = 0, c->hi[0] = 100;
    return 1;
}

static int32_t max_conform(int32_t index, cg_conform_case *c) { return pool_case(index, c, POOL_MAX); }
static int32_t avg_conform(int32_t index, cg_conform_case *c) { return pool_case(index, c, POOL_AVG); }
static int32_t lp_conform(int32_t index, cg_conform_case *c) { return pool_case(index, c, POOL_LP); }

static const char *const pool_inputs[] = {"x", NULL};
static const cg_kernel_def max_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = max_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = max_cl),
};
static const cg_kernel_def avg_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = avg_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = avg_cl),
};
static const cg_kernel_def lp_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = lp_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = lp_cl),
};

#define POOL_SHAPE_DOC                                                                                      \
    " over windows of x [N, C, spatial...] (1 to 3 spatial axes): window o of an axis covers o * stride - " \
    "pads_begin + j * dilation, j < kernel; output [N, C, out...], out = floor((in + pads - dilation * "    \
    "(kernel - 1) - 1) / stride) + 1 (ceil_mode: ceil, where that window starts inside the input or the "   \
    "start pad; auto_pad same: ceil(in / stride)). Spatial dims may be symbolic."

const cg_op_def cg_op_max_pool =
    CG_OP(.name = "max_pool",
          .doc =
              "The largest value (the first in window order among equals; ONNX MaxPool, torch max_pool) of x f32, i8 "
              "or u8" POOL_SHAPE_DOC " Optional second output: i64 indices of the maxima into x flattened (ONNX's "
              "layout; storage_order 1: the spatial position column-major), -1 for a window outside x.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 2, .input_names = pool_inputs,
          CG_ATTRS(max_attrs), .infer = max_infer, CG_KERNELS(max_kernels), .conform_case = max_conform);
const cg_op_def cg_op_avg_pool =
    CG_OP(.name = "avg_pool",
          .doc = "The mean (ONNX AveragePool, torch avg_pool) of x f32" POOL_SHAPE_DOC
                 " The divisor counts the window's positions inside x, or with count_include_pad those inside the "
                 "padded input (not the positions ceil_mode adds past it).",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = pool_inputs,
          CG_ATTRS(avg_attrs), .infer = avg_infer, CG_KERNELS(avg_kernels), .conform_case = avg_conform);
const cg_op_def cg_op_lp_pool =
    CG_OP(.name = "lp_pool",
          .doc = "(sum |x|^p)^(1/p) (ONNX LpPool, torch lp_pool) of x f32" POOL_SHAPE_DOC " Pads count as zeros.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = pool_inputs,
          CG_ATTRS(lp_attrs), .infer = lp_infer, CG_KERNELS(lp_kernels), .conform_case = lp_conform);
