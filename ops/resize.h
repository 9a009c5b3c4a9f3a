/* resize's sampling tables (resize_table.c): for every axis and output
 * position, the input positions read and their weights, computed on the
 * host in double precision as ONNX's reference does, so that every device
 * samples the same positions. */
#ifndef CG_OPS_RESIZE_H
#define CG_OPS_RESIZE_H

#include "ops_common.h"

#include <stdint.h>

/* resize's attributes, in declaration order. */
enum {
    RS_SIZES,
    RS_SCALES,
    RS_ROI,
    RS_MODE,
    RS_COORD,
    RS_NEAREST,
    RS_CUBIC_A,
    RS_EXCLUDE,
    RS_EXTRAP,
    RS_ANTIALIAS,
    RS_N_ATTRS
};
enum { RS_NEAREST_MODE, RS_LINEAR, RS_CUBIC };
/* The most inputs one output position reads along an axis (antialias). */
#define RS_MAX_TAPS 64

/* The parsed attributes of one call (concrete dims). */
typedef struct rs_params {
    int nd, mode, coord, nearest, exclude, antialias;
    double a, extrap;
    int64_t in[CG_MAX_DIMS], out[CG_MAX_DIMS];
    double scale[CG_MAX_DIMS], roi[2 * CG_MAX_DIMS];
} rs_params;

/* Reads and checks call's attributes against input 0 and the dims in
 * `sizes` (x's rank); a message in call->err and CG_OP_ERROR when invalid.
 * Symbolic dims are skipped (checked again at plan time). */
cg_op_status cg_rs_params(const cg_op_call *call, rs_params *p);

/*
 * The table of every axis: taps[a] entries per output position (0: the
 * axis is left as it is), each two int32 words, the input position (-1:
 * the output is the extrapolation value) and the weight's float bits,
 * from word base[a]. Returns the words of all axes; writes them to tab
 * when it is not NULL.
 */
int64_t cg_rs_table(const rs_params *p, int32_t *taps, int64_t *base, int32_t *tab);

#endif
