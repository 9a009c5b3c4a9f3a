/* Kernels of ops/cast.c, one element per work item (IDX as in
 * elementwise.cl): `cast` built for a pair of dtypes with -DFT and -DTT
 * (the element types), -DVT (the value's type on the way: float from the
 * float types, ulong from u64, long from the other integer types and bool),
 * -DLD=LD_<from> and -DST=ST_<F or I>_<to>; `cast_copy` (-DT) copies the
 * bits for the same dtype. The loads, stores and their rounding rules are
 * cl/cast_common.cl's, put in front of this source when it is embedded
 * (cl/cast_narrow.cl stores the same way). */

/* The types when the source is built whole: one pair. */
#ifndef FT
#define FT float
#define TT int
#define VT float
#define LD LD_f32
#define ST ST_F_i32
#endif
#ifndef T
#define T uint
#endif

#if CG_WANT(cast)
__kernel void cast(__global const FT *xp, __global TT *yp, long n) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    VT v = LD(xp, i);
    ST(yp, i, v);
}
#endif

/* The same dtype: the bits as they are (a NaN's payload too). */
#if CG_WANT(cast_copy)
__kernel void cast_copy(__global const T *xp, __global T *yp, long n) {
    IDX i = (IDX)get_global_id(0);
    if (i < (IDX)n) yp[i] = xp[i];
}
#endif
