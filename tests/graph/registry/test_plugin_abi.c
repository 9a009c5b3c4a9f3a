/* Plugin ABI versions: one operator built against the 1.0 header, today's
 * 1.1 header and a pretend 1.2 (larger structs and arrays, minor 2) loads
 * into one context, reads back with the right attributes and kernels, and
 * runs on the CPU and on opencl:0 with the same answers; the 1.1 features
 * work as documented: a per-node state made once per plan instance and
 * counted in the plan's memory, parallel_for, and `supports` steering a
 * node to the op's decomposition. Never forks (OpenCL). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h"
#include "test_util.h"

#define N 8
#define WIDE 80 /* past the 1.1 OpenCL kernel's supported width (64) */

static const char *const variants[] = {"1_0", "1_1", "1_2"};
static const char *const ops[] = {"abi10_scale", "abi11_scale", "abi12_scale"};

static const char *plugin_path(const char *variant) {
    static char buf[1024];
    const char *dir = getenv("CG_TEST_PLUGIN_DIR");
    snprintf(buf, sizeof buf, "%s/libcgabi_%s.so", dir ? dir : ".", variant);
    return buf;
}

static cg_context *context_with_all(void) {
    cg_context *ctx;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    for (int v = 0; v < 3; v++)
        ck_assert_msg(cg_context_load_plugin(ctx, plugin_path(variants[v])) == CG_OK, "%s: %s", variants[v],
                      cg_last_error());
    return ctx;
}

static const cg_op_def *find_op(const cg_context *ctx, const char *name) {
    for (int i = 0; i < cg_context_op_count(ctx); i++)
        if (!strcmp(cg_context_op_name(ctx, i), name)) return cg_context_op_def(ctx, i);
    return NULL;
}

/* Every version's arrays read at its own stride: the second attribute and
 * kernel are where the plugin put them, and 1.1 fields are there only for
 * plugins that have them. */
/* The 1.4 accessors step by the sizes the host says it laid the arrays
 * out with: a pretend later host whose cg_tensor_desc and cg_attr_value
 * grew, today's host (0 or sizeof), and a call from before 1.4 (no size
 * fields: the struct_size says so, whatever follows). */
typedef struct grown_desc {
    cg_tensor_desc d;
    int64_t later[3];
} grown_desc;
typedef struct grown_attr {
    cg_attr_value a;
    double later[5];
} grown_attr;

START_TEST(test_call_accessors) {
    grown_desc in[3], out[2];
    grown_attr at[4];
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    memset(at, 0, sizeof at);
    for (int i = 0; i < 3; i++) in[i].d.dims[0] = 10 + i;
    for (int i = 0; i < 4; i++) at[i].a.i = 100 + i;
    cg_op_call call = {.struct_size = sizeof call,
                       .n_inputs = 3,
                       .n_outputs = 2,
                       .inputs = &in[0].d,
                       .outputs = &out[0].d,
                       .attrs = &at[0].a,
                       .attr_size = sizeof(grown_attr),
                       .desc_size = sizeof(grown_desc)};
    for (int i = 0; i < 3; i++) ck_assert_int_eq(CG_CALL_INPUT(&call, i)->dims[0], 10 + i);
    for (int i = 0; i < 4; i++) ck_assert_int_eq(CG_CALL_ATTR(&call, i)->i, 100 + i);
    CG_CALL_OUTPUT(&call, 1)->ndim = 2;
    ck_assert_int_eq(out[1].d.ndim, 2);
    ck_assert_int_eq(out[0].d.ndim, 0);

    cg_tensor_desc plain[3];
    cg_attr_value pa[2];
    memset(plain, 0, sizeof plain);
    memset(pa, 0, sizeof pa);
    plain[2].ndim = 3;
    pa[1].f = 0.5;
    call.inputs = plain;
    call.attrs = pa;
    call.attr_size = call.desc_size = 0;
    ck_assert_ptr_eq(CG_CALL_INPUT(&call, 2), &plain[2]);
    ck_assert(CG_CALL_ATTR(&call, 1)->f == 0.5);
    call.struct_size = (uint32_t)offsetof(cg_op_call, attr_size);
    call.attr_size = call.desc_size = 12345;
    ck_assert_ptr_eq(CG_CALL_INPUT(&call, 2), &plain[2]);
    ck_assert_ptr_eq(CG_CALL_ATTR(&call, 1), &pa[1]);
}
END_TEST

START_TEST(test_versions_load) {
    cg_context *ctx = context_with_all();
    for (int v = 0; v < 3; v++) {
        const cg_op_def *d = find_op(ctx, ops[v]);
        ck_assert_ptr_nonnull(d);
        ck_assert_int_eq(d->n_attrs, 2);
        ck_assert_str_eq(d->attrs[0].name, "scale");
        ck_assert_str_eq(d->attrs[1].name, "bias");
        ck_assert_double_eq(d->attrs[0].default_float, 1.0);
        ck_assert_int_eq(d->n_kernels, 2);
        ck_assert_int_eq(d->kernels[0].backend, CG_BACKEND_CPU);
        ck_assert_int_eq(d->kernels[1].backend, CG_BACKEND_OPENCL);
        ck_assert_uint_eq(d->kernels[1].struct_size, sizeof(cg_kernel_def)); /* the host's copy */
        if (v == 0) {
            ck_assert_ptr_null(d->kernels[0].create);
            ck_assert_ptr_null(d->kernels[1].supports);
        } else {
            ck_assert_ptr_nonnull(d->kernels[0].create);
            ck_assert_ptr_nonnull(d->kernels[0].destroy);
            ck_assert_ptr_nonnull(d->kernels[1].supports);
        }
    }
    cg_context_free(ctx);
}
END_TEST

/* A plugin built before ABI 1.5 (1.0, 1.2) is never given a tensor of the
 * element types 1.5 and 1.6 added (its own tables stop at bool): the node fails
 * verification with the type, the plugin and its ABI named, before the
 * plugin's infer runs; a type it knows still reaches its infer, and so does
 * every type for the plugin built against today's header ("1_1"). */
START_TEST(test_new_dtypes_refused) {
    cg_context *ctx = context_with_all();
    static const char *const types[] = {"i16", "u16", "u32", "u64", "f8e4m3fn", "f8e8m0", "f4e2m1", "i4", "u2"};
    for (int v = 0; v < 3; v++)
        for (int t = 0; t < (int)(sizeof types / sizeof types[0]); t++) {
            char text[256], want[160];
            snprintf(text, sizeof text,
                     "graph g {\n  input x: %s[3]\n  input w: f32[3]\n  y = %s(x, w)\n  output y\n}\n", types[t],
                     ops[v]);
            cg_model *m;
            ck_assert_int_eq(cg_model_parse(ctx, text, strlen(text), "t.cg", &m), CG_OK);
            ck_assert_int_eq(cg_model_verify(m), CG_ERR_VERIFY);
            snprintf(want, sizeof want, "input 0 is %s, a type plugin 'test-abi-1.%c' (ABI 1.%c) predates", types[t],
                     variants[v][2], variants[v][2]);
            if (v == 1) ck_assert_msg(strstr(cg_last_error(), "x must be f32"), "%s", cg_last_error());
            else ck_assert_msg(strstr(cg_last_error(), want), "%s lacks %s", cg_last_error(), want);
            cg_model_free(m);
        }
    const char *i8 = "graph g {\n  input x: i8[3]\n  input w: f32[3]\n  y = abi12_scale(x, w)\n  output y\n}\n";
    cg_model *m;
    ck_assert_int_eq(cg_model_parse(ctx, i8, strlen(i8), "t.cg", &m), CG_OK);
    ck_assert_int_eq(cg_model_verify(m), CG_ERR_VERIFY);
    ck_assert_msg(!strstr(cg_last_error(), "predates"), "%s", cg_last_error());
    cg_model_free(m);
    cg_context_free(ctx);
}
END_TEST

/* A safetensors file with one f32 tensor "w" of n values. */
static const char *write_weights(const float *w, int n) {
    char hdr[256];
    int len = snprintf(hdr, sizeof hdr, "{\"w\":{\"dtype\":\"F32\",\"shape\":[%d],\"data_offsets\":[0,%d]}}", n, n * 4);
    while (len % 8) hdr[len++] = ' ';
    size_t total = 8 + (size_t)len + (size_t)n * 4;
    unsigned char *buf = malloc(total);
    ck_assert_ptr_nonnull(buf);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)len >> (8 * i));
    memcpy(buf + 8, hdr, (size_t)len);
    memcpy(buf + 8 + len, w, (size_t)n * 4);
    const char *path = tu_write_file("w.safetensors", buf, total);
    free(buf);
    return path;
}

static float w_of(int i) { return 0.25f * (float)(i % 5) - 0.5f; }
static float x_of(int r, int i) { return (float)((r * 7 + i * 3) % 11) - 5.0f; }

/* A model whose graph runs every version's op on x [R, n] and param w. */
static cg_model *model_for(cg_context *ctx, int n, cg_weights **wts) {
    float w[WIDE];
    for (int i = 0; i < n; i++) w[i] = w_of(i);
    ck_assert_int_eq(cg_weights_open(write_weights(w, n), wts), CG_OK);
    char text[1024];
    snprintf(text, sizeof text,
             "graph g {\n  input x: f32[R, %d]\n  param w: f32[%d] = \"w\"\n"
             "  y10 = abi10_scale(x, w) {scale: 2.0, bias: 0.5}\n"
             "  y11 = abi11_scale(x, w) {scale: 2.0, bias: 0.5}\n"
             "  y12 = abi12_scale(x, w) {scale: 2.0, bias: 0.5}\n"
             "  output y10, y11, y12\n}\n",
             n, n);
    cg_model *m;
    ck_assert_msg(cg_model_parse(ctx, text, strlen(text), "abi.cg", &m) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_model_bind_weights(m, *wts) == CG_OK, "%s", cg_last_error());
    return m;
}

/* Runs the plan on R rows and checks every output against
 * x * w * 2 + 0.5 computed here. */
static void run_and_check(cg_plan *p, int rows, int n) {
    int64_t dims[2] = {rows, n};
    cg_tensor *x;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, dims, &x), CG_OK);
    float *xd = cg_tensor_data(x);
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < n; i++) xd[r * n + i] = x_of(r, i);
    const char *names[] = {"x"};
    cg_tensor *outs[3];
    ck_assert_msg(cg_plan_run(p, 1, names, &x, 3, outs) == CG_OK, "%s", cg_last_error());
    for (int v = 0; v < 3; v++) {
        const float *y = cg_tensor_data_const(outs[v]);
        for (int r = 0; r < rows; r++)
            for (int i = 0; i < n; i++) {
                float want = x_of(r, i) * (w_of(i) * 2.0f) + 0.5f;
                ck_assert_msg(fabsf(y[r * n + i] - want) <= 1e-5f, "%s [%d, %d]: %g, want %g", ops[v], r, i,
                              (double)y[r * n + i], (double)want);
            }
        cg_tensor_free(outs[v]);
    }
    cg_tensor_free(x);
}

START_TEST(test_versions_run) {
    const char *device = _i == 0 ? "cpu" : "opencl:0";
    tu_setup_dir("abi");
    cg_context *ctx = context_with_all();
    cg_weights *w;
    cg_model *m = model_for(ctx, N, &w);
    cg_plan_options opt = {.struct_size = sizeof(cg_plan_options), .device = device};
    cg_plan *p;
    ck_assert_msg(cg_plan_create(m, "g", &opt, &p) == CG_OK, "%s", cg_last_error());
    run_and_check(p, 5, N);
    run_and_check(p, 1, N);
    cg_plan_free(p);
    cg_model_free(m);
    cg_weights_free(w);
    cg_context_free(ctx);
    tu_teardown_dir();
}
END_TEST

/* The 1.1 CPU kernel's state (w * scale) is made once per binding of R and
 * lives as long as the binding's instance; 1.2's has the same callbacks.
 * Each state is N + 1 floats. */
START_TEST(test_state_once_per_instance) {
    tu_check_runs_pause(); /* its runs of another binding would make states */
    tu_setup_dir("abi");
    cg_context *ctx = context_with_all();
    cg_weights *w;
    cg_model *m = model_for(ctx, N, &w);
    cg_plan *p;
    ck_assert_int_eq(cg_plan_create(m, "g", NULL, &p), CG_OK);
    const uint64_t per_node = (N + 1) * sizeof(float), per_instance = 2 * per_node; /* abi11 + abi12 */
    cg_plan_memory_info mem;
    for (int run = 0; run < 3; run++) {
        run_and_check(p, 4, N);
        ck_assert_int_eq(cg_plan_memory(p, &mem), CG_OK);
        ck_assert_uint_eq(mem.state_bytes, per_instance);
        ck_assert_uint_eq(mem.all_state_bytes, per_instance);
        ck_assert_uint_eq(mem.instances, 1);
    }
    run_and_check(p, 2, N); /* a new binding: a state of its own */
    ck_assert_int_eq(cg_plan_memory(p, &mem), CG_OK);
    ck_assert_uint_eq(mem.all_state_bytes, 2 * per_instance);
    ck_assert_uint_eq(mem.instances, 2);
    cg_plan_free(p);
    cg_model_free(m);
    cg_weights_free(w);
    cg_context_free(ctx);
    tu_teardown_dir();
    tu_check_runs_resume();
}
END_TEST

/* Rows wider than the 1.1 and 1.2 OpenCL kernels support run their
 * decomposition on opencl:0 (mul + affine), the 1.0 kernel (no supports
 * callback) runs as such; all give the same answer. */
START_TEST(test_supports_steers) {
    tu_setup_dir("abi");
    cg_context *ctx = context_with_all();
    cg_weights *w;
    cg_model *m = model_for(ctx, WIDE, &w);
    cg_plan_options opt = {.struct_size = sizeof(cg_plan_options), .device = "opencl:0"};
    cg_plan *p;
    ck_assert_msg(cg_plan_create(m, "g", &opt, &p) == CG_OK, "%s", cg_last_error());
    run_and_check(p, 3, WIDE);
    char *text;
    ck_assert_int_eq(cg_plan_describe(p, "R=3", 0, &text), CG_OK);
    ck_assert_msg(strstr(text, "y11/mul.0") && strstr(text, "y12/affine.1"), "not decomposed:\n%s", text);
    ck_assert_msg(!strstr(text, "y10/mul.0") && strstr(text, "abi10_scale"), "1.0 kernel not used:\n%s", text);
    free(text);
    cg_plan_free(p);
    cg_model_free(m);
    cg_weights_free(w);
    cg_context_free(ctx);
    tu_teardown_dir();
}
END_TEST

int main(void) {
    Suite *s = suite_create("plugin_abi");
    TCase *tc = tcase_create("abi");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_versions_load);
    tcase_add_test(tc, test_new_dtypes_refused);
    tcase_add_test(tc, test_call_accessors);
    tcase_add_loop_test(tc, test_versions_run, 0, 2);
    tcase_add_test(tc, test_state_once_per_instance);
    tcase_add_test(tc, test_supports_steers);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 1);
}
