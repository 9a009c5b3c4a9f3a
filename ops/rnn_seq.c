/* Whole-sequence recurrent layers over packed sequences: gru and lstm,
 * exactly torch.nn.GRU / torch.nn.LSTM(batch_first=True) run on
 * pack_padded_sequence(x, lengths, enforce_sorted=False) and unpacked with
 * pad_packed_sequence(total_length=S). */
#include "ops_cl.h"
#include "rnn.cl.h"

#include "cpu/cpu_pool.h"

#include <string.h>

enum { ATTR_HIDDEN, ATTR_LAYERS, ATTR_BIDIRECTIONAL, ATTR_INITIAL };

/* Sizes of one call, all concrete (kernel and workspace). */
typedef struct seq_dims {
    int64_t B, S, I, H, L, D, G; /* G: gates, 3 (GRU) or 4 (LSTM) */
} seq_dims;

static seq_dims seq_dims_of(const cg_op_call *call, int gates) {
    seq_dims s;
    s.B = call->inputs[0].dims[0];
    s.S = call->inputs[0].dims[1];
    s.I = call->inputs[0].dims[2];
    s.H = call->attrs[ATTR_HIDDEN].i;
    s.L = call->attrs[ATTR_LAYERS].i;
    s.D = call->attrs[ATTR_BIDIRECTIONAL].i ? 2 : 1;
    s.G = gates;
    return s;
}

/* Input index of weight `which` (0 weight_ih, 1 weight_hh, 2 bias_ih,
 * 3 bias_hh) of layer k, direction d: PyTorch's _flat_weights order. */
static int weight_index(int64_t D, int64_t k, int64_t d, int which) { return (int)(2 + 4 * (k * D + d) + which); }

/* int8 weight matrices (all or none): their f32 scales follow the 4*L*D
 * weights, two per layer and direction (weight_ih's, weight_hh's) in the
 * same order. Whether the call has them, and the scales of input i. */
static int seq_q8(const cg_op_call *call) { return call->n_inputs > 2 && call->inputs[2].dtype == (cg_op_dtype)CG_I8; }
static int scale_index(const cg_op_call *call, int i) {
    const int64_t LD = call->attrs[ATTR_LAYERS].i * (call->attrs[ATTR_BIDIRECTIONAL].i ? 2 : 1);
    return (int)(2 + 4 * LD + 2 * ((i - 2) / 4) + (i - 2) % 4);
}

/* With attribute initial: the initial states, h0 (then c0 for the LSTM),
 * are the last inputs. Their count, and the input index of state i. */
static int seq_n_states(const cg_op_call *call, int gates) { return call->attrs[ATTR_INITIAL].i ? gates - 2 : 0; }
static int state_index(const cg_op_call *call, int gates, int i) {
    return call->n_inputs - seq_n_states(call, gates) + i;
}

/* Checks the initial states' dtype and shape [L*D, B, H]. */
static cg_op_status seq_infer_states(cg_op_call *call, int gates, int64_t LD, int64_t B, int64_t H) {
    static const char *const labels[2] = {"input 'h0' (initial h)", "input 'c0' (initial c)"};
    const int64_t want[3] = {LD, B, H};
    for (int i = 0; i < seq_n_states(call, gates); i++)
        if (cg_ops_expect_f32(call, labels[i], &call->inputs[state_index(call, gates, i)], 3, want)) return CG_OP_ERROR;
    return CG_OP_OK;
}

static cg_op_status seq_infer(cg_op_call *call, int gates) {
    const char *op = gates == 3 ? "gru" : "lstm";
    int64_t H = call->attrs[ATTR_HIDDEN].i, L = call->attrs[ATTR_LAYERS].i;
    int64_t bidir = call->attrs[ATTR_BIDIRECTIONAL].i, initial = call->attrs[ATTR_INITIAL].i;
    if (H < 1) return cg_op_fail(call, "attribute hidden must be >= 1, got %lld", (long long)H);
    if (L < 1 || L > 4096) return cg_op_fail(call, "attribute layers must be in [1, 4096], got %lld", (long long)L);
    if (bidir != 0 && bidir != 1)
        return cg_op_fail(call, "attribute bidirectional must be 0 or 1, got %lld", (long long)bidir);
    if (initial != 0 && initial != 1)
        return cg_op_fail(call, "attribute initial must be 0 or 1, got %lld", (long long)initial);
    int64_t D = bidir ? 2 : 1;
    const int q8 = seq_q8(call);
    int64_t want_inputs = 2 + (q8 ? 6 : 4) * L * D + seq_n_states(call, gates);
    if (call->n_inputs != want_inputs)
        return cg_op_fail(call,
                          "%s with layers = %lld, bidirectional = %lld, initial = %lld takes %lld inputs "
                          "(x, lengths, then %lld weights in PyTorch's state_dict order%s%s), got %d",
                          op, (long long)L, (long long)bidir, (long long)initial, (long long)want_inputs,
                          (long long)(4 * L * D), q8 ? ", then the scales of the i8 matrices" : "",
                          !initial     ? ""
                          : gates == 3 ? ", then h0"
                                       : ", then h0 and c0",
                          call->n_inputs);

    const cg_tensor_desc *x = &call->inputs[0], *len = &call->inputs[1];
    const int64_t any3[3] = {CG_DIM_UNKNOWN, CG_DIM_UNKNOWN, CG_DIM_UNKNOWN};
    if (cg_ops_expect_f32(call, "input 'x'", x, 3, any3)) return CG_OP_ERROR;
    if (len->dtype != CG_OP_I32 || len->ndim != 1 || !cg_dim_compatible(len->dims[0], x->dims[0])) {
        char got[128];
        cg_ops_format_dims(got, sizeof got, len);
        return cg_op_fail(call, "input 'lengths' must be i32 [B] with B = %lld (dim 0 of x), got %s %s",
                          (long long)x->dims[0], len->dtype == CG_OP_I32 ? "i32" : "f32", got);
    }
    int64_t B = cg_dim_unify(x->dims[0], len->dims[0]);
    int64_t GH = gates * H;
    if (seq_infer_states(call, gates, L * D, B, H)) return CG_OP_ERROR;
    for (int i = 0; i < seq_n_states(call, gates); i++)
        B = cg_dim_unify(B, call->inputs[state_index(call, gates, i)].dims[1]);

    static const char *const kinds[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int64_t k = 0; k < L; k++) {
        int64_t in_size = k == 0 ? x->dims[2] : D * H;
        const int64_t want[4][2] = {{GH, in_size}, {GH, H}, {GH, 0}, {GH, 0}};
        for (int64_t d = 0; d < D; d++)
            for (int which = 0; which < 4; which++) {
                char label[64];
                snprintf(label, sizeof label, "%s_l%lld%s", kinds[which], (long long)k, d ? "_reverse" : "");
                const int wi = weight_index(D, k, d, which);
                const cg_tensor_desc *w = &call->inputs[wi];
                if (which < 2 && q8 != (w->dtype == (cg_op_dtype)CG_I8))
                    return cg_op_fail(call,
                                      "%s is %s, but weight_ih_l0 is %s: the weight matrices are all i8 "
                                      "or none",
                                      label, cg_ops_dtype_name(w->dtype), cg_ops_dtype_name(call->inputs[2].dtype));
                char s_label[80];
                snprintf(s_label, sizeof s_label, "the scales of %s", label);
                if (which < 2 ? cg_ops_expect_qweight(call, label, w, want[which],
                                                      q8 ? &call->inputs[scale_index(call, wi)] : NULL, s_label)
                              : cg_ops_expect_f32(call, label, w, 1, want[which]))
                    return CG_OP_ERROR;
            }
    }

    const int64_t shapes[3][3] = {{B, x->dims[1], D * H}, {L * D, B, H}, {L * D, B, H}};
    for (int i = 0; i < call->n_outputs; i++) {
        cg_tensor_desc *o = &call->outputs[i];
        memset(o, 0, sizeof *o);
        o->dtype = CG_OP_F32;
        o->ndim = 3;
        memcpy(o->dims, shapes[i], sizeof shapes[i]);
    }
    return CG_OP_OK;
}

/* Workspace layout, every part 64-byte aligned:
 *   order  int32 [B]        batch rows sorted by length, longest first
 *   proj   f32 [B*S, G*H]   input projection of one layer and direction
 *   gh     f32 [B, G*H]     hidden projection of one step
 *   h, c   f32 [B, H]       state, rows in `order` (c for the LSTM only)
 *   layer  f32 [n, B*S*D*H] outputs of inner layers (n = min(L - 1, 2)) */
typedef struct seq_ws {
    int32_t *order;
    float *proj, *gh, *h, *c, *layer[2];
    void *q8; /* scratch of the int8 products (inputs or states quantized) */
} seq_ws;

/* Hands out the next 64-byte aligned part of `bytes` (NULL if 0 or when
 * only measuring, base == NULL). */
static void *ws_take(void *base, size_t *off, size_t bytes) {
    void *p = base && bytes ? (char *)base + *off : NULL;
    *off += (bytes + 63) & ~(size_t)63;
    return p;
}

/* Lays the workspace out at `base` into ws[0 .. D-1], one set of step
 * buffers per direction (the directions run at once) sharing `order` and
 * the layer outputs; returns its size in bytes. */
static size_t seq_ws_layout(const seq_dims *s, int q8, void *base, seq_ws *ws) {
    size_t B = (size_t)s->B, H = (size_t)s->H, GH = (size_t)(s->G * s->H);
    size_t layer = sizeof(float) * B * (size_t)s->S * (size_t)s->D * H;
    size_t off = 0;
    ws[0].order = ws_take(base, &off, sizeof(int32_t) * B);
    ws[0].layer[0] = ws_take(base, &off, s->L > 1 ? layer : 0);
    ws[0].layer[1] = ws_take(base, &off, s->L > 2 ? layer : 0);
    /* k of the widest int8 product: the layers' inputs (I, D*H) and states (H <= D*H) */
    const int64_t k_max = s->I > s->D * s->H ? s->I : s->D * s->H;
    for (int64_t d = 0; d < s->D; d++) {
        seq_ws *w = &ws[d];
        if (d) *w = ws[0];
        w->proj = ws_take(base, &off, sizeof(float) * B * (size_t)s->S * GH);
        w->gh = ws_take(base, &off, sizeof(float) * B * GH);
        w->h = ws_take(base, &off, sizeof(float) * B * H);
        w->c = ws_take(base, &off, s->G == 4 ? sizeof(float) * B * H : 0);
        w->q8 =
            ws_take(base, &off, q8 ? cg_ops_project_scratch((cg_op_dtype)CG_I8, s->B * s->S, s->G * s->H, k_max) : 0);
    }
    return off;
}

/* The rows of one time step, for cg_cpu_parallel_for: each row's gates and
 * state, and its output position. */
typedef struct seq_step {
    const seq_dims *s;
    const seq_ws *ws;
    int64_t t, d;
    const float *b_ih, *b_hh;
    float *out;
} seq_step;

static void seq_step_rows(void *ctx, size_t begin, size_t end) {
    const seq_step *p = ctx;
    const int64_t S = p->s->S, H = p->s->H, GH = p->s->G * p->s->H, DH = p->s->D * p->s->H;
    for (size_t jj = begin; jj < end; jj++) {
        const int64_t j = (int64_t)jj, row = p->ws->order[j];
        const float *gi = p->ws->proj + (row * S + p->t) * GH;
        float *h = p->ws->h + j * H;
        if (p->s->G == 4)
            cg_rnn_lstm_row(H, gi, p->ws->gh + j * GH, p->b_ih, p->b_hh, p->ws->c + j * H, h, p->ws->c + j * H);
        else cg_rnn_gru_row(H, gi, p->ws->gh + j * GH, p->b_ih, p->b_hh, h, h);
        memcpy(p->out + (row * S + p->t) * DH + p->d * H, h, sizeof(float) * (size_t)H);
    }
}

/* The state one direction starts from: zeros, or the rows of the initial
 * states `init` (h0 then c0 of this layer and direction, [B, H] in batch
 * order, NULL without) moved into the state's `order`. */
static void seq_start_state(const seq_dims *s, const seq_ws *ws, const float *const *init) {
    const size_t row = sizeof(float) * (size_t)s->H;
    float *state[2] = {ws->h, ws->c};
    for (int i = 0; i < s->G - 2; i++) {
        if (!init[i]) memset(state[i], 0, row * (size_t)s->B);
        else
            for (int64_t j = 0; j < s->B; j++) memcpy(state[i] + j * s->H, init[i] + ws->order[j] * s->H, row);
    }
}

/* Runs one direction of one layer from the states `init` (see
 * seq_start_state): reads `in` [B, S, in_size], writes its half of `out`
 * [B, S, D*H] at the valid positions, leaves the final state of each row
 * (in `order`) in ws->h / ws->c. */
static void seq_direction(const seq_dims *s, const seq_ws *ws, const int32_t *lengths, const float *in, int64_t in_size,
                          float *out, int64_t d, const void *w_ih, cg_op_dtype t_ih, const void *w_hh, cg_op_dtype t_hh,
                          const float *b_ih, const float *b_hh, const float *s_ih, const float *s_hh,
                          const float *const *init) {
    const int64_t B = s->B, S = s->S, H = s->H, GH = s->G * s->H;
    cg_ops_project_w(B * S, GH, in_size, in, in_size, w_ih, t_ih, in_size, s_ih, NULL, NULL, ws->q8, ws->proj, GH);
    seq_start_state(s, ws, init);
    int64_t max_len = B ? lengths[ws->order[0]] : 0;
    /* Rows active at step t (lengths > t) are a prefix of `order`: n of them. */
    int64_t n = d ? 0 : B;
    for (int64_t step = 0; step < max_len; step++) {
        int64_t t = d ? max_len - 1 - step : step;
        if (d)
            while (n < B && lengths[ws->order[n]] > t) n++;
        else
            while (n > 0 && lengths[ws->order[n - 1]] <= t) n--;
        cg_ops_project_w(n, GH, H, ws->h, H, w_hh, t_hh, H, s_hh, NULL, NULL, ws->q8, ws->gh, GH);
        /* rows in chunks of about 4096 gate units per task */
        seq_step st = {s, ws, t, d, b_ih, b_hh, out};
        cg_cpu_parallel_for((size_t)n, (size_t)(4096 / GH + 1), seq_step_rows, &st);
    }
}

/* One layer's directions, for cg_cpu_parallel_for: direction d on its own
 * buffers ws[d], writing its half of `out`; the two of a bidirectional
 * layer run at once (a decoder-sized layer's steps are too small to split). */
typedef struct seq_layer {
    const cg_kernel_args *a;
    const seq_dims *s;
    seq_ws *ws;
    const int32_t *lengths;
    const float *in;
    int64_t in_size, k;
    float *out;
    int gates;
} seq_layer;

static void seq_layer_dirs(void *ctx, size_t begin, size_t end) {
    const seq_layer *l = ctx;
    const cg_op_call *call = l->a->call;
    const void *const *in = (const void *const *)l->a->in;
    const int q8 = seq_q8(call), n_states = seq_n_states(call, l->gates);
    for (int64_t d = (int64_t)begin; d < (int64_t)end; d++) {
        const int w = weight_index(l->s->D, l->k, d, 0);
        const float *init[2] = {NULL, NULL};
        for (int i = 0; i < n_states; i++)
            init[i] = (const float *)in[state_index(call, l->gates, i)] + (l->k * l->s->D + d) * l->s->B * l->s->H;
        seq_direction(l->s, &l->ws[d], l->lengths, l->in, l->in_size, l->out, d, in[w], call->inputs[w].dtype,
                      in[w + 1], call->inputs[w + 1].dtype, in[w + 2], in[w + 3], q8 ? in[scale_index(call, w)] : NULL,
                      q8 ? in[scale_index(call, w + 1)] : NULL, init);
    }
}

static cg_op_status seq_run(const cg_kernel_args *a, int gates) {
    const cg_op_call *call = a->call;
    seq_dims s = seq_dims_of(call, gates);
    const int32_t *lengths = a->in[1];
    for (int64_t b = 0; b < s.B; b++)
        if (lengths[b] < 0 || lengths[b] > s.S) return cg_op_fail_range(call, 1, "lengths", lengths[b], b, 0, s.S);
    const int n_states = seq_n_states(call, gates);
    if (s.B == 0 || s.S == 0) {
        /* Nothing runs (every length is 0): the final states are the initial ones. */
        const size_t bytes = sizeof(float) * (size_t)(s.L * s.D * s.B * s.H);
        for (int i = 1; i < call->n_outputs && bytes; i++)
            if (i <= n_states) memcpy(a->out[i], a->in[state_index(call, gates, i - 1)], bytes);
            else memset(a->out[i], 0, bytes);
        return CG_OP_OK;
    }
    seq_ws ws[2];
    seq_ws_layout(&s, seq_q8(call), a->workspace, ws);

    /* Stable insertion sort of the rows by length, longest first. */
    int32_t *order = ws[0].order;
    for (int64_t b = 0; b < s.B; b++) {
        int64_t j = b;
        while (j > 0 && lengths[order[j - 1]] < lengths[b]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = (int32_t)b;
    }

    const int64_t H = s.H, DH = s.D * s.H;
    seq_layer l = {a, &s, ws, lengths, a->in[0], s.I, 0, NULL, gates};
    for (int64_t k = 0; k < s.L; k++) {
        l.k = k;
        l.out = k == s.L - 1 ? a->out[0] : ws[0].layer[k % 2];
        memset(l.out, 0, sizeof(float) * (size_t)(s.B * s.S * DH));
        cg_cpu_parallel_for((size_t)s.D, 1, seq_layer_dirs, &l);
        /* Final states h_n (output 1) and c_n (output 2), in batch order. */
        for (int64_t d = 0; d < s.D; d++)
            for (int i = 1; i < call->n_outputs; i++) {
                const float *state = i == 1 ? ws[d].h : ws[d].c;
                float *dst = (float *)a->out[i] + (k * s.D + d) * s.B * H;
                for (int64_t j = 0; j < s.B; j++) memcpy(dst + order[j] * H, state + j * H, sizeof(float) * (size_t)H);
            }
        l.in = l.out;
        l.in_size = DH;
    }
    return CG_OP_OK;
}

static size_t seq_workspace(const cg_op_call *call, int gates) {
    seq_dims s = seq_dims_of(call, gates);
    seq_ws ws[2];
    return seq_ws_layout(&s, seq_q8(call), NULL, ws);
}

/* ==== OpenCL ====
 * Per layer and direction: one SGEMM for the input projection of every
 * position, then per time step t = 0..S-1 one SGEMM gh = h W_hh^T over the
 * whole batch (skipped at t = 0 from zero states) and one fused step kernel
 * (rnn.cl) that masks rows by their length instead of sorting them: row b
 * updates at step t < lengths[b] (position t forward, lengths[b] - 1 - t
 * backward) and otherwise keeps its state and zeroes the padded position t.
 * The lengths stay on the device; a length outside [0, S] is clamped into it
 * there and recorded in the check words (the run fails as on the CPU). The
 * state lives in h_n / c_n when the node has them (at row k*D + d), else in
 * the workspace; given initial states are copied there before the steps. */

/* Workspace of the OpenCL kernel, offsets in floats (no host data):
 *   proj  [B*S, G*H], gh [B, G*H], h [B, H], c [B, H] (LSTM),
 *   layer [n, B*S*D*H] outputs of inner layers (n = min(L - 1, 2)). */
typedef struct seq_cl_ws {
    size_t proj, gh, h, c, layer[2], total;
} seq_cl_ws;

static seq_cl_ws seq_cl_layout(const seq_dims *s) {
    size_t B = (size_t)s->B, H = (size_t)s->H, GH = (size_t)(s->G * s->H);
    size_t layer = B * (size_t)s->S * (size_t)s->D * H;
    seq_cl_ws w;
    size_t off = 0;
#define SEQ_TAKE(field, n) (w.field = off, off += ((n) + 31) & ~(size_t)31)
    SEQ_TAKE(proj, B * (size_t)s->S * GH);
    SEQ_TAKE(gh, B * GH);
    SEQ_TAKE(h, B * H);
    SEQ_TAKE(c, s->G == 4 ? B * H : 0);
    SEQ_TAKE(layer[0], s->L > 1 ? layer : 0);
    SEQ_TAKE(layer[1], s->L > 2 ? layer : 0);
#undef SEQ_TAKE
    w.total = off;
    return w;
}

/* A weight matrix CLBlast cannot multiply as it is: 16-bit or int8. */
static int is_narrow(cg_op_dtype t) { return t != CG_OP_F32 && (cg_ops_weight_dtype(t) || t == (cg_op_dtype)CG_I8); }

/* Floats that narrow weight matrices take once widened, after the layout
 * (CLBlast multiplies f32): the call's weights in input order. */
static size_t seq_cl_wide_floats(const cg_op_call *call) {
    size_t n = 0;
    for (int i = 2; i < call->n_inputs; i++)
        if (is_narrow(call->inputs[i].dtype)) n += ((size_t)cg_desc_numel(&call->inputs[i]) + 31) & ~(size_t)31;
    return n;
}

static size_t seq_cl_workspace(const cg_op_call *call, int gates) {
    seq_dims s = seq_dims_of(call, gates);
    return sizeof(float) * (seq_cl_layout(&s).total + seq_cl_wide_floats(call));
}

/* Weight matrix `i` as the SGEMMs read it: the input's buffer, or for a
 * 16-bit or int8 one its floats widened (int8: times the row's scale) into
 * the workspace at *wide (advanced). */
static cg_op_status seq_cl_weight(const cg_kernel_args *a, int i, size_t *wide, void **mem, size_t *off) {
    const cg_tensor_desc *d = &a->call->inputs[i];
    *mem = (void *)a->in[i];
    *off = 0;
    if (!is_narrow(d->dtype)) return CG_OP_OK;
    const int q8 = d->dtype == (cg_op_dtype)CG_I8;
    const char *name = q8 ? "rnn_widen_q8" : "rnn_widen";
    cl_kernel k = cg_host_cl_kernel(a, cg_cl_rnn, "", name);
    if (!k) return CG_OP_ERROR;
    const cl_long n = (cl_long)cg_desc_numel(d), o = (cl_long)*wide, cols = (cl_long)d->dims[1];
    const cl_int bf16 = d->dtype == (cg_op_dtype)CG_BF16;
    const cl_mem w = (cl_mem)a->in[i], ws = (cl_mem)a->workspace;
    const cl_mem sc = q8 ? (cl_mem)a->in[scale_index(a->call, i)] : NULL;
    const cg_ops_cl_arg_value args[] = {CG_OPS_CL_ARG(n), CG_OPS_CL_ARG(w), CG_OPS_CL_ARG(bf16), CG_OPS_CL_ARG(ws),
                                        CG_OPS_CL_ARG(o)};
    const cg_ops_cl_arg_value args_q8[] = {CG_OPS_CL_ARG(n),  CG_OPS_CL_ARG(w),  CG_OPS_CL_ARG(cols),
                                           CG_OPS_CL_ARG(sc), CG_OPS_CL_ARG(ws), CG_OPS_CL_ARG(o)};
    const size_t local = cg_ops_cl_fit_work_group(cg_ops_cl_work_group(a, k, 128, 0), n, 1);
    if (n > 0 && ((q8 ? cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(args_q8), args_q8)
                      : cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(args), args)) ||
                  cg_ops_cl_launch_1d(a, k, name, n, local)))
        return CG_OP_ERROR;
    *mem = a->workspace;
    *off = *wide;
    *wide += ((size_t)n + 31) & ~(size_t)31;
    return CG_OP_OK;
}

/* Copies n floats from input or output buffer src at s_off to dst at d_off. */
static cg_op_status seq_cl_copy(const cg_kernel_args *a, cl_long n, void *src, size_t s_off, void *dst, size_t d_off) {
    cl_kernel k = cg_host_cl_kernel(a, cg_cl_rnn, "", "rnn_copy");
    if (!k) return CG_OP_ERROR;
    const cl_mem sm = src, dm = dst;
    const cl_long so = (cl_long)s_off, dof = (cl_long)d_off;
    const cg_ops_cl_arg_value args[] = {CG_OPS_CL_ARG(n), CG_OPS_CL_ARG(sm), CG_OPS_CL_ARG(so), CG_OPS_CL_ARG(dm),
                                        CG_OPS_CL_ARG(dof)};
    const size_t local = cg_ops_cl_fit_work_group(cg_ops_cl_work_group(a, k, 128, 0), n, 1);
    if (cg_ops_cl_args(a, k, "rnn_copy", 0, CG_OPS_CL_N_ARGS(args), args) ||
        cg_ops_cl_launch_1d(a, k, "rnn_copy", n, local))
        return CG_OP_ERROR;
    return CG_OP_OK;
}

/* A sequence of length 0: nothing runs, the final states are the initial
 * ones (zeros without). */
static cg_op_status seq_cl_empty_states(const cg_kernel_args *a, const seq_dims *s) {
    const cg_op_call *call = a->call;
    const int n_states = seq_n_states(call, (int)s->G);
    cl_kernel z = cg_host_cl_kernel(a, cg_cl_rnn, "", "rnn_zero");
    if (!z) return CG_OP_ERROR;
    const cl_long n = (cl_long)(s->L * s->D * s->B * s->H), off = 0;
    const size_t local = cg_ops_cl_fit_work_group(cg_ops_cl_work_group(a, z, 128, 0), n, 1);
    for (int i = 1; i < call->n_outputs; i++) {
        if (i <= n_states) {
            if (seq_cl_copy(a, n, (void *)a->in[state_index(call, (int)s->G, i - 1)], 0, a->out[i], 0))
                return CG_OP_ERROR;
            continue;
        }
        cl_mem m = a->out[i];
        const cg_ops_cl_arg_value args[] = {CG_OPS_CL_ARG(n), CG_OPS_CL_ARG(m), CG_OPS_CL_ARG(off)};
        if (cg_ops_cl_args(a, z, "rnn_zero", 0, CG_OPS_CL_N_ARGS(args), args) ||
            cg_ops_cl_launch_1d(a, z, "rnn_zero", n, local))
            return CG_OP_ERROR;
    }
    return CG_OP_OK;
}

static cg_op_status seq_run_cl(const cg_kernel_args *a, int gates) {
    const cg_op_call *call = a->call;
    const seq_dims s = seq_dims_of(call, gates);
    const int64_t B = s.B, S = s.S, H = s.H, GH = s.G * s.H, DH = s.D * s.H;
    if (B == 0) return CG_OP_OK;
    if (B > INT32_MAX || S > INT32_MAX || GH > INT32_MAX || DH > INT32_MAX)
        return cg_op_fail(call,
                          "sizes B = %lld, S = %lld, H = %lld are too large for the "
                          "OpenCL kernel",
                          (long long)B, (long long)S, (long long)H);
    const seq_cl_ws w = seq_cl_layout(&s);
    void *ws = a->workspace;
    const char *name = gates == 3 ? "gru_seq_step" : "lstm_seq_step";
    const int has_h = call->n_outputs > 1, has_c = call->n_outputs > 2;
    if (cg_ops_cl_check_range(a, 1, B, 0, S)) return CG_OP_ERROR;

    if (S == 0) return seq_cl_empty_states(a, &s);
    cl_kernel k = cg_host_cl_kernel(a, cg_cl_rnn, "", name);
    if (!k) return CG_OP_ERROR;
    /* Work-groups of up to 128 work-items, no wider than a launch needs. */
    const size_t local = cg_ops_cl_fit_work_group(cg_ops_cl_work_group(a, k, 128, 0), B * H, 1);

    const cl_int b32 = (cl_int)B, s32 = (cl_int)S, h32 = (cl_int)H, dh32 = (cl_int)DH;
    const cl_mem lengths = (cl_mem)a->in[1], ws_m = ws;
    const cl_long p_off = (cl_long)w.proj, g_off = (cl_long)w.gh;
    size_t wide = w.total; /* next free float for a widened weight */
    void *in = (void *)a->in[0];
    size_t in_off = 0;
    int64_t in_size = s.I;
    for (int64_t l = 0; l < s.L; l++) {
        void *out = l == s.L - 1 ? a->out[0] : ws;
        const size_t out_off = l == s.L - 1 ? 0 : w.layer[l % 2];
        for (int64_t d = 0; d < s.D; d++) {
            const int wi = weight_index(s.D, l, d, 0);
            void *w_ih, *w_hh;
            size_t ih_off, hh_off;
            if (seq_cl_weight(a, wi, &wide, &w_ih, &ih_off) || seq_cl_weight(a, wi + 1, &wide, &w_hh, &hh_off))
                return CG_OP_ERROR;
            const cl_mem b_ih = (cl_mem)a->in[wi + 2], b_hh = (cl_mem)a->in[wi + 3];
            const size_t state_off = (size_t)((l * s.D + d) * B * H);
            void *h_mem = has_h ? a->out[1] : ws, *c_mem = has_c ? a->out[2] : ws;
            const size_t h_off = has_h ? state_off : w.h, c_off = has_c ? state_off : w.c;
            const cl_int has_gi = in_size > 0, reverse = (cl_int)d, col = (cl_int)(d * H);
            const cl_mem h_cl = h_mem, c_cl = c_mem, out_cl = out;
            const cl_long h_off_l = (cl_long)h_off, c_off_l = (cl_long)c_off;
            const cl_long o_off = (cl_long)out_off;

            if (has_gi && cg_host_cl_sgemm(a, 0, 1, B * S, GH, in_size, 1.0f, in, in_off, in_size, w_ih, ih_off,
                                           in_size, 0.0f, ws, w.proj, GH))
                return CG_OP_ERROR;
            /* Arguments 3 (t) and 5 (first) change per step. */
            const cg_ops_cl_arg_value fixed[] = {CG_OPS_CL_ARG(b32), CG_OPS_CL_ARG(s32), CG_OPS_CL_ARG(h32)};
            const cg_ops_cl_arg_value tail_gru[] = {
                CG_OPS_CL_ARG(has_gi), CG_OPS_CL_ARG(lengths), CG_OPS_CL_ARG(ws_m),   CG_OPS_CL_ARG(p_off),
                CG_OPS_CL_ARG(ws_m),   CG_OPS_CL_ARG(g_off),   CG_OPS_CL_ARG(b_ih),   CG_OPS_CL_ARG(b_hh),
                CG_OPS_CL_ARG(h_cl),   CG_OPS_CL_ARG(h_off_l), CG_OPS_CL_ARG(out_cl), CG_OPS_CL_ARG(o_off),
                CG_OPS_CL_ARG(dh32),   CG_OPS_CL_ARG(col)};
            const cg_ops_cl_arg_value tail_lstm[] = {
                CG_OPS_CL_ARG(has_gi), CG_OPS_CL_ARG(lengths), CG_OPS_CL_ARG(ws_m), CG_OPS_CL_ARG(p_off),
                CG_OPS_CL_ARG(ws_m),   CG_OPS_CL_ARG(g_off),   CG_OPS_CL_ARG(b_ih), CG_OPS_CL_ARG(b_hh),
                CG_OPS_CL_ARG(h_cl),   CG_OPS_CL_ARG(h_off_l), CG_OPS_CL_ARG(c_cl), CG_OPS_CL_ARG(c_off_l),
                CG_OPS_CL_ARG(out_cl), CG_OPS_CL_ARG(o_off),   CG_OPS_CL_ARG(dh32), CG_OPS_CL_ARG(col)};
            if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(fixed), fixed) ||
                cg_ops_cl_arg(a, k, name, 4, sizeof reverse, &reverse) ||
                (gates == 3 ? cg_ops_cl_args(a, k, name, 6, CG_OPS_CL_N_ARGS(tail_gru), tail_gru)
                            : cg_ops_cl_args(a, k, name, 6, CG_OPS_CL_N_ARGS(tail_lstm), tail_lstm)))
                return CG_OP_ERROR;
            /* From given states: each layer and direction's rows into the state it updates. */
            const int n_states = seq_n_states(call, gates);
            const cl_long n_state = (cl_long)(B * H);
            if ((n_states > 0 &&
                 seq_cl_copy(a, n_state, (void *)a->in[state_index(call, gates, 0)], state_off, h_mem, h_off)) ||
                (n_states > 1 &&
                 seq_cl_copy(a, n_state, (void *)a->in[state_index(call, gates, 1)], state_off, c_mem, c_off)))
                return CG_OP_ERROR;
            for (int64_t t = 0; t < S; t++) {
                const cl_int t32 = (cl_int)t, first = t == 0 && !n_states;
                if (!first &&
                    cg_host_cl_sgemm(a, 0, 1, B, GH, H, 1.0f, h_mem, h_off, H, w_hh, hh_off, H, 0.0f, ws, w.gh, GH))
                    return CG_OP_ERROR;
                if (cg_ops_cl_arg(a, k, name, 3, sizeof t32, &t32) ||
                    cg_ops_cl_arg(a, k, name, 5, sizeof first, &first) || cg_ops_cl_launch_1d(a, k, name, B * H, local))
                    return CG_OP_ERROR;
            }
        }
        in = out;
        in_off = out_off;
        in_size = DH;
    }
    return CG_OP_OK;
}

static const cg_attr_def seq_attrs[] = {
    [ATTR_HIDDEN] =
        CG_ATTR(.name = "hidden", .type = CG_ATTR_INT, .required = 1, .doc = "hidden size H of each direction"),
    [ATTR_LAYERS] = CG_ATTR(.name = "layers", .type = CG_ATTR_INT, .default_int = 1, .doc = "number of stacked layers"),
    [ATTR_BIDIRECTIONAL] = CG_ATTR(.name = "bidirectional", .type = CG_ATTR_INT, .default_int = 0,
                                   .doc = "1: every layer also runs backwards (D = 2), 0: forward only"),
    [ATTR_INITIAL] = CG_ATTR(.name = "initial", .type = CG_ATTR_INT, .default_int = 0,
                             .doc = "1: the initial states h0 (and c0 for lstm), each [layers*D, B, H], are the "
                                    "last inputs; 0: the layers start from zeros"),
};
static const char *const seq_inputs[] = {"x", "lengths", NULL};

/* ==== conformance cases ====
 * At most CG_CONFORM_MAX_INPUTS (32) inputs: two bidirectional layers take
 * 18 (20 with h0 and c0). Lengths are uniform in [len_lo, len_hi] (-1: S);
 * x in [-1, 1], weights in [-0.5, 0.5]. Smallest first. */
static const struct {
    int64_t B, S, I, H, L, bidir;
    int n_out, len_lo, len_hi;
    const char *attrs; /* hidden H, layers L, bidirectional */
} seq_cases[] = {
    {1, 1, 1, 1, 1, 0, 3, 1, -1, "hidden: 1, layers: 1, bidirectional: 0"},
    {2, 3, 5, 3, 1, 1, 3, 0, 0, "hidden: 3, layers: 1, bidirectional: 1"},
    {1, 3, 5, 3, 1, 1, 3, -1, -1, "hidden: 3, layers: 1, bidirectional: 1"},
    {3, 3, 5, 3, 1, 1, 3, 0, -1, "hidden: 3, layers: 1, bidirectional: 1"},
    {3, 17, 5, 3, 3, 0, 3, 0, -1, "hidden: 3, layers: 3, bidirectional: 0"},
    {3, 5, 1, 17, 2, 0, 2, 0, -1, "hidden: 17, layers: 2, bidirectional: 0"},
    {17, 17, 3, 5, 2, 0, 3, 0, -1, "hidden: 5, layers: 2, bidirectional: 0"},
    {17, 3, 5, 17, 1, 1, 3, 0, -1, "hidden: 17, layers: 1, bidirectional: 1"},
    {17, 17, 5, 17, 1, 1, 1, 0, -1, "hidden: 17, layers: 1, bidirectional: 1"},
    {17, 17, 5, 17, 1, 0, 3, -1, -1, "hidden: 17, layers: 1, bidirectional: 0"},
    {257, 3, 5, 3, 1, 1, 3, 0, -1, "hidden: 3, layers: 1, bidirectional: 1"},
    {2, 1000, 5, 17, 1, 1, 3, 0, -1, "hidden: 17, layers: 1, bidirectional: 1"},
    {1000, 3, 5, 3, 1, 1, 3, 0, -1, "hidden: 3, layers: 1, bidirectional: 1"},
    {5, 7, 4, 6, 2, 1, 3, 0, -1, "hidden: 6, layers: 2, bidirectional: 1"},
    {2, 0, 3, 4, 1, 1, 3, 0, 0, "hidden: 4, layers: 1, bidirectional: 1"},
};

/* Cases from given initial states: valid case `base` (int8 matrices when
 * q8, as below) with attribute initial and h0 (and c0) in [-1, 1] as the
 * last inputs. Rows of length 0 (bases 3, 14) keep their initial state;
 * base 14 has S = 0, the initial states are the final ones; bases 5 and 8
 * keep some state in the workspace (no h_n or c_n output). */
static const struct {
    int base, q8;
    const char *attrs;
} seq_init_cases[] = {
    {0, 0, "hidden: 1, layers: 1, bidirectional: 0, initial: 1"},
    {3, 0, "hidden: 3, layers: 1, bidirectional: 1, initial: 1"},
    {4, 0, "hidden: 3, layers: 3, bidirectional: 0, initial: 1"},
    {5, 0, "hidden: 17, layers: 2, bidirectional: 0, initial: 1"},
    {7, 0, "hidden: 17, layers: 1, bidirectional: 1, initial: 1"},
    {8, 0, "hidden: 17, layers: 1, bidirectional: 1, initial: 1"},
    {13, 0, "hidden: 6, layers: 2, bidirectional: 1, initial: 1"},
    {14, 0, "hidden: 4, layers: 1, bidirectional: 1, initial: 1"},
    {6, 1, "hidden: 5, layers: 2, bidirectional: 0, initial: 1"},
};

static int32_t seq_case(int32_t index, cg_conform_case *c, int gates);

/* int8 weight matrices within +-0.5 (q in [-127, 127], scales in [0.001,
 * 0.004]). The CPU rounds inputs and states to 8 bits, OpenCL multiplies
 * the dequantized weights in f32 like the reference decomposition would: a
 * few 1e-3 apart over the steps. */
static void seq_case_q8(cg_conform_case *c) {
    const int n_w = c->n_inputs;
    for (int i = 2; i < n_w; i++)
        if (c->inputs[i].ndim == 2) cg_ops_case_q8_weight(c, i);
    c->atol = 0.02;
}

/* Initial-state case i (seq_init_cases); 0 past the last. */
static int32_t seq_init_case(int32_t i, cg_conform_case *c, int gates) {
    if (i < 0 || i >= (int32_t)(sizeof seq_init_cases / sizeof seq_init_cases[0])) return 0;
    const int base = seq_init_cases[i].base;
    seq_case(base, c, gates);
    if (seq_init_cases[i].q8) seq_case_q8(c);
    for (int k = 0; k < gates - 2; k++) {
        const int j = c->n_inputs++;
        cg_tensor_desc *st = &c->inputs[j];
        memset(st, 0, sizeof *st);
        st->dtype = CG_OP_F32;
        st->ndim = 3;
        st->dims[0] = seq_cases[base].L * (seq_cases[base].bidir + 1);
        st->dims[1] = seq_cases[base].B;
        st->dims[2] = seq_cases[base].H;
        c->lo[j] = -1.0;
        c->hi[j] = 1.0;
    }
    c->attrs = seq_init_cases[i].attrs;
    return 1;
}

/* After the valid cases: lengths past S, then negative lengths (errors),
 * then bf16 and f16 weight matrices (two layers; bidirectional), int8 ones
 * (the same two shapes), then the initial-state cases. */
static int32_t seq_conform(int32_t index, cg_conform_case *c, int gates) {
    const int32_t n = (int32_t)(sizeof seq_cases / sizeof seq_cases[0]);
    if (index >= n && index < n + 2) {
        seq_case(4, c, gates); /* B = 3, S = 17, 3 layers */
        const double S = (double)c->inputs[0].dims[1];
        return index == n ? cg_ops_error_case(c, 1, S + 1, S + 80) : cg_ops_error_case(c, 1, -3, -1);
    }
    if (index >= n + 2 && index < n + 4) {
        seq_case(index == n + 2 ? 6 : 7, c, gates); /* 2 layers, H 5; 1 bidirectional layer, H 17 */
        for (int i = 2; i < c->n_inputs; i++)
            if (c->inputs[i].ndim == 2)
                c->inputs[i].dtype = index == n + 2 ? (cg_op_dtype)CG_BF16 : (cg_op_dtype)CG_F16;
        return 1;
    }
    if (index >= n + 4 && index < n + 6) {
        seq_case(index == n + 4 ? 6 : 7, c, gates);
        seq_case_q8(c);
        return 1;
    }
    if (index >= n + 6) return seq_init_case(index - n - 6, c, gates);
    return seq_case(index, c, gates);
}

static int32_t seq_case(int32_t index, cg_conform_case *c, int gates) {
    if (index < 0 || index >= (int32_t)(sizeof seq_cases / sizeof seq_cases[0])) return 0;
    const int64_t B = seq_cases[index].B, S = seq_cases[index].S, I = seq_cases[index].I;
    const int64_t H = seq_cases[index].H, L = seq_cases[index].L, D = seq_cases[index].bidir + 1;
    memset(c->inputs, 0, sizeof c->inputs);
    c->n_inputs = (int32_t)(2 + 4 * L * D);
    c->inputs[0].dtype = CG_OP_F32;
    c->inputs[0].ndim = 3;
    c->inputs[0].dims[0] = B;
    c->inputs[0].dims[1] = S;
    c->inputs[0].dims[2] = I;
    c->lo[0] = -1.0;
    c->hi[0] = 1.0;
    c->inputs[1].dtype = CG_OP_I32;
    c->inputs[1].ndim = 1;
    c->inputs[1].dims[0] = B;
    c->lo[1] = seq_cases[index].len_lo < 0 ? (double)S : seq_cases[index].len_lo;
    c->hi[1] = seq_cases[index].len_hi < 0 ? (double)S : seq_cases[index].len_hi;
    for (int64_t l = 0; l < L; l++)
        for (int64_t d = 0; d < D; d++)
            for (int which = 0; which < 4; which++) {
                cg_tensor_desc *w = &c->inputs[weight_index(D, l, d, which)];
                w->dtype = CG_OP_F32;
                w->ndim = which < 2 ? 2 : 1;
                w->dims[0] = gates * H;
                w->dims[1] = which == 1 ? H : l == 0 ? I : D * H;
                c->lo[weight_index(D, l, d, which)] = -0.5;
                c->hi[weight_index(D, l, d, which)] = 0.5;
            }
    c->n_outputs = seq_cases[index].n_out < gates ? seq_cases[index].n_out : gates - 1;
    c->attrs = seq_cases[index].attrs;
    return 1;
}

/* ---- gru ---- */

static cg_op_status gru_infer(cg_op_call *call) { return seq_infer(call, 3); }
static size_t gru_workspace(const cg_op_call *call) { return seq_workspace(call, 3); }
static cg_op_status gru_cpu(const cg_kernel_args *a) { return seq_run(a, 3); }

static size_t gru_cl_workspace(const cg_op_call *call) { return seq_cl_workspace(call, 3); }
static cg_op_status gru_cl(const cg_kernel_args *a) { return seq_run_cl(a, 3); }
static int32_t gru_conform(int32_t index, cg_conform_case *c) { return seq_conform(index, c, 3); }

static const cg_kernel_def gru_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = gru_workspace, .run = gru_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = gru_cl_workspace, .run = gru_cl,
              .flags = CG_KERNEL_FLAG_CHECKS),
};

const cg_op_def cg_op_gru =
    CG_OP(.name = "gru",
          .doc = "A whole multi-layer GRU over a padded batch, exactly torch.nn.GRU("
                 "I, hidden, layers, batch_first=True, bidirectional) run on "
                 "pack_padded_sequence(x, lengths, enforce_sorted=False) and unpacked with "
                 "pad_packed_sequence(total_length=S); cells are those of gru_cell. Inputs: x f32 [B, S, I], lengths "
                 "i32 [B] (each in "
                 "[0, S]; one outside is a run-time error on every device), then the weights in the order "
                 "of PyTorch's state_dict: for each layer k, weight_ih_lk [3H, I_k], "
                 "weight_hh_lk [3H, H], bias_ih_lk [3H], bias_hh_lk [3H], followed (when "
                 "bidirectional) by the same four with the suffix _reverse; I_0 = I and "
                 "I_k = D*H above, so there are 2 + 4*layers*D inputs; the weight matrices may be "
                 "f32, bf16 or f16 (products in f32), or all i8 with their f32 scales (one per row, "
                 "as for linear) appended, weight_ih's then weight_hh's for each layer and direction "
                 "in the same order (2 + 6*layers*D inputs); the biases are f32; with initial = 1 the "
                 "last input is the initial state h0 f32 [layers*D, B, H] (PyTorch's h_0, row k*D + d "
                 "for layer k, direction d), else the layers start from zeros. Outputs: out "
                 "[B, S, D*H] (forward state in the first H columns, backward in the last "
                 "H; zero at positions t >= lengths[b]) and, optionally, h_n "
                 "[layers*D, B, H] (row k*D + d: the final state of layer k, direction d: "
                 "forward after position lengths[b]-1, backward after position 0 having "
                 "started at lengths[b]-1). A row of length 0 gives zeros in out and its initial "
                 "state as h_n. Attributes: hidden (required), layers (default 1), bidirectional "
                 "(0 or 1, default 0), initial (0 or 1, default 0).",
          .min_inputs = 6, .max_inputs = -1, .min_outputs = 1, .max_outputs = 2, .input_names = seq_inputs,
          CG_ATTRS(seq_attrs), .infer = gru_infer, CG_KERNELS(gru_kernels), .conform_case = gru_conform);

/* ---- lstm ---- */

static cg_op_status lstm_infer(cg_op_call *call) { return seq_infer(call, 4); }
static size_t lstm_workspace(const cg_op_call *call) { return seq_workspace(call, 4); }
static cg_op_status lstm_cpu(const cg_kernel_args *a) { return seq_run(a, 4); }

static size_t lstm_cl_workspace(const cg_op_call *call) { return seq_cl_workspace(call, 4); }
static cg_op_status lstm_cl(const cg_kernel_args *a) { return seq_run_cl(a, 4); }
static int32_t lstm_conform(int32_t index, cg_conform_case *c) { return seq_conform(index, c, 4); }

static const cg_kernel_def lstm_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .workspace = lstm_workspace, .run = lstm_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .workspace = lstm_cl_workspace, .run = lstm_cl,
              .flags = CG_KERNEL_FLAG_CHECKS),
};

const cg_op_def cg_op_lstm =
    CG_OP(.name = "lstm",
          .doc = "A whole multi-layer LSTM over a padded batch, exactly torch.nn.LSTM("
                 "I, hidden, layers, batch_first=True, bidirectional) run on "
                 "pack_padded_sequence(x, lengths, enforce_sorted=False) and unpacked with "
                 "pad_packed_sequence(total_length=S); "
                 "cells are those of lstm_cell (gates i, f, g, o). Inputs: x f32 [B, S, I], "
                 "lengths i32 [B] (each in [0, S]; one outside is a run-time error on "
                 "every device), then "
                 "the weights in the order of PyTorch's state_dict: for each layer k, "
                 "weight_ih_lk [4H, I_k], weight_hh_lk [4H, H], bias_ih_lk [4H], bias_hh_lk "
                 "[4H], followed (when bidirectional) by the same four with the suffix "
                 "_reverse; I_0 = I and I_k = D*H above, so there are 2 + 4*layers*D inputs; "
                 "the weight matrices may be f32, bf16 or f16 (products in f32), or all i8 with "
                 "their scales appended as for gru; the biases are f32; with initial = 1 the last "
                 "inputs are the initial states h0 and c0, each f32 [layers*D, B, H] (PyTorch's h_0 "
                 "and c_0), else the layers start from zeros. "
                 "Outputs: out [B, S, D*H] (forward h in the first H columns, backward in the "
                 "last H; zero at positions t >= lengths[b]), then optionally h_n and c_n, "
                 "each [layers*D, B, H] (row k*D + d: the final h / c of layer k, direction "
                 "d: forward after position lengths[b]-1, backward after position 0 having "
                 "started at lengths[b]-1). A row of length 0 gives zeros in out and its initial "
                 "states as h_n and c_n. Attributes: hidden (required), layers (default 1), "
                 "bidirectional (0 or 1, default 0), initial (0 or 1, default 0).",
          .min_inputs = 6, .max_inputs = -1, .min_outputs = 1, .max_outputs = 3, .input_names = seq_inputs,
          CG_ATTRS(seq_attrs), .infer = lstm_infer, CG_KERNELS(lstm_kernels), .conform_case = lstm_conform);
