/* The loaded seq2seq model, shared by the loader and the decoders. */
#ifndef CG_GRAPH_S2S_INTERNAL_H
#define CG_GRAPH_S2S_INTERNAL_H

#include "s2s.h"

struct cg_s2s {
    char *dir;
    s2s_config cfg;
    s2s_vocab src, tgt;
    cg_weights *weights;
    cg_model *model;
    cg_plan *enc, *dec;
};

#endif
