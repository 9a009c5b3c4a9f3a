/* The clgraph command line end to end: the example GRU encoder against
 * PyTorch's numbers, every kind of bad input with its one-line error and
 * exit code, and the README's main command printing only its output in a
 * cold first run. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clgraph/clgraph.h"
#include "test_util.h"

extern char **environ;

static void example(const char *file, char *buf) { snprintf(buf, 512, "%s/models/example/%s", tu_src_dir(), file); }

static void setup(void) { tu_setup_dir("cli"); }

static double max_diff(const char *a_path, const char *b_path) {
    cg_tensor *a, *b;
    ck_assert_msg(cg_tensor_load_npy(a_path, &a) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_tensor_load_npy(b_path, &b) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_tensor_ndim(a), cg_tensor_ndim(b));
    for (int i = 0; i < cg_tensor_ndim(a); i++) ck_assert_int_eq(cg_tensor_dim(a, i), cg_tensor_dim(b, i));
    const float *x = cg_tensor_data_const(a), *y = cg_tensor_data_const(b);
    double m = 0;
    for (int64_t i = 0; i < cg_tensor_numel(a); i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        if (!(d <= m)) m = d;
    }
    cg_tensor_free(a);
    cg_tensor_free(b);
    return m;
}

START_TEST(gru_encoder_matches_pytorch) {
    char model[512], w[512], src[512], len[512], outdir[512], a[600], b[600], in1[600], in2[600];
    example("model.cg", model);
    example("weights.safetensors", w);
    example("src.npy", src);
    example("src_len.npy", len);
    snprintf(outdir, sizeof outdir, "%s/out", tu_dir);
    snprintf(in1, sizeof in1, "src=%s", src);
    snprintf(in2, sizeof in2, "src_len=%s", len);
    const char *args[] = {"run", model, "--weights", w, "--input", in1, "--input", in2, "--output", outdir, NULL};
    ck_assert_msg(tu_run_cli(args, NULL, NULL) == 0, "stderr: %s", tu_err);
    ck_assert_ptr_nonnull(strstr(tu_out, "keys -> "));
    snprintf(a, sizeof a, "%s/keys.npy", outdir);
    example("expected_keys.npy", b);
    double dk = max_diff(a, b);
    ck_assert_msg(dk <= 1e-5, "keys differ from PyTorch by %g", dk);
    snprintf(a, sizeof a, "%s/s0.npy", outdir);
    example("expected_s0.npy", b);
    double ds = max_diff(a, b);
    ck_assert_msg(ds <= 1e-5, "s0 differs from PyTorch by %g", ds);

    /* Without --output, the outputs are printed. */
    const char *args2[] = {"run", model, "--weights", w, "--input", in1, "--input", in2, NULL};
    ck_assert_int_eq(tu_run_cli(args2, NULL, NULL), 0);
    ck_assert_ptr_nonnull(strstr(tu_out, "keys: f32[3, 7, 32]"));
    ck_assert_ptr_nonnull(strstr(tu_out, "s0: f32[3, 16]"));
}
END_TEST

START_TEST(help_version_usage) {
    const char *h[] = {"--help", NULL};
    ck_assert_int_eq(tu_run_cli(h, NULL, NULL), 0);
    ck_assert_ptr_nonnull(strstr(tu_out, "usage: clgraph"));
    const char *v[] = {"--version", NULL};
    ck_assert_int_eq(tu_run_cli(v, NULL, NULL), 0);
    ck_assert_ptr_nonnull(strstr(tu_out, cg_version()));
    const char *u[] = {"frobnicate", NULL};
    ck_assert_int_eq(tu_run_cli(u, NULL, NULL), 2);
    ck_assert_ptr_nonnull(strstr(tu_err, "unknown command 'frobnicate'"));
    const char *o[] = {"run", "x.cg", "--bogus", "1", NULL};
    ck_assert_int_eq(tu_run_cli(o, NULL, NULL), 2);
    ck_assert_ptr_nonnull(strstr(tu_err, "unknown option '--bogus'"));
    const char *none[] = {NULL};
    ck_assert_int_eq(tu_run_cli(none, NULL, NULL), 2);
    const char *empty_dev[] = {"translate", "models/dates", "--device", "", NULL};
    ck_assert_int_eq(tu_run_cli(empty_dev, NULL, NULL), 2);
    ck_assert_str_eq(tu_err, "clgraph translate: option '--device' has an empty value\n");
    const char *empty_pos[] = {"check", "", NULL};
    ck_assert_int_eq(tu_run_cli(empty_pos, NULL, NULL), 2);
    ck_assert_str_eq(tu_err, "clgraph check: empty argument (number 1)\n");
    const char *wide[] = {"translate", "models/dates", "--beam", "1025", NULL};
    ck_assert_int_eq(tu_run_cli(wide, NULL, NULL), 2);
    ck_assert_str_eq(tu_err, "clgraph translate: --beam 1025 is wider than the limit of 1024\n");
    /* The 33rd --plugin is refused, not dropped. */
    for (int c = 0; c < 3; c++) {
        const char *cmds[] = {"translate", "conform", "ops"};
        const char *a[80] = {cmds[c]};
        int n = 1;
        if (c == 0) a[n++] = "models/dates";
        for (int i = 0; i < 33; i++) a[n++] = "--plugin", a[n++] = "libnothing.so";
        a[n] = NULL;
        ck_assert_int_eq(tu_run_cli(a, NULL, NULL), 2);
        char want[128];
        snprintf(want, sizeof want, "clgraph %s: at most 32 --plugin options\n", cmds[c]);
        ck_assert_str_eq(tu_err, want);
    }
    const char *bad_alpha[][6] = {{"translate", "models/dates", "--beam", "2", "--alpha", "nan"},
                                  {"translate", "models/dates", "--beam", "2", "--alpha", "-nan"},
                                  {"translate", "models/dates", "--beam", "2", "--alpha", "inf"},
                                  {"translate", "models/dates", "--beam", "2", "--alpha", "-0.5"}};
    for (int i = 0; i < 4; i++) {
        const char *a[] = {
            bad_alpha[i][0], bad_alpha[i][1], bad_alpha[i][2], bad_alpha[i][3], bad_alpha[i][4], bad_alpha[i][5], NULL};
        ck_assert_int_eq(tu_run_cli(a, NULL, NULL), 2);
        ck_assert_ptr_nonnull(strstr(tu_err, "--alpha takes a number in [0, 100]"));
    }
    /* One parser for every command: --opt=value, ranges and the usage line. */
    const char *eq_beam[] = {"translate", "models/dates", "--beam=0", NULL};
    ck_assert_int_eq(tu_run_cli(eq_beam, NULL, NULL), 2);
    ck_assert_str_eq(tu_err, "clgraph translate: --beam takes an integer >= 1, got '0'\n");
    const char *warmup[] = {"bench", "models/dates", "--warmup", "-1", NULL};
    ck_assert_int_eq(tu_run_cli(warmup, NULL, NULL), 2);
    ck_assert_str_eq(tu_err, "clgraph bench: --warmup takes an integer >= 0, got '-1'\n");
    const char *horizon[] = {"forecast", "models/dates", "--horizon=1000001", NULL};
    ck_assert_int_eq(tu_run_cli(horizon, NULL, NULL), 2);
    ck_assert_str_eq(tu_err, "clgraph forecast: --horizon takes an integer in [1, 1000000], got '1000001'\n");
    const char *timeout[] = {"conform", "--timeout", "0", NULL};
    ck_assert_int_eq(tu_run_cli(timeout, NULL, NULL), 2);
    ck_assert_str_eq(tu_err, "clgraph conform: --timeout takes seconds from 1 to 86400, got '0'\n");
    const char *repeat[] = {"run", "x.cg", "--repeat=0", NULL};
    ck_assert_int_eq(tu_run_cli(repeat, NULL, NULL), 2);
    ck_assert_str_eq(tu_err, "clgraph run: --repeat takes a count from 1 to 1000000, got '0'\n");
    const char *no_value[] = {"translate", "models/dates", "--max-len", NULL};
    ck_assert_int_eq(tu_run_cli(no_value, NULL, NULL), 2);
    ck_assert_str_eq(tu_err, "clgraph translate: option '--max-len' needs a value (try 'clgraph translate --help')\n");
}
END_TEST

/* Each command's --help puts its usage on a line of its own (the short
 * entries' descriptions were glued to it); usage errors point at the
 * command's own help; a bare plugin name says that dlopen does not look in
 * the current directory; an unknown op mentions --plugin. */
START_TEST(help_and_hints) {
    const char *cmds[][2] = {
        {"fmt", "usage: clgraph fmt MODEL.cg [--in-place]\n"},
        {"ops", "usage: clgraph ops [NAME]\n"},
        {"devices", "usage: clgraph devices\n"},
        {"s2s-graph", "usage: clgraph s2s-graph MODEL_DIR [--weights-dtype f32|bf16|f16|int8]\n"},
        {"forecast-graph", "usage: clgraph forecast-graph MODEL_DIR\n"},
        {"quantize", "usage: clgraph quantize MODEL_DIR --to bf16|f16|int8 -o OUT_DIR [--embeddings]\n"}};
    for (int i = 0; i < 6; i++) {
        const char *a[] = {cmds[i][0], "--help", NULL};
        ck_assert_int_eq(tu_run_cli(a, NULL, NULL), 0);
        ck_assert_msg(!strncmp(tu_out, cmds[i][1], strlen(cmds[i][1])), "%s", tu_out);
        /* the description follows on the next line, at the descriptions' column */
        const char *d = tu_out + strlen(cmds[i][1]);
        ck_assert_msg(!strncmp(d, "                           ", 27) && d[27] >= 'a' && d[27] <= 'z', "%s", tu_out);
    }
    const char *help_of[][5] = {{"translate", "models/dates", "--bogus", NULL, "'clgraph translate --help'"},
                                {"forecast", "models/elnino", "--bogus", NULL, "'clgraph forecast --help'"},
                                {"run", "x.cg", "--bogus", "1", "'clgraph run --help'"},
                                {"bench", "models/dates", "--bogus", NULL, "'clgraph bench --help'"},
                                {"translate", NULL, NULL, NULL, "'clgraph translate --help'"}};
    for (int i = 0; i < 5; i++) {
        const char *a[] = {help_of[i][0], help_of[i][1], help_of[i][2], help_of[i][3], NULL};
        ck_assert_int_eq(tu_run_cli(a, NULL, NULL), 2);
        ck_assert_msg(strstr(tu_err, help_of[i][4]) && !strstr(tu_err, "'clgraph --help'"), "%s", tu_err);
    }
    const char *bare[] = {"ops", "--plugin", "libnosuchplugin.so", NULL};
    ck_assert_int_eq(tu_run_cli(bare, NULL, NULL), 1);
    const char *nb[] = {"libnosuchplugin.so: cannot load plugin:", "not in the current directory",
                        "write ./libnosuchplugin.so", NULL};
    tu_assert_one_line(nb);
    const char *slash[] = {"ops", "--plugin", "./libnosuchplugin.so", NULL};
    ck_assert_int_eq(tu_run_cli(slash, NULL, NULL), 1);
    ck_assert_msg(!strstr(tu_err, "current directory"), "%s", tu_err);
    char p[512];
    const char *t = "graph g {\n  input x: f32[N]\n  y = my_plugin_op(x)\n  output y\n}\n";
    snprintf(p, sizeof p, "%s", tu_write_file("plugop.cg", t, strlen(t)));
    const char *chk[] = {"check", p, NULL};
    ck_assert_int_eq(tu_run_cli(chk, NULL, NULL), 1);
    const char *nu[] = {"plugop.cg:3:7: unknown op 'my_plugin_op' in node 'y'", "--plugin PATH", NULL};
    tu_assert_one_line(nu);
}
END_TEST

/* The conform table's columns line up under the header whatever the length
 * of an op's name (log_softmax_topk is 16 characters; the column was 14). */
START_TEST(conform_table_aligned) {
    const char *a[] = {"conform", "--op", "log_softmax_topk,add", "--quick", "--device", "opencl:0", NULL};
    int rc = tu_run_cli(a, NULL, NULL);
    if (strstr(tu_err, "running on the CPU only") || strstr(tu_err, "nothing to compare")) return;
    ck_assert_msg(rc == 0, "%s", tu_err);
    const char *hdr = strstr(tu_out, "op ");
    ck_assert_ptr_nonnull(hdr);
    long dev_col = strstr(hdr, "device") - hdr, res_col = strstr(hdr, "result") - hdr;
    int rows = 0;
    for (const char *l = strchr(hdr, '\n') + 1; *l; l = strchr(l, '\n') + 1) {
        if (!strncmp(l, "log_softmax_topk ", 17) || !strncmp(l, "add ", 4)) {
            const char *dev = strstr(l, "opencl:0");
            ck_assert_msg(dev && dev - l == dev_col, "%s", tu_out);
            const char *res = strstr(l, "pass");
            ck_assert_msg(res && res - l == res_col, "%s", tu_out);
            rows++;
        }
        if (!strchr(l, '\n')) break;
    }
    ck_assert_int_eq(rows, 2);
}
END_TEST

START_TEST(check_and_fmt) {
    char model[512];
    example("model.cg", model);
    const char *c[] = {"check", model, NULL};
    ck_assert_msg(tu_run_cli(c, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_ptr_nonnull(strstr(tu_out, "encoder.keys: f32[B, S, 32]  gru 'enc_rnn'  (output)"));
    ck_assert_ptr_nonnull(strstr(tu_out, "encoder.s0: f32[B, 16]"));
    const char *f[] = {"fmt", model, NULL};
    ck_assert_int_eq(tu_run_cli(f, NULL, NULL), 0);
    char formatted[512];
    snprintf(formatted, 512, "%s", tu_write_file("fmt1.cg", tu_out, strlen(tu_out)));
    char first[65536];
    strcpy(first, tu_out);
    const char *f2[] = {"fmt", formatted, NULL};
    ck_assert_int_eq(tu_run_cli(f2, NULL, NULL), 0);
    ck_assert_str_eq(tu_out, first); /* canonical form is a fixed point */
    /* --in-place keeps every comment (it deleted them all, silently). */
    const char *commented = "# why this graph\ngraph g {\n  input x: f32[2]   # two values\n"
                            "  # the only node\n  y = tanh(x)\n  output y\n}\n";
    char cpath[512];
    snprintf(cpath, sizeof cpath, "%s", tu_write_file("commented.cg", commented, strlen(commented)));
    const char *fi[] = {"fmt", cpath, "--in-place", NULL};
    ck_assert_msg(tu_run_cli(fi, NULL, NULL) == 0, "%s", tu_err);
    char back[1024];
    tu_slurp(cpath, back, sizeof back);
    ck_assert_str_eq(back, "# why this graph\ngraph g {\n  input x: f32[2]  # two values\n"
                           "  # the only node\n  y = tanh(x)\n  output y\n}\n");
    const char *ops[] = {"ops", "gru", NULL};
    ck_assert_int_eq(tu_run_cli(ops, NULL, NULL), 0);
    ck_assert_ptr_nonnull(strstr(tu_out, "attribute hidden: int (required)"));
}
END_TEST

START_TEST(bad_graph_text) {
    char p[512];
    const char *t = "graph g {\n  input x: f32[N]\n  y = tanh(x\n  output y\n}\n";
    snprintf(p, 512, "%s", tu_write_file("bad.cg", t, strlen(t)));
    const char *a[] = {"check", p, NULL};
    ck_assert_int_eq(tu_run_cli(a, NULL, NULL), 1);
    /* Inside parentheses a statement continues on the next line. */
    const char *n[] = {"bad.cg:4:3: expected ')' or ',' in inputs, got 'output'", NULL};
    tu_assert_one_line(n);

    const char *t2 = "graph g {\n  input x: f32[N]\n  y = frobnicate(x)\n  output y\n}\n";
    snprintf(p, 512, "%s", tu_write_file("unknown.cg", t2, strlen(t2)));
    ck_assert_int_eq(tu_run_cli(a, NULL, NULL), 1);
    const char *n2[] = {"unknown.cg:3:7: unknown op 'frobnicate' in node 'y'", NULL};
    tu_assert_one_line(n2);

    const char *t3 = "graph g {\n  input x: f32[N, 4]\n  y = softmax(x) {axis: \"last\"}\n  output y\n}\n";
    snprintf(p, 512, "%s", tu_write_file("attr.cg", t3, strlen(t3)));
    ck_assert_int_eq(tu_run_cli(a, NULL, NULL), 1);
    const char *n3[] = {"attr.cg:3:", "softmax 'y': attribute 'axis' must be int, got string", NULL};
    tu_assert_one_line(n3);

    const char *t4 = "graph g {\n  input a: f32[2, 3]\n  input b: f32[4, 5]\n  c = matmul(a, b)\n  output c\n}\n";
    snprintf(p, 512, "%s", tu_write_file("shape.cg", t4, strlen(t4)));
    ck_assert_int_eq(tu_run_cli(a, NULL, NULL), 1);
    const char *n4[] = {"shape.cg:4:3: matmul 'c': ", NULL};
    tu_assert_one_line(n4);

    const char *miss[] = {"check", "/nonexistent/m.cg", NULL};
    ck_assert_int_eq(tu_run_cli(miss, NULL, NULL), 1);
    const char *n5[] = {"/nonexistent/m.cg: cannot open", NULL};
    tu_assert_one_line(n5);
}
END_TEST

START_TEST(bad_weights_and_inputs) {
    char model[512], w[512], src[512], len[512], in1[600], in2[600], p[512];
    example("model.cg", model);
    example("weights.safetensors", w);
    example("src.npy", src);
    example("src_len.npy", len);
    snprintf(in1, sizeof in1, "src=%s", src);
    snprintf(in2, sizeof in2, "src_len=%s", len);

    /* A truncated weights file. */
    FILE *f = fopen(w, "rb");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    snprintf(p, 512, "%s", tu_write_file("trunc.safetensors", buf, n / 2));
    const char *a[] = {"run", model, "--weights", p, "--input", in1, "--input", in2, NULL};
    ck_assert_int_eq(tu_run_cli(a, NULL, NULL), 1);
    const char *n1[] = {"trunc.safetensors", NULL};
    tu_assert_one_line(n1);

    /* Weights that lack a parameter. */
    const char *a2[] = {"run", model, "--weights", src, "--input", in1, "--input", in2, NULL};
    ck_assert_int_eq(tu_run_cli(a2, NULL, NULL), 1);
    const char *n2[] = {"src.npy", NULL};
    tu_assert_one_line(n2);

    /* A missing input, an input of the wrong dtype, an unknown input name. */
    const char *a3[] = {"run", model, "--weights", w, "--input", in1, NULL};
    ck_assert_int_eq(tu_run_cli(a3, NULL, NULL), 1);
    const char *n3[] = {"needs input 'src_len'", NULL};
    tu_assert_one_line(n3);
    char swapped[600];
    snprintf(swapped, sizeof swapped, "src=%s/models/example/expected_s0.npy", tu_src_dir());
    const char *a4[] = {"run", model, "--weights", w, "--input", swapped, "--input", in2, NULL};
    ck_assert_int_eq(tu_run_cli(a4, NULL, NULL), 1);
    const char *n4[] = {"input 'src' is f32[3, 16], graph 'encoder' expects i32[B, S]", NULL};
    tu_assert_one_line(n4);
    char bogus[600];
    snprintf(bogus, sizeof bogus, "nosuch=%s", src);
    const char *a5[] = {"run", model, "--weights", w, "--input", in1, "--input", in2, "--input", bogus, NULL};
    ck_assert_int_eq(tu_run_cli(a5, NULL, NULL), 1);
    const char *n5[] = {"no input named 'nosuch'", NULL};
    tu_assert_one_line(n5);

    /* A malformed .npy. */
    snprintf(p, 512, "%s", tu_write_file("bad.npy", "\x93NUMPY\x01\x00garbage", 16));
    char badin[600];
    snprintf(badin, sizeof badin, "src=%s", p);
    const char *a6[] = {"run", model, "--weights", w, "--input", badin, "--input", in2, NULL};
    ck_assert_int_eq(tu_run_cli(a6, NULL, NULL), 1);
    const char *n6[] = {"--input src: ", "bad.npy", NULL};
    tu_assert_one_line(n6);

    /* A length outside [0, S] is caught by the kernel, naming the node. */
    int32_t bad_len[3] = {5, 9, 7};
    cg_tensor *t;
    int64_t three = 3;
    ck_assert_int_eq(cg_tensor_create(CG_I32, 1, &three, &t), CG_OK);
    memcpy(cg_tensor_data(t), bad_len, sizeof bad_len);
    snprintf(p, sizeof p, "%s/len.npy", tu_dir);
    ck_assert_int_eq(cg_tensor_save_npy(t, p), CG_OK);
    cg_tensor_free(t);
    char lenin[600];
    snprintf(lenin, sizeof lenin, "src_len=%s", p);
    const char *a7[] = {"run", model, "--weights", w, "--input", in1, "--input", lenin, NULL};
    ck_assert_int_eq(tu_run_cli(a7, NULL, NULL), 1);
    const char *n7[] = {"model.cg:27:3: gru 'enc_rnn' on cpu: input 1 (lengths) holds 9 at position 1, outside [0, 7]",
                        NULL};
    tu_assert_one_line(n7);
    /* ... and the same on OpenCL, where the kernel records it in its check
     * words (it used to clamp the length and exit 0). */
    const char *a7cl[] = {"run", model, "--weights", w, "--input", in1, "--input", lenin, "--device", "opencl:0", NULL};
    ck_assert_int_eq(tu_run_cli(a7cl, NULL, NULL), 1);
    const char *n7cl[] = {"model.cg:27:3: gru 'enc_rnn' on opencl:0",
                          "input 1 (lengths) holds 9 at position 1, outside [0, 7]", NULL};
    tu_assert_one_line(n7cl);
    /* the next run on the same device with good lengths is clean */
    const char *a7ok[] = {"run", model, "--weights", w, "--input", in1, "--input", in2, "--device", "opencl:0", NULL};
    ck_assert_msg(tu_run_cli(a7ok, NULL, NULL) == 0, "%s", tu_err);

    /* A plugin that is no plugin. */
    const char *a8[] = {"run", model, "--plugin", w, "--weights", w, NULL};
    ck_assert_int_eq(tu_run_cli(a8, NULL, NULL), 1);
    const char *n8[] = {"cannot load plugin", NULL};
    tu_assert_one_line(n8);
}
END_TEST

/* `run` and `plan` take int64 .npy files (numpy's default integers) for i32
 * inputs, converted exactly; a value past i32 is one line naming the input. */
START_TEST(int64_inputs_convert) {
    char model[512], w[512], src[512], len[512], outdir[512], a[600], b[600], in1[600], in2[600];
    example("model.cg", model);
    example("weights.safetensors", w);
    example("src.npy", src);
    example("src_len.npy", len);
    const char *files[2] = {src, len}, *names[2] = {"src64.npy", "len64.npy"};
    char paths[2][512];
    cg_tensor *wide[2];
    for (int i = 0; i < 2; i++) {
        cg_tensor *t;
        ck_assert_int_eq(cg_tensor_load_npy(files[i], &t), CG_OK);
        ck_assert_int_eq(cg_tensor_dtype(t), CG_I32);
        ck_assert_int_eq(cg_tensor_convert(t, CG_I64, &wide[i]), CG_OK);
        snprintf(paths[i], sizeof paths[i], "%s", tu_path(names[i]));
        ck_assert_int_eq(cg_tensor_save_npy(wide[i], paths[i]), CG_OK);
        cg_tensor_free(t);
    }
    snprintf(outdir, sizeof outdir, "%s/out", tu_dir);
    snprintf(in1, sizeof in1, "src=%s", paths[0]);
    snprintf(in2, sizeof in2, "src_len=%s", paths[1]);
    const char *args[] = {"run", model, "--weights", w, "--input", in1, "--input", in2, "--output", outdir, NULL};
    ck_assert_msg(tu_run_cli(args, NULL, NULL) == 0, "stderr: %s", tu_err);
    snprintf(a, sizeof a, "%s/keys.npy", outdir);
    example("expected_keys.npy", b);
    ck_assert(max_diff(a, b) <= 1e-5);
    const char *pargs[] = {"plan", model, "--weights", w, "--input", in1, "--input", in2, NULL};
    ck_assert_msg(tu_run_cli(pargs, NULL, NULL) == 0, "stderr: %s", tu_err);

    /* a token id past i32 */
    ((int64_t *)cg_tensor_data(wide[0]))[4] = INT64_C(1) << 40;
    ck_assert_int_eq(cg_tensor_save_npy(wide[0], paths[0]), CG_OK);
    ck_assert_int_eq(tu_run_cli(args, NULL, NULL), 1);
    const char *n1[] = {"clgraph: --input src: ", "src64.npy: input 'src' of graph 'encoder' is i32: ",
                        "element 4 has value 1099511627776, which does not fit in i32", NULL};
    tu_assert_one_line(n1);
    ck_assert_int_eq(tu_run_cli(pargs, NULL, NULL), 1);
    tu_assert_one_line(n1);
    /* a float file for an i32 input has no exact conversion: it is left to
     * the run, which names both types */
    cg_tensor *h;
    int64_t d2[2] = {3, 7};
    ck_assert_int_eq(cg_tensor_create(CG_F16, 2, d2, &h), CG_OK);
    ck_assert_int_eq(cg_tensor_save_npy(h, paths[0]), CG_OK);
    cg_tensor_free(h);
    ck_assert_int_eq(tu_run_cli(args, NULL, NULL), 1);
    const char *n2[] = {"input 'src' is f16[3, 7], graph 'encoder' expects i32[B, S]", NULL};
    tu_assert_one_line(n2);
    cg_tensor_free(wide[0]);
    cg_tensor_free(wide[1]);
}
END_TEST

START_TEST(same_results_on_opencl) {
    /* The example graph on the first OpenCL device gives the CPU's numbers
     * (and PyTorch's). */
    char model[512], w[512], src[512], len[512], in1[600], in2[600], a[600], b[600];
    char cpu_dir[512], cl_dir[512];
    example("model.cg", model);
    example("weights.safetensors", w);
    example("src.npy", src);
    example("src_len.npy", len);
    snprintf(in1, sizeof in1, "src=%s", src);
    snprintf(in2, sizeof in2, "src_len=%s", len);
    snprintf(cpu_dir, sizeof cpu_dir, "%s/cpu", tu_dir);
    snprintf(cl_dir, sizeof cl_dir, "%s/cl", tu_dir);
    const char *d[] = {"devices", NULL};
    ck_assert_int_eq(tu_run_cli(d, NULL, NULL), 0);
    ck_assert_msg(strstr(tu_out, "opencl:0") != NULL, "no OpenCL device listed: %s", tu_out);
    /* --verbose is an option of every command (help): devices takes it too */
    const char *dv[] = {"devices", "--verbose", NULL};
    ck_assert_msg(tu_run_cli(dv, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "opencl:0") != NULL, "devices --verbose: %s", tu_out);
    const char *r1[] = {"run", model,      "--weights", w,          "--input", in1, "--input",
                        in2,   "--output", cpu_dir,     "--device", "cpu",     NULL};
    ck_assert_msg(tu_run_cli(r1, NULL, NULL) == 0, "%s", tu_err);
    const char *r2[] = {"run", model,      "--weights", w,          "--input",  in1, "--input",
                        in2,   "--output", cl_dir,      "--device", "opencl:0", NULL};
    ck_assert_msg(tu_run_cli(r2, NULL, NULL) == 0, "%s", tu_err);
    const char *outs[] = {"keys", "s0"};
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s/%s.npy", cpu_dir, outs[i]);
        snprintf(b, sizeof b, "%s/%s.npy", cl_dir, outs[i]);
        double diff = max_diff(a, b);
        ck_assert_msg(diff <= 1e-5, "%s: opencl:0 differs from cpu by %g", outs[i], diff);
    }
    const char *bad[] = {"run", model, "--weights", w, "--input", in1, "--input", in2, "--device", "opencl:7", NULL};
    ck_assert_int_eq(tu_run_cli(bad, NULL, NULL), 1);
    const char *n[] = {"opencl:7", NULL};
    tu_assert_one_line(n);
}
END_TEST

/* translate --profile writes a Chrome trace: a host track and one per
 * device, every kernel with its op, node, graph and input shapes, copies
 * with bytes; a profiled run's kernels and copies add up to its time
 * (within 10%: the rest is binding inputs and reading outputs). run --stats
 * prints the time per node. An unwritable trace is one line. */
START_TEST(profile_trace) {
    char trace[600], dates[600];
    snprintf(trace, sizeof trace, "%s/t.json", tu_dir);
    snprintf(dates, sizeof dates, "%s/models/dates", tu_src_dir());
    const char *in = tu_write_file("in.txt", "the 22nd of November 2026\n14/04/1901\n", 37);
    const char *t[] = {"translate", dates, "--device", "opencl:0", "--profile", trace, NULL};
    ck_assert_msg(tu_run_cli(t, NULL, in) == 0, "%s", tu_err);
    ck_assert_str_eq(tu_out, "2026-11-22\n1901-04-14\n");
    char *text = tu_read_text(trace, NULL);
    cJSON *j = cJSON_Parse(text);
    ck_assert_msg(j != NULL, "not JSON: %.200s", text);
    const cJSON *evs = cJSON_GetObjectItem(j, "traceEvents"), *e;
    int tracks_host = 0, tracks_dev = 0, kernels = 0, copies = 0, runs = 0, timed = 0;
    double step_us = 0, run_us = 0, device_us = 0;
    cJSON_ArrayForEach(e, evs) {
        const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
        const cJSON *args = cJSON_GetObjectItem(e, "args");
        if (!strcmp(ph, "M")) {
            const cJSON *nm = cJSON_GetObjectItem(args, "name");
            if (nm && !strcmp(nm->valuestring, "host")) tracks_host++;
            if (nm && !strcmp(nm->valuestring, "opencl:0")) tracks_dev++;
            continue;
        }
        ck_assert_str_eq(ph, "X");
        const char *cat = cJSON_GetObjectItem(e, "cat")->valuestring;
        double dur = cJSON_GetObjectItem(e, "dur")->valuedouble;
        ck_assert(dur >= 0 && cJSON_GetObjectItem(e, "ts")->valuedouble >= 0);
        const cJSON *dv = cJSON_GetObjectItem(args, "device_us");
        if (dv) { /* PoCL's queue has timestamps: the device's own share of the step */
            ck_assert(dv->valuedouble >= 0);
            device_us += dv->valuedouble;
            timed++;
        }
        if (!strcmp(cat, "kernel")) {
            kernels++;
            step_us += dur;
            ck_assert_str_eq(cJSON_GetObjectItem(e, "name")->valuestring, cJSON_GetObjectItem(args, "op")->valuestring);
            ck_assert(cJSON_GetObjectItem(args, "node") && cJSON_GetObjectItem(args, "graph"));
            ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(args, "shapes")->valuestring, "["));
        } else if (!strcmp(cat, "copy")) {
            copies++;
            step_us += dur;
            ck_assert(cJSON_GetObjectItem(args, "bytes")->valuedouble >= 0);
        } else if (!strcmp(cat, "run")) {
            runs++;
            run_us += dur;
        }
    }
    ck_assert_int_eq(tracks_host, 1);
    ck_assert_int_eq(tracks_dev, 1);
    ck_assert_msg(kernels > 20 && copies > 0 && runs > 2, "%d kernels, %d copies, %d runs", kernels, copies, runs);
    ck_assert_msg(step_us <= run_us && step_us >= 0.9 * run_us, "steps %.1f us of runs %.1f us", step_us, run_us);
    ck_assert_msg(timed >= kernels && device_us > 0 && device_us <= step_us, "%d timed, %.1f us on the device of %.1f",
                  timed, device_us, step_us);
    cJSON_Delete(j);
    free(text);

    char model[512], w[512], src[512], len[512], in1[600], in2[600];
    example("model.cg", model);
    example("weights.safetensors", w);
    example("src.npy", src);
    example("src_len.npy", len);
    snprintf(in1, sizeof in1, "src=%s", src);
    snprintf(in2, sizeof in2, "src_len=%s", len);
    const char *r[] = {"run", model, "--weights", w, "--input", in1, "--input", in2, "--stats", NULL};
    ck_assert_msg(tu_run_cli(r, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_err, "time per node (a second, warm run, each step waited for):\nnode ") &&
                      strstr(tu_err, "\nencoder/enc_rnn                  gru            cpu ") &&
                      strstr(tu_err, "\nkernels and copies: "),
                  "%s", tu_err);
    const char *bad[] = {"run", model,       "--weights",           w,   "--input", in1, "--input",
                         in2,   "--profile", "/nonexistent/t.json", NULL};
    ck_assert_int_eq(tu_run_cli(bad, NULL, NULL), 1);
    const char *needles[] = {"cannot write /nonexistent/t.json", NULL};
    tu_assert_one_line(needles);
}
END_TEST

START_TEST(no_opencl_platform) {
    /* With no ICD at all, clgraph still runs on the CPU and says so once. */
    char empty[300], model[512], w[512], src[512], len[512], in1[600], in2[600];
    snprintf(empty, sizeof empty, "%s/no-icds", tu_dir);
    ck_assert_int_eq(mkdir(empty, 0755), 0);
    setenv("OCL_ICD_VENDORS", empty, 1);
    const char *d[] = {"devices", NULL};
    int rc = tu_run_cli(d, NULL, NULL);
    unsetenv("OCL_ICD_VENDORS");
    ck_assert_int_eq(rc, 0);
    ck_assert_ptr_nonnull(strstr(tu_out, "cpu "));
    ck_assert_ptr_null(strstr(tu_out, "opencl:0"));
    const char *n[] = {"note: ", "running on the CPU only", NULL};
    tu_assert_one_line(n);
    example("model.cg", model);
    example("weights.safetensors", w);
    example("src.npy", src);
    example("src_len.npy", len);
    snprintf(in1, sizeof in1, "src=%s", src);
    snprintf(in2, sizeof in2, "src_len=%s", len);
    setenv("OCL_ICD_VENDORS", empty, 1);
    const char *r[] = {"run", model, "--weights", w, "--input", in1, "--input", in2, NULL};
    rc = tu_run_cli(r, NULL, NULL);
    const char *rcl[] = {"run", model, "--weights", w, "--input", in1, "--input", in2, "--device", "opencl:0", NULL};
    int rc2 = tu_run_cli(rcl, NULL, NULL);
    unsetenv("OCL_ICD_VENDORS");
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(rc2, 1);
    const char *n2[] = {"device 'opencl:0': ", NULL};
    tu_assert_one_line(n2);
}
END_TEST

/* A plan too large for memory is refused with its size under --device auto
 * too, before the measurement allocates shadow copies of its values (it
 * used to allocate them first and then blame the op). */
START_TEST(auto_checks_sizes_first) {
    static const char text[] = "graph big {\n  input x: f32[N, 4]\n  y = tanh(x)\n  z = tanh(y)\n  output z\n}\n";
    const char *g = tu_write_file("big.cg", text, sizeof text - 1);
    const char *devs[] = {"cpu", "auto"};
    for (int i = 0; i < 2; i++) {
        const char *a[] = {"plan", g, "--bind", "N=100000000000", "--device", devs[i], NULL};
        ck_assert_int_eq(tu_run_cli(a, NULL, NULL), 1);
        const char *n[] = {"the plan needs 1600000000000 bytes on cpu", NULL};
        tu_assert_one_line(n);
    }
}
END_TEST

START_TEST(plan_and_placement) {
    char model[512], w[512], src[512], len[512], in1[600], in2[600], dot[600], a[600], b[600], outdir[512];
    example("model.cg", model);
    example("weights.safetensors", w);
    example("src.npy", src);
    example("src_len.npy", len);
    snprintf(in1, sizeof in1, "src=%s", src);
    snprintf(in2, sizeof in2, "src_len=%s", len);
    snprintf(dot, sizeof dot, "%s/plan.dot", tu_dir);

    /* Every node with its device, the copies, the memory. */
    const char *p1[] = {"plan",  model, "--weights", w, "--bind", "B=3,S=7", "--place", "*=cpu,enc_rnn=opencl:0",
                        "--dot", dot,   NULL};
    ck_assert_msg(tu_run_cli(p1, NULL, NULL) == 0, "%s", tu_err);
    const char *nodes[] = {"x", "enc_rnn", "h_fwd", "h_bwd", "h_cat", "h_last", "bridge", "s0"};
    for (int i = 0; i < 8; i++)
        ck_assert_msg(!strcmp(tu_plan_step_device(tu_out, nodes[i]), i == 1 ? "opencl:0" : "cpu"), "%s: %s", nodes[i],
                      tu_out);
    ck_assert_msg(strstr(tu_out, "plan of graph 'encoder' for B=3 S=7") != NULL, "%s", tu_out);
    ck_assert_msg(strstr(tu_out, "cpu -> opencl:0") && strstr(tu_out, "opencl:0 -> cpu"), "%s", tu_out);
    ck_assert_msg(strstr(tu_out, "copies: ") && strstr(tu_out, "memory: cpu "), "%s", tu_out);
    ck_assert_msg(strstr(tu_out, "graphviz: ") != NULL, "%s", tu_out);
    char dot_text[65536];
    tu_slurp(dot, dot_text, sizeof dot_text);
    ck_assert_msg(strncmp(dot_text, "digraph", 7) == 0, "%s", dot_text);
    ck_assert_ptr_nonnull(strstr(dot_text, "subgraph cluster_"));

    /* The binding read off real inputs. */
    const char *p2[] = {"plan", model, "--weights", w, "--input", in1, "--input", in2, NULL};
    ck_assert_msg(tu_run_cli(p2, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "for B=3 S=7; default device cpu") != NULL, "%s", tu_out);
    ck_assert_msg(strstr(tu_out, "copies: 0 per run") != NULL, "%s", tu_out);

    /* No binding: says which size is missing. */
    const char *p3[] = {"plan", model, "--weights", w, NULL};
    ck_assert_int_eq(tu_run_cli(p3, NULL, NULL), 1);
    const char *n3[] = {"give a size for B", NULL};
    tu_assert_one_line(n3);

    /* run --place --stats: PyTorch's numbers, and the statistics on stderr. */
    snprintf(outdir, sizeof outdir, "%s/out", tu_dir);
    const char *r1[] = {"run", model,      "--weights", w,         "--input",          in1,       "--input",
                        in2,   "--output", outdir,      "--place", "enc_rnn=opencl:0", "--stats", NULL};
    ck_assert_msg(tu_run_cli(r1, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strncmp(tu_err, "stats: ", 7) == 0 && strstr(tu_err, " copies ("), "%s", tu_err);
    snprintf(a, sizeof a, "%s/keys.npy", outdir);
    example("expected_keys.npy", b);
    ck_assert_double_le(max_diff(a, b), 1e-5);
    snprintf(a, sizeof a, "%s/s0.npy", outdir);
    example("expected_s0.npy", b);
    ck_assert_double_le(max_diff(a, b), 1e-5);

    /* A malformed rule is a command-line mistake (exit 2), an unknown
     * device a failure (exit 1); one line each. */
    const char *r2[] = {"run", model, "--weights", w, "--input", in1, "--input", in2, "--place", "foo", NULL};
    ck_assert_int_eq(tu_run_cli(r2, NULL, NULL), 2);
    const char *n2[] = {"--place takes PATTERN=DEVICE rules", "'foo'", NULL};
    tu_assert_one_line(n2);
    const char *r3[] = {"plan", model, "--weights", w, "--bind", "B=1,S=2", "--place", "bridge=opencl:9", NULL};
    ck_assert_int_eq(tu_run_cli(r3, NULL, NULL), 1);
    const char *n4[] = {"placement rule 'bridge=opencl:9': ", "opencl:9", NULL};
    tu_assert_one_line(n4);
}
END_TEST

/* The part of a `clgraph plan MODEL_DIR` output that is graph `graph`'s
 * plan (up to the next plan), in buf ("" when there is none). */
static void plan_section(const char *text, const char *graph, char *buf, size_t size) {
    char head[128];
    snprintf(head, sizeof head, "plan of graph '%s' for", graph);
    const char *s = strstr(text, head);
    buf[0] = 0;
    if (!s) return;
    const char *e = strstr(s + 1, "\nplan of graph '");
    size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
    if (n >= size) n = size - 1;
    memcpy(buf, s, n);
    buf[n] = 0;
}

START_TEST(plan_model_dir) {
    /* A seq2seq model directory: the plans of its encoder and decoders for
     * one sentence of 10 tokens, placed as translate would place them. */
    static char enc[65536], dec[65536], logp[65536];
    char dates[512], dot[600], path[700];
    snprintf(dates, sizeof dates, "%s/models/dates", tu_src_dir());
    const char *p1[] = {"plan", dates, "--place", "encoder=opencl:0,decoder=cpu", NULL};
    ck_assert_msg(tu_run_cli(p1, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "for B=1,N=1,P=1,S=10 (one sentence") != NULL, "%s", tu_out);
    plan_section(tu_out, "encoder", enc, sizeof enc);
    plan_section(tu_out, "decoder", dec, sizeof dec);
    plan_section(tu_out, "decoder_logp", logp, sizeof logp);
    ck_assert_msg(strstr(enc, "for B=1 S=10") != NULL, "%s", tu_out);
    ck_assert_msg(dec[0] && logp[0], "%s", tu_out);
    const char *enc_nodes[] = {"x", "enc_rnn", "keys_proj", "bridge", "s0"};
    for (int i = 0; i < 5; i++)
        ck_assert_msg(!strcmp(tu_plan_step_device(enc, enc_nodes[i]), "opencl:0"), "%s: %s", enc_nodes[i], enc);
    ck_assert_msg(strstr(enc, "cpu -> opencl:0") && strstr(enc, "read back from opencl:0"), "%s", enc);
    /* `decoder` names the graph decoder; decoder_logp takes --device. */
    const char *dec_nodes[] = {"y", "attn_e", "attn_c", "dec_l0", "out", "top_logp"};
    for (int i = 0; i < 6; i++)
        ck_assert_msg(!strcmp(tu_plan_step_device(dec, dec_nodes[i]), "cpu"), "%s: %s", dec_nodes[i], dec);
    ck_assert_msg(!strcmp(tu_plan_step_device(logp, "logp"), "cpu"), "%s", logp);
    ck_assert_msg(strstr(dec, "copies: 0 per run") != NULL, "%s", dec);

    /* No placement: everything on the CPU, no copies; --bind overrides a size. */
    const char *p2[] = {"plan", dates, "--bind", "S=30", NULL};
    ck_assert_msg(tu_run_cli(p2, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "for B=1,N=1,P=1,S=30\n") != NULL, "%s", tu_out);
    plan_section(tu_out, "encoder", enc, sizeof enc);
    plan_section(tu_out, "decoder", dec, sizeof dec);
    ck_assert_msg(strstr(enc, "for B=1 S=30") && strstr(enc, "-> f32[1, 30, 32]"), "%s", enc);
    ck_assert_msg(!strcmp(tu_plan_step_device(enc, "enc_rnn"), "cpu"), "%s", enc);
    ck_assert_msg(!strcmp(tu_plan_step_device(dec, "dec_l0"), "cpu"), "%s", dec);
    ck_assert_msg(strstr(enc, "copies: 0 per run") && strstr(dec, "copies: 0 per run"), "%s", tu_out);

    /* --dot: one Graphviz file per graph; with --graph, that graph in FILE. */
    snprintf(dot, sizeof dot, "%s/plan.dot", tu_dir);
    const char *p3[] = {"plan", dates, "--device", "opencl:0", "--dot", dot, NULL};
    ck_assert_msg(tu_run_cli(p3, NULL, NULL) == 0, "%s", tu_err);
    const char *graphs[] = {"encoder", "decoder", "decoder_logp"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/plan-%s.dot", tu_dir, graphs[i]);
        ck_assert_msg(strstr(tu_out, path) != NULL, "%s", tu_out);
        tu_slurp(path, enc, sizeof enc);
        ck_assert_msg(strncmp(enc, "digraph", 7) == 0 && strstr(enc, "subgraph cluster_"), "%s: %s", path, enc);
    }
    const char *p4[] = {"plan", dates, "--graph", "decoder", "--bind", "B=4,P=4", "--dot", dot, NULL};
    ck_assert_msg(tu_run_cli(p4, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "plan of graph 'decoder' for B=4") && !strstr(tu_out, "graph 'encoder'") &&
                      !strstr(tu_out, "graph 'decoder_logp'"),
                  "%s", tu_out);
    tu_slurp(dot, enc, sizeof enc);
    ck_assert_msg(strncmp(enc, "digraph \"decoder\"", 17) == 0, "%s", enc);

    /* Bad input: one line, exit 1, nothing on stdout. */
    const char *b1[] = {"plan", tu_dir, NULL};
    ck_assert_int_eq(tu_run_cli(b1, NULL, NULL), 1);
    const char *n1[] = {"not a seq2seq model directory", "config.json", NULL};
    tu_assert_one_line(n1);
    /* a malformed --bind is a command-line mistake: exit 2 (it was 1) */
    const char *b2[] = {"plan", dates, "--bind", "S=x", NULL};
    ck_assert_int_eq(tu_run_cli(b2, NULL, NULL), 2);
    const char *n2[] = {"clgraph plan: --bind 'S=x'", "NAME=SIZE", NULL};
    tu_assert_one_line(n2);
    const char *b2b[] = {"plan", dates, "--bind", "B==,", NULL};
    ck_assert_int_eq(tu_run_cli(b2b, NULL, NULL), 2);
    tu_assert_one_line(n2 + 1);
    const char *b3[] = {"plan", dates, "--bind", "X=3", NULL};
    ck_assert_int_eq(tu_run_cli(b3, NULL, NULL), 1);
    const char *n3[] = {"no dimension named 'X'", NULL};
    tu_assert_one_line(n3);
    ck_assert_str_eq(tu_out, "");
    const char *b4[] = {"plan", dates, "--place", "decoder=opencl:9", NULL};
    ck_assert_int_eq(tu_run_cli(b4, NULL, NULL), 1);
    const char *n4[] = {"opencl:9", NULL};
    tu_assert_one_line(n4);
    const char *b5[] = {"plan", dates, "--graph", "bridge", NULL};
    ck_assert_int_eq(tu_run_cli(b5, NULL, NULL), 1);
    const char *n5[] = {"no graph 'bridge'", NULL};
    tu_assert_one_line(n5);
    const char *b6[] = {"plan", dates, "--weights", "w.safetensors", NULL};
    ck_assert_int_eq(tu_run_cli(b6, NULL, NULL), 2);
    const char *n6[] = {"model directory", NULL};
    tu_assert_one_line(n6);

    const char *h[] = {"plan", "--help", NULL};
    ck_assert_int_eq(tu_run_cli(h, NULL, NULL), 0);
    ck_assert_msg(strstr(tu_out, "usage: clgraph plan") && strstr(tu_out, "MODEL_DIR"), "%s", tu_out);
}
END_TEST

/* Checks a Graphviz text: every edge joins two declared nodes (an edge from
 * an undeclared one makes Graphviz draw a bare node of that name), and every
 * copy (shape=cds) feeds something. */
static void assert_dot_closed(const char *text, const char *what) {
    static char ids[4096][16];
    int n = 0;
    for (const char *l = text; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
        char id[16];
        if (sscanf(l, " %15[a-z0-9] [", id) == 1 && strncmp(l, "  node ", 7) && n < 4096) {
            const char *e = strchr(l, '\n');
            const char *br = strchr(l, '[');
            if (br && (!e || br < e)) snprintf(ids[n++], 16, "%s", id);
        }
    }
    ck_assert_msg(n > 0, "%s: no nodes in %s", what, text);
    int edges = 0;
    for (const char *l = text; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
        char a[16], b[16];
        if (sscanf(l, " %15[a-z0-9] -> %15[a-z0-9];", a, b) != 2) continue;
        edges++;
        int fa = 0, fb = 0;
        for (int i = 0; i < n; i++) fa |= !strcmp(ids[i], a), fb |= !strcmp(ids[i], b);
        ck_assert_msg(fa && fb, "%s: edge %s -> %s joins an undeclared node:\n%s", what, a, b, text);
    }
    ck_assert_msg(edges > 0, "%s: no edges", what);
    for (const char *c = strstr(text, "shape=cds"); c; c = strstr(c + 1, "shape=cds")) {
        const char *l = c;
        while (l > text && l[-1] != '\n') l--;
        char id[16], edge[40];
        ck_assert(sscanf(l, " %15[a-z0-9]", id) == 1);
        snprintf(edge, sizeof edge, "  %s -> ", id);
        ck_assert_msg(strstr(text, edge) != NULL, "%s: copy %s feeds nothing:\n%s", what, id, text);
    }
}

/* plan --dot: the edges of every graph join declared nodes, with copies
 * between devices in both directions; the render hint names each file's own
 * picture. */
START_TEST(plan_dot_edges) {
    const char *places[][2] = {{"--device", "opencl:0"},
                               {"--place", "encoder=opencl:0,decoder*=cpu"},
                               {"--place", "encoder=cpu,*attn*=opencl:0"}};
    char dates[512], dot[600], path[700];
    snprintf(dates, sizeof dates, "%s/models/dates", tu_src_dir());
    snprintf(dot, sizeof dot, "%s/p.dot", tu_dir);
    for (int i = 0; i < 3; i++) {
        const char *a[] = {"plan", dates, places[i][0], places[i][1], "--bind", "B=2,P=2", "--dot", dot, NULL};
        int rc = tu_run_cli(a, NULL, NULL);
        if (strstr(tu_err, "running on the CPU only")) return;
        ck_assert_msg(rc == 0, "%s", tu_err);
        const char *graphs[] = {"encoder", "decoder", "decoder_logp"};
        int copies = 0;
        for (int g = 0; g < 3; g++) {
            char hint[1600];
            snprintf(path, sizeof path, "%s/p-%s.dot", tu_dir, graphs[g]);
            snprintf(hint, sizeof hint, "dot -Tsvg %s -o %s/p-%s.svg)", path, tu_dir, graphs[g]);
            ck_assert_msg(strstr(tu_out, hint) != NULL, "%s", tu_out);
            static char text[1 << 17];
            tu_slurp(path, text, sizeof text);
            copies += strstr(text, "shape=cds") != NULL;
            assert_dot_closed(text, path);
        }
        ck_assert_msg(copies > 0, "%s: no graph has a copy", places[i][1]);
    }
}
END_TEST

START_TEST(auto_placement_cost_cache) {
    /* --device auto measures kernels and copies into costs.txt in the cache
     * directory; a second process plans from it alone and so gives the same
     * plan and estimates. */
    char model[512], w[512], cache[400], env[600], costs[600];
    example("model.cg", model);
    example("weights.safetensors", w);
    snprintf(cache, sizeof cache, "%s/cache", tu_dir);
    snprintf(costs, sizeof costs, "%s/costs.txt", cache);
    const char *old = getenv("CLGRAPH_CACHE_DIR");
    char saved[600] = "";
    if (old) snprintf(saved, sizeof saved, "%s", old);
    snprintf(env, sizeof env, "%s", cache);
    setenv("CLGRAPH_CACHE_DIR", env, 1);
    const char *p[] = {"plan", model, "--weights", w, "--bind", "B=2,S=5", "--device", "auto", NULL};
    int rc1 = tu_run_cli(p, NULL, NULL);
    static char first[65536];
    snprintf(first, sizeof first, "%s", tu_out);
    static char cost_text[65536];
    tu_slurp(costs, cost_text, sizeof cost_text);
    int rc2 = tu_run_cli(p, NULL, NULL);
    if (old) setenv("CLGRAPH_CACHE_DIR", saved, 1);
    else unsetenv("CLGRAPH_CACHE_DIR");
    ck_assert_msg(rc1 == 0 && rc2 == 0, "%s", tu_err);
    ck_assert_msg(strstr(first, "default device auto") != NULL, "%s", first);
    ck_assert_str_eq(tu_out, first);
    /* One line per measurement: KEY US WHAT; the kernels of the graph on the
     * CPU, and each device's link (latency and cost per byte, never 0). */
    ck_assert_msg(strstr(cost_text, " cpu gru ") && strstr(cost_text, " cpu linear "), "%s", cost_text);
    int links = 0;
    for (const char *l = cost_text; l && *l;) {
        unsigned long long key;
        double us;
        char what[256];
        ck_assert_msg(sscanf(l, "%llx %lf %255[^\n]", &key, &us, what) == 3, "bad line in costs.txt: %s", l);
        ck_assert_msg(us >= 0, "%s", l);
        if (strstr(what, "host-to-device") || strstr(what, "device-to-host")) {
            ck_assert_msg(us > 0, "a link cost of 0 in costs.txt: %s", l);
            links++;
        }
        l = strchr(l, '\n');
        if (l) l++;
    }
    /* at least host-to-device (auto weighs bringing inputs to a device) */
    ck_assert_int_ge(links, 2);
    ck_assert_int_eq(links % 2, 0);
}
END_TEST

/* The README's main command in a cold first run (fresh caches for clgraph,
 * PoCL and Mesa) prints the translations and nothing else: no compiler
 * output on stderr. With --verbose (every command takes it) the output is
 * the same. */
START_TEST(readme_command_cold_is_quiet) {
    char src[600], want_path[600], png[600], one[600];
    snprintf(src, sizeof src, "%s/models/dates/samples.txt", tu_src_dir());
    snprintf(want_path, sizeof want_path, "%s/models/dates/samples.expected", tu_src_dir());
    snprintf(png, sizeof png, "%s/attention.png", tu_dir);
    char *want = tu_read_text(want_path, NULL);
    ck_assert_ptr_nonnull(want);
    char model[600];
    snprintf(model, sizeof model, "%s/models/dates", tu_src_dir());
    char e1[400], e2[400], e3[400], e4[400];
    snprintf(e1, sizeof e1, "CLGRAPH_CACHE_DIR=%s/cold/clgraph", tu_dir);
    snprintf(e2, sizeof e2, "POCL_CACHE_DIR=%s/cold/pocl", tu_dir);
    snprintf(e3, sizeof e3, "XDG_CACHE_HOME=%s/cold/xdg", tu_dir);
    snprintf(e4, sizeof e4, "MESA_SHADER_CACHE_DIR=%s/cold/mesa", tu_dir);
    const char *env[] = {e1, e2, e3, e4, NULL};
    /* Mesa says on stderr that it disables a missing cache directory. */
    const char *dirs[] = {"cold", "cold/xdg", "cold/mesa", NULL};
    for (int i = 0; dirs[i]; i++) ck_assert_int_eq(mkdir(tu_path(dirs[i]), 0755), 0);
    const char *a[] = {"translate", model, "--device", "auto", NULL};
    ck_assert_msg(tu_run_cli(a, env, src) == 0, "%s", tu_err);
    ck_assert_msg(tu_err[0] == 0, "a cold first run printed on stderr:\n%s", tu_err);
    ck_assert_str_eq(tu_out, want);
    const char *one_line = "the 22nd of November 2026\n";
    snprintf(one, sizeof one, "%s", tu_write_file("one.txt", one_line, strlen(one_line)));
    const char *b[] = {"translate", model, "--device", "auto", "--attention", png, NULL};
    ck_assert_msg(tu_run_cli(b, env, one) == 0, "%s", tu_err);
    ck_assert_msg(tu_err[0] == 0, "stderr:\n%s", tu_err);
    ck_assert_str_eq(tu_out, "2026-11-22\n");
    const char *v[] = {"translate", model, "--verbose", "--device", "auto", NULL};
    ck_assert_msg(tu_run_cli(v, env, src) == 0, "%s", tu_err);
    ck_assert_str_eq(tu_out, want);
    free(want);
    /* its last part: the El Nino demo's forecast and picture */
    char fdir[600], fin[700], fpng[700];
    snprintf(fdir, sizeof fdir, "%s/models/elnino", tu_src_dir());
    snprintf(fin, sizeof fin, "%s/example.csv", fdir);
    snprintf(fpng, sizeof fpng, "%s/forecast.png", tu_dir);
    const char *f[] = {"forecast", fdir, "--horizon", "12", "--plot", fpng, NULL};
    ck_assert_msg(tu_run_cli(f, env, fin) == 0, "%s", tu_err);
    ck_assert_msg(tu_err[0] == 0, "stderr:\n%s", tu_err);
    int rows = 0;
    for (const char *q = tu_out; *q; q++) rows += *q == '\n';
    ck_assert_int_eq(rows, 13);
    ck_assert_msg(!strncmp(tu_out, "time,sst\n2010-01-01,", 20), "%s", tu_out);
    ck_assert(access(fpng, F_OK) == 0);
}
END_TEST

/* Threads of process `pid` (entries of /proc/PID/task), or -1. */
static int task_count(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* OpenBLAS starts its worker threads at load and lets them spin for about
 * 0.1 s, which halved the speed of the CPU pool's batch-1 steps in short
 * runs; the tool stops them in main(). `clgraph translate` waiting for its
 * first line (model loaded, nothing run yet) has its main thread alone. */
START_TEST(no_idle_blas_threads) {
    const char *exe = getenv("CG_CLGRAPH");
    ck_assert_ptr_nonnull(exe);
    char model[600];
    snprintf(model, sizeof model, "%s/models/dates", tu_src_dir());
    char *argv[] = {(char *)exe, "translate", model, NULL};
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[0], 0);
    posix_spawn_file_actions_addclose(&fa, fd[1]);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    ck_assert_int_eq(posix_spawn(&pid, exe, &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[0]);
    /* one thread for 0.5 s in a row, within 20 s: OpenBLAS makes its
     * threads before main() runs, so a count of 1 that lasts is after it */
    int run = 0, last = -1;
    for (int i = 0; i < 2000 && run < 50; i++) {
        last = task_count(pid);
        run = last == 1 ? run + 1 : 0;
        usleep(10000);
    }
    close(fd[1]); /* end of input: translate exits */
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_msg(run >= 50, "clgraph translate waiting for input had %d threads", last);
}
END_TEST

/* translate streams stdin in windows with output in input order; input it
 * cannot read, lines over --max-input-len and output it cannot write are
 * each one error line and a non-zero exit, never a silent short result. */
START_TEST(translate_streams) {
    char src[600], want_path[600], model[600];
    snprintf(src, sizeof src, "%s/models/dates/samples.txt", tu_src_dir());
    snprintf(want_path, sizeof want_path, "%s/models/dates/samples.expected", tu_src_dir());
    snprintf(model, sizeof model, "%s/models/dates", tu_src_dir());
    char *want = tu_read_text(want_path, NULL);
    ck_assert_ptr_nonnull(want);
    const char *windows[] = {"1", "3", "14", "1000", NULL};
    for (int i = 0; windows[i]; i++) {
        const char *a[] = {"translate", model, "--window", windows[i], NULL};
        ck_assert_msg(tu_run_cli(a, NULL, src) == 0, "%s", tu_err);
        ck_assert_msg(!strcmp(tu_out, want), "--window %s:\n%s", windows[i], tu_out);
    }
    /* A directory for stdin: a read error, not an empty input. */
    const char *t[] = {"translate", model, NULL};
    ck_assert_int_eq(tu_run_cli(t, NULL, tu_dir), 1);
    ck_assert_str_eq(tu_err, "clgraph translate: stdin: cannot read line 1: Is a directory\n");
    ck_assert_str_eq(tu_out, "");
    /* A line of 40 tokens between two good ones: refused, named, the others
     * translated in place; or cropped with --crop. */
    const char *text = "1 may 2020\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n2 june 1999\n";
    char in[600];
    snprintf(in, sizeof in, "%s", tu_write_file("long.txt", text, strlen(text)));
    const char *l[] = {"translate", model, "--max-input-len", "30", "--window", "2", NULL};
    ck_assert_int_eq(tu_run_cli(l, NULL, in), 1);
    ck_assert_str_eq(tu_out, "2020-05-01\n\n1999-06-02\n");
    ck_assert_str_eq(tu_err, "clgraph: stdin:2: 40 tokens, more than --max-input-len 30 (or --crop); not translated\n");
    const char *c[] = {"translate", model, "--max-input-len", "30", "--crop", NULL};
    ck_assert_int_eq(tu_run_cli(c, NULL, in), 0);
    ck_assert_str_eq(tu_err, "clgraph: stdin:2: warning: 40 tokens, cropped to --max-input-len 30\n");
    ck_assert_msg(!strncmp(tu_out, "2020-05-01\n", 11) && strstr(tu_out, "\n1999-06-02\n"), "%s", tu_out);
    /* A full disk. */
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "'%s' translate '%s' < '%s' > /dev/full 2> '%s/full.err'", getenv("CG_CLGRAPH"), model,
             src, tu_dir);
    int st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d", st);
    char *err = tu_read_text(tu_path("full.err"), NULL);
    ck_assert_ptr_nonnull(err);
    ck_assert_str_eq(err, "clgraph translate: cannot write the translation of line 14: No space left on device\n");
    free(err);
    free(want);
    /* Every other command's output too: fmt, ops, s2s-graph, --version. */
    char cg[600];
    snprintf(cg, sizeof cg, "%s/models/example/model.cg", tu_src_dir());
    const char *cmds[][2] = {{"fmt", cg}, {"ops", ""}, {"s2s-graph", model}, {"--version", ""}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        snprintf(cmd, sizeof cmd, "'%s' %s %s%s%s > /dev/full 2> '%s/full.err'", getenv("CG_CLGRAPH"), cmds[i][0],
                 cmds[i][1][0] ? "'" : "", cmds[i][1], cmds[i][1][0] ? "'" : "", tu_dir);
        st = system(cmd);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "%s: status %d", cmds[i][0], st);
        err = tu_read_text(tu_path("full.err"), NULL);
        char want_err[200];
        snprintf(want_err, sizeof want_err, "clgraph %s: writing the output failed: No space left on device\n",
                 cmds[i][0]);
        ck_assert_str_eq(err, want_err);
        free(err);
    }
}
END_TEST

/* A CLGRAPH_CL_PATHS that is not cpu, gpu or auto is an error naming it,
 * not a silent default; `clgraph devices` shows what each device takes. */
START_TEST(cl_paths_variable) {
    char model[600];
    snprintf(model, sizeof model, "%s/models/dates", tu_src_dir());
    const char *env[] = {"CLGRAPH_CL_PATHS=fast", NULL};
    const char *a[] = {"translate", model, "--device", "opencl:0", NULL};
    ck_assert_int_eq(tu_run_cli(a, env, "/dev/null"), 1);
    const char *needles[] = {"CLGRAPH_CL_PATHS=fast", "expected cpu, gpu or auto", NULL};
    tu_assert_one_line(needles);
    const char *d[] = {"devices", NULL};
    ck_assert_int_eq(tu_run_cli(d, env, NULL), 0);
    ck_assert_msg(strstr(tu_out, "CLGRAPH_CL_PATHS=fast ignored") != NULL, "%s", tu_out);
    const char *gpu[] = {"CLGRAPH_CL_PATHS=gpu", NULL};
    ck_assert_int_eq(tu_run_cli(d, gpu, NULL), 0);
    ck_assert_msg(strstr(tu_out, "kernel paths: gpu (CLGRAPH_CL_PATHS)") != NULL, "%s", tu_out);
    ck_assert_msg(strstr(tu_out, "max work-items: ") != NULL, "%s", tu_out);
}
END_TEST

/* The number of entries of directory d (0 when it is absent). */
static int entries(const char *d) {
    DIR *dir = opendir(d);
    int n = 0;
    for (struct dirent *e; dir && (e = readdir(dir)) != NULL;) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (dir) closedir(dir);
    return n;
}

/* tu_run_cli with the files the command writes cut at `kib` KiB (ulimit
 * -f in a wrapper script, SIGXFSZ ignored): a write past it fails with
 * EFBIG, as on a full disk. The limit must not apply to this process:
 * Check's own messages go through a file. */
static int run_cut(const char *const *args, const char *in, int kib) {
    char *exe = strdup(getenv("CG_CLGRAPH"));
    char script[700];
    int k = snprintf(script, sizeof script, "#!/bin/sh\ntrap '' XFSZ\nulimit -f %d\nexec '%s' \"$@\"\n", kib, exe);
    const char *path = tu_write_file("cut.sh", script, (size_t)k);
    ck_assert_int_eq(chmod(path, 0755), 0);
    setenv("CG_CLGRAPH", path, 1);
    int rc = tu_run_cli(args, NULL, in);
    setenv("CG_CLGRAPH", exe, 1);
    free(exe);
    return rc;
}

/* Files a command writes are whole or absent: on a full disk the heat map,
 * the plot and quantize's output directory are not left empty or cut
 * (they were: 0-byte files, an empty directory); quantize refuses a model
 * translate would refuse before it writes anything (a config.json of "{"
 * was copied, exit 0); its usage errors are one line. */
START_TEST(outputs_whole_or_none) {
    char dates[512], elnino[512], csv[600], samples[600];
    snprintf(dates, sizeof dates, "%s/models/dates", tu_src_dir());
    snprintf(elnino, sizeof elnino, "%s/models/elnino", tu_src_dir());
    snprintf(csv, sizeof csv, "%s/example.csv", elnino);
    snprintf(samples, sizeof samples, "%s/samples.txt", dates);
    char out[300], heat[600], plot[600], q[600];
    snprintf(out, sizeof out, "%.280s/out", tu_dir);
    ck_assert_int_eq(mkdir(out, 0755), 0);
    snprintf(heat, sizeof heat, "%s/a.png", out);
    snprintf(plot, sizeof plot, "%s/p.svg", out);
    snprintf(q, sizeof q, "%s/q", out);
    const char *t[] = {"translate", dates, "--attention", heat, NULL};
    ck_assert_int_eq(run_cut(t, samples, 1), 1);
    tu_assert_one_line((const char *const[]){heat, "cannot write", NULL});
    ck_assert_int_eq(entries(out), 0);
    const char *f[] = {"forecast", elnino, "--horizon", "12", "--plot", plot, NULL};
    ck_assert_int_eq(run_cut(f, csv, 1), 1);
    tu_assert_one_line((const char *const[]){plot, "cannot write", NULL});
    ck_assert_int_eq(entries(out), 0);
    const char *qa[] = {"quantize", dates, "--to", "int8", "-o", q, NULL};
    ck_assert_int_eq(run_cut(qa, NULL, 64), 1);
    tu_assert_one_line((const char *const[]){"weights.safetensors", NULL});
    ck_assert_int_eq(entries(out), 0);
    /* without the limit, the same commands write whole files */
    ck_assert_msg(tu_run_cli(t, NULL, samples) == 0, "%s", tu_err);
    ck_assert_msg(tu_run_cli(qa, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_int_eq(entries(q), 4); /* config.json, the vocabularies, the weights */
    struct stat st;
    ck_assert(stat(heat, &st) == 0 && st.st_size > 100);

    /* a model directory translate refuses is not copied */
    char bad[300], path[700];
    snprintf(bad, sizeof bad, "%.280s/bad", tu_dir);
    ck_assert_int_eq(mkdir(bad, 0755), 0);
    const char *files[] = {"weights.safetensors", "src.vocab", "tgt.vocab"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dates, files[i]);
        size_t n;
        char *bytes = tu_read_text(path, &n);
        ck_assert_ptr_nonnull(bytes);
        snprintf(path, sizeof path, "bad/%s", files[i]);
        tu_write_file(path, bytes, n);
        free(bytes);
    }
    tu_write_file("bad/config.json", "{", 1);
    char q2[300];
    snprintf(q2, sizeof q2, "%.280s/q2", tu_dir);
    const char *qb[] = {"quantize", bad, "--to", "int8", "-o", q2, NULL};
    ck_assert_int_eq(tu_run_cli(qb, NULL, NULL), 1);
    tu_assert_one_line((const char *const[]){"bad/config.json:1:1: invalid JSON", NULL});
    ck_assert_int_ne(stat(q2, &st), 0);
    const char *qu[] = {"quantize", dates, "--to", "foo", "-o", q2, NULL};
    ck_assert_int_eq(tu_run_cli(qu, NULL, NULL), 2);
    ck_assert_str_eq(tu_err, "clgraph quantize: --to takes bf16, f16 or int8 (see clgraph quantize --help)\n");
    const char *none[] = {NULL};
    ck_assert_int_eq(tu_run_cli(none, NULL, NULL), 2);
    ck_assert_str_eq(tu_err, "clgraph: no command given (see clgraph --help)\n");
}
END_TEST

/* A bad --ids line is refused alone: an empty line in its place, the others
 * translated, exit 1 (all output used to be dropped). */
START_TEST(translate_bad_ids_line) {
    char dates[512];
    snprintf(dates, sizeof dates, "%s/models/dates", tu_src_dir());
    const char *ids = "3 4 5\n3 1e3\n6 7 8\n";
    const char *in = tu_write_file("ids.txt", ids, strlen(ids));
    const char *a[] = {"translate", dates, "--ids", NULL};
    ck_assert_int_eq(tu_run_cli(a, NULL, in), 1);
    tu_assert_one_line((const char *const[]){"stdin:2:3: '1e3' is not a token id", NULL});
    char *l2 = strchr(tu_out, '\n');
    ck_assert_ptr_nonnull(l2);
    ck_assert(l2 > tu_out && l2[1] == '\n' && l2[2] != '\n' && l2[2] != 0);
    const char *past = "63\n";
    in = tu_write_file("past.txt", past, strlen(past));
    ck_assert_int_eq(tu_run_cli(a, NULL, in), 1);
    tu_assert_one_line((const char *const[]){"stdin:1:1: token id 63 is not in the source vocabulary", NULL});
    ck_assert_str_eq(tu_out, "\n");
}
END_TEST

/* s2s-graph --weights-dtype prints the graph translate --weights-dtype
 * runs: written as a model.cg next to the same weights it translates the
 * samples as the option does; int8 declares int8 matrices and their scales;
 * a model.cg refuses the option, as translate does. */
START_TEST(s2s_graph_weights_dtype) {
    char dates[512], samples[600], copy[600], link[700], target[700];
    snprintf(dates, sizeof dates, "%s/models/dates", tu_src_dir());
    snprintf(samples, sizeof samples, "%s/samples.txt", dates);
    const char *plain[] = {"s2s-graph", dates, NULL};
    ck_assert_msg(tu_run_cli(plain, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_ptr_nonnull(strstr(tu_out, "param out.weight: f32["));
    const char *q8[] = {"s2s-graph", dates, "--weights-dtype", "int8", NULL};
    ck_assert_msg(tu_run_cli(q8, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_ptr_nonnull(strstr(tu_out, "param out.weight: i8["));
    ck_assert_ptr_nonnull(strstr(tu_out, "out.weight_scale"));
    const char *bf[] = {"s2s-graph", dates, "--weights-dtype", "bf16", NULL};
    ck_assert_msg(tu_run_cli(bf, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_ptr_nonnull(strstr(tu_out, "param out.weight: bf16["));
    ck_assert_ptr_null(strstr(tu_out, "param out.weight: f32["));
    snprintf(copy, sizeof copy, "%s", tu_path("bf16"));
    ck_assert_int_eq(mkdir(copy, 0755), 0);
    const char *files[] = {"config.json", "src.vocab", "tgt.vocab", "weights.safetensors"};
    for (int i = 0; i < 4; i++) {
        snprintf(link, sizeof link, "%s/%s", copy, files[i]);
        snprintf(target, sizeof target, "%s/%s", dates, files[i]);
        ck_assert_int_eq(symlink(target, link), 0);
    }
    char *graph = strdup(tu_out);
    ck_assert_ptr_nonnull(graph);
    tu_write_file("bf16/model.cg", graph, strlen(graph));
    free(graph);
    const char *opt[] = {"translate", dates, "--weights-dtype", "bf16", NULL};
    ck_assert_msg(tu_run_cli(opt, NULL, samples) == 0, "%s", tu_err);
    char *want = strdup(tu_out);
    ck_assert_ptr_nonnull(want);
    const char *file[] = {"translate", copy, NULL};
    ck_assert_msg(tu_run_cli(file, NULL, samples) == 0, "%s", tu_err);
    ck_assert_str_eq(tu_out, want);
    free(want);
    const char *refused[] = {"s2s-graph", copy, "--weights-dtype", "f16", NULL};
    ck_assert_int_eq(tu_run_cli(refused, NULL, NULL), 1);
    ck_assert_ptr_nonnull(strstr(tu_err, "set by its own param declarations"));
    const char *bad[] = {"s2s-graph", dates, "--weights-dtype", "f64", NULL};
    ck_assert_int_eq(tu_run_cli(bad, NULL, NULL), 2);
    ck_assert_ptr_nonnull(strstr(tu_err, "--weights-dtype takes f32, bf16, f16 or int8, got 'f64'"));
    const char *none[] = {"s2s-graph", "--weights-dtype", "bf16", NULL};
    ck_assert_int_eq(tu_run_cli(none, NULL, NULL), 2);
    ck_assert_ptr_nonnull(strstr(tu_err, "usage: clgraph s2s-graph MODEL_DIR"));
}
END_TEST

int main(void) {
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, tu_teardown_dir);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, gru_encoder_matches_pytorch);
    tcase_add_test(tc, outputs_whole_or_none);
    tcase_add_test(tc, translate_bad_ids_line);
    tcase_add_test(tc, s2s_graph_weights_dtype);
    tcase_add_test(tc, help_version_usage);
    tcase_add_test(tc, help_and_hints);
    tcase_add_test(tc, conform_table_aligned);
    tcase_add_test(tc, check_and_fmt);
    tcase_add_test(tc, bad_graph_text);
    tcase_add_test(tc, bad_weights_and_inputs);
    tcase_add_test(tc, int64_inputs_convert);
    tcase_add_test(tc, same_results_on_opencl);
    tcase_add_test(tc, profile_trace);
    tcase_add_test(tc, no_opencl_platform);
    tcase_add_test(tc, plan_and_placement);
    tcase_add_test(tc, auto_checks_sizes_first);
    tcase_add_test(tc, plan_model_dir);
    tcase_add_test(tc, plan_dot_edges);
    tcase_add_test(tc, auto_placement_cost_cache);
    tcase_add_test(tc, readme_command_cold_is_quiet);
    tcase_add_test(tc, cl_paths_variable);
    tcase_add_test(tc, translate_streams);
    tcase_add_test(tc, no_idle_blas_threads);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
