/* clgraph devices / conform: what devices exist, and whether every
 * operator's device kernels agree with its CPU kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
} report;

static void print_row(const cg_conform_row *r, void *user) {
    const report *rep = user;
    char err[32] = "-";
    if (r->cases_run) snprintf(err, sizeof err, "%.2e", r->max_abs_error);
    char cases[32];
    if (r->cases_skipped) snprintf(cases, sizeof cases, "%d (+%d skipped)", r->cases_run, r->cases_skipped);
    else snprintf(cases, sizeof cases, "%d", r->cases_run);
    printf("%-14s %-10s %-16s %-10s %s\n", r->op, r->device, cases, err, verdict(r->result));
    if (rep->verbose && r->shapes && r->shapes[0]) printf("    shapes: %s\n", r->shapes);
    if (r->message && r->message[0]) printf("    %s\n", r->message);
    fflush(stdout);
}

int cli_conform(int argc, char **argv) {
    cg_conform_options opt;
    memset(&opt, 0, sizeof opt);
    cli_opts o;
    memset(&o, 0, sizeof o);
    report rep = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--quick")) opt.quick = 1;
        else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) rep.verbose = 1;
        else if (i + 1 < argc && !strcmp(a, "--op")) opt.op = argv[++i];
        else if (i + 1 < argc && !strcmp(a, "--device")) opt.device = argv[++i];
        else if (i + 1 < argc && !strcmp(a, "--seed")) opt.seed = strtoull(argv[++i], NULL, 10);
        else if (i + 1 < argc && !strcmp(a, "--plugin")) {
            if (cli_add_plugin("conform", o.plugins, &o.n_plugins, argv[++i])) return CLI_USAGE;
        } else {
            fprintf(stderr, "clgraph conform: unexpected argument '%s' (try 'clgraph --help')\n", a);
            return CLI_USAGE;
        }
    }
    cg_context *ctx;
    int rc = cli_context(&o, &ctx);
    if (rc) return rc;
    if (cg_device_note()) {
        fprintf(stderr, "clgraph: note: %s; nothing to compare the CPU kernels with\n", cg_device_note());
        cg_context_free(ctx);
        return CLI_OK;
    }
    printf("%-14s %-10s %-16s %-10s %s\n", "op", "device", "cases", "max error", "result");
    int failed = 0;
    if (cg_conform(ctx, &opt, print_row, &rep, &failed)) {
        rc = cli_fail();
    } else if (failed) {
        fprintf(stderr, "clgraph: conform: %d op/device pair%s failed\n", failed, failed == 1 ? "" : "s");
        rc = CLI_FAIL;
    }
    cg_context_free(ctx);
    return rc;
}
