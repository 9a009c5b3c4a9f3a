/* base/: shapes and their formatting, the cache directory. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "clgraph/clgraph.h"
#include "shape.h"

START_TEST(test_shape_helpers) {
    int64_t a[3] = {2, 3, 4};
    ck_assert_int_eq(cg_shape_numel(3, a), 24);
    ck_assert_int_eq(cg_shape_numel(0, NULL), 1);
    int64_t z[3] = {INT64_MAX, 0, INT64_MAX};
    ck_assert_int_eq(cg_shape_numel(3, z), 0);
    int64_t o[2] = {INT64_C(1) << 32, INT64_C(1) << 31};
    ck_assert_int_eq(cg_shape_numel(2, o), -1); /* 2^63 overflows */
    int64_t m[2] = {INT64_MAX, 1};
    ck_assert_int_eq(cg_shape_numel(2, m), INT64_MAX);
    int64_t n[2] = {3, -1};
    ck_assert_int_eq(cg_shape_numel(2, n), -1);
    ck_assert_int_eq(cg_shape_numel(9, a), -1);
    ck_assert_int_eq(cg_shape_numel(-1, a), -1);

    char buf[64];
    int64_t s[2] = {2, 3};
    cg_shape_format(buf, sizeof buf, CG_F32, 2, s, NULL, 0);
    ck_assert_str_eq(buf, "f32[2, 3]");
    cg_shape_format(buf, sizeof buf, CG_I32, 0, NULL, NULL, 0);
    ck_assert_str_eq(buf, "i32[]");
    int64_t sym[3] = {CG_DIM_UNKNOWN, CG_DIM_SYM(0), 4};
    cg_shape_format(buf, sizeof buf, CG_F32, 3, sym, NULL, 0);
    ck_assert_str_eq(buf, "f32[?, s0, 4]");
    const char *names[] = {"B"};
    cg_shape_format(buf, sizeof buf, CG_F32, 3, sym, names, 1);
    ck_assert_str_eq(buf, "f32[?, B, 4]");
    int64_t sym1[2] = {CG_DIM_SYM(1), CG_DIM_SYM(0)}; /* a symbol past the table */
    cg_shape_format(buf, sizeof buf, 0, 2, sym1, names, 1);
    ck_assert_str_eq(buf, "[s1, B]");
    cg_shape_format(buf, 6, CG_F32, 2, s, NULL, 0); /* truncated, still terminated */
    ck_assert_str_eq(buf, "f32[2");
    cg_shape_format(buf, sizeof buf, 99, 1, s, NULL, 0);
    ck_assert_str_eq(buf, "?[2]");
    cg_shape_format(buf, sizeof buf, CG_F32, 9, s, NULL, 0);
    ck_assert_str_eq(buf, "f32[<invalid>]");

    cg_tensor_desc d = {CG_OP_F32, 2, {3, 5}};
    ck_assert_uint_eq(cg_desc_bytes(&d), 60);
    d.dims[1] = CG_DIM_SYM(0);
    ck_assert_uint_eq(cg_desc_bytes(&d), 0);
    d.dims[1] = 0;
    ck_assert_uint_eq(cg_desc_bytes(&d), 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("base");
    TCase *tc = tcase_create("shape");
    tcase_add_test(tc, test_shape_helpers);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
