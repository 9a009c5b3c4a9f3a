/* OpenCL devices: enumeration once per process (platforms in ICD order, then
 * their devices), lookup by spec, and opened devices (one context and one
 * in-order queue each, shared and reference counted). */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"
#include "opencl/cl_gemm_internal.h"
#include "opencl/cl_internal.h"
#include "error.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic int g_enumerated; /* for the test hook: the ICD loader was asked */
static cg_cl_info *g_infos;
static int g_count;
static char g_reason[512];

static pthread_mutex_t g_open_mu = PTHREAD_MUTEX_INITIALIZER;
static cg_cl_device **g_open; /* g_count slots */

/* ---- enumeration ---- */

/* Copies src into out (size n) without leading/trailing blanks (some
 * drivers pad device names). */
static void copy_trimmed(char *out, size_t n, const char *src) {
    while (*src && isspace((unsigned char)*src)) src++;
    size_t len = strlen(src);
    while (len && isspace((unsigned char)src[len - 1])) len--;
    if (len > n - 1) len = n - 1;
    memcpy(out, src, len);
    out[len] = '\0';
}

/* A string info value of any length; NULL on failure (free it). */
static char *device_string(cl_device_id d, cl_device_info what) {
    size_t sz = 0;
    if (clGetDeviceInfo(d, what, 0, NULL, &sz) != CL_SUCCESS) return NULL;
    char *s = malloc(sz + 1);
    if (!s) return NULL;
    if (sz && clGetDeviceInfo(d, what, sz, s, NULL) != CL_SUCCESS) {
        free(s);
        return NULL;
    }
    s[sz] = '\0';
    return s;
}

static char *platform_string(cl_platform_id p, cl_platform_info what) {
    size_t sz = 0;
    if (clGetPlatformInfo(p, what, 0, NULL, &sz) != CL_SUCCESS) return NULL;
    char *s = malloc(sz + 1);
    if (!s) return NULL;
    if (sz && clGetPlatformInfo(p, what, sz, s, NULL) != CL_SUCCESS) {
        free(s);
        return NULL;
    }
    s[sz] = '\0';
    return s;
}

static void device_field(cl_device_id d, cl_device_info what, char *out, size_t n) {
    char *s = device_string(d, what);
    copy_trimmed(out, n, s ? s : "");
    free(s);
}

static void platform_field(cl_platform_id p, cl_platform_info what, char *out, size_t n) {
    char *s = platform_string(p, what);
    copy_trimmed(out, n, s ? s : "");
    free(s);
}

/* Whether the space-separated list has exactly this token. */
static int has_token(const char *list, const char *token) {
    size_t tl = strlen(token);
    for (const char *p = list; p && *p;) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != ' ') e++;
        if ((size_t)(e - p) == tl && !memcmp(p, token, tl)) return 1;
        p = e;
    }
    return 0;
}

static void fill_info(cg_cl_info *info, int index, cl_platform_id p, cl_device_id d) {
    memset(info, 0, sizeof *info);
    info->index = index;
    info->platform_id = p;
    info->device_id = d;
    device_field(d, CL_DEVICE_NAME, info->name, sizeof info->name);
    device_field(d, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
    device_field(d, CL_DEVICE_VERSION, info->version, sizeof info->version);
    device_field(d, CL_DEVICE_OPENCL_C_VERSION, info->c_version, sizeof info->c_version);
    device_field(d, CL_DRIVER_VERSION, info->driver, sizeof info->driver);
    platform_field(p, CL_PLATFORM_NAME, info->platform, sizeof info->platform);
    platform_field(p, CL_PLATFORM_VERSION, info->platform_version, sizeof info->platform_version);

    cl_device_type type = 0;
    cl_uint cu = 0, align_bits = 0;
    cl_ulong gmem = 0, lmem = 0, maxalloc = 0;
    size_t wg = 0;
    cl_device_fp_config dfp = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL) == CL_SUCCESS) info->type = type;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL) == CL_SUCCESS) info->compute_units = cu;
    if (clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gmem, &gmem, NULL) == CL_SUCCESS) info->global_mem = gmem;
    if (clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL) == CL_SUCCESS) info->local_mem = lmem;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof maxalloc, &maxalloc, NULL) == CL_SUCCESS)
        info->max_alloc = maxalloc;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) == CL_SUCCESS)
        info->max_work_group = wg;
    if (!info->max_work_group) info->max_work_group = 1;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof info->max_item, info->max_item, NULL) != CL_SUCCESS)
        /* Fewer than 3 dimensions reported, or none: the group size bounds each. */
        for (int k = 0; k < 3; k++) info->max_item[k] = info->max_work_group;
    if (clGetDeviceInfo(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL) != CL_SUCCESS)
        align_bits = 0;
    /* Bits in the query; at least 64 bytes so sub-buffer offsets stay
     * aligned for every vector type. */
    info->mem_align = align_bits / 8 > 64 ? align_bits / 8 : 64;

    char *ext = device_string(d, CL_DEVICE_EXTENSIONS);
    info->fp16 = has_token(ext, "cl_khr_fp16");
    info->fp64 = has_token(ext, "cl_khr_fp64") || has_token(ext, "cl_amd_fp64");
    free(ext);
    if (!info->fp64 && clGetDeviceInfo(d, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof dfp, &dfp, NULL) == CL_SUCCESS && dfp != 0)
        info->fp64 = 1;
}

static void enumerate(void) {
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err != CL_SUCCESS) {
        snprintf(g_reason, sizeof g_reason, "no OpenCL platform found (clGetPlatformIDs: %s)", cg_cl_error_name(err));
        return;
    }
    if (np == 0) {
        snprintf(g_reason, sizeof g_reason,
                 "no OpenCL platform found (clGetPlatformIDs returned 0 platforms; is an ICD "
                 "installed under /etc/OpenCL/vendors or OCL_ICD_VENDORS?)");
        return;
    }
    cl_platform_id *plats = calloc(np, sizeof *plats);
    if (!plats) {
        snprintf(g_reason, sizeof g_reason, "no OpenCL devices: out of memory while enumerating");
        return;
    }
    err = clGetPlatformIDs(np, plats, NULL);
    if (err != CL_SUCCESS) {
        snprintf(g_reason, sizeof g_reason, "no OpenCL platform found (clGetPlatformIDs: %s)", cg_cl_error_name(err));
        free(plats);
        return;
    }
    /* Count, then fill, so indices follow platform order then device order. */
    cl_uint total = 0;
    cl_uint *nd = calloc(np, sizeof *nd);
    if (!nd) {
        free(plats);
        snprintf(g_reason, sizeof g_reason, "no OpenCL devices: out of memory while enumerating");
        return;
    }
    char first_err[160] = "";
    for (cl_uint p = 0; p < np; p++) {
        err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd[p]);
        if (err != CL_SUCCESS) {
            if (err != CL_DEVICE_NOT_FOUND && !first_err[0])
                snprintf(first_err, sizeof first_err, " (clGetDeviceIDs: %s)", cg_cl_error_name(err));
            nd[p] = 0;
        }
        total += nd[p];
    }
    if (total == 0) {
        snprintf(g_reason, sizeof g_reason, "no OpenCL device found on %u OpenCL platform%s%s", (unsigned)np,
                 np == 1 ? "" : "s", first_err);
        free(nd);
        free(plats);
        return;
    }
    cg_cl_info *infos = calloc(total, sizeof *infos);
    cl_device_id *ids = calloc(total, sizeof *ids);
    cg_cl_device **open = calloc(total, sizeof *open);
    if (!infos || !ids || !open) {
        free(infos);
        free(ids);
        free(open);
        free(nd);
        free(plats);
        snprintf(g_reason, sizeof g_reason, "no OpenCL devices: out of memory while enumerating");
        return;
    }
    int n = 0;
    for (cl_uint p = 0; p < np; p++) {
        if (!nd[p]) continue;
        cl_uint got = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd[p], ids + n, &got) != CL_SUCCESS) continue;
        if (got > nd[p]) got = nd[p];
        for (cl_uint i = 0; i < got; i++, n++) fill_info(&infos[n], n, plats[p], ids[n]);
    }
    free(ids);
    free(nd);
    free(plats);
    if (n == 0) {
        free(infos);
        free(open);
        snprintf(g_reason, sizeof g_reason, "no OpenCL device found on %u OpenCL platform%s", (unsigned)np,
                 np == 1 ? "" : "s");
        return;
    }
    g_infos = infos;
    g_open = open;
    g_count = n;
}

int cg_cl_device_count(void) {
    pthread_once(&g_once, enumerate);
    g_enumerated = 1;
    return g_count;
}

int cg_cl_test_enumerated(void) { return g_enumerated; }

const char *cg_cl_unavailable_reason(void) {
    pthread_once(&g_once, enumerate);
    return g_count ? NULL : g_reason;
}

const cg_cl_info *cg_cl_device_info(int i) {
    pthread_once(&g_once, enumerate);
    return i >= 0 && i < g_count ? &g_infos[i] : NULL;
}

/* ---- lookup ---- */

static int ci_contains(const char *hay, const char *needle) {
    size_t nl = strlen(needle);
    if (!nl) return 0;
    for (; *hay; hay++) {
        size_t k = 0;
        while (k < nl && hay[k] && tolower((unsigned char)hay[k]) == tolower((unsigned char)needle[k])) k++;
        if (k == nl) return 1;
    }
    return 0;
}

/* Parses a non-negative decimal index; -1 if s is not one. */
static int parse_index(const char *s) {
    if (!*s) return -1;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        v = v * 10 + (*p - '0');
        if (v > 1000000) return -1;
    }
    return (int)v;
}

static cg_status not_found(const char *spec, const char *why) {
    int n = cg_cl_device_count();
    if (n == 0) return cg_error(CG_ERR_NOT_FOUND, "OpenCL device '%s' %s: %s", spec, why, cg_cl_unavailable_reason());
    char list[1536];
    size_t off = 0;
    list[0] = '\0';
    for (int i = 0; i < n && off < sizeof list; i++) {
        int w = snprintf(list + off, sizeof list - off, "%sopencl:%d (%s, %s)", i ? ", " : "", i, g_infos[i].name,
                         g_infos[i].platform);
        if (w < 0) break;
        off += (size_t)w;
    }
    return cg_error(CG_ERR_NOT_FOUND, "OpenCL device '%s' %s; available: %s", spec, why, list);
}

cg_status cg_cl_device_find(const char *spec, int *index) {
    if (!index) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_cl_device_find: index is NULL");
    *index = -1;
    if (!spec || !*spec) return not_found("", "is empty");
    int n = cg_cl_device_count();
    const char *num = spec;
    if (!strncmp(spec, "opencl:", 7)) num = spec + 7;
    int idx = parse_index(num);
    if (idx >= 0) {
        if (idx >= n) return not_found(spec, "is out of range");
        *index = idx;
        return CG_OK;
    }
    if (num != spec) return not_found(spec, "is not 'opencl:N'");
    /* "opencl" alone: the first device. */
    if (!strcmp(spec, "opencl") && n > 0) {
        *index = 0;
        return CG_OK;
    }
    for (int i = 0; i < n; i++)
        if (ci_contains(g_infos[i].name, spec)) {
            *index = i;
            return CG_OK;
        }
    for (int i = 0; i < n; i++)
        if (ci_contains(g_infos[i].vendor, spec) || ci_contains(g_infos[i].platform, spec)) {
            *index = i;
            return CG_OK;
        }
    return not_found(spec, "matches no device, vendor or platform name");
}

/* ---- open devices ---- */

cg_status cg_cl_fail(const cg_cl_device *d, cg_status s, const char *call, cl_int err) {
    return cg_error(s, "%s: %s failed: %s", d ? d->label : "opencl", call, cg_cl_error_name(err));
}

static void destroy(cg_cl_device *d) {
    if (d->queue) clFinish(d->queue);
    /* SGEMM keeps kernels and a context reference per device: drop them
     * before the context goes. */
    cg_cl_gemm_device_released(d);
    cg_cl_program_cache_clear(d);
    if (d->queue) clReleaseCommandQueue(d->queue);
    if (d->context) clReleaseContext(d->context);
    pthread_mutex_destroy(&d->mu);
    pthread_mutex_destroy(&d->run_mu);
    free(d);
}

static cg_status create(int i, cg_cl_device **out) {
    const cg_cl_info *info = &g_infos[i];
    const char *bad = NULL;
    cg_cl_paths_forced(&bad);
    if (bad) return cg_error(CG_ERR_INVALID_ARGUMENT, "CLGRAPH_CL_PATHS=%s: expected cpu, gpu or auto", bad);
    cg_cl_device *d = calloc(1, sizeof *d);
    if (!d) return cg_error(CG_ERR_NO_MEMORY, "opencl:%d: out of memory", i);
    d->index = i;
    d->info = info;
    d->defer_stores = cg_cl_defers_stores(info);
    snprintf(d->label, sizeof d->label, "opencl:%d (%s)", i, info->name);
    if (pthread_mutex_init(&d->mu, NULL)) {
        free(d);
        return cg_error(CG_ERR_NO_MEMORY, "opencl:%d: cannot create a mutex", i);
    }
    if (pthread_mutex_init(&d->run_mu, NULL)) {
        pthread_mutex_destroy(&d->mu);
        free(d);
        return cg_error(CG_ERR_NO_MEMORY, "opencl:%d: cannot create a mutex", i);
    }
    for (int k = 0; k < 3; k++) d->max_item[k] = info->max_item[k];
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)info->platform_id, 0};
    cl_int err = CL_SUCCESS;
    d->context = clCreateContext(props, 1, &info->device_id, NULL, NULL, &err);
    if (!d->context || err != CL_SUCCESS) {
        cg_status s = cg_cl_fail(d, CG_ERR_KERNEL, "clCreateContext", err);
        d->context = NULL;
        destroy(d);
        return s;
    }
    /* Timestamps for profiles (cg_dev_capture_begin) where the device has them;
     * a queue without them where it does not. */
    cl_command_queue_properties qp = 0;
    if (clGetDeviceInfo(info->device_id, CL_DEVICE_QUEUE_PROPERTIES, sizeof qp, &qp, NULL) == CL_SUCCESS &&
        (qp & CL_QUEUE_PROFILING_ENABLE)) {
        d->queue = clCreateCommandQueue(d->context, info->device_id, CL_QUEUE_PROFILING_ENABLE, &err);
        d->profiling = d->queue && err == CL_SUCCESS;
        if (!d->profiling && d->queue) clReleaseCommandQueue(d->queue);
    }
    if (!d->profiling) d->queue = clCreateCommandQueue(d->context, info->device_id, 0, &err);
    if (!d->queue || err != CL_SUCCESS) {
        cg_status s = cg_cl_fail(d, CG_ERR_KERNEL, "clCreateCommandQueue", err);
        d->queue = NULL;
        destroy(d);
        return s;
    }
    d->refs = 1;
    *out = d;
    return CG_OK;
}

cg_status cg_cl_device_open(int i, cg_cl_device **out) {
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_cl_device_open: out is NULL");
    *out = NULL;
    int n = cg_cl_device_count();
    if (i < 0 || i >= n) {
        if (n == 0) return cg_error(CG_ERR_NOT_FOUND, "opencl:%d: no such device: %s", i, cg_cl_unavailable_reason());
        return cg_error(CG_ERR_NOT_FOUND, "opencl:%d: no such device (%d OpenCL device%s)", i, n, n == 1 ? "" : "s");
    }
    pthread_mutex_lock(&g_open_mu);
    cg_status s = CG_OK;
    if (g_open[i]) {
        g_open[i]->refs++;
    } else {
        s = create(i, &g_open[i]);
    }
    if (s == CG_OK) *out = g_open[i];
    pthread_mutex_unlock(&g_open_mu);
    return s;
}

void cg_cl_device_release(cg_cl_device *d) {
    if (!d) return;
    pthread_mutex_lock(&g_open_mu);
    int last = --d->refs == 0;
    if (last) g_open[d->index] = NULL;
    pthread_mutex_unlock(&g_open_mu);
    if (last) destroy(d);
}

static pthread_once_t g_paths_once = PTHREAD_ONCE_INIT;
static const char *g_paths = ""; /* "cpu", "gpu" or "" */
static char g_paths_bad[64];

static void read_paths(void) {
    const char *v = cg_setting(CG_SET_CL_PATHS);
    if (!v || !*v || !strcmp(v, "auto")) return;
    if (!strcmp(v, "cpu")) g_paths = "cpu";
    else if (!strcmp(v, "gpu")) g_paths = "gpu";
    else snprintf(g_paths_bad, sizeof g_paths_bad, "%s", v);
}

const char *cg_cl_paths_forced(const char **bad) {
    pthread_once(&g_paths_once, read_paths);
    if (bad) *bad = g_paths_bad[0] ? g_paths_bad : NULL;
    return g_paths;
}

int cg_cl_info_cpu_paths(const cg_cl_info *in) {
    const char *f = cg_cl_paths_forced(NULL);
    if (*f) return f[0] == 'c';
    cl_device_type t = in ? in->type : 0;
    return (t & CL_DEVICE_TYPE_CPU) && !(t & CL_DEVICE_TYPE_GPU);
}

int cg_cl_cpu_paths(const cg_cl_device *d) { return cg_cl_info_cpu_paths(d ? d->info : NULL); }

void cg_cl_run_lock(cg_cl_device *d) { pthread_mutex_lock(&d->run_mu); }
void cg_cl_run_unlock(cg_cl_device *d) { pthread_mutex_unlock(&d->run_mu); }

const cg_cl_info *cg_cl_info_of(const cg_cl_device *d) { return d ? d->info : NULL; }
cl_context cg_cl_context(const cg_cl_device *d) { return d ? d->context : NULL; }
cl_command_queue cg_cl_queue(const cg_cl_device *d) { return d ? d->queue : NULL; }
const char *cg_cl_label(const cg_cl_device *d) { return d ? d->label : "opencl"; }
