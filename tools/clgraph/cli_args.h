/* The one option parser of the clgraph subcommands: each command declares
 * a table of its options and its positional arguments, and every usage
 * error goes out through cli_usage. Depends on the C library only, so
 * that its test compiles it alone. */
#ifndef CG_TOOLS_CLI_ARGS_H
#define CG_TOOLS_CLI_ARGS_H

#include <stdio.h>

/* Exit codes of a subcommand; CLI_HELP is the parser's "help printed"
 * (the command exits 0). */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2, CLI_HELP = 3 };

/* What follows a usage error's message: nothing, "(try 'clgraph
 * --help')", "(try 'clgraph CMD --help')" or "(see clgraph CMD --help)". */
typedef enum cli_hint { CLI_HINT_NONE, CLI_HINT_TOP, CLI_HINT_CMD, CLI_HINT_SEE } cli_hint;

typedef enum cli_kind {
    CLI_FLAG, /* no value; sets *(int *)dst to 1 (a "=value" is ignored) */
    CLI_STR,  /* *(const char **)dst = the value (argv's own string) */
    CLI_INT,  /* *(int *)dst, an integer in [min, max] */
    CLI_DBL,  /* *(double *)dst, a number in [min, max] (NaN refused) */
    CLI_CALL  /* fn(cmd, value, dst): options that append or check more */
} cli_kind;

/* Returns CLI_OK, or CLI_USAGE / CLI_FAIL after printing the error. */
typedef int (*cli_call_fn)(const char *cmd, const char *value, void *dst);

typedef struct cli_opt {
    const char *name; /* long name without the dashes; NULL ends a table */
    char alias;       /* short -x, 0 for none */
    cli_kind kind;
    void *dst;
    double min, max;   /* CLI_INT, CLI_DBL */
    const char *takes; /* range wording after "takes"; NULL: "an integer
                        * in [min, max]" or "a number in [min, max]" */
    cli_call_fn fn;    /* CLI_CALL */
    const char *arg;   /* the value's name in the help, e.g. "N" */
    const char *help;  /* one line */
} cli_opt;

typedef struct cli_spec {
    const char *cmd;     /* the subcommand, named in every error */
    const cli_opt *opts; /* ended by a NULL name */
    const char **pos;    /* max_pos slots for positional arguments */
    int min_pos, max_pos;
    int *n_pos;            /* positional arguments given; may be NULL */
    const char *pos_name;  /* named when fewer than min_pos, e.g. "MODEL_DIR" */
    cli_hint unknown_hint; /* after "unknown option '--x'" */
    cli_hint value_hint;   /* after "option '--x' needs a value" */
    cli_hint missing_hint; /* after "missing POS_NAME" */
} cli_spec;

/* Prints "clgraph CMD: <message>[ hint]" on stderr as one line and
 * returns CLI_USAGE: the only way a usage error is printed. */
int cli_usage(const char *cmd, cli_hint hint, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Parses argv[1..argc) (argv[0] is the subcommand) by s: "--name value",
 * "--name=value", "-name" and the "-x" alias alike; a later repeat of an
 * option wins (CLI_CALL options see every one); "-" and words not starting
 * with '-' are positional. "--help" / "-h" (when no option of the table
 * takes them) prints cli_args_help to stdout and returns CLI_HELP.
 * Returns CLI_OK, or the error after printing it through cli_usage. */
int cli_args_parse(const cli_spec *s, int argc, char **argv);

/* One line per option of s: "  --name, -x ARG   help". */
void cli_args_help(const cli_spec *s, FILE *f);

#endif
