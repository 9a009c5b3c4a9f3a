/* The loaded seq2seq model, shared by the loader and the decoders. */
#ifndef CG_SEQ2SEQ_S2S_INTERNAL_H
#define CG_SEQ2SEQ_S2S_INTERNAL_H

#include <string.h>

#include "s2s.h"
#include "s2s_iface.h"
#include "tf_family.h"

/* What a model and its clones share (cg_s2s_clone): read only once loaded,
 * freed with the last handle. */
typedef struct s2s_shared {
    _Atomic int refs;
    char *dir;
    s2s_config cfg;
    s2s_vocab src, tgt;
    cg_weights *weights;
    cg_model *model;
    s2s_iface iface; /* the graphs' inputs and outputs by position */
} s2s_shared;

/* A handle: the shared model and the plans of its own; or a Transformer
 * model's handle (tf non-NULL, the rest unused), to which every call goes. */
struct cg_s2s {
    tf_handle *tf;
    s2s_shared *shared;
    cg_plan *enc, *dec;
    cg_plan *dec_logp;    /* graph decoder_logp, planned for the first beam wider than top_k / 2 */
    cg_plan *last_dec;    /* the decoder plan the last batch ran (cg_s2s_stats) */
    char *device, *place; /* the placement, for plans made after loading */
};

/* The decoder plan for `need` candidates per row (1 greedy, 2k beam):
 * m->dec when it keeps that many (or outputs logp), else decoder_logp,
 * planned on first use; *io: that graph's interface. */
cg_status cg_s2s_decoder_plan(cg_s2s *m, int need, cg_plan **plan, const s2s_dec_iface **io);

#endif
