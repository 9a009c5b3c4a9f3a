/* Vectorised single-precision exp, tanh and logistic functions of the CPU
 * backend, for the operators whose time goes into transcendental functions
 * (attention scores, recurrent gates, softmax).
 *
 * One implementation written with GCC vector extensions is compiled for
 * AVX-512, AVX2 and the baseline ISA and chosen once at run time. The code
 * uses no fused multiply-add (ISO C mode keeps -ffp-contract=off), so every
 * ISA gives bit-identical results, and elements at the end of an array are
 * computed by the same vector code as the others: a value's result does not
 * depend on where it sits in the array or on the machine.
 *
 * Accuracy against the correctly rounded result, checked by tests/test_cpu_math.c
 * on millions of floats spread over the whole range: see the bounds there. Arguments outside the range the polynomial covers (overflow,
 * underflow to subnormals, infinities, NaN) are handed to libm, so the
 * special cases are exactly libm's. */
#ifndef CG_BACKEND_CPU_MATH_H
#define CG_BACKEND_CPU_MATH_H

#include <stddef.h>

/* y[i] = exp(x[i]) for i < n; y may be x. */
void cg_cpu_vexp(const float *x, float *y, size_t n);

/* y[i] = tanh(x[i]) for i < n; y may be x. */
void cg_cpu_vtanh(const float *x, float *y, size_t n);

/* y[i] = 1 / (1 + exp(-x[i])) for i < n; y may be x. Large |x| saturate to 0
 * or 1 without inf / inf. */
void cg_cpu_vsigmoid(const float *x, float *y, size_t n);

/* y[i] = erf(x[i]) for i < n; y may be x. Computed in double precision
 * and rounded once: within 1 ulp of the correctly rounded erf, 2 of libm's
 * erff. */
void cg_cpu_verf(const float *x, float *y, size_t n);

/* sum over i < n of v[i] * tanh(a[i] + b[i]): one additive-attention score.
 * The sum runs in 16 interleaved partial sums added in a fixed order, so it
 * is deterministic but not the left-to-right float sum. */
float cg_cpu_tanh_dot(const float *a, const float *b, const float *v, size_t n);

/* Softmax building blocks. y[i] = exp(x[i] - shift), computed from the exact
 * difference (as double precision would), for i < n; y may be NULL (only the
 * sum is wanted) or x. Returns the sum of the y[i] accumulated in double.
 * Without y, terms below 2^-125 are left out of the sum: when shift is the
 * maximum of x (the sum is at least 1) they cannot change it. */
double cg_cpu_exp_shift_sum(const float *x, float shift, float *y, size_t n);

/* Softmax of `rows` contiguous rows of n floats, 1 <= n <= 16, into y (y
 * may be x): the same bits as cg_cpu_max, cg_cpu_exp_shift_sum and
 * cg_cpu_mul_round give each row (a row whose maximum is -inf is all 0),
 * computed several rows at a time, for attention over a few positions. */
void cg_cpu_softmax_short(const float *x, float *y, size_t rows, size_t n);

/* y[i] = (float)((double)x[i] + c) for i < n; y may be x. */
void cg_cpu_add_round(const float *x, double c, float *y, size_t n);

/* y[i] = (float)((double)x[i] * c) for i < n; y may be x. */
void cg_cpu_mul_round(const float *x, double c, float *y, size_t n);

/* out[k] = sum over r < rows of w[r] * m[r * ld + k] for k < len, the rows
 * added in order (an attention context: weights times values). out must not
 * overlap w or m. */
void cg_cpu_weighted_rows(const float *w, const float *m, size_t ld, size_t rows, size_t len, float *out);

/* The instruction set the functions above run on: "avx512", "avx2" or
 * "baseline". CLGRAPH_CPU_MATH=baseline|avx2|avx512 (read once) forces a
 * lower one, for tests and comparisons. */
const char *cg_cpu_math_isa(void);

/* For tests: run on `isa` ("avx512", "avx2", "baseline") from now on.
 * Returns 0 when this CPU cannot run it (nothing changes), 1 otherwise. */
int cg_cpu_math_force(const char *isa);

#endif
