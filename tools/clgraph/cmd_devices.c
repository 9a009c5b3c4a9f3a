/* clgraph devices / conform: what devices exist, and whether every
 * operator's device kernels agree with its CPU kernel. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cli_devices(int argc, char **argv) {
    if (argc > 1) {
        fprintf(stderr, "clgraph devices: unexpected argument '%s'\n", argv[1]);
        return CLI_USAGE;
    }
    char line[2048];
    for (int i = 0; i < cg_device_count(); i++)
        if (cg_device_describe(i, line, sizeof line)) printf("%s\n", line);
    if (cg_device_note()) fprintf(stderr, "clgraph: note: %s; running on the CPU only\n", cg_device_note());
    return CLI_OK;
}

static const char *verdict(cg_conform_result r) {
    switch (r) {
    case CG_CONFORM_PASS: return "pass";
    case CG_CONFORM_FAIL: return "FAIL";
    case CG_CONFORM_NO_KERNEL: return "no kernel";
    case CG_CONFORM_NO_CASES: return "no cases";
    }
    return "?";
}

typedef struct report {
    int verbose;
    int op_w; /* the op column's width: the longest name the table can show */
} report;

/* Whether `name` is an op of `ctx` (NULL: no). */
static int has_op(const cg_context *ctx, const char *name) {
    size_t n = ctx ? cg_context_op_count(ctx) : 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(cg_context_op_name(ctx, i), name)) return 1;
    return 0;
}

/* The op column fits every op the run can report (rows stream out as they
 * are made, so the width is fixed before the first): the ops named by --op,
 * else every registered one (with --plugin-only, those a context without
 * plugins lacks); at least the header's 14. */
static int op_width(const cg_context *ctx, const char *const *ops, int n_ops, int plugin_only) {
    cg_context *bare = NULL;
    if (plugin_only && !n_ops) {
        cg_context_options o = {.struct_size = sizeof o, .no_env_plugins = 1};
        if (cg_context_create(&o, &bare)) bare = NULL;
    }
    size_t w = 14, n = n_ops ? (size_t)n_ops : cg_context_op_count(ctx);
    for (size_t i = 0; i < n; i++) {
        const char *name = n_ops ? ops[i] : cg_context_op_name(ctx, i);
        if (name && strlen(name) > w && !has_op(bare, name)) w = strlen(name);
    }
    cg_context_free(bare);
    return w > 64 ? 64 : (int)w;
}

static void print_row(const cg_conform_row *r, void *user) {
    const report *rep = user;
    char err[32] = "-";
    if (r->cases_run) snprintf(err, sizeof err, "%.2e", r->max_abs_error);
    char cases[32];
    if (r->cases_skipped) snprintf(cases, sizeof cases, "%d (+%d skipped)", r->cases_run, r->cases_skipped);
    else snprintf(cases, sizeof cases, "%d", r->cases_run);
    printf("%-*s %-10s %-16s %-10s %s\n", rep->op_w, r->op, r->device, cases, err, verdict(r->result));
    if (rep->verbose && r->shapes && r->shapes[0]) printf("    shapes: %s\n", r->shapes);
    for (const char *t = r->timings; t && *t;) {
        const char *e = strchr(t, '\n');
        int n = e ? (int)(e - t) : (int)strlen(t);
        printf("    %.*s\n", n, t);
        t += n + (e != NULL);
    }
    if (r->slow_cases)
        printf("    %d case%s SLOW: the device took over 100x the CPU kernel's time (and over 1 ms)\n", r->slow_cases,
               r->slow_cases == 1 ? "" : "s");
    if (r->message && r->message[0]) printf("    %s\n", r->message);
    fflush(stdout);
}

/* A kernel that crashes takes the process with it; what was running is
 * said first. The text is copied before each kernel runs, so the handler
 * only reads it and calls write(). */
static char crash_where[768];
static volatile sig_atomic_t crash_armed;

static void say(const char *s) {
    ssize_t r = write(2, s, strlen(s));
    (void)r;
}

static unsigned case_timeout = 300; /* seconds a kernel run may take (--timeout) */

static void note_case(const char *what, void *user) {
    (void)user;
    crash_armed = 0;
    snprintf(crash_where, sizeof crash_where, "%s", what);
    crash_armed = 1;
    alarm(case_timeout);
}

/* A kernel that never returns (an out-of-bounds read can hang a driver):
 * say which, and stop. */
static void on_timeout(int sig) {
    (void)sig;
    say("\nclgraph conform: no result after --timeout seconds");
    if (crash_armed) {
        say(" while running ");
        say(crash_where);
    }
    say("\n");
    _exit(1);
}

static void on_crash(int sig) {
    const char *name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGABRT ? "SIGABRT"
                     : sig == SIGFPE ? "SIGFPE" : "SIGILL";
    say("\nclgraph conform: ");
    say(name);
    if (crash_armed) {
        say(" while running ");
        say(crash_where);
    }
    say("\n");
    signal(sig, SIG_DFL);
    raise(sig);
}

static void arm_crash_handler(void) {
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_crash;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
    struct sigaction al;
    memset(&al, 0, sizeof al);
    al.sa_handler = on_timeout;
    sigemptyset(&al.sa_mask);
    sigaction(SIGALRM, &al, NULL);
}

/* --op NAME[,NAME...], repeatable: the names, split in place. */
static int add_ops(char *list, const char **ops, int *n, int cap) {
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n == cap) {
            fprintf(stderr, "clgraph conform: --op: more than %d operators\n", cap);
            return CLI_USAGE;
        }
        ops[(*n)++] = t;
    }
    return 0;
}

#define MAX_CONFORM_OPS 256

int cli_conform(int argc, char **argv) {
    cg_conform_options opt;
    memset(&opt, 0, sizeof opt);
    opt.struct_size = sizeof opt;
    cli_opts o;
    memset(&o, 0, sizeof o);
    report rep = {0};
    static const char *ops[MAX_CONFORM_OPS];
    int n_ops = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--quick")) opt.quick = 1;
        else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) rep.verbose = 1;
        else if (!strcmp(a, "--plugin-only")) opt.plugin_only = 1;
        else if (i + 1 < argc && !strcmp(a, "--op")) {
            if (add_ops(argv[++i], ops, &n_ops, MAX_CONFORM_OPS)) return CLI_USAGE;
        } else if (i + 1 < argc && !strcmp(a, "--device")) opt.device = argv[++i];
        else if (i + 1 < argc && !strcmp(a, "--seed")) opt.seed = strtoull(argv[++i], NULL, 10);
        else if (i + 1 < argc && !strcmp(a, "--timeout")) {
            char *end;
            unsigned long t = strtoul(argv[++i], &end, 10);
            if (*end || end == argv[i] || t < 1 || t > 86400) {
                fprintf(stderr, "clgraph conform: --timeout takes seconds from 1 to 86400, got '%s'\n", argv[i]);
                return CLI_USAGE;
            }
            case_timeout = (unsigned)t;
        }
        else if (i + 1 < argc && !strcmp(a, "--plugin")) {
            if (cli_add_plugin("conform", o.plugins, &o.n_plugins, argv[++i])) return CLI_USAGE;
        } else {
            fprintf(stderr, "clgraph conform: unexpected argument '%s' (try 'clgraph conform --help')\n", a);
            return CLI_USAGE;
        }
    }
    opt.ops = ops;
    opt.n_ops = n_ops;
    opt.starting = note_case;
    opt.timing = rep.verbose;
    arm_crash_handler();
    cg_context *ctx;
    int rc = cli_context(&o, &ctx);
    if (rc) return rc;
    if (cg_device_note()) {
        fprintf(stderr, "clgraph: note: %s; nothing to compare the CPU kernels with\n", cg_device_note());
        cg_context_free(ctx);
        return CLI_OK;
    }
    rep.op_w = op_width(ctx, ops, n_ops, opt.plugin_only);
    printf("%-*s %-10s %-16s %-10s %s\n", rep.op_w, "op", "device", "cases", "max error", "result");
    fflush(stdout); /* before a kernel can crash the process */
    int failed = 0;
    int st = cg_conform(ctx, &opt, print_row, &rep, &failed);
    alarm(0);
    crash_armed = 0;
    if (st) {
        rc = cli_fail();
    } else if (failed) {
        fprintf(stderr, "clgraph: conform: %d op/device pair%s failed\n", failed, failed == 1 ? "" : "s");
        rc = CLI_FAIL;
    }
    cg_context_free(ctx);
    return rc;
}
