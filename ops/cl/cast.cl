/* Kernels of ops/cast.c: cast_<from>_<to> for every pair of the eight
 * dtypes, one element per work item (IDX as in elementwise.cl). Values go
 * through float (float types) or long (integer types and bool):
 *  - to an integer type from a float: truncation toward zero, NaN gives 0,
 *    values beyond the type's range saturate (as the CPU kernel);
 *  - between integer types: the low bits (two's complement wrap-around);
 *  - to bool: x != 0 (NaN is true); from bool: 0 or 1;
 *  - to f16 and bf16 rounding to nearest even, to f32
 *    from long with the default round to nearest even.
 * f16 is handled as its ushort bits, converted (cl_preamble.cl) exactly as the CPU does
 * (base/dtype.c): no cl_khr_fp16 needed, and NaN payloads are kept. */

#define LD_f32(p, i) ((p)[i])
#define LD_f16(p, i) cg_f16_to_f32((p)[i])
#define LD_bf16(p, i) as_float((uint)(p)[i] << 16)
#define LD_i32(p, i) ((long)(p)[i])
#define LD_i8(p, i) ((long)(p)[i])
#define LD_u8(p, i) ((long)(p)[i])
#define LD_i64(p, i) ((p)[i])
#define LD_bool(p, i) ((long)((p)[i] != 0))

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

/* float -> integer with truncation, NaN 0, saturation at [lo, hi] (given as
 * the floats one past each end) */
#define F2I(T, CONV, v, HI1, LO1, HI, LO) \
    ((v) != (v) ? (T)0 : (v) >= (HI1) ? (T)(HI) : (v) <= (LO1) ? (T)(LO) : CONV(v))

#define ST_F_f32(p, i, v) ((p)[i] = (v))
#define ST_F_f16(p, i, v) ((p)[i] = cg_f32_to_f16(v))
#define ST_F_bf16(p, i, v) ((p)[i] = cg_bf16_rne(v))
#define ST_F_i32(p, i, v) ((p)[i] = F2I(int, convert_int_rtz, v, 2147483648.0f, -2147483904.0f, INT_MAX, INT_MIN))
/* i8 and u8 computed in int and narrowed at the store: Mesa's llvmpipe
 * (LLVM 15) crashes legalizing a select of 8-bit values */
#define ST_F_i8(p, i, v) ((p)[i] = (char)F2I(int, convert_int_rtz, v, 128.0f, -129.0f, 127, -128))
#define ST_F_u8(p, i, v) ((p)[i] = (uchar)F2I(int, convert_int_rtz, v, 256.0f, -1.0f, 255, 0))
#define ST_F_i64(p, i, v) \
    ((p)[i] = F2I(long, convert_long_rtz, v, 9223372036854775808.0f, -9223373136366403584.0f, LONG_MAX, LONG_MIN))
#define ST_F_bool(p, i, v) ((p)[i] = (uchar)((v) != 0.0f))

#define ST_I_f32(p, i, v) ((p)[i] = (float)(v))
#define ST_I_f16(p, i, v) ((p)[i] = cg_f32_to_f16((float)(v)))
#define ST_I_bf16(p, i, v) ((p)[i] = cg_bf16_rne((float)(v)))
#define ST_I_i32(p, i, v) ((p)[i] = (int)(uint)(ulong)(v))
#define ST_I_i8(p, i, v) ((p)[i] = (char)(uchar)(ulong)(v))
#define ST_I_u8(p, i, v) ((p)[i] = (uchar)(ulong)(v))
#define ST_I_i64(p, i, v) ((p)[i] = (v))
#define ST_I_bool(p, i, v) ((p)[i] = (uchar)((v) != 0))

/* The same dtype: the bits as they are (a NaN's payload too). */
#define COPY(NAME, T)                                                              \
    __kernel void cast_##NAME(__global const T *xp, __global T *yp, long n) {      \
        IDX i = (IDX)get_global_id(0);                                             \
        if (i < (IDX)n) yp[i] = xp[i];                                             \
    }

/* cast_FROM_TO: FT and TT the element types, K F or I (through float or
 * long), VT that type. */
#define CAST(FROM, FT, K, VT, TO, TT)                                              \
    __kernel void cast_##FROM##_##TO(__global const FT *xp, __global TT *yp, long n) { \
        IDX i = (IDX)get_global_id(0);                                             \
        if (i >= (IDX)n) return;                                                   \
        VT v = LD_##FROM(xp, i);                                                   \
        ST_##K##_##TO(yp, i, v);                                                   \
    }

#if CG_WANT(cast_f32_f32)
COPY(f32_f32, uint)
#endif
#if CG_WANT(cast_f32_i32)
CAST(f32, float, F, float, i32, int)
#endif
#if CG_WANT(cast_f32_f16)
CAST(f32, float, F, float, f16, ushort)
#endif
#if CG_WANT(cast_f32_bf16)
CAST(f32, float, F, float, bf16, ushort)
#endif
#if CG_WANT(cast_f32_i8)
CAST(f32, float, F, float, i8, char)
#endif
#if CG_WANT(cast_f32_u8)
CAST(f32, float, F, float, u8, uchar)
#endif
#if CG_WANT(cast_f32_i64)
CAST(f32, float, F, float, i64, long)
#endif
#if CG_WANT(cast_f32_bool)
CAST(f32, float, F, float, bool, uchar)
#endif
#if CG_WANT(cast_i32_f32)
CAST(i32, int, I, long, f32, float)
#endif
#if CG_WANT(cast_i32_i32)
COPY(i32_i32, uint)
#endif
#if CG_WANT(cast_i32_f16)
CAST(i32, int, I, long, f16, ushort)
#endif
#if CG_WANT(cast_i32_bf16)
CAST(i32, int, I, long, bf16, ushort)
#endif
#if CG_WANT(cast_i32_i8)
CAST(i32, int, I, long, i8, char)
#endif
#if CG_WANT(cast_i32_u8)
CAST(i32, int, I, long, u8, uchar)
#endif
#if CG_WANT(cast_i32_i64)
CAST(i32, int, I, long, i64, long)
#endif
#if CG_WANT(cast_i32_bool)
CAST(i32, int, I, long, bool, uchar)
#endif
#if CG_WANT(cast_f16_f32)
CAST(f16, ushort, F, float, f32, float)
#endif
#if CG_WANT(cast_f16_i32)
CAST(f16, ushort, F, float, i32, int)
#endif
#if CG_WANT(cast_f16_f16)
COPY(f16_f16, ushort)
#endif
#if CG_WANT(cast_f16_bf16)
CAST(f16, ushort, F, float, bf16, ushort)
#endif
#if CG_WANT(cast_f16_i8)
CAST(f16, ushort, F, float, i8, char)
#endif
#if CG_WANT(cast_f16_u8)
CAST(f16, ushort, F, float, u8, uchar)
#endif
#if CG_WANT(cast_f16_i64)
CAST(f16, ushort, F, float, i64, long)
#endif
#if CG_WANT(cast_f16_bool)
CAST(f16, ushort, F, float, bool, uchar)
#endif
#if CG_WANT(cast_bf16_f32)
CAST(bf16, ushort, F, float, f32, float)
#endif
#if CG_WANT(cast_bf16_i32)
CAST(bf16, ushort, F, float, i32, int)
#endif
#if CG_WANT(cast_bf16_f16)
CAST(bf16, ushort, F, float, f16, ushort)
#endif
#if CG_WANT(cast_bf16_bf16)
COPY(bf16_bf16, ushort)
#endif
#if CG_WANT(cast_bf16_i8)
CAST(bf16, ushort, F, float, i8, char)
#endif
#if CG_WANT(cast_bf16_u8)
CAST(bf16, ushort, F, float, u8, uchar)
#endif
#if CG_WANT(cast_bf16_i64)
CAST(bf16, ushort, F, float, i64, long)
#endif
#if CG_WANT(cast_bf16_bool)
CAST(bf16, ushort, F, float, bool, uchar)
#endif
#if CG_WANT(cast_i8_f32)
CAST(i8, char, I, long, f32, float)
#endif
#if CG_WANT(cast_i8_i32)
CAST(i8, char, I, long, i32, int)
#endif
#if CG_WANT(cast_i8_f16)
CAST(i8, char, I, long, f16, ushort)
#endif
#if CG_WANT(cast_i8_bf16)
CAST(i8, char, I, long, bf16, ushort)
#endif
#if CG_WANT(cast_i8_i8)
COPY(i8_i8, uchar)
#endif
#if CG_WANT(cast_i8_u8)
CAST(i8, char, I, long, u8, uchar)
#endif
#if CG_WANT(cast_i8_i64)
CAST(i8, char, I, long, i64, long)
#endif
#if CG_WANT(cast_i8_bool)
CAST(i8, char, I, long, bool, uchar)
#endif
#if CG_WANT(cast_u8_f32)
CAST(u8, uchar, I, long, f32, float)
#endif
#if CG_WANT(cast_u8_i32)
CAST(u8, uchar, I, long, i32, int)
#endif
#if CG_WANT(cast_u8_f16)
CAST(u8, uchar, I, long, f16, ushort)
#endif
#if CG_WANT(cast_u8_bf16)
CAST(u8, uchar, I, long, bf16, ushort)
#endif
#if CG_WANT(cast_u8_i8)
CAST(u8, uchar, I, long, i8, char)
#endif
#if CG_WANT(cast_u8_u8)
COPY(u8_u8, uchar)
#endif
#if CG_WANT(cast_u8_i64)
CAST(u8, uchar, I, long, i64, long)
#endif
#if CG_WANT(cast_u8_bool)
CAST(u8, uchar, I, long, bool, uchar)
#endif
#if CG_WANT(cast_i64_f32)
CAST(i64, long, I, long, f32, float)
#endif
#if CG_WANT(cast_i64_i32)
CAST(i64, long, I, long, i32, int)
#endif
#if CG_WANT(cast_i64_f16)
CAST(i64, long, I, long, f16, ushort)
#endif
#if CG_WANT(cast_i64_bf16)
CAST(i64, long, I, long, bf16, ushort)
#endif
#if CG_WANT(cast_i64_i8)
CAST(i64, long, I, long, i8, char)
#endif
#if CG_WANT(cast_i64_u8)
CAST(i64, long, I, long, u8, uchar)
#endif
#if CG_WANT(cast_i64_i64)
COPY(i64_i64, ulong)
#endif
#if CG_WANT(cast_i64_bool)
CAST(i64, long, I, long, bool, uchar)
#endif
#if CG_WANT(cast_bool_f32)
CAST(bool, uchar, I, long, f32, float)
#endif
#if CG_WANT(cast_bool_i32)
CAST(bool, uchar, I, long, i32, int)
#endif
#if CG_WANT(cast_bool_f16)
CAST(bool, uchar, I, long, f16, ushort)
#endif
#if CG_WANT(cast_bool_bf16)
CAST(bool, uchar, I, long, bf16, ushort)
#endif
#if CG_WANT(cast_bool_i8)
CAST(bool, uchar, I, long, i8, char)
#endif
#if CG_WANT(cast_bool_u8)
CAST(bool, uchar, I, long, u8, uchar)
#endif
#if CG_WANT(cast_bool_i64)
CAST(bool, uchar, I, long, i64, long)
#endif
#if CG_WANT(cast_bool_bool)
COPY(bool_bool, uchar)
#endif
