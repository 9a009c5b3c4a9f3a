/* Tensors as the Open Inference Protocol carries them: datatype names,
 * JSON data (row-major, flat or nested) and raw little-endian bytes (the
 * binary tensor extension). */
#ifndef CG_SERVE_SRV_TENSOR_H
#define CG_SERVE_SRV_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "clgraph/clgraph.h"
#include "srv_buf.h"

/* The protocol's name of a clgraph dtype ("FP32", "INT64", "BF16" ...);
 * NULL for one it has no name for (float8, 4- and 2-bit types). */
const char *srv_dtype_name(cg_dtype t);

/* The dtype of a protocol name; 0 for BYTES, FP64 and unknown names. */
cg_dtype srv_dtype_parse(const char *name);

/* A tensor of dtype t and shape dims[0..ndim) from JSON `data`: numbers
 * (true and false for BOOL) in row-major order, flat or nested arrays.
 * Each value must be exact in t (an integer in range for the integer
 * types; FP16 and BF16 round to nearest even as cg_tensor_convert does).
 * 0, or 400 with a message in err that names `input`. */
int srv_tensor_from_json(const cJSON *data, cg_dtype t, int ndim, const int64_t *dims, const char *input,
                         cg_tensor **out, char *err, size_t errsz);

/* Appends t's values to b as a flat JSON array (f32 and the 16-bit floats
 * with 9 significant digits, enough to read back the same f32). */
void srv_tensor_to_json(const cg_tensor *t, srv_buf *b);

#endif
