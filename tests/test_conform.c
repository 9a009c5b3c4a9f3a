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

extern char **environ;

static char tmpdir[256];
static char *out_text, *err_text;
#define TEXT_MAX (1 << 22)

static void slurp(const char *path, char *buf) {
    buf[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t n = fread(buf, 1, TEXT_MAX - 1, f);
    buf[n] = 0;
    fclose(f);
}

/* Runs clgraph with extra environment entries ("K=V", NULL-terminated). */
static int run_cli(const char *const *args, const char *const *env_extra) {
    const char *exe = getenv("CG_CLGRAPH");
    ck_assert_ptr_nonnull(exe);
    char *argv[64], *envp[512];
    int n = 0, e = 0;
    argv[n++] = (char *)exe;
    for (int i = 0; args[i]; i++) argv[n++] = (char *)args[i];
    argv[n] = NULL;
    for (int i = 0; env_extra && env_extra[i]; i++) envp[e++] = (char *)env_extra[i];
    for (char **p = environ; *p && e < 510; p++) {
        int shadowed = 0;
        for (int i = 0; env_extra && env_extra[i]; i++) {
            size_t k = strcspn(env_extra[i], "=");
            shadowed |= !strncmp(*p, env_extra[i], k + 1);
        }
        if (!shadowed) envp[e++] = *p;
    }
    envp[e] = NULL;
    char op[300], ep[300];
    snprintf(op, sizeof op, "%s/stdout", tmpdir);
    snprintf(ep, sizeof ep, "%s/stderr", tmpdir);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, op, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, ep, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    ck_assert_int_eq(posix_spawn(&pid, exe, &fa, NULL, argv, envp), 0);
    posix_spawn_file_actions_destroy(&fa);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    slurp(op, out_text);
    slurp(ep, err_text);
    ck_assert_msg(WIFEXITED(status), "clgraph died with a signal; stderr: %s", err_text);
    return WEXITSTATUS(status);
}

static void setup(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cg_conform_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    out_text = malloc(TEXT_MAX);
    err_text = malloc(TEXT_MAX);
}

static void teardown(void) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    free(out_text);
    free(err_text);
}

/* Every built-in op that has an OpenCL kernel must pass; none may be
 * missing its cases. */
static void assert_all_pass(const char *device) {
    ck_assert_msg(strstr(out_text, " FAIL") == NULL, "failures:\n%s\n%s", out_text, err_text);
    ck_assert_msg(strstr(out_text, "no cases") == NULL, "ops without cases:\n%s", out_text);
    char needle[64];
    snprintf(needle, sizeof needle, "gru            %s", device);
    ck_assert_msg(strstr(out_text, needle) != NULL, "no gru row for %s:\n%s", device, out_text);
}

START_TEST(pocl_one_device) {
    const char *a[] = {"conform", NULL};
    int rc = run_cli(a, NULL);
    ck_assert_msg(rc == 0, "exit %d\n%s\n%s", rc, out_text, err_text);
    assert_all_pass("opencl:0");
}
END_TEST

START_TEST(pocl_two_devices) {
    const char *env[] = {"POCL_DEVICES=pthread pthread", NULL};
    const char *a[] = {"conform", "--quick", NULL};
    int rc = run_cli(a, env);
    ck_assert_msg(rc == 0, "exit %d\n%s\n%s", rc, out_text, err_text);
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
    snprintf(icd_dir, sizeof icd_dir, "%s/icd", tmpdir);
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
    int rc = run_cli(a, env);
    ck_assert_msg(rc == 0, "exit %d\n%s\n%s", rc, out_text, err_text);
    const char *reports[] = {"Invalid read", "Invalid write", "Uninitialized", "data race", "Oclgrind - ",
                             "Work-group divergence", "Invalid access", NULL};
    for (int i = 0; reports[i]; i++)
        ck_assert_msg(strstr(err_text, reports[i]) == NULL && strstr(out_text, reports[i]) == NULL,
                      "Oclgrind reported '%s':\n%s", reports[i], err_text);
    assert_all_pass("opencl:0");
}
END_TEST

START_TEST(wrong_plugin_kernel_is_caught) {
    char good[600], bad[600];
    const char *dir = getenv("CG_TEST_PLUGIN_DIR");
    snprintf(good, sizeof good, "%s/libcgtest_with_cl.so", dir);
    snprintf(bad, sizeof bad, "%s/libcgtest_bad_cl.so", dir);
    const char *ok[] = {"conform", "--plugin", good, "--op", "square_plus", NULL};
    ck_assert_msg(run_cli(ok, NULL) == 0, "%s\n%s", out_text, err_text);
    ck_assert_msg(strstr(out_text, "square_plus    opencl:0   4 ") != NULL, "%s", out_text);
    const char *no[] = {"conform", "--plugin", bad, "--op", "square_plus", NULL};
    ck_assert_int_eq(run_cli(no, NULL), 1);
    ck_assert_msg(strstr(out_text, "FAIL") != NULL, "%s", out_text);
    ck_assert_msg(strstr(out_text, "case 0 (f32[1]; offset: 0.5): output 0 element 0: device") != NULL, "%s",
                  out_text);
    ck_assert_ptr_nonnull(strstr(err_text, "1 op/device pair failed"));
    /* An op with no OpenCL kernel is reported, not failed. */
    snprintf(good, sizeof good, "%s/libcgtest_good.so", dir);
    const char *nk[] = {"conform", "--plugin", good, "--op", "square_plus", NULL};
    ck_assert_int_eq(run_cli(nk, NULL), 0);
    ck_assert_msg(strstr(out_text, "no cases") != NULL || strstr(out_text, "no kernel") != NULL, "%s", out_text);
    const char *unknown[] = {"conform", "--op", "nosuch", NULL};
    ck_assert_int_eq(run_cli(unknown, NULL), 1);
    ck_assert_ptr_nonnull(strstr(err_text, "no operator named 'nosuch'"));
}
END_TEST

int main(void) {
    Suite *s = suite_create("conform");
    TCase *tc = tcase_create("conform");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 1500);
    tcase_add_test(tc, wrong_plugin_kernel_is_caught);
    tcase_add_test(tc, pocl_one_device);
    tcase_add_test(tc, pocl_two_devices);
    tcase_add_test(tc, oclgrind_quick);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
