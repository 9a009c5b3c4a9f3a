/* det: the determinant of each square matrix of x [..., M, M] (ONNX Det,
 * torch.linalg.det) by Gaussian elimination with partial pivoting (the
 * first largest |pivot|), in f32, one matrix per OpenCL work-item in the
 * same order of operations as the CPU kernel; the elimination works on a
 * copy in the workspace. */
#include "ops_cl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "det.cl.h"

static cg_op_status det_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    char sx[128];
    cg_ops_format_dims(sx, sizeof sx, x);
    if (x->dtype != CG_OP_F32) return cg_op_fail(call, "input 0 (x) must be f32, got %s", cg_ops_dtype_name(x->dtype));
    if (x->ndim < 2) return cg_op_fail(call, "x %s must be [..., M, M]", sx);
    const int64_t m = x->dims[x->ndim - 1], r = x->dims[x->ndim - 2];
    if (m >= 0 && r >= 0 && m != r) return cg_op_fail(call, "x %s: the matrices are not square", sx);
    call->outputs[0] = *x;
    call->outputs[0].ndim = x->ndim - 2;
    return CG_OP_OK;
}

/* The determinant of the m x m matrix a, which it overwrites. */
static float det_one(float *a, int64_t m) {
    float d = 1.0f;
    for (int64_t k = 0; k < m; k++) {
        int64_t p = k;
        for (int64_t i = k + 1; i < m; i++)
            if (fabsf(a[i * m + k]) > fabsf(a[p * m + k])) p = i;
        if (a[p * m + k] == 0.0f) return 0.0f;
        if (p != k) {
            for (int64_t j = k; j < m; j++) {
                const float t = a[k * m + j];
                a[k * m + j] = a[p * m + j], a[p * m + j] = t;
            }
            d = -d;
        }
        const float piv = a[k * m + k];
        d *= piv;
        for (int64_t i = k + 1; i < m; i++) {
            const float f = a[i * m + k] / piv;
            for (int64_t j = k + 1; j < m; j++) a[i * m + j] -= f * a[k * m + j];
        }
    }
    return d;
}

static size_t det_workspace(const cg_op_call *call) { return (size_t)cg_desc_numel(&call->inputs[0]) * sizeof(float); }

static cg_op_status det_cpu(const cg_kernel_args *a) {
    const cg_tensor_desc *x = &a->call->inputs[0];
    const int64_t m = x->dims[x->ndim - 1], n = cg_desc_numel(&a->call->outputs[0]);
    float *w = a->workspace;
    if (m * m * n != 0) memcpy(w, a->in[0], (size_t)(m * m * n) * sizeof *w);
    for (int64_t b = 0; b < n; b++) ((float *)a->out[0])[b] = det_one(w + b * m * m, m);
    return CG_OP_OK;
}

static cg_op_status det_cl(const cg_kernel_args *a) {
    static const char name[] = "det";
    const cg_tensor_desc *x = &a->call->inputs[0];
    const int64_t n = cg_desc_numel(&a->call->outputs[0]);
    if (n == 0) return CG_OP_OK;
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_det, name, cg_desc_numel(x) > INT32_MAX, 0, NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem src = (cl_mem)a->in[0], dst = (cl_mem)a->out[0], ws = (cl_mem)a->workspace;
    cl_long ln = n, m = x->dims[x->ndim - 1];
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(src), CG_OPS_CL_ARG(ws), CG_OPS_CL_ARG(dst), CG_OPS_CL_ARG(ln),
                                     CG_OPS_CL_ARG(m)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, 64, 0));
}

#define D(...) \
    { __VA_ARGS__ }
static const struct {
    int nd;
    int64_t d[4];
} det_cases[] = {{2, D(1, 1)}, {2, D(2, 2)},       {2, D(3, 3)},     {3, D(4, 3, 3)}, {3, D(0, 2, 2)},
                 {2, D(0, 0)}, {4, D(2, 3, 5, 5)}, {3, D(70, 8, 8)}, {2, D(16, 16)}};
#define N_DET ((int32_t)(sizeof det_cases / sizeof det_cases[0]))

static int32_t det_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= N_DET) return 0;
    cg_ops_case t = {1, {{CG_OP_F32, det_cases[i].nd, {0}, -2, 2}}, NULL};
    memcpy(t.in[0].d, det_cases[i].d, sizeof t.in[0].d);
    cg_ops_fill_case(&t, 1, c);
    c->rtol = 1e-3; /* 16 x 16: products of 16 rounded pivots */
    return 1;
}

static const char *const det_inputs[] = {"x", NULL};
static const cg_kernel_def det_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = det_cpu, .workspace = det_workspace),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = det_cl, .workspace = det_workspace),
};
const cg_op_def cg_op_det =
    CG_OP(.name = "det",
          .doc = "The determinant of each square matrix of an f32 x [..., M, M] (ONNX Det): output [...]. Gaussian "
                 "elimination with partial pivoting in f32 (the 0 x 0 matrix has determinant 1).",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = det_inputs,
          .infer = det_infer, CG_KERNELS(det_kernels), .conform_case = det_conform);
