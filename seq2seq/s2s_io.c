/* The decoder's I/O binding (s2s_batch.h): the batch's live rows into the
 * decoder step's input tensors by position, the step run by position
 * (cg_plan_run_indexed: no name is compared per step), and its outputs
 * back for the search and the next step's state. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "s2s_batch.h"
#include "tensor.h"

static cg_status tensor(cg_dtype dt, int nd, int64_t d0, int64_t d1, int64_t d2, cg_tensor **out) {
    int64_t dims[3] = {d0, d1, d2};
    return cg_tensor_create(dt, nd, dims, out);
}

void s2s_io_free(s2s_io *x) {
    for (int i = 0; x->in && x->f && i < x->f->n_in; i++)
        if (!x->borrowed || !x->borrowed[i]) cg_tensor_free(x->in[i]);
    for (int i = 0; x->out && x->f && i < x->f->n_out; i++) cg_tensor_free(x->out[i]);
    free(x->in);
    free(x->out);
    free(x->borrowed);
    free(x->idx);
    free(x->idx_c);
    free(x->in_c);
    free(x->out_run);
    memset(x, 0, sizeof *x);
}

/* The arrays (each at least one long: calloc(0) may be NULL). */
static cg_status io_alloc(s2s_io *x, const s2s_dec_iface *f) {
    size_t ni = (size_t)f->n_in + 1, no = (size_t)f->n_out + 1;
    x->f = f;
    x->in = calloc(ni, sizeof *x->in);
    x->out = calloc(no, sizeof *x->out);
    x->borrowed = calloc(ni, sizeof *x->borrowed);
    x->idx = calloc(ni, sizeof *x->idx);
    x->idx_c = calloc(ni, sizeof *x->idx_c);
    x->in_c = calloc(ni, sizeof *x->in_c);
    x->out_run = calloc(no, sizeof *x->out_run);
    if (!x->in || !x->out || !x->borrowed || !x->idx || !x->idx_c || !x->in_c || !x->out_run) {
        s2s_io_free(x);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding");
    }
    return CG_OK;
}

/* Input k's tensor: the encoder's per sentence, else one of ours. */
static cg_status io_input(s2s_batch *bt, s2s_io *x, int k) {
    const s2s_config *c = &bt->m->shared->cfg;
    const s2s_dec_iface *f = x->f;
    const int rows = bt->max_rows;
    if (k == f->keys || k == f->kproj || k == f->len) {
        x->in[k] = k == f->keys ? bt->keys_t : k == f->kproj ? bt->kproj_t : bt->elen;
        x->borrowed[k] = 1;
        if (x->in[k]) return CG_OK;
        cg_graph *g = cg_model_graph(bt->m->shared->model, f == &bt->m->shared->iface.dec ? "decoder" : "decoder_logp");
        return cg_error(CG_ERR_VERIFY, "%s: graph '%s' takes '%s' per sentence, which the encoder does not output",
                        bt->m->shared->dir, cg_graph_name(g), cg_graph_input_name(g, k));
    }
    if (k == f->y || k == f->parent || k == f->sent) return tensor(CG_I32, 1, rows, 0, 0, &x->in[k]);
    if (k == f->pos) return tensor(CG_F32, 1, rows, 0, 0, &x->in[k]);
    /* states; a stream's join step gives the last step's rows and then
     * the joining sentences' */
    return tensor(CG_F32, 2, bt->stream ? 2 * rows : rows, c->hidden, 0, &x->in[k]);
}

static cg_status io_output(s2s_batch *bt, s2s_io *x, int k) {
    const s2s_config *c = &bt->m->shared->cfg;
    const s2s_dec_iface *f = x->f;
    const int rows = bt->max_rows;
    if (k == f->logp) return tensor(CG_F32, 2, rows, c->v_tgt, 0, &x->out[k]);
    if (k == f->top_v) return tensor(CG_F32, 2, rows, f->top_k, 0, &x->out[k]);
    if (k == f->top_i) return tensor(CG_I32, 2, rows, f->top_k, 0, &x->out[k]);
    if (k == f->a) return tensor(CG_F32, 2, rows, bt->S, 0, &x->out[k]);
    return tensor(CG_F32, 2, rows, c->hidden, 0, &x->out[k]);
}

/* The outputs nobody reads stay on their device: a carried state, and the
 * attention when it is not returned. */
cg_status s2s_io_init(s2s_batch *bt, const s2s_dec_iface *f) {
    s2s_io *x = &bt->x;
    memset(x, 0, sizeof *x);
    cg_status st = io_alloc(x, f);
    if (st) return st;
    for (int k = 0; !st && k < f->n_in; k++) st = io_input(bt, x, k);
    for (int k = 0; !st && k < f->n_out; k++) st = io_output(bt, x, k);
    for (int k = 0; !st && k < f->n_in; k++) {
        x->idx[k] = k;
        if (!f->state[k]) {
            x->idx_c[x->n_in_c] = k;
            x->in_c[x->n_in_c++] = x->in[k];
        }
    }
    for (int q = 0; !st && q < f->n_out; q++)
        x->out_run[q] = (f->state_out[q] && !bt->stream) || (q == f->a && !bt->o->attention) ? NULL : x->out[q];
    if (st) s2s_io_free(x);
    return st;
}

/* Sets every decoder row tensor's leading dim to `rows` (buffers hold
 * more); the encoder's, per sentence, keep theirs. */
static void io_rows(s2s_io *x, int rows) {
    for (int k = 0; k < x->f->n_in; k++)
        if (!x->borrowed[k]) x->in[k]->dims[0] = rows;
    for (int k = 0; k < x->f->n_out; k++) x->out[k]->dims[0] = rows;
}

static int bucket(int r, int max) {
    int b = 1;
    while (b < r) b *= 2;
    return b < max ? b : max;
}

static float *in_f32(const s2s_io *x, int k) { return (float *)x->in[k]->data; }
static int32_t *in_i32(const s2s_io *x, int k) { return (int32_t *)x->in[k]->data; }

/* Buffer row r of the state inputs from live row rr's state. */
static void give_state(s2s_batch *bt, int r, int rr) {
    const s2s_config *c = &bt->m->shared->cfg;
    const int H = c->hidden, L = c->decoder_layers;
    const s2s_io *x = &bt->x;
    const s2s_dec_iface *f = x->f;
    const float *rs = bt->state + (size_t)rr * s2s_state_row(bt);
    const size_t bytes = sizeof(float) * (size_t)H;
    for (int l = 0; l < L; l++) {
        memcpy(in_f32(x, f->h[l]) + (size_t)r * H, rs + (size_t)l * H, bytes);
        if (f->c[l] >= 0) memcpy(in_f32(x, f->c[l]) + (size_t)r * H, rs + (size_t)(L + l) * H, bytes);
    }
    if (f->htilde >= 0) memcpy(in_f32(x, f->htilde) + (size_t)r * H, rs + (size_t)(2 * L) * H, bytes);
}

/* Fills buffer row r of the decoder's inputs from live row rr. The
 * encoder's keys stay where they are, one row per sentence, and the row
 * names its sentence; the state is given at the first step only, then
 * carried on the device and reordered by `parent`. */
static void gather_row(s2s_batch *bt, int r, int rr) {
    const s2s_io *x = &bt->x;
    const s2s_dec_iface *f = x->f;
    const s2s_row *w = &bt->rows[rr];
    in_i32(x, f->y)[r] = w->h.n ? w->h.toks[w->h.n - 1] : bt->m->shared->cfg.bos_id;
    if (f->sent >= 0) in_i32(x, f->sent)[r] = w->sent;
    if (f->pos >= 0) in_f32(x, f->pos)[r] = (float)w->h.n; /* the row's own step */
    const int first = bt->t == 0 && !bt->stream;
    in_i32(x, f->parent)[r] = first ? rr : bt->s.parent[rr];
    if (first) give_state(bt, r, rr);
}

cg_status s2s_io_step(s2s_batch *bt) {
    s2s_io *x = &bt->x;
    const s2s_dec_iface *f = x->f;
    int Rb = bucket(bt->R, bt->max_rows);
    /* a stream's join step gives the state it built (s2s_stream.c) */
    const int with_state = bt->stream ? bt->state_given > 0 : bt->t == 0;
    io_rows(x, Rb);
    for (int k = 0; bt->stream && with_state && k < f->n_in; k++)
        if (f->state[k]) x->in[k]->dims[0] = bt->state_given;
    for (int r = 0; r < Rb; r++) gather_row(bt, r, r < bt->R ? r : bt->R - 1);
    cg_plan_binding b = {.struct_size = sizeof b,
                         .n_inputs = with_state ? f->n_in : x->n_in_c,
                         .input_index = with_state ? x->idx : x->idx_c,
                         .inputs = with_state ? x->in : x->in_c,
                         .n_outputs = f->n_out,
                         .outputs = x->out_run};
    return cg_plan_run_indexed(bt->dec, &b);
}

void s2s_io_scores(const s2s_batch *bt, s2s_scores *so) {
    const s2s_io *x = &bt->x;
    const s2s_dec_iface *f = x->f;
    memset(so, 0, sizeof *so);
    so->TK = f->logp < 0 ? f->top_k : 0;
    so->V = bt->m->shared->cfg.v_tgt;
    so->S = bt->S;
    if (so->TK) {
        so->top_v = cg_tensor_data_const(x->out[f->top_v]);
        so->top_i = cg_tensor_data_const(x->out[f->top_i]);
    } else {
        so->logp = cg_tensor_data_const(x->out[f->logp]);
    }
    so->att = f->a >= 0 && bt->o->attention ? cg_tensor_data_const(x->out[f->a]) : NULL;
}

cg_status s2s_io_rebind(s2s_batch *bt) {
    s2s_io *x = &bt->x;
    const s2s_dec_iface *f = x->f;
    if (f->keys >= 0) x->in[f->keys] = bt->keys_t;
    if (f->kproj >= 0) x->in[f->kproj] = bt->kproj_t;
    if (f->len >= 0) x->in[f->len] = bt->elen;
    for (int i = 0; i < x->n_in_c; i++) x->in_c[i] = x->in[x->idx_c[i]];
    if (f->a < 0 || cg_tensor_dim(x->out[f->a], 1) == bt->S) return CG_OK;
    cg_tensor_free(x->out[f->a]);
    x->out[f->a] = NULL;
    cg_status st = tensor(CG_F32, 2, bt->max_rows, bt->S, 0, &x->out[f->a]);
    x->out_run[f->a] = bt->o->attention ? x->out[f->a] : NULL;
    return st;
}
