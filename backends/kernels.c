/* Kernels on devices (backend.h): whether a kernel runs a node there, its
 * per-node state, one run, and the one "allocate, fill, run, read back"
 * that cost measurement, conformance and auto placement share. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_impl.h"
#include "check_msg.h"
#include "error.h"
#include "mem.h"
#include "shape.h"

/* A kernel def from the registry is the host's full layout (the registry
 * copies each plugin's kernels into it), so every 1.1 field can be read. */

int cg_dev_supports(cg_device *d, const cg_kernel_def *k, const cg_op_call *call) {
    if (!d || !k || k->backend != d->info->kind) return 0;
    if (!k->supports) return 1;
    cg_kernel_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.call = call;
    d->iface->bind(d, &a);
    return k->supports(&a) != 0;
}

size_t cg_dev_workspace(const cg_kernel_def *k, const cg_op_call *call) {
    return k && k->workspace ? k->workspace(call) : 0;
}

int cg_dev_checks(const cg_device *d, const cg_kernel_def *k) {
    return d && k && !d->info->host_memory && (k->flags & CG_KERNEL_FLAG_CHECKS);
}

static void fill_args(cg_device *d, cg_kernel_args *a, const cg_op_call *call, const void **in, void **out,
                      const cg_buf *ws, void *state) {
    /* Every member set one by one: GCC turns a memset of the struct, or a
     * compound literal, into `rep stos`, whose start-up cost was a quarter
     * of a tiny node's run. The assertion catches a member added later. */
    _Static_assert(sizeof(cg_kernel_args) - offsetof(cg_kernel_args, check_word) <= 8,
                   "fill_args sets every member of cg_kernel_args");
    a->struct_size = sizeof *a;
    a->call = call;
    a->in = in;
    a->out = out;
    a->workspace = NULL;
    a->workspace_size = 0;
    a->stream = NULL;
    a->device = NULL;
    a->check = NULL;
    a->check_word = 0;
    if (ws && ws->kind != CG_BUF_NONE) {
        a->workspace = ws->handle;
        a->workspace_size = ws->bytes;
    }
    a->state = state;
    d->iface->bind(d, a);
}

cg_status cg_dev_state_create(cg_device *d, const cg_kernel_def *k, const cg_op_call *call, const cg_buf *const *params,
                              void **state, size_t *bytes) {
    *state = NULL;
    *bytes = 0;
    if (!k->create) return CG_OK;
    int n = call->n_inputs;
    const void **in = calloc((size_t)n + 1, sizeof *in);
    if (!in) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < n; i++) in[i] = params && params[i] ? params[i]->handle : NULL;
    cg_kernel_args a;
    fill_args(d, &a, call, in, NULL, NULL, NULL);
    if (call->err && call->err_size) call->err[0] = '\0';
    cg_op_status rc = k->create(&a, state, bytes);
    free(in);
    if (rc == CG_OP_OK) return CG_OK;
    *state = NULL;
    *bytes = 0;
    if (call->err && call->err_size) call->err[call->err_size - 1] = '\0'; /* a plugin may fill it without one */
    const char *why = call->err && call->err[0] ? call->err : "(no message)";
    return cg_error(rc == CG_OP_NO_MEMORY ? CG_ERR_NO_MEMORY : CG_ERR_KERNEL,
                    "%s: creating the kernel state failed: %s", d->info->label, why);
}

void cg_dev_state_destroy(const cg_kernel_def *k, void *state) {
    if (k && state && k->destroy) k->destroy(state);
}

/* Room for a call's kernel pointers: on the stack for the usual few. */
typedef struct ptrs {
    const void *in_small[16];
    void *out_small[16];
    const void **in;
    void **out;
} ptrs;

static cg_status ptrs_init(ptrs *p, int n_in, int n_out) {
    p->in = n_in <= 16 ? p->in_small : malloc(sizeof *p->in * (size_t)n_in);
    p->out = n_out <= 16 ? p->out_small : malloc(sizeof *p->out * (size_t)n_out);
    if (p->in && p->out) return CG_OK;
    if (p->in != p->in_small) free(p->in);
    if (p->out != p->out_small) free(p->out);
    return cg_error(CG_ERR_NO_MEMORY, "out of memory");
}

static void ptrs_free(ptrs *p) {
    if (p->in != p->in_small) free(p->in);
    if (p->out != p->out_small) free(p->out);
}

cg_status cg_dev_run(cg_device *d, const cg_kernel_def *k, const cg_op_call *call, const cg_buf *const *in,
                     const cg_buf *const *out, const cg_buf *ws, void *state, const cg_buf *check, int32_t check_word) {
    ptrs p;
    cg_status st = ptrs_init(&p, call->n_inputs, call->n_outputs);
    if (st) return st;
    for (int i = 0; i < call->n_inputs; i++) p.in[i] = in[i]->handle;
    for (int i = 0; i < call->n_outputs; i++) p.out[i] = out[i]->handle;
    cg_kernel_args a;
    fill_args(d, &a, call, p.in, p.out, ws, state);
    if (check && check->kind != CG_BUF_NONE && cg_dev_checks(d, k)) {
        a.check = check->handle;
        a.check_word = check_word;
    }
    cg_op_status rc = d->iface->run(d, k, &a);
    ptrs_free(&p);
    return rc == CG_OP_OK ? CG_OK : CG_ERR_KERNEL;
}

/* ---- run on host data ---- */

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Buffers of one trial: inputs, outputs, workspace. */
typedef struct trial {
    int n_in, n_out;
    cg_buf *in, *out, ws;
    const cg_buf **in_p, **out_p;
    int *out_wrapped;  /* output i is the caller's host memory */
    cg_buf check;      /* the kernel's check words (CG_KERNEL_FLAG_CHECKS) */
    size_t guard;      /* guard bytes each side of a device input or output */
    cg_buf *parent;    /* with guard: the allocation each output views */
    cg_buf *in_parent; /* ... and each input */
} trial;

static void trial_free(cg_device *d, trial *t) {
    for (int i = 0; t->in && i < t->n_in; i++) cg_dev_free(d, &t->in[i]);
    for (int i = 0; t->out && i < t->n_out; i++) cg_dev_free(d, &t->out[i]);
    for (int i = 0; t->parent && i < t->n_out; i++) cg_dev_free(d, &t->parent[i]);
    for (int i = 0; t->in_parent && i < t->n_in; i++) cg_dev_free(d, &t->in_parent[i]);
    free(t->parent);
    free(t->in_parent);
    cg_dev_free(d, &t->ws);
    cg_dev_free(d, &t->check);
    free(t->in);
    free(t->out);
    free(t->in_p);
    free(t->out_p);
    free(t->out_wrapped);
}

/* A device buffer of `bytes` filled from `host` (NULL: with byte `fill`). */
static cg_status filled(cg_device *d, size_t bytes, const void *host, int fill, cg_buf *b) {
    cg_status st = cg_dev_alloc(d, bytes, b);
    if (st || !bytes) return st;
    if (host) return cg_dev_write(d, b, 0, host, bytes);
    void *z = malloc(bytes);
    if (!z) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    memset(z, fill, bytes);
    st = cg_dev_write(d, b, 0, z, bytes);
    free(z);
    return st;
}

/* The buffer of one input or output of a trial: on a device with host
 * memory the caller's bytes themselves when it has them (a kernel writes
 * only its outputs), else a device buffer filled from `host` or with byte
 * `fill`. *wrapped tells which. */
static cg_status trial_buf(cg_device *d, size_t bytes, const void *host, int fill, int is_out, cg_buf *b,
                           int *wrapped) {
    *wrapped = 0;
    if (host && d->info->host_memory) {
        if (is_out) memset((void *)host, fill, bytes);
        *wrapped = 1;
        return cg_dev_wrap(d, (void *)host, bytes, b);
    }
    return filled(d, bytes, is_out ? NULL : host, fill, b);
}

/* An input or output of a guarded trial on a device without host memory:
 * a view into an allocation `guard` bytes larger on each side, the sides
 * holding byte `side` and the view the bytes of `host` (NULL: byte `fill`). */
static cg_status guarded_buf(cg_device *d, size_t bytes, size_t guard, int side, const void *host, int fill,
                             cg_buf *parent, cg_buf *view) {
    cg_status st = cg_dev_alloc(d, bytes + 2 * guard, parent);
    unsigned char *h = st ? NULL : malloc(bytes + 2 * guard);
    if (!st && !h) st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if (!st) {
        memset(h, side, guard);
        if (host) memcpy(h + guard, host, bytes);
        else memset(h + guard, fill, bytes);
        memset(h + guard + bytes, side, guard);
        st = cg_dev_write(d, parent, 0, h, bytes + 2 * guard);
    }
    free(h);
    if (!st) st = cg_dev_view(d, parent, guard, bytes, view);
    return st;
}

static cg_status trial_init(cg_device *d, const cg_kernel_def *k, const cg_op_call *call, const void *const *host_in,
                            void *const *host_out, int out_fill, size_t guard, trial *t) {
    memset(t, 0, sizeof *t);
    t->n_in = call->n_inputs;
    t->n_out = call->n_outputs;
    t->in = calloc((size_t)t->n_in + 1, sizeof *t->in);
    t->out = calloc((size_t)t->n_out + 1, sizeof *t->out);
    t->in_p = calloc((size_t)t->n_in + 1, sizeof *t->in_p);
    t->out_p = calloc((size_t)t->n_out + 1, sizeof *t->out_p);
    t->out_wrapped = calloc((size_t)t->n_out + 1, sizeof *t->out_wrapped);
    if (!t->in || !t->out || !t->in_p || !t->out_p || !t->out_wrapped)
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    cg_status st = CG_OK;
    int wrapped;
    if (guard && !d->info->host_memory) {
        /* views start at multiples of the device's alignment */
        t->guard = (guard + d->info->align - 1) / d->info->align * d->info->align;
        t->parent = calloc((size_t)t->n_out + 1, sizeof *t->parent);
        t->in_parent = calloc((size_t)t->n_in + 1, sizeof *t->in_parent);
        if (!t->parent || !t->in_parent) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    for (int i = 0; !st && i < t->n_in; i++) {
        size_t bytes = cg_desc_bytes(&call->inputs[i]);
        const void *host = host_in ? host_in[i] : NULL;
        if (t->in_parent) /* a read past the input reads NaN (all bits set) */
            st = guarded_buf(d, bytes, t->guard, CG_GUARD_IN_BYTE, host, 0, &t->in_parent[i], &t->in[i]);
        else st = trial_buf(d, bytes, host, 0, 0, &t->in[i], &wrapped);
        t->in_p[i] = &t->in[i];
    }
    for (int i = 0; !st && i < t->n_out; i++) {
        size_t bytes = cg_desc_bytes(&call->outputs[i]);
        void *host = host_out ? host_out[i] : NULL;
        if (t->parent) {
            st = guarded_buf(d, bytes, t->guard, CG_GUARD_BYTE, NULL, out_fill, &t->parent[i], &t->out[i]);
        } else {
            if (guard && host) { /* the caller's memory has the guard bytes around it */
                memset((char *)host - guard, CG_GUARD_BYTE, guard);
                memset((char *)host + bytes, CG_GUARD_BYTE, guard);
            }
            st = trial_buf(d, bytes, host, out_fill, 1, &t->out[i], &t->out_wrapped[i]);
        }
        t->out_p[i] = &t->out[i];
    }
    size_t ws = cg_dev_workspace(k, call);
    if (!st && ws) st = cg_dev_alloc(d, ws, &t->ws);
    if (!st && cg_dev_checks(d, k)) st = filled(d, sizeof(int32_t) * CG_CHECK_WORDS, NULL, 0, &t->check);
    return st;
}

/* After a run has finished: the kernel's check words, as the failure a CPU
 * kernel would have returned (the message in call->err). */
static cg_status trial_checked(cg_device *d, const cg_op_call *call, const trial *t) {
    if (t->check.kind == CG_BUF_NONE) return CG_OK;
    int32_t w[CG_CHECK_WORDS];
    cg_status st = cg_dev_read(d, &t->check, 0, w, sizeof w);
    if (st) return st;
    char msg[256];
    if (!cg_check_words_message(msg, sizeof msg, w, NULL, 0)) return CG_OK;
    if (call->err && call->err_size) snprintf(call->err, call->err_size, "%s", msg);
    return CG_ERR_KERNEL;
}

static int changed(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != CG_GUARD_BYTE) return 1;
    return 0;
}

/* After the runs: the first output whose guard bytes changed (-1: none),
 * the side in *side (-1 before, 1 after). */
static cg_status trial_guards(cg_device *d, void *const *host_out, size_t guard, const trial *t, int *bad, int *side) {
    *bad = -1;
    *side = 0;
    unsigned char *h = t->parent && t->guard ? malloc(t->guard) : NULL;
    if (t->parent && t->guard && !h) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    cg_status st = CG_OK;
    for (int i = 0; !st && *bad < 0 && i < t->n_out; i++) {
        size_t bytes = t->out[i].bytes;
        for (int sd = -1; !st && *bad < 0 && sd <= 1; sd += 2) {
            if (t->parent) {
                st = cg_dev_read(d, &t->parent[i], sd < 0 ? 0 : t->guard + bytes, h, t->guard);
                if (!st && changed(h, t->guard)) *bad = i, *side = sd;
            } else if (host_out && host_out[i] &&
                       changed((const unsigned char *)host_out[i] + (sd < 0 ? -(ptrdiff_t)guard : (ptrdiff_t)bytes),
                               guard)) {
                *bad = i, *side = sd;
            }
        }
    }
    free(h);
    return st;
}

/* Runs the kernel once, then (reps > 0) until ~2 ms or reps runs; each
 * run is waited for so the time is the kernel's. */
static cg_status timed_runs(cg_device *d, const cg_kernel_def *k, const cg_op_call *call, trial *t, void *state,
                            int reps, double *us) {
    cg_status st = cg_dev_run(d, k, call, t->in_p, t->out_p, &t->ws, state, &t->check, 0);
    if (!st) st = cg_dev_finish(d);
    if (!st) st = trial_checked(d, call, t);
    if (st || reps <= 0) return st;
    int n = 0;
    double t0 = now_us(), t1 = t0;
    while (!st && (n < 3 || t1 - t0 < 2000) && n < reps) {
        st = cg_dev_run(d, k, call, t->in_p, t->out_p, &t->ws, state, &t->check, 0);
        if (!st) st = cg_dev_finish(d);
        n++;
        t1 = now_us();
    }
    if (!st && us) *us = (t1 - t0) / n;
    return st;
}

static cg_status run_host(cg_device *d, const cg_kernel_def *k, const cg_op_call *call, const void *const *host_in,
                          void *const *host_out, int out_fill, int reps, double *us, cg_trial_guard *g) {
    if (!d || !k || !call) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_dev_run_host: NULL argument");
    if (us) *us = 0;
    trial t;
    cg_status st = trial_init(d, k, call, host_in, host_out, out_fill, g ? g->bytes : 0, &t);
    void *state = NULL;
    size_t state_bytes = 0;
    /* Every input stays constant for the whole trial, so the state may
     * take them all as parameters (it then runs the path a plan's node with
     * weights runs). */
    if (!st) st = cg_dev_state_create(d, k, call, t.in_p, &state, &state_bytes);
    if (!st) st = timed_runs(d, k, call, &t, state, reps, us);
    /* a kernel that failed may still have written past its outputs */
    if (g && (!st || st == CG_ERR_KERNEL)) {
        cg_status gs = trial_guards(d, host_out, g->bytes, &t, &g->bad_output, &g->bad_side);
        if (gs) st = gs;
    }
    for (int i = 0; !st && host_out && i < t.n_out; i++)
        if (host_out[i] && !t.out_wrapped[i]) st = cg_dev_read(d, &t.out[i], 0, host_out[i], t.out[i].bytes);
    cg_dev_state_destroy(k, state);
    trial_free(d, &t);
    return st;
}

cg_status cg_dev_run_host(cg_device *d, const cg_kernel_def *k, const cg_op_call *call, const void *const *host_in,
                          void *const *host_out, int out_fill, int reps, double *us) {
    return run_host(d, k, call, host_in, host_out, out_fill, reps, us, NULL);
}

cg_status cg_dev_run_host_guarded(cg_device *d, const cg_kernel_def *k, const cg_op_call *call,
                                  const void *const *host_in, void *const *host_out, int out_fill, int reps, double *us,
                                  cg_trial_guard *g) {
    if (g) g->bad_output = -1, g->bad_side = 0;
    return run_host(d, k, call, host_in, host_out, out_fill, reps, us, g);
}
