/*
 * clgraph seq2seq API: sequence-to-sequence models with attention, the model
 * family of docs/seq2seq.md, on top of the runtime of
 * clgraph.h (contexts, plans, devices).
 *
 * Threads: a cg_s2s is used by one thread at a time (it holds plans); for
 * translations in parallel, give each thread a handle of its own, loaded
 * (cg_s2s_load, one context per thread or a shared one) or cloned
 * (cg_s2s_clone: the weights and graphs are shared).
 */
#ifndef CLGRAPH_SEQ2SEQ_H
#define CLGRAPH_SEQ2SEQ_H

#include "clgraph/clgraph.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * A sequence-to-sequence model with attention, of one of two families:
 * the RNN family (docs/seq2seq.md: a model directory with config.json,
 * weights.safetensors, src.vocab, tgt.vocab and optionally model.cg, used
 * instead of the builder's graphs) or the Transformer family
 * (docs/transformer.md: Hugging Face's MarianMT layout, config.json with a
 * model_type, model.safetensors, generation_config.json, vocab.json,
 * source.spm, target.spm). cg_s2s_load tells them apart by config.json's
 * model_type; every function below serves both, except where it says.
 */
typedef struct cg_s2s cg_s2s;

/** Options of cg_s2s_load and cg_s2s_graph_text: zero-initialise, set
 * struct_size, then what you need (or pass NULL: every default). */
typedef struct cg_s2s_load_options {
    size_t struct_size; /**< sizeof(cg_s2s_load_options) */
    /**
     * The dtype the matrix products (the encoder's RNN, the decoder's RNN
     * cells, the output layer, the bridge, W_k, combine) read their weights
     * in: 0 as stored (f32,
     * or the 16-bit type `clgraph quantize` wrote), CG_F32 (16-bit weights
     * widened at load, int8 ones dequantized), CG_BF16 / CG_F16 (f32
     * weights narrowed at load, rounded to nearest even: half the bytes per
     * step), or CG_I8 (quantized at load to int8 with one scale per row, as
     * cg_tensor_quantize_rows: a quarter of the bytes), for a quick try of a
     * model before quantizing it. Applies to the builder's graphs, not to a
     * model.cg (which declares its own).
     */
    cg_dtype weights_dtype;
} cg_s2s_load_options;

/**
 * Loads a model directory: reads and checks config.json (a mistake names the
 * key), the vocabularies, the weights (a missing or mis-shaped tensor is
 * named with its expected shape), builds or reads the encoder and decoder
 * graphs, verifies them and makes their plans with `placement` (NULL: CPU).
 * `opt` NULL: every default. CG_ERR_INVALID_ARGUMENT for options whose
 * struct_size is too small or with a weights_dtype other than 0, f32,
 * bf16, f16 or i8.
 */
CG_API cg_status cg_s2s_load(cg_context *ctx, const char *dir, const cg_plan_options *placement,
                             const cg_s2s_load_options *opt, cg_s2s **out);

/**
 * A second handle on a loaded model, for another thread: it shares m's
 * weights, vocabularies and graphs (read only once loaded; nothing is
 * copied) and has plans of its own for `placement` (NULL: m's), so m and
 * its clones translate at the same time from different threads, each
 * handle used by one thread at a time. Free every handle with cg_s2s_free,
 * in any order: the shared parts go with the last. m may be translating in
 * another thread while it is cloned.
 */
CG_API cg_status cg_s2s_clone(const cg_s2s *m, const cg_plan_options *placement, cg_s2s **out);

/** Frees a model (NULL is ignored). */
CG_API void cg_s2s_free(cg_s2s *m);

/**
 * The graph text a model directory describes, as cg_s2s_load with `opt`
 * (NULL: every default) runs it: its model.cg, or the graphs the builder
 * makes from config.json and the weights' vocabulary sizes, with the
 * matrix-product weights declared in opt->weights_dtype. A model.cg with a
 * weights_dtype is the error cg_s2s_load gives. The caller frees the string.
 */
CG_API cg_status cg_s2s_graph_text(const char *dir, const cg_s2s_load_options *opt, char **out);

/**
 * Tokenizes text as the config says ("chars": every code point; "words":
 * split on whitespace), unknown tokens becoming unk_id; a Transformer
 * model with source.spm's pieces looked up in vocab.json, without the EOS
 * (cg_s2s_translate appends it). `*ids` is allocated (free() it).
 * CG_ERR_UNSUPPORTED for a Transformer directory without vocab.json: it
 * translates ids only.
 */
CG_API cg_status cg_s2s_tokenize(const cg_s2s *m, const char *text, int32_t **ids, int *n);

/** Joins target token ids into text (chars: concatenated; words: spaces;
 * a Transformer model: target.spm's detokenization, pad, EOS and unk left
 * out, as transformers' skip_special_tokens). */
CG_API cg_status cg_s2s_detokenize(const cg_s2s *m, const int32_t *ids, int n, char **text);

/** The source or target vocabulary's token for an id (NULL if out of
 * range). A Transformer model has one vocabulary for both sides; without
 * vocab.json its ids in range are "". */
CG_API const char *cg_s2s_token(const cg_s2s *m, int target, int32_t id);

/** A model's family (cg_s2s_info.family). */
enum {
    CG_S2S_FAMILY_RNN = 1,        /**< the seq2seq spec's attention RNN (docs/seq2seq.md) */
    CG_S2S_FAMILY_TRANSFORMER = 2 /**< a MarianMT-layout Transformer (docs/transformer.md) */
};

/** How cg_s2s_tokenize splits text (cg_s2s_info.tokenizer). */
enum {
    CG_S2S_TOKENS_IDS = 0,          /**< no tokenizer files: ids only, text is refused */
    CG_S2S_TOKENS_CHARS = 1,        /**< one token per character (UTF-8 byte sequence) */
    CG_S2S_TOKENS_WORDS = 2,        /**< tokens between spaces */
    CG_S2S_TOKENS_SENTENCEPIECE = 3 /**< source.spm's pieces, looked up in vocab.json */
};

/** What a loaded model is, for callers that map tokens themselves. */
typedef struct cg_s2s_info {
    size_t struct_size; /**< sizeof(cg_s2s_info), set by the caller */
    int family;         /**< CG_S2S_FAMILY_* */
    int tokenizer;      /**< CG_S2S_TOKENS_* */
    int32_t unk_id;     /**< the source vocabulary's unknown token (-1: none) */
    int32_t src_vocab;  /**< ids of the source vocabulary */
    int32_t tgt_vocab;  /**< ids of the target vocabulary */
} cg_s2s_info;

/** Fills *out (struct_size set by the caller; fields past it are left
 * alone). CG_ERR_INVALID_ARGUMENT for NULL or a struct_size too small. */
CG_API cg_status cg_s2s_get_info(const cg_s2s *m, cg_s2s_info *out);

/** The widest beam cg_s2s_translate takes: each hypothesis costs a
 * decoder row per step (state, attention, a row of log-probabilities), so a
 * beam of 100,000 would take minutes and gigabytes per sentence. */
#define CG_S2S_MAX_BEAM 1024

struct cg_s2s_result; /* below: a decoded source's hypotheses */

/**
 * Decoding options: zero-initialise, set struct_size, then what you need
 * (or pass NULL: greedy with the spec's defaults).
 */
typedef struct cg_s2s_options {
    size_t struct_size; /**< sizeof(cg_s2s_options) */
    /** beam size, at most CG_S2S_MAX_BEAM; 1: greedy; 0: the model's
     * default (the RNN family: greedy; the Transformer family:
     * generation_config.json's num_beams) */
    int beam;
    int nbest;    /**< hypotheses returned per source (beam only); 0: 1 */
    double alpha; /**< length-penalty exponent (beam); 0: raw score */
    /** tokens generated, EOS included; 0: the model's default (the RNN
     * family: 2 x source length + 10, at least min_len; the Transformer
     * family: generation_config.json's max_length - 1, the decoder start
     * not counted) */
    int max_len;
    /**
     * The fewest tokens a hypothesis ends with, EOS included as max_len
     * counts it: EOS's log-probability is taken as -inf (masked, as
     * CTranslate2's min_decoding_length and Hugging Face's min_length do)
     * at every step that would end it with fewer, so each hypothesis has at
     * least min_len - 1 tokens before its EOS (or ends at max_len without
     * one). 0 or 1: no minimum. At most max_len when max_len is set.
     */
    int min_len;
    int batch;     /**< sentences decoded together; 0: 32 */
    int attention; /**< non-zero: return attention weights */
    /** CG_S2S_* flags (0: none). */
    int flags;
    /**
     * The attention maps of a Transformer model: its last decoder layer's
     * cross-attention weights, averaged over the heads (0) or of head N
     * (1-based). The RNN family's attention has one head: 0 or 1.
     */
    int attention_head;
    /**
     * Called as soon as source `i`'s result is final, before the rest of
     * its batch is (a sentence leaves the decode when it ends): `result` is
     * `results[i]`, filled. Read it, do not free it; it stays the caller's
     * array's, and a cg_s2s_translate that fails later clears it with the
     * others. Called on the thread that called cg_s2s_translate, once per
     * source. NULL: not called.
     */
    void (*done)(int i, const struct cg_s2s_result *result, void *user);
    /**
     * Asked once per decoding step for each source still decoding: return
     * 0 to drop source `i` (a client that went away). Its rows leave the
     * batch at once, its result stays empty (no hypotheses) and `done` is
     * not called for it. Called on the thread that called
     * cg_s2s_translate. NULL: nothing is dropped.
     */
    int (*keep)(int i, void *user);
    void *user; /**< given to `done` and `keep` */
} cg_s2s_options;

/** cg_s2s_options.flags: `alpha` is used as given even when it is 0.
 * Without it, alpha 0 is the model's default: no penalty (the RNN family),
 * generation_config.json's length_penalty (the Transformer family). */
#define CG_S2S_ALPHA_SET 1

/** One hypothesis. */
typedef struct cg_s2s_hyp {
    int32_t *tokens; /**< output token ids, without BOS and the final EOS */
    int n_tokens;
    double score;     /**< greedy: sum of log-probs (EOS included); beam: normalised */
    float *attention; /**< n_steps x src_len weights when asked (row per generated token) */
    int n_steps;      /**< rows of `attention`: n_tokens, plus 1 when it ended with EOS */
} cg_s2s_hyp;

/** The hypotheses of one source, best first. */
typedef struct cg_s2s_result {
    int n_hyps;
    cg_s2s_hyp *hyps;
    int src_len;
} cg_s2s_result;

/** Called after each batch with the number of sources done. */
typedef void (*cg_s2s_progress_fn)(int done, int total, void *user);

/**
 * Decodes `n` sources given as token ids (`src[i]`, `src_len[i]` tokens,
 * without BOS/EOS) into `results[n]` (in input order). Sentences are sorted
 * by length into batches; finished ones leave the batch; a sentence's result
 * does not depend on the batch it is in. `opt` NULL: the model's defaults
 * (the RNN family: greedy with the spec's defaults). CG_ERR_INVALID_ARGUMENT
 * for options whose struct_size is too small, a negative count, a beam
 * wider than CG_S2S_MAX_BEAM, an nbest larger than the beam, or a min_len
 * over a max_len that is set.
 *
 * A Transformer model searches as transformers' generate() does
 * (docs/transformer.md): its length penalty score / len^alpha, its
 * early_stopping, the banned ids and the forced EOS of
 * generation_config.json; a source that does not end with EOS gets one;
 * beam and greedy scores are the sums of the log-probabilities (beam:
 * divided by the penalty). Its attention rows have a column per source
 * token given (`src_len[i]`: the weight of the EOS it appends is left out).
 */
CG_API cg_status cg_s2s_translate(cg_s2s *m, const cg_s2s_options *opt, int n, const int32_t *const *src,
                                  const int *src_len, cg_s2s_result *results, cg_s2s_progress_fn progress, void *user);

/**
 * A continuous decode (either family): sources join the running batch at
 * the next step (cg_s2s_stream_add) and leave it when they end, so a long
 * sentence holds no short one back. Each source's result goes to the
 * options' `done` with the tag it was added with, as soon as it ends;
 * `keep` may drop one. A source's result is the same as cg_s2s_translate's,
 * in whatever company it decodes (a Transformer's: the same tokens, its
 * score up to the order of sums over masked cache positions). Used by one
 * thread at a time.
 */
typedef struct cg_s2s_stream cg_s2s_stream;

/**
 * Opens a stream on m with options `opt` (as cg_s2s_translate's; `batch`
 * is not used) for at most `max_sentences` sources decoding at once.
 * CG_ERR_UNSUPPORTED for a model.cg whose decoder reads the keys per row;
 * CG_ERR_INVALID_ARGUMENT as cg_s2s_translate for bad options or a
 * max_sentences below 1.
 */
CG_API cg_status cg_s2s_stream_open(cg_s2s *m, const cg_s2s_options *opt, int max_sentences, cg_s2s_stream **out);

/** Sources that can be added now: max_sentences less those decoding or waiting. */
CG_API int cg_s2s_stream_room(const cg_s2s_stream *s);

/** Sources decoding or waiting to join. */
CG_API int cg_s2s_stream_pending(const cg_s2s_stream *s);

/**
 * Adds n sources (token ids, copied) that join at the next step; tags[i]
 * is what `done` and `keep` are given for source i. CG_ERR_INVALID_ARGUMENT
 * for more than cg_s2s_stream_room, a bad length or an id outside the
 * source vocabulary (then nothing is added).
 */
CG_API cg_status cg_s2s_stream_add(cg_s2s_stream *s, int n, const int32_t *const *src, const int *src_len,
                                   const int *tags);

/**
 * One decoding step: the waiting sources are encoded and join, every
 * live row takes a token, and sources that end are given to `done`.
 * Nothing to do when none is pending. After a failure, free the stream:
 * the sources it held are lost.
 */
CG_API cg_status cg_s2s_stream_step(cg_s2s_stream *s);

/** Frees a stream and what it still holds (NULL is ignored). */
CG_API void cg_s2s_stream_free(cg_s2s_stream *s);

/** Frees what cg_s2s_translate put in one result. */
CG_API void cg_s2s_result_clear(cg_s2s_result *r);

/**
 * A deep copy of `src` (its hypotheses, tokens and attention) into `dst`,
 * which the caller frees with cg_s2s_result_clear; `dst` is overwritten,
 * not freed first. For a `done` callback, whose result is cleared after it
 * returns. CG_ERR_NO_MEMORY leaves `dst` empty (zeroed);
 * CG_ERR_INVALID_ARGUMENT for a NULL argument.
 */
CG_API cg_status cg_s2s_result_copy(cg_s2s_result *dst, const cg_s2s_result *src);

/**
 * The plan statistics of the model's encoder and decoder summed over every
 * run since loading (see cg_plan_stats_get; either pointer may be NULL).
 * The decoder runs once per step, so differences of `decoder_total` across
 * a translation give the per-step allocations and OpenCL objects created.
 * `decoder_total` is the plan the last translation ran: graph decoder, or
 * decoder_logp for a beam wider than decoder's top_logp serves.
 */
CG_API cg_status cg_s2s_stats(const cg_s2s *m, cg_plan_stats *encoder_total, cg_plan_stats *decoder_total);

/**
 * The plan a loaded model runs for graph `graph`: "encoder", "decoder", or
 * "decoder_logp" (the whole log_softmax for beams wider than the decoder's
 * top_logp serves; planned here on first request, as that beam would), with
 * the placement cg_s2s_load was given. The plan stays the model's: do not
 * free it; it lives until cg_s2s_free. Give it to cg_plan_describe with a
 * binding of the model's dimensions to see where every node runs. `*plan` is
 * NULL (and the status CG_OK) for "decoder_logp" when the model has no such
 * graph (a model.cg may leave it out, a Transformer has none); any other
 * name is CG_ERR_INVALID_ARGUMENT, except a Transformer's "cross_kv" and
 * "decoder_step" ("decoder" is that one too: the plan each step runs).
 */
CG_API cg_status cg_s2s_plan(cg_s2s *m, const char *graph, cg_plan **plan);

/**
 * The model's graphs, to read (cg_model_graph, cg_graph_input_dims, ...:
 * e.g. the symbolic dimensions to bind for cg_plan_describe); owned by the
 * model and valid until cg_s2s_free. NULL for NULL.
 */
CG_API const cg_model *cg_s2s_model(const cg_s2s *m);

/**
 * Bytes of the decoder graph's parameters (every parameter once, at its
 * declared dtype and shape): what a decoder step reads from memory at most,
 * the embedding table included although a step gathers only its rows.
 * 0 for NULL.
 */
CG_API size_t cg_s2s_decoder_weight_bytes(const cg_s2s *m);

#ifdef __cplusplus
}
#endif
#endif /* CLGRAPH_SEQ2SEQ_H */
