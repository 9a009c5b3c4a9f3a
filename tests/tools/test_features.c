/* The build options (README "Build options"): cg_build_features and
 * `clgraph --version` name what the build was configured with (the
 * CG_HAVE_* macros meson gives this test too), and a feature left out
 * fails where it is needed with one line saying this build lacks it, while
 * the rest works (the CPU; SVG heat maps without libpng). In a build with
 * the feature, the same calls must not claim it is missing. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "clgraph/clgraph.h"
#include "test_util.h"

static void setup(void) { tu_setup_dir("features"); }

static const char *dates(void) {
    static char p[600];
    snprintf(p, sizeof p, "%s/models/dates", tu_src_dir());
    return p;
}

static const char *one_date(void) {
    static const char line[] = "the 22nd of November 2026\n";
    return tu_write_file("in.txt", line, sizeof line - 1);
}

START_TEST(features_match_configuration) {
    /* the expected list written out from the macros, not from features.c */
    char want[64] = "";
    if (CG_HAVE_OPENCL) strcat(want, " opencl");
    if (CG_HAVE_CLBLAST) strcat(want, " clblast");
    if (CG_HAVE_ONNX) strcat(want, " onnx");
    if (CG_HAVE_PNG) strcat(want, " png");
    if (CG_HAVE_SENTENCEPIECE) strcat(want, " sentencepiece");
    const char *w = want[0] ? want + 1 : want;
    ck_assert_str_eq(cg_build_features(), w);
    const char *v[] = {"--version", NULL};
    ck_assert_int_eq(tu_run_cli(v, NULL, NULL), 0);
    char line[80];
    snprintf(line, sizeof line, "\nfeatures: %s\n", *w ? w : "none");
    ck_assert_msg(strstr(tu_out, line), "%s", tu_out);
}
END_TEST

START_TEST(opencl_device) {
    const char *dev[] = {"devices", NULL};
    ck_assert_int_eq(tu_run_cli(dev, NULL, NULL), 0);
    ck_assert_ptr_nonnull(strstr(tu_out, "cpu"));
    const char *tr[] = {"translate", dates(), "--device", "opencl:0", NULL};
    int rc = tu_run_cli(tr, NULL, one_date());
    if (CG_HAVE_OPENCL) {
        ck_assert_ptr_null(strstr(tu_err, "has no OpenCL"));
        return;
    }
    ck_assert_ptr_null(strstr(tu_out, "opencl:"));
    ck_assert_int_ne(rc, 0);
    const char *needles[] = {"opencl:0", "this build of clgraph has no OpenCL", NULL};
    tu_assert_one_line(needles);
    /* the CPU still translates */
    const char *cpu[] = {"translate", dates(), "--device", "cpu", NULL};
    ck_assert_int_eq(tu_run_cli(cpu, NULL, one_date()), 0);
    ck_assert_str_eq(tu_out, "2026-11-22\n");
}
END_TEST

START_TEST(onnx_import) {
    cg_context *ctx;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    cg_model *m = (cg_model *)1;
    cg_status st = cg_model_load_onnx(ctx, tu_path("absent.onnx"), NULL, &m);
    ck_assert_int_ne(st, CG_OK);
    ck_assert_ptr_null(m);
    if (CG_HAVE_ONNX) {
        ck_assert_int_ne(st, CG_ERR_UNSUPPORTED);
        ck_assert_ptr_null(strstr(cg_last_error(), "no ONNX support"));
    } else {
        ck_assert_int_eq(st, CG_ERR_UNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(cg_last_error(), "this build of clgraph has no ONNX support"));
        cg_tensor *t = (cg_tensor *)1;
        ck_assert_int_eq(cg_tensor_load_onnx(tu_path("absent.pb"), &t, NULL), CG_ERR_UNSUPPORTED);
        ck_assert_ptr_null(t);
        const char *imp[] = {"import", tu_path("absent.onnx"), NULL};
        ck_assert_int_ne(tu_run_cli(imp, NULL, NULL), 0);
        const char *needles[] = {"no ONNX support", NULL};
        tu_assert_one_line(needles);
    }
    cg_context_free(ctx);
}
END_TEST

START_TEST(png_output) {
    struct stat sb;
    const char *png[] = {"translate", dates(), "--attention", tu_path("a.png"), NULL};
    int rc = tu_run_cli(png, NULL, one_date());
    if (CG_HAVE_PNG) {
        ck_assert_int_eq(rc, 0);
        char sig[9];
        tu_slurp(tu_path("a.png"), sig, sizeof sig);
        ck_assert_mem_eq(sig, "\x89PNG\r\n\x1a\n", 8);
        return;
    }
    ck_assert_int_ne(rc, 0);
    const char *needles[] = {"a.png", "this build of clgraph has no PNG output", ".svg", NULL};
    tu_assert_one_line(needles);
    ck_assert_int_ne(stat(tu_path("a.png"), &sb), 0);
    const char *svg[] = {"translate", dates(), "--attention", tu_path("a.svg"), NULL};
    ck_assert_int_eq(tu_run_cli(svg, NULL, one_date()), 0);
    char head[256];
    tu_slurp(tu_path("a.svg"), head, sizeof head);
    ck_assert_msg(strstr(head, "<svg "), "%s", head);
}
END_TEST

/* Only a build with OpenCL but without CLBlast gets past the first line. */
START_TEST(clblast_mode) {
    if (!CG_HAVE_OPENCL || CG_HAVE_CLBLAST) return;
    const char *env[] = {"CLGRAPH_GEMM=clblast", NULL};
    const char *tr[] = {"translate", dates(), "--device", "opencl:0", NULL};
    ck_assert_int_ne(tu_run_cli(tr, env, one_date()), 0);
    ck_assert_ptr_nonnull(strstr(tu_err, "this build of clgraph has no CLBlast"));
    const char *own[] = {"CLGRAPH_GEMM=auto", NULL};
    ck_assert_int_eq(tu_run_cli(tr, own, one_date()), 0);
    ck_assert_str_eq(tu_out, "2026-11-22\n");
}
END_TEST

int main(void) {
    Suite *s = suite_create("features");
    TCase *tc = tcase_create("features");
    tcase_add_checked_fixture(tc, setup, tu_teardown_dir);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, features_match_configuration);
    tcase_add_test(tc, opencl_device);
    tcase_add_test(tc, onnx_import);
    tcase_add_test(tc, png_output);
    tcase_add_test(tc, clblast_mode);
    suite_add_tcase(s, tc);
    /* no fork: a child of a process that started PoCL can hang */
    return tu_run_suite(s, 1);
}
