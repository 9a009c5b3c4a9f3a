/* Bump allocation in chunks (see arena.h). */
#include "arena.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES ((size_t)64 * 1024)
#define ALIGN (_Alignof(max_align_t))

struct cg_arena_chunk {
    cg_arena_chunk *prev;
    size_t size; /* bytes of data[] */
    _Alignas(max_align_t) unsigned char data[];
};

/* size bytes at a multiple of align (a power of two, at most ALIGN). */
static void *take(cg_arena *a, size_t size, size_t align) {
    if (size > SIZE_MAX / 2) return NULL;
    size_t at = a->head ? (a->used + align - 1) & ~(align - 1) : 0;
    if (!a->head || at > a->head->size || a->head->size - at < size) {
        size_t data = size > CHUNK_BYTES ? size : CHUNK_BYTES;
        cg_arena_chunk *c = malloc(sizeof *c + data);
        if (!c) return NULL;
        c->size = data;
        /* A big object's own chunk goes behind the head, so the head's
         * free room is not given up for it. */
        if (size > CHUNK_BYTES && a->head) {
            c->prev = a->head->prev;
            a->head->prev = c;
            return c->data;
        }
        c->prev = a->head;
        a->head = c;
        at = 0;
    }
    a->used = at + size;
    return a->head->data + at;
}

void *cg_arena_alloc(cg_arena *a, size_t size) { return take(a, size ? size : 1, ALIGN); }

char *cg_arena_strdup(cg_arena *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *d = take(a, n, 1);
    if (d) memcpy(d, s, n);
    return d;
}

void cg_arena_free(cg_arena *a) {
    for (cg_arena_chunk *c = a->head, *prev; c; c = prev) {
        prev = c->prev;
        free(c);
    }
    a->head = NULL;
    a->used = 0;
}
