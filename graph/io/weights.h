/* Internal access to an open safetensors file (graph/safetensors.c) for the
 * binder and the executor. Tensors are indexed in name order (the order of
 * cg_weights_name). */
#ifndef CG_GRAPH_WEIGHTS_H
#define CG_GRAPH_WEIGHTS_H

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h"

#include <stddef.h>

/* Index of the tensor called `name`, or -1 (binary search, O(log n)). */
int cg_weights_find(const cg_weights *w, const char *name);

/* Dtype and shape tensor i will have once viewed (F16/BF16/F32 -> F32,
 * I32/I64 -> I32), without touching its data. CG_ERR_INVALID_ARGUMENT if
 * i is out of range. */
cg_status cg_weights_desc(const cg_weights *w, size_t i, cg_tensor_desc *desc_out);

/* Path the file was opened with, for messages. */
const char *cg_weights_path(const cg_weights *w);

/*
 * Zero-copy access for the executor. Fills *desc_out and points *data_out at
 * row-major F32 or I32 host data that stays valid until cg_weights_free:
 *  - F32 / I32 stored 4-byte aligned: the memory-mapped bytes themselves;
 *  - F16, BF16 (-> F32, exact), I64 (-> I32, range checked), or misaligned
 *    F32 / I32: converted on first access into a buffer owned by `w`, which
 *    later calls return again.
 * Safe to call from several threads on the same weights.
 * CG_ERR_NOT_FOUND for an unknown name; CG_ERR_UNSUPPORTED if an I64 value
 * does not fit in I32 (the message names the tensor and the element).
 */
cg_status cg_weights_view(cg_weights *w, const char *name, cg_tensor_desc *desc_out,
                          const void **data_out);

#endif
