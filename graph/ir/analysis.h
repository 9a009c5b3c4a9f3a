/* Graph analysis shared by the verifier and the plan builder: name
 * resolution, operator lookup, attribute resolution, topological order, and
 * the call into an operator's inference with errors in graph context. */
#ifndef CG_GRAPH_ANALYSIS_H
#define CG_GRAPH_ANALYSIS_H

#include "ir.h"

typedef struct cg_analysis {
    int n_nodes;
    int32_t *order;          /* node indices in dependency order */
    const cg_op_entry **ops; /* per node */
    cg_attr_value **attrs;   /* per node: def->n_attrs resolved values */
} cg_analysis;

/* The analysis a plan is built on (the graph verified): resolves
 * inputs/outputs by name, looks up ops, checks arity and attributes, orders
 * nodes and rejects cycles. Writes node->inputs and g->outputs. */
cg_status cg_graph_analyze(cg_graph *g, cg_analysis *out);

void cg_analysis_free(cg_analysis *a);

/* Descriptor of a declared or inferred value (dims may be symbolic). */
void cg_desc_from_value(const cg_value *v, cg_tensor_desc *d);

/* Calls op->def->infer and checks what it wrote. On failure the message is
 * "FILE:L:C: OP 'NODE': reason". `concrete` demands concrete output dims. */
cg_status cg_call_infer(const cg_model *m, const char *node_name, int line, int col, const cg_op_entry *op,
                        const cg_attr_value *attrs, int n_in, const cg_tensor_desc *in, int n_out, cg_tensor_desc *out,
                        int concrete);

/* Formats "f32[2, B, ?]" using the model's symbol names. */
void cg_desc_format(char *buf, size_t size, const cg_model *m, const cg_tensor_desc *d);

#endif
