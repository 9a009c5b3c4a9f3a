/* The MarianMT tokenizer (transformer/tf_vocab.c over SentencePiece)
 * against transformers' MarianTokenizer: tests/data/marian/tok/expected.json
 * (tools/py/make_marian_tok.py) holds the ids it makes of ten texts (unknown
 * characters, empty and blank texts, a long unknown run) and the text it
 * makes of five target id sequences (pad and EOS inside, random ids, pieces target.spm lacks).
 * Also every mistake in vocab.json and a missing model file. */
#include <check.h>
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_util.h"
#include "tf_vocab.h"

#define TOK CG_TEST_DATA_DIR "/marian/tok"

static void setup(void) { tu_setup_dir("tf_vocab"); }
static void teardown(void) { tu_teardown_dir(); }

static cJSON *expected(void) {
    char *text = tu_read_text(TOK "/expected.json", NULL);
    ck_assert_ptr_nonnull(text);
    cJSON *e = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(e);
    return e;
}

START_TEST(matches_marian_tokenizer) {
    tf_vocab v;
    ck_assert_msg(tf_vocab_load(TOK, 0, 1, &v) == CG_OK, "%s", cg_last_error());
    cJSON *e = expected();
    ck_assert_int_eq(v.n, cJSON_GetObjectItem(e, "vocab_size")->valueint);
    ck_assert_int_eq(v.unk, cJSON_GetObjectItem(e, "unk_id")->valueint);
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(e, "encode")) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        const cJSON *want = cJSON_GetObjectItem(c, "ids");
        int32_t *ids;
        int n;
        ck_assert_msg(tf_vocab_encode(&v, text, &ids, &n) == CG_OK, "%s", cg_last_error());
        ck_assert_msg(n == cJSON_GetArraySize(want), "'%s': %d ids, MarianTokenizer %d", text, n,
                      cJSON_GetArraySize(want));
        for (int i = 0; i < n; i++)
            ck_assert_msg(ids[i] == cJSON_GetArrayItem(want, i)->valueint, "'%s': id %d is %d, MarianTokenizer %d",
                          text, i, ids[i], cJSON_GetArrayItem(want, i)->valueint);
        free(ids);
    }
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(e, "decode")) {
        const cJSON *in = cJSON_GetObjectItem(c, "ids");
        int n = cJSON_GetArraySize(in);
        int32_t ids[64];
        for (int i = 0; i < n; i++) ids[i] = cJSON_GetArrayItem(in, i)->valueint;
        char *text;
        ck_assert_msg(tf_vocab_decode(&v, ids, n, &text) == CG_OK, "%s", cg_last_error());
        ck_assert_str_eq(text, cJSON_GetObjectItem(c, "text")->valuestring);
        free(text);
    }
    int32_t bad = v.n + 5;
    char *text;
    ck_assert_int_eq(tf_vocab_decode(&v, &bad, 1, &text), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "target id") != NULL, "%s", cg_last_error());
    cJSON_Delete(e);
    tf_vocab_free(&v);
}
END_TEST

/* A model directory made of `vocab` (vocab.json's text) and the test's
 * SentencePiece models, in the test's temporary directory. */
static const char *dir_with(const char *name, const char *vocab, int with_spm) {
    const char *dir = tu_path(name);
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    if (with_spm) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "cp '%s/source.spm' '%s/target.spm' '%s/'", TOK, TOK, dir);
        ck_assert_int_eq(system(cmd), 0);
    }
    char file[128];
    snprintf(file, sizeof file, "%s/vocab.json", name);
    tu_write_file(file, vocab, strlen(vocab));
    return tu_path(name);
}

static void refused(const char *name, const char *vocab, int with_spm, cg_status want, const char *needle) {
    tf_vocab v;
    cg_status s = tf_vocab_load(dir_with(name, vocab, with_spm), 0, 1, &v);
    ck_assert_msg(s == want, "%s: status %d, expected %d (%s)", name, s, want, cg_last_error());
    ck_assert_msg(strstr(cg_last_error(), needle) != NULL, "%s: '%s' lacks '%s'", name, cg_last_error(), needle);
    ck_assert_ptr_null(v.piece);
}

START_TEST(mistakes_are_named) {
    refused("array", "[1, 2]", 1, CG_ERR_FORMAT, "vocab.json:1:1: the configuration must be a JSON object");
    refused("badid", "{\"<pad>\": 0, \"</s>\": 1, \"<unk>\": -2}", 1, CG_ERR_FORMAT,
            "piece \"<unk>\": the id must be an integer");
    refused("dup", "{\"<pad>\": 0, \"</s>\": 1, \"<unk>\": 1}", 1, CG_ERR_FORMAT, "have the same id 1");
    refused("nounk", "{\"<pad>\": 0, \"</s>\": 1}", 1, CG_ERR_FORMAT, "has no \"<unk>\" piece");
    refused("noeos", "{\"<pad>\": 0, \"<unk>\": 2}", 1, CG_ERR_FORMAT, "eos_token_id (1) is not an id of a piece");
    refused("nospm", "{\"<pad>\": 0, \"</s>\": 1, \"<unk>\": 2}", 0,
            CG_HAVE_SENTENCEPIECE ? CG_ERR_FORMAT : CG_ERR_UNSUPPORTED, "source.spm");
    refused("truncated", "{\"<pad>\": 0, ", 1, CG_ERR_FORMAT, "vocab.json");
}
END_TEST

int main(void) {
    Suite *s = suite_create("tf_vocab");
    TCase *tc = tcase_create("tf_vocab");
    tcase_add_checked_fixture(tc, setup, teardown);
    if (CG_HAVE_SENTENCEPIECE) tcase_add_test(tc, matches_marian_tokenizer);
    tcase_add_test(tc, mistakes_are_named);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
