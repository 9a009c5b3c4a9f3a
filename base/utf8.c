/* The strict UTF-8 validator (utf8.h). */
#include "utf8.h"

#include <string.h>

static int is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

size_t cg_utf8_seq_len(const char *str, size_t avail) {
    const unsigned char *s = (const unsigned char *)str;
    unsigned c = s[0];
    if (c < 0x80) return 1;
    if (c < 0xC2) return 0; /* continuation byte, or overlong 2-byte lead */
    if (c < 0xE0) return avail >= 2 && is_cont(s[1]) ? 2 : 0;
    if (c < 0xF0) {
        if (avail < 3 || !is_cont(s[1]) || !is_cont(s[2])) return 0;
        if (c == 0xE0 && s[1] < 0xA0) return 0;  /* overlong */
        if (c == 0xED && s[1] >= 0xA0) return 0; /* surrogate */
        return 3;
    }
    if (c < 0xF5) {
        if (avail < 4 || !is_cont(s[1]) || !is_cont(s[2]) || !is_cont(s[3])) return 0;
        if (c == 0xF0 && s[1] < 0x90) return 0;  /* overlong */
        if (c == 0xF4 && s[1] >= 0x90) return 0; /* beyond U+10FFFF */
        return 4;
    }
    return 0;
}

size_t cg_utf8_check(const unsigned char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        size_t k = cg_utf8_seq_len((const char *)s + i, len - i);
        if (!k) return i;
        i += k;
    }
    return len;
}

int cg_utf8_valid(const char *s) {
    size_t n = strlen(s);
    return cg_utf8_check((const unsigned char *)s, n) == n;
}
