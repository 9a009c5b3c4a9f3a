/* The Transformer family's graphs (transformer/tf_build.c) against
 * transformers' MarianMTModel: for each random model under
 * tests/data/marian/<variant> (tools/py/make_marian_ref.py: swish with
 * scaled embeddings, 2+2 layers; gelu unscaled, 1+3 layers and 3 heads),
 * the encoder's output of padded sources and the teacher-forced logits of
 * every target position, on the CPU and every OpenCL device, within 1e-4.
 * Also config.json's mistakes. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tf_build.h"

#define MARIAN CG_TEST_DATA_DIR "/marian"

static cg_context *ctx;

static void setup(void) { ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK); }
static void teardown(void) { cg_context_free(ctx); }

static int has_weight(const char *name, void *user) {
    cg_weights *w = user;
    for (int i = 0; i < cg_weights_count(w); i++)
        if (!strcmp(cg_weights_name(w, i), name)) return 1;
    return 0;
}

static cg_tensor *npy(const char *dir, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    cg_tensor *t;
    ck_assert_msg(cg_tensor_load_npy(path, &t) == CG_OK, "%s", cg_last_error());
    return t;
}

static cg_tensor *positions(const tf_config *c, int64_t n) {
    int64_t dims[2] = {n, c->d_model};
    cg_tensor *t;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, dims, &t), CG_OK);
    tf_positions(c, 0, n, cg_tensor_data(t));
    return t;
}

/* max |a - b| over two f32 tensors of one shape. */
static double max_diff(const cg_tensor *a, const cg_tensor *b) {
    ck_assert_int_eq(cg_tensor_numel(a), cg_tensor_numel(b));
    const float *x = cg_tensor_data_const(a), *y = cg_tensor_data_const(b);
    double m = 0;
    for (int64_t i = 0; i < cg_tensor_numel(a); i++) {
        double d = fabs((double)x[i] - y[i]);
        if (!(d <= m)) m = d; /* NaN wins */
    }
    return m;
}

static cg_tensor *run1(cg_model *m, const char *graph, const char *device, int n, const char *const *names,
                       cg_tensor *const *in) {
    cg_plan_options o = {.struct_size = sizeof o, .device = device};
    cg_plan *p;
    ck_assert_msg(cg_plan_create(m, graph, &o, &p) == CG_OK, "%s on %s: %s", graph, device, cg_last_error());
    cg_tensor *out = NULL;
    ck_assert_msg(cg_plan_run(p, n, names, in, 1, &out) == CG_OK, "%s on %s: %s", graph, device, cg_last_error());
    cg_plan_free(p);
    return out;
}

static void check_variant(const char *variant) {
    char dir[256], path[320];
    snprintf(dir, sizeof dir, MARIAN "/%s", variant);
    tf_config c;
    ck_assert_msg(tf_config_read(dir, &c) == CG_OK, "%s", cg_last_error());
    cg_weights *w;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    ck_assert_msg(cg_weights_open(path, &w) == CG_OK, "%s", cg_last_error());
    char *text;
    ck_assert_int_eq(tf_build_text(&c, has_weight, w, &text), CG_OK);
    cg_model *m;
    ck_assert_msg(cg_model_parse(ctx, text, strlen(text), "marian.cg", &m) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_model_bind_weights(m, w) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_model_verify(m) == CG_OK, "%s", cg_last_error());
    cg_tensor *src = npy(dir, "src"), *len = npy(dir, "src_len"), *tgt = npy(dir, "tgt");
    cg_tensor *want_enc = npy(dir, "enc"), *want_logits = npy(dir, "logits");
    cg_tensor *pos = positions(&c, cg_tensor_dim(src, 1)), *tpos = positions(&c, cg_tensor_dim(tgt, 1));
    for (int d = 0; d < cg_device_count(); d++) {
        char buf[512];
        const char *dev = cg_device_describe(d, buf, sizeof buf);
        const char *en[] = {"src", "src_len", "pos"};
        cg_tensor *ei[] = {src, len, pos};
        cg_tensor *enc = run1(m, "encoder", dev, 3, en, ei);
        double de = max_diff(enc, want_enc);
        ck_assert_msg(de <= 1e-4, "%s on %s: encoder output differs from transformers' by %g", variant, dev, de);
        const char *dn[] = {"tgt", "tpos", "enc", "src_len"};
        cg_tensor *di[] = {tgt, tpos, enc, len};
        cg_tensor *logits = run1(m, "decoder", dev, 4, dn, di);
        double dl = max_diff(logits, want_logits);
        ck_assert_msg(dl <= 1e-4, "%s on %s: logits differ from transformers' by %g", variant, dev, dl);
        fprintf(stderr, "%s on %s: encoder within %.2g, logits within %.2g of transformers\n", variant, dev, de, dl);
        cg_tensor_free(enc);
        cg_tensor_free(logits);
    }
    cg_tensor *all[] = {src, len, tgt, want_enc, want_logits, pos, tpos};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) cg_tensor_free(all[i]);
    cg_model_free(m);
    cg_weights_free(w);
    free(text);
}

START_TEST(swish_scaled_matches_transformers) { check_variant("swish_scaled"); }
END_TEST

START_TEST(gelu_matches_transformers) { check_variant("gelu"); }
END_TEST

/* config.json with `body`, in the test's directory; the mistake named. */
static void config_refused(const char *name, const char *body, cg_status want, const char *needle) {
    const char *dir = tu_path(name);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/config.json", dir);
    FILE *f = fopen(cmd, "w");
    ck_assert_ptr_nonnull(f);
    fputs(body, f);
    fclose(f);
    tf_config c;
    cg_status s = tf_config_read(dir, &c);
    ck_assert_msg(s == want, "%s: status %d, expected %d (%s)", name, s, want, cg_last_error());
    ck_assert_msg(strstr(cg_last_error(), needle) != NULL, "%s: '%s' lacks '%s'", name, cg_last_error(), needle);
}

#define BASE                                                                                               \
    "\"d_model\": 8, \"encoder_layers\": 1, \"decoder_layers\": 1, \"encoder_attention_heads\": 2, "       \
    "\"encoder_ffn_dim\": 4, \"decoder_ffn_dim\": 4, \"vocab_size\": 10, \"max_position_embeddings\": 8, " \
    "\"pad_token_id\": 0, \"eos_token_id\": 1"

START_TEST(config_mistakes_are_named) {
    config_refused("type", "{\"model_type\": \"t5\", " BASE ", \"decoder_attention_heads\": 2}", CG_ERR_FORMAT,
                   "model_type");
    config_refused("heads", "{\"model_type\": \"marian\", " BASE ", \"decoder_attention_heads\": 3}", CG_ERR_FORMAT,
                   "d_model (8) is not a multiple of decoder_attention_heads (3)");
    config_refused("missing", "{\"model_type\": \"marian\", " BASE "}", CG_ERR_FORMAT, "decoder_attention_heads");
    config_refused("act",
                   "{\"model_type\": \"marian\", " BASE ", \"decoder_attention_heads\": 2, "
                   "\"activation_function\": \"mish\"}",
                   CG_ERR_FORMAT, "activation_function");
    config_refused("vocabs",
                   "{\"model_type\": \"marian\", " BASE ", \"decoder_attention_heads\": 2, "
                   "\"decoder_vocab_size\": 12}",
                   CG_ERR_UNSUPPORTED, "separate vocabularies");
    tf_config c;
    ck_assert_int_eq(tf_config_read(tu_path("nowhere"), &c), CG_ERR_IO);
}
END_TEST

int main(void) {
    Suite *s = suite_create("tf_model");
    TCase *tc = tcase_create("tf_model");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, swish_scaled_matches_transformers);
    tcase_add_test(tc, gelu_matches_transformers);
    tcase_add_test(tc, config_mistakes_are_named);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
