/* The fuzz targets' one way to hand bytes to a reader that takes a path:
 * a memfd per name, rewritten for each input and opened through
 * /proc/self/fd/N, so the real open/read/mmap path runs without a disk. */
#ifndef CG_FUZZ_MEM_H
#define CG_FUZZ_MEM_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct cg_fuzz_file {
    int fd;
    char path[64];
} cg_fuzz_file;

/* Writes data[0..size) as the whole content of *f (created on first use)
 * and returns its path. */
static inline const char *cg_fuzz_put(cg_fuzz_file *f, const char *name, const uint8_t *data, size_t size) {
    if (f->fd <= 0) {
        f->fd = memfd_create(name, 0);
        if (f->fd < 0) abort();
        snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
    }
    if (ftruncate(f->fd, 0) != 0) abort();
    if (size && pwrite(f->fd, data, size, 0) != (ssize_t)size) abort();
    return f->path;
}

/* A failure must leave a one-line message that names the file. */
static inline void cg_fuzz_check_message(const char *msg, const char *path) {
    if (!msg || strchr(msg, '\n') || !strstr(msg, path)) {
        fprintf(stderr, "bad message for %s: %s\n", path, msg ? msg : "(null)");
        abort();
    }
}

#endif
