/* A growable string built with printf-style appends, and untrusted text
 * quoted for messages (see strbuf.h). */
#include "strbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Room for n more bytes and a NUL; 0 on failure (then b->failed is set). */
static int reserve(cg_strbuf *b, size_t n) {
    if (b->failed) return 0;
    if (b->cap - b->n > n) return 1;
    if (n > (SIZE_MAX - 1) / 2 - b->n) {
        b->failed = 1;
        return 0;
    }
    size_t cap = (b->n + n + 1) * 2;
    char *ns = realloc(b->s, cap);
    if (!ns) {
        b->failed = 1;
        return 0;
    }
    b->s = ns;
    b->cap = cap;
    return 1;
}

void cg_strbuf_cat(cg_strbuf *b, ...) {
    va_list ap;
    va_start(ap, b);
    for (const char *s; (s = va_arg(ap, const char *));) {
        size_t n = strlen(s);
        if (!reserve(b, n)) break;
        memcpy(b->s + b->n, s, n + 1);
        b->n += n;
    }
    va_end(ap);
}

char *cg_strbuf_take(cg_strbuf *b) {
    if (!b->failed && !b->s) b->s = calloc(1, 1);
    char *s = b->failed ? NULL : b->s;
    if (!s) free(b->s);
    b->s = NULL;
    b->n = b->cap = 0;
    return s;
}

/* Copies untrusted text into `dst` for a message: printable ASCII and UTF-8
 * bytes as is, control characters and backslashes as \xNN, cut with "..."
 * when too long. */
void cg_quote_text(char *dst, size_t size, const char *src, size_t len) {
    size_t o = 0;
    if (size == 0) return;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)src[i];
        char tmp[5];
        int n;
        if ((c >= 0x20 && c < 0x7f && c != '\\') || c >= 0x80) {
            tmp[0] = (char)c;
            n = 1;
        } else {
            n = snprintf(tmp, sizeof tmp, "\\x%02x", c);
        }
        if (o + (size_t)n + 4 > size) {
            /* do not cut a UTF-8 sequence in half */
            while (o > 0 && ((unsigned char)dst[o - 1] & 0xc0) == 0x80) o--;
            if (o > 0 && (unsigned char)dst[o - 1] >= 0xc0) o--;
            if (o + 4 <= size) memcpy(dst + o, "...", 3), o += 3;
            break;
        }
        memcpy(dst + o, tmp, (size_t)n);
        o += (size_t)n;
    }
    dst[o < size ? o : size - 1] = '\0';
}
