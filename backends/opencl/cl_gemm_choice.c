/* The choice table of the OpenCL SGEMM (cl_gemm.c says how a choice is
 * made): (device name and driver, transposes, m, n, k) -> own kernels or
 * CLBlast, in memory and in cg_cache_dir()/gemm-choices.txt (through
 * base/measure_log), read back at first use. g_tab_mu guards it all: the
 * *_locked functions are called with it held, the others take it. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl/cl_gemm_impl.h"
#include "cache.h"
#include "hash.h"
#include "measure_log.h"

#define CHOICES_FILE "gemm-choices.txt"
#define MEASURE_AFTER 16 /* calls of an unmeasured shape before it is timed */

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
    for (; in[i] && i + 1 < size; i++) out[i] = (in[i] == '\t' || in[i] == '\n' || in[i] == '\r') ? ' ' : in[i];
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

int cg_cl_gemm_devkey(const char *name, const char *driver) {
    pthread_mutex_lock(&g_tab_mu);
    int dk = devkey_id_locked(name, driver);
    pthread_mutex_unlock(&g_tab_mu);
    return dk;
}

static uint64_t key_hash(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k) {
    uint64_t v[4] = {(uint64_t)dk * 4u + (uint64_t)(ta * 2 + tb), (uint64_t)m, (uint64_t)n, (uint64_t)k};
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
        if (e->dk == dk && e->ta == ta && e->tb == tb && e->m == m && e->n == n && e->k == k) return e;
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
    if (sscanf(field[2], "%d %d %lld %lld %lld%n", &ta, &tb, &m, &n, &k, &used) != 5 || field[2][used] != '\0' ||
        (ta != 0 && ta != 1) || (tb != 0 && tb != 1) || m < 1 || n < 1 || k < 1)
        return;
    int choice;
    if (!strcmp(field[3], "own")) choice = CG_GEMM_CHOICE_OWN;
    else if (!strcmp(field[3], "clblast")) choice = CG_GEMM_CHOICE_CLBLAST;
    else return;
    int dk = devkey_id_locked(field[0], field[1]);
    if (dk < 0) return;
    tab_set_locked(dk, ta, tb, m, n, k, choice);
    cg_cl_gemm_st_file_entries++;
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

/* Looks a shape up. Known: its choice. Unknown: CG_GEMM_CHOICE_PENDING
 * (own kernels this time) when the shape is `untimed` or before its
 * g_measure_after-th call; at that call NONE, with the shape claimed for
 * measuring (marked, so concurrent callers use the own kernels meanwhile). */
int cg_cl_gemm_lookup_or_claim(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k, int untimed) {
    pthread_mutex_lock(&g_tab_mu);
    if (!g_file_loaded) load_file_locked();
    int c = tab_get_locked(dk, ta, tb, m, n, k);
    if (c == CG_GEMM_CHOICE_NONE) {
        if (untimed || count_call_locked(dk, ta, tb, m, n, k) < (uint32_t)g_measure_after) c = CG_GEMM_CHOICE_PENDING;
        else tab_set_locked(dk, ta, tb, m, n, k, CG_GEMM_CHOICE_MEASURING);
    }
    pthread_mutex_unlock(&g_tab_mu);
    return c;
}

/* The implementation the shape runs with: the one this process first ran
 * it with, so that a plan's runs stay bit-identical when a measurement
 * later finds the other faster (that choice is in the table and the
 * choices file, for the next process); `choice` the first time. */
int cg_cl_gemm_pin_choice(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k, int choice) {
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
void cg_cl_gemm_unpin_clblast(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k) {
    pthread_mutex_lock(&g_tab_mu);
    if (g_tab_cap) {
        choice_ent *e = tab_slot(dk, ta, tb, m, n, k);
        if (e->used) e->live = CG_GEMM_CHOICE_OWN;
    }
    pthread_mutex_unlock(&g_tab_mu);
}

void cg_cl_gemm_set_choice(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k, int choice) {
    pthread_mutex_lock(&g_tab_mu);
    tab_set_locked(dk, ta, tb, m, n, k, choice);
    pthread_mutex_unlock(&g_tab_mu);
}

/* Appends "NAME\tDRIVER\tta tb m n k\tchoice\town_us\tclblast_us\town=ID";
 * write failures are ignored (the choice stays in memory). */
void cg_cl_gemm_append_line(int dk, int ta, int tb, int64_t m, int64_t n, int64_t k, int choice, const char *own_us,
                            const char *clblast_us) {
    char path[4200], line[1200];
    if (!cg_cl_gemm_choices_path(path, sizeof path)[0]) return;
    pthread_mutex_lock(&g_tab_mu);
    int len = snprintf(line, sizeof line, "%s\t%s\t%d %d %lld %lld %lld\t%s\t%s\t%s\t%s\n", g_devkeys[dk].name,
                       g_devkeys[dk].driver, ta, tb, (long long)m, (long long)n, (long long)k,
                       choice == CG_GEMM_CHOICE_CLBLAST ? "clblast" : "own", own_us, clblast_us, cg_cl_gemm_own_id());
    pthread_mutex_unlock(&g_tab_mu);
    if (len <= 0 || len >= (int)sizeof line) return;
    if (cg_mkdir_p(cg_cache_dir()) != 0) return;
    if (cg_mlog_append(path, line, (size_t)len) == 0) cg_cl_gemm_st_file_writes++;
}

int cg_cl_gemm_test_choice(cg_cl_device *d, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k) {
    const cg_cl_info *info = cg_cl_info_of(d);
    if (!info) return CG_GEMM_CHOICE_NONE;
    pthread_mutex_lock(&g_tab_mu);
    if (!g_file_loaded) load_file_locked();
    int dk = devkey_id_locked(info->name, info->driver);
    int c = dk < 0 ? CG_GEMM_CHOICE_NONE : tab_get_locked(dk, !!trans_a, !!trans_b, m, n, k);
    pthread_mutex_unlock(&g_tab_mu);
    return c == CG_GEMM_CHOICE_MEASURING ? CG_GEMM_CHOICE_NONE : c;
}
