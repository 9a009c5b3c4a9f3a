/* The server's counters for /metrics (Prometheus' text format, version
 * 0.0.4): requests by model and status code, latency, queue wait and batch
 * size histograms, the time each model's device was busy, queue depths.
 * One mutex: updates are a few additions per request. */
#ifndef CG_SERVE_SRV_METRICS_H
#define CG_SERVE_SRV_METRICS_H

#include <stdint.h>

#include "srv_buf.h"

typedef struct srv_metrics srv_metrics;

/* Counters for n_models models (names copied); NULL without memory. */
srv_metrics *srv_metrics_create(int n_models, const char *const *names, const char *const *devices);
void srv_metrics_free(srv_metrics *m);

/* A finished HTTP request: model index or -1 (no model: health, metadata of
 * an unknown name, ...), its status, its seconds from first byte to the
 * response. */
void srv_metrics_request(srv_metrics *m, int model, int code, double seconds);

/* A batch run by model `model`: rows, requests, seconds busy, and each
 * request's seconds in the queue. */
void srv_metrics_batch(srv_metrics *m, int model, int64_t rows, int requests, double busy_s, const double *waits);

/* Busy time of a model's device outside a batch (a stream's steps). */
void srv_metrics_busy(srv_metrics *m, int model, double busy_s);

/* The page; queue_depth[i] is model i's now. */
void srv_metrics_render(srv_metrics *m, const int *queue_depth, srv_buf *b);

#endif
