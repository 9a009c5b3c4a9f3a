/* A growable string built with printf-style appends (see strbuf.h). */
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void cg_strbuf_put(cg_strbuf *b, const char *fmt, ...) {
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int len = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (len < 0) {
            b->failed = 1;
            return;
        }
        if (b->n + (size_t)len < b->cap) {
            b->n += (size_t)len;
            return;
        }
        size_t cap = (b->n + (size_t)len + 1) * 2;
        char *ns = realloc(b->s, cap);
        if (!ns) {
            b->failed = 1;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
}

char *cg_strbuf_take(cg_strbuf *b) {
    if (!b->failed && !b->s) b->s = calloc(1, 1);
    char *s = b->failed ? NULL : b->s;
    if (!s) free(b->s);
    b->s = NULL;
    b->n = b->cap = 0;
    return s;
}
