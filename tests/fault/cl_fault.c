/* OpenCL fault shim: an LD_PRELOAD library that makes the Nth call of one
 * OpenCL entry point fail, to test that clgraph turns every OpenCL failure
 * into one clear error (or recovers) without crashing or leaking.
 *
 *   CG_FAULT_FN=clEnqueueWriteBuffer CG_FAULT_N=5 LD_PRELOAD=libcl_fault.so clgraph ...
 *   CG_FAULT_COUNTS=FILE  appends "<entry point> <calls>" per entry point at exit
 *
 * Every other call goes to the real entry point (dlsym RTLD_NEXT, the ICD
 * loader). A failing call returns CL_OUT_OF_RESOURCES (CL_BUILD_PROGRAM_FAILURE
 * for clBuildProgram, CL_INVALID_BINARY for clCreateProgramWithBinary), or NULL
 * with that code in *errcode_ret, and does nothing. clRetain* / clRelease*
 * are not wrapped: they fail only on an invalid object, and nothing can
 * recover a release that failed. Under ASan add verify_asan_link_order=0 to
 * ASAN_OPTIONS (the shim comes before the ASan runtime). */
#define _GNU_SOURCE
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
#define CG_FAULT_ENTRY(name) F_##name,
#include "cl_fault_entries.h"
#undef CG_FAULT_ENTRY
    N_ENTRIES
};

static const char *const entry_names[N_ENTRIES] = {
#define CG_FAULT_ENTRY(name) #name,
#include "cl_fault_entries.h"
#undef CG_FAULT_ENTRY
};

static atomic_long calls[N_ENTRIES];
static int target = -1; /* the entry point to fail, -1: none */
static long target_n;   /* the call to fail, 1-based */

__attribute__((constructor)) static void fault_init(void) {
    const char *fn = getenv("CG_FAULT_FN"), *n = getenv("CG_FAULT_N");
    if (!fn || !n) return;
    for (int i = 0; i < N_ENTRIES; i++)
        if (!strcmp(fn, entry_names[i])) target = i;
    target_n = atol(n);
    if (target < 0) fprintf(stderr, "cl_fault: CG_FAULT_FN=%s is not an entry point the shim wraps\n", fn);
}

__attribute__((destructor)) static void fault_fini(void) {
    const char *path = getenv("CG_FAULT_COUNTS");
    if (!path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    for (int i = 0; i < N_ENTRIES; i++) {
        long c = atomic_load(&calls[i]);
        if (c) fprintf(f, "%s %ld\n", entry_names[i], c);
    }
    fclose(f);
}

/* Counts the call; 1 when it is the one to fail. */
static int fail_now(int e) {
    long n = atomic_fetch_add(&calls[e], 1) + 1;
    return e == target && n == target_n;
}

static void *real(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "cl_fault: no real %s\n", name);
        abort();
    }
    return p;
}

#define REAL(name) ((__typeof__(&name))real(#name))
#define FAIL_CODE(name)                                                   \
    (F_##name == F_clBuildProgram              ? CL_BUILD_PROGRAM_FAILURE \
     : F_##name == F_clCreateProgramWithBinary ? CL_INVALID_BINARY        \
                                               : CL_OUT_OF_RESOURCES)
/* An entry point returning cl_int. */
#define WRAP_INT(name, params, args)                    \
    CL_API_ENTRY cl_int CL_API_CALL name params {       \
        if (fail_now(F_##name)) return FAIL_CODE(name); \
        return REAL(name) args;                         \
    }
/* An entry point returning an object, its error code in `err`. */
#define WRAP_OBJ(type, name, params, args)      \
    CL_API_ENTRY type CL_API_CALL name params { \
        if (fail_now(F_##name)) {               \
            if (err) *err = FAIL_CODE(name);    \
            return NULL;                        \
        }                                       \
        return REAL(name) args;                 \
    }

WRAP_INT(clGetPlatformIDs, (cl_uint n, cl_platform_id *p, cl_uint *np), (n, p, np))
WRAP_INT(clGetPlatformInfo, (cl_platform_id p, cl_platform_info w, size_t s, void *v, size_t *r), (p, w, s, v, r))
WRAP_INT(clGetDeviceIDs, (cl_platform_id p, cl_device_type t, cl_uint n, cl_device_id *d, cl_uint *nd),
         (p, t, n, d, nd))
WRAP_INT(clGetDeviceInfo, (cl_device_id d, cl_device_info w, size_t s, void *v, size_t *r), (d, w, s, v, r))
WRAP_OBJ(cl_context, clCreateContext,
         (const cl_context_properties *pr, cl_uint n, const cl_device_id *d,
          void(CL_CALLBACK *cb)(const char *, const void *, size_t, void *), void *u, cl_int *err),
         (pr, n, d, cb, u, err))
WRAP_OBJ(cl_command_queue, clCreateCommandQueue,
         (cl_context c, cl_device_id d, cl_command_queue_properties pr, cl_int *err), (c, d, pr, err))
WRAP_INT(clGetCommandQueueInfo, (cl_command_queue q, cl_command_queue_info w, size_t s, void *v, size_t *r),
         (q, w, s, v, r))
WRAP_OBJ(cl_mem, clCreateBuffer, (cl_context c, cl_mem_flags f, size_t s, void *h, cl_int *err), (c, f, s, h, err))
WRAP_OBJ(cl_mem, clCreateSubBuffer, (cl_mem b, cl_mem_flags f, cl_buffer_create_type t, const void *i, cl_int *err),
         (b, f, t, i, err))
WRAP_INT(clGetMemObjectInfo, (cl_mem m, cl_mem_info w, size_t s, void *v, size_t *r), (m, w, s, v, r))
WRAP_OBJ(cl_program, clCreateProgramWithSource, (cl_context c, cl_uint n, const char **s, const size_t *l, cl_int *err),
         (c, n, s, l, err))
WRAP_OBJ(cl_program, clCreateProgramWithBinary,
         (cl_context c, cl_uint n, const cl_device_id *d, const size_t *l, const unsigned char **b, cl_int *st,
          cl_int *err),
         (c, n, d, l, b, st, err))
WRAP_INT(clBuildProgram,
         (cl_program p, cl_uint n, const cl_device_id *d, const char *o, void(CL_CALLBACK *cb)(cl_program, void *),
          void *u),
         (p, n, d, o, cb, u))
WRAP_INT(clGetProgramInfo, (cl_program p, cl_program_info w, size_t s, void *v, size_t *r), (p, w, s, v, r))
WRAP_INT(clGetProgramBuildInfo, (cl_program p, cl_device_id d, cl_program_build_info w, size_t s, void *v, size_t *r),
         (p, d, w, s, v, r))
WRAP_OBJ(cl_kernel, clCreateKernel, (cl_program p, const char *n, cl_int *err), (p, n, err))
WRAP_INT(clGetKernelInfo, (cl_kernel k, cl_kernel_info w, size_t s, void *v, size_t *r), (k, w, s, v, r))
WRAP_INT(clGetKernelWorkGroupInfo,
         (cl_kernel k, cl_device_id d, cl_kernel_work_group_info w, size_t s, void *v, size_t *r), (k, d, w, s, v, r))
WRAP_INT(clSetKernelArg, (cl_kernel k, cl_uint i, size_t s, const void *v), (k, i, s, v))
WRAP_INT(clEnqueueNDRangeKernel,
         (cl_command_queue q, cl_kernel k, cl_uint d, const size_t *o, const size_t *g, const size_t *l, cl_uint n,
          const cl_event *w, cl_event *e),
         (q, k, d, o, g, l, n, w, e))
WRAP_INT(clEnqueueWriteBuffer,
         (cl_command_queue q, cl_mem m, cl_bool b, size_t o, size_t s, const void *h, cl_uint n, const cl_event *w,
          cl_event *e),
         (q, m, b, o, s, h, n, w, e))
WRAP_INT(clEnqueueReadBuffer,
         (cl_command_queue q, cl_mem m, cl_bool b, size_t o, size_t s, void *h, cl_uint n, const cl_event *w,
          cl_event *e),
         (q, m, b, o, s, h, n, w, e))
WRAP_INT(clEnqueueCopyBuffer,
         (cl_command_queue q, cl_mem a, cl_mem b, size_t oa, size_t ob, size_t s, cl_uint n, const cl_event *w,
          cl_event *e),
         (q, a, b, oa, ob, s, n, w, e))
WRAP_INT(clFinish, (cl_command_queue q), (q))
WRAP_INT(clWaitForEvents, (cl_uint n, const cl_event *e), (n, e))
