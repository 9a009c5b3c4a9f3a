/* Element types (internal): parsing names, and the bit-exact conversions
 * between the float formats that every reader, writer and cg_tensor_convert
 * share. The public half (cg_dtype_name, cg_dtype_size) is in clgraph.h. */
#ifndef CG_BASE_DTYPE_H
#define CG_BASE_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "clgraph/clgraph.h"

/* The largest cg_dtype value, for tables indexed by dtype. */
#define CG_DTYPE_LAST CG_U2

/* The dtype named by the `len` bytes at s ("f32", "bf16", "bool", ...: the
 * names cg_dtype_name gives), or 0 when none is. */
cg_dtype cg_dtype_parse(const char *s, size_t len);

/* Every name, for messages: "f32, i32, f16, bf16, i8, u8, i64, bool, i16,
 * u16, u32, u64, f8e4m3fn, ..., i2 or u2". */
const char *cg_dtype_all_names(void);

/* 1 when t is one of the cg_dtype values, else 0. */
int cg_dtype_valid(int t);

/* binary16 / bfloat16 bits -> float32 bits. Exact: every value of both is
 * a float32 (a NaN keeps its sign and payload). */
uint32_t cg_f16_to_f32_bits(uint16_t h);
uint32_t cg_bf16_to_f32_bits(uint16_t h);

/* float32 bits -> binary16 bits, rounded to nearest, ties to even; values
 * past the largest half (65504, with rounding) become infinities, tiny ones
 * subnormals or signed zeros. A NaN stays a NaN of its sign with the top 10
 * bits of its payload (never turned into an infinity), as numpy does. */
uint16_t cg_f32_to_f16_bits(uint32_t f);

/* float32 bits -> bfloat16 bits, rounded to nearest, ties to even; a NaN
 * becomes the quiet NaN of its sign (0x7FC0 / 0xFFC0), as ml_dtypes does. */
uint16_t cg_f32_to_bf16_bits(uint32_t f);

/* Symmetric int8 quantization of one row of n floats, the one rounding of
 * int8 weights (clgraph quantize, --weights-dtype int8) and of activations
 * in the int8 products alike: s = max|x| / 127 and q[i] = round(x[i] * f)
 * with f = 127 / max|x| rounded to f32 and the product in f32 (for
 * max|x| < 127e-30 in double), ties to even, so q is in [-127, 127] (never
 * -128: the kernels negate freely) and x[i] ~ s q[i] within about s / 2.
 * Returns s; 0 for a row of zeros
 * (q all zero); NaN when the row holds a NaN or an infinity (q all zero),
 * so a product with it is NaN instead of a quiet wrong number. */
float cg_q8_row(const float *x, int64_t n, int8_t *q);

#endif
