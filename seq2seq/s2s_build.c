/* The seq2seq graph builder: from a configuration, the IR text of two
 * graphs, `encoder` (source -> keys, projected keys, initial decoder state)
 * and `decoder` (one step: previous token and state -> log-probabilities,
 * new state, attention weights), exactly as the spec's equations. Text, not
 * builder calls, so `clgraph s2s-graph` shows users the very graph that
 * runs, and an edited model.cg replaces it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "s2s.h"
#include "strbuf.h"

static int is_q8(const s2s_config *c) { return c->mm_dtype == CG_I8; }

static void param2(cg_strbuf *o, const char *name, int a, int b) {
    cg_strbuf_put(o, "  param %s: f32[%d, %d] = \"%s\"\n", name, a, b, name);
}

/* A matrix-product weight: declared with the model's mm_dtype, so the
 * kernels read 16-bit weights as they are stored. */
static void param2w(cg_strbuf *o, const s2s_config *c, const char *name, int a, int b) {
    cg_strbuf_put(o, "  param %s: %s[%d, %d] = \"%s\"\n", name,
                  c->mm_dtype ? cg_dtype_name((cg_dtype)c->mm_dtype) : "f32", a, b, name);
    if (is_q8(c)) cg_strbuf_put(o, "  param %s_scale: f32[%d] = \"%s_scale\"\n", name, a, name);
}

static void param1(cg_strbuf *o, const char *name, int a) {
    cg_strbuf_put(o, "  param %s: f32[%d] = \"%s\"\n", name, a, name);
}

/* ", NAME_scale" when weight NAME is int8 (its per-row scales, the last
 * input of the op that reads it), else "". */
static const char *qs(char *buf, size_t size, const s2s_config *c, const char *name) {
    if (is_q8(c)) snprintf(buf, size, ", %s_scale", name);
    else buf[0] = 0;
    return buf;
}

/* Name k (0 weight_ih, 1 weight_hh, 2 bias_ih, 3 bias_hh) of layer l of a
 * torch.nn.GRU/LSTM named `mod`, in _flat_weights order; `sfx` is "" or
 * "_reverse". mod is "encoder" or "decoder", so 64 bytes always hold it. */
static void rnn_param_name(char *buf, size_t size, const char *mod, int k, int l, const char *sfx) {
    static const char *const kinds[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    snprintf(buf, size, "%s.%s_l%d%s", mod, kinds[k], l, sfx);
}

/* The parameters of a torch.nn.GRU/LSTM named `mod`, in _flat_weights order;
 * `list` (NULL: not wanted) gets ", name" for each, the op's inputs. A
 * growing buffer: the list is as long as the layers make it. */
static void rnn_params(cg_strbuf *o, const s2s_config *c, const char *mod, int input, int layers, int dirs,
                       cg_strbuf *list) {
    int G = (c->cell == S2S_GRU ? 3 : 4) * c->hidden;
    for (int l = 0; l < layers; l++)
        for (int d = 0; d < dirs; d++) {
            const char *sfx = d ? "_reverse" : "";
            int in = l == 0 ? input : c->hidden * dirs;
            char n[4][64];
            for (int k = 0; k < 4; k++) rnn_param_name(n[k], sizeof n[k], mod, k, l, sfx);
            param2w(o, c, n[0], G, in);
            param2w(o, c, n[1], G, c->hidden);
            param1(o, n[2], G);
            param1(o, n[3], G);
            for (int k = 0; list && k < 4; k++) cg_strbuf_put(list, ", %s", n[k]);
        }
    /* int8: the scales of every weight matrix follow, in the same order */
    for (int l = 0; list && is_q8(c) && l < layers; l++)
        for (int d = 0; d < dirs; d++)
            for (int k = 0; k < 2; k++) {
                char n[64];
                rnn_param_name(n, sizeof n, mod, k, l, d ? "_reverse" : "");
                cg_strbuf_put(list, ", %s_scale", n);
            }
}

static const char *kind_name(s2s_attention a) {
    switch (a) {
    case S2S_ADDITIVE: return "additive";
    case S2S_DOT: return "dot";
    case S2S_SCALED_DOT: return "scaled_dot";
    case S2S_GENERAL: return "general";
    case S2S_COSINE: return "cosine";
    case S2S_NONE: return "none";
    }
    return "?";
}

static void encoder(cg_strbuf *o, const s2s_config *c) {
    int K = s2s_keys_dim(c), D = c->bidirectional ? 2 : 1, L = c->encoder_layers, H = c->hidden;
    char sb[64];
    cg_strbuf lb = {0};
    cg_strbuf_put(o, "# Encoder: X = src_embed(src); (Hs, h_n) = encoder(X) over each source's own length;\n");
    cg_strbuf_put(o, "# keys = Hs%s%s.\n",
                  c->attention == S2S_ADDITIVE ? "; keys_proj = W_k keys + b_k (once per sentence)" : "",
                  c->bridge_dense ? "; s0_l = tanh(bridge(h_last))[l*H:(l+1)*H]" : "");
    cg_strbuf_put(o, "graph encoder {\n  input src: i32[B, S]\n  input src_len: i32[B]\n");
    param2(o, "src_embed.weight", c->v_src, c->emb_dim);
    rnn_params(o, c, "encoder", c->emb_dim, L, D, &lb);
    char *list = cg_strbuf_take(&lb);
    if (!list) o->failed = 1; /* out of memory: cg_s2s_build_text reports it */
    if (c->attention == S2S_ADDITIVE) {
        param2w(o, c, "attention.W_k.weight", c->attention_dim, K);
        param1(o, "attention.W_k.bias", c->attention_dim);
    }
    if (c->bridge_dense) {
        param2w(o, c, "bridge.weight", c->decoder_layers * H, K);
        param1(o, "bridge.bias", c->decoder_layers * H);
    }
    cg_strbuf_put(o, "  x = embedding(src_embed.weight, src)\n");
    cg_strbuf_put(o, "  enc_rnn: keys, h_n%s = %s(x, src_len%s) {hidden: %d, layers: %d, bidirectional: %d}\n",
                  c->cell == S2S_LSTM ? ", c_n" : "", c->cell == S2S_GRU ? "gru" : "lstm", list ? list : "", H, L,
                  c->bidirectional);
    free(list);
    if (c->attention == S2S_ADDITIVE)
        cg_strbuf_put(o, "  keys_proj = linear(keys, attention.W_k.weight, attention.W_k.bias%s)\n",
                      qs(sb, sizeof sb, c, "attention.W_k.weight"));
    if (c->bridge_dense) {
        /* h_last: the top layer's final state, forward then backward. */
        int top = (L - 1) * D;
        cg_strbuf_put(o, "  h_fwd = slice(h_n) {axis: 0, start: %d, end: %d}\n", top, top + 1);
        if (D == 2) {
            cg_strbuf_put(o, "  h_bwd = slice(h_n) {axis: 0, start: %d, end: %d}\n", top + 1, top + 2);
            cg_strbuf_put(o, "  h_top = concat(h_fwd, h_bwd) {axis: 2}\n");
        }
        cg_strbuf_put(o, "  h_last = reshape(%s) {shape: [-1, %d]}\n", D == 2 ? "h_top" : "h_fwd", K);
        cg_strbuf_put(o, "  bridge: s0_pre = linear(h_last, bridge.weight, bridge.bias%s)\n",
                      qs(sb, sizeof sb, c, "bridge.weight"));
        cg_strbuf_put(o, "  s0 = tanh(s0_pre)\n");
        for (int l = 0; l < c->decoder_layers; l++)
            cg_strbuf_put(o, "  s0_%d = slice(s0) {axis: 1, start: %d, end: %d}\n", l, l * H, (l + 1) * H);
    }
    cg_strbuf_put(o, "  output keys");
    if (c->attention == S2S_ADDITIVE) cg_strbuf_put(o, ", keys_proj");
    if (c->bridge_dense)
        for (int l = 0; l < c->decoder_layers; l++) cg_strbuf_put(o, ", s0_%d", l);
    cg_strbuf_put(o, "\n}\n");
}

/* attend(q): e, mask, a, c (the spec's "Weights" and "Context"). */
static void attend(cg_strbuf *o, const s2s_config *c, const char *q) {
    switch (c->attention) {
    case S2S_ADDITIVE:
        cg_strbuf_put(
            o,
            "  attn_e: e = attn_score(%s, keys_proj, attention.W_q.weight, attention.W_q.bias, attention.v.weight, "
            "sentence) {kind: \"additive\"}\n",
            q);
        break;
    case S2S_GENERAL:
        cg_strbuf_put(o, "  attn_e: e = attn_score(%s, keys, attention.W.weight, sentence) {kind: \"general\"}\n", q);
        break;
    default:
        cg_strbuf_put(o, "  attn_e: e = attn_score(%s, keys, sentence) {kind: \"%s\"}\n", q, kind_name(c->attention));
    }
    if (c->local == S2S_LOCAL_NONE) {
        cg_strbuf_put(o, "  attn_mask: mask = length_mask(row_len, e)\n");
    } else if (c->local == S2S_LOCAL_MONOTONIC) {
        cg_strbuf_put(o, "  attn_mask: mask = window_mask(row_len, pos, e) {D: %d}\n", c->local_D);
    } else {
        cg_strbuf_put(o, "  attn_pp = linear(%s, attention.W_p.weight)\n", q);
        cg_strbuf_put(o, "  attn_pt = tanh(attn_pp)\n");
        cg_strbuf_put(o, "  attn_pv = linear(attn_pt, attention.v_p.weight)\n");
        cg_strbuf_put(o, "  attn_ps = sigmoid(attn_pv)\n");
        cg_strbuf_put(o, "  attn_len = cast(row_len) {to: \"f32\"}\n");
        cg_strbuf_put(o, "  attn_ps1 = reshape(attn_ps) {shape: [-1]}\n");
        cg_strbuf_put(o, "  attn_p: p = mul(attn_ps1, attn_len)\n");
        cg_strbuf_put(o, "  attn_mask: mask = window_mask(row_len, p, e) {D: %d}\n", c->local_D);
    }
    if (c->local == S2S_LOCAL_PREDICTIVE) {
        cg_strbuf_put(o, "  attn_a0: a0 = softmax(e, mask) {axis: -1}\n");
        cg_strbuf_put(o, "  attn_a: a = local_gaussian(a0, p) {D: %d}\n", c->local_D);
    } else {
        cg_strbuf_put(o, "  attn_a: a = softmax(e, mask) {axis: -1}\n");
    }
    cg_strbuf_put(o, "  attn_c: c = attn_context(a, keys, sentence)\n");
}

/* The decoder step's comment: its equations and its outputs. */
static void decoder_comment(cg_strbuf *o, const s2s_config *c, int top_k) {
    int att = c->attention != S2S_NONE;
    cg_strbuf_put(o, "\n# Decoder step t (%s): y = tgt_embed(y_prev); %s\n", c->luong ? "luong" : "bahdanau",
                  !att ? "s_t = decoder(y, s_{t-1}); logits = out(s_t)."
                  : c->luong
                      ? "s_t = decoder([y; h~_{t-1}], s_{t-1}); c, a = attend(s_t); h~_t = tanh(combine([c; s_t])); "
                        "logits = out(h~_t)."
                      : "c, a = attend(s_{t-1}); s_t = decoder([y; c], s_{t-1}); logits = out(s_t).");
    if (top_k > 0)
        cg_strbuf_put(
            o,
            "# Outputs: top_logp, top_id = the %d best entries of log_softmax(logits) per row (greedy reads 1,\n"
            "# beam k reads 2k), the new state%s.\n",
            top_k, att ? ", the attention weights a" : "");
    else
        cg_strbuf_put(
            o, "# Outputs: logp = log_softmax(logits) (the beams wider than graph decoder serves), the new state%s.\n",
            att ? ", the attention weights a" : "");
}

/* The header of graph `name` and its inputs. */
static void decoder_inputs(cg_strbuf *o, const s2s_config *c, const char *name) {
    int att = c->attention != S2S_NONE, L = c->decoder_layers, H = c->hidden;
    cg_strbuf_put(o, "graph %s {\n  input y_prev: i32[B]\n", name);
    if (att) {
        /* The keys are the encoder's, one row per sentence (N): a beam's k
         * rows share theirs, and they stay put while rows come and go.
         * Row b attends to sentence `sentence[b]`. */
        cg_strbuf_put(o, "  input keys: f32[N, S, %d]\n", s2s_keys_dim(c));
        if (c->attention == S2S_ADDITIVE) cg_strbuf_put(o, "  input keys_proj: f32[N, S, %d]\n", c->attention_dim);
        cg_strbuf_put(o, "  input src_len: i32[N]\n  input sentence: i32[B]\n");
        if (c->local == S2S_LOCAL_MONOTONIC) cg_strbuf_put(o, "  input pos: f32[B]\n");
    }
    /* The state is the last step's (P rows); each of this step's rows
     * continues the row `parent` names. The caller carries it from h0_new
     * etc. (cg_plan_carry), so on a device it never leaves the device. */
    cg_strbuf_put(o, "  input parent: i32[B]\n");
    for (int l = 0; l < L; l++) cg_strbuf_put(o, "  input h%d: f32[P, %d]\n", l, H);
    if (c->cell == S2S_LSTM)
        for (int l = 0; l < L; l++) cg_strbuf_put(o, "  input c%d: f32[P, %d]\n", l, H);
    if (c->luong && att) cg_strbuf_put(o, "  input htilde: f32[P, %d]\n", H);
}

/* The decoder's parameters. */
static void decoder_params(cg_strbuf *o, const s2s_config *c) {
    int K = s2s_keys_dim(c), H = c->hidden, E = c->emb_dim;
    int att = c->attention != S2S_NONE;
    int I = E + (att ? (c->luong ? H : K) : 0); /* Luong feeds h~, Bahdanau c; none: E */
    param2(o, "tgt_embed.weight", c->v_tgt, E);
    rnn_params(o, c, "decoder", I, c->decoder_layers, 1, NULL);
    switch (c->attention) {
    case S2S_ADDITIVE:
        param2(o, "attention.W_q.weight", c->attention_dim, H);
        param1(o, "attention.W_q.bias", c->attention_dim);
        param2(o, "attention.v.weight", 1, c->attention_dim);
        break;
    case S2S_GENERAL: param2(o, "attention.W.weight", K, H); break;
    default: break;
    }
    if (c->local == S2S_LOCAL_PREDICTIVE) {
        param2(o, "attention.W_p.weight", H, H);
        param2(o, "attention.v_p.weight", 1, H);
    }
    if (c->luong) {
        param2w(o, c, "combine.weight", H, (att ? K : 0) + H);
        param1(o, "combine.bias", H);
    }
    param2w(o, c, "out.weight", c->v_tgt, H);
    param1(o, "out.bias", c->v_tgt);
}

/* The RNN's layers, one cell each, on input `x`; each reads its own four
 * parameters (rnn_params' names). */
static void decoder_cells(cg_strbuf *o, const s2s_config *c, const char *x) {
    for (int l = 0; l < c->decoder_layers; l++) {
        char in[24], n[4][64], s0[80], s1[80];
        if (l == 0) snprintf(in, sizeof in, "%s", x);
        else snprintf(in, sizeof in, "h%d_new", l - 1);
        for (int k = 0; k < 4; k++) rnn_param_name(n[k], sizeof n[k], "decoder", k, l, "");
        qs(s0, sizeof s0, c, n[0]);
        qs(s1, sizeof s1, c, n[1]);
        if (c->cell == S2S_GRU)
            cg_strbuf_put(o, "  dec_l%d: h%d_new = gru_cell(%s, h%d_sel, %s, %s, %s, %s%s%s)\n", l, l, in, l, n[0],
                          n[1], n[2], n[3], s0, s1);
        else
            cg_strbuf_put(o, "  dec_l%d: h%d_new, c%d_new = lstm_cell(%s, h%d_sel, c%d_sel, %s, %s, %s, %s%s%s)\n", l,
                          l, l, in, l, l, n[0], n[1], n[2], n[3], s0, s1);
    }
}

/* From the top layer's new state to the outputs: Luong's attention and
 * h~, the logits, their log_softmax (whole, or its top_k best). */
static void decoder_head(cg_strbuf *o, const s2s_config *c, int top_k) {
    int L = c->decoder_layers, att = c->attention != S2S_NONE;
    char top[24], sb[64];
    snprintf(top, sizeof top, "h%d_new", L - 1);
    const char *o_in = top;
    if (c->luong) {
        if (att) {
            attend(o, c, top);
            cg_strbuf_put(o, "  cat = concat(c, %s) {axis: 1}\n", top);
        }
        cg_strbuf_put(o, "  combine: ht_pre = linear(%s, combine.weight, combine.bias%s)\n", att ? "cat" : top,
                      qs(sb, sizeof sb, c, "combine.weight"));
        cg_strbuf_put(o, "  htilde_new = tanh(ht_pre)\n");
        o_in = "htilde_new";
    }
    cg_strbuf_put(o, "  out: logits = linear(%s, out.weight, out.bias%s)\n", o_in, qs(sb, sizeof sb, c, "out.weight"));
    if (top_k > 0) {
        cg_strbuf_put(o, "  top_logp, top_id = log_softmax_topk(logits) {k: %d}\n", top_k);
        cg_strbuf_put(o, "  output top_logp, top_id");
    } else {
        cg_strbuf_put(o, "  logp = log_softmax(logits) {axis: -1}\n");
        cg_strbuf_put(o, "  output logp");
    }
    for (int l = 0; l < L; l++) cg_strbuf_put(o, ", h%d_new", l);
    if (c->cell == S2S_LSTM)
        for (int l = 0; l < L; l++) cg_strbuf_put(o, ", c%d_new", l);
    if (att) cg_strbuf_put(o, ", a");
    if (c->luong && att) cg_strbuf_put(o, ", htilde_new");
    cg_strbuf_put(o, "\n}\n");
}

/* The decoder step as graph `name`: with top_k > 0 its first outputs are
 * top_logp, top_id = the top_k best of log_softmax(logits) per row (what
 * greedy and beam search read), otherwise the whole logp. */
static void decoder(cg_strbuf *o, const s2s_config *c, const char *name, int top_k) {
    int L = c->decoder_layers;
    int att = c->attention != S2S_NONE;
    int feed = c->luong && att; /* Luong input feeding of h~ */
    decoder_comment(o, c, top_k);
    decoder_inputs(o, c, name);
    decoder_params(o, c);
    for (int l = 0; l < L; l++) cg_strbuf_put(o, "  h%d_sel = gather_rows(h%d, parent)\n", l, l);
    if (c->cell == S2S_LSTM)
        for (int l = 0; l < L; l++) cg_strbuf_put(o, "  c%d_sel = gather_rows(c%d, parent)\n", l, l);
    if (feed) cg_strbuf_put(o, "  htilde_sel = gather_rows(htilde, parent)\n");
    if (att) cg_strbuf_put(o, "  row_len = gather_rows(src_len, sentence)\n");
    cg_strbuf_put(o, "  y = embedding(tgt_embed.weight, y_prev)\n");
    const char *x = "y";
    if (att && !c->luong) {
        char q[24];
        snprintf(q, sizeof q, "h%d_sel", L - 1);
        attend(o, c, q);
        cg_strbuf_put(o, "  x = concat(y, c) {axis: 1}\n");
        x = "x";
    } else if (feed) {
        cg_strbuf_put(o, "  x = concat(y, htilde_sel) {axis: 1}\n");
        x = "x";
    }
    decoder_cells(o, c, x);
    decoder_head(o, c, top_k);
}

cg_status cg_s2s_build_text(const s2s_config *c, char **text) {
    cg_strbuf o = {0};
    cg_strbuf_put(&o, "# Generated by clgraph from config.json (spec: seq2seq with attention).\n");
    cg_strbuf_put(&o, "# Edit and save as model.cg in the model directory to replace the builder's graphs.\n");
    encoder(&o, c);
    /* Selection in the graph: only the kept candidates leave the device. */
    decoder(&o, c, "decoder", c->v_tgt < S2S_TOP_K ? c->v_tgt : S2S_TOP_K);
    decoder(&o, c, "decoder_logp", 0);
    char *s = cg_strbuf_take(&o);
    if (!s) return cg_error(CG_ERR_NO_MEMORY, "out of memory building the seq2seq graph");
    *text = s;
    return CG_OK;
}
