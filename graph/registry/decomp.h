/* Host side of operator decompositions (cg_host_api.decomp_*). The host API
 * table lives here, with the registry; the scheduler, which expands a node
 * whose op has no kernel on its device, embeds a cg_decomp whose functions
 * do the work. */
#ifndef CG_GRAPH_DECOMP_H
#define CG_GRAPH_DECOMP_H

#include "clgraph/plugin.h"

/* What a decomposition's emitter does with each host API call. */
typedef struct cg_decomp_iface {
    int32_t (*input)(cg_decomp *d, int32_t i);
    cg_op_status (*node)(cg_decomp *d, const char *op, int32_t n_in, const int32_t *in, int32_t n_out, int32_t *out,
                         const char *attrs);
    cg_op_status (*output)(cg_decomp *d, int32_t i, int32_t v);
} cg_decomp_iface;

/* The handle a decompose callback gets: the first member of the
 * emitter's own state. */
struct cg_decomp {
    const cg_decomp_iface *iface;
};

#endif
