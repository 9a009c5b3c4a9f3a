/* dim_values: the sizes of dims as data, an i64 tensor known once a plan
 * binds them. An imported model that reads its own shape as numbers
 * (Shape -> Gather -> Cast -> Div of a dynamic length, positions counted
 * from a past length) gets them here, computed on the host at plan time
 * and written by the kernel: nothing is read from a device. */
#include "ops_cl.h"

#include <stdint.h>
#include <string.h>

#include "shape.cl.h"

enum { DV_VALUES, DV_SCALAR };

static const cg_attr_def dv_attrs[] = {
    CG_ATTR(.name = "values", .type = CG_ATTR_DIMS, .required = 1,
            .doc = "the sizes to output: integers >= 0 or dim names (at most 8)"),
    CG_ATTR(.name = "scalar", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "1: a scalar (one value), 0: a 1-D tensor of the values"),
};

static cg_op_status dv_infer(cg_op_call *call) {
    const cg_attr_value *v = &call->attrs[DV_VALUES];
    const int64_t scalar = call->attrs[DV_SCALAR].i;
    if (v->n_ints > CG_MAX_DIMS) return cg_op_fail(call, "values has %d entries, at most %d", v->n_ints, CG_MAX_DIMS);
    if (scalar != 0 && scalar != 1) return cg_op_fail(call, "scalar must be 0 or 1, got %lld", (long long)scalar);
    if (scalar && v->n_ints != 1) return cg_op_fail(call, "a scalar takes one value, values has %d", v->n_ints);
    for (int i = 0; i < v->n_ints; i++)
        if (v->ints[i] == CG_DIM_UNKNOWN)
            return cg_op_fail(call, "values[%d] is negative (sizes and dim names only)", i);
    cg_tensor_desc *o = &call->outputs[0];
    memset(o, 0, sizeof *o);
    o->dtype = (cg_op_dtype)CG_I64;
    o->ndim = scalar ? 0 : 1;
    o->dims[0] = scalar ? 0 : v->n_ints;
    return CG_OP_OK;
}

static cg_op_status dv_cpu(const cg_kernel_args *a) {
    const cg_attr_value *v = &a->call->attrs[DV_VALUES];
    if (v->n_ints) memcpy(a->out[0], v->ints, sizeof(int64_t) * (size_t)v->n_ints);
    return CG_OP_OK;
}

static cg_op_status dv_cl(const cg_kernel_args *a) {
    static const char name[] = "dim_values";
    const cg_attr_value *v = &a->call->attrs[DV_VALUES];
    if (!v->n_ints) return CG_OP_OK;
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_shape, name, 0, 0, "");
    if (!k) return CG_OP_ERROR;
    cl_long8 vals;
    memset(&vals, 0, sizeof vals);
    for (int i = 0; i < v->n_ints; i++) vals.s[i] = v->ints[i];
    cl_mem y = (cl_mem)a->out[0];
    cl_int n = v->n_ints;
    const cg_ops_cl_arg_value args[] = {CG_OPS_CL_ARG(y), CG_OPS_CL_ARG(vals), CG_OPS_CL_ARG(n)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(args), args)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

static const char *const dv_case_attrs[] = {
    "values: [3, 0, 7]",
    "values: [5], scalar: 1",
    "values: []",
    "values: [1, 2, 3, 4, 5, 6, 7, 9000000000]",
};

static int32_t dv_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= (int32_t)(sizeof dv_case_attrs / sizeof dv_case_attrs[0])) return 0;
    const cg_ops_case t = {0, {{0}}, dv_case_attrs[i]};
    cg_ops_fill_case(&t, 1, c);
    return 1;
}

static const char *const dv_inputs[] = {NULL};
static const cg_kernel_def dv_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = dv_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = dv_cl),
};
const cg_op_def cg_op_dim_values =
    CG_OP(.name = "dim_values",
          .doc = "The sizes in `values` (integers or dim names, bound by the plan) as an i64 tensor: 1-D, "
                 "or a scalar with scalar: 1. No inputs. What an imported model computes from its own "
                 "dynamic shape as data becomes this op.",
          .min_inputs = 0, .max_inputs = 0, .min_outputs = 1, .max_outputs = 1, .input_names = dv_inputs,
          CG_ATTRS(dv_attrs), .infer = dv_infer, CG_KERNELS(dv_kernels), .conform_case = dv_conform);
