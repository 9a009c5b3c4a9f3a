/* The forecaster's CSV (docs/forecast.md, "Forecasting"): reading the
 * history of one or more series with every mistake at stdin:LINE:COL, and
 * writing forecasts with the time column continued. */
#ifndef CG_TOOLS_FC_CSV_H
#define CG_TOOLS_FC_CSV_H

#include <stdio.h>

#include "clgraph/forecast.h"

/* One series: its rows in file order. */
typedef struct fc_csv_series {
    char *name;       /* the `series` column's text; NULL without one */
    int n, cap;       /* rows */
    double *values;   /* n x C, the model's channel order */
    char *times[2];   /* the last two `time` fields (NULL where none) */
    char **all_times; /* every row's `time` field, when asked for */
    int first_line;   /* the line of its first row, for messages */
} fc_csv_series;

typedef struct fc_csv {
    int n_header;
    char **header;  /* the header's fields, in file order */
    int time_col;   /* 0 when the first column is `time`, else -1 */
    int series_col; /* the `series` column, or -1 */
    int *chan_col;  /* C entries: the field holding model column k */
    int C;
    int n_series, cap_series;
    fc_csv_series *series;
    int *slots; /* series names -> index (open addressing) */
    int n_slots;
    int keep_times; /* keep every row's time (for pictures) */
} fc_csv;

/* Caps of the CSV read (docs/reliability.md, Limits): a line (a record,
 * line breaks in quotes included) and the whole input (held as doubles,
 * and with --plot each row's time too: memory is a few times the text). */
#define FC_CSV_MAX_LINE (1 << 20)
#define FC_CSV_MAX_BYTES ((size_t)1 << 26)

/* Reads a whole CSV from f against the model's columns. On a mistake
 * returns non-zero with one line in err: "LINE:COL: what" (the caller
 * prefixes the file name). With keep_times, each series' all_times holds
 * every row's `time` field (when the CSV has that column). */
int fc_csv_read(FILE *f, const char *const *columns, int C, int keep_times, fc_csv *out, char *err, size_t err_size);

void fc_csv_free(fc_csv *c);

/* The `horizon` times after a series whose last two times are t0, t1 (NULL
 * when fewer): out[k] (malloc'd strings). Integers and decimal numbers step
 * by their difference; ISO dates and date-times step by whole months when
 * day and time agree (or both are month ends), else by their exact
 * difference; otherwise "+1", "+2", .... Returns 0; -1 when memory is
 * short; 1 when the times would pass what they can hold within the horizon
 * (a date past 9999-12-31, a number past int64): *fit is then the number of
 * steps that fit and out[] is all NULL. out NULL: only checks (0 or 1). */
int fc_next_times(const char *t0, const char *t1, int horizon, char **out, int *fit);

/* The forecasts of every series of `in` as CSV on f: the input's header and
 * column order, `horizon` rows per series (res[s].values, the model's
 * channel order, written with 7 significant digits), the `time` column
 * continued (fc_next_times) and the `series` column repeated. 0; -1 when
 * memory ran out; 1 when a write failed (ferror(f)). */
int fc_csv_write(FILE *f, const fc_csv *in, const cg_forecast_result *res, int horizon);

/* Writes one CSV field, quoted when it holds a comma, quote or line break. */
void fc_csv_field(FILE *f, const char *s);

#endif
