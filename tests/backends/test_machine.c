/* cg_machine_measure (clgraph.h), through the public API only: struct_size
 * and the measure bits are checked, the counts need no timing, and the
 * timed values are positive and below anything a CPU reaches. */
#include <check.h>
#include <stdlib.h>
#include <unistd.h>

#include "clgraph/clgraph.h"
#include "test_util.h"

START_TEST(test_arguments_checked) {
    ck_assert_int_eq(cg_machine_measure(NULL), CG_ERR_INVALID_ARGUMENT);
    cg_machine_info mi = {.struct_size = sizeof mi - 1};
    ck_assert_int_eq(cg_machine_measure(&mi), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(mi.blas_threads, 0); /* nothing filled in */
    mi = (cg_machine_info){.struct_size = 0};
    ck_assert_int_eq(cg_machine_measure(&mi), CG_ERR_INVALID_ARGUMENT);
    mi = (cg_machine_info){.struct_size = sizeof mi, .measure = 4};
    ck_assert_int_eq(cg_machine_measure(&mi), CG_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_counts_without_timing) {
    unsetenv("CLGRAPH_THREADS");
    cg_machine_info mi = {.struct_size = sizeof mi, .read_gbps = -1, .sgemm_gflops = -1};
    ck_assert_int_eq(cg_machine_measure(&mi), CG_OK);
    ck_assert_int_eq(mi.read_threads, (int)sysconf(_SC_NPROCESSORS_ONLN));
    ck_assert_int_gt(mi.blas_threads, 0);
    ck_assert(mi.read_gbps == 0 && mi.sgemm_gflops == 0);
    setenv("CLGRAPH_THREADS", "3", 1);
    ck_assert_int_eq(cg_machine_measure(&mi), CG_OK);
    ck_assert_int_eq(mi.blas_threads, 3);
    unsetenv("CLGRAPH_THREADS");
}
END_TEST

START_TEST(test_measured_values) {
    cg_machine_info mi = {.struct_size = sizeof mi, .measure = CG_MACHINE_READ | CG_MACHINE_SGEMM};
    ck_assert_int_eq(cg_machine_measure(&mi), CG_OK);
    /* Bounds far outside any machine: a wrong unit or a zero time fails. */
    ck_assert_msg(mi.read_gbps > 0.05 && mi.read_gbps < 100000, "read %g GB/s", mi.read_gbps);
    ck_assert_msg(mi.sgemm_gflops > 0.05 && mi.sgemm_gflops < 1e6, "SGEMM %g GFLOP/s", mi.sgemm_gflops);
    cg_machine_info only = {.struct_size = sizeof only, .measure = CG_MACHINE_SGEMM};
    ck_assert_int_eq(cg_machine_measure(&only), CG_OK);
    ck_assert(only.read_gbps == 0 && only.sgemm_gflops > 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("machine");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_arguments_checked);
    tcase_add_test(tc, test_counts_without_timing);
    tcase_add_test(tc, test_measured_values);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 0);
}
