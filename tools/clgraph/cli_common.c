#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int allowed_opt(const char *allowed, const char *name) {
    size_t n = strlen(name);
    for (const char *p = allowed; (p = strstr(p, name)) != NULL; p += n)
        if ((p == allowed || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return 1;
    return 0;
}

int cli_add_plugin(const char *cmd, const char **list, int *n, const char *path) {
    if (*n == CLI_MAX_PLUGINS) return cli_usage(cmd, CLI_HINT_NONE, "at most %d --plugin options", CLI_MAX_PLUGINS);
    list[(*n)++] = path;
    return CLI_OK;
}

int cli_opt_plugin(const char *cmd, const char *v, void *dst) {
    cli_plugins *p = dst;
    return cli_add_plugin(cmd, p->list, &p->n, v);
}

int cli_opt_place(const char *cmd, const char *v, void *dst) {
    if (cli_check_place(cmd, v)) return CLI_USAGE;
    *(const char **)dst = v;
    return CLI_OK;
}

int cli_opt_weights_dtype(const char *cmd, const char *v, void *dst) { return cli_weights_dtype(cmd, v, dst); }

static int opts_plugin(const char *cmd, const char *v, void *dst) {
    cli_opts *o = dst;
    return cli_add_plugin(cmd, o->plugins, &o->n_plugins, v);
}

/* --input NAME=FILE: the name copied, the file argv's own. */
static int opts_input(const char *cmd, const char *v, void *dst) {
    cli_opts *o = dst;
    const char *sep = strchr(v, '=');
    if (!sep || sep == v || !sep[1]) return cli_usage(cmd, CLI_HINT_NONE, "--input takes NAME=FILE.npy, got '%s'", v);
    if (o->n_inputs == 64) return cli_usage(cmd, CLI_HINT_NONE, "at most 64 --input options");
    char *nm = malloc((size_t)(sep - v) + 1);
    if (!nm) return CLI_FAIL;
    memcpy(nm, v, (size_t)(sep - v));
    nm[sep - v] = 0;
    o->input_names[o->n_inputs] = nm;
    o->input_files[o->n_inputs++] = sep + 1;
    return CLI_OK;
}

int cli_parse(int argc, char **argv, const char *allowed, cli_opts *o) {
    memset(o, 0, sizeof *o);
    const char *cmd = argv[0];
    const cli_opt all[] = {
        {"weights", 0, CLI_STR, &o->weights, .arg = "FILE", .help = "weights to bind"},
        {"graph", 0, CLI_STR, &o->graph, .arg = "NAME", .help = "the graph to run"},
        {"input", 0, CLI_CALL, o, .fn = opts_input, .arg = "NAME=FILE", .help = "an input from a .npy file"},
        {"output", 0, CLI_STR, &o->output, .arg = "FILE", .help = "where the output goes"},
        {"device", 0, CLI_STR, &o->device, .arg = "DEVICE", .help = "cpu or opencl[:N]"},
        {"place", 0, CLI_CALL, &o->place, .fn = cli_opt_place, .arg = "RULES", .help = "PATTERN=DEVICE,..."},
        {"rewrites", 0, CLI_STR, &o->rewrites, .arg = "LIST", .help = "graph rewrites of an ONNX import"},
        {"bind", 0, CLI_STR, &o->bind, .arg = "DIMS", .help = "dimension values"},
        {"dot", 0, CLI_STR, &o->dot, .arg = "FILE", .help = "the plan as Graphviz"},
        {"stats", 0, CLI_FLAG, &o->stats, .help = "statistics of the outputs"},
        {"profile", 0, CLI_STR, &o->profile, .arg = "FILE.json", .help = "a trace of the run"},
        {"repeat", 0, CLI_INT, &o->repeat, 1, 1000000, "a count from 1 to 1000000", .arg = "N",
         .help = "timed warm runs"},
        {"in-place", 'i', CLI_FLAG, &o->in_place, .help = "rewrite the file"},
        {"plugin", 0, CLI_CALL, o, .fn = opts_plugin, .arg = "LIB", .help = "load an op library"},
    };
    cli_opt table[sizeof all / sizeof *all + 1];
    int n = 0;
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        if (allowed_opt(allowed, all[k].name) || !strcmp(all[k].name, "plugin")) table[n++] = all[k];
    table[n] = (cli_opt){0};
    const char *pos[2] = {0};
    cli_spec spec = {.cmd = cmd,
                     .opts = table,
                     .pos = pos,
                     .min_pos = 1,
                     .max_pos = allowed_opt(allowed, "positional2") ? 2 : 1,
                     .pos_name = strcmp(cmd, "import") ? "MODEL.cg" : "MODEL.onnx",
                     .unknown_hint = CLI_HINT_CMD,
                     .value_hint = CLI_HINT_NONE,
                     .missing_hint = CLI_HINT_CMD};
    int rc = cli_args_parse(&spec, argc, argv);
    o->model = pos[0];
    o->positional2 = pos[1];
    return rc;
}

void cli_opts_free(cli_opts *o) {
    for (int i = 0; i < o->n_inputs; i++) free(o->input_names[i]);
    o->n_inputs = 0;
}

int cli_fail(void) {
    const char *e = cg_last_error();
    /* The library names the op; only here is it known that the fix is a
     * command-line option. */
    const char *hint = strstr(e, "unknown op '") ? " (an op of a plugin needs --plugin PATH or CLGRAPH_PLUGINS; "
                                                   "'clgraph ops' lists the ops loaded)"
                                                 : "";
    fprintf(stderr, "clgraph: %s%s\n", e, hint);
    return CLI_FAIL;
}

int cli_context(const cli_opts *o, cg_context **ctx) {
    if (cg_context_create(NULL, ctx)) return cli_fail();
    for (int i = 0; i < o->n_plugins; i++)
        if (cg_context_load_plugin(*ctx, o->plugins[i])) {
            cg_context_free(*ctx);
            *ctx = NULL;
            return cli_fail();
        }
    return CLI_OK;
}

cg_dtype cli_weight_type(const char *v) {
    return !strcmp(v, "f32")                        ? CG_F32
           : !strcmp(v, "bf16")                     ? CG_BF16
           : !strcmp(v, "f16")                      ? CG_F16
           : !strcmp(v, "int8") || !strcmp(v, "i8") ? CG_I8
                                                    : (cg_dtype)0;
}

int cli_weights_dtype(const char *cmd, const char *v, cg_dtype *out) {
    *out = cli_weight_type(v);
    if (*out) return CLI_OK;
    return cli_usage(cmd, CLI_HINT_NONE, "--weights-dtype takes f32, bf16, f16 or int8, got '%s'", v);
}

int cli_check_place(const char *cmd, const char *rules) {
    for (const char *r = rules;; r++) {
        size_t n = strcspn(r, ","), eq = strcspn(r, "=");
        if (n == 0 || eq == 0 || eq + 1 >= n) {
            return cli_usage(cmd, CLI_HINT_NONE,
                             "--place takes PATTERN=DEVICE rules separated by commas "
                             "(e.g. 'decoder=opencl:1,*attn*=cpu'), got '%s'",
                             rules);
        }
        r += n;
        if (!*r) return CLI_OK;
    }
}

int cli_is_onnx(const char *path) {
    size_t n = strlen(path);
    return n > 5 && !strcmp(path + n - 5, ".onnx");
}

/* An ONNX model imported with the --input values given, which the importer
 * uses where a node needs a value at import (a Reshape's shape); inputs it
 * folded away are dropped from o. */
static int load_onnx(cli_opts *o, cg_context *ctx, cg_model **m) {
    cg_tensor *given[64] = {0};
    int rc = CLI_OK;
    for (int i = 0; i < o->n_inputs && !rc; i++)
        if (cg_tensor_load_npy(o->input_files[i], &given[i])) {
            fprintf(stderr, "clgraph: --input %s: %s\n", o->input_names[i], cg_last_error());
            rc = CLI_FAIL;
        }
    cg_onnx_options opt = {.struct_size = sizeof opt,
                           .n_given = o->n_inputs,
                           .given_names = (const char *const *)o->input_names,
                           .given = (const cg_tensor *const *)given,
                           .rewrites = o->rewrites};
    if (!rc && cg_model_load_onnx(ctx, o->model, &opt, m)) rc = cli_fail();
    for (int i = 0; i < o->n_inputs; i++) cg_tensor_free(given[i]);
    if (rc) return rc;
    cg_graph *g = cg_model_graph_at(*m, 0);
    int k = 0;
    for (int i = 0; i < o->n_inputs; i++) {
        int used = 0;
        for (int j = 0; j < cg_graph_input_count(g) && !used; j++)
            used = !strcmp(cg_graph_input_name(g, j), o->input_names[i]);
        if (!used) {
            free(o->input_names[i]);
            continue;
        }
        o->input_names[k] = o->input_names[i];
        o->input_files[k++] = o->input_files[i];
    }
    o->n_inputs = k;
    return CLI_OK;
}

int cli_load_model(cli_opts *o, cg_context *ctx, cg_model **m, cg_weights **w) {
    if (cli_is_onnx(o->model)) {
        if (load_onnx(o, ctx, m)) return CLI_FAIL;
    } else if (cg_model_load(ctx, o->model, m) || cg_model_verify(*m)) {
        return cli_fail();
    }
    if (o->weights && (cg_weights_open(o->weights, w) || cg_model_bind_weights(*m, *w))) return cli_fail();
    return CLI_OK;
}

int cli_load_plan(cli_opts *o, cg_context *ctx, cg_model **m, cg_weights **w, cg_plan **plan) {
    if (cli_load_model(o, ctx, m, w)) return CLI_FAIL;
    cg_plan_options popt = {.struct_size = sizeof(cg_plan_options), .device = o->device, .place = o->place};
    if (cg_plan_create(*m, o->graph, &popt, plan)) return cli_fail();
    return CLI_OK;
}

int cli_load_inputs(const cli_opts *o, const cg_graph *g, cg_tensor **in) {
    for (int i = 0; i < o->n_inputs; i++) {
        const char *name = o->input_names[i];
        if (cg_tensor_load_npy(o->input_files[i], &in[i])) {
            fprintf(stderr, "clgraph: --input %s: %s\n", name, cg_last_error());
            return CLI_FAIL;
        }
        cg_tensor *c;
        if (cg_graph_input_convert(g, name, in[i], 0, &c)) {
            fprintf(stderr, "clgraph: --input %s: %s: %s\n", name, o->input_files[i], cg_last_error());
            return CLI_FAIL;
        }
        if (!c) continue; /* fed as it is */
        cg_tensor_free(in[i]);
        in[i] = c;
    }
    return CLI_OK;
}

int cli_s2s_profile(cg_s2s *m, cg_profiler *prof) {
    static const char *const graphs[] = {"encoder", "decoder", "decoder_logp", "cross_kv", "decoder_step_maps"};
    for (int i = 0; i < 5; i++) {
        cg_plan *p = NULL;
        /* a Transformer's cross-attention keys and values, once per batch,
         * and its step that also gives attention maps */
        if (i >= 3 && !cg_model_graph(cg_s2s_model(m), graphs[i])) break;
        if (cg_s2s_plan(m, graphs[i], &p) || (p && cg_plan_set_profiler(p, prof))) return cli_fail();
    }
    return CLI_OK;
}
