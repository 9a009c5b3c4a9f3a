/* A bump allocator for many small objects that live and die together (the
 * nodes and names of a graph): one malloc per 64 KiB chunk instead of one
 * per object, and one pass of frees at the end. */
#ifndef CG_BASE_ARENA_H
#define CG_BASE_ARENA_H

#include <stddef.h>

typedef struct cg_arena_chunk cg_arena_chunk;

/* Start from {0}. */
typedef struct cg_arena {
    cg_arena_chunk *head; /* the chunk being filled; it links to the older ones */
    size_t used;          /* bytes taken of head */
} cg_arena;

/* `size` bytes aligned for any object (max_align_t), uninitialised; NULL
 * (without a message) when memory is short or size overflows. Objects larger
 * than a chunk get a chunk of their own. */
void *cg_arena_alloc(cg_arena *a, size_t size);

/* A copy of s in the arena (byte-aligned: names pack tightly), or NULL. */
char *cg_arena_strdup(cg_arena *a, const char *s);

/* Frees every chunk; the arena is empty again. */
void cg_arena_free(cg_arena *a);

#endif
