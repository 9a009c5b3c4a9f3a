/* The host API table every plugin callback gets (cg_host_api, plugin.h):
 * the decomposition entries call the emitter the scheduler hands the
 * callback (decomp.h), the rest are the backends' services. */
#include <pthread.h>

#include "backend.h"
#include "decomp.h"
#include "registry.h"

static int32_t decomp_input(cg_decomp *d, int32_t i) { return d && d->iface ? d->iface->input(d, i) : -1; }

static cg_op_status decomp_node(cg_decomp *d, const char *op, int32_t n_in, const int32_t *in, int32_t n_out,
                                int32_t *out, const char *attrs) {
    return d && d->iface ? d->iface->node(d, op, n_in, in, n_out, out, attrs) : CG_OP_ERROR;
}

static cg_op_status decomp_output(cg_decomp *d, int32_t i, int32_t v) {
    return d && d->iface ? d->iface->output(d, i, v) : CG_OP_ERROR;
}

static cg_host_api host_api;
static pthread_once_t host_api_once = PTHREAD_ONCE_INIT;

static void host_api_init(void) {
    host_api.struct_size = sizeof(cg_host_api);
    host_api.abi_major = CG_PLUGIN_ABI_MAJOR;
    host_api.abi_minor = CG_PLUGIN_ABI_MINOR;
    host_api.decomp_input = decomp_input;
    host_api.decomp_node = decomp_node;
    host_api.decomp_output = decomp_output;
    cg_backend_host_services(&host_api);
}

const cg_host_api *cg_host_api_get(void) {
    pthread_once(&host_api_once, host_api_init);
    return &host_api;
}
