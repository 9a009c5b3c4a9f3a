/* NumPy broadcasting of up to three inputs against an output, reduced to
 * as few dims as possible, for the CPU loops and the OpenCL kernels of the
 * elementwise ops (elementwise.c, compare.c). */
#ifndef CG_OPS_BCAST_H
#define CG_OPS_BCAST_H

#include "ops_cl.h"
#include "dtype.h"

#include <stddef.h>
#include <stdint.h>

#define CG_BCAST_MAX_IN 3

/*
 * Dims of size 1 in the output are dropped, and neighbouring dims merge
 * whenever every input walks them contiguously or broadcasts them alike.
 * Equal shapes become one dim; [R, C] op [C] two dims with the second
 * input's outer stride 0. Strides are in elements, 0 for a broadcast dim;
 * the innermost stride of every input is 0 or 1.
 */
typedef struct cg_bcast {
    int nd, n_in;
    int64_t n[CG_MAX_DIMS];
    int64_t s[CG_BCAST_MAX_IN][CG_MAX_DIMS];
} cg_bcast;

/* The plan of inputs in[0..n_in) (n_in <= 3, concrete shapes that
 * broadcast to o). */
void cg_bcast_make(cg_bcast *p, int n_in, const cg_tensor_desc *in, const cg_tensor_desc *o);

/* Whether the plan is one dim with strides 0 or 1 (equal shapes, or inputs
 * of one element): the kernels' flat case. */
int cg_bcast_flat(const cg_bcast *p);

/* An inner loop over `rows` rows of n output elements, the rows one after
 * another in the output: input k's element i of row r is at in[k] + r *
 * rs[k] + i * s[k] elements (s[k] is 0 or 1). Rows in one call spare short
 * inner dims (a [C, 1] by [C, 4] product) a call per few elements. */
typedef void (*cg_bcast_loop)(const void *const *in, const int64_t *s, const int64_t *rs, void *out, int64_t n,
                              int64_t rows);

/* Runs `fn` over the plan: input k has elements of in_bytes[k] bytes, the
 * output of out_bytes. */
void cg_bcast_run(const cg_bcast *p, cg_bcast_loop fn, const void *const *in, const size_t *in_bytes, void *out,
                  size_t out_bytes);

/* Defines a cg_bcast_loop NAME over inputs of type TA and an output of
 * type TO computing EXPR from x and y (one branch per stride case, so the
 * compiler vectorizes the contiguous ones). */
#define CG_BCAST_LOOP2(NAME, TA, TO, EXPR)                                                               \
    static void NAME(const void *const *in_, const int64_t *s_, const int64_t *rs_, void *o_, int64_t n, \
                     int64_t rows) {                                                                     \
        const TA *a_ = in_[0], *b_ = in_[1];                                                             \
        TO *o = o_;                                                                                      \
        for (int64_t r_ = 0; r_ < rows; r_++, a_ += rs_[0], b_ += rs_[1], o += n) {                      \
            if (s_[0] && s_[1]) {                                                                        \
                for (int64_t i = 0; i < n; i++) {                                                        \
                    TA x = a_[i], y = b_[i];                                                             \
                    o[i] = (TO)(EXPR);                                                                   \
                }                                                                                        \
            } else if (s_[0]) {                                                                          \
                const TA y = b_[0];                                                                      \
                for (int64_t i = 0; i < n; i++) {                                                        \
                    TA x = a_[i];                                                                        \
                    o[i] = (TO)(EXPR);                                                                   \
                }                                                                                        \
            } else if (s_[1]) {                                                                          \
                const TA x = a_[0];                                                                      \
                for (int64_t i = 0; i < n; i++) {                                                        \
                    TA y = b_[i];                                                                        \
                    o[i] = (TO)(EXPR);                                                                   \
                }                                                                                        \
            } else {                                                                                     \
                const TA x = a_[0], y = b_[0];                                                           \
                const TO r = (TO)(EXPR);                                                                 \
                for (int64_t i = 0; i < n; i++) o[i] = r;                                                \
            }                                                                                            \
        }                                                                                                \
    }

/* Runs a binary op over call's inputs 0 and 1 into output 0 on the CPU
 * with loop `fn` (nothing for an empty output). */
cg_op_status cg_bcast_cpu2(const cg_kernel_args *a, cg_bcast_loop fn);

/* Runs binx_flat or binx_nd of ops/cl/broadcast.cl: output 0 = BOP(input
 * 0, input 1) for `bop` ("ADD", "LT", ...; the -DBOP_<bop> of the kernel),
 * with the element types of the inputs' and output's dtypes (f32 inputs
 * with float arithmetic: -DTF). */
cg_op_status cg_bcast_cl2(const cg_kernel_args *a, const char *bop);

/* cg_bcast_cl2 with further build options `extra` (NULL for none). */
cg_op_status cg_bcast_cl2_opt(const cg_kernel_args *a, const char *bop, const char *extra);

/* The OpenCL C type of dtype dt's elements (f16 and bf16 as their ushort
 * bits, bool as uchar), and its unsigned twin; NULL for an unknown dtype. */
const char *cg_bcast_cl_type(cg_op_dtype dt, int is_unsigned);

/* Sets the broadcast arguments of an OpenCL nd kernel from argument `first`
 * on: int nd, long8 dims, then one long8 of strides per input (innermost
 * dim first in each vector; unused entries 1 and 0). */
cg_op_status cg_bcast_cl_args(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint first, const cg_bcast *p);

#endif
