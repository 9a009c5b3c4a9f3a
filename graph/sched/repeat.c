/* The repeat check (CLGRAPH_CHECK_RUNS=1): every successful run of a plan
 * is followed by the same run twice more, with a run of another binding of
 * the symbolic dims in between, and the outputs must be bit-identical to
 * the first run's. Buffer reuse across runs (a folded value overwritten, an
 * instance's memory shared with another, a kept or carried input's copy
 * stale) shows up as a difference, with no reference to compare with. The
 * test suites run with it on; it costs three more runs per run, so it is
 * off otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "plan.h"
#include "shape.h"
#include "tensor.h"

/* Read at every run, so that a test counting a plan's instances or
 * allocations can turn it off around its measurement. */
int cg_repeat_wanted(const cg_plan *p) {
    if (p->repeating || p->prof) return 0;
    const char *v = getenv("CLGRAPH_CHECK_RUNS");
    return v && *v && strcmp(v, "0") != 0;
}

static size_t tensor_bytes(const cg_tensor *t) {
    return (size_t)cg_shape_numel(t->ndim, t->dims) * cg_dtype_size(t->dtype);
}

static cg_status clone(const cg_tensor *t, cg_tensor **out) {
    cg_status st = cg_tensor_alloc(t->dtype, t->ndim, t->dims, out);
    if (!st) memcpy((*out)->data, t->data, tensor_bytes(t));
    return st;
}

cg_status cg_repeat_snapshot(cg_plan *p, cg_tensor **by_pos, cg_tensor **snap) {
    cg_plan_stats scratch;
    memset(&scratch, 0, sizeof scratch);
    cg_status st = CG_OK;
    for (int k = 0; k < p->graph->n_inputs; k++) snap[k] = NULL;
    for (int k = 0; !st && k < p->graph->n_inputs; k++) {
        if (!p->carried[k]) continue;
        st = cg_carry_to_host(p, k, &scratch);
        if (!st) st = cg_carry_bind(p, k, &by_pos[k]);
        if (!st) st = clone(by_pos[k], &snap[k]);
    }
    return st;
}

/* Input t with every symbolic dim of its graph input one larger, the new
 * rows copies of the last ones (ids, lengths and row indices stay valid). */
static cg_status grow(const cg_value *v, const cg_tensor *t, cg_tensor **out) {
    int64_t dims[CG_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) dims[d] = t->dims[d] + (v->dims[d] <= -2 && t->dims[d] > 0);
    cg_status st = cg_tensor_alloc(t->dtype, t->ndim, dims, out);
    if (st) return st;
    const size_t es = cg_dtype_size(t->dtype);
    const int64_t n = cg_shape_numel(t->ndim, dims);
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i, src = 0, stride = 1;
        for (int d = t->ndim - 1; d >= 0; d--) {
            int64_t c = r % dims[d];
            r /= dims[d];
            src += (c < t->dims[d] ? c : t->dims[d] - 1) * stride;
            stride *= t->dims[d];
        }
        memcpy((char *)(*out)->data + (size_t)i * es, (const char *)t->data + (size_t)src * es, es);
    }
    return CG_OK;
}

/* First difference between the caller's outputs and a repeat's, or CG_OK. */
static cg_status compare(const cg_plan *p, cg_tensor *const *want, cg_tensor *const *got, int run) {
    for (int k = 0; k < p->graph->n_outputs; k++) {
        const cg_tensor *a = want[k], *b = got[k];
        if (!a) continue; /* not read by the caller */
        size_t es = cg_dtype_size(a->dtype), bytes = tensor_bytes(a);
        int same = b && b->ndim == a->ndim && !memcmp(b->dims, a->dims, sizeof(int64_t) * (size_t)a->ndim);
        if (same && !memcmp(a->data, b->data, bytes)) continue;
        size_t i = 0;
        while (same && i + es <= bytes && !memcmp((const char *)a->data + i, (const char *)b->data + i, es)) i += es;
        return cg_error(CG_ERR_KERNEL,
                        "graph '%s': run %d of the same inputs gave output '%s' different from the first run%s%zu "
                        "(CLGRAPH_CHECK_RUNS)",
                        p->graph->name, run, p->graph->out_names[k], same ? " at element " : ", shape differs; ",
                        same ? i / es : (size_t)0);
    }
    return CG_OK;
}

static void free_all(cg_tensor **t, int n) {
    for (int k = 0; k < n; k++) {
        cg_tensor_free(t[k]);
        t[k] = NULL;
    }
}

/* One more run of the inputs `ins` (all graph inputs by position) into new
 * tensors. */
static cg_status again(cg_plan *p, cg_tensor **ins, cg_tensor **outs) {
    const cg_graph *g = p->graph;
    const char **names = malloc(sizeof *names * ((size_t)g->n_inputs + 1));
    if (!names) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int k = 0; k < g->n_inputs; k++) names[k] = g->values[g->inputs[k]].name;
    cg_status st = cg_plan_run(p, g->n_inputs, names, ins, g->n_outputs, outs);
    free(names);
    return st;
}

/* A run of the grown binding; its failure (a shape the graph cannot take)
 * is no finding, and such a plan is not tried again. */
static void other_binding(cg_plan *p, cg_tensor **ins, cg_tensor **outs) {
    const cg_graph *g = p->graph;
    if (!p->model->n_syms || p->repeat_no_other) return;
    cg_tensor **grown = calloc((size_t)g->n_inputs + 1, sizeof *grown);
    cg_status st = grown ? CG_OK : CG_ERR_NO_MEMORY;
    for (int k = 0; !st && k < g->n_inputs; k++) st = grow(&g->values[g->inputs[k]], ins[k], &grown[k]);
    if (!st) st = again(p, grown, outs);
    if (st) {
        p->repeat_no_other = 1;
        cg_error_clear();
    }
    free_all(outs, g->n_outputs);
    if (grown) free_all(grown, g->n_inputs);
    free(grown);
}

cg_status cg_repeat_check(cg_plan *p, cg_tensor **by_pos, cg_tensor **snap, cg_tensor *const *outputs) {
    const cg_graph *g = p->graph;
    cg_plan_stats last = p->last, total = p->total;
    cg_tensor **ins = calloc((size_t)g->n_inputs + 1, sizeof *ins);
    cg_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    cg_status st = ins && outs ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int k = 0; !st && k < g->n_inputs; k++) ins[k] = snap[k] ? snap[k] : by_pos[k];
    p->repeating = 1;
    for (int run = 2; !st && run <= 3; run++) {
        if (run == 3) other_binding(p, ins, outs);
        st = again(p, ins, outs);
        if (st) cg_error_prefix("CLGRAPH_CHECK_RUNS: run %d of the same inputs failed: ", run);
        if (!st) st = compare(p, outputs, outs, run);
        free_all(outs, g->n_outputs);
    }
    p->repeating = 0;
    p->last = last;
    p->total = total;
    free(ins);
    free(outs);
    return st;
}
