/* Graph rewrites (graph/rewrite): the cse, attention, norm and elementwise rewrites
 * on the forms tests/data/onnx/make_rewrite.py writes (expected values
 * from ONNX Runtime) with the rewrites on and off on every device, where
 * they fire and where they must not, the selection's errors, and the plan's
 * line saying what fired; the corpus slice's Transformers fused. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/clgraph.h"
#include "test_util.h"

static void setup(void) { tu_setup_dir("rewrite"); }

/* onnx-test over dir with CLGRAPH_REWRITES=which: every case passes on
 * every device (ONNX's tolerances). */
static void run_cases(const char *dir, const char *which, int total) {
    char env[64];
    snprintf(env, sizeof env, "CLGRAPH_REWRITES=%s", which);
    const char *args[] = {"onnx-test", dir, NULL}, *extra[] = {env, NULL};
    int rc = tu_run_cli(args, extra, NULL);
    ck_assert_msg(rc == 0, "%s\n%s", tu_out, tu_err);
    char want[64];
    snprintf(want, sizeof want, "%d passed, 0 failed, 0 unsupported, 0 errors (of %d)", total, total);
    int devices = 0;
    for (const char *l = tu_err; (l = strstr(l, "clgraph onnx-test: ")); l++, devices++) {
        const char *end = strchr(l, '\n'), *hit = strstr(l, want);
        ck_assert_msg(hit && (!end || hit < end), "CLGRAPH_REWRITES=%s: %s", which, tu_err);
    }
    ck_assert_int_ge(devices, 1);
}

START_TEST(cases_pass_rewritten_or_not) {
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/tests/data/onnx/rewrite", tu_src_dir());
    run_cases(dir, "all", 17);
    run_cases(dir, "none", 17);
    run_cases(dir, "elementwise", 17);
    run_cases(dir, "-norm", 17);
    run_cases(dir, "cse", 17);
}
END_TEST

/* The corpus slice with the rewrites off (test_onnx runs it with them on,
 * the default), against ONNX Runtime with the corpus' tolerances. */
START_TEST(corpus_slice_passes_without_rewrites) {
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/tests/data/onnx/corpus", tu_src_dir());
    const char *args[] = {"onnx-test", dir, "--rtol", "1e-3", "--atol", "1e-4", NULL},
               *env[] = {"CLGRAPH_REWRITES=none", NULL};
    ck_assert_msg(tu_run_cli(args, env, NULL) == 0, "%s\n%s", tu_out, tu_err);
    ck_assert_msg(strstr(tu_err, "cpu: 11 passed, 0 failed"), "%s", tu_err);
}
END_TEST

static int pass_index(const char *name) {
    for (int i = 0; i < cg_rewrite_count(); i++)
        if (!strcmp(cg_rewrite_name(i), name)) return i;
    ck_abort_msg("no rewrite named %s", name);
    return -1;
}

/* How often rewrite `pass` fired importing `path` with `which` (-1: it did
 * not run). */
static int fired_by(const char *pass, const char *path, const char *which) {
    cg_context *ctx = NULL;
    cg_model *m = NULL;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    cg_onnx_options opt = {.struct_size = sizeof opt, .rewrites = which};
    ck_assert_msg(cg_model_load_onnx(ctx, path, &opt, &m) == CG_OK, "%s", cg_last_error());
    int n = cg_model_rewrite_fired(m, pass_index(pass));
    cg_model_free(m);
    cg_context_free(ctx);
    return n;
}

static int fired(const char *path, const char *which) { return fired_by("attention", path, which); }

static const char *case_model(const char *name) {
    static char path[4200];
    snprintf(path, sizeof path, "%s/tests/data/onnx/%s/model.onnx", tu_src_dir(), name);
    return path;
}

START_TEST(fires_where_the_chain_is_whole) {
    /* both exporters' head splits and scales; a 4-D form divided by sqrt(D);
     * K^T given (sdpa gets it transposed back) */
    ck_assert_int_eq(fired(case_model("rewrite/exported_bshd"), NULL), 1);
    ck_assert_int_eq(fired(case_model("rewrite/fully_masked_row"), "all"), 1);
    ck_assert_int_eq(fired(case_model("rewrite/bhsd_div"), "attention"), 1);
    ck_assert_int_eq(fired(case_model("rewrite/kt_given"), NULL), 1);
    /* q scaled before its head split (Marian, BART, Whisper): the Mul goes
     * into sdpa's scale, the head split reads q itself */
    ck_assert_int_eq(fired(case_model("rewrite/q_scaled"), NULL), 1);
    const char *imp[] = {"import", case_model("rewrite/q_scaled"), NULL};
    ck_assert_msg(tu_run_cli(imp, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "q_4d = reshape(q) {") &&
                      strstr(tu_out, "= sdpa(q_4d, k_4d, v_4d) {layout: \"bshd\", scale: 0.5}"),
                  "%.2000s", tu_out);
    /* q, k and v sliced from one projection (GPT-2): sdpa reads it packed */
    ck_assert_int_eq(fired(case_model("rewrite/packed_qkv"), NULL), 1);
    const char *pk[] = {"import", case_model("rewrite/packed_qkv"), NULL};
    ck_assert_msg(tu_run_cli(pk, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "= sdpa(qkv, qkv, qkv, mask) {layout: \"bshd\", packed: 1, heads: 3, scale: 0.5}"),
                  "%.3000s", tu_out);
    /* q, k and v three linears of one x (BERT): one linear of the weights
     * concatenated once per plan, read packed */
    ck_assert_int_eq(fired(case_model("rewrite/qkv_linears"), NULL), 1);
    const char *lk[] = {"import", case_model("rewrite/qkv_linears"), NULL};
    ck_assert_msg(tu_run_cli(lk, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "`MatMul_20/qkv_w` = concat(`qm/const_1`, `km/const_3`, `vm/const_5`) {axis: 0}") &&
                      strstr(tu_out, "`MatMul_20/qkv` = linear(x, `MatMul_20/qkv_w`, `MatMul_20/qkv_b`)") &&
                      strstr(tu_out, "= sdpa(`MatMul_20/qkv`, `MatMul_20/qkv`, `MatMul_20/qkv`, mask) {layout: "
                                     "\"bshd\", packed: 1, heads: 3"),
                  "%.3000s", tu_out);
    /* Whisper's k without a bias: zeros from q's bias, once per plan */
    ck_assert_int_eq(fired(case_model("rewrite/qkv_k_nobias"), NULL), 1);
    const char *nb[] = {"import", case_model("rewrite/qkv_k_nobias"), NULL};
    ck_assert_msg(tu_run_cli(nb, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "/qkv_zeros` = affine(") && strstr(tu_out, "{alpha: 0.0, beta: 0.0}") &&
                      strstr(tu_out, "/qkv` = linear(x, `"),
                  "%.3000s", tu_out);
    /* the probabilities are a graph output: the chain must stay */
    ck_assert_int_eq(fired(case_model("rewrite/probs_output"), NULL), 0);
    /* off: the rewrite did not run */
    ck_assert_int_eq(fired(case_model("rewrite/exported_bshd"), "none"), -1);
    ck_assert_int_eq(fired(case_model("rewrite/exported_bshd"), "-attention"), -1);
    /* real exports (the corpus slice): one per attention layer */
    ck_assert_int_eq(fired(case_model("corpus/bert_ts"), NULL), 2);
    ck_assert_int_eq(fired(case_model("corpus/bert_dynamo"), NULL), 2);
    ck_assert_int_eq(fired(case_model("corpus/gpt2_dynamo"), NULL), 2);
    ck_assert_int_eq(fired(case_model("corpus/marian_encoder_dynamo"), NULL), 2);
    ck_assert_int_eq(fired(case_model("corpus/transformer_dynamo"), NULL), 6);
}
END_TEST

static int ew_fired(const char *name, const char *which) { return fired_by("elementwise", case_model(name), which); }

START_TEST(elementwise_fuses_whole_chains) {
    /* the Erf GELU after a MatMul and bias Add (read twice: a leaf), then
     * the bias and residual Adds before a LayerNorm; with "norm" first the
     * residual Add goes into the LayerNorm (its output a graph output) and
     * the bias Add stays alone */
    ck_assert_int_eq(ew_fired("rewrite/ew_gelu_mlp", NULL), 1);
    ck_assert_int_eq(fired_by("norm", case_model("rewrite/ew_gelu_mlp"), NULL), 1);
    ck_assert_int_eq(ew_fired("rewrite/ew_gelu_mlp", "elementwise"), 2);
    /* HardSwish as the op and as HardSigmoid then Mul */
    ck_assert_int_eq(ew_fired("rewrite/ew_hardswish", NULL), 2);
    /* a middle value that is a graph output stops the chain: Mul and
     * Sigmoid fuse, Add and Tanh stay */
    ck_assert_int_eq(ew_fired("rewrite/ew_middle_output", NULL), 1);
    /* the attention forms: nothing but lone element-wise nodes */
    ck_assert_int_eq(ew_fired("rewrite/exported_bshd", NULL), 0);
    /* off */
    ck_assert_int_eq(ew_fired("rewrite/ew_gelu_mlp", "none"), -1);
    ck_assert_int_eq(ew_fired("rewrite/ew_gelu_mlp", "-elementwise"), -1);
    ck_assert_int_eq(ew_fired("rewrite/ew_gelu_mlp", "attention"), -1);
    /* real exports: one GELU per layer (TorchScript's Erf form, dynamo's
     * affine form, GPT-2's tanh and Pow form); MobileNetV3's HardSwish and
     * squeeze-excitation gates (hard_sigmoid, Mul) */
    ck_assert_int_eq(ew_fired("corpus/bert_ts", NULL), 2);
    ck_assert_int_eq(ew_fired("corpus/bert_dynamo", NULL), 2);
    ck_assert_int_eq(ew_fired("corpus/gpt2_dynamo", NULL), 2);
    ck_assert_int_eq(ew_fired("corpus/marian_encoder_dynamo", NULL), 2);
    ck_assert_int_eq(ew_fired("corpus/mobilenet_v3_small_ts", NULL), 19);
    /* GPT-2's Pow by a constant 3 becomes the cube token (a general pow per
     * element costs ~100 ns on PoCL) */
    const char *imp[] = {"import", case_model("corpus/gpt2_dynamo"), NULL};
    ck_assert_msg(tu_run_cli(imp, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "{program: \"0 1 mul 0 0 cube 2 mul add 3 mul tanh 4 add mul\"}"), "%.300s", tu_out);
}
END_TEST

/* cse: the mask rebuilt with other Constants of equal value and what
 * reads it merge (2 nodes); other attributes, and a repeat that is a graph
 * output, stay; off with -cse; BERT's per-layer mask and the corpus'. */
START_TEST(cse_merges_repeats) {
    ck_assert_int_eq(fired_by("cse", case_model("rewrite/cse_mask"), NULL), 2);
    ck_assert_int_eq(fired_by("cse", case_model("rewrite/cse_mask"), "-cse"), -1);
    ck_assert_int_eq(fired_by("cse", case_model("rewrite/exported_bshd"), NULL), 0);
    ck_assert_int_eq(fired_by("cse", case_model("corpus/bert_ts"), NULL), 5);
    ck_assert_int_eq(fired_by("cse", case_model("corpus/transformer_dynamo"), NULL), 4);
}
END_TEST

/* RMSNorm: T5's exported formula and ONNX RMSNormalization's, one
 * rms_norm node each, which the element-wise rewrite then leaves alone
 * (the replaced chain is no candidate); a LayerNorm of a residual Add one
 * layer_norm with the residual (BERT: 3, the fourth is a graph output);
 * off with -norm. */
START_TEST(norm_fuses_rmsnorm) {
    ck_assert_int_eq(fired_by("norm", case_model("rewrite/rms_t5"), NULL), 1);
    ck_assert_int_eq(fired_by("norm", case_model("rewrite/rms_onnx"), NULL), 1);
    ck_assert_int_eq(fired_by("elementwise", case_model("rewrite/rms_t5"), NULL), 0);
    ck_assert_int_eq(fired_by("norm", case_model("rewrite/rms_t5"), "-norm"), -1);
    ck_assert_int_eq(fired_by("norm", case_model("rewrite/exported_bshd"), NULL), 0);
    /* a post-LN residual Add taken into the LayerNorm; not one that broadcasts */
    ck_assert_int_eq(fired_by("norm", case_model("rewrite/ln_residual"), NULL), 1);
    /* pre-LN: the LayerNorm of a sum the next residual Add reads too gives
     * that sum as its second output; the last one (a graph output) takes
     * its Add in place */
    ck_assert_int_eq(fired_by("norm", case_model("rewrite/ln_prenorm"), NULL), 2);
    const char *pre[] = {"import", case_model("rewrite/ln_prenorm"), NULL};
    ck_assert_msg(tu_run_cli(pre, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "`LayerNormalization_3/res`, `LayerNormalization_3/sum` = layer_norm(x, g, be, a1)") &&
                      strstr(tu_out, "y = layer_norm(`LayerNormalization_3/sum`, g, be, a2)"),
                  "%.3000s", tu_out);
    /* BERT's three post-LN LayerNorms of a residual, the last one a graph
     * output */
    ck_assert_int_eq(fired_by("norm", case_model("corpus/bert_ts"), NULL), 4);
    const char *imp[] = {"import", case_model("rewrite/rms_t5"), NULL};
    ck_assert_msg(tu_run_cli(imp, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "= rms_norm(x, w) {epsilon: "), "%.600s", tu_out);
}
END_TEST

START_TEST(selection_errors_name_the_rewrite) {
    cg_context *ctx = NULL;
    cg_model *m = NULL;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    cg_onnx_options opt = {.struct_size = sizeof opt, .rewrites = "attention,gelux"};
    ck_assert_int_eq(cg_model_load_onnx(ctx, case_model("rewrite/exported_bshd"), &opt, &m), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(cg_last_error(), "no rewrite 'gelux'") && strstr(cg_last_error(), "attention"), "%s",
                  cg_last_error());
    opt.rewrites = "attention,-attention";
    ck_assert_int_eq(cg_model_load_onnx(ctx, case_model("rewrite/exported_bshd"), &opt, &m), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "not both"), "%s", cg_last_error());
    /* the environment's selection, named as such */
    const char *args[] = {"check", case_model("rewrite/exported_bshd"), NULL},
               *env[] = {"CLGRAPH_REWRITES=bogus", NULL};
    ck_assert_int_ne(tu_run_cli(args, env, NULL), 0);
    ck_assert_msg(strstr(tu_err, "CLGRAPH_REWRITES: rewrites 'bogus': no rewrite 'bogus'"), "%s", tu_err);
    cg_context_free(ctx);
}
END_TEST

START_TEST(plan_says_what_fired) {
    const char *on[] = {"plan", case_model("rewrite/exported_bshd"), NULL};
    ck_assert_msg(tu_run_cli(on, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "\nrewrites: cse 0, attention 1, norm 0, elementwise 0\n") && strstr(tu_out, " sdpa "),
                  "%s", tu_out);
    ck_assert_msg(!strstr(tu_out, " softmax "), "%s", tu_out);
    const char *off[] = {"plan", case_model("rewrite/exported_bshd"), "--rewrites", "none", NULL};
    ck_assert_msg(tu_run_cli(off, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "\nrewrites: none; off: cse, attention, norm, elementwise\n") &&
                      strstr(tu_out, " softmax ") && !strstr(tu_out, " sdpa "),
                  "%s", tu_out);
}
END_TEST

int main(void) {
    Suite *s = suite_create("rewrite");
    TCase *tc = tcase_create("rewrite");
    tcase_add_checked_fixture(tc, setup, tu_teardown_dir);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, cases_pass_rewritten_or_not);
    tcase_add_test(tc, fires_where_the_chain_is_whole);
    tcase_add_test(tc, elementwise_fuses_whole_chains);
    tcase_add_test(tc, norm_fuses_rmsnorm);
    tcase_add_test(tc, cse_merges_repeats);
    tcase_add_test(tc, selection_errors_name_the_rewrite);
    tcase_add_test(tc, plan_says_what_fired);
    tcase_add_test(tc, corpus_slice_passes_without_rewrites);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
