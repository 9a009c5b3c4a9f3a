#include "srv_forecast.h"

#include "fc_csv.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRV_FC_FAIL(...) (snprintf(err, errsz, __VA_ARGS__), 400)

void srv_fc_req_clear(srv_fc_req *req) {
    if (req->csv) {
        fc_csv_free(req->csv);
        free(req->csv);
        free(req->values); /* the rows are the CSV's */
        req->values = NULL;
    }
    for (int i = 0; req->values && i < req->n; i++) free(req->values[i]);
    free(req->values);
    free(req->length);
    free(req->id);
    memset(req, 0, sizeof *req);
}

/* One series: an array of steps, each an array of C finite numbers (a
 * number alone when C is 1). */
static int srv_fc_series(const cJSON *s, int i, int C, srv_fc_req *req, int64_t *steps, char *err, size_t errsz) {
    if (cJSON_IsObject(s)) s = cJSON_GetObjectItemCaseSensitive(s, "values");
    const int T = cJSON_IsArray(s) ? cJSON_GetArraySize(s) : 0;
    if (T < 1) return SRV_FC_FAIL("series[%d] is not a non-empty array of steps", i);
    *steps += T;
    if (*steps > SRV_FC_MAX_STEPS) return SRV_FC_FAIL("more than %d steps of history in one request", SRV_FC_MAX_STEPS);
    double *v = malloc(sizeof *v * (size_t)T * (size_t)C);
    if (!v) return SRV_FC_FAIL("out of memory");
    req->values[i] = v;
    req->length[i] = T;
    int t = 0;
    for (const cJSON *row = s->child; row; row = row->next, t++) {
        const int one = C == 1 && cJSON_IsNumber(row);
        if (!one && (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != C))
            return SRV_FC_FAIL("series[%d][%d] is not an array of the model's %d values", i, t, C);
        int k = 0;
        for (const cJSON *x = one ? row : row->child; x && k < C; x = x->next, k++) {
            if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
                return SRV_FC_FAIL("series[%d][%d][%d] is not a finite number", i, t, k);
            v[(size_t)t * (size_t)C + (size_t)k] = x->valuedouble;
        }
    }
    return 0;
}

static int srv_fc_fields(const cJSON *root, int C, srv_fc_req *req, char *err, size_t errsz) {
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(root, "horizon");
    if (!cJSON_IsNumber(h) || h->valuedouble != floor(h->valuedouble) || h->valuedouble < 1 ||
        h->valuedouble > SRV_FC_MAX_HORIZON)
        return SRV_FC_FAIL("\"horizon\" takes an integer in [1, %d]", SRV_FC_MAX_HORIZON);
    req->horizon = (int)h->valuedouble;
    int rc = srv_json_bool(root, "attention", &req->attention, err, errsz);
    if (!rc) rc = srv_json_timeout(root, "\"timeout\"", &req->timeout_us, err, errsz);
    if (!rc) rc = srv_json_id(root, &req->id, err, errsz);
    if (rc) return rc;
    const cJSON *ser = cJSON_GetObjectItemCaseSensitive(root, "series");
    const int n = cJSON_IsArray(ser) ? cJSON_GetArraySize(ser) : 0;
    if (n < 1) return SRV_FC_FAIL("\"series\" is not a non-empty array");
    if (n > SRV_FC_MAX_SERIES) return SRV_FC_FAIL("more than %d series in one request", SRV_FC_MAX_SERIES);
    req->values = calloc((size_t)n, sizeof *req->values);
    req->length = calloc((size_t)n, sizeof *req->length);
    if (!req->values || !req->length) return SRV_FC_FAIL("out of memory");
    req->n = n;
    int64_t steps = 0;
    int i = 0;
    for (const cJSON *s = ser->child; s; s = s->next, i++)
        if ((rc = srv_fc_series(s, i, C, req, &steps, err, errsz))) return rc;
    return 0;
}

int srv_fc_parse(const char *body, size_t len, const srv_limits *lim, int C, srv_fc_req *req, char *err, size_t errsz) {
    memset(req, 0, sizeof *req);
    size_t jlen;
    cJSON *root = srv_json_parse(body, len, -1, lim->max_depth, &jlen, err, errsz);
    if (!root) return 400;
    int rc = cJSON_IsObject(root) ? srv_fc_fields(root, C, req, err, errsz)
                                  : SRV_FC_FAIL("the request is not a JSON object");
    cJSON_Delete(root);
    if (rc) srv_fc_req_clear(req);
    return rc;
}

int srv_fc_parse_csv(const char *body, size_t len, const char *horizon, const cg_forecaster *m, srv_fc_req *req,
                     char *err, size_t errsz) {
    memset(req, 0, sizeof *req);
    char *end = NULL;
    long h = horizon ? strtol(horizon, &end, 10) : 0;
    if (!horizon || !*horizon || *end || h < 1 || h > SRV_FC_MAX_HORIZON)
        return SRV_FC_FAIL("a CSV request needs ?horizon=N in the URL, N in [1, %d]", SRV_FC_MAX_HORIZON);
    req->horizon = (int)h;
    const int C = cg_forecast_channels(m);
    const char *cols[256];
    for (int k = 0; k < C && k < 256; k++) cols[k] = cg_forecast_column(m, k);
    FILE *f = len ? fmemopen((void *)body, len, "r") : fmemopen((void *)"", 1, "r");
    req->csv = calloc(1, sizeof *req->csv);
    if (!f || !req->csv) {
        if (f) fclose(f);
        srv_fc_req_clear(req);
        return SRV_FC_FAIL("out of memory");
    }
    char why[1024];
    int bad = fc_csv_read(f, cols, C, 0, req->csv, why, sizeof why);
    fclose(f);
    if (!bad && req->csv->n_series > SRV_FC_MAX_SERIES) {
        snprintf(why, sizeof why, "more than %d series in one request", SRV_FC_MAX_SERIES);
        bad = 1;
    }
    if (bad || req->csv->n_series < 1) {
        snprintf(err, errsz, "the CSV: %s", bad ? why : "no rows");
        srv_fc_req_clear(req);
        return 400;
    }
    /* the series' rows stay in the CSV (its n x C values) */
    req->n = req->csv->n_series;
    req->values = calloc((size_t)req->n, sizeof *req->values);
    req->length = calloc((size_t)req->n, sizeof *req->length);
    if (!req->values || !req->length) {
        srv_fc_req_clear(req);
        return SRV_FC_FAIL("out of memory");
    }
    for (int i = 0; i < req->n; i++) {
        const fc_csv_series *ser = &req->csv->series[i];
        int fit = 0;
        if (req->csv->time_col >= 0 && fc_next_times(ser->times[0], ser->times[1], req->horizon, NULL, &fit)) {
            snprintf(err, errsz,
                     "horizon %d: the time column of the series from line %d would pass what it can "
                     "hold; at most %d steps fit",
                     req->horizon, ser->first_line, fit);
            srv_fc_req_clear(req);
            return 400;
        }
        req->values[i] = ser->values;
        req->length[i] = ser->n;
    }
    return 0;
}

static void srv_fc_attention(const cg_forecast_result *r, srv_buf *b) {
    srv_buf_puts(b, ",\"attention\":[");
    for (int j = 0; j < r->horizon; j++) {
        srv_buf_printf(b, "%s{\"first\":%d,\"weights\":[", j ? "," : "", r->att_first[j]);
        for (int k = 0; k < r->att_count[j]; k++)
            srv_buf_printf(b, "%s%.6g", k ? "," : "", (double)r->attention[(size_t)j * (size_t)r->window + (size_t)k]);
        srv_buf_puts(b, "]}");
    }
    srv_buf_puts(b, "]");
}

/* The CSV answer: fc_csv_write into memory. */
static int srv_fc_csv_response(const srv_fc_req *req, const cg_forecast_result *res, srv_buf *b) {
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f) return -1;
    int rc = fc_csv_write(f, req->csv, res, req->horizon);
    fclose(f);
    if (!rc) srv_buf_add(b, text, n);
    free(text);
    return rc || b->failed ? -1 : 0;
}

int srv_fc_response(const char *model, const cg_forecaster *m, const srv_fc_req *req, const cg_forecast_result *res,
                    srv_buf *b) {
    if (req->csv) return srv_fc_csv_response(req, res, b);
    srv_response_head(b, model, 0, req->id);
    srv_buf_puts(b, ",\"columns\":[");
    for (int k = 0; k < cg_forecast_channels(m); k++) {
        if (k) srv_buf_puts(b, ",");
        srv_buf_json_str(b, cg_forecast_column(m, k));
    }
    srv_buf_puts(b, "],\"forecasts\":[");
    for (int i = 0; i < req->n; i++) {
        const cg_forecast_result *r = &res[i];
        srv_buf_puts(b, i ? ",{\"values\":[" : "{\"values\":[");
        for (int j = 0; j < r->horizon; j++) {
            srv_buf_puts(b, j ? ",[" : "[");
            for (int k = 0; k < r->channels; k++)
                srv_buf_printf(b, "%s%.17g", k ? "," : "", r->values[(size_t)j * (size_t)r->channels + (size_t)k]);
            srv_buf_puts(b, "]");
        }
        srv_buf_puts(b, "]");
        if (r->attention) srv_fc_attention(r, b);
        srv_buf_puts(b, "}");
    }
    srv_buf_puts(b, "]}");
    return b->failed ? -1 : 0;
}
