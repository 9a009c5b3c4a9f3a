/* clgraph plan: where every node of a graph runs, for a placement and a
 * binding of its dimensions, with copies, memory and estimated cost; given
 * a seq2seq model directory, the same for each graph the model runs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "clgraph/seq2seq.h"
#include "out_file.h"

static void plan_usage(FILE *f) {
    fprintf(f,
            "usage: clgraph plan MODEL.cg --weights W.safetensors [--graph NAME] [--device D] [--place RULES]\n"
            "           (--bind B=1,S=30 | --input NAME=FILE.npy ...) [--dot FILE]\n"
            "       clgraph plan MODEL_DIR [--graph NAME] [--device D] [--place RULES] [--bind B=1,S=10] [--dot FILE]\n"
            "\n"
            "Shows where every node runs (device, kernel, estimated time), the copies between devices,\n"
            "the memory per device and the estimated cost per run, for one binding of the symbolic\n"
            "dimensions: --bind, or read off the --input files after one run.\n"
            "\n"
            "With a seq2seq model directory (as for translate), prints the plans of its graphs encoder,\n"
            "decoder and decoder_logp (when it has one; --graph NAME: that one only) placed by --device\n"
            "and --place. Sizes default to one sentence of 10 source tokens, decoded greedily: B=1 (rows),\n"
            "N=1 (sentences), P=1 (the previous step's rows), S=10 (source tokens); --bind overrides any\n"
            "of them (e.g. --bind S=30, or B=4,P=4 for a beam of 4's decoder step).\n"
            "\n"
            "  --device D     cpu (default), opencl:N, a device name substring, or auto\n"
            "  --place RULES  PATTERN=DEVICE,... by node or graph name (globs), e.g. 'encoder=opencl:0'\n"
            "  --rewrites L   an ONNX import's graph rewrites: all (default), none, NAMES or -NAMES\n"
            "  --dot FILE     also write Graphviz, one cluster per device; for a model directory with\n"
            "                 several graphs, one file per graph: FILE with -GRAPH before its extension\n");
}

/* Writes the Graphviz source of `plan` for `bind` to `path`. */
static int write_dot(cg_plan *plan, const char *bind, const char *path) {
    char *text = NULL;
    if (cg_plan_describe(plan, bind, 1, &text)) return cli_fail();
    cli_file out;
    FILE *f = cli_file_open(&out, path);
    int err = f ? 0 : errno;
    if (f) fputs(text, f);
    if (f) err = cli_file_commit(&out);
    free(text);
    if (err) {
        fprintf(stderr, "clgraph: cannot write %s: %s\n", path, strerror(err));
        return CLI_FAIL;
    }
    /* The picture is named after the file (plan-encoder.dot ->
     * plan-encoder.svg): one name for all made each graph's command
     * overwrite the last one's picture. */
    const char *slash = strrchr(path, '/'), *ext = strrchr(path, '.');
    if (!ext || (slash && ext < slash) || ext == (slash ? slash + 1 : path)) ext = path + strlen(path);
    printf("graphviz: %s (render with: dot -Tsvg %s -o %.*s.svg)\n", path, path, (int)(ext - path), path);
    return CLI_OK;
}

/* Prints the plan for `bind`, then writes it as Graphviz to `dot` if given. */
static int show_plan(cg_plan *plan, const char *bind, const char *dot) {
    char *text = NULL;
    if (cg_plan_describe(plan, bind, 0, &text)) return cli_fail();
    fputs(text, stdout);
    free(text);
    return dot ? write_dot(plan, bind, dot) : CLI_OK;
}

/* "B=3,S=7" rebuilt from the symbolic dims of graph g's inputs as the
 * tensors `in` (named like o->input_names) have them; NULL when out of
 * memory. */
static char *binding_of_inputs(const cli_opts *o, const cg_graph *g, cg_tensor *const *in) {
    size_t cap = 1024, u = 0;
    char *bind = calloc(1, cap);
    if (!bind) return NULL;
    for (int k = 0; k < cg_graph_input_count(g); k++) {
        const char *name = cg_graph_input_name(g, k);
        const cg_tensor *t = NULL;
        char *desc = NULL;
        for (int i = 0; i < o->n_inputs; i++)
            if (!strcmp(o->input_names[i], name)) t = in[i];
        if (!t || cg_graph_input_dims(g, k, &desc)) continue;
        /* desc is like "B,S" with "" for fixed dims */
        int d = 0;
        for (char *tok = desc, *next; tok && d < cg_tensor_ndim(t); tok = next, d++) {
            next = strchr(tok, ',');
            if (next) *next++ = 0;
            if (*tok && u + strlen(tok) + 32 < cap)
                u +=
                    (size_t)snprintf(bind + u, cap - u, "%s%s=%lld", u ? "," : "", tok, (long long)cg_tensor_dim(t, d));
        }
        free(desc);
    }
    return bind;
}

/* MODEL.cg: the plan of one graph (--graph, else the first). */
static int plan_graph_file(cli_opts *o) {
    cg_context *ctx = NULL;
    cg_model *m = NULL;
    cg_weights *w = NULL;
    cg_plan *plan = NULL;
    cg_tensor *in[64] = {0}, *out[256] = {0};
    char *bind = NULL;
    int n_out = 0;
    int rc = cli_context(o, &ctx);
    if (rc) return rc;
    rc = cli_load_plan(o, ctx, &m, &w, &plan);
    if (rc) goto done;
    rc = CLI_FAIL;
    const cg_graph *g = o->graph ? cg_model_graph(m, o->graph) : cg_model_graph_at(m, 0);
    if (o->n_inputs) {
        /* Real inputs: run once so auto placement measures on real data;
         * the binding is then read off the inputs' shapes. */
        if (cli_load_inputs(o, g, in)) goto done;
        n_out = cg_graph_output_count(g);
        if (n_out > 256) n_out = 256;
        if (cg_plan_run(plan, o->n_inputs, (const char *const *)o->input_names, in, n_out, out)) {
            rc = cli_fail();
            goto done;
        }
        if (!o->bind && !(bind = binding_of_inputs(o, g, in))) goto done;
    }
    rc = show_plan(plan, o->bind ? o->bind : bind ? bind : "", o->dot);
done:
    free(bind);
    for (int k = 0; k < n_out; k++) cg_tensor_free(out[k]);
    for (int i = 0; i < 64; i++) cg_tensor_free(in[i]);
    cg_plan_free(plan);
    cg_model_free(m);
    cg_weights_free(w);
    cg_context_free(ctx);
    return rc;
}

/* The sizes a model directory's plans get unless --bind says otherwise:
 * one sentence of 10 source tokens, decoded greedily, in the names of the
 * builder's graphs (a model.cg may use fewer, or others: then --bind). */
static const struct {
    const char *name;
    int size;
} dir_sizes[] = {{"B", 1}, {"N", 1}, {"P", 1}, {"R", 1}, {"S", 10}};

/* Whether an input of one of the model's graphs has dimension `name`. */
static int model_has_dim(const cg_model *m, const char *name) {
    for (int gi = 0; gi < cg_model_graph_count(m); gi++) {
        const cg_graph *g = cg_model_graph_at(m, gi);
        for (int k = 0; k < cg_graph_input_count(g); k++) {
            char *desc = NULL;
            int found = 0;
            if (cg_graph_input_dims(g, k, &desc)) continue;
            for (char *tok = desc, *next; tok; tok = next) {
                next = strchr(tok, ',');
                if (next) *next++ = 0;
                found |= !strcmp(tok, name);
            }
            free(desc);
            if (found) return 1;
        }
    }
    return 0;
}

/* Checks --bind's NAME=SIZE pairs before anything is loaded: a malformed
 * --bind is a mistake on the command line (exit 2), and the library's
 * message would quote the merged binding, not what the user typed. */
static int bind_check(const char *bind, long long max) {
    for (const char *s = bind; *s;) {
        while (*s == ' ' || *s == ',') s++;
        if (!*s) break;
        const char *eq = strchr(s, '=');
        size_t name_len = strcspn(s, "=, ");
        char *end = NULL;
        long long v = eq && (size_t)(eq - s) == name_len && name_len ? strtoll(eq + 1, &end, 10) : -1;
        if (!end || end == eq + 1 || (*end && *end != ',' && *end != ' ')) {
            fprintf(stderr, "clgraph plan: --bind '%s': expected NAME=SIZE pairs like B=1,S=10\n", bind);
            return CLI_USAGE;
        }
        if (v < 0 || v > max) {
            fprintf(stderr, "clgraph plan: --bind: bad size for '%.*s' (0 to %lld)\n", (int)name_len, s, max);
            return CLI_USAGE;
        }
        s = end;
    }
    return CLI_OK;
}

/* Whether --bind sizes `name`. */
static int bind_names(const char *bind, const char *name) {
    size_t n = strlen(name);
    for (const char *s = bind; *s; s += strcspn(s, ", ")) {
        while (*s == ' ' || *s == ',') s++;
        if (!strncmp(s, name, n) && s[n] == '=') return 1;
    }
    return 0;
}

/* The binding for a model directory: the default sizes its graphs use and
 * --bind does not set, then --bind. NULL when out of memory. */
static char *dir_binding(const cg_model *m, const char *user) {
    size_t cap = 64 + (user ? strlen(user) : 0), u = 0;
    char *bind = calloc(1, cap);
    if (!bind) return NULL;
    for (size_t i = 0; i < sizeof dir_sizes / sizeof dir_sizes[0]; i++)
        if ((!user || !bind_names(user, dir_sizes[i].name)) && model_has_dim(m, dir_sizes[i].name))
            u += (size_t)snprintf(bind + u, cap - u, "%s%s=%d", u ? "," : "", dir_sizes[i].name, dir_sizes[i].size);
    if (user && *user) snprintf(bind + u, cap - u, "%s%s", u ? "," : "", user);
    return bind;
}

/* FILE.dot -> FILE-GRAPH.dot (a dot in the last path component only). */
static char *dot_path(const char *dot, const char *graph) {
    const char *slash = strrchr(dot, '/'), *ext = strrchr(dot, '.');
    if (!ext || (slash && ext < slash) || ext == (slash ? slash + 1 : dot)) ext = dot + strlen(dot);
    size_t n = strlen(dot) + strlen(graph) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%.*s-%s%s", (int)(ext - dot), dot, graph, ext);
    return p;
}

static const char *const dir_graphs[] = {"encoder", "decoder", "decoder_logp"};
enum { N_DIR_GRAPHS = sizeof dir_graphs / sizeof dir_graphs[0] };

/* Describes each graph of the model (--graph: that one) before anything
 * is printed, so that a bad binding prints nothing but its error. */
static int describe_graphs(const cli_opts *o, cg_s2s *m, const char *bind, cg_plan **plans, char **texts) {
    for (int i = 0; i < N_DIR_GRAPHS; i++) {
        if (o->graph && strcmp(o->graph, dir_graphs[i])) continue;
        if (cg_s2s_plan(m, dir_graphs[i], &plans[i])) return cli_fail();
        if (!plans[i] && o->graph) {
            fprintf(stderr, "clgraph: %s: the model has no graph '%s'\n", o->model, o->graph);
            return CLI_FAIL;
        }
        if (plans[i] && cg_plan_describe(plans[i], bind, 0, &texts[i])) return cli_fail();
    }
    return CLI_OK;
}

/* Checks what a model directory takes before loading it. */
static int dir_args(const cli_opts *o) {
    if (o->weights || o->n_inputs) {
        fprintf(stderr,
                "clgraph plan: %s is a model directory: it brings its weights, and takes --bind, not "
                "--weights or --input\n",
                o->model);
        return CLI_USAGE;
    }
    char cfg[4200];
    struct stat sb;
    snprintf(cfg, sizeof cfg, "%s/config.json", o->model);
    if (stat(cfg, &sb) != 0) {
        fprintf(stderr, "clgraph: %s: not a seq2seq model directory (%s: %s)\n", o->model, cfg, strerror(errno));
        return CLI_FAIL;
    }
    if (o->graph && strcmp(o->graph, "encoder") && strcmp(o->graph, "decoder") && strcmp(o->graph, "decoder_logp")) {
        fprintf(stderr, "clgraph: %s: no graph '%s': a model directory runs encoder, decoder and decoder_logp\n",
                o->model, o->graph);
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* MODEL_DIR: the plans of the model's encoder and decoders (or --graph's),
 * each followed by its Graphviz file with --dot. */
static int plan_model_dir(const cli_opts *o) {
    int rc = dir_args(o);
    if (rc) return rc;
    cg_context *ctx = NULL;
    cg_s2s *m = NULL;
    char *bind = NULL, *texts[N_DIR_GRAPHS] = {0};
    cg_plan *plans[N_DIR_GRAPHS] = {0};
    rc = cli_context(o, &ctx);
    if (rc) return rc;
    cg_plan_options popt = {.struct_size = sizeof(cg_plan_options), .device = o->device, .place = o->place};
    rc = CLI_FAIL;
    if (cg_s2s_load(ctx, o->model, &popt, NULL, &m)) {
        rc = cli_fail();
        goto done;
    }
    if (!(bind = dir_binding(cg_s2s_model(m), o->bind))) {
        fprintf(stderr, "clgraph: out of memory\n");
        goto done;
    }
    if ((rc = describe_graphs(o, m, bind, plans, texts)) != CLI_OK) goto done;
    printf("model %s for %s%s\n", o->model, bind,
           o->bind ? "" : " (one sentence of 10 tokens, greedy; --bind to change)");
    for (int i = 0; !rc && i < N_DIR_GRAPHS; i++) {
        if (!texts[i]) continue;
        printf("\n%s", texts[i]);
        if (!o->dot) continue;
        /* Several graphs, several files. */
        char *dot = o->graph ? NULL : dot_path(o->dot, dir_graphs[i]);
        if (!o->graph && !dot) {
            fprintf(stderr, "clgraph: out of memory\n");
            rc = CLI_FAIL;
        } else {
            rc = write_dot(plans[i], bind, dot ? dot : o->dot);
        }
        free(dot);
    }
done:
    for (int i = 0; i < N_DIR_GRAPHS; i++) free(texts[i]);
    free(bind);
    cg_s2s_free(m);
    cg_context_free(ctx);
    return rc;
}

int cli_plan(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            plan_usage(stdout);
            return CLI_OK;
        }
    cli_opts o;
    int rc = cli_parse(argc, argv, "weights,graph,device,place,bind,dot,input,rewrites", &o);
    struct stat sb;
    int dir = !rc && stat(o.model, &sb) == 0 && S_ISDIR(sb.st_mode);
    /* a model directory's sizes are rows and tokens; a graph's may be any
     * element count (a plan too large for the device is refused by name) */
    if (!rc && o.bind) rc = bind_check(o.bind, dir ? 1LL << 31 : 1LL << 40);
    if (!rc) rc = dir ? plan_model_dir(&o) : plan_graph_file(&o);
    cli_opts_free(&o);
    return rc;
}
