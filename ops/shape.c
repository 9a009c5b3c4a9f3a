/* Data movement without arithmetic: concat, slice, reshape, transpose, on
 * every dtype (elements moved as bytes of their size). */
#include "ops_cl.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cpu/cpu_pool.h"
#include "dtype.h"
#include "error.h"
#include "opencl/cl_backend.h"
#include "shape.cl.h"

static cg_op_status expect_dtype(const cg_op_call *call, int i, const char *op) {
    cg_op_dtype t = call->inputs[i].dtype;
    if (!cg_dtype_valid((int)t))
        return cg_op_fail(call, "input %d has unsupported dtype %s for %s", i, cg_ops_dtype_name(t), op);
    return CG_OP_OK;
}

/* Bytes of one element of x. */
static size_t elem_size(const cg_tensor_desc *x) { return cg_dtype_size((cg_dtype)x->dtype); }

/* Formats an ints attribute "[1, -1]" for messages. */
static void format_ints(char *buf, size_t size, const int64_t *v, int n) {
    size_t used = 0;
    used += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(buf + (used < size ? used : size), used < size ? size - used : 0, "%s%lld",
                                 i ? ", " : "", (long long)v[i]);
    snprintf(buf + (used < size ? used : size), used < size ? size - used : 0, "]");
}

/* ---- OpenCL helpers ---- */

/* The kernel `name` of shape.cl for tensors of up to `max_elems` elements
 * of `es` bytes: IDX and IDX8 are 64-bit from 2^31 - 1 elements on (*wide
 * set), T the unsigned type of es bytes, plus the `extra` options (may be
 * NULL). */
static cl_kernel shape_kernel(const cg_kernel_args *a, const char *name, int64_t max_elems, size_t es,
                              const char *extra, int *wide) {
    char opt[128];
    snprintf(opt, sizeof opt, "%s%s%s", cg_ops_cl_elem_type_option(es), extra ? " " : "", extra ? extra : "");
    *wide = max_elems >= INT32_MAX;
    return cg_ops_cl_kernel(a, cg_cl_shape, name, *wide, 1, opt);
}

/* One launch of copy_rows over a rows x cols block. */
static cg_op_status copy_rows_cl(const cg_kernel_args *a, cl_mem src, int64_t src_off, int64_t src_stride, cl_mem dst,
                                 int64_t dst_off, int64_t dst_stride, int64_t rows, int64_t cols, int64_t max_elems,
                                 size_t es) {
    static const char kn[] = "copy_rows";
    int wide;
    if (rows <= 0 || cols <= 0) return CG_OP_OK;
    cl_kernel k = shape_kernel(a, kn, max_elems, es, NULL, &wide);
    if (!k) return CG_OP_ERROR;
    if (cg_ops_cl_arg(a, k, kn, 0, sizeof src, &src) || cg_ops_cl_idx(a, k, kn, 1, wide, src_off) ||
        cg_ops_cl_idx(a, k, kn, 2, wide, src_stride) || cg_ops_cl_arg(a, k, kn, 3, sizeof dst, &dst) ||
        cg_ops_cl_idx(a, k, kn, 4, wide, dst_off) || cg_ops_cl_idx(a, k, kn, 5, wide, dst_stride) ||
        cg_ops_cl_idx(a, k, kn, 6, wide, rows) || cg_ops_cl_idx(a, k, kn, 7, wide, cols))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, rows * cols, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* ---- concat(x0, x1, ...; axis) ---- */

enum { CONCAT_AXIS };

static const cg_attr_def concat_attrs[] = {
    CG_ATTR(.name = "axis", .type = CG_ATTR_INT, .required = 1,
            .doc = "axis to join along; negative counts from the end"),
};

static cg_op_status concat_infer(cg_op_call *call) {
    const cg_tensor_desc *x0 = &call->inputs[0];
    const cg_attr_value *ax = &call->attrs[CONCAT_AXIS];
    char s0[128], si[128];
    if (call->n_inputs < 1) return cg_op_fail(call, "concat needs at least 1 input");
    if (expect_dtype(call, 0, "concat")) return CG_OP_ERROR;
    if (!ax->present) return cg_op_fail(call, "attribute axis is required for concat");
    cg_ops_format_dims(s0, sizeof s0, x0);
    if (x0->ndim < 1) return cg_op_fail(call, "input 0 must have at least 1 dim for concat");
    int axis = cg_norm_axis(ax->i, x0->ndim);
    if (axis < 0)
        return cg_op_fail(call, "axis %lld is out of range for input 0 %s (%d dims)", (long long)ax->i, s0, x0->ndim);
    cg_tensor_desc o = *x0;
    for (int t = 1; t < call->n_inputs; t++) {
        const cg_tensor_desc *x = &call->inputs[t];
        cg_ops_format_dims(si, sizeof si, x);
        if (x->dtype != x0->dtype)
            return cg_op_fail(call, "input %d is %s but input 0 is %s; concat needs one dtype", t,
                              cg_ops_dtype_name(x->dtype), cg_ops_dtype_name(x0->dtype));
        if (x->ndim != x0->ndim)
            return cg_op_fail(call,
                              "input %d has shape %s but input 0 has %s; concat needs "
                              "the same number of dims",
                              t, si, s0);
        for (int d = 0; d < x->ndim; d++) {
            if (d == axis) {
                o.dims[d] = cg_dim_add(o.dims[d], x->dims[d]);
            } else if (!cg_dim_compatible(o.dims[d], x->dims[d])) {
                return cg_op_fail(call,
                                  "input %d has shape %s, incompatible with input 0 %s "
                                  "at dim %d (concat axis %d)",
                                  t, si, s0, d, axis);
            } else {
                o.dims[d] = cg_dim_unify(o.dims[d], x->dims[d]);
            }
        }
    }
    call->outputs[0] = o;
    return CG_OP_OK;
}

typedef struct concat_job {
    const cg_kernel_args *a;
    int axis;
    int64_t inner;
    size_t out_row; /* bytes of one outer index's output */
} concat_job;

/* Outer indices begin .. end - 1: each input's block, side by side. */
static void concat_run(void *p, size_t begin, size_t end) {
    const concat_job *j = p;
    const cg_op_call *call = j->a->call;
    const size_t es = elem_size(&call->outputs[0]);
    for (size_t r = begin; r < end; r++) {
        char *dst = (char *)j->a->out[0] + r * j->out_row;
        for (int t = 0; t < call->n_inputs; t++) {
            size_t chunk = (size_t)(call->inputs[t].dims[j->axis] * j->inner) * es;
            if (!chunk) continue;
            memcpy(dst, (const char *)j->a->in[t] + r * chunk, chunk);
            dst += chunk;
        }
    }
}

static cg_op_status concat_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *o = &call->outputs[0];
    int axis = cg_norm_axis(call->attrs[CONCAT_AXIS].i, o->ndim);
    int64_t outer, inner;
    cg_desc_split(o, axis, &outer, &inner);
    concat_job j = {a, axis, inner, (size_t)(o->dims[axis] * inner) * elem_size(o)};
    /* about 64 KiB per task: a decoder's caches grow by concatenation */
    const size_t grain = j.out_row >= 65536 ? 1 : 65536 / (j.out_row + 1) + 1;
    if (outer > 0) cg_cpu_parallel_for((size_t)outer, grain, concat_run, &j);
    return CG_OP_OK;
}

/* One block copy per input into its columns of the output viewed as
 * [outer, axis * inner]. */
static cg_op_status concat_cl(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *o = &call->outputs[0];
    int axis = cg_norm_axis(call->attrs[CONCAT_AXIS].i, o->ndim);
    int64_t outer, inner, numel = cg_desc_numel(o), at = 0;
    cg_desc_split(o, axis, &outer, &inner);
    int64_t row = o->dims[axis] * inner;
    for (int t = 0; t < call->n_inputs; t++) {
        int64_t cols = call->inputs[t].dims[axis] * inner;
        if (copy_rows_cl(a, (cl_mem)a->in[t], 0, cols, (cl_mem)a->out[0], at, row, outer, cols, numel, elem_size(o)))
            return CG_OP_ERROR;
        at += cols;
    }
    return CG_OP_OK;
}

static int32_t concat_conform(int32_t index, cg_conform_case *c);

static const cg_kernel_def concat_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = concat_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = concat_cl),
};

const cg_op_def cg_op_concat =
    CG_OP(.name = "concat",
          .doc = "Joins one or more tensors of the same dtype (any) and number "
                 "of dims along axis (int, required; negative counts from the end). "
                 "Every other dim must match; the output's axis dim is the sum of the "
                 "inputs' (unknown during verification unless all are concrete).",
          .min_inputs = 1, .max_inputs = -1, .min_outputs = 1, .max_outputs = 1, CG_ATTRS(concat_attrs),
          .infer = concat_infer, CG_KERNELS(concat_kernels), .conform_case = concat_conform);

/* ---- slice(x; axis, start, end) ---- */

enum { SLICE_AXIS, SLICE_START, SLICE_END };

static const cg_attr_def slice_attrs[] = {
    CG_ATTR(.name = "axis", .type = CG_ATTR_INT, .required = 1, .doc = "axis to slice; negative counts from the end"),
    CG_ATTR(.name = "start", .type = CG_ATTR_INT, .default_int = 0,
            .doc = "first index (negative counts from the end)"),
    CG_ATTR(.name = "end", .type = CG_ATTR_INT, .default_int = INT64_MAX,
            .doc = "one past the last index (negative counts from the "
                   "end); default: to the end"),
};

/* Python slice bounds for step 1 over a dim of concrete size n. */
static void slice_bounds(int64_t n, int64_t start, int64_t end, int64_t *s, int64_t *e) {
    if (start < 0) start = start + n < 0 ? 0 : start + n;
    if (start > n) start = n;
    if (end < 0) end = end + n < 0 ? 0 : end + n;
    if (end > n) end = n;
    if (end < start) end = start;
    *s = start;
    *e = end;
}

static cg_op_status slice_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    const cg_attr_value *ax = &call->attrs[SLICE_AXIS];
    int64_t start = call->attrs[SLICE_START].i, end = call->attrs[SLICE_END].i;
    char sx[128];
    if (expect_dtype(call, 0, "slice")) return CG_OP_ERROR;
    if (!ax->present) return cg_op_fail(call, "attribute axis is required for slice");
    cg_ops_format_dims(sx, sizeof sx, x);
    int axis = cg_norm_axis(ax->i, x->ndim);
    if (axis < 0)
        return cg_op_fail(call, "axis %lld is out of range for x %s (%d dims)", (long long)ax->i, sx, x->ndim);
    int64_t n = x->dims[axis], len;
    if (cg_dim_known(n)) {
        int64_t s, e;
        slice_bounds(n, start, end, &s, &e);
        len = e - s;
    } else if (start == 0 && end == INT64_MAX) {
        len = n; /* the whole dim, symbol kept */
    } else if ((start >= 0) == (end >= 0) && end <= start) {
        len = 0; /* empty whatever the size */
    } else {
        len = CG_DIM_UNKNOWN;
    }
    call->outputs[0] = *x;
    call->outputs[0].dims[axis] = len;
    return CG_OP_OK;
}

static cg_op_status slice_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0];
    int axis = cg_norm_axis(call->attrs[SLICE_AXIS].i, x->ndim);
    int64_t outer, inner, n = x->dims[axis], s, e;
    slice_bounds(n, call->attrs[SLICE_START].i, call->attrs[SLICE_END].i, &s, &e);
    cg_desc_split(x, axis, &outer, &inner);
    size_t es = elem_size(x), row = (size_t)((e - s) * inner) * es;
    if (!row) return CG_OP_OK;
    const char *src = a->in[0];
    char *dst = a->out[0];
    for (int64_t r = 0; r < outer; r++) memcpy(dst + (size_t)r * row, src + (size_t)((r * n + s) * inner) * es, row);
    return CG_OP_OK;
}

/* x viewed as [outer, n * inner]: columns [s * inner, e * inner) of every
 * row, one block copy. */
static cg_op_status slice_cl(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0];
    int axis = cg_norm_axis(call->attrs[SLICE_AXIS].i, x->ndim);
    int64_t outer, inner, n = x->dims[axis], s, e;
    slice_bounds(n, call->attrs[SLICE_START].i, call->attrs[SLICE_END].i, &s, &e);
    cg_desc_split(x, axis, &outer, &inner);
    int64_t cols = (e - s) * inner;
    return copy_rows_cl(a, (cl_mem)a->in[0], s * inner, n * inner, (cl_mem)a->out[0], 0, cols, outer, cols,
                        cg_desc_numel(x), elem_size(x));
}

static int32_t slice_conform(int32_t index, cg_conform_case *c);

static const cg_kernel_def slice_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = slice_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = slice_cl),
};
static const char *const one_input[] = {"x", NULL};

const cg_op_def cg_op_slice =
    CG_OP(.name = "slice",
          .doc = "Takes x[start:end] along axis (step 1) of a tensor of any dtype, with "
                 "Python semantics: negative start/end count from the end of the dim "
                 "and both are clamped to [0, size]; an empty range gives a size-0 "
                 "dim. Attributes: axis (int, required), start (default 0), end "
                 "(default INT64_MAX = to the end). During verification a symbolic "
                 "dim stays symbolic for the whole range and becomes unknown when the "
                 "bounds depend on its size.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = one_input,
          CG_ATTRS(slice_attrs), .infer = slice_infer, CG_KERNELS(slice_kernels), .conform_case = slice_conform);

/* ---- reshape(x; shape) ---- */

enum { RESHAPE_SHAPE };

static const cg_attr_def reshape_attrs[] = {
    CG_ATTR(.name = "shape", .type = CG_ATTR_DIMS, .required = 1,
            .doc = "new dims: > 0 as given, a dim name (B) as bound, 0 copies x's dim "
                   "at that position, one -1 is inferred"),
};

/* *acc *= v unless that overflows (returns 0). */
static int mul_checked(int64_t *acc, int64_t v) {
    if (v != 0 && *acc > INT64_MAX / v) return 0;
    *acc *= v;
    return 1;
}

static cg_op_status reshape_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    const cg_attr_value *sh = &call->attrs[RESHAPE_SHAPE];
    char sx[128], ss[256];
    if (expect_dtype(call, 0, "reshape")) return CG_OP_ERROR;
    if (!sh->present) return cg_op_fail(call, "attribute shape is required for reshape");
    cg_ops_format_dims(sx, sizeof sx, x);
    if (sh->n_ints > CG_MAX_DIMS)
        return cg_op_fail(call, "shape has %d dims, more than %d", (int)sh->n_ints, CG_MAX_DIMS);
    format_ints(ss, sizeof ss, sh->ints, sh->n_ints);
    cg_tensor_desc o;
    o.dtype = x->dtype;
    o.ndim = sh->n_ints;
    int infer_at = -1, used[CG_MAX_DIMS] = {0}, unmatched = 0;
    int64_t out_rest = 1; /* product of the explicit sizes */
    for (int i = 0; i < sh->n_ints; i++) {
        int64_t v = sh->ints[i];
        if (v == -1) {
            if (infer_at >= 0) return cg_op_fail(call, "shape %s has more than one -1", ss);
            infer_at = i;
        } else if (v == 0) {
            if (i >= x->ndim)
                return cg_op_fail(call, "shape %s copies dim %d (0) but x %s has %d dims", ss, i, sx, x->ndim);
            o.dims[i] = x->dims[i];
            used[i] = 1;
        } else if (v < 0) {
            o.dims[i] = v; /* a symbolic dim (verify time; a plan binds it) */
        } else {
            o.dims[i] = v;
            if (!mul_checked(&out_rest, v)) return cg_op_fail(call, "shape %s is too large", ss);
        }
    }
    /* a symbolic dim of the shape cancels the same one of x's */
    for (int i = 0; i < sh->n_ints; i++) {
        if (sh->ints[i] >= -1) continue;
        int j = 0;
        while (j < x->ndim && (used[j] || x->dims[j] != sh->ints[i])) j++;
        if (j < x->ndim) used[j] = 1;
        else unmatched++;
    }
    /* x's dims left over: the product of the concrete ones, the others
     * counted. */
    int64_t in_rest = 1, rest_sym = CG_DIM_UNKNOWN;
    int rest_other = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (used[i]) continue;
        if (!cg_dim_known(x->dims[i])) {
            rest_other++;
            rest_sym = x->dims[i];
        } else if (!mul_checked(&in_rest, x->dims[i])) {
            return cg_op_fail(call, "x %s is too large", sx);
        }
    }
    if (infer_at >= 0) {
        if (rest_other || unmatched) {
            /* [1, B, 32] -> [-1, 32] gives B: one symbol left over with the
             * concrete sizes cancelling; anything else is unknown until the
             * shapes are bound. */
            o.dims[infer_at] = (rest_other == 1 && !unmatched && in_rest == out_rest) ? rest_sym : CG_DIM_UNKNOWN;
        } else if (in_rest % out_rest != 0) {
            return cg_op_fail(call,
                              "cannot reshape x %s into shape %s: %lld remaining "
                              "elements do not divide by %lld",
                              sx, ss, (long long)in_rest, (long long)out_rest);
        } else {
            o.dims[infer_at] = in_rest / out_rest;
        }
    } else if (!rest_other && !unmatched && in_rest != out_rest) {
        int64_t all = 1;
        for (int i = 0; i < x->ndim && all >= 0; i++) all = cg_dim_known(x->dims[i]) ? all * x->dims[i] : -1;
        if (all >= 0)
            return cg_op_fail(call, "cannot reshape x %s (%lld elements) into shape %s", sx, (long long)all, ss);
        return cg_op_fail(call, "cannot reshape x %s into shape %s: %lld elements left over against %lld", sx, ss,
                          (long long)in_rest, (long long)out_rest);
    }
    call->outputs[0] = o;
    return CG_OP_OK;
}

static cg_op_status reshape_cpu(const cg_kernel_args *a) {
    size_t bytes = (size_t)cg_desc_numel(&a->call->inputs[0]) * elem_size(&a->call->inputs[0]);
    if (bytes && a->out[0] != a->in[0]) memcpy(a->out[0], a->in[0], bytes);
    return CG_OP_OK;
}

/* Non-zero when a and b are the same memory: the same object, or
 * sub-buffers of one buffer at the same offset (in place). */
static int same_memory(cl_mem a, cl_mem b) {
    if (a == b) return 1;
    cl_mem pa = NULL, pb = NULL;
    size_t oa = 0, ob = 0;
    if (clGetMemObjectInfo(a, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof pa, &pa, NULL) != CL_SUCCESS ||
        clGetMemObjectInfo(b, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof pb, &pb, NULL) != CL_SUCCESS)
        return 0;
    if (!pa) pa = a;
    if (!pb) pb = b;
    if (pa != pb) return 0;
    if (clGetMemObjectInfo(a, CL_MEM_OFFSET, sizeof oa, &oa, NULL) != CL_SUCCESS ||
        clGetMemObjectInfo(b, CL_MEM_OFFSET, sizeof ob, &ob, NULL) != CL_SUCCESS)
        return 0;
    return oa == ob;
}

/* The same bytes: a buffer copy on the queue, nothing when in place. It
 * goes through the OpenCL layer's copy so the device's counters and a
 * profile's capture see it like any other copy. */
static cg_op_status reshape_cl(const cg_kernel_args *a) {
    size_t bytes = (size_t)cg_desc_numel(&a->call->inputs[0]) * elem_size(&a->call->inputs[0]);
    cl_mem src = (cl_mem)a->in[0], dst = (cl_mem)a->out[0];
    if (!bytes || same_memory(src, dst)) return CG_OP_OK;
    if (cg_cl_copy((cg_cl_device *)a->device, src, 0, dst, 0, bytes))
        return cg_op_fail(a->call, "reshape, %zu bytes: %s", bytes, cg_last_error());
    return CG_OP_OK;
}

static int32_t reshape_conform(int32_t index, cg_conform_case *c);

static const cg_kernel_def reshape_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = reshape_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = reshape_cl),
};

const cg_op_def cg_op_reshape =
    CG_OP(.name = "reshape",
          .doc = "Gives x (any dtype) a new shape with the same elements in the same "
                 "row-major order. Attribute shape (ints, required): a size > 0 is "
                 "taken as is, 0 copies x's dim at the same position, and at most one "
                 "-1 is inferred so the element count matches (from the dims that are "
                 "not copied; during verification it is a symbol when exactly one "
                 "symbolic dim is left over and the sizes cancel, as [1, B, 32] -> "
                 "[-1, 32] gives [B, 32], and unknown otherwise). "
                 "The element counts must match. May run in place.",
          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .input_names = one_input,
          CG_ATTRS(reshape_attrs), .infer = reshape_infer, CG_KERNELS(reshape_kernels), .conform_case = reshape_conform,
          .flags = CG_OP_FLAG_INPLACE0);

/* ---- transpose(x; perm) ---- */

enum { TRANSPOSE_PERM };

static const cg_attr_def transpose_attrs[] = {
    CG_ATTR(.name = "perm", .type = CG_ATTR_INTS, .required = 1,
            .doc = "output dim i is x's dim perm[i]; a permutation of x's dims"),
};

static cg_op_status transpose_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    const cg_attr_value *pa = &call->attrs[TRANSPOSE_PERM];
    char sx[128], sp[256];
    if (expect_dtype(call, 0, "transpose")) return CG_OP_ERROR;
    if (!pa->present) return cg_op_fail(call, "attribute perm is required for transpose");
    cg_ops_format_dims(sx, sizeof sx, x);
    format_ints(sp, sizeof sp, pa->ints, pa->n_ints);
    if (pa->n_ints != x->ndim)
        return cg_op_fail(call, "perm %s has %d entries but x %s has %d dims", sp, (int)pa->n_ints, sx, x->ndim);
    int seen[CG_MAX_DIMS] = {0};
    cg_tensor_desc o = *x;
    for (int i = 0; i < x->ndim; i++) {
        int p = cg_norm_axis(pa->ints[i], x->ndim);
        if (p < 0 || seen[p]) return cg_op_fail(call, "perm %s is not a permutation of x's %d dims", sp, x->ndim);
        seen[p] = 1;
        o.dims[i] = x->dims[p];
    }
    call->outputs[0] = o;
    return CG_OP_OK;
}

/* The output dims of at least 2 elements, n[0..nd), with their input
 * strides st, where dims that stay adjacent in x are merged; returns nd. */
static int transpose_dims(const cg_op_call *call, int64_t *n, int64_t *st) {
    const cg_tensor_desc *x = &call->inputs[0];
    int64_t xs[CG_MAX_DIMS], s = 1;
    for (int i = x->ndim - 1; i >= 0; i--) {
        xs[i] = s;
        s *= x->dims[i];
    }
    int nd = 0;
    for (int i = 0; i < x->ndim; i++) {
        int p = cg_norm_axis(call->attrs[TRANSPOSE_PERM].ints[i], x->ndim);
        int64_t d = x->dims[p];
        if (d == 1) continue;
        if (nd > 0 && st[nd - 1] == xs[p] * d) {
            n[nd - 1] *= d;
            st[nd - 1] = xs[p];
        } else {
            n[nd] = d;
            st[nd] = xs[p];
            nd++;
        }
    }
    return nd;
}

#define TRANSPOSE_TILE 32

/* The transpose walk for elements of type T: the merged output dims n
 * (nd of them, the first two of size 1 at least) with input strides st. */
#define TRANSPOSE_WALK(NAME, T)                                                                             \
    static void NAME(const T *src, T *dst, int nd, const int64_t *n, const int64_t *st) {                   \
        const int64_t n1 = n[nd - 2], n2 = n[nd - 1], s1 = st[nd - 2], s2 = st[nd - 1];                     \
        int64_t idx[CG_MAX_DIMS + 2] = {0}, off = 0;                                                        \
        for (;;) {                                                                                          \
            const T *in = src + off;                                                                        \
            if (s2 == 1) {                                                                                  \
                for (int64_t i = 0; i < n1; i++) memcpy(dst + i * n2, in + i * s1, (size_t)n2 * sizeof(T)); \
            } else {                                                                                        \
                for (int64_t i0 = 0; i0 < n1; i0 += TRANSPOSE_TILE) {                                       \
                    int64_t i1 = i0 + TRANSPOSE_TILE < n1 ? i0 + TRANSPOSE_TILE : n1;                       \
                    for (int64_t j0 = 0; j0 < n2; j0 += TRANSPOSE_TILE) {                                   \
                        int64_t j1 = j0 + TRANSPOSE_TILE < n2 ? j0 + TRANSPOSE_TILE : n2;                   \
                        for (int64_t i = i0; i < i1; i++)                                                   \
                            for (int64_t j = j0; j < j1; j++) dst[i * n2 + j] = in[i * s1 + j * s2];        \
                    }                                                                                       \
                }                                                                                           \
            }                                                                                               \
            dst += n1 * n2;                                                                                 \
            int d = nd - 3;                                                                                 \
            for (; d >= 0; d--) {                                                                           \
                off += st[d];                                                                               \
                if (++idx[d] < n[d]) break;                                                                 \
                off -= st[d] * n[d];                                                                        \
                idx[d] = 0;                                                                                 \
            }                                                                                               \
            if (d < 0) break;                                                                               \
        }                                                                                                   \
    }
TRANSPOSE_WALK(walk8, uint8_t)
TRANSPOSE_WALK(walk16, uint16_t)
TRANSPOSE_WALK(walk32, uint32_t)
TRANSPOSE_WALK(walk64, uint64_t)

static cg_op_status transpose_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    int64_t numel = cg_desc_numel(&call->inputs[0]);
    size_t es = elem_size(&call->inputs[0]);
    if (numel == 0) return CG_OP_OK;
    /* The merged output dims after two leading dims of size 1, so that the
     * walk always has a 2-D block. */
    int64_t n[CG_MAX_DIMS + 2], st[CG_MAX_DIMS + 2];
    n[0] = n[1] = 1;
    st[0] = st[1] = 0;
    int nd = 2 + transpose_dims(call, n + 2, st + 2);
    if (nd == 2 || (nd == 3 && st[2] == 1)) { /* the identity */
        memcpy(a->out[0], a->in[0], (size_t)numel * es);
        return CG_OP_OK;
    }
    if (es == 1) walk8(a->in[0], a->out[0], nd, n, st);
    else if (es == 2) walk16(a->in[0], a->out[0], nd, n, st);
    else if (es == 8) walk64(a->in[0], a->out[0], nd, n, st);
    else walk32(a->in[0], a->out[0], nd, n, st);
    return CG_OP_OK;
}

/* Side of the local tile of transpose_tiled, and the smallest size both
 * tiled dims need for it to be used instead of transpose_any. */
#define TRANSPOSE_CL_TILE 32
#define TRANSPOSE_CL_MIN 16

/* Through a local tile when the output's last dim is not the input's
 * contiguous one (so that reads and writes both run along memory), else a
 * strided gather per output element (its reads are then contiguous too). */
static cg_op_status transpose_cl(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    int64_t numel = cg_desc_numel(&call->inputs[0]);
    cl_mem src = (cl_mem)a->in[0], dst = (cl_mem)a->out[0];
    int64_t n[CG_MAX_DIMS], st[CG_MAX_DIMS];
    int nd = transpose_dims(call, n, st), wide;
    size_t es = elem_size(&call->inputs[0]);
    if (numel == 0) return CG_OP_OK;
    if (nd <= 1) /* the identity */
        return copy_rows_cl(a, src, 0, numel, dst, 0, numel, 1, numel, numel, es);
    int last = nd - 1, q = -1;
    for (int i = 0; i < nd; i++)
        if (st[i] == 1) q = i;
    const int64_t tile = TRANSPOSE_CL_TILE;
    cl_kernel k = NULL;
    size_t rows = 8;
    static const char kn[] = "transpose_tiled";
    if (q >= 0 && q != last && n[q] >= TRANSPOSE_CL_MIN && n[last] >= TRANSPOSE_CL_MIN) {
        /* Built for a TILE x ROWS group: fewer rows per pass until the
         * kernel's own limits on this device take it; none: untiled. */
        for (; rows >= 1; rows /= 2) {
            char extra[64];
            snprintf(extra, sizeof extra, "-DTILE=%d -DROWS=%d", (int)tile, (int)rows);
            cl_kernel c = shape_kernel(a, kn, numel, es, extra, &wide);
            if (!c) return CG_OP_ERROR;
            const size_t local[3] = {(size_t)tile, rows, 1};
            if (cg_ops_cl_group_fits(a, c, 3, local, 0)) {
                k = c;
                break;
            }
        }
    }
    if (k) {
        /* output strides, then the dims other than q and last */
        int64_t os[CG_MAX_DIMS], s = 1, rn[CG_MAX_DIMS], rin[CG_MAX_DIMS], rout[CG_MAX_DIMS];
        int64_t rest = 1;
        int rnd = 0;
        for (int i = nd - 1; i >= 0; i--) {
            os[i] = s;
            s *= n[i];
        }
        for (int i = 0; i < last; i++) {
            if (i == q) continue;
            rn[rnd] = n[i];
            rin[rnd] = st[i];
            rout[rnd] = os[i];
            rest *= n[i];
            rnd++;
        }
        cl_int crnd = rnd;
        const cg_ops_cl_arg_value mem[] = {CG_OPS_CL_ARG(src), CG_OPS_CL_ARG(dst)};
        if (cg_ops_cl_args(a, k, kn, 0, CG_OPS_CL_N_ARGS(mem), mem) || cg_ops_cl_idx(a, k, kn, 2, wide, n[last]) ||
            cg_ops_cl_idx(a, k, kn, 3, wide, st[last]) || cg_ops_cl_idx(a, k, kn, 4, wide, n[q]) ||
            cg_ops_cl_idx(a, k, kn, 5, wide, os[q]) || cg_ops_cl_arg(a, k, kn, 6, sizeof crnd, &crnd) ||
            cg_ops_cl_idx8(a, k, kn, 7, wide, rn, rnd) || cg_ops_cl_idx8(a, k, kn, 8, wide, rin, rnd) ||
            cg_ops_cl_idx8(a, k, kn, 9, wide, rout, rnd))
            return CG_OP_ERROR;
        size_t global[3] = {(size_t)((n[last] + tile - 1) / tile * tile), (size_t)((n[q] + tile - 1) / tile) * rows,
                            (size_t)rest};
        size_t local[3] = {(size_t)tile, rows, 1};
        return cg_ops_cl_launch(a, k, NULL, 3, global, local);
    }
    static const char kany[] = "transpose_any";
    k = shape_kernel(a, kany, numel, es, NULL, &wide);
    if (!k) return CG_OP_ERROR;
    cl_int cnd = nd;
    const cg_ops_cl_arg_value mem[] = {CG_OPS_CL_ARG(src), CG_OPS_CL_ARG(dst)};
    if (cg_ops_cl_args(a, k, kany, 0, CG_OPS_CL_N_ARGS(mem), mem) || cg_ops_cl_idx(a, k, kany, 2, wide, numel) ||
        cg_ops_cl_arg(a, k, kany, 3, sizeof cnd, &cnd) || cg_ops_cl_idx8(a, k, kany, 4, wide, n, nd) ||
        cg_ops_cl_idx8(a, k, kany, 5, wide, st, nd))
        return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, numel, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

static int32_t transpose_conform(int32_t index, cg_conform_case *c);

static const cg_kernel_def transpose_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = NULL, .run = transpose_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = NULL, .run = transpose_cl),
};

const cg_op_def cg_op_transpose = CG_OP(.name = "transpose",
                                        .doc = "Permutes the dims of x (any dtype): output dim i is x's dim "
                                               "perm[i], i.e. out[i_0, ..., i_n] = x at the index whose dim perm[k] "
                                               "is i_k. Attribute perm (ints, required) must be a permutation of "
                                               "0..ndim-1 (negative entries count from the end).",
                                        .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
                                        .input_names = one_input, CG_ATTRS(transpose_attrs), .infer = transpose_infer,
                                        CG_KERNELS(transpose_kernels), .conform_case = transpose_conform);

/* ---- conformance cases ---- */

/* Up to 6 inputs of one dtype and number of dims. f32 values in [-2, 2],
 * the other dtypes in [-100000, 100000] clipped to theirs (the ops only move
 * them): every element size, 1, 2, 4 and 8 bytes, is among the cases. */
typedef struct shape_case {
    const char *attrs;
    cg_op_dtype dt;
    int n_in, nd;
    int64_t d[6][CG_MAX_DIMS];
} shape_case;

static int32_t shape_fill(const shape_case *cases, int32_t n, int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= n) return 0;
    const shape_case *t = &cases[index];
    c->n_inputs = t->n_in;
    c->n_outputs = 1;
    c->attrs = t->attrs;
    for (int i = 0; i < t->n_in; i++) {
        c->inputs[i].dtype = t->dt;
        c->inputs[i].ndim = t->nd;
        memcpy(c->inputs[i].dims, t->d[i], sizeof t->d[i]);
        c->lo[i] = t->dt == CG_OP_F32 ? -2 : -1e300; /* integers: their whole range */
        c->hi[i] = t->dt == CG_OP_F32 ? 2 : 1e300;
    }
    return 1;
}

#define N_CASES(t) ((int32_t)(sizeof(t) / sizeof((t)[0])))

static const shape_case concat_cases[] = {
    {"axis: 0", CG_OP_F32, 1, 1, {{1}}},
    {"axis: 1", CG_OP_F32, 2, 2, {{1, 1}, {1, 1}}},
    {"axis: -1", CG_OP_F32, 2, 2, {{3, 2}, {3, 3}}},
    {"axis: 0", CG_OP_I32, 3, 2, {{1, 3}, {3, 3}, {2, 3}}},
    {"axis: 1", CG_OP_F32, 3, 3, {{2, 3, 4}, {2, 1, 4}, {2, 5, 4}}},
    {"axis: 1", CG_OP_F32, 2, 3, {{3, 0, 2}, {3, 4, 2}}}, /* an empty input */
    {"axis: 2", CG_OP_F32, 4, 3, {{2, 17, 1}, {2, 17, 3}, {2, 17, 17}, {2, 17, 2}}},
    {"axis: 0", CG_OP_I32, 6, 2, {{1, 17}, {3, 17}, {2, 17}, {17, 17}, {1, 17}, {5, 17}}},
    {"axis: 1", CG_OP_F32, 2, 2, {{257, 3}, {257, 5}}},
    {"axis: 0", CG_OP_I32, 2, 2, {{1000, 8}, {3, 8}}},
    {"axis: -3", CG_OP_F32, 2, 3, {{5, 1000, 3}, {2, 1000, 3}}},
    {"axis: 1", CG_OP_F32, 3, 2, {{1000, 17}, {1000, 1}, {1000, 16}}},
    {"axis: 1", CG_I64, 2, 2, {{3, 5}, {3, 17}}},
    {"axis: 0", CG_U8, 3, 1, {{1}, {17}, {33}}},
    {"axis: -1", CG_F16, 2, 3, {{2, 3, 4}, {2, 3, 5}}},
    {"axis: 0", CG_BOOL, 2, 2, {{1000, 3}, {2, 3}}},
    {"axis: 1", CG_U16, 2, 2, {{3, 17}, {3, 5}}},
};

static int32_t concat_conform(int32_t index, cg_conform_case *c) {
    return shape_fill(concat_cases, N_CASES(concat_cases), index, c);
}

static const shape_case slice_cases[] = {
    {"axis: 0", CG_OP_F32, 1, 1, {{1}}},
    {"axis: 0, start: 1", CG_OP_F32, 1, 1, {{3}}},
    {"axis: 1, start: -2", CG_OP_F32, 1, 2, {{3, 4}}},
    {"axis: -1, start: 1, end: -1", CG_OP_F32, 1, 2, {{3, 4}}},
    {"axis: 0, start: -100, end: 5", CG_OP_I32, 1, 2, {{17, 3}}},   /* start clamped */
    {"axis: 0, start: 5, end: 100", CG_OP_F32, 1, 2, {{17, 3}}},    /* end clamped */
    {"axis: 1, start: 3, end: 3", CG_OP_F32, 1, 3, {{2, 17, 5}}},   /* empty */
    {"axis: 1, start: 10, end: 2", CG_OP_F32, 1, 3, {{2, 17, 5}}},  /* end < start */
    {"axis: 1, start: -3, end: -5", CG_OP_I32, 1, 3, {{2, 17, 5}}}, /* empty, negative */
    {"axis: 2, start: 1, end: 16", CG_OP_F32, 1, 4, {{4, 3, 17, 2}}},
    {"axis: 1, start: 1, end: 3", CG_OP_I32, 1, 2, {{257, 4}}},
    {"axis: 1, start: 17, end: -17", CG_OP_F32, 1, 3, {{3, 1000, 7}}},
    {"axis: 0, start: -257", CG_OP_F32, 1, 2, {{1000, 33}}},
    {"axis: -1, start: 1, end: 1000", CG_OP_I32, 1, 2, {{100, 1000}}},
    {"axis: 1, start: 1, end: 4", CG_I64, 1, 2, {{17, 5}}},
    {"axis: 0, start: 3", CG_U8, 1, 1, {{33}}},
    {"axis: -1, start: -7", CG_F16, 1, 2, {{257, 9}}},
    {"axis: 1, start: 2, end: 9", CG_I16, 1, 2, {{17, 33}}},
};

static int32_t slice_conform(int32_t index, cg_conform_case *c) {
    return shape_fill(slice_cases, N_CASES(slice_cases), index, c);
}

static const shape_case reshape_cases[] = {
    {"shape: [1, 1]", CG_OP_F32, 1, 1, {{1}}},
    {"shape: [3, 1]", CG_OP_F32, 1, 1, {{3}}},
    {"shape: [-1]", CG_OP_I32, 1, 2, {{3, 4}}},
    {"shape: [3, 17]", CG_OP_F32, 1, 2, {{17, 3}}},
    {"shape: [0, -1]", CG_OP_F32, 1, 3, {{2, 17, 3}}},
    {"shape: [17, 1000]", CG_OP_F32, 1, 2, {{1000, 17}}},
    {"shape: [4, -1, 1000]", CG_OP_I32, 1, 3, {{1000, 4, 3}}},
    {"shape: [-1]", CG_I64, 1, 2, {{3, 17}}},
    {"shape: [5, 3]", CG_U8, 1, 1, {{15}}},
    {"shape: [0, 8, -1]", CG_F16, 1, 2, {{3, 64}}},
    {"shape: [-1, 3]", CG_U32, 1, 2, {{17, 3}}},
};

static int32_t reshape_conform(int32_t index, cg_conform_case *c) {
    return shape_fill(reshape_cases, N_CASES(reshape_cases), index, c);
}

/* Sizes >= TRANSPOSE_CL_MIN in both the output's last dim and the input's
 * contiguous dim take the tiled kernel, the others the strided one. */
static const shape_case transpose_cases[] = {
    {"perm: [0]", CG_OP_F32, 1, 1, {{1}}},
    {"perm: [1, 0]", CG_OP_F32, 1, 2, {{1, 1}}},
    {"perm: [1, 0]", CG_OP_F32, 1, 2, {{3, 1}}}, /* the identity */
    {"perm: [1, 0]", CG_OP_F32, 1, 2, {{3, 3}}},
    {"perm: [0, 1, 2]", CG_OP_F32, 1, 3, {{2, 3, 4}}},
    {"perm: [2, 0, 1]", CG_OP_F32, 1, 3, {{2, 3, 4}}},
    {"perm: [1, 0]", CG_OP_I32, 1, 2, {{3, 17}}},
    {"perm: [-1, 0, 1]", CG_OP_I32, 1, 3, {{2, 3, 4}}}, /* negative entry */
    {"perm: [7, 5, 3, 1, 0, 2, 4, 6]", CG_OP_F32, 1, 8, {{2, 1, 3, 2, 1, 2, 3, 2}}},
    {"perm: [1, 0]", CG_OP_F32, 1, 2, {{17, 33}}}, /* tiled */
    {"perm: [0, 2, 1, 3]", CG_OP_F32, 1, 4, {{2, 17, 3, 19}}},
    {"perm: [3, 2, 1, 0, 4, 5, 7, 6]", CG_OP_I32, 1, 8, {{2, 3, 2, 2, 3, 2, 3, 17}}},
    {"perm: [1, 0]", CG_OP_F32, 1, 2, {{257, 65}}},             /* tiled */
    {"perm: [0, 3, 2, 1]", CG_OP_F32, 1, 4, {{5, 20, 17, 19}}}, /* tiled, 2 batch dims */
    {"perm: [1, 2, 0]", CG_OP_F32, 1, 3, {{1000, 3, 17}}},      /* merged to [51, 1000] */
    {"perm: [1, 0]", CG_OP_I32, 1, 2, {{1000, 65}}},            /* tiled */
    {"perm: [2, 1, 0]", CG_OP_F32, 1, 3, {{20, 257, 18}}},      /* tiled, batch in the middle */
    {"perm: [1, 0]", CG_I64, 1, 2, {{17, 33}}},                 /* tiled, 8-byte elements */
    {"perm: [2, 0, 1]", CG_U8, 1, 3, {{2, 3, 5}}},
    {"perm: [1, 0]", CG_F16, 1, 2, {{257, 65}}},       /* tiled, 2-byte elements */
    {"perm: [0, 2, 1]", CG_BOOL, 1, 3, {{3, 16, 17}}}, /* tiled, 1-byte elements */
    {"perm: [1, 0]", CG_U64, 1, 2, {{33, 17}}},        /* tiled, 8-byte elements */
};

static int32_t transpose_conform(int32_t index, cg_conform_case *c) {
    return shape_fill(transpose_cases, N_CASES(transpose_cases), index, c);
}
