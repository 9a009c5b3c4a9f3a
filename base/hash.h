/* 64-bit FNV-1a, the one hash the cache keys use (programs on disk, kernel
 * costs, conformance seeds). */
#ifndef CG_BASE_HASH_H
#define CG_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Where every FNV-1a hash starts. */
#define CG_FNV_BASIS 0xcbf29ce484222325ULL

/* Continues hash h over n bytes. */
static inline uint64_t cg_fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* Continues hash h over a string and its terminating NUL (so "ab","c" and
 * "a","bc" differ). */
static inline uint64_t cg_fnv1a_str(uint64_t h, const char *s) { return cg_fnv1a(h, s, strlen(s) + 1); }

#endif
