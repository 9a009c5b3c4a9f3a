/* The forecaster's CSV (fc_csv.h). Fields are comma-separated; a field in
 * double quotes may hold commas, line breaks and "" for a quote, as RFC 4180
 * and Python's csv module read them. Lines of only blanks are skipped. */
#include "fc_csv.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- records ---------------------------------------------------------- */

typedef struct field {
    char *s;       /* unquoted text (points into the record's buffer) */
    int line, col; /* where it starts */
} field;

typedef struct record {
    field *f;
    int n, cap;
    char *buf; /* the fields' text, NUL-separated */
    size_t len, bcap;
    int line; /* of the record's first field */
} record;

typedef struct reader {
    FILE *in;
    size_t bytes; /* read so far, against FC_CSV_MAX_BYTES */
    int line, col, c, eof, failed;
    int back[2], n_back; /* bytes read ahead for the byte order mark */
} reader;

static int rd_get(reader *r) {
    if (r->n_back) {
        int c = r->back[0];
        r->back[0] = r->back[1];
        r->n_back--;
        if (c == EOF) r->eof = 1;
        return c;
    }
    int c = getc(r->in);
    r->bytes++;
    if (c == EOF) {
        r->failed = ferror(r->in);
        r->eof = 1;
    }
    return c;
}

static int buf_put(record *rec, char ch) {
    if (rec->len + 1 >= rec->bcap) {
        size_t cap = rec->bcap ? rec->bcap * 2 : 256;
        char *b = realloc(rec->buf, cap);
        if (!b) return -1;
        rec->buf = b;
        rec->bcap = cap;
    }
    rec->buf[rec->len++] = ch;
    return 0;
}

/* Field offsets are kept while the buffer grows, then turned into pointers. */
static int field_add(record *rec, int line, int col) {
    if (rec->n == rec->cap) {
        int cap = rec->cap ? rec->cap * 2 : 16;
        field *f = realloc(rec->f, sizeof *f * (size_t)cap);
        if (!f) return -1;
        rec->f = f;
        rec->cap = cap;
    }
    rec->f[rec->n].s = (char *)(uintptr_t)rec->len;
    rec->f[rec->n].line = line;
    rec->f[rec->n].col = col;
    rec->n++;
    return 0;
}

/* Reads one record; 0 at the end of input (rec->n == 0), -1 on a mistake
 * (err filled). */
static int read_record(reader *r, record *rec, char *err, size_t es) {
    rec->n = 0;
    rec->len = 0;
    if (r->eof) return 0;
    int c = r->c;
    rec->line = r->line;
    if (field_add(rec, r->line, r->col)) goto oom;
    int quoted = 0, was_quoted = 0;
    for (;;) {
        if (c == 0) { /* fields are C strings: a NUL would end one early and drop the rest ("24<NUL>76" read as 24) */
            snprintf(err, es, "%d:%d: a NUL byte (the CSV must be text)", r->line, r->col);
            return -1;
        }
        /* Caps, so that input without end (a line that never ends, `yes`)
         * is an error before memory runs short. */
        if (rec->len >= FC_CSV_MAX_LINE) {
            snprintf(err, es, "%d: a line of more than %d bytes", rec->line, FC_CSV_MAX_LINE);
            return -1;
        }
        if (r->bytes > FC_CSV_MAX_BYTES) {
            snprintf(err, es, "%d: more than %zu bytes of CSV", r->line, FC_CSV_MAX_BYTES);
            return -1;
        }
        if (c == EOF) {
            if (quoted) {
                snprintf(err, es, "%d:%d: a quoted field is not closed before the end of input",
                         rec->f[rec->n - 1].line, rec->f[rec->n - 1].col);
                return -1;
            }
            break;
        }
        if (quoted) {
            if (c == '"') {
                c = rd_get(r);
                r->col++;
                if (c != '"') {
                    quoted = 0;
                    continue;
                }
            }
            if (buf_put(rec, (char)c)) goto oom;
            if (c == '\n') r->line++, r->col = 0;
        } else if (c == '"' && !was_quoted && rec->len == (size_t)(uintptr_t)rec->f[rec->n - 1].s) {
            quoted = was_quoted = 1;
        } else if (c == ',') {
            if (buf_put(rec, 0) || field_add(rec, r->line, r->col + 1)) goto oom;
            was_quoted = 0;
        } else if (c == '\n' || c == '\r') {
            if (c == '\r') {
                int d = rd_get(r);
                if (d != '\n') { /* a lone CR ends the line too */
                    r->c = d;
                    r->line++;
                    r->col = 1;
                    goto done;
                }
            }
            r->c = rd_get(r);
            r->line++;
            r->col = 1;
            goto done;
        } else {
            if (was_quoted) {
                snprintf(err, es, "%d:%d: text after a closing quote", r->line, r->col);
                return -1;
            }
            if (buf_put(rec, (char)c)) goto oom;
        }
        c = rd_get(r);
        r->col++;
    }
    r->c = EOF;
done:
    if (buf_put(rec, 0)) goto oom;
    for (int i = 0; i < rec->n; i++) rec->f[i].s = rec->buf + (size_t)(uintptr_t)rec->f[i].s;
    return 1;
oom:
    snprintf(err, es, "%d: out of memory reading the line", r->line);
    return -1;
}

static int blank(const record *rec) {
    for (int i = 0; i < rec->n; i++)
        for (const char *p = rec->f[i].s; *p; p++)
            if (*p != ' ' && *p != '\t') return 0;
    return 1;
}

/* ---- values ---------------------------------------------------------- */

/* [+-]? (digits [. digits*] | . digits) ([eE] [+-]? digits)?, finite. */
static int parse_number(const char *s, double *out) {
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    int digits = 0;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') p++, digits++;
    }
    if (!digits) return -1;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return -1;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p) return -1;
    errno = 0;
    double v = strtod(s, NULL);
    if (!isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* A field for a message: at most 40 bytes, control bytes as '?'. */
static const char *shown(const char *s, char *buf, size_t n) {
    size_t k = 0;
    for (; s[k] && k + 4 < n && k < 40; k++) buf[k] = (unsigned char)s[k] < 0x20 ? '?' : s[k];
    if (s[k] && k + 4 < n) memcpy(buf + k, "...", 3), k += 3;
    buf[k] = 0;
    return buf;
}

/* ---- series ------------------------------------------------------------ */

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int grow_slots(fc_csv *c) {
    int n = c->n_slots ? c->n_slots * 2 : 64;
    int *s = malloc(sizeof *s * (size_t)n);
    if (!s) return -1;
    for (int i = 0; i < n; i++) s[i] = -1;
    for (int i = 0; i < c->n_series; i++) {
        uint64_t h = hash_str(c->series[i].name ? c->series[i].name : "");
        int k = (int)(h & (uint64_t)(n - 1));
        while (s[k] >= 0) k = (k + 1) & (n - 1);
        s[k] = i;
    }
    free(c->slots);
    c->slots = s;
    c->n_slots = n;
    return 0;
}

/* The series named `name` (NULL: the only one), created if new; -1 when
 * memory is short. Rows of a series usually come together: the last one
 * is tried first. */
static int series_of(fc_csv *c, const char *name, int line) {
    if (c->n_series && (!name || !strcmp(c->series[c->n_series - 1].name, name))) return c->n_series - 1;
    if (name && c->n_slots) {
        int k = (int)(hash_str(name) & (uint64_t)(c->n_slots - 1));
        for (; c->slots[k] >= 0; k = (k + 1) & (c->n_slots - 1))
            if (!strcmp(c->series[c->slots[k]].name, name)) return c->slots[k];
    }
    if (c->n_series == c->cap_series) {
        int cap = c->cap_series ? c->cap_series * 2 : 16;
        fc_csv_series *s = realloc(c->series, sizeof *s * (size_t)cap);
        if (!s) return -1;
        c->series = s;
        c->cap_series = cap;
    }
    fc_csv_series *s = &c->series[c->n_series];
    memset(s, 0, sizeof *s);
    s->first_line = line;
    if (name && !(s->name = strdup(name))) return -1;
    c->n_series++;
    if (!name) return c->n_series - 1;
    if (c->n_series * 2 > c->n_slots) return grow_slots(c) ? -1 : c->n_series - 1; /* indexes them all */
    int k = (int)(hash_str(name) & (uint64_t)(c->n_slots - 1));
    while (c->slots[k] >= 0) k = (k + 1) & (c->n_slots - 1);
    c->slots[k] = c->n_series - 1;
    return c->n_series - 1;
}

static int add_row(fc_csv *c, fc_csv_series *s, const double *v, const char *time) {
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 64;
        double *nv = s->cap < (1 << 29) ? realloc(s->values, sizeof *nv * (size_t)cap * (size_t)c->C) : NULL;
        if (!nv) return -1;
        s->values = nv;
        if (c->keep_times && c->time_col >= 0) {
            char **nt = realloc(s->all_times, sizeof *nt * (size_t)cap);
            if (!nt) return -1;
            s->all_times = nt;
        }
        s->cap = cap;
    }
    memcpy(s->values + (size_t)s->n * (size_t)c->C, v, sizeof *v * (size_t)c->C);
    s->n++;
    if (c->time_col >= 0) {
        char *t = strdup(time);
        if (!t) return -1;
        free(s->times[0]);
        s->times[0] = s->times[1];
        s->times[1] = t;
        if (c->keep_times && !(s->all_times[s->n - 1] = strdup(time))) {
            s->n--; /* the row is not there without its time */
            return -1;
        }
    }
    return 0;
}

/* ---- the file -------------------------------------------------------- */

static int header(fc_csv *c, const record *rec, const char *const *columns, int C, char *err, size_t es) {
    char b[64];
    c->header = calloc((size_t)rec->n, sizeof *c->header);
    c->chan_col = malloc(sizeof *c->chan_col * (size_t)C);
    if (!c->header || !c->chan_col) goto oom;
    c->n_header = rec->n;
    c->C = C;
    c->time_col = c->series_col = -1;
    for (int k = 0; k < C; k++) c->chan_col[k] = -1;
    for (int i = 0; i < rec->n; i++) {
        const field *f = &rec->f[i];
        if (!(c->header[i] = strdup(f->s))) goto oom;
        for (int j = 0; j < i; j++)
            if (!strcmp(c->header[j], f->s)) {
                snprintf(err, es, "%d:%d: column '%s' appears twice", f->line, f->col, shown(f->s, b, sizeof b));
                return -1;
            }
        if (!strcmp(f->s, "time")) {
            if (i) {
                snprintf(err, es, "%d:%d: column 'time' must come first", f->line, f->col);
                return -1;
            }
            c->time_col = 0;
            continue;
        }
        if (!strcmp(f->s, "series")) {
            c->series_col = i;
            continue;
        }
        int k = 0;
        while (k < C && strcmp(columns[k], f->s)) k++;
        if (k == C) {
            size_t u = (size_t)snprintf(err, es, "%d:%d: column '%s' is not one of the model's (", f->line, f->col,
                                        shown(f->s, b, sizeof b));
            for (int q = 0; q < C && u < es; q++)
                u += (size_t)snprintf(err + u, es - u, "%s%s", q ? ", " : "", columns[q]);
            if (u < es) snprintf(err + u, es - u, ")");
            return -1;
        }
        c->chan_col[k] = i;
    }
    for (int k = 0; k < C; k++)
        if (c->chan_col[k] < 0) {
            snprintf(err, es, "%d:1: column '%s' of the model is missing", rec->line, columns[k]);
            return -1;
        }
    return 0;
oom:
    snprintf(err, es, "%d: out of memory", rec->line);
    return -1;
}

static int row(fc_csv *c, const record *rec, double *v, char *err, size_t es) {
    char b[64];
    if (rec->n != c->n_header) {
        snprintf(err, es, "%d:1: %d fields, the header has %d", rec->line, rec->n, c->n_header);
        return -1;
    }
    for (int k = 0; k < c->C; k++) {
        const field *f = &rec->f[c->chan_col[k]];
        if (parse_number(f->s, &v[k])) {
            snprintf(err, es, "%d:%d: column '%s': expected a number, got '%s'", f->line, f->col,
                     c->header[c->chan_col[k]], shown(f->s, b, sizeof b));
            return -1;
        }
    }
    int s = series_of(c, c->series_col >= 0 ? rec->f[c->series_col].s : NULL, rec->line);
    if (s < 0 || add_row(c, &c->series[s], v, c->time_col >= 0 ? rec->f[0].s : NULL)) {
        snprintf(err, es, "%d: out of memory", rec->line);
        return -1;
    }
    return 0;
}

int fc_csv_read(FILE *f, const char *const *columns, int C, int keep_times, fc_csv *out, char *err, size_t es) {
    memset(out, 0, sizeof *out);
    out->keep_times = keep_times;
    reader r = {.in = f, .line = 1, .col = 1};
    record rec = {0};
    double *v = malloc(sizeof *v * (size_t)C);
    int rc = v ? 0 : -1, have_header = 0;
    if (!v) snprintf(err, es, "1: out of memory");
    r.c = rd_get(&r);
    if (r.c == 0xEF) { /* a UTF-8 byte order mark, as spreadsheets write, is not part of the header */
        int b1 = rd_get(&r), b2 = b1 == 0xBB ? rd_get(&r) : EOF;
        if (b1 == 0xBB && b2 == 0xBF) r.c = rd_get(&r);
        else {
            r.back[r.n_back++] = b1;
            if (b1 == 0xBB) r.back[r.n_back++] = b2;
            r.eof = 0;
        }
    }
    while (!rc) {
        int got = read_record(&r, &rec, err, es);
        if (got < 0) rc = -1;
        if (got <= 0) break;
        if (blank(&rec)) continue;
        rc = have_header ? row(out, &rec, v, err, es) : header(out, &rec, columns, C, err, es);
        have_header = 1;
    }
    if (!rc && r.failed) {
        snprintf(err, es, "%d: read error: %s", r.line, strerror(errno ? errno : EIO));
        rc = -1;
    }
    if (!rc && !have_header) snprintf(err, es, "1:1: no header line"), rc = -1;
    if (!rc && !out->n_series) snprintf(err, es, "%d:1: no rows after the header", r.line), rc = -1;
    free(v);
    free(rec.f);
    free(rec.buf);
    if (rc) fc_csv_free(out);
    return rc;
}

void fc_csv_free(fc_csv *c) {
    for (int i = 0; c->header && i < c->n_header; i++) free(c->header[i]);
    free(c->header);
    free(c->chan_col);
    for (int i = 0; c->series && i < c->n_series; i++) {
        free(c->series[i].name);
        free(c->series[i].values);
        free(c->series[i].times[0]);
        free(c->series[i].times[1]);
        for (int k = 0; c->series[i].all_times && k < c->series[i].n; k++) free(c->series[i].all_times[k]);
        free(c->series[i].all_times);
    }
    free(c->series);
    free(c->slots);
    memset(c, 0, sizeof *c);
}

void fc_csv_field(FILE *f, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    putc('"', f);
    for (; *s; s++) {
        if (*s == '"') putc('"', f);
        putc(*s, f);
    }
    putc('"', f);
}

int fc_csv_write(FILE *f, const fc_csv *in, const cg_forecast_result *res, int horizon) {
    char **times = calloc((size_t)horizon, sizeof *times);
    if (!times) return -1;
    for (int i = 0; i < in->n_header; i++) {
        if (i) putc(',', f);
        fc_csv_field(f, in->header[i]);
    }
    putc('\n', f);
    int rc = 0;
    for (int s = 0; s < in->n_series && !rc; s++) {
        const fc_csv_series *ser = &in->series[s];
        int fit;
        if (in->time_col >= 0 && fc_next_times(ser->times[0], ser->times[1], horizon, times, &fit)) {
            rc = -1;
            break;
        }
        for (int j = 0; j < horizon; j++) {
            for (int i = 0; i < in->n_header; i++) {
                if (i) putc(',', f);
                if (i == in->time_col) fc_csv_field(f, times[j]);
                else if (i == in->series_col) fc_csv_field(f, ser->name);
                else
                    for (int k = 0; k < in->C; k++)
                        if (in->chan_col[k] == i)
                            fprintf(f, "%.7g", res[s].values[(size_t)j * (size_t)in->C + (size_t)k]);
            }
            putc('\n', f);
        }
        for (int j = 0; j < horizon; j++) free(times[j]), times[j] = NULL;
        if (ferror(f)) rc = 1;
    }
    free(times);
    return rc;
}
