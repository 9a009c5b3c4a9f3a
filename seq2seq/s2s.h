/* Seq2seq models (docs/seq2seq.md): the configuration
 * read from config.json, the vocabularies and tokenizer, the graph builder,
 * and the decoders, all on top of the graph IR and plans. */
#ifndef CG_SEQ2SEQ_S2S_H
#define CG_SEQ2SEQ_S2S_H

#include "clgraph/clgraph.h"
#include "clgraph/seq2seq.h"

typedef enum { S2S_GRU, S2S_LSTM } s2s_cell;
typedef enum { S2S_ADDITIVE, S2S_DOT, S2S_SCALED_DOT, S2S_GENERAL, S2S_COSINE, S2S_NONE } s2s_attention;
typedef enum { S2S_LOCAL_NONE, S2S_LOCAL_MONOTONIC, S2S_LOCAL_PREDICTIVE } s2s_local;

typedef struct s2s_config {
    s2s_cell cell;
    int emb_dim, hidden, encoder_layers, decoder_layers, bidirectional;
    s2s_attention attention;
    int attention_dim;
    s2s_local local;
    int local_D;
    int luong;        /* decoder_style: 0 bahdanau, 1 luong */
    int bridge_dense; /* bridge: 1 dense, 0 zeros */
    int chars;        /* tokenizer: 1 chars, 0 words */
    int pad_id, bos_id, eos_id, unk_id;
    int v_src, v_tgt; /* from the embedding weights */
    /* The dtype the matrix-product weights the kernels read as stored are
     * declared with (the encoder's RNN, the decoder's cells and output layer, the bridge, W_k,
     * combine): f32, or bf16 / f16 where the weights file stores them so
     * (clgraph quantize); 0 means f32. Other weights are f32 in the graphs,
     * converted at load if stored otherwise. */
    int mm_dtype;
} s2s_config;

/* Parses and validates DIR/config.json; every mistake names the key. */
cg_status cg_s2s_config_read(const char *path, s2s_config *out);

/* K: the width of an encoder output. */
static inline int s2s_keys_dim(const s2s_config *c) { return c->hidden * (c->bidirectional ? 2 : 1); }

/* Candidates per row the generated graph 'decoder' keeps (top_logp,
 * top_id): greedy reads 1, a beam of k reads 2k, so beams up to 8 run on it;
 * wider beams run 'decoder_logp', which outputs the whole distribution. */
#define S2S_TOP_K 16

/* The IR text of the encoder and decoder-step graphs for a configuration. */
cg_status cg_s2s_build_text(const s2s_config *c, char **out);

/* A vocabulary: token strings by id, and a lookup. */
typedef struct s2s_vocab {
    int n;
    char **tokens;
    int *sorted; /* ids sorted by token, for bsearch */
} s2s_vocab;

cg_status cg_s2s_vocab_read(const char *path, s2s_vocab *out);
void cg_s2s_vocab_free(s2s_vocab *v);
int cg_s2s_vocab_find(const s2s_vocab *v, const char *tok, size_t len);

/* A stable sort of n elements of `size` bytes: cmp gets `ctx` as its third
 * argument; tmp has room for n elements. Equal elements keep their order. */
typedef int (*s2s_cmp_fn)(const void *a, const void *b, void *ctx);
void cg_s2s_sort(void *base, size_t n, size_t size, s2s_cmp_fn cmp, void *ctx, void *tmp);

/* The shape [N2, S2] a stream's per-slot tensors take at a join of
 * newcomers as wide as S_new, when the slots in use reach `top`: 1 when
 * they must be rebuilt (none yet, nothing live, too few rows, too narrow;
 * rows grow by doubling up to cap, the width to a multiple of 8), else 0
 * and their shape now (lens: the per-slot lengths, NULL before the first
 * join; S their width). */
int s2s_slot_shape(const cg_tensor *lens, int S, int S_new, int top, int any_live, int cap, int *N2, int *S2);

/* A stream's per-slot tensor *t ([N, S, ...] or [N]) with add's rows
 * ([n, S_a, ...]) in rows slot[0..n), zero-padded past S_a; rebuilt as
 * [N2, S2, ...] first when `rebuild` (the rows of the slots flagged in
 * `live` copied over). Either family's joins (s2s_stream.c, tf_stream.c). */
cg_status s2s_put_rows(cg_tensor **t, const cg_tensor *add, const int *live, int rebuild, int N2, int S2,
                       const int *slot, int n);

/* Times a Transformer stream's caches were cut short (tests: a long
 * stream must trim them); 0 for the RNN family's. */
long s2s_stream_trims(const cg_s2s_stream *s);

#endif
