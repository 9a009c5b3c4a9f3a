/* Internal access to an open safetensors file (graph/io/safetensors.c) for
 * the binder and the executor. Tensors are indexed in name order (the order
 * of cg_weights_name). */
#ifndef CG_GRAPH_WEIGHTS_H
#define CG_GRAPH_WEIGHTS_H

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h"

#include <stddef.h>

/* The largest JSON header the format allows (the reference implementation's
 * MAX_HEADER_SIZE): the reader refuses, and the writer never writes, more. */
#define CG_ST_MAX_HEADER_LEN 100000000ull

/* The format's name of a dtype ("F32", "BF16", "BOOL"), or NULL. */
const char *cg_st_dtype_name(cg_dtype t);

/* Weights held in memory, copied from `tensors` (the caller keeps them):
 * what an imported model (ONNX initializers) binds; `label` stands for the
 * path in messages. Names must be distinct. */
cg_status cg_weights_from_tensors(const char *label, int n, const char *const *names, const cg_tensor *const *tensors,
                                  cg_weights **out);

/* Index of the tensor called `name`, or -1 (binary search, O(log n)). */
int cg_weights_find(const cg_weights *w, const char *name);

/* Stored dtype and shape of tensor i, without touching its data.
 * CG_ERR_INVALID_ARGUMENT if i is out of range. */
cg_status cg_weights_stored_desc(const cg_weights *w, size_t i, cg_tensor_desc *desc_out);

/* Dtype and shape tensor i has through cg_weights_view and cg_weights_get
 * (F16/BF16/F32 -> F32, I32/I64 -> I32, others as stored), without
 * touching its data. CG_ERR_INVALID_ARGUMENT if i is out of range. */
cg_status cg_weights_desc(const cg_weights *w, size_t i, cg_tensor_desc *desc_out);

/* Path the file was opened with, for messages. */
const char *cg_weights_path(const cg_weights *w);

/* 1 when a tensor stored as `stored` is viewed as `want`: the same dtype,
 * F16 or BF16 as F32 (exact), I64 as I32 (range checked), or F32 as F16 or
 * BF16 (rounded to nearest even: weights taken in 16 bits at load); what a
 * param declared `want` accepts. */
int cg_weights_viewable(cg_dtype stored, cg_dtype want);

/*
 * Zero-copy access for the binder and the executor, as the dtype the caller
 * declared. Fills *desc_out (dtype `want`, the stored shape) and points
 * *data_out at row-major host data that stays valid until cg_weights_free:
 *  - want is the stored dtype, stored aligned to its element size (on a
 *    little-endian host): the memory-mapped bytes themselves;
 *  - F16 or BF16 as F32 (exact), I64 as I32 (range checked), or the stored
 *    dtype misaligned: converted on first access into a buffer owned by
 *    `w`, which later calls return again.
 * A BOOL tensor's bytes are checked to be 0 or 1 on first access.
 * Safe to call from several threads on the same weights.
 * CG_ERR_NOT_FOUND for an unknown name; CG_ERR_UNSUPPORTED when `want` is
 * not viewable from the stored dtype (cg_weights_viewable) or an I64 value
 * does not fit in I32 (the message names the file, tensor and element);
 * CG_ERR_FORMAT for a BOOL byte other than 0 or 1.
 */
cg_status cg_weights_view_as(cg_weights *w, const char *name, cg_dtype want, cg_tensor_desc *desc_out,
                             const void **data_out);

/* cg_weights_view_as with `want` the dtype cg_weights_desc gives (F32 for
 * F16/BF16/F32, I32 for I32/I64, the stored dtype otherwise): the view of
 * callers that declare no dtype of their own. */
cg_status cg_weights_view(cg_weights *w, const char *name, cg_tensor_desc *desc_out, const void **data_out);

#endif
