/* Attention heat maps: PNG (libpng, 8-bit RGB), SVG and JSON. The layout
 * and the error conventions are described in heatmap.h. Errors are printed
 * here ("clgraph: ..."): the library's cg_error is not reachable from the
 * tools, so cg_last_error() is not set by this file. */
#include "heatmap.h"

#include <errno.h>
#include <math.h> /* isnan, isfinite, NAN: macros only (the CLI does not link libm) */
#if CG_HAVE_PNG
#include <png.h>
#else
typedef uint8_t *png_bytep;
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "out_file.h"

enum { FMT_PNG, FMT_SVG, FMT_JSON };

static cg_status fail(cg_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("clgraph: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return st;
}

static cg_status fail_io(const char *path, const char *what, int err) {
    return fail(CG_ERR_IO, "%s: %s: %s", path, what, err ? strerror(err) : "write error");
}

static cg_status no_memory(void) { return fail(CG_ERR_NO_MEMORY, "out of memory writing the attention heat map"); }

/* ---------------------------------------------------------------- */
/* Labels and layout                                                 */

/* Byte length of the first `n` code points of s (as font.c counts them). */
static size_t prefix_bytes(const char *s, int n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t b = 0;
    for (int k = 0; k < n && p[b]; k++) {
        unsigned c = p[b];
        int len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
        int ok = 1;
        for (int i = 1; i < len; i++)
            if ((p[b + (size_t)i] & 0xC0) != 0x80) ok = 0;
        b += ok ? (size_t)len : 1;
    }
    return b;
}

/* The label as drawn: at most HEATMAP_MAX_LABEL code points. */
static char *display_label(const char *s) {
    if (font_count(s) <= HEATMAP_MAX_LABEL) return strdup(s);
    size_t b = prefix_bytes(s, HEATMAP_MAX_LABEL - 1);
    char *d = malloc(b + 2);
    if (!d) return NULL;
    memcpy(d, s, b);
    d[b] = '~';
    d[b + 1] = 0;
    return d;
}

static int label_len(const char *s) {
    int n = font_count(s);
    return n < HEATMAP_MAX_LABEL ? n : HEATMAP_MAX_LABEL;
}

void cg_heatmap_margins(int src_len, int rows, const char *const *row_labels, const char *const *col_labels, int *left,
                        int *top) {
    int row_w = 0, col_h = 0;
    for (int t = 0; t < rows; t++) {
        int w = label_len(row_labels[t]) * FONT_ADV;
        if (w > row_w) row_w = w;
    }
    for (int j = 0; j < src_len; j++) {
        int n = label_len(col_labels[j]);
        int hh = n == 1 ? FONT_H : n * FONT_ADV;
        if (hh > col_h) col_h = hh;
    }
    int l = 2 * HEATMAP_PAD + row_w, min_l = HEATMAP_MIN_WIDTH - src_len * HEATMAP_CELL;
    *left = l > min_l ? l : min_l;
    *top = 3 * HEATMAP_PAD + FONT_H + col_h;
}

void cg_heatmap_size(int src_len, int rows, const char *const *row_labels, const char *const *col_labels, int *w,
                     int *h) {
    int left, top;
    cg_heatmap_margins(src_len, rows, row_labels, col_labels, &left, &top);
    *w = left + src_len * HEATMAP_CELL;
    *h = top + rows * HEATMAP_CELL;
}

void cg_heatmap_color(float weight, uint8_t rgb[3]) {
    /* Sequential blues, light to dark; lightness falls steadily. */
    static const uint8_t stops[5][3] = {
        {247, 251, 255}, {190, 215, 236}, {107, 174, 214}, {33, 113, 181}, {8, 38, 94},
    };
    if (isnan(weight)) {
        rgb[0] = (HEATMAP_NO_DATA >> 16) & 0xFF;
        rgb[1] = (HEATMAP_NO_DATA >> 8) & 0xFF;
        rgb[2] = HEATMAP_NO_DATA & 0xFF;
        return;
    }
    float x = weight < 0 ? 0 : weight > 1 ? 1 : weight;
    float p = x * 4;
    int k = (int)p;
    if (k > 3) k = 3;
    float f = p - (float)k;
    for (int c = 0; c < 3; c++)
        rgb[c] = (uint8_t)((float)stops[k][c] + f * ((float)stops[k + 1][c] - (float)stops[k][c]) + 0.5f);
}

char *cg_heatmap_path(const char *path, int i) {
    size_t len = strlen(path);
    char *out = malloc(len + 16);
    if (!out) return NULL;
    if (i == 0) {
        memcpy(out, path, len + 1);
        return out;
    }
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    size_t at = dot && (!slash || dot > slash) ? (size_t)(dot - path) : len;
    memcpy(out, path, at);
    int k = snprintf(out + at, 16, "-%d", i);
    memcpy(out + at + (size_t)k, path + at, len - at + 1);
    return out;
}

void cg_heatmap_remove(const char *path, int n) {
    for (int i = 0; i < n; i++) {
        char *file = cg_heatmap_path(path, i);
        struct stat st;
        if (file && !stat(file, &st) && S_ISREG(st.st_mode)) remove(file);
        free(file);
    }
}

static int format_of(const char *path) {
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash)) return -1;
    if (!strcasecmp(dot, ".png")) return FMT_PNG;
    if (!strcasecmp(dot, ".svg")) return FMT_SVG;
    if (!strcasecmp(dot, ".json")) return FMT_JSON;
    return -1;
}

/* A token's label, allocated. */
static char *token_label(cg_heatmap_label_fn fn, void *user, int target, int32_t id) {
    const char *t = fn ? fn(user, target, id) : NULL;
    if (t) return strdup(t);
    char buf[24];
    snprintf(buf, sizeof buf, "%d", (int)id);
    return strdup(buf);
}

static void free_labels(char **l, int n) {
    if (!l) return;
    for (int i = 0; i < n; i++) free(l[i]);
    free(l);
}

/* Everything one image needs. */
typedef struct hm_image {
    int index, cols, rows;
    char **col, **row;     /* full labels (tooltips) */
    char **col_d, **row_d; /* labels as drawn */
    const cg_s2s_hyp *hyp; /* NULL: no hypothesis */
    int left, top, w, h;
} hm_image;

static void image_clear(hm_image *im) {
    free_labels(im->col, im->cols);
    free_labels(im->row, im->rows);
    free_labels(im->col_d, im->cols);
    free_labels(im->row_d, im->rows);
}

static cg_status image_prepare(hm_image *im, int index, const cg_s2s_result *r, const int32_t *src, int src_len,
                               cg_heatmap_label_fn fn, void *user) {
    memset(im, 0, sizeof *im);
    im->index = index;
    im->cols = src_len;
    im->hyp = r->n_hyps > 0 && r->hyps ? &r->hyps[0] : NULL;
    if (im->hyp) im->rows = im->hyp->n_steps > im->hyp->n_tokens ? im->hyp->n_steps : im->hyp->n_tokens;
    im->col = calloc((size_t)im->cols + 1, sizeof(char *));
    im->col_d = calloc((size_t)im->cols + 1, sizeof(char *));
    im->row = calloc((size_t)im->rows + 1, sizeof(char *));
    im->row_d = calloc((size_t)im->rows + 1, sizeof(char *));
    if (!im->col || !im->col_d || !im->row || !im->row_d) return no_memory();
    for (int j = 0; j < im->cols; j++) {
        im->col[j] = token_label(fn, user, 0, src[j]);
        if (!im->col[j] || !(im->col_d[j] = display_label(im->col[j]))) return no_memory();
    }
    for (int t = 0; t < im->rows; t++) {
        im->row[t] = t < im->hyp->n_tokens ? token_label(fn, user, 1, im->hyp->tokens[t]) : strdup(HEATMAP_EOS);
        if (!im->row[t] || !(im->row_d[t] = display_label(im->row[t]))) return no_memory();
    }
    cg_heatmap_margins(im->cols, im->rows, (const char *const *)im->row_d, (const char *const *)im->col_d, &im->left,
                       &im->top);
    im->w = im->left + im->cols * HEATMAP_CELL;
    im->h = im->top + im->rows * HEATMAP_CELL;
    return CG_OK;
}

/* The weight of cell (t, j), or NaN when there is none. */
static float cell_weight(const hm_image *im, int t, int j) {
    const cg_s2s_hyp *y = im->hyp;
    if (!y || !y->attention || t >= y->n_steps || j >= im->cols) return NAN;
    return y->attention[(size_t)t * (size_t)im->cols + (size_t)j];
}

static void title_text(const hm_image *im, char *buf, size_t n) {
    if (im->hyp) snprintf(buf, n, "source %d  score %.4f", im->index, im->hyp->score);
    else snprintf(buf, n, "source %d  (no output)", im->index);
}

/* ---------------------------------------------------------------- */
/* PNG                                                               */

#if CG_HAVE_PNG
typedef struct png_err {
    char msg[160];
    int err;
} png_err;

static void png_on_error(png_structp png, png_const_charp msg) {
    png_err *e = png_get_error_ptr(png);
    e->err = errno;
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg;
}

#endif

static void fill_rect(uint8_t *rgb, int w, int x0, int y0, int cw, int ch, const uint8_t c[3]) {
    for (int y = y0; y < y0 + ch; y++)
        for (int x = x0; x < x0 + cw; x++) {
            uint8_t *p = rgb + ((size_t)y * (size_t)w + (size_t)x) * 3;
            p[0] = c[0], p[1] = c[1], p[2] = c[2];
        }
}

static void render(const hm_image *im, uint8_t *rgb) {
    int w = im->w, h = im->h, C = HEATMAP_CELL;
    memset(rgb, 255, (size_t)w * (size_t)h * 3);
    char title[96];
    title_text(im, title, sizeof title);
    font_draw(rgb, w, h, HEATMAP_PAD, HEATMAP_PAD, title, 0, 0, 0);
    for (int j = 0; j < im->cols; j++) {
        const char *l = im->col_d[j];
        int x = im->left + j * C;
        if (font_count(l) == 1)
            font_draw(rgb, w, h, x + (C - 1 - FONT_GLYPH_W) / 2, im->top - HEATMAP_PAD - FONT_H, l, 40, 40, 40);
        else font_draw_up(rgb, w, h, x + (C - 1 - FONT_H) / 2 + 1, im->top - HEATMAP_PAD, l, 40, 40, 40);
    }
    for (int t = 0; t < im->rows; t++) {
        const char *l = im->row_d[t];
        int y = im->top + t * C + (C - 1 - 7) / 2; /* capitals (7 rows) centred */
        font_draw(rgb, w, h, im->left - HEATMAP_PAD - font_width(l), y, l, 40, 40, 40);
        for (int j = 0; j < im->cols; j++) {
            uint8_t c[3];
            cg_heatmap_color(cell_weight(im, t, j), c);
            fill_rect(rgb, w, im->left + j * C, im->top + t * C, C - 1, C - 1, c);
        }
    }
}

#if !CG_HAVE_PNG
/* A build without libpng (-Dpng=disabled) says so where a PNG was asked for. */
static cg_status write_png(const char *path, const uint8_t *rgb, int w, int h, png_bytep *rows) {
    (void)rgb, (void)w, (void)h, (void)rows;
    return fail(CG_ERR_UNSUPPORTED,
                "%s: this build of clgraph has no PNG output (configured with -Dpng=disabled or without libpng): "
                "use .svg or .json",
                path);
}
#else
/* Writes rows of packed RGB; no local is changed after setjmp. */
static cg_status write_png(const char *path, const uint8_t *rgb, int w, int h, png_bytep *rows) {
    for (int y = 0; y < h; y++) rows[y] = (png_bytep)(rgb + (size_t)y * (size_t)w * 3);
    cli_file out;
    FILE *f = cli_file_open(&out, path);
    if (!f) return fail_io(path, "cannot open for writing", errno);
    png_err e;
    memset(&e, 0, sizeof e);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &e, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(png ? &png : NULL, NULL);
        cli_file_abort(&out);
        return no_memory();
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        cli_file_abort(&out);
        if (e.err) return fail_io(path, "cannot write", e.err);
        return fail(CG_ERR_IO, "%s: cannot write: %s", path, e.msg);
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    int err = cli_file_commit(&out);
    return err ? fail_io(path, "cannot write", err) : CG_OK;
}
#endif

cg_status cg_png_write_rgb(const char *path, const uint8_t *rgb, int w, int h) {
    int k = cg_png_scale(w, h), sw = w * k, sh = h * k;
    uint8_t *big = k > 1 ? malloc((size_t)sw * (size_t)sh * 3) : NULL;
    png_bytep *rows = malloc(sizeof *rows * (size_t)sh + 1);
    if (!rows || (k > 1 && !big)) {
        free(big);
        free(rows);
        return no_memory();
    }
    for (int y = 0; k > 1 && y < sh; y++) {
        const uint8_t *from = rgb + (size_t)(y / k) * (size_t)w * 3;
        uint8_t *to = big + (size_t)y * (size_t)sw * 3;
        for (int x = 0; x < sw; x++) memcpy(to + (size_t)x * 3, from + (size_t)(x / k) * 3, 3);
    }
    cg_status st = write_png(path, k > 1 ? big : rgb, sw, sh, rows);
    free(big);
    free(rows);
    return st;
}

static cg_status image_png(const hm_image *im, const char *path) {
    if (im->w > HEATMAP_MAX_SIDE || im->h > HEATMAP_MAX_SIDE)
        return fail(CG_ERR_UNSUPPORTED, "%s: a %d x %d heat map is too large for an image (use .json)", path, im->w,
                    im->h);
    uint8_t *rgb = malloc((size_t)im->w * (size_t)im->h * 3);
    if (!rgb) return no_memory();
    render(im, rgb);
    cg_status st = cg_png_write_rgb(path, rgb, im->w, im->h);
    free(rgb);
    return st;
}

/* ---------------------------------------------------------------- */
/* SVG                                                               */

/* XML text with &<>"' escaped; characters XML cannot hold (controls) are
 * written as their Unicode control pictures, malformed UTF-8 as U+FFFD. */
void cg_xml_text(FILE *f, const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        switch (c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            if (c < 0x20) fprintf(f, "&#x%X;", 0x2400 + c);
            else if (c == 0x7F) fputs("&#x2421;", f);
            else if (c < 0x80) fputc((int)c, f);
            else {
                size_t b = prefix_bytes((const char *)p, 1);
                int len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
                if ((int)b == len) fwrite(p, 1, b, f);
                else fputs("&#xFFFD;", f);
                p += b;
                continue;
            }
        }
        p++;
    }
}

/* A drawn label: a lone space shows as a middle dot, as in the PNG. */
static void xml_label(FILE *f, const char *s) {
    if (!strcmp(s, " ")) fputs("\xC2\xB7", f);
    else cg_xml_text(f, s);
}

static void svg_body(FILE *f, const hm_image *im) {
    int C = HEATMAP_CELL;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"monospace\" font-size=\"10\" style=\"background:#ffffff\">\n",
            im->w, im->h, im->w, im->h);
    char title[96];
    title_text(im, title, sizeof title);
    fprintf(f, "<text x=\"%d\" y=\"%d\" dominant-baseline=\"hanging\" fill=\"#000000\" style=\"white-space:pre\">",
            HEATMAP_PAD, HEATMAP_PAD);
    cg_xml_text(f, title);
    fputs("</text>\n<g fill=\"#282828\">\n", f);
    for (int j = 0; j < im->cols; j++) {
        int x = im->left + j * C + (C - 1) / 2, y = im->top - HEATMAP_PAD;
        if (font_count(im->col_d[j]) == 1) fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", x, y - 2);
        else
            fprintf(f, "<text x=\"%d\" y=\"%d\" transform=\"rotate(-90 %d %d)\" dominant-baseline=\"central\">", x, y,
                    x, y);
        xml_label(f, im->col_d[j]);
        fputs("</text>\n", f);
    }
    for (int t = 0; t < im->rows; t++) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" dominant-baseline=\"central\">", im->left - HEATMAP_PAD,
                im->top + t * C + (C - 1) / 2);
        xml_label(f, im->row_d[t]);
        fputs("</text>\n", f);
    }
    fputs("</g>\n", f);
    for (int t = 0; t < im->rows; t++)
        for (int j = 0; j < im->cols; j++) {
            float wt = cell_weight(im, t, j);
            uint8_t c[3];
            cg_heatmap_color(wt, c);
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%02x%02x%02x\"><title>out '",
                    im->left + j * C, im->top + t * C, C - 1, C - 1, c[0], c[1], c[2]);
            cg_xml_text(f, im->row[t]);
            fputs("' / src '", f);
            cg_xml_text(f, im->col[j]);
            if (isnan(wt)) fputs("': no weight", f);
            else fprintf(f, "': %.4f", (double)wt);
            fputs("</title></rect>\n", f);
        }
    fputs("</svg>\n", f);
}

static cg_status close_checked(cli_file *out, const char *path) {
    int err = cli_file_commit(out);
    return err ? fail_io(path, "cannot write", err) : CG_OK;
}

static cg_status image_svg(const hm_image *im, const char *path) {
    cli_file out;
    FILE *f = cli_file_open(&out, path);
    if (!f) return fail_io(path, "cannot open for writing", errno);
    errno = 0;
    svg_body(f, im);
    return close_checked(&out, path);
}

/* ---------------------------------------------------------------- */
/* JSON                                                              */

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"') fputs("\\\"", f);
        else if (*p == '\\') fputs("\\\\", f);
        else if (*p == '\n') fputs("\\n", f);
        else if (*p == '\t') fputs("\\t", f);
        else if (*p == '\r') fputs("\\r", f);
        else if (*p < 0x20 || *p == 0x7F) fprintf(f, "\\u%04x", *p);
        else if (*p < 0x80) fputc(*p, f);
        else {
            /* UTF-8 as it is; a malformed byte becomes U+FFFD */
            unsigned c = *p;
            int len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
            size_t b = prefix_bytes((const char *)p, 1);
            if ((int)b == len) fwrite(p, 1, b, f);
            else fputs("\\ufffd", f);
            p += b - 1;
        }
    }
    fputc('"', f);
}

static void json_token(FILE *f, cg_heatmap_label_fn fn, void *user, int target, int32_t id, int *oom) {
    if (!fn) {
        fprintf(f, "%d", (int)id);
        return;
    }
    char *l = token_label(fn, user, target, id);
    if (!l) {
        *oom = 1;
        fputs("null", f);
        return;
    }
    json_string(f, l);
    free(l);
}

static void json_number(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.6g", v);
    else fputs("null", f);
}

static cg_status write_json(const char *path, const cg_s2s_result *res, int32_t *const *src, const int *src_len, int n,
                            cg_heatmap_label_fn fn, void *user) {
    cli_file out;
    FILE *f = cli_file_open(&out, path);
    if (!f) return fail_io(path, "cannot open for writing", errno);
    errno = 0;
    int oom = 0;
    fputs("{\"sources\": [", f);
    for (int i = 0; i < n; i++) {
        const cg_s2s_result *r = &res[i];
        fprintf(f, "%s\n  {\"index\": %d, \"source\": [", i ? "," : "", i);
        for (int j = 0; j < src_len[i]; j++) {
            if (j) fputs(", ", f);
            json_token(f, fn, user, 0, src[i][j], &oom);
        }
        fputs("], \"hypotheses\": [", f);
        for (int h = 0; h < r->n_hyps; h++) {
            const cg_s2s_hyp *y = &r->hyps[h];
            fprintf(f, "%s\n    {\"output\": [", h ? "," : "");
            for (int t = 0; t < y->n_tokens; t++) {
                if (t) fputs(", ", f);
                json_token(f, fn, user, 1, y->tokens[t], &oom);
            }
            fputs("], \"score\": ", f);
            json_number(f, y->score);
            fprintf(f, ", \"eos\": %s, \"attention\": [", y->n_steps > y->n_tokens ? "true" : "false");
            if (y->attention || src_len[i] == 0)
                for (int t = 0; t < y->n_steps; t++) {
                    fputs(t ? ",\n      [" : "\n      [", f);
                    for (int j = 0; y->attention && j < src_len[i]; j++) {
                        if (j) fputs(", ", f);
                        json_number(f, y->attention[(size_t)t * (size_t)src_len[i] + (size_t)j]);
                    }
                    fputc(']', f);
                }
            fputs("]}", f);
        }
        fputs(r->n_hyps ? "\n  ]}" : "]}", f);
    }
    fputs(n ? "\n]}\n" : "]}\n", f);
    if (oom) { /* a file with nulls for labels is not the heat map asked for */
        cli_file_abort(&out);
        return no_memory();
    }
    return close_checked(&out, path);
}

/* ---------------------------------------------------------------- */

cg_status cg_heatmap_write_labels(const char *path, const cg_s2s_result *res, int32_t *const *src, const int *src_len,
                                  int n, cg_heatmap_label_fn label, void *user) {
    if (!path) return fail(CG_ERR_INVALID_ARGUMENT, "no heat map file given");
    int fmt = format_of(path);
    if (fmt < 0) return fail(CG_ERR_INVALID_ARGUMENT, "%s: unknown heat map format (use .png, .svg or .json)", path);
    if (n < 0 || (n > 0 && (!res || !src || !src_len)))
        return fail(CG_ERR_INVALID_ARGUMENT, "%s: no translations to draw", path);
    for (int i = 0; i < n; i++) {
        if (src_len[i] < 0 || (src_len[i] > 0 && !src[i]) || res[i].src_len != src_len[i] || res[i].n_hyps < 0 ||
            (res[i].n_hyps > 0 && !res[i].hyps))
            return fail(CG_ERR_INVALID_ARGUMENT, "%s: source %d: attention does not match the source", path, i);
        for (int h = 0; h < res[i].n_hyps; h++) {
            const cg_s2s_hyp *y = &res[i].hyps[h];
            if (y->n_tokens < 0 || y->n_steps < 0 || (y->n_tokens > 0 && !y->tokens))
                return fail(CG_ERR_INVALID_ARGUMENT, "%s: source %d: malformed hypothesis %d", path, i, h);
        }
    }
    if (fmt == FMT_JSON) return write_json(path, res, src, src_len, n, label, user);
    for (int i = 0; i < n; i++) {
        char *file = cg_heatmap_path(path, i);
        if (!file) return no_memory();
        hm_image im;
        cg_status st = image_prepare(&im, i, &res[i], src[i], src_len[i], label, user);
        if (st == CG_OK) st = fmt == FMT_PNG ? image_png(&im, file) : image_svg(&im, file);
        image_clear(&im);
        free(file);
        if (st != CG_OK) {
            cg_heatmap_remove(path, i);
            return st;
        }
    }
    return CG_OK;
}

static const char *model_label(void *user, int target, int32_t id) {
    return user ? cg_s2s_token((const cg_s2s *)user, target, id) : NULL;
}

cg_status cg_heatmap_write(const cg_s2s *m, const char *path, const cg_s2s_result *res, int32_t *const *src,
                           const int *src_len, int n, int ids) {
    return cg_heatmap_write_labels(path, res, src, src_len, n, ids ? NULL : model_label, (void *)m);
}
