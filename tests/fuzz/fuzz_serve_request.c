/* libFuzzer target for `clgraph serve`'s request parsers: infer
 * (serve/srv_oip.c), translate (srv_translate.c) and forecast
 * (srv_forecast.c). Any body either parses into what the model takes (for
 * infer: one tensor per input of its dtype and rank, whose response then
 * builds) or is refused with status 400 and a one-line message, the
 * request left empty. A first byte 'T' or 'F' sends the rest to the
 * translate or the forecast parser (a model of 2 channels), 'O' to a
 * translation model's infer parser (its binary part after the JSON, whose
 * length is the next byte times 8); a first byte 0
 * makes the next byte times 8 the infer JSON's length (the
 * Inference-Header-Content-Length of the binary tensor extension). */
#include <stdlib.h>
#include <string.h>

#include "srv_forecast.h"
#include "srv_oip.h"
#include "srv_translate.h"

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

/* 400 with one line, or 0 with what the request says within its limits. */
static int fuzz_families(const uint8_t *data, size_t size) {
    const srv_limits lim = {16, 1 << 16};
    char err[512] = "";
    int rc;
    if (data[0] == 'O') {
        srv_tr_req r;
        const int64_t hl = size >= 2 ? (int64_t)data[1] * 8 : -1;
        rc =
            size >= 2 ? srv_tr_parse_oip((const char *)data + 2, size - 2, hl ? hl : -1, &lim, &r, err, sizeof err) : 0;
        if (size >= 2 && !rc) {
            if (r.n < 1 || r.n > SRV_TR_MAX_SOURCES || !r.text || !r.oip) abort();
            for (int i = 0; i < r.n; i++)
                if (!r.text[i]) abort();
            srv_tr_req_clear(&r);
        }
    } else if (data[0] == 'T') {
        srv_tr_req r;
        rc = srv_tr_parse((const char *)data + 1, size - 1, &lim, &r, err, sizeof err);
        if (!rc) {
            if (r.n < 1 || !r.ids || !r.len) abort();
            for (int i = 0; !r.text && i < r.n; i++)
                if (r.len[i] < 0 || r.len[i] > SRV_TR_MAX_TOKENS) abort();
            srv_tr_req_clear(&r);
        }
    } else {
        srv_fc_req r;
        rc = srv_fc_parse((const char *)data + 1, size - 1, &lim, 2, &r, err, sizeof err);
        if (!rc) {
            if (r.n < 1 || r.horizon < 1 || r.horizon > SRV_FC_MAX_HORIZON) abort();
            for (int i = 0; i < r.n; i++)
                if (r.length[i] < 1 || !r.values[i]) abort();
            srv_fc_req_clear(&r);
        }
    }
    if (rc && (rc != 400 || !err[0] || strchr(err, '\n'))) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size >= 1 && (data[0] == 'T' || data[0] == 'F' || data[0] == 'O')) return fuzz_families(data, size);
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
