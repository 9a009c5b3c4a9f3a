/* The Transformer family's graph text (tf_build.h). */
#include "tf_build.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "strbuf.h"

/* f32's largest: the additive mask of a padded key, as transformers' own
 * (torch.finfo(float32).min); a key so masked gets exactly 0 weight. */
#define TF_MASK_MIN "3.4028234663852886e38"

typedef struct {
    cg_strbuf *o;
    const tf_config *c;
    tf_has_fn has;
    void *user;
} tf_out;

static void param(tf_out *t, const char *name, int a, int b) {
    if (b) cg_strbuf_put(t->o, "  param %s: f32[%d, %d] = \"%s\"\n", name, a, b, name);
    else cg_strbuf_put(t->o, "  param %s: f32[%d] = \"%s\"\n", name, a, name);
}

/* The dtype name a matrix product's weights are declared in (tf_config.mm_dtype). */
static const char *mm_name(const tf_out *t) {
    return t->c->mm_dtype == CG_I8     ? "i8"
           : t->c->mm_dtype == CG_BF16 ? "bf16"
           : t->c->mm_dtype == CG_F16  ? "f16"
                                       : "f32";
}

/* A matrix product's weight [a, b] as `name` (the file's tensor `file`) in
 * mm_dtype; an i8 one with its per-row scales name_scale. */
static void param_mm_as(tf_out *t, const char *name, const char *file, int a, int b) {
    cg_strbuf_put(t->o, "  param %s: %s[%d, %d] = \"%s\"\n", name, mm_name(t), a, b, file);
    if (t->c->mm_dtype == CG_I8) cg_strbuf_put(t->o, "  param %s_scale: f32[%d] = \"%s_scale\"\n", name, a, file);
}

static void param_mm(tf_out *t, const char *name, int a, int b) { param_mm_as(t, name, name, a, b); }

/* out = linear(x) of module `mod` (weights mod.weight, mod.bias). */
static void lin(tf_out *t, const char *out, const char *x, const char *mod) {
    cg_strbuf_put(t->o, "  %s = linear(%s, %s.weight, %s.bias%s%s%s)\n", out, x, mod, mod,
                  t->c->mm_dtype == CG_I8 ? ", " : "", t->c->mm_dtype == CG_I8 ? mod : "",
                  t->c->mm_dtype == CG_I8 ? ".weight_scale" : "");
}

/* The name of the table token ids index: side's own, else the shared one. */
static const char *embed_name(const tf_out *t, int dec) {
    const char *own = dec ? "model.decoder.embed_tokens.weight" : "model.encoder.embed_tokens.weight";
    return t->has(own, t->user) ? own : "model.shared.weight";
}

/* Declares the parameters of one layer: pre is "model.encoder.layers.N". */
static void layer_params(tf_out *t, const char *pre, int cross, int ffn) {
    const int D = t->c->d_model;
    const char *att[2] = {"self_attn", "encoder_attn"};
    const char *proj[4] = {"q_proj", "k_proj", "v_proj", "out_proj"};
    char n[160];
    for (int a = 0; a <= cross; a++) {
        for (int p = 0; p < 4; p++) {
            snprintf(n, sizeof n, "%s.%s.%s.weight", pre, att[a], proj[p]);
            param_mm(t, n, D, D);
            snprintf(n, sizeof n, "%s.%s.%s.bias", pre, att[a], proj[p]);
            param(t, n, D, 0);
        }
        for (int w = 0; w < 2; w++) {
            snprintf(n, sizeof n, "%s.%s_layer_norm.%s", pre, att[a], w ? "bias" : "weight");
            param(t, n, D, 0);
        }
    }
    snprintf(n, sizeof n, "%s.fc1.weight", pre);
    param_mm(t, n, ffn, D);
    snprintf(n, sizeof n, "%s.fc1.bias", pre);
    param(t, n, ffn, 0);
    snprintf(n, sizeof n, "%s.fc2.weight", pre);
    param_mm(t, n, D, ffn);
    snprintf(n, sizeof n, "%s.fc2.bias", pre);
    param(t, n, D, 0);
    for (int w = 0; w < 2; w++) {
        snprintf(n, sizeof n, "%s.final_layer_norm.%s", pre, w ? "bias" : "weight");
        param(t, n, D, 0);
    }
}

/* Multi-head attention of layer value prefix `v` (e.g. "e0_sa") from x to
 * kv (x itself for self-attention), heads H: out `v`_o [B, L, D]. */
static void attention(tf_out *t, const char *v, const char *pre, const char *att, const char *x, const char *kv,
                      const char *L, const char *S, int H, const char *mask, int causal) {
    const int D = t->c->d_model, Dh = D / H;
    static const char *const qkv[3] = {"q", "k", "v"};
    char out[64], mod[160];
    for (int i = 0; i < 3; i++) {
        snprintf(out, sizeof out, "%s_%s", v, qkv[i]);
        snprintf(mod, sizeof mod, "%s.%s.%s_proj", pre, att, qkv[i]);
        lin(t, out, i ? kv : x, mod);
        cg_strbuf_put(t->o, "  %s_%s4 = reshape(%s_%s) {shape: [B, %s, %d, %d]}\n", v, qkv[i], v, qkv[i], i ? S : L, H,
                      Dh);
    }
    cg_strbuf_put(t->o, "  %s_a4 = sdpa(%s_q4, %s_k4, %s_v4%s%s) {layout: \"bshd\"%s}\n", v, v, v, v, mask ? ", " : "",
                  mask ? mask : "", causal ? ", causal: 1" : "");
    cg_strbuf_put(t->o, "  %s_a = reshape(%s_a4) {shape: [B, %s, %d]}\n", v, v, L, D);
    char a[64];
    snprintf(out, sizeof out, "%s_o", v);
    snprintf(a, sizeof a, "%s_a", v);
    snprintf(mod, sizeof mod, "%s.%s.out_proj", pre, att);
    lin(t, out, a, mod);
}

/* The activation of the feed-forward block on `in` into `out`, as
 * transformers' ACT2FN computes it (gelu: the erf form): one ew_fused
 * node, the op chain's own arithmetic in one pass over the [rows, ffn]
 * block on every thread (the separate nodes cost the encoder three passes
 * of a single thread). */
static void activation(tf_out *t, const char *out, const char *in) {
    static const char *const prog[] = {
        [TF_ACT_SWISH] = "0 0 sigmoid mul",
        [TF_ACT_GELU_TANH] = "0 0 0 0 mul 0 mul affine:0.044715:0 add affine:0.7978845608028654:0 tanh "
                             "affine:0.5:0.5 mul",
        [TF_ACT_GELU] = "0 0 affine:0.7071067811865476:0 erf affine:0.5:0.5 mul",
    };
    if (t->c->act == TF_ACT_RELU) cg_strbuf_put(t->o, "  %s = relu(%s)\n", out, in);
    else cg_strbuf_put(t->o, "  %s = ew_fused(%s) {program: \"%s\"}\n", out, in, prog[t->c->act]);
}

static const char *side(int dec) { return dec ? "decoder" : "encoder"; }

/* The token table a side looks ids up in: f32 as stored or widened, or
 * (tf_config.emb_q8) its int8 rows and their scales as `table_q8`. */
static void table_param(tf_out *t, int dec, int rows) {
    const char *name = embed_name(t, dec);
    if (!t->c->emb_q8) {
        param(t, name, rows, t->c->d_model);
        return;
    }
    cg_strbuf_put(t->o, "  param table_q8: i8[%d, %d] = \"%s\"\n  param table_q8_scale: f32[%d] = \"%s_scale\"\n", rows,
                  t->c->d_model, name, rows, name);
}

/* The embeddings of `ids` scaled, plus the position rows `pos` (then
 * BART's LayerNorm of them): value x0. */
static void embed(tf_out *t, const char *ids, const char *pos, int dec) {
    if (t->c->emb_q8) cg_strbuf_put(t->o, "  emb = embedding(table_q8, %s, table_q8_scale)\n", ids);
    else cg_strbuf_put(t->o, "  emb = embedding(%s, %s)\n", embed_name(t, dec), ids);
    const char *e = "emb";
    if (t->c->scale_embed) {
        cg_strbuf_put(t->o, "  emb_s = affine(emb) {alpha: %.17g, beta: 0}\n", sqrt((double)t->c->d_model));
        e = "emb_s";
    }
    if (!t->c->embed_norm) {
        cg_strbuf_put(t->o, "  x0 = add(%s, %s)\n", e, pos);
        return;
    }
    cg_strbuf_put(t->o,
                  "  x0e = add(%s, %s)\n  x0 = layer_norm(x0e, model.%s.layernorm_embedding.weight, "
                  "model.%s.layernorm_embedding.bias) {epsilon: 1e-05}\n",
                  e, pos, side(dec), side(dec));
}

/* A side's own LayerNorms: of the embeddings (BART), after the last layer
 * (mBART). */
static void side_params(tf_out *t, int dec) {
    char n[96];
    for (int k = 0; k < 2; k++) {
        const char *what = k ? "layer_norm" : "layernorm_embedding";
        if (!(k ? t->c->final_norm : t->c->embed_norm)) continue;
        for (int w = 0; w < 2; w++) {
            snprintf(n, sizeof n, "model.%s.%s.%s", side(dec), what, w ? "bias" : "weight");
            param(t, n, t->c->d_model, 0);
        }
    }
}

/* mBART's LayerNorm after a side's last layer: *x renamed to its output. */
static void final_norm(tf_out *t, int dec, char *x, size_t size) {
    if (!t->c->final_norm) return;
    cg_strbuf_put(t->o,
                  "  %s_fn = layer_norm(%s, model.%s.layer_norm.weight, model.%s.layer_norm.bias) {epsilon: 1e-05}\n",
                  side(dec), x, side(dec), side(dec));
    snprintf(x, size, "%s_fn", side(dec));
}

/* A block's input: x itself (post-LN), or LN(x) by the block's LayerNorm
 * `ln` (pre-LN), named into buf. */
static const char *block_in(tf_out *t, const char *x, const char *pre, const char *ln, char *buf, size_t size) {
    if (!t->c->pre_norm) return x;
    snprintf(buf, size, "%s_%s", x, ln);
    cg_strbuf_put(t->o, "  %s = layer_norm(%s, %s.%s.weight, %s.%s.bias) {epsilon: 1e-05}\n", buf, x, pre, ln, pre, ln);
    return buf;
}

/* The additive key-padding mask of the source lengths src_len, shaped by
 * `like` [., S, ...]: mask [B, 1, 1, S]; with `rows` (an i32 [B] value),
 * row b's is sentence rows[b]'s. */
static void source_mask(tf_out *t, const char *like, const char *rows) {
    cg_strbuf_put(t->o,
                  "  src_keep = length_mask(src_len, %s)\n  src_keepf = cast(src_keep) {to: \"f32\"}\n"
                  "  src_add = affine(src_keepf) {alpha: " TF_MASK_MIN ", beta: -" TF_MASK_MIN "}\n",
                  like);
    if (rows) cg_strbuf_put(t->o, "  row_add = gather_rows(src_add, %s)\n", rows);
    cg_strbuf_put(t->o, "  mask = reshape(%s) {shape: [B, 1, 1, S]}\n", rows ? "row_add" : "src_add");
}

/* x_out = LayerNorm(x_in + o) (post-LN; the residual add fused), or
 * x_in + o (pre-LN: the LayerNorm came first, block_in). */
static void add_norm(tf_out *t, const char *out, const char *o, const char *in, const char *pre, const char *ln) {
    if (t->c->pre_norm) {
        cg_strbuf_put(t->o, "  %s = add(%s, %s)\n", out, in, o);
        return;
    }
    cg_strbuf_put(t->o, "  %s = layer_norm(%s, %s.%s.weight, %s.%s.bias, %s) {epsilon: 1e-05}\n", out, o, pre, ln, pre,
                  ln, in);
}

static void ffn(tf_out *t, const char *v, const char *pre, const char *x) {
    char a[64], f1[64], f2[64], mod[160];
    snprintf(f1, sizeof f1, "%s_f1", v);
    snprintf(a, sizeof a, "%s_act", v);
    snprintf(f2, sizeof f2, "%s_f2", v);
    snprintf(mod, sizeof mod, "%s.fc1", pre);
    lin(t, f1, x, mod);
    activation(t, a, f1);
    snprintf(mod, sizeof mod, "%s.fc2", pre);
    lin(t, f2, a, mod);
}

/* The feed-forward block of layer <tag><l> and its add & norm: *out
 * names LN(in + fc2(act(fc1(in)))). */
static void ffn_norm(tf_out *t, const char *tag, int l, const char *pre, const char *in, char *out, size_t size) {
    char v[32], f2[40], nb[64];
    snprintf(v, sizeof v, "%s%d", tag, l);
    ffn(t, v, pre, block_in(t, in, pre, "final_layer_norm", nb, sizeof nb));
    snprintf(out, size, "%s%d_xf", tag, l);
    snprintf(f2, sizeof f2, "%s_f2", v);
    add_norm(t, out, f2, in, pre, "final_layer_norm");
}

/* Every layer's parameters of one side. */
static void layers_params(tf_out *t, int dec) {
    char pre[64];
    for (int l = 0; l < (dec ? t->c->dec_layers : t->c->enc_layers); l++) {
        snprintf(pre, sizeof pre, "model.%s.layers.%d", dec ? "decoder" : "encoder", l);
        layer_params(t, pre, dec, dec ? t->c->dec_ffn : t->c->enc_ffn);
    }
}

/* The decoder's output side: its embedding, the projection (lm_head or the
 * tied embedding) and final_logits_bias when the file has them. */
typedef struct {
    const char *head;
    int bias, mm; /* mm: the head is declared in mm_dtype */
} tf_head;

/* The output projection is read in mm_dtype when the file stores it so
 * (`clgraph quantize` narrows the tied embedding too); the lookup reads the
 * same tensor as int8 rows then (tf_config.emb_q8: a second param of the
 * file's tensor). */
static tf_head head_params(tf_out *t) {
    const char *emb = embed_name(t, 1);
    table_param(t, 1, t->c->dec_vocab);
    tf_head h = {t->has("lm_head.weight", t->user) ? "lm_head.weight" : emb, t->has("final_logits_bias", t->user),
                 t->c->head_mm};
    if (h.mm) {
        param_mm_as(t, "head.weight", h.head, t->c->dec_vocab, t->c->d_model);
        h.head = "head.weight";
    } else if (h.head != emb || t->c->emb_q8) { /* an f32 head of an int8 table: widened for the product */
        param(t, h.head, t->c->dec_vocab, t->c->d_model);
    }
    if (h.bias) cg_strbuf_put(t->o, "  param final_logits_bias: f32[1, %d] = \"final_logits_bias\"\n", t->c->dec_vocab);
    return h;
}

/* logits = x head^T (+ final_logits_bias, as linear's bias: one pass over
 * the widest output instead of two). */
static void head_logits(tf_out *t, const tf_head *h, const char *x) {
    const char *sc = h->mm && t->c->mm_dtype == CG_I8 ? ", head.weight_scale" : "";
    if (h->bias)
        cg_strbuf_put(t->o,
                      "  logits_b = reshape(final_logits_bias) {shape: [%d]}\n  logits = linear(%s, %s, logits_b%s)\n",
                      t->c->dec_vocab, x, h->head, sc);
    else cg_strbuf_put(t->o, "  logits = linear(%s, %s%s)\n", x, h->head, sc);
}

static void encoder(tf_out *t) {
    const tf_config *c = t->c;
    cg_strbuf_put(t->o, "graph encoder {\n  input src: i32[B, S]\n  input src_len: i32[B]\n  input pos: f32[S, %d]\n",
                  c->d_model);
    table_param(t, 0, c->vocab);
    side_params(t, 0);
    layers_params(t, 0);
    embed(t, "src", "pos", 0);
    source_mask(t, "src", NULL);
    char pre[64], x[32] = "x0", v[32], n1[32], nb[64];
    for (int l = 0; l < c->enc_layers; l++) {
        snprintf(pre, sizeof pre, "model.encoder.layers.%d", l);
        snprintf(v, sizeof v, "e%d_sa", l);
        const char *xi = block_in(t, x, pre, "self_attn_layer_norm", nb, sizeof nb);
        attention(t, v, pre, "self_attn", xi, xi, "S", "S", c->enc_heads, "mask", 0);
        snprintf(n1, sizeof n1, "e%d_x1", l);
        snprintf(v, sizeof v, "e%d_sa_o", l);
        add_norm(t, n1, v, x, pre, "self_attn_layer_norm");
        ffn_norm(t, "e", l, pre, n1, x, sizeof x);
    }
    final_norm(t, 0, x, sizeof x);
    cg_strbuf_put(t->o, "  enc = reshape(%s) {shape: [B, S, %d]}\n  output enc\n}\n", x, c->d_model);
}

static void decoder(tf_out *t) {
    const tf_config *c = t->c;
    cg_strbuf_put(t->o,
                  "graph decoder {\n  input tgt: i32[B, T]\n  input tpos: f32[T, %d]\n  input enc: f32[B, S, %d]\n"
                  "  input src_len: i32[B]\n",
                  c->d_model, c->d_model);
    tf_head h = head_params(t);
    side_params(t, 1);
    layers_params(t, 1);
    embed(t, "tgt", "tpos", 1);
    source_mask(t, "enc", NULL);
    char pre[64], x[32] = "x0", v[32], n1[32], n2[32], nb[64];
    for (int l = 0; l < c->dec_layers; l++) {
        snprintf(pre, sizeof pre, "model.decoder.layers.%d", l);
        snprintf(v, sizeof v, "d%d_sa", l);
        const char *xi = block_in(t, x, pre, "self_attn_layer_norm", nb, sizeof nb);
        attention(t, v, pre, "self_attn", xi, xi, "T", "T", c->dec_heads, NULL, 1);
        snprintf(n1, sizeof n1, "d%d_x1", l);
        snprintf(v, sizeof v, "d%d_sa_o", l);
        add_norm(t, n1, v, x, pre, "self_attn_layer_norm");
        snprintf(v, sizeof v, "d%d_ca", l);
        xi = block_in(t, n1, pre, "encoder_attn_layer_norm", nb, sizeof nb);
        attention(t, v, pre, "encoder_attn", xi, "enc", "T", "S", c->dec_heads, "mask", 0);
        snprintf(n2, sizeof n2, "d%d_x2", l);
        snprintf(v, sizeof v, "d%d_ca_o", l);
        add_norm(t, n2, v, n1, pre, "encoder_attn_layer_norm");
        ffn_norm(t, "d", l, pre, n2, x, sizeof x);
    }
    final_norm(t, 1, x, sizeof x);
    head_logits(t, &h, x);
    cg_strbuf_put(t->o, "  output logits\n}\n");
}

/* The cross-attention keys and values of every decoder layer, once per
 * source: ck<l>, cv<l> [N, S, H, Dh] from the encoder's output. */
static void cross_kv(tf_out *t) {
    const tf_config *c = t->c;
    const int D = c->d_model, H = c->dec_heads;
    cg_strbuf_put(t->o, "graph cross_kv {\n  input enc: f32[N, S, %d]\n", D);
    char pre[64], n[160];
    for (int l = 0; l < c->dec_layers; l++)
        for (int i = 0; i < 2; i++) {
            snprintf(pre, sizeof pre, "model.decoder.layers.%d.encoder_attn.%s_proj", l, i ? "v" : "k");
            snprintf(n, sizeof n, "%s.weight", pre);
            param_mm(t, n, D, D);
            snprintf(n, sizeof n, "%s.bias", pre);
            param(t, n, D, 0);
        }
    for (int l = 0; l < c->dec_layers; l++)
        for (int i = 0; i < 2; i++) {
            const char *kv = i ? "v" : "k";
            snprintf(pre, sizeof pre, "model.decoder.layers.%d.encoder_attn.%s_proj", l, kv);
            snprintf(n, sizeof n, "c%s%d_2", kv, l);
            lin(t, n, "enc", pre);
            cg_strbuf_put(t->o, "  c%s%d = reshape(c%s%d_2) {shape: [N, S, %d, %d]}\n", kv, l, kv, l, H, D / H);
        }
    cg_strbuf_put(t->o, "  output ");
    for (int l = 0; l < c->dec_layers; l++) cg_strbuf_put(t->o, "%sck%d, cv%d", l ? ", " : "", l, l);
    cg_strbuf_put(t->o, "\n}\n");
}

/* Self-attention of one decoding step over the layer's cache: the new
 * key and value rows appended to the rows `parent` picks of pk<l> / pv<l>
 * [R, P, H, Dh] give nk<l> / nv<l> [B, P + 1, H, Dh] in one copy
 * (gather_concat), which the next step reads (the decoder carries them:
 * cg_plan_carry, written in place on the CPU). */
static void step_self_attention(tf_out *t, int l, const char *pre, const char *x, int stream) {
    const int D = t->c->d_model, H = t->c->dec_heads, Dh = D / H;
    static const char *const qkv[3] = {"q", "k", "v"};
    char out[32], mod[160];
    for (int i = 0; i < 3; i++) {
        snprintf(out, sizeof out, "s%d_%s", l, qkv[i]);
        snprintf(mod, sizeof mod, "%s.self_attn.%s_proj", pre, qkv[i]);
        lin(t, out, x, mod);
        cg_strbuf_put(t->o, "  s%d_%s4 = reshape(s%d_%s) {shape: [B, 1, %d, %d]}\n", l, qkv[i], l, qkv[i], H, Dh);
    }
    /* each row continues the row `parent` names of the last step's caches */
    cg_strbuf_put(t->o,
                  "  nk%d = gather_concat(pk%d, parent, s%d_k4) {axis: 1}\n"
                  "  nv%d = gather_concat(pv%d, parent, s%d_v4) {axis: 1}\n",
                  l, l, l, l, l, l);
    /* A stream's rows joined at different steps: the leading rstart[b]
     * positions of row b's cache are another row's (copied when it joined,
     * or kept before a trim), masked as a source's padding is */
    if (stream && l == 0)
        cg_strbuf_put(t->o, "  self_dead = length_mask(rstart, nk0)\n  self_deadf = cast(self_dead) {to: \"f32\"}\n"
                            "  self_add = affine(self_deadf) {alpha: -" TF_MASK_MIN ", beta: 0}\n"
                            "  self_mask = reshape(self_add) {shape: [B, 1, 1, -1]}\n");
    cg_strbuf_put(t->o, "  s%d_a4 = sdpa(s%d_q4, nk%d, nv%d%s) {layout: \"bshd\"}\n", l, l, l, l,
                  stream ? ", self_mask" : "");
    cg_strbuf_put(t->o, "  s%d_a = reshape(s%d_a4) {shape: [B, 1, %d]}\n", l, l, D);
    char a[32];
    snprintf(out, sizeof out, "s%d_o", l);
    snprintf(a, sizeof a, "s%d_a", l);
    snprintf(mod, sizeof mod, "%s.self_attn.out_proj", pre);
    lin(t, out, a, mod);
}

/* Cross-attention of one step: row b reads source sentence[b]'s keys. The
 * last layer's also gives its weights per head, a [B, H, S], as
 * transformers' eager attention computes them (q k^T, times the scaling,
 * plus the mask, softmax): the attention maps. */
static void step_cross_attention(tf_out *t, int l, const char *pre, const char *x, int maps) {
    const int D = t->c->d_model, H = t->c->dec_heads, Dh = D / H;
    char out[32], a[32], mod[160];
    snprintf(out, sizeof out, "x%d_q", l);
    snprintf(mod, sizeof mod, "%s.encoder_attn.q_proj", pre);
    lin(t, out, x, mod);
    cg_strbuf_put(t->o, "  x%d_q4 = reshape(x%d_q) {shape: [B, 1, %d, %d]}\n", l, l, H, Dh);
    if (l == 0) source_mask(t, "ck0", "sentence"); /* the rows' key-padding mask: their sentences' */
    /* k and v stay per sentence: each row reads its own through kv_rows */
    cg_strbuf_put(t->o, "  x%d_a4 = sdpa(x%d_q4, ck%d, cv%d, mask, sentence) {layout: \"bshd\", kv_rows: 1}\n", l, l, l,
                  l);
    if (maps && l == t->c->dec_layers - 1) /* the attention maps: the last layer's */
        cg_strbuf_put(
            t->o,
            "  xa_k = gather_rows(ck%d, sentence)\n"
            "  xa_qh = transpose(x%d_q4) {perm: [0, 2, 1, 3]}\n  xa_kh = transpose(xa_k) {perm: [0, 2, 1, 3]}\n"
            "  xa_s = matmul(xa_qh, xa_kh) {transpose_b: 1}\n  xa_ss = affine(xa_s) {alpha: %.17g, beta: 0}\n"
            "  xa_m = add(xa_ss, mask)\n  xa_p = softmax(xa_m) {axis: -1}\n"
            "  a = reshape(xa_p) {shape: [B, %d, S]}\n",
            l, l, 1.0 / sqrt((double)Dh), H);
    cg_strbuf_put(t->o, "  x%d_a = reshape(x%d_a4) {shape: [B, 1, %d]}\n", l, l, D);
    snprintf(out, sizeof out, "x%d_o", l);
    snprintf(a, sizeof a, "x%d_a", l);
    snprintf(mod, sizeof mod, "%s.encoder_attn.out_proj", pre);
    lin(t, out, a, mod);
}

/* One decoding step over the caches: y [B] (the previous tokens), ypos
 * [D] (the step's position row), sentence [B] (each row's source in
 * ck / cv / src_len [N]), parent [B] (each row's row of the last step's
 * caches) -> logits [B, V], the TF_TOP_K best of their log_softmax
 * (top_logp, top_id) and the grown caches; with `maps` (graph
 * decoder_step_maps) also the last layer's cross-attention weights `a`,
 * the last output: a search that wants no maps runs none of their nodes.
 * With `stream` (decoder_step_stream[_maps], tf_stream.c) rows are at
 * positions of their own: ypos is [B, D], and a last input rstart [B]
 * masks the leading positions of each row's cache that are not its own.
 * The inputs and outputs are otherwise the same, in the same order. */
static void decoder_step(tf_out *t, int maps, int stream) {
    const tf_config *c = t->c;
    const int D = c->d_model, H = c->dec_heads, Dh = D / H;
    cg_strbuf_put(t->o,
                  "graph decoder_step%s%s {\n  input y: i32[B]\n  input ypos: f32[%s%d]\n  input sentence: i32[B]\n"
                  "  input src_len: i32[N]\n  input parent: i32[B]\n",
                  stream ? "_stream" : "", maps ? "_maps" : "", stream ? "B, " : "", D);
    for (int l = 0; l < c->dec_layers; l++)
        cg_strbuf_put(t->o,
                      "  input ck%d: f32[N, S, %d, %d]\n  input cv%d: f32[N, S, %d, %d]\n"
                      "  input pk%d: f32[R, P, %d, %d]\n  input pv%d: f32[R, P, %d, %d]\n",
                      l, H, Dh, l, H, Dh, l, H, Dh, l, H, Dh);
    if (stream) cg_strbuf_put(t->o, "  input rstart: i32[B]\n");
    tf_head h = head_params(t);
    side_params(t, 1);
    layers_params(t, 1);
    embed(t, "y", "ypos", 1);
    cg_strbuf_put(t->o, "  x0r = reshape(x0) {shape: [B, 1, %d]}\n", D);
    char pre[64], x[32] = "x0r", v[32], n1[32], n2[32], nb[64];
    for (int l = 0; l < c->dec_layers; l++) {
        snprintf(pre, sizeof pre, "model.decoder.layers.%d", l);
        step_self_attention(t, l, pre, block_in(t, x, pre, "self_attn_layer_norm", nb, sizeof nb), stream);
        snprintf(n1, sizeof n1, "d%d_x1", l);
        snprintf(v, sizeof v, "s%d_o", l);
        add_norm(t, n1, v, x, pre, "self_attn_layer_norm");
        step_cross_attention(t, l, pre, block_in(t, n1, pre, "encoder_attn_layer_norm", nb, sizeof nb), maps);
        snprintf(n2, sizeof n2, "d%d_x2", l);
        snprintf(v, sizeof v, "x%d_o", l);
        add_norm(t, n2, v, n1, pre, "encoder_attn_layer_norm");
        ffn_norm(t, "d", l, pre, n2, x, sizeof x);
    }
    final_norm(t, 1, x, sizeof x);
    cg_strbuf_put(t->o, "  xl = reshape(%s) {shape: [B, %d]}\n", x, D);
    head_logits(t, &h, "xl");
    cg_strbuf_put(t->o, "  top_logp, top_id = log_softmax_topk(logits) {k: %d}\n", TF_TOP_K);
    cg_strbuf_put(t->o, "  output logits, top_logp, top_id");
    for (int l = 0; l < c->dec_layers; l++) cg_strbuf_put(t->o, ", nk%d, nv%d", l, l);
    cg_strbuf_put(t->o, "%s\n}\n", maps ? ", a" : "");
}

cg_status tf_build_text(const tf_config *c, tf_has_fn has, void *user, char **out) {
    cg_strbuf o = {0};
    tf_out t = {&o, c, has, user};
    cg_strbuf_put(&o, "# a %s model (transformer/tf_build.c)\n",
                  c->pre_norm      ? "mBART"
                  : c->learned_pos ? "BART"
                                   : "MarianMT");
    encoder(&t);
    decoder(&t);
    cross_kv(&t);
    for (int stream = 0; stream < 2; stream++)
        for (int maps = 0; maps < 2; maps++) decoder_step(&t, maps, stream);
    *out = cg_strbuf_take(&o);
    return *out ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory building the Transformer graphs");
}

void tf_positions(const tf_config *c, int64_t start, int64_t n, float *out) {
    const int d = c->d_model, half = (d + 1) / 2;
    for (int64_t p = 0; p < n; p++) {
        const double pos = (double)(start + p);
        float *row = out + p * d;
        for (int j = 0; j < d; j++) {
            const double a = pos / pow(10000.0, 2.0 * (j / 2) / d);
            if (j % 2 == 0) row[j / 2] = (float)sin(a);
            else row[half + j / 2] = (float)cos(a);
        }
    }
}

cg_status tf_position_rows(const tf_config *c, cg_weights *w, int dec, int64_t start, int64_t n, float *out) {
    if (!c->learned_pos) {
        tf_positions(c, start, n, out);
        return CG_OK;
    }
    char name[64];
    snprintf(name, sizeof name, "model.%s.embed_positions.weight", side(dec));
    cg_tensor_desc d;
    const void *data;
    cg_status st = cg_weights_view_as(w, name, CG_F32, &d, &data);
    if (st) return st;
    /* BART's learned table is offset by 2 rows (transformers' BartLearnedPositionalEmbedding) */
    if (d.ndim != 2 || d.dims[1] != c->d_model || d.dims[0] < start + n + 2)
        return cg_error(CG_ERR_VERIFY, "%s: %s has %lld rows of %lld, positions %lld..%lld need rows to %lld of %d",
                        cg_weights_path(w), name, (long long)d.dims[0], (long long)(d.ndim > 1 ? d.dims[1] : 0),
                        (long long)start, (long long)(start + n - 1), (long long)(start + n + 1), c->d_model);
    memcpy(out, (const float *)data + (size_t)(start + 2) * (size_t)c->d_model,
           sizeof(float) * (size_t)n * (size_t)c->d_model);
    return CG_OK;
}
