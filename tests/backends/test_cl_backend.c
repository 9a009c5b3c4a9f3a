/* The OpenCL backend on PoCL: device listing and lookup, a kernel built and
 * run, the program cache (cold, warm, damaged, stale, unwritable; binaries
 * written when built or at release), one program per kernel for sources
 * that select kernels, build errors, build warnings kept off stderr unless
 * asked for, kernel object reuse, and child
 * processes with no ICD and with two PoCL devices.
 *
 * Runs without fork (PoCL initialised before fork() hangs the child), so
 * every test gets its own cache directory and drops the in-memory cache. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "opencl/cl_backend.h"
#include "opencl/cl_internal.h"
#include "clgraph/clgraph.h"
#include "test_util.h"

extern char **environ;

static const char *k_axpb =
    "__kernel void axpb(__global float *y, __global const float *x, float a, float b, int n) {\n"
    "    int i = (int)get_global_id(0);\n"
    "    if (i < n) y[i] = a * x[i] + b;\n"
    "}\n"
    "__kernel void fill(__global float *y, float v, int n) {\n"
    "    int i = (int)get_global_id(0);\n"
    "    if (i < n) y[i] = v;\n"
    "}\n";

/* ---- per-test cache directory ---- */

static char g_tmp[256];
static char g_cache[512];

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void set_cache_dir(const char *dir) {
    setenv("CLGRAPH_CACHE_DIR", dir, 1);
    cg_cache_test_reset_dir();
}

static void setup(void) {
    snprintf(g_tmp, sizeof g_tmp, "/tmp/cg_cl_test_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g_tmp));
    snprintf(g_cache, sizeof g_cache, "%s/cache/clgraph", g_tmp);
    set_cache_dir(g_cache);
}

static void teardown(void) {
    nftw(g_tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    unsetenv("CLGRAPH_CACHE_DIR");
    cg_cache_test_reset_dir();
}

/* Device 0, with a cold in-memory program cache, writing binaries when it
 * builds them (the cache tests check the files right away; PoCL defers
 * them to the release by default, see cache_deferred_until_release). */
static cg_cl_device *open0(void) {
    ck_assert_msg(cg_cl_device_count() > 0, "no OpenCL device: %s", cg_cl_unavailable_reason());
    cg_cl_device *d = NULL;
    ck_assert_msg(cg_cl_device_open(0, &d) == CG_OK, "%s", cg_last_error());
    cg_cl_test_drop_memory_cache(d);
    cg_cl_test_set_defer_stores(d, 0);
    return d;
}

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static long file_size(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

/* Runs y = a x + b over n elements with the given kernel; checks the result. */
static void run_axpb(cg_cl_device *d, cl_kernel k, int n, size_t local) {
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(y);
    for (int i = 0; i < n; i++) x[i] = (float)i * 0.5f - 3.0f;
    cl_mem bx, by;
    ck_assert_msg(cg_cl_alloc(d, sizeof(float) * (size_t)n, &bx) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_cl_alloc(d, sizeof(float) * (size_t)n, &by) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_cl_write(d, bx, 0, sizeof(float) * (size_t)n, x, 1) == CG_OK, "%s", cg_last_error());
    float a = 2.0f, b = 1.0f;
    ck_assert_int_eq(clSetKernelArg(k, 0, sizeof by, &by), CL_SUCCESS);
    ck_assert_int_eq(clSetKernelArg(k, 1, sizeof bx, &bx), CL_SUCCESS);
    ck_assert_int_eq(clSetKernelArg(k, 2, sizeof a, &a), CL_SUCCESS);
    ck_assert_int_eq(clSetKernelArg(k, 3, sizeof b, &b), CL_SUCCESS);
    ck_assert_int_eq(clSetKernelArg(k, 4, sizeof n, &n), CL_SUCCESS);
    size_t g = (size_t)n;
    ck_assert_msg(cg_cl_launch(d, k, 1, &g, local ? &local : NULL, "axpb") == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_cl_read(d, by, 0, sizeof(float) * (size_t)n, y) == CG_OK, "%s", cg_last_error());
    for (int i = 0; i < n; i++) ck_assert_float_eq(y[i], 2.0f * x[i] + 1.0f);
    clReleaseMemObject(bx);
    clReleaseMemObject(by);
    free(x);
    free(y);
}

static cg_cl_cache_stats stats(void) {
    cg_cl_cache_stats s;
    cg_cl_cache_stats_get(&s);
    return s;
}

/* ---- devices ---- */

START_TEST(device_listing) {
    int n = cg_cl_device_count();
    ck_assert_msg(n >= 1, "no OpenCL device: %s", cg_cl_unavailable_reason());
    ck_assert_ptr_null(cg_cl_unavailable_reason());
    ck_assert_ptr_null(cg_cl_device_info(-1));
    ck_assert_ptr_null(cg_cl_device_info(n));
    int pocl = 0;
    for (int i = 0; i < n; i++) {
        const cg_cl_info *in = cg_cl_device_info(i);
        ck_assert_ptr_nonnull(in);
        ck_assert_int_eq(in->index, i);
        ck_assert(in->name[0] && in->vendor[0] && in->platform[0] && in->driver[0]);
        ck_assert_msg(!strncmp(in->version, "OpenCL ", 7), "%s", in->version);
        ck_assert_msg(!strncmp(in->c_version, "OpenCL C ", 9), "%s", in->c_version);
        ck_assert_msg(!strncmp(in->platform_version, "OpenCL ", 7), "%s", in->platform_version);
        ck_assert_uint_ge(in->compute_units, 1);
        ck_assert_uint_gt(in->global_mem, 0);
        ck_assert_uint_gt(in->local_mem, 0);
        ck_assert_uint_gt(in->max_alloc, 0);
        ck_assert_uint_le(in->max_alloc, in->global_mem);
        ck_assert_uint_ge(in->max_work_group, 1);
        ck_assert_uint_ge(in->mem_align, 64);
        ck_assert_uint_eq(in->mem_align & (in->mem_align - 1), 0);
        ck_assert(in->fp16 == 0 || in->fp16 == 1);
        ck_assert(in->fp64 == 0 || in->fp64 == 1);
        ck_assert_ptr_nonnull(in->platform_id);
        ck_assert_ptr_nonnull(in->device_id);
        ck_assert(in->type != 0);
        if (strstr(in->platform, "Portable Computing Language")) {
            pocl = 1;
            ck_assert(in->type & CL_DEVICE_TYPE_CPU);
        }
    }
    ck_assert_msg(pocl, "no PoCL device among %d", n);

    /* Opening twice shares one context and queue. */
    cg_cl_device *a, *b;
    ck_assert_int_eq(cg_cl_device_open(0, &a), CG_OK);
    ck_assert_int_eq(cg_cl_device_open(0, &b), CG_OK);
    ck_assert_ptr_eq(a, b);
    ck_assert_ptr_eq(cg_cl_context(a), cg_cl_context(b));
    ck_assert_ptr_eq(cg_cl_queue(a), cg_cl_queue(b));
    ck_assert_ptr_eq(cg_cl_info_of(a), cg_cl_device_info(0));
    char want[300];
    snprintf(want, sizeof want, "opencl:0 (%s)", cg_cl_device_info(0)->name);
    ck_assert_str_eq(cg_cl_label(a), want);
    cg_cl_device_release(b);
    cg_cl_device_release(a);

    cg_cl_device *c = NULL;
    ck_assert_int_eq(cg_cl_device_open(n, &c), CG_ERR_NOT_FOUND);
    ck_assert_ptr_null(c);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "no such device"));
}
END_TEST

START_TEST(device_find) {
    int n = cg_cl_device_count();
    ck_assert_int_ge(n, 1);
    int idx = -5;
    ck_assert_int_eq(cg_cl_device_find("0", &idx), CG_OK);
    ck_assert_int_eq(idx, 0);
    idx = -5;
    ck_assert_int_eq(cg_cl_device_find("opencl:0", &idx), CG_OK);
    ck_assert_int_eq(idx, 0);
    idx = -5;
    ck_assert_int_eq(cg_cl_device_find("opencl", &idx), CG_OK);
    ck_assert_int_eq(idx, 0);

    /* A case-insensitive substring of the device name... */
    char sub[64];
    const char *name = cg_cl_device_info(0)->name;
    snprintf(sub, sizeof sub, "%.6s", name);
    for (char *p = sub; *p; p++)
        *p = (char)((*p >= 'a' && *p <= 'z') ? *p - 32 : (*p >= 'A' && *p <= 'Z') ? *p + 32 : *p);
    idx = -5;
    ck_assert_msg(cg_cl_device_find(sub, &idx) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(idx, 0);
    /* ... and of the platform name. */
    idx = -5;
    ck_assert_msg(cg_cl_device_find("portable computing", &idx) == CG_OK, "%s", cg_last_error());
    ck_assert_str_eq(cg_cl_device_info(idx)->platform, "Portable Computing Language");

    char spec[32];
    snprintf(spec, sizeof spec, "opencl:%d", n + 7);
    ck_assert_int_eq(cg_cl_device_find(spec, &idx), CG_ERR_NOT_FOUND);
    ck_assert_int_eq(idx, -1);
    const char *e = cg_last_error();
    ck_assert_msg(strstr(e, spec) && strstr(e, "available: opencl:0 (") && strstr(e, name), "%s", e);

    ck_assert_int_eq(cg_cl_device_find("no-such-gpu-xyz", &idx), CG_ERR_NOT_FOUND);
    e = cg_last_error();
    ck_assert_msg(strstr(e, "'no-such-gpu-xyz' matches no device") && strstr(e, "opencl:0 ("), "%s", e);
    ck_assert_int_eq(cg_cl_device_find("opencl:x", &idx), CG_ERR_NOT_FOUND);
    ck_assert_int_eq(cg_cl_device_find("", &idx), CG_ERR_NOT_FOUND);
    ck_assert_int_eq(cg_cl_device_find(NULL, &idx), CG_ERR_NOT_FOUND);
    ck_assert_int_eq(cg_cl_device_find("0", NULL), CG_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(error_names) {
    ck_assert_str_eq(cg_cl_error_name(0), "CL_SUCCESS");
    ck_assert_str_eq(cg_cl_error_name(-54), "CL_INVALID_WORK_GROUP_SIZE");
    ck_assert_str_eq(cg_cl_error_name(-11), "CL_BUILD_PROGRAM_FAILURE");
    ck_assert_str_eq(cg_cl_error_name(-72), "CL_MAX_SIZE_RESTRICTION_EXCEEDED");
    ck_assert_str_eq(cg_cl_error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
    ck_assert_str_eq(cg_cl_error_name(-1007), "CL_INVALID_D3D11_RESOURCE_KHR");
    ck_assert_str_eq(cg_cl_error_name(-12345), "CL_UNKNOWN_ERROR(-12345)");
    ck_assert_str_eq(cg_clblast_error_name(-1007), "CLBlastInsufficientMemoryY");
    ck_assert_str_eq(cg_clblast_error_name(-1024), "CLBlastNotImplemented");
    ck_assert_str_eq(cg_clblast_error_name(-2039), "CLBlastUnexpectedError");
    ck_assert_str_eq(cg_clblast_error_name(-54), "CL_INVALID_WORK_GROUP_SIZE");
    ck_assert_str_eq(cg_clblast_error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
    ck_assert_str_eq(cg_clblast_error_name(-3333), "CL_UNKNOWN_ERROR(-3333)");
}
END_TEST

/* ---- memory and launches ---- */

START_TEST(kernel_runs) {
    cg_cl_device *d = open0();
    cl_kernel k;
    ck_assert_msg(cg_cl_kernel(d, k_axpb, NULL, "axpb", &k) == CG_OK, "%s", cg_last_error());
    run_axpb(d, k, 1000, 64); /* global rounded up to 1024 */
    run_axpb(d, k, 37, 0);    /* no local size */
    run_axpb(d, k, 1, 16);

    /* Local size above the kernel's and the device's limit. */
    size_t g = 64, l = cg_cl_info_of(d)->max_work_group * 2;
    ck_assert_int_eq(cg_cl_launch(d, k, 1, &g, &l, "axpb"), CG_ERR_KERNEL);
    char want[400];
    snprintf(want, sizeof want, "%s: clEnqueueNDRangeKernel(axpb) failed: CL_INVALID_WORK_GROUP_SIZE", cg_cl_label(d));
    ck_assert_msg(strstr(cg_last_error(), want) == cg_last_error(), "%s", cg_last_error());
    /* Launch errors from the driver itself name the call too (no args set on 'fill'). */
    cl_kernel kf;
    ck_assert_msg(cg_cl_kernel(d, k_axpb, NULL, "fill", &kf) == CG_OK, "%s", cg_last_error());
    l = 8;
    ck_assert_int_eq(cg_cl_launch(d, kf, 1, &g, &l, NULL), CG_ERR_KERNEL);
    ck_assert_msg(strstr(cg_last_error(), "clEnqueueNDRangeKernel(fill) failed: CL_INVALID_KERNEL_ARGS"), "%s",
                  cg_last_error());
    ck_assert_int_eq(cg_cl_launch(d, k, 4, &g, &l, "axpb"), CG_ERR_KERNEL);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "CL_INVALID_WORK_DIMENSION"));
    g = 0; /* empty range: nothing to do */
    ck_assert_int_eq(cg_cl_launch(d, k, 1, &g, &l, "axpb"), CG_OK);

    /* Sub-buffers, copies and partial transfers. */
    size_t align = cg_cl_info_of(d)->mem_align;
    size_t nfl = 3 * align / sizeof(float);
    float *h = malloc(nfl * sizeof(float)), *r = malloc(nfl * sizeof(float));
    for (size_t i = 0; i < nfl; i++) h[i] = (float)i;
    cl_mem big, sub, empty, other;
    ck_assert_int_eq(cg_cl_alloc(d, nfl * sizeof(float), &big), CG_OK);
    ck_assert_int_eq(cg_cl_write(d, big, 0, nfl * sizeof(float), h, 0), CG_OK);
    ck_assert_msg(cg_cl_sub_buffer(d, big, align, align, &sub) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_cl_read(d, sub, 0, align, r), CG_OK);
    for (size_t i = 0; i < align / sizeof(float); i++) ck_assert_float_eq(r[i], (float)(i + align / sizeof(float)));
    ck_assert_int_eq(cg_cl_sub_buffer(d, big, 3 * align, 0, &empty), CG_OK);
    clReleaseMemObject(empty);
    ck_assert_int_eq(cg_cl_sub_buffer(d, big, align, 0, &empty), CG_OK);
    clReleaseMemObject(empty);
    ck_assert_int_eq(cg_cl_sub_buffer(d, big, 4, 8, &empty), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "CL_MISALIGNED_SUB_BUFFER_OFFSET"));
    ck_assert_int_eq(cg_cl_sub_buffer(d, big, 2 * align, 2 * align, &empty), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_cl_alloc(d, 0, &other), CG_OK);
    clReleaseMemObject(other);
    ck_assert_int_eq(cg_cl_alloc(d, nfl * sizeof(float), &other), CG_OK);
    ck_assert_int_eq(cg_cl_copy(d, big, 8, other, 0, 16), CG_OK);
    ck_assert_int_eq(cg_cl_finish(d), CG_OK);
    memset(r, 0, 16);
    ck_assert_int_eq(cg_cl_read(d, other, 0, 16, r), CG_OK);
    for (int i = 0; i < 4; i++) ck_assert_float_eq(r[i], (float)(i + 2));
    /* A read past the end names the call and the error. */
    ck_assert_int_eq(cg_cl_read(d, other, nfl * sizeof(float) - 4, 16, r), CG_ERR_KERNEL);
    ck_assert_msg(strstr(cg_last_error(), "clEnqueueReadBuffer failed: CL_INVALID_VALUE"), "%s", cg_last_error());
    ck_assert_uint_gt(cg_cl_info_of(d)->max_alloc, 0);
    ck_assert_int_eq(cg_cl_alloc(d, (size_t)cg_cl_info_of(d)->max_alloc + 1, &empty), CG_ERR_NO_MEMORY);
    clReleaseMemObject(other);
    clReleaseMemObject(sub);
    clReleaseMemObject(big);
    free(h);
    free(r);
    cg_cl_device_release(d);
}
END_TEST

/* A kernel's limits are asked of OpenCL once, when the kernel is made,
 * not per launch; they are the driver's, and they go with the program
 * cache. */
START_TEST(kernel_limits_cached) {
    cg_cl_device *d = open0();
    cg_cl_test_drop_memory_cache(d);
    const long before = cg_cl_test_limit_queries();
    cl_kernel k;
    ck_assert_msg(cg_cl_kernel(d, k_axpb, NULL, "axpb", &k) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_cl_test_limit_queries(), before + 1);
    for (int i = 0; i < 20; i++) run_axpb(d, k, 256, 16);
    const cg_cl_kernel_limits l = cg_cl_kernel_limits_of(d, k);
    ck_assert_int_eq(cg_cl_test_limit_queries(), before + 1);
    size_t wg = 0, mult = 0;
    cl_ulong mem = 0;
    cl_device_id dev = cg_cl_info_of(d)->device_id;
    ck_assert_int_eq(clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL), CL_SUCCESS);
    ck_assert_int_eq(
        clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof mult, &mult, NULL),
        CL_SUCCESS);
    ck_assert_int_eq(clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof mem, &mem, NULL), CL_SUCCESS);
    ck_assert(wg > 0 && l.group == wg && l.multiple == mult && l.local_mem == mem);
    /* the cache cleared, the kernel made again is asked again */
    cg_cl_test_drop_memory_cache(d);
    ck_assert_msg(cg_cl_kernel(d, k_axpb, NULL, "axpb", &k) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_cl_test_limit_queries(), before + 2);
    run_axpb(d, k, 256, 16);
    ck_assert_int_eq(cg_cl_test_limit_queries(), before + 2);
    cg_cl_device_release(d);
}
END_TEST

/* ---- the program cache ---- */

START_TEST(cache_cold_then_warm) {
    cg_cl_device *d = open0();
    char path[4200];
    ck_assert_int_eq(cg_cl_test_cache_path(d, k_axpb, "", NULL, path, sizeof path), 0);
    ck_assert_msg(!strncmp(path, g_cache, strlen(g_cache)), "%s", path);
    ck_assert(!file_exists(path));

    cg_cl_cache_stats s0 = stats();
    cl_kernel k;
    ck_assert_msg(cg_cl_kernel(d, k_axpb, "", "axpb", &k) == CG_OK, "%s", cg_last_error());
    cg_cl_cache_stats s1 = stats();
    ck_assert_uint_eq(s1.builds_from_source, s0.builds_from_source + 1);
    ck_assert_uint_eq(s1.disk_writes, s0.disk_writes + 1);
    ck_assert_uint_eq(s1.loads_from_disk, s0.loads_from_disk);
    ck_assert_uint_eq(s1.disk_rejects, s0.disk_rejects);
    ck_assert_msg(file_exists(path), "%s", path);
    ck_assert_int_gt(file_size(path), 48);
    run_axpb(d, k, 300, 32);

    /* A fresh in-memory state: loaded from disk, not built. */
    cg_cl_test_drop_memory_cache(d);
    ck_assert_msg(cg_cl_kernel(d, k_axpb, "", "axpb", &k) == CG_OK, "%s", cg_last_error());
    cg_cl_cache_stats s2 = stats();
    ck_assert_uint_eq(s2.builds_from_source, s1.builds_from_source);
    ck_assert_uint_eq(s2.loads_from_disk, s1.loads_from_disk + 1);
    ck_assert_uint_eq(s2.disk_writes, s1.disk_writes);
    ck_assert_uint_eq(s2.disk_rejects, s1.disk_rejects);
    run_axpb(d, k, 300, 32);

    /* Same after the device is closed and opened again. */
    cg_cl_device_release(d);
    ck_assert_int_eq(cg_cl_device_open(0, &d), CG_OK);
    cg_cl_test_set_defer_stores(d, 0);
    ck_assert_msg(cg_cl_kernel(d, k_axpb, "", "axpb", &k) == CG_OK, "%s", cg_last_error());
    cg_cl_cache_stats s3 = stats();
    ck_assert_uint_eq(s3.builds_from_source, s2.builds_from_source);
    ck_assert_uint_eq(s3.loads_from_disk, s2.loads_from_disk + 1);
    run_axpb(d, k, 5, 4);

    /* Other options are another entry. */
    char path2[4200];
    ck_assert_int_eq(cg_cl_test_cache_path(d, k_axpb, "-DUNUSED=1", NULL, path2, sizeof path2), 0);
    ck_assert_str_ne(path, path2);
    ck_assert_msg(cg_cl_kernel(d, k_axpb, "-DUNUSED=1", "axpb", &k) == CG_OK, "%s", cg_last_error());
    cg_cl_cache_stats s4 = stats();
    ck_assert_uint_eq(s4.builds_from_source, s3.builds_from_source + 1);
    ck_assert(file_exists(path2));
    cg_cl_device_release(d);
}
END_TEST

/* Builds the entry, then damages it with `damage` and checks it is rejected,
 * rebuilt, correct, and rewritten as a valid entry. */
static void check_damaged(void (*damage)(const char *path)) {
    cg_cl_device *d = open0();
    char path[4200];
    ck_assert_int_eq(cg_cl_test_cache_path(d, k_axpb, "", NULL, path, sizeof path), 0);
    cl_kernel k;
    ck_assert_msg(cg_cl_kernel(d, k_axpb, "", "axpb", &k) == CG_OK, "%s", cg_last_error());
    ck_assert(file_exists(path));
    long good_size = file_size(path);

    damage(path);
    cg_cl_test_drop_memory_cache(d);
    cg_cl_cache_stats s0 = stats();
    ck_assert_msg(cg_cl_kernel(d, k_axpb, "", "axpb", &k) == CG_OK, "%s", cg_last_error());
    cg_cl_cache_stats s1 = stats();
    ck_assert_uint_eq(s1.disk_rejects, s0.disk_rejects + 1);
    ck_assert_uint_eq(s1.builds_from_source, s0.builds_from_source + 1);
    ck_assert_uint_eq(s1.disk_writes, s0.disk_writes + 1);
    ck_assert_uint_eq(s1.loads_from_disk, s0.loads_from_disk);
    run_axpb(d, k, 100, 16);
    ck_assert_int_eq(file_size(path), good_size);

    /* The rewritten entry loads. */
    cg_cl_test_drop_memory_cache(d);
    ck_assert_msg(cg_cl_kernel(d, k_axpb, "", "axpb", &k) == CG_OK, "%s", cg_last_error());
    cg_cl_cache_stats s2 = stats();
    ck_assert_uint_eq(s2.loads_from_disk, s1.loads_from_disk + 1);
    ck_assert_uint_eq(s2.disk_rejects, s1.disk_rejects);
    run_axpb(d, k, 100, 16);
    cg_cl_device_release(d);
}

static void flip_bytes(const char *path) {
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    long n = file_size(path);
    long pos[] = {n / 2, n - 1, 60};
    for (int i = 0; i < 3; i++) {
        fseek(f, pos[i], SEEK_SET);
        int c = fgetc(f);
        fseek(f, pos[i], SEEK_SET);
        fputc(c ^ 0x5a, f);
    }
    fclose(f);
}

static void truncate_file(const char *path) { ck_assert_int_eq(truncate(path, file_size(path) / 3), 0); }

static void truncate_to_header(const char *path) { ck_assert_int_eq(truncate(path, 20), 0); }

static void garbage(const char *path) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 4096; i++) fputc((i * 7919) & 0xff, f);
    fclose(f);
}

static void empty_file(const char *path) { ck_assert_int_eq(truncate(path, 0), 0); }

START_TEST(cache_flipped_bytes) { check_damaged(flip_bytes); }
END_TEST
START_TEST(cache_truncated) { check_damaged(truncate_file); }
END_TEST
START_TEST(cache_truncated_header) { check_damaged(truncate_to_header); }
END_TEST
START_TEST(cache_garbage) { check_damaged(garbage); }
END_TEST
START_TEST(cache_empty_file) { check_damaged(empty_file); }
END_TEST

/* Another entry's (valid) file under this key's name: stale, rejected. */
START_TEST(cache_stale_entry) {
    cg_cl_device *d = open0();
    const char *other = "__kernel void other(__global float *y) { y[get_global_id(0)] = 1.0f; }\n";
    char path[4200], opath[4200];
    ck_assert_int_eq(cg_cl_test_cache_path(d, k_axpb, "", NULL, path, sizeof path), 0);
    ck_assert_int_eq(cg_cl_test_cache_path(d, other, "", NULL, opath, sizeof opath), 0);
    cl_kernel k;
    ck_assert_msg(cg_cl_kernel(d, other, "", "other", &k) == CG_OK, "%s", cg_last_error());
    ck_assert(file_exists(opath));
    ck_assert_int_eq(rename(opath, path), 0);
    cg_cl_test_drop_memory_cache(d);
    cg_cl_cache_stats s0 = stats();
    ck_assert_msg(cg_cl_kernel(d, k_axpb, "", "axpb", &k) == CG_OK, "%s", cg_last_error());
    cg_cl_cache_stats s1 = stats();
    ck_assert_uint_eq(s1.disk_rejects, s0.disk_rejects + 1);
    ck_assert_uint_eq(s1.builds_from_source, s0.builds_from_source + 1);
    ck_assert_uint_eq(s1.disk_writes, s0.disk_writes + 1);
    run_axpb(d, k, 64, 64);
    cg_cl_device_release(d);
}
END_TEST

/* The cache directory cannot be created (its parent is a regular file; the
 * tests may run as root, so chmod would not stop writes): kernels still
 * build and run, nothing is written, no error. */
START_TEST(cache_unwritable_dir) {
    char file[512], dir[600];
    snprintf(file, sizeof file, "%s/file", g_tmp);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fputs("not a directory\n", f);
    fclose(f);
    snprintf(dir, sizeof dir, "%s/sub/clgraph", file);
    set_cache_dir(dir);
    ck_assert_str_eq(cg_cache_dir(), dir);
    ck_assert_int_eq(cg_cache_dir_ready(), 0);
    ck_assert_int_eq(cg_cache_write("x.txt", "x", 1), -1);

    cg_cl_device *d = open0();
    cg_cl_cache_stats s0 = stats();
    cl_kernel k;
    ck_assert_msg(cg_cl_kernel(d, k_axpb, "", "axpb", &k) == CG_OK, "%s", cg_last_error());
    cg_cl_cache_stats s1 = stats();
    ck_assert_uint_eq(s1.builds_from_source, s0.builds_from_source + 1);
    ck_assert_uint_eq(s1.disk_writes, s0.disk_writes);
    ck_assert_uint_eq(s1.disk_rejects, s0.disk_rejects);
    ck_assert_uint_eq(s1.loads_from_disk, s0.loads_from_disk);
    run_axpb(d, k, 77, 8);
    ck_assert_int_eq(file_size(file), 16);

    /* No cache directory at all (no variable, no HOME): built from source. */
    unsetenv("CLGRAPH_CACHE_DIR");
    char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    char *xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
    unsetenv("HOME");
    unsetenv("XDG_CACHE_HOME");
    cg_cache_test_reset_dir();
    ck_assert_str_eq(cg_cache_dir(), "");
    cg_cl_test_drop_memory_cache(d);
    ck_assert_msg(cg_cl_kernel(d, k_axpb, "", "axpb", &k) == CG_OK, "%s", cg_last_error());
    cg_cl_cache_stats s2 = stats();
    ck_assert_uint_eq(s2.builds_from_source, s1.builds_from_source + 1);
    ck_assert_uint_eq(s2.disk_writes, s1.disk_writes);
    run_axpb(d, k, 77, 8);
    if (home) setenv("HOME", home, 1);
    else unsetenv("HOME");
    if (xdg) setenv("XDG_CACHE_HOME", xdg, 1);
    else unsetenv("XDG_CACHE_HOME");
    free(home);
    free(xdg);
    cg_cl_device_release(d);
}
END_TEST

/* Where fetching a binary costs a compile (PoCL), binaries are written
 * when the in-memory cache is dropped or the device's last user releases
 * it, not when built; the written entry then loads like any other. */
START_TEST(cache_deferred_until_release) {
    cg_cl_device *d = NULL;
    ck_assert_int_eq(cg_cl_device_open(0, &d), CG_OK);
    cg_cl_test_drop_memory_cache(d);
    const cg_cl_info *info = cg_cl_info_of(d);
    if (strstr(info->platform, "Portable Computing Language")) ck_assert_int_eq(cg_cl_defers_stores(info), 1);
    cg_cl_test_set_defer_stores(d, 1);
    char path[4200];
    ck_assert_int_eq(cg_cl_test_cache_path(d, k_axpb, "", NULL, path, sizeof path), 0);
    cg_cl_cache_stats s0 = stats();
    cl_kernel k;
    ck_assert_msg(cg_cl_kernel(d, k_axpb, "", "axpb", &k) == CG_OK, "%s", cg_last_error());
    run_axpb(d, k, 300, 32);
    cg_cl_cache_stats s1 = stats();
    ck_assert_uint_eq(s1.builds_from_source, s0.builds_from_source + 1);
    ck_assert_uint_eq(s1.disk_writes, s0.disk_writes);
    ck_assert(!file_exists(path));

    /* Dropping the in-memory cache (as a process ending) writes it. */
    cg_cl_test_drop_memory_cache(d);
    cg_cl_cache_stats s2 = stats();
    ck_assert_uint_eq(s2.disk_writes, s1.disk_writes + 1);
    ck_assert(file_exists(path));
    ck_assert_msg(cg_cl_kernel(d, k_axpb, "", "axpb", &k) == CG_OK, "%s", cg_last_error());
    cg_cl_cache_stats s3 = stats();
    ck_assert_uint_eq(s3.loads_from_disk, s2.loads_from_disk + 1);
    ck_assert_uint_eq(s3.builds_from_source, s2.builds_from_source);
    run_axpb(d, k, 300, 32);

    /* A loaded entry is not written again; a new one is, at the release. */
    char path2[4200];
    ck_assert_int_eq(cg_cl_test_cache_path(d, k_axpb, "-DLATER=1", NULL, path2, sizeof path2), 0);
    ck_assert_msg(cg_cl_kernel(d, k_axpb, "-DLATER=1", "fill", &k) == CG_OK, "%s", cg_last_error());
    ck_assert(!file_exists(path2));
    cg_cl_device_release(d);
    cg_cl_cache_stats s4 = stats();
    ck_assert_uint_eq(s4.disk_writes, s3.disk_writes + 1);
    ck_assert(file_exists(path2));

    /* Nothing is fetched for a cache directory that cannot be written. */
    char file[512], dir[600];
    snprintf(file, sizeof file, "%s/plain-file", g_tmp);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    snprintf(dir, sizeof dir, "%s/sub", file);
    set_cache_dir(dir);
    ck_assert_int_eq(cg_cl_device_open(0, &d), CG_OK);
    cg_cl_test_set_defer_stores(d, 1);
    ck_assert_msg(cg_cl_kernel(d, k_axpb, "-DNOWHERE=1", "axpb", &k) == CG_OK, "%s", cg_last_error());
    cg_cl_device_release(d);
    ck_assert_uint_eq(stats().disk_writes, s4.disk_writes);
    set_cache_dir(g_cache);
}
END_TEST

/* Two kernels in a source that selects kernels (cl_backend.h). */
static const char *k_select =
    "#ifndef CG_ONE_KERNEL\n"
    "#define CG_ONE_KERNEL 0\n"
    "#endif\n"
    "#define CG_WANT(k) (!CG_ONE_KERNEL || CG_KERNEL_##k)\n"
    "#if CG_WANT(axpb)\n"
    "__kernel void axpb(__global float *y, __global const float *x, float a, float b, int n) {\n"
    "    int i = (int)get_global_id(0);\n"
    "    if (i < n) y[i] = a * x[i] + b;\n"
    "}\n"
    "#endif\n"
    "#if CG_WANT(fill)\n"
    "__kernel void fill(__global float *y, float v, int n) {\n"
    "    int i = (int)get_global_id(0);\n"
    "    if (i < n) y[i] = v;\n"
    "}\n"
    "#endif\n";

static cl_uint program_kernel_count(cl_kernel k) {
    cl_program p;
    ck_assert_int_eq(clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof p, &p, NULL), CL_SUCCESS);
    size_t n = 0;
    ck_assert_int_eq(clGetProgramInfo(p, CL_PROGRAM_NUM_KERNELS, sizeof n, &n, NULL), CL_SUCCESS);
    return (cl_uint)n;
}

/* A source that selects kernels gets one program per kernel asked for,
 * holding that kernel alone, with a disk entry of its own. */
START_TEST(one_program_per_kernel) {
    cg_cl_device *d = open0();
    char pa[4200], pf[4200], pw[4200];
    ck_assert_int_eq(cg_cl_test_cache_path(d, k_select, "", "axpb", pa, sizeof pa), 0);
    ck_assert_int_eq(cg_cl_test_cache_path(d, k_select, "", "fill", pf, sizeof pf), 0);
    ck_assert_int_eq(cg_cl_test_cache_path(d, k_select, "", NULL, pw, sizeof pw), 0);
    ck_assert_str_ne(pa, pf);
    ck_assert_str_ne(pa, pw);

    cg_cl_cache_stats s0 = stats();
    cl_kernel ka, kf, k;
    ck_assert_msg(cg_cl_kernel(d, k_select, "", "axpb", &ka) == CG_OK, "%s", cg_last_error());
    cg_cl_cache_stats s1 = stats();
    ck_assert_uint_eq(s1.builds_from_source, s0.builds_from_source + 1);
    ck_assert_uint_eq(s1.kernels_created, s0.kernels_created + 1);
    ck_assert_uint_eq(program_kernel_count(ka), 1);
    ck_assert(file_exists(pa) && !file_exists(pf) && !file_exists(pw));
    run_axpb(d, ka, 100, 16);

    ck_assert_msg(cg_cl_kernel(d, k_select, "", "fill", &kf) == CG_OK, "%s", cg_last_error());
    cg_cl_cache_stats s2 = stats();
    ck_assert_uint_eq(s2.builds_from_source, s1.builds_from_source + 1);
    ck_assert_uint_eq(s2.kernels_created, s1.kernels_created + 1);
    ck_assert_uint_eq(program_kernel_count(kf), 1);
    ck_assert(file_exists(pf));

    /* Asked again: the same objects, nothing built or created. */
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(cg_cl_kernel(d, k_select, "", i % 2 ? "fill" : "axpb", &k), CG_OK);
        ck_assert_ptr_eq(k, i % 2 ? kf : ka);
    }
    cg_cl_cache_stats s3 = stats();
    ck_assert_uint_eq(s3.builds_from_source, s2.builds_from_source);
    ck_assert_uint_eq(s3.kernels_created, s2.kernels_created);

    /* Each entry loads back on its own. */
    cg_cl_test_drop_memory_cache(d);
    ck_assert_msg(cg_cl_kernel(d, k_select, "", "fill", &kf) == CG_OK, "%s", cg_last_error());
    cg_cl_cache_stats s4 = stats();
    ck_assert_uint_eq(s4.loads_from_disk, s3.loads_from_disk + 1);
    ck_assert_uint_eq(s4.builds_from_source, s3.builds_from_source);
    ck_assert_uint_eq(program_kernel_count(kf), 1);

    /* A name the source does not guard builds an empty program; a name that
     * is not an identifier cannot be selected. */
    ck_assert_int_eq(cg_cl_kernel(d, k_select, "", "nope", &k), CG_ERR_KERNEL);
    ck_assert_msg(strstr(cg_last_error(), "clCreateKernel(nope) failed: CL_INVALID_KERNEL_NAME") &&
                      strstr(cg_last_error(), "CG_WANT(nope)"),
                  "%s", cg_last_error());
    ck_assert_int_eq(cg_cl_kernel(d, k_select, "", "a-b", &k), CG_ERR_KERNEL);
    ck_assert_msg(strstr(cg_last_error(), "'a-b' is not a kernel name"), "%s", cg_last_error());
    cg_cl_device_release(d);
}
END_TEST

START_TEST(build_error) {
    cg_cl_device *d = open0();
    const char *bad = "__kernel void bad(__global float *y) {\n"
                      "    y[get_global_id(0)] = undeclared_thing + 1.0f;\n"
                      "}\n";
    cl_kernel k = (cl_kernel)1;
    cg_cl_cache_stats s0 = stats();
    ck_assert_int_eq(cg_cl_kernel(d, bad, "", "bad", &k), CG_ERR_KERNEL);
    ck_assert_ptr_null(k);
    const char *e = cg_last_error();
    char want[400];
    snprintf(want, sizeof want, "%s: build of kernel 'bad' failed: CL_BUILD_PROGRAM_FAILURE: ", cg_cl_label(d));
    ck_assert_msg(strstr(e, want) == e, "%s", e);
    ck_assert_msg(strstr(e, "error") && strstr(e, "undeclared_thing"), "%s", e);
    ck_assert_msg(!strchr(e, '\n'), "%s", e);
    ck_assert_uint_le(strlen(e), strlen(want) + 1500);
    cg_cl_cache_stats s1 = stats();
    ck_assert_uint_eq(s1.disk_writes, s0.disk_writes);
    char path[4200];
    ck_assert_int_eq(cg_cl_test_cache_path(d, bad, "", NULL, path, sizeof path), 0);
    ck_assert(!file_exists(path));

    /* A long log is cut to one line of bounded length. */
    char *many = malloc(64 * 1024);
    size_t o = (size_t)sprintf(many, "__kernel void bad2(__global float *y) {\n");
    for (int i = 0; i < 200; i++) o += (size_t)sprintf(many + o, "    y[%d] = missing_%d;\n", i, i);
    sprintf(many + o, "}\n");
    ck_assert_int_eq(cg_cl_kernel(d, many, "", "bad2", &k), CG_ERR_KERNEL);
    e = cg_last_error();
    ck_assert_msg(strstr(e, "build of kernel 'bad2' failed") && !strchr(e, '\n'), "%s", e);
    ck_assert_uint_le(strlen(e), strlen(want) + 1510);
    ck_assert_msg(strstr(e, "...") != NULL, "%s", e);
    free(many);

    /* Bad options. */
    ck_assert_int_eq(cg_cl_kernel(d, k_axpb, "-fno-such-option-at-all", "axpb", &k), CG_ERR_KERNEL);
    ck_assert_msg(strstr(cg_last_error(), "build of kernel 'axpb' failed: CL_"), "%s", cg_last_error());

    /* A name the program does not have. */
    ck_assert_int_eq(cg_cl_kernel(d, k_axpb, "", "nope", &k), CG_ERR_KERNEL);
    ck_assert_msg(strstr(cg_last_error(), "clCreateKernel(nope) failed: CL_INVALID_KERNEL_NAME") &&
                      strstr(cg_last_error(), "axpb"),
                  "%s", cg_last_error());
    /* The good program still works. */
    ck_assert_msg(cg_cl_kernel(d, k_axpb, "", "axpb", &k) == CG_OK, "%s", cg_last_error());
    run_axpb(d, k, 10, 2);
    ck_assert_int_eq(cg_cl_kernel(d, NULL, "", "axpb", &k), CG_ERR_INVALID_ARGUMENT);
    cg_cl_device_release(d);
}
END_TEST

/* Builds a kernel whose source warns (unused expression results) and is new
 * to every cache (a nonce in it), with fd 2 sent to a file; returns that
 * file's text (malloc'ed). */
static char *build_warning_kernel(cg_cl_device *d, const char *tag) {
    char src[400], path[600];
    /* The nonce is code, not a comment: PoCL keys its cache on the
     * preprocessed source. */
    snprintf(src, sizeof src,
             "__kernel void warns(__global float *y) {\n"
             "    y[0];\n    y[1] == 2.0f;\n    y[0] = %ld.0f + %d.0f + %d.0f;\n}\n",
             (long)time(NULL) % 100000, (int)getpid(), tag[0]);
    snprintf(path, sizeof path, "%s/stderr-%s.txt", g_tmp, tag);
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert(saved >= 0 && fd >= 0);
    ck_assert_int_eq(dup2(fd, 2), 2);
    close(fd);
    cl_kernel k = NULL;
    cg_status st = cg_cl_kernel(d, src, "", "warns", &k);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ck_assert_msg(st == CG_OK && k, "%s", cg_last_error());
    char *text = tu_read_text(path, NULL);
    ck_assert_ptr_nonnull(text);
    return text;
}

/* A kernel that builds with warnings writes nothing on stderr (PoCL's
 * compiler would print "2 warnings generated." there), unless
 * CLGRAPH_CL_WARNINGS asks for them: then its build log is shown. */
START_TEST(build_warnings_off_stderr) {
    cg_cl_device *d = open0();
    unsetenv("CLGRAPH_CL_WARNINGS");
    char *quiet = build_warning_kernel(d, "quiet");
    ck_assert_msg(quiet[0] == 0, "stderr: [%s]", quiet);
    setenv("CLGRAPH_CL_WARNINGS", "1", 1);
    char *loud = build_warning_kernel(d, "loud");
    unsetenv("CLGRAPH_CL_WARNINGS");
    char want[400];
    snprintf(want, sizeof want, "clgraph: %s: build log of kernel 'warns':\n", cg_cl_label(d));
    ck_assert_msg(strstr(loud, want) && strstr(loud, "unused"), "stderr: [%s]", loud);
    free(quiet);
    free(loud);
    cg_cl_device_release(d);
}
END_TEST

START_TEST(kernel_reuse) {
    cg_cl_device *d = open0();
    cl_kernel k1, k2, k3;
    cg_cl_cache_stats s0 = stats();
    ck_assert_msg(cg_cl_kernel(d, k_axpb, NULL, "axpb", &k1) == CG_OK, "%s", cg_last_error());
    cg_cl_cache_stats s1 = stats();
    ck_assert_uint_eq(s1.kernels_created, s0.kernels_created + 1);
    /* A copy of the source at another address is the same program. */
    char *copy = strdup(k_axpb);
    ck_assert_msg(cg_cl_kernel(d, copy, "", "axpb", &k2) == CG_OK, "%s", cg_last_error());
    free(copy);
    cg_cl_cache_stats s2 = stats();
    ck_assert_ptr_eq(k1, k2);
    ck_assert_uint_eq(s2.kernels_created, s1.kernels_created);
    ck_assert_uint_eq(s2.builds_from_source, s1.builds_from_source);
    ck_assert_uint_eq(s2.loads_from_disk, s1.loads_from_disk);
    for (int i = 0; i < 100; i++) {
        ck_assert_int_eq(cg_cl_kernel(d, k_axpb, NULL, "axpb", &k2), CG_OK);
        ck_assert_ptr_eq(k1, k2);
    }
    ck_assert_uint_eq(stats().kernels_created, s1.kernels_created);
    /* Another kernel of the same program: a kernel object, no build. */
    ck_assert_int_eq(cg_cl_kernel(d, k_axpb, NULL, "fill", &k3), CG_OK);
    ck_assert_ptr_ne(k1, k3);
    cg_cl_cache_stats s3 = stats();
    ck_assert_uint_eq(s3.kernels_created, s1.kernels_created + 1);
    ck_assert_uint_eq(s3.builds_from_source, s1.builds_from_source);
    run_axpb(d, k1, 50, 10);
    cg_cl_device_release(d);
}
END_TEST

/* Several threads open the device and ask for the same new kernel at once:
 * one build, one kernel object, the same handle everywhere. */
typedef struct thread_job {
    cl_kernel k;
    cg_cl_device *d;
    int status;
    int mismatches;
} thread_job;

static void *thread_main(void *arg) {
    thread_job *j = arg;
    j->status = cg_cl_device_open(0, &j->d);
    if (j->status != CG_OK) return NULL;
    for (int i = 0; i < 50; i++) {
        cl_kernel k;
        cg_status s = cg_cl_kernel(j->d, k_axpb, "-DFROM_THREADS=1", "axpb", &k);
        if (s != CG_OK) {
            j->status = s;
            break;
        }
        if (i == 0) j->k = k;
        else if (k != j->k) j->mismatches++;
    }
    cg_cl_device_release(j->d);
    return NULL;
}

START_TEST(threads_share) {
    cg_cl_device *d = open0(); /* keeps the device open across the threads */
    cg_cl_cache_stats s0 = stats();
    enum { N = 4 };
    pthread_t t[N];
    thread_job jobs[N];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < N; i++) ck_assert_int_eq(pthread_create(&t[i], NULL, thread_main, &jobs[i]), 0);
    for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(jobs[i].status, CG_OK);
        ck_assert_ptr_eq(jobs[i].d, d);
        ck_assert_ptr_eq(jobs[i].k, jobs[0].k);
        ck_assert_int_eq(jobs[i].mismatches, 0);
    }
    cg_cl_cache_stats s1 = stats();
    ck_assert_uint_eq(s1.builds_from_source, s0.builds_from_source + 1);
    ck_assert_uint_eq(s1.kernels_created, s0.kernels_created + 1);
    run_axpb(d, jobs[0].k, 33, 8);
    cg_cl_device_release(d);
}
END_TEST

/* The lookup of a cached kernel is cheap (ops ask for it on every run). */
START_TEST(lookup_is_fast) {
    cg_cl_device *d = open0();
    /* A ~10 KB program, like the op families' (padded with comments, so it
     * compiles fast). */
    size_t cap = 16 * 1024, o = 0;
    char *src = malloc(cap);
    o += (size_t)snprintf(src + o, cap - o, "%s", k_axpb);
    for (int i = 0; o < 10000; i++)
        o += (size_t)snprintf(src + o, cap - o, "/* pad_%d: padding to the size of a real op family (%d) */\n", i, i);
    /* Other programs of the same length in the cache. */
    char *other = strdup(src);
    strstr(other, "pad_0")[1] = 'b'; /* "pbd_0": same length, other text */
    cl_kernel k, k2;
    ck_assert_msg(cg_cl_kernel(d, other, "-DIDX=int", "axpb", &k) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_cl_kernel(d, src, "-DIDX=long", "axpb", &k) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_cl_kernel(d, src, "-DIDX=int", "axpb", &k) == CG_OK, "%s", cg_last_error());
    struct timespec a, b;
    enum { CALLS = 20000 };
    clock_gettime(CLOCK_MONOTONIC, &a);
    int bad = 0; /* no ck_assert in the loop: Check's bookkeeping costs more than the lookup */
    for (int i = 0; i < CALLS; i++)
        if (cg_cl_kernel(d, src, "-DIDX=int", "axpb", &k2) != CG_OK || k2 != k) bad++;
    clock_gettime(CLOCK_MONOTONIC, &b);
    ck_assert_int_eq(bad, 0);
    double us = ((double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3) / CALLS;
    /* ~0.5 us measured without sanitizers; the bound leaves room for ASan and a busy machine. */
    ck_assert_msg(us < 25.0, "cg_cl_kernel lookup takes %.2f us", us);
    if (getenv("CG_TEST_VERBOSE")) fprintf(stderr, "cg_cl_kernel lookup: %.3f us\n", us);

    /* The same for one kernel of a source that selects kernels, with its
     * sibling's entry (same source and options) in the cache too. */
    ck_assert_msg(cg_cl_kernel(d, k_select, "-DIDX=int", "axpb", &k2) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_cl_kernel(d, k_select, "-DIDX=int", "fill", &k) == CG_OK, "%s", cg_last_error());
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < CALLS; i++)
        if (cg_cl_kernel(d, k_select, "-DIDX=int", "fill", &k2) != CG_OK || k2 != k) bad++;
    clock_gettime(CLOCK_MONOTONIC, &b);
    ck_assert_int_eq(bad, 0);
    us = ((double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3) / CALLS;
    ck_assert_msg(us < 25.0, "cg_cl_kernel lookup (one kernel per program) takes %.2f us", us);
    free(other);
    free(src);
    cg_cl_device_release(d);
}
END_TEST

/* ---- child processes ---- */

/* Runs this executable with `arg` and extra environment entries; returns its
 * stdout (static buffer) and exit status. */
static const char *run_child(const char *arg, const char *const *env_add, int *status) {
    static char out[8192];
    out[0] = '\0';
    size_t nenv = 0;
    while (environ[nenv]) nenv++;
    size_t nadd = 0;
    while (env_add[nadd]) nadd++;
    char **env = calloc(nenv + nadd + 1, sizeof *env);
    size_t m = 0;
    for (size_t i = 0; i < nenv; i++) {
        int skip = 0;
        for (size_t j = 0; j < nadd; j++) {
            size_t kl = (size_t)(strchr(env_add[j], '=') - env_add[j]) + 1;
            if (!strncmp(environ[i], env_add[j], kl)) skip = 1;
        }
        if (!skip) env[m++] = environ[i];
    }
    for (size_t j = 0; j < nadd; j++) env[m++] = (char *)env_add[j];
    env[m] = NULL;

    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    char exe[] = "/proc/self/exe";
    char *argv[] = {exe, (char *)arg, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    free(env);
    ck_assert_int_eq(rc, 0);
    size_t got = 0;
    time_t start = time(NULL);
    for (;;) {
        struct pollfd p = {fds[0], POLLIN, 0};
        int pr = poll(&p, 1, 1000);
        if (pr < 0 && errno == EINTR) continue;
        if (pr > 0) {
            ssize_t r = read(fds[0], out + got, sizeof out - 1 - got);
            if (r <= 0) break;
            got += (size_t)r;
            if (got >= sizeof out - 1) break;
        }
        if (time(NULL) - start > 240) {
            kill(pid, SIGKILL);
            break;
        }
    }
    out[got] = '\0';
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return out;
}

/* Child: prints what it sees with no ICD. */
static int child_no_icd(void) {
    int n = cg_cl_device_count();
    const char *why = cg_cl_unavailable_reason();
    printf("count=%d\nreason=%s\n", n, why ? why : "(null)");
    printf("info0=%s\n", cg_cl_device_info(0) ? "some" : "null");
    int idx;
    cg_status s = cg_cl_device_find("0", &idx);
    printf("find=%s %s\n", cg_status_name(s), cg_last_error());
    cg_cl_device *d = NULL;
    s = cg_cl_device_open(0, &d);
    printf("open=%s %s\n", cg_status_name(s), cg_last_error());
    return 0;
}

/* Child: two PoCL devices, a kernel built and run on each. */
static int child_two_devices(void) {
    int n = cg_cl_device_count(), pocl[2], np = 0;
    /* The first two PoCL devices (another ICD may list devices before them). */
    for (int i = 0; i < n && np < 2; i++)
        if (strstr(cg_cl_device_info(i)->platform, "Portable Computing Language")) pocl[np++] = i;
    printf("count=%d pocl=%d\n", n, np);
    if (np < 2) return 1;
    for (int t = 0; t < 2; t++) {
        int i = pocl[t];
        cg_cl_device *d;
        if (cg_cl_device_open(i, &d) != CG_OK) {
            printf("open%d failed: %s\n", i, cg_last_error());
            return 1;
        }
        cl_kernel k;
        if (cg_cl_kernel(d, k_axpb, "", "axpb", &k) != CG_OK) {
            printf("kernel%d failed: %s\n", i, cg_last_error());
            return 1;
        }
        float x[10], y[10];
        for (int j = 0; j < 10; j++) x[j] = (float)j;
        cl_mem bx, by;
        int nn = 10;
        float a = 3.0f, b = -1.0f;
        size_t g = 10, l = 4;
        if (cg_cl_alloc(d, sizeof x, &bx) || cg_cl_alloc(d, sizeof y, &by) || cg_cl_write(d, bx, 0, sizeof x, x, 0) ||
            clSetKernelArg(k, 0, sizeof by, &by) || clSetKernelArg(k, 1, sizeof bx, &bx) ||
            clSetKernelArg(k, 2, sizeof a, &a) || clSetKernelArg(k, 3, sizeof b, &b) ||
            clSetKernelArg(k, 4, sizeof nn, &nn) || cg_cl_launch(d, k, 1, &g, &l, "axpb") ||
            cg_cl_read(d, by, 0, sizeof y, y)) {
            printf("run%d failed: %s\n", i, cg_last_error());
            return 1;
        }
        for (int j = 0; j < 10; j++)
            if (y[j] != 3.0f * x[j] - 1.0f) {
                printf("device %d: y[%d] = %g\n", i, j, (double)y[j]);
                return 1;
            }
        clReleaseMemObject(bx);
        clReleaseMemObject(by);
        printf("device%d=ok %s\n", t, cg_cl_label(d));
        cg_cl_device_release(d);
    }
    cg_cl_cache_stats s;
    cg_cl_cache_stats_get(&s);
    printf("builds=%llu loads=%llu\n", (unsigned long long)s.builds_from_source, (unsigned long long)s.loads_from_disk);
    return 0;
}

START_TEST(no_icd_child) {
    char vendors[600], env1[700];
    snprintf(vendors, sizeof vendors, "%s/empty-vendors", g_tmp);
    ck_assert_int_eq(mkdir(vendors, 0755), 0);
    snprintf(env1, sizeof env1, "OCL_ICD_VENDORS=%s", vendors);
    const char *env[] = {env1, NULL};
    int st;
    const char *out = run_child("--child-no-icd", env, &st);
    ck_assert_msg(st == 0, "child status %d: %s", st, out);
    ck_assert_msg(strstr(out, "count=0\n"), "%s", out);
    ck_assert_msg(strstr(out, "reason=no OpenCL platform found"), "%s", out);
    ck_assert_msg(strstr(out, "info0=null"), "%s", out);
    ck_assert_msg(strstr(out, "find=CG_ERR_NOT_FOUND") && strstr(out, "open=CG_ERR_NOT_FOUND"), "%s", out);
}
END_TEST

START_TEST(two_devices_child) {
    const char *env[] = {"POCL_DEVICES=pthread pthread", NULL};
    int st;
    const char *out = run_child("--child-two-devices", env, &st);
    ck_assert_msg(st == 0, "child status %d: %s", st, out);
    int n = 0;
    const char *c = strstr(out, "count=");
    ck_assert_ptr_nonnull(c);
    n = atoi(c + 6);
    ck_assert_int_ge(n, 2);
    ck_assert_msg(strstr(out, "pocl=2") && strstr(out, "device0=ok opencl:") && strstr(out, "device1=ok opencl:"), "%s",
                  out);
    /* Same device name, driver and platform: the second device loads the
     * first one's binary from the (fresh) disk cache. */
    ck_assert_msg(strstr(out, "builds=1 loads=1"), "%s", out);
}
END_TEST

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--child-no-icd")) return child_no_icd();
    if (argc > 1 && !strcmp(argv[1], "--child-two-devices")) return child_two_devices();

    Suite *s = suite_create("cl_backend");
    TCase *tc = tcase_create("opencl");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, device_listing);
    tcase_add_test(tc, device_find);
    tcase_add_test(tc, error_names);
    tcase_add_test(tc, kernel_runs);
    tcase_add_test(tc, kernel_limits_cached);
    tcase_add_test(tc, cache_cold_then_warm);
    tcase_add_test(tc, cache_flipped_bytes);
    tcase_add_test(tc, cache_truncated);
    tcase_add_test(tc, cache_truncated_header);
    tcase_add_test(tc, cache_garbage);
    tcase_add_test(tc, cache_empty_file);
    tcase_add_test(tc, cache_stale_entry);
    tcase_add_test(tc, cache_unwritable_dir);
    tcase_add_test(tc, cache_deferred_until_release);
    tcase_add_test(tc, one_program_per_kernel);
    tcase_add_test(tc, build_error);
    tcase_add_test(tc, build_warnings_off_stderr);
    tcase_add_test(tc, kernel_reuse);
    tcase_add_test(tc, threads_share);
    tcase_add_test(tc, lookup_is_fast);
    tcase_add_test(tc, no_icd_child);
    tcase_add_test(tc, two_devices_child);
    suite_add_tcase(s, tc);
    /* PoCL initialised before fork() hangs the child: never fork. */
    return tu_run_suite(s, 1);
}
