/* Programs and kernels: built lazily from OpenCL C 1.2 source, cached per
 * device in memory (programs by source, options and, for sources that
 * select kernels, the kernel's name; kernel objects by program and name, so
 * a repeated request creates no OpenCL object) and as binaries on disk
 * under cg_cache_dir(), written when built or, where fetching a binary
 * is costly (PoCL), when the device is released.
 *
 * Disk entry: <dir>/<32 hex digits>.clbin, the digits being two independent
 * 64-bit hashes of (format version, source, build options, device name,
 * device version, driver version, platform name and version). The file is a
 * 48-byte little-endian header (magic "CGCLBIN\0", format version, header
 * size, both key hashes, payload length, FNV-1a of the payload) and the
 * payload (CL_PROGRAM_BINARIES). A short, damaged or foreign file, or a
 * binary the driver refuses, is counted in disk_rejects, rebuilt from source
 * and overwritten. Files are written to a temporary file in the same
 * directory, fsync'ed and renamed into place. Any I/O failure (no HOME, a
 * read-only or uncreatable directory) only disables the disk cache. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "settings.h"
#include "cache.h"
#include "error.h"
#include "hash.h"
#include "read_file.h"
#include "opencl/cl_internal.h"

#define CACHE_FORMAT "clgraph-clbin-1"
#define CACHE_VERSION 1u
#define HEADER_SIZE 48u
#define MAX_ENTRY_BYTES (1024u * 1024u * 1024u)
#define LOG_MAX 1500

/* ---- counters ---- */

static _Atomic uint64_t st_builds, st_loads, st_writes, st_rejects, st_kernels;

void cg_cl_cache_stats_get(cg_cl_cache_stats *out) {
    if (!out) return;
    out->builds_from_source = atomic_load(&st_builds);
    out->loads_from_disk = atomic_load(&st_loads);
    out->disk_writes = atomic_load(&st_writes);
    out->disk_rejects = atomic_load(&st_rejects);
    out->kernels_created = atomic_load(&st_kernels);
}

/* ---- hashing ---- */

/* A second, unrelated 64-bit hash (multiply-xorshift per byte) so that a
 * file name collision needs two independent hashes to collide. */
static uint64_t mix_hash(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
    }
    return h;
}

typedef struct disk_key {
    uint64_t h1, h2;
} disk_key;

static void key_field(disk_key *k, const char *s) {
    uint64_t len = s ? strlen(s) : 0;
    unsigned char lb[8];
    for (int i = 0; i < 8; i++) lb[i] = (unsigned char)(len >> (8 * i));
    k->h1 = cg_fnv1a(k->h1, lb, 8);
    k->h2 = mix_hash(k->h2, lb, 8);
    if (len) {
        k->h1 = cg_fnv1a(k->h1, s, len);
        k->h2 = mix_hash(k->h2, s, len);
    }
}

static disk_key make_disk_key(const cg_cl_info *info, const char *source, const char *full_options) {
    disk_key k = {CG_FNV_BASIS, 0x6a09e667f3bcc909ULL};
    key_field(&k, CACHE_FORMAT);
    key_field(&k, source);
    key_field(&k, full_options);
    key_field(&k, info->name);
    key_field(&k, info->version);
    key_field(&k, info->driver);
    key_field(&k, info->platform);
    key_field(&k, info->platform_version);
    return k;
}

/* ---- disk entries ---- */

static void put64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}
static uint32_t get32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static const unsigned char k_magic[8] = {'C', 'G', 'C', 'L', 'B', 'I', 'N', 0};

static int entry_path(const char *dir, disk_key k, char *buf, size_t size) {
    if (!dir[0]) return -1;
    int w = snprintf(buf, size, "%s/%016llx%016llx.clbin", dir, (unsigned long long)k.h1, (unsigned long long)k.h2);
    return w > 0 && (size_t)w < size ? 0 : -1;
}

/* Reads a whole file; 1 if it does not exist (or cannot be opened), -1 if it
 * is unreadable or too large, 0 with *data (free it) otherwise. */
static int read_file(const char *path, unsigned char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    /* Not opened when it is a FIFO (the open would wait for a writer) or a
     * device: then it counts as damaged (-1). */
    struct stat st;
    int fd = cg_open_regular_quiet(path, O_RDONLY, 0, &st);
    if (fd < 0) return errno ? 1 : -1;
    if (st.st_size < 0 || (uint64_t)st.st_size > MAX_ENTRY_BYTES) {
        close(fd);
        return -1;
    }
    size_t n = (size_t)st.st_size;
    unsigned char *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return -1;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    *data = buf;
    *len = got;
    return 0;
}

/* Validates an entry; returns the payload or NULL. */
static const unsigned char *check_entry(const unsigned char *f, size_t n, disk_key k, size_t *payload_len) {
    if (n < HEADER_SIZE || memcmp(f, k_magic, 8) != 0) return NULL;
    if (get32(f + 8) != CACHE_VERSION || get32(f + 12) != HEADER_SIZE) return NULL;
    if (get64(f + 16) != k.h1 || get64(f + 24) != k.h2) return NULL;
    uint64_t len = get64(f + 32);
    if (len == 0 || len != n - HEADER_SIZE) return NULL;
    if (get64(f + 40) != cg_fnv1a(CG_FNV_BASIS, f + HEADER_SIZE, (size_t)len)) return NULL;
    *payload_len = (size_t)len;
    return f + HEADER_SIZE;
}

/* Tries the disk entry: a built program, or NULL (missing: *rejected 0;
 * damaged, stale or refused by the driver: *rejected 1). */
static cl_program load_entry(cg_cl_device *d, const char *path, disk_key k, const char *full_options, int *rejected) {
    *rejected = 0;
    unsigned char *file;
    size_t n;
    int r = read_file(path, &file, &n);
    if (r == 1) return NULL;
    *rejected = 1;
    if (r != 0) return NULL;
    size_t plen = 0;
    const unsigned char *payload = check_entry(file, n, k, &plen);
    cl_program prog = NULL;
    if (payload) {
        cl_int status = CL_SUCCESS, err = CL_SUCCESS;
        prog = clCreateProgramWithBinary(d->context, 1, &d->info->device_id, &plen, &payload, &status, &err);
        if (prog && (err != CL_SUCCESS || status != CL_SUCCESS)) {
            clReleaseProgram(prog);
            prog = NULL;
        }
        if (prog && clBuildProgram(prog, 1, &d->info->device_id, full_options, NULL, NULL) != CL_SUCCESS) {
            clReleaseProgram(prog);
            prog = NULL;
        }
    }
    free(file);
    if (prog) *rejected = 0;
    return prog;
}

/* Writes the program's binary to the disk cache; best effort. The
 * directory is checked first: fetching a binary can cost a compile. */
static void store_entry(cg_cl_device *d, const char *path, disk_key k, cl_program prog) {
    size_t sz = 0;
    if (!cg_cache_dir_ready() || clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof sz, &sz, NULL) != CL_SUCCESS ||
        sz == 0 || sz > MAX_ENTRY_BYTES)
        return;
    unsigned char *bin = malloc(sz);
    if (!bin) return;
    unsigned char *bins[1] = {bin};
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS) {
        unsigned char head[HEADER_SIZE];
        memcpy(head, k_magic, 8);
        put32(head + 8, CACHE_VERSION);
        put32(head + 12, HEADER_SIZE);
        put64(head + 16, k.h1);
        put64(head + 24, k.h2);
        put64(head + 32, sz);
        put64(head + 40, cg_fnv1a(CG_FNV_BASIS, bin, sz));
        if (cg_write_atomic(path, head, sizeof head, bin, sz) == 0) atomic_fetch_add(&st_writes, 1);
    }
    (void)d;
    free(bin);
}

/* ---- building ---- */

/* The build log flattened to one line and cut to LOG_MAX characters. */
static void build_log(cg_cl_device *d, cl_program prog, char *out, size_t size) {
    out[0] = '\0';
    size_t n = 0;
    if (clGetProgramBuildInfo(prog, d->info->device_id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS || n == 0)
        return;
    char *log = malloc(n + 1);
    if (!log) return;
    if (clGetProgramBuildInfo(prog, d->info->device_id, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS) {
        free(log);
        return;
    }
    log[n] = '\0';
    size_t o = 0, limit = size - 1 < LOG_MAX ? size - 1 : LOG_MAX;
    int space = 1; /* skips leading blanks and collapses runs */
    int cut = 0;
    for (const char *p = log; *p; p++) {
        unsigned char c = (unsigned char)*p;
        int blank = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
        if (blank) {
            if (space) continue;
            space = 1;
            c = ' ';
        } else {
            space = 0;
            if (c < 0x20) c = ' ';
        }
        if (o >= limit) {
            cut = 1;
            break;
        }
        out[o++] = (char)c;
    }
    while (o && out[o - 1] == ' ') o--;
    out[o] = '\0';
    if (cut && o >= 3) memcpy(out + o - 3, "...", 4);
    free(log);
}

/* Whether the compiler's warnings reach the user: CLGRAPH_CL_WARNINGS set
 * and not "0" (the CLI's --verbose sets it). Otherwise every build passes
 * -w (OpenCL 1.2 section 5.6.4.4), because some compilers (PoCL's clang)
 * write "N warnings generated." to the process's stderr themselves, which
 * would land between a tool's output lines. Read at every build: builds are
 * rare and slow. */
static int warnings_shown(void) {
    const char *v = cg_setting(CG_SET_CL_WARNINGS);
    return v && *v && strcmp(v, "0") != 0;
}

/* A successful build's log on stderr, whole, when it says anything. */
static void show_log(cg_cl_device *d, cl_program prog, const char *name) {
    size_t n = 0;
    if (clGetProgramBuildInfo(prog, d->info->device_id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS || n < 2)
        return;
    char *log = malloc(n + 1);
    if (!log) return;
    if (clGetProgramBuildInfo(prog, d->info->device_id, CL_PROGRAM_BUILD_LOG, n, log, NULL) == CL_SUCCESS) {
        log[n] = '\0';
        size_t k = strlen(log);
        while (k && (log[k - 1] == '\n' || log[k - 1] == ' ' || log[k - 1] == '\r')) log[--k] = '\0';
        if (k) fprintf(stderr, "clgraph: %s: build log of kernel '%s':\n%s\n", d->label, name, log);
    }
    free(log);
}

static cl_program build_from_source(cg_cl_device *d, const char *source, size_t len, const char *full_options,
                                    const char *name, cg_status *st) {
    cl_int err = CL_SUCCESS;
    cl_program prog = clCreateProgramWithSource(d->context, 1, &source, &len, &err);
    if (!prog || err != CL_SUCCESS) {
        char call[300];
        snprintf(call, sizeof call, "clCreateProgramWithSource(%s)", name);
        *st = cg_cl_fail(d, CG_ERR_KERNEL, call, err);
        return NULL;
    }
    atomic_fetch_add(&st_builds, 1);
    err = clBuildProgram(prog, 1, &d->info->device_id, full_options, NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[LOG_MAX + 1];
        build_log(d, prog, log, sizeof log);
        if (err == CL_INVALID_BUILD_OPTIONS)
            *st = cg_error(CG_ERR_KERNEL, "%s: build of kernel '%s' failed: %s (options '%s')%s%s", d->label, name,
                           cg_cl_error_name(err), full_options, log[0] ? ": " : "", log);
        else
            *st = cg_error(CG_ERR_KERNEL, "%s: build of kernel '%s' failed: %s%s%s", d->label, name,
                           cg_cl_error_name(err), log[0] ? ": " : "", log);
        clReleaseProgram(prog);
        return NULL;
    }
    if (warnings_shown()) show_log(d, prog, name);
    return prog;
}

static char *dup_str(const char *s, size_t n) {
    char *r = malloc(n + 1);
    if (r) {
        memcpy(r, s, n);
        r[n] = '\0';
    }
    return r;
}

/* Whether the source builds one kernel per program (cl_backend.h). */
static int selects_kernels(const char *source) { return strstr(source, "CG_ONE_KERNEL") != NULL; }

/* Kernel names go into a -D option: identifiers only. */
static int is_identifier(const char *s) {
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
    return 1;
}

/* "-cl-std=CL1.2 OPTIONS" (unless the caller chose a standard itself),
 * " -w" unless warnings are shown, and " -DCG_ONE_KERNEL=1
 * -DCG_KERNEL_<kernel>=1" when one kernel is built. */
static char *full_options_of(const char *options, const char *kernel) {
    size_t n = strlen(options), kn = kernel ? strlen(kernel) + 48 : 0;
    char *s = malloc(n + kn + 24);
    if (!s) return NULL;
    if (strstr(options, "-cl-std=")) memcpy(s, options, n + 1);
    else snprintf(s, n + 16, "-cl-std=CL1.2%s%s", n ? " " : "", options);
    if (!warnings_shown()) strcat(s, " -w");
    if (kernel) {
        size_t o = strlen(s);
        snprintf(s + o, kn + 1, "%s-DCG_ONE_KERNEL=1 -DCG_KERNEL_%s=1", o ? " " : "", kernel);
    }
    return s;
}

static void free_entry(cg_cl_program_entry *e) {
    if (!e) return;
    free(e->source);
    free(e->options);
    free(e->kernel);
    free(e->full_options);
    free(e);
}

/* The cached or newly built program entry; called with d->mu held. */
static cg_status get_program(cg_cl_device *d, const char *source, const char *options, const char *name,
                             cg_cl_program_entry **out) {
    /* Ops ask for their kernel on every run, so this lookup is on the hot
     * path: no hashing, just the length, the kernel name and options, and
     * one memcmp of the matching source (sub-microsecond for a 10 KB
     * program). Entries of a source that selects kernels all carry a name,
     * so the other kernels' entries are passed over before the memcmp. */
    size_t len = strlen(source);
    for (cg_cl_program_entry *e = d->programs; e; e = e->next)
        if (e->source_len == len && (!e->kernel || !strcmp(e->kernel, name)) && !strcmp(e->options, options) &&
            !memcmp(e->source, source, len)) {
            *out = e;
            return CG_OK;
        }

    const char *kernel = NULL;
    if (selects_kernels(source)) {
        if (!is_identifier(name)) return cg_error(CG_ERR_KERNEL, "%s: '%s' is not a kernel name", d->label, name);
        kernel = name;
    }
    cg_cl_program_entry *e = calloc(1, sizeof *e);
    if (e) {
        e->source = dup_str(source, len);
        e->options = dup_str(options, strlen(options));
        e->kernel = kernel ? dup_str(kernel, strlen(kernel)) : NULL;
        e->full_options = full_options_of(options, kernel);
    }
    if (!e || !e->source || !e->options || (kernel && !e->kernel) || !e->full_options) {
        free_entry(e);
        return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory building kernel '%s'", d->label, name);
    }
    const char *full = e->full_options;

    disk_key dk = make_disk_key(d->info, source, full);
    char path[4200];
    int use_disk = entry_path(cg_cache_dir(), dk, path, sizeof path) == 0;
    cl_program prog = NULL;
    if (use_disk) {
        int rejected = 0;
        prog = load_entry(d, path, dk, full, &rejected);
        if (prog) atomic_fetch_add(&st_loads, 1);
        if (rejected) atomic_fetch_add(&st_rejects, 1);
    }
    if (!prog) {
        cg_status st = CG_OK;
        prog = build_from_source(d, source, len, full, name, &st);
        if (!prog) {
            free_entry(e);
            return st;
        }
        if (use_disk) {
            if (d->defer_stores) e->store_pending = 1;
            else store_entry(d, path, dk, prog);
        }
    }
    e->source_len = len;
    e->program = prog;
    e->next = d->programs;
    d->programs = e;
    *out = e;
    return CG_OK;
}

/* The names of the program's kernels, for an unknown-name message. */
static void kernel_names(cl_program prog, char *out, size_t size) {
    out[0] = '\0';
    size_t n = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &n) != CL_SUCCESS || !n) return;
    char *s = malloc(n + 1);
    if (!s) return;
    if (clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, n, s, NULL) == CL_SUCCESS) {
        s[n] = '\0';
        snprintf(out, size, "%s", s);
        for (char *p = out; *p; p++)
            if (*p == ';') *p = ' ';
    }
    free(s);
}

cg_status cg_cl_kernel(cg_cl_device *d, const char *source, const char *options, const char *name, cl_kernel *out) {
    if (out) *out = NULL;
    if (!d || !source || !name || !*name || !out)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_cl_kernel(%s): NULL argument", name ? name : "?");
    if (!options) options = "";
    pthread_mutex_lock(&d->mu);
    cg_cl_program_entry *e = NULL;
    cg_status st = get_program(d, source, options, name, &e);
    if (st != CG_OK) {
        pthread_mutex_unlock(&d->mu);
        return st;
    }
    for (cg_cl_kernel_entry *k = e->kernels; k; k = k->next)
        if (!strcmp(k->name, name)) {
            *out = k->kernel;
            pthread_mutex_unlock(&d->mu);
            return CG_OK;
        }
    cl_int err = CL_SUCCESS;
    cl_kernel kern = clCreateKernel(e->program, name, &err);
    if (!kern || err != CL_SUCCESS) {
        char names[512];
        kernel_names(e->program, names, sizeof names);
        if (e->kernel)
            st = cg_error(CG_ERR_KERNEL,
                          "%s: clCreateKernel(%s) failed: %s (the source defines no kernel "
                          "'%s' under #if CG_WANT(%s)%s%s)",
                          d->label, name, cg_cl_error_name(err), name, name, names[0] ? "; the program has: " : "",
                          names);
        else
            st = cg_error(CG_ERR_KERNEL, "%s: clCreateKernel(%s) failed: %s%s%s%s", d->label, name,
                          cg_cl_error_name(err), names[0] ? " (the program has: " : "", names, names[0] ? ")" : "");
        pthread_mutex_unlock(&d->mu);
        return st;
    }
    atomic_fetch_add(&st_kernels, 1);
    cg_cl_kernel_entry *k = calloc(1, sizeof *k);
    if (k) k->name = dup_str(name, strlen(name));
    if (!k || !k->name) {
        if (k) free(k);
        clReleaseKernel(kern);
        pthread_mutex_unlock(&d->mu);
        return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory creating kernel '%s'", d->label, name);
    }
    k->kernel = kern;
    k->next = e->kernels;
    e->kernels = k;
    cg_cl_kernel_limits_add_locked(d, kern);
    *out = kern;
    pthread_mutex_unlock(&d->mu);
    return CG_OK;
}

/* Writes the binaries whose store was deferred (best effort: a cache
 * directory gone or changed since only means they are not written). */
static void flush_locked(cg_cl_device *d) {
    const char *dir = cg_cache_dir();
    for (cg_cl_program_entry *e = d->programs; e; e = e->next) {
        if (!e->store_pending) continue;
        e->store_pending = 0;
        disk_key dk = make_disk_key(d->info, e->source, e->full_options);
        char path[4200];
        if (entry_path(dir, dk, path, sizeof path) == 0) store_entry(d, path, dk, e->program);
    }
}

static void clear_locked(cg_cl_device *d) {
    flush_locked(d);
    cg_cl_program_entry *e = d->programs;
    while (e) {
        cg_cl_program_entry *next = e->next;
        cg_cl_kernel_entry *k = e->kernels;
        while (k) {
            cg_cl_kernel_entry *kn = k->next;
            clReleaseKernel(k->kernel);
            free(k->name);
            free(k);
            k = kn;
        }
        clReleaseProgram(e->program);
        free_entry(e);
        e = next;
    }
    d->programs = NULL;
    cg_cl_kernel_limits_clear_locked(d);
}

int cg_cl_defers_stores(const cg_cl_info *info) {
    return info && strstr(info->platform, "Portable Computing Language") != NULL;
}

void cg_cl_test_set_defer_stores(cg_cl_device *d, int defer) {
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    d->defer_stores = !!defer;
    pthread_mutex_unlock(&d->mu);
}

void cg_cl_program_cache_clear(cg_cl_device *d) {
    pthread_mutex_lock(&d->mu);
    clear_locked(d);
    pthread_mutex_unlock(&d->mu);
}

void cg_cl_test_drop_memory_cache(cg_cl_device *d) {
    if (!d) return;
    clFinish(d->queue);
    cg_cl_program_cache_clear(d);
}

int cg_cl_test_cache_path(const cg_cl_device *d, const char *source, const char *options, const char *kernel, char *buf,
                          size_t size) {
    if (!d || !source) return -1;
    char *full = full_options_of(options ? options : "", kernel);
    if (!full) return -1;
    disk_key k = make_disk_key(d->info, source, full);
    free(full);
    return entry_path(cg_cache_dir(), k, buf, size);
}
