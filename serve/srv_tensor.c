#include "srv_tensor.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct {
    cg_dtype t;
    const char *name;
} srv_names[] = {
    {CG_BOOL, "BOOL"}, {CG_U8, "UINT8"},  {CG_U16, "UINT16"}, {CG_U32, "UINT32"}, {CG_U64, "UINT64"}, {CG_I8, "INT8"},
    {CG_I16, "INT16"}, {CG_I32, "INT32"}, {CG_I64, "INT64"},  {CG_F16, "FP16"},   {CG_F32, "FP32"},   {CG_BF16, "BF16"},
};

const char *srv_dtype_name(cg_dtype t) {
    for (size_t i = 0; i < sizeof srv_names / sizeof srv_names[0]; i++)
        if (srv_names[i].t == t) return srv_names[i].name;
    return NULL;
}

cg_dtype srv_dtype_parse(const char *name) {
    for (size_t i = 0; name && i < sizeof srv_names / sizeof srv_names[0]; i++)
        if (!strcmp(srv_names[i].name, name)) return srv_names[i].t;
    return (cg_dtype)0;
}

/* Range of the integer types (as doubles: every bound but the 64-bit ones
 * is exact, and those are checked against 2^63 and 2^64 by the caller's
 * comparison with < ). */
static int srv_int_range(cg_dtype t, double *lo, double *hi) {
    switch (t) {
    case CG_BOOL: *lo = 0, *hi = 1; return 1;
    case CG_U8: *lo = 0, *hi = 255; return 1;
    case CG_U16: *lo = 0, *hi = 65535; return 1;
    case CG_U32: *lo = 0, *hi = 4294967295.0; return 1;
    case CG_U64: *lo = 0, *hi = 18446744073709551615.0; return 1;
    case CG_I8: *lo = -128, *hi = 127; return 1;
    case CG_I16: *lo = -32768, *hi = 32767; return 1;
    case CG_I32: *lo = -2147483648.0, *hi = 2147483647.0; return 1;
    case CG_I64: *lo = -9223372036854775808.0, *hi = 9223372036854775807.0; return 1;
    default: return 0;
    }
}

typedef struct srv_fill {
    cg_dtype t;
    void *data;      /* the tensor's, or the f32 staging tensor's for FP16 / BF16 */
    int64_t n, have; /* elements wanted, elements written */
    const char *input;
    char *err;
    size_t errsz;
} srv_fill;

/* One value into element f->have. */
static int srv_fill_one(srv_fill *f, const cJSON *v) {
    double x;
    if (cJSON_IsBool(v) && f->t == CG_BOOL) x = cJSON_IsTrue(v);
    else if (cJSON_IsNumber(v)) x = v->valuedouble;
    else {
        snprintf(f->err, f->errsz, "input '%s': element %lld is not a number", f->input, (long long)f->have);
        return 400;
    }
    double lo, hi;
    if (srv_int_range(f->t, &lo, &hi)) {
        /* cJSON reads numbers as doubles: integers past 2^53 arrive rounded,
         * and the upper 64-bit bounds round up to 2^63 / 2^64 (refused). */
        if (!(x >= lo && x <= hi) || x != floor(x) || (f->t == CG_I64 && x >= 9223372036854775808.0) ||
            (f->t == CG_U64 && x >= 18446744073709551616.0)) {
            snprintf(f->err, f->errsz, "input '%s': element %lld (%.17g) is not a %s", f->input, (long long)f->have, x,
                     srv_dtype_name(f->t));
            return 400;
        }
    }
    int64_t k = f->have++;
    switch (f->t) {
    case CG_BOOL:
    case CG_U8: ((uint8_t *)f->data)[k] = (uint8_t)x; break;
    case CG_U16: ((uint16_t *)f->data)[k] = (uint16_t)x; break;
    case CG_U32: ((uint32_t *)f->data)[k] = (uint32_t)x; break;
    case CG_U64: ((uint64_t *)f->data)[k] = (uint64_t)x; break;
    case CG_I8: ((int8_t *)f->data)[k] = (int8_t)x; break;
    case CG_I16: ((int16_t *)f->data)[k] = (int16_t)x; break;
    case CG_I32: ((int32_t *)f->data)[k] = (int32_t)x; break;
    case CG_I64: ((int64_t *)f->data)[k] = (int64_t)x; break;
    default: ((float *)f->data)[k] = (float)x; break; /* FP32, and FP16 / BF16 staged as f32 */
    }
    return 0;
}

/* Row-major walk of nested arrays (their depth is bounded by the request's
 * JSON depth limit). */
static int srv_fill_walk(srv_fill *f, const cJSON *v) {
    if (!cJSON_IsArray(v)) {
        if (f->have >= f->n) {
            snprintf(f->err, f->errsz, "input '%s': more values than its shape holds (%lld)", f->input,
                     (long long)f->n);
            return 400;
        }
        return srv_fill_one(f, v);
    }
    for (const cJSON *c = v->child; c; c = c->next) {
        int rc = srv_fill_walk(f, c);
        if (rc) return rc;
    }
    return 0;
}

int srv_tensor_from_json(const cJSON *data, cg_dtype t, int ndim, const int64_t *dims, const char *input,
                         cg_tensor **out, char *err, size_t errsz) {
    *out = NULL;
    const int half = t == CG_F16 || t == CG_BF16;
    cg_tensor *x = NULL;
    if (cg_tensor_create(half ? CG_F32 : t, ndim, dims, &x)) {
        snprintf(err, errsz, "input '%s': %s", input, cg_last_error());
        return 400;
    }
    srv_fill f = {t, cg_tensor_data(x), cg_tensor_numel(x), 0, input, err, errsz};
    int rc = srv_fill_walk(&f, data);
    if (!rc && f.have != f.n) {
        snprintf(err, errsz, "input '%s': %lld values for a shape of %lld", input, (long long)f.have, (long long)f.n);
        rc = 400;
    }
    if (!rc && half) {
        cg_tensor *h = NULL;
        if (cg_tensor_convert(x, t, &h)) {
            snprintf(err, errsz, "input '%s': %s", input, cg_last_error());
            rc = 400;
        }
        cg_tensor_free(x);
        x = h;
    }
    if (rc) {
        cg_tensor_free(x);
        return rc;
    }
    *out = x;
    return 0;
}

static void srv_json_elem(srv_buf *b, const void *d, cg_dtype t, int64_t k) {
    switch (t) {
    case CG_BOOL: srv_buf_puts(b, ((const uint8_t *)d)[k] ? "true" : "false"); return;
    case CG_U8: srv_buf_printf(b, "%u", (unsigned)((const uint8_t *)d)[k]); return;
    case CG_U16: srv_buf_printf(b, "%u", (unsigned)((const uint16_t *)d)[k]); return;
    case CG_U32: srv_buf_printf(b, "%lu", (unsigned long)((const uint32_t *)d)[k]); return;
    case CG_U64: srv_buf_printf(b, "%llu", (unsigned long long)((const uint64_t *)d)[k]); return;
    case CG_I8: srv_buf_printf(b, "%d", (int)((const int8_t *)d)[k]); return;
    case CG_I16: srv_buf_printf(b, "%d", (int)((const int16_t *)d)[k]); return;
    case CG_I32: srv_buf_printf(b, "%ld", (long)((const int32_t *)d)[k]); return;
    case CG_I64: srv_buf_printf(b, "%lld", (long long)((const int64_t *)d)[k]); return;
    default: break;
    }
    float v = ((const float *)d)[k];
    /* JSON has no NaN or infinity: null, as Python's json module would not
     * write them either (allow_nan aside) */
    if (isfinite(v)) srv_buf_printf(b, "%.9g", (double)v);
    else srv_buf_puts(b, "null");
}

void srv_tensor_to_json(const cg_tensor *t, srv_buf *b) {
    cg_tensor *wide = NULL;
    cg_dtype dt = cg_tensor_dtype(t);
    if (dt == CG_F16 || dt == CG_BF16) {
        if (cg_tensor_convert(t, CG_F32, &wide)) {
            b->failed = 1;
            return;
        }
        t = wide;
        dt = CG_F32;
    }
    const void *d = cg_tensor_data_const(t);
    const int64_t n = cg_tensor_numel(t);
    srv_buf_add(b, "[", 1);
    for (int64_t k = 0; k < n; k++) {
        if (k) srv_buf_add(b, ",", 1);
        srv_json_elem(b, d, dt, k);
    }
    srv_buf_add(b, "]", 1);
    cg_tensor_free(wide);
}
