/* Carried inputs (cg_plan_carry): the value a run writes to an output is the
 * next run's input, kept where it was made. An output on a device without
 * host memory is copied on that device's queue into a plan-owned buffer
 * (the instance's arena slot is reused by the next run, possibly of another
 * instance), and from there into the next run's input slot on the device:
 * recurrent state never crosses the bus. The host copy is made only when a
 * host step reads the value or a new instance is lowered (auto placement
 * measures kernels on real inputs). */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "plan.h"
#include "shape.h"

cg_status cg_carry_init(cg_plan *p) {
    int n = p->graph->n_inputs;
    p->carry = calloc((size_t)n + 1, sizeof *p->carry);
    p->carried = calloc((size_t)n + 1, 1);
    if (!p->carry || !p->carried) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int k = 0; k < n; k++) {
        p->carry[k].out = -1;
        p->carry[k].mem = calloc((size_t)p->n_devs, sizeof *p->carry[k].mem);
        if (!p->carry[k].mem) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    return CG_OK;
}

static void carry_release(cg_plan *p, carry *c) {
    cg_tensor_free(c->host);
    c->host = NULL;
    c->host_cap = 0;
    for (int d = 0; c->mem && d < p->n_devs; d++) cg_dev_free(p->devs[d].dev, &c->mem[d]);
    c->valid = c->on_host = c->dev = 0;
}

void cg_carry_drop_values(cg_plan *p) {
    cg_carry_pool_free(p);
    for (int k = 0; p->carry && k < p->graph->n_inputs; k++) carry_release(p, &p->carry[k]);
}

void cg_carry_free(cg_plan *p) {
    cg_carry_drop_values(p);
    if (!p->carry) return;
    for (int k = 0; k < p->graph->n_inputs; k++) free(p->carry[k].mem);
    free(p->carry);
    free(p->carried);
}

static int find_value(const cg_graph *g, const int32_t *list, int n, const char *name) {
    for (int k = 0; k < n; k++)
        if (list[k] >= 0 && !strcmp(g->values[list[k]].name, name)) return k;
    return -1;
}

cg_status cg_plan_carry(cg_plan *p, const char *input, const char *output) {
    if (!p || !input) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_carry: NULL argument");
    cg_graph *g = p->graph;
    if (p->n_var) /* the carried value would live in one variant's plan */
        return cg_error(CG_ERR_UNSUPPORTED, "cg_plan_carry: graph '%s' has variants (guards), which carry no values",
                        g->name);
    int k = find_value(g, g->inputs, g->n_inputs, input);
    if (k < 0) return cg_error(CG_ERR_NOT_FOUND, "graph '%s' has no input named '%s'", g->name, input);
    carry *c = &p->carry[k];
    if (!output) {
        carry_release(p, c);
        if (c->out >= 0) cg_plan_drop_instances(p); /* their memory plan had it (memplan.c carried_outputs) */
        c->out = -1;
        return CG_OK;
    }
    int o = find_value(g, g->outputs, g->n_outputs, output);
    if (o < 0) return cg_error(CG_ERR_NOT_FOUND, "graph '%s' has no output named '%s'", g->name, output);
    const cg_value *vi = &g->values[g->inputs[k]], *vo = &g->values[g->outputs[o]];
    int ok = vi->dtype == vo->dtype && vi->ndim == vo->ndim;
    for (int d = 0; ok && d < vi->ndim; d++) ok = vi->dims[d] < 0 || vo->dims[d] < 0 || vi->dims[d] == vo->dims[d];
    if (!ok) {
        char a[256], b[256];
        cg_tensor_desc da, db;
        cg_desc_from_value(vi, &da);
        cg_desc_from_value(vo, &db);
        cg_desc_format(a, sizeof a, p->model, &da);
        cg_desc_format(b, sizeof b, p->model, &db);
        return cg_error(CG_ERR_INVALID_ARGUMENT, "graph '%s': output '%s' (%s) cannot be carried into input '%s' (%s)",
                        g->name, output, b, input, a);
    }
    if (c->out != o) {
        carry_release(p, c);
        cg_plan_drop_instances(p); /* their memory plan had the old carries */
    }
    c->out = o;
    return CG_OK;
}

cg_status cg_carry_bind(cg_plan *p, int k, cg_tensor **t) {
    cg_graph *g = p->graph;
    carry *c = &p->carry[k];
    if (c->out < 0)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' of graph '%s' is missing", g->values[g->inputs[k]].name,
                        g->name);
    if (!c->valid)
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "input '%s' of graph '%s' is missing, and no successful run has written output '%s' to "
                        "carry into it",
                        g->values[g->inputs[k]].name, g->name, g->out_names[c->out]);
    *t = c->host;
    return CG_OK;
}

static size_t carry_bytes(const carry *c) {
    cg_tensor_desc d = {(cg_op_dtype)c->host->dtype, c->host->ndim, {0}};
    memcpy(d.dims, c->host->dims, sizeof(int64_t) * (size_t)c->host->ndim);
    return cg_desc_bytes(&d);
}

cg_status cg_carry_to_host(cg_plan *p, int k, cg_plan_stats *st) {
    carry *c = &p->carry[k];
    if (c->on_host || !c->dev) return CG_OK;
    size_t bytes = carry_bytes(c);
    cg_status rc = bytes ? cg_dev_read(p->devs[c->dev].dev, &c->mem[c->dev], 0, c->host->data, bytes) : CG_OK;
    if (rc) return rc;
    st->copies++;
    st->bytes_copied += bytes;
    c->on_host = 1;
    return CG_OK;
}

cg_status cg_carry_prepare(cg_plan *p, instance *in, cg_plan_stats *st) {
    for (int k = 0; k < p->graph->n_inputs; k++) {
        if (!p->carried[k] || p->carry[k].on_host) continue;
        int host_reads = 0;
        for (int si = 0; !host_reads && si < in->n_steps; si++) {
            const step *s = &in->steps[si];
            if (s->kind != STEP_KERNEL || !p->devs[s->dev].info->host_memory) continue;
            for (int j = 0; j < s->n_in; j++) {
                const slot *x = &in->slots[s->in[j]];
                host_reads |= x->kind == SLOT_INPUT && x->input_index == k;
            }
        }
        for (int o = 0; !host_reads && o < p->graph->n_outputs; o++) {
            const slot *x = &in->slots[in->out_slot[o]];
            host_reads |= x->kind == SLOT_INPUT && x->input_index == k;
        }
        if (host_reads) {
            cg_status rc = cg_carry_to_host(p, k, st);
            if (rc) return rc;
        }
    }
    return CG_OK;
}

cg_status cg_carry_upload(cg_plan *p, instance *in, step *c, int k, cg_plan_stats *st) {
    carry *cy = &p->carry[k];
    slot *dst = &in->slots[c->dst];
    c->kept_stamp = 0;                  /* the slot no longer holds a kept tensor's upload */
    if (cy->dev && cy->dev == dst->dev) /* on this device already: a copy on its queue */
        return cg_dev_copy(p->devs[dst->dev].dev, &cy->mem[cy->dev], 0, &dst->buf, 0, c->bytes);
    cg_status rc = cg_carry_to_host(p, k, st);
    if (rc) return rc;
    st->copies++;
    st->bytes_copied += c->bytes;
    /* Waited for: the host copy is rewritten when this run ends. */
    return cg_dev_write(p->devs[dst->dev].dev, &dst->buf, 0, cy->host->data, c->bytes);
}

/* Room for a carried value that grows: at least twice what it had, so a
 * value that grows by a row per run (a decoder's self-attention cache)
 * moves, and touches fresh pages, a logarithmic number of times, not every
 * run. Pages mapped and never written cost no memory, so doubling (rather
 * than half again) costs address space only: OPUS-base int8 beam 4 x 32
 * took 86,000 page faults instead of 115,000, and its peak RSS fell 287 ->
 * 267 MB (fewer generations of blocks written). */
size_t cg_carry_grown(size_t need, size_t had) {
    size_t more = 2 * had;
    return need > more || more < had ? need : more;
}

void cg_carry_host_shape(carry *c, const slot *s) {
    c->host->dtype = (cg_dtype)s->desc.dtype;
    c->host->ndim = s->desc.ndim;
    memcpy(c->host->dims, s->desc.dims, sizeof(int64_t) * (size_t)s->desc.ndim);
    c->host->stamp = cg_tensor_new_stamp();
}

/* A host copy with room for the output `s`, and its shape. */
static cg_status host_room(carry *c, const slot *s) {
    size_t bytes = cg_desc_bytes(&s->desc);
    if (!c->host || bytes > c->host_cap) {
        cg_tensor *t;
        const size_t cap = c->host ? cg_carry_grown(bytes, c->host_cap) : bytes;
        const int64_t n = (int64_t)(cap > 0 ? cap : 1);
        cg_status rc = cg_tensor_alloc(CG_U8, 1, &n, &t);
        if (rc) return rc;
        cg_tensor_free(c->host);
        c->host = t;
        c->host_cap = cap;
    }
    cg_carry_host_shape(c, s);
    return CG_OK;
}

/* Output slot s carried into c, from host memory. The output may be this
 * very input (carried or given): copied from where it is before the host
 * copy can be replaced. */
static cg_status save_host(cg_plan *p, carry *c, const slot *s) {
    const void *from = cg_slot_host(p, s);
    cg_status rc = host_room(c, s); /* same shape then: no new buffer */
    if (rc) return rc;
    size_t bytes = carry_bytes(c);
    if (bytes && from != c->host->data) {
        /* through the host device, whose copy runs on every core: a
         * decoder's caches are tens of MB a step */
        cg_buf a, b;
        cg_device *host = p->devs[0].dev;
        rc = cg_dev_wrap(host, (void *)from, bytes, &a);
        if (!rc) rc = cg_dev_wrap(host, c->host->data, bytes, &b);
        if (!rc) rc = cg_dev_copy(host, &a, 0, &b, 0, bytes);
        if (rc) return rc;
    }
    c->on_host = 1;
    c->dev = 0;
    return CG_OK;
}

/* Output slot s carried into c on its device d, in the plan's buffer there
 * (grown only when larger: a steady state allocates nothing). */
static cg_status save_device(cg_plan *p, carry *c, const slot *s, int d) {
    size_t bytes = cg_desc_bytes(&s->desc);
    cg_device *dev = p->devs[d].dev;
    if (c->mem[d].kind == CG_BUF_NONE || bytes > c->mem[d].bytes) {
        cg_buf m;
        cg_status rc =
            cg_dev_alloc(dev, c->mem[d].kind == CG_BUF_NONE ? bytes : cg_carry_grown(bytes, c->mem[d].bytes), &m);
        if (rc) return rc;
        cg_dev_free(dev, &c->mem[d]);
        c->mem[d] = m;
    }
    cg_status rc = host_room(c, s); /* the shape, and room should a host step need it */
    if (!rc && bytes) rc = cg_dev_copy(dev, cg_slot_buf(p, s), 0, &c->mem[d], 0, bytes);
    if (rc) return rc;
    c->on_host = 0;
    c->dev = d;
    return CG_OK;
}

cg_status cg_carry_save(cg_plan *p, instance *in, int on_host) {
    cg_status done = on_host ? cg_carry_direct_done(p, in) : CG_OK;
    if (done) return done;
    for (int k = 0; k < p->graph->n_inputs; k++) {
        carry *c = &p->carry[k];
        if (c->out < 0) continue;
        const slot *s = &in->slots[in->out_slot[c->out]];
        if (s->carry_in == k) continue; /* written into its block (carry_pool.c) */
        int d = p->devs[s->dev].info->host_memory ? 0 : s->dev;
        if (on_host != (d == 0)) continue;
        c->valid = 0;
        cg_status rc = d == 0 ? save_host(p, c, s) : save_device(p, c, s, d);
        if (rc) return rc;
        c->valid = 1;
    }
    return CG_OK;
}

void cg_carry_invalidate(cg_plan *p) {
    for (int k = 0; p->carry && k < p->graph->n_inputs; k++) p->carry[k].valid = 0;
}
