/* Conformance harness: each op's declared cases run on an OpenCL device and
 * on the CPU with the same random inputs, and the outputs are compared with
 * the op's tolerances. Kernels are called directly (as ggml's
 * test-backend-ops does), so a failure points at one kernel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "mem.h"
#include "opencl/cl_backend.h"
#include "error.h"
#include "shape.h"
#include "ir.h"
#include "tensor.h"

#define QUICK_LIMIT 4096

/* ---- devices (public listing) ---- */

int cg_device_count(void) { return 1 + cg_cl_device_count(); }

const char *cg_device_note(void) { return cg_cl_unavailable_reason(); }

static char cl_names[64][24];

const char *cg_device_describe(int i, char *buf, size_t size) {
    if (i == 0) {
        if (buf && size) snprintf(buf, size, "cpu        host CPU (CBLAS: OpenBLAS)");
        return "cpu";
    }
    const cg_cl_info *in = cg_cl_device_info(i - 1);
    if (!in || i - 1 >= 64) return NULL;
    snprintf(cl_names[i - 1], sizeof cl_names[i - 1], "opencl:%d", i - 1);
    if (buf && size)
        snprintf(buf, size,
                 "%-10s %s\n           platform: %s (%s)\n           vendor: %s; %s; %s; driver %s\n"
                 "           compute units: %u; global memory: %.1f GiB; local memory: %llu KiB; "
                 "max work-group: %zu; fp16: %s; fp64: %s",
                 cl_names[i - 1], in->name, in->platform, in->platform_version, in->vendor, in->version,
                 in->c_version, in->driver, in->compute_units, (double)in->global_mem / (1024.0 * 1024 * 1024),
                 (unsigned long long)(in->local_mem / 1024), in->max_work_group, in->fp16 ? "yes" : "no",
                 in->fp64 ? "yes" : "no");
    return cl_names[i - 1];
}

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

static void fill(rng *r, const cg_tensor_desc *d, double lo, double hi, void *data) {
    int64_t n = cg_shape_numel(d->ndim, d->dims);
    for (int64_t i = 0; i < n; i++) {
        double u = (double)(next(r) >> 11) * (1.0 / 9007199254740992.0);
        if (d->dtype == CG_OP_I32) {
            double span = floor(hi) - ceil(lo) + 1;
            int64_t v = (int64_t)ceil(lo) + (int64_t)(u * span);
            if (v > (int64_t)floor(hi)) v = (int64_t)floor(hi);
            ((int32_t *)data)[i] = (int32_t)v;
        } else {
            ((float *)data)[i] = (float)(lo + (hi - lo) * u);
        }
    }
}

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* ---- one case ---- */

typedef struct case_state {
    cg_conform_case c;
    cg_node node;             /* holds the parsed attribute text */
    cg_attr_value attrs[64];
    cg_tensor_desc out[16];
    void *host_in[CG_CONFORM_MAX_INPUTS];
    void *cpu_out[16], *dev_out[16];
} case_state;

static size_t bytes_of(const cg_tensor_desc *d) {
    int64_t n = cg_shape_numel(d->ndim, d->dims);
    return (size_t)(n > 0 ? n : 0) * 4;
}

static void case_free(case_state *cs) {
    for (int i = 0; i < CG_CONFORM_MAX_INPUTS; i++) free(cs->host_in[i]);
    for (int i = 0; i < 16; i++) {
        free(cs->cpu_out[i]);
        free(cs->dev_out[i]);
    }
    for (int i = 0; i < cs->node.n_attrs; i++) cg_attr_clear(&cs->node.attrs[i]);
    free(cs->node.attrs);
}

/* Runs one kernel; `dev` NULL means the CPU kernel on host memory. */
static int run_kernel(const cg_op_entry *op, case_state *cs, cg_cl_device *dev, char *msg, size_t msz) {
    const cg_kernel_def *k = dev ? op->opencl : op->cpu;
    char err[1024] = "";
    cg_op_call call = {.struct_size = sizeof call,
                       .node_name = op->def->name,
                       .n_inputs = cs->c.n_inputs,
                       .n_outputs = cs->c.n_outputs,
                       .inputs = cs->c.inputs,
                       .outputs = cs->out,
                       .attrs = cs->attrs,
                       .err = err,
                       .err_size = sizeof err,
                       .host = cg_host_api_get()};
    size_t ws = k->workspace ? k->workspace(&call) : 0;
    int ok = 1;
    if (!dev) {
        void *w = ws ? cg_aligned_alloc(ws) : NULL;
        for (int i = 0; i < cs->c.n_outputs; i++) cs->cpu_out[i] = calloc(1, bytes_of(&cs->out[i]) + 4);
        cg_kernel_args a = {.struct_size = sizeof a,
                            .call = &call,
                            .in = (const void *const *)cs->host_in,
                            .out = cs->cpu_out,
                            .workspace = w,
                            .workspace_size = ws};
        if ((ws && !w) || k->run(&a) != CG_OP_OK) {
            snprintf(msg, msz, "CPU kernel failed: %s", err[0] ? err : "out of memory");
            ok = 0;
        }
        cg_aligned_free(w);
        return ok;
    }
    cl_mem in[CG_CONFORM_MAX_INPUTS] = {0}, out[16] = {0}, wmem = NULL;
    cg_status st = CG_OK;
    for (int i = 0; !st && i < cs->c.n_inputs; i++) {
        size_t b = bytes_of(&cs->c.inputs[i]);
        st = cg_cl_alloc(dev, b ? b : 4, &in[i]);
        if (!st && b) st = cg_cl_write(dev, in[i], 0, b, cs->host_in[i], 1);
    }
    for (int i = 0; !st && i < cs->c.n_outputs; i++) {
        size_t b = bytes_of(&cs->out[i]);
        st = cg_cl_alloc(dev, b ? b : 4, &out[i]);
    }
    if (!st && ws) st = cg_cl_alloc(dev, ws, &wmem);
    if (st) {
        snprintf(msg, msz, "%s", cg_last_error());
        ok = 0;
    } else {
        cg_kernel_args a = {.struct_size = sizeof a,
                            .call = &call,
                            .in = (const void *const *)in,
                            .out = (void *const *)out,
                            .workspace = wmem,
                            .workspace_size = ws,
                            .stream = cg_cl_queue(dev),
                            .device = dev};
        if (k->run(&a) != CG_OP_OK) {
            snprintf(msg, msz, "OpenCL kernel failed: %s", err[0] ? err : "(no message)");
            ok = 0;
        }
        for (int i = 0; ok && i < cs->c.n_outputs; i++) {
            size_t b = bytes_of(&cs->out[i]);
            cs->dev_out[i] = calloc(1, b + 4);
            if (b && cg_cl_read(dev, out[i], 0, b, cs->dev_out[i]) != CG_OK) {
                snprintf(msg, msz, "%s", cg_last_error());
                ok = 0;
            }
        }
        if (ok && cg_cl_finish(dev) != CG_OK) {
            snprintf(msg, msz, "%s", cg_last_error());
            ok = 0;
        }
    }
    for (int i = 0; i < CG_CONFORM_MAX_INPUTS; i++)
        if (in[i]) clReleaseMemObject(in[i]);
    for (int i = 0; i < 16; i++)
        if (out[i]) clReleaseMemObject(out[i]);
    if (wmem) clReleaseMemObject(wmem);
    return ok;
}

/* Compares outputs; returns 0 and describes the first mismatch. */
static int compare(case_state *cs, double *max_abs, char *msg, size_t msz) {
    double atol = cs->c.atol > 0 ? cs->c.atol : 1e-4, rtol = cs->c.rtol > 0 ? cs->c.rtol : 1e-4;
    for (int o = 0; o < cs->c.n_outputs; o++) {
        int64_t n = cg_shape_numel(cs->out[o].ndim, cs->out[o].dims);
        for (int64_t i = 0; i < n; i++) {
            if (cs->out[o].dtype == CG_OP_I32) {
                int32_t a = ((int32_t *)cs->dev_out[o])[i], b = ((int32_t *)cs->cpu_out[o])[i];
                if (a != b) {
                    snprintf(msg, msz, "output %d element %lld: device %d, cpu %d", o, (long long)i, a, b);
                    return 0;
                }
                continue;
            }
            double a = ((float *)cs->dev_out[o])[i], b = ((float *)cs->cpu_out[o])[i];
            if (isnan(a) && isnan(b)) continue;
            if (isinf(a) || isinf(b)) {
                if (a == b) continue;
            } else {
                double d = fabs(a - b);
                if (d > *max_abs) *max_abs = d;
                if (d <= atol + rtol * fabs(b)) continue;
            }
            snprintf(msg, msz, "output %d element %lld: device %.9g, cpu %.9g", o, (long long)i, a, b);
            if (!isnan(a - b) && fabs(a - b) > *max_abs) *max_abs = fabs(a - b);
            if (isnan(a) != isnan(b)) *max_abs = INFINITY;
            return 0;
        }
    }
    return 1;
}

static void run_op(const cg_op_entry *op, int dev_index, cg_cl_device *dev, const char *dev_name,
                   const cg_conform_options *opt, cg_conform_fn fn, void *user, int *n_failed) {
    cg_conform_row row = {.op = op->def->name, .plugin = op->plugin->name, .device = dev_name, .message = ""};
    char msg[1024] = "", shapes[1024] = "";
    size_t su = 0;
    row.shapes = shapes;
    if (!op->def->conform_case) {
        row.result = CG_CONFORM_NO_CASES;
        fn(&row, user);
        return;
    }
    if (!op->opencl) {
        row.result = CG_CONFORM_NO_KERNEL;
        fn(&row, user);
        return;
    }
    if (!op->cpu) {
        row.result = CG_CONFORM_FAIL;
        row.message = "the op has no CPU kernel to compare with";
        (*n_failed)++;
        fn(&row, user);
        return;
    }
    cg_model dummy;
    memset(&dummy, 0, sizeof dummy);
    dummy.filename = "<conform>";
    int failed = 0;
    for (int32_t ci = 0; !failed && ci < 10000; ci++) {
        case_state *cs = calloc(1, sizeof *cs);
        if (!cs) {
            snprintf(msg, sizeof msg, "out of memory");
            failed = 1;
            break;
        }
        cs->c.struct_size = sizeof cs->c;
        if (!op->def->conform_case(ci, &cs->c)) {
            free(cs);
            break;
        }
        char where[64];
        snprintf(where, sizeof where, "case %d", ci);
        int bad = cs->c.n_inputs < 0 || cs->c.n_inputs > CG_CONFORM_MAX_INPUTS || cs->c.n_outputs < 1 ||
                  cs->c.n_outputs > 16;
        int big = 0;
        for (int i = 0; !bad && i < cs->c.n_inputs; i++) {
            int64_t n = cg_shape_numel(cs->c.inputs[i].ndim, cs->c.inputs[i].dims);
            bad = n < 0 || cs->c.inputs[i].ndim > CG_MAX_DIMS;
            big |= n > QUICK_LIMIT;
        }
        if (bad) {
            snprintf(msg, sizeof msg, "%s: the op declares an invalid case", where);
            failed = 1;
            free(cs);
            break;
        }
        cs->node.name = (char *)op->def->name;
        cs->node.op = (char *)op->def->name;
        cg_status st = cs->c.attrs && *cs->c.attrs ? cg_parse_attr_list(cs->c.attrs, &cs->node) : CG_OK;
        if (!st) st = cg_node_resolve_attrs(&dummy, &cs->node, op->def, cs->attrs);
        if (!st)
            st = cg_call_infer(&dummy, op->def->name, 0, 0, op, cs->attrs, cs->c.n_inputs, cs->c.inputs,
                               cs->c.n_outputs, cs->out, 1);
        for (int i = 0; !st && i < cs->c.n_outputs; i++) big |= cg_shape_numel(cs->out[i].ndim, cs->out[i].dims) > QUICK_LIMIT;
        cs->node.name = cs->node.op = NULL;
        if (st) {
            snprintf(msg, sizeof msg, "%s: %s", where, cg_last_error());
            failed = 1;
        } else if (opt->quick && big) {
            row.cases_skipped++;
        } else {
            rng r = {(opt->seed ? opt->seed : 0x5eed) ^ hash_str(op->def->name) ^ ((uint64_t)ci * 0x9e3779b97f4a7c15ull)};
            if (!r.s) r.s = 1;
            for (int i = 0; i < cs->c.n_inputs; i++) {
                cs->host_in[i] = malloc(bytes_of(&cs->c.inputs[i]) + 4);
                fill(&r, &cs->c.inputs[i], cs->c.lo[i], cs->c.hi[i], cs->host_in[i]);
            }
            char detail[900] = "";
            if (!run_kernel(op, cs, NULL, detail, sizeof detail) || !run_kernel(op, cs, dev, detail, sizeof detail) ||
                !compare(cs, &row.max_abs_error, detail, sizeof detail)) {
                char sh[256] = "";
                size_t u = 0;
                for (int i = 0; i < cs->c.n_inputs && u < sizeof sh; i++) {
                    char one[96];
                    cg_shape_format(one, sizeof one, cs->c.inputs[i].dtype, cs->c.inputs[i].ndim, cs->c.inputs[i].dims, NULL, 0);
                    u += (size_t)snprintf(sh + u, sizeof sh - u, "%s%s", i ? ", " : "", one);
                }
                snprintf(msg, sizeof msg, "%s (%s%s%s): %s", where, sh, cs->c.attrs ? "; " : "",
                         cs->c.attrs ? cs->c.attrs : "", detail);
                failed = 1;
            }
            row.cases_run++;
            if (cs->c.n_inputs > 0 && su < sizeof shapes - 1) {
                char one[96];
                cg_shape_format(one, sizeof one, cs->c.inputs[0].dtype, cs->c.inputs[0].ndim, cs->c.inputs[0].dims, NULL, 0);
                su += (size_t)snprintf(shapes + su, sizeof shapes - su, "%s%s", su ? " " : "", one);
            }
        }
        case_free(cs);
        free(cs);
    }
    (void)dev_index;
    row.result = failed ? CG_CONFORM_FAIL : CG_CONFORM_PASS;
    row.message = msg;
    if (failed) (*n_failed)++;
    fn(&row, user);
}

cg_status cg_conform(cg_context *ctx, const cg_conform_options *opt_in, cg_conform_fn fn, void *user,
                     int *n_failed) {
    if (!ctx || !fn || !n_failed) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_conform: NULL argument");
    cg_conform_options opt;
    memset(&opt, 0, sizeof opt);
    if (opt_in) opt = *opt_in;
    *n_failed = 0;
    if (opt.op && !cg_registry_find(ctx, opt.op))
        return cg_error(CG_ERR_NOT_FOUND, "conform: no operator named '%s'", opt.op);
    int first = 0, last = cg_cl_device_count() - 1;
    if (opt.device) {
        int idx;
        cg_status st = cg_cl_device_find(opt.device, &idx);
        if (st) return st;
        first = last = idx;
    }
    for (int d = first; d <= last; d++) {
        cg_cl_device *dev;
        cg_status st = cg_cl_device_open(d, &dev);
        if (st) return st;
        char name[32];
        snprintf(name, sizeof name, "opencl:%d", d);
        for (int i = 0; i < ctx->n_ops; i++) {
            const cg_op_entry *op = &ctx->ops[i];
            if (opt.op && strcmp(op->def->name, opt.op)) continue;
            run_op(op, d, dev, name, &opt, fn, user, n_failed);
        }
        cg_cl_device_release(dev);
    }
    return CG_OK;
}
