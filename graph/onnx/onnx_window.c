/* HannWindow, HammingWindow and BlackmanWindow: a window's values depend
 * on its size alone, which must be known at import; they are computed
 * there in double, as ONNX's reference does, and rounded to the output
 * type (output_datatype, float by default). */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <math.h>
#include <string.h>

#include "dtype.h"

/* Element n of the window of N_1 = size (periodic) or size - 1. */
static double window_at(const char *op, int64_t n, double n1) {
    const double pi = 3.14159265358979323846;
    if (!strcmp(op, "HannWindow")) {
        const double v = sin((double)n * pi / n1);
        return v * v;
    }
    if (!strcmp(op, "HammingWindow")) return 25.0 / 46.0 - cos((double)n * pi * 2 / n1) * (1 - 25.0 / 46.0);
    return cos((double)n * (pi * 2) / n1) * -0.5 + cos((double)n * (pi * 4) / n1) * 0.08 + 0.42;
}

/* v (double) stored as element i of t (f32, f16, bf16 or an integer). */
static void store(cg_tensor *t, int64_t i, double v) {
    const float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    void *p = cg_tensor_data(t);
    switch (cg_tensor_dtype(t)) {
    case CG_F32: ((float *)p)[i] = f; break;
    case CG_F16: ((uint16_t *)p)[i] = cg_f32_to_f16_bits(b); break;
    case CG_BF16: ((uint16_t *)p)[i] = cg_f32_to_bf16_bits(b); break;
    case CG_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    case CG_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case CG_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    default: ((uint8_t *)p)[i] = (uint8_t)v; break;
    }
}

cg_status cg_onnx_map_window(onnx_imp *im) {
    static const char *const known[] = {"output_datatype", "periodic", NULL};
    const cg_tensor *sz;
    cg_status s;
    if ((s = onnx_check_attrs(im, known)) ||
        (s = onnx_need_const(im, onnx_in(im, 0), "input 0 (size: the output's length)", &sz)))
        return s;
    const int64_t size = cg_onnx_int_at(sz, 0), ot = onnx_attr_int(im, "output_datatype", 1);
    const cg_dtype dt = cg_onnx_dtype((int32_t)ot);
    if (cg_tensor_numel(sz) != 1 || size < 0 || size > ((int64_t)1 << 24))
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "a window size of %lld values (one, 0 to 2^24)", (long long)size);
    if (!dt || dt == CG_BOOL)
        return onnx_fail(im, CG_ERR_UNSUPPORTED, "output_datatype %s", cg_onnx_type_name((int32_t)ot));
    cg_tensor *t;
    if ((s = cg_tensor_create(dt, 1, &size, &t))) return s;
    const double n1 = (double)(onnx_attr_int(im, "periodic", 1) ? size : size - 1);
    for (int64_t n = 0; n < size; n++) store(t, n, window_at(im->node->op_type, n, n1));
    return onnx_set_const(im, 0, t);
}
