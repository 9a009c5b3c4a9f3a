/* Re-entrancy of the runtime: four threads share one context, one verified
 * model and one weights file, each with plans of its own, and run them at
 * once on the CPU and on opencl:0 (alternating), many times; every output
 * must equal what one thread alone computes. Built into the
 * ThreadSanitizer run of .ci/run (suite "threads"). Never forks. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/clgraph.h"
#include "test_util.h"

#define THREADS 4
#define ROUNDS 6

typedef struct shared {
    cg_model *model;
    cg_tensor *src, *src_len;
    cg_tensor *want[2]; /* keys, s0 from one thread on the CPU */
    int n_devices;
} shared;

typedef struct worker {
    const shared *sh;
    int id;
    char error[1024]; /* "" when every round matched */
} worker;

static cg_status run_once(cg_plan *p, const shared *sh, cg_tensor **outs) {
    const char *names[] = {"src", "src_len"};
    cg_tensor *in[] = {sh->src, sh->src_len};
    return cg_plan_run(p, 2, names, in, 2, outs);
}

/* max |a - b| over two tensors of one shape (-1 when the shapes differ). */
static double max_diff(const cg_tensor *a, const cg_tensor *b) {
    if (cg_tensor_numel(a) != cg_tensor_numel(b)) return -1;
    const float *x = cg_tensor_data_const(a), *y = cg_tensor_data_const(b);
    double m = 0;
    for (int64_t i = 0; i < cg_tensor_numel(a); i++) {
        double d = x[i] > y[i] ? x[i] - y[i] : y[i] - x[i];
        if (!(d <= m)) m = d; /* NaN wins */
    }
    return m;
}

static void *work(void *arg) {
    worker *w = arg;
    const shared *sh = w->sh;
    /* The CPU's answers are bit-identical whatever thread computes them;
     * PoCL's may round differently from the CPU's. */
    int on_device = sh->n_devices > 1 && w->id % 2;
    cg_plan_options opt = {.struct_size = sizeof(cg_plan_options), .device = on_device ? "opencl:0" : "cpu"};
    cg_plan *p;
    if (cg_plan_create(sh->model, "encoder", &opt, &p)) {
        snprintf(w->error, sizeof w->error, "thread %d: plan: %s", w->id, cg_last_error());
        return NULL;
    }
    for (int r = 0; r < ROUNDS && !w->error[0]; r++) {
        cg_tensor *outs[2];
        if (run_once(p, sh, outs)) {
            snprintf(w->error, sizeof w->error, "thread %d round %d: %s", w->id, r, cg_last_error());
            break;
        }
        for (int k = 0; k < 2; k++) {
            double d = max_diff(outs[k], sh->want[k]);
            if (d < 0 || d > (on_device ? 1e-5 : 0.0))
                snprintf(w->error, sizeof w->error, "thread %d round %d output %d: differs by %g", w->id, r, k, d);
            cg_tensor_free(outs[k]);
        }
    }
    cg_plan_free(p);
    return NULL;
}

START_TEST(test_shared_model) {
    char path[1024];
    cg_context *ctx;
    ck_assert_int_eq(cg_context_create(NULL, &ctx), CG_OK);
    shared sh = {.n_devices = cg_device_count()};
    snprintf(path, sizeof path, "%s/models/example/model.cg", tu_src_dir());
    ck_assert_int_eq(cg_model_load(ctx, path, &sh.model), CG_OK);
    cg_weights *wts;
    snprintf(path, sizeof path, "%s/models/example/weights.safetensors", tu_src_dir());
    ck_assert_int_eq(cg_weights_open(path, &wts), CG_OK);
    ck_assert_int_eq(cg_model_bind_weights(sh.model, wts), CG_OK);
    ck_assert_int_eq(cg_model_verify(sh.model), CG_OK);
    snprintf(path, sizeof path, "%s/models/example/src.npy", tu_src_dir());
    ck_assert_int_eq(cg_tensor_load_npy(path, &sh.src), CG_OK);
    snprintf(path, sizeof path, "%s/models/example/src_len.npy", tu_src_dir());
    ck_assert_int_eq(cg_tensor_load_npy(path, &sh.src_len), CG_OK);
    cg_plan *ref;
    ck_assert_int_eq(cg_plan_create(sh.model, "encoder", NULL, &ref), CG_OK);
    ck_assert_int_eq(run_once(ref, &sh, sh.want), CG_OK);
    cg_plan_free(ref);

    pthread_t t[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.sh = &sh, .id = i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) ck_assert_msg(!w[i].error[0], "%s", w[i].error);

    cg_tensor_free(sh.want[0]);
    cg_tensor_free(sh.want[1]);
    cg_tensor_free(sh.src);
    cg_tensor_free(sh.src_len);
    cg_model_free(sh.model);
    cg_weights_free(wts);
    cg_context_free(ctx);
}
END_TEST

/* One context per thread, each loading and running the model alone. */
static void *own_context(void *arg) {
    worker *w = arg;
    char path[1024];
    cg_context *ctx = NULL;
    cg_model *m = NULL;
    cg_weights *wts = NULL;
    cg_plan *p = NULL;
    cg_tensor *outs[2] = {0};
    snprintf(path, sizeof path, "%s/models/example/model.cg", tu_src_dir());
    cg_status st = cg_context_create(NULL, &ctx);
    if (!st) st = cg_model_load(ctx, path, &m);
    snprintf(path, sizeof path, "%s/models/example/weights.safetensors", tu_src_dir());
    if (!st) st = cg_weights_open(path, &wts);
    if (!st) st = cg_model_bind_weights(m, wts);
    cg_plan_options opt = {.struct_size = sizeof(cg_plan_options),
                           .device = w->sh->n_devices > 1 && w->id % 2 ? "opencl:0" : "cpu"};
    if (!st) st = cg_plan_create(m, "encoder", &opt, &p);
    for (int r = 0; !st && r < ROUNDS; r++) {
        st = run_once(p, w->sh, outs);
        for (int k = 0; !st && k < 2; k++)
            if (max_diff(outs[k], w->sh->want[k]) > 1e-5 || max_diff(outs[k], w->sh->want[k]) < 0)
                snprintf(w->error, sizeof w->error, "thread %d: output %d differs", w->id, k);
        cg_tensor_free(outs[0]);
        cg_tensor_free(outs[1]);
        outs[0] = outs[1] = NULL;
    }
    if (st) snprintf(w->error, sizeof w->error, "thread %d: %s", w->id, cg_last_error());
    cg_plan_free(p);
    cg_model_free(m);
    cg_weights_free(wts);
    cg_context_free(ctx);
    return NULL;
}

START_TEST(test_context_per_thread) {
    char path[1024];
    shared sh = {.n_devices = cg_device_count()};
    snprintf(path, sizeof path, "%s/models/example/src.npy", tu_src_dir());
    ck_assert_int_eq(cg_tensor_load_npy(path, &sh.src), CG_OK);
    snprintf(path, sizeof path, "%s/models/example/src_len.npy", tu_src_dir());
    ck_assert_int_eq(cg_tensor_load_npy(path, &sh.src_len), CG_OK);
    snprintf(path, sizeof path, "%s/models/example/expected_keys.npy", tu_src_dir());
    ck_assert_int_eq(cg_tensor_load_npy(path, &sh.want[0]), CG_OK);
    snprintf(path, sizeof path, "%s/models/example/expected_s0.npy", tu_src_dir());
    ck_assert_int_eq(cg_tensor_load_npy(path, &sh.want[1]), CG_OK);
    pthread_t t[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.sh = &sh, .id = i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, own_context, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) ck_assert_msg(!w[i].error[0], "%s", w[i].error);
    for (int k = 0; k < 2; k++) cg_tensor_free(sh.want[k]);
    cg_tensor_free(sh.src);
    cg_tensor_free(sh.src_len);
}
END_TEST

int main(void) {
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_shared_model);
    tcase_add_test(tc, test_context_per_thread);
    suite_add_tcase(s, tc);
    return tu_run_suite(s, 1);
}
