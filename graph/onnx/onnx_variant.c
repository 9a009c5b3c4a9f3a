/* Variants of an imported graph. An If whose condition compares dims the
 * binding decides (silero-vad's decoder squeezes its time axis when it is
 * 1) and whose branches differ in shape cannot be one graph: `where` needs
 * both the same. The import then starts again twice, assuming the
 * comparison and assuming its negation; each import decides the If (and
 * every later comparison of the same dims) by its assumptions, and becomes
 * a variant of the graph guarded by them (`graph main when T == 1`). A
 * plan runs the variant whose guards the binding meets (graph/sched/
 * variant.c). An equality with a size also fixes the dim inside its
 * variant, so that a Squeeze of it imports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "onnx_imp.h"
#include "weights.h"

/* At most this many imports of one model (variants and those forked). */
#define MAX_ATTEMPTS 16

static cg_guard negate(cg_guard c) {
    static const int neg[] = {0, CG_GUARD_NE, CG_GUARD_EQ, CG_GUARD_GE, CG_GUARD_GT, CG_GUARD_LE, CG_GUARD_LT};
    c.op = neg[c.op];
    return c;
}

/* b op a for a op b. */
static cg_guard swap(cg_guard c) {
    static const int sw[] = {0, CG_GUARD_EQ, CG_GUARD_NE, CG_GUARD_GT, CG_GUARD_GE, CG_GUARD_LT, CG_GUARD_LE};
    const cg_guard r = {sw[c.op], c.b, c.a};
    return r;
}

static int same(const cg_guard *x, const cg_guard *y) { return x->op == y->op && x->a == y->a && x->b == y->b; }

int onnx_assumed(const onnx_imp *im, const cg_guard *c) {
    const cg_guard forms[4] = {*c, swap(*c), negate(*c), swap(negate(*c))};
    for (int i = 0; i < im->n_assume; i++)
        for (int f = 0; f < 4; f++)
            if (same(&im->assume[i], &forms[f])) return f < 2;
    return -1;
}

int onnx_fork_on(onnx_imp *im, const onnx_val *cond) {
    if (!cond->has_pred || im->n_assume >= CG_MAX_GUARDS - 1) return 0;
    im->fork_wanted = 1;
    im->fork = cond->pred;
    return 1;
}

/* The integer graph input (one element, not given) of a comparison and
 * the constant >= 0 it is compared with, or NULL. */
static onnx_val *mode_input(onnx_imp *im, int i, int64_t *c) {
    onnx_val *v = onnx_in(im, i), *k = onnx_in(im, 1 - i);
    if (!v || !k || !v->input || v->given || v->konst || !v->typed || !k->konst) return NULL;
    if (!cg_value_sym_dtype((cg_dtype)v->desc.dtype)) return NULL;
    for (int d = 0; d < v->desc.ndim; d++)
        if (v->desc.dims[d] != 1) return NULL;
    if (cg_tensor_numel(k->konst) != 1 || (*c = cg_onnx_int_at(k->konst, 0)) < 0) return NULL;
    return v;
}

int onnx_value_compare(onnx_imp *im, cg_guard *pred, cg_status *st) {
    static const struct {
        const char *name;
        int op;
    } cmps[] = {{"Equal", CG_GUARD_EQ}, {"Less", CG_GUARD_LT}, {"Greater", CG_GUARD_GT}};
    const Onnx__NodeProto *n = im->node;
    *st = CG_OK;
    int op = 0;
    for (size_t i = 0; i < sizeof cmps / sizeof cmps[0]; i++)
        if (!strcmp(n->op_type, cmps[i].name)) op = cmps[i].op;
    if (!op || n->n_input != 2 || n->n_output != 1) return -1;
    int64_t c = 0;
    int at = 0;
    onnx_val *v = mode_input(im, 0, &c);
    if (!v && (v = mode_input(im, 1, &c))) at = 1;
    if (!v) return -1;
    char name[600];
    snprintf(name, sizeof name, "%.500s.value", v->name);
    int k;
    if ((*st = cg_model_sym_value(im->m, name, v->name, &k))) return -1;
    const cg_guard g = {op, CG_DIM_SYM(k), c};
    *pred = at ? swap(g) : g;
    const int r = onnx_assumed(im, pred);
    if (r < 0) return 2;
    /* decided by the variant: the input stays one of the graph's, for the
     * plan to choose the variant by */
    v->emitted = 1;
    const int r0 = onnx_in(im, 0)->desc.ndim, r1 = onnx_in(im, 1)->desc.ndim, rank = r0 > r1 ? r0 : r1;
    const int64_t ones[CG_MAX_DIMS] = {1, 1, 1, 1, 1, 1, 1, 1};
    cg_tensor *t;
    if ((*st = cg_tensor_alloc(CG_BOOL, rank, ones, &t))) return -1;
    *(uint8_t *)t->data = (uint8_t)r;
    *st = onnx_set_const(im, 0, t);
    return r;
}

/* The weights of every variant's params, each name once (a variant reads
 * the model's initializers by their names, and its constants are named
 * apart: the fresh-name counter runs on across imports). */
static cg_status bind_weights(onnx_imp *ims, int n, const char *path, cg_model *m) {
    int total = 0;
    for (int i = 0; i < n; i++) total += ims[i].n_params;
    const char **names = malloc(sizeof *names * ((size_t)total + 1));
    const cg_tensor **ts = malloc(sizeof *ts * ((size_t)total + 1));
    cg_status s = names && ts ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    int k = 0;
    for (int i = 0; i < n && !s; i++)
        for (int j = 0; j < ims[i].n_params; j++) {
            int dup = 0;
            for (int q = 0; q < k && !dup; q++) dup = !strcmp(names[q], ims[i].param_names[j]);
            if (dup) continue;
            names[k] = ims[i].param_names[j];
            ts[k++] = ims[i].param_tensors[j];
        }
    char label[600];
    snprintf(label, sizeof label, "%.500s (initializers)", path);
    cg_weights *w = NULL;
    if (!s) s = cg_weights_from_tensors(label, k, names, ts, &w);
    free(names);
    free(ts);
    if (s) return s;
    m->owned_weights = w;
    return cg_model_bind_weights(m, w);
}

/* Imports number i of the queue, with its assumptions; forks where asked. */
static cg_status attempt(onnx_imp *ims, int *n_queued, int i, cg_model *m) {
    onnx_imp *im = &ims[i];
    const int graphs = m->n_graphs;
    cg_status s = cg_onnx_import_graph(im);
    if (!s || !im->fork_wanted) return s;
    if (*n_queued + 2 > MAX_ATTEMPTS) return s;
    while (m->n_graphs > graphs) cg_model_drop_last_graph(m);
    for (int b = 0; b < 2; b++) {
        onnx_imp *f = &ims[(*n_queued)++];
        f->n_assume = im->n_assume + 1;
        memcpy(f->assume, im->assume, sizeof im->assume);
        f->assume[im->n_assume] = b ? negate(im->fork) : im->fork;
    }
    return CG_OK;
}

/* "the variant for T == 1 could not be made: REASON" (its graph is the
 * model's last). */
static void variant_failed(const onnx_imp *im, char *why, size_t size) {
    char g[600];
    const char *msg = cg_last_error();
    cg_graph_guards_text(im->g, g, sizeof g);
    int n = snprintf(why, size, "the import could not make the variant for %s: ", g);
    if (n >= 0 && (size_t)n < size) snprintf(why + n, size - (size_t)n, "%s", msg);
}

cg_status cg_onnx_import_variants(cg_context *ctx, const char *path, const cg_onnx_options *opt,
                                  Onnx__ModelProto *proto, cg_model *m) {
    onnx_imp ims[MAX_ATTEMPTS];
    memset(ims, 0, sizeof ims);
    const char *slash = strrchr(path, '/');
    int n_queued = 1, kept = 0;
    cg_status s = CG_OK, first_fail = CG_OK;
    char why[1024] = "";
    for (int i = 0; i < n_queued && !s; i++) {
        onnx_imp *im = &ims[i];
        im->ctx = ctx;
        im->path = path;
        im->opt = opt;
        im->proto = proto;
        im->m = m;
        im->uniq = i ? ims[i - 1].uniq : 0;
        im->dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
        if (!im->dir) s = cg_error(CG_ERR_NO_MEMORY, "out of memory");
        const int before = n_queued, graphs = m->n_graphs;
        cg_status a = s ? s : attempt(ims, &n_queued, i, m);
        if (a && (!i || a == CG_ERR_NO_MEMORY)) s = a; /* not a variant: the import fails */
        else if (a) { /* this variant cannot be made */ variant_failed(im, why, sizeof why);
            while (m->n_graphs > graphs) cg_model_drop_last_graph(m);
            if (!first_fail) first_fail = a;
            s = cg_model_refuse_variant(m, im->n_assume, im->assume, why);
        } else kept += n_queued == before;
    }
    if (!s && !kept) s = cg_error(first_fail, "%s", m->refused[0].why);
    /* the variants that could not be made leave their bindings refused by
     * the plan ("no variant for ..."); the model still runs the others */
    if (!s) s = bind_weights(ims, n_queued, path, m);
    if (!s) s = cg_model_verify(m);
    for (int i = 0; i < n_queued; i++) {
        ims[i].proto = NULL;
        cg_onnx_imp_free(&ims[i]);
    }
    return s;
}
