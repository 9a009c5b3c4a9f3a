/* base/: shapes and their formatting, dtypes (names, sizes, parsing, the
 * float conversions), FNV-1a, the cache directory, atomic file writes,
 * opening and reading files, the measurement logs. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arena.h"
#include "atomic_file.h"
#include "cache.h"
#include "clgraph/clgraph.h"
#include "dtype.h"
#include "hash.h"
#include "measure_log.h"
#include "read_file.h"
#include "shape.h"
#include "strbuf.h"
#include "test_util.h"

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

/* FNV-1a 64 of the reference vectors (Fowler, Noll, Vo: "" and "a"; "foobar"). */
/* Many small objects, strings packed between them, one object bigger than
 * a chunk: every pointer aligned as promised, every byte still what was
 * written (no two allocations overlap), and one free releases it all (the
 * ASan build checks the leak half). */
START_TEST(test_arena) {
    cg_arena a = {0};
    enum { N = 20000 };
    unsigned char **p = calloc(N, sizeof *p);
    char **s = calloc(N, sizeof *s);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(s);
    for (int i = 0; i < N; i++) {
        size_t n = (size_t)(i % 97) + 1;
        p[i] = cg_arena_alloc(&a, n);
        ck_assert_ptr_nonnull(p[i]);
        ck_assert_uint_eq((uintptr_t)p[i] % _Alignof(max_align_t), 0);
        memset(p[i], i & 0xff, n);
        char name[32];
        snprintf(name, sizeof name, "x%d", i);
        s[i] = cg_arena_strdup(&a, name);
        ck_assert_ptr_nonnull(s[i]);
    }
    unsigned char *big = cg_arena_alloc(&a, 200000);
    ck_assert_ptr_nonnull(big);
    memset(big, 0xab, 200000);
    unsigned char *after = cg_arena_alloc(&a, 8); /* still fits the head chunk's room */
    ck_assert_ptr_nonnull(after);
    memset(after, 0xcd, 8);
    for (int i = 0; i < N; i++) {
        size_t n = (size_t)(i % 97) + 1;
        for (size_t k = 0; k < n; k++) ck_assert_uint_eq(p[i][k], (unsigned)(i & 0xff));
        char name[32];
        snprintf(name, sizeof name, "x%d", i);
        ck_assert_str_eq(s[i], name);
    }
    for (int k = 0; k < 200000; k++) ck_assert_uint_eq(big[k], 0xab);
    ck_assert_ptr_null(cg_arena_alloc(&a, SIZE_MAX - 8));
    cg_arena_free(&a);
    ck_assert_ptr_null(a.head);
    free(p);
    free(s);
}
END_TEST

/* cg_strbuf_cat appends without printf; cg_shape_format (which no longer
 * uses printf either) cuts at the buffer and keeps it terminated. */
START_TEST(test_strbuf_cat_and_shape_cut) {
    cg_strbuf b = {0};
    for (int i = 0; i < 1000; i++) cg_strbuf_cat(&b, "ab", "", "c%d", (const char *)NULL);
    char *t = cg_strbuf_take(&b);
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(strlen(t), 5000);
    ck_assert(!strncmp(t, "abc%dabc%d", 10));
    free(t);
    const int64_t dims[3] = {2, -2, -1};
    const char *syms[1] = {"B"};
    char buf[64];
    cg_shape_format(buf, sizeof buf, CG_F32, 3, dims, syms, 1);
    ck_assert_str_eq(buf, "f32[2, B, ?]");
    const int64_t big[2] = {1234567890123LL, -3};
    cg_shape_format(buf, sizeof buf, CG_I32, 2, big, syms, 1);
    ck_assert_str_eq(buf, "i32[1234567890123, s1]");
    char small[8];
    cg_shape_format(small, sizeof small, CG_F32, 3, dims, syms, 1);
    ck_assert_str_eq(small, "f32[2, ");
}
END_TEST

START_TEST(test_fnv) {
    ck_assert_uint_eq(cg_fnv1a(CG_FNV_BASIS, "", 0), 0xcbf29ce484222325ull);
    ck_assert_uint_eq(cg_fnv1a(CG_FNV_BASIS, "a", 1), 0xaf63dc4c8601ec8cull);
    ck_assert_uint_eq(cg_fnv1a(CG_FNV_BASIS, "foobar", 6), 0x85944171f73967e8ull);
    /* the string form hashes the terminator too: "ab","c" differs from "a","bc" */
    ck_assert_uint_ne(cg_fnv1a_str(cg_fnv1a_str(CG_FNV_BASIS, "ab"), "c"),
                      cg_fnv1a_str(cg_fnv1a_str(CG_FNV_BASIS, "a"), "bc"));
}
END_TEST

static int count_entries(const char *dir) {
    char cmd[800];
    int n = -1;
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fscanf(f, "%d", &n), 1);
    pclose(f);
    return n;
}

/* $CLGRAPH_CACHE_DIR, else $XDG_CACHE_HOME/clgraph, else
 * $HOME/.cache/clgraph, else none; writes are atomic and leave nothing
 * behind; a directory that cannot be made disables caching. */
START_TEST(test_cache_dir) {
    char tmp[] = "/tmp/cg_base_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/a/b", tmp);
    setenv("CLGRAPH_CACHE_DIR", dir, 1);
    cg_cache_test_reset_dir();
    ck_assert_str_eq(cg_cache_dir(), dir);
    ck_assert_int_eq(cg_cache_dir_ready(), 1); /* made, parents included */
    ck_assert_int_eq(cg_cache_write("f.txt", "a 1\n", 4), 0);
    ck_assert_int_eq(cg_cache_write("f.txt", "b 22\n", 5), 0);
    snprintf(path, sizeof path, "%s/f.txt", dir);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_size, 5);
    ck_assert_int_eq(count_entries(dir), 1); /* no temporary left */
    ck_assert_int_eq(cg_cache_write("x/y", "x", 1), -1);
    ck_assert_int_eq(cg_cache_write("", "x", 1), -1);
    /* a parent that is a file: not ready, writes fail quietly */
    char file_parent[600];
    snprintf(file_parent, sizeof file_parent, "%s/a/b/f.txt/sub", tmp);
    setenv("CLGRAPH_CACHE_DIR", file_parent, 1);
    cg_cache_test_reset_dir();
    ck_assert_int_eq(cg_cache_dir_ready(), 0);
    ck_assert_int_eq(cg_cache_write("x.txt", "x", 1), -1);
    /* the fallbacks */
    char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    char *xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
    unsetenv("CLGRAPH_CACHE_DIR");
    unsetenv("HOME");
    unsetenv("XDG_CACHE_HOME");
    cg_cache_test_reset_dir();
    ck_assert_str_eq(cg_cache_dir(), "");
    ck_assert_int_eq(cg_cache_dir_ready(), 0);
    setenv("HOME", "/nonexistent-home", 1);
    cg_cache_test_reset_dir();
    ck_assert_str_eq(cg_cache_dir(), "/nonexistent-home/.cache/clgraph");
    setenv("XDG_CACHE_HOME", "/xdg/", 1);
    cg_cache_test_reset_dir();
    ck_assert_str_eq(cg_cache_dir(), "/xdg/clgraph");
    setenv("XDG_CACHE_HOME", "relative", 1); /* not absolute: ignored */
    cg_cache_test_reset_dir();
    ck_assert_str_eq(cg_cache_dir(), "/nonexistent-home/.cache/clgraph");
    if (home) setenv("HOME", home, 1);
    if (xdg) setenv("XDG_CACHE_HOME", xdg, 1);
    else unsetenv("XDG_CACHE_HOME");
    free(home);
    free(xdg);
    cg_cache_test_reset_dir();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Every dtype: its name, size and ABI value, and the parser's inverse. */
START_TEST(test_dtype_names) {
    static const struct {
        cg_dtype t;
        int value;
        const char *name;
        size_t size;
    } want[] = {
        {CG_F32, 1, "f32", 4},
        {CG_I32, 2, "i32", 4},
        {CG_F16, 3, "f16", 2},
        {CG_BF16, 4, "bf16", 2},
        {CG_I8, 5, "i8", 1},
        {CG_U8, 6, "u8", 1},
        {CG_I64, 7, "i64", 8},
        {CG_BOOL, 8, "bool", 1},
        {CG_I16, 9, "i16", 2},
        {CG_U16, 10, "u16", 2},
        {CG_U32, 11, "u32", 4},
        {CG_U64, 12, "u64", 8},
        {CG_F8E4M3FN, 13, "f8e4m3fn", 1},
        {CG_F8E4M3FNUZ, 14, "f8e4m3fnuz", 1},
        {CG_F8E5M2, 15, "f8e5m2", 1},
        {CG_F8E5M2FNUZ, 16, "f8e5m2fnuz", 1},
        {CG_F8E8M0, 17, "f8e8m0", 1},
        {CG_F4E2M1, 18, "f4e2m1", 1},
        {CG_I4, 19, "i4", 1},
        {CG_U4, 20, "u4", 1},
        {CG_I2, 21, "i2", 1},
        {CG_U2, 22, "u2", 1},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ck_assert_int_eq((int)want[i].t, want[i].value); /* ABI: values never change */
        ck_assert_str_eq(cg_dtype_name(want[i].t), want[i].name);
        ck_assert_uint_eq(cg_dtype_size(want[i].t), want[i].size);
        ck_assert_int_eq(cg_dtype_valid(want[i].value), 1);
        ck_assert_int_eq(cg_dtype_parse(want[i].name, strlen(want[i].name)), want[i].t);
        ck_assert_ptr_nonnull(strstr(cg_dtype_all_names(), want[i].name));
    }
    /* The 1.0 names of the plugin ABI are the same values. */
    ck_assert_int_eq(CG_OP_F32, CG_F32);
    ck_assert_int_eq(CG_OP_I32, CG_I32);
    cg_op_dtype old = CG_OP_I32;
    cg_dtype now = old;
    ck_assert_int_eq(now, CG_I32);
    ck_assert_uint_eq(sizeof(cg_tensor_desc), 8 + 8 * CG_MAX_DIMS);
    const int bad[] = {0, 23, -1, 100};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_str_eq(cg_dtype_name((cg_dtype)bad[i]), "?");
        ck_assert_uint_eq(cg_dtype_size((cg_dtype)bad[i]), 0);
        ck_assert_int_eq(cg_dtype_valid(bad[i]), 0);
    }
    /* only whole names, case-sensitive */
    ck_assert_int_eq(cg_dtype_parse("f3", 2), 0);
    ck_assert_int_eq(cg_dtype_parse("f322", 4), 0);
    ck_assert_int_eq(cg_dtype_parse("F32", 3), 0);
    ck_assert_int_eq(cg_dtype_parse("", 0), 0);
    ck_assert_int_eq(cg_dtype_parse(NULL, 3), 0);
    ck_assert_int_eq(cg_dtype_parse("bf16[2]", 4), CG_BF16); /* a prefix of longer text */
    cg_tensor_desc d = {CG_I64, 2, {3, 5}};
    ck_assert_uint_eq(cg_desc_bytes(&d), 120);
    d.dtype = CG_BOOL;
    ck_assert_uint_eq(cg_desc_bytes(&d), 15);
}
END_TEST

static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static int f32_is_nan(uint32_t b) { return (b & 0x7fffffff) > 0x7f800000; }

/* Every binary16 value widens to the float32 it is and narrows back to
 * itself (NaNs included: their payload sits in the bits kept); every
 * bfloat16 likewise, but NaNs, which become the quiet NaN of their sign. */
START_TEST(test_float16_exhaustive) {
    for (uint32_t h = 0; h <= 0xffff; h++) {
        uint32_t f = cg_f16_to_f32_bits((uint16_t)h);
        ck_assert_msg(cg_f32_to_f16_bits(f) == h, "f16 0x%04x -> f32 0x%08x -> 0x%04x", h, f, cg_f32_to_f16_bits(f));
        int exp = (h >> 10) & 0x1f;
        if (exp != 0x1f) { /* finite: the value is exact */
            float v = (float)ldexp((double)((exp ? 0x400 : 0) | (h & 0x3ff)), (exp ? exp : 1) - 25);
            if (h & 0x8000) v = -v;
            ck_assert_msg(f == fbits(v), "f16 0x%04x -> 0x%08x, want 0x%08x", h, f, fbits(v));
        } else {
            ck_assert_int_eq(f32_is_nan(f), (h & 0x3ff) != 0);
        }
        uint32_t g = cg_bf16_to_f32_bits((uint16_t)h);
        ck_assert_uint_eq(g, h << 16);
        uint16_t back = cg_f32_to_bf16_bits(g);
        if (f32_is_nan(g)) ck_assert_uint_eq(back, (h & 0x8000) | 0x7fc0);
        else ck_assert_uint_eq(back, h);
    }
}
END_TEST

/* f32 -> f16 / bf16 rounding against hand-computed values (and numpy's /
 * ml_dtypes' casts, which agree). */
START_TEST(test_float_rounding) {
    static const uint32_t to_f16[][2] = {
        {0x3F800000, 0x3C00},                       /* 1.0 */
        {0x3F801000, 0x3C00},                       /* 1 + 2^-11: a tie, to the even 0x3C00 */
        {0x3F803000, 0x3C02},                       /* 1 + 3 * 2^-11: a tie, to the even 0x3C02 */
        {0x3F801001, 0x3C01},                       /* just past the tie */
        {0x477FE000, 0x7BFF},                       /* 65504, the largest half */
        {0x477FEFFF, 0x7BFF},                       /* just below 65520 */
        {0x477FF000, 0x7C00},                       /* 65520: a tie, to the even infinity */
        {0x47800000, 0x7C00},                       /* 65536 */
        {0x7F7FFFFF, 0x7C00},                       /* FLT_MAX */
        {0x7F800000, 0x7C00},                       /* inf */
        {0xFF800000, 0xFC00},                       /* -inf */
        {0x7FC00000, 0x7E00},                       /* quiet NaN */
        {0xFFC00000, 0xFE00},                       /* negative quiet NaN */
        {0x7F800001, 0x7C01},                       /* a payload only in the low bits stays a NaN */
        {0x7FFFFFFF, 0x7FFF},                       /* payload truncated */
        {0xFF812345, 0xFC09}, {0x33800000, 0x0001}, /* 2^-24, the smallest subnormal */
        {0x33000000, 0x0000},                       /* 2^-25: a tie, to the even 0 */
        {0xB3000000, 0x8000},                       /* -2^-25 -> -0 */
        {0x33000001, 0x0001},                       /* just past it */
        {0x33C00000, 0x0002},                       /* 1.5 * 2^-24: a tie, to the even 2 */
        {0x387FC000, 0x03FF},                       /* the largest subnormal */
        {0x387FE000, 0x0400},                       /* a tie, rounding up into the smallest normal */
        {0x38800000, 0x0400},                       /* 2^-14 */
        {0x80000000, 0x8000},                       /* -0 */
        {0x00000001, 0x0000},                       /* an f32 subnormal */
        {0x2F800000, 0x0000},                       /* 2^-32 */
        {0xC0000000, 0xC000},                       /* -2 */
    };
    for (size_t i = 0; i < sizeof to_f16 / sizeof to_f16[0]; i++)
        ck_assert_msg(cg_f32_to_f16_bits(to_f16[i][0]) == to_f16[i][1], "f32 0x%08x -> f16 0x%04x, want 0x%04x",
                      to_f16[i][0], cg_f32_to_f16_bits(to_f16[i][0]), to_f16[i][1]);
    static const uint32_t to_bf16[][2] = {
        {0x3F800000, 0x3F80},                       /* 1.0 */
        {0x3F808000, 0x3F80},                       /* a tie, to the even 0x3F80 */
        {0x3F818000, 0x3F82},                       /* a tie, to the even 0x3F82 */
        {0x3F808001, 0x3F81},                       /* just past the tie */
        {0x3F80FFFF, 0x3F81}, {0x7F7FFFFF, 0x7F80}, /* FLT_MAX rounds to inf */
        {0x7F7F7FFF, 0x7F7F},                       /* the largest bfloat16 */
        {0x7F800000, 0x7F80},                       /* inf */
        {0xFF800000, 0xFF80},                       /* -inf */
        {0x7FC00000, 0x7FC0},                       /* NaN */
        {0xFFC00001, 0xFFC0},                       /* a negative NaN: the quiet NaN of its sign */
        {0x7F800001, 0x7FC0},                       /* a signalling NaN: quiet, never inf */
        {0x00018000, 0x0002},                       /* a subnormal tie, to the even 0x0002 */
        {0x80000000, 0x8000},                       /* -0 */
    };
    for (size_t i = 0; i < sizeof to_bf16 / sizeof to_bf16[0]; i++)
        ck_assert_msg(cg_f32_to_bf16_bits(to_bf16[i][0]) == to_bf16[i][1], "f32 0x%08x -> bf16 0x%04x, want 0x%04x",
                      to_bf16[i][0], cg_f32_to_bf16_bits(to_bf16[i][0]), to_bf16[i][1]);
}
END_TEST

/* A streamed write replaces the file whole; an abort or a failure leaves
 * the old file and no temporary one. */
START_TEST(test_atomic_file) {
    const char *p = tu_write_file("f.bin", "old", 3);
    cg_afile f;
    ck_assert_int_eq(cg_afile_open(&f, p), 0);
    ck_assert_int_eq(cg_afile_write(&f, "new ", 4), 0);
    char buf[64];
    tu_slurp(p, buf, sizeof buf);
    ck_assert_str_eq(buf, "old"); /* not yet */
    ck_assert_int_eq(cg_afile_write(&f, "data", 4), 0);
    ck_assert_int_eq(cg_afile_commit(&f), 0);
    tu_slurp(p, buf, sizeof buf);
    ck_assert_str_eq(buf, "new data");
    struct stat st;
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0644);

    ck_assert_int_eq(cg_afile_open(&f, p), 0);
    ck_assert_int_eq(cg_afile_write(&f, "x", 1), 0);
    cg_afile_abort(&f);
    tu_slurp(p, buf, sizeof buf);
    ck_assert_str_eq(buf, "new data");

    ck_assert_int_eq(cg_afile_open(&f, tu_path("no/such/dir/f.bin")), ENOENT);
    /* a directory in the way of the rename: the temporary file goes */
    ck_assert_int_eq(mkdir(tu_path("d"), 0755), 0);
    ck_assert_int_eq(cg_afile_open(&f, tu_path("d")), 0);
    ck_assert_int_eq(cg_afile_write(&f, "x", 1), 0);
    ck_assert_int_ne(cg_afile_commit(&f), 0);
    /* only f.bin and d are left in the directory */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 2", tu_dir);
    ck_assert_int_eq(system(cmd), 0);
    /* a relative path: the temporary file is in the current directory */
    char cwd[4096];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(tu_dir), 0);
    ck_assert_int_eq(cg_afile_open(&f, "rel.bin"), 0);
    ck_assert_int_eq(cg_afile_write(&f, "r", 1), 0);
    ck_assert_int_eq(cg_afile_commit(&f), 0);
    ck_assert_int_eq(chdir(cwd), 0);
    tu_slurp(tu_path("rel.bin"), buf, sizeof buf);
    ck_assert_str_eq(buf, "r");
}
END_TEST

/* The public stream over it (cg_out_file): the file appears whole at
 * commit, an abort leaves the old one, /dev/full's ENOSPC is one error
 * naming the path with errno kept, and a missing directory is refused. */
START_TEST(test_out_file) {
    const char *p = tu_write_file("o.txt", "old", 3);
    cg_out_file *f = NULL;
    ck_assert_int_eq(cg_out_file_open(p, &f), CG_OK);
    ck_assert_int_gt(fprintf(cg_out_file_stream(f), "%s %d", "new", 42), 0);
    char buf[64];
    tu_slurp(p, buf, sizeof buf);
    ck_assert_str_eq(buf, "old");
    ck_assert_int_eq(cg_out_file_commit(f), CG_OK);
    tu_slurp(p, buf, sizeof buf);
    ck_assert_str_eq(buf, "new 42");
    ck_assert_int_eq(cg_out_file_open(p, &f), CG_OK);
    fputs("x", cg_out_file_stream(f));
    cg_out_file_abort(f);
    tu_slurp(p, buf, sizeof buf);
    ck_assert_str_eq(buf, "new 42");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 1", tu_dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(cg_out_file_open(tu_path("no/such/o.txt"), &f), CG_ERR_IO);
    ck_assert_ptr_null(f);
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "no/such/o.txt: cannot write:"));
    /* a character device is written in place */
    ck_assert_int_eq(cg_out_file_open("/dev/full", &f), CG_OK);
    fputs("x", cg_out_file_stream(f));
    ck_assert_int_eq(cg_out_file_commit(f), CG_ERR_IO);
    ck_assert_int_eq(errno, ENOSPC);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "/dev/full: cannot write:"));
    cg_out_file_abort(NULL);
}
END_TEST

/* Every file the library reads goes through read_file.c (issue 29): a FIFO
 * without a writer is refused at once (it used to block the open), a
 * device or directory is refused (/dev/zero used to be read until memory
 * ran out), a file over the cap is refused from its size. */
START_TEST(test_read_file) {
    char *s = NULL;
    size_t n = 99;
    const char *p = tu_write_file("t.txt", "abc\n", 4);
    ck_assert_int_eq(cg_read_file(p, 4, &s, &n), CG_OK);
    ck_assert_str_eq(s, "abc\n");
    ck_assert_uint_eq(n, 4);
    free(s);
    char want[600];
    ck_assert_int_eq(cg_read_file(p, 3, &s, &n), CG_ERR_IO);
    ck_assert_ptr_null(s);
    snprintf(want, sizeof want, "%s: larger than 3 bytes", p);
    ck_assert_str_eq(cg_last_error(), want);

    /* a sparse file over the cap: refused before anything is read */
    const char *big = tu_path("big.txt");
    int fd = open(big, O_WRONLY | O_CREAT, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)CG_MAX_TEXT_FILE * 4), 0);
    close(fd);
    ck_assert_int_eq(cg_read_file(big, CG_MAX_TEXT_FILE, &s, &n), CG_ERR_IO);
    snprintf(want, sizeof want, "%s: larger than %zu bytes", big, CG_MAX_TEXT_FILE);
    ck_assert_str_eq(cg_last_error(), want);
    ck_assert_int_eq(cg_read_file_quiet(big, CG_MAX_CACHE_FILE, &s, &n), -1);

    /* a file whose size says 0 but that holds more: the read stops at the cap */
    ck_assert_int_eq(cg_read_file("/proc/self/maps", 16, &s, &n), CG_ERR_IO);
    ck_assert_str_eq(cg_last_error(), "/proc/self/maps: larger than 16 bytes");

    ck_assert_int_eq(cg_read_file("/dev/zero", 1 << 20, &s, &n), CG_ERR_IO);
    ck_assert_str_eq(cg_last_error(), "/dev/zero: not a regular file (a character device)");
    ck_assert_int_eq(cg_read_file(tu_dir, 1 << 20, &s, &n), CG_ERR_IO);
    snprintf(want, sizeof want, "%s: not a regular file (a directory)", tu_dir);
    ck_assert_str_eq(cg_last_error(), want);
    ck_assert_int_eq(cg_read_file(tu_path("none"), 1 << 20, &s, &n), CG_ERR_IO);
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", tu_path("none"));
    ck_assert_str_eq(cg_last_error(), want);

    /* a FIFO nobody writes to, read and written; through a symbolic link too */
    const char *fifo = tu_path("fifo");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(symlink(fifo, tu_path("link")), 0);
    ck_assert_int_eq(cg_read_file(fifo, 1 << 20, &s, &n), CG_ERR_IO);
    snprintf(want, sizeof want, "%s: not a regular file (a FIFO)", fifo);
    ck_assert_str_eq(cg_last_error(), want);
    ck_assert_int_eq(cg_read_file(tu_path("link"), 1 << 20, &s, &n), CG_ERR_IO);
    cg_error_clear();
    ck_assert_int_eq(cg_read_file_quiet(fifo, 1 << 20, &s, &n), -1);
    ck_assert_str_eq(cg_last_error(), ""); /* a cache's read sets no message */
    struct stat sb;
    errno = 99;
    ck_assert_int_eq(cg_open_regular_quiet(fifo, O_WRONLY | O_APPEND | O_CREAT, 0644, &sb), -1);
    ck_assert_int_eq(errno, 0);
    ck_assert(S_ISFIFO(sb.st_mode));
    ck_assert_int_eq(cg_open_regular(fifo, O_RDONLY, &fd, NULL), CG_ERR_IO);
    ck_assert_int_eq(fd, -1);
    /* a regular file: opened blocking, as usual */
    fd = cg_open_regular_quiet(tu_path("new.txt"), O_WRONLY | O_APPEND | O_CREAT, 0644, &sb);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    close(fd);
    /* cache files appended to: a FIFO is left alone (no wait for a
     * reader), one over the cap starts again */
    ck_assert_ptr_null(cg_cache_append(fifo, 100));
    const char *c = tu_write_file("c.txt", "0123456789", 10);
    FILE *cf = cg_cache_append(c, 9);
    ck_assert_ptr_nonnull(cf);
    fputs("a\n", cf);
    fclose(cf);
    char buf[64];
    tu_slurp(c, buf, sizeof buf);
    ck_assert_str_eq(buf, "a\n");
    cf = cg_cache_append(c, 9);
    ck_assert_ptr_nonnull(cf);
    fputs("b\n", cf);
    fclose(cf);
    tu_slurp(c, buf, sizeof buf);
    ck_assert_str_eq(buf, "a\nb\n");
    ck_assert_str_eq(cg_file_kind(S_IFSOCK), "a socket");
    ck_assert_str_eq(cg_file_kind(S_IFBLK), "a block device");
}
END_TEST

/* Collects lines of a measurement log, joined with '|'. */
static void collect(char *line, void *ctx) {
    char *acc = ctx;
    strcat(acc, line);
    strcat(acc, "|");
}

START_TEST(test_measure_log) {
    char got[256] = "";
    const char *p = tu_write_file("m.txt", "", 0);
    ck_assert_int_eq(cg_mlog_append(p, "a 1\n", 4), 0);
    ck_assert_int_eq(cg_mlog_append(p, "bb 2\r\n", 6), 0);
    cg_mlog_read(p, 0, collect, got);
    ck_assert_str_eq(got, "a 1|bb 2|");
    /* a line over max_line is skipped, a last line without '\n' kept */
    p = tu_write_file("m2.txt", "short\nmuch too long\nend", 23);
    got[0] = '\0';
    cg_mlog_read(p, 6, collect, got);
    ck_assert_str_eq(got, "short|end|");
    /* absent: nothing read; appending creates it */
    got[0] = '\0';
    char path[4200];
    snprintf(path, sizeof path, "%s.new", p);
    cg_mlog_read(path, 0, collect, got);
    ck_assert_str_eq(got, "");
    ck_assert_int_eq(cg_mlog_append(path, "x\n", 2), 0);
    cg_mlog_read(path, 0, collect, got);
    ck_assert_str_eq(got, "x|");
    /* a FIFO is neither waited on to read nor to append */
    snprintf(path, sizeof path, "%s.fifo", p);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    got[0] = '\0';
    cg_mlog_read(path, 0, collect, got);
    ck_assert_str_eq(got, "");
    ck_assert_int_eq(cg_mlog_append(path, "x\n", 2), -1);
}
END_TEST

static void setup(void) { tu_setup_dir("base"); }

int main(void) {
    Suite *s = suite_create("base");
    TCase *tc = tcase_create("shape");
    tcase_add_test(tc, test_shape_helpers);
    tcase_add_test(tc, test_fnv);
    tcase_add_test(tc, test_arena);
    tcase_add_test(tc, test_strbuf_cat_and_shape_cut);
    tcase_add_test(tc, test_cache_dir);
    suite_add_tcase(s, tc);
    TCase *dt = tcase_create("dtype");
    tcase_add_test(dt, test_dtype_names);
    tcase_add_test(dt, test_float16_exhaustive);
    tcase_add_test(dt, test_float_rounding);
    suite_add_tcase(s, dt);
    TCase *af = tcase_create("atomic_file");
    tcase_add_checked_fixture(af, setup, tu_teardown_dir);
    tcase_add_test(af, test_atomic_file);
    tcase_add_test(af, test_out_file);
    tcase_add_test(af, test_read_file);
    tcase_add_test(af, test_measure_log);
    suite_add_tcase(s, af);
    return tu_run_suite(s, 0);
}
