/* The Transformer family behind the seq2seq API (include/clgraph/seq2seq.h):
 * cg_s2s_load gives a directory whose config.json names a model_type to
 * this family, and every cg_s2s_* call on that handle lands here. One
 * search serves both families (seq2seq/s2s_search.c, with transformers'
 * rules for this one); this family brings its graphs, caches and
 * tokenizer. */
#ifndef CG_TF_FAMILY_H
#define CG_TF_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "clgraph/seq2seq.h"

typedef struct tf_handle tf_handle;

/* Whether DIR/config.json names a model_type (the Transformer family's
 * mark; the RNN family's config has none). 0 when it cannot be read: the
 * RNN loader then reports the file. */
int tf_dir_is_transformer(const char *dir);

/* Loads a MarianMT-layout directory (docs/transformer.md) with its plans for
 * `placement` (NULL: CPU); wdt as cg_s2s_load_options.weights_dtype. */
cg_status tf_load(cg_context *ctx, const char *dir, const cg_plan_options *placement, cg_dtype wdt, tf_handle **out);
cg_status tf_clone(const tf_handle *h, const cg_plan_options *placement, tf_handle **out);
void tf_free(tf_handle *h);

/* The graph text the directory's model runs. */
cg_status tf_graph_text(const char *dir, cg_dtype wdt, char **out);

/* A source's ids without EOS (cg_s2s_translate appends it). */
cg_status tf_tokenize(const tf_handle *h, const char *text, int32_t **ids, int *n);
cg_status tf_detokenize(const tf_handle *h, const int32_t *ids, int n, char **text);
/* The piece of an id (one vocabulary serves both sides), "" for an id in
 * range when the directory has no vocab.json, NULL out of range. */
const char *tf_token(const tf_handle *h, int32_t id);
/* The family, tokenizer, unknown id and vocabulary sizes (cg_s2s_get_info). */
void tf_info(const tf_handle *h, cg_s2s_info *out);

/* Fills the options left to the model (generation_config.json): beam 0,
 * alpha 0 without CG_S2S_ALPHA_SET, max_len 0; and checks the rest against
 * the model (positions, vocabulary). */
cg_status tf_resolve_options(const tf_handle *h, cg_s2s_options *o, int n, const int32_t *const *src,
                             const int *src_len);

/* Decodes one batch of nb sources (ids[] into src, sorted by length) into
 * results[ids[i]]. */
cg_status tf_decode_batch(tf_handle *h, const cg_s2s_options *o, int nb, const int *ids, const int32_t *const *src,
                          const int *src_len, cg_s2s_result *results);

cg_status tf_stats(const tf_handle *h, cg_plan_stats *encoder_total, cg_plan_stats *decoder_total);
/* "encoder", "cross_kv", "decoder_step" (also as "decoder": the plan each
 * step runs), or "decoder_logp" (none: NULL and CG_OK). */
cg_status tf_plan(tf_handle *h, const char *graph, cg_plan **plan);
const cg_model *tf_model(const tf_handle *h);
size_t tf_decoder_weight_bytes(const tf_handle *h);

/* A continuous decode (cg_s2s_stream; tf_stream.c): `run` the resolved
 * options (kept by the caller while the stream lives), results[cap] the
 * caller's, one per slot, passed to run->done as sentences end. */
typedef struct tf_stream tf_stream;
cg_status tf_stream_open(tf_handle *h, const cg_s2s_options *run, int cap, cg_s2s_result *results, tf_stream **out);
/* Sources joining at the next step (each with its EOS appended unless it
 * has one): encoded, their slots in slot[0..n) (free ones, at most the
 * room cap minus tf_stream_live leaves). */
cg_status tf_stream_join(tf_stream *ts, int n, const int32_t *const *src, const int *len, int *slot);
/* One step of the live rows (none: nothing). */
cg_status tf_stream_run(tf_stream *ts);
/* Sentences decoding. */
int tf_stream_live(const tf_stream *ts);
/* Times the caches were cut short (tests). */
long tf_stream_trims(const tf_stream *ts);
void tf_stream_free(tf_stream *ts);

#endif
