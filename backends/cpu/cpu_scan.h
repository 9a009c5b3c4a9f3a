/* Vectorised scans over float arrays for selection (top-k, argmax) and the
 * maxima of softmax rows. Results are exact (comparisons only), so they do
 * not depend on the ISA the function runs on. */
#ifndef CG_BACKEND_CPU_SCAN_H
#define CG_BACKEND_CPU_SCAN_H

#include <stddef.h>

/* The largest of x[0..n), or NaN if any element is NaN; -inf when n == 0. */
float cg_cpu_max(const float *x, size_t n);

/* The first i < n with x[i] > t (false for NaN elements), or n if none. */
size_t cg_cpu_first_above(const float *x, size_t n, float t);

#endif
