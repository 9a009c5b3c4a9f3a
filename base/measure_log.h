/* The measurement logs in the cache directory (the SGEMM choices of
 * backends/opencl, gemm-choices.txt; the kernel costs of graph/sched,
 * costs.txt): small text files of one line per measurement, appended to by
 * any number of processes and read whole at start. Best effort like every
 * cache: nothing here sets an error. */
#ifndef CG_BASE_MEASURE_LOG_H
#define CG_BASE_MEASURE_LOG_H

#include <stddef.h>

/* Called with each line, its '\n' (and a '\r' before it) removed. */
typedef void (*cg_mlog_line_fn)(char *line, void *ctx);

/* Calls fn for every line of the log at path of at most max_line bytes
 * (0: any length; longer lines are skipped). A log that is absent, not a
 * regular file (a FIFO is never waited on) or over CG_MAX_CACHE_FILE
 * bytes is read as an empty one. */
void cg_mlog_read(const char *path, size_t max_line, cg_mlog_line_fn fn, void *ctx);

/* Appends line[0..len) (one whole line, '\n' included) to the log at path
 * with one write to a file opened O_APPEND, so concurrent processes do not
 * interleave lines; the log is created if absent, emptied first when over
 * CG_MAX_CACHE_FILE (its readers ignore it), left alone when it is not a
 * regular file. 0 when the whole line was written, -1 otherwise. */
int cg_mlog_append(const char *path, const char *line, size_t len);

#endif
