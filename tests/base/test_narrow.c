/* base/narrow: the narrow dtypes' conversions against ml_dtypes and ONNX's
 * reference helpers (tests/data/dtypes/narrow_*.npy, made by
 * tools/py/make_narrow_data.py), ONNX's packed layout against hand-packed
 * bytes, and cg_tensor_convert's use of them. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "narrow.h"
#include "test_util.h"

#ifndef CG_TEST_DATA_DIR
#define CG_TEST_DATA_DIR "tests/data"
#endif

static cg_tensor *load(const char *name) {
    char path[512];
    cg_tensor *t = NULL;
    snprintf(path, sizeof path, "%s/dtypes/%s.npy", CG_TEST_DATA_DIR, name);
    ck_assert_msg(cg_tensor_load_npy(path, &t) == CG_OK, "%s: %s", path, cg_last_error());
    return t;
}

/* Every input through every variant (type, saturate, e8m0 rounding). */
START_TEST(test_narrow_from_f32) {
    cg_tensor *x = load("narrow_x"), *cases = load("narrow_cases"), *want = load("narrow_want");
    const int64_t n = cg_tensor_dim(x, 0), nv = cg_tensor_dim(cases, 0);
    ck_assert_int_eq(cg_tensor_dim(want, 0), nv);
    ck_assert_int_eq(cg_tensor_dim(want, 1), n);
    const float *xv = cg_tensor_data_const(x);
    const int32_t *cv = cg_tensor_data_const(cases);
    const uint8_t *wv = cg_tensor_data_const(want);
    for (int64_t v = 0; v < nv; v++) {
        const cg_dtype t = (cg_dtype)cv[3 * v];
        for (int64_t i = 0; i < n; i++) {
            uint8_t got = cg_f32_to_narrow(t, xv[i], cv[3 * v + 1], (cg_e8m0_round)cv[3 * v + 2]);
            ck_assert_msg(got == wv[v * n + i], "%s saturate %d round %d: %.9g gave 0x%02x, expected 0x%02x",
                          cg_dtype_name(t), cv[3 * v + 1], cv[3 * v + 2], (double)xv[i], got, wv[v * n + i]);
        }
    }
    cg_tensor_free(x), cg_tensor_free(cases), cg_tensor_free(want);
}
END_TEST

/* Every code of every type as an f32, bit for bit (NaN as NaN). */
START_TEST(test_narrow_to_f32) {
    cg_tensor *codes = load("narrow_codes");
    const float *w = cg_tensor_data_const(codes);
    for (int k = 0; k < 10; k++) {
        const cg_dtype t = (cg_dtype)(CG_F8E4M3FN + k);
        const int bits = cg_dtype_packed_bits(t);
        for (int c = 0; c < 256; c++) {
            uint8_t b = (uint8_t)c;
            if (bits < 8 && cg_narrow_normalize(t, b) != b) continue; /* not a byte t holds */
            float got = cg_narrow_to_f32(t, b), e = w[k * 256 + c];
            uint32_t gb, eb;
            memcpy(&gb, &got, 4), memcpy(&eb, &e, 4);
            ck_assert_msg(isnan(e) ? isnan(got) : gb == eb, "%s 0x%02x gave %.9g, expected %.9g", cg_dtype_name(t), c,
                          (double)got, (double)e);
        }
    }
    cg_tensor_free(codes);
}
END_TEST

/* ONNX's layout (onnx.proto): two 4-bit or four 2-bit elements a byte, the
 * first in the low bits, the last byte padded with zeros. */
START_TEST(test_narrow_pack) {
    const uint8_t i4[5] = {(uint8_t)-8, 7, (uint8_t)-1, 2, 5}, i4_packed[3] = {0x78, 0x2F, 0x05};
    const uint8_t u2[5] = {3, 0, 1, 2, 1}, u2_packed[2] = {0x93, 0x01};
    uint8_t p[3], u[5];
    ck_assert_uint_eq(cg_narrow_packed_bytes(CG_I4, 5), 3);
    ck_assert_uint_eq(cg_narrow_packed_bytes(CG_U2, 5), 2);
    cg_narrow_pack(CG_I4, i4, 5, p);
    ck_assert_mem_eq(p, i4_packed, 3);
    cg_narrow_unpack(CG_I4, i4_packed, 5, u);
    ck_assert_mem_eq(u, i4, 5);
    cg_narrow_pack(CG_U2, u2, 5, p);
    ck_assert_mem_eq(p, u2_packed, 2);
    cg_narrow_unpack(CG_U2, u2_packed, 5, u);
    ck_assert_mem_eq(u, u2, 5);
    /* i2's -2 and 1, sign-extended from the field */
    const uint8_t i2_packed[1] = {0x06}; /* 2, 1, 0, 0 */
    cg_narrow_unpack(CG_I2, i2_packed, 2, u);
    ck_assert_int_eq((int8_t)u[0], -2);
    ck_assert_int_eq((int8_t)u[1], 1);
}
END_TEST

/* Integers wrap into i4 (200 is 0xC8: -8), f4e2m1 holds its code. */
START_TEST(test_narrow_ints) {
    ck_assert_int_eq((int8_t)cg_int_to_narrow(CG_I4, 200, 1), -8);
    ck_assert_int_eq(cg_int_to_narrow(CG_U4, -1, 1), 15);
    ck_assert_int_eq((int8_t)cg_int_to_narrow(CG_I2, 3, 1), -1);
    ck_assert_int_eq(cg_int_to_narrow(CG_F4E2M1, 5, 1), 0x6); /* 5 is a tie between 4 and 6: even code 6 (4.0) */
    ck_assert_int_eq(cg_int_to_narrow(CG_F8E4M3FN, 1000, 1), 0x7E);
    ck_assert_int_eq(cg_int_to_narrow(CG_F8E4M3FN, 1000, 0), 0x7F);
}
END_TEST

/* cg_tensor_convert: the narrow floats to f32 exactly, f32 to them as the
 * cast op's default; i4 among the integers with its range checked. */
START_TEST(test_narrow_convert) {
    int64_t d = 3;
    cg_tensor *t, *f, *back, *i8;
    ck_assert_int_eq(cg_tensor_create(CG_F8E4M3FN, 1, &d, &t), CG_OK);
    uint8_t *b = cg_tensor_data(t);
    b[0] = 0x38, b[1] = 0xFE, b[2] = 0x01; /* 1.0, -448, 2^-9 */
    ck_assert(cg_dtype_convert_exact(CG_F8E4M3FN, CG_F32));
    ck_assert(!cg_dtype_convert_exact(CG_F32, CG_F8E4M3FN));
    ck_assert_int_eq(cg_tensor_convert(t, CG_F32, &f), CG_OK);
    const float *fv = cg_tensor_data_const(f);
    ck_assert(fv[0] == 1.0f && fv[1] == -448.0f && fv[2] == 0.001953125f);
    ck_assert_int_eq(cg_tensor_convert(f, CG_F8E4M3FN, &back), CG_OK);
    ck_assert_mem_eq(cg_tensor_data_const(back), b, 3);
    cg_tensor_free(t), cg_tensor_free(f), cg_tensor_free(back);
    ck_assert_int_eq(cg_tensor_create(CG_I8, 1, &d, &i8), CG_OK);
    int8_t *iv = cg_tensor_data(i8);
    iv[0] = -8, iv[1] = 7, iv[2] = 8;
    ck_assert_int_eq(cg_tensor_convert(i8, CG_I4, &t), CG_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "element 2 has value 8"));
    iv[2] = 0;
    ck_assert_int_eq(cg_tensor_convert(i8, CG_I4, &t), CG_OK);
    ck_assert_int_eq(((const int8_t *)cg_tensor_data_const(t))[0], -8);
    cg_tensor_free(t), cg_tensor_free(i8);
}
END_TEST

/* safetensors' float8 dtypes, in a file safetensors.torch wrote: each read
 * as its clgraph dtype with the bytes as stored, f8e4m3fn also as f32 (0x38
 * is 1, 0xFE -448), and written back under the same names. */
START_TEST(test_narrow_safetensors) {
    static const struct {
        const char *name;
        cg_dtype t;
    } want[] = {{"float8_e4m3fn", CG_F8E4M3FN},
                {"float8_e4m3fnuz", CG_F8E4M3FNUZ},
                {"float8_e5m2", CG_F8E5M2},
                {"float8_e5m2fnuz", CG_F8E5M2FNUZ},
                {"float8_e8m0fnu", CG_F8E8M0}};
    static const uint8_t codes[5] = {0, 0x38, 0x7E, 0x80, 0xFE};
    char path[512];
    snprintf(path, sizeof path, "%s/dtypes/float8.safetensors", CG_TEST_DATA_DIR);
    cg_weights *w;
    ck_assert_msg(cg_weights_open(path, &w) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_weights_count(w), 5);
    for (int i = 0; i < 5; i++) {
        cg_tensor *t;
        int k = 0;
        while (strcmp(want[k].name, cg_weights_name(w, i))) k++;
        ck_assert_int_eq(cg_weights_dtype(w, i), want[k].t);
        ck_assert_int_eq(cg_weights_get_as(w, want[k].name, want[k].t, &t), CG_OK);
        ck_assert_mem_eq(cg_tensor_data_const(t), codes, 5);
        cg_tensor_free(t);
    }
    cg_tensor *f, *g;
    ck_assert_int_eq(cg_weights_get_as(w, "float8_e4m3fn", CG_F32, &f), CG_OK);
    ck_assert(((const float *)cg_tensor_data_const(f))[1] == 1.0f);
    ck_assert(((const float *)cg_tensor_data_const(f))[4] == -448.0f);
    cg_tensor_free(f);
    ck_assert_int_eq(cg_weights_get_as(w, "float8_e5m2", CG_F8E5M2, &g), CG_OK);
    const char *names[1] = {"g"};
    const cg_tensor *ts[1] = {g};
    const char *out = tu_path("f8.safetensors");
    ck_assert_int_eq(cg_weights_save(out, 1, names, ts), CG_OK);
    cg_weights *r;
    ck_assert_int_eq(cg_weights_open(out, &r), CG_OK);
    ck_assert_int_eq(cg_weights_dtype(r, 0), CG_F8E5M2);
    cg_weights_free(r);
    cg_tensor_free(g);
    /* no safetensors dtype for the 4- and 2-bit types */
    int64_t one = 1;
    ck_assert_int_eq(cg_tensor_create(CG_I4, 1, &one, &g), CG_OK);
    ts[0] = g;
    ck_assert_int_eq(cg_weights_save(out, 1, names, ts), CG_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "is i4, which safetensors has no dtype for"));
    cg_tensor_free(g);
    cg_weights_free(w);
}
END_TEST

static void setup(void) { tu_setup_dir("narrow"); }

int main(void) {
    Suite *s = suite_create("narrow");
    TCase *tc = tcase_create("narrow");
    tcase_add_checked_fixture(tc, setup, tu_teardown_dir);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_narrow_from_f32);
    tcase_add_test(tc, test_narrow_to_f32);
    tcase_add_test(tc, test_narrow_pack);
    tcase_add_test(tc, test_narrow_ints);
    tcase_add_test(tc, test_narrow_convert);
    tcase_add_test(tc, test_narrow_safetensors);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
