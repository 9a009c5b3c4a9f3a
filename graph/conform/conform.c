/* Conformance harness: each op's declared cases run on a device and on the
 * CPU (the reference) with the same random inputs, and the outputs are
 * compared with the op's tolerances. Kernels are called directly, through
 * the backend interface's one "allocate, fill, run, read back"
 * (cg_dev_run_host), as ggml's test-backend-ops does, so a failure points
 * at one kernel. Outputs are poisoned and guarded so a kernel that skips an
 * element or writes past its output fails even when both kernels share
 * the bug. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "backend.h"
#include "decomp_ref.h"
#include "dtype.h"
#include "narrow.h"
#include "error.h"
#include "hash.h"
#include "ir.h"
#include "shape.h"
#include "strbuf.h"

#define QUICK_LIMIT 4096
/* Guard bytes each side of every output, and the two fills that tell an
 * element a kernel never wrote: all bits set (NaN for f32) and, only where
 * an element still holds that after the run, 0x5A in a second run. */
#define GUARD 4096
#define FILL_A 0xFF
#define FILL_B 0x5A
/* Cases an op may declare: enough for any sweep, and a stop for a
 * conform_case callback that never returns 0. */
#define MAX_CASES 10000

/* ---- random data ---- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r) {
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

/* The part of [lo, hi] a dtype can hold (integers: whole values). */
static void dtype_span(cg_dtype t, double *lo, double *hi) {
    double a, b;
    switch (t) {
    case CG_I8: a = -128, b = 127; break;
    case CG_U8: a = 0, b = 255; break;
    case CG_BOOL: a = 0, b = 1; break;
    case CG_I32: a = -2147483648.0, b = 2147483647.0; break;
    case CG_I64: a = -9007199254740992.0, b = 9007199254740992.0; break; /* exact in a double */
    case CG_I16: a = -32768, b = 32767; break;
    case CG_U16: a = 0, b = 65535; break;
    case CG_U32: a = 0, b = 4294967295.0; break;
    case CG_U64: a = 0, b = 18446744073709549568.0; break; /* the last double below 2^64 */
    case CG_I4: a = -8, b = 7; break;
    case CG_U4: a = 0, b = 15; break;
    case CG_I2: a = -2, b = 1; break;
    case CG_U2: a = 0, b = 3; break;
    default: return;
    }
    *lo = ceil(*lo < a ? a : *lo);
    *hi = floor(*hi > b ? b : *hi);
}

/* Uniform values in [lo, hi] of any dtype: whole numbers for the integer
 * types and bool (0 or 1), floats rounded to the nearest f16 or bf16 for
 * those. 0 when [lo, hi] holds no value of the dtype. */
static int fill(rng *r, const cg_tensor_desc *d, double lo, double hi, void *data) {
    cg_dtype t = (cg_dtype)d->dtype;
    int is_float = t == CG_F32 || t == CG_F16 || t == CG_BF16;
    dtype_span(t, &lo, &hi);
    if (!(lo <= hi)) return 0;
    int64_t n = cg_shape_numel(d->ndim, d->dims);
    for (int64_t i = 0; i < n; i++) {
        double u = (double)(next(r) >> 11) * (1.0 / 9007199254740992.0);
        if (cg_dtype_is_narrow_float(t)) { /* drawn as an f32, rounded into the type */
            ((uint8_t *)data)[i] = cg_f32_to_narrow(t, (float)(lo + (hi - lo) * u), 1, CG_E8M0_NEAREST);
            continue;
        }
        if (is_float) {
            float f = (float)(lo + (hi - lo) * u);
            uint32_t bits;
            memcpy(&bits, &f, 4);
            if (t == CG_F32) ((float *)data)[i] = f;
            else ((uint16_t *)data)[i] = t == CG_F16 ? cg_f32_to_f16_bits(bits) : cg_f32_to_bf16_bits(bits);
            continue;
        }
        if (t == CG_U64) { /* past int64's range: in unsigned arithmetic */
            uint64_t w = (uint64_t)lo + (uint64_t)(u * (hi - lo));
            ((uint64_t *)data)[i] = w > (uint64_t)hi ? (uint64_t)hi : w;
            continue;
        }
        int64_t v = (int64_t)lo + (int64_t)(u * (hi - lo + 1));
        if (v > (int64_t)hi) v = (int64_t)hi;
        switch (t) {
        case CG_I32: ((int32_t *)data)[i] = (int32_t)v; break;
        case CG_U32: ((uint32_t *)data)[i] = (uint32_t)v; break;
        case CG_I64: ((int64_t *)data)[i] = v; break;
        case CG_I16: ((int16_t *)data)[i] = (int16_t)v; break;
        case CG_U16: ((uint16_t *)data)[i] = (uint16_t)v; break;
        case CG_I8: ((int8_t *)data)[i] = (int8_t)v; break;
        default: ((uint8_t *)data)[i] = (uint8_t)v; break; /* U8, BOOL */
        }
    }
    return 1;
}

/* Element i of a f16 or bf16 buffer as a float. */
static double half_value(cg_dtype t, const void *p, int64_t i) {
    uint16_t h = ((const uint16_t *)p)[i];
    uint32_t bits = t == CG_F16 ? cg_f16_to_f32_bits(h) : cg_bf16_to_f32_bits(h);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Element i of a floating-point output (f32, f16, bf16) as a double. */
static double float_value(cg_dtype t, const void *p, int64_t i) {
    return t == CG_F32 ? ((const float *)p)[i] : half_value(t, p, i);
}

static int is_float_type(cg_dtype t) { return t == CG_F32 || t == CG_F16 || t == CG_BF16; }

/* ---- guarded host buffers: GUARD bytes of the allocation each side ---- */

static void *guarded_alloc(size_t bytes) {
    char *p = malloc(bytes + 2 * (size_t)GUARD);
    return p ? p + GUARD : NULL;
}

static void guarded_free(void *p) {
    if (p) free((char *)p - GUARD);
}

/* ---- one case ---- */

typedef struct case_state {
    cg_conform_case c;
    cg_node node;         /* holds the parsed attribute text */
    cg_attr_value *attrs; /* one per declared attribute */
    cg_tensor_desc *out;  /* c.n_outputs */
    void *host_in[CG_CONFORM_MAX_INPUTS];
    void **ref_out, **dev_out;
    int big; /* a tensor past the quick limit */
} case_state;

static void case_free(case_state *cs) {
    if (!cs) return;
    for (int i = 0; i < CG_CONFORM_MAX_INPUTS; i++) guarded_free(cs->host_in[i]);
    for (int i = 0; i < cs->c.n_outputs && cs->ref_out; i++) guarded_free(cs->ref_out[i]);
    for (int i = 0; i < cs->c.n_outputs && cs->dev_out; i++) guarded_free(cs->dev_out[i]);
    free(cs->ref_out);
    free(cs->dev_out);
    free(cs->out);
    free(cs->attrs);
    for (int i = 0; i < cs->node.n_attrs; i++) cg_attr_clear(&cs->node.attrs[i]);
    free(cs->node.attrs);
    free(cs);
}

static int case_valid(case_state *cs) {
    if (cs->c.n_inputs < 0 || cs->c.n_inputs > CG_CONFORM_MAX_INPUTS || cs->c.n_outputs < 1) return 0;
    for (int i = 0; i < cs->c.n_inputs; i++) {
        int64_t n = cg_shape_numel(cs->c.inputs[i].ndim, cs->c.inputs[i].dims);
        if (n < 0 || !cg_dtype_valid(cs->c.inputs[i].dtype)) return 0;
        cs->big |= n > QUICK_LIMIT;
    }
    return 1;
}

/* Case ci of op, with its attributes resolved and outputs inferred. *cs
 * is NULL past the last case; a message in msg when the case is bad. */
static int case_get(const cg_op_entry *op, int32_t ci, case_state **out, char *msg, size_t msz) {
    *out = NULL;
    case_state *cs = calloc(1, sizeof *cs);
    if (!cs) return snprintf(msg, msz, "out of memory"), 0;
    cs->c.struct_size = sizeof cs->c;
    if (!op->def->conform_case(ci, &cs->c)) {
        free(cs);
        return 1;
    }
    *out = cs;
    if (!case_valid(cs)) return snprintf(msg, msz, "case %d: the op declares an invalid case", ci), 0;
    cs->attrs = calloc((size_t)op->def->n_attrs + 1, sizeof *cs->attrs);
    cs->out = calloc((size_t)cs->c.n_outputs, sizeof *cs->out);
    cs->ref_out = calloc((size_t)cs->c.n_outputs, sizeof *cs->ref_out);
    cs->dev_out = calloc((size_t)cs->c.n_outputs, sizeof *cs->dev_out);
    if (!cs->attrs || !cs->out || !cs->ref_out || !cs->dev_out) return snprintf(msg, msz, "out of memory"), 0;
    cg_model dummy;
    memset(&dummy, 0, sizeof dummy);
    dummy.filename = "<conform>";
    cs->node.name = (char *)op->def->name;
    cs->node.op = (char *)op->def->name;
    cg_status st = cs->c.attrs && *cs->c.attrs ? cg_parse_attr_list(cs->c.attrs, &cs->node) : CG_OK;
    if (!st) st = cg_node_resolve_attrs(&dummy, &cs->node, op->def, cs->attrs);
    if (!st)
        st = cg_call_infer(&dummy, op->def->name, 0, 0, op, cs->attrs, cs->c.n_inputs, cs->c.inputs, cs->c.n_outputs,
                           cs->out, 1);
    cs->node.name = cs->node.op = NULL;
    for (int i = 0; !st && i < cs->c.n_outputs; i++)
        cs->big |= cg_shape_numel(cs->out[i].ndim, cs->out[i].dims) > QUICK_LIMIT;
    if (st) return snprintf(msg, msz, "case %d: %s", ci, cg_last_error()), 0;
    return 1;
}

/* Random inputs of case ci, the same for every device. */
static int case_inputs(case_state *cs, const cg_op_entry *op, const cg_conform_options *opt, int32_t ci, char *msg,
                       size_t msz) {
    rng r = {(opt->seed ? opt->seed : 0x5eed) ^ cg_fnv1a_str(CG_FNV_BASIS, op->def->name) ^
             ((uint64_t)ci * 0x9e3779b97f4a7c15ull)};
    if (!r.s) r.s = 1;
    for (int i = 0; i < cs->c.n_inputs; i++) {
        size_t bytes = cg_desc_bytes(&cs->c.inputs[i]);
        cs->host_in[i] = guarded_alloc(bytes);
        if (!cs->host_in[i]) return snprintf(msg, msz, "out of memory"), 0;
        /* a CPU kernel reading past an input reads NaN (OpenCL devices get
         * the same sides from cg_dev_run_host_guarded) */
        memset((char *)cs->host_in[i] - GUARD, CG_GUARD_IN_BYTE, GUARD);
        memset((char *)cs->host_in[i] + bytes, CG_GUARD_IN_BYTE, GUARD);
        if (!fill(&r, &cs->c.inputs[i], cs->c.lo[i], cs->c.hi[i], cs->host_in[i]))
            return snprintf(msg, msz, "input %d: [lo, hi] = [%g, %g] holds no %s value", i, cs->c.lo[i], cs->c.hi[i],
                            cg_dtype_name((cg_dtype)cs->c.inputs[i].dtype)),
                   0;
    }
    return 1;
}

/* One run of kernel k on d into outs (guarded, allocated by the caller),
 * the outputs starting as byte `fill`. A write into the guard bytes is
 * described in msg and returns CG_ERR_KERNEL with *guarded set. */
static cg_status run_once(const cg_op_entry *op, case_state *cs, cg_device *d, const cg_kernel_def *k, void **outs,
                          int fill, char *err, size_t esz, char *msg, size_t msz, int *guarded) {
    cg_op_call call =
        cg_host_call(op->def->name, cs->c.n_inputs, cs->c.inputs, cs->c.n_outputs, cs->out, cs->attrs, err, esz);
    cg_trial_guard g = {.bytes = GUARD};
    cg_status st = cg_dev_run_host_guarded(d, k, &call, (const void *const *)cs->host_in, outs, fill, 0, NULL, &g);
    *guarded = g.bad_output >= 0;
    if (*guarded) {
        char sh[96];
        const cg_tensor_desc *o = &cs->out[g.bad_output];
        cg_shape_format(sh, sizeof sh, o->dtype, o->ndim, o->dims, NULL, 0);
        snprintf(msg, msz, "%s kernel wrote %s output %d (%s, the shape infer gave)", cg_dev_info(d)->name,
                 g.bad_side < 0 ? "before the start of" : "past the end of", g.bad_output, sh);
        return CG_ERR_KERNEL;
    }
    return st;
}

/* 1 when element i of an output of element size es holds byte fill throughout. */
static int holds(const void *out, int64_t i, size_t es, int fill) {
    const unsigned char *p = (const unsigned char *)out + (size_t)i * es;
    for (size_t b = 0; b < es; b++)
        if (p[b] != (unsigned char)fill) return 0;
    return 1;
}

/* After a run with FILL_A, a second run with FILL_B: an element that still
 * holds its fill both times was never written, and every other element
 * must be bit-identical in both runs (a kernel reading memory it never
 * wrote, or racing with itself, gives another answer on another run). The
 * second run is made for every case within the quick size limit, and for
 * larger ones only when some element still holds FILL_A. 0 with the first
 * element that is wrong. */
static int all_written(const cg_op_entry *op, case_state *cs, cg_device *d, const cg_kernel_def *k, void **outs,
                       char *msg, size_t msz) {
    int suspect = !cs->big;
    for (int o = 0; o < cs->c.n_outputs && !suspect; o++) {
        size_t es = cg_dtype_size((cg_dtype)cs->out[o].dtype);
        int64_t n = cg_shape_numel(cs->out[o].ndim, cs->out[o].dims);
        for (int64_t i = 0; i < n && !suspect; i++) suspect = holds(outs[o], i, es, FILL_A);
    }
    if (!suspect) return 1;
    void **again = calloc((size_t)cs->c.n_outputs, sizeof *again);
    int ok = again != NULL, guarded = 0;
    for (int o = 0; ok && o < cs->c.n_outputs; o++)
        ok = (again[o] = guarded_alloc(cg_desc_bytes(&cs->out[o]) + 4)) != NULL;
    char err[1024] = "";
    if (!ok) snprintf(msg, msz, "out of memory");
    else if (run_once(op, cs, d, k, again, FILL_B, err, sizeof err, msg, msz, &guarded)) {
        if (!guarded)
            snprintf(msg, msz, "%s kernel failed on its second run: %s", cg_dev_info(d)->name,
                     err[0] ? err : cg_last_error());
        ok = 0;
    }
    for (int o = 0; ok && o < cs->c.n_outputs; o++) {
        size_t es = cg_dtype_size((cg_dtype)cs->out[o].dtype);
        int64_t n = cg_shape_numel(cs->out[o].ndim, cs->out[o].dims);
        char sh[96];
        cg_shape_format(sh, sizeof sh, cs->out[o].dtype, cs->out[o].ndim, cs->out[o].dims, NULL, 0);
        for (int64_t i = 0; i < n && ok; i++) {
            int a_fill = holds(outs[o], i, es, FILL_A), b_fill = holds(again[o], i, es, FILL_B);
            if (a_fill && b_fill) {
                snprintf(msg, msz, "%s kernel never wrote output %d element %lld (of %s, the shape infer gave)",
                         cg_dev_info(d)->name, o, (long long)i, sh);
                ok = 0;
            } else if (!a_fill && !b_fill &&
                       memcmp((char *)outs[o] + (size_t)i * es, (char *)again[o] + (size_t)i * es, es)) {
                snprintf(msg, msz, "%s kernel gave output %d element %lld (of %s) other bits on its second run",
                         cg_dev_info(d)->name, o, (long long)i, sh);
                ok = 0;
            }
        }
    }
    for (int o = 0; again && o < cs->c.n_outputs; o++) guarded_free(again[o]);
    free(again);
    return ok;
}

/* Runs kernel k of the case on device d into outs (allocated here). A
 * valid case must run and write every element of its outputs and nothing
 * around them; an error case (expect_error) must fail the node with a
 * message, as the CPU kernel does, and give no result. */
static int run_kernel(const cg_op_entry *op, case_state *cs, cg_device *d, const cg_kernel_def *k, void **outs,
                      const cg_conform_options *opt, void *user, const char *what, char *msg, size_t msz) {
    char err[1024] = "";
    for (int i = 0; i < cs->c.n_outputs; i++)
        if (!(outs[i] = guarded_alloc(cg_desc_bytes(&cs->out[i]) + 4))) return snprintf(msg, msz, "out of memory"), 0;
    const char *dev = cg_dev_info(d)->name;
    if (opt->starting) {
        char where[700];
        snprintf(where, sizeof where, "%s on %s", what, dev);
        opt->starting(where, user);
    }
    int guarded = 0;
    cg_status st = run_once(op, cs, d, k, outs, FILL_A, err, sizeof err, msg, msz, &guarded);
    if (guarded) return 0;
    if (cs->c.expect_error && st == CG_ERR_KERNEL)
        return err[0] ? 1 : (snprintf(msg, msz, "%s kernel failed without a message", dev), 0);
    if (st == CG_ERR_KERNEL) return snprintf(msg, msz, "%s kernel failed: %s", dev, err[0] ? err : "(no message)"), 0;
    if (st) return snprintf(msg, msz, "%s", cg_last_error()), 0;
    if (cs->c.expect_error)
        return snprintf(msg, msz, "%s kernel gave a result for invalid input instead of an error", dev), 0;
    return all_written(op, cs, d, k, outs, msg, msz);
}

/* Where outputs x and y first differ beyond the case's tolerance (y the
 * reference of the relative part): 1 with *oo, *ii set, 0 when they agree.
 * *max_abs (may be NULL) grows to the largest f32 difference seen. */
static int first_diff(const case_state *cs, void *const *x, void *const *y, double *max_abs, int *oo, int64_t *ii) {
    double atol = cs->c.atol > 0 ? cs->c.atol : 1e-4, rtol = cs->c.rtol > 0 ? cs->c.rtol : 1e-4;
    for (int o = 0; o < cs->c.n_outputs; o++) {
        int64_t n = cg_shape_numel(cs->out[o].ndim, cs->out[o].dims);
        *oo = o;
        cg_dtype t = (cg_dtype)cs->out[o].dtype;
        if (!is_float_type(t)) {
            size_t es = cg_dtype_size((cg_dtype)cs->out[o].dtype);
            for (int64_t i = 0; i < n; i++)
                if (memcmp((char *)x[o] + (size_t)i * es, (char *)y[o] + (size_t)i * es, es)) return *ii = i, 1;
            continue;
        }
        for (int64_t i = 0; i < n; i++) {
            double a = float_value(t, x[o], i), b = float_value(t, y[o], i);
            if (isnan(a) && isnan(b)) continue;
            if (isinf(a) || isinf(b)) {
                if (a == b) continue;
            } else {
                double d = fabs(a - b);
                if (max_abs && d > *max_abs) *max_abs = d;
                if (d <= atol + rtol * fabs(b)) continue;
            }
            if (max_abs && isnan(a) != isnan(b)) *max_abs = INFINITY;
            return *ii = i, 1;
        }
    }
    return 0;
}

/* Element i of output o of v as text. */
static void elem_text(const case_state *cs, void *const *v, int o, int64_t i, char *b, size_t n) {
    switch ((cg_dtype)cs->out[o].dtype) {
    case CG_F32: snprintf(b, n, "%.9g", (double)((const float *)v[o])[i]); break;
    case CG_I32: snprintf(b, n, "%d", ((const int32_t *)v[o])[i]); break;
    case CG_I64: snprintf(b, n, "%lld", (long long)((const int64_t *)v[o])[i]); break;
    case CG_I8: snprintf(b, n, "%d", ((const int8_t *)v[o])[i]); break;
    case CG_U8: snprintf(b, n, "%u", ((const uint8_t *)v[o])[i]); break;
    case CG_I16: snprintf(b, n, "%d", ((const int16_t *)v[o])[i]); break;
    case CG_U16: snprintf(b, n, "%u", ((const uint16_t *)v[o])[i]); break;
    case CG_U32: snprintf(b, n, "%lu", (unsigned long)((const uint32_t *)v[o])[i]); break;
    case CG_U64: snprintf(b, n, "%llu", (unsigned long long)((const uint64_t *)v[o])[i]); break;
    case CG_F16:
    case CG_BF16: snprintf(b, n, "%.5g", half_value((cg_dtype)cs->out[o].dtype, v[o], i)); break;
    case CG_F8E4M3FN:
    case CG_F8E4M3FNUZ:
    case CG_F8E5M2:
    case CG_F8E5M2FNUZ:
    case CG_F8E8M0:
    case CG_F4E2M1:
    case CG_I4:
    case CG_U4:
    case CG_I2:
    case CG_U2: {
        uint8_t c = ((const uint8_t *)v[o])[i];
        snprintf(b, n, "%.9g (0x%02x)", (double)cg_narrow_to_f32((cg_dtype)cs->out[o].dtype, c), c);
        break;
    }
    default: {
        size_t es = cg_dtype_size((cg_dtype)cs->out[o].dtype), u = 0;
        const unsigned char *p = (const unsigned char *)v[o] + (size_t)i * es;
        u += (size_t)snprintf(b, n, "0x");
        for (size_t k = es; k-- > 0 && u < n;) u += (size_t)snprintf(b + u, n - u, "%02x", p[k]);
    }
    }
}

/* Whether element i of output o of v is a NaN (f32). */
static int elem_nan(const case_state *cs, void *const *v, int o, int64_t i) {
    cg_dtype t = (cg_dtype)cs->out[o].dtype;
    return is_float_type(t) && isnan(float_value(t, v[o], i));
}

/* Inputs are finite and their sides NaN, so a NaN that only one side gives
 * is most likely a read past an input: said after the message. */
static void nan_hint(int off_is_nan, char *msg, size_t msz) {
    size_t n = strlen(msg);
    if (off_is_nan && n < msz)
        snprintf(msg + n, msz - n,
                 " (a NaN from finite inputs: the bytes around each input are NaN, so a read "
                 "past an input gives one)");
}

/* Compares the device's outputs with the CPU kernel's and, where the op has
 * one, with its decomposition `dec` (NULL: none); returns 0 and says which
 * side differs from the others at the first mismatch. */
static int compare(case_state *cs, void *const *dec, const char *dev, double *max_abs, char *msg, size_t msz) {
    int o, oc = 0, od = 0;
    int64_t i, ic = 0, id = 0;
    int cd = first_diff(cs, cs->dev_out, cs->ref_out, max_abs, &o, &i);
    int c_bad = dec && first_diff(cs, cs->ref_out, dec, NULL, &oc, &ic);
    int d_bad = dec && first_diff(cs, cs->dev_out, dec, NULL, &od, &id);
    if (!cd && !c_bad && !d_bad) return 1;
    char vd[64], vc[64], vr[64];
    if (cd && (!dec || (c_bad && d_bad))) { /* all differ, or nothing else to tell */
        elem_text(cs, cs->dev_out, o, i, vd, sizeof vd);
        elem_text(cs, cs->ref_out, o, i, vc, sizeof vc);
        int nan = elem_nan(cs, cs->dev_out, o, i) != elem_nan(cs, cs->ref_out, o, i);
        if (!dec) snprintf(msg, msz, "output %d element %lld: %s gives %s, cpu %s", o, (long long)i, dev, vd, vc);
        else {
            elem_text(cs, dec, o, i, vr, sizeof vr);
            snprintf(msg, msz, "output %d element %lld: %s gives %s, cpu %s, the decomposition %s: all three differ", o,
                     (long long)i, dev, vd, vc, vr);
        }
        nan_hint(nan, msg, msz);
        return 0;
    }
    if (c_bad && d_bad) {
        elem_text(cs, cs->ref_out, oc, ic, vc, sizeof vc);
        elem_text(cs, cs->dev_out, oc, ic, vd, sizeof vd);
        elem_text(cs, dec, oc, ic, vr, sizeof vr);
        snprintf(msg, msz,
                 "cpu and %s agree with each other but not with the decomposition: output %d element "
                 "%lld: cpu gives %s, %s %s, the decomposition %s",
                 dev, oc, (long long)ic, vc, dev, vd, vr);
        nan_hint(elem_nan(cs, cs->ref_out, oc, ic) && !elem_nan(cs, dec, oc, ic), msg, msz);
        return 0;
    }
    int ob = c_bad ? oc : d_bad ? od : o;
    int64_t ib = c_bad ? ic : d_bad ? id : i;
    elem_text(cs, cs->dev_out, ob, ib, vd, sizeof vd);
    elem_text(cs, cs->ref_out, ob, ib, vc, sizeof vc);
    elem_text(cs, dec, ob, ib, vr, sizeof vr);
    snprintf(msg, msz, "output %d element %lld: %s gives %s, cpu %s, the decomposition %s: %s", ob, (long long)ib, dev,
             vd, vc, vr,
             c_bad   ? "the cpu kernel differs from both"
             : d_bad ? "the device kernel differs from both"
                     : "both agree with the decomposition but not "
                       "with each other");
    nan_hint(c_bad ? elem_nan(cs, cs->ref_out, ob, ib) && !elem_nan(cs, dec, ob, ib)
                   : d_bad && elem_nan(cs, cs->dev_out, ob, ib) && !elem_nan(cs, dec, ob, ib),
             msg, msz);
    return 0;
}

/* "case 3 (f32[2, 3], i32[2]; axis: 1)" */
static void case_label(const case_state *cs, int32_t ci, char *msg, size_t msz) {
    char sh[256] = "";
    size_t u = 0;
    for (int i = 0; i < cs->c.n_inputs && u < sizeof sh; i++) {
        char one[96];
        cg_shape_format(one, sizeof one, cs->c.inputs[i].dtype, cs->c.inputs[i].ndim, cs->c.inputs[i].dims, NULL, 0);
        u += (size_t)snprintf(sh + u, sizeof sh - u, "%s%s", i ? ", " : "", one);
    }
    snprintf(msg, msz, "case %d (%s%s%s)", ci, sh, cs->c.attrs ? "; " : "", cs->c.attrs ? cs->c.attrs : "");
}

/* "case 3 (f32[2, 3], i32[2]; axis: 1): DETAIL" */
static void case_message(const case_state *cs, int32_t ci, const char *detail, char *msg, size_t msz) {
    char label[400];
    case_label(cs, ci, label, sizeof label);
    snprintf(msg, msz, "%s: %s", label, detail);
}

/* The devices a row compares: the reference (CPU) and the device tested. */
typedef struct pair {
    cg_device *ref, *dev;
    const cg_kernel_def *ref_k, *dev_k;
} pair;

/* Runs every case of op on the pair into row; 0 on the first failure
 * (its message in msg). */
/* Warm time of kernel k on d for the case, microseconds (-1 on failure). */
static double case_time(const cg_op_entry *op, case_state *cs, cg_device *d, const cg_kernel_def *k) {
    char err[256] = "";
    cg_op_call call =
        cg_host_call(op->def->name, cs->c.n_inputs, cs->c.inputs, cs->c.n_outputs, cs->out, cs->attrs, err, sizeof err);
    double us = -1;
    if (cg_dev_run_host(d, k, &call, (const void *const *)cs->host_in, NULL, 0, 50, &us)) return -1;
    return us;
}

/* A device taking 100x the CPU kernel's time is flagged, but only past
 * 1 ms: a launch alone costs an OpenCL device tens of microseconds, which
 * is 100x a tiny case on the CPU. */
#define SLOW_FACTOR 100.0
#define SLOW_FLOOR_US 1000.0

static void time_case(const cg_op_entry *op, case_state *cs, const pair *pr, const char *label, cg_strbuf *tb,
                      cg_conform_row *row) {
    double c = case_time(op, cs, pr->ref, pr->ref_k), g = case_time(op, cs, pr->dev, pr->dev_k);
    int slow = c >= 0 && g > SLOW_FACTOR * c && g > SLOW_FLOOR_US;
    row->slow_cases += slow;
    cg_strbuf_put(tb, "%s%s: cpu %.3g us, %s %.3g us%s", tb->n ? "\n" : "", label, c, cg_dev_info(pr->dev)->name, g,
                  slow ? " SLOW" : "");
}

/* The decomposition's outputs for the case (NULL when the op has none or
 * the case expects an error); 0 with a message when it fails. */
static int decomp_outputs(const cg_context *ctx, const cg_op_entry *op, case_state *cs, void ***dec, char *msg,
                          size_t msz) {
    *dec = NULL;
    if (!op->def->decompose || cs->c.expect_error) return 1;
    void **d = calloc((size_t)cs->c.n_outputs, sizeof *d);
    int ok = d != NULL;
    for (int o = 0; ok && o < cs->c.n_outputs; o++) ok = (d[o] = malloc(cg_desc_bytes(&cs->out[o]) + 4)) != NULL;
    if (!ok) snprintf(msg, msz, "out of memory");
    else if (cg_conform_decomp_run(ctx, op, &cs->c, cs->out, (const void *const *)cs->host_in, d, msg, msz)) ok = 0;
    if (ok) {
        *dec = d;
        return 1;
    }
    for (int o = 0; d && o < cs->c.n_outputs; o++) free(d[o]);
    free(d);
    return 0;
}

static void decomp_free(void **dec, int n) {
    for (int o = 0; dec && o < n; o++) free(dec[o]);
    free(dec);
}

/* Whether the device kernel takes case cs (its supports callback): a case
 * it declines runs as the op's decomposition there, as a plan would run it. */
static int dev_supports(const cg_op_entry *op, case_state *cs, const pair *pr) {
    char err[256] = "";
    cg_op_call call =
        cg_host_call(op->def->name, cs->c.n_inputs, cs->c.inputs, cs->c.n_outputs, cs->out, cs->attrs, err, sizeof err);
    return cg_dev_supports(pr->dev, pr->dev_k, &call);
}

/* The device side of a case its kernel declines: the decomposition's
 * outputs (0 with a message when the op has none). */
static int dev_from_decomposition(case_state *cs, void **dec, char *msg, size_t msz) {
    if (!dec) return snprintf(msg, msz, "the device kernel does not run this case and the op has no decomposition"), 0;
    for (int o = 0; o < cs->c.n_outputs; o++) {
        if (!(cs->dev_out[o] = guarded_alloc(cg_desc_bytes(&cs->out[o]) + 4)))
            return snprintf(msg, msz, "out of memory"), 0;
        memcpy(cs->dev_out[o], dec[o], cg_desc_bytes(&cs->out[o]));
    }
    return 1;
}

static int run_cases(const cg_context *ctx, const cg_op_entry *op, const pair *pr, const cg_conform_options *opt,
                     void *user, cg_conform_row *row, char *msg, size_t msz, char *shapes, size_t ssz, cg_strbuf *tb) {
    size_t su = 0;
    for (int32_t ci = 0; ci < MAX_CASES; ci++) {
        case_state *cs;
        int ok = case_get(op, ci, &cs, msg, msz);
        if (ok && !cs) return 1;
        if (ok && opt->quick && cs->big) {
            row->cases_skipped++;
            case_free(cs);
            continue;
        }
        char detail[900] = "", what[500];
        if (ok) {
            char label[400];
            case_label(cs, ci, label, sizeof label);
            snprintf(what, sizeof what, "op %s %s", op->def->name, label);
            void **dec = NULL;
            const int on_dev = dev_supports(op, cs, pr);
            ok = case_inputs(cs, op, opt, ci, detail, sizeof detail) &&
                 run_kernel(op, cs, pr->ref, pr->ref_k, cs->ref_out, opt, user, what, detail, sizeof detail) &&
                 decomp_outputs(ctx, op, cs, &dec, detail, sizeof detail) &&
                 (on_dev ? run_kernel(op, cs, pr->dev, pr->dev_k, cs->dev_out, opt, user, what, detail, sizeof detail)
                         : dev_from_decomposition(cs, dec, detail, sizeof detail)) &&
                 (cs->c.expect_error ||
                  compare(cs, dec, cg_dev_info(pr->dev)->name, &row->max_abs_error, detail, sizeof detail));
            decomp_free(dec, cs->c.n_outputs);
            if (ok && opt->timing && !cs->c.expect_error && on_dev) time_case(op, cs, pr, label, tb, row);
            if (!ok) case_message(cs, ci, detail, msg, msz);
            row->cases_run++;
            if (cs->c.n_inputs > 0 && su < ssz - 1) {
                char one[96];
                cg_shape_format(one, sizeof one, cs->c.inputs[0].dtype, cs->c.inputs[0].ndim, cs->c.inputs[0].dims,
                                NULL, 0);
                su += (size_t)snprintf(shapes + su, ssz - su, "%s%s", su ? " " : "", one);
            }
        }
        case_free(cs);
        if (!ok) return 0;
    }
    return 1;
}

static void run_op(const cg_context *ctx, const cg_op_entry *op, cg_device *ref, cg_device *dev,
                   const cg_conform_options *opt, cg_conform_fn fn, void *user, int *n_failed) {
    cg_conform_row row = {
        .op = op->def->name, .plugin = op->plugin->name, .device = cg_dev_info(dev)->name, .message = ""};
    char msg[1024] = "", shapes[1024] = "";
    row.shapes = shapes;
    row.timings = "";
    cg_strbuf tb = {0};
    pair pr = {ref, dev, cg_op_kernel(op, cg_dev_info(ref)->kind), cg_op_kernel(op, cg_dev_info(dev)->kind)};
    if (!op->def->conform_case) {
        row.result = CG_CONFORM_NO_CASES;
    } else if (!pr.dev_k) {
        row.result = CG_CONFORM_NO_KERNEL;
    } else if (!pr.ref_k) {
        row.result = CG_CONFORM_FAIL;
        row.message = "the op has no CPU kernel to compare with";
    } else {
        row.result = run_cases(ctx, op, &pr, opt, user, &row, msg, sizeof msg, shapes, sizeof shapes, &tb)
                         ? CG_CONFORM_PASS
                         : CG_CONFORM_FAIL;
        if (tb.s && !tb.failed) row.timings = tb.s;
        row.message = msg;
    }
    if (row.result == CG_CONFORM_FAIL) (*n_failed)++;
    fn(&row, user);
    free(tb.s);
}

/* Whether the options select op. */
static int selected(const cg_op_entry *op, const cg_conform_options *opt) {
    if (opt->plugin_only && !op->plugin->dl) return 0;
    if (!opt->op && !opt->n_ops) return 1;
    if (opt->op && !strcmp(op->def->name, opt->op)) return 1;
    for (int i = 0; i < opt->n_ops; i++)
        if (!strcmp(op->def->name, opt->ops[i])) return 1;
    return 0;
}

/* Every op the options select on one device against the reference. */
static cg_status conform_device(cg_context *ctx, int index, cg_device *ref, const cg_conform_options *opt,
                                cg_conform_fn fn, void *user, int *n_failed) {
    cg_device *dev;
    cg_status st = cg_dev_open(index, &dev);
    if (st) return st;
    for (int i = 0; i < ctx->n_ops; i++) {
        const cg_op_entry *op = ctx->ops[i];
        if (selected(op, opt)) run_op(ctx, op, ref, dev, opt, fn, user, n_failed);
    }
    cg_dev_release(dev);
    return CG_OK;
}

cg_status cg_conform(cg_context *ctx, const cg_conform_options *opt_in, cg_conform_fn fn, void *user, int *n_failed) {
    if (!ctx || !fn || !n_failed) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_conform: NULL argument");
    if (opt_in && opt_in->struct_size < offsetof(cg_conform_options, timing) + sizeof opt_in->timing)
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "cg_conform_options.struct_size is %zu; set it to sizeof(cg_conform_options)",
                        opt_in->struct_size);
    cg_conform_options opt;
    memset(&opt, 0, sizeof opt);
    if (opt_in) opt = *opt_in;
    *n_failed = 0;
    if (opt.op && !cg_registry_find(ctx, opt.op))
        return cg_error(CG_ERR_NOT_FOUND, "conform: no operator named '%s'", opt.op);
    if (opt.n_ops < 0 || (opt.n_ops && !opt.ops)) return cg_error(CG_ERR_INVALID_ARGUMENT, "conform: bad op list");
    for (int i = 0; i < opt.n_ops; i++)
        if (!opt.ops[i] || !cg_registry_find(ctx, opt.ops[i]))
            return cg_error(CG_ERR_NOT_FOUND, "conform: no operator named '%s'", opt.ops[i] ? opt.ops[i] : "(null)");
    int any = 0;
    for (int i = 0; i < ctx->n_ops && !any; i++) any = selected(ctx->ops[i], &opt);
    if (!any && opt.plugin_only)
        return cg_error(CG_ERR_NOT_FOUND, "conform: --plugin-only, but no loaded plugin provides %s",
                        opt.op || opt.n_ops ? "the operators named" : "an operator");
    /* Device 0, the CPU, is the reference every other device is compared with. */
    int first = 1, last = cg_dev_count() - 1;
    if (opt.device) {
        cg_status st = cg_dev_find(opt.device, &first);
        if (st) return st;
        if (first == 0)
            return cg_error(CG_ERR_INVALID_ARGUMENT,
                            "conform: device '%s' is the CPU, the reference the others are compared with", opt.device);
        last = first;
    }
    cg_device *ref;
    cg_status st = cg_dev_open(0, &ref);
    for (int d = first; !st && d <= last; d++) st = conform_device(ctx, d, ref, &opt, fn, user, n_failed);
    cg_dev_release(ref);
    return st;
}
