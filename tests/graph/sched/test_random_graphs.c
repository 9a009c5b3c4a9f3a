/* Randomized differential test of the scheduler: small random graphs from
 * the op set (element-wise, linear, matmul, softmax, layer_norm, reductions,
 * reshapes, transposes, concat and slice, comparisons and where; some
 * intermediate values exposed as outputs, which changes the memory plan)
 * run on every device and with random per-node placements over the CPU and
 * the OpenCL devices. Each plan runs three times with another binding of
 * the batch dim in between and must give bit-identical outputs each time;
 * every device and placement must agree with the CPU-only plan within
 * float tolerance. The graphs come from a seeded generator, so a failure
 * names its seed and prints the graph text. CG_RANDOM_GRAPHS sets how many
 * (default 40); CG_RANDOM_COLD=1 starts from empty kernel caches (the
 * portability suite runs it both ways on every OpenCL implementation).
 * Never forks (PoCL). */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clgraph/clgraph.h"
#include "test_util.h"

#define F 16 /* the feature width every value has */

static cg_context *ctx;

/* xorshift64*: the same graphs on every machine */
static uint64_t rng_state;
static uint32_t rnd(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}
static int pick(int n) { return (int)(rnd() % (uint32_t)n); }
static float unit(void) { return (float)rnd() / 4294967296.0f * 2.0f - 1.0f; }

typedef struct gen {
    char text[16384];
    size_t len;
    int n_vals;  /* values v0..v{n-1}, each f32[B, F] */
    int n_nodes; /* node names n0.. */
    int n_out;
    char outs[8][16];
} gen;

static void put(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(gen *g, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(g->text + g->len, sizeof g->text - g->len, fmt, ap);
    va_end(ap);
    ck_assert(n >= 0 && (size_t)n < sizeof g->text - g->len);
    g->len += (size_t)n;
}

/* A node `v<new> = EXPR` named n<k>; returns the new value's index. */
static int node(gen *g, const char *expr) {
    put(g, "  n%d: v%d = %s\n", g->n_nodes++, g->n_vals, expr);
    return g->n_vals++;
}

/* Intermediate values get a name of their own (t<k>) for multi-node steps. */
static int tmp_id;

static int any(gen *g) { return pick(g->n_vals); }

/* One random step that makes a new f32[B, F] value from existing ones. */
static void step(gen *g) {
    char e[512];
    int a = any(g), b = any(g);
    static const char *unary[] = {"tanh", "sigmoid", "relu", "neg", "abs", "sin", "cos", "erf", "softsign", "elu"};
    static const char *binary[] = {"add", "sub", "maximum", "minimum"};
    switch (pick(14)) {
    case 12: { /* a weight made from parameters (folded, run once per plan instance), viewed in place */
        int t = tmp_id++, u = tmp_id++;
        put(g, "  n%d: t%d = transpose(w%d) {perm: [1, 0]}\n", g->n_nodes++, t, pick(3));
        put(g, "  n%d: t%d = reshape(t%d) {shape: [%d, %d]}\n", g->n_nodes++, u, t, F, F);
        snprintf(e, sizeof e, "matmul(v%d, t%d)", a, u);
        node(g, e);
        break;
    }
    case 13: { /* a long row: softmax over three values side by side, the middle kept */
        int t = tmp_id++, u = tmp_id++;
        put(g, "  n%d: t%d = concat(v%d, v%d, v%d) {axis: 1}\n", g->n_nodes++, t, a, b, any(g));
        put(g, "  n%d: t%d = %s(t%d) {axis: 1}\n", g->n_nodes++, u, pick(2) ? "softmax" : "log_softmax", t);
        snprintf(e, sizeof e, "slice(t%d) {axis: 1, start: %d, end: %d}", u, F, 2 * F);
        node(g, e);
        break;
    }
    case 0:
        snprintf(e, sizeof e, "%s(v%d)", unary[pick(10)], a);
        node(g, e);
        break;
    case 1:
        snprintf(e, sizeof e, "%s(v%d, v%d)", binary[pick(4)], a, b);
        node(g, e);
        break;
    case 2: { /* a product, kept bounded */
        snprintf(e, sizeof e, "mul(v%d, v%d)", a, b);
        int m = node(g, e);
        snprintf(e, sizeof e, "tanh(v%d)", m);
        node(g, e);
        break;
    }
    case 3:
        snprintf(e, sizeof e, "linear(v%d, w%d, bias%d)", a, pick(3), pick(3));
        node(g, e);
        break;
    case 4:
        snprintf(e, sizeof e, "matmul(v%d, w%d) {transpose_b: %d}", a, pick(3), pick(2));
        node(g, e);
        break;
    case 5:
        snprintf(e, sizeof e, "%s(v%d) {axis: %d}", pick(2) ? "softmax" : "log_softmax", a, pick(2) ? -1 : 0);
        node(g, e);
        break;
    case 6:
        snprintf(e, sizeof e, "layer_norm(v%d, gamma, beta) {axis: -1}", a);
        node(g, e);
        break;
    case 7: { /* a reduction over the features, broadcast back */
        static const char *red[] = {"reduce_sum", "reduce_mean", "reduce_max"};
        int t = tmp_id++;
        put(g, "  n%d: t%d = %s(v%d) {axes: [1], keepdims: 1}\n", g->n_nodes++, t, red[pick(3)], a);
        snprintf(e, sizeof e, "add(v%d, t%d)", b, t);
        int s = node(g, e);
        snprintf(e, sizeof e, "tanh(v%d)", s);
        node(g, e);
        break;
    }
    case 8: { /* transpose, something on [F, B], transpose back */
        int t = tmp_id++, u = tmp_id++;
        put(g, "  n%d: t%d = transpose(v%d) {perm: [1, 0]}\n", g->n_nodes++, t, a);
        put(g, "  n%d: t%d = %s(t%d) {axis: 1}\n", g->n_nodes++, u, pick(2) ? "softmax" : "log_softmax", t);
        snprintf(e, sizeof e, "transpose(t%d) {perm: [1, 0]}", u);
        node(g, e);
        break;
    }
    case 9: { /* heads: [B, 4, 4], softmax per head, back to [B, F] */
        int t = tmp_id++, u = tmp_id++;
        put(g, "  n%d: t%d = reshape(v%d) {shape: [0, 4, 4]}\n", g->n_nodes++, t, a);
        put(g, "  n%d: t%d = softmax(t%d) {axis: 2}\n", g->n_nodes++, u, t);
        snprintf(e, sizeof e, "reshape(t%d) {shape: [B, %d]}", u, F);
        node(g, e);
        break;
    }
    case 10: { /* concat then a slice of the middle */
        int t = tmp_id++;
        put(g, "  n%d: t%d = concat(v%d, v%d) {axis: 1}\n", g->n_nodes++, t, a, b);
        snprintf(e, sizeof e, "slice(t%d) {axis: 1, start: %d, end: %d}", t, 1 + pick(F - 1), 0);
        /* end = start + F */
        char *p = strstr(e, "end: 0");
        int start = atoi(strstr(e, "start: ") + 7);
        snprintf(p, sizeof e - (size_t)(p - e), "end: %d}", start + F);
        node(g, e);
        break;
    }
    default: { /* where(a > b, a, b) */
        int t = tmp_id++;
        put(g, "  n%d: t%d = greater(v%d, v%d)\n", g->n_nodes++, t, a, b);
        snprintf(e, sizeof e, "where(t%d, v%d, v%d)", t, b, a);
        node(g, e);
        break;
    }
    }
}

/* The graph for one seed: inputs x, y [B, F], 3..20 steps, the last value
 * and up to three earlier ones as outputs. */
static void generate(gen *g, uint64_t seed) {
    memset(g, 0, sizeof *g);
    tmp_id = 0;
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
    put(g, "graph g {\n  input x: f32[B, %d]\n  input y: f32[B, %d]\n", F, F);
    for (int i = 0; i < 3; i++)
        put(g, "  param w%d: f32[%d, %d] = \"w%d\"\n  param bias%d: f32[%d] = \"b%d\"\n", i, F, F, i, i, F, i);
    put(g, "  param gamma: f32[%d] = \"gamma\"\n  param beta: f32[%d] = \"beta\"\n", F, F);
    put(g, "  n%d: v0 = add(x, bias0)\n", g->n_nodes++);
    put(g, "  n%d: v1 = mul(y, gamma)\n", g->n_nodes++);
    g->n_vals = 2;
    int steps = 3 + pick(18);
    for (int s = 0; s < steps; s++) step(g);
    int extra = pick(4);
    for (int k = 0; k < extra; k++) snprintf(g->outs[g->n_out++], sizeof g->outs[0], "v%d", 2 + pick(g->n_vals - 2));
    snprintf(g->outs[g->n_out++], sizeof g->outs[0], "v%d", g->n_vals - 1);
    put(g, "  output");
    for (int k = 0; k < g->n_out; k++) put(g, "%s %s", k ? "," : "", g->outs[k]);
    put(g, "\n}\n");
}

static cg_tensor *random_tensor(int ndim, const int64_t *dims, float scale) {
    cg_tensor *t = NULL;
    ck_assert_msg(cg_tensor_create(CG_F32, ndim, dims, &t) == CG_OK, "%s", cg_last_error());
    float *d = cg_tensor_data(t);
    for (int64_t i = 0; i < cg_tensor_numel(t); i++) d[i] = unit() * scale;
    return t;
}

static void write_weights(const char *path) {
    const char *names[8] = {"w0", "w1", "w2", "b0", "b1", "b2", "gamma", "beta"};
    cg_tensor *ts[8];
    int64_t wd[2] = {F, F}, bd[1] = {F};
    for (int i = 0; i < 3; i++) ts[i] = random_tensor(2, wd, 0.25f);
    for (int i = 3; i < 8; i++) ts[i] = random_tensor(1, bd, 1.0f);
    ck_assert_msg(cg_weights_save(path, 8, names, (const cg_tensor *const *)ts) == CG_OK, "%s", cg_last_error());
    for (int i = 0; i < 8; i++) cg_tensor_free(ts[i]);
}

/* Runs plan p on inputs of batch b (made from the seed) into outs. */
static cg_status run_batch(cg_plan *p, int64_t b, uint64_t seed, int n_out, cg_tensor **outs) {
    rng_state = seed ^ (uint64_t)b * 0x51ED27;
    int64_t d[2] = {b, F};
    cg_tensor *in[2] = {random_tensor(2, d, 2.0f), random_tensor(2, d, 2.0f)};
    const char *names[2] = {"x", "y"};
    cg_status st = cg_plan_run(p, 2, names, in, n_out, outs);
    cg_tensor_free(in[0]);
    cg_tensor_free(in[1]);
    return st;
}

static int same_bits(const cg_tensor *a, const cg_tensor *b) {
    return cg_tensor_numel(a) == cg_tensor_numel(b) &&
           !memcmp(cg_tensor_data_const(a), cg_tensor_data_const(b), (size_t)cg_tensor_numel(a) * sizeof(float));
}

static void free_outs(cg_tensor **o, int n) {
    for (int k = 0; k < n; k++) {
        cg_tensor_free(o[k]);
        o[k] = NULL;
    }
}

/* A random placement of the graph's nodes over the devices named. */
static void random_place(const gen *g, int n_dev, char names[][16], char *out, size_t size) {
    size_t u = 0;
    out[0] = 0;
    for (int k = 0; k < g->n_nodes && u + 32 < size; k++)
        if (pick(2)) u += (size_t)snprintf(out + u, size - u, "%sn%d=%s", u ? "," : "", k, names[pick(n_dev)]);
}

/* Plans the graph with (device, place), runs batch 3, 5, 3 and compares:
 * the two batch-3 runs bit for bit, the first with the reference (when
 * given) within tolerance. Returns the first run's outputs in `keep`. */
static void check_plan(cg_model *m, const gen *g, uint64_t seed, const char *device, const char *place, cg_tensor **ref,
                       cg_tensor **keep) {
    cg_plan_options o = {.struct_size = sizeof(cg_plan_options), .device = device, .place = place};
    cg_plan *p = NULL;
    ck_assert_msg(cg_plan_create(m, "g", &o, &p) == CG_OK, "seed %llu %s %s: %s\n%s", (unsigned long long)seed, device,
                  place ? place : "", cg_last_error(), g->text);
    cg_tensor *r1[8] = {0}, *r2[8] = {0}, *r3[8] = {0};
    const char *what = place && *place ? place : device;
    ck_assert_msg(run_batch(p, 3, seed, g->n_out, r1) == CG_OK, "seed %llu on %s: %s\n%s", (unsigned long long)seed,
                  what, cg_last_error(), g->text);
    ck_assert_msg(run_batch(p, 3, seed, g->n_out, r2) == CG_OK, "seed %llu on %s: %s\n%s", (unsigned long long)seed,
                  what, cg_last_error(), g->text);
    ck_assert_msg(run_batch(p, 5, seed, g->n_out, r3) == CG_OK, "seed %llu on %s: %s\n%s", (unsigned long long)seed,
                  what, cg_last_error(), g->text);
    free_outs(r3, g->n_out);
    ck_assert_msg(run_batch(p, 3, seed, g->n_out, r3) == CG_OK, "seed %llu on %s: %s\n%s", (unsigned long long)seed,
                  what, cg_last_error(), g->text);
    for (int k = 0; k < g->n_out; k++) {
        ck_assert_msg(same_bits(r1[k], r2[k]) && same_bits(r1[k], r3[k]),
                      "seed %llu on %s: output %s differs between runs of one plan\n%s", (unsigned long long)seed, what,
                      g->outs[k], g->text);
        if (!ref) continue;
        const float *a = cg_tensor_data_const(r1[k]), *b = cg_tensor_data_const(ref[k]);
        for (int64_t i = 0; i < cg_tensor_numel(r1[k]); i++) {
            int nan_both = isnan(a[i]) && isnan(b[i]);
            ck_assert_msg(nan_both || fabsf(a[i] - b[i]) <= 2e-4f + 2e-4f * fabsf(b[i]),
                          "seed %llu on %s: output %s element %lld is %g, the CPU gives %g\n%s",
                          (unsigned long long)seed, what, g->outs[k], (long long)i, a[i], b[i], g->text);
        }
    }
    for (int k = 0; k < g->n_out; k++) {
        if (keep) keep[k] = r1[k];
        else cg_tensor_free(r1[k]);
    }
    free_outs(r2, g->n_out);
    free_outs(r3, g->n_out);
    cg_plan_free(p);
}

START_TEST(random_graphs_agree_and_repeat) {
    const char *env = getenv("CG_RANDOM_GRAPHS");
    int n_graphs = env && atoi(env) > 0 ? atoi(env) : 40;
    char devs[8][16];
    int n_dev = 0;
    for (int i = 0; i < cg_device_count() && n_dev < 8; i++) {
        char buf[512];
        const char *name = cg_device_describe(i, buf, sizeof buf);
        if (name) snprintf(devs[n_dev++], sizeof devs[0], "%s", name);
    }
    tu_setup_dir("random_graphs");
    const char *wpath = tu_path("w.safetensors");
    for (int s = 0; s < n_graphs; s++) {
        uint64_t seed = (uint64_t)s;
        gen g;
        generate(&g, seed);
        rng_state = seed + 77;
        write_weights(wpath);
        cg_model *m = NULL;
        cg_weights *w = NULL;
        ck_assert_msg(cg_model_parse(ctx, g.text, g.len, "random.cg", &m) == CG_OK, "seed %d: %s\n%s", s,
                      cg_last_error(), g.text);
        ck_assert_msg(cg_weights_open(wpath, &w) == CG_OK, "%s", cg_last_error());
        ck_assert_msg(cg_model_bind_weights(m, w) == CG_OK && cg_model_verify(m) == CG_OK, "seed %d: %s\n%s", s,
                      cg_last_error(), g.text);
        cg_tensor *ref[8] = {0};
        check_plan(m, &g, seed, "cpu", NULL, NULL, ref);
        for (int d = 1; d < n_dev; d++) check_plan(m, &g, seed, devs[d], NULL, ref, NULL);
        if (n_dev > 1) {
            char place[2048];
            rng_state = seed * 31 + 7;
            random_place(&g, n_dev, devs, place, sizeof place);
            check_plan(m, &g, seed, devs[pick(n_dev)], place, ref, NULL);
        }
        free_outs(ref, g.n_out);
        cg_model_free(m);
        cg_weights_free(w);
    }
    tu_teardown_dir();
}
END_TEST

/* CG_RANDOM_COLD=1: fresh, empty program caches (clgraph's, PoCL's,
 * Mesa's) for this process, so every kernel is compiled while the plans
 * run; removed at exit. */
static char cold_dir[256];

/* Every compiler cache empty, for the whole process. */
static void cold_caches(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(cold_dir, sizeof cold_dir, "%s/cg_cold_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    char bufs[TU_COLD_VARS][400], caches[300];
    const char *env[TU_COLD_VARS + 1];
    if (!mkdtemp(cold_dir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(caches, sizeof caches, "%s/caches", cold_dir);
    if (tu_cold_caches(caches, bufs, env) != 0) {
        perror(caches);
        exit(1);
    }
    for (int i = 0; i < TU_COLD_VARS; i++) {
        char *eq = strchr(bufs[i], '=');
        *eq = 0;
        if (setenv(bufs[i], eq + 1, 1) != 0) {
            perror(bufs[i]);
            exit(1);
        }
    }
}

int main(void) {
    const char *cold = getenv("CG_RANDOM_COLD");
    if (cold && *cold && strcmp(cold, "0")) cold_caches();
    if (cg_context_create(NULL, &ctx) != CG_OK) {
        fprintf(stderr, "%s\n", cg_last_error());
        return 1;
    }
    Suite *s = suite_create("random_graphs");
    TCase *tc = tcase_create("random_graphs");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, random_graphs_agree_and_repeat);
    suite_add_tcase(s, tc);
    int rc = tu_run_suite(s, 1);
    cg_context_free(ctx);
    if (cold_dir[0]) {
        snprintf(tu_dir, sizeof tu_dir, "%s", cold_dir);
        tu_teardown_dir();
    }
    return rc;
}
