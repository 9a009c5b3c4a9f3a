/* Fused recurrent cells: gru_cell and lstm_cell (PyTorch GRUCell / LSTMCell),
 * and the gate arithmetic of one row that rnn_seq.c shares. */
#include "ops_cl.h"

#include "cpu/cpu_math.h"
#include "cpu/cpu_pool.h"
#include "rnn.cl.h"

#include <math.h>
#include <string.h>

/* The rows below run in chunks of CHUNK units: gate pre-activations go to
 * stack buffers and through the CPU backend's vectorised sigmoid / tanh. */
#define CHUNK 128

/* One GRU row: gi = W_ih x and gh = W_hh h (without biases, gates r, z, n).
 * h_out may be h. */
void cg_rnn_gru_row(int64_t hidden, const float *gi, const float *gh, const float *b_ih, const float *b_hh,
                    const float *h, float *h_out) {
    const int64_t H = hidden;
    float r[CHUNK], z[CHUNK], n[CHUNK];
    for (int64_t j0 = 0; j0 < H; j0 += CHUNK) {
        const size_t c = (size_t)(H - j0 < CHUNK ? H - j0 : CHUNK);
        for (size_t u = 0; u < c; u++) {
            const int64_t j = j0 + (int64_t)u;
            r[u] = gi[j] + b_ih[j] + gh[j] + b_hh[j];
            z[u] = gi[H + j] + b_ih[H + j] + gh[H + j] + b_hh[H + j];
        }
        cg_cpu_vsigmoid(r, r, c);
        cg_cpu_vsigmoid(z, z, c);
        for (size_t u = 0; u < c; u++) {
            const int64_t j = 2 * H + j0 + (int64_t)u;
            n[u] = gi[j] + b_ih[j] + r[u] * (gh[j] + b_hh[j]);
        }
        cg_cpu_vtanh(n, n, c);
        for (size_t u = 0; u < c; u++) {
            const int64_t j = j0 + (int64_t)u;
            h_out[j] = (1.0f - z[u]) * n[u] + z[u] * h[j];
        }
    }
}

/* One LSTM row: gi = W_ih x and gh = W_hh h (without biases, gates i, f, g,
 * o). c_out may be c. */
void cg_rnn_lstm_row(int64_t hidden, const float *gi, const float *gh, const float *b_ih, const float *b_hh,
                     const float *c, float *h_out, float *c_out) {
    const int64_t H = hidden;
    float ig[CHUNK], fg[CHUNK], gg[CHUNK], og[CHUNK];
    for (int64_t j0 = 0; j0 < H; j0 += CHUNK) {
        const size_t m = (size_t)(H - j0 < CHUNK ? H - j0 : CHUNK);
        for (size_t u = 0; u < m; u++) {
            const int64_t j = j0 + (int64_t)u;
            ig[u] = gi[j] + b_ih[j] + gh[j] + b_hh[j];
            fg[u] = gi[H + j] + b_ih[H + j] + gh[H + j] + b_hh[H + j];
            gg[u] = gi[2 * H + j] + b_ih[2 * H + j] + gh[2 * H + j] + b_hh[2 * H + j];
            og[u] = gi[3 * H + j] + b_ih[3 * H + j] + gh[3 * H + j] + b_hh[3 * H + j];
        }
        cg_cpu_vsigmoid(ig, ig, m);
        cg_cpu_vsigmoid(fg, fg, m);
        cg_cpu_vtanh(gg, gg, m);
        cg_cpu_vsigmoid(og, og, m);
        for (size_t u = 0; u < m; u++) {
            const int64_t j = j0 + (int64_t)u;
            const float cn = fg[u] * c[j] + ig[u] * gg[u];
            c_out[j] = cn;
            gg[u] = cn; /* reused for tanh(c') */
        }
        cg_cpu_vtanh(gg, gg, m);
        for (size_t u = 0; u < m; u++) h_out[j0 + (int64_t)u] = og[u] * gg[u];
    }
}

/* ==== shared inference of both cells ==== */

/* The input w_ih (w_hh follows it), the inputs before the scales (6 GRU,
 * 7 LSTM), and the index of the scales of weight w (0: w_ih, 1: w_hh) when
 * that weight is int8, else -1. */
static int cell_wih(int gates) { return gates == 3 ? 2 : 3; }
static int cell_n_base(int gates) { return gates == 3 ? 6 : 7; }
static int cell_scale(const cg_op_call *call, int gates, int w) {
    const int q_ih = call->inputs[cell_wih(gates)].dtype == (cg_op_dtype)CG_I8;
    if (call->inputs[cell_wih(gates) + w].dtype != (cg_op_dtype)CG_I8) return -1;
    return cell_n_base(gates) + (w == 1 ? q_ih : 0);
}

/* A weight in bf16, f16 or int8: the OpenCL kernel's SGEMMs cannot read it. */
static int cell_narrow(const cg_op_call *call, int gates) {
    return call->inputs[cell_wih(gates)].dtype != CG_OP_F32 || call->inputs[cell_wih(gates) + 1].dtype != CG_OP_F32;
}

/* Inputs: x [B, I], h [B, H], (c [B, H],) w_ih [G*H, I], w_hh [G*H, H],
 * b_ih [G*H], b_hh [G*H]; G = 3 (GRU) or 4 (LSTM). Outputs are [B, H]. */
static cg_op_status cell_infer(cg_op_call *call, int gates) {
    const cg_op_def *def = gates == 3 ? &cg_op_gru_cell : &cg_op_lstm_cell;
    const int n_state = gates == 3 ? 1 : 2; /* h (and c) */
    const int i_wih = 1 + n_state;          /* w_ih, w_hh, b_ih, b_hh follow */
    const cg_tensor_desc *x = &call->inputs[0], *h = &call->inputs[1];
    const cg_tensor_desc *w_ih = &call->inputs[i_wih], *w_hh = &call->inputs[i_wih + 1];
    char label[64];
#define CELL_LABEL(i) (snprintf(label, sizeof label, "input '%s'", cg_input_name(def, (i))), label)
    const int64_t any2[2] = {CG_DIM_UNKNOWN, CG_DIM_UNKNOWN};
    const int n_q = (w_ih->dtype == (cg_op_dtype)CG_I8) + (w_hh->dtype == (cg_op_dtype)CG_I8);
    if (call->n_inputs != cell_n_base(gates) + n_q)
        return cg_op_fail(call,
                          "%s takes %d inputs with %d i8 weight(s) (each followed by its scales at the end), "
                          "got %d",
                          def->name, cell_n_base(gates) + n_q, n_q, call->n_inputs);
    const cg_tensor_desc *s_ih = cell_scale(call, gates, 0) >= 0 ? &call->inputs[cell_scale(call, gates, 0)] : NULL;
    const cg_tensor_desc *s_hh = cell_scale(call, gates, 1) >= 0 ? &call->inputs[cell_scale(call, gates, 1)] : NULL;
    if (cg_ops_expect_f32(call, CELL_LABEL(0), x, 2, any2) || cg_ops_expect_f32(call, CELL_LABEL(1), h, 2, any2) ||
        cg_ops_expect_qweight(call, CELL_LABEL(i_wih + 1), w_hh, any2, s_hh, "the scales of w_hh"))
        return CG_OP_ERROR;

    /* The state h defines B (with x) and H; a symbolic H is taken from w_hh. */
    int64_t B = cg_dim_unify(x->dims[0], h->dims[0]), H = h->dims[1];
    const int64_t want_state[2] = {x->dims[0], H};
    for (int i = 1; i <= n_state; i++)
        if (cg_ops_expect_f32(call, CELL_LABEL(i), &call->inputs[i], 2, want_state)) return CG_OP_ERROR;
    if (n_state == 2) B = cg_dim_unify(B, call->inputs[2].dims[0]);
    if (!cg_dim_known(H)) H = cg_dim_unify(H, w_hh->dims[1]);
    int64_t GH = cg_dim_mul(gates, H);
    if (!cg_dim_known(GH)) {
        GH = cg_dim_unify(w_hh->dims[0], w_ih->dims[0]);
        if (cg_dim_known(GH) && GH % gates)
            return cg_op_fail(call, "input '%s' has %lld rows, not a multiple of %d gates",
                              cg_input_name(def, i_wih + 1), (long long)GH, gates);
    }
    const int64_t want_ih[2] = {GH, x->dims[1]}, want_hh[2] = {GH, H}, want_b[1] = {GH};
    if (cg_ops_expect_qweight(call, CELL_LABEL(i_wih), w_ih, want_ih, s_ih, "the scales of w_ih") ||
        cg_ops_expect_qweight(call, CELL_LABEL(i_wih + 1), w_hh, want_hh, s_hh, "the scales of w_hh") ||
        cg_ops_expect_f32(call, CELL_LABEL(i_wih + 2), &call->inputs[i_wih + 2], 1, want_b) ||
        cg_ops_expect_f32(call, CELL_LABEL(i_wih + 3), &call->inputs[i_wih + 3], 1, want_b))
        return CG_OP_ERROR;
#undef CELL_LABEL
    for (int i = 0; i < call->n_outputs; i++) {
        cg_tensor_desc *o = &call->outputs[i];
        memset(o, 0, sizeof *o);
        o->dtype = CG_OP_F32;
        o->ndim = 2;
        o->dims[0] = B;
        o->dims[1] = H;
    }
    return CG_OP_OK;
}

/* Workspace: gi [B, G*H] and gh [B, G*H], then the scratch of an int8
 * product (x or h quantized), one at a time. */
static size_t cell_workspace(const cg_op_call *call, int gates) {
    const int w = cell_wih(gates);
    int64_t B = call->inputs[0].dims[0], I = call->inputs[0].dims[1], H = call->inputs[1].dims[1];
    size_t q_ih = cg_ops_project_scratch(call->inputs[w].dtype, B, gates * H, I);
    size_t q_hh = cg_ops_project_scratch(call->inputs[w + 1].dtype, B, gates * H, H);
    return sizeof(float) * 2 * (size_t)B * (size_t)gates * (size_t)H + (q_ih > q_hh ? q_ih : q_hh);
}

/* Both projections of a cell into the workspace. */
static void cell_project(const cg_kernel_args *a, int gates, int w_first, float **gi, float **gh) {
    const cg_op_call *call = a->call;
    int64_t B = call->inputs[0].dims[0], I = call->inputs[0].dims[1];
    int64_t H = call->inputs[1].dims[1], GH = gates * H;
    const int s_ih = cell_scale(call, gates, 0), s_hh = cell_scale(call, gates, 1);
    *gi = a->workspace;
    *gh = *gi + B * GH;
    void *scratch = *gh + B * GH;
    cg_ops_project_w(B, GH, I, a->in[0], I, a->in[w_first], call->inputs[w_first].dtype, I,
                     s_ih >= 0 ? a->in[s_ih] : NULL, cg_ops_q8_sums(a, 0), NULL, scratch, *gi, GH);
    cg_ops_project_w(B, GH, H, a->in[1], H, a->in[w_first + 1], call->inputs[w_first + 1].dtype, H,
                     s_hh >= 0 ? a->in[s_hh] : NULL, cg_ops_q8_sums(a, 1), NULL, scratch, *gh, GH);
}

/* The hidden size of a cell call for its decomposition (which runs on the
 * plan's possibly symbolic shapes): from h, else from the weights; -1 when no
 * input fixes it. */
static int64_t cell_hidden(const cg_op_call *call, int gates) {
    const int i_wih = cell_wih(gates);
    const cg_tensor_desc *w_ih = &call->inputs[i_wih], *w_hh = &call->inputs[i_wih + 1];
    int64_t H = cg_dim_unify(call->inputs[1].dims[1], w_hh->dims[1]);
    if (cg_dim_known(H)) return H;
    int64_t GH = cg_dim_unify(cg_dim_unify(w_hh->dims[0], w_ih->dims[0]),
                              cg_dim_unify(call->inputs[i_wih + 2].dims[0], call->inputs[i_wih + 3].dims[0]));
    return cg_dim_known(GH) ? GH / gates : -1;
}

/* Emits `slice(v, axis 1, [start, end))`. */
static int32_t emit_cols(cg_ops_emitter *e, int32_t v, int64_t start, int64_t end) {
    char attrs[96];
    snprintf(attrs, sizeof attrs, "axis: 1, start: %lld, end: %lld", (long long)start, (long long)end);
    return cg_ops_emit(e, "slice", attrs, v, -1, -1);
}

/* ==== OpenCL: two SGEMMs into the workspace and one fused gate kernel ==== */

/* gi = x W_ih^T and gh = h W_hh^T into the workspace (as cell_project), then
 * the gate kernel. Inputs are indexed as in cell_infer. */
static cg_op_status cell_cl(const cg_kernel_args *a, int gates) {
    const cg_op_call *call = a->call;
    const int w_first = cell_wih(gates);
    const int64_t B = call->inputs[0].dims[0], I = call->inputs[0].dims[1];
    const int64_t H = call->inputs[1].dims[1], GH = gates * H;
    if (B == 0 || H == 0) return CG_OP_OK;
    if (B * H > INT32_MAX || B * GH > INT32_MAX)
        return cg_op_fail(call, "%lld x %lld cells are too many for the OpenCL kernel", (long long)B, (long long)H);
    void *ws = a->workspace;
    const cl_int b32 = (cl_int)B, h32 = (cl_int)H, has_gi = I > 0;
    /* With I == 0 the input projection is zero and the kernel skips it. */
    if (has_gi && cg_host_cl_sgemm(a, 0, 1, B, GH, I, 1.0f, (void *)a->in[0], 0, I, (void *)a->in[w_first], 0, I, 0.0f,
                                   ws, 0, GH))
        return CG_OP_ERROR;
    if (cg_host_cl_sgemm(a, 0, 1, B, GH, H, 1.0f, (void *)a->in[1], 0, H, (void *)a->in[w_first + 1], 0, H, 0.0f, ws,
                         (size_t)(B * GH), GH))
        return CG_OP_ERROR;
    const char *name = gates == 3 ? "gru_cell_gates" : "lstm_cell_gates";
    cl_kernel k = cg_host_cl_kernel(a, cg_cl_rnn, "", name);
    if (!k) return CG_OP_ERROR;
    cl_mem ws_m = ws, b_ih = (cl_mem)a->in[w_first + 2], b_hh = (cl_mem)a->in[w_first + 3];
    cl_mem state = (cl_mem)a->in[gates == 3 ? 1 : 2], out0 = a->out[0];
    /* Without a c' output (LSTM), c_out is bound to h' and not written. */
    const cl_int write_c = call->n_outputs > 1;
    cl_mem c_out = write_c ? a->out[1] : a->out[0];
    /* The GRU takes the first 8 arguments, the LSTM all 10. */
    const cg_ops_cl_arg_value args[] = {
        CG_OPS_CL_ARG(b32),  CG_OPS_CL_ARG(h32),   CG_OPS_CL_ARG(has_gi), CG_OPS_CL_ARG(ws_m),  CG_OPS_CL_ARG(b_ih),
        CG_OPS_CL_ARG(b_hh), CG_OPS_CL_ARG(state), CG_OPS_CL_ARG(out0),   CG_OPS_CL_ARG(c_out), CG_OPS_CL_ARG(write_c)};
    if (cg_ops_cl_args(a, k, name, 0, gates == 3 ? 8 : 10, args)) return CG_OP_ERROR;
    /* One work-item per cell, in work-groups of up to 128. */
    const size_t local = cg_ops_cl_fit_work_group(cg_ops_cl_work_group(a, k, 128, 0), B * H, 1);
    return cg_ops_cl_launch_1d(a, k, name, B * H, local);
}

/* ==== conformance cases ==== */

/* Sizes of the cell cases, smallest first: batch, hidden, input, outputs
 * (LSTM: 1 or 2). */
static const struct {
    int64_t B, H, I;
    int n_out;
} cell_cases[] = {
    {1, 1, 1, 1},  {3, 1, 5, 2},   {3, 3, 1, 1},   {17, 3, 1, 2},  {1, 3, 5, 2},
    {3, 17, 5, 2}, {17, 17, 5, 1}, {17, 17, 1, 2}, {257, 3, 5, 2}, {1000, 17, 5, 2},
};

/* Case `index` of a cell with `gates` gates: inputs x, h, (c,) w_ih, w_hh,
 * b_ih, b_hh; x and the state in [-1, 1], weights and biases in [-0.5, 0.5]
 * so that the gates stay away from saturation. */
static int32_t cell_conform_case(int32_t index, cg_conform_case *c, int gates) {
    /* after the f32 cases, two with 16-bit weights (bf16, then f16) and two
     * with int8 ones (B 3 and 17, H 17, I 5; w_ih and w_hh i8, scales
     * appended) */
    const int32_t n_f32 = (int32_t)(sizeof cell_cases / sizeof cell_cases[0]);
    cg_op_dtype wdt = CG_OP_F32;
    if (index >= n_f32 && index < n_f32 + 4) {
        const cg_op_dtype wdts[4] = {(cg_op_dtype)CG_BF16, (cg_op_dtype)CG_F16, (cg_op_dtype)CG_I8, (cg_op_dtype)CG_I8};
        wdt = wdts[index - n_f32];
        index = index == n_f32 + 3 ? 6 : 5; /* B 3 (17), H 17, I 5 */
    }
    if (index < 0 || index >= n_f32) return 0;
    const int64_t B = cell_cases[index].B, H = cell_cases[index].H, I = cell_cases[index].I;
    const int n_state = gates == 3 ? 1 : 2;
    const int64_t dims[7][2] = {{B, I}, {B, H}, {B, H}, {gates * H, I}, {gates * H, H}, {gates * H, 0}, {gates * H, 0}};
    const int ndim[7] = {2, 2, 2, 2, 2, 1, 1};
    c->n_inputs = 5 + n_state;
    for (int i = 0; i < c->n_inputs; i++) {
        const int src = i <= n_state ? i : i + (2 - n_state); /* GRU skips c */
        cg_tensor_desc *d = &c->inputs[i];
        memset(d, 0, sizeof *d);
        d->dtype = src == 3 || src == 4 ? wdt : CG_OP_F32;
        d->ndim = ndim[src];
        for (int k = 0; k < d->ndim; k++) d->dims[k] = dims[src][k];
        c->lo[i] = i <= n_state ? -1.0 : -0.5;
        c->hi[i] = -c->lo[i];
    }
    c->n_outputs = gates == 3 ? 1 : cell_cases[index].n_out;
    c->attrs = NULL;
    if (wdt == (cg_op_dtype)CG_I8) {
        /* Weights within +-0.5 as above (q in [-127, 127], scales in
         * [0.001, 0.004]). The CPU rounds x and h to 8 bits, the
         * decomposition does not: the pre-activations differ by about
         * 5e-4 sqrt(K) (K <= 17), a few 1e-3 after the gates at most. */
        for (int w = 0; w < 2; w++) cg_ops_case_q8_weight(c, 1 + n_state + w);
        c->atol = 0.01;
    }
    return 1;
}

/* The row sums of int8 weights, made once (CPU). */
static cg_op_status cell_create(const cg_kernel_args *a, int gates, void **state, size_t *bytes) {
    const int w[2] = {cell_wih(gates), cell_wih(gates) + 1};
    return cg_ops_q8_state_create(a, w, 2, state, bytes);
}
static cg_op_status gru_cell_create(const cg_kernel_args *a, void **s, size_t *b) { return cell_create(a, 3, s, b); }
static cg_op_status lstm_cell_create(const cg_kernel_args *a, void **s, size_t *b) { return cell_create(a, 4, s, b); }

/* ---- gru_cell ---- */

static cg_op_status gru_cell_infer(cg_op_call *call) { return cell_infer(call, 3); }

static size_t gru_cell_workspace(const cg_op_call *call) { return cell_workspace(call, 3); }

/* The rows of a cell call, for cg_cpu_parallel_for. */
typedef struct cell_rows {
    int64_t H;
    const float *gi, *gh, *b_ih, *b_hh, *state;
    float *h_out, *c_out; /* c_out NULL: an LSTM without c' writes it over gh */
} cell_rows;

static void gru_rows(void *ctx, size_t begin, size_t end) {
    const cell_rows *p = ctx;
    const int64_t H = p->H;
    for (size_t b = begin; b < end; b++)
        cg_rnn_gru_row(H, p->gi + b * 3 * H, p->gh + b * 3 * H, p->b_ih, p->b_hh, p->state + b * H, p->h_out + b * H);
}

static void lstm_rows(void *ctx, size_t begin, size_t end) {
    const cell_rows *p = ctx;
    const int64_t H = p->H;
    for (size_t b = begin; b < end; b++) {
        /* Without a c' output, c' is written over the row's gh: element j of
         * it is written after the last read of gh[j]. */
        float *cn = p->c_out ? p->c_out + b * H : (float *)p->gh + b * 4 * H;
        cg_rnn_lstm_row(H, p->gi + b * 4 * H, p->gh + b * 4 * H, p->b_ih, p->b_hh, p->state + b * H, p->h_out + b * H,
                        cn);
    }
}

static cg_op_status gru_cell_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    int64_t B = call->inputs[0].dims[0], H = call->inputs[1].dims[1];
    float *gi, *gh;
    cell_project(a, 3, 2, &gi, &gh);
    cell_rows p = {H, gi, gh, a->in[4], a->in[5], a->in[1], a->out[0], NULL};
    cg_cpu_parallel_for((size_t)B, (size_t)(4096 / (3 * H) + 1), gru_rows, &p);
    return CG_OP_OK;
}

/* Narrow weights (bf16, f16, int8): widened to f32 (once per plan, as
 * they read only the weights), then the same cell on them: on OpenCL its
 * fused kernel. */
static cg_op_status cell_decompose_widened(cg_decomp *d, const cg_op_call *call, int gates) {
    const int w[2] = {cell_wih(gates), cell_wih(gates) + 1};
    const int s[2] = {cell_scale(call, gates, 0), cell_scale(call, gates, 1)};
    return cg_ops_decompose_widened(d, call, gates == 3 ? "gru_cell" : "lstm_cell", w, s, 2, cell_n_base(gates));
}

/* Nodes are emitted one statement at a time, so their order does not depend
 * on the compiler's order of evaluating arguments. */
static cg_op_status gru_cell_decompose(cg_decomp *d, const cg_op_call *call) {
    if (cell_narrow(call, 3)) return cell_decompose_widened(d, call, 3);
    int64_t H = cell_hidden(call, 3);
    if (H < 0) return cg_op_fail(call, "gru_cell decomposition needs a concrete hidden size");
    cg_ops_emitter e = {d, call, CG_OP_OK};
    int32_t x = cg_ops_emit_input(&e, 0), h = cg_ops_emit_input(&e, 1);
    int32_t w_ih = cg_ops_emit_input(&e, 2), w_hh = cg_ops_emit_input(&e, 3);
    int32_t b_ih = cg_ops_emit_input(&e, 4), b_hh = cg_ops_emit_input(&e, 5);
    int32_t gi = cg_ops_emit(&e, "linear", NULL, x, w_ih, b_ih);
    int32_t gh = cg_ops_emit(&e, "linear", NULL, h, w_hh, b_hh);
    int32_t gi_r = emit_cols(&e, gi, 0, H), gh_r = emit_cols(&e, gh, 0, H);
    int32_t r = cg_ops_emit(&e, "add", NULL, gi_r, gh_r, -1);
    r = cg_ops_emit(&e, "sigmoid", NULL, r, -1, -1);
    int32_t gi_z = emit_cols(&e, gi, H, 2 * H), gh_z = emit_cols(&e, gh, H, 2 * H);
    int32_t z = cg_ops_emit(&e, "add", NULL, gi_z, gh_z, -1);
    z = cg_ops_emit(&e, "sigmoid", NULL, z, -1, -1);
    int32_t gi_n = emit_cols(&e, gi, 2 * H, 3 * H), gh_n = emit_cols(&e, gh, 2 * H, 3 * H);
    int32_t n = cg_ops_emit(&e, "mul", NULL, r, gh_n, -1);
    n = cg_ops_emit(&e, "add", NULL, gi_n, n, -1);
    n = cg_ops_emit(&e, "tanh", NULL, n, -1, -1);
    int32_t one_minus_z = cg_ops_emit(&e, "affine", "alpha: -1.0, beta: 1.0", z, -1, -1);
    int32_t keep_n = cg_ops_emit(&e, "mul", NULL, one_minus_z, n, -1);
    int32_t keep_h = cg_ops_emit(&e, "mul", NULL, z, h, -1);
    int32_t h_new = cg_ops_emit(&e, "add", NULL, keep_n, keep_h, -1);
    cg_ops_emit_output(&e, 0, h_new);
    return e.st;
}

static cg_op_status gru_cell_cl(const cg_kernel_args *a) { return cell_cl(a, 3); }

/* The OpenCL cells multiply f32 weights (CLBlast's SGEMM); narrow ones go
 * to the decomposition, which widens them once and runs this kernel. */
static int cell_cl_supports(const cg_kernel_args *a, int gates) { return !cell_narrow(a->call, gates); }
static int gru_cell_cl_supports(const cg_kernel_args *a) { return cell_cl_supports(a, 3); }
static int lstm_cell_cl_supports(const cg_kernel_args *a) { return cell_cl_supports(a, 4); }

static int32_t gru_cell_conform(int32_t index, cg_conform_case *c) { return cell_conform_case(index, c, 3); }

static const cg_kernel_def gru_cell_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = gru_cell_workspace, .run = gru_cell_cpu,
              .create = gru_cell_create, .destroy = cg_ops_q8_state_destroy),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = gru_cell_workspace, .run = gru_cell_cl,
              .supports = gru_cell_cl_supports),
};
static const char *const gru_cell_inputs[] = {"x", "h", "w_ih", "w_hh", "b_ih", "b_hh", "scale_ih", "scale_hh", NULL};

const cg_op_def cg_op_gru_cell =
    CG_OP(.name = "gru_cell",
          .doc = "One step of a GRU, exactly torch.nn.GRUCell: inputs x [B, I], "
                 "h [B, H], w_ih [3H, I], w_hh [3H, H], b_ih [3H], b_hh [3H] (all f32; "
                 "the rows of the weights are the gates r, z, n in that order, as in "
                 "PyTorch's weight_ih / weight_hh). r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), "
                 "z = sigmoid(W_iz x + b_iz + W_hz h + b_hz), "
                 "n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), output h' = (1 - z) * n + z * h, "
                 "[B, H]. The weights may also be bf16 / f16, or i8 with f32 scales, one per row, "
                 "appended as inputs in the order of their weights (scale_ih [3H], scale_hh [3H]; "
                 "see linear). No attributes.",
          .min_inputs = 6, .max_inputs = 8, .min_outputs = 1, .max_outputs = 1, .input_names = gru_cell_inputs,
          .infer = gru_cell_infer, .decompose = gru_cell_decompose, CG_KERNELS(gru_cell_kernels),
          .conform_case = gru_cell_conform);

/* ---- lstm_cell ---- */

static cg_op_status lstm_cell_infer(cg_op_call *call) { return cell_infer(call, 4); }

static size_t lstm_cell_workspace(const cg_op_call *call) { return cell_workspace(call, 4); }

static cg_op_status lstm_cell_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    int64_t B = call->inputs[0].dims[0], H = call->inputs[1].dims[1];
    float *gi, *gh;
    cell_project(a, 4, 3, &gi, &gh);
    cell_rows p = {H, gi, gh, a->in[5], a->in[6], a->in[2], a->out[0], call->n_outputs > 1 ? a->out[1] : NULL};
    cg_cpu_parallel_for((size_t)B, (size_t)(4096 / (4 * H) + 1), lstm_rows, &p);
    return CG_OP_OK;
}

static cg_op_status lstm_cell_decompose(cg_decomp *d, const cg_op_call *call) {
    if (cell_narrow(call, 4)) return cell_decompose_widened(d, call, 4);
    int64_t H = cell_hidden(call, 4);
    if (H < 0) return cg_op_fail(call, "lstm_cell decomposition needs a concrete hidden size");
    cg_ops_emitter e = {d, call, CG_OP_OK};
    int32_t x = cg_ops_emit_input(&e, 0), h = cg_ops_emit_input(&e, 1), c = cg_ops_emit_input(&e, 2);
    int32_t w_ih = cg_ops_emit_input(&e, 3), w_hh = cg_ops_emit_input(&e, 4);
    int32_t b_ih = cg_ops_emit_input(&e, 5), b_hh = cg_ops_emit_input(&e, 6);
    int32_t gi = cg_ops_emit(&e, "linear", NULL, x, w_ih, b_ih);
    int32_t gh = cg_ops_emit(&e, "linear", NULL, h, w_hh, b_hh);
    int32_t gates = cg_ops_emit(&e, "add", NULL, gi, gh, -1);
    int32_t i = emit_cols(&e, gates, 0, H), f = emit_cols(&e, gates, H, 2 * H);
    int32_t g = emit_cols(&e, gates, 2 * H, 3 * H), o = emit_cols(&e, gates, 3 * H, 4 * H);
    i = cg_ops_emit(&e, "sigmoid", NULL, i, -1, -1);
    f = cg_ops_emit(&e, "sigmoid", NULL, f, -1, -1);
    g = cg_ops_emit(&e, "tanh", NULL, g, -1, -1);
    o = cg_ops_emit(&e, "sigmoid", NULL, o, -1, -1);
    int32_t keep_c = cg_ops_emit(&e, "mul", NULL, f, c, -1);
    int32_t write_c = cg_ops_emit(&e, "mul", NULL, i, g, -1);
    int32_t c_new = cg_ops_emit(&e, "add", NULL, keep_c, write_c, -1);
    int32_t h_new = cg_ops_emit(&e, "tanh", NULL, c_new, -1, -1);
    h_new = cg_ops_emit(&e, "mul", NULL, o, h_new, -1);
    cg_ops_emit_output(&e, 0, h_new);
    if (call->n_outputs > 1) cg_ops_emit_output(&e, 1, c_new);
    return e.st;
}

static cg_op_status lstm_cell_cl(const cg_kernel_args *a) { return cell_cl(a, 4); }

static int32_t lstm_cell_conform(int32_t index, cg_conform_case *c) { return cell_conform_case(index, c, 4); }

static const cg_kernel_def lstm_cell_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = lstm_cell_workspace, .run = lstm_cell_cpu,
              .create = lstm_cell_create, .destroy = cg_ops_q8_state_destroy),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = lstm_cell_workspace, .run = lstm_cell_cl,
              .supports = lstm_cell_cl_supports),
};
static const char *const lstm_cell_inputs[] = {"x",    "h",    "c",        "w_ih",     "w_hh",
                                               "b_ih", "b_hh", "scale_ih", "scale_hh", NULL};

const cg_op_def cg_op_lstm_cell =
    CG_OP(.name = "lstm_cell",
          .doc = "One step of an LSTM, exactly torch.nn.LSTMCell: inputs x [B, I], "
                 "h [B, H], c [B, H], w_ih [4H, I], w_hh [4H, H], b_ih [4H], b_hh [4H] "
                 "(all f32; the rows of the weights are the gates i, f, g, o in that "
                 "order, as in PyTorch). With a_k = W_ik x + b_ik + W_hk h + b_hk: "
                 "i = sigmoid(a_i), f = sigmoid(a_f), g = tanh(a_g), o = sigmoid(a_o), "
                 "c' = f * c + i * g, h' = o * tanh(c'). Outputs h' [B, H] and "
                 "(optional second output) c' [B, H]. The weights may also be bf16 / f16, or i8 "
                 "with f32 scales appended as for gru_cell (scale_ih [4H], scale_hh [4H]). "
                 "No attributes.",
          .min_inputs = 7, .max_inputs = 9, .min_outputs = 1, .max_outputs = 2, .input_names = lstm_cell_inputs,
          .infer = lstm_cell_infer, .decompose = lstm_cell_decompose, CG_KERNELS(lstm_cell_kernels),
          .conform_case = lstm_cell_conform);
