/* Graph rewrites: passes over a verified graph that replace a chain of
 * nodes by fewer, larger ones (an imported Transformer's attention by one
 * sdpa node). A pass adds the new nodes and points the readers of the
 * chain's result at them; the replaced nodes stay in the graph, unread, and
 * plans do not lower them. The model is verified again after the passes. */
#ifndef CG_GRAPH_REWRITE_H
#define CG_GRAPH_REWRITE_H

#include "ir.h"

typedef struct cg_rewrite_pass {
    const char *name, *doc;
    /* Rewrites g; adds to *fired the places it changed. A pass checks every
     * shape it relies on before it changes anything, so that the graph
     * verifies again. */
    cg_status (*run)(cg_graph *g, int *fired);
} cg_rewrite_pass;

extern const cg_rewrite_pass cg_rewrite_cse;
extern const cg_rewrite_pass cg_rewrite_attention;
extern const cg_rewrite_pass cg_rewrite_norm;
extern const cg_rewrite_pass cg_rewrite_elementwise;

/* ---- what passes share (rw_match.c) ---- */

/* How g's values are used, per value: `readers` counts the inputs of
 * live nodes that read it plus one for each time it is a graph output;
 * `reader` is the last live node (index) reading it, -1 for none; `output`
 * whether it is a graph output. Per node, `live`: whether a graph output
 * depends on it (a chain an earlier pass replaced is not, and no pass
 * should fuse it again). Made once and passed to every match (remake it
 * after a pass changed the graph). */
typedef struct cg_rw_uses {
    int32_t *readers, *reader;
    uint8_t *output, *live;
} cg_rw_uses;

cg_status cg_rw_uses_make(const cg_graph *g, cg_rw_uses *u);
void cg_rw_uses_free(cg_rw_uses *u);

/* The node reading v when that is v's only use (one reader, no graph
 * output), else NULL. */
cg_node *cg_rw_sole_reader(const cg_graph *g, const cg_rw_uses *u, int32_t v);

/* The node that makes value v, or NULL for an input or parameter. */
cg_node *cg_rw_producer(const cg_graph *g, int32_t v);

/* Node n is op `op` (and has no output but one). */
int cg_rw_is(const cg_node *n, const char *op);

/* Node n's attribute `key`, or NULL. */
const cg_attr *cg_rw_attr(const cg_node *n, const char *key);

/* The value of a one-element f32 parameter, through *out; 0 when v is not
 * one. */
int cg_rw_scalar(const cg_graph *g, int32_t v, double *out);

/* Non-zero when the ints attribute `key` of n is exactly want[0..n-1]. */
int cg_rw_ints_are(const cg_node *n, const char *key, int count, const int64_t *want);

/* Whether a and b have the same dims, every one known (a symbol matches
 * itself, an unknown dim nothing). */
int cg_rw_same_shape(const cg_value *a, const cg_value *b);

/* A value of g by index. */
static inline const cg_value *cg_rw_val(const cg_graph *g, int32_t v) { return &g->values[v]; }

/* Adds node `op` named after `base` + suffix (made unique) with one output
 * likewise named, reading inputs by value index; *node and *out_value
 * receive what was made (the output is untyped until verification). */
cg_status cg_rw_add_node(cg_graph *g, const char *op, const char *base, const char *suffix, int n_in, const int32_t *in,
                         cg_node **node, int32_t *out_value);

/* cg_rw_add_node with n_out outputs, named `base` + suffixes[k] (made
 * unique; the suffixes differ); their value indices into out_values. */
cg_status cg_rw_add_node_outs(cg_graph *g, const char *op, const char *base, const char *const *suffixes, int n_out,
                              int n_in, const int32_t *in, cg_node **node, int32_t *out_values);

/* Every node input that reads value `from` now names value `to`. */
cg_status cg_rw_redirect(cg_graph *g, int32_t from, int32_t to);

#endif
