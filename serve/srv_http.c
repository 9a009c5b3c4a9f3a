/* libmicrohttpd glue: one srv_conn per request, its body gathered under the
 * size limit, routed, and for infer queued on the model while the
 * connection is suspended (the worker resumes it with the answer). */
#include "srv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "srv_http.h"
#include "srv_watch.h"

struct srv_server {
    struct MHD_Daemon *d;
    srv_model **models;
    int n;
    srv_options o;
    srv_metrics *metrics;
    atomic_int stopping;
    atomic_int active; /* requests between their first byte and their end */
    pthread_mutex_t log_lock;
    /* models[] may be swapped by a reload: readers (a request from finding
     * its model to queueing on it) hold it shared, the swap exclusively */
    pthread_rwlock_t models_lock;
    pthread_mutex_t reload_lock; /* one reload at a time */
    srv_watch *watch;            /* --header-timeout, or NULL */
};

void srv_server_lock_models(srv_server *s) { pthread_rwlock_rdlock(&s->models_lock); }
void srv_server_unlock_models(srv_server *s) { pthread_rwlock_unlock(&s->models_lock); }

srv_model *srv_server_model(srv_server *s, const char *name, size_t len) {
    for (int i = 0; i < s->n; i++)
        if (strlen(s->models[i]->name) == len && !strncmp(s->models[i]->name, name, len)) return s->models[i];
    return NULL;
}

const srv_options *srv_server_options(const srv_server *s) { return &s->o; }
int srv_server_model_count(const srv_server *s) { return s->n; }
const srv_model *srv_server_model_at(const srv_server *s, int i) { return s->models[i]; }
int srv_server_stopping(const srv_server *s) { return atomic_load(&s->stopping); }
srv_metrics *srv_server_metrics(srv_server *s) { return s->metrics; }

void srv_server_metrics_page(srv_server *s, srv_buf *b) {
    int depth[256];
    srv_server_lock_models(s);
    for (int i = 0; i < s->n && i < 256; i++) depth[i] = srv_model_depth(s->models[i]);
    srv_server_unlock_models(s);
    srv_metrics_render(s->metrics, depth, b);
}

/* Model i loaded again and swapped in; the old one answers its queue and
 * goes. */
static int srv_reload_one(srv_server *s, int i, char *err, size_t errsz) {
    srv_model *old = s->models[i], *m = NULL;
    if (srv_model_load(s->o.ctx, old->spec, old->default_device, &m, err, errsz)) return -1;
    if (srv_model_start(m, &s->o.batch, s->metrics, i, err, errsz)) {
        srv_model_free(m);
        return -1;
    }
    pthread_rwlock_wrlock(&s->models_lock);
    s->models[i] = m;
    pthread_rwlock_unlock(&s->models_lock);
    srv_model_free(old); /* drains: what was queued on it is answered */
    return 0;
}

int srv_server_reload(srv_server *s, const char *name, char *err, size_t errsz) {
    pthread_mutex_lock(&s->reload_lock);
    int rc = 0, found = 0;
    for (int i = 0; i < s->n && !rc; i++)
        if (!name || !strcmp(s->models[i]->name, name)) {
            found = 1;
            rc = srv_reload_one(s, i, err, errsz);
        }
    pthread_mutex_unlock(&s->reload_lock);
    if (!found) {
        snprintf(err, errsz, "no model named '%s'", name ? name : "");
        return -1;
    }
    return rc;
}

/* The worker's answer is in: back to the daemon, which calls the handler
 * again to send it. */
static void srv_job_done(srv_job *job) {
    srv_conn *c = job->user;
    atomic_store(&c->answered, 1);
    MHD_resume_connection(c->c);
}

/* The client closed its side (a read would give end of file) or reset the
 * connection. A suspended connection's socket is read by nobody else. */
static int srv_job_gone(const srv_job *job) {
    const srv_conn *c = job->user;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c->c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 0;
    char b;
    ssize_t n = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

int srv_queue_infer(srv_conn *c, srv_model *m) {
    c->job.done = srv_job_done;
    c->job.gone = srv_job_gone;
    c->job.user = c;
    int rc = srv_model_push(m, &c->job);
    if (rc) return rc;
    c->queued = 1;
    MHD_suspend_connection(c->c);
    return 0;
}

static enum MHD_Result srv_access(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    srv_server *s = cls;
    srv_conn *c = *con_cls;
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c) return MHD_NO;
        c->c = mc;
        c->srv = s;
        c->t0 = srv_now_ns();
        c->model = -1;
        c->path = strdup(url);
        snprintf(c->method, sizeof c->method, "%s", method);
        atomic_fetch_add(&s->active, 1);
        *con_cls = c;
        srv_watch_busy(s->watch, mc, 1);
        const char *cl = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > s->o.max_body)
            return srv_respond_error(c, 413, "the request body is larger than the server's limit");
        return MHD_YES;
    }
    if (*upload_size) {
        /* a body that trickles in (a byte now and then keeps the idle
         * timeout away) has --request-timeout from the headers' end */
        if (s->o.request_timeout_s && srv_now_ns() - c->t0 > (int64_t)s->o.request_timeout_s * 1000000000) {
            *upload_size = 0;
            return srv_respond_error(c, 408, "the request body took longer than the server's request timeout");
        }
        if (!c->too_big && c->body.n + *upload_size > s->o.max_body) {
            c->too_big = 1;
            srv_buf_free(&c->body);
        }
        if (!c->too_big) srv_buf_add(&c->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (c->queued) return atomic_load(&c->answered) ? srv_respond_job(c) : MHD_YES;
    if (c->too_big) return srv_respond_error(c, 413, "the request body is larger than the server's limit");
    if (c->body.failed) return srv_respond_error(c, 500, "out of memory reading the request");
    return srv_route(s, c, url, method);
}

/* The access log's line of a finished request (its metrics were counted
 * when its answer was queued). */
static void srv_completed(void *cls, struct MHD_Connection *mc, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)toe;
    srv_server *s = cls;
    srv_conn *c = *con_cls;
    if (!c) return;
    const double secs = (double)(srv_now_ns() - c->t0) * 1e-9;
    if (s->o.access_log) {
        char addr[INET6_ADDRSTRLEN] = "";
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        const struct sockaddr *sa = ci ? ci->client_addr : NULL;
        if (sa && sa->sa_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, addr, sizeof addr);
        else if (sa && sa->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, addr, sizeof addr);
        srv_log_line(s->o.access_log, &s->log_lock, c, addr, secs, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
    }
    srv_conn_free(c);
    *con_cls = NULL;
    srv_watch_busy(s->watch, mc, 0);
    atomic_fetch_sub(&s->active, 1);
}

int srv_server_start(srv_model **models, int n, const srv_options *o, srv_server **out, int *port, char *err,
                     size_t errsz) {
    *out = NULL;
    srv_server *s = calloc(1, sizeof *s);
    const char *names[256], *devices[256];
    if (!s || n > 256) {
        snprintf(err, errsz, s ? "more than 256 models" : "out of memory");
        free(s);
        return -1;
    }
    s->models = models;
    s->n = n;
    s->o = *o;
    pthread_mutex_init(&s->log_lock, NULL);
    pthread_rwlock_init(&s->models_lock, NULL);
    pthread_mutex_init(&s->reload_lock, NULL);
    for (int i = 0; i < n; i++) names[i] = models[i]->name, devices[i] = models[i]->device;
    s->metrics = srv_metrics_create(n, names, devices);
    int ok = s->metrics != NULL;
    if (!ok) snprintf(err, errsz, "out of memory");
    for (int i = 0; ok && i < n; i++) ok = !srv_model_start(models[i], &o->batch, s->metrics, i, err, errsz);
    if (!ok) {
        srv_server_stop(s, 0);
        return -1;
    }
    if (o->header_timeout_s && !(s->watch = srv_watch_create(o->header_timeout_s))) {
        snprintf(err, errsz, "out of memory or threads starting the header watchdog");
        srv_server_stop(s, 0);
        return -1;
    }
    if (srv_daemon_start(s, o, &s->d, port, err, errsz, srv_access, srv_completed, s->watch)) {
        srv_server_stop(s, 0);
        return -1;
    }
    *out = s;
    return 0;
}

void srv_server_stop(srv_server *s, unsigned grace_s) {
    if (!s) return;
    atomic_store(&s->stopping, 1);
    /* The listen socket is ours once quiesced, but the daemon's threads
     * take it out of their epoll sets when they next wake: it is closed
     * after the daemon stops (ThreadSanitizer saw the race). Connections
     * that arrive meanwhile wait in its backlog and are reset then. */
    MHD_socket fd = s->d ? MHD_quiesce_daemon(s->d) : MHD_INVALID_SOCKET;
    pthread_mutex_lock(&s->reload_lock); /* a reload under way ends first */
    for (int i = 0; i < s->n; i++) srv_model_drain(s->models[i]);
    pthread_mutex_unlock(&s->reload_lock);
    /* the answers go out before the daemon closes the connections; and
     * keep-alive clients get 50 ms of quiet to read their 503s and close,
     * rather than a connection shut under a request they are sending */
    const int64_t until = srv_now_ns() + (int64_t)grace_s * 1000000000;
    int64_t quiet_since = 0;
    while (s->d && srv_now_ns() < until) {
        if (atomic_load(&s->active) > 0) quiet_since = 0;
        else if (!quiet_since) quiet_since = srv_now_ns();
        else if (srv_now_ns() - quiet_since > 50000000) break;
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    if (s->d) MHD_stop_daemon(s->d);
    if (fd != MHD_INVALID_SOCKET) close(fd);
    srv_watch_free(s->watch);
    srv_metrics_free(s->metrics);
    pthread_mutex_destroy(&s->log_lock);
    pthread_rwlock_destroy(&s->models_lock);
    pthread_mutex_destroy(&s->reload_lock);
    free(s);
}
