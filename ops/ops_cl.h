/* Host-side helpers of the built-in operators' OpenCL kernels (sources in
 * ops/cl/<name>.cl, embedded as cg_cl_<name>): getting a kernel built for
 * the index type of its tensors, setting arguments with messages that name
 * the kernel and the argument, choosing work-group sizes and launching.
 *
 * Every helper that can fail writes its message into args->call->err (like
 * cg_op_fail) and returns CG_OP_ERROR, or NULL for a kernel, so a caller
 * chains them with || and returns CG_OP_ERROR. Nothing here allocates. */
#ifndef CG_OPS_CL_H
#define CG_OPS_CL_H

#include "ops_common.h"

#include <CL/cl.h>

/* Built-in ops call the OpenCL services directly; plugins reach the same
 * functions through their host table (cg_host_api.cl_*). */
#include "opencl/cl_host.h"

/* ---- kernels ---- */

/*
 * The kernel `name` of the OpenCL C source `source` (cg_host_cl_kernel: built
 * on first use, then cached), built with the index type IDX of the ops/cl
 * sources: -DIDX=int, or -DIDX=long when `wide` (the caller's choice for
 * tensors of 2^31 elements or more). With `idx8` also -DIDX8=int8 or long8
 * (for cg_ops_cl_idx8 arguments). `extra` (NULL for none) is appended to the
 * options after a space. NULL on failure, with the message (the build log
 * for a compile error) in args->call->err. Sources without IDX (rnn.cl,
 * attention.cl) are fetched with cg_host_cl_kernel directly.
 */
cl_kernel cg_ops_cl_kernel(const cg_kernel_args *a, const char *source, const char *name, int wide, int idx8,
                           const char *extra);

/* ---- arguments ---- */

/*
 * Sets argument `i` of kernel `k` to `size` bytes at `value` (value NULL:
 * `size` bytes of local memory). `name` is the kernel's name for the
 * message "clSetKernelArg(<name>, <i>): <OpenCL error>".
 */
cg_op_status cg_ops_cl_arg(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint i, size_t size,
                           const void *value);

/* One kernel argument for cg_ops_cl_args: its size and a pointer to its
 * value (NULL for local memory of that size). */
typedef struct cg_ops_cl_arg_value {
    size_t size;
    const void *value;
} cg_ops_cl_arg_value;

/* The argument held in lvalue v (a cl_mem, cl_int, cl_long8, ...). */
#define CG_OPS_CL_ARG(v) \
    { sizeof(v), &(v) }
/* A local-memory argument of `bytes` bytes. */
#define CG_OPS_CL_LOCAL(bytes) \
    { (bytes), NULL }
/* Number of elements of an array of arguments. */
#define CG_OPS_CL_N_ARGS(array) ((int)(sizeof(array) / sizeof((array)[0])))

/* Sets arguments first, first + 1, ... of kernel `k` from args[0..n), each
 * as cg_ops_cl_arg; stops at the first failure. */
cg_op_status cg_ops_cl_args(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint first, int n,
                            const cg_ops_cl_arg_value *args);

/* Sets IDX argument i (cg_ops_cl_kernel) to v: a cl_int, or a cl_long when
 * `wide`. */
cg_op_status cg_ops_cl_idx(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint i, int wide, int64_t v);

/* Sets IDX8 argument i (a kernel built with idx8) to v[0..n), n <= 8, and 1
 * in the other components: a cl_int8, or a cl_long8 when `wide`. */
cg_op_status cg_ops_cl_idx8(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint i, int wide,
                            const int64_t *v, int n);

/* ---- work-group sizes ---- */

/* The usual cap of a work-group size (the host already caps the device's
 * limit at 256; kernels' own limits may be lower, see cg_ops_cl_work_group). */
#define CG_OPS_CL_MAX_WORK_GROUP 256

/*
 * Work-group size of a 1-D launch of kernel `k`: the device's limit
 * (cg_host_cl_info(CG_CL_INFO_MAX_WORK_GROUP), 64 when unknown) capped at
 * `cap`, at the kernel's own CL_KERNEL_WORK_GROUP_SIZE on the queue's
 * device (often below the device's: it depends on the kernel's registers
 * and local memory) and at CL_DEVICE_MAX_WORK_ITEM_SIZES[0]; rounded down to
 * a power of two when `pow2` (for kernels that reduce over the group as a
 * tree), else to a whole multiple of the kernel's
 * CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE. Pass the kernel the launch
 * will run: a limit queried for another kernel does not hold (NULL: the
 * device's limits only, the starting point of a kernel built for a group
 * shape, which cg_ops_cl_group_fits then checks).
 */
size_t cg_ops_cl_work_group(const cg_kernel_args *a, cl_kernel k, size_t cap, int pow2);

/*
 * Whether kernel `k` runs work-groups of local[0..dims) items on the
 * queue's device with `dyn_local` bytes of local-memory arguments: each
 * dimension within CL_DEVICE_MAX_WORK_ITEM_SIZES, the group within the
 * device's and the kernel's CL_KERNEL_WORK_GROUP_SIZE, and the kernel's own
 * local memory (CL_KERNEL_LOCAL_MEM_SIZE) plus `dyn_local` within
 * CL_DEVICE_LOCAL_MEM_SIZE. Kernels built for a group shape (-D options)
 * build, ask this, and shrink the shape until it holds.
 */
int cg_ops_cl_group_fits(const cg_kernel_args *a, cl_kernel k, int dims, const size_t *local, size_t dyn_local);

/* Halves `local` while half of it still covers `n` work-items, but not below
 * `min_size`: a group no wider than n needs. */
size_t cg_ops_cl_fit_work_group(size_t local, int64_t n, size_t min_size);

/* Whether kernels take the paths written for CPU devices (host cl_info
 * CG_CL_INFO_CPU_PATHS: a device of type CPU and not GPU, PoCL and the like,
 * which run a work-group's items one after another between barriers, so a
 * barrier costs a pass over the whole group; CLGRAPH_CL_PATHS=cpu|gpu
 * forces a set). */
int cg_ops_cl_is_cpu(const cg_kernel_args *a);

/* ---- checks of input values ---- */

/*
 * When the host gave the node check words (a->check, for kernels flagged
 * CG_KERNEL_FLAG_CHECKS), launches a check of input `input`'s first n i32
 * values: one outside [lo, hi] is recorded there, and the host fails the
 * run with the message a CPU kernel gives (cg_op_fail_range). Bounds past
 * the int32 range are clamped (an i32 value cannot pass them). Without
 * check words it does nothing. The op's own kernel should still treat an
 * invalid value harmlessly (zeros, a clamp): it runs before the host knows.
 */
cg_op_status cg_ops_cl_check_range(const cg_kernel_args *a, int input, int64_t n, int64_t lo, int64_t hi);

/* The check-words arguments of a kernel that reports itself: the buffer
 * (NULL without words) and the node's first word. */
cg_op_status cg_ops_cl_check_args(const cg_kernel_args *a, cl_kernel k, const char *name, cl_uint first);

/* ---- launches ---- */

/*
 * Enqueues `k` over `dims` dimensions with cg_host_cl_launch, which rounds
 * `global` up to a multiple of `local` (kernels bounds-check). When `name`
 * is not NULL a failure's message is prefixed with "launching <name>: ".
 */
cg_op_status cg_ops_cl_launch(const cg_kernel_args *a, cl_kernel k, const char *name, int dims, const size_t *global,
                              const size_t *local);

/* cg_ops_cl_launch over n work-items (1-D) in work-groups of `local`. */
cg_op_status cg_ops_cl_launch_1d(const cg_kernel_args *a, cl_kernel k, const char *name, int64_t n, size_t local);

/* Runs the one-element-per-item kernel `name` of `source`, taking (x, y,
 * long n, then n_f floats f), over the elements of input 0 into output 0
 * (64-bit indexing from 2^31 elements on; nothing for an empty tensor). */
cg_op_status cg_ops_cl_unary(const cg_kernel_args *a, const char *source, const char *name, int n_f, const float *f);

/* cg_ops_cl_unary of the kernel built with the options `extra` (NULL for
 * none) and no float arguments. */
cg_op_status cg_ops_cl_unary_built(const cg_kernel_args *a, const char *source, const char *name, const char *extra);

/* The OpenCL unsigned type of an element of `bytes` bytes (1, 2, 4 or 8),
 * as a build option "-DT=uchar" ... "-DT=ulong": how the data movement
 * kernels copy any dtype. */
const char *cg_ops_cl_elem_type_option(size_t bytes);

#endif
