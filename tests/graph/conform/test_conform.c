/* `clgraph conform` catching a plugin whose OpenCL kernel is wrong, an op
 * with no OpenCL kernel, and an unknown op. Every built-in op on every
 * OpenCL implementation and path set: tests/tools/test_portability.c. */
#include <check.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

static void setup(void) { tu_setup_dir("conform"); }

START_TEST(wrong_plugin_kernel_is_caught) {
    char good[600], bad[600];
    const char *dir = getenv("CG_TEST_PLUGIN_DIR");
    snprintf(good, sizeof good, "%s/libcgtest_with_cl.so", dir);
    snprintf(bad, sizeof bad, "%s/libcgtest_bad_cl.so", dir);
    const char *ok[] = {"conform", "--plugin", good, "--op", "square_plus", NULL};
    ck_assert_msg(tu_run_cli(ok, NULL, NULL) == 0, "%s\n%s", tu_out, tu_err);
    ck_assert_msg(strstr(tu_out, "square_plus    opencl:0   4 ") != NULL, "%s", tu_out);
    const char *no[] = {"conform", "--plugin", bad, "--op", "square_plus", NULL};
    ck_assert_int_eq(tu_run_cli(no, NULL, NULL), 1);
    ck_assert_msg(strstr(tu_out, "FAIL") != NULL, "%s", tu_out);
    ck_assert_msg(strstr(tu_out, "case 0 (f32[1]; offset: 0.5): output 0 element 0: device") != NULL, "%s",
                  tu_out);
    ck_assert_ptr_nonnull(strstr(tu_err, "1 op/device pair failed"));
    /* An op with no OpenCL kernel is reported, not failed. */
    snprintf(good, sizeof good, "%s/libcgtest_good.so", dir);
    const char *nk[] = {"conform", "--plugin", good, "--op", "square_plus", NULL};
    ck_assert_int_eq(tu_run_cli(nk, NULL, NULL), 0);
    ck_assert_msg(strstr(tu_out, "no cases") != NULL || strstr(tu_out, "no kernel") != NULL, "%s", tu_out);
    const char *unknown[] = {"conform", "--op", "nosuch", NULL};
    ck_assert_int_eq(tu_run_cli(unknown, NULL, NULL), 1);
    ck_assert_ptr_nonnull(strstr(tu_err, "no operator named 'nosuch'"));
}
END_TEST

int main(void) {
    Suite *s = suite_create("conform");
    TCase *tc = tcase_create("conform");
    tcase_add_checked_fixture(tc, setup, tu_teardown_dir);
    tcase_set_timeout(tc, 1500);
    tcase_add_test(tc, wrong_plugin_kernel_is_caught);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
