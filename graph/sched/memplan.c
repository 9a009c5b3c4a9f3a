/* Memory of an instance: per device, every temporary gets an offset in one
 * arena by liveness (largest first, lowest offset that no overlapping
 * lifetime uses), in place where an op allows it; device temporaries then
 * get sub-buffers of their device's arena. Done once per instance. */
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "error.h"
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

static size_t raw_bytes(const slot *s) {
    int64_t n = cg_shape_numel(s->desc.ndim, s->desc.dims);
    return n > 0 ? (size_t)n * 4 : 0;
}

cg_status cg_instance_memory(cg_plan *p, instance *in) {
    for (int i = 0; i < in->n_slots; i++) {
        slot *s = &in->slots[i];
        s->bytes = round_up(raw_bytes(s) ? raw_bytes(s) : 4, p->devs[s->dev].align);
        s->alias = -1;
    }
    /* The device copy of a kept input lives through every run of the
     * instance: no other temporary shares its bytes and nothing runs in
     * place on it. */
    for (int si = 0; si < in->n_steps; si++) {
        const step *c = &in->steps[si];
        if (c->kind != STEP_COPY) continue;
        const slot *src = &in->slots[c->src];
        if (src->kind == SLOT_INPUT && p->keep && p->keep[src->input_index]) {
            in->slots[c->dst].def_step = 0;
            in->slots[c->dst].last_step = in->n_steps + 1;
        }
    }
    /* In place: the op allows it and input 0 (a temporary on the same
     * device) dies at this step with the output's size. */
    for (int si = 0; si < in->n_steps; si++) {
        step *st = &in->steps[si];
        st->ws_bytes = st->ws_bytes ? round_up(st->ws_bytes, p->devs[st->dev].align) : 0;
        if (st->kind != STEP_KERNEL || !(st->op->def->flags & CG_OP_FLAG_INPLACE0) || st->n_in == 0) continue;
        slot *i0 = &in->slots[st->in[0]], *o0 = &in->slots[st->out[0]];
        if (i0->kind != SLOT_TEMP || i0->last_step != si || i0->bytes != o0->bytes || i0->dev != o0->dev) continue;
        int root = st->in[0];
        while (in->slots[root].alias >= 0) root = in->slots[root].alias;
        o0->alias = root;
        if (o0->last_step > in->slots[root].last_step) in->slots[root].last_step = o0->last_step;
    }
    interval *iv = malloc(sizeof *iv * ((size_t)in->n_slots + (size_t)in->n_steps + 1));
    if (!iv) return cg_error(CG_ERR_NO_MEMORY, "out of memory planning buffers");
    for (int d = 0; d < p->n_devs; d++) {
        int n = 0;
        for (int i = 0; i < in->n_slots; i++) {
            slot *s = &in->slots[i];
            if (s->dev == d && s->kind == SLOT_TEMP && s->alias < 0 && s->def_step >= 0)
                iv[n++] = (interval){s->def_step, s->last_step, s->bytes, &s->offset};
        }
        for (int si = 0; si < in->n_steps; si++)
            if (in->steps[si].dev == d && in->steps[si].kind == STEP_KERNEL && in->steps[si].ws_bytes)
                iv[n++] = (interval){si, si, in->steps[si].ws_bytes, &in->steps[si].ws_offset};
        in->arena_bytes[d] = assign_offsets(iv, n);
    }
    free(iv);
    for (int i = 0; i < in->n_slots; i++)
        if (in->slots[i].alias >= 0) in->slots[i].offset = in->slots[in->slots[i].alias].offset;
    if (in->arena_bytes[0]) {
        in->host_arena = cg_aligned_alloc(in->arena_bytes[0]);
        if (!in->host_arena)
            return cg_error(CG_ERR_NO_MEMORY, "out of memory: the plan needs %zu bytes on the CPU", in->arena_bytes[0]);
    }
    cg_status st = CG_OK;
    for (int d = 1; !st && d < p->n_devs; d++) {
        int used = 0;
        for (int i = 0; i < in->n_slots; i++) used |= in->slots[i].dev == d;
        for (int si = 0; si < in->n_steps; si++) used |= in->steps[si].dev == d && in->steps[si].kind != STEP_NOP;
        if (!used) continue;
        st = cg_cl_alloc(p->devs[d].cl, in->arena_bytes[d] ? in->arena_bytes[d] : p->devs[d].align, &in->cl_arena[d]);
    }
    for (int i = 0; !st && i < in->n_slots; i++) {
        slot *s = &in->slots[i];
        if (s->dev == 0 || s->kind != SLOT_TEMP || s->def_step < 0) continue;
        st = cg_cl_sub_buffer(p->devs[s->dev].cl, in->cl_arena[s->dev], s->offset, raw_bytes(s), &s->mem);
    }
    for (int si = 0; !st && si < in->n_steps; si++) {
        step *k = &in->steps[si];
        if (k->dev == 0 || k->kind != STEP_KERNEL || !k->ws_bytes) continue;
        st = cg_cl_sub_buffer(p->devs[k->dev].cl, in->cl_arena[k->dev], k->ws_offset, k->ws_bytes, &k->ws_mem);
    }
    return st;
}
