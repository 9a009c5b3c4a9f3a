/* Opening and reading the files a user names: graph texts, configuration
 * files, vocabularies, weights, cache files. Every file the library reads
 * is opened here, so that a FIFO, a directory or a device named where a
 * file is expected is refused at once instead of blocking the open (a FIFO
 * without a writer) or feeding an endless stream (/dev/zero). */
#ifndef CG_BASE_READ_FILE_H
#define CG_BASE_READ_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "clgraph/clgraph.h"

/* Size caps of the files read whole into memory (docs/reliability.md,
 * Limits): far above any real file, low enough that a wrong file is an
 * error before memory runs out. */
#define CG_MAX_TEXT_FILE ((size_t)1 << 30)   /* graph texts, vocabularies: 1 GiB */
#define CG_MAX_CONFIG_FILE ((size_t)1 << 24) /* config.json: 16 MiB */
#define CG_MAX_CACHE_FILE ((size_t)1 << 26)  /* a cache's text file: 64 MiB */

/* What a non-regular file is, for messages: "a FIFO", "a directory",
 * "a character device", "a block device", "a socket", "not a regular file". */
const char *cg_file_kind(mode_t mode);

/* Opens path (flags: O_RDONLY, or O_WRONLY / O_RDWR with O_APPEND, O_CREAT
 * ...; O_CLOEXEC is added) when it is a regular file (a symbolic link to
 * one is followed). Never blocks: the file is checked with stat before the
 * open, the open itself is non-blocking (a FIFO put there in between does
 * not wait for a writer) and fstat checks what was opened. Returns the
 * descriptor (blocking again, as usual for files) with its stat in *sb (may
 * be NULL), or -1: errno set when the open or stat failed, errno 0 and
 * sb->st_mode telling what it is when it is not a regular file. Sets no
 * error message: caches call it too, and a cache is best effort. */
int cg_open_regular_quiet(const char *path, int flags, int mode, struct stat *sb);

/* cg_open_regular_quiet with the message set: "PATH: cannot open: why" or
 * "PATH: not a regular file (a FIFO)". *fd is -1 on an error. */
cg_status cg_open_regular(const char *path, int flags, int *fd, struct stat *sb);

/* The bytes of regular file `path`, NUL-terminated (*out is the caller's;
 * *len without the NUL, may be NULL). A file over `max` bytes (known from
 * its size before it is read, and checked again while reading), one that
 * is not a regular file, cannot be opened or read, or memory running short
 * is an error naming the file ("PATH: cannot open: ...", "PATH: not a
 * regular file (a FIFO)", "PATH: cannot read: ...", "PATH: larger than N
 * bytes"). */
cg_status cg_read_file(const char *path, size_t max, char **out, size_t *len);

/* The same for a cache file: no message, 0 on success, -1 when it is
 * absent, not a regular file, over `max` bytes or unreadable (then the
 * cache is ignored). */
int cg_read_file_quiet(const char *path, size_t max, char **out, size_t *len);

#endif
