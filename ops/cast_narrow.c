/* cast to or from a narrow type (cast_narrow.h). Values go through float
 * (the float types, the narrow float ones included: each of their values is
 * an f32) or int64 (the integer types and bool), as in ops/cast.c, with
 * base/narrow.c's conversions at the narrow end; cl/cast_narrow.cl is the
 * same on OpenCL devices. */
#include "cast_narrow.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bcast.h"
#include "cast_narrow.cl.h"
#include "dtype.h"
#include "narrow.h"
#include "ops_cl.h"

int cg_cast_is_narrow(cg_op_dtype from, cg_op_dtype to) {
    return cg_dtype_is_narrow((cg_dtype)from) || cg_dtype_is_narrow((cg_dtype)to);
}

int cg_cast_round_mode(const char *s) {
    return !strcmp(s, "up")        ? CG_E8M0_UP
           : !strcmp(s, "down")    ? CG_E8M0_DOWN
           : !strcmp(s, "nearest") ? CG_E8M0_NEAREST
                                   : -1;
}

static int is_float(cg_dtype t) { return t == CG_F32 || t == CG_F16 || t == CG_BF16 || cg_dtype_is_narrow_float(t); }

/* A value on its way: a float, or an integer (u64's bits with `u64`). */
typedef struct val {
    float f;
    int64_t i;
    int u64;
} val;

static float bits_f(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static val load(const void *p, int64_t i, cg_dtype t) {
    val v = {0, 0, t == CG_U64};
    const unsigned char *b = (const unsigned char *)p + (size_t)i * cg_dtype_size(t);
    switch (t) {
    case CG_F32: memcpy(&v.f, b, 4); break;
    case CG_F16:
    case CG_BF16: {
        uint16_t h;
        memcpy(&h, b, 2);
        v.f = bits_f(t == CG_F16 ? cg_f16_to_f32_bits(h) : cg_bf16_to_f32_bits(h));
        break;
    }
    case CG_I32: v.i = ((const int32_t *)p)[i]; break;
    case CG_U32: v.i = ((const uint32_t *)p)[i]; break;
    case CG_I16: v.i = ((const int16_t *)p)[i]; break;
    case CG_U16: v.i = ((const uint16_t *)p)[i]; break;
    case CG_I64:
    case CG_U64: memcpy(&v.i, b, 8); break;
    case CG_I8:
    case CG_I4:
    case CG_I2: v.i = (int8_t)*b; break;
    case CG_BOOL: v.i = *b != 0; break;
    default:
        if (cg_dtype_is_narrow_float(t)) v.f = cg_narrow_to_f32(t, *b);
        else v.i = *b; /* u8, u4, u2 */
        break;
    }
    return v;
}

/* An integer type's range as doubles (u64's top is 2^64, past it). */
static void int_range(cg_dtype t, double *lo, double *hi) {
    switch (t) {
    case CG_I8: *lo = -128, *hi = 127; return;
    case CG_U8: *lo = 0, *hi = 255; return;
    case CG_I16: *lo = -32768, *hi = 32767; return;
    case CG_U16: *lo = 0, *hi = 65535; return;
    case CG_I32: *lo = -2147483648.0, *hi = 2147483647.0; return;
    case CG_U32: *lo = 0, *hi = 4294967295.0; return;
    case CG_U64: *lo = 0, *hi = 18446744073709551616.0; return;
    default: *lo = -9223372036854775808.0, *hi = 9223372036854775808.0; return; /* i64 */
    }
}

/* The low bytes of v into a standard integer type (or bool). */
static void put_int(unsigned char *b, cg_dtype t, uint64_t v) {
    if (t == CG_BOOL) *b = v != 0;
    else {
        uint16_t h = (uint16_t)v;
        uint32_t w = (uint32_t)v;
        switch (cg_dtype_size(t)) {
        case 8: memcpy(b, &v, 8); break;
        case 4: memcpy(b, &w, 4); break;
        case 2: memcpy(b, &h, 2); break;
        default: *b = (unsigned char)v; break;
        }
    }
}

/* A float into a standard integer type as ops/cast.c does: truncated, NaN
 * 0, saturated at the type's limits; bool is f != 0. */
static void put_float_as_int(unsigned char *b, cg_dtype t, float f) {
    if (t == CG_BOOL) {
        *b = f != 0.0f;
        return;
    }
    double lo, hi, d = trunc((double)f);
    int_range(t, &lo, &hi);
    if (d != d) d = 0;
    if (t == CG_U64) put_int(b, t, d <= 0 ? 0 : d >= hi ? UINT64_MAX : (uint64_t)d);
    else if (t == CG_I64) put_int(b, t, (uint64_t)(d <= lo ? INT64_MIN : d >= hi ? INT64_MAX : (int64_t)d));
    else put_int(b, t, (uint64_t)(int64_t)(d < lo ? lo : d > hi ? hi : d));
}

static void store(void *p, int64_t i, cg_dtype from, cg_dtype t, val v, int sat, int round) {
    unsigned char *b = (unsigned char *)p + (size_t)i * cg_dtype_size(t);
    const int fl = is_float(from);
    const float f = fl ? v.f : v.u64 ? (float)(uint64_t)v.i : (float)v.i; /* one rounding, from the value */
    if (cg_dtype_is_narrow(t)) {
        *b = fl || cg_dtype_is_narrow_float(t) ? cg_f32_to_narrow(t, f, sat, (cg_e8m0_round)round)
                                               : cg_int_to_narrow(t, v.i, sat);
        return;
    }
    uint32_t w;
    memcpy(&w, &f, 4);
    switch (t) {
    case CG_F32: memcpy(b, &f, 4); return;
    case CG_F16:
    case CG_BF16: {
        uint16_t h = t == CG_F16 ? cg_f32_to_f16_bits(w) : cg_f32_to_bf16_bits(w);
        memcpy(b, &h, 2);
        return;
    }
    default:
        if (fl) put_float_as_int(b, t, f);
        else put_int(b, t, (uint64_t)v.i);
        return;
    }
}

cg_op_status cg_cast_narrow_cpu(const cg_kernel_args *a, int saturate, int round) {
    const cg_op_call *call = a->call;
    cg_dtype from = (cg_dtype)call->inputs[0].dtype, to = (cg_dtype)call->outputs[0].dtype;
    int64_t n = cg_desc_numel(&call->inputs[0]);
    if (from == to) { /* the bytes as they are (a NaN's payload too) */
        if (a->out[0] != a->in[0]) memcpy(a->out[0], a->in[0], (size_t)n);
        return CG_OP_OK;
    }
    /* each element is read before it is written: in place is safe */
    for (int64_t i = 0; i < n; i++) store(a->out[0], i, from, to, load(a->in[0], i, from), saturate, round);
    return CG_OP_OK;
}

/* The OpenCL C element type of a dtype other than the narrow ones, and the
 * load or store macro of cl/cast_narrow.cl for any. */
static const char *cl_side(cg_dtype t, char *buf, size_t size, int load, int from_float) {
    if (!cg_dtype_is_narrow(t)) {
        if (load) snprintf(buf, size, "LD_%s", cg_dtype_name(t));
        else snprintf(buf, size, "ST_%c_%s", from_float ? 'F' : 'I', cg_dtype_name(t));
        return cg_bcast_cl_type((cg_op_dtype)t, 0);
    }
    if (load) snprintf(buf, size, "%s", cg_dtype_is_narrow_float(t) ? "LD_nf" : "LD_ni");
    else snprintf(buf, size, "%s", from_float ? "ST_F_n" : "ST_I_n");
    return "uchar";
}

cg_op_status cg_cast_narrow_cl(const cg_kernel_args *a, int saturate, int round) {
    static const char kn[] = "cast_narrow";
    const cg_op_call *call = a->call;
    cg_dtype from = (cg_dtype)call->inputs[0].dtype, to = (cg_dtype)call->outputs[0].dtype;
    const int64_t n = cg_desc_numel(&call->inputs[0]);
    if (n == 0 || (from == to && a->out[0] == a->in[0])) return CG_OP_OK;
    const int fl = is_float(from);
    char ld[16], st[16], opts[160];
    const char *ft = cl_side(from, ld, sizeof ld, 1, fl), *tt = cl_side(to, st, sizeof st, 0, fl);
    if (from == to) snprintf(opts, sizeof opts, "-DFT=uchar -DTT=uchar -DVT=uchar -DLD=LD_raw -DST=ST_raw");
    else
        snprintf(opts, sizeof opts, "-DFT=%s -DTT=%s -DVT=%s -DLD=%s -DST=%s", ft, tt,
                 fl               ? "float"
                 : from == CG_U64 ? "ulong"
                                  : "long",
                 ld, st);
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_cast_narrow, kn, n > INT32_MAX, 0, opts);
    if (!k) return CG_OP_ERROR;
    cl_mem x = (cl_mem)a->in[0], y = (cl_mem)a->out[0];
    cl_long ln = n;
    cl_int f = (cl_int)from, t = (cl_int)to, sat = saturate != 0, rm = round;
    const cg_ops_cl_arg_value args[] = {CG_OPS_CL_ARG(x), CG_OPS_CL_ARG(y),   CG_OPS_CL_ARG(ln), CG_OPS_CL_ARG(f),
                                        CG_OPS_CL_ARG(t), CG_OPS_CL_ARG(sat), CG_OPS_CL_ARG(rm)};
    if (cg_ops_cl_args(a, k, kn, 0, CG_OPS_CL_N_ARGS(args), args)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, kn, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* The values a conformance case draws for a source type: past the narrow
 * targets' ranges (saturation, wrap-around) and inside them. */
static double conform_limit(cg_dtype from) {
    switch (from) {
    case CG_F16: return 6e4;
    case CG_F8E4M3FN:
    case CG_F8E4M3FNUZ: return 500;
    case CG_F4E2M1: return 8;
    case CG_F8E8M0: return 1e30;
    case CG_I8: return 127;
    case CG_U8:
    case CG_BOOL: return 255;
    default: return cg_dtype_is_narrow(from) ? 1e5 : 600;
    }
}

int32_t cg_cast_narrow_conform(int32_t i, cg_conform_case *c) {
    enum { NT = CG_DTYPE_LAST, NN = CG_U2 - CG_F8E4M3FN + 1 };
    /* cases [0, NN * NT): narrow -> any; then any -> narrow; then f32 to
     * each float8 without saturation and to e8m0 rounding down and to
     * nearest (saturated and not) */
    static char attrs[NT + 1][NT + 1][64];
    int32_t k = i;
    cg_dtype from, to;
    int sat = 1, round = CG_E8M0_UP;
    if (k < 0) return 0;
    if (k < NN * NT) from = (cg_dtype)(CG_F8E4M3FN + k % NN), to = (cg_dtype)(1 + k / NN);
    else if ((k -= NN * NT) < NT * NN) from = (cg_dtype)(1 + k % NT), to = (cg_dtype)(CG_F8E4M3FN + k / NT);
    else if ((k -= NT * NN) < 4) from = CG_F32, to = (cg_dtype)(CG_F8E4M3FN + k), sat = 0;
    else if ((k -= 4) < 4) from = CG_F32, to = CG_F8E8M0, sat = k & 1, round = 1 + k / 2;
    else return 0;
    if (from == to) from = CG_F32; /* the copy is cast.c's */
    static const char *const rounds[] = {"up", "down", "nearest"};
    snprintf(attrs[from][to], sizeof attrs[from][to], "to: \"%s\", saturate: %d, round_mode: \"%s\"", cg_dtype_name(to),
             sat, rounds[round]);
    double lim = conform_limit(from), lo = to == CG_F8E8M0 && is_float(from) ? 0 : -lim;
    cg_ops_case t = {1, {{(cg_op_dtype)from, 2, {40, 25}, lo, lim}}, attrs[from][to]};
    cg_ops_fill_case(&t, 1, c);
    return 1;
}
