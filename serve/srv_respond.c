#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "srv_http.h"
#include "srv_watch.h"

/* The request's status and size, counted in the metrics now: before the
 * client can have its answer (and ask /metrics). */
static void srv_record(srv_conn *c, int status, size_t bytes) {
    c->status = status;
    c->resp_bytes = bytes;
    srv_metrics_request(srv_server_metrics(c->srv), c->model, status, (double)(srv_now_ns() - c->t0) * 1e-9);
}

/* srv_respond with, when json_len is not 0, the binary tensor extension's
 * Inference-Header-Content-Length. */
static enum MHD_Result srv_respond_len(srv_conn *c, int status, srv_buf *body, const char *type, size_t json_len) {
    size_t n = 0;
    char *p = srv_buf_take(body, &n);
    if (!p) return MHD_NO; /* no memory even for the answer: drop the connection */
    struct MHD_Response *r = MHD_create_response_from_buffer(n, p, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(p);
        return MHD_NO;
    }
    if (type) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (type && !strncmp(type, "text/html", 9)) /* the page's own script and style only, no framing */
        MHD_add_response_header(r, "Content-Security-Policy",
                                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                                "connect-src 'self'; img-src 'self'; frame-ancestors 'none'");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (status == 429) MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (status == 401) MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (status == 503 && srv_server_stopping(c->srv)) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    if (json_len) {
        char len[32];
        snprintf(len, sizeof len, "%zu", json_len);
        MHD_add_response_header(r, "Inference-Header-Content-Length", len);
    }
    srv_record(c, status, n);
    enum MHD_Result rc = MHD_queue_response(c->c, (unsigned)status, r);
    MHD_destroy_response(r);
    return rc;
}

enum MHD_Result srv_respond(srv_conn *c, int status, srv_buf *body, const char *type) {
    return srv_respond_len(c, status, body, type, 0);
}

enum MHD_Result srv_respond_error(srv_conn *c, int status, const char *msg) {
    srv_buf b = {0};
    srv_error_json(&b, msg);
    return srv_respond(c, status, &b, "application/json");
}

enum MHD_Result srv_respond_job(srv_conn *c) {
    srv_job *j = &c->job;
    const char *type = j->json_len ? "application/octet-stream" : j->type ? j->type : "application/json";
    return srv_respond_len(c, j->status, &j->body, type, j->json_len);
}

void srv_conn_free(srv_conn *c) {
    srv_infer_req_clear(&c->job.req);
    srv_tr_req_clear(&c->job.tr);
    srv_fc_req_clear(&c->job.fc);
    srv_buf_free(&c->job.body);
    srv_buf_free(&c->body);
    free(c->path);
    free(c);
}

void srv_log_line(FILE *f, pthread_mutex_t *lock, const srv_conn *c, const char *addr, double secs, int complete) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    char when[40];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    srv_buf b = {0};
    srv_buf_printf(&b, "{\"time\":\"%s.%03ldZ\",\"remote\":", when, now.tv_nsec / 1000000);
    srv_buf_json_str(&b, addr);
    srv_buf_puts(&b, ",\"method\":");
    srv_buf_json_str(&b, c->method);
    srv_buf_puts(&b, ",\"path\":");
    srv_buf_json_str(&b, c->path ? c->path : "");
    srv_buf_printf(&b, ",\"status\":%d,\"bytes\":%zu,\"ms\":%.3f", c->status, c->resp_bytes, secs * 1e3);
    const char *rid = c->job.req.id ? c->job.req.id : c->job.tr.id ? c->job.tr.id : c->job.fc.id;
    if (rid) {
        srv_buf_puts(&b, ",\"id\":");
        srv_buf_json_str(&b, rid);
    }
    srv_buf_printf(&b, ",\"complete\":%s}\n", complete ? "true" : "false");
    if (!b.failed) {
        pthread_mutex_lock(lock);
        fputs(b.p, f);
        fflush(f);
        pthread_mutex_unlock(lock);
    }
    srv_buf_free(&b);
}

/* The address to bind: an IPv4 or IPv6 literal, or a name (localhost),
 * its first address. 0, or a getaddrinfo error. */
static int srv_addr(const char *host, int port, struct sockaddr_storage *ss, int *v6) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc) return rc;
    memset(ss, 0, sizeof *ss);
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *v6 = res->ai_family == AF_INET6;
    if (*v6) ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
    else ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
    freeaddrinfo(res);
    return 0;
}

int srv_daemon_start(srv_server *s, const srv_options *o, struct MHD_Daemon **d, int *port, char *err, size_t errsz,
                     srv_access_fn access, srv_completed_fn completed, void *watch) {
    struct sockaddr_storage ss;
    int v6 = 0;
    int gai = srv_addr(o->host, o->port, &ss, &v6);
    if (gai) {
        snprintf(err, errsz, "--host %s: %s", o->host, gai_strerror(gai));
        return -1;
    }
    /* no MHD_USE_ERROR_LOG: a failure to listen is our one line below, and
     * clients' malformed requests get their 4xx without a line on stderr */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC |
                     (v6 ? MHD_USE_IPv6 : 0);
    errno = 0;
    *d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, access, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                          MHD_OPTION_THREAD_POOL_SIZE, (unsigned)o->threads, MHD_OPTION_CONNECTION_TIMEOUT,
                          o->idle_timeout_s, MHD_OPTION_CONNECTION_LIMIT, o->max_connections,
                          MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 * 1024, MHD_OPTION_NOTIFY_COMPLETED, completed,
                          s, MHD_OPTION_NOTIFY_CONNECTION, srv_watch_notify, watch, MHD_OPTION_END);
    if (!*d) {
        snprintf(err, errsz, "cannot listen on %s port %d%s%s", o->host, o->port, errno ? ": " : "",
                 errno ? strerror(errno) : "");
        return -1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(*d, MHD_DAEMON_INFO_BIND_PORT);
    *port = di ? di->port : o->port;
    return 0;
}
