/* The narrow element types of ABI 1.6 (float8, float4, 4- and 2-bit
 * integers; dtype.h): their values as f32, the conversions into them that
 * ONNX's Cast defines, and ONNX's packed sub-byte layout. One element per
 * byte in memory (see include/clgraph/dtype.h); ops/cl/cast_narrow.cl
 * computes the same functions on OpenCL devices, bit for bit. */
#ifndef CG_BASE_NARROW_H
#define CG_BASE_NARROW_H

#include <stddef.h>
#include <stdint.h>

#include "clgraph/clgraph.h"

/* 1 for CG_F8E4M3FN .. CG_U2, else 0. */
int cg_dtype_is_narrow(cg_dtype t);

/* 1 for the narrow float types (the four float8, f8e8m0, f4e2m1). */
int cg_dtype_is_narrow_float(cg_dtype t);

/* Bits per element in ONNX's packed form: 4 (i4, u4, f4e2m1), 2 (i2, u2),
 * else 8. */
int cg_dtype_packed_bits(cg_dtype t);

/* Bytes of n elements of t in ONNX's packed form (the last byte padded). */
size_t cg_narrow_packed_bytes(cg_dtype t, int64_t n);

/* Rounding of a conversion to f8e8m0: ONNX Cast's round_mode "up" (the
 * default), "down" or "nearest". */
typedef enum { CG_E8M0_UP = 0, CG_E8M0_DOWN = 1, CG_E8M0_NEAREST = 2 } cg_e8m0_round;

/* The value of the element byte v of narrow type t as an f32: exact for
 * every type (e8m0's 2^-127 is an f32 subnormal); NaN codes give a NaN of
 * the code's sign, e5m2's infinities infinities; the integer types their
 * value. */
float cg_narrow_to_f32(cg_dtype t, uint8_t v);

/* An f32 into narrow type t as ONNX's Cast (opset 25) converts it, which is
 * also what ml_dtypes' astype does (the reference's source of expected
 * values):
 *  - float8: rounded to nearest, ties to even; with `saturate` a value past
 *    the largest finite one (infinities included) becomes it with its sign,
 *    without it e5m2 gives an infinity, e4m3fn its NaN of the sign and the
 *    fnuz types their one NaN; a NaN becomes the type's NaN (of its sign
 *    where the type has two), and the fnuz types have no -0;
 *  - f8e8m0: the exponent alone (the sign is ignored), rounded by `round`
 *    as onnx.numpy_helper.to_float8e8m0 does; past the largest (2^127) it
 *    saturates or becomes NaN, NaN and infinities are NaN;
 *  - f4e2m1: rounded to nearest, ties to even, saturating at +-6 always
 *    (it has no infinities); a NaN becomes -0 when its sign bit is clear
 *    and +0 when set, as ml_dtypes does;
 *  - i4, u4, i2, u2: truncated toward zero and wrapped to the low bits
 *    (two's complement), NaN and infinities 0. */
uint8_t cg_f32_to_narrow(cg_dtype t, float x, int saturate, cg_e8m0_round round);

/* An integer into narrow type t: the integer types keep the low bits (two's
 * complement), the float types take (float)v as cg_f32_to_narrow does. */
uint8_t cg_int_to_narrow(cg_dtype t, int64_t v, int saturate);

/* ONNX's packed form (element 0 in the low bits of byte 0) of n elements of
 * a 4- or 2-bit type into one byte each, sign-extended for i4 and i2, and
 * back (padding bits 0). For 8-bit types both copy. */
void cg_narrow_unpack(cg_dtype t, const uint8_t *packed, int64_t n, uint8_t *out);
void cg_narrow_pack(cg_dtype t, const uint8_t *in, int64_t n, uint8_t *packed);

/* A byte held in memory as type t normalised: the low bits of a 4- or 2-bit
 * type, sign-extended for i4 and i2 (what a reader stores for any byte). */
uint8_t cg_narrow_normalize(cg_dtype t, uint8_t v);

#endif
