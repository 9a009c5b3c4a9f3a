/* Memory of an instance: per device, every temporary gets an offset in one
 * arena by liveness (largest first, lowest offset that no overlapping
 * lifetime uses), in place where an op allows it; each temporary and
 * workspace then gets a view of its device's arena (backend.h). Done once
 * per instance. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "shape.h"
#include "plan.h"
#include "tensor.h"

typedef struct interval {
    int from, to;
    size_t bytes, *offset;
} interval;

static int by_size_desc(const void *a, const void *b) {
    const interval *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->from - y->from;
}

static size_t assign_offsets(interval *iv, int n) {
    qsort(iv, (size_t)n, sizeof *iv, by_size_desc);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        size_t off = 0;
        for (int again = 1; again;) {
            again = 0;
            for (int j = 0; j < i; j++) {
                if (iv[j].to < iv[i].from || iv[i].to < iv[j].from) continue;
                size_t a = *iv[j].offset, b = a + iv[j].bytes;
                if (off < b && a < off + iv[i].bytes) {
                    off = b;
                    again = 1;
                }
            }
        }
        *iv[i].offset = off;
        if (off + iv[i].bytes > total) total = off + iv[i].bytes;
    }
    return total;
}

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* Views of arena `a` on device d (or every device, d < 0) for the
 * instance's temporaries and workspaces there, replacing the ones it had. */
static cg_status view_arena(cg_plan *p, instance *in, int d, const cg_buf *a) {
    cg_status st = CG_OK;
    for (int i = 0; !st && i < in->n_slots; i++) {
        slot *s = &in->slots[i];
        if (s->kind != SLOT_TEMP || s->def_step < 0 || s->carry_in >= 0 || (d >= 0 && s->dev != d)) continue;
        cg_dev_free(p->devs[s->dev].dev, &s->buf);
        st = cg_dev_view(p->devs[s->dev].dev, &a[d >= 0 ? 0 : s->dev], s->offset, cg_desc_bytes(&s->desc), &s->buf);
    }
    for (int si = 0; !st && si < in->n_steps; si++) {
        step *k = &in->steps[si];
        if (k->kind != STEP_KERNEL || !k->ws_bytes || (d >= 0 && k->dev != d)) continue;
        cg_dev_free(p->devs[k->dev].dev, &k->ws);
        st = cg_dev_view(p->devs[k->dev].dev, &a[d >= 0 ? 0 : k->dev], k->ws_offset, k->ws_bytes, &k->ws);
    }
    return st;
}

/* Room for `bytes` in the plan's arena on device d. A larger arena is
 * allocated half again as large as the one it replaces (a binding that
 * grows by a step per run, a decoder's caches, then moves a logarithmic
 * number of times), and the cached instances' views move to it. */
static cg_status reserve_arena(cg_plan *p, int d, size_t bytes) {
    cg_buf *a = &p->arena[d];
    /* every cached instance's views move to the new arena: after a release
     * (no arena) it is not the largest of them that asks */
    for (int i = 0; a->kind == CG_BUF_NONE && i < p->n_inst; i++)
        if (p->inst[i]->arena_bytes[d] > bytes) bytes = p->inst[i]->arena_bytes[d];
    if (a->kind != CG_BUF_NONE && bytes <= a->bytes) return CG_OK;
    cg_device *dev = p->devs[d].dev;
    size_t want = a->kind == CG_BUF_NONE || a->bytes + a->bytes / 2 < bytes ? bytes : a->bytes + a->bytes / 2;
    cg_buf m;
    cg_status st = cg_dev_alloc(dev, want, &m);
    if (st && want > bytes) {
        cg_error_clear();
        st = cg_dev_alloc(dev, bytes, &m);
    }
    if (st == CG_ERR_NO_MEMORY) cg_error_prefix("the plan needs %zu bytes on %s: ", bytes, cg_plan_dev_name(p, d));
    if (st) return st;
    for (int i = 0; !st && i < p->n_inst; i++) st = view_arena(p, p->inst[i], d, &m);
    if (st) cg_plan_drop_instances(p); /* the instances that moved cannot go back */
    cg_dev_free(dev, a);
    *a = m;
    p->arena_owner = NULL; /* what the old arena held is gone */
    return st;
}

/* The plan's arena with room for the instance on every device it uses, and
 * views of it for each temporary and workspace there. */
static cg_status make_views(cg_plan *p, instance *in) {
    cg_status st = CG_OK;
    for (int d = 0; !st && d < p->n_devs; d++) {
        int used = 0;
        for (int i = 0; i < in->n_slots; i++) used |= in->slots[i].dev == d && in->slots[i].kind == SLOT_TEMP;
        for (int si = 0; si < in->n_steps; si++) used |= in->steps[si].dev == d && in->steps[si].ws_bytes;
        if (used) st = reserve_arena(p, d, in->arena_bytes[d]);
    }
    /* building may measure kernels in the arena (auto placement) */
    p->arena_owner = NULL;
    return st ? st : view_arena(p, in, -1, p->arena);
}

cg_status cg_arena_restore(cg_plan *p, const instance *in) {
    cg_status st = CG_OK;
    for (int d = 0; !st && d < p->n_devs; d++)
        if (p->arena[d].kind == CG_BUF_NONE && in->arena_bytes[d]) st = reserve_arena(p, d, in->arena_bytes[d]);
    return st;
}

void cg_arena_claim(cg_plan *p, instance *in) {
    if (p->arena_owner == in) return;
    /* Another instance's run wrote over the values this one keeps between
     * runs: its `once` steps' outputs and its kept inputs' copies. */
    in->once_done = 0;
    for (int si = 0; si < in->n_steps; si++) in->steps[si].kept_stamp = 0;
    p->arena_owner = in;
}

/* Slot s lives through every run when a `once` step makes it. Its
 * def_step stays the step that makes it: the executor waits on that step's
 * transfer before the host reads the slot (exec.c wait_host). */
static void made_once(instance *in, int32_t s) {
    slot *sl = &in->slots[s];
    if (sl->kind == SLOT_TEMP && sl->def_step >= 0 && sl->def_step < in->n_steps && in->steps[sl->def_step].once)
        sl->live_all = 1;
}

/* A carried output made in host memory is written into a block of the
 * plan's pool (carry_pool.c), which then becomes the next run's input: a
 * decoder's caches are not copied out of the arena every step. Not a value
 * living through every run, and one carry per slot. */
static void carried_outputs(cg_plan *p, instance *in) {
    for (int k = 0; p->carry && k < p->graph->n_inputs; k++) {
        if (p->carry[k].out < 0) continue;
        slot *s = &in->slots[in->out_slot[p->carry[k].out]];
        if (s->kind == SLOT_TEMP && s->def_step >= 0 && !s->live_all && s->carry_in < 0 &&
            p->devs[s->dev].info->host_memory)
            s->carry_in = k;
    }
}

cg_status cg_instance_memory(cg_plan *p, instance *in) {
    for (int i = 0; i < in->n_slots; i++) {
        slot *s = &in->slots[i];
        s->bytes = round_up(cg_desc_bytes(&s->desc) ? cg_desc_bytes(&s->desc) : 4, p->devs[s->dev].info->align);
        s->alias = -1;
        s->live_all = 0;
        s->carry_in = -1;
    }
    /* Slots that live through every run of the instance (no other
     * temporary shares their bytes, nothing runs in place on them): the
     * device copy of a kept input, and what a `once` step (lower.c
     * fold_params) hands to a step run every time or to the caller. */
    for (int si = 0; si < in->n_steps; si++) {
        const step *s = &in->steps[si];
        if (s->kind == STEP_COPY && in->slots[s->src].kind == SLOT_INPUT && p->keep &&
            p->keep[in->slots[s->src].input_index])
            in->slots[s->dst].live_all = 1;
        if (s->once) continue;
        const int n = s->kind == STEP_KERNEL ? s->n_in : s->kind == STEP_COPY ? 1 : 0;
        for (int k = 0; k < n; k++) made_once(in, s->kind == STEP_KERNEL ? s->in[k] : s->src);
    }
    for (int k = 0; k < p->graph->n_outputs; k++) made_once(in, in->out_slot[k]);
    carried_outputs(p, in);
    /* In place: the op allows it and input 0 (a temporary on the same
     * device) dies at this step with the output's size, exactly: the slots'
     * sizes are rounded up to the device's alignment, and a cast from 24
     * bytes of f16 into 48 of f32 in one buffer overwrites what it has yet
     * to read. */
    for (int si = 0; si < in->n_steps; si++) {
        step *st = &in->steps[si];
        st->ws_bytes = st->ws_bytes ? round_up(st->ws_bytes, p->devs[st->dev].info->align) : 0;
        if (st->kind != STEP_KERNEL || !(st->op->def->flags & CG_OP_FLAG_INPLACE0) || st->n_in == 0) continue;
        slot *i0 = &in->slots[st->in[0]], *o0 = &in->slots[st->out[0]];
        if (i0->kind != SLOT_TEMP || i0->live_all || i0->carry_in >= 0 || o0->carry_in >= 0 || i0->last_step != si ||
            i0->bytes != o0->bytes || i0->dev != o0->dev || cg_desc_bytes(&i0->desc) != cg_desc_bytes(&o0->desc))
            continue;
        int root = st->in[0];
        while (in->slots[root].alias >= 0) root = in->slots[root].alias;
        o0->alias = root;
        /* The root's bytes hold both: its interval covers the output's,
         * which may live through every run (a `once` step's output). */
        if (o0->last_step > in->slots[root].last_step) in->slots[root].last_step = o0->last_step;
        in->slots[root].live_all |= o0->live_all;
    }
    interval *iv = malloc(sizeof *iv * ((size_t)in->n_slots + (size_t)in->n_steps + 1));
    if (!iv) return cg_error(CG_ERR_NO_MEMORY, "out of memory planning buffers");
    for (int d = 0; d < p->n_devs; d++) {
        int n = 0;
        for (int i = 0; i < in->n_slots; i++) {
            slot *s = &in->slots[i];
            if (s->dev == d && s->kind == SLOT_TEMP && s->alias < 0 && s->carry_in < 0 && s->def_step >= 0)
                iv[n++] = s->live_all ? (interval){0, in->n_steps + 1, s->bytes, &s->offset}
                                      : (interval){s->def_step, s->last_step, s->bytes, &s->offset};
        }
        for (int si = 0; si < in->n_steps; si++)
            if (in->steps[si].dev == d && in->steps[si].kind == STEP_KERNEL && in->steps[si].ws_bytes)
                iv[n++] = (interval){si, si, in->steps[si].ws_bytes, &in->steps[si].ws_offset};
        in->arena_bytes[d] = assign_offsets(iv, n);
    }
    free(iv);
    for (int i = 0; i < in->n_slots; i++)
        if (in->slots[i].alias >= 0) in->slots[i].offset = in->slots[in->slots[i].alias].offset;
    return make_views(p, in);
}
