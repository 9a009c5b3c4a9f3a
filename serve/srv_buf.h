/* A growing byte buffer: response bodies, the metrics page, the access log
 * line. An allocation failure sticks (`failed`) so that a chain of appends
 * needs one check at the end. */
#ifndef CG_SERVE_SRV_BUF_H
#define CG_SERVE_SRV_BUF_H

#include <stddef.h>

typedef struct srv_buf {
    char *p; /* NUL-terminated while not failed */
    size_t n, cap;
    int failed;
} srv_buf;

/* Appends n bytes. */
void srv_buf_add(srv_buf *b, const void *data, size_t n);
/* Appends a NUL-terminated string. */
void srv_buf_puts(srv_buf *b, const char *s);
/* Appends printf output. */
void srv_buf_printf(srv_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Appends s as a JSON string literal (quotes and escapes included). */
void srv_buf_json_str(srv_buf *b, const char *s);
/* Gives the bytes to the caller (free() them) and empties b; NULL when an
 * append failed (b is freed then). */
char *srv_buf_take(srv_buf *b, size_t *n);
void srv_buf_free(srv_buf *b);

#endif
