/* The decomposition of an op as a reference for its kernels (conform.c):
 * an independent computation, so a bug both of an op's kernels share
 * shows up. */
#ifndef CG_GRAPH_CONFORM_DECOMP_REF_H
#define CG_GRAPH_CONFORM_DECOMP_REF_H

#include "registry.h"

/* Runs op's decomposition (def->decompose) on the CPU for one conformance
 * case: a one-node graph of the case's inputs and attributes, planned in a
 * view of ctx where op has no kernel, so the scheduler expands it into the
 * ops it emits. `out` are the outputs' descriptors as infer gave them;
 * `ref_out[i]` (cg_desc_bytes(&out[i]) each) receive the values. An output
 * of another dtype or shape is an error naming it. On failure the message
 * is in msg. */
cg_status cg_conform_decomp_run(const cg_context *ctx, const cg_op_entry *op, const cg_conform_case *c,
                                const cg_tensor_desc *out, const void *const *host_in, void *const *ref_out, char *msg,
                                size_t msz);

#endif
