/* The Transformer family's graphs as IR text (as seq2seq/s2s_build.c
 * writes the RNN family's): `encoder` (source ids, their lengths and the
 * position rows -> the encoder's output) and `decoder` (target ids, their
 * position rows, the encoder's output and the source lengths -> logits of
 * every target position, causal self-attention: the teacher-forced
 * forward), in transformers' MarianMTModel's order of operations. */
#ifndef CG_TF_BUILD_H
#define CG_TF_BUILD_H

#include <stdint.h>

#include "tf_config.h"
#include "weights.h"

/* Candidates per row graph decoder_step keeps (top_logp, top_id): greedy
 * reads 1 or 2, a beam of k reads 2k plus the banned ids; wider beams read
 * its logits. */
#define TF_TOP_K 16

/* Which weight names the file has (weights are looked up under
 * transformers' names; tied and shared embeddings by the names present). */
typedef int (*tf_has_fn)(const char *name, void *user);

/* The graph text into *out (free() it). */
cg_status tf_build_text(const tf_config *c, tf_has_fn has, void *user, char **out);

/* Rows start .. start + n - 1 of MarianMT's sinusoidal position table
 * (sines in the first half of each row, cosines in the second, computed in
 * double as transformers does, rounded to f32) into out [n, d_model]. */
void tf_positions(const tf_config *c, int64_t start, int64_t n, float *out);

/* Rows start .. start + n - 1 of side dec's (1: the decoder's) position
 * table into out [n, d_model]: the sinusoidal one (tf_positions), or BART's
 * learned model.<side>.embed_positions.weight from w (row = position + 2). */
cg_status tf_position_rows(const tf_config *c, cg_weights *w, int dec, int64_t start, int64_t n, float *out);

#endif
