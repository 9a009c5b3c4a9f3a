/* clgraph plan: where every node of a graph runs, for a placement and a
 * binding of its dimensions, with copies, memory and estimated cost. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_plan(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse(argc, argv, "weights,graph,device,place,bind,dot,input", &o);
    if (rc) {
        cli_opts_free(&o);
        return rc;
    }
    cg_context *ctx = NULL;
    cg_model *m = NULL;
    cg_weights *w = NULL;
    cg_plan *plan = NULL;
    cg_tensor *in[64] = {0}, *out[256] = {0};
    char *text = NULL, *bind = NULL;
    int n_out = 0;
    rc = cli_context(&o, &ctx);
    if (rc) goto done;
    rc = cli_load_plan(&o, ctx, &m, &w, &plan);
    if (rc) goto done;
    rc = CLI_FAIL;
    const cg_graph *g = o.graph ? cg_model_graph(m, o.graph) : cg_model_graph_at(m, 0);
    if (o.n_inputs) {
        /* Real inputs: run once so auto placement measures on real data;
         * the binding is then read off the inputs' shapes. */
        if (cli_load_inputs(&o, g, in)) goto done;
        n_out = cg_graph_output_count(g);
        if (n_out > 256) n_out = 256;
        if (cg_plan_run(plan, o.n_inputs, (const char *const *)o.input_names, in, n_out, out)) {
            rc = cli_fail();
            goto done;
        }
        if (!o.bind) {
            /* Rebuild "B=3,S=7" from the inputs' symbolic dims. */
            size_t cap = 1024, u = 0;
            bind = calloc(1, cap);
            char *desc = NULL;
            if (!bind) goto done;
            for (int k = 0; k < cg_graph_input_count(g); k++) {
                const char *name = cg_graph_input_name(g, k);
                const cg_tensor *t = NULL;
                for (int i = 0; i < o.n_inputs; i++)
                    if (!strcmp(o.input_names[i], name)) t = in[i];
                if (!t || cg_graph_input_dims(g, k, &desc)) continue;
                /* desc is like "B,S" with "" for fixed dims */
                int d = 0;
                for (char *tok = desc, *next; tok && d < cg_tensor_ndim(t); tok = next, d++) {
                    next = strchr(tok, ',');
                    if (next) *next++ = 0;
                    if (*tok && u + strlen(tok) + 32 < cap)
                        u += (size_t)snprintf(bind + u, cap - u, "%s%s=%lld", u ? "," : "", tok,
                                              (long long)cg_tensor_dim(t, d));
                }
                free(desc);
                desc = NULL;
            }
        }
    } else if (!o.bind) {
        bind = calloc(1, 1);
    }
    if (cg_plan_describe(plan, o.bind ? o.bind : bind, 0, &text)) {
        rc = cli_fail();
        goto done;
    }
    fputs(text, stdout);
    if (o.dot) {
        free(text);
        text = NULL;
        FILE *f = NULL;
        if (cg_plan_describe(plan, o.bind ? o.bind : bind, 1, &text)) {
            rc = cli_fail();
            goto done;
        }
        if (!(f = fopen(o.dot, "w")) || fputs(text, f) < 0 || fclose(f) != 0) {
            fprintf(stderr, "clgraph: cannot write %s\n", o.dot);
            goto done;
        }
        printf("graphviz: %s (render with: dot -Tsvg %s -o plan.svg)\n", o.dot, o.dot);
    }
    rc = CLI_OK;
done:
    free(text);
    free(bind);
    for (int k = 0; k < n_out; k++) cg_tensor_free(out[k]);
    for (int i = 0; i < 64; i++) cg_tensor_free(in[i]);
    cg_plan_free(plan);
    cg_model_free(m);
    cg_weights_free(w);
    cg_context_free(ctx);
    cli_opts_free(&o);
    return rc;
}
