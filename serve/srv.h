/* `clgraph serve`: the HTTP server (libmicrohttpd) in front of the models
 * of srv_model.h. The Open Inference Protocol's endpoints (/v2/...), the
 * metrics page, limits, a bearer token, the access log. */
#ifndef CG_SERVE_SRV_H
#define CG_SERVE_SRV_H

#include <stdio.h>

#include "srv_model.h"

typedef struct srv_options {
    cg_context *ctx;  /* what models are loaded with (again, on reload) */
    const char *host; /* address to bind: an IPv4 or IPv6 address, or a name (its first address) */
    int port;         /* 0: any free port */
    srv_batch_cfg batch;
    srv_limits limits;
    size_t max_body;            /* bytes of a request body */
    int threads;                /* HTTP threads */
    unsigned idle_timeout_s;    /* a connection silent this long is closed */
    unsigned request_timeout_s; /* a body still arriving this long after its headers: 408 (0: none) */
    unsigned
        header_timeout_s; /* headers still arriving this long after the connection or its last request: closed (0: none) */
    unsigned max_connections; /* at once */
    const char *token;        /* NULL: no authorization */
    FILE *access_log;         /* one JSON line per request; NULL: none */
} srv_options;

typedef struct srv_server srv_server;

/* Starts the workers of models[0..n) and the HTTP daemon; *port is the port
 * bound. The models stay the caller's (free them after srv_server_stop).
 * 0, or -1 with one line in err. */
int srv_server_start(srv_model **models, int n, const srv_options *o, srv_server **out, int *port, char *err,
                     size_t errsz);

/* Loads model `name` (NULL: every model) again from its spec and puts the
 * new one in place; requests already queued on the old one are answered by
 * it before it is freed, so none is dropped. On failure the old model
 * stays: -1 with one line in err. 0 on success. Thread-safe. */
int srv_server_reload(srv_server *s, const char *name, char *err, size_t errsz);

/* Graceful stop: no new connections, new requests 503, every job queued
 * is run and answered, and the answers are sent (waiting up to
 * `grace_s` seconds for slow readers); then the daemon stops and the
 * server is freed. */
void srv_server_stop(srv_server *s, unsigned grace_s);

#endif
