/* Plans: creation for a graph and a placement, and what a plan tells about
 * itself (device, memory, statistics). Running is in exec.c. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "plan.h"

void cg_plan_free(cg_plan *p) {
    if (!p) return;
    if (p->var) { /* a dispatching plan holds nothing else */
        for (int i = 0; i < p->n_var; i++) cg_plan_free(p->var[i]);
        free(p->var);
        free(p->in_sorted);
        free(p);
        return;
    }
    cg_plan_drop_instances(p);
    for (int d = 0; p->arena && d < p->n_devs; d++) cg_dev_free(p->devs[d].dev, &p->arena[d]);
    free(p->arena);
    for (int d = 0; p->params && d < p->n_devs; d++)
        for (int v = 0; v < p->graph->n_values; v++)
            cg_dev_free(p->devs[d].dev, &p->params[(size_t)d * (size_t)p->graph->n_values + (size_t)v]);
    free(p->params);
    cg_keep_free(p);
    cg_carry_free(p);
    for (int d = 0; d < p->n_devs; d++) cg_dev_release(p->devs[d].dev);
    free(p->devs);
    for (int r = 0; r < p->n_rules; r++) free(p->rules[r].pattern);
    free(p->rules);
    free(p->inptr);
    free(p->outptr);
    free(p->inbuf);
    free(p->in_sorted);
    cg_analysis_free(&p->an);
    free(p);
}

cg_status cg_plan_release(cg_plan *p, unsigned what) {
    if (!p) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_release: NULL plan");
    if (what & ~(unsigned)CG_RELEASE_ALL)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_release: unknown flags %#x", what);
    for (int i = 0; i < p->n_var; i++) cg_plan_release(p->var[i], what);
    if (p->var) return CG_OK;
    if (what & CG_RELEASE_CARRIED) cg_carry_drop_values(p);
    if (!(what & CG_RELEASE_ARENA)) return CG_OK;
    /* The instances hold views of the arena. In host memory they stay, and
     * the next run's arena takes them again (exec.c cg_arena_restore): a
     * decoder keeps its instance per cache length. On a device an OpenCL
     * sub-buffer keeps its parent alive, so there they go too, and the
     * next run lowers its binding again. */
    int host = 1;
    for (int d = 0; d < p->n_devs; d++) host &= p->devs[d].info->host_memory != 0;
    if (!host) cg_plan_drop_instances(p);
    for (int d = 0; p->arena && d < p->n_devs; d++) cg_dev_free(p->devs[d].dev, &p->arena[d]);
    p->arena_owner = NULL;
    return CG_OK;
}

static int name_cmp(const void *a, const void *b) {
    return strcmp(((const plan_name *)a)->name, ((const plan_name *)b)->name);
}

/* p->in_sorted for the plan's graph. */
cg_status cg_plan_sort_input_names(cg_plan *p) {
    const cg_graph *g = p->graph;
    p->in_sorted = malloc(sizeof *p->in_sorted * ((size_t)g->n_inputs + 1));
    if (!p->in_sorted) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int k = 0; k < g->n_inputs; k++) {
        p->in_sorted[k].name = g->values[g->inputs[k]].name;
        p->in_sorted[k].pos = k;
    }
    qsort(p->in_sorted, (size_t)g->n_inputs, sizeof *p->in_sorted, name_cmp);
    return CG_OK;
}

int cg_plan_input_index(const cg_plan *p, const char *name) {
    if (!p || !name) return -1;
    plan_name key = {name, -1};
    const plan_name *hit = bsearch(&key, p->in_sorted, (size_t)p->graph->n_inputs, sizeof key, name_cmp);
    return hit ? hit->pos : -1;
}

int cg_plan_output_index(const cg_plan *p, const char *name) {
    if (!p || !name) return -1;
    for (int k = 0; k < p->graph->n_outputs; k++)
        if (p->graph->out_names[k] && !strcmp(p->graph->out_names[k], name)) return k;
    return -1;
}

/* The graph to plan, verified, with its weights bound. */
static cg_status plan_graph(cg_model *m, const char *graph_name, cg_graph **out) {
    int one_name = m->n_graphs > 0; /* variants of one graph count as one */
    for (int i = 1; i < m->n_graphs; i++) one_name &= !strcmp(m->graphs[i]->name, m->graphs[0]->name);
    cg_graph *g = graph_name ? cg_model_graph(m, graph_name) : (one_name ? m->graphs[0] : NULL);
    if (!g) {
        if (!graph_name)
            return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: the model has %d graphs: name one", m->filename, m->n_graphs);
        return cg_error(CG_ERR_NOT_FOUND, "%s: no graph named '%s'", m->filename, graph_name);
    }
    if (!m->verified) {
        cg_status st = cg_model_verify(m);
        if (st) return st;
    }
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i].kind == CG_VAL_PARAM && !m->weights) {
            char where[512];
            cg_loc_format(where, sizeof where, m, g->values[i].line, g->values[i].col);
            return cg_error(CG_ERR_NOT_FOUND,
                            "%sparam '%s' of graph '%s': no weights are bound (give a safetensors file)", where,
                            g->values[i].name, g->name);
        }
    *out = g;
    return CG_OK;
}

cg_status cg_plan_create(cg_model *m, const char *graph_name, const cg_plan_options *opt, cg_plan **out) {
    if (!m || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_create: NULL argument");
    *out = NULL;
    if (opt && opt->struct_size < offsetof(cg_plan_options, place) + sizeof opt->place)
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "cg_plan_options.struct_size is %zu; set it to sizeof(cg_plan_options)", opt->struct_size);
    cg_graph *g;
    cg_status st = plan_graph(m, graph_name, &g);
    if (!st) st = cg_variant_plan_create(m, g, opt, out);
    if (st || *out) return st;
    return cg_plan_create_one(m, g, opt, out);
}

cg_status cg_plan_create_one(cg_model *m, cg_graph *g, const cg_plan_options *opt, cg_plan **out) {
    cg_plan *p = calloc(1, sizeof *p);
    cg_status st;
    if (!p) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    p->model = m;
    p->graph = g;
    st = cg_graph_analyze(g, &p->an);
    if (!st) st = cg_place_parse(p, opt ? opt->device : NULL, opt ? opt->place : NULL);
    if (!st) {
        p->params = calloc((size_t)p->n_devs * (size_t)g->n_values + 1, sizeof *p->params);
        p->inbuf = calloc((size_t)g->n_inputs + 1, sizeof *p->inbuf);
        p->arena = calloc((size_t)p->n_devs + 1, sizeof *p->arena);
        if (!p->params || !p->inbuf || !p->arena) st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    if (!st) st = cg_plan_sort_input_names(p);
    if (!st) st = cg_keep_init(p);
    if (!st) st = cg_carry_init(p);
    if (st) {
        cg_plan_free(p);
        return st;
    }
    *out = p;
    return CG_OK;
}

/* The instance the last run used. */
static const instance *last_instance(const cg_plan *p) {
    if (!p->n_inst) return NULL;
    const instance *last = p->inst[0];
    for (int i = 1; i < p->n_inst; i++)
        if (p->inst[i]->last_used > last->last_used) last = p->inst[i];
    return last;
}

cg_status cg_plan_memory(const cg_plan *p, cg_plan_memory_info *out) {
    if (!p || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_memory: NULL argument");
    memset(out, 0, sizeof *out);
    for (int i = 0; i < p->n_var; i++) {
        cg_plan_memory_info v;
        cg_plan_memory(p->var[i], &v);
        out->arena_bytes += v.arena_bytes;
        out->state_bytes += v.state_bytes;
        out->all_state_bytes += v.all_state_bytes;
        out->param_bytes += v.param_bytes;
        out->instances += v.instances;
    }
    const instance *last = last_instance(p);
    for (int d = 0; last && d < p->n_devs; d++) out->arena_bytes += last->arena_bytes[d];
    if (last) out->state_bytes = last->state_bytes;
    for (int i = 0; i < p->n_inst; i++) out->all_state_bytes += p->inst[i]->state_bytes;
    size_t nv = (size_t)p->graph->n_values;
    for (int d = 0; d < p->n_devs; d++)
        for (size_t v = 0; v < nv; v++)
            if (p->params[(size_t)d * nv + v].kind == CG_BUF_ALLOC)
                out->param_bytes += p->params[(size_t)d * nv + v].bytes;
    out->instances = (uint64_t)p->n_inst;
    return CG_OK;
}

cg_status cg_plan_stats_get(const cg_plan *p, cg_plan_stats *last, cg_plan_stats *total) {
    if (!p) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_stats_get: plan is NULL");
    if (last) *last = p->last;
    if (total) *total = p->total;
    return CG_OK;
}

const char *cg_plan_device(const cg_plan *p) {
    if (!p) return NULL;
    if (p->n_var) return cg_plan_device(p->var[0]);
    if (p->default_dev < 0) return "auto";
    return cg_plan_dev_name(p, p->default_dev);
}

cg_status cg_plan_set_profiler(cg_plan *p, cg_profiler *prof) {
    if (!p) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_set_profiler: NULL plan");
    for (int i = 0; i < p->n_var; i++) cg_plan_set_profiler(p->var[i], prof);
    p->prof = prof;
    return CG_OK;
}
