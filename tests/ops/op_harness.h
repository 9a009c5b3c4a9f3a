/* Runs one operator definition directly (infer + CPU kernel), without a
 * graph, so operator tests compare a kernel with a naive reference. */
#ifndef CG_TESTS_OP_HARNESS_H
#define CG_TESTS_OP_HARNESS_H

#include "clgraph/plugin.h"

#include <stdint.h>

typedef struct th_tensor {
    cg_tensor_desc desc;
    void *data; /* inputs: caller's; outputs: malloc'ed by th_run */
} th_tensor;

#define TH_MAX_ATTRS 16

typedef struct th_attrs {
    cg_attr_value v[TH_MAX_ATTRS];
    int64_t ints_store[TH_MAX_ATTRS][CG_MAX_DIMS * 2];
} th_attrs;

/* Fills attrs with the op's declared defaults. */
void th_attrs_init(th_attrs *a, const cg_op_def *def);
void th_set_int(th_attrs *a, const cg_op_def *def, const char *key, int64_t v);
void th_set_float(th_attrs *a, const cg_op_def *def, const char *key, double v);
void th_set_string(th_attrs *a, const cg_op_def *def, const char *key, const char *v);
void th_set_ints(th_attrs *a, const cg_op_def *def, const char *key, int n, const int64_t *v);

/* Makes an f32 / i32 input descriptor. */
th_tensor th_f32(float *data, int ndim, const int64_t *dims);
th_tensor th_i32(int32_t *data, int ndim, const int64_t *dims);

/* Non-zero: th_run treats every input as a parameter, as a plan does a
 * weight: the kernel's create (if any) runs first and its state is passed. */
extern int th_as_params;

/* attrs NULL means the op's declared defaults.
 * Runs infer, then the CPU kernel with a zeroed workspace of the size it
 * asks. Output data is malloc'ed (free with th_free_outputs). On failure
 * returns CG_OP_ERROR and the message is in `err`. */
cg_op_status th_run(const cg_op_def *def, int n_in, const th_tensor *in, const th_attrs *attrs, int n_out,
                    th_tensor *out, char *err, size_t err_size);

/* Runs only the inference. */
cg_op_status th_infer(const cg_op_def *def, int n_in, const th_tensor *in, const th_attrs *attrs, int n_out,
                      th_tensor *out, char *err, size_t err_size);

void th_free_outputs(int n_out, th_tensor *out);

/* Deterministic pseudo-random numbers for test data. */
void th_seed(uint64_t s);
float th_uniform(float lo, float hi);
void th_fill(float *x, int64_t n, float lo, float hi);

/* Max |a - b| over n floats. */
double th_max_abs_diff(const float *a, const float *b, int64_t n);

#endif
