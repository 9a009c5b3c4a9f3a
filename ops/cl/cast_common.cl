/* The conversion rules of the cast kernels, put in front of cl/cast.cl and
 * cl/cast_narrow.cl when they are embedded (ops/meson.build): each is a
 * program of its own, and both must store a value of the ordinary dtypes
 * exactly as the CPU kernel of ops/cast.c does, so they share one copy.
 * Values go through float or the 64-bit integer (VT):
 *  - to an integer type from a float: truncation toward zero, NaN gives 0,
 *    values beyond the type's range saturate (as the CPU kernel);
 *  - between integer types: the low bits (two's complement wrap-around);
 *  - to bool: x != 0 (NaN is true); from bool: 0 or 1;
 *  - to f16 and bf16 rounding to nearest even, to f32
 *    from long with the default round to nearest even.
 * f16 is handled as its ushort bits, converted (cl_preamble.cl and here)
 * exactly as the CPU does (base/dtype.c): no cl_khr_fp16 needed, and NaN
 * payloads are kept. */

/* v >> shift (1..31), rounded to nearest, ties to even */
inline uint cg_shift_rne(uint v, int shift) {
    uint q = v >> shift, rem = v & ((1u << shift) - 1u), hf = 1u << (shift - 1);
    return q + (uint)(rem > hf || (rem == hf && (q & 1u)));
}

inline ushort cg_f32_to_f16(float x) {
    uint f = as_uint(x), sig = f & 0x7fffffu;
    ushort sign = (ushort)((f >> 16) & 0x8000u);
    int e = (int)((f >> 23) & 0xffu);
    if (e == 0xff) {
        if (!sig) return sign | (ushort)0x7c00u;
        ushort r = (ushort)(0x7c00u | (sig >> 13));
        return sign | (r == (ushort)0x7c00u ? (ushort)0x7c01u : r);
    }
    if (e >= 143) return sign | (ushort)0x7c00u;
    if (e >= 113) return sign | (ushort)((((uint)(e - 112)) << 10) + cg_shift_rne(sig, 13));
    int shift = 126 - e;
    if (shift > 24) return sign;
    return sign | (ushort)cg_shift_rne(sig | 0x800000u, shift);
}

inline ushort cg_bf16_rne(float f) {
    uint b = as_uint(f);
    if ((b & 0x7fffffffu) > 0x7f800000u) return (ushort)(((b >> 16) & 0x8000u) | 0x7fc0u);
    return (ushort)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

/* ---- loads: the value on the way (float or long; ulong from u64) ---- */
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

/* float -> integer with truncation, NaN 0, saturation at [lo, hi] (given as
 * the floats one past each end) */
#define F2I(T, CONV, v, HI1, LO1, HI, LO) \
    ((v) != (v) ? (T)0 : (v) >= (HI1) ? (T)(HI) : (v) <= (LO1) ? (T)(LO) : CONV(v))

/* ---- stores of a float ---- */
#define ST_F_f32(p, i, v) ((p)[i] = (v))
#define ST_F_f16(p, i, v) ((p)[i] = cg_f32_to_f16(v))
#define ST_F_bf16(p, i, v) ((p)[i] = cg_bf16_rne(v))
#define ST_F_i32(p, i, v) ((p)[i] = F2I(int, convert_int_rtz, v, 2147483648.0f, -2147483904.0f, INT_MAX, INT_MIN))
/* the 8- and 16-bit types computed in int and narrowed at the store:
 * Mesa's llvmpipe (LLVM 15) crashes legalizing a select of 8-bit values */
#define ST_F_i8(p, i, v) ((p)[i] = (char)F2I(int, convert_int_rtz, v, 128.0f, -129.0f, 127, -128))
#define ST_F_u8(p, i, v) ((p)[i] = (uchar)F2I(int, convert_int_rtz, v, 256.0f, -1.0f, 255, 0))
#define ST_F_i16(p, i, v) ((p)[i] = (short)F2I(int, convert_int_rtz, v, 32768.0f, -32769.0f, 32767, -32768))
#define ST_F_u16(p, i, v) ((p)[i] = (ushort)F2I(int, convert_int_rtz, v, 65536.0f, -1.0f, 65535, 0))
#define ST_F_u32(p, i, v) ((p)[i] = F2I(uint, convert_uint_rtz, v, 4294967296.0f, -1.0f, UINT_MAX, 0))
#define ST_F_i64(p, i, v) \
    ((p)[i] = F2I(long, convert_long_rtz, v, 9223372036854775808.0f, -9223373136366403584.0f, LONG_MAX, LONG_MIN))
#define ST_F_u64(p, i, v) ((p)[i] = F2I(ulong, convert_ulong_rtz, v, 18446744073709551616.0f, -1.0f, ULONG_MAX, 0))
#define ST_F_bool(p, i, v) ((p)[i] = (uchar)((v) != 0.0f))

/* ---- stores of an integer: v a long, or a ulong from u64 (so that it
 * converts to float unsigned); one rounding from the value for the float
 * types ---- */
#define ST_I_f32(p, i, v) ((p)[i] = (float)(v))
#define ST_I_f16(p, i, v) ((p)[i] = cg_f32_to_f16((float)(v)))
#define ST_I_bf16(p, i, v) ((p)[i] = cg_bf16_rne((float)(v)))
#define ST_I_i32(p, i, v) ((p)[i] = (int)(uint)(ulong)(v))
#define ST_I_i8(p, i, v) ((p)[i] = (char)(uchar)(ulong)(v))
#define ST_I_u8(p, i, v) ((p)[i] = (uchar)(ulong)(v))
#define ST_I_i64(p, i, v) ((p)[i] = (long)(v))
#define ST_I_bool(p, i, v) ((p)[i] = (uchar)((v) != 0))
#define ST_I_i16(p, i, v) ((p)[i] = (short)(ushort)(ulong)(v))
#define ST_I_u16(p, i, v) ((p)[i] = (ushort)(ulong)(v))
#define ST_I_u32(p, i, v) ((p)[i] = (uint)(ulong)(v))
#define ST_I_u64(p, i, v) ((p)[i] = (ulong)(v))
