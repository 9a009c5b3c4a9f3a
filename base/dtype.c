/* Element types: names, sizes and the float conversions (public:
 * cg_dtype_name, cg_dtype_size). */
#include "dtype.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "clgraph/plugin.h"

/* cg_tensor_desc.dtype was a cg_op_dtype in ABI 1.0: the shared enum must
 * keep its size and the descriptor its layout. */
_Static_assert(sizeof(cg_dtype) == sizeof(int), "cg_dtype must stay int-sized");
_Static_assert(offsetof(cg_tensor_desc, ndim) == sizeof(int), "cg_tensor_desc layout changed");

static const struct {
    const char *name;
    size_t size;
} dtypes[] = {
    [CG_F32] = {"f32", 4},
    [CG_I32] = {"i32", 4},
    [CG_F16] = {"f16", 2},
    [CG_BF16] = {"bf16", 2},
    [CG_I8] = {"i8", 1},
    [CG_U8] = {"u8", 1},
    [CG_I64] = {"i64", 8},
    [CG_BOOL] = {"bool", 1},
    [CG_I16] = {"i16", 2},
    [CG_U16] = {"u16", 2},
    [CG_U32] = {"u32", 4},
    [CG_U64] = {"u64", 8},
    /* the narrow types: one byte per element in memory (dtype.h) */
    [CG_F8E4M3FN] = {"f8e4m3fn", 1},
    [CG_F8E4M3FNUZ] = {"f8e4m3fnuz", 1},
    [CG_F8E5M2] = {"f8e5m2", 1},
    [CG_F8E5M2FNUZ] = {"f8e5m2fnuz", 1},
    [CG_F8E8M0] = {"f8e8m0", 1},
    [CG_F4E2M1] = {"f4e2m1", 1},
    [CG_I4] = {"i4", 1},
    [CG_U4] = {"u4", 1},
    [CG_I2] = {"i2", 1},
    [CG_U2] = {"u2", 1},
};
#define N_DTYPES ((int)(sizeof dtypes / sizeof dtypes[0]))

int cg_dtype_valid(int t) { return t > 0 && t < N_DTYPES && dtypes[t].name; }

const char *cg_dtype_name(cg_dtype t) { return cg_dtype_valid((int)t) ? dtypes[t].name : "?"; }

size_t cg_dtype_size(cg_dtype t) { return cg_dtype_valid((int)t) ? dtypes[t].size : 0; }

cg_dtype cg_dtype_parse(const char *s, size_t len) {
    for (int t = 1; s && t < N_DTYPES; t++)
        if (dtypes[t].name && strlen(dtypes[t].name) == len && memcmp(dtypes[t].name, s, len) == 0) return (cg_dtype)t;
    return (cg_dtype)0;
}

const char *cg_dtype_all_names(void) {
    return "f32, i32, f16, bf16, i8, u8, i64, bool, i16, u16, u32, u64, f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, "
           "f8e8m0, f4e2m1, i4, u4, i2 or u2";
}

uint32_t cg_f16_to_f32_bits(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    if (exp == 0x1f) /* inf, or nan keeping its payload and quiet bit */
        return sign | 0x7f800000u | (mant << 13);
    if (exp != 0) return sign | ((exp + 112) << 23) | (mant << 13);
    if (mant == 0) return sign; /* +-0 */
    /* subnormal: mant * 2^-24; normalise so that the leading 1 is bit 10 */
    int e = -1;
    do {
        mant <<= 1;
        e++;
    } while (!(mant & 0x400));
    return sign | ((uint32_t)(112 - e) << 23) | ((mant & 0x3ff) << 13);
}

uint32_t cg_bf16_to_f32_bits(uint16_t h) { return (uint32_t)h << 16; }

/* v >> shift (1 <= shift <= 31), rounded to nearest, ties to even. */
static uint32_t shift_rne(uint32_t v, int shift) {
    uint32_t q = v >> shift, rem = v & ((UINT32_C(1) << shift) - 1);
    uint32_t half = UINT32_C(1) << (shift - 1);
    return q + (rem > half || (rem == half && (q & 1)));
}

uint16_t cg_f32_to_f16_bits(uint32_t f) {
    uint16_t sign = (uint16_t)((f >> 16) & 0x8000);
    int e = (int)((f >> 23) & 0xff); /* biased by 127 */
    uint32_t sig = f & 0x7fffff;
    if (e == 0xff) {
        if (!sig) return sign | 0x7c00;
        uint16_t r = (uint16_t)(0x7c00 | (sig >> 13));
        return sign | (r == 0x7c00 ? 0x7c01 : r); /* a payload only in the low bits: still a NaN */
    }
    if (e >= 143) return sign | 0x7c00; /* >= 2^16: past 65504 whatever the rounding */
    if (e >= 113)                       /* a normal half; a carry out of the mantissa bumps the exponent, up to inf */
        return sign | (uint16_t)((((uint32_t)(e - 112)) << 10) + shift_rne(sig, 13));
    /* A subnormal half m * 2^-24 (or 2^-14 after rounding up): with the
     * implicit bit, the value is full * 2^(e - 150), so m = full >> (126 - e).
     * Below 2^-25 (shift > 24) it rounds to zero. */
    int shift = 126 - e;
    if (shift > 24) return sign;
    return sign | (uint16_t)shift_rne(sig | 0x800000, shift);
}

uint16_t cg_f32_to_bf16_bits(uint32_t f) {
    if ((f & 0x7fffffff) > 0x7f800000) return (uint16_t)((f >> 16) & 0x8000) | 0x7fc0;
    /* adding 0x7fff plus the lowest kept bit rounds ties to even; a carry
     * may run into the exponent, up to infinity, which is right */
    return (uint16_t)((f + 0x7fff + ((f >> 16) & 1)) >> 16);
}

float cg_q8_row(const float *x, int64_t n, int8_t *q) {
    float amax = 0.0f;
    int finite = 1;
    for (int64_t i = 0; i < n; i++) {
        float a = x[i] < 0 ? -x[i] : x[i];
        if (!(a <= FLT_MAX)) finite = 0; /* NaN or infinity */
        else if (a > amax) amax = a;
    }
    if (!finite || amax == 0.0f) {
        for (int64_t i = 0; i < n; i++) q[i] = 0;
        return finite ? 0.0f : NAN;
    }
    /* 127 / amax rounded to f32 (in double first: it overflows f32 for a
     * tiny amax, whose rows take the slow exact path below). */
    const double inv_d = 127.0 / (double)amax;
    if (inv_d > 1e30) {
        for (int64_t i = 0; i < n; i++) {
            double r = nearbyint((double)x[i] * inv_d);
            q[i] = (int8_t)(r > 127 ? 127 : r < -127 ? -127 : r);
        }
        return amax / 127.0f;
    }
    /* |x inv| <= 127 (+ an ulp): adding and taking away 1.5 * 2^23 rounds
     * it to an integer, ties to even, in plain f32 arithmetic the compiler
     * vectorises (nearbyintf is a call on baseline x86-64). */
    const float inv = (float)inv_d, magic = 12582912.0f;
    for (int64_t i = 0; i < n; i++) {
        float r = (x[i] * inv + magic) - magic;
        r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
        q[i] = (int8_t)(int)r;
    }
    return amax / 127.0f;
}
