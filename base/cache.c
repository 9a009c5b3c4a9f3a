/* The cache directory every layer keeps its measurements and compiled
 * programs in, and atomic file writes. Caching is best effort: any I/O
 * failure disables it, never fails a caller. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "settings.h"
#include "atomic_file.h"
#include "cache.h"
#include "read_file.h"

static pthread_mutex_t g_dir_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_dir[4096];
static int g_dir_set;

/* base (without trailing slashes) + suffix into g_dir. */
static void set_dir(const char *base, const char *suffix) {
    size_t n = strlen(base);
    while (n > 1 && base[n - 1] == '/') n--;
    size_t sn = strlen(suffix);
    if (n + sn >= sizeof g_dir) return; /* too long: no disk cache */
    memcpy(g_dir, base, n);
    memcpy(g_dir + n, suffix, sn + 1);
}

static void compute_dir(void) {
    const char *v = cg_setting(CG_SET_CACHE_DIR);
    g_dir[0] = '\0';
    if (v && *v) set_dir(v, "");
    else if ((v = getenv("XDG_CACHE_HOME")) && v[0] == '/') set_dir(v, "/clgraph");
    else if ((v = getenv("HOME")) && *v) set_dir(v, "/.cache/clgraph");
}

const char *cg_cache_dir(void) {
    pthread_mutex_lock(&g_dir_mu);
    if (!g_dir_set) {
        compute_dir();
        g_dir_set = 1;
    }
    pthread_mutex_unlock(&g_dir_mu);
    return g_dir;
}

void cg_cache_test_reset_dir(void) {
    pthread_mutex_lock(&g_dir_mu);
    g_dir_set = 0;
    pthread_mutex_unlock(&g_dir_mu);
}

int cg_mkdir_p(const char *dir) {
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) return -1;
    memcpy(path, dir, n + 1);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

int cg_cache_dir_ready(void) {
    const char *dir = cg_cache_dir();
    if (!dir[0] || cg_mkdir_p(dir) != 0) return 0;
    return access(dir, W_OK | X_OK) == 0;
}

/* Writes head + body to path through a temporary file in the same
 * directory, fsync and rename, so readers see the old file or the whole new
 * one. */
int cg_write_atomic(const char *path, const void *head, size_t hn, const void *body, size_t bn) {
    cg_afile f;
    if (cg_afile_open(&f, path) != 0) return -1;
    if (cg_afile_write(&f, head, hn) != 0 || cg_afile_write(&f, body, bn) != 0) {
        cg_afile_abort(&f);
        return -1;
    }
    return cg_afile_commit(&f) == 0 ? 0 : -1;
}

int cg_cache_write(const char *name, const void *data, size_t len) {
    if (!name || !*name || strchr(name, '/') || (len && !data)) return -1;
    if (!cg_cache_dir_ready()) return -1;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", cg_cache_dir(), name);
    return cg_write_atomic(path, "", 0, data, len);
}

FILE *cg_cache_append(const char *path, size_t max) {
    struct stat sb;
    int fd = cg_open_regular_quiet(path, O_WRONLY | O_APPEND | O_CREAT, 0644, &sb);
    if (fd < 0) return NULL;
    if ((uint64_t)sb.st_size > (uint64_t)max && ftruncate(fd, 0) != 0) {
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "a");
    if (!f) close(fd);
    return f;
}
