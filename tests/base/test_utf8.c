/* base/utf8: the strict UTF-8 validator, against hand-picked cases and a
 * naive decoder (decode the code point, then check minimum, surrogate and
 * maximum) over every 1-3 byte sequence and a sweep of 4-byte ones. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "test_util.h"
#include "utf8.h"

/* Naive reference: length of a valid sequence at s, or 0. */
static size_t ref_len(const unsigned char *s, size_t avail) {
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    size_t n;
    uint32_t cp;
    if (s[0] < 0x80) return 1;
    if ((s[0] & 0xE0) == 0xC0) n = 2, cp = s[0] & 0x1F;
    else if ((s[0] & 0xF0) == 0xE0) n = 3, cp = s[0] & 0x0F;
    else if ((s[0] & 0xF8) == 0xF0) n = 4, cp = s[0] & 0x07;
    else return 0;
    if (avail < n) return 0;
    for (size_t k = 1; k < n; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[k] & 0x3F);
    }
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

static size_t len_of(const char *s) { return cg_utf8_seq_len(s, strlen(s)); }

START_TEST(test_utf8_cases) {
    ck_assert_uint_eq(len_of("a"), 1);
    ck_assert_uint_eq(len_of("\xc3\xa9"), 2);         /* U+00E9 */
    ck_assert_uint_eq(len_of("\xe2\x82\xac"), 3);     /* U+20AC */
    ck_assert_uint_eq(len_of("\xf0\x9f\x98\x80"), 4); /* U+1F600 */
    ck_assert_uint_eq(len_of("\xf4\x8f\xbf\xbf"), 4); /* U+10FFFF */
    ck_assert_uint_eq(len_of("\xef\xbf\xbf"), 3);     /* U+FFFF */
    /* overlongs */
    ck_assert_uint_eq(len_of("\xc0\x80"), 0);
    ck_assert_uint_eq(len_of("\xc1\xbf"), 0);
    ck_assert_uint_eq(len_of("\xe0\x80\x80"), 0);
    ck_assert_uint_eq(len_of("\xe0\x9f\xbf"), 0);
    ck_assert_uint_eq(len_of("\xf0\x8f\xbf\xbf"), 0);
    /* surrogates U+D800, U+DFFF */
    ck_assert_uint_eq(len_of("\xed\xa0\x80"), 0);
    ck_assert_uint_eq(len_of("\xed\xbf\xbf"), 0);
    ck_assert_uint_eq(len_of("\xed\x9f\xbf"), 3); /* U+D7FF */
    /* past U+10FFFF */
    ck_assert_uint_eq(len_of("\xf4\x90\x80\x80"), 0);
    ck_assert_uint_eq(len_of("\xf5\x80\x80\x80"), 0);
    ck_assert_uint_eq(len_of("\xff"), 0);
    /* stray continuation, truncated sequences */
    ck_assert_uint_eq(len_of("\x80"), 0);
    ck_assert_uint_eq(cg_utf8_seq_len("\xc3\xa9", 1), 0);
    ck_assert_uint_eq(cg_utf8_seq_len("\xe2\x82\xac", 2), 0);
    ck_assert_uint_eq(cg_utf8_seq_len("\xf0\x9f\x98\x80", 3), 0);
    ck_assert_uint_eq(len_of("\xe2\x82"
                             "a"),
                      0);
}
END_TEST

START_TEST(test_utf8_check_offsets) {
    const unsigned char ok[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z";
    ck_assert_uint_eq(cg_utf8_check(ok, sizeof ok - 1), sizeof ok - 1);
    const unsigned char bad[] = "ab\xc3\xa9\xed\xa0\x80";
    ck_assert_uint_eq(cg_utf8_check(bad, sizeof bad - 1), 4);
    const unsigned char cut[] = "ab\xe2\x82";
    ck_assert_uint_eq(cg_utf8_check(cut, sizeof cut - 1), 2);
    ck_assert_uint_eq(cg_utf8_check(ok, 0), 0);
    ck_assert(cg_utf8_valid(""));
    ck_assert(cg_utf8_valid("x\xc3\xa9y"));
    ck_assert(!cg_utf8_valid("x\xc0\xafy"));
    ck_assert(!cg_utf8_valid("x\xf4\x90\x80\x80"));
}
END_TEST

/* Every sequence of up to 3 bytes, with every shorter avail too. */
START_TEST(test_utf8_exhaustive_short) {
    unsigned char s[4] = {0};
    for (uint32_t v = 0; v < 1u << 24; v++) {
        s[0] = (unsigned char)(v >> 16), s[1] = (unsigned char)(v >> 8), s[2] = (unsigned char)v;
        for (size_t avail = 1; avail <= 3; avail++) {
            size_t got = cg_utf8_seq_len((const char *)s, avail);
            if (got != ref_len(s, avail))
                ck_abort_msg("%02x %02x %02x avail %zu: %zu, reference %zu", s[0], s[1], s[2], avail, got,
                             ref_len(s, avail));
        }
    }
}
END_TEST

/* 4-byte leads with every second byte and the edge values of the rest. */
START_TEST(test_utf8_four_bytes) {
    static const unsigned char tail[] = {0x00, 0x41, 0x7f, 0x80, 0x9f, 0xa0, 0xbf, 0xc0, 0xff};
    unsigned char s[4];
    for (unsigned a = 0xf0; a <= 0xff; a++)
        for (unsigned b = 0; b < 256; b++)
            for (size_t i = 0; i < sizeof tail; i++)
                for (size_t j = 0; j < sizeof tail; j++) {
                    s[0] = (unsigned char)a, s[1] = (unsigned char)b, s[2] = tail[i], s[3] = tail[j];
                    ck_assert_uint_eq(cg_utf8_seq_len((const char *)s, 4), ref_len(s, 4));
                }
}
END_TEST

int main(void) {
    Suite *s = suite_create("utf8");
    TCase *tc = tcase_create("utf8");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_utf8_cases);
    tcase_add_test(tc, test_utf8_check_offsets);
    tcase_add_test(tc, test_utf8_exhaustive_short);
    tcase_add_test(tc, test_utf8_four_bytes);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
