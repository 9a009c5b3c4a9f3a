/* clgraph run: graph text + safetensors + .npy inputs -> .npy outputs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"

/* Prints element k of a tensor of any dtype but f16, bf16 and the narrow
 * types (which are printed through an f32 or i32 copy). */
static void print_elem(const cg_tensor *t, int64_t k) {
    const void *d = cg_tensor_data_const(t);
    switch (cg_tensor_dtype(t)) {
    case CG_F32: printf(" %.6g", (double)((const float *)d)[k]); return;
    case CG_I64: printf(" %lld", (long long)((const int64_t *)d)[k]); return;
    case CG_I8: printf(" %d", (int)((const int8_t *)d)[k]); return;
    case CG_U8: printf(" %u", (unsigned)((const uint8_t *)d)[k]); return;
    case CG_I16: printf(" %d", (int)((const int16_t *)d)[k]); return;
    case CG_U16: printf(" %u", (unsigned)((const uint16_t *)d)[k]); return;
    case CG_U32: printf(" %lu", (unsigned long)((const uint32_t *)d)[k]); return;
    case CG_U64: printf(" %llu", (unsigned long long)((const uint64_t *)d)[k]); return;
    case CG_BOOL: printf(" %s", ((const uint8_t *)d)[k] ? "True" : "False"); return;
    default: printf(" %d", (int)((const int32_t *)d)[k]); return; /* CG_I32 */
    }
}

/* Prints a tensor the way numpy would summarise it: shape, then values
 * (the first and last few of each row when it is long). */
static void print_tensor(const char *name, const cg_tensor *t) {
    int nd = cg_tensor_ndim(t);
    cg_dtype dt = cg_tensor_dtype(t);
    printf("%s: %s[", name, cg_dtype_name(dt));
    for (int i = 0; i < nd; i++) printf("%s%lld", i ? ", " : "", (long long)cg_tensor_dim(t, i));
    printf("]\n");
    int64_t n = cg_tensor_numel(t);
    int64_t row = nd ? cg_tensor_dim(t, nd - 1) : 1;
    if (row <= 0) return;
    cg_tensor *wide = NULL; /* f16, bf16 and the float8/float4 values exactly as f32, i4..u2 as i32 */
    const int narrow_float = dt >= CG_F8E4M3FN && dt <= CG_F4E2M1, narrow_int = dt >= CG_I4 && dt <= CG_U2;
    if (dt == CG_F16 || dt == CG_BF16 || narrow_float || narrow_int) {
        if (cg_tensor_convert(t, narrow_int ? CG_I32 : CG_F32, &wide)) {
            printf("  (values not shown: %s)\n", cg_last_error());
            return;
        }
        t = wide;
    }
    int64_t rows = n / row, shown = 0;
    for (int64_t r = 0; r < rows; r++) {
        if (rows > 12 && r == 6) {
            printf("  ... (%lld rows)\n", (long long)(rows - 12));
            r = rows - 6;
        }
        printf(" ");
        for (int64_t c = 0; c < row; c++) {
            if (row > 12 && c == 6) {
                printf(" ...");
                c = row - 6;
            }
            print_elem(t, r * row + c);
        }
        printf("\n");
        shown++;
    }
    cg_tensor_free(wide);
}

/* --stats: the time per node, from one more run (warm, profiled: each
 * step waited for) so first-run costs (compiling, uploading weights) do not
 * count; --profile's trace keeps both runs. */
static int stats_table(cg_plan *plan, cg_profiler *prof, const cli_opts *o, cg_tensor **in, int n_out) {
    cg_profiler *warm = NULL;
    cg_tensor *out[256] = {0};
    char *table = NULL;
    const char *const *names = (const char *const *)o->input_names;
    int rc = cg_profiler_create(&warm) || cg_plan_set_profiler(plan, warm) ||
             cg_plan_run(plan, o->n_inputs, names, in, n_out, out) || cg_profiler_table(warm, 20, &table);
    for (int k = 0; k < n_out; k++) cg_tensor_free(out[k]), out[k] = NULL;
    if (!rc && o->profile) /* the trace shows a warm run too */
        rc = cg_plan_set_profiler(plan, prof) || cg_plan_run(plan, o->n_inputs, names, in, n_out, out);
    for (int k = 0; k < n_out; k++) cg_tensor_free(out[k]);
    if (rc) cli_fail();
    else fprintf(stderr, "time per node (a second, warm run, each step waited for):\n%s", table);
    cg_plan_set_profiler(plan, NULL);
    cg_profiler_free(warm);
    free(table);
    return rc;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --repeat N: N more runs into the outputs of the first (no allocation),
 * each timed on the wall clock; the median and the fastest to stderr. */
static int repeat_runs(cg_plan *plan, const cli_opts *o, cg_tensor **in, int n_out, cg_tensor **out) {
    double *ms = malloc(sizeof *ms * (size_t)o->repeat);
    if (!ms) {
        fprintf(stderr, "clgraph run: out of memory\n");
        return CLI_FAIL;
    }
    for (long r = 0; r < o->repeat; r++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (cg_plan_run_into(plan, o->n_inputs, (const char *const *)o->input_names, in, n_out, out)) {
            free(ms);
            return cli_fail();
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        ms[r] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
    }
    qsort(ms, (size_t)o->repeat, sizeof *ms, by_value);
    const long n = o->repeat;
    const double median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    fprintf(stderr, "clgraph run: %ld runs on %s: median %.4f ms, fastest %.4f ms\n", n, cg_plan_device(plan), median,
            ms[0]);
    free(ms);
    return CLI_OK;
}

int cli_run(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse(argc, argv, "weights,graph,input,output,device,place,stats,profile,repeat,rewrites", &o);
    if (rc) {
        cli_opts_free(&o);
        return rc;
    }
    cg_context *ctx = NULL;
    cg_model *m = NULL;
    cg_weights *w = NULL;
    cg_plan *plan = NULL;
    cg_profiler *prof = NULL;
    cg_tensor *in[64] = {0}, *out[256] = {0};
    int n_out = 0;
    rc = cli_context(&o, &ctx);
    if (rc) goto done;
    rc = cli_load_plan(&o, ctx, &m, &w, &plan);
    if (rc) goto done;
    rc = CLI_FAIL;
    const cg_graph *g = o.graph ? cg_model_graph(m, o.graph) : cg_model_graph_at(m, 0);
    if (cli_load_inputs(&o, g, in)) goto done;
    for (int k = 0; k < cg_graph_input_count(g); k++) {
        int given = 0;
        for (int i = 0; i < o.n_inputs; i++) given |= !strcmp(o.input_names[i], cg_graph_input_name(g, k));
        if (!given) {
            fprintf(stderr, "clgraph: graph '%s' needs input '%s': give --input %s=FILE.npy\n", cg_graph_name(g),
                    cg_graph_input_name(g, k), cg_graph_input_name(g, k));
            goto done;
        }
    }
    n_out = cg_graph_output_count(g);
    if (n_out > 256) n_out = 256;
    if ((o.profile || o.stats) && (cg_profiler_create(&prof) || cg_plan_set_profiler(plan, o.profile ? prof : NULL))) {
        rc = cli_fail();
        goto done;
    }
    if (cg_plan_run(plan, o.n_inputs, (const char *const *)o.input_names, in, n_out, out)) {
        rc = cli_fail();
        goto done;
    }
    if (o.repeat && repeat_runs(plan, &o, in, n_out, out)) goto done;
    if (o.output && mkdir(o.output, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "clgraph: cannot create output directory %s: %s\n", o.output, strerror(errno));
        goto done;
    }
    for (int k = 0; k < n_out; k++) {
        const char *name = cg_graph_output_name(g, k);
        if (o.output) {
            size_t len = strlen(o.output) + strlen(name) + 8;
            char *path = malloc(len);
            if (!path) goto done;
            snprintf(path, len, "%s/%s.npy", o.output, name);
            /* an exporter's value names are paths (/m/layer.0/Add_output_0) */
            for (char *c = path + strlen(o.output) + 1; *c; c++)
                if (*c == '/') *c = '_';
            int bad = cg_tensor_save_npy(out[k], path) != CG_OK;
            if (!bad) printf("%s -> %s\n", name, path);
            free(path);
            if (bad) {
                rc = cli_fail();
                goto done;
            }
        } else {
            print_tensor(name, out[k]);
        }
    }
    if (o.stats) {
        cg_plan_stats st;
        cg_plan_stats_get(plan, &st, NULL);
        cg_plan_memory_info mem;
        cg_plan_memory(plan, &mem);
        fprintf(stderr,
                "stats: %llu kernel launches, %llu copies (%llu bytes), %llu host allocations, "
                "%llu device objects created, %llu library calls (CLBlast), plan memory %llu bytes, %.3f ms\n",
                (unsigned long long)st.kernel_launches, (unsigned long long)st.copies,
                (unsigned long long)st.bytes_copied, (unsigned long long)st.host_allocs,
                (unsigned long long)st.device_objects, (unsigned long long)st.library_calls,
                (unsigned long long)mem.arena_bytes, st.run_ms);
        if (stats_table(plan, prof, &o, in, n_out)) goto done;
    }
    if (o.profile && cg_profiler_write_trace(prof, o.profile)) {
        rc = cli_fail();
        goto done;
    }
    if (o.profile) fprintf(stderr, "profile: %s (open it in ui.perfetto.dev)\n", o.profile);
    rc = CLI_OK;
done:
    for (int k = 0; k < n_out; k++) cg_tensor_free(out[k]);
    for (int i = 0; i < 64; i++) cg_tensor_free(in[i]);
    cg_plan_free(plan);
    cg_profiler_free(prof);
    cg_model_free(m);
    cg_weights_free(w);
    cg_context_free(ctx);
    cli_opts_free(&o);
    return rc;
}
