/* The attention-RNN forecaster against tests/golden/forecast (written by
 * tools/py/gen_golden_forecast.py from the float64 PyTorch reference): every
 * variant's forecasts and attention rows on the CPU and on an OpenCL device
 * (CG_TEST_OPENCL_DEVICE, default opencl:0), batch invariance, `clgraph
 * forecast` CSV in and out, a model.cg in place of the builder's graph, and
 * the one-line messages for mistakes in config.json, the weights and the
 * CSV. */
#include <check.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clgraph/clgraph.h"
#include "clgraph/forecast.h"
#include "test_util.h"

#define MAX_VARIANTS 64

static char variants[MAX_VARIANTS][64];
static int n_variants;
static cg_context *ctx;
static int have_opencl;
static const char *cl_dev = "opencl:0";

static void setup(void) { tu_setup_dir("forecast"); }

static int by_name(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

static void vpath(char *buf, size_t n, const char *variant, const char *file) {
    snprintf(buf, n, "%s/tests/golden/forecast/%s%s%s", tu_src_dir(), variant, file ? "/" : "", file ? file : "");
}

static void scan_variants(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/tests/golden/forecast", tu_src_dir());
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) && n_variants < MAX_VARIANTS) {
        char p[1000];
        struct stat sb;
        if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof variants[0]) continue;
        vpath(p, sizeof p, e->d_name, "golden.json");
        if (stat(p, &sb) == 0) snprintf(variants[n_variants++], sizeof variants[0], "%s", e->d_name);
    }
    closedir(d);
    qsort(variants, (size_t)n_variants, sizeof variants[0], by_name);
}

/* One variant's golden data. */
typedef struct golden {
    cJSON *json;
    int n, horizon, window, C;
    cg_forecast_series *series;
    double **raw; /* the histories as the API takes them */
    cg_tensor **hist, **fc, **att;
} golden;

static cg_tensor *npy(const char *variant, const char *fmt, int i) {
    char f[64], p[1000];
    snprintf(f, sizeof f, fmt, i);
    vpath(p, sizeof p, variant, f);
    cg_tensor *t = NULL;
    ck_assert_msg(cg_tensor_load_npy(p, &t) == CG_OK, "%s: %s", p, cg_last_error());
    ck_assert_int_eq(cg_tensor_dtype(t), CG_F32);
    return t;
}

static void golden_load(const char *variant, golden *g) {
    memset(g, 0, sizeof *g);
    char p[1000];
    vpath(p, sizeof p, variant, "golden.json");
    char *text = tu_read_text(p, NULL);
    g->json = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(g->json);
    g->horizon = cJSON_GetObjectItem(g->json, "horizon")->valueint;
    g->window = cJSON_GetObjectItem(g->json, "window")->valueint;
    const cJSON *ser = cJSON_GetObjectItem(g->json, "series");
    g->n = cJSON_GetArraySize(ser);
    g->series = calloc((size_t)g->n, sizeof *g->series);
    g->hist = calloc((size_t)g->n, sizeof *g->hist);
    g->fc = calloc((size_t)g->n, sizeof *g->fc);
    g->att = calloc((size_t)g->n, sizeof *g->att);
    g->raw = calloc((size_t)g->n, sizeof *g->raw);
    for (int i = 0; i < g->n; i++) {
        g->hist[i] = npy(variant, "history_%d.npy", i);
        g->fc[i] = npy(variant, "forecast_%d.npy", i);
        g->att[i] = npy(variant, "attention_%d.npy", i);
        g->C = (int)cg_tensor_dim(g->hist[i], 1);
        int64_t n = cg_tensor_numel(g->hist[i]);
        const float *h = cg_tensor_data_const(g->hist[i]);
        g->raw[i] = malloc(sizeof(double) * (size_t)n);
        for (int64_t k = 0; k < n; k++) g->raw[i][k] = h[k];
        g->series[i].values = g->raw[i];
        g->series[i].length = (int)cg_tensor_dim(g->hist[i], 0);
    }
}

static void golden_free(golden *g) {
    for (int i = 0; i < g->n; i++) {
        cg_tensor_free(g->hist[i]);
        cg_tensor_free(g->fc[i]);
        cg_tensor_free(g->att[i]);
        free(g->raw[i]);
    }
    free(g->hist), free(g->fc), free(g->att), free(g->series), free(g->raw);
    cJSON_Delete(g->json);
}

/* Forecasts and attention rows of every series against the reference: the
 * spec's float32 implementation agrees with float64 to about 1e-5. */
static void check_variant(const char *variant, const char *device, int batch) {
    golden g;
    golden_load(variant, &g);
    char dir[1000];
    vpath(dir, sizeof dir, variant, NULL);
    cg_plan_options po = {.struct_size = sizeof(cg_plan_options), .device = device};
    cg_forecaster *m = NULL;
    ck_assert_msg(cg_forecast_load(ctx, dir, &po, &m) == CG_OK, "%s: %s", variant, cg_last_error());
    ck_assert_int_eq(cg_forecast_channels(m), g.C);
    ck_assert_int_eq(cg_forecast_window(m), g.window);
    cg_forecast_result *res = calloc((size_t)g.n, sizeof *res);
    cg_forecast_options o = {.struct_size = sizeof o, .horizon = g.horizon, .batch = batch, .attention = 1};
    ck_assert_msg(cg_forecast_run(m, &o, g.n, g.series, res, NULL, NULL) == CG_OK, "%s on %s: %s", variant, device,
                  cg_last_error());
    double worst = 0;
    const cJSON *ser = cJSON_GetObjectItem(g.json, "series");
    for (int i = 0; i < g.n; i++) {
        const float *want = cg_tensor_data_const(g.fc[i]), *watt = cg_tensor_data_const(g.att[i]);
        for (int k = 0; k < g.horizon * g.C; k++) {
            double err = fabs(res[i].values[k] - want[k]) / (1e-3 + fabs(want[k]));
            if (err > worst) worst = err;
            ck_assert_msg(err < 1e-4, "%s on %s: series %d value %d: %.9g, reference %.9g", variant, device, i, k,
                          res[i].values[k], want[k]);
        }
        const cJSON *first = cJSON_GetObjectItem(cJSON_GetArrayItem(ser, i), "first");
        for (int j = 0; j < g.horizon; j++) {
            int f = cJSON_GetArrayItem(first, j)->valueint;
            ck_assert_int_eq(res[i].att_count[j] ? res[i].att_first[j] : 0, f);
            int t = g.series[i].length + j, cnt = t - 2 < 0 ? 0 : (t - 2 > g.window ? g.window : t - 2);
            ck_assert_int_eq(res[i].att_count[j], cnt);
            for (int k = 0; k < g.window; k++) {
                double have = k < cnt ? res[i].attention[(size_t)j * (size_t)g.window + (size_t)k] : 0.0;
                ck_assert_msg(fabs(have - watt[(size_t)j * (size_t)g.window + (size_t)k]) < 2e-5,
                              "%s on %s: series %d attention row %d column %d: %.7g, reference %.7g", variant, device,
                              i, j, k, have, watt[(size_t)j * (size_t)g.window + (size_t)k]);
            }
        }
        cg_forecast_result_clear(&res[i]);
    }
    printf("%s on %s (batch %d): worst relative error %.2e\n", variant, device, batch, worst);
    free(res);
    cg_forecast_free(m);
    golden_free(&g);
}

START_TEST(golden_variants_present) { ck_assert_int_ge(n_variants, 12); }
END_TEST

START_TEST(golden_cpu) { check_variant(variants[_i], "cpu", 0); }
END_TEST

START_TEST(golden_opencl) {
    if (!have_opencl) return;
    check_variant(variants[_i], cl_dev, 0);
}
END_TEST

/* A series' forecast is the same alone (batch 1) as with the others: the
 * same bits on the CPU. */
START_TEST(batch_invariance) {
    golden g;
    golden_load(variants[_i], &g);
    char dir[1000];
    vpath(dir, sizeof dir, variants[_i], NULL);
    cg_forecaster *m = NULL;
    ck_assert_int_eq(cg_forecast_load(ctx, dir, NULL, &m), CG_OK);
    cg_forecast_result *one = calloc((size_t)g.n, sizeof *one), *all = calloc((size_t)g.n, sizeof *all);
    cg_forecast_options o1 = {.struct_size = sizeof o1, .horizon = g.horizon, .batch = 1, .attention = 1};
    cg_forecast_options on = {.struct_size = sizeof on, .horizon = g.horizon, .batch = g.n, .attention = 1};
    cg_forecast_options unsized = {.horizon = g.horizon}; /* options without struct_size are refused */
    ck_assert_int_eq(cg_forecast_run(m, &unsized, g.n, g.series, one, NULL, NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_forecast_options.struct_size is 0; set it to sizeof(cg_forecast_options)");
    ck_assert_int_eq(cg_forecast_run(m, &o1, g.n, g.series, one, NULL, NULL), CG_OK);
    ck_assert_int_eq(cg_forecast_run(m, &on, g.n, g.series, all, NULL, NULL), CG_OK);
    for (int i = 0; i < g.n; i++) {
        ck_assert_msg(!memcmp(one[i].values, all[i].values, sizeof(double) * (size_t)(g.horizon * g.C)),
                      "%s: series %d differs alone and in a batch of %d", variants[_i], i, g.n);
        if (g.window)
            ck_assert(!memcmp(one[i].attention, all[i].attention, sizeof(float) * (size_t)(g.horizon * g.window)));
        cg_forecast_result_clear(&one[i]);
        cg_forecast_result_clear(&all[i]);
    }
    free(one), free(all);
    cg_forecast_free(m);
    golden_free(&g);
}
END_TEST

/* `clgraph forecast` on history.csv: the same times, series and values
 * (to 1e-4) as expected.csv; a model.cg with the builder's graph changes
 * nothing. */
static void cli_matches(const char *dir, const char *variant) {
    char hist[1000], exp[1000];
    vpath(hist, sizeof hist, variant, "history.csv");
    vpath(exp, sizeof exp, variant, "expected.csv");
    const char *args[] = {"forecast", dir, "--horizon", "6", NULL};
    ck_assert_msg(tu_run_cli(args, NULL, hist) == 0, "%s: %s", variant, tu_err);
    char *want = tu_read_text(exp, NULL);
    char *sa = NULL, *sb = NULL;
    char *la = strtok_r(tu_out, "\n", &sa), *lb = strtok_r(want, "\n", &sb);
    int line = 1;
    for (; la && lb; la = strtok_r(NULL, "\n", &sa), lb = strtok_r(NULL, "\n", &sb), line++) {
        char *fa = NULL, *fb = NULL;
        char *a = strtok_r(la, ",", &fa), *b = strtok_r(lb, ",", &fb);
        for (int col = 1; a && b; a = strtok_r(NULL, ",", &fa), b = strtok_r(NULL, ",", &fb), col++) {
            if (line == 1 || col <= 2) {
                ck_assert_msg(!strcmp(a, b), "%s: line %d column %d: '%s', expected '%s'", variant, line, col, a, b);
                continue;
            }
            double x = atof(a), y = atof(b);
            ck_assert_msg(fabs(x - y) <= 1e-4 * (1e-3 + fabs(y)), "%s: line %d column %d: %s, expected %s", variant,
                          line, col, a, b);
        }
        ck_assert_msg(!a && !b, "%s: line %d has another number of fields", variant, line);
    }
    ck_assert_msg(!la && !lb, "%s: %s lines than expected", variant, la ? "more" : "fewer");
    free(want);
}

static void copy_file(const char *from, const char *to) {
    size_t n;
    char *s = tu_read_text(from, &n);
    FILE *f = fopen(to, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(s, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
    free(s);
}

START_TEST(cli_csv) {
    char dir[1000];
    vpath(dir, sizeof dir, variants[_i], NULL);
    cli_matches(dir, variants[_i]);
    /* the same model with its graph in model.cg */
    char src[1100];
    const char *copy = tu_path("model");
    ck_assert_int_eq(mkdir(copy, 0755), 0);
    char dst[1300];
    for (int k = 0; k < 2; k++) {
        const char *f = k ? "weights.safetensors" : "config.json";
        snprintf(src, sizeof src, "%s/%s", dir, f);
        snprintf(dst, sizeof dst, "%s/%s", copy, f);
        copy_file(src, dst);
    }
    char copy_dir[1000];
    snprintf(copy_dir, sizeof copy_dir, "%s", copy);
    const char *g[] = {"forecast-graph", copy_dir, NULL};
    ck_assert_int_eq(tu_run_cli(g, NULL, NULL), 0);
    snprintf(dst, sizeof dst, "%s/model.cg", copy_dir);
    FILE *f = fopen(dst, "w");
    ck_assert_ptr_nonnull(f);
    fputs("# edited by hand\n", f);
    fputs(tu_out, f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(tu_run_cli(g, NULL, NULL), 0);
    ck_assert(!strncmp(tu_out, "# edited by hand\n", 17));
    cli_matches(copy_dir, variants[_i]);
}
END_TEST

/* A model directory in tu_dir with this config.json and the weights of
 * variant `like`. */
static const char *model_with(const char *like, const char *config) {
    const char *d = tu_path("bad");
    mkdir(d, 0755);
    char p[1100], w[1100];
    snprintf(p, sizeof p, "%s/config.json", d);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(config, f);
    ck_assert_int_eq(fclose(f), 0);
    vpath(w, sizeof w, like, "weights.safetensors");
    snprintf(p, sizeof p, "%s/weights.safetensors", d);
    copy_file(w, p);
    return d;
}

START_TEST(config_mistakes) {
    static const struct {
        const char *config, *needle;
    } cases[] = {
        {"{\"columns\": [\"a\"], \"hidden\": 4}", "key 'task' is required"},
        {"{\"task\": \"translate\", \"columns\": [\"a\"], \"hidden\": 4}", "key 'task' must be \"forecast\""},
        {"{\"task\": \"forecast\", \"hidden\": 4}", "key 'columns' is required"},
        {"{\"task\": \"forecast\", \"columns\": [\"a\", \"a\"], \"hidden\": 4}", "\"a\" appears twice"},
        {"{\"task\": \"forecast\", \"columns\": [\"time\"], \"hidden\": 4}", "\"time\" is reserved"},
        {"{\"task\": \"forecast\", \"columns\": [\"a\"]}", "key 'hidden' is required"},
        {"{\"task\": \"forecast\", \"columns\": [\"a\"], \"hidden\": 4, \"cell\": \"tcn\"}", "key 'cell' is \"tcn\""},
        {"{\"task\": \"forecast\", \"columns\": [\"a\"], \"hidden\": 4, \"window\": 0}",
         "key 'window' must be an integer >= 1"},
        {"{\"task\": \"forecast\", \"columns\": [\"a\"], \"hidden\": 4, \"std\": [0]}",
         "key 'std': entry 0 must be a finite number > 0"},
        {"{\"task\": \"forecast\", \"columns\": [\"a\"], \"hidden\": 4, \"mean\": [1, 2]}",
         "key 'mean' must be a list of 1 numbers"},
        {"{\"task\": \"forecast\", \"columns\": [\"a\"], \"hidden\": 4, \"horizon\": 3}", "unknown key 'horizon'"},
        {"{\"task\": \"forecast\",\n \"columns\": [\"a\"] \"hidden\": 4}", "config.json:2:19: invalid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *d = model_with("gru_none", cases[i].config);
        const char *args[] = {"forecast", d, "--horizon", "2", NULL};
        ck_assert_int_eq(tu_run_cli(args, NULL, NULL), 1);
        const char *needles[] = {"config.json", cases[i].needle, NULL};
        tu_assert_one_line(needles);
    }
    /* the weights of another configuration: the tensor and both shapes named */
    const char *d = model_with("gru_none", "{\"task\": \"forecast\", \"columns\": [\"temp\", \"load\", \"price\"], "
                                           "\"cell\": \"gru\", \"hidden\": 8, \"attention\": \"none\"}");
    const char *args[] = {"forecast", d, "--horizon", "2", NULL};
    ck_assert_int_eq(tu_run_cli(args, NULL, NULL), 1);
    const char *needles[] = {"weights.safetensors: tensor 'rnn.weight_ih_l0' is f32[27, 3], expected f32[24, 3]", NULL};
    tu_assert_one_line(needles);
    /* layers the weights do not hold: the last one named at once, before a
     * graph of a million layers is built (30 s and 2 GB before) */
    d = model_with("gru_none", "{\"task\": \"forecast\", \"columns\": [\"temp\", \"load\", \"price\"], "
                               "\"cell\": \"gru\", \"hidden\": 8, \"attention\": \"none\", \"layers\": 1000000}");
    const char *args2[] = {"forecast", d, "--horizon", "2", NULL};
    ck_assert_int_eq(tu_run_cli(args2, NULL, NULL), 1);
    const char *needles2[] = {"weights.safetensors: tensor 'rnn.weight_ih_l999999' is missing",
                              "config.json says layers 1000000", NULL};
    tu_assert_one_line(needles2);
    const char *args3[] = {"forecast-graph", d, NULL};
    ck_assert_int_eq(tu_run_cli(args3, NULL, NULL), 1);
    tu_assert_one_line(needles2);
}
END_TEST

START_TEST(csv_mistakes) {
    static const struct {
        const char *csv, *needle;
    } cases[] = {
        {"", "stdin:1:1: no header line"},
        {"temp,load\n1,2\n", "stdin:1:1: column 'price' of the model is missing"},
        {"temp,load,price,wind\n1,2,3,4\n", "stdin:1:17: column 'wind' is not one of the model's (temp, load, price)"},
        {"temp,load,price\n1,2,3\n4,x5,6\n", "stdin:3:3: column 'load': expected a number, got 'x5'"},
        {"temp,load,price\n1,2,3\n4,5,nan\n", "stdin:3:5: column 'price': expected a number, got 'nan'"},
        {"temp,load,price\n1,2\n", "stdin:2:1: 2 fields, the header has 3"},
        {"temp,load,price\n", "stdin:2:1: no rows after the header"},
        {"temp,time,load,price\n1,2,3,4\n", "stdin:1:6: column 'time' must come first"},
        {"temp,load,load\n", "stdin:1:11: column 'load' appears twice"},
        {"temp,load,price\n\"1,2,3\n", "stdin:2:1: a quoted field is not closed"},
    };
    char dir[1000];
    vpath(dir, sizeof dir, "gru_none", NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *in = tu_write_file("in.csv", cases[i].csv, strlen(cases[i].csv));
        const char *args[] = {"forecast", dir, "--horizon", "2", NULL};
        ck_assert_int_eq(tu_run_cli(args, NULL, in), 1);
        const char *needles[] = {"clgraph forecast: ", cases[i].needle, NULL};
        tu_assert_one_line(needles);
    }
    /* a line over FC_CSV_MAX_LINE: an error, not a buffer growing without end */
    size_t big = ((size_t)1 << 20) + 100;
    char *line = malloc(big + 32);
    ck_assert_ptr_nonnull(line);
    strcpy(line, "temp,load,price\n1,2,");
    size_t n = strlen(line);
    memset(line + n, '3', big);
    line[n + big] = '\n';
    const char *in = tu_write_file("in.csv", line, n + big + 1);
    free(line);
    const char *args[] = {"forecast", dir, "--horizon", "2", NULL};
    ck_assert_int_eq(tu_run_cli(args, NULL, in), 1);
    const char *needles[] = {"clgraph forecast: stdin:2: a line of more than 1048576 bytes", NULL};
    tu_assert_one_line(needles);
    const char *bad_args[][6] = {{"forecast", dir, NULL},
                                 {"forecast", dir, "--horizon", "0", NULL},
                                 {"forecast", dir, "--horizon", "2", "--attention"},
                                 {"forecast", dir, "--horizon", "2", "--bogus"}};
    for (int i = 0; i < 4; i++) {
        const char *a[7] = {0};
        for (int k = 0; k < 6 && bad_args[i][k]; k++) a[k] = bad_args[i][k];
        ck_assert_int_eq(tu_run_cli(a, NULL, NULL), 2);
    }
}
END_TEST

/* Nothing read silently wrong: a NUL byte in a value ended the field, so
 * 4,2<NUL>5,6 was read as 4,2,6; a time column that would pass 9999-12-31
 * within --horizon became "+1", "+2", .... Both are errors now, with
 * nothing on stdout. */
START_TEST(csv_nul_and_horizon) {
    char dir[1000];
    vpath(dir, sizeof dir, "gru_none", NULL);
    static const char nul[] = "temp,load,price\n1,2,3\n4,2\0005,6\n";
    const char *in = tu_write_file("nul.csv", nul, sizeof nul - 1);
    const char *args[] = {"forecast", dir, "--horizon", "2", NULL};
    ck_assert_int_eq(tu_run_cli(args, NULL, in), 1);
    tu_assert_one_line((const char *const[]){"clgraph forecast: stdin:3:4: a NUL byte", NULL});
    ck_assert_str_eq(tu_out, "");
    static const char nul_time[] = "time,temp,load,price\n2020-01\000-01,1,2,3\n";
    in = tu_write_file("nul_time.csv", nul_time, sizeof nul_time - 1);
    ck_assert_int_eq(tu_run_cli(args, NULL, in), 1);
    tu_assert_one_line((const char *const[]){"stdin:2:8: a NUL byte", NULL});
    const char *late = "time,temp,load,price\n9999-10-31,1,2,3\n9999-11-30,2,3,4\n";
    in = tu_write_file("late.csv", late, strlen(late));
    const char *one[] = {"forecast", dir, "--horizon", "1", NULL};
    ck_assert_msg(tu_run_cli(one, NULL, in) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "\n9999-12-31,") != NULL, "%s", tu_out);
    ck_assert_int_eq(tu_run_cli(args, NULL, in), 1);
    tu_assert_one_line((const char *const[]){"clgraph forecast: --horizon 2: the time column (from stdin line 2) "
                                             "would pass 9999-12-31; at most 1 steps fit",
                                             NULL});
    ck_assert_str_eq(tu_out, "");
    const char *ints = "time,temp,load,price\n1000000000000000000,1,2,3\n4000000000000000000,2,3,4\n";
    in = tu_write_file("ints.csv", ints, strlen(ints));
    ck_assert_int_eq(tu_run_cli(args, NULL, in), 1);
    tu_assert_one_line((const char *const[]){"would pass the largest time it can hold; at most 1 steps fit", NULL});
}
END_TEST

/* Blank lines, CRLF, quoted fields, a `series` column whose rows are not
 * adjacent, --history, and the time column continued. */
START_TEST(csv_forms) {
    char dir[1000];
    vpath(dir, sizeof dir, "gru_none", NULL);
    const char *csv = "time,series,temp,load,price\r\n"
                      "2020-01-31,\"a,1\",1,2,3\r\n"
                      "\r\n"
                      "0.1,b,1.5,2,3\n"
                      "2020-02-29,\"a,1\",2,2.5,3.5\n"
                      "0.2,b,1,1e0,.5\n";
    const char *in = tu_write_file("in.csv", csv, strlen(csv));
    const char *args[] = {"forecast", dir, "--horizon", "2", NULL};
    ck_assert_msg(tu_run_cli(args, NULL, in) == 0, "%s", tu_err);
    char *save = NULL, *l0 = strtok_r(tu_out, "\n", &save), *l1 = strtok_r(NULL, "\n", &save),
         *l2 = strtok_r(NULL, "\n", &save), *l3 = strtok_r(NULL, "\n", &save), *l4 = strtok_r(NULL, "\n", &save);
    ck_assert_str_eq(l0, "time,series,temp,load,price");
    ck_assert(!strncmp(l1, "2020-03-31,\"a,1\",", 17));
    ck_assert(!strncmp(l2, "2020-04-30,\"a,1\",", 17));
    ck_assert(!strncmp(l3, "0.3,b,", 6));
    ck_assert(!strncmp(l4, "0.4,b,", 6));
    ck_assert_ptr_null(strtok_r(NULL, "\n", &save));
    /* --history 1 forecasts from the last row alone: the values of a
     * one-row input (the time still continues the file's times) */
    const char *h1[] = {"forecast", dir, "--horizon", "1", "--history", "1", NULL};
    ck_assert_int_eq(tu_run_cli(h1, NULL, in), 0);
    char *with_history = strdup(tu_out);
    ck_assert(strstr(with_history, "\n2020-03-31,\"a,1\",") && strstr(with_history, "\n0.3,b,"));
    const char *last = "time,series,temp,load,price\n2020-02-29,\"a,1\",2,2.5,3.5\n0.2,b,1,1e0,.5\n";
    const char *in2 = tu_write_file("in2.csv", last, strlen(last));
    const char *h2[] = {"forecast", dir, "--horizon", "1", NULL};
    ck_assert_int_eq(tu_run_cli(h2, NULL, in2), 0);
    /* the values: what follows the series name on each line */
    const char *a1 = strstr(with_history, "\",") + 2, *b1 = strstr(tu_out, "\",") + 2;
    ck_assert(!strncmp(a1, b1, (size_t)(strchr(a1, '\n') - a1 + 1)));
    const char *a2 = strstr(with_history, ",b,") + 3, *b2 = strstr(tu_out, ",b,") + 3;
    ck_assert_str_eq(a2, b2);
    /* a UTF-8 byte order mark (spreadsheets write one) is not part of the
     * header: the same forecast as without it; the header written back has none */
    char *plain = strdup(tu_out);
    size_t n2 = strlen(last);
    char *bom = malloc(n2 + 3);
    memcpy(bom, "\xef\xbb\xbf", 3);
    memcpy(bom + 3, last, n2);
    const char *in3 = tu_write_file("in3.csv", bom, n2 + 3);
    ck_assert_msg(tu_run_cli(h2, NULL, in3) == 0, "%s", tu_err);
    ck_assert_str_eq(tu_out, plain);
    /* two bytes of one are a column name that is not the model's */
    memcpy(bom + 2, "t", 1);
    const char *in5 = tu_write_file("in5.csv", bom, n2 + 3);
    ck_assert_int_eq(tu_run_cli(h2, NULL, in5), 1);
    const char *needles[] = {"stdin:1:1: column '\xef\xbb", "is not one of the model's", NULL};
    tu_assert_one_line(needles);
    free(bom);
    free(plain);
    free(with_history);
}
END_TEST

/* The value axes of a forecast SVG: each of the `charts` charts has at
 * least 2 ticks (the plot named only its minimum and maximum), at round
 * values (consecutive ticks 1, 2 or 5 times a power of ten apart, the same
 * step all along, higher values higher up); the attention rows are
 * labelled +1 .. +rows. Tick labels are the right-aligned grey texts at the
 * margin whose text is a number. */
static void assert_value_ticks(const char *svg, int charts, int rows) {
    int n_charts = 0, n = 0, prev_y = 0;
    double prev = 0, step = 0;
    for (const char *p = strstr(svg, "<text x=\"90\" y=\""); p; p = strstr(p + 1, "<text x=\"90\" y=\"")) {
        int y;
        char v[64];
        if (sscanf(p, "<text x=\"90\" y=\"%d\" text-anchor=\"end\" fill=\"#555\">%63[^<]</text>", &y, v) != 2) continue;
        if (v[0] == '+') continue; /* an attention row */
        char *end;
        double x = strtod(v, &end);
        ck_assert_msg(*end == 0, "tick label '%s' is not a number", v);
        if (n == 0 || y > prev_y) { /* a new chart starts at its lowest tick */
            if (n_charts) ck_assert_msg(n >= 2, "a chart with %d value ticks", n);
            n_charts++, n = 0, step = 0;
        } else {
            double d = x - prev;
            ck_assert_msg(d > 0, "ticks %g then %g", prev, x);
            double m = d / pow(10, floor(log10(d) + 1e-9));
            ck_assert_msg(fabs(m - 1) < 1e-6 || fabs(m - 2) < 1e-6 || fabs(m - 5) < 1e-6, "tick step %g", d);
            if (step > 0) ck_assert_msg(fabs(d - step) < 1e-6 * step, "steps %g and %g", step, d);
            step = d;
        }
        n++, prev = x, prev_y = y;
    }
    ck_assert_msg(n >= 2, "the last chart has %d value ticks", n);
    ck_assert_int_eq(n_charts, charts);
    for (int j = 1; j <= rows; j++) {
        char want[32];
        snprintf(want, sizeof want, ">+%d</text>", j);
        ck_assert_msg(strstr(svg, want) != NULL, "attention row %d has no label", j);
    }
}

/* --plot and --attention pictures: one per series, a PNG that is a PNG of
 * the layout's size, an SVG that is whole with its time axis labelled from
 * the CSV; unknown formats are usage errors before any work. */
START_TEST(pictures) {
    char dir[1000], hist[1000];
    vpath(dir, sizeof dir, "lstm_dot_w64", NULL);
    vpath(hist, sizeof hist, "lstm_dot_w64", "history.csv");
    char png[1100], svg[1100];
    if (!tu_have_feature("png")) { /* -Dpng=disabled: one line saying so, nothing written */
        const char *no[] = {"forecast", dir, "--horizon", "12", "--plot", tu_path("f.png"), NULL};
        ck_assert_int_eq(tu_run_cli(no, NULL, hist), 1);
        ck_assert_msg(strstr(tu_err, "has no PNG output"), "%s", tu_err);
        ck_assert(access(tu_path("f.png"), F_OK) != 0);
        printf("no PNG output in this build: the pictures not checked\n");
        return;
    }
    snprintf(png, sizeof png, "%s", tu_path("f.png"));
    snprintf(svg, sizeof svg, "%s", tu_path("a.svg"));
    const char *args[] = {"forecast", dir, "--horizon", "12", "--plot", png, "--attention", svg, NULL};
    ck_assert_msg(tu_run_cli(args, NULL, hist) == 0, "%s", tu_err);
    for (int i = 0; i < 3; i++) {
        char p[1200];
        size_t n;
        snprintf(p, sizeof p, "%s", tu_path(i ? (i == 1 ? "f-1.png" : "f-2.png") : "f.png"));
        unsigned char *b = (unsigned char *)tu_read_text(p, &n);
        ck_assert_uint_gt(n, 33);
        ck_assert(!memcmp(b, "\x89PNG\r\n\x1a\n", 8) && !memcmp(b + 12, "IHDR", 4));
        unsigned w = (unsigned)b[16] << 24 | (unsigned)b[17] << 16 | (unsigned)b[18] << 8 | b[19];
        unsigned h = (unsigned)b[20] << 24 | (unsigned)b[21] << 16 | (unsigned)b[22] << 8 | b[23];
        /* three channel charts and 12 attention rows: taller than wide is
         * not this layout */
        ck_assert_uint_ge(w, 360);
        ck_assert_uint_gt(h, 3 * 110 + 12 * 8);
        free(b);
        snprintf(p, sizeof p, "%s", tu_path(i ? (i == 1 ? "a-1.svg" : "a-2.svg") : "a.svg"));
        char *t = tu_read_text(p, &n);
        ck_assert(!strncmp(t, "<svg ", 5) && strstr(t, "</svg>\n") == t + n - 7 && strstr(t, "<polyline"));
        if (i == 0) { /* s0's times run 0, 10, ..., 290: its axis names 0, 290 and 290 + 12 * 10 */
            ck_assert_msg(strstr(t, ">0</text>") && strstr(t, ">290</text>") && strstr(t, ">410</text>"), "%s", t);
            ck_assert(!strstr(t, ">300</text>"));
        }
        assert_value_ticks(t, 3, 12);
        free(t);
    }
    ck_assert(access(tu_path("f-3.png"), F_OK) != 0);
    const char *bad[] = {"forecast", dir, "--horizon", "2", "--plot", "x.json", NULL};
    ck_assert_int_eq(tu_run_cli(bad, NULL, hist), 2);
    const char *needles[] = {"--plot x.json: unknown format (use .png, .svg)", NULL};
    tu_assert_one_line(needles);
}
END_TEST

/* A CSV of `series,time,values...` rows as `clgraph forecast` writes them
 * (time, series, C values): the values in file order. */
static double *csv_values(char *text, int C, int *rows) {
    int cap = 1024, n = 0;
    double *v = malloc(sizeof *v * (size_t)cap * (size_t)C);
    char *save = NULL;
    strtok_r(text, "\n", &save); /* header */
    for (char *l = strtok_r(NULL, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (n == cap) v = realloc(v, sizeof *v * (size_t)(cap *= 2) * (size_t)C);
        char *f = strchr(strchr(l, ',') + 1, ',') + 1;
        for (int k = 0; k < C; k++) {
            v[(size_t)n * (size_t)C + (size_t)k] = strtod(f, &f);
            if (*f == ',') f++;
        }
        n++;
    }
    *rows = n;
    return v;
}

/* The shipped demos (models/<name> with eval.json): `clgraph forecast` on
 * the held-out origins gives the attention RNN's MASE that the README's
 * table states, recomputed here from the forecasts and what happened. */
START_TEST(demo_mase) {
    static const char *const demos[] = {"elnino", "macro"};
    for (int di = 0; di < 2; di++) {
        char dir[1000], p[1100];
        snprintf(dir, sizeof dir, "%s/models/%s", tu_src_dir(), demos[di]);
        snprintf(p, sizeof p, "%s/eval.json", dir);
        ck_assert_msg(access(p, F_OK) == 0, "%s: the demo is missing", p);
        char *text = tu_read_text(p, NULL);
        cJSON *ev = cJSON_Parse(text);
        free(text);
        ck_assert_ptr_nonnull(ev);
        int horizon = cJSON_GetObjectItem(ev, "horizon")->valueint;
        const cJSON *ours = cJSON_GetObjectItem(cJSON_GetObjectItem(ev, "scores"), "attention_rnn");
        const cJSON *scale = cJSON_GetObjectItem(ours, "scale");
        int C = cJSON_GetArraySize(scale);
        char hz[16];
        snprintf(hz, sizeof hz, "%d", horizon);
        snprintf(p, sizeof p, "%s/heldout.csv", dir);
        const char *args[] = {"forecast", dir, "--horizon", hz, NULL};
        ck_assert_msg(tu_run_cli(args, NULL, p) == 0, "%s: %s", demos[di], tu_err);
        int n_got, n_want;
        double *got = csv_values(tu_out, C, &n_got);
        snprintf(p, sizeof p, "%s/heldout_truth.csv", dir);
        char *truth = tu_read_text(p, NULL);
        double *want = csv_values(truth, C, &n_want);
        ck_assert_int_eq(n_got, n_want);
        double mase = 0;
        for (int k = 0; k < C; k++) {
            double mae = 0;
            for (int r = 0; r < n_got; r++)
                mae += fabs(got[(size_t)r * (size_t)C + (size_t)k] - want[(size_t)r * (size_t)C + (size_t)k]);
            mae /= n_got;
            mase += mae / cJSON_GetArrayItem(scale, k)->valuedouble / C;
        }
        double stored = cJSON_GetObjectItem(ours, "mase_mean")->valuedouble;
        printf("%s: MASE %.4f (eval.json: %.4f)\n", demos[di], mase, stored);
        ck_assert_msg(fabs(mase - stored) < 1e-3 * stored, "%s: MASE %.5f, eval.json says %.5f", demos[di], mase,
                      stored);
        /* and the demo beats the seasonal-naive forecast, as its README says */
        double naive =
            cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(ev, "scores"), "seasonal_naive"), "mase_mean")
                ->valuedouble;
        ck_assert_msg(mase < naive, "%s: MASE %.4f is not below seasonal naive's %.4f", demos[di], mase, naive);
        free(got), free(want), free(truth);
        cJSON_Delete(ev);
    }
}
END_TEST

int main(void) {
    scan_variants();
    if (cg_context_create(NULL, &ctx) != CG_OK) {
        fprintf(stderr, "cg_context_create: %s\n", cg_last_error());
        return 1;
    }
    have_opencl = cg_device_count() > 1;
    const char *dev_env = getenv("CG_TEST_OPENCL_DEVICE");
    if (dev_env && *dev_env) cl_dev = dev_env;
    if (!have_opencl) printf("note: no OpenCL device: the %s parity tests only print this note\n", cl_dev);
    int nv = n_variants > 0 ? n_variants : 1;
    Suite *s = suite_create("forecast");
    TCase *tg = tcase_create("golden");
    tcase_add_checked_fixture(tg, setup, tu_teardown_dir);
    tcase_set_timeout(tg, 600);
    tcase_add_test(tg, golden_variants_present);
    tcase_add_loop_test(tg, golden_cpu, 0, nv);
    tcase_add_loop_test(tg, batch_invariance, 0, nv);
    suite_add_tcase(s, tg);
    TCase *to = tcase_create("opencl");
    tcase_add_checked_fixture(to, setup, tu_teardown_dir);
    tcase_set_timeout(to, 900);
    tcase_add_loop_test(to, golden_opencl, 0, nv);
    suite_add_tcase(s, to);
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, tu_teardown_dir);
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, cli_csv, 0, nv);
    tcase_add_test(tc, config_mistakes);
    tcase_add_test(tc, csv_mistakes);
    tcase_add_test(tc, csv_forms);
    tcase_add_test(tc, csv_nul_and_horizon);
    tcase_add_test(tc, pictures);
    tcase_add_test(tc, demo_mase);
    suite_add_tcase(s, tc);
    int failed = tu_run_suite(s, 1);
    cg_context_free(ctx);
    return failed;
}
