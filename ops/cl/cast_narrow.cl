/* Kernel of ops/cast_narrow.c: cast to or from the narrow types (float8,
 * f4e2m1, i4, u4, i2, u2: one byte per element), one element per work item.
 * `cast_narrow` is built for the other side's type and the narrow side's
 * kind with -DFT and -DTT (the element types), -DVT (float from the float
 * types, long from the integer types and bool, ulong from u64), -DLD=LD_<from>
 * (LD_nf, LD_ni: a narrow float or integer type) and -DST=ST_<F or I>_<to>
 * (ST_F_n, ST_I_n: a narrow type); which narrow type, saturate (1: saturate
 * float8) and f8e8m0's rounding (0 up, 1 down, 2 nearest) are arguments,
 * so a few dozen programs cover every pair. LD_raw and ST_raw copy a narrow
 * type's bytes. The functions are base/narrow.c's, bit for bit; the loads
 * and stores of the other types are ops/cast.c's rules (its cl/cast.cl is a
 * program of its own, so the few it needs are here too). Narrow types are
 * named by their cg_dtype values (include/clgraph/dtype.h). */

/* v >> shift (1..31), rounded to nearest, ties to even */
inline uint cgn_shift_rne(uint v, int shift) {
    uint q = v >> shift, rem = v & ((1u << shift) - 1u), hf = 1u << (shift - 1);
    return q + (uint)(rem > hf || (rem == hf && (q & 1u)));
}

/* ---- the small float formats: mantissa bits, bias, sign bit, largest
 * finite magnitude code, kind (0 fn, 1 fnuz, 2 IEEE-like e5m2, 3 f4) ---- */

inline float cgn_mini_to_f32(uint v, int mb, int bias, int sb, int kind) {
    uint sign = ((v >> sb) & 1u) << 31, mag = v & ((1u << sb) - 1u);
    uint e = mag >> mb, m = mag & ((1u << mb) - 1u);
    if (kind == 1 && v == 0x80u) return as_float(0xffc00000u);
    if (kind == 0 && mag == 0x7fu) return as_float(sign | 0x7fc00000u);
    if (kind == 2 && e == 31u) return as_float(sign | (m ? 0x7fc00000u : 0x7f800000u));
    if (e) return as_float(sign | ((e - (uint)bias + 127u) << 23) | (m << (23 - mb)));
    if (!m) return as_float(sign);
    int p = m >= 4u ? 2 : m >= 2u ? 1 : 0;
    return as_float(sign | ((uint)(p + 1 - bias - mb + 127) << 23) | ((m ^ (1u << p)) << (23 - p)));
}

inline uint cgn_mini_round(uint b, int mb, int bias) {
    int e32 = (int)(b >> 23), te = e32 - 127 + bias;
    uint sig = b & 0x7fffffu;
    if (e32 == 0) return 0u;
    if (te >= 1) return ((uint)te << mb) + cgn_shift_rne(sig, 23 - mb);
    int shift = 23 - mb + 1 - te;
    return shift > 24 ? 0u : cgn_shift_rne(sig | 0x800000u, shift);
}

inline uchar cgn_f32_to_mini(float x, int mb, int bias, int sb, uint max_code, int kind, int sat) {
    uint b = as_uint(x), s = b >> 31, mag = b & 0x7fffffffu;
    uint sign = s << sb;
    if (mag > 0x7f800000u) return kind == 3 ? (uchar)((s ^ 1u) << 3) : kind == 1 ? (uchar)0x80u : (uchar)(sign | (kind == 0 ? 0x7fu : 0x7eu));
    uint code = mag == 0x7f800000u ? max_code + 1u : cgn_mini_round(mag, mb, bias);
    if (code > max_code) {
        if (sat || kind == 3) code = max_code;
        else return kind == 1 ? (uchar)0x80u : (uchar)(sign | (kind == 0 ? 0x7fu : 0x7cu));
    }
    if (kind == 1 && code == 0u) return (uchar)0;
    return (uchar)(sign | code);
}

inline float cgn_e8m0_to_f32(uint v) { return as_float(v == 0xffu ? 0x7fc00000u : v ? v << 23 : 0x400000u); }

inline uchar cgn_f32_to_e8m0(float x, int sat, int mode) {
    uint b = as_uint(x), e = (b >> 23) & 0xffu;
    if (e == 0xffu) return (uchar)0xffu;
    uint up = 0u;
    if (mode == 2) up = (b & 0x400000u) && ((b & 0x200000u) || (b & 0x1fffffu) || e > 0u);
    else if (mode == 0) up = (b & 0x7fffffu) != 0u;
    if (sat && e == 0xfeu) up = 0u;
    return (uchar)(e + up);
}

/* The low `bits` bits of v, sign-extended when `sgn`. */
inline uchar cgn_wrap(ulong v, int bits, int sgn) {
    uint low = (uint)(v & ((1ul << bits) - 1ul)), top = 1u << (bits - 1);
    return sgn ? (uchar)(char)((int)(low ^ top) - (int)top) : (uchar)low;
}

/* float to i4/u4/i2/u2: truncated and wrapped, NaN and past 2^63 0 */
inline uchar cgn_f32_to_small_int(float x, int bits, int sgn) {
    return fabs(x) < 9223372036854775808.0f ? cgn_wrap((ulong)convert_long_rtz(x), bits, sgn) : (uchar)0;
}

/* ---- a narrow type by its cg_dtype value ---- */

inline float cgn_narrow_to_f32(uint v, int t) {
    switch (t) {
    case 13: return cgn_mini_to_f32(v, 3, 7, 7, 0);
    case 14: return cgn_mini_to_f32(v, 3, 8, 7, 1);
    case 15: return cgn_mini_to_f32(v, 2, 15, 7, 2);
    case 16: return cgn_mini_to_f32(v, 2, 16, 7, 1);
    case 17: return cgn_e8m0_to_f32(v);
    default: return cgn_mini_to_f32(v, 1, 1, 3, 3); /* 18, f4e2m1 */
    }
}

inline uchar cgn_f32_to_narrow(float x, int t, int sat, int mode) {
    switch (t) {
    case 13: return cgn_f32_to_mini(x, 3, 7, 7, 0x7eu, 0, sat);
    case 14: return cgn_f32_to_mini(x, 3, 8, 7, 0x7fu, 1, sat);
    case 15: return cgn_f32_to_mini(x, 2, 15, 7, 0x7bu, 2, sat);
    case 16: return cgn_f32_to_mini(x, 2, 16, 7, 0x7fu, 1, sat);
    case 17: return cgn_f32_to_e8m0(x, sat, mode);
    case 18: return cgn_f32_to_mini(x, 1, 1, 3, 0x7u, 3, 1);
    default: return cgn_f32_to_small_int(x, t <= 20 ? 4 : 2, t == 19 || t == 21); /* i4, u4, i2, u2 */
    }
}

/* ---- f16 and bf16, as cl/cast.cl and base/dtype.c round them ---- */

inline ushort cgn_f32_to_f16(float x) {
    uint f = as_uint(x), sig = f & 0x7fffffu;
    ushort sign = (ushort)((f >> 16) & 0x8000u);
    int e = (int)((f >> 23) & 0xffu);
    if (e == 0xff) {
        if (!sig) return sign | (ushort)0x7c00u;
        ushort r = (ushort)(0x7c00u | (sig >> 13));
        return sign | (r == (ushort)0x7c00u ? (ushort)0x7c01u : r);
    }
    if (e >= 143) return sign | (ushort)0x7c00u;
    if (e >= 113) return sign | (ushort)((((uint)(e - 112)) << 10) + cgn_shift_rne(sig, 13));
    int shift = 126 - e;
    if (shift > 24) return sign;
    return sign | (ushort)cgn_shift_rne(sig | 0x800000u, shift);
}

inline ushort cgn_bf16_rne(float f) {
    uint b = as_uint(f);
    if ((b & 0x7fffffffu) > 0x7f800000u) return (ushort)(((b >> 16) & 0x8000u) | 0x7fc0u);
    return (ushort)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

/* the same dtype: the bytes as they are */
#define LD_raw(p, i) ((p)[i])
#define ST_raw(p, i, v) ((p)[i] = (v))

/* ---- loads: the value on the way (float or long) ---- */
#define LD_f32(p, i) ((p)[i])
#define LD_f16(p, i) cg_f16_to_f32((p)[i])
#define LD_bf16(p, i) as_float((uint)(p)[i] << 16)
#define LD_i32(p, i) ((long)(p)[i])
#define LD_i8(p, i) ((long)(p)[i])
#define LD_u8(p, i) ((long)(p)[i])
#define LD_i64(p, i) ((p)[i])
#define LD_bool(p, i) ((long)((p)[i] != 0))
#define LD_i16(p, i) ((long)(p)[i])
#define LD_u16(p, i) ((long)(p)[i])
#define LD_u32(p, i) ((long)(p)[i])
#define LD_u64(p, i) ((p)[i])
#define LD_nf(p, i) cgn_narrow_to_f32((p)[i], from_t)
/* i4 and i2 are held sign-extended, u4 and u2 as their value */
#define LD_ni(p, i) (from_t == 19 || from_t == 21 ? (long)(char)(p)[i] : (long)(p)[i])

/* ---- stores of a float: truncation with NaN 0 and saturation for the
 * integer types (8 and 16 bits computed in int: Mesa's llvmpipe crashes on
 * a select of 8-bit values), rounding for the float types ---- */
#define F2I(T, CONV, v, HI1, LO1, HI, LO) \
    ((v) != (v) ? (T)0 : (v) >= (HI1) ? (T)(HI) : (v) <= (LO1) ? (T)(LO) : CONV(v))
#define ST_F_f32(p, i, v) ((p)[i] = (v))
#define ST_F_f16(p, i, v) ((p)[i] = cgn_f32_to_f16(v))
#define ST_F_bf16(p, i, v) ((p)[i] = cgn_bf16_rne(v))
#define ST_F_i32(p, i, v) ((p)[i] = F2I(int, convert_int_rtz, v, 2147483648.0f, -2147483904.0f, INT_MAX, INT_MIN))
#define ST_F_i8(p, i, v) ((p)[i] = (char)F2I(int, convert_int_rtz, v, 128.0f, -129.0f, 127, -128))
#define ST_F_u8(p, i, v) ((p)[i] = (uchar)F2I(int, convert_int_rtz, v, 256.0f, -1.0f, 255, 0))
#define ST_F_i16(p, i, v) ((p)[i] = (short)F2I(int, convert_int_rtz, v, 32768.0f, -32769.0f, 32767, -32768))
#define ST_F_u16(p, i, v) ((p)[i] = (ushort)F2I(int, convert_int_rtz, v, 65536.0f, -1.0f, 65535, 0))
#define ST_F_u32(p, i, v) ((p)[i] = F2I(uint, convert_uint_rtz, v, 4294967296.0f, -1.0f, UINT_MAX, 0))
#define ST_F_i64(p, i, v) \
    ((p)[i] = F2I(long, convert_long_rtz, v, 9223372036854775808.0f, -9223373136366403584.0f, LONG_MAX, LONG_MIN))
#define ST_F_u64(p, i, v) ((p)[i] = F2I(ulong, convert_ulong_rtz, v, 18446744073709551616.0f, -1.0f, ULONG_MAX, 0))
#define ST_F_bool(p, i, v) ((p)[i] = (uchar)((v) != 0.0f))
#define ST_F_n(p, i, v) ((p)[i] = cgn_f32_to_narrow(v, to_t, sat, rmode))

/* ---- stores of an integer (long, or ulong from u64): the low bits for
 * the integer types, one rounding from the value for the float types ---- */
#define ST_I_f32(p, i, v) ((p)[i] = (float)(v))
#define ST_I_f16(p, i, v) ((p)[i] = cgn_f32_to_f16((float)(v)))
#define ST_I_bf16(p, i, v) ((p)[i] = cgn_bf16_rne((float)(v)))
#define ST_I_i32(p, i, v) ((p)[i] = (int)(uint)(ulong)(v))
#define ST_I_i8(p, i, v) ((p)[i] = (char)(uchar)(ulong)(v))
#define ST_I_u8(p, i, v) ((p)[i] = (uchar)(ulong)(v))
#define ST_I_i64(p, i, v) ((p)[i] = (long)(v))
#define ST_I_bool(p, i, v) ((p)[i] = (uchar)((v) != 0))
#define ST_I_i16(p, i, v) ((p)[i] = (short)(ushort)(ulong)(v))
#define ST_I_u16(p, i, v) ((p)[i] = (ushort)(ulong)(v))
#define ST_I_u32(p, i, v) ((p)[i] = (uint)(ulong)(v))
#define ST_I_u64(p, i, v) ((p)[i] = (ulong)(v))
/* to a narrow float type one rounding from the value; to i4..u2 the low bits */
#define ST_I_n(p, i, v) \
    ((p)[i] = to_t <= 18 ? cgn_f32_to_narrow((float)(v), to_t, sat, rmode) : cgn_wrap((ulong)(v), to_t <= 20 ? 4 : 2, to_t == 19 || to_t == 21))

/* The types when the source is built whole (a syntax check): one pair. */
#ifndef FT
#define FT float
#define TT uchar
#define VT float
#define LD LD_f32
#define ST ST_F_n
#endif

#if CG_WANT(cast_narrow)
__kernel void cast_narrow(__global const FT *xp, __global TT *yp, long n, int from_t, int to_t, int sat, int rmode) {
    IDX i = (IDX)get_global_id(0);
    if (i >= (IDX)n) return;
    VT v = LD(xp, i);
    ST(yp, i, v);
}
#endif
