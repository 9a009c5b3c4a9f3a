/* Per-thread last-error message shared by every layer of the library. */
#ifndef CG_BASE_ERROR_H
#define CG_BASE_ERROR_H

#include "clgraph/clgraph.h"

#if defined(__GNUC__)
#define CG_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CG_PRINTF(a, b)
#endif

/* Records a printf-style one-line message and returns `s`, so callers can
 * write `return cg_error(CG_ERR_PARSE, "%s:%d:%d: ...", ...)`. */
cg_status cg_error(cg_status s, const char *fmt, ...) CG_PRINTF(2, 3);

/* Prefixes the current message with printf-style context ("node 'x': "). */
void cg_error_prefix(const char *fmt, ...) CG_PRINTF(1, 2);

/* Clears the message. */
void cg_error_clear(void);

/* A copy of s; NULL (with the message set) when s is NULL or memory is short. */
char *cg_strdup(const char *s);

#endif
