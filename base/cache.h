/* The cache directory (compiled OpenCL programs, SGEMM choices, measured
 * kernel costs) and atomic file writes. Caching is best effort: nothing here
 * sets an error. */
#ifndef CG_BASE_CACHE_H
#define CG_BASE_CACHE_H

#include <stddef.h>
#include <stdio.h>

/* $CLGRAPH_CACHE_DIR, else $XDG_CACHE_HOME/clgraph, else
 * $HOME/.cache/clgraph; "" when none can be determined (then nothing is
 * cached on disk). Read once per process; the directory may not exist yet:
 * see cg_cache_dir_ready(). */
const char *cg_cache_dir(void);

/* Creates cg_cache_dir() if needed (mkdir -p); 1 when it exists and is
 * writable afterwards, 0 otherwise (then skip caching; it is not an error). */
int cg_cache_dir_ready(void);

/* Writes data to cg_cache_dir()/name (a plain file name, no '/')
 * atomically. 0 on success, -1 otherwise. */
int cg_cache_write(const char *name, const void *data, size_t len);

/* Writes head + body to path through a temporary file in the same
 * directory, fsync and rename, so readers see the old file or the whole new
 * one. 0 on success, -1 otherwise. */
int cg_write_atomic(const char *path, const void *head, size_t hn, const void *body, size_t bn);

/* A cache file opened to append to (created if absent), or NULL: one that
 * is not a regular file is left alone (opening a FIFO to write would wait
 * for a reader), and one over `max` bytes, which readers ignore
 * (CG_MAX_CACHE_FILE, read_file.h), is emptied first. */
FILE *cg_cache_append(const char *path, size_t max);

/* mkdir -p; 0 when the directory exists afterwards. */
int cg_mkdir_p(const char *dir);

/* Test hook: forgets the directory so the next cg_cache_dir() reads the
 * environment again. */
void cg_cache_test_reset_dir(void);

#endif
