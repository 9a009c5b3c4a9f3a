/* The loaded seq2seq model, shared by the loader and the decoders. */
#ifndef CG_SEQ2SEQ_S2S_INTERNAL_H
#define CG_SEQ2SEQ_S2S_INTERNAL_H

#include <string.h>

#include "s2s.h"

/* What a model and its clones share (cg_s2s_clone): read only once loaded,
 * freed with the last handle. */
typedef struct s2s_shared {
    _Atomic int refs;
    char *dir;
    s2s_vocab src, tgt;
    cg_weights *weights;
    cg_model *model;
} s2s_shared;

struct cg_s2s {
    s2s_shared *shared;  /* owns what the next five point at */
    char *dir;
    s2s_config cfg;
    s2s_vocab src, tgt;  /* copies of shared's: the same tokens */
    cg_weights *weights;
    cg_model *model;
    cg_plan *enc, *dec;
    int top_k;          /* k of decoder's top_logp / top_id; 0: it outputs logp */
    cg_plan *dec_logp;  /* graph decoder_logp, planned for the first beam wider than top_k / 2 */
    cg_plan *last_dec;  /* the decoder plan the last batch ran (cg_s2s_stats) */
    char *device, *place; /* the placement, for plans made after loading */
};

/* A decoder state input: h<l>, c<l> or htilde (carried from <name>_new). */
static inline int s2s_is_state(const char *name) {
    if (!strcmp(name, "htilde")) return 1;
    if ((name[0] != 'h' && name[0] != 'c') || !name[1]) return 0;
    for (const char *q = name + 1; *q; q++)
        if (*q < '0' || *q > '9') return 0;
    return 1;
}

/* The decoder plan for `need` candidates per row (1 greedy, 2k beam):
 * m->dec when it keeps that many (or outputs logp), else decoder_logp,
 * planned on first use. */
cg_status cg_s2s_decoder_plan(cg_s2s *m, int need, cg_plan **plan, const char **graph);

#endif
