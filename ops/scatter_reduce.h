/* What scatter_elements and scatter_nd share: the reduction attribute
 * (none, add, mul, max, min), its checks, the combining of updates on the
 * CPU, and for OpenCL the copy of x and the build options of
 * cl/index_common.cl's cg_scatter_update. One copy, so that both ops
 * combine updates alike on every device. */
#ifndef CG_OPS_SCATTER_REDUCE_H
#define CG_OPS_SCATTER_REDUCE_H

#include "ops_cl.h"

#include <stddef.h>
#include <stdint.h>

/* The reductions, in the order of their names (and -DSC_RED's values). */
enum { CG_SCATTER_NONE, CG_SCATTER_ADD, CG_SCATTER_MUL, CG_SCATTER_MAX, CG_SCATTER_MIN, CG_SCATTER_N_RED };

/* The attribute definition both ops give (docs included). */
#define CG_SCATTER_ATTR_REDUCTION                                                  \
    CG_ATTR(.name = "reduction", .type = CG_ATTR_STRING, .default_string = "none", \
            .doc = "\"none\" (replace), \"add\", \"mul\", \"max\" or \"min\" (combine with what is there)")

/* The reduction named `s`, or -1 for another string or NULL. */
int cg_scatter_reduction(const char *s);

/* The inference checks of the reduction attribute `s` and x's dtype, in the
 * order both ops make them: a reduction's name, a dtype of known size, a
 * dtype a reduction can combine (f32, i32, i64). */
cg_op_status cg_scatter_check(cg_op_call *call, const char *s, cg_op_dtype x);

/* Element i < n of o replaced by (CG_SCATTER_NONE) or combined with element
 * i of u, elements of b bytes of dtype dt, in order; sums and products of
 * integers wrap around. */
void cg_scatter_combine(cg_op_dtype dt, int red, size_t b, int64_t n, char *o, const char *u);

/* Copies input 0 (x) to output 0 unless they are one buffer (copy_elems of
 * cl/gather.cl; topt: cg_ops_cl_elem_type_option of x's element size). */
cg_op_status cg_scatter_cl_copy_x(const cg_kernel_args *a, int wide, const char *topt);

/* Writes the build options of a scatter kernel into buf: topt, then TA, TU,
 * SC_RED and SC_FLOAT of cg_scatter_update for dtype dt and reduction red. */
void cg_scatter_cl_options(char *buf, size_t size, const char *topt, cg_op_dtype dt, int red);

#endif
