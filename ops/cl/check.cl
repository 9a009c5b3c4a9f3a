/* The check of an index or length input's values, for kernels that do not
 * check their own (plugin.h, CG_CHECK_*): one work-item per value.
 *
 * Build options: -DIDX=int or -DIDX=long (index type). */

/* Records the first value of v[0..n) outside [lo, hi] that a work-item
 * finds, as input `input` of the node whose check words start at
 * check[word]. */
#if CG_WANT(check_range)
__kernel void check_range(__global const int *v, IDX n, int lo, int hi, __global int *check, int word,
                          int input) {
    IDX i = (IDX)get_global_id(0);
    if (i >= n) return;
    int x = v[i];
    if (x < lo || x > hi) cg_check_report(check, word, input, x, (long)i, lo, hi);
}
#endif
