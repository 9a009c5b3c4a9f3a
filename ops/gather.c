/* Row lookups: embedding (ids into a table) and gather_rows (beam reordering). */
#include "ops_common.h"

#include <string.h>

/* ---- embedding(weight [V, E] f32, ids i32[...]) -> f32[..., E] ---- */

static cg_op_status embedding_infer(cg_op_call *call) {
    const cg_tensor_desc *w = &call->inputs[0], *ids = &call->inputs[1];
    if (cg_expect_input(call, 0, CG_OP_F32, 2)) return CG_OP_ERROR;
    if (ids->dtype != CG_OP_I32) return cg_op_fail(call, "input 1 (ids) must be i32");
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
    const float *w = a->in[0];
    const int32_t *ids = a->in[1];
    float *out = a->out[0];
    int64_t v = call->inputs[0].dims[0], e = call->inputs[0].dims[1];
    int64_t n = cg_desc_numel(&call->inputs[1]);
    for (int64_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= v)
            return cg_op_fail(call, "id %d at position %lld is outside the table of %lld rows",
                              id, (long long)i, (long long)v);
        memcpy(out + i * e, w + (int64_t)id * e, sizeof(float) * (size_t)e);
    }
    return CG_OP_OK;
}

static const cg_kernel_def embedding_kernels[] = {
    {sizeof(cg_kernel_def), CG_BACKEND_CPU, NULL, embedding_cpu},
};
static const char *const embedding_inputs[] = {"weight", "ids", NULL};

const cg_op_def cg_op_embedding = {
    .struct_size = sizeof(cg_op_def),
    .name = "embedding",
    .doc = "Looks up rows of weight [V, E] for integer ids of any shape; "
           "output [..., E]. An id outside [0, V) is a run-time error.",
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .input_names = embedding_inputs,
    .infer = embedding_infer,
    .kernels = embedding_kernels, .n_kernels = 1,
};

/* ---- gather_rows(x [N, ...], idx i32[M]) -> [M, ...] ---- */

static cg_op_status gather_rows_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0], *idx = &call->inputs[1];
    if (x->ndim < 1) return cg_op_fail(call, "input 0 must have at least 1 dim");
    if (cg_expect_input(call, 1, CG_OP_I32, 1)) return CG_OP_ERROR;
    cg_tensor_desc *o = &call->outputs[0];
    *o = *x;
    o->dims[0] = idx->dims[0];
    return CG_OP_OK;
}

static cg_op_status gather_rows_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0];
    const char *src = a->in[0];
    const int32_t *idx = a->in[1];
    char *dst = a->out[0];
    int64_t n = x->dims[0], m = call->inputs[1].dims[0];
    size_t row = 4;
    for (int i = 1; i < x->ndim; i++) row *= (size_t)x->dims[i];
    for (int64_t i = 0; i < m; i++) {
        if (idx[i] < 0 || idx[i] >= n)
            return cg_op_fail(call, "index %d at position %lld is outside [0, %lld)",
                              idx[i], (long long)i, (long long)n);
        memcpy(dst + (size_t)i * row, src + (size_t)idx[i] * row, row);
    }
    return CG_OP_OK;
}

static const cg_kernel_def gather_rows_kernels[] = {
    {sizeof(cg_kernel_def), CG_BACKEND_CPU, NULL, gather_rows_cpu},
};
static const char *const gather_rows_inputs[] = {"x", "index", NULL};

const cg_op_def cg_op_gather_rows = {
    .struct_size = sizeof(cg_op_def),
    .name = "gather_rows",
    .doc = "Selects rows of x along dim 0 by an i32 index vector (beam "
           "reordering): out[i] = x[index[i]]. Any dtype.",
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .input_names = gather_rows_inputs,
    .infer = gather_rows_infer,
    .kernels = gather_rows_kernels, .n_kernels = 1,
};
