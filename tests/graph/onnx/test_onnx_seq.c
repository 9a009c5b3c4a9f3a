/* ONNX sequences and optionals (graph/onnx/onnx_seq.c, onnx_seq_map.c)
 * through the CLI on the CPU and every OpenCL device: tests/data/onnx/
 * make_seq.py's models (expected values from ONNX Runtime, checked against
 * NumPy and PyTorch), Debian's sequence models and node tests, the
 * one-line refusals, and the SequenceProto / OptionalProto reader. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/clgraph.h"
#include "test_util.h"

/* onnx-test on dirs: every device's "DEVICE: N passed, 0 failed, U
 * unsupported, 0 errors (of total)" with N >= min_pass. */
static void run_dirs(const char *const *dirs, int one_plan, int min_pass, int total) {
    const char *args[32] = {"onnx-test"};
    int n = 1;
    for (; *dirs; dirs++) args[n++] = *dirs;
    if (one_plan) args[n++] = "--one-plan";
    ck_assert_msg(tu_run_cli(args, NULL, NULL) == 0, "%s", tu_err);
    int devices = 0;
    for (const char *l = tu_err; (l = strstr(l, "clgraph onnx-test: ")); l++, devices++) {
        char dev[64];
        int pass, fail, unsup, err, all;
        ck_assert_int_eq(sscanf(l, "clgraph onnx-test: %63[^ ] %d passed, %d failed, %d unsupported, %d errors (of %d)",
                                dev, &pass, &fail, &unsup, &err, &all),
                         6);
        ck_assert_msg(pass >= min_pass, "%s: %d passed", dev, pass);
        ck_assert_int_eq(fail, 0);
        ck_assert_int_eq(err, 0);
        ck_assert_int_eq(all, total);
    }
    ck_assert_int_ge(devices, 1);
}

static const char *src(const char *rel) {
    static char buf[4][4200];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tu_src_dir(), rel);
    return buf[k];
}

static void setup(void) { tu_setup_dir("onnx_seq"); }

START_TEST(own_sequence_tests_pass) {
    run_dirs((const char *const[]){src("tests/data/onnx/seq"), NULL}, 0, 4, 4);
    ck_assert_ptr_nonnull(strstr(tu_out, "torch_lists                                        cpu        pass "));
    ck_assert_ptr_nonnull(strstr(tu_out, "if_seq_runtime                                     cpu        pass "));
    /* imported once with nothing given: a sequence input's length and the
     * torch loop's trip count are not known, an optional given empty was
     * imported holding a value; the If at run time passes */
    run_dirs((const char *const[]){src("tests/data/onnx/seq"), NULL}, 1, 1, 4);
    ck_assert_ptr_nonnull(strstr(tu_out, "graph input 's' is a sequence: its length must be known at import"));
    ck_assert_ptr_nonnull(strstr(tu_out, "input 'maybe' is given empty: the model is imported once"));
}
END_TEST

/* ONNX's own: the sequence models of the 'simple' set (ConcatFromSequence
 * the node tests lack) and the node tests of sequences and optionals,
 * SequenceMap, If and Loop carrying them included. */
START_TEST(onnx_sequence_tests_pass) {
    static const char *const names[] = {"simple/test_sequence_model1",
                                        "simple/test_sequence_model2",
                                        "simple/test_sequence_model3",
                                        "simple/test_sequence_model4",
                                        "simple/test_sequence_model5",
                                        "simple/test_sequence_model6",
                                        "simple/test_sequence_model7",
                                        "simple/test_sequence_model8",
                                        "node/test_sequence_insert_at_back",
                                        "node/test_sequence_map_add_2_sequences",
                                        "node/test_sequence_map_extract_shapes_expanded",
                                        "node/test_loop16_seq_none",
                                        "node/test_if_opt",
                                        "node/test_optional_get_element_sequence"};
    enum { N = sizeof names / sizeof names[0] };
    char paths[N][4200];
    const char *dirs[N + 1] = {0};
    for (int i = 0; i < N; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s", ONNX_TESTDATA, names[i]);
        dirs[i] = paths[i];
    }
    run_dirs(dirs, 0, N, N);
}
END_TEST

/* What cannot be known at import is one line naming the input or node. */
START_TEST(sequence_refusals) {
    static const char *const cases[][3] = {
        {"seq_input_unknown.onnx", "graph input 's' is a sequence: its length must be known at import",
         "give its elements as s.0 .. s.N-1"},
        {"seq_split_dynamic.onnx", "node '/split' (SplitToSequence, #0): the sequence's length depends on a dim",
         "known only at run time"},
        {"seq_if_lengths.onnx", "node '/If' (If, #3): the condition is known only at run time",
         "a sequence of 2 in then_branch but of 1 in else_branch"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char rel[200];
        snprintf(rel, sizeof rel, "tests/data/onnx/%s", cases[i][0]);
        const char *args[] = {"check", src(rel), NULL};
        ck_assert_int_eq(tu_run_cli(args, NULL, NULL), 1);
        tu_assert_one_line((const char *const[]){cases[i][0], cases[i][1], cases[i][2], NULL});
    }
}
END_TEST

/* cg_tensors_load_onnx and cg_onnx_io_kinds on make_seq.py's files. */
START_TEST(value_files_read) {
    int n;
    cg_tensor **t;
    cg_onnx_kind held, *kinds;
    char *name;
    ck_assert_int_eq(cg_tensors_load_onnx(src("tests/data/onnx/seq/seq_ops/test_data_set_0/input_0.pb"),
                                          CG_ONNX_SEQUENCE, &n, &t, &held, &name),
                     CG_OK);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(held, CG_ONNX_SEQUENCE);
    ck_assert_str_eq(name, "s");
    ck_assert_int_eq(cg_tensor_ndim(t[2]), 2);
    ck_assert_int_eq(cg_tensor_dim(t[2], 1), 3);
    for (int i = 0; i < n; i++) cg_tensor_free(t[i]);
    free(t);
    free(name);
    /* an empty optional: no tensor */
    ck_assert_int_eq(cg_tensors_load_onnx(src("tests/data/onnx/seq/optional_ops/test_data_set_1/input_1.pb"),
                                          CG_ONNX_OPTIONAL, &n, &t, &held, NULL),
                     CG_OK);
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(held, CG_ONNX_OPTIONAL);
    free(t);
    ck_assert_int_eq(cg_onnx_io_kinds(src("tests/data/onnx/seq/seq_ops/model.onnx"), 1, &n, &kinds), CG_OK);
    ck_assert_int_eq(n, 6);
    ck_assert_int_eq(kinds[0], CG_ONNX_TENSOR);
    ck_assert_int_eq(kinds[3], CG_ONNX_SEQUENCE);
    free(kinds);
    /* cut short: one line naming the file, nothing returned */
    size_t len;
    char *bytes = tu_read_text(src("tests/data/onnx/seq/seq_ops/test_data_set_0/input_0.pb"), &len);
    const char *cut = tu_write_file("cut.pb", bytes, len / 2);
    free(bytes);
    ck_assert_int_eq(cg_tensors_load_onnx(cut, CG_ONNX_SEQUENCE, &n, &t, &held, &name), CG_ERR_FORMAT);
    ck_assert_ptr_null(t);
    ck_assert_ptr_null(name);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "cut.pb"));
}
END_TEST

int main(void) {
    Suite *s = suite_create("onnx_seq");
    TCase *tc = tcase_create("onnx_seq");
    tcase_add_checked_fixture(tc, setup, tu_teardown_dir);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, own_sequence_tests_pass);
    tcase_add_test(tc, onnx_sequence_tests_pass);
    tcase_add_test(tc, sequence_refusals);
    tcase_add_test(tc, value_files_read);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
