/* A translation model's worker as a stream (cg_s2s_stream, either
 * family): jobs are taken from the queue whenever the stream has room and
 * their sentences join the running decode at the next step, so a short
 * request never waits for a long one's end; each job is answered when its
 * last sentence ends, and a job whose client left has its sentences
 * dropped between steps. The stream decodes with one set of options: a
 * job with others waits at the head of the queue until the stream has
 * drained (first come, first served), and the stream then takes its
 * options. A big job joins as room frees, --max-batch sentences at most
 * decoding at once. */
#include "srv_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tag = slot * SRV_TAG_SENTS + sentence; a request has at most
 * SRV_TR_MAX_SOURCES sentences */
#define SRV_TAG_SENTS 16384

typedef struct srv_active {
    srv_job *job;       /* NULL: a free slot */
    int added, running; /* sentences given to the stream; of those, decoding */
    int ended;          /* sentences done */
    cg_s2s_result *res; /* [n]: their results, copied */
    unsigned char gone;
    int64_t peek_ns;
} srv_active;

typedef struct srv_streamer {
    const srv_worker *wk;
    cg_s2s_stream *st; /* NULL: none open */
    srv_tr_req opts;   /* the open stream's options (opt only) */
    srv_active *act;   /* [cap] */
    int cap;           /* --max-batch: sentences decoding at once, and jobs */
    int32_t vocab;     /* source vocabulary (ids are checked on arrival) */
} srv_streamer;

/* Answers a slot's job (its answer set) and frees the slot. */
static void srv_release(srv_active *a) {
    srv_job *j = a->job;
    for (int i = 0; a->res && i < j->tr.n; i++) cg_s2s_result_clear(&a->res[i]);
    free(a->res);
    memset(a, 0, sizeof *a);
    j->done(j); /* the job is the caller's from here */
}

static void srv_sentence_done(int tag, const cg_s2s_result *r, void *user) {
    srv_streamer *z = user;
    srv_active *a = &z->act[tag / SRV_TAG_SENTS];
    a->running--;
    if (a->gone) return; /* failed already: answered */
    if (cg_s2s_result_copy(&a->res[tag % SRV_TAG_SENTS], r)) {
        char msg[1024];
        snprintf(msg, sizeof msg, "model '%s': %s", z->wk->m->name, cg_last_error());
        srv_job_fail(a->job, 500, msg);
        a->gone = SRV_LEFT_FAILED; /* its other sentences leave, then it is released */
        return;
    }
    if (++a->ended < a->job->tr.n) return;
    srv_tr_answer(z->wk, a->job, a->res);
    srv_release(a);
}

/* 0 once the job's client has left (its socket looked at every
 * SRV_PEEK_NS) or its deadline has passed: the sentence leaves the
 * decode. */
static int srv_sentence_keep(int tag, void *user) {
    srv_streamer *z = user;
    srv_active *a = &z->act[tag / SRV_TAG_SENTS];
    a->gone = (unsigned char)srv_job_left(a->job, a->gone, &a->peek_ns);
    if (a->gone) a->running--;
    return !a->gone;
}

static int srv_active_jobs(const srv_streamer *z) {
    int n = 0;
    for (int i = 0; i < z->cap; i++) n += z->act[i].job != NULL;
    return n;
}

/* Sentences of taken jobs not given to the stream yet. */
static int srv_unadded(const srv_streamer *z) {
    int n = 0;
    for (int i = 0; i < z->cap; i++)
        if (z->act[i].job && !z->act[i].gone) n += z->act[i].job->tr.n - z->act[i].added;
    return n;
}

/* Moves queued jobs into got (FIFO, while the first queued has the
 * stream's options and there is room). Idle, it waits for a job, whose
 * options the stream then takes. -1 when the model stops and nothing is
 * left. */
static int srv_take_jobs(srv_streamer *z, srv_job **got, int busy, int room_jobs, int room_sents) {
    srv_model *m = z->wk->m;
    pthread_mutex_lock(&m->lock);
    while (!busy && !m->head && !m->stopping) pthread_cond_wait(&m->cond, &m->lock);
    if (!busy && !m->head) {
        pthread_mutex_unlock(&m->lock);
        return -1;
    }
    if (!busy) z->opts.opt = m->head->tr.opt;
    int n = 0;
    while (m->head && n < room_jobs && room_sents > 0 && srv_tr_compatible(&z->opts, &m->head->tr)) {
        srv_job *j = m->head;
        m->head = j->next;
        if (!m->head) m->tail = NULL;
        m->depth--;
        got[n++] = j;
        room_sents -= j->tr.n;
    }
    pthread_mutex_unlock(&m->lock);
    return n;
}

/* A job's ids checked as the stream will (so that it fails alone); 0, or
 * the job is answered 400. */
static int srv_check_ids(const srv_streamer *z, srv_job *j) {
    for (int i = 0; i < j->tr.n; i++)
        for (int k = 0; k < j->tr.len[i]; k++)
            if (j->tr.ids[i][k] < 0 || j->tr.ids[i][k] >= z->vocab) {
                char msg[256];
                snprintf(msg, sizeof msg,
                         "model '%s': translate: source %d: token id %d at position %d is outside the source "
                         "vocabulary (%d tokens)",
                         z->wk->m->name, i, j->tr.ids[i][k], k, (int)z->vocab);
                srv_job_fail(j, 400, msg);
                return -1;
            }
    return 0;
}

/* A taken job into a free slot, or answered at once (its deadline passed,
 * its client left, its text or ids are bad). */
static void srv_admit(srv_streamer *z, srv_job *j, double *waits, int *n_waits) {
    const int64_t now = srv_now_ns();
    if (!srv_job_stale(j, now) && !srv_tr_tokenize(z->wk, j) && !srv_check_ids(z, j)) {
        int s = 0;
        while (z->act[s].job) s++;
        srv_active *a = &z->act[s];
        a->res = calloc((size_t)j->tr.n + 1, sizeof *a->res);
        if (a->res) {
            a->job = j;
            a->peek_ns = now + SRV_PEEK_NS;
            waits[(*n_waits)++] = (double)(now - j->enq_ns) * 1e-9;
            return;
        }
        srv_job_fail(j, 500, "out of memory");
    }
    j->done(j);
}

/* Gives the stream the sentences of taken jobs it has room for, in the
 * order the jobs came; returns how many. */
static int srv_feed(srv_streamer *z, int *tags) {
    int rows = 0;
    for (int s = 0; s < z->cap; s++) {
        srv_active *a = &z->act[s];
        const int room = cg_s2s_stream_room(z->st);
        if (room <= 0) break;
        if (!a->job || a->gone || a->added == a->job->tr.n) continue;
        const int k = a->job->tr.n - a->added < room ? a->job->tr.n - a->added : room;
        for (int q = 0; q < k; q++) tags[q] = s * SRV_TAG_SENTS + a->added + q;
        const srv_tr_req *r = &a->job->tr;
        if (cg_s2s_stream_add(z->st, k, (const int32_t *const *)r->ids + a->added, r->len + a->added, tags)) {
            char msg[1024];
            snprintf(msg, sizeof msg, "model '%s': %s", z->wk->m->name, cg_last_error());
            srv_job_fail(a->job, 500, msg);
            a->gone = SRV_LEFT_FAILED; /* answered: its running sentences leave, then it is released */
            continue;
        }
        a->added += k;
        a->running += k;
        rows += k;
    }
    return rows;
}

/* Jobs whose client left, whose deadline passed or that failed, and
 * whose sentences have all left the decode: answered 499, 504 (or as
 * failed) now. */
static void srv_sweep(srv_streamer *z) {
    for (int s = 0; s < z->cap; s++) {
        srv_active *a = &z->act[s];
        if (!a->job || !a->gone || a->running) continue;
        if (a->gone != SRV_LEFT_FAILED) srv_job_left_answer(a->job, a->gone);
        srv_release(a);
    }
}

/* A failed step: every taken job answered with the library's error; the
 * stream is closed (the next job opens another). */
static void srv_stream_failed(srv_streamer *z) {
    char msg[1024];
    snprintf(msg, sizeof msg, "model '%s': %s", z->wk->m->name, cg_last_error());
    for (int s = 0; s < z->cap; s++)
        if (z->act[s].job) {
            if (z->act[s].gone != SRV_LEFT_FAILED) srv_job_fail(z->act[s].job, 500, msg);
            srv_release(&z->act[s]);
        }
    cg_s2s_stream_free(z->st);
    z->st = NULL;
}

/* The stream for z->opts (idle): reopened when the options changed. */
static int srv_stream_ready(srv_streamer *z, srv_tr_req *open_opts) {
    if (z->st && srv_tr_compatible(open_opts, &z->opts)) return 0;
    cg_s2s_stream_free(z->st);
    z->st = NULL;
    cg_s2s_options o = z->opts.opt;
    o.done = srv_sentence_done;
    o.keep = srv_sentence_keep;
    o.user = z;
    if (cg_s2s_stream_open(z->wk->s2s, &o, z->cap, &z->st)) return -1;
    open_opts->opt = z->opts.opt;
    return 0;
}

/* One turn: jobs taken and admitted, sentences fed, one step. 0, or -1
 * when the model stops with nothing left. */
static int srv_turn(srv_streamer *z, srv_tr_req *open_opts, srv_job **got, double *waits, int *tags) {
    const int busy = (z->st && cg_s2s_stream_pending(z->st)) || srv_active_jobs(z) > 0;
    const int room = z->st && busy ? cg_s2s_stream_room(z->st) - srv_unadded(z) : z->cap;
    const int n = srv_take_jobs(z, got, busy, z->cap - srv_active_jobs(z), room);
    if (n < 0) return -1;
    if (!busy && n && srv_stream_ready(z, open_opts)) {
        srv_stream_failed(z);
        for (int i = 0; i < n; i++) {
            srv_job_fail(got[i], 500, cg_last_error());
            got[i]->done(got[i]);
        }
        return 0;
    }
    int n_waits = 0;
    for (int i = 0; i < n; i++) srv_admit(z, got[i], waits, &n_waits);
    if (!z->st) return 0;
    const int rows = srv_feed(z, tags);
    srv_model *m = z->wk->m;
    if (cg_s2s_stream_pending(z->st)) {
        const int64_t t0 = srv_now_ns();
        const cg_status st = cg_s2s_stream_step(z->st);
        const double dt = (double)(srv_now_ns() - t0) * 1e-9;
        if (rows) srv_metrics_batch(m->metrics, m->index, rows, n_waits, dt, waits);
        else srv_metrics_busy(m->metrics, m->index, dt);
        if (st) srv_stream_failed(z);
    }
    srv_sweep(z);
    return 0;
}

void srv_stream_work(const srv_worker *wk) {
    srv_model *m = wk->m;
    srv_streamer z = {.wk = wk};
    z.cap = m->cfg.max_batch < 1 ? 1 : m->cfg.max_batch > 100000 ? 100000 : (int)m->cfg.max_batch;
    cg_s2s_info info = {.struct_size = sizeof info};
    cg_s2s_get_info(wk->s2s, &info);
    z.vocab = info.src_vocab;
    z.act = calloc((size_t)z.cap, sizeof *z.act);
    srv_job **got = calloc((size_t)z.cap, sizeof *got);
    double *waits = calloc((size_t)z.cap, sizeof *waits);
    int *tags = calloc((size_t)z.cap, sizeof *tags);
    srv_tr_req open_opts = {0};
    if (z.act && got && waits && tags)
        while (!srv_turn(&z, &open_opts, got, waits, tags)) {
        }
    cg_s2s_stream_free(z.st);
    free(z.act);
    free(got);
    free(waits);
    free(tags);
}
