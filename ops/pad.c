/* pad: x of any dtype with pads added before and after each axis (ONNX
 * Pad, numpy.pad): constant, reflect, edge or wrap; negative pads crop
 * first, and the other modes then read the cropped part. */
#include "bcast.h"

#include <stdint.h>
#include <string.h>

#include "index.cl.h"

enum { PD_PADS, PD_MODE };
/* Pads past this are refused (dims stay far from overflowing). */
#define CG_PAD_MAX ((int64_t)1 << 40)
enum { MODE_CONSTANT, MODE_REFLECT, MODE_EDGE, MODE_WRAP, N_MODES };
static const char *const mode_names[N_MODES] = {"constant", "reflect", "edge", "wrap"};

static const cg_attr_def pd_attrs[] = {
    CG_ATTR(.name = "pads", .type = CG_ATTR_INTS, .required = 1,
            .doc = "2 x rank values: the begin pads of every axis, then the end pads (ONNX's order); negative crops"),
    CG_ATTR(.name = "mode", .type = CG_ATTR_STRING, .default_string = "constant",
            .doc = "\"constant\" (value, or 0), \"reflect\" (mirror without the edge), \"edge\" (repeat the edge) or "
                   "\"wrap\" (periodic)"),
};

static int mode_of(const cg_op_call *call) {
    for (int k = 0; k < N_MODES; k++)
        if (!strcmp(call->attrs[PD_MODE].s, mode_names[k])) return k;
    return -1;
}

/* One axis: dims n, begin pad b, end pad e. The kept part of x is [cs, cs
 * + cn) and starts at output position ob. */
typedef struct pd_axis {
    int64_t cs, cn, ob;
} pd_axis;

static pd_axis axis_of(int64_t n, int64_t b, int64_t e) {
    pd_axis a;
    a.cs = b < 0 ? -b : 0;
    a.cn = n - a.cs - (e < 0 ? -e : 0);
    a.ob = b > 0 ? b : 0;
    return a;
}

static cg_op_status pd_infer(cg_op_call *call) {
    const cg_tensor_desc *x = &call->inputs[0];
    const cg_attr_value *p = &call->attrs[PD_PADS];
    const int mode = mode_of(call), nd = x->ndim;
    char sx[128];
    cg_ops_format_dims(sx, sizeof sx, x);
    if (mode < 0)
        return cg_op_fail(call, "attribute mode must be constant, reflect, edge or wrap, got \"%s\"",
                          call->attrs[PD_MODE].s);
    if (!cg_dtype_size((cg_dtype)x->dtype))
        return cg_op_fail(call, "input 0 (x) has unsupported dtype %s", cg_ops_dtype_name(x->dtype));
    if (p->n_ints != 2 * nd) return cg_op_fail(call, "pads has %d values for x %s (2 per axis)", (int)p->n_ints, sx);
    if (call->n_inputs > 1) {
        const cg_tensor_desc *v = &call->inputs[1];
        if (v->dtype != x->dtype || cg_desc_numel(v) != 1)
            return cg_op_fail(call, "input 1 (value) must be one %s value", cg_ops_dtype_name(x->dtype));
    }
    call->outputs[0] = *x;
    for (int i = 0; i < nd; i++) {
        const int64_t b = p->ints[i], e = p->ints[nd + i], n = x->dims[i];
        if (b < -CG_PAD_MAX || b > CG_PAD_MAX || e < -CG_PAD_MAX || e > CG_PAD_MAX)
            return cg_op_fail(call, "pads %lld and %lld of axis %d are out of range", (long long)b, (long long)e, i);
        if (n < 0) {
            call->outputs[0].dims[i] = b + e == 0 ? n : CG_DIM_UNKNOWN;
            continue;
        }
        const pd_axis a = axis_of(n, b, e);
        if (a.cn < 0)
            return cg_op_fail(call, "pads %lld and %lld crop more than the %lld elements of axis %d of x %s",
                              (long long)b, (long long)e, (long long)n, i, sx);
        if (a.cn == 0 && mode != MODE_CONSTANT && (b > 0 || e > 0))
            return cg_op_fail(call, "mode %s pads axis %d of x %s, which has no elements to repeat", mode_names[mode],
                              i, sx);
        call->outputs[0].dims[i] = n + b + e;
    }
    return CG_OP_OK;
}

/* The position in x along one axis of output position o, or -1 for the
 * constant. */
static int64_t source_of(int mode, const pd_axis *a, int64_t o) {
    int64_t j = o - a->ob;
    const int64_t n = a->cn;
    if (j >= 0 && j < n) return a->cs + j;
    switch (mode) {
    case MODE_REFLECT:
        if (n == 1) j = 0;
        else {
            const int64_t period = 2 * (n - 1);
            j %= period;
            if (j < 0) j += period;
            if (j >= n) j = period - j;
        }
        break;
    case MODE_EDGE: j = j < 0 ? 0 : n - 1; break;
    case MODE_WRAP:
        j %= n;
        if (j < 0) j += n;
        break;
    default: return -1;
    }
    return a->cs + j;
}

static cg_op_status pd_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0], *y = &call->outputs[0];
    const int nd = x->ndim, mode = mode_of(call);
    const size_t b = cg_dtype_size((cg_dtype)x->dtype);
    pd_axis ax[CG_MAX_DIMS];
    int64_t st[CG_MAX_DIMS], s = 1, idx[CG_MAX_DIMS] = {0};
    for (int i = nd - 1; i >= 0; i--) {
        ax[i] = axis_of(x->dims[i], call->attrs[PD_PADS].ints[i], call->attrs[PD_PADS].ints[nd + i]);
        st[i] = s, s *= x->dims[i];
    }
    unsigned char zero[8] = {0};
    const void *value = call->n_inputs > 1 ? a->in[1] : zero;
    const char *src = a->in[0];
    char *dst = a->out[0];
    const int64_t n = cg_desc_numel(y);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int d = 0; d < nd && off >= 0; d++) {
            const int64_t k = source_of(mode, &ax[d], idx[d]);
            off = k < 0 ? -1 : off + k * st[d];
        }
        memcpy(dst + (size_t)i * b, off < 0 ? value : src + (size_t)off * b, b);
        for (int d = nd - 1; d >= 0 && ++idx[d] == y->dims[d]; d--) idx[d] = 0;
    }
    return CG_OP_OK;
}

static cg_op_status pd_cl(const cg_kernel_args *a) {
    static const char name[] = "pad_nd";
    const cg_op_call *call = a->call;
    const cg_tensor_desc *x = &call->inputs[0], *y = &call->outputs[0];
    const int nd = x->ndim;
    const int64_t n = cg_desc_numel(y);
    if (n == 0) return CG_OP_OK;
    char opts[96];
    snprintf(opts, sizeof opts, "%s -DPAD_MODE=%d -DPAD_VALUE=%d",
             cg_ops_cl_elem_type_option(cg_dtype_size((cg_dtype)x->dtype)), mode_of(call), call->n_inputs > 1);
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_index, name, cg_desc_numel(x) > INT32_MAX || n > INT32_MAX, 0, opts);
    if (!k) return CG_OP_ERROR;
    /* per axis, innermost first: output dims, x's strides, the kept part */
    cl_long8 od, st, cs, cn, ob;
    int64_t s = 1;
    for (int i = 0; i < 8; i++) {
        const int d = nd - 1 - i;
        const pd_axis p = d >= 0 ? axis_of(x->dims[d], call->attrs[PD_PADS].ints[d], call->attrs[PD_PADS].ints[nd + d])
                                 : axis_of(1, 0, 0);
        od.s[i] = d >= 0 ? y->dims[d] : 1;
        st.s[i] = d >= 0 ? s : 0;
        cs.s[i] = p.cs, cn.s[i] = p.cn, ob.s[i] = p.ob;
        if (d >= 0) s *= x->dims[d];
    }
    cl_mem src = (cl_mem)a->in[0], val = call->n_inputs > 1 ? (cl_mem)a->in[1] : src, dst = (cl_mem)a->out[0];
    cl_long ln = n;
    cl_int cnd = nd;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(src), CG_OPS_CL_ARG(val), CG_OPS_CL_ARG(dst), CG_OPS_CL_ARG(ln),
                                     CG_OPS_CL_ARG(cnd), CG_OPS_CL_ARG(od),  CG_OPS_CL_ARG(st),  CG_OPS_CL_ARG(cs),
                                     CG_OPS_CL_ARG(cn),  CG_OPS_CL_ARG(ob)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

#define D(...) \
    { __VA_ARGS__ }
/* Pads larger than the axis (reflect and wrap go round more than once),
 * crops, and crops with pads on the same axis. */
static const struct {
    cg_op_dtype x;
    int nd;
    int64_t xd[4];
    const char *attrs;
    int value;
} pd_cases[] = {
    {CG_F32, 1, D(5), "pads: [2, 3]", 0},
    {CG_F32, 2, D(3, 4), "pads: [1, 2, 0, 3], mode: \"constant\"", 1},
    {CG_I64, 2, D(3, 4), "pads: [2, 1, 2, 5], mode: \"reflect\"", 0},
    {CG_F32, 3, D(2, 3, 5), "pads: [0, 4, 7, 0, 4, 6], mode: \"reflect\"", 0},
    {CG_U8, 2, D(3, 4), "pads: [1, 3, 2, 1], mode: \"edge\"", 0},
    {CG_F16, 3, D(2, 3, 5), "pads: [1, 7, 2, 0, 5, 11], mode: \"wrap\"", 0},
    {CG_I32, 4, D(2, 3, 4, 5), "pads: [0, -1, 2, -2, 0, 1, -1, 3], mode: \"constant\"", 1},
    {CG_F32, 4, D(2, 3, 4, 5), "pads: [0, 1, -1, 2, 1, -1, 2, -2], mode: \"reflect\"", 0},
    {CG_BOOL, 2, D(3, 4), "pads: [-1, 1, 2, -2], mode: \"wrap\"", 0},
    {CG_F32, 2, D(1, 1), "pads: [3, 2, 1, 4], mode: \"reflect\"", 0},
    {CG_F32, 2, D(64, 300), "pads: [3, 5, 4, 6], mode: \"edge\"", 0},
    {CG_F32, 2, D(0, 3), "pads: [1, 0, 1, 0], mode: \"constant\"", 1},
};
#define N_PD ((int32_t)(sizeof pd_cases / sizeof pd_cases[0]))

static int32_t pd_conform(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= N_PD) return 0;
    double lo = -2, hi = 2;
    if (pd_cases[index].x == CG_U8 || pd_cases[index].x == CG_BOOL) lo = 0, hi = 255;
    if (pd_cases[index].x == CG_I64) lo = -9e15, hi = 9e15;
    if (pd_cases[index].x == CG_I32) lo = -9e8, hi = 9e8;
    cg_ops_case t = {1 + pd_cases[index].value,
                     {{pd_cases[index].x, pd_cases[index].nd, {0}, lo, hi}, {pd_cases[index].x, 0, {0}, lo, hi}},
                     pd_cases[index].attrs};
    memcpy(t.in[0].d, pd_cases[index].xd, sizeof t.in[0].d);
    cg_ops_fill_case(&t, 1, c);
    return 1;
}

static const char *const pd_inputs[] = {"x", "value", NULL};
static const cg_kernel_def pd_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = pd_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = pd_cl),
};
const cg_op_def cg_op_pad =
    CG_OP(.name = "pad",
          .doc = "x (any dtype) with pads[i] elements added before axis i and pads[rank + i] after it (ONNX Pad, "
                 "numpy.pad): mode constant fills them with value (input 1, one value of x's dtype; 0 without it), "
                 "reflect mirrors x without repeating the edge, edge repeats the edge, wrap repeats x periodically "
                 "(reflect and wrap go round again where a pad is longer than the axis). A negative pad crops that "
                 "many elements first; the modes then read the cropped part.",
          .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .input_names = pd_inputs,
          CG_ATTRS(pd_attrs), .infer = pd_infer, CG_KERNELS(pd_kernels), .conform_case = pd_conform);
