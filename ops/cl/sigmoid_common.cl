/* The logistic function the elementwise (sigmoid), rnn (gates) and
 * ew_fused kernels share, put in front of each when they are embedded
 * (ops/meson.build): they must round alike, as sigmoid_f does on the CPU.
 * Never evaluates exp of a large positive number: no inf / inf = NaN. */
inline float cg_sigmoid(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + exp(-x));
    float e = exp(x);
    return e / (1.0f + e);
}
