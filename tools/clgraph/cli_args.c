#include "cli_args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cli_usage(const char *cmd, cli_hint hint, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "clgraph %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (hint == CLI_HINT_TOP) fprintf(stderr, " (try 'clgraph --help')");
    else if (hint == CLI_HINT_CMD) fprintf(stderr, " (try 'clgraph %s --help')", cmd);
    else if (hint == CLI_HINT_SEE) fprintf(stderr, " (see clgraph %s --help)", cmd);
    fputc('\n', stderr);
    return CLI_USAGE;
}

/* The option whose long name is key[0..keylen); NULL for none. */
static const cli_opt *find(const cli_opt *t, const char *key, size_t keylen) {
    for (; t->name; t++)
        if (strlen(t->name) == keylen && !strncmp(t->name, key, keylen)) return t;
    return NULL;
}

static const cli_opt *find_alias(const cli_opt *t, char c) {
    for (; t->name; t++)
        if (t->alias && t->alias == c) return t;
    return NULL;
}

/* A number in [o->min, o->max] into o->dst; the usage error otherwise. */
static int set_number(const char *cmd, const cli_opt *o, const char *v) {
    char *end = NULL;
    errno = 0;
    double x = o->kind == CLI_INT ? (double)strtoll(v, &end, 10) : strtod(v, &end);
    if (!errno && end != v && !*end && x >= o->min && x <= o->max) { /* NaN fails too */
        if (o->kind == CLI_INT) *(int *)o->dst = (int)x;
        else *(double *)o->dst = x;
        return CLI_OK;
    }
    if (o->takes) return cli_usage(cmd, CLI_HINT_NONE, "--%s takes %s, got '%s'", o->name, o->takes, v);
    if (o->kind == CLI_INT)
        return cli_usage(cmd, CLI_HINT_NONE, "--%s takes an integer in [%lld, %lld], got '%s'", o->name,
                         (long long)o->min, (long long)o->max, v);
    return cli_usage(cmd, CLI_HINT_NONE, "--%s takes a number in [%g, %g], got '%s'", o->name, o->min, o->max, v);
}

static int set_value(const char *cmd, const cli_opt *o, const char *v) {
    switch (o->kind) {
    case CLI_FLAG: *(int *)o->dst = 1; return CLI_OK;
    case CLI_STR: *(const char **)o->dst = v; return CLI_OK;
    case CLI_CALL: return o->fn(cmd, v, o->dst);
    default: return set_number(cmd, o, v);
    }
}

static int positional(const cli_spec *s, const char *a, int *n) {
    if (*n >= s->max_pos) return cli_usage(s->cmd, CLI_HINT_NONE, "unexpected argument '%s'", a);
    s->pos[(*n)++] = a;
    return CLI_OK;
}

/* One option argv[*i] (with its value, which may be argv[*i + 1]). */
static int option(const cli_spec *s, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char *name = a + (a[1] == '-' ? 2 : 1);
    const char *eq = strchr(name, '=');
    size_t kl = eq ? (size_t)(eq - name) : strlen(name);
    const cli_opt *o = find(s->opts, name, kl);
    if (!o && kl == 1 && a[1] != '-') o = find_alias(s->opts, name[0]);
    if (!o && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
        cli_args_help(s, stdout);
        return CLI_HELP;
    }
    if (!o) return cli_usage(s->cmd, s->unknown_hint, "unknown option '%s'", a);
    const char *v = NULL;
    if (o->kind != CLI_FLAG) {
        if (eq) v = eq + 1;
        else if (*i + 1 < argc) v = argv[++*i];
        else return cli_usage(s->cmd, s->value_hint, "option '%s' needs a value", a);
    }
    return set_value(s->cmd, o, v);
}

int cli_args_parse(const cli_spec *s, int argc, char **argv) {
    int n = 0, rc = CLI_OK;
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        rc = a[0] != '-' || a[1] == 0 ? positional(s, a, &n) : option(s, argc, argv, &i);
    }
    if (s->n_pos) *s->n_pos = n;
    if (!rc && n < s->min_pos) rc = cli_usage(s->cmd, s->missing_hint, "missing %s", s->pos_name);
    return rc;
}

void cli_args_help(const cli_spec *s, FILE *f) {
    fprintf(f, "usage: clgraph %s%s%s [options]\n", s->cmd, s->pos_name ? " " : "", s->pos_name ? s->pos_name : "");
    for (const cli_opt *o = s->opts; o->name; o++) {
        char head[64], alias[8] = "";
        if (o->alias) snprintf(alias, sizeof alias, ", -%c", o->alias);
        snprintf(head, sizeof head, "--%s%s%s%s", o->name, alias, o->kind == CLI_FLAG ? "" : " ",
                 o->kind == CLI_FLAG ? "" : (o->arg ? o->arg : "VALUE"));
        fprintf(f, "  %-28s %s\n", head, o->help ? o->help : "");
    }
}
