/* The per-node state of int8 products (linear, matmul_integer): 128 times
 * the sum of each weight row, which the int8 kernels subtract instead of
 * summing B in every call (cg_cpu_gemm_nt_q8's b_sums). A plan lowers one
 * instance per binding of its symbolic dims (a decoder: one per cache
 * length), and the weights are the same in all of them: the sums of one
 * weight are made once and shared, counted by reference, instead of made
 * again (a pass over every int8 weight) and held by each instance (OPUS
 * base: 263 KB an instance, up to 128 instances). */
#include "ops_common.h"

#include <pthread.h>
#include <stdlib.h>

#include "cpu/cpu_gemm.h"

/* One weight's sums: its bytes' address and shape identify it (a weight
 * outlives the instances that reference it, so an address is not reused
 * while its entry lives). */
typedef struct sums_entry {
    const void *w;
    int64_t n, k;
    int32_t *sums;
    int refs;
} sums_entry;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static sums_entry *g_tab;
static int g_n, g_cap;

/* The shared sums of int8 weight w [n, k], made when no state holds them
 * yet (*made: their bytes, else 0); NULL when out of memory. */
static int32_t *sums_get(const void *w, int64_t n, int64_t k, size_t *made) {
    *made = 0;
    pthread_mutex_lock(&g_lock);
    int32_t *r = NULL;
    for (int i = 0; i < g_n && !r; i++)
        if (g_tab[i].w == w && g_tab[i].n == n && g_tab[i].k == k) {
            g_tab[i].refs++;
            r = g_tab[i].sums;
        }
    if (!r && g_n == g_cap) {
        const int cap = g_cap ? 2 * g_cap : 64;
        sums_entry *m = realloc(g_tab, sizeof *m * (size_t)cap);
        if (m) g_tab = m, g_cap = cap;
    }
    if (!r && g_n < g_cap && (r = malloc((n ? (size_t)n : 1) * sizeof *r))) {
        cg_cpu_q8_row_sums(n, k, w, k, r);
        g_tab[g_n++] = (sums_entry){w, n, k, r, 1};
        *made = (size_t)n * sizeof *r;
    }
    pthread_mutex_unlock(&g_lock);
    return r;
}

static void sums_put(const int32_t *sums) {
    if (!sums) return;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_n; i++) {
        if (g_tab[i].sums != sums || --g_tab[i].refs > 0) continue;
        free(g_tab[i].sums);
        g_tab[i] = g_tab[--g_n];
        break;
    }
    if (!g_n) { /* nothing left: no memory held between models */
        free(g_tab);
        g_tab = NULL;
        g_cap = 0;
    }
    pthread_mutex_unlock(&g_lock);
}

typedef struct cg_ops_q8_state {
    int32_t *sums[2];
} cg_ops_q8_state;

cg_op_status cg_ops_q8_state_create(const cg_kernel_args *a, const int *w, int n_w, void **state, size_t *bytes) {
    *state = NULL;
    *bytes = 0;
    cg_ops_q8_state *st = NULL;
    for (int i = 0; i < n_w && i < 2; i++) {
        const cg_tensor_desc *d = &a->call->inputs[w[i]];
        if (d->dtype != (cg_op_dtype)CG_I8 || !a->in[w[i]] || d->ndim != 2) continue;
        if (!st && !(st = calloc(1, sizeof *st))) return CG_OP_NO_MEMORY;
        size_t made;
        if (!(st->sums[i] = sums_get(a->in[w[i]], d->dims[0], d->dims[1], &made))) {
            cg_ops_q8_state_destroy(st);
            return CG_OP_NO_MEMORY;
        }
        *bytes += made; /* shared sums count once, in the state that made them */
    }
    if (st) *bytes += sizeof *st;
    *state = st;
    return CG_OP_OK;
}

void cg_ops_q8_state_destroy(void *state) {
    cg_ops_q8_state *st = state;
    if (!st) return;
    sums_put(st->sums[0]);
    sums_put(st->sums[1]);
    free(st);
}

const int32_t *cg_ops_q8_sums(const cg_kernel_args *a, int i) {
    const cg_ops_q8_state *st = a->state;
    return st && i >= 0 && i < 2 ? st->sums[i] : NULL;
}
