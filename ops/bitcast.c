/* bitcast: x's bytes read as another dtype of the same size (ONNX BitCast,
 * numpy's view): f32 <-> i32, i8 <-> u8, bool -> u8, f16 <-> bf16. A copy
 * (or nothing, in place); on OpenCL gather.cl's element copy. Nothing
 * becomes a bool: a byte other than 0 or 1 is no bool clgraph has. */
#include "ops_cl.h"

#include <stdint.h>
#include <string.h>

#include "dtype.h"
#include "gather.cl.h"

static const cg_attr_def bc_attrs[] = {
    CG_ATTR(.name = "to", .type = CG_ATTR_STRING, .default_string = "",
            .doc = "target dtype, of the size of x's: \"f32\", \"i32\", \"f16\", \"bf16\", \"i8\", \"u8\" or \"i64\""),
};

static cg_op_status bc_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    const char *to = call->attrs[0].s;
    cg_dtype dt = to ? cg_dtype_parse(to, strlen(to)) : (cg_dtype)0;
    if (!cg_dtype_valid((int)x->dtype))
        return cg_op_fail(call, "input 0 (x) has unsupported dtype %s", cg_ops_dtype_name(x->dtype));
    if (!dt || dt == CG_BOOL)
        return cg_op_fail(call, "attribute 'to' must name a dtype other than bool, got \"%s\"", to ? to : "");
    if (cg_dtype_size(dt) != cg_dtype_size((cg_dtype)x->dtype))
        return cg_op_fail(call, "%s and %s differ in size", cg_ops_dtype_name(x->dtype), cg_dtype_name(dt));
    call->outputs[0] = *x;
    call->outputs[0].dtype = (cg_op_dtype)dt;
    return CG_OP_OK;
}

static cg_op_status bc_cpu(const cg_kernel_args *a) {
    const size_t n = (size_t)cg_desc_numel(&a->call->inputs[0]) * cg_dtype_size((cg_dtype)a->call->inputs[0].dtype);
    if (n && a->out[0] != a->in[0]) memcpy(a->out[0], a->in[0], n);
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

/* Cases: each pair, values over a range whose bits are ordinary numbers of
 * the target type (no NaN patterns: a NaN compares unequal to itself). */
static const struct {
    cg_op_dtype x;
    double lo, hi;
    const char *to;
} bc_cases[] = {{CG_OP_F32, -4, 4, "to: \"i32\""},   {CG_OP_I32, 0, 2.1e9, "to: \"f32\""},
                {CG_I8, -128, 127, "to: \"u8\""},    {CG_U8, 0, 255, "to: \"i8\""},
                {CG_BOOL, 0, 1, "to: \"u8\""},       {CG_F16, -4, 4, "to: \"bf16\""},
                {CG_I64, -9e15, 9e15, "to: \"i64\""}};
static int32_t bc_conform(int32_t i, cg_conform_case *c) {
    static const int64_t shapes[3][2] = {{1, 0}, {3, 5}, {1, 1000}};
    if (i < 0 || i >= 7 * 3) return 0;
    const int k = i / 3, s = i % 3;
    cg_ops_case t = {
        1,
        {{bc_cases[k].x, shapes[s][1] ? 2 : 1, {shapes[s][0], shapes[s][1]}, bc_cases[k].lo, bc_cases[k].hi}},
        bc_cases[k].to};
    if (!shapes[s][1]) t.in[0].nd = 0;
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
          .doc = "x's bytes read as dtype `to` of the same size (ONNX BitCast, numpy view): f32 <-> i32, i8 <-> u8, "
                 "bool -> u8, f16 <-> bf16, i64 -> i64; output has x's shape, may run in place.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = bc_inputs,
          CG_ATTRS(bc_attrs), .infer = bc_infer, CG_KERNELS(bc_kernels), .flags = CG_OP_FLAG_INPLACE0,
          .conform_case = bc_conform);
