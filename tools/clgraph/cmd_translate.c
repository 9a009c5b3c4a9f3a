/* clgraph translate MODEL_DIR: one source per line on stdin, one line per
 * source (or --nbest lines) on stdout (or --output FILE, which --resume
 * continues: tr_resume.h) in input order; and clgraph s2s-graph
 * MODEL_DIR [--weights-dtype T], which prints the graphs the model runs
 * (with that option: as cg_s2s_load with it runs them). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "clgraph/seq2seq.h"
#include "heatmap.h"
#include "tr_resume.h"

typedef struct targs {
    const char *dir, *device, *place, *attention, *profile, *output;
    int resume;
    uint64_t cmd_hash; /* the command line but --resume (tr_resume.h) */
    int beam, nbest, max_len, min_len, batch, ids, scores, crop, attention_head;
    int window;             /* lines per window; 0: chosen from stdin and --batch */
    int max_input_len;      /* source tokens a line may have */
    cg_dtype weights_dtype; /* --weights-dtype, 0 as stored */
    double alpha;
    cli_plugins plugins;
} targs;

static int parse_args(int argc, char **argv, targs *a) {
    memset(a, 0, sizeof *a);
    a->alpha = -1; /* not given: the model's default */
    a->max_input_len = 1024;
    const char *ge1 = "an integer >= 1";
    const cli_opt opts[] = {
        {"ids", 0, CLI_FLAG, &a->ids, .help = "sources and outputs are token ids"},
        {"scores", 0, CLI_FLAG, &a->scores, .help = "print each hypothesis' score"},
        {"crop", 0, CLI_FLAG, &a->crop, .help = "crop the heat map to the tokens"},
        {"device", 0, CLI_STR, &a->device, .arg = "DEVICE", .help = "cpu or opencl[:N]"},
        {"place", 0, CLI_CALL, &a->place, .fn = cli_opt_place, .arg = "RULES", .help = "PATTERN=DEVICE,..."},
        {"attention", 0, CLI_STR, &a->attention, .arg = "FILE", .help = "heat map (.png, .svg, .json)"},
        {"profile", 0, CLI_STR, &a->profile, .arg = "FILE.json", .help = "a trace of the run"},
        {"attention-head", 0, CLI_INT, &a->attention_head, 0, 1000000, "an integer >= 0", .arg = "N",
         .help = "a Transformer's maps: head N (1-based) of the last layer; 0: their mean"},
        {"weights-dtype", 0, CLI_CALL, &a->weights_dtype, .fn = cli_opt_weights_dtype, .arg = "TYPE",
         .help = "f32, bf16, f16 or int8"},
        {"beam", 0, CLI_INT, &a->beam, 1, 1000000, ge1, .arg = "N", .help = "beam width (1: greedy)"},
        {"nbest", 0, CLI_INT, &a->nbest, 1, 1000000, ge1, .arg = "N", .help = "hypotheses per source"},
        {"max-len", 0, CLI_INT, &a->max_len, 1, 1000000, ge1, .arg = "N", .help = "tokens per output"},
        {"min-len", 0, CLI_INT, &a->min_len, 0, 1000000, "an integer >= 0", .arg = "N",
         .help = "fewest tokens per output (EOS masked before)"},
        {"batch", 0, CLI_INT, &a->batch, 1, 1000000, ge1, .arg = "N", .help = "sources per decode"},
        {"window", 0, CLI_INT, &a->window, 1, 1000000, ge1, .arg = "N", .help = "lines read ahead"},
        {"max-input-len", 0, CLI_INT, &a->max_input_len, 1, 1000000, ge1, .arg = "N",
         .help = "source tokens a line may have"},
        {"plugin", 0, CLI_CALL, &a->plugins, .fn = cli_opt_plugin, .arg = "LIB", .help = "load an op library"},
        {"alpha", 0, CLI_DBL, &a->alpha, 0, 100, .arg = "X", .help = "length penalty"},
        {"output", 0, CLI_STR, &a->output, .arg = "FILE", .help = "translations to FILE, progress to FILE.progress"},
        {"resume", 0, CLI_FLAG, &a->resume, .help = "go on from FILE.progress (--output)"},
        {0},
    };
    cli_spec spec = {.cmd = "translate",
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
    if (a->beam > CG_S2S_MAX_BEAM)
        return cli_usage("translate", CLI_HINT_NONE, "--beam %d is wider than the limit of %d", a->beam,
                         CG_S2S_MAX_BEAM);
    if (a->attention) {
        /* Refuse an unknown format before spending time translating. */
        const char *dot = strrchr(a->attention, '.');
        if (!dot || (strcmp(dot, ".png") && strcmp(dot, ".svg") && strcmp(dot, ".json"))) {
            return cli_usage("translate", CLI_HINT_NONE,
                             "--attention %s: unknown heat map format (use .png, .svg or .json)", a->attention);
        }
    }
    if (a->max_len && a->min_len > a->max_len)
        return cli_usage("translate", CLI_HINT_NONE, "--min-len %d is larger than --max-len %d", a->min_len,
                         a->max_len);
    if (a->nbest > 1 && a->beam && a->nbest > a->beam)
        return cli_usage("translate", CLI_HINT_NONE, "--nbest %d needs --beam of at least %d", a->nbest, a->nbest);
    if (a->resume && !a->output) return cli_usage("translate", CLI_HINT_NONE, "--resume needs --output FILE");
    if (a->resume && a->attention)
        return cli_usage("translate", CLI_HINT_NONE,
                         "--resume cannot go with --attention (its heat map needs every line in one run)");
    a->cmd_hash = TR_HASH_START;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--resume")) a->cmd_hash = tr_hash(a->cmd_hash, argv[i], strlen(argv[i]) + 1);
    return CLI_OK;
}

/* Bytes a line of stdin may hold for each --max-input-len token (at least
 * 4 KiB a line): a longer line is refused (or cropped) without being held,
 * so that one endless line takes no more memory than a short one. 16 is 4
 * times a character's UTF-8 bytes and room for words of 15 letters. */
#define LINE_BYTES_PER_TOKEN 16

static size_t line_bytes(const targs *a) {
    size_t n = (size_t)a->max_input_len * LINE_BYTES_PER_TOKEN;
    return n < 4096 ? 4096 : n;
}

/* One window of input: up to `cap` lines of stdin, their sources and
 * results. Lines are numbered from 1 over the whole input. */
typedef struct window {
    int cap, n, first; /* first: the input line number of lines[0] */
    char **lines;
    char *cut; /* 1: the line was over line_bytes(); only its first bytes are held */
    int32_t **src;
    int *len;
    cg_s2s_result *res;
} window;

static void window_clear(window *w) {
    for (int i = 0; i < w->n; i++) {
        free(w->lines[i]);
        free(w->src[i]);
        cg_s2s_result_clear(&w->res[i]);
    }
    memset(w->src, 0, sizeof *w->src * (size_t)w->cap);
    memset(w->len, 0, sizeof *w->len * (size_t)w->cap);
    memset(w->cut, 0, (size_t)w->cap);
    w->n = 0;
}

static void window_free(window *w) {
    if (w->lines) window_clear(w);
    free(w->lines);
    free(w->cut);
    free(w->src);
    free(w->len);
    free(w->res);
}

static int window_init(window *w, int cap) {
    memset(w, 0, sizeof *w);
    w->cap = cap;
    w->first = 1;
    w->lines = calloc((size_t)cap, sizeof *w->lines);
    w->cut = calloc((size_t)cap, 1);
    w->src = calloc((size_t)cap, sizeof *w->src);
    w->len = calloc((size_t)cap, sizeof *w->len);
    w->res = calloc((size_t)cap, sizeof *w->res);
    if (w->lines && w->cut && w->src && w->len && w->res) return CLI_OK;
    fprintf(stderr, "clgraph translate: out of memory for a window of %d lines\n", cap);
    window_free(w);
    return CLI_FAIL;
}

/* Reads one line of stdin without its '\n' into *buf, keeping at most max
 * bytes: the rest of a longer line is read and dropped (*cut set), so a
 * line of any length takes at most max bytes. Returns the bytes kept, -1
 * at the end of input, -2 on a read error or memory running short (errno
 * set), -3 on a NUL byte (*col its column): no text holds one, and
 * /dev/zero would otherwise be one endless line. */
static ssize_t read_line(char **buf, size_t *cap, size_t max, int *cut, size_t *col) {
    size_t n = 0, at = 0;
    *cut = 0;
    for (;;) {
        int c = getc_unlocked(stdin);
        if (c == EOF) {
            if (ferror(stdin)) return -2;
            if (!at) return -1;
            break;
        }
        if (c == '\n') break;
        at++;
        if (c == 0) {
            *col = at;
            return -3;
        }
        if (n == max) {
            *cut = 1;
            continue;
        }
        if (n + 1 >= *cap) {
            size_t nc = *cap < 128 ? 256 : *cap * 2;
            if (nc > max + 1) nc = max + 1;
            char *nb = realloc(*buf, nc);
            if (!nb) {
                errno = ENOMEM;
                return -2;
            }
            *buf = nb;
            *cap = nc;
        }
        (*buf)[n++] = (char)c;
    }
    if (!*cap) { /* an empty first line: nothing was stored, the NUL needs room too */
        char *nb = malloc(256);
        if (!nb) {
            errno = ENOMEM;
            return -2;
        }
        *buf = nb;
        *cap = 256;
    }
    (*buf)[n] = 0;
    return (ssize_t)n;
}

/* Reads the next lines of stdin into w (a final newline makes no extra
 * line; one trailing '\r' per line is dropped). *eof set at the end of
 * input. A read error, a NUL byte or a failed allocation is an error
 * naming the line: input is never cut short silently. */
static int read_window(const targs *a, window *w, char **buf, size_t *cap, int *eof) {
    while (w->n < w->cap) {
        errno = 0;
        int cut;
        size_t col = 0;
        ssize_t len = read_line(buf, cap, line_bytes(a), &cut, &col);
        if (len == -3) {
            fprintf(stderr, "clgraph translate: stdin:%d:%zu: a NUL byte: the input is not text\n", w->first + w->n,
                    col);
            return CLI_FAIL;
        }
        if (len < 0) {
            if (len == -2) {
                fprintf(stderr, "clgraph translate: stdin: cannot read line %d: %s\n", w->first + w->n,
                        strerror(errno ? errno : EIO));
                return CLI_FAIL;
            }
            *eof = 1;
            return CLI_OK;
        }
        char *line = *buf;
        if (!cut && len && line[len - 1] == '\r') line[--len] = 0;
        if (!(w->lines[w->n] = strdup(line))) {
            fprintf(stderr, "clgraph translate: stdin:%d: out of memory for a line of %zd bytes\n", w->first + w->n,
                    len);
            return CLI_FAIL;
        }
        w->cut[w->n] = (char)cut;
        w->n++;
    }
    return CLI_OK;
}

/* A line of --ids: source token ids separated by blanks, each an integer
 * inside the source vocabulary. 0, or -1 with the reason and its column in
 * why ("1e3" is not read as 1, nor "-5" or 2^31 wrapped, and an id past the
 * vocabulary is not left for the run to refuse, which would fail every line
 * of its batch). */
static int parse_ids(const cg_s2s *m, const char *s, int32_t **ids, int *n, char *why, size_t wn) {
    size_t len = strlen(s);
    int32_t *out = malloc(sizeof *out * (len / 2 + 2));
    if (!out) {
        snprintf(why, wn, "out of memory for %zu bytes of ids", len);
        return -1;
    }
    int k = 0;
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        size_t tl = strcspn(p, " \t");
        int col = (int)(p - s) + 1;
        char *end;
        errno = 0;
        long v = *p >= '0' && *p <= '9' ? strtol(p, &end, 10) : -1;
        if (v < 0 || end != p + tl) {
            char shown[48];
            size_t u = 0;
            for (size_t i = 0; i < tl && u + 4 < sizeof shown && i < 32; i++)
                shown[u++] = (unsigned char)p[i] < 0x20 || p[i] == 0x7f ? '?' : p[i];
            if (tl > 32) memcpy(shown + u, "...", 3), u += 3;
            shown[u] = 0;
            snprintf(why, wn, "%d: '%s' is not a token id (ids are integers from 0, separated by blanks)", col, shown);
            free(out);
            return -1;
        }
        if (errno || v > 2147483647L || !cg_s2s_token(m, 0, (int32_t)v)) {
            snprintf(why, wn, "%d: token id %.*s is not in the source vocabulary", col, (int)(tl > 24 ? 24 : tl), p);
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

/* Progress on a terminal: lines translated so far (the total is not
 * known while streaming). */
typedef struct progress_state {
    int before; /* lines of earlier windows */
} progress_state;

static void progress(int done, int total, void *user) {
    const progress_state *p = user;
    (void)total;
    fprintf(stderr, "\r%d lines translated", p->before + done);
    fflush(stderr);
}

/* Tokenizes w's lines; a line over --max-input-len tokens is cropped with
 * --crop (a warning) or refused: an error naming it, *refused set, and its
 * length set to -1 so that it is skipped and prints an empty line. */
static int tokenize_window(const targs *a, cg_s2s *m, window *w, int *refused) {
    for (int i = 0; i < w->n; i++) {
        int line = w->first + i;
        if (w->cut[i] && !a->crop) {
            /* not tokenized: only its first bytes were kept */
            fprintf(stderr,
                    "clgraph: stdin:%d: more than %zu bytes, more than --max-input-len %d allows (%d bytes a "
                    "token; or --crop); not translated%s\n",
                    line, line_bytes(a), a->max_input_len, LINE_BYTES_PER_TOKEN,
                    a->attention && !*refused ? ", so no heat map is written" : "");
            w->len[i] = -1;
            *refused = 1;
            continue;
        }
        char why[160];
        if (a->ids ? parse_ids(m, w->lines[i], &w->src[i], &w->len[i], why, sizeof why) != 0
                   : cg_s2s_tokenize(m, w->lines[i], &w->src[i], &w->len[i]) != CG_OK) {
            /* like an over-long line: this line is not translated, the
             * others are (all of them used to be dropped) */
            fprintf(stderr, "clgraph: stdin:%d:%s%s; not translated%s\n", line, a->ids ? "" : " ",
                    a->ids ? why : cg_last_error(), a->attention && !*refused ? ", so no heat map is written" : "");
            w->len[i] = -1;
            *refused = 1;
            continue;
        }
        if (w->cut[i]) {
            /* --crop of a line over line_bytes(): its first bytes were kept;
             * the last token may be cut in two (a word, an id), so it goes
             * unless max_input_len tokens come before it */
            if (w->len[i] <= a->max_input_len && w->len[i] > 0) w->len[i]--;
            if (w->len[i] > a->max_input_len) w->len[i] = a->max_input_len;
            fprintf(stderr, "clgraph: stdin:%d: warning: more than %zu bytes, cropped to its first %d tokens\n", line,
                    line_bytes(a), w->len[i]);
            continue;
        }
        if (w->len[i] <= a->max_input_len) continue;
        if (a->crop) {
            fprintf(stderr, "clgraph: stdin:%d: warning: %d tokens, cropped to --max-input-len %d\n", line, w->len[i],
                    a->max_input_len);
            w->len[i] = a->max_input_len;
        } else {
            fprintf(stderr,
                    "clgraph: stdin:%d: %d tokens, more than --max-input-len %d (or --crop); not translated%s\n", line,
                    w->len[i], a->max_input_len, a->attention && !*refused ? ", so no heat map is written" : "");
            w->len[i] = -1;
            *refused = 1;
        }
    }
    return CLI_OK;
}

/* Translates w's sources, refused lines left out. */
static int translate_window(const targs *a, cg_s2s *m, window *w, progress_state *ps) {
    int32_t **src = malloc(sizeof *src * (size_t)w->n + 1);
    int *len = malloc(sizeof *len * (size_t)w->n + 1);
    cg_s2s_result *res = calloc((size_t)w->n + 1, sizeof *res);
    int *at = malloc(sizeof *at * (size_t)w->n + 1);
    int rc = CLI_FAIL, k = 0;
    if (!src || !len || !res || !at) {
        fprintf(stderr, "clgraph translate: out of memory\n");
        goto out;
    }
    for (int i = 0; i < w->n; i++)
        if (w->len[i] >= 0) src[k] = w->src[i], len[k] = w->len[i], at[k++] = i;
    cg_s2s_options so = {.struct_size = sizeof so,
                         .beam = a->beam,
                         .nbest = a->nbest,
                         .alpha = a->alpha < 0 ? 0 : a->alpha,
                         .flags = a->alpha < 0 ? 0 : CG_S2S_ALPHA_SET,
                         .max_len = a->max_len,
                         .min_len = a->min_len,
                         .batch = a->batch,
                         .attention = a->attention != NULL,
                         .attention_head = a->attention_head};
    int tty = isatty(2) && k > 1;
    if (cg_s2s_translate(m, &so, k, (const int32_t *const *)src, len, res, tty ? progress : NULL, ps)) {
        if (tty) fputc('\n', stderr);
        rc = cli_fail();
        goto out;
    }
    for (int j = 0; j < k; j++) w->res[at[j]] = res[j];
    ps->before += k;
    rc = CLI_OK;
out:
    free(src);
    free(len);
    free(res);
    free(at);
    return rc;
}

/* Writes w's results in input order and flushes them, so that a full disk
 * or a closed pipe is reported here, naming the line. */
static int print_window(const targs *a, cg_s2s *m, const window *w, FILE *out, int nth) {
    for (int i = 0; i < w->n; i++) {
        if (i == w->n / 2 && i) tr_kill_point(out, nth, "mid");
        if (w->len[i] < 0) fputc('\n', out);
        for (int h = 0; h < w->res[i].n_hyps; h++) {
            const cg_s2s_hyp *y = &w->res[i].hyps[h];
            if (a->nbest > 1) fprintf(out, "%d\t", w->first + i - 1);
            if (a->ids) {
                for (int t = 0; t < y->n_tokens; t++) fprintf(out, "%s%d", t ? " " : "", y->tokens[t]);
            } else {
                char *text;
                if (cg_s2s_detokenize(m, y->tokens, y->n_tokens, &text)) return cli_fail();
                fputs(text, out);
                free(text);
            }
            if (a->scores) fprintf(out, "\t%.6f", y->score);
            fputc('\n', out);
        }
    }
    if (fflush(out) != 0 || ferror(out)) {
        fprintf(stderr, "clgraph translate: cannot write the translation of line %d: %s\n", w->first + w->n - 1,
                strerror(errno));
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* Lines per window: one at a time from a terminal; otherwise --window, or
 * 16 batches (sorting by length inside a window keeps batches dense). A heat
 * map needs every sentence, so --attention reads all of stdin. */
static int window_lines(const targs *a) {
    if (a->attention) return 0;
    if (a->window) return a->window;
    if (isatty(0)) return 1;
    return 16 * (a->batch ? a->batch : 32);
}

/* --output: w's lines into the input hash. 1 when the run --resume goes on
 * from had translated them (the window is skipped), -1 (said) when the
 * input is not the one it read. */
static int resumed_window(tr_out *o, const window *w) {
    for (int i = 0; i < w->n; i++) tr_out_line(o, w->lines[i], w->cut[i]);
    if (o->lines - w->n >= o->skip) return 0;
    if (o->lines > o->skip)
        fprintf(stderr, "clgraph translate: %s: its %lld lines done do not end a window of this run\n", o->record,
                o->skip);
    else if (o->lines == o->skip && o->input != o->want)
        fprintf(stderr, "clgraph translate: %s: the input's first %lld lines are not those it was made from\n",
                o->record, o->skip);
    else return 1;
    return -1;
}

/* One window through the model: tokens, translations, their lines out
 * (and the heat map); with --output, flushed to disk and recorded. */
static int run_window(const targs *a, cg_s2s *m, window *w, tr_out *o, int nth, int *refused, progress_state *ps) {
    int rc = tokenize_window(a, m, w, refused);
    if (!rc) rc = translate_window(a, m, w, ps);
    if (!rc) rc = print_window(a, m, w, o ? o->f : stdout, nth);
    /* cg_heatmap_write prints its own message (cg_last_error is not set).
     * A refused line's message has said that no heat map is written:
     * one line for one mistake. */
    if (!rc && a->attention && !*refused && cg_heatmap_write(m, a->attention, w->res, w->src, w->len, w->n, a->ids))
        rc = CLI_FAIL;
    if (rc || !o) return rc;
    tr_kill_point(NULL, nth, "out");
    if (tr_out_commit(o, 0)) return CLI_FAIL;
    tr_kill_point(NULL, nth, "rec");
    return CLI_OK;
}

/* Streams stdin through the model window by window (`per` lines, 0: one
 * window of everything). */
static int stream(const targs *a, cg_s2s *m, tr_out *o, int per) {
    int eof = 0, refused = 0, rc = CLI_OK, nth = 0;
    window w;
    if (window_init(&w, per ? per : 1024)) return CLI_FAIL;
    char *buf = NULL;
    size_t cap = 0;
    progress_state ps = {0};
    while (!rc && !eof) {
        rc = read_window(a, &w, &buf, &cap, &eof);
        /* --attention: keep reading, growing the one window. */
        while (!rc && !per && !eof && w.n == w.cap) {
            window bigger;
            if ((rc = window_init(&bigger, w.cap * 2))) break;
            memcpy(bigger.lines, w.lines, sizeof *w.lines * (size_t)w.n);
            memcpy(bigger.cut, w.cut, (size_t)w.n);
            bigger.n = w.n;
            bigger.first = w.first;
            w.n = 0;
            window_free(&w);
            w = bigger;
            rc = read_window(a, &w, &buf, &cap, &eof);
        }
        const int skip = !rc && o && w.n ? resumed_window(o, &w) : 0;
        if (skip < 0) rc = CLI_FAIL;
        if (!rc && w.n && !skip) rc = run_window(a, m, &w, o, ++nth, &refused, &ps);
        if (!rc) {
            w.first += w.n;
            window_clear(&w);
        }
    }
    if (!rc && o && o->lines < o->skip) {
        fprintf(stderr, "clgraph translate: the input has %lld lines, fewer than the %lld %s counts done\n", o->lines,
                o->skip, o->record);
        rc = CLI_FAIL;
    }
    if (!rc && o && tr_out_commit(o, 1)) rc = CLI_FAIL;
    if (ps.before > 1 && isatty(2)) fputc('\n', stderr);
    free(buf);
    window_free(&w);
    return rc ? rc : refused ? CLI_FAIL : CLI_OK;
}

/* The stream, into --output's file when there is one (its record names
 * the window size: a resumed run's windows fall where the first run's did). */
static int stream_out(const targs *a, cg_s2s *m) {
    const int per = window_lines(a);
    if (!a->output) return stream(a, m, NULL, per);
    tr_out o;
    int rc = tr_out_open(&o, a->output, a->resume, tr_hash(a->cmd_hash, &per, sizeof per)) ? CLI_FAIL : CLI_OK;
    if (!rc) rc = stream(a, m, &o, per);
    if (tr_out_close(&o) && !rc) rc = CLI_FAIL;
    return rc;
}

int cli_translate(int argc, char **argv) {
    targs a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    cli_opts o;
    memset(&o, 0, sizeof o);
    o.n_plugins = a.plugins.n;
    memcpy(o.plugins, a.plugins.list, sizeof a.plugins.list);
    cg_context *ctx = NULL;
    cg_s2s *m = NULL;
    rc = cli_context(&o, &ctx);
    if (rc) return rc;
    cg_plan_options popt = {.struct_size = sizeof(cg_plan_options), .device = a.device, .place = a.place};
    cg_profiler *prof = NULL;
    cg_s2s_load_options lopt = {.struct_size = sizeof lopt, .weights_dtype = a.weights_dtype};
    if (cg_s2s_load(ctx, a.dir, &popt, &lopt, &m)) rc = cli_fail();
    else if (a.profile && cg_profiler_create(&prof)) rc = cli_fail();
    else if (!prof || !(rc = cli_s2s_profile(m, prof))) rc = stream_out(&a, m);
    /* a trace of what ran, also when a line failed */
    if (prof && cg_profiler_write_trace(prof, a.profile) && !rc) rc = cli_fail();
    cg_s2s_free(m);
    cg_profiler_free(prof);
    cg_context_free(ctx);
    return rc;
}

int cli_s2s_graph(int argc, char **argv) {
    cg_s2s_load_options lopt = {.struct_size = sizeof lopt};
    const char *dir = NULL;
    int rc = CLI_OK;
    for (int i = 1; !rc && i < argc; i++) {
        if (!strcmp(argv[i], "--weights-dtype") && i + 1 < argc) {
            if (cli_weights_dtype("s2s-graph", argv[++i], &lopt.weights_dtype)) return CLI_USAGE;
        } else if (argv[i][0] != '-' && !dir) dir = argv[i];
        else rc = CLI_USAGE;
    }
    if (rc || !dir) {
        fprintf(stderr, "usage: clgraph s2s-graph MODEL_DIR [--weights-dtype f32|bf16|f16|int8]\n");
        return CLI_USAGE;
    }
    char *text;
    if (cg_s2s_graph_text(dir, &lopt, &text)) return cli_fail();
    fputs(text, stdout);
    free(text);
    return CLI_OK;
}
