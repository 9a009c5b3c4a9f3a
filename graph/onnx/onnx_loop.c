/* Loop and Scan unrolled at import: the body imported once per iteration
 * (onnx_ctrl_body: its values named "/Loop/iter2/..."), the loop-carried
 * values passed from one copy to the next, scan inputs taken one element
 * at a time (Gather) and scan outputs stacked along a new axis
 * (Unsqueeze, Concat). The trip count, the condition after every
 * iteration and Scan's sequence length must be known at import. */
#include "onnx_ctrl.h"
#include "onnx_ops_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static cg_status oom(void) { return cg_error(CG_ERR_NO_MEMORY, "out of memory"); }

/* ---- ONNX nodes the unrolling adds ---- */

static cg_status scalar_i64(onnx_imp *im, const char *base, int64_t v, const char **name) {
    cg_tensor *t;
    cg_status s = cg_tensor_alloc(CG_I64, 0, NULL, &t);
    if (s) return s;
    *(int64_t *)t->data = v;
    return onnx_ctrl_konst(im, base, t, name);
}

static cg_status unsqueeze(onnx_imp *im, const char *x, int64_t axis, const char *node, const char *out) {
    if (im->opset < 13) {
        const char *in[1] = {x};
        return onnx_ctrl_node(im, "Unsqueeze", node, 1, in, out, "axes", axis, 1);
    }
    cg_tensor *t;
    const char *axes;
    int64_t one = 1;
    cg_status s = cg_tensor_alloc(CG_I64, 1, &one, &t);
    if (s) return s;
    *(int64_t *)t->data = axis;
    char base[700];
    snprintf(base, sizeof base, "%s/axes", node);
    if ((s = onnx_ctrl_konst(im, base, t, &axes))) return s;
    const char *in[2] = {x, axes};
    return onnx_ctrl_node(im, "Unsqueeze", node, 2, in, out, NULL, 0, 0);
}

/* Element i of x along axis (the axis dropped) into a new value named
 * after base; its name out (valid until the import ends). */
static cg_status take(onnx_imp *im, const char *x, int64_t axis, int64_t i, const char *base, const char **out) {
    const char *idx;
    char b[700];
    snprintf(b, sizeof b, "%s/index", base);
    cg_status s = scalar_i64(im, b, i, &idx);
    char *nm = s ? NULL : onnx_ctrl_unique(im, base);
    if (s || !nm) return s ? s : oom();
    const char *in[2] = {x, idx};
    s = onnx_ctrl_node(im, "Gather", nm, 2, in, nm, "axis", axis, 0);
    onnx_val *v = onnx_val_find(im, nm);
    free(nm);
    *out = v ? v->name : NULL;
    return s;
}

/* vals[0..n) stacked along a new axis into `out` (reverse: last first). */
static cg_status stack(onnx_imp *im, int n, const char **vals, int64_t axis, int reverse, const char *out) {
    if (!n)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "scan output '%s' of zero iterations: its element type and shape are unknown", out);
    const char **items = calloc((size_t)n, sizeof *items);
    char **names = calloc((size_t)n, sizeof *names);
    cg_status s = items && names ? CG_OK : oom();
    for (int j = 0; !s && j < n; j++) {
        char base[700];
        snprintf(base, sizeof base, "%s/%d", out, j);
        const char *x = vals[reverse ? n - 1 - j : j];
        if (n == 1) s = unsqueeze(im, x, axis, base, out);
        else if (!(names[j] = onnx_ctrl_unique(im, base))) s = oom();
        else s = unsqueeze(im, x, axis, names[j], names[j]);
        items[j] = names[j];
    }
    if (!s && n > 1) s = onnx_ctrl_node(im, "Concat", out, n, items, out, "axis", axis, 0);
    for (int j = 0; names && j < n; j++) free(names[j]);
    free(names);
    free(items);
    return s;
}

static cg_status copy_to(onnx_imp *im, const char *x, const char *out) {
    const char *in[1] = {x};
    return onnx_ctrl_node(im, "Identity", out, 1, in, out, NULL, 0, 0);
}

/* ---- the values of the iterations ---- */

/* Per scan output, the value each iteration made. */
typedef struct scan_lists {
    int k, n, cap;  /* outputs, iterations, room */
    const char **v; /* [iteration * k + output] */
} scan_lists;

static cg_status lists_add(scan_lists *l, const char *const *outs) {
    if (!l->k) return (l->n++, CG_OK);
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        const char **v = realloc(l->v, (size_t)cap * (size_t)l->k * sizeof *v);
        if (!v) return oom();
        l->v = v;
        l->cap = cap;
    }
    memcpy(l->v + (size_t)l->n++ * (size_t)l->k, outs, (size_t)l->k * sizeof *outs);
    return CG_OK;
}

/* The values of output j over the iterations, in order (malloc'ed). */
static const char **lists_of(const scan_lists *l, int j) {
    const char **v = calloc((size_t)l->n + 1, sizeof *v);
    for (int i = 0; v && i < l->n; i++) v[i] = l->v[(size_t)i * (size_t)l->k + (size_t)j];
    return v;
}

static cg_status unroll_limit(onnx_imp *im, int64_t iterations, const Onnx__GraphProto *body) {
    const int64_t per = body->n_node ? (int64_t)body->n_node : 1;
    if (iterations <= ONNX_CTRL_MAX_UNROLL / per) return CG_OK;
    return onnx_fail(im, CG_ERR_UNSUPPORTED,
                     "%" PRId64 " iterations of a body of %zu nodes: clgraph unrolls loops at import, at most %d "
                     "nodes",
                     iterations, body->n_node, ONNX_CTRL_MAX_UNROLL);
}

/* ---- Loop ---- */

typedef struct loop_run {
    const Onnx__GraphProto *body;
    char name[600]; /* the Loop's */
    int n_carried;
    const char *cur[ONNX_MAX_IO]; /* the carried values now */
    const char *cond;             /* the condition now (a constant) */
    scan_lists scans;
} loop_run;

/* Iteration i: the body with its inputs (i, cond, carried...) bound. */
static cg_status loop_iteration(onnx_imp *im, loop_run *r, int64_t i) {
    char prefix[700], base[1400];
    snprintf(prefix, sizeof prefix, "%s/iter%" PRId64, r->name, i);
    snprintf(base, sizeof base, "%s/%s", prefix, r->body->input[0]->name ? r->body->input[0]->name : "i");
    const char *actual[ONNX_MAX_IO + 2], *outs[2 * ONNX_MAX_IO + 1];
    cg_status s = scalar_i64(im, base, i, &actual[0]);
    if (s) return s;
    actual[1] = r->cond;
    memcpy(actual + 2, r->cur, (size_t)r->n_carried * sizeof *actual);
    const onnx_ctrl_frame f = {.prefix = prefix, .label = prefix, .n_actual = r->n_carried + 2, .actual = actual};
    if ((s = onnx_ctrl_body(im, r->body, &f, outs))) return s;
    memcpy(r->cur, outs + 1, (size_t)r->n_carried * sizeof *outs);
    r->cond = outs[0];
    return lists_add(&r->scans, outs + 1 + r->n_carried);
}

/* A Loop input known at import as one value (M, cond), or the reason. */
static cg_status loop_known(onnx_imp *im, onnx_val *v, const char *what, int64_t *out) {
    const cg_tensor *t = v && !v->sym ? onnx_known(v) : NULL;
    if (!t)
        return onnx_fail(im, CG_ERR_UNSUPPORTED,
                         "%s ('%s') is known only at run time%s: clgraph unrolls loops at import (give the "
                         "inputs it depends on for the import)",
                         what, v ? v->name : "", v && v->sym ? " (it depends on symbolic dims)" : "");
    if (cg_tensor_numel(t) != 1) return onnx_fail(im, CG_ERR_FORMAT, "%s ('%s') must be one value", what, v->name);
    *out = cg_onnx_int_at(t, 0);
    return CG_OK;
}

/* Runs the iterations: while i < M and the condition holds. */
static cg_status loop_iterate(onnx_imp *im, loop_run *r, int64_t m, int has_cond, int64_t c) {
    /* a for loop's count is refused at once; a while loop's when it gets there */
    if (!has_cond && c && m > 0) {
        cg_status s = unroll_limit(im, m, r->body);
        if (s) return s;
    }
    for (int64_t i = 0; i < m && c; i++) {
        cg_status s = unroll_limit(im, i + 1, r->body);
        if (s || (s = loop_iteration(im, r, i))) return s;
        if (has_cond && (s = loop_known(im, onnx_val_find(im, r->cond), "the condition after an iteration", &c)))
            return s;
    }
    return CG_OK;
}

static cg_status loop_outputs(onnx_imp *im, loop_run *r) {
    const Onnx__NodeProto *n = im->node;
    cg_status s = CG_OK;
    for (int k = 0; !s && k < r->n_carried && (size_t)k < n->n_output; k++)
        if (out_name(im, k)) s = copy_to(im, r->cur[k], out_name(im, k));
    for (int j = 0; !s && j < r->scans.k; j++) {
        const char *o = out_name(im, r->n_carried + j);
        if (!o) continue;
        const char **v = lists_of(&r->scans, j);
        s = v ? stack(im, r->scans.n, v, 0, 0, o) : oom();
        free(v);
    }
    return s;
}

cg_status cg_onnx_map_loop(onnx_imp *im) {
    static const char *const known[] = {"body", NULL};
    const Onnx__NodeProto *n = im->node;
    loop_run r = {0};
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) || (s = onnx_ctrl_graph_attr(im, "body", &r.body))) return s;
    r.n_carried = n->n_input >= 2 ? (int)n->n_input - 2 : -1;
    r.scans.k = (int)r.body->n_output - 1 - r.n_carried;
    if (r.n_carried < 0 || r.n_carried > ONNX_MAX_IO || r.scans.k < 0 || r.scans.k > ONNX_MAX_IO ||
        (int)n->n_output != r.n_carried + r.scans.k || (int)r.body->n_input != r.n_carried + 2)
        return onnx_fail(im, CG_ERR_FORMAT,
                         "%zu inputs and %zu outputs do not fit a body of %zu inputs and %zu outputs", n->n_input,
                         n->n_output, r.body->n_input, r.body->n_output);
    onnx_val *mv = onnx_in(im, 0), *cv = onnx_in(im, 1);
    if (!mv && !cv) return onnx_fail(im, CG_ERR_UNSUPPORTED, "a Loop without a trip count or a condition never ends");
    int64_t m = INT64_MAX, c = 1;
    if ((mv && (s = loop_known(im, mv, "the trip count", &m))) || (cv && (s = loop_known(im, cv, "the condition", &c))))
        return s;
    for (int k = 0; k < r.n_carried; k++) {
        onnx_val *v;
        if ((s = need_in(im, 2 + k, &v))) return s;
        r.cur[k] = v->name;
    }
    onnx_ctrl_node_name(im, r.name, sizeof r.name);
    if (cv) r.cond = cv->name;
    else {
        cg_tensor *t; /* the body's cond input without a condition: true, its output unread */
        char base[700];
        snprintf(base, sizeof base, "%s/cond", r.name);
        if ((s = cg_tensor_alloc(CG_BOOL, 0, NULL, &t)) || (*(uint8_t *)t->data = 1, 0) ||
            (s = onnx_ctrl_konst(im, base, t, &r.cond)))
            return s;
    }
    s = loop_iterate(im, &r, m, cv != NULL, c);
    if (!s) s = loop_outputs(im, &r);
    free(r.scans.v);
    return s;
}

/* ---- Scan ---- */

typedef struct scan_run {
    const Onnx__GraphProto *body;
    char name[600];
    int n_state, n_in;            /* loop-carried values, scan inputs */
    const char *cur[ONNX_MAX_IO]; /* the state now */
    const char *xs[ONNX_MAX_IO];  /* the scan inputs */
    int64_t in_axis[ONNX_MAX_IO], in_rev[ONNX_MAX_IO], out_axis[ONNX_MAX_IO], out_rev[ONNX_MAX_IO];
    int64_t len;
    scan_lists scans;
} scan_run;

/* Iteration t of batch entry `tag` ("" for Scan 9 on): the elements of the
 * scan inputs, the body. */
static cg_status scan_iteration(onnx_imp *im, scan_run *r, const char *tag, int64_t t) {
    char prefix[700];
    snprintf(prefix, sizeof prefix, "%s%s/iter%" PRId64, r->name, tag, t);
    const char *actual[2 * ONNX_MAX_IO], *outs[2 * ONNX_MAX_IO];
    memcpy(actual, r->cur, (size_t)r->n_state * sizeof *actual);
    cg_status s = CG_OK;
    for (int i = 0; !s && i < r->n_in; i++) {
        char base[1400];
        const char *formal = r->body->input[r->n_state + i]->name;
        snprintf(base, sizeof base, "%s/%s", prefix, formal ? formal : "x");
        s = take(im, r->xs[i], r->in_axis[i], r->in_rev[i] ? r->len - 1 - t : t, base, &actual[r->n_state + i]);
    }
    const onnx_ctrl_frame f = {.prefix = prefix, .label = prefix, .n_actual = r->n_state + r->n_in, .actual = actual};
    if (s || (s = onnx_ctrl_body(im, r->body, &f, outs))) return s;
    memcpy(r->cur, outs, (size_t)r->n_state * sizeof *outs);
    return lists_add(&r->scans, outs + r->n_state);
}

/* All iterations; the final state and the stacked scan outputs into
 * outs[0 .. n_state + k) (names, NULL entries skipped). */
static cg_status scan_all(onnx_imp *im, scan_run *r, const char *tag, const char *const *outs) {
    cg_status s = CG_OK;
    r->scans.n = 0;
    for (int64_t t = 0; !s && t < r->len; t++) s = scan_iteration(im, r, tag, t);
    for (int k = 0; !s && k < r->n_state; k++)
        if (outs[k]) s = copy_to(im, r->cur[k], outs[k]);
    for (int j = 0; !s && j < r->scans.k; j++) {
        if (!outs[r->n_state + j]) continue;
        const char **v = lists_of(&r->scans, j);
        s = v ? stack(im, r->scans.n, v, r->out_axis[j], (int)r->out_rev[j], outs[r->n_state + j]) : oom();
        free(v);
    }
    return s;
}

/* An INTS attribute of n values (each `def` when absent), each in [lo, hi]. */
static cg_status ints_attr(onnx_imp *im, const char *key, int n, int64_t def, int64_t lo, int64_t hi, int64_t *dst) {
    int c;
    const int64_t *v = onnx_attr_ints(im, key, &c);
    if (v && c != n) return onnx_fail(im, CG_ERR_FORMAT, "attribute '%s' has %d values, %d expected", key, c, n);
    for (int i = 0; i < n; i++) {
        dst[i] = v ? v[i] : def;
        if (dst[i] < lo || dst[i] > hi)
            return onnx_fail(im, CG_ERR_FORMAT, "attribute '%s': %" PRId64 " is out of range", key, dst[i]);
    }
    return CG_OK;
}

/* The scan inputs' length along their axes: one concrete value. */
static cg_status scan_length(onnx_imp *im, scan_run *r, int batch) {
    r->len = -1;
    for (int i = 0; i < r->n_in; i++) {
        onnx_val *x = onnx_val_find(im, r->xs[i]);
        const int rank = x->desc.ndim - batch;
        if (r->in_axis[i] < -rank || r->in_axis[i] >= rank)
            return onnx_fail(im, CG_ERR_FORMAT, "scan input '%s' has no axis %" PRId64, x->name, r->in_axis[i]);
        if (r->in_axis[i] < 0) r->in_axis[i] += rank;
        const int64_t d = x->desc.dims[r->in_axis[i] + batch];
        if (d < 0)
            return onnx_fail(im, CG_ERR_UNSUPPORTED,
                             "scan input '%s' has a symbolic length: clgraph unrolls Scan at import, over a "
                             "length known there",
                             x->name);
        if (r->len >= 0 && d != r->len)
            return onnx_fail(im, CG_ERR_FORMAT, "the scan inputs have lengths %" PRId64 " and %" PRId64, r->len, d);
        r->len = d;
    }
    return r->len < 0 ? onnx_fail(im, CG_ERR_FORMAT, "a Scan without scan inputs") : CG_OK;
}

/* Scan 8: a batch axis first on every input and output; each entry of the
 * batch scanned on its own, the results stacked. */
static cg_status scan8(onnx_imp *im, scan_run *r, const char *const *outs) {
    onnx_val *x0 = onnx_val_find(im, r->xs[0]);
    const int64_t batch = x0->desc.dims[0];
    const char *state0[ONNX_MAX_IO], *xs0[ONNX_MAX_IO], *res[2 * ONNX_MAX_IO];
    memcpy(state0, r->cur, sizeof state0);
    memcpy(xs0, r->xs, sizeof xs0);
    const int n_out = r->n_state + r->scans.k;
    if (batch < 0) return onnx_fail(im, CG_ERR_UNSUPPORTED, "Scan (opset 8) over a symbolic batch");
    if (!batch) return onnx_fail(im, CG_ERR_UNSUPPORTED, "Scan (opset 8) over an empty batch");
    scan_lists per = {.k = n_out};
    cg_status s = unroll_limit(im, batch * r->len, r->body);
    for (int64_t b = 0; !s && b < batch; b++) {
        char tag[64], base[800];
        snprintf(tag, sizeof tag, "/batch%" PRId64, b);
        for (int i = 0; !s && i < r->n_state + r->n_in; i++) {
            snprintf(base, sizeof base, "%s%s/%s%d", r->name, tag, i < r->n_state ? "state" : "in",
                     i < r->n_state ? i : i - r->n_state);
            s = take(im, i < r->n_state ? state0[i] : xs0[i - r->n_state], 0, b, base,
                     i < r->n_state ? &r->cur[i] : &r->xs[i - r->n_state]);
        }
        char *names[2 * ONNX_MAX_IO] = {0};
        for (int k = 0; !s && k < n_out; k++) {
            snprintf(base, sizeof base, "%s%s/out%d", r->name, tag, k);
            if (!(names[k] = onnx_ctrl_unique(im, base))) s = oom();
        }
        if (!s && !(s = scan_all(im, r, tag, (const char *const *)names)))
            for (int k = 0; k < n_out; k++) res[k] = onnx_val_find(im, names[k])->name;
        if (!s) s = lists_add(&per, res);
        for (int k = 0; k < n_out; k++) free(names[k]);
    }
    for (int k = 0; !s && k < n_out; k++) {
        if (!outs[k]) continue;
        const char **v = lists_of(&per, k);
        s = v ? stack(im, per.n, v, 0, 0, outs[k]) : oom();
        free(v);
    }
    free(per.v);
    return s;
}

/* The counts and attributes of the current Scan into r. */
static cg_status scan_setup(onnx_imp *im, scan_run *r, int first) {
    const Onnx__NodeProto *n = im->node;
    const int64_t m = onnx_attr_int(im, "num_scan_inputs", -1);
    r->n_in = (int)m;
    r->n_state = (int)n->n_input - first - r->n_in;
    r->scans.k = (int)r->body->n_output - r->n_state;
    if (m < 1 || m > ONNX_MAX_IO || r->n_state < 0 || r->n_state > ONNX_MAX_IO || r->scans.k < 0 ||
        r->scans.k > ONNX_MAX_IO || (int)n->n_output != r->n_state + r->scans.k ||
        (int)r->body->n_input != r->n_state + r->n_in)
        return onnx_fail(im, CG_ERR_FORMAT,
                         "%zu inputs (%" PRId64 " scanned) and %zu outputs do not fit a body of %zu inputs and %zu "
                         "outputs",
                         n->n_input, m, n->n_output, r->body->n_input, r->body->n_output);
    for (int i = 0; i < r->n_state + r->n_in; i++) {
        onnx_val *v;
        cg_status s = need_in(im, first + i, &v);
        if (s) return s;
        if (i < r->n_state) r->cur[i] = v->name;
        else r->xs[i - r->n_state] = v->name;
    }
    if (im->opset < 9) return ints_attr(im, "directions", r->n_in, 0, 0, 1, r->in_rev);
    cg_status s;
    if ((s = ints_attr(im, "scan_input_axes", r->n_in, 0, -CG_MAX_DIMS, CG_MAX_DIMS, r->in_axis)) ||
        (s = ints_attr(im, "scan_input_directions", r->n_in, 0, 0, 1, r->in_rev)) ||
        (s = ints_attr(im, "scan_output_axes", r->scans.k, 0, -CG_MAX_DIMS, CG_MAX_DIMS, r->out_axis)))
        return s;
    return ints_attr(im, "scan_output_directions", r->scans.k, 0, 0, 1, r->out_rev);
}

/* Scan 8's sequence_lens: absent, or every entry the full length. */
static cg_status scan8_lens(onnx_imp *im, const scan_run *r) {
    onnx_val *v = onnx_in(im, 0);
    const cg_tensor *t = v ? onnx_known(v) : NULL;
    if (!v) return CG_OK;
    for (int64_t i = 0; t && i < cg_tensor_numel(t); i++)
        if (cg_onnx_int_at(t, i) != r->len) t = NULL;
    if (t) return CG_OK;
    return onnx_fail(im, CG_ERR_UNSUPPORTED,
                     "sequence_lens ('%s') must be known at import and the full length %" PRId64 " for every entry",
                     v->name, r->len);
}

cg_status cg_onnx_map_scan(onnx_imp *im) {
    static const char *const known9[] = {"body",
                                         "num_scan_inputs",
                                         "scan_input_axes",
                                         "scan_input_directions",
                                         "scan_output_axes",
                                         "scan_output_directions",
                                         NULL};
    static const char *const known8[] = {"body", "num_scan_inputs", "directions", NULL};
    const int v8 = im->opset < 9;
    scan_run r = {0};
    cg_status s;
    if ((s = onnx_check_attrs(im, v8 ? known8 : known9)) || (s = onnx_ctrl_graph_attr(im, "body", &r.body)) ||
        (s = scan_setup(im, &r, v8)) || (s = scan_length(im, &r, v8)) || (v8 && (s = scan8_lens(im, &r))))
        return s;
    onnx_ctrl_node_name(im, r.name, sizeof r.name);
    const char *outs[2 * ONNX_MAX_IO];
    for (int k = 0; k < r.n_state + r.scans.k; k++) outs[k] = out_name(im, k);
    if (v8) s = scan8(im, &r, outs);
    else if (!(s = unroll_limit(im, r.len, r.body))) s = scan_all(im, &r, "", outs);
    free(r.scans.v);
    return s;
}
