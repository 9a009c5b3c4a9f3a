/* Older model.cg decoders converted at load to the builder's interface, so
 * that decoding has one path (docs/seq2seq.md "Older decoders"):
 *
 * - without an input `parent`, the state inputs (h<l>, c<l>, htilde) were
 *   the rows the host reordered every step; now the graph takes the previous
 *   step's rows [P, H] and `parent` i32 [B] and gathers its rows itself
 *   (X_sel = gather_rows(X, parent)), so the plan carries the state from
 *   X_new on its device;
 * - without an input `sentence`, keys, keys_proj and src_len had one row per
 *   decoder row, which the host copied whenever a row changed sentence; now
 *   they hold one row per sentence [N, ...] and `sentence` i32 [B] names each
 *   row's: attn_score and attn_context take it as their optional last input
 *   `rows` (as the builder writes them), any other use reads gathered rows.
 *
 * The rewrite runs on the parsed, unverified model: nodes name their inputs,
 * so renaming a use and adding the gathers is all it takes, and the
 * verifier then checks the result as it checks any graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "ir.h"
#include "s2s_iface.h"

/* A name for a new value: `base`, else base2, base3 ... (malloc'd; NULL
 * out of memory). */
static char *fresh_value(const cg_graph *g, const char *base) {
    const size_t size = strlen(base) + 16;
    char *buf = malloc(size);
    if (!buf) return NULL;
    snprintf(buf, size, "%s", base);
    for (int k = 2; cg_graph_find_value(g, buf) >= 0; k++) snprintf(buf, size, "%s%d", base, k);
    return buf;
}

/* A symbol no graph of the model uses yet, as CG_DIM_SYM. */
static cg_status fresh_sym(cg_model *m, const char *base, int64_t *dim) {
    char name[32];
    snprintf(name, sizeof name, "%s", base);
    for (int k = 2; cg_model_find_sym(m, name) >= 0; k++) snprintf(name, sizeof name, "%s%d", base, k);
    int s = cg_model_sym(m, name);
    if (s < 0) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    *dim = CG_DIM_SYM(s);
    return CG_OK;
}

/* The input value named `name`, or NULL. */
static cg_value *input(cg_graph *g, const char *name) {
    const int k = cg_s2s_input_pos(g, name);
    return k >= 0 ? &g->values[g->inputs[k]] : NULL;
}

/* Every use of value `from` (node inputs and graph outputs) now names
 * `to`, but in the nodes `keep` marks (NULL: none). */
static cg_status rename_uses(cg_graph *g, const unsigned char *keep, const char *from, const char *to) {
    cg_status st = CG_OK;
    for (int i = 0; !st && i < g->n_nodes; i++)
        for (int k = 0; !st && !(keep && keep[i]) && k < g->nodes[i]->n_inputs; k++)
            if (!strcmp(g->nodes[i]->in_names[k], from)) st = cg_node_set_input_name(g->nodes[i], k, to);
    for (int k = 0; !st && k < g->n_outputs; k++)
        if (!strcmp(g->out_names[k], from)) st = cg_graph_set_output_name(g, k, to);
    return st;
}

/* Input `x`'s uses (but in the nodes `keep` marks) read x's rows named by
 * `idx`: x_<suffix> = gather_rows(x, idx). */
static cg_status gather_uses(cg_graph *g, const unsigned char *keep, const char *x, const char *idx,
                             const char *suffix) {
    const size_t n = strlen(x) + strlen(suffix) + 2;
    char *base = malloc(n), *sel = NULL;
    if (base) snprintf(base, n, "%s_%s", x, suffix);
    if (base) sel = fresh_value(g, base);
    free(base);
    if (!sel) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    cg_status st = rename_uses(g, keep, x, sel);
    const char *in[2] = {x, idx}, *out[1] = {sel};
    if (!st) st = cg_graph_new_node(g, "gather_rows", NULL, 2, in, 1, out, 0, 0, NULL);
    free(sel);
    return st;
}

static cg_status add_index_input(cg_graph *g, const char *name, int64_t rows) {
    int32_t v;
    return cg_graph_new_input(g, name, CG_I32, 1, &rows, 0, 0, &v);
}

/* No `parent`: the state inputs become the previous step's rows [P, ...],
 * gathered by `parent` [B]. */
static cg_status add_parent(cg_graph *g, int64_t rows) {
    int64_t prev = 0;
    cg_status st = fresh_sym(g->model, "P", &prev);
    if (!st) st = add_index_input(g, "parent", rows);
    const int n_in = g->n_inputs;
    for (int k = 0; !st && k < n_in; k++) {
        cg_value *v = &g->values[g->inputs[k]];
        if (!cg_s2s_is_state_name(v->name) || v->ndim < 1) continue;
        v->dims[0] = prev;
        st = gather_uses(g, NULL, v->name, "parent", "sel");
    }
    return st;
}

/* attn_score's inputs before `rows`, by kind (ops/attention.c). */
static int score_inputs(const cg_node *n) {
    static const struct {
        const char *kind;
        int n;
    } kinds[] = {{"additive", 5}, {"dot", 2}, {"scaled_dot", 2}, {"general", 3}, {"cosine", 2}};
    for (int a = 0; a < n->n_attrs; a++)
        if (!strcmp(n->attrs[a].key, "kind") && n->attrs[a].type == CG_ATTR_STRING)
            for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
                if (!strcmp(n->attrs[a].s, kinds[k].kind)) return kinds[k].n;
    return -1;
}

/* Node n reads x as the keys (values) of an attention op without rows:
 * it takes `sentence` as its rows. */
static int takes_rows(const cg_node *n, const char *x) {
    if (n->n_inputs < 2 || strcmp(n->in_names[1], x)) return 0;
    if (!strcmp(n->op, "attn_context")) return n->n_inputs == 2;
    return !strcmp(n->op, "attn_score") && n->n_inputs == score_inputs(n);
}

/* Per-sentence input x [N, ...]: attention ops index it by `sentence`,
 * other uses read x's gathered rows. */
static cg_status per_sentence(cg_graph *g, const char *x, int64_t sents) {
    cg_value *v = input(g, x);
    if (!v || v->ndim < 1) return CG_OK;
    v->dims[0] = sents;
    const int n = g->n_nodes;
    unsigned char *rows = calloc((size_t)n + 1, 1);
    if (!rows) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    int other = 0;
    cg_status st = CG_OK;
    for (int i = 0; !st && i < n; i++) {
        cg_node *nd = g->nodes[i];
        if ((rows[i] = (unsigned char)takes_rows(nd, x))) {
            st = cg_node_append_input(nd, "sentence");
            continue;
        }
        for (int k = 0; k < nd->n_inputs; k++) other |= !strcmp(nd->in_names[k], x);
    }
    for (int k = 0; k < g->n_outputs; k++) other |= !strcmp(g->out_names[k], x);
    if (!st && other) st = gather_uses(g, rows, x, "sentence", "rows");
    free(rows);
    return st;
}

/* No `sentence`: keys, keys_proj and src_len one row per sentence [N]. */
static cg_status add_sentence(cg_graph *g, int64_t rows) {
    int64_t sents = 0;
    cg_status st = fresh_sym(g->model, "N", &sents);
    if (!st) st = add_index_input(g, "sentence", rows);
    if (!st) st = per_sentence(g, "keys", sents);
    if (!st) st = per_sentence(g, "keys_proj", sents);
    if (!st) st = per_sentence(g, "src_len", sents);
    return st;
}

static int has_state(cg_graph *g) {
    for (int k = 0; k < g->n_inputs; k++)
        if (cg_s2s_is_state_name(g->values[g->inputs[k]].name)) return 1;
    return 0;
}

/* A decoder graph without `parent` or `sentence`, converted. A graph the
 * conversion cannot read (no y_prev [B] to take B from) is left for the
 * interface check to name what is missing. */
static cg_status upgrade_decoder(cg_graph *g, int *changed) {
    const cg_value *y = g ? input(g, "y_prev") : NULL;
    if (!y || y->ndim != 1) return CG_OK;
    const int64_t rows = y->dims[0];
    cg_status st = CG_OK;
    if (!input(g, "parent") && has_state(g)) {
        st = add_parent(g, rows);
        *changed = 1;
    }
    if (!st && !input(g, "sentence") && (input(g, "keys") || input(g, "keys_proj") || input(g, "src_len"))) {
        st = add_sentence(g, rows);
        *changed = 1;
    }
    return st;
}

cg_status cg_s2s_upgrade(cg_model *model, int *changed) {
    int any = 0;
    cg_status st = upgrade_decoder(cg_model_graph(model, "decoder"), &any);
    if (!st) st = upgrade_decoder(cg_model_graph(model, "decoder_logp"), &any);
    if (changed) *changed = any;
    return st;
}
