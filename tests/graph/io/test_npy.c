/* Tensors (create, accessors, conversions) and .npy reading/writing: every
 * dtype and version, files numpy wrote (tests/data/dtypes, made by
 * tools/py/make_dtype_data.py) read and written back byte for byte, numpy's
 * exact header layout on save, round trips, and hostile files (status and
 * message text). */
#include "clgraph/clgraph.h"
#include "tensor.h"

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtype_cases.h"
#include "test_util.h"

#ifndef CG_TEST_DATA_DIR
#define CG_TEST_DATA_DIR "tests/data"
#endif

static const cg_dtype ALL_DTYPES[] = {CG_F32, CG_I32,  CG_F16, CG_BF16, CG_I8,  CG_U8,
                                      CG_I64, CG_BOOL, CG_I16, CG_U16,  CG_U32, CG_U64};
#define N_DTYPES (sizeof ALL_DTYPES / sizeof ALL_DTYPES[0])

/* ------------------------------------------------------------------ */
/* Fixture: a fresh temporary directory per test                       */

static void setup(void) { tu_setup_dir("npy"); }

/* A .npy file of format version major.0 with the given header dict,
 * padded like numpy (spaces, '\n', 64-byte alignment), then the data. */
static const char *write_npy(const char *name, int major, const char *dict, const void *data, size_t dlen) {
    size_t plen = major == 1 ? 10 : 12;
    size_t dl = strlen(dict);
    size_t hlen = dl + 1;
    hlen += (64 - (plen + hlen) % 64) % 64;
    unsigned char *buf = malloc(plen + hlen + dlen + 1);
    ck_assert_ptr_nonnull(buf);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t i = 0; i < plen - 8; i++) buf[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + plen, dict, dl);
    memset(buf + plen + dl, ' ', hlen - dl - 1);
    buf[plen + hlen - 1] = '\n';
    if (dlen) memcpy(buf + plen + hlen, data, dlen);
    const char *p = tu_write_file(name, buf, plen + hlen + dlen);
    free(buf);
    return p;
}

static unsigned char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void expect_load_fail_at(int line, const char *path, cg_status want, const char *substr) {
    cg_tensor *t = (cg_tensor *)&t;
    cg_status s = cg_tensor_load_npy(path, &t);
    const char *msg = cg_last_error();
    ck_assert_msg(s == want, "line %d: status %s, want %s (message: %s)", line, cg_status_name(s), cg_status_name(want),
                  msg);
    ck_assert_msg(t == NULL, "line %d: output not NULL on failure", line);
    ck_assert_msg(strncmp(msg, path, strlen(path)) == 0 && msg[strlen(path)] == ':',
                  "line %d: message does not start with the path: %s", line, msg);
    ck_assert_msg(strstr(msg, substr) != NULL, "line %d: message '%s' lacks '%s'", line, msg, substr);
    ck_assert_msg(strchr(msg, '\n') == NULL, "line %d: message has a newline: %s", line, msg);
}
#define expect_load_fail(path, want, substr) expect_load_fail_at(__LINE__, path, want, substr)

/* A v1 file with `dict` and `dlen` zero bytes of data that must fail. */
#define expect_npy_fail(dict, dlen, want, substr)                                    \
    do {                                                                             \
        static const unsigned char zeros_[256];                                      \
        expect_load_fail(write_npy("bad.npy", 1, dict, zeros_, dlen), want, substr); \
    } while (0)

static void put_le(unsigned char *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t dbits(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ------------------------------------------------------------------ */
/* Tensors                                                             */

START_TEST(test_tensor_create) {
    int64_t dims[2] = {2, 3};
    cg_tensor *t = NULL;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, dims, &t), CG_OK);
    ck_assert_int_eq(cg_tensor_dtype(t), CG_F32);
    ck_assert_int_eq(cg_tensor_ndim(t), 2);
    ck_assert_int_eq(cg_tensor_dim(t, 0), 2);
    ck_assert_int_eq(cg_tensor_dim(t, 1), 3);
    ck_assert_int_eq(cg_tensor_dim(t, 2), 0);
    ck_assert_int_eq(cg_tensor_dim(t, -1), 0);
    ck_assert_int_eq(cg_tensor_numel(t), 6);
    ck_assert_ptr_eq(cg_tensor_data(t), cg_tensor_data_const(t));
    ck_assert_uint_eq((uintptr_t)cg_tensor_data(t) % 64, 0);
    for (int i = 0; i < 6; i++) ck_assert_uint_eq(fbits(((float *)cg_tensor_data(t))[i]), 0);
    cg_tensor_free(t);

    ck_assert_int_eq(cg_tensor_create(CG_I32, 0, NULL, &t), CG_OK); /* scalar */
    ck_assert_int_eq(cg_tensor_ndim(t), 0);
    ck_assert_int_eq(cg_tensor_numel(t), 1);
    ck_assert_int_eq(*(int32_t *)cg_tensor_data(t), 0);
    cg_tensor_free(t);

    int64_t z[2] = {0, 5};
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, z, &t), CG_OK);
    ck_assert_int_eq(cg_tensor_numel(t), 0);
    ck_assert_ptr_nonnull(cg_tensor_data(t));
    cg_tensor_free(t);

    int64_t d8[8] = {1, 2, 1, 2, 1, 2, 1, 2};
    ck_assert_int_eq(cg_tensor_create(CG_I32, 8, d8, &t), CG_OK);
    ck_assert_int_eq(cg_tensor_numel(t), 16);
    cg_tensor_free(t);

    /* every dtype: zero-filled, the right number of bytes, 64-byte aligned */
    int64_t d3[2] = {3, 5};
    for (size_t k = 0; k < N_DTYPES; k++) {
        ck_assert_int_eq(cg_tensor_create(ALL_DTYPES[k], 2, d3, &t), CG_OK);
        ck_assert_int_eq(cg_tensor_dtype(t), ALL_DTYPES[k]);
        ck_assert_int_eq(cg_tensor_numel(t), 15);
        const unsigned char *b = cg_tensor_data_const(t);
        ck_assert_uint_eq((uintptr_t)b % 64, 0);
        for (size_t i = 0; i < 15 * cg_dtype_size(ALL_DTYPES[k]); i++) ck_assert_uint_eq(b[i], 0);
        cg_tensor_free(t);
    }

    cg_tensor_free(NULL);
    ck_assert_int_eq(cg_tensor_dtype(NULL), 0);
    ck_assert_int_eq(cg_tensor_ndim(NULL), 0);
    ck_assert_int_eq(cg_tensor_dim(NULL, 0), 0);
    ck_assert_int_eq(cg_tensor_numel(NULL), 0);
    ck_assert_ptr_null(cg_tensor_data(NULL));
    ck_assert_ptr_null(cg_tensor_data_const(NULL));
}
END_TEST

static void expect_create_fail(cg_dtype dt, int ndim, const int64_t *dims, const char *substr) {
    cg_tensor *t = (cg_tensor *)&t;
    ck_assert_int_eq(cg_tensor_create(dt, ndim, dims, &t), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(cg_last_error(), substr) != NULL, "message '%s' lacks '%s'", cg_last_error(), substr);
}

START_TEST(test_tensor_errors) {
    int64_t d9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    expect_create_fail(CG_F32, 9, d9, "9 dimensions out of range (0..8)");
    expect_create_fail(CG_F32, -1, d9, "-1 dimensions out of range");
    int64_t neg[3] = {2, -3, 4};
    expect_create_fail(CG_F32, 3, neg, "dimension 1 is negative (-3)");
    int64_t big[2] = {INT64_C(1) << 62, INT64_C(1) << 62};
    expect_create_fail(CG_F32, 2, big, "f32[4611686018427387904, 4611686018427387904] is too large");
    int64_t big2[1] = {INT64_C(1) << 61}; /* numel fits, bytes do not */
    expect_create_fail(CG_I32, 1, big2, "is too large");
    int64_t ok[1] = {1};
    expect_create_fail((cg_dtype)23, 1, ok, "invalid dtype 23");
    expect_create_fail((cg_dtype)0, 1, ok, "invalid dtype 0");
    int64_t big8[1] = {INT64_C(1) << 60}; /* i64: 2^63 bytes */
    expect_create_fail(CG_I64, 1, big8, "i64[1152921504606846976] is too large");
    expect_create_fail(CG_F32, 2, NULL, "NULL dims");
    ck_assert_int_eq(cg_tensor_create(CG_F32, 1, ok, NULL), CG_ERR_INVALID_ARGUMENT);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Conversions                                                         */

/* A 1-d tensor of `dt` holding n elements from the little-endian bit
 * patterns in bits. */
static cg_tensor *make_bits(cg_dtype dt, int n, const uint64_t *bits) {
    int64_t dim = n;
    cg_tensor *t;
    ck_assert_int_eq(cg_tensor_create(dt, 1, &dim, &t), CG_OK);
    size_t es = cg_dtype_size(dt);
    unsigned char *b = cg_tensor_data(t);
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < es; k++) b[(size_t)i * es + k] = (unsigned char)(bits[i] >> (8 * k));
    return t;
}

/* Element i of t as its bit pattern. */
static uint64_t bits_at(const cg_tensor *t, int64_t i) {
    size_t es = cg_dtype_size(cg_tensor_dtype(t));
    const unsigned char *b = cg_tensor_data_const(t);
    uint64_t v = 0;
    for (size_t k = 0; k < es; k++) v |= (uint64_t)b[(size_t)i * es + k] << (8 * k);
    return v;
}

/* Converts `in` (bit patterns of `from`) and compares with `want` (of `to`). */
static void expect_convert(cg_dtype from, cg_dtype to, int n, const uint64_t *in, const uint64_t *want) {
    cg_tensor *t = make_bits(from, n, in), *u = NULL;
    ck_assert_msg(cg_tensor_convert(t, to, &u) == CG_OK, "%s -> %s: %s", cg_dtype_name(from), cg_dtype_name(to),
                  cg_last_error());
    ck_assert_int_eq(cg_tensor_dtype(u), to);
    ck_assert_int_eq(cg_tensor_ndim(u), 1);
    ck_assert_int_eq(cg_tensor_dim(u, 0), n);
    for (int i = 0; i < n; i++)
        ck_assert_msg(bits_at(u, i) == want[i], "%s -> %s element %d: 0x%llx -> 0x%llx, want 0x%llx",
                      cg_dtype_name(from), cg_dtype_name(to), i, (unsigned long long)in[i],
                      (unsigned long long)bits_at(u, i), (unsigned long long)want[i]);
    cg_tensor_free(t);
    cg_tensor_free(u);
}

START_TEST(test_convert_floats) {
    /* f16 -> f32, exact (hand-computed f32 bit patterns) */
    const uint64_t h[] = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x03FF, 0x0400, 0x7C00, 0xFC00, 0x8000, 0x7E00, 0xFE01};
    const uint64_t hf[] = {0x3F800000, 0xC0000000, 0x477FE000, 0x33800000, 0x387FC000, 0x38800000,
                           0x7F800000, 0xFF800000, 0x80000000, 0x7FC00000, 0xFFC02000};
    expect_convert(CG_F16, CG_F32, 11, h, hf);
    /* bf16 -> f32: the high half */
    const uint64_t b[] = {0x3F80, 0xC040, 0x7F80, 0x0001, 0xFFC1};
    const uint64_t bf[] = {0x3F800000, 0xC0400000, 0x7F800000, 0x00010000, 0xFFC10000};
    expect_convert(CG_BF16, CG_F32, 5, b, bf);
    /* f32 -> f16: nearest, ties to even; overflow to inf; NaN stays NaN */
    const uint64_t f[] = {0x3F801000, 0x3F803000, 0x3F801001, 0x477FF000, 0x477FEFFF, 0x7F800000,
                          0xFF800000, 0x7FC00000, 0x7F800001, 0x33000000, 0x33C00000, 0x387FE000};
    const uint64_t fh[] = {0x3C00, 0x3C02, 0x3C01, 0x7C00, 0x7BFF, 0x7C00,
                           0xFC00, 0x7E00, 0x7C01, 0x0000, 0x0002, 0x0400};
    expect_convert(CG_F32, CG_F16, 12, f, fh);
    /* f32 -> bf16: nearest, ties to even; NaN -> the quiet NaN of its sign */
    const uint64_t g[] = {0x3F808000, 0x3F818000, 0x3F808001, 0x7F7FFFFF, 0x7F800000,
                          0xFF800000, 0xFFC00001, 0x7F800001, 0x00018000};
    const uint64_t gb[] = {0x3F80, 0x3F82, 0x3F81, 0x7F80, 0x7F80, 0xFF80, 0xFFC0, 0x7FC0, 0x0002};
    expect_convert(CG_F32, CG_BF16, 9, g, gb);
    /* the same dtype: a copy, every dtype */
    const uint64_t same[] = {0, 1, 1, 0};
    for (size_t k = 0; k < N_DTYPES; k++) expect_convert(ALL_DTYPES[k], ALL_DTYPES[k], 4, same, same);
}
END_TEST

static int64_t int_lo(cg_dtype t) {
    return t == CG_I64 ? INT64_MIN : t == CG_I32 ? INT32_MIN : t == CG_I16 ? INT16_MIN : t == CG_I8 ? INT8_MIN : 0;
}
/* u64's top half is tested on its own (test_convert_u64_top) */
static int64_t int_hi(cg_dtype t) {
    switch (t) {
    case CG_I64:
    case CG_U64: return INT64_MAX;
    case CG_I32: return INT32_MAX;
    case CG_U32: return UINT32_MAX;
    case CG_I16: return INT16_MAX;
    case CG_U16: return UINT16_MAX;
    case CG_I8: return INT8_MAX;
    case CG_U8: return UINT8_MAX;
    default: return 1;
    }
}

/* Every pair of integer dtypes: the values both hold convert; the first
 * value past the target's range fails, named by index and value. */
START_TEST(test_convert_integers) {
    static const cg_dtype ints[] = {CG_I64, CG_I32, CG_I8, CG_U8, CG_BOOL, CG_I16, CG_U16, CG_U32, CG_U64};
    const size_t n = sizeof ints / sizeof ints[0];
    for (size_t a = 0; a < n; a++)
        for (size_t b = 0; b < n; b++) {
            cg_dtype from = ints[a], to = ints[b];
            ck_assert_int_eq(cg_dtype_convert_exact(from, to), 1);
            int64_t lo = int_lo(from) > int_lo(to) ? int_lo(from) : int_lo(to);
            int64_t hi = int_hi(from) < int_hi(to) ? int_hi(from) : int_hi(to);
            uint64_t in[4] = {(uint64_t)lo, (uint64_t)hi, 0, 1}, want[4];
            size_t ts = cg_dtype_size(to);
            for (int i = 0; i < 4; i++) /* the same value, in the target's width */
                want[i] = ts == 8 ? in[i] : in[i] & ((UINT64_C(1) << (8 * ts)) - 1);
            expect_convert(from, to, 4, in, want);
            /* past the range: above it, else below it, when `from` holds such a value */
            int64_t past;
            if (int_hi(from) > int_hi(to)) past = int_hi(to) + 1;
            else if (int_lo(from) < int_lo(to)) past = int_lo(to) - 1;
            else continue;
            uint64_t bad[4] = {0, 1, 0, (uint64_t)past};
            cg_tensor *t = make_bits(from, 4, bad), *u = (cg_tensor *)&u;
            ck_assert_int_eq(cg_tensor_convert(t, to, &u), CG_ERR_UNSUPPORTED);
            ck_assert_ptr_null(u);
            char want_msg[256];
            snprintf(want_msg, sizeof want_msg,
                     "cannot convert tensor %s[4] to %s: element 3 has value %lld, which does not "
                     "fit in %s",
                     cg_dtype_name(from), cg_dtype_name(to), (long long)past, cg_dtype_name(to));
            ck_assert_str_eq(cg_last_error(), want_msg);
            cg_tensor_free(t);
        }
}
END_TEST

/* A u64 past INT64_MAX fits no other integer type; the message has its
 * unsigned value. */
START_TEST(test_convert_u64_top) {
    const uint64_t in[3] = {1, UINT64_C(1) << 63, UINT64_MAX}, want[3] = {1, UINT64_C(1) << 63, UINT64_MAX};
    expect_convert(CG_U64, CG_U64, 3, in, want);
    static const cg_dtype to[] = {CG_I64, CG_U32, CG_I8, CG_BOOL};
    for (size_t i = 0; i < sizeof to / sizeof to[0]; i++) {
        cg_tensor *t = make_bits(CG_U64, 3, in), *u = (cg_tensor *)&u;
        ck_assert_int_eq(cg_tensor_convert(t, to[i], &u), CG_ERR_UNSUPPORTED);
        ck_assert_ptr_null(u);
        char want_msg[256];
        snprintf(
            want_msg, sizeof want_msg,
            "cannot convert tensor u64[3] to %s: element 1 has value 9223372036854775808, which does not fit in %s",
            cg_dtype_name(to[i]), cg_dtype_name(to[i]));
        ck_assert_str_eq(cg_last_error(), want_msg);
        cg_tensor_free(t);
    }
}
END_TEST

START_TEST(test_convert_unsupported) {
    /* what converts, and whether exactly */
    for (size_t a = 0; a < N_DTYPES; a++)
        for (size_t b = 0; b < N_DTYPES; b++) {
            cg_dtype from = ALL_DTYPES[a], to = ALL_DTYPES[b];
            int is_int_from = from != CG_F32 && from != CG_F16 && from != CG_BF16;
            int is_int_to = to != CG_F32 && to != CG_F16 && to != CG_BF16;
            int exact =
                from == to || (is_int_from && is_int_to) || (to == CG_F32 && (from == CG_F16 || from == CG_BF16));
            int rounds = from == CG_F32 && (to == CG_F16 || to == CG_BF16);
            ck_assert_int_eq(cg_dtype_convert_exact(from, to), exact);
            if (exact || rounds) continue;
            const uint64_t zero[1] = {0};
            cg_tensor *t = make_bits(from, 1, zero), *u = (cg_tensor *)&u;
            ck_assert_int_eq(cg_tensor_convert(t, to, &u), CG_ERR_UNSUPPORTED);
            ck_assert_ptr_null(u);
            char want[64];
            snprintf(want, sizeof want, "cannot convert tensor %s[1] to %s (", cg_dtype_name(from), cg_dtype_name(to));
            ck_assert_msg(strncmp(cg_last_error(), want, strlen(want)) == 0, "%s", cg_last_error());
            cg_tensor_free(t);
        }
    ck_assert_int_eq(cg_dtype_convert_exact(CG_F32, (cg_dtype)0), 0);
    ck_assert_int_eq(cg_dtype_convert_exact((cg_dtype)23, (cg_dtype)23), 0);
    cg_tensor *t, *u;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 0, NULL, &t), CG_OK);
    ck_assert_int_eq(cg_tensor_convert(t, (cg_dtype)23, &u), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(u);
    ck_assert_int_eq(cg_tensor_convert(NULL, CG_F32, &u), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_tensor_convert(t, CG_F32, NULL), CG_ERR_INVALID_ARGUMENT);
    /* empty and 0-d tensors */
    ck_assert_int_eq(cg_tensor_convert(t, CG_F16, &u), CG_OK);
    ck_assert_int_eq(cg_tensor_ndim(u), 0);
    ck_assert_int_eq(cg_tensor_numel(u), 1);
    cg_tensor_free(u);
    cg_tensor_free(t);
    int64_t z[2] = {0, 3};
    ck_assert_int_eq(cg_tensor_create(CG_I64, 2, z, &t), CG_OK);
    ck_assert_int_eq(cg_tensor_convert(t, CG_BOOL, &u), CG_OK);
    ck_assert_int_eq(cg_tensor_numel(u), 0);
    ck_assert_int_eq(cg_tensor_dim(u, 1), 3);
    cg_tensor_free(u);
    cg_tensor_free(t);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Loading valid files                                                 */

START_TEST(test_load_f4_v1) {
    unsigned char d[24];
    const float v[6] = {1.0f, -2.5f, 0.1f, 1e-45f, -0.0f, 3.4028235e38f};
    for (int i = 0; i < 6; i++) put_le(d + 4 * i, fbits(v[i]), 4);
    const char *p = write_npy("f4.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", d, 24);
    cg_tensor *t;
    ck_assert_msg(cg_tensor_load_npy(p, &t) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_tensor_dtype(t), CG_F32);
    ck_assert_int_eq(cg_tensor_ndim(t), 2);
    ck_assert_int_eq(cg_tensor_dim(t, 0), 2);
    ck_assert_int_eq(cg_tensor_dim(t, 1), 3);
    for (int i = 0; i < 6; i++) ck_assert_uint_eq(fbits(((const float *)cg_tensor_data_const(t))[i]), fbits(v[i]));
    cg_tensor_free(t);
}
END_TEST

START_TEST(test_load_f8_v2) {
    const double v[6] = {0.1, 1e300, -0.0, 1e-310, -2.5, -1e39};
    unsigned char d[48];
    for (int i = 0; i < 6; i++) put_le(d + 8 * i, dbits(v[i]), 8);
    const char *p = write_npy("f8.npy", 2, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", d, 48);
    cg_tensor *t;
    ck_assert_msg(cg_tensor_load_npy(p, &t) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_tensor_dtype(t), CG_F32);
    ck_assert_int_eq(cg_tensor_ndim(t), 1);
    const float *f = cg_tensor_data_const(t);
    ck_assert(f[0] == 0.1f); /* rounded to nearest */
    ck_assert(isinf(f[1]) && f[1] > 0);
    ck_assert(f[2] == 0.0f && signbit(f[2]));
    ck_assert(f[3] == 0.0f);
    ck_assert(f[4] == -2.5f);
    ck_assert(isinf(f[5]) && f[5] < 0);
    cg_tensor_free(t);
}
END_TEST

START_TEST(test_load_f8_chunks) {
    enum { N = 20000 };
    unsigned char *d = malloc((size_t)N * 8);
    ck_assert_ptr_nonnull(d);
    for (int i = 0; i < N; i++) put_le(d + 8 * (size_t)i, dbits(i * 0.5), 8);
    const char *p =
        write_npy("big.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (100, 200), }", d, (size_t)N * 8);
    cg_tensor *t;
    ck_assert_int_eq(cg_tensor_load_npy(p, &t), CG_OK);
    const float *f = cg_tensor_data_const(t);
    for (int i = 0; i < N; i++) ck_assert(f[i] == (float)(i * 0.5));
    cg_tensor_free(t);
    /* a bad bool late in a large file: the index is exact */
    memset(d, 1, N);
    d[9000] = 2;
    p = write_npy("bigb.npy", 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (20000,), }", d, N);
    expect_load_fail(p, CG_ERR_FORMAT, "element 9000 of the bool array is 2, not 0 (False) or 1 (True)");
    free(d);
}
END_TEST

START_TEST(test_load_i4_v3_scalar) {
    unsigned char d[4];
    put_le(d, (uint32_t)-17, 4);
    /* double quotes, no spaces, no trailing comma, keys in another order */
    const char *p = write_npy("i4.npy", 3, "{\"shape\":(),\"descr\":\"<i4\",\"fortran_order\":False}", d, 4);
    cg_tensor *t;
    ck_assert_msg(cg_tensor_load_npy(p, &t) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_tensor_dtype(t), CG_I32);
    ck_assert_int_eq(cg_tensor_ndim(t), 0);
    ck_assert_int_eq(cg_tensor_numel(t), 1);
    ck_assert_int_eq(*(const int32_t *)cg_tensor_data_const(t), -17);
    cg_tensor_free(t);
}
END_TEST

/* int64 loads as i64, whole (it used to be narrowed to i32). */
START_TEST(test_load_i8) {
    const int64_t v[4] = {0, -1, INT64_MAX, INT64_MIN};
    unsigned char d[32];
    for (int i = 0; i < 4; i++) put_le(d + 8 * i, (uint64_t)v[i], 8);
    const char *p = write_npy("i8.npy", 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 2), }", d, 32);
    cg_tensor *t;
    ck_assert_int_eq(cg_tensor_load_npy(p, &t), CG_OK);
    ck_assert_int_eq(cg_tensor_dtype(t), CG_I64);
    for (int i = 0; i < 4; i++) ck_assert(((const int64_t *)cg_tensor_data_const(t))[i] == v[i]);
    cg_tensor_free(t);
}
END_TEST

/* Each new descr from hand-built bytes, one-byte types with any of the
 * byte-order characters numpy accepts for them. */
START_TEST(test_load_small_types) {
    static const struct {
        const char *descr;
        cg_dtype dtype;
        unsigned char bytes[4];
    } c[] = {
        {"<f2", CG_F16, {0x00, 0x3c, 0x00, 0xc0}},  /* 1.0, -2.0 */
        {"<V2", CG_BF16, {0x80, 0x3f, 0x40, 0xc0}}, /* 1.0, -3.0 (ml_dtypes' bfloat16) */
        {"|i1", CG_I8, {0x80, 0x7f}},
        {"<i1", CG_I8, {0xff, 0x01}},
        {">i1", CG_I8, {0x00, 0x02}},
        {"|u1", CG_U8, {0xff, 0x00}},
        {"<u1", CG_U8, {0x80, 0x01}},
        {"<i2", CG_I16, {0x00, 0x80, 0xff, 0x7f}}, /* -32768, 32767 */
        {"<u2", CG_U16, {0xff, 0xff, 0x01, 0x00}}, /* 65535, 1 */
        {"|b1", CG_BOOL, {0x01, 0x00}},
        {">b1", CG_BOOL, {0x00, 0x01}},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char dict[128];
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (2,), }", c[i].descr);
        size_t n = 2 * cg_dtype_size(c[i].dtype);
        const char *p = write_npy("s.npy", 1, dict, c[i].bytes, n);
        cg_tensor *t;
        ck_assert_msg(cg_tensor_load_npy(p, &t) == CG_OK, "%s: %s", c[i].descr, cg_last_error());
        ck_assert_int_eq(cg_tensor_dtype(t), c[i].dtype);
        ck_assert_int_eq(cg_tensor_numel(t), 2);
        ck_assert_int_eq(memcmp(cg_tensor_data_const(t), c[i].bytes, n), 0);
        cg_tensor_free(t);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Files numpy wrote (tests/data/dtypes, tools/py/make_dtype_data.py)  */

/* Checks t against a case, element by element. */
static void expect_case(const cg_tensor *t, const dtype_case *c) {
    ck_assert_int_eq(cg_tensor_dtype(t), c->dtype);
    ck_assert_int_eq(cg_tensor_ndim(t), c->ndim);
    for (int i = 0; i < c->ndim; i++) ck_assert_int_eq(cg_tensor_dim(t, i), c->dims[i]);
    for (int64_t i = 0; i < cg_tensor_numel(t); i++) {
        uint64_t v = bits_at(t, i);
        ck_assert_msg(v == c->bits[i], "%s element %lld: 0x%llx, want 0x%llx", c->name, (long long)i,
                      (unsigned long long)v, (unsigned long long)c->bits[i]);
    }
}

START_TEST(test_numpy_files) {
    for (size_t k = 0; k < N_DTYPE_CASES; k++) {
        const dtype_case *c = &DTYPE_CASES[k];
        char src[512];
        snprintf(src, sizeof src, "%s/dtypes/%s.npy", CG_TEST_DATA_DIR, c->name);
        cg_tensor *t;
        ck_assert_msg(cg_tensor_load_npy(src, &t) == CG_OK, "%s", cg_last_error());
        expect_case(t, c);
        /* written back: byte for byte the file numpy wrote */
        const char *p = tu_path("back.npy");
        ck_assert_msg(cg_tensor_save_npy(t, p) == CG_OK, "%s", cg_last_error());
        cg_tensor_free(t);
        size_t n1, n2;
        unsigned char *a = read_all(src, &n1), *b = read_all(p, &n2);
        ck_assert_msg(n1 == n2 && memcmp(a, b, n1) == 0, "%s: written bytes differ from numpy's", c->name);
        free(a);
        free(b);
    }
    /* float64 is rounded to f32 */
    cg_tensor *t;
    ck_assert_msg(cg_tensor_load_npy(CG_TEST_DATA_DIR "/dtypes/f64.npy", &t) == CG_OK, "%s", cg_last_error());
    const dtype_case f64 = {"f64", CG_F32, 1, {3}, {0x3DCCCCCD, 0x7F800000, 0xC0200000}};
    expect_case(t, &f64);
    cg_tensor_free(t);
}
END_TEST

START_TEST(test_load_shapes) {
    cg_tensor *t;
    /* zero-size arrays */
    const char *p = write_npy("z.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }", NULL, 0);
    ck_assert_int_eq(cg_tensor_load_npy(p, &t), CG_OK);
    ck_assert_int_eq(cg_tensor_numel(t), 0);
    ck_assert_int_eq(cg_tensor_dim(t, 1), 4);
    cg_tensor_free(t);
    /* Python 2 long literals, as old numpy wrote them; trailing comma in the tuple */
    unsigned char d[24] = {0};
    p = write_npy("l.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3L, 2L,), }", d, 24);
    ck_assert_msg(cg_tensor_load_npy(p, &t) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_tensor_dim(t, 0), 3);
    ck_assert_int_eq(cg_tensor_dim(t, 1), 2);
    cg_tensor_free(t);
    /* 8 dimensions */
    p = write_npy("d8.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 2, 3), }", d, 24);
    ck_assert_int_eq(cg_tensor_load_npy(p, &t), CG_OK);
    ck_assert_int_eq(cg_tensor_ndim(t), 8);
    cg_tensor_free(t);
    /* header without the trailing newline and padding */
    unsigned char raw[80];
    const char *dict = "{'descr':'<i4','fortran_order':False,'shape':(1,)}";
    size_t dl = strlen(dict);
    memcpy(raw, "\x93NUMPY\x01\x00", 8);
    put_le(raw + 8, dl, 2);
    memcpy(raw + 10, dict, dl);
    put_le(raw + 10 + dl, 5, 4);
    p = tu_write_file("nopad.npy", raw, 10 + dl + 4);
    ck_assert_msg(cg_tensor_load_npy(p, &t) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(*(const int32_t *)cg_tensor_data_const(t), 5);
    cg_tensor_free(t);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Saving                                                              */

START_TEST(test_save_numpy_layout) {
    int64_t dims[1] = {3};
    cg_tensor *t;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 1, dims, &t), CG_OK);
    float *f = cg_tensor_data(t);
    f[0] = 1.0f, f[1] = -2.0f, f[2] = 0.5f;
    const char *p = tu_path("s.npy");
    ck_assert_int_eq(cg_tensor_save_npy(t, p), CG_OK);
    cg_tensor_free(t);
    size_t n;
    unsigned char *b = read_all(p, &n);
    /* exactly what numpy.save writes for np.array([1, -2, .5], np.float32) */
    char want[129];
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
    memcpy(want, "\x93NUMPY\x01\x00\x76\x00", 10);
    memset(want + 10, ' ', 118);
    memcpy(want + 10, dict, strlen(dict));
    want[127] = '\n';
    ck_assert_uint_eq(n, 128 + 12);
    ck_assert_int_eq(memcmp(b, want, 128), 0);
    ck_assert_uint_eq(b[128 + 4 + 3], 0xc0); /* -2.0f = 0xC0000000, little-endian */
    free(b);

    /* 0-d: "()" and no growth padding; 2-d: "(2, 3)"; always 64-aligned */
    ck_assert_int_eq(cg_tensor_create(CG_I32, 0, NULL, &t), CG_OK);
    *(int32_t *)cg_tensor_data(t) = 77;
    p = tu_path("s0.npy");
    ck_assert_int_eq(cg_tensor_save_npy(t, p), CG_OK);
    cg_tensor_free(t);
    b = read_all(p, &n);
    ck_assert_uint_eq(n, 128 + 4);
    ck_assert_int_eq(memcmp(b + 10, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }  ", 57), 0);
    ck_assert_uint_eq(b[127], '\n');
    free(b);

    int64_t d2[2] = {2, 3};
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, d2, &t), CG_OK);
    p = tu_path("s2.npy");
    ck_assert_int_eq(cg_tensor_save_npy(t, p), CG_OK);
    cg_tensor_free(t);
    b = read_all(p, &n);
    ck_assert_ptr_nonnull(strstr((const char *)b + 10, "'shape': (2, 3), }"));
    size_t hl = (size_t)b[8] | (size_t)b[9] << 8;
    ck_assert_uint_eq((10 + hl) % 64, 0);
    ck_assert_uint_eq(b[10 + hl - 1], '\n');
    ck_assert_uint_eq(n, 10 + hl + 24);
    free(b);
}
END_TEST

static void roundtrip(cg_dtype dt, int ndim, const int64_t *dims) {
    cg_tensor *t, *u;
    ck_assert_int_eq(cg_tensor_create(dt, ndim, dims, &t), CG_OK);
    int64_t n = cg_tensor_numel(t);
    size_t es = cg_dtype_size(dt);
    unsigned char *b = cg_tensor_data(t);
    /* every byte pattern but for bools, which are 0 or 1 */
    for (size_t i = 0; i < (size_t)n * es; i++)
        b[i] = dt == CG_BOOL ? (unsigned char)(i % 3 == 1) : (unsigned char)(i * 151 + 7);
    const char *p = tu_path("rt.npy");
    ck_assert_int_eq(cg_tensor_save_npy(t, p), CG_OK);
    ck_assert_msg(cg_tensor_load_npy(p, &u) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_tensor_dtype(u), dt);
    ck_assert_int_eq(cg_tensor_ndim(u), ndim);
    for (int i = 0; i < ndim; i++) ck_assert_int_eq(cg_tensor_dim(u, i), dims[i]);
    ck_assert_int_eq(cg_tensor_numel(u), n);
    if (n) ck_assert_int_eq(memcmp(cg_tensor_data(t), cg_tensor_data(u), (size_t)n * es), 0);
    cg_tensor_free(t);
    cg_tensor_free(u);
}

START_TEST(test_roundtrip) {
    int64_t a[2] = {2, 3}, b[1] = {1000}, c[2] = {0, 3}, d[8] = {1, 2, 1, 1, 1, 1, 1, 2}, e[1] = {124};
    for (size_t k = 0; k < N_DTYPES; k++) {
        cg_dtype dt = ALL_DTYPES[k];
        roundtrip(dt, 2, a);
        roundtrip(dt, 1, b);
        roundtrip(dt, 0, NULL);
        roundtrip(dt, 2, c);
        roundtrip(dt, 8, d);
        roundtrip(dt, 1, e);
    }
}
END_TEST

START_TEST(test_save_errors) {
    int64_t dims[1] = {2};
    cg_tensor *t;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 1, dims, &t), CG_OK);
    const char *p = tu_path("no/such/dir.npy");
    ck_assert_int_eq(cg_tensor_save_npy(t, p), CG_ERR_IO);
    ck_assert_int_eq(strncmp(cg_last_error(), p, strlen(p)), 0);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "cannot open for writing"));
    ck_assert_int_eq(cg_tensor_save_npy(NULL, p), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_tensor_save_npy(t, NULL), CG_ERR_INVALID_ARGUMENT);
    cg_tensor_free(t);
    ck_assert_int_eq(cg_tensor_load_npy(p, NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_tensor_load_npy(NULL, &t), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(t);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Hostile files                                                       */

START_TEST(test_bad_prefix) {
    expect_load_fail(tu_path("missing.npy"), CG_ERR_IO, "cannot open: No such file");
    expect_load_fail(tu_dir, CG_ERR_IO, "not a regular file");
    expect_load_fail(tu_write_file("e.npy", "", 0), CG_ERR_FORMAT, "file is too short (0 bytes) to be a .npy file");
    expect_load_fail(tu_write_file("s.npy", "\x93NUMP", 5), CG_ERR_FORMAT, "file is too short (5 bytes)");
    expect_load_fail(tu_write_file("m.npy", "PK\x03\x04\0\0\0\0\0\0\0\0", 12), CG_ERR_FORMAT,
                     "not a .npy file (bad magic bytes)");
    expect_load_fail(tu_write_file("v4.npy", "\x93NUMPY\x04\x00\x00\x00", 10), CG_ERR_UNSUPPORTED,
                     "unsupported .npy format version 4.0 (expected 1.0, 2.0 or 3.0)");
    expect_load_fail(tu_write_file("v11.npy", "\x93NUMPY\x01\x01\x00\x00", 10), CG_ERR_UNSUPPORTED, "version 1.1");
    expect_load_fail(tu_write_file("v0.npy", "\x93NUMPY\x00\x00\x00\x00", 10), CG_ERR_UNSUPPORTED, "version 0.0");
    expect_load_fail(tu_write_file("v2s.npy", "\x93NUMPY\x02\x00\x00\x00", 11), CG_ERR_FORMAT,
                     "file is too short (11 bytes) for a version 2.0 header");
    expect_load_fail(tu_write_file("hl.npy", "\x93NUMPY\x01\x00\xc8\x00{}", 12), CG_ERR_FORMAT,
                     "header length 200 is larger than the rest of the file (2 bytes)");
    expect_load_fail(tu_write_file("hl2.npy", "\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14), CG_ERR_FORMAT,
                     "header length 4294967295 is larger than the rest of the file (2 bytes)");
    expect_load_fail(tu_write_file("hl3.npy", "\x93NUMPY\x03\x00\x00\x00\x10\x00{}", 14), CG_ERR_FORMAT,
                     "header length 1048576 is larger than the rest of the file");
    expect_load_fail(tu_write_file("h0.npy", "\x93NUMPY\x01\x00\x00\x00", 10), CG_ERR_FORMAT,
                     "malformed .npy header: expected '{' at the start of the header (at header "
                     "byte 0)");
}
END_TEST

START_TEST(test_bad_dict) {
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, }", 0, CG_ERR_FORMAT,
                    "malformed .npy header: missing key 'shape'");
    expect_npy_fail("{'fortran_order': False, 'shape': (1,), }", 4, CG_ERR_FORMAT, "missing key 'descr'");
    expect_npy_fail("{'descr': '<f4', 'shape': (1,), }", 4, CG_ERR_FORMAT, "missing key 'fortran_order'");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 4, CG_ERR_FORMAT,
                    "unknown key 'x' (at header byte 56)");
    expect_npy_fail("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4, CG_ERR_FORMAT,
                    "duplicate key 'descr'");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", 4, CG_ERR_FORMAT,
                    "expected ',' or '}' after a value");
    expect_npy_fail("{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", 4, CG_ERR_FORMAT,
                    "expected ',' or '}' after a value");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", 4, CG_ERR_FORMAT,
                    "unexpected text after the header dictionary");
    expect_npy_fail("{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}", 4, CG_ERR_FORMAT,
                    "expected ',' or '}' after a value (at header byte 17)");
    expect_npy_fail("{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}", 4, CG_ERR_FORMAT,
                    "expected ':' after a key");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'descr: 1}", 4, CG_ERR_FORMAT,
                    "unterminated string");
    expect_npy_fail("{descr: '<f4', 'fortran_order': False, 'shape': (1,)}", 4, CG_ERR_FORMAT,
                    "expected a quoted string");
    expect_npy_fail("{'descr': '<\\x66\\x34', 'fortran_order': False, 'shape': (1,)}", 4, CG_ERR_FORMAT,
                    "escape sequences are not supported");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", 4, CG_ERR_FORMAT,
                    "'fortran_order' must be True or False");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': Falsey, 'shape': (1,)}", 4, CG_ERR_FORMAT,
                    "'fortran_order' must be True or False");
    expect_npy_fail("[('descr', '<f4')]", 4, CG_ERR_FORMAT, "expected '{' at the start");
    /* shapes */
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", 12, CG_ERR_FORMAT,
                    "'shape' is not a tuple (a 1-d shape is written (n,))");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': [3]}", 12, CG_ERR_FORMAT,
                    "'shape' must be a tuple such as (2, 3)");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': 3}", 12, CG_ERR_FORMAT,
                    "'shape' must be a tuple");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", 0, CG_ERR_FORMAT,
                    "negative dimension in 'shape'");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}", 0, CG_ERR_FORMAT,
                    "expected ',' or ')' in 'shape'");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (03,)}", 12, CG_ERR_FORMAT, "leading zero");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (1,,)}", 4, CG_ERR_FORMAT,
                    "expected an integer in 'shape'");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (None,)}", 4, CG_ERR_FORMAT,
                    "expected an integer in 'shape'");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 0, CG_ERR_FORMAT,
                    "dimension in 'shape' is too large");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, "
                    "1)}",
                    4, CG_ERR_UNSUPPORTED, "'shape' has more than 8 dimensions");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, "
                    "4294967296)}",
                    0, CG_ERR_FORMAT, "shape (4294967296, 4294967296, 4294967296) has too many elements");
    expect_npy_fail("{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,)}", 0, CG_ERR_FORMAT,
                    "shape (2305843009213693952,) has too many elements");
    /* a huge shape with little data is refused before anything is allocated */
    expect_npy_fail("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1000)}", 16, CG_ERR_FORMAT,
                    "needs 8000000000000 bytes, but only 16 are present");
}
END_TEST

START_TEST(test_bad_dtype_and_data) {
    const char *p =
        write_npy("in.npy", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", "\0\0\0\0\0\0\0\0", 8);
    cg_tensor *t;
    ck_assert_int_eq(cg_tensor_load_npy(p, &t), CG_ERR_UNSUPPORTED);
    char want[700];
    snprintf(want, sizeof want,
             "%s: unsupported dtype '<c8' (expected '<f4' float32, '<f8' float64, '<f2' float16, "
             "'<V2' bfloat16 (ml_dtypes), '<i8' int64, '<i4' int32, '<i2' int16, '|i1' int8, '<u8' uint64, "
             "'<u4' uint32, '<u2' uint16, '|u1' uint8, '|b1' bool or '<f1' float8_e5m2 (ml_dtypes))",
             p);
    ck_assert_str_eq(cg_last_error(), want);
    /* ml_dtypes' other one-byte types are all '<V1': which one is unknown */
    expect_npy_fail("{'descr': '<V1', 'fortran_order': False, 'shape': (2,)}", 2, CG_ERR_UNSUPPORTED,
                    "a one-byte type numpy does not name");

    /* a plain opaque type is no bfloat16; other sizes and byte orders */
    expect_npy_fail("{'descr': '|V2', 'fortran_order': False, 'shape': (2,)}", 4, CG_ERR_UNSUPPORTED,
                    "unsupported dtype '|V2'");
    expect_npy_fail("{'descr': '<V4', 'fortran_order': False, 'shape': (1,)}", 4, CG_ERR_UNSUPPORTED,
                    "unsupported dtype '<V4'");
    expect_npy_fail("{'descr': '>V2', 'fortran_order': False, 'shape': (2,)}", 4, CG_ERR_UNSUPPORTED,
                    "big-endian data ('>V2') is not supported");
    expect_npy_fail("{'descr': '>f2', 'fortran_order': False, 'shape': (2,)}", 4, CG_ERR_UNSUPPORTED,
                    "big-endian data ('>f2') is not supported");
    expect_npy_fail("{'descr': '|f2', 'fortran_order': False, 'shape': (2,)}", 4, CG_ERR_UNSUPPORTED,
                    "unsupported dtype '|f2'");
    expect_npy_fail("{'descr': '=i1', 'fortran_order': False, 'shape': (4,)}", 4, CG_ERR_UNSUPPORTED,
                    "unsupported dtype '=i1'");
    expect_npy_fail("{'descr': '<c8', 'fortran_order': False, 'shape': (2,)}", 16, CG_ERR_UNSUPPORTED,
                    "unsupported dtype '<c8'");
    expect_npy_fail("{'descr': '>u2', 'fortran_order': False, 'shape': (2,)}", 4, CG_ERR_UNSUPPORTED,
                    "big-endian data ('>u2') is not supported");
    {
        const unsigned char bools[4] = {0, 1, 255, 0};
        expect_load_fail(write_npy("b.npy", 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (4,)}", bools, 4),
                         CG_ERR_FORMAT, "element 2 of the bool array is 255, not 0 (False) or 1 (True)");
    }
    expect_npy_fail("{'descr': '<u1x', 'fortran_order': False, 'shape': (1,)}", 4, CG_ERR_UNSUPPORTED,
                    "unsupported dtype '<u1x'");
    expect_npy_fail("{'descr': '=f4', 'fortran_order': False, 'shape': (1,)}", 4, CG_ERR_UNSUPPORTED,
                    "unsupported dtype '=f4'");
    expect_npy_fail("{'descr': '', 'fortran_order': False, 'shape': (1,)}", 4, CG_ERR_UNSUPPORTED,
                    "unsupported dtype ''");
    expect_npy_fail("{'descr': '\x1b[2J<f4', 'fortran_order': False, 'shape': (1,)}", 4, CG_ERR_UNSUPPORTED,
                    "unsupported dtype '\\x1b[2J<f4'");
    expect_npy_fail("{'descr': '>f4', 'fortran_order': False, 'shape': (1,)}", 4, CG_ERR_UNSUPPORTED,
                    "big-endian data ('>f4') is not supported");
    expect_npy_fail("{'descr': '>i8', 'fortran_order': False, 'shape': (1,)}", 8, CG_ERR_UNSUPPORTED,
                    "big-endian data ('>i8')");
    expect_npy_fail("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", 4, CG_ERR_UNSUPPORTED,
                    "structured dtypes are not supported");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2)}", 16, CG_ERR_UNSUPPORTED,
                    "Fortran-order (column-major) data is not supported");
    /* data size must match the shape exactly */
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4)}", 40, CG_ERR_FORMAT,
                    "data is truncated: shape (3, 4) of '<f4' needs 48 bytes, but only 40 are "
                    "present");
    expect_npy_fail("{'descr': '<f8', 'fortran_order': False, 'shape': ()}", 0, CG_ERR_FORMAT,
                    "shape () of '<f8' needs 8 bytes, but only 0 are present");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4)}", 56, CG_ERR_FORMAT,
                    "8 bytes of unexpected data after the 48 bytes of shape (3, 4) of '<f4'");
    expect_npy_fail("{'descr': '<i4', 'fortran_order': False, 'shape': (0,)}", 1, CG_ERR_FORMAT,
                    "1 bytes of unexpected data");
}
END_TEST

/* Changing or cutting any byte of a valid file never crashes. */
START_TEST(test_mutations) {
    int64_t dims[2] = {3, 5};
    cg_tensor *t;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, dims, &t), CG_OK);
    const char *src = tu_path("src.npy");
    ck_assert_int_eq(cg_tensor_save_npy(t, src), CG_OK);
    cg_tensor_free(t);
    size_t n;
    unsigned char *b = read_all(src, &n);
    unsigned char *m = malloc(n);
    ck_assert_ptr_nonnull(m);
    const unsigned char vals[] = {0x00, 0xff, '\'', '(', ')', '{', '}', ',', ':', '9', '-', 'L', ' '};
    for (size_t i = 0; i < 128; i++) {
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(m, b, n);
            m[i] = vals[v];
            const char *p = tu_write_file("mut.npy", m, n);
            cg_status s = cg_tensor_load_npy(p, &t);
            if (s == CG_OK) cg_tensor_free(t);
            else ck_assert_int_eq(strncmp(cg_last_error(), p, strlen(p)), 0);
        }
    }
    for (size_t cut = 0; cut < n; cut++) {
        const char *p = tu_write_file("cut.npy", b, cut);
        ck_assert_int_ne(cg_tensor_load_npy(p, &t), CG_OK);
        ck_assert_int_eq(strncmp(cg_last_error(), p, strlen(p)), 0);
    }
    free(m);
    free(b);
}
END_TEST

static Suite *npy_suite(void) {
    Suite *s = suite_create("npy");
    TCase *tc = tcase_create("tensor");
    tcase_add_test(tc, test_tensor_create);
    tcase_add_test(tc, test_tensor_errors);
    tcase_add_test(tc, test_convert_floats);
    tcase_add_test(tc, test_convert_integers);
    tcase_add_test(tc, test_convert_u64_top);
    tcase_add_test(tc, test_convert_unsupported);
    suite_add_tcase(s, tc);
    TCase *ld = tcase_create("load");
    tcase_add_checked_fixture(ld, setup, tu_teardown_dir);
    tcase_add_test(ld, test_load_f4_v1);
    tcase_add_test(ld, test_load_f8_v2);
    tcase_add_test(ld, test_load_f8_chunks);
    tcase_add_test(ld, test_load_i4_v3_scalar);
    tcase_add_test(ld, test_load_i8);
    tcase_add_test(ld, test_load_small_types);
    tcase_add_test(ld, test_numpy_files);
    tcase_add_test(ld, test_load_shapes);
    suite_add_tcase(s, ld);
    TCase *sv = tcase_create("save");
    tcase_add_checked_fixture(sv, setup, tu_teardown_dir);
    tcase_add_test(sv, test_save_numpy_layout);
    tcase_add_test(sv, test_roundtrip);
    tcase_add_test(sv, test_save_errors);
    suite_add_tcase(s, sv);
    TCase *bad = tcase_create("hostile");
    tcase_add_checked_fixture(bad, setup, tu_teardown_dir);
    tcase_set_timeout(bad, 60);
    tcase_add_test(bad, test_bad_prefix);
    tcase_add_test(bad, test_bad_dict);
    tcase_add_test(bad, test_bad_dtype_and_data);
    tcase_add_test(bad, test_mutations);
    suite_add_tcase(s, bad);
    return s;
}

int main(void) { return tu_run_suite(npy_suite(), 0); }
