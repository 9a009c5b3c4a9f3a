/* The picture of a forecast (`clgraph forecast --plot FILE.png|.svg`, and
 * --attention FILE.png|.svg): per series one image (FILE for the first,
 * FILE-<i> for series i, as the translation heat maps): for each channel a
 * line chart of the history (grey) and the forecast (orange) on one time
 * axis, a dashed line where the forecast starts; under them the attention of
 * each forecast step (a row per step, blue as the heat maps) over the same
 * axis, so the eye goes from a forecast value down to the states it read;
 * each row is scaled to its largest weight, so that a row spread over a
 * long window still shows where it looks. Under the charts, the time of the
 * first step shown, of the last history step and of the last forecast step
 * (the CSV's `time` column, or step numbers without one).
 * Each chart's value axis has ticks at round values (1, 2 or 5 times a
 * power of ten) with light grid lines, the channel's name runs up its left
 * side, and the attention rows are labelled with the step they forecast
 * (+1, +2, ...: every row, or every k-th of a long horizon).
 * Long histories show their last FC_PLOT_STEPS steps. */
#include "fc_plot.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "font.h"
#include "heatmap.h"
#include "out_file.h"

#define FC_PLOT_STEPS 720 /* time steps shown at most */
#define PLOT_W 720        /* pixels of the time axis at most */
#define CHART_H 110
#define ROW_H 10 /* pixels per attention row: room for its label */
#define PAD 6
#define LEFT 96 /* room for channel names and values */

/* A time label under the charts: its text, left pixel, row (0 or 1) and
 * the step it names (a tick is drawn there). */
typedef struct label {
    char text[48];
    int x, row, step, shown;
} label;

typedef struct layout {
    int first; /* the time index (1-based) at the left edge */
    int steps; /* steps shown: history and forecast */
    int px;    /* pixels per step */
    int w, h, charts_top, axis_top, att_top, C, N;
    label lab[3]; /* first shown, last history, last forecast */
} layout;

static int x_of(const layout *l, int i) { return LEFT + (i - l->first) * l->px + l->px / 2; }

/* The time of step i (1-based) as the CSV gives it, or its number. */
static void time_text(const fc_plot_series *s, int i, char *b, size_t n) {
    const char *t = NULL;
    if (s->times) t = i <= s->length ? s->times[i - 1] : s->ftimes ? s->ftimes[i - s->length - 1] : NULL;
    if (t) snprintf(b, n, "%s", t); /* shortened only on the picture */
    else snprintf(b, n, "%d", i);
}

/* Places the labels: the first at the left edge (dropped when it would
 * touch the second), the last history step's ending at the dashed line, the
 * last forecast step's ending at the right edge, a row lower when the
 * forecast is too short for both on one row. */
static int place_labels(const fc_plot_series *s, layout *l) {
    int steps[3] = {l->first, s->length, s->length + s->horizon}, right = LEFT + l->steps * l->px;
    for (int k = 0; k < 3; k++) {
        label *b = &l->lab[k];
        time_text(s, steps[k], b->text, sizeof b->text);
        b->step = steps[k];
        b->shown = steps[k] >= l->first;
        b->row = 0;
    }
    int wd[3];
    for (int k = 0; k < 3; k++) wd[k] = font_width(l->lab[k].text);
    l->lab[1].x = x_of(l, s->length) + l->px / 2 - wd[1];
    if (l->lab[1].x < LEFT) l->lab[1].x = LEFT;
    l->lab[0].x = LEFT;
    if (l->first == s->length || LEFT + wd[0] + 2 * PAD > l->lab[1].x) l->lab[0].shown = 0;
    l->lab[2].x = right - wd[2];
    if (l->lab[2].x < l->lab[1].x + wd[1] + 2 * PAD) l->lab[2].row = 1;
    return l->lab[2].row ? 2 : 1;
}

static void plan(const fc_plot_series *s, layout *l) {
    int total = s->length + s->horizon;
    l->steps = total < FC_PLOT_STEPS ? total : FC_PLOT_STEPS;
    l->first = total - l->steps + 1;
    l->px = PLOT_W / l->steps > 0 ? PLOT_W / l->steps : 1;
    if (l->px > 12) l->px = 12;
    l->C = s->channels;
    l->N = s->horizon;
    l->charts_top = 2 * PAD + FONT_H;
    l->axis_top = l->charts_top + l->C * (CHART_H + PAD) - PAD + 4;
    int rows = place_labels(s, l);
    l->att_top = l->axis_top + rows * (FONT_H + 2) + FONT_H + 2 * PAD;
    l->w = LEFT + l->steps * l->px + PAD;
    l->h = l->att_top + (s->attention ? l->N * ROW_H : 0) + PAD;
    if (l->w < 360) l->w = 360;
}

/* The value of channel c at time index i (1-based), history or forecast. */
static double value_at(const fc_plot_series *s, int i, int c) {
    if (i <= s->length) return s->history[(size_t)(i - 1) * (size_t)s->channels + (size_t)c];
    return s->forecast[(size_t)(i - s->length - 1) * (size_t)s->channels + (size_t)c];
}

static void range_of(const fc_plot_series *s, const layout *l, int c, double *lo, double *hi) {
    *lo = INFINITY, *hi = -INFINITY;
    for (int i = l->first; i < l->first + l->steps; i++) {
        double v = value_at(s, i, c);
        if (v < *lo) *lo = v;
        if (v > *hi) *hi = v;
    }
    if (!(*hi > *lo)) *lo -= 1, *hi += 1;
    double m = (*hi - *lo) * 0.05;
    *lo -= m, *hi += m;
}

static int y_of(const layout *l, int c, double v, double lo, double hi) {
    return l->charts_top + c * (CHART_H + PAD) + (int)lround((hi - v) / (hi - lo) * (CHART_H - 1));
}

static const char *title_of(const fc_plot_series *s, char *buf, size_t n) {
    snprintf(buf, n, "%s%s%shistory %d, forecast %d", s->name ? "series " : "", s->name ? s->name : "",
             s->name ? ": " : "", s->length, s->horizon);
    return buf;
}

/* ---- PNG ---- */

static void put(uint8_t *rgb, const layout *l, int x, int y, const uint8_t c[3]) {
    if (x < 0 || y < 0 || x >= l->w || y >= l->h) return;
    uint8_t *p = rgb + ((size_t)y * (size_t)l->w + (size_t)x) * 3;
    p[0] = c[0], p[1] = c[1], p[2] = c[2];
}

static void line(uint8_t *rgb, const layout *l, int x0, int y0, int x1, int y1, const uint8_t c[3]) {
    int dx = abs(x1 - x0), dy = -abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, e = dx + dy;
    for (;;) {
        put(rgb, l, x0, y0, c);
        put(rgb, l, x0, y0 + 1, c); /* two pixels thick */
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * e;
        if (e2 >= dy) e += dy, x0 += sx;
        if (e2 <= dx) e += dx, y0 += sy;
    }
}

/* Ticks at round values inside [lo, hi]: the smallest step of 1, 2 or 5
 * times a power of ten that gives at most max_n; the first at *first, the
 * count returned. *decimals is what the step needs to be printed exactly. */
static int nice_ticks(double lo, double hi, int max_n, double *first, double *step, int *decimals) {
    double raw = (hi - lo) / max_n, mag = pow(10, floor(log10(raw)));
    static const double m[] = {1, 2, 5, 10};
    *step = 10 * mag;
    for (int i = 0; i < 4; i++)
        if (m[i] * mag >= raw) {
            *step = m[i] * mag;
            break;
        }
    *first = ceil(lo / *step) * *step;
    int d = (int)-floor(log10(*step) + 1e-9);
    *decimals = d > 0 ? d : 0;
    int n = (int)floor((hi - *first) / *step + 1e-9) + 1;
    return n > 0 ? n : 0;
}

/* Tick value v as text: fixed with the step's decimals, never "-0". */
static void tick_text(char *buf, size_t n, double v, int decimals) {
    if (fabs(v) >= 1e7) snprintf(buf, n, "%.3g", v);
    else snprintf(buf, n, "%.*f", decimals > 9 ? 9 : decimals, v + 0.0);
    if (!strncmp(buf, "-0", 2) && strspn(buf + 1, "0.") == strlen(buf + 1)) memmove(buf, buf + 1, strlen(buf));
}

#define TICKS_MAX (CHART_H / (FONT_H + 9)) /* value ticks per chart at most */

/* Attention rows labelled: every row, or every k-th (k of 1, 2, 5, 10,
 * 20, 50, ...) where more than 40 labels would crowd. */
static int row_label_every(int n) {
    static const int m[] = {1, 2, 5};
    for (int p = 1;; p *= 10)
        for (int i = 0; i < 3; i++)
            if (n / (m[i] * p) <= 40) return m[i] * p;
}

/* Row j's largest weight (1 for an empty row). */
static float row_max(const fc_plot_series *s, int j) {
    float m = 0;
    for (int k = 0; k < s->att_count[j]; k++) {
        float v = s->attention[(size_t)j * (size_t)s->window + (size_t)k];
        if (v > m) m = v;
    }
    return m > 0 ? m : 1;
}

#define ATT_TITLE "attention of step +1, +2, ... (rows scaled to their largest)"

/* A channel's name up the left side of its chart (the tick labels take the
 * rest of the margin); a name longer than the chart is cut. */
static void name_png(uint8_t *rgb, const layout *l, int top, const char *name) {
    char cut[64];
    int n = 0, max = CHART_H / FONT_ADV;
    size_t i = 0;
    for (; name[i] && n < max && i < sizeof cut - 1; i++) n += ((unsigned char)name[i] & 0xC0) != 0x80;
    while (name[i] && ((unsigned char)name[i] & 0xC0) == 0x80 && i < sizeof cut - 1) i++; /* whole code points */
    memcpy(cut, name, i);
    cut[i] = 0;
    int wd = font_width(cut);
    font_draw_up(rgb, l->w, l->h, PAD, top + CHART_H / 2 + wd / 2, cut, 0, 0, 0);
}

static void render(const fc_plot_series *s, const layout *l, uint8_t *rgb) {
    static const uint8_t grey[3] = {90, 90, 90}, orange[3] = {230, 120, 20}, frame[3] = {200, 200, 200},
                         dash[3] = {150, 150, 150}, grid[3] = {225, 225, 225};
    memset(rgb, 255, (size_t)l->w * (size_t)l->h * 3);
    char b[160];
    font_draw(rgb, l->w, l->h, PAD, PAD, title_of(s, b, sizeof b), 0, 0, 0);
    int x_split = LEFT + (s->length - l->first + 1) * l->px;
    for (int c = 0; c < l->C; c++) {
        double lo, hi;
        range_of(s, l, c, &lo, &hi);
        int top = l->charts_top + c * (CHART_H + PAD);
        for (int x = LEFT; x < LEFT + l->steps * l->px; x++) put(rgb, l, x, top + CHART_H, frame);
        for (int y = top; y < top + CHART_H; y += 4) put(rgb, l, x_split, y, dash), put(rgb, l, x_split, y + 1, dash);
        name_png(rgb, l, top, s->columns[c]);
        double t0, step;
        int dec, n = nice_ticks(lo, hi, TICKS_MAX, &t0, &step, &dec);
        for (int k = 0; k < n; k++) {
            double v = t0 + k * step;
            int y = y_of(l, c, v, lo, hi);
            for (int x = LEFT; x < LEFT + l->steps * l->px; x += 2) put(rgb, l, x, y, grid);
            for (int x = LEFT - 4; x < LEFT; x++) put(rgb, l, x, y, grey);
            tick_text(b, sizeof b, v, dec);
            font_draw(rgb, l->w, l->h, LEFT - PAD - font_width(b), y - 3, b, 90, 90, 90);
        }
        for (int i = l->first + 1; i < l->first + l->steps; i++)
            line(rgb, l, x_of(l, i - 1), y_of(l, c, value_at(s, i - 1, c), lo, hi), x_of(l, i),
                 y_of(l, c, value_at(s, i, c), lo, hi), i > s->length ? orange : grey);
    }
    int base = l->axis_top - 4;
    for (int k = 0; k < 3; k++) {
        const label *b = &l->lab[k];
        if (!b->shown) continue;
        for (int y = base - 3; y < base + 3; y++) put(rgb, l, x_of(l, b->step), y, grey);
        font_draw(rgb, l->w, l->h, b->x, l->axis_top + b->row * (FONT_H + 2), b->text, 90, 90, 90);
    }
    if (!s->attention) return;
    font_draw(rgb, l->w, l->h, PAD, l->att_top - FONT_H - PAD / 2, ATT_TITLE, 0, 0, 0);
    int every = row_label_every(l->N);
    for (int j = 0; j < l->N; j++) {
        int y = l->att_top + j * ROW_H;
        if (j == 0 || (j + 1) % every == 0) {
            snprintf(b, sizeof b, "+%d", j + 1);
            font_draw(rgb, l->w, l->h, LEFT - PAD - font_width(b), y + 1, b, 90, 90, 90);
        }
        float mx = row_max(s, j);
        for (int i = l->first; i < l->first + l->steps; i++) {
            int k = i - s->att_first[j];
            float wgt = s->att_count[j] && k >= 0 && k < s->att_count[j]
                            ? s->attention[(size_t)j * (size_t)s->window + (size_t)k] / mx
                            : NAN;
            uint8_t col[3];
            if (isnan(wgt)) col[0] = col[1] = col[2] = 246;
            else cg_heatmap_color(wgt, col);
            for (int yy = y; yy < y + ROW_H - 1; yy++)
                for (int xx = LEFT + (i - l->first) * l->px; xx < LEFT + (i - l->first + 1) * l->px; xx++)
                    put(rgb, l, xx, yy, col);
        }
        /* the step's own forecast value sits at time T + j + 1 */
        put(rgb, l, x_of(l, s->length + j + 1), y + ROW_H / 2, orange);
    }
}

static int write_png(const fc_plot_series *s, const char *path) {
    layout l;
    plan(s, &l);
    uint8_t *rgb = malloc((size_t)l.w * (size_t)l.h * 3);
    if (!rgb) {
        fprintf(stderr, "clgraph forecast: %s: out of memory\n", path);
        return -1;
    }
    render(s, &l, rgb);
    cg_status st = cg_png_write_rgb(path, rgb, l.w, l.h);
    free(rgb);
    return st ? -1 : 0;
}

/* ---- SVG: the same layout in vector form ---- */

static void svg_body(FILE *f, const fc_plot_series *s, const layout *l) {
    char b[160];
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"monospace\" "
            "font-size=\"10\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%d\" y=\"%d\">",
            l->w, l->h, PAD, PAD + FONT_H);
    cg_xml_text(f, title_of(s, b, sizeof b));
    fputs("</text>\n", f);
    int x_split = LEFT + (s->length - l->first + 1) * l->px;
    for (int c = 0; c < l->C; c++) {
        double lo, hi;
        range_of(s, l, c, &lo, &hi);
        int top = l->charts_top + c * (CHART_H + PAD);
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ccc\"/>\n", LEFT, top + CHART_H,
                LEFT + l->steps * l->px, top + CHART_H);
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\" stroke-dasharray=\"2,2\"/>\n",
                x_split, top, x_split, top + CHART_H);
        fprintf(f, "<text transform=\"translate(%d,%d) rotate(-90)\" text-anchor=\"middle\">", PAD + FONT_H,
                top + CHART_H / 2);
        cg_xml_text(f, s->columns[c]);
        fputs("</text>\n", f);
        double t0, step;
        int dec, n = nice_ticks(lo, hi, TICKS_MAX, &t0, &step, &dec);
        for (int k = 0; k < n; k++) {
            double v = t0 + k * step;
            int y = y_of(l, c, v, lo, hi);
            tick_text(b, sizeof b, v, dec);
            fprintf(f,
                    "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#e1e1e1\"/>\n<line x1=\"%d\" y1=\"%d\" "
                    "x2=\"%d\" y2=\"%d\" stroke=\"#5a5a5a\"/>\n<text x=\"%d\" y=\"%d\" text-anchor=\"end\" "
                    "fill=\"#555\">%s</text>\n",
                    LEFT, y, LEFT + l->steps * l->px, y, LEFT - 4, y, LEFT, y, LEFT - PAD, y + 4, b);
        }
        for (int part = 0; part < 2; part++) {
            int from = part ? s->length : l->first, to = part ? l->first + l->steps - 1 : s->length;
            if (from < l->first) from = l->first;
            if (to <= from) continue;
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                    part ? "#e67814" : "#5a5a5a");
            for (int i = from; i <= to; i++)
                fprintf(f, "%s%d,%d", i > from ? " " : "", x_of(l, i), y_of(l, c, value_at(s, i, c), lo, hi));
            fputs("\"/>\n", f);
        }
    }
    for (int k = 0; k < 3; k++) {
        const label *b = &l->lab[k];
        if (!b->shown) continue;
        fprintf(f,
                "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#5a5a5a\"/>\n<text x=\"%d\" y=\"%d\" "
                "fill=\"#555\">",
                x_of(l, b->step), l->axis_top - 7, x_of(l, b->step), l->axis_top - 1, b->x,
                l->axis_top + b->row * (FONT_H + 2) + FONT_H);
        cg_xml_text(f, b->text);
        fputs("</text>\n", f);
    }
    if (!s->attention) return;
    fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n", PAD, l->att_top - PAD / 2, ATT_TITLE);
    int every = row_label_every(l->N);
    for (int j = 0; j < l->N; j++)
        if (j == 0 || (j + 1) % every == 0)
            fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#555\">+%d</text>\n", LEFT - PAD,
                    l->att_top + j * ROW_H + ROW_H - 1, j + 1);
    for (int j = 0; j < l->N; j++)
        for (int k = 0; k < s->att_count[j]; k++) {
            int i = s->att_first[j] + k;
            if (i < l->first) continue;
            uint8_t col[3];
            cg_heatmap_color(s->attention[(size_t)j * (size_t)s->window + (size_t)k] / row_max(s, j), col);
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%02x%02x%02x\"/>\n",
                    LEFT + (i - l->first) * l->px, l->att_top + j * ROW_H, l->px, ROW_H - 1, col[0], col[1], col[2]);
        }
}

static int write_svg(const fc_plot_series *s, const char *path) {
    layout l;
    plan(s, &l);
    cli_file out;
    FILE *f = cli_file_open(&out, path);
    if (!f) {
        fprintf(stderr, "clgraph forecast: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    errno = 0;
    svg_body(f, s, &l);
    fputs("</svg>\n", f);
    int err = cli_file_commit(&out);
    if (err) fprintf(stderr, "clgraph forecast: cannot write %s: %s\n", path, strerror(err));
    return err ? -1 : 0;
}

int fc_plot_write(const char *path, const fc_plot_series *series, int n) {
    const char *dot = strrchr(path, '.');
    int svg = dot && !strcmp(dot, ".svg");
    for (int i = 0; i < n; i++) {
        char *p = cg_heatmap_path(path, i);
        if (!p) {
            fprintf(stderr, "clgraph forecast: out of memory\n");
            return -1;
        }
        int rc = svg ? write_svg(&series[i], p) : write_png(&series[i], p);
        free(p);
        if (rc) {
            cg_heatmap_remove(path, i); /* no partial set of pictures */
            return rc;
        }
    }
    return 0;
}
