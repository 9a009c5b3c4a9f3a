/* libFuzzer target for the ONNX importer: the input is a model file. One
 * that imports prints as text that parses back and prints the same (names
 * quoted where they must be); one that does not leaves a one-line message
 * naming the file. The same bytes also go through the TensorProto reader
 * (cg_tensor_load_onnx) and the SequenceProto and OptionalProto one
 * (cg_tensors_load_onnx), which must load or fail the same way. */
#include "clgraph/clgraph.h"
#include "fuzz_mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static cg_context *ctx;

static void done(void) { cg_context_free(ctx); }

/* The bytes as a sequence or optional value file. */
static void load_values(const char *path, cg_onnx_kind kind) {
    int n = -1;
    cg_tensor **t = NULL;
    cg_onnx_kind held;
    char *name = NULL;
    if (cg_tensors_load_onnx(path, kind, &n, &t, &held, &name) != CG_OK) {
        if (t || name || n) abort();
        cg_fuzz_check_message(cg_last_error(), path);
        return;
    }
    if (!name || n < 0 || (n && !t)) abort();
    for (int i = 0; i < n; i++) cg_tensor_free(t[i]);
    free(t);
    free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static cg_fuzz_file in;
    if (!ctx) {
        if (cg_context_create(NULL, &ctx) != CG_OK) abort();
        atexit(done);
    }
    const char *path = cg_fuzz_put(&in, "fuzz.onnx", data, size);
    cg_model *m = NULL, *m2 = NULL;
    if (cg_model_load_onnx(ctx, path, NULL, &m) != CG_OK) {
        if (m) abort();
        cg_fuzz_check_message(cg_last_error(), path);
    } else {
        char *t1 = NULL, *t2 = NULL;
        if (cg_model_print(m, &t1) != CG_OK || cg_model_parse(ctx, t1, strlen(t1), "again.cg", &m2) != CG_OK ||
            cg_model_print(m2, &t2) != CG_OK || strcmp(t1, t2) != 0) {
            fprintf(stderr, "imported model does not print and parse back: %s\n", cg_last_error());
            abort();
        }
        free(t1);
        free(t2);
        cg_model_free(m2);
        cg_model_free(m);
    }
    load_values(path, CG_ONNX_SEQUENCE);
    load_values(path, CG_ONNX_OPTIONAL);
    cg_tensor *t = NULL;
    char *name = NULL;
    if (cg_tensor_load_onnx(path, &t, &name) != CG_OK) {
        if (t || name) abort();
        cg_fuzz_check_message(cg_last_error(), path);
        return 0;
    }
    if (!name || cg_tensor_numel(t) < 0) abort();
    free(name);
    cg_tensor_free(t);
    return 0;
}
