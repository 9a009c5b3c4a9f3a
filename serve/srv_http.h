/* What the HTTP side's files share (srv_http.c: the daemon's callbacks and
 * the server's life; srv_routes.c: the endpoints; srv_respond.c: responses,
 * the access log, the daemon's options). */
#ifndef CG_SERVE_SRV_HTTP_H
#define CG_SERVE_SRV_HTTP_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>

#include "srv.h"

/* One request. */
typedef struct srv_conn {
    struct MHD_Connection *c;
    srv_server *srv;
    int64_t t0;
    char method[16];
    char *path;
    srv_buf body;
    int too_big;
    srv_job job;
    int queued;          /* job pushed, connection suspended */
    atomic_int answered; /* the worker is done with job */
    int model;           /* index for the metrics, -1: none */
    int status;          /* of the response queued */
    size_t resp_bytes;
} srv_conn;

typedef enum MHD_Result (*srv_access_fn)(void *, struct MHD_Connection *, const char *, const char *, const char *,
                                         const char *, size_t *, void **);
typedef void (*srv_completed_fn)(void *, struct MHD_Connection *, void **, enum MHD_RequestTerminationCode);

/* srv_http.c */
/* The model of that name, or NULL; between srv_server_lock_models and
 * srv_server_unlock_models (a reload may swap it otherwise). */
srv_model *srv_server_model(srv_server *s, const char *name, size_t len);
void srv_server_lock_models(srv_server *s);
void srv_server_unlock_models(srv_server *s);
int srv_server_model_count(const srv_server *s);
const srv_model *srv_server_model_at(const srv_server *s, int i);
const srv_options *srv_server_options(const srv_server *s);
int srv_server_stopping(const srv_server *s);
void srv_server_metrics_page(srv_server *s, srv_buf *b);
srv_metrics *srv_server_metrics(srv_server *s);
/* Pushes c's parsed job on m and suspends c: 0, or 429 / 503. */
int srv_queue_infer(srv_conn *c, srv_model *m);

/* srv_routes.c: answers a complete request. */
enum MHD_Result srv_route(srv_server *s, srv_conn *c, const char *url, const char *method);

/* srv_respond.c */
/* Queues `body` (taken) with a content type, and records the status. */
enum MHD_Result srv_respond(srv_conn *c, int status, srv_buf *body, const char *type);
/* {"error": msg} with status (429 adds Retry-After, 401 WWW-Authenticate). */
enum MHD_Result srv_respond_error(srv_conn *c, int status, const char *msg);
/* The job's answer (JSON, or JSON and binary outputs). */
enum MHD_Result srv_respond_job(srv_conn *c);
void srv_conn_free(srv_conn *c);
void srv_log_line(FILE *f, pthread_mutex_t *lock, const srv_conn *c, const char *addr, double secs, int complete);
int srv_daemon_start(srv_server *s, const srv_options *o, struct MHD_Daemon **d, int *port, char *err, size_t errsz,
                     srv_access_fn access, srv_completed_fn completed, void *watch);

#endif
