#include "srv_metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SRV_NB 14

/* Upper bounds of the histograms' buckets (+Inf is implicit). */
static const double srv_lat_le[SRV_NB] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10};
static const double srv_batch_le[SRV_NB] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};

/* The status codes the server answers with (499: the client closed its
 * connection before its answer, nginx's name for it); others count under
 * "other", a line shown once one was seen. */
static const int srv_codes[] = {200, 400, 401, 404, 405, 408, 413, 429, 499, 500, 503, 504};
#define SRV_NCODES ((int)(sizeof srv_codes / sizeof srv_codes[0]))

typedef struct srv_hist {
    uint64_t bucket[SRV_NB + 1];
    double sum;
} srv_hist;

typedef struct srv_mstats {
    char *name, *device;
    uint64_t codes[SRV_NCODES + 1];
    srv_hist latency, wait, batch;
    uint64_t batches;
    double busy_s;
} srv_mstats;

struct srv_metrics {
    pthread_mutex_t lock;
    int n;
    srv_mstats *s; /* n models, then the server's own (index n) */
};

srv_metrics *srv_metrics_create(int n_models, const char *const *names, const char *const *devices) {
    srv_metrics *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->n = n_models;
    m->s = calloc((size_t)n_models + 1, sizeof *m->s);
    int ok = m->s != NULL;
    for (int i = 0; ok && i < n_models; i++) {
        m->s[i].name = strdup(names[i]);
        m->s[i].device = strdup(devices[i]);
        ok = m->s[i].name && m->s[i].device;
    }
    pthread_mutex_init(&m->lock, NULL);
    if (!ok) {
        srv_metrics_free(m);
        return NULL;
    }
    return m;
}

void srv_metrics_free(srv_metrics *m) {
    if (!m) return;
    for (int i = 0; m->s && i < m->n; i++) {
        free(m->s[i].name);
        free(m->s[i].device);
    }
    free(m->s);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static void srv_observe(srv_hist *h, const double *le, double v) {
    int b = 0;
    while (b < SRV_NB && v > le[b]) b++;
    h->bucket[b]++;
    h->sum += v;
}

void srv_metrics_request(srv_metrics *m, int model, int code, double seconds) {
    pthread_mutex_lock(&m->lock);
    srv_mstats *s = &m->s[model >= 0 && model < m->n ? model : m->n];
    int c = 0;
    while (c < SRV_NCODES && srv_codes[c] != code) c++;
    s->codes[c]++;
    srv_observe(&s->latency, srv_lat_le, seconds);
    pthread_mutex_unlock(&m->lock);
}

void srv_metrics_batch(srv_metrics *m, int model, int64_t rows, int requests, double busy_s, const double *waits) {
    if (model < 0 || model >= m->n) return;
    pthread_mutex_lock(&m->lock);
    srv_mstats *s = &m->s[model];
    srv_observe(&s->batch, srv_batch_le, (double)rows);
    s->batches++;
    s->busy_s += busy_s;
    for (int i = 0; i < requests; i++) srv_observe(&s->wait, srv_lat_le, waits[i]);
    pthread_mutex_unlock(&m->lock);
}

void srv_metrics_busy(srv_metrics *m, int model, double busy_s) {
    if (model < 0 || model >= m->n) return;
    pthread_mutex_lock(&m->lock);
    m->s[model].busy_s += busy_s;
    pthread_mutex_unlock(&m->lock);
}

static void srv_render_hist(srv_buf *b, const char *metric, const char *model, const srv_hist *h, const double *le) {
    uint64_t cum = 0;
    for (int i = 0; i <= SRV_NB; i++) {
        cum += h->bucket[i];
        srv_buf_printf(b, "%s_bucket{model=", metric);
        srv_buf_json_str(b, model);
        if (i < SRV_NB) srv_buf_printf(b, ",le=\"%g\"} %llu\n", le[i], (unsigned long long)cum);
        else srv_buf_printf(b, ",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    }
    srv_buf_printf(b, "%s_sum{model=", metric);
    srv_buf_json_str(b, model);
    srv_buf_printf(b, "} %.9g\n%s_count{model=", h->sum, metric);
    srv_buf_json_str(b, model);
    srv_buf_printf(b, "} %llu\n", (unsigned long long)cum);
}

static void srv_render_codes(srv_buf *b, const srv_mstats *s, const char *model) {
    for (int c = 0; c <= SRV_NCODES; c++) {
        if (!s->codes[c] && c == SRV_NCODES) continue;
        srv_buf_puts(b, "clgraph_requests_total{model=");
        srv_buf_json_str(b, model);
        if (c < SRV_NCODES) srv_buf_printf(b, ",code=\"%d\"} %llu\n", srv_codes[c], (unsigned long long)s->codes[c]);
        else srv_buf_printf(b, ",code=\"other\"} %llu\n", (unsigned long long)s->codes[c]);
    }
}

void srv_metrics_render(srv_metrics *m, const int *queue_depth, srv_buf *b) {
    pthread_mutex_lock(&m->lock);
    srv_buf_puts(b, "# HELP clgraph_requests_total HTTP requests by model (\"\": none) and status code.\n"
                    "# TYPE clgraph_requests_total counter\n");
    for (int i = 0; i <= m->n; i++) srv_render_codes(b, &m->s[i], i < m->n ? m->s[i].name : "");
    srv_buf_puts(b, "# HELP clgraph_request_duration_seconds From a request's arrival to its response.\n"
                    "# TYPE clgraph_request_duration_seconds histogram\n");
    for (int i = 0; i <= m->n; i++)
        srv_render_hist(b, "clgraph_request_duration_seconds", i < m->n ? m->s[i].name : "", &m->s[i].latency,
                        srv_lat_le);
    srv_buf_puts(b, "# HELP clgraph_queue_wait_seconds Time an infer request waited for its batch to start.\n"
                    "# TYPE clgraph_queue_wait_seconds histogram\n");
    for (int i = 0; i < m->n; i++)
        srv_render_hist(b, "clgraph_queue_wait_seconds", m->s[i].name, &m->s[i].wait, srv_lat_le);
    srv_buf_puts(b, "# HELP clgraph_batch_rows Rows (dimension 0 of the inputs) per run of the model.\n"
                    "# TYPE clgraph_batch_rows histogram\n");
    for (int i = 0; i < m->n; i++) srv_render_hist(b, "clgraph_batch_rows", m->s[i].name, &m->s[i].batch, srv_batch_le);
    srv_buf_puts(b, "# HELP clgraph_device_busy_seconds_total Time a model's plan ran, by model and device.\n"
                    "# TYPE clgraph_device_busy_seconds_total counter\n");
    for (int i = 0; i < m->n; i++) {
        srv_buf_puts(b, "clgraph_device_busy_seconds_total{model=");
        srv_buf_json_str(b, m->s[i].name);
        srv_buf_puts(b, ",device=");
        srv_buf_json_str(b, m->s[i].device);
        srv_buf_printf(b, "} %.9g\n", m->s[i].busy_s);
    }
    srv_buf_puts(b, "# HELP clgraph_queue_depth Infer requests waiting per model.\n# TYPE clgraph_queue_depth gauge\n");
    for (int i = 0; i < m->n; i++) {
        srv_buf_puts(b, "clgraph_queue_depth{model=");
        srv_buf_json_str(b, m->s[i].name);
        srv_buf_printf(b, "} %d\n", queue_depth[i]);
    }
    pthread_mutex_unlock(&m->lock);
}
