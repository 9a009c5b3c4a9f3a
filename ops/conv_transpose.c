/* conv_transpose: the transposed (fractionally strided) convolution (ONNX
 * ConvTranspose, torch.nn.ConvTranspose1d/2d/3d) of x [N, C, spatial...]
 * with w [C, M / group, kernel...] and an optional bias [M]. CPU: for a
 * block of input positions one GEMM (the group's w^T times x) gives every
 * tap's contribution (columns), which col2im adds into the output, each
 * output channel by one thread in a fixed order. OpenCL: one work-item per
 * output element gathering the taps that reach it (ops/cl/conv.cl). */
#include "conv_geom.h"
#include "ops_cl.h"

#include "cpu/cpu_blas.h"
#include "cpu/cpu_pool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conv.cl.h"

enum { CT_STRIDES, CT_DILATIONS, CT_PADS, CT_OUTPUT_PADDING, CT_AUTO_PAD, CT_GROUP };

static const cg_attr_def ct_attrs[] = {
    CG_CONV_ATTR_STRIDES,
    CG_CONV_ATTR_DILATIONS,
    CG_ATTR(.name = "pads", .type = CG_ATTR_INTS,
            .doc = "positions removed from the start of each spatial axis, then from the end (ONNX's order); a "
                   "negative pad adds positions"),
    CG_ATTR(.name = "output_padding", .type = CG_ATTR_INTS,
            .doc = "positions added at the end of each spatial axis (less than its stride or dilation)"),
    CG_ATTR(.name = "auto_pad", .type = CG_ATTR_STRING, .default_string = "",
            .doc = "\"\" (the pads given), \"same_upper\" / \"same_lower\" (output in * stride, the odd pad at the "
                   "end / start), \"valid\" (no pads)"),
    CG_ATTR(.name = "group", .type = CG_ATTR_INT, .default_int = 1,
            .doc = "channel groups: C and M split into `group` parts, part g of the output from part g of x"),
};
static const cg_conv_attr_ix ct_ix = {CT_STRIDES, CT_DILATIONS, CT_PADS, CT_AUTO_PAD, -1, CT_OUTPUT_PADDING};

typedef struct ct_dims {
    cg_conv_geom g;
    int64_t n, c, m, group, cg, mg;
} ct_dims;

static cg_op_status ct_dims_of(const cg_op_call *call, ct_dims *cd) {
    const cg_tensor_desc *x = &call->inputs[0], *w = &call->inputs[1];
    char sx[128], sw[128];
    int nsp;
    if (cg_conv_check_x(call, NULL, &nsp)) return CG_OP_ERROR;
    cg_ops_format_dims(sx, sizeof sx, x);
    cg_ops_format_dims(sw, sizeof sw, w);
    if (w->dtype != CG_F32 || w->ndim != x->ndim)
        return cg_op_fail(call, "input 1 (w) %s %s must be f32 [C, M / group, kernel...] of x %s's rank", sw,
                          cg_ops_dtype_name(w->dtype), sx);
    cd->n = x->dims[0], cd->c = x->dims[1], cd->mg = w->dims[1];
    cd->group = call->attrs[CT_GROUP].i;
    if (cd->group < 1) return cg_op_fail(call, "attribute group must be positive, got %lld", (long long)cd->group);
    if (!cg_dim_compatible(w->dims[0], cd->c))
        return cg_op_fail(call, "w %s must have x %s's %lld channels first", sw, sx, (long long)cd->c);
    if (cd->c >= 0 && cd->c % cd->group)
        return cg_op_fail(call, "x %s: its %lld channels do not split into %lld groups", sx, (long long)cd->c,
                          (long long)cd->group);
    cd->cg = cd->c >= 0 ? cd->c / cd->group : CG_DIM_UNKNOWN;
    cd->m = cd->mg >= 0 ? cd->mg * cd->group : CG_DIM_UNKNOWN;
    return cg_conv_geom_make(call, &ct_ix, nsp, x->dims + 2, w->dims + 2, 1, &cd->g);
}

static cg_op_status ct_infer(cg_op_call *call) {
    ct_dims cd;
    if (ct_dims_of(call, &cd)) return CG_OP_ERROR;
    return cg_conv_output(call, cd.n, cd.m, &cd.g, "group * w's second dim");
}

/* ---- CPU ---- */

static size_t ct_workspace(const cg_op_call *call) {
    ct_dims cd;
    if (ct_dims_of(call, &cd)) return 0;
    const int64_t rows = cd.mg * cg_conv_k_size(&cd.g);
    return (size_t)(rows * cg_conv_block(rows, cg_conv_in_size(&cd.g))) * sizeof(float);
}

/* col2im of one block: cols [mg * K, cols] for input positions [p0, p0 +
 * cols) added into the output planes y of the group, channels [m0, m1). */
typedef struct ct_job {
    const ct_dims *cd;
    const float *cols;
    float *y;
    int64_t p0, ncols;
} ct_job;

static void col2im_run(void *ctx, size_t m0, size_t m1) {
    const ct_job *j = ctx;
    const cg_conv_geom *g = &j->cd->g;
    const int64_t kn = cg_conv_k_size(g), out = cg_conv_out_size(g);
    for (size_t m = m0; m < m1; m++) {
        float *y = j->y + (int64_t)m * out;
        for (int64_t kk = 0; kk < kn; kk++) {
            const int64_t k2 = kk % g->k[2], k1 = kk / g->k[2] % g->k[1], k0 = kk / g->k[2] / g->k[1];
            const float *col = j->cols + ((int64_t)m * kn + kk) * j->ncols;
            for (int64_t c = 0; c < j->ncols; c++) {
                const int64_t p = j->p0 + c;
                const int64_t i2 = p % g->in[2], i1 = p / g->in[2] % g->in[1], i0 = p / g->in[2] / g->in[1];
                const int64_t o0 = i0 * g->s[0] - g->pb[0] + k0 * g->d[0];
                const int64_t o1 = i1 * g->s[1] - g->pb[1] + k1 * g->d[1];
                const int64_t o2 = i2 * g->s[2] - g->pb[2] + k2 * g->d[2];
                if (o0 >= 0 && o0 < g->out[0] && o1 >= 0 && o1 < g->out[1] && o2 >= 0 && o2 < g->out[2])
                    y[(o0 * g->out[1] + o1) * g->out[2] + o2] += col[c];
            }
        }
    }
}

static cg_op_status ct_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    ct_dims cd;
    if (ct_dims_of(call, &cd)) return CG_OP_ERROR;
    const int64_t in = cg_conv_in_size(&cd.g), out = cg_conv_out_size(&cd.g), kn = cg_conv_k_size(&cd.g);
    const int64_t rows = cd.mg * kn, block = cg_conv_block(rows, in);
    const float *x = a->in[0], *w = a->in[1], *bias = call->n_inputs > 2 ? a->in[2] : NULL;
    float *y = a->out[0];
    for (int64_t i = 0; i < cd.n * cd.m; i++)
        for (int64_t q = 0; q < out; q++) y[i * out + q] = bias ? bias[i % cd.m] : 0.0f;
    ct_job j = {&cd, a->workspace, NULL, 0, 0};
    for (int64_t n = 0; n < cd.n; n++)
        for (int64_t gi = 0; gi < cd.group; gi++) {
            const float *xg = x + (n * cd.c + gi * cd.cg) * in, *wg = w + gi * cd.cg * rows;
            j.y = y + (n * cd.m + gi * cd.mg) * out;
            for (int64_t p0 = 0; p0 < in; p0 += block) {
                j.p0 = p0, j.ncols = in - p0 < block ? in - p0 : block;
                cg_cpu_sgemm(1, 0, rows, j.ncols, cd.cg, 1.0f, wg, rows, xg + p0, in, 0.0f, a->workspace, j.ncols);
                cg_cpu_parallel_for((size_t)cd.mg, 1, col2im_run, &j);
            }
        }
    return CG_OP_OK;
}

/* ---- OpenCL ---- */

static cg_op_status ct_cl(const cg_kernel_args *a) {
    static const char name[] = "conv_transpose_direct";
    const cg_op_call *call = a->call;
    ct_dims cd;
    if (ct_dims_of(call, &cd)) return CG_OP_ERROR;
    const int64_t total = cg_desc_numel(&call->outputs[0]);
    if (total == 0) return CG_OP_OK;
    const int wide = total > INT32_MAX || cg_desc_numel(&call->inputs[0]) > INT32_MAX;
    const int has_b = call->n_inputs > 2;
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_conv, name, wide, 0, has_b ? "-DHAS_BIAS=1" : NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem x = (cl_mem)a->in[0], w = (cl_mem)a->in[1], b = has_b ? (cl_mem)a->in[2] : (cl_mem)a->in[1];
    cl_mem y = (cl_mem)a->out[0];
    cl_int c = (cl_int)cd.c, m = (cl_int)cd.m, cg = (cl_int)cd.cg, mg = (cl_int)cd.mg;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(x), CG_OPS_CL_ARG(w), CG_OPS_CL_ARG(b),  CG_OPS_CL_ARG(y),
                                     CG_OPS_CL_ARG(c), CG_OPS_CL_ARG(m), CG_OPS_CL_ARG(cg), CG_OPS_CL_ARG(mg)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v) || cg_conv_cl_geom_args(a, k, name, 8, &cd.g, total))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, name, total, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* ---- conformance ---- */

static const struct {
    int nsp;
    int64_t n, c, mg, sp[3], k[3], group;
    int bias;
    const char *attrs;
} ct_cases[] = {
    {1, 2, 3, 2, {5}, {3}, 1, 1, NULL},
    {1, 1, 4, 3, {6}, {3}, 2, 0, "strides: [3], pads: [1, 2], output_padding: [1], group: 2"},
    {2, 1, 3, 2, {4, 5}, {3, 3}, 1, 1, "strides: [2, 2], pads: [1, 1, 1, 1], output_padding: [1, 1]"},
    {2, 2, 4, 1, {3, 4}, {2, 3}, 4, 1, "strides: [2, 1], dilations: [2, 2], group: 4"}, /* depthwise */
    {2, 1, 2, 3, {4, 4}, {3, 3}, 1, 0, "auto_pad: \"same_upper\", strides: [2, 2]"},
    {2, 1, 2, 3, {3, 3}, {3, 3}, 1, 1, "pads: [0, 0, -1, -2], strides: [3, 2]"}, /* output_shape past */
    {3, 1, 2, 2, {3, 4, 3}, {2, 3, 2}, 1, 1, "strides: [2, 1, 2], pads: [0, 1, 1, 1, 0, 0]"},
    {2, 1, 32, 16, {12, 12}, {4, 4}, 1, 1, "strides: [2, 2], pads: [1, 1, 1, 1]"},
};
#define N_CT ((int32_t)(sizeof ct_cases / sizeof ct_cases[0]))

static int32_t ct_conform(int32_t index, cg_conform_case *c) {
    /* bad shapes and attributes fail in infer, which tests/ops checks */
    if (index < 0 || index >= N_CT) return 0;
    const int i = index, nsp = ct_cases[i].nsp;
    c->n_inputs = 2 + ct_cases[i].bias, c->n_outputs = 1, c->attrs = ct_cases[i].attrs;
    c->inputs[0] = (cg_tensor_desc){CG_F32, 2 + nsp, {ct_cases[i].n, ct_cases[i].c}};
    c->inputs[1] = (cg_tensor_desc){CG_F32, 2 + nsp, {ct_cases[i].c, ct_cases[i].mg}};
    for (int a = 0; a < nsp; a++)
        c->inputs[0].dims[2 + a] = ct_cases[i].sp[a], c->inputs[1].dims[2 + a] = ct_cases[i].k[a];
    c->inputs[2] = (cg_tensor_desc){CG_F32, 1, {ct_cases[i].mg * ct_cases[i].group}};
    for (int k = 0; k < 3; k++) c->lo[k] = -1, c->hi[k] = 1;
    return 1;
}

static const char *const ct_inputs[] = {"x", "w", "bias", NULL};
static const cg_kernel_def ct_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = ct_cpu, .workspace = ct_workspace),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = ct_cl),
};
const cg_op_def cg_op_conv_transpose =
    CG_OP(.name = "conv_transpose",
          .doc =
              "The transposed convolution (ONNX ConvTranspose, torch.nn.ConvTranspose1d/2d/3d): each x[n, c, i] adds "
              "x * w[c, m % (M / group), k] to y[n, m, i * strides - pads_begin + k * dilations] for the m of c's "
              "group, plus bias[m]: x f32 [N, C, spatial...] with 1 to 3 spatial axes, w f32 [C, M / group, "
              "kernel...], bias f32 [M] optional. Output [N, M, out...], out = stride * (in - 1) + output_padding + "
              "dilation * (kernel - 1) + 1 - pads (auto_pad same: in * stride). Spatial dims may be symbolic.",
          .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .input_names = ct_inputs,
          CG_ATTRS(ct_attrs), .infer = ct_infer, CG_KERNELS(ct_kernels), .conform_case = ct_conform);
