/* libFuzzer target for the vocabulary reader (seq2seq/s2s_vocab.c): no
 * crash or leak; in a file that loads every token is found; a rejected one
 * leaves a one-line message naming it. */
#include "clgraph/clgraph.h"
#include "fuzz_mem.h"
#include "s2s.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static cg_fuzz_file f;
    const char *path = cg_fuzz_put(&f, "src.vocab", data, size);
    s2s_vocab v;
    memset(&v, 0, sizeof v);
    if (cg_s2s_vocab_read(path, &v) != CG_OK) {
        cg_fuzz_check_message(cg_last_error(), path);
        return 0;
    }
    for (int i = 0; i < v.n; i++) {
        int j = cg_s2s_vocab_find(&v, v.tokens[i], strlen(v.tokens[i]));
        if (j < 0 || j >= v.n || strcmp(v.tokens[j], v.tokens[i])) abort();
    }
    cg_s2s_vocab_free(&v);
    return 0;
}
