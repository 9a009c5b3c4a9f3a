/* The scheduler: the same graphs on the CPU, on one OpenCL device, under
 * mixed placement rules, split across two devices and placed automatically
 * give the same numbers; copies appear exactly at device boundaries; an op
 * without a kernel on its device decomposes there or fails clearly; a run
 * with shapes seen before does no work but the kernels; instances are cached
 * per binding with LRU eviction; placement rules and their errors; Graphviz
 * output; a plan compiles the OpenCL kernels it runs and no others.
 *
 * Needs two OpenCL devices: meson runs it with POCL_DEVICES="pthread pthread".
 * Never forks (PoCL hangs in a child after fork). */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache.h"
#include "opencl/cl_backend.h"
#include "opencl/cl_internal.h"
#include "clgraph/clgraph.h"
#include "plan.h"
#include "registry.h"
#include "ops_common.h"
#include "test_util.h"

static cg_context *ctx;
static char tmpdir[256];

static void setup(void) {
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cg_sched_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void) {
    cg_context_free(ctx);
    ctx = NULL;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

static const char *src_dir(void) {
    const char *s = getenv("CG_SOURCE_DIR");
    return s ? s : ".";
}

/* ---- helpers ---------------------------------------------------------- */

/* A deterministic fill in [lo, hi]. */
static void fill(float *x, int64_t n, float lo, float hi, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 12345u;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = lo + (hi - lo) * (float)((s >> 8) & 0xffffff) / (float)0xffffff;
    }
}

static cg_tensor *make_f32(int ndim, const int64_t *dims, uint32_t seed) {
    cg_tensor *t;
    ck_assert_int_eq(cg_tensor_create(CG_F32, ndim, dims, &t), CG_OK);
    fill(cg_tensor_data(t), cg_tensor_numel(t), -2, 2, seed);
    return t;
}

static double max_diff(const cg_tensor *a, const cg_tensor *b) {
    ck_assert_int_eq(cg_tensor_ndim(a), cg_tensor_ndim(b));
    for (int i = 0; i < cg_tensor_ndim(a); i++) ck_assert_int_eq(cg_tensor_dim(a, i), cg_tensor_dim(b, i));
    const float *x = cg_tensor_data_const(a), *y = cg_tensor_data_const(b);
    double m = 0;
    for (int64_t i = 0; i < cg_tensor_numel(a); i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        if (!(d <= m)) m = d; /* NaN sticks */
    }
    return m;
}

/* Max |t - ref| for a double reference of the same size. */
static double max_diff_ref(const cg_tensor *t, const double *ref, int64_t n) {
    ck_assert_int_eq(cg_tensor_numel(t), n);
    const float *x = cg_tensor_data_const(t);
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)x[i] - ref[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

/* A model parsed from text, with its weights file (when given) bound. */
typedef struct model {
    cg_model *m;
    cg_weights *w;
} model;

static model load_model(const char *text, const char *weights) {
    model r = {0};
    ck_assert_msg(cg_model_parse(ctx, text, strlen(text), "t.cg", &r.m) == CG_OK, "%s", cg_last_error());
    if (weights) {
        ck_assert_msg(cg_weights_open(weights, &r.w) == CG_OK, "%s", cg_last_error());
        ck_assert_msg(cg_model_bind_weights(r.m, r.w) == CG_OK, "%s", cg_last_error());
    }
    ck_assert_msg(cg_model_verify(r.m) == CG_OK, "%s", cg_last_error());
    return r;
}

static void free_model(model *r) {
    cg_model_free(r->m);
    cg_weights_free(r->w);
}

static cg_plan *make_plan(cg_model *m, const char *graph, const char *device, const char *place) {
    cg_plan_options o = {.struct_size = sizeof(cg_plan_options), .device = device, .place = place};
    cg_plan *p = NULL;
    ck_assert_msg(cg_plan_create(m, graph, &o, &p) == CG_OK, "device %s place %s: %s", device ? device : "-",
                  place ? place : "-", cg_last_error());
    return p;
}

static char *describe(cg_plan *p, const char *bind, int dot) {
    char *t = NULL;
    ck_assert_msg(cg_plan_describe(p, bind, dot, &t) == CG_OK, "%s", cg_last_error());
    ck_assert_ptr_nonnull(t);
    return t;
}

static int count_lines_with(const char *text, const char *needle) {
    int n = 0;
    for (const char *l = text; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        for (size_t i = 0; i + strlen(needle) <= len; i++)
            if (!strncmp(l + i, needle, strlen(needle))) {
                n++;
                break;
            }
        l = e ? e + 1 : NULL;
    }
    return n;
}

/* The number of copy steps of value `name` in a text description. */
static int count_copies_of(const char *text, const char *name) {
    int n = 0;
    for (const char *l = text; l && *l;) {
        const char *e = strchr(l, '\n');
        char line[512];
        size_t len = e ? (size_t)(e - l) : strlen(l);
        if (len >= sizeof line) len = sizeof line - 1;
        memcpy(line, l, len);
        line[len] = 0;
        int step;
        char d[64], k[64], node[256];
        if (sscanf(line, "%d %63s %63s %255s", &step, d, k, node) == 4 && !strcmp(k, "copy") && !strcmp(node, name))
            n++;
        l = e ? e + 1 : NULL;
    }
    return n;
}

/* Writes a safetensors file of f32 tensors. */
typedef struct wt {
    const char *name;
    int ndim;
    int64_t dims[4];
    const float *data;
} wt;

static void write_safetensors(const char *path, const wt *ts, int n) {
    char header[4096];
    size_t u = (size_t)snprintf(header, sizeof header, "{");
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        int64_t numel = 1;
        u += (size_t)snprintf(header + u, sizeof header - u, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[", i ? "," : "",
                              ts[i].name);
        for (int d = 0; d < ts[i].ndim; d++) {
            u += (size_t)snprintf(header + u, sizeof header - u, "%s%lld", d ? "," : "", (long long)ts[i].dims[d]);
            numel *= ts[i].dims[d];
        }
        size_t bytes = (size_t)numel * 4;
        u += (size_t)snprintf(header + u, sizeof header - u, "],\"data_offsets\":[%zu,%zu]}", off, off + bytes);
        off += bytes;
    }
    u += (size_t)snprintf(header + u, sizeof header - u, "}");
    while (u % 8) header[u++] = ' ';
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    uint64_t hl = u;
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)(hl >> (8 * i));
    ck_assert_int_eq(fwrite(le, 1, 8, f), 8);
    ck_assert_int_eq(fwrite(header, 1, u, f), u);
    for (int i = 0; i < n; i++) {
        int64_t numel = 1;
        for (int d = 0; d < ts[i].ndim; d++) numel *= ts[i].dims[d];
        ck_assert_int_eq(fwrite(ts[i].data, 4, (size_t)numel, f), (size_t)numel);
    }
    ck_assert_int_eq(fclose(f), 0);
}

/* A model parsed from text with the n tensors ts written to tmpdir/file
 * and bound. */
static model load_model_with(const char *text, const char *file, const wt *ts, int n) {
    char path[400];
    snprintf(path, sizeof path, "%s/%s", tmpdir, file);
    write_safetensors(path, ts, n);
    return load_model(text, path);
}

/* Registers a copy of a built-in op under a new name with only its CPU
 * kernel (cpu_kernel) or with no kernel at all, so that a plan must run
 * its decomposition where the copy has no kernel. */
static void register_copy(const cg_op_def *src, const char *name, int cpu_kernel) {
    static cg_op_def defs[16];
    static const cg_op_def *ptrs[16];
    static cg_plugin_desc descs[16];
    static char names[16][64];
    static int n;
    ck_assert_int_lt(n, 16);
    defs[n] = *src;
    snprintf(names[n], sizeof names[n], "%s", name);
    defs[n].name = names[n];
    defs[n].kernels = NULL;
    defs[n].n_kernels = 0;
    if (cpu_kernel)
        for (int k = 0; k < src->n_kernels; k++)
            if (src->kernels[k].backend == CG_BACKEND_CPU) {
                defs[n].kernels = &src->kernels[k];
                defs[n].n_kernels = 1;
            }
    ck_assert(!cpu_kernel || defs[n].n_kernels == 1);
    ptrs[n] = &defs[n];
    descs[n] = (cg_plugin_desc){
        sizeof(cg_plugin_desc), CG_PLUGIN_ABI_MAJOR, CG_PLUGIN_ABI_MINOR, names[n], "test", NULL, &ptrs[n], 1};
    ck_assert_msg(cg_registry_add_plugin(ctx, &descs[n], "<test>", NULL) == CG_OK, "%s", cg_last_error());
    n++;
}

/* A placement to try: the default device and the rules. */
typedef struct placement {
    const char *device, *place;
} placement;

/* ---- (a) the example GRU encoder -------------------------------------- */

typedef struct gru_case {
    model md;
    cg_tensor *in[2], *expected[2];
} gru_case;

static const char *const gru_in_names[] = {"src", "src_len"};

static gru_case gru_load(void) {
    gru_case g;
    char path[600], text_path[600];
    snprintf(text_path, sizeof text_path, "%s/models/example/model.cg", src_dir());
    snprintf(path, sizeof path, "%s/models/example/weights.safetensors", src_dir());
    ck_assert_msg(cg_model_load(ctx, text_path, &g.md.m) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_weights_open(path, &g.md.w) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_model_bind_weights(g.md.m, g.md.w) == CG_OK, "%s", cg_last_error());
    const char *files[4] = {"src.npy", "src_len.npy", "expected_keys.npy", "expected_s0.npy"};
    cg_tensor **dst[4] = {&g.in[0], &g.in[1], &g.expected[0], &g.expected[1]};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/models/example/%s", src_dir(), files[i]);
        ck_assert_msg(cg_tensor_load_npy(path, dst[i]) == CG_OK, "%s", cg_last_error());
    }
    return g;
}

static void gru_free(gru_case *g) {
    for (int i = 0; i < 2; i++) {
        cg_tensor_free(g->in[i]);
        cg_tensor_free(g->expected[i]);
    }
    free_model(&g->md);
}

START_TEST(gru_encoder_same_everywhere) {
    gru_case g = gru_load();
    static const placement pl[] = {
        {"cpu", NULL},
        {"opencl:0", NULL},
        {"opencl:1", NULL},
        /* mixed: the recurrence on opencl:0, the rest on the CPU */
        {NULL, "*=cpu,enc_rnn=opencl:0"},
        /* graph-name rule with node exceptions */
        {NULL, "encoder=opencl:1,bridge=cpu,h_*=opencl:0"},
        /* two devices with copies between them */
        {"cpu", "enc_rnn=opencl:0,h_*=opencl:1,bridge=opencl:1,s0=opencl:0"},
        {"auto", NULL},
    };
    /* Where enc_rnn and bridge must run under each placement ("" = any). */
    static const char *const want[][2] = {
        {"cpu", "cpu"},
        {"opencl:0", "opencl:0"},
        {"opencl:1", "opencl:1"},
        {"opencl:0", "cpu"},
        {"opencl:1", "cpu"},
        {"opencl:0", "opencl:1"},
        {"", ""},
    };
    cg_tensor *cpu_out[2] = {NULL, NULL};
    for (size_t i = 0; i < sizeof pl / sizeof pl[0]; i++) {
        cg_plan *p = make_plan(g.md.m, "encoder", pl[i].device, pl[i].place);
        cg_tensor *out[2];
        ck_assert_msg(cg_plan_run(p, 2, gru_in_names, g.in, 2, out) == CG_OK, "placement %zu: %s", i, cg_last_error());
        for (int k = 0; k < 2; k++) {
            double d = max_diff(out[k], g.expected[k]);
            ck_assert_msg(d <= 1e-5, "placement %zu (%s / %s): output %d differs from PyTorch by %g", i,
                          pl[i].device ? pl[i].device : "-", pl[i].place ? pl[i].place : "-", k, d);
            if (cpu_out[k]) {
                d = max_diff(out[k], cpu_out[k]);
                ck_assert_msg(d <= 1e-5, "placement %zu: output %d differs from the CPU plan by %g", i, k, d);
            }
        }
        char *t = describe(p, "B=3,S=7", 0);
        if (want[i][0][0]) {
            ck_assert_msg(!strcmp(tu_plan_step_device(t, "enc_rnn"), want[i][0]), "placement %zu: enc_rnn on '%s'\n%s",
                          i, tu_plan_step_device(t, "enc_rnn"), t);
            ck_assert_msg(!strcmp(tu_plan_step_device(t, "bridge"), want[i][1]), "placement %zu: bridge on '%s'\n%s", i,
                          tu_plan_step_device(t, "bridge"), t);
        }
        if (i == 5) { /* the split: h_n goes from opencl:0 to opencl:1 */
            ck_assert_msg(strstr(t, "opencl:0 -> opencl:1") != NULL, "%s", t);
            cg_plan_stats st;
            ck_assert_int_eq(cg_plan_stats_get(p, &st, NULL), CG_OK);
            ck_assert_uint_gt(st.copies, 2);
        }
        free(t);
        if (i == 0) {
            cpu_out[0] = out[0];
            cpu_out[1] = out[1];
        } else {
            cg_tensor_free(out[0]);
            cg_tensor_free(out[1]);
        }
        cg_plan_free(p);
    }
    cg_tensor_free(cpu_out[0]);
    cg_tensor_free(cpu_out[1]);
    gru_free(&g);
}
END_TEST

/* ---- (b) a small graph mixing matmul, linear, softmax, elementwise, concat */

static const char mix_text[] = "graph mix {\n"
                               "  input x: f32[B, 6]\n"
                               "  input y: f32[B, 6]\n"
                               "  param w1: f32[8, 6] = \"w1\"\n"
                               "  param b1: f32[8] = \"b1\"\n"
                               "  param w2: f32[8, 5] = \"w2\"\n"
                               "  l1: h = linear(x, w1, b1)\n"
                               "  t = tanh(h)\n"
                               "  m = matmul(t, w2)\n"
                               "  p = softmax(m) {axis: -1}\n"
                               "  s = sigmoid(y)\n"
                               "  c = concat(p, s) {axis: 1}\n"
                               "  q = mul(c, c)\n"
                               "  r = add(q, c)\n"
                               "  z = neg(r)\n"
                               "  output c, z, t\n"
                               "}\n";

static float mix_w1[8 * 6], mix_b1[8], mix_w2[8 * 5];

/* Writes the weights and loads the mix model. */
static model mix_load(void) {
    fill(mix_w1, 48, -1, 1, 101);
    fill(mix_b1, 8, -1, 1, 102);
    fill(mix_w2, 40, -1, 1, 103);
    wt ts[3] = {{"w1", 2, {8, 6}, mix_w1}, {"b1", 1, {8}, mix_b1}, {"w2", 2, {8, 5}, mix_w2}};
    return load_model_with(mix_text, "mix.safetensors", ts, 3);
}

/* The naive reference of mix: c [B, 11], z [B, 11], t [B, 8]. */
static void mix_reference(const float *x, const float *y, int64_t B, double *c, double *z, double *t) {
    for (int64_t r = 0; r < B; r++) {
        double m[5], mx = -1e300, sum = 0;
        for (int o = 0; o < 8; o++) {
            double h = mix_b1[o];
            for (int i = 0; i < 6; i++) h += (double)x[r * 6 + i] * mix_w1[o * 6 + i];
            t[r * 8 + o] = tanh(h);
        }
        for (int n = 0; n < 5; n++) {
            m[n] = 0;
            for (int k = 0; k < 8; k++) m[n] += t[r * 8 + k] * mix_w2[k * 5 + n];
            if (m[n] > mx) mx = m[n];
        }
        for (int n = 0; n < 5; n++) sum += exp(m[n] - mx);
        for (int n = 0; n < 5; n++) c[r * 11 + n] = exp(m[n] - mx) / sum;
        for (int i = 0; i < 6; i++) c[r * 11 + 5 + i] = 1 / (1 + exp(-(double)y[r * 6 + i]));
        for (int i = 0; i < 11; i++) z[r * 11 + i] = -(c[r * 11 + i] * c[r * 11 + i] + c[r * 11 + i]);
    }
}

static const char *const mix_in_names[] = {"x", "y"};

/* Runs mix for batch B (inputs from `seed`) and checks every output against
 * the reference, with cg_plan_run_into when `into`, else cg_plan_run. */
static void mix_run_check(cg_plan *p, int64_t B, uint32_t seed, int into, const char *what) {
    int64_t d[2] = {B, 6};
    cg_tensor *in[2] = {make_f32(2, d, seed), make_f32(2, d, seed + 1)};
    double *c = malloc(sizeof(double) * (size_t)B * 11), *z = malloc(sizeof(double) * (size_t)B * 11),
           *t = malloc(sizeof(double) * (size_t)B * 8);
    mix_reference(cg_tensor_data_const(in[0]), cg_tensor_data_const(in[1]), B, c, z, t);
    cg_tensor *out[3];
    if (into) {
        int64_t d11[2] = {B, 11}, d8[2] = {B, 8};
        ck_assert_int_eq(cg_tensor_create(CG_F32, 2, d11, &out[0]), CG_OK);
        ck_assert_int_eq(cg_tensor_create(CG_F32, 2, d11, &out[1]), CG_OK);
        ck_assert_int_eq(cg_tensor_create(CG_F32, 2, d8, &out[2]), CG_OK);
        ck_assert_msg(cg_plan_run_into(p, 2, mix_in_names, in, 3, out) == CG_OK, "%s B=%lld: %s", what, (long long)B,
                      cg_last_error());
    } else {
        ck_assert_msg(cg_plan_run(p, 2, mix_in_names, in, 3, out) == CG_OK, "%s B=%lld: %s", what, (long long)B,
                      cg_last_error());
    }
    ck_assert_int_eq(cg_tensor_dim(out[0], 0), B);
    ck_assert_int_eq(cg_tensor_dim(out[0], 1), 11);
    ck_assert_int_eq(cg_tensor_dim(out[2], 1), 8);
    double dc = max_diff_ref(out[0], c, B * 11), dz = max_diff_ref(out[1], z, B * 11),
           dt = max_diff_ref(out[2], t, B * 8);
    ck_assert_msg(dc <= 1e-4 && dz <= 1e-4 && dt <= 1e-5, "%s B=%lld: c %g, z %g, t %g off the reference", what,
                  (long long)B, dc, dz, dt);
    for (int k = 0; k < 3; k++) cg_tensor_free(out[k]);
    cg_tensor_free(in[0]);
    cg_tensor_free(in[1]);
    free(c);
    free(z);
    free(t);
}

START_TEST(mixed_graph_same_everywhere) {
    model md = mix_load();
    static const placement pl[] = {
        {"cpu", NULL},
        {"opencl:0", NULL},
        {NULL, "*=cpu,m=opencl:0,p=opencl:0"},
        {NULL, "mix=opencl:1,t=cpu"},
        {"cpu", "l1=opencl:0,t=opencl:0,m=opencl:1,p=opencl:1,c=opencl:0,z=opencl:1"},
        {"auto", NULL},
    };
    int64_t d[2] = {4, 6};
    cg_tensor *in[2] = {make_f32(2, d, 7), make_f32(2, d, 8)};
    cg_tensor *ref[3] = {NULL, NULL, NULL};
    for (size_t i = 0; i < sizeof pl / sizeof pl[0]; i++) {
        cg_plan *p = make_plan(md.m, "mix", pl[i].device, pl[i].place);
        mix_run_check(p, 4, 11, 0, pl[i].place ? pl[i].place : pl[i].device);
        cg_tensor *out[3];
        ck_assert_msg(cg_plan_run(p, 2, mix_in_names, in, 3, out) == CG_OK, "%s", cg_last_error());
        for (int k = 0; k < 3; k++) {
            if (!ref[k]) continue;
            double diff = max_diff(out[k], ref[k]);
            ck_assert_msg(diff <= 1e-5, "placement %zu: output %d differs from the CPU plan by %g", i, k, diff);
        }
        char *t = describe(p, "B=4", 0);
        if (i == 2) {
            ck_assert_str_eq(tu_plan_step_device(t, "m"), "opencl:0");
            ck_assert_str_eq(tu_plan_step_device(t, "p"), "opencl:0");
            ck_assert_str_eq(tu_plan_step_device(t, "l1"), "cpu");
            ck_assert_str_eq(tu_plan_step_device(t, "c"), "cpu");
        }
        if (i == 3) { /* the graph rule puts everything on opencl:1 but t */
            const char *nodes[] = {"l1", "m", "p", "s", "c", "q", "r", "z"};
            for (int k = 0; k < 8; k++) ck_assert_msg(!strcmp(tu_plan_step_device(t, nodes[k]), "opencl:1"), "%s", t);
            ck_assert_str_eq(tu_plan_step_device(t, "t"), "cpu");
        }
        if (i == 4) {
            ck_assert_msg(strstr(t, "opencl:0 -> opencl:1") != NULL, "%s", t);
            ck_assert_msg(strstr(t, "opencl:1 -> opencl:0") != NULL, "%s", t);
        }
        free(t);
        for (int k = 0; k < 3; k++) {
            if (i == 0) ref[k] = out[k];
            else cg_tensor_free(out[k]);
        }
        cg_plan_free(p);
    }
    for (int k = 0; k < 3; k++) cg_tensor_free(ref[k]);
    cg_tensor_free(in[0]);
    cg_tensor_free(in[1]);
    free_model(&md);
}
END_TEST

/* ---- copies at device boundaries ------------------------------------- */

static const char chain_text[] = "graph chain {\n"
                                 "  input x: f32[N]\n"
                                 "  a = tanh(x)\n"
                                 "  b = sigmoid(a)\n"
                                 "  c = exp(b)\n"
                                 "  d = neg(c)\n"
                                 "  output d\n"
                                 "}\n";

static void chain_reference(const float *x, int64_t n, double *d) {
    for (int64_t i = 0; i < n; i++) d[i] = -exp(1 / (1 + exp(-tanh((double)x[i]))));
}

/* Runs the chain on N elements and checks the result; fills `st`. */
static void chain_run(cg_plan *p, int64_t n, int into, cg_plan_stats *st) {
    cg_tensor *x = make_f32(1, &n, 5), *d;
    const char *names[] = {"x"};
    if (into) {
        ck_assert_int_eq(cg_tensor_create(CG_F32, 1, &n, &d), CG_OK);
        ck_assert_msg(cg_plan_run_into(p, 1, names, &x, 1, &d) == CG_OK, "%s", cg_last_error());
    } else {
        ck_assert_msg(cg_plan_run(p, 1, names, &x, 1, &d) == CG_OK, "%s", cg_last_error());
    }
    double *ref = malloc(sizeof(double) * (size_t)n);
    chain_reference(cg_tensor_data_const(x), n, ref);
    double diff = max_diff_ref(d, ref, n);
    ck_assert_msg(diff <= 1e-5, "chain on %s differs from the reference by %g", cg_plan_device(p), diff);
    free(ref);
    cg_tensor_free(x);
    cg_tensor_free(d);
    if (st) ck_assert_int_eq(cg_plan_stats_get(p, st, NULL), CG_OK);
}

/* cg_tensor_wrap: an input read where it lies (at an address only 4-byte
 * aligned) and an output written into the caller's array, on the CPU and
 * on opencl:0 (uploaded from and read back into the caller's memory). */
START_TEST(wrapped_tensors) {
    model md = load_model(chain_text, NULL);
    enum { N = 37 };
    float xs[N + 1], ds[N + 2];
    cg_tensor *src = make_f32(1, (const int64_t[]){N}, 9);
    memcpy(xs + 1, cg_tensor_data_const(src), sizeof(float) * N);
    double ref[N];
    chain_reference(xs + 1, N, ref);
    const char *devs[] = {"cpu", "opencl:0"};
    for (int k = 0; k < 2; k++) {
        cg_plan *p = make_plan(md.m, "chain", devs[k], NULL);
        int64_t n = N;
        cg_tensor *x, *d;
        ck_assert_int_eq(cg_tensor_wrap(CG_F32, 1, &n, xs + 1, &x), CG_OK);
        ck_assert_int_eq(cg_tensor_wrap(CG_F32, 1, &n, ds + 1, &d), CG_OK);
        ds[0] = ds[N + 1] = 1234.5f;
        const char *names[] = {"x"};
        ck_assert_msg(cg_plan_run_into(p, 1, names, &x, 1, &d) == CG_OK, "%s", cg_last_error());
        ck_assert_ptr_eq(cg_tensor_data_const(d), ds + 1);
        double diff = max_diff_ref(d, ref, N);
        ck_assert_msg(diff <= 1e-5, "chain on %s into a wrapped output differs by %g", devs[k], diff);
        ck_assert_msg(ds[0] == 1234.5f && ds[N + 1] == 1234.5f, "wrote outside the wrapped output");
        cg_tensor_free(x); /* frees the tensor, not the caller's array */
        cg_tensor_free(d);
        cg_plan_free(p);
    }
    /* Arrays the library cannot take: misaligned for the dtype, or NULL with elements. */
    int64_t n = 4;
    cg_tensor *t = (cg_tensor *)1;
    ck_assert_int_eq(cg_tensor_wrap(CG_F32, 1, &n, (char *)xs + 2, &t), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(t);
    ck_assert_str_eq(cg_last_error(), "tensor: cannot wrap data not aligned for f32[4] (4-byte elements)");
    ck_assert_int_eq(cg_tensor_wrap(CG_F32, 1, &n, NULL, &t), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "tensor: cannot wrap NULL data for f32[4] (4-byte elements)");
    n = 0;
    ck_assert_int_eq(cg_tensor_wrap(CG_F32, 1, &n, NULL, &t), CG_OK);
    ck_assert_int_eq(cg_tensor_numel(t), 0);
    cg_tensor_free(t);
    cg_tensor_free(src);
    free_model(&md);
}
END_TEST

/* cg_plan_release gives the arena back and the next run, of this binding
 * or another, computes the same; on cpu and opencl:0, with the input kept
 * on the device across the release. In host memory the instances stay
 * (the next run of a cached binding lowers nothing); on a device they go. */
START_TEST(release_gives_back_the_arena) {
    model md = load_model(chain_text, NULL);
    const char *devs[] = {"cpu", "opencl:0"};
    for (int k = 0; k < 2; k++) {
        cg_plan *p = make_plan(md.m, "chain", devs[k], NULL);
        ck_assert_int_eq(cg_plan_keep_input(p, "x", 1), CG_OK);
        cg_plan_memory_info mi;
        chain_run(p, 1000, 0, NULL);
        ck_assert_int_eq(cg_plan_memory(p, &mi), CG_OK);
        ck_assert_msg(mi.arena_bytes > 0 && mi.instances >= 1, "%s: arena %llu, %llu instances", devs[k],
                      (unsigned long long)mi.arena_bytes, (unsigned long long)mi.instances);
        const uint64_t had = mi.instances;
        cg_plan_stats before, after;
        ck_assert_int_eq(cg_plan_stats_get(p, NULL, &before), CG_OK);
        ck_assert_int_eq(cg_plan_release(p, CG_RELEASE_ALL), CG_OK);
        ck_assert_int_eq(cg_plan_memory(p, &mi), CG_OK);
        ck_assert_msg(mi.instances == (k == 0 ? had : 0), "%s after release: %llu instances", devs[k],
                      (unsigned long long)mi.instances);
        chain_run(p, 1000, 0, NULL);
        ck_assert_int_eq(cg_plan_stats_get(p, NULL, &after), CG_OK);
        ck_assert_int_eq(after.instances_built - before.instances_built, k == 0 ? 0 : 1);
        ck_assert_int_eq(cg_plan_release(p, CG_RELEASE_ALL), CG_OK);
        chain_run(p, 37, 1, NULL); /* a new binding first: the arena must still hold the old one's views */
        chain_run(p, 1000, 0, NULL);
        ck_assert_int_eq(cg_plan_release(p, CG_RELEASE_ALL), CG_OK);
        ck_assert_int_eq(cg_plan_release(p, CG_RELEASE_ALL), CG_OK); /* twice: nothing left to give */
        chain_run(p, 37, 0, NULL);
        ck_assert_int_eq(cg_plan_release(p, 1u << 7), CG_ERR_INVALID_ARGUMENT);
        cg_plan_free(p);
    }
    ck_assert_int_eq(cg_plan_release(NULL, CG_RELEASE_ALL), CG_ERR_INVALID_ARGUMENT);
    free_model(&md);
}
END_TEST

START_TEST(copies_at_device_boundaries) {
    model md = load_model(chain_text, NULL);
    const int64_t n = 1000;
    const uint64_t one = (uint64_t)n * 4;
    cg_plan_stats st;

    /* cpu -> opencl:0 (a), opencl:0 -> opencl:1 (b), opencl:1 -> cpu (c). */
    cg_plan *p = make_plan(md.m, "chain", "cpu", "b=opencl:0,c=opencl:1");
    chain_run(p, n, 0, &st);
    ck_assert_uint_eq(st.copies, 3);
    ck_assert_uint_eq(st.bytes_copied, 3 * one);
    char *t = describe(p, "N=1000", 0);
    ck_assert_msg(count_lines_with(t, "copy") == 3, "%s", t);
    ck_assert_int_eq(count_lines_with(t, "cpu -> opencl:0, 3.9 KiB"), 1);
    ck_assert_int_eq(count_lines_with(t, "opencl:0 -> opencl:1, 3.9 KiB"), 1);
    ck_assert_int_eq(count_lines_with(t, "opencl:1 -> cpu, 3.9 KiB"), 1);
    ck_assert_msg(strstr(t, "copies: 3 per run, 11.7 KiB") != NULL, "%s", t);
    /* each copy moves the value of the node before the boundary */
    ck_assert_msg(count_copies_of(t, "a") == 1 && count_copies_of(t, "b") == 1 && count_copies_of(t, "c") == 1, "%s",
                  t);
    ck_assert_str_eq(tu_plan_step_device(t, "a"), "cpu");
    ck_assert_str_eq(tu_plan_step_device(t, "b"), "opencl:0");
    ck_assert_str_eq(tu_plan_step_device(t, "c"), "opencl:1");
    ck_assert_str_eq(tu_plan_step_device(t, "d"), "cpu");
    free(t);
    /* The same again with the memo of copies: a second shape gives the same. */
    chain_run(p, 17, 0, &st);
    ck_assert_uint_eq(st.copies, 3);
    ck_assert_uint_eq(st.bytes_copied, 3 * 17 * 4);
    cg_plan_free(p);

    /* Everything on the CPU: no copies. */
    p = make_plan(md.m, "chain", "cpu", NULL);
    chain_run(p, n, 0, &st);
    ck_assert_uint_eq(st.copies, 0);
    ck_assert_uint_eq(st.bytes_copied, 0);
    t = describe(p, "N=1000", 0);
    ck_assert_int_eq(count_lines_with(t, "copy"), 0);
    ck_assert_ptr_nonnull(strstr(t, "copies: 0 per run, 0 B"));
    free(t);
    cg_plan_free(p);

    /* Everything on opencl:0: the input goes up (a copy step), the output
     * comes back (read at the end of the run, counted in the stats, listed
     * as a read-back and not as a step). */
    p = make_plan(md.m, "chain", "opencl:0", NULL);
    chain_run(p, n, 0, &st);
    ck_assert_uint_eq(st.copies, 2);
    ck_assert_uint_eq(st.bytes_copied, 2 * one);
    t = describe(p, "N=1000", 0);
    ck_assert_msg(count_lines_with(t, "copy") == 1, "%s", t);
    ck_assert_int_eq(count_lines_with(t, "cpu -> opencl:0"), 1);
    ck_assert_int_eq(count_lines_with(t, "output 'd' read back from opencl:0"), 1);
    free(t);
    cg_plan_free(p);

    /* A value read on two other devices is copied once to each. */
    const char *fan = "graph fan {\n  input x: f32[N]\n  a = tanh(x)\n  b = exp(a)\n  c = neg(a)\n"
                      "  d = add(b, c)\n  e = mul(a, a)\n  output d, e\n}\n";
    model mf = load_model(fan, NULL);
    p = make_plan(mf.m, "fan", "cpu", "a=opencl:0,b=opencl:1,c=opencl:1");
    t = describe(p, "N=10", 0);
    /* a: opencl:0 -> opencl:1 once (b and c share it), opencl:0 -> cpu once
     * (e reads it); b and c: opencl:1 -> cpu for d. x: cpu -> opencl:0. */
    ck_assert_msg(count_lines_with(t, "copy") == 5, "%s", t);
    ck_assert_int_eq(count_lines_with(t, "opencl:0 -> opencl:1"), 1);
    ck_assert_int_eq(count_lines_with(t, "opencl:0 -> cpu"), 1);
    ck_assert_int_eq(count_lines_with(t, "opencl:1 -> cpu"), 2);
    free(t);
    int64_t n10 = 10;
    cg_tensor *x = make_f32(1, &n10, 3), *out[2];
    const char *xn[] = {"x"};
    ck_assert_msg(cg_plan_run(p, 1, xn, &x, 2, out) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_plan_stats_get(p, &st, NULL), CG_OK);
    ck_assert_uint_eq(st.copies, 5);
    ck_assert_uint_eq(st.bytes_copied, 5 * 40);
    const float *xv = cg_tensor_data_const(x), *dv = cg_tensor_data_const(out[0]), *ev = cg_tensor_data_const(out[1]);
    for (int i = 0; i < 10; i++) {
        double a = tanh((double)xv[i]);
        ck_assert_double_eq_tol(dv[i], exp(a) - a, 1e-5);
        ck_assert_double_eq_tol(ev[i], a * a, 1e-5);
    }
    cg_tensor_free(x);
    cg_tensor_free(out[0]);
    cg_tensor_free(out[1]);
    cg_plan_free(p);
    free_model(&mf);
    free_model(&md);
}
END_TEST

/* ---- inputs kept on a device between runs ----------------------------- */

/* y = x * w + a, with x kept on opencl:0; expected values from doubles. */
static void keep_check(cg_plan *p, cg_tensor *x, cg_tensor *w, int64_t n, uint64_t want_bytes, const char *what) {
    cg_tensor *y;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 1, &n, &y), CG_OK);
    const char *names[] = {"x", "w"};
    cg_tensor *ins[] = {x, w};
    ck_assert_msg(cg_plan_run_into(p, 2, names, ins, 1, &y) == CG_OK, "%s: %s", what, cg_last_error());
    const float *xv = cg_tensor_data_const(x), *wv = cg_tensor_data_const(w), *yv = cg_tensor_data_const(y);
    for (int64_t i = 0; i < n; i++) {
        double want = tanh((double)xv[i]) * (double)wv[i];
        if (fabs(yv[i] - want) > 1e-5) ck_abort_msg("%s: y[%lld] = %g, expected %g", what, (long long)i, yv[i], want);
    }
    cg_plan_stats st;
    ck_assert_int_eq(cg_plan_stats_get(p, &st, NULL), CG_OK);
    ck_assert_msg(st.bytes_copied == want_bytes, "%s: %llu bytes copied, expected %llu", what,
                  (unsigned long long)st.bytes_copied, (unsigned long long)want_bytes);
    cg_tensor_free(y);
}

START_TEST(kept_inputs) {
    const char *text =
        "graph g {\n  input x: f32[N]\n  input w: f32[N]\n  a = tanh(x)\n  y = mul(a, w)\n  output y\n}\n";
    model md = load_model(text, NULL);
    cg_plan *p = make_plan(md.m, "g", "opencl:0", NULL);
    ck_assert_int_eq(cg_plan_keep_input(p, "nosuch", 1), CG_ERR_NOT_FOUND);
    ck_assert_msg(strstr(cg_last_error(), "no input named 'nosuch'") != NULL, "%s", cg_last_error());
    ck_assert_int_eq(cg_plan_keep_input(p, "x", 1), CG_OK);
    int64_t n = 300, n2 = 100;
    const uint64_t b = (uint64_t)n * 4;
    cg_tensor *x = make_f32(1, &n, 1), *w = make_f32(1, &n, 2), *x2 = make_f32(1, &n, 3);
    /* x up, w up, y back; then x stays: only w and y move. */
    keep_check(p, x, w, n, 3 * b, "first run");
    keep_check(p, x, w, n, 2 * b, "same x");
    keep_check(p, x, w, n, 2 * b, "same x again");
    /* Written through cg_tensor_data: uploaded again, and the result sees it. */
    float *xd = cg_tensor_data(x);
    for (int64_t i = 0; i < n; i++) xd[i] = -xd[i] * 0.5f;
    keep_check(p, x, w, n, 3 * b, "after cg_tensor_data");
    keep_check(p, x, w, n, 2 * b, "unchanged after that");
    /* Written through the old pointer, then touched. */
    xd[7] = 3.0f;
    cg_tensor_touch(x);
    keep_check(p, x, w, n, 3 * b, "after cg_tensor_touch");
    /* Another tensor: uploaded. */
    keep_check(p, x2, w, n, 3 * b, "another tensor");
    /* Another shape is another instance; the instances share the plan's
     * arena, and the plan's device copy now holds xs: back to the first
     * shape, x2 is uploaded again, then kept. */
    cg_tensor *xs = make_f32(1, &n2, 4), *ws = make_f32(1, &n2, 5);
    keep_check(p, xs, ws, n2, 3 * (uint64_t)n2 * 4, "second shape");
    keep_check(p, x2, w, n, 3 * b, "first shape again");
    keep_check(p, x2, w, n, 2 * b, "first shape, kept");
    /* Back to the second shape: xs uploaded again (the copy held x2), then kept. */
    keep_check(p, xs, ws, n2, 3 * (uint64_t)n2 * 4, "second shape's x again");
    keep_check(p, xs, ws, n2, 2 * (uint64_t)n2 * 4, "second shape, kept");
    /* A tensor freed and another allocated (maybe at the same address) is
     * never taken for the freed one. */
    cg_tensor_free(x2);
    x2 = make_f32(1, &n, 6);
    keep_check(p, x2, w, n, 3 * b, "new tensor after a free");
    /* keep 0: uploaded every run again. */
    ck_assert_int_eq(cg_plan_keep_input(p, "x", 0), CG_OK);
    keep_check(p, x2, w, n, 3 * b, "not kept");
    keep_check(p, x2, w, n, 3 * b, "not kept, again");
    cg_tensor_free(x);
    cg_tensor_free(x2);
    cg_tensor_free(w);
    cg_tensor_free(xs);
    cg_tensor_free(ws);
    cg_plan_free(p);
    /* On the CPU keeping changes nothing. */
    p = make_plan(md.m, "g", "cpu", NULL);
    ck_assert_int_eq(cg_plan_keep_input(p, "x", 1), CG_OK);
    x = make_f32(1, &n, 1);
    w = make_f32(1, &n, 2);
    keep_check(p, x, w, n, 0, "cpu");
    cg_tensor_free(x);
    cg_tensor_free(w);
    cg_plan_free(p);
    free_model(&md);
}
END_TEST

/* ---- state carried from one run to the next ---------------------------- */

/* s_new = tanh(gather_rows(s, idx)) + w, with s carried from s_new: the
 * recurrence of a decoder whose rows are reordered (beam) or dropped
 * (finished sentences) between steps. */
static const char carry_text[] =
    "graph g {\n  input s: f32[P, 3]\n  input idx: i32[B]\n  input w: f32[B, 3]\n"
    "  r = gather_rows(s, idx)\n  t = tanh(r)\n  s_new = add(t, w)\n  output s_new, t\n}\n";

typedef struct carry_step {
    int B;
    int idx[6];
    int given;     /* s given (else carried) */
    int read_back; /* s_new read back (else NULL) */
} carry_step;

/* Runs the steps on plan p and checks every value read back against a
 * double reference of the same recurrence; with `all_on_device`, also that
 * each run moves only idx and w up and the outputs read back (t, and s_new
 * when wanted), plus s when given: a carried s stays on the device. */
static void carry_run(cg_plan *p, const carry_step *steps, int n, int all_on_device, const char *what) {
    double ref[6 * 3];
    int P = 4;
    cg_tensor *s0 = make_f32(2, (int64_t[]){4, 3}, 31);
    const float *s0v = cg_tensor_data_const(s0);
    for (int i = 0; i < 12; i++) ref[i] = s0v[i];
    for (int q = 0; q < n; q++) {
        const carry_step *cs = &steps[q];
        int64_t B = cs->B, d2[2] = {B, 3};
        cg_tensor *idx, *w = make_f32(2, d2, 40 + (uint32_t)q), *out, *t;
        ck_assert_int_eq(cg_tensor_create(CG_I32, 1, &B, &idx), CG_OK);
        ck_assert_int_eq(cg_tensor_create(CG_F32, 2, d2, &out), CG_OK);
        ck_assert_int_eq(cg_tensor_create(CG_F32, 2, d2, &t), CG_OK);
        int32_t *iv = cg_tensor_data(idx);
        for (int b = 0; b < B; b++) iv[b] = cs->idx[b];
        const char *names[] = {"idx", "w", "s"};
        cg_tensor *ins[] = {idx, w, s0};
        cg_tensor *outs[] = {cs->read_back ? out : NULL, t};
        if (cs->given) { /* restart from s0 */
            P = 4;
            for (int i = 0; i < 12; i++) ref[i] = s0v[i];
        }
        ck_assert_msg(cg_plan_run_into(p, cs->given ? 3 : 2, names, ins, 2, outs) == CG_OK, "%s step %d: %s", what, q,
                      cg_last_error());
        double next[6 * 3], tref[6 * 3];
        const float *wv = cg_tensor_data_const(w);
        for (int b = 0; b < B; b++)
            for (int j = 0; j < 3; j++) {
                ck_assert_int_lt(cs->idx[b], P);
                tref[b * 3 + j] = tanh(ref[cs->idx[b] * 3 + j]);
                next[b * 3 + j] = tref[b * 3 + j] + wv[b * 3 + j];
            }
        double e = max_diff_ref(t, tref, B * 3);
        ck_assert_msg(e < 1e-5, "%s step %d: t differs by %g", what, q, e);
        if (cs->read_back) {
            e = max_diff_ref(out, next, B * 3);
            ck_assert_msg(e < 1e-5, "%s step %d: s_new differs by %g", what, q, e);
        }
        memcpy(ref, next, sizeof(double) * (size_t)B * 3);
        P = (int)B;
        cg_plan_stats st;
        ck_assert_int_eq(cg_plan_stats_get(p, &st, NULL), CG_OK);
        uint64_t want = (uint64_t)B * (4 + 12 + 12) + (cs->read_back ? (uint64_t)B * 12 : 0) + (cs->given ? 48 : 0);
        if (all_on_device && st.bytes_copied != want)
            ck_abort_msg("%s step %d: %llu bytes copied, expected %llu", what, q, (unsigned long long)st.bytes_copied,
                         (unsigned long long)want);
        cg_tensor_free(idx);
        cg_tensor_free(w);
        cg_tensor_free(out);
        cg_tensor_free(t);
    }
    cg_tensor_free(s0);
}

START_TEST(carried_state) {
    model md = load_model(carry_text, NULL);
    /* Rows kept, reordered, dropped (4 -> 2), repeated and grown (2 -> 5),
     * read back or not, and a restart from a given state. */
    static const carry_step steps[] = {
        {
            4,
            {0, 1, 2, 3},
            1,
            1,
        },
        {4, {3, 3, 0, 1}, 0, 0},
        {4, {1, 0, 2, 2}, 0, 1},
        {2, {2, 0}, 0, 0},
        {2, {1, 1}, 0, 1},
        {5, {1, 0, 1, 0, 0}, 0, 0},
        {5, {4, 3, 2, 1, 0}, 0, 1},
        {3, {2, 1, 0}, 1, 1},
        {3, {0, 0, 2}, 0, 1},
    };
    const int n = (int)(sizeof steps / sizeof steps[0]);
    const char *devices[][2] = {
        {"cpu", NULL}, {"opencl:0", NULL}, {"cpu", "t=opencl:0"}, {"opencl:0", "r=cpu"}, {"auto", NULL}};
    for (size_t d = 0; d < sizeof devices / sizeof devices[0]; d++) {
        char what[64];
        snprintf(what, sizeof what, "%s %s", devices[d][0], devices[d][1] ? devices[d][1] : "");
        cg_plan *p = make_plan(md.m, "g", devices[d][0], devices[d][1]);
        ck_assert_int_eq(cg_plan_carry(p, "s", "s_new"), CG_OK);
        carry_run(p, steps, n, d == 1, what);
        cg_plan_free(p);
    }
    /* Errors: names, shapes, and nothing to carry yet. */
    cg_plan *p = make_plan(md.m, "g", "cpu", NULL);
    ck_assert_int_eq(cg_plan_carry(p, "nosuch", "s_new"), CG_ERR_NOT_FOUND);
    ck_assert_msg(strstr(cg_last_error(), "no input named 'nosuch'") != NULL, "%s", cg_last_error());
    ck_assert_int_eq(cg_plan_carry(p, "s", "nosuch"), CG_ERR_NOT_FOUND);
    ck_assert_msg(strstr(cg_last_error(), "no output named 'nosuch'") != NULL, "%s", cg_last_error());
    ck_assert_int_eq(cg_plan_carry(p, "idx", "t"), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "cannot be carried into input 'idx'") != NULL, "%s", cg_last_error());
    int64_t B = 2, d2[2] = {2, 3};
    cg_tensor *idx, *w = make_f32(2, d2, 1), *out = NULL, *t = NULL;
    ck_assert_int_eq(cg_tensor_create(CG_I32, 1, &B, &idx), CG_OK);
    const char *names[] = {"idx", "w"};
    cg_tensor *ins[] = {idx, w}, *outs[2] = {NULL, NULL};
    ck_assert_int_eq(cg_plan_run(p, 2, names, ins, 2, outs), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "input 's' of graph 'g' is missing") != NULL, "%s", cg_last_error());
    ck_assert_int_eq(cg_plan_carry(p, "s", "s_new"), CG_OK);
    ck_assert_int_eq(cg_plan_run(p, 2, names, ins, 2, outs), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "no successful run has written output 's_new'") != NULL, "%s",
                  cg_last_error());
    /* A run that fails (index out of range) leaves nothing to carry. */
    cg_tensor *s0 = make_f32(2, (int64_t[]){4, 3}, 3);
    const char *names3[] = {"idx", "w", "s"};
    cg_tensor *ins3[] = {idx, w, s0};
    ck_assert_msg(cg_plan_run(p, 3, names3, ins3, 2, outs) == CG_OK, "%s", cg_last_error());
    cg_tensor_free(outs[0]);
    cg_tensor_free(outs[1]);
    ck_assert_msg(cg_plan_run(p, 2, names, ins, 2, outs) == CG_OK, "%s", cg_last_error());
    cg_tensor_free(outs[0]);
    cg_tensor_free(outs[1]);
    ((int32_t *)cg_tensor_data(idx))[1] = 7;
    ck_assert_int_eq(cg_plan_run(p, 2, names, ins, 2, outs), CG_ERR_KERNEL);
    ck_assert_int_eq(cg_plan_run(p, 2, names, ins, 2, outs), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "no successful run") != NULL, "%s", cg_last_error());
    /* NULL output: stop carrying. */
    ck_assert_int_eq(cg_plan_carry(p, "s", NULL), CG_OK);
    ck_assert_int_eq(cg_plan_run(p, 2, names, ins, 2, outs), CG_ERR_INVALID_ARGUMENT);
    (void)out;
    (void)t;
    cg_tensor_free(s0);
    cg_tensor_free(idx);
    cg_tensor_free(w);
    cg_plan_free(p);
    free_model(&md);
}
END_TEST

/* On the CPU a carried output is written straight into the carry's own
 * buffer, which becomes the next run's input: it takes no arena bytes, and
 * the values carried are the ones a plan without carrying computes from the
 * same state given (bit for bit). Switching carrying off and on again
 * relowers the plan. */
START_TEST(carried_output_outside_arena) {
    model md = load_model(carry_text, NULL);
    cg_plan *pc = make_plan(md.m, "g", "cpu", NULL), *pn = make_plan(md.m, "g", "cpu", NULL);
    ck_assert_int_eq(cg_plan_carry(pc, "s", "s_new"), CG_OK);
    int64_t B = 64, d2[2] = {64, 3};
    cg_tensor *idx, *w = make_f32(2, d2, 5), *s0 = make_f32(2, d2, 6), *sn[3] = {NULL, NULL, NULL}, *t[3] = {0};
    ck_assert_int_eq(cg_tensor_create(CG_I32, 1, &B, &idx), CG_OK);
    int32_t *iv = cg_tensor_data(idx);
    for (int b = 0; b < B; b++) iv[b] = (b * 7) % 64;
    const char *names[] = {"idx", "w", "s"};
    cg_tensor *ins[] = {idx, w, s0};
    cg_tensor *o0[] = {NULL, NULL}, *o1[] = {NULL, NULL};
    ck_assert_msg(cg_plan_run(pc, 3, names, ins, 2, o0) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_plan_run(pc, 2, names, ins, 2, o1) == CG_OK, "%s", cg_last_error());
    sn[0] = o0[0], t[0] = o0[1], sn[1] = o1[0], t[1] = o1[1];
    /* the plan without carrying, given the first run's s_new */
    cg_tensor *ins_n[] = {idx, w, sn[0]}, *o2[] = {NULL, NULL};
    ck_assert_msg(cg_plan_run(pn, 3, names, ins_n, 2, o2) == CG_OK, "%s", cg_last_error());
    sn[2] = o2[0], t[2] = o2[1];
    ck_assert_int_eq(memcmp(cg_tensor_data_const(sn[1]), cg_tensor_data_const(sn[2]), sizeof(float) * 192), 0);
    ck_assert_int_eq(memcmp(cg_tensor_data_const(t[1]), cg_tensor_data_const(t[2]), sizeof(float) * 192), 0);
    cg_plan_memory_info mc, mn;
    ck_assert_int_eq(cg_plan_memory(pc, &mc), CG_OK);
    ck_assert_int_eq(cg_plan_memory(pn, &mn), CG_OK);
    ck_assert_msg(mc.arena_bytes + 192 * sizeof(float) <= mn.arena_bytes,
                  "arena %llu bytes carrying s_new, %llu without: s_new (768 bytes) is still in it",
                  (unsigned long long)mc.arena_bytes, (unsigned long long)mn.arena_bytes);
    /* released: the carried value is gone (s must be given), and given it
     * the run is the first one again */
    ck_assert_int_eq(cg_plan_release(pc, CG_RELEASE_CARRIED), CG_OK);
    ck_assert_int_eq(cg_plan_run(pc, 2, names, ins, 2, o1), CG_ERR_INVALID_ARGUMENT);
    cg_tensor *o4[] = {NULL, NULL};
    ck_assert_msg(cg_plan_run(pc, 3, names, ins, 2, o4) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(memcmp(cg_tensor_data_const(o4[0]), cg_tensor_data_const(sn[0]), sizeof(float) * 192), 0);
    for (int k = 0; k < 2; k++) cg_tensor_free(o4[k]);
    /* off: s must be given again, and s_new comes from the arena */
    ck_assert_int_eq(cg_plan_carry(pc, "s", NULL), CG_OK);
    ck_assert_int_eq(cg_plan_run(pc, 2, names, ins, 2, o1), CG_ERR_INVALID_ARGUMENT);
    cg_tensor *o3[] = {NULL, NULL};
    ck_assert_msg(cg_plan_run(pc, 3, names, ins_n, 2, o3) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(memcmp(cg_tensor_data_const(o3[0]), cg_tensor_data_const(sn[2]), sizeof(float) * 192), 0);
    ck_assert_int_eq(cg_plan_memory(pc, &mc), CG_OK);
    ck_assert_int_eq(mc.arena_bytes, mn.arena_bytes);
    for (int k = 0; k < 2; k++) cg_tensor_free(o3[k]);
    for (int k = 0; k < 3; k++) {
        cg_tensor_free(sn[k]);
        cg_tensor_free(t[k]);
    }
    cg_tensor_free(idx);
    cg_tensor_free(w);
    cg_tensor_free(s0);
    cg_plan_free(pc);
    cg_plan_free(pn);
    free_model(&md);
}
END_TEST

/* Two carried values where the second's step comes after the last read of
 * the first's input (a decoder's layers: layer l + 1's cache is written
 * after layer l's was read): the second output goes into the first input's
 * block, so the plan holds three blocks for two values, not four. The
 * values are the float recurrence's, bit for bit. */
START_TEST(carried_blocks_are_reused) {
    static const char text[] = "graph g {\n  input a: f32[N]\n  input b: f32[N]\n  input x: f32[N]\n"
                               "  a_new = add(a, x)\n  b_new = add(b, a_new)\n  output a_new, b_new\n}\n";
    model md = load_model(text, NULL);
    cg_plan *p = make_plan(md.m, "g", "cpu", NULL);
    ck_assert_int_eq(cg_plan_carry(p, "a", "a_new"), CG_OK);
    ck_assert_int_eq(cg_plan_carry(p, "b", "b_new"), CG_OK);
    const int64_t N = 100000;
    cg_tensor *a = make_f32(1, &N, 3), *b = make_f32(1, &N, 4), *x = make_f32(1, &N, 5);
    float *ra = malloc(sizeof(float) * (size_t)N), *rb = malloc(sizeof(float) * (size_t)N);
    memcpy(ra, cg_tensor_data_const(a), sizeof(float) * (size_t)N);
    memcpy(rb, cg_tensor_data_const(b), sizeof(float) * (size_t)N);
    const float *xv = cg_tensor_data_const(x);
    const char *checks = getenv("CLGRAPH_CHECK_RUNS");
    char *saved = checks ? strdup(checks) : NULL;
    setenv("CLGRAPH_CHECK_RUNS", "0", 1); /* its runs would take blocks too */
    const char *names[] = {"x", "a", "b"};
    cg_tensor *ins[] = {x, a, b};
    const uint64_t new_blocks[6] = {0, 1, 0, 0, 0, 0}; /* after the first run's two */
    for (int r = 0; r < 6; r++) {
        cg_tensor *outs[2] = {NULL, NULL};
        ck_assert_msg(cg_plan_run(p, r ? 1 : 3, names, ins, 2, outs) == CG_OK, "%s", cg_last_error());
        for (int64_t i = 0; i < N; i++) {
            ra[i] = ra[i] + xv[i];
            rb[i] = rb[i] + ra[i];
        }
        ck_assert_int_eq(memcmp(cg_tensor_data_const(outs[0]), ra, sizeof(float) * (size_t)N), 0);
        ck_assert_int_eq(memcmp(cg_tensor_data_const(outs[1]), rb, sizeof(float) * (size_t)N), 0);
        cg_plan_stats st;
        ck_assert_int_eq(cg_plan_stats_get(p, &st, NULL), CG_OK);
        if (r) /* the two output tensors made, and the new blocks */
            ck_assert_msg(st.host_allocs == 2 + new_blocks[r], "run %d: %llu host allocations, expected %llu", r,
                          (unsigned long long)st.host_allocs, (unsigned long long)(2 + new_blocks[r]));
        cg_tensor_free(outs[0]);
        cg_tensor_free(outs[1]);
    }
    if (saved) setenv("CLGRAPH_CHECK_RUNS", saved, 1);
    else unsetenv("CLGRAPH_CHECK_RUNS");
    free(saved);
    free(ra);
    free(rb);
    cg_tensor_free(a);
    cg_tensor_free(b);
    cg_tensor_free(x);
    cg_plan_free(p);
    free_model(&md);
}
END_TEST

/* ---- runs by input position (cg_plan_run_indexed) --------------------- */

/* Index lookups, a run by positions against a hand-worked result (and the
 * same run by names, bit for bit), a carried input left out, and every
 * malformed binding. */
START_TEST(indexed_runs) {
    model md = load_model(carry_text, NULL);
    cg_plan *p = make_plan(md.m, "g", "cpu", NULL);
    ck_assert_int_eq(cg_plan_input_index(p, "s"), 0);
    ck_assert_int_eq(cg_plan_input_index(p, "idx"), 1);
    ck_assert_int_eq(cg_plan_input_index(p, "w"), 2);
    ck_assert_int_eq(cg_plan_input_index(p, "t"), -1);
    ck_assert_int_eq(cg_plan_input_index(p, NULL), -1);
    ck_assert_int_eq(cg_plan_input_index(NULL, "s"), -1);
    ck_assert_int_eq(cg_plan_output_index(p, "s_new"), 0);
    ck_assert_int_eq(cg_plan_output_index(p, "t"), 1);
    ck_assert_int_eq(cg_plan_output_index(p, "r"), -1);
    /* s rows 0 and 1 of zeros and ones, idx {1, 0}, w all 0.5:
     * t = tanh(s[idx]) = {tanh 1 x3, 0 x3}, s_new = t + 0.5. */
    int64_t B = 2, d2[2] = {2, 3};
    cg_tensor *s0, *idx, *w, *sn, *t, *sn2, *t2;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, d2, &s0), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_I32, 1, &B, &idx), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, d2, &w), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, d2, &sn), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, d2, &t), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, d2, &sn2), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, d2, &t2), CG_OK);
    float *sv = cg_tensor_data(s0), *wv = cg_tensor_data(w);
    for (int i = 0; i < 6; i++) {
        sv[i] = i < 3 ? 0.0f : 1.0f;
        wv[i] = 0.5f;
    }
    int32_t *iv = cg_tensor_data(idx);
    iv[0] = 1;
    iv[1] = 0;
    const int pos[3] = {2, 0, 1};
    cg_tensor *ins[3] = {w, s0, idx}, *outs[2] = {sn, t};
    cg_plan_binding b = {
        .struct_size = sizeof b, .n_inputs = 3, .input_index = pos, .inputs = ins, .n_outputs = 2, .outputs = outs};
    ck_assert_msg(cg_plan_run_indexed(p, &b) == CG_OK, "%s", cg_last_error());
    const float *tv = cg_tensor_data_const(t), *nv = cg_tensor_data_const(sn);
    for (int i = 0; i < 6; i++) {
        double want = i < 3 ? tanh(1.0) : 0.0;
        ck_assert_msg(fabs(tv[i] - want) < 1e-6, "t[%d] = %g, expected %g", i, tv[i], want);
        ck_assert_msg(fabs(nv[i] - (want + 0.5)) < 1e-6, "s_new[%d] = %g", i, nv[i]);
    }
    const char *names[3] = {"w", "s", "idx"};
    cg_tensor *outs2[2] = {sn2, t2};
    ck_assert_msg(cg_plan_run_into(p, 3, names, ins, 2, outs2) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(memcmp(cg_tensor_data_const(t2), tv, sizeof(float) * 6), 0);
    ck_assert_int_eq(memcmp(cg_tensor_data_const(sn2), nv, sizeof(float) * 6), 0);
    /* Carried: s left out takes s_new; s_new not read back. */
    ck_assert_int_eq(cg_plan_carry(p, "s", "s_new"), CG_OK);
    ck_assert_msg(cg_plan_run_indexed(p, &b) == CG_OK, "%s", cg_last_error());
    const int pos2[2] = {1, 2};
    cg_tensor *ins2[2] = {idx, w}, *outs3[2] = {NULL, t};
    cg_plan_binding bc = {
        .struct_size = sizeof bc, .n_inputs = 2, .input_index = pos2, .inputs = ins2, .n_outputs = 2, .outputs = outs3};
    ck_assert_msg(cg_plan_run_indexed(p, &bc) == CG_OK, "%s", cg_last_error());
    for (int i = 0; i < 6; i++) {
        double prev = i < 3 ? tanh(0.0) + 0.5 : tanh(1.0) + 0.5; /* s_new row idx[b] of the run before */
        ck_assert_msg(fabs(tv[i] - tanh(prev)) < 1e-6, "carried t[%d] = %g, expected %g", i, tv[i], tanh(prev));
    }
    /* Malformed bindings. */
    struct {
        int n_in, n_out, p0, size;
        const char *msg;
    } bad[] = {
        {3, 2, 3, (int)sizeof b, "input index 3"},
        {3, 2, -1, (int)sizeof b, "input index -1"},
        {3, 2, 0, (int)sizeof b, "input 's' is given twice"},
        {4, 2, 2, (int)sizeof b, "has 3 inputs, 4 given"},
        {3, 1, 2, (int)sizeof b, "has 2 outputs, room for 1 given"},
        {3, 2, 2, (int)sizeof b - 1, "struct_size"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int pb[4] = {bad[i].p0, 0, 1, 2};
        cg_tensor *ib[4] = {w, s0, idx, w};
        cg_plan_binding x = {.struct_size = (size_t)bad[i].size,
                             .n_inputs = bad[i].n_in,
                             .input_index = pb,
                             .inputs = ib,
                             .n_outputs = bad[i].n_out,
                             .outputs = outs};
        ck_assert_int_eq(cg_plan_run_indexed(p, &x), CG_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(cg_last_error(), bad[i].msg) != NULL, "case %zu: %s", i, cg_last_error());
    }
    cg_tensor *nul[3] = {w, NULL, idx};
    cg_plan_binding xn = {
        .struct_size = sizeof xn, .n_inputs = 3, .input_index = pos, .inputs = nul, .n_outputs = 2, .outputs = outs};
    ck_assert_int_eq(cg_plan_run_indexed(p, &xn), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "input 's' is NULL") != NULL, "%s", cg_last_error());
    ck_assert_int_eq(cg_plan_run_indexed(p, NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_plan_run_indexed(NULL, &b), CG_ERR_INVALID_ARGUMENT);
    cg_tensor *all[] = {s0, idx, w, sn, t, sn2, t2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) cg_tensor_free(all[i]);
    cg_plan_free(p);
    free_model(&md);
}
END_TEST

/* ---- ops without a kernel on the device ------------------------------- */

START_TEST(unsupported_op_and_decomposition) {
    char lib[512];
    const char *dir = getenv("CG_TEST_PLUGIN_DIR");
    ck_assert_ptr_nonnull(dir);
    snprintf(lib, sizeof lib, "%s/libcgtest_good.so", dir);
    ck_assert_msg(cg_context_load_plugin(ctx, lib) == CG_OK, "%s", cg_last_error());
    const char *text = "graph g {\n  input x: f32[N]\n  sq: y = square_plus(x) {offset: 0.5}\n"
                       "  z = tanh(y)\n  output z\n}\n";
    model md = load_model(text, NULL);
    int64_t n = 100;
    cg_tensor *x = make_f32(1, &n, 9), *z = NULL;
    const char *xn[] = {"x"};

    /* square_plus has a CPU kernel only and no decomposition. */
    cg_plan *p = make_plan(md.m, "g", "opencl:0", NULL);
    ck_assert_int_eq(cg_plan_run(p, 1, xn, &x, 1, &z), CG_ERR_UNSUPPORTED);
    ck_assert_ptr_null(z);
    ck_assert_msg(strstr(cg_last_error(), "'sq'") && strstr(cg_last_error(), "opencl:0") &&
                      strstr(cg_last_error(), "square_plus"),
                  "%s", cg_last_error());
    char *t = NULL;
    ck_assert_int_eq(cg_plan_describe(p, "N=4", 0, &t), CG_ERR_UNSUPPORTED);
    ck_assert_ptr_null(t);
    cg_plan_free(p);
    /* The same by a rule. */
    p = make_plan(md.m, "g", "cpu", "sq=opencl:1");
    ck_assert_int_eq(cg_plan_run(p, 1, xn, &x, 1, &z), CG_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(cg_last_error(), "'sq'") && strstr(cg_last_error(), "opencl:1"), "%s", cg_last_error());
    cg_plan_free(p);

    /* Under auto it runs on the CPU, the only device with a kernel. */
    p = make_plan(md.m, "g", "auto", NULL);
    ck_assert_msg(cg_plan_run(p, 1, xn, &x, 1, &z) == CG_OK, "%s", cg_last_error());
    const float *xv = cg_tensor_data_const(x), *zv = cg_tensor_data_const(z);
    for (int i = 0; i < n; i++) ck_assert_double_eq_tol(zv[i], tanh((double)xv[i] * xv[i] + 0.5), 1e-6);
    cg_tensor_free(z);
    t = describe(p, "N=100", 0);
    ck_assert_msg(!strcmp(tu_plan_step_device(t, "sq"), "cpu"), "%s", t);
    free(t);
    cg_plan_free(p);
    /* A rule saying auto does the same for that node only. */
    p = make_plan(md.m, "g", "opencl:0", "sq=auto");
    ck_assert_msg(cg_plan_run(p, 1, xn, &x, 1, &z) == CG_OK, "%s", cg_last_error());
    for (int i = 0; i < n; i++)
        ck_assert_double_eq_tol(((const float *)cg_tensor_data_const(z))[i], tanh((double)xv[i] * xv[i] + 0.5), 1e-6);
    cg_tensor_free(z);
    t = describe(p, "N=100", 0);
    ck_assert_msg(!strcmp(tu_plan_step_device(t, "sq"), "cpu") && !strcmp(tu_plan_step_device(t, "z"), "opencl:0"),
                  "%s", t);
    free(t);
    cg_plan_free(p);
    cg_tensor_free(x);
    free_model(&md);

    /* linear with a CPU kernel only, and with no kernel: both decompose into
     * matmul and add on the device they are placed on. */
    register_copy(&cg_op_linear, "linear_cpu_only", 1);
    register_copy(&cg_op_linear, "linear_no_kernel", 0);
    const char *lt = "graph g {\n  input x: f32[B, 6]\n  param w1: f32[8, 6] = \"w1\"\n  param b1: f32[8] = \"b1\"\n"
                     "  l: y = linear_cpu_only(x, w1, b1)\n  k: v = linear_no_kernel(x, w1, b1)\n"
                     "  output y, v\n}\n";
    fill(mix_w1, 48, -1, 1, 101);
    fill(mix_b1, 8, -1, 1, 102);
    wt ts[2] = {{"w1", 2, {8, 6}, mix_w1}, {"b1", 1, {8}, mix_b1}};
    char wpath[400];
    snprintf(wpath, sizeof wpath, "%s/lin.safetensors", tmpdir);
    write_safetensors(wpath, ts, 2);
    md = load_model(lt, wpath);
    int64_t d[2] = {5, 6};
    x = make_f32(2, d, 21);
    double ref[5 * 8];
    const float *xd = cg_tensor_data_const(x);
    for (int r = 0; r < 5; r++)
        for (int o = 0; o < 8; o++) {
            ref[r * 8 + o] = mix_b1[o];
            for (int i = 0; i < 6; i++) ref[r * 8 + o] += (double)xd[r * 6 + i] * mix_w1[o * 6 + i];
        }
    static const char *const devs[] = {"opencl:0", "cpu", "auto"};
    for (int di = 0; di < 3; di++) {
        p = make_plan(md.m, "g", devs[di], NULL);
        cg_tensor *out[2];
        ck_assert_msg(cg_plan_run(p, 1, xn, &x, 2, out) == CG_OK, "%s: %s", devs[di], cg_last_error());
        for (int k = 0; k < 2; k++) {
            double diff = max_diff_ref(out[k], ref, 40);
            ck_assert_msg(diff <= 1e-5, "%s: output %d off by %g", devs[di], k, diff);
            cg_tensor_free(out[k]);
        }
        t = describe(p, "B=5", 0);
        if (di == 0) {
            /* Both decomposed, every part on opencl:0. */
            ck_assert_msg(!strcmp(tu_plan_step_device(t, "l/matmul.0"), "opencl:0"), "%s", t);
            ck_assert_msg(!strcmp(tu_plan_step_device(t, "l/add.1"), "opencl:0"), "%s", t);
            ck_assert_msg(!strcmp(tu_plan_step_device(t, "k/matmul.0"), "opencl:0"), "%s", t);
            ck_assert_msg(!strcmp(tu_plan_step_device(t, "k/add.1"), "opencl:0"), "%s", t);
            ck_assert_msg(!strcmp(tu_plan_step_device(t, "l"), ""), "%s", t);
            ck_assert_int_eq(count_lines_with(t, "copy"), 1); /* x only: parameters are replicas */
        } else if (di == 1) {
            /* The CPU has linear_cpu_only's kernel; linear_no_kernel decomposes there. */
            ck_assert_msg(!strcmp(tu_plan_step_device(t, "l"), "cpu"), "%s", t);
            ck_assert_msg(strstr(t, "linear_cpu_only") != NULL, "%s", t);
            ck_assert_msg(!strcmp(tu_plan_step_device(t, "k/matmul.0"), "cpu"), "%s", t);
            ck_assert_int_eq(count_lines_with(t, "copy"), 0);
        } else {
            ck_assert_msg(!strcmp(tu_plan_step_device(t, "l"), "cpu"), "%s", t);
            ck_assert_msg(strcmp(tu_plan_step_device(t, "k/matmul.0"), "") != 0, "%s", t);
        }
        free(t);
        cg_plan_free(p);
    }
    cg_tensor_free(x);
    free_model(&md);
}
END_TEST

/* ---- a run with shapes seen before ------------------------------------ */

START_TEST(steady_state_runs) {
    /* counts what a run creates: the check's extra runs reach an SGEMM shape's
     * timing (its 16th call) within the test when gemm-choices.txt is new */
    tu_check_runs_pause();
    model md = load_model(chain_text, NULL);
    static const placement pl[] = {
        {"cpu", NULL}, {"opencl:0", NULL}, {"cpu", "b=opencl:0,c=opencl:1"}, {"opencl:1", "a=cpu"}, {"auto", NULL},
    };
    for (size_t i = 0; i < sizeof pl / sizeof pl[0]; i++) {
        cg_plan *p = make_plan(md.m, "chain", pl[i].device, pl[i].place);
        cg_plan_stats s1, s2, s3, tot;
        chain_run(p, 4096, 1, &s1);
        ck_assert_uint_eq(s1.instances_built, 1);
        ck_assert_uint_ge(s1.host_allocs, 1);
        chain_run(p, 4096, 1, &s2);
        chain_run(p, 4096, 1, &s3);
        const cg_plan_stats *ss[2] = {&s2, &s3};
        for (int k = 0; k < 2; k++) {
            ck_assert_msg(ss[k]->instances_built == 0 && ss[k]->host_allocs == 0 && ss[k]->device_objects == 0 &&
                              ss[k]->library_calls == 0,
                          "placement %zu: built %llu, allocs %llu, cl objects %llu, clblast %llu", i,
                          (unsigned long long)ss[k]->instances_built, (unsigned long long)ss[k]->host_allocs,
                          (unsigned long long)ss[k]->device_objects, (unsigned long long)ss[k]->library_calls);
            ck_assert_uint_eq(ss[k]->runs, 1);
        }
        ck_assert_uint_eq(s2.kernel_launches, s3.kernel_launches);
        ck_assert_uint_ge(s2.kernel_launches, 4); /* four ops, each at least one launch */
        ck_assert_uint_eq(s2.copies, s3.copies);
        ck_assert_uint_eq(s2.bytes_copied, s3.bytes_copied);
        ck_assert_uint_eq(s2.copies, s1.copies);
        ck_assert_int_eq(cg_plan_stats_get(p, NULL, &tot), CG_OK);
        ck_assert_uint_eq(tot.runs, 3);
        ck_assert_uint_eq(tot.instances_built, 1);
        ck_assert_uint_eq(tot.copies, 3 * s2.copies);
        /* cg_plan_run allocates the output tensor, nothing else. */
        cg_plan_stats s4;
        chain_run(p, 4096, 0, &s4);
        ck_assert_uint_eq(s4.host_allocs, 1);
        ck_assert_uint_eq(s4.device_objects, 0);
        ck_assert_uint_eq(s4.instances_built, 0);
        if (i == 0) {
            /* cg_plan_run_into checks the caller's outputs. */
            int64_t n = 4096, wrong = 4095;
            cg_tensor *x = make_f32(1, &n, 1), *d;
            const char *names[] = {"x"};
            ck_assert_int_eq(cg_tensor_create(CG_F32, 1, &wrong, &d), CG_OK);
            ck_assert_int_eq(cg_plan_run_into(p, 1, names, &x, 1, &d), CG_ERR_INVALID_ARGUMENT);
            ck_assert_str_eq(cg_last_error(), "output 0 ('d') must be a tensor of f32[4096]");
            cg_tensor_free(x);
            cg_tensor_free(d);
        }
        cg_plan_free(p);
    }
    free_model(&md);

    /* With SGEMM (linear, matmul) on a device: still nothing created. */
    md = mix_load();
    static const placement mp[] = {{"opencl:0", NULL}, {"cpu", "l1=opencl:0,t=opencl:0,m=opencl:1,p=opencl:1"}};
    for (size_t i = 0; i < sizeof mp / sizeof mp[0]; i++) {
        cg_plan *p = make_plan(md.m, "mix", mp[i].device, mp[i].place);
        mix_run_check(p, 3, 31, 1, "first");
        cg_plan_stats a, b;
        mix_run_check(p, 3, 31, 1, "second");
        ck_assert_int_eq(cg_plan_stats_get(p, &a, NULL), CG_OK);
        mix_run_check(p, 3, 47, 1, "third");
        ck_assert_int_eq(cg_plan_stats_get(p, &b, NULL), CG_OK);
        ck_assert_msg(a.instances_built == 0 && a.host_allocs == 0 && a.device_objects == 0, "%llu %llu %llu",
                      (unsigned long long)a.instances_built, (unsigned long long)a.host_allocs,
                      (unsigned long long)a.device_objects);
        ck_assert_msg(b.instances_built == 0 && b.host_allocs == 0 && b.device_objects == 0, "%llu %llu %llu",
                      (unsigned long long)b.instances_built, (unsigned long long)b.host_allocs,
                      (unsigned long long)b.device_objects);
        ck_assert_uint_gt(a.kernel_launches, 0);
        ck_assert_uint_eq(a.kernel_launches, b.kernel_launches);
        ck_assert_uint_eq(a.library_calls, b.library_calls);
        ck_assert_uint_eq(a.copies, b.copies);
        cg_plan_free(p);
    }
    free_model(&md);

    /* The GRU encoder on opencl:0. */
    gru_case g = gru_load();
    cg_plan *p = make_plan(g.md.m, "encoder", "opencl:0", NULL);
    cg_tensor *out[2];
    for (int k = 0; k < 2; k++) {
        int64_t dims[3];
        for (int i = 0; i < cg_tensor_ndim(g.expected[k]); i++) dims[i] = cg_tensor_dim(g.expected[k], i);
        ck_assert_int_eq(cg_tensor_create(CG_F32, cg_tensor_ndim(g.expected[k]), dims, &out[k]), CG_OK);
    }
    cg_plan_stats prev = {0};
    for (int r = 0; r < 3; r++) {
        ck_assert_msg(cg_plan_run_into(p, 2, gru_in_names, g.in, 2, out) == CG_OK, "%s", cg_last_error());
        for (int k = 0; k < 2; k++) ck_assert_double_le(max_diff(out[k], g.expected[k]), 1e-5);
        cg_plan_stats s;
        ck_assert_int_eq(cg_plan_stats_get(p, &s, NULL), CG_OK);
        if (r > 0)
            ck_assert_msg(s.instances_built == 0 && s.host_allocs == 0 && s.device_objects == 0, "%llu %llu %llu",
                          (unsigned long long)s.instances_built, (unsigned long long)s.host_allocs,
                          (unsigned long long)s.device_objects);
        if (r > 1) ck_assert_uint_eq(s.kernel_launches, prev.kernel_launches);
        ck_assert_uint_gt(s.kernel_launches, 0);
        prev = s;
    }
    cg_tensor_free(out[0]);
    cg_tensor_free(out[1]);
    cg_plan_free(p);
    gru_free(&g);
    tu_check_runs_resume();
}
END_TEST

/* ---- instances per binding -------------------------------------------- */

static uint64_t last_built(cg_plan *p) {
    cg_plan_stats s;
    ck_assert_int_eq(cg_plan_stats_get(p, &s, NULL), CG_OK);
    return s.instances_built;
}

START_TEST(instances_cached_per_binding) {
    tu_check_runs_pause(); /* its runs of another binding would build instances */
    model md = mix_load();
    static const placement pl[] = {{"cpu", NULL}, {"cpu", "m=opencl:0,p=opencl:0,c=opencl:1"}};
    for (size_t i = 0; i < sizeof pl / sizeof pl[0]; i++) {
        cg_plan *p = make_plan(md.m, "mix", pl[i].device, pl[i].place);
        static const int64_t seq[4] = {2, 3, 2, 3};
        static const uint64_t built[4] = {1, 1, 0, 0};
        for (int k = 0; k < 4; k++) {
            mix_run_check(p, seq[k], 40 + (uint32_t)k, k % 2, "cache");
            ck_assert_msg(last_built(p) == built[k], "run %d (B=%lld) built %llu", k, (long long)seq[k],
                          (unsigned long long)last_built(p));
        }
        /* B = 1..MAX fill the cache (2 and 3 are in it). */
        const int64_t max = CG_PLAN_CACHED_INSTANCES;
        for (int64_t b = 1; b <= max; b++) {
            mix_run_check(p, b, 60 + (uint32_t)b, 0, "fill");
            ck_assert_uint_eq(last_built(p), b == 2 || b == 3 ? 0 : 1);
        }
        /* B = 1 becomes the most recent; a new binding evicts the least
         * recently used, B = 2. */
        mix_run_check(p, 1, 80, 1, "refresh");
        ck_assert_uint_eq(last_built(p), 0);
        mix_run_check(p, max + 1, 81, 0, "one more");
        ck_assert_uint_eq(last_built(p), 1);
        mix_run_check(p, 1, 82, 0, "kept");
        ck_assert_uint_eq(last_built(p), 0);
        mix_run_check(p, max + 1, 83, 1, "kept");
        ck_assert_uint_eq(last_built(p), 0);
        mix_run_check(p, 3, 84, 0, "kept");
        ck_assert_uint_eq(last_built(p), 0);
        mix_run_check(p, 2, 85, 0, "evicted");
        ck_assert_uint_eq(last_built(p), 1);
        /* ... which evicted B = 4, now the least recently used. */
        mix_run_check(p, 4, 86, 1, "evicted");
        ck_assert_uint_eq(last_built(p), 1);
        mix_run_check(p, 3, 87, 1, "kept");
        ck_assert_uint_eq(last_built(p), 0);
        cg_plan_stats tot;
        ck_assert_int_eq(cg_plan_stats_get(p, NULL, &tot), CG_OK);
        ck_assert_uint_eq(tot.instances_built, (uint64_t)max + 3);
        ck_assert_uint_eq(tot.runs, 4 + (uint64_t)max + 8);
        cg_plan_free(p);
    }
    free_model(&md);
    tu_check_runs_resume();
}
END_TEST

START_TEST(describe_before_run) {
    /* An instance made by cg_plan_describe is then used by a run. */
    model md = mix_load();
    static const char *const devs[] = {"cpu", "opencl:0"};
    for (int i = 0; i < 2; i++) {
        cg_plan *p = make_plan(md.m, "mix", devs[i], NULL);
        char *t = describe(p, "B=3", 0);
        free(t);
        mix_run_check(p, 3, 90, 0, "after describe");
        ck_assert_uint_eq(last_built(p), 0);
        mix_run_check(p, 3, 91, 1, "after describe");
        /* Describing more bindings than the cache holds. */
        for (int b = 1; b <= CG_PLAN_CACHED_INSTANCES + 1; b++) {
            char bind[32];
            snprintf(bind, sizeof bind, "B=%d", b + 10);
            t = describe(p, bind, b % 2);
            free(t);
        }
        mix_run_check(p, 3, 92, 0, "after many");
        mix_run_check(p, 40, 93, 0, "new");
        cg_plan_free(p);
    }
    free_model(&md);
}
END_TEST

/* ---- placement rules --------------------------------------------------- */

static void conform_row_ignored(const cg_conform_row *row, void *user) { (void)row, (void)user; }

START_TEST(placement_rules) {
    model md = load_model(chain_text, NULL);
    cg_plan_options o = {.struct_size = sizeof(cg_plan_options), .device = "cpu", .place = "foo"};
    cg_plan *p = NULL;
    ck_assert_int_eq(cg_plan_create(md.m, "chain", &o, &p), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(cg_last_error(), "placement rule 'foo' is not PATTERN=DEVICE") != NULL, "%s", cg_last_error());
    /* options without struct_size (code written before it existed) */
    cg_plan_options old = {0};
    old.device = "opencl:0";
    ck_assert_int_eq(cg_plan_create(md.m, "chain", &old, &p), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(cg_last_error(), "cg_plan_options.struct_size is 0; set it to sizeof(cg_plan_options)"), "%s",
                  cg_last_error());
    cg_conform_options co = {0};
    int failed = -1;
    ck_assert_int_eq(cg_conform(ctx, &co, NULL, NULL, &failed), CG_ERR_INVALID_ARGUMENT); /* NULL callback */
    ck_assert_int_eq(cg_conform(ctx, &co, conform_row_ignored, NULL, &failed), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "cg_conform_options.struct_size is 0"), "%s", cg_last_error());
    o.place = "a=cpu,=opencl:0";
    ck_assert_int_eq(cg_plan_create(md.m, "chain", &o, &p), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "placement rule '=opencl:0'") != NULL, "%s", cg_last_error());
    o.place = "b=";
    ck_assert_int_eq(cg_plan_create(md.m, "chain", &o, &p), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "placement rule 'b='") != NULL, "%s", cg_last_error());
    o.place = "b=opencl:9";
    ck_assert_int_ne(cg_plan_create(md.m, "chain", &o, &p), CG_OK);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(cg_last_error(), "placement rule 'b=opencl:9': ") == cg_last_error() &&
                      strstr(cg_last_error(), "'opencl:9' is out of range") && strstr(cg_last_error(), "opencl:1"),
                  "%s", cg_last_error());
    o.place = NULL;
    o.device = "opencl:9";
    ck_assert_int_ne(cg_plan_create(md.m, "chain", &o, &p), CG_OK);
    ck_assert_msg(strstr(cg_last_error(), "opencl:9") != NULL, "%s", cg_last_error());
    o.device = "no-such-device-name";
    ck_assert_int_ne(cg_plan_create(md.m, "chain", &o, &p), CG_OK);
    ck_assert_msg(strstr(cg_last_error(), "no-such-device-name") != NULL, "%s", cg_last_error());

    /* A rule on the graph's name places every node. */
    p = make_plan(md.m, "chain", "cpu", "chain=opencl:1");
    char *t = describe(p, "N=8", 0);
    const char *nodes[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) ck_assert_msg(!strcmp(tu_plan_step_device(t, nodes[i]), "opencl:1"), "%s", t);
    free(t);
    chain_run(p, 8, 0, NULL);
    cg_plan_free(p);
    /* Globs match the graph's name too. */
    p = make_plan(md.m, "chain", "cpu", "ch*=opencl:0");
    t = describe(p, "N=8", 0);
    for (int i = 0; i < 4; i++) ck_assert_msg(!strcmp(tu_plan_step_device(t, nodes[i]), "opencl:0"), "%s", t);
    free(t);
    cg_plan_free(p);

    /* A node-name rule beats a graph-name rule, before or after it. */
    static const char *const rules[] = {"chain=opencl:1,b=cpu,[cd]=opencl:0", "b=cpu,[cd]=opencl:0,chain=opencl:1"};
    for (int r = 0; r < 2; r++) {
        p = make_plan(md.m, "chain", "cpu", rules[r]);
        t = describe(p, "N=8", 0);
        ck_assert_msg(!strcmp(tu_plan_step_device(t, "a"), "opencl:1"), "%s: %s", rules[r], t);
        ck_assert_msg(!strcmp(tu_plan_step_device(t, "b"), "cpu"), "%s: %s", rules[r], t);
        ck_assert_msg(!strcmp(tu_plan_step_device(t, "c"), "opencl:0"), "%s: %s", rules[r], t);
        ck_assert_msg(!strcmp(tu_plan_step_device(t, "d"), "opencl:0"), "%s: %s", rules[r], t);
        free(t);
        chain_run(p, 8, 0, NULL);
        cg_plan_free(p);
    }
    /* Among node-name rules the last match wins. */
    p = make_plan(md.m, "chain", "cpu", "b=opencl:0,*=opencl:1");
    t = describe(p, "N=8", 0);
    ck_assert_msg(!strcmp(tu_plan_step_device(t, "b"), "opencl:1"), "%s", t);
    free(t);
    cg_plan_free(p);
    p = make_plan(md.m, "chain", "cpu", "*=opencl:1,b=opencl:0");
    t = describe(p, "N=8", 0);
    ck_assert_msg(!strcmp(tu_plan_step_device(t, "b"), "opencl:0") && !strcmp(tu_plan_step_device(t, "a"), "opencl:1"),
                  "%s", t);
    free(t);
    cg_plan_free(p);
    /* Unmatched nodes take the default device; the plan reports it. */
    p = make_plan(md.m, "chain", "opencl:1", "zzz=cpu");
    ck_assert_msg(strncmp(cg_plan_device(p), "opencl:1", 8) == 0, "%s", cg_plan_device(p));
    t = describe(p, "N=8", 0);
    for (int i = 0; i < 4; i++) ck_assert_msg(!strcmp(tu_plan_step_device(t, nodes[i]), "opencl:1"), "%s", t);
    free(t);
    cg_plan_free(p);
    p = make_plan(md.m, "chain", "auto", NULL);
    ck_assert_str_eq(cg_plan_device(p), "auto");
    cg_plan_free(p);
    p = make_plan(md.m, "chain", NULL, NULL);
    ck_assert_str_eq(cg_plan_device(p), "cpu");
    /* Bad bindings for a description. */
    t = NULL;
    ck_assert_int_eq(cg_plan_describe(p, "", 0, &t), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "give a size for N") != NULL, "%s", cg_last_error());
    ck_assert_int_eq(cg_plan_describe(p, "Q=3", 0, &t), CG_ERR_NOT_FOUND);
    ck_assert_ptr_null(t);
    cg_plan_free(p);
    free_model(&md);
}
END_TEST

/* ---- Graphviz ----------------------------------------------------------- */

START_TEST(describe_dot) {
    model md = load_model(chain_text, NULL);
    cg_plan *p = make_plan(md.m, "chain", "cpu", "b=opencl:0,c=opencl:1");
    char *t = describe(p, "N=16", 1);
    ck_assert_msg(strncmp(t, "digraph", 7) == 0, "%s", t);
    ck_assert_int_eq(count_lines_with(t, "subgraph cluster_"), 3);
    ck_assert_int_eq(count_lines_with(t, "label=\"cpu\""), 1);
    ck_assert_int_eq(count_lines_with(t, "label=\"opencl:0"), 1);
    ck_assert_int_eq(count_lines_with(t, "label=\"opencl:1"), 1);
    ck_assert_int_eq(count_lines_with(t, "shape=cds"), 3); /* the copies */
    /* edges: x -> a, a -> copy -> b -> copy -> c -> copy -> d -> output */
    ck_assert_int_eq(count_lines_with(t, " -> ") - count_lines_with(t, "label=\"copy"), 8);
    ck_assert_msg(t[strlen(t) - 2] == '}', "%s", t);
    free(t);
    cg_plan_free(p);
    p = make_plan(md.m, "chain", "cpu", NULL);
    t = describe(p, "N=16", 1);
    ck_assert_int_eq(strncmp(t, "digraph", 7), 0);
    ck_assert_int_eq(count_lines_with(t, "subgraph cluster_"), 1);
    ck_assert_int_eq(count_lines_with(t, "shape=cds"), 0);
    free(t);
    cg_plan_free(p);
    free_model(&md);
}
END_TEST

/* ---- edge cases ---------------------------------------------------------- */

/* An op that may run in place (cast) whose output is larger than its input
 * (i32[3] -> i64[3]: 12 and 24 bytes, the same slot after rounding to the
 * device's alignment) must not share the input's buffer: written in place,
 * y[0] overwrites x[1] before it is read. On the CPU and every device. */
START_TEST(in_place_needs_equal_sizes) {
    const char *text = "graph g {\n  input x: i32[3]\n  a = neg(x)\n  y = cast(a) {to: \"i64\"}\n"
                       "  h = cast(a) {to: \"f16\"}\n  z = cast(h) {to: \"f32\"}\n  output y, z\n}\n";
    model md = load_model(text, NULL);
    int64_t three = 3;
    cg_tensor *x;
    ck_assert_int_eq(cg_tensor_create(CG_I32, 1, &three, &x), CG_OK);
    int32_t *xv = cg_tensor_data(x);
    xv[0] = 1, xv[1] = -200000, xv[2] = 70000;
    const char *xn[] = {"x"};
    for (int d = 0; d < cg_device_count(); d++) {
        char b[256];
        cg_plan *p = make_plan(md.m, "g", cg_device_describe(d, b, sizeof b), NULL);
        cg_tensor *out[2] = {NULL, NULL};
        ck_assert_msg(cg_plan_run(p, 1, xn, &x, 2, out) == CG_OK, "%s", cg_last_error());
        const int64_t *y = cg_tensor_data_const(out[0]);
        const float *z = cg_tensor_data_const(out[1]);
        ck_assert_msg(y[0] == -1 && y[1] == 200000 && y[2] == -70000, "device %d: %lld %lld %lld", d, (long long)y[0],
                      (long long)y[1], (long long)y[2]);
        /* f16 holds -1 exactly; 200000 is past 65504 (inf); -70000 too */
        ck_assert_msg(z[0] == -1.0f && isinf(z[1]) && z[1] > 0 && isinf(z[2]) && z[2] < 0, "device %d: %g %g %g", d,
                      (double)z[0], (double)z[1], (double)z[2]);
        cg_tensor_free(out[0]);
        cg_tensor_free(out[1]);
        cg_plan_free(p);
    }
    cg_tensor_free(x);
    free_model(&md);
}
END_TEST

/* Device transfers (process counters) of one run of `text` on device
 * opencl:0, x = [6] floats. */
static uint64_t transfers_of_run(const char *text) {
    model md = load_model(text, NULL);
    int64_t six = 6;
    cg_tensor *x, *out[2] = {NULL, NULL};
    ck_assert_int_eq(cg_tensor_create(CG_F32, 1, &six, &x), CG_OK);
    float *xv = cg_tensor_data(x);
    for (int i = 0; i < 6; i++) xv[i] = 0.5f * (float)i;
    const char *xn[] = {"x"};
    cg_plan *p = make_plan(md.m, "g", "opencl:0", NULL);
    ck_assert_msg(cg_plan_run(p, 1, xn, &x, 2, out) == CG_OK, "%s", cg_last_error()); /* builds, uploads */
    cg_tensor_free(out[0]);
    cg_tensor_free(out[1]);
    cg_dev_counters c0, c1;
    cg_dev_counters_get(&c0);
    ck_assert_msg(cg_plan_run(p, 1, xn, &x, 2, out) == CG_OK, "%s", cg_last_error());
    cg_dev_counters_get(&c1);
    cg_tensor_free(out[0]);
    cg_tensor_free(out[1]);
    cg_plan_free(p);
    cg_tensor_free(x);
    free_model(&md);
    return c1.transfers - c0.transfers;
}

/* reshape's OpenCL kernel copies through the OpenCL layer, so the device's
 * counters (and a profile's capture) see the copy: the same graph with a
 * tanh where the reshape is differs by exactly that one transfer. */
START_TEST(reshape_copy_is_counted) {
    tu_check_runs_pause();
    const char *with = "graph g {\n  input x: f32[6]\n  a = tanh(x)\n  r = reshape(a) {shape: [2, 3]}\n"
                       "  b = neg(a)\n  output r, b\n}\n";
    const char *without = "graph g {\n  input x: f32[6]\n  a = tanh(x)\n  r = tanh(a)\n"
                          "  b = neg(a)\n  output r, b\n}\n";
    uint64_t t_with = transfers_of_run(with), t_without = transfers_of_run(without);
    ck_assert_msg(t_with == t_without + 1, "transfers with reshape %llu, without %llu", (unsigned long long)t_with,
                  (unsigned long long)t_without);
    tu_check_runs_resume();
}
END_TEST

/* The calls column of node `node`'s row in a profiler table, -1 without. */
static int profile_calls(const char *table, const char *node) {
    const size_t n = strlen(node);
    for (const char *l = table; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        int calls;
        if (!strncmp(l, node, n) && l[n] == ' ' && sscanf(l, "%*s %*s %*s %d", &calls) == 1) return calls;
    }
    return -1;
}

/* Steps that read only parameters run in an instance's first run, and
 * their outputs stay valid after it: a graph whose weight goes through
 * tanh and mul (param only) before the per-run matmul, with other
 * temporaries of the same size that would reuse those bytes, and a graph
 * output made from the parameter alone. Three runs with different x on
 * every device against a double reference; the profiler sees the param-only
 * nodes once in three runs. */
START_TEST(param_only_steps_run_once) {
    static const char text[] = "graph g {\n  input x: f32[N, 6]\n  param w: f32[6, 6] = \"w\"\n"
                               "  t = tanh(w)\n  u = mul(t, t)\n  a = exp(x)\n  b = mul(a, a)\n"
                               "  m = matmul(b, u) {transpose_b: 1}\n  e = neg(m)\n  v = add(t, t)\n  output e, v\n}\n";
    static float w[36];
    fill(w, 36, -1, 1, 301);
    wt ts[1] = {{"w", 2, {6, 6}, w}};
    model md = load_model_with(text, "once.safetensors", ts, 1);
    const char *xn[] = {"x"};
    for (int d = 0; d < cg_device_count(); d++) {
        char b[256];
        cg_plan *p = make_plan(md.m, "g", cg_device_describe(d, b, sizeof b), NULL);
        cg_profiler *prof;
        ck_assert_int_eq(cg_profiler_create(&prof), CG_OK);
        ck_assert_int_eq(cg_plan_set_profiler(p, prof), CG_OK);
        for (int run = 0; run < 3; run++) {
            const int64_t dims[2] = {6, 6};
            cg_tensor *x = make_f32(2, dims, 400 + (uint32_t)run), *out[2] = {NULL, NULL};
            ck_assert_msg(cg_plan_run(p, 1, xn, &x, 2, out) == CG_OK, "%s", cg_last_error());
            double e[36], v[36];
            const float *xv = cg_tensor_data_const(x);
            for (int r = 0; r < 6; r++)
                for (int c = 0; c < 6; c++) {
                    double sum = 0;
                    for (int k = 0; k < 6; k++) {
                        double a = exp((double)xv[r * 6 + k]), t = tanh((double)w[c * 6 + k]);
                        sum += a * a * t * t;
                    }
                    e[r * 6 + c] = -sum;
                    v[r * 6 + c] = 2 * tanh((double)w[r * 6 + c]);
                }
            const double de = max_diff_ref(out[0], e, 36), dv = max_diff_ref(out[1], v, 36);
            ck_assert_msg(de < 1e-3 && dv < 1e-5, "device %d run %d: e off by %g, v by %g", d, run, de, dv);
            cg_tensor_free(x);
            cg_tensor_free(out[0]);
            cg_tensor_free(out[1]);
        }
        char *table = NULL;
        ck_assert_int_eq(cg_profiler_table(prof, 0, &table), CG_OK);
        /* t, u and v (param only) ran in the first of three runs, a, b, m, e in each */
        static const struct {
            const char *node;
            int calls;
        } want[] = {{"g/t", 1}, {"g/u", 1}, {"g/v", 1}, {"g/a", 3}, {"g/b", 3}, {"g/m", 3}, {"g/e", 3}};
        for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
            ck_assert_msg(profile_calls(table, want[k].node) == want[k].calls,
                          "device %d: %s ran %d times, not %d:\n%s", d, want[k].node,
                          profile_calls(table, want[k].node), want[k].calls, table);
        cg_plan_set_profiler(p, NULL);
        cg_profiler_free(prof);
        free(table);
        cg_plan_free(p);
    }
    free_model(&md);
}
END_TEST

/* arange reads only its input's shape: it and what is computed from it
 * alone run in each binding's first run, and a new binding gets its own
 * values (y = x + i^2 along N, with N 3 twice, then 5 twice, on every
 * device). */
START_TEST(binding_only_steps_run_once_per_binding) {
    static const char text[] = "graph g {\n  input x: f32[4, N]\n  s = arange(x) {axis: 1, to: \"f32\"}\n"
                               "  c = mul(s, s)\n  y = add(x, c)\n  output y\n}\n";
    model md = load_model(text, NULL);
    const char *xn[] = {"x"};
    for (int d = 0; d < cg_device_count(); d++) {
        char b[256];
        cg_plan *p = make_plan(md.m, "g", cg_device_describe(d, b, sizeof b), NULL);
        cg_profiler *prof;
        ck_assert_int_eq(cg_profiler_create(&prof), CG_OK);
        ck_assert_int_eq(cg_plan_set_profiler(p, prof), CG_OK);
        for (int run = 0; run < 4; run++) {
            const int64_t dims[2] = {4, run < 2 ? 3 : 5};
            cg_tensor *x = make_f32(2, dims, 500 + (uint32_t)run), *out = NULL;
            ck_assert_msg(cg_plan_run(p, 1, xn, &x, 1, &out) == CG_OK, "%s", cg_last_error());
            const float *xv = cg_tensor_data_const(x), *yv = cg_tensor_data_const(out);
            for (int64_t i = 0; i < 4 * dims[1]; i++) {
                const float k = (float)(i % dims[1]);
                ck_assert_msg(yv[i] == xv[i] + k * k, "device %d run %d: y[%lld] = %g, not %g + %g", d, run,
                              (long long)i, (double)yv[i], (double)xv[i], (double)(k * k));
            }
            cg_tensor_free(x);
            cg_tensor_free(out);
        }
        char *table = NULL;
        ck_assert_int_eq(cg_profiler_table(prof, 0, &table), CG_OK);
        ck_assert_msg(profile_calls(table, "g/s") == 2 && profile_calls(table, "g/c") == 2 &&
                          profile_calls(table, "g/y") == 4,
                      "device %d: s, c, y ran %d, %d, %d times, not 2, 2, 4:\n%s", d, profile_calls(table, "g/s"),
                      profile_calls(table, "g/c"), profile_calls(table, "g/y"), table);
        cg_plan_set_profiler(p, NULL);
        cg_profiler_free(prof);
        free(table);
        cg_plan_free(p);
    }
    free_model(&md);
}
END_TEST

/* The device column of node's line in a profiler table, into dev. */
static void profile_device(const char *table, const char *node, char *dev) {
    const size_t n = strlen(node);
    dev[0] = 0;
    for (const char *l = table; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, node, n) && l[n] == ' ' && sscanf(l, "%*s %*s %63s", dev) == 1) return;
}

/* On an OpenCL plan, small integer and bool results of host data (the
 * graph's i64 input) are computed on the CPU, and the device gets them by
 * a copy; f32 work stays on the device, and a --place rule naming a node
 * holds. y = m != 0 ? x : -x, s = 2 m against hand-computed values. */
START_TEST(small_integer_work_of_host_data_stays_on_host) {
    static const char text[] = "graph g {\n  input m: i64[B, S]\n  input x: f32[B, S]\n"
                               "  b = cast(m) {to: \"bool\"}\n  e = neg(x)\n  y = where(b, x, e)\n"
                               "  s = add(m, m)\n  output y, s\n}\n";
    model md = load_model(text, NULL);
    const int64_t dims[2] = {2, 3}, mv[6] = {0, 1, -2, 3, 0, 5};
    const char *names[] = {"m", "x"};
    for (int d = 1; d < cg_device_count(); d++)
        for (int rule = 0; rule < 2; rule++) {
            char dn[256], place[300];
            cg_device_describe(d, dn, sizeof dn);
            dn[strcspn(dn, " ")] = 0; /* "opencl:N" */
            snprintf(place, sizeof place, "b=%s", dn);
            cg_plan *p = make_plan(md.m, "g", dn, rule ? place : NULL);
            cg_profiler *prof;
            ck_assert_int_eq(cg_profiler_create(&prof), CG_OK);
            ck_assert_int_eq(cg_plan_set_profiler(p, prof), CG_OK);
            cg_tensor *in[2], *out[2] = {NULL, NULL};
            ck_assert_int_eq(cg_tensor_create(CG_I64, 2, dims, &in[0]), CG_OK);
            memcpy(cg_tensor_data(in[0]), mv, sizeof mv);
            in[1] = make_f32(2, dims, 77);
            ck_assert_msg(cg_plan_run(p, 2, names, in, 2, out) == CG_OK, "%s", cg_last_error());
            const float *x = cg_tensor_data_const(in[1]), *y = cg_tensor_data_const(out[0]);
            const int64_t *sv = cg_tensor_data_const(out[1]);
            for (int i = 0; i < 6; i++) {
                ck_assert_msg(y[i] == (mv[i] ? x[i] : -x[i]), "device %d: y[%d] = %g", d, i, (double)y[i]);
                ck_assert_int_eq(sv[i], 2 * mv[i]);
            }
            char *table = NULL, db[64], dy[64], ds[64];
            ck_assert_int_eq(cg_profiler_table(prof, 0, &table), CG_OK);
            profile_device(table, "g/b", db);
            profile_device(table, "g/y", dy);
            profile_device(table, "g/s", ds);
            ck_assert_msg(!strcmp(db, rule ? dn : "cpu") && !strcmp(dy, dn) && !strcmp(ds, "cpu"),
                          "device %s, rule %d: b on %s, y on %s, s on %s:\n%s", dn, rule, db, dy, ds, table);
            free(table);
            for (int k = 0; k < 2; k++) cg_tensor_free(in[k]), cg_tensor_free(out[k]);
            cg_plan_set_profiler(p, NULL);
            cg_profiler_free(prof);
            cg_plan_free(p);
        }
    free_model(&md);
}
END_TEST

START_TEST(edge_cases) {
    /* Empty tensors, an input that is also an output, a value that is an
     * output and read on another device, a parameter read on two devices. */
    const char *text = "graph g {\n  input x: f32[N, 3]\n  param w: f32[3, 3] = \"w\"\n"
                       "  a = tanh(x)\n  b = matmul(a, w)\n  c = neg(b)\n  e = add(a, c)\n  f = matmul(e, w)\n"
                       "  output x, b, f\n}\n";
    float w[9];
    fill(w, 9, -1, 1, 5);
    wt ts[1] = {{"w", 2, {3, 3}, w}};
    model md = load_model_with(text, "w.safetensors", ts, 1);
    static const placement pl[] = {
        {"cpu", NULL},
        {"opencl:0", NULL},
        {"cpu", "b=opencl:0,c=opencl:1,f=opencl:1"},
        {"opencl:1", "a=cpu,e=opencl:0"},
        {"auto", NULL},
    };
    const char *xn[] = {"x"};
    for (size_t i = 0; i < sizeof pl / sizeof pl[0]; i++) {
        cg_plan *p = make_plan(md.m, "g", pl[i].device, pl[i].place);
        for (int64_t n = 0; n <= 5; n += 5) {
            int64_t d[2] = {n, 3};
            cg_tensor *x = make_f32(2, d, 77), *out[3];
            for (int rep = 0; rep < 2; rep++) {
                ck_assert_msg(cg_plan_run(p, 1, xn, &x, 3, out) == CG_OK, "placement %zu, N=%lld: %s", i, (long long)n,
                              cg_last_error());
                ck_assert_int_eq(cg_tensor_dim(out[0], 0), n);
                ck_assert_int_eq(cg_tensor_dim(out[2], 0), n);
                ck_assert_double_eq(max_diff(out[0], x), 0);
                const float *xv = cg_tensor_data_const(x), *bv = cg_tensor_data_const(out[1]),
                            *fv = cg_tensor_data_const(out[2]);
                for (int64_t r = 0; r < n; r++) {
                    double a[3], b[3], e[3];
                    for (int k = 0; k < 3; k++) a[k] = tanh((double)xv[r * 3 + k]);
                    for (int k = 0; k < 3; k++) {
                        b[k] = 0;
                        for (int j = 0; j < 3; j++) b[k] += a[j] * w[j * 3 + k];
                        e[k] = a[k] - b[k];
                    }
                    for (int k = 0; k < 3; k++) {
                        double f = 0;
                        for (int j = 0; j < 3; j++) f += e[j] * w[j * 3 + k];
                        ck_assert_double_eq_tol(bv[r * 3 + k], b[k], 1e-5);
                        ck_assert_double_eq_tol(fv[r * 3 + k], f, 1e-5);
                    }
                }
                for (int k = 0; k < 3; k++) cg_tensor_free(out[k]);
            }
            cg_tensor_free(x);
        }
        cg_plan_free(p);
    }
    free_model(&md);
}
END_TEST

/* ---- kernels compiled ------------------------------------------------- */

static const char ew_text[] = "graph ew {\n"
                              "  input x: f32[N]\n"
                              "  a = tanh(x)\n"
                              "  b = add(a, a)\n"
                              "  output b\n"
                              "}\n";

static int count_clbin(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l > 6 && !strcmp(e->d_name + l - 6, ".clbin")) n++;
    }
    closedir(d);
    return n;
}

/* Two elementwise ops on opencl:0 compile two kernels (un_tanh, and
 * binx_flat built for add of f32), each a program of its own, not the
 * dozens of kernels of their source files; their binaries are on disk once
 * the plan (the device's last user) is gone, and the next plan loads
 * exactly those. */
START_TEST(plan_builds_only_its_kernels) {
    char cache[400], *saved = getenv("CLGRAPH_CACHE_DIR") ? strdup(getenv("CLGRAPH_CACHE_DIR")) : NULL;
    snprintf(cache, sizeof cache, "%s/clcache", tmpdir);
    setenv("CLGRAPH_CACHE_DIR", cache, 1);
    cg_cache_test_reset_dir();
    model md = load_model(ew_text, NULL);
    for (int pass = 0; pass < 2; pass++) {
        cg_cl_cache_stats s0, s1;
        cg_cl_cache_stats_get(&s0);
        cg_plan *p = make_plan(md.m, "ew", "opencl:0", NULL);
        for (int64_t n = 100; n <= 300; n += 200) {
            cg_tensor *x = make_f32(1, &n, 3), *b;
            const char *names[] = {"x"};
            ck_assert_msg(cg_plan_run(p, 1, names, &x, 1, &b) == CG_OK, "%s", cg_last_error());
            const float *xv = cg_tensor_data_const(x), *bv = cg_tensor_data_const(b);
            for (int64_t i = 0; i < n; i++)
                ck_assert_msg(fabs(bv[i] - 2 * tanh((double)xv[i])) <= 1e-6, "b[%lld] = %g", (long long)i, bv[i]);
            cg_tensor_free(x);
            cg_tensor_free(b);
        }
        cg_cl_cache_stats_get(&s1);
        ck_assert_uint_eq(s1.kernels_created - s0.kernels_created, 2);
        ck_assert_uint_eq(s1.builds_from_source - s0.builds_from_source, pass == 0 ? 2 : 0);
        ck_assert_uint_eq(s1.loads_from_disk - s0.loads_from_disk, pass == 0 ? 0 : 2);
        cg_plan_free(p);
        ck_assert_int_eq(count_clbin(cache), 2);
    }
    free_model(&md);
    if (saved) setenv("CLGRAPH_CACHE_DIR", saved, 1);
    else unsetenv("CLGRAPH_CACHE_DIR");
    free(saved);
    cg_cache_test_reset_dir();
}
END_TEST

/* An id or row out of range is the same run-time error on every device,
 * naming the node (OpenCL kernels record it in their check words, which
 * the run reads back), and the plan stays usable: the next run with valid
 * indices is correct, and a later bad one fails again. */
static const char idx_text[] = "graph idx {\n"
                               "  input w: f32[5, 3]\n"
                               "  input ids: i32[4]\n"
                               "  input rows: i32[2]\n"
                               "  y = embedding(w, ids)\n"
                               "  z = gather_rows(y, rows)\n"
                               "  output z\n"
                               "}\n";

static cg_status run_idx(cg_plan *p, const int32_t *ids, const int32_t *rows, float *z_out) {
    static const char *const names[] = {"w", "ids", "rows"};
    const int64_t dw[2] = {5, 3}, di = 4, dr = 2;
    cg_tensor *in[3], *out[1] = {NULL};
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, dw, &in[0]), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_I32, 1, &di, &in[1]), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_I32, 1, &dr, &in[2]), CG_OK);
    for (int i = 0; i < 15; i++) ((float *)cg_tensor_data(in[0]))[i] = (float)(i + 1);
    memcpy(cg_tensor_data(in[1]), ids, sizeof(int32_t) * 4);
    memcpy(cg_tensor_data(in[2]), rows, sizeof(int32_t) * 2);
    cg_status st = cg_plan_run(p, 3, names, in, 1, out);
    if (!st) memcpy(z_out, cg_tensor_data(out[0]), sizeof(float) * 6);
    cg_tensor_free(out[0]);
    for (int i = 0; i < 3; i++) cg_tensor_free(in[i]);
    return st;
}

START_TEST(invalid_indices_every_device) {
    model md = load_model(idx_text, NULL);
    const char *devices[] = {"cpu", "opencl:0", "opencl:1"};
    const int32_t ids_ok[4] = {4, 0, 2, 1}, rows_ok[2] = {2, 0};
    const int32_t ids_bad[4] = {4, 0, 7, 1}, rows_bad[2] = {2, -1};
    for (int d = 0; d < 3; d++) {
        cg_plan *p = make_plan(md.m, "idx", devices[d], NULL);
        float z[6];
        char want[256];
        for (int round = 0; round < 2; round++) {
            ck_assert_msg(run_idx(p, ids_ok, rows_ok, z) == CG_OK, "%s: %s", devices[d], cg_last_error());
            /* z[r] = w[ids[rows[r]]]: w[2] then w[4], w[i][j] = 3 i + j + 1 */
            for (int j = 0; j < 3; j++) {
                ck_assert_float_eq(z[j], (float)(3 * 2 + j + 1));
                ck_assert_float_eq(z[3 + j], (float)(3 * 4 + j + 1));
            }
            ck_assert_int_eq(run_idx(p, ids_bad, rows_ok, z), CG_ERR_KERNEL);
            snprintf(want, sizeof want, "embedding 'y' on %s", devices[d]);
            ck_assert_msg(strstr(cg_last_error(), want), "%s", cg_last_error());
            ck_assert_msg(strstr(cg_last_error(), ": input 1 (ids) holds 7 at position 2, outside [0, 4]"), "%s",
                          cg_last_error());
            ck_assert_int_eq(run_idx(p, ids_ok, rows_bad, z), CG_ERR_KERNEL);
            snprintf(want, sizeof want, "gather_rows 'z' on %s", devices[d]);
            ck_assert_msg(strstr(cg_last_error(), want), "%s", cg_last_error());
            ck_assert_msg(strstr(cg_last_error(), ": input 1 (index) holds -1 at position 1, outside [0, 3]"), "%s",
                          cg_last_error());
        }
        cg_plan_free(p);
    }
    free_model(&md);
}
END_TEST

int main(void) {
    if (cg_device_count() < 3) {
        fprintf(stderr,
                "the scheduler tests need two OpenCL devices (POCL_DEVICES=\"pthread pthread\"): %d found%s%s\n",
                cg_device_count() - 1, cg_device_note() ? ": " : "", cg_device_note() ? cg_device_note() : "");
        return 1;
    }
    Suite *s = suite_create("scheduler");
    TCase *tc = tcase_create("scheduler");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, copies_at_device_boundaries);
    tcase_add_test(tc, wrapped_tensors);
    tcase_add_test(tc, release_gives_back_the_arena);
    tcase_add_test(tc, kept_inputs);
    tcase_add_test(tc, placement_rules);
    tcase_add_test(tc, describe_dot);
    tcase_add_test(tc, unsupported_op_and_decomposition);
    tcase_add_test(tc, steady_state_runs);
    tcase_add_test(tc, instances_cached_per_binding);
    tcase_add_test(tc, describe_before_run);
    tcase_add_test(tc, mixed_graph_same_everywhere);
    tcase_add_test(tc, gru_encoder_same_everywhere);
    tcase_add_test(tc, edge_cases);
    tcase_add_test(tc, param_only_steps_run_once);
    tcase_add_test(tc, binding_only_steps_run_once_per_binding);
    tcase_add_test(tc, small_integer_work_of_host_data_stays_on_host);
    tcase_add_test(tc, in_place_needs_equal_sizes);
    tcase_add_test(tc, reshape_copy_is_counted);
    tcase_add_test(tc, invalid_indices_every_device);
    tcase_add_test(tc, plan_builds_only_its_kernels);
    tcase_add_test(tc, indexed_runs);
    tcase_add_test(tc, carried_state); /* after it: builds elementwise kernels */
    tcase_add_test(tc, carried_output_outside_arena);
    tcase_add_test(tc, carried_blocks_are_reused);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 1);
}
