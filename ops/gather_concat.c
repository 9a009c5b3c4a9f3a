/* gather_concat: a beam's cache step in one copy. A decoder's
 * self-attention cache is reordered by the beam's parents and grown by the
 * step's row; as gather_rows then concat that copies every cache twice a
 * step, here once (and with the scheduler's carried outputs, nothing else
 * copies it). */
#include "ops_cl.h"

#include <stdint.h>
#include <string.h>

#include "cpu/cpu_pool.h"
#include "dtype.h"
#include "gather.cl.h"

enum { GC_AXIS };

static const cg_attr_def gather_concat_attrs[] = {
    CG_ATTR(.name = "axis", .type = CG_ATTR_INT, .required = 1,
            .doc = "axis to join along, 1 or later (negative counts from the end)"),
};

/* The checks concat and gather_rows make, for x [N, ...], index i32[M]
 * and y [M, ...]. */
static cg_op_status gather_concat_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *idx = &call->inputs[1], *y = &call->inputs[2];
    char sx[128], sy[128];
    if (!cg_dtype_valid((int)x->dtype)) return cg_op_fail(call, "input 0 has an invalid dtype");
    if (cg_expect_input(call, 1, CG_OP_I32, 1)) return CG_OP_ERROR;
    if (y->dtype != x->dtype)
        return cg_op_fail(call, "input 2 is %s but input 0 is %s; gather_concat needs one dtype",
                          cg_ops_dtype_name(y->dtype), cg_ops_dtype_name(x->dtype));
    cg_ops_format_dims(sx, sizeof sx, x);
    cg_ops_format_dims(sy, sizeof sy, y);
    if (x->ndim < 2 || y->ndim != x->ndim)
        return cg_op_fail(call, "inputs 0 %s and 2 %s must have the same number of dims, at least 2", sx, sy);
    const int axis = cg_norm_axis(call->attrs[GC_AXIS].i, x->ndim);
    if (axis < 1)
        return cg_op_fail(call, "axis %lld must name a dim of input 0 %s after the first",
                          (long long)call->attrs[GC_AXIS].i, sx);
    cg_tensor_desc o = *y;
    if (!cg_dim_compatible(idx->dims[0], y->dims[0]))
        return cg_op_fail(call, "input 2 %s has a different number of rows than input 1 (index) has ids", sy);
    o.dims[0] = cg_dim_unify(idx->dims[0], y->dims[0]);
    for (int d = 1; d < x->ndim; d++) {
        if (d == axis) o.dims[d] = cg_dim_add(x->dims[d], y->dims[d]);
        else if (!cg_dim_compatible(x->dims[d], y->dims[d]))
            return cg_op_fail(call, "input 2 %s is incompatible with input 0 %s at dim %d (axis %d)", sy, sx, d, axis);
        else o.dims[d] = cg_dim_unify(x->dims[d], y->dims[d]);
    }
    call->outputs[0] = o;
    return CG_OP_OK;
}

/* out [M, outer, cx + cy] (elements) from x [N, outer, cx] rows idx[] and
 * y [M, outer, cy]. */
typedef struct gc_geom {
    int64_t n, m, outer, cx, cy;
    size_t es;
} gc_geom;

static gc_geom gc_geometry(const cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *y = &call->inputs[2];
    const int axis = cg_norm_axis(call->attrs[GC_AXIS].i, x->ndim);
    gc_geom g = {x->dims[0], y->dims[0], 1, 1, 1, cg_dtype_size((cg_dtype)x->dtype)};
    for (int d = 1; d < axis; d++) g.outer *= x->dims[d];
    for (int d = axis; d < x->ndim; d++) {
        g.cx *= x->dims[d];
        g.cy *= y->dims[d];
    }
    return g;
}

typedef struct gc_job {
    const char *x, *y;
    const int32_t *idx;
    char *out;
    gc_geom g;
} gc_job;

/* Blocks begin .. end - 1 of the m * outer output blocks. */
static void gather_concat_run(void *p, size_t begin, size_t end) {
    const gc_job *j = p;
    const size_t bx = (size_t)j->g.cx * j->g.es, by = (size_t)j->g.cy * j->g.es;
    for (size_t b = begin; b < end; b++) {
        const size_t i = b / (size_t)j->g.outer, o = b % (size_t)j->g.outer;
        char *dst = j->out + b * (bx + by);
        memcpy(dst, j->x + ((size_t)j->idx[i] * (size_t)j->g.outer + o) * bx, bx);
        memcpy(dst + bx, j->y + b * by, by);
    }
}

static cg_op_status gather_concat_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const gc_geom g = gc_geometry(call);
    const int32_t *idx = a->in[1];
    if (cg_ops_check_rows(call, 1, "index", idx, g.m, g.n)) return CG_OP_ERROR;
    gc_job j = {a->in[0], a->in[2], idx, a->out[0], g};
    const size_t block = (size_t)(g.cx + g.cy) * g.es, blocks = (size_t)(g.m * g.outer);
    /* about 64 KiB per task: a batch's caches are megabytes a step */
    if (block && blocks) cg_cpu_parallel_for(blocks, block >= 65536 ? 1 : 65536 / block + 1, gather_concat_run, &j);
    return CG_OP_OK;
}

static cg_op_status gather_concat_cl(const cg_kernel_args *a) {
    static const char kn[] = "gather_concat";
    const gc_geom g = gc_geometry(a->call);
    const int64_t total = g.m * g.outer * (g.cx + g.cy);
    if (total == 0) return cg_ops_cl_check_range(a, 1, g.m, 0, g.n - 1); /* empty rows: ids still checked */
    const int64_t nx = g.n * g.outer * g.cx;
    const int wide = (nx > total ? nx : total) >= INT32_MAX;
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_gather, kn, wide, 0, cg_ops_cl_elem_type_option(g.es));
    if (!k) return CG_OP_ERROR;
    cl_mem x = (cl_mem)a->in[0], idx = (cl_mem)a->in[1], y = (cl_mem)a->in[2], dst = (cl_mem)a->out[0];
    const cg_ops_cl_arg_value mem[] = {CG_OPS_CL_ARG(x), CG_OPS_CL_ARG(idx), CG_OPS_CL_ARG(y), CG_OPS_CL_ARG(dst)};
    if (cg_ops_cl_args(a, k, kn, 0, CG_OPS_CL_N_ARGS(mem), mem) || cg_ops_cl_idx(a, k, kn, 4, wide, g.n) ||
        cg_ops_cl_idx(a, k, kn, 5, wide, g.outer) || cg_ops_cl_idx(a, k, kn, 6, wide, g.cx) ||
        cg_ops_cl_idx(a, k, kn, 7, wide, g.cy) || cg_ops_cl_idx(a, k, kn, 8, wide, total) ||
        cg_ops_cl_check_args(a, k, kn, 9))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, total, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* x [N, ...], y [M, ...], axis, with ids in [0, N); the last one's ids
 * past the rows, then negative (every device must refuse them). */
typedef struct gc_case {
    cg_op_dtype dt;
    int nd, axis;
    int64_t x[4], y[4];
} gc_case;

static const gc_case gc_cases[] = {
    {CG_OP_F32, 4, 1, {3, 5, 2, 4}, {6, 1, 2, 4}}, /* a beam's cache step: 3 rows to 6 hypotheses */
    {CG_OP_F32, 4, 1, {4, 0, 2, 3}, {4, 1, 2, 3}}, /* the first step: an empty cache */
    {CG_OP_F32, 3, 2, {2, 3, 5}, {5, 3, 2}},       /* along a later axis: outer blocks */
    {CG_OP_F32, 3, -1, {7, 2, 1}, {3, 2, 4}},      /* negative axis */
    {CG_OP_I32, 2, 1, {5, 17}, {0, 3}},            /* no rows */
    {CG_U8, 3, 1, {9, 3, 7}, {4, 2, 7}},
    {CG_F16, 3, 1, {2, 1, 5}, {3, 4, 5}},
    {CG_I64, 2, 1, {6, 3}, {6, 2}},
    {CG_OP_F32, 4, 1, {16, 33, 8, 16}, {64, 1, 8, 16}},
};

static int32_t gather_concat_conform(int32_t index, cg_conform_case *c) {
    const int32_t n = (int32_t)(sizeof gc_cases / sizeof gc_cases[0]);
    if (index < 0 || index >= n + 2) return 0;
    const gc_case *t = &gc_cases[index < n ? index : 0];
    c->n_inputs = 3;
    c->n_outputs = 1;
    for (int k = 0; k < 3; k++) {
        c->inputs[k].dtype = k == 1 ? CG_OP_I32 : t->dt;
        c->inputs[k].ndim = k == 1 ? 1 : t->nd;
        memcpy(c->inputs[k].dims, k == 0 ? t->x : t->y, sizeof(int64_t) * (size_t)t->nd);
        c->lo[k] = t->dt == CG_OP_F32 ? -2 : -1e300; /* clipped to the dtype */
        c->hi[k] = t->dt == CG_OP_F32 ? 2 : 1e300;
    }
    c->inputs[1].dims[0] = t->y[0];
    c->lo[1] = 0;
    c->hi[1] = (double)(t->x[0] - 1);
    c->attrs = t->axis == 1 ? "axis: 1" : t->axis == 2 ? "axis: 2" : "axis: -1";
    if (index == n) return cg_ops_error_case(c, 1, (double)t->x[0], (double)t->x[0] + 3);
    if (index == n + 1) return cg_ops_error_case(c, 1, -3, -1);
    return 1;
}

static const cg_kernel_def gather_concat_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = gather_concat_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = gather_concat_cl, .flags = CG_KERNEL_FLAG_CHECKS),
};
static const char *const gather_concat_inputs[] = {"x", "index", "y", NULL};

const cg_op_def cg_op_gather_concat =
    CG_OP(.name = "gather_concat",
          .doc = "concat(gather_rows(x, index), y) along axis in one copy: out[i] is x[index[i]] joined with y[i] "
                 "along axis (1 or later), for x [N, ...] and y [M, ...] of one dtype (any) whose other dims match "
                 "and an i32 index [M]. A beam's self-attention cache step: the rows the beam keeps, grown by the "
                 "step's keys. An index outside [0, N) is a run-time error on every device.",
          .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .input_names = gather_concat_inputs,
          CG_ATTRS(gather_concat_attrs), .infer = gather_concat_infer, CG_KERNELS(gather_concat_kernels),
          .conform_case = gather_concat_conform);
