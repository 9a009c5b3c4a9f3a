/* The backend interface (backends/backend.h) on every device it finds: the
 * device table, buffers and views, transfers with and without events,
 * between devices, memory accounting, and kernels (supports, per-node
 * state, runs, the allocate/fill/run/read helper) on the CPU and on OpenCL
 * with kernels defined here. Runs with two PoCL devices
 * (POCL_DEVICES="pthread pthread"); never forks (OpenCL). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl.h>

#include "backend.h"
#include "clgraph/clgraph.h"
#include "test_util.h"

static int n_devices(void) { return cg_dev_count(); }

/* ---- the device table ---- */

START_TEST(test_table) {
    ck_assert_int_ge(n_devices(), 1);
    const cg_device_info *cpu = cg_dev_info_at(0);
    ck_assert_ptr_nonnull(cpu);
    ck_assert_str_eq(cpu->name, "cpu");
    ck_assert_int_eq(cpu->host_memory, 1);
    ck_assert_int_eq(cpu->kind, CG_BACKEND_CPU);
    ck_assert_ptr_null(cg_dev_info_at(n_devices()));
    ck_assert_ptr_null(cg_dev_info_at(-1));
    int i = -1;
    ck_assert_int_eq(cg_dev_find("cpu", &i), CG_OK);
    ck_assert_int_eq(i, 0);
    ck_assert_int_ne(cg_dev_find("no-such-device-xyz", &i), CG_OK);
    ck_assert_int_ne(cg_dev_find("", &i), CG_OK);
    for (int d = 1; d < n_devices(); d++) {
        char spec[32], text[2048];
        snprintf(spec, sizeof spec, "opencl:%d", d - 1);
        ck_assert_int_eq(cg_dev_find(spec, &i), CG_OK);
        ck_assert_int_eq(i, d);
        const cg_device_info *in = cg_dev_info_at(d);
        ck_assert_str_eq(in->name, spec);
        ck_assert_int_eq(in->host_memory, 0);
        ck_assert_int_eq(in->kind, CG_BACKEND_OPENCL);
        ck_assert_uint_ge(in->align, 64);
        cg_dev_describe(d, text, sizeof text);
        ck_assert_msg(strncmp(text, spec, strlen(spec)) == 0, "%s", text);
    }
    cg_device *a, *b;
    ck_assert_int_eq(cg_dev_open(n_devices() - 1, &a), CG_OK);
    ck_assert_int_eq(cg_dev_open(n_devices() - 1, &b), CG_OK);
    ck_assert_ptr_eq(a, b); /* shared */
    cg_dev_release(a);
    cg_dev_release(b);
    ck_assert_int_ne(cg_dev_open(n_devices(), &a), CG_OK);
}
END_TEST

/* ---- buffers and transfers, per device ---- */

START_TEST(test_buffers) {
    cg_device *d;
    ck_assert_int_eq(cg_dev_open(_i, &d), CG_OK);
    const cg_device_info *info = cg_dev_info(d);
    cg_dev_memory m0, m1;
    cg_dev_memory_get(d, &m0);
    size_t n = 4 * info->align;
    cg_buf whole, v;
    ck_assert_int_eq(cg_dev_alloc(d, n, &whole), CG_OK);
    ck_assert_int_eq(whole.kind, CG_BUF_ALLOC);
    cg_dev_memory_get(d, &m1);
    ck_assert_uint_eq(m1.bytes_now, m0.bytes_now + n);
    ck_assert_uint_eq(m1.buffers_now, m0.buffers_now + 1);
    ck_assert_uint_ge(m1.bytes_peak, m1.bytes_now);
    unsigned char *src = malloc(n), *dst = malloc(n);
    for (size_t k = 0; k < n; k++) src[k] = (unsigned char)(k * 7 + 1);
    ck_assert_int_eq(cg_dev_write(d, &whole, 0, src, n), CG_OK);
    /* a view reads the bytes at its offset */
    ck_assert_int_eq(cg_dev_view(d, &whole, info->align, info->align, &v), CG_OK);
    memset(dst, 0, n);
    ck_assert_int_eq(cg_dev_read(d, &v, 0, dst, info->align), CG_OK);
    ck_assert_int_eq(memcmp(dst, src + info->align, info->align), 0);
    /* host pointers only on host memory */
    ck_assert(!!cg_dev_host_ptr(d, &whole) == !!info->host_memory);
    /* bad views: misaligned, outside */
    cg_buf bad;
    ck_assert_int_eq(cg_dev_view(d, &whole, 4, 4, &bad), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_dev_view(d, &whole, 0, n + 1, &bad), CG_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cg_dev_read(d, &v, 1, dst, info->align), CG_ERR_INVALID_ARGUMENT);
    /* on-device copy, async transfers with events */
    cg_buf other;
    ck_assert_int_eq(cg_dev_alloc(d, n, &other), CG_OK);
    ck_assert_int_eq(cg_dev_copy(d, &whole, 0, &other, 0, n), CG_OK);
    cg_event ev;
    memset(dst, 0, n);
    ck_assert_int_eq(cg_dev_read_async(d, &other, 0, dst, n, &ev), CG_OK);
    ck_assert_int_eq(cg_dev_wait(&ev), CG_OK);
    ck_assert_ptr_null(ev.handle);
    ck_assert_int_eq(memcmp(dst, src, n), 0);
    for (size_t k = 0; k < n; k++) src[k] ^= 0x5a;
    ck_assert_int_eq(cg_dev_write_async(d, &other, 0, src, n, NULL), CG_OK);
    ck_assert_int_eq(cg_dev_finish(d), CG_OK);
    ck_assert_int_eq(cg_dev_read(d, &other, 0, dst, n), CG_OK);
    ck_assert_int_eq(memcmp(dst, src, n), 0);
    /* wrapping host memory: the CPU only */
    cg_buf w;
    ck_assert_int_eq(cg_dev_wrap(d, src, n, &w), info->host_memory ? CG_OK : CG_ERR_UNSUPPORTED);
    cg_dev_free(d, &w);
    /* constant uploads: the bytes themselves on the CPU */
    cg_buf c;
    ck_assert_int_eq(cg_dev_upload_const(d, src, n, &c), CG_OK);
    ck_assert_int_eq(c.kind, info->host_memory ? CG_BUF_WRAP : CG_BUF_ALLOC);
    ck_assert_int_eq(cg_dev_read(d, &c, 0, dst, n), CG_OK);
    ck_assert_int_eq(memcmp(dst, src, n), 0);
    cg_dev_free(d, &c);
    /* too large for the device: refused, not attempted */
    cg_buf huge;
    ck_assert_int_eq(cg_dev_alloc(d, SIZE_MAX / 2, &huge), CG_ERR_NO_MEMORY);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), info->name));
    cg_dev_free(d, &v);
    cg_dev_free(d, &other);
    cg_dev_free(d, &whole);
    cg_dev_memory_get(d, &m1);
    ck_assert_uint_eq(m1.bytes_now, m0.bytes_now);
    ck_assert_uint_eq(m1.buffers_now, m0.buffers_now);
    free(src);
    free(dst);
    cg_dev_release(d);
}
END_TEST

/* cg_dev_transfer between every ordered pair of devices (through the host
 * between two OpenCL devices). */
START_TEST(test_transfer_pairs) {
    int from_i = _i / n_devices(), to_i = _i % n_devices();
    cg_device *from, *to;
    ck_assert_int_eq(cg_dev_open(from_i, &from), CG_OK);
    ck_assert_int_eq(cg_dev_open(to_i, &to), CG_OK);
    size_t n = 1000;
    float *src = malloc(n * sizeof *src), *dst = calloc(n, sizeof *dst), *staging = malloc(n * sizeof *staging);
    for (size_t k = 0; k < n; k++) src[k] = (float)k * 0.5f - 7.0f;
    cg_buf a, b;
    ck_assert_int_eq(cg_dev_alloc(from, n * sizeof *src, &a), CG_OK);
    ck_assert_int_eq(cg_dev_alloc(to, n * sizeof *src, &b), CG_OK);
    ck_assert_int_eq(cg_dev_write(from, &a, 0, src, n * sizeof *src), CG_OK);
    cg_event ev;
    ck_assert_msg(cg_dev_transfer(from, &a, to, &b, n * sizeof *src, staging, &ev) == CG_OK, "%s", cg_last_error());
    ck_assert_int_eq(cg_dev_wait(&ev), CG_OK);
    ck_assert_int_eq(cg_dev_finish(to), CG_OK);
    ck_assert_int_eq(cg_dev_read(to, &b, 0, dst, n * sizeof *dst), CG_OK);
    ck_assert_int_eq(memcmp(dst, src, n * sizeof *src), 0);
    cg_dev_free(from, &a);
    cg_dev_free(to, &b);
    free(src);
    free(dst);
    free(staging);
    cg_dev_release(from);
    cg_dev_release(to);
}
END_TEST

/* ---- kernels: y = x * s + ws_fill, with a state holding s ---- */

static int n_created, n_destroyed;

static cg_op_status cpu_run(const cg_kernel_args *a) {
    const cg_op_call *c = a->call;
    const float *x = a->in[0];
    float *y = a->out[0];
    float s = a->state ? *(const float *)a->state : 1.0f;
    if (c->attrs && c->attrs[0].i == 99) {
        snprintf(c->err, c->err_size, "refused on purpose");
        return CG_OP_ERROR;
    }
    ck_assert_ptr_nonnull(a->workspace);
    ck_assert_uint_ge(a->workspace_size, 16);
    for (int64_t i = 0; i < c->inputs[0].dims[0]; i++) y[i] = x[i] * s;
    return CG_OP_OK;
}

static size_t ws16(const cg_op_call *c) { return c ? 16 : 0; }

/* The state: 2 * the first parameter's first element (0 if none given). */
static cg_op_status cpu_create(const cg_kernel_args *a, void **state, size_t *bytes) {
    float *s = malloc(sizeof *s);
    if (!s) return CG_OP_NO_MEMORY;
    *s = a->in[0] ? 2.0f : 3.0f;
    *state = s;
    *bytes = sizeof *s;
    n_created++;
    return CG_OP_OK;
}

static void cpu_destroy(void *s) {
    free(s);
    n_destroyed++;
}

static int cpu_supports(const cg_kernel_args *a) { return a->call->inputs[0].dims[0] <= 100; }

static const cg_kernel_def cpu_kernel = {.struct_size = sizeof(cg_kernel_def),
                                         .backend = CG_BACKEND_CPU,
                                         .workspace = ws16,
                                         .run = cpu_run,
                                         .create = cpu_create,
                                         .destroy = cpu_destroy,
                                         .supports = cpu_supports};

static cg_op_call call_for(cg_tensor_desc *in, cg_tensor_desc *out, const cg_attr_value *attrs, char *err,
                           size_t size) {
    cg_op_call c = {.struct_size = sizeof c,
                    .node_name = "t",
                    .n_inputs = 1,
                    .n_outputs = 1,
                    .inputs = in,
                    .outputs = out,
                    .attrs = attrs,
                    .err = err,
                    .err_size = size};
    return c;
}

START_TEST(test_cpu_kernel) {
    cg_device *cpu;
    ck_assert_int_eq(cg_dev_open(0, &cpu), CG_OK);
    cg_tensor_desc in = {CG_OP_F32, 1, {5}}, out = in;
    cg_attr_value attr = {.type = CG_ATTR_INT, .i = 0};
    char err[256] = "";
    cg_op_call call = call_for(&in, &out, &attr, err, sizeof err);
    ck_assert_int_eq(cg_dev_supports(cpu, &cpu_kernel, &call), 1);
    cg_tensor_desc wide = {CG_OP_F32, 1, {101}};
    cg_op_call wcall = call_for(&wide, &wide, &attr, err, sizeof err);
    ck_assert_int_eq(cg_dev_supports(cpu, &cpu_kernel, &wcall), 0);
    float x[5] = {1, 2, 3, 4, -5}, y[5];
    const void *hin[1] = {x};
    void *hout[1] = {y};
    n_created = n_destroyed = 0;
    double us = -1;
    /* every input is a parameter in a trial: the state sees x, s = 2 */
    ck_assert_int_eq(cg_dev_run_host(cpu, &cpu_kernel, &call, hin, hout, 0, 5, &us), CG_OK);
    ck_assert(us > 0);
    ck_assert_int_eq(n_created, 1);
    ck_assert_int_eq(n_destroyed, 1);
    for (int i = 0; i < 5; i++) ck_assert_float_eq(y[i], 2.0f * x[i]);
    /* a failing kernel: CG_ERR_KERNEL, its message in call->err */
    attr.i = 99;
    ck_assert_int_eq(cg_dev_run_host(cpu, &cpu_kernel, &call, hin, hout, 0, 0, NULL), CG_ERR_KERNEL);
    ck_assert_str_eq(err, "refused on purpose");
    ck_assert_int_eq(n_destroyed, 2); /* the state is freed on failure too */
    /* states with and without parameters */
    attr.i = 0;
    cg_buf px;
    ck_assert_int_eq(cg_dev_wrap(cpu, x, sizeof x, &px), CG_OK);
    const cg_buf *params[1] = {NULL};
    void *state;
    size_t bytes;
    ck_assert_int_eq(cg_dev_state_create(cpu, &cpu_kernel, &call, params, &state, &bytes), CG_OK);
    ck_assert_float_eq(*(float *)state, 3.0f);
    ck_assert_uint_eq(bytes, sizeof(float));
    cg_buf py, ws;
    ck_assert_int_eq(cg_dev_wrap(cpu, y, sizeof y, &py), CG_OK);
    ck_assert_int_eq(cg_dev_alloc(cpu, 16, &ws), CG_OK);
    const cg_buf *ins[1] = {&px}, *outs[1] = {&py};
    ck_assert_int_eq(cg_dev_run(cpu, &cpu_kernel, &call, ins, outs, &ws, state, NULL, 0), CG_OK);
    for (int i = 0; i < 5; i++) ck_assert_float_eq(y[i], 3.0f * x[i]);
    cg_dev_state_destroy(&cpu_kernel, state);
    cg_dev_free(cpu, &ws);
    cg_dev_release(cpu);
}
END_TEST

/* ---- an OpenCL kernel through the host services: y = x + 1 ---- */

static cg_host_api host;

static cg_op_status cl_run(const cg_kernel_args *a) {
    static const char src[] = "__kernel void inc(__global const float *x, __global float *y, int n) {\n"
                              "    int i = get_global_id(0); if (i < n) y[i] = x[i] + 1.0f; }\n";
    void *k = host.cl_kernel(a, src, "", "inc");
    if (!k) return CG_OP_ERROR;
    cl_mem x = (cl_mem)a->in[0], y = (cl_mem)a->out[0];
    cl_int n = (cl_int)a->call->inputs[0].dims[0];
    if (clSetKernelArg(k, 0, sizeof x, &x) || clSetKernelArg(k, 1, sizeof y, &y) || clSetKernelArg(k, 2, sizeof n, &n))
        return CG_OP_ERROR;
    size_t global = (size_t)n, local = 1;
    return host.cl_launch(a, k, 1, &global, &local);
}

static const cg_kernel_def cl_kernel_def = {
    .struct_size = sizeof(cg_kernel_def), .backend = CG_BACKEND_OPENCL, .run = cl_run};

START_TEST(test_cl_kernel) {
    int d = 1 + _i;
    if (d >= n_devices()) return;
    cg_backend_host_services(&host);
    cg_device *dev;
    ck_assert_int_eq(cg_dev_open(d, &dev), CG_OK);
    cg_tensor_desc in = {CG_OP_F32, 1, {300}}, out = in;
    char err[512] = "";
    cg_op_call call = call_for(&in, &out, NULL, err, sizeof err);
    call.host = &host;
    ck_assert_int_eq(cg_dev_supports(dev, &cl_kernel_def, &call), 1);
    ck_assert_int_eq(cg_dev_supports(dev, &cpu_kernel, &call), 0); /* another kind */
    float x[300], y[300];
    for (int i = 0; i < 300; i++) x[i] = (float)i / 3.0f;
    const void *hin[1] = {x};
    void *hout[1] = {y};
    cg_dev_counters c0, c1;
    cg_dev_counters_get(&c0);
    ck_assert_msg(cg_dev_run_host(dev, &cl_kernel_def, &call, hin, hout, 0xff, 0, NULL) == CG_OK, "%s / %s", err,
                  cg_last_error());
    cg_dev_counters_get(&c1);
    ck_assert_uint_ge(c1.launches, c0.launches + 1);
    for (int i = 0; i < 300; i++) ck_assert_float_eq(y[i], x[i] + 1.0f);
    cg_dev_release(dev);
}
END_TEST

/* The "opencl" extension (ABI 1.4) is the table's cl_* services under a
 * name; other names and later versions than the host's give NULL. */
START_TEST(test_opencl_extension) {
    cg_host_api h = {.struct_size = sizeof(cg_host_api)};
    cg_backend_host_services(&h);
    ck_assert_ptr_nonnull(h.extension);
    const cg_host_opencl *cl = h.extension(CG_HOST_OPENCL, 1);
    ck_assert_ptr_nonnull(cl);
    ck_assert_uint_eq(cl->struct_size, sizeof(cg_host_opencl));
    ck_assert_uint_eq(cl->version, CG_HOST_OPENCL_VERSION);
    ck_assert(cl->kernel == h.cl_kernel && cl->launch == h.cl_launch && cl->sgemm == h.cl_sgemm &&
              cl->info == h.cl_info && cl->error_name == h.cl_error_name);
    ck_assert_str_eq(cl->error_name(-5), "CL_OUT_OF_RESOURCES");
    ck_assert_ptr_eq(h.extension(CG_HOST_OPENCL, 0), cl);
    ck_assert_ptr_null(h.extension(CG_HOST_OPENCL, CG_HOST_OPENCL_VERSION + 1));
    ck_assert_ptr_null(h.extension("vulkan", 1));
    ck_assert_ptr_null(h.extension("", 1));
    ck_assert_ptr_null(h.extension(NULL, 1));
}
END_TEST

int main(void) {
    Suite *s = suite_create("backend");
    TCase *tc = tcase_create("backend");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_table);
    tcase_add_loop_test(tc, test_buffers, 0, n_devices());
    tcase_add_loop_test(tc, test_transfer_pairs, 0, n_devices() * n_devices());
    tcase_add_test(tc, test_cpu_kernel);
    tcase_add_test(tc, test_opencl_extension);
    tcase_add_loop_test(tc, test_cl_kernel, 0, 2);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 1);
}
