/* cg_s2s_translate with its per-source `done` callback checked: each
 * source reported once, with its own result, which is the one the call
 * leaves; and, for a greedy decode in one batch, in the order the sources
 * finish (fewer steps first): a sentence leaves its batch when it ends. */
#ifndef CG_TU_S2S_H
#define CG_TU_S2S_H

#include "clgraph/seq2seq.h"

/* cg_s2s_translate(m, opt, ...) with those checks (opt NULL: defaults);
 * its status, with the reports checked only when it is CG_OK. opt->done
 * must be NULL (this sets its own). */
cg_status tu_s2s_translate(cg_s2s *m, const cg_s2s_options *opt, int n, const int32_t *const *src, const int *len,
                           cg_s2s_result *res);

/* got has ref's hypotheses: as many, the same tokens, each score within
 * 1e-5 (relative): what a sentence decoded in other company gives (an
 * OpenCL device's reductions may group rows by the batch's size, a
 * stream's sums run over masked positions). `what` and `i` name it. */
void tu_s2s_same_hyps(const char *what, int i, const cg_s2s_result *ref, const cg_s2s_result *got);

/* Translates the sources with `keep` dropping every odd-numbered source
 * at its second step (the first when it has one step only): each dropped
 * one is never reported and left empty, and every other result is the
 * same tokens, and the score within 1e-5 (relative), as in a run that
 * drops nothing. */
void tu_s2s_check_drop(cg_s2s *m, const cg_s2s_options *opt, int n, const int32_t *const *src, const int *len);

/* The n sources through a stream of `room` sentences (opt's options),
 * source i added with tag i at every `every`-th step while there is room:
 * each reported once, its result deep-copied into res[i] (the caller
 * clears them). The stream is left to *out when out is not NULL (the
 * caller frees it), else freed. Returns the steps it took. */
int tu_s2s_stream(cg_s2s *m, const cg_s2s_options *opt, int room, int every, int n, const int32_t *const *src,
                  const int *len, cg_s2s_result *res, cg_s2s_stream **out);

#endif
