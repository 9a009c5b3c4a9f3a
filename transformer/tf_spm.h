/* SentencePiece (Debian's libsentencepiece) behind a C interface: load a
 * model file, split text into pieces, join pieces into text. The only C++ of
 * the library (tf_spm.cc); a build without SentencePiece gets tf_spm_none.c,
 * whose load fails with CG_ERR_UNSUPPORTED. */
#ifndef CG_TF_SPM_H
#define CG_TF_SPM_H

#include <stddef.h>

#include "clgraph/clgraph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_spm tf_spm;

/* Loads a SentencePiece model (source.spm, target.spm); a failure names the
 * path and SentencePiece's reason. */
cg_status tf_spm_load(const char *path, tf_spm **out);
void tf_spm_free(tf_spm *m);

/* The pieces of UTF-8 `text` (its normalisation, then the model's best
 * segmentation) as n NUL-terminated strings in one block: (*pieces)[i]
 * point into it; free(*pieces) frees all. */
cg_status tf_spm_encode(const tf_spm *m, const char *text, char ***pieces, int *n);

/* The text of n pieces (the inverse of encode; pieces the model lacks are
 * written as they are), in *text (free() it). */
cg_status tf_spm_decode(const tf_spm *m, const char *const *pieces, int n, char **text);

#ifdef __cplusplus
}
#endif
#endif
