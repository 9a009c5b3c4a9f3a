/* clgraph serve: models behind the Open Inference Protocol (serve/). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "srv.h"

#define SERVE_MAX_MODELS 64

typedef struct serve_args {
    const char *models[SERVE_MAX_MODELS];
    int n_models;
    const char *host, *device, *token_file, *access_log;
    int port, max_batch, max_delay_us, max_queue, max_depth, threads, idle_timeout, max_connections, grace, workers,
        request_timeout, header_timeout;
    int batch_decode; /* --decode batch */
    double max_body_mb, max_tensor_mb;
    cli_plugins plugins;
} serve_args;

static int opt_decode(const char *cmd, const char *v, void *dst) {
    int *batch = dst;
    if (strcmp(v, "stream") && strcmp(v, "batch"))
        return cli_usage(cmd, CLI_HINT_CMD, "option '--decode' takes stream or batch, got '%s'", v);
    *batch = !strcmp(v, "batch");
    return CLI_OK;
}

static int serve_parse(int argc, char **argv, serve_args *a) {
    static const char cmd[] = "serve";
    const cli_opt opts[] = {
        {"host", 0, CLI_STR, &a->host, .arg = "ADDR", .help = "address to listen on (default 127.0.0.1)"},
        {"port", 'p', CLI_INT, &a->port, 0, 65535, .arg = "N", .help = "port (default 8000; 0: any free one)"},
        {"device", 0, CLI_STR, &a->device, .arg = "DEVICE", .help = "where the models run: cpu, opencl[:N], auto"},
        {"max-batch", 0, CLI_INT, &a->max_batch, 1, 1 << 20, .arg = "N",
         .help = "rows (dimension 0) a model runs at once, gathered from requests (default 8)"},
        {"max-delay-us", 0, CLI_INT, &a->max_delay_us, 0, 10000000, .arg = "US",
         .help = "how long a request waits for others to batch with (default 2000)"},
        {"decode", 0, CLI_CALL, &a->batch_decode, .fn = opt_decode, .arg = "HOW",
         .help = "RNN translation models: stream (sentences join the running decode; default) or batch"},
        {"max-queue", 0, CLI_INT, &a->max_queue, 1, 1000000, .arg = "N",
         .help = "requests waiting per model; past it 429 (default 256)"},
        {"max-body-mb", 0, CLI_DBL, &a->max_body_mb, 0.001, 65536, .arg = "MB",
         .help = "request body limit in MiB (default 64)"},
        {"max-tensor-mb", 0, CLI_DBL, &a->max_tensor_mb, 0.001, 65536, .arg = "MB",
         .help = "limit per input tensor in MiB (default 64)"},
        {"max-json-depth", 0, CLI_INT, &a->max_depth, 2, 1000, .arg = "N",
         .help = "nesting of a request's JSON (default 32)"},
        {"http-threads", 0, CLI_INT, &a->threads, 1, 256, .arg = "N", .help = "threads serving HTTP (default 4)"},
        {"workers", 0, CLI_INT, &a->workers, 1, 16, .arg = "N",
         .help = "threads running each model's batches, each with its own plan (default 1; a forecaster: 1)"},
        {"idle-timeout", 0, CLI_INT, &a->idle_timeout, 1, 86400, .arg = "S",
         .help = "close a connection silent this long (default 30)"},
        {"header-timeout", 0, CLI_INT, &a->header_timeout, 0, 86400, .arg = "S",
         .help = "a request's headers still arriving S seconds after the connection or its last request: closed "
                 "(default 10; 0: none)"},
        {"request-timeout", 0, CLI_INT, &a->request_timeout, 0, 86400, .arg = "S",
         .help = "a request body still arriving S seconds after its headers: 408 (default 60; 0: none)"},
        {"max-connections", 0, CLI_INT, &a->max_connections, 1, 100000, .arg = "N",
         .help = "connections at once (default 1024)"},
        {"token-file", 0, CLI_STR, &a->token_file, .arg = "FILE",
         .help = "require 'Authorization: Bearer TOKEN' (the file's first line; or CLGRAPH_SERVE_TOKEN)"},
        {"access-log", 0, CLI_STR, &a->access_log, .arg = "FILE",
         .help = "one JSON line per request: - (stderr, default), none, or a file to append to"},
        {"grace", 0, CLI_INT, &a->grace, 0, 3600, .arg = "S",
         .help = "on SIGTERM, how long answers may take to go out (default 30)"},
        {"plugin", 0, CLI_CALL, &a->plugins, .fn = cli_opt_plugin, .arg = "LIB", .help = "load an operator plugin"},
        {NULL}};
    cli_spec spec = {.cmd = cmd,
                     .opts = opts,
                     .pos = a->models,
                     .min_pos = 1,
                     .max_pos = SERVE_MAX_MODELS,
                     .n_pos = &a->n_models,
                     .pos_name = "MODEL ([NAME=]FILE.cg@WEIGHTS.safetensors or [NAME=]FILE.onnx)",
                     .unknown_hint = CLI_HINT_CMD,
                     .value_hint = CLI_HINT_CMD,
                     .missing_hint = CLI_HINT_CMD};
    return cli_args_parse(&spec, argc, argv);
}

/* The token from --token-file (its first line) or CLGRAPH_SERVE_TOKEN:
 * not from the command line, which other users can read in ps. */
static int serve_token(const serve_args *a, char *tok, size_t n) {
    tok[0] = '\0';
    if (a->token_file) {
        FILE *f = fopen(a->token_file, "r");
        if (!f || !fgets(tok, (int)n, f)) {
            fprintf(stderr, "clgraph serve: --token-file %s: cannot read it\n", a->token_file);
            if (f) fclose(f);
            return CLI_FAIL;
        }
        fclose(f);
        tok[strcspn(tok, "\r\n")] = '\0';
    } else if (getenv("CLGRAPH_SERVE_TOKEN")) {
        snprintf(tok, n, "%s", getenv("CLGRAPH_SERVE_TOKEN"));
    }
    return CLI_OK;
}

static void serve_defaults(serve_args *a) {
    memset(a, 0, sizeof *a);
    a->host = "127.0.0.1";
    a->port = 8000;
    a->max_batch = 8;
    a->max_delay_us = 2000;
    a->max_queue = 256;
    a->max_body_mb = 64;
    a->max_tensor_mb = 64;
    a->max_depth = 32;
    a->threads = 4;
    a->idle_timeout = 30;
    a->max_connections = 1024;
    a->grace = 30;
    a->workers = 1;
    a->request_timeout = 60;
    a->header_timeout = 10;
    a->access_log = "-";
}

static void serve_options(const serve_args *a, cg_context *ctx, const char *token, FILE *log, srv_options *o) {
    memset(o, 0, sizeof *o);
    o->ctx = ctx;
    o->host = a->host;
    o->port = a->port;
    o->batch = (srv_batch_cfg){a->max_batch, a->max_delay_us, a->max_queue, a->workers, a->batch_decode};
    o->limits = (srv_limits){a->max_depth, (int64_t)(a->max_tensor_mb * 1048576.0)};
    o->max_body = (size_t)(a->max_body_mb * 1048576.0);
    o->threads = a->threads;
    o->idle_timeout_s = (unsigned)a->idle_timeout;
    o->request_timeout_s = (unsigned)a->request_timeout;
    o->header_timeout_s = (unsigned)a->header_timeout;
    o->max_connections = (unsigned)a->max_connections;
    o->token = *token ? token : NULL;
    o->access_log = log;
}

/* Waits for SIGTERM or SIGINT (blocked in every thread since the start);
 * SIGHUP reloads every model. */
static void serve_wait(const sigset_t *set, srv_server *s) {
    for (;;) {
        int sig = 0;
        if (sigwait(set, &sig)) continue;
        if (sig == SIGHUP) {
            char err[2048];
            if (srv_server_reload(s, NULL, err, sizeof err))
                fprintf(stderr, "clgraph serve: SIGHUP: %s (the models loaded before go on)\n", err);
            else fprintf(stderr, "clgraph serve: SIGHUP: models loaded again\n");
            continue;
        }
        fprintf(stderr, "clgraph serve: %s: finishing the requests accepted, then exiting\n",
                sig == SIGTERM ? "SIGTERM" : "SIGINT");
        return;
    }
}

static int serve_run(serve_args *a, const sigset_t *set, srv_model **models, cg_context *ctx) {
    char token[512], err[2048];
    if (serve_token(a, token, sizeof token)) return CLI_FAIL;
    for (int i = 0; i < a->n_models; i++) {
        if (srv_model_load(ctx, a->models[i], a->device, &models[i], err, sizeof err)) {
            fprintf(stderr, "clgraph serve: %s\n", err);
            return CLI_FAIL;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(models[j]->name, models[i]->name)) {
                fprintf(stderr, "clgraph serve: two models named '%s' (give NAME=FILE)\n", models[i]->name);
                return CLI_FAIL;
            }
    }
    FILE *log = !strcmp(a->access_log, "none") ? NULL
                : !strcmp(a->access_log, "-")  ? stderr
                                               : fopen(a->access_log, "a");
    if (!log && strcmp(a->access_log, "none")) {
        fprintf(stderr, "clgraph serve: --access-log %s: cannot open it\n", a->access_log);
        return CLI_FAIL;
    }
    srv_options o;
    serve_options(a, ctx, token, log, &o);
    srv_server *s = NULL;
    int port = 0, rc = CLI_OK;
    if (srv_server_start(models, a->n_models, &o, &s, &port, err, sizeof err)) {
        fprintf(stderr, "clgraph serve: %s\n", err);
        rc = CLI_FAIL;
    } else {
        const int v6 = strchr(a->host, ':') != NULL;
        printf("clgraph serve: listening on http://%s%s%s:%d (%d model%s)\n", v6 ? "[" : "", a->host, v6 ? "]" : "",
               port, a->n_models, a->n_models == 1 ? "" : "s");
        fflush(stdout);
        serve_wait(set, s);
        srv_server_stop(s, (unsigned)a->grace);
    }
    if (log && log != stderr) fclose(log);
    return rc;
}

int cli_serve(int argc, char **argv) {
    serve_args a;
    serve_defaults(&a);
    int rc = serve_parse(argc, argv, &a);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    /* blocked before any thread starts, so that only sigwait sees them */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-answer is an error on its socket, not the end */
    cg_context *ctx = NULL;
    cg_context_options copt = {.struct_size = sizeof copt};
    if (cg_context_create(&copt, &ctx)) return cli_fail();
    for (int i = 0; i < a.plugins.n; i++)
        if (cg_context_load_plugin(ctx, a.plugins.list[i])) {
            cg_context_free(ctx);
            return cli_fail();
        }
    srv_model *models[SERVE_MAX_MODELS] = {0};
    rc = serve_run(&a, &set, models, ctx);
    for (int i = 0; i < a.n_models; i++) srv_model_free(models[i]);
    cg_context_free(ctx);
    return rc;
}
