/* Host memory for tensors, arenas and staging: 64-byte aligned, so every
 * vector width the CPU kernels use loads aligned rows. */
#ifndef CG_BASE_MEM_H
#define CG_BASE_MEM_H

#include <stddef.h>

/* bytes rounded up to 64 (0 gives 64 bytes), 64-byte aligned; NULL on
 * failure or overflow. Free with cg_aligned_free (never free()). Blocks of
 * 128 KiB or more are mapped from the system and unmapped when freed
 * (mem.c says why). */
void *cg_aligned_alloc(size_t bytes);
void cg_aligned_free(void *p);

#endif
