/* The time column of a forecast (fc_csv.h, fc_next_times): the last two
 * times of a series give the step. Integers and decimals step by their
 * difference, kept exact in integer arithmetic (0.1 then 0.2 gives 0.3, in
 * as many decimals as the longer of the two); ISO dates (YYYY-MM-DD) and
 * date-times (YYYY-MM-DDTHH:MM[:SS], or a space for the T) step by whole
 * months when the day of month and the time agree, or when both are the
 * last day of their month (monthly data stays on its day, month-end data
 * on month ends), else by their exact difference, written in the input's
 * form. Anything else, or a step of zero or less, gives "+1", "+2", ....
 * tools/py/forecast_ref.py does the same. A horizon that takes a date past
 * 9999-12-31 (or a number past int64) is an error of the caller's
 * (--horizon): turning the column into "+1", "+2", ... then would lose the
 * times silently. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_csv.h"

/* [+-]? digits [. digits]: the value scaled to `dec` decimals. */
static int decimal(const char *s, int *dec, int *neg, const char **digits) {
    const char *p = s;
    *neg = *p == '-';
    if (*p == '+' || *p == '-') p++;
    *digits = p;
    if (!(*p >= '0' && *p <= '9')) return 0;
    while (*p >= '0' && *p <= '9') p++;
    *dec = 0;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9')) return 0;
        while (*p >= '0' && *p <= '9') p++, (*dec)++;
    }
    return *p == 0;
}

/* s as an integer of `dec` decimals (s has at most dec); 0 on overflow. */
static int scaled(const char *s, int dec, int64_t *out) {
    int d0, neg;
    const char *p;
    decimal(s, &d0, &neg, &p);
    int64_t v = 0;
    int seen_dot = 0, frac = 0;
    for (; *p; p++) {
        if (*p == '.') {
            seen_dot = 1;
            continue;
        }
        if (v > (INT64_MAX - 9) / 10) return 0;
        v = v * 10 + (*p - '0');
        frac += seen_dot;
    }
    for (; frac < dec; frac++) {
        if (v > INT64_MAX / 10) return 0;
        v *= 10;
    }
    *out = neg ? -v : v;
    return 1;
}

static int numbers(const char *t0, const char *t1, int horizon, char **out, int *fit) {
    int d0, d1, n0, n1;
    const char *p;
    if (!decimal(t0, &d0, &n0, &p) || !decimal(t1, &d1, &n1, &p)) return 0;
    int dec = d0 > d1 ? d0 : d1;
    if (dec > 18) return 0;
    int64_t a, b, unit = 1;
    for (int i = 0; i < dec; i++) unit *= 10;
    if (!scaled(t0, dec, &a) || !scaled(t1, dec, &b)) return 0;
    if ((a < 0 && b > INT64_MAX + a) || b - a <= 0) return 0;
    int64_t step = b - a;
    if (step > (INT64_MAX - (b < 0 ? 0 : b)) / horizon) {
        *fit = (int)((INT64_MAX - (b < 0 ? 0 : b)) / step);
        return 2;
    }
    for (int k = 0; out && k < horizon; k++) {
        int64_t v = b + step * (k + 1);
        char buf[64];
        uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
        if (dec)
            snprintf(buf, sizeof buf, "%s%" PRIu64 ".%0*" PRIu64, v < 0 ? "-" : "", u / (uint64_t)unit, dec,
                     u % (uint64_t)unit);
        else snprintf(buf, sizeof buf, "%" PRId64, v);
        if (!(out[k] = strdup(buf))) return -1;
    }
    return 1;
}

/* ---- dates ---- */

typedef struct when {
    int y, m, d, hh, mi, ss;
    int form; /* 0 date, 1 HH:MM, 2 HH:MM:SS */
    char sep; /* 'T' or ' ' */
} when;

static int digits(const char *s, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}

static int leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int month_days(int y, int m) {
    static const int n[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : n[m - 1];
}

static int parse_when(const char *s, when *w) {
    size_t n = strlen(s);
    memset(w, 0, sizeof *w);
    if (n < 10 || s[4] != '-' || s[7] != '-' || !digits(s, 4, &w->y) || !digits(s + 5, 2, &w->m) ||
        !digits(s + 8, 2, &w->d))
        return 0;
    if (n > 10) {
        if ((s[10] != 'T' && s[10] != ' ') || n < 16 || s[13] != ':' || !digits(s + 11, 2, &w->hh) ||
            !digits(s + 14, 2, &w->mi))
            return 0;
        w->sep = s[10];
        w->form = 1;
        if (n > 16) {
            if (n != 19 || s[16] != ':' || !digits(s + 17, 2, &w->ss)) return 0;
            w->form = 2;
        }
    }
    return w->y >= 1 && w->m >= 1 && w->m <= 12 && w->d >= 1 && w->d <= month_days(w->y, w->m) && w->hh < 24 &&
           w->mi < 60 && w->ss < 60;
}

/* Days from 0001-01-01 (proleptic Gregorian), and back. */
static int64_t days_of(int y, int m, int d) {
    int64_t yy = y - (m <= 2), era = yy / 400, yoe = yy - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1, doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe;
}

static void civil(int64_t z, int *y, int *m, int *d) {
    int64_t era = (z >= 0 ? z : z - 146096) / 146097, doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

static int64_t seconds_of(const when *w) {
    return days_of(w->y, w->m, w->d) * 86400 + w->hh * 3600 + w->mi * 60 + w->ss;
}

static char *format_when(const when *w) {
    char b[32];
    if (w->form == 0) snprintf(b, sizeof b, "%04d-%02d-%02d", w->y, w->m, w->d);
    else if (w->form == 1) snprintf(b, sizeof b, "%04d-%02d-%02d%c%02d:%02d", w->y, w->m, w->d, w->sep, w->hh, w->mi);
    else snprintf(b, sizeof b, "%04d-%02d-%02d%c%02d:%02d:%02d", w->y, w->m, w->d, w->sep, w->hh, w->mi, w->ss);
    return strdup(b);
}

static int dates(const char *t0, const char *t1, int horizon, char **out, int *fit) {
    when a, b;
    if (!parse_when(t0, &a) || !parse_when(t1, &b) || a.form != b.form || a.sep != b.sep) return 0;
    int same_time = a.hh == b.hh && a.mi == b.mi && a.ss == b.ss;
    int ends = a.d == month_days(a.y, a.m) && b.d == month_days(b.y, b.m);
    int64_t months = (int64_t)(b.y - a.y) * 12 + (b.m - a.m);
    if (same_time && (a.d == b.d || ends) && months > 0) {
        for (int k = 0; k < horizon; k++) {
            int64_t m0 = (int64_t)b.y * 12 + (b.m - 1) + months * (k + 1);
            when w = b;
            w.y = (int)(m0 / 12);
            w.m = (int)(m0 % 12) + 1;
            if (m0 / 12 > 9999) {
                *fit = k;
                return 2;
            }
            if (ends) w.d = month_days(w.y, w.m);
            else if (w.d > month_days(w.y, w.m)) return 0; /* that day is not in every month */
            if (out && !(out[k] = format_when(&w))) return -1;
        }
        return 1;
    }
    int64_t sa = seconds_of(&a), sb = seconds_of(&b), step = sb - sa;
    if (step <= 0) return 0;
    for (int k = 0; k < horizon; k++) {
        int64_t s = sb + step * (k + 1);
        when w = b;
        civil(s / 86400, &w.y, &w.m, &w.d);
        if (w.y > 9999) {
            *fit = k;
            return 2;
        }
        int64_t r = s % 86400;
        w.hh = (int)(r / 3600), w.mi = (int)(r / 60 % 60), w.ss = (int)(r % 60);
        if (out && !(out[k] = format_when(&w))) return -1;
    }
    return 1;
}

int fc_next_times(const char *t0, const char *t1, int horizon, char **out, int *fit) {
    for (int k = 0; out && k < horizon; k++) out[k] = NULL;
    int got = 0;
    *fit = horizon;
    if (t0 && t1 && horizon <= 100000000 / 2) {
        got = numbers(t0, t1, horizon, out, fit);
        if (!got) got = dates(t0, t1, horizon, out, fit);
    }
    for (int k = 0; out && got != 1 && k < horizon; k++) { /* partial results of a step that failed part way go */
        free(out[k]);
        out[k] = NULL;
    }
    if (got == 1 || got == 2 || !out) return got == 2;
    if (got < 0) return -1;
    for (int k = 0; k < horizon; k++) {
        char b[24];
        snprintf(b, sizeof b, "+%d", k + 1);
        if (!(out[k] = strdup(b))) return -1;
    }
    return 0;
}
