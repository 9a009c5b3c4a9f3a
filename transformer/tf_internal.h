/* A loaded Transformer model and its handles: what tf_model.c (loading)
 * and tf_decode.c (decoding) share. */
#ifndef CG_TF_INTERNAL_H
#define CG_TF_INTERNAL_H

#include "tf_config.h"
#include "tf_family.h"
#include "tf_vocab.h"

/* decoder_step_maps' inputs and outputs by position (cg_plan_run_indexed);
 * decoder_step has the same but for the last output, a; the stream graphs
 * (decoder_step_stream[_maps]) one more input last, rstart. */
typedef struct tf_step_io {
    int n_in, n_out; /* decoder_step_maps': decoder_step has n_out - 1 */
    int y, ypos, sent, len, parent;
    int *ck, *cv, *pk, *pv; /* [dec_layers] inputs */
    int logits, top_v, top_i, a;
    int *nk, *nv; /* [dec_layers] outputs: the grown caches */
    int rstart;   /* the stream graphs' (== n_in) */
} tf_step_io;

/* Read only once loaded; shared by a model's handles (tf_clone). */
typedef struct tf_shared {
    _Atomic int refs;
    char *dir;
    tf_config cfg;
    tf_generation gen;
    tf_vocab vocab;
    int has_vocab; /* vocab.json and the .spm files are there */
    cg_weights *weights;
    cg_model *model;
    tf_step_io io;
} tf_shared;

struct tf_handle {
    tf_shared *sh;
    cg_plan *enc, *ckv, *step;
    cg_plan *step_maps;      /* made when a search first wants attention maps */
    cg_plan *step_stream[2]; /* decoder_step_stream, _maps: made when a stream first needs them */
    char *device, *place;
    void *ckv_mem; /* the cross-attention keys and values of a batch (tf_decode.c), kept */
    size_t ckv_cap;
};

/* The plan of decoder_step, with attention maps (decoder_step_maps) or
 * for a stream (decoder_step_stream[_maps]); but decoder_step's, made on
 * first use with the handle's placement. */
cg_status tf_step_plan(tf_handle *h, int maps, int stream, cg_plan **plan);

#endif
