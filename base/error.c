#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Thread-local so concurrent contexts never see each other's messages. */
static _Thread_local char g_msg[2048];

const char *cg_last_error(void) { return g_msg; }

/* src into dst (n bytes) with control bytes written as \xNN: a message is
 * one line whatever it quotes (a plugin's message with a newline, a name
 * from a file with an escape sequence), so that every error reaches the
 * user as the one line the rule promises. Cut at n - 1 bytes. */
static void one_line(char *dst, size_t n, const char *src) {
    static const char hex[] = "0123456789abcdef";
    size_t k = 0;
    for (; *src && k + 1 < n; src++) {
        unsigned char c = (unsigned char)*src;
        if (c >= 0x20 && c != 0x7f) {
            dst[k++] = (char)c;
            continue;
        }
        if (k + 5 >= n) break;
        dst[k++] = '\\', dst[k++] = 'x', dst[k++] = hex[c >> 4], dst[k++] = hex[c & 15];
    }
    dst[k] = '\0';
}

cg_status cg_error(cg_status s, const char *fmt, ...) {
    char raw[sizeof g_msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    one_line(g_msg, sizeof g_msg, raw);
    return s;
}

void cg_error_prefix(const char *fmt, ...) {
    char raw[512], pre[512], old[sizeof g_msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    one_line(pre, sizeof pre, raw);
    memcpy(old, g_msg, sizeof old);
    /* Keep the end of an over-long message cut rather than the prefix. */
    size_t np = strlen(pre), no = strlen(old);
    if (np > sizeof g_msg - 1) np = sizeof g_msg - 1;
    if (no > sizeof g_msg - 1 - np) no = sizeof g_msg - 1 - np;
    memcpy(g_msg, pre, np);
    memcpy(g_msg + np, old, no);
    g_msg[np + no] = '\0';
}

void cg_error_clear(void) { g_msg[0] = '\0'; }

const char *cg_status_name(cg_status s) {
    switch (s) {
    case CG_OK: return "CG_OK";
    case CG_ERR_INVALID_ARGUMENT: return "CG_ERR_INVALID_ARGUMENT";
    case CG_ERR_NO_MEMORY: return "CG_ERR_NO_MEMORY";
    case CG_ERR_IO: return "CG_ERR_IO";
    case CG_ERR_PARSE: return "CG_ERR_PARSE";
    case CG_ERR_FORMAT: return "CG_ERR_FORMAT";
    case CG_ERR_VERIFY: return "CG_ERR_VERIFY";
    case CG_ERR_NOT_FOUND: return "CG_ERR_NOT_FOUND";
    case CG_ERR_PLUGIN: return "CG_ERR_PLUGIN";
    case CG_ERR_KERNEL: return "CG_ERR_KERNEL";
    case CG_ERR_UNSUPPORTED: return "CG_ERR_UNSUPPORTED";
    }
    return "CG_ERR_?";
}

const char *cg_version(void) { return CG_VERSION_STRING; }

char *cg_strdup(const char *s) {
    if (!s) {
        cg_error(CG_ERR_INVALID_ARGUMENT, "cg_strdup: NULL string");
        return NULL;
    }
    size_t n = strlen(s) + 1;
    char *r = malloc(n);
    if (!r) {
        cg_error(CG_ERR_NO_MEMORY, "out of memory");
        return NULL;
    }
    memcpy(r, s, n);
    return r;
}
