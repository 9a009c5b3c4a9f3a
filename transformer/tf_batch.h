/* A batch (or a stream's running batch) of the Transformer family's
 * decoding: what tf_decode.c (the batch driver) shares with tf_stream.c. */
#ifndef CG_TF_BATCH_H
#define CG_TF_BATCH_H

#include "s2s_search.h"
#include "tf_internal.h"

typedef struct tf_batch {
    tf_handle *h;
    const cg_s2s_options *o;
    int nb, S, max_rows, V;
    int S_enc;             /* the longest source; S: the decoder's width, padded */
    int wide;              /* the search needs more than TF_TOP_K candidates: logits read, log_softmax here */
    int32_t **src;         /* the sources with their EOS */
    int *len;              /* their lengths */
    int *given;            /* the lengths the caller gave (the attention maps' columns) */
    cg_tensor *enc, *elen; /* the encoder's output, the lengths */
    cg_tensor **ckv;       /* [2L]: ck0, cv0, ck1, ... */
    cg_plan *step;         /* decoder_step, or decoder_step_maps for attention maps */
    cg_tensor **in, **out; /* decoder_step_maps' tensors by position */
    int *idx, n_first;     /* every input (the first step) ... */
    int *idx_c, n_c;       /* ... and all but the carried caches */
    cg_tensor **in_c;
    float *logp; /* wide: [max_rows, V] */
    float *att;  /* attention: [max_rows, S], the rows' maps (heads averaged or one) */
    s2s_search s;
    s2s_sent *ss;
    s2s_row *rows;
    int R, t;
    cg_s2s_result *results; /* the caller's, by source index */
    /* A stream (tf_stream.c): rows at positions of their own, the
     * decoder_step_stream graphs (ypos per row, input rstart). */
    int stream;
    int P;             /* the caches' positions after the last step */
    int give;          /* the next step gives the caches: a fresh start (P == 0) or a trim */
    int keep_arenas;   /* encode() leaves the encoder's arenas (a stream's joins come often) */
    int *rs, *rs_prev; /* [max_rows]: each row's leading cache positions that are not its own */
    float *pos;        /* [n_pos, D]: the decoder's position rows 0 .. n_pos - 1, made once */
    int n_pos;
    int trim;   /* this step reads its caches back, dropping the first `trim` positions after */
    long trims; /* trims done (tests) */
} tf_batch;

/* The sources ids[0..nb) of src / src_len with their EOS, the decoder's
 * width bt->S padded. */
cg_status tf_batch_sources(tf_batch *bt, const int *ids, const int32_t *const *src, const int *src_len);
/* The encoder and every layer's cross-attention keys and values (bt->ckv,
 * over the handle's buffer; bt->elen the lengths). */
cg_status tf_batch_encode(tf_batch *bt);
/* The search's settings from bt->o and the model's generation config. */
void tf_batch_search_init(tf_batch *bt);
/* decoder_step's (or the stream's) plan and tensors for bt->max_rows rows. */
cg_status tf_batch_open_step(tf_batch *bt);
/* The index lists of one run from bt->in (after a tensor of it changed). */
void tf_batch_bind(tf_batch *bt);
/* One step over the live rows and the search's choice. */
cg_status tf_batch_step(tf_batch *bt);
/* What the batch holds (not the handle's). */
void tf_batch_free(tf_batch *bt);

#endif
