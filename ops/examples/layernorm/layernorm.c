/*
 * example.layer_norm: an operator plugin for clgraph, written the way an outside
 * author writes one. It includes only the installed header
 * <clgraph/plugin.h> and OpenCL's <CL/cl.h>, does not link libclgraph
 * (every host service comes through the cg_host_api table) and exports one
 * symbol, cg_plugin_entry.
 *
 *   y = example.layer_norm(x, [gamma, [beta]]) {eps: 1e-5}
 *
 * x is f32 [..., N]; gamma and beta are f32 [N]. Over the last axis:
 *   y = (x - mean) / sqrt(var + eps) * gamma + beta
 * with the biased variance, exactly torch.nn.functional.layer_norm(x, (N,),
 * gamma, beta, eps).
 *
 * What it provides:
 *   - infer: dtype and shape checks that accept symbolic dims;
 *   - a CPU kernel (two passes per row, accumulated in double), its rows
 *     split over the CPU backend's threads with the host's parallel_for
 *     (ABI 1.1), and a per-node state (ABI 1.1): when gamma and beta are
 *     weights, their values are converted to double once per plan instead
 *     of once per row;
 *   - an OpenCL kernel (one work-group per row, reductions in local memory),
 *     its OpenCL C source embedded below as a string, with a per-node state
 *     holding the work-group size worked out once, and a `supports`
 *     callback (ABI 1.1) that keeps rows too wide for it off the device;
 *   - a decomposition into built-in ops (reduce_mean, sub, mul, affine, sqrt,
 *     div, add), used on a device without a kernel and as the op's reference
 *     meaning;
 *   - conformance cases for `clgraph conform`.
 *
 * Build: see Makefile and README.md in this folder.
 */
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif

#include <clgraph/plugin.h>

#include <CL/cl.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LN_PLUGIN_NAME "layernorm-example"
#define LN_PLUGIN_VERSION "1.1.0"

/* Indices of the declared attributes in call->attrs. */
enum { LN_ATTR_EPS, LN_N_ATTRS };

/* Largest work-group the OpenCL kernel uses (portable: AMD and Intel stop at
 * 256; it also bounds the local memory to 1 KiB). */
#define LN_MAX_LOCAL 256

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */

#if defined(__GNUC__)
#define LN_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define LN_PRINTF(a, b)
#endif

/* Writes a message into the call's error buffer and returns CG_OP_ERROR.
 * The host puts the file position, the op and the node name in front. */
static cg_op_status LN_PRINTF(2, 3) ln_fail(const cg_op_call *call, const char *fmt, ...) {
    if (call->err && call->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(call->err, call->err_size, fmt, ap);
        va_end(ap);
    }
    return CG_OP_ERROR;
}

static const char *ln_dtype(cg_op_dtype t) {
    return t == CG_OP_F32 ? "f32" : t == CG_OP_I32 ? "i32" : "an unknown dtype";
}

/* "[2, s0, ?]": concrete sizes, symbolic dims as s<k>, unknown as ?. */
static void ln_dims(char *buf, size_t size, const cg_tensor_desc *d) {
    size_t u = 0;
#define LN_PUT(...) u += (size_t)snprintf(buf + (u < size ? u : size), u < size ? size - u : 0, __VA_ARGS__)
    LN_PUT("[");
    for (int i = 0; i < d->ndim; i++) {
        const char *sep = i ? ", " : "";
        if (d->dims[i] >= 0) LN_PUT("%s%lld", sep, (long long)d->dims[i]);
        else if (d->dims[i] == CG_DIM_UNKNOWN) LN_PUT("%s?", sep);
        else LN_PUT("%ss%lld", sep, (long long)(-2 - d->dims[i]));
    }
    LN_PUT("]");
#undef LN_PUT
}

/* Rows (product of every dim but the last) and row width of a concrete x. */
static void ln_rows(const cg_tensor_desc *x, int64_t *rows, int64_t *n) {
    int64_t r = 1;
    for (int i = 0; i + 1 < x->ndim; i++) r *= x->dims[i];
    *rows = r;
    *n = x->dims[x->ndim - 1];
}

/* ------------------------------------------------------------------ */
/* Inference                                                           */

static const char *const ln_input_names[] = {"x", "gamma", "beta", NULL};

/* Checks gamma or beta (input i) against x's last dim `n`. */
static cg_op_status ln_check_vec(const cg_op_call *call, int i, int64_t n) {
    const cg_tensor_desc *v = CG_CALL_INPUT(call, i);
    char sv[160];
    ln_dims(sv, sizeof sv, v);
    if (v->dtype != CG_OP_F32)
        return ln_fail(call, "input %d (%s) must be f32, got %s", i, ln_input_names[i], ln_dtype(v->dtype));
    if (v->ndim != 1) return ln_fail(call, "input %d (%s) must have 1 dim [N], got %s", i, ln_input_names[i], sv);
    if (!cg_dim_compatible(v->dims[0], n)) {
        char sx[160];
        ln_dims(sx, sizeof sx, CG_CALL_INPUT(call, 0));
        return ln_fail(call, "input %d (%s) has shape %s, expected [%lld] (the last dim of x %s)", i, ln_input_names[i],
                       sv, (long long)n, sx);
    }
    return CG_OP_OK;
}

static cg_op_status ln_infer(cg_op_call *call) {
    const cg_tensor_desc *x = CG_CALL_INPUT(call, 0);
    double eps = CG_CALL_ATTR(call, LN_ATTR_EPS)->f;
    if (x->dtype != CG_OP_F32) return ln_fail(call, "input 0 (x) must be f32, got %s", ln_dtype(x->dtype));
    if (x->ndim < 1)
        return ln_fail(call, "input 0 (x) must have at least 1 dim (normalised over the last), "
                             "got a scalar");
    if (!(eps >= 0.0) || isinf(eps)) return ln_fail(call, "attribute eps must be a finite number >= 0, got %g", eps);
    /* The last dim, as precise as the inputs allow: a concrete size from
     * gamma or beta fills in a symbolic or unknown one of x. */
    int64_t n = x->dims[x->ndim - 1];
    for (int i = 1; i < call->n_inputs; i++) {
        if (ln_check_vec(call, i, n)) return CG_OP_ERROR;
        n = cg_dim_unify(n, CG_CALL_INPUT(call, i)->dims[0]);
    }
    cg_tensor_desc *y = CG_CALL_OUTPUT(call, 0);
    *y = *x;
    y->dims[x->ndim - 1] = n;
    return CG_OP_OK;
}

/* ------------------------------------------------------------------ */
/* CPU kernel                                                          */

/* Whether the host's table has a field (a service added in a later minor
 * than the plugin needs at least). */
#define LN_HOST_HAS(h, field) ((h)->struct_size >= offsetof(cg_host_api, field) + sizeof((h)->field))

/* The host's OpenCL services, set once by ln_init: the "opencl" extension
 * of a host of ABI 1.4 or later (NULL when that host was built without
 * OpenCL), else the same functions from an older host table's cl_*
 * members. */
static const cg_host_opencl *ln_cl;
static cg_host_opencl ln_cl_from_table;

/* The CPU kernel's per-node state: gamma and beta of a row in double
 * (1 and 0 where the node has none), made once when they are weights. */
typedef struct ln_coeffs {
    int64_t n;
    double *gamma, *beta;
} ln_coeffs;

/* One kernel call's rows, for parallel_for. */
typedef struct ln_job {
    const float *x, *gamma, *beta;
    float *y;
    const ln_coeffs *coeffs; /* NULL: read gamma and beta as floats */
    int64_t n;
    double eps;
} ln_job;

/* Two passes per row in double precision: the mean, then the mean of the
 * squared deviations (no cancellation of E[x^2] - E[x]^2). Every element is
 * read before the same element of y is written, so y may be x (in place).
 * Needs no workspace and allocates nothing. */
static void ln_rows_cpu(void *ctx, int64_t begin, int64_t end) {
    const ln_job *j = ctx;
    const int64_t n = j->n;
    for (int64_t r = begin; r < end; r++) {
        const float *xr = j->x + r * n;
        float *yr = j->y + r * n;
        double s = 0.0;
        for (int64_t i = 0; i < n; i++) s += xr[i];
        const double mean = s / (double)n;
        double q = 0.0;
        for (int64_t i = 0; i < n; i++) {
            double d = (double)xr[i] - mean;
            q += d * d;
        }
        const double rstd = 1.0 / sqrt(q / (double)n + j->eps);
        for (int64_t i = 0; i < n; i++) {
            double v = ((double)xr[i] - mean) * rstd;
            if (j->coeffs) {
                v = v * j->coeffs->gamma[i] + j->coeffs->beta[i];
            } else {
                if (j->gamma) v *= j->gamma[i];
                if (j->beta) v += j->beta[i];
            }
            yr[i] = (float)v;
        }
    }
}

static cg_op_status ln_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    int64_t rows, n;
    ln_rows(CG_CALL_INPUT(call, 0), &rows, &n);
    if (rows == 0 || n == 0) return CG_OP_OK;
    ln_job j = {a->in[0], call->n_inputs > 1 ? a->in[1] : NULL, call->n_inputs > 2 ? a->in[2] : NULL, a->out[0], NULL,
                n,        CG_CALL_ATTR(call, LN_ATTR_EPS)->f};
    /* args->state is ABI 1.1: a 1.0 host hands over smaller args. */
    if (a->struct_size >= offsetof(cg_kernel_args, state) + sizeof a->state) j.coeffs = a->state;
    /* Rows are independent and each is computed the same way wherever it
     * runs: split them over the host's threads when it offers them. A row
     * costs ~3n operations; below ~16k elements per chunk the threads'
     * wake-up costs more than it saves. */
    const cg_host_api *h = call->host;
    int64_t grain = n >= 16384 ? 1 : 16384 / n;
    if (LN_HOST_HAS(h, parallel_for)) h->parallel_for(rows, grain, ln_rows_cpu, &j);
    else ln_rows_cpu(&j, 0, rows);
    return CG_OP_OK;
}

/* The state: called once per plan instance before the first run. gamma and
 * beta (inputs 1, 2) are in args->in when they are weights of the plan;
 * a node fed gamma by another node gets no state and reads them per row. */
static cg_op_status ln_cpu_create(const cg_kernel_args *a, void **state, size_t *bytes) {
    const cg_op_call *call = a->call;
    int64_t rows, n;
    ln_rows(CG_CALL_INPUT(call, 0), &rows, &n);
    *state = NULL;
    *bytes = 0;
    int has_gamma = call->n_inputs > 1, has_beta = call->n_inputs > 2;
    if ((has_gamma && !a->in[1]) || (has_beta && !a->in[2]) || (!has_gamma && !has_beta) || n == 0) return CG_OP_OK;
    size_t size = sizeof(ln_coeffs) + 2 * (size_t)n * sizeof(double);
    ln_coeffs *c = malloc(size);
    if (!c) return CG_OP_NO_MEMORY;
    c->n = n;
    c->gamma = (double *)(c + 1);
    c->beta = c->gamma + n;
    const float *g = has_gamma ? a->in[1] : NULL, *b = has_beta ? a->in[2] : NULL;
    for (int64_t i = 0; i < n; i++) {
        c->gamma[i] = g ? (double)g[i] : 1.0;
        c->beta[i] = b ? (double)b[i] : 0.0;
    }
    *state = c;
    *bytes = size;
    return CG_OP_OK;
}

static void ln_free_state(void *state) { free(state); }

/* ------------------------------------------------------------------ */
/* OpenCL kernel                                                       */

/* OpenCL C 1.2. One work-group of L work-items (L a power of two) per row:
 * the items stride over the row, then reduce their partial sums in local
 * memory, once for the mean and once for the variance (two passes, as on
 * the CPU). The launch is exactly rows * L items; still, a group past the
 * last row is handled without returning early, because every work-item of
 * a group must reach each barrier, and PoCL 3.1 miscompiles even a
 * group-uniform `return` before a barrier (it crashed here with L > n).
 * gamma and beta are read only when has_gamma / has_beta are set (the host
 * passes x in their place otherwise). */
static const char ln_cl_source[] = "__kernel void cgx_layer_norm(__global const float *x,\n"
                                   "                             __global const float *gamma,\n"
                                   "                             __global const float *beta,\n"
                                   "                             __global float *y,\n"
                                   "                             const ulong rows, const int n, const float eps,\n"
                                   "                             const int has_gamma, const int has_beta,\n"
                                   "                             __local float *red)\n"
                                   "{\n"
                                   "    const ulong row = get_group_id(0);\n"
                                   "    const int lid = (int)get_local_id(0);\n"
                                   "    const int L = (int)get_local_size(0);\n"
                                   "    /* A group past the last row reaches every barrier but touches no\n"
                                   "     * element (m = 0): no early return before a barrier. */\n"
                                   "    const int m = row < rows ? n : 0;\n"
                                   "    __global const float *xr = x + (row < rows ? row : 0) * (ulong)n;\n"
                                   "    __global float *yr = y + (row < rows ? row : 0) * (ulong)n;\n"
                                   "\n"
                                   "    float s = 0.0f;\n"
                                   "    for (int i = lid; i < m; i += L) s += xr[i];\n"
                                   "    red[lid] = s;\n"
                                   "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                                   "    for (int k = L >> 1; k > 0; k >>= 1) {\n"
                                   "        if (lid < k) red[lid] += red[lid + k];\n"
                                   "        barrier(CLK_LOCAL_MEM_FENCE);\n"
                                   "    }\n"
                                   "    const float mean = red[0] / (float)n;\n"
                                   "    barrier(CLK_LOCAL_MEM_FENCE); /* every item has read red[0] */\n"
                                   "\n"
                                   "    float q = 0.0f;\n"
                                   "    for (int i = lid; i < m; i += L) {\n"
                                   "        const float d = xr[i] - mean;\n"
                                   "        q += d * d;\n"
                                   "    }\n"
                                   "    red[lid] = q;\n"
                                   "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                                   "    for (int k = L >> 1; k > 0; k >>= 1) {\n"
                                   "        if (lid < k) red[lid] += red[lid + k];\n"
                                   "        barrier(CLK_LOCAL_MEM_FENCE);\n"
                                   "    }\n"
                                   "    const float rstd = 1.0f / sqrt(red[0] / (float)n + eps);\n"
                                   "\n"
                                   "    for (int i = lid; i < m; i += L) {\n"
                                   "        float v = (xr[i] - mean) * rstd;\n"
                                   "        if (has_gamma) v *= gamma[i];\n"
                                   "        if (has_beta) v += beta[i];\n"
                                   "        yr[i] = v;\n"
                                   "    }\n"
                                   "}\n";

/* Sets kernel argument i; fails naming the argument and the OpenCL error. */
static cg_op_status ln_arg(const cg_kernel_args *a, cl_kernel k, cl_uint i, size_t size, const void *value) {
    cl_int e = clSetKernelArg(k, i, size, value);
    if (e != CL_SUCCESS)
        return ln_fail(a->call, "clSetKernelArg(cgx_layer_norm, %u): %s", (unsigned)i, ln_cl->error_name(e));
    return CG_OP_OK;
}

/* Work-group size: a power of two no larger than the device's limit
 * (cl_info), the kernel's own limit on this device, LN_MAX_LOCAL, what the
 * local memory holds, or than the row needs (a row of 17 uses 32 items). */
static size_t ln_local_size(const cg_kernel_args *a, cl_kernel k, int64_t n) {
    int64_t lim = ln_cl->info(a, CG_CL_INFO_MAX_WORK_GROUP);
    if (lim <= 0 || lim > LN_MAX_LOCAL) lim = LN_MAX_LOCAL;
    int64_t lmem = ln_cl->info(a, CG_CL_INFO_LOCAL_MEM);
    if (lmem > 0 && lmem / (int64_t)sizeof(cl_float) < lim) lim = lmem / (int64_t)sizeof(cl_float);
    cl_device_id dev;
    size_t kw = 0;
    if (clGetCommandQueueInfo((cl_command_queue)a->stream, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL) == CL_SUCCESS &&
        clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof kw, &kw, NULL) == CL_SUCCESS && kw > 0 &&
        (int64_t)kw < lim)
        lim = (int64_t)kw;
    size_t l = 1;
    while ((int64_t)(l * 2) <= lim && (int64_t)l < n) l *= 2;
    return l;
}

/* The OpenCL kernel's per-node state: the work-group size, worked out
 * once per plan instance (it depends on the device, the built kernel and
 * the row width, none of which change between runs). */
typedef struct ln_cl_state {
    size_t local;
} ln_cl_state;

/* Built on first use and cached by the host (in memory and on disk): in the
 * steady state this is a lookup that creates no OpenCL object. NULL with
 * the host's message (the build log) on failure. */
static cl_kernel ln_cl_kernel(const cg_kernel_args *a) {
    return ln_cl->kernel(a, ln_cl_source, "-cl-std=CL1.2", "cgx_layer_norm");
}

static cg_op_status ln_cl_create(const cg_kernel_args *a, void **state, size_t *bytes) {
    int64_t rows, n;
    ln_rows(CG_CALL_INPUT(a->call, 0), &rows, &n);
    *state = NULL;
    *bytes = 0;
    cl_kernel k = ln_cl_kernel(a);
    if (!k) return CG_OP_ERROR;
    ln_cl_state *st = malloc(sizeof *st);
    if (!st) return CG_OP_NO_MEMORY;
    st->local = ln_local_size(a, k, n);
    *state = st;
    *bytes = sizeof *st;
    return CG_OP_OK;
}

/* Rows are indexed with int in the kernel: wider ones are not for it (the
 * CPU kernel or the decomposition takes them instead of a failed run). */
static int ln_cl_supports(const cg_kernel_args *a) {
    int64_t rows, n;
    ln_rows(CG_CALL_INPUT(a->call, 0), &rows, &n);
    return ln_cl && n <= INT32_MAX;
}

static cg_op_status ln_opencl(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    int64_t rows, n;
    ln_rows(CG_CALL_INPUT(call, 0), &rows, &n);
    if (rows == 0 || n == 0) return CG_OP_OK;
    /* A 1.0 host asks no supports callback first. */
    if (!ln_cl) return ln_fail(call, "this host offers no OpenCL services");
    if (n > INT32_MAX) return ln_fail(call, "rows of %lld elements are too wide", (long long)n);
    cl_kernel k = ln_cl_kernel(a);
    if (!k) return CG_OP_ERROR; /* the host wrote the message (build log) */

    cl_mem x = (cl_mem)a->in[0];
    cl_mem gamma = call->n_inputs > 1 ? (cl_mem)a->in[1] : x;
    cl_mem beta = call->n_inputs > 2 ? (cl_mem)a->in[2] : x;
    cl_mem y = (cl_mem)a->out[0];
    cl_ulong c_rows = (cl_ulong)rows;
    cl_int c_n = (cl_int)n;
    cl_float c_eps = (cl_float)CG_CALL_ATTR(call, LN_ATTR_EPS)->f;
    cl_int has_gamma = call->n_inputs > 1, has_beta = call->n_inputs > 2;
    const ln_cl_state *st = a->struct_size >= offsetof(cg_kernel_args, state) + sizeof a->state ? a->state : NULL;
    size_t local = st ? st->local : ln_local_size(a, k, n);

    if (ln_arg(a, k, 0, sizeof x, &x) || ln_arg(a, k, 1, sizeof gamma, &gamma) || ln_arg(a, k, 2, sizeof beta, &beta) ||
        ln_arg(a, k, 3, sizeof y, &y) || ln_arg(a, k, 4, sizeof c_rows, &c_rows) || ln_arg(a, k, 5, sizeof c_n, &c_n) ||
        ln_arg(a, k, 6, sizeof c_eps, &c_eps) || ln_arg(a, k, 7, sizeof has_gamma, &has_gamma) ||
        ln_arg(a, k, 8, sizeof has_beta, &has_beta) || ln_arg(a, k, 9, local * sizeof(cl_float), NULL))
        return CG_OP_ERROR;

    /* One group per row. The host rounds global up to a multiple of local;
     * here it already is one. No clFinish: the host orders the queue. */
    if ((uint64_t)rows > (uint64_t)SIZE_MAX / local)
        return ln_fail(call, "%lld rows are too many for one launch", (long long)rows);
    size_t global = (size_t)rows * local;
    return ln_cl->launch(a, k, 1, &global, &local);
}

/* ------------------------------------------------------------------ */
/* Decomposition into built-in operators                               */

/* Emits nodes until one fails; then `st` keeps the failure (the host holds
 * its message) and later calls do nothing, so the decomposition reads
 * straight through and checks once at the end. */
typedef struct ln_emitter {
    cg_decomp *d;
    const cg_host_api *h;
    cg_op_status st;
} ln_emitter;

static int32_t ln_emit(ln_emitter *e, const char *op, const char *attrs, int32_t a, int32_t b) {
    if (e->st != CG_OP_OK) return -1;
    int32_t in[2] = {a, b}, out = -1;
    e->st = e->h->decomp_node(e->d, op, b >= 0 ? 2 : 1, in, 1, &out, attrs);
    return out;
}

/* A float in the IR's attribute syntax: the shortest "%.*g" that reads back
 * as the same double (1e-05, not 1.0000000000000001e-05), with a decimal
 * point added where that is an integer ("1" -> "1.0"). */
static void ln_float_text(char *buf, size_t size, double v) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    /* Under a locale with a decimal comma, printf wrote "0,5"; the IR wants "0.5". */
    for (char *c = buf; *c; c++)
        if (*c == ',') *c = '.';
    if (!strpbrk(buf, ".eEn")) {
        size_t u = strlen(buf);
        if (u + 2 < size) memcpy(buf + u, ".0", 3);
    }
}

static cg_op_status ln_decompose(cg_decomp *d, const cg_op_call *call) {
    const cg_host_api *h = call->host;
    ln_emitter e = {d, h, CG_OP_OK};
    char eps[64], affine[96];
    ln_float_text(eps, sizeof eps, CG_CALL_ATTR(call, LN_ATTR_EPS)->f);
    snprintf(affine, sizeof affine, "alpha: 1.0, beta: %s", eps);

    int32_t x = h->decomp_input(d, 0);
    int32_t mean = ln_emit(&e, "reduce_mean", "axes: [-1], keepdims: 1", x, -1);
    int32_t dev = ln_emit(&e, "sub", NULL, x, mean); /* x - mean */
    int32_t sq = ln_emit(&e, "mul", NULL, dev, dev);
    int32_t var = ln_emit(&e, "reduce_mean", "axes: [-1], keepdims: 1", sq, -1);
    int32_t std = ln_emit(&e, "sqrt", NULL, ln_emit(&e, "affine", affine, var, -1), -1);
    int32_t y = ln_emit(&e, "div", NULL, dev, std);
    if (call->n_inputs > 1) y = ln_emit(&e, "mul", NULL, y, h->decomp_input(d, 1));
    if (call->n_inputs > 2) y = ln_emit(&e, "add", NULL, y, h->decomp_input(d, 2));
    if (e.st != CG_OP_OK) return e.st;
    return h->decomp_output(d, 0, y);
}

/* ------------------------------------------------------------------ */
/* Conformance cases                                                   */

/* x [batch..., width] with values in [lo, hi]; `affine` 0: x only,
 * 1: x and gamma, 2: x, gamma and beta. Cases over 4096 elements per tensor
 * are skipped by `clgraph conform --quick`. */
typedef struct ln_case {
    int ndim;
    int64_t dims[3];
    int affine;
    const char *attrs;
    double lo, hi;
} ln_case;

static const ln_case ln_cases[] = {
    /* every width (1, 3, 17, 1000) against every batch (1, 3, 17), cycling
     * through the input sets and eps values */
    {2, {1, 1}, 2, NULL, -3, 3},
    {2, {3, 1}, 0, "eps: 0.001", -3, 3},
    {2, {17, 1}, 1, "eps: 0.1", -3, 3},
    {2, {1, 3}, 1, "eps: 1e-12", -3, 3},
    {2, {3, 3}, 2, NULL, -3, 3},
    {2, {17, 3}, 0, "eps: 0.001", -3, 3},
    {2, {1, 17}, 0, "eps: 0.1", -3, 3},
    {2, {3, 17}, 1, "eps: 1e-12", -3, 3},
    {2, {17, 17}, 2, NULL, -3, 3},
    {2, {1, 1000}, 2, "eps: 0.001", -3, 3},
    {2, {3, 1000}, 0, "eps: 0.1", -3, 3},
    {2, {17, 1000}, 1, "eps: 1e-12", -3, 3},
    /* no batch dim; three dims; widths around the largest work-group */
    {1, {1000}, 2, NULL, -3, 3},
    {1, {5}, 0, NULL, -3, 3},
    {3, {3, 17, 33}, 2, "eps: 0.001", -3, 3},
    {2, {5, 255}, 1, NULL, -3, 3},
    {2, {5, 257}, 2, NULL, -3, 3},
    {2, {3, 300}, 0, NULL, -3, 3},
    /* a large eps dominating the variance; an integer-valued eps */
    {2, {3, 17}, 2, "eps: 4.0", -1, 1},
    {2, {3, 17}, 1, "eps: 1", -1, 1},
    /* data far from zero: the two-pass variance keeps its precision */
    {2, {17, 64}, 2, NULL, 10, 11},
};

static int32_t ln_conform_case(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= (int32_t)(sizeof ln_cases / sizeof ln_cases[0])) return 0;
    const ln_case *t = &ln_cases[index];
    uint32_t ss = c->struct_size; /* set by the host: keep it */
    memset(c, 0, sizeof *c);
    c->struct_size = ss;
    c->n_inputs = 1 + t->affine;
    c->n_outputs = 1;
    c->attrs = t->attrs;
    c->inputs[0].dtype = CG_OP_F32;
    c->inputs[0].ndim = t->ndim;
    for (int i = 0; i < t->ndim; i++) c->inputs[0].dims[i] = t->dims[i];
    c->lo[0] = t->lo;
    c->hi[0] = t->hi;
    for (int i = 1; i <= t->affine; i++) {
        c->inputs[i].dtype = CG_OP_F32;
        c->inputs[i].ndim = 1;
        c->inputs[i].dims[0] = t->dims[t->ndim - 1];
        c->lo[i] = i == 1 ? 0.5 : -1.0; /* gamma in [0.5, 1.5], beta in [-1, 1] */
        c->hi[i] = i == 1 ? 1.5 : 1.0;
    }
    return 1;
}

/* ------------------------------------------------------------------ */
/* Definitions and the entry point                                     */

static const cg_attr_def ln_attrs[LN_N_ATTRS] = {
    [LN_ATTR_EPS] = CG_ATTR(.name = "eps", .type = CG_ATTR_FLOAT, .default_float = 1e-5,
                            .doc = "added to the variance before the square root (default 1e-5, >= 0)"),
};

static const cg_kernel_def ln_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = ln_cpu, .create = ln_cpu_create, .destroy = ln_free_state),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = ln_opencl, .create = ln_cl_create, .destroy = ln_free_state,
              .supports = ln_cl_supports),
};

static const cg_op_def ln_op =
    CG_OP(.name = "example.layer_norm",
          .doc = "Layer normalisation over the last axis, as torch.nn.functional.layer_norm: "
                 "y = (x - mean) / sqrt(var + eps) * gamma + beta, where mean and the biased "
                 "variance var are taken over the last dim N of f32 x [..., N]. gamma [N] and "
                 "beta [N] are optional (inputs x; x, gamma; or x, gamma, beta). Output has x's "
                 "shape. May run in place. (Example plugin " LN_PLUGIN_NAME ".)",
          .min_inputs = 1, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .input_names = ln_input_names,
          CG_ATTRS(ln_attrs), .infer = ln_infer, .decompose = ln_decompose, CG_KERNELS(ln_kernels),
          /* Both kernels read every element of a row before writing the same
     * element of y, so y may share x's buffer. */
          .flags = CG_OP_FLAG_INPLACE0, .conform_case = ln_conform_case);

/* Refuses a host whose table lacks the services this plugin cannot do
 * without (the decomposition entries, ABI 1.0) and finds the OpenCL
 * services. parallel_for (1.1) is optional: the CPU kernel tests for it at
 * each call and runs its rows serially without it. */
static cg_op_status ln_init(const cg_host_api *host, char *err, size_t err_size) {
    size_t need = offsetof(cg_host_api, decomp_output) + sizeof host->decomp_output;
    if (host->struct_size < need) {
        snprintf(err, err_size, "the host API table has %u bytes, this plugin needs %zu", (unsigned)host->struct_size,
                 need);
        return CG_OP_ERROR;
    }
    if (LN_HOST_HAS(host, extension) && host->extension) {
        ln_cl = host->extension(CG_HOST_OPENCL, 1);
    } else if (LN_HOST_HAS(host, cl_error_name)) {
        ln_cl_from_table = (cg_host_opencl){.struct_size = sizeof(cg_host_opencl),
                                            .version = 1,
                                            .kernel = host->cl_kernel,
                                            .launch = host->cl_launch,
                                            .sgemm = host->cl_sgemm,
                                            .info = host->cl_info,
                                            .error_name = host->cl_error_name};
        ln_cl = &ln_cl_from_table;
    }
    return CG_OP_OK;
}

static const cg_op_def *const ln_ops[] = {&ln_op};

static const cg_plugin_desc ln_desc =
    CG_PLUGIN(.name = LN_PLUGIN_NAME, .version = LN_PLUGIN_VERSION, .init = ln_init, CG_OPS(ln_ops));

CG_PLUGIN_EXPORT const cg_plugin_desc *cg_plugin_entry(void);
CG_PLUGIN_EXPORT const cg_plugin_desc *cg_plugin_entry(void) { return &ln_desc; }
