/*
 * clgraph operator plugin ABI, version 1.6.
 *
 * A plugin is a shared library that exports exactly one entry symbol,
 * `cg_plugin_entry` (see CG_PLUGIN_ENTRY_SYMBOL), returning a static
 * description of the plugin and of the operators it provides. The built-in
 * operators of clgraph are registered through this same ABI.
 *
 * Compatibility rules:
 *  - the host loads a plugin only if its `abi_major` equals the host's;
 *  - a plugin built against a newer minor version is accepted, and the host
 *    reads only the fields it knows (the minor is capped at the host's);
 *  - every struct begins with `struct_size`, so either side reads only the
 *    prefix it knows and new fields are only ever appended; arrays a plugin
 *    hands over (attributes, kernels) are walked with their elements' own
 *    struct_size, so a plugin built against another minor has its arrays
 *    read at its own stride;
 *  - the host accepts any struct at least as large as its ABI 1.0 layout
 *    (the fields up to the last one 1.0 had); fields added later read as
 *    zero/NULL for a plugin that predates them;
 *  - the host API table (cg_host_api) only grows;
 *  - errors cross the boundary as a cg_op_status plus a message written into
 *    the caller's buffer, never by longjmp, exit() or abort().
 *
 * Dimensions: a dimension is an int64_t. A value >= 0 is a concrete size.
 * During verification (before shapes are bound), a dimension may be symbolic
 * (a named size such as B or S, encoded as CG_DIM_SYM(k), k >= 0) or unknown
 * (CG_DIM_UNKNOWN). Shape inference functions must accept these: compare
 * dims with cg_dim_compatible(), and produce CG_DIM_UNKNOWN where an output
 * size cannot be computed from non-concrete inputs. When a plan is built,
 * inference runs again with every dimension concrete.
 */
#ifndef CLGRAPH_PLUGIN_H
#define CLGRAPH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/** ABI major version: a plugin must be built with the same major. */
#define CG_PLUGIN_ABI_MAJOR 1
/** ABI minor version: grows when fields or host functions are appended. */
#define CG_PLUGIN_ABI_MINOR 6
/** Name of the one symbol every plugin exports. */
#define CG_PLUGIN_ENTRY_SYMBOL "cg_plugin_entry"

/** Most dimensions a tensor may have. */
#define CG_MAX_DIMS 8

/** Unknown dimension (only during verification). */
#define CG_DIM_UNKNOWN ((int64_t)-1)
/** Symbolic dimension number k (only during verification). */
#define CG_DIM_SYM(k) ((int64_t)(-2 - (int64_t)(k)))

/** Marks the plugin entry point as exported from the plugin library. */
#if defined(__GNUC__)
#define CG_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define CG_PLUGIN_EXPORT
#endif

/** Status returned by every plugin callback. */
typedef enum cg_op_status {
    CG_OP_OK = 0,       /**< success */
    CG_OP_ERROR = 1,    /**< failure; the message is in the call's err buffer */
    CG_OP_NO_MEMORY = 2 /**< an allocation failed */
} cg_op_status;

/**
 * Element types: cg_dtype of dtype.h (values are part of the ABI). These are
 * the ABI 1.0 names, kept so that plugins written against 1.0 compile
 * unchanged; cg_op_dtype is the same enum, so cg_tensor_desc is laid out as
 * before. CG_I16, CG_U16, CG_U32 and CG_U64 came with ABI 1.5: a plugin
 * built against an older minor is never given a tensor of one of them (its
 * nodes with such an input fail verification). The narrow types CG_F8E4M3FN
 * to CG_U2 came with ABI 1.6, under the same rule for plugins built against
 * 1.0 to 1.5.
 */
typedef cg_dtype cg_op_dtype;
#define CG_OP_F32 CG_F32 /**< 1.0 name of CG_F32 */
#define CG_OP_I32 CG_I32 /**< 1.0 name of CG_I32 */

/** Attribute types. Values are part of the ABI. */
typedef enum cg_attr_type {
    CG_ATTR_INT = 1,    /**< int64_t */
    CG_ATTR_FLOAT = 2,  /**< double */
    CG_ATTR_STRING = 3, /**< NUL-terminated UTF-8 string */
    CG_ATTR_INTS = 4,   /**< list of int64_t */
    /** (ABI 1.3) list of dims, as .ints: sizes, or symbolic dims written by
     * name in the IR (`shape: [1, S, B, 64]`). Shape inference at verify
     * time sees the symbols as CG_DIM_SYM(k); a plan binds them, so
     * inference for a plan and the kernels see sizes only. */
    CG_ATTR_DIMS = 5
} cg_attr_type;

/** Backend kinds a kernel may be written for. Values are part of the ABI. */
typedef enum cg_backend_kind {
    CG_BACKEND_CPU = 1,   /**< host memory; data pointers are plain pointers */
    CG_BACKEND_OPENCL = 2 /**< OpenCL buffers; data pointers are cl_mem */
} cg_backend_kind;

/**
 * Declares one attribute an operator accepts. An op's attributes are an
 * array the host walks with struct_size as the stride.
 */
typedef struct cg_attr_def {
    uint32_t struct_size;       /**< sizeof(cg_attr_def) */
    const char *name;           /**< attribute name, e.g. "axis" */
    cg_attr_type type;          /**< its type; a value of another type is rejected */
    int required;               /**< non-zero: a node must set it */
    int64_t default_int;        /**< default when absent (INT) */
    double default_float;       /**< default when absent (FLOAT) */
    const char *default_string; /**< default when absent (STRING), may be NULL */
    const char *doc;            /**< one line of documentation */
} cg_attr_def;

/** A resolved attribute value, as the host hands it to a callback. */
typedef struct cg_attr_value {
    cg_attr_type type;   /**< the declared type */
    int present;         /**< non-zero if the node set it (else the default) */
    int64_t i;           /**< INT */
    double f;            /**< FLOAT */
    const char *s;       /**< STRING (never NULL: "" if no default) */
    const int64_t *ints; /**< INTS */
    int32_t n_ints;      /**< INTS length */
} cg_attr_value;

/** Element type and shape of one tensor. */
typedef struct cg_tensor_desc {
    cg_op_dtype dtype;         /**< element type */
    int32_t ndim;              /**< number of dimensions, 0..CG_MAX_DIMS */
    int64_t dims[CG_MAX_DIMS]; /**< sizes, outermost first (row-major) */
} cg_tensor_desc;

struct cg_host_api;

/**
 * Everything a callback needs about one node. `attrs` is indexed like the
 * operator's `attrs` declaration, with defaults filled in.
 */
typedef struct cg_op_call {
    uint32_t struct_size;           /**< sizeof(cg_op_call) */
    const char *node_name;          /**< the node's name, for messages */
    int32_t n_inputs;               /**< inputs given to the node */
    int32_t n_outputs;              /**< outputs the node defines */
    const cg_tensor_desc *inputs;   /**< n_inputs descriptors */
    cg_tensor_desc *outputs;        /**< n_outputs: written by infer, read-only after */
    const cg_attr_value *attrs;     /**< one per declared attribute */
    char *err;                      /**< message buffer for CG_OP_ERROR */
    size_t err_size;                /**< its size in bytes */
    const struct cg_host_api *host; /**< host services */
    /* ---- ABI 1.4 ---- */
    /** The element sizes the host laid `attrs` and `inputs`/`outputs` out
     * with. cg_attr_value and cg_tensor_desc may gain fields at their end
     * in a later ABI minor; a plugin that indexes through CG_CALL_ATTR,
     * CG_CALL_INPUT and CG_CALL_OUTPUT steps by these and reads the
     * fields it knows, whatever the host's sizes (0: the sizes of this
     * header). A plugin built against 1.0 .. 1.3, which indexes the
     * arrays directly, gets arrays of the element sizes of its ABI. */
    uint32_t attr_size;
    uint32_t desc_size;
} cg_op_call;

/** The element size of call's `attrs` (see cg_op_call.attr_size). */
#define CG_CALL_ATTR_SIZE(call)                                                                     \
    ((call)->struct_size >= offsetof(cg_op_call, attr_size) + sizeof(uint32_t) && (call)->attr_size \
         ? (size_t)(call)->attr_size                                                                \
         : sizeof(cg_attr_value))
/** The element size of call's `inputs` and `outputs`. */
#define CG_CALL_DESC_SIZE(call)                                                                     \
    ((call)->struct_size >= offsetof(cg_op_call, desc_size) + sizeof(uint32_t) && (call)->desc_size \
         ? (size_t)(call)->desc_size                                                                \
         : sizeof(cg_tensor_desc))
/** Attribute i of call, by the host's element size. */
#define CG_CALL_ATTR(call, i) \
    ((const cg_attr_value *)(const void *)((const char *)(call)->attrs + (size_t)(i)*CG_CALL_ATTR_SIZE(call)))
/** Input i of call, by the host's element size. */
#define CG_CALL_INPUT(call, i) \
    ((const cg_tensor_desc *)(const void *)((const char *)(call)->inputs + (size_t)(i)*CG_CALL_DESC_SIZE(call)))
/** Output i of call, by the host's element size. */
#define CG_CALL_OUTPUT(call, i) \
    ((cg_tensor_desc *)(void *)((char *)(call)->outputs + (size_t)(i)*CG_CALL_DESC_SIZE(call)))

/**
 * Arguments to a kernel. For CG_BACKEND_CPU, `in[i]`/`out[i]` point at
 * row-major host data of the shapes in `call`; `workspace` holds at least the
 * bytes the kernel's workspace callback asked for (or NULL if 0).
 * For CG_BACKEND_OPENCL the pointers are cl_mem handles (each a buffer of
 * exactly the tensor, possibly a sub-buffer), `workspace` is a cl_mem or NULL,
 * and `stream` is the
 * device's cl_command_queue.
 */
typedef struct cg_kernel_args {
    uint32_t struct_size;   /**< sizeof(cg_kernel_args) */
    const cg_op_call *call; /**< shapes, attributes, error buffer */
    const void *const *in;  /**< n_inputs input buffers */
    void *const *out;       /**< n_outputs output buffers */
    void *workspace;        /**< scratch memory (uninitialised) */
    size_t workspace_size;  /**< its size in bytes */
    void *stream;           /**< backend queue (OpenCL), NULL on the CPU */
    void *device;           /**< host's handle of the device, for host API calls */
    /* ---- ABI 1.1 ---- */
    void *state; /**< the node's state from the kernel's create callback, or NULL */
    /* ---- ABI 1.2 ---- */
    /**
     * OpenCL kernels flagged CG_KERNEL_FLAG_CHECKS: a cl_mem of cl_int
     * "check words" and the index of this node's first word in it (see
     * CG_CHECK_WORDS); NULL otherwise. A kernel that finds an invalid value
     * in an input (an index or length out of range) records it there, and
     * the host fails the run with a message naming the node, the input, the
     * value, its position and the valid range, as a CPU kernel returning
     * CG_OP_ERROR would.
     */
    void *check;
    int32_t check_word; /**< this node's first word in `check` */
} cg_kernel_args;

/**
 * The check words of one node (ABI 1.2), CG_CHECK_WORDS cl_ints from
 * args->check + args->check_word, all 0 while every value is valid. The
 * first work-item that finds an invalid value claims the record with
 * atomic_cmpxchg(&w[CG_CHECK_FLAG], 0, 1) and, if that returned 0, writes
 * the rest; later finds leave it alone (on the CPU the first position in
 * order is reported; on OpenCL whichever work-item got there first). A
 * kernel should still write something harmless (zeros) where a value is
 * invalid. The host reads the words where it waits for the device anyway
 * and clears them after reporting.
 */
enum {
    CG_CHECK_FLAG = 0,   /**< 1: a record is present */
    CG_CHECK_INPUT = 1,  /**< index of the input holding the value */
    CG_CHECK_VALUE = 2,  /**< the invalid value (an int32) */
    CG_CHECK_POS_LO = 3, /**< its element position in that input, low 32 bits */
    CG_CHECK_POS_HI = 4, /**< high 32 bits */
    CG_CHECK_LO = 5,     /**< the smallest valid value */
    CG_CHECK_HI = 6,     /**< the largest valid value (INT32_MAX when larger) */
    CG_CHECK_WORDS = 8   /**< words per node */
};

/**
 * One kernel of an operator for one backend kind. A plugin hands these over
 * in an array (cg_op_def.kernels) that the host walks with struct_size as
 * the stride, so the array must hold elements of one size.
 */
typedef struct cg_kernel_def {
    uint32_t struct_size;    /**< sizeof(cg_kernel_def) */
    cg_backend_kind backend; /**< which backend runs it */
    /** Bytes of scratch memory needed for this call; NULL means none. */
    size_t (*workspace)(const cg_op_call *call);
    /** Runs the node. Must not allocate on the hot path if it can avoid it. */
    cg_op_status (*run)(const cg_kernel_args *args);
    /* ---- ABI 1.1 ---- */
    /**
     * Optional per-node state, made once per plan instance (a binding of the
     * plan's symbolic dims) before its first run, and handed to every run as
     * args->state: the place to pre-pack or convert weights once, or keep
     * what a kernel computed between runs. `args->in[i]` is the buffer of
     * input i when that input is a parameter (its contents never change
     * while the state lives), NULL otherwise; `args->out` is NULL and
     * `args->workspace` NULL; `device` and `stream` are set as for run.
     * Writes the state and the bytes it holds (counted in the plan's memory
     * statistics). NULL: no state.
     */
    cg_op_status (*create)(const cg_kernel_args *args, void **state, size_t *state_bytes);
    /** Frees a state made by create (never called with NULL). */
    void (*destroy)(void *state);
    /**
     * Optional: whether this kernel runs the node described by args->call
     * (input descriptors, attributes) on args->device (in/out are NULL).
     * Placement asks before it chooses a device, so a kernel that cannot run
     * some inputs (a dtype, a size past a device limit) is not chosen there
     * and the node goes to another device or its decomposition. NULL: the
     * kernel runs every node its op's infer accepts.
     */
    int (*supports)(const cg_kernel_args *args);
    /* ---- ABI 1.2 ---- */
    uint32_t flags; /**< CG_KERNEL_FLAG_* */
} cg_kernel_def;

/** Kernel flags (ABI 1.2). */
enum {
    /** The kernel (OpenCL) reports invalid input values through
     * args->check / args->check_word; the host gives it check words. */
    CG_KERNEL_FLAG_CHECKS = 1u << 0
};

/** Most inputs a conformance case may have. */
#define CG_CONFORM_MAX_INPUTS 32

/**
 * One conformance case of an operator: input types and value ranges and the
 * attributes, so `clgraph conform` can run the op on every device against
 * its CPU kernel with random data. Dims must be concrete.
 */
typedef struct cg_conform_case {
    uint32_t struct_size;                         /**< sizeof(cg_conform_case), set by the host */
    int32_t n_inputs;                             /**< inputs of the node */
    cg_tensor_desc inputs[CG_CONFORM_MAX_INPUTS]; /**< their types */
    double lo[CG_CONFORM_MAX_INPUTS]; /**< values uniform in [lo, hi], of the input's dtype (docs/plugins.md) */
    double hi[CG_CONFORM_MAX_INPUTS]; /**< upper bound of each input's values */
    int32_t n_outputs;                /**< outputs of the node */
    const char *attrs;                /**< attribute text in IR syntax, or NULL */
    double atol;                      /**< abs. tolerance; 0 = default (1e-4 for f32) */
    double rtol;                      /**< rel. tolerance; 0 = default (1e-4 for f32) */
    /* ---- ABI 1.2 (the host zeroes the case before the callback) ---- */
    /** 1: some input's values are invalid for the op (lo/hi outside its
     * domain, e.g. ids past the table): every device must fail the node
     * with a message, none may return a result. */
    int32_t expect_error;
} cg_conform_case;

/** Handle through which a decomposition emits nodes (host-owned). */
typedef struct cg_decomp cg_decomp;

/** Operator flags. */
enum {
    /** Output 0 may share input 0's buffer (same size, elementwise). */
    CG_OP_FLAG_INPLACE0 = 1u << 0
};

/** Definition of one operator. */
typedef struct cg_op_def {
    uint32_t struct_size;           /**< sizeof(cg_op_def) */
    const char *name;               /**< operator name used in graphs, e.g. "gru_cell" */
    const char *doc;                /**< one-paragraph documentation */
    int32_t min_inputs;             /**< fewest inputs */
    int32_t max_inputs;             /**< most inputs; -1 for any number */
    int32_t min_outputs;            /**< fewest outputs */
    int32_t max_outputs;            /**< most outputs */
    const char *const *input_names; /**< NULL-terminated input names for messages and docs, may be NULL */
    const cg_attr_def *attrs;       /**< declared attributes */
    int32_t n_attrs;                /**< their count */
    /**
     * Dtype and shape inference: reads call->inputs and call->attrs, writes
     * call->outputs[0..n_outputs). Returns CG_OP_ERROR with a message (without
     * the node name, which the host adds) on invalid input.
     */
    cg_op_status (*infer)(cg_op_call *call);
    /**
     * Optional decomposition into other operators, used when no kernel exists
     * for a device, and as the op's reference meaning. NULL if none.
     */
    cg_op_status (*decompose)(cg_decomp *d, const cg_op_call *call);
    const cg_kernel_def *kernels; /**< kernels, at most one per backend kind */
    int32_t n_kernels;            /**< their count */
    uint32_t flags;               /**< CG_OP_FLAG_* */
    /**
     * Conformance cases: fills case `index` (0, 1, ...) and returns 1, or
     * returns 0 past the last one. NULL: the op has no cases and conform
     * reports it as untested.
     */
    int32_t (*conform_case)(int32_t index, cg_conform_case *c);
} cg_op_def;

/**
 * Services the host offers to plugins. The table only grows: check
 * `struct_size` before using a function added in a later minor version.
 */
typedef struct cg_host_api {
    uint32_t struct_size; /**< sizeof(cg_host_api) of the host */
    uint32_t abi_major;   /**< host ABI major */
    uint32_t abi_minor;   /**< host ABI minor */
    /**
     * Row-major single-precision GEMM on host memory:
     * C = alpha * op(A) op(B) + beta * C, op(X) = X or X^T.
     * A is [M,K] (or [K,M] if trans_a), B is [K,N] (or [N,K] if trans_b).
     */
    void (*sgemm)(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
    /** Decomposition: value id of the op's input i. */
    int32_t (*decomp_input)(cg_decomp *d, int32_t i);
    /**
     * Decomposition: adds a node of operator `op` on `n_in` value ids; writes
     * the ids of its `n_out` new outputs. `attrs` is a text attribute list in
     * the IR syntax (e.g. "axis: 1, transpose_b: 1") or NULL. Returns
     * CG_OP_ERROR (message kept by the host) on failure.
     */
    cg_op_status (*decomp_node)(cg_decomp *d, const char *op, int32_t n_in, const int32_t *in, int32_t n_out,
                                int32_t *out, const char *attrs);
    /** Decomposition: makes value id `v` the op's output i. */
    cg_op_status (*decomp_output)(cg_decomp *d, int32_t i, int32_t v);

    /* ---- OpenCL services (kernels whose backend is CG_BACKEND_OPENCL) ----
     * Since ABI 1.4 these are also the "opencl" extension (cg_host_opencl,
     * asked for through `extension` below), which is how a plugin should
     * reach them: a build of clgraph without OpenCL answers NULL there. The
     * members stay for plugins built against 1.0 to 1.3. */

    /**
     * The cl_kernel `name` from OpenCL C 1.2 `source` built with `options`
     * for the kernel's device. Programs are built on first use, cached in
     * memory and on disk; later calls return the same object, so a kernel
     * creates no OpenCL object in the steady state. The returned kernel is
     * the host's (do not release it); set its arguments and launch it before
     * returning from run. NULL on failure, with the message (the build log
     * for a compile error) in args->call->err.
     */
    void *(*cl_kernel)(const cg_kernel_args *args, const char *source, const char *options, const char *name);
    /**
     * Enqueues `kernel` on the device's queue over `dims` dimensions.
     * `global` is rounded up to a multiple of `local` (when local is not
     * NULL), so the kernel must bounds-check. Fails with the OpenCL error's
     * name in args->call->err.
     */
    cg_op_status (*cl_launch)(const cg_kernel_args *args, void *kernel, int32_t dims, const size_t *global,
                              const size_t *local);
    /**
     * Row-major SGEMM on OpenCL buffers: C = alpha op(A) op(B) + beta C, with
     * element offsets. The backend picks CLBlast or its own GEMV/GEMM kernel
     * by measurement per device and shape, and records the choice.
     */
    cg_op_status (*cl_sgemm)(const cg_kernel_args *args, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                             float alpha, void *a, size_t a_off, int64_t lda, void *b, size_t b_off, int64_t ldb,
                             float beta, void *c, size_t c_off, int64_t ldc);
    /** A device limit: one of CG_CL_INFO_*. 0 if unknown. */
    int64_t (*cl_info)(const cg_kernel_args *args, int32_t what);
    /** Name of an OpenCL error code, e.g. "CL_OUT_OF_RESOURCES". */
    const char *(*cl_error_name)(int32_t code);

    /* ---- ABI 1.1 (check struct_size before use) ---- */

    /**
     * Runs fn(ctx, begin, end) over [0, n) in contiguous chunks of at least
     * `grain` items on the CPU backend's thread pool (the caller's thread
     * included) and returns when every chunk is done: what the built-in CPU
     * kernels use. Serial when n <= grain, on a one-thread machine, or when
     * called from inside a pool task (no nesting). Which thread runs which
     * chunk varies: fn must compute each item the same way wherever it
     * lands. Calls from several threads at once are serialised.
     */
    void (*parallel_for)(int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx);
    /** Threads parallel_for runs on (CLGRAPH_THREADS, else the online CPUs). */
    int32_t (*cpu_threads)(void);

    /* ---- ABI 1.4 (check struct_size before use) ---- */

    /**
     * A group of services one kind of device offers, by name, at least
     * `min_version` of it: "opencl" (CG_HOST_OPENCL) gives a cg_host_opencl.
     * NULL when this host has no such extension (a build without OpenCL, a
     * name it does not know) or only an older version. The pointer stays
     * valid while the plugin is loaded; check its struct_size before using
     * members added in later versions.
     */
    const void *(*extension)(const char *name, uint32_t min_version);
} cg_host_api;

/** Name of the OpenCL services extension (cg_host_api.extension). */
#define CG_HOST_OPENCL "opencl"
/** Its version this header describes. */
#define CG_HOST_OPENCL_VERSION 1

/**
 * The OpenCL services (extension "opencl", ABI 1.4): the same functions as
 * cg_host_api's cl_* members, documented there, for kernels whose backend
 * is CG_BACKEND_OPENCL.
 */
typedef struct cg_host_opencl {
    uint32_t struct_size; /**< sizeof(cg_host_opencl) of the host */
    uint32_t version;     /**< CG_HOST_OPENCL_VERSION of the host */
    /** See cg_host_api.cl_kernel. */
    void *(*kernel)(const cg_kernel_args *args, const char *source, const char *options, const char *name);
    /** See cg_host_api.cl_launch. */
    cg_op_status (*launch)(const cg_kernel_args *args, void *kernel, int32_t dims, const size_t *global,
                           const size_t *local);
    /** See cg_host_api.cl_sgemm. */
    cg_op_status (*sgemm)(const cg_kernel_args *args, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                          float alpha, void *a, size_t a_off, int64_t lda, void *b, size_t b_off, int64_t ldb,
                          float beta, void *c, size_t c_off, int64_t ldc);
    /** See cg_host_api.cl_info (CG_CL_INFO_*). */
    int64_t (*info)(const cg_kernel_args *args, int32_t what);
    /** See cg_host_api.cl_error_name. */
    const char *(*error_name)(int32_t code);
} cg_host_opencl;

/** Device limits readable through cg_host_api.cl_info. */
enum {
    CG_CL_INFO_MAX_WORK_GROUP = 1, /**< CL_DEVICE_MAX_WORK_GROUP_SIZE (capped at 256) */
    CG_CL_INFO_LOCAL_MEM = 2,      /**< CL_DEVICE_LOCAL_MEM_SIZE in bytes (capped at 32 KiB) */
    CG_CL_INFO_COMPUTE_UNITS = 3,  /**< CL_DEVICE_MAX_COMPUTE_UNITS */
    CG_CL_INFO_MEM_ALIGN = 4,      /**< sub-buffer offset alignment in bytes */
    /** ABI 1.1: 1 when kernels should take paths written for CPU devices
     * (their drivers run a work-group's items as a loop), 0 for GPU paths;
     * CLGRAPH_CL_PATHS=cpu|gpu forces it. A 1.0 host answers 0. */
    CG_CL_INFO_CPU_PATHS = 5
};

/** What a plugin's entry symbol returns. */
typedef struct cg_plugin_desc {
    uint32_t struct_size; /**< sizeof(cg_plugin_desc) */
    uint32_t abi_major;   /**< CG_PLUGIN_ABI_MAJOR the plugin was built with */
    uint32_t abi_minor;   /**< CG_PLUGIN_ABI_MINOR the plugin was built with */
    const char *name;     /**< plugin name, e.g. "layernorm-example" */
    const char *version;  /**< plugin version string */
    /**
     * Optional: called once after the ABI check with the host table. Returns
     * CG_OP_ERROR with a message in `err` to refuse loading.
     */
    cg_op_status (*init)(const cg_host_api *host, char *err, size_t err_size);
    const cg_op_def *const *ops; /**< the operators */
    int32_t n_ops;               /**< their count */
} cg_plugin_desc;

/** Signature of the entry symbol `cg_plugin_entry`. */
typedef const cg_plugin_desc *(*cg_plugin_entry_fn)(void);

/* ---- declaring ops (header-only, no ABI impact) ----
 *
 * Each definition struct starts with struct_size, and the arrays of kernels
 * and attributes go with their counts. These macros fill in both, so an op
 * is a few declarative lines (designated initializers for the rest):
 *
 *     static const cg_attr_def my_attrs[] = {
 *         CG_ATTR(.name = "eps", .type = CG_ATTR_FLOAT, .default_float = 1e-5,
 *                 .doc = "added to the variance"),
 *     };
 *     static const cg_kernel_def my_kernels[] = {
 *         CG_KERNEL(.backend = CG_BACKEND_CPU, .run = my_cpu),
 *         CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = my_cl, .workspace = my_ws),
 *     };
 *     static const cg_op_def my_op = CG_OP(.name = "my.norm", .doc = "...",
 *         .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
 *         .infer = my_infer, CG_ATTRS(my_attrs), CG_KERNELS(my_kernels));
 *     static const cg_op_def *const my_ops[] = {&my_op};
 *     static const cg_plugin_desc my_desc = CG_PLUGIN(.name = "my-plugin",
 *         .version = "1.0.0", CG_OPS(my_ops));
 */

/** Elements of an array (an array, not a pointer), as an int32_t count. */
#define CG_COUNT_OF(array) ((int32_t)(sizeof(array) / sizeof((array)[0])))
/** A cg_op_def initializer with struct_size set; the arguments are its other fields. */
#define CG_OP(...) \
    { .struct_size = sizeof(cg_op_def), __VA_ARGS__ }
/** A cg_kernel_def initializer with struct_size set; the arguments are its other fields. */
#define CG_KERNEL(...) \
    { .struct_size = sizeof(cg_kernel_def), __VA_ARGS__ }
/** A cg_attr_def initializer with struct_size set; the arguments are its other fields. */
#define CG_ATTR(...) \
    { .struct_size = sizeof(cg_attr_def), __VA_ARGS__ }
/** The fields .kernels and .n_kernels of a cg_op_def, from an array of kernels. */
#define CG_KERNELS(array) .kernels = (array), .n_kernels = CG_COUNT_OF(array)
/** The fields .attrs and .n_attrs of a cg_op_def, from an array of attributes. */
#define CG_ATTRS(array) .attrs = (array), .n_attrs = CG_COUNT_OF(array)
/** The fields .ops and .n_ops of a cg_plugin_desc, from an array of op pointers. */
#define CG_OPS(array) .ops = (array), .n_ops = CG_COUNT_OF(array)
/** A cg_plugin_desc initializer with struct_size and the ABI version this
 * plugin is compiled against set; the arguments are its other fields. */
#define CG_PLUGIN(...)                                                                                             \
    {                                                                                                              \
        .struct_size = sizeof(cg_plugin_desc), .abi_major = CG_PLUGIN_ABI_MAJOR, .abi_minor = CG_PLUGIN_ABI_MINOR, \
        __VA_ARGS__                                                                                                \
    }

/* ---- helpers for inference functions (header-only, no ABI impact) ---- */

/** Non-zero when d is a concrete size. */
static inline int cg_dim_known(int64_t d) { return d >= 0; }

/**
 * Non-zero unless a and b are certainly different: concrete and unequal, or
 * a concrete size against nothing else is always compatible when either is
 * symbolic or unknown (checked again once shapes are bound).
 */
static inline int cg_dim_compatible(int64_t a, int64_t b) { return !(a >= 0 && b >= 0 && a != b); }

/** Unifies two compatible dims, preferring the concrete or symbolic one. */
static inline int64_t cg_dim_unify(int64_t a, int64_t b) {
    if (a >= 0) return a;
    if (b >= 0) return b;
    if (a != CG_DIM_UNKNOWN) return a;
    return b;
}

/** Sum of two dims; unknown unless both are concrete. */
static inline int64_t cg_dim_add(int64_t a, int64_t b) { return (a >= 0 && b >= 0) ? a + b : CG_DIM_UNKNOWN; }

/** Product of two dims; unknown unless both are concrete. */
static inline int64_t cg_dim_mul(int64_t a, int64_t b) { return (a >= 0 && b >= 0) ? a * b : CG_DIM_UNKNOWN; }

#ifdef __cplusplus
}
#endif
#endif /* CLGRAPH_PLUGIN_H */
