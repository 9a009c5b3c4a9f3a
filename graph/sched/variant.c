/* Plans of graphs with variants (`graph main when T == 1 { ... }`, made by
 * the ONNX importer for an If on dims whose branches differ in shape): one
 * plan per variant, built when the plan is created, and a dispatching plan
 * that binds each run's symbols from its inputs and runs the first variant
 * whose guards hold. The variants share the interface (verify.c), so input
 * and output positions are the same in all of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "plan.h"

cg_status cg_variant_plan_create(cg_model *m, cg_graph *g, const cg_plan_options *opt, cg_plan **out) {
    *out = NULL;
    int n = 0;
    for (int i = 0; i < m->n_graphs; i++) n += !strcmp(m->graphs[i]->name, g->name);
    if (n == 1 && !g->n_guards) return CG_OK;
    cg_plan *p = calloc(1, sizeof *p);
    if (!p) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    p->model = m;
    p->graph = g;
    p->var = calloc((size_t)n, sizeof *p->var);
    cg_status st = p->var ? cg_plan_sort_input_names(p) : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < m->n_graphs && !st; i++)
        if (!strcmp(m->graphs[i]->name, g->name)) st = cg_plan_create_one(m, m->graphs[i], opt, &p->var[p->n_var++]);
    if (st) {
        cg_plan_free(p);
        return st;
    }
    *out = p;
    return CG_OK;
}

/* The symbols the given inputs bind (the variants declare the same inputs),
 * then the derived ones. */
static cg_status bind_syms(const cg_plan *p, cg_tensor *const *by_pos, int64_t *sym) {
    const cg_graph *g = p->graph;
    const cg_model *m = p->model;
    for (int s = 0; s < m->n_syms; s++) sym[s] = -1;
    for (int k = 0; k < g->n_inputs; k++) {
        const cg_value *v = &g->values[g->inputs[k]];
        const cg_tensor *t = by_pos[k];
        if (!t) continue;
        if (t->ndim != v->ndim)
            return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' has %d dims, graph '%s' expects %d", v->name, t->ndim,
                            g->name, v->ndim);
        for (int d = 0; d < v->ndim; d++)
            if (v->dims[d] <= -2 && sym[-2 - v->dims[d]] < 0) sym[-2 - v->dims[d]] = t->dims[d];
    }
    cg_status st = cg_graph_bind_values(g, (const cg_tensor *const *)by_pos, sym);
    return st ? st : cg_model_eval_syms(m, sym);
}

cg_plan *cg_variant_for(const cg_plan *p, const int64_t *sym) {
    for (int i = 0; i < p->n_var; i++)
        if (cg_graph_guards_hold(p->var[i]->graph, sym)) return p->var[i];
    return NULL;
}

/* "T = 3, S = 9": each symbol the variants' guards read, once. */
static void guard_sizes(const cg_plan *p, const int64_t *sym, char *buf, size_t size) {
    const cg_model *m = p->model;
    unsigned char *seen = calloc((size_t)m->n_syms + 1, 1);
    size_t u = 0;
    buf[0] = 0;
    for (int i = 0; i < p->n_var; i++) {
        const cg_graph *v = p->var[i]->graph;
        for (int k = 0; k < v->n_guards; k++) {
            const int64_t ops[2] = {v->guards[k].a, v->guards[k].b};
            for (int j = 0; j < 2; j++) {
                if (ops[j] >= 0) continue;
                const int64_t x = -2 - ops[j];
                if (seen && seen[x]++) continue;
                u += (size_t)snprintf(buf + u, u < size ? size - u : 0, "%s%s = %lld", u ? ", " : "", m->syms[x],
                                      (long long)sym[x]);
            }
        }
    }
    free(seen);
}

cg_status cg_variant_choose(cg_plan *p, cg_tensor *const *by_pos, int64_t *sym, cg_plan **out) {
    cg_status st = bind_syms(p, by_pos, sym);
    if (st) return st;
    if ((*out = cg_variant_for(p, sym))) return CG_OK;
    /* The variants an import could make cover every binding; a written
     * model's may not. */
    char have[512], want[1024] = "";
    size_t w = 0;
    for (int i = 0; i < p->n_var; i++) {
        char t[400];
        cg_graph_guards_text(p->var[i]->graph, t, sizeof t);
        w += (size_t)snprintf(want + w, w < sizeof want ? sizeof want - w : 0, "%s%s", i ? "; " : "", t);
    }
    guard_sizes(p, sym, have, sizeof have);
    const char *note = NULL;
    for (int i = 0; i < p->model->n_refused && !note; i++)
        if (cg_guards_hold(p->model->refused[i].n_guards, p->model->refused[i].guards, sym))
            note = p->model->refused[i].why;
    return cg_error(CG_ERR_INVALID_ARGUMENT, "graph '%s' has no variant for %s (its variants are for %s)%s%s",
                    p->graph->name, have, want, note ? "; " : "", note ? note : "");
}
