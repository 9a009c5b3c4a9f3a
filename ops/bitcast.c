/* bitcast(x; to): the bits of each element read as another dtype of the
 * same size (ONNX BitCast, torch.Tensor.view(dtype)): no value changes, so
 * every device gives the same bytes. OpenCL copies the elements as the
 * unsigned type of their size (copy_elems of cl/gather.cl). */
#include "ops_cl.h"

#include <stdint.h>
#include <string.h>

#include "dtype.h"
#include "gather.cl.h"

enum { BC_TO };

static const cg_attr_def bc_attrs[] = {
    CG_ATTR(.name = "to", .type = CG_ATTR_STRING, .required = 1,
            .doc = "the dtype the bits are read as, of x's element size (\"i32\" for f32, \"u8\" for i8, ...)"),
};

static cg_op_status bc_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    const cg_attr_value *to = &call->attrs[BC_TO];
    if (!cg_dtype_valid((int)x->dtype))
        return cg_op_fail(call, "input 0 (x) has unsupported dtype %s", cg_ops_dtype_name(x->dtype));
    cg_dtype dt = to->present && to->s ? cg_dtype_parse(to->s, strlen(to->s)) : (cg_dtype)0;
    if (!dt) return cg_op_fail(call, "attribute 'to' must name a dtype, got \"%s\"", to->s ? to->s : "");
    if (cg_dtype_size(dt) != cg_dtype_size((cg_dtype)x->dtype))
        return cg_op_fail(call, "bitcast of %s (%zu bytes) to %s (%zu bytes): the sizes must match",
                          cg_dtype_name((cg_dtype)x->dtype), cg_dtype_size((cg_dtype)x->dtype), cg_dtype_name(dt),
                          cg_dtype_size(dt));
    /* a bool is 0 or 1: other bytes would not be one */
    if (dt == CG_BOOL && x->dtype != CG_BOOL)
        return cg_op_fail(call, "bitcast of %s to bool (a bool holds only 0 or 1; compare instead)",
                          cg_dtype_name((cg_dtype)x->dtype));
    call->outputs[0] = *x;
    call->outputs[0].dtype = (cg_op_dtype)dt;
    return CG_OP_OK;
}

static cg_op_status bc_cpu(const cg_kernel_args *a) {
    const cg_tensor_desc *x = &a->call->inputs[0];
    if (a->out[0] != a->in[0])
        memcpy(a->out[0], a->in[0], (size_t)cg_desc_numel(x) * cg_dtype_size((cg_dtype)x->dtype));
    return CG_OP_OK;
}

static cg_op_status bc_cl(const cg_kernel_args *a) {
    static const char name[] = "copy_elems";
    const cg_tensor_desc *x = &a->call->inputs[0];
    const int64_t n = cg_desc_numel(x);
    cl_mem src = (cl_mem)a->in[0], dst = (cl_mem)a->out[0];
    if (n == 0 || src == dst) return CG_OP_OK;
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_gather, name, n > INT32_MAX, 0,
                                   cg_ops_cl_elem_type_option(cg_dtype_size((cg_dtype)x->dtype)));
    cl_long ln = n;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(src), CG_OPS_CL_ARG(dst), CG_OPS_CL_ARG(ln)};
    if (!k || cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* Each pair of dtypes of one size (floats with NaN and infinity bits among
 * the integers' values), over a few shapes. */
static const struct {
    cg_op_dtype from;
    const char *to;
    double lo, hi;
} bc_pairs[] = {
    {CG_OP_F32, "to: \"i32\"", -1e30, 1e30}, {CG_OP_I32, "to: \"f32\"", -2147483648.0, 2147483647.0},
    {CG_F16, "to: \"bf16\"", -6e4, 6e4},     {CG_BF16, "to: \"f16\"", -1e30, 1e30},
    {CG_I8, "to: \"u8\"", -128, 127},        {CG_U8, "to: \"i8\"", 0, 255},
    {CG_BOOL, "to: \"u8\"", 0, 1},           {CG_I64, "to: \"i64\"", -9e18, 9e18},
};

static int32_t bc_conform(int32_t i, cg_conform_case *c) {
    static const struct {
        int nd;
        int64_t d[4];
    } shapes[] = {{0, {0}}, {1, {0}}, {2, {3, 17}}, {3, {2, 5, 101}}};
    const int32_t np = (int32_t)(sizeof bc_pairs / sizeof bc_pairs[0]), ns = 4;
    if (i < 0 || i >= np * ns) return 0;
    const int p = i % np, sh = i / np;
    cg_ops_case t = {1, {{bc_pairs[p].from, shapes[sh].nd, {0}, bc_pairs[p].lo, bc_pairs[p].hi}}, bc_pairs[p].to};
    memcpy(t.in[0].d, shapes[sh].d, sizeof t.in[0].d);
    cg_ops_fill_case(&t, 1, c);
    return 1;
}

static const char *const bc_inputs[] = {"x", NULL};
static const cg_kernel_def bc_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = bc_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = bc_cl),
};
const cg_op_def cg_op_bitcast =
    CG_OP(.name = "bitcast",
          .doc = "The bits of x (any dtype) read as the dtype named by the required attribute to, which must have "
                 "x's element size (f32 and i32, f16 and bf16, i8 and u8, bool to u8 or i8; to bool only from "
                 "bool); the shape is unchanged (ONNX BitCast, torch.Tensor.view(dtype)). May run in place.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = bc_inputs,
          CG_ATTRS(bc_attrs), .infer = bc_infer, CG_KERNELS(bc_kernels), .flags = CG_OP_FLAG_INPLACE0,
          .conform_case = bc_conform);
