/* The cast op's conversions to and from the narrow types of ABI 1.6
 * (float8, f4e2m1, i4, u4, i2, u2; base/narrow.h): called by ops/cast.c
 * when either side of a cast is one. */
#ifndef CG_OPS_CAST_NARROW_H
#define CG_OPS_CAST_NARROW_H

#include "ops_common.h"

/* 1 when a cast from `from` to `to` is this file's (either is narrow). */
int cg_cast_is_narrow(cg_op_dtype from, cg_op_dtype to);

/* f8e8m0's rounding named by cast's attribute round_mode ("up", "down",
 * "nearest"), or -1 for another string. */
int cg_cast_round_mode(const char *s);

/* The kernels: `saturate` (float8 targets) and `round` (f8e8m0 targets,
 * cg_e8m0_round) are the node's attributes. */
cg_op_status cg_cast_narrow_cpu(const cg_kernel_args *a, int saturate, int round);
cg_op_status cg_cast_narrow_cl(const cg_kernel_args *a, int saturate, int round);

/* Conformance cases i = 0, 1, ...: every narrow type to and from every
 * dtype, both saturate modes and every e8m0 rounding; 0 past the last. */
int32_t cg_cast_narrow_conform(int32_t i, cg_conform_case *c);

#endif
