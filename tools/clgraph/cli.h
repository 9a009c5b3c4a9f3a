/* Shared pieces of the clgraph subcommands. */
#ifndef CG_TOOLS_CLI_H
#define CG_TOOLS_CLI_H

#include "clgraph/clgraph.h"
#include "clgraph/seq2seq.h"
#include "cli_args.h"

/* Options common to every subcommand, gathered by cli_parse. */
/* --plugin options one command takes. */
#define CLI_MAX_PLUGINS 32

typedef struct cli_opts {
    const char *model;    /* positional MODEL.cg */
    const char *weights;  /* --weights */
    const char *graph;    /* --graph */
    const char *output;   /* --output */
    const char *device;   /* --device */
    const char *place;    /* --place */
    const char *rewrites; /* --rewrites (an ONNX import's graph rewrites) */
    const char *bind;     /* --bind (plan) */
    const char *dot;      /* --dot FILE (plan) */
    int stats;            /* --stats (run) */
    int repeat;           /* --repeat N (run): timed warm runs, 0 none */
    const char *profile;  /* --profile FILE.json (run) */
    int in_place;         /* --in-place (fmt) */
    int n_inputs;
    char *input_names[64]; /* --input NAME=FILE */
    const char *input_files[64];
    int n_plugins;
    const char *plugins[CLI_MAX_PLUGINS]; /* --plugin */
    const char *positional2;              /* a second positional (ops NAME) */
} cli_opts;

/* Appends --plugin `path` to list[*n]; past CLI_MAX_PLUGINS a usage error
 * (CLI_USAGE, printed) instead of dropping it. */
int cli_add_plugin(const char *cmd, const char **list, int *n, const char *path);

/* Parses argv (argv[0] is the subcommand) with cli_args_parse. `allowed`
 * lists the options of cli_opts the subcommand takes, e.g.
 * "weights,graph,input,output" (--plugin always). Prints a usage error and
 * returns CLI_USAGE on a bad command line, CLI_HELP after --help. */
int cli_parse(int argc, char **argv, const char *allowed, cli_opts *o);
void cli_opts_free(cli_opts *o);

/* Attaches prof (NULL: detaches) to every plan of a seq2seq model:
 * encoder, decoder and decoder_logp where the model has it. Prints the
 * error. */
int cli_s2s_profile(cg_s2s *m, cg_profiler *prof);

/* Creates a context and loads --plugin libraries; prints the error. */
int cli_context(const cli_opts *o, cg_context **ctx);

/* Loads o->model, verifies it, binds o->weights (if given) and makes the
 * plan of o->graph placed by o->device / o->place; prints the error and
 * returns CLI_FAIL on failure (the caller frees whatever was made). */
int cli_load_plan(cli_opts *o, cg_context *ctx, cg_model **m, cg_weights **w, cg_plan **plan);

/* A weight type by the name the options take: f32, bf16, f16, int8 (or
 * i8); 0 for anything else. */
cg_dtype cli_weight_type(const char *v);

/* --weights-dtype VALUE of `cmd` (cli_weight_type) into *out; prints a
 * usage error (CLI_USAGE) otherwise. */
int cli_weights_dtype(const char *cmd, const char *v, cg_dtype *out);

/* cli_opt callbacks (cli_call_fn) for options several commands take.
 * --plugin PATH: dst is a cli_plugins. */
typedef struct cli_plugins {
    int n;
    const char *list[CLI_MAX_PLUGINS];
} cli_plugins;
int cli_opt_plugin(const char *cmd, const char *v, void *dst);
/* --place RULES: cli_check_place, then *(const char **)dst = v. */
int cli_opt_place(const char *cmd, const char *v, void *dst);
/* --weights-dtype NAME: cli_weights_dtype into *(cg_dtype *)dst. */
int cli_opt_weights_dtype(const char *cmd, const char *v, void *dst);

/* --place RULES is PATTERN=DEVICE[,PATTERN=DEVICE...] with neither side
 * empty: CLI_OK, else CLI_USAGE with one line on stderr (a malformed rule
 * is a command-line mistake; an unknown device is found when the plan is
 * made). */
int cli_check_place(const char *cmd, const char *rules);

/* 1 when path names an ONNX model (.onnx). */
int cli_is_onnx(const char *path);

/* Loads o->model (a graph text file, or an ONNX model imported with the
 * --input values given: inputs it folded away are dropped from o),
 * verifies it and binds o->weights if given; prints the error. */
int cli_load_model(cli_opts *o, cg_context *ctx, cg_model **m, cg_weights **w);

/* Reads each --input file into in[i] (the caller frees them) and converts
 * it to the dtype graph g declares for that input where the conversion is
 * exact (cg_dtype_convert_exact: an int64 file for an i32 input, range
 * checked, f16 for f32, ...), so that arrays numpy saves with its default
 * dtypes feed graphs as they are. Other mismatches are left to the run,
 * which names the input and both types. Prints the error naming the input
 * and returns CLI_FAIL on failure. */
int cli_load_inputs(const cli_opts *o, const cg_graph *g, cg_tensor **in);

/* Prints "clgraph: <last error>" to stderr and returns CLI_FAIL. */
int cli_fail(void);

int cli_run(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_quantize(int argc, char **argv);
int cli_import(int argc, char **argv);
int cli_onnx_test(int argc, char **argv);
/* onnx-test's data file `path` of `kind` appended to t and names (*n of
 * max): a sequence as its elements NAME.0 .. (an empty input: NAME with no
 * value); 0 and why when it does not read. */
int cli_onnx_read_value(const char *path, cg_onnx_kind kind, int output, int max, int *n, cg_tensor **t, char **names,
                        char *why, size_t wsz);
int cli_fmt(int argc, char **argv);
int cli_ops(int argc, char **argv);
int cli_devices(int argc, char **argv);
int cli_conform(int argc, char **argv);
int cli_plan(int argc, char **argv);
int cli_translate(int argc, char **argv);
int cli_s2s_graph(int argc, char **argv);
int cli_forecast(int argc, char **argv);
int cli_forecast_graph(int argc, char **argv);
int cli_bench(int argc, char **argv);
/* serve: without libmicrohttpd at build time, one line saying so (exit 1). */
int cli_serve(int argc, char **argv);
int cli_bench_first_token(int argc, char **argv); /* hidden: the child of bench */

#endif
