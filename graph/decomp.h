/* Host side of operator decompositions (cg_host_api.decomp_*): the executor
 * expands a node whose op has no kernel on its device into the nodes its
 * decompose callback emits. */
#ifndef CG_GRAPH_DECOMP_H
#define CG_GRAPH_DECOMP_H

#include "clgraph/plugin.h"

int32_t cg_decomp_input(cg_decomp *d, int32_t i);
cg_op_status cg_decomp_node(cg_decomp *d, const char *op, int32_t n_in,
                            const int32_t *in, int32_t n_out, int32_t *out,
                            const char *attrs);
cg_op_status cg_decomp_output(cg_decomp *d, int32_t i, int32_t v);

#endif
