/* Internals of the OpenCL SGEMM (cl_gemm.c) exposed for its tests and for
 * benchmarks. Not part of the backend interface (cl_backend.h). */
#ifndef CG_BACKEND_OPENCL_GEMM_INTERNAL_H
#define CG_BACKEND_OPENCL_GEMM_INTERNAL_H

#include <stdint.h>

#include "backends/opencl/cl_backend.h"

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
    uint64_t own_calls;        /* products computed by the backend's kernels */
    uint64_t clblast_calls;    /* products computed by CLBlast */
    uint64_t clblast_failures; /* CLBlast errors that fell back to the own kernels */
} cg_cl_gemm_stats;
void cg_cl_gemm_stats_get(cg_cl_gemm_stats *out);
void cg_cl_gemm_test_reset_stats(void);

/* Overrides the mode of every later call; CG_GEMM_FROM_ENV reads
 * CLGRAPH_GEMM again on the next call. */
void cg_cl_gemm_test_set_mode(int mode);

/* Forgets every in-memory choice, so the next call reads gemm-choices.txt
 * again (as a new process would). */
void cg_cl_gemm_test_forget(void);

/* The choice in memory for a shape on d (CG_GEMM_CHOICE_*). */
int cg_cl_gemm_test_choice(cg_cl_device *d, int trans_a, int trans_b, int64_t m, int64_t n,
                           int64_t k);

/* The path of the choices file ("" when there is no cache directory). */
const char *cg_cl_gemm_choices_path(char *buf, size_t size);

#endif
