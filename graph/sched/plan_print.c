/* Describing a plan for people: every step with its device and kernel,
 * every copy with its bytes, memory per device and the estimated cost, as
 * text or as Graphviz source. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "shape.h"
#include "plan.h"
#include "strbuf.h"
#include "tensor.h"

static cg_status parse_bindings(cg_plan *p, const char *text, int64_t *sym) {
    cg_model *m = p->model;
    for (int i = 0; i < m->n_syms; i++) sym[i] = -1;
    const char *s = text ? text : "";
    while (*s) {
        while (*s == ' ' || *s == ',') s++;
        if (!*s) break;
        const char *eq = strchr(s, '=');
        if (!eq) return cg_error(CG_ERR_INVALID_ARGUMENT, "bindings '%s': expected NAME=SIZE pairs like B=3,S=7", text);
        size_t len = (size_t)(eq - s);
        int k = -1;
        for (int i = 0; i < m->n_syms; i++)
            if (strlen(m->syms[i]) == len && !strncmp(m->syms[i], s, len)) k = i;
        if (k < 0) return cg_error(CG_ERR_NOT_FOUND, "bindings: the model has no dimension named '%.*s'", (int)len, s);
        char *end;
        long long v = strtoll(eq + 1, &end, 10);
        if (end == eq + 1 || v < 0) return cg_error(CG_ERR_INVALID_ARGUMENT, "bindings: bad size for '%s'", m->syms[k]);
        sym[k] = v;
        s = end;
    }
    /* Every symbol the graph's inputs use must be bound. */
    cg_graph *g = p->graph;
    for (int i = 0; i < g->n_inputs; i++) {
        const cg_value *v = &g->values[g->inputs[i]];
        for (int d = 0; d < v->ndim; d++)
            if (v->dims[d] <= -2 && sym[-2 - v->dims[d]] < 0)
                return cg_error(CG_ERR_INVALID_ARGUMENT, "bindings: give a size for %s (input '%s'), e.g. %s=1",
                                m->syms[-2 - v->dims[d]], v->name, m->syms[-2 - v->dims[d]]);
    }
    return cg_model_eval_syms(m, sym);
}

static instance *find_instance(cg_plan *p, const int64_t *sym) {
    for (int i = 0; i < p->n_inst; i++)
        if (!memcmp(p->inst[i]->sym_vals, sym, sizeof(int64_t) * (size_t)p->model->n_syms)) return p->inst[i];
    return NULL;
}

static void fmt_bytes(char *out, size_t n, double bytes) {
    if (bytes >= 1024.0 * 1024) snprintf(out, n, "%.1f MiB", bytes / (1024.0 * 1024));
    else if (bytes >= 1024.0) snprintf(out, n, "%.1f KiB", bytes / 1024.0);
    else snprintf(out, n, "%.0f B", bytes);
}

/* Measures steps without an estimate (fixed placements are not measured
 * while lowering). */
static void estimate(cg_plan *p, instance *in) {
    in->est_cost_us = 0;
    for (int si = 0; si < in->n_steps; si++) {
        step *s = &in->steps[si];
        if (s->kind == STEP_KERNEL && s->cost_us <= 0) {
            /* Zero-filled inputs: a plan described without data. */
            int cached = 0;
            double c = cg_cost_kernel(p, s->dev, s->op, s->kernel, s->attrs, s->n_in, s->in_desc, NULL, s->n_out,
                                      s->out_desc, &cached);
            s->cost_us = c > 0 ? c : 0;
            s->cost_src = c <= 0 ? COST_NONE : cached ? COST_CACHED : COST_MEASURED;
        }
        if (s->kind == STEP_COPY && s->cost_us <= 0) {
            s->cost_us = cg_cost_copy(p, in->slots[s->src].dev, s->dev, s->bytes);
            s->cost_src = COST_MODEL;
        }
        in->est_cost_us += s->cost_us;
    }
}

static const char *cost_src_name(int src) {
    switch (src) {
    case COST_MEASURED: return "measured";
    case COST_CACHED: return "cached";
    case COST_MODEL: return "model";
    case COST_PLACEMENT: return "placement";
    }
    return "-";
}

/* "rewrites: attention 12, gelu 0; off: x" (places changed) when the
 * model went through them (an ONNX import), so that a plan says what
 * replaced its nodes. */
static void describe_rewrites(const cg_model *m, cg_strbuf *b) {
    if (!m->rewritten) return;
    const char *sep = "rewrites: ";
    if (!m->rewrites_ran) cg_strbuf_put(b, "rewrites: none");
    for (int i = 0; i < cg_rewrite_count(); i++)
        if (cg_model_rewrite_fired(m, i) >= 0) {
            cg_strbuf_put(b, "%s%s %d", sep, cg_rewrite_name(i), cg_model_rewrite_fired(m, i));
            sep = ", ";
        }
    sep = "; off: ";
    for (int i = 0; i < cg_rewrite_count(); i++)
        if (cg_model_rewrite_fired(m, i) < 0) {
            cg_strbuf_put(b, "%s%s", sep, cg_rewrite_name(i));
            sep = ", ";
        }
    cg_strbuf_put(b, "\n");
}

static void describe_text(cg_plan *p, instance *in, cg_strbuf *b) {
    cg_model *m = p->model;
    cg_strbuf_put(b, "plan of graph '%s' for", p->graph->name);
    for (int i = 0; i < m->n_syms; i++)
        if (in->sym_vals[i] >= 0) cg_strbuf_put(b, " %s=%lld", m->syms[i], (long long)in->sym_vals[i]);
    cg_strbuf_put(b, "; default device %s\n", p->default_dev < 0 ? "auto" : cg_plan_dev_name(p, p->default_dev));
    describe_rewrites(m, b);
    cg_strbuf_put(b, "%-5s %-10s %-24s %-28s %9s  %s\n", "step", "device", "kernel", "node / value", "est. us", "from");
    int n = 0, n_copies = 0;
    double copy_bytes = 0;
    for (int si = 0; si < in->n_steps; si++) {
        const step *s = &in->steps[si];
        if (s->kind == STEP_NOP) continue;
        n++;
        if (s->kind == STEP_KERNEL) {
            char ty[160];
            cg_desc_format(ty, sizeof ty, m, &s->out_desc[0]);
            cg_strbuf_put(b, "%-5d %-10s %-24s %-28s %9.1f  %s\n", n, p->devs[s->dev].info->name, s->op->def->name,
                          s->name, s->cost_us, cost_src_name(s->cost_src));
            cg_strbuf_put(b, "      -> %s\n", ty);
        } else {
            const slot *src = &in->slots[s->src];
            const char *what = src->value >= 0 ? p->graph->values[src->value].name : "(temporary)";
            char bytes[32];
            fmt_bytes(bytes, sizeof bytes, (double)s->bytes);
            cg_strbuf_put(b, "%-5d %-10s %-24s %-28s %9.1f  %s\n", n, p->devs[s->dev].info->name, "copy", what,
                          s->cost_us, cost_src_name(s->cost_src));
            cg_strbuf_put(b, "      %s -> %s, %s\n", p->devs[src->dev].info->name, p->devs[s->dev].info->name, bytes);
            n_copies++;
            copy_bytes += (double)s->bytes;
        }
    }
    for (int k = 0; k < p->graph->n_outputs; k++) {
        const slot *s = &in->slots[in->out_slot[k]];
        if (!p->devs[s->dev].info->host_memory) {
            char bytes[32];
            fmt_bytes(bytes, sizeof bytes, (double)cg_desc_bytes(&s->desc));
            cg_strbuf_put(b, "      output '%s' read back from %s, %s\n", p->graph->out_names[k],
                          p->devs[s->dev].info->name, bytes);
        }
    }
    cg_strbuf_put(b, "memory:");
    for (int d = 0; d < p->n_devs; d++) {
        char bytes[32];
        fmt_bytes(bytes, sizeof bytes, (double)in->arena_bytes[d]);
        cg_strbuf_put(b, "%s %s %s", d ? ";" : "", cg_plan_dev_name(p, d), bytes);
    }
    char cb[32];
    fmt_bytes(cb, sizeof cb, copy_bytes);
    cg_strbuf_put(b, "\ncopies: %d per run, %s\nestimated cost: %.1f us per run\n", n_copies, cb, in->est_cost_us);
    cg_strbuf_put(b, "(from: measured = the kernel timed now, on zero-filled inputs; cached = timed before on this "
                     "device, driver and kernel code (costs.txt); placement = timed by auto placement on the inputs, "
                     "with its inputs' transfers; model = a transfer, the link's measured latency plus bytes over its "
                     "bandwidth)\n");
}

/* The Graphviz node that holds slot x: the graph input it is, or the
 * step that writes it (following decomposition redirects);
 * 0 for a parameter, which the picture leaves out. */
static int dot_source(const instance *in, const int32_t *made_by, int32_t x, char *out, size_t n) {
    for (int hops = 0; hops <= in->n_slots; hops++) {
        const slot *sl = &in->slots[x];
        if (sl->kind == SLOT_INPUT) {
            snprintf(out, n, "in%d", sl->input_index);
            return 1;
        }
        if (made_by[x] >= 0) {
            snprintf(out, n, "s%d", made_by[x]);
            return 1;
        }
        int32_t next = in->redirect[x];
        if (next == x) return 0;
        x = next;
    }
    return 0;
}

static void describe_dot(cg_plan *p, instance *in, cg_strbuf *b) {
    static const char *colors[] = {"#dddddd", "#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6", "#fb9a99"};
    cg_strbuf_put(b, "digraph \"%s\" {\n  rankdir=TB;\n  node [shape=box, style=filled, fontname=\"Helvetica\"];\n",
                  p->graph->name);
    for (int d = 0; d < p->n_devs; d++) {
        cg_strbuf_put(b, "  subgraph cluster_%d {\n    label=\"%s\";\n    color=\"#888888\";\n", d,
                      cg_plan_dev_name(p, d));
        for (int si = 0; si < in->n_steps; si++) {
            const step *s = &in->steps[si];
            if (s->dev != d || s->kind != STEP_KERNEL) continue;
            cg_strbuf_put(b, "    s%d [label=\"%s\\n%s\", fillcolor=\"%s\"];\n", si, s->name, s->op->def->name,
                          colors[d % 6]);
        }
        cg_strbuf_put(b, "  }\n");
    }
    for (int i = 0; i < p->graph->n_inputs; i++)
        cg_strbuf_put(b, "  in%d [label=\"input %s\", shape=ellipse, fillcolor=white];\n", i,
                      p->graph->values[p->graph->inputs[i]].name);
    for (int si = 0; si < in->n_steps; si++) {
        const step *s = &in->steps[si];
        if (s->kind == STEP_COPY) {
            char bytes[32];
            fmt_bytes(bytes, sizeof bytes, (double)s->bytes);
            cg_strbuf_put(b, "  s%d [label=\"copy %s\\n%s -> %s\", shape=cds, fillcolor=\"#ffffb3\"];\n", si, bytes,
                          p->devs[in->slots[s->src].dev].info->name, p->devs[s->dev].info->name);
        }
    }
    /* Edges come from the step that writes each slot, found here rather
     * than from the slot's def_step, which is a liveness bound (0 for
     * every input, whatever step 0 is) and may name a placeholder step
     * that draws nothing: an edge from it made Graphviz invent a node. */
    int32_t *made_by = malloc(sizeof *made_by * ((size_t)in->n_slots + 1));
    if (!made_by) { /* out of memory: the nodes without their edges */
        cg_strbuf_put(b, "}\n");
        return;
    }
    for (int i = 0; i < in->n_slots; i++) made_by[i] = -1;
    for (int si = 0; si < in->n_steps; si++) {
        const step *s = &in->steps[si];
        if (s->kind == STEP_KERNEL)
            for (int k = 0; k < s->n_out; k++) made_by[s->out[k]] = si;
        else if (s->kind == STEP_COPY) made_by[s->dst] = si;
    }
    for (int si = 0; si < in->n_steps; si++) {
        const step *s = &in->steps[si];
        int n_src = s->kind == STEP_KERNEL ? s->n_in : s->kind == STEP_COPY ? 1 : 0;
        for (int k = 0; k < n_src; k++) {
            char from[32];
            if (dot_source(in, made_by, s->kind == STEP_KERNEL ? s->in[k] : s->src, from, sizeof from))
                cg_strbuf_put(b, "  %s -> s%d;\n", from, si);
        }
    }
    for (int k = 0; k < p->graph->n_outputs; k++) {
        char from[32];
        cg_strbuf_put(b, "  out%d [label=\"output %s\", shape=ellipse, fillcolor=white];\n", k, p->graph->out_names[k]);
        if (dot_source(in, made_by, in->out_slot[k], from, sizeof from)) cg_strbuf_put(b, "  %s -> out%d;\n", from, k);
    }
    free(made_by);
    cg_strbuf_put(b, "}\n");
}

cg_status cg_plan_describe(cg_plan *p, const char *bindings, int dot, char **out) {
    if (!p || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_plan_describe: NULL argument");
    *out = NULL;
    int64_t *sym = malloc(sizeof(int64_t) * ((size_t)p->model->n_syms + 1));
    if (!sym) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    cg_status st = parse_bindings(p, bindings, sym);
    if (!st && p->n_var) { /* the variant these sizes choose */
        cg_plan *v = cg_variant_for(p, sym);
        free(sym);
        if (!v) return cg_error(CG_ERR_INVALID_ARGUMENT, "graph '%s' has no variant for these sizes", p->graph->name);
        char *text = NULL, guards[600];
        st = cg_plan_describe(v, bindings, dot, &text);
        cg_graph_guards_text(v->graph, guards, sizeof guards);
        cg_strbuf b = {0};
        if (!st) cg_strbuf_cat(&b, dot ? "// " : "", "variant: when ", guards, "\n", text, (const char *)NULL);
        free(text);
        if (st) return st;
        if (!(*out = cg_strbuf_take(&b))) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        return CG_OK;
    }
    instance *in = st ? NULL : find_instance(p, sym);
    if (!st && !in) {
        st = cg_instance_build(p, sym, NULL, &in);
        if (!st) {
            if (p->n_inst < CG_PLAN_CACHED_INSTANCES) p->inst[p->n_inst++] = in;
            else {
                estimate(p, in);
                cg_strbuf b = {0};
                if (dot) describe_dot(p, in, &b);
                else describe_text(p, in, &b);
                cg_instance_free(p, in);
                free(sym);
                char *text = cg_strbuf_take(&b);
                if (!text) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
                *out = text;
                return CG_OK;
            }
        }
    }
    free(sym);
    if (st) return st;
    estimate(p, in);
    cg_strbuf b = {0};
    if (dot) describe_dot(p, in, &b);
    else describe_text(p, in, &b);
    char *text = cg_strbuf_take(&b);
    if (!text) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    *out = text;
    return CG_OK;
}
