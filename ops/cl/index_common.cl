/* The index reads of cl/gather.cl (gather_elements, scatter_lines) and
 * cl/index.cl (gather_nd, scatter_nd), put in front of both when they are
 * embedded (ops/meson.build): each is a program of its own, and all four
 * must take an index as the CPU kernels do, so they share one copy.
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
