/* Lowering: one instance of a plan for one binding of the symbolic dims.
 * Nodes are taken in dependency order; each is placed (rules or auto), its
 * op is decomposed when its device has no kernel for it, its inputs are
 * brought to its device by copy steps (made once per value and device), and
 * its outputs become slots on that device. The caller's graph is never
 * modified. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "decomp.h"
#include "error.h"
#include "plan.h"
#include "tensor.h"
#include "weights.h"

#define MAX_DECOMP_DEPTH 8

typedef struct build {
    cg_plan *p;
    instance *in;
    cg_tensor *const *inputs; /* caller data by input position, or NULL */
    int autoplace;            /* some node may be placed by measurement */
    void **shadow;            /* auto: host values of slots, from CPU kernels */
    int cap_shadow;
} build;

/* A decomposition being expanded: the host API calls of its callback land
 * in the functions of decomp_iface below. */
typedef struct expansion {
    cg_decomp base;  /* first: the callback's handle */
    build *b;
    const int32_t *in;
    int n_in;
    const int32_t *out;       /* placeholder slots of the op's outputs */
    int n_out;
    const char *origin;
    int line, col, depth, counter, dev;
    int *done;
} expansion;

const char *cg_plan_dev_name(const cg_plan *p, int dev) {
    if (dev < 0 || dev >= p->n_devs) return "auto";
    return p->devs[dev].cl ? cg_cl_label(p->devs[dev].cl) : "cpu";
}

static int32_t resolve(const instance *in, int32_t s) {
    while (in->redirect[s] != s) s = in->redirect[s];
    return s;
}

static size_t desc_bytes(const cg_tensor_desc *d) {
    int64_t n = cg_shape_numel(d->ndim, d->dims);
    return n > 0 ? (size_t)n * 4 : 0;
}

static cg_status oom(void) { return cg_error(CG_ERR_NO_MEMORY, "out of memory building a plan"); }

static cg_status new_slot(build *b, const cg_tensor_desc *d, int dev, int32_t *out) {
    instance *in = b->in;
    if (in->n_slots == in->cap_slots) {
        int cap = in->cap_slots * 2 + 32;
        slot *ns = realloc(in->slots, sizeof *ns * (size_t)cap);
        if (!ns) return oom();
        in->slots = ns;
        int32_t *nr = realloc(in->redirect, sizeof *nr * (size_t)cap);
        if (!nr) return oom();
        in->redirect = nr;
        if (b->autoplace) {
            void **sh = realloc(b->shadow, sizeof *sh * (size_t)cap);
            if (!sh) return oom();
            for (int i = b->cap_shadow; i < cap; i++) sh[i] = NULL;
            b->shadow = sh;
            b->cap_shadow = cap;
        }
        in->cap_slots = cap;
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
static cg_status new_step(build *b, step_kind kind, int dev, const char *name, int *out) {
    instance *in = b->in;
    if (in->n_steps == in->cap_steps) {
        int cap = in->cap_steps * 2 + 32;
        step *ns = realloc(in->steps, sizeof *ns * (size_t)cap);
        if (!ns) return oom();
        in->steps = ns;
        in->cap_steps = cap;
    }
    step *s = &in->steps[in->n_steps];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->dev = dev;
    s->src = s->dst = -1;
    s->name = cg_strdup(name ? name : "");
    if (!s->name) return oom();
    *out = in->n_steps++;
    return CG_OK;
}

/* The plan's replica of parameter value v on device dev, uploaded once. */
static cg_status param_replica(cg_plan *p, int v, int dev, const void *host, size_t bytes, cl_mem *out) {
    cl_mem *m = &p->param_mem[(size_t)dev * (size_t)p->graph->n_values + (size_t)v];
    if (!*m) {
        cg_cl_device *d = p->devs[dev].cl;
        cl_mem nm;
        cg_status st = cg_cl_alloc(d, bytes ? bytes : 4, &nm);
        if (!st && bytes) st = cg_cl_write(d, nm, 0, bytes, host, 1);
        if (st) return st;
        *m = nm;
    }
    *out = *m;
    return CG_OK;
}

/* A slot holding slot s's value on device dev: s itself, a parameter
 * replica, or the destination of a copy step made once per (s, dev). */
static cg_status ensure_on(build *b, int32_t s, int dev, int32_t *out) {
    instance *in = b->in;
    s = resolve(in, s);
    if (in->slots[s].dev == dev) {
        *out = s;
        return CG_OK;
    }
    for (int i = 0; i < in->n_copies; i++)
        if (in->copy_src[i] == s && in->copy_dev[i] == dev) {
            *out = in->copy_dst[i];
            return CG_OK;
        }
    if (in->n_copies == in->cap_copies) {
        int cap = in->cap_copies * 2 + 16;
        int32_t *a = realloc(in->copy_src, sizeof *a * (size_t)cap);
        if (a) in->copy_src = a;
        int32_t *c = a ? realloc(in->copy_dev, sizeof *c * (size_t)cap) : NULL;
        if (c) in->copy_dev = c;
        int32_t *d = c ? realloc(in->copy_dst, sizeof *d * (size_t)cap) : NULL;
        if (!d) return oom();
        in->copy_dst = d;
        in->cap_copies = cap;
    }
    cg_tensor_desc desc = in->slots[s].desc;
    int32_t dst;
    cg_status st = new_slot(b, &desc, dev, &dst);
    if (st) return st;
    slot *src = &in->slots[s];
    if (src->kind == SLOT_PARAM && b->p->devs[dev].cl) {
        /* Parameters are not copied per run: the plan keeps a replica. */
        slot *ds = &in->slots[dst];
        ds->kind = SLOT_PARAM;
        ds->value = src->value;
        st = param_replica(b->p, src->value, dev, src->param, desc_bytes(&desc), &ds->param_mem);
        if (st) return st;
    } else if (src->kind == SLOT_PARAM) {
        /* A parameter is read on the CPU straight from the weights file. */
        slot *ds = &in->slots[dst];
        ds->kind = SLOT_PARAM;
        ds->value = src->value;
        ds->param = src->param;
    } else {
        int si;
        char name[300];
        snprintf(name, sizeof name, "copy %s -> %s", cg_plan_dev_name(b->p, src->dev),
                 cg_plan_dev_name(b->p, dev));
        st = new_step(b, STEP_COPY, dev, name, &si);
        if (st) return st;
        step *cs = &in->steps[si];
        cs->src = s;
        cs->dst = dst;
        cs->bytes = desc_bytes(&desc);
        /* Leaving a device, or going from one device to another, passes
         * through host memory owned by the step. */
        if (b->p->devs[src->dev].cl || src->kind == SLOT_TEMP) {
            cs->staging = cg_aligned_alloc(cs->bytes ? cs->bytes : 4);
            if (!cs->staging) return oom();
        }
        in->slots[dst].def_step = si;
        if (b->autoplace && b->shadow[s]) {
            b->shadow[dst] = malloc(cs->bytes + 4);
            if (!b->shadow[dst]) return oom();
            memcpy(b->shadow[dst], b->shadow[s], cs->bytes);
        }
    }
    in->copy_src[in->n_copies] = s;
    in->copy_dev[in->n_copies] = dev;
    in->copy_dst[in->n_copies] = dst;
    in->n_copies++;
    *out = dst;
    return CG_OK;
}

static const cg_kernel_def *kernel_on(const cg_plan *p, const cg_op_entry *op, int dev) {
    return p->devs[dev].cl ? op->opencl : op->cpu;
}

/* Runs the CPU kernel of a step on the shadow values, so auto placement can
 * measure later nodes on real data. Failure just leaves no shadow. */
static void shadow_eval(build *b, const cg_op_entry *op, const cg_attr_value *attrs, const char *name,
                        int n_in, const int32_t *in_slots, int n_out, const cg_tensor_desc *in_desc,
                        cg_tensor_desc *out_desc, const int32_t *outs) {
    if (!op->cpu) return;
    const void *ins[256];
    void *outp[64];
    for (int i = 0; i < n_in; i++) {
        ins[i] = b->shadow[in_slots[i]];
        if (!ins[i]) return;
    }
    int ok = 1;
    for (int k = 0; k < n_out; k++) {
        outp[k] = b->shadow[outs[k]] = calloc(1, desc_bytes(&out_desc[k]) + 4);
        ok &= outp[k] != NULL;
    }
    char err[256];
    cg_op_call call = {.struct_size = sizeof call, .node_name = name, .n_inputs = n_in, .n_outputs = n_out,
                       .inputs = in_desc, .outputs = out_desc, .attrs = attrs, .err = err,
                       .err_size = sizeof err, .host = cg_host_api_get()};
    size_t ws = ok && op->cpu->workspace ? op->cpu->workspace(&call) : 0;
    void *w = ws ? cg_aligned_alloc(ws) : NULL;
    cg_kernel_args a = {.struct_size = sizeof a, .call = &call, .in = ins, .out = outp, .workspace = w,
                        .workspace_size = ws};
    if (!ok || (ws && !w) || op->cpu->run(&a) != CG_OP_OK)
        for (int k = 0; k < n_out; k++) {
            free(b->shadow[outs[k]]);
            b->shadow[outs[k]] = NULL;
        }
    cg_aligned_free(w);
}

/* Auto placement of one node: the device with the least measured kernel
 * time plus the time to bring its inputs there. -1 if no device has a
 * kernel (the node will be decomposed). */
static int choose_device(build *b, const cg_op_entry *op, const cg_attr_value *attrs, int n_in,
                         const int32_t *in_slots, const cg_tensor_desc *in_desc, int n_out,
                         const cg_tensor_desc *out_desc, double *cost) {
    cg_plan *p = b->p;
    int best = -1;
    double best_cost = 0;
    const void *host_in[256];
    for (int i = 0; i < n_in; i++) host_in[i] = b->shadow[resolve(b->in, in_slots[i])];
    for (int d = 0; d < p->n_devs; d++) {
        if (!kernel_on(p, op, d)) continue;
        double c = cg_cost_kernel(p, d, op, attrs, n_in, in_desc, host_in, n_out, out_desc);
        if (c < 0) continue; /* the kernel failed on these inputs there */
        for (int i = 0; i < n_in; i++) {
            const slot *s = &b->in->slots[resolve(b->in, in_slots[i])];
            if (s->kind != SLOT_PARAM && s->dev != d) c += cg_cost_copy(p, s->dev, d, desc_bytes(&in_desc[i]));
        }
        if (best < 0 || c < best_cost) {
            best = d;
            best_cost = c;
        }
    }
    *cost = best_cost;
    return best;
}

static cg_status lower_op(build *b, const cg_op_entry *op, const cg_attr_value *attrs, cg_attr_value *owned,
                          cg_node *attr_node, const char *name, int line, int col, int n_in,
                          const int32_t *in, int n_out, int dev, int depth, int32_t *outs);

/* ---- decomposition callbacks (cg_host_api.decomp_*) ---- */

static int32_t decomp_input(cg_decomp *dh, int32_t i) {
    expansion *d = (expansion *)dh;
    if (!d || i < 0 || i >= d->n_in) return -1;
    return d->in[i];
}

static void free_attr_node(cg_node *n) {
    if (!n) return;
    for (int i = 0; i < n->n_attrs; i++) cg_attr_clear(&n->attrs[i]);
    free(n->attrs);
    free(n);
}

static cg_op_status decomp_node(cg_decomp *dh, const char *opname, int32_t n_in, const int32_t *in, int32_t n_out,
                            int32_t *out, const char *attrs) {
    expansion *d = (expansion *)dh;
    build *b = d->b;
    cg_model *m = b->p->model;
    char where[512];
    cg_loc_format(where, sizeof where, m, d->line, d->col);
    const cg_op_entry *op = opname ? cg_registry_find(m->ctx, opname) : NULL;
    if (!op) {
        cg_error(CG_ERR_VERIFY, "%sdecomposition of '%s' uses unknown op '%s'", where, d->origin,
                 opname ? opname : "(null)");
        return CG_OP_ERROR;
    }
    if (n_in < 0 || n_in > 256 || n_out < 1 || n_out > 64 || (n_in && !in) || !out) {
        cg_error(CG_ERR_VERIFY, "%sdecomposition of '%s': invalid arguments for op '%s'", where, d->origin,
                 opname);
        return CG_OP_ERROR;
    }
    for (int i = 0; i < n_in; i++)
        if (in[i] < 0 || in[i] >= b->in->n_slots) {
            cg_error(CG_ERR_VERIFY, "%sdecomposition of '%s': op '%s' reads invalid value id %d", where,
                     d->origin, opname, in[i]);
            return CG_OP_ERROR;
        }
    char name[512];
    snprintf(name, sizeof name, "%s/%s.%d", d->origin, opname, d->counter++);
    cg_node *node = calloc(1, sizeof *node);
    cg_attr_value *vals = calloc((size_t)op->def->n_attrs + 1, sizeof *vals);
    if (!node || !vals) {
        free(node), free(vals);
        cg_error(CG_ERR_NO_MEMORY, "out of memory");
        return CG_OP_ERROR;
    }
    node->name = name;
    node->op = (char *)opname;
    node->line = d->line;
    node->col = d->col;
    cg_status st = attrs && *attrs ? cg_parse_attr_list(attrs, node) : CG_OK;
    if (!st) st = cg_node_resolve_attrs(m, node, op->def, vals);
    node->name = NULL;
    node->op = NULL;
    if (st) {
        free_attr_node(node);
        free(vals);
        return CG_OP_ERROR;
    }
    int32_t outs[64];
    st = lower_op(b, op, vals, vals, node, name, d->line, d->col, n_in, in, n_out, d->dev, d->depth + 1, outs);
    if (st) return CG_OP_ERROR;
    memcpy(out, outs, sizeof(int32_t) * (size_t)n_out);
    return CG_OP_OK;
}

static cg_op_status decomp_output(cg_decomp *dh, int32_t i, int32_t v) {
    expansion *d = (expansion *)dh;
    instance *in = d->b->in;
    char where[512];
    cg_loc_format(where, sizeof where, d->b->p->model, d->line, d->col);
    if (i < 0 || i >= d->n_out || v < 0 || v >= in->n_slots) {
        cg_error(CG_ERR_VERIFY, "%sdecomposition of '%s': invalid output %d or value %d", where, d->origin, i, v);
        return CG_OP_ERROR;
    }
    const cg_tensor_desc *want = &in->slots[d->out[i]].desc, *have = &in->slots[resolve(in, v)].desc;
    int ok = want->dtype == have->dtype && want->ndim == have->ndim;
    for (int k = 0; ok && k < want->ndim; k++) ok = want->dims[k] == have->dims[k];
    if (!ok) {
        char a[256], c[256];
        cg_desc_format(a, sizeof a, d->b->p->model, have);
        cg_desc_format(c, sizeof c, d->b->p->model, want);
        cg_error(CG_ERR_VERIFY, "%sdecomposition of '%s': output %d is %s, the op declares %s", where,
                 d->origin, i, a, c);
        return CG_OP_ERROR;
    }
    in->redirect[d->out[i]] = resolve(in, v);
    d->done[i] = 1;
    return CG_OP_OK;
}

static const cg_decomp_iface decomp_iface = {decomp_input, decomp_node, decomp_output};

/* Lowers one op: infers its outputs for the concrete inputs, places it,
 * and appends its kernel step (inputs copied to its device as needed) or
 * expands its decomposition. `owned` and `attr_node` pass to the instance. */
static cg_status lower_op(build *b, const cg_op_entry *op, const cg_attr_value *attrs, cg_attr_value *owned,
                          cg_node *attr_node, const char *name, int line, int col, int n_in,
                          const int32_t *in_raw, int n_out, int dev, int depth, int32_t *outs) {
    cg_plan *p = b->p;
    instance *in = b->in;
    char where[512];
    cg_loc_format(where, sizeof where, p->model, line, col);
    int holder;
    /* A placeholder step owns the attributes whether or not a kernel step
     * follows (a decomposed op runs nothing itself). */
    cg_status st = new_step(b, STEP_NOP, dev < 0 ? 0 : dev, name, &holder);
    if (st) {
        free(owned);
        free_attr_node(attr_node);
        return st;
    }
    in->steps[holder].owned_attrs = owned;
    in->steps[holder].attr_node = attr_node;
    if (n_in > 256 || n_out > 64) return cg_error(CG_ERR_VERIFY, "%snode '%s' has too many inputs or outputs", where, name);
    int32_t ins[256];
    cg_tensor_desc ind[256], outd[64];
    for (int i = 0; i < n_in; i++) {
        ins[i] = resolve(in, in_raw[i]);
        ind[i] = in->slots[ins[i]].desc;
    }
    st = cg_call_infer(p->model, name, line, col, op, attrs, n_in, ind, n_out, outd, 1);
    if (st) return st;
    for (int k = 0; k < n_out; k++) {
        int64_t numel = cg_shape_numel(outd[k].ndim, outd[k].dims);
        if (numel < 0 || (uint64_t)numel > ((uint64_t)1 << 40))
            return cg_error(CG_ERR_VERIFY, "%s%s '%s': output %d is too large", where, op->def->name, name, k);
    }
    double cost = 0;
    if (dev < 0) dev = choose_device(b, op, attrs, n_in, ins, ind, n_out, outd, &cost);
    if (dev >= 0 && !kernel_on(p, op, dev)) {
        if (!op->def->decompose)
            return cg_error(CG_ERR_UNSUPPORTED, "%s%s '%s': op has no kernel for %s and no decomposition",
                            where, op->def->name, name, cg_plan_dev_name(p, dev));
    }
    if (dev < 0 || !kernel_on(p, op, dev)) {
        /* Decompose: the sub-nodes go to the same device (or are placed
         * automatically when this node was). */
        if (!op->def->decompose)
            return cg_error(CG_ERR_UNSUPPORTED, "%s%s '%s': no device has a kernel for this op and it has "
                            "no decomposition", where, op->def->name, name);
        if (depth >= MAX_DECOMP_DEPTH)
            return cg_error(CG_ERR_VERIFY, "%s%s '%s': decompositions nest deeper than %d", where,
                            op->def->name, name, MAX_DECOMP_DEPTH);
        int32_t place[64];
        for (int k = 0; k < n_out; k++) {
            st = new_slot(b, &outd[k], dev < 0 ? 0 : dev, &place[k]);
            if (st) return st;
        }
        int done[64] = {0};
        expansion d = {{&decomp_iface}, b, ins, n_in, place, n_out, name, line, col, depth, 0, dev, done};
        char err[1024] = "";
        cg_op_call call = {.struct_size = sizeof call, .node_name = name, .n_inputs = n_in, .n_outputs = n_out,
                           .inputs = ind, .outputs = outd, .attrs = attrs, .err = err, .err_size = sizeof err,
                           .host = cg_host_api_get()};
        cg_error_clear();
        if (op->def->decompose(&d.base, &call) != CG_OP_OK) {
            if (!cg_last_error()[0] || err[0])
                return cg_error(CG_ERR_VERIFY, "%s%s '%s': decomposition failed: %s", where, op->def->name,
                                name, err[0] ? err : "(no message)");
            return CG_ERR_VERIFY;
        }
        for (int k = 0; k < n_out; k++) {
            if (!done[k])
                return cg_error(CG_ERR_VERIFY, "%s%s '%s': decomposition left output %d unset", where,
                                op->def->name, name, k);
            outs[k] = resolve(in, place[k]);
        }
        return CG_OK;
    }
    int32_t home[256];
    memcpy(home, ins, sizeof(int32_t) * (size_t)n_in);
    for (int i = 0; i < n_in; i++) {
        st = ensure_on(b, ins[i], dev, &ins[i]);
        if (st) return st;
    }
    for (int k = 0; k < n_out; k++) {
        st = new_slot(b, &outd[k], dev, &outs[k]);
        if (st) return st;
    }
    int si;
    st = new_step(b, STEP_KERNEL, dev, name, &si);
    if (st) return st;
    step *s = &in->steps[si];
    s->op = op;
    s->kernel = kernel_on(p, op, dev);
    s->attrs = attrs;
    s->line = line;
    s->col = col;
    s->n_in = n_in;
    s->n_out = n_out;
    s->cost_us = cost;
    s->in = malloc(sizeof(int32_t) * ((size_t)n_in + 1));
    s->out = malloc(sizeof(int32_t) * (size_t)n_out);
    s->in_desc = calloc((size_t)n_in + 1, sizeof *s->in_desc);
    s->out_desc = calloc((size_t)n_out, sizeof *s->out_desc);
    if (!s->in || !s->out || !s->in_desc || !s->out_desc) return oom();
    memcpy(s->in, ins, sizeof(int32_t) * (size_t)n_in);
    memcpy(s->out, outs, sizeof(int32_t) * (size_t)n_out);
    memcpy(s->in_desc, ind, sizeof *ind * (size_t)n_in);
    memcpy(s->out_desc, outd, sizeof *outd * (size_t)n_out);
    for (int k = 0; k < n_out; k++) in->slots[outs[k]].def_step = si;
    cg_op_call call = {.struct_size = sizeof call, .node_name = name, .n_inputs = n_in, .n_outputs = n_out,
                       .inputs = s->in_desc, .outputs = s->out_desc, .attrs = attrs, .host = cg_host_api_get()};
    s->ws_bytes = s->kernel->workspace ? s->kernel->workspace(&call) : 0;
    if (n_in > in->max_in) in->max_in = n_in;
    if (n_out > in->max_out) in->max_out = n_out;
    if (b->autoplace) shadow_eval(b, op, attrs, name, n_in, home, n_out, ind, outd, outs);
    return CG_OK;
}

void cg_instance_free(cg_plan *p, instance *in) {
    (void)p;
    if (!in) return;
    for (int i = 0; i < in->n_steps; i++) {
        step *s = &in->steps[i];
        free(s->owned_attrs);
        free_attr_node(s->attr_node);
        free(s->name);
        free(s->in);
        free(s->out);
        free(s->in_desc);
        free(s->out_desc);
        cg_aligned_free(s->staging);
        if (s->ws_mem) clReleaseMemObject(s->ws_mem);
    }
    for (int i = 0; i < in->n_slots; i++)
        if (in->slots[i].mem) clReleaseMemObject(in->slots[i].mem);
    for (int d = 0; d < CG_PLAN_MAX_DEVICES; d++)
        if (in->cl_arena[d]) clReleaseMemObject(in->cl_arena[d]);
    cg_aligned_free(in->host_arena);
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

cg_status cg_instance_build(cg_plan *p, const int64_t *sym_vals, cg_tensor *const *inputs, instance **out) {
    cg_graph *g = p->graph;
    cg_model *m = p->model;
    instance *in = calloc(1, sizeof *in);
    if (!in) return oom();
    build b = {p, in, inputs, 0, NULL, 0};
    b.autoplace = p->default_dev < 0;
    for (int r = 0; r < p->n_rules; r++) b.autoplace |= p->rules[r].dev < 0;
    cg_status st = CG_OK;
    in->sym_vals = malloc(sizeof(int64_t) * ((size_t)m->n_syms + 1));
    in->val_slot = malloc(sizeof(int32_t) * ((size_t)g->n_values + 1));
    in->out_slot = malloc(sizeof(int32_t) * ((size_t)g->n_outputs + 1));
    if (!in->sym_vals || !in->val_slot || !in->out_slot) st = oom();
    if (!st) memcpy(in->sym_vals, sym_vals, sizeof(int64_t) * (size_t)m->n_syms);
    /* Inputs and parameters live on the CPU; copies take them elsewhere. */
    for (int i = 0; !st && i < g->n_values; i++) {
        const cg_value *v = &g->values[i];
        in->val_slot[i] = -1;
        if (v->kind == CG_VAL_NODE) continue;
        cg_tensor_desc d;
        cg_desc_from_value(v, &d);
        for (int k = 0; k < d.ndim; k++)
            if (d.dims[k] <= -2) d.dims[k] = sym_vals[-2 - d.dims[k]];
        int32_t id;
        st = new_slot(&b, &d, 0, &id);
        if (st) break;
        slot *s = &in->slots[id];
        s->value = i;
        if (v->kind == CG_VAL_INPUT) {
            s->kind = SLOT_INPUT;
            for (int k = 0; k < g->n_inputs; k++)
                if (g->inputs[k] == i) s->input_index = k;
            if (b.autoplace) {
                size_t bytes = desc_bytes(&d);
                b.shadow[id] = malloc(bytes + 4);
                if (!b.shadow[id]) st = oom();
                else if (inputs) memcpy(b.shadow[id], inputs[s->input_index]->data, bytes);
                else memset(b.shadow[id], 0, bytes);
            }
        } else {
            s->kind = SLOT_PARAM;
            cg_tensor_desc wd;
            st = cg_weights_view(m->weights, v->weight, &wd, &s->param);
            if (!st && b.autoplace) b.shadow[id] = (void *)s->param; /* borrowed: not freed */
        }
        in->val_slot[i] = id;
    }
    int n_base = in->n_slots; /* shadow entries below this are borrowed params or inputs */
    for (int oi = 0; !st && oi < p->an.n_nodes; oi++) {
        int ni = p->an.order[oi];
        cg_node *nd = g->nodes[ni];
        int32_t ins[256], outs[64];
        if (nd->n_inputs > 256 || nd->n_outputs > 64) {
            st = cg_error(CG_ERR_VERIFY, "node '%s' has too many inputs or outputs", nd->name);
            break;
        }
        for (int k = 0; k < nd->n_inputs; k++) ins[k] = in->val_slot[nd->inputs[k]];
        int dev = cg_place_rule_for(p, nd->name);
        st = lower_op(&b, p->an.ops[ni], p->an.attrs[ni], NULL, NULL, nd->name, nd->line, nd->col, nd->n_inputs,
                      ins, nd->n_outputs, dev, 0, outs);
        for (int k = 0; !st && k < nd->n_outputs; k++) {
            in->val_slot[nd->outputs[k]] = outs[k];
            in->slots[resolve(in, outs[k])].value = nd->outputs[k];
        }
    }
    /* Outputs are read on the host: leave them where they are (the run
     * reads device outputs back itself). */
    for (int k = 0; !st && k < g->n_outputs; k++) in->out_slot[k] = resolve(in, in->val_slot[g->outputs[k]]);
    if (b.shadow) {
        for (int i = 0; i < in->n_slots && i < b.cap_shadow; i++) {
            int borrowed = i < n_base && in->slots[i].kind == SLOT_PARAM;
            if (!borrowed) free(b.shadow[i]);
        }
        free(b.shadow);
    }
    if (!st) {
        /* Liveness: a slot lives from its producing step to its last reader;
         * graph outputs to the end. */
        for (int si = 0; si < in->n_steps; si++) {
            step *s = &in->steps[si];
            if (s->kind == STEP_KERNEL)
                for (int k = 0; k < s->n_in; k++) in->slots[s->in[k]].last_step = si;
            if (s->kind == STEP_COPY) in->slots[s->src].last_step = si;
        }
        for (int k = 0; k < g->n_outputs; k++) in->slots[in->out_slot[k]].last_step = in->n_steps;
        for (int i = 0; i < in->n_slots; i++) {
            slot *s = &in->slots[i];
            if (s->kind == SLOT_INPUT) s->def_step = 0;
            if (s->last_step < s->def_step) s->last_step = s->def_step;
        }
        for (int si = 0; si < in->n_steps; si++) in->est_cost_us += in->steps[si].cost_us;
        st = cg_instance_memory(p, in);
    }
    if (st) {
        cg_instance_free(p, in);
        return st;
    }
    *out = in;
    return CG_OK;
}
