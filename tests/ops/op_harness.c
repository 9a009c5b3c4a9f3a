#include "op_harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_blas.h"
#include "dtype.h"

static int attr_index(const cg_op_def *def, const char *key) {
    for (int i = 0; i < def->n_attrs; i++)
        if (strcmp(def->attrs[i].name, key) == 0) return i;
    fprintf(stderr, "op_harness: op %s has no attribute %s\n", def->name, key);
    abort();
}

void th_attrs_init(th_attrs *a, const cg_op_def *def) {
    memset(a, 0, sizeof *a);
    for (int i = 0; i < def->n_attrs && i < TH_MAX_ATTRS; i++) {
        const cg_attr_def *d = &def->attrs[i];
        a->v[i].type = d->type;
        a->v[i].i = d->default_int;
        a->v[i].f = d->default_float;
        a->v[i].s = d->default_string ? d->default_string : "";
    }
}

void th_set_int(th_attrs *a, const cg_op_def *def, const char *key, int64_t v) {
    int i = attr_index(def, key);
    a->v[i].i = v;
    a->v[i].f = (double)v;
    a->v[i].present = 1;
}

void th_set_float(th_attrs *a, const cg_op_def *def, const char *key, double v) {
    int i = attr_index(def, key);
    a->v[i].f = v;
    a->v[i].present = 1;
}

void th_set_string(th_attrs *a, const cg_op_def *def, const char *key, const char *v) {
    int i = attr_index(def, key);
    a->v[i].s = v;
    a->v[i].present = 1;
}

void th_set_ints(th_attrs *a, const cg_op_def *def, const char *key, int n, const int64_t *v) {
    int i = attr_index(def, key);
    if (n > 0) memcpy(a->ints_store[i], v, sizeof(int64_t) * (size_t)n);
    a->v[i].ints = a->ints_store[i];
    a->v[i].n_ints = n;
    a->v[i].present = 1;
}

th_tensor th_f32(float *data, int ndim, const int64_t *dims) {
    th_tensor t;
    memset(&t, 0, sizeof t);
    t.desc.dtype = CG_OP_F32;
    t.desc.ndim = ndim;
    memcpy(t.desc.dims, dims, sizeof(int64_t) * (size_t)ndim);
    t.data = data;
    return t;
}

th_tensor th_i32(int32_t *data, int ndim, const int64_t *dims) {
    th_tensor t = th_f32(NULL, ndim, dims);
    t.desc.dtype = CG_OP_I32;
    t.data = data;
    return t;
}

static void host_sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                       const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    cg_cpu_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static const cg_host_api th_host = {
    .struct_size = sizeof(cg_host_api),
    .abi_major = CG_PLUGIN_ABI_MAJOR,
    .abi_minor = CG_PLUGIN_ABI_MINOR,
    .sgemm = host_sgemm,
};

static void make_call(cg_op_call *call, const cg_op_def *def, int n_in, cg_tensor_desc *ind, const th_attrs *attrs,
                      int n_out, cg_tensor_desc *outd, char *err, size_t err_size) {
    memset(call, 0, sizeof *call);
    call->struct_size = sizeof *call;
    call->node_name = def->name;
    call->n_inputs = n_in;
    call->n_outputs = n_out;
    call->inputs = ind;
    call->outputs = outd;
    call->attrs = attrs ? attrs->v : NULL;
    call->err = err;
    call->err_size = err_size;
    call->host = &th_host;
}

cg_op_status th_infer(const cg_op_def *def, int n_in, const th_tensor *in, const th_attrs *attrs, int n_out,
                      th_tensor *out, char *err, size_t err_size) {
    cg_tensor_desc ind[32], outd[32];
    th_attrs defaults;
    if (!attrs) { /* the real host always supplies the declared defaults */
        th_attrs_init(&defaults, def);
        attrs = &defaults;
    }
    for (int i = 0; i < n_in; i++) ind[i] = in[i].desc;
    memset(outd, 0, sizeof outd);
    cg_op_call call;
    make_call(&call, def, n_in, ind, attrs, n_out, outd, err, err_size);
    err[0] = 0;
    cg_op_status st = def->infer(&call);
    for (int i = 0; i < n_out; i++) {
        out[i].desc = outd[i];
        out[i].data = NULL;
    }
    return st;
}

int th_as_params;

cg_op_status th_run(const cg_op_def *def, int n_in, const th_tensor *in, const th_attrs *attrs, int n_out,
                    th_tensor *out, char *err, size_t err_size) {
    cg_op_status st = th_infer(def, n_in, in, attrs, n_out, out, err, err_size);
    if (st != CG_OP_OK) return st;
    const cg_kernel_def *k = NULL;
    for (int i = 0; i < def->n_kernels; i++)
        if (def->kernels[i].backend == CG_BACKEND_CPU) k = &def->kernels[i];
    if (!k) {
        snprintf(err, err_size, "no CPU kernel");
        return CG_OP_ERROR;
    }
    cg_tensor_desc ind[32], outd[32];
    th_attrs defaults;
    if (!attrs) {
        th_attrs_init(&defaults, def);
        attrs = &defaults;
    }
    for (int i = 0; i < n_in; i++) ind[i] = in[i].desc;
    for (int i = 0; i < n_out; i++) outd[i] = out[i].desc;
    cg_op_call call;
    make_call(&call, def, n_in, ind, attrs, n_out, outd, err, err_size);
    const void *inp[32];
    void *outp[32];
    for (int i = 0; i < n_in; i++) inp[i] = in[i].data;
    for (int i = 0; i < n_out; i++) {
        int64_t n = 1;
        for (int d = 0; d < outd[i].ndim; d++) n *= outd[i].dims[d];
        /* Poison outputs so a kernel that forgets an element is caught. */
        const size_t b = cg_dtype_size((cg_dtype)outd[i].dtype);
        out[i].data = malloc((size_t)(n ? n : 1) * b);
        memset(out[i].data, 0xff, (size_t)(n ? n : 1) * b);
        outp[i] = out[i].data;
    }
    size_t ws = k->workspace ? k->workspace(&call) : 0;
    void *w = ws ? malloc(ws) : NULL;
    if (w) memset(w, 0xff, ws);
    cg_kernel_args args = {
        .struct_size = sizeof args, .call = &call, .in = inp, .out = outp, .workspace = w, .workspace_size = ws};
    void *state = NULL;
    size_t state_bytes = 0;
    if (th_as_params && k->create) { /* every input a parameter: the state made from them */
        cg_kernel_args ca = args;
        ca.out = NULL;
        st = k->create(&ca, &state, &state_bytes);
        if (st != CG_OP_OK) {
            snprintf(err, err_size, "create failed");
            free(w);
            return st;
        }
        args.state = state;
    }
    st = k->run(&args);
    if (state && k->destroy) k->destroy(state);
    free(w);
    return st;
}

void th_free_outputs(int n_out, th_tensor *out) {
    for (int i = 0; i < n_out; i++) {
        free(out[i].data);
        out[i].data = NULL;
    }
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

void th_seed(uint64_t s) { rng = s * 0x9e3779b97f4a7c15ull + 1; }

float th_uniform(float lo, float hi) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * (float)((rng >> 40) * (1.0 / 16777216.0));
}

void th_fill(float *x, int64_t n, float lo, float hi) {
    for (int64_t i = 0; i < n; i++) x[i] = th_uniform(lo, hi);
}

double th_max_abs_diff(const float *a, const float *b, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d != d) return INFINITY;
        if (d > m) m = d;
    }
    return m;
}
