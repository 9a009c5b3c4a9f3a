/* Shapes: element counts, byte sizes and the one formatter every message
 * uses ("f32[2, B, ?]"). */
#ifndef CG_BASE_SHAPE_H
#define CG_BASE_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "clgraph/plugin.h"

/* numel of a shape, or -1 on overflow, negative (symbolic, unknown) dims or
 * an invalid rank. */
int64_t cg_shape_numel(int ndim, const int64_t *dims);

/* The most elements one value may hold (2^40: 4 TiB of f32), so that
 * counts and byte sizes never overflow downstream. */
#define CG_MAX_NUMEL ((int64_t)1 << 40)

/* 1 when the product of a shape's known dims (symbolic and unknown ones
 * left out) is at most CG_MAX_NUMEL, else 0: what the verifier can refuse
 * before any size is bound. */
int cg_shape_fits(int ndim, const int64_t *dims);

/* Bytes of a concrete descriptor's data (numel x the dtype's size); 0 when
 * the shape is not concrete or the dtype unknown. */
size_t cg_desc_bytes(const cg_tensor_desc *d);

/* Formats a shape into buf: "f32[2, 3]", or "[2, 3]" when dtype is 0. A
 * symbolic dim CG_DIM_SYM(k) prints syms[k] when k < n_syms, else "s<k>";
 * an unknown dim prints "?". Always NUL-terminates (size > 0); cut short
 * when buf is too small. */
void cg_shape_format(char *buf, size_t size, int dtype, int ndim, const int64_t *dims, const char *const *syms,
                     int n_syms);

#endif
