/*
 * Conversions between dtypes: cg_tensor_convert and the element loop the
 * readers share (safetensors views of F16/BF16/I64 weights).
 *
 * Only conversions that lose nothing unnoticed are made: f16 and bf16 widen
 * to f32 exactly; integers and bools convert among themselves with every
 * value checked against the target's range (the first one out of range is
 * reported by index); and f32 narrows to f16 / bf16 rounded to nearest even,
 * the one rounding conversion, which callers that need exactness refuse
 * through cg_dtype_convert_exact. Elements are read and written with memcpy,
 * so the source may be unaligned (a memory-mapped file).
 */
#include "tensor.h"

#include "dtype.h"
#include "error.h"
#include "narrow.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int is_float(cg_dtype t) { return t == CG_F32 || t == CG_F16 || t == CG_BF16 || cg_dtype_is_narrow_float(t); }

static int is_integer(cg_dtype t) { return !is_float(t) && cg_dtype_valid((int)t); }

/* The range of an integer dtype; u64's top half is past int64_t and is
 * refused by the caller before this range is consulted. */
static void int_range(cg_dtype t, int64_t *lo, int64_t *hi) {
    switch (t) {
    case CG_I64: *lo = INT64_MIN, *hi = INT64_MAX; return;
    case CG_U64: *lo = 0, *hi = INT64_MAX; return;
    case CG_I32: *lo = INT32_MIN, *hi = INT32_MAX; return;
    case CG_U32: *lo = 0, *hi = UINT32_MAX; return;
    case CG_I16: *lo = INT16_MIN, *hi = INT16_MAX; return;
    case CG_U16: *lo = 0, *hi = UINT16_MAX; return;
    case CG_I8: *lo = INT8_MIN, *hi = INT8_MAX; return;
    case CG_U8: *lo = 0, *hi = UINT8_MAX; return;
    case CG_I4: *lo = -8, *hi = 7; return;
    case CG_U4: *lo = 0, *hi = 15; return;
    case CG_I2: *lo = -2, *hi = 1; return;
    case CG_U2: *lo = 0, *hi = 3; return;
    default: *lo = 0, *hi = 1; return; /* CG_BOOL */
    }
}

/* Element p of integer dtype t; *big is set for a u64 past INT64_MAX. */
static int64_t get_int(cg_dtype t, const unsigned char *p, int *big) {
    int64_t v64;
    uint64_t u64;
    int32_t v32;
    uint32_t u32;
    int16_t v16;
    uint16_t u16;
    int8_t v8;
    *big = 0;
    switch (t) {
    case CG_I64: memcpy(&v64, p, 8); return v64;
    case CG_U64:
        memcpy(&u64, p, 8);
        *big = u64 > INT64_MAX;
        return (int64_t)(u64 & INT64_MAX);
    case CG_I32: memcpy(&v32, p, 4); return v32;
    case CG_U32: memcpy(&u32, p, 4); return u32;
    case CG_I16: memcpy(&v16, p, 2); return v16;
    case CG_U16: memcpy(&u16, p, 2); return u16;
    case CG_I8:
    case CG_I4:
    case CG_I2: memcpy(&v8, p, 1); return v8; /* the 4- and 2-bit types held as an int8 */
    default: return *p;                       /* CG_U8, CG_BOOL, CG_U4, CG_U2 */
    }
}

/* Stores v (in t's range) little end first in the host's order. */
static void put_int(cg_dtype t, unsigned char *p, int64_t v) {
    int32_t v32 = (int32_t)v;
    int16_t v16 = (int16_t)v;
    switch (cg_dtype_size(t)) {
    case 8: memcpy(p, &v, 8); return;
    case 4: memcpy(p, &v32, 4); return;
    case 2: memcpy(p, &v16, 2); return;
    default: *p = (unsigned char)v; return;
    }
}

int cg_dtype_convert_exact(cg_dtype from, cg_dtype to) {
    if (!cg_dtype_valid((int)from) || !cg_dtype_valid((int)to)) return 0;
    return from == to || (to == CG_F32 && (from == CG_F16 || from == CG_BF16 || cg_dtype_is_narrow_float(from))) ||
           (is_integer(from) && is_integer(to));
}

static int convertible(cg_dtype from, cg_dtype to) {
    return cg_dtype_convert_exact(from, to) ||
           (from == CG_F32 && (to == CG_F16 || to == CG_BF16 || cg_dtype_is_narrow_float(to)));
}

/* Floats: 16-bit and narrow formats to f32, f32 to them (narrow: as the
 * cast op does by default, saturating, f8e8m0 rounded up). */
static void convert_floats(cg_dtype from, const unsigned char *src, cg_dtype to, unsigned char *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (cg_dtype_is_narrow_float(from)) {
            float f = cg_narrow_to_f32(from, src[i]);
            memcpy(dst + 4 * i, &f, 4);
        } else if (cg_dtype_is_narrow_float(to)) {
            float f;
            memcpy(&f, src + 4 * i, 4);
            dst[i] = cg_f32_to_narrow(to, f, 1, CG_E8M0_UP);
        } else if (to == CG_F32) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            uint32_t f = from == CG_F16 ? cg_f16_to_f32_bits(h) : cg_bf16_to_f32_bits(h);
            memcpy(dst + 4 * i, &f, 4);
        } else {
            uint32_t f;
            memcpy(&f, src + 4 * i, 4);
            uint16_t h = to == CG_F16 ? cg_f32_to_f16_bits(f) : cg_f32_to_bf16_bits(f);
            memcpy(dst + 2 * i, &h, 2);
        }
    }
}

cg_conv_result cg_convert_elems(cg_dtype from, const void *src, cg_dtype to, void *dst, int64_t n, int64_t *bad_index,
                                char bad_value[CG_CONV_VALUE_LEN]) {
    const unsigned char *s = src;
    unsigned char *d = dst;
    if (!convertible(from, to)) return CG_CONV_UNSUPPORTED;
    if (from == to) {
        if (n > 0) memcpy(d, s, (size_t)n * cg_dtype_size(from));
        return CG_CONV_OK;
    }
    if (!is_integer(from)) {
        convert_floats(from, s, to, d, n);
        return CG_CONV_OK;
    }
    size_t fs = cg_dtype_size(from), ts = cg_dtype_size(to);
    int64_t lo, hi;
    int_range(to, &lo, &hi);
    for (int64_t i = 0; i < n; i++) {
        int big;
        int64_t v = get_int(from, s + fs * (size_t)i, &big);
        if (big || v < lo || v > hi) {
            *bad_index = i;
            if (big) snprintf(bad_value, CG_CONV_VALUE_LEN, "%" PRIu64, (uint64_t)v | ((uint64_t)1 << 63));
            else snprintf(bad_value, CG_CONV_VALUE_LEN, "%" PRId64, v);
            return CG_CONV_RANGE;
        }
        put_int(to, d + ts * (size_t)i, v);
    }
    return CG_CONV_OK;
}

cg_status cg_tensor_convert(const cg_tensor *t, cg_dtype to, cg_tensor **out) {
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_tensor_convert: NULL output pointer");
    *out = NULL;
    if (!t) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_tensor_convert: NULL tensor");
    if (!cg_dtype_valid((int)to))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_tensor_convert: invalid dtype %d", (int)to);
    char shape[160];
    cg_shape_format(shape, sizeof shape, t->dtype, t->ndim, t->dims, NULL, 0);
    if (!convertible(t->dtype, to))
        return cg_error(CG_ERR_UNSUPPORTED,
                        "cannot convert tensor %s to %s (converted: f16, bf16 and the float8 and "
                        "float4 types to f32, f32 to them, and among the integer types and bool)",
                        shape, cg_dtype_name(to));
    cg_tensor *r;
    cg_status s = cg_tensor_alloc(to, t->ndim, t->dims, &r);
    if (s != CG_OK) return s;
    int64_t bad = 0;
    char val[CG_CONV_VALUE_LEN];
    if (cg_convert_elems(t->dtype, t->data, to, r->data, cg_shape_numel(t->ndim, t->dims), &bad, val) != CG_CONV_OK) {
        cg_tensor_free(r);
        return cg_error(CG_ERR_UNSUPPORTED,
                        "cannot convert tensor %s to %s: element %" PRId64 " has value %s"
                        ", which does not fit in %s",
                        shape, cg_dtype_name(to), bad, val, cg_dtype_name(to));
    }
    *out = r;
    return CG_OK;
}

cg_status cg_tensor_quantize_rows(const cg_tensor *t, cg_tensor **q_out, cg_tensor **scale_out) {
    if (!q_out || !scale_out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_tensor_quantize_rows: NULL output pointer");
    *q_out = *scale_out = NULL;
    if (!t) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_tensor_quantize_rows: NULL tensor");
    char shape[160];
    cg_shape_format(shape, sizeof shape, t->dtype, t->ndim, t->dims, NULL, 0);
    if (t->dtype != CG_F32 || t->ndim != 2)
        return cg_error(CG_ERR_UNSUPPORTED, "cannot quantize tensor %s to int8 rows: it must be f32 with 2 dims",
                        shape);
    cg_tensor *q = NULL, *sc = NULL;
    cg_status s = cg_tensor_alloc(CG_I8, 2, t->dims, &q);
    if (s == CG_OK) s = cg_tensor_alloc(CG_F32, 1, t->dims, &sc);
    const int64_t rows = t->dims[0], cols = t->dims[1];
    for (int64_t r = 0; s == CG_OK && r < rows; r++) {
        const float v = cg_q8_row((const float *)t->data + r * cols, cols, (int8_t *)q->data + r * cols);
        if (v != v)
            s = cg_error(CG_ERR_UNSUPPORTED,
                         "cannot quantize tensor %s to int8 rows: row %" PRId64 " holds a NaN or an infinity", shape,
                         r);
        ((float *)sc->data)[r] = v;
    }
    if (s != CG_OK) {
        cg_tensor_free(q);
        cg_tensor_free(sc);
        return s;
    }
    *q_out = q;
    *scale_out = sc;
    return CG_OK;
}
