/* Forecasting: series sorted by length into batches; each batch runs graph
 * step once per time step, every row of the batch at the same step t. A
 * row reads its history while t <= its length T and its own previous
 * prediction after, and its forecast is the outputs of steps T .. T+N-1; a
 * row whose forecast is complete runs on with the others (its results are
 * kept), so rows never move and nothing depends on the batch. The state and
 * the window of previous states are carried by the plan (cg_plan_carry):
 * per step only x and count go in and y (and a, when asked) come out. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fc_internal.h"

#define FC_DEFAULT_BATCH 64

typedef struct fbatch {
    cg_forecaster *m;
    const cg_forecast_options *o;
    const cg_forecast_series *series;
    cg_forecast_result *res;
    const int *ids;
    int nb, steps;
    cg_tensor *x, *count, *y, *a;
    int n_states;
    char **state_names;
    cg_tensor **zero;   /* the states of step 0, one tensor each */
    const char **names; /* x, count, then the states */
    cg_tensor **ins;
    cg_tensor **outs; /* graph output order: y, a or NULL */
} fbatch;

static cg_status tensor(cg_dtype dt, int nd, int64_t d0, int64_t d1, int64_t d2, cg_tensor **out) {
    int64_t dims[3] = {d0, d1, d2};
    cg_status st = cg_tensor_create(dt, nd, dims, out);
    if (!st) memset(cg_tensor_data(*out), 0, (size_t)cg_tensor_numel(*out) * 4);
    return st;
}

static void batch_free(fbatch *b) {
    cg_tensor_free(b->x);
    cg_tensor_free(b->count);
    cg_tensor_free(b->y);
    cg_tensor_free(b->a);
    for (int i = 0; b->zero && i < b->n_states; i++) cg_tensor_free(b->zero[i]);
    for (int i = 0; b->state_names && i < b->n_states; i++) free(b->state_names[i]);
    free(b->state_names);
    free(b->zero);
    free(b->names);
    free(b->ins);
    free(b->outs);
}

/* The tensors of a batch of nb rows, and the name lists of its runs. */
static cg_status batch_open(fbatch *b) {
    const fc_config *c = &b->m->cfg;
    int att = c->attention != FC_NONE;
    cg_status st = cg_fc_state_names(c, &b->state_names, &b->n_states);
    if (st) return st;
    b->zero = calloc((size_t)b->n_states + 1, sizeof *b->zero);
    b->names = calloc((size_t)b->n_states + 2, sizeof *b->names);
    b->ins = calloc((size_t)b->n_states + 2, sizeof *b->ins);
    cg_graph *g = cg_model_graph(b->m->model, "step");
    int n_out = cg_graph_output_count(g);
    b->outs = calloc((size_t)n_out + 1, sizeof *b->outs);
    if (!b->zero || !b->names || !b->ins || !b->outs) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    st = tensor(CG_F32, 2, b->nb, c->C, 0, &b->x);
    if (!st) st = tensor(CG_F32, 2, b->nb, c->C, 0, &b->y);
    if (!st && att) st = tensor(CG_I32, 1, b->nb, 0, 0, &b->count);
    if (!st && att && b->o->attention) st = tensor(CG_F32, 2, b->nb, c->window, 0, &b->a);
    for (int i = 0; !st && i < b->n_states; i++) {
        const char *nm = b->state_names[i];
        if (!strcmp(nm, "ring")) st = tensor(CG_F32, 3, b->nb, c->window, c->hidden, &b->zero[i]);
        else if (!strcmp(nm, "ring_proj")) st = tensor(CG_F32, 3, b->nb, c->window, c->attention_dim, &b->zero[i]);
        else st = tensor(CG_F32, 2, b->nb, c->hidden, 0, &b->zero[i]);
    }
    if (st) return st;
    int k = 0;
    b->names[k] = "x", b->ins[k++] = b->x;
    if (att) b->names[k] = "count", b->ins[k++] = b->count;
    for (int i = 0; i < b->n_states; i++) b->names[k] = b->state_names[i], b->ins[k++] = b->zero[i];
    for (int i = 0; i < n_out; i++) {
        const char *nm = cg_graph_output_name(g, i);
        b->outs[i] = !strcmp(nm, "y") ? b->y : !strcmp(nm, "a") ? b->a : NULL;
    }
    return CG_OK;
}

static int len_of(const fbatch *b, int r) { return b->series[b->ids[r]].length; }

/* x for step t (1-based): the history while t <= T, else the prediction
 * of step t - 1, still in y. */
static void fill_inputs(fbatch *b, int t) {
    const fc_config *c = &b->m->cfg;
    float *x = cg_tensor_data(b->x);
    const float *y = cg_tensor_data_const(b->y);
    for (int r = 0; r < b->nb; r++) {
        const cg_forecast_series *s = &b->series[b->ids[r]];
        float *xr = x + (size_t)r * c->C;
        if (t <= s->length) {
            const double *raw = s->values + (size_t)(t - 1) * c->C;
            for (int k = 0; k < c->C; k++) xr[k] = (float)((raw[k] - c->mean[k]) / c->std[k]);
        } else {
            memcpy(xr, y + (size_t)r * c->C, sizeof *xr * (size_t)c->C);
        }
    }
    if (b->count) {
        int n = t - 2 < 0 ? 0 : t - 2;
        if (n > c->window) n = c->window;
        int32_t *cnt = cg_tensor_data(b->count);
        for (int r = 0; r < b->nb; r++) cnt[r] = n;
    }
}

/* After step t: the rows whose forecast value j = t - T is this step's. */
static void collect(fbatch *b, int t) {
    const fc_config *c = &b->m->cfg;
    const float *y = cg_tensor_data_const(b->y);
    const float *a = b->a ? cg_tensor_data_const(b->a) : NULL;
    int n = t - 2 < 0 ? 0 : t - 2;
    if (n > c->window) n = c->window;
    for (int r = 0; r < b->nb; r++) {
        int j = t - len_of(b, r);
        if (j < 0 || j >= b->o->horizon) continue;
        cg_forecast_result *res = &b->res[b->ids[r]];
        for (int k = 0; k < c->C; k++)
            res->values[(size_t)j * c->C + k] = (double)y[(size_t)r * c->C + k] * c->std[k] + c->mean[k];
        if (!a) continue;
        /* a is newest first: a[k] weighs h_{t-2-k}; rows are chronological. */
        float *row = res->attention + (size_t)j * c->window;
        const float *ar = a + (size_t)r * c->window;
        for (int k = 0; k < n; k++) row[k] = ar[n - 1 - k];
        res->att_first[j] = t - 1 - n;
        res->att_count[j] = n;
    }
}

static cg_status run_batch(fbatch *b) {
    cg_status st = batch_open(b);
    int n_first = 1 + (b->count != NULL) + b->n_states, n_next = 1 + (b->count != NULL);
    cg_graph *g = cg_model_graph(b->m->model, "step");
    int n_out = cg_graph_output_count(g);
    for (int t = 1; !st && t <= b->steps; t++) {
        fill_inputs(b, t);
        st = cg_plan_run_into(b->m->plan, t == 1 ? n_first : n_next, b->names, b->ins, n_out, b->outs);
        if (!st) collect(b, t);
    }
    batch_free(b);
    return st;
}

void cg_forecast_result_clear(cg_forecast_result *r) {
    if (!r) return;
    free(r->values);
    free(r->attention);
    free(r->att_first);
    free(r->att_count);
    memset(r, 0, sizeof *r);
}

static cg_status result_alloc(const fc_config *c, const cg_forecast_options *o, cg_forecast_result *r) {
    memset(r, 0, sizeof *r);
    r->horizon = o->horizon;
    r->channels = c->C;
    r->window = c->attention != FC_NONE ? c->window : 0;
    r->values = calloc((size_t)o->horizon * (size_t)c->C, sizeof *r->values);
    int ok = r->values != NULL;
    if (ok && o->attention && r->window) {
        r->attention = calloc((size_t)o->horizon * (size_t)r->window, sizeof *r->attention);
        r->att_first = calloc((size_t)o->horizon, sizeof *r->att_first);
        r->att_count = calloc((size_t)o->horizon, sizeof *r->att_count);
        ok = r->attention && r->att_first && r->att_count;
    } else if (ok && o->attention) {
        /* no attention: every row empty */
        r->att_first = calloc((size_t)o->horizon, sizeof *r->att_first);
        r->att_count = calloc((size_t)o->horizon, sizeof *r->att_count);
        ok = r->att_first && r->att_count;
    }
    if (!ok) {
        cg_forecast_result_clear(r);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory for a forecast of %d steps", o->horizon);
    }
    return CG_OK;
}

typedef struct by_len {
    int length, index;
} by_len;

/* Longest first, then input order. */
static int by_length(const void *pa, const void *pb) {
    const by_len *x = pa, *y = pb;
    if (x->length != y->length) return x->length < y->length ? 1 : -1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static cg_status check_series(const fc_config *c, int n, const cg_forecast_series *s) {
    for (int i = 0; i < n; i++) {
        if (s[i].length < 1 || !s[i].values)
            return cg_error(CG_ERR_INVALID_ARGUMENT, "forecast: series %d has no history (length %d)", i, s[i].length);
        if (s[i].length > (1 << 30))
            return cg_error(CG_ERR_INVALID_ARGUMENT, "forecast: series %d is longer than 2^30 steps", i);
        for (size_t k = 0; k < (size_t)s[i].length * (size_t)c->C; k++)
            if (!isfinite(s[i].values[k]))
                return cg_error(CG_ERR_INVALID_ARGUMENT,
                                "forecast: series %d, step %zu, channel '%s': %g is not finite", i,
                                k / (size_t)c->C + 1, c->columns[k % (size_t)c->C], s[i].values[k]);
    }
    return CG_OK;
}

cg_status cg_forecast_run(cg_forecaster *m, const cg_forecast_options *opt, int n, const cg_forecast_series *series,
                          cg_forecast_result *results, cg_forecast_progress_fn progress, void *user) {
    if (!m || !opt || n < 0 || (n && (!series || !results)))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_forecast_run: NULL argument");
    if (opt->struct_size < offsetof(cg_forecast_options, attention) + sizeof opt->attention)
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "cg_forecast_options.struct_size is %zu; set it to sizeof(cg_forecast_options)",
                        opt->struct_size);
    cg_forecast_options o = *opt;
    if (o.horizon < 1 || o.horizon > (1 << 24))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "forecast: horizon must be in [1, %d], got %d", 1 << 24, o.horizon);
    if (o.batch < 0) return cg_error(CG_ERR_INVALID_ARGUMENT, "forecast: batch must not be negative, got %d", o.batch);
    if (!o.batch) o.batch = FC_DEFAULT_BATCH;
    cg_status st = check_series(&m->cfg, n, series);
    if (st) return st;
    for (int i = 0; i < n; i++) memset(&results[i], 0, sizeof results[i]);
    by_len *order = malloc(sizeof *order * (size_t)n + 1);
    int *ids = malloc(sizeof *ids * (size_t)n + 1);
    if (!order || !ids) st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; !st && i < n; i++) {
        order[i].length = series[i].length, order[i].index = i;
        st = result_alloc(&m->cfg, &o, &results[i]);
    }
    if (!st) {
        qsort(order, (size_t)n, sizeof *order, by_length);
        for (int i = 0; i < n; i++) ids[i] = order[i].index;
    }
    for (int done = 0; !st && done < n; done += o.batch) {
        fbatch b;
        memset(&b, 0, sizeof b);
        b.m = m, b.o = &o, b.series = series, b.res = results, b.ids = ids + done;
        b.nb = n - done < o.batch ? n - done : o.batch;
        b.steps = series[ids[done]].length + o.horizon - 1; /* the longest comes first */
        st = run_batch(&b);
        if (!st && progress) progress(done + b.nb, n, user);
    }
    free(order);
    free(ids);
    if (st)
        for (int i = 0; i < n; i++) cg_forecast_result_clear(&results[i]);
    return st;
}
