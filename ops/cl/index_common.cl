/* The index reads and scatter updates of cl/gather.cl (gather_elements,
 * scatter_lines) and cl/index.cl (gather_nd, scatter_nd), put in front of
 * both when they are embedded (ops/meson.build): each is a program of its
 * own, and all four must take an index and combine an update as the CPU
 * kernels do, so they share one copy.
 *
 * Elements of any dtype are moved as the unsigned type T of their size
 * (-DT=uchar, ushort, uint or ulong; uint by default). */

#ifndef T
#define T uint
#endif

/* Clamps a long into an int for the check words. */
inline int cg_clamp_int(long v) { return v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : (int)v; }

/* Index value v along an axis of len positions, negative counting from the
 * end; -1 for a value outside [-len, len), which is recorded in the check
 * words as input 1's at element pos when `report` (the message the CPU
 * kernels give: cg_op_fail_range). */
inline long cg_index_wrap(long v, long len, int report, long pos, __global int *check, int word) {
    if (v < -len || v >= len) {
        if (report) cg_check_report(check, word, 1, cg_clamp_int(v), pos, cg_clamp_int(-len), cg_clamp_int(len - 1));
        return -1;
    }
    return v < 0 ? v + len : v;
}

/* The scatter kernels' update of dst[po] by up[pu] with -DSC_RED: 0 writes
 * it; 1 add, 2 mul, 3 max and 4 min combine it in type TA (f32, i32 or
 * i64), sums and products in TU (unsigned for integers so that they wrap,
 * as ops/scatter_reduce.c does); with -DSC_FLOAT=1 (f32) a NaN already
 * there wins max and min (tested for floats only: compilers warn of an
 * integer's c != c). */
#ifndef SC_RED
#define SC_RED 0
#endif
#ifndef SC_FLOAT
#define SC_FLOAT 0
#endif
#if SC_FLOAT
#define SC_NAN(v) isnan(v)
#else
#define SC_NAN(v) 0
#endif
#ifndef TA
#define TA uint
#endif
#ifndef TU
#define TU uint
#endif
inline void cg_scatter_update(__global T *dst, __global const T *up, IDX po, IDX pu) {
#if SC_RED == 0
    dst[po] = up[pu];
#else
    __global TA *o = (__global TA *)dst;
    const TA u = ((__global const TA *)up)[pu], c = o[po];
#if SC_RED == 1
    o[po] = (TA)((TU)c + (TU)u);
#elif SC_RED == 2
    o[po] = (TA)((TU)c * (TU)u);
#elif SC_RED == 3
    o[po] = c > u || SC_NAN(c) ? c : u;
#else
    o[po] = c < u || SC_NAN(c) ? c : u;
#endif
#endif
}
