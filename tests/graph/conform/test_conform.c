/* `clgraph conform` end to end: every operator on PoCL with one device and
 * with two, the quick set under Oclgrind with its reports failing the test,
 * and a plugin whose OpenCL kernel is wrong being caught. */
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

/* Every built-in op that has an OpenCL kernel must pass; none may be
 * missing its cases. */
static void assert_all_pass(const char *device) {
    ck_assert_msg(strstr(tu_out, " FAIL") == NULL, "failures:\n%s\n%s", tu_out, tu_err);
    ck_assert_msg(strstr(tu_out, "no cases") == NULL, "ops without cases:\n%s", tu_out);
    char needle[64];
    snprintf(needle, sizeof needle, "gru            %s", device);
    ck_assert_msg(strstr(tu_out, needle) != NULL, "no gru row for %s:\n%s", device, tu_out);
}

START_TEST(pocl_one_device) {
    const char *a[] = {"conform", NULL};
    int rc = tu_run_cli(a, NULL, NULL);
    ck_assert_msg(rc == 0, "exit %d\n%s\n%s", rc, tu_out, tu_err);
    assert_all_pass("opencl:0");
}
END_TEST

START_TEST(pocl_two_devices) {
    const char *env[] = {"POCL_DEVICES=pthread pthread", NULL};
    const char *a[] = {"conform", "--quick", NULL};
    int rc = tu_run_cli(a, env, NULL);
    ck_assert_msg(rc == 0, "exit %d\n%s\n%s", rc, tu_out, tu_err);
    assert_all_pass("opencl:0");
    assert_all_pass("opencl:1");
}
END_TEST

START_TEST(oclgrind_quick) {
    /* Oclgrind checks every kernel for out-of-bounds accesses, races and
     * uninitialised reads; it exits 0 even when it reports, so the test
     * reads its reports. CLBlast is skipped there (the own GEMM kernels
     * run instead): its kernels are far too slow to simulate. */
    if (access("/usr/lib/oclgrind/liboclgrind-rt-icd.so", R_OK) != 0) {
        ck_abort_msg("oclgrind is not installed (apt-get install oclgrind)");
    }
    char icd_dir[300], icd[400];
    snprintf(icd_dir, sizeof icd_dir, "%s/icd", tu_dir);
    ck_assert_int_eq(mkdir(icd_dir, 0755), 0);
    snprintf(icd, sizeof icd, "%s/oclgrind.icd", icd_dir);
    FILE *f = fopen(icd, "w");
    ck_assert_ptr_nonnull(f);
    fputs("/usr/lib/oclgrind/liboclgrind-rt-icd.so\n", f);
    fclose(f);
    char vendors[400];
    snprintf(vendors, sizeof vendors, "OCL_ICD_VENDORS=%s", icd_dir);
    const char *env[] = {vendors, "CLGRAPH_GEMM=own", "OCLGRIND_CHECK_API=1", NULL};
    const char *a[] = {"conform", "--quick", NULL};
    int rc = tu_run_cli(a, env, NULL);
    ck_assert_msg(rc == 0, "exit %d\n%s\n%s", rc, tu_out, tu_err);
    const char *reports[] = {"Invalid read", "Invalid write", "Uninitialized", "data race", "Oclgrind - ",
                             "Work-group divergence", "Invalid access", NULL};
    for (int i = 0; reports[i]; i++)
        ck_assert_msg(strstr(tu_err, reports[i]) == NULL && strstr(tu_out, reports[i]) == NULL,
                      "Oclgrind reported '%s':\n%s", reports[i], tu_err);
    assert_all_pass("opencl:0");
}
END_TEST

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
    tcase_add_test(tc, pocl_one_device);
    tcase_add_test(tc, pocl_two_devices);
    tcase_add_test(tc, oclgrind_quick);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
