/* Internals of the OpenCL SGEMM (cl_gemm.c, cl_gemm_choice.c,
 * cl_gemm_kernels.c) exposed for its tests and for benchmarks. Not part of
 * the backend interface (cl_backend.h); what those files share among
 * themselves is in cl_gemm_impl.h. */
#ifndef CG_BACKEND_OPENCL_GEMM_INTERNAL_H
#define CG_BACKEND_OPENCL_GEMM_INTERNAL_H

#include <stdint.h>

#include "opencl/cl_backend.h"

/* Implementation modes: CLGRAPH_GEMM=auto|own|clblast. */
enum {
    CG_GEMM_FROM_ENV = -1, /* read CLGRAPH_GEMM (again) */
    CG_GEMM_AUTO = 0,      /* measured choice per device and shape (default) */
    CG_GEMM_OWN = 1,       /* always the backend's kernels */
    CG_GEMM_CLBLAST = 2    /* always CLBlast; its errors are returned */
};

/* Choices, as kept in memory and in gemm-choices.txt. */
enum { CG_GEMM_CHOICE_NONE = 0, CG_GEMM_CHOICE_OWN = 1, CG_GEMM_CHOICE_CLBLAST = 2 };

/* Counters since start (or the last cg_cl_gemm_test_reset_stats). */
typedef struct cg_cl_gemm_stats {
    uint64_t measurements;     /* shapes timed, own kernels against CLBlast */
    uint64_t file_entries;     /* choices read from gemm-choices.txt */
    uint64_t file_writes;      /* lines appended to gemm-choices.txt */
    uint64_t own_calls;        /* runs of the backend's kernels (timing runs included) */
    uint64_t clblast_calls;    /* runs of CLBlast (timing runs included) */
    uint64_t clblast_failures; /* CLBlast errors that fell back to the own kernels */
} cg_cl_gemm_stats;
void cg_cl_gemm_stats_get(cg_cl_gemm_stats *out);
void cg_cl_gemm_test_reset_stats(void);

/* Overrides the mode of every later call; CG_GEMM_FROM_ENV reads
 * CLGRAPH_GEMM again on the next call. */
void cg_cl_gemm_test_set_mode(int mode);

/* Number of calls of an unmeasured GEMM shape (m, n > 1) before it is
 * timed (at that call); 0 restores the default (16). */
void cg_cl_gemm_test_set_measure_after(int calls);

/* Forgets every in-memory choice, so the next call reads gemm-choices.txt
 * again (as a new process would). */
void cg_cl_gemm_test_forget(void);

/* While on, every CLBlast call fails with CLBlastNotImplemented (without
 * calling CLBlast), to exercise the fallback to the own kernels. */
void cg_cl_gemm_test_fail_clblast(int on);

/* The choice in memory for a shape on d (CG_GEMM_CHOICE_*). */
int cg_cl_gemm_test_choice(cg_cl_device *d, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k);

/* Drops the SGEMM state of d (its kernels and the context reference that
 * keeps them valid). The device's last release should call it: without it
 * a released device's context stays alive until the process ends. A later
 * cg_cl_sgemm on a device rebuilds the state. */
void cg_cl_gemm_device_released(cg_cl_device *d);

/* "own=<16 hex digits>": the identity of the own kernels (gemm.cl's text
 * and how shapes are routed to them), the 7th field of every line of the
 * choices file; lines with another one were measured against other
 * kernels and are ignored. */
const char *cg_cl_gemm_own_id(void);

/* The path of the choices file ("" when there is no cache directory). */
const char *cg_cl_gemm_choices_path(char *buf, size_t size);

#endif
