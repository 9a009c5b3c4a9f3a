/* Helpers shared by the Check tests (see test_util.h). */
#define _XOPEN_SOURCE 700
#include "test_util.h"

#include <check.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

char tu_dir[256];
char *tu_out, *tu_err;

int tu_run_suite(Suite *s, int nofork) {
    SRunner *sr = srunner_create(s);
    if (nofork) srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr), run = srunner_ntests_run(sr);
    srunner_free(sr);
    /* CK_RUN_SUITE / CK_RUN_CASE naming nothing would pass silently. */
    if (run == 0)
        fprintf(stderr, "no test ran (CK_RUN_SUITE '%s', CK_RUN_CASE '%s')\n",
                getenv("CK_RUN_SUITE") ? getenv("CK_RUN_SUITE") : "",
                getenv("CK_RUN_CASE") ? getenv("CK_RUN_CASE") : "");
    return failed || run == 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

const char *tu_src_dir(void) {
    const char *d = getenv("CG_SOURCE_DIR");
    return d ? d : ".";
}

void tu_setup_dir(const char *tag) {
    const char *tmp = getenv("TMPDIR");
    snprintf(tu_dir, sizeof tu_dir, "%s/cg_%s_XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    ck_assert_ptr_nonnull(mkdtemp(tu_dir));
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void tu_teardown_dir(void) {
    if (nftw(tu_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) fprintf(stderr, "could not remove %s\n", tu_dir);
    free(tu_out);
    free(tu_err);
    tu_out = tu_err = NULL;
}

const char *tu_path(const char *name) {
    static char bufs[8][600];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, 600, "%s/%s", tu_dir, name);
    return b;
}

const char *tu_write_file(const char *name, const void *bytes, size_t len) {
    const char *path = tu_path(name);
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    if (len) ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

char *tu_read_text(const char *path, size_t *len_out) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    size_t r;
    while (s && (r = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 == cap) {
            cap *= 2;
            char *ns = realloc(s, cap);
            if (!ns) free(s);
            s = ns;
        }
    }
    fclose(f);
    if (s) s[n] = 0;
    if (len_out) *len_out = n;
    return s;
}

void tu_slurp(const char *path, char *buf, size_t size) {
    buf[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = 0;
    fclose(f);
}

static int run_cli(const char *const *args, const char *const *env_extra, const char *in, int *signal_out) {
    const char *exe = getenv("CG_CLGRAPH");
    ck_assert_msg(exe != NULL, "CG_CLGRAPH is not set");
    char *argv[256];
    int n = 0;
    argv[n++] = (char *)exe;
    for (int i = 0; args[i]; i++) {
        ck_assert_msg(n < 255, "tu_run_cli: more than 254 arguments");
        argv[n++] = (char *)args[i];
    }
    argv[n] = NULL;
    char **envp = environ, *env_buf[512];
    if (env_extra) {
        int e = 0;
        for (int i = 0; env_extra[i]; i++) {
            ck_assert_msg(e < 510, "tu_run_cli: too many environment variables");
            env_buf[e++] = (char *)env_extra[i];
        }
        for (char **p = environ; *p; p++) {
            ck_assert_msg(e < 510, "tu_run_cli: too many environment variables");
            int shadowed = 0;
            for (int i = 0; env_extra[i]; i++) {
                size_t k = strcspn(env_extra[i], "=");
                shadowed |= !strncmp(*p, env_extra[i], k + 1);
            }
            if (!shadowed) env_buf[e++] = *p;
        }
        env_buf[e] = NULL;
        envp = env_buf;
    }
    char op[300], ep[300];
    snprintf(op, sizeof op, "%s/stdout", tu_dir);
    snprintf(ep, sizeof ep, "%s/stderr", tu_dir);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (in) posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, op, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, ep, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    ck_assert_int_eq(posix_spawn(&pid, exe, &fa, NULL, argv, envp), 0);
    posix_spawn_file_actions_destroy(&fa);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    free(tu_out);
    free(tu_err);
    tu_out = tu_read_text(op, NULL);
    tu_err = tu_read_text(ep, NULL);
    ck_assert_ptr_nonnull(tu_out);
    ck_assert_ptr_nonnull(tu_err);
    if (signal_out) {
        *signal_out = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        if (*signal_out) return -1;
    }
    ck_assert_msg(WIFEXITED(status), "clgraph died with a signal; stderr: %s", tu_err);
    return WEXITSTATUS(status);
}

int tu_run_cli(const char *const *args, const char *const *env_extra, const char *in) {
    return run_cli(args, env_extra, in, NULL);
}

int tu_run_cli_signal(const char *const *args, const char *const *env_extra, const char *in, int *sig) {
    return run_cli(args, env_extra, in, sig);
}

void tu_assert_one_line(const char *const *needles) {
    size_t len = strlen(tu_err);
    ck_assert_msg(len > 0 && tu_err[len - 1] == '\n' && strchr(tu_err, '\n') == tu_err + len - 1,
                  "stderr is not one line: [%s]", tu_err);
    for (int i = 0; needles && needles[i]; i++)
        ck_assert_msg(strstr(tu_err, needles[i]) != NULL, "'%s' not in stderr: %s", needles[i], tu_err);
}

/* The device column of the step line of node `name` in a text description
 * ("" if no step runs it; "?" if several with different devices). */
const char *tu_plan_step_device(const char *text, const char *name) {
    static char dev[64];
    dev[0] = 0;
    for (const char *l = text; l && *l;) {
        const char *e = strchr(l, '\n');
        char line[512];
        size_t len = e ? (size_t)(e - l) : strlen(l);
        if (len >= sizeof line) len = sizeof line - 1;
        memcpy(line, l, len);
        line[len] = 0;
        int step;
        char d[64], k[64], node[256];
        if (sscanf(line, "%d %63s %63s %255s", &step, d, k, node) == 4 && strcmp(k, "copy") != 0 &&
            !strcmp(node, name)) {
            if (dev[0] && strcmp(dev, d)) return "?";
            snprintf(dev, sizeof dev, "%s", d);
        }
        l = e ? e + 1 : NULL;
    }
    return dev;
}

static char check_runs_was[16];
static int check_runs_paused;

void tu_check_runs_pause(void) {
    const char *v = getenv("CLGRAPH_CHECK_RUNS");
    snprintf(check_runs_was, sizeof check_runs_was, "%s", v ? v : "");
    check_runs_paused = 1;
    setenv("CLGRAPH_CHECK_RUNS", "0", 1);
}

void tu_check_runs_resume(void) {
    if (!check_runs_paused) return;
    check_runs_paused = 0;
    if (check_runs_was[0]) setenv("CLGRAPH_CHECK_RUNS", check_runs_was, 1);
    else unsetenv("CLGRAPH_CHECK_RUNS");
}

int tu_cold_caches(const char *dir, char bufs[TU_COLD_VARS][400], const char *env[TU_COLD_VARS + 1]) {
    static const char *const vars[TU_COLD_VARS][2] = {{"CLGRAPH_CACHE_DIR", "clgraph"},
                                                      {"POCL_CACHE_DIR", "pocl"},
                                                      {"XDG_CACHE_HOME", "xdg"},
                                                      {"MESA_SHADER_CACHE_DIR", "mesa"}};
    if (mkdir(dir, 0755) != 0) return -1;
    for (int i = 0; i < TU_COLD_VARS; i++) {
        snprintf(bufs[i], 400, "%s=%s/%s", vars[i][0], dir, vars[i][1]);
        if (mkdir(strchr(bufs[i], '=') + 1, 0755) != 0) return -1;
        env[i] = bufs[i];
    }
    env[TU_COLD_VARS] = NULL;
    return 0;
}
