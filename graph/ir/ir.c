/* Construction and destruction of the IR (models, graphs, values, nodes,
 * attributes) and the public builder API on top of it. */
#include "ir.h"
#include "arena.h"
#include "dtype.h"
#include "error.h"
#include "shape.h"
#include "utf8.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUILDER_FILENAME "<builder>"

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */

static cg_status oom(void) { return cg_error(CG_ERR_NO_MEMORY, "out of memory"); }

/* Resizes *p to exactly n elements of `elem` bytes (n >= 1). */
static cg_status resize(void *pp, size_t n, size_t elem) {
    void **p = pp;
    if (n == 0) n = 1;
    if (n > SIZE_MAX / elem) return oom();
    void *q = realloc(*p, n * elem);
    if (!q) return oom();
    *p = q;
    return CG_OK;
}

static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }

int cg_ident_valid(const char *s) {
    if (!s || !is_alpha((unsigned char)s[0])) return 0;
    for (s++; *s; s++) {
        int c = (unsigned char)*s;
        if (!is_alpha(c) && !is_digit(c) && c != '.') return 0;
    }
    return 1;
}

int cg_name_valid(const char *s) {
    if (!s || !*s) return 0;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t l = cg_utf8_seq_len(s + i, n - i);
        if (!l) return 0;
        i += l;
    }
    return 1;
}

/* A name for a message: at most 48 characters, non-printables as '?'. */
static const char *show(char *buf, size_t size, const char *s) {
    size_t i = 0, k = 0;
    if (!s) return "(null)";
    for (; s[i] && k + 4 < size && i < 48; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[k++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (s[i] && k + 4 <= size) {
        memcpy(buf + k, "...", 3);
        k += 3;
    }
    buf[k] = 0;
    return buf;
}

void cg_loc_format(char *buf, size_t size, const cg_model *m, int line, int col) {
    const char *f = m && m->filename ? m->filename : NULL;
    if (!size) return;
    if (f) {
        if (line > 0 && col > 0) snprintf(buf, size, "%s:%d:%d: ", f, line, col);
        else if (line > 0) snprintf(buf, size, "%s:%d: ", f, line);
        else snprintf(buf, size, "%s: ", f);
    } else {
        if (line > 0 && col > 0) snprintf(buf, size, "%d:%d: ", line, col);
        else if (line > 0) snprintf(buf, size, "%d: ", line);
        else buf[0] = 0;
    }
}

void cg_value_type_format(char *buf, size_t size, const cg_model *m, const cg_value *v) {
    if (!size) return;
    if (!v || !v->typed) {
        snprintf(buf, size, "?");
        return;
    }
    cg_shape_format(buf, size, v->dtype, v->ndim, v->dims, m ? (const char *const *)m->syms : NULL, m ? m->n_syms : 0);
}

/* ------------------------------------------------------------------ */
/* Destruction                                                         */

void cg_attr_clear(cg_attr *a) {
    if (!a) return;
    free(a->key);
    free(a->s);
    free(a->ints);
    memset(a, 0, sizeof *a);
}

/* The node itself, its arrays and names are in the graph's arena. */
static void node_free(cg_node *n) {
    if (!n) return;
    if (n->attrs)
        for (int i = 0; i < n->n_attrs; i++) cg_attr_clear(&n->attrs[i]);
    free(n->attrs);
}

static void graph_free(cg_graph *g) {
    if (!g) return;
    free(g->name);
    free(g->guards);
    for (int i = 0; i < g->n_values; i++) free(g->values[i].weight);
    free(g->values);
    free(g->index);
    for (int i = 0; i < g->n_nodes; i++) node_free(g->nodes[i]);
    free(g->nodes);
    free(g->inputs);
    if (g->out_names)
        for (int i = 0; i < g->n_outputs; i++) free(g->out_names[i]);
    free(g->out_names);
    free(g->outputs);
    free(g->out_line);
    free(g->out_col);
    cg_arena_free(&g->arena);
    free(g);
}

void cg_model_free(cg_model *m) {
    if (!m) return;
    for (int i = 0; i < m->n_graphs; i++) graph_free(m->graphs[i]);
    free(m->graphs);
    for (int i = 0; i < m->n_syms; i++) free(m->syms[i]);
    free(m->syms);
    free(m->sym_defs);
    for (int i = 0; i < m->n_value_syms; i++) free(m->value_syms[i].input);
    free(m->value_syms);
    for (int i = 0; i < m->n_refused; i++) free(m->refused[i].why);
    free(m->refused);
    free(m->filename);
    for (int i = 0; i < m->n_comments; i++) free(m->comments[i].text);
    free(m->comments);
    cg_weights_free(m->owned_weights);
    free(m);
}

/* ------------------------------------------------------------------ */
/* Construction                                                        */

cg_status cg_model_new(cg_context *ctx, const char *filename, cg_model **out) {
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_new: out is NULL");
    *out = NULL;
    cg_model *m = calloc(1, sizeof *m);
    if (!m) return oom();
    m->ctx = ctx;
    m->filename = cg_strdup(filename ? filename : BUILDER_FILENAME);
    if (!m->filename) {
        free(m);
        return oom();
    }
    *out = m;
    return CG_OK;
}

int cg_model_find_sym(const cg_model *m, const char *name) {
    for (int i = 0; i < m->n_syms; i++)
        if (strcmp(m->syms[i], name) == 0) return i;
    return -1;
}

int cg_model_sym(cg_model *m, const char *name) {
    if (!m || !name) {
        cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_sym: invalid arguments");
        return -1;
    }
    int have = cg_model_find_sym(m, name);
    if (have >= 0) return have;
    if (m->n_syms >= INT_MAX - 1) {
        oom();
        return -1;
    }
    char *s = cg_strdup(name);
    if (!s) return -1;
    if (resize(&m->syms, (size_t)m->n_syms + 1, sizeof *m->syms)) {
        free(s);
        return -1;
    }
    if (m->sym_defs) { /* derived dims are in use: the new one is free */
        cg_sym_def *d = realloc(m->sym_defs, sizeof *d * ((size_t)m->n_syms + 1));
        if (!d) {
            free(s);
            oom();
            return -1;
        }
        m->sym_defs = d;
        d[m->n_syms] = (cg_sym_def){0, 0, 0};
    }
    m->syms[m->n_syms] = s;
    return m->n_syms++;
}

static cg_graph *find_graph(const cg_model *m, const char *name) {
    for (int i = 0; i < m->n_graphs; i++)
        if (strcmp(m->graphs[i]->name, name) == 0) return m->graphs[i];
    return NULL;
}

cg_status cg_model_new_variant(cg_model *m, const char *name, int n, const cg_guard *guards, int line, int col,
                               cg_graph **out) {
    char where[512];
    if (out) *out = NULL;
    if (!m || !name || n < 0 || (n && !guards))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_new_graph: invalid arguments");
    const cg_graph *old = find_graph(m, name);
    if (old && (!n || !old->n_guards)) {
        const char *why = n || old->n_guards ? " (variants of a graph each need guards: 'graph NAME when ...')" : "";
        cg_loc_format(where, sizeof where, m, line, col);
        if (old->line > 0)
            return cg_error(CG_ERR_VERIFY, "%sgraph '%s' is already defined at %d:%d%s", where, name, old->line,
                            old->col, why);
        return cg_error(CG_ERR_VERIFY, "%sgraph '%s' is already defined%s", where, name, why);
    }
    if (m->n_graphs >= INT_MAX - 1) return oom();
    cg_graph *g = calloc(1, sizeof *g);
    if (!g) return oom();
    g->name = cg_strdup(name);
    g->guards = n ? malloc(sizeof *g->guards * (size_t)n) : NULL;
    if (!g->name || (n && !g->guards) || resize(&m->graphs, (size_t)m->n_graphs + 1, sizeof *m->graphs)) {
        graph_free(g);
        return oom();
    }
    if (n) memcpy(g->guards, guards, sizeof *g->guards * (size_t)n);
    g->n_guards = n;
    g->model = m;
    g->line = line;
    g->col = col;
    m->graphs[m->n_graphs++] = g;
    m->verified = 0;
    if (out) *out = g;
    return CG_OK;
}

void cg_model_drop_last_graph(cg_model *m) {
    if (!m || !m->n_graphs) return;
    graph_free(m->graphs[--m->n_graphs]);
    m->verified = 0;
}

cg_status cg_model_new_graph(cg_model *m, const char *name, int line, int col, cg_graph **out) {
    return cg_model_new_variant(m, name, 0, NULL, line, col, out);
}

/* Makes room for `extra` more values. */
static cg_status reserve_values(cg_graph *g, int extra) {
    if (extra > INT32_MAX - 1 - g->n_values) return oom();
    int need = g->n_values + extra;
    if (need <= g->cap_values) return CG_OK;
    int cap = g->cap_values < 8 ? 8 : g->cap_values;
    while (cap < need) cap = cap > INT32_MAX / 2 ? need : cap * 2;
    if (resize(&g->values, (size_t)cap, sizeof *g->values)) return CG_ERR_NO_MEMORY;
    g->cap_values = cap;
    return CG_OK;
}

static cg_status reserve_nodes(cg_graph *g) {
    if (g->n_nodes >= INT32_MAX - 1) return oom();
    if (g->n_nodes < g->cap_nodes) return CG_OK;
    int cap = g->cap_nodes < 8 ? 8 : (g->cap_nodes > INT32_MAX / 2 ? INT32_MAX - 1 : g->cap_nodes * 2);
    if (resize(&g->nodes, (size_t)cap, sizeof *g->nodes)) return CG_ERR_NO_MEMORY;
    g->cap_nodes = cap;
    return CG_OK;
}

static cg_status redefined(const cg_graph *g, const char *name, int32_t old, int line, int col) {
    char where[512];
    const cg_value *v = &g->values[old];
    cg_loc_format(where, sizeof where, g->model, line, col);
    if (v->line > 0)
        return cg_error(CG_ERR_VERIFY, "%svalue '%s' is already defined at %d:%d", where, name, v->line, v->col);
    return cg_error(CG_ERR_VERIFY, "%svalue '%s' is already defined", where, name);
}

cg_status cg_graph_new_value(cg_graph *g, const char *name, cg_value_kind kind, int line, int col, int32_t *out) {
    if (out) *out = -1;
    if (!g || !name) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_graph_new_value: invalid arguments");
    int32_t old = cg_graph_find_value(g, name);
    if (old >= 0) return redefined(g, name, old, line, col);
    if (reserve_values(g, 1) || cg_graph_index_reserve(g, 1)) return CG_ERR_NO_MEMORY;
    char *s = cg_arena_strdup(&g->arena, name);
    if (!s) return oom();
    cg_value *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = s;
    v->kind = kind;
    v->producer = -1;
    v->producer_out = -1;
    v->line = line;
    v->col = col;
    if (out) *out = g->n_values;
    cg_graph_index_add(g, g->n_values++);
    if (g->model) g->model->verified = 0;
    return CG_OK;
}

static cg_status new_typed(cg_graph *g, const char *name, cg_value_kind kind, const char *weight, cg_dtype dtype,
                           int ndim, const int64_t *dims, int line, int col, int32_t *out) {
    if (out) *out = -1;
    if (!g || !name || ndim < 0 || ndim > CG_MAX_DIMS || (ndim && !dims) || !cg_dtype_valid((int)dtype) ||
        (kind == CG_VAL_PARAM && !weight))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_graph_new_%s: invalid arguments",
                        kind == CG_VAL_PARAM ? "param" : "input");
    for (int i = 0; i < ndim; i++) {
        int64_t d = dims[i];
        if (d < 0 && !(d <= CG_DIM_SYM(0) && -2 - d < g->model->n_syms))
            return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_graph_new_%s: invalid dimension %lld",
                            kind == CG_VAL_PARAM ? "param" : "input", (long long)d);
    }
    char *w = NULL;
    if (weight && !(w = cg_strdup(weight))) return CG_ERR_NO_MEMORY;
    if (kind == CG_VAL_INPUT && resize(&g->inputs, (size_t)g->n_inputs + 1, sizeof *g->inputs)) {
        free(w);
        return CG_ERR_NO_MEMORY;
    }
    int32_t idx;
    cg_status st = cg_graph_new_value(g, name, kind, line, col, &idx);
    if (st) {
        free(w);
        return st;
    }
    cg_value *v = &g->values[idx];
    v->typed = 1;
    v->dtype = dtype;
    v->ndim = ndim;
    for (int i = 0; i < ndim; i++) v->dims[i] = dims[i];
    v->weight = w;
    if (kind == CG_VAL_INPUT) g->inputs[g->n_inputs++] = idx;
    if (out) *out = idx;
    return CG_OK;
}

cg_status cg_graph_new_input(cg_graph *g, const char *name, cg_dtype dtype, int ndim, const int64_t *dims, int line,
                             int col, int32_t *out) {
    return new_typed(g, name, CG_VAL_INPUT, NULL, dtype, ndim, dims, line, col, out);
}

cg_status cg_graph_new_param(cg_graph *g, const char *name, const char *weight, cg_dtype dtype, int ndim,
                             const int64_t *dims, int line, int col, int32_t *out) {
    return new_typed(g, name, CG_VAL_PARAM, weight, dtype, ndim, dims, line, col, out);
}

cg_status cg_graph_new_node(cg_graph *g, const char *op, const char *name, int n_inputs, const char *const *inputs,
                            int n_outputs, const char *const *outputs, int line, int col, cg_node **out) {
    if (out) *out = NULL;
    if (!g || !op || n_inputs < 0 || n_outputs < 1 || (n_inputs && !inputs) || !outputs)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_graph_new_node: invalid arguments");
    for (int i = 0; i < n_inputs; i++)
        if (!inputs[i]) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_graph_new_node: NULL input name");
    for (int i = 0; i < n_outputs; i++) {
        if (!outputs[i]) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_graph_new_node: NULL output name");
        int32_t old = cg_graph_find_value(g, outputs[i]);
        if (old >= 0) return redefined(g, outputs[i], old, line, col);
        for (int j = 0; j < i; j++)
            if (strcmp(outputs[i], outputs[j]) == 0) {
                char where[512];
                cg_loc_format(where, sizeof where, g->model, line, col);
                return cg_error(CG_ERR_VERIFY, "%svalue '%s' is already defined", where, outputs[i]);
            }
    }
    /* Reserve first so that the commit below cannot fail. */
    if (reserve_values(g, n_outputs) || reserve_nodes(g) || cg_graph_index_reserve(g, n_outputs))
        return CG_ERR_NO_MEMORY;

    /* The node, its arrays and its names live in the graph's arena (one
     * malloc per 64 KiB instead of nine per node); a failure part way only
     * leaves unused bytes there. */
    size_t bytes = sizeof(cg_node) + ((size_t)n_inputs + 1) * (sizeof(char *) + sizeof(int32_t)) +
                   (size_t)n_outputs * sizeof(int32_t);
    cg_node *n = cg_arena_alloc(&g->arena, bytes);
    char *few[8];
    char **onames = n_outputs <= 8 ? few : calloc((size_t)n_outputs, sizeof *onames);
    if (!n || !onames) {
        if (onames != few) free(onames);
        return oom();
    }
    memset(n, 0, sizeof *n);
    n->in_names = (char **)(n + 1);
    n->inputs = (int32_t *)(n->in_names + n_inputs + 1);
    n->outputs = n->inputs + n_inputs + 1;
    n->in_names[n_inputs] = NULL;
    int ok =
        (n->name = cg_arena_strdup(&g->arena, name ? name : outputs[0])) && (n->op = cg_arena_strdup(&g->arena, op));
    for (int i = 0; ok && i < n_inputs; i++) {
        ok = (n->in_names[i] = cg_arena_strdup(&g->arena, inputs[i])) != NULL;
        n->inputs[i] = -1;
    }
    for (int i = 0; ok && i < n_outputs; i++) ok = (onames[i] = cg_arena_strdup(&g->arena, outputs[i])) != NULL;
    if (!ok) {
        if (onames != few) free(onames);
        return oom();
    }
    n->n_inputs = n_inputs;
    n->n_outputs = n_outputs;
    n->line = line;
    n->col = col;
    n->op_line = line;
    n->op_col = col;
    n->graph = g;
    int32_t ni = g->n_nodes;
    for (int i = 0; i < n_outputs; i++) {
        cg_value *v = &g->values[g->n_values];
        memset(v, 0, sizeof *v);
        v->name = onames[i];
        v->kind = CG_VAL_NODE;
        v->producer = ni;
        v->producer_out = i;
        v->line = line;
        v->col = col;
        n->outputs[i] = g->n_values;
        cg_graph_index_add(g, g->n_values++);
    }
    if (onames != few) free(onames);
    g->nodes[g->n_nodes++] = n;
    if (g->model) g->model->verified = 0;
    if (out) *out = n;
    return CG_OK;
}

cg_status cg_graph_add_output_names(cg_graph *g, int n, const char *const *names, const int *lines, const int *cols) {
    if (!g || n < 0 || (n && !names))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_graph_add_output_names: invalid arguments");
    if (n == 0) return CG_OK;
    if (n > INT32_MAX - 1 - g->n_outputs) return oom();
    char **copy = calloc((size_t)n, sizeof *copy);
    if (!copy) return oom();
    for (int i = 0; i < n; i++)
        if (!names[i] || !(copy[i] = cg_strdup(names[i]))) {
            for (int j = 0; j < i; j++) free(copy[j]);
            free(copy);
            return names[i] ? CG_ERR_NO_MEMORY
                            : cg_error(CG_ERR_INVALID_ARGUMENT, "cg_graph_add_output_names: NULL name");
        }
    size_t total = (size_t)g->n_outputs + (size_t)n;
    if (resize(&g->out_names, total, sizeof *g->out_names) || resize(&g->outputs, total, sizeof *g->outputs) ||
        resize(&g->out_line, total, sizeof *g->out_line) || resize(&g->out_col, total, sizeof *g->out_col)) {
        for (int i = 0; i < n; i++) free(copy[i]);
        free(copy);
        return CG_ERR_NO_MEMORY;
    }
    for (int i = 0; i < n; i++) {
        int k = g->n_outputs + i;
        g->out_names[k] = copy[i];
        g->outputs[k] = -1;
        g->out_line[k] = lines ? lines[i] : 0;
        g->out_col[k] = cols ? cols[i] : 0;
    }
    g->n_outputs += n;
    free(copy);
    if (g->model) g->model->verified = 0;
    return CG_OK;
}

cg_status cg_node_set_input_name(cg_node *n, int i, const char *name) {
    if (!n || i < 0 || i >= n->n_inputs || !name)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_node_set_input_name: invalid arguments");
    char *s = cg_arena_strdup(&n->graph->arena, name);
    if (!s) return oom();
    n->in_names[i] = s;
    n->inputs[i] = -1;
    if (n->graph->model) n->graph->model->verified = 0;
    return CG_OK;
}

/* The arrays live in the graph's arena with the node: new ones are made
 * there and the old ones stay until the graph goes. */
cg_status cg_node_append_input(cg_node *n, const char *name) {
    if (!n || !name || n->n_inputs >= INT32_MAX - 2)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_node_append_input: invalid arguments");
    const size_t k = (size_t)n->n_inputs;
    char **names = cg_arena_alloc(&n->graph->arena, (k + 2) * sizeof *names);
    int32_t *ins = cg_arena_alloc(&n->graph->arena, (k + 2) * sizeof *ins);
    char *s = cg_arena_strdup(&n->graph->arena, name);
    if (!names || !ins || !s) return oom();
    memcpy(names, n->in_names, k * sizeof *names);
    memcpy(ins, n->inputs, k * sizeof *ins);
    names[k] = s;
    names[k + 1] = NULL;
    ins[k] = ins[k + 1] = -1;
    n->in_names = names;
    n->inputs = ins;
    n->n_inputs++;
    if (n->graph->model) n->graph->model->verified = 0;
    return CG_OK;
}

cg_status cg_graph_set_output_name(cg_graph *g, int i, const char *name) {
    if (!g || i < 0 || i >= g->n_outputs || !name)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_graph_set_output_name: invalid arguments");
    char *s = cg_strdup(name);
    if (!s) return oom();
    free(g->out_names[i]);
    g->out_names[i] = s;
    g->outputs[i] = -1;
    if (g->model) g->model->verified = 0;
    return CG_OK;
}

cg_status cg_node_add_attr(cg_node *n, const cg_attr *a) {
    if (!n || !a || !a->key || (a->type == CG_ATTR_STRING && !a->s) ||
        (a->type == CG_ATTR_INTS && (a->n_ints < 0 || (a->n_ints && !a->ints))) ||
        (a->type != CG_ATTR_INT && a->type != CG_ATTR_FLOAT && a->type != CG_ATTR_STRING && a->type != CG_ATTR_INTS))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_node_add_attr: invalid arguments");
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].key, a->key) == 0) {
            char where[512];
            const cg_attr *old = &n->attrs[i];
            cg_loc_format(where, sizeof where, n->graph ? n->graph->model : NULL, a->line, a->col);
            if (old->line > 0)
                return cg_error(CG_ERR_VERIFY, "%snode '%s': attribute '%s' is already set at %d:%d", where,
                                n->name ? n->name : "?", a->key, old->line, old->col);
            return cg_error(CG_ERR_VERIFY, "%snode '%s': attribute '%s' is already set", where, n->name ? n->name : "?",
                            a->key);
        }
    if (n->n_attrs >= INT_MAX - 1) return oom();
    cg_attr c;
    memset(&c, 0, sizeof c);
    c.type = a->type;
    c.syms = a->syms;
    c.line = a->line;
    c.col = a->col;
    c.key = cg_strdup(a->key);
    int ok = c.key != NULL;
    switch (a->type) {
    case CG_ATTR_INT: c.i = a->i; break;
    case CG_ATTR_FLOAT: c.f = a->f; break;
    case CG_ATTR_STRING: ok = ok && (c.s = cg_strdup(a->s)) != NULL; break;
    case CG_ATTR_INTS:
    case CG_ATTR_DIMS: /* never in the IR: a list with names is INTS with syms */
        /* Never NULL, even for an empty list. */
        c.ints = malloc(((size_t)a->n_ints + 1) * sizeof *c.ints);
        ok = ok && c.ints;
        if (ok) {
            if (a->n_ints) memcpy(c.ints, a->ints, (size_t)a->n_ints * sizeof *c.ints);
            c.n_ints = a->n_ints;
        }
        break;
    }
    if (!ok || resize(&n->attrs, (size_t)n->n_attrs + 1, sizeof *n->attrs)) {
        cg_attr_clear(&c);
        return oom();
    }
    n->attrs[n->n_attrs++] = c;
    if (n->graph && n->graph->model) n->graph->model->verified = 0;
    return CG_OK;
}

/* ------------------------------------------------------------------ */
/* Public builder API                                                  */

cg_status cg_model_create(cg_context *ctx, cg_model **out) {
    if (out) *out = NULL;
    if (!ctx) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_create: ctx is NULL");
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_create: out is NULL");
    return cg_model_new(ctx, BUILDER_FILENAME, out);
}

int cg_model_graph_count(const cg_model *m) { return m ? m->n_graphs : 0; }

cg_graph *cg_model_graph_at(const cg_model *m, int i) { return m && i >= 0 && i < m->n_graphs ? m->graphs[i] : NULL; }

cg_graph *cg_model_graph(const cg_model *m, const char *name) { return m && name ? find_graph(m, name) : NULL; }

cg_status cg_model_add_graph(cg_model *m, const char *name, cg_graph **out) {
    char b[64];
    if (out) *out = NULL;
    if (!m) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_add_graph: model is NULL");
    if (!cg_name_valid(name))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_add_graph: invalid graph name '%s'",
                        show(b, sizeof b, name));
    return cg_model_new_graph(m, name, 0, 0, out);
}

const char *cg_graph_name(const cg_graph *g) { return g ? g->name : NULL; }

/* Converts builder dims to IR dims (symbols registered in the model). */
static cg_status builder_dims(const char *fn, cg_graph *g, const char *name, int ndim, const cg_dim *dims,
                              int64_t *out) {
    char b[64];
    if (ndim < 0 || ndim > CG_MAX_DIMS)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: '%s' has %d dimensions (0 to %d allowed)", fn, name, ndim,
                        CG_MAX_DIMS);
    if (ndim && !dims) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: dims is NULL", fn);
    for (int i = 0; i < ndim; i++) {
        if (dims[i].sym) {
            if (!cg_name_valid(dims[i].sym))
                return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: invalid symbol name '%s' in dimension %d of '%s'", fn,
                                show(b, sizeof b, dims[i].sym), i, name);
            int k = cg_model_sym(g->model, dims[i].sym);
            if (k < 0) return CG_ERR_NO_MEMORY;
            out[i] = CG_DIM_SYM(k);
        } else {
            if (dims[i].size < 0)
                return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: dimension %d of '%s' is negative (%lld)", fn, i, name,
                                (long long)dims[i].size);
            out[i] = dims[i].size;
        }
    }
    return CG_OK;
}

static cg_status builder_decl(const char *fn, cg_graph *g, const char *name, int is_param, const char *weight,
                              cg_dtype dtype, int ndim, const cg_dim *dims) {
    char b[64];
    int64_t d[CG_MAX_DIMS];
    if (!g) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: graph is NULL", fn);
    if (!cg_name_valid(name))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: invalid value name '%s'", fn, show(b, sizeof b, name));
    if (!cg_dtype_valid((int)dtype))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: invalid dtype %d for '%s'", fn, (int)dtype, name);
    if (is_param) {
        if (!weight || !*weight) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: empty weight name for '%s'", fn, name);
        if (!cg_utf8_valid(weight))
            return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: weight name of '%s' is not valid UTF-8", fn, name);
    }
    cg_status st = builder_dims(fn, g, name, ndim, dims, d);
    if (st) return st;
    if (is_param) return cg_graph_new_param(g, name, weight, dtype, ndim, d, 0, 0, NULL);
    return cg_graph_new_input(g, name, dtype, ndim, d, 0, 0, NULL);
}

cg_status cg_graph_add_input(cg_graph *g, const char *name, cg_dtype dtype, int ndim, const cg_dim *dims) {
    return builder_decl("cg_graph_add_input", g, name, 0, NULL, dtype, ndim, dims);
}

cg_status cg_graph_add_param(cg_graph *g, const char *name, const char *weight_name, cg_dtype dtype, int ndim,
                             const cg_dim *dims) {
    return builder_decl("cg_graph_add_param", g, name, 1, weight_name, dtype, ndim, dims);
}

cg_status cg_graph_add_node(cg_graph *g, const char *op, const char *name, int n_inputs, const char *const *inputs,
                            int n_outputs, const char *const *outputs, cg_node **out) {
    static const char fn[] = "cg_graph_add_node";
    char b[64];
    if (out) *out = NULL;
    if (!g) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: graph is NULL", fn);
    if (!cg_ident_valid(op))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: invalid operator name '%s'", fn, show(b, sizeof b, op));
    if (name && !cg_name_valid(name))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: invalid node name '%s'", fn, show(b, sizeof b, name));
    if (n_inputs < 0 || (n_inputs && !inputs)) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: invalid input list", fn);
    if (n_outputs < 1 || !outputs) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: a node needs at least one output", fn);
    for (int i = 0; i < n_inputs; i++)
        if (!cg_name_valid(inputs[i]))
            return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: invalid input name '%s'", fn, show(b, sizeof b, inputs[i]));
    for (int i = 0; i < n_outputs; i++)
        if (!cg_name_valid(outputs[i]))
            return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: invalid output name '%s'", fn, show(b, sizeof b, outputs[i]));
    return cg_graph_new_node(g, op, name, n_inputs, inputs, n_outputs, outputs, 0, 0, out);
}

static cg_status set_attr(const char *fn, cg_node *n, const char *key, cg_attr *a) {
    char b[64];
    if (!n) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: node is NULL", fn);
    if (!cg_ident_valid(key))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: invalid attribute name '%s'", fn, show(b, sizeof b, key));
    a->key = (char *)key;
    return cg_node_add_attr(n, a);
}

cg_status cg_node_set_int(cg_node *n, const char *key, int64_t v) {
    cg_attr a;
    memset(&a, 0, sizeof a);
    a.type = CG_ATTR_INT;
    a.i = v;
    return set_attr("cg_node_set_int", n, key, &a);
}

cg_status cg_node_set_float(cg_node *n, const char *key, double v) {
    cg_attr a;
    memset(&a, 0, sizeof a);
    a.type = CG_ATTR_FLOAT;
    a.f = v;
    return set_attr("cg_node_set_float", n, key, &a);
}

cg_status cg_node_set_string(cg_node *n, const char *key, const char *v) {
    cg_attr a;
    memset(&a, 0, sizeof a);
    if (!v) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_node_set_string: value is NULL");
    if (!cg_utf8_valid(v)) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_node_set_string: value is not valid UTF-8");
    a.type = CG_ATTR_STRING;
    a.s = (char *)v;
    return set_attr("cg_node_set_string", n, key, &a);
}

cg_status cg_node_set_ints(cg_node *n, const char *key, int count, const int64_t *v) {
    cg_attr a;
    memset(&a, 0, sizeof a);
    if (count < 0 || (count && !v)) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_node_set_ints: invalid list");
    a.type = CG_ATTR_INTS;
    a.ints = (int64_t *)v;
    a.n_ints = count;
    return set_attr("cg_node_set_ints", n, key, &a);
}

cg_status cg_graph_set_outputs(cg_graph *g, int n, const char *const *names) {
    static const char fn[] = "cg_graph_set_outputs";
    char b[64];
    if (!g) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: graph is NULL", fn);
    if (n < 0 || (n && !names)) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: invalid list", fn);
    for (int i = 0; i < n; i++) {
        if (!cg_name_valid(names[i]))
            return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: invalid value name '%s'", fn, show(b, sizeof b, names[i]));
        if (cg_graph_find_value(g, names[i]) < 0)
            return cg_error(CG_ERR_NOT_FOUND, "%s: graph '%s' has no value named '%s'", fn, g->name, names[i]);
    }
    /* Replace the previous list. */
    int old = g->n_outputs;
    char **old_names = g->out_names;
    int32_t *old_out = g->outputs;
    int *old_line = g->out_line, *old_col = g->out_col;
    g->n_outputs = 0;
    g->out_names = NULL;
    g->outputs = NULL;
    g->out_line = g->out_col = NULL;
    cg_status st = cg_graph_add_output_names(g, n, names, NULL, NULL);
    if (st) {
        /* Nothing was added, but the arrays may have been allocated. */
        free(g->out_names);
        free(g->outputs);
        free(g->out_line);
        free(g->out_col);
        g->n_outputs = old;
        g->out_names = old_names;
        g->outputs = old_out;
        g->out_line = old_line;
        g->out_col = old_col;
        return st;
    }
    g->model->verified = 0;
    for (int i = 0; i < old; i++) free(old_names[i]);
    free(old_names);
    free(old_out);
    free(old_line);
    free(old_col);
    return CG_OK;
}

int cg_graph_input_count(const cg_graph *g) { return g ? g->n_inputs : 0; }

const char *cg_graph_input_name(const cg_graph *g, int i) {
    if (!g || i < 0 || i >= g->n_inputs) return NULL;
    return g->values[g->inputs[i]].name;
}

cg_dtype cg_graph_input_dtype(const cg_graph *g, int i) {
    if (!g || i < 0 || i >= g->n_inputs) return (cg_dtype)0;
    return g->values[g->inputs[i]].dtype;
}

cg_status cg_graph_input_convert(const cg_graph *g, const char *name, const cg_tensor *t, int strict, cg_tensor **out) {
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_graph_input_convert: NULL argument");
    *out = NULL;
    if (!g || !name || !t) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_graph_input_convert: NULL argument");
    cg_dtype want = (cg_dtype)0, have = cg_tensor_dtype(t);
    for (int k = 0; k < g->n_inputs && !want; k++)
        if (!strcmp(g->values[g->inputs[k]].name, name)) want = g->values[g->inputs[k]].dtype;
    if (!want || want == have) return CG_OK;
    if (!cg_dtype_convert_exact(have, want))
        return strict ? cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' of graph '%s' is %s, got an array of %s", name,
                                 g->name, cg_dtype_name(want), cg_dtype_name(have))
                      : CG_OK;
    cg_status st = cg_tensor_convert(t, want, out);
    if (!st || st == CG_ERR_NO_MEMORY) return st;
    /* a value the input's dtype cannot hold: the caller's to fix */
    char why[512];
    snprintf(why, sizeof why, "%s", cg_last_error());
    return cg_error(CG_ERR_INVALID_ARGUMENT, "input '%s' of graph '%s' is %s: %s", name, g->name, cg_dtype_name(want),
                    why);
}

int cg_graph_output_count(const cg_graph *g) { return g ? g->n_outputs : 0; }

const char *cg_graph_output_name(const cg_graph *g, int i) {
    if (!g || i < 0 || i >= g->n_outputs) return NULL;
    return g->out_names[i];
}

cg_status cg_graph_io_shape(const cg_graph *g, int output, int i, cg_dtype *dtype, int *ndim, int64_t *dims,
                            const char **syms) {
    if (!g || !dtype || !ndim || !dims || !syms || i < 0 || i >= (output ? g->n_outputs : g->n_inputs))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_graph_io_shape: bad argument");
    int32_t id = output ? cg_graph_find_value(g, g->out_names[i]) : g->inputs[i];
    const cg_value *v = id >= 0 ? &g->values[id] : NULL;
    if (!v || !v->typed)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "graph '%s': %s '%s' has no type yet (verify the model first)",
                        g->name, output ? "output" : "input", output ? g->out_names[i] : g->values[g->inputs[i]].name);
    *dtype = v->dtype;
    *ndim = v->ndim;
    for (int d = 0; d < v->ndim; d++) {
        dims[d] = v->dims[d] >= 0 ? v->dims[d] : -1;
        syms[d] = v->dims[d] <= -2 ? g->model->syms[-2 - v->dims[d]] : NULL;
    }
    return CG_OK;
}
