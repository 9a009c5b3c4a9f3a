/* A growable string built with printf-style appends (internal). */
#ifndef CG_BASE_STRBUF_H
#define CG_BASE_STRBUF_H

#include <stddef.h>

#include "error.h"

/* Start from {0}. s is NUL-terminated once anything was appended; after a
 * failed append (out of memory, bad format) every later one does nothing
 * and `failed` stays set. */
typedef struct cg_strbuf {
    char *s;
    size_t n, cap;
    int failed;
} cg_strbuf;

/* Appends printf-style text, growing s as needed. */
void cg_strbuf_put(cg_strbuf *b, const char *fmt, ...) CG_PRINTF(2, 3);

/* Appends the NUL-terminated strings given, up to a NULL (no printf: see
 * shape.c for why that matters in a loop over a million values). */
void cg_strbuf_cat(cg_strbuf *b, ...);

/* The text, now the caller's to free ("" when nothing was appended), or NULL
 * (with the buffer freed) when an append or this allocation failed. */
char *cg_strbuf_take(cg_strbuf *b);

/* Copies untrusted text (len bytes, NULs included) into dst for a one-line
 * message: printable ASCII and UTF-8 bytes as is, control characters and
 * backslashes as \xNN, cut with "..." (never inside a UTF-8 sequence) when
 * it does not fit `size`. */
void cg_quote_text(char *dst, size_t size, const char *src, size_t len);

#endif
