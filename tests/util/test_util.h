/* Helpers shared by the Check tests: a fresh temporary directory per test,
 * writing and reading files in it, and running the clgraph CLI with its
 * stdout and stderr captured. Failures are reported with ck_assert, so
 * these are to be called from inside a test (or its checked fixture). */
#ifndef CG_TEST_UTIL_H
#define CG_TEST_UTIL_H

#include <check.h>
#include <stddef.h>
#include <string.h>

/* The current test's temporary directory (set by tu_setup_dir). */
extern char tu_dir[256];

/* stdout and stderr of the last tu_run_cli, whole and NUL-terminated
 * (malloc'ed; NULL before the first run and after tu_teardown_dir). */
extern char *tu_out, *tu_err;

/* Runs every test of suite s (in the calling process when `nofork`:
 * PoCL initialised before fork() hangs the child) with the output CK_ENV
 * asks for (CK_VERBOSITY), frees it, and returns main's exit status. */
int tu_run_suite(Suite *s, int nofork);

/* The source tree: $CG_SOURCE_DIR, else ".". */
const char *tu_src_dir(void);

/* Creates a fresh directory $TMPDIR/cg_<tag>_XXXXXX ($TMPDIR unset or
 * empty: /tmp) in tu_dir; a checked fixture's setup. */
void tu_setup_dir(const char *tag);

/* Removes tu_dir with everything in it (a message on stderr when that
 * fails) and frees tu_out/tu_err; a checked fixture's teardown. */
void tu_teardown_dir(void);

/* Turns the repeat check (CLGRAPH_CHECK_RUNS, which the test environment
 * sets) off for a test that counts a plan's instances, states or
 * allocations, and back to what the environment said. */
void tu_check_runs_pause(void);
void tu_check_runs_resume(void);

/* tu_dir/name; the result stays valid for the next 7 calls. */
const char *tu_path(const char *name);

/* Writes len bytes to tu_dir/name (asserting every byte was written);
 * returns the path, valid like tu_path's. */
const char *tu_write_file(const char *name, const void *bytes, size_t len);

/* The whole file, NUL-terminated and malloc'ed (NULL when it cannot be
 * read); its length in *len_out when that is not NULL. */
char *tu_read_text(const char *path, size_t *len_out);

/* Up to size - 1 bytes of the file into buf, NUL-terminated (buf is ""
 * when the file cannot be opened). */
void tu_slurp(const char *path, char *buf, size_t size);

/* Runs $CG_CLGRAPH with args (NULL-terminated, without argv[0]), with
 * env_extra ("K=V" entries, NULL-terminated; NULL: none) added to the
 * environment, replacing variables of the same name, and stdin read from the
 * file `in` (NULL: this process's stdin). Waits for it, fills tu_out and
 * tu_err, asserts it exited (not killed by a signal) and returns its exit
 * status. stdout and stderr go through files in tu_dir. */
int tu_run_cli(const char *const *args, const char *const *env_extra, const char *in);

/* tu_run_cli for a run that may die of a signal: *sig receives it (0 when
 * it exited), and the return is -1 then, else the exit status. */
int tu_run_cli_signal(const char *const *args, const char *const *env_extra, const char *in, int *sig);

/* Asserts tu_err is exactly one line, containing every needle (a
 * NULL-terminated list). */
void tu_assert_one_line(const char *const *needles);

/* The device column of the step line of node `name` in a `clgraph plan` /
 * cg_plan_describe text ("" if no step runs it; "?" if several steps with
 * different devices do). The result is a static buffer. */
const char *tu_plan_step_device(const char *text, const char *name);

/* The compiler caches a cold first run starts from: clgraph's, PoCL's,
 * Mesa's and XDG's (Mesa disables its cache, saying so on stderr, when the
 * directory is missing; a user's ~/.cache exists). */
#define TU_COLD_VARS 4

/* Makes directory `dir` with an empty directory for each cache, and fills
 * env[0 .. TU_COLD_VARS - 1] with NAME=PATH strings in bufs for them,
 * env[TU_COLD_VARS] = NULL. Returns 0, or -1 with errno when a directory
 * cannot be made. */
int tu_cold_caches(const char *dir, char bufs[TU_COLD_VARS][400], const char *env[TU_COLD_VARS + 1]);

#ifdef CLGRAPH_H
/* Whether this build has optional dependency `name` (cg_build_features:
 * "opencl", "clblast", "onnx", "png"); for tests that link the library
 * (include clgraph/clgraph.h first). */
static inline int tu_have_feature(const char *name) {
    const char *all = cg_build_features();
    size_t n = strlen(name);
    for (const char *p = all; (p = strstr(p, name)); p += n)
        if ((p == all || p[-1] == ' ') && (p[n] == ' ' || !p[n])) return 1;
    return 0;
}
#endif

#endif
