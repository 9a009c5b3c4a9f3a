/* Guards of graph variants: `graph main when T == 1, S < 4 {`. A guard
 * compares two dims (sizes or symbols); a plan of the graph's name binds
 * the symbols from its inputs and runs the first variant whose guards all
 * hold. An equality with a size also fixes the dim inside the variant, so
 * that the verifier and the importer see the size there (a Squeeze of the
 * dim is then valid). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tensor.h"

#include "ir.h"

static const char *const op_text[] = {NULL, "==", "!=", "<", "<=", ">", ">="};

const char *cg_guard_op_text(int op) { return op >= CG_GUARD_EQ && op <= CG_GUARD_GE ? op_text[op] : NULL; }

int cg_guard_op_parse(const char *s) {
    for (int op = CG_GUARD_EQ; s && op <= CG_GUARD_GE; op++)
        if (!strcmp(s, op_text[op])) return op;
    return 0;
}

/* The size of operand x for vals, or -1 where it is an unbound symbol. */
static int64_t operand(int64_t x, const int64_t *vals) { return x >= 0 ? x : vals[-2 - x]; }

int cg_graph_guards_hold(const cg_graph *g, const int64_t *vals) {
    return cg_guards_hold(g->n_guards, g->guards, vals);
}

cg_status cg_model_refuse_variant(cg_model *m, int n, const cg_guard *guards, const char *why) {
    cg_refused_variant *r = realloc(m->refused, sizeof *r * ((size_t)m->n_refused + 1));
    if (!r) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    m->refused = r;
    r += m->n_refused;
    if (!(r->why = strdup(why))) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    r->n_guards = n < CG_MAX_GUARDS ? n : CG_MAX_GUARDS;
    memcpy(r->guards, guards, sizeof *guards * (size_t)r->n_guards);
    m->n_refused++;
    return CG_OK;
}

int cg_guards_hold(int n, const cg_guard *guards, const int64_t *vals) {
    for (int i = 0; i < n; i++) {
        const cg_guard *c = &guards[i];
        const int64_t a = operand(c->a, vals), b = operand(c->b, vals);
        if (a < 0 || b < 0) return 0;
        int ok = 0;
        switch (c->op) {
        case CG_GUARD_EQ: ok = a == b; break;
        case CG_GUARD_NE: ok = a != b; break;
        case CG_GUARD_LT: ok = a < b; break;
        case CG_GUARD_LE: ok = a <= b; break;
        case CG_GUARD_GT: ok = a > b; break;
        case CG_GUARD_GE: ok = a >= b; break;
        }
        if (!ok) return 0;
    }
    return 1;
}

static size_t put_operand(const cg_model *m, int64_t x, char *buf, size_t size) {
    int n = x >= 0 ? snprintf(buf, size, "%lld", (long long)x) : snprintf(buf, size, "%s", m->syms[-2 - x]);
    return n < 0 ? 0 : (size_t)n;
}

void cg_graph_guards_text(const cg_graph *g, char *buf, size_t size) {
    size_t u = 0;
    if (size) buf[0] = 0;
    for (int i = 0; i < g->n_guards && u + 1 < size; i++) {
        const cg_guard *c = &g->guards[i];
        if (i) u += (size_t)snprintf(buf + u, size - u, ", ");
        if (u + 1 >= size) break;
        u += put_operand(g->model, c->a, buf + u, size - u);
        if (u + 1 >= size) break;
        u += (size_t)snprintf(buf + u, size - u, " %s ", op_text[c->op]);
        if (u + 1 >= size) break;
        u += put_operand(g->model, c->b, buf + u, size - u);
    }
}

void cg_graph_pin_desc(const cg_graph *g, cg_tensor_desc *d) {
    for (int i = 0; g && i < g->n_guards; i++) {
        const cg_guard *c = &g->guards[i];
        if (c->op != CG_GUARD_EQ || (c->a >= 0) == (c->b >= 0)) continue;
        const int64_t sym = c->a < 0 ? c->a : c->b, size = c->a < 0 ? c->b : c->a;
        for (int k = 0; k < d->ndim; k++)
            if (d->dims[k] == sym) d->dims[k] = size;
    }
}

cg_status cg_model_sym_value(cg_model *m, const char *name, const char *input, int *out) {
    for (int i = 0; i < m->n_value_syms; i++)
        if (!strcmp(m->value_syms[i].input, input)) return *out = m->value_syms[i].sym, CG_OK;
    if (cg_model_find_sym(m, name) >= 0) return cg_error(CG_ERR_INVALID_ARGUMENT, "dim '%s' is already defined", name);
    cg_value_sym *v = realloc(m->value_syms, sizeof *v * ((size_t)m->n_value_syms + 1));
    if (!v) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    m->value_syms = v;
    const int k = cg_model_sym(m, name);
    char *in = k >= 0 ? strdup(input) : NULL;
    if (!in) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    v[m->n_value_syms++] = (cg_value_sym){k, in};
    return *out = k, CG_OK;
}

const char *cg_model_sym_input(const cg_model *m, int k) {
    for (int i = 0; i < m->n_value_syms; i++)
        if (m->value_syms[i].sym == k) return m->value_syms[i].input;
    return NULL;
}

int cg_value_sym_dtype(cg_dtype t) {
    switch (t) {
    case CG_I64:
    case CG_I32:
    case CG_I16:
    case CG_U16:
    case CG_U32:
    case CG_I8:
    case CG_U8:
    case CG_BOOL: return 1;
    default: return 0;
    }
}

/* One integer's value; *ok 0 for a tensor that is not one. */
static int64_t scalar_value(const cg_tensor *t, int *ok) {
    *ok = cg_tensor_numel(t) == 1 && cg_value_sym_dtype(t->dtype);
    if (!*ok) return -1;
    const void *p = t->data;
    switch (t->dtype) {
    case CG_I64: return *(const int64_t *)p;
    case CG_I32: return *(const int32_t *)p;
    case CG_I16: return *(const int16_t *)p;
    case CG_U16: return *(const uint16_t *)p;
    case CG_U32: return (int64_t) * (const uint32_t *)p;
    case CG_I8: return *(const int8_t *)p;
    default: return *(const uint8_t *)p; /* u8, bool */
    }
}

cg_status cg_graph_bind_values(const cg_graph *g, const cg_tensor *const *by_pos, int64_t *vals) {
    const cg_model *m = g->model;
    for (int i = 0; i < m->n_value_syms; i++)
        for (int k = 0; k < g->n_inputs; k++) {
            const cg_value *v = &g->values[g->inputs[k]];
            if (strcmp(v->name, m->value_syms[i].input) || !by_pos[k]) continue;
            int ok;
            const int64_t x = scalar_value(by_pos[k], &ok);
            /* -1 stands for "not bound": guards compare values >= 0 */
            if (!ok || x < 0)
                return cg_error(CG_ERR_INVALID_ARGUMENT,
                                "input '%s' must be one integer >= 0: dim %s = value(%s) of graph '%s' reads it",
                                v->name, m->syms[m->value_syms[i].sym], v->name, g->name);
            vals[m->value_syms[i].sym] = x;
        }
    return CG_OK;
}
