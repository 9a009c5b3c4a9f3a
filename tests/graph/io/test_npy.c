/* Tensors (create, accessors, shape helpers) and .npy reading/writing:
 * every accepted dtype and version, numpy's exact header layout on save,
 * round trips, and hostile files (status and message text). */
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

#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Fixture: a fresh temporary directory per test                       */

static void setup(void) { tu_setup_dir("npy"); }

/* A .npy file of format version major.0 with the given header dict,
 * padded like numpy (spaces, '\n', 64-byte alignment), then the data. */
static const char *write_npy(const char *name, int major, const char *dict, const void *data,
                             size_t dlen) {
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
    ck_assert_msg(s == want, "line %d: status %s, want %s (message: %s)", line,
                  cg_status_name(s), cg_status_name(want), msg);
    ck_assert_msg(t == NULL, "line %d: output not NULL on failure", line);
    ck_assert_msg(strncmp(msg, path, strlen(path)) == 0 && msg[strlen(path)] == ':',
                  "line %d: message does not start with the path: %s", line, msg);
    ck_assert_msg(strstr(msg, substr) != NULL, "line %d: message '%s' lacks '%s'", line, msg,
                  substr);
    ck_assert_msg(strchr(msg, '\n') == NULL, "line %d: message has a newline: %s", line, msg);
}
#define expect_load_fail(path, want, substr) expect_load_fail_at(__LINE__, path, want, substr)

/* A v1 file with `dict` and `dlen` zero bytes of data that must fail. */
#define expect_npy_fail(dict, dlen, want, substr)                                              \
    do {                                                                                       \
        static const unsigned char zeros_[256];                                               \
        expect_load_fail(write_npy("bad.npy", 1, dict, zeros_, dlen), want, substr);           \
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
    ck_assert_msg(strstr(cg_last_error(), substr) != NULL, "message '%s' lacks '%s'",
                  cg_last_error(), substr);
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
    expect_create_fail((cg_dtype)9, 1, ok, "invalid dtype 9");
    expect_create_fail(CG_F32, 2, NULL, "NULL dims");
    ck_assert_int_eq(cg_tensor_create(CG_F32, 1, ok, NULL), CG_ERR_INVALID_ARGUMENT);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Loading valid files                                                 */

START_TEST(test_load_f4_v1) {
    unsigned char d[24];
    const float v[6] = {1.0f, -2.5f, 0.1f, 1e-45f, -0.0f, 3.4028235e38f};
    for (int i = 0; i < 6; i++) put_le(d + 4 * i, fbits(v[i]), 4);
    const char *p = write_npy("f4.npy", 1,
                              "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", d, 24);
    cg_tensor *t;
    ck_assert_msg(cg_tensor_load_npy(p, &t) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_tensor_dtype(t), CG_F32);
    ck_assert_int_eq(cg_tensor_ndim(t), 2);
    ck_assert_int_eq(cg_tensor_dim(t, 0), 2);
    ck_assert_int_eq(cg_tensor_dim(t, 1), 3);
    for (int i = 0; i < 6; i++)
        ck_assert_uint_eq(fbits(((const float *)cg_tensor_data_const(t))[i]), fbits(v[i]));
    cg_tensor_free(t);
}
END_TEST

START_TEST(test_load_f8_v2) {
    const double v[6] = {0.1, 1e300, -0.0, 1e-310, -2.5, -1e39};
    unsigned char d[48];
    for (int i = 0; i < 6; i++) put_le(d + 8 * i, dbits(v[i]), 8);
    const char *p = write_npy("f8.npy", 2,
                              "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", d, 48);
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
    const char *p = write_npy("big.npy", 1,
                              "{'descr': '<f8', 'fortran_order': False, 'shape': (100, 200), }",
                              d, (size_t)N * 8);
    cg_tensor *t;
    ck_assert_int_eq(cg_tensor_load_npy(p, &t), CG_OK);
    const float *f = cg_tensor_data_const(t);
    for (int i = 0; i < N; i++) ck_assert(f[i] == (float)(i * 0.5));
    cg_tensor_free(t);
    /* an int64 value out of range late in the file: the index is exact */
    for (int i = 0; i < N; i++) put_le(d + 8 * (size_t)i, (uint64_t)i, 8);
    put_le(d + 8 * 9000, (uint64_t)INT64_C(-2147483649), 8);
    p = write_npy("big8.npy", 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (20000,), }",
                  d, (size_t)N * 8);
    expect_load_fail(p, CG_ERR_UNSUPPORTED,
                     "element 9000 has value -2147483649, which does not fit in int32");
    free(d);
}
END_TEST

START_TEST(test_load_i4_v3_scalar) {
    unsigned char d[4];
    put_le(d, (uint32_t)-17, 4);
    /* double quotes, no spaces, no trailing comma, keys in another order */
    const char *p =
        write_npy("i4.npy", 3, "{\"shape\":(),\"descr\":\"<i4\",\"fortran_order\":False}", d, 4);
    cg_tensor *t;
    ck_assert_msg(cg_tensor_load_npy(p, &t) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_tensor_dtype(t), CG_I32);
    ck_assert_int_eq(cg_tensor_ndim(t), 0);
    ck_assert_int_eq(cg_tensor_numel(t), 1);
    ck_assert_int_eq(*(const int32_t *)cg_tensor_data_const(t), -17);
    cg_tensor_free(t);
}
END_TEST

START_TEST(test_load_i8) {
    const int64_t v[4] = {0, -1, INT32_MAX, INT32_MIN};
    unsigned char d[32];
    for (int i = 0; i < 4; i++) put_le(d + 8 * i, (uint64_t)v[i], 8);
    const char *p = write_npy("i8.npy", 1,
                              "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 2), }", d, 32);
    cg_tensor *t;
    ck_assert_int_eq(cg_tensor_load_npy(p, &t), CG_OK);
    ck_assert_int_eq(cg_tensor_dtype(t), CG_I32);
    for (int i = 0; i < 4; i++) ck_assert_int_eq(((const int32_t *)cg_tensor_data_const(t))[i], v[i]);
    cg_tensor_free(t);

    put_le(d + 16, (uint64_t)1 << 31, 8);
    p = write_npy("i8r.npy", 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 2), }",
                  d, 32);
    expect_load_fail(p, CG_ERR_UNSUPPORTED,
                     "element 2 has value 2147483648, which does not fit in int32");
}
END_TEST

START_TEST(test_load_shapes) {
    cg_tensor *t;
    /* zero-size arrays */
    const char *p = write_npy("z.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }",
                              NULL, 0);
    ck_assert_int_eq(cg_tensor_load_npy(p, &t), CG_OK);
    ck_assert_int_eq(cg_tensor_numel(t), 0);
    ck_assert_int_eq(cg_tensor_dim(t, 1), 4);
    cg_tensor_free(t);
    /* Python 2 long literals, as old numpy wrote them; trailing comma in the tuple */
    unsigned char d[24] = {0};
    p = write_npy("l.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3L, 2L,), }", d,
                  24);
    ck_assert_msg(cg_tensor_load_npy(p, &t) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_tensor_dim(t, 0), 3);
    ck_assert_int_eq(cg_tensor_dim(t, 1), 2);
    cg_tensor_free(t);
    /* 8 dimensions */
    p = write_npy("d8.npy", 1,
                  "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 2, 3), }", d,
                  24);
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
    ck_assert_int_eq(memcmp(b + 10, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }  ", 57),
                     0);
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
    for (int64_t i = 0; i < n; i++) {
        if (dt == CG_F32) ((float *)cg_tensor_data(t))[i] = (float)i * 0.25f - 3.0f;
        else ((int32_t *)cg_tensor_data(t))[i] = (int32_t)(i * 7919 - 100000);
    }
    const char *p = tu_path("rt.npy");
    ck_assert_int_eq(cg_tensor_save_npy(t, p), CG_OK);
    ck_assert_msg(cg_tensor_load_npy(p, &u) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_tensor_dtype(u), dt);
    ck_assert_int_eq(cg_tensor_ndim(u), ndim);
    for (int i = 0; i < ndim; i++) ck_assert_int_eq(cg_tensor_dim(u, i), dims[i]);
    ck_assert_int_eq(cg_tensor_numel(u), n);
    if (n) ck_assert_int_eq(memcmp(cg_tensor_data(t), cg_tensor_data(u), (size_t)n * 4), 0);
    cg_tensor_free(t);
    cg_tensor_free(u);
}

START_TEST(test_roundtrip) {
    int64_t a[2] = {2, 3}, b[1] = {1000}, c[2] = {0, 3}, d[8] = {1, 2, 1, 1, 1, 1, 1, 2},
            e[1] = {124};
    roundtrip(CG_F32, 2, a);
    roundtrip(CG_I32, 2, a);
    roundtrip(CG_F32, 1, b);
    roundtrip(CG_I32, 0, NULL);
    roundtrip(CG_F32, 0, NULL);
    roundtrip(CG_I32, 2, c);
    roundtrip(CG_F32, 8, d);
    roundtrip(CG_I32, 1, e);
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
    expect_load_fail(tu_write_file("e.npy", "", 0), CG_ERR_FORMAT,
                     "file is too short (0 bytes) to be a .npy file");
    expect_load_fail(tu_write_file("s.npy", "\x93NUMP", 5), CG_ERR_FORMAT, "file is too short (5 bytes)");
    expect_load_fail(tu_write_file("m.npy", "PK\x03\x04\0\0\0\0\0\0\0\0", 12), CG_ERR_FORMAT,
                     "not a .npy file (bad magic bytes)");
    expect_load_fail(tu_write_file("v4.npy", "\x93NUMPY\x04\x00\x00\x00", 10), CG_ERR_UNSUPPORTED,
                     "unsupported .npy format version 4.0 (expected 1.0, 2.0 or 3.0)");
    expect_load_fail(tu_write_file("v11.npy", "\x93NUMPY\x01\x01\x00\x00", 10), CG_ERR_UNSUPPORTED,
                     "version 1.1");
    expect_load_fail(tu_write_file("v0.npy", "\x93NUMPY\x00\x00\x00\x00", 10), CG_ERR_UNSUPPORTED,
                     "version 0.0");
    expect_load_fail(tu_write_file("v2s.npy", "\x93NUMPY\x02\x00\x00\x00", 11), CG_ERR_FORMAT,
                     "file is too short (11 bytes) for a version 2.0 header");
    expect_load_fail(tu_write_file("hl.npy", "\x93NUMPY\x01\x00\xc8\x00{}", 12), CG_ERR_FORMAT,
                     "header length 200 is larger than the rest of the file (2 bytes)");
    expect_load_fail(tu_write_file("hl2.npy", "\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14), CG_ERR_FORMAT,
                     "header length 4294967295 exceeds the limit of 1048576 bytes");
    expect_load_fail(tu_write_file("hl3.npy", "\x93NUMPY\x03\x00\x00\x00\x10\x00{}", 14),
                     CG_ERR_FORMAT, "header length 1048576 is larger than the rest of the file");
    expect_load_fail(tu_write_file("h0.npy", "\x93NUMPY\x01\x00\x00\x00", 10), CG_ERR_FORMAT,
                     "malformed .npy header: expected '{' at the start of the header (at header "
                     "byte 0)");
}
END_TEST

START_TEST(test_bad_dict) {
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, }", 0, CG_ERR_FORMAT,
                    "malformed .npy header: missing key 'shape'");
    expect_npy_fail("{'fortran_order': False, 'shape': (1,), }", 4, CG_ERR_FORMAT,
                    "missing key 'descr'");
    expect_npy_fail("{'descr': '<f4', 'shape': (1,), }", 4, CG_ERR_FORMAT,
                    "missing key 'fortran_order'");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 4,
                    CG_ERR_FORMAT, "unknown key 'x' (at header byte 56)");
    expect_npy_fail("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4,
                    CG_ERR_FORMAT, "duplicate key 'descr'");
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
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'descr: 1}", 4,
                    CG_ERR_FORMAT, "unterminated string");
    expect_npy_fail("{descr: '<f4', 'fortran_order': False, 'shape': (1,)}", 4, CG_ERR_FORMAT,
                    "expected a quoted string");
    expect_npy_fail("{'descr': '<\\x66\\x34', 'fortran_order': False, 'shape': (1,)}", 4,
                    CG_ERR_FORMAT, "escape sequences are not supported");
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
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (03,)}", 12, CG_ERR_FORMAT,
                    "leading zero");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (1,,)}", 4, CG_ERR_FORMAT,
                    "expected an integer in 'shape'");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (None,)}", 4, CG_ERR_FORMAT,
                    "expected an integer in 'shape'");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
                    0, CG_ERR_FORMAT, "dimension in 'shape' is too large");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, "
                    "1)}",
                    4, CG_ERR_UNSUPPORTED, "'shape' has more than 8 dimensions");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, "
                    "4294967296)}",
                    0, CG_ERR_FORMAT, "shape (4294967296, 4294967296, 4294967296) has too many elements");
    expect_npy_fail("{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,)}", 0,
                    CG_ERR_FORMAT, "shape (2305843009213693952,) has too many elements");
    /* a huge shape with little data is refused before anything is allocated */
    expect_npy_fail("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1000)}", 16,
                    CG_ERR_FORMAT, "needs 8000000000000 bytes, but only 16 are present");
}
END_TEST

START_TEST(test_bad_dtype_and_data) {
    const char *p = write_npy("in.npy", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                              "\0\0\0\0\0\0\0\0", 8);
    cg_tensor *t;
    ck_assert_int_eq(cg_tensor_load_npy(p, &t), CG_ERR_UNSUPPORTED);
    char want[700];
    snprintf(want, sizeof want,
             "%s: unsupported dtype '<c8' (expected float32, float64, int32 or int64)", p);
    ck_assert_str_eq(cg_last_error(), want);

    expect_npy_fail("{'descr': '|b1', 'fortran_order': False, 'shape': (4,)}", 4,
                    CG_ERR_UNSUPPORTED, "unsupported dtype '|b1'");
    expect_npy_fail("{'descr': '|u1', 'fortran_order': False, 'shape': (4,)}", 4,
                    CG_ERR_UNSUPPORTED, "unsupported dtype '|u1'");
    expect_npy_fail("{'descr': '<f2', 'fortran_order': False, 'shape': (2,)}", 4,
                    CG_ERR_UNSUPPORTED, "unsupported dtype '<f2'");
    expect_npy_fail("{'descr': '<u4', 'fortran_order': False, 'shape': (1,)}", 4,
                    CG_ERR_UNSUPPORTED, "unsupported dtype '<u4'");
    expect_npy_fail("{'descr': '=f4', 'fortran_order': False, 'shape': (1,)}", 4,
                    CG_ERR_UNSUPPORTED, "unsupported dtype '=f4'");
    expect_npy_fail("{'descr': '', 'fortran_order': False, 'shape': (1,)}", 4, CG_ERR_UNSUPPORTED,
                    "unsupported dtype ''");
    expect_npy_fail("{'descr': '\x1b[2J<f4', 'fortran_order': False, 'shape': (1,)}", 4,
                    CG_ERR_UNSUPPORTED, "unsupported dtype '\\x1b[2J<f4'");
    expect_npy_fail("{'descr': '>f4', 'fortran_order': False, 'shape': (1,)}", 4,
                    CG_ERR_UNSUPPORTED, "big-endian data ('>f4') is not supported");
    expect_npy_fail("{'descr': '>i8', 'fortran_order': False, 'shape': (1,)}", 8,
                    CG_ERR_UNSUPPORTED, "big-endian data ('>i8')");
    expect_npy_fail("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", 4,
                    CG_ERR_UNSUPPORTED, "structured dtypes are not supported");
    expect_npy_fail("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2)}", 16,
                    CG_ERR_UNSUPPORTED, "Fortran-order (column-major) data is not supported");
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
    suite_add_tcase(s, tc);
    TCase *ld = tcase_create("load");
    tcase_add_checked_fixture(ld, setup, tu_teardown_dir);
    tcase_add_test(ld, test_load_f4_v1);
    tcase_add_test(ld, test_load_f8_v2);
    tcase_add_test(ld, test_load_f8_chunks);
    tcase_add_test(ld, test_load_i4_v3_scalar);
    tcase_add_test(ld, test_load_i8);
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

int main(void) {
    SRunner *sr = srunner_create(npy_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
