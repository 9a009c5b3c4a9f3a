/* Host blocks for carried outputs (slots with carry_in): each run writes
 * them straight into blocks of the plan's pool, and a carried input's block
 * joins the pool as soon as the run's last step reading it has run. A
 * decoder whose layers each read their cache and write its grown copy then
 * holds one block more than its caches, not two of each: the output of
 * layer l + 1 goes where layer l's input was. Ownership changes only when a
 * run succeeds: the blocks written become the carries' values, every other
 * block the pool's. */
#include <stdlib.h>

#include "error.h"
#include "plan.h"
#include "shape.h"

/* A block the run may write a carried output into: from step `avail` on
 * (a pool block: from the start). */
typedef struct cand {
    host_block b;
    int avail;
    int taken;
} cand;

static cg_status pool_push(cg_plan *p, host_block b) {
    if (p->n_pool == p->pool_cap) {
        int cap = p->pool_cap ? 2 * p->pool_cap : 8;
        host_block *m = realloc(p->pool, sizeof *m * (size_t)cap);
        if (!m) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        p->pool = m;
        p->pool_cap = cap;
    }
    p->pool[p->n_pool++] = b;
    return CG_OK;
}

void cg_carry_pool_free(cg_plan *p) {
    for (int i = 0; i < p->n_pool; i++) cg_tensor_free(p->pool[i].t);
    free(p->pool);
    free(p->pool_scratch);
    p->pool = NULL;
    p->pool_scratch = NULL;
    p->n_pool = p->pool_cap = p->pool_scratch_cap = 0;
}

/* The slot of carry k's output when the run writes it into a block. */
static slot *direct_slot(cg_plan *p, instance *in, int k) {
    const carry *c = &p->carry[k];
    if (c->out < 0) return NULL;
    slot *s = &in->slots[in->out_slot[c->out]];
    return s->carry_in == k ? s : NULL;
}

/* The blocks this run may use: the pool's, each carried input's host
 * value after the last step that reads it, and the value of a carry whose
 * input this run is given instead (a new sentence's first step). */
static int candidates(cg_plan *p, instance *in, cand *cs) {
    int n = 0;
    for (int i = 0; i < p->n_pool; i++) cs[n++] = (cand){p->pool[i], -1, 0};
    const cg_graph *g = p->graph;
    for (int k = 0; k < g->n_inputs; k++) {
        const carry *c = &p->carry[k];
        if (!c->host || !direct_slot(p, in, k)) continue;
        if (!p->carried[k]) {
            cs[n++] = (cand){{c->host, c->host_cap}, -1, 0};
            continue;
        }
        if (!c->on_host) continue;
        const slot *si = &in->slots[in->val_slot[g->inputs[k]]];
        if (si->kind == SLOT_INPUT && si->last_step < in->n_steps)
            cs[n++] = (cand){{c->host, c->host_cap}, si->last_step, 0};
    }
    return n;
}

/* The smallest free block of at least `need` bytes, else a new one (twice
 * the largest free one, so a value that grows a row per run
 * reallocates a logarithmic number of times; mapped pages not yet written
 * cost nothing). */
static cg_status pick(cg_plan *p, cand *cs, int *n, int at, size_t need, host_block *out, cg_plan_stats *stats) {
    int best = -1;
    size_t largest = 0;
    for (int i = 0; i < *n; i++) {
        if (cs[i].taken || cs[i].avail >= at) continue;
        if (cs[i].b.cap > largest) largest = cs[i].b.cap;
        if (cs[i].b.cap >= need && (best < 0 || cs[i].b.cap < cs[best].b.cap)) best = i;
    }
    if (best < 0) {
        const size_t cap = cg_carry_grown(need, largest);
        const int64_t bytes = (int64_t)(cap ? cap : 1);
        host_block b = {NULL, cap};
        cg_status st = cg_tensor_alloc(CG_U8, 1, &bytes, &b.t);
        if (!st) st = pool_push(p, b);
        if (st) {
            cg_tensor_free(b.t);
            return st;
        }
        stats->host_allocs++;
        best = (*n)++;
        cs[best] = (cand){b, -1, 0};
    }
    cs[best].taken = 1;
    *out = cs[best].b;
    return CG_OK;
}

cg_status cg_carry_direct(cg_plan *p, instance *in, cg_plan_stats *stats) {
    const int n_in = p->graph->n_inputs;
    int n_out = 0;
    for (int k = 0; k < n_in; k++) {
        p->carry[k].has_next = 0;
        n_out += direct_slot(p, in, k) != NULL;
    }
    if (!n_out) return CG_OK;
    /* every block there is, plus one new per output at most; kept on the
     * plan, so that a steady state allocates nothing */
    const int need = p->n_pool + 2 * n_in + 1;
    if (need > p->pool_scratch_cap) {
        cand *m = realloc(p->pool_scratch, sizeof *m * (size_t)need);
        if (!m) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        p->pool_scratch = m;
        p->pool_scratch_cap = need;
    }
    cand *cs = p->pool_scratch;
    int n = candidates(p, in, cs);
    cg_status st = CG_OK;
    /* outputs in the order the steps make them */
    for (int done = 0; !st && done < n_out; done++) {
        int k_next = -1;
        for (int k = 0; k < n_in; k++) {
            const slot *s = direct_slot(p, in, k);
            if (s && !p->carry[k].has_next && (k_next < 0 || s->def_step < direct_slot(p, in, k_next)->def_step))
                k_next = k;
        }
        carry *c = &p->carry[k_next];
        slot *s = direct_slot(p, in, k_next);
        const size_t bytes = cg_desc_bytes(&s->desc);
        st = pick(p, cs, &n, s->def_step, bytes, &c->next, stats);
        if (!st) st = cg_dev_wrap(p->devs[s->dev].dev, c->next.t->data, bytes, &s->buf);
        c->has_next = !st;
    }
    return st;
}

static int is_next(const cg_plan *p, const cg_tensor *t) {
    for (int k = 0; k < p->graph->n_inputs; k++)
        if (p->carry[k].has_next && p->carry[k].next.t == t) return 1;
    return 0;
}

/* Pool blocks too small for this run's smallest output are unmapped (the
 * values grow), and the pool keeps no more blocks than there are carries. */
static void pool_trim(cg_plan *p, size_t smallest, int carries) {
    int w = 0;
    for (int i = 0; i < p->n_pool; i++) {
        if (p->pool[i].cap < smallest || w >= carries) cg_tensor_free(p->pool[i].t);
        else p->pool[w++] = p->pool[i];
    }
    p->n_pool = w;
}

cg_status cg_carry_direct_done(cg_plan *p, instance *in) {
    const int n_in = p->graph->n_inputs;
    int w = 0, carries = 0;
    size_t smallest = SIZE_MAX;
    for (int i = 0; i < p->n_pool; i++) /* the pool's blocks not written */
        if (!is_next(p, p->pool[i].t)) p->pool[w++] = p->pool[i];
    p->n_pool = w;
    for (int k = 0; k < n_in; k++) {
        carry *c = &p->carry[k];
        if (!c->has_next) continue;
        slot *s = direct_slot(p, in, k);
        carries++;
        if (cg_desc_bytes(&s->desc) < smallest) smallest = cg_desc_bytes(&s->desc);
        /* the value it replaces: free now, unless another output was written there */
        if (c->host && !is_next(p, c->host) && pool_push(p, (host_block){c->host, c->host_cap})) {
            cg_tensor_free(c->host); /* no room to keep it: give it back */
            cg_error_clear();
        }
    }
    for (int k = 0; k < n_in; k++) {
        carry *c = &p->carry[k];
        if (!c->has_next) continue;
        const slot *s = direct_slot(p, in, k);
        c->host = c->next.t;
        c->host_cap = c->next.cap;
        c->has_next = 0;
        cg_carry_host_shape(c, s);
        c->on_host = c->valid = 1;
        c->dev = 0;
    }
    pool_trim(p, smallest, carries);
    return CG_OK;
}
