/* libFuzzer target for a model directory's config.json reader
 * (seq2seq/s2s_config.c): no crash, and a rejected file leaves a one-line
 * message naming it. */
#include "clgraph/clgraph.h"
#include "fuzz_mem.h"
#include "s2s.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static cg_fuzz_file f;
    const char *path = cg_fuzz_put(&f, "config.json", data, size);
    s2s_config c;
    if (cg_s2s_config_read(path, &c) != CG_OK) cg_fuzz_check_message(cg_last_error(), path);
    return 0;
}
