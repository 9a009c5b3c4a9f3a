/* Opening and reading files a user names (read_file.h). */
#include "read_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"

const char *cg_file_kind(mode_t mode) {
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

int cg_open_regular_quiet(const char *path, int flags, int mode, struct stat *sb) {
    struct stat own;
    if (!sb) sb = &own;
    /* stat first: a device is not even opened (opening one may have effects
     * of its own), and a FIFO is not opened either. A missing file is left
     * to open(), which may create it (O_CREAT). */
    if (stat(path, sb) == 0 && !S_ISREG(sb->st_mode)) {
        errno = 0;
        return -1;
    }
    /* O_NONBLOCK: what is there may have changed since the stat; opening a
     * FIFO then returns at once (or fails with ENXIO for writing) instead
     * of waiting for the other end. */
    int fd = open(path, flags | O_CLOEXEC | O_NONBLOCK, mode);
    if (fd < 0) {
        int e = errno;
        if (e == ENXIO && stat(path, sb) == 0 && !S_ISREG(sb->st_mode)) e = 0;
        errno = e;
        return -1;
    }
    if (fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode)) {
        int e = S_ISREG(sb->st_mode) ? errno : 0;
        close(fd);
        errno = e;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl != -1) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

cg_status cg_open_regular(const char *path, int flags, int *fd, struct stat *sb) {
    struct stat own;
    if (!sb) sb = &own;
    memset(sb, 0, sizeof *sb);
    *fd = cg_open_regular_quiet(path, flags, 0644, sb);
    if (*fd >= 0) return CG_OK;
    if (errno) return cg_error(CG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    return cg_error(CG_ERR_IO, "%s: not a regular file (%s)", path, cg_file_kind(sb->st_mode));
}

/* Why a read failed, for the message. */
enum { RD_DONE, RD_OPEN, RD_TOO_BIG, RD_NO_MEMORY, RD_READ };

static int read_core(const char *path, size_t max, char **out, size_t *len, struct stat *sb, int *err) {
    *out = NULL;
    if (len) *len = 0;
    *err = 0;
    int fd = cg_open_regular_quiet(path, O_RDONLY, 0, sb);
    if (fd < 0) {
        *err = errno;
        return RD_OPEN;
    }
    /* The size first, so a huge file is refused before any of it is read;
     * the loop below still stops at max + 1 bytes (a file that grows, or a
     * file whose size says 0, as /proc's do). */
    if ((uint64_t)sb->st_size > (uint64_t)max) {
        close(fd);
        return RD_TOO_BIG;
    }
    size_t cap = sb->st_size > 0 ? (size_t)sb->st_size + 1 : 4096, n = 0;
    char *s = malloc(cap);
    int why = s ? RD_DONE : RD_NO_MEMORY;
    while (why == RD_DONE) {
        if (n + 1 >= cap) {
            size_t nc = cap > max / 2 ? max + 2 : cap * 2;
            char *ns = nc > cap ? realloc(s, nc) : NULL;
            if (!ns) {
                why = RD_NO_MEMORY;
                break;
            }
            s = ns;
            cap = nc;
        }
        ssize_t r = read(fd, s + n, cap - n - 1);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            *err = errno;
            why = RD_READ;
        } else if (r == 0) {
            break;
        } else if ((n += (size_t)r) > max) {
            why = RD_TOO_BIG;
        }
    }
    close(fd);
    if (why != RD_DONE) {
        free(s);
        return why;
    }
    s[n] = 0;
    *out = s;
    if (len) *len = n;
    return RD_DONE;
}

cg_status cg_read_file(const char *path, size_t max, char **out, size_t *len) {
    struct stat sb;
    memset(&sb, 0, sizeof sb);
    int err;
    switch (read_core(path, max, out, len, &sb, &err)) {
    case RD_DONE: return CG_OK;
    case RD_OPEN:
        if (err) return cg_error(CG_ERR_IO, "%s: cannot open: %s", path, strerror(err));
        return cg_error(CG_ERR_IO, "%s: not a regular file (%s)", path, cg_file_kind(sb.st_mode));
    case RD_TOO_BIG: return cg_error(CG_ERR_IO, "%s: larger than %zu bytes", path, max);
    case RD_NO_MEMORY: return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory reading it", path);
    default: return cg_error(CG_ERR_IO, "%s: cannot read: %s", path, strerror(err ? err : EIO));
    }
}

int cg_read_file_quiet(const char *path, size_t max, char **out, size_t *len) {
    struct stat sb;
    int err;
    return read_core(path, max, out, len, &sb, &err) == RD_DONE ? 0 : -1;
}
