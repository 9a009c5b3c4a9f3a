/* `clgraph conform` catching a plugin whose OpenCL kernel is wrong, an op
 * with no OpenCL kernel, an unknown op, and the mistakes of
 * tests/plugins/mistakes.c (unwritten elements, writes out of bounds, a
 * wrong inferred shape, a crash). Every built-in op on every
 * OpenCL implementation and path set: tests/tools/test_portability.c. */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
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
    ck_assert_msg(strstr(tu_out, "case 0 (f32[1]; offset: 0.5): output 0 element 0: opencl:0 gives") != NULL, "%s",
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

/* Each mistake of tests/plugins/mistakes.c, caught with the op, the case
 * and the kernel's device named, even where both kernels share it. */
static const struct {
    const char *variant, *message;
} mistakes[] = {
    {"skip_last", "twice          opencl:0   1                0.00e+00   FAIL\n"
                  "    case 0 (f32[1]): cpu kernel never wrote output 0 element 0 (of f32[1], the shape infer gave)\n"},
    {"oob_cl", "    case 0 (f32[1]): opencl:0 kernel wrote past the end of output 0 (f32[1], the shape infer gave)\n"},
    {"oob_cpu", "    case 0 (f32[1]): cpu kernel wrote before the start of output 0 (f32[1], the shape infer gave)\n"},
    {"wrong_infer", "    case 0 (f32[1]): cpu kernel wrote past the end of output 0 (f32[0], the shape infer gave)\n"},
    {"big_infer", "    case 0 (f32[1]): cpu kernel never wrote output 0 element 1 (of f32[2], the shape infer gave)\n"},
    /* x = 0.0500145704 from the seed: 2x + 0.5 from both kernels, 2x from the decomposition */
    {"shared_bug",
     "    case 0 (f32[1]): cpu and opencl:0 agree with each other but not with the decomposition: output 0 "
     "element 0: cpu gives 0.600029111, opencl:0 0.600029111, the decomposition 0.100029141\n"},
    /* the OpenCL kernel reads in[i + 1]: the guard bytes past the input are NaN */
    {"oob_read_cl", "    case 0 (f32[1]): output 0 element 0: opencl:0 gives "},
    {"oob_read_cl", ", cpu 0.100029141, the decomposition 0.100029141: the device kernel differs from both (a NaN "
                    "from finite inputs: the bytes around each input are NaN, so a read past an input gives one)\n"},
    {"cpu_bug",
     "    case 0 (f32[1]): output 0 element 0: opencl:0 gives 0.100029141, cpu 0.600029111, the decomposition "
     "0.100029141: the cpu kernel differs from both\n"},
};

static void plugin_path(char *p, size_t n, const char *variant) {
    snprintf(p, n, "%s/libcgmistake_%s.so", getenv("CG_TEST_PLUGIN_DIR"), variant);
}

START_TEST(mistake_is_caught) {
    char p[600];
    plugin_path(p, sizeof p, mistakes[_i].variant);
    const char *args[] = {"conform", "--plugin", p, "--plugin-only", NULL};
    ck_assert_msg(tu_run_cli(args, NULL, NULL) == 1, "%s: %s\n%s", mistakes[_i].variant, tu_out, tu_err);
    ck_assert_msg(strstr(tu_out, mistakes[_i].message) != NULL, "%s: %s", mistakes[_i].variant, tu_out);
    ck_assert_ptr_nonnull(strstr(tu_err, "1 op/device pair failed"));
}
END_TEST

/* The same op written right passes (the checks do not fail good kernels). */
START_TEST(right_plugin_passes) {
    char p[600];
    plugin_path(p, sizeof p, "right");
    const char *args[] = {"conform", "--plugin", p, "--plugin-only", NULL};
    ck_assert_msg(tu_run_cli(args, NULL, NULL) == 0, "%s\n%s", tu_out, tu_err);
    ck_assert_msg(strstr(tu_out, "twice          opencl:0   4 ") != NULL, "%s", tu_out);
    /* --plugin-only ran only the plugin's op */
    ck_assert_ptr_null(strstr(tu_out, "\nadd "));
}
END_TEST

/* A right but slow OpenCL kernel passes, and --verbose times every case
 * and flags the 1000-element one (170 ms against 0.3 us on the CPU here). */
START_TEST(slow_kernel_is_flagged) {
    char p[600];
    plugin_path(p, sizeof p, "slow_cl");
    const char *args[] = {"conform", "--plugin", p, "--plugin-only", "--verbose", NULL};
    ck_assert_msg(tu_run_cli(args, NULL, NULL) == 0, "%s\n%s", tu_out, tu_err);
    const char *line = strstr(tu_out, "    case 3 (f32[1000]): cpu ");
    ck_assert_msg(line != NULL, "%s", tu_out);
    const char *end = strchr(line, '\n');
    ck_assert_msg(end - line > 5 && !strncmp(end - 5, " SLOW", 5), "%s", tu_out);
    ck_assert_ptr_nonnull(strstr(tu_out, "SLOW: the device took over 100x the CPU kernel's time"));
    /* without --verbose nothing is timed */
    const char *quiet[] = {"conform", "--plugin", p, "--plugin-only", NULL};
    ck_assert_int_eq(tu_run_cli(quiet, NULL, NULL), 0);
    ck_assert_ptr_null(strstr(tu_out, " us"));
}
END_TEST

/* A kernel that crashes the process: the last line on stderr says where. */
START_TEST(crash_names_the_case) {
    char p[600];
    plugin_path(p, sizeof p, "crash_cpu");
    const char *args[] = {"conform", "--plugin", p, "--plugin-only", NULL};
    int sig = 0;
    tu_run_cli_signal(args, NULL, NULL, &sig);
    ck_assert_msg(sig == SIGSEGV, "signal %d; %s\n%s", sig, tu_out, tu_err);
    ck_assert_msg(strstr(tu_err, "clgraph conform: SIGSEGV while running op twice case 2 (f32[17]) on cpu\n"), "%s",
                  tu_err);
    ck_assert_msg(!strncmp(tu_out, "op ", 3), "%s", tu_out); /* the header came out before the crash */
}
END_TEST

/* A kernel that never returns: after --timeout seconds, the case named. */
START_TEST(hang_names_the_case) {
    char p[600];
    plugin_path(p, sizeof p, "hang_cpu");
    const char *args[] = {"conform", "--plugin", p, "--plugin-only", "--timeout", "2", NULL};
    ck_assert_int_eq(tu_run_cli(args, NULL, NULL), 1);
    ck_assert_msg(strstr(tu_err, "clgraph conform: no result after --timeout seconds while running op twice case 2 "
                                 "(f32[17]) on cpu\n"),
                  "%s", tu_err);
    const char *bad[] = {"conform", "--timeout", "0", NULL};
    ck_assert_int_eq(tu_run_cli(bad, NULL, NULL), 2);
}
END_TEST

/* --op takes lists and repeats; an unknown name in a list is an error;
 * --plugin-only without a plugin says so; `conform -h` is its usage. */
START_TEST(op_lists_and_help) {
    const char *two[] = {"conform", "--quick", "--op", "add,mul", "--op", "relu", NULL};
    ck_assert_msg(tu_run_cli(two, NULL, NULL) == 0, "%s\n%s", tu_out, tu_err);
    ck_assert(strstr(tu_out, "\nadd ") && strstr(tu_out, "\nmul ") && strstr(tu_out, "\nrelu "));
    ck_assert_ptr_null(strstr(tu_out, "\nsub "));
    const char *bad[] = {"conform", "--op", "add,nosuch", NULL};
    ck_assert_int_eq(tu_run_cli(bad, NULL, NULL), 1);
    ck_assert_ptr_nonnull(strstr(tu_err, "no operator named 'nosuch'"));
    const char *none[] = {"conform", "--plugin-only", NULL};
    ck_assert_int_eq(tu_run_cli(none, NULL, NULL), 1);
    ck_assert_ptr_nonnull(strstr(tu_err, "--plugin-only, but no loaded plugin provides an operator"));
    const char *help[] = {"conform", "--help", NULL};
    ck_assert_int_eq(tu_run_cli(help, NULL, NULL), 0);
    ck_assert_msg(!strncmp(tu_out, "usage: clgraph conform [--op NAME[,NAME...]] [--plugin-only]", 60), "%s", tu_out);
    const char *rh[] = {"run", "-h", NULL};
    ck_assert_int_eq(tu_run_cli(rh, NULL, NULL), 0);
    ck_assert_msg(!strncmp(tu_out, "usage: clgraph run MODEL.cg", 27), "%s", tu_out);
}
END_TEST

/* clgraph plan says where each cost comes from, and a rebuilt plugin (a
 * new file: here the same bytes with another modification time) is timed
 * again instead of planned with the old kernel's time. */
START_TEST(costs_follow_the_code) {
    char src[600], so[700], cache[700], env[800];
    plugin_path(src, sizeof src, "right");
    snprintf(so, sizeof so, "%s/libtwice.so", tu_dir);
    snprintf(cache, sizeof cache, "%s/cache", tu_dir);
    snprintf(env, sizeof env, "CLGRAPH_CACHE_DIR=%s", cache);
    size_t n;
    char *bytes = tu_read_text(src, &n);
    tu_write_file("libtwice.so", bytes, n);
    free(bytes);
    const char *g = "graph g {\n  input x: f32[N]\n  y = twice(x)\n  output y\n}\n";
    const char *cg = tu_write_file("tw.cg", g, strlen(g));
    const char *envs[] = {env, NULL};
    const char *plan[] = {"plan", cg, "--plugin", so, "--bind", "N=100", "--device", "opencl:0", NULL};
    const char *want[] = {"measured", "cached", "measured"};
    for (int round = 0; round < 3; round++) {
        if (round == 2) { /* rebuilt: a new modification time */
            struct timespec ts[2] = {{1000000000, 0}, {1000000000, 0}};
            ck_assert_int_eq(utimensat(AT_FDCWD, so, ts, 0), 0);
        }
        ck_assert_msg(tu_run_cli(plan, envs, NULL) == 0, "%s", tu_err);
        const char *line = strstr(tu_out, "   twice ");
        ck_assert_msg(line != NULL, "%s", tu_out);
        const char *end = strchr(line, '\n');
        ck_assert_msg(end && (size_t)(end - line) > strlen(want[round]) &&
                          !strncmp(end - strlen(want[round]), want[round], strlen(want[round])),
                      "round %d: %.*s", round, (int)(end - line), line);
        ck_assert_ptr_nonnull(strstr(tu_out, "  model\n")); /* the upload of x */
    }
}
END_TEST

static void dtypes_plugin(char *p, size_t n, const char *variant) {
    snprintf(p, n, "%s/libcgdtypes_%s.so", getenv("CG_TEST_PLUGIN_DIR"), variant);
}

/* f16, bf16, i64 and bool inputs and outputs: made, compared and shown. */
START_TEST(other_dtypes_are_covered) {
    char p[600];
    dtypes_plugin(p, sizeof p, "right");
    const char *args[] = {"conform", "--plugin", p, "--plugin-only", "--verbose", NULL};
    ck_assert_msg(tu_run_cli(args, NULL, NULL) == 0, "%s\n%s", tu_out, tu_err);
    ck_assert_msg(strstr(tu_out, "scale_where    opencl:0   4 ") != NULL, "%s", tu_out);
    ck_assert_msg(strstr(tu_out, "case 2 (f16[33], i64[33], bool[33])") != NULL, "%s", tu_out);
}
END_TEST

/* The OpenCL kernel computes z = k * 3000000007 + m in 32 bits: the i64
 * output differs, shown as integers; both numbers are checked here from
 * each other (cpu: k * 3000000007 + m; device: its low 32 bits, sign
 * extended, + m). */
START_TEST(i64_truncation_is_caught) {
    char p[600];
    dtypes_plugin(p, sizeof p, "trunc_i64");
    const char *args[] = {"conform", "--plugin", p, "--plugin-only", NULL};
    ck_assert_int_eq(tu_run_cli(args, NULL, NULL), 1);
    const char *at = strstr(tu_out, "case 0 (f16[1], i64[1], bool[1]): output 1 element 0: opencl:0 gives ");
    ck_assert_msg(at != NULL, "%s", tu_out);
    long long dev, cpu;
    ck_assert_msg(sscanf(strstr(at, "gives ") + 6, "%lld, cpu %lld", &dev, &cpu) == 2, "%s", at);
    long long k = cpu / 3000000007LL, m = cpu - k * 3000000007LL;
    if (m < 0) k -= 1, m += 3000000007LL; /* m is 0 or 1 */
    ck_assert_msg(m == 0 || m == 1, "%s", at);
    ck_assert_int_ne(k, 0);
    ck_assert_int_eq(dev, (long long)(int32_t)(uint32_t)(uint64_t)(k * 3000000007LL) + m);
}
END_TEST

/* Truncating to bf16 instead of rounding: off by up to one bf16 step
 * (2^-7 relative), shown as numbers, caught by the default 1e-4 tolerance. */
START_TEST(bf16_rounding_is_caught) {
    char p[600];
    dtypes_plugin(p, sizeof p, "bf16_chop");
    const char *args[] = {"conform", "--plugin", p, "--plugin-only", NULL};
    ck_assert_int_eq(tu_run_cli(args, NULL, NULL), 1);
    const char *at = strstr(tu_out, "output 0 element ");
    ck_assert_msg(at != NULL, "%s", tu_out);
    double dev, cpu;
    ck_assert_msg(sscanf(strstr(at, "gives ") + 6, "%lf, cpu %lf", &dev, &cpu) == 2, "%s", at);
    ck_assert_msg(fabs(dev) < fabs(cpu) && fabs(cpu - dev) <= fabs(cpu) / 128, "%s", at);
}
END_TEST

int main(void) {
    Suite *s = suite_create("conform");
    TCase *tc = tcase_create("conform");
    tcase_add_checked_fixture(tc, setup, tu_teardown_dir);
    tcase_set_timeout(tc, 1500);
    tcase_add_test(tc, wrong_plugin_kernel_is_caught);
    tcase_add_loop_test(tc, mistake_is_caught, 0, (int)(sizeof mistakes / sizeof mistakes[0]));
    tcase_add_test(tc, right_plugin_passes);
    tcase_add_test(tc, crash_names_the_case);
    tcase_add_test(tc, hang_names_the_case);
    tcase_add_test(tc, slow_kernel_is_flagged);
    tcase_add_test(tc, op_lists_and_help);
    tcase_add_test(tc, costs_follow_the_code);
    tcase_add_test(tc, other_dtypes_are_covered);
    tcase_add_test(tc, i64_truncation_is_caught);
    tcase_add_test(tc, bf16_rounding_is_caught);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
