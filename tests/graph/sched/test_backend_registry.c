/* The backend registry holds for a backend that is neither the CPU nor
 * OpenCL: a test backend "far" (two devices with their own memory, reached
 * only by transfers, running the ops' CPU kernels on its own allocations)
 * registered before any device call. It gets device numbers after the
 * built-in ones, is found by name, opens, counts its work in the process
 * counters, and plans placed on it, whole or split with the CPU, give the
 * CPU's numbers with copies at the boundaries. Nothing above backends/ knows
 * it exists: the seam docs/architecture.md describes.
 *
 * Never forks: the registry is per process, registered once in main. */
#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"
#include "clgraph/clgraph.h"
#include "test_util.h"

/* ---- the test backend ---- */

enum { FAR_DEVICES = 2 };
static cg_device_info far_infos[FAR_DEVICES];
static _Atomic uint64_t far_allocs, far_frees, far_transfers, far_launches;

static cg_status far_alloc(cg_device *d, size_t bytes, cg_buf *out) {
    (void)d;
    out->handle = calloc(1, bytes ? bytes : 1);
    if (!out->handle) return CG_ERR_NO_MEMORY;
    far_allocs++;
    return CG_OK;
}

static cg_status far_view(cg_device *d, const cg_buf *parent, size_t offset, size_t bytes, cg_buf *out) {
    (void)d, (void)bytes;
    out->handle = (char *)parent->handle + offset;
    return CG_OK;
}

static void far_free(cg_device *d, cg_buf *b) {
    (void)d;
    if (b->kind == CG_BUF_ALLOC) {
        free(b->handle);
        far_frees++;
    }
}

static cg_status far_write(cg_device *d, const cg_buf *dst, size_t off, const void *src, size_t bytes, int async,
                           cg_event *ev) {
    (void)d, (void)async, (void)ev;
    memcpy((char *)dst->handle + off, src, bytes);
    far_transfers++;
    return CG_OK;
}

static cg_status far_read(cg_device *d, const cg_buf *src, size_t off, void *dst, size_t bytes, int async,
                          cg_event *ev) {
    (void)d, (void)async, (void)ev;
    memcpy(dst, (const char *)src->handle + off, bytes);
    far_transfers++;
    return CG_OK;
}

static cg_status far_copy(cg_device *d, const cg_buf *src, size_t src_off, const cg_buf *dst, size_t dst_off,
                          size_t bytes) {
    (void)d;
    memmove((char *)dst->handle + dst_off, (const char *)src->handle + src_off, bytes);
    far_transfers++;
    return CG_OK;
}

static cg_status far_done(cg_device *d, cg_event *ev) {
    (void)d, (void)ev;
    return CG_OK;
}

static cg_status far_finish(cg_device *d) {
    (void)d;
    return CG_OK;
}

static void far_bind(cg_device *d, cg_kernel_args *a) {
    (void)d;
    a->stream = NULL;
    a->device = NULL;
}

static cg_op_status far_run(cg_device *d, const cg_kernel_def *k, const cg_kernel_args *a) {
    (void)d;
    far_launches++;
    return k->run(a);
}

static void far_close(cg_device *d) { (void)d; }

static const cg_device_iface far_iface = {
    .alloc = far_alloc,
    .view = far_view,
    .free = far_free,
    .write = far_write,
    .read = far_read,
    .copy = far_copy,
    .wait = far_done,
    .finish = far_finish,
    .bind = far_bind,
    .run = far_run,
    .close = far_close,
};

static int far_count(void) { return FAR_DEVICES; }

static const cg_device_info *far_info(int i) {
    if (i < 0 || i >= FAR_DEVICES) return NULL;
    cg_device_info *in = &far_infos[i];
    if (!in->name[0]) {
        snprintf(in->name, sizeof in->name, "far:%d", i);
        snprintf(in->label, sizeof in->label, "far:%d (test backend)", i);
        snprintf(in->identity, sizeof in->identity, "far test backend %d", i);
        in->kind = CG_BACKEND_CPU; /* runs the ops' CPU kernels */
        in->host_memory = 0;       /* but its buffers are reached by transfers only */
        in->align = 64;
        in->compute_units = 1;
    }
    return in;
}

static cg_status far_open(int i, cg_device *d) {
    (void)i;
    d->iface = &far_iface;
    return CG_OK;
}

static void far_describe(int i, char *buf, size_t size) { snprintf(buf, size, "far:%d    a test backend", i); }

static void far_counters(cg_dev_counters *c) {
    c->objects_created += far_allocs;
    c->launches += far_launches;
    c->transfers += far_transfers;
}

static const cg_backend far_backend = {
    .name = "far",
    .count = far_count,
    .info = far_info,
    .open = far_open,
    .describe = far_describe,
    .counters_add = far_counters,
};

/* ---- tests ---- */

static const char graph_text[] = "graph g {\n"
                                 "  input x: f32[N, 4]\n"
                                 "  input w: f32[4, 3]\n"
                                 "  a: h = matmul(x, w)\n"
                                 "  t: y = tanh(h)\n"
                                 "  e: z = exp(y)\n"
                                 "  output z\n"
                                 "}\n";

/* z of graph_text for x and w below, placed by `place` on `device`. */
static void run_on(const char *device, const char *place, float *z) {
    cg_context *ctx;
    cg_model *m;
    cg_plan *p;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    ck_assert_msg(cg_model_parse(ctx, graph_text, strlen(graph_text), "g.cg", &m) == CG_OK, "%s", cg_last_error());
    int64_t wd[2] = {4, 3}, xd[2] = {2, 4};
    cg_tensor *w, *x, *out = NULL;
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, wd, &w), CG_OK);
    ck_assert_int_eq(cg_tensor_create(CG_F32, 2, xd, &x), CG_OK);
    float *wv = cg_tensor_data(w), *xv = cg_tensor_data(x);
    for (int i = 0; i < 12; i++) wv[i] = 0.1f * (float)(i - 6);
    for (int i = 0; i < 8; i++) xv[i] = 0.25f * (float)(i - 3);
    ck_assert_msg(cg_model_verify(m) == CG_OK, "%s", cg_last_error());
    cg_plan_options o = {.struct_size = sizeof(cg_plan_options), .device = device, .place = place};
    ck_assert_msg(cg_plan_create(m, "g", &o, &p) == CG_OK, "%s", cg_last_error());
    const char *names[] = {"x", "w"};
    cg_tensor *in[] = {x, w};
    ck_assert_msg(cg_plan_run(p, 2, names, in, 1, &out) == CG_OK, "%s", cg_last_error());
    memcpy(z, cg_tensor_data(out), 6 * sizeof(float));
    cg_tensor_free(out);
    cg_tensor_free(x);
    cg_plan_free(p);
    cg_model_free(m);
    cg_tensor_free(w);
    cg_context_free(ctx);
}

START_TEST(numbered_after_builtin) {
    int n = cg_device_count();
    ck_assert_int_ge(n, 1 + FAR_DEVICES);
    int i;
    ck_assert_int_eq(cg_dev_find("far:0", &i), CG_OK);
    ck_assert_int_eq(i, n - 2);
    ck_assert_int_eq(cg_dev_find("far:1", &i), CG_OK);
    ck_assert_int_eq(i, n - 1);
    ck_assert_str_eq(cg_dev_info_at(n - 1)->name, "far:1");
    ck_assert_int_eq(cg_dev_find("far", &i), CG_ERR_NOT_FOUND); /* two devices: the index is needed */
    ck_assert_int_eq(cg_dev_find("far:2", &i), CG_ERR_NOT_FOUND);
    ck_assert_int_eq(cg_dev_find("cpu", &i), CG_OK);
    ck_assert_int_eq(i, 0);
    char buf[256];
    cg_dev_describe(n - 2, buf, sizeof buf);
    ck_assert_str_eq(buf, "far:0    a test backend");
    /* devices are in use now: the registry is fixed */
    ck_assert_int_eq(cg_dev_register_backend(&far_backend), CG_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(cg_last_error(), "register backends first"));
}
END_TEST

START_TEST(open_shared_and_counted) {
    int n = cg_device_count();
    cg_device *a, *b;
    ck_assert_int_eq(cg_dev_open(n - 1, &a), CG_OK);
    ck_assert_int_eq(cg_dev_open(n - 1, &b), CG_OK);
    ck_assert_ptr_eq(a, b);
    cg_dev_counters c0, c1;
    cg_dev_counters_get(&c0);
    cg_buf buf = {0};
    float v[4] = {1, 2, 3, 4}, r[4] = {0};
    ck_assert_int_eq(cg_dev_alloc(a, sizeof v, &buf), CG_OK);
    ck_assert_ptr_null(cg_dev_host_ptr(a, &buf)); /* no host memory: transfers only */
    ck_assert_int_eq(cg_dev_write(a, &buf, 0, v, sizeof v), CG_OK);
    ck_assert_int_eq(cg_dev_read(a, &buf, 0, r, sizeof r), CG_OK);
    ck_assert_mem_eq(v, r, sizeof v);
    cg_dev_memory mem;
    cg_dev_memory_get(a, &mem);
    ck_assert_uint_eq(mem.bytes_now, sizeof v);
    cg_dev_free(a, &buf);
    cg_dev_counters_get(&c1);
    ck_assert_uint_eq(c1.objects_created - c0.objects_created, 1);
    ck_assert_uint_eq(c1.transfers - c0.transfers, 2);
    cg_dev_release(b);
    cg_dev_release(a);
}
END_TEST

START_TEST(plans_on_it_match_the_cpu) {
    float want[6], got[6];
    tu_check_runs_pause(); /* counts the launches of one run */
    run_on("cpu", NULL, want);
    uint64_t l0 = far_launches, t0 = far_transfers;
    run_on("far:1", NULL, got);
    ck_assert_mem_eq(want, got, sizeof want);
    ck_assert_uint_eq(far_launches - l0, 3);
    ck_assert_uint_ge(far_transfers - t0, 3); /* x and w up, z down */
    /* split: the product on far:0, tanh on the CPU, exp on far:1 */
    l0 = far_launches;
    run_on("far:0", "t=cpu,e=far:1", got);
    ck_assert_mem_eq(want, got, sizeof want);
    ck_assert_uint_eq(far_launches - l0, 2);
    ck_assert_uint_eq(far_allocs, far_frees); /* every buffer released with its plan */
    tu_check_runs_resume();
}
END_TEST

int main(void) {
    /* before any device call: the registry is fixed from then on */
    if (cg_dev_register_backend(&far_backend) != CG_OK) {
        fprintf(stderr, "register: %s\n", cg_last_error());
        return 1;
    }
    Suite *s = suite_create("backend_registry");
    TCase *tc = tcase_create("far");
    tcase_add_test(tc, numbered_after_builtin);
    tcase_add_test(tc, open_shared_and_counted);
    tcase_add_test(tc, plans_on_it_match_the_cpu);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 1);
}
