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
    if (*n == CLI_MAX_PLUGINS) {
        fprintf(stderr, "clgraph %s: at most %d --plugin options\n", cmd, CLI_MAX_PLUGINS);
        return CLI_USAGE;
    }
    list[(*n)++] = path;
    return CLI_OK;
}

int cli_parse(int argc, char **argv, const char *allowed, cli_opts *o) {
    memset(o, 0, sizeof *o);
    const char *cmd = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || a[1] == 0) {
            if (!o->model) o->model = a;
            else if (!o->positional2 && allowed_opt(allowed, "positional2")) o->positional2 = a;
            else {
                fprintf(stderr, "clgraph %s: unexpected argument '%s'\n", cmd, a);
                return CLI_USAGE;
            }
            continue;
        }
        const char *name = a + (a[1] == '-' ? 2 : 1);
        char key[64];
        const char *val = NULL;
        const char *eq = strchr(name, '=');
        size_t kl = eq ? (size_t)(eq - name) : strlen(name);
        if (kl >= sizeof key) kl = sizeof key - 1;
        memcpy(key, name, kl);
        key[kl] = 0;
        if (!strcmp(key, "i")) strcpy(key, "in-place");
        int is_flag = !strcmp(key, "in-place") || !strcmp(key, "stats");
        if (!allowed_opt(allowed, key) && strcmp(key, "plugin")) {
            fprintf(stderr, "clgraph %s: unknown option '%s' (try 'clgraph %s --help')\n", cmd, a, cmd);
            return CLI_USAGE;
        }
        if (!is_flag) {
            if (eq) val = eq + 1;
            else if (i + 1 < argc) val = argv[++i];
            else {
                fprintf(stderr, "clgraph %s: option '%s' needs a value\n", cmd, a);
                return CLI_USAGE;
            }
        }
        if (!strcmp(key, "in-place")) o->in_place = 1;
        else if (!strcmp(key, "stats")) o->stats = 1;
        else if (!strcmp(key, "repeat")) {
            char *end = NULL;
            o->repeat = strtol(val, &end, 10);
            if (!end || end == val || *end || o->repeat < 1 || o->repeat > 1000000) {
                fprintf(stderr, "clgraph %s: --repeat takes a count from 1 to 1000000, got '%s'\n", cmd, val);
                return CLI_USAGE;
            }
        } else if (!strcmp(key, "place")) {
            if (cli_check_place(cmd, val)) return CLI_USAGE;
            o->place = val;
        }
        else if (!strcmp(key, "bind")) o->bind = val;
        else if (!strcmp(key, "dot")) o->dot = val;
        else if (!strcmp(key, "profile")) o->profile = val;
        else if (!strcmp(key, "weights")) o->weights = val;
        else if (!strcmp(key, "graph")) o->graph = val;
        else if (!strcmp(key, "output")) o->output = val;
        else if (!strcmp(key, "device")) o->device = val;
        else if (!strcmp(key, "plugin")) {
            if (cli_add_plugin(cmd, o->plugins, &o->n_plugins, val)) return CLI_USAGE;
        } else if (!strcmp(key, "input")) {
            const char *sep = strchr(val, '=');
            if (!sep || sep == val || !sep[1]) {
                fprintf(stderr, "clgraph %s: --input takes NAME=FILE.npy, got '%s'\n", cmd, val);
                return CLI_USAGE;
            }
            if (o->n_inputs == 64) {
                fprintf(stderr, "clgraph %s: at most 64 --input options\n", cmd);
                return CLI_USAGE;
            }
            char *nm = malloc((size_t)(sep - val) + 1);
            if (!nm) return CLI_FAIL;
            memcpy(nm, val, (size_t)(sep - val));
            nm[sep - val] = 0;
            o->input_names[o->n_inputs] = nm;
            o->input_files[o->n_inputs++] = sep + 1;
        }
    }
    if (!o->model) {
        fprintf(stderr, "clgraph %s: missing %s (try 'clgraph %s --help')\n", cmd,
                strcmp(cmd, "import") ? "MODEL.cg" : "MODEL.onnx", cmd);
        return CLI_USAGE;
    }
    return CLI_OK;
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
    fprintf(stderr, "clgraph %s: --weights-dtype takes f32, bf16, f16 or int8, got '%s'\n", cmd, v);
    return CLI_USAGE;
}

int cli_check_place(const char *cmd, const char *rules) {
    for (const char *r = rules;; r++) {
        size_t n = strcspn(r, ","), eq = strcspn(r, "=");
        if (n == 0 || eq == 0 || eq + 1 >= n) {
            fprintf(stderr, "clgraph %s: --place takes PATTERN=DEVICE rules separated by commas "
                            "(e.g. 'decoder=opencl:1,*attn*=cpu'), got '%s'\n", cmd, rules);
            return CLI_USAGE;
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
    cg_onnx_options opt = {.struct_size = sizeof opt, .n_given = o->n_inputs,
                           .given_names = (const char *const *)o->input_names,
                           .given = (const cg_tensor *const *)given};
    if (!rc && cg_model_load_onnx_ex(ctx, o->model, &opt, m)) rc = cli_fail();
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

/* The declared dtype of g's input `name`, or 0 when it has none. */
static cg_dtype input_dtype(const cg_graph *g, const char *name) {
    for (int k = 0; k < cg_graph_input_count(g); k++)
        if (!strcmp(cg_graph_input_name(g, k), name)) return cg_graph_input_dtype(g, k);
    return (cg_dtype)0;
}

int cli_load_inputs(const cli_opts *o, const cg_graph *g, cg_tensor **in) {
    for (int i = 0; i < o->n_inputs; i++) {
        const char *name = o->input_names[i];
        if (cg_tensor_load_npy(o->input_files[i], &in[i])) {
            fprintf(stderr, "clgraph: --input %s: %s\n", name, cg_last_error());
            return CLI_FAIL;
        }
        cg_dtype want = input_dtype(g, name), have = cg_tensor_dtype(in[i]);
        if (!want || want == have || !cg_dtype_convert_exact(have, want)) continue;
        cg_tensor *c;
        if (cg_tensor_convert(in[i], want, &c)) {
            fprintf(stderr, "clgraph: --input %s: %s: input '%s' of graph '%s' is %s: %s\n", name,
                    o->input_files[i], name, cg_graph_name(g), cg_dtype_name(want), cg_last_error());
            return CLI_FAIL;
        }
        cg_tensor_free(in[i]);
        in[i] = c;
    }
    return CLI_OK;
}

int cli_s2s_profile(cg_s2s *m, cg_profiler *prof) {
    static const char *const graphs[] = {"encoder", "decoder", "decoder_logp"};
    for (int i = 0; i < 3; i++) {
        cg_plan *p = NULL;
        if (cg_s2s_plan(m, graphs[i], &p) || (p && cg_plan_set_profiler(p, prof))) return cli_fail();
    }
    return CLI_OK;
}
