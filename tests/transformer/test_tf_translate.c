/* Transformer translation through the seq2seq API and `clgraph translate`
 * against transformers' generate(): token for token and score for score on
 * random MarianMT models of two shapes (tests/data/marian/{swish_scaled,
 * gelu}/gen.json) and on the trained demo (models/marian_dates,
 * tests/data/marian/dates_gen.json), greedy and beams of 2 to 6 with several
 * length penalties, max lengths and n-best lists
 * (tools/py/make_marian_gen.py), on the CPU and every OpenCL device; the
 * sources of a case are decoded in one batch, transformers' one at a time. */
#include <check.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clgraph/clgraph.h"
#include "clgraph/seq2seq.h"
#include "s2s.h"
#include "test_util.h"
#include "tu_s2s.h"

static cg_context *ctx;

static void setup(void) {
    tu_setup_dir("tf_translate");
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
}

static void teardown(void) {
    cg_context_free(ctx);
    tu_teardown_dir();
}

static const char *src_path(char *buf, size_t size, const char *rel) {
    snprintf(buf, size, "%s/%s", tu_src_dir(), rel);
    return buf;
}

static cJSON *read_json(const char *path) {
    char *text = tu_read_text(path, NULL);
    cJSON *j = cJSON_Parse(text);
    ck_assert_msg(j != NULL, "%s: not JSON", path);
    free(text);
    return j;
}

/* A JSON list of ids into out (room for cap); the count. */
static int ids_of(const cJSON *a, int32_t *out, int cap) {
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a) {
        ck_assert_int_lt(n, cap);
        out[n++] = (int32_t)e->valueint;
    }
    return n;
}

enum { MAX_SRC = 32, MAX_TOK = 64 };

typedef struct {
    int n;
    int32_t ids[MAX_SRC][MAX_TOK];
    int len[MAX_SRC];
    const int32_t *ptr[MAX_SRC];
} sources;

/* gen.json's "sources" (id lists) into s. */
static void read_sources(const cJSON *j, sources *s) {
    memset(s, 0, sizeof *s);
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "sources")) {
        ck_assert_int_lt(s->n, MAX_SRC);
        s->len[s->n] = ids_of(e, s->ids[s->n], MAX_TOK);
        s->ptr[s->n] = s->ids[s->n];
        s->n++;
    }
}

/* got[i] the same hypotheses as ref[i] (of n): the same tokens, scores
 * within 1e-5 relative and attention within 1e-5 (a row's sums run over
 * other positions in a stream: its masked ones). */
static void same_results(const char *what, int n, const cg_s2s_result *ref, const cg_s2s_result *got) {
    for (int i = 0; i < n; i++) {
        tu_s2s_same_hyps(what, i, &ref[i], &got[i]);
        for (int h = 0; h < ref[i].n_hyps; h++) {
            const cg_s2s_hyp *a = &got[i].hyps[h], *b = &ref[i].hyps[h];
            ck_assert_msg(!a->attention == !b->attention, "%s: source %d: attention in one only", what, i);
            for (int k = 0; a->attention && k < a->n_steps * ref[i].src_len; k++)
                ck_assert_msg(fabs(a->attention[k] - b->attention[k]) <= 1e-5,
                              "%s: source %d hypothesis %d: attention %d: %.8f, %.8f", what, i, h, k, a->attention[k],
                              b->attention[k]);
        }
    }
}

/* The sources through streams (cg_s2s_stream) of room 3 and 1, one
 * joining every other step: each result is cg_s2s_translate's (ref). */
static void check_stream(cg_s2s *m, const char *what, const cg_s2s_options *o, const sources *s,
                         const cg_s2s_result *ref, int full) {
    static const int rooms[] = {3, 1};
    for (int k = 0; k < (full ? 2 : 1); k++) {
        cg_s2s_result got[MAX_SRC];
        memset(got, 0, sizeof got);
        tu_s2s_stream(m, o, rooms[k], 2, s->n, s->ptr, s->len, got, NULL);
        char tag[400];
        snprintf(tag, sizeof tag, "%s, a stream of room %d", what, rooms[k]);
        same_results(tag, s->n, ref, got);
        for (int i = 0; i < s->n; i++) cg_s2s_result_clear(&got[i]);
    }
}

/* One case of gen.json on the model m (device dev): every hypothesis's
 * tokens equal, every beam score within 1e-4; through a stream too (on an
 * OpenCL device greedy only, in one stream: each cache length a stream
 * meets is a plan binding, slow to build on some implementations). */
static void check_case(cg_s2s *m, const char *dev, const char *what, const cJSON *c, const sources *s) {
    const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
    cg_s2s_options o = {.struct_size = sizeof o,
                        .beam = cJSON_GetObjectItem(c, "beam")->valueint,
                        .nbest = cJSON_GetObjectItem(c, "nbest")->valueint,
                        .alpha = cJSON_GetObjectItem(c, "length_penalty")->valuedouble,
                        .max_len = cJSON_GetObjectItem(c, "max_length")->valueint - 1,
                        .flags = CG_S2S_ALPHA_SET};
    cg_s2s_result res[MAX_SRC];
    ck_assert_msg(tu_s2s_translate(m, &o, s->n, s->ptr, s->len, res) == CG_OK, "%s %s on %s: %s", what, name, dev,
                  cg_last_error());
    tu_s2s_check_drop(m, &o, s->n, s->ptr, s->len);
    const int on_cpu = !strcmp(dev, "cpu");
    if (on_cpu || o.beam <= 1) {
        char tag[300];
        snprintf(tag, sizeof tag, "%s %s on %s", what, name, dev);
        check_stream(m, tag, &o, s, res, on_cpu);
    }
    const cJSON *results = cJSON_GetObjectItem(c, "results");
    for (int i = 0; i < s->n; i++) {
        const cJSON *r = cJSON_GetArrayItem(results, i), *hyps = cJSON_GetObjectItem(r, "hyps"),
                    *scores = cJSON_GetObjectItem(r, "scores");
        ck_assert_int_eq(res[i].n_hyps, cJSON_GetArraySize(hyps));
        for (int h = 0; h < res[i].n_hyps; h++) {
            int32_t want[MAX_TOK];
            int nw = ids_of(cJSON_GetArrayItem(hyps, h), want, MAX_TOK);
            const cg_s2s_hyp *y = &res[i].hyps[h];
            int same = y->n_tokens == nw && !memcmp(y->tokens, want, sizeof(int32_t) * (size_t)nw);
            ck_assert_msg(same, "%s %s on %s: source %d hypothesis %d: %d tokens differ from transformers' %d", what,
                          name, dev, i, h, y->n_tokens, nw);
            if (cJSON_IsArray(scores)) {
                double ws = cJSON_GetArrayItem(scores, h)->valuedouble;
                ck_assert_msg(fabs(y->score - ws) <= 1e-4 * (1 + fabs(ws)),
                              "%s %s on %s: source %d hypothesis %d: score %.7f, transformers %.7f", what, name, dev, i,
                              h, y->score, ws);
            }
        }
        cg_s2s_result_clear(&res[i]);
    }
}

/* Every case of the gen.json at rel on the model in dir, on every device. */
static void check_file(const char *dir_rel, const char *gen_rel) {
    char dir[512], path[512];
    src_path(dir, sizeof dir, dir_rel);
    cJSON *j = read_json(src_path(path, sizeof path, gen_rel));
    sources s;
    read_sources(j, &s);
    for (int d = 0; d < cg_device_count(); d++) {
        char buf[256];
        const char *dev = cg_device_describe(d, buf, sizeof buf);
        cg_plan_options po = {.struct_size = sizeof po, .device = dev};
        cg_s2s *m;
        ck_assert_msg(cg_s2s_load(ctx, dir, &po, NULL, &m) == CG_OK, "%s on %s: %s", dir_rel, dev, cg_last_error());
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases")) check_case(m, dev, dir_rel, c, &s);
        fprintf(stderr, "%s on %s: %d cases token-equal to transformers' generate\n", dir_rel, dev,
                cJSON_GetArraySize(cJSON_GetObjectItem(j, "cases")));
        cg_s2s_free(m);
    }
    cJSON_Delete(j);
}

/* Greedy's attention maps against transformers' cross_attentions of the
 * last layer: averaged over the heads (attention_head 0) and head 2, every
 * weight within 1e-5, on every device. */
static void check_attention(const char *dir_rel, const char *gen_rel) {
    char dir[512], path[512];
    src_path(dir, sizeof dir, dir_rel);
    cJSON *j = read_json(src_path(path, sizeof path, gen_rel));
    sources s;
    read_sources(j, &s);
    const cJSON *greedy = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "cases"), 0);
    for (int d = 0; d < cg_device_count(); d++) {
        char buf[256];
        const char *dev = cg_device_describe(d, buf, sizeof buf);
        cg_plan_options po = {.struct_size = sizeof po, .device = dev};
        cg_s2s *m;
        ck_assert_msg(cg_s2s_load(ctx, dir, &po, NULL, &m) == CG_OK, "%s", cg_last_error());
        /* without maps first: the step runs none of the maps' nodes (fewer
         * launches per step than the steps that give maps, below) */
        cg_s2s_options plain = {.struct_size = sizeof plain, .beam = 1};
        cg_s2s_result pr[MAX_SRC];
        ck_assert_msg(cg_s2s_translate(m, &plain, s.n, s.ptr, s.len, pr, NULL, NULL) == CG_OK, "%s", cg_last_error());
        for (int i = 0; i < s.n; i++) cg_s2s_result_clear(&pr[i]);
        cg_plan_stats d_plain, d_all;
        ck_assert_int_eq(cg_s2s_stats(m, NULL, &d_plain), CG_OK);
        for (int head = 0; head <= 2; head += 2) {
            cg_s2s_options o = {.struct_size = sizeof o, .beam = 1, .attention = 1, .attention_head = head};
            cg_s2s_result res[MAX_SRC];
            ck_assert_msg(cg_s2s_translate(m, &o, s.n, s.ptr, s.len, res, NULL, NULL) == CG_OK, "%s", cg_last_error());
            double worst = 0;
            for (int i = 0; i < s.n; i++) {
                const cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(greedy, "results"), i);
                const cJSON *want = cJSON_GetObjectItem(r, head ? "attention_head2" : "attention_mean");
                const cg_s2s_hyp *y = &res[i].hyps[0];
                ck_assert_int_eq(res[i].src_len, s.len[i]);
                ck_assert_msg(y->attention && y->n_steps == cJSON_GetArraySize(want), "%s source %d: %d steps", dir_rel,
                              i, y->n_steps);
                for (int t = 0; t < y->n_steps; t++)
                    for (int c = 0; c < s.len[i]; c++) {
                        double w = cJSON_GetArrayItem(cJSON_GetArrayItem(want, t), c)->valuedouble;
                        double diff = fabs(y->attention[(size_t)t * (size_t)s.len[i] + (size_t)c] - w);
                        if (!(diff <= worst)) worst = diff;
                    }
                cg_s2s_result_clear(&res[i]);
            }
            ck_assert_msg(worst <= 1e-5, "%s on %s, attention_head %d: weights %g from transformers'", dir_rel, dev,
                          head, worst);
            fprintf(stderr, "%s on %s: attention (head %d) within %.2g of transformers\n", dir_rel, dev, head, worst);
        }
        ck_assert_int_eq(cg_s2s_stats(m, NULL, &d_all), CG_OK);
        const double per_plain = (double)d_plain.kernel_launches / (double)d_plain.runs;
        const double per_maps =
            (double)(d_all.kernel_launches - d_plain.kernel_launches) / (double)(d_all.runs - d_plain.runs);
        ck_assert_msg(d_plain.runs > 0 && per_maps > per_plain,
                      "%s on %s: %.1f launches a step with maps, %.1f without", dir_rel, dev, per_maps, per_plain);
        cg_s2s_options bad = {.struct_size = sizeof bad, .attention = 1, .attention_head = 99};
        cg_s2s_result r1;
        ck_assert_int_eq(cg_s2s_translate(m, &bad, 1, s.ptr, s.len, &r1, NULL, NULL), CG_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(cg_last_error(), "attention_head 99"), "%s", cg_last_error());
        cg_s2s_free(m);
    }
    cJSON_Delete(j);
}

START_TEST(attention_maps_are_transformers) {
    check_attention("tests/data/marian/swish_scaled", "tests/data/marian/swish_scaled/gen.json");
    check_attention("tests/data/marian/gelu", "tests/data/marian/gelu/gen.json");
}
END_TEST

START_TEST(swish_scaled_generates_as_transformers) {
    check_file("tests/data/marian/swish_scaled", "tests/data/marian/swish_scaled/gen.json");
}
END_TEST

START_TEST(gelu_generates_as_transformers) { check_file("tests/data/marian/gelu", "tests/data/marian/gelu/gen.json"); }
END_TEST

/* BART and mBART models: learned positions, pre-LN (mBART), the first
 * token forced (forced_bos_token_id) and a minimum length from their
 * generation_config.json. */
START_TEST(bart_generates_as_transformers) {
    check_file("tests/data/marian/bart", "tests/data/marian/bart/gen.json");
    check_file("tests/data/marian/mbart", "tests/data/marian/mbart/gen.json");
}
END_TEST

START_TEST(demo_generates_as_transformers) {
    if (!tu_have_feature("sentencepiece")) return; /* the directory has vocab.json: loading needs it */
    check_file("models/marian_dates", "tests/data/marian/dates_gen.json");
}
END_TEST

/* A long stream: 48 sentences (gelu's six sources eight times) through
 * room 2, one joining whenever there is room, with attention maps, so rows
 * join a cache that has grown long and the cache is cut short many times
 * (tf_stream.c): every result is cg_s2s_translate's, on every device. */
START_TEST(a_long_stream_trims_its_caches) {
    char dir[512], path[512];
    src_path(dir, sizeof dir, "tests/data/marian/gelu");
    cJSON *j = read_json(src_path(path, sizeof path, "tests/data/marian/gelu/gen.json"));
    sources s;
    read_sources(j, &s);
    enum { N = 48 };
    const int32_t *src[N];
    int len[N];
    for (int i = 0; i < N; i++) src[i] = s.ptr[i % s.n], len[i] = s.len[i % s.n];
    cg_s2s_options o = {.struct_size = sizeof o, .attention = 1, .max_len = 24};
    for (int d = 0; d < cg_device_count(); d++) {
        char buf[256];
        const char *dev = cg_device_describe(d, buf, sizeof buf);
        cg_plan_options po = {.struct_size = sizeof po, .device = dev};
        cg_s2s *m;
        ck_assert_msg(cg_s2s_load(ctx, dir, &po, NULL, &m) == CG_OK, "%s: %s", dev, cg_last_error());
        cg_s2s_result *ref = calloc(N, sizeof *ref), *got = calloc(N, sizeof *got);
        ck_assert(ref && got);
        ck_assert_msg(cg_s2s_translate(m, &o, N, src, len, ref, NULL, NULL) == CG_OK, "%s", cg_last_error());
        cg_s2s_stream *st;
        const int steps = tu_s2s_stream(m, &o, 2, 1, N, src, len, got, &st);
        const long trims = s2s_stream_trims(st);
        cg_s2s_stream_free(st);
        ck_assert_msg(trims >= 4, "%s: %d steps, %ld trims", dev, steps, trims);
        char tag[300];
        snprintf(tag, sizeof tag, "a long stream on %s (%ld trims)", dev, trims);
        same_results(tag, N, ref, got);
        for (int i = 0; i < N; i++) cg_s2s_result_clear(&ref[i]), cg_s2s_result_clear(&got[i]);
        free(ref);
        free(got);
        cg_s2s_free(m);
        fprintf(stderr, "%s: %d sentences through a stream of room 2 in %d steps, %ld trims\n", dev, N, steps, trims);
    }
    cJSON_Delete(j);
}
END_TEST

/* `clgraph translate` on the demo: text in, the expected dates out, on the
 * CPU and the first OpenCL device; n-best lines with scores. */
START_TEST(cli_translates_the_demo) {
    if (!tu_have_feature("sentencepiece")) return;
    char dir[512], in[512], want[512];
    src_path(dir, sizeof dir, "models/marian_dates");
    src_path(in, sizeof in, "models/dates/samples.txt");
    char *expected = tu_read_text(src_path(want, sizeof want, "models/dates/samples.expected"), NULL);
    const char *devs[2] = {"cpu", "opencl:0"};
    for (int d = 0; d < (cg_device_count() > 1 ? 2 : 1); d++) {
        const char *a[] = {"translate", dir, "--device", devs[d], NULL};
        ck_assert_msg(tu_run_cli(a, NULL, in) == 0, "%s: %s", devs[d], tu_err);
        ck_assert_msg(!strcmp(tu_out, expected), "%s: %s", devs[d], tu_out);
    }
    free(expected);
    const char *nb[] = {"translate", dir, "--beam", "4", "--nbest", "2", "--scores", NULL};
    ck_assert_msg(tu_run_cli(nb, NULL, in) == 0, "%s", tu_err);
    int lines = 0;
    for (const char *p = tu_out; (p = strchr(p, '\n')); p++) lines++;
    ck_assert_int_eq(lines, 28);
    const char *first = "0\t2026-11-22\t-0.000";
    ck_assert_msg(!strncmp(tu_out, first, strlen(first)), "%s", tu_out);
    /* `clgraph plan` describes the encoder and the step with default sizes */
    const char *plan[] = {"plan", dir, NULL};
    ck_assert_msg(tu_run_cli(plan, NULL, NULL) == 0, "%s", tu_err);
    ck_assert_msg(strstr(tu_out, "plan of graph 'encoder'") && strstr(tu_out, "plan of graph 'decoder_step'"), "%s",
                  tu_out);
}
END_TEST

/* The narrowed forms of the demo: `clgraph quantize --to int8 / bf16`
 * (model.safetensors and the tokenizer files written, the tied embedding
 * narrowed too) and --weights-dtype at load translate the samples as the
 * f32 model does, on the CPU and the first OpenCL device. */
START_TEST(cli_quantized_forms) {
    if (!tu_have_feature("sentencepiece")) return;
    char dir[512], in[512], want[512];
    src_path(dir, sizeof dir, "models/marian_dates");
    src_path(in, sizeof in, "models/dates/samples.txt");
    char *expected = tu_read_text(src_path(want, sizeof want, "models/dates/samples.expected"), NULL);
    static const char *const to[3] = {"int8", "bf16", "f16"};
    for (int i = 0; i < 3; i++) {
        char out[600];
        snprintf(out, sizeof out, "%s/q_%s", tu_dir, to[i]);
        const char *q[] = {"quantize", dir, "--to", to[i], "-o", out, NULL};
        ck_assert_msg(tu_run_cli(q, NULL, NULL) == 0, "%s: %s", to[i], tu_err);
        ck_assert_msg(strstr(tu_err, "33 of 86 tensors"), "%s: %s", to[i], tu_err);
        static const char *const files[] = {"config.json", "generation_config.json", "vocab.json", "source.spm",
                                            "target.spm",  "model.safetensors"};
        for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
            char path[700];
            snprintf(path, sizeof path, "%s/%s", out, files[f]);
            ck_assert_msg(access(path, R_OK) == 0, "%s: no %s", to[i], files[f]);
        }
        const char *devs[2] = {"cpu", "opencl:0"};
        for (int d = 0; d < (cg_device_count() > 1 ? 2 : 1); d++) {
            const char *tr[] = {"translate", out, "--device", devs[d], NULL};
            ck_assert_msg(tu_run_cli(tr, NULL, in) == 0, "%s on %s: %s", to[i], devs[d], tu_err);
            ck_assert_msg(!strcmp(tu_out, expected), "%s on %s: %s", to[i], devs[d], tu_out);
            const char *wd[] = {"translate", dir, "--weights-dtype", to[i], "--device", devs[d], NULL};
            ck_assert_msg(tu_run_cli(wd, NULL, in) == 0, "--weights-dtype %s on %s: %s", to[i], devs[d], tu_err);
            ck_assert_msg(!strcmp(tu_out, expected), "--weights-dtype %s on %s: %s", to[i], devs[d], tu_out);
        }
    }
    free(expected);
}
END_TEST

/* A directory without tokenizer files translates ids (--ids: transformers'
 * greedy ids out); text is refused with one line saying so. Mistakes in
 * options the model bounds are one line each. */
START_TEST(cli_ids_and_mistakes) {
    char dir[512], path[512];
    src_path(dir, sizeof dir, "tests/data/marian/gelu");
    cJSON *j = read_json(src_path(path, sizeof path, "tests/data/marian/gelu/gen.json"));
    const cJSON *srcs = cJSON_GetObjectItem(j, "sources"),
                *greedy = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "cases"), 0);
    char input[2048] = "", expect[2048] = "";
    size_t u = 0, v = 0;
    const cJSON *e, *t;
    int i = 0;
    cJSON_ArrayForEach(e, srcs) {
        cJSON_ArrayForEach(t, e) u += (size_t)snprintf(input + u, sizeof input - u, "%d ", t->valueint);
        input[u - 1] = '\n';
        const cJSON *h = cJSON_GetArrayItem(
            cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(greedy, "results"), i++), "hyps"), 0);
        int first = 1;
        cJSON_ArrayForEach(t, h) {
            v += (size_t)snprintf(expect + v, sizeof expect - v, "%s%d", first ? "" : " ", t->valueint);
            first = 0;
        }
        expect[v++] = '\n';
        expect[v] = 0;
    }
    cJSON_Delete(j);
    const char *in = tu_write_file("ids.txt", input, strlen(input));
    const char *ids[] = {"translate", dir, "--ids", "--beam", "1", NULL};
    ck_assert_msg(tu_run_cli(ids, NULL, in) == 0, "%s", tu_err);
    ck_assert_msg(!strcmp(tu_out, expect), "%s\nexpected\n%s", tu_out, expect);
    const char *text_in = tu_write_file("text.txt", "hello\n", 6);
    const char *text[] = {"translate", dir, NULL};
    ck_assert_int_ne(tu_run_cli(text, NULL, text_in), 0);
    tu_assert_one_line((const char *const[]){"stdin:1", "no vocab.json", "--ids", NULL});
    const char *att[] = {"translate", dir, "--ids", "--beam", "1", "--attention", tu_path("a.json"), NULL};
    ck_assert_msg(tu_run_cli(att, NULL, in) == 0, "%s", tu_err);
    char *aj = tu_read_text(tu_path("a.json"), NULL);
    cJSON *am = cJSON_Parse(aj);
    ck_assert_msg(cJSON_IsArray(am) || cJSON_IsObject(am), "%s", aj);
    cJSON_Delete(am);
    free(aj);
    const char *len[] = {"translate", dir, "--ids", "--max-len", "65", NULL};
    ck_assert_int_ne(tu_run_cli(len, NULL, in), 0);
    tu_assert_one_line((const char *const[]){"max_len 65", "max_position_embeddings", NULL});
    const char *big = tu_write_file("big.txt", "90\n", 3);
    ck_assert_int_ne(tu_run_cli(ids, NULL, big), 0);
    tu_assert_one_line((const char *const[]){"stdin:1", "token id 90", NULL});
}
END_TEST

/* cg_s2s_get_info of both families and of a directory without tokenizer
 * files, against the directories' own files: the demo's vocab.json has 167
 * pieces, <unk> 1 (OPUS-MT's layout); models/dates' config.json says chars,
 * its src.vocab and tgt.vocab have 63 and 15 lines, and the spec's unk is
 * 3; tests/data/marian/gelu has no vocab.json and vocab_size 90. */
START_TEST(model_info) {
    static const struct {
        const char *dir;
        int family, tokenizer;
        int32_t unk, src, tgt;
    } want[] = {
        {"models/marian_dates", CG_S2S_FAMILY_TRANSFORMER, CG_S2S_TOKENS_SENTENCEPIECE, 1, 167, 167},
        {"models/dates", CG_S2S_FAMILY_RNN, CG_S2S_TOKENS_CHARS, 3, 63, 15},
        {"tests/data/marian/gelu", CG_S2S_FAMILY_TRANSFORMER, CG_S2S_TOKENS_IDS, -1, 90, 90},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!tu_have_feature("sentencepiece") && want[i].tokenizer == CG_S2S_TOKENS_SENTENCEPIECE) continue;
        char dir[512];
        src_path(dir, sizeof dir, want[i].dir);
        cg_s2s *m;
        ck_assert_msg(cg_s2s_load(ctx, dir, NULL, NULL, &m) == CG_OK, "%s: %s", want[i].dir, cg_last_error());
        cg_s2s_info info = {.struct_size = sizeof info};
        ck_assert_int_eq(cg_s2s_get_info(m, &info), CG_OK);
        ck_assert_msg(info.family == want[i].family && info.tokenizer == want[i].tokenizer &&
                          info.unk_id == want[i].unk && info.src_vocab == want[i].src && info.tgt_vocab == want[i].tgt,
                      "%s: family %d tokenizer %d unk %d vocab %d / %d", want[i].dir, info.family, info.tokenizer,
                      (int)info.unk_id, (int)info.src_vocab, (int)info.tgt_vocab);
        /* either family decodes as a stream */
        cg_s2s_stream *st = NULL;
        ck_assert_msg(cg_s2s_stream_open(m, NULL, 4, &st) == CG_OK, "%s: %s", want[i].dir, cg_last_error());
        cg_s2s_stream_free(st);
        cg_s2s_info small = {.struct_size = sizeof small - 1};
        ck_assert_int_eq(cg_s2s_get_info(m, &small), CG_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(cg_last_error(), "struct_size") != NULL, "%s", cg_last_error());
        cg_s2s_free(m);
    }
    ck_assert_int_eq(cg_s2s_get_info(NULL, NULL), CG_ERR_INVALID_ARGUMENT);
}
END_TEST

int main(void) {
    Suite *s = suite_create("tf_translate");
    TCase *tc = tcase_create("generate");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, swish_scaled_generates_as_transformers);
    tcase_add_test(tc, gelu_generates_as_transformers);
    tcase_add_test(tc, demo_generates_as_transformers);
    tcase_add_test(tc, bart_generates_as_transformers);
    tcase_add_test(tc, attention_maps_are_transformers);
    tcase_add_test(tc, a_long_stream_trims_its_caches);
    suite_add_tcase(s, tc);
    TCase *tcli = tcase_create("cli");
    tcase_add_checked_fixture(tcli, setup, teardown);
    tcase_set_timeout(tcli, 300);
    tcase_add_test(tcli, cli_translates_the_demo);
    tcase_add_test(tcli, cli_ids_and_mistakes);
    tcase_add_test(tcli, cli_quantized_forms);
    tcase_add_test(tcli, model_info);
    suite_add_tcase(s, tcli);
    return tu_run_suite(s, 0);
}
