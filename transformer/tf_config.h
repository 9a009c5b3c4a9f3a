/* The configuration of a Transformer translation model: the keys of
 * transformers' MarianConfig and BartConfig that decide the computation
 * (docs/transformer.md). Keys for training only (dropout, init_std, ...) are
 * ignored: Hugging Face writes dozens of them. */
#ifndef CG_TF_CONFIG_H
#define CG_TF_CONFIG_H

#include "clgraph/clgraph.h"

enum { TF_ACT_GELU, TF_ACT_RELU, TF_ACT_SWISH, TF_ACT_GELU_TANH };

typedef struct tf_config {
    int d_model, enc_layers, dec_layers, enc_heads, dec_heads, enc_ffn, dec_ffn;
    int vocab, dec_vocab, max_pos;
    int pad_id, eos_id, start_id;
    int act;         /* TF_ACT_* */
    int scale_embed; /* embeddings times sqrt(d_model) */
    /* The architecture by model_type: marian (sinusoidal positions,
     * post-LN), bart (learned positions, offset 2, with a LayerNorm of the
     * embeddings; post-LN), mbart (as bart, pre-LN blocks and a final
     * LayerNorm per side). */
    int learned_pos; /* model.<side>.embed_positions.weight, row = position + 2 */
    int embed_norm;  /* model.<side>.layernorm_embedding after the embeddings */
    int pre_norm;    /* LayerNorm before each block, residual after */
    int final_norm;  /* model.<side>.layer_norm after the last layer */
    /* The dtype the matrix products' weights are declared in: 0 (f32), or
     * CG_BF16 / CG_F16 / CG_I8 where the weights file stores them so
     * (clgraph quantize); head_mm: the output projection too. Set by the
     * loader from the weights (tf_model.c), not from config.json. */
    int mm_dtype, head_mm;
    /* The token tables are stored in int8 with row scales (clgraph quantize
     * narrows a tied one): the lookups read them so, instead of a copy
     * widened to f32 (a quarter of the memory). Set by the loader too. */
    int emb_q8;
} tf_config;

/* Reads DIR/config.json; every mistake names the file and the key. */
cg_status tf_config_read(const char *dir, tf_config *out);

/* The decoding defaults of generation_config.json (transformers'
 * GenerationConfig) that change what greedy and beam search produce. */
#define TF_MAX_BANNED 64
typedef struct tf_generation {
    int num_beams;         /* 1: greedy */
    int max_length;        /* tokens of the target, decoder start included (transformers' count) */
    int forced_eos;        /* the id forced at the last position, or -1 */
    double length_penalty; /* beam scores divided by length ** length_penalty */
    int early;             /* early_stopping: 0 false (the heuristic), 1 true, 2 "never" (s2s_early) */
    int n_banned;
    int banned[TF_MAX_BANNED]; /* single-token bad_words_ids: never generated */
    int forced_bos;            /* forced_bos_token_id: the first generated token, or -1 */
    int min_length;            /* EOS masked before (transformers' count, as cg_s2s_options.min_len) */
    int max_new_tokens;        /* the generated tokens' limit instead of max_length, or 0 */
} tf_generation;

/* Reads DIR/generation_config.json, or fills transformers' defaults from
 * c when the file is absent (num_beams 1, max_length 20, length_penalty 1,
 * forced_eos from nothing). Settings that would change the search in ways
 * not implemented (multi-token bad words, repetition penalties, sampling)
 * are refused with one line naming the key; other keys are ignored. */
cg_status tf_generation_read(const char *dir, const tf_config *c, tf_generation *out);

#endif
