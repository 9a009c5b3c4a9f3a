/* SGEMM on OpenCL devices: the backend's own kernels (gemm.cl: GEMV for
 * m == 1 or n == 1 and, on CPU devices, one GEMV per row of A for C = A B^T;
 * a tiled GEMM otherwise) or CLBlast, chosen per device and shape by timing
 * both. Choices live in a hash table and in cg_cache_dir()/gemm-choices.txt,
 * read back at first use, so a later process skips the measurement; a line
 * carries the identity of the own kernels it was measured against
 * (cg_cl_gemm_own_id()), and lines measured against other ones are stale.
 * CLGRAPH_GEMM=own|clblast|auto overrides.
 *
 * Timing a shape is not free: the first CLBlast call compiles CLBlast's
 * whole GEMM program (14 s on PoCL on 2 cores, most of a cold start), so
 * an unmeasured shape runs the own kernels until it has been called
 * g_measure_after times; a shape called once or twice (an encoder at the
 * first token) never pays for the compile. Shapes that run the GEMV
 * kernels (m == 1 or n == 1, and rows_gemm() on CPU devices) are not timed
 * at all: those beat CLBlast 2 to 80 times on PoCL at every size measured,
 * while timing one costs that compile (a cold `translate` of the 14
 * sample dates took 16 s instead of 4). A choices-file line for a shape is
 * obeyed either way. A process keeps the implementation it first ran a
 * shape with (pin_choice): the two round differently, and a plan's runs
 * must give bit-identical outputs, so a measurement that finds CLBlast
 * faster pays off from the next process on.
 *
 * Threads: CLBlast calls are serialised by one global mutex (1.5.3 is not
 * reliable otherwise); each device's own kernels are shared cl_kernel
 * objects, so setting their arguments and enqueueing happen under that
 * device's mutex. The steady state allocates nothing and creates no OpenCL
 * object on the own path (CLBlast creates a kernel per call). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if CG_HAVE_CLBLAST
#include <clblast_c.h>
#endif

#define NO_CLBLAST "this build of clgraph has no CLBlast (configured with -Dclblast=disabled or without CLBlast)"

#include "settings.h"
#include "opencl/cl_gemm_internal.h"
#include "opencl/cl_internal.h"
#include "opencl/gemm.cl.h"
#include "cache.h"
#include "error.h"
#include "hash.h"
#include "measure_log.h"
#include "read_file.h"

#define CHOICES_FILE "gemm-choices.txt"
#define CHOICE_MEASURING 3 /* in the table while one thread times a shape */
#define CHOICE_PENDING 4   /* returned for an unmeasured shape: own kernels this time */
#define MEASURE_AFTER 16   /* calls of an unmeasured shape before it is timed */
#define TIMED_RUNS 3
#define TIMING_BUDGET_US 250000.0 /* stop timing a candidate after this */
#define MAX_LOCAL 256             /* work-group size cap (portability rule) */
#define MAX_LOCAL_MEM (32 * 1024) /* local memory cap in bytes */

/* ------------------------------------------------------------------ */
/* Counters and mode                                                    */

static _Atomic uint64_t st_measure, st_file_entries, st_file_writes, st_own, st_clblast,
    st_clblast_fail;

void cg_cl_gemm_stats_get(cg_cl_gemm_stats *out) {
    if (!out) return;
    out->measurements = st_measure;
    out->file_entries = st_file_entries;
    out->file_writes = st_file_writes;
    out->own_calls = st_own;
    out->clblast_calls = st_clblast;
    out->clblast_failures = st_clblast_fail;
}

void cg_cl_gemm_test_reset_stats(void) {
    st_measure = st_file_entries = st_file_writes = 0;
    st_own = st_clblast = st_clblast_fail = 0;
}

static pthread_mutex_t g_mode_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_mode = CG_GEMM_FROM_ENV; /* resolved mode, or FROM_ENV before the first call */
static int g_mode_bad;                /* CLGRAPH_GEMM holds an unknown value */
static char g_mode_text[64];

void cg_cl_gemm_test_set_mode(int mode) {
    pthread_mutex_lock(&g_mode_mu);
    g_mode = mode;
    g_mode_bad = 0;
    pthread_mutex_unlock(&g_mode_mu);
}

static cg_status current_mode(int *mode) {
    pthread_mutex_lock(&g_mode_mu);
    if (g_mode == CG_GEMM_FROM_ENV) {
        const char *v = cg_setting(CG_SET_GEMM);
        g_mode_bad = 0;
        if (!v || !*v || !strcmp(v, "auto")) {
            g_mode = CG_GEMM_AUTO;
        } else if (!strcmp(v, "own")) {
            g_mode = CG_GEMM_OWN;
        } else if (!strcmp(v, "clblast") && CG_HAVE_CLBLAST) {
            g_mode = CG_GEMM_CLBLAST;
        } else {
            g_mode = CG_GEMM_AUTO;
            g_mode_bad = 1;
            snprintf(g_mode_text, sizeof g_mode_text, "%s", v);
        }
    }
    *mode = g_mode;
    int bad = g_mode_bad;
    char text[sizeof g_mode_text];
    memcpy(text, g_mode_text, sizeof text);
    pthread_mutex_unlock(&g_mode_mu);
    if (bad && !CG_HAVE_CLBLAST && !strcmp(text, "clblast"))
        return cg_error(CG_ERR_UNSUPPORTED, "CLGRAPH_GEMM='clblast': %s", NO_CLBLAST);
    if (bad)
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "CLGRAPH_GEMM='%s': expected 'auto', 'own' or 'clblast'", text);
    /* Without CLBlast there is nothing to choose: auto is the own kernels. */
    if (!CG_HAVE_CLBLAST && *mode == CG_GEMM_AUTO) *mode = CG_GEMM_OWN;
    return CG_OK;
}

/* ------------------------------------------------------------------ */
/* Choice table: (device name and driver, transposes, m, n, k) -> choice */

typedef struct devkey {
    char name[256];
    char driver[256];
} devkey;

typedef struct choice_ent {
    int used;
    int dk; /* index into g_devkeys */
    int ta, tb;
    int64_t m, n, k;
    int choice;
    uint32_t calls; /* calls while unmeasured (CG_GEMM_CHOICE_NONE) */
    int live;       /* what this process ran the shape with (0: not run yet) */
} choice_ent;

static pthread_mutex_t g_tab_mu = PTHREAD_MUTEX_INITIALIZER;
static devkey *g_devkeys;
static int g_ndevkeys, g_capdevkeys;
static choice_ent *g_tab;
static size_t g_tab_cap, g_tab_count;
static int g_file_loaded;
static int g_measure_after = MEASURE_AFTER;

void cg_cl_gemm_test_set_measure_after(int calls) {
    pthread_mutex_lock(&g_tab_mu);
    g_measure_after = calls > 0 ? calls : MEASURE_AFTER;
    pthread_mutex_unlock(&g_tab_mu);
}

/* Tabs and line breaks would break the file's fields. */
static void sanitize(char *out, size_t size, const char *in) {
    size_t i = 0;
    for (; in[i] && i + 1 < size; i++)
        out[i] = (in[i] == '\t' || in[i] == '\n' || in[i] == '\r') ? ' ' : in[i];
    out[i] = '\0';
}

/* Interned id of (name, driver); -1 when out of memory. g_tab_mu held. */
static int devkey_id_locked(const char *name, const char *driver) {
    char n[256], dr[256];
    sanitize(n, sizeof n, name);
    sanitize(dr, sizeof dr, driver);
    for (int i = 0; i < g_ndevkeys; i++)
        if (!strcmp(g_devkeys[i].name, n) && !strcmp(g_devkeys[i].driver, dr)) return i;
    if (g_ndevkeys == g_capdevkeys) {
        int cap = g_capdevkeys ? 2 * g_capdevkeys : 4;
        devkey *nk = realloc(g_devkeys, (size_t)cap * sizeof *nk);
        if (!nk) return -1;
        g_devkeys = nk;
        g_capdevkeys = cap;
    }
    memcpy(g_devkeys[g_ndevkeys].name, n, sizeof n);
    memcpy(g_devkeys[g_ndevkeys].driver, dr, sizeof dr);
    return g_ndevkeys++;
}

static uint64_t key_hash(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k) {
    uint64_t v[4] = {(uint64_t)dk * 4u + (uint64_t)(ta * 2 + tb), (uint64_t)m, (uint64_t)n,
                     (uint64_t)k};
    return cg_fnv1a(CG_FNV_BASIS, v, sizeof v);
}

/* The slot of the key, or the empty slot where it would go. g_tab_mu held,
 * g_tab_cap > 0. */
static choice_ent *tab_slot(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k) {
    size_t mask = g_tab_cap - 1;
    size_t i = (size_t)key_hash(dk, ta, tb, m, n, k) & mask;
    for (;;) {
        choice_ent *e = &g_tab[i];
        if (!e->used) return e;
        if (e->dk == dk && e->ta == ta && e->tb == tb && e->m == m && e->n == n && e->k == k)
            return e;
        i = (i + 1) & mask;
    }
}

static int tab_grow_locked(void) {
    size_t cap = g_tab_cap ? 2 * g_tab_cap : 64;
    choice_ent *old = g_tab;
    size_t old_cap = g_tab_cap;
    choice_ent *nt = calloc(cap, sizeof *nt);
    if (!nt) return -1;
    g_tab = nt;
    g_tab_cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].used) continue;
        choice_ent *e = tab_slot(old[i].dk, old[i].ta, old[i].tb, old[i].m, old[i].n, old[i].k);
        *e = old[i];
    }
    free(old);
    return 0;
}

static int tab_get_locked(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k) {
    if (!g_tab_cap) return CG_GEMM_CHOICE_NONE;
    choice_ent *e = tab_slot(dk, ta, tb, m, n, k);
    return e->used ? e->choice : CG_GEMM_CHOICE_NONE;
}

/* Sets (or with CG_GEMM_CHOICE_NONE, marks unknown) a choice; an allocation
 * failure only means the shape is measured again later. */
static void tab_set_locked(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k, int choice) {
    if ((g_tab_count + 1) * 2 > g_tab_cap && tab_grow_locked() != 0) return;
    choice_ent *e = tab_slot(dk, ta, tb, m, n, k);
    if (!e->used) {
        e->used = 1;
        e->dk = dk;
        e->ta = ta;
        e->tb = tb;
        e->m = m;
        e->n = n;
        e->k = k;
        g_tab_count++;
    }
    e->choice = choice;
}

const char *cg_cl_gemm_choices_path(char *buf, size_t size) {
    const char *dir = cg_cache_dir();
    if (!dir || !dir[0] || snprintf(buf, size, "%s/%s", dir, CHOICES_FILE) >= (int)size) {
        if (size) buf[0] = '\0';
        return buf;
    }
    return buf;
}

/* How the own kernels are routed (bump when own_gemv, own_tiled or
 * rows_gemm() change what runs for a shape): with gemm.cl's text, the
 * identity of what a line of the file was measured against. */
#define OWN_ROUTING "rows-gemm-2"

static char g_own_id[24];
static pthread_once_t g_own_id_once = PTHREAD_ONCE_INIT;

static void make_own_id(void) {
    uint64_t h = cg_fnv1a(CG_FNV_BASIS, OWN_ROUTING, strlen(OWN_ROUTING));
    /* A forced path set routes shapes to other own kernels. */
    const char *paths = cg_cl_paths_forced(NULL);
    h = cg_fnv1a(h, paths, strlen(paths));
    h = cg_fnv1a(h, cg_cl_gemm_src, strlen(cg_cl_gemm_src));
    snprintf(g_own_id, sizeof g_own_id, "own=%016llx", (unsigned long long)h);
}

const char *cg_cl_gemm_own_id(void) {
    pthread_once(&g_own_id_once, make_own_id);
    return g_own_id;
}

/* Reads gemm-choices.txt into the table (later lines win). Malformed lines
 * and lines measured against other own kernels (their 7th field is not
 * cg_cl_gemm_own_id()) are skipped; a missing file is no error. g_tab_mu
 * held. */
/* One line "NAME\tDRIVER\tta tb m n k\tchoice\town_us\tclblast_us\town=ID"
 * of the choices file; lines of other builds (ID) are skipped. */
static void load_line_locked(char *line, void *ctx) {
    (void)ctx;
    char *field[7];
    int nf = 0;
    char *p = line;
    while (nf < 7) {
        field[nf++] = p;
        char *t = strchr(p, '\t');
        if (!t) break;
        *t = '\0';
        p = t + 1;
    }
    if (nf < 7 || strcmp(field[6], cg_cl_gemm_own_id()) != 0) return;
    int ta, tb, used = 0;
    long long m, n, k;
    if (sscanf(field[2], "%d %d %lld %lld %lld%n", &ta, &tb, &m, &n, &k, &used) != 5 ||
        field[2][used] != '\0' || (ta != 0 && ta != 1) || (tb != 0 && tb != 1) || m < 1 ||
        n < 1 || k < 1)
        return;
    int choice;
    if (!strcmp(field[3], "own"))
        choice = CG_GEMM_CHOICE_OWN;
    else if (!strcmp(field[3], "clblast"))
        choice = CG_GEMM_CHOICE_CLBLAST;
    else
        return;
    int dk = devkey_id_locked(field[0], field[1]);
    if (dk < 0) return;
    tab_set_locked(dk, ta, tb, m, n, k, choice);
    st_file_entries++;
}

static void load_file_locked(void) {
    char path[4200];
    g_file_loaded = 1;
    if (!cg_cl_gemm_choices_path(path, sizeof path)[0]) return;
    /* lines over 2046 bytes are not ours: skipped */
    cg_mlog_read(path, 2046, load_line_locked, NULL);
}

void cg_cl_gemm_test_forget(void) {
    pthread_mutex_lock(&g_tab_mu);
    free(g_tab);
    g_tab = NULL;
    g_tab_cap = g_tab_count = 0;
    g_file_loaded = 0;
    pthread_mutex_unlock(&g_tab_mu);
}

/* Counts a call of an unmeasured shape; returns the count (0 when the
 * table cannot grow: the shape then stays on the own kernels). g_tab_mu
 * held. */
static uint32_t count_call_locked(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k) {
    if ((g_tab_count + 1) * 2 > g_tab_cap && tab_grow_locked() != 0) return 0;
    choice_ent *e = tab_slot(dk, ta, tb, m, n, k);
    if (!e->used) {
        tab_set_locked(dk, ta, tb, m, n, k, CG_GEMM_CHOICE_NONE);
        e = tab_slot(dk, ta, tb, m, n, k);
    }
    if (e->calls < UINT32_MAX) e->calls++;
    return e->calls;
}

/* Looks a shape up. Known: its choice. Unknown: CHOICE_PENDING (own kernels
 * this time) when the shape is `untimed` or before its g_measure_after-th
 * call; at that call NONE, with the shape claimed for measuring (marked, so
 * concurrent callers use the own kernels meanwhile). */
static int lookup_or_claim(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k, int untimed) {
    pthread_mutex_lock(&g_tab_mu);
    if (!g_file_loaded) load_file_locked();
    int c = tab_get_locked(dk, ta, tb, m, n, k);
    if (c == CG_GEMM_CHOICE_NONE) {
        if (untimed || count_call_locked(dk, ta, tb, m, n, k) < (uint32_t)g_measure_after)
            c = CHOICE_PENDING;
        else
            tab_set_locked(dk, ta, tb, m, n, k, CHOICE_MEASURING);
    }
    pthread_mutex_unlock(&g_tab_mu);
    return c;
}

/* The implementation the shape runs with: the one this process first ran
 * it with, so that a plan's runs stay bit-identical when a measurement
 * later finds the other faster (that choice is in the table and the
 * choices file, for the next process); `choice` the first time. */
static int pin_choice(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k, int choice) {
    pthread_mutex_lock(&g_tab_mu);
    if ((g_tab_count + 1) * 2 <= g_tab_cap || tab_grow_locked() == 0) {
        choice_ent *e = tab_slot(dk, ta, tb, m, n, k);
        if (!e->used) {
            tab_set_locked(dk, ta, tb, m, n, k, CG_GEMM_CHOICE_NONE);
            e = tab_slot(dk, ta, tb, m, n, k);
        }
        if (e->used && !e->live) e->live = choice;
        if (e->used) choice = e->live;
    }
    pthread_mutex_unlock(&g_tab_mu);
    return choice;
}

/* CLBlast failed on a shape: own kernels from now on, whatever ran before. */
static void unpin_clblast(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k) {
    pthread_mutex_lock(&g_tab_mu);
    if (g_tab_cap) {
        choice_ent *e = tab_slot(dk, ta, tb, m, n, k);
        if (e->used) e->live = CG_GEMM_CHOICE_OWN;
    }
    pthread_mutex_unlock(&g_tab_mu);
}

static void set_choice(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k, int choice) {
    pthread_mutex_lock(&g_tab_mu);
    tab_set_locked(dk, ta, tb, m, n, k, choice);
    pthread_mutex_unlock(&g_tab_mu);
}

/* Appends "NAME\tDRIVER\tta tb m n k\tchoice\town_us\tclblast_us\town=ID";
 * write failures are ignored (the choice stays in memory). */
static void append_line(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k, int choice,
                        const char *own_us, const char *clblast_us) {
    char path[4200], line[1200];
    if (!cg_cl_gemm_choices_path(path, sizeof path)[0]) return;
    pthread_mutex_lock(&g_tab_mu);
    int len = snprintf(line, sizeof line, "%s\t%s\t%d %d %lld %lld %lld\t%s\t%s\t%s\t%s\n",
                       g_devkeys[dk].name, g_devkeys[dk].driver, ta, tb, (long long)m,
                       (long long)n, (long long)k,
                       choice == CG_GEMM_CHOICE_CLBLAST ? "clblast" : "own", own_us, clblast_us,
                       cg_cl_gemm_own_id());
    pthread_mutex_unlock(&g_tab_mu);
    if (len <= 0 || len >= (int)sizeof line) return;
    if (cg_mkdir_p(cg_cache_dir()) != 0) return;
    if (cg_mlog_append(path, line, (size_t)len) == 0) st_file_writes++;
}

int cg_cl_gemm_test_choice(cg_cl_device *d, int trans_a, int trans_b, int64_t m, int64_t n,
                           int64_t k) {
    const cg_cl_info *info = cg_cl_info_of(d);
    if (!info) return CG_GEMM_CHOICE_NONE;
    pthread_mutex_lock(&g_tab_mu);
    if (!g_file_loaded) load_file_locked();
    int dk = devkey_id_locked(info->name, info->driver);
    int c = dk < 0 ? CG_GEMM_CHOICE_NONE : tab_get_locked(dk, !!trans_a, !!trans_b, m, n, k);
    pthread_mutex_unlock(&g_tab_mu);
    return c == CHOICE_MEASURING ? CG_GEMM_CHOICE_NONE : c;
}

/* ------------------------------------------------------------------ */
/* Per-device kernels                                                   */

typedef struct tile_cfg {
    int tm, tn, tk, wm, wn;
} tile_cfg;

/* Tiled GEMM configurations {tm, tn, tk, wm, wn}, best first; a device
 * gets the first one its limits allow. Items per group: (tm / wm) * (tn / wn);
 * wn is the vector width of an item's columns (1, 2, 4 or 8). On PoCL
 * (2 cores) 64x64 tiles of 8x8 ran 128^3 at ~10 GFLOP/s, 4x4 blocks or
 * scalar columns 2-3x slower. */
static const tile_cfg k_large_cfgs[] = {
    {64, 64, 16, 8, 8}, {32, 32, 16, 4, 8}, {16, 16, 16, 2, 4},
    {8, 8, 8, 2, 2},    {4, 4, 4, 2, 2},    {1, 1, 1, 1, 1},
};
/* For small or thin products, where a large tile would be mostly padding. */
static const tile_cfg k_small_cfgs[] = {
    {32, 32, 16, 4, 8}, {16, 16, 16, 2, 4}, {8, 8, 8, 2, 2}, {4, 4, 4, 2, 2}, {1, 1, 1, 1, 1},
};

enum { TILE_LARGE = 0, TILE_SMALL = 1 };

typedef struct gemm_dev {
    cg_cl_device *d;
    cl_context ctx; /* retained: no other context can take this handle while we hold it */
    int dk;         /* devkey of (name, driver) */
    pthread_mutex_t mu; /* guards what follows, kernel arguments and enqueues */
    /* Each kernel is built on its first use, so a model whose products are
     * all GEMVs along rows compiles neither cg_gemv_cols nor a tiled GEMM. */
    int rows_ready, cols_ready, scale_ready, nt_ready;
    cl_kernel k_rows, k_cols, k_scale, k_nt;
    size_t lk, rows, rv, cr, ck, cv, scale_local;
    int tiled_ready[2];
    cl_kernel k_tiled[2];
    tile_cfg cfg[2];
    struct gemm_dev *next;
} gemm_dev;

static pthread_mutex_t g_dev_mu = PTHREAD_MUTEX_INITIALIZER;
static gemm_dev *g_devs;

static void dev_drop_kernels(gemm_dev *g) {
    cl_kernel ks[6] = {g->k_rows, g->k_cols, g->k_scale, g->k_tiled[0], g->k_tiled[1], g->k_nt};
    for (int i = 0; i < 6; i++)
        if (ks[i]) clReleaseKernel(ks[i]);
    g->k_rows = g->k_cols = g->k_scale = g->k_tiled[0] = g->k_tiled[1] = g->k_nt = NULL;
    g->rows_ready = g->cols_ready = g->scale_ready = g->nt_ready = 0;
    g->tiled_ready[0] = g->tiled_ready[1] = 0;
}

/* The state of d, created on first use. A device released and another
 * opened at the same address has a different context: its stale entry is
 * reset. */
static cg_status dev_get(cg_cl_device *d, gemm_dev **out) {
    cl_context ctx = cg_cl_context(d);
    const cg_cl_info *info = cg_cl_info_of(d);
    pthread_mutex_lock(&g_dev_mu);
    gemm_dev *g = g_devs;
    while (g && !(g->d == d && g->ctx == ctx)) g = g->next;
    if (!g) {
        for (g = g_devs; g && g->d != d; g = g->next) {
        }
        if (g) {
            /* Stale: the old device is gone. */
            pthread_mutex_lock(&g->mu);
            dev_drop_kernels(g);
            clReleaseContext(g->ctx);
            g->ctx = ctx;
            clRetainContext(ctx);
            pthread_mutex_unlock(&g->mu);
        } else {
            g = calloc(1, sizeof *g);
            if (!g || pthread_mutex_init(&g->mu, NULL) != 0) {
                free(g);
                pthread_mutex_unlock(&g_dev_mu);
                return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory for SGEMM state",
                                cg_cl_label(d));
            }
            g->d = d;
            g->ctx = ctx;
            clRetainContext(ctx);
            g->next = g_devs;
            g_devs = g;
        }
        pthread_mutex_lock(&g_tab_mu);
        g->dk = devkey_id_locked(info->name, info->driver);
        pthread_mutex_unlock(&g_tab_mu);
        if (g->dk < 0) {
            pthread_mutex_unlock(&g_dev_mu);
            return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory for SGEMM state",
                            cg_cl_label(d));
        }
    }
    pthread_mutex_unlock(&g_dev_mu);
    *out = g;
    return CG_OK;
}

void cg_cl_gemm_device_released(cg_cl_device *d) {
    pthread_mutex_lock(&g_dev_mu);
    gemm_dev **pp = &g_devs;
    while (*pp && (*pp)->d != d) pp = &(*pp)->next;
    gemm_dev *g = *pp;
    if (g) *pp = g->next;
    pthread_mutex_unlock(&g_dev_mu);
    if (!g) return;
    dev_drop_kernels(g);
    clReleaseContext(g->ctx);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

static size_t pow2_floor(size_t v) {
    size_t p = 1;
    while (p * 2 <= v) p *= 2;
    return p;
}

/* Largest work-group the device allows, capped at MAX_LOCAL. */
static size_t group_limit(const cg_cl_device *d) {
    size_t l = cg_cl_info_of(d)->max_work_group;
    if (l > MAX_LOCAL) l = MAX_LOCAL;
    return l ? l : 1;
}

static size_t local_mem_limit(const cg_cl_device *d) {
    uint64_t l = cg_cl_info_of(d)->local_mem;
    return l > MAX_LOCAL_MEM ? MAX_LOCAL_MEM : (size_t)l;
}

/* Whether kernel k can run with `items` per group and within local memory. */
static int kernel_fits(const cg_cl_device *d, cl_kernel k, size_t items) {
    cl_device_id dev = cg_cl_info_of(d)->device_id;
    size_t wg = 0;
    cl_ulong lmem = 0;
    if (clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) !=
        CL_SUCCESS)
        return 0;
    if (clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL) !=
        CL_SUCCESS)
        lmem = 0;
    return wg >= items && lmem <= cg_cl_info_of(d)->local_mem;
}

/* The GEMV group shape for the device: lk x rows items for cg_gemv_rows
 * (vectors of rv floats), cr x ck items for cg_gemv_cols (vectors of cv),
 * from the device type, capped by its limits. */
typedef struct gemv_shape {
    size_t lk, rows, rv, cr, ck, cv;
} gemv_shape;

/* Halves a GEMV group of outer x inner items: the inner dim first (it
 * only groups rows or columns), then the outer one. */
static void shrink_group(size_t *outer, size_t *inner) {
    if (*inner > 1)
        *inner /= 2;
    else
        *outer /= 2;
}

static gemv_shape gemv_shape_of(const cg_cl_device *d) {
    gemv_shape v;
    if (cg_cl_cpu_paths(d))
        /* CPU drivers run a group's items as a loop: few items per row,
         * many rows per group. */
        v = (gemv_shape){.lk = 1, .rows = 16, .rv = 16, .cr = 8, .ck = 1, .cv = 16};
    else
        v = (gemv_shape){.lk = 64, .rows = 4, .rv = 4, .cr = 64, .ck = 4, .cv = 4};
    size_t lim = pow2_floor(group_limit(d));
    size_t lim0 = pow2_floor(d->max_item[0] ? d->max_item[0] : 1);
    size_t lim1 = pow2_floor(d->max_item[1] ? d->max_item[1] : 1);
    if (v.lk > lim0) v.lk = lim0;
    if (v.cr > lim0) v.cr = lim0;
    if (v.rows > lim1) v.rows = lim1;
    if (v.ck > lim1) v.ck = lim1;
    while (v.lk * v.rows > lim) shrink_group(&v.lk, &v.rows);
    while (v.cr * v.ck > lim) shrink_group(&v.cr, &v.ck);
    return v;
}

/* Builds GEMV kernel `name` with its group of outer x inner items and
 * vectors of vec floats as the options -D<po>=outer -D<pi>=inner -D<pv>=vec;
 * a kernel that cannot run that group is rebuilt with a smaller one
 * (shrink_group), and *outer, *inner say the group it got. */
static cg_status build_gemv(cg_cl_device *d, const char *name, const char *po, const char *pi, const char *pv,
                            size_t *outer, size_t *inner, size_t vec, cl_kernel *out) {
    for (;;) {
        char opts[160];
        snprintf(opts, sizeof opts, "-DCG_GEMV -D%s=%zu -D%s=%zu -D%s=%zu", po, *outer, pi, *inner, pv, vec);
        cl_kernel k;
        cg_status s = cg_cl_kernel(d, cg_cl_gemm_src, opts, name, &k);
        if (s != CG_OK) return s;
        if (kernel_fits(d, k, *outer * *inner)) {
            clRetainKernel(k);
            *out = k;
            return CG_OK;
        }
        if (*outer * *inner == 1)
            return cg_error(CG_ERR_UNSUPPORTED, "%s: the GEMV kernels cannot run on this device",
                            cg_cl_label(d));
        shrink_group(outer, inner);
    }
}

/* Builds cg_gemv_rows (g->mu held). */
static cg_status build_gemv_rows(cg_cl_device *d, gemm_dev *g) {
    gemv_shape v = gemv_shape_of(d);
    cg_status s = build_gemv(d, "cg_gemv_rows", "GEMV_LK", "GEMV_ROWS", "GEMV_RV", &v.lk, &v.rows, v.rv, &g->k_rows);
    if (s != CG_OK) return s;
    g->lk = v.lk;
    g->rows = v.rows;
    g->rv = v.rv;
    g->rows_ready = 1;
    return CG_OK;
}

/* Builds cg_gemv_cols (g->mu held). */
static cg_status build_gemv_cols(cg_cl_device *d, gemm_dev *g) {
    gemv_shape v = gemv_shape_of(d);
    cg_status s = build_gemv(d, "cg_gemv_cols", "GEMV_CR", "GEMV_CK", "GEMV_CV", &v.cr, &v.ck, v.cv, &g->k_cols);
    if (s != CG_OK) return s;
    g->cr = v.cr;
    g->ck = v.ck;
    g->cv = v.cv;
    g->cols_ready = 1;
    return CG_OK;
}

/* Builds cg_gemm_nt_cpu (g->mu held): one item per group, so it fits any
 * device that runs a kernel at all. */
static cg_status build_nt(cg_cl_device *d, gemm_dev *g) {
    cl_kernel k;
    cg_status s = cg_cl_kernel(d, cg_cl_gemm_src, "-DCG_GEMV -DGEMV_RV=16", "cg_gemm_nt_cpu", &k);
    if (s != CG_OK) return s;
    clRetainKernel(k);
    g->k_nt = k;
    g->nt_ready = 1;
    return CG_OK;
}

/* Builds cg_gemm_scale (g->mu held). */
static cg_status build_scale(cg_cl_device *d, gemm_dev *g) {
    cl_kernel k;
    cg_status s = cg_cl_kernel(d, cg_cl_gemm_src, "-DCG_GEMV", "cg_gemm_scale", &k);
    if (s != CG_OK) return s;
    size_t wg = 0;
    if (clGetKernelWorkGroupInfo(k, cg_cl_info_of(d)->device_id, CL_KERNEL_WORK_GROUP_SIZE,
                                 sizeof wg, &wg, NULL) != CL_SUCCESS ||
        wg == 0)
        wg = 1;
    size_t lim0 = pow2_floor(d->max_item[0] ? d->max_item[0] : 1);
    size_t sl = 64;
    if (sl > lim0) sl = lim0;
    if (sl > wg) sl = pow2_floor(wg);
    clRetainKernel(k);
    g->k_scale = k;
    g->scale_local = sl;
    g->scale_ready = 1;
    return CG_OK;
}

/* The first configuration of a role, from `after` on (NULL: the start),
 * that fits the device's group, item and local memory limits; NULL when
 * none is left. */
static const tile_cfg *first_tile_cfg(const cg_cl_device *d, int role, const tile_cfg *after) {
    const tile_cfg *cfgs = role == TILE_LARGE ? k_large_cfgs : k_small_cfgs;
    size_t ncfg = role == TILE_LARGE ? sizeof k_large_cfgs / sizeof k_large_cfgs[0]
                                     : sizeof k_small_cfgs / sizeof k_small_cfgs[0];
    size_t lim = group_limit(d), lmem = local_mem_limit(d);
    for (size_t i = after ? (size_t)(after - cfgs) + 1 : 0; i < ncfg; i++) {
        const tile_cfg *c = &cfgs[i];
        size_t tnt = (size_t)(c->tn / c->wn), tmt = (size_t)(c->tm / c->wm);
        size_t bytes = (size_t)c->tk * (size_t)(c->tm + 1 + c->tn) * sizeof(float);
        if (tnt * tmt <= lim && tnt <= d->max_item[0] && tmt <= d->max_item[1] && bytes <= lmem)
            return c;
    }
    return NULL;
}

/* Builds the tiled GEMM of one role (g->mu held): the first configuration
 * that fits the device's limits and whose kernel can run its group. */
static cg_status build_tiled(cg_cl_device *d, gemm_dev *g, int role) {
    cg_status last = CG_OK;
    for (const tile_cfg *c = first_tile_cfg(d, role, NULL); c; c = first_tile_cfg(d, role, c)) {
        size_t tnt = (size_t)(c->tn / c->wn), tmt = (size_t)(c->tm / c->wm);
        char opts[256];
        snprintf(opts, sizeof opts,
                 "-DCG_GEMM_TM=%d -DCG_GEMM_TN=%d -DCG_GEMM_TK=%d -DCG_GEMM_WM=%d -DCG_GEMM_WN=%d",
                 c->tm, c->tn, c->tk, c->wm, c->wn);
        cl_kernel k;
        last = cg_cl_kernel(d, cg_cl_gemm_src, opts, "cg_gemm_tiled", &k);
        if (last != CG_OK) return last;
        if (!kernel_fits(d, k, tnt * tmt)) continue;
        clRetainKernel(k);
        g->k_tiled[role] = k;
        g->cfg[role] = *c;
        g->tiled_ready[role] = 1;
        return CG_OK;
    }
    return cg_error(CG_ERR_UNSUPPORTED, "%s: no tiled GEMM configuration fits this device",
                    cg_cl_label(d));
}

/* ------------------------------------------------------------------ */
/* The two implementations                                              */

typedef struct gemm_args {
    int ta, tb;
    int64_t m, n, k;
    float alpha, beta;
    cl_mem a, b, c;
    int64_t a_off, b_off, c_off, lda, ldb, ldc;
} gemm_args;

typedef struct karg {
    size_t size;
    const void *ptr;
} karg;

#define KI(v) {sizeof(cl_int), &(v)}
#define KF(v) {sizeof(cl_float), &(v)}
#define KM(v) {sizeof(cl_mem), &(v)}

/* Sets the arguments and enqueues (g->mu held). */
static cg_status launch(cg_cl_device *d, cl_kernel k, const karg *args, int nargs, int dims,
                        const size_t *global, const size_t *local, const char *what) {
    for (int i = 0; i < nargs; i++) {
        cl_int err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].ptr);
        if (err != CL_SUCCESS) {
            char call[96];
            snprintf(call, sizeof call, "clSetKernelArg(%s, %d)", what, i);
            return cg_cl_fail(d, CG_ERR_KERNEL, call, err);
        }
    }
    return cg_cl_launch(d, k, dims, global, local, what);
}

static size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

/* C = beta C (k == 0 or alpha == 0). */
static cg_status own_scale(cg_cl_device *d, gemm_dev *g, const gemm_args *x) {
    cg_status s;
    if (!g->scale_ready && (s = build_scale(d, g)) != CG_OK) return s;
    cl_int M = (cl_int)x->m, N = (cl_int)x->n, c_off = (cl_int)x->c_off, ldc = (cl_int)x->ldc;
    cl_float beta = x->beta;
    karg args[] = {KI(M), KI(N), KF(beta), KM(x->c), KI(c_off), KI(ldc)};
    size_t local[2] = {g->scale_local, 1};
    size_t global[2] = {round_up((size_t)N, local[0]), (size_t)M};
    return launch(d, g->k_scale, args, 6, 2, global, local, "cg_gemm_scale");
}

static cg_status own_gemv(cg_cl_device *d, gemm_dev *g, const gemm_args *x) {
    /* y[r] = alpha sum_p W(r, p) x[p] + beta y[r], W(r, p) = W[w_off + r*rs
     * + p*ps], x[p] = X[x_off + p*incx], y[r] = C[c_off + r*incy]. */
    int rows_form;
    cl_mem W, X;
    int64_t R, w_off, rs = 0, ps, x_off, incx, incy;
    if (x->m == 1 && x->n == 1) {
        int64_t a_inc = x->ta ? x->lda : 1, b_inc = x->tb ? 1 : x->ldb;
        rows_form = 1;
        R = 1;
        if (a_inc != 1 && b_inc == 1) {
            W = x->b, w_off = x->b_off, ps = b_inc, X = x->a, x_off = x->a_off, incx = a_inc;
        } else {
            W = x->a, w_off = x->a_off, ps = a_inc, X = x->b, x_off = x->b_off, incx = b_inc;
        }
        incy = 1;
    } else if (x->m == 1) {
        R = x->n;
        W = x->b, w_off = x->b_off, X = x->a, x_off = x->a_off;
        incx = x->ta ? x->lda : 1;
        incy = 1;
        rows_form = x->tb;
        if (x->tb)
            rs = x->ldb, ps = 1;
        else
            ps = x->ldb;
    } else { /* n == 1 */
        R = x->m;
        W = x->a, w_off = x->a_off, X = x->b, x_off = x->b_off;
        incx = x->tb ? 1 : x->ldb;
        incy = x->ldc;
        rows_form = !x->ta;
        if (!x->ta)
            rs = x->lda, ps = 1;
        else
            ps = x->lda;
    }
    cg_status s;
    if (rows_form ? !g->rows_ready && (s = build_gemv_rows(d, g)) != CG_OK
                  : !g->cols_ready && (s = build_gemv_cols(d, g)) != CG_OK)
        return s;
    cl_int cR = (cl_int)R, cK = (cl_int)x->k, cw = (cl_int)w_off, crs = (cl_int)rs,
           cps = (cl_int)ps, cx = (cl_int)x_off, cinx = (cl_int)incx, cy = (cl_int)x->c_off,
           ciny = (cl_int)incy, vec;
    cl_float alpha = x->alpha, beta = x->beta;
    if (rows_form) {
        int64_t v = (int64_t)g->rv;
        vec = ps == 1 && incx == 1 ? (w_off % v == 0 && rs % v == 0 && x_off % v == 0 ? 2 : 1) : 0;
        karg args[] = {KI(cR), KI(cK),  KF(alpha), KF(beta), KM(W),    KI(cw),   KI(crs),
                       KI(cps), KM(X), KI(cx),    KI(cinx), KM(x->c), KI(cy),   KI(ciny), KI(vec)};
        size_t local[2] = {g->lk, g->rows};
        size_t global[2] = {g->lk, round_up((size_t)R, g->rows)};
        return launch(d, g->k_rows, args, 15, 2, global, local, "cg_gemv_rows");
    }
    vec = w_off % (int64_t)g->cv == 0 && ps % (int64_t)g->cv == 0 ? 2 : 1;
    karg args[] = {KI(cR), KI(cK), KF(alpha), KF(beta), KM(W), KI(cw), KI(cps), KM(X),
                   KI(cx), KI(cinx), KM(x->c), KI(cy), KI(ciny), KI(vec)};
    size_t local[2] = {g->cr, g->ck};
    size_t global[2] = {round_up(((size_t)R + g->cv - 1) / g->cv, g->cr), g->ck};
    return launch(d, g->k_cols, args, 14, 2, global, local, "cg_gemv_cols");
}

/* Large tiles only when they are full and leave every compute unit at
 * least two groups. Decided before the large kernel is built (from the
 * configuration it would start from), so that products that never use it
 * do not compile it. */
static int want_large(const cg_cl_device *d, const gemm_dev *g, const gemm_args *x) {
    const tile_cfg *c = g->tiled_ready[TILE_LARGE] ? &g->cfg[TILE_LARGE]
                                                    : first_tile_cfg(d, TILE_LARGE, NULL);
    if (!c || x->m < c->tm || x->n < c->tn) return 0;
    uint64_t tiles =
        (uint64_t)((x->m + c->tm - 1) / c->tm) * (uint64_t)((x->n + c->tn - 1) / c->tn);
    uint64_t cu = cg_cl_info_of(d)->compute_units;
    return tiles >= 2 * (cu ? cu : 1);
}

static cg_status own_tiled(cg_cl_device *d, gemm_dev *g, const gemm_args *x) {
    cg_status s;
    int role = want_large(d, g, x) ? TILE_LARGE : TILE_SMALL;
    if (!g->tiled_ready[role] && (s = build_tiled(d, g, role)) != CG_OK) return s;
    const tile_cfg *c = &g->cfg[role];
    cl_int M = (cl_int)x->m, N = (cl_int)x->n, K = (cl_int)x->k;
    cl_int a_off = (cl_int)x->a_off, a_si = (cl_int)(x->ta ? 1 : x->lda),
           a_sp = (cl_int)(x->ta ? x->lda : 1);
    cl_int b_off = (cl_int)x->b_off, b_sp = (cl_int)(x->tb ? 1 : x->ldb),
           b_sj = (cl_int)(x->tb ? x->ldb : 1);
    cl_int c_off = (cl_int)x->c_off, ldc = (cl_int)x->ldc;
    cl_float alpha = x->alpha, beta = x->beta;
    karg args[] = {KI(M),    KI(N),    KI(K),    KF(alpha), KF(beta), KM(x->a),
                   KI(a_off), KI(a_si), KI(a_sp), KM(x->b), KI(b_off), KI(b_sp),
                   KI(b_sj), KM(x->c), KI(c_off), KI(ldc)};
    size_t local[2] = {(size_t)(c->tn / c->wn), (size_t)(c->tm / c->wm)};
    size_t global[2] = {(size_t)((x->n + c->tn - 1) / c->tn) * local[0],
                        (size_t)((x->m + c->tm - 1) / c->tm) * local[1]};
    return launch(d, g->k_tiled[role], args, 16, 2, global, local, "cg_gemm_tiled");
}

/* Whether C = A B^T (a linear layer's x W^T) goes through cg_gemm_nt_cpu
 * rather than the tiled GEMM. On CPU devices a work-item that keeps 4 of W's
 * rows in cache against all of A's rows, in register tiles, beats the
 * local-memory tiles: on PoCL (2 cores) the tiled GEMM reached 1 to 16
 * GFLOP/s and CLBlast 12 to 34, one GEMV per row of A (cg_gemv_rows, the
 * previous route) 30 to 72, and cg_gemm_nt_cpu takes half of that GEMV's
 * time in the medium decoder at batch 64. GPUs keep the tiled GEMM, whose
 * local-memory tiles reuse each loaded value across rows. */
static int rows_gemm(const cg_cl_device *d, const gemm_args *x) {
    return cg_cl_cpu_paths(d) && !x->ta && x->tb;
}

/* C = A B^T with at least 2 rows of A on a CPU device: cg_gemm_nt_cpu's 4 x 4
 * register tiles (see gemm.cl). */
static cg_status own_nt(cg_cl_device *d, gemm_dev *g, const gemm_args *x) {
    cg_status s;
    if (!g->nt_ready && (s = build_nt(d, g)) != CG_OK) return s;
    cl_int cM = (cl_int)x->m, cN = (cl_int)x->n, cK = (cl_int)x->k, ca = (cl_int)x->a_off,
           clda = (cl_int)x->lda, cb = (cl_int)x->b_off, cldb = (cl_int)x->ldb,
           cc = (cl_int)x->c_off, cldc = (cl_int)x->ldc;
    cl_float alpha = x->alpha, beta = x->beta;
    karg args[] = {KI(cM), KI(cN),   KI(cK), KF(alpha), KF(beta), KM(x->a), KI(ca),
                   KI(clda), KM(x->b), KI(cb), KI(cldb), KM(x->c), KI(cc),  KI(cldc)};
    size_t local[1] = {1}, global[1] = {(size_t)((x->n + 3) / 4)};
    return launch(d, g->k_nt, args, 14, 1, global, local, "cg_gemm_nt_cpu");
}

static cg_status run_own(cg_cl_device *d, gemm_dev *g, const gemm_args *x) {
    pthread_mutex_lock(&g->mu);
    cg_status s;
    if (x->k == 0 || x->alpha == 0.0f)
        s = own_scale(d, g, x);
    else if (x->m == 1 || x->n == 1)
        s = own_gemv(d, g, x);
    else if (rows_gemm(d, x))
        s = own_nt(d, g, x);
    else
        s = own_tiled(d, g, x);
    pthread_mutex_unlock(&g->mu);
    if (s == CG_OK) st_own++;
    return s;
}

static _Atomic int g_fail_clblast; /* test hook: CLBlast "fails" without being called */

void cg_cl_gemm_test_fail_clblast(int on) { g_fail_clblast = on; }

#if !CG_HAVE_CLBLAST
/* Reached only by CLGRAPH_GEMM=clblast set through the test hook
 * cg_cl_gemm_test_set_mode; *code gets CLBlastNotImplemented's code. */
static cg_status run_clblast(cg_cl_device *d, const gemm_args *x, int *code) {
    (void)x;
    *code = -1024;
    return cg_error(CG_ERR_UNSUPPORTED, "%s: SGEMM: %s", cg_cl_label(d), NO_CLBLAST);
}
#else
static pthread_mutex_t g_clblast_mu = PTHREAD_MUTEX_INITIALIZER;

/* *code gets CLBlast's status (0 on success). */
static cg_status run_clblast(cg_cl_device *d, const gemm_args *x, int *code) {
    cl_command_queue q = cg_cl_queue(d);
    cl_event cap_ev = NULL; /* kept for a profile's device times */
    pthread_mutex_lock(&g_clblast_mu);
    CLBlastStatusCode st = g_fail_clblast ? CLBlastNotImplemented : CLBlastSgemm(
        CLBlastLayoutRowMajor, x->ta ? CLBlastTransposeYes : CLBlastTransposeNo,
        x->tb ? CLBlastTransposeYes : CLBlastTransposeNo, (size_t)x->m, (size_t)x->n,
        (size_t)x->k, x->alpha, x->a, (size_t)x->a_off, (size_t)x->lda, x->b, (size_t)x->b_off,
        (size_t)x->ldb, x->beta, x->c, (size_t)x->c_off, (size_t)x->ldc, &q, d->capture ? &cap_ev : NULL);
    pthread_mutex_unlock(&g_clblast_mu);
    if (st == CLBlastSuccess) cg_cl_capture_keep(d, cap_ev, 0);
    *code = (int)st;
    if (st != CLBlastSuccess)
        return cg_error(CG_ERR_KERNEL, "%s: CLBlastSgemm(%c%c, m=%lld n=%lld k=%lld) failed: %s",
                        cg_cl_label(d), x->ta ? 'T' : 'N', x->tb ? 'T' : 'N', (long long)x->m,
                        (long long)x->n, (long long)x->k, cg_clblast_error_name((int)st));
    st_clblast++;
    return CG_OK;
}
#endif

/* ------------------------------------------------------------------ */
/* Measurement                                                          */

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* One warm-up (which also compiles), then up to TIMED_RUNS timed runs of
 * enqueue + clFinish; *best_us gets the fastest. */
static cg_status time_candidate(cg_cl_device *d, gemm_dev *g, const gemm_args *x, int clblast,
                                int *code, double *best_us) {
    double spent = 0.0, best = HUGE_VAL;
    for (int i = 0; i <= TIMED_RUNS; i++) {
        double t0 = now_us();
        cg_status s = clblast ? run_clblast(d, x, code) : run_own(d, g, x);
        if (s == CG_OK) s = cg_cl_finish(d);
        if (s != CG_OK) return s;
        double t = now_us() - t0;
        if (i == 0) continue; /* warm-up */
        if (t < best) best = t;
        spent += t;
        if (spent > TIMING_BUDGET_US) break;
    }
    *best_us = best;
    return CG_OK;
}

/* Times both implementations on a scratch copy of C (the caller's C is left
 * for the one real run), records the faster and returns it in *choice. */
static cg_status measure(cg_cl_device *d, gemm_dev *g, const gemm_args *x, int *choice) {
    st_measure++;
    cg_status s = cg_cl_finish(d); /* the caller's earlier work is not ours to time */
    if (s != CG_OK) return s;
    size_t elems = (size_t)((x->m - 1) * x->ldc + x->n);
    cl_mem scratch;
    if (cg_cl_alloc(d, elems * sizeof(float), &scratch) != CG_OK) {
        /* No room to measure: use the own kernels this time, measure later. */
        cg_error_clear();
        *choice = CG_GEMM_CHOICE_NONE;
        return CG_OK;
    }
    s = cg_cl_copy(d, x->c, (size_t)x->c_off * sizeof(float), scratch, 0, elems * sizeof(float));
    if (s != CG_OK) {
        clReleaseMemObject(scratch);
        return s;
    }
    gemm_args t = *x;
    t.c = scratch;
    t.c_off = 0;
    double own_us = 0.0, clb_us = 0.0;
    int code = 0;
    s = time_candidate(d, g, &t, 0, &code, &own_us);
    if (s != CG_OK) {
        clReleaseMemObject(scratch);
        return s;
    }
    cg_status cs = time_candidate(d, g, &t, 1, &code, &clb_us);
    if (cs != CG_OK) {
        cg_error_clear();
        st_clblast_fail++;
        /* A CLBlast failure may leave an OpenCL error pending on the queue. */
        clFinish(cg_cl_queue(d));
    }
    clReleaseMemObject(scratch);
    *choice = cs == CG_OK && clb_us < own_us ? CG_GEMM_CHOICE_CLBLAST : CG_GEMM_CHOICE_OWN;
    char own_txt[32], clb_txt[96];
    snprintf(own_txt, sizeof own_txt, "%.1f", own_us);
    if (cs == CG_OK)
        snprintf(clb_txt, sizeof clb_txt, "%.1f", clb_us);
    else
        snprintf(clb_txt, sizeof clb_txt, "failed(%s)",
                 code ? cg_clblast_error_name(code) : "OpenCL");
    set_choice(g->dk, x->ta, x->tb, x->m, x->n, x->k, *choice);
    append_line(g->dk, x->ta, x->tb, x->m, x->n, x->k, *choice, own_txt, clb_txt);
    return CG_OK;
}

/* ------------------------------------------------------------------ */
/* Entry point                                                          */

/* Checks that buf holds the matrix rows x cols with leading dimension ld
 * from element off; *last gets one past its last element index. */
static cg_status check_matrix(cg_cl_device *d, char which, cl_mem buf, int64_t off, int64_t rows,
                              int64_t cols, int64_t ld, int64_t *last) {
    size_t bytes = 0;
    cl_int err = clGetMemObjectInfo(buf, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
    if (err != CL_SUCCESS) {
        char call[64];
        snprintf(call, sizeof call, "clGetMemObjectInfo(SGEMM %c)", which);
        return cg_cl_fail(d, CG_ERR_INVALID_ARGUMENT, call, err);
    }
    /* rows, cols >= 1 and ld >= cols here; the sizes fit comfortably in
     * 64 bits only if each factor does, so bound them first. */
    if (rows > INT64_MAX / 4 / ld)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: SGEMM %c: %lld x %lld (ld %lld) is too large",
                        cg_cl_label(d), which, (long long)rows, (long long)cols, (long long)ld);
    int64_t end = off + (rows - 1) * ld + cols;
    if (end > (int64_t)(bytes / sizeof(float)))
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "%s: SGEMM %c: %lld x %lld with ld %lld from offset %lld needs %lld "
                        "floats, the buffer holds %llu",
                        cg_cl_label(d), which, (long long)rows, (long long)cols, (long long)ld,
                        (long long)off, (long long)end,
                        (unsigned long long)(bytes / sizeof(float)));
    *last = end;
    return CG_OK;
}

cg_status cg_cl_sgemm(cg_cl_device *d, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                      float alpha, cl_mem a, size_t a_off, int64_t lda, cl_mem b, size_t b_off,
                      int64_t ldb, float beta, cl_mem c, size_t c_off, int64_t ldc) {
    if (!d) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_cl_sgemm: device is NULL");
    const char *label = cg_cl_label(d);
    int ta = !!trans_a, tb = !!trans_b;
    if (m < 0 || n < 0 || k < 0)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: SGEMM: negative size m=%lld n=%lld k=%lld",
                        label, (long long)m, (long long)n, (long long)k);
    int64_t a_cols = ta ? m : k, b_cols = tb ? k : n;
    if (lda < (a_cols > 1 ? a_cols : 1) || ldb < (b_cols > 1 ? b_cols : 1) ||
        ldc < (n > 1 ? n : 1))
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "%s: SGEMM %c%c m=%lld n=%lld k=%lld: leading dimensions lda=%lld "
                        "ldb=%lld ldc=%lld must be at least %lld, %lld and %lld",
                        label, ta ? 'T' : 'N', tb ? 'T' : 'N', (long long)m, (long long)n,
                        (long long)k, (long long)lda, (long long)ldb, (long long)ldc,
                        (long long)(a_cols > 1 ? a_cols : 1), (long long)(b_cols > 1 ? b_cols : 1),
                        (long long)(n > 1 ? n : 1));
    if (a_off > INT64_MAX / 8 || b_off > INT64_MAX / 8 || c_off > INT64_MAX / 8)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: SGEMM: offset out of range", label);
    if (m == 0 || n == 0) return CG_OK;
    if (!c) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: SGEMM: C is NULL", label);
    int trivial = k == 0 || alpha == 0.0f; /* C = beta C: A and B are not read */
    int64_t end_a = 0, end_b = 0, end_c = 0;
    cg_status s = check_matrix(d, 'C', c, (int64_t)c_off, m, n, ldc, &end_c);
    if (s != CG_OK) return s;
    if (!trivial) {
        if (!a || !b)
            return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: SGEMM: %s is NULL", label, a ? "B" : "A");
        s = check_matrix(d, 'A', a, (int64_t)a_off, ta ? k : m, a_cols, lda, &end_a);
        if (s == CG_OK)
            s = check_matrix(d, 'B', b, (int64_t)b_off, tb ? n : k, b_cols, ldb, &end_b);
        if (s != CG_OK) return s;
    }
    /* The own kernels index with int. */
    int own_ok = end_a <= INT32_MAX && end_b <= INT32_MAX && end_c <= INT32_MAX &&
                 lda <= INT32_MAX && ldb <= INT32_MAX && ldc <= INT32_MAX;

    int mode;
    if ((s = current_mode(&mode)) != CG_OK) return s;
    gemm_dev *g = NULL;
    if ((s = dev_get(d, &g)) != CG_OK) return s;
    gemm_args x = {.ta = ta, .tb = tb, .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta,
                   .a = a, .b = b, .c = c, .a_off = (int64_t)a_off, .b_off = (int64_t)b_off,
                   .c_off = (int64_t)c_off, .lda = lda, .ldb = ldb, .ldc = ldc};
    if (trivial || mode == CG_GEMM_OWN) {
        if (!own_ok)
            return cg_error(CG_ERR_UNSUPPORTED,
                            "%s: SGEMM m=%lld n=%lld k=%lld: matrices past 2^31 elements need "
                            "CLBlast (CLGRAPH_GEMM=auto or clblast)",
                            label, (long long)m, (long long)n, (long long)k);
        return run_own(d, g, &x);
    }
    int code = 0;
    if (mode == CG_GEMM_CLBLAST || !own_ok) return run_clblast(d, &x, &code);

    int untimed = m == 1 || n == 1 || rows_gemm(d, &x);
    int choice = lookup_or_claim(g->dk, ta, tb, m, n, k, untimed);
    if (choice == CG_GEMM_CHOICE_NONE) {
        s = measure(d, g, &x, &choice);
        if (s != CG_OK || choice == CG_GEMM_CHOICE_NONE) {
            /* Unmeasured: let a later call try again. */
            set_choice(g->dk, ta, tb, m, n, k, CG_GEMM_CHOICE_NONE);
            if (s != CG_OK) return s;
            choice = CG_GEMM_CHOICE_OWN;
        }
    } else if (choice == CHOICE_MEASURING || choice == CHOICE_PENDING) {
        choice = CG_GEMM_CHOICE_OWN; /* being timed by another thread, or not yet due */
    }
    choice = pin_choice(g->dk, ta, tb, m, n, k, choice);
    if (choice == CG_GEMM_CHOICE_CLBLAST) {
        s = run_clblast(d, &x, &code);
        if (s == CG_OK) return CG_OK;
        /* CLBlast failed where it once worked: own kernels from now on. */
        char clb_txt[96];
        snprintf(clb_txt, sizeof clb_txt, "failed(%s)", cg_clblast_error_name(code));
        cg_error_clear();
        st_clblast_fail++;
        clFinish(cg_cl_queue(d));
        set_choice(g->dk, ta, tb, m, n, k, CG_GEMM_CHOICE_OWN);
        unpin_clblast(g->dk, ta, tb, m, n, k);
        append_line(g->dk, ta, tb, m, n, k, CG_GEMM_CHOICE_OWN, "-1", clb_txt);
    }
    return run_own(d, g, &x);
}
