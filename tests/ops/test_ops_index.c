/* Tests of gather_nd, scatter_nd, pad and resize through the op harness
 * (inference + CPU kernel). Expected values: ONNX's operator examples and
 * hand computation (gather_nd, scatter_nd), numpy.pad (pad) and PyTorch's
 * F.interpolate (resize), written out here; plus the errors each gives.
 * The OpenCL kernels are compared with these by `clgraph conform`. */
#include <check.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/plugin.h"
#include "ops_common.h"
#include "op_harness.h"
#include "test_util.h"

static char g_err[512];

static th_tensor tensor(cg_op_dtype dt, void *data, int nd, const int64_t *d) {
    th_tensor t;
    memset(&t, 0, sizeof t);
    t.desc.dtype = dt;
    t.desc.ndim = nd;
    for (int i = 0; i < nd; i++) t.desc.dims[i] = d[i];
    t.data = data;
    return t;
}

/* GatherND's examples in the ONNX operator docs, a negative index, and
 * an index past the axis (an error naming input 1). */
START_TEST(test_gather_nd) {
    int32_t x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    const int64_t xd[3] = {2, 2, 2}, id[2] = {2, 2}, ib[2] = {2, 1};
    int64_t i1[4] = {0, 1, 1, 0}, i2[2] = {1, 0}, i3[4] = {-1, 0, 0, 2};
    th_tensor in[2] = {tensor(CG_I32, x, 3, xd), tensor(CG_I64, i1, 2, id)}, out;
    th_attrs at;
    th_attrs_init(&at, &cg_op_gather_nd);
    ck_assert_msg(th_run(&cg_op_gather_nd, 2, in, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    const int32_t e1[4] = {2, 3, 4, 5};
    ck_assert_int_eq(out.desc.ndim, 2);
    ck_assert_mem_eq(out.data, e1, sizeof e1);
    th_free_outputs(1, &out);
    /* batch_dims 1: each batch's row picks from its own [2, 2] */
    in[1] = tensor(CG_I64, i2, 2, ib);
    th_set_int(&at, &cg_op_gather_nd, "batch_dims", 1);
    ck_assert_msg(th_run(&cg_op_gather_nd, 2, in, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    const int32_t e2[4] = {2, 3, 4, 5};
    ck_assert_mem_eq(out.data, e2, sizeof e2);
    th_free_outputs(1, &out);
    /* -1 is the last row; 2 is past the axis of 2 */
    in[1] = tensor(CG_I64, i3, 2, id);
    th_set_int(&at, &cg_op_gather_nd, "batch_dims", 0);
    ck_assert_int_eq(th_run(&cg_op_gather_nd, 2, in, &at, 1, &out, g_err, sizeof g_err), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, "indices") && strstr(g_err, "2"), "%s", g_err);
    th_free_outputs(1, &out);
    i3[3] = 1;
    ck_assert_msg(th_run(&cg_op_gather_nd, 2, in, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    const int32_t e3[4] = {4, 5, 2, 3};
    ck_assert_mem_eq(out.data, e3, sizeof e3);
    th_free_outputs(1, &out);
}
END_TEST

/* ScatterND: ONNX's example, and repeated tuples applied in order by
 * every reduction (by hand). */
START_TEST(test_scatter_nd) {
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, up[4] = {9, 10, 11, 12};
    int64_t ix[4] = {4, 3, 1, 7};
    const int64_t xd[1] = {8}, id[2] = {4, 1}, ud[1] = {4};
    th_tensor in[3] = {tensor(CG_F32, x, 1, xd), tensor(CG_I64, ix, 2, id), tensor(CG_F32, up, 1, ud)}, out;
    th_attrs at;
    th_attrs_init(&at, &cg_op_scatter_nd);
    ck_assert_msg(th_run(&cg_op_scatter_nd, 3, in, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    const float e[8] = {1, 11, 3, 10, 9, 6, 7, 12};
    ck_assert_mem_eq(out.data, e, sizeof e);
    th_free_outputs(1, &out);
    /* rows of a [2, 2]: tuples 0, 0, -1 with updates 5 6 / 7 8 / 1 9 */
    int64_t xi[4] = {1, 2, 3, 4}, ui[6] = {5, 6, 7, 8, 1, 9}, ri[3] = {0, 0, -1};
    const int64_t x2[2] = {2, 2}, i2[2] = {3, 1}, u2[2] = {3, 2};
    th_tensor in2[3] = {tensor(CG_I64, xi, 2, x2), tensor(CG_I64, ri, 2, i2), tensor(CG_I64, ui, 2, u2)};
    static const struct {
        const char *red;
        int64_t e[4];
    } rc[] = {{"none", {7, 8, 1, 9}},
              {"add", {13, 16, 4, 13}},
              {"mul", {35, 96, 3, 36}},
              {"max", {7, 8, 3, 9}},
              {"min", {1, 2, 1, 4}}};
    for (size_t c = 0; c < sizeof rc / sizeof rc[0]; c++) {
        th_set_string(&at, &cg_op_scatter_nd, "reduction", rc[c].red);
        ck_assert_msg(th_run(&cg_op_scatter_nd, 3, in2, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
        ck_assert_msg(!memcmp(out.data, rc[c].e, sizeof rc[c].e), "reduction %s", rc[c].red);
        th_free_outputs(1, &out);
    }
    ri[1] = 2; /* past the 2 rows */
    ck_assert_int_eq(th_run(&cg_op_scatter_nd, 3, in2, &at, 1, &out, g_err, sizeof g_err), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, "indices"), "%s", g_err);
    th_free_outputs(1, &out);
    th_set_string(&at, &cg_op_scatter_nd, "reduction", "sub");
    ck_assert_int_eq(th_run(&cg_op_scatter_nd, 3, in2, &at, 1, &out, g_err, sizeof g_err), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, "reduction"), "%s", g_err);
}
END_TEST

/* pad of arange(12).reshape(3, 4) against numpy.pad. */
START_TEST(test_pad) {
    int64_t x[12];
    for (int i = 0; i < 12; i++) x[i] = i;
    const int64_t xd[2] = {3, 4};
    static const int64_t reflect[72] = {11, 10, 9, 8, 9, 10, 11, 10, 9, 8, 9, 10, 7, 6, 5, 4, 5, 6, 7, 6, 5, 4, 5, 6,
                                        3,  2,  1, 0, 1, 2,  3,  2,  1, 0, 1, 2,  7, 6, 5, 4, 5, 6, 7, 6, 5, 4, 5, 6,
                                        11, 10, 9, 8, 9, 10, 11, 10, 9, 8, 9, 10, 7, 6, 5, 4, 5, 6, 7, 6, 5, 4, 5, 6};
    static const int64_t edge[42] = {0, 0, 0, 1, 2,  3,  3,  0, 0, 0, 1, 2,  3,  3,  4, 4, 4, 5, 6,  7,  7,
                                     8, 8, 8, 9, 10, 11, 11, 8, 8, 8, 9, 10, 11, 11, 8, 8, 8, 9, 10, 11, 11};
    static const int64_t wrap[77] = {11, 8,  9, 10, 11, 8, 9,  10, 11, 8,  9,  3, 0, 1,  2,  3, 0,  1,  2, 3,
                                     0,  1,  7, 4,  5,  6, 7,  4,  5,  6,  7,  4, 5, 11, 8,  9, 10, 11, 8, 9,
                                     10, 11, 8, 9,  3,  0, 1,  2,  3,  0,  1,  2, 3, 0,  1,  7, 4,  5,  6, 7,
                                     4,  5,  6, 7,  4,  5, 11, 8,  9,  10, 11, 8, 9, 10, 11, 8, 9};
    static const int64_t crop[16] = {-7, 4, 5, 6, -7, 8, 9, 10, -7, -7, -7, -7, -7, -7, -7, -7};
    static const struct {
        const char *mode;
        int64_t pads[4], rows, cols;
        const int64_t *e;
    } pc[] = {{"reflect", {2, 3, 1, 5}, 6, 12, reflect},
              {"edge", {1, 2, 2, 1}, 6, 7, edge},
              {"wrap", {4, 1, 0, 6}, 7, 11, wrap},
              {"constant", {-1, 1, 2, -1}, 4, 4, crop}};
    int64_t value = -7;
    const int64_t one[1] = {1};
    for (size_t c = 0; c < sizeof pc / sizeof pc[0]; c++) {
        th_tensor in[2] = {tensor(CG_I64, x, 2, xd), tensor(CG_I64, &value, 1, one)}, out;
        th_attrs at;
        th_attrs_init(&at, &cg_op_pad);
        th_set_ints(&at, &cg_op_pad, "pads", 4, pc[c].pads);
        th_set_string(&at, &cg_op_pad, "mode", pc[c].mode);
        ck_assert_msg(th_run(&cg_op_pad, 2, in, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
        ck_assert_int_eq(out.desc.dims[0], pc[c].rows);
        ck_assert_int_eq(out.desc.dims[1], pc[c].cols);
        ck_assert_msg(!memcmp(out.data, pc[c].e, (size_t)(pc[c].rows * pc[c].cols) * sizeof(int64_t)), "%s",
                      pc[c].mode);
        th_free_outputs(1, &out);
    }
}
END_TEST

/* resize of a [1, 1, 2, 3] ramp to [4, 5] against F.interpolate. */
START_TEST(test_resize) {
    float x[6];
    for (int i = 0; i < 6; i++) x[i] = (float)i * 1.5f - 2;
    static const int64_t xd[4] = {1, 1, 2, 3}, sz[4] = {1, 1, 4, 5}, sn[4] = {1, 1, 3, 7};
    static const float bilinear[20] = {
        -2,     -1.39999998f, -0.5f,  0.400000215f, 1,      -0.875f, -0.274999917f, 0.625f, 1.52500021f, 2.125f,
        1.375f, 1.97500002f,  2.875f, 3.7750001f,   4.375f, 2.5f,    3.10000014f,   4,      4.9000001f,  5.5f};
    static const float bicubic[20] = {
        -2,           -1.390625f,  -0.5f,       0.390625f,   1,          -0.583333611f, 0.0260411724f,
        0.916666031f, 1.80729067f, 2.41666555f, 1.08333278f, 1.6927079f, 2.58333302f,   3.47395802f,
        4.08333302f,  2.5f,        3.109375f,   4,           4.890625f,  5.5f};
    static const float nearest[21] = {-2,    -2, -2, -0.5f, -0.5f, 1,    1, -2, -2,   -2,  -0.5f,
                                      -0.5f, 1,  1,  2.5f,  2.5f,  2.5f, 4, 4,  5.5f, 5.5f};
    static const struct {
        const char *mode, *coord;
        const int64_t *sizes;
        const float *e;
        int n;
    } rc[] = {{"linear", "pytorch_half_pixel", sz, bilinear, 20},
              {"cubic", "align_corners", sz, bicubic, 20},
              {"nearest", "asymmetric", sn, nearest, 21}};
    for (size_t c = 0; c < sizeof rc / sizeof rc[0]; c++) {
        th_tensor in = tensor(CG_F32, x, 4, xd), out;
        th_attrs at;
        th_attrs_init(&at, &cg_op_resize);
        th_set_ints(&at, &cg_op_resize, "sizes", 4, rc[c].sizes);
        th_set_string(&at, &cg_op_resize, "mode", rc[c].mode);
        th_set_string(&at, &cg_op_resize, "coordinate_transformation_mode", rc[c].coord);
        th_set_string(&at, &cg_op_resize, "nearest_mode", "floor");
        ck_assert_msg(th_run(&cg_op_resize, 1, &in, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
        for (int i = 0; i < rc[c].n; i++)
            ck_assert_msg(fabsf(((float *)out.data)[i] - rc[c].e[i]) < 1e-5f, "%s %d: %g, expected %g", rc[c].mode, i,
                          ((float *)out.data)[i], rc[c].e[i]);
        th_free_outputs(1, &out);
    }
}
END_TEST

static void expect_fail(const cg_op_def *def, int n, th_tensor *in, th_attrs *at, const char *needle) {
    th_tensor out[1];
    ck_assert_int_eq(th_infer(def, n, in, at, 1, out, g_err, sizeof g_err), CG_OP_ERROR);
    ck_assert_msg(strstr(g_err, needle), "%s: '%s' lacks '%s'", def->name, g_err, needle);
}

/* Symbolic dims pass through where the size is kept; bad attributes and
 * shapes are one clear message. */
START_TEST(test_infer) {
    const int64_t xd[2] = {CG_DIM_SYM(0), 4}, pz[4] = {0, 1, 0, 2}, pp[4] = {1, 0, 0, 0}, big[4] = {0, -3, 0, -2};
    th_tensor x = tensor(CG_F32, NULL, 2, xd), out;
    th_attrs at;
    th_attrs_init(&at, &cg_op_pad);
    th_set_ints(&at, &cg_op_pad, "pads", 4, pz);
    ck_assert_msg(th_infer(&cg_op_pad, 1, &x, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    ck_assert(out.desc.dims[0] == CG_DIM_SYM(0) && out.desc.dims[1] == 7);
    th_set_ints(&at, &cg_op_pad, "pads", 4, pp);
    ck_assert_msg(th_infer(&cg_op_pad, 1, &x, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    ck_assert(out.desc.dims[0] == CG_DIM_UNKNOWN);
    th_set_ints(&at, &cg_op_pad, "pads", 4, big);
    expect_fail(&cg_op_pad, 1, &x, &at, "crop more than the 4 elements");
    th_set_ints(&at, &cg_op_pad, "pads", 2, pz);
    expect_fail(&cg_op_pad, 1, &x, &at, "pads has 2 values");
    th_set_ints(&at, &cg_op_pad, "pads", 4, pz);
    th_set_string(&at, &cg_op_pad, "mode", "symmetric");
    expect_fail(&cg_op_pad, 1, &x, &at, "mode must be constant, reflect, edge or wrap");
    const int64_t sd[2] = {CG_DIM_SYM(0), 9};
    th_attrs_init(&at, &cg_op_resize);
    th_set_ints(&at, &cg_op_resize, "sizes", 2, sd);
    th_set_string(&at, &cg_op_resize, "mode", "linear");
    ck_assert_msg(th_infer(&cg_op_resize, 1, &x, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    ck_assert(out.desc.dims[0] == CG_DIM_SYM(0) && out.desc.dims[1] == 9);
    th_set_string(&at, &cg_op_resize, "scales", "1 x");
    expect_fail(&cg_op_resize, 1, &x, &at, "must be 2 numbers");
    th_set_string(&at, &cg_op_resize, "scales", "");
    th_set_string(&at, &cg_op_resize, "coordinate_transformation_mode", "centre");
    expect_fail(&cg_op_resize, 1, &x, &at, "coordinate_transformation_mode must be");
    const int64_t id[2] = {3, 3}, ld[2] = {2, 4};
    th_tensor g[2] = {tensor(CG_F32, NULL, 2, ld), tensor(CG_I64, NULL, 2, id)};
    th_attrs_init(&at, &cg_op_gather_nd);
    expect_fail(&cg_op_gather_nd, 2, g, &at, "must be a size from 1 to 2");
    th_tensor xi = tensor(CG_I32, NULL, 2, ld);
    th_attrs_init(&at, &cg_op_resize);
    const int64_t s2[2] = {4, 8};
    th_set_ints(&at, &cg_op_resize, "sizes", 2, s2);
    th_set_string(&at, &cg_op_resize, "mode", "cubic");
    expect_fail(&cg_op_resize, 1, &xi, &at, "needs x of f32");
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("ops_index");
    TCase *tc = tcase_create("index");
    tcase_add_test(tc, test_gather_nd);
    tcase_add_test(tc, test_scatter_nd);
    tcase_add_test(tc, test_pad);
    tcase_add_test(tc, test_resize);
    tcase_add_test(tc, test_infer);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(suite(), 0); }
