/* The translation endpoint, POST /v2/models/NAME/translate, of a model
 * directory (either family of clgraph/seq2seq.h): sentences in (text, or
 * token ids), translations with scores, n-best lists and attention out.
 * Requests with the same decoding options are translated together. */
#ifndef CG_SERVE_SRV_TRANSLATE_H
#define CG_SERVE_SRV_TRANSLATE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "clgraph/seq2seq.h"
#include "srv_oip.h"

/* Source tokens per sentence at most (as `clgraph translate`'s
 * --max-input-len default). */
#define SRV_TR_MAX_TOKENS 1024
/* Sentences per request at most. */
#define SRV_TR_MAX_SOURCES 10000

typedef struct srv_tr_req {
    int n;
    char **text;   /* n sentences of text, or NULL when ids were given */
    int32_t **ids; /* n token id lists (made from text by the worker) */
    int *len;
    cg_s2s_options opt;
    int with_ids;          /* return the output ids too */
    int oip;               /* came by /infer: answered in the protocol's form */
    unsigned char want[2]; /* /infer: translation, score (SRV_WANT_*) */
    int64_t timeout_us;
    char *id;
} srv_tr_req;

/* Parses a translate request body: {"sources": [text...]} or {"ids":
 * [[id...]...]}, and "beam", "nbest", "alpha", "max_len", "min_len",
 * "attention", "attention_head", "return_ids", "id", "timeout" (us). 0, or
 * 400 with one line in err (req cleared). */
int srv_tr_parse(const char *body, size_t len, const srv_limits *lim, srv_tr_req *req, char *err, size_t errsz);

void srv_tr_req_clear(srv_tr_req *req);

/* The decoding options of a JSON object (a translate request, or an infer
 * request's parameters): beam, nbest, alpha, max_len, min_len, attention,
 * attention_head, return_ids, timeout, id. 0 or 400. */
int srv_tr_options(const cJSON *obj, srv_tr_req *req, char *err, size_t errsz);

/* POST /infer on a translation model (srv_tr_oip.c): one input "text",
 * BYTES [N] (JSON strings, or binary: a 4-byte little-endian length and the
 * bytes per element); the options as request parameters (no nbest,
 * attention or ids: /translate has those); outputs "translation" (BYTES
 * [N]) and "score" (FP32 [N]), JSON or binary. 0, or 400 (req cleared). */
int srv_tr_parse_oip(const char *body, size_t len, int64_t header_len, const srv_limits *lim, srv_tr_req *req,
                     char *err, size_t errsz);

/* Its answer; *json_len as srv_infer_response's. 0 or -1. */
int srv_tr_oip_response(const char *model, cg_s2s *m, const srv_tr_req *req, const cg_s2s_result *res, srv_buf *b,
                        size_t *json_len);

/* 1 when a and b decode with the same options (one cg_s2s_translate). */
int srv_tr_compatible(const srv_tr_req *a, const srv_tr_req *b);

/* The response of one request: {"model_name", "id", "translations":
 * [{"text", "score", "ids"?, "nbest"?, "attention"?}...]}; res[i] is
 * sentence i's result. 0, or -1 when memory or detokenization failed. */
int srv_tr_response(const char *model, cg_s2s *m, const srv_tr_req *req, const cg_s2s_result *res, srv_buf *b);

#endif
