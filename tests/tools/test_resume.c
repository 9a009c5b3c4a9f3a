/* `clgraph translate --output FILE --resume` (tools/clgraph/tr_resume.h):
 * a run killed at any moment (SIGKILL at the test hook CG_TEST_KILL_AT:
 * mid-window, after a window's lines before its record, after the record;
 * in the first, a middle and the last window; twice in a row) and started
 * again with --resume writes the bytes of a run never stopped (its
 * stdout); and the refusals, each one line naming the file: another input,
 * other options, a cut output file, --resume without --output, an
 * output that cannot be made. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

static char model[600], *input, *want;
static const char *in_path; /* input, as a file: tu_run_cli reads stdin from a path */

static void setup(void) {
    tu_setup_dir("resume");
    snprintf(model, sizeof model, "%s/models/dates", tu_src_dir());
    char path[700];
    snprintf(path, sizeof path, "%s/models/dates/samples.txt", tu_src_dir());
    size_t n;
    char *one = tu_read_text(path, &n);
    /* 42 lines: ten windows of 4 and one of 2 */
    input = malloc(3 * n + 1);
    ck_assert_ptr_nonnull(input);
    for (int i = 0; i < 3; i++) memcpy(input + i * n, one, n);
    input[3 * n] = 0;
    free(one);
    in_path = strdup(tu_write_file("in.txt", input, 3 * n));
    const char *a[] = {"translate", model, "--window", "4", NULL};
    ck_assert_msg(tu_run_cli(a, NULL, in_path) == 0, "%s", tu_err);
    want = strdup(tu_out);
}

static void teardown(void) {
    free(input);
    free(want);
    free((void *)in_path);
    tu_teardown_dir();
}

/* The run with --output (and --resume) on the input file `in` (NULL:
 * in_path), killed at `kill` ("W:PHASE") or not (NULL): its exit status,
 * or 128 + the signal. */
static int run(const char *out, int resume, const char *kill, const char *in) {
    const char *a[] = {"translate", model, "--window", "4", "--output", out, resume ? "--resume" : NULL, NULL};
    char env0[64];
    snprintf(env0, sizeof env0, "CG_TEST_KILL_AT=%s", kill ? kill : "");
    const char *env[] = {env0, NULL};
    int sig = 0;
    const int rc = tu_run_cli_signal(a, env, in ? in : in_path, &sig);
    return sig ? 128 + sig : rc;
}

static void expect_want(const char *out, const char *what) {
    char *got = tu_read_text(out, NULL);
    ck_assert_msg(!strcmp(got, want), "%s: the output differs from a run never stopped:\n%.600s", what, got);
    free(got);
}

START_TEST(killed_anywhere_resumes_to_the_same_bytes) {
    static const char *const points[] = {"1:mid", "1:out", "1:rec", "3:mid", "6:out", "11:mid", "11:out", "11:rec"};
    for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
        const char *out = tu_path("out.txt");
        ck_assert_int_eq(run(out, 0, points[i], NULL), 128 + SIGKILL);
        ck_assert_msg(run(out, 1, NULL, NULL) == 0, "%s: %s", points[i], tu_err);
        expect_want(out, points[i]);
    }
    /* killed again while resuming, then resumed */
    const char *out = tu_path("twice.txt");
    ck_assert_int_eq(run(out, 0, "4:out", NULL), 128 + SIGKILL);
    ck_assert_int_eq(run(out, 1, "2:mid", NULL), 128 + SIGKILL);
    ck_assert_msg(run(out, 1, NULL, NULL) == 0, "%s", tu_err);
    expect_want(out, "killed twice");
    /* a finished run resumed: nothing to do, the file as it was */
    ck_assert_msg(run(out, 1, NULL, NULL) == 0, "%s", tu_err);
    expect_want(out, "resumed when done");
    /* --resume without a record starts afresh */
    ck_assert_msg(run(tu_path("new.txt"), 1, NULL, NULL) == 0, "%s", tu_err);
    expect_want(tu_path("new.txt"), "resumed without a record");
}
END_TEST

START_TEST(refusals_name_the_file) {
    const char *out = tu_path("out.txt");
    ck_assert_int_eq(run(out, 0, "5:out", NULL), 128 + SIGKILL);
    /* another input: its first lines differ from those done */
    char *other = strdup(input);
    other[0] = other[0] == 'x' ? 'y' : 'x';
    ck_assert_int_ne(run(out, 1, NULL, tu_write_file("other.txt", other, strlen(other))), 0);
    ck_assert_msg(strstr(tu_err, "out.txt.progress") && strstr(tu_err, "not those it was made from"), "%s", tu_err);
    free(other);
    /* fewer lines than are done */
    ck_assert_int_ne(run(out, 1, NULL, tu_write_file("short.txt", "12 May 2001\n", 12)), 0);
    ck_assert_msg(strstr(tu_err, "fewer than the"), "%s", tu_err);
    /* other options */
    const char *beam[] = {"translate", model, "--window", "4", "--beam", "2", "--output", out, "--resume", NULL};
    ck_assert_int_ne(tu_run_cli(beam, NULL, in_path), 0);
    ck_assert_msg(strstr(tu_err, "out.txt.progress") && strstr(tu_err, "other options"), "%s", tu_err);
    /* the output cut shorter than the record counts */
    ck_assert_int_eq(truncate(out, 3), 0);
    ck_assert_int_ne(run(out, 1, NULL, NULL), 0);
    ck_assert_msg(strstr(tu_err, "out.txt") && strstr(tu_err, "shorter than"), "%s", tu_err);
    /* --resume needs --output */
    const char *bare[] = {"translate", model, "--resume", NULL};
    ck_assert_int_eq(tu_run_cli(bare, NULL, in_path), 2);
    ck_assert_msg(strstr(tu_err, "--resume needs --output"), "%s", tu_err);
    /* an output that cannot be made: one line naming it */
    const char *nodir[] = {"translate", model, "--output", tu_path("no/such/dir/out.txt"), NULL};
    ck_assert_int_ne(tu_run_cli(nodir, NULL, in_path), 0);
    ck_assert_msg(strstr(tu_err, "no/such/dir/out.txt: cannot write it"), "%s", tu_err);
}
END_TEST

int main(void) {
    Suite *s = suite_create("resume");
    TCase *tc = tcase_create("resume");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, killed_anywhere_resumes_to_the_same_bytes);
    tcase_add_test(tc, refusals_name_the_file);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
