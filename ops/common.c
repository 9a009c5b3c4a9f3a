#include "ops_common.h"

#include "check_msg.h"
#include "shape.h"

#include "cpu/cpu_blas.h"
#include "cpu/cpu_gemm.h"

#include <stdlib.h>
#include <string.h>

void cg_ops_format_dims(char *buf, size_t size, const cg_tensor_desc *d) {
    cg_shape_format(buf, size, 0, d->ndim, d->dims, NULL, 0);
}

cg_op_status cg_expect_input(const cg_op_call *call, int i, cg_op_dtype dt, int ndim) {
    const cg_tensor_desc *d = &call->inputs[i];
    if (d->dtype != dt)
        return cg_op_fail(call, "input %d must be %s, got %s", i, cg_ops_dtype_name(dt), cg_ops_dtype_name(d->dtype));
    if (ndim >= 0 && d->ndim != ndim) {
        char b[128];
        cg_ops_format_dims(b, sizeof b, d);
        return cg_op_fail(call, "input %d must have %d dims, got %s", i, ndim, b);
    }
    return CG_OP_OK;
}

cg_op_status cg_broadcast_shapes(const cg_op_call *call, const cg_tensor_desc *a, const cg_tensor_desc *b,
                                 cg_tensor_desc *out) {
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    out->ndim = nd;
    for (int i = 0; i < nd; i++) {
        int ia = a->ndim - nd + i, ib = b->ndim - nd + i;
        int64_t da = ia >= 0 ? a->dims[ia] : 1;
        int64_t db = ib >= 0 ? b->dims[ib] : 1;
        if (da == 1) out->dims[i] = db;
        else if (db == 1) out->dims[i] = da;
        else if (cg_dim_compatible(da, db)) out->dims[i] = cg_dim_unify(da, db);
        else {
            char sa[128], sb[128];
            cg_ops_format_dims(sa, sizeof sa, a);
            cg_ops_format_dims(sb, sizeof sb, b);
            return cg_op_fail(call, "shapes %s and %s do not broadcast", sa, sb);
        }
    }
    return CG_OP_OK;
}

cg_op_status cg_op_fail_range(const cg_op_call *call, int input, const char *name, int64_t value, int64_t pos,
                              int64_t lo, int64_t hi) {
    /* as an OpenCL kernel records them: int32 words, a bound past them clamped */
    if (call->err && call->err_size)
        cg_check_message(call->err, call->err_size, input, name, cg_ops_clamp_i32(value), pos, cg_ops_clamp_i32(lo),
                         cg_ops_clamp_i32(hi));
    return CG_OP_ERROR;
}

cg_op_status cg_ops_check_rows(const cg_op_call *call, int input, const char *name, const int32_t *ids, int64_t n,
                               int64_t rows) {
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= rows) return cg_op_fail_range(call, input, name, ids[i], i, 0, rows - 1);
    return CG_OP_OK;
}

const char *cg_input_name(const cg_op_def *def, int i) {
    if (!def->input_names) return "input";
    for (int k = 0; def->input_names[k]; k++)
        if (k == i) return def->input_names[k];
    return "input";
}

/* Checks that a tensor is f32 with `ndim` dims compatible with `dims`
 * (entries may be symbolic or CG_DIM_UNKNOWN). `label` names it in messages,
 * e.g. "input 'w_hh'" or "weight_hh_l1_reverse". */
cg_op_status cg_ops_expect_f32(const cg_op_call *call, const char *label, const cg_tensor_desc *d, int ndim,
                               const int64_t *dims) {
    if (d->dtype != CG_OP_F32)
        return cg_op_fail(call, "%s must be f32, got %s", label, d->dtype == CG_OP_I32 ? "i32" : "an unknown dtype");
    cg_tensor_desc want;
    memset(&want, 0, sizeof want);
    want.dtype = CG_OP_F32;
    want.ndim = ndim;
    memcpy(want.dims, dims, sizeof(int64_t) * (size_t)ndim);
    int ok = d->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = cg_dim_compatible(d->dims[i], dims[i]);
    if (!ok) {
        char got[160], exp[160];
        cg_ops_format_dims(got, sizeof got, d);
        cg_ops_format_dims(exp, sizeof exp, &want);
        return cg_op_fail(call, "%s has shape %s, expected %s", label, got, exp);
    }
    return CG_OP_OK;
}

/* C[m, n] = A[m, k] . W[n, k]^T (W stored row-major like a PyTorch weight);
 * a GEMV when m == 1 (OpenBLAS's SGEMM re-packs the whole weight matrix on
 * every call, which cost ~70% of a batch-1 decoder step: see
 * docs/performance.md). Every element of C is written, also when k == 0. */
void cg_ops_project(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *w, int64_t ldw, float *c,
                    int64_t ldc) {
    if (m == 1 && k > 0) cg_cpu_sgemv(0, n, k, 1.0f, w, ldw, a, 0.0f, c);
    else cg_cpu_sgemm(0, 1, m, n, k, 1.0f, a, lda, w, ldw, 0.0f, c, ldc);
}

/* c[r, :] += bias for every row (the products whose kernels do not take
 * it): 8 columns at a time in a loop of fixed length, which GCC's -O2
 * vectorises (a plain loop to n it leaves scalar: 3% of an int8 decoder
 * step at batch 64 went there). */
static void add_rows(int64_t m, int64_t n, const float *restrict bias, float *restrict c, int64_t ldc) {
    for (int64_t i = 0; i < m; i++) {
        float *cr = c + i * ldc;
        int64_t j = 0;
        for (; j + 8 <= n; j += 8)
            for (int l = 0; l < 8; l++) cr[j + l] += bias[j + l];
        for (; j < n; j++) cr[j] += bias[j];
    }
}

void cg_ops_project_w(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const void *w, cg_op_dtype wt,
                      int64_t ldw, const float *w_scale, const int32_t *w_sums, const float *bias, void *scratch,
                      float *c, int64_t ldc) {
    if (wt == (cg_op_dtype)CG_I8) { /* the bias in the kernels' stores */
        cg_cpu_gemm_nt_q8(m, n, k, a, lda, w, w_scale, w_sums, ldw, bias, c, ldc, scratch);
        return;
    }
    if (wt == CG_OP_F32 && m > 1 && k > 0 && cg_cpu_gemm_nt_bias(m, n, k, 1.0f, a, lda, w, ldw, 0.0f, bias, c, ldc))
        return;
    if (wt == CG_OP_F32) {
        cg_ops_project(m, n, k, a, lda, w, ldw, c, ldc);
    } else if (k <= 0) { /* the empty product, as cg_ops_project writes it */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) c[i * ldc + j] = 0.0f;
    } else {
        cg_cpu_gemm_nt_h(m, n, k, 1.0f, a, lda, w, wt == (cg_op_dtype)CG_BF16, ldw, 0.0f, c, ldc);
    }
    if (bias) add_rows(m, n, bias, c, ldc);
}

size_t cg_ops_project_scratch(cg_op_dtype wt, int64_t m, int64_t n, int64_t k) {
    return wt == (cg_op_dtype)CG_I8 ? cg_cpu_gemm_q8_scratch(m, n, k) : 0;
}

cg_op_status cg_ops_expect_weight(const cg_op_call *call, const char *label, const cg_tensor_desc *d, int ndim,
                                  const int64_t *dims) {
    if (!cg_ops_weight_dtype(d->dtype))
        return cg_op_fail(call, "%s must be f32, bf16 or f16, got %s", label, cg_ops_dtype_name(d->dtype));
    cg_tensor_desc f = *d;
    f.dtype = CG_OP_F32; /* the same shape rules */
    return cg_ops_expect_f32(call, label, &f, ndim, dims);
}

cg_op_status cg_ops_expect_qweight(const cg_op_call *call, const char *label, const cg_tensor_desc *d,
                                   const int64_t *dims, const cg_tensor_desc *s, const char *s_label) {
    if (d->dtype != (cg_op_dtype)CG_I8) return cg_ops_expect_weight(call, label, d, 2, dims);
    if (!s) return cg_op_fail(call, "%s is i8 and needs its f32 scales, one per row, as the last input", label);
    cg_tensor_desc f = *d;
    f.dtype = CG_OP_F32; /* the same shape rules */
    if (cg_ops_expect_f32(call, label, &f, 2, dims)) return CG_OP_ERROR;
    const int64_t rows[1] = {cg_dim_unify(d->dims[0], dims[0])};
    return cg_ops_expect_f32(call, s_label, s, 1, rows);
}

/* Emits weight input w as f32: an int8 one dequantized (cast to f32, times
 * its scales, input s, as a column), a 16-bit one cast, an f32 one as it
 * is. */
static int32_t emit_weight_f32(cg_ops_emitter *e, int32_t w, int32_t s) {
    int32_t v = cg_ops_emit_input(e, w);
    const cg_op_dtype t = e->call->inputs[w].dtype;
    if (e->st != CG_OP_OK || t == CG_OP_F32) return v;
    v = cg_ops_emit(e, "cast", "to: \"f32\"", v, -1, -1);
    if (t != (cg_op_dtype)CG_I8) return v;
    int32_t sv = cg_ops_emit_input(e, s);
    sv = cg_ops_emit(e, "reshape", "shape: [-1, 1]", sv, -1, -1);
    return cg_ops_emit(e, "mul", NULL, v, sv, -1);
}

/* Inputs of the ops cg_ops_decompose_widened serves (lstm_cell: 7). */
#define CG_MAX_INPUTS_WIDENED 8

cg_op_status cg_ops_decompose_widened(cg_decomp *d, const cg_op_call *call, const char *op, const int *w,
                                      const int *scale, int n_w, int n_keep) {
    cg_ops_emitter e = {d, call, CG_OP_OK};
    int32_t in[CG_MAX_INPUTS_WIDENED], out[CG_MAX_INPUTS_WIDENED];
    if (n_keep > CG_MAX_INPUTS_WIDENED || call->n_outputs > CG_MAX_INPUTS_WIDENED)
        return cg_op_fail(call, "too many inputs to widen");
    for (int i = 0; i < n_keep; i++) {
        int k = -1;
        for (int j = 0; j < n_w; j++)
            if (w[j] == i) k = j;
        in[i] = k >= 0 ? emit_weight_f32(&e, i, scale[k]) : cg_ops_emit_input(&e, i);
    }
    if (e.st != CG_OP_OK) return e.st;
    cg_op_status st = call->host->decomp_node(d, op, n_keep, in, call->n_outputs, out, NULL);
    for (int o = 0; st == CG_OP_OK && o < call->n_outputs; o++) st = call->host->decomp_output(d, o, out[o]);
    return st;
}

void cg_ops_case_q8_weight(cg_conform_case *c, int w) {
    const int s = c->n_inputs++;
    c->inputs[w].dtype = (cg_op_dtype)CG_I8;
    c->lo[w] = -127, c->hi[w] = 127;
    memset(&c->inputs[s], 0, sizeof c->inputs[s]);
    c->inputs[s].dtype = CG_OP_F32;
    c->inputs[s].ndim = 1;
    c->inputs[s].dims[0] = c->inputs[w].dims[0];
    c->lo[s] = 0.001, c->hi[s] = 0.004;
}

int32_t cg_ops_error_case(cg_conform_case *c, int input, double lo, double hi) {
    c->lo[input] = lo;
    c->hi[input] = hi;
    c->expect_error = 1;
    return 1;
}

void cg_ops_fill_case(const cg_ops_case *t, int n_out, cg_conform_case *c) {
    uint32_t ss = c->struct_size;
    memset(c, 0, sizeof *c);
    c->struct_size = ss;
    c->n_inputs = t->n_in;
    c->n_outputs = n_out;
    c->attrs = t->attrs;
    for (int i = 0; i < t->n_in; i++) {
        c->inputs[i].dtype = t->in[i].dt;
        c->inputs[i].ndim = t->in[i].nd;
        for (int j = 0; j < t->in[i].nd; j++) c->inputs[i].dims[j] = t->in[i].d[j];
        c->lo[i] = t->in[i].lo;
        c->hi[i] = t->in[i].hi;
    }
}

/* Decomposition emitter: once a call fails, later ones do nothing and
 * e->st keeps the failure, so a decomposition is written straight through
 * and checks e->st once at the end. */
int32_t cg_ops_emit_input(cg_ops_emitter *e, int32_t i) {
    if (e->st != CG_OP_OK) return -1;
    int32_t v = e->call->host->decomp_input(e->d, i);
    if (v < 0) e->st = CG_OP_ERROR;
    return v;
}

/* Adds node `op` on the non-negative ids among a, b, c (in that order), with
 * one output. */
int32_t cg_ops_emit(cg_ops_emitter *e, const char *op, const char *attrs, int32_t a, int32_t b, int32_t c) {
    if (e->st != CG_OP_OK) return -1;
    int32_t in[3], n = 0, out = -1;
    if (a >= 0) in[n++] = a;
    if (b >= 0) in[n++] = b;
    if (c >= 0) in[n++] = c;
    e->st = e->call->host->decomp_node(e->d, op, n, in, 1, &out, attrs);
    return e->st == CG_OP_OK ? out : -1;
}

void cg_ops_emit_output(cg_ops_emitter *e, int32_t i, int32_t v) {
    if (e->st != CG_OP_OK) return;
    e->st = e->call->host->decomp_output(e->d, i, v);
}
