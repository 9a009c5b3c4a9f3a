/* Plans and the executor. A plan keeps one lowered instance per binding of
 * its symbolic dims; a run binds the inputs' shapes, picks (or builds) the
 * instance, and walks its steps: CPU kernels run on the host, OpenCL kernels
 * and transfers are enqueued on their device's in-order queue without
 * waiting, and the host waits only where it reads a device's value (a copy
 * to the CPU, the outputs). With shapes seen before, a run allocates nothing
 * beyond the output tensors (none with cg_plan_run_into) and creates no
 * OpenCL object. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "plan.h"
#include "tensor.h"
#include "weights.h"

void cg_plan_free(cg_plan *p) {
    if (!p) return;
    for (int i = 0; i < p->n_inst; i++) cg_instance_free(p, p->inst[i]);
    if (p->param_mem)
        for (size_t i = 0; i < (size_t)p->n_devs * (size_t)p->graph->n_values; i++)
            if (p->param_mem[i]) clReleaseMemObject(p->param_mem[i]);
    free(p->param_mem);
    for (int d = 1; d < p->n_devs; d++) cg_cl_device_release(p->devs[d].cl);
    for (int r = 0; r < p->n_rules; r++) free(p->rules[r].pattern);
    free(p->rules);
    free(p->inptr);
    free(p->outptr);
    cg_keep_free(p);
    cg_carry_free(p);
    cg_analysis_free(&p->an);
    free(p);
}

cg_status cg_plan_create(cg_model *m, const char *graph_name, cg_plan **out) {
    return cg_plan_create_ex(m, graph_name, NULL, out);
}

cg_status cg_plan_create_ex(cg_model *m, const char *graph_name, const cg_plan_options *opt, cg_plan **out) {
    if (!m || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_create: NULL argument");
    *out = NULL;
    cg_graph *g = graph_name ? cg_model_graph(m, graph_name) : (m->n_graphs == 1 ? m->graphs[0] : NULL);
    if (!g) {
        if (!graph_name)
            return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: the model has %d graphs: name one", m->filename,
                            m->n_graphs);
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
            return cg_error(CG_ERR_NOT_FOUND, "%sparam '%s' of graph '%s': no weights are bound "
                            "(give a safetensors file)", where, g->values[i].name, g->name);
        }
    cg_plan *p = calloc(1, sizeof *p);
    if (!p) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    p->model = m;
    p->graph = g;
    cg_status st = cg_graph_analyze(g, &p->an);
    if (!st) st = cg_place_parse(p, opt ? opt->device : NULL, opt ? opt->place : NULL);
    if (!st) {
        p->param_mem = calloc((size_t)p->n_devs * (size_t)g->n_values + 1, sizeof *p->param_mem);
        if (!p->param_mem) st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    if (!st) st = cg_keep_init(p);
    if (!st) st = cg_carry_init(p);
    if (st) {
        cg_plan_free(p);
        return st;
    }
    *out = p;
    return CG_OK;
}

/* Binds symbols from the inputs' shapes and checks every input. */
static cg_status bind_inputs(cg_plan *p, int n, const char *const *names, cg_tensor *const *ts, cg_tensor **by_pos,
                             int64_t *sym_vals) {
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
        if (by_pos[k]) return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' is given twice", names[i]);
        if (!ts[i]) return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' is NULL", names[i]);
        by_pos[k] = ts[i];
    }
    for (int k = 0; k < g->n_inputs; k++) {
        p->carried[k] = !by_pos[k];
        if (!by_pos[k]) {
            cg_status st = cg_carry_bind(p, k, &by_pos[k]);
            if (st) return st;
        }
    }
    for (int s = 0; s < m->n_syms; s++) sym_vals[s] = -1;
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
            return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' is %s, graph '%s' expects %s", v->name, have,
                            g->name, want);
        for (int d = 0; d < v->ndim; d++) {
            int64_t dim = v->dims[d];
            if (dim >= 0 && dim != t->dims[d])
                return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' is %s, graph '%s' expects %s", v->name,
                                have, g->name, want);
            if (dim <= -2) {
                int64_t sk = -2 - dim;
                if (sym_vals[sk] >= 0 && sym_vals[sk] != t->dims[d])
                    return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' is %s, but %s = %lld from an earlier input",
                                    v->name, have, m->syms[sk], (long long)sym_vals[sk]);
                sym_vals[sk] = t->dims[d];
            }
        }
    }
    return CG_OK;
}

/* Room for an instance's kernel arguments in the plan's scratch arrays. */
static cg_status ensure_scratch(cg_plan *p, const instance *in) {
    int cap = in->max_in > in->max_out ? in->max_in : in->max_out;
    if (cap <= p->scratch_cap && p->inptr && p->outptr) return CG_OK;
    const void **a = realloc(p->inptr, sizeof *a * ((size_t)cap + 1));
    if (a) p->inptr = a;
    void **b = a ? realloc(p->outptr, sizeof *b * ((size_t)cap + 1)) : NULL;
    if (!b) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    p->outptr = b;
    p->scratch_cap = cap;
    return CG_OK;
}

/* The cached instance for a binding, built on a miss (evicting the least
 * recently used when the cache is full). An instance may also have been
 * built by cg_plan_describe, so the scratch is checked on a hit too. */
static cg_status get_instance(cg_plan *p, const int64_t *sym_vals, cg_tensor *const *by_pos, instance **out,
                              int *built, cg_plan_stats *stats) {
    size_t n = sizeof(int64_t) * (size_t)p->model->n_syms;
    *built = 0;
    for (int i = 0; i < p->n_inst; i++)
        if (!memcmp(p->inst[i]->sym_vals, sym_vals, n)) {
            cg_status st = ensure_scratch(p, p->inst[i]);
            if (st) return st;
            p->inst[i]->last_used = ++p->clock;
            *out = p->inst[i];
            return CG_OK;
        }
    /* Auto placement measures kernels on the inputs' real data. */
    int autoplace = p->default_dev < 0;
    for (int r = 0; r < p->n_rules; r++) autoplace |= p->rules[r].dev < 0;
    for (int k = 0; autoplace && k < p->graph->n_inputs; k++)
        if (p->carried[k]) {
            cg_status st = cg_carry_to_host(p, k, stats);
            if (st) return st;
        }
    instance *in;
    cg_status st = cg_instance_build(p, sym_vals, by_pos, &in);
    if (st) return st;
    st = ensure_scratch(p, in);
    if (st) {
        cg_instance_free(p, in);
        return st;
    }
    if (p->n_inst == CG_PLAN_MAX_INSTANCES) {
        int lru = 0;
        for (int i = 1; i < p->n_inst; i++)
            if (p->inst[i]->last_used < p->inst[lru]->last_used) lru = i;
        cg_instance_free(p, p->inst[lru]);
        p->inst[lru] = p->inst[--p->n_inst];
    }
    in->last_used = ++p->clock;
    p->inst[p->n_inst++] = in;
    *out = in;
    *built = 1;
    return CG_OK;
}

static size_t slot_raw(const slot *s) {
    int64_t n = cg_shape_numel(s->desc.ndim, s->desc.dims);
    return n > 0 ? (size_t)n * 4 : 0;
}

static cg_status run_copy(cg_plan *p, instance *in, step *c, cg_tensor **by_pos, cg_plan_stats *st) {
    slot *src = &in->slots[c->src], *dst = &in->slots[c->dst];
    size_t bytes = c->bytes;
    st->copies++;
    st->bytes_copied += bytes;
    if (!bytes) return CG_OK;
    cg_status rc = CG_OK;
    if (src->kind == SLOT_INPUT && p->carried[src->input_index]) {
        st->copies--; /* counted where bytes cross a bus */
        st->bytes_copied -= bytes;
        return cg_carry_upload(p, in, c, src->input_index, st);
    }
    if (src->kind == SLOT_INPUT && p->keep[src->input_index]) {
        st->copies--; /* counted only when the tensor crosses */
        st->bytes_copied -= bytes;
        return cg_keep_upload(p, in, c, src->input_index, by_pos[src->input_index], st);
    }
    if (!p->devs[src->dev].cl) {
        /* Host to device: caller inputs stay untouched until the run ends
         * (every queue is finished then), so they go directly; a host
         * temporary may be overwritten by a later CPU step, so it goes
         * through the step's own staging bytes. */
        const void *from = cg_slot_host(in, src, by_pos);
        if (src->kind == SLOT_TEMP) {
            memcpy(c->staging, from, bytes);
            from = c->staging;
        }
        return cg_cl_write(p->devs[dst->dev].cl, cg_slot_mem(dst), 0, bytes, from, 0);
    }
    if (!p->devs[dst->dev].cl) /* device to host: the host waits for this value only */
        return cg_cl_read(p->devs[src->dev].cl, cg_slot_mem(src), 0, bytes, cg_slot_host(in, dst, by_pos));
    /* Device to device (separate contexts): through the step's staging. */
    rc = cg_cl_read(p->devs[src->dev].cl, cg_slot_mem(src), 0, bytes, c->staging);
    if (!rc) rc = cg_cl_write(p->devs[dst->dev].cl, cg_slot_mem(dst), 0, bytes, c->staging, 0);
    return rc;
}

static cg_status execute(cg_plan *p, instance *in, cg_tensor **by_pos, cg_tensor *const *outputs,
                         cg_plan_stats *stats) {
    cg_model *m = p->model;
    cg_status st = cg_carry_prepare(p, in, stats);
    for (int si = 0; !st && si < in->n_steps; si++) {
        step *s = &in->steps[si];
        if (s->kind == STEP_NOP) continue;
        if (s->kind == STEP_COPY) {
            st = run_copy(p, in, s, by_pos, stats);
            continue;
        }
        cg_cl_device *cl = p->devs[s->dev].cl;
        for (int k = 0; k < s->n_in; k++) {
            const slot *x = &in->slots[s->in[k]];
            p->inptr[k] = cl ? (const void *)cg_slot_mem(x) : cg_slot_host(in, x, by_pos);
        }
        for (int k = 0; k < s->n_out; k++) {
            const slot *y = &in->slots[s->out[k]];
            p->outptr[k] = cl ? (void *)y->mem : cg_slot_host(in, y, by_pos);
        }
        char err[1024] = "";
        cg_op_call call = {.struct_size = sizeof call, .node_name = s->name, .n_inputs = s->n_in,
                           .n_outputs = s->n_out, .inputs = s->in_desc, .outputs = s->out_desc, .attrs = s->attrs,
                           .err = err, .err_size = sizeof err, .host = cg_host_api_get()};
        cg_kernel_args args = {.struct_size = sizeof args, .call = &call, .in = p->inptr, .out = p->outptr};
        if (s->ws_bytes) {
            args.workspace = cl ? (void *)s->ws_mem : (char *)in->host_arena + s->ws_offset;
            args.workspace_size = s->ws_bytes;
        }
        if (cl) {
            args.stream = cg_cl_queue(cl);
            args.device = cl;
        }
        stats->kernel_launches += cl ? 0 : 1; /* device launches come from the backend's counter */
        if (s->kernel->run(&args) != CG_OP_OK) {
            char where[512];
            err[sizeof err - 1] = 0;
            cg_loc_format(where, sizeof where, m, s->line, s->col);
            st = cg_error(CG_ERR_KERNEL, "%s%s '%s' on %s: %s", where, s->op->def->name, s->name,
                          cg_plan_dev_name(p, s->dev), err[0] ? err : "kernel failed");
        }
    }
    for (int k = 0; !st && k < p->graph->n_outputs; k++) {
        const slot *s = &in->slots[in->out_slot[k]];
        size_t bytes = slot_raw(s);
        if (!bytes || !outputs[k]) continue; /* NULL: not wanted on the host */
        if (p->devs[s->dev].cl) {
            st = cg_cl_read(p->devs[s->dev].cl, cg_slot_mem(s), 0, bytes, outputs[k]->data);
            stats->copies++;
            stats->bytes_copied += bytes;
        } else {
            memcpy(outputs[k]->data, cg_slot_host(in, s, by_pos), bytes);
        }
    }
    if (!st) st = cg_carry_save(p, in, by_pos, 0);
    /* Every queue drains before returning: the caller may then reuse its
     * inputs, and staging bytes are free for the next run. */
    for (int d = 1; d < p->n_devs; d++) {
        cg_status fs = cg_cl_finish(p->devs[d].cl);
        if (!st) st = fs;
    }
    if (!st) st = cg_carry_save(p, in, by_pos, 1);
    return st;
}

static cg_status run_common(cg_plan *p, int n_inputs, const char *const *names, cg_tensor *const *inputs,
                            int n_outputs, cg_tensor *const *given, cg_tensor **made) {
    if (!p || n_inputs < 0 || (n_inputs && (!names || !inputs)) || (n_outputs && !(given || made)))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_run: NULL argument");
    cg_graph *g = p->graph;
    if (n_outputs != g->n_outputs)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "graph '%s' has %d outputs, room for %d given", g->name,
                        g->n_outputs, n_outputs);
    cg_plan_stats stats;
    memset(&stats, 0, sizeof stats);
    cg_cl_counters c0, c1;
    cg_cl_cache_stats k0, k1;
    cg_cl_counters_get(&c0);
    cg_cl_cache_stats_get(&k0);
    cg_tensor *by_pos_small[16];
    int64_t sym_small[16];
    cg_tensor **by_pos = g->n_inputs <= 16 ? by_pos_small : malloc(sizeof(cg_tensor *) * (size_t)g->n_inputs);
    int64_t *sym = p->model->n_syms <= 16 ? sym_small : malloc(sizeof(int64_t) * (size_t)p->model->n_syms);
    if (by_pos != by_pos_small || sym != sym_small) stats.host_allocs++;
    cg_status st = by_pos && sym ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if (!st) st = bind_inputs(p, n_inputs, names, inputs, by_pos, sym);
    instance *in = NULL;
    int built = 0;
    if (!st) st = get_instance(p, sym, by_pos, &in, &built, &stats);
    if (built) {
        stats.instances_built = 1;
        stats.host_allocs++;
    }
    cg_tensor *outs_small[16];
    cg_tensor **outs = (cg_tensor **)given;
    if (!st && made) {
        outs = n_outputs <= 16 ? outs_small : calloc((size_t)n_outputs, sizeof *outs);
        if (!outs) st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
        /* all NULL first: after a failed allocation every entry is freed */
        for (int k = 0; outs && k < n_outputs; k++) outs[k] = NULL;
        for (int k = 0; !st && k < n_outputs; k++) {
            const slot *s = &in->slots[in->out_slot[k]];
            st = cg_tensor_alloc((cg_dtype)s->desc.dtype, s->desc.ndim, s->desc.dims, &outs[k]);
            stats.host_allocs++;
        }
    } else if (!st) {
        for (int k = 0; !st && k < n_outputs; k++) {
            const slot *s = &in->slots[in->out_slot[k]];
            const cg_tensor *t = outs[k];
            if (!t) continue; /* an output the caller does not read */
            int ok = (cg_op_dtype)t->dtype == s->desc.dtype && t->ndim == s->desc.ndim;
            for (int d = 0; ok && d < t->ndim; d++) ok = t->dims[d] == s->desc.dims[d];
            if (!ok) {
                char want[256];
                cg_desc_format(want, sizeof want, p->model, &s->desc);
                st = cg_error(CG_ERR_INVALID_ARGUMENT, "output %d ('%s') must be a tensor of %s", k,
                              g->out_names[k], want);
            }
        }
    }
    if (!st) st = execute(p, in, by_pos, outs, &stats);
    if (st && in) /* a failed run may have left a kept input's copy half written */
        for (int si = 0; si < in->n_steps; si++) in->steps[si].kept_stamp = 0;
    if (st) cg_carry_invalidate(p);
    if (made) {
        for (int k = 0; k < n_outputs && outs; k++) {
            if (st) cg_tensor_free(outs[k]);
            made[k] = st ? NULL : outs[k];
        }
        if (outs && outs != outs_small) free(outs);
    }
    if (by_pos && by_pos != by_pos_small) free(by_pos);
    if (sym && sym != sym_small) free(sym);
    cg_cl_counters_get(&c1);
    cg_cl_cache_stats_get(&k1);
    stats.runs = 1;
    stats.kernel_launches += c1.launches - c0.launches;
    stats.clblast_calls = c1.clblast_calls - c0.clblast_calls;
    stats.cl_objects = (c1.buffers_created - c0.buffers_created) + (k1.kernels_created - k0.kernels_created) +
                       (k1.builds_from_source - k0.builds_from_source) + (k1.loads_from_disk - k0.loads_from_disk);
    p->last = stats;
    p->total.runs += stats.runs;
    p->total.instances_built += stats.instances_built;
    p->total.host_allocs += stats.host_allocs;
    p->total.cl_objects += stats.cl_objects;
    p->total.kernel_launches += stats.kernel_launches;
    p->total.copies += stats.copies;
    p->total.bytes_copied += stats.bytes_copied;
    p->total.clblast_calls += stats.clblast_calls;
    return st;
}

cg_status cg_plan_run(cg_plan *p, int n_inputs, const char *const *names, cg_tensor *const *inputs,
                      int n_outputs, cg_tensor **outputs) {
    if (outputs)
        for (int k = 0; k < n_outputs; k++) outputs[k] = NULL;
    return run_common(p, n_inputs, names, inputs, n_outputs, NULL, outputs);
}

cg_status cg_plan_run_into(cg_plan *p, int n_inputs, const char *const *names, cg_tensor *const *inputs,
                           int n_outputs, cg_tensor *const *outputs) {
    return run_common(p, n_inputs, names, inputs, n_outputs, outputs, NULL);
}

size_t cg_plan_arena_bytes(const cg_plan *p) {
    if (!p || !p->n_inst) return 0;
    const instance *last = p->inst[0];
    for (int i = 1; i < p->n_inst; i++)
        if (p->inst[i]->last_used > last->last_used) last = p->inst[i];
    size_t total = 0;
    for (int d = 0; d < p->n_devs; d++) total += last->arena_bytes[d];
    return total;
}

cg_status cg_plan_stats_get(const cg_plan *p, cg_plan_stats *last, cg_plan_stats *total) {
    if (!p) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_stats_get: plan is NULL");
    if (last) *last = p->last;
    if (total) *total = p->total;
    return CG_OK;
}

const char *cg_plan_device(const cg_plan *p) {
    if (!p) return NULL;
    if (p->default_dev < 0) return "auto";
    return cg_plan_dev_name(p, p->default_dev);
}
