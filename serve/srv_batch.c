/* Running a batch the queue (srv_queue.c) gathered: a graph's jobs joined
 * along dimension 0 (the same dims after it), the plan run once and each
 * job given its rows of every output; a translation's or a forecast's jobs
 * through one cg_s2s_translate or cg_forecast_run. The kernels do not mix
 * rows, so a row's result is the same bits in any batch (the CLI's
 * outputs: tests/serve). A batch that fails runs again job by job, so that
 * a bad request fails alone. */
#include "srv_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void srv_job_fail(srv_job *j, int status, const char *msg) {
    j->status = status;
    j->type = NULL;
    j->json_len = 0;
    srv_buf_free(&j->body);
    srv_error_json(&j->body, msg);
}

/* A failed run: the caller's fault (shapes that do not fit the graph)
 * or the server's. */
static int srv_run_status(cg_status st) {
    return st == CG_ERR_INVALID_ARGUMENT || st == CG_ERR_VERIFY || st == CG_ERR_NOT_FOUND ? 400 : 500;
}

static void srv_answer(srv_model *m, srv_job *j, cg_tensor *const *out) {
    if (srv_infer_response(m->name, &m->io, &j->req, out, &j->body, &j->json_len)) {
        srv_job_fail(j, 500, "out of memory writing the response");
        return;
    }
    j->status = 200;
}

static void srv_run_one(const srv_worker *wk, srv_job *j) {
    srv_model *m = wk->m;
    const char *names[SRV_MAX_IO];
    cg_tensor *out[SRV_MAX_IO] = {0};
    for (int i = 0; i < m->io.n_in; i++) names[i] = m->io.in[i].name;
    cg_status st = cg_plan_run(wk->plan, m->io.n_in, names, j->req.in, m->io.n_out, out);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "model '%s': %s", m->name, cg_last_error());
        srv_job_fail(j, srv_run_status(st), msg);
    } else {
        srv_answer(m, j, out);
    }
    for (int k = 0; k < m->io.n_out; k++) cg_tensor_free(out[k]);
}

/* Input k of every job, one after another along dimension 0. */
static cg_tensor *srv_concat(srv_job **jobs, int n, int k, int64_t rows) {
    const cg_tensor *t0 = jobs[0]->req.in[k];
    int64_t dims[CG_MAX_DIMS];
    const int nd = cg_tensor_ndim(t0);
    for (int d = 0; d < nd; d++) dims[d] = cg_tensor_dim(t0, d);
    dims[0] = rows;
    cg_tensor *t = NULL;
    if (cg_tensor_create(cg_tensor_dtype(t0), nd, dims, &t)) return NULL;
    char *dst = cg_tensor_data(t);
    const size_t es = cg_dtype_size(cg_tensor_dtype(t0));
    for (int i = 0; i < n; i++) {
        const size_t bytes = (size_t)cg_tensor_numel(jobs[i]->req.in[k]) * es;
        memcpy(dst, cg_tensor_data_const(jobs[i]->req.in[k]), bytes);
        dst += bytes;
    }
    return t;
}

/* Rows [r0, r0 + rows) of t. */
static cg_tensor *srv_slice(const cg_tensor *t, int64_t r0, int64_t rows) {
    int64_t dims[CG_MAX_DIMS];
    const int nd = cg_tensor_ndim(t);
    for (int d = 0; d < nd; d++) dims[d] = cg_tensor_dim(t, d);
    const size_t row = dims[0] ? (size_t)(cg_tensor_numel(t) / dims[0]) * cg_dtype_size(cg_tensor_dtype(t)) : 0;
    dims[0] = rows;
    cg_tensor *s = NULL;
    if (cg_tensor_create(cg_tensor_dtype(t), nd, dims, &s)) return NULL;
    if (row) memcpy(cg_tensor_data(s), (const char *)cg_tensor_data_const(t) + (size_t)r0 * row, (size_t)rows * row);
    return s;
}

/* Gives each job its rows of out; 0, or -1 when an output's dimension 0
 * is not the batch's rows (then each job runs alone). */
static int srv_split(srv_model *m, srv_job **jobs, int n, int64_t rows, cg_tensor *const *out) {
    for (int k = 0; k < m->io.n_out; k++)
        if (cg_tensor_ndim(out[k]) < 1 || cg_tensor_dim(out[k], 0) != rows) return -1;
    int64_t r0 = 0;
    for (int i = 0; i < n; i++) {
        cg_tensor *mine[SRV_MAX_IO] = {0};
        int ok = 1;
        for (int k = 0; k < m->io.n_out && ok; k++) ok = (mine[k] = srv_slice(out[k], r0, jobs[i]->rows)) != NULL;
        if (ok) srv_answer(m, jobs[i], mine);
        else srv_job_fail(jobs[i], 500, "out of memory splitting the batch");
        for (int k = 0; k < m->io.n_out; k++) cg_tensor_free(mine[k]);
        r0 += jobs[i]->rows;
    }
    return 0;
}

void srv_model_run(const srv_worker *wk, srv_job **jobs, int n) {
    srv_model *m = wk->m;
    if (m->kind == SRV_TRANSLATE) {
        srv_tr_run(wk, jobs, n);
        return;
    }
    if (m->kind == SRV_FORECAST) {
        srv_fc_run(wk, jobs, n);
        return;
    }
    if (n == 1) {
        srv_run_one(wk, jobs[0]);
        return;
    }
    int64_t rows = 0;
    for (int i = 0; i < n; i++) rows += jobs[i]->rows;
    const char *names[SRV_MAX_IO];
    cg_tensor *in[SRV_MAX_IO] = {0}, *out[SRV_MAX_IO] = {0};
    int ok = 1;
    for (int k = 0; k < m->io.n_in && ok; k++) {
        names[k] = m->io.in[k].name;
        ok = (in[k] = srv_concat(jobs, n, k, rows)) != NULL;
    }
    cg_status st = ok ? cg_plan_run(wk->plan, m->io.n_in, names, in, m->io.n_out, out) : CG_ERR_NO_MEMORY;
    /* a batch that failed or cannot be split runs job by job, so that each
     * gets its own answer (a bad request fails alone) */
    if (st || srv_split(m, jobs, n, rows, out))
        for (int i = 0; i < n; i++) srv_run_one(wk, jobs[i]);
    for (int k = 0; k < SRV_MAX_IO; k++) {
        cg_tensor_free(in[k]);
        cg_tensor_free(out[k]);
    }
}

/* Text to ids, on the worker (a model handle is used by one thread at a
 * time); 0, or the job is answered 400. */
int srv_tr_tokenize(const srv_worker *wk, srv_job *j) {
    srv_tr_req *r = &j->tr;
    for (int i = 0; r->text && i < r->n; i++) {
        free(r->ids[i]);
        r->ids[i] = NULL;
        char msg[1024];
        if (cg_s2s_tokenize(wk->s2s, r->text[i], &r->ids[i], &r->len[i])) {
            snprintf(msg, sizeof msg, "sources[%d]: %s", i, cg_last_error());
            srv_job_fail(j, 400, msg);
            return -1;
        }
        if (r->len[i] > SRV_TR_MAX_TOKENS) {
            snprintf(msg, sizeof msg, "sources[%d] has %d tokens, more than the server's %d", i, r->len[i],
                     SRV_TR_MAX_TOKENS);
            srv_job_fail(j, 400, msg);
            return -1;
        }
    }
    return 0;
}

/* A translation batch: its jobs and, per job, the sentences still
 * decoding; a job is answered as soon as its last one ends. */
typedef struct srv_tr_live {
    const srv_worker *wk;
    srv_job **jobs;
    const cg_s2s_result *res;
    int *job_of;         /* [sentences]: the job of each */
    int *first;          /* [jobs]: its first sentence */
    int *left;           /* [jobs]: its sentences not done */
    unsigned char *out;  /* [jobs]: answered (and maybe freed: not to be touched) */
    unsigned char *gone; /* [jobs]: its client left: its sentences are dropped */
    int64_t *peek_ns;    /* [jobs]: when its socket is to be looked at next */
} srv_tr_live;

/* Job i's answer from its sentences' results. */
void srv_tr_answer(const srv_worker *wk, srv_job *j, const cg_s2s_result *res) {
    const char *name = wk->m->name;
    const int bad = j->tr.oip ? srv_tr_oip_response(name, wk->s2s, &j->tr, res, &j->body, &j->json_len)
                              : srv_tr_response(name, wk->s2s, &j->tr, res, &j->body);
    if (bad) srv_job_fail(j, 500, "out of memory writing the response");
    else j->status = 200;
}

/* cg_s2s_options.done: a sentence has ended; when it was its job's last,
 * the job is answered now, while longer sentences still decode. */
static void srv_tr_sentence_done(int i, const cg_s2s_result *r, void *user) {
    (void)r;
    srv_tr_live *lv = user;
    const int b = lv->job_of[i];
    if (--lv->left[b]) return;
    srv_job *j = lv->jobs[b];
    srv_tr_answer(lv->wk, j, lv->res + lv->first[b]);
    lv->out[b] = 1;
    *j->answered = 1;
    j->done(j); /* the job is the caller's from here */
}

int srv_job_left(srv_job *j, int left, int64_t *peek_ns) {
    if (left) return left;
    const int64_t now = srv_now_ns();
    if (j->deadline_ns && now > j->deadline_ns) return SRV_LEFT_TIMEOUT;
    if (!j->gone || now < *peek_ns) return 0;
    *peek_ns = now + SRV_PEEK_NS;
    return j->gone(j) ? SRV_LEFT_GONE : 0;
}

void srv_job_left_answer(srv_job *j, int left) {
    if (left == SRV_LEFT_TIMEOUT) srv_job_fail(j, 504, "the request's timeout passed while it decoded");
    else srv_job_fail(j, 499, "the client closed its connection");
}

/* cg_s2s_options.keep: 0 once the sentence's client has closed its
 * connection (looked at every SRV_PEEK_NS per job), so its rows leave the
 * decode at this step. */
static int srv_tr_sentence_keep(int i, void *user) {
    srv_tr_live *lv = user;
    const int b = lv->job_of[i];
    srv_job *j = lv->jobs[b];
    lv->gone[b] = srv_job_left(j, lv->gone[b], &lv->peek_ns[b]);
    return !lv->gone[b];
}

/* One cg_s2s_translate over the sentences of jobs[0..*n), each job answered
 * when its sentences are done; 0, or -1 with the library's error and
 * jobs[0..*n) the jobs not answered before it (the others are gone). */
static int srv_tr_batch(const srv_worker *wk, srv_job **jobs, int *pn, cg_status *st) {
    const int n = *pn;
    srv_model *m = wk->m;
    int total = 0;
    for (int i = 0; i < n; i++) total += jobs[i]->tr.n;
    const int32_t **src = malloc(sizeof *src * (size_t)total);
    int *len = malloc(sizeof *len * (size_t)total);
    cg_s2s_result *res = calloc((size_t)total, sizeof *res);
    srv_tr_live lv = {.wk = wk, .jobs = jobs, .res = res};
    lv.job_of = malloc(sizeof *lv.job_of * (size_t)total);
    lv.first = malloc(sizeof *lv.first * (size_t)n);
    lv.left = malloc(sizeof *lv.left * (size_t)n);
    lv.out = calloc((size_t)n, 1);
    lv.gone = calloc((size_t)n, 1);
    lv.peek_ns = calloc((size_t)n, sizeof *lv.peek_ns);
    *st = src && len && res && lv.job_of && lv.first && lv.left && lv.out && lv.gone && lv.peek_ns ? CG_OK
                                                                                                   : CG_ERR_NO_MEMORY;
    for (int i = 0, k = 0; !*st && i < n; i++) {
        lv.first[i] = k;
        lv.left[i] = jobs[i]->tr.n;
        for (int s = 0; s < jobs[i]->tr.n; s++, k++) {
            src[k] = jobs[i]->tr.ids[s];
            len[k] = jobs[i]->tr.len[s];
            lv.job_of[k] = i;
        }
    }
    cg_s2s_options o = jobs[0]->tr.opt;
    /* decoded --max-batch sentences at a time (sorted by length): one
     * request of thousands of sentences does not make one giant batch */
    o.batch = total < m->cfg.max_batch ? total : (int)m->cfg.max_batch;
    o.done = srv_tr_sentence_done;
    o.keep = srv_tr_sentence_keep;
    o.user = &lv;
    if (!*st) *st = cg_s2s_translate(wk->s2s, &o, total, src, len, res, NULL, NULL);
    for (int i = 0; !*st && i < n; i++) /* a request of no sentences, or whose client left */
        if (lv.gone[i]) srv_job_left_answer(jobs[i], lv.gone[i]);
        else if (!lv.out[i]) srv_tr_answer(wk, jobs[i], res + lv.first[i]);
    if (*st && lv.out) {
        int w = 0;
        for (int i = 0; i < n; i++)
            if (!lv.out[i]) jobs[w++] = jobs[i];
        *pn = w;
    }
    for (int k = 0; res && k < total; k++) cg_s2s_result_clear(&res[k]);
    free(lv.job_of);
    free(lv.first);
    free(lv.left);
    free(lv.out);
    free(lv.gone);
    free(lv.peek_ns);
    free(res);
    free(len);
    free(src);
    return *st ? -1 : 0;
}

/* After a batch of jobs[0..n) failed with st: each job again through
 * `again` alone (a bad request, such as an id past the vocabulary, fails
 * alone), or the one job's answer is the library's error. */
static void srv_batch_failed(const srv_worker *wk, srv_job **jobs, int n, cg_status st,
                             void (*again)(const srv_worker *, srv_job **, int)) {
    if (n > 1) {
        for (int i = 0; i < n; i++) again(wk, &jobs[i], 1);
        return;
    }
    char msg[1024];
    snprintf(msg, sizeof msg, "model '%s': %s", wk->m->name, cg_last_error());
    srv_job_fail(jobs[0], srv_run_status(st), msg);
}

void srv_tr_run(const srv_worker *wk, srv_job **jobs, int n) {
    srv_job *ok[1024];
    int nok = 0;
    for (int i = 0; i < n && nok < 1024; i++)
        if (!srv_tr_tokenize(wk, jobs[i])) ok[nok++] = jobs[i];
    cg_status st = CG_OK;
    /* the jobs a failed batch had not answered run again */
    if (nok && srv_tr_batch(wk, ok, &nok, &st) && nok) srv_batch_failed(wk, ok, nok, st, srv_tr_run);
}

/* One cg_forecast_run over the series of jobs[0..n); 0, or -1 with the
 * library's error (nothing answered). */
static int srv_fc_batch(srv_model *m, srv_job **jobs, int n, cg_status *st) {
    /* one worker: a forecaster has no clone */
    int total = 0;
    for (int i = 0; i < n; i++) total += jobs[i]->fc.n;
    cg_forecast_series *ser = calloc((size_t)total, sizeof *ser);
    cg_forecast_result *res = calloc((size_t)total, sizeof *res);
    *st = ser && res ? CG_OK : CG_ERR_NO_MEMORY;
    for (int i = 0, k = 0; !*st && i < n; i++)
        for (int s = 0; s < jobs[i]->fc.n; s++, k++)
            ser[k] = (cg_forecast_series){jobs[i]->fc.values[s], jobs[i]->fc.length[s]};
    cg_forecast_options o = {.struct_size = sizeof o,
                             .horizon = jobs[0]->fc.horizon,
                             .batch = total < m->cfg.max_batch ? total : (int)m->cfg.max_batch,
                             .attention = jobs[0]->fc.attention};
    if (!*st) *st = cg_forecast_run(m->fc, &o, total, ser, res, NULL, NULL);
    for (int i = 0, k = 0; !*st && i < n; k += jobs[i]->fc.n, i++) {
        if (srv_fc_response(m->name, m->fc, &jobs[i]->fc, res + k, &jobs[i]->body)) {
            srv_job_fail(jobs[i], 500, "out of memory writing the response");
            continue;
        }
        jobs[i]->status = 200;
        if (jobs[i]->fc.csv) jobs[i]->type = "text/csv; charset=utf-8";
    }
    for (int k = 0; res && k < total; k++) cg_forecast_result_clear(&res[k]);
    free(res);
    free(ser);
    return *st ? -1 : 0;
}

void srv_fc_run(const srv_worker *wk, srv_job **jobs, int n) {
    cg_status st = CG_OK;
    if (srv_fc_batch(wk->m, jobs, n, &st)) srv_batch_failed(wk, jobs, n, st, srv_fc_run);
}
