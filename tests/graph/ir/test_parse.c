/* Tests of the IR construction, the text parser, the printer and the
 * builder API (graph/ir.c, graph/parse.c, graph/print.c). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clgraph/clgraph.h"
#include "error.h"
#include "ir.h"
#include "read_file.h"
#include "test_util.h"
#include "utf8.h"

/* Parsing needs no registry: a zeroed context stands in for a real one. */
static cg_context g_ctx;

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

static cg_model *parse_len(const char *text, size_t len) {
    cg_model *m = NULL;
    cg_status st = cg_model_parse(&g_ctx, text, len, "m.cg", &m);
    ck_assert_msg(st == CG_OK, "parse failed: %s\n--- text ---\n%s", cg_last_error(), text);
    ck_assert_ptr_nonnull(m);
    return m;
}

static cg_model *parse(const char *text) { return parse_len(text, strlen(text)); }

static char *print(const cg_model *m) {
    char *s = NULL;
    cg_status st = cg_model_print(m, &s);
    ck_assert_msg(st == CG_OK, "print failed: %s", cg_last_error());
    ck_assert_ptr_nonnull(s);
    return s;
}

#define parse_err_len(text, len, msg) parse_err_at(__LINE__, text, len, msg)
#define parse_err(text, msg) parse_err_at(__LINE__, text, strlen(text), msg)

static void parse_err_at(int line, const char *text, size_t len, const char *msg) {
    cg_model *m = (cg_model *)1;
    cg_status st = cg_model_parse(&g_ctx, text, len, "m.cg", &m);
    ck_assert_msg(st == CG_ERR_PARSE, "line %d: expected CG_ERR_PARSE, got %s (%s)", line, cg_status_name(st),
                  cg_last_error());
    ck_assert_msg(m == NULL, "line %d: *out not cleared", line);
    ck_assert_msg(strcmp(cg_last_error(), msg) == 0, "line %d:\n  want: %s\n  got:  %s", line, msg, cg_last_error());
}

static const cg_value *val(const cg_graph *g, const char *name) {
    int32_t i = cg_graph_find_value(g, name);
    ck_assert_msg(i >= 0, "no value '%s'", name);
    return &g->values[i];
}

static const cg_attr *attr(const cg_node *n, const char *key) {
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].key, key) == 0) return &n->attrs[i];
    ck_abort_msg("node '%s' has no attribute '%s'", n->name, key);
    return NULL;
}

static const char *dim_name(const cg_model *m, int64_t d, char *buf) {
    if (d >= 0) snprintf(buf, 32, "%lld", (long long)d);
    else if (-2 - d < m->n_syms) snprintf(buf, 32, "$%s", m->syms[-2 - d]);
    else snprintf(buf, 32, "?%lld", (long long)d);
    return buf;
}

#define NEQ(...)                         \
    do {                                 \
        snprintf(why, 512, __VA_ARGS__); \
        return 0;                        \
    } while (0)

static int type_equal(const cg_model *ma, const cg_value *a, const cg_model *mb, const cg_value *b, char *why) {
    char x[32], y[32];
    if (a->typed != b->typed || a->dtype != b->dtype || a->ndim != b->ndim) NEQ("value '%s': types differ", a->name);
    for (int i = 0; i < a->ndim; i++)
        if (strcmp(dim_name(ma, a->dims[i], x), dim_name(mb, b->dims[i], y)) != 0)
            NEQ("value '%s': dim %d %s vs %s", a->name, i, x, y);
    return 1;
}

static int attr_equal(const cg_attr *a, const cg_attr *b, char *why) {
    if (strcmp(a->key, b->key) != 0 || a->type != b->type) NEQ("attribute '%s' vs '%s'", a->key, b->key);
    switch (a->type) {
    case CG_ATTR_INT:
        if (a->i != b->i) NEQ("attribute '%s': %lld vs %lld", a->key, (long long)a->i, (long long)b->i);
        break;
    case CG_ATTR_FLOAT:
        if (isnan(a->f) ? !isnan(b->f) : memcmp(&a->f, &b->f, sizeof a->f) != 0)
            NEQ("attribute '%s': %.17g vs %.17g", a->key, a->f, b->f);
        break;
    case CG_ATTR_STRING:
        if (strcmp(a->s, b->s) != 0) NEQ("attribute '%s': strings differ", a->key);
        break;
    case CG_ATTR_INTS:
    case CG_ATTR_DIMS:
        if (a->n_ints != b->n_ints || a->syms != b->syms) NEQ("attribute '%s': list lengths differ", a->key);
        for (int i = 0; i < a->n_ints; i++)
            if (a->ints[i] != b->ints[i]) NEQ("attribute '%s': element %d differs", a->key, i);
        break;
    }
    return 1;
}

/* Structural equality of two models, independent of value and symbol
 * numbering: graphs, inputs, params, nodes (names, ops, inputs, outputs,
 * attributes in order) and outputs. */
static int models_equal(const cg_model *ma, const cg_model *mb, char *why) {
    if (ma->n_graphs != mb->n_graphs) NEQ("graph counts %d vs %d", ma->n_graphs, mb->n_graphs);
    for (int gi = 0; gi < ma->n_graphs; gi++) {
        const cg_graph *a = ma->graphs[gi], *b = mb->graphs[gi];
        if (strcmp(a->name, b->name) != 0) NEQ("graph names '%s' vs '%s'", a->name, b->name);
        if (a->n_inputs != b->n_inputs) NEQ("graph '%s': input counts differ", a->name);
        for (int i = 0; i < a->n_inputs; i++) {
            const cg_value *va = &a->values[a->inputs[i]], *vb = &b->values[b->inputs[i]];
            if (strcmp(va->name, vb->name) != 0 || va->kind != CG_VAL_INPUT || vb->kind != CG_VAL_INPUT)
                NEQ("graph '%s': input %d differs", a->name, i);
            if (!type_equal(ma, va, mb, vb, why)) return 0;
        }
        int ia = 0, ib = 0;
        for (;;) {
            while (ia < a->n_values && a->values[ia].kind != CG_VAL_PARAM) ia++;
            while (ib < b->n_values && b->values[ib].kind != CG_VAL_PARAM) ib++;
            if (ia == a->n_values || ib == b->n_values) {
                if (ia != a->n_values || ib != b->n_values) NEQ("graph '%s': param counts differ", a->name);
                break;
            }
            const cg_value *va = &a->values[ia++], *vb = &b->values[ib++];
            if (strcmp(va->name, vb->name) != 0 || strcmp(va->weight, vb->weight) != 0)
                NEQ("graph '%s': params '%s' vs '%s'", a->name, va->name, vb->name);
            if (!type_equal(ma, va, mb, vb, why)) return 0;
        }
        if (a->n_nodes != b->n_nodes) NEQ("graph '%s': node counts differ", a->name);
        for (int i = 0; i < a->n_nodes; i++) {
            const cg_node *na = a->nodes[i], *nb = b->nodes[i];
            if (strcmp(na->name, nb->name) != 0 || strcmp(na->op, nb->op) != 0)
                NEQ("node %d: '%s' = %s vs '%s' = %s", i, na->name, na->op, nb->name, nb->op);
            if (na->n_inputs != nb->n_inputs || na->n_outputs != nb->n_outputs || na->n_attrs != nb->n_attrs)
                NEQ("node '%s': arity differs", na->name);
            for (int k = 0; k < na->n_inputs; k++)
                if (strcmp(na->in_names[k], nb->in_names[k]) != 0) NEQ("node '%s': input %d", na->name, k);
            for (int k = 0; k < na->n_outputs; k++) {
                const cg_value *va = &a->values[na->outputs[k]], *vb = &b->values[nb->outputs[k]];
                if (strcmp(va->name, vb->name) != 0 || va->kind != CG_VAL_NODE || vb->kind != CG_VAL_NODE ||
                    va->producer != i || vb->producer != i || va->producer_out != k || vb->producer_out != k)
                    NEQ("node '%s': output %d", na->name, k);
            }
            for (int k = 0; k < na->n_attrs; k++)
                if (!attr_equal(&na->attrs[k], &nb->attrs[k], why)) return 0;
        }
        if (a->n_outputs != b->n_outputs) NEQ("graph '%s': output counts differ", a->name);
        for (int i = 0; i < a->n_outputs; i++)
            if (strcmp(a->out_names[i], b->out_names[i]) != 0) NEQ("graph '%s': output %d", a->name, i);
    }
    return 1;
}

/* print(parse(x)) is a fixed point and parse(print(m)) equals m. Returns
 * the canonical text (caller frees). */
static char *roundtrip(const char *text) {
    char why[512];
    cg_model *m1 = parse(text);
    char *s1 = print(m1);
    cg_model *m2 = parse(s1);
    char *s2 = print(m2);
    ck_assert_msg(strcmp(s1, s2) == 0, "not a fixed point:\n%s\n---\n%s", s1, s2);
    ck_assert_msg(models_equal(m1, m2, why), "models differ: %s\n%s", why, s1);
    cg_model_free(m1);
    cg_model_free(m2);
    free(s2);
    return s1;
}

static const char *SAMPLE = "# a comment runs to the end of the line\n"
                            "graph encoder {\n"
                            "  input src: i32[B, S]\n"
                            "  input src_len: i32[B]\n"
                            "  param emb: f32[20, 8] = \"src_embed.weight\"\n"
                            "  x = embedding(emb, src)\n"
                            "  enc_rnn: hs, h_n = gru(x, src_len, w_ih, w_hh, b_ih, b_hh) {hidden: 16, layers: 1}\n"
                            "  output hs, h_n\n"
                            "}\n"
                            "\n"
                            "graph decoder {\n"
                            "  input h: f32[B, 16]\n"
                            "  y = relu(h)\n"
                            "  output y\n"
                            "}\n";

/* ------------------------------------------------------------------ */
/* Good inputs                                                         */

START_TEST(test_sample_ir) {
    char buf[128];
    cg_model *m = parse(SAMPLE);
    ck_assert_str_eq(m->filename, "m.cg");
    ck_assert_ptr_eq(m->ctx, &g_ctx);
    ck_assert_int_eq(m->verified, 0);
    ck_assert_uint_eq(cg_model_graph_count(m), 2);
    cg_graph *g = cg_model_graph_at(m, 0);
    ck_assert_str_eq(cg_graph_name(g), "encoder");
    ck_assert_ptr_eq(cg_model_graph(m, "decoder"), cg_model_graph_at(m, 1));
    ck_assert_ptr_null(cg_model_graph(m, "nope"));
    ck_assert_ptr_null(cg_model_graph_at(m, 2));
    ck_assert_int_eq(g->line, 2);
    ck_assert_int_eq(g->col, 7);
    ck_assert_ptr_eq(g->model, m);

    /* symbols, shared across graphs */
    ck_assert_int_eq(m->n_syms, 2);
    ck_assert_str_eq(m->syms[0], "B");
    ck_assert_str_eq(m->syms[1], "S");

    ck_assert_int_eq(cg_graph_input_count(g), 2);
    ck_assert_str_eq(cg_graph_input_name(g, 0), "src");
    ck_assert_str_eq(cg_graph_input_name(g, 1), "src_len");
    ck_assert_ptr_null(cg_graph_input_name(g, 2));
    ck_assert_ptr_null(cg_graph_input_name(g, -1));
    const cg_value *src = val(g, "src");
    ck_assert_int_eq(src->kind, CG_VAL_INPUT);
    ck_assert_int_eq(src->typed, 1);
    ck_assert_int_eq(src->dtype, CG_I32);
    ck_assert_int_eq(src->ndim, 2);
    ck_assert(src->dims[0] == CG_DIM_SYM(0));
    ck_assert(src->dims[1] == CG_DIM_SYM(1));
    ck_assert_int_eq(src->producer, -1);
    ck_assert_int_eq(src->line, 3);
    ck_assert_int_eq(src->col, 9);
    cg_value_type_format(buf, sizeof buf, m, src);
    ck_assert_str_eq(buf, "i32[B, S]");

    const cg_value *emb = val(g, "emb");
    ck_assert_int_eq(emb->kind, CG_VAL_PARAM);
    ck_assert_str_eq(emb->weight, "src_embed.weight");
    ck_assert_int_eq(emb->ndim, 2);
    ck_assert(emb->dims[0] == 20 && emb->dims[1] == 8);
    cg_value_type_format(buf, sizeof buf, m, emb);
    ck_assert_str_eq(buf, "f32[20, 8]");

    ck_assert_int_eq(g->n_nodes, 2);
    cg_node *n0 = g->nodes[0], *n1 = g->nodes[1];
    ck_assert_str_eq(n0->name, "x");
    ck_assert_str_eq(n0->op, "embedding");
    ck_assert_int_eq(n0->n_inputs, 2);
    ck_assert_str_eq(n0->in_names[0], "emb");
    ck_assert_str_eq(n0->in_names[1], "src");
    ck_assert_int_eq(n0->inputs[0], -1);
    ck_assert_int_eq(n0->line, 6);
    ck_assert_int_eq(n0->col, 3);
    ck_assert_int_eq(n0->op_line, 6);
    ck_assert_int_eq(n0->op_col, 7);
    ck_assert_ptr_eq(n0->graph, g);
    ck_assert_int_eq(n0->n_attrs, 0);

    ck_assert_str_eq(n1->name, "enc_rnn");
    ck_assert_str_eq(n1->op, "gru");
    ck_assert_int_eq(n1->n_inputs, 6);
    ck_assert_str_eq(n1->in_names[5], "b_hh");
    ck_assert_int_eq(n1->n_outputs, 2);
    const cg_value *hs = &g->values[n1->outputs[0]], *hn = &g->values[n1->outputs[1]];
    ck_assert_str_eq(hs->name, "hs");
    ck_assert_str_eq(hn->name, "h_n");
    ck_assert_int_eq(hs->kind, CG_VAL_NODE);
    ck_assert_int_eq(hs->typed, 0);
    ck_assert_int_eq(hs->producer, 1);
    ck_assert_int_eq(hn->producer_out, 1);
    ck_assert_int_eq(hs->line, 7);
    ck_assert_int_eq(hs->col, 12);
    ck_assert_int_eq(hn->col, 16);
    ck_assert_int_eq(n1->line, 7);
    ck_assert_int_eq(n1->col, 3);
    ck_assert_int_eq(n1->op_col, 22);
    cg_value_type_format(buf, sizeof buf, m, hs);
    ck_assert_str_eq(buf, "?");
    ck_assert_int_eq(n1->n_attrs, 2);
    ck_assert_str_eq(n1->attrs[0].key, "hidden");
    ck_assert_int_eq(n1->attrs[0].type, CG_ATTR_INT);
    ck_assert_int_eq(n1->attrs[0].i, 16);
    ck_assert_int_eq(n1->attrs[0].line, 7);
    ck_assert_int_eq(n1->attrs[0].col, 63);
    ck_assert_str_eq(n1->attrs[1].key, "layers");
    ck_assert_int_eq(n1->attrs[1].i, 1);

    ck_assert_int_eq(cg_graph_output_count(g), 2);
    ck_assert_str_eq(cg_graph_output_name(g, 0), "hs");
    ck_assert_str_eq(cg_graph_output_name(g, 1), "h_n");
    ck_assert_ptr_null(cg_graph_output_name(g, 2));
    ck_assert_int_eq(g->outputs[0], -1);
    ck_assert_int_eq(g->out_line[1], 8);
    ck_assert_int_eq(g->out_col[0], 10);
    ck_assert_int_eq(g->out_col[1], 14);

    cg_graph *d = cg_model_graph(m, "decoder");
    ck_assert(val(d, "h")->dims[0] == CG_DIM_SYM(0)); /* the same B */
    ck_assert_int_eq(d->line, 11);
    cg_model_free(m);
}
END_TEST

START_TEST(test_sample_print) {
    const char *want = "# a comment runs to the end of the line\n"
                       "graph encoder {\n"
                       "  input src: i32[B, S]\n"
                       "  input src_len: i32[B]\n"
                       "  param emb: f32[20, 8] = \"src_embed.weight\"\n"
                       "  x = embedding(emb, src)\n"
                       "  enc_rnn: hs, h_n = gru(x, src_len, w_ih, w_hh, b_ih, b_hh) {hidden: 16, layers: 1}\n"
                       "  output hs, h_n\n"
                       "}\n"
                       "\n"
                       "graph decoder {\n"
                       "  input h: f32[B, 16]\n"
                       "  y = relu(h)\n"
                       "  output y\n"
                       "}\n";
    char *s = roundtrip(SAMPLE);
    ck_assert_str_eq(s, want);
    free(s);
}
END_TEST

START_TEST(test_canonical_form) {
    /* Messy layout, comments, continuation lines, params before inputs,
     * tabs, CRLF, a BOM: printed in canonical form, the comments kept. */
    const char *text = "\xEF\xBB\xBF# header\r\n"
                       "\n"
                       "graph   g{# comment after brace\r\n"
                       "\tparam w : f32 [ 4 ,\n"
                       "     N ] = \"w.0\"   # trailing comment\n"
                       "   input x:f32[N,4]\n"
                       "\n"
                       "   # comment line inside\n"
                       "   y=matmul( x ,\n"
                       "             w )\n"
                       "   z: out = add(y, b) {\n"
                       "      alpha: 1.0,\n"
                       "      axes: [0,\n"
                       "             -1, ],\n"
                       "   }\n"
                       "   output out , y\n"
                       "}";
    const char *want = "# header\n"
                       "graph g {  # comment after brace\n"
                       "  input x: f32[N, 4]\n"
                       "  param w: f32[4, N] = \"w.0\"  # trailing comment\n"
                       "  # comment line inside\n"
                       "  y = matmul(x, w)\n"
                       "  z: out = add(y, b) {alpha: 1.0, axes: [0, -1]}\n"
                       "  output out, y\n"
                       "}\n";
    char *s = roundtrip(text);
    ck_assert_str_eq(s, want);
    free(s);
}
END_TEST

/* Comments survive printing (clgraph fmt): one on a line of its own goes
 * before the statement after it, one after code at the end of its
 * statement's line; both move with their statement, and the ones before a
 * '}' or at the end of the file stay there. */
START_TEST(test_comments_kept) {
    const char *text = "# top 1\n"
                       "#top 2 (no blank after '#')\n"
                       "graph g {\n"
                       "  # about the output\n"
                       "  output y  # trailing on output\n"
                       "  y = tanh(x) {   # inside a node's attributes\n"
                       "  }\n"
                       "  # about x\n"
                       "  input x: f32[N]\t# tab before\n"
                       "  # before the brace\n"
                       "} # after the brace\n"
                       "graph h {\n"
                       "  input a: f32[1]   #\n"
                       "  output a\n"
                       "}\n"
                       "  # the end, indented\n";
    const char *want = "# top 1\n"
                       "#top 2 (no blank after '#')\n"
                       "graph g {\n"
                       "  # about x\n"
                       "  input x: f32[N]  # tab before\n"
                       "  y = tanh(x)  # inside a node's attributes\n"
                       "  # about the output\n"
                       "  output y  # trailing on output\n"
                       "  # before the brace\n"
                       "}  # after the brace\n"
                       "\n"
                       "graph h {\n"
                       "  input a: f32[1]  #\n"
                       "  output a\n"
                       "}\n"
                       "# the end, indented\n";
    char *s = roundtrip(text);
    ck_assert_str_eq(s, want);
    free(s);
    /* Control bytes in a comment print as spaces, so the printed text
     * parses back to itself (a NUL used to cut the comment short: found by
     * fuzz_parse). */
    static const char ctl[] = "# a\r\0b c\r\n#d\x01\x7f e\x02\ngraph g {\n  input x: f32[1]\n  output x\n}\n";
    cg_model *mc = parse_len(ctl, sizeof ctl - 1);
    char *pc = print(mc);
    ck_assert_str_eq(pc, "# a  b c\n#d   e\ngraph g {\n  input x: f32[1]\n  output x\n}\n");
    cg_model_free(mc);
    free(roundtrip(pc));
    free(pc);
    /* tabs before a control byte at the end of the comment: trimmed too */
    mc = parse("# tabs a\t\t\b\t\ngraph g {\n  input x: f32[1]\n  output x\n}\n");
    pc = print(mc);
    ck_assert_str_eq(pc, "# tabs a\ngraph g {\n  input x: f32[1]\n  output x\n}\n");
    cg_model_free(mc);
    free(pc);
    /* A second after-code comment of one statement (here one on a `dim`
     * line, which prints elsewhere or not at all) prints on a line of its
     * own, so it goes where such a line goes: before the next graph, after
     * the blank line, or a second print moves it (found by fuzz_parse). */
    mc = parse("graph a {\n  input x: f32[1]\n  output x\n}  # t1\ndim t = S / 2  # t2\n"
               "graph b {\n  input x: f32[1]\n  output x\n}\n");
    pc = print(mc);
    ck_assert_str_eq(pc, "graph a {\n  input x: f32[1]\n  output x\n}  # t1\n\n"
                         "# t2\ngraph b {\n  input x: f32[1]\n  output x\n}\n");
    cg_model_free(mc);
    free(roundtrip(pc));
    free(pc);
    /* '#' inside a string or a quoted name is no comment. */
    const char *q = "graph g {\n  param w: f32[1] = \"a#b\"\n  `c#d` = tanh(w)\n  output `c#d`\n}\n";
    s = roundtrip(q);
    ck_assert_str_eq(s, q);
    free(s);
    /* A model made by the builder has none, and attribute lists parsed into
     * a node add none to its model. */
    cg_model *m = parse("graph g {\n  input x: f32[2]\n  y = tanh(x)\n  output y\n}\n");
    ck_assert_int_eq(cg_parse_attr_list("k: 1 # a comment", m->graphs[0]->nodes[0]), CG_OK);
    ck_assert_int_eq(m->n_comments, 0);
    cg_model_free(m);
}
END_TEST

START_TEST(test_attribute_types) {
    const char *text = "graph g {\n"
                       "  y = f(x) {a: 0, b: -7, c: +3, d: 9223372036854775807, e: -9223372036854775808,\n"
                       "    f1: 1.5, f2: -2.5e-3, f3: 1e10, f4: 1E+5, f5: inf, f6: -inf, f7: nan, f8: 0.0,\n"
                       "    f9: -0.0, f10: 0.1, f11: 1., f12: 123456789.125, f13: 2.2250738585072014e-308,\n"
                       "    f14: 4.9e-324, f15: 1.7976931348623157e308, f16: 1e-400,\n"
                       "    s1: \"\", s2: \"a\\\"b\\\\c\\nd\\te\", s3: \"\\u00e9\\u20AC\\ud83d\\ude00\", s4: "
                       "\"h\xc3\xa9llo \xe2\x82\xac\",\n"
                       "    s5: \"# not a comment\", s6: \"\\u0001\x7f\",\n"
                       "    l1: [], l2: [1, -1, 2], l3: [9223372036854775807, -9223372036854775808,],\n"
                       "  }\n"
                       "}\n";
    cg_model *m = parse(text);
    cg_node *n = m->graphs[0]->nodes[0];
    ck_assert_int_eq(n->n_attrs, 30);
    ck_assert_int_eq(attr(n, "a")->i, 0);
    ck_assert_int_eq(attr(n, "b")->i, -7);
    ck_assert_int_eq(attr(n, "c")->i, 3);
    ck_assert(attr(n, "d")->i == INT64_MAX);
    ck_assert(attr(n, "e")->i == INT64_MIN);
    ck_assert_int_eq(attr(n, "a")->type, CG_ATTR_INT);
    ck_assert_int_eq(attr(n, "f1")->type, CG_ATTR_FLOAT);
    ck_assert(attr(n, "f1")->f == 1.5);
    ck_assert(attr(n, "f2")->f == -2.5e-3);
    ck_assert(attr(n, "f3")->f == 1e10);
    ck_assert_int_eq(attr(n, "f3")->type, CG_ATTR_FLOAT);
    ck_assert(attr(n, "f4")->f == 1e5);
    ck_assert(isinf(attr(n, "f5")->f) && attr(n, "f5")->f > 0);
    ck_assert(isinf(attr(n, "f6")->f) && attr(n, "f6")->f < 0);
    ck_assert(isnan(attr(n, "f7")->f));
    ck_assert(attr(n, "f8")->f == 0.0 && !signbit(attr(n, "f8")->f));
    ck_assert(attr(n, "f9")->f == 0.0 && signbit(attr(n, "f9")->f));
    ck_assert(attr(n, "f10")->f == 0.1);
    ck_assert(attr(n, "f11")->f == 1.0);
    ck_assert(attr(n, "f13")->f == 2.2250738585072014e-308);
    ck_assert(attr(n, "f14")->f == 4.9e-324);
    ck_assert(attr(n, "f15")->f == 1.7976931348623157e308);
    ck_assert(attr(n, "f16")->f == 0.0); /* underflow reads as zero */
    ck_assert_int_eq(attr(n, "s1")->type, CG_ATTR_STRING);
    ck_assert_str_eq(attr(n, "s1")->s, "");
    ck_assert_str_eq(attr(n, "s2")->s, "a\"b\\c\nd\te");
    ck_assert_str_eq(attr(n, "s3")->s, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    ck_assert_str_eq(attr(n, "s4")->s, "h\xc3\xa9llo \xe2\x82\xac");
    ck_assert_str_eq(attr(n, "s5")->s, "# not a comment");
    ck_assert_str_eq(attr(n, "s6")->s, "\x01\x7f");
    ck_assert_int_eq(attr(n, "l1")->type, CG_ATTR_INTS);
    ck_assert_int_eq(attr(n, "l1")->n_ints, 0);
    ck_assert_ptr_nonnull(attr(n, "l1")->ints);
    ck_assert_int_eq(attr(n, "l2")->n_ints, 3);
    ck_assert(attr(n, "l2")->ints[0] == 1 && attr(n, "l2")->ints[1] == -1 && attr(n, "l2")->ints[2] == 2);
    ck_assert(attr(n, "l3")->ints[0] == INT64_MAX && attr(n, "l3")->ints[1] == INT64_MIN);
    ck_assert_int_eq(attr(n, "l3")->line, 8);
    ck_assert_int_eq(attr(n, "l3")->col, 29);
    cg_model_free(m);

    const char *want = "graph g {\n"
                       "  y = f(x) {a: 0, b: -7, c: 3, d: 9223372036854775807, e: -9223372036854775808, "
                       "f1: 1.5, f2: -0.0025, f3: 10000000000.0, f4: 100000.0, f5: inf, f6: -inf, f7: nan, f8: 0.0, "
                       "f9: -0.0, f10: 0.1, f11: 1.0, f12: 123456789.125, f13: 2.2250738585072014e-308, "
                       "f14: 5e-324, f15: 1.7976931348623157e+308, f16: 0.0, "
                       "s1: \"\", s2: \"a\\\"b\\\\c\\nd\\te\", s3: \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\", "
                       "s4: \"h\xc3\xa9llo \xe2\x82\xac\", s5: \"# not a comment\", s6: \"\\u0001\\u007f\", "
                       "l1: [], l2: [1, -1, 2], l3: [9223372036854775807, -9223372036854775808]}\n"
                       "}\n";
    char *s = roundtrip(text);
    ck_assert_str_eq(s, want);
    free(s);
}
END_TEST

START_TEST(test_float_shortest) {
    /* Every printed float reads back to the same bits. */
    static const double vals[] = {0.1,
                                  0.2,
                                  0.3,
                                  1.0 / 3.0,
                                  2.0 / 3.0,
                                  1e-7,
                                  123.456,
                                  1e21,
                                  1e22,
                                  5e-324,
                                  1.7976931348623157e308,
                                  3.14159265358979,
                                  100.0,
                                  -1.25,
                                  6.02214076e23,
                                  9007199254740993.0,
                                  0.5,
                                  1e100};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        cg_model *m;
        cg_graph *g;
        cg_node *n;
        const char *in[] = {"x"}, *out[] = {"y"};
        ck_assert_int_eq(cg_model_create(&g_ctx, &m), CG_OK);
        ck_assert_int_eq(cg_model_add_graph(m, "g", &g), CG_OK);
        ck_assert_int_eq(cg_graph_add_node(g, "f", NULL, 1, in, 1, out, &n), CG_OK);
        ck_assert_int_eq(cg_node_set_float(n, "v", vals[i]), CG_OK);
        char *s = print(m);
        cg_model *m2 = parse(s);
        double back = m2->graphs[0]->nodes[0]->attrs[0].f;
        ck_assert_msg(memcmp(&back, &vals[i], sizeof back) == 0, "%.17g printed as %s", vals[i], s);
        ck_assert_int_eq(m2->graphs[0]->nodes[0]->attrs[0].type, CG_ATTR_FLOAT);
        free(s);
        cg_model_free(m);
        cg_model_free(m2);
    }
}
END_TEST

START_TEST(test_shapes) {
    const char *text = "graph g {\n"
                       "  input s: f32[]\n"
                       "  input z: i32[0]\n"
                       "  input big: f32[1, 2, 3, 4, 5, 6, 7, 8]\n"
                       "  input sym: f32[batch.size, _T, 9223372036854775807]\n"
                       "  input kw: f32[inf, nan, graph, input, f32]\n"
                       "  output s\n"
                       "}\n";
    cg_model *m = parse(text);
    cg_graph *g = m->graphs[0];
    ck_assert_int_eq(val(g, "s")->ndim, 0);
    ck_assert_int_eq(val(g, "z")->ndim, 1);
    ck_assert_int_eq(val(g, "z")->dims[0], 0);
    ck_assert_int_eq(val(g, "big")->ndim, 8);
    ck_assert_int_eq(val(g, "big")->dims[7], 8);
    ck_assert(val(g, "sym")->dims[2] == INT64_MAX);
    ck_assert_int_eq(m->n_syms, 7);
    ck_assert_str_eq(m->syms[0], "batch.size");
    ck_assert_str_eq(m->syms[6], "f32");
    char buf[128];
    cg_value_type_format(buf, sizeof buf, m, val(g, "kw"));
    ck_assert_str_eq(buf, "f32[inf, nan, graph, input, f32]");
    cg_value_type_format(buf, sizeof buf, m, val(g, "s"));
    ck_assert_str_eq(buf, "f32[]");
    cg_model_free(m);
    free(roundtrip(text));
}
END_TEST

/* `dim NAME = a op b`: derived dims, evaluated from a binding of the free
 * ones (values by hand). */
START_TEST(test_derived_dims) {
    const char *text = "dim BH = B * 4\n"
                       "dim `S-1` = S -1\n" /* "-1" lexes as a number: still S minus 1 */
                       "dim half = ceil_div(S, 2)\n"
                       "dim m = max(BH, `S-1`)\n"
                       "dim r = 10 % S\n"
                       "graph g {\n"
                       "  input x: f32[B, S]\n"
                       "  y = reshape(x) {shape: [BH, `S-1`, half]}\n"
                       "  output y\n"
                       "}\n";
    cg_model *m = parse(text);
    const int B = cg_model_find_sym(m, "B"), S = cg_model_find_sym(m, "S"), BH = cg_model_find_sym(m, "BH");
    const int S1 = cg_model_find_sym(m, "S-1"), H = cg_model_find_sym(m, "half"), M = cg_model_find_sym(m, "m");
    const int R = cg_model_find_sym(m, "r");
    ck_assert(B >= 0 && S >= 0 && BH >= 0 && S1 >= 0 && H >= 0 && M >= 0 && R >= 0);
    ck_assert(!cg_model_sym_derived(m, B) && !cg_model_sym_derived(m, S) && cg_model_sym_derived(m, BH));
    ck_assert_int_eq(m->sym_defs[BH].op, CG_SYM_MUL);
    ck_assert(m->sym_defs[BH].a == CG_DIM_SYM(B) && m->sym_defs[BH].b == 4);
    ck_assert_int_eq(m->sym_defs[S1].op, CG_SYM_SUB);
    ck_assert(m->sym_defs[S1].a == CG_DIM_SYM(S) && m->sym_defs[S1].b == 1);
    ck_assert_int_eq(m->sym_defs[R].op, CG_SYM_MOD);
    ck_assert(m->sym_defs[R].a == 10 && m->sym_defs[R].b == CG_DIM_SYM(S));
    int64_t v[16];
    for (int i = 0; i < m->n_syms; i++) v[i] = -1;
    v[B] = 3, v[S] = 7;
    ck_assert_int_eq(cg_model_eval_syms(m, v), CG_OK);
    ck_assert(v[BH] == 12 && v[S1] == 6 && v[H] == 4 && v[M] == 12 && v[R] == 3);
    /* a binding that gives a derived dim no size, or another size than an input gave */
    for (int i = 0; i < m->n_syms; i++) v[i] = -1;
    v[B] = 1, v[S] = 0;
    ck_assert_int_eq(cg_model_eval_syms(m, v), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "dim S-1 = S - 1 is negative for this binding (0, 1)");
    for (int i = 0; i < m->n_syms; i++) v[i] = -1;
    v[B] = 2, v[S] = 3, v[BH] = 9;
    ck_assert_int_eq(cg_model_eval_syms(m, v), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "dim BH is bound to 9, but B * 4 = 8");
    cg_model_free(m);
    char *canon = roundtrip(text);
    ck_assert_msg(strstr(canon, "dim `S-1` = S - 1\ndim half = ceil_div(S, 2)\n"), "%s", canon);
    free(canon);
    /* Operands of any length, quoted where needed (a 250-character name
     * used to make the printer fail: found by fuzz_parse). */
    char longname[251], longtext[1200], want[1200];
    memset(longname, 'A', 250);
    longname[250] = 0;
    snprintf(longtext, sizeof longtext, "dim t = max(%s, `a b`)\ngraph g {\n  input x: f32[t, %s]\n  output x\n}\n",
             longname, longname);
    snprintf(want, sizeof want, "dim t = max(%s, `a b`)\n\ngraph g {\n  input x: f32[t, %s]\n  output x\n}\n", longname,
             longname);
    canon = roundtrip(longtext);
    ck_assert_str_eq(canon, want);
    free(canon);
    parse_err("dim X = Y ^ 2\n", "m.cg:1:11: unexpected character '^'");
    parse_err("dim X = 3\n", "m.cg:1:10: expected an operator (+ - * / %) or min, max, ceil_div, got end of line");
    parse_err("dim X = 2 * 2\ndim X = 3 * 1\n", "m.cg:2:5: dim 'X' is already defined");
    parse_err("graph g {\n  input x: f32[B - 1]\n}\n", "m.cg:2:18: unexpected character '-'");
}
END_TEST

/* Variants of a graph: `graph NAME when A op B, ...` (made by the ONNX
 * importer for an If on dims whose branches differ in shape). */
START_TEST(test_graph_variants) {
    const char *text = "dim T = S / 2\n"
                       "graph g when T == 1, B < 8 {\n"
                       "  input x: f32[B, S]\n"
                       "  y = reshape(x) {shape: [B]}\n"
                       "  output y\n"
                       "}\n"
                       "graph g when T != 1 {\n"
                       "  input x: f32[B, S]\n"
                       "  y = relu(x)\n"
                       "  output y\n"
                       "}\n";
    cg_model *m = parse(text);
    ck_assert_int_eq(m->n_graphs, 2);
    const int T = cg_model_find_sym(m, "T"), B = cg_model_find_sym(m, "B"), S = cg_model_find_sym(m, "S");
    const cg_graph *a = m->graphs[0], *b = m->graphs[1];
    ck_assert_ptr_eq(cg_model_graph(m, "g"), a);
    ck_assert_int_eq(a->n_guards, 2);
    ck_assert(a->guards[0].op == CG_GUARD_EQ && a->guards[0].a == CG_DIM_SYM(T) && a->guards[0].b == 1);
    ck_assert(a->guards[1].op == CG_GUARD_LT && a->guards[1].a == CG_DIM_SYM(B) && a->guards[1].b == 8);
    ck_assert(b->n_guards == 1 && b->guards[0].op == CG_GUARD_NE);
    int64_t v[8];
    for (int i = 0; i < m->n_syms; i++) v[i] = -1;
    v[B] = 2, v[S] = 3; /* T = 1 */
    ck_assert_int_eq(cg_model_eval_syms(m, v), CG_OK);
    ck_assert(cg_graph_guards_hold(a, v) && !cg_graph_guards_hold(b, v));
    v[B] = 9, v[T] = -1;
    ck_assert_int_eq(cg_model_eval_syms(m, v), CG_OK);
    ck_assert(!cg_graph_guards_hold(a, v) && !cg_graph_guards_hold(b, v)); /* B < 8 fails, T == 1 */
    char g[100];
    cg_graph_guards_text(a, g, sizeof g);
    ck_assert_str_eq(g, "T == 1, B < 8");
    cg_model_free(m);
    char *canon = roundtrip(text);
    ck_assert_msg(strstr(canon, "dim T = S / 2\n\ngraph g when T == 1, B < 8 {\n"), "%s", canon);
    ck_assert_msg(strstr(canon, "graph g when T != 1 {\n"), "%s", canon);
    free(canon);
    for (int op = CG_GUARD_EQ; op <= CG_GUARD_GE; op++) {
        char t[200];
        snprintf(t, sizeof t, "graph g when 2 %s S {\n  input x: f32[S]\n  output x\n}\n", cg_guard_op_text(op));
        cg_model *mo = parse(t);
        ck_assert_int_eq(mo->graphs[0]->guards[0].op, op);
        cg_model_free(mo);
    }
    /* a mode input's value as a symbol */
    const char *mode = "dim mode.value = value(mode)\n"
                       "\n"
                       "graph g when mode.value == 1 {\n"
                       "  input mode: i64[]\n"
                       "  output mode\n"
                       "}\n";
    m = parse(mode);
    const int mv = cg_model_find_sym(m, "mode.value");
    ck_assert(mv >= 0 && cg_model_sym_input(m, mv) && !strcmp(cg_model_sym_input(m, mv), "mode"));
    ck_assert_ptr_null(cg_model_sym_input(m, cg_model_find_sym(m, "mode.value") + 1));
    cg_model_free(m);
    canon = roundtrip(mode);
    ck_assert_str_eq(canon, mode);
    free(canon);
    parse_err("dim v = value(mode)\ndim v = value(other)\n", "m.cg:2:5: dim 'v' is already defined");
    parse_err("dim v = value 3\n", "m.cg:1:15: expected '(' after value, got '3'");
    parse_err("graph g when T = 1 {\n}\n", "m.cg:1:16: expected a comparison (== != < <= > >=) in the guard, got '='");
    parse_err("graph g when T == 1 }\n", "m.cg:1:21: expected '{' after the guards, got '}'");
    parse_err("graph g {\n}\ngraph g when T == 1 {\n}\n",
              "m.cg:3:7: graph 'g' is already defined at 1:7 (variants of a graph each need guards: 'graph NAME when "
              "...')");
    parse_err("graph g when T == 1 {\n}\ngraph g {\n}\n",
              "m.cg:3:7: graph 'g' is already defined at 1:7 (variants of a graph each need guards: 'graph NAME when "
              "...')");
}
END_TEST

START_TEST(test_keywords_as_names) {
    /* graph/input/param/output are keywords only at the start of a statement
     * and only when not followed by ':', ',' or '='. */
    const char *text = "graph graph {\n"
                       "  input input: f32[]\n"
                       "  param param: f32[] = \"param\"\n"
                       "  input: output = id(input)\n"
                       "  graph, x = split(output) {input: 1, output: 2, graph: 3, param: 4}\n"
                       "  output: y = output(graph)\n"
                       "  output output, param, graph, y\n"
                       "}\n"
                       "graph input {\n"
                       "  input = f()\n"
                       "  param, output = g(input)\n"
                       "  output input, param, output\n"
                       "}\n";
    cg_model *m = parse(text);
    cg_graph *g = m->graphs[0];
    ck_assert_str_eq(g->name, "graph");
    ck_assert_int_eq(g->n_inputs, 1);
    ck_assert_int_eq(val(g, "param")->kind, CG_VAL_PARAM);
    ck_assert_int_eq(g->n_nodes, 3);
    ck_assert_str_eq(g->nodes[0]->name, "input");
    ck_assert_str_eq(g->nodes[1]->name, "graph");
    ck_assert_int_eq(g->nodes[1]->n_attrs, 4);
    ck_assert_str_eq(g->nodes[2]->name, "output");
    ck_assert_str_eq(g->nodes[2]->op, "output");
    ck_assert_int_eq(g->n_outputs, 4);
    g = m->graphs[1];
    ck_assert_str_eq(g->name, "input");
    ck_assert_int_eq(g->n_inputs, 0);
    ck_assert_int_eq(g->n_nodes, 2);
    ck_assert_str_eq(g->nodes[1]->name, "param");
    ck_assert_int_eq(g->n_outputs, 3);
    cg_model_free(m);
    free(roundtrip(text));
}
END_TEST

START_TEST(test_quoted_names) {
    /* Names that are not identifiers (ONNX's onnx::Add_1, /enc/Add, 12) are
     * written `quoted`; a quoted keyword is a name; printing quotes exactly
     * the names that need it, and the text reads back the same. */
    const char *text = "graph `my graph` {\n"
                       "  input `x:0`: f32[`batch size`, 3]\n"
                       "  `/enc/Add`: `onnx::Add_1` = add(`x:0`, `x:0`)\n"
                       "  `12` = relu(`onnx::Add_1`)\n"
                       "  `output` = tanh(`a\\`b\\\\c`)\n"
                       "  `a\\`b\\\\c` = neg(`12`)\n"
                       "  output `output`, `12`, plain\n"
                       "  plain = neg(`output`)\n"
                       "}\n";
    cg_model *m = parse(text);
    cg_graph *g = m->graphs[0];
    ck_assert_str_eq(g->name, "my graph");
    ck_assert_ptr_nonnull(val(g, "x:0"));
    ck_assert_str_eq(m->syms[0], "batch size");
    ck_assert_str_eq(g->nodes[0]->name, "/enc/Add");
    ck_assert_str_eq(g->nodes[0]->in_names[1], "x:0");
    ck_assert_ptr_nonnull(val(g, "onnx::Add_1"));
    ck_assert_ptr_nonnull(val(g, "a`b\\c"));
    ck_assert_str_eq(g->nodes[2]->name, "output");
    ck_assert_int_eq(g->n_outputs, 3);
    cg_model_free(m);
    char *printed = roundtrip(text);
    ck_assert_msg(strstr(printed, "  plain = neg(output)\n") != NULL, "%s", printed);
    ck_assert_msg(strstr(printed, "`/enc/Add`: `onnx::Add_1` = add(`x:0`, `x:0`)\n") != NULL, "%s", printed);
    ck_assert_msg(strstr(printed, "  output = tanh(`a\\`b\\\\c`)\n") != NULL, "%s", printed);
    free(printed);
    parse_err("graph g {\n  input `x: f32[2]\n}", "m.cg:2:9: unterminated quoted name");
    parse_err("graph g {\n  input ``: f32[2]\n}", "m.cg:2:9: empty quoted name");
    parse_err("graph g {\n  y = neg(`a\\qb`)\n}", "m.cg:2:13: invalid escape '\\q' in quoted name");
    parse_err("graph g {\n  y = neg(`a\xff"
              "b`)\n}",
              "m.cg:2:13: invalid UTF-8 in quoted name");
}
END_TEST

START_TEST(test_forward_refs_and_shapes_of_statements) {
    /* Inputs are kept by name and not resolved: forward references and
     * undefined names are the verifier's business. Outputs may come first. */
    const char *text = "graph g {\n"
                       "  output c\n"
                       "  c = add(b, a)\n"
                       "  b = relu(a)\n"
                       "  a = f(undefined_thing, a)\n"
                       "  k = const()\n"
                       "  e = g() {v: 1}\n"
                       "}\n"
                       "graph one { input x: f32[] }\n"
                       "graph empty {}\n"
                       "graph two { output x }\n"
                       "graph three {\n"
                       "}";
    cg_model *m = parse(text);
    ck_assert_int_eq(m->n_graphs, 5);
    cg_graph *g = m->graphs[0];
    ck_assert_int_eq(g->n_nodes, 5);
    ck_assert_str_eq(g->nodes[0]->in_names[0], "b");
    ck_assert_str_eq(g->nodes[2]->in_names[0], "undefined_thing");
    ck_assert_int_eq(g->nodes[3]->n_inputs, 0);
    ck_assert_str_eq(g->out_names[0], "c");
    ck_assert_int_eq(m->graphs[1]->n_inputs, 1);
    ck_assert_int_eq(m->graphs[2]->n_values, 0);
    ck_assert_int_eq(m->graphs[2]->n_outputs, 0);
    ck_assert_int_eq(m->graphs[3]->n_outputs, 1);
    cg_model_free(m);
    char *s = roundtrip(text);
    ck_assert_str_eq(s, "graph g {\n"
                        "  c = add(b, a)\n"
                        "  b = relu(a)\n"
                        "  a = f(undefined_thing, a)\n"
                        "  k = const()\n"
                        "  e = g() {v: 1}\n"
                        "  output c\n"
                        "}\n"
                        "\n"
                        "graph one {\n"
                        "  input x: f32[]\n"
                        "}\n"
                        "\n"
                        "graph empty {\n"
                        "}\n"
                        "\n"
                        "graph two {\n"
                        "  output x\n"
                        "}\n"
                        "\n"
                        "graph three {\n"
                        "}\n");
    free(s);
}
END_TEST

START_TEST(test_node_names) {
    const char *text = "graph g {\n"
                       "  y: y = relu(x)\n" /* same as the default: not printed */
                       "  n.1: a, b = split(y)\n"
                       "  _: c = id(a)\n"
                       "}\n";
    cg_model *m = parse(text);
    cg_graph *g = m->graphs[0];
    ck_assert_str_eq(g->nodes[0]->name, "y");
    ck_assert_str_eq(g->nodes[1]->name, "n.1");
    ck_assert_int_eq(g->nodes[1]->line, 3);
    ck_assert_int_eq(g->nodes[1]->col, 3);
    ck_assert_int_eq(val(g, "a")->col, 8);
    ck_assert_str_eq(g->nodes[2]->name, "_");
    cg_model_free(m);
    char *s = roundtrip(text);
    ck_assert_str_eq(s, "graph g {\n"
                        "  y = relu(x)\n"
                        "  n.1: a, b = split(y)\n"
                        "  _: c = id(a)\n"
                        "}\n");
    free(s);
}
END_TEST

START_TEST(test_large_graph) {
    /* A long chain parses, prints and reads back. */
    size_t cap = 1 << 20, len = 0;
    char *text = malloc(cap);
    len += (size_t)sprintf(text + len, "graph big {\n  input v0: f32[N, 4]\n");
    for (int i = 1; i <= 3000; i++)
        len += (size_t)sprintf(text + len, "  v%d = add(v%d, v0) {k: %d, l: [%d, 2], f: %d.5}\n", i, i - 1, i, -i, i);
    sprintf(text + len, "  output v3000\n}\n");
    cg_model *m = parse(text);
    ck_assert_int_eq(m->graphs[0]->n_nodes, 3000);
    ck_assert_int_eq(m->graphs[0]->n_values, 3001);
    char *s = print(m);
    ck_assert_str_eq(s, text);
    free(s);
    cg_model_free(m);
    free(text);
}
END_TEST

/* The name index (names.c) through many growths: every name finds its own
 * value, names that differ by a character or a prefix do not, and a
 * redefinition after the last growth still names the first place. */
START_TEST(test_name_index) {
    enum { N = 20000 };
    cg_model *m;
    cg_graph *g;
    ck_assert_int_eq(cg_model_create(&g_ctx, &m), CG_OK);
    ck_assert_int_eq(cg_model_new_graph(m, "g", 0, 0, &g), CG_OK);
    int64_t four = 4;
    int32_t idx;
    ck_assert_int_eq(cg_graph_new_input(g, "v0", CG_F32, 1, &four, 1, 1, &idx), CG_OK);
    for (int i = 1; i < N; i++) {
        char in[16], out[16];
        snprintf(in, sizeof in, "v%d", i - 1);
        snprintf(out, sizeof out, "v%d", i);
        const char *ins[] = {in}, *outs[] = {out};
        ck_assert_int_eq(cg_graph_new_node(g, "relu", NULL, 1, ins, 1, outs, i + 1, 3, NULL), CG_OK);
    }
    ck_assert_int_eq(g->n_values, N);
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "v%d", i);
        ck_assert_int_eq(cg_graph_find_value(g, name), i);
        snprintf(name, sizeof name, "v%dx", i);
        ck_assert_int_eq(cg_graph_find_value(g, name), -1);
        snprintf(name, sizeof name, "w%d", i);
        ck_assert_int_eq(cg_graph_find_value(g, name), -1);
    }
    ck_assert_int_eq(cg_graph_find_value(g, "v"), -1);
    ck_assert_int_eq(cg_graph_find_value(g, ""), -1);
    ck_assert_int_eq(cg_graph_find_value(g, NULL), -1);
    const char *ins[] = {"v0"}, *outs[] = {"v12345"};
    ck_assert_int_eq(cg_graph_new_node(g, "relu", NULL, 1, ins, 1, outs, 99999, 3, NULL), CG_ERR_VERIFY);
    ck_assert_str_eq(cg_last_error(), "<builder>:99999:3: value 'v12345' is already defined at 12346:3");
    ck_assert_int_eq(cg_graph_new_input(g, "v19999", CG_F32, 1, &four, 7, 8, &idx), CG_ERR_VERIFY);
    ck_assert_int_eq(idx, -1);
    ck_assert_int_eq(g->n_values, N);
    cg_model_free(m);
}
END_TEST

START_TEST(test_many_attrs_and_inputs) {
    size_t cap = 1 << 20, len = 0;
    char *text = malloc(cap);
    len += (size_t)sprintf(text + len, "graph g {\n  y = f(");
    for (int i = 0; i < 500; i++) len += (size_t)sprintf(text + len, "%sx%d", i ? ", " : "", i);
    len += (size_t)sprintf(text + len, ") {");
    for (int i = 0; i < 500; i++) len += (size_t)sprintf(text + len, "%sa%d: [%d, %d]", i ? ", " : "", i, i, -i);
    sprintf(text + len, "}\n}\n");
    cg_model *m = parse(text);
    ck_assert_int_eq(m->graphs[0]->nodes[0]->n_inputs, 500);
    ck_assert_int_eq(m->graphs[0]->nodes[0]->n_attrs, 500);
    char *s = print(m);
    ck_assert_str_eq(s, text);
    free(s);
    cg_model_free(m);
    free(text);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Bad inputs                                                          */

START_TEST(test_errors_structure) {
    parse_err("", "m.cg: no graph");
    parse_err("\n\n# only a comment\n", "m.cg: no graph");
    parse_err("foo", "m.cg:1:1: expected 'graph' or 'dim', got 'foo'");
    parse_err("\n  42 {", "m.cg:2:3: expected 'graph' or 'dim', got '42'");
    parse_err("graph {", "m.cg:1:7: expected a graph name after 'graph', got '{'");
    parse_err("graph", "m.cg:1:6: expected a graph name after 'graph', got end of file");
    parse_err("graph g\n{\n}", "m.cg:1:8: expected '{' after the graph name, got end of line");
    parse_err("graph g {\n} x", "m.cg:2:3: expected end of line after '}', got 'x'");
    parse_err("graph g {} graph h {}", "m.cg:1:12: expected end of line after '}', got 'graph'");
    parse_err("graph g {\n  output x\n", "m.cg:3:1: expected '}' to close graph 'g', got end of file");
    parse_err("graph g {", "m.cg:1:10: expected '}' to close graph 'g', got end of file");
    parse_err("graph a {\n  graph b {\n  }\n}", "m.cg:2:3: unexpected 'graph' inside graph 'a' (missing '}'?)");
    parse_err("graph g {\n  42\n}", "m.cg:2:3: expected a statement, got '42'");
    parse_err("graph g {\n  {a: 1}\n}", "m.cg:2:3: expected a statement, got '{'");
    parse_err("graph g {\n  \"s\"\n}", "m.cg:2:3: expected a statement, got a string");
    parse_err("graph g {\n}\ngraph h {\n}\ngraph g {\n}\n", "m.cg:5:7: graph 'g' is already defined at 1:7");
}
END_TEST

/* Inputs and params of every dtype: parsed, typed, printed and parsed
 * again to the same model; the builder makes the same text. */
START_TEST(test_every_dtype) {
    static const struct {
        const char *name;
        cg_dtype t;
    } dts[] = {{"f32", CG_F32}, {"i32", CG_I32}, {"f16", CG_F16}, {"bf16", CG_BF16},
               {"i8", CG_I8},   {"u8", CG_U8},   {"i64", CG_I64}, {"bool", CG_BOOL},
               {"i16", CG_I16}, {"u16", CG_U16}, {"u32", CG_U32}, {"u64", CG_U64}};
    enum { N_DT = (int)(sizeof dts / sizeof dts[0]) };
    char text[2048] = "graph g {\n";
    size_t u = strlen(text);
    for (int i = 0; i < N_DT; i++)
        u += (size_t)snprintf(text + u, sizeof text - u, "  input x_%s: %s[B, %d]\n", dts[i].name, dts[i].name, i);
    for (int i = 0; i < N_DT; i++)
        u += (size_t)snprintf(text + u, sizeof text - u, "  param w_%s: %s[%d] = \"%s.weight\"\n", dts[i].name,
                              dts[i].name, i + 1, dts[i].name);
    snprintf(text + u, sizeof text - u, "  output x_f32\n}\n");
    char *s = roundtrip(text);
    ck_assert_str_eq(s, text); /* already canonical */
    cg_model *m = parse(text);
    cg_graph *g = m->graphs[0];
    ck_assert_int_eq(cg_graph_input_count(g), N_DT);
    for (int i = 0; i < N_DT; i++) {
        ck_assert_int_eq(cg_graph_input_dtype(g, i), dts[i].t);
        char vname[32];
        snprintf(vname, sizeof vname, "w_%s", dts[i].name);
        int32_t v = cg_graph_find_value(g, vname);
        ck_assert_int_ge(v, 0);
        ck_assert_int_eq(g->values[v].dtype, dts[i].t);
    }
    ck_assert_int_eq(cg_graph_input_dtype(g, N_DT), 0);
    ck_assert_int_eq(cg_graph_input_dtype(g, -1), 0);
    ck_assert_int_eq(cg_graph_input_dtype(NULL, 0), 0);
    cg_model_free(m);

    /* the builder, every dtype */
    ck_assert_int_eq(cg_model_create(&g_ctx, &m), CG_OK);
    ck_assert_int_eq(cg_model_add_graph(m, "g", &g), CG_OK);
    for (int i = 0; i < N_DT; i++) {
        char name[32];
        cg_dim d[2] = {CG_SYM("B"), CG_DIM(i)};
        snprintf(name, sizeof name, "x_%s", dts[i].name);
        ck_assert_int_eq(cg_graph_add_input(g, name, dts[i].t, 2, d), CG_OK);
    }
    for (int i = 0; i < N_DT; i++) {
        char name[32], weight[32];
        cg_dim d[1] = {CG_DIM(i + 1)};
        snprintf(name, sizeof name, "w_%s", dts[i].name);
        snprintf(weight, sizeof weight, "%s.weight", dts[i].name);
        ck_assert_int_eq(cg_graph_add_param(g, name, weight, dts[i].t, 1, d), CG_OK);
    }
    const char *outs[] = {"x_f32"};
    ck_assert_int_eq(cg_graph_set_outputs(g, 1, outs), CG_OK);
    char *b = print(m);
    ck_assert_str_eq(b, text);
    free(b);
    free(s);
    cg_model_free(m);
}
END_TEST

START_TEST(test_errors_decls) {
    parse_err("graph g {\n  input x: f64[2]\n}", "m.cg:2:12: unknown dtype 'f64' (expected f32, i32, f16, bf16, i8, "
                                                 "u8, i64, bool, i16, u16, u32, u64, f8e4m3fn, f8e4m3fnuz, f8e5m2, "
                                                 "f8e5m2fnuz, f8e8m0, f4e2m1, i4, u4, i2 or u2)");
    parse_err("graph g {\n  input x:F32[2]\n}", "m.cg:2:11: unknown dtype 'F32' (expected f32, i32, f16, bf16, i8, u8, "
                                                "i64, bool, i16, u16, u32, u64, f8e4m3fn, f8e4m3fnuz, f8e5m2, "
                                                "f8e5m2fnuz, f8e8m0, f4e2m1, i4, u4, i2 or u2)");
    parse_err("graph g {\n  param w: int64[2] = \"w\"\n}",
              "m.cg:2:12: unknown dtype 'int64' (expected f32, i32, f16, bf16, i8, u8, i64, bool, i16, u16, u32, u64, "
              "f8e4m3fn, f8e4m3fnuz, f8e5m2, "
              "f8e5m2fnuz, f8e8m0, f4e2m1, i4, u4, i2 or u2)");
    parse_err("graph g {\n  input x: [2]\n}", "m.cg:2:12: expected a type such as f32[2, 3], got '['");
    parse_err("graph g {\n  input x: f32[B x]\n}", "m.cg:2:18: expected ']' or ',' in shape, got 'x'");
    parse_err("graph g {\n  input x: f32 2]\n}", "m.cg:2:16: expected '[' after the dtype, got '2'");
    parse_err("graph g {\n  input x: f32[2,]\n}", "m.cg:2:18: expected a dimension (integer or symbol), got ']'");
    parse_err("graph g {\n  input x: f32[2.5]\n}", "m.cg:2:16: expected a dimension (integer or symbol), got '2.5'");
    parse_err("graph g {\n  input x: f32[-1]\n}", "m.cg:2:16: dimension must be >= 0, got -1");
    parse_err("graph g {\n  input x: f32[1,2,3,4,5,6,7,8,9]\n}", "m.cg:2:32: too many dimensions (at most 8)");
    parse_err("graph g {\n  input x: f32[2\n", "m.cg:3:1: expected ']' or ',' in shape, got end of file");
    parse_err("graph g {\n  input x: f32[2] y\n}", "m.cg:2:19: expected end of line after the statement, got 'y'");
    parse_err("graph g {\n  input x f32[]\n}", "m.cg:2:11: expected ':' after the input name, got 'f32'");
    parse_err("graph g {\n  input\n}", "m.cg:2:8: expected an input name, got end of line");
    parse_err("graph g {\n  input 5: f32[]\n}", "m.cg:2:9: expected an input name, got '5'");
    parse_err("graph g {\n  param w: f32[2]\n}",
              "m.cg:2:18: expected '=' and a weight name after the param type, got end of line");
    parse_err("graph g {\n  param w: f32[2] = w\n}", "m.cg:2:21: expected a weight name string, got 'w'");
    parse_err("graph g {\n  param w: f32[2] = \"\"\n}", "m.cg:2:21: empty weight name");
    parse_err("graph g {\n  param w = \"w\"\n}", "m.cg:2:11: expected ':' after the param name, got '='");
    parse_err("graph g {\n  param\n}", "m.cg:2:8: expected a param name, got end of line");
    parse_err("graph g {\n  output a,\n}", "m.cg:2:12: expected an output name, got end of line");
    parse_err("graph g {\n  output a b\n}", "m.cg:2:12: expected end of line after the statement, got 'b'");
    parse_err("graph g {\n  output\n}", "m.cg:2:9: expected an output name, got end of line");
    parse_err("graph g {\n  output x\n  output y\n}", "m.cg:3:3: graph 'g' already has an output statement at 2:3");
}
END_TEST

START_TEST(test_errors_redefinition) {
    parse_err("graph g {\n  input x: f32[]\n  x = relu(y)\n}", "m.cg:3:3: value 'x' is already defined at 2:9");
    parse_err("graph g {\n  input w: f32[]\n  param w: f32[] = \"w\"\n}",
              "m.cg:3:9: value 'w' is already defined at 2:9");
    parse_err("graph g {\n  x = f()\n  input x: f32[]\n}", "m.cg:3:9: value 'x' is already defined at 2:3");
    parse_err("graph g {\n  a, b, a = split(x)\n}", "m.cg:2:9: value 'a' is already defined at 2:3");
    parse_err("graph g {\n  y = f()\n  n: z, y = f()\n}", "m.cg:3:9: value 'y' is already defined at 2:3");
    parse_err("graph g {\n  n: y = f()\n  n: y = f()\n}", "m.cg:3:6: value 'y' is already defined at 2:6");
    parse_err("graph g {\n  y = f(x) {a: 1, a: 2}\n}", "m.cg:2:19: attribute 'a' is already set at 2:13");
    parse_err("graph g {\n  y = f(x) {a: 1,\n     b: \"x\",\n     a: [1]}\n}",
              "m.cg:4:6: attribute 'a' is already set at 2:13");
    /* Same names in different graphs are fine. */
    cg_model *m = parse("graph a {\n  input x: f32[]\n}\ngraph b {\n  input x: f32[]\n}\n");
    cg_model_free(m);
}
END_TEST

START_TEST(test_errors_nodes) {
    parse_err("graph g {\n  y = (x)\n}", "m.cg:2:7: expected an operator name after '=', got '('");
    parse_err("graph g {\n  y =\n}", "m.cg:2:6: expected an operator name after '=', got end of line");
    parse_err("graph g {\n  y = f x\n}", "m.cg:2:9: expected '(' after the operator name, got 'x'");
    parse_err("graph g {\n  y z = f(x)\n}", "m.cg:2:5: expected '=' or ',' after the node outputs, got 'z'");
    parse_err("graph g {\n  relu(x)\n}", "m.cg:2:7: expected '=' or ',' after the node outputs, got '('");
    parse_err("graph g {\n  y\n}", "m.cg:2:4: expected '=' or ',' after the node outputs, got end of line");
    parse_err("graph g {\n  n: = f(x)\n}", "m.cg:2:6: expected an output name after the node name, got '='");
    parse_err("graph g {\n  n: a: b = f(x)\n}", "m.cg:2:7: expected '=' or ',' after the node outputs, got ':'");
    parse_err("graph g {\n  a, = f(x)\n}", "m.cg:2:6: expected an output name, got '='");
    parse_err("graph g {\n  y = f(x,)\n}", "m.cg:2:11: expected an input name, got ')'");
    parse_err("graph g {\n  y = f(,x)\n}", "m.cg:2:9: expected an input name, got ','");
    parse_err("graph g {\n  y = f(x y)\n}", "m.cg:2:11: expected ')' or ',' in inputs, got 'y'");
    parse_err("graph g {\n  y = f(x) z\n}", "m.cg:2:12: expected end of line after the statement, got 'z'");
    parse_err("graph g {\n  y = f(x)\n  {a: 1}\n}", "m.cg:3:3: expected a statement, got '{'");
    parse_err("graph g {\n  y = f(x", "m.cg:2:10: expected ')' or ',' in inputs, got end of file");
    parse_err("graph g {\n  y = f(\n", "m.cg:3:1: expected an input name, got end of file");
    parse_err("graph g {\n  y = f(((((((((((((((((((((((((((((((((((\n}", "m.cg:2:9: expected an input name, got '('");
}
END_TEST

START_TEST(test_errors_attrs) {
    parse_err("graph g {\n  y = f(x) {a 1}\n}", "m.cg:2:15: expected ':' after the attribute name, got '1'");
    parse_err("graph g {\n  y = f(x) {a: }\n}", "m.cg:2:16: expected an attribute value, got '}'");
    parse_err("graph g {\n  y = f(x) {a: b}\n}", "m.cg:2:16: expected an attribute value, got 'b'");
    parse_err("graph g {\n  y = f(x) {a: infinity}\n}", "m.cg:2:16: expected an attribute value, got 'infinity'");
    parse_err("graph g {\n  y = f(x) {a: 1 b: 2}\n}", "m.cg:2:18: expected '}' or ',' in attributes, got 'b'");
    parse_err("graph g {\n  y = f(x) {,}\n}", "m.cg:2:13: expected an attribute name, got ','");
    parse_err("graph g {\n  y = f(x) {a: 1,,}\n}", "m.cg:2:18: expected an attribute name, got ','");
    parse_err("graph g {\n  y = f(x) {1: 2}\n}", "m.cg:2:13: expected an attribute name, got '1'");
    parse_err("graph g {\n  y = f(x) {\"a\": 2}\n}", "m.cg:2:13: expected an attribute name, got a string");
    parse_err("graph g {\n  y = f(x) {a: [1, 2.5]}\n}",
              "m.cg:2:20: expected an integer or a dim name in the list, got '2.5'");
    parse_err("graph g {\n  y = f(x) {a: [1 2]}\n}", "m.cg:2:19: expected ']' or ',' in the list, got '2'");
    parse_err("graph g {\n  y = f(x) {a: [,]}\n}", "m.cg:2:17: expected an integer or a dim name in the list, got ','");
    parse_err("graph g {\n  y = f(x) {a: [[1]]}\n}",
              "m.cg:2:17: expected an integer or a dim name in the list, got '['");
    parse_err("graph g {\n  y = f(x) {a: [\"s\"]}\n}",
              "m.cg:2:17: expected an integer or a dim name in the list, got a string");
    parse_err("graph g {\n  y = f(x) {a: 1", "m.cg:2:17: expected '}' or ',' in attributes, got end of file");
    parse_err("graph g {\n  y = f(x) {a: [1,\n",
              "m.cg:3:1: expected an integer or a dim name in the list, got end of file");
    parse_err("graph g {\n  y = f(x) {a: {}}\n}", "m.cg:2:16: expected an attribute value, got '{'");
}
END_TEST

START_TEST(test_errors_lexical) {
    parse_err("graph g {\n  y = f(x) @\n}", "m.cg:2:12: unexpected character '@'");
    parse_err("graph g {\n\ty = f(x) @\n}", "m.cg:2:11: unexpected character '@'"); /* a tab counts 1 */
    parse_err("graph g {\r\n  y = f(x) ;\r\n}", "m.cg:2:12: unexpected character ';'");
    parse_err("graph g {\n  y = f(x) {a: -}\n}", "m.cg:2:16: unexpected character '-'");
    parse_err("graph g {\n  y = f(x) {a: -infinity}\n}", "m.cg:2:16: unexpected character '-'");
    parse_err("graph g {\n  y = f(x) {a: +inf}\n}", "m.cg:2:16: unexpected character '+'");
    parse_err("graph g {\n  y = f(x) {a: .5}\n}", "m.cg:2:16: unexpected character '.'");
    parse_err("graph g {\n  y\xc3\xa9 = f(x)\n}", "m.cg:2:4: unexpected character '\\xc3'");
    parse_err_len("graph g {\n  y = f(x)\0\n}", 23, "m.cg:2:11: unexpected character '\\x00'");
    parse_err_len("\0", 1, "m.cg:1:1: unexpected character '\\x00'");
    parse_err("graph g {\n  y = f(x) {n: 12abc}\n}", "m.cg:2:16: invalid number '12abc'");
    parse_err("graph g {\n  y = f(x) {n: 1.5.3}\n}", "m.cg:2:16: invalid number '1.5.3'");
    parse_err("graph g {\n  y = f(x) {n: 1e}\n}", "m.cg:2:16: invalid number '1e'");
    parse_err("graph g {\n  y = f(x) {n: 1e+}\n}", "m.cg:2:16: invalid number '1e'");
    parse_err("graph g {\n  input x: f32[2x]\n}", "m.cg:2:16: invalid number '2x'");
    parse_err("graph g {\n  y = f(x) {n: 9223372036854775808}\n}",
              "m.cg:2:16: integer '9223372036854775808' is out of range");
    parse_err("graph g {\n  y = f(x) {n: -9223372036854775809}\n}",
              "m.cg:2:16: integer '-9223372036854775809' is out of range");
    parse_err("graph g {\n  input x: f32[99999999999999999999]\n}",
              "m.cg:2:16: integer '99999999999999999999' is out of range");
    parse_err("graph g {\n  y = f(x) {n: [1, 123456789012345678901234567890123456789012345]}\n}",
              "m.cg:2:20: integer '1234567890123456789012345678901234567890...' is out of range");
    parse_err("graph g {\n  y = f(x) {n: 1e999}\n}", "m.cg:2:16: float '1e999' is out of range");
    parse_err("graph g {\n  y = f(x) {n: -1.5e400}\n}", "m.cg:2:16: float '-1.5e400' is out of range");
    parse_err("graph g {\n  y = f(x) {a: 1} x2345678901234567890123456789012345678901234567890\n}",
              "m.cg:2:19: expected end of line after the statement, got "
              "'x234567890123456789012345678901234567890...'");
}
END_TEST

START_TEST(test_errors_strings) {
    parse_err("graph g {\n  param w: f32[2] = \"abc\n}", "m.cg:2:21: unterminated string");
    parse_err("graph g {\n  y = f() {s: \"abc", "m.cg:2:15: unterminated string");
    parse_err("graph g {\n  y = f() {s: \"abc\\", "m.cg:2:15: unterminated string");
    parse_err("graph g {\n  y = f() {s: \"abc\\\n\"}\n}", "m.cg:2:15: unterminated string");
    parse_err("\"", "m.cg:1:1: unterminated string");
    parse_err("graph g {\n  y = f() {s: \"a\\qb\"}\n}", "m.cg:2:17: invalid escape '\\q' in string");
    parse_err("graph g {\n  y = f() {s: \"a\\\x01\"}\n}", "m.cg:2:17: invalid escape in string");
    parse_err("graph g {\n  y = f() {s: \"\\u12\"}\n}",
              "m.cg:2:16: invalid \\u escape in string (expected 4 hex digits)");
    parse_err("graph g {\n  y = f() {s: \"\\u12", "m.cg:2:16: invalid \\u escape in string (expected 4 hex digits)");
    parse_err("graph g {\n  y = f() {s: \"\\uzzzz\"}\n}",
              "m.cg:2:16: invalid \\u escape in string (expected 4 hex digits)");
    parse_err("graph g {\n  y = f() {s: \"ab\\u0000\"}\n}", "m.cg:2:18: \\u0000 is not allowed in a string");
    parse_err("graph g {\n  y = f() {s: \"\\ud800x\"}\n}", "m.cg:2:16: unpaired surrogate '\\uD800' in string");
    parse_err("graph g {\n  y = f() {s: \"\\ud800\\u0041\"}\n}", "m.cg:2:16: unpaired surrogate '\\uD800' in string");
    parse_err("graph g {\n  y = f() {s: \"\\udc00\"}\n}", "m.cg:2:16: unpaired surrogate '\\uDC00' in string");
    parse_err("graph g {\n  y = f() {s: \"\\ud800", "m.cg:2:16: unpaired surrogate '\\uD800' in string");
    parse_err_len("graph g {\n  y = f() {s: \"a\0b\"}\n}", 32, "m.cg:2:17: NUL byte in string");
    parse_err("graph g {\n  y = f() {s: \"a\xff\"}\n}", "m.cg:2:17: invalid UTF-8 in string");
    parse_err("graph g {\n  y = f() {s: \"a\xc0\x80\"}\n}", "m.cg:2:17: invalid UTF-8 in string");
    parse_err("graph g {\n  y = f() {s: \"a\xed\xa0\x80\"}\n}", "m.cg:2:17: invalid UTF-8 in string");
    parse_err("graph g {\n  y = f() {s: \"a\xf4\x90\x80\x80\"}\n}", "m.cg:2:17: invalid UTF-8 in string");
    parse_err("graph g {\n  y = f() {s: \"ab\xe2\x82\"}\n}", "m.cg:2:18: invalid UTF-8 in string");
    parse_err("graph g {\n  y = f() {s: \"ab\xe2\x82", "m.cg:2:18: invalid UTF-8 in string");
}
END_TEST

START_TEST(test_truncations) {
    /* Every prefix of a valid text either parses or fails cleanly with a
     * located message; never crashes or leaks. */
    const char *text = SAMPLE;
    size_t n = strlen(text);
    for (size_t k = 0; k < n; k++) {
        char *copy = malloc(k + 1); /* exact size so ASan sees over-reads */
        memcpy(copy, text, k);
        cg_model *m = NULL;
        cg_status st = cg_model_parse(&g_ctx, copy, k, "m.cg", &m);
        if (st == CG_OK) {
            copy[k] = 0;
            free(roundtrip(copy));
            cg_model_free(m);
        } else {
            ck_assert_int_eq(st, CG_ERR_PARSE);
            ck_assert_ptr_null(m);
            ck_assert_msg(strncmp(cg_last_error(), "m.cg:", 5) == 0, "%s", cg_last_error());
            ck_assert_ptr_null(strchr(cg_last_error(), '\n'));
        }
        free(copy);
    }
}
END_TEST

START_TEST(test_api_arguments) {
    cg_model *m = (cg_model *)1;
    ck_assert_int_eq(cg_model_parse(NULL, "graph g {}", 10, "x", &m), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(m);
    ck_assert_int_eq(cg_model_parse(&g_ctx, "graph g {}", 10, "x", NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_model_parse(&g_ctx, NULL, 10, "x", &m), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_model_parse(&g_ctx, NULL, 0, "x", &m), CG_ERR_PARSE);
    ck_assert_str_eq(cg_last_error(), "x: no graph");
    /* Without a file name, and through the internal entry without context. */
    ck_assert_int_eq(cg_parse_text(NULL, "graph", 5, NULL, &m), CG_ERR_PARSE);
    ck_assert_str_eq(cg_last_error(), "<text>:1:6: expected a graph name after 'graph', got end of file");
    ck_assert_int_eq(cg_parse_text(NULL, "graph g {}", 10, NULL, &m), CG_OK);
    ck_assert_str_eq(m->filename, "<text>");
    ck_assert_ptr_null(m->ctx);
    cg_model_free(m);
    /* The length bounds the text: what follows is not read. */
    ck_assert_int_eq(cg_model_parse(&g_ctx, "graph g {}garbage", 10, "x", &m), CG_OK);
    cg_model_free(m);
    char *s = (char *)1;
    ck_assert_int_eq(cg_model_print(NULL, &s), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(cg_model_load(&g_ctx, NULL, &m), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_model_create(NULL, &m), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(m);
    cg_model_free(NULL);
    ck_assert_uint_eq(cg_model_graph_count(NULL), 0);
    ck_assert_ptr_null(cg_model_graph_at(NULL, 0));
    ck_assert_ptr_null(cg_model_graph(NULL, "g"));
    ck_assert_ptr_null(cg_graph_name(NULL));
    ck_assert_int_eq(cg_graph_input_count(NULL), 0);
    ck_assert_int_eq(cg_graph_output_count(NULL), 0);
    ck_assert_ptr_null(cg_graph_input_name(NULL, 0));
    ck_assert_ptr_null(cg_graph_output_name(NULL, 0));
}
END_TEST

START_TEST(test_load) {
    char path[] = "/tmp/clgraph_test_parse_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char *text = "graph g {\n  input x: f32[2]\n  y = relu(x)\n  output y\n}\n";
    ck_assert_int_eq(write(fd, text, strlen(text)), (int)strlen(text));
    close(fd);
    cg_model *m = NULL;
    ck_assert_int_eq(cg_model_load(&g_ctx, path, &m), CG_OK);
    ck_assert_str_eq(m->filename, path);
    char *s = print(m);
    ck_assert_str_eq(s, text);
    free(s);
    cg_model_free(m);

    /* Messages carry the path. */
    FILE *f = fopen(path, "w");
    fputs("graph g {\n  input x: f32[2\n}\n", f);
    fclose(f);
    ck_assert_int_eq(cg_model_load(&g_ctx, path, &m), CG_ERR_PARSE);
    char want[256];
    snprintf(want, sizeof want, "%s:3:1: expected ']' or ',' in shape, got '}'", path);
    ck_assert_str_eq(cg_last_error(), want);
    unlink(path);

    ck_assert_int_eq(cg_model_load(&g_ctx, path, &m), CG_ERR_IO);
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
    ck_assert_str_eq(cg_last_error(), want);
    ck_assert_ptr_null(m);

    ck_assert_int_eq(cg_model_load(&g_ctx, "/tmp", &m), CG_ERR_IO);
    ck_assert_str_eq(cg_last_error(), "/tmp: not a regular file (a directory)");
    /* Neither read forever nor waited on (issue 29): a device, a FIFO. */
    ck_assert_int_eq(cg_model_load(&g_ctx, "/dev/zero", &m), CG_ERR_IO);
    ck_assert_str_eq(cg_last_error(), "/dev/zero: not a regular file (a character device)");
    char fifo[64];
    snprintf(fifo, sizeof fifo, "%s.fifo", path);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(cg_model_load(&g_ctx, fifo, &m), CG_ERR_IO);
    snprintf(want, sizeof want, "%s: not a regular file (a FIFO)", fifo);
    ck_assert_str_eq(cg_last_error(), want);
    unlink(fifo);
    /* Over the graph text's cap (a sparse file: nothing is written). */
    f = fopen(path, "w");
    ck_assert_int_eq(ftruncate(fileno(f), (off_t)CG_MAX_TEXT_FILE + 1), 0);
    fclose(f);
    ck_assert_int_eq(cg_model_load(&g_ctx, path, &m), CG_ERR_IO);
    snprintf(want, sizeof want, "%s: larger than %zu bytes", path, CG_MAX_TEXT_FILE);
    ck_assert_str_eq(cg_last_error(), want);
    unlink(path);

    /* A file larger than the first read buffer. */
    f = fopen(path, "w");
    fputs("graph big {\n  input v0: f32[]\n", f);
    for (int i = 1; i <= 4000; i++) fprintf(f, "  v%d = add(v%d, v0) {comment: \"%040d\"}\n", i, i - 1, i);
    fputs("  output v4000\n}\n", f);
    fclose(f);
    ck_assert_int_eq(cg_model_load(&g_ctx, path, &m), CG_OK);
    ck_assert_int_eq(m->graphs[0]->n_nodes, 4000);
    ck_assert_str_eq(m->graphs[0]->nodes[3999]->attrs[0].s, "0000000000000000000000000000000000004000");
    cg_model_free(m);
    unlink(path);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Attribute lists (decompositions)                                    */

START_TEST(test_attr_list) {
    cg_node *n = calloc(1, sizeof *n); /* as the executor makes them: no graph */
    ck_assert_int_eq(cg_parse_attr_list("axis: 1, transpose_b: 1", n), CG_OK);
    ck_assert_int_eq(n->n_attrs, 2);
    ck_assert_str_eq(n->attrs[1].key, "transpose_b");
    ck_assert_int_eq(cg_parse_attr_list("", n), CG_OK);
    ck_assert_int_eq(cg_parse_attr_list(NULL, n), CG_OK);
    ck_assert_int_eq(cg_parse_attr_list("  \n ", n), CG_OK);
    ck_assert_int_eq(cg_parse_attr_list("s: \"x\",\n  l: [1, 2],\n f: -1.5e3,", n), CG_OK);
    ck_assert_int_eq(n->n_attrs, 5);
    ck_assert_str_eq(n->attrs[2].s, "x");
    ck_assert_int_eq(n->attrs[3].n_ints, 2);
    ck_assert(n->attrs[4].f == -1500.0);
    ck_assert_int_eq(n->attrs[4].line, 3);

    /* Failures leave the node as it was. */
    ck_assert_int_eq(cg_parse_attr_list("a: 1, b: 2, axis: 3", n), CG_ERR_PARSE);
    ck_assert_str_eq(cg_last_error(), "<attrs>:1:13: attribute 'axis' is already set at 1:1");
    ck_assert_int_eq(n->n_attrs, 5);
    ck_assert_int_eq(cg_parse_attr_list("c: 1, d: x", n), CG_ERR_PARSE);
    ck_assert_str_eq(cg_last_error(), "<attrs>:1:10: expected an attribute value, got 'x'");
    ck_assert_int_eq(n->n_attrs, 5);
    ck_assert_int_eq(cg_parse_attr_list("c: 1 d: 2", n), CG_ERR_PARSE);
    ck_assert_str_eq(cg_last_error(), "<attrs>:1:6: expected ',' or the end of the attribute list, got 'd'");
    ck_assert_int_eq(cg_parse_attr_list("{c: 1}", n), CG_ERR_PARSE);
    ck_assert_str_eq(cg_last_error(), "<attrs>:1:1: expected an attribute name, got '{'");
    ck_assert_int_eq(cg_parse_attr_list("c: \"x", n), CG_ERR_PARSE);
    ck_assert_str_eq(cg_last_error(), "<attrs>:1:4: unterminated string");
    ck_assert_int_eq(n->n_attrs, 5);
    ck_assert_int_eq(cg_parse_attr_list("c: 1", NULL), CG_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < n->n_attrs; i++) cg_attr_clear(&n->attrs[i]);
    free(n->attrs);
    free(n);

    /* On a graph node, appended after the text's attributes. */
    cg_model *m = parse("graph g {\n  y = f(x) {a: 1}\n}\n");
    cg_node *gn = m->graphs[0]->nodes[0];
    ck_assert_int_eq(cg_parse_attr_list("b: [3]", gn), CG_OK);
    ck_assert_int_eq(cg_parse_attr_list("a: 2", gn), CG_ERR_PARSE);
    ck_assert_str_eq(cg_last_error(), "<attrs>:1:1: attribute 'a' is already set at 2:13");
    char *s = print(m);
    ck_assert_str_eq(s, "graph g {\n  y = f(x) {a: 1, b: [3]}\n}\n");
    free(s);
    cg_model_free(m);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Builder API                                                         */

static const char *BUILT_TEXT =
    "graph encoder {\n"
    "  input src: i32[B, S]\n"
    "  input src_len: i32[B]\n"
    "  param emb: f32[20, 8] = \"src_embed.weight\"\n"
    "  x = embedding(emb, src)\n"
    "  enc_rnn: hs, h_n = gru(x, src_len, w_ih, w_hh, b_ih, b_hh) "
    "{hidden: 16, scale: 0.5, mode: \"fa\\\"st\\n\", perm: [1, 0, -2], none: [], big: -9223372036854775808}\n"
    "  output hs, h_n\n"
    "}\n"
    "\n"
    "graph decoder {\n"
    "  input h: f32[B, 16]\n"
    "  y = relu(h)\n"
    "  output y\n"
    "}\n";

static cg_model *build_sample(void) {
    cg_model *m;
    cg_graph *g, *d;
    cg_node *n;
    ck_assert_int_eq(cg_model_create(&g_ctx, &m), CG_OK);
    ck_assert_str_eq(m->filename, "<builder>");
    ck_assert_int_eq(cg_model_add_graph(m, "encoder", &g), CG_OK);
    cg_dim bs[] = {CG_SYM("B"), CG_SYM("S")};
    ck_assert_int_eq(cg_graph_add_input(g, "src", CG_I32, 2, bs), CG_OK);
    ck_assert_int_eq(cg_graph_add_input(g, "src_len", CG_I32, 1, bs), CG_OK);
    cg_dim e[] = {CG_DIM(20), CG_DIM(8)};
    ck_assert_int_eq(cg_graph_add_param(g, "emb", "src_embed.weight", CG_F32, 2, e), CG_OK);
    const char *ein[] = {"emb", "src"}, *eout[] = {"x"};
    ck_assert_int_eq(cg_graph_add_node(g, "embedding", NULL, 2, ein, 1, eout, &n), CG_OK);
    ck_assert_str_eq(n->name, "x");
    const char *gin[] = {"x", "src_len", "w_ih", "w_hh", "b_ih", "b_hh"}, *gout[] = {"hs", "h_n"};
    ck_assert_int_eq(cg_graph_add_node(g, "gru", "enc_rnn", 6, gin, 2, gout, &n), CG_OK);
    ck_assert_int_eq(cg_node_set_int(n, "hidden", 16), CG_OK);
    ck_assert_int_eq(cg_node_set_float(n, "scale", 0.5), CG_OK);
    ck_assert_int_eq(cg_node_set_string(n, "mode", "fa\"st\n"), CG_OK);
    int64_t perm[] = {1, 0, -2};
    ck_assert_int_eq(cg_node_set_ints(n, "perm", 3, perm), CG_OK);
    ck_assert_int_eq(cg_node_set_ints(n, "none", 0, NULL), CG_OK);
    ck_assert_int_eq(cg_node_set_int(n, "big", INT64_MIN), CG_OK);
    ck_assert_int_eq(cg_graph_set_outputs(g, 2, gout), CG_OK);

    ck_assert_int_eq(cg_model_add_graph(m, "decoder", &d), CG_OK);
    cg_dim hd[] = {CG_SYM("B"), CG_DIM(16)};
    ck_assert_int_eq(cg_graph_add_input(d, "h", CG_F32, 2, hd), CG_OK);
    const char *rin[] = {"h"}, *rout[] = {"y"};
    ck_assert_int_eq(cg_graph_add_node(d, "relu", NULL, 1, rin, 1, rout, NULL), CG_OK);
    ck_assert_int_eq(cg_graph_set_outputs(d, 1, rout), CG_OK);
    return m;
}

START_TEST(test_builder_matches_text) {
    char why[512];
    cg_model *b = build_sample();
    ck_assert_int_eq(b->n_syms, 2);
    cg_model *t = parse(BUILT_TEXT);
    char *sb = print(b), *st = print(t);
    ck_assert_str_eq(sb, st);
    ck_assert_str_eq(sb, BUILT_TEXT);
    ck_assert_msg(models_equal(b, t, why), "%s", why);
    /* Builder positions are 0. */
    ck_assert_int_eq(b->graphs[0]->values[0].line, 0);
    ck_assert_int_eq(b->graphs[0]->nodes[1]->attrs[0].line, 0);
    ck_assert_int_eq(cg_graph_input_count(b->graphs[0]), 2);
    ck_assert_str_eq(cg_graph_input_name(b->graphs[0], 1), "src_len");
    ck_assert_str_eq(cg_graph_output_name(b->graphs[0], 1), "h_n");
    free(sb);
    free(st);
    cg_model_free(b);
    cg_model_free(t);
}
END_TEST

START_TEST(test_builder_params_after_nodes) {
    /* The printer puts inputs, then params, then nodes: the builder may
     * declare them in any order. */
    cg_model *m;
    cg_graph *g;
    ck_assert_int_eq(cg_model_create(&g_ctx, &m), CG_OK);
    ck_assert_int_eq(cg_model_add_graph(m, "g", &g), CG_OK);
    const char *in[] = {"w", "x"}, *out[] = {"y"};
    ck_assert_int_eq(cg_graph_add_node(g, "matmul", "mm", 2, in, 1, out, NULL), CG_OK);
    cg_dim d[] = {CG_DIM(4), CG_DIM(4)};
    ck_assert_int_eq(cg_graph_add_param(g, "w", "weights/w:0", CG_F32, 2, d), CG_OK);
    ck_assert_int_eq(cg_graph_add_input(g, "x", CG_F32, 0, NULL), CG_OK);
    ck_assert_int_eq(cg_graph_set_outputs(g, 1, out), CG_OK);
    /* set_outputs replaces the list */
    const char *out2[] = {"y", "x"};
    ck_assert_int_eq(cg_graph_set_outputs(g, 2, out2), CG_OK);
    char *s = print(m);
    ck_assert_str_eq(s, "graph g {\n"
                        "  input x: f32[]\n"
                        "  param w: f32[4, 4] = \"weights/w:0\"\n"
                        "  mm: y = matmul(w, x)\n"
                        "  output y, x\n"
                        "}\n");
    char *s2 = roundtrip(s);
    ck_assert_str_eq(s, s2);
    free(s);
    free(s2);
    cg_model_free(m);
}
END_TEST

START_TEST(test_builder_errors) {
    cg_model *m;
    cg_graph *g, *g2;
    cg_node *n;
    ck_assert_int_eq(cg_model_create(&g_ctx, &m), CG_OK);
    ck_assert_int_eq(cg_model_add_graph(m, "g", &g), CG_OK);

    ck_assert_int_eq(cg_model_add_graph(m, "g", &g2), CG_ERR_VERIFY);
    ck_assert_str_eq(cg_last_error(), "<builder>: graph 'g' is already defined");
    ck_assert_ptr_null(g2);
    ck_assert_int_eq(cg_model_add_graph(m, "1g\xff", &g2), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_model_add_graph: invalid graph name '1g?'");
    ck_assert_int_eq(cg_model_add_graph(m, "", &g2), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_model_add_graph(m, NULL, &g2), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_model_add_graph: invalid graph name '(null)'");
    ck_assert_int_eq(cg_model_add_graph(m, "a b\xc0\x80", &g2), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_model_add_graph: invalid graph name 'a b?"
                                      "?'");
    ck_assert_int_eq(cg_model_add_graph(NULL, "h", &g2), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_model_add_graph(m, "0123456789012345678901234567890123456789012345678901234567890\xff", &g2),
                     CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(),
                     "cg_model_add_graph: invalid graph name '012345678901234567890123456789012345678901234567...'");
    ck_assert_int_eq(m->n_graphs, 1);
    /* any other name is taken (printed `quoted`): ONNX's names */
    ck_assert_int_eq(cg_model_add_graph(m, "1 g", &g2), CG_OK);
    ck_assert_int_eq(m->n_graphs, 2);

    cg_dim d1[] = {CG_DIM(2)};
    ck_assert_int_eq(cg_graph_add_input(g, "x", CG_F32, 1, d1), CG_OK);
    ck_assert_int_eq(cg_graph_add_input(g, "x", CG_F32, 1, d1), CG_ERR_VERIFY);
    ck_assert_str_eq(cg_last_error(), "<builder>: value 'x' is already defined");
    ck_assert_int_eq(cg_graph_add_param(g, "x", "w", CG_F32, 1, d1), CG_ERR_VERIFY);
    ck_assert_str_eq(cg_last_error(), "<builder>: value 'x' is already defined");
    ck_assert_int_eq(cg_graph_add_input(g, "x-1\xff", CG_F32, 1, d1), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_graph_add_input: invalid value name 'x-1?'");
    ck_assert_int_eq(cg_graph_add_input(g, "y", (cg_dtype)23, 1, d1), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_graph_add_input: invalid dtype 23 for 'y'");
    ck_assert_int_eq(cg_graph_add_param(g, "y", "w", (cg_dtype)0, 1, d1), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_graph_add_param: invalid dtype 0 for 'y'");
    ck_assert_int_eq(cg_graph_add_input(g, "y", CG_F32, 9, NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_graph_add_input: 'y' has 9 dimensions (0 to 8 allowed)");
    ck_assert_int_eq(cg_graph_add_input(g, "y", CG_F32, -1, NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_graph_add_input(g, "y", CG_F32, 1, NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_graph_add_input: dims is NULL");
    cg_dim neg[] = {CG_DIM(-3)};
    ck_assert_int_eq(cg_graph_add_input(g, "y", CG_F32, 1, neg), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_graph_add_input: dimension 0 of 'y' is negative (-3)");
    cg_dim badsym[] = {CG_DIM(1), CG_SYM("")};
    ck_assert_int_eq(cg_graph_add_input(g, "y", CG_F32, 2, badsym), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_graph_add_input: invalid symbol name '' in dimension 1 of 'y'");
    ck_assert_int_eq(cg_graph_add_input(NULL, "y", CG_F32, 1, d1), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_graph_add_input: graph is NULL");
    ck_assert_int_eq(cg_graph_add_param(g, "w", "", CG_F32, 1, d1), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_graph_add_param: empty weight name for 'w'");
    ck_assert_int_eq(cg_graph_add_param(g, "w", NULL, CG_F32, 1, d1), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_graph_add_param(g, "w", "\xff", CG_F32, 1, d1), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_graph_add_param: weight name of 'w' is not valid UTF-8");
    ck_assert_int_eq(g->n_values, 1);
    ck_assert_int_eq(g->n_inputs, 1);

    const char *in[] = {"x"}, *out[] = {"y"}, *dup[] = {"z", "z"}, *redef[] = {"q", "x"};
    const char *bad[] = {"ok", "no good\xff"};
    ck_assert_int_eq(cg_graph_add_node(g, "relu", NULL, 1, in, 2, dup, &n), CG_ERR_VERIFY);
    ck_assert_str_eq(cg_last_error(), "<builder>: value 'z' is already defined");
    ck_assert_ptr_null(n);
    ck_assert_int_eq(cg_graph_add_node(g, "relu", NULL, 1, in, 2, redef, &n), CG_ERR_VERIFY);
    ck_assert_str_eq(cg_last_error(), "<builder>: value 'x' is already defined");
    ck_assert_int_eq(cg_graph_add_node(g, "re lu", NULL, 1, in, 1, out, &n), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_graph_add_node: invalid operator name 're lu'");
    ck_assert_int_eq(cg_graph_add_node(g, NULL, NULL, 1, in, 1, out, &n), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_graph_add_node(g, "relu", "9\xff", 1, in, 1, out, &n), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_graph_add_node: invalid node name '9?'");
    ck_assert_int_eq(cg_graph_add_node(g, "relu", NULL, 2, bad, 1, out, &n), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_graph_add_node: invalid input name 'no good?'");
    ck_assert_int_eq(cg_graph_add_node(g, "relu", NULL, 1, in, 2, bad, &n), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_graph_add_node: invalid output name 'no good?'");
    ck_assert_int_eq(cg_graph_add_node(g, "relu", NULL, 1, in, 0, out, &n), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_graph_add_node: a node needs at least one output");
    ck_assert_int_eq(cg_graph_add_node(g, "relu", NULL, -1, in, 1, out, &n), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_graph_add_node(g, "relu", NULL, 1, NULL, 1, out, &n), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(g->n_nodes, 0);
    ck_assert_int_eq(g->n_values, 1);
    ck_assert_int_eq(cg_graph_add_node(g, "relu", NULL, 0, NULL, 1, out, &n), CG_OK);

    ck_assert_int_eq(cg_node_set_int(n, "k", 1), CG_OK);
    ck_assert_int_eq(cg_node_set_int(n, "k", 2), CG_ERR_VERIFY);
    ck_assert_str_eq(cg_last_error(), "<builder>: node 'y': attribute 'k' is already set");
    ck_assert_int_eq(cg_node_set_float(n, "k", 2), CG_ERR_VERIFY);
    ck_assert_int_eq(cg_node_set_int(n, "k!", 2), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_node_set_int: invalid attribute name 'k!'");
    ck_assert_int_eq(cg_node_set_int(NULL, "k", 2), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_node_set_int: node is NULL");
    ck_assert_int_eq(cg_node_set_string(n, "s", NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_node_set_string(n, "s", "\xc3"), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cg_node_set_string: value is not valid UTF-8");
    ck_assert_int_eq(cg_node_set_ints(n, "l", -1, NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_node_set_ints(n, "l", 2, NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(n->n_attrs, 1);

    ck_assert_int_eq(cg_graph_set_outputs(g, 1, (const char *[]){"nope"}), CG_ERR_NOT_FOUND);
    ck_assert_str_eq(cg_last_error(), "cg_graph_set_outputs: graph 'g' has no value named 'nope'");
    ck_assert_int_eq(cg_graph_set_outputs(g, 1, (const char *[]){"a\xff"}), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_graph_set_outputs(g, -1, NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_graph_set_outputs(NULL, 0, NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_graph_output_count(g), 0);
    ck_assert_int_eq(cg_graph_set_outputs(g, 1, out), CG_OK);
    ck_assert_int_eq(cg_graph_set_outputs(g, 0, NULL), CG_OK);
    ck_assert_int_eq(cg_graph_output_count(g), 0);

    char *s = print(m);
    ck_assert_str_eq(s, "graph g {\n  input x: f32[2]\n  y = relu() {k: 1}\n}\n\ngraph `1 g` {\n}\n");
    free(s);
    cg_model_free(m);
}
END_TEST

START_TEST(test_builder_parsed_model) {
    /* Builder calls on a parsed model name the earlier place. */
    cg_model *m = parse("graph g {\n  input x: f32[]\n  y = f(x) {k: 1}\n}\n");
    cg_graph *g = m->graphs[0];
    ck_assert_int_eq(cg_graph_add_input(g, "x", CG_F32, 0, NULL), CG_ERR_VERIFY);
    ck_assert_str_eq(cg_last_error(), "m.cg: value 'x' is already defined at 2:9");
    ck_assert_int_eq(cg_node_set_int(g->nodes[0], "k", 1), CG_ERR_VERIFY);
    ck_assert_str_eq(cg_last_error(), "m.cg: node 'y': attribute 'k' is already set at 3:13");
    ck_assert_int_eq(cg_model_add_graph(m, "g", NULL), CG_ERR_VERIFY);
    ck_assert_str_eq(cg_last_error(), "m.cg: graph 'g' is already defined at 1:7");
    /* Any change makes the model unverified again. */
    const char *out[] = {"z"};
    m->verified = 1;
    ck_assert_int_eq(cg_graph_add_node(g, "f", NULL, 0, NULL, 1, out, NULL), CG_OK);
    ck_assert_int_eq(m->verified, 0);
    m->verified = 1;
    ck_assert_int_eq(cg_node_set_int(g->nodes[0], "k2", 1), CG_OK);
    ck_assert_int_eq(m->verified, 0);
    m->verified = 1;
    ck_assert_int_eq(cg_graph_set_outputs(g, 1, out), CG_OK);
    ck_assert_int_eq(m->verified, 0);
    m->verified = 1;
    ck_assert_int_eq(cg_graph_add_input(g, "in2", CG_I32, 0, NULL), CG_OK);
    ck_assert_int_eq(m->verified, 0);
    m->verified = 1;
    ck_assert_int_eq(cg_model_add_graph(m, "h", NULL), CG_OK);
    ck_assert_int_eq(m->verified, 0);
    cg_model_free(m);
    /* A file holding only a byte order mark has no graph. */
    parse_err("\xEF\xBB\xBF", "m.cg: no graph");
    parse_err("\xEF\xBB\xBF}", "m.cg:1:1: expected 'graph' or 'dim', got '}'");
}
END_TEST

START_TEST(test_builder_strings_roundtrip) {
    /* Control characters and non-ASCII text print escaped or raw and read
     * back unchanged. */
    cg_model *m;
    cg_graph *g;
    cg_node *n;
    const char *out[] = {"y"};
    ck_assert_int_eq(cg_model_create(&g_ctx, &m), CG_OK);
    ck_assert_int_eq(cg_model_add_graph(m, "g", &g), CG_OK);
    ck_assert_int_eq(cg_graph_add_node(g, "f", NULL, 0, NULL, 1, out, &n), CG_OK);
    const char *s1 = "\x01\x02\x1f\x7f\r\n\t\"\\ \xe6\x97\xa5\xf0\x9f\x98\x80 #";
    ck_assert_int_eq(cg_node_set_string(n, "s", s1), CG_OK);
    ck_assert_int_eq(cg_node_set_float(n, "a", NAN), CG_OK);
    ck_assert_int_eq(cg_node_set_float(n, "b", -INFINITY), CG_OK);
    ck_assert_int_eq(cg_node_set_float(n, "c", -0.0), CG_OK);
    cg_dim d[] = {CG_DIM(3)};
    ck_assert_int_eq(cg_graph_add_param(g, "w", "a \"quoted\" \\ name\n", CG_F32, 1, d), CG_OK);
    char *s = print(m);
    ck_assert_str_eq(s, "graph g {\n"
                        "  param w: f32[3] = \"a \\\"quoted\\\" \\\\ name\\n\"\n"
                        "  y = f() {s: \"\\u0001\\u0002\\u001f\\u007f\\u000d\\n\\t\\\"\\\\ "
                        "\xe6\x97\xa5\xf0\x9f\x98\x80 #\", a: nan, b: -inf, c: -0.0}\n"
                        "}\n");
    cg_model *m2 = parse(s);
    ck_assert_str_eq(m2->graphs[0]->nodes[0]->attrs[0].s, s1);
    ck_assert_str_eq(m2->graphs[0]->values[0].weight, "a \"quoted\" \\ name\n");
    char why[512];
    ck_assert_msg(models_equal(m, m2, why), "%s", why);
    free(s);
    cg_model_free(m);
    cg_model_free(m2);
}
END_TEST

START_TEST(test_helpers) {
    char buf[128];
    cg_model *m = parse("graph g {\n  input x: f32[B, 3]\n}\n");
    cg_loc_format(buf, sizeof buf, m, 3, 4);
    ck_assert_str_eq(buf, "m.cg:3:4: ");
    cg_loc_format(buf, sizeof buf, m, 3, 0);
    ck_assert_str_eq(buf, "m.cg:3: ");
    cg_loc_format(buf, sizeof buf, m, 0, 0);
    ck_assert_str_eq(buf, "m.cg: ");
    cg_loc_format(buf, sizeof buf, NULL, 0, 0);
    ck_assert_str_eq(buf, "");
    cg_loc_format(buf, 6, m, 3, 4);
    ck_assert_str_eq(buf, "m.cg:");

    cg_value v = m->graphs[0]->values[0];
    v.dims[0] = CG_DIM_UNKNOWN;
    cg_value_type_format(buf, sizeof buf, m, &v);
    ck_assert_str_eq(buf, "f32[?, 3]");
    v.dims[0] = CG_DIM_SYM(5); /* past the table: shown by number */
    v.dtype = CG_I32;
    cg_value_type_format(buf, sizeof buf, m, &v);
    ck_assert_str_eq(buf, "i32[s5, 3]");
    cg_value_type_format(buf, 5, m, &m->graphs[0]->values[0]);
    ck_assert_str_eq(buf, "f32[");

    ck_assert_int_eq(cg_model_sym(m, "B"), 0);
    ck_assert_int_eq(cg_model_sym(m, "C"), 1);
    ck_assert_int_eq(cg_model_sym(m, "C"), 1);
    ck_assert_int_eq(m->n_syms, 2);

    char *d = cg_strdup("abc");
    ck_assert_str_eq(d, "abc");
    free(d);
    ck_assert(cg_name_valid("a.b_1"));
    ck_assert(cg_name_valid("_"));
    ck_assert(!cg_name_valid(""));
    ck_assert(cg_name_valid(".a"));
    ck_assert(cg_name_valid("onnx::Add_1"));
    ck_assert(!cg_name_valid("a\xff"));
    ck_assert(!cg_name_valid(NULL));
    ck_assert(cg_ident_valid("a.b_1"));
    ck_assert(!cg_ident_valid(".a"));
    ck_assert(!cg_ident_valid("a-b"));
    ck_assert(!cg_ident_valid(""));
    ck_assert_uint_eq(cg_utf8_seq_len("a", 1), 1);
    ck_assert_uint_eq(cg_utf8_seq_len("\xc3\xa9", 2), 2);
    ck_assert_uint_eq(cg_utf8_seq_len("\xc3\xa9", 1), 0);
    ck_assert_uint_eq(cg_utf8_seq_len("\xf0\x9f\x98\x80", 4), 4);
    ck_assert_uint_eq(cg_utf8_seq_len("\xe0\x80\x80", 3), 0);

    /* Graph-level internal constructors. */
    cg_graph *g = m->graphs[0];
    int32_t idx;
    ck_assert_int_eq(cg_graph_new_value(g, "v", CG_VAL_NODE, 7, 8, &idx), CG_OK);
    ck_assert_int_eq(g->values[idx].producer, -1);
    ck_assert_int_eq(cg_graph_new_value(g, "v", CG_VAL_NODE, 9, 1, &idx), CG_ERR_VERIFY);
    ck_assert_str_eq(cg_last_error(), "m.cg:9:1: value 'v' is already defined at 7:8");
    ck_assert_int_eq(idx, -1);
    const char *names[] = {"p", "q"};
    int lines[] = {4, 5}, cols[] = {6, 7};
    ck_assert_int_eq(cg_graph_add_output_names(g, 2, names, lines, cols), CG_OK);
    ck_assert_int_eq(cg_graph_add_output_names(g, 1, names, NULL, NULL), CG_OK);
    ck_assert_int_eq(g->n_outputs, 3);
    ck_assert_int_eq(g->out_col[1], 7);
    ck_assert_int_eq(g->out_line[2], 0);
    cg_attr a = {0};
    a.key = "k";
    a.type = (cg_attr_type)9;
    ck_assert_int_eq(cg_node_add_attr(NULL, &a), CG_ERR_INVALID_ARGUMENT);
    cg_attr_clear(NULL);

    /* What the text cannot express is refused by the printer. */
    g->values[0].dims[0] = CG_DIM_UNKNOWN;
    char *s = (char *)1;
    ck_assert_int_eq(cg_model_print(m, &s), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cannot print graph 'g': value 'x' has an unknown dimension");
    ck_assert_ptr_null(s);
    g->values[0].typed = 0;
    ck_assert_int_eq(cg_model_print(m, &s), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_last_error(), "cannot print graph 'g': value 'x' has no valid type");
    cg_model_free(m);

    /* A model without graphs prints as nothing. */
    ck_assert_int_eq(cg_model_create(&g_ctx, &m), CG_OK);
    s = print(m);
    ck_assert_str_eq(s, "");
    free(s);
    cg_model_free(m);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *parse_suite(void) {
    Suite *s = suite_create("parse");
    TCase *t = tcase_create("good");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_sample_ir);
    tcase_add_test(t, test_every_dtype);
    tcase_add_test(t, test_sample_print);
    tcase_add_test(t, test_canonical_form);
    tcase_add_test(t, test_comments_kept);
    tcase_add_test(t, test_attribute_types);
    tcase_add_test(t, test_float_shortest);
    tcase_add_test(t, test_shapes);
    tcase_add_test(t, test_keywords_as_names);
    tcase_add_test(t, test_derived_dims);
    tcase_add_test(t, test_graph_variants);
    tcase_add_test(t, test_quoted_names);
    tcase_add_test(t, test_forward_refs_and_shapes_of_statements);
    tcase_add_test(t, test_node_names);
    tcase_add_test(t, test_large_graph);
    tcase_add_test(t, test_name_index);
    tcase_add_test(t, test_many_attrs_and_inputs);
    suite_add_tcase(s, t);

    t = tcase_create("bad");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_errors_structure);
    tcase_add_test(t, test_errors_decls);
    tcase_add_test(t, test_errors_redefinition);
    tcase_add_test(t, test_errors_nodes);
    tcase_add_test(t, test_errors_attrs);
    tcase_add_test(t, test_errors_lexical);
    tcase_add_test(t, test_errors_strings);
    tcase_add_test(t, test_truncations);
    tcase_add_test(t, test_api_arguments);
    tcase_add_test(t, test_load);
    suite_add_tcase(s, t);

    t = tcase_create("attrs");
    tcase_add_test(t, test_attr_list);
    suite_add_tcase(s, t);

    t = tcase_create("builder");
    tcase_add_test(t, test_builder_matches_text);
    tcase_add_test(t, test_builder_params_after_nodes);
    tcase_add_test(t, test_builder_errors);
    tcase_add_test(t, test_builder_parsed_model);
    tcase_add_test(t, test_builder_strings_roundtrip);
    tcase_add_test(t, test_helpers);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return tu_run_suite(parse_suite(), 0); }
