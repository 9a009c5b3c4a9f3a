/*
 * clgraph element types, shared by the runtime API (clgraph.h) and the
 * operator plugin ABI (plugin.h); self-contained so that plugin.h stays so.
 *
 * The numeric values are part of the plugin ABI (cg_tensor_desc.dtype holds
 * one): existing values never change and new types are only appended. Every
 * type is stored little-endian in files; in memory it is the host's order.
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
    CG_U64 = 12  /**< 64-bit unsigned integer */
} cg_dtype;

#endif /* CLGRAPH_DTYPE_H */
