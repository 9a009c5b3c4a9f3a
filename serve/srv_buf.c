#include "srv_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int srv_buf_room(srv_buf *b, size_t more) {
    if (b->failed) return 0;
    if (b->n + more + 1 <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more + 1) {
        if (cap > ((size_t)-1) / 2) {
            b->failed = 1;
            return 0;
        }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return 1;
}

void srv_buf_add(srv_buf *b, const void *data, size_t n) {
    if (!srv_buf_room(b, n)) return;
    if (n) memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void srv_buf_puts(srv_buf *b, const char *s) { srv_buf_add(b, s, strlen(s)); }

void srv_buf_printf(srv_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        srv_buf_add(b, small, (size_t)n);
        return;
    }
    if (!srv_buf_room(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void srv_buf_json_str(srv_buf *b, const char *s) {
    srv_buf_add(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') {
            char e[2] = {'\\', (char)*c};
            srv_buf_add(b, e, 2);
        } else if (*c < 0x20) {
            srv_buf_printf(b, "\\u%04x", *c);
        } else {
            srv_buf_add(b, c, 1);
        }
    }
    srv_buf_add(b, "\"", 1);
}

char *srv_buf_take(srv_buf *b, size_t *n) {
    if (b->failed) {
        srv_buf_free(b);
        return NULL;
    }
    if (!b->p) srv_buf_add(b, "", 0);
    char *p = b->p;
    if (n) *n = b->n;
    b->p = NULL;
    b->n = b->cap = 0;
    return p;
}

void srv_buf_free(srv_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}
