/* clgraph forecast MODEL_DIR --horizon N: the history of one or more series
 * as CSV on stdin, their forecasts as CSV on stdout (contract:
 * docs/forecast.md, "Forecasting"); and clgraph forecast-graph MODEL_DIR,
 * which prints the graph the model runs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "clgraph/forecast.h"
#include "fc_csv.h"
#include "fc_plot.h"
#include "out_file.h"

typedef struct fargs {
    const char *dir, *device, *place, *attention, *plot;
    int horizon, history, batch;
    cli_plugins plugins;
} fargs;

static int parse_args(int argc, char **argv, fargs *a) {
    memset(a, 0, sizeof *a);
    const cli_opt opts[] = {
        {"device", 0, CLI_STR, &a->device, .arg = "DEVICE", .help = "cpu or opencl[:N]"},
        {"place", 0, CLI_CALL, &a->place, .fn = cli_opt_place, .arg = "RULES", .help = "PATTERN=DEVICE,..."},
        {"attention", 0, CLI_STR, &a->attention, .arg = "FILE", .help = "attention heat map (.png, .svg, .json)"},
        {"plot", 0, CLI_STR, &a->plot, .arg = "FILE", .help = "history and forecast (.png, .svg)"},
        {"horizon", 0, CLI_INT, &a->horizon, 1, 1000000, .arg = "N", .help = "steps to forecast"},
        {"history", 0, CLI_INT, &a->history, 1, 1 << 30, .arg = "N", .help = "last steps of history used"},
        {"batch", 0, CLI_INT, &a->batch, 1, 1000000, .arg = "N", .help = "series per run"},
        {"plugin", 0, CLI_CALL, &a->plugins, .fn = cli_opt_plugin, .arg = "LIB", .help = "load an op library"},
        {0},
    };
    cli_spec spec = {.cmd = "forecast",
                     .opts = opts,
                     .pos = &a->dir,
                     .min_pos = 1,
                     .max_pos = 1,
                     .pos_name = "MODEL_DIR",
                     .unknown_hint = CLI_HINT_CMD,
                     .value_hint = CLI_HINT_CMD,
                     .missing_hint = CLI_HINT_CMD};
    int rc = cli_args_parse(&spec, argc, argv);
    if (rc) return rc;
    if (!a->horizon) return cli_usage("forecast", CLI_HINT_NONE, "--horizon N is required");
    /* Refuse an unknown format before spending time forecasting. */
    const char *files[2] = {a->attention, a->plot}, *names[2] = {"--attention", "--plot"};
    for (int k = 0; k < 2; k++) {
        const char *dot = files[k] ? strrchr(files[k], '.') : NULL;
        if (files[k] && (!dot || (strcmp(dot, ".png") && strcmp(dot, ".svg") && (k || strcmp(dot, ".json"))))) {
            return cli_usage("forecast", CLI_HINT_NONE, "%s %s: unknown format (use .png, .svg%s)", names[k], files[k],
                             k ? "" : " or .json");
        }
    }
    return CLI_OK;
}

static void progress(int done, int total, void *user) {
    (void)user;
    fprintf(stderr, "\r%d of %d series forecast", done, total);
    fflush(stderr);
}

/* The forecasts as CSV on stdout (fc_csv_write). */
static int write_csv(const fc_csv *in, const cg_forecast_result *res, int horizon) {
    int rc = fc_csv_write(stdout, in, res, horizon);
    if (rc < 0) {
        fprintf(stderr, "clgraph forecast: out of memory\n");
        return CLI_FAIL;
    }
    if (rc > 0 || fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "clgraph forecast: cannot write the forecast: %s\n", strerror(errno));
        return CLI_FAIL;
    }
    return CLI_OK;
}

static void json_string(FILE *f, const char *s) {
    putc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else putc(c, f);
    }
    putc('"', f);
}

/* One object per series: its name, history length, and per forecast step
 * the time index of its first weight and the weights, oldest first. */
static int write_attention(const char *path, const fc_csv *in, const cg_forecast_result *res, int horizon) {
    cli_file out;
    FILE *f = cli_file_open(&out, path);
    if (!f) {
        fprintf(stderr, "clgraph forecast: cannot write %s: %s\n", path, strerror(errno));
        return CLI_FAIL;
    }
    fputc('[', f);
    for (int s = 0; s < in->n_series; s++) {
        const cg_forecast_result *r = &res[s];
        fprintf(f, "%s{\"series\": ", s ? ", " : "");
        if (in->series[s].name) json_string(f, in->series[s].name);
        else fputs("null", f);
        fprintf(f, ", \"history\": %d, \"first\": [", in->series[s].n);
        for (int j = 0; j < horizon; j++) fprintf(f, "%s%d", j ? ", " : "", r->att_count[j] ? r->att_first[j] : 0);
        fputs("], \"rows\": [", f);
        for (int j = 0; j < horizon; j++) {
            fprintf(f, "%s[", j ? ", " : "");
            for (int k = 0; k < r->att_count[j]; k++)
                fprintf(f, "%s%.9g", k ? ", " : "", r->attention[(size_t)j * (size_t)r->window + (size_t)k]);
            fputc(']', f);
        }
        fputs("]}", f);
    }
    fputs("]\n", f);
    int err = cli_file_commit(&out);
    if (err) {
        fprintf(stderr, "clgraph forecast: cannot write %s: %s\n", path, strerror(err));
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* --plot, and --attention as a picture: the same images (a picture of the
 * attention alone would lose the values it explains). */
static int write_pictures(const char *path, int attention, cg_forecaster *m, const fc_csv *in,
                          const cg_forecast_series *ser, const cg_forecast_result *res) {
    fc_plot_series *ps = calloc((size_t)in->n_series, sizeof *ps);
    const char **cols = malloc(sizeof *cols * (size_t)in->C);
    int horizon = in->n_series ? res[0].horizon : 0;
    char **ft = in->time_col >= 0 ? calloc((size_t)in->n_series * (size_t)horizon + 1, sizeof *ft) : NULL;
    int rc = ps && cols && (ft || in->time_col < 0) ? 0 : -1;
    for (int k = 0; cols && k < in->C; k++) cols[k] = cg_forecast_column(m, k);
    for (int s = 0; !rc && s < in->n_series; s++) {
        fc_plot_series *p = &ps[s];
        const fc_csv_series *cs = &in->series[s];
        if (ft && cs->all_times) {
            p->times = (const char *const *)cs->all_times + (cs->n - ser[s].length);
            p->ftimes = (const char *const *)ft + (size_t)s * (size_t)horizon;
            int fit;
            rc = fc_next_times(cs->times[0], cs->times[1], horizon, ft + (size_t)s * (size_t)horizon, &fit);
        }
        p->name = in->series[s].name;
        p->columns = cols;
        p->channels = in->C;
        p->length = ser[s].length;
        p->horizon = res[s].horizon;
        p->history = ser[s].values;
        p->forecast = res[s].values;
        p->attention = attention && res[s].window ? res[s].attention : NULL;
        p->att_first = res[s].att_first;
        p->att_count = res[s].att_count;
        p->window = res[s].window;
    }
    if (!rc) rc = fc_plot_write(path, ps, in->n_series);
    else fprintf(stderr, "clgraph forecast: out of memory\n");
    for (size_t k = 0; ft && k < (size_t)in->n_series * (size_t)horizon; k++) free(ft[k]);
    free(ft);
    free(ps);
    free(cols);
    return rc ? CLI_FAIL : CLI_OK;
}

/* Whether every series' time column can be continued for the whole
 * horizon; checked before forecasting so that nothing is written when the
 * dates would pass 9999-12-31 (the column used to turn into "+1", "+2",
 * ... silently). Prints the error. */
static int check_horizon(const fc_csv *in, int horizon) {
    for (int s = 0; in->time_col >= 0 && s < in->n_series; s++) {
        const fc_csv_series *ser = &in->series[s];
        int fit;
        if (!fc_next_times(ser->times[0], ser->times[1], horizon, NULL, &fit)) continue;
        const char *t = ser->times[1];
        int date = strlen(t) >= 10 && t[4] == '-' && t[7] == '-';
        char name[80] = "";
        if (ser->name)
            snprintf(name, sizeof name, " of series '%.40s'%s", ser->name, strlen(ser->name) > 40 ? "..." : "");
        for (char *p = name; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
        fprintf(stderr,
                "clgraph forecast: --horizon %d: the time column%s (from stdin line %d) would pass %s; at most %d "
                "steps fit\n",
                horizon, name, ser->first_line, date ? "9999-12-31" : "the largest time it can hold", fit);
        return CLI_FAIL;
    }
    return CLI_OK;
}

static int run(const fargs *a, cg_forecaster *m) {
    int C = cg_forecast_channels(m);
    const char **cols = malloc(sizeof *cols * (size_t)C);
    if (!cols) return CLI_FAIL;
    for (int k = 0; k < C; k++) cols[k] = cg_forecast_column(m, k);
    fc_csv in;
    char err[1024];
    const char *adot = a->attention ? strrchr(a->attention, '.') : NULL;
    int pictures = a->plot || (a->attention && !(adot && !strcmp(adot, ".json")));
    int rc = fc_csv_read(stdin, cols, C, pictures, &in, err, sizeof err) ? CLI_FAIL : CLI_OK;
    free(cols);
    if (rc) {
        fprintf(stderr, "clgraph forecast: stdin:%s\n", err);
        return rc;
    }
    if (check_horizon(&in, a->horizon)) {
        fc_csv_free(&in);
        return CLI_FAIL;
    }
    cg_forecast_series *ser = calloc((size_t)in.n_series, sizeof *ser);
    cg_forecast_result *res = calloc((size_t)in.n_series, sizeof *res);
    if (!ser || !res) {
        fprintf(stderr, "clgraph forecast: out of memory\n");
        rc = CLI_FAIL;
    }
    for (int s = 0; !rc && s < in.n_series; s++) {
        int n = in.series[s].n, keep = a->history && a->history < n ? a->history : n;
        ser[s].values = in.series[s].values + (size_t)(n - keep) * (size_t)C;
        ser[s].length = keep;
    }
    cg_forecast_options o = {.struct_size = sizeof o,
                             .horizon = a->horizon,
                             .batch = a->batch,
                             .attention = a->attention != NULL || a->plot != NULL};
    int tty = isatty(2) && in.n_series > 1;
    if (!rc && cg_forecast_run(m, &o, in.n_series, ser, res, tty ? progress : NULL, NULL)) {
        if (tty) fputc('\n', stderr);
        rc = cli_fail();
    } else if (!rc) {
        if (tty) fputc('\n', stderr);
        rc = write_csv(&in, res, a->horizon);
        const char *dot = a->attention ? strrchr(a->attention, '.') : NULL;
        if (!rc && dot && !strcmp(dot, ".json")) rc = write_attention(a->attention, &in, res, a->horizon);
        else if (!rc && a->attention) rc = write_pictures(a->attention, 1, m, &in, ser, res);
        if (!rc && a->plot) rc = write_pictures(a->plot, 1, m, &in, ser, res);
    }
    for (int s = 0; res && s < in.n_series; s++) cg_forecast_result_clear(&res[s]);
    free(res);
    free(ser);
    fc_csv_free(&in);
    return rc;
}

int cli_forecast(int argc, char **argv) {
    fargs a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    cli_opts o;
    memset(&o, 0, sizeof o);
    o.n_plugins = a.plugins.n;
    memcpy(o.plugins, a.plugins.list, sizeof a.plugins.list);
    cg_context *ctx = NULL;
    cg_forecaster *m = NULL;
    rc = cli_context(&o, &ctx);
    if (rc) return rc;
    cg_plan_options popt = {.struct_size = sizeof(cg_plan_options), .device = a.device, .place = a.place};
    if (cg_forecast_load(ctx, a.dir, &popt, &m)) rc = cli_fail();
    else rc = run(&a, m);
    cg_forecast_free(m);
    cg_context_free(ctx);
    return rc;
}

int cli_forecast_graph(int argc, char **argv) {
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: clgraph forecast-graph MODEL_DIR\n");
        return CLI_USAGE;
    }
    char *text;
    if (cg_forecast_graph_text(argv[1], &text)) return cli_fail();
    fputs(text, stdout);
    free(text);
    return CLI_OK;
}
