/* Dense host tensors: allocation, shape helpers and the public accessors. */
#include "tensor.h"

#include "mem.h"
#include "error.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stamps come from one counter, so a tensor allocated where a freed one
 * lived never inherits its stamp. */
static atomic_uint_fast64_t stamp_counter;

uint64_t cg_tensor_new_stamp(void) { return (uint64_t)atomic_fetch_add(&stamp_counter, 1) + 1; }

/* Appends printf output at *used, never writing past `size`; *used keeps
 * counting so later appends are harmless once the buffer is full. */

/* Checks a dtype and shape for a tensor; *bytes gets its size. */
static cg_status tensor_shape_check(cg_dtype dtype, int ndim, const int64_t *dims, size_t *bytes) {
    size_t esize = cg_dtype_size(dtype);
    if (esize == 0) return cg_error(CG_ERR_INVALID_ARGUMENT, "tensor: invalid dtype %d", (int)dtype);
    if (ndim < 0 || ndim > CG_MAX_DIMS)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "tensor: %d dimensions out of range (0..%d)", ndim, CG_MAX_DIMS);
    if (ndim > 0 && !dims) return cg_error(CG_ERR_INVALID_ARGUMENT, "tensor: NULL dims for %d dimensions", ndim);
    for (int i = 0; i < ndim; i++)
        if (dims[i] < 0)
            return cg_error(CG_ERR_INVALID_ARGUMENT, "tensor: dimension %d is negative (%lld)", i, (long long)dims[i]);
    int64_t numel = cg_shape_numel(ndim, dims);
    if (numel < 0 || (uint64_t)numel > (uint64_t)(PTRDIFF_MAX / 2) / esize) {
        char shape[160];
        cg_shape_format(shape, sizeof shape, dtype, ndim, dims, NULL, 0);
        return cg_error(CG_ERR_INVALID_ARGUMENT, "tensor: %s is too large (size overflows)", shape);
    }
    *bytes = (size_t)numel * esize;
    return CG_OK;
}

/* A tensor struct for dtype and shape (checked), its data still NULL. */
static cg_status tensor_head(cg_dtype dtype, int ndim, const int64_t *dims, size_t *bytes, cg_tensor **out) {
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "tensor: NULL output pointer");
    *out = NULL;
    cg_status s = tensor_shape_check(dtype, ndim, dims, bytes);
    if (s != CG_OK) return s;
    cg_tensor *t = calloc(1, sizeof *t);
    if (!t) return cg_error(CG_ERR_NO_MEMORY, "tensor: out of memory");
    t->dtype = dtype;
    t->ndim = ndim;
    t->stamp = cg_tensor_new_stamp();
    for (int i = 0; i < ndim; i++) t->dims[i] = dims[i];
    *out = t;
    return CG_OK;
}

cg_status cg_tensor_alloc(cg_dtype dtype, int ndim, const int64_t *dims, cg_tensor **out) {
    size_t bytes;
    cg_status s = tensor_head(dtype, ndim, dims, &bytes, out);
    if (s != CG_OK) return s;
    cg_tensor *t = *out;
    t->data = cg_aligned_alloc(bytes);
    if (!t->data) {
        free(t);
        *out = NULL;
        char shape[160];
        cg_shape_format(shape, sizeof shape, dtype, ndim, dims, NULL, 0);
        return cg_error(CG_ERR_NO_MEMORY, "tensor: out of memory allocating %zu bytes for %s", bytes, shape);
    }
    return CG_OK;
}

cg_status cg_tensor_wrap(cg_dtype dtype, int ndim, const int64_t *dims, void *data, cg_tensor **out) {
    size_t bytes;
    cg_status s = tensor_head(dtype, ndim, dims, &bytes, out);
    if (s != CG_OK) return s;
    size_t align = cg_dtype_size(dtype);
    const char *why = !data && bytes ? "NULL data" : data && (uintptr_t)data % align ? "data not aligned" : NULL;
    if (why) {
        free(*out);
        *out = NULL;
        char shape[160];
        cg_shape_format(shape, sizeof shape, dtype, ndim, dims, NULL, 0);
        return cg_error(CG_ERR_INVALID_ARGUMENT, "tensor: cannot wrap %s for %s (%zu-byte elements)", why, shape,
                        align);
    }
    (*out)->data = data;
    (*out)->borrowed = 1;
    return CG_OK;
}

cg_status cg_tensor_create(cg_dtype dtype, int ndim, const int64_t *dims, cg_tensor **out) {
    cg_status s = cg_tensor_alloc(dtype, ndim, dims, out);
    if (s != CG_OK) return s;
    memset((*out)->data, 0, (size_t)cg_tensor_numel(*out) * cg_dtype_size(dtype));
    return CG_OK;
}

void cg_tensor_free(cg_tensor *t) {
    if (!t) return;
    if (!t->borrowed) cg_aligned_free(t->data);
    free(t);
}

cg_dtype cg_tensor_dtype(const cg_tensor *t) { return t ? t->dtype : (cg_dtype)0; }

int cg_tensor_ndim(const cg_tensor *t) { return t ? t->ndim : 0; }

int64_t cg_tensor_dim(const cg_tensor *t, int i) {
    if (!t || i < 0 || i >= t->ndim) return 0;
    return t->dims[i];
}

int64_t cg_tensor_numel(const cg_tensor *t) {
    if (!t) return 0;
    int64_t n = cg_shape_numel(t->ndim, t->dims);
    return n < 0 ? 0 : n;
}

void *cg_tensor_data(cg_tensor *t) {
    if (!t) return NULL;
    t->stamp = cg_tensor_new_stamp();
    return t->data;
}

void cg_tensor_touch(cg_tensor *t) {
    if (t) t->stamp = cg_tensor_new_stamp();
}

const void *cg_tensor_data_const(const cg_tensor *t) { return t ? t->data : NULL; }
