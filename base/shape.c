#include "shape.h"

#include <string.h>

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

/* Appends s, cut to what fits (buf stays NUL-terminated). No printf: a
 * printf through glibc costs several times more once any library in the
 * process has registered a printf specifier (libquadmath, under OpenBLAS,
 * does), and `clgraph check` formats a type for every value. */
static void put(char *buf, size_t size, size_t *used, const char *s) {
    size_t n = strlen(s);
    if (*used < size) {
        size_t room = size - 1 - *used, k = n < room ? n : room;
        memcpy(buf + *used, s, k);
        buf[*used + k] = '\0';
    }
    *used += n;
}

static void put_int(char *buf, size_t size, size_t *used, const char *sep, long long v) {
    char tmp[24];
    int i = (int)sizeof tmp;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    tmp[--i] = '\0';
    do tmp[--i] = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0) tmp[--i] = '-';
    put(buf, size, used, sep);
    put(buf, size, used, tmp + i);
}

void cg_shape_format(char *buf, size_t size, int dtype, int ndim, const int64_t *dims, const char *const *syms,
                     int n_syms) {
    if (!buf || size == 0) return;
    buf[0] = '\0';
    size_t used = 0;
    if (dtype) put(buf, size, &used, cg_dtype_name((cg_dtype)dtype));
    put(buf, size, &used, "[");
    if (ndim < 0 || ndim > CG_MAX_DIMS || (ndim > 0 && !dims)) {
        put(buf, size, &used, "<invalid>]");
        return;
    }
    for (int i = 0; i < ndim; i++) {
        int64_t v = dims[i];
        const char *sep = i ? ", " : "";
        if (v >= 0) {
            put_int(buf, size, &used, sep, (long long)v);
        } else if (v == CG_DIM_UNKNOWN) {
            put(buf, size, &used, sep);
            put(buf, size, &used, "?");
        } else {
            int64_t k = -2 - v;
            if (syms && k < n_syms) {
                put(buf, size, &used, sep);
                put(buf, size, &used, syms[k]);
            } else {
                put(buf, size, &used, sep);
                put_int(buf, size, &used, "s", (long long)k);
            }
        }
    }
    put(buf, size, &used, "]");
}
