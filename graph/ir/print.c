/* Printer of the graph text format (canonical form, see parse.c):
 *
 *   graph NAME {
 *     input x: f32[B, 16]          inputs in declaration order
 *     param w: f32[16, 16] = "w"   then params in declaration order
 *     name: a, b = op(x, w) {k: 1} then nodes in stored order; the name only
 *                                  when it differs from the first output
 *     output a, b
 *   }
 *
 * with a blank line between graphs. A parsed text's comments are kept: one
 * on a line of its own goes before the statement that followed it (or the
 * '}' or the end of the file), indented as that statement; one after code
 * goes at the end of that statement's line. They move with their statement
 * where the canonical order moves it. Floats use the fewest digits that read
 * back to the same double (whole numbers below 1e16 without an exponent),
 * and always read back as floats ("1.0", "1e+20", "inf", "nan"). */
#include "ir.h"
#include "dtype.h"
#include "error.h"

#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sbuf {
    char *buf;
    size_t len, cap;
    int failed;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->failed) return;
    if (n >= b->cap - b->len || !b->buf) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len <= n) {
            if (cap > SIZE_MAX / 2) {
                b->failed = 1;
                return;
            }
            cap *= 2;
        }
        char *nb = realloc(b->buf, cap);
        if (!nb) {
            b->failed = 1;
            return;
        }
        b->buf = nb;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = 0;
}

static void sb_puts(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_printf(sbuf *b, const char *fmt, ...) CG_PRINTF(2, 3);

static void sb_printf(sbuf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        b->failed = 1; /* only used for short numbers */
        return;
    }
    sb_put(b, tmp, (size_t)n);
}

/* The shortest "%.Ng" text of v that reads back to v, in the "C" locale,
 * made to read back as a float ("1" becomes "1.0"). */
static void format_double(char *buf, size_t size, double v) {
    if (isnan(v)) {
        snprintf(buf, size, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, v > 0 ? "inf" : "-inf");
        return;
    }
    locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    locale_t old = c ? uselocale(c) : (locale_t)0;
    if (v == floor(v) && fabs(v) < 1e16) {
        snprintf(buf, size, "%.0f", v); /* whole numbers without exponent: 100.0, not 1e+02 */
    } else {
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(buf, size, "%.*g", prec, v);
            if (strtod(buf, NULL) == v) break;
        }
    }
    if (c) {
        uselocale(old);
        freelocale(c);
    }
    if (!strpbrk(buf, ".eE")) {
        size_t n = strlen(buf);
        if (n + 2 < size) memcpy(buf + n, ".0", 3);
    }
}

/* s between quotes q ('"' for strings, '`' for names), with the escapes
 * the lexer reads: \q, \\, \n, \t and \uXXXX for other control bytes. */
static void put_quoted(sbuf *b, const char *s, char q) {
    sb_put(b, &q, 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == (unsigned char)q || c == '\\') {
            sb_put(b, "\\", 1);
            sb_put(b, (const char *)&c, 1);
        } else if (c == '\n') sb_put(b, "\\n", 2);
        else if (c == '\t') sb_put(b, "\\t", 2);
        else if (c < 0x20 || c == 0x7f) sb_printf(b, "\\u%04x", c);
        else sb_put(b, (const char *)&c, 1);
    }
    sb_put(b, &q, 1);
}

static void put_string(sbuf *b, const char *s) { put_quoted(b, s, '"'); }

/* A name as the parser reads it: plain when it is an identifier, else
 * `quoted` (ONNX names: onnx::MatMul_7, /encoder/Add_output_0, 12). */
static void put_name(sbuf *b, const char *s) {
    if (cg_ident_valid(s)) sb_puts(b, s);
    else put_quoted(b, s, '`');
}

static cg_status put_type(sbuf *b, const cg_model *m, const cg_graph *g, const cg_value *v) {
    if (!v->typed || !cg_dtype_valid((int)v->dtype) || v->ndim < 0 || v->ndim > CG_MAX_DIMS)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cannot print graph '%s': value '%s' has no valid type", g->name,
                        v->name);
    sb_puts(b, cg_dtype_name(v->dtype));
    sb_put(b, "[", 1);
    for (int i = 0; i < v->ndim; i++) {
        int64_t d = v->dims[i];
        if (i) sb_put(b, ", ", 2);
        if (d >= 0) sb_printf(b, "%lld", (long long)d);
        else if (d <= CG_DIM_SYM(0) && -2 - d < m->n_syms) put_name(b, m->syms[-2 - d]);
        else
            return cg_error(CG_ERR_INVALID_ARGUMENT, "cannot print graph '%s': value '%s' has an unknown dimension",
                            g->name, v->name);
    }
    sb_put(b, "]", 1);
    return CG_OK;
}

static void put_attr(sbuf *b, const cg_model *m, const cg_attr *a) {
    char num[64];
    sb_puts(b, a->key);
    sb_put(b, ": ", 2);
    switch (a->type) {
    case CG_ATTR_INT: sb_printf(b, "%lld", (long long)a->i); break;
    case CG_ATTR_FLOAT:
        format_double(num, sizeof num, a->f);
        sb_puts(b, num);
        break;
    case CG_ATTR_STRING: put_string(b, a->s ? a->s : ""); break;
    case CG_ATTR_INTS:
    case CG_ATTR_DIMS:
        sb_put(b, "[", 1);
        for (int i = 0; i < a->n_ints; i++) {
            const int64_t v = a->ints[i];
            if (i) sb_put(b, ", ", 2);
            if (a->syms && v <= -2 && -2 - v < m->n_syms) put_name(b, m->syms[-2 - v]);
            else sb_printf(b, "%lld", (long long)v);
        }
        sb_put(b, "]", 1);
        break;
    }
}

static cg_status value_name(const cg_graph *g, int32_t i, const char **out) {
    if (i < 0 || i >= g->n_values)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cannot print graph '%s': invalid value index %d", g->name, (int)i);
    *out = g->values[i].name;
    return CG_OK;
}

/* Where comments go: each statement of the text is one slot (a graph's
 * header, inputs, params by value index, nodes, its output line and its
 * '}'), and the end of the file one more; first[slot] lists the comments
 * printed before it, trail[slot] those after it, in text order. */
enum { A_HEAD, A_INPUT, A_PARAM, A_NODE, A_OUTPUT, A_CLOSE };

typedef struct anchor {
    int line, order, slot;
} anchor;

typedef struct comment_map {
    const cg_model *m;
    int *base; /* per graph: its header's slot */
    int n_slots;
    int *first, *trail; /* per slot: first comment, -1 none */
    int *next;          /* per comment: the next of the same list */
} comment_map;

static int slot_of(const comment_map *c, int gi, int kind, int idx) {
    const cg_graph *g = c->m->graphs[gi];
    int s = c->base[gi];
    switch (kind) {
    case A_HEAD: return s;
    case A_INPUT: return s + 1 + idx;
    case A_PARAM: return s + 1 + g->n_inputs + idx;
    case A_NODE: return s + 1 + g->n_inputs + g->n_values + idx;
    case A_OUTPUT: return s + 1 + g->n_inputs + g->n_values + g->n_nodes;
    default: return s + 2 + g->n_inputs + g->n_values + g->n_nodes;
    }
}

static int anchor_cmp(const void *a, const void *b) {
    const anchor *x = a, *y = b;
    return x->line != y->line ? (x->line > y->line) - (x->line < y->line)
                              : (x->order > y->order) - (x->order < y->order);
}

static void add_anchor(anchor *a, int *n, int line, int slot) {
    if (line <= 0) return; /* made by the builder: no place in a text */
    a[*n] = (anchor){line, *n, slot};
    (*n)++;
}

/* The statements' slots sorted by the line each starts on. */
static anchor *make_anchors(const comment_map *c, int *n) {
    const cg_model *m = c->m;
    /* one anchor per statement: the outputs share one slot but each output
     * line is an anchor of its own */
    size_t cap = 1;
    for (int gi = 0; gi < m->n_graphs; gi++) {
        const cg_graph *g = m->graphs[gi];
        cap += 2 + (size_t)g->n_inputs + (size_t)g->n_values + (size_t)g->n_nodes + (size_t)g->n_outputs;
    }
    anchor *a = malloc(sizeof *a * cap);
    if (!a) return NULL;
    *n = 0;
    for (int gi = 0; gi < m->n_graphs; gi++) {
        const cg_graph *g = m->graphs[gi];
        add_anchor(a, n, g->line, slot_of(c, gi, A_HEAD, 0));
        for (int i = 0; i < g->n_inputs; i++)
            add_anchor(a, n, g->values[g->inputs[i]].line, slot_of(c, gi, A_INPUT, i));
        for (int i = 0; i < g->n_values; i++)
            if (g->values[i].kind == CG_VAL_PARAM) add_anchor(a, n, g->values[i].line, slot_of(c, gi, A_PARAM, i));
        for (int i = 0; i < g->n_nodes; i++) add_anchor(a, n, g->nodes[i]->line, slot_of(c, gi, A_NODE, i));
        for (int k = 0; g->out_line && k < g->n_outputs; k++)
            add_anchor(a, n, g->out_line[k], slot_of(c, gi, A_OUTPUT, 0));
        add_anchor(a, n, g->end_line, slot_of(c, gi, A_CLOSE, 0));
    }
    qsort(a, (size_t)*n, sizeof *a, anchor_cmp);
    return a;
}

/* The slot comment k goes to: a comment on its own line before the first
 * statement starting after it, one after code with the last statement
 * starting on or before its line. Only one comment fits at the end of a
 * printed line: a second after-code comment of the same statement (one on
 * a `dim` line, which is printed elsewhere) is printed on a line of its
 * own, so it is placed as one, or a second print would move it. */
static void place_comment(comment_map *c, const anchor *a, int n, int k, int *last_first, int *last_trail) {
    const cg_comment *cm = &c->m->comments[k];
    int lo = 0, hi = n; /* first anchor with line > cm->line */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (a[mid].line > cm->line) hi = mid;
        else lo = mid + 1;
    }
    int *head = c->first, *last = last_first, slot = c->n_slots - 1; /* the end of the file */
    if (!cm->own_line && lo > 0 && last_trail[a[lo - 1].slot] < 0) {
        slot = a[lo - 1].slot;
        head = c->trail;
        last = last_trail;
    } else if (lo < n) {
        slot = a[lo].slot;
    }
    c->next[k] = -1;
    if (last[slot] < 0) head[slot] = k;
    else c->next[last[slot]] = k;
    last[slot] = k;
}

static void comment_map_free(comment_map *c) {
    free(c->base);
    free(c->first);
    free(c->trail);
    free(c->next);
}

/* Builds the map; CG_OK with nothing to do for a model without comments. */
static cg_status comment_map_make(comment_map *c, const cg_model *m) {
    memset(c, 0, sizeof *c);
    c->m = m;
    if (!m->n_comments) return CG_OK;
    size_t slots = 1;
    c->base = malloc(sizeof *c->base * ((size_t)m->n_graphs + 1));
    if (!c->base) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int gi = 0; gi < m->n_graphs; gi++) {
        const cg_graph *g = m->graphs[gi];
        c->base[gi] = (int)(slots - 1);
        slots += 3 + (size_t)g->n_inputs + (size_t)g->n_values + (size_t)g->n_nodes;
        if (slots > INT_MAX / 2) {
            comment_map_free(c);
            return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        }
    }
    c->n_slots = (int)slots;
    int *last = malloc(sizeof *last * slots * 2);
    c->first = malloc(sizeof *c->first * slots);
    c->trail = malloc(sizeof *c->trail * slots);
    c->next = malloc(sizeof *c->next * (size_t)m->n_comments);
    int n = 0;
    anchor *a = last && c->first && c->trail && c->next ? make_anchors(c, &n) : NULL;
    if (!a) {
        free(last);
        comment_map_free(c);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < slots; i++) c->first[i] = c->trail[i] = last[i] = last[slots + i] = -1;
    for (int k = 0; k < m->n_comments; k++) place_comment(c, a, n, k, last, last + slots);
    free(a);
    free(last);
    return CG_OK;
}

/* The comments before slot `slot` (each on its own line, indented), or
 * after it (trail: the first at the end of the line just printed, whose
 * newline is taken back, the others on lines of their own). */
static void put_comments(sbuf *b, const comment_map *c, int gi, int kind, int idx, int trail, const char *indent) {
    if (!c->first) return;
    int slot = gi < 0 ? c->n_slots - 1 : slot_of(c, gi, kind, idx);
    int k = trail ? c->trail[slot] : c->first[slot];
    for (int i = 0; k >= 0; k = c->next[k], i++) {
        if (trail && i == 0 && b->len && b->buf[b->len - 1] == '\n') {
            b->buf[--b->len] = 0;
            sb_puts(b, "  ");
        } else sb_puts(b, indent);
        sb_puts(b, c->m->comments[k].text);
        sb_put(b, "\n", 1);
    }
}

static void put_statement_comments(sbuf *b, const comment_map *c, int gi, int kind, int idx, int trail) {
    put_comments(b, c, gi, kind, idx, trail, kind == A_HEAD ? "" : "  ");
}

static void put_dim_operand(sbuf *b, const cg_model *m, int64_t x) {
    if (x >= 0) sb_printf(b, "%lld", (long long)x);
    else put_name(b, m->syms[-2 - x]);
}

/* A derived dim's definition, its operands' names at any length (a fixed
 * buffer cut a long name short, and the text then failed to print). */
static void put_sym_def(sbuf *b, const cg_model *m, const cg_sym_def *d) {
    const char *op = cg_sym_op_text(d->op);
    const int infix = cg_sym_op_infix(d->op);
    if (!infix) sb_puts(b, op), sb_put(b, "(", 1);
    put_dim_operand(b, m, d->a);
    if (infix) sb_put(b, " ", 1), sb_puts(b, op), sb_put(b, " ", 1);
    else sb_put(b, ", ", 2);
    put_dim_operand(b, m, d->b);
    if (!infix) sb_put(b, ")", 1);
}

static cg_status put_graph(sbuf *b, const cg_model *m, const comment_map *c, int gi) {
    const cg_graph *g = m->graphs[gi];
    cg_status st;
    const char *name = "";
    put_statement_comments(b, c, gi, A_HEAD, 0, 0);
    sb_puts(b, "graph ");
    put_name(b, g->name);
    for (int i = 0; i < g->n_guards; i++) {
        const cg_guard *gd = &g->guards[i];
        sb_puts(b, i ? ", " : " when ");
        put_dim_operand(b, m, gd->a);
        sb_printf(b, " %s ", cg_guard_op_text(gd->op));
        put_dim_operand(b, m, gd->b);
    }
    sb_puts(b, " {\n");
    put_statement_comments(b, c, gi, A_HEAD, 0, 1);
    for (int i = 0; i < g->n_inputs; i++) {
        if ((st = value_name(g, g->inputs[i], &name))) return st;
        put_statement_comments(b, c, gi, A_INPUT, i, 0);
        sb_puts(b, "  input ");
        put_name(b, name);
        sb_put(b, ": ", 2);
        if ((st = put_type(b, m, g, &g->values[g->inputs[i]]))) return st;
        sb_put(b, "\n", 1);
        put_statement_comments(b, c, gi, A_INPUT, i, 1);
    }
    for (int i = 0; i < g->n_values; i++) {
        const cg_value *v = &g->values[i];
        if (v->kind != CG_VAL_PARAM) continue;
        put_statement_comments(b, c, gi, A_PARAM, i, 0);
        sb_puts(b, "  param ");
        put_name(b, v->name);
        sb_put(b, ": ", 2);
        if ((st = put_type(b, m, g, v))) return st;
        sb_puts(b, " = ");
        put_string(b, v->weight ? v->weight : "");
        sb_put(b, "\n", 1);
        put_statement_comments(b, c, gi, A_PARAM, i, 1);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const cg_node *n = g->nodes[i];
        if (n->n_outputs < 1)
            return cg_error(CG_ERR_INVALID_ARGUMENT, "cannot print graph '%s': node '%s' has no output", g->name,
                            n->name);
        put_statement_comments(b, c, gi, A_NODE, i, 0);
        sb_puts(b, "  ");
        for (int k = 0; k < n->n_outputs; k++) {
            if ((st = value_name(g, n->outputs[k], &name))) return st;
            if (k == 0 && strcmp(n->name, name) != 0) {
                put_name(b, n->name);
                sb_put(b, ": ", 2);
            }
            if (k) sb_put(b, ", ", 2);
            put_name(b, name);
        }
        sb_puts(b, " = ");
        put_name(b, n->op);
        sb_put(b, "(", 1);
        for (int k = 0; k < n->n_inputs; k++) {
            if (k) sb_put(b, ", ", 2);
            put_name(b, n->in_names[k]);
        }
        sb_put(b, ")", 1);
        if (n->n_attrs) {
            sb_puts(b, " {");
            for (int k = 0; k < n->n_attrs; k++) {
                if (k) sb_put(b, ", ", 2);
                put_attr(b, m, &n->attrs[k]);
            }
            sb_put(b, "}", 1);
        }
        sb_put(b, "\n", 1);
        put_statement_comments(b, c, gi, A_NODE, i, 1);
    }
    put_statement_comments(b, c, gi, A_OUTPUT, 0, 0);
    if (g->n_outputs) {
        sb_puts(b, "  output ");
        for (int k = 0; k < g->n_outputs; k++) {
            if (k) sb_put(b, ", ", 2);
            put_name(b, g->out_names[k]);
        }
        sb_put(b, "\n", 1);
    }
    put_statement_comments(b, c, gi, A_OUTPUT, 0, 1);
    put_statement_comments(b, c, gi, A_CLOSE, 0, 0);
    sb_puts(b, "}\n");
    put_comments(b, c, gi, A_CLOSE, 0, 1, "");
    return CG_OK;
}

static void use_dim(unsigned char *used, const cg_model *m, int64_t d) {
    if (d <= CG_DIM_SYM(0) && -2 - d < m->n_syms) used[-2 - d] = 1;
}

/* Per symbol: read by a value's type, an attribute or a derived dim that
 * is; derived dims nothing reads (the importer names more than the graph
 * keeps) are not written. NULL when out of memory. */
static unsigned char *sym_uses(const cg_model *m) {
    unsigned char *used = calloc((size_t)m->n_syms + 1, 1);
    if (!used) return NULL;
    for (int gi = 0; gi < m->n_graphs; gi++) {
        const cg_graph *g = m->graphs[gi];
        for (int i = 0; i < g->n_guards; i++) {
            use_dim(used, m, g->guards[i].a);
            use_dim(used, m, g->guards[i].b);
        }
        for (int i = 0; i < g->n_values; i++)
            for (int d = 0; g->values[i].typed && d < g->values[i].ndim; d++) use_dim(used, m, g->values[i].dims[d]);
        for (int i = 0; i < g->n_nodes; i++)
            for (int a = 0; a < g->nodes[i]->n_attrs; a++) {
                const cg_attr *at = &g->nodes[i]->attrs[a];
                for (int k = 0; at->syms && k < at->n_ints; k++) use_dim(used, m, at->ints[k]);
            }
    }
    for (int k = m->n_syms - 1; k >= 0; k--)
        if (used[k] && cg_model_sym_derived(m, k)) {
            use_dim(used, m, m->sym_defs[k].a);
            use_dim(used, m, m->sym_defs[k].b);
        }
    return used;
}

/* The derived dims the graphs read, one `dim` statement each. */
static cg_status put_dims(sbuf *b, const cg_model *m, int *any) {
    if (!m->sym_defs && !m->n_value_syms) return CG_OK;
    unsigned char *used = sym_uses(m);
    if (!used) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < m->n_value_syms; i++)
        if (used[m->value_syms[i].sym]) {
            sb_puts(b, "dim ");
            put_name(b, m->syms[m->value_syms[i].sym]);
            sb_puts(b, " = value(");
            put_name(b, m->value_syms[i].input);
            sb_puts(b, ")\n");
            *any = 1;
        }
    for (int k = 0; k < m->n_syms; k++)
        if (cg_model_sym_derived(m, k) && used[k]) {
            sb_puts(b, "dim ");
            put_name(b, m->syms[k]);
            sb_puts(b, " = ");
            put_sym_def(b, m, &m->sym_defs[k]);
            sb_put(b, "\n", 1);
            *any = 1;
        }
    free(used);
    return CG_OK;
}

cg_status cg_print_text(const cg_model *m, char **out) {
    sbuf b = {0};
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_print_text: out is NULL");
    *out = NULL;
    if (!m) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_print_text: model is NULL");
    sb_put(&b, "", 0);
    comment_map c;
    cg_status st = comment_map_make(&c, m);
    if (st) return st;
    int dims = 0;
    st = put_dims(&b, m, &dims);
    for (int i = 0; i < m->n_graphs && !st; i++) {
        if (i || dims) sb_put(&b, "\n", 1);
        st = put_graph(&b, m, &c, i);
    }
    if (!st) put_comments(&b, &c, -1, 0, 0, 0, "");
    comment_map_free(&c);
    if (st) {
        free(b.buf);
        return st;
    }
    if (b.failed) {
        free(b.buf);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    *out = b.buf;
    return CG_OK;
}

cg_status cg_model_print(const cg_model *m, char **out) {
    if (out) *out = NULL;
    if (!m) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_print: model is NULL");
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_print: out is NULL");
    return cg_print_text(m, out);
}
