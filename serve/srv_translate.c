#include "srv_translate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void srv_tr_req_clear(srv_tr_req *req) {
    for (int i = 0; i < req->n; i++) {
        if (req->text) free(req->text[i]);
        if (req->ids) free(req->ids[i]);
    }
    free(req->text);
    free(req->ids);
    free(req->len);
    free(req->id);
    memset(req, 0, sizeof *req);
}

#define SRV_TR_FAIL(...) (snprintf(err, errsz, __VA_ARGS__), 400)

/* An integer option in [lo, hi]; absent: *out unchanged. */
static int srv_tr_int(const cJSON *root, const char *key, int lo, int hi, int *out, char *err, size_t errsz) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi)
        return SRV_TR_FAIL("\"%s\" takes an integer in [%d, %d]", key, lo, hi);
    *out = (int)v->valuedouble;
    return 0;
}

/* "sources" (text) or "ids" (token id lists) into req. */
static int srv_tr_sources(const cJSON *root, srv_tr_req *req, char *err, size_t errsz) {
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(root, "sources");
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(root, "ids");
    if (!!src == !!ids) return SRV_TR_FAIL("give either \"sources\" (text) or \"ids\" (token ids), an array");
    const cJSON *arr = src ? src : ids;
    if (!cJSON_IsArray(arr) || !arr->child)
        return SRV_TR_FAIL("\"%s\" is not a non-empty array", src ? "sources" : "ids");
    const int n = cJSON_GetArraySize(arr);
    if (n > SRV_TR_MAX_SOURCES) return SRV_TR_FAIL("more than %d sentences in one request", SRV_TR_MAX_SOURCES);
    req->n = n;
    req->ids = calloc((size_t)n, sizeof *req->ids);
    req->len = calloc((size_t)n, sizeof *req->len);
    if (src) req->text = calloc((size_t)n, sizeof *req->text);
    if (!req->ids || !req->len || (src && !req->text)) return SRV_TR_FAIL("out of memory");
    int i = 0;
    for (const cJSON *s = arr->child; s; s = s->next, i++) {
        if (src) {
            if (!cJSON_IsString(s)) return SRV_TR_FAIL("sources[%d] is not a string", i);
            if (!(req->text[i] = strdup(s->valuestring))) return SRV_TR_FAIL("out of memory");
            continue;
        }
        const int m = cJSON_IsArray(s) ? cJSON_GetArraySize(s) : -1;
        if (m < 0 || m > SRV_TR_MAX_TOKENS)
            return SRV_TR_FAIL("ids[%d] is not an array of at most %d token ids", i, SRV_TR_MAX_TOKENS);
        req->ids[i] = malloc(sizeof *req->ids[i] * (size_t)(m ? m : 1));
        if (!req->ids[i]) return SRV_TR_FAIL("out of memory");
        int k = 0;
        for (const cJSON *t = s->child; t; t = t->next, k++) {
            if (!cJSON_IsNumber(t) || t->valuedouble != floor(t->valuedouble) || t->valuedouble < 0 ||
                t->valuedouble > INT32_MAX)
                return SRV_TR_FAIL("ids[%d][%d] is not a token id", i, k);
            req->ids[i][k] = (int32_t)t->valuedouble;
        }
        req->len[i] = m;
    }
    return 0;
}

/* The decoding options (checked again, against the model, by
 * cg_s2s_translate). */
int srv_tr_options(const cJSON *root, srv_tr_req *req, char *err, size_t errsz) {
    cg_s2s_options *o = &req->opt;
    o->struct_size = sizeof *o;
    if (srv_tr_int(root, "beam", 0, 64, &o->beam, err, errsz) ||
        srv_tr_int(root, "nbest", 0, 64, &o->nbest, err, errsz) ||
        srv_tr_int(root, "max_len", 0, 4096, &o->max_len, err, errsz) ||
        srv_tr_int(root, "min_len", 0, 4096, &o->min_len, err, errsz) ||
        srv_tr_int(root, "attention_head", 0, 1024, &o->attention_head, err, errsz))
        return 400;
    if (o->nbest > (o->beam ? o->beam : 1)) return SRV_TR_FAIL("\"nbest\" is larger than \"beam\"");
    if (o->max_len && o->min_len > o->max_len) return SRV_TR_FAIL("\"min_len\" is larger than \"max_len\"");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "alpha");
    if (a) {
        if (!cJSON_IsNumber(a) || !(a->valuedouble >= 0 && a->valuedouble <= 100))
            return SRV_TR_FAIL("\"alpha\" takes a number in [0, 100]");
        o->alpha = a->valuedouble;
        o->flags |= CG_S2S_ALPHA_SET;
    }
    int rc = srv_json_bool(root, "attention", &o->attention, err, errsz);
    if (!rc) rc = srv_json_bool(root, "return_ids", &req->with_ids, err, errsz);
    if (!rc) rc = srv_json_timeout(root, "\"timeout\"", &req->timeout_us, err, errsz);
    if (!rc && !req->id) rc = srv_json_id(root, &req->id, err, errsz);
    return rc;
}

int srv_tr_parse(const char *body, size_t len, const srv_limits *lim, srv_tr_req *req, char *err, size_t errsz) {
    memset(req, 0, sizeof *req);
    size_t jlen;
    cJSON *root = srv_json_parse(body, len, -1, lim->max_depth, &jlen, err, errsz);
    if (!root) return 400;
    int rc = cJSON_IsObject(root) ? 0 : SRV_TR_FAIL("the request is not a JSON object");
    if (!rc) rc = srv_tr_sources(root, req, err, errsz);
    if (!rc) rc = srv_tr_options(root, req, err, errsz);
    cJSON_Delete(root);
    if (rc) srv_tr_req_clear(req);
    return rc;
}

int srv_tr_compatible(const srv_tr_req *a, const srv_tr_req *b) {
    const cg_s2s_options *x = &a->opt, *y = &b->opt;
    return x->beam == y->beam && x->nbest == y->nbest && x->alpha == y->alpha && x->flags == y->flags &&
           x->max_len == y->max_len && x->min_len == y->min_len && x->attention == y->attention &&
           x->attention_head == y->attention_head;
}

/* Tokens as strings (the heat map's labels); target adds "</s>" when the
 * hypothesis ended with EOS (its last attention row). */
static void srv_tr_tokens(cg_s2s *m, int target, const int32_t *ids, int n, int eos, srv_buf *b) {
    srv_buf_puts(b, "[");
    for (int k = 0; k < n; k++) {
        const char *t = cg_s2s_token(m, target, ids[k]);
        if (k) srv_buf_puts(b, ",");
        srv_buf_json_str(b, t ? t : "?");
    }
    if (eos) srv_buf_puts(b, n ? ",\"</s>\"" : "\"</s>\"");
    srv_buf_puts(b, "]");
}

/* A hypothesis' fields, without the braces around them. */
static int srv_tr_hyp(cg_s2s *m, const srv_tr_req *req, int sent, const cg_s2s_hyp *h, int src_len, srv_buf *b) {
    char *text = NULL;
    if (cg_s2s_detokenize(m, h->tokens, h->n_tokens, &text)) return -1;
    srv_buf_puts(b, "\"text\":");
    srv_buf_json_str(b, text);
    free(text);
    srv_buf_printf(b, ",\"score\":%.9g", h->score);
    if (req->with_ids) {
        srv_buf_puts(b, ",\"ids\":[");
        for (int k = 0; k < h->n_tokens; k++) srv_buf_printf(b, "%s%ld", k ? "," : "", (long)h->tokens[k]);
        srv_buf_puts(b, "]");
    }
    if (h->attention) { /* one row per generated token, one column per source token */
        srv_buf_puts(b, ",\"src_tokens\":");
        srv_tr_tokens(m, 0, req->ids[sent], req->len[sent] < src_len ? req->len[sent] : src_len, 0, b);
        srv_buf_puts(b, ",\"tokens\":");
        srv_tr_tokens(m, 1, h->tokens, h->n_tokens, h->n_steps > h->n_tokens, b);
        srv_buf_puts(b, ",\"attention\":[");
        for (int r = 0; r < h->n_steps; r++) {
            srv_buf_puts(b, r ? ",[" : "[");
            for (int c = 0; c < src_len; c++)
                srv_buf_printf(b, "%s%.6g", c ? "," : "",
                               (double)h->attention[(size_t)r * (size_t)src_len + (size_t)c]);
            srv_buf_puts(b, "]");
        }
        srv_buf_puts(b, "]");
    }
    return 0;
}

int srv_tr_response(const char *model, cg_s2s *m, const srv_tr_req *req, const cg_s2s_result *res, srv_buf *b) {
    srv_response_head(b, model, 0, req->id);
    srv_buf_puts(b, ",\"translations\":[");
    for (int i = 0; i < req->n; i++) {
        const cg_s2s_result *r = &res[i];
        if (i) srv_buf_puts(b, ",");
        if (r->n_hyps < 1) {
            srv_buf_puts(b, "null");
            continue;
        }
        /* the best hypothesis' fields, and the n-best list when asked */
        srv_buf_puts(b, "{");
        if (srv_tr_hyp(m, req, i, &r->hyps[0], r->src_len, b)) return -1;
        if (req->opt.nbest > 1) {
            srv_buf_puts(b, ",\"nbest\":[");
            for (int h = 0; h < r->n_hyps; h++) {
                srv_buf_puts(b, h ? ",{" : "{");
                if (srv_tr_hyp(m, req, i, &r->hyps[h], r->src_len, b)) return -1;
                srv_buf_puts(b, "}");
            }
            srv_buf_puts(b, "]");
        }
        srv_buf_puts(b, "}");
    }
    srv_buf_puts(b, "]}");
    return b->failed ? -1 : 0;
}
