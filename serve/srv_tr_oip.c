/* The Open Inference Protocol for translation models: POST /infer with one
 * input "text" (BYTES [N]: JSON strings, or the binary tensor extension's
 * 4-byte little-endian length and bytes per element) and the decoding
 * options as request parameters; outputs "translation" (BYTES [N]) and
 * "score" (FP32 [N]). What Triton's text models look like to
 * tritonclient. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_translate.h"

#define SRV_FAIL(...) (snprintf(err, errsz, __VA_ARGS__), 400)

/* Element i of a binary BYTES tensor into req->text[i]. */
static int srv_tr_bytes(const char *bin, size_t n, int count, srv_tr_req *req, char *err, size_t errsz) {
    size_t off = 0;
    for (int i = 0; i < count; i++) {
        if (n - off < 4) return SRV_FAIL("input 'text': the binary data ends before element %d", i);
        const unsigned char *p = (const unsigned char *)bin + off;
        const size_t len = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
        off += 4;
        if (len > n - off) return SRV_FAIL("input 'text': element %d is longer than the binary data", i);
        if (memchr(bin + off, '\0', len)) return SRV_FAIL("input 'text': element %d holds a NUL byte", i);
        if (!(req->text[i] = strndup(bin + off, len))) return SRV_FAIL("out of memory");
        off += len;
    }
    if (off != n) return SRV_FAIL("%zu bytes of binary data that no input takes", n - off);
    return 0;
}

/* The one input: name "text", BYTES, shape [N]; its data in JSON or
 * binary (bin, n: what follows the JSON). */
static int srv_tr_oip_input(const cJSON *in, const char *bin, size_t n, srv_tr_req *req, char *err, size_t errsz) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(in, "name");
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(in, "datatype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(in, "shape");
    if (!cJSON_IsString(name) || strcmp(name->valuestring, "text"))
        return SRV_FAIL("a translation model takes one input, 'text' (BYTES [N])");
    if (!cJSON_IsString(dt) || strcmp(dt->valuestring, "BYTES")) return SRV_FAIL("input 'text': datatype is BYTES");
    const cJSON *n0 = cJSON_IsArray(shape) && cJSON_GetArraySize(shape) == 1 ? shape->child : NULL;
    if (!cJSON_IsNumber(n0) || n0->valuedouble < 1 || n0->valuedouble > SRV_TR_MAX_SOURCES ||
        n0->valuedouble != (double)(int)n0->valuedouble)
        return SRV_FAIL("input 'text': shape is [N], 1 <= N <= %d", SRV_TR_MAX_SOURCES);
    const int count = (int)n0->valuedouble;
    req->n = count;
    req->text = calloc((size_t)count, sizeof *req->text);
    req->ids = calloc((size_t)count, sizeof *req->ids);
    req->len = calloc((size_t)count, sizeof *req->len);
    if (!req->text || !req->ids || !req->len) return SRV_FAIL("out of memory");
    const cJSON *par = cJSON_GetObjectItemCaseSensitive(in, "parameters");
    if (cJSON_IsObject(par) && cJSON_GetObjectItemCaseSensitive(par, "binary_data_size"))
        return srv_tr_bytes(bin, n, count, req, err, errsz);
    if (n) return SRV_FAIL("%zu bytes of binary data that no input takes", n);
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(in, "data");
    if (!cJSON_IsArray(data) || cJSON_GetArraySize(data) != count)
        return SRV_FAIL("input 'text': \"data\" is not an array of %d strings", count);
    int i = 0;
    for (const cJSON *s = data->child; s; s = s->next, i++) {
        if (!cJSON_IsString(s)) return SRV_FAIL("input 'text': element %d is not a string", i);
        if (!(req->text[i] = strdup(s->valuestring))) return SRV_FAIL("out of memory");
    }
    return 0;
}

/* "outputs": translation and score, JSON or binary each. */
static int srv_tr_oip_outputs(const cJSON *outs, int all_binary, srv_tr_req *req, char *err, size_t errsz) {
    if (!outs) {
        req->want[0] = req->want[1] = all_binary ? SRV_WANT_BINARY : SRV_WANT_JSON;
        return 0;
    }
    if (!cJSON_IsArray(outs)) return SRV_FAIL("\"outputs\" is not an array");
    for (const cJSON *o = outs->child; o; o = o->next) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
        const int k = !cJSON_IsString(name)                       ? -1
                      : !strcmp(name->valuestring, "translation") ? 0
                      : !strcmp(name->valuestring, "score")       ? 1
                                                                  : -1;
        if (k < 0) return SRV_FAIL("a translation model's outputs are 'translation' and 'score'");
        const cJSON *par = cJSON_GetObjectItemCaseSensitive(o, "parameters");
        const cJSON *bin = cJSON_IsObject(par) ? cJSON_GetObjectItemCaseSensitive(par, "binary_data") : NULL;
        req->want[k] = (bin ? cJSON_IsTrue(bin) : all_binary) ? SRV_WANT_BINARY : SRV_WANT_JSON;
    }
    return 0;
}

static int srv_tr_oip_root(const cJSON *root, const char *bin, size_t n, srv_tr_req *req, char *err, size_t errsz) {
    if (!cJSON_IsObject(root)) return SRV_FAIL("the request is not a JSON object");
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(root, "inputs");
    if (!cJSON_IsArray(ins) || cJSON_GetArraySize(ins) != 1)
        return SRV_FAIL("a translation model takes one input, 'text' (BYTES [N])");
    int rc = srv_tr_oip_input(ins->child, bin, n, req, err, errsz);
    if (rc) return rc;
    /* the decoding options are the request's parameters */
    cJSON *none = cJSON_CreateObject();
    const cJSON *par = cJSON_GetObjectItemCaseSensitive(root, "parameters");
    rc = none ? srv_tr_options(cJSON_IsObject(par) ? par : none, req, err, errsz) : SRV_FAIL("out of memory");
    cJSON_Delete(none);
    if (rc) return rc;
    if (req->opt.nbest > 1 || req->opt.attention || req->with_ids)
        return SRV_FAIL("nbest, attention and return_ids are answered by /translate, not by /infer");
    if (!req->id && (rc = srv_json_id(root, &req->id, err, errsz))) return rc;
    req->oip = 1;
    const int all_binary =
        cJSON_IsObject(par) && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(par, "binary_data_output"));
    return srv_tr_oip_outputs(cJSON_GetObjectItemCaseSensitive(root, "outputs"), all_binary, req, err, errsz);
}

int srv_tr_parse_oip(const char *body, size_t len, int64_t header_len, const srv_limits *lim, srv_tr_req *req,
                     char *err, size_t errsz) {
    memset(req, 0, sizeof *req);
    size_t jlen;
    cJSON *root = srv_json_parse(body, len, header_len, lim->max_depth, &jlen, err, errsz);
    if (!root) return 400;
    int rc = srv_tr_oip_root(root, body + jlen, len - jlen, req, err, errsz);
    cJSON_Delete(root);
    if (rc) srv_tr_req_clear(req);
    return rc;
}

/* The outputs' JSON: each with its data, or its binary_data_size. */
static void srv_tr_oip_outputs_json(srv_buf *b, const srv_tr_req *req, const cg_s2s_result *res,
                                    const char *const *text) {
    srv_buf_puts(b, ",\"outputs\":[");
    int first = 1;
    if (req->want[0]) {
        first = 0;
        srv_buf_printf(b, "{\"name\":\"translation\",\"datatype\":\"BYTES\",\"shape\":[%d]", req->n);
        if (req->want[0] == SRV_WANT_BINARY) {
            size_t bytes = 0;
            for (int i = 0; i < req->n; i++) bytes += 4 + strlen(text[i]);
            srv_buf_printf(b, ",\"parameters\":{\"binary_data_size\":%zu}}", bytes);
        } else {
            srv_buf_puts(b, ",\"data\":[");
            for (int i = 0; i < req->n; i++) {
                if (i) srv_buf_puts(b, ",");
                srv_buf_json_str(b, text[i]);
            }
            srv_buf_puts(b, "]}");
        }
    }
    if (req->want[1]) {
        srv_buf_printf(b, "%s{\"name\":\"score\",\"datatype\":\"FP32\",\"shape\":[%d]", first ? "" : ",", req->n);
        if (req->want[1] == SRV_WANT_BINARY) {
            srv_buf_printf(b, ",\"parameters\":{\"binary_data_size\":%zu}}", (size_t)req->n * sizeof(float));
        } else {
            srv_buf_puts(b, ",\"data\":[");
            for (int i = 0; i < req->n; i++)
                srv_buf_printf(b, "%s%.9g", i ? "," : "", res[i].n_hyps ? (double)(float)res[i].hyps[0].score : 0.0);
            srv_buf_puts(b, "]}");
        }
    }
    srv_buf_puts(b, "]}");
}

/* The binary outputs after the JSON, in its order. */
static void srv_tr_oip_binary(srv_buf *b, const srv_tr_req *req, const cg_s2s_result *res, const char *const *text) {
    for (int i = 0; req->want[0] == SRV_WANT_BINARY && i < req->n; i++) {
        const size_t n = strlen(text[i]);
        const unsigned char len[4] = {(unsigned char)n, (unsigned char)(n >> 8), (unsigned char)(n >> 16),
                                      (unsigned char)(n >> 24)};
        srv_buf_add(b, len, 4);
        srv_buf_add(b, text[i], n);
    }
    for (int i = 0; req->want[1] == SRV_WANT_BINARY && i < req->n; i++) {
        const float v = res[i].n_hyps ? (float)res[i].hyps[0].score : 0.0f;
        srv_buf_add(b, &v, sizeof v); /* little-endian: the protocol's byte order on the machines clgraph runs on */
    }
}

int srv_tr_oip_response(const char *model, cg_s2s *m, const srv_tr_req *req, const cg_s2s_result *res, srv_buf *b,
                        size_t *json_len) {
    char **text = calloc((size_t)req->n, sizeof *text);
    int rc = text ? 0 : -1;
    for (int i = 0; !rc && i < req->n; i++)
        if (res[i].n_hyps < 1 ? !(text[i] = strdup(""))
                              : cg_s2s_detokenize(m, res[i].hyps[0].tokens, res[i].hyps[0].n_tokens, &text[i]) != CG_OK)
            rc = -1;
    if (!rc) {
        srv_response_head(b, model, 1, req->id);
        srv_tr_oip_outputs_json(b, req, res, (const char *const *)text);
        *json_len = req->want[0] == SRV_WANT_BINARY || req->want[1] == SRV_WANT_BINARY ? b->n : 0;
        srv_tr_oip_binary(b, req, res, (const char *const *)text);
    }
    for (int i = 0; text && i < req->n; i++) free(text[i]);
    free(text);
    return rc || b->failed ? -1 : 0;
}
