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
#include <sys/stat.h>

#include "test_util.h"
#include "tf_build.h"
#include "tf_family.h"
#include "tf_vocab.h"

#define MARIAN CG_TEST_DATA_DIR "/marian"

static cg_context *ctx;

static void setup(void) {
    tu_setup_dir("tf_model");
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
}
static void teardown(void) {
    cg_context_free(ctx);
    tu_teardown_dir();
}

/* Path `rel` under the source tree (CG_SOURCE_DIR); valid until the next call with the same `buf`. */
static const char *src_path(char *buf, size_t size, const char *rel) {
    snprintf(buf, size, "%s/%s", tu_src_dir(), rel);
    return buf;
}

/* FILE with `body` in the test directory's subdirectory `name` (made here); returns the directory. */
static const char *dir_with_file(const char *name, const char *file, const char *body) {
    ck_assert_int_eq(mkdir(tu_path(name), 0777), 0);
    char rel[128];
    snprintf(rel, sizeof rel, "%s/%s", name, file);
    tu_write_file(rel, body, strlen(body));
    return tu_path(name);
}

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

/* The first n rows of side dec's position table (sinusoidal or learned). */
static cg_tensor *positions(const tf_config *c, cg_weights *w, int dec, int64_t n) {
    int64_t dims[2] = {n, c->d_model};
    cg_tensor *t;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, dims, &t), CG_OK);
    ck_assert_msg(tf_position_rows(c, w, dec, 0, n, cg_tensor_data(t)) == CG_OK, "%s", cg_last_error());
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

/* decoder_step's inputs: y, ypos, sentence, src_len, parent, then each
 * layer's ck, cv (ckv) and pk, pv (cache); names in nb. Returns the count. */
static int step_inputs(int L, cg_tensor *const fixed[5], cg_tensor **ckv, cg_tensor **cache, const char **names,
                       cg_tensor **in, char (*nb)[16]) {
    static const char *const first[5] = {"y", "ypos", "sentence", "src_len", "parent"};
    static const char *const pfx[4] = {"ck", "cv", "pk", "pv"};
    int n = 0;
    for (int i = 0; i < 5; i++) names[n] = first[i], in[n++] = fixed[i];
    for (int l = 0; l < L; l++)
        for (int k = 0; k < 4; k++) {
            snprintf(nb[4 * l + k], 16, "%s%d", pfx[k], l);
            names[n] = nb[4 * l + k];
            in[n++] = k < 2 ? ckv[2 * l + k] : cache[2 * l + k - 2];
        }
    return n;
}

/* Decoding step by step over the caches (cross_kv once, then decoder_step
 * per target position, each step's caches fed to the next, starting from
 * empty ones) gives the teacher-forced logits of every position. */
static void check_steps(cg_model *m, cg_weights *w, const char *dev, const char *variant, const tf_config *c,
                        cg_tensor *enc, cg_tensor *len, const cg_tensor *tgt, const cg_tensor *want) {
    const int L = c->dec_layers, H = c->dec_heads, Dh = c->d_model / H;
    const int64_t B = cg_tensor_dim(tgt, 0), T = cg_tensor_dim(tgt, 1), V = c->dec_vocab;
    cg_plan_options o = {.struct_size = sizeof o, .device = dev};
    cg_plan *pkv, *ps;
    ck_assert_msg(cg_plan_create(m, "cross_kv", &o, &pkv) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(cg_plan_create(m, "decoder_step", &o, &ps) == CG_OK, "%s", cg_last_error());
    cg_tensor *ckv[2 * 16], *cache[2 * 16];
    const char *ekv[] = {"enc"};
    ck_assert_msg(cg_plan_run(pkv, 1, ekv, &enc, 2 * L, ckv) == CG_OK, "%s", cg_last_error());
    int64_t d0[4] = {B, 0, H, Dh}, one = B, dd = c->d_model;
    for (int i = 0; i < 2 * L; i++) ck_assert_int_eq(cg_tensor_create(CG_F32, 4, d0, &cache[i]), CG_OK);
    cg_tensor *y, *ypos, *sent;
    ck_assert_int_eq(cg_tensor_create(CG_I32, 1, &one, &y), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_I32, 1, &one, &sent), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_F32, 1, &dd, &ypos), CG_OK);
    for (int64_t b = 0; b < B; b++) ((int32_t *)cg_tensor_data(sent))[b] = (int32_t)b;
    const char *names[5 + 4 * 16];
    cg_tensor *in[5 + 4 * 16];
    char nbuf[4 * 16][16];
    double worst = 0;
    for (int64_t t = 0; t < T; t++) {
        for (int64_t b = 0; b < B; b++)
            ((int32_t *)cg_tensor_data(y))[b] = ((const int32_t *)cg_tensor_data_const(tgt))[b * T + t];
        ck_assert_int_eq(tf_position_rows(c, w, 1, t, 1, cg_tensor_data(ypos)), CG_OK);
        cg_tensor *fixed[5] = {y, ypos, sent, len, sent}; /* parent: row b continues row b */
        int n = step_inputs(L, fixed, ckv, cache, names, in, nbuf);
        cg_tensor *out[3 + 2 * 16];
        ck_assert_msg(cg_plan_run(ps, n, names, in, 3 + 2 * L, out) == CG_OK, "%s step %lld: %s", dev, (long long)t,
                      cg_last_error());
        const float *got = cg_tensor_data_const(out[0]), *ref = cg_tensor_data_const(want);
        for (int64_t b = 0; b < B; b++)
            for (int64_t v = 0; v < V; v++) {
                double d = fabs((double)got[b * V + v] - ref[(b * T + t) * V + v]);
                if (!(d <= worst)) worst = d;
            }
        for (int i = 0; i < 3; i++) cg_tensor_free(out[i]); /* logits, top_logp, top_id */
        for (int i = 0; i < 2 * L; i++) {
            cg_tensor_free(cache[i]);
            cache[i] = out[3 + i];
            ck_assert_int_eq(cg_tensor_dim(cache[i], 1), t + 1);
        }
    }
    ck_assert_msg(worst <= 1e-4, "%s on %s: stepped logits differ from transformers' by %g", variant, dev, worst);
    fprintf(stderr, "%s on %s: stepped logits within %.2g of transformers\n", variant, dev, worst);
    for (int i = 0; i < 2 * L; i++) {
        cg_tensor_free(cache[i]);
        cg_tensor_free(ckv[i]);
    }
    cg_tensor_free(y);
    cg_tensor_free(ypos);
    cg_tensor_free(sent);
    cg_plan_free(pkv);
    cg_plan_free(ps);
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
    cg_tensor *pos = positions(&c, w, 0, cg_tensor_dim(src, 1)), *tpos = positions(&c, w, 1, cg_tensor_dim(tgt, 1));
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
        check_steps(m, w, dev, variant, &c, enc, len, tgt, want_logits);
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

/* BART: learned positions, the embeddings' LayerNorm, post-LN blocks. */
START_TEST(bart_matches_transformers) { check_variant("bart"); }
END_TEST

/* mBART: pre-LN blocks and a final LayerNorm per side too. */
START_TEST(mbart_matches_transformers) { check_variant("mbart"); }
END_TEST

/* The trained demo (models/marian_dates, tools/py/train_marian_dates.py)
 * put together from the pieces: tokenize, encoder, cross_kv, then greedy
 * decoder_step over the caches (pad forbidden, as its
 * generation_config.json's bad_words_ids says) until EOS, detokenize. Every
 * sample of models/dates comes out as samples.expected says (what
 * transformers' generate gives too), on the CPU and every OpenCL device. */
typedef struct {
    cg_model *m;
    tf_config c;
    tf_vocab v;
} demo;

/* Greedy decoding of ids [n] on plans enc / kv / step: the target ids. */
static int greedy(const demo *d, cg_plan *enc, cg_plan *kv, cg_plan *step, const int32_t *ids, int n, int32_t *out) {
    const int L = d->c.dec_layers, H = d->c.dec_heads, Dh = d->c.d_model / H, V = d->c.dec_vocab;
    int64_t sd[2] = {1, n}, one = 1, D = d->c.d_model, pd[2] = {n, D}, c0[4] = {1, 0, H, Dh};
    cg_tensor *src, *len, *pos, *y, *ypos, *sent, *e, *ckv[32], *cache[32];
    ck_assert_int_eq(cg_tensor_create(CG_I32, 2, sd, &src), CG_OK);
    memcpy(cg_tensor_data(src), ids, sizeof(int32_t) * (size_t)n);
    ck_assert_int_eq(cg_tensor_create(CG_I32, 1, &one, &len), CG_OK);
    *(int32_t *)cg_tensor_data(len) = n;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, pd, &pos), CG_OK);
    tf_positions(&d->c, 0, n, cg_tensor_data(pos));
    const char *en[] = {"src", "src_len", "pos"};
    cg_tensor *ei[] = {src, len, pos};
    ck_assert_msg(cg_plan_run(enc, 3, en, ei, 1, &e) == CG_OK, "%s", cg_last_error());
    const char *kn[] = {"enc"};
    ck_assert_msg(cg_plan_run(kv, 1, kn, &e, 2 * L, ckv) == CG_OK, "%s", cg_last_error());
    for (int i = 0; i < 2 * L; i++) ck_assert_int_eq(cg_tensor_create(CG_F32, 4, c0, &cache[i]), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_I32, 1, &one, &y), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_I32, 1, &one, &sent), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_F32, 1, &D, &ypos), CG_OK);
    *(int32_t *)cg_tensor_data(y) = d->c.start_id;
    int got = 0;
    for (int t = 0; t < 15; t++) {
        tf_positions(&d->c, t, 1, cg_tensor_data(ypos));
        const char *names[5 + 4 * 16];
        cg_tensor *in[5 + 4 * 16];
        char nb[4 * 16][16];
        cg_tensor *fixed[5] = {y, ypos, sent, len, sent}; /* sentence 0, parent row 0 */
        int k = step_inputs(L, fixed, ckv, cache, names, in, nb);
        cg_tensor *o[3 + 32];
        ck_assert_msg(cg_plan_run(step, k, names, in, 3 + 2 * L, o) == CG_OK, "%s", cg_last_error());
        const float *lg = cg_tensor_data_const(o[0]);
        int best = -1;
        for (int v = 0; v < V; v++)
            if (v != d->c.pad_id && (best < 0 || lg[v] > lg[best])) best = v;
        for (int i = 0; i < 3; i++) cg_tensor_free(o[i]);
        for (int i = 0; i < 2 * L; i++) {
            cg_tensor_free(cache[i]);
            cache[i] = o[3 + i];
        }
        if (best == d->c.eos_id) break;
        out[got++] = best;
        *(int32_t *)cg_tensor_data(y) = best;
    }
    cg_tensor *all[] = {src, len, pos, y, ypos, sent, e};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) cg_tensor_free(all[i]);
    for (int i = 0; i < 2 * L; i++) {
        cg_tensor_free(cache[i]);
        cg_tensor_free(ckv[i]);
    }
    return got;
}

START_TEST(demo_translates_the_samples) {
    if (!CG_HAVE_SENTENCEPIECE) return;
    char dir[512], path[512];
    src_path(dir, sizeof dir, "models/marian_dates");
    demo d;
    ck_assert_msg(tf_config_read(dir, &d.c) == CG_OK, "%s", cg_last_error());
    ck_assert_msg(tf_vocab_load(dir, d.c.pad_id, d.c.eos_id, &d.v) == CG_OK, "%s", cg_last_error());
    cg_weights *w;
    ck_assert_msg(cg_weights_open(src_path(path, sizeof path, "models/marian_dates/model.safetensors"), &w) == CG_OK,
                  "%s", cg_last_error());
    char *text;
    ck_assert_int_eq(tf_build_text(&d.c, has_weight, w, &text), CG_OK);
    ck_assert_msg(cg_model_parse(ctx, text, strlen(text), "marian_dates.cg", &d.m) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_model_bind_weights(d.m, w), CG_OK);
    ck_assert_msg(cg_model_verify(d.m) == CG_OK, "%s", cg_last_error());
    FILE *fs = fopen(src_path(path, sizeof path, "models/dates/samples.txt"), "r");
    FILE *fe = fopen(src_path(path, sizeof path, "models/dates/samples.expected"), "r");
    ck_assert(fs && fe);
    enum { MAX_LINES = 32 };
    char line[MAX_LINES][256], want[MAX_LINES][256];
    int n_lines = 0;
    while (n_lines < MAX_LINES && fgets(line[n_lines], 256, fs) && fgets(want[n_lines], 256, fe)) {
        line[n_lines][strcspn(line[n_lines], "\n")] = 0;
        want[n_lines][strcspn(want[n_lines], "\n")] = 0;
        n_lines++;
    }
    fclose(fs);
    fclose(fe);
    ck_assert_int_eq(n_lines, 14);
    for (int dv = 0; dv < cg_device_count(); dv++) {
        char b[512];
        const char *dev = cg_device_describe(dv, b, sizeof b);
        cg_plan_options o = {.struct_size = sizeof o, .device = dev};
        cg_plan *pe, *pk, *ps;
        ck_assert_int_eq(cg_plan_create(d.m, "encoder", &o, &pe), CG_OK);
        ck_assert_int_eq(cg_plan_create(d.m, "cross_kv", &o, &pk), CG_OK);
        ck_assert_int_eq(cg_plan_create(d.m, "decoder_step", &o, &ps), CG_OK);
        for (int i = 0; i < n_lines; i++) {
            int32_t *ids, out[16];
            int n;
            ck_assert_int_eq(tf_vocab_encode(&d.v, line[i], &ids, &n), CG_OK);
            int got = greedy(&d, pe, pk, ps, ids, n, out);
            char *t;
            ck_assert_int_eq(tf_vocab_decode(&d.v, out, got, &t), CG_OK);
            ck_assert_msg(!strcmp(t, want[i]), "'%s' on %s: '%s', expected '%s'", line[i], dev, t, want[i]);
            free(t);
            free(ids);
        }
        cg_plan_free(pe);
        cg_plan_free(pk);
        cg_plan_free(ps);
    }
    free(text);
    cg_model_free(d.m);
    cg_weights_free(w);
    tf_vocab_free(&d.v);
}
END_TEST

/* The demo narrowed to int8 at load looks its tokens up in the int8 table
 * (with its row scales) that the output projection reads, instead of a
 * copy widened to f32; bf16 and f32 forms keep the f32 table. (That the
 * int8 form translates the samples: test tf_translate.) */
START_TEST(int8_tables_read_as_int8) {
    char dir[512];
    src_path(dir, sizeof dir, "models/marian_dates");
    const cg_dtype forms[3] = {CG_I8, CG_BF16, CG_F32};
    for (int f = 0; f < 3; f++) {
        char *text = NULL;
        ck_assert_msg(tf_graph_text(dir, forms[f], &text) == CG_OK, "%s", cg_last_error());
        const int q8 = strstr(text, "param table_q8: i8[") &&
                       strstr(text, "embedding(table_q8, src, table_q8_scale)") &&
                       strstr(text, "embedding(table_q8, y, table_q8_scale)");
        const int f32 = strstr(text, "param model.shared.weight: f32[") != NULL;
        ck_assert_msg(q8 == (f == 0) && f32 == (f != 0), "form %d: int8 lookups %d, f32 table %d", f, q8, f32);
        free(text);
    }
}
END_TEST

/* config.json with `body`, in the test's directory; the mistake named. */
static void config_refused(const char *name, const char *body, cg_status want, const char *needle) {
    tf_config c;
    cg_status s = tf_config_read(dir_with_file(name, "config.json", body), &c);
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
    config_refused("prenorm",
                   "{\"model_type\": \"marian\", " BASE ", \"decoder_attention_heads\": 2, "
                   "\"normalize_before\": true}",
                   CG_ERR_UNSUPPORTED, "normalize_before true (pre-LN blocks) is not supported for marian");
    tf_config c;
    ck_assert_int_eq(tf_config_read(tu_path("nowhere"), &c), CG_ERR_IO);
}
END_TEST

/* generation_config.json: the demo's, defaults without one, and refusals. */
START_TEST(generation_config) {
    tf_config c;
    tf_generation g;
    char dir[512];
    src_path(dir, sizeof dir, "models/marian_dates");
    ck_assert_int_eq(tf_config_read(dir, &c), CG_OK);
    ck_assert_msg(tf_generation_read(dir, &c, &g) == CG_OK, "%s", cg_last_error());
    ck_assert(g.num_beams == 1 && g.max_length == 16 && g.forced_eos == c.eos_id && g.length_penalty == 1.0);
    ck_assert(g.n_banned == 1 && g.banned[0] == c.pad_id);
    ck_assert_int_eq(tf_generation_read(tu_path("none"), &c, &g), CG_OK); /* no file: transformers' defaults */
    ck_assert(g.num_beams == 1 && g.max_length == 20 && g.forced_eos == -1 && g.n_banned == 0 && g.early == 0);
    ck_assert_int_eq(
        tf_generation_read(dir_with_file("t", "generation_config.json", "{\"early_stopping\": true}"), &c, &g), CG_OK);
    ck_assert_int_eq(g.early, 1);
    ck_assert_int_eq(
        tf_generation_read(dir_with_file("n", "generation_config.json", "{\"early_stopping\": \"never\"}"), &c, &g),
        CG_OK);
    ck_assert_int_eq(g.early, 2);
    static const struct {
        const char *name, *body, *needle;
        cg_status want;
    } bad[] = {
        {"multi", "{\"bad_words_ids\": [[3, 4]]}", "only single-token entries", CG_ERR_UNSUPPORTED},
        {"range", "{\"bad_words_ids\": [[100000]]}", "is not a list of one target id", CG_ERR_FORMAT},
        {"rep", "{\"repetition_penalty\": 1.2}", "repetition_penalty 1.2 is not supported", CG_ERR_UNSUPPORTED},
        {"sample", "{\"do_sample\": true}", "do_sample true is not supported", CG_ERR_UNSUPPORTED},
        {"beams", "{\"num_beams\": 0}", "num_beams", CG_ERR_FORMAT},
        {"early", "{\"early_stopping\": \"soon\"}", "early_stopping \"soon\" must be", CG_ERR_FORMAT},
        {"forced", "{\"forced_eos_token_id\": 5}", "forced_eos_token_id 5 is not eos_token_id 0", CG_ERR_UNSUPPORTED},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cg_status s = tf_generation_read(dir_with_file(bad[i].name, "generation_config.json", bad[i].body), &c, &g);
        ck_assert_msg(s == bad[i].want && strstr(cg_last_error(), bad[i].needle), "%s: %d '%s'", bad[i].name, s,
                      cg_last_error());
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("tf_model");
    /* "parity" alone runs under Oclgrind and rusticl (suite portability) */
    TCase *tc = tcase_create("parity");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, swish_scaled_matches_transformers);
    tcase_add_test(tc, gelu_matches_transformers);
    tcase_add_test(tc, bart_matches_transformers);
    tcase_add_test(tc, mbart_matches_transformers);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("model");
    tcase_add_checked_fixture(tm, setup, teardown);
    tcase_set_timeout(tm, 300);
    tcase_add_test(tm, config_mistakes_are_named);
    tcase_add_test(tm, demo_translates_the_samples);
    tcase_add_test(tm, int8_tables_read_as_int8);
    tcase_add_test(tm, generation_config);
    suite_add_tcase(s, tm);
    return tu_run_suite(s, 0);
}
