/* Put in front of every OpenCL C source of clgraph when it is embedded
 * (tools/py/embed_cl.py --preamble); a #line directive after it keeps build
 * logs pointing at the source's own lines.
 *
 * IDX is the index type: int unless the host builds with -DIDX=long for
 * tensors of 2^31 elements or more; IDX8 its 8-wide vector (int8 or long8,
 * given with it by the host where a kernel takes one).
 *
 * One kernel per program (cl_backend.h): kernel K is built alone with
 * -DCG_ONE_KERNEL=1 -DCG_KERNEL_K=1, and a source wraps each kernel in
 * #if CG_WANT(K) so that it still builds whole without them. */
#ifndef IDX
#define IDX int
#endif
#ifndef IDX8
#define IDX8 int8
#endif
#ifndef CG_ONE_KERNEL
#define CG_ONE_KERNEL 0
#endif
#define CG_WANT(k) (!CG_ONE_KERNEL || CG_KERNEL_##k)

/* Records an invalid input value in the node's check words (plugin.h,
 * CG_CHECK_*: flag, input, value, position low/high, lo, hi): the first
 * work-item to find one claims the record, the host reads it after the run
 * and fails the node with the CPU kernels' message. `check` may be NULL (a
 * host that gives no words): nothing is recorded then. */
inline void cg_check_report(__global int *check, int word, int input, int value, long pos, int lo, int hi) {
    if (!check) return;
    __global int *w = check + word;
    if (atomic_cmpxchg(w, 0, 1) != 0) return;
    w[1] = input;
    w[2] = value;
    w[3] = (int)(pos & 0xffffffffL);
    w[4] = (int)(pos >> 32);
    w[5] = lo;
    w[6] = hi;
}

/* Natural logarithm for every kernel instead of the built-in log(): the
 * same result on every implementation (at most 0.84 ulp from the exact
 * value over every positive float, measured on PoCL and rusticl; PoCL's
 * log is within 0.63, Mesa's libclc within 1.30), and no table lookup:
 * libclc's log reads a constant table, which Mesa's llvmpipe loads through
 * a kernel argument and, inside any branch, warns about on stderr
 * ("Treating load_kernel_arg in control flow as uniform"). x = 2^k m with
 * m in [sqrt(2)/2, sqrt(2)); log(m) = log((1 + s) / (1 - s)) with
 * s = (m - 1) / (m + 1), an odd series in s, |s| <= 0.172; ln 2 in two
 * parts keeps k ln 2 exact. */
inline float cg_log(float x) {
    int hx = as_int(x);
    if (!(x > 0.0f) || hx >= 0x7f800000) return x == 0.0f ? -INFINITY : x == INFINITY ? x : NAN;
    int k = 0;
    if (hx < 0x00800000) { /* subnormal: scale by 2^25 into the normal range */
        x *= 33554432.0f;
        hx = as_int(x);
        k = -25;
    }
    k += (hx >> 23) - 127;
    hx &= 0x007fffff;
    const int big = (hx + 0x4afb0d) & 0x800000; /* mantissa >= sqrt(2): use m / 2 */
    const float m = as_float(hx | (big ^ 0x3f800000));
    k += big >> 23;
    const float f = m - 1.0f, s = f / (2.0f + f), z = s * s, w = z * z;
    /* r ~ (log((1 + s) / (1 - s)) - 2 s) / s = 2/3 z + 2/5 z^2 + 2/7 z^3 + ...
     * (coefficients fitted for the interval), in even and odd powers of z */
    const float r = z * (0.66666668653f + w * (0.28571429849f + w * (0.18183572590f + w * 0.14798198640f))) +
                    w * (0.40000000596f + w * (0.22222198546f + w * 0.15313838422f));
    const float hfsq = 0.5f * f * f, dk = (float)k;
    return dk * 6.9313812256e-01f - ((hfsq - (s * (hfsq + r) + dk * 9.0580006145e-06f)) - f);
}

/* An f16 (its ushort bits) as a float, exactly as the CPU converts it
 * (base/dtype.c): no cl_khr_fp16 needed, and NaN payloads are kept. */
inline float cg_f16_to_f32(ushort h) {
    /* tested on the magnitude, which is below 0x8000: Oclgrind took the
     * exponent tests the compiler made of `e == 31` and `e != 0` wrongly
     * for negative h (-inf became -65536) */
    uint mag = (uint)h & 0x7fffu, sign = ((uint)h ^ mag) << 16, e = mag >> 10, m = mag & 0x3ffu;
    if (mag >= 0x7c00u) return as_float(sign | 0x7f800000u | (m << 13)); /* inf, NaN */
    if (mag >= 0x400u) return as_float(sign | ((e + 112u) << 23) | (m << 13));
    /* zero or subnormal: m * 2^-24, exact in a float */
    float f = (float)m * 5.9604644775390625e-8f;
    return as_float(sign | as_uint(f));
}

/* Component k of an 8-vector: dims and strides are passed to kernels as
 * IDX8 vectors, component k for dim k. */
inline IDX cg_vec_at(IDX8 v, int k) {
    switch (k) {
    case 0: return v.s0;
    case 1: return v.s1;
    case 2: return v.s2;
    case 3: return v.s3;
    case 4: return v.s4;
    case 5: return v.s5;
    case 6: return v.s6;
    default: return v.s7;
    }
}

/* Two offsets of flat index i: i's row-major index in the nd dims `dims`,
 * dotted with the strides sa (into *a) and sb (into *b); a stride of 0
 * broadcasts. */
inline void cg_index_offsets(IDX i, int nd, IDX8 dims, IDX8 sa, IDX8 sb, IDX *a, IDX *b) {
    IDX rem = i, oa = 0, ob = 0;
    for (int d = nd - 1; d >= 0; d--) {
        IDX n = cg_vec_at(dims, d);
        IDX q = rem / n, j = rem - q * n;
        oa += j * cg_vec_at(sa, d);
        ob += j * cg_vec_at(sb, d);
        rem = q;
    }
    *a = oa;
    *b = ob;
}
