/* The arrays of tools/py/make_dtype_data.py (tests/data/dtypes), one per
 * dtype, as little-endian bit patterns, for the .npy and safetensors tests.
 * Keep both in sync. */
#ifndef CG_TEST_DTYPE_CASES_H
#define CG_TEST_DTYPE_CASES_H

#include <stdint.h>

#include "clgraph/clgraph.h"

typedef struct dtype_case {
    const char *name; /* the dtype's name, and the files' */
    cg_dtype dtype;
    int ndim;
    int64_t dims[2];
    uint64_t bits[6]; /* row-major */
} dtype_case;

static const dtype_case DTYPE_CASES[] = {
    /* 1.0, -2.5, 0.1, inf, -0.0, FLT_MAX */
    {"f32", CG_F32, 2, {2, 3}, {0x3F800000, 0xC0200000, 0x3DCCCCCD, 0x7F800000, 0x80000000, 0x7F7FFFFF}},
    {"i32", CG_I32, 1, {4}, {7, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF}},
    /* 1.0, -2.0, 65504, 2^-24, inf, -0.0 */
    {"f16", CG_F16, 2, {2, 3}, {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x7C00, 0x8000}},
    /* 1.0, -3.0, 0.15625, 256, inf, -0.0 */
    {"bf16", CG_BF16, 2, {2, 3}, {0x3F80, 0xC040, 0x3E20, 0x4380, 0x7F80, 0x8000}},
    {"i8", CG_I8, 1, {4}, {0x80, 0x7F, 0x00, 0xFF}},
    {"u8", CG_U8, 1, {4}, {0, 255, 1, 128}},
    {"i64", CG_I64, 1, {5}, {0, UINT64_MAX, UINT64_C(1) << 40, UINT64_C(1) << 63, INT64_MAX}},
    {"bool", CG_BOOL, 1, {3}, {1, 0, 1}},
    {"i16", CG_I16, 1, {5}, {0x8000, 0x7FFF, 0, 0xFFFF, 0x100}},
    {"u16", CG_U16, 1, {4}, {0, 0xFFFF, 1, 0x8000}},
    {"u32", CG_U32, 2, {2, 3}, {0, 0xFFFFFFFF, 1, 0x80000000, 0x10000, 7}},
    {"u64", CG_U64, 1, {5}, {0, UINT64_MAX, UINT64_C(1) << 63, UINT64_C(1) << 40, 1}},
};
#define N_DTYPE_CASES (sizeof DTYPE_CASES / sizeof DTYPE_CASES[0])

/* The row-major elements of c, reversed when `reversed` (the "b" tensors of
 * the safetensors files), as little-endian bytes into out; the byte count. */
static inline size_t dtype_case_bytes(const dtype_case *c, int reversed, unsigned char *out) {
    size_t es = cg_dtype_size(c->dtype), n = 1;
    for (int i = 0; i < c->ndim; i++) n *= (size_t)c->dims[i];
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < es; k++) out[i * es + k] = (unsigned char)(c->bits[reversed ? n - 1 - i : i] >> (8 * k));
    return n * es;
}

#endif
