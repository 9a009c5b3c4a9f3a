/* Function multiversioning for the CPU kernels' plain loops: GCC compiles a
 * function marked CG_CPU_CLONES for AVX2 and for the baseline ISA and picks
 * one when the library loads (ifunc). The project builds in ISO C mode
 * (-ffp-contract=off) and never with -ffast-math, so the compiler neither
 * fuses multiply-adds nor reorders arithmetic in either copy: every clone
 * gives the same bits. Not under ThreadSanitizer (GCC instruments the ifunc
 * resolver, which runs before the sanitizer's runtime is up) nor on other
 * compilers or targets. */
#ifndef CG_BACKEND_CPU_CLONES_H
#define CG_BACKEND_CPU_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define CG_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CG_CPU_CLONES
#endif

#endif
