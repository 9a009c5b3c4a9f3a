/* clgraph check / fmt / ops: look at a graph or the operator registry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clgraph/plugin.h"

int cli_check(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse(argc, argv, "weights,input,rewrites", &o);
    if (rc) return rc;
    cg_context *ctx = NULL;
    cg_model *m = NULL;
    cg_weights *w = NULL;
    char *desc = NULL;
    rc = cli_context(&o, &ctx);
    if (rc) goto done;
    if ((rc = cli_load_model(&o, ctx, &m, &w))) goto done;
    if (cg_model_describe(m, &desc)) {
        rc = cli_fail();
        goto done;
    }
    fputs(desc, stdout);
    printf("%s: ok\n", o.model);
done:
    free(desc);
    cg_model_free(m);
    cg_weights_free(w);
    cg_context_free(ctx);
    cli_opts_free(&o);
    return rc;
}

int cli_fmt(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse(argc, argv, "in-place", &o);
    if (rc) return rc;
    cg_context *ctx = NULL;
    cg_model *m = NULL;
    char *text = NULL;
    rc = cli_context(&o, &ctx);
    if (rc) goto done;
    if (cg_model_load(ctx, o.model, &m) || cg_model_print(m, &text)) {
        rc = cli_fail();
        goto done;
    }
    if (o.in_place) {
        /* Write beside the file, then rename: a failure never truncates it. */
        size_t len = strlen(o.model) + 16;
        char *tmp = malloc(len);
        FILE *f = NULL;
        if (tmp) snprintf(tmp, len, "%s.fmt~", o.model);
        if (!tmp || !(f = fopen(tmp, "w")) || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, o.model) != 0) {
            fprintf(stderr, "clgraph: cannot write %s\n", o.model);
            if (tmp) remove(tmp);
            rc = CLI_FAIL;
        }
        free(tmp);
    } else {
        fputs(text, stdout);
    }
done:
    free(text);
    cg_model_free(m);
    cg_context_free(ctx);
    return rc;
}

static const char *attr_type(cg_attr_type t) {
    return t == CG_ATTR_INT ? "int" : t == CG_ATTR_FLOAT ? "float" : t == CG_ATTR_STRING ? "string" : "ints";
}

int cli_ops(int argc, char **argv) {
    const char *only = NULL;
    cli_plugins plugins = {0};
    const cli_opt opts[] = {
        {"plugin", 0, CLI_CALL, &plugins, .fn = cli_opt_plugin, .arg = "LIB", .help = "load an op library"},
        {0},
    };
    cli_spec spec = {.cmd = "ops",
                     .opts = opts,
                     .pos = &only,
                     .max_pos = 1,
                     .pos_name = "[NAME]",
                     .unknown_hint = CLI_HINT_CMD,
                     .value_hint = CLI_HINT_CMD};
    int rc = cli_args_parse(&spec, argc, argv);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    cli_opts o;
    memset(&o, 0, sizeof o);
    o.n_plugins = plugins.n;
    memcpy(o.plugins, plugins.list, sizeof plugins.list);
    cg_context *ctx = NULL;
    rc = cli_context(&o, &ctx);
    if (rc) return rc;
    int found = 0;
    for (int i = 0; i < cg_context_op_count(ctx); i++) {
        const cg_op_def *d = cg_context_op_def(ctx, i);
        if (only && strcmp(only, d->name)) continue;
        found = 1;
        if (!only) {
            printf("%s\n", d->name);
            continue;
        }
        printf("%s: %s\n", d->name, d->doc ? d->doc : "");
        printf("  inputs: %d..%s", d->min_inputs, d->max_inputs < 0 ? "any" : "");
        if (d->max_inputs >= 0) printf("%d", d->max_inputs);
        if (d->input_names) {
            printf(" (");
            for (int k = 0; d->input_names[k]; k++) printf("%s%s", k ? ", " : "", d->input_names[k]);
            printf(")");
        }
        printf("\n  outputs: %d..%d\n", d->min_outputs, d->max_outputs);
        for (int a = 0; a < d->n_attrs; a++)
            printf("  attribute %s: %s%s%s%s\n", d->attrs[a].name, attr_type(d->attrs[a].type),
                   d->attrs[a].required ? " (required)" : "", d->attrs[a].doc ? " - " : "",
                   d->attrs[a].doc ? d->attrs[a].doc : "");
        printf("  kernels:");
        for (int k = 0; k < d->n_kernels; k++)
            printf(" %s", d->kernels[k].backend == CG_BACKEND_CPU ? "cpu" : "opencl");
        printf("%s\n", d->decompose ? "  (has a decomposition)" : "");
    }
    cg_context_free(ctx);
    if (only && !found) {
        fprintf(stderr, "clgraph: no operator named '%s'\n", only);
        return CLI_FAIL;
    }
    return CLI_OK;
}
