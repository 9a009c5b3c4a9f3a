#include "mem.h"

#include <stdlib.h>

void *cg_aligned_alloc(size_t bytes) {
    if (bytes == 0) bytes = 64;
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (rounded < bytes) return NULL;
    return aligned_alloc(64, rounded);
}

void cg_aligned_free(void *p) { free(p); }
