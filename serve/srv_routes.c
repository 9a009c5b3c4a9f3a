/* The endpoints: the Open Inference Protocol's health, server and model
 * metadata, model readiness and infer (with an optional /versions/1), and
 * /metrics. Nothing here reads a file: a URL names a model the server
 * loaded at start, or nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/version.h"
#include "srv_http.h"
#include "srv_page.html.h"

static int srv_is(const char *method, const char *m) { return !strcmp(method, m); }

/* The bearer token, compared in time that does not depend on where the
 * strings differ. */
static int srv_authorized(srv_conn *c, const char *token) {
    const char *h = MHD_lookup_connection_value(c->c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncmp(h, "Bearer ", 7)) return 0;
    h += 7;
    size_t n = strlen(token), m = strlen(h);
    unsigned diff = (unsigned)(n ^ m);
    for (size_t i = 0; i < m; i++) diff |= (unsigned)(h[i] ^ token[i % (n ? n : 1)]);
    return diff == 0 && n > 0;
}

static enum MHD_Result srv_json(srv_conn *c, int status, srv_buf *b) {
    return srv_respond(c, status, b, "application/json");
}

static enum MHD_Result srv_server_meta(srv_conn *c) {
    srv_buf b = {0};
    srv_buf_printf(&b, "{\"name\":\"clgraph\",\"version\":\"%s\",\"extensions\":[\"binary_tensor_data\"]}",
                   CG_VERSION_STRING);
    return srv_json(c, 200, &b);
}

/* After a parse: its 400 (rc, err), or the job queued on m (the
 * connection waits suspended), or 429 / 503 when the queue refuses it. */
static enum MHD_Result srv_enqueue(srv_conn *c, srv_model *m, int rc, const char *err) {
    if (rc) return srv_respond_error(c, rc, err);
    srv_buf_free(&c->body);
    rc = srv_queue_infer(c, m);
    if (rc == 429) return srv_respond_error(c, 429, "the model's queue is full: retry later");
    if (rc) return srv_respond_error(c, rc, "the server is shutting down");
    return MHD_YES;
}

/* The Inference-Header-Content-Length header: -1 when absent, -2 when not a
 * size. */
static int64_t srv_header_len(srv_conn *c) {
    const char *hl = MHD_lookup_connection_value(c->c, MHD_HEADER_KIND, "Inference-Header-Content-Length");
    if (!hl) return -1;
    char *end = NULL;
    long long v = strtoll(hl, &end, 10);
    return !*hl || *end || v < 0 ? -2 : v;
}

/* POST /infer: a graph's tensors (srv_oip.c), or a translation model's
 * "text" BYTES in and "translation" and "score" out (srv_tr_oip.c). */
static enum MHD_Result srv_infer(srv_server *s, srv_conn *c, srv_model *m) {
    if (srv_server_stopping(s)) return srv_respond_error(c, 503, "the server is shutting down");
    const int64_t hl = srv_header_len(c);
    if (hl == -2) return srv_respond_error(c, 400, "Inference-Header-Content-Length is not a size");
    char err[1024];
    const char *body = c->body.p ? c->body.p : "";
    const srv_limits *lim = &srv_server_options(s)->limits;
    int rc = m->kind == SRV_TRANSLATE ? srv_tr_parse_oip(body, c->body.n, hl, lim, &c->job.tr, err, sizeof err)
                                      : srv_parse_infer(body, c->body.n, hl, lim, &m->io, &c->job.req, err, sizeof err);
    return srv_enqueue(c, m, rc, err);
}

/* The 404 of an endpoint the model's kind (SRV_*) does not answer. */
static const char *const srv_use[] = {"the model is a graph: use /infer", "the model translates: use /translate",
                                      "the model forecasts: use /forecast"};

/* POST /translate or /forecast: parse for the model's kind and queue. */
static enum MHD_Result srv_family(srv_server *s, srv_conn *c, srv_model *m, int kind) {
    if (m->kind != kind) return srv_respond_error(c, 404, srv_use[m->kind]);
    if (srv_server_stopping(s)) return srv_respond_error(c, 503, "the server is shutting down");
    char err[1024];
    const char *body = c->body.p ? c->body.p : "";
    const srv_limits *lim = &srv_server_options(s)->limits;
    const char *ct = MHD_lookup_connection_value(c->c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *horizon = MHD_lookup_connection_value(c->c, MHD_GET_ARGUMENT_KIND, "horizon");
    int rc;
    if (kind == SRV_TRANSLATE) rc = srv_tr_parse(body, c->body.n, lim, &c->job.tr, err, sizeof err);
    else if (ct && !strncmp(ct, "text/csv", 8)) /* as `clgraph forecast` reads it, ?horizon=N */
        rc = srv_fc_parse_csv(body, c->body.n, horizon, m->fc, &c->job.fc, err, sizeof err);
    else rc = srv_fc_parse(body, c->body.n, lim, cg_forecast_channels(m->fc), &c->job.fc, err, sizeof err);
    return srv_enqueue(c, m, rc, err);
}

/* /v2/models/NAME[/versions/V][/ready|/infer|/translate|/forecast]; rest
 * points after "models/". */
static enum MHD_Result srv_model_route_locked(srv_server *s, srv_conn *c, const char *rest, const char *method);

static enum MHD_Result srv_model_route(srv_server *s, srv_conn *c, const char *rest, const char *method) {
    srv_server_lock_models(s);
    enum MHD_Result r = srv_model_route_locked(s, c, rest, method);
    srv_server_unlock_models(s);
    return r;
}

/* POST /v2/repository/models/NAME/load (the model repository extension of
 * Triton): NAME loaded again from its file or directory and swapped in,
 * without dropping a request. */
static enum MHD_Result srv_reload_route(srv_server *s, srv_conn *c, const char *rest, const char *method) {
    const char *slash = strchr(rest, '/');
    if (!slash || strcmp(slash, "/load")) return srv_respond_error(c, 404, "no such endpoint");
    if (!srv_is(method, "POST")) return srv_respond_error(c, 405, "use POST");
    char name[256], err[2048];
    snprintf(name, sizeof name, "%.*s", (int)(slash - rest), rest);
    srv_server_lock_models(s);
    srv_model *m = srv_server_model(s, name, strlen(name));
    if (m) c->model = m->index;
    srv_server_unlock_models(s);
    if (!m) return srv_respond_error(c, 404, "no such model");
    if (srv_server_reload(s, name, err, sizeof err)) return srv_respond_error(c, 500, err);
    srv_buf b = {0};
    return srv_json(c, 200, &b);
}

static enum MHD_Result srv_model_route_locked(srv_server *s, srv_conn *c, const char *rest, const char *method) {
    const char *slash = strchr(rest, '/');
    size_t nlen = slash ? (size_t)(slash - rest) : strlen(rest);
    srv_model *m = srv_server_model(s, rest, nlen);
    if (!m) return srv_respond_error(c, 404, "no such model");
    c->model = m->index;
    const char *tail = slash ? slash : "";
    if (!strncmp(tail, "/versions/", 10)) {
        const char *v = tail + 10, *e = strchr(v, '/');
        const size_t vlen = e ? (size_t)(e - v) : strlen(v);
        if (vlen != 1 || v[0] != '1')
            return srv_respond_error(c, 404, "no such model version (the server has version 1 of each model)");
        tail = e ? e : "";
    }
    const int get = srv_is(method, "GET") || srv_is(method, "HEAD");
    srv_buf b = {0};
    if (!*tail) {
        if (!get) return srv_respond_error(c, 405, "use GET");
        if (m->kind == SRV_TRANSLATE) { /* what /infer takes and gives */
            srv_buf_puts(&b, "{\"name\":");
            srv_buf_json_str(&b, m->name);
            srv_buf_puts(&b, ",\"versions\":[\"1\"],\"platform\":\"clgraph_translate\","
                             "\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[-1]}],"
                             "\"outputs\":[{\"name\":\"translation\",\"datatype\":\"BYTES\",\"shape\":[-1]},"
                             "{\"name\":\"score\",\"datatype\":\"FP32\",\"shape\":[-1]}]}");
        } else {
            srv_model_metadata(m->name, m->platform, &m->io, &b);
        }
        return srv_json(c, 200, &b);
    }
    if (!strcmp(tail, "/ready")) {
        if (!get) return srv_respond_error(c, 405, "use GET");
        return srv_json(c, srv_server_stopping(s) ? 503 : 200, &b);
    }
    if (!strcmp(tail, "/infer")) {
        if (!srv_is(method, "POST")) return srv_respond_error(c, 405, "use POST");
        if (m->kind == SRV_FORECAST) return srv_respond_error(c, 404, srv_use[SRV_FORECAST]);
        return srv_infer(s, c, m);
    }
    if (!strcmp(tail, "/translate") || !strcmp(tail, "/forecast")) {
        if (!srv_is(method, "POST")) return srv_respond_error(c, 405, "use POST");
        return srv_family(s, c, m, tail[1] == 't' ? SRV_TRANSLATE : SRV_FORECAST);
    }
    return srv_respond_error(c, 404, "no such endpoint");
}

/* The page: type sentences, see translations and their attention. */
static enum MHD_Result srv_page(srv_conn *c) {
    srv_buf b = {0};
    srv_buf_add(&b, srv_page_html, sizeof srv_page_html - 1);
    return srv_respond(c, 200, &b, "text/html; charset=utf-8");
}

/* GET /v2/models: the models loaded, their platforms and devices (not in
 * the protocol; the page lists them). */
static enum MHD_Result srv_models_list(srv_server *s, srv_conn *c) {
    srv_buf b = {0};
    srv_server_lock_models(s);
    srv_buf_puts(&b, "{\"models\":[");
    for (int i = 0; i < srv_server_model_count(s); i++) {
        const srv_model *m = srv_server_model_at(s, i);
        srv_buf_puts(&b, i ? ",{\"name\":" : "{\"name\":");
        srv_buf_json_str(&b, m->name);
        srv_buf_puts(&b, ",\"platform\":");
        srv_buf_json_str(&b, m->platform);
        srv_buf_puts(&b, ",\"device\":");
        srv_buf_json_str(&b, m->device);
        srv_buf_puts(&b, "}");
    }
    srv_buf_puts(&b, "]}");
    srv_server_unlock_models(s);
    return srv_json(c, 200, &b);
}

/* POST /v2/repository/index (Triton's model repository extension): every
 * model loaded, version 1, READY (UNAVAILABLE once stopping). */
static enum MHD_Result srv_repository_index(srv_server *s, srv_conn *c) {
    srv_buf b = {0};
    srv_buf_puts(&b, "[");
    srv_server_lock_models(s);
    for (int i = 0; i < srv_server_model_count(s); i++) {
        srv_buf_puts(&b, i ? ",{\"name\":" : "{\"name\":");
        srv_buf_json_str(&b, srv_server_model_at(s, i)->name);
        srv_buf_printf(&b, ",\"version\":\"1\",\"state\":\"%s\"}", srv_server_stopping(s) ? "UNAVAILABLE" : "READY");
    }
    srv_server_unlock_models(s);
    srv_buf_puts(&b, "]");
    return srv_json(c, 200, &b);
}

enum MHD_Result srv_route(srv_server *s, srv_conn *c, const char *url, const char *method) {
    const srv_options *o = srv_server_options(s);
    const int get = srv_is(method, "GET") || srv_is(method, "HEAD");
    const int health = !strncmp(url, "/v2/health/", 11);
    if (o->token && !health && !srv_authorized(c, o->token))
        return srv_respond_error(c, 401, "a bearer token is needed (Authorization: Bearer TOKEN)");
    srv_buf b = {0};
    if (health || !strcmp(url, "/v2") || !strcmp(url, "/metrics"))
        if (!get) return srv_respond_error(c, 405, "use GET");
    if (!strcmp(url, "/v2/health/live")) return srv_json(c, 200, &b);
    if (!strcmp(url, "/v2/health/ready")) return srv_json(c, srv_server_stopping(s) ? 503 : 200, &b);
    if (!strcmp(url, "/v2")) return srv_server_meta(c);
    if (!strcmp(url, "/metrics")) {
        srv_server_metrics_page(s, &b);
        return srv_respond(c, 200, &b, "text/plain; version=0.0.4");
    }
    if (!strcmp(url, "/") && get) return srv_page(c);
    if (!strcmp(url, "/v2/models") && get) return srv_models_list(s, c);
    if (!strncmp(url, "/v2/models/", 11)) return srv_model_route(s, c, url + 11, method);
    if (!strncmp(url, "/v2/repository/models/", 22)) return srv_reload_route(s, c, url + 22, method);
    if (!strcmp(url, "/v2/repository/index")) {
        if (!srv_is(method, "POST")) return srv_respond_error(c, 405, "use POST");
        return srv_repository_index(s, c);
    }
    return srv_respond_error(c, 404, "no such endpoint");
}
