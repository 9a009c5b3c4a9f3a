/* The forecaster's graph builder: from a configuration, the IR text of one
 * graph, `step` (the spec's step t: attend over the window, one step of
 * every RNN layer, the prediction), exactly as the spec's equations. Text,
 * not builder calls, so `clgraph forecast-graph` shows users the very graph
 * that runs, and an edited model.cg replaces it.
 *
 * Inputs: x f32[B, C] (the normalised x_t), and the state of step t-1, which
 * the runner carries from the outputs of the same name with `_new`
 * (cg_plan_carry), so that on a device it never leaves it: h<l> f32[B, H]
 * (c<l> for lstm) for each layer l, and, with attention, the window of
 * previous top-layer states `ring` f32[B, W, H] (W = window), newest first:
 * ring[:, k] = h_{t-2-k}, of which the first `count` i32[B] are valid
 * (min(W, t - 2)); additive attention also carries `ring_proj` f32[B, W, A],
 * the same states projected once (W_k h + b_k) instead of every step.
 * Outputs: y f32[B, C] (the normalised prediction y_{t+1}), a f32[B, W] (the
 * attention weights p, newest first; 0 past `count`), the new states, and
 * ring_new = [h_{t-1}; ring[:, :W-1]] (the lookup joins the window). */
#include <stdio.h>
#include <stdlib.h>

#include "error.h"
#include "fc.h"
#include "strbuf.h"

static void param2(cg_strbuf *o, const char *name, int a, int b) {
    cg_strbuf_put(o, "  param %s: f32[%d, %d] = \"%s\"\n", name, a, b, name);
}

static void param1(cg_strbuf *o, const char *name, int a) {
    cg_strbuf_put(o, "  param %s: f32[%d] = \"%s\"\n", name, a, name);
}

static int gates(const fc_config *c) { return (c->cell == FC_RNN ? 1 : c->cell == FC_GRU ? 3 : 4) * c->hidden; }

static void inputs(cg_strbuf *o, const fc_config *c) {
    int H = c->hidden, W = c->window, att = c->attention != FC_NONE;
    cg_strbuf_put(o, "graph step {\n  input x: f32[B, %d]\n", c->C);
    for (int l = 0; l < c->layers; l++) cg_strbuf_put(o, "  input h%d: f32[B, %d]\n", l, H);
    if (c->cell == FC_LSTM)
        for (int l = 0; l < c->layers; l++) cg_strbuf_put(o, "  input c%d: f32[B, %d]\n", l, H);
    if (att) cg_strbuf_put(o, "  input count: i32[B]\n  input ring: f32[B, %d, %d]\n", W, H);
    if (c->attention == FC_ADDITIVE) cg_strbuf_put(o, "  input ring_proj: f32[B, %d, %d]\n", W, c->attention_dim);
}

static void params(cg_strbuf *o, const fc_config *c) {
    int H = c->hidden, G = gates(c), att = c->attention != FC_NONE;
    for (int l = 0; l < c->layers; l++) {
        char n[64];
        snprintf(n, sizeof n, "rnn.weight_ih_l%d", l);
        param2(o, n, G, l ? H : c->C + (att ? H : 0));
        snprintf(n, sizeof n, "rnn.weight_hh_l%d", l);
        param2(o, n, G, H);
        snprintf(n, sizeof n, "rnn.bias_ih_l%d", l);
        param1(o, n, G);
        snprintf(n, sizeof n, "rnn.bias_hh_l%d", l);
        param1(o, n, G);
    }
    if (c->attention == FC_ADDITIVE) {
        param2(o, "attention.W_q.weight", c->attention_dim, H);
        param1(o, "attention.W_q.bias", c->attention_dim);
        param2(o, "attention.W_k.weight", c->attention_dim, H);
        param1(o, "attention.W_k.bias", c->attention_dim);
        param2(o, "attention.v.weight", 1, c->attention_dim);
    } else if (c->attention == FC_GENERAL) {
        param2(o, "attention.W.weight", H, H);
    }
    param2(o, "out.weight", c->C, att ? 2 * H : H);
    param1(o, "out.bias", c->C);
}

/* Steps 1-3: p over the window for the lookup u = h_{t-1} (the top layer's
 * state input), and the context c. */
static void attend(cg_strbuf *o, const fc_config *c) {
    int top = c->layers - 1;
    switch (c->attention) {
    case FC_ADDITIVE:
        cg_strbuf_put(o,
                      "  attn_e: e = attn_score(h%d, ring_proj, attention.W_q.weight, attention.W_q.bias, "
                      "attention.v.weight) {kind: \"additive\"}\n",
                      top);
        break;
    case FC_GENERAL:
        cg_strbuf_put(o, "  attn_e: e = attn_score(h%d, ring, attention.W.weight) {kind: \"general\"}\n", top);
        break;
    default:
        cg_strbuf_put(o, "  attn_e: e = attn_score(h%d, ring) {kind: \"%s\"}\n", top,
                      cg_fc_attention_name(c->attention));
    }
    cg_strbuf_put(o, "  attn_mask: mask = length_mask(count, e)\n");
    cg_strbuf_put(o, "  attn_a: a = softmax(e, mask) {axis: -1}\n");
    cg_strbuf_put(o, "  attn_c: ctx = attn_context(a, ring)\n");
}

/* Step 4: one step of layer l on input `in`. */
static void cell(cg_strbuf *o, const fc_config *c, int l, const char *in) {
    char w[4][64];
    static const char *const k[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int i = 0; i < 4; i++) snprintf(w[i], sizeof w[i], "rnn.%s_l%d", k[i], l);
    switch (c->cell) {
    case FC_LSTM:
        cg_strbuf_put(o, "  rnn%d: h%d_new, c%d_new = lstm_cell(%s, h%d, c%d, %s, %s, %s, %s)\n", l, l, l, in, l, l,
                      w[0], w[1], w[2], w[3]);
        break;
    case FC_GRU:
        cg_strbuf_put(o, "  rnn%d: h%d_new = gru_cell(%s, h%d, %s, %s, %s, %s)\n", l, l, in, l, w[0], w[1], w[2], w[3]);
        break;
    case FC_RNN: /* torch.nn.RNN, tanh: h' = tanh(W_ih x + b_ih + W_hh h + b_hh) */
        cg_strbuf_put(o, "  rnn%d_i = linear(%s, %s, %s)\n", l, in, w[0], w[2]);
        cg_strbuf_put(o, "  rnn%d_h = linear(h%d, %s, %s)\n", l, l, w[1], w[3]);
        cg_strbuf_put(o, "  rnn%d_s = add(rnn%d_i, rnn%d_h)\n", l, l, l);
        cg_strbuf_put(o, "  rnn%d: h%d_new = tanh(rnn%d_s)\n", l, l, l);
        break;
    }
}

/* ring_new = [u; ring[:, :W-1]] for a window `name` of width D per state. */
static void push(cg_strbuf *o, const fc_config *c, const char *name, const char *u, int D) {
    if (c->window == 1) {
        cg_strbuf_put(o, "  %s_new = reshape(%s) {shape: [0, 1, %d]}\n", name, u, D);
        return;
    }
    cg_strbuf_put(o, "  %s_u = reshape(%s) {shape: [0, 1, %d]}\n", name, u, D);
    cg_strbuf_put(o, "  %s_old = slice(%s) {axis: 1, start: 0, end: %d}\n", name, name, c->window - 1);
    cg_strbuf_put(o, "  %s_new = concat(%s_u, %s_old) {axis: 1}\n", name, name, name);
}

cg_status cg_fc_build_text(const fc_config *c, char **out) {
    *out = NULL;
    cg_strbuf o = {0};
    int att = c->attention != FC_NONE, top = c->layers - 1;
    const char *cellname = c->cell == FC_RNN ? "rnn" : c->cell == FC_GRU ? "gru" : "lstm";
    cg_strbuf_put(&o, "# Forecaster step t (%s, %d layer%s, attention %s", cellname, c->layers,
                  c->layers > 1 ? "s" : "", cg_fc_attention_name(c->attention));
    if (att) cg_strbuf_put(&o, " over the last %d states", c->window);
    cg_strbuf_put(
        &o, "):\n# %s\n",
        att ? "u = h_{t-1}; p = softmax(f(v_i, u)) over the window; c = sum p_i v_i; h_t = rnn([x_t; c], state); "
              "y_{t+1} = out([h_t; c])."
            : "h_t = rnn(x_t, state); y_{t+1} = out(h_t).");
    inputs(&o, c);
    params(&o, c);
    if (att) attend(&o, c);
    if (att) cg_strbuf_put(&o, "  rnn_in = concat(x, ctx) {axis: 1}\n");
    for (int l = 0; l < c->layers; l++) {
        char in[32];
        if (l == 0) snprintf(in, sizeof in, "%s", att ? "rnn_in" : "x");
        else snprintf(in, sizeof in, "h%d_new", l - 1);
        cell(&o, c, l, in);
    }
    if (att) {
        cg_strbuf_put(&o, "  out_in = concat(h%d_new, ctx) {axis: 1}\n", top);
        cg_strbuf_put(&o, "  out: y = linear(out_in, out.weight, out.bias)\n");
        char u[16];
        snprintf(u, sizeof u, "h%d", top);
        push(&o, c, "ring", u, c->hidden);
        if (c->attention == FC_ADDITIVE) {
            cg_strbuf_put(&o, "  ring_proj_k = linear(h%d, attention.W_k.weight, attention.W_k.bias)\n", top);
            push(&o, c, "ring_proj", "ring_proj_k", c->attention_dim);
        }
    } else {
        cg_strbuf_put(&o, "  out: y = linear(h%d_new, out.weight, out.bias)\n", top);
    }
    cg_strbuf_put(&o, "  output y");
    if (att) cg_strbuf_put(&o, ", a");
    for (int l = 0; l < c->layers; l++) cg_strbuf_put(&o, ", h%d_new", l);
    if (c->cell == FC_LSTM)
        for (int l = 0; l < c->layers; l++) cg_strbuf_put(&o, ", c%d_new", l);
    if (att) cg_strbuf_put(&o, ", ring_new");
    if (c->attention == FC_ADDITIVE) cg_strbuf_put(&o, ", ring_proj_new");
    cg_strbuf_put(&o, "\n}\n");
    *out = cg_strbuf_take(&o);
    return *out ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory building the forecaster's graph");
}
