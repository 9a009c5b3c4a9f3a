/* A plan that runs only on the CPU never starts OpenCL: enumerating the
 * platforms loads every ICD (PoCL starts its worker threads and takes tens
 * of MiB), which a CPU-only run must not pay. A process of its own, since
 * enumeration happens once. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/clgraph.h"
#include "opencl/cl_internal.h"
#include "test_util.h"

START_TEST(test_cpu_plan_leaves_opencl_alone) {
    cg_context *ctx;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    const char *text = "graph g {\n  input x: f32[B, 4]\n  y = tanh(x)\n  output y\n}\n";
    cg_model *m;
    ck_assert_int_eq(cg_model_parse(ctx, text, strlen(text), "t.cg", &m), CG_OK);
    cg_plan_options opt = {.struct_size = sizeof(cg_plan_options), .device = "cpu", .place = "y=cpu"};
    cg_plan *p;
    ck_assert_msg(cg_plan_create(m, "g", &opt, &p) == CG_OK, "%s", cg_last_error());
    int64_t dims[2] = {3, 4};
    cg_tensor *x, *y;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, dims, &x), CG_OK);
    const char *names[] = {"x"};
    ck_assert_int_eq(cg_plan_run(p, 1, names, &x, 1, &y), CG_OK);
    char *desc;
    ck_assert_int_eq(cg_plan_describe(p, "B=3", 0, &desc), CG_OK);
    free(desc);
    ck_assert_int_eq(cg_cl_test_enumerated(), 0);
    cg_tensor_free(x);
    cg_tensor_free(y);
    cg_plan_free(p);
    cg_model_free(m);
    cg_context_free(ctx);
    /* Asking for the devices is what starts it. */
    ck_assert_int_ge(cg_device_count(), 1);
    ck_assert_int_eq(cg_cl_test_enumerated(), 1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lazy_opencl");
    TCase *tc = tcase_create("lazy");
    tcase_add_test(tc, test_cpu_plan_leaves_opencl_alone);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 1);
}
