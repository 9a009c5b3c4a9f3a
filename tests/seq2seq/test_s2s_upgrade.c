/* The conversion of older model.cg decoders at load (seq2seq/s2s_upgrade.c)
 * on a hand-written decoder of the old interface: what inputs it gains,
 * with which shapes (fresh symbols where the model already uses P and N),
 * which uses read gathered rows and which attention ops take `sentence` as
 * their rows, and that the result verifies. Decoding through converted
 * graphs is compared with the builder's in test_s2s (decoder_paths_agree,
 * deep_model_decodes). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/clgraph.h"
#include "ir.h"
#include "s2s_iface.h"

/* The old interface: state [B, H] given by the host, keys and src_len one
 * row per decoder row; keys also read by an op that is not attention, and
 * graph "other" already using the symbols P and N. */
static const char old_text[] = "graph other {\n"
                               "  input q: f32[P, N]\n"
                               "  t = tanh(q)\n"
                               "  output t\n"
                               "}\n"
                               "graph decoder {\n"
                               "  input y_prev: i32[B]\n"
                               "  input keys: f32[B, S, 4]\n"
                               "  input src_len: i32[B]\n"
                               "  input h0: f32[B, 4]\n"
                               "  param emb: f32[10, 4] = \"emb\"\n"
                               "  y = embedding(emb, y_prev)\n"
                               "  h0_new = add(y, h0)\n"
                               "  e = attn_score(h0_new, keys) {kind: \"dot\"}\n"
                               "  mask = length_mask(src_len, e)\n"
                               "  a = softmax(e, mask) {axis: -1}\n"
                               "  c = attn_context(a, keys)\n"
                               "  k2 = tanh(keys)\n"
                               "  logp = log_softmax(c) {axis: -1}\n"
                               "  output logp, h0_new, a, k2\n"
                               "}\n";

static cg_context *ctx;

static const cg_node *node(const cg_graph *g, const char *name) {
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i]->name, name)) return g->nodes[i];
    ck_abort_msg("no node '%s'", name);
    return NULL;
}

/* Node `name`'s inputs, joined by spaces. */
static const char *ins(const cg_graph *g, const char *name) {
    static char buf[256];
    const cg_node *n = node(g, name);
    buf[0] = 0;
    for (int k = 0; k < n->n_inputs; k++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", k ? " " : "", n->in_names[k]);
    return buf;
}

static const char *input_type(const cg_graph *g, int i) {
    static char buf[160];
    char type[128];
    cg_value_type_format(type, sizeof type, g->model, &g->values[g->inputs[i]]);
    snprintf(buf, sizeof buf, "%s %s", cg_graph_input_name(g, i), type);
    return buf;
}

START_TEST(old_decoder_converted) {
    cg_model *m = NULL;
    ck_assert_int_eq(cg_model_parse(ctx, old_text, strlen(old_text), "old.cg", &m), CG_OK);
    int changed = 0;
    ck_assert_int_eq(cg_s2s_upgrade(m, &changed), CG_OK);
    ck_assert_int_eq(changed, 1);
    const cg_graph *g = cg_model_graph(m, "decoder");
    ck_assert_int_eq(cg_graph_input_count(g), 6);
    const char *want[6] = {"y_prev i32[B]", "keys f32[N2, S, 4]", "src_len i32[N2]",
                           "h0 f32[P2, 4]", "parent i32[B]",      "sentence i32[B]"};
    for (int i = 0; i < 6; i++) ck_assert_str_eq(input_type(g, i), want[i]);
    ck_assert_str_eq(ins(g, "h0_new"), "y h0_sel");
    ck_assert_str_eq(ins(g, "h0_sel"), "h0 parent");
    ck_assert_str_eq(ins(g, "e"), "h0_new keys sentence");
    ck_assert_str_eq(ins(g, "c"), "a keys sentence");
    ck_assert_str_eq(ins(g, "k2"), "keys_rows");
    ck_assert_str_eq(ins(g, "keys_rows"), "keys sentence");
    ck_assert_str_eq(ins(g, "mask"), "src_len_rows e");
    ck_assert_str_eq(ins(g, "src_len_rows"), "src_len sentence");
    ck_assert_str_eq(ins(cg_model_graph(m, "other"), "t"), "q");
    ck_assert_msg(cg_model_verify(m) == CG_OK, "%s", cg_last_error());
    cg_model_free(m);
}
END_TEST

/* A decoder that already has both inputs is left as it is; a name the
 * conversion would make that the graph already uses gets a number. */
START_TEST(new_decoder_untouched_and_names_fresh) {
    const char *text = "graph decoder {\n"
                       "  input y_prev: i32[B]\n"
                       "  input parent: i32[B]\n"
                       "  input h0: f32[P, 4]\n"
                       "  h0_sel = gather_rows(h0, parent)\n"
                       "  h0_new = tanh(h0_sel)\n"
                       "  output h0_new\n"
                       "}\n"
                       "graph decoder_logp {\n"
                       "  input y_prev: i32[B]\n"
                       "  input h0: f32[B, 4]\n"
                       "  h0_sel = tanh(h0)\n"
                       "  h0_new = add(h0_sel, h0)\n"
                       "  output h0_new\n"
                       "}\n";
    cg_model *m = NULL;
    ck_assert_int_eq(cg_model_parse(ctx, text, strlen(text), "new.cg", &m), CG_OK);
    ck_assert_int_eq(cg_s2s_upgrade(m, NULL), CG_OK);
    const cg_graph *g = cg_model_graph(m, "decoder");
    ck_assert_int_eq(cg_graph_input_count(g), 3);
    ck_assert_int_eq(g->n_nodes, 2);
    g = cg_model_graph(m, "decoder_logp");
    ck_assert_int_eq(cg_graph_input_count(g), 3);
    ck_assert_str_eq(input_type(g, 1), "h0 f32[P2, 4]");
    ck_assert_str_eq(ins(g, "h0_sel"), "h0_sel2");
    ck_assert_str_eq(ins(g, "h0_new"), "h0_sel h0_sel2");
    ck_assert_str_eq(ins(g, "h0_sel2"), "h0 parent");
    ck_assert_msg(cg_model_verify(m) == CG_OK, "%s", cg_last_error());
    cg_model_free(m);
}
END_TEST

int main(void) {
    if (cg_context_create(NULL, &ctx) != CG_OK) return 1;
    Suite *s = suite_create("s2s_upgrade");
    TCase *tc = tcase_create("upgrade");
    tcase_add_test(tc, old_decoder_converted);
    tcase_add_test(tc, new_decoder_untouched_and_names_fresh);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    cg_context_free(ctx);
    return failed ? 1 : 0;
}
