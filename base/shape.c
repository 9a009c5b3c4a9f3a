#include "shape.h"

#include <stdarg.h>
#include <stdio.h>

#include "clgraph/clgraph.h"
#include "error.h"

int64_t cg_shape_numel(int ndim, const int64_t *dims) {
    if (ndim < 0 || ndim > CG_MAX_DIMS || (ndim > 0 && !dims)) return -1;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        if (dims[i] < 0) return -1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] != 0 && n > INT64_MAX / dims[i]) return -1;
        n *= dims[i];
    }
    return n;
}

int cg_shape_fits(int ndim, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] <= 0) continue;
        if (dims[i] > CG_MAX_NUMEL / n) return 0;
        n *= dims[i];
    }
    return 1;
}

size_t cg_desc_bytes(const cg_tensor_desc *d) {
    int64_t n = cg_shape_numel(d->ndim, d->dims);
    size_t es = cg_dtype_size((cg_dtype)d->dtype);
    if (n <= 0 || !es || (uint64_t)n > SIZE_MAX / es) return 0;
    return (size_t)n * es;
}

static void append(char *buf, size_t size, size_t *used, const char *fmt, ...) CG_PRINTF(4, 5);
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...) {
    size_t room = size > *used ? size - *used : 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(room ? buf + *used : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) *used += (size_t)n;
}

void cg_shape_format(char *buf, size_t size, int dtype, int ndim, const int64_t *dims,
                     const char *const *syms, int n_syms) {
    if (!buf || size == 0) return;
    buf[0] = '\0';
    size_t used = 0;
    if (dtype) append(buf, size, &used, "%s", cg_dtype_name((cg_dtype)dtype));
    append(buf, size, &used, "[");
    if (ndim < 0 || ndim > CG_MAX_DIMS || (ndim > 0 && !dims)) {
        append(buf, size, &used, "<invalid>]");
        return;
    }
    for (int i = 0; i < ndim; i++) {
        int64_t v = dims[i];
        const char *sep = i ? ", " : "";
        if (v >= 0) {
            append(buf, size, &used, "%s%lld", sep, (long long)v);
        } else if (v == CG_DIM_UNKNOWN) {
            append(buf, size, &used, "%s?", sep);
        } else {
            int64_t k = -2 - v;
            if (syms && k < n_syms) append(buf, size, &used, "%s%s", sep, syms[k]);
            else append(buf, size, &used, "%ss%lld", sep, (long long)k);
        }
    }
    append(buf, size, &used, "]");
}
