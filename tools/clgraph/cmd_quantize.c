/* clgraph quantize: a model directory with the weights of its matrix
 * products stored in fewer bytes: bf16 or f16 rounded to nearest even per
 * element, or int8 with one f32 scale per row (cg_tensor_quantize_rows; the
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

#include "cli.h"

/* A weight of a matrix product: 2-D, named *.weight or an RNN's
 * weight_ih / weight_hh; an embedding table only with --embeddings. */
static int is_matrix(const char *name, int ndim, int embeddings) {
    if (ndim != 2) return 0;
    const size_t n = strlen(name);
    const int weight = (n >= 7 && !strcmp(name + n - 7, ".weight")) || strstr(name, ".weight_ih") ||
                       strstr(name, ".weight_hh");
    if (!weight) return 0;
    return embeddings || !strstr(name, "embed");
}

/* Copies src to dst byte for byte; prints the error. */
static int copy_file(const char *src, const char *dst) {
    FILE *in = fopen(src, "rb"), *out = in ? fopen(dst, "wb") : NULL;
    int rc = CLI_OK;
    if (!in || !out) {
        fprintf(stderr, "clgraph quantize: cannot %s %s: %s\n", in ? "write" : "read", in ? dst : src, strerror(errno));
        rc = CLI_FAIL;
    }
    char buf[65536];
    size_t got;
    while (!rc && (got = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, got, out) != got) {
            fprintf(stderr, "clgraph quantize: cannot write %s: %s\n", dst, strerror(errno));
            rc = CLI_FAIL;
        }
    if (!rc && ferror(in)) {
        fprintf(stderr, "clgraph quantize: cannot read %s\n", src);
        rc = CLI_FAIL;
    }
    if (out && fclose(out) && !rc) {
        fprintf(stderr, "clgraph quantize: cannot write %s: %s\n", dst, strerror(errno));
        rc = CLI_FAIL;
    }
    if (in) fclose(in);
    return rc;
}

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static int usage_error(const char *msg) {
    fprintf(stderr, "clgraph quantize: %s\nusage: clgraph quantize MODEL_DIR --to bf16|f16|int8 -o OUT_DIR [--embeddings]\n",
            msg);
    return CLI_USAGE;
}

int cli_quantize(int argc, char **argv) {
    const char *dir = NULL, *out = NULL, *to = NULL;
    int embeddings = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--to") || !strcmp(argv[i], "-o")) {
            if (i + 1 >= argc) return usage_error("--to and -o need a value");
            const char **slot = argv[i][1] == 'o' ? &out : &to;
            *slot = argv[i + 1];
            i++;
        } else if (!strcmp(argv[i], "--embeddings")) {
            embeddings = 1;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "clgraph quantize: unknown option '%s'\n", argv[i]);
            return CLI_USAGE;
        } else if (!dir) {
            dir = argv[i];
        } else {
            return usage_error("one model directory");
        }
    }
    if (!dir || !out || !to) return usage_error("MODEL_DIR, --to and -o are required");
    const cg_dtype dt = cli_weight_type(to);
    if (!dt || dt == CG_F32) return usage_error("--to takes bf16, f16 or int8");
    struct stat sa, sb;
    if (!stat(dir, &sa) && !stat(out, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino)
        return usage_error("the output directory is the model directory");
    if (mkdir(out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "clgraph quantize: cannot create %s: %s\n", out, strerror(errno));
        return CLI_FAIL;
    }
    char *wp = join(dir, "weights.safetensors"), *op = join(out, "weights.safetensors");
    cg_weights *w = NULL;
    int rc = wp && op ? CLI_OK : CLI_FAIL;
    if (!rc && cg_weights_open(wp, &w)) rc = cli_fail();
    const size_t n = w ? cg_weights_count(w) : 0;
    /* int8 adds a NAME_scale tensor per matrix: up to 2n tensors out */
    const char **names = calloc(2 * n + 1, sizeof *names);
    char **scale_names = calloc(n + 1, sizeof *scale_names);
    cg_tensor **ts = calloc(2 * n + 1, sizeof *ts);
    size_t n_out = n;
    if (!rc && (!names || !ts || !scale_names)) rc = CLI_FAIL;
    /* NAME_scale of an int8 matrix must not be a tensor of the model already */
    for (size_t i = 0; !rc && dt == CG_I8 && i < n; i++) {
        const char *nm = cg_weights_name(w, i);
        const size_t len = strlen(nm);
        if (len <= 6 || strcmp(nm + len - 6, "_scale")) continue;
        for (size_t j = 0; j < n; j++) {
            const char *base = cg_weights_name(w, j);
            if (strlen(base) == len - 6 && !strncmp(base, nm, len - 6) &&
                is_matrix(base, 2, embeddings) && cg_weights_dtype(w, j) == CG_F32) {
                fprintf(stderr, "clgraph quantize: %s: tensor '%s' exists already, where the int8 scales of '%s' "
                        "would go\n", wp, nm, base);
                rc = CLI_FAIL;
                break;
            }
        }
    }
    size_t converted = 0, bytes_in = 0, bytes_out = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        names[i] = cg_weights_name(w, i);
        cg_tensor *t = NULL;
        /* every tensor as it is stored; only f32 matrices change */
        if (cg_weights_get_as(w, names[i], cg_weights_dtype(w, i), &t)) {
            rc = cli_fail();
            break;
        }
        const size_t b = (size_t)cg_tensor_numel(t) * cg_dtype_size(cg_tensor_dtype(t));
        bytes_in += b;
        if (cg_tensor_dtype(t) == CG_F32 && is_matrix(names[i], cg_tensor_ndim(t), embeddings) && dt == CG_I8) {
            cg_tensor *q = NULL, *sc = NULL;
            const size_t len = strlen(names[i]) + 7;
            scale_names[i] = malloc(len);
            if (!scale_names[i] || cg_tensor_quantize_rows(t, &q, &sc)) {
                if (scale_names[i]) fprintf(stderr, "clgraph quantize: %s: tensor '%s': %s\n", wp, names[i], cg_last_error());
                cg_tensor_free(t);
                rc = CLI_FAIL;
                break;
            }
            snprintf(scale_names[i], len, "%s_scale", names[i]);
            cg_tensor_free(t);
            t = q;
            names[n_out] = scale_names[i];
            ts[n_out++] = sc;
            bytes_out += (size_t)cg_tensor_numel(sc) * sizeof(float);
            converted++;
        } else if (cg_tensor_dtype(t) == CG_F32 && is_matrix(names[i], cg_tensor_ndim(t), embeddings)) {
            cg_tensor *q = NULL;
            if (cg_tensor_convert(t, dt, &q)) {
                cg_tensor_free(t);
                rc = cli_fail();
                break;
            }
            cg_tensor_free(t);
            t = q;
            converted++;
        }
        bytes_out += (size_t)cg_tensor_numel(t) * cg_dtype_size(cg_tensor_dtype(t));
        ts[i] = t;
    }
    if (!rc && cg_weights_save(op, (int)n_out, names, (const cg_tensor *const *)ts)) rc = cli_fail();
    static const char *const others[] = {"config.json", "src.vocab", "tgt.vocab", "model.cg", NULL};
    for (int k = 0; !rc && others[k]; k++) {
        char *s = join(dir, others[k]), *d = join(out, others[k]);
        struct stat st;
        if (!s || !d) rc = CLI_FAIL;
        else if (!stat(s, &st)) rc = copy_file(s, d);
        free(s);
        free(d);
    }
    if (!rc)
        fprintf(stderr, "clgraph quantize: %zu of %zu tensors to %s, %.1f MiB -> %.1f MiB: %s\n", converted, n, to,
                (double)bytes_in / 1048576.0, (double)bytes_out / 1048576.0, out);
    for (size_t i = 0; ts && i < n_out; i++) cg_tensor_free(ts[i]);
    for (size_t i = 0; scale_names && i < n; i++) free(scale_names[i]);
    free(scale_names);
    free(ts);
    free(names);
    cg_weights_free(w);
    free(wp);
    free(op);
    return rc;
}
