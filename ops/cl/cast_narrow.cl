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
 * and stores of the other types (LD_<dtype>, ST_F_<dtype>, ST_I_<dtype>) are
 * ops/cast.c's rules, from cl/cast_common.cl, put in front of this source
 * as of cl/cast.cl when they are embedded. Narrow types are named by their
 * cg_dtype values (include/clgraph/dtype.h). */

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
    if (te >= 1) return ((uint)te << mb) + cg_shift_rne(sig, 23 - mb);
    int shift = 23 - mb + 1 - te;
    return shift > 24 ? 0u : cg_shift_rne(sig | 0x800000u, shift);
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

/* the same dtype: the bytes as they are */
#define LD_raw(p, i) ((p)[i])
#define ST_raw(p, i, v) ((p)[i] = (v))

/* ---- loads and stores of a narrow type (cl/cast_common.cl has the
 * other types') ---- */
#define LD_nf(p, i) cgn_narrow_to_f32((p)[i], from_t)
/* i4 and i2 are held sign-extended, u4 and u2 as their value */
#define LD_ni(p, i) (from_t == 19 || from_t == 21 ? (long)(char)(p)[i] : (long)(p)[i])

#define ST_F_n(p, i, v) ((p)[i] = cgn_f32_to_narrow(v, to_t, sat, rmode))
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
