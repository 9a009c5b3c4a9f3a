#include "srv_oip.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_tensor.h"

/* 1 when no array or object in s[0..n) nests deeper than max (strings
 * skipped, escapes honoured). */
static int srv_json_depth_ok(const char *s, size_t n, int max) {
    int depth = 0, in_str = 0;
    for (size_t i = 0; i < n; i++) {
        const char c = s[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = 0;
            continue;
        }
        if (c == '"') in_str = 1;
        else if (c == '[' || c == '{') {
            if (++depth > max) return 0;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return 1;
}

void srv_infer_req_clear(srv_infer_req *req) {
    free(req->id);
    for (int i = 0; i < SRV_MAX_IO; i++) cg_tensor_free(req->in[i]);
    memset(req, 0, sizeof *req);
}

/* A client's string for an error line: control characters as '?', at most
 * 64 bytes ("..." after), so the line stays one line of bounded length. */
static const char *srv_clean(const char *s, char *buf, size_t n) {
    size_t i = 0;
    for (; s[i] && i + 1 < n && i < 64; i++) buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    buf[i] = '\0';
    if (s[i] && n > 68) memcpy(buf + i, "...", 4);
    return buf;
}

static int srv_find(const srv_io *io, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(io[i].name, name)) return i;
    return -1;
}

/* The state of one parse. */
typedef struct srv_parse {
    const char *bin; /* the binary section */
    size_t bin_len, bin_used;
    const srv_limits *lim;
    const srv_model_io *io;
    srv_infer_req *req;
    char *err;
    size_t errsz;
} srv_parse;

#define SRV_FAIL(p, ...) (snprintf((p)->err, (p)->errsz, __VA_ARGS__), 400)

/* "shape" against the model's input k: rank, fixed dims, the byte limit. */
static int srv_parse_shape(srv_parse *p, const cJSON *shape, int k, int64_t *dims, int64_t *bytes) {
    const srv_io *io = &p->io->in[k];
    if (!cJSON_IsArray(shape)) return SRV_FAIL(p, "input '%s': no \"shape\" array", io->name);
    int nd = cJSON_GetArraySize(shape);
    if (nd != io->ndim)
        return SRV_FAIL(p, "input '%s': shape of rank %d, the model takes rank %d", io->name, nd, io->ndim);
    int64_t numel = 1, esize = (int64_t)cg_dtype_size(io->dtype);
    int d = 0;
    for (const cJSON *c = shape->child; c; c = c->next, d++) {
        double v = cJSON_IsNumber(c) ? c->valuedouble : -1;
        if (!(v >= 0 && v <= (double)INT32_MAX) || v != (double)(int64_t)v)
            return SRV_FAIL(p, "input '%s': shape[%d] is not a size", io->name, d);
        dims[d] = (int64_t)v;
        if (io->dims[d] >= 0 && dims[d] != io->dims[d])
            return SRV_FAIL(p, "input '%s': shape[%d] is %lld, the model takes %lld", io->name, d, (long long)dims[d],
                            (long long)io->dims[d]);
        if (dims[d] && numel > p->lim->max_tensor_bytes / esize / dims[d] + 1) numel = p->lim->max_tensor_bytes + 1;
        else numel *= dims[d];
    }
    *bytes = numel * esize;
    if (*bytes > p->lim->max_tensor_bytes)
        return SRV_FAIL(p, "input '%s': larger than the server's limit of %lld bytes per tensor", io->name,
                        (long long)p->lim->max_tensor_bytes);
    return 0;
}

/* One element of "inputs". */
static int srv_parse_input(srv_parse *p, const cJSON *in) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(in, "name");
    if (!cJSON_IsString(name)) return SRV_FAIL(p, "an input without a \"name\"");
    int k = srv_find(p->io->in, p->io->n_in, name->valuestring);
    char tmp[80];
    if (k < 0)
        return SRV_FAIL(p, "input '%s': the model has no such input", srv_clean(name->valuestring, tmp, sizeof tmp));
    const srv_io *io = &p->io->in[k];
    if (p->req->in[k]) return SRV_FAIL(p, "input '%s' is given twice", io->name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(in, "datatype");
    if (!cJSON_IsString(dt)) return SRV_FAIL(p, "input '%s': no \"datatype\"", io->name);
    if (srv_dtype_parse(dt->valuestring) != io->dtype)
        return SRV_FAIL(p, "input '%s': datatype %s, the model takes %s", io->name,
                        srv_clean(dt->valuestring, tmp, sizeof tmp), srv_dtype_name(io->dtype));
    int64_t dims[CG_MAX_DIMS], bytes;
    int rc = srv_parse_shape(p, cJSON_GetObjectItemCaseSensitive(in, "shape"), k, dims, &bytes);
    if (rc) return rc;
    const cJSON *par = cJSON_GetObjectItemCaseSensitive(in, "parameters");
    const cJSON *bsz = cJSON_IsObject(par) ? cJSON_GetObjectItemCaseSensitive(par, "binary_data_size") : NULL;
    if (!bsz) {
        const cJSON *data = cJSON_GetObjectItemCaseSensitive(in, "data");
        if (!data) return SRV_FAIL(p, "input '%s': neither \"data\" nor parameters.binary_data_size", io->name);
        return srv_tensor_from_json(data, io->dtype, io->ndim, dims, io->name, &p->req->in[k], p->err, p->errsz);
    }
    if (!cJSON_IsNumber(bsz) || bsz->valuedouble != (double)bytes)
        return SRV_FAIL(p, "input '%s': binary_data_size is not the %lld bytes of its shape", io->name,
                        (long long)bytes);
    if ((size_t)bytes > p->bin_len - p->bin_used)
        return SRV_FAIL(p, "input '%s': the binary data ends %lld bytes short", io->name,
                        (long long)((size_t)bytes - (p->bin_len - p->bin_used)));
    if (cg_tensor_create(io->dtype, io->ndim, dims, &p->req->in[k]))
        return SRV_FAIL(p, "input '%s': %s", io->name, cg_last_error());
    memcpy(cg_tensor_data(p->req->in[k]), p->bin + p->bin_used, (size_t)bytes);
    p->bin_used += (size_t)bytes;
    return 0;
}

/* "outputs" (absent: every output, binary when binary_data_output). */
static int srv_parse_outputs(srv_parse *p, const cJSON *outs, int all_binary) {
    const srv_model_io *io = p->io;
    if (!outs) {
        for (int i = 0; i < io->n_out; i++) p->req->want[i] = all_binary ? SRV_WANT_BINARY : SRV_WANT_JSON;
        return 0;
    }
    if (!cJSON_IsArray(outs)) return SRV_FAIL(p, "\"outputs\" is not an array");
    for (const cJSON *o = outs->child; o; o = o->next) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
        if (!cJSON_IsString(name)) return SRV_FAIL(p, "an output without a \"name\"");
        int k = srv_find(io->out, io->n_out, name->valuestring);
        char tmp[80];
        if (k < 0)
            return SRV_FAIL(p, "output '%s': the model has no such output",
                            srv_clean(name->valuestring, tmp, sizeof tmp));
        const cJSON *par = cJSON_GetObjectItemCaseSensitive(o, "parameters");
        const cJSON *bin = cJSON_IsObject(par) ? cJSON_GetObjectItemCaseSensitive(par, "binary_data") : NULL;
        int binary = bin ? cJSON_IsTrue(bin) : all_binary;
        p->req->want[k] = binary ? SRV_WANT_BINARY : SRV_WANT_JSON;
    }
    return 0;
}

/* The request object: id, parameters, inputs, outputs. */
static int srv_parse_root(srv_parse *p, const cJSON *root) {
    if (!cJSON_IsObject(root)) return SRV_FAIL(p, "the request is not a JSON object");
    int rc = srv_json_id(root, &p->req->id, p->err, p->errsz);
    if (rc) return rc;
    const cJSON *par = cJSON_GetObjectItemCaseSensitive(root, "parameters");
    int all_binary = 0;
    if (cJSON_IsObject(par)) {
        all_binary = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(par, "binary_data_output"));
        rc = srv_json_timeout(par, "parameters.timeout", &p->req->timeout_us, p->err, p->errsz);
        if (rc) return rc;
    }
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(root, "inputs");
    if (!cJSON_IsArray(ins)) return SRV_FAIL(p, "no \"inputs\" array");
    for (const cJSON *in = ins->child; in; in = in->next)
        if ((rc = srv_parse_input(p, in))) return rc;
    for (int k = 0; k < p->io->n_in; k++)
        if (!p->req->in[k]) return SRV_FAIL(p, "input '%s' is missing", p->io->in[k].name);
    if (p->bin_used != p->bin_len)
        return SRV_FAIL(p, "%zu bytes of binary data that no input takes", p->bin_len - p->bin_used);
    return srv_parse_outputs(p, cJSON_GetObjectItemCaseSensitive(root, "outputs"), all_binary);
}

cJSON *srv_json_parse(const char *body, size_t len, int64_t header_len, int max_depth, size_t *jlen, char *err,
                      size_t errsz) {
    *jlen = header_len < 0 ? len : (size_t)header_len;
    if (header_len >= 0 && (header_len == 0 || (uint64_t)header_len > len)) {
        snprintf(err, errsz, "Inference-Header-Content-Length %lld is not within the body's %zu bytes",
                 (long long)header_len, len);
        return NULL;
    }
    if (!srv_json_depth_ok(body, *jlen, max_depth)) {
        snprintf(err, errsz, "the request's JSON nests deeper than the server's limit of %d", max_depth);
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, *jlen, &end, 0);
    if (!root) {
        snprintf(err, errsz, "the request is not valid JSON (at byte %lld)",
                 (long long)(end ? end - body : (ptrdiff_t)*jlen));
        return NULL;
    }
    while (end && end < body + *jlen && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')) end++;
    if (end != body + *jlen) {
        cJSON_Delete(root);
        snprintf(err, errsz, "the request has more after its JSON (at byte %lld)", (long long)(end - body));
        return NULL;
    }
    return root;
}

int srv_json_timeout(const cJSON *obj, const char *what, int64_t *us, char *err, size_t errsz) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(obj, "timeout");
    if (!t) return 0;
    if (!(cJSON_IsNumber(t) && t->valuedouble >= 0 && t->valuedouble < 1e15)) {
        snprintf(err, errsz, "%s is not a number of microseconds", what);
        return 400;
    }
    *us = (int64_t)t->valuedouble;
    return 0;
}

int srv_json_id(const cJSON *obj, char **id, char *err, size_t errsz) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "id");
    if (cJSON_IsString(v) && !(*id = strdup(v->valuestring))) {
        snprintf(err, errsz, "out of memory");
        return 400;
    }
    return 0;
}

int srv_json_bool(const cJSON *obj, const char *key, int *v, char *err, size_t errsz) {
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (b && !cJSON_IsBool(b)) {
        snprintf(err, errsz, "\"%s\" takes true or false", key);
        return 400;
    }
    *v = cJSON_IsTrue(b);
    return 0;
}

void srv_response_head(srv_buf *b, const char *model, int version, const char *id) {
    srv_buf_puts(b, "{\"model_name\":");
    srv_buf_json_str(b, model);
    if (version) srv_buf_puts(b, ",\"model_version\":\"1\"");
    if (id) {
        srv_buf_puts(b, ",\"id\":");
        srv_buf_json_str(b, id);
    }
}

int srv_parse_infer(const char *body, size_t len, int64_t header_len, const srv_limits *lim, const srv_model_io *io,
                    srv_infer_req *req, char *err, size_t errsz) {
    memset(req, 0, sizeof *req);
    size_t jlen;
    cJSON *root = srv_json_parse(body, len, header_len, lim->max_depth, &jlen, err, errsz);
    if (!root) return 400;
    srv_parse p = {body + jlen, len - jlen, 0, lim, io, req, err, errsz};
    int rc = srv_parse_root(&p, root);
    cJSON_Delete(root);
    if (rc) srv_infer_req_clear(req);
    return rc;
}

static void srv_shape_json(srv_buf *b, int ndim, const int64_t *dims) {
    srv_buf_add(b, "[", 1);
    for (int d = 0; d < ndim; d++) srv_buf_printf(b, "%s%lld", d ? "," : "", (long long)dims[d]);
    srv_buf_add(b, "]", 1);
}

int srv_infer_response(const char *model, const srv_model_io *io, const srv_infer_req *req, cg_tensor *const *out,
                       srv_buf *body, size_t *json_len) {
    srv_response_head(body, model, 1, req->id);
    srv_buf_puts(body, ",\"outputs\":[");
    int first = 1, binary = 0;
    for (int k = 0; k < io->n_out; k++) {
        if (!req->want[k]) continue;
        const cg_tensor *t = out[k];
        int64_t dims[CG_MAX_DIMS];
        const int nd = cg_tensor_ndim(t);
        for (int d = 0; d < nd; d++) dims[d] = cg_tensor_dim(t, d);
        srv_buf_puts(body, first ? "{\"name\":" : ",{\"name\":");
        first = 0;
        srv_buf_json_str(body, io->out[k].name);
        srv_buf_printf(body, ",\"datatype\":\"%s\",\"shape\":", srv_dtype_name(cg_tensor_dtype(t)));
        srv_shape_json(body, nd, dims);
        if (req->want[k] == SRV_WANT_BINARY) {
            binary = 1;
            srv_buf_printf(body, ",\"parameters\":{\"binary_data_size\":%lld}}",
                           (long long)(cg_tensor_numel(t) * (int64_t)cg_dtype_size(cg_tensor_dtype(t))));
        } else {
            srv_buf_puts(body, ",\"data\":");
            srv_tensor_to_json(t, body);
            srv_buf_add(body, "}", 1);
        }
    }
    srv_buf_puts(body, "]}");
    *json_len = binary ? body->n : 0;
    for (int k = 0; binary && k < io->n_out; k++)
        if (req->want[k] == SRV_WANT_BINARY)
            srv_buf_add(body, cg_tensor_data_const(out[k]),
                        (size_t)cg_tensor_numel(out[k]) * cg_dtype_size(cg_tensor_dtype(out[k])));
    return body->failed ? -1 : 0;
}

static void srv_io_json(srv_buf *b, const srv_io *io, int n) {
    srv_buf_add(b, "[", 1);
    for (int i = 0; i < n; i++) {
        srv_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
        srv_buf_json_str(b, io[i].name);
        const char *dt = srv_dtype_name(io[i].dtype);
        srv_buf_printf(b, ",\"datatype\":\"%s\",\"shape\":", dt ? dt : "");
        srv_shape_json(b, io[i].ndim, io[i].dims);
        srv_buf_add(b, "}", 1);
    }
    srv_buf_add(b, "]", 1);
}

void srv_model_metadata(const char *model, const char *platform, const srv_model_io *io, srv_buf *b) {
    srv_buf_puts(b, "{\"name\":");
    srv_buf_json_str(b, model);
    srv_buf_puts(b, ",\"versions\":[\"1\"],\"platform\":");
    srv_buf_json_str(b, platform);
    srv_buf_puts(b, ",\"inputs\":");
    srv_io_json(b, io->in, io->n_in);
    srv_buf_puts(b, ",\"outputs\":");
    srv_io_json(b, io->out, io->n_out);
    srv_buf_add(b, "}", 1);
}

void srv_error_json(srv_buf *b, const char *msg) {
    srv_buf_puts(b, "{\"error\":");
    srv_buf_json_str(b, msg);
    srv_buf_add(b, "}", 1);
}
