/* tf_spm.h in a build without SentencePiece (-Dsentencepiece=disabled, or
 * libsentencepiece-dev missing): Marian-layout models cannot be tokenized. */
#include "tf_spm.h"

#include "error.h"

cg_status tf_spm_load(const char *path, tf_spm **out) {
    *out = NULL;
    return cg_error(CG_ERR_UNSUPPORTED,
                    "%s: this build has no SentencePiece (install libsentencepiece-dev and rebuild; "
                    "README \"Build options\")",
                    path);
}

void tf_spm_free(tf_spm *m) { (void)m; }

cg_status tf_spm_encode(const tf_spm *m, const char *text, char ***pieces, int *n) {
    (void)m;
    (void)text;
    *pieces = NULL;
    *n = 0;
    return cg_error(CG_ERR_UNSUPPORTED, "this build has no SentencePiece");
}

cg_status tf_spm_decode(const tf_spm *m, const char *const *pieces, int n, char **text) {
    (void)m;
    (void)pieces;
    (void)n;
    *text = NULL;
    return cg_error(CG_ERR_UNSUPPORTED, "this build has no SentencePiece");
}
