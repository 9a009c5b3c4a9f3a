/* The math the elementwise, math, rnn and ew_fused kernels share, put in
 * front of each when they are embedded (ops/meson.build): each function
 * must round alike wherever it is used. */

/* The logistic function (sigmoid, the rnn gates), as sigmoid_f does on
 * the CPU. Never evaluates exp of a large positive number: no inf / inf =
 * NaN. */
inline float cg_sigmoid(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + exp(-x));
    float e = exp(x);
    return e / (1.0f + e);
}

/* erf in f32 (OpenCL's erf is a library call per element on PoCL, ~25
 * ns): the CPU backend's two fits (backends/cpu/cpu_math.c, erf_a and
 * erf_b: Chebyshev fits of degree 12 written in powers of t) with their
 * coefficients rounded to f32 and evaluated by fma. |x| < 2.25: x A(t), t
 * = (x^2 - 2.53125) * 0.395; above: B(t) with the sign of x, t = (min(|x|,
 * 4) - 3.125) * 1.143 (erf rounds to 1 from 3.92 on). Within 2.4 ulp of
 * the correctly rounded erf over a dense sweep of [-5, 5] and of 2^-30 ..
 * 8 (the CPU's within 1); NaN stays NaN. */
__constant float cg_erf_a[13] = {
    0x1.39f1b6p-1f, -0x1.0bfaf2p-2f, 0x1.1d9fccp-3f, -0x1.17b4cap-4f, 0x1.e2002cp-6f,
    -0x1.6c6a48p-7f, 0x1.e7133p-9f, -0x1.228e08p-10f, 0x1.38241cp-12f, -0x1.2e8108p-14f,
    0x1.0e71c4p-16f, -0x1.f3c50cp-19f, 0x1.7a9a8p-21f};
__constant float cg_erf_b[13] = {
    0x1.fffeb4p-1f, 0x1.db54dp-15f, -0x1.44eea8p-13f, 0x1.18ff66p-12f, -0x1.56b93p-12f,
    0x1.3651eep-12f, -0x1.a9a11ep-13f, 0x1.b6a988p-14f, -0x1.41ad6ap-15f, 0x1.04dc42p-17f,
    0x1.3e17c6p-20f, -0x1.acc51ap-20f, 0x1.d2f06ap-22f};

inline float cg_erf_poly(__constant const float *c, float t) {
    float r = c[12];
    for (int k = 11; k >= 0; k--) r = fma(r, t, c[k]);
    return r;
}

inline float cg_erf(float x) {
    const float ax = fabs(x);
    const float lo = x * cg_erf_poly(cg_erf_a, (x * x - 0x1.44p+1f) * 0x1.948b1p-2f);
    const float hi = copysign(cg_erf_poly(cg_erf_b, (fmin(ax, 4.0f) - 0x1.9p+1f) * 0x1.24924ap+0f), x);
    return isnan(x) ? x : ax < 2.25f ? lo : hi;
}
