/* clgraph quantize: a model directory with the weights of its matrix
 * products stored in fewer bytes: bf16 or f16 rounded to nearest even per
 * element, or int8 with one f32 scale per row (cg_weights_narrow; the
 * scales a tensor of their own, NAME_scale); biases, vectors and (unless
 * --embeddings) the embedding tables stay as they are. The other files of
 * the directory are copied. The seq2seq loader declares the quantized
 * weights of its products so (s2s_config.mm_dtype) and the kernels read
 * them as stored; every other weight (and every weight of a forecaster) is
 * widened or dequantized to f32 at load. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "clgraph/forecast.h"
#include "out_file.h"

/* cg_weights_narrow's pick: f32 matrices, counted. */
struct pick {
    int embeddings;
    size_t converted;
};

static int pick_matrix(const char *name, cg_dtype stored, int ndim, void *user) {
    struct pick *p = user;
    if (!cg_weights_pick_products(name, stored, ndim, &p->embeddings)) return 0;
    p->converted++;
    return 1;
}

/* Copies src to dst byte for byte, whole or not at all (out_file.h);
 * prints the error. */
static int copy_file(const char *src, const char *dst) {
    FILE *in = fopen(src, "rb");
    if (!in) {
        fprintf(stderr, "clgraph quantize: cannot read %s: %s\n", src, strerror(errno));
        return CLI_FAIL;
    }
    cli_file out;
    FILE *f = cli_file_open(&out, dst);
    if (!f) {
        fprintf(stderr, "clgraph quantize: cannot write %s: %s\n", dst, strerror(errno));
        fclose(in);
        return CLI_FAIL;
    }
    char buf[65536];
    size_t got;
    int rc = CLI_OK;
    errno = 0;
    while ((got = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, got, f) != got) break;
    if (ferror(in)) {
        fprintf(stderr, "clgraph quantize: cannot read %s: %s\n", src, strerror(errno ? errno : EIO));
        cli_file_abort(&out);
        rc = CLI_FAIL;
    } else {
        int e = cli_file_commit(&out);
        if (e) {
            fprintf(stderr, "clgraph quantize: cannot write %s: %s\n", dst, strerror(e));
            rc = CLI_FAIL;
        }
    }
    fclose(in);
    return rc;
}

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* One line: the mistake and where the usage is. */
static int usage_error(const char *msg) { return cli_usage("quantize", CLI_HINT_SEE, "%s", msg); }

/* Whether dir has file `name`. */
static int has_file(const char *dir, const char *name) {
    char *p = join(dir, name);
    struct stat st;
    int yes = p && !stat(p, &st);
    free(p);
    return yes;
}

/* The model directory loaded as translate (a directory with src.vocab, or
 * a MarianMT one with model.safetensors) or forecast would load it, on the
 * CPU, so that a copy is never made of a directory those commands refuse (a
 * config.json of "{" was copied and reported as quantized). Prints the
 * error. */
static int validate(const char *dir) {
    int s2s = has_file(dir, "src.vocab") || has_file(dir, "model.safetensors");
    cg_context *ctx = NULL;
    if (cg_context_create(NULL, &ctx)) return cli_fail();
    cg_plan_options popt = {.struct_size = sizeof(cg_plan_options), .device = "cpu"};
    int rc = CLI_OK;
    if (s2s) {
        cg_s2s *m = NULL;
        if (cg_s2s_load(ctx, dir, &popt, NULL, &m)) rc = cli_fail();
        cg_s2s_free(m);
    } else {
        cg_forecaster *m = NULL;
        if (cg_forecast_load(ctx, dir, &popt, &m)) rc = cli_fail();
        cg_forecast_free(m);
    }
    cg_context_free(ctx);
    return rc;
}

/* The other files of the three families' directories. */
static const char *const copied[] = {"config.json",
                                     "src.vocab",
                                     "tgt.vocab",
                                     "model.cg",
                                     "generation_config.json",
                                     "vocab.json",
                                     "source.spm",
                                     "target.spm",
                                     "tokenizer_config.json",
                                     "special_tokens_map.json",
                                     NULL};

/* After a failure, an output directory this run made goes with whatever
 * it wrote there; a directory that was there keeps its files (each is its
 * old or its whole new version: every file is written whole or not at
 * all). */
static void clean_up(const char *out, const char *weights) {
    char *p = join(out, weights);
    if (p) remove(p);
    free(p);
    for (int k = 0; copied[k]; k++) {
        p = join(out, copied[k]);
        if (p) remove(p);
        free(p);
    }
    rmdir(out);
}

int cli_quantize(int argc, char **argv) {
    const char *dirs[2] = {NULL, NULL}, *out = NULL, *to = NULL;
    int embeddings = 0, n_dirs = 0;
    const cli_opt opts[] = {
        {"to", 0, CLI_STR, &to, .arg = "TYPE", .help = "bf16, f16 or int8"},
        {"o", 0, CLI_STR, &out, .arg = "OUT_DIR", .help = "the quantized model's directory"},
        {"embeddings", 0, CLI_FLAG, &embeddings, .help = "quantize the embeddings too"},
        {0},
    };
    cli_spec spec = {.cmd = "quantize",
                     .opts = opts,
                     .pos = dirs,
                     .max_pos = 2,
                     .n_pos = &n_dirs,
                     .unknown_hint = CLI_HINT_SEE,
                     .value_hint = CLI_HINT_SEE};
    int rc = cli_args_parse(&spec, argc, argv);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    if (n_dirs > 1) return usage_error("one model directory");
    const char *dir = dirs[0];
    if (!dir || !out || !to) return usage_error("MODEL_DIR, --to and -o are required");
    const cg_dtype dt = cli_weight_type(to);
    if (!dt || dt == CG_F32) return usage_error("--to takes bf16, f16 or int8");
    struct stat sa, sb;
    if (!stat(dir, &sa) && !stat(out, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino)
        return usage_error("the output directory is the model directory");
    if (validate(dir)) return CLI_FAIL;
    int made_dir = mkdir(out, 0777) == 0;
    if (!made_dir && errno != EEXIST) {
        fprintf(stderr, "clgraph quantize: cannot create %s: %s\n", out, strerror(errno));
        return CLI_FAIL;
    }
    /* a MarianMT directory's weights are model.safetensors */
    const char *wname = has_file(dir, "model.safetensors") ? "model.safetensors" : "weights.safetensors";
    char *wp = join(dir, wname), *op = join(out, wname);
    cg_weights *w = NULL, *q = NULL;
    struct pick pk = {embeddings, 0};
    rc = wp && op ? CLI_OK : CLI_FAIL;
    if (!rc && cg_weights_open(wp, &w)) rc = cli_fail();
    if (!rc && cg_weights_narrow(w, dt, pick_matrix, &pk, &q)) rc = cli_fail();
    if (!rc && cg_weights_write(q, op)) rc = cli_fail();
    for (int k = 0; !rc && copied[k]; k++) {
        char *s = join(dir, copied[k]), *d = join(out, copied[k]);
        struct stat st;
        if (!s || !d) rc = CLI_FAIL;
        else if (!stat(s, &st)) rc = copy_file(s, d);
        free(s);
        free(d);
    }
    if (rc && made_dir) clean_up(out, wname);
    struct stat si, so;
    if (!rc && !stat(wp, &si) && !stat(op, &so))
        fprintf(stderr, "clgraph quantize: %zu of %d tensors to %s, %.1f MiB -> %.1f MiB: %s\n", pk.converted,
                cg_weights_count(w), to, (double)si.st_size / 1048576.0, (double)so.st_size / 1048576.0, out);
    cg_weights_free(q);
    cg_weights_free(w);
    free(wp);
    free(op);
    return rc;
}
