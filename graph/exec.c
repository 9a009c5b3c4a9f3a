/* Plans and the executor: a graph is lowered into steps over slots (one per
 * value, plus temporaries of decomposed ops); buffers are assigned from one
 * arena by liveness whenever the bound input shapes change, so running again
 * with the same shapes allocates nothing but the output tensors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "backends/cpu/cpu_blas.h"
#include "backends/opencl/cl_backend.h"
#include "decomp.h"
#include "error.h"
#include "tensor.h"
#include "weights.h"

#define HOST_ALIGN 64
#define MAX_DECOMP_DEPTH 8

typedef enum { SLOT_INPUT, SLOT_PARAM, SLOT_TEMP } slot_kind;

typedef struct slot {
    cg_tensor_desc sym;   /* type with symbolic dims, from verification */
    cg_tensor_desc desc;  /* concrete type for the bound shapes */
    slot_kind kind;
    int input_index;      /* SLOT_INPUT: position among graph inputs */
    const void *param;    /* SLOT_PARAM: weight data */
    int def_step, last_step;
    int alias;            /* TEMP sharing another's buffer (in place), or -1 */
    size_t offset, bytes;
} slot;

typedef struct step {
    const cg_op_entry *op;
    const cg_kernel_def *kernel; /* op's kernel for the plan's device */
    const cg_attr_value *attrs;
    cg_attr_value *owned_attrs; /* decomposed steps own their attributes */
    cg_node *attr_node;         /* ... and the node that holds their text */
    char *name;
    int line, col;
    int n_in, n_out;
    int32_t *in, *out;
    cg_tensor_desc *in_desc, *out_desc;
    size_t ws_offset, ws_bytes;
} step;

struct cg_plan {
    cg_model *model;
    cg_graph *graph;
    cg_analysis an;
    int n_slots, cap_slots;
    slot *slots;
    int32_t *redirect;   /* slot -> slot that really holds it (decompositions) */
    int n_steps, cap_steps;
    step *steps;
    int max_in, max_out;
    const void **inptr;
    void **outptr;
    int64_t *sym_vals;   /* bound value per model symbol, -1 if unbound */
    int bound;
    void *arena;
    size_t arena_bytes, arena_cap;
    size_t align;        /* buffer offset alignment */
    /* OpenCL plans: the device, one buffer for the arena, a sub-buffer per
     * slot and workspace, and the parameters uploaded once. */
    cg_cl_device *dev;
    cl_mem arena_mem;
    cl_mem *slot_mem;    /* per slot */
    cl_mem *ws_mem;      /* per step */
};

static const cg_kernel_def *kernel_for(const cg_plan *p, const cg_op_entry *op) {
    return p->dev ? op->opencl : op->cpu;
}

static const char *device_label(const cg_plan *p) { return p->dev ? cg_cl_label(p->dev) : "cpu"; }

struct cg_decomp {
    cg_plan *p;
    const int32_t *in;
    int n_in;
    const int32_t *out;
    int n_out;
    const char *origin;
    int line, col, depth, counter;
    int *done;           /* which outputs were set */
};

static cg_status lower_node(cg_plan *p, const cg_op_entry *op, const cg_attr_value *attrs,
                            cg_attr_value *owned, cg_node *attr_node, const char *name, int line,
                            int col, int n_in, const int32_t *in, int n_out, const int32_t *out,
                            int depth);

static int32_t resolve(const cg_plan *p, int32_t s) {
    while (p->redirect[s] != s) s = p->redirect[s];
    return s;
}

static cg_status new_slot(cg_plan *p, const cg_tensor_desc *sym, int32_t *out) {
    if (p->n_slots == p->cap_slots) {
        int cap = p->cap_slots * 2 + 16;
        slot *ns = realloc(p->slots, sizeof *ns * (size_t)cap);
        int32_t *nr = ns ? realloc(p->redirect, sizeof *nr * (size_t)cap) : NULL;
        if (ns) p->slots = ns;
        if (!nr) return cg_error(CG_ERR_NO_MEMORY, "out of memory building a plan");
        p->redirect = nr;
        p->cap_slots = cap;
    }
    slot *s = &p->slots[p->n_slots];
    memset(s, 0, sizeof *s);
    s->sym = *sym;
    s->kind = SLOT_TEMP;
    s->def_step = -1;
    s->last_step = -1;
    s->alias = -1;
    p->redirect[p->n_slots] = p->n_slots;
    *out = p->n_slots++;
    return CG_OK;
}

/* ---- decomposition callbacks (cg_host_api.decomp_*) ---- */

int32_t cg_decomp_input(cg_decomp *d, int32_t i) {
    if (!d || i < 0 || i >= d->n_in) return -1;
    return d->in[i];
}

cg_op_status cg_decomp_node(cg_decomp *d, const char *opname, int32_t n_in, const int32_t *in,
                            int32_t n_out, int32_t *out, const char *attrs) {
    cg_plan *p = d->p;
    cg_model *m = p->model;
    char where[512];
    cg_loc_format(where, sizeof where, m, d->line, d->col);
    const cg_op_entry *op = opname ? cg_registry_find(m->ctx, opname) : NULL;
    if (!op) {
        cg_error(CG_ERR_VERIFY, "%sdecomposition of '%s' uses unknown op '%s'", where, d->origin,
                 opname ? opname : "(null)");
        return CG_OP_ERROR;
    }
    if (n_in < 0 || n_in > 256 || n_out < 1 || n_out > 64 || (n_in && !in) || !out) {
        cg_error(CG_ERR_VERIFY, "%sdecomposition of '%s': invalid arguments for op '%s'", where,
                 d->origin, opname);
        return CG_OP_ERROR;
    }
    for (int i = 0; i < n_in; i++)
        if (in[i] < 0 || in[i] >= p->n_slots) {
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
    int32_t outs[64];
    if (!st) {
        cg_tensor_desc ind[256], outd[64];
        for (int i = 0; i < n_in; i++) ind[i] = p->slots[resolve(p, in[i])].sym;
        st = cg_call_infer(m, name, d->line, d->col, op, vals, n_in, ind, n_out, outd, 0);
        for (int i = 0; !st && i < n_out; i++) st = new_slot(p, &outd[i], &outs[i]);
    }
    node->name = NULL;
    node->op = NULL;
    if (!st)
        st = lower_node(p, op, vals, vals, node, name, d->line, d->col, n_in, in, n_out, outs, d->depth + 1);
    else {
        for (int i = 0; i < node->n_attrs; i++) cg_attr_clear(&node->attrs[i]);
        free(node->attrs);
        free(node);
        free(vals);
    }
    if (st) return CG_OP_ERROR;
    memcpy(out, outs, sizeof(int32_t) * (size_t)n_out);
    return CG_OP_OK;
}

cg_op_status cg_decomp_output(cg_decomp *d, int32_t i, int32_t v) {
    cg_plan *p = d->p;
    char where[512];
    cg_loc_format(where, sizeof where, p->model, d->line, d->col);
    if (i < 0 || i >= d->n_out || v < 0 || v >= p->n_slots) {
        cg_error(CG_ERR_VERIFY, "%sdecomposition of '%s': invalid output %d or value %d", where,
                 d->origin, i, v);
        return CG_OP_ERROR;
    }
    const cg_tensor_desc *want = &p->slots[d->out[i]].sym, *have = &p->slots[resolve(p, v)].sym;
    int ok = want->dtype == have->dtype && want->ndim == have->ndim;
    for (int k = 0; ok && k < want->ndim; k++) ok = cg_dim_compatible(want->dims[k], have->dims[k]);
    if (!ok) {
        char a[256], b[256];
        cg_desc_format(a, sizeof a, p->model, have);
        cg_desc_format(b, sizeof b, p->model, want);
        cg_error(CG_ERR_VERIFY, "%sdecomposition of '%s': output %d is %s, the op declares %s", where,
                 d->origin, i, a, b);
        return CG_OP_ERROR;
    }
    p->redirect[d->out[i]] = resolve(p, v);
    d->done[i] = 1;
    return CG_OP_OK;
}

/* Appends a step for an op with a CPU kernel, or expands its decomposition.
 * Ownership of `owned`/`attr_node` passes to the plan in every case. */
static cg_status lower_node(cg_plan *p, const cg_op_entry *op, const cg_attr_value *attrs,
                            cg_attr_value *owned, cg_node *attr_node, const char *name, int line,
                            int col, int n_in, const int32_t *in, int n_out, const int32_t *out,
                            int depth) {
    char where[512];
    cg_loc_format(where, sizeof where, p->model, line, col);
    if (p->n_steps == p->cap_steps) {
        int cap = p->cap_steps * 2 + 16;
        step *ns = realloc(p->steps, sizeof *ns * (size_t)cap);
        if (!ns) {
            free(owned);
            return cg_error(CG_ERR_NO_MEMORY, "out of memory building a plan");
        }
        p->steps = ns;
        p->cap_steps = cap;
    }
    /* Record the step first so its owned memory is freed with the plan even
     * when this node is decomposed instead of run. */
    step *s = &p->steps[p->n_steps++];
    memset(s, 0, sizeof *s);
    s->owned_attrs = owned;
    s->attr_node = attr_node;
    s->name = cg_strdup(name);
    if (!s->name) return CG_ERR_NO_MEMORY;
    if (!kernel_for(p, op)) {
        s->op = NULL; /* a placeholder: nothing runs for it */
        if (!op->def->decompose)
            return cg_error(CG_ERR_UNSUPPORTED,
                            "%s%s '%s': op has no kernel for %s and no decomposition", where,
                            op->def->name, name, device_label(p));
        if (depth >= MAX_DECOMP_DEPTH)
            return cg_error(CG_ERR_VERIFY, "%s%s '%s': decompositions nest deeper than %d", where,
                            op->def->name, name, MAX_DECOMP_DEPTH);
        int32_t rin[256];
        for (int i = 0; i < n_in; i++) rin[i] = resolve(p, in[i]);
        int done[64] = {0};
        cg_decomp d = {p, rin, n_in, out, n_out, name, line, col, depth, 0, done};
        cg_tensor_desc ind[256], outd[64];
        for (int i = 0; i < n_in; i++) ind[i] = p->slots[rin[i]].sym;
        for (int i = 0; i < n_out; i++) outd[i] = p->slots[out[i]].sym;
        char err[1024] = "";
        cg_op_call call = {sizeof call, name, n_in, n_out, ind, outd, attrs, err, sizeof err,
                           cg_host_api_get()};
        cg_error_clear();
        if (op->def->decompose(&d, &call) != CG_OP_OK) {
            if (!cg_last_error()[0] || err[0])
                return cg_error(CG_ERR_VERIFY, "%s%s '%s': decomposition failed: %s", where,
                                op->def->name, name, err[0] ? err : "(no message)");
            return CG_ERR_VERIFY;
        }
        for (int i = 0; i < n_out; i++)
            if (!done[i])
                return cg_error(CG_ERR_VERIFY, "%s%s '%s': decomposition left output %d unset", where,
                                op->def->name, name, i);
        return CG_OK;
    }
    s->op = op;
    s->kernel = kernel_for(p, op);
    s->attrs = attrs;
    s->line = line;
    s->col = col;
    s->n_in = n_in;
    s->n_out = n_out;
    s->in = malloc(sizeof(int32_t) * ((size_t)n_in + 1));
    s->out = malloc(sizeof(int32_t) * (size_t)n_out);
    s->in_desc = calloc((size_t)n_in + 1, sizeof *s->in_desc);
    s->out_desc = calloc((size_t)n_out, sizeof *s->out_desc);
    if (!s->in || !s->out || !s->in_desc || !s->out_desc)
        return cg_error(CG_ERR_NO_MEMORY, "out of memory building a plan");
    for (int i = 0; i < n_in; i++) s->in[i] = resolve(p, in[i]);
    memcpy(s->out, out, sizeof(int32_t) * (size_t)n_out);
    if (n_in > p->max_in) p->max_in = n_in;
    if (n_out > p->max_out) p->max_out = n_out;
    return CG_OK;
}

void cg_plan_free(cg_plan *p) {
    if (!p) return;
    for (int i = 0; i < p->n_steps; i++) {
        step *s = &p->steps[i];
        free(s->owned_attrs);
        if (s->attr_node) {
            for (int k = 0; k < s->attr_node->n_attrs; k++) cg_attr_clear(&s->attr_node->attrs[k]);
            free(s->attr_node->attrs);
            free(s->attr_node);
        }
        free(s->name);
        free(s->in);
        free(s->out);
        free(s->in_desc);
        free(s->out_desc);
    }
    if (p->slot_mem)
        for (int i = 0; i < p->n_slots; i++)
            if (p->slot_mem[i]) clReleaseMemObject(p->slot_mem[i]);
    if (p->ws_mem)
        for (int i = 0; i < p->n_steps; i++)
            if (p->ws_mem[i]) clReleaseMemObject(p->ws_mem[i]);
    free(p->slot_mem);
    free(p->ws_mem);
    if (p->arena_mem) clReleaseMemObject(p->arena_mem);
    if (p->dev) cg_cl_device_release(p->dev);
    free(p->steps);
    free(p->slots);
    free(p->redirect);
    free(p->inptr);
    free(p->outptr);
    free(p->sym_vals);
    cg_cpu_free(p->arena);
    cg_analysis_free(&p->an);
    free(p);
}

cg_status cg_plan_create(cg_model *m, const char *graph_name, cg_plan **out) {
    return cg_plan_create_ex(m, graph_name, NULL, out);
}

/* Uploads every parameter once into its own device buffer. */
static cg_status upload_params(cg_plan *p) {
    for (int i = 0; i < p->n_slots; i++) {
        slot *s = &p->slots[i];
        if (s->kind != SLOT_PARAM) continue;
        size_t bytes = (size_t)cg_shape_numel(s->sym.ndim, s->sym.dims) * 4;
        cg_status st = cg_cl_alloc(p->dev, bytes ? bytes : 4, &p->slot_mem[i]);
        if (!st && bytes) st = cg_cl_write(p->dev, p->slot_mem[i], 0, bytes, s->param, 0);
        if (st) return st;
    }
    return cg_cl_finish(p->dev);
}

cg_status cg_plan_create_ex(cg_model *m, const char *graph_name, const cg_plan_options *opt,
                            cg_plan **out) {
    if (!m || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_create: NULL argument");
    *out = NULL;
    const char *device = opt && opt->device ? opt->device : "cpu";
    int cl_index = -1;
    if (strcmp(device, "cpu") != 0) {
        if (cg_cl_device_count() == 0)
            return cg_error(CG_ERR_NOT_FOUND, "device '%s': %s", device,
                            cg_cl_unavailable_reason() ? cg_cl_unavailable_reason() : "no OpenCL device");
        cg_status st = cg_cl_device_find(device, &cl_index);
        if (st) return st;
    }
    cg_graph *g = graph_name ? cg_model_graph(m, graph_name) : (m->n_graphs == 1 ? m->graphs[0] : NULL);
    if (!g) {
        if (!graph_name)
            return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: the model has %d graphs: name one",
                            m->filename, m->n_graphs);
        return cg_error(CG_ERR_NOT_FOUND, "%s: no graph named '%s'", m->filename, graph_name);
    }
    if (!m->verified) {
        cg_status st = cg_model_verify(m);
        if (st) return st;
    }
    cg_plan *p = calloc(1, sizeof *p);
    if (!p) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    p->model = m;
    p->graph = g;
    p->align = HOST_ALIGN;
    if (cl_index >= 0) {
        cg_status st = cg_cl_device_open(cl_index, &p->dev);
        if (st) {
            free(p);
            return st;
        }
        size_t a = cg_cl_info_of(p->dev)->mem_align;
        if (a > p->align) p->align = a;
    }
    p->sym_vals = malloc(sizeof(int64_t) * ((size_t)m->n_syms + 1));
    cg_status st = p->sym_vals ? cg_graph_analyze(g, &p->an) : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; !st && i < g->n_values; i++) {
        const cg_value *v = &g->values[i];
        cg_tensor_desc d;
        int32_t id;
        cg_desc_from_value(v, &d);
        st = new_slot(p, &d, &id);
        if (st) break;
        slot *s = &p->slots[id];
        if (v->kind == CG_VAL_INPUT) {
            s->kind = SLOT_INPUT;
            for (int k = 0; k < g->n_inputs; k++)
                if (g->inputs[k] == i) s->input_index = k;
        } else if (v->kind == CG_VAL_PARAM) {
            s->kind = SLOT_PARAM;
            if (!m->weights) {
                char where[512];
                cg_loc_format(where, sizeof where, m, v->line, v->col);
                st = cg_error(CG_ERR_NOT_FOUND, "%sparam '%s' of graph '%s': no weights are bound "
                              "(give a safetensors file)", where, v->name, g->name);
                break;
            }
            cg_tensor_desc wd;
            st = cg_weights_view(m->weights, v->weight, &wd, &s->param);
        }
    }
    for (int oi = 0; !st && oi < p->an.n_nodes; oi++) {
        int ni = p->an.order[oi];
        cg_node *nd = g->nodes[ni];
        st = lower_node(p, p->an.ops[ni], p->an.attrs[ni], NULL, NULL, nd->name, nd->line, nd->col,
                        nd->n_inputs, nd->inputs, nd->n_outputs, nd->outputs, 0);
    }
    if (!st) {
        p->inptr = calloc((size_t)p->max_in + 1, sizeof *p->inptr);
        p->outptr = calloc((size_t)p->max_out + 1, sizeof *p->outptr);
        if (!p->inptr || !p->outptr) st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    if (!st && p->dev) {
        p->slot_mem = calloc((size_t)p->n_slots + 1, sizeof *p->slot_mem);
        p->ws_mem = calloc((size_t)p->n_steps + 1, sizeof *p->ws_mem);
        st = p->slot_mem && p->ws_mem ? upload_params(p) : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    if (!st) {
        /* Liveness over steps: a temp lives from its producing step to its
         * last reader; graph outputs live to the end. */
        for (int si = 0; si < p->n_steps; si++) {
            step *s = &p->steps[si];
            if (!s->op) continue;
            for (int k = 0; k < s->n_out; k++) p->slots[s->out[k]].def_step = si;
            for (int k = 0; k < s->n_in; k++) p->slots[s->in[k]].last_step = si;
        }
        for (int k = 0; k < g->n_outputs; k++) p->slots[resolve(p, g->outputs[k])].last_step = p->n_steps;
        if (p->dev)
            for (int i = 0; i < p->n_slots; i++)
                if (p->slots[i].kind == SLOT_INPUT) p->slots[i].def_step = 0;
        for (int i = 0; i < p->n_slots; i++)
            if (p->slots[i].last_step < p->slots[i].def_step) p->slots[i].last_step = p->slots[i].def_step;
        *out = p;
        return CG_OK;
    }
    cg_plan_free(p);
    return st;
}

/* ---- binding shapes and planning memory ---- */

static cg_status bind_inputs(cg_plan *p, int n, const char *const *names, cg_tensor *const *ts,
                             cg_tensor **by_pos) {
    cg_graph *g = p->graph;
    cg_model *m = p->model;
    for (int k = 0; k < g->n_inputs; k++) by_pos[k] = NULL;
    for (int i = 0; i < n; i++) {
        int k = -1;
        for (int j = 0; j < g->n_inputs; j++)
            if (names[i] && strcmp(g->values[g->inputs[j]].name, names[i]) == 0) k = j;
        if (k < 0)
            return cg_error(CG_ERR_NOT_FOUND, "graph '%s' has no input named '%s'", g->name,
                            names[i] ? names[i] : "(null)");
        if (by_pos[k])
            return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' is given twice", names[i]);
        if (!ts[i]) return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' is NULL", names[i]);
        by_pos[k] = ts[i];
    }
    for (int k = 0; k < g->n_inputs; k++)
        if (!by_pos[k])
            return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' of graph '%s' is missing",
                            g->values[g->inputs[k]].name, g->name);
    for (int s = 0; s < m->n_syms; s++) p->sym_vals[s] = -1;
    for (int k = 0; k < g->n_inputs; k++) {
        const cg_value *v = &g->values[g->inputs[k]];
        const cg_tensor *t = by_pos[k];
        char want[256], have[256];
        cg_tensor_desc wd, hd;
        cg_desc_from_value(v, &wd);
        memset(&hd, 0, sizeof hd);
        hd.dtype = (cg_op_dtype)t->dtype;
        hd.ndim = t->ndim;
        memcpy(hd.dims, t->dims, sizeof(int64_t) * (size_t)t->ndim);
        cg_desc_format(want, sizeof want, m, &wd);
        cg_desc_format(have, sizeof have, m, &hd);
        if (t->dtype != v->dtype || t->ndim != v->ndim)
            return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' is %s, graph '%s' expects %s", v->name,
                            have, g->name, want);
        for (int d = 0; d < v->ndim; d++) {
            int64_t dim = v->dims[d];
            if (dim >= 0 && dim != t->dims[d])
                return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' is %s, graph '%s' expects %s",
                                v->name, have, g->name, want);
            if (dim <= -2) {
                int64_t sk = -2 - dim;
                if (p->sym_vals[sk] >= 0 && p->sym_vals[sk] != t->dims[d])
                    return cg_error(CG_ERR_INVALID_ARGUMENT,
                                    "input '%s' is %s, but %s = %lld from an earlier input", v->name,
                                    have, m->syms[sk], (long long)p->sym_vals[sk]);
                p->sym_vals[sk] = t->dims[d];
            }
        }
    }
    return CG_OK;
}

typedef struct interval {
    int from, to;
    size_t bytes, *offset;
} interval;

static int by_size_desc(const void *a, const void *b) {
    const interval *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->from - y->from;
}

/* Greedy offset assignment, largest first, lowest offset that does not
 * collide with an already placed interval whose lifetime overlaps. */
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

static size_t round_up(size_t n, size_t align) { return (n + align - 1) / align * align; }

/* (Re)creates the device arena and the sub-buffer of every placed slot and
 * workspace; only when the bound shapes change. */
static cg_status device_buffers(cg_plan *p, size_t total) {
    cg_status st = CG_OK;
    for (int i = 0; i < p->n_slots; i++)
        if (p->slot_mem[i] && p->slots[i].kind != SLOT_PARAM) {
            clReleaseMemObject(p->slot_mem[i]);
            p->slot_mem[i] = NULL;
        }
    for (int i = 0; i < p->n_steps; i++)
        if (p->ws_mem[i]) {
            clReleaseMemObject(p->ws_mem[i]);
            p->ws_mem[i] = NULL;
        }
    if (total > p->arena_cap || !p->arena_mem) {
        if (p->arena_mem) clReleaseMemObject(p->arena_mem);
        p->arena_mem = NULL;
        p->arena_cap = 0;
        st = cg_cl_alloc(p->dev, total ? total : p->align, &p->arena_mem);
        if (st) return st;
        p->arena_cap = total ? total : p->align;
    }
    for (int i = 0; !st && i < p->n_slots; i++) {
        slot *s = &p->slots[i];
        int placed = s->kind == SLOT_TEMP || s->kind == SLOT_INPUT;
        if (!placed || s->def_step < 0) continue;
        size_t bytes = (size_t)cg_shape_numel(s->desc.ndim, s->desc.dims) * 4;
        st = cg_cl_sub_buffer(p->dev, p->arena_mem, s->offset, bytes, &p->slot_mem[i]);
    }
    for (int i = 0; !st && i < p->n_steps; i++)
        if (p->steps[i].op && p->steps[i].ws_bytes)
            st = cg_cl_sub_buffer(p->dev, p->arena_mem, p->steps[i].ws_offset, p->steps[i].ws_bytes,
                                  &p->ws_mem[i]);
    return st;
}

static cg_status plan_shapes(cg_plan *p, cg_tensor **by_pos) {
    cg_model *m = p->model;
    for (int i = 0; i < p->n_slots; i++) {
        slot *s = &p->slots[i];
        if (s->kind == SLOT_INPUT) {
            const cg_tensor *t = by_pos[s->input_index];
            memset(&s->desc, 0, sizeof s->desc);
            s->desc.dtype = (cg_op_dtype)t->dtype;
            s->desc.ndim = t->ndim;
            memcpy(s->desc.dims, t->dims, sizeof(int64_t) * (size_t)t->ndim);
            s->bytes = round_up((size_t)cg_shape_numel(t->ndim, t->dims) * 4, p->align);
        } else if (s->kind == SLOT_PARAM) {
            s->desc = s->sym;
        }
    }
    int n_iv = 0;
    interval *iv = malloc(sizeof *iv * ((size_t)p->n_slots + (size_t)p->n_steps + 1));
    if (!iv) return cg_error(CG_ERR_NO_MEMORY, "out of memory planning buffers");
    for (int si = 0; si < p->n_steps; si++) {
        step *s = &p->steps[si];
        if (!s->op) continue;
        for (int k = 0; k < s->n_in; k++) s->in_desc[k] = p->slots[s->in[k]].desc;
        cg_status st = cg_call_infer(m, s->name, s->line, s->col, s->op, s->attrs, s->n_in, s->in_desc,
                                     s->n_out, s->out_desc, 1);
        if (st) {
            free(iv);
            return st;
        }
        for (int k = 0; k < s->n_out; k++) {
            slot *o = &p->slots[s->out[k]];
            o->desc = s->out_desc[k];
            int64_t numel = cg_shape_numel(o->desc.ndim, o->desc.dims);
            if (numel < 0 || (uint64_t)numel > ((uint64_t)1 << 40)) {
                free(iv);
                char where[512];
                cg_loc_format(where, sizeof where, m, s->line, s->col);
                return cg_error(CG_ERR_VERIFY, "%s%s '%s': output %d is too large", where,
                                s->op->def->name, s->name, k);
            }
            o->bytes = round_up((size_t)numel * 4, p->align);
            o->alias = -1;
        }
        cg_op_call call = {sizeof call, s->name, s->n_in, s->n_out, s->in_desc, s->out_desc, s->attrs,
                           NULL, 0, cg_host_api_get()};
        s->ws_bytes = s->kernel->workspace ? round_up(s->kernel->workspace(&call), p->align) : 0;
        /* In place: the op allows it and input 0 dies here with equal size. */
        slot *i0 = s->n_in ? &p->slots[s->in[0]] : NULL;
        if ((s->op->def->flags & CG_OP_FLAG_INPLACE0) && i0 && i0->kind == SLOT_TEMP &&
            i0->last_step == si && i0->bytes == p->slots[s->out[0]].bytes) {
            int root = s->in[0];
            while (p->slots[root].alias >= 0) root = p->slots[root].alias;
            p->slots[s->out[0]].alias = root;
            /* The shared buffer now lives as long as the output does. */
            if (p->slots[s->out[0]].last_step > p->slots[root].last_step)
                p->slots[root].last_step = p->slots[s->out[0]].last_step;
        }
    }
    for (int i = 0; i < p->n_slots; i++) {
        slot *s = &p->slots[i];
        /* On a device, inputs are uploaded into the arena too. */
        int placed = s->kind == SLOT_TEMP || (p->dev && s->kind == SLOT_INPUT);
        if (placed && s->alias < 0 && s->def_step >= 0)
            iv[n_iv++] = (interval){s->def_step, s->last_step, s->bytes, &s->offset};
    }
    for (int si = 0; si < p->n_steps; si++)
        if (p->steps[si].op && p->steps[si].ws_bytes)
            iv[n_iv++] = (interval){si, si, p->steps[si].ws_bytes, &p->steps[si].ws_offset};
    /* Aliases are resolved after placement: their root's lifetime grew. */
    size_t total = assign_offsets(iv, n_iv);
    free(iv);
    for (int i = 0; i < p->n_slots; i++)
        if (p->slots[i].alias >= 0) p->slots[i].offset = p->slots[p->slots[i].alias].offset;
    p->arena_bytes = total;
    if (p->dev) return device_buffers(p, total);
    if (total > p->arena_cap) {
        void *a = cg_cpu_alloc(total);
        if (!a) return cg_error(CG_ERR_NO_MEMORY, "out of memory: the plan needs %zu bytes", total);
        cg_cpu_free(p->arena);
        p->arena = a;
        p->arena_cap = total;
    }
    return CG_OK;
}

static const void *slot_data(const cg_plan *p, const slot *s, cg_tensor **by_pos) {
    if (s->kind == SLOT_INPUT) return by_pos[s->input_index]->data;
    if (s->kind == SLOT_PARAM) return s->param;
    return (char *)p->arena + s->offset;
}

cg_status cg_plan_run(cg_plan *p, int n_inputs, const char *const *names, cg_tensor *const *inputs,
                      int n_outputs, cg_tensor **outputs) {
    if (!p || n_inputs < 0 || (n_inputs && (!names || !inputs)) || (n_outputs && !outputs))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_run: NULL argument");
    cg_graph *g = p->graph;
    cg_model *m = p->model;
    if (n_outputs != g->n_outputs)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "graph '%s' has %d outputs, room for %d given", g->name,
                        g->n_outputs, n_outputs);
    for (int k = 0; k < n_outputs; k++) outputs[k] = NULL;
    cg_tensor *by_pos_small[16];
    cg_tensor **by_pos = g->n_inputs <= 16 ? by_pos_small : malloc(sizeof(cg_tensor *) * (size_t)g->n_inputs);
    if (!by_pos) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    int64_t old[64];
    int nsym = m->n_syms < 64 ? m->n_syms : 64;
    memcpy(old, p->sym_vals, sizeof(int64_t) * (size_t)nsym);
    cg_status st = bind_inputs(p, n_inputs, names, inputs, by_pos);
    int same = p->bound && m->n_syms <= 64 && memcmp(old, p->sym_vals, sizeof(int64_t) * (size_t)nsym) == 0;
    if (!st && !same) {
        p->bound = 0;
        st = plan_shapes(p, by_pos);
        if (!st) p->bound = 1;
    }
    /* Inputs go to the device first; the queue is in order, so kernels see
     * them, and the blocking reads at the end wait for everything. */
    for (int i = 0; !st && p->dev && i < p->n_slots; i++) {
        const slot *s = &p->slots[i];
        size_t bytes = (size_t)cg_shape_numel(s->desc.ndim, s->desc.dims) * 4;
        if (s->kind == SLOT_INPUT && s->def_step >= 0 && bytes)
            st = cg_cl_write(p->dev, p->slot_mem[i], 0, bytes, by_pos[s->input_index]->data, 0);
    }
    for (int si = 0; !st && si < p->n_steps; si++) {
        step *s = &p->steps[si];
        if (!s->op) continue;
        for (int k = 0; k < s->n_in; k++)
            p->inptr[k] = p->dev ? (const void *)p->slot_mem[s->in[k]] : slot_data(p, &p->slots[s->in[k]], by_pos);
        for (int k = 0; k < s->n_out; k++)
            p->outptr[k] = p->dev ? (void *)p->slot_mem[s->out[k]] : (char *)p->arena + p->slots[s->out[k]].offset;
        char err[1024] = "";
        cg_op_call call = {sizeof call, s->name, s->n_in, s->n_out, s->in_desc, s->out_desc, s->attrs,
                           err, sizeof err, cg_host_api_get()};
        cg_kernel_args args = {.struct_size = sizeof args, .call = &call, .in = p->inptr, .out = p->outptr};
        if (s->ws_bytes) {
            args.workspace = p->dev ? (void *)p->ws_mem[si] : (char *)p->arena + s->ws_offset;
            args.workspace_size = s->ws_bytes;
        }
        if (p->dev) {
            args.stream = cg_cl_queue(p->dev);
            args.device = p->dev;
        }
        if (s->kernel->run(&args) != CG_OP_OK) {
            char where[512];
            err[sizeof err - 1] = 0;
            cg_loc_format(where, sizeof where, m, s->line, s->col);
            st = cg_error(CG_ERR_KERNEL, "%s%s '%s' on %s: %s", where, s->op->def->name, s->name,
                          device_label(p), err[0] ? err : "kernel failed");
        }
    }
    for (int k = 0; !st && k < n_outputs; k++) {
        int32_t si = resolve(p, g->outputs[k]);
        const slot *s = &p->slots[si];
        size_t bytes = (size_t)cg_shape_numel(s->desc.ndim, s->desc.dims) * 4;
        st = cg_tensor_alloc((cg_dtype)s->desc.dtype, s->desc.ndim, s->desc.dims, &outputs[k]);
        if (st) break;
        if (p->dev && bytes) st = cg_cl_read(p->dev, p->slot_mem[si], 0, bytes, outputs[k]->data);
        else if (!p->dev) memcpy(outputs[k]->data, slot_data(p, s, by_pos), bytes);
    }
    /* Never return while the device may still read the caller's inputs. */
    if (p->dev) {
        cg_status fs = cg_cl_finish(p->dev);
        if (!st) st = fs;
    }
    if (st)
        for (int k = 0; k < n_outputs; k++) {
            cg_tensor_free(outputs[k]);
            outputs[k] = NULL;
        }
    if (by_pos != by_pos_small) free(by_pos);
    return st;
}

size_t cg_plan_arena_bytes(const cg_plan *p) { return p ? p->arena_bytes : 0; }

const char *cg_plan_device(const cg_plan *p) { return p ? device_label(p) : NULL; }
