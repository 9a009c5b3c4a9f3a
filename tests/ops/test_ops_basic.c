/* Tests of the basic built-in operators (elementwise.c, matmul.c,
 * softmax.c, reduce.c, shape.c, gather.c): each op is run through the op
 * harness (inference + CPU kernel) and compared with a naive reference
 * written here in double precision, on random data with odd sizes and
 * broadcasting, and its error messages are checked. */
#include <check.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/plugin.h"
#include "ops_common.h"
#include "op_harness.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

typedef struct shp {
    int nd;
    int64_t d[CG_MAX_DIMS];
} shp;

#define NONE_SHP \
    {            \
        -1, {    \
            0    \
        }        \
    }
#define S0 CG_DIM_SYM(0)
#define S1 CG_DIM_SYM(1)

static char g_err[512];

static int64_t shp_numel(const shp *s) {
    int64_t n = 1;
    for (int i = 0; i < s->nd; i++) n *= s->d[i];
    return n;
}

static const char *fmt_shp(char *buf, size_t size, const shp *s) {
    size_t u = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < s->nd && u < size; i++)
        u += (size_t)snprintf(buf + u, size - u, "%s%lld", i ? ", " : "", (long long)s->d[i]);
    if (u < size) snprintf(buf + u, size - u, "]");
    return buf;
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(p);
    return p;
}

static float *frand(int64_t n, float lo, float hi) {
    float *p = xmalloc((size_t)n * sizeof(float));
    th_fill(p, n, lo, hi);
    return p;
}

static int32_t irand1(int32_t lo, int32_t hi) {
    double r = floor((double)th_uniform(0.0f, 1.0f) * ((double)hi - lo + 1));
    int64_t v = lo + (int64_t)r;
    return (int32_t)(v > hi ? hi : v);
}

static int32_t *irand(int64_t n, int32_t lo, int32_t hi) {
    int32_t *p = xmalloc((size_t)n * sizeof(int32_t));
    for (int64_t i = 0; i < n; i++) p[i] = irand1(lo, hi);
    return p;
}

/* Small integer values stored as floats: many ties. */
static float *frand_int(int64_t n, int hi) {
    float *p = xmalloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) p[i] = (float)irand1(0, hi);
    return p;
}

static double *dalloc(int64_t n) { return xmalloc((size_t)n * sizeof(double)); }

static th_tensor tf(float *p, const shp *s) { return th_f32(p, s->nd, s->d); }
static th_tensor ti(int32_t *p, const shp *s) { return th_i32(p, s->nd, s->d); }

static void unravel(int64_t flat, const shp *s, int64_t *idx) {
    for (int i = s->nd - 1; i >= 0; i--) {
        idx[i] = flat % s->d[i];
        flat /= s->d[i];
    }
}

static int64_t ravel(const int64_t *idx, const shp *s) {
    int64_t off = 0;
    for (int i = 0; i < s->nd; i++) off = off * s->d[i] + idx[i];
    return off;
}

/* Offset in a tensor of shape `in` of the element an output multi-index
 * (of `out_nd` dims) reads under NumPy broadcasting. */
static int64_t bcast_off(const int64_t *idx, int out_nd, const shp *in) {
    int64_t off = 0;
    for (int i = 0; i < in->nd; i++) {
        int64_t k = idx[out_nd - in->nd + i];
        off = off * in->d[i] + (in->d[i] == 1 ? 0 : k);
    }
    return off;
}

static shp bshape(const shp *a, const shp *b) {
    shp o;
    o.nd = a->nd > b->nd ? a->nd : b->nd;
    for (int i = 0; i < o.nd; i++) {
        int ia = a->nd - o.nd + i, ib = b->nd - o.nd + i;
        int64_t da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
        o.d[i] = da == 1 ? db : da;
    }
    return o;
}

static void assert_desc(const char *what, const th_tensor *t, cg_op_dtype dt, const shp *s) {
    char e[128], g[128];
    shp got = {t->desc.ndim, {0}};
    memcpy(got.d, t->desc.dims, sizeof got.d);
    int ok = t->desc.dtype == dt && t->desc.ndim == s->nd;
    for (int i = 0; ok && i < s->nd; i++) ok = t->desc.dims[i] == s->d[i];
    ck_assert_msg(ok, "%s: output is dtype %d %s, expected dtype %d %s", what, (int)t->desc.dtype,
                  fmt_shp(g, sizeof g, &got), (int)dt, fmt_shp(e, sizeof e, s));
}

/* Compares floats with a double reference: |got - ref| <= atol + rtol |ref|;
 * NaN must match NaN and infinities must match exactly. One assertion. */
static void expect_close(const char *what, const float *got, const double *ref, int64_t n, double rtol, double atol) {
    for (int64_t i = 0; i < n; i++) {
        double g = got[i], r = ref[i];
        int ok;
        if (isnan(r)) ok = isnan(g);
        else if (isinf(r)) ok = g == r;
        else ok = !isnan(g) && fabs(g - r) <= atol + rtol * fabs(r);
        if (!ok) ck_abort_msg("%s: element %lld is %.9g, expected %.9g", what, (long long)i, g, r);
    }
}

static void expect_eq_i32(const char *what, const int32_t *got, const int32_t *ref, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (got[i] != ref[i]) ck_abort_msg("%s: element %lld is %d, expected %d", what, (long long)i, got[i], ref[i]);
}

/* The host always hands an op its declared attributes with defaults filled
 * in: tests passing NULL get exactly that. */
static const th_attrs *defaults(const cg_op_def *def, const th_attrs *at, th_attrs *store) {
    if (at) return at;
    th_attrs_init(store, def);
    return store;
}

static void run_ok(const cg_op_def *def, int n_in, const th_tensor *in, const th_attrs *at, int n_out, th_tensor *out) {
    th_attrs store;
    at = defaults(def, at, &store);
    cg_op_status st = th_run(def, n_in, in, at, n_out, out, g_err, sizeof g_err);
    ck_assert_msg(st == CG_OP_OK, "%s failed: %s", def->name, g_err);
}

/* Inference must reject the node with a message containing `needle`. */
static void expect_infer_fail(const cg_op_def *def, int n_in, const th_tensor *in, const th_attrs *at, int n_out,
                              const char *needle) {
    th_attrs store;
    at = defaults(def, at, &store);
    th_tensor out[4];
    cg_op_status st = th_infer(def, n_in, in, at, n_out, out, g_err, sizeof g_err);
    ck_assert_msg(st == CG_OP_ERROR, "%s: inference accepted, expected '%s'", def->name, needle);
    ck_assert_msg(strstr(g_err, needle) != NULL, "%s: message '%s' lacks '%s'", def->name, g_err, needle);
}

/* Inference accepts, the kernel fails with a message containing `needle`. */
static void expect_kernel_fail(const cg_op_def *def, int n_in, const th_tensor *in, const th_attrs *at, int n_out,
                               const char *needle) {
    th_attrs store;
    at = defaults(def, at, &store);
    th_tensor out[4];
    memset(out, 0, sizeof out);
    cg_op_status st = th_infer(def, n_in, in, at, n_out, out, g_err, sizeof g_err);
    ck_assert_msg(st == CG_OP_OK, "%s: inference failed: %s", def->name, g_err);
    st = th_run(def, n_in, in, at, n_out, out, g_err, sizeof g_err);
    th_free_outputs(n_out, out);
    ck_assert_msg(st == CG_OP_ERROR, "%s: kernel accepted, expected '%s'", def->name, needle);
    ck_assert_msg(strstr(g_err, needle) != NULL, "%s: message '%s' lacks '%s'", def->name, g_err, needle);
}

/* Runs inference only and checks the output type (symbolic dims allowed). */
static void expect_infer(const cg_op_def *def, int n_in, const th_tensor *in, const th_attrs *at, int out_i,
                         cg_op_dtype dt, const shp *s) {
    th_attrs store;
    at = defaults(def, at, &store);
    th_tensor out[4];
    cg_op_status st = th_infer(def, n_in, in, at, out_i + 1, out, g_err, sizeof g_err);
    ck_assert_msg(st == CG_OP_OK, "%s: inference failed: %s", def->name, g_err);
    assert_desc(def->name, &out[out_i], dt, s);
}

static const cg_kernel_def *cpu_kernel(const cg_op_def *def) {
    for (int i = 0; i < def->n_kernels; i++)
        if (def->kernels[i].backend == CG_BACKEND_CPU) return &def->kernels[i];
    return NULL;
}

/* Runs a one-input op with output 0 sharing input 0's buffer (what
 * CG_OP_FLAG_INPLACE0 allows) and checks it matches the out-of-place run. */
static void expect_inplace_same(const cg_op_def *def, th_tensor x, const th_attrs *at) {
    th_attrs store;
    at = defaults(def, at, &store);
    ck_assert_msg(def->flags & CG_OP_FLAG_INPLACE0, "%s lacks CG_OP_FLAG_INPLACE0", def->name);
    th_tensor ref;
    run_ok(def, 1, &x, at, 1, &ref);
    int64_t n = cg_desc_numel(&x.desc);
    void *buf = xmalloc((size_t)n * 4);
    memcpy(buf, x.data, (size_t)n * 4);
    cg_tensor_desc ind = x.desc, outd = ref.desc;
    cg_op_call call;
    memset(&call, 0, sizeof call);
    call.struct_size = sizeof call;
    call.node_name = def->name;
    call.n_inputs = 1;
    call.n_outputs = 1;
    call.inputs = &ind;
    call.outputs = &outd;
    call.attrs = at->v;
    call.err = g_err;
    call.err_size = sizeof g_err;
    const cg_kernel_def *k = cpu_kernel(def);
    ck_assert_ptr_nonnull(k);
    ck_assert(!k->workspace || k->workspace(&call) == 0);
    const void *inp[1] = {buf};
    void *outp[1] = {buf};
    cg_kernel_args args = {.struct_size = sizeof args, .call = &call, .in = inp, .out = outp};
    ck_assert_msg(k->run(&args) == CG_OP_OK, "%s in place failed: %s", def->name, g_err);
    ck_assert_msg(memcmp(buf, ref.data, (size_t)n * 4) == 0, "%s: in-place result differs", def->name);
    free(buf);
    th_free_outputs(1, &ref);
}

/* ------------------------------------------------------------------ */
/* Op definitions                                                      */

static const cg_op_def *const all_defs[] = {
    &cg_op_add,         &cg_op_sub,         &cg_op_mul,        &cg_op_div,         &cg_op_maximum,    &cg_op_minimum,
    &cg_op_neg,         &cg_op_tanh,        &cg_op_sigmoid,    &cg_op_exp,         &cg_op_log,        &cg_op_sqrt,
    &cg_op_relu,        &cg_op_affine,      &cg_op_cast,       &cg_op_matmul,      &cg_op_linear,     &cg_op_softmax,
    &cg_op_log_softmax, &cg_op_length_mask, &cg_op_reduce_sum, &cg_op_reduce_mean, &cg_op_reduce_max, &cg_op_argmax,
    &cg_op_topk,        &cg_op_concat,      &cg_op_slice,      &cg_op_reshape,     &cg_op_transpose,  &cg_op_embedding,
    &cg_op_gather_rows,
};

START_TEST(test_defs) {
    static const char *const names[] = {
        "add",     "sub",     "mul",         "div",         "maximum",    "minimum",     "neg",         "tanh",
        "sigmoid", "exp",     "log",         "sqrt",        "relu",       "affine",      "cast",        "matmul",
        "linear",  "softmax", "log_softmax", "length_mask", "reduce_sum", "reduce_mean", "reduce_max",  "argmax",
        "topk",    "concat",  "slice",       "reshape",     "transpose",  "embedding",   "gather_rows",
    };
    size_t n = sizeof all_defs / sizeof all_defs[0];
    ck_assert_uint_eq(n, sizeof names / sizeof names[0]);
    for (size_t i = 0; i < n; i++) {
        const cg_op_def *d = all_defs[i];
        ck_assert_uint_eq(d->struct_size, sizeof(cg_op_def));
        ck_assert_str_eq(d->name, names[i]);
        ck_assert_msg(d->doc && strlen(d->doc) > 60, "%s: doc too short", d->name);
        ck_assert_ptr_nonnull(d->infer);
        ck_assert_ptr_nonnull(cpu_kernel(d));
        ck_assert_int_ge(d->min_inputs, 1);
        ck_assert(d->max_inputs == -1 || d->max_inputs >= d->min_inputs);
        ck_assert_int_ge(d->max_outputs, d->min_outputs);
        for (int a = 0; a < d->n_attrs; a++) {
            ck_assert_uint_eq(d->attrs[a].struct_size, sizeof(cg_attr_def));
            ck_assert_msg(d->attrs[a].doc && *d->attrs[a].doc, "%s.%s: no doc", d->name, d->attrs[a].name);
        }
        for (int k = 0; k < d->n_kernels; k++) ck_assert_uint_eq(d->kernels[k].struct_size, sizeof(cg_kernel_def));
    }
    const cg_op_def *inplace[] = {&cg_op_neg,  &cg_op_tanh, &cg_op_sigmoid, &cg_op_exp,  &cg_op_log,
                                  &cg_op_sqrt, &cg_op_relu, &cg_op_affine,  &cg_op_cast, &cg_op_reshape};
    for (size_t i = 0; i < sizeof inplace / sizeof inplace[0]; i++)
        ck_assert_msg(inplace[i]->flags & CG_OP_FLAG_INPLACE0, "%s", inplace[i]->name);
    ck_assert_ptr_nonnull(cg_op_linear.decompose);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Elementwise                                                         */

typedef enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAX, OP_MIN, N_BINOPS } binop;

static const cg_op_def *bin_def(binop o) {
    switch (o) {
    case OP_ADD: return &cg_op_add;
    case OP_SUB: return &cg_op_sub;
    case OP_MUL: return &cg_op_mul;
    case OP_DIV: return &cg_op_div;
    case OP_MAX: return &cg_op_maximum;
    default: return &cg_op_minimum;
    }
}

static double ref_bin(binop o, double x, double y) {
    switch (o) {
    case OP_ADD: return x + y;
    case OP_SUB: return x - y;
    case OP_MUL: return x * y;
    case OP_DIV: return x / y;
    case OP_MAX: return (isnan(x) || isnan(y)) ? NAN : (x > y ? x : y);
    default: return (isnan(x) || isnan(y)) ? NAN : (x < y ? x : y);
    }
}

static int32_t ref_bin_i32(binop o, int32_t x, int32_t y) {
    int64_t r;
    switch (o) {
    case OP_ADD: r = (int64_t)x + y; break;
    case OP_SUB: r = (int64_t)x - y; break;
    case OP_MUL: r = (int64_t)x * y; break;
    case OP_MAX: r = x > y ? x : y; break;
    default: r = x < y ? x : y; break;
    }
    return (int32_t)(uint32_t)(uint64_t)r; /* two's complement wrap */
}

static const struct {
    shp a, b;
} bin_cases[] = {
    {{1, {17}}, {1, {17}}},
    {{2, {3, 17}}, {1, {17}}},
    {{2, {3, 17}}, {2, {3, 1}}},
    {{2, {1, 17}}, {2, {3, 17}}},
    {{3, {3, 1, 5}}, {3, {1, 4, 1}}},
    {{0, {0}}, {2, {2, 3}}},
    {{2, {2, 3}}, {0, {0}}},
    {{0, {0}}, {0, {0}}},
    {{1, {1}}, {3, {3, 1, 3}}},
    {{2, {0, 3}}, {1, {3}}},
    {{2, {1, 3}}, {2, {0, 1}}},
    {{4, {2, 1, 3, 1}}, {3, {5, 1, 4}}},
    {{8, {2, 1, 2, 1, 1, 3, 1, 2}}, {6, {1, 2, 1, 3, 3, 1}}},
    {{3, {17, 1, 1}}, {2, {1, 17}}},
    {{2, {1, 1}}, {2, {1, 1}}},
    {{3, {3, 17, 5}}, {3, {3, 17, 5}}},
    {{3, {3, 17, 5}}, {3, {3, 1, 5}}},
};

START_TEST(test_binary_f32) {
    char sa[64], sb[64], what[256];
    th_seed(1);
    for (int op = 0; op < N_BINOPS; op++) {
        for (size_t c = 0; c < sizeof bin_cases / sizeof bin_cases[0]; c++) {
            const shp *as = &bin_cases[c].a, *bs = &bin_cases[c].b;
            shp os = bshape(as, bs);
            int64_t na = shp_numel(as), nb = shp_numel(bs), no = shp_numel(&os);
            float *a = frand(na, -2.0f, 2.0f), *b = frand(nb, -2.0f, 2.0f);
            for (int64_t i = 0; i < nb; i++) b[i] = b[i] < 0 ? b[i] - 0.5f : b[i] + 0.5f;
            th_tensor in[2] = {tf(a, as), tf(b, bs)}, out;
            snprintf(what, sizeof what, "%s %s %s", bin_def(op)->name, fmt_shp(sa, sizeof sa, as),
                     fmt_shp(sb, sizeof sb, bs));
            run_ok(bin_def(op), 2, in, NULL, 1, &out);
            assert_desc(what, &out, CG_OP_F32, &os);
            double *ref = dalloc(no);
            int64_t idx[CG_MAX_DIMS];
            for (int64_t i = 0; i < no; i++) {
                unravel(i, &os, idx);
                ref[i] = ref_bin(op, a[bcast_off(idx, os.nd, as)], b[bcast_off(idx, os.nd, bs)]);
            }
            expect_close(what, out.data, ref, no, 1e-6, 1e-30);
            th_free_outputs(1, &out);
            free(ref);
            free(a);
            free(b);
        }
    }
}
END_TEST

START_TEST(test_binary_i32) {
    char sa[64], sb[64], what[256];
    th_seed(2);
    binop ops[] = {OP_ADD, OP_SUB, OP_MUL, OP_MAX, OP_MIN};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        for (size_t c = 0; c < sizeof bin_cases / sizeof bin_cases[0]; c++) {
            const shp *as = &bin_cases[c].a, *bs = &bin_cases[c].b;
            shp os = bshape(as, bs);
            int64_t na = shp_numel(as), nb = shp_numel(bs), no = shp_numel(&os);
            /* Products up to 2.5e9 overflow i32: checks the wrap-around. */
            int32_t *a = irand(na, -50000, 50000), *b = irand(nb, -50000, 50000);
            if (na) a[0] = INT32_MAX;
            if (nb) b[nb - 1] = INT32_MIN;
            th_tensor in[2] = {ti(a, as), ti(b, bs)}, out;
            snprintf(what, sizeof what, "%s i32 %s %s", bin_def(ops[o])->name, fmt_shp(sa, sizeof sa, as),
                     fmt_shp(sb, sizeof sb, bs));
            run_ok(bin_def(ops[o]), 2, in, NULL, 1, &out);
            assert_desc(what, &out, CG_OP_I32, &os);
            int32_t *ref = xmalloc((size_t)no * 4);
            int64_t idx[CG_MAX_DIMS];
            for (int64_t i = 0; i < no; i++) {
                unravel(i, &os, idx);
                ref[i] = ref_bin_i32(ops[o], a[bcast_off(idx, os.nd, as)], b[bcast_off(idx, os.nd, bs)]);
            }
            expect_eq_i32(what, out.data, ref, no);
            th_free_outputs(1, &out);
            free(ref);
            free(a);
            free(b);
        }
    }
}
END_TEST

START_TEST(test_binary_special) {
    shp s2 = {1, {2}}, s1 = {1, {1}};
    /* NaN propagates through maximum / minimum, in either position. */
    float a[2] = {NAN, 1.0f}, b[2] = {1.0f, NAN};
    th_tensor in[2] = {tf(a, &s2), tf(b, &s2)}, out;
    run_ok(&cg_op_maximum, 2, in, NULL, 1, &out);
    ck_assert(isnan(((float *)out.data)[0]) && isnan(((float *)out.data)[1]));
    th_free_outputs(1, &out);
    run_ok(&cg_op_minimum, 2, in, NULL, 1, &out);
    ck_assert(isnan(((float *)out.data)[0]) && isnan(((float *)out.data)[1]));
    th_free_outputs(1, &out);
    /* Division by zero follows IEEE. */
    float n[2] = {1.0f, -1.0f}, z[1] = {0.0f};
    th_tensor dv[2] = {tf(n, &s2), tf(z, &s1)};
    run_ok(&cg_op_div, 2, dv, NULL, 1, &out);
    ck_assert(isinf(((float *)out.data)[0]) && ((float *)out.data)[0] > 0);
    ck_assert(isinf(((float *)out.data)[1]) && ((float *)out.data)[1] < 0);
    th_free_outputs(1, &out);
    /* i32 wraps around. */
    int32_t x[2] = {INT32_MAX, INT32_MIN}, one[1] = {1};
    th_tensor wi[2] = {ti(x, &s2), ti(one, &s1)};
    run_ok(&cg_op_add, 2, wi, NULL, 1, &out);
    ck_assert_int_eq(((int32_t *)out.data)[0], INT32_MIN);
    th_free_outputs(1, &out);
    run_ok(&cg_op_sub, 2, wi, NULL, 1, &out);
    ck_assert_int_eq(((int32_t *)out.data)[1], INT32_MAX);
    th_free_outputs(1, &out);
}
END_TEST

START_TEST(test_binary_errors) {
    shp s34 = {2, {3, 4}}, s5 = {1, {5}}, s4 = {1, {4}};
    float f[20] = {0};
    int32_t i[20] = {0};
    th_tensor mixed[2] = {tf(f, &s34), ti(i, &s4)};
    expect_infer_fail(&cg_op_add, 2, mixed, NULL, 1, "mixed dtypes f32 and i32");
    th_tensor bad[2] = {tf(f, &s34), tf(f, &s5)};
    expect_infer_fail(&cg_op_mul, 2, bad, NULL, 1, "shapes [3, 4] and [5] do not broadcast");
    /* Symbolic dims: s0 survives, a concrete size wins over unknown. */
    shp sym = {2, {S0, 4}}, row = {2, {1, 4}}, unk = {2, {CG_DIM_UNKNOWN, 4}};
    shp cat = {2, {3, 4}};
    th_tensor t1[2] = {tf(f, &sym), tf(f, &row)};
    expect_infer(&cg_op_add, 2, t1, NULL, 0, CG_OP_F32, &sym);
    th_tensor t2[2] = {tf(f, &cat), tf(f, &unk)};
    expect_infer(&cg_op_sub, 2, t2, NULL, 0, CG_OP_F32, &cat);
    shp sym1 = {2, {S1, 1}}, both = {2, {S1, 4}};
    th_tensor t3[2] = {tf(f, &sym1), tf(f, &s4)};
    expect_infer(&cg_op_maximum, 2, t3, NULL, 0, CG_OP_F32, &both);
}
END_TEST

static double ref_neg(double x) { return -x; }
static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double ref_relu(double x) { return x < 0 ? 0 : x; }

START_TEST(test_unary) {
    const struct {
        const cg_op_def *def;
        double (*ref)(double);
        float lo, hi;
    } ops[] = {
        {&cg_op_neg, ref_neg, -3, 3},   {&cg_op_tanh, tanh, -5, 5},     {&cg_op_sigmoid, ref_sigmoid, -20, 20},
        {&cg_op_exp, exp, -10, 10},     {&cg_op_log, log, 0.001f, 100}, {&cg_op_sqrt, sqrt, 0, 100},
        {&cg_op_relu, ref_relu, -3, 3},
    };
    const shp shapes[] = {{1, {17}}, {3, {3, 1, 17}}, {2, {0, 5}}, {0, {0}}, {1, {1}}};
    char ss[64], what[128];
    th_seed(3);
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int64_t n = shp_numel(&shapes[s]);
            float *x = frand(n, ops[o].lo, ops[o].hi);
            th_tensor in = tf(x, &shapes[s]), out;
            snprintf(what, sizeof what, "%s %s", ops[o].def->name, fmt_shp(ss, sizeof ss, &shapes[s]));
            run_ok(ops[o].def, 1, &in, NULL, 1, &out);
            assert_desc(what, &out, CG_OP_F32, &shapes[s]);
            double *ref = dalloc(n);
            for (int64_t i = 0; i < n; i++) ref[i] = ops[o].ref(x[i]);
            expect_close(what, out.data, ref, n, 2e-6, 1e-30);
            th_free_outputs(1, &out);
            if (n > 1) expect_inplace_same(ops[o].def, in, NULL);
            free(ref);
            free(x);
        }
    }
}
END_TEST

START_TEST(test_unary_special) {
    shp s = {1, {10}};
    float x[10] = {100.0f, -100.0f, 1000.0f, -1000.0f, FLT_MAX, -FLT_MAX, INFINITY, -INFINITY, 0.0f, -88.5f};
    th_tensor in = tf(x, &s), out;
    run_ok(&cg_op_sigmoid, 1, &in, NULL, 1, &out);
    double ref[10];
    for (int i = 0; i < 10; i++) ref[i] = isinf(x[i]) ? (x[i] > 0 ? 1.0 : 0.0) : ref_sigmoid(x[i]);
    expect_close("sigmoid extremes", out.data, ref, 10, 1e-6, 1e-44);
    th_free_outputs(1, &out);
    /* relu keeps NaN; log(0) = -inf; sqrt(-1) = NaN. */
    float sp[3] = {NAN, 0.0f, -1.0f};
    shp s3 = {1, {3}};
    th_tensor t = tf(sp, &s3);
    run_ok(&cg_op_relu, 1, &t, NULL, 1, &out);
    ck_assert(isnan(((float *)out.data)[0]) && ((float *)out.data)[2] == 0.0f);
    th_free_outputs(1, &out);
    run_ok(&cg_op_log, 1, &t, NULL, 1, &out);
    ck_assert(isinf(((float *)out.data)[1]) && ((float *)out.data)[1] < 0);
    th_free_outputs(1, &out);
    run_ok(&cg_op_sqrt, 1, &t, NULL, 1, &out);
    ck_assert(isnan(((float *)out.data)[2]));
    th_free_outputs(1, &out);
    /* neg on i32, including the wrap of INT32_MIN. */
    int32_t iv[4] = {0, 7, -7, INT32_MIN};
    shp s4 = {1, {4}};
    th_tensor it = ti(iv, &s4);
    run_ok(&cg_op_neg, 1, &it, NULL, 1, &out);
    int32_t iref[4] = {0, -7, 7, INT32_MIN};
    expect_eq_i32("neg i32", out.data, iref, 4);
    assert_desc("neg i32", &out, CG_OP_I32, &s4);
    th_free_outputs(1, &out);
    expect_inplace_same(&cg_op_neg, it, NULL);
    /* Other unary ops are f32 only. */
    expect_infer_fail(&cg_op_tanh, 1, &it, NULL, 1, "input 0 (x) must be f32 for tanh, got i32");
    expect_infer_fail(&cg_op_affine, 1, &it, NULL, 1, "must be f32 for affine");
    /* Symbolic dims pass through. */
    shp sym = {3, {S0, CG_DIM_UNKNOWN, 3}};
    th_tensor st = tf(x, &sym);
    expect_infer(&cg_op_exp, 1, &st, NULL, 0, CG_OP_F32, &sym);
}
END_TEST

START_TEST(test_affine) {
    const shp shapes[] = {{2, {3, 17}}, {0, {0}}, {1, {0}}, {1, {1}}};
    const double params[][2] = {{2.5, -0.75}, {1.0, 0.0}, {-1.0, 3.0}, {0.0, 1.0}};
    th_seed(4);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (size_t p = 0; p < sizeof params / sizeof params[0]; p++) {
            int64_t n = shp_numel(&shapes[s]);
            float *x = frand(n, -4, 4);
            double alpha = params[p][0], beta = params[p][1];
            th_attrs at;
            th_attrs_init(&at, &cg_op_affine);
            if (p != 1) { /* p == 1 checks the defaults 1.0 and 0.0 */
                th_set_float(&at, &cg_op_affine, "alpha", alpha);
                th_set_float(&at, &cg_op_affine, "beta", beta);
            }
            th_tensor in = tf(x, &shapes[s]), out;
            run_ok(&cg_op_affine, 1, &in, &at, 1, &out);
            assert_desc("affine", &out, CG_OP_F32, &shapes[s]);
            double *ref = dalloc(n);
            for (int64_t i = 0; i < n; i++) ref[i] = alpha * x[i] + beta;
            expect_close("affine", out.data, ref, n, 1e-6, 1e-6);
            th_free_outputs(1, &out);
            if (n > 1) expect_inplace_same(&cg_op_affine, in, &at);
            free(ref);
            free(x);
        }
    }
}
END_TEST

START_TEST(test_cast) {
    shp s = {1, {10}};
    float x[10] = {-2.7f, 2.7f, -0.5f, 0.5f, 1e10f, -1e10f, NAN, 123456.9f, -0.0f, 2147483520.0f};
    int32_t want[10] = {-2, 2, 0, 0, INT32_MAX, INT32_MIN, 0, 123456, 0, 2147483520};
    th_attrs at;
    th_attrs_init(&at, &cg_op_cast);
    th_set_string(&at, &cg_op_cast, "to", "i32");
    th_tensor in = tf(x, &s), out;
    run_ok(&cg_op_cast, 1, &in, &at, 1, &out);
    assert_desc("cast to i32", &out, CG_OP_I32, &s);
    expect_eq_i32("cast f32->i32", out.data, want, 10);
    th_free_outputs(1, &out);
    expect_inplace_same(&cg_op_cast, in, &at);
    /* Random values: truncation toward zero like a C cast. */
    th_seed(5);
    shp r = {2, {3, 17}};
    float *rx = frand(51, -1000, 1000);
    int32_t rw[51];
    for (int i = 0; i < 51; i++) rw[i] = (int32_t)rx[i];
    in = tf(rx, &r);
    run_ok(&cg_op_cast, 1, &in, &at, 1, &out);
    expect_eq_i32("cast random", out.data, rw, 51);
    th_free_outputs(1, &out);
    free(rx);
    /* i32 -> f32 and same-dtype copies. */
    int32_t iv[4] = {-5, 0, 16777217, INT32_MIN};
    shp s4 = {1, {4}};
    th_tensor it = ti(iv, &s4);
    th_set_string(&at, &cg_op_cast, "to", "f32");
    run_ok(&cg_op_cast, 1, &it, &at, 1, &out);
    assert_desc("cast to f32", &out, CG_OP_F32, &s4);
    for (int i = 0; i < 4; i++) ck_assert(((float *)out.data)[i] == (float)iv[i]);
    th_free_outputs(1, &out);
    in = tf(x, &s);
    run_ok(&cg_op_cast, 1, &in, &at, 1, &out);
    assert_desc("cast f32->f32", &out, CG_OP_F32, &s);
    ck_assert(memcmp(out.data, x, sizeof x) == 0);
    th_free_outputs(1, &out);
    th_set_string(&at, &cg_op_cast, "to", "i32");
    run_ok(&cg_op_cast, 1, &it, &at, 1, &out);
    expect_eq_i32("cast i32->i32", out.data, iv, 4);
    th_free_outputs(1, &out);
    shp empty = {2, {0, 3}};
    th_tensor et = tf(x, &empty);
    run_ok(&cg_op_cast, 1, &et, &at, 1, &out);
    assert_desc("cast empty", &out, CG_OP_I32, &empty);
    th_free_outputs(1, &out);
    /* The other dtypes, against values worked out by hand: float to integer
     * truncates, saturates, NaN 0; integer to integer wraps; to bool is
     * x != 0; f16 and bf16 round to nearest even (0x3f808000 is half-way
     * between bf16 0x3f80 and 0x3f81 and goes to the even 0x3f80). */
    {
        float fv[6] = {1.9f, -1.9f, 300.0f, -300.0f, NAN, 0.0f};
        int64_t six = 6;
        th_tensor ft = th_f32(fv, 1, &six);
        th_set_string(&at, &cg_op_cast, "to", "i8");
        run_ok(&cg_op_cast, 1, &ft, &at, 1, &out);
        static const int8_t want_i8[6] = {1, -1, 127, -128, 0, 0};
        ck_assert_int_eq(out.desc.dtype, CG_I8);
        ck_assert(memcmp(out.data, want_i8, 6) == 0);
        th_free_outputs(1, &out);
        th_set_string(&at, &cg_op_cast, "to", "bool");
        run_ok(&cg_op_cast, 1, &ft, &at, 1, &out);
        static const uint8_t want_b[6] = {1, 1, 1, 1, 1, 0};
        ck_assert(memcmp(out.data, want_b, 6) == 0);
        th_free_outputs(1, &out);
        int64_t lv[3] = {((int64_t)1 << 32) + 5, -1, INT64_MIN};
        int64_t three = 3;
        th_tensor lt = th_f32((float *)lv, 1, &three);
        lt.desc.dtype = CG_I64;
        th_set_string(&at, &cg_op_cast, "to", "i32");
        run_ok(&cg_op_cast, 1, &lt, &at, 1, &out);
        static const int32_t want_i32[3] = {5, -1, 0};
        ck_assert(memcmp(out.data, want_i32, 12) == 0);
        th_free_outputs(1, &out);
        float hv[4] = {1.0f, 65504.0f, 65520.0f, 1e-8f};
        int64_t four = 4;
        th_tensor ht = th_f32(hv, 1, &four);
        th_set_string(&at, &cg_op_cast, "to", "f16");
        run_ok(&cg_op_cast, 1, &ht, &at, 1, &out);
        static const uint16_t want_h[4] = {0x3c00, 0x7bff, 0x7c00, 0x0000};
        ck_assert(memcmp(out.data, want_h, 8) == 0);
        th_free_outputs(1, &out);
        float bv[3] = {1.0f, 1.00390625f, 1.01171875f};
        th_tensor bt = th_f32(bv, 1, &three);
        th_set_string(&at, &cg_op_cast, "to", "bf16");
        run_ok(&cg_op_cast, 1, &bt, &at, 1, &out);
        static const uint16_t want_bf[3] = {0x3f80, 0x3f80, 0x3f82};
        ck_assert(memcmp(out.data, want_bf, 6) == 0);
        th_free_outputs(1, &out);
        /* float8 e4m3fn by hand: 1 is 0x38, 448 the largest (0x7E), 500
         * past it (saturate: 448; not: NaN 0x7F), 2^-10 half the smallest
         * step 2^-9 (a tie: to even, 0), -2^-8 two steps (0x82) */
        float ev[5] = {1.0f, 448.0f, 500.0f, 0.0009765625f, -0.00390625f};
        int64_t five = 5;
        th_tensor et = th_f32(ev, 1, &five);
        th_set_string(&at, &cg_op_cast, "to", "f8e4m3fn");
        run_ok(&cg_op_cast, 1, &et, &at, 1, &out);
        static const uint8_t want_e[5] = {0x38, 0x7E, 0x7E, 0x00, 0x82}, want_e0[5] = {0x38, 0x7E, 0x7F, 0x00, 0x82};
        ck_assert(memcmp(out.data, want_e, 5) == 0);
        th_free_outputs(1, &out);
        th_set_int(&at, &cg_op_cast, "saturate", 0);
        run_ok(&cg_op_cast, 1, &et, &at, 1, &out);
        ck_assert(memcmp(out.data, want_e0, 5) == 0);
        th_free_outputs(1, &out);
        th_set_int(&at, &cg_op_cast, "saturate", 1);
        /* i4: truncated, then the low 4 bits (9 -> -7, -9 -> 7) */
        float iv[5] = {9.5f, -9.0f, 7.9f, -0.5f, 16.0f};
        th_tensor it = th_f32(iv, 1, &five);
        th_set_string(&at, &cg_op_cast, "to", "i4");
        run_ok(&cg_op_cast, 1, &it, &at, 1, &out);
        static const int8_t want_i4[5] = {-7, 7, 7, 0, 0};
        ck_assert(memcmp(out.data, want_i4, 5) == 0);
        th_free_outputs(1, &out);
    }
    /* Errors. */
    th_set_string(&at, &cg_op_cast, "to", "f64");
    expect_infer_fail(&cg_op_cast, 1, &in, &at, 1,
                      "'to' must name a dtype (f32, i32, f16, bf16, i8, u8, i64, bool, i16, u16, u32, u64, f8e4m3fn, "
                      "f8e4m3fnuz, f8e5m2, f8e5m2fnuz, f8e8m0, f4e2m1, i4, u4, i2 or u2), got \"f64\"");
    th_set_string(&at, &cg_op_cast, "to", "f8e8m0");
    th_set_string(&at, &cg_op_cast, "round_mode", "sideways");
    expect_infer_fail(&cg_op_cast, 1, &in, &at, 1,
                      "attribute 'round_mode' must be \"up\", \"down\" or \"nearest\", got \"sideways\"");
    th_attrs none;
    th_attrs_init(&none, &cg_op_cast);
    expect_infer_fail(&cg_op_cast, 1, &in, &none, 1, "'to' is required");
}
END_TEST

/* ------------------------------------------------------------------ */
/* matmul / linear                                                     */

static void ref_matmul(const float *a, const shp *as, const float *b, const shp *bs, int ta, int tb, double *out,
                       shp *os) {
    int64_t m = ta ? as->d[as->nd - 1] : as->d[as->nd - 2];
    int64_t k = ta ? as->d[as->nd - 2] : as->d[as->nd - 1];
    int64_t n = tb ? bs->d[bs->nd - 2] : bs->d[bs->nd - 1];
    shp ab = *as, bb = *bs;
    ab.nd -= 2;
    bb.nd -= 2;
    shp ob = bshape(&ab, &bb);
    *os = ob;
    os->nd = ob.nd + 2;
    os->d[ob.nd] = m;
    os->d[ob.nd + 1] = n;
    int64_t batch = shp_numel(&ob), idx[CG_MAX_DIMS];
    for (int64_t t = 0; t < batch; t++) {
        unravel(t, &ob, idx);
        const float *pa = a + bcast_off(idx, ob.nd, &ab) * m * k;
        const float *pb = b + bcast_off(idx, ob.nd, &bb) * k * n;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t q = 0; q < k; q++) {
                    double av = ta ? pa[q * m + i] : pa[i * k + q];
                    double bv = tb ? pb[j * k + q] : pb[q * n + j];
                    s += av * bv;
                }
                out[(t * m + i) * n + j] = s;
            }
    }
}

START_TEST(test_matmul) {
    const struct {
        shp a, b;
        int ta, tb;
    } cases[] = {
        {{2, {3, 5}}, {2, {5, 17}}, 0, 0},         {{2, {5, 3}}, {2, {5, 17}}, 1, 0},
        {{2, {3, 5}}, {2, {17, 5}}, 0, 1},         {{2, {5, 3}}, {2, {17, 5}}, 1, 1},
        {{2, {1, 1}}, {2, {1, 1}}, 0, 0},          {{2, {17, 1}}, {2, {1, 3}}, 0, 0},
        {{4, {2, 3, 4, 5}}, {2, {5, 6}}, 0, 0},    {{4, {2, 3, 5, 4}}, {2, {5, 6}}, 1, 0},
        {{4, {2, 3, 4, 5}}, {2, {6, 5}}, 0, 1},    {{4, {2, 1, 3, 5}}, {3, {4, 5, 6}}, 0, 0},
        {{4, {2, 1, 5, 3}}, {3, {4, 6, 5}}, 1, 1}, {{2, {3, 5}}, {3, {2, 5, 4}}, 0, 0},
        {{3, {0, 3, 5}}, {2, {5, 4}}, 0, 0},       {{2, {3, 0}}, {2, {0, 4}}, 0, 0},
        {{3, {2, 0, 3}}, {3, {2, 0, 4}}, 1, 0},    {{2, {3, 5}}, {2, {5, 0}}, 0, 0},
        {{3, {2, 3, 5}}, {3, {1, 5, 4}}, 0, 0},    {{3, {2, 0, 5}}, {3, {2, 5, 4}}, 0, 0},
        {{3, {2, 5, 0}}, {3, {2, 5, 4}}, 1, 0},    {{3, {1, 3, 5}}, {3, {3, 5, 4}}, 0, 0},
        {{3, {3, 17, 5}}, {3, {3, 5, 17}}, 0, 0},  {{3, {3, 17, 33}}, {3, {3, 5, 17}}, 1, 1},
    };
    char sa[64], sb[64], what[256];
    th_seed(6);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const shp *as = &cases[c].a, *bs = &cases[c].b;
        float *a = frand(shp_numel(as), -1, 1), *b = frand(shp_numel(bs), -1, 1);
        th_attrs at;
        th_attrs_init(&at, &cg_op_matmul);
        if (cases[c].ta) th_set_int(&at, &cg_op_matmul, "transpose_a", 1);
        if (cases[c].tb) th_set_int(&at, &cg_op_matmul, "transpose_b", 1);
        th_tensor in[2] = {tf(a, as), tf(b, bs)}, out;
        snprintf(what, sizeof what, "matmul %s%s x %s%s", fmt_shp(sa, sizeof sa, as), cases[c].ta ? "^T" : "",
                 fmt_shp(sb, sizeof sb, bs), cases[c].tb ? "^T" : "");
        run_ok(&cg_op_matmul, 2, in, &at, 1, &out);
        shp os;
        double *ref = dalloc(shp_numel(as) * shp_numel(bs) + 64);
        ref_matmul(a, as, b, bs, cases[c].ta, cases[c].tb, ref, &os);
        assert_desc(what, &out, CG_OP_F32, &os);
        expect_close(what, out.data, ref, shp_numel(&os), 1e-5, 1e-5);
        th_free_outputs(1, &out);
        free(ref);
        free(a);
        free(b);
    }
}
END_TEST

START_TEST(test_matmul_errors) {
    float f[64] = {0};
    int32_t i[64] = {0};
    shp a = {2, {2, 5}}, b = {2, {3, 4}}, v = {1, {5}};
    th_attrs at;
    th_attrs_init(&at, &cg_op_matmul);
    th_tensor t[2] = {tf(f, &a), tf(f, &b)};
    expect_infer_fail(&cg_op_matmul, 2, t, &at, 1, "input 1 (b) has shape [3, 4], expected [K=5, N] for matmul");
    th_set_int(&at, &cg_op_matmul, "transpose_b", 1);
    expect_infer_fail(&cg_op_matmul, 2, t, &at, 1, "expected [N, K=5]");
    th_set_int(&at, &cg_op_matmul, "transpose_b", 2);
    expect_infer_fail(&cg_op_matmul, 2, t, &at, 1, "transpose_b must be 0 or 1, got 2");
    th_attrs_init(&at, &cg_op_matmul);
    th_tensor t1[2] = {tf(f, &v), tf(f, &b)};
    expect_infer_fail(&cg_op_matmul, 2, t1, &at, 1, "input 0 (a) must have at least 2 dims");
    shp ba = {3, {2, 3, 5}}, bb = {3, {4, 5, 6}};
    th_tensor t2[2] = {tf(f, &ba), tf(f, &bb)};
    expect_infer_fail(&cg_op_matmul, 2, t2, &at, 1, "batch dims of a [2, 3, 5] and b [4, 5, 6]");
    shp b54 = {2, {5, 4}};
    th_tensor t3[2] = {tf(f, &a), ti(i, &b54)};
    expect_infer_fail(&cg_op_matmul, 2, t3, &at, 1, "input 1 must be f32");
    /* Symbolic batch and K. */
    shp sa = {3, {S0, 3, S1}}, sb = {2, {5, 4}}, so = {3, {S0, 3, 4}};
    th_tensor t4[2] = {tf(f, &sa), tf(f, &sb)};
    expect_infer(&cg_op_matmul, 2, t4, &at, 0, CG_OP_F32, &so);
    shp sb2 = {3, {S0, 5, CG_DIM_UNKNOWN}}, sa2 = {2, {3, 5}}, so2 = {3, {S0, 3, CG_DIM_UNKNOWN}};
    th_tensor t5[2] = {tf(f, &sa2), tf(f, &sb2)};
    expect_infer(&cg_op_matmul, 2, t5, &at, 0, CG_OP_F32, &so2);
}
END_TEST

typedef struct linear_case {
    shp x;
    int64_t out;
    int bias;
} linear_case;

static const linear_case linear_cases[] = {
    {{2, {17, 3}}, 5, 1}, {{3, {2, 3, 5}}, 1, 1},      {{1, {5}}, 3, 1},
    {{1, {5}}, 3, 0},     {{2, {4, 0}}, 3, 1},         {{2, {4, 7}}, 0, 1},
    {{2, {0, 7}}, 3, 1},  {{4, {2, 1, 3, 17}}, 17, 0}, {{1, {1}}, 1, 1},
};

START_TEST(test_linear) {
    char sx[64], what[128];
    th_seed(7);
    for (size_t c = 0; c < sizeof linear_cases / sizeof linear_cases[0]; c++) {
        const linear_case *lc = &linear_cases[c];
        int64_t in = lc->x.d[lc->x.nd - 1], rows = 1;
        for (int i = 0; i < lc->x.nd - 1; i++) rows *= lc->x.d[i];
        shp ws = {2, {lc->out, in}}, bs = {1, {lc->out}}, ys = lc->x;
        ys.d[ys.nd - 1] = lc->out;
        float *x = frand(shp_numel(&lc->x), -1, 1), *w = frand(lc->out * in, -1, 1);
        float *b = frand(lc->out, -1, 1);
        th_tensor ins[3] = {tf(x, &lc->x), tf(w, &ws), tf(b, &bs)}, out;
        snprintf(what, sizeof what, "linear %s -> %lld%s", fmt_shp(sx, sizeof sx, &lc->x), (long long)lc->out,
                 lc->bias ? " + b" : "");
        run_ok(&cg_op_linear, lc->bias ? 3 : 2, ins, NULL, 1, &out);
        assert_desc(what, &out, CG_OP_F32, &ys);
        double *ref = dalloc(rows * lc->out);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t o = 0; o < lc->out; o++) {
                double s = lc->bias ? b[o] : 0.0;
                for (int64_t q = 0; q < in; q++) s += (double)x[r * in + q] * w[o * in + q];
                ref[r * lc->out + o] = s;
            }
        expect_close(what, out.data, ref, rows * lc->out, 1e-5, 1e-5);
        th_free_outputs(1, &out);
        free(ref);
        free(x);
        free(w);
        free(b);
    }
    /* Errors and symbolic dims. */
    float f[64] = {0};
    shp x = {2, {4, 3}}, w = {2, {5, 4}}, w2 = {2, {5, 3}}, b = {1, {6}}, w1 = {1, {3}};
    th_tensor t[3] = {tf(f, &x), tf(f, &w), tf(f, &b)};
    expect_infer_fail(&cg_op_linear, 2, t, NULL, 1, "input 1 (w) has shape [5, 4], expected [OUT, IN=3] for linear");
    t[1] = tf(f, &w2);
    expect_infer_fail(&cg_op_linear, 3, t, NULL, 1, "input 2 (b) has shape [6], expected [OUT=5] for linear");
    t[1] = tf(f, &w1);
    expect_infer_fail(&cg_op_linear, 2, t, NULL, 1, "input 1 must have 2 dims");
    shp sx2 = {3, {S0, S1, 3}}, sw = {2, {CG_DIM_UNKNOWN, 3}}, sb = {1, {7}};
    shp so = {3, {S0, S1, 7}};
    th_tensor t2[3] = {tf(f, &sx2), tf(f, &sw), tf(f, &sb)};
    expect_infer(&cg_op_linear, 3, t2, NULL, 0, CG_OP_F32, &so);
}
END_TEST

/* A host that executes a decomposition eagerly through the op harness. */
#define FAKE_MAX_VALUES 16

struct cg_decomp {
    th_tensor vals[FAKE_MAX_VALUES];
    int owned[FAKE_MAX_VALUES];
    int n_vals;
    int out_id;
    char log[512];
};

static int32_t fake_input(cg_decomp *d, int32_t i) {
    (void)d;
    return i;
}

static const cg_op_def *find_def(const char *name) {
    for (size_t i = 0; i < sizeof all_defs / sizeof all_defs[0]; i++)
        if (strcmp(all_defs[i]->name, name) == 0) return all_defs[i];
    return NULL;
}

/* Parses the IR attribute syntax "key: 1, key: [1, -1]" (ints only). */
static void parse_attrs(const cg_op_def *def, const char *text, th_attrs *at) {
    th_attrs_init(at, def);
    const char *p = text ? text : "";
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        char key[64];
        int n = 0;
        while (*p && *p != ':' && *p != ' ' && n < 63) key[n++] = *p++;
        key[n] = 0;
        while (*p == ' ') p++;
        ck_assert_msg(*p == ':', "bad attribute text '%s'", text);
        p++;
        while (*p == ' ') p++;
        char *end;
        if (*p == '[') {
            int64_t v[16];
            int cnt = 0;
            p++;
            for (;;) {
                while (*p == ' ' || *p == ',') p++;
                if (*p == ']') break;
                v[cnt++] = strtoll(p, &end, 10);
                ck_assert_msg(end != p && cnt < 16, "bad list in '%s'", text);
                p = end;
            }
            p++;
            th_set_ints(at, def, key, cnt, v);
        } else {
            long long v = strtoll(p, &end, 10);
            ck_assert_msg(end != p, "bad value in '%s'", text);
            p = end;
            th_set_int(at, def, key, v);
        }
    }
}

static cg_op_status fake_node(cg_decomp *d, const char *op, int32_t n_in, const int32_t *in, int32_t n_out,
                              int32_t *out, const char *attrs) {
    const cg_op_def *def = find_def(op);
    ck_assert_msg(def != NULL, "decomposition uses unknown op %s", op);
    ck_assert_int_eq(n_out, 1);
    size_t used = strlen(d->log);
    snprintf(d->log + used, sizeof d->log - used, "%s(%s);", op, attrs ? attrs : "");
    th_attrs at;
    parse_attrs(def, attrs, &at);
    th_tensor ins[4];
    for (int i = 0; i < n_in; i++) {
        ck_assert(in[i] >= 0 && in[i] < d->n_vals);
        ins[i] = d->vals[in[i]];
    }
    ck_assert_int_lt(d->n_vals, FAKE_MAX_VALUES);
    int id = d->n_vals++;
    cg_op_status st = th_run(def, n_in, ins, &at, 1, &d->vals[id], g_err, sizeof g_err);
    d->owned[id] = 1;
    ck_assert_msg(st == CG_OP_OK, "decomposed %s failed: %s", op, g_err);
    out[0] = id;
    return st;
}

static cg_op_status fake_output(cg_decomp *d, int32_t i, int32_t v) {
    ck_assert_int_eq(i, 0);
    d->out_id = v;
    return CG_OP_OK;
}

START_TEST(test_linear_decompose) {
    const cg_host_api host = {
        .struct_size = sizeof(cg_host_api),
        .abi_major = CG_PLUGIN_ABI_MAJOR,
        .abi_minor = CG_PLUGIN_ABI_MINOR,
        .decomp_input = fake_input,
        .decomp_node = fake_node,
        .decomp_output = fake_output,
    };
    th_seed(8);
    for (size_t c = 0; c < sizeof linear_cases / sizeof linear_cases[0]; c++) {
        const linear_case *lc = &linear_cases[c];
        int64_t in = lc->x.d[lc->x.nd - 1];
        shp ws = {2, {lc->out, in}}, bs = {1, {lc->out}};
        float *x = frand(shp_numel(&lc->x), -1, 1), *w = frand(lc->out * in, -1, 1);
        float *b = frand(lc->out, -1, 1);
        int n_in = lc->bias ? 3 : 2;
        th_tensor ins[3] = {tf(x, &lc->x), tf(w, &ws), tf(b, &bs)}, ref;
        run_ok(&cg_op_linear, n_in, ins, NULL, 1, &ref);

        struct cg_decomp d;
        memset(&d, 0, sizeof d);
        for (int i = 0; i < n_in; i++) d.vals[i] = ins[i];
        d.n_vals = n_in;
        d.out_id = -1;
        cg_tensor_desc ind[3] = {ins[0].desc, ins[1].desc, ins[2].desc}, outd = ref.desc;
        cg_op_call call;
        memset(&call, 0, sizeof call);
        call.struct_size = sizeof call;
        call.node_name = "lin";
        call.n_inputs = n_in;
        call.n_outputs = 1;
        call.inputs = ind;
        call.outputs = &outd;
        call.err = g_err;
        call.err_size = sizeof g_err;
        call.host = &host;
        ck_assert_int_eq(cg_op_linear.decompose(&d, &call), CG_OP_OK);
        char want[256];
        snprintf(want, sizeof want, "%smatmul(transpose_b: 1);%s%s", lc->x.nd == 1 ? "reshape(shape: [1, -1]);" : "",
                 lc->bias ? "add();" : "", lc->x.nd == 1 ? "reshape(shape: [-1]);" : "");
        ck_assert_str_eq(d.log, want);
        ck_assert_int_ge(d.out_id, n_in);
        const th_tensor *got = &d.vals[d.out_id];
        shp ys = lc->x;
        ys.d[ys.nd - 1] = lc->out;
        assert_desc("linear decomposition", got, CG_OP_F32, &ys);
        int64_t n = shp_numel(&ys);
        double *rd = dalloc(n);
        for (int64_t i = 0; i < n; i++) rd[i] = ((float *)ref.data)[i];
        expect_close("linear decomposition", got->data, rd, n, 1e-6, 1e-6);
        for (int i = 0; i < d.n_vals; i++)
            if (d.owned[i]) th_free_outputs(1, &d.vals[i]);
        th_free_outputs(1, &ref);
        free(rd);
        free(x);
        free(w);
        free(b);
    }
    /* A host without decomposition services is reported, not crashed on. */
    const cg_host_api bare = {.struct_size = sizeof(cg_host_api)};
    shp xs = {2, {2, 3}}, wsh = {2, {4, 3}};
    cg_tensor_desc ind[2], outd;
    ind[0] = th_f32(NULL, xs.nd, xs.d).desc;
    ind[1] = th_f32(NULL, wsh.nd, wsh.d).desc;
    cg_op_call call;
    memset(&call, 0, sizeof call);
    call.struct_size = sizeof call;
    call.n_inputs = 2;
    call.n_outputs = 1;
    call.inputs = ind;
    call.outputs = &outd;
    call.err = g_err;
    call.err_size = sizeof g_err;
    call.host = &bare;
    ck_assert_int_eq(cg_op_linear.decompose(NULL, &call), CG_OP_ERROR);
    ck_assert_ptr_nonnull(strstr(g_err, "no decomposition services"));
}
END_TEST

/* ------------------------------------------------------------------ */
/* softmax / log_softmax / length_mask                                 */

static void ref_softmax(const float *x, const shp *xs, int axis, const int32_t *m, const shp *ms, int log_out,
                        double *out) {
    int64_t n = shp_numel(xs), idx[CG_MAX_DIMS], len = xs->d[axis];
    for (int64_t f = 0; f < n; f++) {
        unravel(f, xs, idx);
        if (idx[axis] != 0) continue;
        double mx = -INFINITY;
        int any = 0;
        for (int64_t j = 0; j < len; j++) {
            idx[axis] = j;
            if (m && m[bcast_off(idx, xs->nd, ms)] == 0) continue;
            double v = x[ravel(idx, xs)];
            any = 1;
            if (v > mx) mx = v;
        }
        double sum = 0;
        for (int64_t j = 0; j < len; j++) {
            idx[axis] = j;
            if (m && m[bcast_off(idx, xs->nd, ms)] == 0) continue;
            sum += exp(x[ravel(idx, xs)] - mx);
        }
        for (int64_t j = 0; j < len; j++) {
            idx[axis] = j;
            int64_t o = ravel(idx, xs);
            int valid = !m || m[bcast_off(idx, xs->nd, ms)] != 0;
            if (!valid || !any || mx == -INFINITY) out[o] = log_out ? -INFINITY : 0.0;
            else if (log_out) out[o] = x[o] - mx - log(sum);
            else out[o] = exp(x[o] - mx) / sum;
        }
    }
}

START_TEST(test_softmax) {
    const struct {
        shp x;
        int axis;
        shp m;
    } cases[] = {
        {{1, {17}}, -1, NONE_SHP},
        {{2, {3, 17}}, -1, NONE_SHP},
        {{2, {3, 17}}, 0, NONE_SHP},
        {{3, {2, 3, 5}}, 1, NONE_SHP},
        {{1, {1}}, 0, NONE_SHP},
        {{2, {4, 0}}, -1, NONE_SHP},
        {{2, {4, 0}}, 0, NONE_SHP},
        {{2, {3, 17}}, -1, {2, {3, 17}}},
        {{3, {2, 3, 5}}, -1, {3, {2, 1, 5}}},
        {{2, {3, 5}}, -1, {1, {5}}},
        {{2, {3, 5}}, -1, {2, {3, 1}}},
        {{3, {2, 3, 5}}, 1, {3, {1, 3, 1}}},
        {{3, {2, 3, 5}}, 0, {3, {2, 3, 5}}},
        {{4, {2, 3, 1, 17}}, -1, {2, {1, 17}}},
        {{3, {2, 17, 3}}, -2, {3, {2, 17, 1}}},
        {{2, {3, 17}}, -1, {0, {0}}},
    };
    char sx[64], sm[64], what[256];
    th_seed(9);
    for (int lg = 0; lg < 2; lg++) {
        const cg_op_def *def = lg ? &cg_op_log_softmax : &cg_op_softmax;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            const shp *xs = &cases[c].x, *ms = &cases[c].m;
            int has_mask = ms->nd >= 0;
            int64_t n = shp_numel(xs), mn = has_mask ? shp_numel(ms) : 0;
            float *x = frand(n, -30, 30);
            int32_t *m = NULL;
            if (has_mask) {
                m = irand(mn, -1, 3); /* -1, 1, 2, 3 are valid, 0 is not */
                for (int64_t i = 0; i < mn; i++)
                    if (m[i] == 2 && i % 2) m[i] = 0;
                /* Make one slice fully invalid where the mask is per-row. */
                if (ms->nd == 2 && ms->d[1] == 1) m[1] = 0;
                if (ms->nd == 2 && ms->d[0] == 3 && ms->d[1] == 17)
                    for (int j = 0; j < 17; j++) m[17 + j] = 0;
                if (ms->nd == 0) m[0] = 1;
            }
            int axis = cases[c].axis < 0 ? cases[c].axis + xs->nd : cases[c].axis;
            th_attrs at;
            th_attrs_init(&at, def);
            if (cases[c].axis != -1) th_set_int(&at, def, "axis", cases[c].axis);
            th_tensor in[2] = {tf(x, xs), has_mask ? ti(m, ms) : tf(NULL, xs)}, out;
            snprintf(what, sizeof what, "%s %s axis %d mask %s", def->name, fmt_shp(sx, sizeof sx, xs), cases[c].axis,
                     has_mask ? fmt_shp(sm, sizeof sm, ms) : "none");
            run_ok(def, has_mask ? 2 : 1, in, &at, 1, &out);
            assert_desc(what, &out, CG_OP_F32, xs);
            double *ref = dalloc(n);
            ref_softmax(x, xs, axis, m, ms, lg, ref);
            expect_close(what, out.data, ref, n, 1e-6, lg ? 1e-12 : 1e-37);
            th_free_outputs(1, &out);
            free(ref);
            free(x);
            free(m);
        }
    }
}
END_TEST

START_TEST(test_softmax_special) {
    shp s = {1, {4}};
    /* Stability: huge logits give finite results. */
    float big[4] = {1000.0f, 1001.0f, 1002.0f, -1000.0f};
    double ref[4];
    int32_t none[4] = {0, 0, 0, 0};
    th_tensor in[2] = {tf(big, &s), ti(none, &s)}, out;
    ref_softmax(big, &s, 0, NULL, NULL, 0, ref);
    run_ok(&cg_op_softmax, 1, in, NULL, 1, &out);
    expect_close("softmax big", out.data, ref, 4, 1e-6, 1e-37);
    th_free_outputs(1, &out);
    ref_softmax(big, &s, 0, NULL, NULL, 1, ref);
    run_ok(&cg_op_log_softmax, 1, in, NULL, 1, &out);
    expect_close("log_softmax big", out.data, ref, 4, 1e-6, 1e-12);
    th_free_outputs(1, &out);
    /* Fully masked slice: zeros / -inf, no NaN. */
    run_ok(&cg_op_softmax, 2, in, NULL, 1, &out);
    for (int i = 0; i < 4; i++) ck_assert(((float *)out.data)[i] == 0.0f);
    th_free_outputs(1, &out);
    run_ok(&cg_op_log_softmax, 2, in, NULL, 1, &out);
    for (int i = 0; i < 4; i++) {
        float v = ((float *)out.data)[i];
        ck_assert(isinf(v) && v < 0);
    }
    th_free_outputs(1, &out);
    /* All valid entries -inf: treated like a fully masked slice. */
    float ninf[4] = {-INFINITY, -INFINITY, 5.0f, -INFINITY};
    int32_t mk[4] = {1, 1, 0, 1};
    th_tensor in2[2] = {tf(ninf, &s), ti(mk, &s)};
    run_ok(&cg_op_softmax, 2, in2, NULL, 1, &out);
    for (int i = 0; i < 4; i++) ck_assert(((float *)out.data)[i] == 0.0f);
    th_free_outputs(1, &out);
    /* Some -inf entries with a finite one: exact 0 / -inf there. */
    run_ok(&cg_op_softmax, 1, in2, NULL, 1, &out);
    ck_assert(((float *)out.data)[2] == 1.0f && ((float *)out.data)[0] == 0.0f);
    th_free_outputs(1, &out);
    /* A NaN poisons only its own slice. */
    shp s2 = {2, {2, 2}};
    float nanx[4] = {NAN, 1.0f, 0.0f, 1.0f};
    th_tensor in3 = tf(nanx, &s2);
    run_ok(&cg_op_softmax, 1, &in3, NULL, 1, &out);
    ck_assert(isnan(((float *)out.data)[0]) && isnan(((float *)out.data)[1]));
    ck_assert(fabsf(((float *)out.data)[2] + ((float *)out.data)[3] - 1.0f) < 1e-6f);
    th_free_outputs(1, &out);
    /* Errors. */
    float f[64] = {0};
    shp x = {2, {3, 5}}, bad = {1, {4}}, sc = {0, {0}};
    th_tensor e1[2] = {tf(f, &x), tf(f, &x)};
    expect_infer_fail(&cg_op_softmax, 2, e1, NULL, 1, "input 1 (mask) must be i32 for softmax");
    int32_t im[64] = {0};
    th_tensor e2[2] = {tf(f, &x), ti(im, &bad)};
    expect_infer_fail(&cg_op_log_softmax, 2, e2, NULL, 1,
                      "input 1 (mask) has shape [4], which does not broadcast to x [3, 5]");
    shp big3 = {3, {1, 3, 5}};
    th_tensor e3[2] = {tf(f, &x), ti(im, &big3)};
    expect_infer_fail(&cg_op_softmax, 2, e3, NULL, 1, "does not broadcast");
    th_attrs at;
    th_attrs_init(&at, &cg_op_softmax);
    th_set_int(&at, &cg_op_softmax, "axis", 2);
    expect_infer_fail(&cg_op_softmax, 1, e1, &at, 1, "axis 2 is out of range for x [3, 5]");
    th_tensor e4 = tf(f, &sc);
    expect_infer_fail(&cg_op_softmax, 1, &e4, NULL, 1, "at least 1 dim");
    /* Symbolic dims. */
    shp sx = {3, {S0, S1, 8}}, smk = {3, {S0, 1, S1}};
    shp sx2 = {3, {S0, 8, S1}};
    th_tensor e5[2] = {tf(f, &sx2), ti(im, &smk)};
    expect_infer(&cg_op_softmax, 2, e5, NULL, 0, CG_OP_F32, &sx2);
    th_tensor e6[2] = {tf(f, &sx), ti(im, &smk)};
    expect_infer(&cg_op_log_softmax, 2, e6, NULL, 0, CG_OP_F32, &sx);
}
END_TEST

START_TEST(test_length_mask) {
    int32_t len[3] = {0, 2, 5};
    shp ls = {1, {3}}, like = {3, {3, 5, 2}}, os = {2, {3, 5}};
    float f[64] = {0};
    th_tensor in[2] = {ti(len, &ls), tf(f, &like)}, out;
    run_ok(&cg_op_length_mask, 2, in, NULL, 1, &out);
    assert_desc("length_mask", &out, CG_OP_I32, &os);
    int32_t want[15];
    for (int b = 0; b < 3; b++)
        for (int s = 0; s < 5; s++) want[b * 5 + s] = s < len[b];
    expect_eq_i32("length_mask", out.data, want, 15);
    th_free_outputs(1, &out);
    /* like may be i32 and 2-D; random lengths over 17 batch rows. */
    th_seed(10);
    int32_t *rl = irand(17, 0, 3);
    int32_t il[17 * 3] = {0};
    shp l17 = {1, {17}}, like17 = {2, {17, 3}};
    th_tensor in2[2] = {ti(rl, &l17), ti(il, &like17)};
    run_ok(&cg_op_length_mask, 2, in2, NULL, 1, &out);
    assert_desc("length_mask i32", &out, CG_OP_I32, &like17);
    int32_t want17[51];
    for (int b = 0; b < 17; b++)
        for (int s = 0; s < 3; s++) want17[b * 3 + s] = s < rl[b];
    expect_eq_i32("length_mask 17", out.data, want17, 51);
    th_free_outputs(1, &out);
    free(rl);
    /* Zero sizes. */
    shp l0 = {1, {0}}, like0 = {2, {0, 4}}, like_s0 = {2, {3, 0}}, o30 = {2, {3, 0}};
    th_tensor in3[2] = {ti(len, &l0), tf(f, &like0)};
    run_ok(&cg_op_length_mask, 2, in3, NULL, 1, &out);
    assert_desc("length_mask B=0", &out, CG_OP_I32, &like0);
    th_free_outputs(1, &out);
    int32_t zl[3] = {0, 0, 0};
    th_tensor in4[2] = {ti(zl, &ls), tf(f, &like_s0)};
    run_ok(&cg_op_length_mask, 2, in4, NULL, 1, &out);
    assert_desc("length_mask S=0", &out, CG_OP_I32, &o30);
    th_free_outputs(1, &out);
    /* Errors name the batch row. */
    int32_t over[3] = {1, 6, 0}, neg[3] = {-1, 0, 0};
    th_tensor e1[2] = {ti(over, &ls), tf(f, &like)};
    expect_kernel_fail(&cg_op_length_mask, 2, e1, NULL, 1, "input 0 (lengths) holds 6 at position 1, outside [0, 5]");
    th_tensor e2[2] = {ti(neg, &ls), tf(f, &like)};
    expect_kernel_fail(&cg_op_length_mask, 2, e2, NULL, 1, "input 0 (lengths) holds -1 at position 0, outside [0, 5]");
    shp l4 = {1, {4}}, like1 = {1, {3}};
    th_tensor e3[2] = {ti(len, &l4), tf(f, &like)};
    expect_infer_fail(&cg_op_length_mask, 2, e3, NULL, 1,
                      "input 0 (lengths) has shape [4], expected [B] with B from like [3, 5, 2]");
    th_tensor e4[2] = {ti(len, &ls), tf(f, &like1)};
    expect_infer_fail(&cg_op_length_mask, 2, e4, NULL, 1, "at least 2 dims");
    th_tensor e5[2] = {tf(f, &ls), tf(f, &like)};
    expect_infer_fail(&cg_op_length_mask, 2, e5, NULL, 1, "input 0 must be i32");
    /* Symbolic. */
    shp sl = {1, {CG_DIM_UNKNOWN}}, slike = {3, {S0, S1, 4}}, so = {2, {S0, S1}};
    th_tensor e6[2] = {ti(len, &sl), tf(f, &slike)};
    expect_infer(&cg_op_length_mask, 2, e6, NULL, 0, CG_OP_I32, &so);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Reductions                                                          */

enum { R_SUM, R_MEAN, R_MAX, R_PROD };

/* Reference reduction; writes the output shape (with keepdims) to *os. */
static void ref_reduce(const float *x, const shp *xs, const int *red, int keep, int kind, double *out, shp *os) {
    shp kept = {0, {0}};
    os->nd = 0;
    int64_t count = 1;
    for (int i = 0; i < xs->nd; i++) {
        if (!red[i]) kept.d[kept.nd++] = xs->d[i];
        else count *= xs->d[i];
        if (!red[i]) os->d[os->nd++] = xs->d[i];
        else if (keep) os->d[os->nd++] = 1;
    }
    int64_t on = shp_numel(&kept), n = shp_numel(xs), idx[CG_MAX_DIMS], kidx[CG_MAX_DIMS];
    for (int64_t i = 0; i < on; i++) out[i] = kind == R_MAX ? -INFINITY : kind == R_PROD ? 1.0 : 0.0;
    for (int64_t f = 0; f < n; f++) {
        unravel(f, xs, idx);
        int k = 0;
        for (int i = 0; i < xs->nd; i++)
            if (!red[i]) kidx[k++] = idx[i];
        int64_t o = ravel(kidx, &kept);
        double v = x[f];
        if (kind == R_MAX) {
            if (isnan(v) || isnan(out[o])) out[o] = NAN;
            else if (v > out[o]) out[o] = v;
        } else if (kind == R_PROD) {
            out[o] *= v;
        } else {
            out[o] += v;
        }
    }
    if (kind == R_MEAN)
        for (int64_t i = 0; i < on; i++) out[i] = out[i] / (double)count;
}

START_TEST(test_reduce) {
    const struct {
        shp x;
        int naxes; /* -1: attribute not set */
        int64_t axes[CG_MAX_DIMS];
        int keep;
    } cases[] = {
        {{3, {2, 3, 4}}, -1, {0}, 0},
        {{3, {2, 3, 4}}, 0, {0}, 1},
        {{3, {2, 3, 4}}, 1, {0}, 0},
        {{3, {2, 3, 4}}, 1, {1}, 1},
        {{3, {2, 3, 4}}, 1, {-1}, 0},
        {{3, {2, 3, 4}}, 2, {0, 2}, 0},
        {{3, {2, 3, 4}}, 2, {2, 0}, 1},
        {{3, {2, 3, 4}}, 2, {1, 2}, 0},
        {{3, {2, 3, 4}}, 3, {0, 1, 2}, 1},
        {{1, {17}}, 1, {0}, 0},
        {{3, {3, 1, 17}}, 1, {1}, 0},
        {{3, {3, 1, 17}}, 2, {0, 1}, 1},
        {{0, {0}}, -1, {0}, 0},
        {{3, {1, 1, 1}}, 1, {1}, 0},
        {{4, {5, 7, 3, 4}}, 2, {0, 2}, 0},
        {{4, {5, 7, 3, 4}}, 2, {1, 3}, 1},
        {{4, {5, 7, 3, 4}}, 2, {-3, -2}, 0},
        {{2, {0, 3}}, 1, {1}, 0},
        {{2, {17, 3}}, 1, {0}, 1},
        {{1, {1}}, -1, {0}, 0},
        {{5, {2, 1, 3, 1, 5}}, 2, {1, 2}, 0},
    };
    const cg_op_def *defs[4] = {&cg_op_reduce_sum, &cg_op_reduce_mean, &cg_op_reduce_max, &cg_op_reduce_prod};
    char sx[64], what[256];
    th_seed(11);
    for (int kind = 0; kind < 4; kind++) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            const shp *xs = &cases[c].x;
            int64_t n = shp_numel(xs);
            float *x = frand(n, -3, 3);
            int red[CG_MAX_DIMS] = {0};
            th_attrs at;
            th_attrs_init(&at, defs[kind]);
            if (cases[c].naxes >= 0) th_set_ints(&at, defs[kind], "axes", cases[c].naxes, cases[c].axes);
            if (cases[c].keep) th_set_int(&at, defs[kind], "keepdims", 1);
            if (cases[c].naxes <= 0)
                for (int i = 0; i < xs->nd; i++) red[i] = 1;
            for (int i = 0; i < cases[c].naxes; i++) {
                int64_t a = cases[c].axes[i];
                red[a < 0 ? a + xs->nd : a] = 1;
            }
            th_tensor in = tf(x, xs), out;
            snprintf(what, sizeof what, "%s %s case %zu", defs[kind]->name, fmt_shp(sx, sizeof sx, xs), c);
            run_ok(defs[kind], 1, &in, &at, 1, &out);
            shp os;
            double *ref = dalloc(n + 1);
            ref_reduce(x, xs, red, cases[c].keep, kind, ref, &os);
            assert_desc(what, &out, CG_OP_F32, &os);
            expect_close(what, out.data, ref, shp_numel(&os), 1e-6, 1e-9);
            th_free_outputs(1, &out);
            free(ref);
            free(x);
        }
    }
}
END_TEST

START_TEST(test_reduce_special) {
    float f[64] = {0};
    shp e = {2, {0, 3}}, o3 = {1, {3}};
    int64_t ax0[1] = {0};
    th_attrs at;
    th_tensor in = tf(f, &e), out;
    /* Empty reduction: sum 0, mean NaN, max an error. */
    th_attrs_init(&at, &cg_op_reduce_sum);
    th_set_ints(&at, &cg_op_reduce_sum, "axes", 1, ax0);
    run_ok(&cg_op_reduce_sum, 1, &in, &at, 1, &out);
    assert_desc("sum empty", &out, CG_OP_F32, &o3);
    for (int i = 0; i < 3; i++) ck_assert(((float *)out.data)[i] == 0.0f);
    th_free_outputs(1, &out);
    run_ok(&cg_op_reduce_mean, 1, &in, &at, 1, &out);
    for (int i = 0; i < 3; i++) ck_assert(isnan(((float *)out.data)[i]));
    th_free_outputs(1, &out);
    expect_infer_fail(&cg_op_reduce_max, 1, &in, &at, 1, "reduce_max over axis 0 of size 0");
    /* NaN propagates through reduce_max along either layout. */
    shp s = {2, {2, 3}};
    float nx[6] = {1, NAN, 2, 3, 4, 5};
    th_tensor nin = tf(nx, &s);
    run_ok(&cg_op_reduce_max, 1, &nin, &at, 1, &out);
    ck_assert(isnan(((float *)out.data)[1]) && ((float *)out.data)[0] == 3.0f);
    th_free_outputs(1, &out);
    th_attrs_init(&at, &cg_op_reduce_max);
    run_ok(&cg_op_reduce_max, 1, &nin, &at, 1, &out);
    ck_assert(isnan(((float *)out.data)[0]));
    th_free_outputs(1, &out);
    /* Errors. */
    int64_t bad[2] = {0, 2}, dup[2] = {1, -1};
    th_set_ints(&at, &cg_op_reduce_max, "axes", 2, bad);
    expect_infer_fail(&cg_op_reduce_max, 1, &nin, &at, 1, "axis 2 in axes is out of range for x [2, 3]");
    th_set_ints(&at, &cg_op_reduce_max, "axes", 2, dup);
    expect_infer_fail(&cg_op_reduce_max, 1, &nin, &at, 1, "axis -1 in axes repeats axis 1");
    th_attrs_init(&at, &cg_op_reduce_sum);
    th_set_int(&at, &cg_op_reduce_sum, "keepdims", 3);
    expect_infer_fail(&cg_op_reduce_sum, 1, &nin, &at, 1, "keepdims must be 0 or 1");
    int32_t iv[6] = {0};
    th_tensor iin = ti(iv, &s);
    expect_infer_fail(&cg_op_reduce_mean, 1, &iin, NULL, 1, "input 0 must be f32");
    /* Symbolic dims. */
    shp sx = {3, {S0, 3, S1}};
    int64_t ax12[2] = {1, 2};
    th_attrs_init(&at, &cg_op_reduce_mean);
    th_set_ints(&at, &cg_op_reduce_mean, "axes", 2, ax12);
    th_set_int(&at, &cg_op_reduce_mean, "keepdims", 1);
    shp so3 = {3, {S0, 1, 1}};
    th_tensor sin = tf(f, &sx);
    expect_infer(&cg_op_reduce_mean, 1, &sin, &at, 0, CG_OP_F32, &so3);
}
END_TEST

/* First NaN wins; otherwise the first maximum. */
static int32_t ref_argmax_slice(const float *x, int64_t n, int64_t st) {
    int64_t best = -1;
    for (int64_t j = 0; j < n; j++) {
        float v = x[j * st];
        if (isnan(v)) return (int32_t)j;
        if (best < 0 || v > x[best * st]) best = j;
    }
    return (int32_t)best;
}

/* The same with ties to the highest index: the scan from the end. */
static int32_t ref_argmax_last(const float *x, int64_t n, int64_t st) {
    int64_t best = -1;
    for (int64_t j = n - 1; j >= 0; j--) {
        float v = x[j * st];
        if (isnan(v)) return (int32_t)j;
        if (best < 0 || v > x[best * st]) best = j;
    }
    return (int32_t)best;
}

START_TEST(test_argmax) {
    const struct {
        shp x;
        int axis, keep;
    } cases[] = {
        {{2, {3, 17}}, -1, 0},   {{2, {3, 17}}, 0, 1},    {{3, {2, 3, 5}}, 1, 0},
        {{3, {2, 3, 5}}, -3, 1}, {{1, {17}}, 0, 0},       {{1, {1}}, 0, 0},
        {{3, {2, 0, 5}}, -1, 0}, {{3, {4, 17, 3}}, 1, 0}, {{3, {4, 17, 3}}, 2, 1},
    };
    char sx[64], what[256];
    th_seed(12);
    for (int v6 = 0; v6 < 6; v6++) {
        const int variant = v6 % 3, last = v6 >= 3;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            const shp *xs = &cases[c].x;
            int64_t n = shp_numel(xs);
            /* 0: continuous, 1: many ties, 2: ties and NaNs; each with
             * ties to the first and to the last index. */
            float *x = variant ? frand_int(n, 3) : frand(n, -5, 5);
            if (variant == 2)
                for (int64_t i = 0; i < n; i++)
                    if (irand1(0, 9) == 0) x[i] = NAN;
            int axis = cases[c].axis < 0 ? cases[c].axis + xs->nd : cases[c].axis;
            th_attrs at;
            th_attrs_init(&at, &cg_op_argmax);
            if (cases[c].axis != -1) th_set_int(&at, &cg_op_argmax, "axis", cases[c].axis);
            if (cases[c].keep) th_set_int(&at, &cg_op_argmax, "keepdims", 1);
            if (last) th_set_int(&at, &cg_op_argmax, "last", 1);
            th_tensor in = tf(x, xs), out;
            snprintf(what, sizeof what, "argmax %s axis %d variant %d last %d", fmt_shp(sx, sizeof sx, xs),
                     cases[c].axis, variant, last);
            run_ok(&cg_op_argmax, 1, &in, &at, 1, &out);
            shp os = {0, {0}};
            int64_t outer = 1, inner = 1, len = xs->d[axis];
            for (int i = 0; i < xs->nd; i++) {
                if (i < axis) outer *= xs->d[i];
                if (i > axis) inner *= xs->d[i];
                if (i != axis) os.d[os.nd++] = xs->d[i];
                else if (cases[c].keep) os.d[os.nd++] = 1;
            }
            assert_desc(what, &out, CG_OP_I32, &os);
            int32_t *ref = xmalloc((size_t)(outer * inner) * 4);
            for (int64_t o = 0; o < outer; o++)
                for (int64_t i = 0; i < inner; i++)
                    ref[o * inner + i] =
                        (last ? ref_argmax_last : ref_argmax_slice)(x + o * len * inner + i, len, inner);
            expect_eq_i32(what, out.data, ref, outer * inner);
            th_free_outputs(1, &out);
            free(ref);
            free(x);
        }
    }
    /* Errors. */
    float f[8] = {0};
    shp e = {2, {3, 0}}, s = {2, {2, 3}};
    th_tensor ein = tf(f, &e), sin = tf(f, &s);
    expect_infer_fail(&cg_op_argmax, 1, &ein, NULL, 1, "argmax over axis 1 of size 0");
    th_attrs at;
    th_attrs_init(&at, &cg_op_argmax);
    th_set_int(&at, &cg_op_argmax, "axis", -3);
    expect_infer_fail(&cg_op_argmax, 1, &sin, &at, 1, "axis -3 is out of range for x [2, 3]");
    shp sym = {3, {S0, S1, 5}}, so = {2, {S0, 5}};
    th_set_int(&at, &cg_op_argmax, "axis", 1);
    th_tensor symin = tf(f, &sym);
    expect_infer(&cg_op_argmax, 1, &symin, &at, 0, CG_OP_I32, &so);
}
END_TEST

/* "i ranks before j": larger first with NaN largest, then lower index. */
static int ref_topk_before(const float *x, int64_t i, int64_t j) {
    int ni = isnan(x[i]), nj = isnan(x[j]);
    if (ni != nj) return ni;
    if (!ni && x[i] != x[j]) return x[i] > x[j];
    return i < j;
}

START_TEST(test_topk) {
    const struct {
        shp x;
        int64_t k;
    } cases[] = {
        {{2, {3, 17}}, 1},   {{2, {3, 17}}, 5}, {{2, {3, 17}}, 17}, {{2, {3, 17}}, 0},   {{1, {17}}, 3},
        {{3, {2, 3, 9}}, 4}, {{2, {0, 5}}, 2},  {{1, {1}}, 1},      {{2, {4, 100}}, 10}, {{2, {2, 33}}, 32},
    };
    char sx[64], what[256];
    th_seed(13);
    for (int variant = 0; variant < 3; variant++) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            const shp *xs = &cases[c].x;
            int64_t n = shp_numel(xs), len = xs->d[xs->nd - 1], rows = len ? n / len : 0;
            int64_t k = cases[c].k;
            float *x = variant ? frand_int(n, 5) : frand(n, -5, 5);
            if (variant == 2)
                for (int64_t i = 0; i < n; i++)
                    if (irand1(0, 7) == 0) x[i] = NAN;
            if (xs->nd == 2 && xs->d[0] == 0) rows = 0;
            th_attrs at;
            th_attrs_init(&at, &cg_op_topk);
            th_set_int(&at, &cg_op_topk, "k", k);
            th_tensor in = tf(x, xs), out[2];
            snprintf(what, sizeof what, "topk %s k=%lld variant %d", fmt_shp(sx, sizeof sx, xs), (long long)k, variant);
            run_ok(&cg_op_topk, 1, &in, &at, 2, out);
            shp os = *xs;
            os.d[os.nd - 1] = k;
            assert_desc(what, &out[0], CG_OP_F32, &os);
            assert_desc(what, &out[1], CG_OP_I32, &os);
            int64_t *order = xmalloc((size_t)len * sizeof(int64_t));
            const float *gv = out[0].data;
            const int32_t *gi = out[1].data;
            for (int64_t r = 0; r < rows; r++) {
                const float *xr = x + r * len;
                for (int64_t j = 0; j < len; j++) { /* insertion sort */
                    int64_t p = j;
                    while (p > 0 && ref_topk_before(xr, j, order[p - 1])) {
                        order[p] = order[p - 1];
                        p--;
                    }
                    order[p] = j;
                }
                for (int64_t j = 0; j < k; j++) {
                    float want = xr[order[j]], got = gv[r * k + j];
                    if (gi[r * k + j] != order[j] || !((isnan(want) && isnan(got)) || want == got))
                        ck_abort_msg("%s: row %lld pos %lld is (%g, %d), expected (%g, %lld)", what, (long long)r,
                                     (long long)j, got, gi[r * k + j], want, (long long)order[j]);
                }
            }
            free(order);
            th_free_outputs(2, out);
            free(x);
        }
    }
    /* Errors. */
    float f[64] = {0};
    shp s = {2, {3, 5}}, sc = {0, {0}};
    th_attrs at;
    th_attrs_init(&at, &cg_op_topk);
    th_tensor in = tf(f, &s);
    expect_infer_fail(&cg_op_topk, 1, &in, &at, 2, "attribute k is required");
    th_set_int(&at, &cg_op_topk, "k", 6);
    expect_infer_fail(&cg_op_topk, 1, &in, &at, 2, "k=6 is larger than the last dim 5 of x [3, 5]");
    th_set_int(&at, &cg_op_topk, "k", -2);
    expect_infer_fail(&cg_op_topk, 1, &in, &at, 2, "k must be >= 0 (or -1: all), got -2");
    th_set_int(&at, &cg_op_topk, "k", 1);
    th_tensor sci = tf(f, &sc);
    expect_infer_fail(&cg_op_topk, 1, &sci, &at, 2, "at least 1 dim");
    /* Symbolic last dim: k cannot be checked yet. */
    shp sym = {2, {S0, S1}}, so = {2, {S0, 1}};
    th_tensor symin = tf(f, &sym);
    expect_infer(&cg_op_topk, 1, &symin, &at, 1, CG_OP_I32, &so);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Shape ops                                                           */

START_TEST(test_concat) {
    const struct {
        int n;
        shp s[4];
        int axis;
    } cases[] = {
        {3, {{3, {2, 3, 4}}, {3, {2, 5, 4}}, {3, {2, 1, 4}}}, 1},
        {2, {{3, {2, 3, 4}}, {3, {1, 3, 4}}}, 0},
        {2, {{3, {2, 3, 4}}, {3, {2, 3, 17}}}, -1},
        {1, {{1, {17}}}, 0},
        {3, {{3, {2, 0, 4}}, {3, {2, 3, 4}}, {3, {2, 0, 4}}}, 1},
        {4, {{1, {3}}, {1, {1}}, {1, {17}}, {1, {0}}}, 0},
        {2, {{2, {0, 3}}, {2, {0, 5}}}, 1},
    };
    char what[128];
    th_seed(14);
    for (int dt = 0; dt < 2; dt++) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            th_tensor in[4], out;
            void *data[4];
            int nt = cases[c].n;
            const shp *s0 = &cases[c].s[0];
            int axis = cases[c].axis < 0 ? cases[c].axis + s0->nd : cases[c].axis;
            shp os = *s0;
            os.d[axis] = 0;
            for (int t = 0; t < nt; t++) {
                const shp *s = &cases[c].s[t];
                int64_t n = shp_numel(s);
                data[t] = dt ? (void *)irand(n, -100, 100) : (void *)frand(n, -1, 1);
                in[t] = dt ? ti(data[t], s) : tf(data[t], s);
                os.d[axis] += s->d[axis];
            }
            th_attrs at;
            th_attrs_init(&at, &cg_op_concat);
            th_set_int(&at, &cg_op_concat, "axis", cases[c].axis);
            snprintf(what, sizeof what, "concat case %zu dtype %d", c, dt);
            run_ok(&cg_op_concat, nt, in, &at, 1, &out);
            assert_desc(what, &out, dt ? CG_OP_I32 : CG_OP_F32, &os);
            int64_t no = shp_numel(&os), idx[CG_MAX_DIMS];
            for (int64_t f = 0; f < no; f++) {
                unravel(f, &os, idx);
                int t = 0;
                while (idx[axis] >= cases[c].s[t].d[axis]) idx[axis] -= cases[c].s[t++].d[axis];
                uint32_t want = ((const uint32_t *)data[t])[ravel(idx, &cases[c].s[t])];
                uint32_t got = ((const uint32_t *)out.data)[f];
                if (want != got) ck_abort_msg("%s: element %lld differs", what, (long long)f);
            }
            th_free_outputs(1, &out);
            for (int t = 0; t < nt; t++) free(data[t]);
        }
    }
    /* Errors and symbolic dims. */
    float f[64] = {0};
    int32_t iv[64] = {0};
    shp a = {2, {2, 3}}, b = {2, {3, 3}}, c1 = {1, {3}};
    th_attrs at;
    th_attrs_init(&at, &cg_op_concat);
    th_set_int(&at, &cg_op_concat, "axis", 1);
    th_tensor e1[2] = {tf(f, &a), ti(iv, &a)};
    expect_infer_fail(&cg_op_concat, 2, e1, &at, 1, "input 1 is i32 but input 0 is f32");
    th_tensor e2[2] = {tf(f, &a), tf(f, &b)};
    expect_infer_fail(&cg_op_concat, 2, e2, &at, 1,
                      "input 1 has shape [3, 3], incompatible with input 0 [2, 3] at dim 0");
    th_tensor e3[2] = {tf(f, &a), tf(f, &c1)};
    expect_infer_fail(&cg_op_concat, 2, e3, &at, 1, "same number of dims");
    th_set_int(&at, &cg_op_concat, "axis", 2);
    expect_infer_fail(&cg_op_concat, 2, e2, &at, 1, "axis 2 is out of range");
    th_attrs none;
    th_attrs_init(&none, &cg_op_concat);
    expect_infer_fail(&cg_op_concat, 2, e2, &none, 1, "attribute axis is required");
    th_set_int(&at, &cg_op_concat, "axis", 1);
    shp sa = {2, {S0, 3}}, sb = {2, {S0, 4}}, so = {2, {S0, 7}};
    th_tensor e4[2] = {tf(f, &sa), tf(f, &sb)};
    expect_infer(&cg_op_concat, 2, e4, &at, 0, CG_OP_F32, &so);
    th_set_int(&at, &cg_op_concat, "axis", 0);
    shp sc = {2, {2, 3}}, sd = {2, {S1, 3}}, so2 = {2, {CG_DIM_UNKNOWN, 3}};
    th_tensor e5[2] = {tf(f, &sc), tf(f, &sd)};
    expect_infer(&cg_op_concat, 2, e5, &at, 0, CG_OP_F32, &so2);
    th_tensor e6[1] = {tf(f, &sd)};
    expect_infer(&cg_op_concat, 1, e6, &at, 0, CG_OP_F32, &sd);
}
END_TEST

static void py_bounds(int64_t n, int64_t s, int64_t e, int64_t *os, int64_t *oe) {
    /* Python's slice.indices for step 1. */
    if (s < 0) s += n;
    if (s < 0) s = 0;
    if (s > n) s = n;
    if (e < 0) e += n;
    if (e < 0) e = 0;
    if (e > n) e = n;
    *os = s;
    *oe = e < s ? s : e;
}

START_TEST(test_slice) {
    const int64_t bounds[][2] = {
        {0, INT64_MAX},  {2, 5}, {-3, INT64_MAX},        {-100, 100},     {3, 2}, {0, -1}, {-5, -2},
        {17, INT64_MAX}, {1, 2}, {INT64_MIN, INT64_MAX}, {-1, INT64_MAX},
    };
    const shp shapes[] = {{3, {5, 17, 3}}, {1, {1}}, {2, {0, 4}}};
    char what[128];
    th_seed(15);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const shp *xs = &shapes[s];
        int64_t n = shp_numel(xs);
        float *x = frand(n, -1, 1);
        for (int axis = -xs->nd; axis < xs->nd; axis++) {
            int ax = axis < 0 ? axis + xs->nd : axis;
            for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
                th_attrs at;
                th_attrs_init(&at, &cg_op_slice);
                th_set_int(&at, &cg_op_slice, "axis", axis);
                if (bounds[b][0] != 0) th_set_int(&at, &cg_op_slice, "start", bounds[b][0]);
                if (bounds[b][1] != INT64_MAX) th_set_int(&at, &cg_op_slice, "end", bounds[b][1]);
                int64_t st, en;
                py_bounds(xs->d[ax], bounds[b][0], bounds[b][1], &st, &en);
                shp os = *xs;
                os.d[ax] = en - st;
                th_tensor in = tf(x, xs), out;
                snprintf(what, sizeof what, "slice shape %zu axis %d bounds %zu", s, axis, b);
                run_ok(&cg_op_slice, 1, &in, &at, 1, &out);
                assert_desc(what, &out, CG_OP_F32, &os);
                int64_t no = shp_numel(&os), idx[CG_MAX_DIMS];
                for (int64_t f = 0; f < no; f++) {
                    unravel(f, &os, idx);
                    idx[ax] += st;
                    if (((float *)out.data)[f] != x[ravel(idx, xs)])
                        ck_abort_msg("%s: element %lld differs", what, (long long)f);
                }
                th_free_outputs(1, &out);
            }
        }
        free(x);
    }
    /* i32 data. */
    int32_t iv[6] = {1, 2, 3, 4, 5, 6}, want[2] = {2, 5};
    shp s23 = {2, {2, 3}}, s21 = {2, {2, 1}};
    th_attrs at;
    th_attrs_init(&at, &cg_op_slice);
    th_set_int(&at, &cg_op_slice, "axis", 1);
    th_set_int(&at, &cg_op_slice, "start", 1);
    th_set_int(&at, &cg_op_slice, "end", -1);
    th_tensor iin = ti(iv, &s23), out;
    run_ok(&cg_op_slice, 1, &iin, &at, 1, &out);
    assert_desc("slice i32", &out, CG_OP_I32, &s21);
    expect_eq_i32("slice i32", out.data, want, 2);
    th_free_outputs(1, &out);
    /* Symbolic dims: kept for the whole range, 0 when empty regardless,
     * unknown otherwise; concrete dims still computed. */
    float f[4] = {0};
    shp sx = {2, {S0, 5}};
    th_tensor sin = tf(f, &sx);
    th_attrs_init(&at, &cg_op_slice);
    th_set_int(&at, &cg_op_slice, "axis", 0);
    expect_infer(&cg_op_slice, 1, &sin, &at, 0, CG_OP_F32, &sx);
    th_set_int(&at, &cg_op_slice, "start", 1);
    shp su = {2, {CG_DIM_UNKNOWN, 5}};
    expect_infer(&cg_op_slice, 1, &sin, &at, 0, CG_OP_F32, &su);
    th_set_int(&at, &cg_op_slice, "end", 1);
    shp s0 = {2, {0, 5}};
    expect_infer(&cg_op_slice, 1, &sin, &at, 0, CG_OP_F32, &s0);
    th_set_int(&at, &cg_op_slice, "start", -1);
    th_set_int(&at, &cg_op_slice, "end", -3);
    expect_infer(&cg_op_slice, 1, &sin, &at, 0, CG_OP_F32, &s0);
    th_set_int(&at, &cg_op_slice, "axis", -1);
    shp sc = {2, {S0, 2}};
    th_set_int(&at, &cg_op_slice, "start", -3);
    th_set_int(&at, &cg_op_slice, "end", -1);
    expect_infer(&cg_op_slice, 1, &sin, &at, 0, CG_OP_F32, &sc);
    /* Errors. */
    th_set_int(&at, &cg_op_slice, "axis", 2);
    expect_infer_fail(&cg_op_slice, 1, &sin, &at, 1, "axis 2 is out of range for x [s0, 5]");
    th_attrs none;
    th_attrs_init(&none, &cg_op_slice);
    expect_infer_fail(&cg_op_slice, 1, &sin, &none, 1, "attribute axis is required");
}
END_TEST

static void reshape_expect(const shp *xs, int n, const int64_t *shape, const shp *want) {
    th_attrs at;
    th_attrs_init(&at, &cg_op_reshape);
    th_set_ints(&at, &cg_op_reshape, "shape", n, shape);
    int64_t numel = 1;
    int concrete = 1;
    for (int i = 0; i < xs->nd; i++) {
        if (xs->d[i] < 0) concrete = 0;
        else numel *= xs->d[i];
    }
    float *x = frand(concrete ? numel : 1, -1, 1);
    th_tensor in = tf(x, xs), out;
    if (!concrete) {
        expect_infer(&cg_op_reshape, 1, &in, &at, 0, CG_OP_F32, want);
    } else {
        run_ok(&cg_op_reshape, 1, &in, &at, 1, &out);
        assert_desc("reshape", &out, CG_OP_F32, want);
        ck_assert(memcmp(out.data, x, (size_t)numel * 4) == 0);
        th_free_outputs(1, &out);
        if (numel > 1) expect_inplace_same(&cg_op_reshape, in, &at);
    }
    free(x);
}

/* layer_norm against values worked by hand: [1, 2, 3, 4] has mean 2.5 and
 * variance 1.25, so (x - 2.5) / sqrt(1.25 + eps) = [-3, -1, 1, 3] / sqrt(5);
 * a row of 1e4 + [1, 2, 3, 4] gives the same (no cancellation); gamma and
 * beta scale and shift; a constant row is all beta (NaN with epsilon 0). */
START_TEST(test_layer_norm) {
    float x[12] = {1, 2, 3, 4, 10001, 10002, 10003, 10004, 7, 7, 7, 7};
    float g[4] = {1, 2, 0.5f, -1}, b[4] = {0, 1, -1, 0.25f};
    shp sx = {2, {3, 4}}, sg = {1, {4}};
    th_tensor in[3] = {tf(x, &sx), tf(g, &sg), tf(b, &sg)}, out;
    th_attrs at;
    th_attrs_init(&at, &cg_op_layer_norm);
    th_set_float(&at, &cg_op_layer_norm, "epsilon", 0);
    ck_assert_msg(th_run(&cg_op_layer_norm, 1, in, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    const float *y = out.data;
    const double r5 = 1.0 / sqrt(5.0);
    for (int row = 0; row < 2; row++)
        for (int j = 0; j < 4; j++) ck_assert_float_eq_tol(y[row * 4 + j], (float)((2 * j - 3) * r5), 1e-6f);
    for (int j = 0; j < 4; j++) ck_assert(isnan(y[8 + j])); /* 0 / sqrt(0), as torch's layer_norm with eps 0 */
    th_free_outputs(1, &out);
    th_set_float(&at, &cg_op_layer_norm, "epsilon", 1e-5);
    ck_assert_msg(th_run(&cg_op_layer_norm, 3, in, &at, 1, &out, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    y = out.data;
    const double rs = 1.0 / sqrt(1.25 + 1e-5);
    for (int j = 0; j < 4; j++) {
        ck_assert_float_eq_tol(y[j], (float)((j - 1.5) * rs * g[j] + b[j]), 1e-6f);
        ck_assert_float_eq(y[8 + j], b[j]);
    }
    th_free_outputs(1, &out);
    th_set_float(&at, &cg_op_layer_norm, "epsilon", -1);
    expect_infer_fail(&cg_op_layer_norm, 3, in, &at, 1, "epsilon must be finite and >= 0");
    th_set_float(&at, &cg_op_layer_norm, "epsilon", 1e-5);
    shp s5 = {1, {5}};
    th_tensor bad[2] = {in[0], tf(g, &s5)};
    expect_infer_fail(&cg_op_layer_norm, 2, bad, &at, 1, "input 1 (gamma) has 5 elements, the normalized dims 4");
    /* A residual: of x + r (here [1, 2, 3, 4] again in each row, exact),
     * the sum as a second output when asked for; the sum needs the residual. */
    float r[12] = {0, 0, 0, 0, -10000, -10000, -10000, -10000, -6, -5, -4, -3};
    th_tensor in4[4] = {in[0], in[1], in[2], tf(r, &sx)}, out2[2];
    ck_assert_msg(th_run(&cg_op_layer_norm, 4, in4, &at, 2, out2, g_err, sizeof g_err) == CG_OP_OK, "%s", g_err);
    const float *y2 = out2[0].data, *s2 = out2[1].data;
    for (int row = 0; row < 3; row++)
        for (int j = 0; j < 4; j++) {
            ck_assert_float_eq(s2[row * 4 + j], (float)(j + 1));
            ck_assert_float_eq_tol(y2[row * 4 + j], (float)((j - 1.5) * rs * g[j] + b[j]), 1e-6f);
        }
    th_free_outputs(2, out2);
    expect_infer_fail(&cg_op_layer_norm, 3, in, &at, 2, "output 1 (sum) is x + residual: it needs input 3 (residual)");
}
END_TEST

START_TEST(test_reshape) {
    th_seed(16);
    shp x = {3, {2, 3, 4}};
    reshape_expect(&x, 2, (int64_t[]){6, 4}, &(shp){2, {6, 4}});
    reshape_expect(&x, 2, (int64_t[]){0, -1}, &(shp){2, {2, 12}});
    reshape_expect(&x, 1, (int64_t[]){-1}, &(shp){1, {24}});
    reshape_expect(&x, 3, (int64_t[]){4, 0, 2}, &(shp){3, {4, 3, 2}});
    reshape_expect(&x, 4, (int64_t[]){2, 0, 2, -1}, &(shp){4, {2, 3, 2, 2}});
    reshape_expect(&x, 8, (int64_t[]){1, 2, 1, 3, 1, 4, 1, -1}, &(shp){8, {1, 2, 1, 3, 1, 4, 1, 1}});
    shp one = {1, {1}};
    reshape_expect(&one, 0, (int64_t[]){0}, &(shp){0, {0}}); /* shape [] */
    reshape_expect(&(shp){0, {0}}, 3, (int64_t[]){1, -1, 1}, &(shp){3, {1, 1, 1}});
    /* Zero-size: copied dims cancel, so -1 is still determined. */
    reshape_expect(&(shp){2, {0, 3}}, 2, (int64_t[]){0, -1}, &(shp){2, {0, 3}});
    reshape_expect(&(shp){2, {0, 3}}, 2, (int64_t[]){-1, 5}, &(shp){2, {0, 5}});
    reshape_expect(&(shp){2, {0, 3}}, 3, (int64_t[]){5, 0, -1}, &(shp){3, {5, 3, 0}});
    /* Symbolic dims. */
    reshape_expect(&(shp){3, {S0, 3, 4}}, 2, (int64_t[]){0, -1}, &(shp){2, {S0, 12}});
    reshape_expect(&(shp){2, {S0, 12}}, 3, (int64_t[]){0, 3, -1}, &(shp){3, {S0, 3, 4}});
    reshape_expect(&(shp){2, {S0, 3}}, 1, (int64_t[]){-1}, &(shp){1, {CG_DIM_UNKNOWN}});
    reshape_expect(&(shp){3, {1, S0, 32}}, 2, (int64_t[]){-1, 32}, &(shp){2, {S0, 32}});
    reshape_expect(&(shp){3, {2, S0, 3}}, 3, (int64_t[]){3, -1, 2}, &(shp){3, {3, S0, 2}});
    reshape_expect(&(shp){2, {S0, 6}}, 2, (int64_t[]){-1, 3}, &(shp){2, {CG_DIM_UNKNOWN, 3}});
    reshape_expect(&(shp){2, {S0, 3}}, 2, (int64_t[]){-1, 2}, &(shp){2, {CG_DIM_UNKNOWN, 2}});
    reshape_expect(&(shp){2, {S0, S1}}, 1, (int64_t[]){-1}, &(shp){1, {CG_DIM_UNKNOWN}});
    reshape_expect(&(shp){2, {CG_DIM_UNKNOWN, 3}}, 2, (int64_t[]){-1, 3}, &(shp){2, {CG_DIM_UNKNOWN, 3}});
    reshape_expect(&(shp){3, {S0, S1, 4}}, 3, (int64_t[]){0, -1, 4}, &(shp){3, {S0, S1, 4}});
    reshape_expect(&(shp){3, {S0, S1, 4}}, 3, (int64_t[]){0, -1, 2}, &(shp){3, {S0, CG_DIM_UNKNOWN, 2}});
    reshape_expect(&(shp){2, {S0, 3}}, 2, (int64_t[]){3, 7}, &(shp){2, {3, 7}});
    /* Errors. */
    float f[64] = {0};
    th_tensor in = tf(f, &x);
    th_attrs at;
    th_attrs_init(&at, &cg_op_reshape);
    th_set_ints(&at, &cg_op_reshape, "shape", 2, (int64_t[]){-1, -1});
    expect_infer_fail(&cg_op_reshape, 1, &in, &at, 1, "shape [-1, -1] has more than one -1");
    th_set_ints(&at, &cg_op_reshape, "shape", 2, (int64_t[]){5, 5});
    expect_infer_fail(&cg_op_reshape, 1, &in, &at, 1, "cannot reshape x [2, 3, 4] (24 elements) into shape [5, 5]");
    th_set_ints(&at, &cg_op_reshape, "shape", 2, (int64_t[]){5, -1});
    expect_infer_fail(&cg_op_reshape, 1, &in, &at, 1, "do not divide by 5");
    th_set_ints(&at, &cg_op_reshape, "shape", 4, (int64_t[]){1, 1, 1, 0});
    expect_infer_fail(&cg_op_reshape, 1, &in, &at, 1, "copies dim 3 (0) but x [2, 3, 4] has 3 dims");
    /* a dim name (symbol 0) as the verifier hands it: the output has it */
    th_set_ints(&at, &cg_op_reshape, "shape", 3, (int64_t[]){CG_DIM_SYM(0), 0, 4});
    {
        th_tensor o;
        ck_assert_int_eq(th_infer(&cg_op_reshape, 1, &in, &at, 1, &o, g_err, sizeof g_err), CG_OP_OK);
        ck_assert_int_eq(o.desc.ndim, 3);
        ck_assert(o.desc.dims[0] == CG_DIM_SYM(0) && o.desc.dims[1] == 3 && o.desc.dims[2] == 4);
    }
    th_set_ints(&at, &cg_op_reshape, "shape", 3, (int64_t[]){INT64_MAX, INT64_MAX, 2});
    expect_infer_fail(&cg_op_reshape, 1, &in, &at, 1, "too large");
    th_attrs none;
    th_attrs_init(&none, &cg_op_reshape);
    expect_infer_fail(&cg_op_reshape, 1, &in, &none, 1, "attribute shape is required");
}
END_TEST

static void transpose_check(const shp *xs, const int64_t *perm, int dt) {
    char sx[64], what[128];
    int64_t n = shp_numel(xs);
    void *x = dt ? (void *)irand(n, -1000, 1000) : (void *)frand(n, -1, 1);
    th_attrs at;
    th_attrs_init(&at, &cg_op_transpose);
    th_set_ints(&at, &cg_op_transpose, "perm", xs->nd, perm);
    th_tensor in = dt ? ti(x, xs) : tf(x, xs), out;
    shp os = *xs;
    int64_t np[CG_MAX_DIMS]; /* perm with negative entries normalised */
    for (int i = 0; i < xs->nd; i++) np[i] = perm[i] < 0 ? perm[i] + xs->nd : perm[i];
    for (int i = 0; i < xs->nd; i++) os.d[i] = xs->d[np[i]];
    snprintf(what, sizeof what, "transpose %s perm[0]=%lld", fmt_shp(sx, sizeof sx, xs),
             (long long)(xs->nd ? perm[0] : -1));
    run_ok(&cg_op_transpose, 1, &in, &at, 1, &out);
    assert_desc(what, &out, dt ? CG_OP_I32 : CG_OP_F32, &os);
    int64_t oidx[CG_MAX_DIMS], iidx[CG_MAX_DIMS];
    for (int64_t f = 0; f < n; f++) {
        unravel(f, &os, oidx);
        for (int i = 0; i < xs->nd; i++) iidx[np[i]] = oidx[i];
        if (((uint32_t *)out.data)[f] != ((uint32_t *)x)[ravel(iidx, xs)])
            ck_abort_msg("%s: element %lld differs", what, (long long)f);
    }
    th_free_outputs(1, &out);
    free(x);
}

START_TEST(test_transpose) {
    th_seed(17);
    shp x3 = {3, {2, 3, 4}};
    int64_t p3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int i = 0; i < 6; i++) transpose_check(&x3, p3[i], i % 2);
    shp x4 = {4, {2, 3, 4, 5}};
    int64_t p4[4][4] = {{3, 1, 0, 2}, {0, 2, 1, 3}, {1, 0, 3, 2}, {0, 1, 3, 2}};
    for (int i = 0; i < 4; i++) transpose_check(&x4, p4[i], 0);
    transpose_check(&(shp){2, {33, 65}}, (int64_t[]){1, 0}, 0);
    transpose_check(&(shp){2, {1, 17}}, (int64_t[]){1, 0}, 0);
    transpose_check(&(shp){3, {17, 1, 3}}, (int64_t[]){2, 0, 1}, 1);
    transpose_check(&(shp){8, {2, 1, 3, 2, 1, 2, 3, 2}}, (int64_t[]){7, 3, 0, 5, 1, 6, 2, 4}, 0);
    transpose_check(&(shp){2, {0, 3}}, (int64_t[]){1, 0}, 0);
    transpose_check(&(shp){0, {0}}, (int64_t[]){0}, 0); /* perm [] */
    transpose_check(&(shp){3, {3, 40, 37}}, (int64_t[]){0, 2, 1}, 0);
    transpose_check(&(shp){3, {40, 3, 37}}, (int64_t[]){2, 1, 0}, 1);
    transpose_check(&(shp){4, {2, 17, 3, 5}}, (int64_t[]){0, 2, 3, 1}, 0);
    transpose_check(&(shp){1, {17}}, (int64_t[]){0}, 0);
    transpose_check(&(shp){2, {3, 17}}, (int64_t[]){-1, -2}, 0);
    /* Errors and symbolic dims. */
    float f[64] = {0};
    th_tensor in = tf(f, &x3);
    th_attrs at;
    th_attrs_init(&at, &cg_op_transpose);
    th_set_ints(&at, &cg_op_transpose, "perm", 2, (int64_t[]){1, 0});
    expect_infer_fail(&cg_op_transpose, 1, &in, &at, 1, "perm [1, 0] has 2 entries but x [2, 3, 4] has 3 dims");
    th_set_ints(&at, &cg_op_transpose, "perm", 3, (int64_t[]){0, 1, 1});
    expect_infer_fail(&cg_op_transpose, 1, &in, &at, 1, "perm [0, 1, 1] is not a permutation");
    th_set_ints(&at, &cg_op_transpose, "perm", 3, (int64_t[]){0, 1, 3});
    expect_infer_fail(&cg_op_transpose, 1, &in, &at, 1, "is not a permutation of x's 3 dims");
    th_attrs none;
    th_attrs_init(&none, &cg_op_transpose);
    expect_infer_fail(&cg_op_transpose, 1, &in, &none, 1, "attribute perm is required");
    shp sx = {3, {S0, S1, 4}}, so = {3, {4, S0, S1}};
    th_set_ints(&at, &cg_op_transpose, "perm", 3, (int64_t[]){2, 0, 1});
    th_tensor sin = tf(f, &sx);
    expect_infer(&cg_op_transpose, 1, &sin, &at, 0, CG_OP_F32, &so);
}
END_TEST

/* ------------------------------------------------------------------ */
/* gather.c                                                            */

START_TEST(test_embedding) {
    th_seed(18);
    shp ws = {2, {7, 5}};
    float *w = frand(35, -1, 1);
    const shp id_shapes[] = {{2, {3, 4}}, {1, {17}}, {0, {0}}, {2, {0, 3}}, {1, {1}}};
    for (size_t s = 0; s < sizeof id_shapes / sizeof id_shapes[0]; s++) {
        const shp *is = &id_shapes[s];
        int64_t n = shp_numel(is);
        int32_t *ids = irand(n, 0, 6);
        th_tensor in[2] = {tf(w, &ws), ti(ids, is)}, out;
        run_ok(&cg_op_embedding, 2, in, NULL, 1, &out);
        shp os = *is;
        os.d[os.nd++] = 5;
        assert_desc("embedding", &out, CG_OP_F32, &os);
        for (int64_t i = 0; i < n; i++)
            for (int e = 0; e < 5; e++) ck_assert(((float *)out.data)[i * 5 + e] == w[ids[i] * 5 + e]);
        th_free_outputs(1, &out);
        free(ids);
    }
    int32_t bad[2] = {0, 7};
    shp s2 = {1, {2}};
    th_tensor e1[2] = {tf(w, &ws), ti(bad, &s2)};
    expect_kernel_fail(&cg_op_embedding, 2, e1, NULL, 1, "input 1 (ids) holds 7 at position 1, outside [0, 6]");
    bad[1] = -1;
    expect_kernel_fail(&cg_op_embedding, 2, e1, NULL, 1, "input 1 (ids) holds -1 at position 1, outside [0, 6]");
    th_tensor e2[2] = {tf(w, &ws), tf(w, &s2)};
    expect_infer_fail(&cg_op_embedding, 2, e2, NULL, 1, "input 1 (ids) must be i32");
    th_tensor e3[2] = {tf(w, &s2), ti(bad, &s2)};
    expect_infer_fail(&cg_op_embedding, 2, e3, NULL, 1, "input 0 must have 2 dims");
    shp sids = {2, {S0, S1}}, so = {3, {S0, S1, 5}};
    th_tensor e4[2] = {tf(w, &ws), ti(bad, &sids)};
    expect_infer(&cg_op_embedding, 2, e4, NULL, 0, CG_OP_F32, &so);
    free(w);
}
END_TEST

/* An int8 table with row scales: each row looked up reads as scale[k] *
 * weight[k] (the loader's dequantization, one product per element); a
 * scale vector of the wrong length is refused. */
START_TEST(test_embedding_q8) {
    th_seed(21);
    int8_t w[7 * 5];
    for (int i = 0; i < 35; i++) w[i] = (int8_t)((i * 37) % 255 - 127);
    float *scale = frand(7, 0.001f, 0.05f);
    int32_t ids[4] = {6, 0, 3, 6};
    shp is = {2, {2, 2}}, ss = {1, {7}};
    th_tensor in[3] = {{.desc = {.dtype = CG_I8, .ndim = 2, .dims = {7, 5}}, .data = w}, ti(ids, &is), tf(scale, &ss)},
              out;
    run_ok(&cg_op_embedding, 3, in, NULL, 1, &out);
    assert_desc("embedding q8", &out, CG_OP_F32, &(shp){3, {2, 2, 5}});
    for (int i = 0; i < 4; i++)
        for (int c = 0; c < 5; c++) {
            const float want = scale[ids[i]] * (float)w[ids[i] * 5 + c];
            ck_assert_msg(((const float *)out.data)[i * 5 + c] == want, "id %d column %d", i, c);
        }
    th_free_outputs(1, &out);
    shp s6 = {1, {6}};
    th_tensor bad[3] = {in[0], in[1], tf(scale, &s6)};
    expect_infer_fail(&cg_op_embedding, 3, bad, NULL, 1, "one scale per row");
    th_tensor f32w[3] = {tf(scale, &(shp){2, {7, 1}}), in[1], in[2]};
    expect_infer_fail(&cg_op_embedding, 3, f32w, NULL, 1, "input 0");
    free(scale);
}
END_TEST

START_TEST(test_gather_rows) {
    th_seed(19);
    const shp xshapes[] = {{3, {5, 3, 2}}, {1, {17}}, {2, {1, 3}}, {2, {4, 0}}};
    for (int dt = 0; dt < 2; dt++) {
        for (size_t s = 0; s < sizeof xshapes / sizeof xshapes[0]; s++) {
            const shp *xs = &xshapes[s];
            int64_t n = shp_numel(xs), row = xs->d[0] ? n / xs->d[0] : 0;
            void *x = dt ? (void *)irand(n, -9, 9) : (void *)frand(n, -1, 1);
            for (int64_t m = 0; m < 4; m++) {
                int32_t *idx = irand(m, 0, (int32_t)xs->d[0] - 1);
                shp is = {1, {m}};
                th_tensor in[2] = {dt ? ti(x, xs) : tf(x, xs), ti(idx, &is)}, out;
                run_ok(&cg_op_gather_rows, 2, in, NULL, 1, &out);
                shp os = *xs;
                os.d[0] = m;
                assert_desc("gather_rows", &out, dt ? CG_OP_I32 : CG_OP_F32, &os);
                for (int64_t i = 0; i < m; i++)
                    ck_assert(memcmp((uint32_t *)out.data + i * row, (uint32_t *)x + idx[i] * row, (size_t)row * 4) ==
                              0);
                th_free_outputs(1, &out);
                free(idx);
            }
            free(x);
        }
    }
    float f[10] = {0};
    int32_t bad[2] = {1, 5};
    shp xs = {2, {5, 2}}, is = {1, {2}}, i2 = {2, {1, 2}};
    th_tensor e1[2] = {tf(f, &xs), ti(bad, &is)};
    expect_kernel_fail(&cg_op_gather_rows, 2, e1, NULL, 1, "input 1 (index) holds 5 at position 1, outside [0, 4]");
    th_tensor e2[2] = {tf(f, &xs), ti(bad, &i2)};
    expect_infer_fail(&cg_op_gather_rows, 2, e2, NULL, 1, "input 1 must have 1 dims");
    shp sc = {0, {0}};
    th_tensor e3[2] = {tf(f, &sc), ti(bad, &is)};
    expect_infer_fail(&cg_op_gather_rows, 2, e3, NULL, 1, "at least 1 dim");
}
END_TEST

/* gather_concat against its definition element by element: out[i] at
 * (j.., k, l..) is x[idx[i]] there for k below x's axis dim, else y[i] at
 * k minus it. */
START_TEST(test_gather_concat) {
    th_seed(23);
    static const struct {
        shp x, y;
        int axis;
    } cases[] = {
        {{4, {3, 5, 2, 4}}, {4, {6, 1, 2, 4}}, 1},
        {{4, {4, 0, 2, 3}}, {4, {4, 1, 2, 3}}, 1},
        {{3, {2, 3, 5}}, {3, {5, 3, 2}}, 2},
        {{3, {7, 2, 1}}, {3, {3, 2, 4}}, -1},
        {{2, {5, 17}}, {2, {0, 3}}, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const shp *xs = &cases[c].x, *ys = &cases[c].y;
        const int axis = cases[c].axis < 0 ? cases[c].axis + xs->nd : cases[c].axis;
        float *x = frand(shp_numel(xs), -1, 1), *y = frand(shp_numel(ys), -1, 1);
        int32_t *idx = irand(ys->d[0], 0, (int32_t)xs->d[0] - 1);
        shp is = {1, {ys->d[0]}}, os = *ys;
        os.d[axis] += xs->d[axis];
        th_tensor in[3] = {tf(x, xs), ti(idx, &is), tf(y, ys)}, out;
        th_attrs at;
        th_attrs_init(&at, &cg_op_gather_concat);
        th_set_int(&at, &cg_op_gather_concat, "axis", cases[c].axis);
        run_ok(&cg_op_gather_concat, 3, in, &at, 1, &out);
        assert_desc("gather_concat", &out, CG_OP_F32, &os);
        int64_t ix[CG_MAX_DIMS] = {0};
        for (int64_t f = 0; f < shp_numel(&os); f++) {
            unravel(f, &os, ix);
            float want;
            if (ix[axis] < xs->d[axis]) {
                ix[0] = idx[ix[0]];
                want = x[ravel(ix, xs)];
            } else {
                ix[axis] -= xs->d[axis];
                want = y[ravel(ix, ys)];
            }
            ck_assert_msg(((const float *)out.data)[f] == want, "case %zu element %lld", c, (long long)f);
        }
        th_free_outputs(1, &out);
        free(x);
        free(y);
        free(idx);
    }
    float f[24] = {0};
    int32_t bad[2] = {1, 5};
    shp xs = {3, {5, 2, 2}}, is = {1, {2}}, ys = {3, {2, 1, 2}}, yb = {3, {2, 1, 3}}, y3 = {3, {3, 1, 2}};
    th_attrs at;
    th_attrs_init(&at, &cg_op_gather_concat);
    th_set_int(&at, &cg_op_gather_concat, "axis", 1);
    th_tensor e1[3] = {tf(f, &xs), ti(bad, &is), tf(f, &ys)};
    expect_kernel_fail(&cg_op_gather_concat, 3, e1, &at, 1, "input 1 (index) holds 5 at position 1, outside [0, 4]");
    th_tensor e2[3] = {tf(f, &xs), ti(bad, &is), tf(f, &yb)};
    expect_infer_fail(&cg_op_gather_concat, 3, e2, &at, 1, "incompatible with input 0 [5, 2, 2] at dim 2");
    th_tensor e3[3] = {tf(f, &xs), ti(bad, &is), tf(f, &y3)};
    expect_infer_fail(&cg_op_gather_concat, 3, e3, &at, 1, "different number of rows");
    th_set_int(&at, &cg_op_gather_concat, "axis", 0);
    th_tensor e4[3] = {tf(f, &xs), ti(bad, &is), tf(f, &ys)};
    expect_infer_fail(&cg_op_gather_concat, 3, e4, &at, 1, "after the first");
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *ops_suite(void) {
    Suite *s = suite_create("ops_basic");
    TCase *tc;
    tc = tcase_create("defs");
    tcase_add_test(tc, test_defs);
    tcase_add_test(tc, test_layer_norm);
    suite_add_tcase(s, tc);
    tc = tcase_create("elementwise");
    tcase_add_test(tc, test_binary_f32);
    tcase_add_test(tc, test_binary_i32);
    tcase_add_test(tc, test_binary_special);
    tcase_add_test(tc, test_binary_errors);
    tcase_add_test(tc, test_unary);
    tcase_add_test(tc, test_unary_special);
    tcase_add_test(tc, test_affine);
    tcase_add_test(tc, test_cast);
    suite_add_tcase(s, tc);
    tc = tcase_create("matmul");
    tcase_add_test(tc, test_matmul);
    tcase_add_test(tc, test_matmul_errors);
    tcase_add_test(tc, test_linear);
    tcase_add_test(tc, test_linear_decompose);
    suite_add_tcase(s, tc);
    tc = tcase_create("softmax");
    tcase_add_test(tc, test_softmax);
    tcase_add_test(tc, test_softmax_special);
    tcase_add_test(tc, test_length_mask);
    suite_add_tcase(s, tc);
    tc = tcase_create("reduce");
    tcase_add_test(tc, test_reduce);
    tcase_add_test(tc, test_reduce_special);
    tcase_add_test(tc, test_argmax);
    tcase_add_test(tc, test_topk);
    suite_add_tcase(s, tc);
    tc = tcase_create("shape");
    tcase_add_test(tc, test_concat);
    tcase_add_test(tc, test_slice);
    tcase_add_test(tc, test_reshape);
    tcase_add_test(tc, test_transpose);
    suite_add_tcase(s, tc);
    tc = tcase_create("gather");
    tcase_add_test(tc, test_embedding);
    tcase_add_test(tc, test_embedding_q8);
    tcase_add_test(tc, test_gather_rows);
    tcase_add_test(tc, test_gather_concat);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(ops_suite(), 0); }
