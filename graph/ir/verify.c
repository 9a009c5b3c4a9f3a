/* The verifier: everything that can be wrong with a graph is found here, at
 * load time, with the file position and node name in the message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "dtype.h"
#include "error.h"
#include "shape.h"
#include "strbuf.h"
#include "weights.h"

static void loc(char *buf, size_t n, const cg_model *m, int line, int col) { cg_loc_format(buf, n, m, line, col); }

/* Where a node's op is named (else the node itself), for a message. */
static void op_loc(char *buf, size_t n, const cg_model *m, const cg_node *nd) {
    loc(buf, n, m, nd->op_line ? nd->op_line : nd->line, nd->op_line ? nd->op_col : nd->col);
}

void cg_desc_from_value(const cg_value *v, cg_tensor_desc *d) {
    memset(d, 0, sizeof *d);
    d->dtype = (cg_op_dtype)v->dtype;
    d->ndim = v->ndim;
    memcpy(d->dims, v->dims, sizeof(int64_t) * (size_t)v->ndim);
}

void cg_desc_format(char *buf, size_t size, const cg_model *m, const cg_tensor_desc *d) {
    cg_shape_format(buf, size, d->dtype, d->ndim, d->dims, m ? (const char *const *)m->syms : NULL, m ? m->n_syms : 0);
}

static void attr_names(char *buf, size_t size, const cg_op_def *def) {
    size_t u = 0;
    buf[0] = 0;
    for (int i = 0; i < def->n_attrs; i++)
        u += (size_t)snprintf(buf + u, size > u ? size - u : 0, "%s%s", i ? ", " : "", def->attrs[i].name);
    if (def->n_attrs == 0) snprintf(buf, size, "none");
}

static const char *attr_type_name(cg_attr_type t) {
    switch (t) {
    case CG_ATTR_INT: return "int";
    case CG_ATTR_FLOAT: return "float";
    case CG_ATTR_STRING: return "string";
    case CG_ATTR_INTS: return "int list";
    case CG_ATTR_DIMS: return "dim list";
    }
    return "?";
}

cg_status cg_node_resolve_attrs(const cg_model *m, const cg_node *n, const cg_op_def *def, cg_attr_value *out) {
    char where[512];
    for (int i = 0; i < def->n_attrs; i++) {
        const cg_attr_def *d = &def->attrs[i];
        memset(&out[i], 0, sizeof out[i]);
        out[i].type = d->type;
        out[i].i = d->default_int;
        out[i].f = d->default_float;
        out[i].s = d->default_string ? d->default_string : "";
    }
    for (int a = 0; a < n->n_attrs; a++) {
        const cg_attr *at = &n->attrs[a];
        int k = -1;
        for (int i = 0; i < def->n_attrs; i++)
            if (strcmp(def->attrs[i].name, at->key) == 0) k = i;
        loc(where, sizeof where, m, at->line ? at->line : n->line, at->line ? at->col : n->col);
        if (k < 0) {
            char known[512];
            attr_names(known, sizeof known, def);
            return cg_error(CG_ERR_VERIFY, "%s%s '%s': unknown attribute '%s' (known: %s)", where, def->name, n->name,
                            at->key, known);
        }
        cg_attr_value *v = &out[k];
        cg_attr_type want = def->attrs[k].type;
        v->present = 1;
        if (at->syms && want != CG_ATTR_DIMS)
            return cg_error(CG_ERR_VERIFY, "%s%s '%s': attribute '%s' is an %s: it takes no dim names", where,
                            def->name, n->name, at->key, attr_type_name(want));
        if (want == CG_ATTR_DIMS && at->type == CG_ATTR_INTS)
            for (int i = 0; i < at->n_ints; i++)
                if (at->ints[i] < -1 && !at->syms)
                    return cg_error(CG_ERR_VERIFY,
                                    "%s%s '%s': attribute '%s' has dim %lld (sizes are >= 0, or -1, "
                                    "or dim names)",
                                    where, def->name, n->name, at->key, (long long)at->ints[i]);
        if (want == at->type || (want == CG_ATTR_DIMS && at->type == CG_ATTR_INTS)) {
            v->i = at->i;
            v->f = at->type == CG_ATTR_INT ? (double)at->i : at->f;
            if (at->type == CG_ATTR_STRING) v->s = at->s;
            v->ints = at->ints;
            v->n_ints = at->n_ints;
        } else if (want == CG_ATTR_FLOAT && at->type == CG_ATTR_INT) {
            v->f = (double)at->i; /* an integer literal is a fine float */
        } else {
            return cg_error(CG_ERR_VERIFY, "%s%s '%s': attribute '%s' must be %s, got %s", where, def->name, n->name,
                            at->key, attr_type_name(want), attr_type_name(at->type));
        }
    }
    for (int i = 0; i < def->n_attrs; i++)
        if (def->attrs[i].required && !out[i].present) {
            loc(where, sizeof where, m, n->line, n->col);
            return cg_error(CG_ERR_VERIFY, "%s%s '%s': missing required attribute '%s' (%s)", where, def->name, n->name,
                            def->attrs[i].name, attr_type_name(def->attrs[i].type));
        }
    return CG_OK;
}

void cg_analysis_free(cg_analysis *a) {
    if (!a) return;
    if (a->attrs)
        for (int i = 0; i < a->n_nodes; i++) free(a->attrs[i]);
    free(a->attrs);
    free(a->ops);
    free(a->order);
    memset(a, 0, sizeof *a);
}

/* Depth-first topological sort; reports the first cycle with its path. */
static cg_status topo_sort(cg_graph *g, cg_analysis *an) {
    const cg_model *m = g->model;
    int n = g->n_nodes;
    char *state = calloc((size_t)n + 1, 1); /* 0 new, 1 on stack, 2 done */
    int32_t *stack = malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *edge = malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!state || !stack || !edge) {
        free(state), free(stack), free(edge);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    int count = 0;
    cg_status st = CG_OK;
    for (int root = 0; root < n && !st; root++) {
        if (state[root]) continue;
        int sp = 0;
        stack[sp] = root;
        edge[sp] = 0;
        state[root] = 1;
        while (sp >= 0 && !st) {
            cg_node *nd = g->nodes[stack[sp]];
            if (edge[sp] < nd->n_inputs) {
                int32_t v = nd->inputs[edge[sp]++];
                int32_t p = g->values[v].producer;
                if (p < 0 || state[p] == 2) continue;
                if (state[p] == 1) {
                    char where[512], path[1024];
                    size_t u = 0;
                    int from = 0;
                    while (stack[from] != p) from++;
                    for (int i = from; i <= sp; i++)
                        u += (size_t)snprintf(path + u, sizeof path > u ? sizeof path - u : 0, "'%s' -> ",
                                              g->nodes[stack[i]]->name);
                    snprintf(path + u, sizeof path > u ? sizeof path - u : 0, "'%s'", g->nodes[p]->name);
                    loc(where, sizeof where, m, g->nodes[p]->line, g->nodes[p]->col);
                    st = cg_error(CG_ERR_VERIFY, "%sgraph '%s' has a cycle: %s", where, g->name, path);
                    break;
                }
                state[p] = 1;
                sp++;
                stack[sp] = p;
                edge[sp] = 0;
            } else {
                state[stack[sp]] = 2;
                an->order[count++] = stack[sp];
                sp--;
            }
        }
    }
    free(state), free(stack), free(edge);
    return st;
}

static cg_status analyze_graph(cg_graph *g, cg_analysis *an) {
    const cg_model *m = g->model;
    char where[512];
    memset(an, 0, sizeof *an);
    an->n_nodes = g->n_nodes;
    size_t n = (size_t)g->n_nodes + 1;
    an->order = calloc(n, sizeof *an->order);
    an->ops = calloc(n, sizeof *an->ops);
    an->attrs = calloc(n, sizeof *an->attrs);
    if (!an->order || !an->ops || !an->attrs) {
        cg_analysis_free(an);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    cg_status st = CG_OK;
    /* Locations are formatted only for a message (a million-node graph
     * spent a third of its verification formatting them). Consecutive nodes
     * mostly share an op, so the last lookup is tried first. */
    const cg_op_entry *last = NULL;
    for (int i = 0; i < g->n_nodes && !st; i++) {
        cg_node *nd = g->nodes[i];
        const cg_op_entry *op = last && !strcmp(last->def->name, nd->op) ? last : cg_registry_find(m->ctx, nd->op);
        last = op;
        if (!op) {
            op_loc(where, sizeof where, m, nd);
            st = cg_error(CG_ERR_VERIFY, "%sunknown op '%s' in node '%s'", where, nd->op, nd->name);
            break;
        }
        an->ops[i] = op;
        const cg_op_def *def = op->def;
        if (nd->n_inputs < def->min_inputs || (def->max_inputs >= 0 && nd->n_inputs > def->max_inputs)) {
            char want[64];
            if (def->max_inputs < 0) snprintf(want, sizeof want, "at least %d", def->min_inputs);
            else if (def->max_inputs == def->min_inputs) snprintf(want, sizeof want, "%d", def->min_inputs);
            else snprintf(want, sizeof want, "%d to %d", def->min_inputs, def->max_inputs);
            op_loc(where, sizeof where, m, nd);
            st = cg_error(CG_ERR_VERIFY, "%s%s '%s': takes %s inputs, got %d", where, def->name, nd->name, want,
                          nd->n_inputs);
            break;
        }
        if (nd->n_outputs < def->min_outputs || nd->n_outputs > def->max_outputs) {
            char want[64];
            if (def->max_outputs == def->min_outputs) snprintf(want, sizeof want, "%d", def->min_outputs);
            else snprintf(want, sizeof want, "%d to %d", def->min_outputs, def->max_outputs);
            op_loc(where, sizeof where, m, nd);
            st = cg_error(CG_ERR_VERIFY, "%s%s '%s': defines %s outputs, got %d", where, def->name, nd->name, want,
                          nd->n_outputs);
            break;
        }
        for (int k = 0; k < nd->n_inputs; k++) {
            int32_t v = cg_graph_find_value(g, nd->in_names[k]);
            if (v < 0) {
                loc(where, sizeof where, m, nd->line, nd->col);
                st = cg_error(CG_ERR_VERIFY, "%s%s '%s': input '%s' is not defined in graph '%s'", where, def->name,
                              nd->name, nd->in_names[k], g->name);
                break;
            }
            /* Written only when it changes: plans of a verified model
             * made from several threads then only read the graph. */
            if (nd->inputs[k] != v) nd->inputs[k] = v;
        }
        if (st) break;
        an->attrs[i] = calloc((size_t)def->n_attrs + 1, sizeof(cg_attr_value));
        if (!an->attrs[i]) st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
        else st = cg_node_resolve_attrs(m, nd, def, an->attrs[i]);
    }
    for (int k = 0; !st && k < g->n_outputs; k++) {
        int32_t v = cg_graph_find_value(g, g->out_names[k]);
        if (v < 0) {
            loc(where, sizeof where, m, g->out_line ? g->out_line[k] : g->line, g->out_col ? g->out_col[k] : g->col);
            st = cg_error(CG_ERR_VERIFY, "%soutput '%s' is not defined in graph '%s'", where, g->out_names[k], g->name);
        }
        if (g->outputs[k] != v) g->outputs[k] = v;
    }
    if (!st && g->n_outputs == 0) {
        loc(where, sizeof where, m, g->line, g->col);
        st = cg_error(CG_ERR_VERIFY, "%sgraph '%s' has no outputs", where, g->name);
    }
    if (!st) st = topo_sort(g, an);
    if (st) cg_analysis_free(an);
    return st;
}

cg_status cg_graph_analyze(cg_graph *g, cg_analysis *an) {
    memset(an, 0, sizeof *an);
    return analyze_graph(g, an);
}

cg_status cg_call_infer(const cg_model *m, const char *node_name, int line, int col, const cg_op_entry *op,
                        const cg_attr_value *attrs, int n_in, const cg_tensor_desc *in, int n_out, cg_tensor_desc *out,
                        int concrete) {
    char err[1024] = "", where[512];
    /* A plugin knows the element types of its ABI only (up to bool before
     * 1.5, up to u64 before 1.6): a tensor of a later one could index its
     * own tables past their end, so it is refused here, before the plugin
     * sees it. */
    const int known = !op->plugin                 ? CG_DTYPE_LAST
                      : op->plugin->abi_minor < 5 ? CG_BOOL
                      : op->plugin->abi_minor < 6 ? CG_U64
                                                  : CG_DTYPE_LAST;
    for (int k = 0; k < n_in; k++)
        if ((int)in[k].dtype > known) {
            loc(where, sizeof where, m, line, col);
            return cg_error(CG_ERR_VERIFY, "%s%s '%s': input %d is %s, a type plugin '%s' (ABI 1.%u) predates", where,
                            op->def->name, node_name, k, cg_dtype_name((cg_dtype)in[k].dtype), op->plugin->name,
                            (unsigned)op->plugin->abi_minor);
        }
    cg_op_call call = cg_host_call(node_name, n_in, in, n_out, out, attrs, err, sizeof err);
    memset(out, 0, sizeof *out * (size_t)n_out);
    cg_op_status rs = op->def->infer(&call);
    err[sizeof err - 1] = 0;
    if (rs != CG_OP_OK) {
        loc(where, sizeof where, m, line, col);
        return cg_error(CG_ERR_VERIFY, "%s%s '%s': %s", where, op->def->name, node_name,
                        err[0] ? err : "shape inference failed");
    }
    for (int k = 0; k < n_out; k++) {
        const cg_tensor_desc *d = &out[k];
        int bad = !cg_dtype_valid((int)d->dtype) || d->ndim < 0 || d->ndim > CG_MAX_DIMS;
        for (int i = 0; !bad && i < d->ndim; i++) /* Symbols must be ones of this model: -2 - k with k < n_syms. */
            if (concrete ? d->dims[i] < 0 : d->dims[i] < -1 - (int64_t)(m ? m->n_syms : 0)) bad = 1;
        if (bad || !cg_shape_fits(d->ndim, d->dims)) loc(where, sizeof where, m, line, col);
        if (bad)
            return cg_error(CG_ERR_VERIFY, "%s%s '%s': operator inferred an invalid type for output %d", where,
                            op->def->name, node_name, k);
        if (!cg_shape_fits(d->ndim, d->dims))
            return cg_error(CG_ERR_VERIFY, "%s%s '%s': output %d would have more than 2^40 elements", where,
                            op->def->name, node_name, k);
    }
    return CG_OK;
}

/* Checks a param against the bound weights file: the weight exists, is
 * stored as a dtype the declared one views (the same; f16 or bf16 for an
 * f32 param, converted exactly; i64 for an i32 param, range checked) and has
 * the declared shape. Then views it, so that a conversion fails here, with
 * the param named, rather than at the first run. */
static cg_status check_param(cg_model *m, cg_graph *g, cg_value *v) {
    char where[512];
    loc(where, sizeof where, m, v->line, v->col);
    cg_tensor_desc want, have;
    const void *data;
    cg_desc_from_value(v, &want);
    int idx = cg_weights_find(m->weights, v->weight);
    if (idx < 0)
        return cg_error(CG_ERR_NOT_FOUND, "%sparam '%s' of graph '%s': weight '%s' is not in %s", where, v->name,
                        g->name, v->weight, cg_weights_path(m->weights));
    cg_status st = cg_weights_stored_desc(m->weights, (size_t)idx, &have);
    if (st) return st;
    int dtype_ok = cg_weights_viewable(have.dtype, want.dtype);
    int same = dtype_ok && have.ndim == want.ndim;
    for (int i = 0; same && i < want.ndim; i++) same = have.dims[i] == want.dims[i];
    if (!same) {
        char a[256], b[256];
        cg_desc_format(a, sizeof a, m, &have);
        cg_desc_format(b, sizeof b, m, &want);
        return cg_error(CG_ERR_VERIFY, "%sparam '%s' of graph '%s': weight '%s' is %s, declared %s%s", where, v->name,
                        g->name, v->weight, a, b,
                        dtype_ok ? ""
                                 : " (an f32 param takes f32, f16 or bf16 weights or i8 matrices with "
                                   "their NAME_scale, an f16 or bf16 param "
                                   "its own or f32 ones, an i32 param i32 or i64 ones, any other param "
                                   "weights of its own dtype)");
    }
    st = cg_weights_view_as(m->weights, v->weight, want.dtype, &have, &data);
    if (st) cg_error_prefix("%sparam '%s' of graph '%s': ", where, v->name, g->name);
    return st;
}

static cg_status verify_graph(cg_graph *g) {
    cg_model *m = g->model;
    char where[512];
    for (int i = 0; i < g->n_values; i++) {
        cg_value *v = &g->values[i];
        if (v->kind == CG_VAL_NODE) v->typed = 0;
        else if (!cg_shape_fits(v->ndim, v->dims)) {
            char t[256];
            loc(where, sizeof where, m, v->line, v->col);
            cg_value_type_format(t, sizeof t, m, v);
            return cg_error(CG_ERR_VERIFY, "%s%s '%s': %s has more than 2^40 elements", where,
                            v->kind == CG_VAL_PARAM ? "param" : "input", v->name, t);
        }
        if (v->kind == CG_VAL_PARAM)
            for (int d = 0; d < v->ndim; d++)
                if (v->dims[d] < 0) {
                    loc(where, sizeof where, m, v->line, v->col);
                    return cg_error(CG_ERR_VERIFY, "%sparam '%s': dims of a parameter must be numbers", where, v->name);
                }
    }
    cg_analysis an;
    cg_status st = analyze_graph(g, &an);
    if (st) return st;
    /* Room for the widest node's descriptors. */
    int max_in = 0, max_out = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i]->n_inputs > max_in) max_in = g->nodes[i]->n_inputs;
        if (g->nodes[i]->n_outputs > max_out) max_out = g->nodes[i]->n_outputs;
    }
    cg_tensor_desc *in = calloc((size_t)max_in + 1, sizeof *in), *out = calloc((size_t)max_out + 1, sizeof *out);
    if (!in || !out) st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int oi = 0; oi < an.n_nodes && !st; oi++) {
        int ni = an.order[oi];
        cg_node *nd = g->nodes[ni];
        for (int k = 0; k < nd->n_inputs; k++) {
            cg_desc_from_value(&g->values[nd->inputs[k]], &in[k]);
            cg_graph_pin_desc(g, &in[k]);
        }
        st = cg_call_infer(m, nd->name, nd->line, nd->col, an.ops[ni], an.attrs[ni], nd->n_inputs, in, nd->n_outputs,
                           out, 0);
        for (int k = 0; !st && k < nd->n_outputs; k++) {
            cg_value *v = &g->values[nd->outputs[k]];
            cg_graph_pin_desc(g, &out[k]);
            v->typed = 1;
            v->dtype = (cg_dtype)out[k].dtype;
            v->ndim = out[k].ndim;
            memcpy(v->dims, out[k].dims, sizeof(int64_t) * (size_t)out[k].ndim);
        }
    }
    free(in);
    free(out);
    cg_analysis_free(&an);
    for (int i = 0; !st && m->weights && i < g->n_values; i++)
        if (g->values[i].kind == CG_VAL_PARAM) st = check_param(m, g, &g->values[i]);
    return st;
}

/* Variant v of the graph whose first variant is f: the same inputs (names,
 * types) and outputs (names, dtypes), so that one plan runs either. */
static cg_status same_interface(const cg_graph *f, const cg_graph *v) {
    const cg_model *m = f->model;
    char where[512];
    cg_loc_format(where, sizeof where, m, v->line, v->col);
    int same = f->n_inputs == v->n_inputs && f->n_outputs == v->n_outputs;
    for (int k = 0; same && k < f->n_inputs; k++) {
        const cg_value *a = &f->values[f->inputs[k]], *b = &v->values[v->inputs[k]];
        same = !strcmp(a->name, b->name) && a->dtype == b->dtype && a->ndim == b->ndim &&
               !memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->ndim);
    }
    for (int k = 0; same && k < f->n_outputs; k++)
        same = !strcmp(f->out_names[k], v->out_names[k]) &&
               f->values[f->outputs[k]].dtype == v->values[v->outputs[k]].dtype;
    if (same) return CG_OK;
    return cg_error(CG_ERR_VERIFY,
                    "%sgraph '%s': a variant must have the inputs (names and types) and outputs (names and dtypes) "
                    "of the first, at %d:%d",
                    where, v->name, f->line, f->col);
}

/* A guard on a value symbol reads one integer input of the graph. */
static cg_status check_value_guards(const cg_graph *g) {
    const cg_model *m = g->model;
    for (int i = 0; i < g->n_guards; i++) {
        const int64_t ops[2] = {g->guards[i].a, g->guards[i].b};
        for (int j = 0; j < 2; j++) {
            const char *in = ops[j] <= -2 ? cg_model_sym_input(m, (int)(-2 - ops[j])) : NULL;
            if (!in) continue;
            int32_t v = cg_graph_find_value(g, in);
            const cg_value *x = v >= 0 ? &g->values[v] : NULL;
            int ok = x && x->kind == CG_VAL_INPUT && cg_value_sym_dtype(x->dtype);
            for (int d = 0; ok && d < x->ndim; d++) ok = x->dims[d] == 1;
            if (ok) continue;
            char where[512];
            cg_loc_format(where, sizeof where, m, g->line, g->col);
            return cg_error(CG_ERR_VERIFY,
                            "%sgraph '%s': its guard reads dim %s = value(%s), which needs an input '%s' "
                            "of one integer",
                            where, g->name, m->syms[-2 - ops[j]], in, in);
        }
    }
    return CG_OK;
}

cg_status cg_model_verify(cg_model *m) {
    if (!m) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_verify: model is NULL");
    m->verified = 0;
    if (m->n_graphs == 0) return cg_error(CG_ERR_VERIFY, "%s: the model has no graph", m->filename);
    for (int i = 0; i < m->n_graphs; i++) {
        cg_status st = verify_graph(m->graphs[i]);
        if (!st) st = check_value_guards(m->graphs[i]);
        if (st) return st;
        const cg_graph *first = cg_model_graph(m, m->graphs[i]->name);
        if (first != m->graphs[i] && (st = same_interface(first, m->graphs[i]))) return st;
    }
    m->verified = 1;
    return CG_OK;
}

/* Here, not in the ONNX importer: a build without ONNX has it too. */
cg_weights *cg_model_weights(const cg_model *m) { return m ? m->weights : NULL; }

cg_status cg_model_bind_weights(cg_model *m, cg_weights *w) {
    if (!m || !w) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_bind_weights: NULL argument");
    cg_weights *old = m->weights;
    m->weights = w;
    for (int gi = 0; gi < m->n_graphs; gi++) {
        cg_graph *g = m->graphs[gi];
        for (int i = 0; i < g->n_values; i++)
            if (g->values[i].kind == CG_VAL_PARAM) {
                cg_status st = check_param(m, g, &g->values[i]);
                if (st) {
                    m->weights = old;
                    return st;
                }
            }
    }
    return CG_OK;
}

cg_status cg_model_describe(const cg_model *m, char **out) {
    if (!m || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_describe: NULL argument");
    if (!m->verified) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_describe: model is not verified");
    cg_strbuf b = {0};
    for (int gi = 0; gi < m->n_graphs; gi++) {
        const cg_graph *g = m->graphs[gi];
        unsigned char *is_out = calloc((size_t)g->n_values + 1, 1);
        if (!is_out) {
            free(cg_strbuf_take(&b));
            return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        }
        for (int k = 0; k < g->n_outputs; k++) is_out[g->outputs[k]] = 1;
        for (int i = 0; i < g->n_values; i++) {
            const cg_value *v = &g->values[i];
            char ty[512];
            cg_tensor_desc d;
            cg_desc_from_value(v, &d);
            cg_desc_format(ty, sizeof ty, m, &d);
            cg_strbuf_cat(&b, g->name, ".", v->name, ": ", ty, "  ", (const char *)NULL);
            if (v->kind == CG_VAL_INPUT) {
                cg_strbuf_cat(&b, "input", (const char *)NULL);
            } else if (v->kind == CG_VAL_PARAM) {
                cg_strbuf_cat(&b, "param \"", v->weight, "\"", (const char *)NULL);
            } else {
                const cg_node *nd = g->nodes[v->producer];
                cg_strbuf_cat(&b, nd->op, " '", nd->name, "'", (const char *)NULL);
            }
            cg_strbuf_cat(&b, is_out[i] ? "  (output)\n" : "\n", (const char *)NULL);
        }
        free(is_out);
    }
    char *s = cg_strbuf_take(&b);
    if (!s) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    *out = s;
    return CG_OK;
}

cg_status cg_graph_input_dims(const cg_graph *g, int i, char **out) {
    if (!g || !out || i < 0 || i >= g->n_inputs)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_graph_input_dims: bad argument");
    const cg_value *v = &g->values[g->inputs[i]];
    size_t cap = 16;
    for (int d = 0; d < v->ndim; d++)
        if (v->dims[d] <= -2) cap += strlen(g->model->syms[-2 - v->dims[d]]) + 1;
        else cap += 1;
    char *s = calloc(1, cap);
    if (!s) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    size_t u = 0;
    for (int d = 0; d < v->ndim; d++) {
        const char *name = v->dims[d] <= -2 ? g->model->syms[-2 - v->dims[d]] : "";
        u += (size_t)snprintf(s + u, cap - u, "%s%s", d ? "," : "", name);
    }
    *out = s;
    return CG_OK;
}
