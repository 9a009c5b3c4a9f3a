/* The forecast endpoint, POST /v2/models/NAME/forecast, of a forecasting
 * model directory (clgraph/forecast.h): series histories in as JSON,
 * forecasts (and attention) out. Requests with the same horizon and
 * attention flag are forecast together. */
#ifndef CG_SERVE_SRV_FORECAST_H
#define CG_SERVE_SRV_FORECAST_H

#include <stddef.h>
#include <stdint.h>

#include "clgraph/forecast.h"
#include "srv_oip.h"

/* Limits of one request. */
#define SRV_FC_MAX_HORIZON 100000
#define SRV_FC_MAX_STEPS 1000000
#define SRV_FC_MAX_SERIES 10000

typedef struct srv_fc_req {
    int n;           /* series */
    double **values; /* n histories, length[i] x C */
    int *length;
    int horizon, attention;
    int64_t timeout_us;
    char *id;
    struct fc_csv *csv; /* the request was CSV: the answer is too */
} srv_fc_req;

/* Parses {"series": [[[v, ...] per step] per series] or [{"values": ...}],
 * "horizon": N, "attention": bool, "id", "timeout"} for a model of C
 * channels. 0, or 400 with one line in err (req cleared). */
int srv_fc_parse(const char *body, size_t len, const srv_limits *lim, int C, srv_fc_req *req, char *err, size_t errsz);

/* Parses a CSV body as `clgraph forecast` reads its stdin (a header of the
 * model's columns, optionally `time` first and `series`), with `horizon`
 * the URL's ?horizon=N. 0, or 400 with "LINE:COL: what" (req cleared). */
int srv_fc_parse_csv(const char *body, size_t len, const char *horizon, const cg_forecaster *m, srv_fc_req *req,
                     char *err, size_t errsz);

void srv_fc_req_clear(srv_fc_req *req);

/* {"model_name", "id"?, "columns": [...], "forecasts": [{"values": [[...]
 * per step], "attention"?: [{"first": i, "weights": [...]} per step]}]};
 * for a CSV request the CSV `clgraph forecast` writes. 0 or -1. */
int srv_fc_response(const char *model, const cg_forecaster *m, const srv_fc_req *req, const cg_forecast_result *res,
                    srv_buf *b);

#endif
