/* Large blocks are mapped from the kernel, not taken from malloc's heap:
 * glibc raises its mmap threshold each time a mapped block is freed (up to
 * 32 MiB), after which large blocks come from the heap and stay there when
 * freed, as long as anything above them lives. In a process that has
 * freed a few large blocks before (an interpreter that imported numpy),
 * a decoder's arenas and carried caches, which grow by half again a few
 * times, then left a quarter of a gigabyte of freed heap behind. A mapping
 * goes back to the system when freed, whatever malloc's state. */
#include "mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

/* Blocks from this size on are mapped: malloc's initial threshold, which
 * glibc moves and this does not (a mapping costs a system call and zeroed
 * pages; at 1 MiB a decoder's smaller caches, 64 KiB a position at batch
 * 32, stayed on the heap: 14 MB of a Python process's peak). Never under
 * AddressSanitizer: its redzones and leak checks cover malloc's blocks
 * only. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CG_NO_MAP 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(CG_NO_MAP)
#define CG_MAP_BYTES SIZE_MAX
#else
#define CG_MAP_BYTES ((size_t)128 << 10)
#endif
/* The header before each block: its size, and how it was made; 64 bytes
 * keep the block 64-byte aligned. */
#define CG_HEAD 64

typedef struct head {
    size_t bytes; /* the whole allocation, header included */
    int mapped;
} head;

void *cg_aligned_alloc(size_t bytes) {
    if (bytes == 0) bytes = 64;
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (rounded < bytes || rounded > SIZE_MAX - CG_HEAD) return NULL;
    const size_t total = rounded + CG_HEAD;
    char *p;
    int mapped = total >= CG_MAP_BYTES;
    if (mapped) {
        p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return NULL;
    } else if (!(p = aligned_alloc(64, total))) {
        return NULL;
    }
    head *h = (head *)(void *)p;
    h->bytes = total;
    h->mapped = mapped;
    return p + CG_HEAD;
}

void cg_aligned_free(void *q) {
    if (!q) return;
    head *h = (head *)(void *)((char *)q - CG_HEAD);
    if (h->mapped) munmap(h, h->bytes);
    else free(h);
}
