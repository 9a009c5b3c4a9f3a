/* base/: shapes and their formatting, the cache directory. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "clgraph/clgraph.h"
#include "hash.h"
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

/* FNV-1a 64 of the reference vectors (Fowler, Noll, Vo: "" and "a"; "foobar"). */
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

/* Names and sizes of the dtypes. */
START_TEST(test_dtypes) {
    ck_assert_str_eq(cg_dtype_name(CG_F32), "f32");
    ck_assert_str_eq(cg_dtype_name(CG_I32), "i32");
    ck_assert_uint_eq(cg_dtype_size(CG_F32), 4);
    ck_assert_uint_eq(cg_dtype_size(CG_I32), 4);
    ck_assert_str_eq(cg_dtype_name((cg_dtype)0), "?");
    ck_assert_uint_eq(cg_dtype_size((cg_dtype)0), 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("base");
    TCase *tc = tcase_create("shape");
    tcase_add_test(tc, test_shape_helpers);
    tcase_add_test(tc, test_fnv);
    tcase_add_test(tc, test_cache_dir);
    tcase_add_test(tc, test_dtypes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
