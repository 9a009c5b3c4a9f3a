/* Derived dims: a symbol defined by arithmetic on others (B * 4 heads,
 * S - 1, ceil(S / 2)), so that shapes an exporter computes from a dynamic
 * batch or length stay exact up to the binding. A plan binds the free
 * symbols from its inputs; the derived ones follow here, in definition
 * order (a definition only reads symbols defined before it). */
#include "ir.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "mem.h"

static const struct {
    const char *text;
    int prec; /* of an infix operator; 0: written as a call */
} sym_ops[] = {
    [CG_SYM_ADD] = {"+", 1}, [CG_SYM_SUB] = {"-", 1},   [CG_SYM_MUL] = {"*", 2},   [CG_SYM_DIV] = {"/", 2},
    [CG_SYM_MOD] = {"%", 2}, [CG_SYM_MIN] = {"min", 0}, [CG_SYM_MAX] = {"max", 0}, [CG_SYM_CEIL_DIV] = {"ceil_div", 0},
};

const char *cg_sym_op_text(int op) { return op > 0 && op <= CG_SYM_CEIL_DIV ? sym_ops[op].text : NULL; }

int cg_sym_op_infix(int op) { return cg_sym_op_text(op) && sym_ops[op].prec; }

int cg_sym_op_parse(const char *s) {
    for (int op = CG_SYM_ADD; op <= CG_SYM_CEIL_DIV; op++)
        if (!strcmp(s, sym_ops[op].text)) return op;
    return 0;
}

/* An operand as it reads inside a name: a size, a symbol's name, in
 * parentheses where a derived symbol's operator binds less tightly. */
static void put_operand(char *buf, size_t size, const cg_model *m, int64_t d, int prec, int right) {
    if (d >= 0) {
        snprintf(buf, size, "%lld", (long long)d);
        return;
    }
    const int k = (int)(-2 - d);
    const int op = m->sym_defs ? m->sym_defs[k].op : 0;
    const int p = op ? sym_ops[op].prec : 3;
    const int paren = p && (p < prec || (right && p == prec));
    snprintf(buf, size, paren ? "(%s)" : "%s", m->syms[k]);
}

static void sym_name(char *buf, size_t size, const cg_model *m, int op, int64_t a, int64_t b) {
    char x[160], y[160];
    const int prec = sym_ops[op].prec;
    put_operand(x, sizeof x, m, a, prec ? prec : 0, 0);
    put_operand(y, sizeof y, m, b, prec ? prec : 0, 1);
    if (prec) snprintf(buf, size, "%s%s%s", x, sym_ops[op].text, y);
    else snprintf(buf, size, "%s(%s, %s)", sym_ops[op].text, x, y);
}

static int operand_ok(const cg_model *m, int64_t d, int below) {
    return d >= 0 || (d <= CG_DIM_SYM(0) && -2 - d < below && -2 - d < m->n_syms);
}

cg_status cg_model_sym_define(cg_model *m, int op, int64_t a, int64_t b, int *out) {
    *out = -1;
    if (!cg_sym_op_text(op) || !operand_ok(m, a, m->n_syms) || !operand_ok(m, b, m->n_syms))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_sym_define: invalid operands");
    for (int k = 0; m->sym_defs && k < m->n_syms; k++)
        if (m->sym_defs[k].op == op && m->sym_defs[k].a == a && m->sym_defs[k].b == b) return *out = k, CG_OK;
    char name[400];
    sym_name(name, sizeof name, m, op, a, b);
    if (cg_model_find_sym(m, name) >= 0) /* a free symbol of that spelling: keep both apart */
        for (int i = 2; cg_model_find_sym(m, name) >= 0; i++) {
            char base[400];
            sym_name(base, sizeof base, m, op, a, b);
            snprintf(name, sizeof name, "%.380s#%d", base, i);
        }
    return cg_model_sym_define_named(m, name, op, a, b, out);
}

cg_status cg_model_sym_define_named(cg_model *m, const char *name, int op, int64_t a, int64_t b, int *out) {
    *out = -1;
    if (!cg_sym_op_text(op)) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_sym_define: unknown operator");
    const int before = m->n_syms;
    if (!operand_ok(m, a, before) || !operand_ok(m, b, before))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "dim '%s': an operand is not a size or an earlier dim", name);
    if (cg_model_find_sym(m, name) >= 0) return cg_error(CG_ERR_INVALID_ARGUMENT, "dim '%s' is already defined", name);
    if (!m->sym_defs) { /* the first derived dim: every symbol so far is free */
        m->sym_defs = calloc((size_t)before + 1, sizeof *m->sym_defs);
        if (!m->sym_defs) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    const int k = cg_model_sym(m, name); /* grows sym_defs by one free entry */
    if (k < 0) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    m->sym_defs[k] = (cg_sym_def){op, a, b};
    return *out = k, CG_OK;
}

int cg_model_sym_derived(const cg_model *m, int k) {
    return m->sym_defs && k >= 0 && k < m->n_syms && m->sym_defs[k].op != 0;
}

/* op(a, b) of two sizes; -1 and a reason when it has no size. */
static int64_t apply(int op, int64_t a, int64_t b, const char **why) {
    switch (op) {
    case CG_SYM_ADD: return a > INT64_MAX - b ? (*why = "overflows", -1) : a + b;
    case CG_SYM_SUB: return a < b ? (*why = "is negative", -1) : a - b;
    case CG_SYM_MUL: return a && b > INT64_MAX / a ? (*why = "overflows", -1) : a * b;
    case CG_SYM_DIV: return b ? a / b : (*why = "divides by zero", -1);
    case CG_SYM_MOD: return b ? a % b : (*why = "divides by zero", -1);
    case CG_SYM_CEIL_DIV: return b ? a / b + (a % b != 0) : (*why = "divides by zero", -1);
    case CG_SYM_MIN: return a < b ? a : b;
    case CG_SYM_MAX: return a > b ? a : b;
    }
    *why = "has an unknown operator";
    return -1;
}

static int64_t operand_value(const int64_t *vals, int64_t d) { return d >= 0 ? d : vals[-2 - d]; }

cg_status cg_model_eval_syms(const cg_model *m, int64_t *vals) {
    for (int k = 0; m->sym_defs && k < m->n_syms; k++) {
        const cg_sym_def *d = &m->sym_defs[k];
        if (!d->op) continue;
        const int64_t a = operand_value(vals, d->a), b = operand_value(vals, d->b);
        if (a < 0 || b < 0) continue; /* depends on a dim this binding leaves open */
        const char *why = NULL;
        const int64_t v = apply(d->op, a, b, &why);
        char expr[400];
        if (v < 0) {
            cg_model_sym_def_text(m, k, expr, sizeof expr);
            return cg_error(CG_ERR_INVALID_ARGUMENT, "dim %s = %s %s for this binding (%lld, %lld)", m->syms[k], expr,
                            why, (long long)a, (long long)b);
        }
        if (vals[k] >= 0 && vals[k] != v) {
            cg_model_sym_def_text(m, k, expr, sizeof expr);
            return cg_error(CG_ERR_INVALID_ARGUMENT, "dim %s is bound to %lld, but %s = %lld", m->syms[k],
                            (long long)vals[k], expr, (long long)v);
        }
        vals[k] = v;
    }
    return CG_OK;
}

/* One operand of a definition as the text format writes it. */
static void put_def_operand(char *buf, size_t size, const cg_model *m, int64_t d) {
    if (d >= 0) snprintf(buf, size, "%lld", (long long)d);
    else snprintf(buf, size, cg_ident_valid(m->syms[-2 - d]) ? "%s" : "`%s`", m->syms[-2 - d]);
}

void cg_model_sym_def_text(const cg_model *m, int k, char *buf, size_t size) {
    const cg_sym_def *d = &m->sym_defs[k];
    char x[200], y[200];
    put_def_operand(x, sizeof x, m, d->a);
    put_def_operand(y, sizeof y, m, d->b);
    if (sym_ops[d->op].prec) snprintf(buf, size, "%s %s %s", x, sym_ops[d->op].text, y);
    else snprintf(buf, size, "%s(%s, %s)", sym_ops[d->op].text, x, y);
}
