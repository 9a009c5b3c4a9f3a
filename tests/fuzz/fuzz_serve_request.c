/* libFuzzer target for `clgraph serve`'s infer request parser
 * (serve/srv_oip.c): any body either parses into one tensor per model input
 * of the model's dtype and rank, whose response then builds, or is refused
 * with status 400 and a one-line message, the request left empty.
 * A first byte 0 makes the next byte times 8 the JSON's length (the
 * Inference-Header-Content-Length of the binary tensor extension). */
#include <stdlib.h>
#include <string.h>

#include "srv_oip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const srv_model_io *fuzz_io(void) {
    static srv_model_io io;
    if (io.n_in) return &io;
    io.n_in = 3;
    io.in[0] = (srv_io){"x", CG_F32, 3, {-1, -1, 8}};
    io.in[1] = (srv_io){"ids", CG_I64, 1, {-1}};
    io.in[2] = (srv_io){"flag", CG_BOOL, 1, {3}};
    io.n_out = 2;
    io.out[0] = (srv_io){"y", CG_F32, 2, {-1, 8}};
    io.out[1] = (srv_io){"h", CG_BF16, 1, {-1}};
    return &io;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int64_t header_len = -1;
    if (size >= 2 && data[0] == 0) {
        header_len = (int64_t)data[1] * 8;
        data += 2;
        size -= 2;
    }
    const srv_model_io *io = fuzz_io();
    const srv_limits lim = {16, 1 << 16};
    srv_infer_req req;
    char err[512] = "";
    int rc = srv_parse_infer((const char *)data, size, header_len, &lim, io, &req, err, sizeof err);
    if (rc) {
        if (rc != 400 || !err[0] || strchr(err, '\n') || req.in[0] || req.id) abort();
        return 0;
    }
    for (int k = 0; k < io->n_in; k++) {
        const cg_tensor *t = req.in[k];
        if (!t || cg_tensor_dtype(t) != io->in[k].dtype || cg_tensor_ndim(t) != io->in[k].ndim) abort();
        int64_t bytes = cg_tensor_numel(t) * (int64_t)cg_dtype_size(cg_tensor_dtype(t));
        if (bytes > lim.max_tensor_bytes) abort();
    }
    /* outputs of the rows given: the response must build */
    cg_tensor *out[2] = {0};
    const int64_t rows = cg_tensor_dim(req.in[0], 0);
    const int64_t dy[2] = {rows, 8}, dh[1] = {rows};
    if (cg_tensor_create(CG_F32, 2, dy, &out[0]) || cg_tensor_create(CG_BF16, 1, dh, &out[1])) abort();
    memset(cg_tensor_data(out[0]), 0, (size_t)(rows * 8) * sizeof(float));
    memset(cg_tensor_data(out[1]), 0, (size_t)rows * 2);
    srv_buf body = {0};
    size_t json_len = 0;
    if (srv_infer_response("m", io, &req, out, &body, &json_len)) abort();
    if (json_len > body.n) abort();
    srv_buf_free(&body);
    cg_tensor_free(out[0]);
    cg_tensor_free(out[1]);
    srv_infer_req_clear(&req);
    return 0;
}
