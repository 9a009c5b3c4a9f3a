/* safetensors reader and writer: valid files of every dtype, conversions,
 * views by dtype (zero copy where aligned), files the safetensors package
 * wrote (tests/data/dtypes, tools/py/make_dtype_data.py; and
 * tools/py/make_test_safetensors.py's), written back byte for byte, the
 * writer's layout against hand-built bytes, its errors, and hostile files
 * (each checked for its status and the text of its message). */
#include "clgraph/clgraph.h"
#include "weights.h"

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtype_cases.h"
#include "test_util.h"

#ifndef CG_TEST_DATA_DIR
#define CG_TEST_DATA_DIR "tests/data"
#endif

/* ------------------------------------------------------------------ */
/* Fixture: a fresh temporary directory per test                       */

static void setup(void) { tu_setup_dir("st"); }

/* 8-byte header length, the JSON, `pad` spaces, then the data section. */
static const char *write_st(const char *name, const char *json, size_t pad, const void *data, size_t dlen) {
    size_t jl = strlen(json), n = jl + pad;
    unsigned char *buf = malloc(8 + n + dlen + 1);
    ck_assert_ptr_nonnull(buf);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(buf + 8, json, jl);
    memset(buf + 8 + jl, ' ', pad);
    if (dlen) memcpy(buf + 8 + n, data, dlen);
    const char *p = tu_write_file(name, buf, 8 + n + dlen);
    free(buf);
    return p;
}

/* Pads the JSON so that the data section starts on an 8-byte boundary. */
static const char *write_st8(const char *name, const char *json, const void *data, size_t dlen) {
    size_t jl = strlen(json);
    return write_st(name, json, (8 - jl % 8) % 8, data, dlen);
}

static void expect_open_fail_at(int line, const char *path, cg_status want, const char *substr) {
    cg_weights *w = (cg_weights *)&w;
    cg_status s = cg_weights_open(path, &w);
    const char *msg = cg_last_error();
    ck_assert_msg(s == want, "line %d: status %s, want %s (message: %s)", line, cg_status_name(s), cg_status_name(want),
                  msg);
    ck_assert_msg(w == NULL, "line %d: output not NULL on failure", line);
    ck_assert_msg(strncmp(msg, path, strlen(path)) == 0 && msg[strlen(path)] == ':',
                  "line %d: message does not start with the path: %s", line, msg);
    ck_assert_msg(strstr(msg, substr) != NULL, "line %d: message '%s' lacks '%s'", line, msg, substr);
    ck_assert_msg(strchr(msg, '\n') == NULL, "line %d: message has a newline: %s", line, msg);
}
#define expect_open_fail(path, want, substr) expect_open_fail_at(__LINE__, path, want, substr)

/* Opens a JSON + data file that must fail. */
#define expect_st_fail(json, data, dlen, want, substr) \
    expect_open_fail(write_st8("bad.safetensors", json, data, dlen), want, substr)

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void put16(unsigned char *p, uint16_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* ------------------------------------------------------------------ */
/* Valid files                                                         */

static const uint16_t F16_IN[] = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x03FF, 0x0400, 0x7C00,
                                  0xFC00, 0x8000, 0x3555, 0x8001, 0x0200, 0x7E00, 0xFE01};
#define N_F16 (sizeof F16_IN / sizeof F16_IN[0])
/* expected f32 bit patterns, computed by hand */
static const uint32_t F16_OUT[N_F16] = {
    0x3F800000, /* 1.0 */
    0xC0000000, /* -2.0 */
    0x477FE000, /* 65504, largest half */
    0x33800000, /* 2^-24, smallest subnormal */
    0x387FC000, /* 1023 * 2^-24, largest subnormal */
    0x38800000, /* 2^-14, smallest normal */
    0x7F800000, /* +inf */
    0xFF800000, /* -inf */
    0x80000000, /* -0 */
    0x3EAAA000, /* 0x1.554p-2 */
    0xB3800000, /* -2^-24 */
    0x38000000, /* 2^-15 (subnormal 0x200) */
    0x7FC00000, /* quiet nan */
    0xFFC02000, /* negative nan with payload */
};

static const uint16_t BF16_IN[] = {0x3F80, 0xC040, 0x7F80, 0xFF80, 0x8000, 0x0001, 0x4049, 0x7F7F, 0x7FC0};
#define N_BF16 (sizeof BF16_IN / sizeof BF16_IN[0])

START_TEST(test_all_dtypes) {
    unsigned char data[256];
    size_t o = 0;
    /* a: F32[2, 2] */
    const float fa[4] = {1.5f, -2.25f, 1e-45f, 3.4028235e38f};
    for (int i = 0; i < 4; i++) put32(data + o + 4 * i, f32_bits(fa[i]));
    o += 16;
    /* h: F16[14] at 16 */
    for (size_t i = 0; i < N_F16; i++) put16(data + o + 2 * i, F16_IN[i]);
    o += 2 * N_F16; /* 44 */
    /* b: BF16[9] at 44 */
    for (size_t i = 0; i < N_BF16; i++) put16(data + o + 2 * i, BF16_IN[i]);
    o += 2 * N_BF16; /* 62 */
    /* i: I32[3] at 62 (misaligned on purpose) */
    const int32_t iv[3] = {7, -1, INT32_MIN};
    for (int i = 0; i < 3; i++) put32(data + o + 4 * i, (uint32_t)iv[i]);
    o += 12; /* 74 */
    /* l: I64[2, 2] at 74 */
    const int64_t lv[4] = {0, -1, INT32_MAX, INT32_MIN};
    for (int i = 0; i < 4; i++) put64(data + o + 8 * i, (uint64_t)lv[i]);
    o += 32; /* 106 */
    const char *json = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                       "\"h\":{\"dtype\":\"F16\",\"shape\":[14],\"data_offsets\":[16,44]},"
                       "\"b\":{\"dtype\":\"BF16\",\"shape\":[3,3],\"data_offsets\":[44,62]},"
                       "\"i\":{\"dtype\":\"I32\",\"shape\":[3],\"data_offsets\":[62,74]},"
                       "\"l\":{\"dtype\":\"I64\",\"shape\":[2,2],\"data_offsets\":[74,106]}}";
    const char *path = write_st8("all.safetensors", json, data, o);
    cg_weights *w = NULL;
    ck_assert_msg(cg_weights_open(path, &w) == CG_OK, "%s", cg_last_error());
    ck_assert_uint_eq(cg_weights_count(w), 5);
    const char *sorted[] = {"a", "b", "h", "i", "l"};
    for (int i = 0; i < 5; i++) {
        ck_assert_str_eq(cg_weights_name(w, i), sorted[i]);
        ck_assert_int_eq(cg_weights_find(w, sorted[i]), i);
    }
    ck_assert_ptr_null(cg_weights_name(w, 5));
    ck_assert_int_eq(cg_weights_find(w, "zz"), -1);
    ck_assert_int_eq(cg_weights_find(w, ""), -1);

    cg_tensor *t;
    /* F32 */
    ck_assert_int_eq(cg_weights_get(w, "a", &t), CG_OK);
    ck_assert_int_eq(cg_tensor_dtype(t), CG_F32);
    ck_assert_int_eq(cg_tensor_ndim(t), 2);
    ck_assert_int_eq(cg_tensor_dim(t, 0), 2);
    ck_assert_int_eq(cg_tensor_dim(t, 1), 2);
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(f32_bits(((const float *)cg_tensor_data_const(t))[i]), f32_bits(fa[i]));
    cg_tensor_free(t);
    /* F16 */
    ck_assert_int_eq(cg_weights_get(w, "h", &t), CG_OK);
    ck_assert_int_eq(cg_tensor_dtype(t), CG_F32);
    ck_assert_int_eq(cg_tensor_numel(t), (int64_t)N_F16);
    const float *hf = cg_tensor_data_const(t);
    for (size_t i = 0; i < N_F16; i++)
        ck_assert_msg(f32_bits(hf[i]) == F16_OUT[i], "f16 0x%04x -> 0x%08x, want 0x%08x", F16_IN[i], f32_bits(hf[i]),
                      F16_OUT[i]);
    ck_assert(hf[3] == 0x1p-24f);
    ck_assert(hf[4] == 0x1.ff8p-15f);
    ck_assert(hf[9] == 0x1.554p-2f);
    ck_assert(isinf(hf[6]) && hf[6] > 0);
    ck_assert(hf[8] == 0.0f && signbit(hf[8]));
    ck_assert(isnan(hf[12]) && isnan(hf[13]));
    cg_tensor_free(t);
    /* BF16 */
    ck_assert_int_eq(cg_weights_get(w, "b", &t), CG_OK);
    ck_assert_int_eq(cg_tensor_ndim(t), 2);
    const float *bf = cg_tensor_data_const(t);
    ck_assert(bf[0] == 1.0f);
    ck_assert(bf[1] == -3.0f);
    ck_assert(isinf(bf[2]) && bf[2] > 0);
    ck_assert(isinf(bf[3]) && bf[3] < 0);
    ck_assert(bf[4] == 0.0f && signbit(bf[4]));
    ck_assert(bf[5] == 0x1p-133f); /* bfloat16 subnormal */
    ck_assert(bf[6] == 3.140625f);
    ck_assert(bf[7] == 0x1.fep127f);
    ck_assert(isnan(bf[8]));
    cg_tensor_free(t);
    /* I32 (misaligned in the file) */
    ck_assert_int_eq(cg_weights_get(w, "i", &t), CG_OK);
    ck_assert_int_eq(cg_tensor_dtype(t), CG_I32);
    for (int i = 0; i < 3; i++) ck_assert_int_eq(((const int32_t *)cg_tensor_data_const(t))[i], iv[i]);
    cg_tensor_free(t);
    /* I64 -> I32 */
    ck_assert_int_eq(cg_weights_get(w, "l", &t), CG_OK);
    ck_assert_int_eq(cg_tensor_dtype(t), CG_I32);
    for (int i = 0; i < 4; i++) ck_assert_int_eq(((const int32_t *)cg_tensor_data_const(t))[i], (int32_t)lv[i]);
    cg_tensor_free(t);

    /* views agree with get */
    cg_tensor_desc d;
    const void *p1, *p2;
    ck_assert_int_eq(cg_weights_view(w, "h", &d, &p1), CG_OK);
    ck_assert_int_eq(d.dtype, CG_OP_F32);
    ck_assert_int_eq(d.ndim, 1);
    ck_assert_int_eq(d.dims[0], (int64_t)N_F16);
    for (size_t i = 0; i < N_F16; i++) ck_assert_uint_eq(f32_bits(((const float *)p1)[i]), F16_OUT[i]);
    ck_assert_int_eq(cg_weights_view(w, "h", &d, &p2), CG_OK);
    ck_assert_ptr_eq(p1, p2); /* converted once */
    ck_assert_uint_eq((uintptr_t)p1 % 4, 0);
    ck_assert_int_eq(cg_weights_view(w, "i", &d, &p1), CG_OK);
    ck_assert_int_eq(d.dtype, CG_OP_I32);
    ck_assert_uint_eq((uintptr_t)p1 % 4, 0);
    for (int i = 0; i < 3; i++) ck_assert_int_eq(((const int32_t *)p1)[i], iv[i]);
    ck_assert_int_eq(cg_weights_view(w, "l", &d, &p1), CG_OK);
    ck_assert_int_eq(d.dtype, CG_OP_I32);
    ck_assert_int_eq(d.ndim, 2);
    ck_assert_int_eq(((const int32_t *)p1)[3], INT32_MIN);
    ck_assert_int_eq(cg_weights_view(w, "b", &d, &p1), CG_OK);
    ck_assert(((const float *)p1)[6] == 3.140625f);
    ck_assert_int_eq(cg_weights_desc(w, 2, &d), CG_OK); /* "h" */
    ck_assert_int_eq(d.dtype, CG_OP_F32);
    ck_assert_int_eq(d.dims[0], (int64_t)N_F16);
    ck_assert_int_eq(cg_weights_desc(w, 5, &d), CG_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(cg_weights_path(w), path);
    cg_weights_free(w);
}
END_TEST

START_TEST(test_view_zero_copy) {
    unsigned char data[32];
    for (int i = 0; i < 8; i++) put32(data + 4 * i, f32_bits((float)i + 0.5f));
    const char *json = "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                       "\"y\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[16,32]}}";
    cg_weights *w;
    ck_assert_int_eq(cg_weights_open(write_st8("zc.safetensors", json, data, 32), &w), CG_OK);
    cg_tensor_desc dx, dy;
    const void *px, *py;
    ck_assert_int_eq(cg_weights_view(w, "x", &dx, &px), CG_OK);
    ck_assert_int_eq(cg_weights_view(w, "y", &dy, &py), CG_OK);
    /* both point into the same mapping, 16 bytes apart: no copy was made */
    ck_assert_int_eq((const char *)py - (const char *)px, 16);
    ck_assert(((const float *)px)[1] == 1.5f);
    ck_assert(((const float *)py)[3] == 7.5f);
    ck_assert_int_eq(dy.ndim, 2);
    ck_assert_int_eq(dy.dims[0], 2);
    ck_assert_int_eq(dy.dims[1], 2);
    cg_weights_free(w);
}
END_TEST

START_TEST(test_view_misaligned_f32) {
    unsigned char data[12];
    for (int i = 0; i < 3; i++) put32(data + 4 * i, f32_bits(-1.0f - (float)i));
    const char *json = "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}";
    size_t jl = strlen(json);
    /* data section at 8 + jl + pad, made odd */
    size_t pad = ((8 + jl) % 2 == 0) ? 1 : 0;
    cg_weights *w;
    ck_assert_int_eq(cg_weights_open(write_st("mis.safetensors", json, pad, data, 12), &w), CG_OK);
    cg_tensor_desc d;
    const void *p, *q;
    ck_assert_int_eq(cg_weights_view(w, "x", &d, &p), CG_OK);
    ck_assert_uint_eq((uintptr_t)p % 4, 0);
    for (int i = 0; i < 3; i++) ck_assert(((const float *)p)[i] == -1.0f - (float)i);
    ck_assert_int_eq(cg_weights_view(w, "x", &d, &q), CG_OK);
    ck_assert_ptr_eq(p, q);
    cg_weights_free(w);
}
END_TEST

typedef struct view_job {
    cg_weights *w;
    const void *ptr[64];
    cg_status st[64];
} view_job;

static void *view_thread(void *arg) {
    view_job *j = arg;
    char name[8];
    for (int i = 0; i < 64; i++) {
        cg_tensor_desc d;
        snprintf(name, sizeof name, "t%d", i);
        j->st[i] = cg_weights_view(j->w, name, &d, &j->ptr[i]);
    }
    return NULL;
}

/* Several threads converting the same tensors get one buffer each. */
START_TEST(test_view_threads) {
    enum { T = 64, E = 256 };
    char json[T * 80 + 8];
    size_t o = 0;
    unsigned char *data = malloc((size_t)T * E * 2);
    ck_assert_ptr_nonnull(data);
    for (int k = 0; k < T * E; k++) put16(data + 2 * k, (uint16_t)(0x3C00 + (k % 1024)));
    o += (size_t)snprintf(json + o, sizeof json - o, "{");
    for (int i = 0; i < T; i++)
        o += (size_t)snprintf(json + o, sizeof json - o,
                              "%s\"t%d\":{\"dtype\":\"F16\",\"shape\":[%d],"
                              "\"data_offsets\":[%d,%d]}",
                              i ? "," : "", i, E, i * E * 2, (i + 1) * E * 2);
    snprintf(json + o, sizeof json - o, "}");
    cg_weights *w;
    ck_assert_int_eq(cg_weights_open(write_st8("thr.safetensors", json, data, (size_t)T * E * 2), &w), CG_OK);
    free(data);
    view_job jobs[4];
    pthread_t th[4];
    for (int k = 0; k < 4; k++) {
        jobs[k].w = w;
        ck_assert_int_eq(pthread_create(&th[k], NULL, view_thread, &jobs[k]), 0);
    }
    for (int k = 0; k < 4; k++) ck_assert_int_eq(pthread_join(th[k], NULL), 0);
    for (int i = 0; i < T; i++) {
        for (int k = 0; k < 4; k++) {
            ck_assert_int_eq(jobs[k].st[i], CG_OK);
            ck_assert_ptr_eq(jobs[k].ptr[i], jobs[0].ptr[i]);
        }
        const float *f = jobs[0].ptr[i];
        ck_assert(f[0] == 1.0f + (float)((i * E) % 1024) / 1024.0f);
    }
    cg_weights_free(w);
}
END_TEST

START_TEST(test_empty_scalar_metadata) {
    unsigned char data[4];
    put32(data, f32_bits(2.5f));
    const char *json = "  {\"__metadata__\" : {\"format\": \"pt\", \"k\\u00e9y\": \"v\\\"al\\n\", \"z\": \"\"},\n"
                       "  \"s\": {\"shape\": [], \"data_offsets\": [0, 4], \"dtype\": \"F32\"},\r\n"
                       "  \"e\": {\"dtype\": \"BF16\", \"shape\": [0, 1000000], \"data_offsets\": [4, 4]},\t"
                       "  \"e2\": {\"dtype\": \"I64\", \"shape\": [3, 0], \"data_offsets\": [4, 4]}\n}";
    cg_weights *w;
    const char *path = write_st8("scalar.safetensors", json, data, 4);
    ck_assert_msg(cg_weights_open(path, &w) == CG_OK, "%s", cg_last_error());
    ck_assert_uint_eq(cg_weights_count(w), 3);
    ck_assert_int_eq(cg_weights_find(w, "__metadata__"), -1);
    cg_tensor *t;
    ck_assert_int_eq(cg_weights_get(w, "s", &t), CG_OK);
    ck_assert_int_eq(cg_tensor_ndim(t), 0);
    ck_assert_int_eq(cg_tensor_numel(t), 1);
    ck_assert(((const float *)cg_tensor_data_const(t))[0] == 2.5f);
    cg_tensor_free(t);
    ck_assert_int_eq(cg_weights_get(w, "e", &t), CG_OK);
    ck_assert_int_eq(cg_tensor_numel(t), 0);
    ck_assert_int_eq(cg_tensor_dim(t, 1), 1000000);
    cg_tensor_free(t);
    cg_tensor_desc d;
    const void *p;
    ck_assert_int_eq(cg_weights_view(w, "e2", &d, &p), CG_OK);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(d.dtype, CG_OP_I32);
    ck_assert_int_eq(d.dims[0], 3);
    ck_assert_int_eq(d.dims[1], 0);
    cg_weights_free(w);

    /* a file with no tensors at all */
    ck_assert_int_eq(cg_weights_open(write_st8("none.safetensors", "{}", NULL, 0), &w), CG_OK);
    ck_assert_uint_eq(cg_weights_count(w), 0);
    ck_assert_int_eq(cg_weights_find(w, "x"), -1);
    cg_weights_free(w);
    ck_assert_int_eq(cg_weights_open(write_st8("meta.safetensors", "{\"__metadata__\":{}}", NULL, 0), &w), CG_OK);
    ck_assert_uint_eq(cg_weights_count(w), 0);
    cg_weights_free(w);
}
END_TEST

START_TEST(test_escaped_names) {
    unsigned char data[8] = {0};
    /* "a\u00e9\ud83d\ude00\n\/" and raw UTF-8 "é" */
    const char *json = "{\"a\\u00e9\\ud83d\\ude00\\n\\/\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                       "\"\xc3\xa9\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
    cg_weights *w;
    ck_assert_msg(cg_weights_open(write_st8("esc.safetensors", json, data, 8), &w) == CG_OK, "%s", cg_last_error());
    ck_assert_int_ge(cg_weights_find(w, "a\xc3\xa9\xf0\x9f\x98\x80\n/"), 0);
    ck_assert_int_ge(cg_weights_find(w, "\xc3\xa9"), 0);
    /* the message about an unknown name is one line even if the name is not */
    cg_tensor *t;
    ck_assert_int_eq(cg_weights_get(w, "no\nsuch", &t), CG_ERR_NOT_FOUND);
    ck_assert_ptr_null(t);
    ck_assert_ptr_null(strchr(cg_last_error(), '\n'));
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "no tensor named 'no\\x0asuch'"));
    cg_weights_free(w);
}
END_TEST

START_TEST(test_many_tensors) {
    enum { N = 5000 };
    size_t cap = (size_t)N * 90 + 16;
    char *json = malloc(cap);
    unsigned char *data = malloc((size_t)N * 4);
    ck_assert_ptr_nonnull(json);
    ck_assert_ptr_nonnull(data);
    size_t o = 0;
    o += (size_t)snprintf(json + o, cap - o, "{");
    for (int i = 0; i < N; i++) {
        int k = N - 1 - i; /* names in reverse order of the data */
        o += (size_t)snprintf(json + o, cap - o,
                              "%s\"layer.%05d.w\":{\"dtype\":\"I32\",\"shape\":[1],"
                              "\"data_offsets\":[%d,%d]}",
                              i ? "," : "", k, 4 * i, 4 * i + 4);
        put32(data + 4 * i, (uint32_t)k);
    }
    o += (size_t)snprintf(json + o, cap - o, "}");
    ck_assert_uint_lt(o, cap);
    cg_weights *w;
    ck_assert_int_eq(cg_weights_open(write_st8("many.safetensors", json, data, (size_t)N * 4), &w), CG_OK);
    free(json);
    free(data);
    ck_assert_uint_eq(cg_weights_count(w), N);
    char name[32];
    for (int k = 0; k < N; k++) {
        snprintf(name, sizeof name, "layer.%05d.w", k);
        ck_assert_int_eq(cg_weights_find(w, name), k); /* names are sorted */
        cg_tensor_desc d;
        const void *p;
        ck_assert_int_eq(cg_weights_view(w, name, &d, &p), CG_OK);
        ck_assert_int_eq(*(const int32_t *)p, k);
    }
    ck_assert_int_eq(cg_weights_find(w, "layer.05000.w"), -1);
    cg_weights_free(w);
}
END_TEST

START_TEST(test_python_file) {
    const char *path = CG_TEST_DATA_DIR "/small.safetensors";
    cg_weights *w;
    ck_assert_msg(cg_weights_open(path, &w) == CG_OK, "%s", cg_last_error());
    const char *names[] = {"count", "dense.bias", "dense.weight", "emb.bf16", "emb.f16", "empty", "ids"};
    ck_assert_uint_eq(cg_weights_count(w), 7);
    for (int i = 0; i < 7; i++) ck_assert_str_eq(cg_weights_name(w, i), names[i]);

    cg_tensor *t;
    ck_assert_int_eq(cg_weights_get(w, "dense.weight", &t), CG_OK);
    ck_assert_int_eq(cg_tensor_ndim(t), 2);
    ck_assert_int_eq(cg_tensor_dim(t, 0), 2);
    ck_assert_int_eq(cg_tensor_dim(t, 1), 3);
    const float dw[6] = {1.0f, -2.5f, 3.25f, 0.0f, 65504.0f, -0.125f};
    for (int i = 0; i < 6; i++) ck_assert(((const float *)cg_tensor_data_const(t))[i] == dw[i]);
    cg_tensor_free(t);

    cg_tensor_desc d;
    const void *p;
    ck_assert_int_eq(cg_weights_view(w, "dense.bias", &d, &p), CG_OK);
    ck_assert(((const float *)p)[0] == 0.1f);
    ck_assert(((const float *)p)[1] == 0.2f);
    ck_assert(((const float *)p)[2] == 0.3f);
    ck_assert_int_eq(cg_weights_view(w, "emb.f16", &d, &p), CG_OK);
    ck_assert_int_eq(d.ndim, 2);
    const float ef[4] = {1.0f, -2.0f, 0.5f, 65504.0f};
    for (int i = 0; i < 4; i++) ck_assert(((const float *)p)[i] == ef[i]);
    ck_assert_int_eq(cg_weights_view(w, "emb.bf16", &d, &p), CG_OK);
    const float eb[4] = {1.0f, -3.0f, 0.15625f, 256.0f};
    for (int i = 0; i < 4; i++) ck_assert(((const float *)p)[i] == eb[i]);
    ck_assert_int_eq(cg_weights_view(w, "ids", &d, &p), CG_OK);
    ck_assert_int_eq(d.dtype, CG_OP_I32);
    ck_assert_int_eq(((const int32_t *)p)[0], 0);
    ck_assert_int_eq(((const int32_t *)p)[1], -7);
    ck_assert_int_eq(((const int32_t *)p)[2], 2147483647);
    ck_assert_int_eq(cg_weights_view(w, "count", &d, &p), CG_OK);
    ck_assert_int_eq(d.ndim, 0);
    ck_assert_int_eq(*(const int32_t *)p, 42);
    ck_assert_int_eq(cg_weights_view(w, "empty", &d, &p), CG_OK);
    ck_assert_int_eq(d.dims[0], 0);
    ck_assert_int_eq(d.dims[1], 4);
    cg_weights_free(w);
}
END_TEST

START_TEST(test_i64_out_of_range) {
    unsigned char data[24];
    put64(data, 5);
    put64(data + 8, (uint64_t)1 << 31);
    put64(data + 16, 0);
    const char *json = "{\"big\":{\"dtype\":\"I64\",\"shape\":[3],\"data_offsets\":[0,24]}}";
    cg_weights *w;
    const char *path = write_st8("big.safetensors", json, data, 24);
    ck_assert_int_eq(cg_weights_open(path, &w), CG_OK); /* values are checked on access */
    cg_tensor *t;
    ck_assert_int_eq(cg_weights_get(w, "big", &t), CG_ERR_UNSUPPORTED);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "tensor 'big': element 1 has value 2147483648, which does not "
                                                  "fit in i32"));
    ck_assert_int_eq(strncmp(cg_last_error(), path, strlen(path)), 0);
    cg_tensor_desc d;
    const void *p = &p;
    ck_assert_int_eq(cg_weights_view(w, "big", &d, &p), CG_ERR_UNSUPPORTED);
    ck_assert_ptr_null(p);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "element 1"));
    /* and again: the failed conversion was not cached */
    ck_assert_int_eq(cg_weights_view(w, "big", &d, &p), CG_ERR_UNSUPPORTED);
    cg_weights_free(w);

    put64(data + 8, (uint64_t)INT64_MIN);
    path = write_st8("neg.safetensors", json, data, 24);
    ck_assert_int_eq(cg_weights_open(path, &w), CG_OK);
    ck_assert_int_eq(cg_weights_get(w, "big", &t), CG_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "value -9223372036854775808"));
    cg_weights_free(w);
}
END_TEST

START_TEST(test_api_misuse) {
    cg_weights *w = NULL;
    ck_assert_int_eq(cg_weights_open(NULL, &w), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_weights_open("x", NULL), CG_ERR_INVALID_ARGUMENT);
    cg_weights_free(NULL);
    ck_assert_uint_eq(cg_weights_count(NULL), 0);
    ck_assert_ptr_null(cg_weights_name(NULL, 0));
    ck_assert_int_eq(cg_weights_find(NULL, "x"), -1);
    unsigned char data[4] = {0};
    const char *json = "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    const char *path = write_st8("ok.safetensors", json, data, 4);
    ck_assert_int_eq(cg_weights_open(path, &w), CG_OK);
    cg_tensor *t = NULL;
    ck_assert_int_eq(cg_weights_get(w, NULL, &t), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_weights_get(w, "x", NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_weights_get(w, "y", &t), CG_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "no tensor named 'y'"));
    ck_assert_int_eq(strncmp(cg_last_error(), path, strlen(path)), 0);
    cg_tensor_desc d;
    const void *p;
    ck_assert_int_eq(cg_weights_view(w, "y", &d, &p), CG_ERR_NOT_FOUND);
    ck_assert_int_eq(cg_weights_view(w, "x", NULL, &p), CG_ERR_INVALID_ARGUMENT);
    cg_weights_free(w);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Hostile files                                                       */

START_TEST(test_bad_file_level) {
    expect_open_fail(tu_path("missing.safetensors"), CG_ERR_IO, "cannot open");
    expect_open_fail(tu_dir, CG_ERR_IO, "not a regular file");
    expect_open_fail(tu_write_file("empty.safetensors", "", 0), CG_ERR_FORMAT,
                     "file is too short (0 bytes) to hold the 8-byte header length");
    expect_open_fail(tu_write_file("short.safetensors", "\x02\0\0\0\0", 5), CG_ERR_FORMAT,
                     "file is too short (5 bytes)");
    /* header length larger than the file */
    unsigned char b[32];
    put64(b, 100);
    memcpy(b + 8, "{}", 2);
    expect_open_fail(tu_write_file("hlen.safetensors", b, 10), CG_ERR_FORMAT,
                     "header length 100 is larger than the rest of the file (2 bytes)");
    /* absurd header lengths */
    put64(b, UINT64_MAX);
    expect_open_fail(tu_write_file("huge.safetensors", b, 10), CG_ERR_FORMAT,
                     "header length 18446744073709551615 exceeds the limit of 100000000 bytes");
    put64(b, 100000001);
    expect_open_fail(tu_write_file("huge2.safetensors", b, 10), CG_ERR_FORMAT, "exceeds the limit");
    /* header length 0: no JSON at all */
    put64(b, 0);
    expect_open_fail(tu_write_file("zero.safetensors", b, 8), CG_ERR_FORMAT,
                     "expected a JSON object, found the end of the header");
    /* truncated in the middle of the JSON (length prefix says more) */
    const char *json = "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    put64(b, strlen(json));
    memcpy(b + 8, json, 20);
    expect_open_fail(tu_write_file("trunc.safetensors", b, 28), CG_ERR_FORMAT,
                     "is larger than the rest of the file (20 bytes)");
    /* not UTF-8 */
    expect_st_fail("{\"\xff\":{}}", NULL, 0, CG_ERR_FORMAT, "header is not valid UTF-8 (at header byte 2)");
    expect_st_fail("{\"\xc0\xaf\":{}}", NULL, 0, CG_ERR_FORMAT, "not valid UTF-8");     /* overlong */
    expect_st_fail("{\"\xed\xa0\x80\":{}}", NULL, 0, CG_ERR_FORMAT, "not valid UTF-8"); /* surrogate */
}
END_TEST

START_TEST(test_bad_json) {
    unsigned char d4[4] = {0};
    expect_st_fail("[1, 2]", NULL, 0, CG_ERR_FORMAT, "expected a JSON object, found an array");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",", NULL, 0, CG_ERR_FORMAT,
                   "tensor 'x': expected a string key, found the end of the header");
    expect_st_fail("{\"x\" {}}", NULL, 0, CG_ERR_FORMAT,
                   "invalid JSON: expected ':' after a tensor name, found an object (at header byte 5)");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}", d4, 4, CG_ERR_FORMAT,
                   "expected a tensor name (string), found '}'");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} x", d4, 4, CG_ERR_FORMAT,
                   "invalid JSON: unexpected data after the header object");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}{}", d4, 4, CG_ERR_FORMAT,
                   "unexpected data after the header object");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[1,],\"data_offsets\":[0,4]}}", d4, 4, CG_ERR_FORMAT,
                   "tensor 'x': expected a non-negative integer in 'shape', found ']'");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\" \"shape\":[1],\"data_offsets\":[0,4]}}", d4, 4, CG_ERR_FORMAT,
                   "expected ',' or '}' in a tensor description, found a string");
    expect_st_fail("{\"x:{}}", NULL, 0, CG_ERR_FORMAT, "unterminated string");
    expect_st_fail("{'x':{}}", NULL, 0, CG_ERR_FORMAT, "expected a tensor name (string), found '''");
    expect_st_fail("{\"x\":[]}", NULL, 0, CG_ERR_FORMAT,
                   "tensor 'x': expected an object with 'dtype', 'shape' and 'data_offsets', "
                   "found an array");
    expect_st_fail("{\"x\":{}}", NULL, 0, CG_ERR_FORMAT, "tensor 'x': missing 'dtype'");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[1]}}", d4, 4, CG_ERR_FORMAT,
                   "tensor 'x': missing 'data_offsets'");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", d4, 4, CG_ERR_FORMAT,
                   "tensor 'x': missing 'shape'");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"foo\":1}}", d4, 4, CG_ERR_FORMAT,
                   "tensor 'x': unknown key 'foo'");
    /* strings */
    expect_st_fail("{\"a\\x\":{}}", NULL, 0, CG_ERR_FORMAT, "bad escape sequence");
    expect_st_fail("{\"a\\u12G4\":{}}", NULL, 0, CG_ERR_FORMAT, "bad \\u escape");
    expect_st_fail("{\"a\\u12\":{}}", NULL, 0, CG_ERR_FORMAT, "bad \\u escape");
    expect_st_fail("{\"a\\ud800\":{}}", NULL, 0, CG_ERR_FORMAT, "unpaired surrogate \\uD800");
    expect_st_fail("{\"a\\ud800\\u0041\":{}}", NULL, 0, CG_ERR_FORMAT, "unpaired surrogate");
    expect_st_fail("{\"a\\udc00\":{}}", NULL, 0, CG_ERR_FORMAT, "unpaired surrogate \\uDC00");
    expect_st_fail("{\"a\tb\":{}}", NULL, 0, CG_ERR_FORMAT, "unescaped control character 0x09 in a string");
    expect_st_fail("{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d4, 4, CG_ERR_FORMAT,
                   "tensor name 'a\\x00b' contains a NUL character");
}
END_TEST

START_TEST(test_bad_values) {
    unsigned char d16[16] = {0};
    /* floats, booleans, null, NaN, negatives where integers are expected */
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[2.0,2],\"data_offsets\":[0,16]}}", d16, 16, CG_ERR_FORMAT,
                   "tensor 'x': expected a non-negative integer in 'shape', found a "
                   "floating-point number");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,1.6e1]}}", d16, 16, CG_ERR_FORMAT,
                   "found a floating-point number");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[4e0],\"data_offsets\":[0,16]}}", d16, 16, CG_ERR_FORMAT,
                   "found a floating-point number");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[true],\"data_offsets\":[0,16]}}", d16, 16, CG_ERR_FORMAT,
                   "found a boolean");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[null],\"data_offsets\":[0,16]}}", d16, 16, CG_ERR_FORMAT,
                   "found null");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[NaN],\"data_offsets\":[0,16]}}", d16, 16, CG_ERR_FORMAT,
                   "found 'N'");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[-0,16]}}", d16, 16, CG_ERR_FORMAT,
                   "expected an integer in 'data_offsets', found a negative number");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]}}", d16, 16, CG_ERR_FORMAT,
                   "found a negative number");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[04],\"data_offsets\":[0,16]}}", d16, 16, CG_ERR_FORMAT,
                   "number with a leading zero");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,16]}}", d16, 16, CG_ERR_FORMAT,
                   "expected an array of integers for 'shape', found a number");
    expect_st_fail("{\"x\":{\"dtype\":32,\"shape\":[4],\"data_offsets\":[0,16]}}", d16, 16, CG_ERR_FORMAT,
                   "expected a string for 'dtype', found a number");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":{}}}", d16, 16, CG_ERR_FORMAT,
                   "expected an array [begin, end] for 'data_offsets'");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0]}}", d16, 16, CG_ERR_FORMAT,
                   "tensor 'x': 'data_offsets' must have exactly two integers");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[]}}", d16, 16, CG_ERR_FORMAT,
                   "exactly two integers");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16,16]}}", d16, 16, CG_ERR_FORMAT,
                   "exactly two integers");
    /* integers too large for their field */
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[9223372036854775808],"
                   "\"data_offsets\":[0,16]}}",
                   d16, 16, CG_ERR_FORMAT,
                   "a non-negative integer in 'shape' is too large (more than "
                   "9223372036854775807)");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],"
                   "\"data_offsets\":[0,18446744073709551616]}}",
                   d16, 16, CG_ERR_FORMAT, "too large");
    /* metadata */
    expect_st_fail("{\"__metadata__\":{\"k\":1}}", NULL, 0, CG_ERR_FORMAT,
                   "'__metadata__': expected a string value for key 'k', found a number");
    expect_st_fail("{\"__metadata__\":[]}", NULL, 0, CG_ERR_FORMAT,
                   "'__metadata__': expected an object of strings, found an array");
    expect_st_fail("{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", NULL, 0, CG_ERR_FORMAT,
                   "'__metadata__': duplicate key 'k'");
    expect_st_fail("{\"__metadata__\":{},\"__metadata__\":{}}", NULL, 0, CG_ERR_FORMAT, "duplicate key '__metadata__'");
}
END_TEST

START_TEST(test_bad_tensors) {
    unsigned char d[256] = {0};
    /* the message of the brief, byte for byte after the path */
    const char *path =
        write_st8("w.safetensors",
                  "{\"encoder.weight_ih_l0\":{\"dtype\":\"F32\",\"shape\":[12,4],\"data_offsets\":[0,96]}}", d, 96);
    cg_weights *w;
    ck_assert_int_eq(cg_weights_open(path, &w), CG_ERR_FORMAT);
    char want[800];
    snprintf(want, sizeof want,
             "%s: tensor 'encoder.weight_ih_l0': data_offsets [0, 96] give 96 bytes, expected "
             "192 for F32[12, 4]",
             path);
    ck_assert_str_eq(cg_last_error(), want);

    expect_st_fail("{\"x\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}", d, 16, CG_ERR_UNSUPPORTED,
                   "tensor 'x': unsupported dtype 'F64' (supported: F32, F16, BF16, I64, I32, I16, "
                   "I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E4M3FNUZ, F8_E5M2, F8_E5M2FNUZ, F8_E8M0)");
    expect_st_fail("{\"x\":{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}}", d, 8, CG_ERR_UNSUPPORTED,
                   "unsupported dtype 'f32'");
    expect_st_fail("{\"x\":{\"dtype\":\"C64\",\"shape\":[2],\"data_offsets\":[0,16]}}", d, 16, CG_ERR_UNSUPPORTED,
                   "tensor 'x': unsupported dtype 'C64'");
    /* packed float4 has no clgraph dtype (f4e2m1 is a byte per element) */
    expect_st_fail("{\"x\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]}}", d, 1, CG_ERR_UNSUPPORTED,
                   "tensor 'x': unsupported dtype 'F4'");
    expect_st_fail("{\"x\":{\"dtype\":\"bool\",\"shape\":[2],\"data_offsets\":[0,2]}}", d, 2, CG_ERR_UNSUPPORTED,
                   "tensor 'x': unsupported dtype 'bool'");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],"
                   "\"data_offsets\":[0,4]}}",
                   d, 4, CG_ERR_UNSUPPORTED, "tensor 'x': 'shape' has more than 8 dimensions, which is not supported");
    /* 8 dimensions are fine */
    ck_assert_int_eq(cg_weights_open(write_st8("eight.safetensors",
                                               "{\"x\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1],"
                                               "\"data_offsets\":[0,4]}}",
                                               d, 4),
                                     &w),
                     CG_OK);
    cg_weights_free(w);
    /* element counts and byte sizes that overflow 64 bits */
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
                   "\"data_offsets\":[0,0]}}",
                   d, 0, CG_ERR_FORMAT, "tensor 'x': shape F32[4294967296, 4294967296] has too many elements");
    expect_st_fail("{\"x\":{\"dtype\":\"I64\",\"shape\":[4611686018427387904],"
                   "\"data_offsets\":[0,0]}}",
                   d, 0, CG_ERR_FORMAT, "has too many elements");
    expect_st_fail("{\"x\":{\"dtype\":\"F16\",\"shape\":[3,3074457345618258603],"
                   "\"data_offsets\":[0,2]}}",
                   d, 2, CG_ERR_FORMAT, "has too many elements");
    /* a zero dimension makes any product 0 */
    ck_assert_int_eq(cg_weights_open(write_st8("zero.safetensors",
                                               "{\"x\":{\"dtype\":\"F32\",\"shape\":[0,9223372036854775807],"
                                               "\"data_offsets\":[0,0]}}",
                                               NULL, 0),
                                     &w),
                     CG_OK);
    cg_weights_free(w);
    /* offsets */
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", d, 8, CG_ERR_FORMAT,
                   "tensor 'x': data_offsets [0, 16] go past the end of the data section (8 bytes)");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[0],"
                   "\"data_offsets\":[18446744073709551615,18446744073709551615]}}",
                   d, 0, CG_ERR_FORMAT, "go past the end of the data section (0 bytes)");
    expect_st_fail("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", d, 8, CG_ERR_FORMAT,
                   "tensor 'x': data_offsets [8, 4] are reversed (begin > end)");
    expect_st_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                   "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
                   d, 24, CG_ERR_FORMAT, "tensor 'b': data_offsets [8, 24] overlap tensor 'a' [0, 16]");
    expect_st_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                   "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
                   d, 16, CG_ERR_FORMAT, "overlap tensor 'a' [0, 16]");
    expect_st_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                   "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]}}",
                   d, 16, CG_ERR_FORMAT, "tensor 'z': data_offsets [8, 8] overlap tensor 'a'");
    expect_st_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                   "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[20,24]}}",
                   d, 24, CG_ERR_FORMAT,
                   "tensor 'b': data_offsets [20, 24] leave a hole: bytes [16, 20) of the data "
                   "section belong to no tensor");
    expect_st_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", d, 8, CG_ERR_FORMAT,
                   "leave a hole: bytes [0, 4)");
    expect_st_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d, 12, CG_ERR_FORMAT,
                   "the data section has 12 bytes but the tensors cover only 4 (8 unused bytes "
                   "at the end)");
    expect_st_fail("{}", d, 1, CG_ERR_FORMAT, "cover only 0 (1 unused bytes at the end)");
    /* names */
    expect_st_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                   "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                   d, 8, CG_ERR_FORMAT, "duplicate tensor name 'a'");
    expect_st_fail("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],"
                   "\"data_offsets\":[0,4]}}",
                   d, 4, CG_ERR_FORMAT, "tensor 'a': duplicate key 'dtype'");
    expect_st_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"shape\":[1],"
                   "\"data_offsets\":[0,4]}}",
                   d, 4, CG_ERR_FORMAT, "tensor 'a': duplicate key 'shape'");
    /* a hostile name is shown escaped, on one line */
    expect_st_fail("{\"evil\\n\\u001b[31m\":{\"dtype\":\"F64\",\"shape\":[1],"
                   "\"data_offsets\":[0,8]}}",
                   d, 8, CG_ERR_UNSUPPORTED, "tensor 'evil\\x0a\\x1b[31m': unsupported dtype");
}
END_TEST

/* Flipping or cutting any byte of a valid file never crashes, and every
 * failure comes with a message that starts with the path. */
START_TEST(test_mutations) {
    FILE *f = fopen(CG_TEST_DATA_DIR "/small.safetensors", "rb");
    ck_assert_ptr_nonnull(f);
    unsigned char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    ck_assert_uint_gt(n, 8);
    unsigned char mut[4096];
    const unsigned char vals[] = {0x00, 0xff, '"', '{', '}', '[', ']', ',', ':', '9', '-', '\\'};
    for (size_t i = 0; i < n; i += 3) {
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(mut, buf, n);
            mut[i] = vals[v];
            const char *path = tu_write_file("mut.safetensors", mut, n);
            cg_weights *w;
            cg_status s = cg_weights_open(path, &w);
            if (s == CG_OK) {
                for (int k = 0; k < cg_weights_count(w); k++) {
                    cg_tensor *t;
                    if (cg_weights_get(w, cg_weights_name(w, k), &t) == CG_OK) cg_tensor_free(t);
                }
                cg_weights_free(w);
            } else {
                ck_assert_int_eq(strncmp(cg_last_error(), path, strlen(path)), 0);
            }
        }
    }
    for (size_t cut = 0; cut < n; cut++) {
        const char *path = tu_write_file("cut.safetensors", buf, cut);
        cg_weights *w;
        ck_assert_int_ne(cg_weights_open(path, &w), CG_OK);
        ck_assert_int_eq(strncmp(cg_last_error(), path, strlen(path)), 0);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Every dtype: files the safetensors package wrote, views, the writer */

static unsigned char *read_all(const char *path, size_t *len) {
    char *b = tu_read_text(path, len);
    ck_assert_msg(b != NULL, "cannot read %s", path);
    return (unsigned char *)b;
}

static void expect_bytes(const cg_tensor *t, const unsigned char *want, size_t n, const char *what) {
    ck_assert_uint_eq((size_t)cg_tensor_numel(t) * cg_dtype_size(cg_tensor_dtype(t)), n);
    ck_assert_msg(n == 0 || memcmp(cg_tensor_data_const(t), want, n) == 0, "%s: bytes differ", what);
}

/* <dtype>.safetensors: "a" and "b" (reversed) of one dtype, read in their
 * stored dtype, written back byte for byte as the package wrote them. */
START_TEST(test_package_files) {
    for (size_t k = 0; k < N_DTYPE_CASES; k++) {
        const dtype_case *c = &DTYPE_CASES[k];
        char src[512];
        snprintf(src, sizeof src, "%s/dtypes/%s.safetensors", CG_TEST_DATA_DIR, c->name);
        cg_weights *w;
        ck_assert_msg(cg_weights_open(src, &w) == CG_OK, "%s", cg_last_error());
        ck_assert_uint_eq(cg_weights_count(w), 2);
        cg_tensor *t[2];
        const char *names[2] = {"a", "b"};
        for (int i = 0; i < 2; i++) {
            unsigned char want[64];
            size_t n = dtype_case_bytes(c, i, want);
            ck_assert_int_eq(cg_weights_dtype(w, i), c->dtype);
            ck_assert_msg(cg_weights_get_as(w, names[i], c->dtype, &t[i]) == CG_OK, "%s", cg_last_error());
            ck_assert_int_eq(cg_tensor_ndim(t[i]), c->ndim);
            for (int d = 0; d < c->ndim; d++) ck_assert_int_eq(cg_tensor_dim(t[i], d), c->dims[d]);
            expect_bytes(t[i], want, n, c->name);
            cg_tensor_desc desc;
            const void *p;
            ck_assert_msg(cg_weights_view_as(w, names[i], c->dtype, &desc, &p) == CG_OK, "%s", cg_last_error());
            ck_assert_int_eq(desc.dtype, c->dtype);
            ck_assert_int_eq(memcmp(p, want, n), 0);
        }
        const char *out = tu_path("back.safetensors");
        ck_assert_msg(cg_weights_save(out, 2, names, (const cg_tensor *const *)t) == CG_OK, "%s", cg_last_error());
        size_t n1, n2;
        unsigned char *a = read_all(src, &n1), *b = read_all(out, &n2);
        ck_assert_msg(n1 == n2 && memcmp(a, b, n1) == 0, "%s: written bytes differ from the package's", c->name);
        free(a), free(b);
        cg_tensor_free(t[0]), cg_tensor_free(t[1]);
        cg_weights_free(w);
    }
}
END_TEST

/* mixed.safetensors: every dtype in one file laid out by the package. */
START_TEST(test_package_mixed) {
    cg_weights *w;
    const char *src = CG_TEST_DATA_DIR "/dtypes/mixed.safetensors";
    ck_assert_msg(cg_weights_open(src, &w) == CG_OK, "%s", cg_last_error());
    ck_assert_uint_eq(cg_weights_count(w), N_DTYPE_CASES);
    const cg_tensor *all[N_DTYPE_CASES];
    const char *names[N_DTYPE_CASES];
    for (size_t k = 0; k < N_DTYPE_CASES; k++) {
        const dtype_case *c = &DTYPE_CASES[k];
        unsigned char want[64];
        size_t n = dtype_case_bytes(c, 0, want);
        int i = cg_weights_find(w, c->name);
        ck_assert_int_ge(i, 0);
        ck_assert_int_eq(cg_weights_dtype(w, i), c->dtype);
        cg_tensor *t;
        ck_assert_msg(cg_weights_get_as(w, c->name, c->dtype, &t) == CG_OK, "%s", cg_last_error());
        expect_bytes(t, want, n, c->name);
        all[k] = t;
        names[k] = c->name;
    }
    /* written again (our layout), then read: the same tensors */
    const char *out = tu_path("mixed.safetensors");
    ck_assert_msg(cg_weights_save(out, (int)N_DTYPE_CASES, names, all) == CG_OK, "%s", cg_last_error());
    cg_weights *w2;
    ck_assert_msg(cg_weights_open(out, &w2) == CG_OK, "%s", cg_last_error());
    for (size_t k = 0; k < N_DTYPE_CASES; k++) {
        cg_tensor *t;
        ck_assert_int_eq(cg_weights_get_as(w2, names[k], DTYPE_CASES[k].dtype, &t), CG_OK);
        expect_bytes(t, cg_tensor_data_const(all[k]), (size_t)cg_tensor_numel(t) * cg_dtype_size(cg_tensor_dtype(t)),
                     names[k]);
        /* every tensor is aligned to its element size: the view is the mapping */
        cg_tensor_desc d;
        const void *p, *q;
        ck_assert_int_eq(cg_weights_view_as(w2, names[k], DTYPE_CASES[k].dtype, &d, &p), CG_OK);
        ck_assert_uint_eq((uintptr_t)p % cg_dtype_size(DTYPE_CASES[k].dtype), 0);
        ck_assert_int_eq(cg_weights_view_as(w2, names[k], DTYPE_CASES[k].dtype, &d, &q), CG_OK);
        ck_assert_ptr_eq(p, q);
        cg_tensor_free(t);
        cg_tensor_free((cg_tensor *)all[k]);
    }
    cg_weights_free(w2);
    cg_weights_free(w);
}
END_TEST

/* The writer's bytes for a file of four dtypes, built by hand: keys sorted
 * by name, data by element size then name, the header padded to 8. */
START_TEST(test_writer_layout) {
    int64_t one = 1, two = 2;
    cg_tensor *z, *a, *m, *b;
    ck_assert_int_eq(cg_tensor_create(CG_BOOL, 1, &two, &z), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_F16, 1, &one, &a), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_I64, 0, NULL, &m), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_F32, 1, &one, &b), CG_OK);
    ((unsigned char *)cg_tensor_data(z))[0] = 1;
    *(uint16_t *)cg_tensor_data(a) = 0x3C00;
    *(int64_t *)cg_tensor_data(m) = -2;
    *(float *)cg_tensor_data(b) = 1.0f;
    const char *names[4] = {"z", "a", "m", "b"};
    const cg_tensor *ts[4] = {z, a, m, b};
    const char *p = tu_path("l.safetensors");
    ck_assert_msg(cg_weights_save(p, 4, names, ts) == CG_OK, "%s", cg_last_error());
    const char *json = "{\"a\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[12,14]},"
                       "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
                       "\"m\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]},"
                       "\"z\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[14,16]}}";
    size_t jl = strlen(json), hl = (jl + 7) / 8 * 8;
    ck_assert_uint_eq(jl, 218); /* so six spaces of padding */
    unsigned char want[512];
    for (int i = 0; i < 8; i++) want[i] = (unsigned char)(hl >> (8 * i));
    memcpy(want + 8, json, jl);
    memset(want + 8 + jl, ' ', hl - jl);
    const unsigned char data[16] = {0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, /* m = -2 */
                                    0x00, 0x00, 0x80, 0x3F,                         /* b = 1.0f */
                                    0x00, 0x3C,                                     /* a = 1.0 */
                                    0x01, 0x00};                                    /* z */
    memcpy(want + 8 + hl, data, 16);
    size_t n;
    unsigned char *got = read_all(p, &n);
    ck_assert_uint_eq(n, 8 + hl + 16);
    ck_assert_int_eq(memcmp(got, want, n), 0);
    free(got);
    /* no tensors: "{}" and six spaces */
    p = tu_path("e.safetensors");
    ck_assert_int_eq(cg_weights_save(p, 0, NULL, NULL), CG_OK);
    got = read_all(p, &n);
    ck_assert_uint_eq(n, 16);
    ck_assert_int_eq(memcmp(got, "\x08\0\0\0\0\0\0\0{}      ", 16), 0);
    free(got);
    cg_weights *w;
    ck_assert_int_eq(cg_weights_open(p, &w), CG_OK);
    ck_assert_uint_eq(cg_weights_count(w), 0);
    cg_weights_free(w);
    /* names JSON needs to escape, and UTF-8, come back as they were */
    const char *odd[2] = {"q\"uote\\back\nline\x01\x7f", "na\xc3\xafve.\xe2\x82\xac"};
    const cg_tensor *two_t[2] = {a, b};
    p = tu_path("o.safetensors");
    ck_assert_msg(cg_weights_save(p, 2, odd, two_t) == CG_OK, "%s", cg_last_error());
    got = read_all(p, &n);
    ck_assert_ptr_nonnull(strstr((const char *)got + 8, "\"q\\\"uote\\\\back\\nline\\u0001\x7f\""));
    free(got);
    ck_assert_int_eq(cg_weights_open(p, &w), CG_OK);
    ck_assert_int_ge(cg_weights_find(w, odd[0]), 0);
    ck_assert_int_ge(cg_weights_find(w, odd[1]), 0);
    cg_weights_free(w);
    cg_tensor_free(z), cg_tensor_free(a), cg_tensor_free(m), cg_tensor_free(b);
}
END_TEST

/* Every dtype and shape through the writer and the reader. */
START_TEST(test_writer_roundtrip) {
    static const cg_dtype dts[] = {CG_F32, CG_I32,  CG_F16, CG_BF16, CG_I8,  CG_U8,
                                   CG_I64, CG_BOOL, CG_I16, CG_U16,  CG_U32, CG_U64};
    int64_t shapes[][8] = {{0}, {7}, {0, 3}, {2, 3, 5}, {1, 2, 1, 2, 1, 2, 1, 3}};
    int ranks[] = {0, 1, 2, 3, 8};
    cg_tensor *ts[60];
    char names[60][16];
    const char *np[60];
    int n = 0;
    for (int d = 0; d < 12; d++)
        for (int s = 0; s < 5; s++, n++) {
            ck_assert_int_eq(cg_tensor_create(dts[d], ranks[s], shapes[s], &ts[n]), CG_OK);
            unsigned char *b = cg_tensor_data(ts[n]);
            size_t bytes = (size_t)cg_tensor_numel(ts[n]) * cg_dtype_size(dts[d]);
            for (size_t i = 0; i < bytes; i++)
                b[i] = dts[d] == CG_BOOL ? (unsigned char)(i % 2) : (unsigned char)(i * 37 + (size_t)n);
            snprintf(names[n], sizeof names[n], "t%s.%d", cg_dtype_name(dts[d]), s);
            np[n] = names[n];
        }
    const char *p = tu_path("rt.safetensors");
    ck_assert_msg(cg_weights_save(p, n, np, (const cg_tensor *const *)ts) == CG_OK, "%s", cg_last_error());
    cg_weights *w;
    ck_assert_msg(cg_weights_open(p, &w) == CG_OK, "%s", cg_last_error());
    ck_assert_uint_eq(cg_weights_count(w), (size_t)n);
    for (int i = 0; i < n; i++) {
        int k = cg_weights_find(w, np[i]);
        ck_assert_int_ge(k, 0);
        ck_assert_int_eq(cg_weights_dtype(w, k), cg_tensor_dtype(ts[i]));
        cg_tensor *t;
        ck_assert_int_eq(cg_weights_get_as(w, np[i], cg_tensor_dtype(ts[i]), &t), CG_OK);
        ck_assert_int_eq(cg_tensor_ndim(t), cg_tensor_ndim(ts[i]));
        for (int d = 0; d < cg_tensor_ndim(t); d++) ck_assert_int_eq(cg_tensor_dim(t, d), cg_tensor_dim(ts[i], d));
        expect_bytes(t, cg_tensor_data_const(ts[i]),
                     (size_t)cg_tensor_numel(ts[i]) * cg_dtype_size(cg_tensor_dtype(ts[i])), np[i]);
        cg_tensor_free(t);
    }
    cg_weights_free(w);
    for (int i = 0; i < n; i++) cg_tensor_free(ts[i]);
}
END_TEST

/* A one-tensor file of `dtype` with the given bytes (8-aligned data). */
static const char *one_tensor(const char *file, const char *dtype, int n, const void *data, size_t bytes) {
    char json[160];
    snprintf(json, sizeof json, "{\"x\":{\"dtype\":\"%s\",\"shape\":[%d],\"data_offsets\":[0,%zu]}}", dtype, n, bytes);
    return write_st8(file, json, data, bytes);
}

/* What each stored dtype is viewed and copied as; the errors of the rest. */
START_TEST(test_views_by_dtype) {
    cg_weights *w;
    cg_tensor_desc d;
    const void *p;
    cg_tensor *t;
    /* the legacy view, desc and get: f32 for floats, i32 for I32/I64, else stored */
    static const struct {
        const char *st;
        cg_dtype stored, legacy;
    } c[] = {{"F32", CG_F32, CG_F32}, {"F16", CG_F16, CG_F32}, {"BF16", CG_BF16, CG_F32}, {"I32", CG_I32, CG_I32},
             {"I64", CG_I64, CG_I32}, {"I8", CG_I8, CG_I8},    {"U8", CG_U8, CG_U8},      {"BOOL", CG_BOOL, CG_BOOL},
             {"I16", CG_I16, CG_I16}, {"U16", CG_U16, CG_U16}, {"U32", CG_U32, CG_U32},   {"U64", CG_U64, CG_U64}};
    unsigned char zeros[16] = {0};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        size_t es = cg_dtype_size(c[i].stored);
        const char *path = one_tensor("v.safetensors", c[i].st, 2, zeros, 2 * es);
        ck_assert_msg(cg_weights_open(path, &w) == CG_OK, "%s", cg_last_error());
        ck_assert_int_eq(cg_weights_dtype(w, 0), c[i].stored);
        ck_assert_int_eq(cg_weights_dtype(w, 1), 0);
        ck_assert_int_eq(cg_weights_desc(w, 0, &d), CG_OK);
        ck_assert_int_eq(d.dtype, c[i].legacy);
        ck_assert_int_eq(cg_weights_stored_desc(w, 0, &d), CG_OK);
        ck_assert_int_eq(d.dtype, c[i].stored);
        ck_assert_int_eq(cg_weights_view(w, "x", &d, &p), CG_OK);
        ck_assert_int_eq(d.dtype, c[i].legacy);
        ck_assert_int_eq(cg_weights_get(w, "x", &t), CG_OK);
        ck_assert_int_eq(cg_tensor_dtype(t), c[i].legacy);
        cg_tensor_free(t);
        /* every declared dtype: viewable or a clear error */
        for (int want = 1; want <= 8; want++) {
            cg_status s = cg_weights_view_as(w, "x", (cg_dtype)want, &d, &p);
            int ok = cg_weights_viewable(c[i].stored, (cg_dtype)want);
            ck_assert_int_eq(ok, want == (int)c[i].stored || (want == CG_F32 && c[i].legacy == CG_F32) ||
                                     (want == CG_I32 && c[i].stored == CG_I64) ||
                                     (c[i].stored == CG_F32 && (want == CG_F16 || want == CG_BF16)) ||
                                     (c[i].stored == CG_I8 && want == CG_F32));
            if (ok && c[i].stored == CG_I8 && want == CG_F32) { /* needs x_scale, which this file lacks */
                ck_assert_int_eq(s, CG_ERR_UNSUPPORTED);
                ck_assert_msg(strstr(cg_last_error(), "tensor 'x' is an I8 matrix, which is viewed as f32 only with "
                                                      "its scales: an F32 tensor 'x_scale' of [") != NULL,
                              "%s", cg_last_error());
                continue;
            }
            if (ok) {
                ck_assert_msg(s == CG_OK, "%s as %s: %s", c[i].st, cg_dtype_name((cg_dtype)want), cg_last_error());
                ck_assert_int_eq(d.dtype, want);
                ck_assert_int_eq(d.ndim, 1);
                ck_assert_int_eq(d.dims[0], 2);
                continue;
            }
            ck_assert_int_eq(s, CG_ERR_UNSUPPORTED);
            ck_assert_ptr_null(p);
            char msg[256];
            snprintf(msg, sizeof msg, ": tensor 'x' is stored as %s, which cannot be viewed as %s (", c[i].st,
                     cg_dtype_name((cg_dtype)want));
            ck_assert_msg(strstr(cg_last_error(), msg) != NULL, "%s", cg_last_error());
        }
        cg_weights_free(w);
    }
}
END_TEST

/* cg_tensor_quantize_rows against values worked out by hand (ties to
 * even, a zero row), its errors; the result saved and read back: the int8
 * matrix viewed as f32 is scale times q, and a scale tensor of the wrong
 * shape is refused naming both. */
START_TEST(test_int8_rows) {
    static const float v[3][5] = {{1, -2, 0.5f, 127, -63.5f}, {0, 0, 0, 0, 0}, {0.25f, -0.5f, 0.125f, 0, 0.375f}};
    static const int8_t want_q[3][5] = {{1, -2, 0, 127, -64}, {0, 0, 0, 0, 0}, {64, -127, 32, 0, 95}};
    static const float want_s[3] = {1.0f, 0.0f, 0.5f / 127.0f};
    cg_tensor *t, *q, *sc;
    const int64_t dims[2] = {3, 5};
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, dims, &t), CG_OK);
    memcpy(cg_tensor_data(t), v, sizeof v);
    ck_assert_int_eq(cg_tensor_quantize_rows(t, &q, &sc), CG_OK);
    ck_assert_int_eq(cg_tensor_dtype(q), CG_I8);
    ck_assert_int_eq(cg_tensor_dtype(sc), CG_F32);
    ck_assert_int_eq(cg_tensor_ndim(sc), 1);
    ck_assert_mem_eq(cg_tensor_data_const(q), want_q, sizeof want_q);
    for (int r = 0; r < 3; r++) ck_assert_float_eq(((const float *)cg_tensor_data_const(sc))[r], want_s[r]);
    /* saved as w and w_scale: w viewed as f32 is scale * q */
    const char *path = tu_path("q.safetensors");
    const char *names[2] = {"w", "w_scale"};
    const cg_tensor *ts[2] = {q, sc};
    ck_assert_int_eq(cg_weights_save(path, 2, names, ts), CG_OK);
    cg_weights *w;
    cg_tensor_desc d;
    const void *p;
    ck_assert_int_eq(cg_weights_open(path, &w), CG_OK);
    ck_assert_msg(cg_weights_view_as(w, "w", CG_F32, &d, &p) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(d.dtype, CG_F32);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 5; c++) ck_assert_float_eq(((const float *)p)[r * 5 + c], want_s[r] * (float)want_q[r][c]);
    ck_assert_int_eq(cg_weights_view_as(w, "w", CG_I8, &d, &p), CG_OK);
    ck_assert_mem_eq(p, want_q, sizeof want_q);
    cg_weights_free(w);
    /* scales of the wrong length */
    cg_tensor *short_s;
    const int64_t two = 2;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 1, &two, &short_s), CG_OK);
    ts[1] = short_s;
    ck_assert_int_eq(cg_weights_save(path, 2, names, ts), CG_OK);
    ck_assert_int_eq(cg_weights_open(path, &w), CG_OK);
    ck_assert_int_eq(cg_weights_view_as(w, "w", CG_F32, &d, &p), CG_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(cg_last_error(), "tensor 'w' is an I8 matrix, which is viewed as f32 only with its scales: "
                                          "an F32 tensor 'w_scale' of [3]") != NULL,
                  "%s", cg_last_error());
    cg_weights_free(w);
    cg_tensor_free(short_s);
    cg_tensor_free(q);
    cg_tensor_free(sc);
    /* a NaN, named by its row; not a matrix; not f32 */
    ((float *)cg_tensor_data(t))[7] = NAN;
    ck_assert_int_eq(cg_tensor_quantize_rows(t, &q, &sc), CG_ERR_UNSUPPORTED);
    ck_assert_ptr_null(q);
    ck_assert_ptr_null(sc);
    ck_assert_msg(strstr(cg_last_error(), "row 1 holds a NaN or an infinity") != NULL, "%s", cg_last_error());
    cg_tensor_free(t);
    ck_assert_int_eq(cg_tensor_create(CG_F32, 1, dims, &t), CG_OK);
    ck_assert_int_eq(cg_tensor_quantize_rows(t, &q, &sc), CG_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(cg_last_error(), "it must be f32 with 2 dims") != NULL, "%s", cg_last_error());
    cg_tensor_free(t);
    ck_assert_int_eq(cg_tensor_create(CG_I32, 2, dims, &t), CG_OK);
    ck_assert_int_eq(cg_tensor_quantize_rows(t, &q, &sc), CG_ERR_UNSUPPORTED);
    ck_assert_int_eq(cg_tensor_quantize_rows(NULL, &q, &sc), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_tensor_quantize_rows(t, NULL, &sc), CG_ERR_INVALID_ARGUMENT);
    cg_tensor_free(t);
}
END_TEST

static int pick_matrices(const char *name, cg_dtype stored, int ndim, void *user) {
    (void)stored;
    ++*(int *)user;
    return ndim == 2 && strstr(name, "weight") != NULL;
}

/* Opens `path` after writing the tensors names[i] (f32 data[i] of shape
 * dims[i], or bf16 bits when bf16[i]). */
static cg_weights *narrow_fixture(const char *path, int n, const char *const *names, const int64_t (*dims)[2],
                                  const int *ndim, const void *const *data, const int *bf16) {
    cg_tensor *ts[8];
    for (int i = 0; i < n; i++) {
        const cg_dtype dt = bf16[i] ? CG_BF16 : CG_F32;
        ck_assert_int_eq(cg_tensor_create(dt, ndim[i], dims[i], &ts[i]), CG_OK);
        memcpy(cg_tensor_data(ts[i]), data[i], (size_t)cg_tensor_numel(ts[i]) * cg_dtype_size(dt));
    }
    ck_assert_int_eq(cg_weights_save(path, n, names, (const cg_tensor *const *)ts), CG_OK);
    for (int i = 0; i < n; i++) cg_tensor_free(ts[i]);
    cg_weights *w;
    ck_assert_int_eq(cg_weights_open(path, &w), CG_OK);
    return w;
}

/* cg_weights_pick_products: what `clgraph quantize` narrows. */
START_TEST(pick_products_rule) {
    int emb = 1;
    ck_assert(cg_weights_pick_products("decoder.out.weight", CG_F32, 2, NULL));
    ck_assert(cg_weights_pick_products("encoder.rnn.weight_ih_l0", CG_F32, 2, NULL));
    ck_assert(cg_weights_pick_products("encoder.rnn.weight_hh_l0_reverse", CG_F32, 2, NULL));
    ck_assert(!cg_weights_pick_products("decoder.out.bias", CG_F32, 1, NULL));
    ck_assert(!cg_weights_pick_products("decoder.out.weight", CG_F32, 1, NULL));
    ck_assert(!cg_weights_pick_products("decoder.out.weight", CG_BF16, 2, NULL));
    ck_assert(!cg_weights_pick_products("decoder.out.weights", CG_F32, 2, NULL));
    ck_assert(!cg_weights_pick_products("src_embed.weight", CG_F32, 2, NULL));
    ck_assert(cg_weights_pick_products("src_embed.weight", CG_F32, 2, &emb));
    ck_assert(!cg_weights_pick_products(NULL, CG_F32, 2, NULL));
}
END_TEST

/* cg_weights_narrow against hand-worked values: int8 (scales added, a bf16
 * matrix widened first), bf16 rounding to nearest even, tensors not picked
 * or already narrow copied as stored; cg_weights_write round trip; the
 * clashing NAME_scale, an unconvertible tensor and bad arguments. */
START_TEST(test_narrow) {
    static const float a[3][5] = {{1, -2, 0.5f, 127, -63.5f}, {0, 0, 0, 0, 0}, {0.25f, -0.5f, 0.125f, 0, 0.375f}};
    static const int8_t a_q[3][5] = {{1, -2, 0, 127, -64}, {0, 0, 0, 0, 0}, {64, -127, 32, 0, 95}};
    static const float a_s[3] = {1.0f, 0.0f, 0.5f / 127.0f};
    static const uint16_t b[2][2] = {{0x3F80, 0xC000}, {0x3F00, 0x4080}}; /* bf16 1, -2; 0.5, 4 */
    static const int8_t b_q[2][2] = {{64, -127}, {16, 127}};              /* 63.5 ties to 64; 15.875 */
    static const float c[1][2] = {{1.00390625f, 1.01171875f}};            /* halfway: to even */
    static const uint16_t c_bf16[2] = {0x3F80, 0x3F82};
    static const float bias[3] = {0.1f, 0.2f, 0.3f};
    const char *names[4] = {"a.weight", "a.bias", "b.weight", "c.weight"};
    const int64_t dims[4][2] = {{3, 5}, {3, 0}, {2, 2}, {1, 2}};
    const int ndim[4] = {2, 1, 2, 2}, bf16[4] = {0, 0, 1, 0};
    const void *data[4] = {a, bias, b, c};
    cg_weights *w = narrow_fixture(tu_path("n.safetensors"), 4, names, dims, ndim, data, bf16), *q;
    int asked = 0;
    ck_assert_msg(cg_weights_narrow(w, CG_I8, pick_matrices, &asked, &q) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(asked, 4);
    ck_assert_int_eq(cg_weights_count(q), 7);
    const char *path = tu_path("n8.safetensors");
    ck_assert_msg(cg_weights_write(q, path) == CG_OK, "%s", cg_last_error());
    cg_weights_free(q);
    ck_assert_int_eq(cg_weights_open(path, &q), CG_OK);
    struct {
        const char *name;
        cg_dtype dt;
        const void *want;
        size_t bytes;
    } want[] = {{"a.weight", CG_I8, a_q, sizeof a_q},  {"a.weight_scale", CG_F32, a_s, sizeof a_s},
                {"a.bias", CG_F32, bias, sizeof bias}, {"b.weight", CG_I8, b_q, sizeof b_q},
                {"c.weight", CG_I8, NULL, 2},          {"c.weight_scale", CG_F32, NULL, 4},
                {"b.weight_scale", CG_F32, NULL, 8}};
    for (int i = 0; i < 7; i++) {
        cg_tensor *t;
        ck_assert_msg(cg_weights_get_as(q, want[i].name, want[i].dt, &t) == CG_OK, "%s", cg_last_error());
        ck_assert_int_eq(cg_weights_dtype(q, cg_weights_find(q, want[i].name)), want[i].dt);
        ck_assert_uint_eq((size_t)cg_tensor_numel(t) * cg_dtype_size(want[i].dt), want[i].bytes);
        if (want[i].want) ck_assert_mem_eq(cg_tensor_data_const(t), want[i].want, want[i].bytes);
        cg_tensor_free(t);
    }
    cg_tensor *t;
    ck_assert_int_eq(cg_weights_get_as(q, "b.weight_scale", CG_F32, &t), CG_OK);
    ck_assert_float_eq(((const float *)cg_tensor_data_const(t))[0], 2.0f / 127.0f);
    ck_assert_float_eq(((const float *)cg_tensor_data_const(t))[1], 4.0f / 127.0f);
    cg_tensor_free(t);
    /* narrowed again: already int8, nothing asked, nothing added */
    cg_weights *q2;
    asked = 0;
    ck_assert_int_eq(cg_weights_narrow(q, CG_I8, pick_matrices, &asked, &q2), CG_OK);
    ck_assert_int_eq(asked, 4); /* the bias and the three scales */
    ck_assert_int_eq(cg_weights_count(q2), 7);
    cg_weights_free(q2);
    cg_weights_free(q);
    /* a NAME_scale of its own where the scales would go */
    const char *clash[2] = {"x.weight", "x.weight_scale"};
    const int64_t cdims[2][2] = {{1, 2}, {1, 0}};
    const int cnd[2] = {2, 1}, cbf[2] = {0, 0};
    const void *cdata[2] = {c, bias};
    q = narrow_fixture(tu_path("clash.safetensors"), 2, clash, cdims, cnd, cdata, cbf);
    q2 = (cg_weights *)1;
    ck_assert_int_eq(cg_weights_narrow(q, CG_I8, pick_matrices, &asked, &q2), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(q2);
    ck_assert_msg(strstr(cg_last_error(), "clash.safetensors: tensor 'x.weight_scale' exists already, where the int8 "
                                          "scales of 'x.weight' would go") != NULL,
                  "%s", cg_last_error());
    /* bf16 of the same file: rounded to nearest even, no scales */
    ck_assert_int_eq(cg_weights_narrow(q, CG_BF16, pick_matrices, &asked, &q2), CG_OK);
    ck_assert_int_eq(cg_weights_count(q2), 2);
    ck_assert_int_eq(cg_weights_get_as(q2, "x.weight", CG_BF16, &t), CG_OK);
    ck_assert_mem_eq(cg_tensor_data_const(t), c_bf16, sizeof c_bf16);
    cg_tensor_free(t);
    cg_weights_free(q2);
    cg_weights_free(q);
    /* a NaN in a picked matrix: the file, the tensor and the row */
    const float nan_row[1][2] = {{1.0f, NAN}};
    const void *ndata[1] = {nan_row};
    q = narrow_fixture(tu_path("nan.safetensors"), 1, clash, cdims, cnd, ndata, cbf);
    ck_assert_int_eq(cg_weights_narrow(q, CG_I8, pick_matrices, &asked, &q2), CG_ERR_UNSUPPORTED);
    ck_assert_ptr_null(q2);
    ck_assert_msg(strstr(cg_last_error(), "nan.safetensors: tensor 'x.weight' to i8: ") != NULL &&
                      strstr(cg_last_error(), "row 0 holds a NaN or an infinity") != NULL,
                  "%s", cg_last_error());
    ck_assert_int_eq(cg_weights_narrow(q, CG_F32, pick_matrices, &asked, &q2), CG_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(cg_last_error(), "to bf16, f16 or int8, not f32") != NULL, "%s", cg_last_error());
    ck_assert_int_eq(cg_weights_narrow(q, CG_I8, NULL, &asked, &q2), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_weights_narrow(NULL, CG_I8, pick_matrices, &asked, &q2), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_weights_write(q, NULL), CG_ERR_INVALID_ARGUMENT);
    cg_weights_free(q);
    cg_weights_free(w);
}
END_TEST

/* Copies in any dtype cg_tensor_convert makes, with its errors. */
START_TEST(test_get_as) {
    cg_weights *w;
    cg_tensor *t;
    const unsigned char i64[24] = {1,    0,    0,    0,    0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0, 1, 0, 0, 0,    0,    0,    0}; /* 1, -1, 256 */
    const char *path = one_tensor("g.safetensors", "I64", 3, i64, 24);
    ck_assert_int_eq(cg_weights_open(path, &w), CG_OK);
    ck_assert_int_eq(cg_weights_get_as(w, "x", CG_I32, &t), CG_OK);
    ck_assert_int_eq(((const int32_t *)cg_tensor_data_const(t))[2], 256);
    cg_tensor_free(t);
    ck_assert_int_eq(cg_weights_get_as(w, "x", CG_I8, &t), CG_ERR_UNSUPPORTED);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "tensor 'x': element 2 has value 256, which does not fit in i8"));
    ck_assert_int_eq(strncmp(cg_last_error(), path, strlen(path)), 0);
    ck_assert_int_eq(cg_weights_get_as(w, "x", CG_F32, &t), CG_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "tensor 'x' is stored as I64, which is not converted to f32"));
    ck_assert_int_eq(cg_weights_get_as(w, "x", (cg_dtype)0, &t), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_weights_get_as(w, "x", CG_I32, NULL), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_weights_get_as(w, "y", CG_I32, &t), CG_ERR_NOT_FOUND);
    cg_weights_free(w);
    /* F32 narrowed to F16 / BF16, rounded to nearest even */
    const unsigned char f32[8] = {0x00, 0x10, 0x80, 0x3f, 0x00, 0x80, 0x81, 0x3f}; /* 0x3F801000, 0x3F818000 */
    path = one_tensor("f.safetensors", "F32", 2, f32, 8);
    ck_assert_int_eq(cg_weights_open(path, &w), CG_OK);
    ck_assert_int_eq(cg_weights_get_as(w, "x", CG_F16, &t), CG_OK);
    ck_assert_uint_eq(((const uint16_t *)cg_tensor_data_const(t))[0], 0x3C00);
    cg_tensor_free(t);
    ck_assert_int_eq(cg_weights_get_as(w, "x", CG_BF16, &t), CG_OK);
    ck_assert_uint_eq(((const uint16_t *)cg_tensor_data_const(t))[1], 0x3F82);
    cg_tensor_free(t);
    cg_weights_free(w);
    /* a BOOL byte that is no bool: on access, named */
    const unsigned char bools[3] = {1, 0, 7};
    path = one_tensor("b.safetensors", "BOOL", 3, bools, 3);
    ck_assert_int_eq(cg_weights_open(path, &w), CG_OK);
    cg_tensor_desc d;
    const void *p;
    ck_assert_int_eq(cg_weights_view_as(w, "x", CG_BOOL, &d, &p), CG_ERR_FORMAT);
    ck_assert_ptr_nonnull(
        strstr(cg_last_error(), "tensor 'x': element 2 of the BOOL tensor is 7, not 0 (false) or 1 (true)"));
    ck_assert_int_eq(cg_weights_get(w, "x", &t), CG_ERR_FORMAT);
    ck_assert_int_eq(cg_weights_get_as(w, "x", CG_I32, &t), CG_ERR_FORMAT);
    ck_assert_ptr_null(t);
    cg_weights_free(w);
}
END_TEST

/* Each writer error: one line naming the file; nothing left behind, an
 * existing file untouched. */
static void expect_save_fail(int line, const char *path, int n, const char *const *names, const cg_tensor *const *ts,
                             cg_status want, const char *substr) {
    cg_status s = cg_weights_save(path, n, names, ts);
    const char *msg = cg_last_error();
    ck_assert_msg(s == want, "line %d: status %s, want %s (%s)", line, cg_status_name(s), cg_status_name(want), msg);
    ck_assert_msg(strncmp(msg, path, strlen(path)) == 0, "line %d: message lacks the path: %s", line, msg);
    ck_assert_msg(strstr(msg, substr) != NULL, "line %d: message '%s' lacks '%s'", line, msg, substr);
    ck_assert_msg(strchr(msg, '\n') == NULL, "line %d: message has a newline", line);
}
#define expect_save_fail(...) expect_save_fail(__LINE__, __VA_ARGS__)

START_TEST(test_writer_errors) {
    int64_t one = 1;
    cg_tensor *t;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 1, &one, &t), CG_OK);
    const cg_tensor *ts[2] = {t, t};
    const char *p = tu_write_file("keep.safetensors", "old", 3);
    const char *dup[2] = {"w", "w"};
    expect_save_fail(p, 2, dup, ts, CG_ERR_INVALID_ARGUMENT, "duplicate tensor name 'w'");
    const char *empty[1] = {""};
    expect_save_fail(p, 1, empty, ts, CG_ERR_INVALID_ARGUMENT, "the name of tensor 0 is empty");
    const char *null_name[2] = {"a", NULL};
    expect_save_fail(p, 2, null_name, ts, CG_ERR_INVALID_ARGUMENT, "the name of tensor 1 is NULL");
    const char *meta[1] = {"__metadata__"};
    expect_save_fail(p, 1, meta, ts, CG_ERR_INVALID_ARGUMENT, "'__metadata__' is reserved");
    const char *bad_utf8[1] = {"a\xff\x1b"};
    expect_save_fail(p, 1, bad_utf8, ts, CG_ERR_INVALID_ARGUMENT, "tensor name 'a\\xff\\x1b' is not valid UTF-8");
    const char *ok[2] = {"a", "b"};
    const cg_tensor *null_t[2] = {t, NULL};
    expect_save_fail(p, 2, ok, null_t, CG_ERR_INVALID_ARGUMENT, "tensor 'b' is NULL");
    expect_save_fail(p, -1, ok, ts, CG_ERR_INVALID_ARGUMENT, "bad tensor list (n = -1)");
    expect_save_fail(p, 1, NULL, ts, CG_ERR_INVALID_ARGUMENT, "bad tensor list");
    char buf[8];
    tu_slurp(p, buf, sizeof buf);
    ck_assert_str_eq(buf, "old");
    ck_assert_int_eq(cg_weights_save(NULL, 0, NULL, NULL), CG_ERR_INVALID_ARGUMENT);
    /* I/O: a missing directory, a directory in the way of the rename */
    expect_save_fail(tu_path("no/such/dir/w.safetensors"), 1, ok, ts, CG_ERR_IO,
                     "cannot create a temporary file in its directory: No such file or directory");
    ck_assert_int_eq(mkdir(tu_path("d"), 0755), 0);
    expect_save_fail(tu_path("d"), 1, ok, ts, CG_ERR_IO,
                     "cannot finish writing (sync, close or rename): Is a directory");
    /* nothing but keep.safetensors and d is left in the directory */
    DIR *dir = opendir(tu_dir);
    ck_assert_ptr_nonnull(dir);
    int entries = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) entries++;
    closedir(dir);
    ck_assert_int_eq(entries, 2);
    /* a successful write replaces the old file whole */
    ck_assert_int_eq(cg_weights_save(p, 1, ok, ts), CG_OK);
    cg_weights *w;
    ck_assert_int_eq(cg_weights_open(p, &w), CG_OK);
    ck_assert_uint_eq(cg_weights_count(w), 1);
    cg_weights_free(w);
    cg_tensor_free(t);
}
END_TEST

static Suite *safetensors_suite(void) {
    Suite *s = suite_create("safetensors");
    TCase *ok = tcase_create("valid");
    tcase_add_checked_fixture(ok, setup, tu_teardown_dir);
    tcase_add_test(ok, test_all_dtypes);
    tcase_add_test(ok, test_view_zero_copy);
    tcase_add_test(ok, test_view_misaligned_f32);
    tcase_add_test(ok, test_view_threads);
    tcase_add_test(ok, test_empty_scalar_metadata);
    tcase_add_test(ok, test_escaped_names);
    tcase_add_test(ok, test_many_tensors);
    tcase_add_test(ok, test_python_file);
    tcase_add_test(ok, test_i64_out_of_range);
    tcase_add_test(ok, test_api_misuse);
    tcase_add_test(ok, test_package_files);
    tcase_add_test(ok, test_package_mixed);
    tcase_add_test(ok, test_writer_layout);
    tcase_add_test(ok, test_writer_roundtrip);
    tcase_add_test(ok, test_views_by_dtype);
    tcase_add_test(ok, test_get_as);
    tcase_add_test(ok, test_int8_rows);
    tcase_add_test(ok, test_narrow);
    tcase_add_test(ok, pick_products_rule);
    tcase_add_test(ok, test_writer_errors);
    suite_add_tcase(s, ok);
    TCase *bad = tcase_create("hostile");
    tcase_add_checked_fixture(bad, setup, tu_teardown_dir);
    tcase_set_timeout(bad, 60);
    tcase_add_test(bad, test_bad_file_level);
    tcase_add_test(bad, test_bad_json);
    tcase_add_test(bad, test_bad_values);
    tcase_add_test(bad, test_bad_tensors);
    tcase_add_test(bad, test_mutations);
    suite_add_tcase(s, bad);
    return s;
}

int main(void) { return tu_run_suite(safetensors_suite(), 0); }
