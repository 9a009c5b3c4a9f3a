/* ONNX import of a build without it (-Donnx=disabled, or protobuf-c or
 * onnx.proto not found at configure time), in place of the importer: every
 * entry point fails with CG_ERR_UNSUPPORTED and says why. */
#include "clgraph/clgraph.h"
#include "error.h"

#define NO_ONNX "this build of clgraph has no ONNX support (configured with -Donnx=disabled or without protobuf-c)"

cg_status cg_model_load_onnx(cg_context *ctx, const char *path, const cg_onnx_options *opt, cg_model **out) {
    (void)ctx, (void)opt;
    if (out) *out = NULL;
    return cg_error(CG_ERR_UNSUPPORTED, "%s: %s", path ? path : "(null)", NO_ONNX);
}

cg_status cg_tensor_load_onnx(const char *path, cg_tensor **out, char **name) {
    if (out) *out = NULL;
    if (name) *name = NULL;
    return cg_error(CG_ERR_UNSUPPORTED, "%s: %s", path ? path : "(null)", NO_ONNX);
}

cg_status cg_tensors_load_onnx(const char *path, cg_onnx_kind kind, int *n, cg_tensor ***out, cg_onnx_kind *held,
                               char **name) {
    (void)kind, (void)held;
    if (n) *n = 0;
    if (out) *out = NULL;
    if (name) *name = NULL;
    return cg_error(CG_ERR_UNSUPPORTED, "%s: %s", path ? path : "(null)", NO_ONNX);
}

cg_status cg_onnx_io_kinds(const char *path, int outputs, int *n, cg_onnx_kind **kinds) {
    (void)outputs;
    if (n) *n = 0;
    if (kinds) *kinds = NULL;
    return cg_error(CG_ERR_UNSUPPORTED, "%s: %s", path ? path : "(null)", NO_ONNX);
}
