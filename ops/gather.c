/* Row lookups: embedding (ids into a table) and gather_rows (beam reordering). */
#include "ops_cl.h"

#include <stdint.h>
#include <string.h>

#include "cpu/cpu_pool.h"
#include "dtype.h"
#include "gather.cl.h"

/* ---- OpenCL: one gather kernel for both ops ---- */

/* dst[r] = src[idx[r]] over `rows` rows of `row` 4-byte elements, src
 * having n_src rows; out-of-range indices give zero rows and are recorded
 * in the node's check words. */
static cg_op_status gather_cl(const cg_kernel_args *a, int64_t n_src, int64_t row, int64_t rows, size_t es) {
    static const char kn[] = "gather_rows4";
    int64_t total = rows * row, biggest = n_src * row > total ? n_src * row : total;
    if (total == 0) return cg_ops_cl_check_range(a, 1, rows, 0, n_src - 1); /* empty rows: ids still checked */
    const int wide = biggest >= INT32_MAX;
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_gather, kn, wide, 0, cg_ops_cl_elem_type_option(es));
    if (!k) return CG_OP_ERROR;
    cl_mem src = (cl_mem)a->in[0], idx = (cl_mem)a->in[1], dst = (cl_mem)a->out[0];
    const cg_ops_cl_arg_value mem[] = {CG_OPS_CL_ARG(src), CG_OPS_CL_ARG(idx), CG_OPS_CL_ARG(dst)};
    if (cg_ops_cl_args(a, k, kn, 0, CG_OPS_CL_N_ARGS(mem), mem) || cg_ops_cl_idx(a, k, kn, 3, wide, n_src) ||
        cg_ops_cl_idx(a, k, kn, 4, wide, row) || cg_ops_cl_idx(a, k, kn, 5, wide, total) ||
        cg_ops_cl_check_args(a, k, kn, 6))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, total, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* Conformance cases: x (f32 or i32) of shape d0 and an i32 index of shape
 * d1 with values in [0, n_valid - 1]. */
typedef struct gather_case {
    cg_op_dtype dt;
    int nd0, nd1;
    int64_t d0[CG_MAX_DIMS], d1[CG_MAX_DIMS];
} gather_case;

static int32_t gather_fill(const gather_case *t, int64_t n_valid, cg_conform_case *c) {
    c->n_inputs = 2;
    c->n_outputs = 1;
    c->attrs = NULL;
    c->inputs[0].dtype = t->dt;
    c->inputs[0].ndim = t->nd0;
    memcpy(c->inputs[0].dims, t->d0, sizeof t->d0);
    c->inputs[1].dtype = CG_OP_I32;
    c->inputs[1].ndim = t->nd1;
    memcpy(c->inputs[1].dims, t->d1, sizeof t->d1);
    c->lo[0] = t->dt == CG_OP_F32 ? -2 : -1e300; /* clipped to the dtype */
    c->hi[0] = t->dt == CG_OP_F32 ? 2 : 1e300;
    c->lo[1] = 0;
    c->hi[1] = (double)(n_valid - 1);
    return 1;
}

/* ---- embedding(weight [V, E] f32, ids i32 or i64 [...]) -> f32[..., E] ---- */

enum { EMB_WRAP };

static cg_op_status embedding_infer(cg_op_call *call) {
    const cg_tensor_desc *w = &call->inputs[0], *ids = &call->inputs[1];
    if (call->n_inputs == 3) { /* an int8 table and its row scales */
        if (cg_expect_input(call, 0, CG_I8, 2) || cg_expect_input(call, 2, CG_OP_F32, 1)) return CG_OP_ERROR;
        if (!cg_dim_compatible(call->inputs[2].dims[0], w->dims[0]))
            return cg_op_fail(call, "input 2 (scale) must hold one scale per row of input 0 (weight)");
    } else if (cg_expect_input(call, 0, CG_OP_F32, 2)) {
        return CG_OP_ERROR;
    }
    if (ids->dtype != CG_OP_I32 && ids->dtype != CG_I64) return cg_op_fail(call, "input 1 (ids) must be i32 or i64");
    if (ids->ndim + 1 > CG_MAX_DIMS) return cg_op_fail(call, "ids have too many dims");
    cg_tensor_desc *o = &call->outputs[0];
    o->dtype = CG_OP_F32;
    o->ndim = ids->ndim + 1;
    memcpy(o->dims, ids->dims, sizeof(int64_t) * (size_t)ids->ndim);
    o->dims[ids->ndim] = w->dims[1];
    return CG_OP_OK;
}

static cg_op_status embedding_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const int32_t *ids = a->in[1];
    const int64_t *ids64 = a->in[1];
    const int wide = call->inputs[1].dtype == CG_I64, wrap = (int)call->attrs[EMB_WRAP].i != 0;
    const float *scale = call->n_inputs == 3 ? a->in[2] : NULL;
    float *out = a->out[0];
    int64_t v = call->inputs[0].dims[0], e = call->inputs[0].dims[1];
    int64_t n = cg_desc_numel(&call->inputs[1]);
    for (int64_t i = 0; i < n; i++) {
        const int64_t id = wide ? ids64[i] : ids[i], k = wrap && id < 0 ? id + v : id;
        if (k < 0 || k >= v) return cg_op_fail_range(call, 1, "ids", id, i, wrap ? -v : 0, v - 1);
        if (!scale) {
            memcpy(out + i * e, (const float *)a->in[0] + k * e, sizeof(float) * (size_t)e);
            continue;
        }
        /* the product the loader's dequantization makes (safetensors.c) */
        const int8_t *q = (const int8_t *)a->in[0] + k * e;
        for (int64_t c = 0; c < e; c++) out[i * e + c] = scale[k] * (float)q[c];
    }
    return CG_OP_OK;
}

/* i64 ids, or ids that may count from the end: gather_rows_any (the plain
 * kernel is kept for the i32 ids the native families give); an int8 table
 * with its row scales: embedding_q8, each row widened by its scale. */
static cg_op_status embedding_any_cl(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const int q8 = call->n_inputs == 3;
    const char *kn = q8 ? "embedding_q8" : "gather_rows_any";
    const int64_t n_src = call->inputs[0].dims[0], row = call->inputs[0].dims[1];
    const int64_t rows = cg_desc_numel(&call->inputs[1]), total = rows * row;
    if (total == 0) return CG_OP_OK;
    const int wide = (n_src * row > total ? n_src * row : total) >= INT32_MAX;
    const char *opt = call->inputs[1].dtype == CG_I64 ? "-DT=uint -DID=long" : "-DT=uint -DID=int";
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_gather, kn, wide, 0, opt);
    if (!k) return CG_OP_ERROR;
    cl_mem src = (cl_mem)a->in[0], idx = (cl_mem)a->in[1], sc = q8 ? (cl_mem)a->in[2] : NULL, dst = (cl_mem)a->out[0];
    const cl_int wrap = (cl_int)(call->attrs[EMB_WRAP].i != 0);
    const cg_ops_cl_arg_value m3[] = {CG_OPS_CL_ARG(src), CG_OPS_CL_ARG(idx), CG_OPS_CL_ARG(dst)};
    const cg_ops_cl_arg_value m4[] = {CG_OPS_CL_ARG(src), CG_OPS_CL_ARG(idx), CG_OPS_CL_ARG(sc), CG_OPS_CL_ARG(dst)};
    const cg_ops_cl_arg_value w[] = {CG_OPS_CL_ARG(wrap)};
    const cl_uint at = q8 ? 4 : 3; /* the scales come before dst */
    if (cg_ops_cl_args(a, k, kn, 0, at, q8 ? m4 : m3) || cg_ops_cl_idx(a, k, kn, at, wide, n_src) ||
        cg_ops_cl_idx(a, k, kn, at + 1, wide, row) || cg_ops_cl_idx(a, k, kn, at + 2, wide, total) ||
        cg_ops_cl_args(a, k, kn, at + 3, CG_OPS_CL_N_ARGS(w), w) || cg_ops_cl_check_args(a, k, kn, at + 4))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, total, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

static cg_op_status embedding_cl(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    if (call->n_inputs == 3 || call->inputs[1].dtype != CG_OP_I32 || call->attrs[EMB_WRAP].i)
        return embedding_any_cl(a);
    return gather_cl(a, call->inputs[0].dims[0], call->inputs[0].dims[1], cg_desc_numel(&call->inputs[1]), 4);
}

/* weight [V, E], ids of any shape in [0, V). */
static const gather_case embedding_cases[] = {
    {CG_OP_F32, 2, 1, {1, 1}, {1}},     {CG_OP_F32, 2, 0, {3, 3}, {0}}, /* a scalar id */
    {CG_OP_F32, 2, 1, {3, 3}, {3}},     {CG_OP_F32, 2, 2, {17, 5}, {2, 3}},   {CG_OP_F32, 2, 3, {5, 17}, {4, 3, 2}},
    {CG_OP_F32, 2, 1, {257, 33}, {17}}, {CG_OP_F32, 2, 1, {1000, 64}, {257}}, {CG_OP_F32, 2, 2, {50, 1000}, {3, 17}},
};

/* Case `index` of cases[0..n), then two error cases on cases[err]: indices
 * past the rows, then negative ones. */
static int32_t gather_conform(const gather_case *cases, int32_t n, int32_t err, int32_t index, cg_conform_case *c) {
    if (index >= n && index < n + 2) {
        const gather_case *t = &cases[err];
        gather_fill(t, t->d0[0], c);
        return index == n ? cg_ops_error_case(c, 1, (double)t->d0[0], (double)t->d0[0] + 3)
                          : cg_ops_error_case(c, 1, -3, -1);
    }
    if (index < 0 || index >= n) return 0;
    return gather_fill(&cases[index], cases[index].d0[0], c);
}

/* The int8 table form of a case: weight i8 [V, E] and scale f32 [V]. */
static void embedding_q8_case(cg_conform_case *c) {
    c->inputs[0].dtype = CG_I8;
    c->lo[0] = -127;
    c->hi[0] = 127;
    c->n_inputs = 3;
    c->inputs[2].dtype = CG_OP_F32;
    c->inputs[2].ndim = 1;
    c->inputs[2].dims[0] = c->inputs[0].dims[0];
    c->lo[2] = 1e-3;
    c->hi[2] = 0.05;
}

/* The cases with i32 ids, then again with i64 and with i32 ids counting
 * from the end (wrap: ids in [-V, V)), each form with its error cases;
 * then all of them again with an int8 table. */
static int32_t embedding_conform(int32_t index, cg_conform_case *c) {
    const int32_t n = (int32_t)(sizeof embedding_cases / sizeof embedding_cases[0]), forms = 3 * (n + 2);
    if (index >= 2 * forms) return 0;
    if (index >= forms) {
        if (!embedding_conform(index - forms, c)) return 0;
        embedding_q8_case(c);
        return 1;
    }
    const int32_t form = index / (n + 2), at = index % (n + 2);
    if (!gather_conform(embedding_cases, n, 3, at, c)) return 0;
    if (form == 0) return 1;
    c->inputs[1].dtype = form == 1 ? CG_I64 : CG_OP_I32;
    c->attrs = "wrap: 1";
    if (at < n) c->lo[1] = -(double)c->inputs[0].dims[0];
    else if (at == n + 1) c->lo[1] = -(double)c->inputs[0].dims[0] - 3, c->hi[1] = -(double)c->inputs[0].dims[0] - 1;
    return 1;
}

static const cg_kernel_def embedding_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = embedding_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = embedding_cl, .flags = CG_KERNEL_FLAG_CHECKS),
};
static const char *const embedding_inputs[] = {"weight", "ids", "scale", NULL};
static const cg_attr_def embedding_attrs[] = {
    CG_ATTR(.name = "wrap", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "1: an id in [-V, 0) counts from the end, as ONNX Gather's indices do"),
};

const cg_op_def cg_op_embedding =
    CG_OP(.name = "embedding",
          .doc = "Looks up rows of weight [V, E] for i32 or i64 ids of any shape; "
                 "output [..., E]. An id outside [0, V) ([-V, V) with wrap) is a run-time error on every device. "
                 "An int8 weight takes f32 scale [V] as input 2: row k reads as scale[k] * weight[k] (a table "
                 "`clgraph quantize` narrowed, a quarter of the f32 table's memory).",
          .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .input_names = embedding_inputs,
          CG_ATTRS(embedding_attrs), .infer = embedding_infer, CG_KERNELS(embedding_kernels),
          .conform_case = embedding_conform);

/* ---- gather_rows(x [N, ...], idx i32[M]) -> [M, ...] ---- */

static cg_op_status gather_rows_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *idx = &call->inputs[1];
    if (x->ndim < 1) return cg_op_fail(call, "input 0 must have at least 1 dim");
    if (!cg_dtype_valid((int)x->dtype)) return cg_op_fail(call, "input 0 has an invalid dtype");
    if (cg_expect_input(call, 1, CG_OP_I32, 1)) return CG_OP_ERROR;
    cg_tensor_desc *o = &call->outputs[0];
    *o = *x;
    o->dims[0] = idx->dims[0];
    return CG_OP_OK;
}

/* Rows copied per task: about 64 KiB (a decoder's cache rows are tens of
 * KiB; a beam's reordering of them is worth both cores). */
static size_t copy_grain(size_t row) { return row >= 65536 ? 1 : 65536 / (row + 1) + 1; }

typedef struct gather_job {
    const char *src;
    const int32_t *idx;
    char *dst;
    size_t row;
} gather_job;

static void gather_rows_run(void *p, size_t begin, size_t end) {
    const gather_job *j = p;
    for (size_t i = begin; i < end; i++) memcpy(j->dst + i * j->row, j->src + (size_t)j->idx[i] * j->row, j->row);
}

static cg_op_status gather_rows_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0];
    const char *src = a->in[0];
    const int32_t *idx = a->in[1];
    char *dst = a->out[0];
    int64_t n = x->dims[0], m = call->inputs[1].dims[0];
    size_t row = cg_dtype_size((cg_dtype)x->dtype);
    for (int i = 1; i < x->ndim; i++) row *= (size_t)x->dims[i];
    if (cg_ops_check_rows(call, 1, "index", idx, m, n)) return CG_OP_ERROR;
    gather_job j = {src, idx, dst, row};
    cg_cpu_parallel_for((size_t)m, copy_grain(row), gather_rows_run, &j);
    return CG_OP_OK;
}

static cg_op_status gather_rows_cl(const cg_kernel_args *a) {
    const cg_tensor_desc *x = &a->call->inputs[0];
    int64_t row = 1;
    for (int i = 1; i < x->ndim; i++) row *= x->dims[i];
    return gather_cl(a, x->dims[0], row, a->call->inputs[1].dims[0], cg_dtype_size((cg_dtype)x->dtype));
}

/* x [N, ...] of every element size, index [M] in [0, N). */
static const gather_case gather_rows_cases[] = {
    {CG_I64, 2, 1, {17, 3}, {5}},         {CG_U8, 2, 1, {33, 7}, {17}},         {CG_F16, 3, 1, {5, 2, 3}, {4}},
    {CG_OP_F32, 1, 1, {1}, {1}},          {CG_OP_F32, 2, 1, {3, 3}, {3}},       {CG_OP_I32, 1, 1, {17}, {3}},
    {CG_OP_I32, 3, 1, {17, 2, 3}, {5}},   {CG_OP_F32, 2, 1, {4, 17}, {17}}, /* repeated rows */
    {CG_OP_F32, 4, 1, {3, 2, 1, 5}, {1}}, {CG_OP_F32, 2, 1, {1000, 17}, {257}}, {CG_OP_I32, 2, 1, {20, 1000}, {33}},
    {CG_U16, 2, 1, {9, 5}, {12}},         {CG_U64, 2, 1, {7, 3}, {4}},
};

static int32_t gather_rows_conform(int32_t index, cg_conform_case *c) {
    return gather_conform(gather_rows_cases, (int32_t)(sizeof gather_rows_cases / sizeof gather_rows_cases[0]), 7,
                          index, c);
}

static const cg_kernel_def gather_rows_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = gather_rows_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = gather_rows_cl, .flags = CG_KERNEL_FLAG_CHECKS),
};
static const char *const gather_rows_inputs[] = {"x", "index", NULL};

const cg_op_def cg_op_gather_rows =
    CG_OP(.name = "gather_rows",
          .doc = "Selects rows of x along dim 0 by an i32 index vector (beam "
                 "reordering): out[i] = x[index[i]]. x of any dtype. An "
                 "index outside [0, N) is a run-time error on every device.",
          .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .input_names = gather_rows_inputs,
          .infer = gather_rows_infer, CG_KERNELS(gather_rows_kernels), .conform_case = gather_rows_conform);
