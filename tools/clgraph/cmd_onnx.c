/* clgraph import (an ONNX model to the text IR and a safetensors file) and
 * clgraph onnx-test (ONNX's backend test folders run on every device). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "out_file.h"

/* ---- import ---- */

static int write_weights(const cg_model *m, const char *path) {
    cg_weights *w = cg_model_weights(m);
    size_t n = cg_weights_count(w);
    const char **names = calloc(n + 1, sizeof *names);
    cg_tensor **ts = calloc(n + 1, sizeof *ts);
    int rc = names && ts ? CLI_OK : CLI_FAIL;
    if (rc) fprintf(stderr, "clgraph: out of memory\n");
    for (size_t i = 0; !rc && i < n; i++) {
        names[i] = cg_weights_name(w, i);
        if (cg_weights_get_as(w, names[i], cg_weights_dtype(w, i), &ts[i])) rc = cli_fail();
    }
    if (!rc && cg_weights_save(path, (int)n, names, (const cg_tensor *const *)ts)) rc = cli_fail();
    for (size_t i = 0; ts && i < n; i++) cg_tensor_free(ts[i]);
    free(ts);
    free(names);
    return rc;
}

static int write_text(const char *path, const char *text) {
    cli_file out;
    FILE *f = cli_file_open(&out, path);
    int err = f ? 0 : errno;
    if (f) fputs(text, f);
    if (f) err = cli_file_commit(&out);
    if (err) {
        fprintf(stderr, "clgraph import: cannot write %s: %s\n", path, strerror(err));
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* The text on stdout, checked here: the warning about initializers not
 * written must not come before an error that the text was not written
 * either (two lines for one failure). */
static int write_stdout(const char *text) {
    errno = 0;
    if (fputs(text, stdout) < 0 || fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "clgraph import: cannot write the graph text to stdout: %s\n", strerror(errno ? errno : EIO));
        return CLI_FAIL;
    }
    return CLI_OK;
}

int cli_import(int argc, char **argv) {
    cli_opts o;
    const char *out = NULL;
    /* -o FILE is this command's own; the rest are the common options */
    char **args = calloc((size_t)argc + 1, sizeof *args);
    int n = 0;
    if (!args) return CLI_FAIL;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && !strcmp(argv[i], "-o")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "clgraph import: -o needs a file name\n");
                free(args);
                return CLI_USAGE;
            }
            out = argv[++i];
            continue;
        }
        args[n++] = argv[i];
    }
    int rc = cli_parse(n, args, "weights,input,rewrites", &o);
    free(args);
    if (rc) return rc;
    if (!cli_is_onnx(o.model)) {
        fprintf(stderr, "clgraph import: %s: expected an ONNX model (.onnx)\n", o.model);
        cli_opts_free(&o);
        return CLI_USAGE;
    }
    const char *weights = o.weights;
    o.weights = NULL; /* an output here, not a file to bind */
    cg_context *ctx = NULL;
    cg_model *m = NULL;
    char *text = NULL, *wpath = NULL;
    if ((rc = cli_context(&o, &ctx)) || (rc = cli_load_model(&o, ctx, &m, NULL))) goto done;
    if (cg_model_print(m, &text)) {
        rc = cli_fail();
        goto done;
    }
    size_t nw = cg_weights_count(cg_model_weights(m));
    if (!weights && out && nw) { /* OUT.cg -> OUT.safetensors */
        size_t l = strlen(out);
        wpath = malloc(l + 16);
        if (!wpath) goto done;
        memcpy(wpath, out, l + 1);
        if (l > 3 && !strcmp(out + l - 3, ".cg")) wpath[l - 3] = 0;
        strcat(wpath, ".safetensors");
        weights = wpath;
    }
    if (weights && (rc = write_weights(m, weights))) goto done;
    rc = out ? write_text(out, text) : write_stdout(text);
    if (!rc && !weights && nw)
        fprintf(stderr, "clgraph import: %zu initializers not written (give --weights FILE.safetensors)\n", nw);
    else if (!rc && out) fprintf(stderr, "clgraph import: %s%s%s\n", out, weights ? ", " : "", weights ? weights : "");
done:
    free(wpath);
    free(text);
    cg_model_free(m);
    cg_context_free(ctx);
    cli_opts_free(&o);
    return rc;
}

/* ---- onnx-test ---- */

/* ONNX's backend test tolerances (onnx/backend/test/runner), the
 * defaults of --rtol and --atol. */
#define RTOL 1e-3
#define ATOL 1e-7

typedef struct tolerance {
    double rtol, atol;
    int one_plan; /* --one-plan: import once, every data set through one plan */
} tolerance;

typedef struct tensors {
    int n;
    cg_tensor *t[64];
    char *names[64];
} tensors;

/* The name a test data file gives its tensor (the graph input's). */
static const char *cg_tensor_name_hint(const tensors *ts, int i) { return ts->names[i]; }

static void tensors_free(tensors *ts) {
    for (int i = 0; i < ts->n; i++) {
        cg_tensor_free(ts->t[i]);
        free(ts->names[i]);
    }
    ts->n = 0;
}

/* PREFIX_0.pb, PREFIX_1.pb ... of a test data folder, each the proto the
 * model's input or output is (sequences and optionals: onnx_data.c). */
static int read_pbs(const char *dir, const char *prefix, tensors *ts, char *why, size_t wsz) {
    char path[4200];
    cg_onnx_kind *kinds = NULL;
    int n_kinds = 0, ok = 1;
    ts->n = 0;
    snprintf(path, sizeof path, "%s/../model.onnx", dir);
    if (cg_onnx_io_kinds(path, !strcmp(prefix, "output"), &n_kinds, &kinds)) n_kinds = 0; /* the import says why */
    for (int i = 0; ok && i < 64; i++) {
        snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, i);
        struct stat sb;
        if (stat(path, &sb) != 0) break;
        ok = cli_onnx_read_value(path, i < n_kinds ? kinds[i] : CG_ONNX_TENSOR, !strcmp(prefix, "output"), 64, &ts->n,
                                 ts->t, ts->names, why, wsz);
    }
    free(kinds);
    return ok;
}

static double elem(const cg_tensor *t, int64_t i) {
    const void *d = cg_tensor_data_const(t);
    switch (cg_tensor_dtype(t)) {
    case CG_F32: return ((const float *)d)[i];
    case CG_I32: return ((const int32_t *)d)[i];
    case CG_I64: return (double)((const int64_t *)d)[i];
    case CG_I8:
    case CG_I4:
    case CG_I2: return ((const int8_t *)d)[i]; /* i4 and i2 are held as an int8 */
    case CG_I16: return ((const int16_t *)d)[i];
    case CG_U16: return ((const uint16_t *)d)[i];
    case CG_U32: return ((const uint32_t *)d)[i];
    case CG_U64: return (double)((const uint64_t *)d)[i];
    default:
        return ((const uint8_t *)d)[i]; /* U8, BOOL, u4, u2, the float8/float4 codes; f16/bf16 are converted first */
    }
}

/* Integer element i exactly (a double holds only 53 bits of an i64/u64). */
static void int_text(const cg_tensor *t, int64_t i, char *b, size_t n) {
    const void *d = cg_tensor_data_const(t);
    if (cg_tensor_dtype(t) == CG_U64) snprintf(b, n, "%llu", (unsigned long long)((const uint64_t *)d)[i]);
    else if (cg_tensor_dtype(t) == CG_I64) snprintf(b, n, "%lld", (long long)((const int64_t *)d)[i]);
    else snprintf(b, n, "%.0f", elem(t, i));
}

/* got against want with ONNX's tolerances; 0 and why on a mismatch. */
static int compare(const cg_tensor *got, const cg_tensor *want, const tolerance *tol, double *max_err, char *why,
                   size_t wsz) {
    cg_tensor *g2 = NULL, *w2 = NULL;
    /* ONNX's runner compares bfloat16 outputs within two of its ULPs
     * (rtol at least 2^-6): 1e-3 is below one */
    const double rtol = cg_tensor_dtype(want) == CG_BF16 && tol->rtol < 0x1p-6 ? 0x1p-6 : tol->rtol;
    if (cg_tensor_dtype(want) == CG_F16 || cg_tensor_dtype(want) == CG_BF16) cg_tensor_convert(want, CG_F32, &w2);
    if (cg_tensor_dtype(got) == CG_F16 || cg_tensor_dtype(got) == CG_BF16) cg_tensor_convert(got, CG_F32, &g2);
    const cg_tensor *g = g2 ? g2 : got, *w = w2 ? w2 : want;
    int ok = 1;
    if (cg_tensor_ndim(g) != cg_tensor_ndim(w)) {
        snprintf(why, wsz, "%d dims, expected %d", cg_tensor_ndim(g), cg_tensor_ndim(w));
        ok = 0;
    }
    for (int d = 0; ok && d < cg_tensor_ndim(g); d++)
        if (cg_tensor_dim(g, d) != cg_tensor_dim(w, d)) {
            snprintf(why, wsz, "dim %d is %lld, expected %lld", d, (long long)cg_tensor_dim(g, d),
                     (long long)cg_tensor_dim(w, d));
            ok = 0;
        }
    int exact = cg_tensor_dtype(w) != CG_F32;
    int64_t n = ok ? cg_tensor_numel(w) : 0;
    const size_t es = cg_dtype_size(cg_tensor_dtype(w));
    if (exact && cg_tensor_dtype(g) == cg_tensor_dtype(w)) { /* integers and bool: bit for bit */
        const unsigned char *pg = cg_tensor_data_const(g), *pw = cg_tensor_data_const(w);
        for (int64_t i = 0; ok && i < n; i++)
            if (memcmp(pg + (size_t)i * es, pw + (size_t)i * es, es)) {
                char a[32], b[32];
                int_text(g, i, a, sizeof a), int_text(w, i, b, sizeof b);
                snprintf(why, wsz, "element %lld: %s, expected %s", (long long)i, a, b);
                *max_err = fmax(*max_err, fabs(elem(g, i) - elem(w, i)));
                ok = 0;
            }
        n = 0;
    }
    for (int64_t i = 0; i < n; i++) {
        double a = elem(g, i), b = elem(w, i);
        if (isnan(a) && isnan(b)) continue;
        double e = fabs(a - b);
        if (a == b) continue;
        if (!isnan(e) && e > *max_err) *max_err = e;
        if (!exact && !isinf(b) && e <= tol->atol + rtol * fabs(b)) continue;
        if (ok) snprintf(why, wsz, "element %lld: %.9g, expected %.9g", (long long)i, a, b);
        ok = 0;
    }
    cg_tensor_free(g2);
    cg_tensor_free(w2);
    return ok;
}

/* ONNX 1.12's test data stores bfloat16 tensors as UINT16 (their bits):
 * a u16 input where a bf16 one belongs is read as such (a bf16 copy *tmp
 * owns); any other tensor is t itself. */
static const cg_tensor *bf16_bits(const cg_tensor *t, cg_dtype want, cg_tensor **tmp) {
    *tmp = NULL;
    if (want != CG_BF16 || cg_tensor_dtype(t) != CG_U16) return t;
    int64_t d[8];
    const int nd = cg_tensor_ndim(t);
    for (int i = 0; i < nd && i < 8; i++) d[i] = cg_tensor_dim(t, i);
    if (cg_tensor_create(CG_BF16, nd, d, tmp)) return t;
    memcpy(cg_tensor_data(*tmp), cg_tensor_data_const(t), (size_t)cg_tensor_numel(t) * 2);
    return *tmp;
}

enum { R_PASS, R_FAIL, R_UNSUP, R_ERROR };
static const char *const result_name[] = {"pass", "FAIL", "unsupported", "ERROR"};

/* R_PASS, or R_FAIL and why at the first output out of tolerance (R_UNSUP
 * for ONNX 1.12's bfloat16 outputs, see below). */
static int compare_outputs(const cg_graph *g, cg_tensor *const *out, const tensors *want, int n_out,
                           const tolerance *tol, double *max_err, char *why, size_t wsz) {
    for (int i = 0; i < n_out; i++) {
        char w[400] = "";
        if (cg_tensor_dtype(out[i]) == CG_BF16 && cg_tensor_dtype(want->t[i]) == CG_U16) {
            /* measured: ONNX Runtime rounds Cast to bfloat16 to nearest even
             * as clgraph does; ONNX 1.12's expected bits were truncated */
            snprintf(why, wsz,
                     "output %d (%s): the expected bfloat16 values are UINT16 bits made by truncation (ONNX 1.12's "
                     "test data), not ONNX Runtime's rounding to nearest even",
                     i, cg_graph_output_name(g, i));
            return R_UNSUP;
        }
        if (!compare(out[i], want->t[i], tol, max_err, w, sizeof w)) {
            snprintf(why, wsz, "output %d (%s): %s", i, cg_graph_output_name(g, i), w);
            return R_FAIL;
        }
    }
    return R_PASS;
}

/* Imports, plans and runs one data set; R_* and why. */
static int run_set(cg_context *ctx, const char *model, const char *device, const tolerance *tol, tensors *in,
                   tensors *want, double *max_err, char *why, size_t wsz) {
    const char *names[64];
    cg_model *probe = NULL;
    for (int i = 0; i < in->n; i++) names[i] = cg_tensor_name_hint(in, i);
    for (int i = 0; i < in->n; i++) {
        /* unnamed test data (PyTorch's exports): the graph's inputs in order */
        if (names[i] && *names[i]) continue;
        if (!probe && cg_model_load_onnx(ctx, model, NULL, &probe)) break;
        cg_graph *pg = cg_model_graph_at(probe, 0);
        names[i] = i < cg_graph_input_count(pg) ? cg_graph_input_name(pg, i) : NULL;
    }
    cg_onnx_options opt = {
        .struct_size = sizeof opt, .n_given = in->n, .given_names = names, .given = (const cg_tensor *const *)in->t};
    cg_model *m = NULL;
    cg_plan *plan = NULL;
    cg_tensor *out[64] = {0}, *run_in[64], *tmp[64] = {0};
    const char *run_names[64];
    int result = R_PASS, n_out = 0, n_run = 0;
    cg_status st = cg_model_load_onnx(ctx, model, &opt, &m);
    if (st) {
        snprintf(why, wsz, "%s", cg_last_error());
        result = st == CG_ERR_IO ? R_ERROR : R_UNSUP;
        goto done;
    }
    cg_graph *g = cg_model_graph_at(m, 0);
    n_out = cg_graph_output_count(g);
    if (n_out != want->n || n_out > 64) {
        snprintf(why, wsz, "the graph has %d outputs, the test data %d", n_out, want->n);
        n_out = 0;
        result = R_ERROR;
        goto done;
    }
    /* the inputs that stayed inputs (others were folded at import) */
    for (int i = 0; i < in->n; i++)
        for (int k = 0; k < cg_graph_input_count(g); k++)
            if (names[i] && !strcmp(names[i], cg_graph_input_name(g, k))) {
                run_names[n_run] = names[i];
                run_in[n_run] = (cg_tensor *)bf16_bits(in->t[i], cg_graph_input_dtype(g, k), &tmp[n_run]);
                n_run++;
            }
    cg_plan_options popt = {.struct_size = sizeof(cg_plan_options), .device = device};
    if ((st = cg_plan_create(m, NULL, &popt, &plan)) ||
        (st = cg_plan_run(plan, n_run, run_names, run_in, n_out, out))) {
        snprintf(why, wsz, "%s", cg_last_error());
        result = st == CG_ERR_UNSUPPORTED ? R_UNSUP : R_ERROR;
        n_out = 0;
        goto done;
    }
    result = compare_outputs(g, out, want, n_out, tol, max_err, why, wsz);
done:
    for (int i = 0; i < n_out; i++) cg_tensor_free(out[i]);
    for (int i = 0; i < n_run; i++) cg_tensor_free(tmp[i]);
    cg_plan_free(plan);
    cg_model_free(m);
    cg_model_free(probe);
    return result;
}

/* One data set through a plan made once (--one-plan): the test data's
 * names, or the graph's inputs in order where they have none. */
static int run_on_plan(cg_plan *plan, const cg_graph *g, tensors *in, const tensors *want, const tolerance *tol,
                       double *max_err, char *why, size_t wsz) {
    const char *names[64];
    cg_tensor *out[64] = {0};
    const int n_out = cg_graph_output_count(g);
    for (int i = 0; i < in->n; i++)
        names[i] = in->names[i] && *in->names[i] ? in->names[i]
                   : i < cg_graph_input_count(g) ? cg_graph_input_name(g, i)
                                                 : "";
    if (n_out != want->n || n_out > 64) {
        snprintf(why, wsz, "the graph has %d outputs, the test data %d", n_out, want->n);
        return R_ERROR;
    }
    /* an input the graph does not read (an optional only tested for a
     * value) is not fed; one given empty was imported holding a value */
    cg_tensor *run_in[64];
    int n_run = 0;
    for (int i = 0; i < in->n; i++) {
        if (!in->t[i]) {
            snprintf(why, wsz, "input '%s' is given empty: the model is imported once, with a value there", names[i]);
            return R_UNSUP;
        }
        for (int k = 0; k < cg_graph_input_count(g); k++)
            if (!strcmp(names[i], cg_graph_input_name(g, k))) names[n_run] = names[i], run_in[n_run++] = in->t[i];
    }
    cg_status st = cg_plan_run(plan, n_run, names, run_in, n_out, out);
    if (st) {
        snprintf(why, wsz, "%s", cg_last_error());
        return st == CG_ERR_UNSUPPORTED ? R_UNSUP : R_ERROR;
    }
    const int result = compare_outputs(g, out, want, n_out, tol, max_err, why, wsz);
    for (int i = 0; i < n_out; i++) cg_tensor_free(out[i]);
    return result;
}

/* Reads data set `set` of dir; 0 when there is none, -1 (why set, *result
 * R_UNSUP or R_ERROR) when it does not read. */
static int read_set(const char *dir, int set, tensors *in, tensors *want, int *result, char *why, size_t wsz) {
    char data[4200];
    struct stat sb;
    snprintf(data, sizeof data, "%s/test_data_set_%d", dir, set);
    if (stat(data, &sb) != 0) return 0;
    if (!read_pbs(data, "input", in, why, wsz) || !read_pbs(data, "output", want, why, wsz)) {
        *result = strstr(why, "is not supported") ? R_UNSUP : R_ERROR;
        return -1;
    }
    return 1;
}

/* --one-plan: the model imported once, with no input values given, and
 * every data set run through one plan (another binding of its dynamic dims
 * each), as an application uses an exported model. */
static int run_test_one_plan(cg_context *ctx, const char *dir, const char *device, const tolerance *tol,
                             double *max_err, char *why, size_t wsz) {
    char model[4200];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    cg_model *m = NULL;
    cg_plan *plan = NULL;
    cg_plan_options popt = {.struct_size = sizeof(cg_plan_options), .device = device};
    cg_status st = cg_model_load_onnx(ctx, model, NULL, &m);
    if (st) { /* as run_set: what does not import is outside the set, a file that does not read an error */
        snprintf(why, wsz, "%s", cg_last_error());
        return st == CG_ERR_IO ? R_ERROR : R_UNSUP;
    }
    if ((st = cg_plan_create(m, NULL, &popt, &plan))) {
        snprintf(why, wsz, "%s", cg_last_error());
        cg_model_free(m);
        return st == CG_ERR_UNSUPPORTED ? R_UNSUP : R_ERROR;
    }
    int result = R_PASS;
    for (int set = 0; result == R_PASS; set++) {
        tensors in = {0}, want = {0};
        const int r = read_set(dir, set, &in, &want, &result, why, wsz);
        if (!r && !set) snprintf(why, wsz, "no test_data_set_0"), result = R_ERROR;
        if (r > 0) result = run_on_plan(plan, cg_model_graph_at(m, 0), &in, &want, tol, max_err, why, wsz);
        tensors_free(&in);
        tensors_free(&want);
        if (!r) break;
    }
    cg_plan_free(plan);
    cg_model_free(m);
    return result;
}

/* One test folder on one device: its result, why, the largest error. */
static int run_test(cg_context *ctx, const char *dir, const char *device, const tolerance *tol, double *max_err,
                    char *why, size_t wsz) {
    char model[4200], data[4200];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    int result = R_PASS;
    for (int set = 0; result == R_PASS; set++) {
        snprintf(data, sizeof data, "%s/test_data_set_%d", dir, set);
        struct stat sb;
        if (stat(data, &sb) != 0) {
            if (set == 0) snprintf(why, wsz, "no test_data_set_0"), result = R_ERROR;
            break;
        }
        tensors in = {0}, want = {0};
        if (!read_pbs(data, "input", &in, why, wsz) || !read_pbs(data, "output", &want, why, wsz)) {
            /* an element type clgraph has no type for is outside the set;
             * so is a model of sequences or optionals, whose data files
             * are no TensorProto: the import says so */
            result = strstr(why, "is not supported") ? R_UNSUP : R_ERROR;
            cg_model *probe = NULL;
            if (result == R_ERROR && cg_model_load_onnx(ctx, model, NULL, &probe) == CG_ERR_UNSUPPORTED) {
                snprintf(why, wsz, "%s", cg_last_error());
                result = R_UNSUP;
            }
            cg_model_free(probe);
        } else {
            result = run_set(ctx, model, device, tol, &in, &want, max_err, why, wsz);
        }
        tensors_free(&in);
        tensors_free(&want);
    }
    return result;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* DIR itself when it holds model.onnx, else its subfolders that do. */
static int collect(const char *dir, char ***list, int *n, int *cap) {
    char p[4200];
    struct stat sb;
    snprintf(p, sizeof p, "%s/model.onnx", dir);
    if (stat(p, &sb) == 0) {
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 256;
            char **nl = realloc(*list, (size_t)*cap * sizeof *nl);
            if (!nl) return 0;
            *list = nl;
        }
        return ((*list)[(*n)++] = strdup(dir)) != NULL;
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "clgraph onnx-test: %s: not a test folder (no model.onnx) and not readable\n", dir);
        return 0;
    }
    int first = *n;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s/model.onnx", dir, e->d_name);
        if (stat(p, &sb) != 0) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (!collect(p, list, n, cap)) {
            closedir(d);
            return 0;
        }
    }
    closedir(d);
    if (*n > first) qsort(*list + first, (size_t)(*n - first), sizeof **list, by_name);
    return 1;
}

/* --device D, repeated: up to 16. */
typedef struct dev_list {
    const char *d[16];
    int n;
} dev_list;

static int add_device(const char *cmd, const char *v, void *dst) {
    dev_list *l = dst;
    if (l->n == 16) return cli_usage(cmd, CLI_HINT_NONE, "at most 16 --device options");
    l->d[l->n++] = v;
    return CLI_OK;
}

/* The options, then every DIR's test folders in name order. */
static int onnx_test_args(int argc, char **argv, dev_list *dev, cli_plugins *plugins, tolerance *tol, char ***dirs,
                          int *n_dirs) {
    const cli_opt opts[] = {
        {"device", 0, CLI_CALL, dev, .fn = add_device, .arg = "D",
         .help = "run on this device (repeatable; default: the CPU and every OpenCL device)"},
        {"rtol", 0, CLI_DBL, &tol->rtol, 0, 1e30, "a number >= 0", .arg = "R", .help = "relative tolerance"},
        {"atol", 0, CLI_DBL, &tol->atol, 0, 1e30, "a number >= 0", .arg = "A", .help = "absolute tolerance"},
        {"one-plan", 0, CLI_FLAG, &tol->one_plan,
         .help = "import each model once, no input values given, and run every data set through one plan"},
        {"plugin", 0, CLI_CALL, plugins, .fn = cli_opt_plugin, .arg = "LIB", .help = "load an op library"},
        {0},
    };
    const char **pos = calloc((size_t)argc + 1, sizeof *pos);
    int n_pos = 0, cap = 0;
    if (!pos) return CLI_FAIL;
    cli_spec spec = {.cmd = "onnx-test",
                     .opts = opts,
                     .pos = pos,
                     .min_pos = 1,
                     .max_pos = argc,
                     .n_pos = &n_pos,
                     .pos_name = "DIR...",
                     .unknown_hint = CLI_HINT_CMD,
                     .value_hint = CLI_HINT_CMD,
                     .missing_hint = CLI_HINT_CMD};
    int rc = cli_args_parse(&spec, argc, argv);
    for (int i = 0; !rc && i < n_pos; i++) {
        int before = *n_dirs;
        if (!collect(pos[i], dirs, n_dirs, &cap)) {
            rc = CLI_FAIL;
        } else if (*n_dirs == before) {
            fprintf(stderr, "clgraph onnx-test: %s: no test folders in it (a folder with model.onnx)\n", pos[i]);
            rc = CLI_FAIL;
        }
    }
    free(pos);
    return rc;
}

int cli_onnx_test(int argc, char **argv) {
    dev_list dev = {{0}, 0};
    cli_plugins plugins = {0};
    const char **devices = dev.d;
    int n_dirs = 0;
    char **dirs = NULL;
    tolerance tol = {RTOL, ATOL, 0};
    int rc = onnx_test_args(argc, argv, &dev, &plugins, &tol, &dirs, &n_dirs);
    int n_dev = dev.n;
    if (rc == CLI_HELP) {
        printf("Imports every ONNX test folder (model.onnx, test_data_set_*) under each DIR and compares\n"
               "its outputs with the expected ones on each device.\n");
        return CLI_OK;
    }
    cg_context *ctx = NULL;
    if (!rc && cg_context_create(NULL, &ctx)) rc = cli_fail();
    for (int i = 0; !rc && i < plugins.n; i++)
        if (cg_context_load_plugin(ctx, plugins.list[i])) rc = cli_fail();
    if (!rc && !n_dev) /* the CPU and every OpenCL device */
        for (int i = 0; i < cg_device_count() && n_dev < 16; i++) {
            char b[512];
            devices[n_dev++] = cg_device_describe(i, b, sizeof b);
        }
    int count[16][4] = {{0}};
    if (!rc) printf("%-50s %-10s %-12s %-10s %s\n", "test", "device", "result", "max error", "reason");
    for (int t = 0; !rc && t < n_dirs; t++) {
        const char *base = strrchr(dirs[t], '/');
        base = base ? base + 1 : dirs[t];
        for (int d = 0; d < n_dev; d++) {
            char why[1200] = "";
            double max_err = 0;
            int r = tol.one_plan ? run_test_one_plan(ctx, dirs[t], devices[d], &tol, &max_err, why, sizeof why)
                                 : run_test(ctx, dirs[t], devices[d], &tol, &max_err, why, sizeof why);
            count[d][r]++;
            char err[32] = "-";
            if (r == R_PASS || r == R_FAIL) snprintf(err, sizeof err, "%.2e", max_err);
            printf("%-50s %-10s %-12s %-10s %s\n", base, devices[d], result_name[r], err, why);
            fflush(stdout);
        }
    }
    int failed = 0;
    for (int d = 0; !rc && d < n_dev; d++) {
        fprintf(stderr, "clgraph onnx-test: %s: %d passed, %d failed, %d unsupported, %d errors (of %d)\n", devices[d],
                count[d][R_PASS], count[d][R_FAIL], count[d][R_UNSUP], count[d][R_ERROR], n_dirs);
        failed |= count[d][R_FAIL] || count[d][R_ERROR];
    }
    if (failed) rc = CLI_FAIL;
    for (int i = 0; i < n_dirs; i++) free(dirs[i]);
    free(dirs);
    cg_context_free(ctx);
    return rc;
}
