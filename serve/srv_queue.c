/* A model's queue and the worker thread that empties it in batches. */
#include "srv_model.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* Jobs per batch at most (a batch of one-row requests up to max_batch). */
#define SRV_MAX_JOBS 1024

/* b can join a batch that a started: the same dims after dimension 0. */
static int srv_compatible(const srv_model *m, const srv_job *a, const srv_job *b) {
    if (m->kind == SRV_TRANSLATE) return srv_tr_compatible(&a->tr, &b->tr);
    if (m->kind == SRV_FORECAST) return a->fc.horizon == b->fc.horizon && a->fc.attention == b->fc.attention;
    for (int k = 0; k < m->io.n_in; k++) {
        const cg_tensor *x = a->req.in[k], *y = b->req.in[k];
        for (int d = 1; d < cg_tensor_ndim(x); d++)
            if (cg_tensor_dim(x, d) != cg_tensor_dim(y, d)) return 0;
    }
    return 1;
}

int srv_model_push(srv_model *m, srv_job *job) {
    const int tr = m->kind == SRV_TRANSLATE, fc = m->kind == SRV_FORECAST;
    job->rows = tr ? job->tr.n : fc ? job->fc.n : m->batchable ? cg_tensor_dim(job->req.in[0], 0) : 1;
    job->enq_ns = srv_now_ns();
    const int64_t timeout = tr ? job->tr.timeout_us : fc ? job->fc.timeout_us : job->req.timeout_us;
    job->deadline_ns = timeout > 0 ? job->enq_ns + timeout * 1000 : 0;
    job->next = NULL;
    pthread_mutex_lock(&m->lock);
    int rc = m->stopping ? 503 : m->depth >= m->cfg.max_queue ? 429 : 0;
    if (!rc) {
        if (m->tail) m->tail->next = job;
        else m->head = job;
        m->tail = job;
        m->depth++;
        pthread_cond_signal(&m->cond);
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

int srv_model_depth(srv_model *m) {
    pthread_mutex_lock(&m->lock);
    int d = m->depth;
    pthread_mutex_unlock(&m->lock);
    return d;
}

/* Moves the queued jobs compatible with batch[0] into batch while the rows
 * fit (under m->lock). */
static int srv_gather(srv_model *m, srv_job **batch, int n, int64_t *rows) {
    srv_job *prev = NULL, *j = m->head;
    while (j && *rows < m->cfg.max_batch && n < SRV_MAX_JOBS) {
        srv_job *next = j->next;
        if (*rows + j->rows <= m->cfg.max_batch && srv_compatible(m, batch[0], j)) {
            if (prev) prev->next = next;
            else m->head = next;
            if (m->tail == j) m->tail = prev;
            m->depth--;
            batch[n++] = j;
            *rows += j->rows;
        } else {
            prev = j;
        }
        j = next;
    }
    return n;
}

/* The next batch (under m->lock, with a job queued): the first job, and
 * whatever compatible arrives before its delay is up or the rows are full. */
static int srv_take(srv_model *m, srv_job **batch) {
    srv_job *first = m->head;
    m->head = first->next;
    if (!m->head) m->tail = NULL;
    m->depth--;
    batch[0] = first;
    int n = 1;
    int64_t rows = first->rows;
    if (!m->batchable) return 1;
    const int64_t until = first->enq_ns + m->cfg.max_delay_us * 1000;
    for (;;) {
        n = srv_gather(m, batch, n, &rows);
        if (rows >= m->cfg.max_batch || n == SRV_MAX_JOBS || m->stopping || srv_now_ns() >= until) return n;
        struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
        pthread_cond_timedwait(&m->cond, &m->lock, &ts);
    }
}

int srv_job_stale(srv_job *j, int64_t now) {
    if (j->deadline_ns && now > j->deadline_ns) {
        j->status = 504;
        srv_error_json(&j->body, "the request's timeout passed while it waited in the queue");
        return 1;
    }
    if (j->gone && j->gone(j)) { /* nobody to answer */
        j->status = 499;
        srv_error_json(&j->body, "the client closed its connection");
        return 1;
    }
    return 0;
}

/* Runs a batch: jobs past their deadline, or whose client has gone, are
 * answered without running. */
static void srv_run_batch(const srv_worker *wk, srv_job **batch, int n) {
    srv_model *m = wk->m;
    srv_job *run[SRV_MAX_JOBS];
    double waits[SRV_MAX_JOBS];
    unsigned char answered[SRV_MAX_JOBS] = {0};
    int nr = 0;
    int64_t rows = 0;
    const int64_t t0 = srv_now_ns();
    for (int i = 0; i < n; i++) {
        if (srv_job_stale(batch[i], t0)) continue; /* its rows leave the batch */
        batch[i]->answered = &answered[i];
        waits[nr] = (double)(t0 - batch[i]->enq_ns) * 1e-9;
        rows += batch[i]->rows;
        run[nr++] = batch[i];
    }
    if (nr) {
        srv_model_run(wk, run, nr);
        srv_metrics_batch(m->metrics, m->index, rows, nr, (double)(srv_now_ns() - t0) * 1e-9, waits);
    }
    for (int i = 0; i < n; i++) /* the job is the caller's from here */
        if (!answered[i]) batch[i]->done(batch[i]);
}

static void *srv_worker_main(void *arg) {
    const srv_worker *wk = arg;
    srv_model *m = wk->m;
    if (m->streams) {
        srv_stream_work(wk);
        return NULL;
    }
    srv_job *batch[SRV_MAX_JOBS];
    for (;;) {
        pthread_mutex_lock(&m->lock);
        while (!m->head && !m->stopping) pthread_cond_wait(&m->cond, &m->lock);
        if (!m->head) {
            pthread_mutex_unlock(&m->lock);
            break;
        }
        int n = srv_take(m, batch);
        pthread_mutex_unlock(&m->lock);
        srv_run_batch(wk, batch, n);
    }
    return NULL;
}

/* Worker w's own plan or handle (worker 0 has the model's). */
static int srv_worker_open(srv_model *m, int w, char *err, size_t errsz) {
    srv_worker *wk = &m->workers[w];
    wk->m = m;
    if (w == 0) {
        wk->plan = m->plan;
        wk->s2s = m->s2s;
        return 0;
    }
    cg_plan_options popt = {.struct_size = sizeof popt, .device = m->device_req};
    cg_status st = m->kind == SRV_GRAPH       ? cg_plan_create(m->m, NULL, &popt, &wk->plan)
                   : m->kind == SRV_TRANSLATE ? cg_s2s_clone(m->s2s, NULL, &wk->s2s)
                                              : CG_OK;
    if (st) snprintf(err, errsz, "model '%s': worker %d: %s", m->name, w, cg_last_error());
    return st ? -1 : 0;
}

int srv_model_start(srv_model *m, const srv_batch_cfg *cfg, srv_metrics *metrics, int index, char *err, size_t errsz) {
    m->cfg = *cfg;
    if (cfg->batch_decode) m->streams = 0;
    m->metrics = metrics;
    m->index = index;
    int n = m->kind == SRV_FORECAST || cfg->workers < 1 ? 1 : cfg->workers;
    if (n > SRV_MAX_WORKERS) n = SRV_MAX_WORKERS;
    for (int w = 0; w < n; w++) {
        if (srv_worker_open(m, w, err, errsz)) return -1;
        m->n_workers = w + 1;
        if (pthread_create(&m->workers[w].thread, NULL, srv_worker_main, &m->workers[w])) {
            snprintf(err, errsz, "model '%s': cannot start a worker thread", m->name);
            return -1;
        }
        m->workers[w].started = 1;
    }
    return 0;
}

void srv_model_drain(srv_model *m) {
    pthread_mutex_lock(&m->lock);
    m->stopping = 1;
    pthread_cond_broadcast(&m->cond);
    pthread_mutex_unlock(&m->lock);
    for (int w = 0; w < m->n_workers; w++) {
        srv_worker *wk = &m->workers[w];
        if (wk->started) pthread_join(wk->thread, NULL);
        wk->started = 0;
        if (w > 0) { /* the others' own plans and handles */
            cg_plan_free(wk->plan);
            cg_s2s_free(wk->s2s);
            wk->plan = NULL;
            wk->s2s = NULL;
        }
    }
    m->n_workers = 0;
}
