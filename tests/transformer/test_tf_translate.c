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

#include "clgraph/clgraph.h"
#include "clgraph/seq2seq.h"
#include "test_util.h"

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

/* One case of gen.json on the model m (device dev): every hypothesis's
 * tokens equal, every beam score within 1e-4. */
static void check_case(cg_s2s *m, const char *dev, const char *what, const cJSON *c, const sources *s) {
    const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
    cg_s2s_options o = {.struct_size = sizeof o,
                        .beam = cJSON_GetObjectItem(c, "beam")->valueint,
                        .nbest = cJSON_GetObjectItem(c, "nbest")->valueint,
                        .alpha = cJSON_GetObjectItem(c, "length_penalty")->valuedouble,
                        .max_len = cJSON_GetObjectItem(c, "max_length")->valueint - 1,
                        .flags = CG_S2S_ALPHA_SET};
    cg_s2s_result res[MAX_SRC];
    ck_assert_msg(cg_s2s_translate(m, &o, s->n, s->ptr, s->len, res, NULL, NULL) == CG_OK, "%s %s on %s: %s", what,
                  name, dev, cg_last_error());
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
    sources s = {0};
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "sources")) {
        ck_assert_int_lt(s.n, MAX_SRC);
        s.len[s.n] = ids_of(e, s.ids[s.n], MAX_TOK);
        s.ptr[s.n] = s.ids[s.n];
        s.n++;
    }
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

START_TEST(swish_scaled_generates_as_transformers) {
    check_file("tests/data/marian/swish_scaled", "tests/data/marian/swish_scaled/gen.json");
}
END_TEST

START_TEST(gelu_generates_as_transformers) { check_file("tests/data/marian/gelu", "tests/data/marian/gelu/gen.json"); }
END_TEST

START_TEST(demo_generates_as_transformers) {
    if (!tu_have_feature("sentencepiece")) return; /* the directory has vocab.json: loading needs it */
    check_file("models/marian_dates", "tests/data/marian/dates_gen.json");
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
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
