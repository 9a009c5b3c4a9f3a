/* Atomic file writes, streamed: the bytes go to a temporary file in the
 * target's directory, which is synced and renamed over the target, so that
 * readers see the old file or the whole new one, never a part. Nothing here
 * sets an error message: every call returns 0 or the errno value of what
 * failed, and the caller says which file and what it was doing. */
#ifndef CG_BASE_ATOMIC_FILE_H
#define CG_BASE_ATOMIC_FILE_H

#include <stddef.h>

typedef struct cg_afile {
    int fd;
    char *tmp; /* the temporary file's path (malloc'ed) */
    char *path;
} cg_afile;

/* Creates the temporary file "DIR/.NAME.XXXXXX" for path "DIR/NAME" (mode
 * 0644). 0, or errno (ENOMEM when memory is short). */
int cg_afile_open(cg_afile *f, const char *path);

/* Appends n bytes. 0, or errno (EIO for a write that made no progress). */
int cg_afile_write(cg_afile *f, const void *data, size_t n);

/* fsync, close and rename onto the path; the temporary file is removed when
 * any of them fails. Frees f's memory either way. 0, or errno. */
int cg_afile_commit(cg_afile *f);

/* Closes and removes the temporary file; frees f's memory. */
void cg_afile_abort(cg_afile *f);

#endif
