/* Decompositions: a node whose op has no kernel on its device runs as the
 * nodes its op's decompose callback emits (through the host API's
 * decomp_* entries, which land here), placed on the same device, or
 * automatically when the node was. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decomp.h"
#include "error.h"
#include "lower.h"

/* A decomposition being expanded: the host API calls of its callback land
 * in the functions of expand_iface below. */
typedef struct expansion {
    cg_decomp base; /* first: the callback's handle */
    build *b;
    const lower_node *node; /* the node being expanded */
    const int32_t *in;      /* its input slots */
    const int32_t *out;     /* placeholder slots of its outputs */
    int counter;            /* numbers the emitted nodes */
    int *done;              /* per output: set by decomp_output */
} expansion;

static int32_t expand_input(cg_decomp *dh, int32_t i) {
    expansion *d = (expansion *)dh;
    if (i < 0 || i >= d->node->n_in) return -1;
    return d->in[i];
}

/* Checks an emitted node's arguments; the message names the origin. */
static int bad_args(expansion *d, const char *where, const char *opname, int32_t n_in, const int32_t *in, int32_t n_out,
                    const int32_t *out) {
    if (n_in < 0 || n_out < 1 || (n_in && !in) || !out) {
        cg_error(CG_ERR_VERIFY, "%sdecomposition of '%s': invalid arguments for op '%s'", where, d->node->name, opname);
        return 1;
    }
    for (int i = 0; i < n_in; i++)
        if (in[i] < 0 || in[i] >= d->b->in->n_slots) {
            cg_error(CG_ERR_VERIFY, "%sdecomposition of '%s': op '%s' reads invalid value id %d", where, d->node->name,
                     opname, in[i]);
            return 1;
        }
    return 0;
}

/* The attributes of an emitted node, from their text. */
static cg_status emitted_attrs(const cg_model *m, const cg_op_entry *op, const char *name, const char *opname,
                               const lower_node *origin, const char *attrs, cg_node **node, cg_attr_value **vals) {
    *node = calloc(1, sizeof **node);
    *vals = calloc((size_t)op->def->n_attrs + 1, sizeof **vals);
    if (!*node || !*vals) {
        free(*node), free(*vals);
        *node = NULL, *vals = NULL;
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    cg_node *n = *node;
    n->name = (char *)name;
    n->op = (char *)opname;
    n->line = origin->line;
    n->col = origin->col;
    cg_status st = attrs && *attrs ? cg_parse_attr_list(attrs, n) : CG_OK;
    if (!st) st = cg_node_resolve_attrs(m, n, op->def, *vals);
    n->name = NULL;
    n->op = NULL;
    if (st) {
        cg_lower_free_attr_node(n);
        free(*vals);
        *node = NULL, *vals = NULL;
    }
    return st;
}

static cg_op_status expand_node(cg_decomp *dh, const char *opname, int32_t n_in, const int32_t *in, int32_t n_out,
                                int32_t *out, const char *attrs) {
    expansion *d = (expansion *)dh;
    build *b = d->b;
    cg_model *m = b->p->model;
    const lower_node *origin = d->node;
    char where[512];
    cg_loc_format(where, sizeof where, m, origin->line, origin->col);
    const cg_op_entry *op = opname ? cg_registry_find(m->ctx, opname) : NULL;
    if (!op) {
        cg_error(CG_ERR_VERIFY, "%sdecomposition of '%s' uses unknown op '%s'", where, origin->name,
                 opname ? opname : "(null)");
        return CG_OP_ERROR;
    }
    if (bad_args(d, where, opname, n_in, in, n_out, out)) return CG_OP_ERROR;
    char name[512];
    snprintf(name, sizeof name, "%s/%s.%d", origin->name, opname, d->counter++);
    cg_node *node;
    cg_attr_value *vals;
    if (emitted_attrs(m, op, name, opname, origin, attrs, &node, &vals)) return CG_OP_ERROR;
    lower_node sub = {.op = op,
                      .attrs = vals,
                      .owned = vals,
                      .attr_node = node,
                      .name = name,
                      .line = origin->line,
                      .col = origin->col,
                      .n_in = n_in,
                      .n_out = n_out,
                      .in = in,
                      .dev = origin->dev,
                      .depth = origin->depth + 1};
    return cg_lower_node(b, &sub, out) ? CG_OP_ERROR : CG_OP_OK;
}

static cg_op_status expand_output(cg_decomp *dh, int32_t i, int32_t v) {
    expansion *d = (expansion *)dh;
    instance *in = d->b->in;
    const cg_model *m = d->b->p->model;
    char where[512];
    cg_loc_format(where, sizeof where, m, d->node->line, d->node->col);
    if (i < 0 || i >= d->node->n_out || v < 0 || v >= in->n_slots) {
        cg_error(CG_ERR_VERIFY, "%sdecomposition of '%s': invalid output %d or value %d", where, d->node->name, i, v);
        return CG_OP_ERROR;
    }
    const cg_tensor_desc *want = &in->slots[d->out[i]].desc, *have = &in->slots[cg_lower_resolve(in, v)].desc;
    int ok = want->dtype == have->dtype && want->ndim == have->ndim;
    for (int k = 0; ok && k < want->ndim; k++) ok = want->dims[k] == have->dims[k];
    if (!ok) {
        char a[256], c[256];
        cg_desc_format(a, sizeof a, m, have);
        cg_desc_format(c, sizeof c, m, want);
        cg_error(CG_ERR_VERIFY, "%sdecomposition of '%s': output %d is %s, the op declares %s", where, d->node->name, i,
                 a, c);
        return CG_OP_ERROR;
    }
    in->redirect[d->out[i]] = cg_lower_resolve(in, v);
    d->done[i] = 1;
    return CG_OP_OK;
}

static const cg_decomp_iface expand_iface = {expand_input, expand_node, expand_output};

/* Why node n cannot run: no kernel where it is placed and nothing to
 * decompose it into, or decompositions nesting too deep. */
static cg_status cannot_expand(build *b, const lower_node *n, const char *where) {
    const char *op = n->op->def->name;
    if (n->op->def->decompose)
        return cg_error(CG_ERR_VERIFY, "%s%s '%s': decompositions nest deeper than %d", where, op, n->name,
                        CG_MAX_DECOMP_DEPTH);
    if (n->dev >= 0)
        return cg_error(CG_ERR_UNSUPPORTED, "%s%s '%s': op has no kernel for %s and no decomposition", where, op,
                        n->name, cg_plan_dev_name(b->p, n->dev));
    return cg_error(CG_ERR_UNSUPPORTED, "%s%s '%s': no device has a kernel for this op and it has no decomposition",
                    where, op, n->name);
}

cg_status cg_lower_expand(build *b, const lower_node *n, const int32_t *ins, const cg_tensor_desc *ind,
                          cg_tensor_desc *outd, int32_t *place) {
    char where[512];
    cg_loc_format(where, sizeof where, b->p->model, n->line, n->col);
    if (!n->op->def->decompose || n->depth >= CG_MAX_DECOMP_DEPTH) return cannot_expand(b, n, where);
    cg_status st = CG_OK;
    for (int k = 0; !st && k < n->n_out; k++) st = cg_lower_new_slot(b, &outd[k], n->dev < 0 ? 0 : n->dev, &place[k]);
    int *done = st ? NULL : calloc((size_t)n->n_out + 1, sizeof *done);
    if (!st && !done) st = cg_lower_oom();
    if (st) return st;
    expansion d = {.base = {&expand_iface}, .b = b, .node = n, .in = ins, .out = place, .done = done};
    char err[1024] = "";
    cg_op_call call = cg_lower_call(n, ind, outd, err, sizeof err);
    cg_error_clear();
    if (n->op->def->decompose(&d.base, &call) != CG_OP_OK) {
        err[sizeof err - 1] = 0; /* a plugin may fill the buffer without one */
        if (!cg_last_error()[0] || err[0])
            st = cg_error(CG_ERR_VERIFY, "%s%s '%s': decomposition failed: %s", where, n->op->def->name, n->name,
                          err[0] ? err : "(no message)");
        else st = CG_ERR_VERIFY;
    }
    for (int k = 0; !st && k < n->n_out; k++)
        if (!done[k])
            st = cg_error(CG_ERR_VERIFY, "%s%s '%s': decomposition left output %d unset", where, n->op->def->name,
                          n->name, k);
    free(done);
    return st;
}
