/* cg_context_options: the process settings the first context sets are in
 * effect (the CPU pool's size, the cache directory), a later context may
 * repeat them but not change them (the message names the setting and the
 * value in effect), a zero field leaves the environment variable in
 * charge, plugins load from the options after CLGRAPH_PLUGINS (which
 * no_env_plugins skips), and malformed options are refused with a message.
 *
 * Its own process: the settings are the process's. Never forks, so the
 * tests see each other's settings in the order they are added. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "clgraph/clgraph.h"
#include "cpu/cpu_pool.h"
#include "settings.h"
#include "test_util.h"

static cg_context_options opts(void) {
    cg_context_options o = {.struct_size = sizeof o};
    return o;
}

START_TEST(malformed_options) {
    cg_context *ctx = NULL;
    cg_context_options o = {0};
    ck_assert_int_eq(cg_context_create(&o, &ctx), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "set it to sizeof(cg_context_options)"));
    ck_assert_ptr_null(ctx);
    o = opts();
    o.threads = -2;
    ck_assert_int_eq(cg_context_create(&o, &ctx), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "threads is -2"));
    o = opts();
    o.n_plugins = 1;
    ck_assert_int_eq(cg_context_create(&o, &ctx), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "NULL list"));
    ck_assert_int_eq(cg_context_create(NULL, NULL), CG_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(first_context_sets_the_process) {
    tu_setup_dir("ctxopt");
    char cache[512];
    snprintf(cache, sizeof cache, "%s/cache", tu_dir);
    setenv("CLGRAPH_THREADS", "5", 1); /* the option wins over the variable */
    cg_context_options o = opts();
    o.threads = 3;
    o.cache_dir = cache;
    o.cl_warnings = 1;
    cg_context *ctx;
    ck_assert_msg(cg_context_create(&o, &ctx) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_cpu_threads(), 3);
    cg_cache_test_reset_dir();
    ck_assert_str_eq(cg_cache_dir(), cache);
    ck_assert_str_eq(cg_setting(CG_SET_CL_WARNINGS), "1");
    cg_context_free(ctx);

    /* the same values again: fine; no value: the ones in effect stay */
    ck_assert_msg(cg_context_create(&o, &ctx) == CG_OK, "%s", cg_last_error());
    cg_context_free(ctx);
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    cg_context_free(ctx);
    ck_assert_int_eq(cg_cpu_threads(), 3);

    /* another pool size: the pool exists, so it is refused by name */
    o.threads = 2;
    ck_assert_int_eq(cg_context_create(&o, &ctx), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "CLGRAPH_THREADS: this process already uses '3'"));
    ck_assert_ptr_null(ctx);

    /* the warnings are read at each build: any context may change them */
    o.threads = 0;
    o.cl_warnings = -1;
    ck_assert_msg(cg_context_create(&o, &ctx) == CG_OK, "%s", cg_last_error());
    ck_assert_str_eq(cg_setting(CG_SET_CL_WARNINGS), "0");
    cg_context_free(ctx);
    unsetenv("CLGRAPH_THREADS");
    tu_teardown_dir();
}
END_TEST

/* A setting nobody set follows its variable, and once read, a value set
 * must equal the variable's. */
START_TEST(unset_settings_follow_the_environment) {
    setenv("CLGRAPH_CPU_MATH", "baseline", 1);
    ck_assert_str_eq(cg_setting(CG_SET_CPU_MATH), "baseline");
    ck_assert_int_eq(cg_setting_set(CG_SET_CPU_MATH, "baseline"), CG_OK);
    ck_assert_int_eq(cg_setting_set(CG_SET_CPU_MATH, "avx2"), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "CLGRAPH_CPU_MATH: this process already uses 'baseline'"));
    unsetenv("CLGRAPH_CPU_MATH");
    ck_assert_ptr_null(cg_setting(CG_SET_CPU_MATH));
    ck_assert_str_eq(cg_setting_name(CG_SET_GEMM), "CLGRAPH_GEMM");
}
END_TEST

START_TEST(plugins_from_options) {
    const char *plugin = getenv("CG_EXAMPLE_PLUGIN");
    ck_assert_ptr_nonnull(plugin);
    cg_context_options o = opts();
    o.plugins = &plugin;
    o.n_plugins = 1;
    setenv("CLGRAPH_PLUGINS", "/nonexistent/libnothing.so", 1);
    cg_context *ctx;
    ck_assert_int_eq(cg_context_create(&o, &ctx), CG_ERR_PLUGIN); /* the variable's plugins come first */
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "CLGRAPH_PLUGINS: "));
    o.no_env_plugins = 1;
    ck_assert_msg(cg_context_create(&o, &ctx) == CG_OK, "%s", cg_last_error());
    int found = 0;
    for (int i = 0; i < cg_context_op_count(ctx); i++)
        found |= !strcmp(cg_context_op_name(ctx, i), "example.layer_norm");
    ck_assert(found);
    cg_context_free(ctx);
    unsetenv("CLGRAPH_PLUGINS");
    const char *missing = "/nonexistent/libother.so";
    o.plugins = &missing;
    ck_assert_int_eq(cg_context_create(&o, &ctx), CG_ERR_PLUGIN);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "libother.so"));
}
END_TEST

int main(void) {
    Suite *s = suite_create("context_options");
    TCase *tc = tcase_create("options");
    tcase_add_test(tc, malformed_options);
    tcase_add_test(tc, first_context_sets_the_process);
    tcase_add_test(tc, unset_settings_follow_the_environment);
    tcase_add_test(tc, plugins_from_options);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 1);
}
