/* A served model: a graph (.cg with its weights, or .onnx) planned once on
 * its device, its inputs and outputs as the protocol describes them, and
 * its queue of infer jobs, which one worker thread runs in batches (see
 * srv_batch.c). */
#ifndef CG_SERVE_SRV_MODEL_H
#define CG_SERVE_SRV_MODEL_H

#include <pthread.h>
#include <stdint.h>

#include "clgraph/clgraph.h"
#include "clgraph/forecast.h"
#include "clgraph/seq2seq.h"
#include "srv_buf.h"
#include "srv_forecast.h"
#include "srv_metrics.h"
#include "srv_oip.h"
#include "srv_translate.h"

/* One infer request on its way through a model's queue. The HTTP side
 * fills req and done/user and pushes it; the worker sets status and body
 * (and json_len) and then calls done, after which it does not touch it. */
typedef struct srv_job {
    srv_infer_req req;   /* a graph's infer request */
    srv_tr_req tr;       /* a translation model's request */
    srv_fc_req fc;       /* a forecasting model's request */
    int64_t rows;        /* dimension 0 of the inputs (batchable graphs), sentences or series */
    int64_t enq_ns;      /* CLOCK_MONOTONIC */
    int64_t deadline_ns; /* 0: none */
    int status;          /* HTTP status of the answer */
    const char *type;    /* its content type; NULL: JSON */
    srv_buf body;
    size_t json_len; /* Inference-Header-Content-Length, 0: JSON only */
    void (*done)(struct srv_job *job);
    /* Set by the worker running the job: a run that answers it early (a
     * translation whose sentences ended before the rest of its batch) sets
     * *answered before calling done, after which the job is not touched. */
    unsigned char *answered;
    /* 1 when the client has gone (closed its connection): a job that
     * waited is then answered 499 without running, and a translation's
     * sentences leave the decode at the next step. May be NULL. */
    int (*gone)(const struct srv_job *job);
    void *user;
    struct srv_job *next;
} srv_job;

/* Batching and queue settings (the server's options). */
typedef struct srv_batch_cfg {
    int64_t max_batch;    /* rows per run */
    int64_t max_delay_us; /* how long the first job of a batch waits for more */
    int max_queue;        /* jobs waiting, per model */
    int workers;          /* threads running batches per model (1 for a forecaster) */
    int batch_decode;     /* RNN translation models decode in batches, not as a stream */
} srv_batch_cfg;

#define SRV_MAX_WORKERS 16

struct srv_model;

/* One thread running a model's batches, with a plan or a translation
 * handle of its own (a plan or handle is used by one thread at a time). */
typedef struct srv_worker {
    struct srv_model *m;
    cg_plan *plan; /* SRV_GRAPH: the model's first plan for worker 0, its own for the others */
    cg_s2s *s2s;   /* SRV_TRANSLATE: the model's handle for worker 0, a cg_s2s_clone for the others */
    pthread_t thread;
    int started;
} srv_worker;

/* What a model is: a graph served by /infer, a translation model
 * directory served by /translate, a forecasting one by /forecast. */
enum { SRV_GRAPH, SRV_TRANSLATE, SRV_FORECAST };

typedef struct srv_model {
    char *name;
    char *spec;                 /* as given, for a reload */
    const char *default_device; /* --device (NULL: cpu) */
    int kind;
    char *platform;    /* "clgraph_graph", "onnx" or "clgraph_translate" */
    cg_s2s *s2s;       /* SRV_TRANSLATE */
    cg_forecaster *fc; /* SRV_FORECAST */
    cg_model *m;
    cg_weights *w;
    cg_plan *plan;
    const char *device; /* the plan's (a graph), or the --device / ,device= given */
    char *device_own;   /* ,device= of the spec */
    srv_model_io io;
    int batchable; /* every input and output has the same symbol as dimension 0 */
    int streams;   /* a translation model whose family decodes as a stream (cg_s2s_stream) */
    int index;     /* in the server's metrics */
    srv_metrics *metrics;
    srv_batch_cfg cfg;
    const char *device_req; /* the device asked for (NULL: cpu), for the workers' plans */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    srv_job *head, *tail;
    int depth, stopping;
    int n_workers;
    srv_worker workers[SRV_MAX_WORKERS];
} srv_model;

/* Loads `spec`, [NAME=]PATH[@WEIGHTS][,device=D] (a .cg graph text with its
 * safetensors weights, an .onnx model, a translation model directory of
 * either family, or a forecasting model directory ("task": "forecast" in
 * its config.json) on D, else `device` (NULL: cpu); NAME defaults to the file's name
 * without its extension, letters, digits, '_', '-' and '.' only), plans it
 * (a graph file: its first graph). 0, or -1 with one line in err. */
int srv_model_load(cg_context *ctx, const char *spec, const char *device, srv_model **out, char *err, size_t errsz);

/* Stops the worker (after the jobs queued) and frees the model. */
void srv_model_free(srv_model *m);

/* Starts the worker threads (cfg->workers, each with its own plan or
 * handle). 0, or -1 with one line in err. */
int srv_model_start(srv_model *m, const srv_batch_cfg *cfg, srv_metrics *metrics, int index, char *err, size_t errsz);

/* Queues a job: 0, 429 when the queue is full, 503 when stopping. */
int srv_model_push(srv_model *m, srv_job *job);

/* Jobs waiting now. */
int srv_model_depth(srv_model *m);

/* Lets the worker finish what is queued and joins it. */
void srv_model_drain(srv_model *m);

/* Runs jobs[0..n) (compatible: see srv_batch.c) on worker wk as one
 * batch, or one at a time, and sets each job's answer (done is not
 * called). */
void srv_model_run(const srv_worker *wk, srv_job **jobs, int n);

/* Translates jobs[0..n) (compatible options) in one cg_s2s_translate and
 * sets each job's answer (srv_batch.c). */
void srv_tr_run(const srv_worker *wk, srv_job **jobs, int n);

/* The same for forecasting jobs (the same horizon and attention flag). */
void srv_fc_run(const srv_worker *wk, srv_job **jobs, int n);

/* How often a running translation job's socket is looked at (a recv
 * peek) for a client that left. */
#define SRV_PEEK_NS 20000000

/* Why a running translation job stops decoding (srv_job_left; FAILED:
 * a stream could not take its sentences, the answer is already set). */
enum { SRV_LEFT_GONE = 1, SRV_LEFT_FAILED = 2, SRV_LEFT_TIMEOUT = 3 };

/* Whether a running translation job stops: `left` as it stood (kept once
 * set), else SRV_LEFT_TIMEOUT past its deadline, SRV_LEFT_GONE when its
 * client has closed the connection (looked at every SRV_PEEK_NS, *peek_ns
 * the next time), else 0. */
int srv_job_left(srv_job *j, int left, int64_t *peek_ns);

/* A job that stopped decoding answered: 504 or 499. */
void srv_job_left_answer(srv_job *j, int left);

/* A taken job that is not to run: past its deadline at `now` (504) or its
 * client gone (499); 1 with its answer set, else 0. */
int srv_job_stale(srv_job *j, int64_t now);

/* The job's answer: status and an error JSON body. */
void srv_job_fail(srv_job *j, int status, const char *msg);

/* A translation job's text to ids, on the worker's handle; 0, or the job
 * is answered 400 and -1. */
int srv_tr_tokenize(const srv_worker *wk, srv_job *j);

/* A translation job's answer from its sentences' results (200, or 500). */
void srv_tr_answer(const srv_worker *wk, srv_job *j, const cg_s2s_result *res);

/* A worker of a translation model that decodes as a stream (either
 * family; not a model.cg whose decoder reads keys per row): sentences
 * join the running decode at the next step and leave when they end
 * (srv_stream.c). Returns when the model stops and everything taken is
 * answered. */
void srv_stream_work(const srv_worker *wk);

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t srv_now_ns(void);

#endif
