/* Reading a whole (small) text file into memory: configuration files and
 * graph texts. */
#ifndef CG_BASE_READ_FILE_H
#define CG_BASE_READ_FILE_H

#include <stddef.h>

#include "clgraph/clgraph.h"

/* The bytes of `path`, NUL-terminated (*out is the caller's; *len without
 * the NUL, may be NULL). A file over `max` bytes, one that cannot be opened
 * or read, or memory running short is an error naming the file
 * ("PATH: cannot open: ...", "PATH: cannot read: ...", "PATH: larger than
 * N bytes"). */
cg_status cg_read_file(const char *path, size_t max, char **out, size_t *len);

#endif
