/* Attention heat maps (tools/clgraph/heatmap.c, font.c, built into this test):
 * PNG size from the documented layout and cell colours read back with
 * libpng, SVG cells and escaping, JSON read back with cJSON, one file per
 * source, empty sources and missing attention, and the error messages.
 * With CG_HEATMAP_OUT=DIR set, the date and word examples are also written
 * there (dates.png, words.png, dates.svg) for a look. */
#include "heatmap.h"

#include <check.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Fixture: a fresh temporary directory per test                       */

static void setup(void) { tu_setup_dir("heatmap"); }

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

static int count_of(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* stderr into a file while a call runs */
static int g_saved_err = -1;
static char g_err_path[600];

static void capture_begin(void) {
    snprintf(g_err_path, sizeof g_err_path, "%s/stderr.txt", tu_dir);
    fflush(stderr);
    g_saved_err = dup(2);
    int fd = open(g_err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    dup2(fd, 2);
    close(fd);
}

static char *capture_end(void) {
    fflush(stderr);
    dup2(g_saved_err, 2);
    close(g_saved_err);
    char *s = slurp(g_err_path);
    unlink(g_err_path);
    return s;
}

/* A PNG read back as 8-bit RGB; checks it was written as RGB. */
static uint8_t *read_png(const char *path, int *w, int *h) {
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    ck_assert_msg(png_image_begin_read_from_file(&img, path), "%s: %s", path, img.message);
    ck_assert_uint_eq(img.format, PNG_FORMAT_RGB);
    uint8_t *rgb = malloc(PNG_IMAGE_SIZE(img));
    ck_assert_ptr_nonnull(rgb);
    ck_assert(png_image_finish_read(&img, NULL, rgb, 0, NULL));
    /* Written at cg_png_scale times the layout: every pixel of the layout
     * a k x k block of one colour. Read back at the layout's size. */
    int W = (int)img.width, H = (int)img.height, k = HEATMAP_PNG_SCALE;
    ck_assert_msg(W % k == 0 && H % k == 0 && cg_png_scale(W / k, H / k) == k, "%s: %d x %d is not scaled by %d", path,
                  W, H, k);
    *w = W / k;
    *h = H / k;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            ck_assert_msg(!memcmp(rgb + ((size_t)y * (size_t)W + (size_t)x) * 3,
                                  rgb + ((size_t)(y - y % k) * (size_t)W + (size_t)(x - x % k)) * 3, 3),
                          "%s: pixel (%d, %d) differs from its block's", path, x, y);
    for (int y = 0; y < *h; y++)
        for (int x = 0; x < *w; x++)
            memmove(rgb + ((size_t)y * (size_t)*w + (size_t)x) * 3,
                    rgb + ((size_t)y * k * (size_t)W + (size_t)x * k) * 3, 3);
    return rgb;
}

static const uint8_t *pixel(const uint8_t *rgb, int w, int x, int y) {
    return rgb + ((size_t)y * (size_t)w + (size_t)x) * 3;
}

/* ------------------------------------------------------------------ */
/* Vocabularies for labels                                             */

typedef struct vocab {
    const char *const *src;
    int n_src;
    const char *const *tgt;
    int n_tgt;
} vocab;

static const char *vocab_label(void *user, int target, int32_t id) {
    const vocab *v = user;
    if (target) return id >= 0 && id < v->n_tgt ? v->tgt[id] : NULL;
    return id >= 0 && id < v->n_src ? v->src[id] : NULL;
}

/* ------------------------------------------------------------------ */
/* The layout formula                                                  */

/* One source of 5 ids, 3 output tokens + EOS; weights: row t has 1.0 in
 * column t and 0 elsewhere (the EOS row: 1.0 in the last column). */
static int32_t g_src[5] = {1, 22, 333, 4, 5};
static int32_t g_out[3] = {7, 88, 9};
static float g_att[4 * 5];
static cg_s2s_hyp g_hyp;
static cg_s2s_result g_res;

static void make_simple(void) {
    for (int t = 0; t < 4; t++)
        for (int j = 0; j < 5; j++) g_att[t * 5 + j] = (t < 3 ? j == t : j == 4) ? 1.0f : 0.0f;
    g_hyp = (cg_s2s_hyp){.tokens = g_out, .n_tokens = 3, .score = -0.25, .attention = g_att, .n_steps = 4};
    g_res = (cg_s2s_result){.n_hyps = 1, .hyps = &g_hyp, .src_len = 5};
}

START_TEST(test_png_size_and_colours) {
    make_simple();
    int32_t *src[1] = {g_src};
    int len[1] = {5};
    const char *path = tu_path("map.png");
    ck_assert_int_eq(cg_heatmap_write(NULL, path, &g_res, src, len, 1, 1), CG_OK);
    int w, h;
    uint8_t *rgb = read_png(path, &w, &h);
    /* Written out from heatmap.h: row labels "7" "88" "9" "</s>" -> row_w
     * 4 * 6 = 24; column labels "1" "22" "333" "4" "5" -> col_h 3 * 6 = 18;
     * left = max(2 * 4 + 24, 164 - 5 * 14) = 94; top = 3 * 4 + 9 + 18 = 39. */
    ck_assert_int_eq(w, 94 + 5 * 14);
    ck_assert_int_eq(h, 39 + 4 * 14);
    const char *rows[4] = {"7", "88", "9", "</s>"}, *cols[5] = {"1", "22", "333", "4", "5"};
    int fw, fh, left, top;
    cg_heatmap_size(5, 4, rows, cols, &fw, &fh);
    cg_heatmap_margins(5, 4, rows, cols, &left, &top);
    ck_assert_int_eq(fw, w);
    ck_assert_int_eq(fh, h);
    ck_assert_int_eq(left, 94);
    ck_assert_int_eq(top, 39);
    uint8_t one[3], zero[3];
    cg_heatmap_color(1.0f, one);
    cg_heatmap_color(0.0f, zero);
    ck_assert_int_lt(one[0] + one[1] + one[2], 300);    /* dark */
    ck_assert_int_gt(zero[0] + zero[1] + zero[2], 700); /* near white */
    ck_assert_int_gt(one[2], one[0]);                   /* blue */
    for (int t = 0; t < 4; t++)
        for (int j = 0; j < 5; j++) {
            const uint8_t *want = g_att[t * 5 + j] > 0.5f ? one : zero;
            /* the centre and both ends of the coloured part of the cell */
            int xs[3] = {left + j * 14 + 6, left + j * 14, left + j * 14 + 12};
            int ys[3] = {top + t * 14 + 6, top + t * 14, top + t * 14 + 12};
            for (int k = 0; k < 3; k++) {
                const uint8_t *p = pixel(rgb, w, xs[k], ys[k]);
                ck_assert_msg(p[0] == want[0] && p[1] == want[1] && p[2] == want[2],
                              "cell (%d, %d) at (%d, %d): %d %d %d", t, j, xs[k], ys[k], p[0], p[1], p[2]);
            }
            /* the grid line after the cell stays white */
            const uint8_t *g = pixel(rgb, w, left + j * 14 + 13, top + t * 14 + 6);
            ck_assert(g[0] == 255 && g[1] == 255 && g[2] == 255);
        }
    /* labels are drawn: something dark left of row 0 and above column 2 */
    int dark = 0;
    for (int y = top; y < top + 14; y++)
        for (int x = 0; x < left; x++) dark += pixel(rgb, w, x, y)[0] < 128;
    ck_assert_int_gt(dark, 3);
    dark = 0;
    for (int y = 0; y < top; y++)
        for (int x = left + 2 * 14; x < left + 3 * 14; x++) dark += pixel(rgb, w, x, y)[0] < 128;
    ck_assert_int_gt(dark, 10);
    free(rgb);
}
END_TEST

START_TEST(test_colour_map) {
    uint8_t a[3], b[3], c[3];
    cg_heatmap_color(-3.0f, a);
    cg_heatmap_color(0.0f, b);
    ck_assert(a[0] == b[0] && a[1] == b[1] && a[2] == b[2]);
    cg_heatmap_color(7.0f, a);
    cg_heatmap_color(1.0f, b);
    ck_assert(a[0] == b[0] && a[1] == b[1] && a[2] == b[2]);
    /* darker as the weight grows (sum of channels falls monotonically) */
    int prev = 1000;
    for (int i = 0; i <= 100; i++) {
        cg_heatmap_color((float)i / 100.0f, c);
        int s = c[0] + c[1] + c[2];
        ck_assert_int_le(s, prev);
        prev = s;
    }
    cg_heatmap_color(NAN, c);
    ck_assert(c[0] == 0xDD && c[1] == 0xDD && c[2] == 0xDD);
}
END_TEST

/* Long labels set the left margin; they are cut to HEATMAP_MAX_LABEL. */
START_TEST(test_png_long_labels) {
    static const char *const sv[] = {"the", "quick", "brown", "fox", "a-really-extraordinarily-long-word"};
    static const char *const tv[] = {"der", "schnelle", "braune", "Fuchs", "ein-wirklich-ungewoehnlich-langes-Wort"};
    vocab v = {sv, 5, tv, 5};
    int32_t s0[5] = {0, 1, 2, 3, 4}, out[5] = {0, 1, 2, 3, 4};
    float att[6 * 5];
    for (int k = 0; k < 30; k++) att[k] = (float)(k % 7) / 6.0f;
    cg_s2s_hyp y = {.tokens = out, .n_tokens = 5, .score = -1.5, .attention = att, .n_steps = 6};
    cg_s2s_result r = {.n_hyps = 1, .hyps = &y, .src_len = 5};
    int32_t *src[1] = {s0};
    int len[1] = {5};
    const char *path = tu_path("words.png");
    ck_assert_int_eq(cg_heatmap_write_labels(path, &r, src, len, 1, vocab_label, &v), CG_OK);
    int w, h;
    uint8_t *rgb = read_png(path, &w, &h);
    /* 38 and 34 code points -> 20 drawn: row_w = col_h = 120 */
    ck_assert_int_eq(w, 8 + 120 + 5 * 14);
    ck_assert_int_eq(h, 12 + 9 + 120 + 6 * 14);
    free(rgb);
}
END_TEST

/* ------------------------------------------------------------------ */
/* SVG                                                                 */

START_TEST(test_svg) {
    static const char *const sv[] = {"a<b", "&", "\"q\"", "it's", "\x01", " "};
    static const char *const tv[] = {"x>y", "z"};
    vocab v = {sv, 6, tv, 2};
    int32_t s0[6] = {0, 1, 2, 3, 4, 5}, out[2] = {0, 1};
    float att[3 * 6] = {0};
    att[0] = 0.123449f;
    cg_s2s_hyp y = {.tokens = out, .n_tokens = 2, .score = -2, .attention = att, .n_steps = 3};
    cg_s2s_result r = {.n_hyps = 1, .hyps = &y, .src_len = 6};
    int32_t *src[1] = {s0};
    int len[1] = {6};
    const char *path = tu_path("map.svg");
    ck_assert_int_eq(cg_heatmap_write_labels(path, &r, src, len, 1, vocab_label, &v), CG_OK);
    char *s = slurp(path);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(count_of(s, "<rect "), 3 * 6);
    ck_assert_int_eq(count_of(s, "<title>"), 3 * 6);
    ck_assert_int_eq(count_of(s, "</svg>"), 1);
    const char *rows[3] = {"x>y", "z", "</s>"}, *cols[6] = {"a<b", "&", "\"q\"", "it's", "\x01", " "};
    int w, hh;
    cg_heatmap_size(6, 3, rows, cols, &w, &hh);
    char attr[64];
    snprintf(attr, sizeof attr, "width=\"%d\" height=\"%d\"", w, hh);
    ck_assert_msg(strstr(s, attr), "missing %s", attr);
    /* escaped labels and tooltips; nothing raw */
    ck_assert_ptr_nonnull(strstr(s, ">a&lt;b</text>"));
    ck_assert_ptr_nonnull(strstr(s, ">&amp;</text>"));
    ck_assert_ptr_nonnull(strstr(s, ">&quot;q&quot;</text>"));
    ck_assert_ptr_nonnull(strstr(s, ">it&apos;s</text>"));
    ck_assert_ptr_nonnull(strstr(s, ">&#x2401;</text>")); /* a control character's picture */
    ck_assert_ptr_nonnull(strstr(s, ">\xC2\xB7</text>")); /* the space token as a middle dot */
    ck_assert_ptr_nonnull(strstr(s, ">x&gt;y</text>"));
    ck_assert_ptr_nonnull(strstr(s, "<title>out 'x&gt;y' / src 'a&lt;b': 0.1234</title>"));
    ck_assert_ptr_nonnull(strstr(s, "<title>out '&lt;/s&gt;' / src ' ': 0.0000</title>"));
    ck_assert_ptr_null(strstr(s, "a<b"));
    ck_assert_ptr_null(strstr(s, "\x01"));
    ck_assert_int_eq(count_of(s, "&lt;/s&gt;"), 1 + 6); /* EOS row label and its tooltips */
    free(s);
}
END_TEST

/* ------------------------------------------------------------------ */
/* JSON                                                                */

static cJSON *read_json(const char *path) {
    char *s = slurp(path);
    ck_assert_ptr_nonnull(s);
    cJSON *j = cJSON_Parse(s);
    ck_assert_msg(j != NULL, "%s does not parse: %s", path, s);
    free(s);
    return j;
}

START_TEST(test_json) {
    static const char *const sv[] = {"a\"b", "c\\d", "e\x01", "f"};
    static const char *const tv[] = {"x", "\xC3\xA9t\xC3\xA9", "\n"};
    vocab v = {sv, 4, tv, 3};
    /* source 0: 4 tokens, two hypotheses (EOS and not); source 1: empty */
    int32_t s0[4] = {0, 1, 2, 3}, o0[2] = {1, 2}, o1[3] = {0, 0, 0}, o2[1] = {0};
    float a0[3 * 4], a1[3 * 4];
    for (int k = 0; k < 12; k++) a0[k] = (float)k / 11.0f + 1e-7f, a1[k] = 1.0f / (float)(k + 3);
    cg_s2s_hyp h0[2] = {{.tokens = o0, .n_tokens = 2, .score = -0.5, .attention = a0, .n_steps = 3},
                        {.tokens = o1, .n_tokens = 3, .score = -1.75, .attention = a1, .n_steps = 3}};
    cg_s2s_hyp h1[1] = {{.tokens = o2, .n_tokens = 1, .score = -3, .attention = NULL, .n_steps = 2}};
    cg_s2s_result r[2] = {{.n_hyps = 2, .hyps = h0, .src_len = 4}, {.n_hyps = 1, .hyps = h1, .src_len = 0}};
    int32_t *src[2] = {s0, NULL};
    int len[2] = {4, 0};
    const char *path = tu_path("att.json");
    ck_assert_int_eq(cg_heatmap_write_labels(path, r, src, len, 2, vocab_label, &v), CG_OK);
    char *text = slurp(path);
    ck_assert_ptr_nonnull(strstr(text, "\"e\\u0001\""));
    free(text);
    cJSON *j = read_json(path);
    cJSON *sources = cJSON_GetObjectItemCaseSensitive(j, "sources");
    ck_assert(cJSON_IsArray(sources));
    ck_assert_int_eq(cJSON_GetArraySize(sources), 2);
    cJSON *x0 = cJSON_GetArrayItem(sources, 0);
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(x0, "index")->valueint, 0);
    cJSON *stoks = cJSON_GetObjectItemCaseSensitive(x0, "source");
    ck_assert_int_eq(cJSON_GetArraySize(stoks), 4);
    for (int k = 0; k < 4; k++) ck_assert_str_eq(cJSON_GetArrayItem(stoks, k)->valuestring, sv[k]);
    cJSON *hyps = cJSON_GetObjectItemCaseSensitive(x0, "hypotheses");
    ck_assert_int_eq(cJSON_GetArraySize(hyps), 2);
    for (int hi = 0; hi < 2; hi++) {
        cJSON *hy = cJSON_GetArrayItem(hyps, hi);
        cJSON *out = cJSON_GetObjectItemCaseSensitive(hy, "output");
        ck_assert_int_eq(cJSON_GetArraySize(out), h0[hi].n_tokens);
        for (int t = 0; t < h0[hi].n_tokens; t++)
            ck_assert_str_eq(cJSON_GetArrayItem(out, t)->valuestring, tv[h0[hi].tokens[t]]);
        ck_assert_double_eq_tol(cJSON_GetObjectItemCaseSensitive(hy, "score")->valuedouble, h0[hi].score, 1e-9);
        ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(hy, "eos")) == (hi == 0));
        cJSON *att = cJSON_GetObjectItemCaseSensitive(hy, "attention");
        ck_assert_int_eq(cJSON_GetArraySize(att), 3);
        for (int t = 0; t < 3; t++) {
            cJSON *row = cJSON_GetArrayItem(att, t);
            ck_assert_int_eq(cJSON_GetArraySize(row), 4);
            for (int k = 0; k < 4; k++)
                ck_assert_double_eq_tol(cJSON_GetArrayItem(row, k)->valuedouble, h0[hi].attention[t * 4 + k], 1e-6);
        }
    }
    /* the empty source: no tokens, two empty rows */
    cJSON *x1 = cJSON_GetArrayItem(sources, 1);
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(x1, "index")->valueint, 1);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(x1, "source")), 0);
    cJSON *hy = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(x1, "hypotheses"), 0);
    cJSON *att = cJSON_GetObjectItemCaseSensitive(hy, "attention");
    ck_assert_int_eq(cJSON_GetArraySize(att), 2);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetArrayItem(att, 0)), 0);
    cJSON_Delete(j);
}
END_TEST

START_TEST(test_json_ids) {
    make_simple();
    g_att[0] = 0.1234567f;
    int32_t *src[1] = {g_src};
    int len[1] = {5};
    const char *path = tu_path("ids.json");
    ck_assert_int_eq(cg_heatmap_write(NULL, path, &g_res, src, len, 1, 1), CG_OK);
    cJSON *j = read_json(path);
    cJSON *x0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "sources"), 0);
    cJSON *stoks = cJSON_GetObjectItemCaseSensitive(x0, "source");
    for (int k = 0; k < 5; k++) {
        ck_assert(cJSON_IsNumber(cJSON_GetArrayItem(stoks, k)));
        ck_assert_int_eq(cJSON_GetArrayItem(stoks, k)->valueint, g_src[k]);
    }
    cJSON *hy = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(x0, "hypotheses"), 0);
    ck_assert_int_eq(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(hy, "output"), 1)->valueint, 88);
    cJSON *row0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(hy, "attention"), 0);
    ck_assert_double_eq_tol(cJSON_GetArrayItem(row0, 0)->valuedouble, 0.1234567, 1e-6);
    cJSON_Delete(j);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Files per source, empty sources, errors                             */

START_TEST(test_file_per_source) {
    make_simple();
    int32_t *src[3] = {g_src, g_src, g_src};
    int len[3] = {5, 5, 5};
    cg_s2s_result r[3] = {g_res, g_res, g_res};
    ck_assert_int_eq(cg_heatmap_write(NULL, tu_path("map.png"), r, src, len, 3, 1), CG_OK);
    ck_assert(exists(tu_path("map.png")));
    ck_assert(exists(tu_path("map-1.png")));
    ck_assert(exists(tu_path("map-2.png")));
    ck_assert(!exists(tu_path("map-0.png")));
    ck_assert(!exists(tu_path("map-3.png")));
    ck_assert_int_eq(cg_heatmap_write(NULL, tu_path("m.v2.svg"), r, src, len, 2, 1), CG_OK);
    ck_assert(exists(tu_path("m.v2.svg")));
    ck_assert(exists(tu_path("m.v2-1.svg")));
    /* JSON: one file for all */
    ck_assert_int_eq(cg_heatmap_write(NULL, tu_path("all.json"), r, src, len, 3, 1), CG_OK);
    ck_assert(!exists(tu_path("all-1.json")));
    char *p = cg_heatmap_path("a.b/map", 12);
    ck_assert_str_eq(p, "a.b/map-12");
    free(p);
    p = cg_heatmap_path("a.b/map.PNG", 3);
    ck_assert_str_eq(p, "a.b/map-3.PNG");
    free(p);
    p = cg_heatmap_path("map.svg", 0);
    ck_assert_str_eq(p, "map.svg");
    free(p);
}
END_TEST

START_TEST(test_empty_and_no_attention) {
    /* source 0: empty, ended with EOS right away; source 1: no attention;
     * source 2: no hypothesis at all */
    int32_t s1[2] = {3, 4}, o1[1] = {5};
    cg_s2s_hyp h0 = {.tokens = NULL, .n_tokens = 0, .score = -0.1, .attention = NULL, .n_steps = 1};
    cg_s2s_hyp h1 = {.tokens = o1, .n_tokens = 1, .score = -0.2, .attention = NULL, .n_steps = 2};
    cg_s2s_result r[3] = {{.n_hyps = 1, .hyps = &h0, .src_len = 0},
                          {.n_hyps = 1, .hyps = &h1, .src_len = 2},
                          {.n_hyps = 0, .hyps = NULL, .src_len = 2}};
    int32_t *src[3] = {NULL, s1, s1};
    int len[3] = {0, 2, 2};
    ck_assert_int_eq(cg_heatmap_write(NULL, tu_path("e.png"), r, src, len, 3, 1), CG_OK);
    int w, h;
    uint8_t *rgb = read_png(tu_path("e.png"), &w, &h);
    ck_assert_int_eq(w, HEATMAP_MIN_WIDTH);  /* no columns: the title's width */
    ck_assert_int_eq(h, 3 * 4 + 9 + 1 * 14); /* no column labels, the EOS row */
    free(rgb);
    rgb = read_png(tu_path("e-1.png"), &w, &h);
    int left, top;
    const char *rows[2] = {"5", "</s>"}, *cols[2] = {"3", "4"};
    cg_heatmap_margins(2, 2, rows, cols, &left, &top);
    ck_assert_int_eq(w, left + 2 * 14);
    ck_assert_int_eq(h, top + 2 * 14);
    const uint8_t *p = pixel(rgb, w, left + 6, top + 6);
    ck_assert(p[0] == 0xDD && p[1] == 0xDD && p[2] == 0xDD); /* no weight: grey */
    free(rgb);
    rgb = read_png(tu_path("e-2.png"), &w, &h);
    ck_assert_int_eq(h, 3 * 4 + 9 + 9); /* column labels only */
    free(rgb);
    ck_assert_int_eq(cg_heatmap_write(NULL, tu_path("e.svg"), r, src, len, 3, 1), CG_OK);
    char *s = slurp(tu_path("e.svg"));
    ck_assert_int_eq(count_of(s, "<rect "), 0);
    free(s);
    s = slurp(tu_path("e-1.svg"));
    ck_assert_int_eq(count_of(s, "<rect "), 4);
    ck_assert_int_eq(count_of(s, "no weight"), 4);
    free(s);
    ck_assert_int_eq(cg_heatmap_write(NULL, tu_path("e.json"), r, src, len, 3, 1), CG_OK);
    cJSON *j = read_json(tu_path("e.json"));
    cJSON *ss = cJSON_GetObjectItemCaseSensitive(j, "sources");
    ck_assert_int_eq(cJSON_GetArraySize(ss), 3);
    cJSON *a0 = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ss, 0), "hypotheses"), 0), "attention");
    ck_assert_int_eq(cJSON_GetArraySize(a0), 1);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetArrayItem(a0, 0)), 0);
    cJSON *a1 = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ss, 1), "hypotheses"), 0), "attention");
    ck_assert_int_eq(cJSON_GetArraySize(a1), 0);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ss, 2), "hypotheses")), 0);
    cJSON_Delete(j);
}
END_TEST

START_TEST(test_errors) {
    make_simple();
    int32_t *src[1] = {g_src};
    int len[1] = {5};
    capture_begin();
    cg_status st = cg_heatmap_write(NULL, tu_path("map.gif"), &g_res, src, len, 1, 1);
    char *msg = capture_end();
    ck_assert_int_eq(st, CG_ERR_INVALID_ARGUMENT);
    char want[800];
    snprintf(want, sizeof want, "clgraph: %s: unknown heat map format (use .png, .svg or .json)\n", tu_path("map.gif"));
    ck_assert_str_eq(msg, want);
    ck_assert(!exists(tu_path("map.gif")));
    free(msg);

    capture_begin();
    st = cg_heatmap_write(NULL, tu_path("noext"), &g_res, src, len, 1, 1);
    free(capture_end());
    ck_assert_int_eq(st, CG_ERR_INVALID_ARGUMENT);

    const char *bad[3] = {"no/such/dir/map.png", "no/such/dir/map.svg", "no/such/dir/map.json"};
    for (int k = 0; k < 3; k++) {
        capture_begin();
        st = cg_heatmap_write(NULL, tu_path(bad[k]), &g_res, src, len, 1, 1);
        msg = capture_end();
        ck_assert_int_eq(st, CG_ERR_IO);
        ck_assert_msg(strstr(msg, tu_path(bad[k])) && strstr(msg, strerror(ENOENT)) && !strncmp(msg, "clgraph: ", 9),
                      "message: %s", msg);
        free(msg);
    }

    /* a source length that does not match the result */
    len[0] = 4;
    capture_begin();
    st = cg_heatmap_write(NULL, tu_path("x.png"), &g_res, src, len, 1, 1);
    free(capture_end());
    ck_assert_int_eq(st, CG_ERR_INVALID_ARGUMENT);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Font                                                                */

static int lit(const uint8_t *rgb, int w, int x0, int y0, int x1, int y1) {
    int n = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) n += pixel(rgb, w, x, y)[0] == 0;
    return n;
}

START_TEST(test_font) {
    ck_assert_int_eq(font_count("abc"), 3);
    ck_assert_int_eq(font_count("\xC3\xA9t\xE2\x82\xAC"), 3); /* é t € */
    ck_assert_int_eq(font_count("\xFF\x80"), 2);              /* malformed: a box per byte */
    ck_assert_int_eq(font_width("2026-11-22"), 10 * FONT_ADV);
    int w = 40, h = 12;
    uint8_t *rgb = malloc((size_t)w * h * 3);
    /* every printable glyph lights something, within its 5 x 9 cell */
    for (int c = 33; c < 127; c++) {
        memset(rgb, 255, (size_t)w * h * 3);
        char s[2] = {(char)c, 0};
        font_draw(rgb, w, h, 1, 1, s, 0, 0, 0);
        ck_assert_msg(lit(rgb, w, 1, 1, 6, 10) > 0, "glyph %d is empty", c);
        ck_assert_int_eq(lit(rgb, w, 0, 0, w, h), lit(rgb, w, 1, 1, 6, 10));
    }
    /* a lone space is a visible dot; spaces in text are blank */
    memset(rgb, 255, (size_t)w * h * 3);
    font_draw(rgb, w, h, 0, 0, " ", 0, 0, 0);
    ck_assert_int_gt(lit(rgb, w, 0, 0, w, h), 0);
    memset(rgb, 255, (size_t)w * h * 3);
    font_draw(rgb, w, h, 0, 0, "a b", 0, 0, 0);
    ck_assert_int_eq(lit(rgb, w, FONT_ADV, 0, 2 * FONT_ADV, h), 0);
    /* non-ASCII: a hollow box per code point, 2 code points here */
    memset(rgb, 255, (size_t)w * h * 3);
    font_draw(rgb, w, h, 0, 0, "\xC3\xA9\xE2\x82\xAC", 0, 0, 0);
    ck_assert_int_eq(lit(rgb, w, 0, 0, FONT_ADV, h), lit(rgb, w, FONT_ADV, 0, 2 * FONT_ADV, h));
    ck_assert_int_eq(lit(rgb, w, 2 * FONT_ADV, 0, w, h), 0);
    ck_assert_int_eq(pixel(rgb, w, 2, 3)[0], 255); /* hollow */
    /* clipped at the edges without writing outside */
    font_draw(rgb, w, h, -3, -4, "WWWWWWWWWWWW", 0, 0, 0);
    font_draw_up(rgb, w, h, w - 2, 5, "MMMMMMMM", 0, 0, 0);
    /* turned text: 'l' standing upright becomes a horizontal bar */
    memset(rgb, 255, (size_t)w * h * 3);
    font_draw_up(rgb, w, h, 0, 10, "|", 0, 0, 0);
    ck_assert_int_eq(lit(rgb, w, 0, 0, w, h), 8);
    ck_assert_int_eq(lit(rgb, w, 0, 7, 8, 8), 8); /* the bar of '|' (column 2 of the glyph) on row 10 - 1 - 2 */
    free(rgb);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Examples to look at (CG_HEATMAP_OUT)                                */

START_TEST(test_examples) {
    const char *out = getenv("CG_HEATMAP_OUT");
    char dir[600];
    snprintf(dir, sizeof dir, "%s", out && *out ? out : tu_dir);
    /* char tokens: "22 November 2026" -> "2026-11-22" */
    const char *stext = "22 November 2026", *otext = "2026-11-22";
    static char sv[16][2], tv[10][2];
    static const char *svp[16], *tvp[10];
    int32_t s0[16], o0[10];
    for (int k = 0; k < 16; k++) sv[k][0] = stext[k], svp[k] = sv[k], s0[k] = k;
    for (int k = 0; k < 10; k++) tv[k][0] = otext[k], tvp[k] = tv[k], o0[k] = k;
    vocab v = {svp, 16, tvp, 10};
    /* where each output character looks (a peak and its neighbours) */
    static const int focus[11] = {12, 13, 14, 15, 11, 5, 8, 2, 0, 1, 15};
    float att[11 * 16];
    for (int t = 0; t < 11; t++) {
        float sum = 0;
        for (int j = 0; j < 16; j++) {
            int d = abs(j - focus[t]);
            att[t * 16 + j] = d == 0 ? 1.0f : d == 1 ? 0.25f : d == 2 ? 0.05f : 0.005f;
            sum += att[t * 16 + j];
        }
        for (int j = 0; j < 16; j++) att[t * 16 + j] /= sum;
    }
    cg_s2s_hyp y = {.tokens = o0, .n_tokens = 10, .score = -0.0421, .attention = att, .n_steps = 11};
    cg_s2s_result r = {.n_hyps = 1, .hyps = &y, .src_len = 16};
    int32_t *src[1] = {s0};
    int len[1] = {16};
    char path[700];
    snprintf(path, sizeof path, "%s/dates.png", dir);
    ck_assert_int_eq(cg_heatmap_write_labels(path, &r, src, len, 1, vocab_label, &v), CG_OK);
    snprintf(path, sizeof path, "%s/dates.svg", dir);
    ck_assert_int_eq(cg_heatmap_write_labels(path, &r, src, len, 1, vocab_label, &v), CG_OK);
    /* word tokens, with punctuation and a non-ASCII word */
    static const char *const ws[] = {
        "The", "quick,", "brown", "fox", "jumps/leaps", "over", "12:30", "d\xC3\xA9j\xC3\xA0", "."};
    static const char *const wt[] = {"Der", "schnelle", "braune", "Fuchs", "springt", "um", "12:30", "schon", "."};
    vocab wv = {ws, 9, wt, 9};
    int32_t ids[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    float watt[10 * 9];
    for (int t = 0; t < 10; t++)
        for (int j = 0; j < 9; j++) watt[t * 9 + j] = t == j ? 0.8f : (t + j) % 3 == 0 ? 0.15f : 0.01f;
    cg_s2s_hyp wy = {.tokens = ids, .n_tokens = 9, .score = -1.2345, .attention = watt, .n_steps = 10};
    cg_s2s_result wr = {.n_hyps = 1, .hyps = &wy, .src_len = 9};
    int32_t *wsrc[1] = {ids};
    int wlen[1] = {9};
    snprintf(path, sizeof path, "%s/words.png", dir);
    ck_assert_int_eq(cg_heatmap_write_labels(path, &wr, wsrc, wlen, 1, vocab_label, &wv), CG_OK);
    if (!out || !*out) {
        snprintf(path, sizeof path, "%s/dates.png", dir);
        int w, h;
        free(read_png(path, &w, &h));
        ck_assert_int_eq(w, 2 * 4 + 4 * 6 + 16 * 14); /* "</s>" is the longest row label */
        ck_assert_int_eq(h, 3 * 4 + 9 + 9 + 11 * 14);
    }
}
END_TEST

static Suite *heatmap_suite(void) {
    Suite *s = suite_create("heatmap");
    TCase *tc = tcase_create("heatmap");
    tcase_add_checked_fixture(tc, setup, tu_teardown_dir);
    tcase_add_test(tc, test_png_size_and_colours);
    tcase_add_test(tc, test_colour_map);
    tcase_add_test(tc, test_png_long_labels);
    tcase_add_test(tc, test_svg);
    tcase_add_test(tc, test_json);
    tcase_add_test(tc, test_json_ids);
    tcase_add_test(tc, test_file_per_source);
    tcase_add_test(tc, test_empty_and_no_attention);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_font);
    tcase_add_test(tc, test_examples);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(heatmap_suite(), 0); }
