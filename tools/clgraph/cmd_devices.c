/* clgraph devices / conform: what devices exist, and whether every
 * operator's device kernels agree with its CPU kernel. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cli_devices(int argc, char **argv) {
    if (argc > 1) return cli_usage("devices", CLI_HINT_NONE, "unexpected argument '%s'", argv[1]);
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
    size_t w = 14;
    const int n = n_ops ? n_ops : cg_context_op_count(ctx);
    for (int i = 0; i < n; i++) {
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
    const char *name = sig == SIGSEGV   ? "SIGSEGV"
                       : sig == SIGBUS  ? "SIGBUS"
                       : sig == SIGABRT ? "SIGABRT"
                       : sig == SIGFPE  ? "SIGFPE"
                                        : "SIGILL";
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

#define MAX_CONFORM_OPS 256

typedef struct op_list {
    const char *names[MAX_CONFORM_OPS];
    int n;
} op_list;

/* --op NAME[,NAME...], repeatable: the names, split in place (the value is
 * argv's own string). */
static int add_ops(const char *cmd, const char *v, void *dst) {
    op_list *l = dst;
    char *list = (char *)v;
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (l->n == MAX_CONFORM_OPS)
            return cli_usage(cmd, CLI_HINT_NONE, "--op: more than %d operators", MAX_CONFORM_OPS);
        l->names[l->n++] = t;
    }
    return CLI_OK;
}

/* --seed N: as strtoull reads it (anything else is 0, the default seed). */
static int set_seed(const char *cmd, const char *v, void *dst) {
    (void)cmd;
    *(uint64_t *)dst = strtoull(v, NULL, 10);
    return CLI_OK;
}

static int conform_args(int argc, char **argv, cg_conform_options *opt, report *rep, op_list *ops,
                        cli_plugins *plugins) {
    int timeout = (int)case_timeout;
    const cli_opt opts[] = {
        {"quick", 0, CLI_FLAG, &opt->quick, .help = "small cases only"},
        {"verbose", 'v', CLI_FLAG, &rep->verbose, .help = "every case, with timings"},
        {"plugin-only", 0, CLI_FLAG, &opt->plugin_only, .help = "only the plugins' operators"},
        {"op", 0, CLI_CALL, ops, .fn = add_ops, .arg = "NAME[,NAME...]", .help = "only these operators"},
        {"device", 0, CLI_STR, &opt->device, .arg = "DEVICE", .help = "only this device"},
        {"seed", 0, CLI_CALL, &opt->seed, .fn = set_seed, .arg = "N", .help = "random seed"},
        {"timeout", 0, CLI_INT, &timeout, 1, 86400, "seconds from 1 to 86400", .arg = "S",
         .help = "seconds a kernel run may take"},
        {"plugin", 0, CLI_CALL, plugins, .fn = cli_opt_plugin, .arg = "LIB", .help = "load an op library"},
        {0},
    };
    cli_spec spec = {.cmd = "conform", .opts = opts, .unknown_hint = CLI_HINT_CMD, .value_hint = CLI_HINT_CMD};
    int rc = cli_args_parse(&spec, argc, argv);
    case_timeout = (unsigned)timeout;
    return rc;
}

int cli_conform(int argc, char **argv) {
    cg_conform_options opt;
    memset(&opt, 0, sizeof opt);
    opt.struct_size = sizeof opt;
    report rep = {0};
    static op_list ops;
    cli_plugins plugins = {0};
    int rc = conform_args(argc, argv, &opt, &rep, &ops, &plugins);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    cli_opts o;
    memset(&o, 0, sizeof o);
    o.n_plugins = plugins.n;
    memcpy(o.plugins, plugins.list, sizeof plugins.list);
    opt.ops = ops.names;
    opt.n_ops = ops.n;
    opt.starting = note_case;
    opt.timing = rep.verbose;
    arm_crash_handler();
    cg_context *ctx;
    rc = cli_context(&o, &ctx);
    if (rc) return rc;
    if (cg_device_note()) {
        fprintf(stderr, "clgraph: note: %s; nothing to compare the CPU kernels with\n", cg_device_note());
        cg_context_free(ctx);
        return CLI_OK;
    }
    rep.op_w = op_width(ctx, ops.names, ops.n, opt.plugin_only);
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
