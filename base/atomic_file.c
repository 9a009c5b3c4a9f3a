/* Atomic file writes through a temporary file next to the target (see
 * atomic_file.h). The temporary file lives in the target's directory so
 * that rename(2) never crosses file systems. */
#include "atomic_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cg_afile_open(cg_afile *f, const char *path) {
    f->fd = -1;
    f->tmp = f->path = NULL;
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path + 1) : 0, n = strlen(path);
    f->path = malloc(n + 1);
    f->tmp = malloc(n + 9); /* "." before the name, ".XXXXXX" and NUL after it */
    if (!f->path || !f->tmp) {
        cg_afile_abort(f);
        return ENOMEM;
    }
    memcpy(f->path, path, n + 1);
    memcpy(f->tmp, path, dir);
    f->tmp[dir] = '.';
    memcpy(f->tmp + dir + 1, path + dir, n - dir);
    memcpy(f->tmp + n + 1, ".XXXXXX", 8);
    f->fd = mkstemp(f->tmp);
    if (f->fd < 0) {
        int e = errno;
        free(f->tmp), free(f->path);
        f->tmp = f->path = NULL;
        return e;
    }
    /* mkstemp makes the file private (0600); a written file is readable
     * like one that open(2) would create under the usual umask. */
    if (fchmod(f->fd, 0644) != 0) {
        int e = errno;
        cg_afile_abort(f);
        return e;
    }
    return 0;
}

int cg_afile_write(cg_afile *f, const void *data, size_t n) {
    const char *p = data;
    while (n) {
        ssize_t w = write(f->fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return errno;
        if (w == 0) return EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int cg_afile_commit(cg_afile *f) {
    int e = fsync(f->fd) == 0 ? 0 : errno;
    if (close(f->fd) != 0 && !e) e = errno;
    f->fd = -1;
    if (!e && rename(f->tmp, f->path) != 0) e = errno;
    if (e) unlink(f->tmp);
    free(f->tmp), free(f->path);
    f->tmp = f->path = NULL;
    return e;
}

void cg_afile_abort(cg_afile *f) {
    if (f->fd >= 0) close(f->fd);
    if (f->tmp && f->fd >= 0) unlink(f->tmp);
    f->fd = -1;
    free(f->tmp), free(f->path);
    f->tmp = f->path = NULL;
}
