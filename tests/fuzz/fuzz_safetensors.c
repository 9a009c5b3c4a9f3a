/*
 * libFuzzer target for the safetensors reader (built by -Dfuzz=true, see
 * tests/fuzz/meson.build). Each input is written to a memfd and opened
 * through /proc/self/fd/N, so the real open/mmap path runs. Besides crashes,
 * it checks invariants: a failure sets a message that starts with the path;
 * on success, every name is found at its own index, and view and get agree
 * byte for byte.
 */
#include "clgraph/clgraph.h"
#include "fuzz_mem.h"
#include "weights.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static cg_fuzz_file f;
    const char *path = cg_fuzz_put(&f, "fuzz.safetensors", data, size);

    cg_weights *w = NULL;
    if (cg_weights_open(path, &w) != CG_OK) {
        if (w != NULL || strncmp(cg_last_error(), path, strlen(path)) != 0) abort();
        return 0;
    }
    size_t n = cg_weights_count(w);
    for (size_t i = 0; i < n; i++) {
        const char *name = cg_weights_name(w, i);
        if (!name || cg_weights_find(w, name) != (int)i) abort();
        if (i > 0 && strcmp(cg_weights_name(w, i - 1), name) >= 0) abort();
        cg_tensor_desc d;
        const void *p = NULL;
        cg_tensor *t = NULL;
        cg_status sv = cg_weights_view(w, name, &d, &p);
        cg_status sg = cg_weights_get(w, name, &t);
        if (sv != sg) abort();
        if (sv != CG_OK) {
            if (p != NULL || t != NULL) abort();
            continue;
        }
        if (cg_tensor_ndim(t) != d.ndim) abort();
        size_t bytes = (size_t)cg_tensor_numel(t) * cg_dtype_size(cg_tensor_dtype(t));
        if (bytes && memcmp(p, cg_tensor_data_const(t), bytes) != 0) abort();
        cg_tensor_free(t);
    }
    cg_weights_free(w);
    return 0;
}
