#include "conv_geom.h"

#include <string.h>

enum { AUTO_NONE, AUTO_SAME_UPPER, AUTO_SAME_LOWER, AUTO_VALID };

/* The INTS attribute `name` at index ix as n values (absent or empty: def
 * each); a wrong count or a value below lo fails naming it. */
static cg_op_status read_ints(const cg_op_call *call, const char *name, int ix, int n, int64_t def, int64_t lo,
                              int64_t *v) {
    const cg_attr_value *a = ix >= 0 ? &call->attrs[ix] : NULL;
    for (int i = 0; i < n; i++) v[i] = def;
    if (!a || a->n_ints == 0) return CG_OP_OK;
    int ok = a->n_ints == n;
    for (int i = 0; ok && i < n; i++) ok = a->ints[i] >= lo;
    if (!ok)
        return cg_op_fail(call, "attribute %s must hold %d values of at least %lld (%s), got %d values", name, n,
                          (long long)lo, strcmp(name, "pads") ? "one per spatial axis" : "the begins, then the ends",
                          (int)a->n_ints);
    memcpy(v, a->ints, sizeof *v * (size_t)n);
    return CG_OP_OK;
}

/* Floor division (ONNX's reference rounds negative pads down). */
static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

static int auto_mode(const char *s) {
    if (!s || !*s || !strcmp(s, "notset")) return AUTO_NONE;
    if (!strcmp(s, "same_upper")) return AUTO_SAME_UPPER;
    if (!strcmp(s, "same_lower")) return AUTO_SAME_LOWER;
    if (!strcmp(s, "valid")) return AUTO_VALID;
    return -1;
}

/* One axis of a forward window (conv, pooling); in is a size. */
static cg_op_status axis_fwd(const cg_op_call *call, cg_conv_geom *g, int a, int mode, int ceil_mode) {
    const int64_t ext = (g->k[a] - 1) * g->d[a] + 1, in = g->in[a];
    if (mode == AUTO_SAME_UPPER || mode == AUTO_SAME_LOWER) {
        g->out[a] = (in + g->s[a] - 1) / g->s[a];
        int64_t total = (g->out[a] - 1) * g->s[a] + ext - in;
        if (total < 0) total = 0;
        g->pb[a] = mode == AUTO_SAME_UPPER ? total / 2 : total - total / 2;
        g->pe[a] = total - g->pb[a];
        return CG_OP_OK;
    }
    if (mode == AUTO_VALID) g->pb[a] = g->pe[a] = 0;
    const int64_t span = in + g->pb[a] + g->pe[a] - ext;
    if (span < 0)
        return cg_op_fail(call,
                          "spatial axis %d: the window spans %lld elements (kernel %lld, dilation %lld), more than the "
                          "padded input's %lld",
                          a - (CG_CONV_AXES - g->nsp), (long long)ext, (long long)g->k[a], (long long)g->d[a],
                          (long long)(in + g->pb[a] + g->pe[a]));
    g->out[a] = span / g->s[a] + 1;
    /* ceil_mode: one more window where a partial one is left, unless it
     * would start past the input and the start pad (ONNX, PyTorch) */
    if (ceil_mode && span % g->s[a] && g->out[a] * g->s[a] < in + g->pb[a]) g->out[a]++;
    return CG_OP_OK;
}

/* One axis of a transposed convolution; in is a size. A negative pad adds
 * output positions (ONNX's output_shape past the natural size). */
static cg_op_status axis_tr(const cg_op_call *call, cg_conv_geom *g, int a, int mode) {
    const int64_t ext = (g->k[a] - 1) * g->d[a] + 1, in = g->in[a];
    const int64_t full = g->s[a] * (in - 1) + g->op[a] + ext;
    if (mode == AUTO_SAME_UPPER || mode == AUTO_SAME_LOWER) {
        g->out[a] = in * g->s[a];
        const int64_t total = full - g->out[a];
        g->pb[a] = mode == AUTO_SAME_UPPER ? floor_div(total, 2) : total - floor_div(total, 2);
        g->pe[a] = total - g->pb[a];
        return CG_OP_OK;
    }
    if (mode == AUTO_VALID) g->pb[a] = g->pe[a] = 0;
    g->out[a] = full - g->pb[a] - g->pe[a];
    if (g->out[a] < 1)
        return cg_op_fail(call, "spatial axis %d: pads %lld + %lld leave no output of the %lld positions",
                          a - (CG_CONV_AXES - g->nsp), (long long)g->pb[a], (long long)g->pe[a], (long long)full);
    return CG_OP_OK;
}

/* Whether a window over a symbolic size gives the same size. */
static int keeps_size(const cg_conv_geom *g, int a, int mode, int transpose) {
    const int64_t ext = (g->k[a] - 1) * g->d[a] + 1;
    if (g->s[a] != 1) return 0;
    if (mode == AUTO_SAME_UPPER || mode == AUTO_SAME_LOWER) return 1;
    const int64_t pads = mode == AUTO_VALID ? 0 : g->pb[a] + g->pe[a];
    return transpose ? g->op[a] + ext - 1 == pads : pads == ext - 1;
}

static cg_op_status read_all(const cg_op_call *call, const cg_conv_attr_ix *ix, int n, int transpose, int64_t *s,
                             int64_t *d, int64_t *pads, int64_t *op) {
    if (read_ints(call, "strides", ix->strides, n, 1, 1, s) ||
        read_ints(call, "dilations", ix->dilations, n, 1, 1, d) ||
        read_ints(call, "pads", ix->pads, 2 * n, 0, transpose ? -((int64_t)1 << 40) : 0, pads) ||
        read_ints(call, "output_padding", ix->output_padding, n, 0, 0, op))
        return CG_OP_ERROR;
    return CG_OP_OK;
}

cg_op_status cg_conv_geom_make(const cg_op_call *call, const cg_conv_attr_ix *ix, int nsp, const int64_t *in_sp,
                               const int64_t *k, int transpose, cg_conv_geom *g) {
    int64_t s[CG_CONV_AXES], d[CG_CONV_AXES], pads[2 * CG_CONV_AXES], op[CG_CONV_AXES];
    if (read_all(call, ix, nsp, transpose, s, d, pads, op)) return CG_OP_ERROR;
    const int mode = ix->auto_pad >= 0 ? auto_mode(call->attrs[ix->auto_pad].s) : AUTO_NONE;
    if (mode < 0)
        return cg_op_fail(call,
                          "attribute auto_pad must be \"\", \"same_upper\", \"same_lower\" or \"valid\", got \"%s\"",
                          call->attrs[ix->auto_pad].s);
    const int64_t ceil_mode = ix->ceil_mode >= 0 ? call->attrs[ix->ceil_mode].i : 0;
    if (ceil_mode != 0 && ceil_mode != 1)
        return cg_op_fail(call, "attribute ceil_mode must be 0 or 1, got %lld", (long long)ceil_mode);
    memset(g, 0, sizeof *g);
    g->nsp = nsp;
    const int lead = CG_CONV_AXES - nsp;
    for (int a = 0; a < CG_CONV_AXES; a++) g->in[a] = g->k[a] = g->s[a] = g->d[a] = g->out[a] = 1;
    for (int i = 0; i < nsp; i++) {
        const int a = lead + i;
        g->in[a] = in_sp[i], g->k[a] = k[i], g->s[a] = s[i], g->d[a] = d[i], g->op[a] = op[i];
        g->pb[a] = pads[i], g->pe[a] = pads[nsp + i];
        if (k[i] < 1) return cg_op_fail(call, "the kernel's size along spatial axis %d must be known and positive", i);
        if (transpose && op[i] >= s[i] && op[i] >= d[i])
            return cg_op_fail(call,
                              "output_padding %lld of spatial axis %d must be smaller than its stride or dilation",
                              (long long)op[i], i);
        if (in_sp[i] < 0) {
            g->out[a] = keeps_size(g, a, mode, transpose) ? in_sp[i] : CG_DIM_UNKNOWN;
            continue;
        }
        if (transpose ? axis_tr(call, g, a, mode) : axis_fwd(call, g, a, mode, (int)ceil_mode)) return CG_OP_ERROR;
    }
    return CG_OP_OK;
}

cg_op_status cg_conv_check_x(const cg_op_call *call, const cg_op_dtype *more, int *nsp) {
    const cg_tensor_desc *x = &call->inputs[0];
    int ok = x->dtype == CG_F32;
    for (int i = 0; more && more[i]; i++) ok |= x->dtype == more[i];
    char b[128];
    cg_ops_format_dims(b, sizeof b, x);
    if (!ok) return cg_op_fail(call, "input 0 (x) has dtype %s, expected f32", cg_ops_dtype_name(x->dtype));
    if (x->ndim < 3 || x->ndim > 2 + CG_CONV_AXES)
        return cg_op_fail(call, "input 0 (x) %s must be [N, C, spatial...] with 1 to 3 spatial axes", b);
    *nsp = x->ndim - 2;
    return CG_OP_OK;
}

/* The geometry as kernel arguments: int4 vectors (x, y, z the 3 axes). */
static cl_int4 geom_int4(const int64_t *v) {
    cl_int4 r = {{(cl_int)v[0], (cl_int)v[1], (cl_int)v[2], 0}};
    return r;
}

cg_op_status cg_conv_cl_geom_args(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint first,
                                  const cg_conv_geom *g, int64_t total) {
    cl_int4 in = geom_int4(g->in), kk = geom_int4(g->k), s = geom_int4(g->s), d = geom_int4(g->d);
    cl_int4 pb = geom_int4(g->pb), out = geom_int4(g->out);
    cl_long n = total;
    const cg_ops_cl_arg_value v[] = {CG_OPS_CL_ARG(in), CG_OPS_CL_ARG(kk),  CG_OPS_CL_ARG(s), CG_OPS_CL_ARG(d),
                                     CG_OPS_CL_ARG(pb), CG_OPS_CL_ARG(out), CG_OPS_CL_ARG(n)};
    return cg_ops_cl_args(a, k, name, first, CG_OPS_CL_N_ARGS(v), v);
}

cg_op_status cg_conv_output(cg_op_call *call, int64_t n, int64_t m, const cg_conv_geom *g, const char *m_is) {
    if (call->n_inputs > 2) {
        const cg_tensor_desc *b = &call->inputs[2];
        if (b->dtype != CG_F32 || b->ndim != 1 || !cg_dim_compatible(b->dims[0], m)) {
            char sb[128];
            cg_ops_format_dims(sb, sizeof sb, b);
            return cg_op_fail(call, "input 2 (bias) %s %s must be f32 [M], M = %s", sb, cg_ops_dtype_name(b->dtype),
                              m_is);
        }
    }
    cg_tensor_desc *o = &call->outputs[0];
    o->dtype = CG_F32;
    o->ndim = call->inputs[0].ndim;
    o->dims[0] = n, o->dims[1] = m;
    for (int i = 0; i < g->nsp; i++) o->dims[2 + i] = g->out[CG_CONV_AXES - g->nsp + i];
    return CG_OP_OK;
}

int64_t cg_conv_block(int64_t per, int64_t p) {
    int64_t r = ((int64_t)1 << 19) / (per > 0 ? per : 1);
    if (r < 16) r = 16;
    return r < p ? r : p;
}
