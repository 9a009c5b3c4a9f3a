/* One batch of sentences being decoded: what the batch driver
 * (s2s_decode.c) and the decoder's I/O binding (s2s_io.c) share. */
#ifndef CG_SEQ2SEQ_S2S_BATCH_H
#define CG_SEQ2SEQ_S2S_BATCH_H

#include "s2s_internal.h"
#include "s2s_search.h"

/* The decoder's tensors by input and output position, with room for the
 * most rows; every array is sized from the graph's interface. */
typedef struct s2s_io {
    const s2s_dec_iface *f;
    cg_tensor **in, **out;   /* [n_in], [n_out] */
    unsigned char *borrowed; /* [n_in]: in[k] is the encoder's tensor, not ours */
    int *idx;                /* [n_in]: 0 .. n_in - 1 */
    int n_in_c;              /* the inputs a carried step gives: all but the state */
    int *idx_c;              /* [n_in] */
    cg_tensor **in_c;        /* [n_in] */
    cg_tensor **out_run;     /* [n_out]: the outputs the plan gives back (NULL: stays on its device) */
} s2s_io;

typedef struct s2s_batch {
    cg_s2s *m;
    const cg_s2s_options *o;
    int nb;       /* sentences */
    int S;        /* the longest source */
    int max_rows; /* nb x k */
    /* The encoder's outputs, one row per sentence, by output position;
     * s0[decoder_layers] (NULL: that layer starts at 0). */
    cg_tensor *elen, **eout, *keys_t, *kproj_t;
    const float **s0;
    /* The decoder step's plan and tensors. */
    cg_plan *dec;
    s2s_io x;
    int io_ok;
    /* Sentences, live rows (R) and the search that chooses the next. */
    s2s_search s;
    s2s_sent *ss;
    s2s_row *rows;
    int R;
    /* The rows' initial recurrent state (the first step's; the plan
     * carries it from there). */
    float *state;
    int t;                  /* the step */
    cg_s2s_result *results; /* the caller's, by source index */
    /* A stream (s2s_stream.c): the state outputs are read back every step,
     * and a step where sentences join gives the state inputs, state_given
     * rows (the last step's rows, then one per joining sentence). */
    int stream, state_given;
} s2s_batch;

/* The tokens a sentence of `len` tokens may generate under o. */
int s2s_max_len_of(const cg_s2s_options *o, int len);

/* Runs the encoder over the sources ids[0..bt->nb) padded to bt->S into
 * bt->eout, bt->elen, keys_t, kproj_t and s0 (free them with
 * s2s_encode_free). */
cg_status s2s_encode(s2s_batch *bt, const int *ids, const int32_t *const *src, const int *src_len);
void s2s_encode_free(s2s_batch *bt);

/* The caller's options checked and completed into *o (the model's
 * defaults), with the n sources they will decode (either family). */
cg_status s2s_check_options(cg_s2s *m, const cg_s2s_options *opt, int n, const int32_t *const *src, const int *src_len,
                            cg_s2s_options *o);

/* The decoder plan for bt's search and its tensors (s2s_io_init). */
cg_status s2s_open_decoder(s2s_batch *bt);

/* One step: the decoder over the live rows, the search's choice, the next
 * step's rows, dropped sentences out (s2s_drop) and ended ones' results
 * out (s2s_finish). */
cg_status s2s_step(s2s_batch *bt);

/* After a stream's join changed the per-sentence tensors (keys, keys_proj,
 * src_len) or their width bt->S: the decoder's inputs point at them and
 * the attention output has the new width. */
cg_status s2s_io_rebind(s2s_batch *bt);

/* Floats of one row's state: h[L], c[L], htilde. */
static inline size_t s2s_state_row(const s2s_batch *bt) {
    return (size_t)(2 * bt->m->shared->cfg.decoder_layers + 1) * (size_t)bt->m->shared->cfg.hidden;
}

/* The decoder's tensors for bt->max_rows rows over bt->S source positions
 * for interface f; the encoder's keys, keys_proj and src_len (one row per
 * sentence) are read as they are. */
cg_status s2s_io_init(s2s_batch *bt, const s2s_dec_iface *f);
void s2s_io_free(s2s_io *x);

/* One decoder step over the live rows, padded to a power of two by
 * repeating the last real row. */
cg_status s2s_io_step(s2s_batch *bt);

/* The step's outputs as the search reads them. */
void s2s_io_scores(const s2s_batch *bt, s2s_scores *so);

#endif
