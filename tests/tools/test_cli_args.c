/* The clgraph subcommands' option parser (tools/clgraph/cli_args.c, compiled
 * into this test): values in both spellings, ranges, flags and aliases,
 * missing values, unknown options, repeats, positional counts, --help and
 * the one line each usage error prints. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_args.h"
#include "test_util.h"

static int n, flag, calls;
static double x;
static const char *str, *pos[2];
static int n_pos;
static char last_call[64];
static char err[1024], out[2048];

static int count_call(const char *cmd, const char *v, void *dst) {
    (void)dst;
    calls++;
    snprintf(last_call, sizeof last_call, "%s", v);
    if (!strcmp(v, "bad")) return cli_usage(cmd, CLI_HINT_NONE, "--call refuses '%s'", v);
    return CLI_OK;
}

static const cli_opt opts[] = {
    {"n", 0, CLI_INT, &n, 1, 100, .arg = "N", .help = "a count"},
    {"ge0", 0, CLI_INT, &n, 0, 1000000, "an integer >= 0", .arg = "N"},
    {"x", 0, CLI_DBL, &x, 0, 2.5, .help = "a number"},
    {"flag", 'f', CLI_FLAG, &flag, .help = "a flag"},
    {"str", 's', CLI_STR, &str, .arg = "TEXT"},
    {"call", 0, CLI_CALL, NULL, .fn = count_call},
    {0},
};

/* Parses the words (argv[0] "demo") with at most `max_pos` positional
 * arguments, one of them needed; stderr and stdout land in err and out. */
static int parse_max(int max_pos, const char *const *words) {
    n = flag = calls = 0;
    x = 0;
    str = pos[0] = pos[1] = NULL;
    n_pos = -1;
    char *argv[32] = {"demo"};
    int argc = 1;
    while (words[argc - 1]) {
        argv[argc] = (char *)words[argc - 1];
        argc++;
    }
    fflush(stderr);
    fflush(stdout);
    int save_err = dup(2), save_out = dup(1);
    FILE *fe = tmpfile(), *fo = tmpfile();
    ck_assert(fe && fo && save_err >= 0 && save_out >= 0);
    dup2(fileno(fe), 2);
    dup2(fileno(fo), 1);
    cli_spec s = {.cmd = "demo",
                  .opts = opts,
                  .pos = pos,
                  .min_pos = 1,
                  .max_pos = max_pos,
                  .n_pos = &n_pos,
                  .pos_name = "DIR",
                  .unknown_hint = CLI_HINT_TOP,
                  .value_hint = CLI_HINT_TOP,
                  .missing_hint = CLI_HINT_CMD};
    int rc = cli_args_parse(&s, argc, argv);
    fflush(stderr);
    fflush(stdout);
    dup2(save_err, 2);
    dup2(save_out, 1);
    close(save_err);
    close(save_out);
    size_t k = fread(err, 1, sizeof err - 1, (rewind(fe), fe));
    err[k] = 0;
    k = fread(out, 1, sizeof out - 1, (rewind(fo), fo));
    out[k] = 0;
    fclose(fe);
    fclose(fo);
    return rc;
}

#define PARSE(...) parse_max(1, (const char *const[]){__VA_ARGS__, NULL})

START_TEST(test_values_both_spellings) {
    ck_assert_int_eq(PARSE("d", "--n", "7", "--x=2.5", "--str", "hello", "-s=again"), CLI_OK);
    ck_assert_int_eq(n, 7);
    ck_assert(x == 2.5);
    ck_assert_str_eq(str, "again"); /* the later one wins */
    ck_assert_str_eq(pos[0], "d");
    ck_assert_int_eq(n_pos, 1);
    ck_assert_str_eq(err, "");
    ck_assert_int_eq(PARSE("--n=100", "d", "-n", "1"), CLI_OK); /* one dash is the long name too */
    ck_assert_int_eq(n, 1);
    /* A value may start with '-': it is the option's, not an option. */
    ck_assert_int_eq(PARSE("d", "--str", "-x"), CLI_OK);
    ck_assert_str_eq(str, "-x");
    ck_assert(x == 0);
}
END_TEST

START_TEST(test_ranges) {
    ck_assert_int_eq(PARSE("d", "--n", "0"), CLI_USAGE);
    ck_assert_str_eq(err, "clgraph demo: --n takes an integer in [1, 100], got '0'\n");
    ck_assert_int_eq(PARSE("d", "--n=101"), CLI_USAGE);
    ck_assert_str_eq(err, "clgraph demo: --n takes an integer in [1, 100], got '101'\n");
    ck_assert_int_eq(PARSE("d", "--n", "5x"), CLI_USAGE);
    ck_assert_int_eq(PARSE("d", "--n", ""), CLI_USAGE);
    ck_assert_int_eq(PARSE("d", "--n", "99999999999999999999999"), CLI_USAGE);
    ck_assert_int_eq(PARSE("d", "--ge0", "-1"), CLI_USAGE);
    ck_assert_str_eq(err, "clgraph demo: --ge0 takes an integer >= 0, got '-1'\n");
    ck_assert_int_eq(PARSE("d", "--ge0", "0"), CLI_OK);
    ck_assert_int_eq(PARSE("d", "--ge0", "1000000"), CLI_OK);
    ck_assert_int_eq(n, 1000000);
    ck_assert_int_eq(PARSE("d", "--x", "nan"), CLI_USAGE);
    ck_assert_str_eq(err, "clgraph demo: --x takes a number in [0, 2.5], got 'nan'\n");
    ck_assert_int_eq(PARSE("d", "--x", "2.6"), CLI_USAGE);
    ck_assert_int_eq(PARSE("d", "--x", "-0.1"), CLI_USAGE);
    ck_assert_int_eq(PARSE("d", "--x", "1e0"), CLI_OK);
    ck_assert(x == 1.0);
}
END_TEST

START_TEST(test_flags_and_aliases) {
    ck_assert_int_eq(PARSE("d"), CLI_OK);
    ck_assert_int_eq(flag, 0);
    ck_assert_int_eq(PARSE("-f", "d"), CLI_OK);
    ck_assert_int_eq(flag, 1);
    ck_assert_int_eq(PARSE("d", "--flag"), CLI_OK);
    ck_assert_int_eq(flag, 1);
    ck_assert_str_eq(pos[0], "d"); /* a flag takes no value: "d" stays positional */
    ck_assert_int_eq(PARSE("--flag", "d"), CLI_OK);
    ck_assert_str_eq(pos[0], "d");
    ck_assert_int_eq(PARSE("d", "-s", "v"), CLI_OK);
    ck_assert_str_eq(str, "v");
    /* An alias is one letter after one dash only. */
    ck_assert_int_eq(PARSE("d", "--f"), CLI_USAGE);
    ck_assert_str_eq(err, "clgraph demo: unknown option '--f' (try 'clgraph --help')\n");
}
END_TEST

START_TEST(test_errors) {
    ck_assert_int_eq(PARSE("d", "--n"), CLI_USAGE);
    ck_assert_str_eq(err, "clgraph demo: option '--n' needs a value (try 'clgraph --help')\n");
    ck_assert_int_eq(PARSE("d", "--bogus=3"), CLI_USAGE);
    ck_assert_str_eq(err, "clgraph demo: unknown option '--bogus=3' (try 'clgraph --help')\n");
    ck_assert_int_eq(PARSE("--nn", "1", "d"), CLI_USAGE); /* no prefix matching */
    ck_assert_int_eq(PARSE("--flag"), CLI_USAGE);
    ck_assert_str_eq(err, "clgraph demo: missing DIR (try 'clgraph demo --help')\n");
    ck_assert_int_eq(PARSE("d", "e"), CLI_USAGE);
    ck_assert_str_eq(err, "clgraph demo: unexpected argument 'e'\n");
    /* The first mistake stops the parse: one line, nothing after it set. */
    ck_assert_int_eq(PARSE("d", "--n", "0", "--flag", "--bogus"), CLI_USAGE);
    ck_assert_int_eq(flag, 0);
    ck_assert_ptr_eq(strchr(err, '\n'), err + strlen(err) - 1);
}
END_TEST

START_TEST(test_repeats_and_callbacks) {
    ck_assert_int_eq(PARSE("--n", "1", "d", "--n", "2", "--n=3"), CLI_OK);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(PARSE("--call", "a", "--call=b", "d", "--call", "c"), CLI_OK);
    ck_assert_int_eq(calls, 3);
    ck_assert_str_eq(last_call, "c");
    ck_assert_int_eq(PARSE("d", "--call", "bad", "--call", "late"), CLI_USAGE);
    ck_assert_int_eq(calls, 1);
    ck_assert_str_eq(err, "clgraph demo: --call refuses 'bad'\n");
    ck_assert_int_eq(PARSE("d", "--call=x=y"), CLI_OK); /* only the first '=' splits */
    ck_assert_str_eq(last_call, "x=y");
}
END_TEST

START_TEST(test_positional_counts) {
    ck_assert_int_eq(parse_max(2, (const char *const[]){"a", "--flag", "b", NULL}), CLI_OK);
    ck_assert_int_eq(n_pos, 2);
    ck_assert_str_eq(pos[0], "a");
    ck_assert_str_eq(pos[1], "b");
    ck_assert_int_eq(parse_max(2, (const char *const[]){"a", "b", "c", NULL}), CLI_USAGE);
    ck_assert_str_eq(err, "clgraph demo: unexpected argument 'c'\n");
    /* "-" (stdin, by convention) is an argument, not an option. */
    ck_assert_int_eq(PARSE("-"), CLI_OK);
    ck_assert_str_eq(pos[0], "-");
    ck_assert_int_eq(parse_max(2, (const char *const[]){"--n", "4", NULL}), CLI_USAGE);
    ck_assert_int_eq(n_pos, 0);
}
END_TEST

START_TEST(test_help) {
    ck_assert_int_eq(PARSE("d", "--help"), CLI_HELP);
    ck_assert_str_eq(err, "");
    ck_assert_ptr_nonnull(strstr(out, "usage: clgraph demo DIR [options]\n"));
    ck_assert_ptr_nonnull(strstr(out, "--n N"));
    ck_assert_ptr_nonnull(strstr(out, "a count"));
    ck_assert_ptr_nonnull(strstr(out, "--flag, -f "));
    ck_assert_ptr_nonnull(strstr(out, "--str, -s TEXT"));
    ck_assert_int_eq(PARSE("-h"), CLI_HELP); /* before the missing DIR */
}
END_TEST

START_TEST(test_usage_hints) {
    fflush(stderr);
    int save = dup(2);
    FILE *fe = tmpfile();
    dup2(fileno(fe), 2);
    ck_assert_int_eq(cli_usage("cmd", CLI_HINT_NONE, "a %d", 1), CLI_USAGE);
    ck_assert_int_eq(cli_usage("cmd", CLI_HINT_TOP, "b"), CLI_USAGE);
    ck_assert_int_eq(cli_usage("cmd", CLI_HINT_CMD, "c"), CLI_USAGE);
    ck_assert_int_eq(cli_usage("cmd", CLI_HINT_SEE, "d"), CLI_USAGE);
    fflush(stderr);
    dup2(save, 2);
    close(save);
    size_t k = fread(err, 1, sizeof err - 1, (rewind(fe), fe));
    err[k] = 0;
    fclose(fe);
    ck_assert_str_eq(err, "clgraph cmd: a 1\n"
                          "clgraph cmd: b (try 'clgraph --help')\n"
                          "clgraph cmd: c (try 'clgraph cmd --help')\n"
                          "clgraph cmd: d (see clgraph cmd --help)\n");
}
END_TEST

int main(void) {
    Suite *s = suite_create("cli_args");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_values_both_spellings);
    tcase_add_test(tc, test_ranges);
    tcase_add_test(tc, test_flags_and_aliases);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_repeats_and_callbacks);
    tcase_add_test(tc, test_positional_counts);
    tcase_add_test(tc, test_help);
    tcase_add_test(tc, test_usage_hints);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
