/* A MarianMT vocabulary and its tokenizer, as transformers' MarianTokenizer
 * has them: vocab.json (piece -> id, one table for both sides),
 * source.spm for sources, target.spm for targets (docs/transformer.md). */
#ifndef CG_TF_VOCAB_H
#define CG_TF_VOCAB_H

#include <stdint.h>

#include "tf_spm.h"

typedef struct tf_vocab {
    tf_spm *src, *tgt;
    char **piece;   /* by id; NULL for an id no piece has */
    int32_t n;      /* ids: the largest + 1 */
    int32_t *order; /* the ids that have a piece, sorted by piece */
    int32_t n_order;
    int32_t pad, eos, unk;
} tf_vocab;

/* Reads DIR/vocab.json, DIR/source.spm and DIR/target.spm; pad and eos are
 * the model's (config.json), unk the id of "<unk>" (which vocab.json must
 * hold). Every mistake names the file. */
cg_status tf_vocab_load(const char *dir, int32_t pad, int32_t eos, tf_vocab *out);
void tf_vocab_free(tf_vocab *v);

/* The id of a piece, or -1. */
int32_t tf_vocab_find(const tf_vocab *v, const char *piece);

/* A source text's ids: source.spm's pieces, each looked up (unk when
 * vocab.json lacks it), then EOS. *ids is allocated (free() it). */
cg_status tf_vocab_encode(const tf_vocab *v, const char *text, int32_t **ids, int *n);

/* Target ids as text: pad, EOS and unk left out (skip_special_tokens), the
 * other pieces joined by target.spm. An id out of range is an error. */
cg_status tf_vocab_decode(const tf_vocab *v, const int32_t *ids, int n, char **text);

#endif
