/*
 * clgraph element types, shared by the runtime API (clgraph.h) and the
 * operator plugin ABI (plugin.h); self-contained so that plugin.h stays so.
 *
 * The numeric values are part of the plugin ABI (cg_tensor_desc.dtype holds
 * one): existing values never change and new types are only appended. Every
 * type is stored little-endian in files; in memory it is the host's order.
 *
 * The narrow types of ABI 1.6 (ONNX's float8, float4 and 4- and 2-bit
 * integers) take one byte per element in memory, whatever their width, so
 * that every op that moves elements by their byte size (reshape, transpose,
 * concat, slice, gather, where, expand, ...) moves them unchanged: a float8
 * byte is its bit pattern; f4e2m1 is its 4-bit code in the low bits (the
 * high bits 0); i4 and i2 hold the value as an int8 (-8..7, -2..1), u4 and
 * u2 as a uint8 (0..15, 0..3). Readers unpack ONNX's packed sub-byte data
 * (two 4-bit or four 2-bit elements per byte, the first in the low bits)
 * into this form and writers pack it again.
 */
#ifndef CLGRAPH_DTYPE_H
#define CLGRAPH_DTYPE_H

/** Element types of tensors, values and weights. */
typedef enum cg_dtype {
    CG_F32 = 1,  /**< 32-bit IEEE float */
    CG_I32 = 2,  /**< 32-bit signed integer */
    CG_F16 = 3,  /**< 16-bit IEEE float (binary16), held as its uint16_t bits */
    CG_BF16 = 4, /**< bfloat16 (the high half of a float32), held as its uint16_t bits */
    CG_I8 = 5,   /**< 8-bit signed integer */
    CG_U8 = 6,   /**< 8-bit unsigned integer */
    CG_I64 = 7,  /**< 64-bit signed integer */
    CG_BOOL = 8, /**< one byte, 0 (false) or 1 (true) */
    /* ---- plugin ABI 1.5 ---- */
    CG_I16 = 9,  /**< 16-bit signed integer */
    CG_U16 = 10, /**< 16-bit unsigned integer */
    CG_U32 = 11, /**< 32-bit unsigned integer */
    CG_U64 = 12, /**< 64-bit unsigned integer */
    /* ---- plugin ABI 1.6 (one byte per element, see above) ---- */
    CG_F8E4M3FN = 13,   /**< float8 e4m3fn: bias 7, no infinities, NaN 0x7F/0xFF, max 448 */
    CG_F8E4M3FNUZ = 14, /**< float8 e4m3fnuz: bias 8, no infinities or -0, NaN 0x80, max 240 */
    CG_F8E5M2 = 15,     /**< float8 e5m2: bias 15, IEEE-like with infinities, max 57344 */
    CG_F8E5M2FNUZ = 16, /**< float8 e5m2fnuz: bias 16, no infinities or -0, NaN 0x80, max 57344 */
    CG_F8E8M0 = 17,     /**< float8 e8m0fnu: 2^(bits - 127), no sign or zero, NaN 0xFF (MX scales) */
    CG_F4E2M1 = 18,     /**< float4 e2m1fn: +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}, the code in the low 4 bits */
    CG_I4 = 19,         /**< 4-bit signed integer, -8..7, held as an int8 */
    CG_U4 = 20,         /**< 4-bit unsigned integer, 0..15, held as a uint8 */
    CG_I2 = 21,         /**< 2-bit signed integer, -2..1, held as an int8 */
    CG_U2 = 22          /**< 2-bit unsigned integer, 0..3, held as a uint8 */
} cg_dtype;

#endif /* CLGRAPH_DTYPE_H */
