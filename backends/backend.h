/* The backend interface: what the layers above (graph/, seq2seq/, tools/)
 * know of devices. */
#ifndef CG_BACKEND_H
#define CG_BACKEND_H

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h"

/* Fills the backends' services in the plugin host API: SGEMM on host
 * memory, and the OpenCL services of kernels written for OpenCL devices. */
void cg_backend_host_services(cg_host_api *api);

#endif
