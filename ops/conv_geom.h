/* The window geometry that conv, conv_transpose and the pooling ops share:
 * per spatial axis the input and kernel sizes, stride, dilation, pads and
 * output size, with ONNX's rules (explicit pads, auto_pad, ceil_mode,
 * output_padding). Kernels see every op as 3-D: a 1-D or 2-D op gets
 * leading axes of size 1, so one loop nest (and one OpenCL kernel) serves
 * all three ranks. */
#ifndef CG_OPS_CONV_GEOM_H
#define CG_OPS_CONV_GEOM_H

#include "ops_cl.h"

#include <stdint.h>

#define CG_CONV_AXES 3

typedef struct cg_conv_geom {
    int nsp; /* the op's spatial axes (1..3); axes [0, 3 - nsp) are padding */
    int64_t in[CG_CONV_AXES], k[CG_CONV_AXES], s[CG_CONV_AXES], d[CG_CONV_AXES];
    int64_t pb[CG_CONV_AXES], pe[CG_CONV_AXES], op[CG_CONV_AXES], out[CG_CONV_AXES];
} cg_conv_geom;

/* Where an op keeps each geometry attribute in its attrs (-1: it has none). */
typedef struct cg_conv_attr_ix {
    int strides, dilations, pads, auto_pad, ceil_mode, output_padding;
} cg_conv_attr_ix;

/* The attribute definitions the ops share (docs included). */
#define CG_CONV_ATTR_STRIDES \
    CG_ATTR(.name = "strides", .type = CG_ATTR_INTS, .doc = "step of the window per spatial axis (default 1 each)")
#define CG_CONV_ATTR_DILATIONS                         \
    CG_ATTR(.name = "dilations", .type = CG_ATTR_INTS, \
            .doc = "distance between the kernel's taps per spatial axis (default 1 each)")
#define CG_CONV_ATTR_AUTO_PAD                                                                                   \
    CG_ATTR(.name = "auto_pad", .type = CG_ATTR_STRING, .default_string = "",                                   \
            .doc = "\"\" (the pads given), \"same_upper\" / \"same_lower\" (output ceil(in / stride), the odd " \
                   "pad at the end / start), \"valid\" (no pads)")

/* Fills g for an op over nsp spatial axes with input sizes in_sp and
 * kernel sizes k (both nsp long, as the op's tensors give them; in_sp may
 * hold symbolic or unknown dims, k must be sizes). transpose: the output
 * size of a transposed convolution. A symbolic input size gives an output
 * that keeps the symbol where the window preserves the size (stride 1 and
 * pads that add back the kernel's extent), else CG_DIM_UNKNOWN; pads that
 * depend on a symbolic size stay 0 (kernels see sizes only). Fails naming
 * the attribute on a bad value or a window larger than the padded input. */
cg_op_status cg_conv_geom_make(const cg_op_call *call, const cg_conv_attr_ix *ix, int nsp, const int64_t *in_sp,
                               const int64_t *k, int transpose, cg_conv_geom *g);

/* Product of the three output / input / kernel sizes of a concrete g. */
static inline int64_t cg_conv_out_size(const cg_conv_geom *g) { return g->out[0] * g->out[1] * g->out[2]; }
static inline int64_t cg_conv_in_size(const cg_conv_geom *g) { return g->in[0] * g->in[1] * g->in[2]; }
static inline int64_t cg_conv_k_size(const cg_conv_geom *g) { return g->k[0] * g->k[1] * g->k[2]; }

/* The optional bias (input 2, f32 [M]; m_is names M in the message) checked,
 * and output 0 set: f32 [N, M, the spatial sizes of g]. */
cg_op_status cg_conv_output(cg_op_call *call, int64_t n, int64_t m, const cg_conv_geom *g, const char *m_is);

/* Positions per GEMM block: as many as keep a block of `per` floats each
 * within about 2 MiB, at least 16, at most p. */
int64_t cg_conv_block(int64_t per, int64_t p);

/* Checks x: f32 (or one of `more` extra dtypes, 0-ended, NULL for none),
 * [N, C, spatial...] with 1 to 3 spatial axes; writes nsp. */
cg_op_status cg_conv_check_x(const cg_op_call *call, const cg_op_dtype *more, int *nsp);

/* Sets arguments first .. first + 6 of a conv.cl or pool.cl kernel: the
 * geometry (in, k, s, d, pb, out as int4, the three axes in x, y, z) and
 * the output count `total` (a long). */
cg_op_status cg_conv_cl_geom_args(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint first,
                                  const cg_conv_geom *g, int64_t total);

#endif
