/* The Open Inference Protocol's (KServe v2) JSON: infer requests in, with
 * the binary tensor extension, and responses and model metadata out. Pure
 * functions of their arguments (no server state), so the fuzz target
 * (tests/fuzz/fuzz_serve_request.c) drives srv_parse_infer directly. */
#ifndef CG_SERVE_SRV_OIP_H
#define CG_SERVE_SRV_OIP_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h"
#include "srv_buf.h"

#define SRV_MAX_IO 64

/* One input or output of a served graph: fixed dims, or -1 where the graph
 * has a symbol. */
typedef struct srv_io {
    const char *name;
    cg_dtype dtype;
    int ndim;
    int64_t dims[CG_MAX_DIMS];
} srv_io;

typedef struct srv_model_io {
    int n_in, n_out;
    srv_io in[SRV_MAX_IO], out[SRV_MAX_IO];
} srv_model_io;

typedef struct srv_limits {
    int max_depth;            /* nesting of JSON arrays and objects */
    int64_t max_tensor_bytes; /* per input tensor */
} srv_limits;

/* What an infer request asks. */
typedef struct srv_infer_req {
    char *id;                       /* the request's "id", or NULL */
    cg_tensor *in[SRV_MAX_IO];      /* by model input position, in the model's dtypes */
    unsigned char want[SRV_MAX_IO]; /* by model output position: 0 not returned, 1 JSON data, 2 binary */
    int64_t timeout_us;             /* parameters.timeout, 0: none */
} srv_infer_req;

enum { SRV_WANT_NONE, SRV_WANT_JSON, SRV_WANT_BINARY };

/* Parses body[0..len): the JSON header is its first header_len bytes
 * (Inference-Header-Content-Length), or all of it when header_len < 0;
 * inputs with parameters.binary_data_size take their bytes, in order, from
 * what follows it. Checks every input against io (known name, given once,
 * the model's datatype, rank and fixed dims, within the limits; every
 * input given) and every requested output name. 0, or an HTTP status
 * (400) with one line in err; req is cleared on failure. */
int srv_parse_infer(const char *body, size_t len, int64_t header_len, const srv_limits *lim, const srv_model_io *io,
                    srv_infer_req *req, char *err, size_t errsz);

/* Frees what req holds and zeroes it. */
void srv_infer_req_clear(srv_infer_req *req);

/* The response to req with the model's outputs (out, by output position):
 * JSON, then the binary outputs' bytes in the order the JSON lists them.
 * *json_len is the JSON's length when binary data follows, 0 when the
 * body is JSON only. 0, or -1 when memory ran out. */
int srv_infer_response(const char *model, const srv_model_io *io, const srv_infer_req *req, cg_tensor *const *out,
                       srv_buf *body, size_t *json_len);

/* GET /v2/models/{name}: name, versions, platform, inputs, outputs. */
void srv_model_metadata(const char *model, const char *platform, const srv_model_io *io, srv_buf *b);

/* {"error": msg}. */
void srv_error_json(srv_buf *b, const char *msg);

/* A request's JSON, as every endpoint reads it: the first header_len bytes
 * of body (Inference-Header-Content-Length; -1: all len bytes), no deeper
 * than max_depth (scanned before cJSON parses, so depth never reaches its
 * recursion), with nothing but whitespace after it. The root (free it with
 * cJSON_Delete) and *jlen its length, or NULL with one line in err. */
cJSON *srv_json_parse(const char *body, size_t len, int64_t header_len, int max_depth, size_t *jlen, char *err,
                      size_t errsz);

/* The fields several requests share, each read from obj when present (0,
 * or 400 with one line in err): "timeout" in microseconds into *us (named
 * `what` in the error); the string "id" copied into *id (another type is
 * ignored, the field being optional); the boolean `key` into *v (absent:
 * 0). */
int srv_json_timeout(const cJSON *obj, const char *what, int64_t *us, char *err, size_t errsz);
int srv_json_id(const cJSON *obj, char **id, char *err, size_t errsz);
int srv_json_bool(const cJSON *obj, const char *key, int *v, char *err, size_t errsz);

/* The opening every response shares, the object left open:
 * {"model_name": model[, "model_version": "1"][, "id": id] (id NULL: none). */
void srv_response_head(srv_buf *b, const char *model, int version, const char *id);

#endif
