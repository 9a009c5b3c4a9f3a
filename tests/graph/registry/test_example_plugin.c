/* The example plugin ops/examples/layernorm (op example.layer_norm), built by meson
 * as libcgx_layernorm.so (path in CG_EXAMPLE_PLUGIN): loading, inference
 * and its messages, the CPU kernel and the decomposition inside graphs
 * against a naive double-precision reference, and, where an OpenCL device
 * exists, the OpenCL kernel in a plan. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h"
#include "registry.h"
#include "test_util.h"

static const char *plugin_path(void) {
    const char *p = getenv("CG_EXAMPLE_PLUGIN");
    return p && *p ? p : "ops/examples/libcgx_layernorm.so";
}

static cg_context *load_ctx(void) {
    cg_context *ctx;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    ck_assert_msg(cg_context_load_plugin(ctx, plugin_path()) == CG_OK, "%s", cg_last_error());
    return ctx;
}

static const cg_op_def *find_def(const cg_context *ctx, const char *name) {
    for (int i = 0; i < cg_context_op_count(ctx); i++)
        if (!strcmp(cg_context_op_name(ctx, i), name)) return cg_context_op_def(ctx, i);
    return NULL;
}

/* ---- data and reference ---- */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static float urand(float lo, float hi) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    double u = (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
    return (float)(lo + (hi - lo) * u);
}

static cg_tensor *rand_tensor(int ndim, const int64_t *dims, float lo, float hi) {
    cg_tensor *t;
    ck_assert_int_eq(cg_tensor_create(CG_F32, ndim, dims, &t), CG_OK);
    float *d = cg_tensor_data(t);
    for (int64_t i = 0; i < cg_tensor_numel(t); i++) d[i] = urand(lo, hi);
    return t;
}

/* The definition, written out plainly in double precision. */
static void reference(const float *x, const float *g, const float *b, int64_t rows, int64_t n, double eps, double *y) {
    for (int64_t r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < n; i++) mean += x[r * n + i];
        mean /= (double)n;
        for (int64_t i = 0; i < n; i++) var += (x[r * n + i] - mean) * (x[r * n + i] - mean);
        var /= (double)n;
        for (int64_t i = 0; i < n; i++) {
            double v = (x[r * n + i] - mean) / sqrt(var + eps);
            y[r * n + i] = v * (g ? g[i] : 1.0) + (b ? b[i] : 0.0);
        }
    }
}

/* Parses `text` (graph "g" with inputs x and optionally g, b), runs it on
 * `device` (NULL: the CPU) with x [rows..., n], and compares y with the
 * reference within `tol` (absolute + relative). */
static void run_case(cg_context *ctx, const char *text, const char *device, int n_in, int x_ndim, const int64_t *x_dims,
                     double eps, double tol) {
    cg_model *m;
    cg_plan *p;
    ck_assert_msg(cg_model_parse(ctx, text, strlen(text), "ln.cg", &m) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_model_verify(m) == CG_OK, "%s", cg_last_error());
    cg_plan_options opt = {.struct_size = sizeof(cg_plan_options), .device = device};
    ck_assert_msg(cg_plan_create(m, "g", &opt, &p) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(!strncmp(cg_plan_device(p), device ? "opencl" : "cpu", device ? 6 : 3), "plan runs on %s",
                  cg_plan_device(p));

    int64_t n = x_dims[x_ndim - 1], rows = 1;
    for (int i = 0; i + 1 < x_ndim; i++) rows *= x_dims[i];
    cg_tensor *in[3] = {rand_tensor(x_ndim, x_dims, -3.0f, 3.0f), NULL, NULL};
    if (n_in > 1) in[1] = rand_tensor(1, &n, 0.5f, 1.5f);
    if (n_in > 2) in[2] = rand_tensor(1, &n, -1.0f, 1.0f);
    const char *names[] = {"x", "g", "b"};
    cg_tensor *y = NULL;
    ck_assert_msg(cg_plan_run(p, n_in, names, in, 1, &y) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_tensor_ndim(y), x_ndim);
    for (int i = 0; i < x_ndim; i++) ck_assert_int_eq(cg_tensor_dim(y, i), x_dims[i]);

    double *want = malloc(sizeof(double) * (size_t)(rows * n));
    ck_assert_ptr_nonnull(want);
    reference(cg_tensor_data_const(in[0]), in[1] ? cg_tensor_data_const(in[1]) : NULL,
              in[2] ? cg_tensor_data_const(in[2]) : NULL, rows, n, eps, want);
    const float *got = cg_tensor_data_const(y);
    for (int64_t i = 0; i < rows * n; i++)
        ck_assert_msg(fabs(got[i] - want[i]) <= tol + tol * fabs(want[i]),
                      "%s, x [%lld rows, %lld], element %lld: got %.9g, want %.9g", device ? device : "cpu",
                      (long long)rows, (long long)n, (long long)i, (double)got[i], want[i]);
    free(want);
    for (int i = 0; i < 3; i++) cg_tensor_free(in[i]);
    cg_tensor_free(y);
    cg_plan_free(p);
    cg_model_free(m);
}

static const char *const affine_graph = "graph g {\n"
                                        "  input x: f32[B, N]\n"
                                        "  input g: f32[N]\n"
                                        "  input b: f32[N]\n"
                                        "  y = %s(x, g, b) {eps: 0.001}\n"
                                        "  output y\n"
                                        "}\n";

/* ---- tests ---- */

START_TEST(loads_and_declares) {
    cg_context *ctx = load_ctx();
    const cg_op_def *def = find_def(ctx, "example.layer_norm");
    ck_assert_ptr_nonnull(def);
    ck_assert_int_eq(def->min_inputs, 1);
    ck_assert_int_eq(def->max_inputs, 3);
    ck_assert_int_eq(def->n_attrs, 1);
    ck_assert_str_eq(def->attrs[0].name, "eps");
    ck_assert(fabs(def->attrs[0].default_float - 1e-5) < 1e-12);
    ck_assert_ptr_nonnull(def->decompose);
    ck_assert_ptr_nonnull(def->conform_case);
    int cpu = 0, cl = 0;
    for (int i = 0; i < def->n_kernels; i++) {
        cpu |= def->kernels[i].backend == CG_BACKEND_CPU;
        cl |= def->kernels[i].backend == CG_BACKEND_OPENCL;
    }
    ck_assert(cpu && cl);
    /* Every conformance case is well formed and infers. */
    int n = 0;
    cg_conform_case c;
    for (;; n++) {
        memset(&c, 0, sizeof c);
        c.struct_size = sizeof c;
        if (!def->conform_case(n, &c)) break;
        ck_assert_uint_eq(c.struct_size, sizeof c);
        ck_assert(c.n_inputs >= 1 && c.n_inputs <= 3 && c.n_outputs == 1);
    }
    ck_assert_int_ge(n, 12);
    /* A second load of the same plugin is refused by name. */
    ck_assert_int_eq(cg_context_load_plugin(ctx, plugin_path()), CG_ERR_PLUGIN);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "already loaded"));
    cg_context_free(ctx);
}
END_TEST

START_TEST(cpu_matches_reference) {
    cg_context *ctx = load_ctx();
    char text[512];
    snprintf(text, sizeof text, affine_graph, "example.layer_norm");
    const int64_t widths[] = {1, 3, 17, 1000}, batches[] = {1, 3, 17};
    for (int w = 0; w < 4; w++)
        for (int b = 0; b < 3; b++) {
            int64_t dims[2] = {batches[b], widths[w]};
            run_case(ctx, text, NULL, 3, 2, dims, 0.001, 1e-5);
        }
    cg_context_free(ctx);
}
END_TEST

START_TEST(optional_inputs_and_ranks) {
    cg_context *ctx = load_ctx();
    /* x only, default eps (1e-5), three dims with symbols. */
    const char *t1 = "graph g {\n  input x: f32[A, B, N]\n  y = example.layer_norm(x)\n  output y\n}\n";
    int64_t d3[3] = {2, 3, 17};
    run_case(ctx, t1, NULL, 1, 3, d3, 1e-5, 1e-5);
    /* x and gamma, one dim, a large eps. */
    const char *t2 = "graph g {\n  input x: f32[N]\n  input g: f32[N]\n"
                     "  y = example.layer_norm(x, g) {eps: 2}\n  output y\n}\n";
    int64_t d1[1] = {17};
    run_case(ctx, t2, NULL, 2, 1, d1, 2.0, 1e-5);
    cg_context_free(ctx);
}
END_TEST

/* Verifying `body` (one node line) in a graph with x [B, 4], g [5], i i32[4]
 * fails with a message containing `want`. */
static void verify_fails(cg_context *ctx, const char *body, const char *want) {
    char text[512];
    snprintf(text, sizeof text,
             "graph g {\n  input x: f32[B, 4]\n  input g: f32[5]\n  input i: i32[4]\n"
             "  input s: f32[]\n  %s\n  output y\n}\n",
             body);
    cg_model *m;
    ck_assert_msg(cg_model_parse(ctx, text, strlen(text), "bad.cg", &m) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_model_verify(m), CG_ERR_VERIFY);
    ck_assert_msg(strstr(cg_last_error(), want) != NULL, "'%s' lacks '%s'", cg_last_error(), want);
    cg_model_free(m);
}

START_TEST(infer_errors) {
    cg_context *ctx = load_ctx();
    verify_fails(ctx, "y = example.layer_norm(x, g)", "input 1 (gamma) has shape [5], expected [4]");
    verify_fails(ctx, "y = example.layer_norm(i)", "input 0 (x) must be f32, got i32");
    verify_fails(ctx, "y = example.layer_norm(s)", "at least 1 dim");
    verify_fails(ctx, "y = example.layer_norm(x, x)", "input 1 (gamma) must have 1 dim");
    verify_fails(ctx, "y = example.layer_norm(x) {eps: -1.0}", "eps must be a finite number >= 0");
    verify_fails(ctx, "y = example.layer_norm(x) {epsilon: 0.1}", "unknown attribute 'epsilon'");

    /* A symbolic last dim takes its size from gamma. */
    const char *ok = "graph g {\n  input x: f32[B, N]\n  input g: f32[8]\n"
                     "  y = example.layer_norm(x, g)\n  output y\n}\n";
    cg_model *m;
    char *desc;
    ck_assert_int_eq(cg_model_parse(ctx, ok, strlen(ok), "ok.cg", &m), CG_OK);
    ck_assert_msg(cg_model_verify(m) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_model_describe(m, &desc), CG_OK);
    ck_assert_msg(strstr(desc, "g.y: f32[B, 8]") != NULL, "%s", desc);
    free(desc);
    cg_model_free(m);
    cg_context_free(ctx);
}
END_TEST

/* The decomposition, run on its own: a copy of the op without kernels, so
 * that every plan expands it into built-in ops. */
static cg_op_def decomposed_def;
static const cg_op_def *decomposed_ops[] = {&decomposed_def};
static cg_plugin_desc decomposed_desc = {
    .struct_size = sizeof(cg_plugin_desc),
    .abi_major = CG_PLUGIN_ABI_MAJOR,
    .abi_minor = CG_PLUGIN_ABI_MINOR,
    .name = "layernorm-decomposed-test",
    .version = "1",
    .ops = decomposed_ops,
    .n_ops = 1,
};

START_TEST(decomposition_matches_reference) {
    cg_context *ctx = load_ctx();
    const cg_op_def *def = find_def(ctx, "example.layer_norm");
    ck_assert_ptr_nonnull(def);
    decomposed_def = *def;
    decomposed_def.name = "layer_norm_decomposed";
    decomposed_def.kernels = NULL;
    decomposed_def.n_kernels = 0;
    ck_assert_msg(cg_registry_add_plugin(ctx, &decomposed_desc, "<test>", NULL) == CG_OK, "%s", cg_last_error());
    char text[512];
    snprintf(text, sizeof text, affine_graph, "layer_norm_decomposed");
    const int64_t widths[] = {1, 3, 17}, batches[] = {1, 3, 17};
    for (int w = 0; w < 3; w++)
        for (int b = 0; b < 3; b++) {
            int64_t dims[2] = {batches[b], widths[w]};
            run_case(ctx, text, NULL, 3, 2, dims, 0.001, 1e-4);
        }
    /* Without gamma and beta, default eps printed back into the IR. */
    const char *t1 = "graph g {\n  input x: f32[B, N]\n  y = layer_norm_decomposed(x)\n"
                     "  output y\n}\n";
    int64_t d[2] = {3, 33};
    run_case(ctx, t1, NULL, 1, 2, d, 1e-5, 1e-4);
    cg_context_free(ctx);
}
END_TEST

START_TEST(opencl_matches_reference) {
    if (cg_device_count() < 2) {
        fprintf(stderr, "example_plugin: no OpenCL device (%s); OpenCL case skipped\n",
                cg_device_note() ? cg_device_note() : "none found");
        return;
    }
    cg_context *ctx = load_ctx();
    char text[512];
    snprintf(text, sizeof text, affine_graph, "example.layer_norm");
    const int64_t widths[] = {1, 3, 17, 1000}, batches[] = {1, 3, 17};
    for (int w = 0; w < 4; w++)
        for (int b = 0; b < 3; b++) {
            int64_t dims[2] = {batches[b], widths[w]};
            run_case(ctx, text, "opencl:0", 3, 2, dims, 0.001, 1e-4);
        }
    const char *t1 = "graph g {\n  input x: f32[A, B, N]\n  y = example.layer_norm(x)\n  output y\n}\n";
    int64_t d3[3] = {2, 3, 300};
    run_case(ctx, t1, "opencl:0", 1, 3, d3, 1e-5, 1e-4);
    cg_context_free(ctx);
}
END_TEST

/* A safetensors file "ln.safetensors" in the working directory with f32
 * tensors "g" and "b" of n values each. */
static cg_weights *write_gb(const float *g, const float *b, int64_t n) {
    char hdr[256];
    int len = snprintf(hdr, sizeof hdr,
                       "{\"b\":{\"dtype\":\"F32\",\"shape\":[%lld],\"data_offsets\":[0,%lld]},"
                       "\"g\":{\"dtype\":\"F32\",\"shape\":[%lld],\"data_offsets\":[%lld,%lld]}}",
                       (long long)n, (long long)n * 4, (long long)n, (long long)n * 4, (long long)n * 8);
    while (len % 8) hdr[len++] = ' ';
    FILE *f = fopen("ln.safetensors", "wb");
    ck_assert_ptr_nonnull(f);
    unsigned char lb[8];
    for (int i = 0; i < 8; i++) lb[i] = (unsigned char)((uint64_t)len >> (8 * i));
    ck_assert(fwrite(lb, 1, 8, f) == 8 && fwrite(hdr, 1, (size_t)len, f) == (size_t)len);
    ck_assert(fwrite(b, 4, (size_t)n, f) == (size_t)n && fwrite(g, 4, (size_t)n, f) == (size_t)n);
    ck_assert_int_eq(fclose(f), 0);
    cg_weights *w;
    ck_assert_msg(cg_weights_open("ln.safetensors", &w) == CG_OK, "%s", cg_last_error());
    return w;
}

/* gamma and beta as weights: the kernels' per-node states (ABI 1.1) are
 * made, counted in the plan's memory, and give the reference's answer on
 * many rows (the CPU kernel splits them with parallel_for). */
START_TEST(state_from_weights) {
    const char *device = _i ? "opencl:0" : "cpu";
    if (_i && cg_device_count() < 2) return;
    cg_context *ctx = load_ctx();
    const int64_t rows = 300, n = 257;
    int64_t gd = n;
    cg_tensor *g = rand_tensor(1, &gd, 0.5f, 1.5f), *b = rand_tensor(1, &gd, -1.0f, 1.0f);
    cg_weights *w = write_gb(cg_tensor_data_const(g), cg_tensor_data_const(b), n);
    char text[512];
    snprintf(text, sizeof text,
             "graph g {\n  input x: f32[R, %lld]\n  param gamma: f32[%lld] = \"g\"\n  param beta: f32[%lld] = \"b\"\n"
             "  y = example.layer_norm(x, gamma, beta) {eps: 0.001}\n  output y\n}\n",
             (long long)n, (long long)n, (long long)n);
    cg_model *m;
    ck_assert_msg(cg_model_parse(ctx, text, strlen(text), "ln.cg", &m) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_model_bind_weights(m, w) == CG_OK, "%s", cg_last_error());
    cg_plan_options opt = {.struct_size = sizeof(cg_plan_options), .device = device};
    cg_plan *p;
    ck_assert_msg(cg_plan_create(m, "g", &opt, &p) == CG_OK, "%s", cg_last_error());
    int64_t xd[2] = {rows, n};
    cg_tensor *x = rand_tensor(2, xd, -3.0f, 3.0f), *y = NULL;
    const char *names[] = {"x"};
    ck_assert_msg(cg_plan_run(p, 1, names, &x, 1, &y) == CG_OK, "%s", cg_last_error());
    cg_plan_memory_info mem;
    ck_assert_int_eq(cg_plan_memory(p, &mem), CG_OK);
    /* CPU: gamma and beta in double; OpenCL: the work-group size */
    if (_i) ck_assert_uint_ge(mem.state_bytes, sizeof(size_t));
    else ck_assert_uint_ge(mem.state_bytes, 2 * (uint64_t)n * sizeof(double));
    double *want = malloc(sizeof(double) * (size_t)(rows * n));
    ck_assert_ptr_nonnull(want);
    reference(cg_tensor_data_const(x), cg_tensor_data_const(g), cg_tensor_data_const(b), rows, n, 0.001, want);
    const float *got = cg_tensor_data_const(y);
    for (int64_t i = 0; i < rows * n; i++)
        ck_assert_msg(fabs(got[i] - want[i]) <= 1e-4 + 1e-4 * fabs(want[i]), "%s element %lld: %.9g, want %.9g", device,
                      (long long)i, (double)got[i], want[i]);
    free(want);
    cg_tensor_free(x);
    cg_tensor_free(y);
    cg_tensor_free(g);
    cg_tensor_free(b);
    cg_plan_free(p);
    cg_model_free(m);
    cg_weights_free(w);
    cg_context_free(ctx);
    remove("ln.safetensors");
}
END_TEST

int main(void) {
    Suite *s = suite_create("example_plugin");
    TCase *tc = tcase_create("example.layer_norm");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, loads_and_declares);
    tcase_add_test(tc, cpu_matches_reference);
    tcase_add_test(tc, optional_inputs_and_ranks);
    tcase_add_test(tc, infer_errors);
    tcase_add_test(tc, decomposition_matches_reference);
    tcase_add_test(tc, opencl_matches_reference);
    tcase_add_loop_test(tc, state_from_weights, 0, 2);
    suite_add_tcase(s, tc);
    /* No fork: OpenCL (PoCL) initialised before a fork hangs the child. */
    return tu_run_suite(s, 1);
}
