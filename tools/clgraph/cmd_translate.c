/* clgraph translate MODEL_DIR: one source per line on stdin, one line per
 * source (or --nbest lines) on stdout in input order; and clgraph s2s-graph
 * MODEL_DIR, which prints the graphs the model runs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "clgraph/seq2seq.h"
#include "heatmap.h"

typedef struct targs {
    const char *dir, *device, *place, *attention;
    int beam, nbest, max_len, batch, ids, scores;
    double alpha;
    int n_plugins;
    const char *plugins[CLI_MAX_PLUGINS];
} targs;

static int parse_int(const char *opt, const char *v, int min, int *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < min || x > 1000000) {
        fprintf(stderr, "clgraph translate: %s takes an integer >= %d, got '%s'\n", opt, min, v);
        return CLI_USAGE;
    }
    *out = (int)x;
    return CLI_OK;
}

static int parse_args(int argc, char **argv, targs *a) {
    memset(a, 0, sizeof *a);
    a->beam = 1;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = CLI_OK, takes = 1;
        if (!strcmp(o, "--ids")) a->ids = 1, takes = 0;
        else if (!strcmp(o, "--scores")) a->scores = 1, takes = 0;
        else if (o[0] != '-') {
            if (a->dir) {
                fprintf(stderr, "clgraph translate: unexpected argument '%s'\n", o);
                return CLI_USAGE;
            }
            a->dir = o;
            takes = 0;
        } else if (!v) {
            fprintf(stderr, "clgraph translate: option '%s' needs a value (try 'clgraph --help')\n", o);
            return CLI_USAGE;
        } else if (!strcmp(o, "--device")) a->device = v;
        else if (!strcmp(o, "--place")) a->place = v;
        else if (!strcmp(o, "--attention")) a->attention = v;
        else if (!strcmp(o, "--beam")) {
            rc = parse_int(o, v, 1, &a->beam);
            if (!rc && a->beam > CG_S2S_MAX_BEAM) {
                fprintf(stderr, "clgraph translate: --beam %d is wider than the limit of %d\n", a->beam,
                        CG_S2S_MAX_BEAM);
                rc = CLI_USAGE;
            }
        }
        else if (!strcmp(o, "--nbest")) rc = parse_int(o, v, 1, &a->nbest);
        else if (!strcmp(o, "--max-len")) rc = parse_int(o, v, 1, &a->max_len);
        else if (!strcmp(o, "--batch")) rc = parse_int(o, v, 1, &a->batch);
        else if (!strcmp(o, "--plugin")) rc = cli_add_plugin("translate", a->plugins, &a->n_plugins, v);
        else if (!strcmp(o, "--alpha")) {
            char *end;
            a->alpha = strtod(v, &end);
            if (end == v || *end || !(a->alpha >= 0 && a->alpha <= 100)) { /* NaN too */
                fprintf(stderr, "clgraph translate: --alpha takes a number in [0, 100], got '%s'\n", v);
                return CLI_USAGE;
            }
        } else {
            fprintf(stderr, "clgraph translate: unknown option '%s' (try 'clgraph --help')\n", o);
            return CLI_USAGE;
        }
        if (rc) return rc;
        i += takes;
    }
    if (a->attention) {
        /* Refuse an unknown format before spending time translating. */
        const char *dot = strrchr(a->attention, '.');
        if (!dot || (strcmp(dot, ".png") && strcmp(dot, ".svg") && strcmp(dot, ".json"))) {
            fprintf(stderr, "clgraph translate: --attention %s: unknown heat map format (use .png, .svg or .json)\n",
                    a->attention);
            return CLI_USAGE;
        }
    }
    if (!a->dir) {
        fprintf(stderr, "clgraph translate: missing MODEL_DIR (try 'clgraph --help')\n");
        return CLI_USAGE;
    }
    if (a->nbest > 1 && a->nbest > a->beam) {
        fprintf(stderr, "clgraph translate: --nbest %d needs --beam of at least %d\n", a->nbest, a->nbest);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* Reads stdin into lines (a final newline makes no extra line; one
 * trailing '\r' per line is dropped). */
static char **read_lines(int *n) {
    size_t cap = 0;
    char *line = NULL;
    ssize_t len;
    int count = 0, lcap = 0;
    char **lines = NULL;
    while ((len = getline(&line, &cap, stdin)) >= 0) {
        if (len && line[len - 1] == '\n') line[--len] = 0;
        if (len && line[len - 1] == '\r') line[--len] = 0;
        if (count == lcap) {
            lcap = lcap * 2 + 64;
            char **nl = realloc(lines, sizeof *nl * (size_t)lcap);
            if (!nl) break;
            lines = nl;
        }
        lines[count] = strdup(line);
        if (!lines[count]) break;
        count++;
    }
    free(line);
    *n = count;
    return lines ? lines : calloc(1, sizeof(char *));
}

static int parse_ids(const char *s, int32_t **ids, int *n) {
    size_t len = strlen(s);
    int32_t *out = malloc(sizeof *out * (len / 2 + 2));
    if (!out) return -1;
    int k = 0;
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > 2147483647L || (*end && *end != ' ' && *end != '\t')) {
            free(out);
            return -1;
        }
        out[k++] = (int32_t)v;
        p = end;
    }
    *ids = out;
    *n = k;
    return 0;
}

static void progress(int done, int total, void *user) {
    (void)user;
    int width = 40, fill = total ? done * width / total : width;
    fprintf(stderr, "\r[%.*s%*s] %d/%d", fill, "========================================", width - fill, "", done, total);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

int cli_translate(int argc, char **argv) {
    targs a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc;
    cli_opts o;
    memset(&o, 0, sizeof o);
    o.n_plugins = a.n_plugins;
    memcpy(o.plugins, a.plugins, sizeof a.plugins);
    cg_context *ctx = NULL;
    cg_s2s *m = NULL;
    int n = 0;
    char **lines = NULL;
    int32_t **src = NULL;
    int *len = NULL;
    cg_s2s_result *res = NULL;
    rc = cli_context(&o, &ctx);
    if (rc) return rc;
    cg_plan_options popt = {.device = a.device, .place = a.place};
    rc = CLI_FAIL;
    if (cg_s2s_load(ctx, a.dir, &popt, &m)) {
        rc = cli_fail();
        goto done;
    }
    lines = read_lines(&n);
    src = calloc((size_t)n + 1, sizeof *src);
    len = calloc((size_t)n + 1, sizeof *len);
    res = calloc((size_t)n + 1, sizeof *res);
    if (!lines || !src || !len || !res) goto done;
    for (int i = 0; i < n; i++) {
        if (a.ids ? parse_ids(lines[i], &src[i], &len[i]) != 0 : cg_s2s_tokenize(m, lines[i], &src[i], &len[i]) != CG_OK) {
            fprintf(stderr, "clgraph: stdin:%d: %s\n", i + 1,
                    a.ids ? "expected space-separated token ids" : cg_last_error());
            goto done;
        }
    }
    cg_s2s_options so = {.beam = a.beam, .nbest = a.nbest, .alpha = a.alpha, .max_len = a.max_len,
                         .batch = a.batch, .attention = a.attention != NULL};
    int tty = isatty(2) && n > 1;
    if (cg_s2s_translate(m, &so, n, (const int32_t *const *)src, len, res, tty ? progress : NULL, NULL)) {
        if (tty) fputc('\n', stderr);
        rc = cli_fail();
        goto done;
    }
    for (int i = 0; i < n; i++)
        for (int h = 0; h < res[i].n_hyps; h++) {
            const cg_s2s_hyp *y = &res[i].hyps[h];
            if (a.nbest > 1) printf("%d\t", i);
            if (a.ids) {
                for (int t = 0; t < y->n_tokens; t++) printf("%s%d", t ? " " : "", y->tokens[t]);
            } else {
                char *text;
                if (cg_s2s_detokenize(m, y->tokens, y->n_tokens, &text)) {
                    rc = cli_fail();
                    goto done;
                }
                fputs(text, stdout);
                free(text);
            }
            if (a.scores) printf("\t%.6f", y->score);
            putchar('\n');
        }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "clgraph: cannot write the output: %s\n", strerror(errno));
        goto done;
    }
    /* cg_heatmap_write prints its own message (cg_last_error is not set). */
    if (a.attention && n > 0 && cg_heatmap_write(m, a.attention, res, src, len, n, a.ids) != CG_OK) goto done;
    rc = CLI_OK;
done:
    for (int i = 0; i < n; i++) {
        if (lines) free(lines[i]);
        if (src) free(src[i]);
        if (res) cg_s2s_result_clear(&res[i]);
    }
    free(lines);
    free(src);
    free(len);
    free(res);
    cg_s2s_free(m);
    cg_context_free(ctx);
    return rc;
}

int cli_s2s_graph(int argc, char **argv) {
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: clgraph s2s-graph MODEL_DIR\n");
        return CLI_USAGE;
    }
    char *text;
    if (cg_s2s_graph_text(argv[1], &text)) return cli_fail();
    fputs(text, stdout);
    free(text);
    return CLI_OK;
}
