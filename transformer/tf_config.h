/* The configuration of a Transformer translation model: the keys of
 * transformers' MarianConfig and BartConfig that decide the computation
 * (docs/transformer.md). Keys for training only (dropout, init_std, ...) are
 * ignored: Hugging Face writes dozens of them. */
#ifndef CG_TF_CONFIG_H
#define CG_TF_CONFIG_H

#include "clgraph/clgraph.h"

enum { TF_ACT_GELU, TF_ACT_RELU, TF_ACT_SWISH, TF_ACT_GELU_TANH };
enum { TF_POS_SINUSOIDAL, TF_POS_LEARNED };

typedef struct tf_config {
    int d_model, enc_layers, dec_layers, enc_heads, dec_heads, enc_ffn, dec_ffn;
    int vocab, dec_vocab, max_pos;
    int pad_id, eos_id, start_id;
    int act;         /* TF_ACT_* */
    int positions;   /* TF_POS_*: Marian sinusoidal, BART learned (offset 2) */
    int scale_embed; /* embeddings times sqrt(d_model) */
    int pre_norm;    /* LayerNorm before each sublayer (normalize_before) */
    int embed_norm;  /* a LayerNorm after the embeddings (BART's layernorm_embedding) */
    int final_norm;  /* a LayerNorm after the last layer (pre-norm models) */
} tf_config;

/* Reads DIR/config.json; every mistake names the file and the key. */
cg_status tf_config_read(const char *dir, tf_config *out);

#endif
