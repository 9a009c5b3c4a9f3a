/* Internal layout of cg_tensor, shared by the I/O readers and the executor. */
#ifndef CG_GRAPH_TENSOR_H
#define CG_GRAPH_TENSOR_H

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h"
#include "shape.h"

struct cg_tensor {
    cg_dtype dtype;
    int ndim;
    int64_t dims[CG_MAX_DIMS];
    void *data;     /* numel * dtype size bytes, 64-byte aligned unless borrowed */
    int borrowed;   /* cg_tensor_wrap: data is the caller's, aligned to the element size only */
    uint64_t stamp; /* unique per tensor and write access (cg_tensor_touch): equal stamps, same contents */
};

/* A fresh stamp; never 0. */
uint64_t cg_tensor_new_stamp(void);

/* Allocates a tensor with uninitialised data (cg_tensor_create zeroes it).
 * Fails with a message on a bad shape or an overflowing size. */
cg_status cg_tensor_alloc(cg_dtype dtype, int ndim, const int64_t *dims, cg_tensor **out);

typedef enum cg_conv_result {
    CG_CONV_OK = 0,
    CG_CONV_UNSUPPORTED, /* a pair cg_tensor_convert does not convert */
    CG_CONV_RANGE        /* an integer out of the target's range: see bad_index, bad_value */
} cg_conv_result;

/* Converts n elements of dtype `from` at src (host order, any alignment)
 * into dtype `to` at dst, by cg_tensor_convert's rules; sets no message, so
 * that each caller names its own tensor, file and element. On
 * CG_CONV_RANGE the element's index is *bad_index and its value in decimal
 * (a u64 past int64's range included) is bad_value. */
#define CG_CONV_VALUE_LEN 24
cg_conv_result cg_convert_elems(cg_dtype from, const void *src, cg_dtype to, void *dst, int64_t n, int64_t *bad_index,
                                char bad_value[CG_CONV_VALUE_LEN]);

#endif
