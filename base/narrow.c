/* The narrow element types: values, conversions, packing (narrow.h). */
#include "narrow.h"

#include <math.h>
#include <string.h>

int cg_dtype_is_narrow(cg_dtype t) { return (int)t >= (int)CG_F8E4M3FN && (int)t <= (int)CG_U2; }

int cg_dtype_is_narrow_float(cg_dtype t) { return (int)t >= (int)CG_F8E4M3FN && (int)t <= (int)CG_F4E2M1; }

int cg_dtype_packed_bits(cg_dtype t) {
    return t == CG_I4 || t == CG_U4 || t == CG_F4E2M1 ? 4 : t == CG_I2 || t == CG_U2 ? 2 : 8;
}

size_t cg_narrow_packed_bytes(cg_dtype t, int64_t n) {
    int per = 8 / cg_dtype_packed_bits(t);
    return (size_t)((n + per - 1) / per);
}

/* The small float formats: the mantissa width, the exponent bias, where
 * the sign bit is, the largest finite magnitude code, and how the top codes
 * are used. */
typedef enum { K_FN, K_FNUZ, K_IEEE, K_F4 } mini_kind;
typedef struct {
    int mbits, bias, sign_bit;
    uint32_t max_code;
    mini_kind kind;
} mini;

static const mini *mini_of(cg_dtype t) {
    static const mini e4m3fn = {3, 7, 7, 0x7E, K_FN}, e4m3fnuz = {3, 8, 7, 0x7F, K_FNUZ},
                      e5m2 = {2, 15, 7, 0x7B, K_IEEE}, e5m2fnuz = {2, 16, 7, 0x7F, K_FNUZ}, e2m1 = {1, 1, 3, 0x7, K_F4};
    switch (t) {
    case CG_F8E4M3FN: return &e4m3fn;
    case CG_F8E4M3FNUZ: return &e4m3fnuz;
    case CG_F8E5M2: return &e5m2;
    case CG_F8E5M2FNUZ: return &e5m2fnuz;
    default: return &e2m1;
    }
}

static float from_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static uint32_t to_bits(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static float mini_to_f32(const mini *f, uint8_t v) {
    const uint32_t sign = (uint32_t)(v >> f->sign_bit & 1) << 31, mag = v & ((1u << f->sign_bit) - 1);
    const uint32_t e = mag >> f->mbits, m = mag & ((1u << f->mbits) - 1);
    if (f->kind == K_FNUZ && v == 0x80) return from_bits(0xFFC00000u);
    if (f->kind == K_FN && mag == 0x7F) return from_bits(sign | 0x7FC00000u);
    if (f->kind == K_IEEE && e == 31) return from_bits(sign | (m ? 0x7FC00000u : 0x7F800000u));
    if (e) return from_bits(sign | (e - (uint32_t)f->bias + 127) << 23 | m << (23 - f->mbits));
    if (!m) return from_bits(sign);
    int p = 0; /* a subnormal m * 2^(1 - bias - mbits): its top bit p gives the exponent */
    while (m >> (p + 1)) p++;
    return from_bits(sign | (uint32_t)(p + 1 - f->bias - f->mbits + 127) << 23 | (m ^ 1u << p) << (23 - p));
}

float cg_narrow_to_f32(cg_dtype t, uint8_t v) {
    switch (t) {
    case CG_F8E8M0: return v == 0xFF ? from_bits(0x7FC00000u) : from_bits(v ? (uint32_t)v << 23 : 0x400000u);
    case CG_I4:
    case CG_I2: return (float)(int8_t)v;
    case CG_U4:
    case CG_U2: return (float)v;
    default: return mini_to_f32(mini_of(t), v);
    }
}

/* v >> shift (1 <= shift <= 31), rounded to nearest, ties to even. */
static uint32_t shift_rne(uint32_t v, int shift) {
    uint32_t q = v >> shift, rem = v & ((UINT32_C(1) << shift) - 1), half = UINT32_C(1) << (shift - 1);
    return q + (rem > half || (rem == half && (q & 1)));
}

/* The magnitude code of finite |x| (bits b, sign cleared) rounded to
 * nearest even; past max_code when it overflows. */
static uint32_t mini_round(const mini *f, uint32_t b) {
    const int e32 = (int)(b >> 23), te = e32 - 127 + f->bias;
    const uint32_t sig = b & 0x7FFFFFu;
    if (e32 == 0) return 0; /* an f32 subnormal is far below half the smallest code */
    if (te >= 1) return ((uint32_t)te << f->mbits) + shift_rne(sig, 23 - f->mbits);
    /* a subnormal of the format: (1.sig) 2^(e32 - 127) in units of its
     * smallest step 2^(1 - bias - mbits); rounding up may reach the
     * smallest normal code, which is then right */
    const int shift = 23 - f->mbits + 1 - te;
    return shift > 24 ? 0 : shift_rne(sig | 0x800000u, shift);
}

static uint8_t f32_to_mini(const mini *f, float x, int saturate) {
    const uint32_t b = to_bits(x), s = b >> 31, mag = b & 0x7FFFFFFFu;
    const uint8_t sign = (uint8_t)(s << f->sign_bit), nan_fnuz = 0x80;
    if (mag > 0x7F800000u) { /* NaN */
        if (f->kind == K_F4) return (uint8_t)((s ^ 1u) << 3);
        if (f->kind == K_FNUZ) return nan_fnuz;
        return sign | (f->kind == K_FN ? 0x7F : 0x7E);
    }
    uint32_t code = mag == 0x7F800000u ? f->max_code + 1 : mini_round(f, mag);
    if (code > f->max_code) {
        if (saturate || f->kind == K_F4) code = f->max_code;
        else if (f->kind == K_FNUZ) return nan_fnuz;
        else return sign | (f->kind == K_FN ? 0x7F : 0x7C);
    }
    if (f->kind == K_FNUZ && code == 0) return 0; /* no negative zero */
    return (uint8_t)(sign | code);
}

/* onnx.numpy_helper.to_float8e8m0 (onnx 1.23): the f32 exponent field,
 * rounded by the bits below it. */
static uint8_t f32_to_e8m0(float x, int saturate, cg_e8m0_round round) {
    const uint32_t b = to_bits(x), e = b >> 23 & 0xFF;
    if (e == 0xFF) return 0xFF;
    int up = 0;
    if (round == CG_E8M0_NEAREST) up = (b & 0x400000u) && ((b & 0x200000u) || (b & 0x1FFFFFu) || e > 0);
    else if (round == CG_E8M0_UP) up = (b & 0x7FFFFFu) != 0;
    if (saturate && e == 0xFE) up = 0;
    return (uint8_t)(e + (uint32_t)up); /* 0xFE + 1 is the NaN */
}

/* The low bits of v in a 4- or 2-bit type, sign-extended for the signed. */
static uint8_t wrap_int(cg_dtype t, uint64_t v) {
    const int bits = cg_dtype_packed_bits(t);
    const uint32_t low = (uint32_t)(v & ((1u << bits) - 1)), top = 1u << (bits - 1);
    if (t == CG_U4 || t == CG_U2) return (uint8_t)low;
    return (uint8_t)(int8_t)((int32_t)(low ^ top) - (int32_t)top);
}

uint8_t cg_f32_to_narrow(cg_dtype t, float x, int saturate, cg_e8m0_round round) {
    switch (t) {
    case CG_F8E8M0: return f32_to_e8m0(x, saturate, round);
    case CG_I4:
    case CG_U4:
    case CG_I2:
    case CG_U2:
        /* past 2^63 a float is a multiple of 2^40: its low bits are 0 */
        if (!(fabsf(x) < 9223372036854775808.0f)) return 0;
        return wrap_int(t, (uint64_t)(int64_t)x);
    default: return f32_to_mini(mini_of(t), x, saturate);
    }
}

uint8_t cg_int_to_narrow(cg_dtype t, int64_t v, int saturate) {
    if (cg_dtype_is_narrow_float(t)) return cg_f32_to_narrow(t, (float)v, saturate, CG_E8M0_UP);
    return wrap_int(t, (uint64_t)v);
}

uint8_t cg_narrow_normalize(cg_dtype t, uint8_t v) {
    if (cg_dtype_packed_bits(t) == 8) return v;
    return t == CG_F4E2M1 ? (uint8_t)(v & 0xF) : wrap_int(t, v);
}

void cg_narrow_unpack(cg_dtype t, const uint8_t *packed, int64_t n, uint8_t *out) {
    const int bits = cg_dtype_packed_bits(t), per = 8 / bits;
    for (int64_t i = 0; i < n; i++) {
        uint8_t v = (uint8_t)(packed[i / per] >> (i % per * bits));
        out[i] = cg_narrow_normalize(t, bits == 8 ? v : (uint8_t)(v & ((1u << bits) - 1)));
    }
}

void cg_narrow_pack(cg_dtype t, const uint8_t *in, int64_t n, uint8_t *packed) {
    const int bits = cg_dtype_packed_bits(t), per = 8 / bits;
    memset(packed, 0, cg_narrow_packed_bytes(t, n));
    for (int64_t i = 0; i < n; i++) packed[i / per] |= (uint8_t)((in[i] & ((1u << bits) - 1)) << (i % per * bits));
}
