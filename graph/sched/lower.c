/* Lowering: one instance of a plan for one binding of the symbolic dims.
 * Nodes are taken in dependency order; each is placed (rules or auto), its
 * op is decomposed when its device has no kernel for it (expand.c), its
 * inputs are brought to its device by copy steps (made once per value and
 * device), and its outputs become slots on that device. Devices are reached
 * only through backends/backend.h. The caller's graph is never modified. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "lower.h"
#include "mem.h"
#include "shape.h"
#include "weights.h"

const char *cg_plan_dev_name(const cg_plan *p, int dev) {
    if (dev < 0 || dev >= p->n_devs) return "auto";
    return p->devs[dev].info->label;
}

const cg_kernel_def *cg_plan_kernel_on(const cg_plan *p, const cg_op_entry *op, int dev, const cg_op_call *call) {
    const pdev *d = &p->devs[dev];
    const cg_kernel_def *k = cg_op_kernel(op, d->info->kind);
    return k && cg_dev_supports(d->dev, k, call) ? k : NULL;
}

cg_status cg_lower_oom(void) { return cg_error(CG_ERR_NO_MEMORY, "out of memory building a plan"); }

cg_status cg_lower_new_slot(build *b, const cg_tensor_desc *d, int dev, int32_t *out) {
    instance *in = b->in;
    if (in->n_slots == in->cap_slots) {
        int cap = in->cap_slots * 2 + 32;
        slot *ns = realloc(in->slots, sizeof *ns * (size_t)cap);
        if (!ns) return cg_lower_oom();
        in->slots = ns;
        int32_t *nr = realloc(in->redirect, sizeof *nr * (size_t)cap);
        if (!nr) return cg_lower_oom();
        in->redirect = nr;
        in->cap_slots = cap;
        if (b->autoplace && cg_auto_grow(b, cap)) return cg_lower_oom();
    }
    slot *s = &in->slots[in->n_slots];
    memset(s, 0, sizeof *s);
    s->desc = *d;
    s->dev = dev;
    s->kind = SLOT_TEMP;
    s->value = -1;
    s->def_step = -1;
    s->last_step = -1;
    s->alias = -1;
    in->redirect[in->n_slots] = in->n_slots;
    *out = in->n_slots++;
    return CG_OK;
}

/* Appends a step and returns its index (pointers into steps move). */
cg_status cg_lower_new_step(build *b, step_kind kind, int dev, const char *name, int *out) {
    instance *in = b->in;
    if (in->n_steps == in->cap_steps) {
        int cap = in->cap_steps * 2 + 32;
        step *ns = realloc(in->steps, sizeof *ns * (size_t)cap);
        if (!ns) return cg_lower_oom();
        in->steps = ns;
        in->cap_steps = cap;
    }
    step *s = &in->steps[in->n_steps];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->dev = dev;
    s->src = s->dst = -1;
    s->name = cg_strdup(name ? name : "");
    if (!s->name) return cg_lower_oom();
    *out = in->n_steps++;
    return CG_OK;
}

void cg_lower_free_attr_node(cg_node *n) {
    if (!n) return;
    for (int i = 0; i < n->n_attrs; i++) cg_attr_clear(&n->attrs[i]);
    free(n->attrs);
    free(n);
}

/* The plan's replica of parameter value v on device dev, made once: the
 * weight's own bytes on a host-memory device, an upload elsewhere. */
static cg_status param_replica(cg_plan *p, int v, int dev, const void *host, size_t bytes, cg_buf *out) {
    cg_buf *r = &p->params[(size_t)dev * (size_t)p->graph->n_values + (size_t)v];
    if (r->kind == CG_BUF_NONE) {
        cg_status st = cg_dev_upload_const(p->devs[dev].dev, host, bytes, r);
        if (st) return st;
    }
    *out = *r; /* the plan owns it: slots only borrow */
    return CG_OK;
}

static cg_status memo_copy(instance *in, int32_t s, int dev, int32_t dst) {
    if (in->n_copies == in->cap_copies) {
        int cap = in->cap_copies * 2 + 16;
        int32_t *a = realloc(in->copy_src, sizeof *a * (size_t)cap);
        if (a) in->copy_src = a;
        int32_t *c = a ? realloc(in->copy_dev, sizeof *c * (size_t)cap) : NULL;
        if (c) in->copy_dev = c;
        int32_t *d = c ? realloc(in->copy_dst, sizeof *d * (size_t)cap) : NULL;
        if (!d) return cg_lower_oom();
        in->copy_dst = d;
        in->cap_copies = cap;
    }
    in->copy_src[in->n_copies] = s;
    in->copy_dev[in->n_copies] = dev;
    in->copy_dst[in->n_copies] = dst;
    in->n_copies++;
    return CG_OK;
}

/* The copy step that brings slot s to device dev into slot dst. */
static cg_status copy_step(build *b, int32_t s, int dev, int32_t dst) {
    cg_plan *p = b->p;
    instance *in = b->in;
    int from = in->slots[s].dev;
    char name[700];
    snprintf(name, sizeof name, "copy %s -> %s", cg_plan_dev_name(p, from), cg_plan_dev_name(p, dev));
    int si;
    cg_status st = cg_lower_new_step(b, STEP_COPY, dev, name, &si);
    if (st) return st;
    step *cs = &in->steps[si];
    cs->src = s;
    cs->dst = dst;
    cs->bytes = cg_desc_bytes(&in->slots[s].desc);
    /* Host bytes are needed between two devices without host memory, and
     * to snapshot a host temporary (a later host step may overwrite it
     * before the device has read it). */
    int src_host = p->devs[from].info->host_memory, dst_host = p->devs[dev].info->host_memory;
    if ((!src_host && !dst_host) || (src_host && in->slots[s].kind == SLOT_TEMP)) {
        cs->staging = cg_aligned_alloc(cs->bytes);
        if (!cs->staging) return cg_lower_oom();
    }
    in->slots[dst].def_step = si;
    if (b->autoplace && b->shadow[s]) {
        b->shadow[dst] = malloc(cs->bytes + 4);
        if (!b->shadow[dst]) return cg_lower_oom();
        memcpy(b->shadow[dst], b->shadow[s], cs->bytes);
    }
    return CG_OK;
}

/* A slot holding slot s's value on device dev: s itself, a parameter
 * replica, or the destination of a copy step made once per (s, dev). */
static cg_status ensure_on(build *b, int32_t s, int dev, int32_t *out) {
    instance *in = b->in;
    s = cg_lower_resolve(in, s);
    if (in->slots[s].dev == dev) {
        *out = s;
        return CG_OK;
    }
    for (int i = 0; i < in->n_copies; i++)
        if (in->copy_src[i] == s && in->copy_dev[i] == dev) {
            *out = in->copy_dst[i];
            return CG_OK;
        }
    cg_tensor_desc desc = in->slots[s].desc;
    int32_t dst;
    cg_status st = cg_lower_new_slot(b, &desc, dev, &dst);
    if (st) return st;
    slot *src = &in->slots[s];
    if (src->kind == SLOT_PARAM) {
        /* Parameters are not copied per run: the plan keeps a replica. */
        slot *ds = &in->slots[dst];
        ds->kind = SLOT_PARAM;
        ds->value = src->value;
        ds->param = src->param;
        st = param_replica(b->p, src->value, dev, src->param, cg_desc_bytes(&desc), &ds->buf);
    } else {
        st = copy_step(b, s, dev, dst);
    }
    if (!st) st = memo_copy(in, s, dev, dst);
    if (!st) *out = dst;
    return st;
}

cg_op_call cg_lower_call(const lower_node *n, const cg_tensor_desc *ind, cg_tensor_desc *outd, char *err,
                         size_t err_size) {
    return cg_host_call(n->name, n->n_in, ind, n->n_out, outd, n->attrs, err, err_size);
}

/* The node's per-node kernel state, made once: its parameter inputs are
 * the plan's replicas on the step's device. */
static cg_status make_state(build *b, step *s, char *where) {
    const cg_buf **params = calloc((size_t)s->n_in + 1, sizeof *params);
    if (!params) return cg_lower_oom();
    for (int i = 0; i < s->n_in; i++) {
        const slot *x = &b->in->slots[s->in[i]];
        params[i] = x->kind == SLOT_PARAM ? &x->buf : NULL;
    }
    char err[1024] = "";
    cg_op_call call = cg_host_call(s->name, s->n_in, s->in_desc, s->n_out, s->out_desc, s->attrs, err, sizeof err);
    cg_status st = cg_dev_state_create(b->p->devs[s->dev].dev, s->kernel, &call, params, &s->state, &s->state_bytes);
    free(params);
    if (st) cg_error_prefix("%s%s '%s': ", where, s->op->def->name, s->name);
    else b->in->state_bytes += s->state_bytes;
    return st;
}

/* Appends the kernel step of node n on device dev: inputs copied there,
 * output slots made, workspace sized, state created. */
static cg_status emit_kernel(build *b, const lower_node *n, const cg_kernel_def *k, int dev, double cost, int32_t *ins,
                             const cg_tensor_desc *ind, const cg_tensor_desc *outd, int32_t *outs, char *where) {
    instance *in = b->in;
    cg_status st = CG_OK;
    for (int i = 0; !st && i < n->n_in; i++) st = ensure_on(b, ins[i], dev, &ins[i]);
    for (int i = 0; !st && i < n->n_out; i++) st = cg_lower_new_slot(b, &outd[i], dev, &outs[i]);
    int si;
    if (!st) st = cg_lower_new_step(b, STEP_KERNEL, dev, n->name, &si);
    if (st) return st;
    step *s = &in->steps[si];
    s->op = n->op;
    s->kernel = k;
    s->attrs = n->attrs;
    s->line = n->line;
    s->col = n->col;
    s->n_in = n->n_in;
    s->n_out = n->n_out;
    s->cost_us = cost;
    s->cost_src = cost > 0 ? COST_PLACEMENT : COST_NONE;
    s->in = malloc(sizeof(int32_t) * ((size_t)n->n_in + 1));
    s->out = malloc(sizeof(int32_t) * (size_t)n->n_out);
    s->in_desc = calloc((size_t)n->n_in + 1, sizeof *s->in_desc);
    s->out_desc = calloc((size_t)n->n_out, sizeof *s->out_desc);
    if (!s->in || !s->out || !s->in_desc || !s->out_desc) return cg_lower_oom();
    memcpy(s->in, ins, sizeof(int32_t) * (size_t)n->n_in);
    memcpy(s->out, outs, sizeof(int32_t) * (size_t)n->n_out);
    memcpy(s->in_desc, ind, sizeof *ind * (size_t)n->n_in);
    memcpy(s->out_desc, outd, sizeof *outd * (size_t)n->n_out);
    for (int i = 0; i < n->n_out; i++) in->slots[outs[i]].def_step = si;
    cg_op_call call = cg_lower_call(n, s->in_desc, s->out_desc, NULL, 0);
    s->ws_bytes = cg_dev_workspace(k, &call);
    /* A size near SIZE_MAX would wrap to 0 when aligned in the memory
     * plan, and the kernel would run with no workspace. */
    const cg_device_info *info = b->p->devs[dev].info;
    uint64_t most = info->max_alloc ? info->max_alloc : (uint64_t)(SIZE_MAX / 2);
    if ((uint64_t)s->ws_bytes > most)
        return cg_error(
            CG_ERR_NO_MEMORY,
            "%s%s '%s': the kernel asks for a workspace of %zu bytes, more than %s allocates at once (%llu)", where,
            n->op->def->name, n->name, s->ws_bytes, info->label, (unsigned long long)most);
    if (n->n_in > in->max_in) in->max_in = n->n_in;
    if (n->n_out > in->max_out) in->max_out = n->n_out;
    return make_state(b, s, where);
}

/* Per-node scratch: resolved inputs and their homes, descriptors, output
 * placeholders, in one allocation. */
typedef struct node_scratch {
    int32_t *ins, *home, *place;
    cg_tensor_desc *ind, *outd;
    void *block;
} node_scratch;

static cg_status scratch_init(node_scratch *sc, int n_in, int n_out) {
    size_t ni = (size_t)n_in + 1, no = (size_t)n_out + 1;
    sc->block = calloc(1, sizeof(cg_tensor_desc) * (ni + no) + sizeof(int32_t) * (2 * ni + no));
    if (!sc->block) return cg_lower_oom();
    sc->ind = sc->block;
    sc->outd = sc->ind + ni;
    sc->ins = (int32_t *)(sc->outd + no);
    sc->home = sc->ins + ni;
    sc->place = sc->home + ni;
    return CG_OK;
}

/* Infers the node's outputs for its concrete inputs. */
static cg_status infer(build *b, const lower_node *n, node_scratch *sc, const char *where) {
    instance *in = b->in;
    for (int i = 0; i < n->n_in; i++) {
        sc->ins[i] = sc->home[i] = cg_lower_resolve(in, n->in[i]);
        sc->ind[i] = in->slots[sc->ins[i]].desc;
    }
    cg_status st =
        cg_call_infer(b->p->model, n->name, n->line, n->col, n->op, n->attrs, n->n_in, sc->ind, n->n_out, sc->outd, 1);
    for (int k = 0; !st && k < n->n_out; k++) {
        int64_t numel = cg_shape_numel(sc->outd[k].ndim, sc->outd[k].dims);
        if (numel < 0 || numel > CG_MAX_NUMEL)
            st = cg_error(CG_ERR_VERIFY, "%s%s '%s': output %d is too large (more than 2^40 elements)", where,
                          n->op->def->name, n->name, k);
    }
    return st;
}

/* Small integer and bool results computed from what is on the host (the
 * CPU, pdev 0) stay there: an imported model's mask and index arithmetic
 * from its int64 inputs (attention_mask, ids) costs a launch per op on a
 * device, ~5 us each on PoCL, and a few CPU nanoseconds here; the device
 * gets the result by one copy where a kernel of its own reads it. */
#define HOST_SMALL_BYTES 16384
static int host_small(build *b, const lower_node *n, const node_scratch *sc) {
    if (!n->op->plugin || n->op->plugin->dl || !n->op->kernel[CG_BACKEND_CPU]) return 0;
    for (int i = 0; i < n->n_in; i++) {
        const slot *x = &b->in->slots[sc->ins[i]];
        /* a kept input is on the device already, uploaded once while it is
         * unchanged: work on it stays there, so no result crosses per run */
        if (x->dev != 0 || (x->kind == SLOT_INPUT && b->p->keep && b->p->keep[x->input_index])) return 0;
    }
    for (int k = 0; k < n->n_out; k++) {
        const cg_dtype t = (cg_dtype)sc->outd[k].dtype;
        const int integer = t == CG_BOOL || t == CG_I8 || t == CG_U8 || t == CG_I16 || t == CG_U16 || t == CG_I32 ||
                            t == CG_U32 || t == CG_I64 || t == CG_U64;
        if (!integer || cg_desc_bytes(&sc->outd[k]) > HOST_SMALL_BYTES) return 0;
    }
    return 1;
}

cg_status cg_lower_node(build *b, const lower_node *n, int32_t *outs) {
    cg_plan *p = b->p;
    char where[512];
    cg_loc_format(where, sizeof where, p->model, n->line, n->col);
    int holder;
    /* A placeholder step owns the attributes whether or not a kernel step
     * follows (a decomposed op runs nothing itself). */
    cg_status st = cg_lower_new_step(b, STEP_NOP, n->dev < 0 ? 0 : n->dev, n->name, &holder);
    if (st) {
        free(n->owned);
        cg_lower_free_attr_node(n->attr_node);
        return st;
    }
    b->in->steps[holder].owned_attrs = n->owned;
    b->in->steps[holder].attr_node = n->attr_node;
    node_scratch sc = {0};
    st = scratch_init(&sc, n->n_in, n->n_out);
    if (!st) st = infer(b, n, &sc, where);
    double cost = 0;
    int dev = n->dev;
    if (!st && dev < 0) dev = cg_auto_choose(b, n, sc.ins, sc.ind, sc.outd, &cost);
    if (!st && dev > 0 && n->by_default && host_small(b, n, &sc)) dev = 0;
    const cg_kernel_def *k = NULL;
    if (!st && dev >= 0) {
        cg_op_call call = cg_lower_call(n, sc.ind, sc.outd, NULL, 0);
        k = cg_plan_kernel_on(p, n->op, dev, &call);
    }
    if (!st && !k) {
        lower_node sub = *n;
        sub.dev = dev;
        st = cg_lower_expand(b, &sub, sc.ins, sc.ind, sc.outd, sc.place);
        for (int i = 0; !st && i < n->n_out; i++) outs[i] = cg_lower_resolve(b->in, sc.place[i]);
    } else if (!st) {
        st = emit_kernel(b, n, k, dev, cost, sc.ins, sc.ind, sc.outd, outs, where);
        if (!st && b->autoplace) cg_auto_shadow_eval(b, n, sc.home, sc.ind, sc.outd, outs);
    }
    free(sc.block);
    return st;
}

void cg_plan_drop_instances(cg_plan *p) {
    for (int i = 0; i < p->n_inst; i++) cg_instance_free(p, p->inst[i]);
    p->n_inst = 0;
}

void cg_instance_free(cg_plan *p, instance *in) {
    if (!in) return;
    for (int i = 0; i < in->n_steps; i++) {
        step *s = &in->steps[i];
        if (s->kind == STEP_KERNEL) cg_dev_state_destroy(s->kernel, s->state);
        cg_dev_wait(&s->ev);
        cg_dev_free(p->devs[s->dev].dev, &s->ws);
        free(s->owned_attrs);
        cg_lower_free_attr_node(s->attr_node);
        free(s->name);
        free(s->in);
        free(s->out);
        free(s->in_desc);
        free(s->out_desc);
        cg_aligned_free(s->staging);
    }
    for (int i = 0; i < in->n_slots; i++)
        if (in->slots[i].kind == SLOT_TEMP) cg_dev_free(p->devs[in->slots[i].dev].dev, &in->slots[i].buf);
    cg_checks_free(p, in);
    if (p->arena_owner == in) p->arena_owner = NULL;
    free(in->arena_bytes);
    free(in->steps);
    free(in->slots);
    free(in->redirect);
    free(in->val_slot);
    free(in->out_slot);
    free(in->copy_src);
    free(in->copy_dev);
    free(in->copy_dst);
    free(in->sym_vals);
    free(in);
}

/* Inputs and parameters start on the CPU; copies take them elsewhere. */
static cg_status source_slots(build *b, const int64_t *sym_vals) {
    cg_plan *p = b->p;
    cg_graph *g = p->graph;
    instance *in = b->in;
    cg_status st = CG_OK;
    for (int i = 0; !st && i < g->n_values; i++) {
        const cg_value *v = &g->values[i];
        in->val_slot[i] = -1;
        if (v->kind == CG_VAL_NODE) continue;
        cg_tensor_desc d;
        cg_desc_from_value(v, &d);
        for (int k = 0; k < d.ndim; k++)
            if (d.dims[k] <= -2) d.dims[k] = sym_vals[-2 - d.dims[k]];
        int32_t id;
        st = cg_lower_new_slot(b, &d, 0, &id);
        if (st) break;
        slot *s = &in->slots[id];
        s->value = i;
        in->val_slot[i] = id;
        if (v->kind == CG_VAL_INPUT) {
            s->kind = SLOT_INPUT;
            for (int k = 0; k < g->n_inputs; k++)
                if (g->inputs[k] == i) s->input_index = k;
            if (!b->autoplace) continue;
            /* The caller's data serve as they are (kernels only read
             * inputs); without data (describe), zeros within the shadow
             * budget, else none (measured on zeros all the same). */
            size_t bytes = cg_desc_bytes(&d);
            if (b->inputs) {
                b->shadow[id] = b->inputs[s->input_index]->data;
                b->borrowed[id] = 1;
            } else if (bytes <= CG_AUTO_SHADOW_BUDGET - b->shadow_bytes) {
                b->shadow[id] = calloc(1, bytes + 4);
                if (!b->shadow[id]) st = cg_lower_oom();
                b->shadow_bytes += bytes;
            }
        } else {
            s->kind = SLOT_PARAM;
            cg_tensor_desc wd;
            st = cg_weights_view_as(p->model->weights, v->weight, v->dtype, &wd, &s->param);
            if (!st) st = param_replica(p, i, 0, s->param, cg_desc_bytes(&d), &s->buf);
            if (!st && b->autoplace) {
                b->shadow[id] = (void *)s->param;
                b->borrowed[id] = 1;
            }
        }
    }
    return st;
}

/* A node's attributes with the symbolic dims of its dim lists bound to
 * this instance's sizes, in one block the instance owns (*out NULL when
 * nothing is symbolic). */
static cg_status bind_dims(build *b, const cg_node *nd, const cg_op_def *def, const cg_attr_value *attrs,
                           cg_attr_value **out) {
    *out = NULL;
    size_t extra = 0;
    for (int i = 0; i < def->n_attrs; i++)
        if (attrs[i].type == CG_ATTR_DIMS)
            for (int k = 0; k < attrs[i].n_ints; k++)
                if (attrs[i].ints[k] <= -2) {
                    extra += (size_t)attrs[i].n_ints;
                    break;
                }
    if (!extra) return CG_OK;
    cg_attr_value *v = malloc(sizeof *v * (size_t)def->n_attrs + sizeof(int64_t) * extra);
    if (!v) return cg_lower_oom();
    memcpy(v, attrs, sizeof *v * (size_t)def->n_attrs);
    int64_t *ints = (int64_t *)(v + def->n_attrs);
    const cg_model *m = b->p->model;
    for (int i = 0; i < def->n_attrs; i++) {
        if (v[i].type != CG_ATTR_DIMS) continue;
        int sym = 0;
        for (int k = 0; k < v[i].n_ints; k++) sym |= v[i].ints[k] <= -2;
        if (!sym) continue;
        for (int k = 0; k < v[i].n_ints; k++) {
            int64_t d = v[i].ints[k];
            if (d <= -2 && (-2 - d >= m->n_syms || b->in->sym_vals[-2 - d] < 0)) {
                char where[512];
                cg_loc_format(where, sizeof where, m, nd->line, nd->col);
                free(v);
                return cg_error(CG_ERR_VERIFY,
                                "%s%s '%s': attribute '%s' names dim '%s', which no input of graph "
                                "'%s' binds",
                                where, def->name, nd->name, def->attrs[i].name,
                                -2 - d < m->n_syms ? m->syms[-2 - d] : "?", b->p->graph->name);
            }
            ints[k] = d <= -2 ? b->in->sym_vals[-2 - d] : d;
        }
        v[i].ints = ints;
        ints += v[i].n_ints;
    }
    *out = v;
    return CG_OK;
}

/* Per node, whether a graph output depends on it. The others (what an
 * importer left unread, the chain a rewrite replaced) are not lowered: ops
 * have no effect but their outputs. NULL when out of memory. */
static unsigned char *live_nodes(const cg_plan *p) {
    const cg_graph *g = p->graph;
    unsigned char *need = calloc((size_t)g->n_values + 1, 1), *live = calloc((size_t)g->n_nodes + 1, 1);
    if (!need || !live) {
        free(need);
        free(live);
        return NULL;
    }
    for (int k = 0; k < g->n_outputs; k++) need[g->outputs[k]] = 1;
    for (int oi = p->an.n_nodes - 1; oi >= 0; oi--) {
        const cg_node *nd = g->nodes[p->an.order[oi]];
        for (int k = 0; k < nd->n_outputs && !live[p->an.order[oi]]; k++) live[p->an.order[oi]] = need[nd->outputs[k]];
        for (int k = 0; live[p->an.order[oi]] && k < nd->n_inputs; k++) need[nd->inputs[k]] = 1;
    }
    free(need);
    return live;
}

static cg_status lower_nodes(build *b) {
    cg_plan *p = b->p;
    cg_graph *g = p->graph;
    instance *in = b->in;
    cg_status st = CG_OK;
    unsigned char *live = live_nodes(p);
    if (!live) return cg_lower_oom();
    for (int oi = 0; !st && oi < p->an.n_nodes; oi++) {
        int ni = p->an.order[oi];
        cg_node *nd = g->nodes[ni];
        if (!live[ni]) continue;
        int32_t *io = malloc(sizeof(int32_t) * ((size_t)nd->n_inputs + (size_t)nd->n_outputs + 1));
        if (!io) return cg_lower_oom();
        for (int k = 0; k < nd->n_inputs; k++) io[k] = in->val_slot[nd->inputs[k]];
        cg_attr_value *bound;
        if ((st = bind_dims(b, nd, p->an.ops[ni]->def, p->an.attrs[ni], &bound))) {
            free(io);
            break;
        }
        lower_node n = {.op = p->an.ops[ni],
                        .attrs = bound ? bound : p->an.attrs[ni],
                        .owned = bound,
                        .name = nd->name,
                        .line = nd->line,
                        .col = nd->col,
                        .n_in = nd->n_inputs,
                        .n_out = nd->n_outputs,
                        .in = io,
                        .dev = cg_place_rule_for(p, nd->name),
                        .by_default = !cg_place_has_rule(p, nd->name)};
        int32_t *outs = io + nd->n_inputs;
        st = cg_lower_node(b, &n, outs);
        for (int k = 0; !st && k < nd->n_outputs; k++) {
            in->val_slot[nd->outputs[k]] = outs[k];
            in->slots[cg_lower_resolve(in, outs[k])].value = nd->outputs[k];
        }
        free(io);
    }
    free(live);
    return st;
}

/* Built-in steps whose output is a function of the binding alone, which
 * is fixed per instance: dim_values, and arange, which reads only its
 * input's shape (the positions an importer makes along a symbolic dim).
 * Other steps without inputs (a plugin's random source) may differ per
 * run. */
static int binding_const(const step *s) {
    if (s->kind != STEP_KERNEL || !s->op || !s->op->plugin || s->op->plugin->dl) return 0;
    const char *name = s->op->def->name;
    return (s->n_in == 0 && !strcmp(name, "dim_values")) || !strcmp(name, "arange");
}

/* Steps that read only parameters and the binding, directly or through
 * such steps (the cast of an int8 or 16-bit weight that a decomposition
 * makes before its matmul; the positions and causal masks an exporter
 * builds from Shape), compute the same every run: they run once, in the
 * instance's first run, and the outputs that other steps read stay alive
 * through every run (memplan.c), so a weight is widened once per plan
 * instead of once per step, and an imported model's shape arithmetic
 * costs no launch after the first run. */
static cg_status fold_params(instance *in) {
    unsigned char *c = calloc((size_t)in->n_slots + 1, 1); /* slot holds a constant */
    if (!c) return cg_lower_oom();
    for (int i = 0; i < in->n_slots; i++) c[i] = in->slots[i].kind == SLOT_PARAM;
    for (int si = 0; si < in->n_steps; si++) {
        step *s = &in->steps[si];
        if (s->kind == STEP_COPY) s->once = c[s->src];
        else if (s->kind == STEP_KERNEL) {
            s->once = binding_const(s);
            if (!s->once) {
                s->once = s->n_in > 0;
                for (int k = 0; k < s->n_in; k++) s->once &= c[s->in[k]];
            }
        }
        if (!s->once) continue;
        if (s->kind == STEP_COPY) c[s->dst] = 1;
        for (int k = 0; s->kind == STEP_KERNEL && k < s->n_out; k++) c[s->out[k]] = 1;
    }
    free(c);
    return CG_OK;
}

/* A slot lives from its producing step to its last reader; graph outputs
 * to the end (memplan.c keeps what must live through every run). */
static void liveness(const cg_plan *p, instance *in) {
    for (int si = 0; si < in->n_steps; si++) {
        step *s = &in->steps[si];
        if (s->kind == STEP_KERNEL)
            for (int k = 0; k < s->n_in; k++) in->slots[s->in[k]].last_step = si;
        if (s->kind == STEP_COPY) in->slots[s->src].last_step = si;
    }
    for (int k = 0; k < p->graph->n_outputs; k++) in->slots[in->out_slot[k]].last_step = in->n_steps;
    for (int i = 0; i < in->n_slots; i++) {
        slot *s = &in->slots[i];
        if (s->kind == SLOT_INPUT) s->def_step = 0;
        if (s->last_step < s->def_step) s->last_step = s->def_step;
    }
    for (int si = 0; si < in->n_steps; si++) in->est_cost_us += in->steps[si].cost_us;
}

cg_status cg_instance_build(cg_plan *p, const int64_t *sym_vals, cg_tensor *const *inputs, instance **out) {
    cg_graph *g = p->graph;
    cg_model *m = p->model;
    instance *in = calloc(1, sizeof *in);
    if (!in) return cg_lower_oom();
    build b = {.p = p, .in = in, .inputs = inputs, .autoplace = p->default_dev < 0};
    for (int r = 0; r < p->n_rules; r++) b.autoplace |= p->rules[r].dev < 0;
    cg_status st = CG_OK;
    in->sym_vals = malloc(sizeof(int64_t) * ((size_t)m->n_syms + 1));
    in->val_slot = malloc(sizeof(int32_t) * ((size_t)g->n_values + 1));
    in->out_slot = malloc(sizeof(int32_t) * ((size_t)g->n_outputs + 1));
    in->arena_bytes = calloc((size_t)p->n_devs, sizeof *in->arena_bytes);
    if (!in->sym_vals || !in->val_slot || !in->out_slot || !in->arena_bytes) st = cg_lower_oom();
    if (!st) memcpy(in->sym_vals, sym_vals, sizeof(int64_t) * (size_t)m->n_syms);
    if (!st) st = source_slots(&b, sym_vals);
    if (!st) st = lower_nodes(&b);
    /* Outputs are read on the host: leave them where they are (the run
     * reads them back itself). */
    for (int k = 0; !st && k < g->n_outputs; k++) in->out_slot[k] = cg_lower_resolve(in, in->val_slot[g->outputs[k]]);
    cg_auto_free(&b);
    if (!st) st = fold_params(in);
    if (!st) {
        liveness(p, in);
        st = cg_instance_memory(p, in);
    }
    if (!st) st = cg_checks_make(p, in);
    if (st) {
        cg_instance_free(p, in);
        return st;
    }
    *out = in;
    return CG_OK;
}
