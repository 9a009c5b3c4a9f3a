#include "cpu_scan.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* 16 floats per step: one zmm, two ymm or four xmm registers. */
typedef float vf __attribute__((vector_size(64)));
typedef int32_t vi __attribute__((vector_size(64)));

/* GCC picks the widest of these the CPU has when the library loads (ifunc);
 * every clone computes the same thing. Not under ThreadSanitizer: GCC
 * instruments the ifunc resolver, which runs during relocation, before the
 * sanitizer's runtime is up, and the process dies before main. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CLONES
#endif

/* Vectors go through pointers, never by value: a 64-byte vector parameter or
 * return value makes GCC print its "ABI for passing parameters with 64-byte
 * alignment has changed" note on every build (even always inlined, and no
 * -Wpsabi pragma silences the note). */
static inline __attribute__((always_inline)) void load(vf *v, const float *p) { memcpy(v, p, sizeof *v); }

/* Any lane set, by shuffles (indexing a lane would spill the vector). */
static inline __attribute__((always_inline)) int any(const vi *mp) {
    vi m = *mp;
    m |= __builtin_shufflevector(m, m, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
    m |= __builtin_shufflevector(m, m, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3);
    m |= __builtin_shufflevector(m, m, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1);
    m |= __builtin_shufflevector(m, m, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0);
    return m[0] != 0;
}

/* Four 4-float vectors (16 floats a step): a register on every ISA. A
 * 16-float vector type would be split into registers by GCC, and on AVX2
 * and SSE2 it turned its comparisons into scalar code (20 us for a softmax
 * of 48 rows of 16). */
typedef float vf4 __attribute__((vector_size(16)));
typedef int32_t vi4 __attribute__((vector_size(16)));

CLONES float cg_cpu_max(const float *x, size_t n) {
    float mx = -INFINITY;
    size_t i = 0;
    if (n >= 16) {
        vf4 acc[4];
        vi4 nan = {0};
        memcpy(acc, x, sizeof acc);
        for (i = 16; i + 16 <= n; i += 16) {
            vf4 v[4];
            memcpy(v, x + i, sizeof v);
            for (int k = 0; k < 4; k++) {
                vi4 gt = v[k] > acc[k];
                acc[k] = (vf4)((gt & (vi4)v[k]) | (~gt & (vi4)acc[k]));
                nan |= v[k] != v[k];
            }
        }
        for (int k = 0; k < 4; k++) nan |= acc[k] != acc[k];
        if ((nan[0] | nan[1] | nan[2] | nan[3]) != 0) return NAN;
        float lanes[16];
        memcpy(lanes, acc, sizeof lanes);
        for (int j = 0; j < 16; j++)
            if (lanes[j] > mx) mx = lanes[j];
    }
    for (; i < n; i++) {
        if (x[i] != x[i]) return NAN;
        if (x[i] > mx) mx = x[i];
    }
    return mx;
}

CLONES size_t cg_cpu_first_above(const float *x, size_t n, float t) {
    size_t i = 0;
    const vf tv = (vf){0} + t;
    for (; i + 16 <= n; i += 16) {
        vf v;
        load(&v, x + i);
        vi gt = v > tv;
        if (any(&gt)) break;
    }
    for (; i < n; i++)
        if (x[i] > t) return i;
    return n;
}
