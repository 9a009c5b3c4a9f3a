/* A sort that takes its comparator's context as an argument, so that no
 * caller has to hand its keys over through a file-scope variable (qsort's
 * comparator has no context, and qsort_r is not C11). */
#include <string.h>

#include "s2s.h"

/* glibc's qsort, the one the decoders used before, is this merge sort
 * whenever it can get the memory: halves of n / 2 and n - n / 2, sorted
 * top-down, merged with the left element first on a tie. Doing the very
 * same comparisons keeps every order exactly as it was, equal keys and a
 * comparator that is no total order (a NaN score) included. */
void cg_s2s_sort(void *base, size_t n, size_t size, s2s_cmp_fn cmp, void *ctx, void *tmp) {
    if (n <= 1) return;
    size_t n1 = n / 2, n2 = n - n1;
    char *b1 = base, *b2 = (char *)base + n1 * size, *t = tmp;
    cg_s2s_sort(b1, n1, size, cmp, ctx, tmp);
    cg_s2s_sort(b2, n2, size, cmp, ctx, tmp);
    while (n1 > 0 && n2 > 0) {
        if (cmp(b1, b2, ctx) <= 0) {
            memcpy(t, b1, size);
            b1 += size;
            n1--;
        } else {
            memcpy(t, b2, size);
            b2 += size;
            n2--;
        }
        t += size;
    }
    /* What is left of the right half is already in place. */
    if (n1 > 0) memcpy(t, b1, n1 * size);
    memcpy(base, tmp, (n - n2) * size);
}
