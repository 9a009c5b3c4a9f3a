/* The plugin loader on a good plugin, a newer-minor plugin, a wrong-ABI
 * plugin, a duplicate op, a failing init, a library without the entry
 * symbol, a non-library file and a missing path. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h"
#include "test_util.h"

static char path_buf[4096];

static const char *plugin(const char *variant) {
    const char *dir = getenv("CG_TEST_PLUGIN_DIR");
    snprintf(path_buf, sizeof path_buf, "%s/libcgtest_%s.so", dir ? dir : ".", variant);
    return path_buf;
}

static int has_op(cg_context *ctx, const char *name) {
    for (int i = 0; i < cg_context_op_count(ctx); i++)
        if (!strcmp(cg_context_op_name(ctx, i), name)) return 1;
    return 0;
}

/* y = square_plus(x) {offset: 0.5} parsed in ctx, planned, and an input x
 * of {1, -2, 3}. */
static void square_plus_plan(cg_context *ctx, cg_model **m, cg_plan **p, cg_tensor **x) {
    const char *text = "graph g {\n  input x: f32[N]\n  y = square_plus(x) {offset: 0.5}\n  output y\n}\n";
    ck_assert_int_eq(cg_model_parse(ctx, text, strlen(text), "p.cg", m), CG_OK);
    ck_assert_msg(cg_plan_create(*m, "g", NULL, p) == CG_OK, "%s", cg_last_error());
    int64_t n = 3;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 1, &n, x), CG_OK);
    float *xd = cg_tensor_data(*x);
    xd[0] = 1.0f, xd[1] = -2.0f, xd[2] = 3.0f;
}

START_TEST(good_plugin_runs) {
    cg_context *ctx;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    ck_assert(!has_op(ctx, "square_plus"));
    size_t before = cg_context_op_count(ctx);
    ck_assert_msg(cg_context_load_plugin(ctx, plugin("good")) == CG_OK, "%s", cg_last_error());
    ck_assert_uint_eq(cg_context_op_count(ctx), before + 1);
    ck_assert(has_op(ctx, "square_plus"));

    /* The plugin's op runs inside a graph like a built-in one. */
    cg_model *m;
    cg_plan *p;
    cg_tensor *x, *y;
    square_plus_plan(ctx, &m, &p, &x);
    const char *names[] = {"x"};
    ck_assert_msg(cg_plan_run(p, 1, names, &x, 1, &y) == CG_OK, "%s", cg_last_error());
    const float *yd = cg_tensor_data_const(y);
    ck_assert_float_eq(yd[0], 1.5f);
    ck_assert_float_eq(yd[1], 4.5f);
    ck_assert_float_eq(yd[2], 9.5f);
    cg_tensor_free(x);
    cg_tensor_free(y);
    cg_plan_free(p);
    cg_model_free(m);

    /* Loading the same plugin twice is refused by name. */
    ck_assert_int_eq(cg_context_load_plugin(ctx, plugin("good")), CG_ERR_PLUGIN);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "plugin 'test-good' is already loaded"));
    cg_context_free(ctx);
}
END_TEST

/* A kernel asking for more workspace than a device allocates fails plan
 * creation naming the node; it used to wrap to no workspace at all. */
START_TEST(huge_workspace_refused) {
    cg_context *ctx;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    ck_assert_msg(cg_context_load_plugin(ctx, plugin("huge_workspace")) == CG_OK, "%s", cg_last_error());
    cg_model *m;
    cg_plan *p;
    cg_tensor *x, *y = NULL;
    square_plus_plan(ctx, &m, &p, &x); /* lowered for the shapes of the first run */
    const char *names[] = {"x"};
    ck_assert_int_eq(cg_plan_run(p, 1, names, &x, 1, &y), CG_ERR_NO_MEMORY);
    ck_assert_ptr_null(y);
    const char *e = cg_last_error();
    ck_assert_msg(strstr(e, "p.cg:3:3: ") && strstr(e, "square_plus 'y': the kernel asks for a workspace of "), "%s",
                  e);
    cg_tensor_free(x);
    cg_plan_free(p);
    cg_model_free(m);
    cg_context_free(ctx);
}
END_TEST

START_TEST(newer_minor_loads) {
    cg_context *ctx;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    ck_assert_msg(cg_context_load_plugin(ctx, plugin("newer_minor")) == CG_OK, "%s", cg_last_error());
    ck_assert(has_op(ctx, "square_plus"));
    cg_context_free(ctx);
}
END_TEST

static void expect_fail(const char *variant, const char *const *needles) {
    cg_context *ctx;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    size_t before = cg_context_op_count(ctx);
    const char *path = plugin(variant);
    ck_assert_int_eq(cg_context_load_plugin(ctx, path), CG_ERR_PLUGIN);
    const char *e = cg_last_error();
    ck_assert_msg(strstr(e, path) == e, "message does not start with the path: %s", e);
    for (int i = 0; needles[i]; i++) ck_assert_msg(strstr(e, needles[i]) != NULL, "'%s' not in: %s", needles[i], e);
    ck_assert_uint_eq(cg_context_op_count(ctx), before); /* nothing half-registered */
    cg_context_free(ctx);
}

/* Counts past the registry's limits are refused before any element is
 * read (1 << 20 ops used to read past the plugin's array). */
START_TEST(too_many_ops) {
    const char *n[] = {"plugin 'test-too_many_ops': 1048576 ops, more than a plugin may declare (4096)", NULL};
    expect_fail("too_many_ops", n);
}
END_TEST

START_TEST(wrong_abi) {
    char host[64], plugin_abi[96];
    snprintf(host, sizeof host, "this clgraph has ABI %d.%d", CG_PLUGIN_ABI_MAJOR, CG_PLUGIN_ABI_MINOR);
    snprintf(plugin_abi, sizeof plugin_abi, "plugin 'test-wrong_abi' was built for ABI 99.%d", CG_PLUGIN_ABI_MINOR);
    const char *n[] = {plugin_abi, host, "major versions must match", NULL};
    expect_fail("wrong_abi", n);
}
END_TEST

/* A dim list attribute is ABI 1.3: a plugin claiming 1.2 that declares one
 * was built against a header it does not match. */
START_TEST(dims_old_abi) {
    char msg[160];
    snprintf(msg, sizeof msg, "attribute 'shape' is a dim list, which needs ABI %d.3 (the plugin claims %d.2)",
             CG_PLUGIN_ABI_MAJOR, CG_PLUGIN_ABI_MAJOR);
    const char *n[] = {"plugin 'test-dims_old_abi'", "op 'square_plus'", msg, NULL};
    expect_fail("dims_old_abi", n);
}
END_TEST

START_TEST(duplicate_op) {
    const char *n[] = {"duplicate op 'add'", "plugin 'builtin'", NULL};
    expect_fail("duplicate_op", n);
}
END_TEST

START_TEST(failing_init) {
    const char *n[] = {"init failed: this plugin needs a license file", NULL};
    expect_fail("failing_init", n);
}
END_TEST

/* A corrupt descriptor size and a name that would break a message over
 * two lines are refused at admission; both used to load. */
START_TEST(huge_struct_size) {
    const char *n[] = {"descriptor struct_size 4294967295 is not a cg_plugin_desc", NULL};
    expect_fail("huge_struct", n);
}
END_TEST

START_TEST(name_with_newline) {
    const char *n[] = {"the plugin's name has a control character (byte 0x0a at offset 9)", NULL};
    expect_fail("name_newline", n);
}
END_TEST

/* Whether a message is one line of printable text. */
static int one_line(const char *e) {
    for (const char *p = e; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) return 0;
    return 1;
}

/* Messages a plugin writes (init, infer, a kernel) reach the user as one
 * line: control characters shown as \xNN, a buffer filled without a NUL
 * cut at its end. They used to be printed as they were, over lines. */
START_TEST(plugin_messages_one_line) {
    const char *n[] = {"init failed: this plugin needs a license file\\x0aat /etc/license", NULL};
    expect_fail("init_newline", n);
    ck_assert(one_line(cg_last_error()));
    static const char *const variants[] = {"infer_newline", "infer_full"};
    for (int v = 0; v < 2; v++) {
        cg_context *ctx;
        ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
        ck_assert_msg(cg_context_load_plugin(ctx, plugin(variants[v])) == CG_OK, "%s", cg_last_error());
        const char *text = "graph g {\n  input x: f32[N]\n  y = square_plus(x) {offset: 0.5}\n  output y\n}\n";
        cg_model *m = NULL;
        cg_status st = cg_model_parse(ctx, text, strlen(text), "p.cg", &m);
        if (st == CG_OK) st = cg_model_verify(m);
        ck_assert_int_ne(st, CG_OK);
        const char *e = cg_last_error();
        ck_assert_msg(one_line(e) && strstr(e, "p.cg:3:3: square_plus 'y': "), "%s: %s", variants[v], e);
        if (v == 0) ck_assert_msg(strstr(e, "input x is wrong\\x0asee the second line"), "%s", e);
        cg_model_free(m);
        cg_context_free(ctx);
    }
    cg_context *ctx;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    ck_assert_msg(cg_context_load_plugin(ctx, plugin("kernel_newline")) == CG_OK, "%s", cg_last_error());
    cg_model *m;
    cg_plan *p;
    cg_tensor *x, *y = NULL;
    square_plus_plan(ctx, &m, &p, &x);
    const char *names[] = {"x"};
    ck_assert_int_ne(cg_plan_run(p, 1, names, &x, 1, &y), CG_OK);
    const char *e = cg_last_error();
    ck_assert_msg(one_line(e) && strstr(e, "the kernel failed\\x0d\\x0asecond line\\x1b[31m"), "%s", e);
    cg_tensor_free(x);
    cg_tensor_free(y);
    cg_plan_free(p);
    cg_model_free(m);
    cg_context_free(ctx);
}
END_TEST

START_TEST(no_entry) {
    const char *n[] = {"not a clgraph plugin (no 'cg_plugin_entry' symbol)", NULL};
    expect_fail("no_entry", n);
}
END_TEST

START_TEST(not_a_library) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/cg_not_a_lib_%d.so", (int)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 64; i++) fputs("this is text, not ELF\n", f);
    fclose(f);
    cg_context *ctx;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    ck_assert_int_eq(cg_context_load_plugin(ctx, path), CG_ERR_PLUGIN);
    /* dlerror() text is passed on. */
    ck_assert_msg(strstr(cg_last_error(), "cannot load plugin:") && strstr(cg_last_error(), "invalid ELF header"), "%s",
                  cg_last_error());
    ck_assert_int_eq(cg_context_load_plugin(ctx, "/nonexistent/libx.so"), CG_ERR_PLUGIN);
    ck_assert_msg(strstr(cg_last_error(), "/nonexistent/libx.so: cannot load plugin:") &&
                      strstr(cg_last_error(), "No such file"),
                  "%s", cg_last_error());
    /* a FIFO: refused at once (dlopen would wait for a writer), a device too */
    remove(path);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_eq(cg_context_load_plugin(ctx, path), CG_ERR_PLUGIN);
    ck_assert_msg(strstr(cg_last_error(), "cannot load plugin: not a regular file (a FIFO)"), "%s", cg_last_error());
    ck_assert_int_eq(cg_context_load_plugin(ctx, "/dev/zero"), CG_ERR_PLUGIN);
    ck_assert_str_eq(cg_last_error(), "/dev/zero: cannot load plugin: not a regular file (a character device)");
    cg_context_free(ctx);
    remove(path);
}
END_TEST

START_TEST(env_variable) {
    char list[8192];
    snprintf(list, sizeof list, "%s", plugin("good"));
    setenv("CLGRAPH_PLUGINS", list, 1);
    cg_context *ctx;
    ck_assert_msg(cg_context_create(NULL, &ctx) == CG_OK, "%s", cg_last_error());
    ck_assert(has_op(ctx, "square_plus"));
    cg_context_free(ctx);
    snprintf(list, sizeof list, "%s", plugin("wrong_abi"));
    setenv("CLGRAPH_PLUGINS", list, 1);
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_ERR_PLUGIN);
    ck_assert_ptr_null(ctx);
    ck_assert_msg(strstr(cg_last_error(), "CLGRAPH_PLUGINS: ") == cg_last_error(), "%s", cg_last_error());
    setenv("CLGRAPH_PLUGINS", "", 1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("plugin_loader");
    TCase *tc = tcase_create("loader");
    tcase_add_test(tc, good_plugin_runs);
    tcase_add_test(tc, newer_minor_loads);
    tcase_add_test(tc, huge_workspace_refused);
    tcase_add_test(tc, too_many_ops);
    tcase_add_test(tc, wrong_abi);
    tcase_add_test(tc, dims_old_abi);
    tcase_add_test(tc, duplicate_op);
    tcase_add_test(tc, failing_init);
    tcase_add_test(tc, no_entry);
    tcase_add_test(tc, huge_struct_size);
    tcase_add_test(tc, name_with_newline);
    tcase_add_test(tc, plugin_messages_one_line);
    tcase_add_test(tc, not_a_library);
    tcase_add_test(tc, env_variable);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
