/* The integer element types of the arithmetic ops (i8, u8, i16, u16, i32,
 * u32, i64, u64; bool is not one) and the integer unary kernels neg, abs,
 * sign and bitwise_not share (int_unary.c, cl/elementwise.cl un_int). */
#ifndef CG_OPS_INT_OPS_H
#define CG_OPS_INT_OPS_H

#include "ops_common.h"

/* 1 for the eight integer dtypes, else 0 (f32, f16, bf16, bool). */
int cg_ops_is_int(cg_op_dtype t);

/* 1 for u8, u16, u32 and u64. */
int cg_ops_is_unsigned(cg_op_dtype t);

/* The arithmetic dtypes in the order of the elementwise ops' loop tables:
 * 0 f32, 1 i32, 2 i64, 3 i8, 4 u8, 5 i16, 6 u16, 7 u32, 8 u64; -1 for any
 * other. */
#define CG_OPS_ARITH_SLOTS 9
int cg_ops_arith_slot(cg_op_dtype t);

/* "f32, i8, u8, i16, u16, i32, u32, i64 or u64" (with_f32) or the same
 * without f32: what the arithmetic ops name in their messages. */
const char *cg_ops_int_names(int with_f32);

/* The OpenCL build options of an integer dtype for the kernels that
 * compute on it (broadcast.cl, elementwise.cl un_int): -DTC, the type
 * computed in (int for the 8- and 16-bit types, which OpenCL C promotes
 * anyway, else the element type), -DTW, the unsigned type arithmetic wraps
 * in (uint, or the element's own unsigned type), and -DTSIGNED for a signed
 * type. "" for any other dtype. */
const char *cg_ops_cl_int_options(cg_op_dtype t);

/* The integer unary ops: y = -x (wrapping: -MIN is MIN; unsigned x gives
 * 2^n - x), |x| (|MIN| is MIN; unsigned x itself), sign (-1, 0 or 1;
 * unsigned 0 or 1), ~x. */
typedef enum cg_ops_int_unary { CG_IU_NEG, CG_IU_ABS, CG_IU_SIGN, CG_IU_NOT } cg_ops_int_unary;

/* Runs integer unary op `op` over input 0 (any integer dtype) into output
 * 0, on the CPU or on OpenCL. In place is allowed. */
cg_op_status cg_ops_int_unary_cpu(const cg_kernel_args *a, cg_ops_int_unary op);
cg_op_status cg_ops_int_unary_cl(const cg_kernel_args *a, cg_ops_int_unary op);

/* A conformance case of a unary op on integer dtype number k (0..7, in
 * the order of the CPU tables: u8, i8, u16, i16, u32, i32, u64, i64) over
 * the whole range of the type, shape {nd, d}; 0 for k past the last. */
int32_t cg_ops_int_unary_case(int32_t k, int nd, const int64_t *d, const char *attrs, cg_conform_case *c);

#endif
