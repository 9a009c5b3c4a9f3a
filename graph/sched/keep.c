/* Kept inputs (cg_plan_keep_input): an input whose contents change rarely
 * (the encoder's keys, once per batch of sentences) crosses to a device only
 * when its tensor changes (another stamp or buffer). The upload goes to one
 * plan-owned buffer per device, shared by every instance: a decoder that
 * runs several bindings in a batch (the beam's first step, rows shrinking as
 * sentences finish) sends the keys once, and each instance takes them with a
 * copy on the device's own queue. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "plan.h"

cg_status cg_keep_init(cg_plan *p) {
    int n = p->graph->n_inputs;
    p->keep = calloc((size_t)n + 1, 1);
    p->kept = calloc((size_t)n + 1, sizeof *p->kept);
    if (!p->keep || !p->kept) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int k = 0; k < n; k++) {
        kept *kp = &p->kept[k];
        kp->mem = calloc((size_t)p->n_devs, sizeof *kp->mem);
        kp->stamp = calloc((size_t)p->n_devs, sizeof *kp->stamp);
        kp->data = calloc((size_t)p->n_devs, sizeof *kp->data);
        if (!kp->mem || !kp->stamp || !kp->data) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    return CG_OK;
}

static void kept_release(cg_plan *p, kept *k) {
    for (int d = 0; k->mem && d < p->n_devs; d++) {
        cg_dev_free(p->devs[d].dev, &k->mem[d]);
        k->stamp[d] = 0;
        k->data[d] = NULL;
    }
}

void cg_keep_free(cg_plan *p) {
    for (int k = 0; p->kept && k < p->graph->n_inputs; k++) {
        kept_release(p, &p->kept[k]);
        free(p->kept[k].mem);
        free(p->kept[k].stamp);
        free(p->kept[k].data);
    }
    free(p->kept);
    free(p->keep);
}

cg_status cg_plan_keep_input(cg_plan *p, const char *name, int keep) {
    if (!p || !name) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_keep_input: NULL argument");
    cg_status vs = CG_OK;
    for (int i = 0; i < p->n_var && !vs; i++) vs = cg_plan_keep_input(p->var[i], name, keep);
    if (p->n_var) return vs;
    cg_graph *g = p->graph;
    for (int k = 0; k < g->n_inputs; k++) {
        if (strcmp(g->values[g->inputs[k]].name, name) != 0) continue;
        unsigned char v = keep != 0;
        if (p->keep[k] != v) {
            /* Instances planned their memory for the old setting. */
            cg_plan_drop_instances(p);
            p->keep[k] = v;
            kept_release(p, &p->kept[k]);
        }
        return CG_OK;
    }
    return cg_error(CG_ERR_NOT_FOUND, "graph '%s' has no input named '%s'", g->name, name);
}

cg_status cg_keep_upload(cg_plan *p, instance *in, step *c, int k, const cg_tensor *t, cg_plan_stats *st) {
    /* This instance's slot already holds this tensor's contents. */
    if (c->kept_stamp == t->stamp && c->kept_data == t->data) return CG_OK;
    const slot *dst = &in->slots[c->dst];
    const int d = dst->dev;
    cg_device *dev = p->devs[d].dev;
    kept *kp = &p->kept[k];
    c->kept_stamp = 0; /* invalid until the copy below is enqueued */
    cg_status rc = CG_OK;
    if (kp->stamp[d] != t->stamp || kp->data[d] != t->data) {
        kp->stamp[d] = 0;
        if (kp->mem[d].kind == CG_BUF_NONE || c->bytes > kp->mem[d].bytes) {
            cg_buf m;
            rc = cg_dev_alloc(dev, c->bytes, &m);
            if (rc) return rc;
            cg_dev_free(dev, &kp->mem[d]);
            kp->mem[d] = m;
        }
        /* Enqueued: the caller's input stays untouched until the run ends. */
        rc = cg_dev_write_async(dev, &kp->mem[d], 0, t->data, c->bytes, NULL);
        if (rc) return rc;
        st->copies++;
        st->bytes_copied += c->bytes;
        kp->stamp[d] = t->stamp;
        kp->data[d] = t->data;
    }
    rc = cg_dev_copy(dev, &kp->mem[d], 0, &dst->buf, 0, c->bytes);
    if (rc) return rc;
    c->kept_stamp = t->stamp;
    c->kept_data = t->data;
    return CG_OK;
}
