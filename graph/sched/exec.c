/* The executor. A run binds the inputs' shapes, picks (or builds) the
 * instance for them, and walks its steps: host kernels run on the calling
 * thread, device kernels and transfers are enqueued on their device's
 * in-order queue without waiting, and the host waits only where it reads a
 * device's value (a host kernel's input, an output, a carried state). With
 * shapes seen before, a run allocates nothing beyond the output tensors
 * (none with cg_plan_run_into) and creates no device object. Devices are
 * reached only through backends/backend.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "plan.h"
#include "plan_stats.h"
#include "profile.h"
#include "shape.h"

/* by_pos[k]: the tensor given for graph input k (NULL: not given), the
 * inputs named (names) or numbered (idx). A name is looked up in the
 * plan's sorted names, so a run costs no comparison per pair of inputs. */
static cg_status place_inputs(cg_plan *p, int n, const char *const *names, const int *idx, cg_tensor *const *ts,
                              cg_tensor **by_pos) {
    cg_graph *g = p->graph;
    for (int k = 0; k < g->n_inputs; k++) by_pos[k] = NULL;
    if (!names && n > g->n_inputs)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "graph '%s' has %d inputs, %d given", g->name, g->n_inputs, n);
    for (int i = 0; i < n; i++) {
        int k = names ? cg_plan_input_index(p, names[i]) : idx[i];
        if (names && k < 0)
            return cg_error(CG_ERR_NOT_FOUND, "graph '%s' has no input named '%s'", g->name,
                            names[i] ? names[i] : "(null)");
        if (k < 0 || k >= g->n_inputs)
            return cg_error(CG_ERR_INVALID_ARGUMENT, "graph '%s' has inputs 0 to %d, input index %d given", g->name,
                            g->n_inputs - 1, k);
        const char *nm = g->values[g->inputs[k]].name;
        if (by_pos[k]) return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' is given twice", nm);
        if (!ts[i]) return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' is NULL", nm);
        by_pos[k] = ts[i];
    }
    return CG_OK;
}

/* Binds symbols from the inputs' shapes and checks every input; the ones
 * not given (by_pos NULL) are carried. */
static cg_status bind_inputs(cg_plan *p, cg_tensor **by_pos, int64_t *sym_vals) {
    cg_graph *g = p->graph;
    cg_model *m = p->model;
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
            return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' is %s, graph '%s' expects %s", v->name, have, g->name,
                            want);
        for (int d = 0; d < v->ndim; d++) {
            int64_t dim = v->dims[d];
            if (dim >= 0 && dim != t->dims[d])
                return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' is %s, graph '%s' expects %s", v->name, have,
                                g->name, want);
            if (dim <= -2) {
                int64_t sk = -2 - dim;
                if (sym_vals[sk] >= 0 && sym_vals[sk] != t->dims[d])
                    return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' is %s, but %s = %lld from an earlier input",
                                    v->name, have, m->syms[sk], (long long)sym_vals[sk]);
                sym_vals[sk] = t->dims[d];
            }
        }
    }
    return cg_model_eval_syms(m, sym_vals);
}

/* Room for an instance's kernel arguments in the plan's scratch arrays. */
static cg_status ensure_scratch(cg_plan *p, const instance *in) {
    int cap = in->max_in > in->max_out ? in->max_in : in->max_out;
    if (cap <= p->scratch_cap && p->inptr && p->outptr) return CG_OK;
    const cg_buf **a = realloc(p->inptr, sizeof *a * ((size_t)cap + 1));
    if (a) p->inptr = a;
    const cg_buf **b = a ? realloc(p->outptr, sizeof *b * ((size_t)cap + 1)) : NULL;
    if (!b) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    p->outptr = b;
    p->scratch_cap = cap;
    return CG_OK;
}

/* The cached instance for a binding, built on a miss (evicting the least
 * recently used when the cache is full). An instance may also have been
 * built by cg_plan_describe, so the scratch is checked on a hit too. */
static cg_status get_instance(cg_plan *p, const int64_t *sym_vals, cg_tensor *const *by_pos, instance **out, int *built,
                              cg_plan_stats *stats) {
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
    if (p->n_inst == CG_PLAN_CACHED_INSTANCES) {
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

/* Waits for the transfer that fills host slot si, if one is under way. */
static cg_status wait_host(instance *in, int32_t si) {
    /* Only copies write host temporaries asynchronously (an input's
     * def_step is 0 by convention, whatever step 0 is). */
    int d = in->slots[si].def_step;
    if (in->slots[si].kind != SLOT_TEMP || d < 0 || in->steps[d].kind != STEP_COPY) return CG_OK;
    return cg_dev_wait(&in->steps[d].ev);
}

static cg_status run_copy(cg_plan *p, instance *in, step *c, cg_tensor **by_pos, cg_plan_stats *st) {
    const slot *src = &in->slots[c->src], *dst = &in->slots[c->dst];
    if (src->kind == SLOT_INPUT && p->carried[src->input_index]) return cg_carry_upload(p, in, c, src->input_index, st);
    if (src->kind == SLOT_INPUT && p->keep[src->input_index])
        return cg_keep_upload(p, in, c, src->input_index, by_pos[src->input_index], st);
    st->copies++;
    st->bytes_copied += c->bytes;
    if (!c->bytes) return CG_OK;
    cg_status rc = wait_host(in, c->src);
    if (rc) return rc;
    const pdev *from = &p->devs[src->dev], *to = &p->devs[dst->dev];
    const cg_buf *sb = cg_slot_buf(p, src);
    void *src_host = cg_slot_host(p, src);
    cg_buf snap;
    if (src_host && c->staging) {
        /* A host temporary: a later host step may overwrite it before the
         * device reads it, so the device reads the step's own snapshot. */
        memcpy(c->staging, src_host, c->bytes);
        rc = cg_dev_wrap(from->dev, c->staging, c->bytes, &snap);
        if (rc) return rc;
        sb = &snap;
    }
    /* Into host memory: the host waits for it where it reads it. */
    cg_event *ev = to->info->host_memory ? &c->ev : NULL;
    return cg_dev_transfer(from->dev, sb, to->dev, &dst->buf, c->bytes, c->staging, ev);
}

static cg_status run_kernel(cg_plan *p, instance *in, step *s) {
    const pdev *d = &p->devs[s->dev];
    for (int k = 0; k < s->n_in; k++) {
        if (d->info->host_memory) {
            cg_status rc = wait_host(in, s->in[k]);
            if (rc) return rc;
        }
        p->inptr[k] = cg_slot_buf(p, &in->slots[s->in[k]]);
    }
    for (int k = 0; k < s->n_out; k++) p->outptr[k] = &in->slots[s->out[k]].buf;
    /* Only the ends set: "" and a terminator; an initializer would clear
     * the whole buffer for every node (a third of a tiny node's run). */
    char err[1024];
    err[0] = err[sizeof err - 1] = 0;
    cg_op_call call = cg_host_call(s->name, s->n_in, s->in_desc, s->n_out, s->out_desc, s->attrs, err, sizeof err);
    const cg_buf *check = s->check_word >= 0 ? &in->check[s->dev] : NULL;
    cg_status st = cg_dev_run(d->dev, s->kernel, &call, p->inptr, p->outptr, &s->ws, s->state, check, s->check_word);
    if (st != CG_ERR_KERNEL) return st;
    err[sizeof err - 1] = 0;
    return cg_step_error(p, s, err);
}

/* Output k into the caller's tensor: copied from host memory, or read
 * from its device (complete once the device's queue drains). */
static cg_status read_output(cg_plan *p, instance *in, int k, cg_tensor *t, cg_plan_stats *stats) {
    const slot *s = &in->slots[in->out_slot[k]];
    size_t bytes = cg_desc_bytes(&s->desc);
    if (!bytes || !t) return CG_OK; /* NULL: not wanted on the host */
    cg_status st = wait_host(in, in->out_slot[k]);
    if (st) return st;
    const void *host = cg_slot_host(p, s);
    if (host) {
        memcpy(t->data, host, bytes);
        return CG_OK;
    }
    stats->copies++;
    stats->bytes_copied += bytes;
    return cg_dev_read_async(p->devs[s->dev].dev, cg_slot_buf(p, s), 0, t->data, bytes, NULL);
}

/* Every queue drains, and every transfer's event is released: the caller
 * may then reuse its inputs, and staging bytes are free for the next run. */
static cg_status drain(cg_plan *p, instance *in) {
    cg_status st = CG_OK;
    for (int d = 0; d < p->n_devs; d++) {
        cg_status fs = cg_dev_finish(p->devs[d].dev);
        if (!st) st = fs;
    }
    for (int si = 0; si < in->n_steps; si++) {
        cg_status ws = cg_dev_wait(&in->steps[si].ev);
        if (!st) st = ws;
    }
    return st;
}

/* The device whose queue a profiled step's commands go to: a kernel's, a
 * copy's device without host memory (NULL: the host's memory both sides). */
static cg_device *capture_dev(cg_plan *p, instance *in, const step *s) {
    int d = s->dev;
    if (s->kind == STEP_COPY && p->devs[d].info->host_memory) d = in->slots[s->src].dev;
    return p->devs[d].info->host_memory ? NULL : p->devs[d].dev;
}

/* With a profiler: the step just enqueued is waited for and recorded, on
 * its device's track (copies: the destination's), kernels with their
 * input shapes, and with the device's own time where it has timestamps. */
static cg_status profile_step(cg_plan *p, instance *in, const step *s, double t0, int captured) {
    double dev_us = -1;
    if (captured) {
        double busy;
        if (!cg_dev_capture_end(capture_dev(p, in, s), &busy)) dev_us = busy;
        else cg_error_clear(); /* a profile without device times is still a profile */
    }
    cg_status st = cg_dev_finish(p->devs[s->dev].dev);
    if (!st && s->kind == STEP_COPY) st = cg_dev_finish(p->devs[in->slots[s->src].dev].dev);
    if (st) return st;
    double t1 = cg_profile_now(p->prof);
    const char *dev = p->devs[s->dev].info->name;
    if (s->kind == STEP_COPY) {
        char what[128];
        snprintf(what, sizeof what, "copy %s -> %s", p->devs[in->slots[s->src].dev].info->name, dev);
        cg_profile_add(p->prof, PROF_COPY, dev, p->graph->name, what, NULL, NULL, t0, t1, s->bytes, dev_us);
        return CG_OK;
    }
    char shapes[512];
    size_t u = 0;
    shapes[0] = 0;
    for (int k = 0; k < s->n_in && u < sizeof shapes - 1; k++) {
        char one[128];
        cg_shape_format(one, sizeof one, s->in_desc[k].dtype, s->in_desc[k].ndim, s->in_desc[k].dims, NULL, 0);
        u += (size_t)snprintf(shapes + u, sizeof shapes - u, "%s%s", k ? ", " : "", one);
    }
    cg_profile_add(p->prof, PROF_KERNEL, dev, p->graph->name, s->name, s->op->def->name, shapes, t0, t1, 0, dev_us);
    return CG_OK;
}

static cg_status execute(cg_plan *p, instance *in, cg_tensor **by_pos, cg_tensor *const *outputs,
                         cg_plan_stats *stats) {
    cg_status st = CG_OK;
    double r0 = p->prof ? cg_profile_now(p->prof) : 0;
    st = cg_arena_restore(p, in);
    cg_arena_claim(p, in);
    if (!st) st = cg_carry_direct(p, in, stats);
    for (int k = 0; !st && k < p->graph->n_inputs; k++)
        st = cg_dev_wrap(p->devs[0].dev, by_pos[k]->data,
                         cg_desc_bytes(&in->slots[in->val_slot[p->graph->inputs[k]]].desc), &p->inbuf[k]);
    if (!st) st = cg_carry_prepare(p, in, stats);
    for (int si = 0; !st && si < in->n_steps; si++) {
        step *s = &in->steps[si];
        if (s->once && in->once_done) continue; /* its outputs are kept from the first run */
        cg_device *cd = p->prof && s->kind != STEP_NOP ? capture_dev(p, in, s) : NULL;
        int captured = cd && !cg_dev_capture_begin(cd);
        if (cd && !captured) cg_error_clear();
        double t0 = p->prof ? cg_profile_now(p->prof) : 0;
        if (s->kind == STEP_COPY) st = run_copy(p, in, s, by_pos, stats);
        else if (s->kind == STEP_KERNEL) st = run_kernel(p, in, s);
        if (!st && p->prof && s->kind != STEP_NOP) st = profile_step(p, in, s, t0, captured);
        else if (captured) {
            double busy;
            if (cg_dev_capture_end(cd, &busy)) cg_error_clear(); /* the step's own error stands */
        }
    }
    double w0 = p->prof ? cg_profile_now(p->prof) : 0;
    for (int k = 0; !st && k < p->graph->n_outputs; k++) st = read_output(p, in, k, outputs[k], stats);
    if (!st) in->once_done = 1;
    if (!st) st = cg_carry_save(p, in, 0);
    /* read even after a failure: a record left behind would fail the next run */
    cg_status cs = cg_checks_read(p, in);
    cg_status ds = drain(p, in);
    if (!st) st = ds;
    if (!st) st = cs;
    if (!cs && !ds) {
        cg_status vs = cg_checks_verdict(p, in, !st);
        if (!st) st = vs;
    }
    if (!st) st = cg_carry_save(p, in, 1);
    if (p->prof) {
        double t1 = cg_profile_now(p->prof);
        cg_profile_add(p->prof, PROF_WAIT, "host", p->graph->name, "outputs and queues", NULL, NULL, w0, t1, 0, -1);
        cg_profile_add(p->prof, PROF_RUN, "host", p->graph->name, p->graph->name, NULL, NULL, r0, t1, 0, -1);
    }
    return st;
}

/* The caller's output tensors: new ones (made), or the given ones checked
 * against the outputs' types. */
static cg_status output_tensors(cg_plan *p, instance *in, int n, cg_tensor **outs, int make, cg_plan_stats *stats) {
    cg_status st = CG_OK;
    for (int k = 0; !st && k < n; k++) {
        const slot *s = &in->slots[in->out_slot[k]];
        if (make) {
            st = cg_tensor_alloc((cg_dtype)s->desc.dtype, s->desc.ndim, s->desc.dims, &outs[k]);
            stats->host_allocs++;
            continue;
        }
        const cg_tensor *t = outs[k];
        if (!t) continue; /* an output the caller does not read */
        int ok = (cg_dtype)t->dtype == (cg_dtype)s->desc.dtype && t->ndim == s->desc.ndim;
        for (int d = 0; ok && d < t->ndim; d++) ok = t->dims[d] == s->desc.dims[d];
        if (!ok) {
            char want[256];
            cg_desc_format(want, sizeof want, p->model, &s->desc);
            st = cg_error(CG_ERR_INVALID_ARGUMENT, "output %d ('%s') must be a tensor of %s", k, p->graph->out_names[k],
                          want);
        }
    }
    return st;
}

void cg_plan_stats_add(cg_plan_stats *total, const cg_plan_stats *s) {
    total->runs += s->runs;
    total->instances_built += s->instances_built;
    total->host_allocs += s->host_allocs;
    total->device_objects += s->device_objects;
    total->kernel_launches += s->kernel_launches;
    total->copies += s->copies;
    total->bytes_copied += s->bytes_copied;
    total->library_calls += s->library_calls;
    total->run_ms += s->run_ms;
}

/* A run's statistics from the backends' counters before and after it. */
static void finish_stats(cg_plan *p, cg_plan_stats *stats, const cg_dev_counters *c0) {
    cg_dev_counters c1;
    cg_dev_counters_get(&c1);
    stats->runs = 1;
    stats->kernel_launches = c1.launches - c0->launches;
    stats->library_calls = c1.library_calls - c0->library_calls;
    stats->device_objects = c1.objects_created - c0->objects_created;
    p->last = *stats;
    cg_plan_stats_add(&p->total, stats);
}

/* Per-run arrays: on the stack for the usual few inputs, symbols and
 * outputs. */
typedef struct run_arrays {
    cg_tensor *by_pos_small[16], *outs_small[16];
    int64_t sym_small[16];
    cg_tensor **by_pos, **outs;
    int64_t *sym;
} run_arrays;

static cg_status arrays_init(run_arrays *r, const cg_plan *p, int n_outputs, int make, cg_plan_stats *stats) {
    const cg_graph *g = p->graph;
    r->by_pos = g->n_inputs <= 16 ? r->by_pos_small : malloc(sizeof(cg_tensor *) * (size_t)g->n_inputs);
    r->sym = p->model->n_syms <= 16 ? r->sym_small : malloc(sizeof(int64_t) * (size_t)p->model->n_syms);
    r->outs = !make ? NULL : n_outputs <= 16 ? r->outs_small : calloc((size_t)n_outputs, sizeof *r->outs);
    for (int k = 0; r->outs && k < n_outputs; k++) r->outs[k] = NULL;
    if (r->by_pos != r->by_pos_small || r->sym != r->sym_small || (r->outs && r->outs != r->outs_small))
        stats->host_allocs++;
    if (!r->by_pos || !r->sym || (make && !r->outs)) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    return CG_OK;
}

static void arrays_free(run_arrays *r) {
    if (r->by_pos && r->by_pos != r->by_pos_small) free(r->by_pos);
    if (r->sym && r->sym != r->sym_small) free(r->sym);
    if (r->outs && r->outs != r->outs_small) free(r->outs);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* How a run names its inputs: by name or by graph input position. */
typedef struct run_inputs {
    int n;
    const char *const *names; /* NULL: by idx */
    const int *idx;
    cg_tensor *const *ts;
} run_inputs;

static cg_status run_common(cg_plan *p, const run_inputs *ri, int n_outputs, cg_tensor *const *given,
                            cg_tensor **made) {
    if (!p || ri->n < 0 || (ri->n && (!(ri->names || ri->idx) || !ri->ts)) || (n_outputs && !(given || made)))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_run: NULL argument");
    cg_graph *g = p->graph;
    if (n_outputs != g->n_outputs)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "graph '%s' has %d outputs, room for %d given", g->name, g->n_outputs,
                        n_outputs);
    cg_plan_stats stats;
    memset(&stats, 0, sizeof stats);
    double t_start = now_ms();
    cg_dev_counters c0;
    cg_dev_counters_get(&c0);
    run_arrays r;
    cg_status st = arrays_init(&r, p, n_outputs, made != NULL, &stats);
    if (!st) st = place_inputs(p, ri->n, ri->names, ri->idx, ri->ts, r.by_pos);
    if (p->n_var) { /* the variant's plan does the run */
        cg_plan *v = NULL;
        if (!st) st = cg_variant_choose(p, r.by_pos, r.sym, &v);
        arrays_free(&r);
        if (!st) st = run_common(v, ri, n_outputs, given, made);
        if (!st) {
            p->last = v->last;
            cg_plan_stats_add(&p->total, &v->last);
        }
        return st;
    }
    if (!st) st = bind_inputs(p, r.by_pos, r.sym);
    cg_tensor **snap = NULL;
    if (!st && cg_repeat_wanted(p)) {
        snap = calloc((size_t)g->n_inputs + 1, sizeof *snap);
        st = snap ? cg_repeat_snapshot(p, r.by_pos, snap) : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    instance *in = NULL;
    int built = 0;
    if (!st) st = get_instance(p, r.sym, r.by_pos, &in, &built, &stats);
    if (built) {
        stats.instances_built = 1;
        stats.host_allocs++;
    }
    cg_tensor **outs = made ? r.outs : (cg_tensor **)given;
    if (!st) st = output_tensors(p, in, n_outputs, outs, made != NULL, &stats);
    if (!st) st = execute(p, in, r.by_pos, outs, &stats);
    /* before the repeat check, whose runs leave the statistics as this run's */
    stats.run_ms = now_ms() - t_start;
    finish_stats(p, &stats, &c0);
    if (!st && snap) st = cg_repeat_check(p, r.by_pos, snap, outs);
    for (int k = 0; snap && k < g->n_inputs; k++) cg_tensor_free(snap[k]);
    if (st && in) /* a failed run may have left a kept input's copy half written */
        for (int si = 0; si < in->n_steps; si++) in->steps[si].kept_stamp = 0;
    if (st) cg_carry_invalidate(p);
    for (int k = 0; made && k < n_outputs; k++) {
        if (st && r.outs) cg_tensor_free(r.outs[k]);
        made[k] = st || !r.outs ? NULL : r.outs[k];
    }
    arrays_free(&r);
    free(snap);
    return st;
}

cg_status cg_plan_run(cg_plan *p, int n_inputs, const char *const *names, cg_tensor *const *inputs, int n_outputs,
                      cg_tensor **outputs) {
    if (outputs)
        for (int k = 0; k < n_outputs; k++) outputs[k] = NULL;
    run_inputs ri = {n_inputs, names, NULL, inputs};
    if (n_inputs && !names) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_run: NULL argument");
    return run_common(p, &ri, n_outputs, NULL, outputs);
}

cg_status cg_plan_run_into(cg_plan *p, int n_inputs, const char *const *names, cg_tensor *const *inputs, int n_outputs,
                           cg_tensor *const *outputs) {
    run_inputs ri = {n_inputs, names, NULL, inputs};
    if (n_inputs && !names) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_run: NULL argument");
    return run_common(p, &ri, n_outputs, outputs, NULL);
}

cg_status cg_plan_run_indexed(cg_plan *p, const cg_plan_binding *b) {
    if (!p || !b) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_run_indexed: NULL argument");
    if (b->struct_size < sizeof *b)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_run_indexed: binding struct_size %zu is too small",
                        b->struct_size);
    if (b->n_inputs && !b->input_index) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_run_indexed: NULL argument");
    run_inputs ri = {b->n_inputs, NULL, b->input_index, b->inputs};
    return run_common(p, &ri, b->n_outputs, b->outputs, NULL);
}
