/* libFuzzer target for the .npy reader: a file that loads must save and load
 * again to the same tensor (dtype, shape, bytes); one that does not leaves
 * a one-line message naming the file. */
#include "clgraph/clgraph.h"
#include "fuzz_mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static cg_fuzz_file in, again;
    const char *path = cg_fuzz_put(&in, "fuzz.npy", data, size);
    cg_tensor *t = NULL, *u = NULL;
    if (cg_tensor_load_npy(path, &t) != CG_OK) {
        if (t) abort();
        cg_fuzz_check_message(cg_last_error(), path);
        return 0;
    }
    const char *p2 = cg_fuzz_put(&again, "again.npy", NULL, 0);
    if (cg_tensor_save_npy(t, p2) != CG_OK || cg_tensor_load_npy(p2, &u) != CG_OK) abort();
    if (cg_tensor_dtype(t) != cg_tensor_dtype(u) || cg_tensor_ndim(t) != cg_tensor_ndim(u)) abort();
    for (int d = 0; d < cg_tensor_ndim(t); d++)
        if (cg_tensor_dim(t, d) != cg_tensor_dim(u, d)) abort();
    size_t bytes = (size_t)cg_tensor_numel(t) * cg_dtype_size(cg_tensor_dtype(t));
    if (cg_tensor_numel(t) != cg_tensor_numel(u) || (bytes && memcmp(cg_tensor_data(t), cg_tensor_data(u), bytes)))
        abort();
    cg_tensor_free(t);
    cg_tensor_free(u);
    return 0;
}
